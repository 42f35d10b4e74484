# Shared by the scenario scripts (`source "$(dirname "${BASH_SOURCE[0]}")/common.sh"`, after
# `set -euo pipefail`): where things are, the release build, a work directory.
# Each script defines its own `log` (its prefix) before calling these.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BIN="${CONCORD_BIN:-$ROOT/.build/release/concord}"   # CONCORD_BIN: another build, e.g. a before

# new_work_dir NAME: a fresh /tmp/NAME.XXXXXX that a throwaway cluster's postgres user can reach
# (its data directory goes inside).
new_work_dir() {
    local dir
    dir="$(mktemp -d "/tmp/$1.XXXXXX")"
    chmod 755 "$dir"
    printf '%s\n' "$dir"
}

# build_concord: the release concord, unless BENCH_SKIP_BUILD=1; stops the script when it is missing.
build_concord() {
    if [[ "${BENCH_SKIP_BUILD:-0}" != 1 ]]; then
        log "building release concord"
        (cd "$ROOT" && swift build -c release --product concord >&2)
    fi
    [[ -x "$BIN" ]] || { log "missing $BIN"; exit 1; }
}

# A throwaway PostgreSQL cluster in $WORK/pg (.ci/pg-cluster): `start_pg_cluster` sets PG_DIR and
# PG_URL; `remove_pg_cluster`, in the script's EXIT trap, destroys it when there is one.
PG_DIR=""
start_pg_cluster() {
    PG_DIR="$WORK/pg"
    PG_URL="$("$ROOT/.ci/pg-cluster" init "$PG_DIR" | tail -1)"
}
remove_pg_cluster() {
    if [[ -n "$PG_DIR" ]]; then CONCORD_PG_DIR="$PG_DIR" "$ROOT/.ci/pg-cluster" destroy >/dev/null 2>&1 || true; fi
}

# free_port: a TCP port free on 127.0.0.1 now.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# wait_healthy PORT: true once concord's /health answers on PORT, false after 10 s.
wait_healthy() {
    for _ in $(seq 1 200); do
        if curl -fs "http://127.0.0.1:$1/health" >/dev/null 2>&1; then return 0; fi
        sleep 0.05
    done
    return 1
}
