#!/usr/bin/env python3
"""Small traffic and inspection tool for spinnic's integration tests (stdlib only).

Subcommands (run inside a host namespace with `ip netns exec`):
  udp-sink      receive UDP datagrams on ports for a while, write them as JSON
  udp-send      send numbered UDP datagrams, write what was sent as JSON
  udp-echo      send datagrams and wait for each to come back (reflect test)
  raw-udp       send one hand-made Ethernet/IP/UDP frame (optionally with a bad
                UDP checksum) through an AF_PACKET socket
  capture       record UDP frames to given ports from an AF_PACKET socket and
                check their checksums
  icmp-out      print the ICMP (v4) and ICMPv6 messages this namespace sent
and, outside namespaces:
  stats         evaluate a Python expression over spinnicd's --stats_json file
Every loop is bounded by a deadline.
"""
import argparse
import json
import os
import select
import signal
import socket
import struct
import sys
import time


def payload_for(i, size, seed=0):
    """Deterministic payload of datagram i: recognisable and not all zero."""
    head = b"spinnic-%06d-%d:" % (i, seed)
    body = bytes(((i * 31 + k * 7 + seed) & 0xFF) for k in range(max(0, size - len(head))))
    return (head + body)[:size]


def family(addr):
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def mark_ready(path):
    if path:
        with open(path + ".ready", "w"):
            pass


