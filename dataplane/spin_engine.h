// The sPIN engine of one HPU lcore: runs an ECTX's header, payload and
// completion handlers on a message's packets in sPIN order, times every
// invocation against the ECTX's cycle budget, and turns return codes into
// packet dispositions (docs/handlers.md has the table).
//
// The engine is per lcore and never shared: no locks, no atomics on the hot
// path except the rare overrun path. Transports own their message table and
// keep one MessageState per in-flight message; passthrough traffic uses a
// fresh MessageState per packet (each packet is a single-packet message).
#ifndef SPINNIC_DATAPLANE_SPIN_ENGINE_H_
#define SPINNIC_DATAPLANE_SPIN_ENGINE_H_

#include <cstdint>
#include <span>

#include "dataplane/counter.h"
#include "dataplane/ectx.h"
#include "handlers/api/context.h"
#include "handlers/api/packet.h"

namespace spinnic {

// Event codes the engine raises itself; handler-defined codes stay below.
enum EngineEvent : uint32_t {
  kEventHandlerFailed = 0xffff0001,   // a handler returned FAIL
  kEventHandlerInvalid = 0xffff0002,  // a handler returned a code not allowed
  kEventEctxDisabled = 0xffff0003,    // auto-disabled after overruns
};

// Per (lcore, ECTX) counters, one cache line each.
struct alignas(64) EctxCounters {
  Counter messages;
  Counter packets;
  Counter bytes;
  Counter invocations;  // header + payload + completion calls
  Counter cycles;       // TSC cycles spent inside handler calls
  Counter over_budget;
  Counter dropped;   // packets dropped by DROP/FAIL
  Counter failed;    // FAIL returns (any handler)
  Counter invalid;   // codes not allowed at that point
  Counter bypassed;  // packets that met a disabled ECTX
};

// Where a message stands. Zero-initialised state is "before the header".
struct MessageState {
  enum class Mode : uint8_t {
    kStart = 0,  // header not yet run
    kPayload,    // run the payload handler on each packet
    kDefault,    // header said SUCCESS: default action, no payload handler
    kDropAll,    // header said DROP: drop every packet of the message
    kFailed,     // a handler failed: drop the rest
  };
  Mode mode = Mode::kStart;
  // A handler returned a code not allowed where it did (mode is kFailed).
  bool invalid = false;
  uint64_t dropped_bytes = 0;
};

class SpinEngine {
 public:
  // `counters` is indexed by ECTX id and must hold Ectx::kMaxEctxs entries.
  SpinEngine(uint32_t lcore_index, ActionSink* sink,
             std::span<EctxCounters> counters)
      : lcore_index_(lcore_index), sink_(sink), counters_(counters) {}

  // Delivers one packet of a message. `first` runs the header handler before
  // the payload; `last` runs the completion handler after it. Sets the
  // packet's disposition (kDrop when the message or packet is dropped).
  void Deliver(const Ectx& ectx, MessageState& message, PacketView& packet,
               bool first, bool last);

  // A passthrough packet: a message of one packet. Returns how the message
  // ended (e.g. `invalid`, to count the packet's drop under that reason).
  MessageState RunSinglePacketMessage(const Ectx& ectx, PacketView& packet) {
    MessageState message;
    Deliver(ectx, message, packet, /*first=*/true, /*last=*/true);
    return message;
  }

  // Ends a message whose remaining packets will never arrive (transport
  // failure, flow control): runs the completion handler once.
  void Abort(const Ectx& ectx, MessageState& message,
             bool flow_control_triggered);

 private:
  void RunCompletion(const Ectx& ectx, MessageState& message,
                     bool flow_control_triggered, EctxCounters& counters);
  void RecordCycles(const Ectx& ectx, uint64_t cycles, EctxCounters& counters);
  // kFault: Fail, then an overrun (which may disable the ECTX).
  void Fault(const Ectx& ectx, MessageState& message, EctxCounters& counters);
  void Fail(const Ectx& ectx, MessageState& message, EngineEvent event,
            EctxCounters& counters);

  uint32_t lcore_index_;
  ActionSink* sink_;
  std::span<EctxCounters> counters_;
};

}  // namespace spinnic

#endif  // SPINNIC_DATAPLANE_SPIN_ENGINE_H_
