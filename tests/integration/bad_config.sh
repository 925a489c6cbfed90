#!/usr/bin/env bash
# bad_config: spinnicd --config with a broken file exits 2 with exactly one
# line on stderr, `FILE:LINE:COL: FIELD: message`, naming the right line (and,
# for errors that belong to a field, the field), prints nothing on stdout and
# starts nothing: no EAL (no EAL log lines, no runtime directory for its
# --file-prefix), no network namespace or interface created or removed.
# Each broken file differs from a valid one (accepted by --check_config) in
# one place. Needs no root: nothing is started. At the end, mistakes of the
# host (no hugepages, a PCI port not probed, a control socket that cannot be
# made): each a non-zero exit with one line naming the cause and the fix.
#
# usage: bad_config.sh SPINNICD
# shellcheck disable=SC2034  # used by lib.sh
TEST_NAME=bad_config
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
it_init "$@"

# The ports point at interfaces that do not exist: had spinnicd gone as far as
# opening them, it would fail differently (and noisily).
header() {
  cat <<EOF
eal_args: ["--no-huge", "-m", "256", "--no-pci", "--file-prefix", "$FILE_PREFIX"]
ports { name: "wire0" vdev: "net_af_packet0,iface=sbc-nowire0" role: PORT_ROLE_WIRE }
ports { name: "host0" vdev: "net_af_packet1,iface=sbc-nohost0" role: PORT_ROLE_HOST }
EOF
}

# valid: the base the broken files differ from.
{ header; cat <<'EOF'
port_pairs { a: "wire0" b: "host0" }
workers: [1]
main_lcore: 0
handlers {
  name: "count-icmp"
  kind: "count"
  match { ip_proto: 1 }
}
EOF
} >"$TMP/valid.textproto"

# syntax: line 4, a missing ':' after the field name.
{ header; cat <<'EOF'
port_pairs { a "wire0" b: "host0" }
workers: [1]
main_lcore: 0
EOF
} >"$TMP/syntax.textproto"

# unknown handler kind: line 9.
{ header; cat <<'EOF'
port_pairs { a: "wire0" b: "host0" }
workers: [1]
main_lcore: 0
handlers {
  name: "count-icmp"
  kind: "no_such_kind"
  match { ip_proto: 1 }
}
EOF
} >"$TMP/kind.textproto"

# bad port pair: line 6 names a port that does not exist.
{ header; cat <<'EOF'
port_pairs {
  a: "wire0"
  b: "no_such_port"
}
workers: [1]
main_lcore: 0
EOF
} >"$TMP/pair.textproto"

# bad port pair: a port paired with itself, line 4.
{ header; cat <<'EOF'
port_pairs { a: "wire0" b: "wire0" }
workers: [1]
main_lcore: 0
EOF
} >"$TMP/selfpair.textproto"

world() { # what spinnicd must not touch
  ip netns list 2>/dev/null | awk '{print $1}' | sort
  ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sort
}
runtime_dirs() {
  local d
  for d in "/var/run/dpdk/$FILE_PREFIX" "${XDG_RUNTIME_DIR:-/nonexistent}/dpdk/$FILE_PREFIX" "/tmp/dpdk/$FILE_PREFIX"; do
    [[ -e $d ]] && echo "$d"
  done
  return 0
}

check "the valid base config passes --check_config" \
  timeout 30 "$SPINNICD" --check_config --config "$TMP/valid.textproto"

# bad CASE LINE FIELD_REGEX: FIELD_REGEX empty = do not require a field.
bad() {
  local name=$1 line=$2 field=$3 file=$TMP/$1.textproto rc before after msg
  before=$(world)
  timeout 30 "$SPINNICD" --config "$file" >"$TMP/$name.out" 2>"$TMP/$name.err" </dev/null
  rc=$?
  after=$(world)
  msg=$(head -n 1 "$TMP/$name.err")
  log "$name: exit $rc, stderr: $msg"
  check "$name: exit status 2" test "$rc" = 2
  check "$name: exactly one line on stderr" test "$(wc -l <"$TMP/$name.err")" = 1
  check "$name: nothing on stdout" test ! -s "$TMP/$name.out"
  # The file as given on the command line, or its absolute path.
  check "$name: message starts with FILE:$line:COL:" \
    grep -Eq "^([^:]*/)?$name\.textproto:$line:[0-9]+: " "$TMP/$name.err"
  if [[ -n $field ]]; then
    check "$name: message names the field ($field)" \
      grep -Eq "^[^ ]+:$line:[0-9]+: ($field)" "$TMP/$name.err"
  fi
  check "$name: no EAL started (no EAL log lines, no runtime dir)" \
    test -z "$(grep -l 'EAL' "$TMP/$name.out" "$TMP/$name.err")" -a -z "$(runtime_dirs)"
  check "$name: no namespace or interface created or removed" test "$before" = "$after"
}

