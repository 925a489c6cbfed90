// cond_read: a conditional read of bound region 0. A request names a range
// of the region and the version the requester expects; the handler answers
// with the data when the region's u64 version word (at `version_offset`)
// equals it, else with a short refusal that carries the current version. A
// request is one packet: a passthrough UDP datagram (answered in place, out
// of the ingress port), a DiAD stream message or a RoCE SEND (consumed,
// answered with a stream message to the sender on stream `reply_stream`).
//
// Request (the packet's payload, little-endian, 24 bytes; bytes after them
// are ignored, so a UDP request pads its payload with them to make room):
//
//   u32 request_id, u32 length, u64 offset, u64 expected_version
//
// Reply: u32 request_id, u8 status, 3 zero bytes, u64 current_version,
// then `length` bytes of data (OK only). Status: 0 OK, 1 REFUSED (version
// mismatch, or the version changed during the copy), 2 BAD_REQUEST (short
// request, length above max_length, range past the region's end), 3
// NO_ROOM (a UDP request whose frame cannot hold the data: pad its payload
// to at least 16 + length bytes).
//
// The version word is read with acquire, the data copied, then after an
// acquire fence the word is read again: when it changed, the answer is
// REFUSED with the new version, so a reply never carries data of two
// versions. The host writer keeps its side of that seqlock: it changes the
// word before touching the data (e.g. to an odd value) and stores the new
// version with release after it.
//
// State layout (uint64, host byte order, relaxed atomics; kMinStateSize
// 80): reads, served, refused, bad, replies_refused, bytes_served, no_room,
// unanswered, not_udp, bad_region (see docs/handlers.md).
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "dataplane/common/byte_order.h"
#include "handlers/api/handler.h"
#include "handlers/api/net.h"
#include "handlers/api/reply.h"

namespace spinnic {
namespace {

struct CondReadState {
  uint64_t reads;
  uint64_t served;
  uint64_t refused;
  uint64_t bad;
  uint64_t replies_refused;
  uint64_t bytes_served;
  uint64_t no_room;
  uint64_t unanswered;
  uint64_t not_udp;
  uint64_t bad_region;
};
static_assert(sizeof(CondReadState) == 80, "the documented layout");

enum Status : uint8_t {
  kOk = 0,
  kRefused = 1,
  kBadRequest = 2,
  kNoRoom = 3,
};

constexpr uint32_t kRequestBytes = 24;
constexpr uint32_t kReplyHeaderBytes = 16;
constexpr uint32_t kMaxLengthLimit = 4096;

class CondReadHandler {
 public:
  static constexpr absl::string_view kName = "cond_read";
  static constexpr absl::string_view kDescription =
      "conditional read of bound region 0: answers a range's bytes when the "
      "region's u64 version word equals the request's, else the current "
      "version";
  static constexpr uint32_t kMinStateSize = sizeof(CondReadState);
  static constexpr uint32_t kMinRegions = 1;
  static constexpr ParamSpec kParams[] = {
      {.name = "version_offset",
       .type = ParamType::kUint,
       .required = false,
       .default_value = "0",
       .help = "byte offset of the u64 version word in region 0, a multiple "
               "of 8, e.g. 0",
       .max = uint64_t{1} << 48},
      {.name = "max_length",
       .type = ParamType::kUint,
       .required = false,
       .default_value = "1024",
       .help = "longest read a request may ask for, 1..4096 bytes, e.g. 1024",
       .min = 1,
       .max = kMaxLengthLimit},
      {.name = "reply_stream",
       .type = ParamType::kUint,
       .required = false,
       .default_value = "0",
       .help = "DiAD stream id the answers to DiAD/RoCE requests go to, at "
               "the sender; 0: answer UDP requests only, e.g. 9",
       .max = UINT32_MAX},
  };

  static absl::StatusOr<std::unique_ptr<CondReadHandler>> Create(
      const HandlerParams& params) {
    const uint64_t version_offset = params.GetUint("version_offset");
    if (version_offset % 8 != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter 'version_offset' = ", version_offset,
          ": write a multiple of 8 (the version word is an aligned u64), "
          "e.g. ",
          version_offset / 8 * 8));
    }
    return std::unique_ptr<CondReadHandler>(new CondReadHandler(
        version_offset, static_cast<uint32_t>(params.GetUint("max_length")),
        static_cast<uint32_t>(params.GetUint("reply_stream"))));
  }

