# shellcheck shell=bash
# Two appliances and the impairment stage between them, for the pair tests
# (diad_pair.sh, roce_pair.sh, handlers_pair.sh). Source it after lib.sh and
# it_init; set PFX (the runs' DPDK file-prefix stem) first.
#
#   pair_start_impair ARGS...     spinnic-impair ($IMPAIR) as the memif server
#                                 of $TMP/wire-a.sock and wire-b.sock, with
#                                 ARGS (--seed, --loss, ...); waits for both
#                                 (its life: PAIR_IMPAIR_DURATION_S, 900 s)
#   pair_start_appliance X CONFIG STATS_JSON DURATION_S MAX_MESSAGE_BYTES
#                                 spinnicd X on CONFIG (pid in A_PID / B_PID),
#                                 its control socket $TMP/ctl-X.sock
#   pair_wait_health X            until spinnicd X answers (60 s), else die
#   pair_links_up                 until both wire0 links are up (20 s)
#   stop_pid PID SIGNAL [SECONDS] signal, wait bounded, SIGKILL; $STOP_RC
#   json EXPR                     EXPR over $TMP/cmd.out's JSON (d), printed
#
# At exit the trap stops, in order: what the test's pair_stop_extras
# function stops (if it defines one), A, B, then the impair stage (a memif
# peer going away under traffic can crash the side still running; by then
# nothing moves), and removes their DPDK runtime directories. Safe under
# set -e.

A_PID='' B_PID='' IMPAIR_PID=''
SOCK_A=$TMP/ctl-a.sock
SOCK_B=$TMP/ctl-b.sock

alive() { [[ -n $1 ]] && kill -0 "$1" 2>/dev/null; }

stop_pid() {
  local pid=$1 sig=$2 limit=${3:-20} i
  STOP_RC=
  [[ -n $pid ]] || return 0
  if alive "$pid"; then
    kill -s "$sig" "$pid" 2>/dev/null || true
    kill -CONT "$pid" 2>/dev/null || true  # a frozen one must see it
    for ((i = 0; i < limit * 10; i++)); do alive "$pid" || break; nap 0.1; done
    if alive "$pid"; then
      kill -KILL "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
      STOP_RC=124
      return 0
    fi
  fi
  STOP_RC=0
  wait "$pid" 2>/dev/null || STOP_RC=$?
}

pair_cleanup() {
  local p
  if declare -F pair_stop_extras >/dev/null; then pair_stop_extras; fi
  stop_pid "$A_PID" TERM 20
  stop_pid "$B_PID" TERM 20
  stop_pid "$IMPAIR_PID" TERM 10
  for p in a b impair gen; do
    rm -rf "/var/run/dpdk/$PFX-$p" 2>/dev/null || true
  done
}
pair_exit() {
  local rc=$?
  set +e
  pair_cleanup
  (exit "$rc")
  it_cleanup
}
trap pair_exit EXIT

pair_start_impair() {
  "$IMPAIR" \
    --port_a "net_memif0,role=server,socket=$TMP/wire-a.sock,socket-abstract=no" \
    --port_b "net_memif1,role=server,socket=$TMP/wire-b.sock,socket-abstract=no" \
    "$@" --stats_json "$TMP/impair.json" --duration_s "${PAIR_IMPAIR_DURATION_S:-900}" \
    -- -l 1 --no-huge -m 256 --no-pci --file-prefix "$PFX-impair" \
    >"$TMP/impair.out" 2>"$TMP/impair.err" </dev/null &
  IMPAIR_PID=$!
  log "spinnic-impair started (pid $IMPAIR_PID): $*"
  { wait_file "$TMP/wire-a.sock" 30 && wait_file "$TMP/wire-b.sock" 30; } ||
    die "spinnic-impair did not create its sockets: $(tail -c 1500 "$TMP/impair.err")"
}

# --duration_s bounds its life even if the test is SIGKILLed.
pair_start_appliance() {
  local x=$1 config=$2 stats=$3 duration=$4 max_message=$5 pid
  rm -f "$TMP/ctl-$x.sock"
  "$SPINNICD" --config "$config" --control_socket "$TMP/ctl-$x.sock" \
    --stats_json "$stats" --duration_s "$duration" \
    --control_max_message_bytes "$max_message" \
    >>"$TMP/spinnicd-$x.out" 2>>"$TMP/spinnicd-$x.err" </dev/null &
  pid=$!
  if [[ $x == a ]]; then A_PID=$pid; else B_PID=$pid; fi
  log "spinnicd $x started (pid $pid)"
}

pair_wait_health() {
  local x=$1 pid i
  for ((i = 0; i < 600; i++)); do
    if [[ $x == a ]]; then pid=$A_PID; else pid=$B_PID; fi
    alive "$pid" || die "spinnicd $x exited at start: $(tail -c 1500 "$TMP/spinnicd-$x.err")"
    "$SPINCTL" --socket "$TMP/ctl-$x.sock" --timeout_ms 2000 health >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  die "spinnicd $x did not answer within 60 s"
}

json() { "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); print($1)" "$TMP/cmd.out"; }

# Sets a_up / b_up (True when up) for the caller's check.
pair_links_up() {
  local i
  for ((i = 0; i < 200; i++)); do
    SOCK=$SOCK_A sc info --json || true
    a_up=$(json 'd["ports"][0].get("link_up", False)' 2>/dev/null || true)
    SOCK=$SOCK_B sc info --json || true
    b_up=$(json 'd["ports"][0].get("link_up", False)' 2>/dev/null || true)
    [[ $a_up == True && $b_up == True ]] && return 0
    sleep 0.1
  done
  return 1
}
