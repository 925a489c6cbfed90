#!/usr/bin/env bash
# memif_stale: spinnicd with a memif server port whose socket file is left
# from a killed run (a socket file nothing listens on) removes it, says so
# in one log line and starts; with something listening on the path it
# refuses to start (exit 1) with a message naming the path and the
# listening process; a path that is not a socket is refused and left alone
# (control/memif_socket.h). The other port is net_null, so no peer is
# needed. Needs root (the EAL's runtime directory); a few seconds.
#
# usage: memif_stale.sh SPINNICD
# shellcheck disable=SC2034  # used by lib.sh
TEST_NAME=memif_stale
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
it_init "$@"
if [[ $(id -u) -ne 0 ]]; then
  echo "[$TEST_NAME] SKIP: needs root (the EAL's /var/run/dpdk)"
  exit 77
fi

SOCK=$TMP/p0.sock
cat >"$TMP/memif.textproto" <<CONFIG
eal_args: ["--no-huge", "-m", "256", "--no-pci", "--file-prefix", "$FILE_PREFIX"]
ports { name: "p0" vdev: "net_memif0,role=server,id=0,socket=$SOCK,socket-abstract=no" role: PORT_ROLE_WIRE }
ports { name: "p1" vdev: "net_null0" role: PORT_ROLE_HOST }
port_pairs { a: "p0" b: "p1" }
main_lcore: 0
workers: [1]
runtime { duration_s: 1 stats_interval_ms: 0 }
CONFIG

run() {  # NAME: spinnicd for 1 s; $RC, $TMP/NAME.out/.err
  timeout 60 "$SPINNICD" --config "$TMP/memif.textproto" --control_socket= \
    >"$TMP/$1.out" 2>"$TMP/$1.err"
  RC=$?
}

# A socket bound and closed without unlink: what a killed server leaves.
"$PY" -c "import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(sys.argv[1])
s.close()" "$SOCK" || die "cannot make the stale socket"
check "the stale socket file exists" test -S "$SOCK"
run stale
check "stale socket: spinnicd starts and exits 0 (rc=$RC)" test "$RC" -eq 0
check "stale socket: one log line names the removed path" \
  test "$(grep -c "removed stale memif socket $SOCK" "$TMP/stale.err")" -eq 1
check "stale socket: the port came up (running)" grep -q "running with" "$TMP/stale.err"

# A live listener on the path: another process's socket.
"$PY" -c "import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(sys.argv[1])
s.listen(1)
open(sys.argv[1] + '.ready', 'w').close()
time.sleep(30)" "$SOCK" &
LISTENER=$!
IT_BG+=("$LISTENER")
for _ in $(seq 100); do [[ -e $SOCK.ready ]] && break; sleep 0.1; done
check "the listener is up" test -e "$SOCK.ready"
run busy
check "socket in use: spinnicd exits 1 (rc=$RC)" test "$RC" -eq 1
check "socket in use: the message names the path and the listener" \
  grep -q "port 'p0': memif socket $SOCK is in use: another process, pid $LISTENER (python3)" \
  "$TMP/busy.err"
check "socket in use: no EAL started" bash -c "! grep -q 'EAL arguments' '$TMP/busy.err'"
check "socket in use: the socket is left alone" test -S "$SOCK"
kill "$LISTENER" 2>/dev/null
wait "$LISTENER" 2>/dev/null
rm -f "$SOCK" "$SOCK.ready"

# Not a socket: refused, never removed.
echo "not a socket" >"$SOCK"
run file
check "not a socket: spinnicd exits 1 (rc=$RC)" test "$RC" -eq 1
check "not a socket: the message says so" grep -q "$SOCK exists and is not a socket" "$TMP/file.err"
check "not a socket: the file is kept" test -f "$SOCK"

it_finish
