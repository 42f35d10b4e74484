#!/usr/bin/env python3
"""First mapping both ways on PostgreSQL, alone: drops and recreates database `concord` in a
throwaway cluster (`.ci/pg-cluster init DIR`), uploads N random-id assets to each of two devices
(PUT /v1/library), then maps device 1 local → cloud (records created) and device 2 cloud → local
(linked by content) in requests of --batch identifiers, and prints Concord's and the cluster's CPU
per 1000 identifiers each way. Alternate two binaries' runs to compare them (one run is a sample).

  pg-first-mapping.py --bin BIN --pg-dir DIR [--assets 100000] [--batch 10000]
      [--options -c%20name%3Dvalue]   PostgreSQL settings for Concord's connections (URL `options`)
      [--pgss]    per-statement plan and execution time (needs pg_stat_statements preloaded, with
                  pg_stat_statements.track_planning = on, in DIR/data/postgresql.conf)
      [--perf F]  perf record -a of the mapping phases into F
      [--state F] keep what pg-index-load.py needs (tokens, some identifiers, the URL) in F: the
                  database stays in the cluster after the run
Python stdlib only; every cloud → local answer is checked."""
import argparse, base64, hashlib, http.client, json, os, random, subprocess, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from concord_server import ConcordServer
from proc_cpu import proc_cpu, pg_cpu
ap = argparse.ArgumentParser()
ap.add_argument("--bin", required=True); ap.add_argument("--pg-dir", required=True)
ap.add_argument("--assets", type=int, default=100000); ap.add_argument("--batch", type=int, default=10000)
ap.add_argument("--options", default=""); ap.add_argument("--pgss", action="store_true"); ap.add_argument("--perf", default="")
ap.add_argument("--state", default="")
a = ap.parse_args()
port = open(os.path.join(a.pg_dir, "port")).read().strip()
sock = os.path.join(a.pg_dir, "sock")
def psql(sql, out=False):
    r = subprocess.run(["runuser", "-u", "postgres", "--", "psql", "-q", "-h", sock, "-p", port, "-U", "postgres", "-d", "postgres", "-c", sql], check=True, stdout=None if out else subprocess.DEVNULL)
psql("DROP DATABASE IF EXISTS concord WITH (FORCE)"); psql("CREATE DATABASE concord OWNER concord")
url = f"postgres://concord:concord@127.0.0.1:{port}/concord" + (("?options=" + a.options) if a.options else "")
ADMIN = "firstmap-admin-token-0123456789abcdef0123"
server = ConcordServer(a.bin, url, ADMIN, os.path.join(a.pg_dir, "concord.log"), env={**os.environ, "CONCORD_MAPPING_INDEX_SNAPSHOTS": "off", "CONCORD_LIMITS_BODY_BYTES": str(400 << 20)}, start_seconds=60)
server.start()
def call(method, path, token, body):
    c = http.client.HTTPConnection("127.0.0.1", server.port, timeout=1800)
    c.request(method, path, body=body if isinstance(body, str) else json.dumps(body), headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    r = c.getresponse(); out = r.read(); c.close()
    if r.status not in (200, 201): sys.exit(f"{method} {path}: {r.status} {out[:300]!r}")
    return json.loads(out)
rng = random.Random(5)
def fp(i): return base64.urlsafe_b64encode(hashlib.sha256(f"A-{i}".encode()).digest()).decode().rstrip("=")
ids = [["%08X-%04X-4%03X-8%03X-%012X/L0/001" % (rng.getrandbits(32), rng.getrandbits(16), rng.getrandbits(12), rng.getrandbits(12), rng.getrandbits(48)) for _ in range(a.assets)] for _ in range(2)]
acc = call("POST", "/v1/accounts", ADMIN, {"name": "fm"})["accountToken"]
toks = [call("POST", "/v1/devices", acc, {"name": n, "platform": "iOS"})["deviceToken"] for n in ("phone", "tablet")]
for t, d in zip(toks, ids):
    call("PUT", "/v1/library", t, '{"assets":[%s]}' % ",".join('{"localIdentifier":"%s","fingerprint":"%s","creationDate":"2024-01-01T00:00:00Z","mediaType":"image"}' % (x, fp(i)) for i, x in enumerate(d)))
time.sleep(2)
perf = None
if a.perf:
    perf = subprocess.Popen(["perf", "record", "-F", "999", "-g", "-o", a.perf, "-a"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); time.sleep(0.5)
clouds = [None] * a.assets
res = []
for direction in ("l2c", "c2l"):
    if a.pgss: psql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); psql("SELECT pg_stat_statements_reset()")
    c0, p0, t0 = proc_cpu(server.p.pid), pg_cpu(a.pg_dir), time.time()
    for lo in range(0, a.assets, a.batch):
        hi = min(a.assets, lo + a.batch)
        if direction == "l2c":
            m = call("POST", "/v1/library/cloud-identifiers", toks[0], '{"localIdentifiers":[%s]}' % ",".join('"%s"' % x for x in ids[0][lo:hi]))["mappings"]
            for k, i in enumerate(range(lo, hi)):
                clouds[i] = m[k]["cloudIdentifier"]
        else:
            m = call("POST", "/v1/library/local-identifiers", toks[1], '{"cloudIdentifiers":[%s]}' % ",".join('"%s"' % clouds[i] for i in range(lo, hi)))["mappings"]
            for k, i in enumerate(range(lo, hi)):
                if m[k].get("localIdentifier") != ids[1][i]: sys.exit(f"c2l {i}: {m[k]}")
    n = a.assets / 1000
    if a.pgss:
        print(direction, flush=True)
        psql("SELECT calls, round(total_plan_time::numeric/%s, 2) AS plan_ms_per_1000, round(total_exec_time::numeric/%s, 2) AS exec_ms_per_1000, left(regexp_replace(query, '\\s+', ' ', 'g'), 90) FROM pg_stat_statements ORDER BY total_plan_time + total_exec_time DESC LIMIT 12" % (n, n), out=True)
    res.append(f"{direction}: Concord {1000*(proc_cpu(server.p.pid)-c0)/n:.1f} ms, PG {1000*(pg_cpu(a.pg_dir)-p0)/n:.1f} ms, wall {1000*(time.time()-t0)/n:.1f} ms per 1000")
if perf: perf.send_signal(2); perf.wait()
print(" | ".join(res), flush=True)
server.p.kill(); server.p.wait()
if a.state:
    json.dump({"tok": toks, "ids0": ids[0][:20000], "ids1": ids[1][:20000], "clouds": clouds[:20000], "url": url}, open(a.state, "w"))
