#!/bin/sh
# Replica entrypoint. On the first start (empty data volume) it clones the primary with
# `pg_basebackup -R`, which also writes standby.signal and primary_conninfo (with the replication
# password) into postgresql.auto.conf; it retries until the primary accepts the replication login.
# Then it hands over to the postgres image's own entrypoint, which finds an existing cluster, skips
# initdb, drops to the postgres user and runs the server with the compose `command` settings.
#
# If the primary's volume is ever recreated, remove the replica's volume too: a standby cloned
# from another cluster cannot follow the new one.
set -eu

: "${PGDATA:?PGDATA must be set}"
: "${PRIMARY_HOST:?PRIMARY_HOST must be set}"
: "${PRIMARY_PORT:=5432}"
: "${REPLICATION_USER:?REPLICATION_USER must be set}"
: "${REPLICATION_PASSWORD:?REPLICATION_PASSWORD must be set}"

if [ ! -s "$PGDATA/PG_VERSION" ]; then
  mkdir -p "$PGDATA"
  chown postgres:postgres "$PGDATA"
  chmod 700 "$PGDATA"
  until PGPASSWORD="$REPLICATION_PASSWORD" gosu postgres pg_basebackup \
    --host="$PRIMARY_HOST" --port="$PRIMARY_PORT" --username="$REPLICATION_USER" \
    --pgdata="$PGDATA" --write-recovery-conf --wal-method=stream --checkpoint=fast; do
    echo "replica: pg_basebackup from $PRIMARY_HOST:$PRIMARY_PORT failed, retrying in 2 s" >&2
    find "$PGDATA" -mindepth 1 -delete
    sleep 2
  done
  echo "replica: cloned $PRIMARY_HOST:$PRIMARY_PORT into $PGDATA" >&2
fi

exec docker-entrypoint.sh "$@"
