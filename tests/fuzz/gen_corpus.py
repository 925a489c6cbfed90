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


def ipv6(next_header, src, dst, payload, hop_limit=64, flow=0):
    return struct.pack('!IHBB', 0x60000000 | flow, len(payload), next_header,
                       hop_limit) + src + dst + payload


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


# diad/: DiAD frames (dataplane/diad/wire.h, docs/diad.md) from fd00::1 to
# fd00::2: every packet type, flag combination and a range of payload
# lengths, VLAN-tagged and with an extension header (the classifier's
# offsets then differ from 14/54), and one broken frame per parse error.
DIAD_PORT = 4792
FLAG_FIRST, FLAG_LAST, FLAG_ACK_NOW, FLAG_PROBE_REPLY = 1, 2, 4, 8
FLAG_SACK = 0x10
SACK_CAPABLE = 0x5341434b  # "SACK": a SELECTIVE endpoint's control packets
FLAG_ECN_ECHO = 0x20
ECN_ECHO_CAPABLE = 0x45434e4543484f31  # "ECNECHO1", in `address`


def diad_header(type_, flags=0, channel=0, seq=0, ack=0, txn=0, key=0,
                address=0, msg_length=0, msg_offset=0, payload_length=0,
                status=0, version=1, reserved=0, src_epoch=0x1234abcd,
                dst_epoch=0x5678ef01):
    return struct.pack('!BBHIIIIIIQIIHBB', version << 4 | type_, flags,
                       channel, src_epoch, dst_epoch, seq, ack, txn, key,
                       address, msg_length, msg_offset, payload_length,
                       status, reserved)


def diad_udp(header, payload, channel, pseudo=P6, sport=None):
    sport = 0xc000 + channel if sport is None else sport
    return udp(sport, DIAD_PORT, header + payload, pseudo)


def diad(type_, payload=b'', channel=0, tags=b'', ext=b'', **fields):
    fields.setdefault('payload_length', len(payload))
    fields.setdefault('msg_length', fields.get('msg_offset', 0) + len(payload))
    dgram = diad_udp(diad_header(type_, channel=channel, **fields), payload,
                     channel)
    next_header = 0 if ext else 17
    return (DST_MAC + SRC_MAC + tags + b'\x86\xdd' +
            ipv6(next_header, V6_A, V6_B, ext + dgram, flow=channel + 1))


HOP_BY_HOP_UDP = bytes([17, 0, 1, 4, 0, 0, 0, 0])  # next UDP, PadN

