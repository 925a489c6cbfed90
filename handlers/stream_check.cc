// stream_check: verifies a DiAD stream of numbered test messages as it
// arrives (install it with diad { stream_id: N }): every message must come
// exactly once, in order, whole and intact. The messages are the ones
// `spinctl stream-send --count C --size B` sends (docs/spinctl.md): message
// i's first 8 bytes are i (uint64, little-endian), byte k >= 8 is
// PatternByte(i, k). The message numbers must count up by one from 0, or
// from the first word of the install's initial_state.
//
//   Header      reads the message number from the first 8 payload bytes and
//               compares it with the number expected next
//   Payload     compares each packet's bytes with what message i must hold
//               at that packet's message offset (from the DiAD header in
//               front of the payload)
//   Completion  counts the message as ok or bad
//
// State layout (uint64, host byte order; kMinStateSize = 64 + 64 * 16):
//
//   offset  0: expected    the message number expected next (0, or what
//                          initial_state puts here)
//   offset  8: messages    messages completed
//   offset 16: ok          messages with the expected number, every byte as
//                          it must be, and exactly msg_length bytes seen
//   offset 24: bad         messages with a wrong byte, a wrong length,
//                          dropped bytes, or too short to hold a number
//   offset 32: out_of_order messages whose number was not the expected one
//                          (a loss, duplicate or reordering upstream); the
//                          count goes on from that number
//   offset 40: bytes       payload bytes checked
//   offset 48: first_error 1 + the number of the first message that was bad
//                          or out of order (0: none yet)
//   offset 56: unchecked   packets it could not check (not a DiAD stream
//                          packet, or an HPU index beyond the 16 slots)
//   offset 64 + 64*h:      HPU h's message in progress (number, bad flag,
//                          bytes seen, msg_length)
//
// Order is defined per channel: the handler keeps one message in progress
// per HPU, so it checks a stream sent on one channel (or on channels that
// run on different HPUs, each then with its own number sequence, which the
// shared `expected` does not model). Each HPU touches only its own slot;
// the shared counters are relaxed atomics.
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "dataplane/common/byte_order.h"
#include "handlers/api/handler.h"

namespace spinnic {
namespace {

// The DiAD frame around the payload (docs/diad.md): UDP header, then the
// 48-byte DiAD header whose msg_length / msg_offset fields (big-endian u32)
// sit at header offsets 36 / 40.
constexpr uint32_t kUdpBytes = 8;
constexpr uint32_t kDiadHeaderBytes = 48;
constexpr uint32_t kMsgLengthAt = 36;
constexpr uint32_t kMsgOffsetAt = 40;
constexpr uint32_t kSlots = 16;

enum Word : uint32_t {
  kExpected = 0,
  kMessages = 1,
  kOk = 2,
  kBad = 3,
  kOutOfOrder = 4,
  kBytes = 5,
  kFirstError = 6,
  kUnchecked = 7,
};

struct alignas(64) Slot {
  uint64_t number;
  uint64_t bad;
  uint64_t seen;
  uint64_t length;
  uint64_t pad[4];
};
static_assert(sizeof(Slot) == 64, "one cache line per HPU");

constexpr uint32_t kSlotsAt = 64;

class StreamCheckHandler {
 public:
  static constexpr absl::string_view kName = "stream_check";
  static constexpr absl::string_view kDescription =
      "checks a DiAD stream of numbered messages (spinctl stream-send "
      "--count/--size): each once, in order, every byte; counts ok, bad, "
      "out of order";
  static constexpr uint32_t kMinStateSize = kSlotsAt + kSlots * sizeof(Slot);
  static constexpr std::array<ParamSpec, 0> kParams{};

  // What byte k (k >= 8) of message i holds (docs/spinctl.md, stream-send).
  static uint8_t PatternByte(uint64_t i, uint64_t k) {
    return static_cast<uint8_t>((i + k) & 0xff);
  }

  static absl::StatusOr<std::unique_ptr<StreamCheckHandler>> Create(
      const HandlerParams& /*params*/) {
    return std::make_unique<StreamCheckHandler>();
  }

  HandlerResult Header(HandlerContext& ctx, PacketView& packet) {
    if (ctx.State().size() < kMinStateSize) return HandlerResult::kProcessData;
    Slot* slot = SlotOf(ctx);
    if (slot == nullptr) return HandlerResult::kProcessData;
    std::span<const uint8_t> payload = packet.Payload();
    uint32_t offset = 0;
    uint32_t length = 0;
    slot->bad = 0;
    slot->seen = 0;
    slot->length = 0;
    slot->number = 0;
    if (!DiadFields(packet, &length, &offset) || offset != 0 ||
        payload.size() < 8) {
      slot->bad = 1;  // no number to check against
      slot->length = length;
      return HandlerResult::kProcessData;
    }
    uint64_t number;
    std::memcpy(&number, payload.data(), 8);  // little-endian (x86)
    slot->number = number;
    slot->length = length;
    const uint64_t expected =
        Ref(ctx, kExpected).exchange(number + 1, std::memory_order_relaxed);
    if (number != expected) {
      Ref(ctx, kOutOfOrder).fetch_add(1, std::memory_order_relaxed);
      NoteError(ctx, number);
    }
    return HandlerResult::kProcessData;
  }

