#!/usr/bin/env python3
"""Writes the fuzz seed corpora in tests/fuzz/corpus/.

classifier/: raw Ethernet frames, one per file: a valid frame of each kind
the classifier knows (the valid ones are byte for byte the arrays in
tests/unit/classifier/golden_frames.h) and a few broken ones. prefix/:
match-rule prefix texts, valid and not. Checksums are correct so that the
frames also open cleanly in Wireshark/tcpdump. The output is checked in, so
the fuzz regression tests need no Python; rerun this after changing a frame.
"""
import os
import struct

DST_MAC = bytes.fromhex('020000000002')
SRC_MAC = bytes.fromhex('020000000001')
V4_A = bytes([10, 0, 0, 1])
V4_B = bytes([10, 0, 0, 2])
V4_TEST1 = bytes([192, 0, 2, 1])
V4_TEST2 = bytes([198, 51, 100, 2])
V6_A = bytes.fromhex('fd000000000000000000000000000001')
V6_B = bytes.fromhex('fd000000000000000000000000000002')


def checksum(data):
    if len(data) % 2:
        data += b'\0'
    total = sum(struct.unpack('!%dH' % (len(data) // 2), data))
    while total >> 16:
        total = (total & 0xffff) + (total >> 16)
    return ~total & 0xffff


def eth(ethertype, dst=DST_MAC):
    return dst + SRC_MAC + struct.pack('!H', ethertype)


def pseudo4(src, dst):
    return lambda proto, length: src + dst + struct.pack('!BBH', 0, proto,
                                                         length)


def pseudo6(src, dst):
    return lambda proto, length: src + dst + struct.pack('!IxxxB', length,
                                                         proto)


def ipv4(proto, src, dst, payload, options=b'', frag=0):
    ihl = 5 + len(options) // 4
    header = struct.pack('!BBHHHBBH4s4s', 0x40 | ihl, 0,
                         ihl * 4 + len(payload), 1, frag, 64, proto, 0, src,
                         dst) + options
    header = header[:10] + struct.pack('!H', checksum(header)) + header[12:]
    return header + payload


def ipv6(next_header, src, dst, payload):
    return struct.pack('!IHBB', 0x60000000, len(payload), next_header,
                       64) + src + dst + payload


def udp(sport, dport, data, pseudo):
    seg = struct.pack('!HHHH', sport, dport, 8 + len(data), 0) + data
    csum = checksum(pseudo(17, len(seg)) + seg) or 0xffff
    return seg[:6] + struct.pack('!H', csum) + seg[8:]


def tcp(sport, dport, options, data, pseudo, flags=0x02):
    doff = 5 + len(options) // 4
    seg = struct.pack('!HHIIBBHHH', sport, dport, 1000, 0, doff << 4, flags,
                      65535, 0, 0) + options + data
    csum = checksum(pseudo(6, len(seg)) + seg)
    return seg[:16] + struct.pack('!H', csum) + seg[18:]


def icmp_echo(type_, ident, seq, data, pseudo=None):
    msg = struct.pack('!BBHHH', type_, 0, 0, ident, seq) + data
    covered = msg if pseudo is None else pseudo(58, len(msg)) + msg
    return msg[:2] + struct.pack('!H', checksum(covered)) + msg[4:]


def vlan(tpid, vid):
    return struct.pack('!HH', tpid, vid)


P4 = pseudo4(V4_A, V4_B)
P4_TEST = pseudo4(V4_TEST1, V4_TEST2)
P6 = pseudo6(V6_A, V6_B)
HOP_BY_HOP = bytes([43, 0, 1, 4, 0, 0, 0, 0])  # next Routing, PadN
ROUTING = bytes([60, 2, 2, 0, 0, 0, 0, 0]) + V6_B  # type 2, segleft 0
DEST_OPTS = bytes([6, 0, 1, 4, 0, 0, 0, 0])  # next TCP, PadN

FRAMES = {
    'ipv4_udp': eth(0x0800) + ipv4(17, V4_A, V4_B,
                                   udp(1234, 4791, b'abcd', P4)),
    'ipv4_tcp': eth(0x0800) + ipv4(
        6, V4_TEST1, V4_TEST2,
        tcp(40000, 80, bytes.fromhex('020405b4'), b'', P4_TEST)),
    'ipv4_icmp': eth(0x0800) + ipv4(1, V4_A, V4_B,
                                    icmp_echo(8, 0x1234, 1, b'pingdata')),
    'ipv4_options': eth(0x0800) + ipv4(17, V4_A, V4_B,
                                       udp(53, 53, b'q', P4),
                                       options=bytes.fromhex('94040000')),
    'ipv4_frag_later': eth(0x0800) + ipv4(17, V4_A, V4_B, b'\x11' * 16,
                                          frag=185),
    'ipv4_frag_first': eth(0x0800) + ipv4(
        17, V4_A, V4_B, udp(1234, 4791, b'firstfrg', P4), frag=0x2000),
    'ipv6_udp': eth(0x86dd) + ipv6(17, V6_A, V6_B,
                                   udp(5000, 4791, b'abcd', P6)),
    'ipv6_ext_tcp': eth(0x86dd) + ipv6(
        0, V6_A, V6_B, HOP_BY_HOP + ROUTING + DEST_OPTS +
        tcp(40001, 443, b'', b'hi', P6, flags=0x18)),
    'ipv6_frag_first': eth(0x86dd) + ipv6(
        44, V6_A, V6_B,
        bytes([17, 0, 0, 1, 0xde, 0xad, 0xbe, 0xef]) +
        udp(5001, 4791, b'frag', P6)),
    'ipv6_frag_later': eth(0x86dd) + ipv6(
        44, V6_A, V6_B,
        bytes([17, 0, 0x05, 0xc8, 0xde, 0xad, 0xbe, 0xef]) + b'\x22' * 16),
    'ipv6_icmpv6': eth(0x86dd) + ipv6(58, V6_A, V6_B,
                                      icmp_echo(128, 0x42, 7, b'ping', P6)),
    'ipv6_esp': eth(0x86dd) + ipv6(
        50, V6_A, V6_B, bytes.fromhex('0000100100000001') + b'\x33' * 16),
    'vlan_ipv4_udp': DST_MAC + SRC_MAC + vlan(0x8100, 100) +
    struct.pack('!H', 0x0800) + ipv4(17, V4_A, V4_B,
                                     udp(1234, 4791, b'abcd', P4)),
    'qinq_ipv6_udp': DST_MAC + SRC_MAC + vlan(0x88a8, 10) +
    vlan(0x8100, 20) + struct.pack('!H', 0x86dd) +
    ipv6(17, V6_A, V6_B, udp(5000, 4791, b'abcd', P6)),
    'triple_tag': DST_MAC + SRC_MAC + vlan(0x88a8, 10) + vlan(0x8100, 20) +
    vlan(0x8100, 30) + struct.pack('!H', 0x0800) +
    ipv4(17, V4_A, V4_B, udp(1, 2, b'', P4)),
    'arp': eth(0x0806, dst=b'\xff' * 6) +
    bytes.fromhex('0001080006040001') + SRC_MAC + V4_A + bytes(6) + V4_B,
    'unknown_ethertype': eth(0x88b5) + b'experimental',
}
FRAMES['ipv4_udp_padded'] = FRAMES['ipv4_udp'].ljust(60, b'\0')


def broken(name, offset, value):
    frame = bytearray(FRAMES[name])
    frame[offset:offset + len(value)] = value
    return bytes(frame)


FRAMES.update({
    'bad_ipv4_total_len': broken('ipv4_udp', 16, struct.pack('!H', 200)),
    'bad_ipv4_ihl': broken('ipv4_udp', 14, b'\x44'),
    'bad_tcp_truncated': eth(0x0800) + ipv4(
        6, V4_TEST1, V4_TEST2, tcp(40000, 80, b'', b'', P4_TEST)[:12]),
    'bad_ipv6_payload_len': broken('ipv6_udp', 18, struct.pack('!H', 100)),
    'runt': FRAMES['ipv4_udp'][:13],
})

PREFIXES = {
    'ipv4_net': b'10.0.0.0/8',
    'ipv4_host': b'192.0.2.1',
    'ipv4_any': b'0.0.0.0/0',
    'ipv4_slash32': b'198.51.100.7/32',
    'ipv6_net': b'fd00::/64',
    'ipv6_host': b'fd00::1',
    'ipv6_any': b'::/0',
    'ipv6_full': b'2001:db8:1:2:3:4:5:6/128',
    'ipv6_dotted_tail': b'64:ff9b::192.0.2.0/120',
    'bad_host_bits': b'10.0.0.1/8',
    'bad_len_v4': b'10.0.0.0/33',
    'bad_len_v6': b'fd00::/129',
    'bad_mapped': b'::ffff:10.0.0.0/104',
    'bad_garbage': b'10.0.0.0/8/x\x00\xff',
}

# probe/: spinnic-gen probe frames as they come back from a device under
# test (bench/linerate/gen/probe.h), each prefixed by the one byte the probe
# target uses to choose the contiguous head's length (0: the minimum).
PROBE_SRC = bytes([198, 18, 0, 1])
PROBE_DST = bytes([198, 19, 0, 1])


def probe(stream, seq, tsc, pad=0):
    return b'SPNG' + struct.pack('!HQQ', stream, seq, tsc) + bytes(pad)


def probe_frame(payload, options=b'', frag=0, tags=b''):
    dgram = udp(10000, 9, payload, pseudo4(PROBE_SRC, PROBE_DST))
    return (DST_MAC + SRC_MAC + tags + b'\x08\x00' +
            ipv4(17, PROBE_SRC, PROBE_DST, dgram, options, frag))


PROBE_64 = probe_frame(probe(0, 1, 123456789))
PROBES = {
    'probe_64': b'\x00' + PROBE_64,
    'probe_1514': b'\x00' + probe_frame(probe(3, 2**40, 2**63, 1472 - 22)),
    'probe_head_only': b'\x10' + probe_frame(probe(1, 5, 6, 500)),
    'probe_vlan_qinq': b'\x00' + probe_frame(
        probe(2, 9, 10), tags=vlan(0x88a8, 100) + vlan(0x8100, 200)),
    'probe_ip_options': b'\x00' + probe_frame(probe(0, 3, 4),
                                               options=bytes([1, 1, 1, 0])),
    'bad_fragment': b'\x00' + probe_frame(probe(0, 1, 2), frag=0x2000),
    'bad_magic': b'\x00' + probe_frame(b'SPNX' + bytes(18)),
    'bad_truncated': b'\x00' + PROBE_64[:50],
}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    for sub, items, ext in (('classifier', FRAMES, '.bin'),
                            ('prefix', PREFIXES, '.txt'),
                            ('probe', PROBES, '.bin')):
        out = os.path.join(here, 'corpus', sub)
        os.makedirs(out, exist_ok=True)
        for name, data in items.items():
            with open(os.path.join(out, name + ext), 'wb') as f:
                f.write(data)


if __name__ == '__main__':
    main()
