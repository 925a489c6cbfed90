#!/usr/bin/env bash
# signal: spinnicd forwarding between two paired net_null vdevs (no setup, no
# namespaces) gets SIGINT after about 2 s of traffic: it exits 0 by itself,
# prints its final counters on stdout (periodic ones are off, so whatever
# counters it printed came at exit) and writes --stats_json. Then the same with
# SIGTERM, and with --duration_s (it stops by itself, exit 0). Needs no root.
#
# usage: signal.sh SPINNICD
# shellcheck disable=SC2034  # used by lib.sh
TEST_NAME=signal
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
it_init "$@"
# No root needed: net_null and --no-huge run unprivileged.

cat >"$TMP/null.textproto" <<EOF
eal_args: ["--no-huge", "-m", "256", "--no-pci", "--file-prefix", "$FILE_PREFIX"]
ports { name: "null0" vdev: "net_null0" role: PORT_ROLE_WIRE }
ports { name: "null1" vdev: "net_null1" role: PORT_ROLE_HOST }
port_pairs { a: "null0" b: "null1" }
workers: [1]
main_lcore: 0
handlers { name: "count-all" kind: "count" }
runtime { stats_interval_ms: 0 }
EOF

names_both_ports() {
  grep -Eq '(^|[^a-z0-9])null0([^0-9]|$)' "$TMP/spinnicd.out" &&
    grep -Eq '(^|[^a-z0-9])null1([^0-9]|$)' "$TMP/spinnicd.out"
}

# run_case LABEL SIGNAL|duration
run_case() {
  local label=$1 how=$2 i
  if [[ $how == duration ]]; then
    # --duration_s given last overrides the lib's safety bound.
    "$SPINNICD" --config "$TMP/null.textproto" --stats_json "$TMP/stats.json" --duration_s 2 \
      >"$TMP/spinnicd.out" 2>"$TMP/spinnicd.err" </dev/null &
    # shellcheck disable=SC2034  # lib.sh reads it
    SPN_PID=$!
    for ((i = 0; i < 300; i++)); do spinnicd_alive || break; sleep 0.1; done
    it_stop_spinnicd KILL  # only if it did not stop by itself within 30 s
  else
    it_start_spinnicd "$TMP/null.textproto"
    # ~2 s of traffic; only its being alive is checked, never a time.
    for ((i = 0; i < 20; i++)); do spinnicd_alive || break; sleep 0.1; done
    sleep 1
    check "$label: spinnicd running before the signal" spinnicd_alive
    it_stop_spinnicd "$how" 30
  fi
  check "$label: exit status 0 (got $SPN_RC)" test "$SPN_RC" = 0
  check "$label: final counters on stdout (rows for ports null0 and null1)" names_both_ports
  check "$label: stats JSON written" test -s "$TMP/stats.json"
  if [[ -s $TMP/stats.json ]]; then
    check "$label: both ports received and forwarded traffic" \
      stats "all(port(p)['rx_packets'] > 0 and port(p)['tx_packets'] > 0 for p in ('null0', 'null1'))"
    check "$label: count-all saw packets; its state memory agrees with its counters" \
      stats "ectx('count-all')['packets'] > 0 and state_u64('count-all', 0) == ectx('count-all')['packets']"
  fi
  cp "$TMP/spinnicd.out" "$TMP/$label.out"
  rm -f "$TMP/stats.json"
}

run_case sigint INT
run_case sigterm TERM
run_case duration duration

it_finish
