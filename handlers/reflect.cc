// reflect: sends every packet its match rule gives it back where it came
// from, as a ping-pong responder in place: Ethernet source and destination
// swapped, IPv4/IPv6 addresses swapped, TCP/UDP ports swapped, ICMP and
// ICMPv6 echo requests turned into echo replies; then Reply() (out of the
// ingress port). Non-IP frames get their MAC addresses swapped only.
//
// Frames sent to a group (multicast or broadcast) MAC address are forwarded
// unchanged: their reply would carry a group address as its source, which no
// station may send.
//
// Checksums stay valid without being recomputed over the packet:
// - The IPv4 header checksum is the one's complement of the one's complement
//   sum of the header's 16-bit words. Both addresses are word aligned (offsets
//   12 and 16), so the swap only reorders the words of that sum, and one's
//   complement addition is commutative.
// - The TCP/UDP/ICMPv6 checksum covers a pseudo-header with both addresses
//   and, for TCP/UDP, both ports in one header: swapping each pair reorders
//   the sum the same way.
// - Echo request to reply changes one word (type, code), so the ICMP checksum
//   is updated incrementally (RFC 1624, eqn. 3).
// No state, no parameters.
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <span>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "handlers/api/handler.h"

namespace spinnic {
namespace {

constexpr uint8_t kProtoIcmp = 1;
constexpr uint8_t kProtoTcp = 6;
constexpr uint8_t kProtoUdp = 17;
constexpr uint8_t kProtoIcmpv6 = 58;

constexpr uint8_t kIcmpEchoRequest = 8;
constexpr uint8_t kIcmpEchoReply = 0;
constexpr uint8_t kIcmpv6EchoRequest = 128;
constexpr uint8_t kIcmpv6EchoReply = 129;

void SwapRanges(std::span<uint8_t> bytes, uint32_t a, uint32_t b,
                uint32_t length) {
  std::swap_ranges(bytes.begin() + a, bytes.begin() + a + length,
                   bytes.begin() + b);
}

uint16_t Load16(std::span<const uint8_t> bytes, uint32_t at) {
  return static_cast<uint16_t>(bytes[at] << 8 | bytes[at + 1]);
}

void Store16(std::span<uint8_t> bytes, uint32_t at, uint16_t value) {
  bytes[at] = static_cast<uint8_t>(value >> 8);
  bytes[at + 1] = static_cast<uint8_t>(value);
}

// RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), one's complement arithmetic.
uint16_t UpdateChecksum(uint16_t checksum, uint16_t old_word,
                        uint16_t new_word) {
  uint32_t sum = uint32_t{static_cast<uint16_t>(~checksum)} +
                 static_cast<uint16_t>(~old_word) + new_word;
  sum = (sum & 0xffff) + (sum >> 16);
  sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

class ReflectHandler {
 public:
  static constexpr absl::string_view kName = "reflect";
  static constexpr absl::string_view kDescription =
      "ping-pong: swaps MAC, IP addresses and TCP/UDP ports, answers ICMP "
      "echo, sends the packet back out of its ingress port";
  static constexpr uint32_t kMinStateSize = 0;
  static constexpr std::array<ParamSpec, 0> kParams{};

  static absl::StatusOr<std::unique_ptr<ReflectHandler>> Create(
      const HandlerParams&) {
    return std::make_unique<ReflectHandler>();
  }

  HandlerResult Payload(HandlerContext&, PacketView& packet) {
    std::span<uint8_t> bytes = packet.Bytes();
    if (bytes.size() < 14) return HandlerResult::kSuccess;
    if ((bytes[0] & 0x01) != 0) return HandlerResult::kSuccess;
    SwapRanges(bytes, 0, 6, 6);

    const PacketLayers& layers = packet.Layers();
    const uint32_t l3 = layers.l3_offset;
    if (layers.is_ipv4 && l3 + 20 <= bytes.size()) {
      SwapRanges(bytes, l3 + 12, l3 + 16, 4);
    } else if (layers.is_ipv6 && l3 + 40 <= bytes.size()) {
      SwapRanges(bytes, l3 + 8, l3 + 24, 16);
    } else {
      packet.Reply();
      return HandlerResult::kSuccess;
    }

    const uint32_t l4 = layers.l4_offset;
    if (layers.l4_offset != PacketLayers::kAbsent) {
      switch (layers.ip_proto) {
        case kProtoTcp:
        case kProtoUdp:
          if (l4 + 4 <= bytes.size()) SwapRanges(bytes, l4, l4 + 2, 2);
          break;
        case kProtoIcmp:
          if (layers.is_ipv4) {
            AnswerEcho(bytes, l4, kIcmpEchoRequest, kIcmpEchoReply);
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
    return HandlerResult::kSuccess;
  }

 private:
  static void AnswerEcho(std::span<uint8_t> bytes, uint32_t l4, uint8_t request,
                         uint8_t reply) {
    if (l4 + 4 > bytes.size() || bytes[l4] != request) return;
    uint16_t old_word = Load16(bytes, l4);
    bytes[l4] = reply;
    uint16_t new_word = Load16(bytes, l4);
    Store16(bytes, l4 + 2,
            UpdateChecksum(Load16(bytes, l4 + 2), old_word, new_word));
  }
};

SPINNIC_HANDLER(ReflectHandler);

}  // namespace
}  // namespace spinnic
