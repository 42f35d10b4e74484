#!/usr/bin/env python3
"""First mapping both ways on SQLite, alone: a fresh database file in --work, N random-id assets
uploaded to each of two devices (PUT /v1/library), then device 1 mapped local → cloud (records
created) and device 2 cloud → local (linked by content) in requests of --batch identifiers. Prints,
per 1000 identifiers each way: the wall time, the CPU of the threads that run requests
(`concord-compute`, from /proc/PID/task/*/schedstat: running / waiting for a core), the WAL
checkpointer's, and the bytes the process wrote. Alternate two binaries' runs to compare them (one
run is a sample: on a shared 2-core machine runs of one binary differ by a fifth).

  sqlite-first-mapping.py --bin BIN --work DIR [--assets 100000] [--batch 10000] [--perf PREFIX]
      [--order upload|stored]
      --perf: perf record -g of the server during each direction, into PREFIX.l2c / PREFIX.c2l
      --order: the requests take the identifiers in the order they were uploaded (default), or in the
               byte order of each device's identifiers (the order its rows were stored)
Python stdlib only; every cloud → local answer is checked."""
import argparse, base64, collections, hashlib, os, random, subprocess, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from concord_server import ConcordServer

ap = argparse.ArgumentParser()
ap.add_argument("--bin", required=True); ap.add_argument("--work", required=True)
ap.add_argument("--assets", type=int, default=100000); ap.add_argument("--batch", type=int, default=10000)
ap.add_argument("--perf", default="")
# upload: the library in the order the client lists it; stored: each device's identifiers in byte order (the order a
# whole-library upload stores its rows), an upper bound on what row locality gives the requests.
ap.add_argument("--order", default="upload", choices=["upload", "stored"])
a = ap.parse_args()
os.makedirs(a.work, exist_ok=True)
db = os.path.join(a.work, "first-mapping.sqlite")
for suffix in ("", "-wal", "-shm"):
    if os.path.exists(db + suffix): os.remove(db + suffix)
ADMIN = "sqlite-first-mapping-admin-0123456789abcdef"
# Snapshots off (the index is built from the uploads either way); a body limit that takes a whole library.
server = ConcordServer(a.bin, db, ADMIN, os.path.join(a.work, "concord.log"), start_seconds=60,
                       env={**os.environ, "CONCORD_MAPPING_INDEX_SNAPSHOTS": "off", "CONCORD_LIMITS_BODY_BYTES": str(1 << 28)})
server.start()
pid = server.p.pid


def fingerprint(i): return base64.urlsafe_b64encode(hashlib.sha256(f"A-{i}".encode()).digest()).decode().rstrip("=")


def threads():
    """CPU ns running and waiting for a core, summed per thread name (digits dropped)."""
    out = collections.defaultdict(lambda: [0, 0])
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            name = open(f"/proc/{pid}/task/{tid}/comm").read().strip().rstrip("0123456789-")
            run, wait, _ = map(int, open(f"/proc/{pid}/task/{tid}/schedstat").read().split())
        except OSError:
            continue   # a thread that ended meanwhile
        out[name][0] += run; out[name][1] += wait
    return out


def written(): return int(dict(l.split(": ") for l in open(f"/proc/{pid}/io").read().splitlines())["wchar"])


rng = random.Random(5)
ids = [["%08X-%04X-4%03X-8%03X-%012X/L0/001" % (rng.getrandbits(32), rng.getrandbits(16), rng.getrandbits(12), rng.getrandbits(12), rng.getrandbits(48))
        for _ in range(a.assets)] for _ in range(2)]
account = server.call("POST", "/v1/accounts", ADMIN, {"name": "first-mapping"})["accountToken"]
tokens = [server.call("POST", "/v1/devices", account, {"name": n, "platform": "iOS"})["deviceToken"] for n in ("phone", "tablet")]
for token, device_ids in zip(tokens, ids):
    server.call("PUT", "/v1/library", token, '{"assets":[%s]}' % ",".join(
        '{"localIdentifier":"%s","fingerprint":"%s","creationDate":"2024-01-01T00:00:00Z","mediaType":"image"}' % (x, fingerprint(i)) for i, x in enumerate(device_ids)))
time.sleep(3)   # the uploads' background work settles
clouds = [None] * a.assets
per = a.assets / 1000
# The positions each direction's requests take, in order: device 1's for local → cloud, device 2's for cloud → local.
orders = [sorted(range(a.assets), key=lambda i: ids[d][i].encode()) if a.order == "stored" else list(range(a.assets)) for d in (0, 1)]
for direction in ("l2c", "c2l"):
    perf = subprocess.Popen(["perf", "record", "-F", "999", "-g", "-o", f"{a.perf}.{direction}", "-p", str(pid)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) if a.perf else None
    t0, w0, start = threads(), written(), time.time()
    for lo in range(0, a.assets, a.batch):
        hi = min(a.assets, lo + a.batch)
        if direction == "l2c":
            batch = orders[0][lo:hi]
            m = server.call("POST", "/v1/library/cloud-identifiers", tokens[0], '{"localIdentifiers":[%s]}' % ",".join('"%s"' % ids[0][i] for i in batch))["mappings"]
            for k, i in enumerate(batch): clouds[i] = m[k]["cloudIdentifier"]
        else:
            batch = orders[1][lo:hi]
            m = server.call("POST", "/v1/library/local-identifiers", tokens[1], '{"cloudIdentifiers":[%s]}' % ",".join('"%s"' % clouds[i] for i in batch))["mappings"]
            for k, i in enumerate(batch):
                if m[k].get("localIdentifier") != ids[1][i]: sys.exit(f"cloud → local item {i}: {m[k]}")
    wall, t1, w1 = time.time() - start, threads(), written()
    if perf: perf.send_signal(2); perf.wait()
    cpu = {k: ((v[0] - t0[k][0]) / 1e6 / per, (v[1] - t0[k][1]) / 1e6 / per) for k, v in t1.items() if k in t0}
    compute, checkpointer = cpu.get("concord-compute", (0, 0)), cpu.get("oot.utility-qos", (0, 0))
    print(f"{direction}: wall {1000 * wall / per:.1f} ms, requests' CPU {compute[0]:.1f} ms (+{compute[1]:.1f} waiting for a core), "
          f"background (the WAL checkpointer) {checkpointer[0]:.1f} ms, written {(w1 - w0) / per / 1e6:.2f} MB per 1000", flush=True)
server.p.kill(); server.p.wait()