# --- udp-sink -----------------------------------------------------------------
def cmd_udp_sink(a):
    socks = []
    for addr in a.bind:
        for port in a.port:
            s = socket.socket(family(addr), socket.SOCK_DGRAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((addr, port))
            socks.append(s)
    got = []
    stop = [False]
    signal.signal(signal.SIGTERM, lambda *_: stop.__setitem__(0, True))
    mark_ready(a.out)
    deadline = time.monotonic() + a.seconds
    while not stop[0]:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        try:
            ready, _, _ = select.select(socks, [], [], min(left, 0.2))
        except InterruptedError:
            continue
        for s in ready:
            data, src = s.recvfrom(65535)
            got.append({"src": src[0], "sport": src[1], "dport": s.getsockname()[1],
                        "data": data.hex()})
            if a.expect and len(got) >= a.expect:
                stop[0] = True
    with open(a.out, "w") as f:
        json.dump(got, f)
    return 0


# --- udp-send -----------------------------------------------------------------
def cmd_udp_send(a):
    s = socket.socket(family(a.dst), socket.SOCK_DGRAM)
    if a.sport:
        s.bind(("::" if ":" in a.dst else "0.0.0.0", a.sport))
    sent = []
    for i in range(a.count):
        size = a.size + (i % 7)  # vary the length: key cycling, odd lengths
        p = payload_for(i, size, a.seed)
        s.sendto(p, (a.dst, a.port))
        sent.append(p.hex())
        time.sleep(a.gap)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(sent, f)
    return 0


# --- udp-echo -----------------------------------------------------------------
def cmd_udp_echo(a):
    """Send count datagrams to dst:port; each must come back, byte-identical,
    from dst:port (the appliance reflected it). Retries a datagram up to
    `tries` times (a lost frame is not the property under test)."""
    s = socket.socket(family(a.dst), socket.SOCK_DGRAM)
    s.bind(("::" if ":" in a.dst else "0.0.0.0", a.sport))
    ok, bad, lost = 0, [], 0
    overall = time.monotonic() + a.deadline
    for i in range(a.count):
        if time.monotonic() > overall:
            lost += a.count - i
            break
        p = payload_for(i, a.size + (i % 5), a.seed)
        answered = False
        for _ in range(a.tries):
            s.sendto(p, (a.dst, a.port))
            deadline = time.monotonic() + a.timeout
            while time.monotonic() < deadline:
                r, _, _ = select.select([s], [], [], max(0.0, deadline - time.monotonic()))
                if not r:
                    break
                data, src = s.recvfrom(65535)
                if data == p and src[0] == a.dst and src[1] == a.port:
                    answered = True
                    break
                bad.append({"i": i, "src": list(src[:2]), "data": data.hex()})
            if answered:
                break
        if answered:
            ok += 1
        else:
            lost += 1
    print(json.dumps({"sent": a.count, "reflected": ok, "lost": lost, "unexpected": bad}))
    return 0 if ok == a.count and not bad else 1


# --- checksums and frames -------------------------------------------------------
def csum16(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def udp_checksum(src, dst, udp, v6):
    if v6:
        pseudo = src + dst + struct.pack("!I3xB", len(udp), 17)
    else:
        pseudo = src + dst + struct.pack("!xBH", 17, len(udp))
    c = 0xFFFF - csum16(pseudo + udp)
    return c or 0xFFFF


def mac_bytes(m):
    return bytes(int(x, 16) for x in m.split(":"))


def cmd_raw_udp(a):
    v6 = ":" in a.dst
    payload = bytes.fromhex(a.payload_hex)
    udp = struct.pack("!HHHH", a.sport, a.dport, 8 + len(payload), 0) + payload
    if v6:
        src, dst = socket.inet_pton(socket.AF_INET6, a.src), socket.inet_pton(socket.AF_INET6, a.dst)
        ip = struct.pack("!IHBB", 6 << 28, len(udp), 17, 64) + src + dst
        ethertype = 0x86DD
    else:
        src, dst = socket.inet_aton(a.src), socket.inet_aton(a.dst)
        hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0x1234, 0x4000, 64, 17, 0, src, dst)
        ip = hdr[:10] + struct.pack("!H", 0xFFFF - csum16(hdr)) + hdr[12:]
        ethertype = 0x0800
    c = udp_checksum(src, dst, udp, v6)
    if a.bad_csum:
        c = (c + 0x1111) & 0xFFFF or 0x1111
    udp = udp[:6] + struct.pack("!H", c) + udp[8:]
    frame = mac_bytes(a.dst_mac) + mac_bytes(a.src_mac) + struct.pack("!H", ethertype) + ip + udp
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((a.iface, 0))
    s.send(frame)
    return 0


def parse_udp(frame):
    """(v6, src, dst, sport, dport, payload, checksum_ok) of an Ethernet frame
    carrying UDP, or None."""
    if len(frame) < 14:
        return None
    et = struct.unpack("!H", frame[12:14])[0]
    off = 14
    while et == 0x8100 and len(frame) >= off + 4:
        et = struct.unpack("!H", frame[off + 2:off + 4])[0]
        off += 4
    if et == 0x0800:
        ihl = (frame[off] & 0xF) * 4
        if frame[off + 9] != 17:
            return None
        total = struct.unpack("!H", frame[off + 2:off + 4])[0]
        src, dst = frame[off + 12:off + 16], frame[off + 16:off + 20]
        udp = frame[off + ihl:off + total]
        v6 = False
    elif et == 0x86DD:
        if frame[off + 6] != 17:  # no extension headers in these tests
            return None
        plen = struct.unpack("!H", frame[off + 4:off + 6])[0]
        src, dst = frame[off + 8:off + 24], frame[off + 24:off + 40]
        udp = frame[off + 40:off + 40 + plen]
        v6 = True
    else:
        return None
    if len(udp) < 8:
        return None
    sport, dport, ulen, c = struct.unpack("!HHHH", udp[:8])
    if c == 0 and not v6:
        ok = True  # IPv4: no checksum
    else:
        if v6:
            pseudo = src + dst + struct.pack("!I3xB", len(udp), 17)
        else:
            pseudo = src + dst + struct.pack("!xBH", 17, len(udp))
        ok = csum16(pseudo + udp) == 0xFFFF
    fam = socket.AF_INET6 if v6 else socket.AF_INET
    return (v6, socket.inet_ntop(fam, src), socket.inet_ntop(fam, dst), sport, dport, udp[8:ulen], ok)


def cmd_capture(a):
    ETH_P_ALL = 3
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((a.iface, 0))
    got = []
    stop = [False]
    signal.signal(signal.SIGTERM, lambda *_: stop.__setitem__(0, True))
    mark_ready(a.out)
    deadline = time.monotonic() + a.seconds
    while not stop[0] and time.monotonic() < deadline:
        try:
            r, _, _ = select.select([s], [], [], 0.2)
        except InterruptedError:
            continue
        if not r:
            continue
        frame, meta = s.recvfrom(65535)
        if meta[2] == socket.PACKET_OUTGOING:
            continue
        u = parse_udp(frame)
        if u and u[4] in a.dport:
            got.append({"v6": u[0], "src": u[1], "dst": u[2], "sport": u[3], "dport": u[4],
                        "data": u[5].hex(), "csum_ok": u[6]})
    with open(a.out, "w") as f:
        json.dump(got, f)
    return 0


# --- icmp-out -----------------------------------------------------------------
def cmd_icmp_out(a):
    """ICMP messages sent by this namespace: IPv4 from /proc/net/snmp (the
    namespace has only lo and eth0, and nothing pings lo), ICMPv6 on eth0 from
    /proc/net/dev_snmp6/eth0."""
    v4 = 0
    with open("/proc/net/snmp") as f:
        rows = [l.split() for l in f if l.startswith("Icmp:")]
    v4 = int(rows[1][rows[0].index("OutMsgs")])
    v6 = 0
    with open("/proc/net/dev_snmp6/" + a.iface) as f:
        for l in f:
            k, v = l.split()
            if k == "Icmp6OutMsgs":
                v6 = int(v)
    print(v4, v6)
    return 0


# --- stats --------------------------------------------------------------------
# Fields of v1::Stats that are text; proto3 JSON writes every uint64 counter
# as a string too, and stats() reads those back as ints.
_TEXT_FIELDS = ("name", "kind", "state_hex")


def _counters_as_ints(v, key=None):
    if isinstance(v, dict):
        return {k: _counters_as_ints(x, k) for k, x in v.items()}
    if isinstance(v, list):
        return [_counters_as_ints(x) for x in v]
    if isinstance(v, str) and key not in _TEXT_FIELDS and v.isdigit():
        return int(v)
    return v


def cmd_stats(a):
    """Evaluate EXPR with `s` = the stats JSON (v1::Stats, docs/counters.md;
    counters as ints), and helpers port(name), ectx(name) (= handler(name)),
    drops(name) = that port's drop dict, total_drops(name), diad(name) and
    roce(name) = that transport counter, state_u64(name, i)."""
    with open(a.file) as f:
        s = _counters_as_ints(json.load(f))

    def port(name):
        for p in s["ports"]:
            if p["name"] == name:
                return p
        raise KeyError("no port %r in stats" % name)

    def ectx(name):
        for e in s["handlers"]:
            if e["name"] == name:
                return e
        raise KeyError("no handler %r in stats" % name)

    def drops(name):
        return port(name)["drops"]

    def total_drops(name):
        return sum(port(name)["drops"].values())

    def counter(transport, name):
        for c in s[transport]:
            if c["name"] == name:
                return c["value"]
        raise KeyError("no %s counter %r in stats" % (transport, name))

    def state_u64(name, i):
        b = bytes.fromhex(ectx(name)["state_hex"])
        return struct.unpack_from("<Q", b, 8 * i)[0]

    env = dict(s=s, port=port, ectx=ectx, handler=ectx, drops=drops, total_drops=total_drops,
               diad=lambda n: counter("diad", n), roce=lambda n: counter("roce", n),
               state_u64=state_u64, json=json)
    try:
        v = eval(a.expr, env)
    except Exception as e:  # a missing key is a failed check, not a crash
        print("stats: %s: %s: %s" % (a.expr, type(e).__name__, e), file=sys.stderr)
        return 1
    if isinstance(v, bool):
        if not v:
            print("stats: false: %s" % a.expr, file=sys.stderr)
        return 0 if v else 1
    print(json.dumps(v) if isinstance(v, (dict, list)) else v)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)

    p = sub.add_parser("udp-sink")
    p.add_argument("--bind", action="append", required=True)
    p.add_argument("--port", type=int, action="append", required=True)
    p.add_argument("--seconds", type=float, default=30)
    p.add_argument("--expect", type=int, default=0, help="stop after this many")
    p.add_argument("--out", required=True)
    p.set_defaults(fn=cmd_udp_sink)

    p = sub.add_parser("udp-send")
    p.add_argument("--dst", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--sport", type=int, default=0)
    p.add_argument("--count", type=int, default=10)
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--gap", type=float, default=0.01)
    p.add_argument("--out")
    p.set_defaults(fn=cmd_udp_send)

    p = sub.add_parser("udp-echo")
    p.add_argument("--dst", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--sport", type=int, default=40000)
    p.add_argument("--count", type=int, default=10)
    p.add_argument("--size", type=int, default=48)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=2.0)
    p.add_argument("--tries", type=int, default=3)
    p.add_argument("--deadline", type=float, default=30.0, help="for the whole run")
    p.set_defaults(fn=cmd_udp_echo)

    p = sub.add_parser("raw-udp")
    p.add_argument("--iface", default="eth0")
    p.add_argument("--src-mac", required=True)
    p.add_argument("--dst-mac", required=True)
    p.add_argument("--src", required=True)
    p.add_argument("--dst", required=True)
    p.add_argument("--sport", type=int, default=40001)
    p.add_argument("--dport", type=int, required=True)
    p.add_argument("--payload-hex", default="62616463686b73756d")
    p.add_argument("--bad-csum", action="store_true")
    p.set_defaults(fn=cmd_raw_udp)

    p = sub.add_parser("capture")
    p.add_argument("--iface", default="eth0")
    p.add_argument("--dport", type=int, action="append", required=True)
    p.add_argument("--seconds", type=float, default=30)
    p.add_argument("--out", required=True)
    p.set_defaults(fn=cmd_capture)

    p = sub.add_parser("icmp-out")
    p.add_argument("--iface", default="eth0")
    p.set_defaults(fn=cmd_icmp_out)

    p = sub.add_parser("stats")
    p.add_argument("file")
    p.add_argument("expr")
    p.set_defaults(fn=cmd_stats)

    a = ap.parse_args()
    sys.exit(a.fn(a))


if __name__ == "__main__":
    main()
