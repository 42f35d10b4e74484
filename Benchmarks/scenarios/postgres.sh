#!/usr/bin/env bash
# PostgreSQL vs SQLite, one run, ratios (docs/scaling.md records the numbers):
#   - identifiers/s of 1000-item local→cloud and cloud→local batches (all linked: the steady state),
#     under wrk, for: SQLite one instance | PostgreSQL one instance | PostgreSQL two instances;
#   - identifiers/s of 1000-item local→cloud batches of NEW content (records created: the write path);
#   - manifest upload: one PUT /v1/library of MANIFEST_ITEMS assets, seconds;
#   - PostgreSQL's own CPU per mapping request (its processes' utime + stime around each wrk run):
#     with the mapping index a cached batch costs the database two small reads, and this says how
#     many instances one PostgreSQL can feed (docs/scaling.md).
#
# Usage: Benchmarks/scenarios/postgres.sh        (builds release concord unless BENCH_SKIP_BUILD=1)
# Knobs: BENCH_DURATION=8 (s per wrk run), BENCH_CONNECTIONS=8, DEVICES=8, MANIFEST_ITEMS=10000,
#        CONCORD_BENCH_POSTGRES_URL (an empty database to use; default: a throwaway cluster via
#        .ci/pg-cluster, which needs the postgresql package).
# Every server, wrk and PostgreSQL share this machine's cores: only the ratios mean much.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
DURATION="${BENCH_DURATION:-8}"
CONNECTIONS="${BENCH_CONNECTIONS:-8}"
DEVICES="${DEVICES:-8}"
MANIFEST_ITEMS="${MANIFEST_ITEMS:-10000}"
WORK="$(new_work_dir concord-pgbench)"
PIDS=()

log() { printf '[pg-bench] %s\n' "$*" >&2; }
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    remove_pg_cluster
    rm -rf "$WORK"
}
trap cleanup EXIT

build_concord

if [[ -n "${CONCORD_BENCH_POSTGRES_URL:-}" ]]; then
    PG_ADMIN_URL="$CONCORD_BENCH_POSTGRES_URL"
else
    start_pg_cluster
    PG_ADMIN_URL="$PG_URL"
fi

# start_instance DATABASE → prints the port once /health answers.
start_instance() {
    local port; port=$(free_port)
    (cd "$WORK" && exec "$BIN" serve --host 127.0.0.1 --port "$port" --database "$1" --admin-token bench \
        --log-level error >>"$WORK/server.log" 2>&1) &
    PIDS+=($!)
    if wait_healthy "$port"; then echo "$port"; return 0; fi
    log "instance on $1 did not start"; cat "$WORK/server.log" >&2; exit 1
}

stop_instances() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    PIDS=()
}

