#include "dataplane/roce/wire.h"

#include <cstring>

#include "dataplane/roce/icrc.h"

namespace spinnic::roce {
namespace {

inline uint16_t Load16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] << 8 | p[1]);
}
inline uint32_t Load24(const uint8_t* p) {
  return uint32_t{p[0]} << 16 | uint32_t{p[1]} << 8 | p[2];
}
inline uint32_t Load32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 |
         p[3];
}
inline uint64_t Load64(const uint8_t* p) {
  return uint64_t{Load32(p)} << 32 | Load32(p + 4);
}
inline void Store16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
inline void Store24(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 16);
  p[1] = static_cast<uint8_t>(v >> 8);
  p[2] = static_cast<uint8_t>(v);
}
inline void Store32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}
inline void Store64(uint8_t* p, uint64_t v) {
  Store32(p, static_cast<uint32_t>(v >> 32));
  Store32(p + 4, static_cast<uint32_t>(v));
}

// One's-complement sum of big-endian 16-bit words (RFC 1071), unfolded.
uint64_t SumWords(const uint8_t* p, uint32_t n) {
  uint64_t sum = 0;
  uint32_t i = 0;
  for (; i + 1 < n; i += 2) sum += Load16(p + i);
  if (i < n) sum += uint32_t{p[i]} << 8;
  return sum;
}
uint16_t Fold(uint64_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(sum);
}

// The UDP pseudo-header sum (RFC 768 / RFC 8200 8.1) for a datagram of
// `udp_length` bytes.
uint64_t PseudoHeaderSum(const uint8_t* ip, bool ipv4, uint32_t udp_length) {
  if (ipv4) {
    return SumWords(ip + 12, 8) + kIpProtoUdp + udp_length;
  }
  return SumWords(ip + 8, 32) + (udp_length >> 16) + (udp_length & 0xffff) +
         kIpProtoUdp;
}

// The checksum to put in a UDP header whose checksum field is zero.
uint16_t UdpChecksum(const uint8_t* ip, bool ipv4, const uint8_t* udp,
                     uint32_t udp_length) {
  const uint16_t sum = static_cast<uint16_t>(
      ~Fold(PseudoHeaderSum(ip, ipv4, udp_length) + SumWords(udp, udp_length)));
  return sum == 0 ? 0xffff : sum;  // 0 means "no checksum"
}

bool IsIpv6ExtensionHeader(uint8_t next_header) {
  switch (next_header) {
    case 0:    // hop-by-hop options
    case 43:   // routing
    case 44:   // fragment
    case 50:   // ESP
    case 51:   // AH
    case 60:   // destination options
    case 135:  // mobility
    case 139:  // HIP
    case 140:  // shim6
    case 253:  // experimental
    case 254:
      return true;
    default:
      return false;
  }
}

constexpr uint8_t kIpv6FragmentHeader = 44;

}  // namespace

// ----- Headers -----

void LoadBth(const uint8_t* in, Bth* out) {
  out->opcode = in[0];
  out->solicited = (in[1] & 0x80) != 0;
  out->migreq = (in[1] & 0x40) != 0;
  out->pad_count = (in[1] >> 4) & 0x3;
  out->tver = in[1] & 0xf;
  out->pkey = Load16(in + offsetof(BthWire, pkey));
  out->fecn = (in[4] & 0x80) != 0;
  out->becn = (in[4] & 0x40) != 0;
  out->reserved_6 = in[4] & 0x3f;
  out->dest_qp = Load24(in + offsetof(BthWire, dest_qp));
  out->ack_req = (in[8] & 0x80) != 0;
  out->reserved_7 = in[8] & 0x7f;
  out->psn = Load24(in + offsetof(BthWire, psn));
}

