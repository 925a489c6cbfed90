// kvs: a key-value store in bound region 0, served by the NIC. A request is
// one packet: a passthrough UDP datagram (answered in place, out of the
// ingress port), a DiAD stream message or a RoCE SEND (consumed, answered
// with a stream message to the sender on stream `reply_stream`).
//
// Request (the packet's payload, little-endian):
//
//   u8 op (1 GET, 2 PUT, 3 DELETE), u8 key_len, u16 value_len,
//   u32 request_id, key_len key bytes, value_len value bytes (PUT only;
//   GET and DELETE have value_len 0). Bytes after them are ignored (a UDP
//   GET pads its payload with them to make room for the answer).
//
// Reply: u8 status, u8 op, u16 value_len, u32 request_id, then the value
// (GET OK). Status: 0 OK, 1 NOT_FOUND, 2 FULL (no free slot within
// max_probe), 3 BAD_REQUEST, 4 BUSY (a slot stayed locked by another
// writer: try again), 5 NO_ROOM (a UDP GET whose frame cannot hold the
// value: value_len says how long it is; pad the request's payload to at
// least 8 + value_len bytes).
//
// Region 0 (local_read and local_write, 8-byte aligned) is an array of
// region size / slot_bytes slots, slot_bytes = 8 + key_max + value_max
// rounded up to 8. A slot (host byte order):
//
//   offset 0: u32 word   0 empty; odd: being written; even: stable, bit 1
//                        set: deleted (a tombstone), bits 2..31 a
//                        generation that every write advances (never 0)
//   offset 4: u16 key_len, offset 6: u16 value_len
//   offset 8: the key (key_len bytes, zeros up to key_max)
//   offset 8 + key_max: the value (value_len bytes)
//
// A key's home slot is FNV-1a 64 of its bytes modulo the slot count; it
// lives in the first slot of its probe chain (home, home + 1, ... wrapping,
// at most max_probe slots) that is empty or holds it. Once written, a slot
// keeps its key for good: DELETE makes it a tombstone, which only a PUT of
// the same key revives, so chains stay intact and a key never has two
// slots, even when HPUs insert it at once. The host frees tombstones by
// zeroing the region while no request arrives.
//
// Concurrency: a writer claims a slot by compare-and-swap of its word to an
// odd value, stores the lengths and data, and releases it with the next
// even word (a seqlock). A reader loads the word (acquire), copies, loads it
// again after an acquire fence and retries when it was odd or changed; after
// 128 polls per request it answers BUSY instead of spinning on. The data
// is copied with relaxed 8-byte atomics, so a host or HPU reading at any
// time never takes a torn value for a valid one.
//
// State layout (uint64, host byte order, relaxed atomics; kMinStateSize
// 104): gets, hits, puts, deletes, not_found, full, busy, bad_requests,
// no_room, replies_refused, unanswered, not_udp, bad_region (see
// docs/handlers.md).
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "handlers/api/handler.h"
#include "handlers/api/net.h"
#include "handlers/api/reply.h"

