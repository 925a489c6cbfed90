#!/usr/bin/env bash
# deep.sh [--runs N] [--max-time S] [--parallel P] [--no-merge] [--build DIR]
#         [TARGET...]
#
# Deep fuzzing (docs/testing.md, "Deep fuzzing"): builds the clang libFuzzer
# binaries (tests/fuzz/<target>_fuzzer, -fsanitize=fuzzer,address) in
# ./build-fuzz, runs each TARGET (default: every target in
# tests/fuzz/meson.build) for N executions (default 10^7) from its checked-in
# corpus, then merges what it found into tests/fuzz/corpus/<target> with
# -set_cover_merge=1 -use_counters=0: the fewest new inputs that reach every
# edge the checked-in corpus does not (the corpus stays small). Prints one
# line per target: executions, exec/s, new corpus files, findings (crash,
# leak, timeout or out-of-memory reproducers, kept in
# build-fuzz/deep/<target>/), and exits non-zero if any target found
# anything or failed to run.
#   --runs N       executions per target (libFuzzer -runs)
#   --max-time S   stop a target after S seconds even short of N (libFuzzer
#                  -max_total_time; the line shows the executions reached)
#   --parallel P   targets fuzzed at once (default 1; one core each)
#   --no-merge     leave tests/fuzz/corpus alone
#   --build DIR    the clang tree (default ./build-fuzz)
# Long runs: `nice -n 19 tests/fuzz/deep.sh` keeps the machine usable.
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO" || exit 1
runs=10000000
parallel=1
max_time=0
merge=1
BUILD=$REPO/build-fuzz
targets=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --runs) runs=$2; shift ;;
    --parallel) parallel=$2; shift ;;
    --max-time) max_time=$2; shift ;;
    --no-merge) merge=0 ;;
    --build) BUILD=$(realpath -m "$2"); shift ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    -*) echo "deep: unknown argument '$1'" >&2; exit 2 ;;
    *) targets+=("$1") ;;
  esac
  shift
done
MESON=$REPO/tests/fuzz/meson.build
all=$(sed -n "/^fuzz_targets = \[/,/\]/p" "$MESON" | grep -o "'[a-z_]*'" | tr -d "'")
[[ ${#targets[@]} -eq 0 ]] && mapfile -t targets <<<"$all"
for t in "${targets[@]}"; do
  if ! grep -qx "$t" <<<"$all"; then
    echo "deep: no fuzz target '$t' (targets: $(echo $all))" >&2
    exit 2
  fi
done

if ! command -v clang++ >/dev/null; then
  echo "deep: the libFuzzer binaries need clang (apt-get install clang)" >&2
  exit 1
fi
if [[ ! -f $BUILD/build.ninja ]]; then
  [[ -d $BUILD/meson-private ]] && rm -rf "$BUILD"
  CC=clang CXX=clang++ meson setup "$BUILD" "$REPO" -Dbench=false \
    -Dintegration=false -Ddebug=false -Dc_args=-g1 -Dcpp_args=-g1 || exit 1
fi
# shellcheck disable=SC2046  # one target a word
ninja -C "$BUILD" -j2 $(printf 'tests/fuzz/%s_fuzzer ' "${targets[@]}") || exit 1

# fuzz_one TARGET: runs it, merges, writes deep/TARGET/result.
fuzz_one() {
  local t=$1 bin=$BUILD/tests/fuzz/${1}_fuzzer
  local work=$BUILD/deep/$t corpus=$REPO/tests/fuzz/corpus/$t
  rm -rf "$work"
  mkdir -p "$work/new"
  # The same input size limit as the regression test (tests/fuzz/meson.build).
  local max_len
  max_len=$(grep -o "^ *'$t' : \[.*" "$MESON" | grep -o 'max_len=[0-9]*' | cut -d= -f2)
  local start end rc
  start=$(date +%s)
  "$bin" -runs="$runs" -max_total_time="$max_time" \
    ${max_len:+-max_len=$max_len} -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/" \
    "$work/new" "$corpus" >"$work/log" 2>&1
  rc=$?
  end=$(date +%s)
  local execs rate findings added=0
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/log" | grep -o '[0-9]*$')
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$work/log" | grep -o '[0-9]*$')
  findings=$(find "$work" -maxdepth 1 -regex '.*/\(crash\|leak\|timeout\|oom\|slow-unit\)-.*' | wc -l)
  if [[ $rc -ne 0 && $findings -eq 0 ]]; then findings=1; fi  # died some other way
  if [[ $merge -eq 1 && $findings -eq 0 ]]; then
    local before after
    before=$(find "$corpus" -maxdepth 1 -type f | wc -l)
    # The smallest set of new inputs (greedy set cover) that reaches every
    # edge the checked-in corpus does not; hit-count buckets are left out
    # (-use_counters=0), which keeps the corpus to tens of files a target.
    "$bin" -set_cover_merge=1 -use_counters=0 \
      ${max_len:+-max_len=$max_len} "$corpus" "$work/new" \
      >"$work/merge.log" 2>&1 || echo "deep: $t: merge failed (see $work/merge.log)" >&2
    after=$(find "$corpus" -maxdepth 1 -type f | wc -l)
    added=$((after - before))
  fi
  printf '%-11s %12s %8s %5s %3s %6s\n' "$t" "${execs:-?}" "${rate:-?}" \
    "$added" "$findings" "$((end - start))" >"$work/result"
}

printf '%-11s %12s %8s %5s %3s %6s\n' target executions exec/s new findings seconds
running=0
for t in "${targets[@]}"; do
  fuzz_one "$t" &
  running=$((running + 1))
  if [[ $running -ge $parallel ]]; then
    wait -n
    running=$((running - 1))
  fi
done
wait
failed=0
for t in "${targets[@]}"; do
  r=$BUILD/deep/$t/result
  if [[ -f $r ]]; then
    cat "$r"
    [[ $(awk '{print $5}' "$r") == 0 ]] || {
      failed=$((failed + 1))
      echo "  -> $t: see $BUILD/deep/$t/log and its reproducers there" >&2
    }
  else
    printf '%-11s did not finish\n' "$t"
    failed=$((failed + 1))
  fi
done
echo "deep: $((${#targets[@]} - failed)) targets clean, $failed with findings or errors"
[[ $failed -eq 0 ]]
