#!/usr/bin/env bash
# spinctl decode (docs/roce-decode.md) over the RoCE captures: every
# tests/fixtures/roce/*.pcap must decode exactly to its checked-in
# *.decode.txt and *.decode.jsonl; the same capture rewritten big-endian,
# with nanosecond timestamps, or as pcapng (either byte order, us or ns
# if_tsresol, a block to skip) decodes to the same frames; damaged frames
# are named (bad ICRC, IP checksum); bad input (missing file, not a pcap,
# pcapng on a non-Ethernet interface, truncated file, snaplen-cut frames)
# gets a message and exit 2; and a few hundred mutated files, pcap and
# pcapng, never crash it. No spinnicd needed.
#
#   spinctl_decode.sh SPINCTL FIXTURES_DIR
set -u
spinctl=$1
fixtures=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

if ! command -v python3 > /dev/null; then
  echo "python3 is needed to write the damaged captures"
  exit 77
fi

# ---- golden files ----
goldens=0
for pcap in "$fixtures"/*.pcap; do
  base=${pcap%.pcap}
  for mode in txt jsonl; do
    flag=; [ "$mode" = jsonl ] && flag=--json
    if ! "$spinctl" decode $flag "$pcap" > "$work/out" 2> "$work/err"; then
      fail "$(basename "$pcap") $mode: exit $?: $(cat "$work/err")"
    elif ! diff -u "$base.decode.$mode" "$work/out" > "$work/diff"; then
      fail "$(basename "$pcap") $mode differs from the golden file:"
      head -20 "$work/diff"
    elif [ -s "$work/err" ]; then
      fail "$(basename "$pcap") $mode wrote to stderr: $(cat "$work/err")"
    else
      goldens=$((goldens + 1))
    fi
  done
done
[ "$goldens" -ge 14 ] && pass "$goldens golden decodes" ||
  fail "only $goldens golden decodes (expected 14)"

# ---- the capture rewritten: byte order, timestamp resolution, damage ----
# rewrite.py IN OUT MODE [ARG]: MODE big (big-endian file), nano (ns magic),
# icrc N (flip the last payload byte before the ICRC of frame N), ipsum N
# (flip the IPv4 checksum of frame N), snap N (record N keeps 60 bytes),
# trunc K (drop the last K bytes of the file), pcapng (little-endian, us),
# pcapng-big (big-endian, if_tsresol ns), pcapng-cooked (link type 113).
cat > "$work/rewrite.py" <<'PY'
import struct, sys
src, dst, mode = sys.argv[1], sys.argv[2], sys.argv[3]
arg = int(sys.argv[4]) if len(sys.argv) > 4 else 0
d = open(src, 'rb').read()
hdr = list(struct.unpack('<IHHiIII', d[:24]))
recs = []
off = 24
while off < len(d):
    ts, us, incl, orig = struct.unpack('<IIII', d[off:off + 16])
    recs.append([ts, us, incl, orig, bytearray(d[off + 16:off + 16 + incl])])
    off += 16 + incl
end = '<'
if mode == 'big':
    end = '>'
elif mode == 'nano':
    hdr[0] = 0xa1b23c4d
    for r in recs:
        r[1] *= 1000
elif mode == 'icrc':
    recs[arg - 1][4][-5] ^= 0x01
elif mode == 'ipsum':
    recs[arg - 1][4][14 + 10] ^= 0xff
elif mode == 'snap':
    recs[arg - 1][4] = recs[arg - 1][4][:60]
    recs[arg - 1][2] = 60
out = struct.pack(end + 'IHHiIII', *hdr)
for ts, us, incl, orig, data in recs:
    out += struct.pack(end + 'IIII', ts, us, incl, orig) + bytes(data)
if mode == 'trunc':
    out = out[:len(out) - arg]
elif mode.startswith('pcapng'):
    e = '>' if mode == 'pcapng-big' else '<'
    def block(t, body):
        body += bytes(-len(body) % 4)
        return struct.pack(e + 'II', t, len(body) + 12) + body + \
            struct.pack(e + 'I', len(body) + 12)
    opts = struct.pack(e + 'HHB3x', 9, 1, 9) if mode == 'pcapng-big' else b''
    opts += struct.pack(e + 'HH', 0, 0)
    link = 113 if mode == 'pcapng-cooked' else 1
    out = block(0x0a0d0d0a, struct.pack(e + 'IHHq', 0x1a2b3c4d, 1, 0, -1))
    out += block(1, struct.pack(e + 'HHI', link, 0, 262144) + opts)
    out += block(5, bytes(20))  # interface statistics: skipped
    for ts, us, incl, orig, data in recs:
        t = ts * 10**9 + us * 1000 if mode == 'pcapng-big' else ts * 10**6 + us
        out += block(6, struct.pack(e + 'IIIII', 0, t >> 32, t & 0xffffffff,
                                    incl, orig) + bytes(data))
open(dst, 'wb').write(out)
PY
rewrite() { python3 "$work/rewrite.py" "$@"; }
rping=$fixtures/rping_v4.pcap

rewrite "$rping" "$work/big.pcap" big
if "$spinctl" decode "$work/big.pcap" > "$work/out" 2>&1 &&
   diff -q "$fixtures/rping_v4.decode.txt" "$work/out" > /dev/null; then
  pass "big-endian pcap decodes like the little-endian one"
else
  fail "big-endian pcap: $(head -3 "$work/out")"
fi

rewrite "$rping" "$work/nano.pcap" nano
# Same frames; the time column has nine decimals instead of six.
sed -E 's/^( *[0-9]+ [0-9]+\.[0-9]{6})/\1000/' "$fixtures/rping_v4.decode.txt" \
  > "$work/nano.expected"
if "$spinctl" decode "$work/nano.pcap" > "$work/out" 2>&1 &&
   diff -q "$work/nano.expected" "$work/out" > /dev/null; then
  pass "nanosecond pcap decodes the same frames with ns times"
else
  fail "nanosecond pcap: $(diff "$work/nano.expected" "$work/out" | head -5)"
fi

rewrite "$rping" "$work/rping.pcapng" pcapng
if "$spinctl" decode "$work/rping.pcapng" > "$work/out" 2>&1 &&
   diff -q "$fixtures/rping_v4.decode.txt" "$work/out" > /dev/null; then
  pass "pcapng (little-endian, us) decodes like the pcap"
else
  fail "pcapng: $(diff "$fixtures/rping_v4.decode.txt" "$work/out" | head -5)"
fi
rewrite "$rping" "$work/rping-big.pcapng" pcapng-big
if "$spinctl" decode "$work/rping-big.pcapng" > "$work/out" 2>&1 &&
   diff -q "$work/nano.expected" "$work/out" > /dev/null; then
  pass "pcapng (big-endian, if_tsresol ns) decodes the same frames with ns times"
else
  fail "big-endian ns pcapng: $(diff "$work/nano.expected" "$work/out" | head -5)"
fi

# The same frames written by DPDK's own pcapng writer (librte_pcapng, as
# dpdk-dumpcap writes them: section and interface options, if_tsresol ns,
# packet flags): every frame decodes as in the golden file; only the times
# differ (they are the writer's TSC).
if "$spinctl" decode "$fixtures/rping_v4.dpdk.pcapng" > "$work/out" 2>&1 &&
   diff -q <(awk '{ $2 = ""; print }' "$fixtures/rping_v4.decode.txt") \
     <(awk '{ $2 = ""; print }' "$work/out") > /dev/null &&
   grep -Eq '^ +13 [0-9]+\.[0-9]{9} ' "$work/out"; then
  pass "librte_pcapng's pcapng decodes the same frames, with ns times"
else
  fail "librte_pcapng's pcapng: $(head -3 "$work/out")"
fi

# Frame 16 of rping_v4 is an RC SEND ONLY (16-byte payload).
rewrite "$rping" "$work/icrc.pcap" icrc 16
"$spinctl" decode "$work/icrc.pcap" > "$work/out" 2>&1
rc=$?
line=$(grep -E '^ +16 ' "$work/out")
if [ $rc -eq 0 ] &&
   [ "$line" = "    16 3.561630 192.0.2.12 -> 192.0.2.11 RC Send Only qp=0x000011 psn=271003 icrc=bad ackreq=1" ] &&
   grep -q '^summary: frames=53 roce=41 icrc_ok=40 icrc_bad=1 parse_errors=0 others=12 cut=0$' "$work/out"; then
  pass "a flipped payload bit is icrc=bad with the BTH still shown"
else
  fail "bad ICRC: rc=$rc line='$line' $(tail -1 "$work/out")"
fi

rewrite "$rping" "$work/ipsum.pcap" ipsum 17
"$spinctl" decode --json "$work/ipsum.pcap" > "$work/out" 2>&1
if grep -q '"frame":17,.*"psn":271003,"icrc":"unchecked","error":"ip_checksum","ackreq":false}$' "$work/out" &&
   grep -q '"parse_errors":1,' "$work/out"; then
  pass "a bad IPv4 checksum is named (error=ip_checksum) and counted"
else
  fail "IP checksum: $(grep '"frame":17' "$work/out")"
fi

# A CNP: NVIDIA's ConnectX example (tests/unit/roce/cnp_test.cc builds it
# byte for byte), then the same with its ICRC's last byte flipped.
python3 - "$work/cnp.pcap" <<'PY'
import struct, sys
frame = bytes.fromhex(
    '020000000007020000000008' '0800'
    '4589003c98c640002011692716161608'
    '16161607dbae12b7002800008100ffff'
    '400000d2000000000000000000000000'
    '0000000000000000dafc1bef')
bad = frame[:-1] + bytes([frame[-1] ^ 1])
out = struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1)
for i, f in enumerate((frame, bad)):
    out += struct.pack('<IIII', 100, i, len(f), len(f)) + f
open(sys.argv[1], 'wb').write(out)
PY
"$spinctl" decode "$work/cnp.pcap" > "$work/out" 2>&1
rc=$?
if [ $rc -eq 0 ] &&
   grep -qx '     1 0.000000 22.22.22.8 -> 22.22.22.7 CNP qp=0x0000d2 icrc=ok becn=1' "$work/out" &&
   grep -qx '     2 0.000001 22.22.22.8 -> 22.22.22.7 CNP qp=0x0000d2 icrc=bad' "$work/out" &&
   grep -q '^summary: frames=2 roce=2 icrc_ok=1 icrc_bad=1 parse_errors=0 others=0 cut=0$' "$work/out"; then
  pass "a CNP decodes as CNP with its QP, ICRC and BECN; a bad ICRC is named"
else
  fail "CNP: rc=$rc $(cat "$work/out")"
fi

# ---- bad input: message on stderr, exit 2 ----
expect_error() {  # NAME FILE PATTERN
  "$spinctl" decode "$2" > "$work/out" 2> "$work/err"
  local rc=$?
  if [ $rc -eq 2 ] && grep -q -- "$3" "$work/err"; then
    pass "$1: exit 2, '$(head -1 "$work/err")'"
  else
    fail "$1: exit $rc, stderr '$(cat "$work/err")'"
  fi
}
expect_error "missing file" "$work/no-such.pcap" "cannot open .*no-such.pcap"
echo "hello, this is a text file and not a capture" > "$work/text.pcap"
expect_error "not a pcap" "$work/text.pcap" "not a pcap file: magic"
: > "$work/empty.pcap"
expect_error "empty file" "$work/empty.pcap" "the file is empty"
head -c 10 "$rping" > "$work/short.pcap"
expect_error "short header" "$work/short.pcap" "shorter than the 24-byte"
rewrite "$rping" "$work/cooked.pcapng" pcapng-cooked
expect_error "pcapng on a non-Ethernet interface" "$work/cooked.pcapng" "link type 113, not Ethernet"
rewrite "$rping" "$work/trunc.pcap" trunc 5
expect_error "truncated record" "$work/trunc.pcap" "record 53 at byte .*the file ends after .* of its .* bytes (truncated file)"
if grep -q '^    52 ' "$work/out" && grep -q '^summary: frames=52 ' "$work/out"; then
  pass "truncated file: the 52 whole frames are still decoded"
else
  fail "truncated file output: $(tail -2 "$work/out")"
fi
# The last record holds 322 bytes: keep 10 bytes of its header.
rewrite "$rping" "$work/trunc_hdr.pcap" trunc $((322 + 6))
expect_error "truncated record header" "$work/trunc_hdr.pcap" "the file ends 10 bytes into its 16-byte header"
rewrite "$rping" "$work/snap.pcap" snap 20
expect_error "snaplen-cut frame" "$work/snap.pcap" "1 frame(s) cut short by the capture's snaplen .*first: frame 20"
if grep -q '^    20 3.568781 (cut by the snaplen, not decoded) captured=60 length=' "$work/out"; then
  pass "snaplen-cut frame 20 is shown as cut"
else
  fail "snaplen-cut line: $(grep '^    20 ' "$work/out")"
fi

# ---- robustness: mutated captures never crash it ----
# One python run writes them all (a process per file is too slow on a busy
# machine).
mkdir "$work/mutated"
python3 - "$rping" "$work/mutated" "$work/rping-big.pcapng" <<'PY'
import random, sys
pcap = open(sys.argv[1], 'rb').read()
pcapng = open(sys.argv[3], 'rb').read()
for seed in range(1, 301):
    rng = random.Random(seed)
    b = bytearray(pcap if seed % 3 else pcapng)
    for _ in range(rng.randint(1, 8)):
        b[rng.randrange(len(b))] = rng.randrange(256)
    if rng.random() < 0.5:
        b = b[:rng.randrange(len(b))]
    open('%s/%d.pcap' % (sys.argv[2], seed), 'wb').write(bytes(b))
PY
crashes=0
for seed in $(seq 1 300); do
  "$spinctl" decode "$work/mutated/$seed.pcap" > /dev/null 2>&1
  rc=$?
  if [ $rc -ne 0 ] && [ $rc -ne 2 ]; then
    crashes=$((crashes + 1))
    cp "$work/mutated/$seed.pcap" "/tmp/spinctl_decode_crash_$seed.pcap"
    echo "seed $seed: exit $rc (kept in /tmp/spinctl_decode_crash_$seed.pcap)"
  fi
done
[ $crashes -eq 0 ] && pass "300 mutated captures (a third pcapng): exit 0 or 2 every time" ||
  fail "$crashes of 300 mutated captures crashed"

echo "failures: $failures"
[ $failures -eq 0 ]
