#!/usr/bin/env python3
"""What a change batch costs as a device's library grows, and what of it the content index costs.

Starts `concord serve` on a fresh SQLite database, sends POST /v1/library/changes batches of
10 000 new assets to one device until it holds --assets, and prints the server's CPU (utime +
stime, /proc) for every tenth batch and the last three. With --without-content-index it then stops
the server (a clean shutdown), drops `objects_by_content` from the database, starts it again and
times --more batches: the same inserts with one random-key index less (an experiment on a copy of
the schema, not a configuration: the index serves storage's content matching).

--ids sequential: local identifiers whose leading digits count up (storage appends, as the scale
scenario's do); random: scrambled, as PhotoKit's UUIDs are. Run by change-batches.sh.
"""
import argparse, base64, hashlib, json, os, secrets, sqlite3, time

from concord_server import ConcordServer

ap = argparse.ArgumentParser()
ap.add_argument("--bin", required=True)
ap.add_argument("--work", required=True)
ap.add_argument("--assets", type=int, default=1_000_000)
ap.add_argument("--more", type=int, default=5)
ap.add_argument("--ids", default="sequential", choices=["sequential", "random"])
ap.add_argument("--without-content-index", action="store_true")
args = ap.parse_args()
BATCH = 10_000
DB = os.path.join(args.work, "changes.sqlite")
ADMIN = secrets.token_hex(24)


def lid(i):
    n = (i * 2654435761) & 0xFFFFFFFF if args.ids == "random" else i
    return "%08X-0001-4000-8000-000000000001/L0/001" % n


def fp(i):
    return base64.urlsafe_b64encode(hashlib.sha256(f"c-{i}".encode()).digest()).decode().rstrip("=")


def body(lo):
    return '{"assets":{"upsert":[%s]}}' % ",".join(
        '{"localIdentifier":"%s","fingerprint":"%s","creationDate":"2024-01-01T00:00:00Z","mediaType":"image"}' % (lid(i), fp(i))
        for i in range(lo, lo + BATCH))


S = ConcordServer(args.bin, "sqlite:" + DB, ADMIN, os.path.join(args.work, "server.log"))
S.start()
account = S.call("POST", "/v1/accounts", ADMIN, json.dumps({"name": "changes"}))["accountToken"]
device = S.call("POST", "/v1/devices", account, json.dumps({"name": "phone", "platform": "iOS"}))["deviceToken"]
batches = args.assets // BATCH
print(f"| library before the batch | server CPU | wall |\n|---:|---:|---:|")
for b in range(batches):
    payload = body(b * BATCH)
    c0, t0 = S.cpu(), time.time()
    S.call("POST", "/v1/library/changes", device, payload)
    if b % 10 == 0 or b >= batches - 3:
        print(f"| {b * BATCH:,} | {S.cpu() - c0:.2f} s | {time.time() - t0:.2f} s |", flush=True)
if args.without_content_index:
    S.stop()
    db = sqlite3.connect(DB); db.execute("DROP INDEX objects_by_content"); db.commit(); db.close()
    S.start()
    print(f"\nWithout `objects_by_content` (dropped after a clean shutdown):\n\n| library before the batch | server CPU | wall |\n|---:|---:|---:|")
    for k in range(args.more):
        lo = (batches + k) * BATCH
        payload = body(lo)
        c0, t0 = S.cpu(), time.time()
        S.call("POST", "/v1/library/changes", device, payload)
        print(f"| {lo:,} | {S.cpu() - c0:.2f} s | {time.time() - t0:.2f} s |", flush=True)
S.stop()
