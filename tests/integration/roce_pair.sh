#!/usr/bin/env bash
# RoCEv2 between two real appliances through the seeded impairment stage:
#
#   [A wire0] -memif- spinnic-impair -memif- [B wire0]
#
# spinnic-impair is the memif server of both wire sockets and, unless
# ROCE_PAIR_CLEAN=1, loses, reorders and duplicates packets in both
# directions (seed $ROCE_PAIR_SEED). A and B are spinnicd with RoCE on
# (192.0.2.1 / 192.0.2.2, path MTU 1024: memif carries at most 1500 bytes),
# each with one 2 MiB region (every remote right), and one queue pair each
# made with `spinctl qp-create` naming the other's QPN, IP, MAC and PSNs
# (as bench/roce/run does; a fresh appliance's first QPN is 0x100).
#
# The script keeps a model of both regions' bytes: every region-write and
# every completed RDMA operation is appended to a log that model.py (below)
# replays. After each phase the region the phase wrote is read back whole
# with `spinctl region-read` and compared with the model byte for byte, both
# at the end, so a stray, lost, doubled or misplaced write anywhere in
# either region fails. (The machine is small and shared: every process
# started costs, so the per-op bookkeeping is done in bash.)
#
#  a. regions on A and B, the QP pair over gRPC, both QPs rts.
#  b. RDMA WRITE A -> B: messages of 1 B .. 1 MiB at unaligned offsets (one
#     at a time), and 64 pipelined 4 KiB writes (--generate); B's region
#     equals the model.
#  c. RDMA READ B -> A: 1 MiB, 64 KiB, 4 KiB, 100 B and 32 pipelined 8 KiB
#     reads; A's region equals the model.
#  d. WRITE WITH IMMEDIATE: distinct immediates (one message each, 8 B ..
#     64 KiB) and 40 pipelined 3000-byte writes sharing one immediate; on
#     B, `spinctl events` shows roce_write_imm exactly once per message
#     (a duplicated packet must not raise a second event) with B's QPN and
#     MSNs counting up by one; B's write_immediates counter agrees.
#  e. FETCH_ADD on one word of B, distinct addends: first W concurrent
#     spinctl processes of J adds each (up to W atomics in flight on the
#     QP): the originals, sorted, form one chain from the initial value
#     (each the previous plus its addend: every add applied exactly once,
#     atomically); then N one after the other: every returned original is
#     the value before plus the addends before it; B's word is the exact
#     sum at the end (exactly once under duplication and retransmission),
#     A's region holds the last original (this one fails today: an
#     appliance bug, see the comment in e).
#  f. the impair stage did something in each direction (lost, duplicated,
#     reordered > 0; all 0 when clean), A retransmitted (Stats.roce
#     retransmits > 0), B saw duplicates, neither QP is in error
#     (`spinctl qps`), no op failed, A and B exit 0 on SIGTERM.
#  g. a `kvs` handler on B's QP (roce { qpn }): A SENDs a PUT, a GET and a
#     GET of a missing key; B answers each with a SEND on the same QP, which
#     A reports as roce_send events: OK, the PUT value, NOT_FOUND.
#
# usage: roce_pair.sh SPINNICD SPINCTL SPINNIC_IMPAIR
# env:   ROCE_PAIR_SEED (1), ROCE_PAIR_CLEAN (0; 1: no impairment),
#        ROCE_PAIR_LOSS (0.03), ROCE_PAIR_REORDER (0.03),
#        ROCE_PAIR_REORDER_DEPTH (3), ROCE_PAIR_DUPLICATE (0.02),
#        ROCE_PAIR_CORRUPT (0), ROCE_PAIR_ADDS (16: sequential fetch-adds in
#        e), ROCE_PAIR_ADD_WORKERS (4) x ROCE_PAIR_ADDS_PER_WORKER (5):
#        concurrent ones, ROCE_PAIR_BUDGET_S (270: no op starts after),
#        ROCE_PAIR_HPUS (1; 2: two HPUs per appliance, the second sharing
#        the main lcore's core, and the test's QPs owned by HPU 1 while
#        HPU 0 receives their frames: a decoy QP takes HPU 0's turn first)
# shellcheck disable=SC2034  # used by lib.sh
TEST_NAME=roce_pair
[[ ${ROCE_PAIR_CLEAN:-0} == 1 ]] && TEST_NAME=roce_pair_clean
[[ ${ROCE_PAIR_HPUS:-1} == 2 ]] && TEST_NAME=${TEST_NAME}_2hpu
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
set -euo pipefail

if [[ $(id -u) -ne 0 ]]; then
  echo "[$TEST_NAME] SKIP: needs root (DPDK memif between processes, /var/run/dpdk)"
  exit 77
fi
# The memif PMD is a plugin of the distribution's DPDK (or linked in).
memif_available() {
  ldconfig -p 2>/dev/null | grep -q librte_net_memif && return 0
  compgen -G "/usr/lib/*/dpdk/pmds-*/librte_net_memif.so*" >/dev/null && return 0
  compgen -G "/usr/local/lib/*/dpdk/pmds-*/librte_net_memif.so*" >/dev/null
}
if ! memif_available; then
  echo "[$TEST_NAME] SKIP: DPDK's memif driver (librte_net_memif) is not installed"
  exit 77
