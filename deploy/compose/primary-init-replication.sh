#!/bin/sh
# Primary, first start only (mounted into /docker-entrypoint-initdb.d, run by the postgres image's
# entrypoint as the postgres user while its temporary init server is up): creates the replication
# role the replica's pg_basebackup and walreceiver log in as, and lets it connect for replication.
#
# The image sources *.sh files that are not executable, so this script must not `exit` and must not
# change shell options (set -u would leak into the image's entrypoint).

: "${REPLICATION_USER:?REPLICATION_USER must be set}"
: "${REPLICATION_PASSWORD:?REPLICATION_PASSWORD must be set}"

# psql variables (:"name" identifier, :'value' literal) quote both values safely.
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
  --set=repl_user="$REPLICATION_USER" --set=repl_password="$REPLICATION_PASSWORD" <<'SQL'
CREATE ROLE :"repl_user" WITH REPLICATION LOGIN PASSWORD :'repl_password';
SQL

# "all" in the database column does not match replication connections: they need their own line.
echo "host replication $REPLICATION_USER all scram-sha-256" >>"$PGDATA/pg_hba.conf"
