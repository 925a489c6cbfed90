#!/usr/bin/env bash
# Golden replay: spinnicd reads tests/fixtures/pcap/in.pcap on its wire port
# (net_pcap) and must write exactly expected_host.pcap's frames, in order, on
# its host port, with an xor_payload and a filter handler installed from the
# config, and count the malformed frames by reason.
#
# usage: pcap_replay_test.sh SPINNICD FIXTURE_DIR
set -euo pipefail
spinnicd=$1
fixtures=$2
work=$(mktemp -d)
prefix="spn-pcap-$$"
# --file-prefix leaves a runtime directory behind; remove it with ours.
trap 'rm -rf "$work" "/var/run/dpdk/$prefix"' EXIT

# An empty capture for the host port's receive side.
python3 -c "import struct,sys; sys.stdout.buffer.write(struct.pack('<IHHiIII',0xA1B2C3D4,2,4,0,0,65535,1))" >"$work/empty.pcap"
cat >"$work/replay.textproto" <<CONF
eal_args: ["--no-huge", "-m", "256", "--no-pci", "--file-prefix", "$prefix"]
ports { name: "wire0" role: PORT_ROLE_WIRE
        vdev: "net_pcap_w$$,rx_pcap=$fixtures/in.pcap,tx_pcap=$work/wire_out.pcap" }
ports { name: "host0" role: PORT_ROLE_HOST
        vdev: "net_pcap_h$$,rx_pcap=$work/empty.pcap,tx_pcap=$work/host_out.pcap" }
port_pairs { a: "wire0" b: "host0" }
workers: [1]
main_lcore: 0
handlers { name: "xor9" kind: "xor_payload" params { key: "key" value: "5a" }
           match { ip_proto: 17 dst_port { first: 9 } } }
handlers { name: "drop53" kind: "filter" match { ip_proto: 17 dst_port { first: 53 } } }
runtime { duration_s: 2 stats_interval_ms: 0 }
CONF
timeout 60 "$spinnicd" --config "$work/replay.textproto" \
  --stats_json "$work/stats.json" >"$work/log" 2>&1 || {
  cat "$work/log"; echo "FAIL: spinnicd exited with $?"; exit 1; }

python3 - "$work/host_out.pcap" "$fixtures/expected_host.pcap" "$work/stats.json" "$work/wire_out.pcap" <<'PY'
import json, struct, sys

def frames(path):
    data = open(path, "rb").read()
    out, off = [], 24
    while off < len(data):
        _, _, incl, _ = struct.unpack_from("<IIII", data, off)
        off += 16
        out.append(data[off:off + incl])
        off += incl
    return out

got, want = frames(sys.argv[1]), frames(sys.argv[2])
ok = True
if got != want:
    ok = False
    print(f"FAIL: host port sent {len(got)} frames, expected {len(want)}")
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            print(f"  first difference at frame {i}:\n  got  {g.hex()}\n  want {w.hex()}")
            break
if frames(sys.argv[4]):
    ok = False
    print("FAIL: frames came out of the wire port")
stats = json.load(open(sys.argv[3]))
wire = stats["ports"][0]
expect = {"runt": 1, "truncated": 1, "handler_drop": 3}
for reason, n in wire["drops"].items():
    n = int(n)  # v1::Stats JSON: uint64 counters are strings
    if n != expect.get(reason, 0):
        ok = False
        print(f"FAIL: wire0 drop {reason} = {n}, expected {expect.get(reason, 0)}")
ectx = {e["name"]: e for e in stats["handlers"]}
if int(ectx["xor9"]["packets"]) != 4 or int(ectx["drop53"]["dropped"]) != 3:
    ok = False
    print("FAIL: handler counters", ectx)
print("ok: %d frames byte-exact" % len(got) if ok else "")
sys.exit(0 if ok else 1)
PY
