#!/usr/bin/env bash
# The sPIN use-case handlers (docs/handlers.md) between two real appliances
# over DiAD, through a seeded impairment stage (loss, reordering,
# duplication), each checked by the bytes that end up in a region or in the
# reply:
#
#   [A wire0] -memif- spinnic-impair -memif- [B wire0]
#
# A is the client's appliance (spinctl against A drives remote writes and
# stream messages to B); the handlers run on B, and where a handler puts to
# its sender (pingpong, kvs, cond_read, raid parity, bcast) on A too.
#
#  datatype    a packed message written to B lands in B's layout region in
#              the vector and the indexed layout, byte for byte (packets
#              arrive reordered and retransmitted)
#  raid        two data regions on B (raid_parity role data) put their
#              deltas to the parity region on A (role parity): after writes
#              and an overwrite, parity == block1 XOR block2, and the data
#              regions hold the blocks
#  kvs         PUT then GET over DiAD streams: the GET's reply, in A's ring
#              for the reply stream, carries the PUT value; a missing key
#              answers NOT_FOUND
#  cond_read   a read with the right version returns the data, with a stale
#              version a refusal carrying the current version
#  pingpong    a 4-packet message to B comes back, packet by packet, into a
#              region on A, exactly
#  reduce      four int64 vectors sum exactly (wrapping) into B's region;
#              one round counted
#  bcast       a write to B's broadcast buffer (root, tree "b,a") lands on B
#              and is forwarded to A's
#
# usage: handlers_pair.sh SPINNICD SPINCTL SPINNIC_IMPAIR
# env:   HANDLERS_PAIR_SEED (1)
# shellcheck disable=SC2034  # used by lib.sh
TEST_NAME=handlers_pair
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
if [[ $(id -u) -ne 0 ]]; then
  echo "[$TEST_NAME] SKIP: needs root (DPDK memif between processes, /var/run/dpdk)"
  exit 77
