// Frame parsing and classification: the first thing an HPU does with a
// received frame. Pure functions over bytes (no DPDK), so that they are unit
// tested against golden frames and fuzzed (tests/fuzz/classifier_fuzz.cc).
#ifndef SPINNIC_DATAPLANE_CLASSIFIER_H_
#define SPINNIC_DATAPLANE_CLASSIFIER_H_

#include <array>
#include <cstdint>
#include <cstring>

#include "dataplane/common/byte_order.h"
#include "handlers/api/packet.h"

namespace spinnic {

// Why a frame is not forwarded. Every drop in the dataplane has one of these
// reasons and a counter (see hpu.h, docs/counters.md); names in
// DropReasonName().
enum class DropReason : uint8_t {
  kRunt = 0,        // shorter than an Ethernet header
  kTruncated,       // an IP/L4 header or IP length runs past the frame end
  kOversize,        // larger than the egress port's MTU allows
  kMultiSegment,    // a handler needed it contiguous and it could not be
  kHandlerDrop,     // a handler dropped it (DROP or FAIL)
  kHandlerInvalid,  // a handler returned a code not allowed at that point
  kTxFull,          // the egress queue stayed full (far side congested)
  kNoRoute,         // arrived on a port without a pair, nothing to do
  kNoBuffer,        // mbuf pool exhausted (emit, reply copies, scheduler)
  kSchedulerFull,   // the software scheduler's ring to an HPU was full
  kCount,
};

const char* DropReasonName(DropReason reason);

// What the classifier found, in the order of ARCHITECTURE.md's packet way.
enum class FrameClass : uint8_t {
  kPassthrough = 0,  // not for us: forward to the paired port
  kDrop,             // malformed: see ParsedFrame::drop_reason
  // Later transports add: kArpForUs, kNdpForUs, kDiad, kRoce.
};

// Addresses and ports pulled out of the frame for match rules. IPv4
// addresses are stored as IPv4-mapped IPv6 (::ffff:a.b.c.d) so that one
// prefix comparison serves both families.
struct ParsedFrame {
  PacketLayers layers;
  FrameClass frame_class = FrameClass::kPassthrough;
  DropReason drop_reason = DropReason::kCount;  // valid when kDrop
  // Valid only when layers.is_ipv4 or layers.is_ipv6 (left unwritten
  // otherwise: zeroing them costs per frame).
  std::array<uint8_t, 16> src_addr;
  std::array<uint8_t, 16> dst_addr;
  uint16_t src_port = 0;  // host order; 0 when there is no TCP/UDP header
  uint16_t dst_port = 0;
  bool has_l4_ports = false;
};

namespace classifier_internal {

inline constexpr uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr uint16_t kEtherTypeIpv6 = 0x86dd;
inline constexpr uint16_t kEtherTypeVlan = 0x8100;
inline constexpr uint16_t kEtherTypeQinQ = 0x88a8;

// Every case ParseFrame's contract covers.
void ParseFrameGeneral(const uint8_t* data, uint32_t length, ParsedFrame* out);

// Writes ::ffff:a.b.c.d so that IPv4 and IPv6 share one prefix comparison.
inline void StoreMappedIpv4(const uint8_t* ipv4, std::array<uint8_t, 16>* out) {
  std::memset(out->data(), 0, 10);
  (*out)[10] = 0xff;
  (*out)[11] = 0xff;
  std::memcpy(out->data() + 12, ipv4, 4);
}

// The frames most traffic is made of, inline and straight through: untagged
// IPv4 without options carrying UDP or TCP (first or only fragment), and
// untagged IPv6 carrying UDP directly (DiAD). Returns false, having written
// nothing that matters, for every other frame; when it returns true, *out is
// exactly what ParseFrameGeneral gives (tests/fuzz/classifier_fuzz.cc checks
// that on every input).
inline bool ParseCommonFrame(const uint8_t* data, uint32_t length,
                             ParsedFrame* out) {
  constexpr uint32_t kL3 = 14;
  if (length < kL3 + 20 + 8) return false;
  const uint16_t ethertype = LoadBe16(data + 12);
  const uint8_t* ip = data + kL3;
  uint32_t l4;
  uint32_t l4_bytes = 8;
  uint32_t l3_end;
  uint8_t proto;
  if (ethertype == kEtherTypeIpv4) {
    if (ip[0] != 0x45) return false;  // options, or not IPv4
    const uint32_t total = LoadBe16(ip + 2);
    proto = ip[9];
    if (total > length - kL3 || (LoadBe16(ip + 6) & 0x1fff) != 0) {
      return false;
    }
    l4 = kL3 + 20;
    if (proto == 6) {
      if (total < 40) return false;
      l4_bytes = (uint32_t{ip[32]} >> 4) * 4;
      if (l4_bytes < 20) return false;
    } else if (proto != 17) {
      return false;
    }
    if (total < 20 + l4_bytes) return false;
    l3_end = kL3 + total;
    StoreMappedIpv4(ip + 12, &out->src_addr);
    StoreMappedIpv4(ip + 16, &out->dst_addr);
  } else if (ethertype == kEtherTypeIpv6) {
    if (length < kL3 + 40 + 8 || (ip[0] >> 4) != 6 || ip[6] != 17) {
      return false;
    }
    proto = 17;
    l4 = kL3 + 40;
    l3_end = l4 + LoadBe16(ip + 4);
    if (l3_end > length || l3_end < l4 + 8) return false;
    std::memcpy(out->src_addr.data(), ip + 8, 16);
    std::memcpy(out->dst_addr.data(), ip + 24, 16);
  } else {
    return false;
  }
  PacketLayers& layers = out->layers;
  layers.l3_offset = kL3;
  layers.l4_offset = static_cast<uint16_t>(l4);
  layers.payload_offset = static_cast<uint16_t>(l4 + l4_bytes);
  layers.l3_end = static_cast<uint16_t>(l3_end);
  layers.ethertype = ethertype;
  layers.ip_proto = proto;
  layers.vlan_tags = 0;
  layers.is_ipv4 = ethertype == kEtherTypeIpv4;
  layers.is_ipv6 = ethertype == kEtherTypeIpv6;
  out->frame_class = FrameClass::kPassthrough;
  out->drop_reason = DropReason::kCount;
  out->src_port = LoadBe16(data + l4);
  out->dst_port = LoadBe16(data + l4 + 2);
  out->has_l4_ports = true;
  return true;
}

}  // namespace classifier_internal

// Parses Ethernet (with up to two VLAN tags), IPv4 (with options), IPv6 (with
// a bounded walk over extension headers) and TCP/UDP/ICMP/ICMPv6 headers.
//
// Contract: never reads outside [data, data + length). Frames shorter than
// 14 bytes are kDrop/kRunt. An IP header that claims more bytes than the
// frame holds (header length, total/payload length) or an L4 header cut short
// is kDrop/kTruncated. Everything else is kPassthrough with the layers found:
// non-IP and unknown ethertypes just have no L3; IP fragments after the first
// and unknown protocols have no L4. Trailing bytes beyond the IP length
// (Ethernet padding) are allowed.
inline void ParseFrame(const uint8_t* data, uint32_t length, ParsedFrame* out) {
  if (!classifier_internal::ParseCommonFrame(data, length, out)) [[unlikely]] {
    classifier_internal::ParseFrameGeneral(data, length, out);
  }
}

// What ParseFrame decides about `data` when nothing will read its layers:
// the drop reason of a kDrop frame, or DropReason::kCount for one that
// passes. Exactly ParseFrame's verdict (tests/fuzz/classifier_fuzz.cc checks
// that on every input), but a frame whose ethertype cannot announce a header
// that could be cut short is settled by its first byte, with no call: the
// HPU's burst for a port with nothing installed and no transport
// (Hpu::ForwardBurst).
inline DropReason PassthroughVerdict(const uint8_t* data, uint32_t length) {
  if (length < 14) return DropReason::kRunt;
  // The ethertype's first byte: 0x08 (IPv4), 0x81 (VLAN), 0x86 (IPv6) and
  // 0x88 (QinQ) lie in two ranges; the few others in them (ARP, MPLS,
  // LLDP, ...) take ParseFrame, which passes them.
  const uint8_t high = data[12];
  if (high < 0x08 || (high > 0x08 && high < 0x81) || high > 0x88) {
    return DropReason::kCount;
  }
  ParsedFrame frame;
  ParseFrame(data, length, &frame);
  return frame.frame_class == FrameClass::kDrop ? frame.drop_reason
                                                : DropReason::kCount;
}

}  // namespace spinnic

#endif  // SPINNIC_DATAPLANE_CLASSIFIER_H_