  HandlerResult Payload(HandlerContext& ctx, PacketView& packet) {
    if (ctx.State().size() < kMinStateSize) return HandlerResult::kSuccess;
    Slot* slot = SlotOf(ctx);
    uint32_t offset = 0;
    uint32_t length = 0;
    if (slot == nullptr || !DiadFields(packet, &length, &offset)) {
      Ref(ctx, kUnchecked).fetch_add(1, std::memory_order_relaxed);
      if (slot != nullptr) slot->bad = 1;
      return HandlerResult::kSuccess;
    }
    std::span<const uint8_t> payload = packet.Payload();
    if (offset != slot->seen || length != slot->length) slot->bad = 1;
    const uint64_t number = slot->number;
    uint64_t mismatches = 0;
    for (size_t j = 0; j < payload.size(); ++j) {
      const uint64_t k = uint64_t{offset} + j;
      const uint8_t want = k < 8 ? static_cast<uint8_t>(number >> (8 * k))
                                 : PatternByte(number, k);
      mismatches += payload[j] != want;
    }
    if (mismatches != 0) slot->bad = 1;
    slot->seen += payload.size();
    Ref(ctx, kBytes).fetch_add(payload.size(), std::memory_order_relaxed);
    return HandlerResult::kSuccess;
  }

  HandlerResult Completion(HandlerContext& ctx, uint64_t dropped_bytes,
                           bool /*flow_control_triggered*/) {
    if (ctx.State().size() < kMinStateSize) return HandlerResult::kSuccess;
    Ref(ctx, kMessages).fetch_add(1, std::memory_order_relaxed);
    Slot* slot = SlotOf(ctx);
    if (slot == nullptr) {
      Ref(ctx, kBad).fetch_add(1, std::memory_order_relaxed);
      return HandlerResult::kSuccess;
    }
    if (slot->bad != 0 || dropped_bytes != 0 || slot->seen != slot->length ||
        slot->length < 8) {
      Ref(ctx, kBad).fetch_add(1, std::memory_order_relaxed);
      NoteError(ctx, slot->number);
    } else {
      Ref(ctx, kOk).fetch_add(1, std::memory_order_relaxed);
    }
    return HandlerResult::kSuccess;
  }

 private:
  static std::atomic_ref<uint64_t> Ref(HandlerContext& ctx, Word word) {
    return std::atomic_ref<uint64_t>(
        *reinterpret_cast<uint64_t*>(ctx.State().data() + 8 * word));
  }

  static void NoteError(HandlerContext& ctx, uint64_t number) {
    uint64_t none = 0;
    Ref(ctx, kFirstError)
        .compare_exchange_strong(none, number + 1, std::memory_order_relaxed);
  }

  static Slot* SlotOf(HandlerContext& ctx) {
    const uint32_t h = ctx.LcoreIndex();
    if (h >= kSlots) return nullptr;
    return reinterpret_cast<Slot*>(ctx.State().data() + kSlotsAt +
                                   h * sizeof(Slot));
  }

  // msg_length and msg_offset from the DiAD header in front of the payload;
  // false unless the packet is laid out as a DiAD packet (UDP, then the
  // 48-byte header, then the payload).
  static bool DiadFields(const PacketView& packet, uint32_t* length,
                         uint32_t* offset) {
    const PacketLayers& layers = packet.Layers();
    if (layers.ip_proto != 17 || layers.l4_offset == PacketLayers::kAbsent ||
        layers.payload_offset == PacketLayers::kAbsent ||
        uint32_t{layers.payload_offset} !=
            uint32_t{layers.l4_offset} + kUdpBytes + kDiadHeaderBytes ||
        layers.payload_offset > packet.Length()) {
      return false;
    }
    std::span<const uint8_t> bytes = packet.Bytes();
    const size_t header = layers.payload_offset - kDiadHeaderBytes;
    *length = LoadBe32(bytes.data() + header + kMsgLengthAt);
    *offset = LoadBe32(bytes.data() + header + kMsgOffsetAt);
    return true;
  }
};

SPINNIC_HANDLER(StreamCheckHandler);

}  // namespace
}  // namespace spinnic
