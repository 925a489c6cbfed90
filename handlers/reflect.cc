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
#include "dataplane/common/checksum.h"
#include "handlers/api/handler.h"
#include "handlers/api/net.h"

namespace spinnic {
namespace {

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
    if (net::IsGroupDestination(bytes)) return HandlerResult::kSuccess;
    // MACs, IP addresses and TCP/UDP ports (net.h); ICMP is answered here.
    const PacketLayers& layers = packet.Layers();
    net::SwapEndpoints(bytes, layers);
    if (!(layers.is_ipv4 && layers.l3_offset + 20u <= bytes.size()) &&
        !(layers.is_ipv6 && layers.l3_offset + 40u <= bytes.size())) {
      packet.Reply();
      return HandlerResult::kSuccess;
    }

    const uint32_t l4 = layers.l4_offset;
    if (layers.l4_offset != PacketLayers::kAbsent) {
      switch (layers.ip_proto) {
        case net::kProtoIcmp:
          if (layers.is_ipv4 &&
              AnswerEcho(bytes, l4, net::kIcmpEchoRequest,
                         net::kIcmpEchoReply) &&
              net::Load16(bytes, l4 + 2) == 0) {
            // Eqn. 3 gives 0x0000 where the right answer is 0xffff when
            // every covered byte is zero (ICMPv4 has no pseudo-header to
            // rule that out); a full sum settles it on this rare path.
            size_t end = std::min<size_t>(layers.l3_end, bytes.size());
            RecomputeIcmpChecksum(bytes.subspan(l4, end - l4));
          }
          break;
        case net::kProtoIcmpv6:
          if (layers.is_ipv6) {
            AnswerEcho(bytes, l4, net::kIcmpv6EchoRequest,
                       net::kIcmpv6EchoReply);
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
  // Turns an echo request into a reply in place; false if it is not one.
  static bool AnswerEcho(std::span<uint8_t> bytes, uint32_t l4, uint8_t request,
                         uint8_t reply) {
    if (l4 + 4 > bytes.size() || bytes[l4] != request) return false;
    uint16_t old_word = net::Load16(bytes, l4);
    bytes[l4] = reply;
    uint16_t new_word = net::Load16(bytes, l4);
    net::Store16(
        bytes, l4 + 2,
        net::UpdateChecksum(net::Load16(bytes, l4 + 2), old_word, new_word));
    return true;
  }

  // Sets the checksum of the ICMPv4 message `icmp` from its bytes.
  static void RecomputeIcmpChecksum(std::span<uint8_t> icmp) {
    net::Store16(icmp, 2, 0);
    net::Store16(icmp, 2, checksum::Compute(icmp.data(), icmp.size()));
  }
};

SPINNIC_HANDLER(ReflectHandler);

}  // namespace
}  // namespace spinnic
