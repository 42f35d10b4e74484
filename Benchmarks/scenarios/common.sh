# Shared by the scenario scripts (`source "$(dirname "${BASH_SOURCE[0]}")/common.sh"`, after
# `set -euo pipefail`): where things are, the release build, a work directory.
# Each script defines its own `log` (its prefix) before calling these.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BIN="$ROOT/.build/release/concord"

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
