#!/usr/bin/env bash
# callgrind.sh [-n N] BENCHMARK_BINARY [FILTER]
#
# Instructions per iteration (per packet, per lookup, per buffer) of the
# micro-benchmarks matching FILTER (a --benchmark_filter regex; default: all),
# counted by valgrind's callgrind: deterministic, unlike nanoseconds on a
# shared machine.
#
# Each benchmark runs twice under callgrind, for exactly N and 2N iterations
# (SPINNIC_BENCH_ITERATIONS, see bench_util.h). The difference of the two
# instruction totals divided by N is the cost of one iteration: process
# start, EAL initialisation and the benchmark's own setup (4096 ECTXs, 65536
# regions) cancel out, up to a few hundred instructions (the two runs print
# different timings): with -n 1000 that is below one instruction per
# iteration. The benchmark loop's own instructions, measured the same way on
# bench::BM_EmptyLoop, are then subtracted.
#
#   bench/micro/callgrind.sh build/bench/micro/hpu_path_bench 'BM_Parse'
#   bench/micro/callgrind.sh -n 200 build/bench/micro/hpu_path_bench \
#       'BM_EctxMatch/.*_last'
#
# Valgrind hides AVX-512 from CPUID, so code that picks its path at run time
# takes its SSE/AVX2 path here (checksum_bench skips its AVX-512 variants).
# Needs valgrind (deploy/install-deps.sh installs it).
set -euo pipefail

usage() {
  echo "usage: $0 [-n ITERATIONS] BENCHMARK_BINARY [FILTER]" >&2
  exit 2
}

n=1000
while getopts "n:h" opt; do
  case $opt in
    n) n=$OPTARG ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[[ $# -ge 1 && $# -le 2 ]] || usage
binary=$1
filter=${2:-.}
[[ $n =~ ^[1-9][0-9]*$ ]] || { echo "$0: -n wants a positive integer, got '$n'" >&2; exit 2; }
[[ -x $binary ]] || { echo "$0: $binary is not an executable (build it first)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "$0: valgrind not found (deploy/install-deps.sh)" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Regex-escapes a benchmark name for --benchmark_filter.
# shellcheck disable=SC2001  # one sed bracket class reads better here
escape() { sed 's/[][\.*^$+?(){}|]/\\&/g' <<<"$1"; }

# Total instructions (Ir) of one callgrind run of benchmark $1 for $2
# iterations; prints "error: ..." instead when the benchmark reports one.
total_ir() {
  local name=$1 iterations=$2 out="$work/callgrind.out" log="$work/log"
  local status=0
  rm -f "$out"
  SPINNIC_BENCH_ITERATIONS=$iterations valgrind -q --tool=callgrind \
    --callgrind-out-file="$out" "$binary" \
    --benchmark_filter="^$(escape "$name")(/iterations:[0-9]+)?\$" \
    >"$log" 2>&1 || status=$?
  if [[ $status -ne 0 ]]; then
    echo "error: exit status $status: $(tail -1 "$log")"
    return
  fi
  if grep -q "ERROR OCCURRED" "$log"; then
    echo "error: $(grep -o "ERROR OCCURRED: .*" "$log" | head -1 | cut -d"'" -f2)"
    return
  fi
  if ! grep -q "/iterations:$iterations " "$log"; then
    echo "error: it did not run for $iterations iterations"
    return
  fi
  awk '/^summary:/ { print $2 }' "$out"
}

# Instructions per iteration of benchmark $1 over $2 and 2 x $2 iterations
# (a decimal), or "error: ...".
per_iteration() {
  local a b
  a=$(total_ir "$1" "$2")
  [[ $a == error* ]] && { echo "$a"; return; }
  b=$(total_ir "$1" $((2 * $2)))
  [[ $b == error* ]] && { echo "$b"; return; }
  awk -v a="$a" -v b="$b" -v n="$2" 'BEGIN { printf "%.1f", (b - a) / n }'
}

mapfile -t names < <("$binary" --benchmark_list_tests \
  --benchmark_filter="$filter" 2>/dev/null | grep -v 'BM_EmptyLoop$' || true)
if [[ ${#names[@]} -eq 0 ]]; then
  echo "$0: no benchmark of $binary matches '$filter'" >&2
  exit 1
fi

# The loop costs two or three instructions; run it long enough that the few
# hundred instructions by which two runs' start-up and printing differ vanish.
loop=$(per_iteration "bench::BM_EmptyLoop" 100000)
if [[ $loop == error* ]]; then
  echo "$0: cannot measure the empty loop: $loop" >&2
  exit 1
fi

echo "callgrind, $n and $((2 * n)) iterations; the loop itself, $loop" \
  "instructions per iteration, subtracted"
printf '%-48s %14s\n' "benchmark" "instructions"
for name in "${names[@]}"; do
  ir=$(per_iteration "$name" "$n")
  if [[ $ir == error* ]]; then
    printf '%-48s %14s\n' "$name" "($ir)"
  else
    printf '%-48s %14s\n' "$name" \
      "$(awk -v ir="$ir" -v loop="$loop" 'BEGIN { printf "%.1f", ir - loop }')"
  fi
done
