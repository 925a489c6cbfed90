// What a running handler may touch besides its packet: the ECTX's state
// memory, bound memory regions, and the actions that leave the handler (emit a
// new frame, raise an event). The dataplane fills one HandlerContext per
// invocation; tests fill one by hand (see handlers/api/testing.h).
#ifndef SPINNIC_HANDLERS_API_CONTEXT_H_
#define SPINNIC_HANDLERS_API_CONTEXT_H_

#include <cstddef>
#include <cstdint>
#include <span>

namespace spinnic {

// Where an emitted frame goes.
enum class EmitPort : uint8_t {
  kIngress = 0,  // out of the port the triggering packet arrived on
  kPaired = 1,   // out of the paired (passthrough) port
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

  bool EmitFrame(std::span<const uint8_t> frame, EmitPort port) {
    return sink_ != nullptr && sink_->EmitFrame(frame, port);
  }
  bool RaiseEvent(uint32_t code, std::span<const uint8_t> data = {}) {
    return sink_ != nullptr && sink_->RaiseEvent(code, data);
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
