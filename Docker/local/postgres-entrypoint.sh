#!/bin/sh
# Initialises the cluster on first start (user, password, database from the environment), then
# runs PostgreSQL as the postgres user, listening on every address.
set -eu
mkdir -p /var/run/postgresql && chown postgres:postgres /var/run/postgresql "$PGDATA"
as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    printf '%s\n' "$POSTGRES_PASSWORD" > /tmp/pwfile && chown postgres /tmp/pwfile
    as_postgres initdb -D "$PGDATA" --username="$POSTGRES_USER" --pwfile=/tmp/pwfile --auth-local=trust --auth-host=scram-sha-256 >/dev/null
    rm -f /tmp/pwfile
    echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
    as_postgres pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
    if [ "${POSTGRES_DB:-$POSTGRES_USER}" != postgres ]; then
        as_postgres createdb -U "$POSTGRES_USER" "${POSTGRES_DB:-$POSTGRES_USER}"
    fi
    as_postgres pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
fi
exec setpriv --reuid=postgres --regid=postgres --init-groups postgres -D "$PGDATA" -c listen_addresses='*'
