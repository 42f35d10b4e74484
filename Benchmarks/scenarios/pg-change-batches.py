#!/usr/bin/env python3
"""What a change batch costs PostgreSQL (Benchmarks/scenarios/pg-change-batches.sh runs it in a throwaway cluster): a device with N random-id assets (upload in parts), then change
batches of 10 000 (insert new, then delete), printing backend / total PG CPU per batch. --extra K: K more devices of N
assets each in the same account (uploaded, not mapped), so that the indexes every device shares are as large as on a
server holding several devices' libraries."""
import argparse, base64, hashlib, http.client, json, os, subprocess, sys, time, socket, signal
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proc_cpu import proc_cpu, pg_cpu, pg_cpu_by_role
ap = argparse.ArgumentParser()
ap.add_argument("--bin", required=True); ap.add_argument("--assets", type=int, default=300000)
ap.add_argument("--rounds", type=int, default=2); ap.add_argument("--pause", type=float, default=0)
ap.add_argument("--hold", default="")  # file: wait while it exists before measuring (for perf attach)
ap.add_argument("--checkpoint", action="store_true"); ap.add_argument("--map", action="store_true")
ap.add_argument("--extra", type=int, default=0); ap.add_argument("--pgdir", required=True); ap.add_argument("--url", required=True)
args = ap.parse_args()
ADMIN = "adm-" + os.urandom(20).hex()
N = args.assets
def lid(tag, i):
    n = (i * 2654435761) & 0xFFFFFFFF
    return "%08X-%04X-4000-8000-%012X/L0/001" % (n, tag & 0xFFFF, tag)
def fp(space, i):
    return base64.urlsafe_b64encode(hashlib.sha256(f"{space}-{i}".encode()).digest()).decode().rstrip("=")
def aj(tag, space, i):
    return ('{"localIdentifier":"%s","fingerprint":"%s","creationDate":"2024-01-01T00:00:00Z","mediaType":"image"}' % (lid(tag, i), fp(space, i)))
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
logf = open(os.path.join(args.pgdir, "server.log"), "ab")
proc = subprocess.Popen([args.bin, "serve", "--host", "127.0.0.1", "--port", str(port), "--database", args.url,
                         "--admin-token", ADMIN, "--log-level", "error"], stdout=logf, stderr=subprocess.STDOUT)
