#!/usr/bin/env bash
# systemd_notify: spinnicd under a fake systemd (Type=notify, WatchdogSec=2):
# a Unix datagram socket as NOTIFY_SOCKET (notify_sink.py), WATCHDOG_USEC set.
#
# - READY=1 arrives, and when it does every port's link is up and every HPU
#   has polled (the sink asks spinctl at that moment), and the log has the
#   ports' link lines before its ready line;
# - STATUS= lines with rates arrive;
# - WATCHDOG=1 arrives periodically; the test hook SPINNIC_TEST_STALL_HPU
#   stalls HPU 0 six seconds after it starts, for five seconds: gRPC health
#   goes NOT_SERVING with the reason logged, no WATCHDOG=1 arrives while it
#   is NOT_SERVING, and health is SERVING again and WATCHDOG=1 resumes after.
# No root; net_null ports.
#
# usage: systemd_notify.sh SPINNICD SPINCTL
# shellcheck disable=SC2034  # used by lib.sh
TEST_NAME=systemd_notify
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
it_init "$@"
[[ $# -ge 2 ]] || die "usage: $0 SPINNICD SPINCTL"
it_spinctl_init "$2"
CFG=$TMP/config.textproto
it_write_null_config "$CFG"
NSOCK=$TMP/notify.sock
NLOG=$TMP/notify.log
: >"$NLOG"

bg "$PY" "$IT_DIR/notify_sink.py" "$NSOCK" "$NLOG" "$TMP/at_ready.json" "$SPINCTL" "$SOCK" 90
wait_file "$NSOCK.ready" 10 || die "the notify sink did not start"

# health_state: SERVING / NOT_SERVING (or why not) of spinnicd now.
health_state() {
  "$SPINCTL" --socket "$SOCK" --timeout_ms 2000 health 2>/dev/null | tail -n 1
}
# wait_health STATE SECONDS: until health_state is STATE; sets T_SEEN to the
# time it was first seen, T_BEFORE to the start of the last query that still
# saw something else.
wait_health() {
  local want=$1 limit=$2 i t
  T_SEEN= T_BEFORE=
  for ((i = 0; i < limit * 10; i++)); do
    spinnicd_alive || return 1
    t=$(date +%s.%N)
    if [[ $(health_state) == "$want" ]]; then
      T_SEEN=$(date +%s.%N)
      return 0
    fi
    T_BEFORE=$t
    sleep 0.1
  done
  return 1
}
# watchdogs FROM TO: WATCHDOG=1 messages received between two wall-clock times.
watchdogs() {
  "$PY" -c 'import json,sys
lo, hi = float(sys.argv[2]), float(sys.argv[3])
print(sum(1 for l in open(sys.argv[1]) if json.loads(l)["msg"] == "WATCHDOG=1" and lo <= json.loads(l)["t"] <= hi))' \
    "$NLOG" "$1" "$2"
}

NOTIFY_SOCKET=$NSOCK WATCHDOG_USEC=2000000 SPINNIC_TEST_STALL_HPU=0:6000:5000 \
  it_start_spinnicd "$CFG" --control_socket "$SOCK"
it_wait_spinctl

# READY=1, and what was true when it arrived.
for ((i = 0; i < 150; i++)); do [[ -s $TMP/at_ready.json ]] && break; sleep 0.1; done
check "READY=1 arrives" grep -q '"READY=1"' "$NLOG"
check "at READY=1 every link was up and every HPU had polled" "$PY" -c 'import json,sys
d = json.load(open(sys.argv[1]))
ports = d["info"]["ports"]; hpus = d["stats"]["hpus"]
sys.exit(0 if ports and all(p.get("link_up") for p in ports) and hpus and all(int(h["loops"]) > 0 for h in hpus) else 1)' \
  "$TMP/at_ready.json"
check "the log has the ports' link lines before the ready line" "$PY" -c 'import sys
lines = open(sys.argv[1]).read().splitlines()
ready = [i for i, l in enumerate(lines) if "ready: every port" in l]
links = [i for i, l in enumerate(lines) if " link up" in l and "port p" in l]
sys.exit(0 if ready and len(links) == 2 and max(links) < ready[0] else 1)' "$TMP/spinnicd.err"
check "health is SERVING before the stall" eval '[[ $(health_state) == SERVING ]]'

# The stall: HPU 0 stops 6 s after it started, for 5 s; detected after 1 s.
wait_health NOT_SERVING 20
T_BAD=$T_SEEN
check "health goes NOT_SERVING when HPU 0 stalls" eval '[[ -n $T_BAD ]]'
check "the reason is logged" grep -q "health: NOT_SERVING: hpu 0 (lcore 1) made no progress" "$TMP/spinnicd.err"
# T_LAST_BAD: when a query began that still saw NOT_SERVING; between T_BAD
# and it spinnicd was NOT_SERVING throughout.
wait_health SERVING 20
T_GOOD=$T_SEEN
T_LAST_BAD=$T_BEFORE
check "health is SERVING again when HPU 0 makes progress again" eval '[[ -n $T_GOOD ]]'
check "the recovery is logged" grep -q "health: SERVING again" "$TMP/spinnicd.err"
sleep 2
T_END=$(date +%s.%N)
if [[ -n $T_BAD && -n $T_GOOD ]]; then
  FIRST=$(head -n 1 "$NLOG" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["t"])')
  check "WATCHDOG=1 arrived at least 4 times before the stall" eval \
    '[[ $(watchdogs "$FIRST" "$T_BAD") -ge 4 ]]'
  log "NOT_SERVING seen from $T_BAD to at least $T_LAST_BAD; SERVING at $T_GOOD"
  check "NOT_SERVING was seen for at least 2 s (the stall lasts 5 s)" \
    "$PY" -c 'import sys; sys.exit(0 if float(sys.argv[2]) - float(sys.argv[1]) >= 2 else 1)' "$T_BAD" "$T_LAST_BAD"
  check "no WATCHDOG=1 while NOT_SERVING" eval '[[ $(watchdogs "$T_BAD" "$T_LAST_BAD") -eq 0 ]]'
  check "WATCHDOG=1 resumes after the recovery" eval '[[ $(watchdogs "$T_GOOD" "$T_END") -ge 2 ]]'
fi
check "STATUS= lines with rates arrive" eval \
  '[[ $(grep -c "\"STATUS=rx [0-9]* pps, tx [0-9]* pps" "$NLOG") -ge 1 ]]'

it_stop_spinnicd TERM
check "spinnicd exits 0 on SIGTERM" eval '[[ $SPN_RC -eq 0 ]]'
sleep 0.5  # the sink polls every 0.2 s
check "STOPPING=1 arrives at the stop" grep -q '"STOPPING=1"' "$NLOG"
it_finish
