#!/usr/bin/env bash
# run-tests.sh [--no-deps] [--no-asan]
#
# spinnic's second command: builds everything and runs every test suite.
#   1. installs missing Debian packages (deploy/install-deps.sh),
#   2. builds ./build (default options: unit, fuzz regression, dataplane and
#      integration tests, benchmarks) and runs `meson test -C build`, every
#      suite (the integration tests need root; without it they are SKIPped),
#   3. builds what the unit suite needs in ./build-asan (AddressSanitizer +
#      UndefinedBehaviorSanitizer; its test executables and their
#      dependencies, not the daemon, the gRPC tests or the fuzz targets) and
#      runs the unit suite there, where any sanitizer report fails the test,
#   4. ends with the line `N passed, N failed`, counted from both trees'
#      meson-logs/testlog.json (a tree that fails to build counts as one
#      failure), and exits non-zero if anything failed.
# --no-asan skips step 3 (quicker local runs; CI runs everything).
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO" || exit 1
deps=1
asan=1
for a in "$@"; do
  case $a in
    --no-deps) deps=0 ;;
    --no-asan) asan=0 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "run-tests: unknown argument '$a'" >&2; exit 2 ;;
  esac
done

step() { printf '\n== %s\n' "$*"; }
build_failures=0
logs=()

if [[ $deps -eq 1 ]]; then
  step "Debian packages (deploy/install-deps.sh)"
  if ! bash "$REPO/deploy/install-deps.sh"; then
    echo "run-tests: cannot install the packages the build needs"
    echo "0 passed, 1 failed"
    exit 1
  fi
fi
PY=$(command -v /usr/bin/python3 || command -v python3)

# configure_tree DIR [meson options...]: configure (once); 0 on success.
configure_tree() {
  local dir=$1
  shift
  if [[ ! -f $dir/build.ninja ]]; then
    if [[ -d $dir/meson-private ]]; then
      meson setup --wipe "$dir" "$REPO" "$@" || return 1  # a setup that failed
    else
      meson setup "$dir" "$REPO" "$@" || return 1
    fi
  fi
}

# build_tree DIR [meson options...]: configure (once) and build everything;
# 0 on success.
build_tree() {
  configure_tree "$@" || return 1
  ninja -C "$1" || return 1
}

# suite_targets DIR SUITE: the ninja targets SUITE's tests run, one a line.
suite_targets() {
  "$PY" "$REPO/deploy/suite_targets.py" "$1" "$2"
}

# run_suite DIR [meson test args...]: a fresh testlog.json for this run.
run_suite() {
  local dir=$1
  shift
  rm -f "$dir/meson-logs/testlog.json"
  meson test -C "$dir" --no-rebuild --print-errorlogs "$@"
  if [[ -f $dir/meson-logs/testlog.json ]]; then
    logs+=("$dir/meson-logs/testlog.json")
  else
    echo "run-tests: meson test in $dir wrote no test log"
    build_failures=$((build_failures + 1))
  fi
}

# --- the default tree: every suite ---------------------------------------------
step "build (./build)"
if build_tree "$REPO/build"; then
  step "meson test -C build (all suites)"
  if [[ $(id -u) -ne 0 ]]; then
    echo "run-tests: not root: the network-namespace integration tests will be SKIPped"
  fi
  run_suite "$REPO/build"
else
  echo "run-tests: ./build failed to build"
  build_failures=$((build_failures + 1))
fi

# --- the sanitizer tree: unit suite ----------------------------------------------
if [[ $asan -eq 1 ]]; then
  step "build (./build-asan: address,undefined sanitizers)"
  # Only what the unit suite runs: the sanitizers slow the compiler down,
  # and the rest of the tree is built and tested in ./build. -g1 (line
  # tables and function names: what a sanitizer report needs, not the
  # locals a debugger wants) compiles 20-30 % faster than -g here
  # (control.pb.cc 36 against 45 s, config_loader.cc 14 against 20 s).
  if configure_tree "$REPO/build-asan" -Db_sanitize=address,undefined \
      -Db_lundef=false -Dbench=false -Dintegration=false \
      -Ddebug=false -Dc_args=-g1 -Dcpp_args=-g1 &&
    unit_targets=$(suite_targets "$REPO/build-asan" unit) &&
    [[ -n $unit_targets ]] &&
    # shellcheck disable=SC2086  # one target a word
    ninja -C "$REPO/build-asan" $unit_targets; then
    step "meson test -C build-asan --suite unit (any sanitizer report fails)"
    # Meson keeps ASAN_OPTIONS/UBSAN_OPTIONS from the environment.
    ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:detect_leaks=1:print_summary=1 \
    UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1:print_summary=1 \
      run_suite "$REPO/build-asan" --suite unit
  else
    echo "run-tests: ./build-asan failed to build"
    build_failures=$((build_failures + 1))
  fi
fi

# --- the closing line ----------------------------------------------------------
step "results"
"$PY" "$REPO/deploy/testlog_tally.py" --build-failures "$build_failures" "${logs[@]}"
