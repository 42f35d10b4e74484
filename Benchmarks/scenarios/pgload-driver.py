#!/usr/bin/env python3
"""The mapping index's load after kill -9 without a snapshot, on PostgreSQL, timed several times
against one database (a driver for before/after comparisons of the load alone; scale.sh's row 4b
is the same measure inside the whole scenario).

  pgload-driver.py setup   --bin BIN --database URL --work DIR [--assets N]
      starts Concord on URL, makes one account with two devices of N random-id assets each
      (PUT /v1/library), maps device 1 local → cloud and device 2 cloud → local (10 000 per
      request), and writes the tokens and cloud identifiers to DIR/state.json.
  pgload-driver.py measure --bin BIN --database URL --work DIR --pg-dir PGDIR [--runs K] [--perf FILE]
      K times: starts Concord (snapshots off), sends one 1000-id request (the load goes to the
      background), waits for `background_loads_fitted_total`, then checks one request each way on
      the index; prints the seconds from the first request to the install and the CPU of Concord
      and of the cluster's processes meanwhile; then kill -9.
The load is timed in the background, so a library must be above the server's inline-load
threshold (`mappingIndexInlineLoadObjects`): for a small one, run with
CONCORD_MAPPING_INDEX_INLINE_LOAD_OBJECTS=100 (the server inherits the environment).
Python stdlib only; the answers are checked as scale-client.py checks them.
"""
import argparse, base64, hashlib, http.client, json, os, random, socket, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from concord_server import ConcordServer   # noqa: E402
from proc_cpu import proc_cpu, pg_cpu as pg_cpu_of   # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("mode", choices=["setup", "measure"])
ap.add_argument("--bin", required=True)
ap.add_argument("--database", required=True)
ap.add_argument("--work", required=True)
ap.add_argument("--pg-dir", default="")
ap.add_argument("--assets", type=int, default=200_000)
ap.add_argument("--runs", type=int, default=3)
ap.add_argument("--perf", default="")
args = ap.parse_args()
os.makedirs(args.work, exist_ok=True)
ADMIN = "pgload-admin-token-0123456789abcdef0123"


def fail(msg):
    print("FAILED: " + msg, file=sys.stderr)
    raise SystemExit(1)


def pg_cpu():
    return pg_cpu_of(args.pg_dir)


class Server:
    """A `ConcordServer` started anew for each run with its environment, and killed with -9."""
    def start(self, env):
        self.server = ConcordServer(args.bin, args.database, ADMIN, os.path.join(args.work, "server.log"),
                                    env={**os.environ, **env}, start_seconds=120)
        self.server.start()
        self.port, self.proc = self.server.port, self.server.p

    def kill(self):
        self.proc.kill(); self.proc.wait()


SERVER = Server()


def call(method, path, token, body=None, expect=(200, 201)):
    c = http.client.HTTPConnection("127.0.0.1", SERVER.port, timeout=1800)
    data = body if isinstance(body, (str, bytes)) or body is None else json.dumps(body)
    headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
    c.request(method, path, body=data, headers=headers)
    r = c.getresponse(); out = r.read(); c.close()
    if r.status not in expect:
        fail(f"{method} {path}: {r.status} {out[:300]!r}")
    return json.loads(out) if out[:1] in b"{[" else out


def metrics():
    c = http.client.HTTPConnection("127.0.0.1", SERVER.port, timeout=60)
    c.request("GET", "/metrics"); text = c.getresponse().read().decode(); c.close()
    return {l.rsplit(" ", 1)[0]: float(l.rsplit(" ", 1)[1]) for l in text.splitlines() if l.startswith("concord_mapping_index_")}


def fp(space, i):
    return base64.urlsafe_b64encode(hashlib.sha256(f"{space}-{i}".encode()).digest()).decode().rstrip("=")


def lid(tag, i):
    return "%08X-%04X-4000-8000-%012X/L0/001" % ((i * 2654435761) & 0xFFFFFFFF, tag & 0xFFFF, tag)