void StoreBth(const Bth& bth, uint8_t* out) {
  out[0] = bth.opcode;
  out[1] = static_cast<uint8_t>((bth.solicited ? 0x80 : 0) |
                                (bth.migreq ? 0x40 : 0) |
                                (bth.pad_count & 0x3) << 4 | (bth.tver & 0xf));
  Store16(out + offsetof(BthWire, pkey), bth.pkey);
  out[4] = static_cast<uint8_t>((bth.fecn ? 0x80 : 0) | (bth.becn ? 0x40 : 0) |
                                (bth.reserved_6 & 0x3f));
  Store24(out + offsetof(BthWire, dest_qp), bth.dest_qp);
  out[8] =
      static_cast<uint8_t>((bth.ack_req ? 0x80 : 0) | (bth.reserved_7 & 0x7f));
  Store24(out + offsetof(BthWire, psn), bth.psn);
}

void LoadReth(const uint8_t* in, Reth* out) {
  out->va = Load64(in + offsetof(RethWire, va));
  out->rkey = Load32(in + offsetof(RethWire, rkey));
  out->dma_length = Load32(in + offsetof(RethWire, dma_length));
}

void StoreReth(const Reth& reth, uint8_t* out) {
  Store64(out + offsetof(RethWire, va), reth.va);
  Store32(out + offsetof(RethWire, rkey), reth.rkey);
  Store32(out + offsetof(RethWire, dma_length), reth.dma_length);
}

void LoadAeth(const uint8_t* in, Aeth* out) {
  out->syndrome = in[0];
  out->msn = Load24(in + offsetof(AethWire, msn));
}

void StoreAeth(const Aeth& aeth, uint8_t* out) {
  out[0] = aeth.syndrome;
  Store24(out + offsetof(AethWire, msn), aeth.msn);
}

void LoadAtomicEth(const uint8_t* in, AtomicEth* out) {
  out->va = Load64(in + offsetof(AtomicEthWire, va));
  out->rkey = Load32(in + offsetof(AtomicEthWire, rkey));
  out->swap_add = Load64(in + offsetof(AtomicEthWire, swap_add));
  out->compare = Load64(in + offsetof(AtomicEthWire, compare));
}

void StoreAtomicEth(const AtomicEth& eth, uint8_t* out) {
  Store64(out + offsetof(AtomicEthWire, va), eth.va);
  Store32(out + offsetof(AtomicEthWire, rkey), eth.rkey);
  Store64(out + offsetof(AtomicEthWire, swap_add), eth.swap_add);
  Store64(out + offsetof(AtomicEthWire, compare), eth.compare);
}

void LoadAtomicAckEth(const uint8_t* in, AtomicAckEth* out) {
  out->original = Load64(in);
}

void StoreAtomicAckEth(const AtomicAckEth& eth, uint8_t* out) {
  Store64(out, eth.original);
}

void LoadDeth(const uint8_t* in, Deth* out) {
  out->qkey = Load32(in + offsetof(DethWire, qkey));
  out->reserved = in[offsetof(DethWire, reserved)];
  out->src_qp = Load24(in + offsetof(DethWire, src_qp));
}

void StoreDeth(const Deth& deth, uint8_t* out) {
  Store32(out + offsetof(DethWire, qkey), deth.qkey);
  out[offsetof(DethWire, reserved)] = deth.reserved;
  Store24(out + offsetof(DethWire, src_qp), deth.src_qp);
}

uint32_t LoadImmDt(const uint8_t* in) { return Load32(in); }
void StoreImmDt(uint32_t imm_data, uint8_t* out) { Store32(out, imm_data); }
uint32_t LoadIeth(const uint8_t* in) { return Load32(in); }
void StoreIeth(uint32_t rkey, uint8_t* out) { Store32(out, rkey); }

