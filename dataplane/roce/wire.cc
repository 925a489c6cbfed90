#include "dataplane/roce/wire.h"

#include <cstring>

#include "dataplane/common/byte_order.h"
#include "dataplane/common/checksum.h"
#include "dataplane/roce/icrc.h"

namespace spinnic::roce {
namespace {

// The UDP pseudo-header (RFC 768 / RFC 8200 8.1) of a datagram of
// `udp_length` bytes, as a checksum accumulator.
uint64_t PseudoHeaderSum(const uint8_t* ip, bool ipv4, uint32_t udp_length) {
  uint64_t sum =
      ipv4 ? checksum::Add(0, ip + 12, 8) : checksum::Add(0, ip + 8, 32);
  sum = checksum::AddBe32(sum, udp_length);
  return checksum::AddBe32(sum, kIpProtoUdp);
}

// The checksum to put in a UDP header whose checksum field is zero.
uint16_t UdpChecksum(const uint8_t* ip, bool ipv4, const uint8_t* udp,
                     uint32_t udp_length) {
  const uint16_t sum = static_cast<uint16_t>(~checksum::Fold(
      checksum::Add(PseudoHeaderSum(ip, ipv4, udp_length), udp, udp_length)));
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
  out->pkey = LoadBe16(in + offsetof(BthWire, pkey));
  out->fecn = (in[4] & 0x80) != 0;
  out->becn = (in[4] & 0x40) != 0;
  out->reserved_6 = in[4] & 0x3f;
  out->dest_qp = LoadBe24(in + offsetof(BthWire, dest_qp));
  out->ack_req = (in[8] & 0x80) != 0;
  out->reserved_7 = in[8] & 0x7f;
  out->psn = LoadBe24(in + offsetof(BthWire, psn));
}

void StoreBth(const Bth& bth, uint8_t* out) {
  out[0] = bth.opcode;
  out[1] = static_cast<uint8_t>((bth.solicited ? 0x80 : 0) |
                                (bth.migreq ? 0x40 : 0) |
                                (bth.pad_count & 0x3) << 4 | (bth.tver & 0xf));
  StoreBe16(out + offsetof(BthWire, pkey), bth.pkey);
  out[4] = static_cast<uint8_t>((bth.fecn ? 0x80 : 0) | (bth.becn ? 0x40 : 0) |
                                (bth.reserved_6 & 0x3f));
  StoreBe24(out + offsetof(BthWire, dest_qp), bth.dest_qp);
  out[8] =
      static_cast<uint8_t>((bth.ack_req ? 0x80 : 0) | (bth.reserved_7 & 0x7f));
  StoreBe24(out + offsetof(BthWire, psn), bth.psn);
}

void LoadReth(const uint8_t* in, Reth* out) {
  out->va = LoadBe64(in + offsetof(RethWire, va));
  out->rkey = LoadBe32(in + offsetof(RethWire, rkey));
  out->dma_length = LoadBe32(in + offsetof(RethWire, dma_length));
}

void StoreReth(const Reth& reth, uint8_t* out) {
  StoreBe64(out + offsetof(RethWire, va), reth.va);
  StoreBe32(out + offsetof(RethWire, rkey), reth.rkey);
  StoreBe32(out + offsetof(RethWire, dma_length), reth.dma_length);
}

void LoadAeth(const uint8_t* in, Aeth* out) {
  out->syndrome = in[0];
  out->msn = LoadBe24(in + offsetof(AethWire, msn));
}

void StoreAeth(const Aeth& aeth, uint8_t* out) {
  out[0] = aeth.syndrome;
  StoreBe24(out + offsetof(AethWire, msn), aeth.msn);
}

void LoadAtomicEth(const uint8_t* in, AtomicEth* out) {
  out->va = LoadBe64(in + offsetof(AtomicEthWire, va));
  out->rkey = LoadBe32(in + offsetof(AtomicEthWire, rkey));
  out->swap_add = LoadBe64(in + offsetof(AtomicEthWire, swap_add));
  out->compare = LoadBe64(in + offsetof(AtomicEthWire, compare));
}

void StoreAtomicEth(const AtomicEth& eth, uint8_t* out) {
  StoreBe64(out + offsetof(AtomicEthWire, va), eth.va);
  StoreBe32(out + offsetof(AtomicEthWire, rkey), eth.rkey);
  StoreBe64(out + offsetof(AtomicEthWire, swap_add), eth.swap_add);
  StoreBe64(out + offsetof(AtomicEthWire, compare), eth.compare);
}

void LoadAtomicAckEth(const uint8_t* in, AtomicAckEth* out) {
  out->original = LoadBe64(in);
}

void StoreAtomicAckEth(const AtomicAckEth& eth, uint8_t* out) {
  StoreBe64(out, eth.original);
}

void LoadDeth(const uint8_t* in, Deth* out) {
  out->qkey = LoadBe32(in + offsetof(DethWire, qkey));
  out->reserved = in[offsetof(DethWire, reserved)];
  out->src_qp = LoadBe24(in + offsetof(DethWire, src_qp));
}

void StoreDeth(const Deth& deth, uint8_t* out) {
  StoreBe32(out + offsetof(DethWire, qkey), deth.qkey);
  out[offsetof(DethWire, reserved)] = deth.reserved;
  StoreBe24(out + offsetof(DethWire, src_qp), deth.src_qp);
}

uint32_t LoadImmDt(const uint8_t* in) { return LoadBe32(in); }
void StoreImmDt(uint32_t imm_data, uint8_t* out) { StoreBe32(out, imm_data); }
uint32_t LoadIeth(const uint8_t* in) { return LoadBe32(in); }
void StoreIeth(uint32_t rkey, uint8_t* out) { StoreBe32(out, rkey); }

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

ParseError ParseIpUdp(const uint8_t* frame, uint32_t length, uint32_t ip_offset,
                      uint32_t udp_offset, uint32_t* ip_end_out) {
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
    if ((LoadBe16(ip + 6) & 0x3fff) != 0) return ParseError::kIpFragment;
    if (checksum::Fold(checksum::Add(0, ip, kIpv4Bytes)) != 0xffff) {
      return ParseError::kIpChecksum;
    }
    if (ip[9] != kIpProtoUdp) return ParseError::kNotUdp;
    const uint32_t total = LoadBe16(ip + 2);
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
    const uint64_t end = uint64_t{udp_offset} + LoadBe16(ip + 4);
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
  if (LoadBe16(udp + 4) != udp_length_in_ip) return ParseError::kUdpLength;
  if (LoadBe16(udp + 2) != kRoceUdpPort) return ParseError::kNotRocePort;
  const uint16_t udp_checksum = LoadBe16(udp + 6);
  if (udp_checksum != 0 &&
      checksum::Fold(
          checksum::Add(PseudoHeaderSum(ip, version == 4, udp_length_in_ip),
                        udp, udp_length_in_ip)) != 0xffff) {
    return ParseError::kUdpChecksum;
  }
  *ip_end_out = ip_end;
  return ParseError::kNone;
}

ParseError ParseFrame(uint8_t* frame, uint32_t length, uint32_t ip_offset,
                      uint32_t udp_offset, Packet* out) {
  if (ip_offset < kIcrcLrhBytes) return ParseError::kBadOffsets;
  uint32_t ip_end = 0;  // one past the IP datagram
  if (ParseError error =
          ParseIpUdp(frame, length, ip_offset, udp_offset, &ip_end);
      error != ParseError::kNone) {
    return error;
  }
  const uint8_t* ip = frame + ip_offset;
  const uint8_t* udp = frame + udp_offset;
  const uint8_t version = ip[0] >> 4;
  const uint32_t udp_length_in_ip = ip_end - udp_offset;
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
    out->src_ip = Ipv4Mapped(LoadBe32(ip + 12));
    out->dst_ip = Ipv4Mapped(LoadBe32(ip + 16));
    out->traffic_class = ip[1];
    out->hop_limit = ip[8];
    out->flow_label = 0;
  } else {
    std::memcpy(out->src_ip.data(), ip + 8, 16);
    std::memcpy(out->dst_ip.data(), ip + 24, 16);
    out->traffic_class = static_cast<uint8_t>((ip[0] & 0xf) << 4 | ip[1] >> 4);
    out->hop_limit = ip[7];
    out->flow_label = LoadBe32(ip) & 0xfffff;
  }
  out->src_port = LoadBe16(udp);
  out->dst_port = kRoceUdpPort;
  out->udp_checksum = LoadBe16(udp + 6);
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
  StoreBe32(out.data() + 12, ipv4);
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
    StoreBe16(p, kEtherTypeVlan);
    StoreBe16(p + 2, params.vlan_tci);
    p += kVlanTagBytes;
  }
  StoreBe16(p, params.ip_version == 4 ? kEtherTypeIpv4 : kEtherTypeIpv6);
  p += 2;

