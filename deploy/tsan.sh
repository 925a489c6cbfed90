#!/usr/bin/env bash
# tsan.sh [--suite NAME]... [--jobs N] [TEST...]
#
# The ThreadSanitizer run (docs/testing.md, "ThreadSanitizer"):
#   1. configures ./build-tsan with clang and -Db_sanitize=thread (once),
#   2. builds only what the chosen suites' tests run (default: the unit and
#      dataplane suites; their executables and the targets they depend on,
#      from meson introspect),
#   3. runs them with TSAN_OPTIONS halt_on_error=1 and exitcode=66, so any
#      ThreadSanitizer report fails its test, and with deploy/tsan.supp
#      (reports that lie wholly inside the uninstrumented Debian DPDK),
#      and tests/tsan/absl_mutex_annotations.cc preloaded (Debian's
#      absl::Mutex is uninstrumented too; the preload annotates it),
#   4. prints the number of ThreadSanitizer reports, the wall time and the
#      closing line `N passed, N failed`; exits non-zero on any failure.
# TEST names (as `meson test --list` prints them, e.g. ring_dataplane)
# narrow the run to those tests of the chosen suites. Without names, the
# tests of suite 'grpc' (gRPC server and client in process; Debian's libgrpc
# is uninstrumented) are left out.
# Not part of .ci/run: the TSan tree is a third full compile of the
# dataplane (see docs/testing.md for the time it takes).
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO" || exit 1
BUILD=$REPO/build-tsan
suites=()
tests=()
jobs=2
while [[ $# -gt 0 ]]; do
  case $1 in
    --suite) suites+=("$2"); shift ;;
    --jobs) jobs=$2; shift ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    -*) echo "tsan: unknown argument '$1'" >&2; exit 2 ;;
    *) tests+=("$1") ;;
  esac
  shift
done
[[ ${#suites[@]} -eq 0 ]] && suites=(unit dataplane)
PY=$(command -v /usr/bin/python3 || command -v python3)
start=$(date +%s)

if ! command -v clang++ >/dev/null; then
  echo "tsan: needs clang (apt-get install clang)" >&2
  exit 1
fi

# Configure once. -g1: line tables and function names are all a report
# needs. RTE_USE_C11_MEM_MODEL makes DPDK's header-only ring code use C11
# acquire/release atomics (which TSan understands) instead of x86 compiler
# barriers (which it cannot see); the ring layout is the same either way.
if [[ ! -f $BUILD/build.ninja ]]; then
  [[ -d $BUILD/meson-private ]] && rm -rf "$BUILD"
  CC=clang CXX=clang++ meson setup "$BUILD" "$REPO" \
    -Db_sanitize=thread -Db_lundef=false -Dbench=false -Dintegration=false \
    -Ddebug=false -Dc_args="-g1 -DRTE_USE_C11_MEM_MODEL" \
    -Dcpp_args="-g1 -DRTE_USE_C11_MEM_MODEL" || exit 1
fi

# The ninja targets the chosen suites' (or tests') executables need.
# Tests that run gRPC's server and client in process (suite 'grpc') are left
# out unless named: Debian's libgrpc is not built with TSan, and its internal
# hand-overs between its own threads are reported as races (docs/testing.md).
no_suite=()
[[ ${#tests[@]} -eq 0 ]] && no_suite=(--no-suite grpc)
targets=$("$PY" "$REPO/deploy/suite_targets.py" "${no_suite[@]}" "$BUILD" \
  "${suites[*]}" "${tests[*]}") || exit 1
if [[ -z $targets ]]; then
  echo "tsan: no test in suites '${suites[*]}' matches '${tests[*]}'" >&2
  exit 2
fi
# shellcheck disable=SC2086  # one target a word
ninja -C "$BUILD" -j"$jobs" $targets || { echo "0 passed, 1 failed"; exit 1; }
# Debian's absl::Mutex is not instrumented: tests/tsan/absl_mutex_annotations.cc,
# preloaded, tells TSan what its Lock/Unlock/Await order.
PRELOAD=$BUILD/tests/tsan/libabsl_mutex_annotations.so
if [[ ! -f $PRELOAD || $REPO/tests/tsan/absl_mutex_annotations.cc -nt $PRELOAD ]]; then
  mkdir -p "$(dirname "$PRELOAD")"
  clang++ -std=c++20 -O1 -fPIC -shared -o "$PRELOAD" \
    "$REPO/tests/tsan/absl_mutex_annotations.cc" -ldl || exit 1
fi
built=$(date +%s)

args=()
for s in "${suites[@]}"; do args+=(--suite "$s"); done
rm -f "$BUILD/meson-logs/testlog.json" "$BUILD/meson-logs/testlog.txt"
# TSan slows the tests 5-15x: -t 4 multiplies their timeouts.
LD_PRELOAD=$PRELOAD \
TSAN_OPTIONS="halt_on_error=1:exitcode=66:second_deadlock_stack=1:history_size=4:suppressions=$REPO/deploy/tsan.supp" \
  meson test -C "$BUILD" --no-rebuild --print-errorlogs -t 4 "${args[@]}" \
  "${no_suite[@]}" "${tests[@]}"
end=$(date +%s)

reports=$(grep -c '^WARNING: ThreadSanitizer' "$BUILD/meson-logs/testlog.txt" 2>/dev/null)
echo "tsan: ThreadSanitizer reports: ${reports:-0}"
echo "tsan: build $((built - start)) s, tests $((end - built)) s"
"$PY" "$REPO/deploy/testlog_tally.py" "$BUILD/meson-logs/testlog.json"
