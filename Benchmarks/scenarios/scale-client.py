#!/usr/bin/env python3
"""The scale scenario's client: runs and restarts one Concord, drives every phase, checks
every answer, measures from outside and prints a Markdown report. Started by scale.sh.

scale-client.py --bin BIN --database URL --work DIR --engine sqlite|postgres [--pg-dir DIR]
                [--assets N] [--alt-assets N] [--put-assets N|auto] [--warm-batches N]
                [--alt-requests N] [--json FILE] [--command TEXT] [--commit TEXT]

Phases (see docs/benchmarks.md, "Scale scenario"):
  1. account A: device 1 uploads N assets in parts of 10 000 at defaults; device 2 PUT /v1/library of
     as much as the default body limit takes, the rest in POST /v1/library/changes batches of 10 000;
  2. changes batches of 10 000 at the start (a fresh device 3, 0 → 50 000, then deleted) and at the end
     (device 1 at N: 5 batches of new assets, then 5 batches deleting them), after the mapping;
  3. first-time mapping: local → cloud of all of device 1's ids (records created), cloud → local of
     those on device 2 (linked by content), local → cloud on device 2 (linked already); --map-batch per request (1000);
  4. restart on the same database: the first mapping requests, the mapping index's metrics, after a
     clean stop, a crash with the snapshots deleted, and a crash once the background save had run;
  5. warm batches of 1000 both ways;
  6. accounts B and C, ALT × 2 devices each, mapped both ways, then requests alternating between them;
  7. the database's size;
  8. (PostgreSQL, run before 7) a second Concord on the same database, warmed on account A; writes
     through the first, each followed by the second's next 1000-id request (it catches up from the
     mapping log), then its warm batches.
Server CPU is utime + stime of the server process (/proc/<pid>/stat), plus PostgreSQL's processes
(its postmaster, its children, and the children it reaped: proc_cpu.py) on PostgreSQL. Every answer is checked; any surprise stops the run.
Python stdlib only.
"""
import argparse, atexit, base64, hashlib, http.client, json, os, random, signal, statistics, subprocess, sys, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proc_cpu import proc_cpu, role_delta, pg_cpu as pg_cpu_of, pg_cpu_by_role as pg_cpu_by_role_of   # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--bin", required=True)
ap.add_argument("--database", required=True)
ap.add_argument("--work", required=True)
ap.add_argument("--engine", required=True, choices=["sqlite", "postgres"])
ap.add_argument("--pg-dir", default="")
ap.add_argument("--assets", type=int, default=1_000_000)
ap.add_argument("--alt-assets", type=int, default=300_000)
ap.add_argument("--put-assets", default="auto")
ap.add_argument("--part", type=int, default=10_000)
ap.add_argument("--warm-batches", type=int, default=200)
ap.add_argument("--alt-requests", type=int, default=20)
ap.add_argument("--map-batch", type=int, default=1000)  # ids per first-time mapping request
ap.add_argument("--ids", default="sequential", choices=["sequential", "random"])
ap.add_argument("--json", default="")
ap.add_argument("--command", default="")
ap.add_argument("--commit", default="")
args = ap.parse_args()

N = args.assets
BATCH = 1000
CHANGES = 10_000
BODY_LIMIT = 64 * 1024 * 1024          # server.limits.bodyBytes' default (docs/configuration.md)
ADMIN = "scale-admin-token-" + os.urandom(12).hex()
T_START = time.time()
RAW = {"engine": args.engine, "assets": N, "phases": {}}


def log(msg):
    print(f"[scale {time.time() - T_START:7.1f}s] {msg}", file=sys.stderr, flush=True)


def fail(msg):
    log("FAILED: " + msg)
    raise SystemExit(1)


# ------------------------------------------------------------------ the server process

class Server:
    def __init__(self, name="server", env=None, log_level="error"):
        self.proc = None
        self.port = None
        self.starts = 0
        self.name = name      # its log and pid files: <name>-<start>.log, <name>.pid
        self.env = env        # None: this process's environment
        self.log_level = log_level

    def start(self):
        import socket
        s = socket.socket(); s.bind(("127.0.0.1", 0)); self.port = s.getsockname()[1]; s.close()
        self.starts += 1
        logf = open(os.path.join(args.work, f"{self.name}-{self.starts}.log"), "wb")
        self.proc = subprocess.Popen([args.bin, "serve", "--host", "127.0.0.1", "--port", str(self.port),
                                      "--database", args.database, "--admin-token", ADMIN, "--log-level", self.log_level],
                                     stdout=logf, stderr=subprocess.STDOUT, env=self.env)
        with open(os.path.join(args.work, f"{self.name}.pid"), "w") as f:
            f.write(str(self.proc.pid))
        t0 = time.time()
        while True:
            if self.proc.poll() is not None:
                fail(f"the server exited with {self.proc.returncode} at start; see {logf.name}")
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                c.request("GET", "/health"); r = c.getresponse(); r.read(); c.close()
                if r.status == 200:
                    break
            except OSError:
                pass
            if time.time() - t0 > 120:
                fail("the server did not answer /health within 120 s")
            time.sleep(0.05)
        self.started_in = time.time() - t0
        return self.started_in

    def crash(self):
        """kill -9: no shutdown work (no mapping index snapshot saved)."""
        self.proc.kill(); self.proc.wait()
        self.proc = None

    def stop(self):
        """SIGTERM; returns the seconds the shutdown took (it saves the mapping index's snapshots)."""
        if self.proc is None:
            return 0.0
        t0 = time.time()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            log("server did not stop within 120 s of SIGTERM: killing it")
            self.proc.kill(); self.proc.wait()
        code = self.proc.returncode
        self.proc = None
        if code != 0:
            fail(f"the server exited with status {code} on SIGTERM")
        return time.time() - t0

    @property
    def pid(self):
        return self.proc.pid


SERVER = Server()
SECOND = None     # phase 8's second instance on the same PostgreSQL database


def _leave():
    # Never leave a server behind, whatever ends the run (a failed check, an exception, SIGTERM).
    for s in (SERVER, SECOND):
        if s is not None and s.proc is not None and s.proc.poll() is None:
            s.proc.kill(); s.proc.wait()


atexit.register(_leave)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


def pg_cpu():
    return pg_cpu_of(args.pg_dir)


def pg_cpu_by_role():
    return pg_cpu_by_role_of(args.pg_dir)


