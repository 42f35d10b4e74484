#!/usr/bin/env python3
"""A second Concord's first write on its PostgreSQL connections against its later ones: the first
instance adds 1000 assets to each of two devices and maps device 1's (records created); the second,
warmed by reads only, maps their cloud identifiers on device 2 (a write: links found by content).
Three such writes per second instance, a fresh second instance each round. Prints the cluster's
CPU (10 ms ticks) and the second's per request, then the mean of first and of later writes
(the first second instance left out: on new tables its writes can meet their first ANALYZE).

Usage: pg-cold-connection.py BIN PG_DIR [--instances 8]   (PG_DIR from `.ci/pg-cluster init`)"""
import argparse, base64, hashlib, os, random, statistics, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from concord_server import ConcordServer   # noqa: E402
from proc_cpu import pg_cpu   # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("bin")
ap.add_argument("pg_dir")
ap.add_argument("--instances", type=int, default=8)
args = ap.parse_args()
PORT = open(os.path.join(args.pg_dir, "port")).read().strip()
DB = f"postgres://concord:concord@127.0.0.1:{PORT}/concord"
ADMIN = "pg-cold-connection-admin-token-0123456789"
rng = random.Random(int(time.time()))   # a new account each run: identifiers must not repeat


def photo_id():
    return "%08X-%04X-4%03X-8%03X-%012X/L0/001" % (rng.getrandbits(32), rng.getrandbits(16), rng.getrandbits(12),
                                                   rng.getrandbits(12), rng.getrandbits(48))


def fingerprint(i):
    return base64.urlsafe_b64encode(hashlib.sha256(f"cold-{i}".encode()).digest()).decode().rstrip("=")


def upserts(ids, first):
    """A changes body of `ids`, the i-th with fingerprint number `first + i`."""
    return '{"assets":{"upsert":[%s]}}' % ",".join(
        '{"localIdentifier":"%s","fingerprint":"%s","creationDate":"2024-01-01T00:00:00Z","mediaType":"image"}'
        % (x, fingerprint(first + i)) for i, x in enumerate(ids))


first = ConcordServer(args.bin, DB, ADMIN, os.path.join(args.pg_dir, "cold-first.log"))
first.start()
account = first.call("POST", "/v1/accounts", ADMIN, {"name": "cold"})["accountToken"]
device1 = first.call("POST", "/v1/devices", account, {"name": "one"})["deviceToken"]
device2 = first.call("POST", "/v1/devices", account, {"name": "two"})["deviceToken"]
base = rng.getrandbits(40)
old1, old2 = [photo_id() for _ in range(5000)], [photo_id() for _ in range(5000)]
first.call("POST", "/v1/library/changes", device1, upserts(old1, base))
first.call("POST", "/v1/library/changes", device2, upserts(old2, base))
clouds = [m["cloudIdentifier"] for m in first.call("POST", "/v1/library/cloud-identifiers", device1, {"localIdentifiers": old1})["mappings"]]
first.call("POST", "/v1/library/local-identifiers", device2, {"cloudIdentifiers": clouds})
next_fingerprint = base + 5000
pg_ms = {"first": [], "later": []}
for instance in range(args.instances):
    second = ConcordServer(args.bin, DB, ADMIN, os.path.join(args.pg_dir, "cold-second.log"))
    second.start()
    for _ in range(5):   # warm: reads only
        second.call("POST", "/v1/library/local-identifiers", device2, {"cloudIdentifiers": clouds[:1000]})
    for k in range(3):
        new1, new2 = [photo_id() for _ in range(1000)], [photo_id() for _ in range(1000)]
        first.call("POST", "/v1/library/changes", device1, upserts(new1, next_fingerprint))
        first.call("POST", "/v1/library/changes", device2, upserts(new2, next_fingerprint))
        next_fingerprint += 1000
        new_clouds = [m["cloudIdentifier"] for m in
                      first.call("POST", "/v1/library/cloud-identifiers", device1, {"localIdentifiers": new1})["mappings"]]
        second.call("POST", "/v1/library/local-identifiers", device2, {"cloudIdentifiers": clouds[:10]})   # its catch-up, apart
        time.sleep(0.3)
        p0, c0, w0 = pg_cpu(args.pg_dir), second.cpu(), time.perf_counter()
        answers = second.call("POST", "/v1/library/local-identifiers", device2, {"cloudIdentifiers": new_clouds})["mappings"]
        w1 = time.perf_counter()
        time.sleep(0.2)   # the backend's CPU for the request settled in /proc
        p1, c1 = pg_cpu(args.pg_dir), second.cpu()
        if any(a.get("localIdentifier") != new2[i] for i, a in enumerate(answers)):
            sys.exit(f"instance {instance} write {k}: an answer is not the object linked by content")
        if instance > 0:
            pg_ms["first" if k == 0 else "later"].append(1000 * (p1 - p0))
        print(f"instance {instance} write {k}: wall {1000 * (w1 - w0):.1f} ms, PostgreSQL {1000 * (p1 - p0):.0f} ms, "
              f"Concord {1000 * (c1 - c0):.0f} ms", flush=True)
    second.stop()
first.stop()
if pg_ms["first"]:
    print(f"PostgreSQL CPU, mean of instances 1-{args.instances - 1}: first writes {statistics.mean(pg_ms['first']):.0f} ms, "
          f"later writes {statistics.mean(pg_ms['later']):.0f} ms")
