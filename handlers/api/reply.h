// Answering the sender of the message a handler runs on, whatever the
// transport: the one reply path of request/answer handlers (kvs,
// cond_read). Hot path: no allocation; the reply is copied before return.
#ifndef SPINNIC_HANDLERS_API_REPLY_H_
#define SPINNIC_HANDLERS_API_REPLY_H_

#include <cstdint>
#include <span>

#include "handlers/api/context.h"
#include "handlers/api/net.h"
#include "handlers/api/packet.h"

namespace spinnic {

enum class ReplyOutcome : uint8_t {
  kSent,
  kRefused,     // the transport could not take it now, or it did not fit
  kUnanswered,  // a DiAD request with no reply stream to answer on
};

// Sends `reply` to the sender of `packet`'s message:
//   passthrough UDP  in place (net::ReplyUdpInPlace); a frame that cannot
//                    hold it is dropped (kRefused)
//   RoCE             a SEND on the message's queue pair
//   DiAD             a stream message on `reply_stream` to the sender's
//                    slot, on this HPU's channel (0: kUnanswered)
// A refusal is for the caller to count, never to retry in a loop.
inline ReplyOutcome AnswerSender(HandlerContext& ctx, PacketView& packet,
                                 uint32_t reply_stream,
                                 std::span<const uint8_t> reply) {
  const MessageInfo& message = packet.Message();
  switch (message.transport) {
    case MessageTransport::kPassthrough:
      if (net::ReplyUdpInPlace(packet, reply)) return ReplyOutcome::kSent;
      packet.Drop();
      return ReplyOutcome::kRefused;
    case MessageTransport::kRoceSend:
    case MessageTransport::kRoceWrite:
      return ctx.PutToPeer({.kind = PeerPut::Kind::kStream, .data = reply})
                 ? ReplyOutcome::kSent
                 : ReplyOutcome::kRefused;
    case MessageTransport::kDiadStream:
    case MessageTransport::kDiadWrite:
      break;
  }
  if (reply_stream == 0) return ReplyOutcome::kUnanswered;
  return ctx.PutToPeer({.kind = PeerPut::Kind::kStream,
                        .source = message.source,
                        .channel = static_cast<uint16_t>(ctx.LcoreIndex()),
                        .key = reply_stream,
                        .data = reply})
             ? ReplyOutcome::kSent
             : ReplyOutcome::kRefused;
}

}  // namespace spinnic

#endif  // SPINNIC_HANDLERS_API_REPLY_H_
