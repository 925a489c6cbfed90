#!/bin/bash
# Interop against real Linux soft-RoCE (rdma_rxe) clients: spinnicd on the
# free end of a veth in the rxe-peer network namespace, one client guest
# (192.0.2.12, booted by /work/shared/tools/rxe-peer/run_peer.sh under qemu)
# running a command file against the appliance at 192.0.2.11. See
# docs/interop.md.
#
#   interop.sh CASE SPINNICD SPINCTL
#
# CASE  verbs     ARP + NDP resolution, rdma_cm connect, WRITE, WRITE WITH
#                 IMMEDIATE, FETCH_ADD, CMP_SWAP, READ, bad rkey, SEND (a
#                 roce_send event).
#       perftest  ib_write_bw -R and ib_read_bw -R against the appliance's
#                 perftest server (roce.perftest_port).
#       rping     rping -c (the appliance's rping server, roce.rping_port)
#                 and rxe_ops -c (REP private data, SEND WITH IMMEDIATE,
#                 WRITE WITH IMMEDIATE, atomics, READ, SEND).
#       naaice    naaice_client (ours, docs/naaice.md) offloads vector_sum,
#                 matvec and add1 to the NAAICE port 12345, results checked.
#       tools     the RDMA tools users run first (guest_tools.sh):
#                 ib_write_bw -a, ib_write_lat, ib_send_bw, ib_read_bw,
#                 ib_send_lat, ib_read_lat, ib_atomic_lat, --report_gbits, -q 4, -b,
#                 ib_read_bw -a, ib_send_bw -a, rdma_client, udaddy,
#                 cmtime, rping -S 65536 -C 1000 (IPv4, IPv6), eight
#                 clients at once, CYCLES connect/disconnect cycles,
#                 ib_write_bw and rping killed mid-transfer and run again;
#                 each its tool's exit 0 and result row, and the
#                 appliance's state after the guest: no QP left, no QP
#                 error, its mbuf pools back to their level before.
#       many2     two client guests at once (cli 192.0.2.12, cli2
#                 192.0.2.13, guest_many2.sh): each runs 2 x rping -C 50
#                 -V, ib_write_bw -R -n 200, rdma_client and naaice_client
#                 together; each tool's own success, then the appliance as
#                 after tools, and no NAAICE region left (DPDK heap).
#       cnp       congestion notification packets to rxe (issue 21):
#                 ib_write_bw -R -T 3 (every packet CE-marked) against the
#                 appliance with roce.congestion on: it sends CNPs to the
#                 client's QP; they decode as valid CNPs (ICRC ok) in the
#                 capture, rxe drops them quietly, the client's run
#                 completes like the unmarked reference run.
#
# Exit: 0 pass, 1 fail, 77 skip (meson). Everything started here is stopped
# at exit and the namespace deleted; every wait is bounded. The run directory
# (guest output, console, pcap of the bridge and its `spinctl decode`,
# spinnicd logs) stays in /tmp/spinnic-interop/CASE for the next look.
# INTEROP_NETNS and INTEROP_RUN_DIR give a run its own namespace (and DPDK
# file prefix) and run directory.

set -uo pipefail

CASE=${1:-}
SPINNICD=${2:-}
SPINCTL=${3:-}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PEER_DIR=${RXE_PEER_DIR:-/work/shared/tools/rxe-peer}
RUN_PEER=$PEER_DIR/run_peer.sh
export RXE_BASE=${RXE_BASE:-/tmp/rxe}
# Our own namespace: other people's rxe-peer runs use the default "rxe".
# INTEROP_NETNS gives a run its own namespace and DPDK file prefix, so that
# two runs (or the NAAICE demo) on one machine leave each other alone.
export RXE_NETNS=${INTEROP_NETNS:-spn-interop}
export RXE_BRIDGE=br-rxe
# The tools case runs some thirty clients in one guest, rping's 2 x 1,000
# iterations of 64 KiB and 2 x 1,000 connect/disconnect cycles among them.
export RXE_TIMEOUT=${INTEROP_GUEST_TIMEOUT:-$(case $CASE in tools) echo 3000 ;; cnp | many2) echo 300 ;; *) echo 150 ;; esac)}
NS=$RXE_NETNS
RUN=${INTEROP_RUN_DIR:-/tmp/spinnic-interop}/$CASE
SOCK=$RUN/ctl.sock
APPLIANCE_MAC=02:00:00:00:00:11

PASSED=0
FAILED=0
SPN_PID=
GUEST_PIDS=()
BG_PIDS=()
# The client guests: NAME IPV4/24 IPV6/64 each. many2 boots a second one.
GUESTS=("cli 192.0.2.12/24 fd00:1::12/64")
[[ $CASE == many2 ]] && GUESTS+=("cli2 192.0.2.13/24 fd00:1::13/64")
# The guest whose output the checks read (many2 checks each in turn).
GUEST=

log() { echo "[interop-$CASE $(date +%T)]${GUEST:+ $GUEST:} $*"; }
pass() { log "PASS: $*"; PASSED=$((PASSED + 1)); }
fail() { log "FAIL: $*"; FAILED=$((FAILED + 1)); }
skip() { log "SKIP: $*"; exit 77; }

