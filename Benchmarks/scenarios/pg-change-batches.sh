#!/usr/bin/env bash
# What a change batch of 10 000 costs PostgreSQL at ASSETS objects (pg-change-batches.py), in a
# throwaway cluster with pg_stat_statements.
# Usage: Benchmarks/scenarios/pg-change-batches.sh BIN ASSETS [--rounds 2] [--map] [--extra K] [--hold FILE]
set -euo pipefail
BIN=$1; ASSETS=$2; shift 2
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
D=$(mktemp -d /tmp/pg-change-batches-XXXX)
URL=$("$ROOT/.ci/pg-cluster" init "$D" | tail -1)
echo "shared_preload_libraries = 'pg_stat_statements'" >> $D/data/postgresql.conf
echo "pg_stat_statements.track = all" >> $D/data/postgresql.conf
CONCORD_PG_DIR=$D "$ROOT/.ci/pg-cluster" stop; CONCORD_PG_DIR=$D "$ROOT/.ci/pg-cluster" start
runuser -u postgres -- /usr/lib/postgresql/15/bin/psql -h $D/sock -p $(cat $D/port) -U postgres -d concord -qc "CREATE EXTENSION pg_stat_statements"
echo "cluster $D"
python3 -u "$ROOT/Benchmarks/scenarios/pg-change-batches.py" --bin "$BIN" --assets "$ASSETS" --pgdir "$D" --url "$URL" "$@" || true
CONCORD_PG_DIR=$D "$ROOT/.ci/pg-cluster" destroy
