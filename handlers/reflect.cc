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
// The work is net::ReflectInPlace (handlers/api/net.h), which `pingpong`
// shares for passthrough frames; its comment says how every checksum stays
// valid without being recomputed over the packet.
// No state, no parameters.
#include <array>
#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
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
    net::ReflectInPlace(packet);  // a group address: forwarded untouched
    return HandlerResult::kSuccess;
  }
};

SPINNIC_HANDLER(ReflectHandler);

}  // namespace
}  // namespace spinnic