cleanup() {
  local rc=$? p
  trap - EXIT INT TERM
  for p in "${GUEST_PIDS[@]}"; do
    # NAME.pid is run_peer's subshell; its child is `timeout qemu`, which
    # passes the signal on to qemu.
    pkill -TERM -P "$p" 2>/dev/null
    kill "$p" 2>/dev/null
  done
  for p in "${BG_PIDS[@]}"; do kill "$p" 2>/dev/null; done
  if [[ -n $SPN_PID ]] && kill -0 "$SPN_PID" 2>/dev/null; then
    kill -TERM "$SPN_PID" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$SPN_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$SPN_PID" 2>/dev/null
  fi
  for p in "${BG_PIDS[@]}" $SPN_PID; do wait "$p" 2>/dev/null; done
  "$RUN_PEER" clean >/dev/null 2>&1
  rm -rf "/var/run/dpdk/$NS" 2>/dev/null
  if [[ $rc -ne 0 && $rc -ne 77 && -d $RUN ]]; then
    log "run directory kept: $RUN"
    for p in "${GUESTS[@]}"; do
      p=${p%% *}
      [[ -s $RUN/$p/out.log ]] && { echo "----- $p: guest output"; tail -n 60 "$RUN/$p/out.log"; }
    done
    [[ -s $RUN/spinnicd.err ]] && { echo "----- spinnicd.err"; tail -n 20 "$RUN/spinnicd.err"; }
  fi
  exit "$rc"
}

# ---- preconditions: anything missing is a skip, not a failure -------------
case $CASE in verbs | perftest | rping | naaice | tools | many2 | cnp) ;; *) echo "usage: $0 verbs|perftest|rping|naaice|tools|many2|cnp SPINNICD SPINCTL" >&2; exit 2 ;; esac
[[ -x $SPINNICD && -x $SPINCTL ]] || { echo "spinnicd/spinctl not found" >&2; exit 1; }
SPINNICD=$(readlink -f "$SPINNICD")
SPINCTL=$(readlink -f "$SPINCTL")
[[ $(id -u) -eq 0 ]] || skip "needs root (network namespace, tap, qemu)"
[[ -x $RUN_PEER ]] || skip "rxe-peer not found at $PEER_DIR (set RXE_PEER_DIR)"
[[ -f $RXE_BASE/rootfs.img && -f $RXE_BASE/vmlinuz ]] ||
  skip "no rxe guest image in $RXE_BASE: run $RUN_PEER build (about 2 min, 2 GB)"
for t in qemu-system-x86_64 tcpdump ip gcc; do
  command -v $t >/dev/null || skip "'$t' missing"
done
[[ -f /usr/include/infiniband/verbs.h && -f /usr/include/rdma/rdma_cma.h ]] ||
  skip "libibverbs-dev / librdmacm-dev missing (roce_verbs_client is built on the host)"

trap cleanup EXIT
trap 'log interrupted; exit 130' INT
trap 'log terminated; exit 143' TERM

rm -rf "$RUN"
mkdir -p "$RUN"
"$RUN_PEER" clean >/dev/null 2>&1 # leftovers of a killed run

# ---- the client binary, built here, run in the guest from /share ----------
gcc -O2 -Wall -o "$RUN/roce_verbs_client" "$HERE/roce_verbs_client.c" -lrdmacm -libverbs \
  2>"$RUN/gcc.err" || { cat "$RUN/gcc.err"; fail "roce_verbs_client does not build"; exit 1; }
gcc -O2 -Wall -o "$RUN/naaice_client" "$HERE/naaice_client.c" -lrdmacm -libverbs \
  2>"$RUN/gcc.err" || { cat "$RUN/gcc.err"; fail "naaice_client does not build"; exit 1; }

# ---- network: namespace, bridge, veth spnio0 (free end for af_packet) -----
"$RUN_PEER" veth spnio0 >"$RUN/net.log" 2>&1 || { cat "$RUN/net.log"; fail "veth setup"; exit 1; }
# Nothing in the namespace may own the appliance's addresses: the kernel
# would answer RoCE with ICMP port unreachable.
ip netns exec "$NS" tcpdump -i "$RXE_BRIDGE" --immediate-mode -s 0 -U -n \
  -w "$RUN/capture.pcap" >"$RUN/tcpdump.log" 2>&1 &
BG_PIDS+=($!)

# ---- spinnicd in the namespace ---------------------------------------------
sed "s/\"spn-interop\"/\"$NS\"/" "$HERE/spinnicd.textproto" >"$RUN/spinnicd.textproto"
if [[ $CASE == cnp ]]; then
  # DCQCN's notification point: CNPs for CE-marked packets, at most one
  # per QP per 50 us.
  sed -i 's/^roce {$/roce {\n  congestion { enabled: true }/' "$RUN/spinnicd.textproto"
fi
ip netns exec "$NS" "$SPINNICD" --config "$RUN/spinnicd.textproto" \
  --control_socket "$SOCK" --stats_json "$RUN/stats.json" --duration_s $((RXE_TIMEOUT + 300)) \
  >"$RUN/spinnicd.out" 2>"$RUN/spinnicd.err" </dev/null &
SPN_PID=$!
ok=
for _ in $(seq 300); do
  kill -0 "$SPN_PID" 2>/dev/null || break
  "$SPINCTL" --socket "$SOCK" --timeout_ms 2000 health >/dev/null 2>&1 && { ok=1; break; }
  sleep 0.1
done
[[ -n $ok ]] || { fail "spinnicd did not answer spinctl health within 30 s"; exit 1; }
log "spinnicd up (pid $SPN_PID)"

sc() { "$SPINCTL" --socket "$SOCK" --timeout_ms 5000 "$@"; }

sc region-register --length 65536 --name interop \
  --access local_read,local_write,remote_read,remote_write >"$RUN/region.txt" 2>&1 ||
  { cat "$RUN/region.txt"; fail "region-register"; exit 1; }
REGION_ID=$(awk '/^id:/{print $2}' "$RUN/region.txt")
RKEY=$(awk '/^rkey:/{print $2}' "$RUN/region.txt")
VA=$(awk '/^base_address:/{print $2}' "$RUN/region.txt")
[[ -n $REGION_ID && -n $RKEY && -n $VA ]] || { cat "$RUN/region.txt"; fail "region-register output"; exit 1; }
log "region $REGION_ID rkey $RKEY base $VA"

