# shellcheck shell=bash
# Shared helpers for spinnic's integration tests (bash). Source it after
# setting TEST_NAME; the test's first argument is the spinnicd binary.
#
#   it_init "$@"                 parse args, make $TMP, install the cleanup trap
#   it_require_root [WHY]        exit 77 (meson: SKIP) unless root
#   it_topology_up PREFIX        deploy/netns-topology.sh up (torn down at exit)
#   it_write_config FILE PREFIX [HANDLER_BLOCKS]   the quickstart shape on PREFIX
#   it_start_spinnicd CONFIG     start spinnicd in the background ($SPN_PID)
#   it_stop_spinnicd SIGNAL      signal it, wait (bounded), set $SPN_RC
#   it_wait_path PREFIX          wait until A reaches B through spinnicd
#   it_write_null_config FILE    two paired net_null ports (a full-rate source
#                                and sink; no root, namespaces or hugepages)
#   it_spinctl_init SPINCTL      $SPINCTL, $SOCK and sc/out_has/err_has/rc_is/py
#   it_wait_spinctl              wait until spinnicd answers spinctl health
#   check DESC CMD...            run CMD; PASS/FAIL line; failures counted
#   it_finish                    exit 1 if any check failed, else 0
#
# Everything started here is stopped at exit (trap), every wait is bounded, and
# nothing asserts a timing.

set -uo pipefail

IT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$IT_DIR/../.." && pwd)
TOPO=$REPO/deploy/netns-topology.sh
TRAFFIC=$REPO/deploy/traffic.sh
NETTOOL=$IT_DIR/nettool.py
PY=$(command -v /usr/bin/python3 || command -v python3) || { echo "python3 missing" >&2; exit 1; }

IT_FAILED=0
IT_PASSED=0
IT_PREFIXES=()
IT_BG=()
SPN_PID=
SPN_RC=
FILE_PREFIX=

IT_LOG_TAIL=()  # the test's own last lines, repeated at the end of a failure's dump

