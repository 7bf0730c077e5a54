#!/usr/bin/env bash
# A throw-away PostgreSQL cluster for the tests and the benchmarks, on loopback.
#
#   cluster.sh run -- COMMAND…     start a cluster in a temporary folder, run COMMAND with
#                                  VEGAS_TEST_DATABASE (its URL) and VEGAS_TEST_PGDATA set, then stop
#                                  the cluster and delete the folder, whatever COMMAND did
#   cluster.sh crash-restart DIR   stop the cluster at once (immediate shutdown: no checkpoint, as a
#                                  crash would) and start it again
#
# PostgreSQL refuses to run as root: as root, the cluster belongs to the `postgres` user.
set -euo pipefail
BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -x "$BIN/initdb" ] || { echo "cluster.sh: PostgreSQL is not installed (apt-get install postgresql)" >&2; exit 1; }

as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

start() {
  as_owner "$BIN/pg_ctl" -D "$1" -l "$1/server.log" -w -t 60 start >/dev/null
}

case "${1:-}" in
  run)
    shift
    [ "${1:-}" = "--" ] && shift
    dir=$(mktemp -d /tmp/vegas-pg.XXXXXX)
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    [ "$(id -u)" = 0 ] && chown postgres "$dir"
    as_owner "$BIN/initdb" -D "$dir" -U vegas -A trust --no-sync -E UTF8 >/dev/null
    cat >> "$dir/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
max_connections = 400
shared_buffers = 256MB
fsync = on
synchronous_commit = on
CONF
    start "$dir"
    trap 'as_owner "$BIN/pg_ctl" -D "$dir" -m immediate -w stop >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
    as_owner "$BIN/createdb" -h 127.0.0.1 -p "$port" -U vegas vegas
    VEGAS_TEST_DATABASE="postgres://vegas@127.0.0.1:$port/vegas" VEGAS_TEST_PGDATA="$dir" "$@"
    ;;
  crash-restart)
    as_owner "$BIN/pg_ctl" -D "$2" -m immediate -w stop >/dev/null
    start "$2"
    ;;
  *)
    echo "usage: cluster.sh run -- COMMAND… | cluster.sh crash-restart DIR" >&2
    exit 2
    ;;
esac
