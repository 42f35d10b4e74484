#!/usr/bin/env bash
# The scale scenario: a SCALE_ASSETS-asset library on two devices of one account, end to end
# against one Concord (SQLite, or PostgreSQL in a throwaway cluster), measured from outside:
#   1. device 1 uploads it in parts at defaults (wall, server CPU, peak RSS); device 2 sends it with
#      PUT /v1/library, as much as the default 64 MiB body limit takes, the rest in changes batches;
#   2. POST /v1/library/changes batches of 10 000 on a fresh device (start) and on the full device (end);
#   3. first-time mapping of all ids, 1000 per request: local → cloud on device 1 (records created),
#      cloud → local on device 2 (linked by content), local → cloud on device 2 (linked already);
#   4. a restart on the same database: the first mapping requests and the mapping index's metrics,
#      after a clean stop (snapshot), a crash without one (tables) and a crash once settled (background snapshot);
#   5. warm 1000-id batches both ways;
#   6. two accounts of SCALE_ALT_ASSETS × 2 used alternately (index loads/evictions per request);
#   7. the database's size;
#   8. (PostgreSQL) two instances: a second Concord on the same database, warmed; writes through the
#      first, each followed by the second's next 1000-id request (a catch-up from the mapping log).
# Every answer is checked (scale-client.py); a wrong one stops the run with a non-zero status.
# Prints a Markdown report and writes it to Benchmarks/results/scale-<engine>[-<tag>].md (and the raw
# figures to the .json next to it).
#
# Usage: Benchmarks/scenarios/scale.sh                          (SQLite; builds release concord
#        SCALE_ENGINE=postgres Benchmarks/scenarios/scale.sh     unless BENCH_SKIP_BUILD=1)
#        Benchmarks/run scale                                     (the same, SQLite unless SCALE_ENGINE)
# Knobs: SCALE_ASSETS=1000000   assets per device of account A (e.g. 50000 for a quick run)
#        SCALE_ALT_ASSETS=min(300000, SCALE_ASSETS × 3/10)   assets per device of accounts B and C
#        SCALE_PUT_ASSETS=auto  device 2's PUT /v1/library: as many as fit 64 MiB (multiples of 10 000)
#        SCALE_WARM_BATCHES=200 warm 1000-id requests each way
#        SCALE_ALT_REQUESTS=20  alternating requests each way
#        SCALE_MAP_BATCH=1000   ids per first-time mapping request (up to server.limits.maxBatch, 10 000)
#        SCALE_ENGINE=sqlite|postgres, SCALE_TAG= (a suffix for the result files)
#        SCALE_PG_SETTINGS=     PostgreSQL settings for the throwaway cluster, e.g. "shared_buffers=256MB" (defaults otherwise)
#        CONCORD_BIN=path       another concord to run (with BENCH_SKIP_BUILD=1), e.g. a before build
#        SCALE_IDS=sequential   local identifiers whose leading digits count up (storage appends);
#                               random: scrambled, as PhotoKit's UUIDs are (B-tree inserts land anywhere)
#        SCALE_KEEP_DATABASE=path  keep the SQLite database there
# CONCORD_* variables (docs/configuration.md) pass through to the server; the run is at defaults
# when none is set. No peer: absolute figures of one shared machine; compare runs on one machine.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
ASSETS="${SCALE_ASSETS:-1000000}"
ALT_DEFAULT=$(( ASSETS * 3 / 10 )); (( ALT_DEFAULT > 300000 )) && ALT_DEFAULT=300000
ALT="${SCALE_ALT_ASSETS:-$ALT_DEFAULT}"
ENGINE="${SCALE_ENGINE:-sqlite}"
RESULTS="$ROOT/Benchmarks/results"
NAME="scale-$ENGINE${SCALE_TAG:+-$SCALE_TAG}"
WORK="$(new_work_dir concord-scale)"
PG_DIR=""
CLIENT=""

log() { printf '[scale] %s\n' "$*" >&2; }
cleanup() {
    # scale-client.py stops its server itself (also when it fails); if it was killed, its server's pid
    # is in run/server.pid: that process only, and only while it is still our concord.
    local pid
    # The client in the background and `wait`: a signal to this script is handled at once, not
    # after the client's end; the client's SIGTERM handler stops its server.
    if [[ -n "$CLIENT" ]] && kill -0 "$CLIENT" 2>/dev/null; then
        kill -TERM "$CLIENT" 2>/dev/null || true
        for _ in $(seq 1 50); do kill -0 "$CLIENT" 2>/dev/null || break; sleep 0.1; done
    fi
    # (second.pid: the second instance of phase 8, on PostgreSQL)
    for pidfile in "$WORK/run/server.pid" "$WORK/run/second.pid"; do
        pid="$(cat "$pidfile" 2>/dev/null || true)"
        if [[ -n "$pid" ]] && [[ "$(readlink "/proc/$pid/exe" 2>/dev/null)" == "$BIN" ]]; then kill -KILL "$pid" 2>/dev/null || true; fi
    done
    # The cluster is ours to remove.
    if [[ -n "$PG_DIR" ]]; then CONCORD_PG_DIR="$PG_DIR" "$ROOT/.ci/pg-cluster" destroy >/dev/null 2>&1 || true; fi
    # SCALE_KEEP_DATABASE=path keeps the SQLite database for a look at its layout (sqlite3's dbstat).
    if [[ -n "${SCALE_KEEP_DATABASE:-}" && -f "$WORK/scale.sqlite" ]]; then mv "$WORK/scale.sqlite" "$SCALE_KEEP_DATABASE" || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

case "$ENGINE" in sqlite|postgres) ;; *) log "SCALE_ENGINE must be sqlite or postgres"; exit 2 ;; esac

