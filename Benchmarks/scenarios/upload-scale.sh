#!/usr/bin/env bash
# A whole library uploaded at once: a first upload of SCALE_ASSETS assets as an upload in
# parts on a fresh device, then the same library's PUT /v1/library on a second device
# (as much of it as the body limit lets through: SCALE_PUT_ASSETS), measured from outside:
# wall time, the server's CPU, its peak RSS, and the database's size afterwards.
#
# Usage: Benchmarks/scenarios/upload-scale.sh       (builds release concord unless BENCH_SKIP_BUILD=1)
# Knobs: SCALE_ASSETS=1000000, SCALE_PART=10000 (objects per part), SCALE_PUT_ASSETS=300000,
#        SCALE_ENGINE=sqlite|postgres (postgres: a throwaway cluster via .ci/pg-cluster).
# No peer: these are absolute figures of one machine, shared and noisy; compare runs on one machine.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
ASSETS="${SCALE_ASSETS:-1000000}"
PART="${SCALE_PART:-10000}"
PUT_ASSETS="${SCALE_PUT_ASSETS:-300000}"
ENGINE="${SCALE_ENGINE:-sqlite}"
WORK="$(new_work_dir concord-scale)"
ADMIN="scale-admin-token-0123456789abcdef0123456789"
PID=""

log() { printf '[scale] %s\n' "$*" >&2; }
cleanup() {
    if [[ -n "$PID" ]]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
    remove_pg_cluster
    rm -rf "$WORK"
}
trap cleanup EXIT

build_concord

if [[ "$ENGINE" == postgres ]]; then
    start_pg_cluster
    DATABASE="$PG_URL"
else
    DATABASE="sqlite:$WORK/scale.sqlite"
fi
PORT=$(free_port)
"$BIN" serve --host 127.0.0.1 --port "$PORT" --database "$DATABASE" --admin-token "$ADMIN" --log-level error >"$WORK/server.log" 2>&1 &
PID=$!
wait_healthy "$PORT" || { log "concord did not start"; cat "$WORK/server.log" >&2; exit 1; }

db_size() {
    if [[ "$ENGINE" == postgres ]]; then
        psql "$DATABASE" -Atc "SELECT pg_database_size(current_database())"
    else
        du -cb "$WORK"/scale.sqlite* | tail -1 | cut -f1
    fi
}

log "upload in parts: $ASSETS assets, $PART per part ($ENGINE)"
PARTS=$(python3 "$ROOT/Benchmarks/scenarios/upload-client.py" "$PORT" "$ADMIN" "$ASSETS" "$PART" "$PID" parts)
AFTER_PARTS=$(db_size)
log "PUT /v1/library: $PUT_ASSETS assets"
PUT=$(python3 "$ROOT/Benchmarks/scenarios/upload-client.py" "$PORT" "$ADMIN" "$PUT_ASSETS" "$PART" "$PID" put)
AFTER_PUT=$(db_size)

python3 - "$PARTS" "$PUT" "$AFTER_PARTS" "$AFTER_PUT" "$ENGINE" <<'PY'
import json, sys
parts, put = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print(f"### Whole-library uploads ({sys.argv[5]})\n")
print("| upload | objects | answer | sending: wall / server CPU | commit: wall / server CPU | server CPU per 1000 | RSS before → peak sending → peak → after |")
print("|---|---:|---|---|---|---:|---|")
for name, r in (("in parts", parts), ("PUT /v1/library", put)):
    cpu = r["parts_cpu_s"] + r["commit_cpu_s"]
    print(f"| {name} | {r['n']} | {r['status']} inserted {r['answer'].get('inserted') if isinstance(r['answer'], dict) else r['answer']} "
          f"| {r['parts_wall_s']} s / {r['parts_cpu_s']} s | {r['commit_wall_s']} s / {r['commit_cpu_s']} s | {1e6 * cpu / r['n']:.1f} ms "
          f"| {r['rss_before_mib']} → {r['peak_rss_sending_mib']} → {r['peak_rss_mib']} → {r['rss_after_mib']} MiB |")
print(f"\nDatabase: {int(sys.argv[3]) / 1e6:.0f} MB after the upload in parts, {int(sys.argv[4]) / 1e6:.0f} MB after the PUT as well.")
PY
