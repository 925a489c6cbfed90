// What a running handler may touch besides its packet: the ECTX's state
// memory, bound memory regions, and the actions that leave the handler (emit a
// new frame, raise an event). The dataplane fills one HandlerContext per
// invocation; tests fill one by hand (see handlers/api/testing.h).
#ifndef SPINNIC_HANDLERS_API_CONTEXT_H_
#define SPINNIC_HANDLERS_API_CONTEXT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace spinnic {

// Where an emitted frame goes.
enum class EmitPort : uint8_t {
  kIngress = 0,  // out of the port the triggering packet arrived on
  kPaired = 1,   // out of the paired (passthrough) port
};

// A message a handler puts to a DiAD peer (sPIN's "put from device"): a
// stream message to `key` (a stream id) or a write of `data` at `address`
// in the peer's region with rkey `key`. The transport copies `data` into
// its packets before the call returns.
struct PeerPut {
  enum class Kind : uint8_t { kStream, kWrite };
  Kind kind = Kind::kStream;
  // The peer's name; empty: an answer to the sender of the message being
  // handled: on DiAD the peer in slot `source` (its MessageInfo.source); on
  // RoCE a SEND of `data` on the message's queue pair (kind kStream; `key`,
  // `source` and `channel` unused; at most 4160 bytes).
  std::string_view peer;
  uint32_t source = 0;
  // The DiAD channel. kThisHpusChannel (the default): the first channel
  // this HPU serves. A number: messages on one channel arrive in order; a
  // channel another HPU serves (channel % workers != LcoreIndex()) costs a
  // copy of `data`: the put travels to that HPU, which starts it, in order,
  // when the channel's window allows.
  static constexpr uint16_t kThisHpusChannel = 0xffff;
  uint16_t channel = kThisHpusChannel;
  uint32_t key = 0;
  uint64_t address = 0;
  std::span<const uint8_t> data;
};

// A read a handler starts (sPIN's "get"): `length` bytes at `address` in
// the peer's region with rkey `rkey` land in the handler's bound region
// number `region` (an index into Regions(), which must be writable) at
// `offset`. The handler learns of completion from the region's contents
// (write a flag last) or the ECTX's events on failure.
struct PeerGet {
  std::string_view peer;  // empty: the peer in slot `source` (see PeerPut)
  uint32_t source = 0;
  uint16_t channel = PeerPut::kThisHpusChannel;  // as PeerPut's
  uint32_t rkey = 0;
  uint64_t address = 0;
  uint32_t length = 0;
  uint32_t region = 0;
  uint64_t offset = 0;
};

// Implemented by the dataplane (per lcore) and by test fakes. Called only for
// actions, never once per packet by the engine itself.
class ActionSink {
 public:
  // Queues a copy of `frame` for transmission. False when no buffer is free
  // or the frame is larger than a buffer; the sink counts the failure.
  virtual bool EmitFrame(std::span<const uint8_t> frame, EmitPort port) = 0;
  // Posts an event for the control plane. False when the event queue is full
  // (counted as event overflow).
  virtual bool RaiseEvent(uint32_t code, std::span<const uint8_t> data) = 0;
  // Starts a DiAD transfer. False, and nothing sent, when it cannot start
  // now: DiAD off, unknown peer, the channel busy with another message or
  // its window/transactions full, bad sizes, no buffers. Counted by the
  // transport; a handler may retry on a later packet.
  virtual bool PutToPeer(const PeerPut& put) {
    (void)put;
    return false;
  }
  virtual bool GetFromPeer(const PeerGet& get) {
    (void)get;
    return false;
  }

 protected:
  ~ActionSink() = default;
};

// A memory region bound to the ECTX at install time. `bytes` is the whole
// region; a handler must not write it unless `writable` (the region was
// registered with local_write) nor read it unless `readable` (local_read).
struct BoundRegion {
  uint64_t id = 0;
  std::span<uint8_t> bytes;
  bool readable = true;
  bool writable = true;
  // The address of bytes[0] as the network sees it (RegisterRegion's
  // base_address): a DiAD write's or RoCE WRITE's MessageInfo.address minus
  // this is the offset in the region (when the write targets this region:
  // check the extent).
  uint64_t base_address = 0;
};

// Adds `value` to a state counter that every HPU running the ECTX shares.
// Relaxed: a counter publishes nothing else.
inline void AddToCounter(uint64_t& word, uint64_t value) {
  std::atomic_ref<uint64_t>(word).fetch_add(value, std::memory_order_relaxed);
}

// What a handler needs of its first bound region (FirstRegion).
struct RegionNeeds {
  bool read = true;
  bool write = false;
  uint64_t min_bytes = 0;
  uint64_t align = 1;  // of bytes.data(), a power of two
};

class HandlerContext {
 public:
  HandlerContext(std::span<uint8_t> state, std::span<const BoundRegion> regions,
                 ActionSink* sink, uint32_t lcore_index, uint32_t ectx_id)
      : state_(state),
        regions_(regions),
        sink_(sink),
        lcore_index_(lcore_index),
        ectx_id_(ectx_id) {}

  // ECTX state memory, initialised at install, 64-byte aligned, at least
  // the kind's state size. Shared by every HPU lcore that runs this ECTX:
  // update shared words with std::atomic_ref.
  std::span<uint8_t> State() const { return state_; }

  // Typed access to the start of the state memory; nullptr when the state is
  // smaller than T (the install validated sizes, so that means a bug).
  template <typename T>
  T* StateAs() const {
    if (state_.size() < sizeof(T)) return nullptr;
    return reinterpret_cast<T*>(state_.data());
  }

  std::span<const BoundRegion> Regions() const { return regions_; }
  // The first bound region's bytes when it meets `needs`, else empty (no
  // region bound, a right missing, too short or misaligned).
  std::span<uint8_t> FirstRegion(const RegionNeeds& needs) const {
    if (regions_.empty()) return {};
    const BoundRegion& region = regions_[0];
    if ((needs.read && !region.readable) || (needs.write && !region.writable) ||
        region.bytes.size() < needs.min_bytes ||
        reinterpret_cast<uintptr_t>(region.bytes.data()) % needs.align != 0) {
      return {};
    }
    return region.bytes;
  }

  bool EmitFrame(std::span<const uint8_t> frame, EmitPort port) {
    return sink_ != nullptr && sink_->EmitFrame(frame, port);
  }
  bool RaiseEvent(uint32_t code, std::span<const uint8_t> data = {}) {
    return sink_ != nullptr && sink_->RaiseEvent(code, data);
  }
  bool PutToPeer(const PeerPut& put) {
    return sink_ != nullptr && sink_->PutToPeer(put);
  }
  bool GetFromPeer(const PeerGet& get) {
    return sink_ != nullptr && sink_->GetFromPeer(get);
  }

  // Which HPU runs this invocation (0-based, dense): index per-lcore shards.
  uint32_t LcoreIndex() const { return lcore_index_; }
  uint32_t EctxId() const { return ectx_id_; }

 private:
  std::span<uint8_t> state_;
  std::span<const BoundRegion> regions_;
  ActionSink* sink_;
  uint32_t lcore_index_;
  uint32_t ectx_id_;
};

}  // namespace spinnic

#endif  // SPINNIC_HANDLERS_API_CONTEXT_H_
