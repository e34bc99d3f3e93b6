#!/usr/bin/env bash
# Starts and stops a local etcd for Strata's cluster services: one member on
# 127.0.0.1, its data in a temporary directory, on free ports; with
# --with-ceph also a one-node Ceph cluster for the RADOS row store.
#   scripts/local-cluster.sh start [--dir DIR] [--with-ceph [--bluestore] [--no-cls-lua]]
#   scripts/local-cluster.sh restart-osd --dir DIR  # SIGKILLs the OSD, starts it again
#   scripts/local-cluster.sh stop --dir DIR   # stops everything by pid, removes its data
# start prints shell assignments on standard output:
#   STRATA_CLUSTER_DIR=/tmp/strata-cluster.XXXX
#   ETCD_ENDPOINTS=http://127.0.0.1:PORT
#   ETCD_PID=PID
# and with --with-ceph (one monitor, one OSD on memstore: data in memory,
# auth off, pool size 1, ready in about 5 s, about 150 MB of memory; with
# --bluestore the OSD keeps its data in a sparse 2 GiB file instead, so that
# it survives restart-osd, ready in about 8 s; the OSD loads every object
# class, cls_lua among them, unless --no-cls-lua keeps Ceph's default list):
#   CEPH_CONF=/tmp/strata-cluster.XXXX/ceph/ceph.conf
#   CEPH_POOL=strata
#   CEPH_MON_PID=PID
#   CEPH_OSD_PID=PID
# so `eval "$(scripts/local-cluster.sh start)"` sets them; restart-osd prints
# the new CEPH_OSD_PID once the OSD takes writes again. The tests that need
# etcd or Ceph start and stop them through this script. Needs etcd-server,
# etcd-client, and for Ceph ceph-mon and ceph-osd (scripts/install-deps.sh).
set -euo pipefail

usage() { sed -n '2,24p' "$0"; }

cmd="${1:-}"
[ $# -gt 0 ] && shift
case "$cmd" in -h|--help) usage; exit 0 ;; esac
dir=""
with_ceph=0
store=memstore
class_list="*"
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir="$2"; shift 2 ;;
    --with-ceph) with_ceph=1; shift ;;
    --bluestore) store=bluestore; shift ;;
    --no-cls-lua) class_list=""; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "local-cluster: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done

# stop_pid FILE [SIGNAL]: stops the process whose pid FILE holds with SIGNAL
# (TERM by default), then SIGKILL after 5 s.
stop_pid() {
  [ -f "$1" ] || return 0
  local pid
  pid=$(cat "$1")
  kill -CONT "$pid" 2>/dev/null || true  # a test may have stopped it
  kill -"${2:-TERM}" "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do
    # Gone, or a zombie its parent has not reaped yet. A process's first
    # thread shows Z while its others still exit, holding its files (the
    # OSD's pid file lock among them): a zombie counts once it is alone.
    kill -0 "$pid" 2>/dev/null || break
    case "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" in
      "") break ;;
      Z) [ "$(ls "/proc/$pid/task" 2>/dev/null | wc -l)" -le 1 ] && break ;;
    esac
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$1"
}

