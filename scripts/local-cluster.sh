#!/usr/bin/env bash
# Starts and stops a local etcd for Strata's cluster services: one member on
# 127.0.0.1, its data in a temporary directory, on free ports.
#   scripts/local-cluster.sh start [--dir DIR]   # prints how to reach it
#   scripts/local-cluster.sh stop --dir DIR      # stops it by its pid, removes its data
# start prints shell assignments on standard output:
#   STRATA_CLUSTER_DIR=/tmp/strata-cluster.XXXX
#   ETCD_ENDPOINTS=http://127.0.0.1:PORT
#   ETCD_PID=PID
# so `eval "$(scripts/local-cluster.sh start)"` sets them. The tests that need
# etcd start and stop it through this script. Needs etcd-server and
# etcd-client (scripts/install-deps.sh).
set -euo pipefail

usage() { sed -n '2,12p' "$0"; }

cmd="${1:-}"
[ $# -gt 0 ] && shift
case "$cmd" in -h|--help) usage; exit 0 ;; esac
dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "local-cluster: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done

case "$cmd" in
  start)
    command -v etcd >/dev/null || {
      echo "local-cluster: etcd not found; run scripts/install-deps.sh" >&2; exit 1; }
    if [ -z "$dir" ]; then
      dir=$(mktemp -d "${TMPDIR:-/tmp}/strata-cluster.XXXXXX")
    fi
    mkdir -p "$dir"
    for attempt in 1 2 3 4 5; do
      # Two ports next to each other in 20000..59998, away from etcd's 2379
      # (the Debian package's own service may hold it).
      client=$(( 20000 + (RANDOM * 32768 + RANDOM) % 20000 * 2 ))
      peer=$(( client + 1 ))
      rm -rf "$dir/etcd-data"
      etcd --name strata --data-dir "$dir/etcd-data" \
        --listen-client-urls "http://127.0.0.1:$client" \
        --advertise-client-urls "http://127.0.0.1:$client" \
        --listen-peer-urls "http://127.0.0.1:$peer" \
        --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
        --initial-cluster "strata=http://127.0.0.1:$peer" \
        --logger zap --log-outputs "$dir/etcd.log" >/dev/null 2>&1 &
      pid=$!
      echo "$pid" > "$dir/etcd.pid"
      for _ in $(seq 1 100); do
        if ! kill -0 "$pid" 2>/dev/null; then break; fi
        if ETCDCTL_API=3 etcdctl --endpoints "http://127.0.0.1:$client" \
             --command-timeout=1s endpoint health >/dev/null 2>&1; then
          echo "STRATA_CLUSTER_DIR=$dir"
          echo "ETCD_ENDPOINTS=http://127.0.0.1:$client"
          echo "ETCD_PID=$pid"
          exit 0
        fi
        sleep 0.1
      done
      kill -9 "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
      if ! grep -q "address already in use" "$dir/etcd.log" 2>/dev/null; then
        echo "local-cluster: etcd did not start; its log: $dir/etcd.log" >&2
        exit 1
      fi
    done
    echo "local-cluster: no free ports after 5 tries; see $dir/etcd.log" >&2
    exit 1
    ;;
  stop)
    [ -n "$dir" ] || { echo "local-cluster: stop needs --dir DIR" >&2; exit 2; }
    if [ -f "$dir/etcd.pid" ]; then
      pid=$(cat "$dir/etcd.pid")
      kill -CONT "$pid" 2>/dev/null || true  # a test may have stopped it
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
      done
      kill -9 "$pid" 2>/dev/null || true
    fi
    # Only what start made: never a directory given by mistake.
    rm -rf "$dir/etcd-data"
    rm -f "$dir/etcd.pid" "$dir/etcd.log"
    rmdir "$dir" 2>/dev/null || true
    ;;
  *)
    usage >&2
    exit 2
    ;;
esac
