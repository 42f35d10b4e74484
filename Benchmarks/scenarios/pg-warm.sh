#!/usr/bin/env bash
# What a warm 1000-id mapping batch costs PostgreSQL (pg-warm.py), in a throwaway cluster.
# Usage: Benchmarks/scenarios/pg-warm.sh   (knobs: PG_WARM_ASSETS=20000, PG_WARM_BATCHES=500;
#        BENCH_SKIP_BUILD=1 runs the release concord already built)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
log() { printf '[pg-warm] %s\n' "$*" >&2; }
build_concord
WORK="$(new_work_dir concord-pg-warm)"
trap 'remove_pg_cluster; rm -rf "$WORK"' EXIT
start_pg_cluster
python3 -u "$ROOT/Benchmarks/scenarios/pg-warm.py" --bin "$BIN" --pg-dir "$PG_DIR" --work "$WORK" \
    --assets "${PG_WARM_ASSETS:-20000}" --batches "${PG_WARM_BATCHES:-500}"