# start_ceph DIR: a monitor and a memstore OSD with their data in DIR/ceph,
# and the pool "strata"; prints the CEPH_ lines. The monitor's port is
# random; the OSD takes free ports of its own.
start_ceph() {
  local c="$1/ceph"
  for tool in ceph-mon ceph-osd ceph monmaptool ceph-authtool; do
    command -v "$tool" >/dev/null || {
      echo "local-cluster: $tool not found; run scripts/install-deps.sh" >&2; return 1; }
  done
  for attempt in 1 2 3 4 5; do
    rm -rf "$c"
    mkdir -p "$c/run" "$c/log" "$c/mon.a" "$c/osd.0"
    local port=$(( 20000 + (RANDOM * 32768 + RANDOM) % 40000 ))
    local fsid osd_uuid
    fsid=$(cat /proc/sys/kernel/random/uuid)
    osd_uuid=$(cat /proc/sys/kernel/random/uuid)
    # msgr v1 on 127.0.0.1 only. The OSD sends no monitor command at start
    # (its device class and CRUSH place): the first may go out before it
    # knows the cluster's fsid, be refused, and stop it. It is placed in
    # CRUSH below instead.
    cat > "$c/ceph.conf" <<CONF
[global]
fsid = $fsid
mon host = v1:127.0.0.1:$port
public addr = 127.0.0.1
cluster addr = 127.0.0.1
ms bind msgr2 = false
ms bind ipv4 = true
ms bind ipv6 = false
auth cluster required = none
auth service required = none
auth client required = none
osd pool default size = 1
osd pool default min size = 1
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
osd crush chooseleaf type = 0
osd objectstore = $store
memstore device bytes = 1073741824
bluestore block create = true
bluestore block size = 2147483648
bluestore fsck on mount = false
bluestore cache autotune = false
bluestore cache size = 134217728
osd memory target = 939524096
run dir = $c/run
admin socket = $c/run/\$name.asok
pid file = $c/run/\$name.pid
log file = $c/log/\$name.log
log to stderr = false
err to stderr = false
mon data = $c/mon.\$id
osd data = $c/osd.\$id
keyring = $c/keyring
[osd]
osd class update on start = false
osd crush update on start = false
# Ceph's default is 90 MB: a limit the tests can reach with a few values.
osd max write size = 16
$( [ -n "$class_list" ] && printf '%s\n' \
  "# cls_lua among the object classes, for the row store's range checks." \
  "osd class load list = $class_list" "osd class default list = $class_list" )
CONF
    # (Called under `if !`, where set -e does not act: each step is checked.)
    monmaptool --create --addv a "[v1:127.0.0.1:$port]" --fsid "$fsid" "$c/monmap" \
      >>"$c/log/setup.log" 2>&1 || { echo "local-cluster: monmaptool failed" >&2; return 1; }
    ceph-authtool --create-keyring "$c/keyring" --gen-key -n mon. --cap mon 'allow *' \
      >>"$c/log/setup.log" 2>&1 || { echo "local-cluster: ceph-authtool failed" >&2; return 1; }
    ceph-mon -c "$c/ceph.conf" --mkfs -i a --monmap "$c/monmap" --keyring "$c/keyring" \
      >>"$c/log/setup.log" 2>&1 || { echo "local-cluster: ceph-mon --mkfs failed" >&2; return 1; }
    ceph-mon -c "$c/ceph.conf" -i a -f >>"$c/log/setup.log" 2>&1 &
    echo $! > "$c/mon.pid"
    # A monitor still starting may refuse commands ("problem getting
    # command descriptions"): asked again while it runs. Both commands may
    # be repeated (the same uuid gives the same OSD).
    local placed=0
    for _ in $(seq 1 15); do
      kill -0 "$(cat "$c/mon.pid")" 2>/dev/null || break
      if ceph -c "$c/ceph.conf" --connect-timeout 10 osd new "$osd_uuid" \
           >>"$c/log/setup.log" 2>&1 &&
         ceph -c "$c/ceph.conf" --connect-timeout 10 osd crush add osd.0 1.0 root=default \
           host=localhost >>"$c/log/setup.log" 2>&1
      then
        placed=1
        break
      fi
      sleep 1
    done
    [ "$placed" = 1 ] && break
    stop_pid "$c/mon.pid"
    if ! grep -q "Address already in use" "$c/log/mon.a.log" 2>/dev/null; then
      echo "local-cluster: ceph-mon did not start; its log: $c/log/mon.a.log" >&2
      return 1
    fi
    [ "$attempt" -lt 5 ] || { echo "local-cluster: no free port for ceph-mon" >&2; return 1; }
  done
  ceph-osd -c "$c/ceph.conf" -i 0 --mkfs --osd-uuid "$osd_uuid" >>"$c/log/setup.log" 2>&1 || {
    echo "local-cluster: ceph-osd --mkfs failed; see $c/log" >&2; return 1; }
  start_osd "$c"
  # The pool's placement groups are active once the OSD is up: a write
  # succeeding is the test.
  # A loaded machine may make a monitor command time out: try again.
  local created=0
  for _ in 1 2 3; do
    if { ceph -c "$c/ceph.conf" --connect-timeout 20 osd pool create strata 8 8 &&
         ceph -c "$c/ceph.conf" --connect-timeout 20 osd pool application enable strata strata
       } >>"$c/log/setup.log" 2>&1; then
      created=1
      break
    fi
    sleep 1
  done
  [ "$created" = 1 ] || { echo "local-cluster: cannot create the pool; see $c/log" >&2; return 1; }
  wait_for_osd "$c" || return 1
  echo "CEPH_CONF=$c/ceph.conf"
  echo "CEPH_POOL=strata"
  echo "CEPH_MON_PID=$(cat "$c/mon.pid")"
  echo "CEPH_OSD_PID=$(cat "$c/osd.pid")"
}

