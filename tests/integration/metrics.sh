#!/usr/bin/env bash
# metrics: spinnicd's Prometheus endpoint (--metrics_listen, docs/metrics.md)
# against the real spinnicd, no root needed.
#
# spinnicd runs on two unpaired net_ring ports (each sends into its own RX:
# a frame spinnicd transmits comes back and is dropped as no_route), with
# DiAD on and a peer nobody plays: a remote write to it makes DiAD traffic
# (retransmissions) that ends when the peer is declared down, so the counters
# come to rest. Then `spinctl --json stats`, a scrape, `spinctl --json stats`
# again: the exposition format parses strictly (prom_check.py format) and
# every compared value lies between the two stats (equal to both at a
# stopped moment). Bad input: a port in use (exit 1, one message naming the
# port and the fix), a non-loopback address without TLS (exit 2).
#
# usage: metrics.sh SPINNICD SPINCTL
# shellcheck disable=SC2034  # used by lib.sh
TEST_NAME=metrics
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
it_init "$@"
[[ $# -ge 2 ]] || die "usage: $0 SPINNICD SPINCTL"
it_spinctl_init "$2"
PROM=$IT_DIR/prom_check.py
CFG=$TMP/config.textproto
cat >"$CFG" <<EOF
# spinnic integration test $TEST_NAME (generated)
eal_args: ["--no-huge", "-m", "256", "--no-pci", "--file-prefix", "$FILE_PREFIX"]
ports { name: "p0" vdev: "net_ring0" role: PORT_ROLE_WIRE }
ports { name: "p1" vdev: "net_ring1" role: PORT_ROLE_HOST }
workers: [1]
main_lcore: 0
addresses { diad_node: "fd00:d1ad::1" mac: "02:00:00:00:00:01" }
diad { rto_us: 200 rto_max_us: 1000 max_retries: 3 }
handlers { name: "count-ip6" kind: "count" match { ethertype: 0x86dd } }
EOF

free_port() {
  "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# scrape FILE: GET /metrics into FILE; status in RC.
scrape() {
  "$PY" - "$MPORT" "$1" <<'EOF'
import sys, urllib.request
with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=5) as r:
    assert r.status == 200, r.status
    open(sys.argv[2], "wb").write(r.read())
EOF
  RC=$?
}

# --- bad input, nothing started ----------------------------------------------
"$SPINNICD" --config "$CFG" --control_socket "" --metrics_listen 0.0.0.0:9470 \
  >"$TMP/bad.out" 2>"$TMP/bad.err" </dev/null
RC=$?
check "non-loopback --metrics_listen without TLS: exit 2, names loopback and TLS" eval \
  'rc_is 2 && grep -q "metrics_listen: .0.0.0.0:9470. is not a loopback address" "$TMP/bad.err" && grep -q -- "--control_tls_cert" "$TMP/bad.err"'
"$SPINNICD" --config "$CFG" --control_socket "" --metrics_listen 127.0.0.1 \
  >"$TMP/bad.out" 2>"$TMP/bad.err" </dev/null
RC=$?
check "--metrics_listen without a port: exit 2" eval 'rc_is 2 && grep -q "has no port" "$TMP/bad.err"'

# A port in use: held by this test.
BUSY=$(free_port)
"$PY" -c 'import socket,sys,time
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); open(sys.argv[2], "w").close(); time.sleep(60)' \
  "$BUSY" "$TMP/busy.ready" &
BUSY_PID=$!
IT_BG+=("$BUSY_PID")
wait_file "$TMP/busy.ready" 10 || die "could not hold port $BUSY"
timeout 60 "$SPINNICD" --config "$CFG" --control_socket "" --duration_s 30 \
  --metrics_listen "127.0.0.1:$BUSY" >"$TMP/busy.out" 2>"$TMP/busy.err" </dev/null
RC=$?
check "metrics port in use: exit 1" rc_is 1
check "metrics port in use: one message naming the port and the fix" eval \
  '[[ $(grep -c "metrics endpoint: cannot listen on 127.0.0.1:$BUSY" "$TMP/busy.err") -eq 1 ]] && grep -q -- "pass another --metrics_listen port" "$TMP/busy.err"'
kill "$BUSY_PID" 2>/dev/null
wait "$BUSY_PID" 2>/dev/null

# --- the endpoint ----------------------------------------------------------------
MPORT=$(free_port)
it_start_spinnicd "$CFG" --control_socket "$SOCK" --metrics_listen "127.0.0.1:$MPORT"
it_wait_spinctl
grep -q "metrics on http://127.0.0.1:$MPORT/metrics" "$TMP/spinnicd.err" ||
  fail "no start-up line naming the metrics address"

sc peer-add b fd00:d1ad::2 02:00:00:00:00:02
check "peer-add b: exit 0" rc_is 0
sc region-register --length 65536 --access local_read,local_write --name buf
check "region-register: exit 0" rc_is 0
# Nobody answers: retransmissions, then the peer is down and the write fails.
sc --timeout_ms 20000 remote-write b 1 0x1000 --data hello
check "remote-write to a peer nobody plays fails (exit 1)" rc_is 1

# Wait until the counters are at rest: two stats 300 ms apart equal in the
# port counters (bounded: 30 s).
rest=0
for ((i = 0; i < 100; i++)); do
  sc --json stats && cp "$TMP/cmd.out" "$TMP/a.json"
  sleep 0.3
  sc --json stats && cp "$TMP/cmd.out" "$TMP/b.json"
  if "$PY" -c 'import json,sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
sys.exit(0 if a["ports"] == b["ports"] and a["diad"] == b["diad"] else 1)' "$TMP/a.json" "$TMP/b.json"; then
    rest=1
    break
  fi
done
check "the traffic came to rest within 30 s" eval '[[ $rest -eq 1 ]]'

sc --json stats && cp "$TMP/cmd.out" "$TMP/s1.json"
scrape "$TMP/metrics.txt"
check "GET /metrics: 200" rc_is 0
sc --json stats && cp "$TMP/cmd.out" "$TMP/s2.json"

"$PY" "$PROM" format "$TMP/metrics.txt" >"$TMP/format.out" 2>&1
RC=$?
check "the exposition format parses strictly (TYPE for every metric, counters *_total)" rc_is 0
"$PY" "$PROM" compare "$TMP/metrics.txt" "$TMP/s1.json" "$TMP/s2.json" >"$TMP/compare.out" 2>&1
RC=$?
check "every compared value equals spinctl --json stats at the same moment" rc_is 0
log "$(tail -n 1 "$TMP/compare.out")"
check "traffic happened: p0 sent and received, DiAD sent, drops no_route" \
  "$PY" -c 'import json,sys
s = json.load(open(sys.argv[1]))
p0 = s["ports"][0]; d = {c["name"]: int(c["value"]) for c in s["diad"]}
sys.exit(0 if int(p0["tx_packets"]) > 0 and int(p0["rx_packets"]) > 0 and int(p0["drops"]["no_route"]) > 0 and d["tx_data"] > 0 else 1)' "$TMP/s1.json"
check "per-port, per-queue, per-HPU, per-handler, per-region, per-peer families and the histograms' buckets are there" eval \
  'grep -q "^spinnic_port_rx_packets_total{port=\"p0\"} " "$TMP/metrics.txt" &&
   grep -q "^spinnic_hpu_loops_total{.*hpu=\"0\"" "$TMP/metrics.txt" &&
   grep -q "^spinnic_handler_invocations_total{handler=\"count-ip6\"" "$TMP/metrics.txt" &&
   grep -q "^spinnic_region_bytes{.*name=\"buf\".*} 65536$" "$TMP/metrics.txt" &&
   grep -q "^spinnic_diad_peer_tx_packets_total{peer=\"b\"} [1-9]" "$TMP/metrics.txt" &&
   grep -q "^spinnic_diad_peer_up{peer=\"b\"} 0$" "$TMP/metrics.txt" &&
   grep -q "^# TYPE spinnic_handler_cycles_per_invocation histogram$" "$TMP/metrics.txt" &&
   grep -q "^spinnic_handler_cycles_per_invocation_bucket{.*le=\"1024\"" "$TMP/metrics.txt" &&
   grep -q "^spinnic_diad_rtt_seconds_bucket{le=\"0.001024\"}" "$TMP/metrics.txt" &&
   grep -q "^spinnic_port_hpu_rx_packets_total{.*port=\"p0\".*rx_queue=\"0\"" "$TMP/metrics.txt"'
# The checker itself rejects what it must (so a pass above means something).
printf '# TYPE x counter\nx 1\ny{a="1"} 2\n' >"$TMP/badfmt.txt"
"$PY" "$PROM" format "$TMP/badfmt.txt" >/dev/null 2>&1
RC=$?
check "the checker refuses a counter without _total and a sample without TYPE" rc_is 1
if command -v promtool >/dev/null; then
  promtool check metrics <"$TMP/metrics.txt" >"$TMP/promtool.out" 2>&1
  RC=$?
  check "promtool check metrics accepts it" rc_is 0
else
  log "promtool not installed: not run (Debian package prometheus)"
fi

it_stop_spinnicd TERM
check "spinnicd exits 0 on SIGTERM" eval '[[ $SPN_RC -eq 0 ]]'
it_finish