cp "$HERE/guest_lib.sh" "$RUN/guest_lib.sh"
cat >"$RUN/params" <<EOF
APPLIANCE=192.0.2.11
APPLIANCE6=fd00:1::11
RKEY=$RKEY
VA=$VA
NAAICE_PORT=12345
NAAICE_SIZE=${NAAICE_SIZE:-64}
NAAICE_RPCS=${NAAICE_RPCS:-8}
INSTALLED_CODE=40
TOOLS_ONLY="${TOOLS_ONLY:-all}"
TOOLS_SCALE=${TOOLS_SCALE:-1}
CYCLES=${CYCLES:-1000}
GUESTS="$(for g in "${GUESTS[@]}"; do printf '%s ' "${g%% *}"; done)"
EOF

if [[ $CASE == naaice ]]; then
  # Code 40 has no built-in function: a naaice_function ECTX installed over
  # gRPC gives it vector_sum (docs/naaice.md §7.5).
  printf '%s\n' 'name: "sum40" kind: "naaice_function"' \
    'params { key: "function" value: "vector_sum" }' \
    'roce { naaice_function: 40 }' >"$RUN/sum40.textproto"
  sc install --handler_file "$RUN/sum40.textproto" >"$RUN/install.txt" 2>&1 ||
    { cat "$RUN/install.txt"; fail "spinctl install of the naaice_function handler"; exit 1; }
fi

if [[ $CASE == verbs || $CASE == rping ]]; then
  sc events --json --timeout_ms 200000 >"$RUN/events.jsonl" 2>"$RUN/events.err" &
  BG_PIDS+=($!)
fi

# appliance_memory mempools|heaps: what spinnicd holds, a line each, over
# its DPDK telemetry socket (spinctl stats has no pool counts, and a DPDK
# secondary (dpdk-proc-info) cannot attach to a --no-huge process):
#   mempools  "NAME IN_USE SIZE", spinnic's command /spinnic/memory
#             (docs/counters.md; in_use leaves out the per-lcore caches:
#             mbufs held somewhere);
#   heaps     "NAME ALLOC_COUNT ALLOC_SIZE", DPDK's /eal/heap_list and
#             /eal/heap_info (rte_malloc: the regions NAAICE and perftest
#             connections allocate, docs/naaice.md).
appliance_memory() {
  python3 - "/var/run/dpdk/$NS/dpdk_telemetry.v2" "$1" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.settimeout(5)
s.connect(sys.argv[1])
s.recv(4096)  # the greeting
def ask(cmd):
    # The reply is keyed by the command without its parameter.
    s.send(cmd.encode())
    return json.loads(s.recv(65536))[cmd.split(",")[0]]
if sys.argv[2] == "mempools":
    for name, v in sorted(ask("/spinnic/memory")["mempools"].items()):
        print(name, v["in_use"], v["size"])
else:
    for i in ask("/eal/heap_list"):
        h = ask("/eal/heap_info,%d" % i)
        print("heap%s_%s" % (i, h["Name"]), h["Alloc_count"], h["Alloc_size"])
PY
}
if [[ $CASE == tools || $CASE == many2 ]]; then
  appliance_memory mempools >"$RUN/mempools_before.txt"
  appliance_memory heaps >"$RUN/heaps_before.txt"
fi

# ---- the guests --------------------------------------------------------------
log "booting ${#GUESTS[@]} client guest(s) (TCG: 15-40 s)"
# In the background (RXE_BG): qemu's pid (its `timeout` wrapper) lands in
# NAME.pid, so that a signal to this script ends the guests at once instead
# of waiting for a foreground child. All guests run the same command file.
for g in "${GUESTS[@]}"; do
  read -r name ip4 ip6 <<<"$g"
  RXE_BG=1 "$RUN_PEER" boot "$name" "$ip4" "$ip6" \
    "$HERE/guest_$CASE.sh" "$RUN" >>"$RUN/boot.log" 2>&1
  p=$(cat "$RUN/$name.pid" 2>/dev/null)
  [[ -n $p ]] || { cat "$RUN/boot.log"; fail "guest $name did not start"; exit 1; }
  GUEST_PIDS+=("$p")
done
for ((i = 0; i < (RXE_TIMEOUT + 30) * 10; i++)); do
  alive=
  for p in "${GUEST_PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
  [[ -n $alive ]] || break
  if [[ $CASE == many2 ]] && ((i % 10 == 0)); then
    # Once a second: the appliance's QPs and how many guests they serve
    # (REMOTE_IP, the third column of spinctl qps), into qps_samples.txt.
    sc qps 2>/dev/null | awk -v t="$(date +%T)" 'NR > 1 && NF > 3 { n++; ip[$3] } END { print t, n + 0, length(ip) }' \
      >>"$RUN/qps_samples.txt"
  fi
  sleep 0.1
done
for g in "${GUESTS[@]}"; do
  name=${g%% *}
  OUT=$RUN/$name/out.log
  [[ -s $OUT ]] || { tail -n 30 "$RUN/$name.console" 2>/dev/null; fail "no output from guest $name"; exit 1; }
  grep -q '^=== cmd rc=' "$OUT" || fail "guest $name: its command file did not finish"
done
OUT=$RUN/cli/out.log

sleep 1 # the last frames into the pcap
kill "${BG_PIDS[0]}" 2>/dev/null
wait "${BG_PIDS[0]}" 2>/dev/null
sc stats --json >"$RUN/stats_final.json" 2>/dev/null
if "$SPINCTL" decode "$RUN/capture.pcap" >"$RUN/capture.txt" 2>"$RUN/decode.err"; then
  log "pcap: $RUN/capture.pcap ($(wc -l <"$RUN/capture.txt") frames decoded in capture.txt)"
