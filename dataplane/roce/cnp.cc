#include "dataplane/roce/cnp.h"

#include <cstring>

#include "dataplane/common/byte_order.h"
#include "dataplane/common/checksum.h"
#include "dataplane/roce/icrc.h"

namespace spinnic::roce {
namespace {

// Where the BTH's opcode goes: a CNP is built as an RC SEND Only (0x04)
// whose 16-byte payload stands for the reserved bytes (the same layout),
// then relabelled, so that WriteHeaders writes the Ethernet, IP, UDP and
// BTH headers it writes for every other packet.
constexpr uint8_t kStandInOpcode = 0x04;

uint32_t IpBytes(uint8_t ip_version) {
  return ip_version == 4 ? kIpv4Bytes : ip_version == 6 ? kIpv6Bytes : 0;
}

}  // namespace

uint32_t CnpFrameBytes(uint8_t ip_version, bool vlan) {
  const uint32_t ip_bytes = IpBytes(ip_version);
  if (ip_bytes == 0) return 0;
  return kEthernetBytes + (vlan ? kVlanTagBytes : 0) + ip_bytes + kUdpBytes +
         kCnpUdpPayloadBytes;
}

uint32_t BuildCnp(const FrameParams& params, uint32_t dest_qp, uint8_t* frame,
                  uint32_t capacity, uint16_t pkey) {
  const uint32_t length = CnpFrameBytes(params.ip_version, params.vlan);
  if (length == 0 || capacity < length) return 0;
  FrameParams cnp_params = params;
  cnp_params.ipv6_udp_checksum = false;
  Bth bth;
  bth.opcode = kStandInOpcode;
  bth.pkey = pkey;
  bth.becn = true;
  bth.dest_qp = dest_qp;
  bth.ack_req = false;
  bth.psn = 0;
  const uint32_t header_bytes = WriteHeaders(
      cnp_params, bth, ExtHeaders{}, kCnpReservedBytes, frame, capacity);
  if (header_bytes == 0) return 0;
  const uint32_t udp_offset = header_bytes - kBthBytes - kUdpBytes;
  const uint32_t ip_offset = udp_offset - IpBytes(params.ip_version);
  frame[header_bytes - kBthBytes] = kCnpOpcode;
  std::memset(frame + header_bytes, 0, kCnpReservedBytes);
  if (!WriteIcrc(frame, length,
                 IcrcSpan{ip_offset, udp_offset, length - kIcrcBytes})) {
    return 0;
  }
  return length;
}

ParseError ParseCnp(uint8_t* frame, uint32_t length, uint32_t ip_offset,
                    uint32_t udp_offset, Cnp* out) {
  // The ICRC's in-place masking writes the 8 bytes before the IP header.
  if (ip_offset < 8 || udp_offset <= ip_offset) return ParseError::kBadOffsets;
  // IP and UDP exactly as ParseFrame checks them (wire.h, ParseIpUdp).
  uint32_t ip_end = 0;
  if (ParseError error =
          ParseIpUdp(frame, length, ip_offset, udp_offset, &ip_end);
      error != ParseError::kNone) {
    return error;
  }
  const uint8_t* ip = frame + ip_offset;
  const uint8_t version = ip[0] >> 4;
  const uint32_t udp_length = ip_end - udp_offset;
  const uint8_t* udp = frame + udp_offset;
  if (udp_length < kUdpBytes + kBthBytes + kIcrcBytes) {
    return ParseError::kTooShort;
  }
  Bth bth;
  LoadBth(udp + kUdpBytes, &bth);
  if (bth.tver != 0) return ParseError::kBadTver;
  if (bth.opcode != kCnpOpcode) return ParseError::kBadOpcode;
  if (udp_length != kUdpBytes + kCnpUdpPayloadBytes) {
    return udp_length < kUdpBytes + kCnpUdpPayloadBytes
               ? ParseError::kTooShort
               : ParseError::kUnexpectedPayload;
  }
  if (!VerifyIcrc(frame, length,
                  IcrcSpan{ip_offset, udp_offset, ip_end - kIcrcBytes})) {
    return ParseError::kBadIcrc;
  }

  out->dest_qp = bth.dest_qp;
  out->pkey = bth.pkey;
  out->becn = bth.becn;
  out->ip_version = version;
  if (version == 4) {
    out->src_ip = Ipv4Mapped(LoadBe32(ip + 12));
    out->dst_ip = Ipv4Mapped(LoadBe32(ip + 16));
  } else {
    std::memcpy(out->src_ip.data(), ip + 8, 16);
    std::memcpy(out->dst_ip.data(), ip + 24, 16);
  }
  out->src_port = LoadBe16(udp);
  return ParseError::kNone;
}

}  // namespace spinnic::roce
