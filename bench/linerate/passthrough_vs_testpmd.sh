#!/usr/bin/env bash
# Passthrough forwarding rate of spinnicd against dpdk-testpmd (io forwarding)
# on the same virtual ports in the same run, measured alternately so that
# the machine's noise hits both alike. Prints Mpps per run and the median
# ratio spinnicd / testpmd per frame size.
#
# Ports: two net_null vdevs (copy=1, so every frame's bytes are written by
# the PMD as a NIC's DMA would), paired; one forwarding lcore on core 1, the
# main lcore on core 0, no hugepages.
#
# spinnicd runs twice per round: as configured by default (every frame's
# ethertype read, runts and truncated headers dropped and counted), and with
# both ports' forward_unchecked (no frame's bytes read: the work testpmd's io
# forwarding does).
#
# usage: bench/linerate/passthrough_vs_testpmd.sh [BUILD_DIR] [SECONDS] [ROUNDS]
set -euo pipefail
build=${1:-build}
seconds=${2:-5}
rounds=${3:-3}
spinnicd="$build/control/spinnicd"
[[ -x "$spinnicd" ]] || { echo "no $spinnicd: build first (ninja -C $build)" >&2; exit 1; }
command -v dpdk-testpmd >/dev/null || { echo "dpdk-testpmd not found (apt-get install dpdk)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work" /var/run/dpdk/bench-spinnicd /var/run/dpdk/bench-testpmd' EXIT

eal=(--no-huge -m 512 --no-pci)
# shellcheck source=bench/linerate/null_passthrough.sh
source "$(dirname "${BASH_SOURCE[0]}")/null_passthrough.sh"

run_spinnicd() {  # size [port fields] -> Mpps (both directions)
  null_passthrough_mpps "$spinnicd" "$work" bench-spinnicd "$1" "$seconds" 1 16384 "${2:-}"
}

run_testpmd() {  # size -> Mpps (both directions)
  local size=$1
  { echo start; sleep "$seconds"; echo stop; sleep 1; echo quit; } |
    dpdk-testpmd "${eal[@]}" --file-prefix bench-testpmd --lcores 0@0,1@1 \
      --vdev "net_null0,size=$size,copy=1" --vdev "net_null1,size=$size,copy=1" \
      -- -i --forward-mode=io --nb-cores=1 --total-num-mbufs=16384 >"$work/t.log" 2>&1
  python3 - "$work/t.log" "$seconds" <<'PY'
import re, sys
log = open(sys.argv[1]).read()
acc = log.split("Accumulated forward statistics")[1]
tx = int(re.search(r"TX-packets:\s+(\d+)", acc).group(1))
print("%.3f" % (tx / float(sys.argv[2]) / 1e6))
PY
}

echo "# passthrough, net_null x2 (copy=1), 1 forwarding lcore, ${seconds}s x ${rounds} rounds"
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), DPDK $(pkg-config --modversion libdpdk 2>/dev/null || echo '?')"
median() { printf "%s\n" "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

printf "%-6s %-6s %12s %12s %12s %8s %10s\n" size round spinnicd unchecked testpmd ratio unchecked
for size in 64 1500; do
  ratios=()
  unchecked_ratios=()
  for round in $(seq 1 "$rounds"); do
    s=$(run_spinnicd "$size")
    u=$(run_spinnicd "$size" "forward_unchecked: true")
    t=$(run_testpmd "$size")
    r=$(python3 -c "print('%.3f' % ($s / $t))")
    ru=$(python3 -c "print('%.3f' % ($u / $t))")
    ratios+=("$r")
    unchecked_ratios+=("$ru")
    printf "%-6s %-6s %12s %12s %12s %8s %10s\n" "$size" "$round" "$s" "$u" "$t" "$r" "$ru"
  done
  printf "%-6s median ratio spinnicd/testpmd: %s; forward_unchecked: %s\n" "$size" \
    "$(median "${ratios[@]}")" "$(median "${unchecked_ratios[@]}")"
done