DIAD = {
    'read_request': diad(1, flags=FLAG_FIRST | FLAG_LAST, seq=7, ack=3,
                         txn=42, key=0x1001, address=0x10000,
                         msg_length=4096),
    'write_request_1': diad(2, b'x', flags=FLAG_FIRST | FLAG_LAST, seq=1,
                            txn=1, key=5),
    'write_request_first': diad(2, bytes(range(64)), flags=FLAG_FIRST,
                                channel=1, txn=9, key=5, msg_length=3000),
    'write_request_middle': diad(2, b'\x5a' * 1400, channel=1, seq=1,
                                 txn=9, key=5, msg_length=3000,
                                 msg_offset=64),
    'write_request_last': diad(2, b'\xa5' * 1536, flags=FLAG_LAST |
                               FLAG_ACK_NOW, channel=1, seq=2, txn=9, key=5,
                               msg_length=3000, msg_offset=1464),
    'read_response': diad(3, b'response' * 8, flags=FLAG_FIRST | FLAG_LAST,
                          channel=2, seq=0xffffffff, ack=8, txn=42),
    'write_response_ok': diad(4, flags=FLAG_FIRST | FLAG_LAST, txn=9,
                              ack=3),
    'write_response_bad_key': diad(4, flags=FLAG_FIRST | FLAG_LAST, txn=10,
                                   status=1),
    'stream_first': diad(5, b'stream!', flags=FLAG_FIRST, channel=1023,
                         key=77, msg_length=14),
    'stream_last': diad(5, b'stream!', flags=FLAG_LAST | FLAG_ACK_NOW,
                        channel=1023, seq=1, key=77, msg_length=14,
                        msg_offset=7),
    'stream_empty': diad(5, flags=FLAG_FIRST | FLAG_LAST, key=1),
    'ack': diad(6, ack=1000),
    'ack_probe_reply': diad(6, flags=FLAG_PROBE_REPLY | FLAG_ACK_NOW,
                            ack=0x80000000, channel=512),
    'nack': diad(7, ack=5, channel=3),
    'unack': diad(8, seq=17, channel=3, dst_epoch=0),
    'vlan_stream': diad(5, b'tagged', flags=FLAG_FIRST | FLAG_LAST,
                        tags=vlan(0x8100, 100), channel=4),
    'ext_header_ack': diad(6, ack=2, ext=HOP_BY_HOP_UDP),
    # SELECTIVE recovery: SACKs (bitmap payload) and an advertising UNACK.
    'sack': diad(6, b'\x30\x40', flags=FLAG_SACK, seq=0x140, ack=0x100,
                 key=SACK_CAPABLE),
    'sack_probe_reply': diad(6, b'\x20\x00\x01', flags=FLAG_SACK |
                             FLAG_PROBE_REPLY, seq=0x40, ack=0x100,
                             txn=0x120, key=SACK_CAPABLE, channel=6),
    'sack_long': diad(6, bytes([0x7f]) + b'\xff' * 127, flags=FLAG_SACK,
                      seq=1024, ack=0, key=SACK_CAPABLE),
    'unack_advert': diad(8, seq=0x120, ack=0x40, key=SACK_CAPABLE),
    # Congestion control: an ECN echo on an ACK that also SACKs.
    'ack_ecn_echo': diad(6, b'\x40', flags=FLAG_ECN_ECHO | FLAG_SACK,
                         seq=0x10, ack=0x20, key=SACK_CAPABLE,
                         address=ECN_ECHO_CAPABLE, channel=2),
}
DIAD['padded_ack'] = DIAD['ack'] + bytes(8)


def broken_diad(name, offset, value, fix_checksum=True):
    """Overwrites bytes of an untagged DiAD frame, then recomputes the UDP
    checksum so that only the intended check fails."""
    frame = bytearray(DIAD[name])
    frame[offset:offset + len(value)] = value
    if fix_checksum:
        seg = bytearray(frame[54:])
        seg[6:8] = b'\0\0'
        csum = checksum(P6(17, len(seg)) + bytes(seg)) or 0xffff
        frame[60:62] = struct.pack('!H', csum)
    return bytes(frame)


DIAD.update({
    'bad_truncated': DIAD['ack'][:100],
    'bad_checksum': broken_diad('ack', 61, b'\x00', fix_checksum=False),
    'bad_zero_checksum': broken_diad('ack', 60, b'\0\0', fix_checksum=False),
    'bad_version': broken_diad('ack', 62, b'\x26'),
    'bad_type': broken_diad('ack', 62, b'\x19'),
    'bad_flags': broken_diad('nack', 63, bytes([FLAG_FIRST])),
    'bad_reserved': broken_diad('ack', 109, b'\x01'),
    'bad_length': broken_diad('write_request_1', 107, b'\x02'),
    'bad_channel': broken_diad('nack', 54, b'\xc0\x04'),
})

# neighbor/: one byte choosing the reply buffer (0: the largest reply, n:
# n - 1 bytes), then an NS / NA / ARP frame. We are fd00::1 / 10.0.0.1 at
# 02:00:00:00:00:01 (tests/fuzz/neighbor_fuzz.cc), the peer fd00::2 /
# 10.0.0.2 at 02:00:00:00:00:02.
OUR_MAC = SRC_MAC
PEER_MAC = DST_MAC
V6_UNSPECIFIED = bytes(16)
V6_ALL_NODES = bytes.fromhex('ff020000000000000000000000000001')


def solicited_node(address):
    return bytes.fromhex('ff0200000000000000000001ff') + address[13:]