void LoadExtHeaders(const uint8_t* ext, uint8_t headers, ExtHeaders* out) {
  if (headers & kHasDeth) {
    LoadDeth(ext, &out->deth);
    ext += kDethBytes;
  }
  if (headers & kHasReth) {
    LoadReth(ext, &out->reth);
    ext += kRethBytes;
  }
  if (headers & kHasAtomicEth) {
    LoadAtomicEth(ext, &out->atomic_eth);
    ext += kAtomicEthBytes;
  }
  if (headers & kHasAeth) {
    LoadAeth(ext, &out->aeth);
    ext += kAethBytes;
  }
  if (headers & kHasAtomicAckEth) {
    LoadAtomicAckEth(ext, &out->atomic_ack_eth);
    ext += kAtomicAckEthBytes;
  }
  if (headers & kHasImmDt) {
    out->imm_data = LoadImmDt(ext);
    ext += kImmDtBytes;
  }
  if (headers & kHasIeth) out->ieth = LoadIeth(ext);
}

void StoreExtHeaders(const ExtHeaders& in, uint8_t headers, uint8_t* ext) {
  if (headers & kHasDeth) {
    StoreDeth(in.deth, ext);
    ext += kDethBytes;
  }
  if (headers & kHasReth) {
    StoreReth(in.reth, ext);
    ext += kRethBytes;
  }
  if (headers & kHasAtomicEth) {
    StoreAtomicEth(in.atomic_eth, ext);
    ext += kAtomicEthBytes;
  }
  if (headers & kHasAeth) {
    StoreAeth(in.aeth, ext);
    ext += kAethBytes;
  }
  if (headers & kHasAtomicAckEth) {
    StoreAtomicAckEth(in.atomic_ack_eth, ext);
    ext += kAtomicAckEthBytes;
  }
  if (headers & kHasImmDt) {
    StoreImmDt(in.imm_data, ext);
    ext += kImmDtBytes;
  }
  if (headers & kHasIeth) StoreIeth(in.ieth, ext);
}

// ----- Receive -----

const char* ParseErrorName(ParseError error) {
  switch (error) {
    case ParseError::kNone:
      return "none";
    case ParseError::kBadOffsets:
      return "bad_offsets";
    case ParseError::kTruncated:
      return "truncated";
    case ParseError::kNotIp:
      return "not_ip";
    case ParseError::kIpOptions:
      return "ip_options";
    case ParseError::kIpFragment:
      return "ip_fragment";
    case ParseError::kIpChecksum:
      return "ip_checksum";
    case ParseError::kNotUdp:
      return "not_udp";
    case ParseError::kIpLength:
      return "ip_length";
    case ParseError::kUdpLength:
      return "udp_length";
    case ParseError::kNotRocePort:
      return "not_roce_port";
    case ParseError::kUdpChecksum:
      return "udp_checksum";
    case ParseError::kTooShort:
      return "too_short";
    case ParseError::kBadTver:
      return "bad_tver";
    case ParseError::kBadOpcode:
      return "bad_opcode";
    case ParseError::kUnexpectedPad:
      return "unexpected_pad";
    case ParseError::kUnexpectedPayload:
      return "unexpected_payload";
    case ParseError::kUnalignedPayload:
      return "unaligned_payload";
    case ParseError::kPadTooLong:
      return "pad_too_long";
    case ParseError::kBadIcrc:
      return "bad_icrc";
    case ParseError::kCount:
      break;
  }
  return "unknown";
}