  uint8_t* ip = p;
  if (params.ip_version == 4) {
    ip[0] = 0x45;
    ip[1] = params.traffic_class;
    StoreBe16(ip + 2, static_cast<uint16_t>(ip_length));
    StoreBe16(ip + 4, params.ipv4_id);
    StoreBe16(ip + 6, params.ipv4_dont_fragment ? 0x4000 : 0);
    ip[8] = params.hop_limit;
    ip[9] = kIpProtoUdp;
    StoreBe16(ip + 10, 0);
    std::memcpy(ip + 12, params.src_ip.data() + 12, 4);
    std::memcpy(ip + 16, params.dst_ip.data() + 12, 4);
    StoreBe16(ip + 10, checksum::Compute(ip, kIpv4Bytes));
  } else {
    StoreBe32(ip, 6u << 28 | uint32_t{params.traffic_class} << 20 |
                      (params.flow_label & 0xfffff));
    StoreBe16(ip + 4, static_cast<uint16_t>(ip_length));
    ip[6] = kIpProtoUdp;
    ip[7] = params.hop_limit;
    std::memcpy(ip + 8, params.src_ip.data(), 16);
    std::memcpy(ip + 24, params.dst_ip.data(), 16);
  }
  uint8_t* udp = ip + ip_bytes;
  StoreBe16(udp, params.udp_src_port);
  StoreBe16(udp + 2, kRoceUdpPort);
  StoreBe16(udp + 4, static_cast<uint16_t>(udp_length));
  StoreBe16(udp + 6, 0);

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
  const uint32_t udp_length = LoadBe16(udp + 4);
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
  StoreBe16(udp + 6, 0);
  if (!WriteIcrc(frame, static_cast<uint32_t>(frame_length),
                 IcrcSpan{ip_offset, udp_offset, icrc_offset})) {
    return 0;
  }
  if (params.ip_version == 6 && params.ipv6_udp_checksum) {
    StoreBe16(udp + 6, UdpChecksum(ip, false, udp, udp_length));
  }
  return static_cast<uint32_t>(frame_length);
}

