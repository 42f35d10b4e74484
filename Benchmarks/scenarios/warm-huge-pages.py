#!/usr/bin/env python3
"""Warm 1000-id mapping batches at N assets × 2 on SQLite, with malloc's huge pages on and off
(`CONCORD_MALLOC_HUGE_PAGES`), alternated on one database: what 2 MiB pages save the index's
random lookups. Prints Concord's CPU per batch each way for every run, and the huge pages the
server held. Every answer's first item is checked.

Usage: warm-huge-pages.py --bin .build/release/concord --db /tmp/w.sqlite [--assets 1000000]
       [--batches 200] [--runs 3]
The first use builds the database (one account, two devices of N random-identifier assets each,
mapped both ways: a few minutes at 1M) and keeps its identifiers beside it (DB.json)."""
import argparse, base64, hashlib, json, os, random, statistics, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from concord_server import ConcordServer   # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--bin", required=True)
ap.add_argument("--db", required=True)
ap.add_argument("--assets", type=int, default=1_000_000)
ap.add_argument("--batches", type=int, default=200)
ap.add_argument("--runs", type=int, default=3)
args = ap.parse_args()
ADMIN = "warm-huge-pages-admin-token-0123456789"
STATE = args.db + ".json"


def server(huge):
    env = {**os.environ, "CONCORD_LIMITS_BODY_BYTES": str(400 << 20), "CONCORD_MAPPING_INDEX_SNAPSHOTS": args.db + ".snapshots",
           "CONCORD_MALLOC_HUGE_PAGES": "1" if huge else "0"}
    s = ConcordServer(args.bin, args.db, ADMIN, args.db + ".log", env=env, call_timeout=3600)
    s.start()
    return s


def build():
    s = server(True)
    try:
        rng = random.Random(9)

        def rid():
            return "%08X-%04X-4%03X-8%03X-%012X/L0/001" % (rng.getrandbits(32), rng.getrandbits(16), rng.getrandbits(12),
                                                           rng.getrandbits(12), rng.getrandbits(48))

        def fp(i):
            return base64.urlsafe_b64encode(hashlib.sha256(f"w-{i}".encode()).digest()).decode().rstrip("=")

        ids = {d: [rid() for _ in range(args.assets)] for d in (1, 2)}
        account = s.call("POST", "/v1/accounts", ADMIN, {"name": "w"})["accountToken"]
        tokens = {d: s.call("POST", "/v1/devices", account, {"name": f"d{d}"})["deviceToken"] for d in (1, 2)}
        for d in (1, 2):
            assets = ",".join('{"localIdentifier":"%s","fingerprint":"%s","creationDate":"2024-01-01T00:00:00Z","mediaType":"image"}'
                              % (ids[d][i], fp(i)) for i in range(args.assets))
            s.call("PUT", "/v1/library", tokens[d], '{"assets":[%s]}' % assets)
        clouds = []
        for lo in range(0, args.assets, 10000):
            clouds += [m["cloudIdentifier"] for m in
                       s.call("POST", "/v1/library/cloud-identifiers", tokens[1], {"localIdentifiers": ids[1][lo:lo + 10000]})["mappings"]]
        for lo in range(0, args.assets, 10000):
            s.call("POST", "/v1/library/local-identifiers", tokens[2], {"cloudIdentifiers": clouds[lo:lo + 10000]})
        json.dump({"tokens": tokens, "ids1": ids[1], "ids2": ids[2], "clouds": clouds}, open(STATE, "w"))
    finally:
        s.stop()   # saves the index's snapshot: every run below starts from it


def run(huge, state):
    tokens = {int(k): v for k, v in state["tokens"].items()}
    n = len(state["clouds"])
    rng = random.Random(11)
    batches = [rng.sample(range(n), 1000) for _ in range(args.batches)]
    s = server(huge)
    try:
        s.call("POST", "/v1/library/cloud-identifiers", tokens[1], {"localIdentifiers": state["ids1"][:1000]})
        time.sleep(20)   # the index loaded from its snapshot, the start's work settled
        out = {}
        for direction in ("local → cloud", "cloud → local"):
            c0 = s.cpu()
            for b in batches:
                if direction == "local → cloud":
                    m = s.call("POST", "/v1/library/cloud-identifiers", tokens[1], {"localIdentifiers": [state["ids1"][i] for i in b]})["mappings"]
                    ok = m[0]["cloudIdentifier"] == state["clouds"][b[0]]
                else:
                    m = s.call("POST", "/v1/library/local-identifiers", tokens[2], {"cloudIdentifiers": [state["clouds"][i] for i in b]})["mappings"]
                    ok = m[0]["localIdentifier"] == state["ids2"][b[0]]
                if not ok or len(m) != 1000:
                    sys.exit(f"{direction}: a wrong answer")
            out[direction] = 1000 * (s.cpu() - c0) / len(batches)
        rollup = open(f"/proc/{s.p.pid}/smaps_rollup").read()
        out["huge_mib"] = int(rollup.split("AnonHugePages:")[1].split()[0]) // 1024
        return out
    finally:
        s.stop()


if not os.path.exists(STATE):
    build()
state = json.load(open(STATE))
results = {True: [], False: []}
for r in range(args.runs):
    for huge in (False, True):
        x = run(huge, state)
        results[huge].append(x)
        print(f"run {r + 1}, huge pages {'on ' if huge else 'off'}: Concord CPU per 1000-id batch, local → cloud "
              f"{x['local → cloud']:.3f} ms, cloud → local {x['cloud → local']:.3f} ms; {x['huge_mib']} MiB on huge pages", flush=True)
for huge in (False, True):
    print(f"median, huge pages {'on ' if huge else 'off'}: local → cloud {statistics.median(x['local → cloud'] for x in results[huge]):.3f} ms, "
          f"cloud → local {statistics.median(x['cloud → local'] for x in results[huge]):.3f} ms")
