#!/usr/bin/env bash
# netns_passthrough: two hosts in network namespaces talk through spinnicd
# (af_packet on veth, the quick start's shape): ping IPv4 and IPv6 both ways,
# a 4 MiB TCP transfer over IPv4 and IPv6 checked by sha256. After SIGTERM
# (exit 0) the stats JSON must show that the two `count` handlers counted
# exactly the ICMP / ICMPv6 packets that crossed (the hosts' own kernel
# counters of ICMP messages sent, taken once the path is up and again after
# the traffic), that their state memory holds the same numbers, and that no
# packet was dropped for a reason that would be a bug.
#
# usage: netns_passthrough.sh SPINNICD
# shellcheck disable=SC2034  # used by lib.sh
TEST_NAME=netns_passthrough
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
it_init "$@"
it_require_root

P=spt
COUNT=20
# ICMP messages sent by both hosts: every one sent while spinnicd runs
# crosses it exactly once. A and B have static neighbour entries and send no
# RS or DAD, so after the MLD reports of link up the only ICMP is ours.
icmp_sent() { # -> "v4 v6" summed over A and B
  local a b
  a=$(nsrun $P-a "$PY" "$NETTOOL" icmp-out) || return 1
  b=$(nsrun $P-b "$PY" "$NETTOOL" icmp-out) || return 1
  echo $((${a% *} + ${b% *})) $((${a#* } + ${b#* }))
}

it_topology_up $P
# Let link-up's MLD reports go out (into the void: nothing joins the veths
# yet) before spinnicd starts, so none falls between spinnicd's start and the
# first reading below. Bounded; nothing is asserted about time.
prev=
for ((i = 0; i < 20; i++)); do
  cur=$(icmp_sent) || die "cannot read the hosts' ICMP counters"
  [[ $cur == "$prev" ]] && break
  prev=$cur
  sleep 0.5
done

it_write_config "$TMP/spinnic.textproto" $P
it_start_spinnicd "$TMP/spinnic.textproto"
it_wait_path $P
before=$(icmp_sent) || die "cannot read the hosts' ICMP counters"

check "ping v4/v6 both ways ($COUNT each), TCP 4 MiB v4/v6 with sha256" \
  bash "$TRAFFIC" --prefix $P --count $COUNT --bytes $((4 * 1024 * 1024)) ping tcp

after=$(icmp_sent) || die "cannot read the hosts' ICMP counters"
sent_v4=$((${after% *} - ${before% *}))
sent_v6=$((${after#* } - ${before#* }))
log "ICMP sent by the hosts while the path was up: v4 $sent_v4, v6 $sent_v6 (pings alone: $((4 * COUNT)) each)"

check "spinnicd still running after the traffic" spinnicd_alive
it_stop_spinnicd TERM
check "spinnicd exits 0 on SIGTERM (got $SPN_RC)" test "$SPN_RC" = 0
check "stats JSON written" test -s "$TMP/stats.json"
[[ -s $TMP/stats.json ]] || it_finish
check "periodic/final counters on stdout" test -s "$TMP/spinnicd.out"

check "ping traffic alone is $((4 * COUNT)) ICMP and $((4 * COUNT)) ICMPv6 (request+reply, both ways)" \
  test "$sent_v4" -ge $((4 * COUNT)) -a "$sent_v6" -ge $((4 * COUNT))
check "count-icmp counted exactly the $sent_v4 ICMP packets that crossed" \
  stats "ectx('count-icmp')['packets'] == $sent_v4"
check "count-icmpv6 counted exactly the $sent_v6 ICMPv6 packets that crossed" \
  stats "ectx('count-icmpv6')['packets'] == $sent_v6"
# A ping with 56 data bytes is a 98-byte (IPv4) / 118-byte (IPv6) frame.
if [[ $sent_v4 -eq $((4 * COUNT)) ]]; then
  check "count-icmp bytes = $sent_v4 x 98-byte frames" stats "ectx('count-icmp')['bytes'] == $sent_v4 * 98"
fi
if [[ $sent_v6 -eq $((4 * COUNT)) ]]; then
  check "count-icmpv6 bytes = $sent_v6 x 118-byte frames" stats "ectx('count-icmpv6')['bytes'] == $sent_v6 * 118"
fi
for h in count-icmp count-icmpv6; do
  check "$h state memory {packets, bytes} matches its counters" \
    stats "state_u64('$h', 0) == ectx('$h')['packets'] and state_u64('$h', 1) == ectx('$h')['bytes']"
  check "$h: no handler drops/failures/invalid/over-budget, not disabled" \
    stats "[ectx('$h')[k] for k in ('dropped', 'failed', 'invalid', 'over_budget')] == [0, 0, 0, 0] and not ectx('$h')['disabled']"
done

# Drops: none of these may happen on clean traffic between two hosts.
for port in wire0 host0; do
  check "$port: no runt/truncated/oversize/multi_segment/handler/no_route drops" \
    stats "all(drops('$port')[k] == 0 for k in ('runt', 'truncated', 'oversize', 'multi_segment', 'handler_drop', 'handler_invalid', 'no_route'))"
  # tx_full / no_buffer / scheduler_full depend on load (a TCP burst can fill
  # af_packet's TX ring); TCP recovers, the test only reports them.
  log "$port load-dependent drops: $(stats "{k: drops('$port')[k] for k in ('tx_full', 'no_buffer', 'scheduler_full')}")"
done
check "wire0 and host0 both received and sent (TCP crossed both ways)" \
  stats "all(port(p)['rx_packets'] > 0 and port(p)['tx_packets'] > 0 for p in ('wire0', 'host0'))"
check "every packet received was sent on or counted as a drop (rx = tx + drops)" \
  stats "sum(p['rx_packets'] for p in s['ports']) == sum(p['tx_packets'] + sum(p['drops'].values()) for p in s['ports'])"
check "worker lcore 1 did the work" \
  stats "len(s['hpus']) == 1 and s['hpus'][0]['lcore'] == 1 and s['hpus'][0]['rx_packets'] > 0"

it_finish