namespace spinnic {
namespace {

struct KvsState {
  uint64_t gets;
  uint64_t hits;
  uint64_t puts;
  uint64_t deletes;
  uint64_t not_found;
  uint64_t full;
  uint64_t busy;
  uint64_t bad_requests;
  uint64_t no_room;
  uint64_t replies_refused;
  uint64_t unanswered;
  uint64_t not_udp;
  uint64_t bad_region;
};
static_assert(sizeof(KvsState) == 104, "the documented layout");

enum Op : uint8_t { kGet = 1, kPut = 2, kDelete = 3 };
enum Status : uint8_t {
  kOk = 0,
  kNotFound = 1,
  kFull = 2,
  kBadRequest = 3,
  kBusy = 4,
  kNoRoom = 5,
};

constexpr uint32_t kHeaderBytes = 8;  // a slot's, a request's and a reply's
constexpr uint32_t kKeyMaxLimit = 255;
constexpr uint32_t kValueMaxLimit = 4096;
constexpr uint32_t kStageWords =
    (kHeaderBytes + kKeyMaxLimit + kValueMaxLimit + 7) / 8;
// Polls of locked or changing slots one request may spend before BUSY.
constexpr int kMaxPolls = 128;

// Bits of a slot's word.
constexpr uint32_t kWriting = 1;
constexpr uint32_t kTombstone = 2;
constexpr uint32_t kGenerationShift = 2;

// FNV-1a, 64 bits: the documented, stable hash of a key.
uint64_t Fnv1a64(std::span<const uint8_t> bytes) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (uint8_t byte : bytes) {
    hash ^= byte;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// The stable word that follows `word` (a stable word, or 0 for an empty
// slot): the next generation, never 0, with or without the tombstone bit.
uint32_t NextWord(uint32_t word, bool tombstone) {
  uint32_t generation = (word >> kGenerationShift) + 1;
  if ((generation << kGenerationShift) == 0) generation = 1;
  return (generation << kGenerationShift) | (tombstone ? kTombstone : 0);
}

uint32_t PackLengths(uint16_t key_len, uint16_t value_len) {
  const uint16_t halves[2] = {key_len, value_len};
  uint32_t word;
  std::memcpy(&word, halves, sizeof word);
  return word;
}

class KvsHandler {
 public:
  static constexpr absl::string_view kName = "kvs";
  static constexpr absl::string_view kDescription =
      "key-value store in bound region 0: GET/PUT/DELETE requests over UDP "
      "(answered in place), DiAD streams or RoCE SENDs (answered on a DiAD "
      "stream)";
  static constexpr uint32_t kMinStateSize = sizeof(KvsState);
  static constexpr uint32_t kMinRegions = 1;
  static constexpr ParamSpec kParams[] = {
      {.name = "key_max",
       .type = ParamType::kUint,
       .required = true,
       .help = "longest key in bytes, 1..255; part of the slot layout the "
               "host reads, e.g. 16",
       .min = 1,
       .max = kKeyMaxLimit},
      {.name = "value_max",
       .type = ParamType::kUint,
       .required = true,
       .help = "longest value in bytes, 1..4096; part of the slot layout "
               "the host reads, e.g. 64",
       .min = 1,
       .max = kValueMaxLimit},
      {.name = "max_probe",
       .type = ParamType::kUint,
       .required = false,
       .default_value = "16",
       .help = "slots a key may be from its home slot (linear probing), "
               "1..65536, e.g. 16",
       .min = 1,
       .max = 65536},
      {.name = "reply_stream",
       .type = ParamType::kUint,
       .required = false,
       .default_value = "0",
       .help = "DiAD stream id the answers to DiAD/RoCE requests go to, at "
               "the sender; 0: answer UDP requests only, e.g. 9",
       .max = UINT32_MAX},
  };

  static absl::StatusOr<std::unique_ptr<KvsHandler>> Create(
      const HandlerParams& params) {
    return std::unique_ptr<KvsHandler>(
        new KvsHandler(static_cast<uint32_t>(params.GetUint("key_max")),
                       static_cast<uint32_t>(params.GetUint("value_max")),
                       params.GetUint("max_probe"),
                       static_cast<uint32_t>(params.GetUint("reply_stream"))));
  }

  HandlerResult Payload(HandlerContext& ctx, PacketView& packet) {
    KvsState* state = ctx.StateAs<KvsState>();
    const std::span<uint8_t> region = Region(ctx);
    if (region.empty()) {
      Count(state, &KvsState::bad_region);
      return HandlerResult::kFail;
    }
    int64_t room;
    bool one_packet;
    switch (TakeRequest(packet, kHeaderBytes + kValueMaxLimit, &room,
                        &one_packet)) {
      case RequestPacket::kRequest:
        break;
      case RequestPacket::kNotUdp:
        Count(state, &KvsState::not_udp);
        return HandlerResult::kSuccess;  // not a request: forwarded as is
      case RequestPacket::kContinuation:
        return HandlerResult::kSuccess;
    }
    const std::span<const uint8_t> request = packet.Payload();
    if (request.size() < kHeaderBytes) {
      // Not even the request id: nobody to answer.
      Count(state, &KvsState::bad_requests);
      packet.Drop();
      return HandlerResult::kDrop;
    }
    const uint8_t op = request[0];
    const uint8_t key_len = request[1];
    const uint16_t value_len =
        static_cast<uint16_t>(request[2] | uint32_t{request[3]} << 8);

    std::array<uint8_t, kHeaderBytes + kValueMaxLimit> reply;
    std::array<uint64_t, kStageWords> stage;
    Status status = kBadRequest;
    uint16_t reply_value_len = 0;
    const uint32_t needed =
        kHeaderBytes + key_len + (op == kPut ? value_len : 0u);
    if (!one_packet || op < kGet || op > kDelete || key_len == 0 ||
        key_len > key_max_ || (op != kPut && value_len != 0) ||
        value_len > value_max_ || request.size() < needed) {
      Count(state, &KvsState::bad_requests);
    } else {
      const std::span<const uint8_t> key_bytes =
          request.subspan(kHeaderBytes, key_len);
      switch (op) {
        case kGet: {
          Count(state, &KvsState::gets);
          uint16_t found_len = 0;
          status = Get(region, key_bytes, stage.data(), found_len);
          if (status == kOk) {
            reply_value_len = found_len;
            if (kHeaderBytes + found_len > room) {
              status = kNoRoom;
              Count(state, &KvsState::no_room);
            } else {
              std::memcpy(reply.data() + kHeaderBytes,
                          reinterpret_cast<const uint8_t*>(stage.data()) +
                              kHeaderBytes + key_max_,
                          found_len);
              Count(state, &KvsState::hits);
            }
          }
          break;
        }
        case kPut:
          Count(state, &KvsState::puts);
          status = Put(region, key_bytes,
                       request.subspan(kHeaderBytes + key_len, value_len),
                       stage.data());
          break;
        case kDelete:
          Count(state, &KvsState::deletes);
          status = Delete(region, key_bytes, stage.data());
          break;
      }
      if (status == kNotFound) Count(state, &KvsState::not_found);
      if (status == kFull) Count(state, &KvsState::full);
      if (status == kBusy) Count(state, &KvsState::busy);
    }
    reply[0] = status;
    reply[1] = op;
    reply[2] = static_cast<uint8_t>(reply_value_len);
    reply[3] = static_cast<uint8_t>(reply_value_len >> 8);
    std::memcpy(reply.data() + 4, request.data() + 4, 4);  // request_id
    const uint32_t reply_len =
        kHeaderBytes + (status == kOk ? reply_value_len : 0u);
    Answer(ctx, packet, state, {reply.data(), reply_len});
    return packet.GetDisposition() == Disposition::kDrop
               ? HandlerResult::kDrop
               : HandlerResult::kSuccess;
  }

 private:
  // What a slot holds for a key, as ReadSlot finds it.
  enum class Found { kEmpty, kOther, kLive, kDeleted, kBusy };

  KvsHandler(uint32_t key_max, uint32_t value_max, uint64_t max_probe,
             uint32_t reply_stream)
      : key_max_(key_max),
        value_max_(value_max),
        slot_bytes_((kHeaderBytes + key_max + value_max + 7) / 8 * 8),
        max_probe_(max_probe),
        reply_stream_(reply_stream) {}

  static void Count(KvsState* state, uint64_t KvsState::*field) {
    if (state != nullptr) AddToCounter(state->*field, 1);
  }

  // Region 0 when the store can live there (readable, writable, 8-byte
  // aligned, at least one slot), else empty.
  std::span<uint8_t> Region(const HandlerContext& ctx) const {
    return ctx.FirstRegion(
        {.write = true, .min_bytes = slot_bytes_, .align = 8});
  }

  // Sends `reply` to the request's sender (handlers/api/reply.h) and
  // counts what did not go.
  void Answer(HandlerContext& ctx, PacketView& packet, KvsState* state,
              std::span<const uint8_t> reply) const {
    AnswerSenderCounted(ctx, packet, reply_stream_, reply,
                        state != nullptr ? &state->replies_refused : nullptr,
                        state != nullptr ? &state->unanswered : nullptr);
  }

  static std::atomic_ref<uint32_t> Word(uint8_t* slot) {
    return std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(slot));
  }
  static std::atomic_ref<uint32_t> Lengths(uint8_t* slot) {
    return std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(slot + 4));
  }

