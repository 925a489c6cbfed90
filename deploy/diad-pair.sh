#!/usr/bin/env bash
# diad-pair.sh [--loss P] [--messages N] [--size BYTES] [--seed S] [--keep]
#              [--builddir DIR]
#
# DiAD between two appliances on one machine, as root, after the quick start
# built ./build:
#
#   [A host0 | A wire0] <-memif-> spinnic-impair <-memif-> [B wire0 | B host0]
#
# 1. starts spinnic-impair (the memif server of both wire sockets; seeded
#    loss P in each direction) and two spinnicd, A and B, on
#    deploy/configs/diad-a.textproto and diad-b.textproto (socket paths and
#    EAL file prefixes moved into a private temp dir);
# 2. with spinctl on A: the peer table, a remote write into a region
#    registered on B, a remote read of it back;
# 3. a stream_check handler on B's stream 7 (counters before), N stream
#    messages of BYTES each from A, the handler's counters and state after:
#    every message once, in order, intact;
# 4. the DiAD counters on both sides (retransmits, NACKs, UNACKs, drops)
#    and, at exit, the impair stage's own counters;
# 5. tears everything down, unless --keep: then it prints how to reach both
#    appliances and how to stop them.
#
# Flags: --loss P (default 0.02, probability per packet and direction),
# --messages N (default 20000), --size BYTES (default 1000, at least 8),
# --seed S (default 1), --keep, --builddir DIR (default ./build; built if a
# binary is missing). Exit 0 when the write read back equal and every stream
# message arrived once, in order, intact.

