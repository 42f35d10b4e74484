#!/usr/bin/env python3
"""A second instance's catch-up with the first's writes, on PostgreSQL: drops and recreates database
`concord` in a throwaway cluster (`.ci/pg-cluster init DIR`), and through a first Concord uploads N
random-id assets to each of two devices and maps them both ways (10 000 per request); then starts a
second Concord (log level info), has it load the account, and for each round: the first adds 1000
new assets (a change batch: caught up with by the second's next request), then maps them (records
created and linked: caught up with by the second's next request, which asks for those 1000). Prints
the second's request and, from its log, each catch-up's wall and CPU time.

  pg-catch-up.py --bin BIN --pg-dir DIR [--assets 300000] [--rounds 6] [--perf F] [--reuse]
      --reuse: keep the database and accounts of the last run (its state in DIR/catch-up-state.json)
Python stdlib only."""
import argparse, base64, hashlib, http.client, json, os, random, subprocess, sys, time, socket
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proc_cpu import proc_cpu, pg_cpu
ap = argparse.ArgumentParser()
ap.add_argument("--bin", required=True); ap.add_argument("--pg-dir", required=True)
ap.add_argument("--assets", type=int, default=300000); ap.add_argument("--rounds", type=int, default=6)
ap.add_argument("--perf", default=""); ap.add_argument("--reuse", action="store_true")
a = ap.parse_args()
port = open(os.path.join(a.pg_dir, "port")).read().strip(); sock = os.path.join(a.pg_dir, "sock")
def psql(sql):
    subprocess.run(["runuser", "-u", "postgres", "--", "psql", "-q", "-h", sock, "-p", port, "-U", "postgres", "-d", "postgres", "-c", sql], check=True, stdout=subprocess.DEVNULL)
url = f"postgres://concord:concord@127.0.0.1:{port}/concord"
ADMIN = "catchup-admin-token-0123456789abcdef0123"
class Concord:
    def __init__(self, name, level):
        s = socket.socket(); s.bind(("127.0.0.1", 0)); self.port = s.getsockname()[1]; s.close()
        self.log = os.path.join(a.pg_dir, f"catch-up-{name}.log")
        self.p = subprocess.Popen([a.bin, "serve", "--host", "127.0.0.1", "--port", str(self.port), "--database", url, "--admin-token", ADMIN, "--log-level", level],
                                  stdout=open(self.log, "w"), stderr=subprocess.STDOUT, env={**os.environ, "CONCORD_MAPPING_INDEX_SNAPSHOTS": "off"})
        for _ in range(600):
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2); c.request("GET", "/health")
                if c.getresponse().status == 200: break
            except OSError: pass
            time.sleep(0.1)
    def call(self, method, path, token, body):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=1800)
        c.request(method, path, body=body if isinstance(body, str) else json.dumps(body), headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
        r = c.getresponse(); out = r.read(); c.close()
        if r.status not in (200, 201): sys.exit(f"{method} {path}: {r.status} {out[:300]!r}")
        return json.loads(out)
    def metric(self, name):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60); c.request("GET", "/metrics"); t = c.getresponse().read().decode(); c.close()
        return sum(float(l.rsplit(" ", 1)[1]) for l in t.splitlines() if l.startswith(name))
# Seeded by the clock: each run's new assets are new, also when it reuses the last run's database.
rng = random.Random(time.time_ns())
def fp(sp, i): return base64.urlsafe_b64encode(hashlib.sha256(f"{sp}-{i}".encode()).digest()).decode().rstrip("=")
def newid(): return "%08X-%04X-4%03X-8%03X-%012X/L0/001" % (rng.getrandbits(32), rng.getrandbits(16), rng.getrandbits(12), rng.getrandbits(12), rng.getrandbits(48))
def asset(x, f): return '{"localIdentifier":"%s","fingerprint":"%s","creationDate":"2024-01-01T00:00:00Z","mediaType":"image"}' % (x, f)
state = os.path.join(a.pg_dir, "catch-up-state.json")
if not a.reuse:
    psql("DROP DATABASE IF EXISTS concord WITH (FORCE)"); psql("CREATE DATABASE concord OWNER concord")
    A = Concord("first", "error")
    ids = [[newid() for _ in range(a.assets)] for _ in range(2)]
    acc = A.call("POST", "/v1/accounts", ADMIN, {"name": "cu"})["accountToken"]
    toks = [A.call("POST", "/v1/devices", acc, {"name": n, "platform": "iOS"})["deviceToken"] for n in ("phone", "tablet")]
    for t, d in zip(toks, ids):
        A.call("PUT", "/v1/library", t, '{"assets":[%s]}' % ",".join(asset(x, fp("A", i)) for i, x in enumerate(d)))
    clouds = []
    for lo in range(0, a.assets, 10000):
        clouds += [m["cloudIdentifier"] for m in A.call("POST", "/v1/library/cloud-identifiers", toks[0], '{"localIdentifiers":[%s]}' % ",".join('"%s"' % x for x in ids[0][lo:lo+10000]))["mappings"]]
    for lo in range(0, a.assets, 10000):
        A.call("POST", "/v1/library/local-identifiers", toks[1], '{"cloudIdentifiers":[%s]}' % ",".join('"%s"' % x for x in clouds[lo:lo+10000]))
    json.dump({"toks": toks, "ids": ids}, open(state, "w"))
else:
    A = Concord("first", "error")
st = json.load(open(state)); toks, ids = st["toks"], st["ids"]
B = Concord("second", "info")
B.call("POST", "/v1/library/cloud-identifiers", toks[0], '{"localIdentifiers":[%s]}' % ",".join('"%s"' % x for x in ids[0][:1000]))
t0 = time.time()
while B.metric("concord_mapping_index_accounts") < 1:
    if time.time() - t0 > 300: sys.exit("no load")
    time.sleep(0.1)
print(f"B loaded after {time.time()-t0:.1f} s", flush=True)
for _ in range(5): B.call("POST", "/v1/library/cloud-identifiers", toks[0], '{"localIdentifiers":[%s]}' % ",".join('"%s"' % x for x in ids[0][1000:2000]))
perf = None
if a.perf:
    perf = subprocess.Popen(["perf", "record", "-F", "2000", "-g", "-o", a.perf, "-p", str(B.p.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); time.sleep(0.5)
for k in range(a.rounds):
    new = [newid() for _ in range(1000)]
    A.call("POST", "/v1/library/changes", toks[0], '{"assets":{"upsert":[%s]}}' % ",".join(asset(x, fp(f"N{k}-{time.time()}", i)) for i, x in enumerate(new)))
    time.sleep(0.3)
    B.call("POST", "/v1/library/cloud-identifiers", toks[0], '{"localIdentifiers":[%s]}' % ",".join('"%s"' % x for x in ids[0][2000:3000]))
    A.call("POST", "/v1/library/cloud-identifiers", toks[0], '{"localIdentifiers":[%s]}' % ",".join('"%s"' % x for x in new))
    time.sleep(0.3)
    c0 = proc_cpu(B.p.pid); w0 = time.time()
    B.call("POST", "/v1/library/cloud-identifiers", toks[0], '{"localIdentifiers":[%s]}' % ",".join('"%s"' % x for x in new))
    print(f"round {k}: B's request after A's first mapping: wall {1000*(time.time()-w0):.1f} ms, CPU {1000*(proc_cpu(B.p.pid)-c0):.0f} ms", flush=True)
if perf: perf.send_signal(2); perf.wait()
for l in open(B.log):
    if "caught up" in l: print(l.strip()[:300])
A.p.kill(); B.p.kill()