# start_osd C: starts osd.0 of the cluster in C in the background.
start_osd() {
  ceph-osd -c "$1/ceph.conf" -i 0 -f >>"$1/log/setup.log" 2>&1 &
  echo $! > "$1/osd.pid"
}

# wait_for_osd C: waits (up to 60 s) until a write to the pool succeeds.
wait_for_osd() {
  local c="$1" deadline=$((SECONDS + 60))
  while [ "$SECONDS" -lt "$deadline" ]; do
    kill -0 "$(cat "$c/osd.pid")" 2>/dev/null || break
    if echo ready | timeout 5 rados -c "$c/ceph.conf" -p strata put strata-ready - \
         >>"$c/log/setup.log" 2>&1; then
      return 0
    fi
    sleep 0.1
  done
  echo "local-cluster: the OSD did not come up within 60 s; see $c/log" >&2
  return 1
}

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
          if [ "$with_ceph" = 1 ] && ! start_ceph "$dir"; then
            # The logs go with the data: show their ends first.
            tail -n 5 "$dir"/ceph/log/*.log >&2 2>/dev/null || true
            "$0" stop --dir "$dir" >/dev/null 2>&1 || true
            exit 1
          fi
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
  restart-osd)
    [ -n "$dir" ] || { echo "local-cluster: restart-osd needs --dir DIR" >&2; exit 2; }
    [ -f "$dir/ceph/osd.pid" ] || { echo "local-cluster: no OSD in $dir" >&2; exit 1; }
    grep -q "objectstore = bluestore" "$dir/ceph/ceph.conf" ||
      echo "local-cluster: the OSD keeps its data in memory: it comes back empty" >&2
    stop_pid "$dir/ceph/osd.pid" KILL
    start_osd "$dir/ceph"
    wait_for_osd "$dir/ceph" || exit 1
    echo "CEPH_OSD_PID=$(cat "$dir/ceph/osd.pid")"
    ;;
  stop)
    [ -n "$dir" ] || { echo "local-cluster: stop needs --dir DIR" >&2; exit 2; }
    # The Ceph daemons' data is thrown away: no need to let them shut down.
    stop_pid "$dir/ceph/osd.pid" KILL
    stop_pid "$dir/ceph/mon.pid" KILL
    stop_pid "$dir/etcd.pid"
    # Only what start made: never a directory given by mistake.
    rm -rf "$dir/etcd-data" "$dir/ceph"
    rm -f "$dir/etcd.pid" "$dir/etcd.log"
    rmdir "$dir" 2>/dev/null || true
    ;;
  *)
    usage >&2
    exit 2
    ;;
esac
