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

#include <cstdint>
#include <span>

#include "dataplane/common/byte_order.h"
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

}  // namespace spinnic::net

#endif  // SPINNIC_HANDLERS_API_NET_H_