else
  log "pcap: $RUN/capture.pcap (spinctl decode failed: $(head -c 200 "$RUN/decode.err"))"
fi

has() { grep -Eq -- "$1" "$OUT"; }
# The command line the guest ran under LABEL ("=== LABEL: COMMAND").
command_of() { grep -m1 "^=== $1:" "$OUT" | cut -d: -f2- | cut -c2-; }
# Frames of the capture (spinctl decode's text) matching an extended regex.
frames() { grep -Ec -- "$1" "$RUN/capture.txt" 2>/dev/null; }
# A stats counter of the appliance's final `spinctl stats --json`.
counter() { grep -oE "\"$1\"[^0-9]*[0-9]+" "$RUN/stats_final.json" 2>/dev/null | grep -oE '[0-9]+$' | head -1; }
region_hex() { # OFFSET LENGTH -> lowercase hex without spaces
  sc region-read "$REGION_ID" --offset "$1" --length "$2" --raw 2>/dev/null | od -An -v -tx1 | tr -d ' \n'
}

# ---- checks ----------------------------------------------------------------
case_verbs() {
  if has "^arp4 192.0.2.11 .*lladdr $APPLIANCE_MAC"; then
    pass "ARP: the guest resolved 192.0.2.11 to $APPLIANCE_MAC ($(grep '^arp4' "$OUT"))"
  else
    fail "ARP: 192.0.2.11 not resolved to $APPLIANCE_MAC: $(grep '^arp4' "$OUT")"
  fi
  if has "^nd6 fd00:1::11 .*lladdr $APPLIANCE_MAC"; then
    pass "NDP: the guest resolved fd00:1::11 to $APPLIANCE_MAC"
  else
    fail "NDP: fd00:1::11 not resolved: $(grep '^nd6' "$OUT")"
  fi
  local step steps="connect write write_imm_small write_imm_large fetch_add_1 fetch_add_2
    cmp_swap_hit cmp_swap_miss read_large read_small bad_rkey disconnect"
  for step in $steps; do
    if has "^ok $step "; then
      pass "client $step: $(grep -m1 "^ok $step " "$OUT" | cut -c1-140)"
    else
      fail "client $step: $(grep -m1 -E "^FAIL $step " "$OUT" || echo 'no result line')"
    fi
  done
  # The diagnostic run (only when a stock step failed): what works once
  # the CM's PSNs are the kernel's way round. Logged, not counted.
  local region_verdict=check
  if has '^diag: '; then
    region_verdict=diag
    log "DIAG: the stock client failed; with the CM's PSNs exchanged:"
    for step in $steps; do
      log "DIAG   $(grep -m1 -E "^diag: (ok|FAIL) $step " "$OUT" | cut -c7-150 || echo "$step: no result line")"
    done
  fi
  # The appliance's side of the same operations, read over gRPC.
  verdict() { # OK DESC
    if [[ $region_verdict == diag ]]; then
      log "DIAG   appliance side: $2: $([[ $1 == 1 ]] && echo ok || echo BAD)"
    elif [[ $1 == 1 ]]; then pass "$2"; else fail "$2"; fi
  }
  local want got
  want=$(printf 'spinnic-interop!' | od -An -v -tx1 | tr -d ' \n')
  got=$(region_hex 0 16)
  verdict "$([[ $got == "$want" ]] && echo 1)" "region +0 holds the WRITE's 16 bytes (is $got)"
  # 0 + 5 + 7 = 12 and 0 -> 0x2222 (the miss leaves it), little-endian like
  # the host memory of a NIC (what the client's atomics returned agrees).
  got=$(region_hex 12288 8)
  verdict "$([[ $got == 0c00000000000000 ]] && echo 1)" "FETCH_ADD target is 12 (is $got)"
  got=$(region_hex 12296 8)
  verdict "$([[ $got == 2222000000000000 ]] && echo 1)" "CMP_SWAP target is 0x2222 (is $got)"
  got=$(region_hex 4096 4)
  verdict "$([[ $got == 11181f26 ]] && echo 1)" "WRITE WITH IMMEDIATE payload at +4096 (is $got)"
  local imms
  imms=$(grep -c '"name":"roce_write_imm"' "$RUN/events.jsonl" 2>/dev/null)
  verdict "$([[ ${imms:-0} -ge 2 ]] && echo 1)" "WRITE WITH IMMEDIATE events in spinctl events: ${imms:-0} of 2"
  verdict "$([[ $(frames 'nak=remote_access') -ge 1 ]] && echo 1)" \
    "the bad rkey drew a remote access error NAK on the wire"
  local qp_errors
  qp_errors=$(grep -c '"name":"roce_qp_error"' "$RUN/events.jsonl" 2>/dev/null)
  log "engine events: $(grep -c . "$RUN/events.jsonl" 2>/dev/null) ($qp_errors roce_qp_error)"
  if has '^ok send '; then
    pass "client send: $(grep -m1 '^ok send ' "$OUT")"
  else
    fail "client send: $(grep -m1 -E '^FAIL send ' "$OUT" || echo 'no result line'); $(frames 'aeth=RNR') RNR NAK frame(s)"
  fi
  # The SEND's bytes reach the control plane: "spinnic!" is 7370696e6e696321.
  local sends
  sends=$(grep '"name":"roce_send"' "$RUN/events.jsonl" 2>/dev/null | grep -c '"length":8')
  verdict "$([[ ${sends:-0} -ge 1 ]] && echo 1)" "the SEND arrived as a roce_send event of 8 bytes (${sends:-0})"
}