build_concord

# Background saves of settled accounts' index snapshots every 5 s (the default is 60): step 4c
# waits for one before its crash.
export CONCORD_MAPPING_INDEX_SNAPSHOT_SECONDS="${CONCORD_MAPPING_INDEX_SNAPSHOT_SECONDS:-5}"
if [[ "$ENGINE" == postgres ]]; then
    PG_DIR="$WORK/pg"
    DATABASE="$("$ROOT/.ci/pg-cluster" init "$PG_DIR" | tail -1)"
    # SCALE_PG_SETTINGS="shared_buffers=256MB …": settings for the cluster (its defaults otherwise).
    if [[ -n "${SCALE_PG_SETTINGS:-}" ]]; then
        for setting in $SCALE_PG_SETTINGS; do echo "$setting" >> "$PG_DIR/data/postgresql.conf"; done
        CONCORD_PG_DIR="$PG_DIR" "$ROOT/.ci/pg-cluster" stop && CONCORD_PG_DIR="$PG_DIR" "$ROOT/.ci/pg-cluster" start
        log "PostgreSQL settings: $SCALE_PG_SETTINGS"
    fi
    # The mapping index's snapshots: `auto` keeps none with PostgreSQL; a directory of the run's.
    export CONCORD_MAPPING_INDEX_SNAPSHOTS="${CONCORD_MAPPING_INDEX_SNAPSHOTS:-$WORK/index}"
else
    DATABASE="sqlite:$WORK/scale.sqlite"
fi

# The commit measured: HEAD, and the last commit that changed the server's code (Benchmarks/ commits
# on top do not change what is measured).
commit="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
server_commit="$(git -C "$ROOT" log -1 --format=%h -- Sources Package.swift 2>/dev/null || echo unknown)"
[[ "$server_commit" == "$commit" ]] || commit="$commit (server code: Sources/ and Package.swift as of $server_commit)"
if git -C "$ROOT" status --porcelain -- Sources Package.swift 2>/dev/null | grep -q .; then commit="$commit (uncommitted changes in Sources)"; fi
# (each test ends in `|| true`: under `set -e` a false one would end the script in the assignment)
command="${SCALE_COMMAND:-$( [[ "$ENGINE" == postgres ]] && printf 'SCALE_ENGINE=postgres ' || true )$( [[ "$ASSETS" != 1000000 ]] && printf 'SCALE_ASSETS=%s ' "$ASSETS" || true )$( [[ "${SCALE_IDS:-sequential}" != sequential ]] && printf 'SCALE_IDS=%s ' "$SCALE_IDS" || true )$( [[ "${SCALE_MAP_BATCH:-1000}" != 1000 ]] && printf 'SCALE_MAP_BATCH=%s ' "$SCALE_MAP_BATCH" || true )$( [[ -n "${SCALE_PG_SETTINGS:-}" && "$ENGINE" == postgres ]] && printf 'SCALE_PG_SETTINGS="%s" ' "$SCALE_PG_SETTINGS" || true )Benchmarks/scenarios/scale.sh}"

log "$ENGINE, $ASSETS assets × 2 devices, accounts B and C of $ALT × 2; work directory $WORK"
mkdir -p "$RESULTS"
python3 -u "$ROOT/Benchmarks/scenarios/scale-client.py" --bin "$BIN" --database "$DATABASE" --work "$WORK/run" \
    --engine "$ENGINE" ${PG_DIR:+--pg-dir "$PG_DIR"} --assets "$ASSETS" --alt-assets "$ALT" \
    --put-assets "${SCALE_PUT_ASSETS:-auto}" --warm-batches "${SCALE_WARM_BATCHES:-200}" \
    --alt-requests "${SCALE_ALT_REQUESTS:-20}" --map-batch "${SCALE_MAP_BATCH:-1000}" --ids "${SCALE_IDS:-sequential}" --json "$RESULTS/$NAME.json" \
    --command "$command" --commit "$commit" >"$WORK/report.md" &
CLIENT=$!
wait "$CLIENT" || { log "the scenario failed; the server's log:"; tail -n 20 "$WORK"/run/server-*.log >&2 2>/dev/null || true; exit 1; }
CLIENT=
cp "$WORK/report.md" "$RESULTS/$NAME.md"
cat "$WORK/report.md"
log "written to Benchmarks/results/$NAME.md"