  HandlerResult Payload(HandlerContext& ctx, PacketView& packet) {
    CondReadState* state = ctx.StateAs<CondReadState>();
    const std::span<const uint8_t> region = Region(ctx);
    if (region.empty()) {
      Count(state, &CondReadState::bad_region);
      return HandlerResult::kFail;
    }
    int64_t room;
    bool one_packet;
    switch (TakeRequest(packet, kReplyHeaderBytes + kMaxLengthLimit, &room,
                        &one_packet)) {
      case RequestPacket::kRequest:
        break;
      case RequestPacket::kNotUdp:
        Count(state, &CondReadState::not_udp);
        return HandlerResult::kSuccess;  // not a request: forwarded as is
      case RequestPacket::kContinuation:
        return HandlerResult::kSuccess;
    }
    const std::span<const uint8_t> request = packet.Payload();
    if (request.size() < 4) {
      // Not even the request id: nobody to answer.
      Count(state, &CondReadState::bad);
      packet.Drop();
      return HandlerResult::kDrop;
    }
    Count(state, &CondReadState::reads);
    // Only loaded: a read-only region is never written through it.
    std::atomic_ref<uint64_t> version(*reinterpret_cast<uint64_t*>(
        const_cast<uint8_t*>(region.data()) + version_offset_));

    std::array<uint8_t, kReplyHeaderBytes + kMaxLengthLimit> reply{};
    std::memcpy(reply.data(), request.data(), 4);  // request_id
    Status status = kBadRequest;
    uint32_t length = 0;
    uint64_t current = version.load(std::memory_order_acquire);
    if (one_packet && request.size() >= kRequestBytes) {
      length = LoadLe32(request.data() + 4);
      const uint64_t offset = LoadLe64(request.data() + 8);
      const uint64_t expected = LoadLe64(request.data() + 16);
      if (length > max_length_ || offset > region.size() ||
          length > region.size() - offset) {
        status = kBadRequest;
      } else if (current != expected) {
        status = kRefused;
      } else if (kReplyHeaderBytes + length > room) {
        status = kNoRoom;
      } else {
        if (length != 0) {
          std::memcpy(reply.data() + kReplyHeaderBytes, region.data() + offset,
                      length);
        }
        // The seqlock's second read: data copied under another version
        // is refused, never sent.
        std::atomic_thread_fence(std::memory_order_acquire);
        current = version.load(std::memory_order_relaxed);
        status = current == expected ? kOk : kRefused;
      }
    }
    switch (status) {
      case kOk:
        Count(state, &CondReadState::served);
        if (state != nullptr) AddToCounter(state->bytes_served, length);
        break;
      case kRefused:
        Count(state, &CondReadState::refused);
        break;
      case kBadRequest:
        Count(state, &CondReadState::bad);
        break;
      case kNoRoom:
        Count(state, &CondReadState::no_room);
        break;
    }
    reply[4] = status;
    StoreLe64(reply.data() + 8, current);
    const uint32_t reply_len =
        kReplyHeaderBytes + (status == kOk ? length : 0u);
    Answer(ctx, packet, state, {reply.data(), reply_len});
    return packet.GetDisposition() == Disposition::kDrop
               ? HandlerResult::kDrop
               : HandlerResult::kSuccess;
  }

 private:
  CondReadHandler(uint64_t version_offset, uint32_t max_length,
                  uint32_t reply_stream)
      : version_offset_(version_offset),
        max_length_(max_length),
        reply_stream_(reply_stream) {}

  static void Count(CondReadState* state, uint64_t CondReadState::*field) {
    if (state != nullptr) AddToCounter(state->*field, 1);
  }

  // Region 0 when it can be read and holds the version word (8-byte aligned
  // in memory), else empty.
  std::span<const uint8_t> Region(const HandlerContext& ctx) const {
    return ctx.FirstRegion({.min_bytes = version_offset_ + 8, .align = 8});
  }

  // Sends `reply` to the request's sender (handlers/api/reply.h) and
  // counts what did not go.
  void Answer(HandlerContext& ctx, PacketView& packet, CondReadState* state,
              std::span<const uint8_t> reply) const {
    AnswerSenderCounted(ctx, packet, reply_stream_, reply,
                        state != nullptr ? &state->replies_refused : nullptr,
                        state != nullptr ? &state->unanswered : nullptr);
  }

  const uint64_t version_offset_;
  const uint32_t max_length_;
  const uint32_t reply_stream_;
};

SPINNIC_HANDLER(CondReadHandler);

}  // namespace
}  // namespace spinnic