  // Copies the slot's 8-byte words that hold bytes [from, to) into the same
  // words of `stage`, with relaxed atomic loads.
  static void LoadWords(uint8_t* slot, uint32_t from, uint32_t to,
                        uint64_t* stage) {
    auto* words = reinterpret_cast<uint64_t*>(slot);
    for (uint32_t i = from / 8; i < (to + 7) / 8; ++i) {
      stage[i] =
          std::atomic_ref<uint64_t>(words[i]).load(std::memory_order_relaxed);
    }
  }
  static void StoreWords(uint8_t* slot, uint32_t from, uint32_t to,
                         const uint64_t* stage) {
    auto* words = reinterpret_cast<uint64_t*>(slot);
    for (uint32_t i = from / 8; i < (to + 7) / 8; ++i) {
      std::atomic_ref<uint64_t>(words[i]).store(stage[i],
                                                std::memory_order_relaxed);
    }
  }

  uint8_t* Slot(std::span<uint8_t> region, uint64_t start, uint64_t i) const {
    const uint64_t slots = region.size() / slot_bytes_;
    return region.data() + (start + i) % slots * slot_bytes_;
  }
  uint64_t Probes(std::span<uint8_t> region) const {
    return std::min<uint64_t>(max_probe_, region.size() / slot_bytes_);
  }
  uint64_t Home(std::span<uint8_t> region, std::span<const uint8_t> key) const {
    return Fnv1a64(key) % (region.size() / slot_bytes_);
  }

