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
#include "handlers/api/net.h"

namespace spinnic {
namespace {

constexpr size_t kMaxKey = 64;

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
    // Bounded by the IP datagram's end: Ethernet padding on short frames is
    // not payload and is not covered by the checksum.
    std::span<uint8_t> payload = packet.Payload();
    if (payload.empty() || layers.l4_offset == PacketLayers::kAbsent) {
      return HandlerResult::kSuccess;
    }
    std::span<uint8_t> bytes = packet.Bytes();
    const uint32_t l4 = layers.l4_offset;
    uint32_t checksum_at = PacketLayers::kAbsent;
    if (fix_checksum_) {
      if (IsFragment(packet)) return HandlerResult::kSuccess;
      checksum_at = net::L4ChecksumOffset(layers);
    }
    if (checksum_at != PacketLayers::kAbsent &&
        layers.ip_proto == net::kProtoUdp &&
        net::Load16(bytes, checksum_at) == 0) {
      checksum_at = PacketLayers::kAbsent;
    }

    // Sums of the old and new payload as 16-bit words aligned to the L4
    // header: a byte at an even distance from it is a word's high byte.
    uint64_t old_sum = 0;
    uint64_t new_sum = 0;
    uint32_t high = (layers.payload_offset - l4) % 2 == 0 ? 8 : 0;
    uint32_t k = 0;
    for (uint8_t& byte : payload) {
      uint8_t old_byte = byte;
      uint8_t new_byte = old_byte ^ key_[k];
      byte = new_byte;
      old_sum += uint64_t{old_byte} << high;
      new_sum += uint64_t{new_byte} << high;
      high ^= 8;
      if (++k == key_length_) k = 0;
    }

    if (checksum_at != PacketLayers::kAbsent) {
      uint16_t updated =
          net::UpdateChecksum(net::Load16(bytes, checksum_at),
                              net::Fold(old_sum), net::Fold(new_sum));
      // In UDP a computed 0 is sent as all ones: 0 means "no checksum".
      if (updated == 0 && layers.ip_proto == net::kProtoUdp) updated = 0xffff;
      net::Store16(bytes, checksum_at, updated);
    }
    return HandlerResult::kSuccess;
  }

 private:
  XorPayloadHandler(std::span<const uint8_t> key, bool fix_checksum)
      : key_length_(static_cast<uint32_t>(key.size())),
        fix_checksum_(fix_checksum) {
    std::copy(key.begin(), key.end(), key_.begin());
  }

  // The classifier gives later fragments no L4 header, so only a first
  // fragment reaches here; it is recognised by MF (IPv4) or by a fragment
  // header between the IPv6 header and the L4 header.
  static bool IsFragment(const PacketView& packet) {
    const PacketLayers& layers = packet.Layers();
    std::span<const uint8_t> bytes = packet.Bytes();
    const uint32_t l3 = layers.l3_offset;
    if (layers.is_ipv4) {
      return (net::Load16(bytes, l3 + 6) & 0x3fff) != 0;
    }
    if (!layers.is_ipv6) return false;
    uint8_t next = bytes[l3 + 6];
    uint32_t at = l3 + 40;
    // Bounded by the L4 offset: every extension header is at least 8 bytes.
    while (at + 2 <= layers.l4_offset) {
      if (next == net::kProtoIpv6Frag) return true;
      uint32_t length = next == net::kProtoAh ? (bytes[at + 1] + 2u) * 4u
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