# setup PORT PREFIX → an account, DEVICES devices with 1000 linked assets each, and the Lua bodies
# (local→cloud and cloud→local, one per device) in $WORK/PREFIX-*.lua; also the manifest timing.
setup() {
    python3 - "$1" "$2" "$WORK" "$DEVICES" "$MANIFEST_ITEMS" <<'PY'
import json, sys, time, base64, hashlib, http.client
port, prefix, work, devices, manifest = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
def call(method, path, token, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request(method, path, body=json.dumps(body) if body is not None else None,
              headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    r = c.getresponse(); data = r.read(); c.close()
    if r.status >= 300: raise SystemExit(f"{method} {path}: {r.status} {data[:200]}")
    return json.loads(data) if data else None
def fp(n): return base64.urlsafe_b64encode(hashlib.sha256(f"{prefix}-content-{n}".encode()).digest()).decode().rstrip("=")
acct = call("POST", "/v1/accounts", "bench", {"name": "bench"})
tokens = []
for d in range(devices):
    dev = call("POST", "/v1/devices", acct["accountToken"], {"name": f"d{d}"})
    tokens.append(dev["deviceToken"])
# Manifest upload: a device's whole library in one PUT; the median of three devices' first uploads.
times = []
for d in range(3):
    big = [{"localIdentifier": f"M-{i}/L0/001", "fingerprint": fp(1_000_000 + d * manifest + i)} for i in range(manifest)]
    t0 = time.monotonic(); call("PUT", "/v1/library", tokens[d % len(tokens)], {"assets": big}); times.append(time.monotonic() - t0)
open(f"{work}/{prefix}-manifest.txt", "w").write(f"{sorted(times)[1]:.3f}\n")
l2c, c2l, fresh = [], [], []
for d, tok in enumerate(tokens):
    # Devices share content pairwise, as a person's phone and tablet do.
    ids = [f"D{d}-{i}/L0/001" for i in range(1000)]
    call("POST", "/v1/library/changes", tok, {"assets": {"upsert": [{"localIdentifier": x, "fingerprint": fp((d // 2) * 1000 + i)} for i, x in enumerate(ids)]}})
    m = call("POST", "/v1/library/cloud-identifiers", tok, {"localIdentifiers": ids})["mappings"]
    clouds = [x["cloudIdentifier"] for x in m]
    l2c.append((tok, json.dumps({"localIdentifiers": ids})))
    c2l.append((tok, json.dumps({"cloudIdentifiers": clouds})))
    # New content for the write-path run: many batches per device, never mapped before.
    for b in range(25):
        nids = [f"N{d}-{b}-{i}/L0/001" for i in range(1000)]
        call("POST", "/v1/library/changes", tok, {"assets": {"upsert": [{"localIdentifier": x, "fingerprint": fp(10_000_000 + d * 100_000 + b * 1000 + i)} for i, x in enumerate(nids)]}})
        fresh.append((tok, json.dumps({"localIdentifiers": nids})))
def lua(name, path, items, once):
    with open(f"{work}/{prefix}-{name}.lua", "w") as f:
        f.write("local bodies = {}\nlocal tokens = {}\n")
        for tok, body in items:
            f.write(f"table.insert(bodies, {json.dumps(body)})\ntable.insert(tokens, {json.dumps(tok)})\n")
        # Each wrk thread walks the list from its own offset; `once` stops at the end (new content
        # maps only once: afterwards it would be the linked path).
        f.write("local n = 0\nlocal done = false\n")
        f.write("function setup(thread) end\n")
        f.write("function init(args) n = math.random(#bodies) end\n")
        f.write("function request()\n  n = n + 1\n")
        if once:
            f.write("  if n > #bodies then n = 1 end\n")
        else:
            f.write("  if n > #bodies then n = 1 end\n")
        f.write(f"  return wrk.format('POST', '{path}', {{['Authorization'] = 'Bearer ' .. tokens[n], ['Content-Type'] = 'application/json'}}, bodies[n])\nend\n")
        f.write("function response(status, headers, body) if status ~= 200 then print('status ' .. status) end end\n")
lua("l2c", "/v1/library/cloud-identifiers", l2c, False)
lua("c2l", "/v1/library/local-identifiers", c2l, False)
lua("new", "/v1/library/cloud-identifiers", fresh, True)
PY
}

# load SCRIPT PORT... → requests/s summed over one wrk per port, run at the same time.
load() {
    local script="$1"; shift
    local outs=() port i=0
    local conns=$(( CONNECTIONS / $# )); (( conns < 1 )) && conns=1
    for port in "$@"; do
        wrk -t1 -c"$conns" -d"${DURATION}s" --latency -s "$script" "http://127.0.0.1:$port" >"$WORK/wrk-$i.txt" 2>&1 &
        outs+=($!); i=$((i + 1))
    done
    for p in "${outs[@]}"; do wait "$p"; done
    local total=0 j rps
    for j in $(seq 0 $((i - 1))); do
        if grep -q "^status" "$WORK/wrk-$j.txt"; then log "non-200 answers:"; grep "^status" "$WORK/wrk-$j.txt" | sort | uniq -c >&2; fi
        rps=$(awk '/Requests\/sec/ {print $2}' "$WORK/wrk-$j.txt")
        total=$(python3 -c "print($total + ${rps:-0})")
    done
    echo "$total"
}

# CPU seconds used so far by the PostgreSQL server's processes (utime + stime from /proc).
pg_cpu() {
    python3 - <<'PY'
import os
tick = os.sysconf("SC_CLK_TCK"); total = 0
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        if open(f"/proc/{pid}/comm").read().strip() != "postgres": continue
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    except OSError:
        pass
print(total / tick)
PY
}

# load_with_db_cpu SCRIPT PORT... → "requests/s ms-of-PostgreSQL-CPU-per-request"
load_with_db_cpu() {
    local before after rps
    before=$(pg_cpu)
    rps=$(load "$@")
    after=$(pg_cpu)
    echo "$rps $(python3 -c "r = $rps * $DURATION; print(f'{($after - $before) * 1000 / r:.3f}' if r else 'n/a')")"
}

declare -A RESULT
run_config() {
    local name="$1" database="$2" count="$3" ports=() k
    for k in $(seq 1 "$count"); do ports+=("$(start_instance "$database")"); done
    log "$name: setting up on port(s) ${ports[*]}"
    setup "${ports[0]}" "$name"
    RESULT[$name-manifest]=$(cat "$WORK/$name-manifest.txt")
    load "$WORK/$name-l2c.lua" "${ports[@]}" >/dev/null   # warm-up (caches, prepared statements)
    local measured
    measured=$(load_with_db_cpu "$WORK/$name-l2c.lua" "${ports[@]}")
    RESULT[$name-l2c]=${measured% *}; RESULT[$name-l2c-db]=${measured#* }
    measured=$(load_with_db_cpu "$WORK/$name-c2l.lua" "${ports[@]}")
    RESULT[$name-c2l]=${measured% *}; RESULT[$name-c2l-db]=${measured#* }
    RESULT[$name-new]=$(load "$WORK/$name-new.lua" "${ports[@]}")
    log "$name: l2c ${RESULT[$name-l2c]} req/s, c2l ${RESULT[$name-c2l]} req/s, new ${RESULT[$name-new]} req/s, manifest ${RESULT[$name-manifest]} s"
    stop_instances
}

pg_database() {   # a fresh database on the server for one configuration
    local name="concord_bench_$1_$$"
    "$BIN" --version >/dev/null 2>&1 || true
    python3 - "$PG_ADMIN_URL" "$name" <<'PY'
import subprocess, sys, urllib.parse
u = urllib.parse.urlparse(sys.argv[1]); name = sys.argv[2]
env = {"PGPASSWORD": urllib.parse.unquote(u.password or "")}
subprocess.run(["psql", "-q", "-h", u.hostname, "-p", str(u.port or 5432), "-U", urllib.parse.unquote(u.username or ""), "-d", u.path.lstrip("/"),
                "-c", f"CREATE DATABASE {name}"], check=True, env=env)
print(f"{u.scheme}://{u.netloc}/{name}")
PY
}

run_config sqlite-1 "sqlite:$WORK/bench.sqlite" 1
run_config postgres-1 "$(pg_database one)" 1
run_config postgres-2 "$(pg_database two)" 2

ids() { python3 -c "print(f'{$1 * 1000:,.0f}')"; }
ratio() { python3 -c "a, b = $1, $2; print(f'{a / b:.2f}' if b else 'n/a')"; }
cat <<EOF

## PostgreSQL vs SQLite ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, wrk ${CONNECTIONS} connections, ${DURATION}s per run, ${DEVICES} devices)

| identifiers/s | SQLite, 1 instance | PostgreSQL, 1 instance | PostgreSQL, 2 instances | PG 1 / SQLite | PG 2 / PG 1 |
|---|---|---|---|---|---|
| local→cloud, 1000 linked per request | $(ids "${RESULT[sqlite-1-l2c]}") | $(ids "${RESULT[postgres-1-l2c]}") | $(ids "${RESULT[postgres-2-l2c]}") | $(ratio "${RESULT[postgres-1-l2c]}" "${RESULT[sqlite-1-l2c]}") | $(ratio "${RESULT[postgres-2-l2c]}" "${RESULT[postgres-1-l2c]}") |
| cloud→local, 1000 per request | $(ids "${RESULT[sqlite-1-c2l]}") | $(ids "${RESULT[postgres-1-c2l]}") | $(ids "${RESULT[postgres-2-c2l]}") | $(ratio "${RESULT[postgres-1-c2l]}" "${RESULT[sqlite-1-c2l]}") | $(ratio "${RESULT[postgres-2-c2l]}" "${RESULT[postgres-1-c2l]}") |
| local→cloud, 1000 new per request (records created) | $(ids "${RESULT[sqlite-1-new]}") | $(ids "${RESULT[postgres-1-new]}") | $(ids "${RESULT[postgres-2-new]}") | $(ratio "${RESULT[postgres-1-new]}" "${RESULT[sqlite-1-new]}") | $(ratio "${RESULT[postgres-2-new]}" "${RESULT[postgres-1-new]}") |

| PostgreSQL server CPU per request (ms; all its processes, /proc) | SQLite: — | PostgreSQL, 1 instance | PostgreSQL, 2 instances |
|---|---|---|---|
| local→cloud, 1000 linked (answered from the mapping index) | | ${RESULT[postgres-1-l2c-db]} | ${RESULT[postgres-2-l2c-db]} |
| cloud→local, 1000 | | ${RESULT[postgres-1-c2l-db]} | ${RESULT[postgres-2-c2l-db]} |

| manifest upload, PUT /v1/library of ${MANIFEST_ITEMS} new assets (median of 3) | SQLite ${RESULT[sqlite-1-manifest]} s | PostgreSQL ${RESULT[postgres-1-manifest]} s | ratio PG / SQLite $(ratio "${RESULT[postgres-1-manifest]}" "${RESULT[sqlite-1-manifest]}") |
|---|---|---|---|
EOF