def l2c(token, tag, ids, clouds=None, expect=None):
    body = '{"localIdentifiers":[%s]}' % ",".join('"%s"' % lid(tag, i) for i in ids)
    m = call("POST", "/v1/library/cloud-identifiers", token, body)["mappings"]
    for k, i in enumerate(ids):
        cid = m[k].get("cloudIdentifier", "")
        if m[k].get("localIdentifier") != lid(tag, i) or cid.split(":")[-1] != fp("A", i):
            fail(f"local → cloud of {i}: {m[k]}")
        if expect is not None and cid.split(":")[0].upper() != expect[i].split(":")[0].upper():
            fail(f"local → cloud of {i}: {cid}, expected {expect[i]}")
        if clouds is not None:
            clouds[i] = cid


def c2l(token, tag, clouds, ids):
    body = '{"cloudIdentifiers":[%s]}' % ",".join('"%s"' % clouds[i] for i in ids)
    m = call("POST", "/v1/library/local-identifiers", token, body)["mappings"]
    for k, i in enumerate(ids):
        if m[k].get("localIdentifier") != lid(tag, i):
            fail(f"cloud → local of {clouds[i]}: {m[k]}")


STATE = os.path.join(args.work, "state.json")
N = args.assets
if args.mode == "setup":
    SERVER.start({"CONCORD_MAPPING_INDEX_SNAPSHOTS": "off"})
    acc = call("POST", "/v1/accounts", ADMIN, {"name": "pgload"})["accountToken"]
    tokens = [call("POST", "/v1/devices", acc, {"name": n, "platform": "iOS"})["deviceToken"] for n in ("phone", "tablet")]
    for tok, tag in zip(tokens, (1, 2)):
        assets = ",".join('{"localIdentifier":"%s","fingerprint":"%s","creationDate":"2024-01-01T00:00:00Z","mediaType":"image"}'
                          % (lid(tag, i), fp("A", i)) for i in range(N))
        call("PUT", "/v1/library", tok, '{"assets":[%s]}' % assets)
    clouds = [None] * N
    for lo in range(0, N, 10_000):
        l2c(tokens[0], 1, range(lo, min(N, lo + 10_000)), clouds=clouds)
    for lo in range(0, N, 10_000):
        c2l(tokens[1], 2, clouds, range(lo, min(N, lo + 10_000)))
    json.dump({"tokens": tokens, "clouds": clouds, "assets": N}, open(STATE, "w"))
    SERVER.kill()
    print(f"set up {N} × 2")
else:
    st = json.load(open(STATE)); tokens, clouds, N = st["tokens"], st["clouds"], st["assets"]
    rng = random.Random(7)
    for run in range(args.runs):
        SERVER.start({"CONCORD_MAPPING_INDEX_SNAPSHOTS": "off"})
        perf = None
        if args.perf:
            perf = subprocess.Popen(["perf", "record", "-g", "-o", f"{args.perf}.{run}", "-p", str(SERVER.proc.pid)],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)
        c0, p0, t0 = proc_cpu(SERVER.proc.pid), pg_cpu(), time.time()
        lo = rng.randrange(0, N - 1000)
        l2c(tokens[0], 1, range(lo, lo + 1000), expect=clouds)
        while metrics().get("concord_mapping_index_background_loads_fitted_total", 0) < 1:
            if time.time() - t0 > 300:
                fail("no install within 300 s")
            time.sleep(0.1)
        ready, c1, p1 = time.time() - t0, proc_cpu(SERVER.proc.pid), pg_cpu()
        if perf:
            perf.send_signal(2); perf.wait()
        m0 = metrics()
        lo = rng.randrange(0, N - 1000)
        l2c(tokens[0], 1, range(lo, lo + 1000), expect=clouds)
        c2l(tokens[1], 2, clouds, range(lo, lo + 1000))
        if metrics()["concord_mapping_index_hits_total"] - m0["concord_mapping_index_hits_total"] < 2:
            fail("the checks after the install did not run on the index")
        print(f"run {run + 1}: installed after {ready:.2f} s, Concord CPU {c1 - c0:.2f} s, PostgreSQL CPU {p1 - p0:.2f} s", flush=True)
        SERVER.kill()