bad syntax 4 ''
bad kind 9 'handlers(\[0\])?\.kind'
bad pair 6 'port_pairs(\[0\])?\.b'
bad selfpair 4 'port_pairs(\[0\])?(\.a|\.b)?'

# Mistakes of the host rather than of the file: each exits non-zero with one
# line that names the cause and the fix, and leaves nothing running.

# host CASE RC PATTERN CONFIG [SPINNICD FLAGS...]: PATTERN an ERE the error
# line must match.
host() {
  local name=$1 want=$2 pattern=$3 config=$4 rc
  shift 4
  timeout 30 "$SPINNICD" --config "$config" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" </dev/null
  rc=$?
  log "$name: exit $rc, last line on stderr: $(tail -n 1 "$TMP/$name.err")"
  check "$name: exit status $want" test "$rc" = "$want"
  check "$name: the error names the cause and the fix" grep -Eq -- "$pattern" "$TMP/$name.err"
  check "$name: nothing on stdout" test ! -s "$TMP/$name.out"
}

# No hugepages reserved and no --no-huge: refused before the EAL starts.
# Deterministic only where the machine has none reserved.
if [[ $(awk '/^HugePages_Total:/ {print $2}' /proc/meminfo) == 0 ]]; then
  sed 's/"--no-huge", "-m", "256", //' "$TMP/valid.textproto" >"$TMP/hugepages.textproto"
  host hugepages 1 'no hugepages reserved .*echo 512 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages.*--no-huge' \
    "$TMP/hugepages.textproto" --control_socket=
  check "hugepages: no EAL started (no EAL: lines, no runtime dir)" \
    test -z "$(grep -l '^EAL:' "$TMP/hugepages.err")" -a -z "$(runtime_dirs)"
else
  log "hugepages: skipped, this machine has hugepages reserved"
fi

# A control socket that cannot be created (its directory is a file):
# refused with the flags, before the EAL starts.
: >"$TMP/afile"
host socket 2 "^--control_socket: cannot create $TMP/afile/s.sock: $TMP/afile is not a directory; " \
  "$TMP/valid.textproto" --control_socket="$TMP/afile/s.sock"
check "socket: exactly one line on stderr" test "$(wc -l <"$TMP/socket.err")" = 1
check "socket: no EAL started (no runtime dir)" test -z "$(runtime_dirs)"

# A PCI port whose device the EAL did not probe (here: none at that
# address). The allow-list (-a) keeps the EAL off every real device.
cat >"$TMP/pci.textproto" <<EOF
eal_args: ["--no-huge", "-m", "256", "-a", "0000:ff:1f.7", "--file-prefix", "$FILE_PREFIX"]
ports { name: "wire0" pci: "0000:ff:1f.7" role: PORT_ROLE_WIRE }
ports { name: "host0" vdev: "net_null0" role: PORT_ROLE_HOST }
port_pairs { a: "wire0" b: "host0" }
workers: [1]
main_lcore: 0
EOF
host pci 1 "port 'wire0': .*no PCI device 0000:ff:1f.7 .*dpdk-devbind.py" \
  "$TMP/pci.textproto" --control_socket=
# The EAL ran here: its runtime directory is the only trace.
runtime_dirs | while read -r dir; do rm -rf "$dir"; done

# A port the driver will not start: a memif client whose server socket is
# not there. Names the port and the errno text.
cat >"$TMP/start.textproto" <<EOF
eal_args: ["--no-huge", "-m", "256", "--no-pci", "--file-prefix", "$FILE_PREFIX"]
ports { name: "wire0" vdev: "net_memif0,role=client,socket=$TMP/nodir/m.sock" role: PORT_ROLE_WIRE }
ports { name: "host0" vdev: "net_null0" role: PORT_ROLE_HOST }
port_pairs { a: "wire0" b: "host0" }
workers: [1]
main_lcore: 0
EOF
host start 1 "^spinnicd: port 'wire0': cannot start ethdev [0-9]+: Operation not permitted; the driver's log lines above say why" \
  "$TMP/start.textproto" --control_socket=
runtime_dirs | while read -r dir; do rm -rf "$dir"; done

it_finish
