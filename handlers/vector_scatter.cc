// vector_scatter: the MPI vector datatype of sPIN (Hoefler et al., SC'17,
// "sPIN: High-performance streaming Processing in the Network", the
// datatype use case). The sender packs `count` blocks of `blocklen` bytes
// back to back; the NIC unpacks them into host memory as the packets arrive,
// block i at `base + i * stride` of bound region 0, so the host never copies
// the message again. `count` is the message length / blocklen (a last
// partial block lands at the start of its slot).
//
//   Header      checks the whole message's extent against region 0 once, so
//               that a message that does not fit writes nothing at all
//   Payload     places this packet's payload by its message offset
//               (PacketView::Message().offset: a packet may start or end
//               mid-block), then consumes the packet
//   Completion  counts the message as placed or failed
//
// Packets are consumed (Disposition::kConsume), not dropped: the handler took
// the bytes, so a DiAD write still succeeds without storing the packed bytes
// at its own address, a stream message is not put in the stream ring, and
// the engine counts no drop (kDrop would count every packet in the ECTX's
// `dropped` and make a DiAD write answer `rejected`).
//
// Where the transport does not know the message length yet (a RoCE SEND
// before its last packet: MessageInfo.length 0), Header cannot check the
// extent; each Payload checks its own packet's extent, so nothing is ever
// written out of bounds, but such a message may be placed in part before a
// packet fails.
//
// State layout (uint64, host byte order, relaxed atomics; kMinStateSize 48):
//
//   offset  0: bytes          payload bytes placed into the region
//   offset  8: messages       messages placed whole (no packet dropped)
//   offset 16: failed         messages that ended with dropped bytes (a FAIL
//                             below, or flow control)
//   offset 24: out_of_range   FAILs: the message's (or a packet's) extent
//                             runs past region 0's end
//   offset 32: not_writable   FAILs: region 0 lacks local_write
//   offset 40: events_refused events not raised because the queue was full
//
// With `event` set, the packet that ends a message raises that event code
// with 16 bytes: uint64 message length (bytes placed), uint32
// MessageInfo.source, uint32 MessageInfo.transport. Every earlier packet was
// placed by then: a failed packet fails the rest of its message.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "handlers/api/handler.h"

namespace spinnic {
namespace {

struct VectorScatterState {
  uint64_t bytes;
  uint64_t messages;
  uint64_t failed;
  uint64_t out_of_range;
  uint64_t not_writable;
  uint64_t events_refused;
};
static_assert(sizeof(VectorScatterState) == 48, "the documented layout");

struct VectorScatterEvent {
  uint64_t length;
  uint32_t source;
  uint32_t transport;
};
static_assert(sizeof(VectorScatterEvent) == 16, "the documented event");

class VectorScatterHandler {
 public:
  static constexpr absl::string_view kName = "vector_scatter";
  static constexpr absl::string_view kDescription =
      "MPI vector datatype (sPIN): scatters a packed message of blocklen-byte "
      "blocks into bound region 0, block i at base + i * stride; consumes "
      "the packets";
  static constexpr uint32_t kMinStateSize = sizeof(VectorScatterState);
  static constexpr uint32_t kMinRegions = 1;
  static constexpr ParamSpec kParams[] = {
      {.name = "blocklen",
       .type = ParamType::kUint,
       .required = true,
       .help = "bytes per block in the packed message, e.g. 64",
       .min = 1,
       .max = uint64_t{1} << 32},
      {.name = "stride",
       .type = ParamType::kUint,
       .required = true,
       .help = "bytes from one block's start to the next one's in the region, "
               "at least blocklen (equal: contiguous), e.g. 256",
       .min = 1,
       .max = uint64_t{1} << 40},
      {.name = "base",
       .type = ParamType::kUint,
       .required = false,
       .default_value = "0",
       .help = "byte offset of block 0 in bound region 0"},
      {.name = "event",
       .type = ParamType::kUint,
       .required = false,
       .default_value = "0",
       .help = "event code raised when a message is placed (0: none; below "
               "0xffff0000, which the engine owns), e.g. 0x5653",
       .max = 0xfffeffff},
  };

