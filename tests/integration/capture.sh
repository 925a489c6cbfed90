#!/usr/bin/env bash
# spinctl capture against the real spinnicd on net_null ports (no root,
# namespaces or hugepages): net_null0 and net_null2 receive 64-byte frames at
# full rate; p2 has no pair, so every frame it receives is dropped as
# no_route. Each pcapng file is read back by a strict reader
# (pcapng_check.py) and by `spinctl decode`; a bad filter is refused with
# libpcap's words; a second capture of a busy port and stage is refused; a
# client interrupted or killed leaves spinnicd serving and the port free.
#
# usage: capture.sh SPINNICD SPINCTL
# shellcheck disable=SC2034  # used by lib.sh
TEST_NAME=capture
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
it_init "$@"
[[ $# -ge 2 ]] || die "usage: $0 SPINNICD SPINCTL"
it_spinctl_init "$2"
CHECK=$IT_DIR/pcapng_check.py
CFG=$TMP/config.textproto
cat >"$CFG" <<EOF2
# spinnic integration test $TEST_NAME (generated)
eal_args: ["--no-huge", "-m", "256", "--no-pci", "--file-prefix", "$FILE_PREFIX"]
ports { name: "p0" vdev: "net_null0" role: PORT_ROLE_WIRE }
ports { name: "p1" vdev: "net_null1" role: PORT_ROLE_HOST }
ports { name: "p2" vdev: "net_null2" role: PORT_ROLE_WIRE }
port_pairs { a: "p0" b: "p1" }
workers: [1]
main_lcore: 0
EOF2

it_start_spinnicd "$CFG" --control_socket "$SOCK"
it_wait_spinctl

# pcapng FILE EXPR: EXPR over pcapng_check.py's JSON of FILE, bound to `d`.
pcapng() {
  "$PY" "$CHECK" "$1" >"$TMP/pcapng.json" 2>"$TMP/pcapng.err" || {
    log "pcapng_check: $(cat "$TMP/pcapng.err")"
    return 1
  }
  "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" \
    "$TMP/pcapng.json" || { log "pcapng: $(head -c 600 "$TMP/pcapng.json")"; return 1; }
}

# wait_started FILE: until spinctl has written the file's header (the server
# published the session), at most 20 s.
wait_started() {
  local i
  for ((i = 0; i < 200; i++)); do
    [[ -s $1 ]] && return 0
    sleep 0.1
  done
  return 1
}

# --- rx with a filter, count ---------------------------------------------------
sc capture --port p0 --stage rx --filter "len == 64" --count 50 --out "$TMP/rx.pcapng"
check "capture rx: exit 0, 50 frames written (count)" \
  eval 'rc_is 0 && err_has "^50 frames written to .*rx.pcapng \(count\)$"'
check "capture rx: a strict pcapng reader finds one interface p0 and 50 frames of 64 bytes" \
  pcapng "$TMP/rx.pcapng" '[i["name"] for i in d["interfaces"]] == ["p0"] and d["interfaces"][0]["tsresol"] == 9 and d["interfaces"][0]["filter"] == "len == 64" and len(d["packets"]) == 50 and all(p["caplen"] == 64 and p["origlen"] == 64 and p["comment"] == "" for p in d["packets"])'
"$SPINCTL" decode "$TMP/rx.pcapng" >"$TMP/cmd.out" 2>"$TMP/cmd.err"
RC=$?
check "spinctl decode reads the capture: exit 0, 50 frames, none RoCE" \
  eval 'rc_is 0 && out_has "^summary: frames=50 roce=0 .*others=50 cut=0$"'
if command -v tcpdump >/dev/null; then
  check "tcpdump -r reads 50 frames" \
    eval '[[ $(tcpdump -r "$TMP/rx.pcapng" -nn 2>/dev/null | wc -l) -eq 50 ]]'
else
  log "tcpdump not installed: its read-back is skipped"
fi

# --- drop stage: the reason as the packet comment --------------------------------
sc --json capture --port p2 --stage drop --count 10 --snaplen 32 --out "$TMP/drop.pcapng"
check "capture drop: exit 0, JSON summary of 10 captured" \
  py 'd["captured"] == "10" and d["ended_by"] == "count"'
check "capture drop: 10 frames cut to 32 bytes, each commented no_route" \
  pcapng "$TMP/drop.pcapng" 'len(d["packets"]) == 10 and all(p["comment"] == "no_route" and p["caplen"] == 32 and p["origlen"] == 64 for p in d["packets"])'

# --- a filter nothing passes, duration ------------------------------------------------
sc capture --port p0 --stage tx --filter "udp" --duration 1 --out "$TMP/none.pcapng"
check "capture with no match: exit 0 after the duration, 0 frames" \
  eval 'rc_is 0 && err_has "^0 frames written to .* \(duration\)$"'
check "capture with no match: a valid file with the interface and no packets" \
  pcapng "$TMP/none.pcapng" 'len(d["interfaces"]) == 1 and d["packets"] == []'

# --- refusals -----------------------------------------------------------------------
sc capture --port p0 --stage rx --filter "ip and and" --out "$TMP/bad.pcapng"
check "bad filter: exit 1, INVALID_ARGUMENT with libpcap's message, no file left" \
  eval 'rc_is 1 && err_has "INVALID_ARGUMENT: capture filter \"ip and and\" does not compile: .*syntax error; write a tcpdump filter" && [[ ! -e $TMP/bad.pcapng ]]'
sc capture --port nope --stage rx --out "$TMP/bad.pcapng"
check "unknown port: exit 1, NOT_FOUND naming the ports" \
  eval 'rc_is 1 && err_has "NOT_FOUND: no port named \"nope\"; the ports are p0, p1, p2"'
sc capture --port p0 --stage sideways --out "$TMP/bad.pcapng"
check "bad stage: usage error (exit 2)" eval 'rc_is 2 && err_has "write rx, tx or drop"'

# --- busy, interrupted, killed --------------------------------------------------------
"$SPINCTL" --socket "$SOCK" capture --port p1 --stage tx --filter "len > 1000" \
  --out "$TMP/int.pcapng" >"$TMP/int.out" 2>"$TMP/int.err" </dev/null &
INT_PID=$!
IT_BG+=("$INT_PID")
check "a background capture starts" wait_started "$TMP/int.pcapng"
sc capture --port p1 --stage tx --out "$TMP/busy.pcapng"
check "second capture of p1 tx: FAILED_PRECONDITION naming the running one" \
  eval 'rc_is 1 && err_has "FAILED_PRECONDITION: port p1 stage tx is already being captured \(filter \"len > 1000\"\)"'
kill -INT "$INT_PID"
wait_pid "$INT_PID" 10
INT_RC=$?
check "Ctrl-C ends spinctl capture with exit 0 and a whole file" \
  eval '[[ $INT_RC -eq 0 ]] && grep -q "frames written to .*(interrupted)" "$TMP/int.err" && pcapng "$TMP/int.pcapng" "len(d[\"interfaces\"]) == 1"'

"$SPINCTL" --socket "$SOCK" capture --port p1 --stage tx \
  --out "$TMP/kill.pcapng" >/dev/null 2>&1 </dev/null &
KILL_PID=$!
IT_BG+=("$KILL_PID")
check "a capture to be killed starts" wait_started "$TMP/kill.pcapng"
kill -KILL "$KILL_PID"
wait "$KILL_PID" 2>/dev/null
sc health
check "spinnicd still serving after the client was killed" eval 'rc_is 0 && out_has "^SERVING$"'
# The killed client's session is unpublished once the server sees it gone.
ok=0
for ((i = 0; i < 50; i++)); do
  sc capture --port p1 --stage tx --count 5 --out "$TMP/after.pcapng"
  if [[ $RC -eq 0 ]]; then ok=1; break; fi
  sleep 0.1
done
check "p1 tx is free again after the kill: 5 frames" \
  eval '[[ $ok -eq 1 ]] && pcapng "$TMP/after.pcapng" "len(d[\"packets\"]) == 5"'
check "spinnicd is alive" spinnicd_alive

it_stop_spinnicd TERM
check "spinnicd exits 0 on SIGTERM" eval '[[ $SPN_RC -eq 0 ]]'
it_finish
