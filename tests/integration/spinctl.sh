#!/usr/bin/env bash
# spinctl: the CLI against the real spinnicd, end to end over the Unix socket
# (and over TCP with mutual TLS when spinnicd has --control_tcp and openssl is
# installed). spinnicd runs on two net_null ports, so no root, namespaces or
# hugepages are needed. Each check can fail on its own: output, JSON contents
# (parsed by python3), exit codes (0 ok, 1 server error with the canonical
# code on stderr, 2 usage, 3 unreachable), and the server's state read back
# after every change.
#
# usage: spinctl.sh SPINNICD SPINCTL [BUILD_DIR]
# (BUILD_DIR: where the eBPF examples and test programs were built; without
# it, or without clang, the eBPF checks are skipped and say so.)
# shellcheck disable=SC2034  # used by lib.sh
TEST_NAME=spinctl
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
it_init "$@"
[[ $# -ge 2 ]] || die "usage: $0 SPINNICD SPINCTL"
it_spinctl_init "$2"
CFG=$TMP/config.textproto
it_write_null_config "$CFG"

# TCP with mutual TLS, if this spinnicd can listen on TCP and openssl is here.
TLS=0
TLS_ARGS=()
# (Captured first: grep -q closing the pipe early would fail it under pipefail.)
SPINNICD_HELP=$("$SPINNICD" --helpfull 2>&1)
if [[ $SPINNICD_HELP == *--control_tcp* ]] && command -v openssl >/dev/null; then
  TLS=1
  PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  (
    cd "$TMP" || exit 1
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=spinnic test CA" \
      -keyout ca.key -out ca.pem
    openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout server.key -out server.csr
    printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >server.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
      -extfile server.ext -out server.pem
    openssl req -newkey rsa:2048 -nodes -subj "/CN=spinctl" -keyout client.key -out client.csr
    openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
      -out client.pem
    # A second CA that signed nothing the server knows.
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=other CA" \
      -keyout other.key -out other.pem
  ) >"$TMP/openssl.log" 2>&1 || die "openssl could not make test certificates: $(tail -5 "$TMP/openssl.log")"
  TLS_ARGS=(--control_tcp "127.0.0.1:$PORT" --control_tls_cert "$TMP/server.pem"
    --control_tls_key "$TMP/server.key" --control_tls_client_ca "$TMP/ca.pem")
fi

it_start_spinnicd "$CFG" --control_socket "$SOCK" "${TLS_ARGS[@]}"
it_wait_spinctl
log "spinnicd answers health checks"

# --- reads -------------------------------------------------------------------
sc health
check "health: exit 0, SERVING" eval 'rc_is 0 && out_has "^SERVING$"'
sc health --service spinnic.v1.Spinnic
check "health of spinnic.v1.Spinnic: SERVING" eval 'rc_is 0 && out_has "SERVING$"'

sc info
check "info: exit 0 and both ports with their devices and pairing" eval \
  'rc_is 0 && out_has "^ +0 +p0 +wire +net_null0 .* up .* p1$" && out_has "^ +1 +p1 +host +net_null1 .* up .* p0$"'
check "info: version and the HPU" eval 'out_has "^version: +[0-9]" && out_has "^hpus:" && out_has "^ +0 +1 +1$"'
sc --json info
check "info --json: two ports named p0, p1" \
  py '[p["name"] for p in d["ports"]] == ["p0", "p1"] and d["ports"][0]["device"] == "net_null0"'

sc kinds
kinds_ok=1
for k in count filter reflect xor_payload null; do
  out_has "^$k: " || { log "kinds does not list $k"; kinds_ok=0; }
done
check "kinds: lists count, filter, reflect, xor_payload, null" eval 'rc_is 0 && [[ $kinds_ok -eq 1 ]]'
check "kinds: shows parameter schemas (xor_payload's required key)" \
  eval 'out_has "^ +key +bytes +yes "'
sc --json kinds
check "kinds --json: count has the buckets parameter of type TYPE_UINT" \
  py 'any(k["name"] == "count" and any(p["name"] == "buckets" and p["type"] == "TYPE_UINT" for p in k["params"]) for k in d["kinds"])'

sc stats --json
check "stats --json: two ports, one HPU" py 'len(d["ports"]) == 2 and len(d["hpus"]) == 1'
sc watch-stats --interval_ms 100 --count 2 --json
check "watch-stats --count 2 --json: two JSON lines, timestamps increasing" eval \
  'rc_is 0 && "$PY" -c "import json,sys; l=[json.loads(x) for x in open(sys.argv[1])]; sys.exit(0 if len(l)==2 and int(l[1][\"timestamp_ns\"])>int(l[0][\"timestamp_ns\"]) else 1)" "$TMP/cmd.out"'
sc events --timeout_ms 300
check "events --timeout_ms 300: exit 0 when the wait ends" eval 'rc_is 0 && out_has "^SEQ +TIME"'

# --- handlers ----------------------------------------------------------------
sc install --name c1 --kind count --match 'ip_proto: 1'
check "install c1: exit 0, prints its id" eval 'rc_is 0 && out_has "^id: [0-9]+$"'
sc handlers --json
check "handlers --json: c1 of kind count, match ip_proto 1, with counters" \
  py 'any(h["name"] == "c1" and h["kind"] == "count" and h["match"]["ip_proto"] == 1 for h in d["handlers"]) and any(s["name"] == "c1" for s in d["stats"])'
sc handlers
check "handlers: table row for c1" eval 'rc_is 0 && out_has "^ID +NAME +KIND" && out_has "^ +[0-9]+ +c1 +count +0 +ip_proto: 1 "'
sc state c1
check "state c1: a hex dump of its 16 zero bytes" eval \
  'rc_is 0 && out_has "^00000000  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  \|"'
sc state c1 --offset 8 --length 4 --raw
check "state c1 --offset 8 --length 4 --raw: 4 raw bytes" eval 'rc_is 0 && [[ $(wc -c <"$TMP/cmd.out") -eq 4 ]]'
sc state c1 --offset 8 --length 100
check "state past the end: exit 1, OUT_OF_RANGE" eval 'rc_is 1 && err_has "^spinctl: OUT_OF_RANGE: "'

sc install --name c1 --kind count --match 'ip_proto: 1'
check "install c1 again: exit 1, ALREADY_EXISTS" eval 'rc_is 1 && err_has "^spinctl: ALREADY_EXISTS: .*c1"'
sc install --name c2 --kind nosuch
check "install --kind nosuch: exit 1, INVALID_ARGUMENT naming the compiled-in kinds" eval \
  'rc_is 1 && err_has "^spinctl: INVALID_ARGUMENT: .*nosuch" && err_has "count" && err_has "filter" && err_has "reflect" && err_has "xor_payload" && err_has "null"'
sc install --name c2 --kind count --match 'ip_proto: "x"'
check "install with a bad --match: exit 2, names --match" eval 'rc_is 2 && err_has "--match:1:"'
sc remove nosuch
check "remove nosuch: exit 1, NOT_FOUND" eval 'rc_is 1 && err_has "^spinctl: NOT_FOUND: .*nosuch"'
sc state nosuch
check "state nosuch: exit 1, NOT_FOUND" eval 'rc_is 1 && err_has "^spinctl: NOT_FOUND: "'

sc install --name c1 --kind count --param by=ip_proto --param buckets=4 --match 'ip_proto: 17' --replace
check "install --replace c1: exit 0, prints an id" eval 'rc_is 0 && out_has "^id: [0-9]+$"'
sc handlers --json
check "handlers --json after --replace: c1 has the new match and params" \
  py '[(h["match"]["ip_proto"], h["params"]) for h in d["handlers"] if h["name"] == "c1"] == [(17, {"by": "ip_proto", "buckets": "4"})]'

printf 'name: "f1"\nkind: "filter"\nmatch { ip_proto: 6 dst_port { first: 9 } }\npriority: 3\n' >"$TMP/f1.textproto"
sc install --handler_file "$TMP/f1.textproto" --param payload_prefix=474554
check "install --handler_file (+ --param): exit 0" eval 'rc_is 0 && out_has "^id: [0-9]+$"'
sc handlers --json
check "handlers --json: f1 as written in the file, with the flag's param" \
  py 'any(h["name"] == "f1" and h["kind"] == "filter" and h["priority"] == 3 and h["match"]["dst_port"]["first"] == 9 and h["params"] == {"payload_prefix": "474554"} for h in d["handlers"])'

# --- eBPF handlers (docs/bpf.md) ----------------------------------------------
BPF_DIR=${3:-}/handlers/bpf
BPF_BAD=${3:-}/tests/unit/bpf
if [[ -n ${3:-} && -f $BPF_DIR/count.o ]]; then
  sc bpf-check "$BPF_DIR/count.o"
  check "bpf-check count.o: valid, JIT, one payload section" eval \
    'rc_is 0 && out_has "count.o: valid, runs JIT-compiled" && out_has "^spin/payload +[0-9]+ +0 +spin_state_ptr$"'
  sc --json bpf-check "$BPF_DIR/count.o"
  check "bpf-check --json count.o: a BpfReport" py \
    'd["valid"] and d["jit"] and d["error"] == "" and d["sections"] == [{"name": "spin/payload", "instructions": 13, "stack_bytes": 0, "helpers": ["spin_state_ptr"]}]'
  sc --json bpf-check "$BPF_BAD/loop.o"
  check "bpf-check loop.o: exit 1, names the section, instruction and the loop" py \
    'not d["valid"] and "spin/payload, instruction" in d["error"] and "loop" in d["error"]'
  # net_null's frames have ethertype 0: every one of them reaches it.
  sc install --name bc --bpf "$BPF_DIR/count.o" --state_size 16 --match 'ethertype: 0'
  check "install --bpf count.o: exit 0" eval 'rc_is 0 && out_has "^id: [0-9]+$"'
  sleep 0.3
  sc state bc --raw
  # The HPU counts on while the state is read: the two words are read one
  # after the other, so bytes may run ahead of packets (or one frame behind:
  # its bytes not yet added when packets was read). Each
  # frame adds exactly 64 bytes, atomically.
  check "bpf count: packets > 0 and 64 bytes each" eval \
    'rc_is 0 && "$PY" -c "import struct,sys; p,b=struct.unpack(\"<QQ\", open(sys.argv[1],\"rb\").read()); sys.exit(0 if p > 0 and b % 64 == 0 and b >= 64 * (p - 1) else 1)" "$TMP/cmd.out"'
  sc handlers --json
  check "handlers --json: bc is kind bpf with its program" \
    py 'any(h["name"] == "bc" and h["kind"] == "bpf" and h["params"]["program"].startswith("7f454c46") for h in d["handlers"])'
  check "handlers --json: bc runs JIT-compiled (runtime), native handlers say nothing" \
    py 'all((s["runtime"] == "jit: payload 13 insns") == (s["name"] == "bc") for s in d["stats"])'
  sc handlers
  check "handlers: a RUNTIME column, the program shortened" eval \
    'rc_is 0 && out_has "RUNTIME" && out_has "program=7f454c46.*chars\\) .*jit: payload 13 insns$"'
  sc install --name bl --bpf "$BPF_BAD/loop.o" --state_size 16
  check "install --bpf loop.o: exit 1, INVALID_ARGUMENT naming the instruction" eval \
    'rc_is 1 && err_has "^spinctl: INVALID_ARGUMENT: .*spin/payload, instruction [0-9]+: jumps back into a loop"'
  sc remove bc
  check "remove bc: exit 0" rc_is 0
else
  log "SKIP: eBPF checks (no build dir or no clang-built examples)"
fi

# ip_proto 200 never matches net_null's all-zero frames: the state stays as
# written.
sc install --name c3 --kind count --match 'ip_proto: 200' --state_size 32 \
  --initial_state '0102030405060708 090a0b0c0d0e0f10'
check "install --state_size 32 --initial_state: exit 0" rc_is 0
sc state c3 --raw
check "state c3 --raw: 32 bytes, the initial state then zeros" eval \
  'rc_is 0 && [[ $(od -An -tx1 "$TMP/cmd.out" | tr -d " \n") == 0102030405060708090a0b0c0d0e0f10$(printf "0%.0s" {1..32}) ]]'
sc state c3 --offset 4 --length 4
check "state c3 --offset 4 --length 4: a dump from offset 4" eval \
  'rc_is 0 && out_has "^00000004  05 06 07 08 +\|\.\.\.\.\|$"'
sc install --name c4 --kind count --initial_state 0g
check "install --initial_state 0g: exit 2, names the flag" eval 'rc_is 2 && err_has "--initial_state: .g. at character 2 is not a hex digit"'
sc remove c3
check "remove c3: exit 0" rc_is 0

sc remove c1
check "remove c1: exit 0" rc_is 0
sc remove f1
check "remove f1: exit 0" rc_is 0
sc handlers --json
check "handlers --json: c1 and f1 gone" py 'not any(h["name"] in ("c1", "f1") for h in d["handlers"]) and not d["stats"]'
sc handlers
check "handlers: says none are installed" eval 'rc_is 0 && out_has "^no handlers installed$"'

# --- usage and connection errors ---------------------------------------------
sc nosuch-command
check "unknown command: exit 2" eval 'rc_is 2 && err_has "unknown command .nosuch-command."'
sc handlers --nosuch-flag
check "unknown flag: exit 2" eval 'rc_is 2 && err_has "unknown flag --nosuch-flag"'
sc state c1 --offset abc
check "bad number: exit 2, names the flag" eval 'rc_is 2 && err_has "--offset: .abc. is not a number"'
sc remove
check "missing argument: exit 2" eval 'rc_is 2 && err_has "expects NAME"'
sc install --kind count
check "install without --name: exit 2" eval 'rc_is 2 && err_has "--name"'
sc help
check "help: exit 0, lists the commands" eval 'rc_is 0 && out_has "^  region-register " && out_has "^  watch-stats "'
sc install --help
check "install --help: exit 0, lists its flags" eval 'rc_is 0 && out_has "^  --match TEXTPROTO"'
sc peer-add b
check "peer-add with one argument: exit 2" eval 'rc_is 2 && err_has "expects NAME NODE MAC"'
sc remote-write b 1 0x10
check "remote-write without data: exit 2, names the data flags" eval 'rc_is 2 && err_has "exactly one of --data TEXT, --hex HEX, --file PATH and --generate N --size BYTES"'
sc remote-write b 1 0x10 --data x --hex 00
check "remote-write --data and --hex: exit 2" eval 'rc_is 2 && err_has "exactly one of"'
sc remote-write b zz 0x10 --data x
check "remote-write with a bad RKEY: exit 2, names RKEY" eval 'rc_is 2 && err_has "RKEY: .zz. is not a number"'
sc remote-write b 1 0x10 --hex 0g
check "remote-write --hex 0g: exit 2, names --hex" eval 'rc_is 2 && err_has "--hex: "'
sc remote-read b 1 0x10
check "remote-read without LENGTH: exit 2" eval 'rc_is 2 && err_has "expects PEER RKEY ADDRESS LENGTH"'
sc stream-send b 7
check "stream-send without messages: exit 2" eval 'rc_is 2 && err_has "exactly one of --data TEXT, --file PATH and --count N --size BYTES"'
sc stream-send b 7 --count 3
check "stream-send --count without --size: exit 2" eval 'rc_is 2 && err_has "--size BYTES"'
sc stream-send b 7 --count 3 --size 4
check "stream-send --size 4: exit 2, at least 8" eval 'rc_is 2 && err_has "at least 8"'
sc stream-send b 0 --data x
check "stream-send to stream 0: exit 2" eval 'rc_is 2 && err_has "STREAM_ID must be at least 1"'
sc stream-send b 7 --data x --file "$TMP/nonexistent"
check "stream-send --data and --file: exit 2" eval 'rc_is 2 && err_has "exactly one of"'
sc peers
check "peers without DiAD: exit 0, none" eval 'rc_is 0 && out_has "^no peers$"'
sc peer-add b fd00:d1ad::2 02:00:00:00:00:02
check "peer-add without DiAD: exit 1, FAILED_PRECONDITION" eval 'rc_is 1 && err_has "^spinctl: FAILED_PRECONDITION: .*diad_node"'
sc info
check "info without DiAD: says diad off" eval 'rc_is 0 && out_has "^diad: off$"'
"$SPINCTL" --socket "$TMP/nonexistent.sock" health >"$TMP/cmd.out" 2>"$TMP/cmd.err"
RC=$?
check "--socket to nothing: exit 3, says it cannot reach spinnicd" eval \
  'rc_is 3 && err_has "cannot reach spinnicd at unix:.*nonexistent.sock"'

# --- regions (served in parallel work; skipped while unimplemented) -----------
sc regions
if [[ $RC -eq 1 ]] && err_has "UNIMPLEMENTED"; then
  log "SKIP region checks (server does not implement regions yet)"
else
  check "regions: exit 0" rc_is 0
  sc region-register --length 4096 --name it-buf
  check "region-register 4096: exit 0, prints id, rkey, base address, length" eval \
    'rc_is 0 && out_has "^id: +[0-9]+$" && out_has "^rkey: +0x[0-9a-f]{8}$" && out_has "^base_address: +0x[0-9a-f]+$" && out_has "^length: +4096$"'
  RID=$(sed -n 's/^id: *//p' "$TMP/cmd.out")
  RID=${RID:-0}
  sc regions --json
  check "regions --json: lists it-buf, 4096 bytes" \
    py "any(r['id'] == '$RID' and r['name'] == 'it-buf' and r['length'] == '4096' for r in d['regions'])"
  sc region-write "$RID" --offset 100 --hex 'de ad be ef 01 02'
  check "region-write 6 bytes at offset 100: exit 0" rc_is 0
  sc region-read "$RID" --offset 100 --length 6 --raw
  check "region-read at offset 100: the bytes written" eval \
    'rc_is 0 && [[ $(od -An -tx1 "$TMP/cmd.out" | tr -d " \n") == deadbeef0102 ]]'
  sc region-read "$RID" --offset 96 --length 16
  check "region-read hex dump: offsets and bytes" eval \
    'rc_is 0 && out_has "^00000060  00 00 00 00 de ad be ef  01 02 00 00 00 00 00 00  \|"'
  head -c 300 /dev/urandom >"$TMP/in.bin"
  sc region-write "$RID" --offset 1000 --in "$TMP/in.bin"
  sc region-read "$RID" --offset 1000 --length 300 --out "$TMP/back.bin"
  check "region-write --in / region-read --out: same 300 bytes" eval 'rc_is 0 && cmp -s "$TMP/in.bin" "$TMP/back.bin"'
  sc region-read "$RID" --offset 4090 --length 10
  check "region-read past the end: exit 1, OUT_OF_RANGE" eval 'rc_is 1 && err_has "^spinctl: OUT_OF_RANGE: "'
  sc region-register --length 16 --access local_read,bogus
  check "region-register --access bogus: exit 2" eval 'rc_is 2 && err_has "bogus"'
  sc kinds
  if out_has "^capture: "; then
    sc install --name cap --kind capture --match 'ip_proto: 200' --bind "$RID"
    check "install --bind REGION: exit 0" rc_is 0
    sc regions --json
    check "regions --json: the region is bound to cap" \
      py "any(r['id'] == '$RID' and r['bound_to'] == ['cap'] for r in d['regions'])"
    sc region-deregister "$RID"
    check "region-deregister while bound: exit 1, FAILED_PRECONDITION" eval \
      'rc_is 1 && err_has "^spinctl: FAILED_PRECONDITION: "'
    sc remove cap
    check "remove cap: exit 0" rc_is 0
  else
    log "SKIP --bind checks (no capture kind in this build)"
  fi
  sc install --name nobind --kind count --bind 999999
  check "install --bind of an unknown region: exit 1, NOT_FOUND" eval 'rc_is 1 && err_has "^spinctl: NOT_FOUND: "'
  sc region-deregister "$RID"
  check "region-deregister: exit 0" rc_is 0
  sc region-deregister "$RID"
  check "region-deregister again: exit 1, NOT_FOUND" eval 'rc_is 1 && err_has "^spinctl: NOT_FOUND: "'
fi

# --- logs (docs/logs.md) ------------------------------------------------------
sc log
check "log: the global level and spinnic's types" eval 'rc_is 0 && out_has "^global +debug$" && out_has "^spinnic.roce +info$"'
sc log roce debug
check "log roce debug: exit 0, spinnic.roce: debug" eval 'rc_is 0 && out_has "^spinnic.roce: debug$"'
sc log nosuch debug
check "log nosuch debug: exit 1, names the known components" eval 'rc_is 1 && err_has "^spinctl: INVALID_ARGUMENT: unknown log component .nosuch.; use one of control, dataplane, diad, impair, roce "'
sc log roce
check "log with COMPONENT only: usage error (exit 2)" rc_is 2
check "spinnicd's log: one audit line per SetLogLevel, with its result" eval \
  'grep -Eq "^audit peer=unix:[^ ]* method=/spinnic.v1.Spinnic/SetLogLevel target=roce code=OK ms=" "$TMP/spinnicd.err" && grep -Eq "^audit .* target=nosuch code=INVALID_ARGUMENT error=" "$TMP/spinnicd.err" && ! grep -q "method=/spinnic.v1.Spinnic/ListLogLevels" "$TMP/spinnicd.err"'

# --- TCP with mutual TLS -----------------------------------------------------
if [[ $TLS -eq 1 ]]; then
  tcp() {
    "$SPINCTL" --target "127.0.0.1:$PORT" --timeout_ms 5000 "$@" >"$TMP/cmd.out" 2>"$TMP/cmd.err" </dev/null
    RC=$?
  }
  tcp --tls_ca "$TMP/ca.pem" --tls_cert "$TMP/client.pem" --tls_key "$TMP/client.key" info
  check "TCP, mutual TLS: info works" eval 'rc_is 0 && out_has "net_null0"'
  tcp --tls_ca "$TMP/ca.pem" --tls_cert "$TMP/client.pem" --tls_key "$TMP/client.key" log roce info
  check "TCP, mutual TLS: log roce info works" rc_is 0
  check "TCP, mutual TLS: the audit line names the client certificate's subject" \
    grep -Eq "^audit peer=ipv4:127.0.0.1:[0-9]+ subject=\"?[^ ]*CN=spinctl.* method=/spinnic.v1.Spinnic/SetLogLevel target=roce code=OK " "$TMP/spinnicd.err"
  tcp --tls_ca "$TMP/ca.pem" --tls_cert "$TMP/client.pem" --tls_key "$TMP/client.key" \
    --target "localhost:$PORT" health
  check "TCP, mutual TLS by host name: health works" rc_is 0
  tcp --tls_ca "$TMP/ca.pem" info
  check "TCP without a client certificate: refused (exit 3)" rc_is 3
  tcp --tls_ca "$TMP/other.pem" --tls_cert "$TMP/client.pem" --tls_key "$TMP/client.key" info
  check "TCP with the wrong CA: the server is not trusted (exit 3)" rc_is 3
  tcp --insecure info
  check "TCP plain text against the TLS listener: fails (exit 3)" rc_is 3
  tcp --tls_ca "$TMP/missing.pem" info
  check "TCP with a missing CA file: exit 2, names the file" eval 'rc_is 2 && err_has "missing.pem"'
  tcp --tls_ca "$TMP/ca.pem" --tls_cert "$TMP/client.pem" info
  check "TCP with --tls_cert but no --tls_key: exit 2" rc_is 2
else
  log "SKIP TLS checks (spinnicd has no --control_tcp, or openssl is missing)"
fi

it_stop_spinnicd TERM
check "spinnicd exits 0 on SIGTERM" test "$SPN_RC" = 0
check "the control socket is removed at exit" test ! -e "$SOCK"

# --- DiAD peers, against a spinnicd with a node address ----------------------
it_write_null_diad_config "$CFG"
it_start_spinnicd "$CFG" --control_socket "$SOCK"
it_wait_spinctl
sc info
check "info with DiAD: node, MAC, port, timers" eval \
  'rc_is 0 && out_has "^diad:$" && out_has "^  node: +fd00:d1ad::1$" && out_has "^  mac: +02:00:00:00:00:01$" && out_has "^  port: +p0$" && out_has "^  rto: +200 us"'
sc --json info
check "info --json: diad facts" py 'd["diad"]["enabled"] and d["diad"]["node"] == "fd00:d1ad::1" and d["diad"]["max_retries"] == 3 and int(d["diad"]["down_after_us"]) > 0'
sc peers
check "peers: none yet" eval 'rc_is 0 && out_has "^no peers$"'
sc peer-add b fd00:d1ad::2 02:00:00:00:00:02
check "peer-add b: exit 0" eval 'rc_is 0 && out_has "^added peer b \(slot [0-9]+\)$"'
sc peers
check "peers: a row for b, up" eval 'rc_is 0 && out_has "^NAME +NODE +MAC" && out_has "^b +fd00:d1ad::2 +02:00:00:00:00:02 +[0-9]+ +up "'
sc peers --json
check "peers --json: b with its node and MAC" py '[(p["name"], p["node"], p["mac"], p["up"]) for p in d["peers"]] == [("b", "fd00:d1ad::2", "02:00:00:00:00:02", True)]'
it_telemetry /spinnic/peers /spinnic/peer,b /spinnic/peer,nosuch /spinnic/transport,diad /spinnic/diad
check "telemetry: DiAD's own commands (peers, peer,b) and its counters by name" py \
  'd["/spinnic/peers"] == ["b"] and d["/spinnic/peer,b"]["up"] == 1 and d["/spinnic/peer,nosuch"] is None and "tx_data" in d["/spinnic/transport,diad"] and d["/spinnic/diad"] == d["/spinnic/transport,diad"]'
sc peer-add b fd00:d1ad::3 02:00:00:00:00:03
check "peer-add b again: exit 1, ALREADY_EXISTS" eval 'rc_is 1 && err_has "^spinctl: ALREADY_EXISTS: "'
sc peer-add s fd00:d1ad::5 02:00:00:00:00:05 --recovery selective
check "peer-add s --recovery selective: exit 0" eval 'rc_is 0 && out_has "^added peer s "'
sc peers --json
check "peers --json: s SELECTIVE, b GO_BACK_N (proto3 JSON omits the default)" \
  py '{p["name"]: p.get("recovery", "GO_BACK_N") for p in d["peers"]} == {"b": "GO_BACK_N", "s": "SELECTIVE"}'
sc peers
check "peers: RECOVERY, SRTT_US, RTO_US and the congestion columns" eval 'rc_is 0 && out_has "RECOVERY +SRTT_US +RTO_US +CWND +CC_RTT_US +DEC_DELAY +DEC_ECN +DEC_RTO +CE_RX +ECHO_RX$" && out_has "^s .* selective +[0-9.]+ +[0-9.]+( +[0-9.]+){7}$" && out_has "^b .* go_back_n +[0-9.]+ +[0-9.]+( +[0-9.]+){7}$"'
sc peer-remove s
check "peer-remove s: exit 0" rc_is 0
sc peer-add x fd00:d1ad::6 02:00:00:00:00:06 --recovery sack
check "peer-add --recovery sack: exit 2, names the choices" eval 'rc_is 2 && err_has "--recovery .sack.: write go_back_n or selective"'
sc peer-add x 2001:db8::1 02:00:00:00:00:03
check "peer-add outside fc00::/7: exit 1, INVALID_ARGUMENT naming peer.node" eval 'rc_is 1 && err_has "^spinctl: INVALID_ARGUMENT: peer.node: "'
sc peer-add x fd00:d1ad::3 01:00:00:00:00:03
check "peer-add with a multicast MAC: exit 1, names peer.mac" eval 'rc_is 1 && err_has "^spinctl: INVALID_ARGUMENT: peer.mac: "'
sc remote-write b 1 0x1000 --data hi --channel 99
check "remote-write on channel 99: exit 1, INVALID_ARGUMENT naming the channel" eval 'rc_is 1 && err_has "^spinctl: INVALID_ARGUMENT: channel 99"'
sc remote-read nosuch 1 0x1000 16
check "remote-read from an unknown peer: exit 1, NOT_FOUND" eval 'rc_is 1 && err_has "^spinctl: NOT_FOUND: .*nosuch"'
sc remote-read b 1 0x1000 2000000
check "remote-read of 2 MB: exit 1, INVALID_ARGUMENT naming length" eval 'rc_is 1 && err_has "^spinctl: INVALID_ARGUMENT: length 2000000"'
sc stats --json
check "stats --json: DiAD counters" py 'any(c["name"] == "tx_data" for c in d["diad"]) and any(c["name"].startswith("drop_") for c in d["diad"])'
sc stats
check "stats: a diad section" eval 'rc_is 0 && out_has "^diad:$" && out_has "^  tx_data: "'
sc region-register --length 65536 --stream_id 7 --name ring7
check "region-register --stream_id 7: exit 0" rc_is 0
sc regions --json
check "regions --json: ring7 is the region of stream 7" py 'any(r["name"] == "ring7" and r["stream_id"] == 7 for r in d["regions"])'
sc regions
check "regions: the STREAM column" eval 'rc_is 0 && out_has "STREAM" && out_has " ring7 .* 7 +- *$"'
sc peer-remove b
check "peer-remove b: exit 0" eval 'rc_is 0 && out_has "^removed peer b$"'
sc peer-remove b
check "peer-remove b again: exit 1, NOT_FOUND" eval 'rc_is 1 && err_has "^spinctl: NOT_FOUND: .*b"'
sc peers --json
check "peers --json: empty after removal" py 'd["peers"] == []'
it_stop_spinnicd TERM
check "spinnicd with DiAD exits 0 on SIGTERM" test "$SPN_RC" = 0
if [[ -s $TMP/stats.json ]]; then
  check "--stats_json has the DiAD counters" "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if any(c["name"] == "tx_data" for c in d["diad"]) else 1)' "$TMP/stats.json"
fi

# --- RoCE queue pairs, against a spinnicd with a roce section -----------------
sc qp-create --remote_ip 192.0.2.12 --remote_mac 02:00:00:00:00:0c
check "qp-create without --remote_qpn: exit 2, names the flag" eval 'rc_is 2 && err_has "--remote_qpn is missing"'
sc qp-create --remote_qpn 0x1000000 --remote_ip 192.0.2.12 --remote_mac 02:00:00:00:00:0c
check "qp-create with a 25-bit QPN: exit 2" eval 'rc_is 2 && err_has "--remote_qpn: 0x1000000 is above the maximum of 16777215"'
sc qp-create --remote_qpn 0x11 --remote_ip 192.0.2.12 --remote_mac 02:00:00:00:00:0c --expected_psn x
check "qp-create --expected_psn x: exit 2, names the flag" eval 'rc_is 2 && err_has "--expected_psn: .x. is not a number"'
sc qp-destroy
check "qp-destroy without QPN: exit 2" eval 'rc_is 2 && err_has "expects QPN"'
sc qp-destroy zz
check "qp-destroy zz: exit 2, names QPN" eval 'rc_is 2 && err_has "QPN: .zz. is not a number"'
it_write_null_config "$CFG"
cat >>"$CFG" <<'EOF2'
addresses { mac: "02:00:00:00:00:0b" ipv4: "192.0.2.11" ipv6: "fd00::11" }
roce { path_mtu: 1024 max_qps: 4 listen_ports: [7471] }
EOF2
it_start_spinnicd "$CFG" --control_socket "$SOCK"
it_wait_spinctl
sc info
check "info with RoCE: addresses, MAC, port, path MTU, listen ports" eval \
  'rc_is 0 && out_has "^roce:$" && out_has "^  addresses: +192.0.2.11, fd00::11$" && out_has "^  mac: +02:00:00:00:00:0b$" && out_has "^  port: +p0$" && out_has "^  path_mtu: +1024$" && out_has "^  listen_ports: +7471$" && out_has "^diad: off$"'
sc --json info
check "info --json: roce facts" py 'd["roce"]["enabled"] and d["roce"]["addresses"] == ["192.0.2.11", "fd00::11"] and d["roce"]["max_qps"] == 4 and d["roce"]["udp_port"] == 4791 and d["roce"]["qp_hpus"] == 1'
sc qps
check "qps: none yet" eval 'rc_is 0 && out_has "^no queue pairs$"'
sc qp-create --remote_qpn 0x11 --remote_ip 192.0.2.12 --remote_mac 02:00:00:00:00:0c --path_mtu 1024 --expected_psn 0x123456 --send_psn 0x777
check "qp-create: exit 0, prints the QPN" eval 'rc_is 0 && out_has "^qpn: 256 \(0x000100\)$"'
sc qps
check "qps: a row for 256 to 192.0.2.12" eval 'rc_is 0 && out_has "^QPN +REMOTE_QPN" && out_has "^256 +0x000011 +192.0.2.12 +02:00:00:00:00:0c +192.0.2.11 +1024 +16 +[a-z]+ +0x123456 +0x000777 .* grpc +verbs +0 +- +- +0 +0$"'
sc qps --json
check "qps --json: the spec read back, defaults filled in" py '[(q["qpn"], q["spec"]["remote_qpn"], q["spec"]["local_ip"], q["spec"]["max_rd_atomic"], q["origin"]) for q in d["qps"]] == [(256, 17, "192.0.2.11", 16, "grpc")]'
sc --json qp-create --remote_qpn 0x12 --remote_ip fd00::12 --remote_mac 02:00:00:00:00:0d
check "qp-create IPv6 --json: QPN 257" py 'd["qpn"] == 257'
sc qp-create --remote_qpn 0x11 --remote_ip 192.0.2.12 --remote_mac 02:00:00:00:00:0c --path_mtu 4096
check "qp-create --path_mtu 4096: exit 1, INVALID_ARGUMENT with the limit" eval 'rc_is 1 && err_has "^spinctl: INVALID_ARGUMENT: path MTU 4096 is not allowed; .* at most 1024 \(roce.path_mtu\)"'
sc qp-create --remote_qpn 0x11 --remote_ip 192.0.2.300 --remote_mac 02:00:00:00:00:0c
check "qp-create with a bad address: exit 1, names remote_ip" eval 'rc_is 1 && err_has "^spinctl: INVALID_ARGUMENT: remote_ip: \"192.0.2.300\" is not an IP address"'
sc qp-create --remote_qpn 0x11 --remote_ip 192.0.2.12 --remote_mac 02-00-00-00-00-0c
check "qp-create with a bad MAC: exit 1, names remote_mac" eval 'rc_is 1 && err_has "^spinctl: INVALID_ARGUMENT: remote_mac: "'
sc qp-create --remote_qpn 0x11 --remote_ip 192.0.2.12 --remote_mac 02:00:00:00:00:0c --local_ip 192.0.2.99
check "qp-create with a foreign local_ip: exit 1, lists ours" eval 'rc_is 1 && err_has "^spinctl: INVALID_ARGUMENT: local_ip: 192.0.2.99 is not one of the appliance.s RoCE addresses \(192.0.2.11, fd00::11\)"'
sc qp-create --remote_qpn 0x11 --remote_ip 192.0.2.12 --remote_mac 02:00:00:00:00:0c --max_rd_atomic 17
check "qp-create --max_rd_atomic 17: exit 1" eval 'rc_is 1 && err_has "^spinctl: INVALID_ARGUMENT: max_rd_atomic 17 is not allowed; use 1..16"'
sc qps --json
check "qps --json: the refused requests changed nothing" py 'sorted(q["qpn"] for q in d["qps"]) == [256, 257]'
sc stats --json
check "stats --json: RoCE counters" py 'any(c["name"] == "write_immediates" for c in d["roce"]) and any(c["name"] == "drop_bad_icrc" for c in d["roce"]) and d["diad"] == []'
sc stats
check "stats: a roce section" eval 'rc_is 0 && out_has "^roce:$" && out_has "^  rx_packets: "'
# DPDK telemetry: every transport by name, generic counters (docs/counters.md).
it_telemetry /spinnic/transports /spinnic/transport,roce /spinnic/transport,nope
check "telemetry: /spinnic/transports lists roce, /spinnic/transport,roce its counters, an unknown name null" py \
  'd["/spinnic/transports"] == ["roce"] and "write_immediates" in d["/spinnic/transport,roce"] and "drop_bad_icrc" in d["/spinnic/transport,roce"] and d["/spinnic/transport,nope"] is None'
# /spinnic/memory: the mempools' in_use and the libc heap (the soak's checks).
it_telemetry /spinnic/memory
check "telemetry: /spinnic/memory has every mempool's size and in_use, and the libc heap" py \
  'all(0 <= p["in_use"] <= p["size"] for p in d["/spinnic/memory"]["mempools"].values()) and d["/spinnic/memory"]["mempools"]["spinnic_pkts"]["size"] > 0 and d["/spinnic/memory"]["libc"]["in_use_bytes"] > 0'
sc qp-destroy 256
check "qp-destroy 256: exit 0" eval 'rc_is 0 && out_has "^destroyed queue pair 256$"'
sc qp-destroy 0x100
check "qp-destroy 0x100 again: exit 1, NOT_FOUND" eval 'rc_is 1 && err_has "^spinctl: NOT_FOUND: no queue pair 256"'
sc qps --json
check "qps --json: 257 left" py '[q["qpn"] for q in d["qps"]] == [257]'
it_stop_spinnicd TERM
check "spinnicd with RoCE exits 0 on SIGTERM" test "$SPN_RC" = 0

it_finish
