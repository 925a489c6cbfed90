// xor_payload: XORs the L4 payload (after the TCP/UDP/ICMP/ICMPv6 header, up
// to the end of the IP payload, so never Ethernet padding) in place with a
// repeating key, key[0] on the first payload byte of every packet. Applying
// it twice with the same key restores the packet. No state.
//
// With fix_checksum (the default) the TCP/UDP/ICMP/ICMPv6 checksum is
// updated so that the frame stays valid. The update is incremental (RFC
// 1624, eqn. 3: HC' = ~(~HC + ~m + m') summed over the payload words) rather
// than a recomputation from scratch:
// - it costs the same single pass over the payload, fused with the XOR;
// - a packet that arrived with a bad checksum still has a bad one, so
//   corruption before the appliance stays detectable at the receiver;
// - it needs no pseudo-header, so IPv6 routing headers (whose pseudo-header
//   names the final destination) need no special case.
// A UDP checksum of 0 (sender did not checksum) stays 0. IP fragments are
// passed on unchanged when fix_checksum is set: the checksum in the first
// fragment covers bytes this packet does not hold, so no valid result exists.
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "handlers/api/handler.h"

namespace spinnic {
namespace {

constexpr size_t kMaxKey = 64;

constexpr uint8_t kProtoIcmp = 1;
constexpr uint8_t kProtoTcp = 6;
constexpr uint8_t kProtoUdp = 17;
constexpr uint8_t kProtoIcmpv6 = 58;
constexpr uint8_t kIpv6Fragment = 44;

uint16_t Load16(std::span<const uint8_t> bytes, uint32_t at) {
  return static_cast<uint16_t>(bytes[at] << 8 | bytes[at + 1]);
}

// Reduces a plain sum of 16-bit words to 16 bits with end-around carry.
uint16_t Fold(uint64_t sum) {
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(sum);
}

// Where the checksum sits in the L4 header; 0 when the protocol has none we
// know how to keep valid.
uint32_t ChecksumOffset(const PacketLayers& layers) {
  switch (layers.ip_proto) {
    case kProtoTcp:
      return 16;
    case kProtoUdp:
      return 6;
    case kProtoIcmp:
      return layers.is_ipv4 ? 2 : 0;
    case kProtoIcmpv6:
      return layers.is_ipv6 ? 2 : 0;
    default:
      return 0;
  }
}

class XorPayloadHandler {
 public:
  static constexpr absl::string_view kName = "xor_payload";
  static constexpr absl::string_view kDescription =
      "XORs the TCP/UDP/ICMP payload in place with a repeating key and keeps "
      "the checksum valid";
  static constexpr uint32_t kMinStateSize = 0;
  static constexpr ParamSpec kParams[] = {
      {.name = "key",
       .type = ParamType::kBytes,
       .required = true,
       .default_value = "",
       .help = "hex bytes, 1 to 64, e.g. 5a or deadbeef: XORed over the "
               "payload, repeating from its first byte"},
      {.name = "fix_checksum",
       .type = ParamType::kBool,
       .required = false,
       .default_value = "true",
       .help = "true: update the TCP/UDP/ICMP checksum so the frame stays "
               "valid (IP fragments then pass unchanged); false: leave it "
               "(receivers will drop the packet)"},
  };