connected_via_cm() { [[ $(frames 'cm=REP') -ge 1 && $(frames 'cm=RTU|RC ') -ge 1 ]]; }
cm_summary() {
  echo "CM: $(frames 'cm=REQ') REQ, $(frames 'cm=REP') REP, $(frames 'cm=RTU') RTU; RC SENDs: $(frames 'RC Send'); NAKs: $(frames 'aeth=NAK') ($(frames 'aeth=RNR') RNR)"
}

case_perftest() {
  local tool
  for tool in ib_write_bw ib_read_bw; do
    if has "^$tool rc=0" && has "^$tool: .*[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+"; then
      pass "$tool -R completed: $(grep -A1 "^$tool: *#bytes" "$OUT" | tail -1 | tr -s ' \t' ' ')"
    else
      fail "$tool -R: $(grep -m1 "^$tool rc=" "$OUT"), $(grep -m1 -iE "^$tool: .*(error|fail|couldn|unable)" "$OUT" | cut -c1-160); $(cm_summary)"
    fi
  done
}

case_rping() {
  local i
  if has '^rping rc=0'; then
    pass "rping -C 3 -v exited 0"
  else
    fail "rping: $(grep -m1 '^rping rc=' "$OUT"); $(cm_summary)"
  fi
  # The client prints what our RDMA WRITE put into its sink buffer: the
  # bytes our RDMA READ fetched from its source buffer.
  for i in 0 1 2; do
    if has "^rping: ping data: rdma-ping-$i: "; then
      pass "rping iteration $i echoed: $(grep -m1 "^rping: ping data: rdma-ping-$i: " "$OUT" | cut -c1-60)"
    else
      fail "rping iteration $i: no 'ping data: rdma-ping-$i' line"
    fi
  done
  if has '^rxe_ops rc=0'; then
    pass "rxe_ops client exited 0"
  else
    fail "rxe_ops: $(grep -m1 '^rxe_ops rc=' "$OUT"); $(cm_summary)"
  fi
  local remote
  remote=$(grep -m1 -o 'remote addr=0x[0-9a-f]* rkey=0x[0-9a-f]*' "$OUT")
  if [[ -n $remote && $remote != *'addr=0x0 '* && $remote != *'rkey=0x0' ]]; then
    pass "rxe_ops read the REP private data: $remote"
  else
    fail "rxe_ops: REP private data: '${remote:-none}'"
  fi
  local op
  for op in SEND_WITH_IMM RDMA_WRITE_WITH_IMM RDMA_WRITE ATOMIC_FETCH_AND_ADD ATOMIC_CMP_AND_SWP RDMA_READ SEND; do
    if has "^rxe_ops: client: $op .* done"; then
      pass "rxe_ops $op done"
    else
      fail "rxe_ops $op: no 'done' line"
    fi
  done
  # Our region starts zeroed: FETCH_ADD returns 0, CMP_SWAP (compare
  # 0x1111) returns 0 and does not swap. (Its READ check prints MISMATCH:
  # it expects its own server's initial pattern, docs/interop.md.)
  if has '^rxe_ops: client: fetch_add returned 0$' && has '^rxe_ops: client: cmp_swap returned 0x0$'; then
    pass "rxe_ops atomics returned the zeroed region's 0 and 0x0"
  else
    fail "rxe_ops atomics: $(grep -E 'returned' "$OUT" | tr '\n' ' ')"
  fi
  local sends
  sends=$(grep -c '"name":"roce_send"' "$RUN/events.jsonl" 2>/dev/null)
  if grep '"name":"roce_send"' "$RUN/events.jsonl" 2>/dev/null | grep -q '"length":32' &&
    grep '"name":"roce_send"' "$RUN/events.jsonl" 2>/dev/null | grep -q '"length":8'; then
    pass "rxe_ops' SEND WITH IMMEDIATE (32 bytes) and SEND (8) arrived as roce_send events (${sends:-0} in all)"
  else
    fail "roce_send events for rxe_ops' SENDs: $(grep '"name":"roce_send"' "$RUN/events.jsonl" 2>/dev/null | head -3)"
  fi
}

case_naaice() {
  local fn
  for fn in vector_sum matvec add1; do
    if has "^$fn rc=0" && has "^$fn: naaice_client: $fn "; then
      pass "$fn: $(grep -m1 "^$fn: naaice_client:" "$OUT" | cut -c1-100), time_us: $(grep "^$fn: rpc " "$OUT" |
        sed -n 's/.*time_us=\([0-9]*\).*/\1/p' | tr '\n' ' ')"
    else
      fail "$fn: $(grep -m1 -E "^$fn: .*FAIL" "$OUT" | cut -c1-200) ($(grep -m1 "^$fn rc=" "$OUT"))"
    fi
  done
  if has "^installed rc=0" && has "^installed: naaice_client: vector_sum "; then
    pass "vector_sum under code 40 (a naaice_function handler installed over gRPC): $(grep -m1 "^installed: naaice_client:" "$OUT" | cut -c12-100)"
  else
    fail "code 40 (installed handler): $(grep -m1 -E "^installed: .*FAIL" "$OUT" | cut -c1-200) ($(grep -m1 "^installed rc=" "$OUT"))"
  fi
  log "appliance stats: $RUN/stats_final.json"
}

