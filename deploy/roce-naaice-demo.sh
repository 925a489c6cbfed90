#!/usr/bin/env bash
# roce-naaice-demo.sh [--builddir DIR] [--size N] [--rpcs K]
#
# Offloading a function to spinnic over RoCEv2, NAAICE style (docs/naaice.md),
# after the quick start's build, as root:
#   1. starts spinnicd (tests/interop/spinnicd.textproto: the appliance at
#      192.0.2.11, NAAICE port 12345) on the free end of a veth in a private
#      network namespace with a bridge (/work/shared/tools/rxe-peer),
#   2. boots one Debian guest under qemu whose kernel's soft-RoCE (rdma_rxe)
#      is the RDMA host; it runs tests/interop/naaice_client (built here with
#      gcc): connect over rdma_cm, memory-region setup (MRSP), then K calls of
#      vector_sum (y = a + b, N doubles) and K of matvec (y = A x, A N x N,
#      written once), then K of add1 (the NAAICE library's kernel 1: every
#      byte + 1, N bytes), every result checked by the client,
#   3. prints the client's per-call lines (time of each call in microseconds,
#      measured in the guest) and the appliance's RoCE counters,
#   4. removes everything it started (namespace, guest, spinnicd).
# The steps are tests/interop/interop.sh's `naaice` case, run in its own
# namespace ("spn-naademo") and kept in /tmp/spinnic-naaice-demo/naaice/
# (guest output, spinnicd logs, capture.pcap and its spinctl decode).
# Needs qemu-system-x86_64, tcpdump, gcc, libibverbs-dev, librdmacm-dev and
# the rxe guest image (run_peer.sh build: once, about 2 minutes). About 1-2
# minutes (the guest runs under software emulation). Exit 0 when every
# result was right.
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
builddir=${SPINNIC_BUILDDIR:-$REPO/build}
size=64
rpcs=5
while [[ $# -gt 0 ]]; do
  case $1 in
    --builddir) builddir=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --rpcs) rpcs=$2; shift 2 ;;
    -h | --help) sed -n '2,26p' "$0"; exit 0 ;;
    *) echo "roce-naaice-demo: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
SPINNICD=$builddir/control/spinnicd
SPINCTL=$builddir/control/spinctl/spinctl
[[ $(id -u) -eq 0 ]] || { echo "roce-naaice-demo: run as root (namespace, tap, qemu)" >&2; exit 1; }
[[ -x $SPINNICD && -x $SPINCTL ]] || {
  echo "roce-naaice-demo: build first: ninja -C $builddir control/spinnicd control/spinctl/spinctl" >&2
  exit 1
}
RUN_ROOT=/tmp/spinnic-naaice-demo
RUN=$RUN_ROOT/naaice

echo "== spinnicd on a veth (192.0.2.11, NAAICE port 12345), one soft-RoCE guest (192.0.2.12)"
echo "== guest: naaice_client vector_sum, matvec, add1, size $size, $rpcs calls each"
t0=$(date +%s)
INTEROP_NETNS=spn-naademo INTEROP_RUN_DIR=$RUN_ROOT NAAICE_SIZE=$size NAAICE_RPCS=$rpcs \
  bash "$REPO/tests/interop/interop.sh" naaice "$SPINNICD" "$SPINCTL" >"$RUN_ROOT.log" 2>&1
rc=$?
if [[ $rc -eq 77 ]]; then
  grep -m1 'SKIP' "$RUN_ROOT.log"
  exit 1
fi

echo
echo "== the client (in the guest): setup, then one line per call"
grep -E '^(vector_sum|matvec|add1): (mrsp ok|rpc|naaice_client|FAIL)' "$RUN/cli/out.log" 2>/dev/null || echo "(no client output: see $RUN_ROOT.log)"
echo
# The guest's times include its software-emulated CPU; the capture on the
# bridge shows the appliance's own part of each call.
echo "== on the wire (capture.pcap): last input WRITE WITH IMMEDIATE in -> result out, us per call"
awk '/192\.0\.2\.12 -> 192\.0\.2\.11 RC RDMA Write (Only|Last) Immediate/ { t = $2 }
  /192\.0\.2\.11 -> 192\.0\.2\.12 RC RDMA Write (Only|Last) Immediate/ {
    if (t) { printf "%.0f ", ($2 - t) * 1e6; t = 0 } }
  END { print "" }' "$RUN/capture.txt" 2>/dev/null
echo
echo "== the appliance's RoCE counters (spinctl stats, non-zero)"
if [[ -s $RUN/stats_final.json ]]; then
  python3 - "$RUN/stats_final.json" <<'EOF'
import json, sys
stats = json.load(open(sys.argv[1]))
shown = [(c["name"], int(c["value"])) for c in stats.get("roce", []) if int(c.get("value", 0))]
for i in range(0, len(shown), 3):
    print("  " + "".join(f"{n:>20} {v:<10}" for n, v in shown[i:i + 3]))
EOF
else
  echo "(none: see $RUN_ROOT.log)"
fi
echo
echo "== $(grep -c '] PASS: ' "$RUN_ROOT.log") passed, $(grep -c '] FAIL: ' "$RUN_ROOT.log") failed in $(($(date +%s) - t0)) s;" \
  "everything stopped; files in $RUN"
exit $rc
