#!/usr/bin/env python3
"""The mapping index's load from PostgreSQL's tables (no snapshot), alone: for each binary in turn, start
`concord serve` on a database that `pg-first-mapping.py --state F` built and kept, send one local → cloud
request of 1000 identifiers (served from storage; it starts the load off the request path) and wait for
the index to be installed, with nothing else running. Prints the time from the request to the install
and the CPU Concord and the cluster spent meanwhile. Alternate binaries (one run is a sample).

  pg-first-mapping.py --bin BIN --pg-dir DIR --assets 1000000 --state /tmp/pg1m.json   # once
  pg-index-load.py --bins BIN[,BIN…] --pg-dir DIR --state /tmp/pg1m.json [--rounds 2] [--perf F]
      --perf F   perf record -a of the last load into F
Python stdlib only."""
import argparse, http.client, json, os, subprocess, sys, time, urllib.request
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from concord_server import ConcordServer
from proc_cpu import pg_cpu
ap = argparse.ArgumentParser()
ap.add_argument("--bins", required=True); ap.add_argument("--pg-dir", required=True); ap.add_argument("--state", required=True)
ap.add_argument("--rounds", type=int, default=2); ap.add_argument("--perf", default="")
a = ap.parse_args()
st = json.load(open(a.state))
ADMIN = "firstmap-admin-token-0123456789abcdef0123"   # pg-first-mapping.py's


def metric(port, name):
    for line in urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read().decode().splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.split()[-1])
    return 0.0


bins = a.bins.split(",")
for r in range(a.rounds):
    for b in bins:
        s = ConcordServer(b, st["url"], ADMIN, os.path.join(a.pg_dir, "index-load.log"),
                          env={**os.environ, "CONCORD_MAPPING_INDEX_SNAPSHOTS": "off"}, start_seconds=60)
        s.start()
        time.sleep(1)
        last = r == a.rounds - 1 and b == bins[-1]
        perf = subprocess.Popen(["perf", "record", "-F", "999", "-a", "-o", a.perf], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL) if a.perf and last else None
        if perf: time.sleep(0.5)
        c0, p0, t0 = s.cpu(), pg_cpu(a.pg_dir), time.time()
        c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=600)
        c.request("POST", "/v1/library/cloud-identifiers", body=json.dumps({"localIdentifiers": st["ids0"][:1000]}),
                  headers={"Authorization": "Bearer " + st["tok"][0], "Content-Type": "application/json"})
        resp = c.getresponse(); resp.read()
        if resp.status != 200: sys.exit(f"the first request answered {resp.status}")
        first = time.time() - t0
        while metric(s.port, "concord_mapping_index_background_loads_fitted_total") < 1 and metric(s.port, "concord_mapping_index_loads_total") < 1:
            time.sleep(0.02)
            if time.time() - t0 > 300: sys.exit("the index was not installed within 300 s")
        t1, c1, p1 = time.time(), s.cpu(), pg_cpu(a.pg_dir)
        if perf: perf.send_signal(2); perf.wait()
        print(f"{os.path.basename(b)}: installed {t1 - t0:.2f} s after the first request (that request {1000 * first:.0f} ms), "
              f"Concord CPU {c1 - c0:.2f} s, PostgreSQL CPU {p1 - p0:.2f} s", flush=True)
        s.stop()
