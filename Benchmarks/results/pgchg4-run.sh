#!/usr/bin/env bash
# run.sh BIN ASSETS [extra driver args]: a fresh cluster with pg_stat_statements, the driver, destroy.
set -euo pipefail
BIN=$1; ASSETS=$2; shift 2
D=$(mktemp -d /tmp/pgchg4/pg-XXXX)
URL=$(/work/wt-wanted/.ci/pg-cluster init "$D" | tail -1)
echo "shared_preload_libraries = 'pg_stat_statements'" >> $D/data/postgresql.conf
echo "pg_stat_statements.track = all" >> $D/data/postgresql.conf
CONCORD_PG_DIR=$D /work/wt-wanted/.ci/pg-cluster stop; CONCORD_PG_DIR=$D /work/wt-wanted/.ci/pg-cluster start
runuser -u postgres -- /usr/lib/postgresql/15/bin/psql -h $D/sock -p $(cat $D/port) -U postgres -d concord -qc "CREATE EXTENSION pg_stat_statements"
echo "cluster $D"
python3 -u $(dirname "$0")/pgchg4-drive.py --bin "$BIN" --assets "$ASSETS" --pgdir "$D" --url "$URL" "$@" || true
CONCORD_PG_DIR=$D /work/wt-wanted/.ci/pg-cluster destroy
