#!/usr/bin/env bash
# Passthrough rate of spinnicd with a handler on every frame, in three modes
# run alternately each round so that the machine's noise hits all alike:
#   none    no handler
#   native  the compiled-in `count` handler
#   bpf     the eBPF example count.o (BUILD_DIR/handlers/bpf/count.o), kind `bpf`
# net_null frames have ethertype 0 and the handlers have no match rule, so
# every frame reaches the handler; its `packets` counter in the stats JSON
# must be > 0 or the run fails. Prints Mpps per run (wall clock), per mode
# the median, and the median ratios bpf/native and native/none. Then, when
# valgrind and BUILD_DIR/bench/micro/hpu_loop_bench exist, the in-process
# instructions per frame of native count and bpf count (callgrind: not
# wall clock, deterministic).
#
# Ports: two net_null vdevs (copy=1), paired; one worker lcore on core 1,
# the main lcore on core 0, no hugepages.
#
# usage: bench/linerate/handler_cost.sh [BUILD_DIR] [SECONDS] [ROUNDS] [SIZE]
set -euo pipefail
build=${1:-build-rel}
seconds=${2:-4}
rounds=${3:-3}
size=${4:-64}
spinnicd="$build/control/spinnicd"
bpf_obj="$(realpath -m "$build/handlers/bpf/count.o")"
[[ -x "$spinnicd" ]] || { echo "no $spinnicd: build first (ninja -C $build control/spinnicd)" >&2; exit 1; }
[[ -f "$bpf_obj" ]] || { echo "no $bpf_obj: build it (ninja -C $build handlers/bpf/count.o; needs clang)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work" /var/run/dpdk/bench-hcost' EXIT

modes=(none native bpf)

run_spinnicd() {  # mode -> Mpps (both directions); fails if the handler saw nothing
  local mode=$1 handler=""
  case $mode in
    native) handler='handlers { name: "c" kind: "count" state_size: 16 }' ;;
    bpf) handler="handlers { name: \"c\" kind: \"bpf\" state_size: 16 params { key: \"program_file\" value: \"$bpf_obj\" } }" ;;
  esac
  cat >"$work/null.textproto" <<CONF
eal_args: ["--no-huge", "-m", "512", "--no-pci", "--file-prefix", "bench-hcost"]
ports { name: "a" vdev: "net_null0,size=$size,copy=1" role: PORT_ROLE_WIRE }
ports { name: "b" vdev: "net_null1,size=$size,copy=1" role: PORT_ROLE_HOST }
port_pairs { a: "a" b: "b" }
workers: [1]
main_lcore: 0
runtime { duration_s: $seconds stats_interval_ms: 0 mbufs: 16384 }
$handler
CONF
  if ! "$spinnicd" --config "$work/null.textproto" --stats_json "$work/s.json" >"$work/s.log" 2>&1; then
    echo "spinnicd failed in mode $mode:" >&2
    tail -n 20 "$work/s.log" >&2
    return 1
  fi
  python3 - "$work/s.json" "$work/s.log" "$mode" <<'PY'
import json, re, sys
stats = json.load(open(sys.argv[1]))
secs = float(re.search(r"final counters after ([0-9.]+) s", open(sys.argv[2]).read()).group(1))
if sys.argv[3] != "none":
    seen = sum(int(h["packets"]) for h in stats.get("handlers", []) if h["name"] == "c")
    if seen <= 0:  # uint64: a JSON string
        sys.exit("mode %s: handler 'c' counted %d packets: the frames did not reach it" % (sys.argv[3], seen))
print("%.3f" % (sum(int(p["tx_packets"]) for p in stats["ports"]) / secs / 1e6))
PY
}

median() { printf "%s\n" "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "# WALL CLOCK: spinnicd passthrough with a handler on every frame, net_null x2 (copy=1), ${size} B,"
echo "# 1 worker lcore, ${seconds}s x ${rounds} rounds, modes alternated each round"
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), DPDK $(pkg-config --modversion libdpdk 2>/dev/null || echo '?')"
declare -A runs=()
for round in $(seq 1 "$rounds"); do
  for mode in "${modes[@]}"; do
    mpps=$(run_spinnicd "$mode")
    runs[$mode]+="$mpps "
    echo "round $round $mode $mpps Mpps"
  done
done

echo "# summary (wall clock, Mpps both directions): median over $rounds rounds"
declare -A med=()
for mode in "${modes[@]}"; do
  read -ra values <<<"${runs[$mode]}"
  med[$mode]=$(median "${values[@]}")
  printf "%-7s median %8s Mpps   rounds: %s\n" "$mode" "${med[$mode]}" "${runs[$mode]% }"
done
ratio() { python3 -c "print('%.3f' % ($1 / $2) if $2 > 0 else 'n/a')"; }
echo "ratio bpf/native  (medians): $(ratio "${med[bpf]}" "${med[native]}")"
echo "ratio native/none (medians): $(ratio "${med[native]}" "${med[none]}")"

loop_bench="$build/bench/micro/hpu_loop_bench"
if command -v valgrind >/dev/null && [[ -x "$loop_bench" ]]; then
  echo
  echo "# INSTRUCTIONS (callgrind, in-process, not wall clock): hpu_loop_bench, 32 frames per iteration"
  echo "# mode:3 = native count, mode:4 = bpf count; whole HPU loop per frame"
  "$(dirname "$0")/../micro/callgrind.sh" -n 300 "$loop_bench" 'BM_HpuLoop/mode:[34]' | tee "$work/cg.txt"
  awk '/^BM_HpuLoop\/mode:3/ {m="native"} /^BM_HpuLoop\/mode:4/ {m="bpf"}
       m && $NF ~ /^[0-9.]+$/ {printf "%-7s %8.1f instructions per frame\n", m, $NF / 32; m=""}' "$work/cg.txt"
else
  echo "# (no valgrind or no $loop_bench: instructions per frame skipped)"
fi