def icmpv6(src, dst, message):
    csum = checksum(pseudo6(src, dst)(58, len(message)) + message)
    return message[:2] + struct.pack('!H', csum) + message[4:]


def nd_frame(src_mac, dst_mac, src, dst, message, tags=b'', hop_limit=255):
    return (dst_mac + src_mac + tags + b'\x86\xdd' +
            ipv6(58, src, dst, icmpv6(src, dst, message), hop_limit))


def ns(src_mac, src, target, dst=None, option=True, **kw):
    dst = dst or solicited_node(target)
    message = (struct.pack('!BBHI', 135, 0, 0, 0) + target +
               (b'\x01\x01' + src_mac if option else b''))
    dst_mac = b'\x33\x33' + dst[12:] if dst[0] == 0xff else OUR_MAC
    return nd_frame(src_mac, dst_mac, src, dst, message, **kw)


def na(src_mac, dst_mac, src, dst, target, flags=0x60, option=True):
    message = (struct.pack('!BBHB3x', 136, 0, 0, flags) + target +
               (b'\x02\x01' + src_mac if option else b''))
    return nd_frame(src_mac, dst_mac, src, dst, message)


def arp(op, sha, spa, tha, tpa, tags=b''):
    dst_mac = b'\xff' * 6 if op == 1 else tha
    return (dst_mac + sha + tags + b'\x08\x06' +
            struct.pack('!HHBBH', 1, 0x0800, 6, 4, op) + sha + spa + tha +
            tpa)


NS_FOR_US = ns(PEER_MAC, V6_B, V6_A)
NEIGHBOR = {
    'ns_for_us': b'\x00' + NS_FOR_US,
    'ns_for_us_small_buffer': b'\x50' + NS_FOR_US,
    'ns_unicast_no_option': b'\x00' + ns(PEER_MAC, V6_B, V6_A, dst=V6_A,
                                          option=False),
    'ns_dad': b'\x00' + ns(PEER_MAC, V6_UNSPECIFIED, V6_A, option=False),
    'ns_vlan': b'\x00' + ns(PEER_MAC, V6_B, V6_A,
                             tags=vlan(0x88a8, 10) + vlan(0x8100, 20)),
    'ns_for_other': b'\x00' + ns(PEER_MAC, V6_B, V6_B),
    'ns_bad_hop_limit': b'\x00' + ns(PEER_MAC, V6_B, V6_A, hop_limit=64),
    'na_from_peer': b'\x00' + na(PEER_MAC, OUR_MAC, V6_B, V6_A, V6_B),
    'na_unsolicited': b'\x00' + na(PEER_MAC, b'\x33\x33\0\0\0\x01',
                                    V6_B, V6_ALL_NODES, V6_B, flags=0x20),
    'na_no_option': b'\x00' + na(PEER_MAC, OUR_MAC, V6_B, V6_A, V6_B,
                                  option=False),
    'arp_request_for_us': b'\x00' + arp(1, PEER_MAC, V4_B, bytes(6), V4_A),
    'arp_request_vlan': b'\x00' + arp(1, PEER_MAC, V4_B, bytes(6), V4_A,
                                       tags=vlan(0x8100, 7)),
    'arp_request_for_other': b'\x00' + arp(1, PEER_MAC, V4_B, bytes(6),
                                            V4_TEST1),
    'arp_reply_from_peer': b'\x00' + arp(2, PEER_MAC, V4_B, OUR_MAC, V4_A),
    'arp_probe': b'\x00' + arp(1, PEER_MAC, bytes(4), bytes(6), V4_A),
}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    for sub, items, ext in (('classifier', FRAMES, '.bin'),
                            ('prefix', PREFIXES, '.txt'),
                            ('probe', PROBES, '.bin'),
                            ('diad', DIAD, '.bin'),
                            ('neighbor', NEIGHBOR, '.bin')):
        out = os.path.join(here, 'corpus', sub)
        os.makedirs(out, exist_ok=True)
        for name, data in items.items():
            with open(os.path.join(out, name + ext), 'wb') as f:
                f.write(data)


if __name__ == '__main__':
    main()
