#include "dataplane/classifier.h"

#include <cstdint>
#include <cstring>

#include "dataplane/common/byte_order.h"

// The parser reads only through the bounds it has proven, so every access is
// preceded by a length check against either the frame end or the IP end
// (whichever is tighter). It allocates nothing and throws nothing, so that it
// can run per packet on an HPU and under libFuzzer alike. Decisions that the
// header leaves open are written down in docs/classifier.md.

namespace spinnic {
namespace {

constexpr uint32_t kEthHeaderLen = 14;
constexpr uint32_t kVlanTagLen = 4;
constexpr uint32_t kMaxVlanTags = 2;
constexpr uint32_t kIpv4MinHeaderLen = 20;
constexpr uint32_t kIpv6HeaderLen = 40;
constexpr uint32_t kTcpMinHeaderLen = 20;
constexpr uint32_t kUdpHeaderLen = 8;
// Every ICMP and ICMPv6 message type starts with the same 8 bytes: type,
// code, checksum and 4 type-specific bytes (echo id/sequence, unused, MTU,
// NDP reserved/flags...).
constexpr uint32_t kIcmpHeaderLen = 8;
// Bounds the IPv6 extension header walk so that a chain of tiny headers costs
// a fixed amount of work per packet. Eight covers every legal sequence in
// RFC 8200 section 4.1 with room to spare. It also keeps every offset below
// PacketLayers::kAbsent: 22 + 40 + 8 * 2048 + 60 < 0xffff.
constexpr uint32_t kMaxIpv6ExtHeaders = 8;

using classifier_internal::kEtherTypeIpv4;
using classifier_internal::kEtherTypeIpv6;
using classifier_internal::kEtherTypeQinQ;
using classifier_internal::kEtherTypeVlan;

constexpr uint8_t kProtoHopByHop = 0;
constexpr uint8_t kProtoIcmp = 1;
constexpr uint8_t kProtoTcp = 6;
constexpr uint8_t kProtoUdp = 17;
constexpr uint8_t kProtoRouting = 43;
constexpr uint8_t kProtoFragment = 44;
constexpr uint8_t kProtoIcmpv6 = 58;
constexpr uint8_t kProtoDestOpts = 60;

constexpr uint16_t kIpv4FragOffsetMask = 0x1fff;

inline void Drop(ParsedFrame* out, DropReason reason) {
  out->frame_class = FrameClass::kDrop;
  out->drop_reason = reason;
}

using classifier_internal::StoreMappedIpv4;

// Parses the transport header at `l4`. `ip_end` is the end of the IP
// datagram, not the frame, so that Ethernet padding is never taken for L4
// bytes. Returns false when the header is cut short (the frame is dropped).
bool ParseL4(const uint8_t* data, uint32_t l4, uint32_t ip_end, uint8_t proto,
             bool is_ipv4, ParsedFrame* out) {
  const uint32_t avail = ip_end - l4;
  const uint8_t* p = data + l4;
  switch (proto) {
    case kProtoTcp: {
      if (avail < kTcpMinHeaderLen) return false;
      const uint32_t header_len = static_cast<uint32_t>(p[12] >> 4) * 4;
      if (header_len < kTcpMinHeaderLen || header_len > avail) return false;
      out->src_port = LoadBe16(p);
      out->dst_port = LoadBe16(p + 2);
      out->has_l4_ports = true;
      out->layers.l4_offset = static_cast<uint16_t>(l4);
      out->layers.payload_offset = static_cast<uint16_t>(l4 + header_len);
      return true;
    }
    case kProtoUdp: {
      // The UDP length field is left to the transports: the IP length already
      // bounds the datagram, and a disagreeing UDP length is their error to
      // count, not a reason to drop passthrough traffic.
      if (avail < kUdpHeaderLen) return false;
      out->src_port = LoadBe16(p);
      out->dst_port = LoadBe16(p + 2);
      out->has_l4_ports = true;
      out->layers.l4_offset = static_cast<uint16_t>(l4);
      out->layers.payload_offset = static_cast<uint16_t>(l4 + kUdpHeaderLen);
      return true;
    }
    case kProtoIcmp:
    case kProtoIcmpv6: {
      // ICMP in IPv6 and ICMPv6 in IPv4 are nonsense; treat them as unknown
      // protocols rather than guessing.
      if ((proto == kProtoIcmp) != is_ipv4) return true;
      if (avail < kIcmpHeaderLen) return false;
      out->layers.l4_offset = static_cast<uint16_t>(l4);
      out->layers.payload_offset = static_cast<uint16_t>(l4 + kIcmpHeaderLen);
      return true;
    }
    default:
      return true;  // Unknown protocol: no L4, still forwarded.
  }
}

void ParseIpv4(const uint8_t* data, uint32_t l3, uint32_t length,
               ParsedFrame* out) {
  const uint32_t avail = length - l3;
  if (avail < kIpv4MinHeaderLen) return Drop(out, DropReason::kTruncated);
  const uint8_t* ip = data + l3;
  // Not IPv4 despite the ethertype: we cannot say what it is, so it has no
  // L3 and goes through untouched like any other unknown payload.
  if ((ip[0] >> 4) != 4) return;
  const uint32_t header_len = uint32_t{ip[0] & 0x0fu} * 4;
  const uint32_t total_len = LoadBe16(ip + 2);
  // A header length below the minimum, or a total length that does not even
  // cover the header, is a length field that does not describe the bytes:
  // counted with the truncations (the enum has no separate "malformed").
  if (header_len < kIpv4MinHeaderLen || header_len > avail ||
      total_len < header_len || total_len > avail) {
    return Drop(out, DropReason::kTruncated);
  }
  out->layers.l3_offset = static_cast<uint16_t>(l3);
  out->layers.l3_end = static_cast<uint16_t>(l3 + total_len);
  out->layers.is_ipv4 = true;
  out->layers.ip_proto = ip[9];
  StoreMappedIpv4(ip + 12, &out->src_addr);
  StoreMappedIpv4(ip + 16, &out->dst_addr);
  // Later fragments carry no transport header. The first fragment (offset 0,
  // MF set) does, and must hold all of it: a "tiny fragment" that splits the
  // L4 header is dropped as truncated (RFC 1858) instead of slipping past
  // port-based rules.
  if ((LoadBe16(ip + 6) & kIpv4FragOffsetMask) != 0) return;
  if (!ParseL4(data, l3 + header_len, l3 + total_len, ip[9],
               /*is_ipv4=*/true, out)) {
    Drop(out, DropReason::kTruncated);
  }
}

void ParseIpv6(const uint8_t* data, uint32_t l3, uint32_t length,
               ParsedFrame* out) {
  const uint32_t avail = length - l3;
  if (avail < kIpv6HeaderLen) return Drop(out, DropReason::kTruncated);
  const uint8_t* ip = data + l3;
  if ((ip[0] >> 4) != 6) return;  // See ParseIpv4.
  // Jumbograms (payload length 0 plus a Jumbo option) are not supported:
  // with a zero payload length the datagram is just the fixed header.
  const uint32_t ip_end = l3 + kIpv6HeaderLen + LoadBe16(ip + 4);
  if (ip_end > length) return Drop(out, DropReason::kTruncated);
  out->layers.l3_offset = static_cast<uint16_t>(l3);
  out->layers.l3_end = static_cast<uint16_t>(ip_end);
  out->layers.is_ipv6 = true;
  std::memcpy(out->src_addr.data(), ip + 8, 16);
  std::memcpy(out->dst_addr.data(), ip + 24, 16);

  uint8_t next = ip[6];
  uint32_t offset = l3 + kIpv6HeaderLen;
  for (uint32_t i = 0; i < kMaxIpv6ExtHeaders; ++i) {
    if (next == kProtoFragment) {
      if (ip_end - offset < 8) return Drop(out, DropReason::kTruncated);
      const uint8_t* frag = data + offset;
      next = frag[0];
      // Offset bits 15..3 of bytes 2-3; only the first fragment has L4.
      if ((LoadBe16(frag + 2) & 0xfff8u) != 0) {
        out->layers.ip_proto = next;
        return;
      }
      offset += 8;
    } else if (next == kProtoHopByHop || next == kProtoRouting ||
               next == kProtoDestOpts) {
      if (ip_end - offset < 8) return Drop(out, DropReason::kTruncated);
      const uint8_t* ext = data + offset;
      const uint32_t ext_len = (uint32_t{ext[1]} + 1) * 8;
      if (ip_end - offset < ext_len) return Drop(out, DropReason::kTruncated);
      next = ext[0];
      offset += ext_len;
    } else {
      break;
    }
  }
  out->layers.ip_proto = next;
  // A chain longer than the walk allows stops here with ip_proto naming the
  // extension header we did not enter, and no L4. AH, ESP, No Next Header
  // and unknown protocols end up in ParseL4's default: no L4.
  if (next == kProtoHopByHop || next == kProtoRouting ||
      next == kProtoFragment || next == kProtoDestOpts) {
    return;
  }
  if (!ParseL4(data, offset, ip_end, next, /*is_ipv4=*/false, out)) {
    Drop(out, DropReason::kTruncated);
  }
}

}  // namespace

const char* DropReasonName(DropReason reason) {
  switch (reason) {
    case DropReason::kRunt:
      return "runt";
    case DropReason::kTruncated:
      return "truncated";
    case DropReason::kOversize:
      return "oversize";
    case DropReason::kMultiSegment:
      return "multi_segment";
    case DropReason::kHandlerDrop:
      return "handler_drop";
    case DropReason::kHandlerInvalid:
      return "handler_invalid";
    case DropReason::kTxFull:
      return "tx_full";
    case DropReason::kNoRoute:
      return "no_route";
    case DropReason::kNoBuffer:
      return "no_buffer";
    case DropReason::kSchedulerFull:
      return "scheduler_full";
    case DropReason::kCount:
      break;
  }
  // kCount and out-of-range values: callers index counter arrays by reason,
  // so a name that stands out is more useful than a crash.
  return "unknown";
}

namespace classifier_internal {

void ParseFrameGeneral(const uint8_t* data, uint32_t length, ParsedFrame* out) {
  // Field by field: assigning a value-initialised ParsedFrame went through a
  // stack temporary and cost ~50 cycles per frame in store-forwarding stalls
  // (perf, net_null passthrough). Addresses are valid only with an L3 layer.
  out->layers = PacketLayers{};
  out->frame_class = FrameClass::kPassthrough;
  out->drop_reason = DropReason::kCount;
  out->src_port = 0;
  out->dst_port = 0;
  out->has_l4_ports = false;
  if (length < kEthHeaderLen) return Drop(out, DropReason::kRunt);

  uint32_t offset = kEthHeaderLen;
  uint16_t ethertype = LoadBe16(data + 12);
  uint8_t tags = 0;
  while ((ethertype == kEtherTypeVlan || ethertype == kEtherTypeQinQ) &&
         tags < kMaxVlanTags) {
    // A tag the TPID announces but the frame does not hold is a header cut
    // short: the same case as an IP header cut short.
    if (length - offset < kVlanTagLen) {
      out->layers.vlan_tags = tags;
      out->layers.ethertype = ethertype;
      return Drop(out, DropReason::kTruncated);
    }
    ethertype = LoadBe16(data + offset + 2);
    offset += kVlanTagLen;
    ++tags;
  }
  out->layers.vlan_tags = tags;
  // With a third tag `ethertype` stays that TPID: no L3, forwarded as is.
  out->layers.ethertype = ethertype;

  if (ethertype == kEtherTypeIpv4) {
    ParseIpv4(data, offset, length, out);
  } else if (ethertype == kEtherTypeIpv6) {
    ParseIpv6(data, offset, length, out);
  }
}

}  // namespace classifier_internal

}  // namespace spinnic
