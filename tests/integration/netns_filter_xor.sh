#!/usr/bin/env bash
# netns_filter_xor: two handlers on two UDP flows from host A to host B.
#   - `filter` on UDP destination port 7001: every datagram is dropped (B sees
#     none, not even on its interface) and counted (the handler's `dropped`
#     and the ingress port's `handler_drop`).
#   - `xor_payload` (key a55a0ff0) on UDP destination port 7002: B's socket
#     receives every datagram with its payload XORed with the repeating key,
#     byte-exact, and B's interface sees a valid UDP checksum on every frame.
#     Receipt by the socket also proves the checksum: the control flow on port
#     7003 (no handler) shows on the same path that B's kernel drops a frame
#     with a bad UDP checksum and accepts the same frame with a good one.
# Both IPv4 and IPv6.
#
# usage: netns_filter_xor.sh SPINNICD
# shellcheck disable=SC2034  # used by lib.sh
TEST_NAME=netns_filter_xor
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
it_init "$@"
it_require_root

P=sfx
N=10          # datagrams per flow and address family
KEY=a55a0ff0
MAC_A=02:99:00:00:00:01
MAC_B=02:99:00:00:00:02
it_topology_up $P
it_write_config "$TMP/spinnic.textproto" $P "handlers {
  name: \"drop-7001\" kind: \"filter\"
  match { ip_proto: 17 dst_port { first: 7001 } }
}
handlers {
  name: \"xor-7002\" kind: \"xor_payload\"
  params { key: \"key\" value: \"$KEY\" }
  match { ip_proto: 17 dst_port { first: 7002 } }
}"
it_start_spinnicd "$TMP/spinnic.textproto"
it_wait_path $P

csum_errors() { # B's UDP (v4) + UDP6 InCsumErrors
  nsrun $P-b awk '/^Udp: [0-9]/ {split(h, k); for (i = 1; i <= NF; i++) if (k[i] == "InCsumErrors") v4 = $i}
                  /^Udp:/ {h = $0}
                  END {print v4 + 0}' /proc/net/snmp
}
csum6_errors() {
  nsrun $P-b awk '$1 == "Udp6InCsumErrors" {print $2}' /proc/net/snmp6
}
err4_before=$(csum_errors)
err6_before=$(csum6_errors)

# B: sockets on 7001..7003 and a capture of its interface.
expect=$((2 * N + 2))  # 7002: N per family; 7003: one good frame per family
bg nsrun $P-b "$PY" "$NETTOOL" udp-sink --bind 10.99.0.2 --bind fd99::2 \
  --port 7001 --port 7002 --port 7003 --expect $expect --seconds 30 --out "$TMP/b-sink.json"
sink_pid=$BG_PID
bg nsrun $P-b "$PY" "$NETTOOL" capture --iface eth0 --dport 7001 --dport 7002 --dport 7003 \
  --seconds 60 --out "$TMP/b-capture.json"
cap_pid=$BG_PID
wait_file "$TMP/b-sink.json.ready" 10 && wait_file "$TMP/b-capture.json.ready" 10 ||
  die "B's listeners did not start"

# A: the filtered flow, the XORed flow, the checksum control frames.
for fam in 4 6; do
  if [[ $fam == 4 ]]; then dst=10.99.0.2 src=10.99.0.1; else dst=fd99::2 src=fd99::1; fi
  check "IPv$fam: sent $N datagrams to port 7001" \
    nsrun $P-a "$PY" "$NETTOOL" udp-send --dst $dst --port 7001 --count $N --seed 1
  check "IPv$fam: sent $N datagrams to port 7002" \
    nsrun $P-a "$PY" "$NETTOOL" udp-send --dst $dst --port 7002 --count $N --size 61 --seed $fam \
    --out "$TMP/a-sent-7002-v$fam.json"
  check "IPv$fam: sent a frame with a bad UDP checksum to port 7003" \
    nsrun $P-a "$PY" "$NETTOOL" raw-udp --src-mac $MAC_A --dst-mac $MAC_B --src $src --dst $dst \
    --dport 7003 --payload-hex 6261642d637375 --bad-csum
  check "IPv$fam: sent the same frame with a good UDP checksum to port 7003" \
    nsrun $P-a "$PY" "$NETTOOL" raw-udp --src-mac $MAC_A --dst-mac $MAC_B --src $src --dst $dst \
    --dport 7003 --payload-hex 676f6f642d637375
done

# B's socket stops by itself once it has what it should get (bounded by
# --seconds); the capture runs a moment longer for anything late.
wait_pid "$sink_pid" 35
sleep 1
kill -TERM "$cap_pid" 2>/dev/null
wait_pid "$cap_pid" 10
[[ -s $TMP/b-sink.json && -s $TMP/b-capture.json ]] || die "B's listeners wrote no results"

"$PY" - "$TMP" "$KEY" "$N" >"$TMP/verdict.out" <<'EOF'
import json, sys
tmp, key, n = sys.argv[1], bytes.fromhex(sys.argv[2]), int(sys.argv[3])
sink = json.load(open(tmp + "/b-sink.json"))
cap = json.load(open(tmp + "/b-capture.json"))
def xor(b):
    return bytes(x ^ key[i % len(key)] for i, x in enumerate(b))
res = {}
res["sink_7001"] = sum(1 for d in sink if d["dport"] == 7001)
res["wire_7001"] = sum(1 for d in cap if d["dport"] == 7001)
for fam, src in (("v4", "10.99.0.1"), ("v6", "fd99::1")):
    sent = [bytes.fromhex(h) for h in json.load(open("%s/a-sent-7002-%s.json" % (tmp, fam)))]
    want = [xor(p) for p in sent]
    got = [bytes.fromhex(d["data"]) for d in sink if d["dport"] == 7002 and d["src"] == src]
    res["xor_%s_received" % fam] = len(got)
    res["xor_%s_exact" % fam] = sorted(got) == sorted(want)
    res["xor_%s_unchanged" % fam] = sum(1 for g in got if g in sent)
    wire = [d for d in cap if d["dport"] == 7002 and d["src"] == src]
    res["xor_%s_on_wire" % fam] = len(wire)
    res["xor_%s_csum_ok" % fam] = sum(1 for d in wire if d["csum_ok"])
    ctl_wire = [d for d in cap if d["dport"] == 7003 and d["src"] == src]
    ctl_sock = [d for d in sink if d["dport"] == 7003 and d["src"] == src]
    res["ctl_%s_bad_on_wire" % fam] = sum(1 for d in ctl_wire if not d["csum_ok"])
    res["ctl_%s_good_on_wire" % fam] = sum(1 for d in ctl_wire if d["csum_ok"])
    res["ctl_%s_socket" % fam] = sorted(bytes.fromhex(d["data"]).decode() for d in ctl_sock)
print(json.dumps(res))
EOF
verdict=$(cat "$TMP/verdict.out")
log "B observed: $verdict"
v() { "$PY" -c 'import json,sys; print(json.dumps(json.loads(sys.argv[1])[sys.argv[2]]))' "$verdict" "$1"; }

check "filter: no datagram to 7001 reached B's socket" test "$(v sink_7001)" = 0
check "filter: no frame to 7001 reached B's interface" test "$(v wire_7001)" = 0
for fam in v4 v6; do
  check "xor $fam: B received all $N datagrams on 7002" test "$(v xor_${fam}_received)" = "$N"
  check "xor $fam: each payload is the sent one XORed with $KEY (repeating), byte-exact" \
    test "$(v xor_${fam}_exact)" = true
  check "xor $fam: every frame on B's wire has a valid UDP checksum" \
    test "$(v xor_${fam}_csum_ok)" = "$(v xor_${fam}_on_wire)" -a "$(v xor_${fam}_on_wire)" -ge "$N"
  check "control $fam: the bad-checksum frame crossed, and B's kernel dropped it (only the good one delivered)" \
    test "$(v ctl_${fam}_bad_on_wire)" = 1 -a "$(v ctl_${fam}_good_on_wire)" = 1 -a "$(v ctl_${fam}_socket)" = '["good-csu"]'
done
err4_after=$(csum_errors)
err6_after=$(csum6_errors)
check "B's kernel counted exactly the two bad checksums (UDP InCsumErrors v4 +1, v6 +1)" \
  test $((err4_after - err4_before)) = 1 -a $((err6_after - err6_before)) = 1

check "spinnicd still running" spinnicd_alive
it_stop_spinnicd TERM
check "spinnicd exits 0 on SIGTERM (got $SPN_RC)" test "$SPN_RC" = 0
check "stats JSON written" test -s "$TMP/stats.json"
[[ -s $TMP/stats.json ]] || it_finish
check "drop-7001 saw the $((2 * N)) datagrams and dropped them all" \
  stats "ectx('drop-7001')['packets'] == $((2 * N)) and ectx('drop-7001')['dropped'] == $((2 * N))"
check "wire0 counts the $((2 * N)) handler drops; host0 none" \
  stats "drops('wire0')['handler_drop'] == $((2 * N)) and drops('host0')['handler_drop'] == 0"
check "xor-7002 processed exactly the $((2 * N)) datagrams, none dropped/failed/invalid" \
  stats "ectx('xor-7002')['packets'] == $((2 * N)) and [ectx('xor-7002')[k] for k in ('dropped', 'failed', 'invalid')] == [0, 0, 0]"
check "no drops other than the filter's" \
  stats "all(v == 0 for p in s['ports'] for k, v in p['drops'].items() if k != 'handler_drop')"

it_finish