ParseError ParseFrame(uint8_t* frame, uint32_t length, uint32_t ip_offset,
                      uint32_t udp_offset, Packet* out) {
  if (ip_offset < kIcrcLrhBytes) return ParseError::kBadOffsets;
  if (ip_offset >= length) return ParseError::kTruncated;
  const uint8_t* ip = frame + ip_offset;
  const uint8_t version = ip[0] >> 4;
  uint32_t ip_end = 0;  // one past the IP datagram
  if (version == 4) {
    if (uint64_t{ip_offset} + kIpv4Bytes > length) {
      return ParseError::kTruncated;
    }
    if ((ip[0] & 0xf) != kIpv4Bytes / 4) return ParseError::kIpOptions;
    if (udp_offset != ip_offset + kIpv4Bytes) return ParseError::kBadOffsets;
    if ((Load16(ip + 6) & 0x3fff) != 0) return ParseError::kIpFragment;
    if (Fold(SumWords(ip, kIpv4Bytes)) != 0xffff) {
      return ParseError::kIpChecksum;
    }
    if (ip[9] != kIpProtoUdp) return ParseError::kNotUdp;
    const uint32_t total = Load16(ip + 2);
    if (total < kIpv4Bytes || uint64_t{ip_offset} + total > length) {
      return ParseError::kIpLength;
    }
    ip_end = ip_offset + total;
  } else if (version == 6) {
    if (uint64_t{ip_offset} + kIpv6Bytes > length) {
      return ParseError::kTruncated;
    }
    const uint8_t next_header = ip[6];
    if (next_header == kIpv6FragmentHeader) return ParseError::kIpFragment;
    if (IsIpv6ExtensionHeader(next_header)) return ParseError::kIpOptions;
    if (next_header != kIpProtoUdp) return ParseError::kNotUdp;
    if (udp_offset != ip_offset + kIpv6Bytes) return ParseError::kBadOffsets;
    const uint64_t end = uint64_t{udp_offset} + Load16(ip + 4);
    if (end > length) return ParseError::kIpLength;
    ip_end = static_cast<uint32_t>(end);
  } else {
    return ParseError::kNotIp;
  }

  // The IP length is within the frame, so the UDP header's bytes are too
  // once the UDP length is at least 8 and matches the IP payload.
  const uint32_t udp_length_in_ip = ip_end - udp_offset;
  if (udp_length_in_ip < kUdpBytes) return ParseError::kUdpLength;
  const uint8_t* udp = frame + udp_offset;
  if (Load16(udp + 4) != udp_length_in_ip) return ParseError::kUdpLength;
  if (Load16(udp + 2) != kRoceUdpPort) return ParseError::kNotRocePort;
  const uint16_t udp_checksum = Load16(udp + 6);
  if (udp_checksum != 0 &&
      Fold(PseudoHeaderSum(ip, version == 4, udp_length_in_ip) +
           SumWords(udp, udp_length_in_ip)) != 0xffff) {
    return ParseError::kUdpChecksum;
  }

  const uint32_t udp_payload = udp_length_in_ip - kUdpBytes;
  if (udp_payload < kBthBytes + kIcrcBytes) return ParseError::kTooShort;
  const uint32_t bth_offset = udp_offset + kUdpBytes;
  Bth bth;
  LoadBth(frame + bth_offset, &bth);
  if (bth.tver != 0) return ParseError::kBadTver;
  const OpcodeInfo& info = GetOpcodeInfo(bth.opcode);
  if (!info.valid()) return ParseError::kBadOpcode;
  if (udp_payload < kBthBytes + info.ext_bytes + kIcrcBytes) {
    return ParseError::kTooShort;
  }
  // Payload and pad together.
  const uint32_t rest = udp_payload - kBthBytes - info.ext_bytes - kIcrcBytes;
  if (!info.has(kHasPayload)) {
    if (bth.pad_count != 0) return ParseError::kUnexpectedPad;
    if (rest != 0) return ParseError::kUnexpectedPayload;
  }
  if (rest % 4 != 0) return ParseError::kUnalignedPayload;
  if (bth.pad_count > rest) return ParseError::kPadTooLong;

  const uint32_t ext_offset = bth_offset + kBthBytes;
  const uint32_t payload_offset = ext_offset + info.ext_bytes;
  const uint32_t icrc_offset = ip_end - kIcrcBytes;
  if (!VerifyIcrc(frame, length,
                  IcrcSpan{ip_offset, udp_offset, icrc_offset})) {
    return ParseError::kBadIcrc;
  }

  out->ip_version = version;
  out->ip_offset = ip_offset;
  out->udp_offset = udp_offset;
  out->bth_offset = bth_offset;
  out->ext_offset = ext_offset;
  out->payload_offset = payload_offset;
  out->pad_count = bth.pad_count;
  out->payload_length = rest - bth.pad_count;
  out->icrc_offset = icrc_offset;
  if (version == 4) {
    out->src_ip = Ipv4Mapped(Load32(ip + 12));
    out->dst_ip = Ipv4Mapped(Load32(ip + 16));
    out->traffic_class = ip[1];
    out->hop_limit = ip[8];
    out->flow_label = 0;
  } else {
    std::memcpy(out->src_ip.data(), ip + 8, 16);
    std::memcpy(out->dst_ip.data(), ip + 24, 16);
    out->traffic_class = static_cast<uint8_t>((ip[0] & 0xf) << 4 | ip[1] >> 4);
    out->hop_limit = ip[7];
    out->flow_label = Load32(ip) & 0xfffff;
  }
  out->src_port = Load16(udp);
  out->dst_port = kRoceUdpPort;
  out->udp_checksum = udp_checksum;
  out->bth = bth;
  LoadExtHeaders(frame + ext_offset, info.headers, &out->ext);
  out->info = &info;
  return ParseError::kNone;
}

