#!/usr/bin/env bash
# Passthrough forwarding rate of spinnicd with 1 HPU against 2 HPUs on the
# same net_null ports in the same run, measured alternately so that the
# machine's noise hits both alike. Prints Mpps per run, the median ratio
# 2 HPUs / 1 HPU per frame size, and whether the figures are
# scheduler-bound: busy pollers (the HPUs) outnumber this machine's cores,
# or share a core with the main lcore, so they measure the scheduler as much
# as spinnic. bench/cost/ has the per-packet cost that does not depend on
# it.
#
# Ports: two net_null vdevs (copy=1: every frame's bytes are written, as a
# NIC's DMA would), paired, one queue per HPU (the null PMD has as many as
# asked for). 1 HPU: worker on core 1, main lcore on core 0. 2 HPUs: workers
# on cores 1 and 0 (the main lcore shares core 0; it sleeps between stats).
#
# usage: bench/linerate/hpu_scaling.sh [BUILD_DIR] [SECONDS] [ROUNDS]
#   BUILD_DIR/bench/linerate/hpu_scaling.json gets every figure.
set -euo pipefail
build=${1:-build}
seconds=${2:-5}
rounds=${3:-3}
spinnicd="$build/control/spinnicd"
[[ -x "$spinnicd" ]] || { echo "no $spinnicd: build first (ninja -C $build)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work" /var/run/dpdk/bench-scaling' EXIT
cores=$(nproc)

# shellcheck source=bench/linerate/null_passthrough.sh
source "$(dirname "${BASH_SOURCE[0]}")/null_passthrough.sh"
run_spinnicd() {  # size workers -> Mpps (both directions)
  null_passthrough_mpps "$spinnicd" "$work" bench-scaling "$1" "$seconds" "$2" 32768
}

echo "# passthrough, net_null x2 (copy=1), ${seconds}s x ${rounds} rounds, ${cores} cores"
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), DPDK $(pkg-config --modversion libdpdk 2>/dev/null || echo '?')"
printf "%-6s %-6s %12s %12s %8s\n" size round 1hpu_mpps 2hpu_mpps ratio
results=()
for size in 64 1500; do
  ratios=()
  for round in $(seq 1 "$rounds"); do
    one=$(run_spinnicd "$size" "1")
    two=$(run_spinnicd "$size" "1, 0")
    r=$(python3 -c "print('%.3f' % ($two / $one))")
    ratios+=("$r")
    results+=("{\"size\": $size, \"round\": $round, \"hpu1_mpps\": $one, \"hpu2_mpps\": $two}")
    printf "%-6s %-6s %12s %12s %8s\n" "$size" "$round" "$one" "$two" "$r"
  done
  median=$(printf "%s\n" "${ratios[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  printf "%-6s median ratio 2 HPUs / 1 HPU: %s\n" "$size" "$median"
done
# Two pollers on two cores share core 0 with the main lcore and with
# whatever else runs here: the 2-HPU figure is scheduler-bound unless the
# machine has a core per poller plus one.
scheduler_bound=$([[ $cores -ge 3 ]] && echo false || echo true)
echo "scheduler_bound: $scheduler_bound (2 pollers + main lcore on $cores cores)"
out="$build/bench/linerate/hpu_scaling.json"
mkdir -p "$(dirname "$out")"
{
  echo "{\"cores\": $cores, \"seconds\": $seconds, \"scheduler_bound\": $scheduler_bound,"
  echo " \"runs\": [$(IFS=,; echo "${results[*]}")]}"
} >"$out"
echo "wrote $out"