  static absl::StatusOr<std::unique_ptr<VectorScatterHandler>> Create(
      const HandlerParams& params) {
    const uint64_t blocklen = params.GetUint("blocklen");
    const uint64_t stride = params.GetUint("stride");
    if (stride < blocklen) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter 'stride' = ", stride, " < blocklen ", blocklen,
          ": blocks would overlap; write stride >= blocklen (equal for a "
          "contiguous copy)"));
    }
    return std::unique_ptr<VectorScatterHandler>(new VectorScatterHandler(
        blocklen, stride, params.GetUint("base"),
        static_cast<uint32_t>(params.GetUint("event"))));
  }

  HandlerResult Header(HandlerContext& ctx, PacketView& packet) {
    VectorScatterState* state = ctx.StateAs<VectorScatterState>();
    const BoundRegion* region = Region(ctx);
    if (region == nullptr) {
      if (state != nullptr) AddToCounter(state->not_writable, 1);
      return HandlerResult::kFail;
    }
    // The whole message at once where its length is known: all or nothing.
    const uint64_t length = packet.Message().length;
    if (length != 0 && !Fits(length - 1, region->bytes.size())) {
      if (state != nullptr) AddToCounter(state->out_of_range, 1);
      return HandlerResult::kFail;
    }
    return HandlerResult::kProcessData;
  }

  HandlerResult Payload(HandlerContext& ctx, PacketView& packet) {
    VectorScatterState* state = ctx.StateAs<VectorScatterState>();
    const BoundRegion* region = Region(ctx);
    if (region == nullptr) {
      if (state != nullptr) AddToCounter(state->not_writable, 1);
      return HandlerResult::kFail;
    }
    const std::span<const uint8_t> payload = packet.Payload();
    const MessageInfo& message = packet.Message();
    const uint64_t offset = message.offset;
    const uint64_t size = payload.size();
    if (size != 0) {
      // The extent grows with the offset: its last byte bounds the packet.
      uint64_t last;
      if (__builtin_add_overflow(offset, size - 1, &last) ||
          !Fits(last, region->bytes.size())) {
        if (state != nullptr) AddToCounter(state->out_of_range, 1);
        return HandlerResult::kFail;
      }
      Scatter(payload, offset, region->bytes.data());
      if (state != nullptr) AddToCounter(state->bytes, size);
    }
    packet.Consume();
    if (event_ != 0 && message.length != 0 && offset + size == message.length) {
      VectorScatterEvent event{
          .length = message.length,
          .source = message.source,
          .transport = static_cast<uint32_t>(message.transport)};
      if (!ctx.RaiseEvent(event_, {reinterpret_cast<const uint8_t*>(&event),
                                   sizeof event}) &&
          state != nullptr) {
        AddToCounter(state->events_refused, 1);
      }
    }
    return HandlerResult::kSuccess;
  }

  HandlerResult Completion(HandlerContext& ctx, uint64_t dropped_bytes,
                           bool flow_control_triggered) {
    VectorScatterState* state = ctx.StateAs<VectorScatterState>();
    if (state == nullptr) return HandlerResult::kSuccess;
    // Every placed packet is consumed; a dropped byte means a FAIL (or
    // flow control) left the message incomplete.
    if (dropped_bytes == 0 && !flow_control_triggered) {
      AddToCounter(state->messages, 1);
    } else {
      AddToCounter(state->failed, 1);
    }
    return HandlerResult::kSuccess;
  }

 private:
  VectorScatterHandler(uint64_t blocklen, uint64_t stride, uint64_t base,
                       uint32_t event)
      : blocklen_(blocklen), stride_(stride), base_(base), event_(event) {}

  // Region 0 when the handler may write it, else null.
  static const BoundRegion* Region(const HandlerContext& ctx) {
    std::span<const BoundRegion> regions = ctx.Regions();
    if (regions.empty() || !regions[0].writable) return nullptr;
    return &regions[0];
  }

  // Whether message byte `last` (and so every byte before it) lands inside a
  // region of `region_size` bytes. Overflow-checked: the parameters allow
  // products past 2^64.
  bool Fits(uint64_t last, uint64_t region_size) const {
    uint64_t at;
    if (__builtin_mul_overflow(last / blocklen_, stride_, &at) ||
        __builtin_add_overflow(at, last % blocklen_, &at) ||
        __builtin_add_overflow(at, base_, &at)) {
      return false;
    }
    return at < region_size;
  }

  // Places `payload`, which starts at message byte `offset`; the caller
  // checked the extent.
  void Scatter(std::span<const uint8_t> payload, uint64_t offset,
               uint8_t* region) const {
    const uint8_t* src = payload.data();
    uint64_t left = payload.size();
    if (stride_ == blocklen_) {
      std::memcpy(region + base_ + offset, src, left);
      return;
    }
    const uint64_t within = offset % blocklen_;
    uint8_t* dst = region + base_ + (offset / blocklen_) * stride_ + within;
    uint64_t chunk = std::min(blocklen_ - within, left);
    const uint64_t gap = stride_ - blocklen_;
    for (;;) {
      std::memcpy(dst, src, chunk);
      left -= chunk;
      if (left == 0) return;
      src += chunk;
      dst += chunk + gap;
      chunk = std::min(blocklen_, left);
    }
  }

  const uint64_t blocklen_;
  const uint64_t stride_;
  const uint64_t base_;
  const uint32_t event_;
};

SPINNIC_HANDLER(VectorScatterHandler);

}  // namespace
}  // namespace spinnic