# The guest's wall-clock milliseconds of LABEL's run.
elapsed_ms() { grep -m1 "^$1 elapsed_ms=" "$OUT" | cut -d= -f2; }
# cmtime's row for STEP ("connect", "disconnect", ...) of LABEL, the last
# one: "total_ms max_ms min_us us_per_conn".
cmtime_row() { grep -E "^$1: $2 *: " "$OUT" | tail -1 | cut -d: -f3 | tr -s ' ' | sed 's/^ //'; }
cmtime_figures() { # LABEL -> "connect total X ms (Y us/conn), ..."
  local step r out=
  for step in "resolve addr" "resolve route" "create qp" connect disconnect destroy; do
    r=$(cmtime_row "$1" "$step")
    [[ -n $r ]] && out+="${out:+, }$step $(cut -d' ' -f1 <<<"$r") ms ($(cut -d' ' -f4 <<<"$r") us/conn, max $(cut -d' ' -f2 <<<"$r") ms)"
  done
  echo "$out"
}
# "rc=N" for a FAIL line; 124 is timeout's: the tool hung until its bound.
rc_text() { [[ ${1:-none} == 124 ]] && echo "rc=124 (hung until its bound)" || echo "rc=${1:-none}"; }
# The first error-looking line of LABEL's output.
first_error() { grep -m1 -iE "^$1: .*(error|fail|couldn|unable|not |mismatch|invalid)" "$OUT" | cut -c1-200; }
# Counts from a command line: -C N (rping) or -c N (cmtime).
opt_value() { sed -n "s/.* $2 \\([0-9]*\\).*/\\1/p" <<<"$1"; }

# Each run of the guest's output ($OUT), checked as its kind says.
check_tools() {
  local label rc row cmd ms n size sidr=0
  for label in $(grep -oE '^=== [a-z0-9_]+:' "$OUT" | cut -c5- | tr -d :); do
    rc=$(grep -m1 "^$label rc=" "$OUT" | cut -d= -f2)
    cmd=$(command_of "$label")
    ms=$(elapsed_ms "$label")
    case $label in
      rdma_*client*)
        # librdmacm's examples print no figures: "<tool>: end 0" is success.
        if [[ $rc == 0 ]] && has "^$label: rdma_x?client: end 0\$"; then
          pass "$label ($cmd): its SEND came back, end 0 (${ms:-?} ms)"
        else
          fail "$label ($cmd): $(rc_text "$rc"), $(grep -m1 -E "^$label: .*(end|error|fail)" "$OUT" | cut -c1-160); $(cm_summary)"
        fi
        ;;
      udaddy*)
        # No UD QPs: the clean outcome is udaddy's own report of our
        # SIDR_REP status 1 ("service ID not supported"), at once.
        sidr=$((sidr + 1))
        if has "^$label: udaddy: event: RDMA_CM_EVENT_UNREACHABLE, error: 1\$"; then
          pass "$label ($cmd): refused cleanly, RDMA_CM_EVENT_UNREACHABLE, SIDR status 1 (rc=$rc)"
        else
          fail "$label: no RDMA_CM_EVENT_UNREACHABLE with SIDR status 1: $(grep -m1 "^$label: udaddy: event" "$OUT" | cut -c1-160); $(rc_text "$rc")"
        fi
        ;;
      rping*)
        # rping prints nothing on success; -V makes the client compare
        # each iteration's sink (our WRITE) with its source (our READ).
        n=$(opt_value "$cmd" -C) size=$(opt_value "$cmd" -S)
        if [[ $rc == 0 ]] && [[ -z $(first_error "$label") ]]; then
          pass "$label ($cmd): ${n:-?} iterations of ${size:-64} bytes in ${ms:-?} ms ($((${ms:-0} / ${n:-1})) ms each)"
        else
          fail "$label ($cmd): $(rc_text "$rc"), $(first_error "$label") [$(grep -c "^$label: " "$OUT") output lines]; $(cm_summary)"
        fi
        if [[ $cmd == *" -v"* ]]; then
          # Each printed iteration is rping's whole buffer as a string:
          # size - 1 characters ("rdma-ping-N: " and its pattern) after
          # "ping data: ", its line shortened by vlen.sh to "... [N chars]".
          local lens want=$((${size:-64} - 1 + 11)) good
          lens=$(sed -n "s/^$label: ping data: rdma-ping-.*\.\.\. \[\([0-9]*\) chars\]\$/\1/p" "$OUT" | tr '\n' ' ')
          good=$(tr ' ' '\n' <<<"$lens" | grep -cx "$want")
          if [[ ${good:-0} -eq ${n:-0} && ${n:-0} -gt 0 ]]; then
            pass "$label: all $n printed iterations hold $((want - 11)) characters of ping data (rping's $size-byte buffer)"
          else
            fail "$label: ping data line lengths '${lens}' (want $n x $want: 'ping data: ' and $((want - 11)))"
          fi
        fi
        ;;
      cmtime)
        # cmtime prints one row per step: total ms, max ms, min us, us/conn.
        n=$(opt_value "$cmd" -c)
        if [[ $rc == 0 && -n $(cmtime_row "$label" connect) && -n $(cmtime_row "$label" disconnect) ]]; then
          pass "$label ($cmd): ${n:-?} connections: $(cmtime_figures "$label")"
        else
          fail "$label ($cmd): $(rc_text "$rc"), $(grep -m1 -iE "^$label: .*(event|error|fail)" "$OUT" | cut -c1-160); $(cm_summary)"
        fi
        ;;
      cycles_cmtime)
        local batches
        batches=$(grep -cE "^$label: disconnect *: " "$OUT")
        if [[ $rc == 0 && ${batches:-0} -ge 1 ]] && ! has "^$label: batch [0-9]+ failed"; then
          pass "$label: $batches x cmtime -c 100 = $((batches * 100)) connect/disconnect cycles in ${ms:-?} ms; connect totals (ms): $(grep -E "^$label: connect *: " "$OUT" | awk '{print $4}' | tr '\n' ' ')"
        else
          fail "$label: $(rc_text "$rc"), $batches batches done, $(grep -m1 -E "^$label: (batch|.*event|.*error)" "$OUT" | cut -c1-200)"
        fi
        ;;
      naaice*)
        # naaice_client checks every call's output itself and exits 0
        # when all were right.
        row=$(grep -m1 "^$label: naaice_client: " "$OUT" | cut -d: -f3- | cut -c2-)
        if [[ $rc == 0 && $row == *" RPCs correct "* ]]; then
          pass "$label ($cmd): $row; time_us: $(grep "^$label: rpc " "$OUT" |
            sed -n 's/.*time_us=\([0-9]*\).*/\1/p' | tr '\n' ' ')"
        else
          fail "$label ($cmd): $(rc_text "$rc"), $(grep -m1 -E "^$label: .*FAIL" "$OUT" | cut -c1-200)"
        fi
        ;;
      killed_*)
        # killmid.sh: killed with SIGKILL mid-transfer. What the appliance
        # made of it shows in the next run (*_after_kill) and in
        # check_appliance: no QP left, none in error, pools back.
        if [[ $rc == 0 ]] && has "^$label: killed: rc=137 started=yes"; then
          pass "$label ($cmd): killed mid-transfer: $(grep -m1 "^$label: killed: " "$OUT" | cut -d: -f3-)"
        else
          fail "$label ($cmd): $(rc_text "$rc"), $(grep -m1 "^$label: killed: " "$OUT" | cut -d: -f3-)"
        fi
        ;;
      cycles_*)
        n=$(sed -n "s/^$label: cycles: \\([0-9]*\\) of \\1 done\$/\\1/p" "$OUT")
        if [[ $rc == 0 && -n $n ]]; then
          pass "$label ($cmd): $n connect/disconnect cycles in ${ms:-?} ms ($((${ms:-0} / n)) ms each)"
        else
          fail "$label: $(rc_text "$rc"), $(grep -m1 -E "^$label: cycle [0-9]+ failed" "$OUT" | cut -c1-200)"
        fi
        ;;
      *)
        # perftest: the tool's last result row, "#bytes #iterations ...".
        row=$(grep -E "^$label: +[0-9]+ +[0-9]+ +[0-9.]+" "$OUT" | tail -1 | cut -d: -f2- | tr -s ' \t' ' ')
        if [[ $rc == 0 && -n $row ]]; then
          pass "$label ($cmd): $row"
        else
          fail "$label ($cmd): $(rc_text "$rc"), $(first_error "$label"); $(cm_summary)"
        fi
        ;;
    esac
  done
  if [[ $sidr -gt 0 ]]; then
    local refused
    refused=$(counter cm_sidr_refused)
    if [[ ${refused:-0} -ge $sidr ]]; then
      pass "the appliance answered ${refused} SIDR_REQs (cm_sidr_refused), $(frames ' cm=SIDR_REP .*sidr_status=1') SIDR_REPs with status 1 on the wire"
    else
      fail "cm_sidr_refused=${refused:-?} after $sidr udaddy runs"
    fi
  fi
}

