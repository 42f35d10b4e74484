#!/usr/bin/env python3
"""Warm 1000-id mapping batches, both directions, with the server under valgrind's callgrind: the instructions the whole
process executes per batch, which a busy machine does not change (an A/B of two binaries where CPU time is noise).
Needs valgrind (`apt-get install valgrind`). One SQLite database of N random-id assets on each of two devices, the
second a random ~90 % of the first's contents plus 2 % duplicates (so cloud → local also answers not found and
multipleIdentifiersFound), mapped both ways; then per direction 30 unmeasured batches, the counters zeroed, --batches
measured ones, a dump. Files under --work (callgrind.out per dump: read them with callgrind_annotate).

  warm-callgrind.py --bin BIN [--assets 5000] [--batches 50] [--dirs l2c,c2l] [--plain] [--work /tmp/warm-callgrind] [--tag x]
      --plain   both devices hold the same contents, no duplicates: every answer found"""
import argparse, os, random, sys, time, json, subprocess, http.client, glob, re
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from concord_server import ConcordServer, photo_fingerprint, two_device_account
ap = argparse.ArgumentParser()
ap.add_argument("--bin", required=True); ap.add_argument("--assets", type=int, default=5000)
ap.add_argument("--batches", type=int, default=50); ap.add_argument("--dirs", default="l2c,c2l")
ap.add_argument("--tag", default="x"); ap.add_argument("--plain", action="store_true"); ap.add_argument("--work", default="/tmp/warm-callgrind")
args = ap.parse_args()
os.makedirs(args.work, exist_ok=True)
out = f"{args.work}/{args.tag}"
import shutil
for f in glob.glob(out + ".*"): shutil.rmtree(f) if os.path.isdir(f) else os.remove(f)
wrapper = f"{args.work}/run-{args.tag}.sh"
open(wrapper, "w").write(f"#!/bin/sh\nexec valgrind --tool=callgrind --callgrind-out-file={out}.%p --dump-instr=no --collect-atstart=yes {args.bin} \"$@\"\n")
os.chmod(wrapper, 0o755)
ADMIN = "warmprof-admin-token-0123456789abcdef"
db = f"{args.work}/{args.tag}.sqlite"
for suf in ("", "-wal", "-shm"):
    try: os.remove(db + suf)
    except FileNotFoundError: pass
s = ConcordServer(wrapper, "sqlite:" + db, ADMIN, f"{args.work}/{args.tag}.log", start_seconds=120, call_timeout=3600); s.start()
fp = photo_fingerprint
tok, ids = two_device_account(s, ADMIN, args.assets)
shared = int(args.assets * 1.1111)
pick = {d: (list(range(args.assets)) if args.plain else random.Random(d).sample(range(shared), args.assets)) for d in (1, 2)}
if not args.plain:
    for d in (1, 2):
        for k in range(args.assets // 50): pick[d][-(k + 1)] = pick[d][k]
for d in (1, 2):
    assets = ",".join('{"localIdentifier":"%s","fingerprint":"%s","creationDate":"2024-01-01T00:00:00Z","mediaType":"image"}' % (ids[d][i], fp(pick[d][i])) for i in range(args.assets))
    s.call("PUT", "/v1/library", tok[d], '{"assets":[%s]}' % assets)
clouds = []
for lo in range(0, args.assets, 10000):
    clouds += [x["cloudIdentifier"] for x in s.call("POST", "/v1/library/cloud-identifiers", tok[1], {"localIdentifiers": ids[1][lo:lo+10000]})["mappings"]]
for lo in range(0, args.assets, 10000):
    s.call("POST", "/v1/library/local-identifiers", tok[2], {"cloudIdentifiers": clouds[lo:lo+10000]})
rng = random.Random(11)
batches = [rng.sample(range(args.assets), 1000) for _ in range(50)]
bodies = {"l2c": [json.dumps({"localIdentifiers": [ids[1][i] for i in b]}) for b in batches],
          "c2l": [json.dumps({"cloudIdentifiers": [clouds[i] for i in b]}) for b in batches]}
paths = {"l2c": "/v1/library/cloud-identifiers", "c2l": "/v1/library/local-identifiers"}
toks = {"l2c": tok[1], "c2l": tok[2]}
c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=3600)
def run(d, n):
    h = {"Authorization": "Bearer " + toks[d], "Content-Type": "application/json"}
    for k in range(n):
        c.request("POST", paths[d], body=bodies[d][k % 50], headers=h); r = c.getresponse(); r.read()
        assert r.status == 200
for d in args.dirs.split(","):
    run(d, 30)
    subprocess.run(["callgrind_control", "-z", str(s.p.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    run(d, args.batches)
    before = set(glob.glob(out + ".*"))
    subprocess.run(["callgrind_control", "-d", d, str(s.p.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)
    new = [f for f in glob.glob(out + ".*") if f not in before and re.search(r"\.\d+\.\d+$", f)]
    ir = 0
    for f in new:
        for line in open(f, errors="replace"):
            if line.startswith("summary:") or line.startswith("totals:"):
                ir = max(ir, int(line.split()[1]))
    print(f"{args.tag} {d}: {ir/args.batches/1e6:.3f} M instructions per batch ({', '.join(new)})", flush=True)
s.stop()
