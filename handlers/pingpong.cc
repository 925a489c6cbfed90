// pingpong: sPIN's streaming ping-pong (Hoefler et al., SC'17, "sPIN:
// High-performance streaming Processing in the Network"): every payload
// packet is put back to its sender as it arrives, without waiting for the
// rest of its message, so the pong of a long message starts after one
// packet, not after the whole message.
//
// On a DiAD message (diad { stream_id } or diad { write_region }) the
// packet's payload is put to the peer that sent it (PeerPut with an empty
// `peer` and `source` = Message().source), then Consume()d:
//
//   mode=stream  each packet becomes a stream message of its own to stream
//                `reply_stream` (0: the stream id the ping came with,
//                Message().key; a write ping then has none and passes
//                untouched, counted in unsupported)
//   mode=write   each packet is written at reply_address + Message().offset
//                in the sender's region `reply_rkey`, so the pong reassembles
//                exactly in the sender's region, whatever order its packets
//                take
//
// A passthrough frame (a match rule's) is reflected in place as `reflect`
// does (net::ReflectInPlace: MACs, IP addresses and ports swapped, checksums
// kept valid, Reply()). Other transports (RoCE) pass untouched, counted.
//
// A refused put (the channel busy, its window full) is not retried: the
// packet is dropped and counted in puts_refused, so that a DiAD write
// answers `rejected` and its sender knows that a pong is missing.
//
// State layout (uint64, host byte order, relaxed atomics; kMinStateSize 48):
//
//   offset  0: packets        packets answered (put or reflected)
//   offset  8: bytes          payload bytes put back (passthrough: the frame)
//   offset 16: puts_refused   pongs lost to a refused put (packet dropped)
//   offset 24: messages       messages whose last packet was answered
//   offset 32: unsupported    packets passed untouched: other transports
//                             (RoCE), or a write ping in mode=stream
//                             without reply_stream
//   offset 40: not_reflected  passthrough frames to a group MAC (forwarded)
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "handlers/api/handler.h"
#include "handlers/api/net.h"

namespace spinnic {
namespace {

struct PingpongState {
  uint64_t packets;
  uint64_t bytes;
  uint64_t puts_refused;
  uint64_t messages;
  uint64_t unsupported;
  uint64_t not_reflected;
};
static_assert(sizeof(PingpongState) == 48, "the documented layout");

class PingpongHandler {
 public:
  static constexpr absl::string_view kName = "pingpong";
  static constexpr absl::string_view kDescription =
      "streaming ping-pong (sPIN): puts every DiAD packet back to its sender "
      "as a stream message or a write as it arrives; reflects passthrough "
      "frames";
  static constexpr uint32_t kMinStateSize = sizeof(PingpongState);
  static constexpr ParamSpec kParams[] = {
      {.name = "mode",
       .type = ParamType::kString,
       .required = false,
       .default_value = "stream",
       .help = "how a DiAD packet goes back: stream (a stream message to "
               "reply_stream) or write (at reply_address + message offset in "
               "region reply_rkey), e.g. write"},
      {.name = "reply_stream",
       .type = ParamType::kUint,
       .required = false,
       .default_value = "0",
       .help = "mode=stream: the sender's stream id for the pongs (0: the "
               "stream id the ping came with), e.g. 8",
       .max = 0xffffffff},
      {.name = "reply_rkey",
       .type = ParamType::kUint,
       .required = false,
       .default_value = "0",
       .help = "mode=write: rkey of the sender's region the pongs are "
               "written into (its region-register output), e.g. 0x1a2b3c4d",
       .max = 0xffffffff},
      {.name = "reply_address",
       .type = ParamType::kUint,
       .required = false,
       .default_value = "0",
       .help = "mode=write: remote address where the pong's byte 0 goes (the "
               "region's base_address + offset), e.g. 0x37b755711000"},
  };

  static absl::StatusOr<std::unique_ptr<PingpongHandler>> Create(
      const HandlerParams& params) {
    const std::string& mode = params.GetString("mode");
    const uint32_t stream =
        static_cast<uint32_t>(params.GetUint("reply_stream"));
    const uint32_t rkey = static_cast<uint32_t>(params.GetUint("reply_rkey"));
    const uint64_t address = params.GetUint("reply_address");
    if (mode == "stream") {
      return std::unique_ptr<PingpongHandler>(
          new PingpongHandler(PeerPut::Kind::kStream, stream, 0));
    }
    if (mode != "write") {
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter 'mode' = '", mode, "': write stream or write"));
    }
    if (rkey == 0 || address == 0) {
      return absl::InvalidArgumentError(
          "mode=write needs parameters 'reply_rkey' and 'reply_address': the "
          "rkey and base_address (+ offset) of the sender's region the pongs "
          "go to, e.g. reply_rkey=0x1a2b3c4d reply_address=0x37b755711000");
    }
    return std::unique_ptr<PingpongHandler>(
        new PingpongHandler(PeerPut::Kind::kWrite, rkey, address));
  }

  HandlerResult Payload(HandlerContext& ctx, PacketView& packet) {
    PingpongState* state = ctx.StateAs<PingpongState>();
    const MessageInfo& message = packet.Message();
    switch (message.transport) {
      case MessageTransport::kPassthrough:
        if (!net::ReflectInPlace(packet)) {
          if (state != nullptr) AddToCounter(state->not_reflected, 1);
          return HandlerResult::kSuccess;
        }
        if (state != nullptr) {
          AddToCounter(state->packets, 1);
          AddToCounter(state->bytes, packet.Length());
          AddToCounter(state->messages, 1);
        }
        return HandlerResult::kSuccess;
      case MessageTransport::kDiadStream:
      case MessageTransport::kDiadWrite:
        break;
      default:
        if (state != nullptr) AddToCounter(state->unsupported, 1);
        return HandlerResult::kSuccess;
    }
    // Stream pongs without reply_stream go back on the ping's stream id; a
    // write ping has none to give.
    const uint32_t key = key_ != 0 ? key_
                         : message.transport == MessageTransport::kDiadStream
                             ? message.key
                             : 0;
    if (key == 0) {
      if (state != nullptr) AddToCounter(state->unsupported, 1);
      return HandlerResult::kSuccess;
    }
    const std::span<const uint8_t> payload = packet.Payload();
    PeerPut put{
        .kind = kind_, .source = message.source, .key = key, .data = payload};
    if (kind_ == PeerPut::Kind::kWrite) {
      put.address = address_ + message.offset;
    }
    if (!ctx.PutToPeer(put)) {
      if (state != nullptr) AddToCounter(state->puts_refused, 1);
      return HandlerResult::kDrop;
    }
    packet.Consume();
    if (state != nullptr) {
      AddToCounter(state->packets, 1);
      AddToCounter(state->bytes, payload.size());
      if (message.offset + payload.size() >= message.length) {
        AddToCounter(state->messages, 1);
      }
    }
    return HandlerResult::kSuccess;
  }

 private:
  PingpongHandler(PeerPut::Kind kind, uint32_t key, uint64_t address)
      : kind_(kind), key_(key), address_(address) {}

  const PeerPut::Kind kind_;
  const uint32_t key_;      // reply stream id or rkey; 0: the ping's key
  const uint64_t address_;  // mode=write: the pong's byte 0
};

SPINNIC_HANDLER(PingpongHandler);

}  // namespace
}  // namespace spinnic