uint32_t FinishChainedFrame(const FrameParams& params, uint8_t* headers,
                            uint32_t header_bytes,
                            std::span<const uint8_t> payload,
                            uint8_t* trailer) {
  const uint32_t ip_offset = L2Bytes(params.vlan);
  const uint32_t ip_bytes = IpHeaderBytes(params.ip_version);
  if (ip_bytes == 0 || header_bytes < ip_offset + ip_bytes + kUdpBytes) {
    return 0;
  }
  const uint32_t udp_offset = ip_offset + ip_bytes;
  uint8_t* ip = headers + ip_offset;
  uint8_t* udp = headers + udp_offset;
  const uint32_t payload_length = static_cast<uint32_t>(payload.size());
  const uint32_t pad = PadCount(payload_length);
  const uint32_t udp_length = LoadBe16(udp + 4);
  if (udp_length !=
      header_bytes - udp_offset + payload_length + pad + kIcrcBytes) {
    return 0;  // not WriteHeaders' headers for this payload
  }
  std::memset(trailer, 0, pad);
  StoreBe16(udp + 6, 0);
  uint32_t icrc = 0;
  if (!ComputeIcrcOver(headers, header_bytes + kIcrcBytes,
                       IcrcSpan{ip_offset, udp_offset, header_bytes}, payload,
                       {trailer, pad}, &icrc)) {
    return 0;
  }
  StoreLe32(trailer + pad, icrc);
  if (params.ip_version == 6 && params.ipv6_udp_checksum) {
    // Every part but the last must be of even length for the sum: the
    // headers are; an odd payload's last byte is summed with a zero, which
    // stands for the first pad byte (pad is 1 or 3 then), so the trailer's
    // words start one byte in.
    static_assert(kUdpBytes % 2 == 0 && kBthBytes % 2 == 0);
    uint64_t sum = PseudoHeaderSum(ip, false, udp_length);
    sum = checksum::Add(sum, udp, header_bytes - udp_offset);
    sum = checksum::Add(sum, payload.data(), payload_length);
    const uint32_t skip = payload_length % 2;
    sum = checksum::Add(sum, trailer + skip, pad + kIcrcBytes - skip);
    const uint16_t value = static_cast<uint16_t>(~checksum::Fold(sum));
    StoreBe16(udp + 6, value == 0 ? 0xffff : value);
  }
  return udp_offset + udp_length;
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