  static absl::StatusOr<std::unique_ptr<XorPayloadHandler>> Create(
      const HandlerParams& params) {
    const std::vector<uint8_t>& key = params.GetBytes("key");
    if (key.empty() || key.size() > kMaxKey) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter 'key' has ", key.size(), " bytes: write 1 to ", kMaxKey,
          " hex bytes, e.g. key=5a"));
    }
    return std::unique_ptr<XorPayloadHandler>(
        new XorPayloadHandler(key, params.GetBool("fix_checksum")));
  }

  HandlerResult Payload(HandlerContext&, PacketView& packet) {
    const PacketLayers& layers = packet.Layers();
    if (layers.payload_offset == PacketLayers::kAbsent ||
        layers.l4_offset == PacketLayers::kAbsent) {
      return HandlerResult::kSuccess;
    }
    std::span<uint8_t> bytes = packet.Bytes();
    const uint32_t start = layers.payload_offset;
    const uint32_t end = IpPayloadEnd(packet);
    if (start >= end) return HandlerResult::kSuccess;

    const uint32_t l4 = layers.l4_offset;
    uint32_t checksum_at = 0;
    if (fix_checksum_) {
      if (IsFragment(packet)) return HandlerResult::kSuccess;
      uint32_t offset = ChecksumOffset(layers);
      if (offset != 0 && l4 + offset + 2 <= start) checksum_at = l4 + offset;
    }
    if (checksum_at != 0 && layers.ip_proto == kProtoUdp &&
        Load16(bytes, checksum_at) == 0) {
      checksum_at = 0;
    }

    // Sums of the old and new payload as 16-bit words aligned to the L4
    // header: a byte at an even distance from it is a word's high byte.
    uint64_t old_sum = 0;
    uint64_t new_sum = 0;
    uint32_t high = (start - l4) % 2 == 0 ? 8 : 0;
    uint32_t k = 0;
    for (uint32_t i = start; i < end; ++i) {
      uint8_t old_byte = bytes[i];
      uint8_t new_byte = old_byte ^ key_[k];
      bytes[i] = new_byte;
      old_sum += uint64_t{old_byte} << high;
      new_sum += uint64_t{new_byte} << high;
      high ^= 8;
      if (++k == key_length_) k = 0;
    }

    if (checksum_at != 0) {
      uint16_t checksum = Load16(bytes, checksum_at);
      uint64_t sum = uint64_t{static_cast<uint16_t>(~checksum)} +
                     static_cast<uint16_t>(~Fold(old_sum)) + Fold(new_sum);
      uint16_t updated = static_cast<uint16_t>(~Fold(sum));
      // In UDP a computed 0 is sent as all ones: 0 means "no checksum".
      if (updated == 0 && layers.ip_proto == kProtoUdp) updated = 0xffff;
      bytes[checksum_at] = static_cast<uint8_t>(updated >> 8);
      bytes[checksum_at + 1] = static_cast<uint8_t>(updated);
    }
    return HandlerResult::kSuccess;
  }

 private:
  XorPayloadHandler(std::span<const uint8_t> key, bool fix_checksum)
      : key_length_(static_cast<uint32_t>(key.size())),
        fix_checksum_(fix_checksum) {
    std::copy(key.begin(), key.end(), key_.begin());
  }

  // One past the last byte of the IP payload: Ethernet padding on short
  // frames is not payload and is not covered by the checksum.
  static uint32_t IpPayloadEnd(const PacketView& packet) {
    const PacketLayers& layers = packet.Layers();
    std::span<const uint8_t> bytes = packet.Bytes();
    uint32_t l3 = layers.l3_offset;
    uint32_t end = packet.Length();
    if (layers.is_ipv4 && l3 + 4 <= bytes.size()) {
      end = l3 + Load16(bytes, l3 + 2);
    } else if (layers.is_ipv6 && l3 + 6 <= bytes.size()) {
      // The classifier does not take jumbograms (payload length 0), so this
      // length is the datagram's.
      end = l3 + 40 + Load16(bytes, l3 + 4);
    }
    return std::min(end, packet.Length());
  }

  // The classifier gives later fragments no L4 header, so only a first
  // fragment reaches here; it is recognised by MF (IPv4) or by a fragment
  // header between the IPv6 header and the L4 header.
  static bool IsFragment(const PacketView& packet) {
    const PacketLayers& layers = packet.Layers();
    std::span<const uint8_t> bytes = packet.Bytes();
    const uint32_t l3 = layers.l3_offset;
    if (layers.is_ipv4) {
      return (Load16(bytes, l3 + 6) & 0x3fff) != 0;
    }
    if (!layers.is_ipv6) return false;
    uint8_t next = bytes[l3 + 6];
    uint32_t at = l3 + 40;
    // Bounded by the L4 offset: every extension header is at least 8 bytes.
    while (at + 2 <= layers.l4_offset) {
      if (next == kIpv6Fragment) return true;
      uint32_t length = next == 51 ? (bytes[at + 1] + 2u) * 4u  // AH
                                   : (bytes[at + 1] + 1u) * 8u;
      next = bytes[at];
      at += length;
    }
    return false;
  }

  std::array<uint8_t, kMaxKey> key_{};
  const uint32_t key_length_;
  const bool fix_checksum_;
};

SPINNIC_HANDLER(XorPayloadHandler);

}  // namespace
}  // namespace spinnic
