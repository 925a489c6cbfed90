#!/usr/bin/env bash
# reload: hitless reload against the real spinnicd (two net_null ports, DiAD
# on; no root). spinctl apply --dry-run lists the changes and changes
# nothing; spinctl apply replaces a handler, adds one, removes one, adds and
# removes DiAD peers; spinctl config show prints the result; SIGHUP re-reads
# the --config file and applies it; a bad file on SIGHUP, a file that
# changes a port's MTU and one whose change the dataplane refuses (after
# others were made) change nothing and say why; spinnicd keeps running
# throughout and exits 0 on SIGTERM. docs/reload.md.
#
# usage: reload.sh SPINNICD SPINCTL
# shellcheck disable=SC2034  # used by lib.sh
TEST_NAME=reload
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
it_init "$@"
[[ $# -ge 2 ]] || die "usage: $0 SPINNICD SPINCTL"
it_spinctl_init "$2"
CFG=$TMP/config.textproto

# write_config FILE HANDLERS PEERS [MTU]
write_config() {
  it_write_null_config "$1"
  cat >>"$1" <<EOF
addresses { diad_node: "fd00:d1ad::1" mac: "02:00:00:00:00:01" }
diad { rto_us: 200 rto_max_us: 1000 max_retries: 3 $3 }
$2
EOF
  if [[ -n ${4:-} ]]; then sed -i "s|role: PORT_ROLE_HOST|role: PORT_ROLE_HOST mtu: $4|" "$1"; fi
}

FIRST_HANDLERS='handlers { name: "a" kind: "count" match { ip_proto: 17 } }
handlers { name: "b" kind: "null" priority: 2 match { ip_proto: 6 } }'
SECOND_HANDLERS='handlers { name: "a" kind: "count" params { key: "buckets" value: "4" } params { key: "by" value: "dst_port" } match { ip_proto: 17 } }
handlers { name: "c" kind: "count" priority: 3 }'
FIRST_PEERS='peers { name: "b" node: "fd00:d1ad::2" mac: "02:00:00:00:00:02" }'
SECOND_PEERS='peers { name: "c" node: "fd00:d1ad::3" mac: "02:00:00:00:00:03" }'

write_config "$CFG" "$FIRST_HANDLERS" "$FIRST_PEERS"
write_config "$TMP/second.textproto" "$SECOND_HANDLERS" "$SECOND_PEERS"

handler_names() { sc --json handlers && "$PY" -c 'import json,sys; print(" ".join(h["name"] for h in json.load(open(sys.argv[1])).get("handlers", [])))' "$TMP/cmd.out"; }
peer_names() { sc --json peers && "$PY" -c 'import json,sys; print(" ".join(p["name"] for p in json.load(open(sys.argv[1])).get("peers", [])))' "$TMP/cmd.out"; }
handlers_are() { [[ $(handler_names) == "$1" ]] || { log "handlers: '$(handler_names)', expected '$1'"; return 1; }; }
peers_are() { [[ $(peer_names) == "$1" ]] || { log "peers: '$(peer_names)', expected '$1'"; return 1; }; }
# wait_log RE: until spinnicd's log has a line matching RE, at most 10 s.
wait_log() {
  local i
  for ((i = 0; i < 100; i++)); do
    grep -Eq -- "$1" "$TMP/spinnicd.err" && return 0
    sleep 0.1
  done
  log "no log line matching '$1': $(tail -5 "$TMP/spinnicd.err")"
  return 1
}

it_start_spinnicd "$CFG" --control_socket "$SOCK"
it_wait_spinctl
check "start: handlers a b" handlers_are "a b"
check "start: peer b" peers_are "b"

sc apply "$TMP/second.textproto" --dry-run
check "dry run: exit 0" rc_is 0
check "dry run: the handler removed" out_has '^- handler b$'
check "dry run: the peer added" out_has '^\+ peer c \(node fd00:d1ad::3, mac 02:00:00:00:00:03\)$'
check "dry run: the handler replaced" out_has '^~ handler a: params changed$'
check "dry run: the handler added" out_has '^\+ handler c \(kind count\)$'
check "dry run: the peer removed" out_has '^- peer b$'
check "dry run: says nothing was applied" out_has '^dry run: 5 change\(s\), nothing applied$'
check "dry run: handlers unchanged" handlers_are "a b"
check "dry run: peers unchanged" peers_are "b"

sc apply "$TMP/second.textproto"
check "apply: exit 0" rc_is 0
check "apply: applied 5" out_has '^applied 5 change\(s\)$'
check "apply: handlers a c" handlers_are "a c"
check "apply: peer c" peers_are "c"
sc --json handlers
check "apply: a runs with its new params" py 'd["handlers"][0]["params"] == {"buckets": "4", "by": "dst_port"}'

sc config show
check "config show: exit 0" rc_is 0
check "config show: the running handlers and peers" \
  grep -Eq 'name: "c"' "$TMP/cmd.out"
cp "$TMP/cmd.out" "$TMP/shown.textproto"
sc apply "$TMP/shown.textproto"
check "config show's output applied: no changes" out_has '^no changes'

sc apply "$TMP/second.textproto" --json
check "apply --json of the same file: no changes" py 'd.get("changes", []) == [] and not d["applied"]'

# SIGHUP: the --config file (still the first) again.
kill -HUP "$SPN_PID"
check "SIGHUP: logged what it applied" wait_log 'reload of .*config.textproto: applied 5 change\(s\): - handler c; \+ peer b'
check "SIGHUP: spinnicd still running" spinnicd_alive
check "SIGHUP: handlers a b again" handlers_are "a b"
check "SIGHUP: peer b again" peers_are "b"

# A bad file on SIGHUP: logged with its line and column, nothing changes.
printf 'handlers { name: "x" kind: count }\n' >>"$CFG"
kill -HUP "$SPN_PID"
check "SIGHUP with a bad file: logged with line:column" \
  wait_log 'reload of .*config.textproto refused, nothing changed: .*config.textproto:[0-9]+:[0-9]+: '
check "SIGHUP with a bad file: spinnicd still running" spinnicd_alive
check "SIGHUP with a bad file: handlers unchanged" handlers_are "a b"

# A restart-only change: refused as a whole, naming the field.
write_config "$TMP/mtu.textproto" "$SECOND_HANDLERS" "$SECOND_PEERS" 9000
sc apply "$TMP/mtu.textproto"
check "MTU change: exit 1" rc_is 1
check "MTU change: names the field" \
  err_has 'FAILED_PRECONDITION: nothing applied: ports\[1\]\.mtu: 0 -> 9000 needs a restart of spinnicd'
check "MTU change: handlers unchanged" handlers_are "a b"

# A change the dataplane refuses (capture needs a bound region, which a file
# cannot give) after a peer was added and a handler removed: both undone.
write_config "$TMP/refused.textproto" "$SECOND_HANDLERS
handlers { name: \"cap\" kind: \"capture\" priority: 5 }" "$SECOND_PEERS"
sc apply "$TMP/refused.textproto"
check "refused change: exit 1" rc_is 1
check "refused change: names it and says the rest was rolled back" \
  err_has "change 5 of 6, '\\+ handler cap \\(kind capture\\)', failed: .*; the 4 change\\(s\\) before it were rolled back; nothing changed"
check "refused change: handlers unchanged" handlers_are "a b"
check "refused change: peers unchanged" peers_are "b"

sc apply "$TMP/missing.textproto"
check "missing file: usage error (2)" rc_is 2

it_stop_spinnicd TERM 30
check "exit status 0 after SIGTERM (got $SPN_RC)" test "$SPN_RC" = 0
it_finish