try:
    for _ in range(1200):
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2); c.request("GET", "/health"); r = c.getresponse(); r.read()
            if r.status == 200: break
        except OSError: pass
        time.sleep(0.1)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1800)
    def call(m, p, tok, body=None, expect=(200, 201)):
        if isinstance(body, (dict, list)): body = json.dumps(body)
        h = {"Authorization": "Bearer " + tok}
        if body is not None: h["Content-Type"] = "application/json"; body = body.encode()
        conn.request(m, p, body=body, headers=h); r = conn.getresponse(); d = r.read()
        if r.status not in expect: sys.exit(f"{m} {p}: {r.status} {d[:300]}")
        return json.loads(d) if d[:1] in b"{[" else d
    A = call("POST", "/v1/accounts", ADMIN, {"name": "a"})["accountToken"]
    D1 = call("POST", "/v1/devices", A, {"name": "p", "platform": "iOS"})["deviceToken"]
    t0 = time.time()
    uid = call("POST", "/v1/library/uploads", D1, "{}")["uploadID"]
    for k, lo in enumerate(range(0, N, 10000)):
        call("PUT", f"/v1/library/uploads/{uid}/parts/{k+1}", D1, '{"assets":[%s]}' % ",".join(aj(1, "A", i) for i in range(lo, min(N, lo + 10000))))
    call("POST", f"/v1/library/uploads/{uid}/commit", D1, "{}")
    print(f"upload {N}: {time.time()-t0:.1f}s", flush=True)
    for x in range(args.extra):
        DX = call("POST", "/v1/devices", A, {"name": f"x{x}", "platform": "iOS"})["deviceToken"]
        ux = call("POST", "/v1/library/uploads", DX, "{}")["uploadID"]
        for k, lo in enumerate(range(0, N, 10000)):
            call("PUT", f"/v1/library/uploads/{ux}/parts/{k+1}", DX, '{"assets":[%s]}' % ",".join(aj(10 + x, "X%d" % x, i) for i in range(lo, min(N, lo + 10000))))
        call("POST", f"/v1/library/uploads/{ux}/commit", DX, "{}")
        print(f"extra device {x + 1} of {args.extra}: {N} uploaded", flush=True)
    if args.map:
        t0 = time.time()
        for lo in range(0, N, 10000):
            a = call("POST", "/v1/library/cloud-identifiers", D1, '{"localIdentifiers":[%s]}' % ",".join('"%s"' % lid(1, i) for i in range(lo, min(N, lo + 10000))))
            assert len(a["mappings"]) == min(N, lo + 10000) - lo
        print(f"mapped: {time.time()-t0:.1f}s", flush=True)
    def psql(sql):
        return subprocess.run(["runuser", "-u", "postgres", "--", "/usr/lib/postgresql/15/bin/psql", "-h", f"{args.pgdir}/sock", "-p",
                               open(f"{args.pgdir}/port").read().strip(), "-U", "postgres", "-d", "concord", "-Atc", sql], capture_output=True, text=True).stdout
    psql("VACUUM ANALYZE"); psql("CHECKPOINT")
    if args.hold:
        open(args.hold, "w").write(str(proc.pid))
        print("holding; backend pids:", psql("SELECT pid FROM pg_stat_activity WHERE datname='concord' AND usename='concord'").split(), flush=True)
        while os.path.exists(args.hold): time.sleep(0.5)
    psql("SELECT pg_stat_statements_reset()")
    rows = []
    for rnd in range(args.rounds):
        if args.checkpoint: psql("CHECKPOINT")
        for kind in ("insert", "delete"):
            for k in range(5):
                lo = N + (rnd * 5 + k) * 10000; hi = lo + 10000
                body = ('{"assets":{"upsert":[%s]}}' % ",".join(aj(1, "E%d" % rnd, i) for i in range(lo, hi))) if kind == "insert" else json.dumps({"assets": {"delete": [lid(1, i) for i in range(lo, hi)]}})
                r0 = pg_cpu_by_role(args.pgdir); p0 = pg_cpu(args.pgdir); c0 = proc_cpu(proc.pid); w0 = time.time()
                a = call("POST", "/v1/library/changes", D1, body)
                w = time.time() - w0; c = proc_cpu(proc.pid) - c0; p = pg_cpu(args.pgdir) - p0; r1 = pg_cpu_by_role(args.pgdir)
                be = r1.get("backends", 0) - r0.get("backends", 0)
                assert a.get("inserted" if kind == "insert" else "deleted") == 10000, a
                rows.append((kind, p, be))
                print(f"{rnd} {kind} {k}: wall {w:.3f} concord {c:.3f} pg {p:.3f} backends {be:.3f} roles {{{', '.join(f'{x}: {r1.get(x,0)-r0.get(x,0):.2f}' for x in r1 if r1.get(x,0)-r0.get(x,0) > 0.005)}}}", flush=True)
                if args.pause: time.sleep(args.pause)
    import statistics
    for kind in ("insert", "delete"):
        ps = [p for k, p, b in rows if k == kind]; bs = [b for k, p, b in rows if k == kind]
        print(f"SUMMARY {kind}: pg median {statistics.median(ps):.3f} mean {statistics.mean(ps):.3f}; backends median {statistics.median(bs):.3f}", flush=True)
    print(psql("SELECT round(total_exec_time::numeric,1) ms, calls, rows, shared_blks_hit, shared_blks_read, shared_blks_dirtied, wal_fpi, wal_bytes, left(regexp_replace(query, '\\s+', ' ', 'g'), 140) FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 15"))
finally:
    proc.terminate(); proc.wait()
