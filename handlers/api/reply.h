// Requests and their answers, whatever the transport: how a request/answer
// handler (kvs, cond_read) takes a packet as a request and answers the
// sender of its message. Hot path: no allocation; the reply is copied
// before return.
#ifndef SPINNIC_HANDLERS_API_REPLY_H_
#define SPINNIC_HANDLERS_API_REPLY_H_

#include <cstdint>
#include <span>

#include "handlers/api/context.h"
#include "handlers/api/net.h"
#include "handlers/api/packet.h"

namespace spinnic {

// What a request/answer handler's packet is (TakeRequest).
enum class RequestPacket : uint8_t {
  kRequest,       // answer it; `room` says how many bytes may go back
  kNotUdp,        // passthrough but not a UDP datagram that can be
                  // answered in place: leave it alone (forwarded)
  kContinuation,  // a later packet of a transport's message: consumed,
                  // answered (BAD_REQUEST) at its first
};

// Takes `packet` as a request: on a transport it is consumed (answered, not
// stored) and only the first packet of a message is a request; passthrough
// UDP is answered in place, so `room` is what its frame can hold
// (net::UdpReplyRoom); on a transport `room` is `transport_room`. A
// request is whole when `one_packet`: a transport message of several
// packets is one the handler refuses.
inline RequestPacket TakeRequest(PacketView& packet, int64_t transport_room,
                                 int64_t* room, bool* one_packet) {
  const MessageInfo& message = packet.Message();
  if (message.transport == MessageTransport::kPassthrough) {
    *room = net::UdpReplyRoom(packet);
    *one_packet = true;
    return *room < 0 ? RequestPacket::kNotUdp : RequestPacket::kRequest;
  }
  packet.Consume();
  *room = transport_room;
  *one_packet = message.length == packet.Payload().size();
  return message.offset == 0 ? RequestPacket::kRequest
                             : RequestPacket::kContinuation;
}

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
                        .key = reply_stream,
                        .data = reply})
             ? ReplyOutcome::kSent
             : ReplyOutcome::kRefused;
}

// AnswerSender, adding what did not go to the handler's state counters
// `refused` or `unanswered` (either may be null: no state memory).
inline void AnswerSenderCounted(HandlerContext& ctx, PacketView& packet,
                                uint32_t reply_stream,
                                std::span<const uint8_t> reply,
                                uint64_t* refused, uint64_t* unanswered) {
  uint64_t* counter = nullptr;
  switch (AnswerSender(ctx, packet, reply_stream, reply)) {
    case ReplyOutcome::kSent:
      return;
    case ReplyOutcome::kRefused:
      counter = refused;
      break;
    case ReplyOutcome::kUnanswered:
      counter = unanswered;
      break;
  }
  if (counter != nullptr) AddToCounter(*counter, 1);
}

}  // namespace spinnic

#endif  // SPINNIC_HANDLERS_API_REPLY_H_
