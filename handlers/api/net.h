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

// Swaps the `length` bytes at bytes[a] with those at bytes[b]; the ranges
// must not overlap and the caller checks the bounds.
inline void SwapRanges(std::span<uint8_t> bytes, uint32_t a, uint32_t b,
                       uint32_t length) {
  std::swap_ranges(bytes.begin() + a, bytes.begin() + a + length,
                   bytes.begin() + b);
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
// `reflect` (and of `pingpong` on passthrough frames): Ethernet source and
// destination swapped, IPv4/IPv6 addresses swapped, TCP/UDP ports swapped,
// ICMP and ICMPv6 echo requests turned into echo replies; then Reply() (out
// of the ingress port). Non-IP frames get their MAC addresses swapped only.
// False, and the packet untouched, for a frame under 14 bytes or sent to a
// group (multicast or broadcast) MAC address: its reply would carry a group
// address as its source, which no station may send.
//
// Checksums stay valid without being recomputed over the packet:
// - The IPv4 header checksum is the one's complement of the one's complement
//   sum of the header's 16-bit words. Both addresses are word aligned
//   (offsets 12 and 16), so the swap only reorders the words of that sum,
//   and one's complement addition is commutative.
// - The TCP/UDP/ICMPv6 checksum covers a pseudo-header with both addresses
//   and, for TCP/UDP, both ports in one header: swapping each pair reorders
//   the sum the same way.
// - Echo request to reply changes one word (type, code), so the ICMP
//   checksum is updated incrementally (RFC 1624, eqn. 3).
inline bool ReflectInPlace(PacketView& packet) {
  std::span<uint8_t> bytes = packet.Bytes();
  if (bytes.size() < 14 || (bytes[0] & 0x01) != 0) return false;
  SwapRanges(bytes, 0, 6, 6);

  const PacketLayers& layers = packet.Layers();
  const uint32_t l3 = layers.l3_offset;
  if (layers.is_ipv4 && l3 + 20 <= bytes.size()) {
    SwapRanges(bytes, l3 + 12, l3 + 16, 4);
  } else if (layers.is_ipv6 && l3 + 40 <= bytes.size()) {
    SwapRanges(bytes, l3 + 8, l3 + 24, 16);
  } else {
    packet.Reply();
    return true;
  }

  const uint32_t l4 = layers.l4_offset;
  if (layers.l4_offset != PacketLayers::kAbsent) {
    switch (layers.ip_proto) {
      case kProtoTcp:
      case kProtoUdp:
        if (l4 + 4 <= bytes.size()) SwapRanges(bytes, l4, l4 + 2, 2);
        break;
      case kProtoIcmp:
        if (layers.is_ipv4 &&
            AnswerEcho(bytes, l4, kIcmpEchoRequest, kIcmpEchoReply) &&
            Load16(bytes, l4 + 2) == 0) {
          // Eqn. 3 gives 0x0000 where the right answer is 0xffff when every
          // covered byte is zero (ICMPv4 has no pseudo-header to rule that
          // out); a full sum settles it on this rare path.
          const size_t end = std::min<size_t>(layers.l3_end, bytes.size());
          std::span<uint8_t> icmp = bytes.subspan(l4, end - l4);
          Store16(icmp, 2, 0);
          Store16(icmp, 2, checksum::Compute(icmp.data(), icmp.size()));
        }
        break;
      case kProtoIcmpv6:
        if (layers.is_ipv6) {
          AnswerEcho(bytes, l4, kIcmpv6EchoRequest, kIcmpv6EchoReply);
        }
        break;
      default:
        break;
    }
  }
  packet.Reply();
  return true;
}

}  // namespace spinnic::net

#endif  // SPINNIC_HANDLERS_API_NET_H_
