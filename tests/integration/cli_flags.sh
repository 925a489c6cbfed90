#!/usr/bin/env bash
# cli_flags: `--version` and `--help` of spinnicd and spinctl exit 0 with
# their text on stdout (what help2man and packaging read): spinnicd's
# version names spinnicd, its version and DPDK's; its --help, -h and
# --helpfull list its own flags; spinctl --version, --help and `help` too.
# An unknown flag still fails. Starts nothing; no root.
#
# usage: cli_flags.sh SPINNICD SPINCTL
# shellcheck disable=SC2034  # used by lib.sh
TEST_NAME=cli_flags
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
it_init "$1"
SPINCTL=$(readlink -f "$2")

run() {  # BINARY ARGS...: $RC, $TMP/out, $TMP/err
  timeout 30 "$@" >"$TMP/out" 2>"$TMP/err"
  RC=$?
}

run "$SPINNICD" --version
check "spinnicd --version exits 0 (rc=$RC)" test "$RC" -eq 0
check "spinnicd --version names itself and its version" grep -Eq '^spinnicd [0-9]+\.[0-9]+\.[0-9]+$' "$TMP/out"
check "spinnicd --version names DPDK" grep -q '^DPDK [0-9]' "$TMP/out"
for flag in --help -h --helpfull; do
  run "$SPINNICD" "$flag"
  check "spinnicd $flag exits 0 (rc=$RC)" test "$RC" -eq 0
  check "spinnicd $flag starts with the usage line" \
    grep -q '^spinnicd: spinnicd \[--config FILE\]' "$TMP/out"
  check "spinnicd $flag lists --config and --workers" \
    bash -c "grep -q -- '--config (' '$TMP/out' && grep -q -- '--workers (' '$TMP/out'"
done
check "spinnicd --help started no EAL" bash -c "! grep -q 'EAL' '$TMP/err'"
run "$SPINNICD" --no_such_flag
check "spinnicd with an unknown flag still fails (rc=$RC)" test "$RC" -ne 0

run "$SPINCTL" --version
check "spinctl --version exits 0 (rc=$RC)" test "$RC" -eq 0
check "spinctl --version names itself and its version" grep -Eq '^spinctl [0-9]+\.[0-9]+\.[0-9]+$' "$TMP/out"
for args in --help help; do
  run "$SPINCTL" $args
  check "spinctl $args exits 0 (rc=$RC)" test "$RC" -eq 0
  check "spinctl $args prints the usage" grep -q '^usage: spinctl' "$TMP/out"
done
run "$SPINCTL" --no_such_flag
check "spinctl with an unknown flag exits 2 (rc=$RC)" test "$RC" -eq 2

it_finish