# The appliance after the guests: no QP in error, none left, its mbuf pools
# back to their level before the guests booted.
check_appliance() {
  local qp_errors naks
  qp_errors=$(counter qp_errors) naks=$(counter naks_sent)
  log "appliance: qp_errors=${qp_errors:-?} naks_sent=${naks:-?} cm_connections=$(counter cm_connections) cm_rejects=$(counter cm_rejects); capture: $(cm_summary)"
  if [[ ${qp_errors:-1} == 0 ]]; then pass "no QP in the error state"; else fail "qp_errors=${qp_errors:-unknown}"; fi
  # Every client has gone: no QP may be left (polled: a disconnect's
  # DREQ/DREP may still be on its way when the guest powers off).
  for _ in $(seq 30); do
    sc qps >"$RUN/qps_final.txt" 2>&1
    grep -qx 'no queue pairs' "$RUN/qps_final.txt" && break
    sleep 1
  done
  if grep -qx 'no queue pairs' "$RUN/qps_final.txt"; then
    pass "spinctl qps: no queue pair left after the guest"
  else
    fail "spinctl qps: $(($(grep -c . "$RUN/qps_final.txt") - 1)) queue pair(s) left 30 s after the guest (qps_final.txt): $(sed -n 2,4p "$RUN/qps_final.txt" | tr -s ' ' | cut -c1-200 | tr '\n' ';')"
  fi
  # The mbuf pools are back where they were before the guest booted.
  appliance_memory mempools >"$RUN/mempools_after.txt"
  if [[ ! -s $RUN/mempools_before.txt || ! -s $RUN/mempools_after.txt ]]; then
    fail "mbuf pools: dpdk-proc-info gave no pool counts (proc-info.log)"
  else
    local name before size after diffs= summary=
    while read -r name before size; do
      after=$(awk -v n="$name" '$1 == n { print $2 }' "$RUN/mempools_after.txt")
      summary+="${summary:+, }$name ${before} -> ${after:-?} of $size in use"
      [[ ${after:-x} == "$before" ]] || diffs+=" $name"
    done <"$RUN/mempools_before.txt"
    if [[ -z $diffs ]]; then
      pass "mbuf pools back to their idle level: $summary"
    else
      fail "mbuf pools not back to their idle level ($diffs): $summary"
    fi
  fi
}

case_tools() {
  check_tools
  check_appliance
}