// ----- Transmit -----

std::array<uint8_t, 16> Ipv4Mapped(uint32_t ipv4) {
  std::array<uint8_t, 16> out{};
  out[10] = 0xff;
  out[11] = 0xff;
  Store32(out.data() + 12, ipv4);
  return out;
}

namespace {

uint32_t L2Bytes(bool vlan) {
  return kEthernetBytes + (vlan ? kVlanTagBytes : 0);
}

uint32_t IpHeaderBytes(uint8_t ip_version) {
  return ip_version == 4 ? kIpv4Bytes : ip_version == 6 ? kIpv6Bytes : 0;
}

}  // namespace

uint32_t HeaderBytes(uint8_t ip_version, uint8_t opcode, bool vlan) {
  const OpcodeInfo& info = GetOpcodeInfo(opcode);
  const uint32_t ip_bytes = IpHeaderBytes(ip_version);
  if (!info.valid() || ip_bytes == 0) return 0;
  return L2Bytes(vlan) + ip_bytes + kUdpBytes + kBthBytes + info.ext_bytes;
}

uint32_t FrameBytes(uint8_t ip_version, uint8_t opcode, uint32_t payload_length,
                    bool vlan) {
  const uint32_t headers = HeaderBytes(ip_version, opcode, vlan);
  if (headers == 0) return 0;
  return headers + payload_length + TrailerBytes(payload_length);
}

