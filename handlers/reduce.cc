// reduce: the allreduce building block. N contributors each send a vector of
// `count` elements of `type`; the NIC adds them element-wise into bound
// region 0 as the packets arrive, so the host finds the sum there when the
// N-th contribution completes, without touching a single received vector.
//
// Each message is one contribution: a contributor's vector, or its first
// elements when the message is shorter (the rest add nothing). A packet's
// payload goes to byte MessageInfo.offset of the vector. Integer vectors
// may be cut into packets anywhere, also inside an element (DiAD cuts at
// path_mtu - 96 bytes, 1404 at MTU 1500, not a multiple of 8): the bytes
// j..j+n-1 of a little-endian element are worth their value shifted left
// by 8j, and two's complement addition is linear, so each packet adds its
// part of an element on its own and the sum is exact in any order. A float
// cannot be added in parts: float packets must start and end on element
// boundaries (RoCE's path MTUs always do; on DiAD choose path_mtu with
// path_mtu - 96 a multiple of the element size, e.g. 1496).
//
//   Header      checks region 0 and, where the transport knows the message
//               length, the whole message (a multiple of the element size,
//               at most count elements), so that such a message adds nothing
//               at all when it is bad
//   Payload     checks this packet (within count elements; for floats,
//               offset and length multiples of the element size), adds its
//               elements (and integer element parts) atomically, then
//               consumes the packet
//   Completion  counts the contribution; the one that makes the total a
//               multiple of `contributors` completes a round and raises
//               `event` with the round number
//
// Several HPUs add at once: integers with std::atomic_ref fetch_add (two's
// complement, wrapping: the sum is exact and independent of arrival order),
// floats with a compare-and-swap loop on the bit pattern (the sum is
// rounded after every addition, so its last bits depend on arrival order).
//
// Elements are little-endian on the wire; region 0 holds `count` elements
// in host byte order, aligned to their size, and nothing else: the counters
// are in the state. The handler never zeroes the region: the host zeroes it
// before the first contribution of a round (before installing, and after
// reading each round's result, before the contributors start the next
// one). Contributions count on across rounds, so no re-install is needed.
//
// Packets are consumed (Disposition::kConsume), not dropped, as in the
// datatype kind: the handler took the bytes, so a DiAD write still answers
// `ok` without storing them at its own address, a stream message is not put
// in the stream ring, and the engine counts no drop. The write's target
// address is ignored: elements land by message offset in region 0.
//
// State layout (uint64, host byte order, relaxed atomics; kMinStateSize 56):
//
//   offset  0: contributions   messages added whole, over all rounds
//   offset  8: elements        elements added into the region (an element
//                              cut between packets counts once, with the
//                              packet holding its last byte)
//   offset 16: bad_packets     FAILs: a message the header saw not a
//                              multiple of the element size, a float packet
//                              misaligned to it, or a packet past `count`
//                              elements; nothing of it written
//   offset 24: rounds          rounds completed (contributions / N)
//   offset 32: failed          messages that ended with dropped bytes (a
//                              FAIL or flow control): not a contribution,
//                              and the round's sum may miss part of them
//   offset 40: bad_region      FAILs: region 0 missing, without local_write,
//                              smaller than count * size bytes or not
//                              aligned to the element size
//   offset 48: events_refused  round events lost to a full event queue
#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <type_traits>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "handlers/api/handler.h"