fi
it_init "$@"
[[ $# -ge 3 ]] || die "usage: $0 SPINNICD SPINCTL SPINNIC_IMPAIR"
it_spinctl_init "$2"
IMPAIR=$(readlink -f "$3")
[[ -x $IMPAIR ]] || die "spinnic-impair not found at $3"
SEED=${HANDLERS_PAIR_SEED:-1}
PFX=spn-it-handlers-$$
source "$IT_DIR/pair_lib.sh"

scA() { SOCK=$SOCK_A sc "$@"; }
scB() { SOCK=$SOCK_B sc "$@"; }
OP=(--timeout_ms 30000)

# region X NAME LENGTH ACCESS [STREAM]: registers a region on X; sets
# <NAME>_ID, <NAME>_RKEY, <NAME>_BASE.
region() {
  local x=$1 name=$2 length=$3 access=$4 stream=${5:-0} extra=()
  [[ $stream -ne 0 ]] && extra=(--stream_id "$stream")
  SOCK=$TMP/ctl-$x.sock sc region-register --length "$length" --access "$access" \
    --name "$name" "${extra[@]}" --json
  rc_is 0 || die "region $name on $x: $(cat "$TMP/cmd.err")"
  printf -v "${name}_ID" '%s' "$(json 'd["id"]')"
  printf -v "${name}_RKEY" '%s' "$(json 'd["rkey"]')"
  printf -v "${name}_BASE" '%s' "$(json 'd["base_address"]')"
}

# install X FILE TEXTPROTO BIND...: installs the handler in TEXTPROTO on X.
install() {
  local x=$1 file=$TMP/$2.textproto text=$3 binds=() id
  shift 3
  for id in "$@"; do binds+=(--bind "$id"); done
  printf '%s\n' "$text" >"$file"
  SOCK=$TMP/ctl-$x.sock sc install --handler_file "$file" "${binds[@]}"
  rc_is 0 || die "install $2 on $x: $(cat "$TMP/cmd.err")"
}

# read_region X ID LENGTH OUT: the first LENGTH bytes of region ID on X.
read_region() {
  SOCK=$TMP/ctl-$1.sock sc region-read "$2" --offset 0 --length "$3" --out "$4"
  [[ $RC -eq 0 ]]
}

# until_same X ID LENGTH EXPECTED: polls region ID on X (at most 20 s)
# until its first LENGTH bytes equal the file EXPECTED.
until_same() {
  local i
  for ((i = 0; i < 200; i++)); do
    read_region "$1" "$2" "$3" "$TMP/got.bin" && cmp -s "$TMP/got.bin" "$4" && return 0
    sleep 0.1
  done
  cmp -l "$TMP/got.bin" "$4" | head -5 >&2
  return 1
}

# ring_records ID: the records of A's stream ring region ID, one JSON list of
# hex strings (docs/diad.md, "Without a handler").
ring_records() {
  read_region a "$1" 65536 "$TMP/ring.bin" || return 1
  "$PY" - "$TMP/ring.bin" <<'EOF'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
committed = struct.unpack_from("<Q", b, 8)[0]
out, o, size = [], 0, len(b) - 64
while o < committed:
    at = 64 + o % size
    n, _stream = struct.unpack_from("<II", b, at)
    out.append(b[at + 8:at + 8 + n].hex())
    o += 8 + (n + 7) // 8 * 8
print(json.dumps(out))
EOF
}

# --- start -----------------------------------------------------------------------------
for x in a b; do
  sed -e "s#/run/spinnic/diad/#$TMP/#g" -e "s/\"spinnic-diad-$x\"/\"$PFX-$x\"/" \
    "$REPO/deploy/configs/diad-$x.textproto" >"$TMP/diad-$x.textproto"
done
pair_start_impair --seed "$SEED" --loss 0.02 --reorder 0.05 --duplicate 0.01
pair_start_appliance a "$TMP/diad-a.textproto" "$TMP/a.json" 600 $((16 << 20))
pair_start_appliance b "$TMP/diad-b.textproto" "$TMP/b.json" 600 $((16 << 20))
pair_wait_health a
pair_wait_health b
pair_links_up
check "both wire0 links are up" eval '[[ $a_up == True && $b_up == True ]]'

lists_use_cases() {
  local k
  scB kinds
  rc_is 0 || return 1
  for k in pingpong bcast raid_parity datatype kvs cond_read reduce agg; do
    out_has "^$k: " || { log "kinds does not list $k"; return 1; }
  done
}
check "spinctl kinds lists the eight use cases with their schemas" lists_use_cases

# --- datatype ---------------------------------------------------------------------------
# 6000 packed bytes (5 packets): vector 100-byte blocks every 250 bytes;
# indexed blocks of 700, 1300 and 4000 bytes at 9000, 0 and 3000.
region b PACKV 8192 remote_write
region b PACKI 8192 remote_write
region b LAYV 16384 local_read,local_write
region b LAYI 16384 local_read,local_write
install b dtv "name: \"dtv\" kind: \"datatype\" params { key: \"blocklen\" value: \"100\" } params { key: \"stride\" value: \"250\" } diad { write_region: $PACKV_ID }" "$LAYV_ID"
install b dti "name: \"dti\" kind: \"datatype\" params { key: \"layout\" value: \"indexed\" } params { key: \"blocks\" value: \"700@9000,1300@0,4000@3000\" } diad { write_region: $PACKI_ID }" "$LAYI_ID"
head -c 6000 /dev/urandom >"$TMP/packed.bin"
"$PY" - "$TMP/packed.bin" "$TMP/layv.bin" "$TMP/layi.bin" <<'EOF'
import sys
p = open(sys.argv[1], "rb").read()
v = bytearray(16384)
for i in range(0, len(p), 100):
    v[i // 100 * 250:i // 100 * 250 + 100] = p[i:i + 100]
open(sys.argv[2], "wb").write(v)
ind, o = bytearray(16384), 0
for n, disp in ((700, 9000), (1300, 0), (4000, 3000)):
    ind[disp:disp + n] = p[o:o + n]
    o += n
open(sys.argv[3], "wb").write(ind)
EOF
scA remote-write b "$PACKV_RKEY" "$PACKV_BASE" --file "$TMP/packed.bin" "${OP[@]}"
check "datatype: vector message written (exit 0)" rc_is 0
check "datatype: B's vector layout is exact" until_same b "$LAYV_ID" 16384 "$TMP/layv.bin"
scA remote-write b "$PACKI_RKEY" "$PACKI_BASE" --file "$TMP/packed.bin" "${OP[@]}"
check "datatype: indexed message written (exit 0)" rc_is 0
check "datatype: B's indexed layout is exact" until_same b "$LAYI_ID" 16384 "$TMP/layi.bin"

# --- raid parity ------------------------------------------------------------------------
region a PARITY 16384 remote_write,local_read,local_write
region b DATA1 16384 remote_write,remote_read,local_read,local_write
region b DATA2 16384 remote_write,remote_read,local_read,local_write
install a parity "name: \"parity\" kind: \"raid_parity\" params { key: \"role\" value: \"parity\" } diad { write_region: $PARITY_ID }" "$PARITY_ID"
for k in 1 2; do
  id_var=DATA${k}_ID
  install b "data$k" "name: \"data$k\" kind: \"raid_parity\" params { key: \"role\" value: \"data\" } params { key: \"parity_peer\" value: \"a\" } params { key: \"parity_rkey\" value: \"$PARITY_RKEY\" } params { key: \"parity_address\" value: \"$PARITY_BASE\" } diad { write_region: ${!id_var} }" "${!id_var}"
done
head -c 16384 /dev/urandom >"$TMP/block1.bin"
head -c 16384 /dev/urandom >"$TMP/block2.bin"
head -c 5000 /dev/urandom >"$TMP/patch.bin"
# A write whose delta put is refused (the channel to A busy) FAILs whole and
# the client writes again: applying a block twice is harmless (its second
# delta is zero).
raid_write() {
  local rkey=$1 address=$2 file=$3 i
  for ((i = 0; i < 5; i++)); do
    scA remote-write b "$rkey" "$address" --file "$file" "${OP[@]}"
    [[ $RC -eq 0 ]] && return 0
  done
  return 1
}
check "raid: block 1 written to B" raid_write "$DATA1_RKEY" "$DATA1_BASE" "$TMP/block1.bin"
check "raid: block 2 written to B" raid_write "$DATA2_RKEY" "$DATA2_BASE" "$TMP/block2.bin"
check "raid: 5000 bytes of block 1 overwritten at 3001" \
  raid_write "$DATA1_RKEY" "$((DATA1_BASE + 3001))" "$TMP/patch.bin"
"$PY" - "$TMP"/block1.bin "$TMP"/block2.bin "$TMP"/patch.bin "$TMP"/parity.bin "$TMP"/block1new.bin <<'EOF'
import sys
b1 = bytearray(open(sys.argv[1], "rb").read())
b2 = open(sys.argv[2], "rb").read()
b1[3001:8001] = open(sys.argv[3], "rb").read()
open(sys.argv[5], "wb").write(b1)
open(sys.argv[4], "wb").write(bytes(x ^ y for x, y in zip(b1, b2)))
EOF
check "raid: B's data region 1 holds the new block" until_same b "$DATA1_ID" 16384 "$TMP/block1new.bin"
check "raid: A's parity == block 1 XOR block 2" until_same a "$PARITY_ID" 16384 "$TMP/parity.bin"
scA remote-read b "$DATA2_RKEY" "$DATA2_BASE" 16384 --out "$TMP/read2.bin" "${OP[@]}"
check "raid: a client reads block 2 back over DiAD" eval 'rc_is 0 && cmp -s "$TMP/read2.bin" "$TMP/block2.bin"'

# --- kvs and cond_read: requests on streams 20 and 22, replies on 21 ------------------
region a REPLIES 65536 local_read 21
region b KV 65536 local_read,local_write
region b VERSIONED 4096 local_read,local_write
install b kvs "name: \"kvs\" kind: \"kvs\" params { key: \"key_max\" value: \"16\" } params { key: \"value_max\" value: \"64\" } params { key: \"reply_stream\" value: \"21\" } diad { stream_id: 20 }" "$KV_ID"
install b cond "name: \"cond\" kind: \"cond_read\" params { key: \"version_offset\" value: \"0\" } params { key: \"reply_stream\" value: \"21\" } diad { stream_id: 22 }" "$VERSIONED_ID"
# kv_request FILE OP ID KEY [VALUE]: a kvs request (docs/handlers.md, kvs).
kv_request() {
  "$PY" -c '
import struct, sys
op, rid, key = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].encode()
value = sys.argv[5].encode() if len(sys.argv) > 5 else b""
open(sys.argv[1], "wb").write(struct.pack("<BBHI", op, len(key), len(value), rid) + key + value)
' "$@"
}
kv_request "$TMP/put.bin" 2 7 "alpha" "the value of alpha"
kv_request "$TMP/get.bin" 1 8 "alpha"
kv_request "$TMP/miss.bin" 1 9 "beta"
for f in put get miss; do
  scA stream-send b 20 --file "$TMP/$f.bin" "${OP[@]}"
  check "kvs: $f request delivered" rc_is 0
done
# cond_read: version 5 and 64 bytes of data at offset 512.
head -c 64 /dev/urandom >"$TMP/cdata.bin"
scB region-write "$VERSIONED_ID" --offset 0 --hex 0500000000000000
scB region-write "$VERSIONED_ID" --offset 512 --in "$TMP/cdata.bin"
cond_request() {
  "$PY" -c 'import struct,sys; open(sys.argv[1],"wb").write(struct.pack("<IIQQ", int(sys.argv[2]), 64, 512, int(sys.argv[3])))' "$@"
}
cond_request "$TMP/cond-ok.bin" 30 5
cond_request "$TMP/cond-stale.bin" 31 4
for f in cond-ok cond-stale; do
  scA stream-send b 22 --file "$TMP/$f.bin" "${OP[@]}"
  check "cond_read: $f request delivered" rc_is 0
done
# replies_match: the five replies, in any order, each as documented.
replies_match() {
  local i
  for ((i = 0; i < 100; i++)); do
    ring_records "$REPLIES_ID" >"$TMP/replies.json" 2>/dev/null &&
      "$PY" - "$TMP/replies.json" "$TMP/cdata.bin" <<'EOF' && return 0
import json, struct, sys
recs = [bytes.fromhex(h) for h in json.load(open(sys.argv[1]))]
cdata = open(sys.argv[2], "rb").read()
kv = {r[4:8]: r for r in recs if len(r) >= 8 and r[4:8] in (struct.pack("<I", i) for i in (7, 8, 9))}
cond = {r[0:4]: r for r in recs if len(r) >= 16 and r[0:4] in (struct.pack("<I", i) for i in (30, 31))}
def kv_ok(i, status, op, value):
    r = kv.get(struct.pack("<I", i))
    return r is not None and r[0] == status and r[1] == op and struct.unpack_from("<H", r, 2)[0] == len(value) and r[8:8 + len(value)] == value
ok = (kv_ok(7, 0, 2, b"") and kv_ok(8, 0, 1, b"the value of alpha") and kv_ok(9, 1, 1, b"")
      and struct.pack("<I", 30) in cond and struct.pack("<I", 31) in cond)
if ok:
    good, stale = cond[struct.pack("<I", 30)], cond[struct.pack("<I", 31)]
    ok = (good[4] == 0 and struct.unpack_from("<Q", good, 8)[0] == 5 and good[16:16 + 64] == cdata
          and stale[4] == 1 and struct.unpack_from("<Q", stale, 8)[0] == 5 and len(stale) == 16)
sys.exit(0 if ok else 1)
EOF
    sleep 0.1
  done
  log "replies: $(head -c 800 "$TMP/replies.json")"
  return 1
}
check "kvs + cond_read: GET returns the PUT value, a missing key NOT_FOUND, cond_read serves version 5 and refuses 4" replies_match

# --- pingpong: written back into A's region -----------------------------------------
region a PONG 8192 remote_write,local_read
install b ping "name: \"ping\" kind: \"pingpong\" params { key: \"mode\" value: \"write\" } params { key: \"reply_rkey\" value: \"$PONG_RKEY\" } params { key: \"reply_address\" value: \"$PONG_BASE\" } diad { stream_id: 23 }"
head -c 5000 /dev/urandom >"$TMP/ping.bin"
cat "$TMP/ping.bin" <(head -c 3192 /dev/zero) >"$TMP/pong.bin"
scA stream-send b 23 --file "$TMP/ping.bin" "${OP[@]}"
check "pingpong: 5000-byte message delivered" rc_is 0
check "pingpong: every packet came back into A's region, exactly" until_same a "$PONG_ID" 8192 "$TMP/pong.bin"

# --- reduce -----------------------------------------------------------------------------
region b SUM 2048 local_read,local_write
install b sum "name: \"sum\" kind: \"reduce\" params { key: \"type\" value: \"int64\" } params { key: \"count\" value: \"256\" } params { key: \"contributors\" value: \"4\" } diad { stream_id: 24 }" "$SUM_ID"
"$PY" - "$TMP" <<'EOF'
import os, random, struct, sys
rng = random.Random(7)
total = [0] * 256
for c in range(4):
    v = [rng.randrange(-2**63, 2**63) for _ in range(256)]
    total = [(t + x) % 2**64 for t, x in zip(total, v)]
    open(os.path.join(sys.argv[1], f"contrib{c}.bin"), "wb").write(struct.pack("<256q", *v))
open(os.path.join(sys.argv[1], "sum.bin"), "wb").write(struct.pack("<256Q", *total))
EOF
for c in 0 1 2 3; do
  scA stream-send b 24 --file "$TMP/contrib$c.bin" "${OP[@]}"
  check "reduce: contribution $c delivered" rc_is 0
done
check "reduce: B's region holds the exact int64 sum of the four vectors" until_same b "$SUM_ID" 2048 "$TMP/sum.bin"
scB state sum --length 56 --raw
log "reduce state (contributions elements bad rounds failed bad_region events_refused): $("$PY" -c "import struct,sys; print(struct.unpack_from('<7Q', open(sys.argv[1],'rb').read()))" "$TMP/cmd.out" 2>&1)"
check "reduce: one round completed (state word 3)" eval \
  '[[ $("$PY" -c "import struct,sys; print(struct.unpack_from(\"<4Q\", open(sys.argv[1],\"rb\").read())[3])" "$TMP/cmd.out") == 1 ]]'

# --- bcast ------------------------------------------------------------------------------
region a BCAST_A 8192 remote_write,local_read
region b BCAST_B 8192 remote_write,local_read
install b bcast "name: \"bcast\" kind: \"bcast\" params { key: \"tree\" value: \"b,a\" } params { key: \"rank\" value: \"0\" } params { key: \"rkeys\" value: \"$BCAST_B_RKEY,$BCAST_A_RKEY\" } params { key: \"addresses\" value: \"$BCAST_B_BASE,$BCAST_A_BASE\" } diad { write_region: $BCAST_B_ID }" "$BCAST_B_ID"
head -c 8192 /dev/urandom >"$TMP/bcast.bin"
scA remote-write b "$BCAST_B_RKEY" "$BCAST_B_BASE" --file "$TMP/bcast.bin" "${OP[@]}"
check "bcast: message written to the root" rc_is 0
check "bcast: delivered at the root (B)" until_same b "$BCAST_B_ID" 8192 "$TMP/bcast.bin"
check "bcast: forwarded to its child (A)" until_same a "$BCAST_A_ID" 8192 "$TMP/bcast.bin"
region b BCAST_BAD 4096 remote_write,local_read
printf 'name: "bad" kind: "bcast" params { key: "tree" value: "b,nosuch" } params { key: "rank" value: "0" } params { key: "rkey" value: "1" } diad { write_region: %s }\n' \
  "$BCAST_BAD_ID" >"$TMP/bad.textproto"
scB install --handler_file "$TMP/bad.textproto" --bind "$BCAST_BAD_ID"
check "bcast: a tree naming an unknown peer is refused at install" eval \
  'rc_is 1 && err_has "INVALID_ARGUMENT.*peer .nosuch."'

it_finish