uint32_t WriteHeaders(const FrameParams& params, const Bth& bth,
                      const ExtHeaders& ext, uint32_t payload_length,
                      uint8_t* frame, uint32_t capacity) {
  const uint32_t header_bytes =
      HeaderBytes(params.ip_version, bth.opcode, params.vlan);
  if (header_bytes == 0) return 0;
  const OpcodeInfo& info = GetOpcodeInfo(bth.opcode);
  if (payload_length != 0 && !info.has(kHasPayload)) return 0;
  const uint32_t l2 = L2Bytes(params.vlan);
  const uint32_t ip_bytes = IpHeaderBytes(params.ip_version);
  // The UDP datagram: UDP header to ICRC.
  const uint64_t udp_length = uint64_t{header_bytes} - l2 - ip_bytes +
                              payload_length + TrailerBytes(payload_length);
  const uint64_t ip_length =
      params.ip_version == 4 ? udp_length + ip_bytes : udp_length;
  if (ip_length > 0xffff || l2 + ip_bytes + udp_length > capacity) return 0;

  uint8_t* p = frame;
  std::memcpy(p, params.dst_mac.data(), 6);
  std::memcpy(p + 6, params.src_mac.data(), 6);
  p += 12;
  if (params.vlan) {
    Store16(p, kEtherTypeVlan);
    Store16(p + 2, params.vlan_tci);
    p += kVlanTagBytes;
  }
  Store16(p, params.ip_version == 4 ? kEtherTypeIpv4 : kEtherTypeIpv6);
  p += 2;

  uint8_t* ip = p;
  if (params.ip_version == 4) {
    ip[0] = 0x45;
    ip[1] = params.traffic_class;
    Store16(ip + 2, static_cast<uint16_t>(ip_length));
    Store16(ip + 4, params.ipv4_id);
    Store16(ip + 6, params.ipv4_dont_fragment ? 0x4000 : 0);
    ip[8] = params.hop_limit;
    ip[9] = kIpProtoUdp;
    Store16(ip + 10, 0);
    std::memcpy(ip + 12, params.src_ip.data() + 12, 4);
    std::memcpy(ip + 16, params.dst_ip.data() + 12, 4);
    Store16(ip + 10, static_cast<uint16_t>(~Fold(SumWords(ip, kIpv4Bytes))));
  } else {
    Store32(ip, 6u << 28 | uint32_t{params.traffic_class} << 20 |
                    (params.flow_label & 0xfffff));
    Store16(ip + 4, static_cast<uint16_t>(ip_length));
    ip[6] = kIpProtoUdp;
    ip[7] = params.hop_limit;
    std::memcpy(ip + 8, params.src_ip.data(), 16);
    std::memcpy(ip + 24, params.dst_ip.data(), 16);
  }
  uint8_t* udp = ip + ip_bytes;
  Store16(udp, params.udp_src_port);
  Store16(udp + 2, kRoceUdpPort);
  Store16(udp + 4, static_cast<uint16_t>(udp_length));
  Store16(udp + 6, 0);

  Bth written = bth;
  written.pad_count = PadCount(payload_length);
  StoreBth(written, udp + kUdpBytes);
  StoreExtHeaders(ext, info.headers, udp + kUdpBytes + kBthBytes);
  return header_bytes;
}

uint32_t FinishFrame(const FrameParams& params, uint8_t* frame,
                     uint32_t capacity) {
  const uint32_t ip_offset = L2Bytes(params.vlan);
  const uint32_t ip_bytes = IpHeaderBytes(params.ip_version);
  if (ip_bytes == 0 || capacity < ip_offset + ip_bytes + kUdpBytes) return 0;
  const uint32_t udp_offset = ip_offset + ip_bytes;
  uint8_t* ip = frame + ip_offset;
  uint8_t* udp = frame + udp_offset;
  const uint32_t udp_length = Load16(udp + 4);
  const uint64_t frame_length = uint64_t{udp_offset} + udp_length;
  if (udp_length < kUdpBytes + kBthBytes + kIcrcBytes ||
      frame_length > capacity) {
    return 0;
  }
  Bth bth;
  LoadBth(udp + kUdpBytes, &bth);
  const OpcodeInfo& info = GetOpcodeInfo(bth.opcode);
  const uint32_t fixed = kUdpBytes + kBthBytes + info.ext_bytes + kIcrcBytes;
  if (!info.valid() || udp_length < fixed + bth.pad_count) return 0;

  const uint32_t icrc_offset = static_cast<uint32_t>(frame_length) - kIcrcBytes;
  std::memset(frame + icrc_offset - bth.pad_count, 0, bth.pad_count);
  Store16(udp + 6, 0);
  if (!WriteIcrc(frame, static_cast<uint32_t>(frame_length),
                 IcrcSpan{ip_offset, udp_offset, icrc_offset})) {
    return 0;
  }
  if (params.ip_version == 6 && params.ipv6_udp_checksum) {
    Store16(udp + 6, UdpChecksum(ip, false, udp, udp_length));
  }
  return static_cast<uint32_t>(frame_length);
}

uint32_t BuildFrame(const FrameParams& params, const Bth& bth,
                    const ExtHeaders& ext, uint32_t payload_length,
                    uint8_t* frame, uint32_t capacity) {
  if (WriteHeaders(params, bth, ext, payload_length, frame, capacity) == 0) {
    return 0;
  }
  return FinishFrame(params, frame, capacity);
}

}  // namespace spinnic::roce