namespace spinnic {
namespace {

struct ReduceState {
  uint64_t contributions;
  uint64_t elements;
  uint64_t bad_packets;
  uint64_t rounds;
  uint64_t failed;
  uint64_t bad_region;
  uint64_t events_refused;
};
static_assert(sizeof(ReduceState) == 56, "the documented layout");

enum class ElementType : uint8_t { kInt32, kInt64, kFloat32, kFloat64 };

// The little-endian wire element at `src` as its bit pattern.
template <typename Bits>
Bits LoadLittleEndian(const uint8_t* src) {
  Bits bits;
  std::memcpy(&bits, src, sizeof bits);
  if constexpr (std::endian::native == std::endian::big) {
    if constexpr (sizeof(Bits) == 4) {
      bits = __builtin_bswap32(bits);
    } else {
      bits = __builtin_bswap64(bits);
    }
  }
  return bits;
}

// Adds the wire elements in `payload` to `dst` element by element. Bits is
// the unsigned integer of the element's size; Float the floating type, or
// void for an integer sum.
template <typename Bits, typename Float>
void AddElements(std::span<const uint8_t> payload, Bits* dst) {
  const size_t n = payload.size() / sizeof(Bits);
  const uint8_t* src = payload.data();
  for (size_t i = 0; i < n; ++i, src += sizeof(Bits)) {
    const Bits value = LoadLittleEndian<Bits>(src);
    std::atomic_ref<Bits> sum(dst[i]);
    if constexpr (std::is_void_v<Float>) {
      // Unsigned: wraps, and is the two's complement sum of signed values.
      sum.fetch_add(value, std::memory_order_relaxed);
    } else {
      const Float addend = std::bit_cast<Float>(value);
      Bits old = sum.load(std::memory_order_relaxed);
      while (!sum.compare_exchange_weak(
          old, std::bit_cast<Bits>(std::bit_cast<Float>(old) + addend),
          std::memory_order_relaxed)) {
      }
    }
  }
}

// Adds bytes j..j+n-1 of a little-endian integer element (at `src`) to
// `dst`: their value shifted to their place, which modulo 2^bits is exactly
// their share of the element's value.
template <typename Bits>
void AddElementPart(const uint8_t* src, uint32_t j, uint32_t n, Bits* dst) {
  Bits part = 0;
  for (uint32_t i = 0; i < n; ++i) part |= Bits{src[i]} << (8 * (j + i));
  std::atomic_ref<Bits>(*dst).fetch_add(part, std::memory_order_relaxed);
}

// Adds the integer vector bytes [offset, offset + payload.size()) into
// `dst`: whole elements at once, an element cut at either end by its part.
template <typename Bits>
void AddIntegerBytes(std::span<const uint8_t> payload, uint64_t offset,
                     Bits* dst) {
  constexpr uint32_t kSize = sizeof(Bits);
  const uint8_t* src = payload.data();
  uint64_t left = payload.size();
  Bits* element = dst + offset / kSize;
  if (const uint32_t j = offset % kSize; j != 0 && left != 0) {
    const uint32_t n =
        static_cast<uint32_t>(std::min<uint64_t>(kSize - j, left));
    AddElementPart(src, j, n, element++);
    src += n;
    left -= n;
  }
  const uint64_t whole = left / kSize * kSize;
  AddElements<Bits, void>({src, whole}, element);
  if (left != whole) {
    AddElementPart(src + whole, 0, static_cast<uint32_t>(left - whole),
                   element + whole / kSize);
  }
}

class ReduceHandler {
 public:
  static constexpr absl::string_view kName = "reduce";
  static constexpr absl::string_view kDescription =
      "allreduce building block: adds the vectors of N contributors element "
      "by element into bound region 0 and raises an event per N; consumes "
      "the packets";
  static constexpr uint32_t kMinStateSize = sizeof(ReduceState);
  static constexpr uint32_t kMinRegions = 1;
  static constexpr ParamSpec kParams[] = {
      {.name = "type",
       .type = ParamType::kString,
       .required = false,
       .default_value = "int64",
       .help = "element type, little-endian on the wire: int32, int64, "
               "float32 or float64, e.g. float64"},
      {.name = "count",
       .type = ParamType::kUint,
       .required = true,
       .help = "elements per vector; region 0 must hold count * element "
               "size bytes, e.g. 1024",
       .min = 1,
       .max = uint64_t{1} << 40},
      {.name = "contributors",
       .type = ParamType::kUint,
       .required = true,
       .help = "contributions (messages) per round, 1..65536, e.g. 8",
       .min = 1,
       .max = 65536},
      {.name = "event",
       .type = ParamType::kUint,
       .required = false,
       .default_value = "0",
       .help = "event code raised when a round's last contribution completes "
               "(0: none; below 0xffff0000, which the engine owns), e.g. "
               "0x5244",
       .max = 0xfffeffff},
  };

  static absl::StatusOr<std::unique_ptr<ReduceHandler>> Create(
      const HandlerParams& params) {
    const std::string& name = params.GetString("type");
    ElementType type;
    uint32_t size;
    if (name == "int32") {
      type = ElementType::kInt32;
      size = 4;
    } else if (name == "int64") {
      type = ElementType::kInt64;
      size = 8;
    } else if (name == "float32") {
      type = ElementType::kFloat32;
      size = 4;
    } else if (name == "float64") {
      type = ElementType::kFloat64;
      size = 8;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("parameter 'type' = '", name,
                       "': write one of int32, int64, float32, float64"));
    }
    return std::unique_ptr<ReduceHandler>(new ReduceHandler(
        type, size, params.GetUint("count"), params.GetUint("contributors"),
        static_cast<uint32_t>(params.GetUint("event"))));
  }