  // Reads the slot under its seqlock: what it holds for `key`, its stable
  // word and value length; with `want_value`, a live match's value is in
  // `stage` at its slot offset. Spends `polls` while the slot is locked or
  // changes under the copy; kBusy when they run out.
  Found ReadSlot(uint8_t* slot, std::span<const uint8_t> key, bool want_value,
                 uint64_t* stage, uint32_t& word, uint16_t& value_len,
                 int& polls) const {
    std::atomic_ref<uint32_t> state = Word(slot);
    const auto* staged = reinterpret_cast<const uint8_t*>(stage);
    while (true) {
      const uint32_t before = state.load(std::memory_order_acquire);
      if (before == 0) return Found::kEmpty;
      if ((before & kWriting) == 0) {
        uint16_t lengths[2];
        const uint32_t packed = Lengths(slot).load(std::memory_order_relaxed);
        std::memcpy(lengths, &packed, sizeof packed);
        // key.size() <= key_max_ and value_len <= value_max_ before any
        // copy: a corrupt slot never sends a load past its end.
        bool same = lengths[0] == key.size();
        if (same) {
          LoadWords(slot, kHeaderBytes, kHeaderBytes + lengths[0], stage);
          same =
              std::memcmp(staged + kHeaderBytes, key.data(), key.size()) == 0;
        }
        const bool live = (before & kTombstone) == 0;
        const bool sane = lengths[1] <= value_max_;
        if (same && live && sane && want_value) {
          const uint32_t at = kHeaderBytes + key_max_;
          LoadWords(slot, at, at + lengths[1], stage);
        }
        std::atomic_thread_fence(std::memory_order_acquire);
        if (state.load(std::memory_order_relaxed) == before) {
          word = before;
          value_len = lengths[1];
          if (!same || !sane) return Found::kOther;
          return live ? Found::kLive : Found::kDeleted;
        }
      }
      if (--polls <= 0) return Found::kBusy;
      CpuRelax();
    }
  }

  // Takes the slot whose stable word is `word` (0: empty) for writing.
  static bool Claim(uint8_t* slot, uint32_t word) {
    if (!Word(slot).compare_exchange_strong(word, word | kWriting,
                                            std::memory_order_acquire,
                                            std::memory_order_relaxed)) {
      return false;
    }
    // No store of the data may be seen before the odd word.
    std::atomic_thread_fence(std::memory_order_release);
    return true;
  }

