#!/usr/bin/env bash
# Handlers installed, replaced and removed with spinctl while the real
# spinnicd forwards at full load: its two net_null ports are a traffic source
# that never stops (every RX burst is full) and a sink that never refuses, so
# the one HPU runs flat out. Every change must take effect (the churned
# handler counts packets), and when spinnicd stops no frame may be missing:
# what each port received, the other sent, with zero drops. Memory regions
# are registered, bound to a capture handler and freed under the same load.
#
# usage: spinctl_load.sh SPINNICD SPINCTL
# shellcheck disable=SC2034  # used by lib.sh
TEST_NAME=spinctl_load
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
it_init "$@"
[[ $# -ge 2 ]] || die "usage: $0 SPINNICD SPINCTL"
it_spinctl_init "$2"
CYCLES=${SPINCTL_LOAD_CYCLES:-40}
CFG=$TMP/config.textproto
it_write_null_config "$CFG"

# json EXPR: EXPR over the JSON in $TMP/cmd.out (bound to d), printed.
json() { "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); print($1)" "$TMP/cmd.out"; }

# Long enough for the churn on a loaded machine (a cycle takes well under 1 s).
it_start_spinnicd "$CFG" --control_socket "$SOCK" --duration_s $((120 + CYCLES))
it_wait_spinctl

sc stats --json
rx_before=$(json 'next(p["rx_packets"] for p in d["ports"] if p["name"] == "p0")')
sleep 0.5
sc stats --json
rx_after=$(json 'next(p["rx_packets"] for p in d["ports"] if p["name"] == "p0")')
log "p0 received $rx_before -> $rx_after frames in 0.5 s"
check "traffic flows before the churn" test "$rx_after" -gt "$rx_before"

rss() { awk '/^VmRSS/ {print $2}' "/proc/$SPN_PID/status"; }
rss_before=$(rss)
failed_calls=0
handled=0
# call ARGS...: spinctl; a failure is counted and logged with its message.
call() {
  sc "$@"
  if [[ $RC -ne 0 ]]; then
    failed_calls=$((failed_calls + 1))
    log "cycle $c: spinctl $* exited $RC: $(head -c 300 "$TMP/cmd.err")"
  fi
}
for ((c = 1; c <= CYCLES; c++)); do
  call install --name churn --kind count
  call handlers --json
  n=$(json 'sum(int(s.get("packets", 0)) for s in d.get("stats", []) if s["name"] == "churn")' 2>/dev/null || echo 0)
  handled=$((handled + n))
  call install --name churn --kind null --replace
  call remove churn
  if ((c % 10 == 0)); then
    call region-register --length 65536 --access local_write --json
    id=$(json 'd["id"]' 2>/dev/null)
    [[ -n $id ]] || continue
    call install --name cap --kind capture --bind "$id"
    call remove cap
    call region-deregister "$id"
  fi
done
rss_after=$(rss)
log "$CYCLES install/replace/remove cycles under load; churned handler counted $handled packets; spinnicd RSS ${rss_before} -> ${rss_after} KiB"
check "every spinctl call of the churn succeeded" test "$failed_calls" -eq 0
check "the churned handler was in the packet path" test "$handled" -gt 0
sc handlers --json
check "nothing left installed" test "$(json 'len(d.get("handlers", []))')" -eq 0
sc regions --json
check "no region left registered" test "$(json 'len(d.get("regions", []))')" -eq 0

it_stop_spinnicd TERM
check "spinnicd exits 0 on SIGTERM" test "$SPN_RC" -eq 0
check "final counters written" test -s "$TMP/stats.json"
log "final: $(stats '"p0 rx %d tx %d, p1 rx %d tx %d, drops %d/%d" % (port("p0")["rx_packets"], port("p0")["tx_packets"], port("p1")["rx_packets"], port("p1")["tx_packets"], total_drops("p0"), total_drops("p1"))')"
check "zero drops on either port" stats 'total_drops("p0") == 0 and total_drops("p1") == 0'
check "every frame p0 received left through p1" stats 'port("p0")["rx_packets"] == port("p1")["tx_packets"] > 0'
check "every frame p1 received left through p0" stats 'port("p1")["rx_packets"] == port("p0")["tx_packets"] > 0'
it_finish