log() {
  local line="[$TEST_NAME] $*"
  echo "$line"
  IT_LOG_TAIL+=("$line")
  ((${#IT_LOG_TAIL[@]} > 25)) && IT_LOG_TAIL=("${IT_LOG_TAIL[@]:1}")
  return 0
}

check() {
  local desc=$1
  shift
  if "$@"; then
    log "PASS: $desc"
    IT_PASSED=$((IT_PASSED + 1))
  else
    log "FAIL: $desc"
    IT_FAILED=$((IT_FAILED + 1))
  fi
}

fail() {
  log "FAIL: $*"
  IT_FAILED=$((IT_FAILED + 1))
}

# Fatal: report and exit (the trap cleans up).
die() {
  log "FATAL: $*"
  IT_FAILED=$((IT_FAILED + 1))
  exit 1
}

it_cleanup() {
  local rc=$? p
  trap - EXIT INT TERM
  if [[ -n $SPN_PID ]] && kill -0 "$SPN_PID" 2>/dev/null; then
    log "cleanup: spinnicd still running, killing it"
    kill -KILL "$SPN_PID" 2>/dev/null
    wait "$SPN_PID" 2>/dev/null
  fi
  for p in "${IT_BG[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${IT_BG[@]}"; do wait "$p" 2>/dev/null; done
  for p in "${IT_PREFIXES[@]}"; do bash "$TOPO" down --prefix "$p" >/dev/null 2>&1; done
  if [[ -n $FILE_PREFIX ]]; then
    rm -rf "/var/run/dpdk/$FILE_PREFIX" "${XDG_RUNTIME_DIR:-/nonexistent}/dpdk/$FILE_PREFIX" \
      "/tmp/dpdk/$FILE_PREFIX" 2>/dev/null
  fi
  if [[ -n ${TMP:-} && -d $TMP ]]; then
    if [[ $IT_FAILED -ne 0 || $rc -ne 0 ]]; then
      # Keep what explains a failure in the test log before deleting it.
      for p in "$TMP"/*.textproto "$TMP"/*.json "$TMP"/*.out "$TMP"/*.err "$TMP"/*.log; do
        [[ -s $p ]] || continue
        echo "----- $(basename "$p") (last 40 lines) -----"
        tail -n 40 "$p"
      done
      # Last, where a log viewer that shows only the end of the output
      # (meson's --print-errorlogs, CI summaries) still sees them.
      echo "----- [$TEST_NAME] the test's own last lines -----"
      printf '%s\n' "${IT_LOG_TAIL[@]}"
    fi
    rm -rf "$TMP"
  fi
  if [[ $rc -eq 0 && $IT_FAILED -ne 0 ]]; then rc=1; fi
  exit "$rc"
}

# nap SECONDS: sleep without forking (a read that times out on a FIFO that
# nobody writes). A test's own shell polls children for minutes; every
# `sleep` is a fork, and the soak's shell once spun in user space right
# after forking one (docs/testing.md, "Soak"): the fewer forks the
# orchestrating shell makes, the less it is exposed to its job bookkeeping.
nap() {
  if [[ -z ${IT_NAP_FD:-} ]]; then
    if [[ -n ${TMP:-} && -d $TMP ]] && { [[ -p $TMP/.nap ]] || mkfifo "$TMP/.nap"; } &&
      exec {IT_NAP_FD}<>"$TMP/.nap"; then
      :
    else
      sleep "$1"
      return 0
    fi
  fi
  read -r -t "$1" -u "$IT_NAP_FD" _ || true
}

it_init() {
  [[ $# -ge 1 ]] || { echo "usage: $0 SPINNICD" >&2; exit 2; }
  SPINNICD=$(readlink -f "$1")
  [[ -x $SPINNICD ]] || { echo "[$TEST_NAME] spinnicd not found at $1" >&2; exit 1; }
  TMP=$(mktemp -d "/tmp/spinnic-it-$TEST_NAME.XXXXXX")
  FILE_PREFIX=spn-it-$TEST_NAME-$$
  trap it_cleanup EXIT
  trap 'log "interrupted"; exit 130' INT
  trap 'log "terminated"; exit 143' TERM
}

it_require_root() {
  if [[ $(id -u) -ne 0 ]]; then
    echo "[$TEST_NAME] SKIP: needs root (${1:-network namespaces, af_packet})"
    exit 77
  fi
  local t
  for t in ip ethtool ping; do
    command -v "$t" >/dev/null || die "'$t' missing: run deploy/install-deps.sh"
  done
}

it_topology_up() {
  local prefix=$1
  IT_PREFIXES+=("$prefix")
  bash "$TOPO" down --prefix "$prefix" >/dev/null 2>&1  # leftovers of a killed run
  bash "$TOPO" up --prefix "$prefix" --static-neigh || die "topology $prefix did not come up"
}

# it_write_config FILE PREFIX [EXTRA]: the quick start's shape (two
# af_packet ports on PREFIX-wire0 / PREFIX-host0, paired, one worker on core 1,
# main lcore 0, --no-huge) with handler blocks EXTRA (default: the two ICMP
# counters of the quick start).
it_write_config() {
  local file=$1 prefix=$2
  local extra=${3-'handlers { name: "count-icmp" kind: "count" match { ip_proto: 1 } }
handlers { name: "count-icmpv6" kind: "count" match { ip_proto: 58 } }'}
  cat >"$file" <<EOF
# spinnic integration test $TEST_NAME (generated)
eal_args: ["--no-huge", "-m", "512", "--no-pci", "--file-prefix", "$FILE_PREFIX"]
ports { name: "wire0" vdev: "net_af_packet0,iface=$prefix-wire0" role: PORT_ROLE_WIRE }
ports { name: "host0" vdev: "net_af_packet1,iface=$prefix-host0" role: PORT_ROLE_HOST }
port_pairs { a: "wire0" b: "host0" }
workers: [1]
main_lcore: 0
$extra
runtime { stats_interval_ms: 1000 }
EOF
}

# it_start_spinnicd CONFIG [ARGS...]: background spinnicd with --stats_json
# $TMP/stats.json, stdout/stderr in $TMP/spinnicd.out/.err. --duration_s bounds
# its life even if this script is killed with SIGKILL.
it_start_spinnicd() {
  local cfg=$1
  shift
  rm -f "$TMP/stats.json"
  "$SPINNICD" --config "$cfg" --stats_json "$TMP/stats.json" --duration_s 300 "$@" \
    >"$TMP/spinnicd.out" 2>"$TMP/spinnicd.err" </dev/null &
  SPN_PID=$!
  log "spinnicd started (pid $SPN_PID): --config $cfg $*"
}

spinnicd_alive() { [[ -n $SPN_PID ]] && kill -0 "$SPN_PID" 2>/dev/null; }

# it_stop_spinnicd SIGNAL [SECONDS]: sets SPN_RC to its exit status (124 if it
# had to be killed after SECONDS, default 30).
it_stop_spinnicd() {
  local sig=$1 limit=${2:-30} i
  SPN_RC=
  if ! spinnicd_alive; then
    wait "$SPN_PID" 2>/dev/null
    SPN_RC=$?
    log "spinnicd had already exited with $SPN_RC"
    SPN_PID=
    return
  fi
  kill -s "$sig" "$SPN_PID"
  for ((i = 0; i < limit * 10; i++)); do
    spinnicd_alive || break
    sleep 0.1
  done
  if spinnicd_alive; then
    log "spinnicd did not exit within ${limit}s of SIG$sig; killing it"
    kill -KILL "$SPN_PID"
    wait "$SPN_PID" 2>/dev/null
    SPN_RC=124
  else
    wait "$SPN_PID" 2>/dev/null
    SPN_RC=$?
  fi
  SPN_PID=
  log "spinnicd exited with $SPN_RC after SIG$sig"
}

# it_wait_path PREFIX: A reaches B (IPv4 and IPv6) through spinnicd, at most 30 s.
it_wait_path() {
  local prefix=$1
  if ! spinnicd_alive; then
    die "spinnicd exited at start: $(head -c 2000 "$TMP/spinnicd.err")"
  fi
  bash "$TRAFFIC" --prefix "$prefix" --wait 30 wait || {
    spinnicd_alive || log "spinnicd exited: $(head -c 2000 "$TMP/spinnicd.err")"
    die "no path between the hosts through spinnicd"
  }
}

# stats EXPR: evaluate over $TMP/stats.json (see nettool.py stats).
stats() { "$PY" "$NETTOOL" stats "$TMP/stats.json" "$1"; }

# nsrun PREFIX-a|PREFIX-b CMD...: run in a host namespace.
nsrun() { local ns=$1; shift; ip netns exec "$ns" "$@"; }

# bg CMD...: background helper, killed at exit; pid in $BG_PID. The command
# must be a program (or nsrun), not another shell function: $BG_PID must be the
# helper itself so that a signal reaches it.
bg() {
  if [[ $1 == nsrun ]]; then
    shift
    set -- ip netns exec "$@"
  fi
  "$@" &
  BG_PID=$!
  IT_BG+=("$BG_PID")
}

# wait_file FILE [SECONDS]: until FILE exists (bounded).
wait_file() {
  local f=$1 limit=${2:-10} i
  for ((i = 0; i < limit * 10; i++)); do [[ -e $f ]] && return 0; sleep 0.1; done
  return 1
}

# wait_pid PID [SECONDS]: wait for a background helper, bounded; kill if late.
wait_pid() {
  local p=$1 limit=${2:-30} i
  for ((i = 0; i < limit * 10; i++)); do kill -0 "$p" 2>/dev/null || break; nap 0.1; done
  kill "$p" 2>/dev/null
  wait "$p" 2>/dev/null
}

it_finish() {
  log "$IT_PASSED checks passed, $IT_FAILED failed"
  [[ $IT_FAILED -eq 0 ]] && exit 0
  exit 1
}

# it_write_null_config FILE: spinnicd forwarding between two paired net_null
# ports p0 (wire) and p1 (host), one worker on core 1.
it_write_null_config() {
  cat >"$1" <<EOF
# spinnic integration test $TEST_NAME (generated)
eal_args: ["--no-huge", "-m", "256", "--no-pci", "--file-prefix", "$FILE_PREFIX"]
ports { name: "p0" vdev: "net_null0" role: PORT_ROLE_WIRE }
ports { name: "p1" vdev: "net_null1" role: PORT_ROLE_HOST }
port_pairs { a: "p0" b: "p1" }
workers: [1]
main_lcore: 0
EOF
}

# it_spinctl_init SPINCTL: sets $SPINCTL and $SOCK (spinnicd's control socket,
# pass it with --control_socket); the spinctl tests then use:
#   sc ARGS...   spinctl on $SOCK; stdout/stderr in $TMP/cmd.out/.err (shown
#                when the test fails), exit status in $RC
#   out_has RE / err_has RE   grep -E the last command's stdout / stderr
#   rc_is N      the last exit status was N (else says what it was)
#   py EXPR      EXPR over the JSON document in $TMP/cmd.out, bound to `d`
it_spinctl_init() {
  SPINCTL=$(readlink -f "$1")
  [[ -x $SPINCTL ]] || die "spinctl not found at $1"
  SOCK=$TMP/ctl.sock
}
sc() {
  "$SPINCTL" --socket "$SOCK" "$@" >"$TMP/cmd.out" 2>"$TMP/cmd.err" </dev/null
  RC=$?
}
out_has() { grep -Eq -- "$1" "$TMP/cmd.out"; }
err_has() { grep -Eq -- "$1" "$TMP/cmd.err"; }
rc_is() { [[ $RC -eq $1 ]] || { log "exit status $RC, expected $1: $(head -c 500 "$TMP/cmd.err")"; return 1; }; }
py() { "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($1) else 1)" "$TMP/cmd.out"; }

# it_telemetry CMD...: asks spinnicd's DPDK telemetry socket (its
# --file-prefix $FILE_PREFIX) each command; $TMP/cmd.out gets one JSON object
# {command: reply}, a refused command's reply being null; RC is the exit code.
it_telemetry() {
  "$PY" - "$FILE_PREFIX" "$@" >"$TMP/cmd.out" 2>"$TMP/cmd.err" <<'EOF'
import glob, json, os, socket, sys
prefix = sys.argv[1]
paths = glob.glob(f"/var/run/dpdk/{prefix}/dpdk_telemetry.v2") + glob.glob(
    os.path.join(os.environ.get("XDG_RUNTIME_DIR", "/nonexistent"), "dpdk",
                 prefix, "dpdk_telemetry.v2"))
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.settimeout(5)
s.connect(paths[0])
s.recv(4096)  # the greeting
out = {}
for cmd in sys.argv[2:]:
    s.send(cmd.encode())
    # The reply is keyed by the command without its parameter.
    out[cmd] = json.loads(s.recv(65536).decode())[cmd.split(",")[0]]
print(json.dumps(out))
EOF
  RC=$?
}

# it_wait_spinctl: until `spinctl health` succeeds on $SOCK, at most 60 s;
# fatal if spinnicd exits meanwhile.
it_wait_spinctl() {
  local i
  for ((i = 0; i < 600; i++)); do
    spinnicd_alive || die "spinnicd exited at start: $(head -c 2000 "$TMP/spinnicd.err")"
    "$SPINCTL" --socket "$SOCK" --timeout_ms 2000 health >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  die "spinctl health did not succeed within 60 s"
}

# it_write_null_diad_config FILE: it_write_null_config with DiAD on: node
# fd00:d1ad::1, MAC 02:00:00:00:00:01, short timers (a peer nobody plays is
# down within milliseconds). Frames to peers leave through p0 into net_null.
it_write_null_diad_config() {
  it_write_null_config "$1"
  cat >>"$1" <<EOF2
addresses { diad_node: "fd00:d1ad::1" mac: "02:00:00:00:00:01" }
diad { rto_us: 200 rto_max_us: 1000 max_retries: 3 }
EOF2
}