# shellcheck disable=SC2317  # the trap handlers are reached through trap
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
loss=0.02
messages=20000
size=1000
seed=1
keep=0
builddir=${SPINNIC_BUILDDIR:-$REPO/build}
STREAM=7

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
while [[ $# -gt 0 ]]; do
  case $1 in
    --loss) loss=$2; shift 2 ;;
    --loss=*) loss=${1#*=}; shift ;;
    --messages) messages=$2; shift 2 ;;
    --messages=*) messages=${1#*=}; shift ;;
    --size) size=$2; shift 2 ;;
    --size=*) size=${1#*=}; shift ;;
    --seed) seed=$2; shift 2 ;;
    --seed=*) seed=${1#*=}; shift ;;
    --keep) keep=1; shift ;;
    --builddir) builddir=$2; shift 2 ;;
    --builddir=*) builddir=${1#*=}; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "diad-pair: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ $messages =~ ^[0-9]+$ && $messages -ge 1 ]] ||
  { echo "diad-pair: --messages must be a whole number, at least 1" >&2; exit 2; }
[[ $size =~ ^[0-9]+$ && $size -ge 8 ]] ||
  { echo "diad-pair: --size must be a whole number of bytes, at least 8" >&2; exit 2; }
[[ $seed =~ ^[0-9]+$ ]] || { echo "diad-pair: --seed must be a whole number" >&2; exit 2; }
PY=$(command -v /usr/bin/python3 || command -v python3) ||
  { echo "diad-pair: python3 is needed" >&2; exit 1; }
"$PY" -c "import sys; p=float(sys.argv[1]); sys.exit(0 if 0 <= p < 1 else 1)" "$loss" 2>/dev/null ||
  { echo "diad-pair: --loss must be a probability in [0, 1), e.g. 0.02" >&2; exit 2; }

if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then
    echo "diad-pair: DPDK (memif, /var/run/dpdk) needs root; re-running with sudo"
    again=(--loss "$loss" --messages "$messages" --size "$size" --seed "$seed")
    [[ $keep -eq 1 ]] && again+=(--keep)
    exec sudo SPINNIC_BUILDDIR="$builddir" bash "$0" "${again[@]}"
  fi
  echo "diad-pair: run as root (DPDK memif between processes); sudo is not available" >&2
  exit 1
fi

step() { printf '\n== %s\n' "$*"; }

SPINNICD=$builddir/control/spinnicd
SPINCTL=$builddir/control/spinctl/spinctl
IMPAIR=$builddir/dataplane/impair/spinnic-impair
if [[ ! -x $SPINNICD || ! -x $SPINCTL || ! -x $IMPAIR ]]; then
  step "building spinnicd, spinctl and spinnic-impair in $builddir"
  [[ -f $builddir/build.ninja ]] || meson setup "$builddir" "$REPO"
  ninja -C "$builddir" control/spinnicd control/spinctl/spinctl dataplane/impair/spinnic-impair
fi

work=$(mktemp -d /tmp/spinnic-diad-pair.XXXXXX)
PFX=spinnic-diad-$$
impair_pid='' a_pid='' b_pid=''

stop() {  # stop PID: SIGTERM, at most 20 s, then SIGKILL
  local pid=$1 i
  [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 200; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
teardown() {
  # The appliances first, then the impair stage: no traffic is flowing by
  # then, and this order never crashed memif here.
  stop "$a_pid"
  stop "$b_pid"
  stop "$impair_pid"
  rm -rf "/var/run/dpdk/$PFX-a" "/var/run/dpdk/$PFX-b" "/var/run/dpdk/$PFX-impair"
}
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [[ $keep -eq 1 && $rc -eq 0 ]]; then exit 0; fi
  teardown
  if [[ -s $work/impair.out ]]; then
    step "the impair stage's own counters"
    grep -E '^spinnic-impair: (A->B|B->A):' "$work/impair.out" | sed 's/^spinnic-impair: /  /' || true
  fi
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'echo; echo "diad-pair: interrupted"; exit 130' INT TERM

# ctl X ARGS...: spinctl against appliance X, the command shown first.
ctl() {
  local x=$1
  shift
  echo "\$ spinctl -s $x $(printf '%q ' "$@")" >&2
  "$SPINCTL" --socket "$work/ctl-$x.sock" "$@"
}
quiet() { local x=$1; shift; "$SPINCTL" --socket "$work/ctl-$x.sock" "$@"; }

step "two appliances and an impairment stage (loss $loss each way, seed $seed) in $work"
for x in a b; do
  sed -e "s#/run/spinnic/diad/#$work/#g" -e "s/\"spinnic-diad-$x\"/\"$PFX-$x\"/" \
    "$REPO/deploy/configs/diad-$x.textproto" >"$work/diad-$x.textproto"
done
"$IMPAIR" \
  --port_a "net_memif0,role=server,socket=$work/wire-a.sock,socket-abstract=no" \
  --port_b "net_memif1,role=server,socket=$work/wire-b.sock,socket-abstract=no" \
  --seed "$seed" --loss "$loss" \
  -- -l 1 --no-huge -m 256 --no-pci --file-prefix "$PFX-impair" \
  >"$work/impair.out" 2>&1 </dev/null &
impair_pid=$!
for ((i = 0; i < 300; i++)); do
  [[ -S $work/wire-a.sock && -S $work/wire-b.sock ]] && break
  kill -0 "$impair_pid" 2>/dev/null || { cat "$work/impair.out"; exit 1; }
  sleep 0.1
done
for x in a b; do
  "$SPINNICD" --config "$work/diad-$x.textproto" --control_socket "$work/ctl-$x.sock" \
    --control_max_message_bytes $((64 << 20)) >"$work/spinnicd-$x.out" 2>&1 </dev/null &
  if [[ $x == a ]]; then a_pid=$!; else b_pid=$!; fi
done
for x in a b; do
  for ((i = 0; i < 600; i++)); do
    quiet "$x" --timeout_ms 2000 health >/dev/null 2>&1 && break
    pid=$a_pid; [[ $x == b ]] && pid=$b_pid
    kill -0 "$pid" 2>/dev/null || { tail -20 "$work/spinnicd-$x.out"; exit 1; }
    sleep 0.1
  done
done
echo "spinnic-impair pid $impair_pid, spinnicd A pid $a_pid (fd00:d1ad::1), B pid $b_pid (fd00:d1ad::2)"
quiet a info | sed -n '/^diad:/,$p'

step "A's peers"
ctl a peers

step "remote write and read: a region on B, written and read back from A"
ctl b region-register --length 65536 --access remote_write,remote_read --name demo
quiet b regions --json >"$work/regions.json"
read -r rkey base < <("$PY" -c "
import json,sys; r=[r for r in json.load(open(sys.argv[1]))['regions'] if r.get('name') == 'demo'][0]
print(hex(int(r['rkey'])), hex(int(r['base_address'])))" "$work/regions.json")
text="hello from A through a lossy link ($(date -u +%H:%M:%S))"
ctl a remote-write b "$rkey" "$base" --data "$text" --timeout_ms 20000
ctl a remote-read b "$rkey" "$base" "${#text}" --timeout_ms 20000 | tee "$work/read.txt"
quiet a remote-read b "$rkey" "$base" "${#text}" --raw --timeout_ms 20000 >"$work/read.bin"
write_ok=0
[[ $(cat "$work/read.bin") == "$text" ]] && write_ok=1

step "a stream with a handler on B: stream_check on stream $STREAM"
printf 'name: "check"\nkind: "stream_check"\ndiad { stream_id: %d }\n' "$STREAM" >"$work/check.textproto"
ctl b install --handler_file "$work/check.textproto"
ctl b handlers
quiet a stats --json >"$work/a0.json"
quiet b stats --json >"$work/b0.json"
start=$(date +%s.%N)
ctl a stream-send b "$STREAM" --count "$messages" --size "$size" --timeout_ms 600000
elapsed=$("$PY" -c "import sys,time; print('%.1f' % (time.time() - float(sys.argv[1])))" "$start")
echo "($messages messages of $size bytes in $elapsed s)"
ctl b handlers
quiet b state check --length 64 --raw >"$work/state.bin"
stream_ok=0
"$PY" - "$work/state.bin" "$messages" "$size" <<'EOF' && stream_ok=1
import struct, sys
state, n, size = open(sys.argv[1], "rb").read(), int(sys.argv[2]), int(sys.argv[3])
names = ("expected", "messages", "ok", "bad", "out_of_order", "bytes", "first_error", "unchecked")
v = dict(zip(names, struct.unpack("<8Q", state)))
print("stream_check state: " + ", ".join(f"{k} {v[k]}" for k in names))
good = v["ok"] == v["messages"] == v["expected"] == n and v["bytes"] == n * size and \
    v["bad"] == v["out_of_order"] == v["unchecked"] == 0
print("  -> every message once, in order, intact" if good else "  -> NOT as sent")
sys.exit(0 if good else 1)
EOF

step "DiAD counters during the stream (A sends, B receives)"
quiet a stats --json >"$work/a1.json"
quiet b stats --json >"$work/b1.json"
"$PY" - "$work" <<'EOF'
import json, sys
w = sys.argv[1]
def counters(path):
    return {c["name"]: int(c["value"]) for c in json.load(open(path)).get("diad", [])}
for x, names in (("a", ("tx_data", "retransmits", "nacks_received", "unacks_sent", "acks_received", "ops_completed", "ops_failed")),
                 ("b", ("rx_packets", "messages_delivered", "bytes_delivered", "acks_sent", "nacks_sent",
                        "drop_bad_checksum", "drop_duplicate", "drop_out_of_order"))):
    before, after = counters(f"{w}/{x}0.json"), counters(f"{w}/{x}1.json")
    print(f"  {x.upper()}: " + ", ".join(f"{n} {after.get(n, 0) - before.get(n, 0)}" for n in names))
EOF

if [[ $write_ok -eq 1 && $stream_ok -eq 1 ]]; then
  echo
  echo "diad-pair: OK: the write read back equal; $messages stream messages arrived once, in order, intact"
  rc=0
else
  echo
  echo "diad-pair: FAILED (see above)"
  rc=1
fi
if [[ $keep -eq 1 && $rc -eq 0 ]]; then
  echo
  echo "Left running (--keep):"
  echo "  $SPINCTL --socket $work/ctl-a.sock peers      # appliance A"
  echo "  $SPINCTL --socket $work/ctl-b.sock handlers   # appliance B"
  echo "Stop: kill $a_pid $b_pid; sleep 2; kill $impair_pid; rm -rf $work /var/run/dpdk/$PFX-*"
fi
exit "$rc"