fi
it_init "$@"
[[ $# -ge 3 ]] || die "usage: $0 SPINNICD SPINCTL SPINNIC_IMPAIR"
it_spinctl_init "$2"
IMPAIR=$(readlink -f "$3")
[[ -x $IMPAIR ]] || die "spinnic-impair not found at $3"

SEED=${ROCE_PAIR_SEED:-1}
CLEAN=${ROCE_PAIR_CLEAN:-0}
if [[ $CLEAN == 1 ]]; then
  LOSS=0 REORDER=0 DUPLICATE=0 CORRUPT=0
else
  LOSS=${ROCE_PAIR_LOSS:-0.03}
  REORDER=${ROCE_PAIR_REORDER:-0.03}
  DUPLICATE=${ROCE_PAIR_DUPLICATE:-0.02}
  CORRUPT=${ROCE_PAIR_CORRUPT:-0}
fi
REORDER_DEPTH=${ROCE_PAIR_REORDER_DEPTH:-3}
N_ADDS=${ROCE_PAIR_ADDS:-16}
ADD_WORKERS=${ROCE_PAIR_ADD_WORKERS:-4}
ADDS_PER_WORKER=${ROCE_PAIR_ADDS_PER_WORKER:-5}

KiB=1024
MiB=$((1024 * 1024))
REGION=$((2 * MiB))
PATH_MTU=1024
FIRST_QPN=256             # dataplane/roce/roce_engine.h kFirstQpn
HPUS=${ROCE_PAIR_HPUS:-1}
WORKERS="1" TEST_HPU=0
if [[ $HPUS == 2 ]]; then
  # The decoy is kFirstQpn on HPU 0, the test's QP the next on HPU 1.
  WORKERS="1, 0" TEST_HPU=1 FIRST_QPN=257
fi
PSN_A=$((0xfffff0))       # A's first PSN: the 24-bit PSN wraps during b
PSN_B=$((0x20000))
OP_MS=30000               # each spinctl qp-* call, all its ops together
BUDGET_S=${ROCE_PAIR_BUDGET_S:-270}  # the whole run (meson's timeout is 300 s)
IP_A=192.0.2.1 IP_B=192.0.2.2
MAC_A=02:00:00:00:00:0a MAC_B=02:00:00:00:00:0b
PFX=spn-it-roce-$$
EVENTS_PID='' EVENTS_A_PID=''
source "$IT_DIR/pair_lib.sh"
pair_stop_extras() {
  stop_pid "$EVENTS_PID" TERM 5
  stop_pid "$EVENTS_A_PID" TERM 5
}

# lib.sh's helpers were written without -e: a failed check must be counted,
# not end the script, so checks run their commands in a condition.

# write_config X IP MAC: spinnicd X's config; wire0 is a memif client of the
# impair stage, host0 a memif server nobody connects to (what is not for the
# appliance has nowhere to go and is dropped, counted).
write_config() {
  local x=$1 ip=$2 mac=$3
  cat >"$TMP/roce-$x.textproto" <<EOF
# spinnic integration test $TEST_NAME, appliance $x (generated)
eal_args: ["--no-huge", "-m", "512", "--no-pci", "--file-prefix", "$PFX-$x"]
ports {
  name: "wire0"
  vdev: "net_memif0,role=client,id=0,socket=$TMP/wire-$x.sock,socket-abstract=no"
  role: PORT_ROLE_WIRE
  queues: 1  # as spinnic-impair's end: HPU 0 receives, and hands over
}
ports {
  name: "host0"
  vdev: "net_memif1,role=server,id=0,socket=$TMP/host-$x.sock,socket-abstract=no"
  role: PORT_ROLE_HOST
  queues: 1
}
port_pairs { a: "wire0" b: "host0" }
main_lcore: 0
workers: [$WORKERS]
main_lcore_shared: true
addresses { mac: "$mac" ipv4: "$ip" }
roce { port: "wire0" path_mtu: $PATH_MTU max_qps: 4 }
runtime { stats_interval_ms: 0 }
EOF
}

start_appliance() {
  pair_start_appliance "$1" "$TMP/roce-$1.textproto" "$TMP/$1-final.json" 600 $((16 * MiB))
}
wait_health() { pair_wait_health "$1"; }

# scA/scB ARGS...: spinctl --json against A or B (output in $TMP/cmd.out/.err,
# exit status in $RC); never fatal.
scA() { SOCK=$SOCK_A sc --json "$@" || true; }
scB() { SOCK=$SOCK_B sc --json "$@" || true; }
# field NAME: the number NAME in $TMP/cmd.out's JSON (the first one; 64-bit
# numbers are strings in protobuf JSON), empty when absent. Bash only: a
# Python start costs up to a second here under load.
field() {
  local re="\"$1\":\"?([0-9]+)"
  [[ $(<"$TMP/cmd.out") =~ $re ]] && echo "${BASH_REMATCH[1]}"
}
# stats_snapshot X: `spinctl stats --json` of X into $TMP/stats-X.json.
stats_snapshot() {
  "$SPINCTL" --socket "$TMP/ctl-$1.sock" --json stats >"$TMP/stats-$1.json" 2>>"$TMP/cmd.err" </dev/null || true
}
# counter X NAME: Stats.roce counter NAME in X's last snapshot (0 if absent).
counter() {
  local re="\"name\":\"$2\",\"value\":\"([0-9]+)\""
  if [[ $(<"$TMP/stats-$1.json") =~ $re ]]; then echo "${BASH_REMATCH[1]}"; else echo 0; fi
}
# roce_counter X NAME: a fresh snapshot's counter.
roce_counter() { stats_snapshot "$1"; counter "$1" "$2"; }

# --- the model of both regions ------------------------------------------------------------
cat >"$TMP/model.py" <<'EOF'
# model.py LEN LOG X...: replays LOG on two zeroed images of LEN bytes (a
# fresh region is zeroed) and compares the image of each X with the region
# read back into readback-X.bin next to LOG. LOG's lines:
#   put X OFF FILE                   FILE's bytes at OFF of X (a region-write)
#   copy SRC SOFF DST DOFF LEN       an RDMA WRITE or READ
#   word X OFF VALUE                 a little-endian u64 at OFF of X
import os, sys
n, log, xs = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
img = {"a": bytearray(n), "b": bytearray(n)}
for line in open(log):
    f = line.split()
    if f[0] == "put":
        data = open(f[3], "rb").read(); off = int(f[2])
        img[f[1]][off:off + len(data)] = data
    elif f[0] == "copy":
        so, to, k = int(f[2]), int(f[4]), int(f[5])
        img[f[3]][to:to + k] = img[f[1]][so:so + k]
    elif f[0] == "word":
        off = int(f[2]); img[f[1]][off:off + 8] = int(f[3]).to_bytes(8, "little")
    else:
        sys.exit(f"model.py: bad log line {line!r}")
bad = 0
for x in xs:
    want = img[x]
    got = open(os.path.join(os.path.dirname(log), f"readback-{x}.bin"), "rb").read()
    if len(got) != len(want):
        print(f"{x}: read back {len(got)} bytes, the region has {len(want)}"); bad = 1; continue
    pages = [i for i in range(0, n, 4096) if want[i:i + 4096] != got[i:i + 4096]]
    if pages:
        first = next(i for i in range(pages[0], pages[0] + 4096) if want[i] != got[i])
        diff = sum(1 for p in pages for i in range(p, min(p + 4096, n)) if want[i] != got[i])
        print(f"{x}: {diff} bytes differ in {len(pages)} 4 KiB pages; first at offset {first} "
              f"(expected {want[first]:#04x}, got {got[first]:#04x}); pages {pages[:8]}")
        bad = 1
sys.exit(bad)
EOF
: >"$TMP/model.log"
# model LINE...: one change of the model (see model.py's log lines).
model() { echo "$*" >>"$TMP/model.log"; }

# region_put X OFF FILE: region-write FILE at OFF of X's region (1 MiB at a
# time: one gRPC message), and the same into the model.
region_put() {
  local x=$1 off=$2 file=$3 len pos=0 id
  len=$(stat -c %s "$file")
  if [[ $x == a ]]; then id=$ID_A; else id=$ID_B; fi
  while ((pos < len)); do
    dd if="$file" of="$TMP/chunk.bin" bs="$MiB" skip=$((pos / MiB)) count=1 status=none || return 1
    SOCK=$TMP/ctl-$x.sock sc region-write "$id" --offset $((off + pos)) --in "$TMP/chunk.bin" || true
    rc_is 0 || return 1
    pos=$((pos + MiB))
  done
  model put "$x" "$off" "$file"
}

# region_matches X...: each X's whole region read back equals the model.
region_matches() {
  local x id pos out
  for x in "$@"; do
    if [[ $x == a ]]; then id=$ID_A; else id=$ID_B; fi
    : >"$TMP/readback-$x.bin"
    for ((pos = 0; pos < REGION; pos += MiB)); do
      SOCK=$TMP/ctl-$x.sock sc region-read "$id" --offset "$pos" --length "$MiB" --out "$TMP/chunk.bin" || true
      rc_is 0 || return 1
      cat "$TMP/chunk.bin" >>"$TMP/readback-$x.bin"
    done
  done
  out=$("$PY" "$TMP/model.py" "$REGION" "$TMP/model.log" "$@") || { log "$out"; return 1; }
}

# qp_op KIND ARGS...: spinctl qp-KIND on A's QP against B's region; failures
# are logged and counted in OPS_FAILED (then the model is not updated).
# A dead process or the time budget spent ends the run at once (the trap
# cleans up) rather than letting every later op wait out its timeout.
OPS_FAILED=0
qp_op() {
  local kind=$1
  shift
  ((SECONDS - T0 < BUDGET_S)) || die "out of time: ${BUDGET_S} s spent (ROCE_PAIR_BUDGET_S)"
  scA "qp-$kind" "$QPN_A" "$RKEY_B" "$@" --timeout_ms "$OP_MS"
  if [[ $RC -ne 0 ]]; then
    OPS_FAILED=$((OPS_FAILED + 1))
    log "qp-$kind $*: exit $RC: $(head -c 400 "$TMP/cmd.err")"
    local who
    for who in A_PID B_PID IMPAIR_PID; do
      alive "${!who}" || die "${who%_PID} is gone (qp-$kind failed)"
    done
    return 1
  fi
}

# write_msg LEN A_OFF B_OFF [--imm V]: one RDMA WRITE of LEN bytes from A's
# region at A_OFF to B's at B_OFF.
write_msg() {
  local len=$1 aoff=$2 boff=$3
  shift 3
  qp_op write $((BASE_B + boff)) --region "$ID_A" --offset "$aoff" --length "$len" "$@" &&
    model copy a "$aoff" b "$boff" "$len"
}
# read_msg LEN B_OFF A_OFF: one RDMA READ of LEN bytes from B's region at
# B_OFF into A's at A_OFF.
read_msg() {
  local len=$1 boff=$2 aoff=$3
  qp_op read $((BASE_B + boff)) --region "$ID_A" --offset "$aoff" --length "$len" &&
    model copy b "$boff" a "$aoff" "$len"
}
# generated KIND COUNT SIZE A_OFF B_OFF [ARGS]: COUNT pipelined ops of SIZE
# bytes, op i between A's A_OFF + i*SIZE and B's B_OFF + i*SIZE (the span is
# COUNT*SIZE, so no two ops touch the same bytes).
generated() {
  local kind=$1 count=$2 size=$3 aoff=$4 boff=$5 i
  shift 5
  qp_op "$kind" $((BASE_B + boff)) --region "$ID_A" --offset "$aoff" \
    --generate "$count" --size "$size" --span $((count * size)) "$@" || return 1
  [[ $(field ops) -eq $count ]] || { log "$kind: ops != $count"; OPS_FAILED=$((OPS_FAILED + 1)); return 1; }
  if [[ $kind == write ]]; then
    model copy a "$aoff" b "$boff" $((count * size))
  else
    model copy b "$boff" a "$aoff" $((count * size))
  fi
}

# --- start ---------------------------------------------------------------------------------
T0=$SECONDS
write_config a "$IP_A" "$MAC_A"
write_config b "$IP_B" "$MAC_B"
pair_start_impair --seed "$SEED" --loss "$LOSS" --reorder "$REORDER" --reorder_depth "$REORDER_DEPTH" \
  --duplicate "$DUPLICATE" --corrupt "$CORRUPT" --stats_interval_s 1
start_appliance a
start_appliance b
wait_health a
wait_health b
# Both wire0 links up (memif connected to the impair stage), at most 20 s.
pair_links_up || true
check "both wire0 links are up" eval '[[ $a_up == True && $b_up == True ]]'
scB info
check "B: RoCE on, path MTU $PATH_MTU" eval \
  '[[ $(json "d[\"roce\"][\"enabled\"]") == True && $(json "int(d[\"roce\"][\"path_mtu\"])") -eq $PATH_MTU ]]'
ICRC_ALG=$(json 'd["roce"].get("icrc_algorithm", "")')
log "B computes the ICRC with: $ICRC_ALG (the CPU has avx512f+vpclmulqdq: $(grep -qw avx512f /proc/cpuinfo && grep -qw vpclmulqdq /proc/cpuinfo && echo yes || echo no))"
check "B: info names the ICRC algorithm, AVX-512 where the CPU has it" eval \
  '[[ $ICRC_ALG =~ ^(avx512|sse42|scalar)$ ]] && { ! { grep -qw avx512f /proc/cpuinfo && grep -qw vpclmulqdq /proc/cpuinfo; } || [[ $ICRC_ALG == avx512 ]]; }'

# --- a. regions and the queue pair ----------------------------------------------------------
register_region() {
  local x=$1
  SOCK=$TMP/ctl-$x.sock sc --json region-register --length "$REGION" \
    --access local_read,local_write,remote_read,remote_write --name rp || true
  rc_is 0 || return 1
  local id rkey base
  id=$(field id) rkey=$(field rkey) base=$(field base_address)
  if [[ $x == a ]]; then ID_A=$id RKEY_A=$rkey BASE_A=$base; else ID_B=$id RKEY_B=$rkey BASE_B=$base; fi
}
ID_A='' ID_B='' RKEY_B='' BASE_B=''
check "a: 4 MiB region on A" register_region a
check "a: 4 MiB region on B" register_region b
[[ -n $ID_A && -n $ID_B ]] || die "no regions"
check "a: atomics need B's base 8-byte aligned" eval '[[ $((BASE_B % 8)) -eq 0 ]]'

# Each side names the other's QPN before it exists: the first QP of a fresh
# appliance is FIRST_QPN (checked).
create_qp() {
  local x=$1 rip=$2 rmac=$3 spsn=$4 epsn=$5
  SOCK=$TMP/ctl-$x.sock sc --json qp-create --remote_qpn "$FIRST_QPN" --remote_ip "$rip" \
    --remote_mac "$rmac" --path_mtu "$PATH_MTU" --send_psn "$spsn" --expected_psn "$epsn" || true
  rc_is 0 || return 1
  [[ $(json 'int(d["qpn"])') -eq $FIRST_QPN ]] || { log "$x's QPN is $(json 'd["qpn"]')"; return 1; }
}
# decoy X: a QP nobody uses, so that the test's goes to the next HPU; gone
# once the test's exists.
decoy() {
  SOCK=$TMP/ctl-$1.sock sc --json qp-create --remote_qpn 99 --remote_ip "$2" \
    --remote_mac "$3" --path_mtu "$PATH_MTU" || true
  rc_is 0
}
decoy_gone() {
  SOCK=$TMP/ctl-$1.sock sc --json qp-destroy $((FIRST_QPN - 1)) || true
  rc_is 0
}
if [[ $HPUS == 2 ]]; then
  check "a: decoy QP on A" decoy a "$IP_B" "$MAC_B"
  check "a: decoy QP on B" decoy b "$IP_A" "$MAC_A"
fi
check "a: QP on A to B (QPN $FIRST_QPN, send PSN $PSN_A)" create_qp a "$IP_B" "$MAC_B" "$PSN_A" "$PSN_B"
check "a: QP on B to A (QPN $FIRST_QPN, send PSN $PSN_B)" create_qp b "$IP_A" "$MAC_A" "$PSN_B" "$PSN_A"
if [[ $HPUS == 2 ]]; then
  check "a: A's decoy destroyed" decoy_gone a
  check "a: B's decoy destroyed" decoy_gone b
fi
QPN_A=$FIRST_QPN QPN_B=$FIRST_QPN
# qps_rts X: X has one QP, in state rts (not error).
qps_rts() {
  SOCK=$TMP/ctl-$1.sock sc --json qps || true
  rc_is 0 || return 1
  local states
  states=$(grep -o '"state":"[a-z]*"' "$TMP/cmd.out" | tr '\n' ' ')
  [[ $states == '"state":"rts" ' ]] || { log "$1's QPs: $states"; return 1; }
  # ... owned by the HPU the test put it on.
  if [[ $TEST_HPU != 0 ]]; then
    grep -q "\"hpu\":$TEST_HPU[,}]" "$TMP/cmd.out" || { log "$1's QP is not on HPU $TEST_HPU"; return 1; }
  fi
}
check "a: A's QP is rts" qps_rts a
check "a: B's QP is rts" qps_rts b
A_RETRANS0=$(roce_counter a retransmits)

# --- b. RDMA WRITE A -> B -----------------------------------------------------------------------
T_PHASE=$SECONDS
head -c "$REGION" /dev/urandom >"$TMP/wsrc.bin"
check "b: 2 MiB of random bytes into A's region" region_put a 0 "$TMP/wsrc.bin"
# LEN A_OFF B_OFF: 1 packet, 1 B, exactly one path MTU, one byte more, 3
# packets, 4 KiB, 64 KiB, 1 MiB; odd offsets on both sides; B's ranges
# disjoint.
WRITES=(
  "100 0 17"
  "1 200 300"
  "1024 7000 9001"
  "1025 300000 400001"
  "3000 500000 500005"
  "4096 4096 4219"
  "65536 65536 65536"
  "$MiB $MiB $MiB"
)
ok=0
for w in "${WRITES[@]}"; do
  # shellcheck disable=SC2086  # three numbers
  write_msg $w && ok=$((ok + 1))
done
check "b: ${#WRITES[@]} RDMA WRITEs of 1 B .. 1 MiB complete ($ok)" test "$ok" -eq "${#WRITES[@]}"
check "b: 64 pipelined 4 KiB RDMA WRITEs A[0..256K) -> B[768K..1M) complete" \
  generated write 64 4096 0 $((768 * KiB))
check "b: B's region equals the model byte for byte (2 MiB)" region_matches b
log "b: took $((SECONDS - T_PHASE)) s"

# --- c. RDMA READ B -> A ------------------------------------------------------------------------
T_PHASE=$SECONDS
# Fresh bytes in B's upper half (A's region holds different ones).
head -c "$MiB" /dev/urandom >"$TMP/rsrc.bin"
check "c: 1 MiB of random bytes into B's region at 1 MiB" region_put b "$MiB" "$TMP/rsrc.bin"
# LEN B_OFF A_OFF
READS=(
  "$MiB $MiB 0"
  "65536 $((MiB + 12345)) $((MiB + 131))"
  "4096 $((MiB + 4096)) $((MiB + 200003))"
  "100 $((MiB + 5)) $((MiB + 99999))"
  "1025 $((MiB + 7777)) $((MiB + 70000))"
  "1 $((512 * KiB + 1)) $((MiB + 1))"
)
ok=0
for r in "${READS[@]}"; do
  # shellcheck disable=SC2086
  read_msg $r && ok=$((ok + 1))
done
check "c: ${#READS[@]} RDMA READs of 1 B .. 1 MiB complete ($ok)" test "$ok" -eq "${#READS[@]}"
check "c: 32 pipelined 8 KiB RDMA READs B[1.5M..1.75M) -> A[1.5M..1.75M) complete" \
  generated read 32 8192 $((1536 * KiB)) $((1536 * KiB))
check "c: A's region equals the model byte for byte (2 MiB)" region_matches a
log "c: took $((SECONDS - T_PHASE)) s"

# --- d. WRITE WITH IMMEDIATE --------------------------------------------------------------------
T_PHASE=$SECONDS
IMM_BEFORE=$(roce_counter b write_immediates)
# B's event stream, bounded by its own timeout. It has no "subscribed"
# acknowledgement, so a sentinel WRITE with immediate is repeated until B
# reports it: events after that one are certainly seen.
"$SPINCTL" --socket "$SOCK_B" --json --timeout_ms 5000 events --timeout_ms 120000 \
  >"$TMP/events.jsonl" 2>"$TMP/events.err" </dev/null &
EVENTS_PID=$!
# imm_events IMM: how many events with immediate IMM so far (JSON Lines; only
# roce_write_imm has the field).
imm_events() { grep -cE "\"immediate\":$1[,}]" "$TMP/events.jsonl" || true; }
SENTINEL=0
subscribed=0
for ((k = 1; k <= 20 && subscribed == 0; k++)); do
  SENTINEL=$((0x5e000000 + k))
  write_msg 8 0 $((512 * KiB)) --imm "$SENTINEL" || true
  for ((i = 0; i < 10; i++)); do
    [[ $(imm_events "$SENTINEL") -ge 1 ]] && { subscribed=1; break; }
    sleep 0.1
  done
done
check "d: B's event stream sees a sentinel WRITE with immediate ($((k - 1)) tries)" test "$subscribed" -eq 1
# Distinct immediates, one message each (LEN A_OFF B_OFF IMM); then 40
# pipelined 3000-byte writes with one immediate (40 events expected).
IMM_MSGS=(
  "8 100 $((512 * KiB + 64)) $((0xcafe0001))"
  "1024 5000 $((600 * KiB)) $((0xcafe0002))"
  "1500 9000 $((610 * KiB)) $((0xcafe0003))"
  "4096 12288 $((620 * KiB)) $((0xcafe0004))"
  "65536 $((64 * KiB)) $((640 * KiB)) $((0xcafe0005))"
  "12 777 $((512 * KiB + 100)) 0"
)
GEN_IMM=$((0xbeef0040))
GEN_COUNT=40
ok=0
for m in "${IMM_MSGS[@]}"; do
  read -r len aoff boff imm <<<"$m"
  write_msg "$len" "$aoff" "$boff" --imm "$imm" && ok=$((ok + 1))
done
check "d: ${#IMM_MSGS[@]} WRITEs with distinct immediates complete ($ok)" test "$ok" -eq "${#IMM_MSGS[@]}"
check "d: $GEN_COUNT pipelined 3000-byte WRITEs with immediate $GEN_IMM complete" \
  generated write "$GEN_COUNT" 3000 "$MiB" $((MiB + 800 * KiB)) --imm "$GEN_IMM"
EXPECT_EVENTS=$((${#IMM_MSGS[@]} + GEN_COUNT))
# Every completed op was acknowledged by B, i.e. executed and its event
# queued; give the stream at most 15 s to deliver them, then 2 s more in
# which a (wrong) second event for a duplicate would show up.
for ((i = 0; i < 150; i++)); do
  [[ $(imm_events "$GEN_IMM") -ge $GEN_COUNT ]] && break
  sleep 0.1
done
sleep 1.5
stop_pid "$EVENTS_PID" TERM 5
EVENTS_PID=
check_imm_events() {
  "$PY" - "$TMP/events.jsonl" "$QPN_B" "$SENTINEL" "$GEN_IMM" "$GEN_COUNT" "${IMM_MSGS[@]}" <<'EOF'
import json, sys
path, qpn, sentinel, gen_imm, gen_count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
msgs = [int(m.split()[3]) for m in sys.argv[6:]]
events, missed = [], 0
for line in open(path):
    e = json.loads(line)
    missed += int(e.get("missed_before", 0))
    if e.get("name") == "roce_write_imm":
        r = e.get("roce", {})
        events.append((int(r.get("qpn", 0)), int(r.get("immediate", 0)), int(r.get("msn", 0))))
    elif e.get("name"):
        print(f"unexpected event {e.get('name')}: {line.strip()}")
bad = []
if missed:
    bad.append(f"{missed} events missed by the stream")
# Only what follows the (last) sentinel counts: earlier ones may predate the
# subscription.
idx = max(i for i, e in enumerate(events) if e[1] == sentinel)
after = events[idx + 1:]
if any(q != qpn for q, _, _ in events):
    bad.append(f"events for another QPN: {sorted({q for q, _, _ in events})}")
for imm in msgs:
    n = sum(1 for _, i, _ in after if i == imm)
    if n != 1:
        bad.append(f"immediate {imm:#x}: {n} events, expected 1")
n = sum(1 for _, i, _ in after if i == gen_imm)
if n != gen_count:
    bad.append(f"immediate {gen_imm:#x}: {n} events, expected {gen_count}")
extra = [e for e in after if e[1] not in msgs and e[1] != gen_imm]
if extra:
    bad.append(f"{len(extra)} unexpected events: {extra[:5]}")
# Only WRITEs with immediate reach B's QP from the sentinel on: MSN counts
# up by one per event (24 bits).
msns = [events[idx][2]] + [m for _, _, m in after]
steps = [(b - a) & 0xffffff for a, b in zip(msns, msns[1:])]
if any(s != 1 for s in steps):
    bad.append(f"MSNs do not count up by one: {msns}")
print(f"{len(after)} events after the sentinel, MSN {msns[0]}..{msns[-1]}")
for b in bad:
    print("  " + b)
sys.exit(1 if bad else 0)
EOF
}
IMM_REPORT=$(check_imm_events 2>&1) && imm_ok=1 || imm_ok=0
log "d: $(echo "$IMM_REPORT" | head -c 2000)"
check "d: roce_write_imm exactly once per message (expected $EXPECT_EVENTS after the sentinel), right QPN, MSN +1 each" \
  test "$imm_ok" -eq 1
IMM_AFTER=$(roce_counter b write_immediates)
check "d: B's write_immediates grew by exactly the messages sent ($((IMM_AFTER - IMM_BEFORE)) = sentinels $((k - 1)) + $EXPECT_EVENTS)" \
  test $((IMM_AFTER - IMM_BEFORE)) -eq $((k - 1 + EXPECT_EVENTS))
check "d: B's region equals the model byte for byte" region_matches b
log "d: took $((SECONDS - T_PHASE)) s"

# --- e. FETCH_ADD ---------------------------------------------------------------------------------
T_PHASE=$SECONDS
WORD_OFF=$((REGION - 64))   # B's word (8-byte aligned)
LAND_OFF=$((REGION - 128))  # where A receives the original
INITIAL=$((0x0102030405060708))
# The word's initial value, little endian (x86 memory order).
"$PY" -c "import sys; sys.stdout.buffer.write(int(sys.argv[1]).to_bytes(8, 'little'))" "$INITIAL" >"$TMP/word.bin"
check "e: B's word set to $INITIAL" region_put b "$WORD_OFF" "$TMP/word.bin"

# e1: concurrent adds. Each worker is a subshell running spinctl itself
# (not sc: $TMP/cmd.out is the main shell's), one line "ADD ORIGINAL" or
# "ADD FAIL" per op into its own file.
add_worker() {
  local w=$1 j add re='"atomic_original":"?([0-9]+)' out
  for ((j = 1; j <= ADDS_PER_WORKER; j++)); do
    add=$(((w * 100 + j) * 7919 + (1 << 40)))  # distinct
    if out=$("$SPINCTL" --socket "$SOCK_A" --json qp-atomic "$QPN_A" "$RKEY_B" $((BASE_B + WORD_OFF)) \
      --region "$ID_A" --offset "$LAND_OFF" --add "$add" --timeout_ms "$OP_MS" 2>>"$TMP/adds-$w.err" </dev/null) &&
      [[ $out =~ $re ]]; then
      echo "$add ${BASH_REMATCH[1]}"
    else
      echo "$add FAIL"
    fi
  done >"$TMP/adds-$w.txt"
}
ADD_PIDS=()
for ((w = 1; w <= ADD_WORKERS; w++)); do
  add_worker "$w" &
  ADD_PIDS+=($!)
  IT_BG+=($!)  # killed at exit if still running
done
for p in "${ADD_PIDS[@]}"; do wait_pid "$p" 120 || true; done
check_chain() {
  CHAIN_END=$("$PY" - "$INITIAL" "$TMP"/adds-*.txt <<'EOF'
import sys
initial, ops, bad = int(sys.argv[1]), [], []
for path in sys.argv[2:]:
    for line in open(path):
        add, orig = line.split()
        if orig == "FAIL":
            bad.append(f"add {add} failed")
        else:
            ops.append((int(orig), int(add)))
ops.sort()
value = initial
for orig, add in ops:
    if orig != value:
        bad.append(f"original {orig}, expected {value} (off by {orig - value})")
        value = orig
    value += add
print(value)
for b in bad[:10]:
    print(b, file=sys.stderr)
sys.exit(1 if bad else 0)
EOF
  )
}
CHAIN_END=
check "e: $((ADD_WORKERS * ADDS_PER_WORKER)) concurrent FETCH_ADDs ($ADD_WORKERS processes) complete and their originals form one chain" \
  check_chain
E_START=${CHAIN_END:-$INITIAL}
NL=$'\n'
log "e: concurrent adds: $(cat "$TMP"/adds-*.txt | wc -l) ops, value now $E_START${NL}$(cat "$TMP"/adds-*.err 2>/dev/null | head -c 600)"

# e2: one after the other, each original predicted exactly.
expect=$E_START
adds_ok=0
originals_ok=1
for ((n = 1; n <= N_ADDS; n++)); do
  add=$((n * 1000003 + (n % 7) * (1 << 33)))  # distinct addends
  if qp_op atomic $((BASE_B + WORD_OFF)) --region "$ID_A" --offset "$LAND_OFF" --add "$add"; then
    orig=$(field atomic_original)
    if [[ $orig -ne $expect ]]; then
      log "e: fetch-add $n (+$add): original $orig, expected $expect (off by $((orig - expect)))"
      originals_ok=0
      expect=$orig  # go on from what B had, so one fault is reported once
    fi
    expect=$((expect + add))
    adds_ok=$((adds_ok + 1))
    LAST_ORIG=$orig
  fi
done
check "e: $N_ADDS FETCH_ADDs complete ($adds_ok)" test "$adds_ok" -eq "$N_ADDS"
check "e: every original is the value before plus the addends before it" test "$originals_ok" -eq 1
SUM=$E_START
for ((n = 1; n <= N_ADDS; n++)); do SUM=$((SUM + n * 1000003 + (n % 7) * (1 << 33))); done
word_is_sum() {
  scB region-read "$ID_B" --offset "$WORD_OFF" --length 8
  rc_is 0 || return 1
  local got
  got=$(json 'int.from_bytes(__import__("base64").b64decode(d["data"]), "little")')
  [[ $got -eq $SUM ]] || { log "e: B's word is $got, expected $SUM (difference $((got - SUM)))"; return 1; }
}
check "e: B's word is exactly the initial value plus all $((ADD_WORKERS * ADDS_PER_WORKER + N_ADDS)) addends" word_is_sum
model word b "$WORD_OFF" "$SUM"
# The original value should also land in A's region at --offset
# (QpExecuteRequest, docs/spinctl.md, as an ibv_post_send atomic's local SGE
# does). APPLIANCE BUG found by this test (not fixed here): the engine only
# returns it in the completion (RoceEngine::DrainCompletions copies
# atomic_original into the command, nothing writes the local bytes), so the
# word stays as it was. The check stays, named so that it reads as such.
land_word() {
  scA region-read "$ID_A" --offset "$LAND_OFF" --length 8
  rc_is 0 || return 1
  LAND=$(json 'int.from_bytes(__import__("base64").b64decode(d["data"]), "little")')
}
LAND=0
land_holds_original() {
  land_word || return 1
  [[ $LAND -eq ${LAST_ORIG:-0} ]] ||
    { log "e: A's word at offset $LAND_OFF is $LAND, the last original is ${LAST_ORIG:-?}"; return 1; }
}
check "e: [APPLIANCE BUG if this fails: atomic original not stored locally] A's region holds the last FETCH_ADD's original at --offset" \
  land_holds_original
# Whatever the landing word holds, nothing else in A's region may change.
model word a "$LAND_OFF" "$LAND"
check "e: both regions equal the model elsewhere byte for byte (the atomics wrote nothing else)" \
  region_matches a b
log "e: took $((SECONDS - T_PHASE)) s"

# --- f. the impairment, retransmissions, QP states, shutdown ------------------------------------------
if [[ $HPUS == 2 ]]; then
  # The QPs' frames reached HPU 1 through HPU 0 on both appliances.
  for x in a b; do
    check "f: $x's HPU 0 handed RoCE frames to the QP's HPU 1" \
      eval '[[ $(roce_counter '$x' handoffs) -gt 0 ]]'
  done
fi
# Every op has completed: the wire must be quiet (no retransmission or
# reply left looping between the two).
wire_tx() {
  SOCK=$TMP/ctl-$1.sock sc --json stats || true
  field tx_packets || echo -1  # the first tx_packets is port 0's (wire0)
}
quiet() {
  local a0 b0 a1 b1
  a0=$(wire_tx a) b0=$(wire_tx b)
  sleep 1.2  # also one of the impair stage's counter lines (every 1 s)
  a1=$(wire_tx a) b1=$(wire_tx b)
  [[ $a0 -eq $a1 && $b0 -eq $b1 && $a0 -ge 0 ]] ||
    { log "f: wire0 tx over 1 s idle: A $a0 -> $a1, B $b0 -> $b1"; return 1; }
}
check "f: the wire is quiet once every op completed (no packet from A or B in 1 s)" quiet
stats_snapshot a
stats_snapshot b
A_RETRANS=$(( $(counter a retransmits) - A_RETRANS0 ))
log "f: A: retransmits $A_RETRANS, ops_posted $(counter a ops_posted), ops_completed" \
  "$(counter a ops_completed), ops_failed $(counter a ops_failed), tx_packets $(counter a tx_packets)"
log "f: B: duplicates $(counter b duplicates), naks_sent $(counter b naks_sent), writes" \
  "$(counter b writes), reads $(counter b reads), read_bytes $(counter b read_bytes), atomics" \
  "$(counter b atomics), drop_responder $(counter b drop_responder), tx_packets $(counter b tx_packets)"
check "f: no spinctl qp-* call failed ($OPS_FAILED)" test "$OPS_FAILED" -eq 0
check "f: A's QP is not in error (rts)" qps_rts a
check "f: B's QP is not in error (rts)" qps_rts b
for x in a b; do
  errs=$(counter "$x" qp_errors)
  check "f: $x counted no QP errors ($errs)" test "$errs" -eq 0
done
if [[ $CLEAN != 1 ]]; then
  check "f: A retransmitted (Stats.roce retransmits $A_RETRANS > 0)" test "$A_RETRANS" -gt 0
fi

# --- g. kvs on B's QP: SENDs answered by SENDs ----------------------------------------------
# A kvs handler takes the SENDs of B's QP (roce { qpn }); its answers are
# SENDs of B's on the same QP, which A's QP reports as roce_send events
# (their first 32 bytes in `head`). PUT is idempotent: it is repeated until
# A's event stream (which has no "subscribed" acknowledgement) shows its
# answer.
SOCK=$SOCK_B sc --json region-register --length 65536 --access local_read,local_write --name kv || true
KV_ID=$(field id)
printf 'name: "kvs" kind: "kvs" params { key: "key_max" value: "16" } params { key: "value_max" value: "16" } roce { qpn: %d }\n' \
  "$QPN_B" >"$TMP/kvs.textproto"
SOCK=$SOCK_B sc install --handler_file "$TMP/kvs.textproto" --bind "$KV_ID" || true
check "g: kvs installed on B's QP $QPN_B" rc_is 0
"$SPINCTL" --socket "$SOCK_A" --json --timeout_ms 5000 events --timeout_ms 60000 \
  >"$TMP/events-a.jsonl" 2>"$TMP/events-a.err" </dev/null &
EVENTS_A_PID=$!
hex() { "$PY" -c 'import sys; print(sys.argv[1].encode().hex())' "$1"; }
# kv_send OFFSET HEX: a request from A's region at OFFSET, SENT on A's QP.
kv_send() {
  SOCK=$SOCK_A sc region-write "$ID_A" --offset "$1" --hex "$2" || true
  rc_is 0 || return 1
  scA qp-write "$QPN_A" 0 0 --send --region "$ID_A" --offset "$1" --length $((${#2} / 2)) \
    --timeout_ms "$OP_MS"
  rc_is 0
}
# kv_answer HEX: A saw a roce_send whose first bytes are HEX.
kv_answer() {
  "$PY" - "$TMP/events-a.jsonl" "$1" <<'EOF2'
import base64, json, sys
want = bytes.fromhex(sys.argv[2])
def heads(v):
    if isinstance(v, dict):
        for k, x in v.items():
            if k == "head" and isinstance(x, str):
                yield base64.b64decode(x)
            else:
                yield from heads(x)
for line in open(sys.argv[1]):
    try:
        if any(h.startswith(want) for h in heads(json.loads(line))):
            sys.exit(0)
    except ValueError:
        pass
sys.exit(1)
EOF2
}
# PUT "key" = "value!" (request 1), answered OK; GET "key" (request 2),
# answered OK with the value; GET "nokey" (request 3) NOT_FOUND.
put_answered=0
for ((k = 0; k < 10 && put_answered == 0; k++)); do
  kv_send 0 0203060001000000$(hex key)$(hex 'value!') || true
  for ((i = 0; i < 20; i++)); do
    kv_answer 0002000001000000 && { put_answered=1; break; }
    sleep 0.1
  done
done
check "g: a PUT SENT to B is answered OK by a SEND on the same QP" test "$put_answered" -eq 1
check "g: a GET is sent" kv_send 64 0103000002000000$(hex key)
check "g: a GET is sent for a missing key" kv_send 128 0105000003000000$(hex nokey)
wait_answer() {
  local i
  for ((i = 0; i < 50; i++)); do kv_answer "$1" && return 0; sleep 0.1; done
  return 1
}
check "g: the GET's answer carries the PUT value" wait_answer 0001060002000000$(hex 'value!')
check "g: the missing key's answer is NOT_FOUND" wait_answer 0101000003000000
stats_snapshot b
check "g: B counted the answers (handler_replies >= 3, none refused)" eval \
  '[[ $(counter b handler_replies) -ge 3 && $(counter b handler_replies_refused) -eq 0 ]]'
stop_pid "$EVENTS_A_PID" TERM 5
EVENTS_A_PID=

stop_pid "$A_PID" TERM 30
A_RC=$STOP_RC
A_PID=
stop_pid "$B_PID" TERM 30
B_RC=$STOP_RC
B_PID=
check "A and B exit 0 on SIGTERM ($A_RC, $B_RC)" eval '[[ $A_RC -eq 0 && $B_RC -eq 0 ]]'
stop_pid "$IMPAIR_PID" TERM 30
IMPAIR_RC=$STOP_RC
IMPAIR_PID=
# The memif PMD of DPDK 22.11 can crash a busy-polling side when its peer
# disconnects (docs/impair.md, Limits): seen here once in a few runs as a
# SIGSEGV of spinnic-impair right after the appliances stopped. That is not
# what this test is about, so it is reported but not failed, and the impair
# stage's counters come from its last counter line (printed every second
# and at exit) rather than only from --stats_json.
if [[ $IMPAIR_RC -eq 0 ]]; then
  check "spinnic-impair exits 0 and writes its counters" test -s "$TMP/impair.json"
else
  log "NOTE: spinnic-impair ended with status $IMPAIR_RC after the appliances stopped" \
    "(not failed: DPDK 22.11 memif peer-disconnect crash, docs/impair.md)"
fi
# impair_counters NAME: "in lost duplicated reordered" from the last NAME
# (A->B or B->A) counter line.
impair_counters() {
  local line re='in ([0-9]+) out [0-9]+ lost ([0-9]+) duplicated ([0-9]+) reordered ([0-9]+)'
  line=$(grep -F "spinnic-impair: $1: in " "$TMP/impair.out" | tail -n 1)
  if [[ $line =~ $re ]]; then
    echo "${BASH_REMATCH[1]} ${BASH_REMATCH[2]} ${BASH_REMATCH[3]} ${BASH_REMATCH[4]}"
  else
    echo "-1 -1 -1 -1"
  fi
}
for dir in 'A->B' 'B->A'; do
  read -r I_IN I_LOST I_DUP I_REO <<<"$(impair_counters "$dir")"
  log "f: impair $dir: in $I_IN, lost $I_LOST, duplicated $I_DUP, reordered $I_REO"
  if [[ $CLEAN == 1 ]]; then
    check "f: clean: the impair stage passed packets $dir and changed nothing" \
      eval '[[ $I_IN -gt 0 && $I_LOST -eq 0 && $I_DUP -eq 0 && $I_REO -eq 0 ]]'
  else
    check "f: the impair stage lost, duplicated and reordered packets $dir" \
      eval '[[ $I_LOST -gt 0 && $I_DUP -gt 0 && $I_REO -gt 0 ]]'
  fi
done
log "total $((SECONDS - T0)) s (seed $SEED)"
it_finish
