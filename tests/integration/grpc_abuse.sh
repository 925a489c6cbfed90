#!/usr/bin/env bash
# grpc_abuse: hostile clients against the real spinnicd's control API, over
# its Unix socket and over TCP with mutual TLS at once (issue 20, item 3).
# spinnicd runs on two net_null ports with DiAD and RoCE on, so every service
# is live; no root, namespaces or hugepages.
#
#  1. warm-up: grpc_abuse with half the requests from as many clients (gRPC's pools,
#     thread stacks and arenas reach their working size); RSS read.
#  2. the run: grpc_abuse with 10,000 random / corrupt / raw / empty requests
#     spread over every RPC of Spinnic, DiadService, RoceService and Health
#     from 100 concurrent clients (one connection each), 40 never-read
#     streams per transport cancelled after a second, oversized requests;
#     then a second grpc_abuse that opens never-read streams and _exit()s.
#     grpc_abuse itself fails on any call without a proper status (see its
#     header) and on any health probe that is not SERVING.
#  3. after: health SERVING, RSS within RSS_TOLERANCE_KB of the warm-up's,
#     a handler installed, counting frames that the appliance still forwards,
#     and spinnicd stopping cleanly on SIGTERM (a handler thread still stuck
#     in a dropped stream would block its shutdown).
#  4. a flood, against a second spinnicd with --control_memory_mb 256: 32
#     clients send a 32 MB request each at once over its Unix socket; every
#     one ends RESOURCE_EXHAUSTED (or UNAVAILABLE, its connection reclaimed)
#     and its peak memory grows at most 256 + 128 MiB, not by the 1 GiB sent.
#
# usage: grpc_abuse.sh SPINNICD SPINCTL GRPC_ABUSE
# GRPC_ABUSE_HEAVY=1: 100,000 requests and 200 clients, three rounds.
# shellcheck disable=SC2034  # used by lib.sh
TEST_NAME=grpc_abuse
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
it_init "$@"
[[ $# -ge 3 ]] || die "usage: $0 SPINNICD SPINCTL GRPC_ABUSE"
it_spinctl_init "$2"
ABUSE=$(readlink -f "$3")
[[ -x $ABUSE ]] || die "grpc_abuse not found at $3"
command -v openssl >/dev/null || { echo "[$TEST_NAME] SKIP: openssl missing"; exit 77; }

# Growth of spinnicd's RSS (without the EAL's memory) allowed between the
# warm-up and the end. spinnicd trims its heap every 5 s, but fragmentation
# and gRPC's per-connection state leave some behind: seen +42..+58 MB after
# one CI round (docs/control-security.md, "Abuse test"), so a band.
RSS_TOLERANCE_KB=${RSS_TOLERANCE_KB:-98304}
if [[ ${GRPC_ABUSE_HEAVY:-0} == 1 ]]; then
  REQUESTS=100000 CLIENTS=200 ROUNDS=3
else
  REQUESTS=10000 CLIENTS=100 ROUNDS=1
fi
REQUESTS=${GRPC_ABUSE_REQUESTS:-$REQUESTS}
ROUNDS=${GRPC_ABUSE_ROUNDS:-$ROUNDS}

CFG=$TMP/config.textproto
it_write_null_config "$CFG"
cat >>"$CFG" <<'EOF'
addresses { diad_node: "fd00:d1ad::1" mac: "02:00:00:00:00:01" ipv4: "192.0.2.11" ipv6: "fd00::11" }
diad { rto_us: 200 rto_max_us: 1000 max_retries: 3 }
roce { path_mtu: 1024 max_qps: 16 listen_ports: [7471] }
EOF

PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
(
  cd "$TMP" || exit 1
  ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  openssl req -x509 "${ec[@]}" -days 2 -subj "/CN=spinnic abuse CA" -keyout ca.key -out ca.pem
  openssl req "${ec[@]}" -subj "/CN=localhost" -keyout server.key -out server.csr
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >server.ext
  openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
    -extfile server.ext -out server.pem
  openssl req "${ec[@]}" -subj "/CN=abuser" -keyout client.key -out client.csr
  openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
    -out client.pem
) >"$TMP/openssl.log" 2>&1 || die "openssl could not make test certificates: $(tail -5 "$TMP/openssl.log")"

it_start_spinnicd "$CFG" --control_socket "$SOCK" --control_tcp "127.0.0.1:$PORT" \
  --control_tls_cert "$TMP/server.pem" --control_tls_key "$TMP/server.key" \
  --control_tls_client_ca "$TMP/ca.pem"
it_wait_spinctl
log "spinnicd answers health checks (unix:$SOCK, tls 127.0.0.1:$PORT)"

abuse() {
  "$ABUSE" --target "unix:$SOCK,127.0.0.1:$PORT" --tls_ca "$TMP/ca.pem" \
    --tls_cert "$TMP/client.pem" --tls_key "$TMP/client.key" \
    ${GRPC_ABUSE_ONLY:+--only "$GRPC_ABUSE_ONLY"} "$@"
}
# rss_kb: spinnicd's RSS without the EAL's memory (--no-huge: the
# /memfd:nohuge mapping; hugepages otherwise). That memory is reserved at
# start (-m 256) and its pages stay resident once touched (regions, mbufs):
# bounded by the config, and reported separately.
rss_kb() {
  awk '/^[0-9a-f]+-[0-9a-f]+ / {eal = ($6 ~ /^\/memfd:nohuge|hugepages|rtemap/)}
       /^Rss:/ {if (eal) e += $2; else r += $2}
       END {print r}' "/proc/$SPN_PID/smaps"
}
# rss_detail: where the RSS is (the largest mappings), for the log.
rss_detail() {
  awk '/^[0-9a-f]+-[0-9a-f]+ / {name = ($6 == "" ? "[anon]" : $6)}
       /^Rss:/ {rss[name] += $2}
       END {for (n in rss) if (rss[n] >= 4096) printf "%s=%dkB ", n, rss[n]}' \
    "/proc/$SPN_PID/smaps"
  awk '/^Threads:/ {print "threads=" $2}' "/proc/$SPN_PID/status"
}
# settle: let cancelled streams end, the server's threads go idle and spinnicd
# trim its heap (every 5 s).
settle() { sleep 6; }

abuse --requests $((REQUESTS / 2)) --clients "$CLIENTS" --seed 1 --summary "$TMP/warmup.json" \
  >"$TMP/warmup.out" 2>"$TMP/warmup.err"
check "warm-up: grpc_abuse exits 0" eval '[[ $? -eq 0 ]] || { tail -40 "$TMP/warmup.out"; false; }'
settle
RSS0=$(rss_kb)
log "RSS after the warm-up: $RSS0 kB ($(rss_detail))"

for ((round = 1; round <= ROUNDS; round++)); do
  abuse --requests "$REQUESTS" --clients "$CLIENTS" --seed $((round + 1)) \
    --summary "$TMP/abuse$round.json" >"$TMP/abuse$round.out" 2>"$TMP/abuse$round.err"
  rc=$?
  cat "$TMP/abuse$round.out"
  check "round $round: $REQUESTS requests from $CLIENTS clients over unix and TLS, every one a proper status, health SERVING throughout" \
    eval "[[ $rc -eq 0 ]]"
  # The client's own verdict lines, where a log viewer that shows only the
  # end of the output still sees what failed.
  if [[ $rc -ne 0 ]]; then
    mapfile -t verdict < <(grep -E '^(FAILURE|HEALTH|calls:|methods:)' "$TMP/abuse$round.out" | head -20)
    for line in "${verdict[@]}"; do log "round $round: $line"; done
    [[ -s $TMP/abuse$round.err ]] && log "round $round stderr: $(tail -3 "$TMP/abuse$round.err" | tr '\n' ' ')"
  fi
  abuse --abandoned 20 --abandon_and_exit >"$TMP/exit$round.out" 2>&1
  check "round $round: a client leaving with never-read streams open" eval '[[ $? -eq 0 ]]'
  check "round $round: spinnicd still running" spinnicd_alive
  settle
  RSS=$(rss_kb)
  log "RSS after round $round: $RSS kB (warm-up $RSS0 kB, tolerance $RSS_TOLERANCE_KB kB; $(rss_detail))"
done
check "RSS back to its level: $RSS kB <= $RSS0 + $RSS_TOLERANCE_KB kB" \
  eval "[[ $RSS -le $((RSS0 + RSS_TOLERANCE_KB)) ]]"

# --- after: still healthy, still forwarding, still obeying -------------------
sc health
check "health after: SERVING" eval 'rc_is 0 && out_has "^SERVING$"'
"$SPINCTL" --target "127.0.0.1:$PORT" --tls_ca "$TMP/ca.pem" --tls_cert "$TMP/client.pem" \
  --tls_key "$TMP/client.key" health --service spinnic.v1.Spinnic >"$TMP/cmd.out" 2>"$TMP/cmd.err"
RC=$?
check "health over TLS after: SERVING" eval 'rc_is 0 && out_has "SERVING$"'
sc handlers --json
check "nothing left installed by the abuse" py 'not d.get("handlers")'
sc install --name legit --kind count
check "a legitimate install succeeds" eval 'rc_is 0 && out_has "^id: [0-9]+$"'
sc stats --json
before=$("$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["ports"][1]["tx_packets"] if "tx_packets" in d["ports"][1] else 0)' "$TMP/cmd.out")
sleep 1
sc stats --json
check "the appliance still forwards p0 -> p1" \
  py "int(d['ports'][1].get('tx_packets', 0)) > $before"
check "the legitimate handler sees frames" \
  py 'any(h["name"] == "legit" and int(h.get("packets", 0)) > 0 for h in d["handlers"])'
sc remove legit
check "and is removed" rc_is 0

it_stop_spinnicd TERM 30
check "spinnicd stops on SIGTERM with exit 0 (no handler thread left stuck)" eval '[[ $SPN_RC -eq 0 ]]'
if grep -Eq 'AddressSanitizer|runtime error|terminate called|Segmentation' "$TMP/spinnicd.err"; then
  fail "spinnicd's stderr reports a crash: $(grep -Em3 'AddressSanitizer|runtime error|terminate called|Segmentation' "$TMP/spinnicd.err")"
fi
# --- a flood of oversized requests: memory bounded by the quota -------------
# gRPC receives the whole of an oversized request before it refuses it, so
# FLOOD_CLIENTS clients sending FLOOD_MB at once would grow spinnicd by their
# sum (1 GiB here) without --control_memory_mb. A second spinnicd, with a
# 256 MiB quota (the first ran the default, 1 GiB, under the rounds above),
# over its Unix socket; its peak memory (VmHWM) may grow by the quota and
# gRPC's slack, not by the flood.
FLOOD_CLIENTS=${FLOOD_CLIENTS:-32} FLOOD_MB=${FLOOD_MB:-32} QUOTA_MB=256
it_write_null_config "$CFG"
it_start_spinnicd "$CFG" --control_socket "$SOCK" --control_memory_mb "$QUOTA_MB"
it_wait_spinctl
hwm_kb() { awk '/^VmHWM:/ {print $2}' "/proc/$SPN_PID/status"; }
HWM0=$(hwm_kb)
"$ABUSE" --target "unix:$SOCK" --requests 0 --abandoned 0 \
  --flood_clients "$FLOOD_CLIENTS" --flood_bytes $((FLOOD_MB << 20)) \
  >"$TMP/flood.out" 2>&1
rc=$?
grep -A3 '^flood' "$TMP/flood.out"
check "flood: $FLOOD_CLIENTS clients sending $FLOOD_MB MB each at once, every one RESOURCE_EXHAUSTED (or its connection reclaimed)" \
  eval "[[ $rc -eq 0 ]] || { tail -20 '$TMP/flood.out'; false; }"
HWM1=$(hwm_kb)
log "peak RSS (VmHWM) before the flood $HWM0 kB, after $HWM1 kB; the flood sent $((FLOOD_CLIENTS * FLOOD_MB)) MB"
check "flood: spinnicd's peak memory grew at most the $QUOTA_MB MiB quota + 128 MiB ($(((HWM1 - HWM0) >> 10)) MiB)" \
  eval "[[ $((HWM1 - HWM0)) -le $(((QUOTA_MB + 128) << 10)) ]]"
sc health
check "flood: health after: SERVING" eval 'rc_is 0 && out_has "^SERVING$"'
it_stop_spinnicd TERM 30
check "flood: spinnicd stops on SIGTERM with exit 0" eval '[[ $SPN_RC -eq 0 ]]'

it_finish
