#!/usr/bin/env python3
"""A second Concord's first write on its PostgreSQL connections against its later ones: the first
instance adds 1000 assets to each of two devices and maps device 1's (records created); the second,
warmed by reads only, maps their cloud identifiers on device 2 (a write: links found by content).
Three such writes per second instance, a fresh second instance each round; prints the cluster's
CPU (10 ms ticks) and the second's per request.

Usage: pg-cold-connection.py BIN PG_DIR   (PG_DIR from `.ci/pg-cluster init`)"""
import base64, hashlib, os, random, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from concord_server import ConcordServer
from proc_cpu import pg_cpu
BIN, PGDIR = sys.argv[1], sys.argv[2]
PORT = open(os.path.join(PGDIR, "port")).read().strip()
DB = f"postgres://concord:concord@127.0.0.1:{PORT}/concord"
ADMIN = "cold2-admin-token-0123456789abcdef"
def fp(i): return base64.urlsafe_b64encode(hashlib.sha256(f"c2-{i}".encode()).digest()).decode().rstrip("=")
rng = random.Random(int(time.time()))
def rid(): return "%08X-%04X-4%03X-8%03X-%012X/L0/001" % (rng.getrandbits(32), rng.getrandbits(16), rng.getrandbits(12), rng.getrandbits(12), rng.getrandbits(48))
def assets(ids, base): return '{"assets":{"upsert":[%s]}}' % ",".join('{"localIdentifier":"%s","fingerprint":"%s","creationDate":"2024-01-01T00:00:00Z","mediaType":"image"}' % (x, fp(base + i)) for i, x in enumerate(ids))
a = ConcordServer(BIN, DB, ADMIN, os.path.join(PGDIR, "cold-a.log")); a.start()
acct = a.call("POST", "/v1/accounts", ADMIN, {"name": "c2"})["accountToken"]
d1 = a.call("POST", "/v1/devices", acct, {"name": "one"})["deviceToken"]; d2 = a.call("POST", "/v1/devices", acct, {"name": "two"})["deviceToken"]
base = rng.getrandbits(40)
old1 = [rid() for _ in range(5000)]; old2 = [rid() for _ in range(5000)]
a.call("POST", "/v1/library/changes", d1, assets(old1, base)); a.call("POST", "/v1/library/changes", d2, assets(old2, base))
clouds = [m["cloudIdentifier"] for m in a.call("POST", "/v1/library/cloud-identifiers", d1, {"localIdentifiers": old1})["mappings"]]
a.call("POST", "/v1/library/local-identifiers", d2, {"cloudIdentifiers": clouds})
n = 5000
for rnd in range(8):
    b = ConcordServer(BIN, DB, ADMIN, os.path.join(PGDIR, "cold-b.log")); b.start()
    for _ in range(5): b.call("POST", "/v1/library/local-identifiers", d2, {"cloudIdentifiers": clouds[:1000]})
    for k in range(3):
        new1 = [rid() for _ in range(1000)]; new2 = [rid() for _ in range(1000)]
        a.call("POST", "/v1/library/changes", d1, assets(new1, base + n)); a.call("POST", "/v1/library/changes", d2, assets(new2, base + n)); n += 1000
        nc = [m["cloudIdentifier"] for m in a.call("POST", "/v1/library/cloud-identifiers", d1, {"localIdentifiers": new1})["mappings"]]
        b.call("POST", "/v1/library/local-identifiers", d2, {"cloudIdentifiers": clouds[:10]})   # catch up first
        time.sleep(0.3)
        p0 = pg_cpu(PGDIR); c0 = b.cpu(); w0 = time.perf_counter()
        m = b.call("POST", "/v1/library/local-identifiers", d2, {"cloudIdentifiers": nc})["mappings"]
        w1 = time.perf_counter(); time.sleep(0.2); p1 = pg_cpu(PGDIR); c1 = b.cpu()
        assert all(x.get("localIdentifier") == new2[i] for i, x in enumerate(m))
        print(f"instance {rnd} write {k}: wall {1000*(w1-w0):.1f} ms, PG {1000*(p1-p0):.0f} ms, Concord {1000*(c1-c0):.0f} ms", flush=True)
    b.stop()
a.stop()