  HandlerResult Header(HandlerContext& ctx, PacketView& packet) {
    ReduceState* state = ctx.StateAs<ReduceState>();
    if (Region(ctx) == nullptr) {
      if (state != nullptr) AddToCounter(state->bad_region, 1);
      return HandlerResult::kFail;
    }
    // The whole message at once where its length is known: all or nothing.
    const uint64_t length = packet.Message().length;
    if (length != 0 && (length % size_ != 0 || length > bytes_)) {
      if (state != nullptr) AddToCounter(state->bad_packets, 1);
      return HandlerResult::kFail;
    }
    return HandlerResult::kProcessData;
  }

  HandlerResult Payload(HandlerContext& ctx, PacketView& packet) {
    ReduceState* state = ctx.StateAs<ReduceState>();
    uint8_t* region = Region(ctx);
    if (region == nullptr) {
      if (state != nullptr) AddToCounter(state->bad_region, 1);
      return HandlerResult::kFail;
    }
    const std::span<const uint8_t> payload = packet.Payload();
    const uint64_t offset = packet.Message().offset;
    const uint64_t size = payload.size();
    const bool is_float =
        type_ == ElementType::kFloat32 || type_ == ElementType::kFloat64;
    // offset <= bytes_ first: then bytes_ - offset cannot wrap.
    if ((is_float && (offset % size_ != 0 || size % size_ != 0)) ||
        offset > bytes_ || size > bytes_ - offset) {
      if (state != nullptr) AddToCounter(state->bad_packets, 1);
      return HandlerResult::kFail;
    }
    uint8_t* dst = region + offset;
    switch (type_) {
      case ElementType::kInt32:
        AddIntegerBytes<uint32_t>(payload, offset,
                                  reinterpret_cast<uint32_t*>(region));
        break;
      case ElementType::kInt64:
        AddIntegerBytes<uint64_t>(payload, offset,
                                  reinterpret_cast<uint64_t*>(region));
        break;
      case ElementType::kFloat32:
        AddElements<uint32_t, float>(payload, reinterpret_cast<uint32_t*>(dst));
        break;
      case ElementType::kFloat64:
        AddElements<uint64_t, double>(payload,
                                      reinterpret_cast<uint64_t*>(dst));
        break;
    }
    // Elements whose last byte is in this packet.
    const uint64_t ended = (offset + size) / size_ - offset / size_;
    if (state != nullptr && ended != 0) AddToCounter(state->elements, ended);
    packet.Consume();
    return HandlerResult::kSuccess;
  }

  HandlerResult Completion(HandlerContext& ctx, uint64_t dropped_bytes,
                           bool flow_control_triggered) {
    ReduceState* state = ctx.StateAs<ReduceState>();
    if (state == nullptr) return HandlerResult::kSuccess;
    // Every added packet is consumed; a dropped byte means a FAIL (or flow
    // control) left the vector incomplete: not a contribution.
    if (dropped_bytes != 0 || flow_control_triggered) {
      AddToCounter(state->failed, 1);
      return HandlerResult::kSuccess;
    }
    // acq_rel: the completion that ends a round sees every earlier
    // contribution's additions (each released them with its own count).
    const uint64_t total = std::atomic_ref<uint64_t>(state->contributions)
                               .fetch_add(1, std::memory_order_acq_rel) +
                           1;
    if (total % contributors_ != 0) return HandlerResult::kSuccess;
    AddToCounter(state->rounds, 1);
    const uint64_t round = total / contributors_;
    if (event_ != 0 &&
        !ctx.RaiseEvent(
            event_, {reinterpret_cast<const uint8_t*>(&round), sizeof round})) {
      AddToCounter(state->events_refused, 1);
    }
    return HandlerResult::kSuccess;
  }

 private:
  ReduceHandler(ElementType type, uint32_t size, uint64_t count,
                uint64_t contributors, uint32_t event)
      : type_(type),
        size_(size),
        bytes_(count * size),
        contributors_(contributors),
        event_(event) {}

  // Region 0's bytes when the handler may add into it, else null.
  uint8_t* Region(const HandlerContext& ctx) const {
    return ctx
        .FirstRegion(
            {.read = false, .write = true, .min_bytes = bytes_, .align = size_})
        .data();
  }

  const ElementType type_;
  const uint32_t size_;
  const uint64_t bytes_;  // count * size: the vector in the region
  const uint64_t contributors_;
  const uint32_t event_;
};

SPINNIC_HANDLER(ReduceHandler);

}  // namespace
}  // namespace spinnic
