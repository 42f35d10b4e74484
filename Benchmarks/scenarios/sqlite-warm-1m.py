#!/usr/bin/env python3
"""SQLite warm batches at N x 2: build once (--build), then measure warm batches with the server's env as given."""
import argparse, os, random, sys, time, json
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from concord_server import ConcordServer, photo_fingerprint, two_device_account
ap = argparse.ArgumentParser()
ap.add_argument("--bin", required=True); ap.add_argument("--db", required=True)
ap.add_argument("--assets", type=int, default=1000000); ap.add_argument("--batches", type=int, default=300)
ap.add_argument("--build", action="store_true"); ap.add_argument("--tag", default="")
args = ap.parse_args()
ADMIN = "warm1m-admin-token-0123456789abcdef"
state = args.db + ".json"
env = {**os.environ, "CONCORD_LIMITS_BODY_BYTES": str(400 << 20), "CONCORD_MAPPING_INDEX_SNAPSHOTS": args.db + ".snap"}
s = ConcordServer(args.bin, args.db, ADMIN, args.db + ".log", env=env, call_timeout=3600); s.start()
try:
    if args.build:
        fp = photo_fingerprint
        tok, ids = two_device_account(s, ADMIN, args.assets)
        for d in (1, 2):
            assets = ",".join('{"localIdentifier":"%s","fingerprint":"%s","creationDate":"2024-01-01T00:00:00Z","mediaType":"image"}' % (ids[d][i], fp(i)) for i in range(args.assets))
            s.call("PUT", "/v1/library", tok[d], '{"assets":[%s]}' % assets)
            print("put", d, flush=True)
        clouds = []
        for lo in range(0, args.assets, 10000):
            clouds += [x["cloudIdentifier"] for x in s.call("POST", "/v1/library/cloud-identifiers", tok[1], {"localIdentifiers": ids[1][lo:lo+10000]})["mappings"]]
        for lo in range(0, args.assets, 10000):
            s.call("POST", "/v1/library/local-identifiers", tok[2], {"cloudIdentifiers": clouds[lo:lo+10000]})
        json.dump({"tok": tok, "ids1": ids[1], "ids2": ids[2], "clouds": clouds}, open(state, "w"))
        print("built", flush=True)
    st = json.load(open(state)); tok = {int(k): v for k, v in st["tok"].items()}
    n = len(st["clouds"]); rng = random.Random(11)
    batches = [rng.sample(range(n), 1000) for _ in range(args.batches)]
    # load the index (first request) and let it settle
    s.call("POST", "/v1/library/cloud-identifiers", tok[1], {"localIdentifiers": st["ids1"][:1000]})
    time.sleep(30)
    import subprocess
    for direction in ("l2c", "c2l", "l2c", "c2l"):
        ps = subprocess.Popen(["perf", "stat", "-x,", "-e", "cycles,instructions,dTLB-load-misses,dTLB-store-misses,page-faults", "-p", str(s.p.pid)], stderr=subprocess.PIPE, text=True)
        time.sleep(0.3)
        c0 = s.cpu(); w0 = time.perf_counter()
        for b in batches:
            if direction == "l2c":
                m = s.call("POST", "/v1/library/cloud-identifiers", tok[1], {"localIdentifiers": [st["ids1"][i] for i in b]})["mappings"]
                assert m[0]["cloudIdentifier"] == st["clouds"][b[0]]
            else:
                m = s.call("POST", "/v1/library/local-identifiers", tok[2], {"cloudIdentifiers": [st["clouds"][i] for i in b]})["mappings"]
                assert m[0]["localIdentifier"] == st["ids2"][b[0]]
        ps.send_signal(2); out = ps.communicate()[1]
        counts = {l.split(",")[2]: int(l.split(",")[0]) for l in out.splitlines() if l and l[0].isdigit()}
        print(f"{args.tag} {direction}: " + ", ".join(f"{k} {v/len(batches)/1000:.1f}k" for k, v in counts.items()) + " per batch", flush=True)
        print(f"{args.tag} {direction}: Concord {1000*(s.cpu()-c0)/len(batches):.3f} ms/batch, wall {1000*(time.perf_counter()-w0)/len(batches):.3f}", flush=True)
    print(open(f"/proc/{s.p.pid}/smaps_rollup").read().split("AnonHugePages:")[1].split("\n")[0].strip(), "AnonHugePages")
finally:
    s.stop()