case_many2() {
  local g
  for g in "${GUESTS[@]}"; do
    GUEST=${g%% *}
    OUT=$RUN/$GUEST/out.log
    check_tools
  done
  GUEST=
  # The guests' clients overlapped: from each guest's first CM REQ to its
  # last DREQ (capture times), every span includes the latest start.
  local ip spans= start end max_start=0 min_end=
  for g in "${GUESTS[@]}"; do
    read -r _ ip _ <<<"$g"
    ip=${ip%/*}
    start=$(awk -v ip="$ip" '$3 == ip && / cm=REQ / { print $2; exit }' "$RUN/capture.txt")
    end=$(awk -v ip="$ip" '$3 == ip && / cm=DREQ / { t = $2 } END { print t }' "$RUN/capture.txt")
    spans+="${spans:+, }${g%% *} ${start:-?}-${end:-?} s"
    [[ -n $start && -n $end ]] || continue
    awk -v a="$start" -v b="$max_start" 'BEGIN { exit !(a > b) }' && max_start=$start
    if [[ -z $min_end ]] || awk -v a="$end" -v b="$min_end" 'BEGIN { exit !(a < b) }'; then
      min_end=$end
    fi
  done
  local peak
  peak=$(sort -k2,2n "$RUN/qps_samples.txt" 2>/dev/null | tail -1)
  log "spinctl qps once a second: at most $(cut -d' ' -f2 <<<"$peak") QPs at once, of $(cut -d' ' -f3 <<<"$peak") guest(s) (at ${peak%% *}; qps_samples.txt)"
  if [[ -n $min_end ]] && awk -v a="$max_start" -v b="$min_end" 'BEGIN { exit !(a < b) }'; then
    pass "the guests' clients ran at the same time (first REQ to last DREQ: $spans)"
  else
    fail "the guests' clients did not overlap (first REQ to last DREQ: $spans)"
  fi
  check_appliance
  # NAAICE: each guest's session became ready and no call failed; every
  # region the sessions allocated (rte_malloc, freed with the QP) is gone:
  # the DPDK heaps hold what they held before the guests.
  local sessions calls errors
  sessions=$(counter naaice_sessions) calls=$(counter naaice_calls) errors=$(counter naaice_errors)
  if [[ ${sessions:-0} -ge ${#GUESTS[@]} && ${errors:-1} == 0 ]]; then
    pass "NAAICE: $sessions sessions, $calls calls, $errors errors"
  else
    fail "NAAICE: naaice_sessions=${sessions:-?} (want ${#GUESTS[@]}), naaice_calls=${calls:-?}, naaice_errors=${errors:-?}"
  fi
  appliance_memory heaps >"$RUN/heaps_after.txt"
  if [[ ! -s $RUN/heaps_before.txt || ! -s $RUN/heaps_after.txt ]]; then
    fail "DPDK heaps: telemetry gave no /eal/heap_info"
  elif cmp -s "$RUN/heaps_before.txt" "$RUN/heaps_after.txt"; then
    pass "DPDK heaps back to their level (no connection region left): $(tr '\n' ';' <"$RUN/heaps_after.txt")"
  else
    fail "DPDK heaps not back to their level: before $(tr '\n' ';' <"$RUN/heaps_before.txt") after $(tr '\n' ';' <"$RUN/heaps_after.txt")"
  fi
  # spinctl regions lists the registered regions (connection regions are
  # the QPs' own and not among them): logged.
  sc regions >"$RUN/regions_final.txt" 2>&1
  log "spinctl regions: $(tr -s ' ' <"$RUN/regions_final.txt" | tr '\n' ';')"
}

case_cnp() {
  local label row
  for label in write_bw_ce write_bw_plain; do
    row=$(grep -E "^$label: +[0-9]+ +[0-9]+ +[0-9.]+" "$OUT" | tail -1 | cut -d: -f2- | tr -s ' \t' ' ')
    if has "^$label rc=0" && [[ -n $row ]]; then
      pass "$label: $row"
    else
      fail "$label: $(grep -m1 "^$label rc=" "$OUT"), $(grep -m1 -iE "^$label: .*(error|fail|couldn|unable)" "$OUT" | cut -c1-160); $(cm_summary)"
    fi
  done
  local ce cnps held qp_errors
  ce=$(counter ecn_ce_received) cnps=$(counter cnp_sent) held=$(counter cnp_held) qp_errors=$(counter qp_errors)
  log "appliance: ecn_ce_received=${ce:-?} cnp_sent=${cnps:-?} cnp_held=${held:-?} qp_errors=${qp_errors:-?}"
  if [[ ${ce:-0} -gt 0 && ${cnps:-0} -gt 0 ]]; then
    pass "the appliance saw ${ce} CE-marked packets and sent ${cnps} CNPs (${held:-0} held by the CNP interval)"
  else
    fail "no CE marks or no CNPs: ecn_ce_received=${ce:-?} cnp_sent=${cnps:-?} (did -T 3 reach the IP header?)"
  fi
  local good bad
  good=$(frames ' CNP .*icrc=ok becn=1')
  bad=$(frames ' CNP .*icrc=(bad|unchecked)')
  if [[ ${good:-0} -gt 0 && ${bad:-0} -eq 0 ]]; then
    pass "$good CNPs on the wire to 192.0.2.12, each a valid CNP (ICRC ok, BECN): $(grep -m1 ' CNP ' "$RUN/capture.txt" | tr -s ' ' | cut -c1-120)"
  else
    fail "CNPs in the capture: ${good:-0} valid, ${bad:-0} not"
  fi
  if [[ ${qp_errors:-1} == 0 ]]; then pass "no QP in the error state"; else fail "qp_errors=${qp_errors:-unknown}"; fi
  log "guest kernel: $(grep -c '^dmesg: ' "$OUT") dmesg lines during the runs$(grep -m3 '^dmesg: ' "$OUT" | sed 's/^/; /' | tr -d '\n')"
}

case_$CASE
log "$PASSED passed, $FAILED failed"
[[ $FAILED -eq 0 ]] || exit 1
exit 0
