// Small network helpers that handler authors share: protocol numbers, big-
// endian access to the frame, and the one's complement arithmetic that keeps
// a checksum valid when a handler rewrites bytes it covers. Header-only and
// free of DPDK; nothing here allocates, so all of it may run on the hot path.
//
//   uint16_t old_word = net::Load16(bytes, l4);
//   bytes[l4] = net::kIcmpEchoReply;
//   net::Store16(bytes, l4 + 2, net::UpdateChecksum(
//       net::Load16(bytes, l4 + 2), old_word, net::Load16(bytes, l4)));
#ifndef SPINNIC_HANDLERS_API_NET_H_
#define SPINNIC_HANDLERS_API_NET_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "dataplane/common/byte_order.h"
#include "dataplane/common/checksum.h"
#include "handlers/api/packet.h"

namespace spinnic::net {

// IP protocol numbers (IPv4 protocol, IPv6 next header), as in ip_proto.
inline constexpr uint8_t kProtoIcmp = 1;       // ICMP, in IPv4 only
inline constexpr uint8_t kProtoTcp = 6;        // TCP
inline constexpr uint8_t kProtoUdp = 17;       // UDP
inline constexpr uint8_t kProtoIpv6Frag = 44;  // IPv6 fragment header
inline constexpr uint8_t kProtoAh = 51;        // authentication header
inline constexpr uint8_t kProtoIcmpv6 = 58;    // ICMPv6, in IPv6 only

// ICMP and ICMPv6 message types (the first byte of the L4 header).
inline constexpr uint8_t kIcmpEchoReply = 0;        // ICMP echo reply
inline constexpr uint8_t kIcmpEchoRequest = 8;      // ICMP echo request
inline constexpr uint8_t kIcmpv6EchoRequest = 128;  // ICMPv6 echo request
inline constexpr uint8_t kIcmpv6EchoReply = 129;    // ICMPv6 echo reply

// The big-endian 16-bit word at bytes[at]; the caller checks the bounds.
inline uint16_t Load16(std::span<const uint8_t> bytes, uint32_t at) {
  return LoadBe16(bytes.data() + at);
}

// Writes `value` big-endian at bytes[at]; the caller checks the bounds.
inline void Store16(std::span<uint8_t> bytes, uint32_t at, uint16_t value) {
  StoreBe16(bytes.data() + at, value);
}

// Folds a plain sum of 16-bit words to 16 bits with end-around carry.
inline uint16_t Fold(uint64_t sum) {
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(sum);
}

// RFC 1624 eqn. 3, HC' = ~(~HC + ~m + m'): the checksum once word m is m'.
inline uint16_t UpdateChecksum(uint16_t checksum, uint16_t old_word,
                               uint16_t new_word) {
  return static_cast<uint16_t>(
      ~Fold(uint64_t{static_cast<uint16_t>(~checksum)} +
            static_cast<uint16_t>(~old_word) + new_word));
}

// Frame offset of the TCP/UDP/ICMP/ICMPv6 checksum; kAbsent when there is none.
inline uint32_t L4ChecksumOffset(const PacketLayers& layers) {
  if (layers.l4_offset == PacketLayers::kAbsent) return PacketLayers::kAbsent;
  uint32_t offset = 0;
  switch (layers.ip_proto) {
    case kProtoTcp:
      offset = 16;
      break;
    case kProtoUdp:
      offset = 6;
      break;
    case kProtoIcmp:
      if (layers.is_ipv4) offset = 2;
      break;
    case kProtoIcmpv6:
      if (layers.is_ipv6) offset = 2;
      break;
    default:
      break;
  }
  // The field must lie inside the L4 header the classifier proved present.
  const uint32_t at = uint32_t{layers.l4_offset} + offset;
  if (offset == 0 || layers.payload_offset == PacketLayers::kAbsent ||
      at + 2 > layers.payload_offset) {
    return PacketLayers::kAbsent;
  }
  return at;
}

// Swaps the `length` bytes at bytes[a] with those at bytes[b]; the caller
// checks the bounds and that the ranges do not overlap.
inline void SwapRanges(std::span<uint8_t> bytes, uint32_t a, uint32_t b,
                       uint32_t length) {
  std::swap_ranges(bytes.begin() + a, bytes.begin() + a + length,
                   bytes.begin() + b);
}

// True when the frame's destination MAC is a group (multicast or broadcast)
// address: an answer would need it as its source, which no station may send.
// The frame must hold an Ethernet header.
inline bool IsGroupDestination(std::span<const uint8_t> bytes) {
  return (bytes[0] & 0x01) != 0;
}

// Turns the frame around: swaps the Ethernet source and destination, the
// IPv4/IPv6 addresses and the TCP/UDP ports, as far as the frame has them
// (a non-IP frame gets its MACs swapped only). Every checksum stays valid:
// each pair is 16-bit aligned and sits on both sides of the sums that cover
// it (the IPv4 header, the TCP/UDP pseudo-header and ports), so a swap only
// reorders them. The frame must hold an Ethernet header.
inline void SwapEndpoints(std::span<uint8_t> bytes,
                          const PacketLayers& layers) {
  SwapRanges(bytes, 0, 6, 6);
  const uint32_t l3 = layers.l3_offset;
  if (layers.is_ipv4 && l3 + 20 <= bytes.size()) {
    SwapRanges(bytes, l3 + 12, l3 + 16, 4);
  } else if (layers.is_ipv6 && l3 + 40 <= bytes.size()) {
    SwapRanges(bytes, l3 + 8, l3 + 24, 16);
  } else {
    return;
  }
  const uint32_t l4 = layers.l4_offset;
  if (layers.l4_offset != PacketLayers::kAbsent &&
      (layers.ip_proto == kProtoTcp || layers.ip_proto == kProtoUdp) &&
      l4 + 4 <= bytes.size()) {
    SwapRanges(bytes, l4, l4 + 2, 2);
  }
}

// The most payload bytes an answer to this UDP request may have when it is
// written in place by ReplyUdpInPlace: from the UDP payload's start to the
// end of the frame (the request's payload and any Ethernet padding after
// it). -1 when the packet cannot be answered in place: not a UDP datagram
// over IPv4 or IPv6 without extension headers, an IPv4 fragment, or sent to
// a group MAC address.
inline int64_t UdpReplyRoom(const PacketView& packet) {
  std::span<const uint8_t> bytes = packet.Bytes();
  const PacketLayers& layers = packet.Layers();
  if (bytes.size() < 14 || IsGroupDestination(bytes) ||
      layers.ip_proto != kProtoUdp ||
      layers.l4_offset == PacketLayers::kAbsent ||
      layers.l3_offset == PacketLayers::kAbsent ||
      layers.payload_offset == PacketLayers::kAbsent ||
      layers.payload_offset != layers.l4_offset + 8u ||
      layers.payload_offset > bytes.size()) {
    return -1;
  }
  const uint32_t l3 = layers.l3_offset;
  if (layers.is_ipv4) {
    // More fragments or a fragment offset: the answer would be one too.
    if (l3 + 20 > layers.l4_offset || (Load16(bytes, l3 + 6) & 0x3fff) != 0) {
      return -1;
    }
  } else if (!layers.is_ipv6 || layers.l4_offset != l3 + 40) {
    return -1;
  }
  return static_cast<int64_t>(bytes.size()) - layers.payload_offset;
}

// Answers a UDP request in place with `reply` as the datagram's payload:
// endpoints swapped (SwapEndpoints), `reply` written from the payload's
// start, the IPv4 total length or IPv6 payload length and the UDP length
// set to fit it (the bytes from its end to the frame's end are zeroed and
// go out as Ethernet padding, so nothing of the request leaks), the IPv4
// header checksum updated and the UDP checksum computed afresh (an IPv4
// datagram sent without one, checksum 0, is answered without one); then
// Reply(). The frame cannot grow: false, and the frame untouched, when
// `reply` is longer than UdpReplyRoom() or that is -1.
inline bool ReplyUdpInPlace(PacketView& packet,
                            std::span<const uint8_t> reply) {
  const int64_t room = UdpReplyRoom(packet);
  if (room < 0 || reply.size() > static_cast<uint64_t>(room)) return false;
  std::span<uint8_t> bytes = packet.Bytes();
  const PacketLayers& layers = packet.Layers();
  const uint32_t l3 = layers.l3_offset;
  const uint32_t l4 = layers.l4_offset;
  const uint32_t payload = layers.payload_offset;
  SwapEndpoints(bytes, layers);
  if (!reply.empty())
    std::memcpy(bytes.data() + payload, reply.data(), reply.size());
  const uint32_t end = payload + static_cast<uint32_t>(reply.size());
  std::fill(bytes.begin() + end, bytes.end(), uint8_t{0});
  const uint16_t udp_length = static_cast<uint16_t>(end - l4);
  Store16(bytes, l4 + 4, udp_length);
  const bool had_checksum = Load16(bytes, l4 + 6) != 0;
  uint64_t acc = 0;
  if (layers.is_ipv4) {
    const uint16_t old_total = Load16(bytes, l3 + 2);
    const uint16_t new_total = static_cast<uint16_t>(end - l3);
    Store16(bytes, l3 + 2, new_total);
    Store16(bytes, l3 + 10,
            UpdateChecksum(Load16(bytes, l3 + 10), old_total, new_total));
    acc = checksum::Add(acc, bytes.data() + l3 + 12, 8);
  } else {
    Store16(bytes, l3 + 4, static_cast<uint16_t>(end - l3 - 40));
    acc = checksum::Add(acc, bytes.data() + l3 + 8, 32);
  }
  Store16(bytes, l4 + 6, 0);
  if (had_checksum || layers.is_ipv6) {
    acc = checksum::AddBe32(acc, udp_length);
    acc = checksum::AddBe32(acc, kProtoUdp);
    acc = checksum::Add(acc, bytes.data() + l4, udp_length);
    const uint16_t sum = static_cast<uint16_t>(~checksum::Fold(acc));
    // 0 means "no checksum" in UDP: a computed 0 goes out as 0xffff.
    Store16(bytes, l4 + 6, sum == 0 ? 0xffff : sum);
  }
  packet.Reply();
  return true;
}

// Turns the ICMP/ICMPv6 echo `request` at bytes[l4] into a `reply` in place,
// its checksum updated incrementally; false (nothing changed) if it is not
// one.
inline bool AnswerEcho(std::span<uint8_t> bytes, uint32_t l4, uint8_t request,
                       uint8_t reply) {
  if (l4 + 4 > bytes.size() || bytes[l4] != request) return false;
  const uint16_t old_word = Load16(bytes, l4);
  bytes[l4] = reply;
  const uint16_t new_word = Load16(bytes, l4);
  Store16(bytes, l4 + 2,
          UpdateChecksum(Load16(bytes, l4 + 2), old_word, new_word));
  return true;
}

// Turns `packet` into its own answer in place, the ping-pong responder of
// `reflect` (and of `pingpong` on passthrough frames): endpoints swapped
// (SwapEndpoints), ICMP and ICMPv6 echo requests turned into echo replies
// (RFC 1624 eqn. 3: one word changes), then Reply() (out of the ingress
// port). False, and the packet untouched, for a frame under 14 bytes or
// sent to a group MAC address.
inline bool ReflectInPlace(PacketView& packet) {
  std::span<uint8_t> bytes = packet.Bytes();
  if (bytes.size() < 14 || IsGroupDestination(bytes)) return false;
  const PacketLayers& layers = packet.Layers();
  SwapEndpoints(bytes, layers);
  const uint32_t l3 = layers.l3_offset;
  const uint32_t l4 = layers.l4_offset;
  const bool ip = (layers.is_ipv4 && l3 + 20 <= bytes.size()) ||
                  (layers.is_ipv6 && l3 + 40 <= bytes.size());
  if (ip && l4 != PacketLayers::kAbsent) {
    if (layers.ip_proto == kProtoIcmp && layers.is_ipv4 &&
        AnswerEcho(bytes, l4, kIcmpEchoRequest, kIcmpEchoReply) &&
        Load16(bytes, l4 + 2) == 0) {
      // Eqn. 3 gives 0x0000 where the right answer is 0xffff when every
      // covered byte is zero (ICMPv4 has no pseudo-header to rule that
      // out); a full sum settles it on this rare path.
      const size_t end = std::min<size_t>(layers.l3_end, bytes.size());
      std::span<uint8_t> icmp = bytes.subspan(l4, end - l4);
      Store16(icmp, 2, 0);
      Store16(icmp, 2, checksum::Compute(icmp.data(), icmp.size()));
    } else if (layers.ip_proto == kProtoIcmpv6 && layers.is_ipv6) {
      AnswerEcho(bytes, l4, kIcmpv6EchoRequest, kIcmpv6EchoReply);
    }
  }
  packet.Reply();
  return true;
}

}  // namespace spinnic::net

#endif  // SPINNIC_HANDLERS_API_NET_H_
