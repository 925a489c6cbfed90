#!/usr/bin/env bash
# netns_reflect: a `reflect` handler on UDP destination port 7777. Host A sends
# datagrams to B:7777 (IPv4 and IPv6); each comes back to A byte-identical,
# from B's address and port 7777 (the handler swapped L2/L3/L4 addresses and
# sent the frame back out of its ingress port), while ping to B still passes
# through normally. B sees nothing on port 7777, neither its socket nor its
# interface.
#
# usage: netns_reflect.sh SPINNICD
# shellcheck disable=SC2034  # used by lib.sh
TEST_NAME=netns_reflect
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
it_init "$@"
it_require_root

P=srf
N=20
it_topology_up $P
it_write_config "$TMP/spinnic.textproto" $P \
  'handlers { name: "reflect-7777" kind: "reflect" match { ip_proto: 17 dst_port { first: 7777 } } }'
it_start_spinnicd "$TMP/spinnic.textproto"
it_wait_path $P

# B listens on 7777 (socket) and watches its interface (AF_PACKET) meanwhile.
bg nsrun $P-b "$PY" "$NETTOOL" udp-sink --bind 10.99.0.2 --bind fd99::2 --port 7777 \
  --seconds 120 --out "$TMP/b-sink.json"
sink_pid=$BG_PID
bg nsrun $P-b "$PY" "$NETTOOL" capture --iface eth0 --dport 7777 --seconds 120 --out "$TMP/b-capture.json"
cap_pid=$BG_PID
wait_file "$TMP/b-sink.json.ready" 10 && wait_file "$TMP/b-capture.json.ready" 10 ||
  die "B's listeners did not start"

check "IPv4: $N datagrams to B:7777 come back byte-identical from 10.99.0.2:7777" \
  nsrun $P-a "$PY" "$NETTOOL" udp-echo --dst 10.99.0.2 --port 7777 --count $N --seed 4
check "IPv6: $N datagrams to [fd99::2]:7777 come back byte-identical from [fd99::2]:7777" \
  nsrun $P-a "$PY" "$NETTOOL" udp-echo --dst fd99::2 --port 7777 --count $N --seed 6
check "ping to B still passes through (IPv4 and IPv6, both ways)" \
  bash "$TRAFFIC" --prefix $P --count 5 ping

kill -TERM "$sink_pid" "$cap_pid" 2>/dev/null
wait_pid "$sink_pid" 10
wait_pid "$cap_pid" 10
b_sink=$(cat "$TMP/b-sink.json" 2>/dev/null || echo missing)
b_cap=$(cat "$TMP/b-capture.json" 2>/dev/null || echo missing)
check "B's socket on port 7777 received nothing (got: ${b_sink:0:200})" test "$b_sink" = "[]"
check "no frame to port 7777 reached B's interface (got: ${b_cap:0:200})" test "$b_cap" = "[]"

check "spinnicd still running" spinnicd_alive
it_stop_spinnicd TERM
check "spinnicd exits 0 on SIGTERM (got $SPN_RC)" test "$SPN_RC" = 0
check "stats JSON written" test -s "$TMP/stats.json"
[[ -s $TMP/stats.json ]] || it_finish
# Every datagram went through the handler at least once (retries may add some).
check "reflect-7777 handled the $((2 * N)) datagrams" \
  stats "ectx('reflect-7777')['packets'] >= $((2 * N))"
check "reflect-7777: no failures/invalid, not disabled" \
  stats "ectx('reflect-7777')['failed'] == 0 and ectx('reflect-7777')['invalid'] == 0 and not ectx('reflect-7777')['disabled']"
check "the reflected frames left through wire0 (its ingress port)" \
  stats "port('wire0')['tx_packets'] >= $((2 * N))"
check "no handler_invalid / no_route drops" \
  stats "all(p['drops']['handler_invalid'] == 0 and p['drops']['no_route'] == 0 for p in s['ports'])"

it_finish
