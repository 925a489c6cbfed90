#!/usr/bin/env python3
"""Golden RoCEv2 frames for tests/unit/roce/wire_test.cc, derived from the
InfiniBand spec (IBA vol. 1 ch. 9, annex A17) and tests/fixtures/roce/README.md
with the Python standard library only -- independently of dataplane/roce.
Run: python3 tests/unit/roce/roce_golden.py (prints name and hex per frame).
With --seeds DIR it also writes the fuzz seeds of tests/fuzz/corpus/roce:
real frames from tests/fixtures/roce (one per opcode and IP version), the
golden frames, and broken variants, one file each."""
import struct
import zlib


def csum(data):
    if len(data) % 2:
        data += b'\0'
    s = sum(struct.unpack('>%dH' % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return s


def bth(opcode, se, pad, pkey, dqp, ackreq, psn, fecn=0, becn=0):
    return struct.pack('>BBHB3sB3s', opcode, (se << 7) | (pad << 4), pkey,
                       (fecn << 7) | (becn << 6), dqp.to_bytes(3, 'big'),
                       ackreq << 7, psn.to_bytes(3, 'big'))


def icrc(ip_version, ip, udp, rest):
    ip = bytearray(ip)
    if ip_version == 4:
        for i in (1, 8, 10, 11):
            ip[i] = 0xff
    else:
        ip[0] |= 0x0f
        ip[1] = ip[2] = ip[3] = 0xff
        ip[7] = 0xff
    udp = bytearray(udp)
    udp[6] = udp[7] = 0xff
    rest = bytearray(rest)
    rest[4] = 0xff
    crc = zlib.crc32(b'\xff' * 8 + bytes(ip) + bytes(udp) + bytes(rest))
    return struct.pack('<I', crc)


def frame(ip_version, dst_mac, src_mac, src_ip, dst_ip, sport, transport,
          payload, tos=0, ttl=64, ident=0, flow=0, vlan=None, udp_csum=False):
    pad = (4 - len(payload) % 4) % 4
    body = transport + payload + b'\0' * pad
    udp_len = 8 + len(body) + 4
    eth = dst_mac + src_mac
    if vlan is not None:
        eth += struct.pack('>HH', 0x8100, vlan)
    if ip_version == 4:
        eth += b'\x08\x00'
        ip = struct.pack('>BBHHHBBH4s4s', 0x45, tos, 20 + udp_len, ident,
                         0x4000, ttl, 17, 0, src_ip, dst_ip)
        ip = ip[:10] + struct.pack('>H', 0xffff - csum(ip)) + ip[12:]
    else:
        eth += b'\x86\xdd'
        ip = struct.pack('>IHBB16s16s', (6 << 28) | (tos << 20) | flow,
                         udp_len, 17, ttl, src_ip, dst_ip)
    udp = struct.pack('>HHHH', sport, 4791, udp_len, 0)
    crc = icrc(ip_version, ip, udp, body)
    if udp_csum:  # RFC 8200 pseudo-header, over the datagram with its ICRC
        pseudo = src_ip + dst_ip + struct.pack('>IxxxB', udp_len, 17)
        c = 0xffff - csum(pseudo + udp + body + crc)
        udp = udp[:6] + struct.pack('>H', c or 0xffff)
    return eth + ip + udp + body + crc


def sport(lqpn, rqpn):  # rdma_calc_flow_label + rdma_flow_label_to_udp_sport
    v = lqpn * rqpn
    v ^= v >> 20
    v ^= v >> 40
    fl = v & 0xfffff
    return ((fl & 0x3fff) ^ ((fl & 0xfc000) >> 14)) | 0xc000


MAC1 = bytes.fromhex('020000000001')
MAC2 = bytes.fromhex('020000000002')
V6A = bytes.fromhex('fd000001000000000000000000000012')
V6B = bytes.fromhex('fd000001000000000000000000000011')
V4A = bytes([192, 0, 2, 11])
V4B = bytes([192, 0, 2, 12])

# RC RDMA WRITE ONLY with immediate over IPv6, real UDP checksum:
# BTH(SE, pad 3, P_Key 0xffff, QP 0x12, AckReq, PSN 0x123456),
# RETH(va 0x00007f0012345678, rkey 0x1234, len 5), ImmDt 0xdeadbeef, "hello".
write_imm = frame(6, MAC2, MAC1, V6A, V6B, sport(0x11, 0x12),
                  bth(0x0b, 1, 3, 0xffff, 0x12, 1, 0x123456) +
                  struct.pack('>QII', 0x00007f0012345678, 0x1234, 5) +
                  struct.pack('>I', 0xdeadbeef), b'hello',
                  tos=0x02, ttl=64, flow=0xabcde, udp_csum=True)
# RC ACKNOWLEDGE carrying NAK remote access error (syndrome 0x62), MSN 0x102,
# PSN 0xfffffe, over IPv4 (id 0x1234, DF, TOS 0x02 ECT(0)).
nak = frame(4, MAC1, MAC2, V4A, V4B, 0xc121,
            bth(0x11, 0, 0, 0xffff, 0x11, 0, 0xfffffe) +
            struct.pack('>I', (0x62 << 24) | 0x102), b'',
            tos=0x02, ttl=64, ident=0x1234)
# RC RDMA READ RESPONSE FIRST, AETH ACK (credits invalid 0x1f) MSN 7, PSN 9,
# 16 payload bytes 0..15, IPv4 in VLAN 100, TTL 255, BECN set.
read_first = frame(4, MAC2, MAC1, V4B, V4A, 0xc121,
                   bth(0x0d, 0, 0, 0xffff, 0x11, 0, 9, becn=1) +
                   struct.pack('>I', (0x1f << 24) | 7), bytes(range(16)),
                   tos=0, ttl=255, ident=0xbeef, vlan=100)



def fixture_frames(fixture_dir):
    """(name, frame) for the first UDP/4791 frame of each opcode and IP
    version in the captures (classic pcap, little-endian as captured)."""
    import glob
    import os
    seen = set()
    for path in sorted(glob.glob(os.path.join(fixture_dir, '*.pcap'))):
        data = open(path, 'rb').read()
        at = 24
        while at < len(data):
            incl = struct.unpack('<I', data[at + 8:at + 12])[0]
            f = data[at + 16:at + 16 + incl]
            at += 16 + incl
            et = f[12:14]
            if et == b'\x08\x00' and f[23] == 17:
                udp, version = 34, 4
            elif et == b'\x86\xdd' and f[20] == 17:
                udp, version = 54, 6
            else:
                continue
            if struct.unpack('>H', f[udp + 2:udp + 4])[0] != 4791:
                continue
            opcode = f[udp + 8]
            if (opcode, version) in seen:
                continue
            seen.add((opcode, version))
            yield 'real_v%d_op%02x' % (version, opcode), f


def write_seeds(out_dir, fixture_dir):
    import os
    seeds = dict(fixture_frames(fixture_dir))
    seeds.update({'golden_write_imm_v6_csum': write_imm, 'golden_nak_v4': nak,
                  'golden_read_first_vlan_v4': read_first})
    bad = {}
    base = bytearray(nak)
    bad['bad_icrc'] = bytes(base[:-1] + bytes([base[-1] ^ 1]))
    bad['bad_truncated'] = bytes(base[:50])
    b = bytearray(base); b[42] = 0x15; bad['bad_opcode'] = bytes(b)
    b = bytearray(base); b[43] |= 1; bad['bad_tver'] = bytes(b)
    b = bytearray(base); b[43] |= 0x10; bad['bad_pad_on_ack'] = bytes(b)
    b = bytearray(base); b[40:42] = b'\x12\x34'; bad['bad_udp_checksum'] = bytes(b)
    b = bytearray(base); b[38:40] = b'\x00\x20'; bad['bad_udp_length'] = bytes(b)
    b = bytearray(base); b[25] ^= 1; bad['bad_ip_checksum'] = bytes(b)
    b = bytearray(write_imm); b[14 + 40 + 6] ^= 0x80; bad['bad_v6_checksum'] = bytes(b)
    bad['padded_ack_v4'] = nak + b'\0' * 8
    seeds.update(bad)
    for name, f in sorted(seeds.items()):
        with open(os.path.join(out_dir, name + '.bin'), 'wb') as out:
            out.write(f)


if __name__ == '__main__':
    import os
    import sys
    for name, f in (('write_imm_v6', write_imm), ('nak_v4', nak),
                    ('read_first_vlan_v4', read_first)):
        print(name, f.hex())
    if len(sys.argv) == 3 and sys.argv[1] == '--seeds':
        here = os.path.dirname(os.path.abspath(__file__))
        write_seeds(sys.argv[2],
                    os.path.join(here, '..', '..', 'fixtures', 'roce'))
