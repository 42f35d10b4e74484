#!/usr/bin/env bash
# What a POST /v1/library/changes batch of 10 000 costs as one device's library grows to
# CHANGES_ASSETS (SQLite), with sequential or PhotoKit-like random identifiers, and (with
# CHANGES_WITHOUT_CONTENT_INDEX=1) the same batches once objects_by_content is dropped: the
# experiment behind docs/scaling.md's "Why change batches grow". Prints Markdown tables.
#   CHANGES_ASSETS=1000000  CHANGES_IDS=sequential|random  CHANGES_WITHOUT_CONTENT_INDEX=0|1
# Builds release concord unless BENCH_SKIP_BUILD=1.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
[[ "${BENCH_SKIP_BUILD:-0}" == 1 ]] || (cd "$ROOT" && swift build -c release >&2)
WORK="$(mktemp -d /tmp/concord-changes.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
python3 -u "$ROOT/Benchmarks/scenarios/change-batches.py" --bin "$ROOT/.build/release/concord" --work "$WORK" \
    --assets "${CHANGES_ASSETS:-1000000}" --ids "${CHANGES_IDS:-sequential}" \
    $( [[ "${CHANGES_WITHOUT_CONTENT_INDEX:-0}" == 1 ]] && echo --without-content-index )
