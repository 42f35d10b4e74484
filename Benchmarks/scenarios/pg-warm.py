#!/usr/bin/env python3
"""What a warm mapping batch costs PostgreSQL: one account with two devices of ASSETS assets each
(the same contents), mapped once both ways, then BATCHES warm 1000-id batches each way (random ids,
over one kept-alive connection). Prints, per direction, PostgreSQL's CPU per batch — the backends
(the connections Concord holds) and the whole cluster (its background processes too) — and
Concord's. Every answer is checked.

Usage: pg-warm.py --bin .build/release/concord --pg-dir DIR [--assets 20000] [--batches 500]
(DIR: a cluster made by `.ci/pg-cluster init DIR`; its URL is read from DIR/port.)
Benchmarks/scenarios/pg-warm.sh runs it in a throwaway cluster."""
import argparse, base64, hashlib, os, random, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from concord_server import ConcordServer   # noqa: E402
from proc_cpu import pg_cpu_by_role   # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--bin", required=True)
ap.add_argument("--pg-dir", required=True)
ap.add_argument("--assets", type=int, default=20000)
ap.add_argument("--batches", type=int, default=500)
ap.add_argument("--work", default="/tmp")
args = ap.parse_args()
PORT = open(os.path.join(args.pg_dir, "port")).read().strip()
DATABASE = f"postgres://concord:concord@127.0.0.1:{PORT}/concord"
ADMIN = "pg-warm-admin-token-0123456789abcdef"


def cluster_cpu():
    """(backends, whole cluster) CPU seconds (proc_cpu.py)."""
    roles = pg_cpu_by_role(args.pg_dir)
    return roles.get("backends", 0.0), sum(roles.values())


def fp(i):
    return base64.urlsafe_b64encode(hashlib.sha256(f"warm-{i}".encode()).digest()).decode().rstrip("=")


def lid(tag, i):
    return "%08X-%04X-4000-8000-%012X/L0/001" % ((i * 2654435761) & 0xFFFFFFFF, tag, tag)


server = ConcordServer(args.bin, DATABASE, ADMIN, os.path.join(args.work, "pg-warm-server.log"))
server.start()
try:
    account = server.call("POST", "/v1/accounts", ADMIN, {"name": "warm"})["accountToken"]
    d1 = server.call("POST", "/v1/devices", account, {"name": "one"})["deviceToken"]
    d2 = server.call("POST", "/v1/devices", account, {"name": "two"})["deviceToken"]
    for tag, token in ((1, d1), (2, d2)):
        assets = ",".join('{"localIdentifier":"%s","fingerprint":"%s","creationDate":"2024-01-01T00:00:00Z","mediaType":"image"}'
                          % (lid(tag, i), fp(i)) for i in range(args.assets))
        server.call("PUT", "/v1/library", token, '{"assets":[%s]}' % assets)
    clouds = [None] * args.assets
    for lo in range(0, args.assets, 1000):
        ids = range(lo, min(args.assets, lo + 1000))
        m = server.call("POST", "/v1/library/cloud-identifiers", d1, {"localIdentifiers": [lid(1, i) for i in ids]})["mappings"]
        for i, item in zip(ids, m):
            clouds[i] = item["cloudIdentifier"]
    for lo in range(0, args.assets, 1000):
        ids = range(lo, min(args.assets, lo + 1000))
        m = server.call("POST", "/v1/library/local-identifiers", d2, {"cloudIdentifiers": [clouds[i] for i in ids]})["mappings"]
        assert all(item.get("localIdentifier") == lid(2, i) for i, item in zip(ids, m)), "first cloud → local"
    time.sleep(2)   # the first mapping's background work (ANALYZE, token last-use notes) settles

    rng = random.Random(7)
    batches = [rng.sample(range(args.assets), 1000) for _ in range(args.batches)]
    for direction in ("local → cloud", "cloud → local"):
        b0, t0 = cluster_cpu(); c0 = server.cpu(); w0 = time.perf_counter()
        for ids in batches:
            if direction == "local → cloud":
                m = server.call("POST", "/v1/library/cloud-identifiers", d1, {"localIdentifiers": [lid(1, i) for i in ids]})["mappings"]
                ok = all(item.get("cloudIdentifier") == clouds[i] for i, item in zip(ids, m))
            else:
                m = server.call("POST", "/v1/library/local-identifiers", d2, {"cloudIdentifiers": [clouds[i] for i in ids]})["mappings"]
                ok = all(item.get("localIdentifier") == lid(2, i) for i, item in zip(ids, m))
            if not ok or len(m) != len(ids):
                sys.exit(f"{direction}: a wrong answer")
        b1, t1 = cluster_cpu(); c1 = server.cpu(); w1 = time.perf_counter()
        n = len(batches)
        print(f"warm {direction}, {n} batches of 1000 ({args.assets} assets × 2): PostgreSQL backends "
              f"{1000 * (b1 - b0) / n:.3f} ms/batch, whole cluster {1000 * (t1 - t0) / n:.3f} ms/batch; "
              f"Concord {1000 * (c1 - c0) / n:.2f} ms/batch; wall {1000 * (w1 - w0) / n:.2f} ms/batch", flush=True)
finally:
    server.stop()
