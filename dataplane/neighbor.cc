#include "dataplane/neighbor.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "dataplane/common/byte_order.h"
#include "dataplane/common/checksum.h"
#include "handlers/api/net.h"

// Every read is checked against the IP end (NS/NA) or the frame end (ARP),
// which the classifier proved to lie inside the frame (and which are checked
// again here, so that a ParsedFrame of another frame cannot lead us astray).
// The reply is written only once the verdict is kAnswer.

namespace spinnic {
namespace {

constexpr uint16_t kEtherTypeIpv6 = 0x86dd;
constexpr uint16_t kEtherTypeArp = 0x0806;
constexpr uint16_t kEtherTypeIpv4 = 0x0800;
constexpr uint32_t kEthBytes = 14;
constexpr uint32_t kVlanBytes = 4;
constexpr uint32_t kIpv6Bytes = 40;
constexpr uint32_t kArpBytes = 28;
constexpr uint8_t kNdHopLimit = 255;
constexpr uint8_t kTypeNs = 135;
constexpr uint8_t kTypeNa = 136;
// Type, code, checksum, reserved/flags, target.
constexpr uint32_t kNdFixedBytes = 24;
constexpr uint32_t kNdMessageBytes = kNdFixedBytes + 8;  // + one LL option
constexpr uint8_t kOptSourceLinkLayer = 1;
constexpr uint8_t kOptTargetLinkLayer = 2;
constexpr uint8_t kNaFlagSolicited = 0x40;
constexpr uint8_t kNaFlagOverride = 0x20;
constexpr uint16_t kArpHardwareEthernet = 1;
constexpr uint16_t kArpRequest = 1;
constexpr uint16_t kArpReply = 2;

constexpr Ipv6Address kAllNodes = {0xff, 0x02, 0, 0, 0, 0, 0, 0,
                                   0,    0,    0, 0, 0, 0, 0, 1};
constexpr MacAddress kBroadcastMac = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

inline bool IsMulticastMac(const uint8_t* mac) { return (mac[0] & 1) != 0; }
inline bool IsMulticastIpv6(const uint8_t* ip) { return ip[0] == 0xff; }
inline bool IsUnspecified(const uint8_t* ip) {
  for (int i = 0; i < 16; ++i) {
    if (ip[i] != 0) return false;
  }
  return true;
}

template <size_t N>
bool IsOurs(const uint8_t* address,
            std::span<const std::array<uint8_t, N>> ours) {
  for (const auto& a : ours) {
    if (std::memcmp(a.data(), address, N) == 0) return true;
  }
  return false;
}

// The ICMPv6 checksum field value for `icmp_length` bytes at `icmp` between
// `src` and `dst` (RFC 8200 8.1 pseudo-header), with the field taken as
// it is: 0 over a message whose checksum is right when the field is zeroed.
uint16_t Icmpv6Sum(const uint8_t* src, const uint8_t* dst, const uint8_t* icmp,
                   uint32_t icmp_length) {
  uint64_t sum = checksum::Add(0, src, 16);
  sum = checksum::Add(sum, dst, 16);
  sum = checksum::AddBe32(sum, icmp_length);
  sum = checksum::AddBe32(sum, net::kProtoIcmpv6);
  return checksum::Fold(checksum::Add(sum, icmp, icmp_length));
}

inline uint16_t Icmpv6Checksum(const uint8_t* src, const uint8_t* dst,
                               const uint8_t* icmp, uint32_t icmp_length) {
  return static_cast<uint16_t>(~Icmpv6Sum(src, dst, icmp, icmp_length));
}

NeighborResult Malformed(NeighborError error) {
  NeighborResult r;
  r.verdict = NeighborVerdict::kMalformed;
  r.error = error;
  return r;
}

NeighborResult Verdict(NeighborVerdict verdict) {
  NeighborResult r;
  r.verdict = verdict;
  return r;
}

// Finds the first link-layer address option of `type` in the options at
// [begin, end). Returns false for an option of length 0 or one that runs
// past `end` (RFC 4861 4.6: the whole message is then invalid).
bool FindLinkLayerOption(const uint8_t* begin, const uint8_t* end, uint8_t type,
                         const uint8_t** mac) {
  *mac = nullptr;
  const uint8_t* p = begin;
  while (end - p >= 2) {
    const uint32_t bytes = uint32_t{p[1]} * 8;
    if (bytes == 0 || bytes > static_cast<uint32_t>(end - p)) return false;
    // Ethernet addresses fit in one 8-byte unit; take the first occurrence.
    if (p[0] == type && *mac == nullptr) *mac = p + 2;
    p += bytes;
  }
  return p == end;
}

// Writes Ethernet dst/src and the request's VLAN tags and ethertype (the
// bytes [12, l2) of `request`): the start of every reply.
void WriteL2(const uint8_t* request, uint32_t l2, const uint8_t* dst_mac,
             const MacAddress& src_mac, uint8_t* out) {
  std::memcpy(out, dst_mac, 6);
  std::memcpy(out + 6, src_mac.data(), 6);
  std::memcpy(out + 12, request + 12, l2 - 12);
}

void WriteIpv6(const uint8_t* src, const uint8_t* dst, uint8_t* ip) {
  StoreBe16(ip, 0x6000);  // version 6, traffic class 0, flow label 0
  StoreBe16(ip + 2, 0);
  StoreBe16(ip + 4, kNdMessageBytes);
  ip[6] = net::kProtoIcmpv6;
  ip[7] = kNdHopLimit;
  std::memcpy(ip + 8, src, 16);
  std::memcpy(ip + 24, dst, 16);
}

NeighborResult HandleArp(std::span<const uint8_t> frame, uint32_t l2,
                         const LocalAddresses& local,
                         std::span<uint8_t> reply) {
  if (frame.size() < l2 || frame.size() - l2 < kArpBytes) {
    return Malformed(NeighborError::kTruncated);
  }
  const uint8_t* arp = frame.data() + l2;
  const uint16_t op = LoadBe16(arp + 6);
  if (LoadBe16(arp) != kArpHardwareEthernet ||
      LoadBe16(arp + 2) != kEtherTypeIpv4 || arp[4] != 6 || arp[5] != 4 ||
      (op != kArpRequest && op != kArpReply)) {
    return Malformed(NeighborError::kBadArp);
  }
  const uint8_t* sha = arp + 8;
  const uint8_t* spa = arp + 14;
  const uint8_t* tpa = arp + 24;
  if (op == kArpRequest) {
    if (!IsOurs<4>(tpa, local.ipv4)) return Verdict(NeighborVerdict::kNotForUs);
    if (IsMulticastMac(sha)) return Malformed(NeighborError::kBadSource);
    const uint32_t length = l2 + kArpBytes;
    if (reply.size() < length) return Malformed(NeighborError::kNoRoom);
    uint8_t* out = reply.data();
    WriteL2(frame.data(), l2, sha, local.mac, out);
    uint8_t* r = out + l2;
    std::memcpy(r, arp, 6);  // htype, ptype, hlen, plen: checked above
    StoreBe16(r + 6, kArpReply);
    std::memcpy(r + 8, local.mac.data(), 6);
    std::memcpy(r + 14, tpa, 4);
    std::memcpy(r + 18, sha, 6);
    std::memcpy(r + 24, spa, 4);
    NeighborResult result = Verdict(NeighborVerdict::kAnswer);
    result.reply_length = length;
    return result;
  }
  if (IsMulticastMac(sha)) return Malformed(NeighborError::kBadSource);
  if (IsOurs<4>(spa, local.ipv4)) {
    return Malformed(NeighborError::kAddressConflict);
  }
  NeighborResult result = Verdict(NeighborVerdict::kLearned);
  result.ip[10] = result.ip[11] = 0xff;
  std::memcpy(result.ip.data() + 12, spa, 4);
  std::memcpy(result.mac.data(), sha, 6);
  result.is_ipv4 = true;
  return result;
}

NeighborResult HandleNd(std::span<const uint8_t> frame,
                        const ParsedFrame& parsed, const LocalAddresses& local,
                        std::span<uint8_t> reply) {
  const uint32_t l3 = parsed.layers.l3_offset;
  const uint32_t l4 = parsed.layers.l4_offset;
  const uint32_t end = parsed.layers.l3_end;
  const uint8_t* f = frame.data();
  // The classifier guarantees this; a ParsedFrame of another frame must not
  // make us read past this one.
  if (l3 < kEthBytes || l4 < l3 + kIpv6Bytes || end > frame.size() ||
      end < l4 + 1) {
    return Verdict(NeighborVerdict::kNotNeighbor);
  }
  const uint8_t type = f[l4];
  if (type != kTypeNs && type != kTypeNa) {
    return Verdict(NeighborVerdict::kNotNeighbor);
  }
  const uint32_t icmp_length = end - l4;
  if (icmp_length < kNdFixedBytes) return Malformed(NeighborError::kTruncated);
  const uint8_t* ip = f + l3;
  const uint8_t* src = ip + 8;
  const uint8_t* dst = ip + 24;
  const uint8_t* icmp = f + l4;
  const uint8_t* target = icmp + 8;
  const bool ours = IsOurs<16>(target, local.ipv6);
  if (type == kTypeNs && !ours) return Verdict(NeighborVerdict::kNotForUs);
  if (ip[7] != kNdHopLimit) return Malformed(NeighborError::kBadHopLimit);
  if (icmp[1] != 0) return Malformed(NeighborError::kBadCode);
  if (Icmpv6Sum(src, dst, icmp, icmp_length) != 0xffff) {
    return Malformed(NeighborError::kBadChecksum);
  }
  const uint8_t* link_layer = nullptr;
  if (!FindLinkLayerOption(
          icmp + kNdFixedBytes, icmp + icmp_length,
          type == kTypeNs ? kOptSourceLinkLayer : kOptTargetLinkLayer,
          &link_layer)) {
    return Malformed(NeighborError::kBadOption);
  }

  if (type == kTypeNa) {
    if (IsMulticastIpv6(target)) return Malformed(NeighborError::kBadTarget);
    if (ours) return Malformed(NeighborError::kAddressConflict);
    if (link_layer == nullptr) return Malformed(NeighborError::kNoLinkLayer);
    if (IsMulticastMac(link_layer)) return Malformed(NeighborError::kBadSource);
    NeighborResult result = Verdict(NeighborVerdict::kLearned);
    std::memcpy(result.ip.data(), target, 16);
    std::memcpy(result.mac.data(), link_layer, 6);
    return result;
  }

  // RFC 4861 7.1.1: an NS from :: (duplicate address detection) goes to the
  // solicited-node group and carries no source link-layer address.
  Ipv6Address target_copy;
  std::memcpy(target_copy.data(), target, 16);
  const Ipv6Address group = SolicitedNodeAddress(target_copy);
  const bool to_group = std::memcmp(dst, group.data(), 16) == 0;
  const bool dad = IsUnspecified(src);
  if (IsMulticastIpv6(src)) return Malformed(NeighborError::kBadSource);
  if (dad && (link_layer != nullptr || !to_group)) {
    return Malformed(NeighborError::kBadSource);
  }
  if (!to_group && std::memcmp(dst, target, 16) != 0) {
    return Malformed(NeighborError::kBadDestination);
  }
  // Where the answer goes: ff02::1 (DAD), else the solicitor, at its
  // advertised link-layer address or the frame's source.
  uint8_t dst_mac[6];
  const uint8_t* reply_ip = dad ? kAllNodes.data() : src;
  if (dad) {
    const uint8_t all_nodes_mac[6] = {0x33, 0x33, 0, 0, 0, 1};
    std::memcpy(dst_mac, all_nodes_mac, 6);
  } else {
    std::memcpy(dst_mac, link_layer != nullptr ? link_layer : f + 6, 6);
    if (IsMulticastMac(dst_mac)) return Malformed(NeighborError::kBadSource);
  }
  const uint32_t length = l3 + kIpv6Bytes + kNdMessageBytes;
  if (reply.size() < length) return Malformed(NeighborError::kNoRoom);

  uint8_t* out = reply.data();
  WriteL2(f, l3, dst_mac, local.mac, out);
  WriteIpv6(target, reply_ip, out + l3);
  uint8_t* na = out + l3 + kIpv6Bytes;
  na[0] = kTypeNa;
  na[1] = 0;
  StoreBe16(na + 2, 0);
  na[4] = static_cast<uint8_t>(kNaFlagOverride | (dad ? 0 : kNaFlagSolicited));
  na[5] = na[6] = na[7] = 0;
  std::memcpy(na + 8, target, 16);
  na[24] = kOptTargetLinkLayer;
  na[25] = 1;
  std::memcpy(na + 26, local.mac.data(), 6);
  StoreBe16(na + 2,
            Icmpv6Checksum(out + l3 + 8, out + l3 + 24, na, kNdMessageBytes));
  NeighborResult result = Verdict(NeighborVerdict::kAnswer);
  result.reply_length = length;
  return result;
}

}  // namespace

const char* NeighborVerdictName(NeighborVerdict verdict) {
  switch (verdict) {
    case NeighborVerdict::kNotNeighbor:
      return "not_neighbor";
    case NeighborVerdict::kNotForUs:
      return "not_for_us";
    case NeighborVerdict::kAnswer:
      return "answer";
    case NeighborVerdict::kLearned:
      return "learned";
    case NeighborVerdict::kMalformed:
      return "malformed";
  }
  return "unknown";
}

const char* NeighborErrorName(NeighborError error) {
  switch (error) {
    case NeighborError::kNone:
      return "none";
    case NeighborError::kTruncated:
      return "truncated";
    case NeighborError::kBadHopLimit:
      return "bad_hop_limit";
    case NeighborError::kBadCode:
      return "bad_code";
    case NeighborError::kBadChecksum:
      return "bad_checksum";
    case NeighborError::kBadOption:
      return "bad_option";
    case NeighborError::kBadTarget:
      return "bad_target";
    case NeighborError::kBadSource:
      return "bad_source";
    case NeighborError::kBadDestination:
      return "bad_destination";
    case NeighborError::kNoLinkLayer:
      return "no_link_layer";
    case NeighborError::kBadArp:
      return "bad_arp";
    case NeighborError::kAddressConflict:
      return "address_conflict";
    case NeighborError::kNoRoom:
      return "no_room";
    case NeighborError::kCount:
      break;
  }
  return "unknown";
}

NeighborResult HandleNeighborFrame(std::span<const uint8_t> frame,
                                   const ParsedFrame& parsed,
                                   const LocalAddresses& local,
                                   std::span<uint8_t> reply) {
  if (parsed.frame_class == FrameClass::kDrop) {
    return Verdict(NeighborVerdict::kNotNeighbor);
  }
  const PacketLayers& layers = parsed.layers;
  if (layers.ethertype == kEtherTypeArp && layers.vlan_tags <= 2) {
    return HandleArp(frame, kEthBytes + kVlanBytes * layers.vlan_tags, local,
                     reply);
  }
  if (layers.ethertype == kEtherTypeIpv6 && layers.is_ipv6 &&
      layers.ip_proto == net::kProtoIcmpv6 &&
      layers.l4_offset != PacketLayers::kAbsent &&
      layers.l3_end != PacketLayers::kAbsent) {
    return HandleNd(frame, parsed, local, reply);
  }
  return Verdict(NeighborVerdict::kNotNeighbor);
}

NeighborResult HandleNeighborFrame(std::span<const uint8_t> frame,
                                   const LocalAddresses& local,
                                   std::span<uint8_t> reply) {
  ParsedFrame parsed;
  ParseFrame(frame.data(), static_cast<uint32_t>(frame.size()), &parsed);
  return HandleNeighborFrame(frame, parsed, local, reply);
}

Ipv6Address SolicitedNodeAddress(const Ipv6Address& target) {
  Ipv6Address group = {0xff, 0x02,       0,          0,         0, 0,
                       0,    0,          0,          0,         0, 1,
                       0xff, target[13], target[14], target[15]};
  return group;
}

uint32_t BuildNeighborSolicitation(const MacAddress& src_mac,
                                   const Ipv6Address& src_ip,
                                   const Ipv6Address& target,
                                   std::span<uint8_t> out) {
  if (out.size() < kNeighborSolicitationBytes) return 0;
  uint8_t* f = out.data();
  const Ipv6Address group = SolicitedNodeAddress(target);
  const uint8_t dst_mac[6] = {0x33,       0x33,       0xff,
                              target[13], target[14], target[15]};
  std::memcpy(f, dst_mac, 6);
  std::memcpy(f + 6, src_mac.data(), 6);
  StoreBe16(f + 12, kEtherTypeIpv6);
  uint8_t* ip = f + kEthBytes;
  WriteIpv6(src_ip.data(), group.data(), ip);
  uint8_t* ns = ip + kIpv6Bytes;
  ns[0] = kTypeNs;
  ns[1] = 0;
  std::memset(ns + 2, 0, 6);  // checksum, reserved
  std::memcpy(ns + 8, target.data(), 16);
  ns[24] = kOptSourceLinkLayer;
  ns[25] = 1;
  std::memcpy(ns + 26, src_mac.data(), 6);
  StoreBe16(ns + 2,
            Icmpv6Checksum(src_ip.data(), group.data(), ns, kNdMessageBytes));
  return kNeighborSolicitationBytes;
}

uint32_t BuildArpRequest(const MacAddress& src_mac, const Ipv4Address& src_ip,
                         const Ipv4Address& target, std::span<uint8_t> out) {
  if (out.size() < kArpRequestBytes) return 0;
  uint8_t* f = out.data();
  std::memcpy(f, kBroadcastMac.data(), 6);
  std::memcpy(f + 6, src_mac.data(), 6);
  StoreBe16(f + 12, kEtherTypeArp);
  uint8_t* arp = f + kEthBytes;
  StoreBe16(arp, kArpHardwareEthernet);
  StoreBe16(arp + 2, kEtherTypeIpv4);
  arp[4] = 6;
  arp[5] = 4;
  StoreBe16(arp + 6, kArpRequest);
  std::memcpy(arp + 8, src_mac.data(), 6);
  std::memcpy(arp + 14, src_ip.data(), 4);
  std::memset(arp + 18, 0, 6);
  std::memcpy(arp + 24, target.data(), 4);
  return kArpRequestBytes;
}

}  // namespace spinnic