def rss_kib(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


class Sampler:
    """The server's RSS every 50 ms; peak() since the last reset()."""
    def __init__(self):
        self.peak_kib = 0
        self.lock = threading.Lock()
        threading.Thread(target=self.run, daemon=True).start()

    def run(self):
        while True:
            proc = SERVER.proc
            if proc is not None:
                r = rss_kib(proc.pid)
                with self.lock:
                    self.peak_kib = max(self.peak_kib, r)
            time.sleep(0.05)

    def reset(self):
        with self.lock:
            self.peak_kib = rss_kib(SERVER.pid) if SERVER.proc else 0

    def peak_mib(self):
        with self.lock:
            return round(max(self.peak_kib, rss_kib(SERVER.pid)) / 1024, 1)


SAMPLER = None


class Meter:
    """Wall, server CPU and PostgreSQL CPU around a block."""
    def __enter__(self):
        self.w0 = time.perf_counter(); self.c0 = proc_cpu(SERVER.pid); self.p0 = pg_cpu() if args.pg_dir else 0.0
        self.r0 = pg_cpu_by_role() if args.pg_dir else {}
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.w0
        self.cpu = proc_cpu(SERVER.pid) - self.c0
        self.pg = (pg_cpu() - self.p0) if args.pg_dir else 0.0
        # PostgreSQL's CPU by process: the backends serve the request; the others (checkpointer,
        # autovacuum, exited workers) carry on with earlier writes.
        self.roles = role_delta(self.r0, pg_cpu_by_role()) if args.pg_dir else {}
        return False


# ------------------------------------------------------------------ HTTP

class Conn:
    def __init__(self, server=None):
        self.c = None
        self.server = server      # None: SERVER

    def call(self, method, path, token, body=None, expect=(200,)):
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        if isinstance(body, str):
            body = body.encode()
        headers = {"Authorization": "Bearer " + token}
        if body is not None:
            headers["Content-Type"] = "application/json"
        for attempt in (1, 2):
            if self.c is None:
                self.c = http.client.HTTPConnection("127.0.0.1", (self.server or SERVER).port, timeout=1800)
            try:
                self.c.request(method, path, body=body, headers=headers)
                r = self.c.getresponse(); data = r.read()
                break
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                # A keep-alive connection the server closed while idle: one retry on a fresh one.
                self.c.close(); self.c = None
                if attempt == 2:
                    raise
        if r.will_close:
            self.c.close(); self.c = None
        if r.status not in expect:
            fail(f"{method} {path}: {r.status} {data[:400]!r}")
        return r.status, (json.loads(data) if data and data[:1] in b"{[" else data)

    def reset(self):
        if self.c is not None:
            self.c.close()
        self.c = None


CONN = Conn()


def metrics(server=None):
    c = http.client.HTTPConnection("127.0.0.1", (server or SERVER).port, timeout=60)
    c.request("GET", "/metrics"); r = c.getresponse(); text = r.read().decode(); c.close()
    if r.status != 200:
        fail(f"GET /metrics: {r.status}")
    out = {}
    for line in text.splitlines():
        if line.startswith("concord_mapping_index_"):
            name, value = line.rsplit(" ", 1)
            out[name.replace("concord_mapping_index_", "")] = float(value)
    if "loads_total" not in out:
        fail("no concord_mapping_index_* metrics in /metrics")
    return out


def mdelta(before, after, keys=("hits_total", "loads_total", "evictions_total", "too_large_total", "catch_ups_total")):
    return {k.replace("_total", ""): int(after[k] - before[k]) for k in keys}


# ------------------------------------------------------------------ the library

def fp(space, i):
    return base64.urlsafe_b64encode(hashlib.sha256(f"{space}-{i}".encode()).digest()).decode().rstrip("=")


def lid(device_tag, i):
    # PhotoKit-shaped, different on every device (as local identifiers are). Sequential: the first
    # 8 digits count up, so storage inserts each library in key order (appends). Random (--ids
    # random): those digits are i scrambled (a bijection on 32 bits), so consecutive objects land
    # anywhere in the key order, as PhotoKit's random UUIDs do.
    n = (i * 2654435761) & 0xFFFFFFFF if args.ids == "random" else i
    return "%08X-%04X-4000-8000-%012X/L0/001" % (n, device_tag & 0xFFFF, device_tag)


def asset_json(device_tag, space, i):
    return ('{"localIdentifier":"%s","fingerprint":"%s","creationDate":"2024-01-01T00:00:00Z","mediaType":"image"}'
            % (lid(device_tag, i), fp(space, i)))


def assets_body(device_tag, space, lo, hi, key="assets"):
    return '{"%s":[%s]}' % (key, ",".join(asset_json(device_tag, space, i) for i in range(lo, hi)))


def changes_body(device_tag, space, lo, hi):
    return '{"assets":{"upsert":[%s]}}' % ",".join(asset_json(device_tag, space, i) for i in range(lo, hi))


def delete_body(device_tag, lo, hi):
    return json.dumps({"assets": {"delete": [lid(device_tag, i) for i in range(lo, hi)]}})


def l2c_body(device_tag, ids):
    return '{"localIdentifiers":[%s]}' % ",".join('"%s"' % lid(device_tag, i) for i in ids)


def c2l_body(clouds, ids):
    return '{"cloudIdentifiers":[%s]}' % ",".join('"%s"' % clouds[i] for i in ids)


def new_account(name):
    _, a = CONN.call("POST", "/v1/accounts", ADMIN, {"name": name}, expect=(201,))
    return a["accountToken"]


def new_device(account_token, name):
    _, d = CONN.call("POST", "/v1/devices", account_token, {"name": name, "platform": "iOS"}, expect=(201,))
    return d["deviceID"], d["deviceToken"]


def check_counts(answer, what, inserted=None, deleted=None):
    if inserted is not None and answer.get("inserted") != inserted:
        fail(f"{what}: inserted {answer.get('inserted')}, expected {inserted} ({answer})")
    if deleted is not None and answer.get("deleted") != deleted:
        fail(f"{what}: deleted {answer.get('deleted')}, expected {deleted} ({answer})")


def device_status(token):
    _, s = CONN.call("GET", "/v1/library/status", token)
    return s


# ------------------------------------------------------------------ mapping, checked

def mappings(path, token, body, count, what):
    """POST a mapping batch; its `mappings`, which must hold one answer per identifier asked."""
    st, a = CONN.call("POST", path, token, body)
    m = a["mappings"]
    if len(m) != count:
        fail(f"{what}: {len(m)} answers for {count} ids")
    return m


def map_l2c(token, device_tag, space, ids, clouds=None, expect_clouds=None):
    """POST /v1/library/cloud-identifiers for ids; every answer must be a cloud identifier of the
    asset's content; fills clouds[i]; when expect_clouds is given, the same record must come back."""
    m = mappings("/v1/library/cloud-identifiers", token, l2c_body(device_tag, ids), len(ids), "local → cloud")
    for k, i in enumerate(ids):
        item = m[k]
        if item.get("localIdentifier") != lid(device_tag, i) or "cloudIdentifier" not in item:
            fail(f"local → cloud of {lid(device_tag, i)}: {item}")
        cid = item["cloudIdentifier"]
        parts = cid.split(":")
        if len(parts) != 3 or parts[1] != "001" or parts[2] != fp(space, i):
            fail(f"local → cloud of {lid(device_tag, i)}: {cid} is not an asset record of its fingerprint")
        if expect_clouds is not None and parts[0].upper() != expect_clouds[i].split(":")[0].upper():
            fail(f"local → cloud of {lid(device_tag, i)}: {cid}, expected the record {expect_clouds[i]}")
        if clouds is not None:
            clouds[i] = cid


def map_c2l(token, device_tag, clouds, ids):
    """POST /v1/library/local-identifiers: every answer must be device_tag's local identifier of i."""
    m = mappings("/v1/library/local-identifiers", token, c2l_body(clouds, ids), len(ids), "cloud → local")
    for k, i in enumerate(ids):
        item = m[k]
        if item.get("cloudIdentifier") != clouds[i] or item.get("localIdentifier") != lid(device_tag, i):
            fail(f"cloud → local of {clouds[i]}: {item}, expected {lid(device_tag, i)}")


def batches(n, size=BATCH):
    return [list(range(k, min(n, k + size))) for k in range(0, n, size)]


def timed_batches(label, items, fn):
    """Runs fn(batch) for each; per-batch wall and server CPU; returns a summary dict."""
    walls, cpus = [], []
    SAMPLER.reset()
    roles0 = pg_cpu_by_role() if args.pg_dir else {}
    with Meter() as total:
        for b in items:
            c0 = proc_cpu(SERVER.pid); w0 = time.perf_counter()
            fn(b)
            walls.append(time.perf_counter() - w0); cpus.append(proc_cpu(SERVER.pid) - c0)
    ids = sum(len(b) for b in items)
    roles = role_delta(roles0, pg_cpu_by_role()) if args.pg_dir else {}
    summary = {"label": label, "batches": len(items), "ids": ids, "wall_s": round(total.wall, 2),
               "pg_cpu_by_role_s": roles,
               "cpu_s": round(total.cpu, 2), "pg_cpu_s": round(total.pg, 2),
               "cpu_ms_per_1000": round(1000 * total.cpu / ids * 1000, 3) if ids else 0,
               "pg_cpu_ms_per_1000": round(1000 * total.pg / ids * 1000, 3) if ids else 0,
               "wall_ms_per_1000": round(1000 * total.wall / ids * 1000, 3) if ids else 0,
               "wall_p50_ms": round(1000 * statistics.median(walls), 2),
               "wall_p99_ms": round(1000 * sorted(walls)[min(len(walls) - 1, int(len(walls) * 0.99))], 2),
               "wall_max_ms": round(1000 * max(walls), 1),
               # Requests that took over a second (a stall: a reload attempt, a checkpoint): their numbers.
               "slow": [(k + 1, round(w, 2)) for k, w in enumerate(walls) if w > 1.0],
               "peak_rss_mib": SAMPLER.peak_mib()}
    log(f"{label}: {summary}")
    return summary


def db_size():
    if args.engine == "postgres":
        out = subprocess.run(["psql", args.database, "-Atc", "SELECT pg_database_size(current_database())"],
                             capture_output=True, text=True, check=True).stdout.strip()
        return {"total": int(out)}
    base = args.database[len("sqlite:"):]
    sizes = {}
    for suffix in ("", "-wal", "-shm"):
        p = base + suffix
        sizes["file" if not suffix else suffix[1:]] = os.path.getsize(p) if os.path.exists(p) else 0
    sizes["total"] = sum(sizes.values())
    if SERVER.proc is None:   # stopped: how much of the file is free pages (deleted rows, the upload's parts)
        out = subprocess.run(["sqlite3", base, "PRAGMA freelist_count; PRAGMA page_size;"], capture_output=True, text=True).stdout.split()
        if len(out) == 2:
            sizes["free"] = int(out[0]) * int(out[1])
    return sizes


def largest_tables():
    if args.engine == "postgres":
        q = ("SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
             "WHERE n.nspname = 'public' AND c.relkind = 'r' ORDER BY 2 DESC LIMIT 8")
        out = subprocess.run(["psql", args.database, "-At", "-F", "|", "-c", q], capture_output=True, text=True).stdout
        label = "tables with their indexes and TOAST"
    else:
        q = "SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC LIMIT 10"
        out = subprocess.run(["sqlite3", args.database[len("sqlite:"):], q], capture_output=True, text=True).stdout
        label = "tables and indexes, dbstat"
    rows = [l.split("|") for l in out.strip().splitlines() if "|" in l]
    return label, [(r[0], int(r[1])) for r in rows]


def relation_sizes():
    """(PostgreSQL) every table's heap, TOAST (with its index) and each index, largest first."""
    q = ("SELECT c.relname, pg_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
         "WHERE n.nspname = 'public' AND c.relkind IN ('r', 'i') UNION ALL "
         "SELECT c.relname || ' (TOAST)', pg_total_relation_size(c.reltoastrelid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
         "WHERE n.nspname = 'public' AND c.relkind = 'r' AND c.reltoastrelid <> 0 ORDER BY 2 DESC LIMIT 14")
    out = subprocess.run(["psql", args.database, "-At", "-F", "|", "-c", q], capture_output=True, text=True).stdout
    return [(r.split("|")[0], int(r.split("|")[1])) for r in out.strip().splitlines() if r.count("|") == 1]


def mb(b):
    return f"{b / 1e6:,.0f} MB"


# ================================================================== the run

os.makedirs(args.work, exist_ok=True)
SERVER.start()
SAMPLER = Sampler()
log(f"server pid {SERVER.pid} on port {SERVER.port} ({args.engine}), {N} assets")
R = RAW["phases"]

# ---------------------------------------------------------------- 1. whole-library uploads
A = new_account("scale-A")
D1_ID, D1 = new_device(A, "phone")
D2_ID, D2 = new_device(A, "tablet")
TAG1, TAG2, TAG3 = 1, 2, 3
SPACE_A = "A"

# Device 1: an upload in parts at defaults.
SAMPLER.reset(); rss0 = round(rss_kib(SERVER.pid) / 1024, 1)
with Meter() as m_parts:
    _, u = CONN.call("POST", "/v1/library/uploads", D1, "{}", expect=(201,))
    uid = u["uploadID"]
    for k, lo in enumerate(range(0, N, args.part)):
        body = assets_body(TAG1, SPACE_A, lo, min(N, lo + args.part))
        _, p = CONN.call("PUT", f"/v1/library/uploads/{uid}/parts/{k + 1}", D1, body)
        if p.get("objects") != min(N, lo + args.part):
            fail(f"part {k + 1}: the upload holds {p.get('objects')} objects, expected {min(N, lo + args.part)}")
peak_sending = SAMPLER.peak_mib()
with Meter() as m_commit:
    _, answer = CONN.call("POST", f"/v1/library/uploads/{uid}/commit", D1, "{}")
check_counts(answer, "commit of the upload in parts", inserted=N)
R["upload_parts"] = {"objects": N, "parts": (N + args.part - 1) // args.part, "answer": answer,
                     "send_wall_s": round(m_parts.wall, 2), "send_cpu_s": round(m_parts.cpu, 2), "send_pg_cpu_s": round(m_parts.pg, 2),
                     "commit_wall_s": round(m_commit.wall, 2), "commit_cpu_s": round(m_commit.cpu, 2), "commit_pg_cpu_s": round(m_commit.pg, 2),
                     "rss_before_mib": rss0, "peak_rss_sending_mib": peak_sending, "peak_rss_mib": SAMPLER.peak_mib(),
                     "rss_after_mib": round(rss_kib(SERVER.pid) / 1024, 1)}
log(f"upload in parts: {R['upload_parts']}")
SAMPLER.reset()
with Meter() as m_status:
    st = device_status(D1)
if st["objects"] != N:
    fail("device 1 does not hold the whole library after the commit")
# GET /v1/library/status on the new library: what it costs (it walks the library).
R["status_after_upload"] = {"wall_s": round(m_status.wall, 2), "cpu_s": round(m_status.cpu, 2), "pg_cpu_s": round(m_status.pg, 2),
                            "peak_rss_mib": SAMPLER.peak_mib(), "rss_after_mib": round(rss_kib(SERVER.pid) / 1024, 1)}
log(f"GET /v1/library/status: {R['status_after_upload']}")

# Device 2: PUT /v1/library of as much as the default body limit takes (multiples of 10 000).
one = len(asset_json(TAG2, SPACE_A, N - 1)) + 1
if args.put_assets == "auto":
    P = min(N, ((BODY_LIMIT - 1024) // one) // CHANGES * CHANGES)
else:
    P = min(N, int(args.put_assets))
body = assets_body(TAG2, SPACE_A, 0, P)
if len(body) > BODY_LIMIT:
    fail(f"PUT body of {P} assets is {len(body)} bytes, over the default limit")
SAMPLER.reset(); rss0 = round(rss_kib(SERVER.pid) / 1024, 1)
with Meter() as m_put:
    _, answer = CONN.call("PUT", "/v1/library", D2, body)
check_counts(answer, "PUT /v1/library", inserted=P)
R["upload_put"] = {"objects": P, "body_bytes": len(body), "answer": answer, "wall_s": round(m_put.wall, 2),
                   "cpu_s": round(m_put.cpu, 2), "pg_cpu_s": round(m_put.pg, 2), "rss_before_mib": rss0,
                   "peak_rss_mib": SAMPLER.peak_mib(), "rss_after_mib": round(rss_kib(SERVER.pid) / 1024, 1)}
del body
log(f"PUT /v1/library: {R['upload_put']}")

# The rest of device 2's library, if the body limit did not take it: changes batches of 10 000.
rest = []
for lo in range(P, N, CHANGES):
    hi = min(N, lo + CHANGES)
    body = changes_body(TAG2, SPACE_A, lo, hi)
    with Meter() as mm:
        _, answer = CONN.call("POST", "/v1/library/changes", D2, body)
    check_counts(answer, f"changes {lo}..{hi} on device 2", inserted=hi - lo)
    rest.append({"library_before": lo, "objects": hi - lo, "wall_s": round(mm.wall, 3), "cpu_s": round(mm.cpu, 3), "pg_cpu_s": round(mm.pg, 3)})
R["device2_rest"] = rest
if rest:
    log(f"device 2's rest: {len(rest)} changes batches, first {rest[0]}, last {rest[-1]}")
if device_status(D2)["objects"] != N:
    fail("device 2 does not hold the whole library")
R["db_after_uploads"] = db_size()

# ---------------------------------------------------------------- 2a. changes batches at the start
D3_ID, D3 = new_device(A, "small")
start = []
for k in range(5):
    lo, hi = k * CHANGES, (k + 1) * CHANGES
    body = changes_body(TAG3, "S", lo, hi)
    with Meter() as mm:
        _, answer = CONN.call("POST", "/v1/library/changes", D3, body)
    check_counts(answer, "changes on device 3", inserted=CHANGES)
    start.append({"library_before": lo, "objects": CHANGES, "wall_s": round(mm.wall, 3), "cpu_s": round(mm.cpu, 3), "pg_cpu_s": round(mm.pg, 3)})
R["changes_start"] = start
log(f"changes at the start: {start}")
CONN.call("DELETE", f"/v1/devices/{D3_ID}", A, expect=(204,))

# ---------------------------------------------------------------- 3. first-time mapping
CLOUDS = [None] * N
m0 = metrics()
R["map_l2c_first"] = timed_batches("local → cloud, device 1, first time (records created)", batches(N, args.map_batch),
                                   lambda b: map_l2c(D1, TAG1, SPACE_A, b, clouds=CLOUDS))
if any(c is None for c in CLOUDS) or len({c.split(":")[0] for c in CLOUDS}) != N:
    fail("local → cloud of device 1: not one distinct record per asset")
R["map_c2l_first"] = timed_batches("cloud → local, device 2, first time (linked by content)", batches(N, args.map_batch),
                                   lambda b: map_c2l(D2, TAG2, CLOUDS, b))
R["map_l2c_d2"] = timed_batches("local → cloud, device 2 (linked already)", batches(N, args.map_batch),
                                lambda b: map_l2c(D2, TAG2, SPACE_A, b, expect_clouds=CLOUDS))
R["metrics_first_mapping"] = mdelta(m0, metrics())
st = device_status(D2)
if st["linked"] != N:
    fail(f"device 2 status after the mapping: {st}")
R["db_after_mapping"] = db_size()

# ---------------------------------------------------------------- 2b. changes batches at the end (1M, mapped)
end = []
for k in range(5):
    lo, hi = N + k * CHANGES, N + (k + 1) * CHANGES
    body = changes_body(TAG1, "E", lo, hi)
    with Meter() as mm:
        _, answer = CONN.call("POST", "/v1/library/changes", D1, body)
    check_counts(answer, "changes at the end", inserted=CHANGES)
    end.append({"library_before": lo, "objects": CHANGES, "kind": "insert", "wall_s": round(mm.wall, 3), "cpu_s": round(mm.cpu, 3), "pg_cpu_s": round(mm.pg, 3), "pg_cpu_by_role_s": mm.roles})
for k in range(5):
    lo, hi = N + k * CHANGES, N + (k + 1) * CHANGES
    with Meter() as mm:
        _, answer = CONN.call("POST", "/v1/library/changes", D1, delete_body(TAG1, lo, hi))
    check_counts(answer, "deletes at the end", deleted=CHANGES)
    end.append({"library_before": N + 5 * CHANGES - k * CHANGES, "objects": CHANGES, "kind": "delete", "wall_s": round(mm.wall, 3), "cpu_s": round(mm.cpu, 3), "pg_cpu_s": round(mm.pg, 3), "pg_cpu_by_role_s": mm.roles})
R["changes_end"] = end
log(f"changes at the end: {end}")
if device_status(D1)["objects"] != N:
    fail("device 1 does not hold N objects after the end batches")

# ---------------------------------------------------------------- 4. index load after a restart
def snapshot_files():
    """The mapping index snapshots (mappingIndexSnapshots: auto beside SQLite, or the variable)."""
    d = os.environ.get("CONCORD_MAPPING_INDEX_SNAPSHOTS") or (args.database[len("sqlite:"):] + "-index" if args.engine == "sqlite" else "")
    if not d or d == "off" or not os.path.isdir(d):
        return []
    return [os.path.join(d, f) for f in os.listdir(d)]


def first_requests_after_restart():
    """Starts the server; times the first requests of each direction (the first loads the index)."""
    started = SERVER.start()
    SAMPLER.reset()
    log(f"restarted: pid {SERVER.pid}, /health after {started:.2f} s")
    m0 = metrics()
    rss0 = round(rss_kib(SERVER.pid) / 1024, 1)
    firsts = []
    rng = random.Random(24)
    t_first = time.time()
    for k in range(5):
        lo = rng.randrange(0, max(1, N - BATCH))
        ids = list(range(lo, min(N, lo + BATCH)))
        with Meter() as mm:
            map_l2c(D1, TAG1, SPACE_A, ids, expect_clouds=CLOUDS)
        firsts.append({"request": k + 1, "direction": "local → cloud, device 1", "wall_ms": round(1000 * mm.wall, 1), "cpu_ms": round(1000 * mm.cpu, 1), "pg_cpu_ms": round(1000 * mm.pg, 1)})
    for k in range(3):
        lo = rng.randrange(0, max(1, N - BATCH))
        ids = list(range(lo, min(N, lo + BATCH)))
        with Meter() as mm:
            map_c2l(D2, TAG2, CLOUDS, ids)
        firsts.append({"request": k + 6, "direction": "cloud → local, device 2", "wall_ms": round(1000 * mm.wall, 1), "cpu_ms": round(1000 * mm.cpu, 1), "pg_cpu_ms": round(1000 * mm.pg, 1)})
    # A large account without a current snapshot loads off the request path (mappingIndexInlineLoadObjects):
    # storage answered the requests above; wait for the index and time one request each way from it.
    ready_s = None
    if metrics().get("deferred_loads_total", 0) > 0:
        while metrics().get("background_loads_fitted_total", 0) < 1:
            if time.time() - t_first > 300:
                fail("the background load of the index did not finish within 300 s")
            time.sleep(0.1)
        ready_s = round(time.time() - t_first, 2)
        lo = rng.randrange(0, max(1, N - BATCH))
        ids = list(range(lo, min(N, lo + BATCH)))
        for k, (direction, run) in enumerate((("local → cloud, device 1", lambda: map_l2c(D1, TAG1, SPACE_A, ids, expect_clouds=CLOUDS)),
                                               ("cloud → local, device 2", lambda: map_c2l(D2, TAG2, CLOUDS, ids)))):
            with Meter() as mm:
                run()
            firsts.append({"request": f"{k + 9} (index installed)", "direction": direction, "wall_ms": round(1000 * mm.wall, 1), "cpu_ms": round(1000 * mm.cpu, 1), "pg_cpu_ms": round(1000 * mm.pg, 1)})
    m1 = metrics()
    return {"health_after_s": round(started, 2), "requests": firsts, "metrics_before": m0, "metrics_after": m1, "index_ready_s": ready_s,
                    "delta": mdelta(m0, m1), "rss_before_mib": rss0, "rss_after_mib": round(rss_kib(SERVER.pid) / 1024, 1),
                    "peak_rss_mib": SAMPLER.peak_mib()}


CONN.reset()
stop_s = SERVER.stop()
R["db_after_restart"] = db_size()     # SQLite: the clean shutdown checkpoints and truncates the WAL
if args.engine == "postgres":
    R["relations_after_restart"] = relation_sizes()
    q = "SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del FROM pg_stat_user_tables WHERE n_tup_ins > 0 ORDER BY n_tup_ins DESC LIMIT 6"
    out = subprocess.run(["psql", args.database, "-At", "-F", "|", "-c", q], capture_output=True, text=True).stdout
    R["row_writes_after_restart"] = [r.split("|") for r in out.strip().splitlines() if r.count("|") == 4]
    # SCALE_VACUUM_A=1: a VACUUM here as well, for account A's size without dead rows (off by default:
    # it sets the visibility map, which the restarts below would then read).
    if os.environ.get("SCALE_VACUUM_A") == "1":
        subprocess.run(["psql", args.database, "-qAtc", "VACUUM"], capture_output=True, text=True, check=True)
        R["db_after_restart_vacuum"] = db_size()
        R["relations_after_restart_vacuum"] = relation_sizes()
R["snapshot_bytes"] = sum(os.path.getsize(f) for f in snapshot_files())
R["restart"] = first_requests_after_restart()
R["restart"]["stop_s"] = round(stop_s, 2)
log(f"after restart: {R['restart']}")
# Without a snapshot (a crash after the account changed, or snapshots off): the index loads from the tables.
CONN.reset()
SERVER.crash()
for f in snapshot_files():
    os.unlink(f)
R["restart_crash"] = first_requests_after_restart()
log(f"after a crash: {R['restart_crash']}")
# A crash after the account settled: the background save (mappingIndexSnapshotSeconds) wrote its
# snapshot while the server ran, so the next start loads it from there.
t0 = time.time()
while metrics().get("snapshots_saved_total", 0) < 1:
    if time.time() - t0 > 300:
        fail("no background snapshot save within 300 s of the account settling")
    time.sleep(0.25)
R["settled_saved_after_s"] = round(time.time() - t0, 1)
CONN.reset()
SERVER.crash()
R["restart_settled_crash"] = first_requests_after_restart()
log(f"after a crash once settled: {R['restart_settled_crash']}")

# ---------------------------------------------------------------- 5. warm batches both ways
rng = random.Random(5)
W = args.warm_batches
starts = [rng.randrange(0, max(1, N - BATCH)) for _ in range(W)]
warm_l2c = [list(range(s, min(N, s + BATCH))) for s in starts]
warm_c2l = [list(range(s, min(N, s + BATCH))) for s in reversed(starts)]
m0 = metrics()
R["warm_l2c"] = timed_batches("warm local → cloud, device 1", warm_l2c, lambda b: map_l2c(D1, TAG1, SPACE_A, b, expect_clouds=CLOUDS))
m1 = metrics()
R["warm_c2l"] = timed_batches("warm cloud → local, device 2", warm_c2l, lambda b: map_c2l(D2, TAG2, CLOUDS, b))
m2 = metrics()
R["warm_l2c"]["metrics"] = mdelta(m0, m1); R["warm_c2l"]["metrics"] = mdelta(m1, m2)
R["warm_metrics_after"] = m2

# ---------------------------------------------------------------- 6. two accounts used alternately
ALT = args.alt_assets
alt = {}
with Meter() as m_setup:
    for name, space in (("B", "B"), ("C", "C")):
        acc = new_account("scale-" + name)
        _, t1 = new_device(acc, "phone"); _, t2 = new_device(acc, "tablet")
        for tok, tag in ((t1, 11), (t2, 12)):
            for lo in range(0, ALT, 400_000):   # PUT /v1/library; 300 000 fit the default body limit
                hi = min(ALT, lo + 400_000)
                if lo == 0:
                    _, a = CONN.call("PUT", "/v1/library", tok, assets_body(tag, space, lo, hi))
                else:
                    _, a = CONN.call("POST", "/v1/library/changes", tok, changes_body(tag, space, lo, hi))
        clouds = [None] * ALT
        for b in batches(ALT):
            map_l2c(t1, 11, space, b, clouds=clouds)
        for b in batches(ALT):
            map_c2l(t2, 12, clouds, b)
        alt[name] = {"t1": t1, "t2": t2, "clouds": clouds, "space": space}
        log(f"account {name}: {ALT} × 2 uploaded and mapped both ways")
m0 = metrics()
alt_rows = []
for direction in ("local → cloud", "cloud → local"):
    for k in range(args.alt_requests):
        name = "B" if k % 2 == 0 else "C"
        a = alt[name]
        lo = rng.randrange(0, max(1, ALT - BATCH))
        ids = list(range(lo, min(ALT, lo + BATCH)))
        before = metrics()
        rss_b = rss_kib(SERVER.pid)
        with Meter() as mm:
            if direction == "local → cloud":
                map_l2c(a["t1"], 11, a["space"], ids, expect_clouds=a["clouds"])
            else:
                map_c2l(a["t2"], 12, a["clouds"], ids)
        after = metrics()
        alt_rows.append({"direction": direction, "account": name, "wall_ms": round(1000 * mm.wall, 1), "cpu_ms": round(1000 * mm.cpu, 1),
                         "pg_cpu_ms": round(1000 * mm.pg, 1), **mdelta(before, after),
                         "resident_mib_after": round(after.get("resident_bytes", 0) / 2**20, 1),
                         "accounts_after": int(after.get("accounts", 0))})
R["alternating"] = {"alt_assets": ALT, "setup_wall_s": round(m_setup.wall, 1), "setup_cpu_s": round(m_setup.cpu, 1),
                    "rows": alt_rows, "delta": mdelta(m0, metrics())}
log(f"alternating: {R['alternating']['delta']}")

# ---------------------------------------------------------------- 8. two instances on one PostgreSQL
def two_instances():
    """A second Concord on the same database (its own snapshot directory: it loads from the tables),
    warmed on account A; then writes through the first and, each time, the second's very next
    1000-id request (it catches up with the first's writes from the mapping log), then its warm batches."""
    global CONN, SECOND
    # At `info`: its log says how long each catch-up took inside it (and how: log or reload).
    SECOND = Server("second", env={**os.environ, "CONCORD_MAPPING_INDEX_SNAPSHOTS": os.path.join(args.work, "index-second")},
                    log_level="info")
    started = SECOND.start()
    first_conn, second_conn = CONN, Conn(SECOND)

    def on_second(fn):
        global CONN
        CONN = second_conn
        try:
            return fn()
        finally:
            CONN = first_conn

    def timed_second(fn):
        c0 = proc_cpu(SECOND.pid); p0 = pg_cpu(); w0 = time.perf_counter()
        on_second(fn)
        return {"wall_ms": round(1000 * (time.perf_counter() - w0), 1), "cpu_ms": round(1000 * (proc_cpu(SECOND.pid) - c0), 1),
                "pg_cpu_ms": round(1000 * (pg_cpu() - p0), 1)}

    rng = random.Random(8)

    def some_ids():
        lo = rng.randrange(0, max(1, N - BATCH))
        return list(range(lo, min(N, lo + BATCH)))

    def warm(label, count):
        rows = {"local → cloud": [], "cloud → local": []}
        for _ in range(count):
            rows["local → cloud"].append(timed_second(lambda: map_l2c(D1, TAG1, SPACE_A, some_ids(), expect_clouds=CLOUDS)))
            rows["cloud → local"].append(timed_second(lambda: map_c2l(D2, TAG2, CLOUDS, some_ids())))
        out = {d: {"batches": len(r), "wall_p50_ms": round(statistics.median(x["wall_ms"] for x in r), 2),
                   "wall_max_ms": max(x["wall_ms"] for x in r),
                   "cpu_ms_per_1000": round(statistics.mean(x["cpu_ms"] for x in r), 2),
                   "pg_cpu_ms_per_1000": round(statistics.mean(x["pg_cpu_ms"] for x in r), 2)} for d, r in rows.items()}
        log(f"second instance, warm batches {label}: {out}")
        return out

    # Warm it: its first request starts the account's load (off the request path for a large account).
    m0 = metrics(SECOND)
    on_second(lambda: map_l2c(D1, TAG1, SPACE_A, some_ids(), expect_clouds=CLOUDS))
    t0 = time.time()
    while metrics(SECOND).get("accounts", 0) < 1:
        if time.time() - t0 > 300:
            fail("the second instance did not load account A within 300 s")
        time.sleep(0.1)
    loaded_s = round(time.time() - t0, 2)
    warm_before = warm("before the first instance's writes", 20)
    # Writes through the first, each followed by the second's first request.
    NEW = N + 200_000          # new assets of device 1, not used by any other phase
    new_ids = list(range(NEW, NEW + CHANGES))
    NEW_CLOUDS = {}
    steps = []

    def step(label, write, direction, read):
        with Meter() as mw:
            write()
        # Another client's request, a moment later: the first instance's own follow-up work done.
        time.sleep(0.5)
        before = metrics(SECOND)
        row = timed_second(read)
        after = metrics(SECOND)
        row.update({"write": label, "direction": direction, "write_wall_s": round(mw.wall, 3), "write_pg_cpu_s": round(mw.pg, 3),
                    **mdelta(before, after, keys=("loads_total", "catch_ups_total", "log_catch_ups_total", "logged_writes_applied_total",
                                                  "deferred_loads_total", "reads_while_loading_total"))})
        steps.append(row)
        log(f"second instance after '{label}': {row}")

    def upsert_new(k):
        # Round 0 inserts them; the later rounds change every one's fingerprint (space "T" last).
        space = "T" if k == 2 else f"T{k}"
        _, answer = CONN.call("POST", "/v1/library/changes", D1, changes_body(TAG1, space, NEW, NEW + CHANGES))
        check_counts(answer, "two instances: changes through the first", inserted=CHANGES if k == 0 else 0)

    for k in range(3):
        step(f"changes batch of {CHANGES:,} new assets on device 1" + (" (again: the same assets, new fingerprints)" if k else ""),
             lambda: upsert_new(k), "local → cloud, device 1", lambda: map_l2c(D1, TAG1, SPACE_A, some_ids(), expect_clouds=CLOUDS))
    step("first mapping of 1000 of them (records created, linked)", lambda: map_l2c(D1, TAG1, "T", new_ids[:BATCH], clouds=NEW_CLOUDS),
         "local → cloud, device 1, those 1000", lambda: map_l2c(D1, TAG1, "T", new_ids[:BATCH], expect_clouds=NEW_CLOUDS))
    step("changes batch of 1000 new assets on device 2 (linked by content when mapped)",
         lambda: CONN.call("POST", "/v1/library/changes", D2, changes_body(TAG2, "T", NEW, NEW + BATCH)),
         "cloud → local, device 2, their records", lambda: map_c2l(D2, TAG2, NEW_CLOUDS, new_ids[:BATCH]))
    warm_after = warm("after them", 50)

    def delete_new():
        _, answer = CONN.call("POST", "/v1/library/changes", D1, delete_body(TAG1, NEW, NEW + CHANGES))
        check_counts(answer, "two instances: deletes through the first", deleted=CHANGES)
        CONN.call("POST", "/v1/library/changes", D2, delete_body(TAG2, NEW, NEW + BATCH))

    step(f"deleting them (two batches, {CHANGES:,} and 1000)", delete_new, "cloud → local, device 2", lambda: map_c2l(D2, TAG2, CLOUDS, some_ids()))
    m1 = metrics(SECOND)
    second_conn.reset()
    SECOND.stop()
    # Each step's read made one catch-up (nothing else ran behind the first's writes): its log line.
    caught = []
    for line in open(os.path.join(args.work, "second-1.log"), errors="replace"):
        if "mapping index caught up" in line:
            try:
                caught.append(json.loads(line))
            except ValueError:
                pass
    for row, c in zip(steps, caught):
        row["catch_up_ms"] = round(float(c.get("ms", 0)), 2)
        row["catch_up_cpu_ms"] = round(float(c.get("cpu_ms", 0)), 2)
        row["catch_up_how"] = c.get("how")
        row["catch_up_versions"] = int(c.get("to", 0)) - int(c.get("from", 0))
    SECOND = None
    # The mapping log's live rows now (each account's last versions), and their bytes.
    out = subprocess.run(["psql", args.database, "-At", "-F", "|", "-c",
                          "SELECT count(*), coalesce(sum(length(changes)), 0) FROM mapping_deltas"], capture_output=True, text=True).stdout.strip()
    log_rows, log_bytes = (int(x) for x in out.split("|")) if out.count("|") == 1 else (-1, -1)
    return {"log_rows": log_rows, "log_bytes": log_bytes, "health_after_s": round(started, 2), "loaded_after_s": loaded_s, "warm_before": warm_before, "steps": steps,
            "warm_after": warm_after, "delta": mdelta(m0, m1, keys=("hits_total", "loads_total", "catch_ups_total", "log_catch_ups_total",
                                                                     "logged_writes_applied_total", "background_loads_total"))}


if args.engine == "postgres":
    R["two_instances"] = two_instances()
    log(f"two instances: {R['two_instances']}")

# ---------------------------------------------------------------- 7. the database's size
R["peak_rss_second_process_mib"] = round(max(SAMPLER.peak_kib, rss_kib(SERVER.pid)) / 1024, 1)
CONN.reset()
SERVER.stop()
R["db_final"] = db_size()
label, tables = largest_tables()
R["largest"] = {"label": label, "rows": tables}
if args.engine == "postgres":
    # How much of it is dead rows not vacuumed yet (the upload's parts, deleted objects, updated links).
    q = "SELECT relname, n_live_tup, n_dead_tup FROM pg_stat_user_tables ORDER BY n_dead_tup DESC LIMIT 4"
    out = subprocess.run(["psql", args.database, "-At", "-F", "|", "-c", q], capture_output=True, text=True).stdout
    R["dead_rows"] = [(r.split("|")[0], int(r.split("|")[1]), int(r.split("|")[2])) for r in out.strip().splitlines() if r.count("|") == 2]
    # Dead rows summed over every table, those of the upload staging (tables named upload*), and the
    # database's size before and after a VACUUM (what the dead rows cost until autovacuum gets there).
    q = ("SELECT coalesce(sum(n_dead_tup), 0), coalesce(sum(n_dead_tup) FILTER (WHERE relname LIKE 'upload%'), 0), "
         "coalesce(sum(pg_total_relation_size(relid)) FILTER (WHERE relname LIKE 'upload%'), 0) FROM pg_stat_user_tables")
    out = subprocess.run(["psql", args.database, "-At", "-F", "|", "-c", q], capture_output=True, text=True, check=True).stdout.strip().split("|")
    subprocess.run(["psql", args.database, "-qAtc", "VACUUM"], capture_output=True, text=True, check=True)
    R["dead_total"] = {"dead_rows": int(out[0]), "upload_dead_rows": int(out[1]), "upload_bytes": int(out[2]),
                       "size_before_vacuum": R["db_final"]["total"], "size_after_vacuum": db_size()["total"]}
RAW["wall_s"] = round(time.time() - T_START, 1)

# ================================================================== the report

def r1(x):
    return f"{x:,.1f}"


out = []
P_ = R["upload_put"]
U = R["upload_parts"]
eng = "SQLite" if args.engine == "sqlite" else "PostgreSQL"
pgnote = args.engine == "postgres"
out.append(f"## Scale scenario, {eng}: {N:,} assets on two devices")
out.append("")
out.append(f"- command: `{args.command}`; commit {args.commit}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(T_START))}; "
           f"{os.cpu_count()} cores, load average at the end {open('/proc/loadavg').read().split()[0:3]}; run took {RAW['wall_s']:.0f} s; "
           f"local identifiers {'in key order (sequential)' if args.ids == 'sequential' else 'in random key order, as PhotoKit UUIDs (SCALE_IDS=random)'}")
if pgnote:
    shown = subprocess.run(["psql", args.database, "-Atc", "SELECT current_setting('shared_buffers') || ', ' || version()"],
                           capture_output=True, text=True).stdout.strip()
    out.append(f"- PostgreSQL: shared_buffers {shown}")
out.append("- server CPU = utime + stime of the concord process (/proc)" + (", PostgreSQL CPU = its postmaster and backends" if pgnote else "")
           + "; CPU is read in clock ticks (10 ms), so a single request's figure is coarse: means over many requests are not"
           + "; every answer was checked (a wrong or missing mapping stops the run)")
out.append("")
out.append("### 1. Whole-library uploads")
out.append("")
out.append("| upload | objects | answer | sending: wall / server CPU | commit: wall / server CPU" + (" / PostgreSQL CPU" if pgnote else "") + " | server CPU per 1000 | RSS before → peak sending → peak → after |")
out.append("|---|---:|---|---|---|---:|---|")
ua = U["answer"]
out.append(f"| device 1, in parts of {args.part:,} | {N:,} | inserted {ua.get('inserted')} | {U['send_wall_s']} s / {U['send_cpu_s']} s | "
           f"{U['commit_wall_s']} s / {U['commit_cpu_s']} s" + (f" / {U['send_pg_cpu_s'] + U['commit_pg_cpu_s']:.1f} s" if pgnote else "")
           + f" | {1e6 * (U['send_cpu_s'] + U['commit_cpu_s']) / N:.1f} ms | {U['rss_before_mib']} → {U['peak_rss_sending_mib']} → **{U['peak_rss_mib']}** → {U['rss_after_mib']} MiB |")
out.append(f"| device 2, `PUT /v1/library` ({P_['body_bytes'] / 2**20:.1f} MiB body) | {P_['objects']:,} | inserted {P_['answer'].get('inserted')} | – | "
           f"{P_['wall_s']} s / {P_['cpu_s']} s" + (f" / {P_['pg_cpu_s']} s" if pgnote else "")
           + f" | {1e6 * P_['cpu_s'] / max(1, P_['objects']):.1f} ms | {P_['rss_before_mib']} → – → **{P_['peak_rss_mib']}** → {P_['rss_after_mib']} MiB |")
if rest:
    w = [x["wall_s"] for x in rest]; c = [x["cpu_s"] for x in rest]
    out.append(f"| device 2, the rest: {len(rest)} `POST /v1/library/changes` of {CHANGES:,} | {N - P_['objects']:,} | inserted each | – | "
               f"{sum(w):.1f} s / {sum(c):.1f} s" + (f" / {sum(x['pg_cpu_s'] for x in rest):.1f} s" if pgnote else "")
               + f" | {1e6 * sum(c) / (N - P_['objects']):.1f} ms | – |")
out.append("")
S_ = R["status_after_upload"]
out.append(f"`GET /v1/library/status` of device 1 right after the commit: {S_['wall_s']} s, {S_['cpu_s']} s server CPU"
           + (f", {S_['pg_cpu_s']} s PostgreSQL CPU" if pgnote else "") + f", RSS peak {S_['peak_rss_mib']} MiB, after {S_['rss_after_mib']} MiB"
           + " (the PUT's \"RSS before\" follows it).")
out.append("")
out.append(f"The default body limit (64 MiB) takes {P_['objects']:,} of these assets in one `PUT /v1/library`"
           + (f"; the remaining {N - P_['objects']:,} went in changes batches (table 2)." if rest else "; the whole library fitted."))
out.append("")
out.append("### 2. Incremental `POST /v1/library/changes`, 10 000 assets per batch")
out.append("")
out.append("| when | library before | kind | wall per batch | server CPU per batch" + (" | PostgreSQL CPU per batch" if pgnote else "") + " |")
out.append("|---|---|---|---|---|" + ("---|" if pgnote else ""))


def brow(when, rows):
    if not rows:
        return
    lib = f"{rows[0]['library_before']:,} → {rows[-1]['library_before']:,}"
    ws = [x["wall_s"] for x in rows]; cs = [x["cpu_s"] for x in rows]
    line = (f"| {when} | {lib} | {rows[0].get('kind', 'insert')} × {len(rows)} | {statistics.mean(ws):.3f} s (min {min(ws):.3f}, max {max(ws):.3f}) | "
            f"{statistics.mean(cs):.3f} s (min {min(cs):.3f}, max {max(cs):.3f})")
    if pgnote:
        line += f" | {statistics.mean(x['pg_cpu_s'] for x in rows):.3f} s"
    out.append(line + " |")


brow("start: fresh device 3", start)
if rest:
    brow("device 2's rest, first 5", rest[:5])
    brow("device 2's rest, last 5", rest[-5:])
brow(f"end: device 1 at {N:,}, mapped", [x for x in end if x["kind"] == "insert"])
brow(f"end: device 1, deleting them", [x for x in end if x["kind"] == "delete"])
out.append("")
if pgnote:
    def batch_roles(kind):
        return "; ".join("{" + ", ".join(f"{r}: {v}" for r, v in x.get("pg_cpu_by_role_s", {}).items()) + "}" for x in end if x["kind"] == kind)
    out.append(f"PostgreSQL's CPU in the end batches by process, batch by batch (seconds): inserts {batch_roles('insert')}; "
               f"deletes {batch_roles('delete')}. The backends serve the requests; the others carry on with earlier writes "
               "(checkpoint, autovacuum: an exited worker's CPU counts when it exits).")
    out.append("")
out.append(f"### 3. First-time mapping, {args.map_batch} ids per request")
out.append("")
hdr = "| direction | ids | wall | server CPU | server CPU per 1000" + (" | PostgreSQL CPU per 1000" if pgnote else "") + " | wall per request p50 / p99 / max | requests over 1 s | peak RSS |"
out.append(hdr)
out.append("|---|---:|---:|---:|---:|" + ("---:|" if pgnote else "") + "---|---:|---:|")


def mrow(label, s):
    line = (f"| {label} | {s['ids']:,} | {s['wall_s']} s | {s['cpu_s']} s | **{s['cpu_ms_per_1000']:.2f} ms**"
            + (f" | {s['pg_cpu_ms_per_1000']:.2f} ms" if pgnote else "")
            + f" | {s['wall_p50_ms']} / {s['wall_p99_ms']} / {s['wall_max_ms']} ms | {len(s['slow'])} | {s['peak_rss_mib']} MiB |")
    out.append(line)


mrow("local → cloud, device 1 (records created)", R["map_l2c_first"])
mrow("cloud → local, device 2 (linked by content)", R["map_c2l_first"])
mrow("local → cloud, device 2 (linked already)", R["map_l2c_d2"])
out.append("")
if pgnote:
    out.append("PostgreSQL's CPU during them by process (seconds): " + "; ".join(
        f"{d} {R[k]['pg_cpu_by_role_s']}" for k, d in (("map_l2c_first", "local → cloud"), ("map_c2l_first", "cloud → local"))) + ".")
    out.append("")
for key, label in (("map_l2c_first", "local → cloud, device 1"), ("map_c2l_first", "cloud → local, device 2"), ("map_l2c_d2", "local → cloud, device 2")):
    if R[key]["slow"]:
        out.append(f"Requests over 1 s, {label} (request number, seconds): " + ", ".join(f"#{k} {w} s" for k, w in R[key]["slow"][:30])
                   + (" …" if len(R[key]["slow"]) > 30 else "") + ".")
        out.append("")
out.append(f"Mapping index during these: {R['metrics_first_mapping']}.")
out.append("")
def first_requests_table(rows):
    """The first requests after a start, one row each."""
    out.append("| request | direction (1000 ids) | wall | server CPU" + (" | PostgreSQL CPU" if pgnote else "") + " |")
    out.append("|---:|---|---:|---:|" + ("---:|" if pgnote else ""))
    for x in rows:
        out.append(f"| {x['request']} | {x['direction']} | {x['wall_ms']} ms | {x['cpu_ms']} ms" + (f" | {x['pg_cpu_ms']} ms" if pgnote else "") + " |")
    out.append("")


RS = R["restart"]
out.append("### 4. After a restart on the same database")
out.append("")
out.append(f"`/health` answered {RS['health_after_s']} s after the start. RSS {RS['rss_before_mib']} MiB before the first request, "
           f"{RS['rss_after_mib']} MiB after these, peak {RS['peak_rss_mib']} MiB.")
out.append("")
first_requests_table(RS["requests"])
ma = RS["metrics_after"]
out.append(f"Mapping index metrics after them (`concord_mapping_index_*`): loads {int(ma['loads_total'])} "
           f"(from the snapshot: {int(ma.get('snapshot_loads_total', 0))}), too_large {int(ma['too_large_total'])}, "
           f"hits {int(ma['hits_total'])}, evictions {int(ma['evictions_total'])}, accounts {int(ma['accounts'])}, "
           f"resident {ma['resident_bytes'] / 2**20:.1f} MiB. The shutdown before took {RS['stop_s']} s "
           f"(it saved the mapping index's snapshot: {R['snapshot_bytes'] / 1e6:,.0f} MB on disk).")
out.append("")
RC = R["restart_crash"]
out.append("#### 4b. After a crash (kill -9), with no snapshot: the index loads from the tables")
out.append("")
first_requests_table(RC["requests"])
mc = RC["metrics_after"]
out.append(f"Metrics after them: loads {int(mc['loads_total'])} (from a snapshot: {int(mc.get('snapshot_loads_total', 0))}), "
           f"too_large {int(mc['too_large_total'])}, resident {mc['resident_bytes'] / 2**20:.1f} MiB; peak RSS {RC['peak_rss_mib']} MiB.")
if RC.get("index_ready_s") is not None:
    out.append("")
    out.append(f"The load ran off the request path (`mappingIndexInlineLoadObjects`: deferred loads {int(mc.get('deferred_loads_total', 0))}, "
               f"reads served from storage meanwhile {int(mc.get('reads_while_loading_total', 0))}): the index was installed "
               f"{RC['index_ready_s']} s after the first request; the last two rows ran on it.")
out.append("")
RK = R["restart_settled_crash"]
out.append("#### 4c. After a crash (kill -9) once the account had settled: the background save's snapshot")
out.append("")
out.append(f"The server of 4b saved the account in the background {R['settled_saved_after_s']} s after its first requests "
           f"(`mappingIndexSnapshotSeconds` {os.environ.get('CONCORD_MAPPING_INDEX_SNAPSHOT_SECONDS', '60')}: unchanged for one pass), then was killed.")
out.append("")
first_requests_table(RK["requests"])
mk = RK["metrics_after"]
out.append(f"Metrics after them: loads {int(mk['loads_total'])} (from a snapshot: {int(mk.get('snapshot_loads_total', 0))}), "
           f"rejected snapshots {int(mk.get('snapshots_rejected_total', 0))}, resident {mk['resident_bytes'] / 2**20:.1f} MiB; peak RSS {RK['peak_rss_mib']} MiB.")
out.append("")
out.append(f"### 5. Warm batches, {W} × 1000 ids each way")
out.append("")
out.append(hdr)
out.append("|---|---:|---:|---:|---:|" + ("---:|" if pgnote else "") + "---|---:|---:|")
mrow("local → cloud, device 1", R["warm_l2c"])
mrow("cloud → local, device 2", R["warm_c2l"])
out.append("")
if pgnote:
    out.append("PostgreSQL's CPU during them by process (seconds): " + "; ".join(
        f"{d} {R[k]['pg_cpu_by_role_s']}" for k, d in (("warm_l2c", "local → cloud"), ("warm_c2l", "cloud → local")))
        + ". The backends serve the requests; the others carry on with earlier phases' writes (checkpoint, autovacuum).")
    out.append("")
out.append(f"Mapping index during them: local → cloud {R['warm_l2c']['metrics']}, cloud → local {R['warm_c2l']['metrics']}; "
           f"resident {R['warm_metrics_after']['resident_bytes'] / 2**20:.1f} MiB in {int(R['warm_metrics_after']['accounts'])} account(s).")
out.append("")
AL = R["alternating"]
out.append(f"### 6. Two accounts of {ALT:,} × 2 used alternately ({args.alt_requests} requests of 1000 ids each way)")
out.append("")
out.append(f"Set-up (not measured per request): each account's two devices uploaded (`PUT /v1/library`) and mapped both ways, "
           f"{AL['setup_wall_s']} s wall, {AL['setup_cpu_s']} s server CPU for both.")
out.append("")
for direction in ("local → cloud", "cloud → local"):
    rows = [x for x in AL["rows"] if x["direction"] == direction]
    ws = [x["wall_ms"] for x in rows]; cs = [x["cpu_ms"] for x in rows]
    loads = sum(x["loads"] for x in rows); ev = sum(x["evictions"] for x in rows); tl = sum(x["too_large"] for x in rows); hits = sum(x["hits"] for x in rows)
    out.append(f"- **{direction}**: wall per request median {statistics.median(ws):.1f} ms (min {min(ws):.1f}, max {max(ws):.1f}); "
               f"server CPU mean {statistics.mean(cs):.1f} ms, median {statistics.median(cs):.1f} ms (min {min(cs):.1f}, max {max(cs):.1f})"
               + (f", PostgreSQL CPU mean {statistics.mean(x['pg_cpu_ms'] for x in rows):.1f} ms" if pgnote else "")
               + f"; over the {len(rows)} requests: index loads {loads}, evictions {ev}, too_large {tl}, hits {hits}.")
out.append("")
out.append("| # | direction | account | wall | server CPU | loads | evictions | too_large | hits | index resident after |")
out.append("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|")
for k, x in enumerate(AL["rows"]):
    out.append(f"| {k + 1} | {x['direction']} | {x['account']} | {x['wall_ms']} ms | {x['cpu_ms']} ms | {x['loads']} | {x['evictions']} | "
               f"{x['too_large']} | {x['hits']} | {x['resident_mib_after']} MiB / {x['accounts_after']} acct |")
out.append("")
if "two_instances" in R:
    TI = R["two_instances"]
    out.append("### 8. Two instances on one PostgreSQL")
    out.append("")
    out.append(f"A second Concord on the same database (its own snapshot directory: it loaded account A from the tables, "
               f"{TI['loaded_after_s']} s after its first request), warmed; then each write through the first instance is "
               f"followed by the second's very next 1000-id request, which finds its index behind the database's mapping version.")
    out.append("")
    out.append("| write through the first instance | its PostgreSQL CPU | the second's next request (1000 ids) | wall | server CPU | PostgreSQL CPU | of which the catch-up: wall / Concord CPU (server's log) | how the second caught up |")
    out.append("|---|---:|---|---:|---:|---:|---:|---|")
    for x in TI["steps"]:
        how = (f"mapping log: {x['logged_writes_applied']} write(s) applied" if x["log_catch_ups"] else
               (f"reload ({x['loads']} loads, {x['deferred_loads']} deferred)" if x["catch_ups"] or x["loads"] or x["deferred_loads"] else "none needed"))
        out.append(f"| {x['write']} | {x['write_pg_cpu_s']} s | {x['direction']} "
                   f"| **{x['wall_ms']} ms** | {x['cpu_ms']} ms | {x['pg_cpu_ms']} ms | {x.get('catch_up_ms', '–')} / {x.get('catch_up_cpu_ms', '–')} ms | {how} |")
    out.append("")
    out.append("| the second instance's warm batches (1000 ids) | direction | wall p50 / max | server CPU per batch | PostgreSQL CPU per batch |")
    out.append("|---|---|---:|---:|---:|")
    for when, key in (("before the first's writes", "warm_before"), ("after them", "warm_after")):
        for d, w in TI[key].items():
            out.append(f"| {when} ({w['batches']}) | {d} | {w['wall_p50_ms']} / {w['wall_max_ms']} ms | {w['cpu_ms_per_1000']} ms | {w['pg_cpu_ms_per_1000']} ms |")
    out.append("")
    out.append(f"The mapping log (`mapping_deltas`) then held {TI.get('log_rows', '?')} rows of {TI.get('log_bytes', 0) / 1e6:,.1f} MB. "
               f"The second instance's mapping index over the phase: {TI['delta']}. Each request came 0.5 s after the write; "
               "\"of which the catch-up\" is the time inside the second instance from finding its index behind to its index being "
               "current (reading the log's rows in the request's snapshot, decoding and applying them), and the CPU time its thread spent on it, from its `info` log.")
    out.append("")
out.append("### 7. Database size")
out.append("")
if args.engine == "sqlite":
    def sq(s):
        return f"{mb(s['total'])} (file {mb(s['file'])} + WAL {mb(s['wal'])}" + (f"; free pages {mb(s['free'])}" if "free" in s else "") + ")"
    out.append(f"- after the uploads (server running): {sq(R['db_after_uploads'])}")
    out.append(f"- after the first-time mapping (server running): {sq(R['db_after_mapping'])}")
    out.append(f"- **account A ({N:,} × 2, mapped both ways), after a clean shutdown** (the WAL checkpointed): {sq(R['db_after_restart'])}")
    out.append(f"- at the end, with accounts B and C as well, after a clean shutdown: {sq(R['db_final'])}")
else:
    out.append(f"- after the uploads: {mb(R['db_after_uploads']['total'])} (`pg_database_size`)")
    out.append(f"- after the first-time mapping: {mb(R['db_after_mapping']['total'])}")
    out.append(f"- **account A ({N:,} × 2, mapped both ways)**, server stopped: {mb(R['db_after_restart']['total'])} (dead rows included until vacuum)")
    out.append("  - its relations (heap, TOAST, each index): " + ", ".join(f"`{n}` {b / 1e6:,.1f} MB" for n, b in R["relations_after_restart"]))
    if R.get("row_writes_after_restart"):
        out.append("  - rows inserted / updated (HOT) / deleted: " + ", ".join(f"`{n}` {int(i):,} / {int(u):,} ({int(h):,}) / {int(d):,}"
                                                                           for n, i, u, h, d in R["row_writes_after_restart"]))
    if "db_after_restart_vacuum" in R:
        out.append(f"  - after `VACUUM` (SCALE_VACUUM_A=1): **{mb(R['db_after_restart_vacuum']['total'])}**; " +
                   ", ".join(f"`{n}` {b / 1e6:,.1f} MB" for n, b in R["relations_after_restart_vacuum"]))
    out.append(f"- at the end, with accounts B and C as well: {mb(R['db_final']['total'])}")
if R.get("dead_rows"):
    out.append("- rows live / dead (not vacuumed yet) at the end, `pg_stat_user_tables`: " + ", ".join(f"`{n}` {l:,} / {d:,}" for n, l, d in R["dead_rows"]))
if R.get("dead_total"):
    T_ = R["dead_total"]
    out.append(f"- dead rows at the end, all tables: {T_['dead_rows']:,}; upload staging (tables `upload*`): {T_['upload_dead_rows']:,} dead rows, "
               f"{mb(T_['upload_bytes'])}; `pg_database_size` {mb(T_['size_before_vacuum'])} before `VACUUM`, {mb(T_['size_after_vacuum'])} after")
out.append(f"- largest at the end ({R['largest']['label']}): " + ", ".join(f"`{n}` {mb(b)}" for n, b in R["largest"]["rows"]))
out.append("")
report = "\n".join(out)
print(report)
if args.json:
    with open(args.json, "w") as f:
        json.dump(RAW, f, indent=1)