  // Fills a claimed slot (claimed from `word`) with key and value and
  // releases it.
  void Fill(uint8_t* slot, uint32_t word, std::span<const uint8_t> key,
            std::span<const uint8_t> value, uint64_t* stage) const {
    const uint32_t at = kHeaderBytes + key_max_;
    const uint32_t end = at + static_cast<uint32_t>(value.size());
    auto* staged = reinterpret_cast<uint8_t*>(stage);
    std::memset(staged + kHeaderBytes, 0, (end + 7) / 8 * 8 - kHeaderBytes);
    std::memcpy(staged + kHeaderBytes, key.data(), key.size());
    if (!value.empty()) std::memcpy(staged + at, value.data(), value.size());
    Lengths(slot).store(PackLengths(static_cast<uint16_t>(key.size()),
                                    static_cast<uint16_t>(value.size())),
                        std::memory_order_relaxed);
    StoreWords(slot, kHeaderBytes, end, stage);
    Word(slot).store(NextWord(word, /*tombstone=*/false),
                     std::memory_order_release);
  }

  Status Get(std::span<uint8_t> region, std::span<const uint8_t> key,
             uint64_t* stage, uint16_t& value_len) const {
    int polls = kMaxPolls;
    const uint64_t home = Home(region, key);
    for (uint64_t i = 0, probes = Probes(region); i < probes; ++i) {
      uint32_t word;
      switch (ReadSlot(Slot(region, home, i), key, /*want_value=*/true, stage,
                       word, value_len, polls)) {
        case Found::kEmpty:
        case Found::kDeleted:
          return kNotFound;
        case Found::kLive:
          return kOk;
        case Found::kBusy:
          return kBusy;
        case Found::kOther:
          break;
      }
    }
    return kNotFound;
  }

  Status Put(std::span<uint8_t> region, std::span<const uint8_t> key,
             std::span<const uint8_t> value, uint64_t* stage) const {
    int polls = kMaxPolls;
    const uint64_t home = Home(region, key);
    for (uint64_t i = 0, probes = Probes(region); i < probes;) {
      uint8_t* slot = Slot(region, home, i);
      uint32_t word;
      uint16_t value_len;
      switch (ReadSlot(slot, key, /*want_value=*/false, stage, word, value_len,
                       polls)) {
        case Found::kBusy:
          return kBusy;
        case Found::kOther:
          ++i;
          continue;
        case Found::kEmpty:
          word = 0;
          break;
        case Found::kLive:
        case Found::kDeleted:
          break;
      }
      if (Claim(slot, word)) {
        Fill(slot, word, key, value, stage);
        return kOk;
      }
      // Another writer took it first: look at the slot again (an insert of
      // the same key must find it there, not take a later slot).
      if (--polls <= 0) return kBusy;
    }
    return kFull;
  }

  Status Delete(std::span<uint8_t> region, std::span<const uint8_t> key,
                uint64_t* stage) const {
    int polls = kMaxPolls;
    const uint64_t home = Home(region, key);
    for (uint64_t i = 0, probes = Probes(region); i < probes;) {
      uint8_t* slot = Slot(region, home, i);
      uint32_t word;
      uint16_t value_len;
      switch (ReadSlot(slot, key, /*want_value=*/false, stage, word, value_len,
                       polls)) {
        case Found::kBusy:
          return kBusy;
        case Found::kOther:
          ++i;
          continue;
        case Found::kEmpty:
        case Found::kDeleted:
          return kNotFound;
        case Found::kLive:
          break;
      }
      if (Claim(slot, word)) {
        // The key stays: the slot is its tombstone.
        Lengths(slot).store(PackLengths(static_cast<uint16_t>(key.size()), 0),
                            std::memory_order_relaxed);
        Word(slot).store(NextWord(word, /*tombstone=*/true),
                         std::memory_order_release);
        return kOk;
      }
      if (--polls <= 0) return kBusy;
    }
    return kNotFound;
  }

  const uint32_t key_max_;
  const uint32_t value_max_;
  const uint32_t slot_bytes_;
  const uint64_t max_probe_;
  const uint32_t reply_stream_;
};

SPINNIC_HANDLER(KvsHandler);

}  // namespace
}  // namespace spinnic
