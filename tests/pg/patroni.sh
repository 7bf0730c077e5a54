#!/usr/bin/env bash
# A throw-away highly available PostgreSQL on loopback, for the failover test: one etcd and three
# PostgreSQL nodes under Patroni, in strict synchronous mode (a commit returns only once a standby has
# flushed it; with no standby left, commits wait). README « Running it for real » describes the same
# topology on three machines.
#
#   patroni.sh start DIR         make and start the cluster in DIR (empty or missing); prints the
#                                multi-host URL the server instances take
#   patroni.sh leader DIR        the node that is primary now (node1, node2 or node3)
#   patroni.sh sync DIR          the node that is the synchronous standby now
#   patroni.sh kill DIR NODE     SIGKILL NODE's Patroni, its PostgreSQL and every backend: the server died
#   patroni.sh stop DIR NODE     stop NODE's Patroni and PostgreSQL (SIGKILL too: it must not hand over)
#   patroni.sh resume DIR NODE   start NODE again (it rejoins as a standby, rewound if need be)
#   patroni.sh down DIR          stop everything and delete DIR
#
# PostgreSQL refuses to run as root: as root, the nodes run as the `postgres` user.
set -euo pipefail
BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
command -v patroni >/dev/null && command -v etcd >/dev/null || { echo "patroni.sh: needs patroni and etcd (apt-get install patroni etcd-server)" >&2; exit 1; }

as_owner() {
  if [ "$(id -u)" = 0 ]; then setpriv --reuid=postgres --regid=postgres --init-groups -- "$@"; else "$@"; fi
}

# In the background: the process itself (exec), so that `$!` is its pid.
spawn_as_owner() {
  if [ "$(id -u)" = 0 ]; then exec setpriv --reuid=postgres --regid=postgres --init-groups -- "$@"; else exec "$@"; fi
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# GET on a node's REST API.
api() { curl -sf --max-time 2 "http://127.0.0.1:$(cat "$1/$2.api")/$3"; }

role_of() {
  # The node whose REST API says it is the leader (`GET /primary` answers 200 only there), or the sync standby.
  local dir=$1 wanted=$2
  for node in node1 node2 node3; do
    [ -f "$dir/$node.api" ] || continue
    if [ "$wanted" = leader ] && api "$dir" "$node" primary >/dev/null 2>&1; then echo "$node"; return 0; fi
    if [ "$wanted" = sync ] && api "$dir" "$node" sync >/dev/null 2>&1; then echo "$node"; return 0; fi
  done
  return 1
}

wait_for() {
  local dir=$1 wanted=$2 seconds=$3
  for _ in $(seq 1 $((seconds * 5))); do
    role_of "$dir" "$wanted" >/dev/null && return 0
    sleep 0.2
  done
  echo "patroni.sh: no $wanted after ${seconds}s; see $dir/*.log" >&2
  return 1
}

start_node() {
  local dir=$1 node=$2
  spawn_as_owner patroni "$dir/$node.yml" >>"$dir/$node.log" 2>&1 &
  echo $! >"$dir/$node.pid"
}

kill_node() {
  local dir=$1 node=$2
  kill -KILL "$(cat "$dir/$node.pid")" 2>/dev/null || true
  local postmaster group
  if [ -f "$dir/$node/postmaster.pid" ]; then
    postmaster=$(head -n 1 "$dir/$node/postmaster.pid")
    # Patroni starts PostgreSQL in a session of its own: that process group holds every backend.
    group=$(ps -o pgid= -p "$postmaster" | tr -d ' ' || true)
    [ -n "$group" ] && kill -KILL -- "-$group" 2>/dev/null || true
  fi
  # Until the port is free, the node is not all gone.
  for _ in $(seq 1 50); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$(cat "$dir/$node.port")") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
}

case "${1:-}" in
  start)
    dir=$2
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres "$dir"
    etcd_client=$(free_port); etcd_peer=$(free_port)
    spawn_as_owner etcd --name etcd --data-dir "$dir/etcd" \
      --listen-client-urls "http://127.0.0.1:$etcd_client" --advertise-client-urls "http://127.0.0.1:$etcd_client" \
      --listen-peer-urls "http://127.0.0.1:$etcd_peer" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
      --initial-cluster "etcd=http://127.0.0.1:$etcd_peer" >"$dir/etcd.log" 2>&1 &
    echo $! >"$dir/etcd.pid"
    hosts=""
    for node in node1 node2 node3; do
      pg=$(free_port); rest=$(free_port)
      echo "$pg" >"$dir/$node.port"; echo "$rest" >"$dir/$node.api"
      hosts="$hosts${hosts:+,}127.0.0.1:$pg"
      # ttl 10 s: a dead primary's leader key lapses within 10 s; loop_wait + 2 × retry_timeout ≤ ttl.
      cat >"$dir/$node.yml" <<YAML
scope: vegas
name: $node
log: {level: WARNING}
restapi: {listen: "127.0.0.1:$rest", connect_address: "127.0.0.1:$rest"}
etcd3: {hosts: "127.0.0.1:$etcd_client"}
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 1
    retry_timeout: 3
    synchronous_mode: true
    synchronous_mode_strict: true
    synchronous_node_count: 1
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        synchronous_commit: "on"
        max_connections: 200
        shared_buffers: 128MB
        wal_log_hints: "on"
        max_wal_senders: 10
        max_replication_slots: 10
        wal_keep_size: 256MB
  initdb: [{encoding: UTF8}, {auth: trust}]
  pg_hba:
    - local all all trust
    - host replication replicator 127.0.0.1/32 trust
    - host all all 127.0.0.1/32 trust
postgresql:
  listen: "127.0.0.1:$pg"
  connect_address: "127.0.0.1:$pg"
  data_dir: "$dir/$node"
  bin_dir: "$BIN"
  pgpass: "$dir/$node.pgpass"
  authentication:
    superuser: {username: vegas, password: vegas}
    replication: {username: replicator, password: replicator}
    rewind: {username: vegas, password: vegas}
  parameters: {unix_socket_directories: "$dir", fsync: "on"}
tags: {nofailover: false, noloadbalance: false, clonefrom: false, nosync: false}
YAML
    done
    [ "$(id -u)" = 0 ] && chown postgres "$dir"/*.yml
    start_node "$dir" node1
    wait_for "$dir" leader 60
    start_node "$dir" node2
    start_node "$dir" node3
    wait_for "$dir" sync 90
    "$BIN/createdb" -h 127.0.0.1 -p "$(cat "$dir/node1.port")" -U vegas vegas
    echo "postgres://vegas@$hosts/vegas?target_session_attrs=read-write&connect_timeout=2"
    ;;
  leader) role_of "$2" leader ;;
  sync) role_of "$2" sync ;;
  kill | stop) kill_node "$2" "$3" ;;
  resume) start_node "$2" "$3" ;;
  down)
    dir=$2
    for node in node1 node2 node3; do [ -f "$dir/$node.pid" ] && kill_node "$dir" "$node"; done
    [ -f "$dir/etcd.pid" ] && kill -KILL "$(cat "$dir/etcd.pid")" 2>/dev/null || true
    rm -rf "$dir"
    ;;
  *)
    echo "usage: patroni.sh start|leader|sync|down DIR | patroni.sh kill|stop|resume DIR NODE" >&2
    exit 2
    ;;
esac
