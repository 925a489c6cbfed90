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

#include <rte_cycles.h>

#include <cstdint>
#include <span>

#include "dataplane/counter.h"
#include "dataplane/ectx.h"
#include "dataplane/log2_histogram.h"
#include "handlers/api/context.h"
#include "handlers/api/packet.h"

namespace spinnic {

// Event codes the engine raises itself; handler-defined codes stay below.
enum EngineEvent : uint32_t {
  kEventHandlerFailed = 0xffff0001,   // a handler returned FAIL
  kEventHandlerInvalid = 0xffff0002,  // a handler returned a code not allowed
  kEventEctxDisabled = 0xffff0003,    // auto-disabled after overruns
};

// Per (lcore, ECTX) counters: what every call touches in the first cache
// line, the histogram (touched by timed calls only) after it. All exact
// except `cycles` and `call_cycles`, estimated from sampled calls (below).
struct alignas(64) EctxCounters {
  // One-packet messages of a payload-only kind (Ectx::payload_only) that
  // ran: each is one packet, one message and one invocation, counted here
  // once instead of in each of the three. Read those through Packets(),
  // Messages() and Invocations(), which add it back. First, with `bytes`
  // and the sampling countdown: the fast path touches one cache line.
  Counter single_calls;
  Counter bytes;
  // The owning lcore's sampling state; no other thread reads it. Calls to
  // run before the next timed one, and how many calls that one stands for.
  uint32_t untimed_left = 0;
  uint32_t timed_weight = 1;
  Counter messages;
  Counter packets;
  Counter invocations;  // header + payload + completion calls
  // TSC cycles spent inside handler calls. A TSC read costs about 34 cycles
  // on the EPYC we measure on, so timing every call would cost a null
  // handler about 70 cycles per packet, more than the whole passthrough
  // loop (bench/micro/README.md, hpu-loop). Calls are therefore timed
  // exactly while there is a cycle budget (each call is checked against
  // it) and for the first kExactCalls calls of the ECTX on this HPU; after
  // that one call in about kCycleSamplePeriod is timed, at random gaps so
  // that no periodic call pattern (header, payload, completion) is always
  // or never the one timed. A timed call adds its cycles times the number
  // of calls since the previous timed one, itself included: cycles /
  // invocations stays the mean cost per call, and `cycles` never goes
  // down (readers difference it). It lags the calls after the last timed
  // one, fewer than 1.5 x kCycleSamplePeriod, and a timed call that is
  // interrupted weighs as much as the calls it stands for.
  Counter cycles;
  Counter over_budget;
  Counter dropped;   // packets dropped by DROP/FAIL
  Counter failed;    // FAIL returns (any handler)
  Counter invalid;   // codes not allowed at that point
  Counter bypassed;  // packets that met a disabled ECTX

  uint64_t Packets() const { return packets.Get() + single_calls.Get(); }
  uint64_t Messages() const { return messages.Get() + single_calls.Get(); }
  uint64_t Invocations() const {
    return invocations.Get() + single_calls.Get();
  }

  // The timed calls' cycles, each weighted as in `cycles`
  // (spinnic_handler_cycles_per_invocation, docs/metrics.md): its total
  // lags Invocations() as `cycles` does.
  CycleHistogram call_cycles;
};

// See EctxCounters::cycles.
inline constexpr uint64_t kExactCalls = 1024;
inline constexpr uint32_t kCycleSamplePeriod = 64;

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
  // Deliver specialised for first and last: every passthrough frame a rule
  // matches comes this way.
  [[gnu::always_inline]] MessageState RunSinglePacketMessage(
      const Ectx& ectx, PacketView& packet) {
    MessageState message;
    if (ectx.payload_only()) [[likely]] {
      RunPayloadOnly(ectx, message, packet);
    } else {
      DeliverPacket(ectx, message, packet, /*first=*/true, /*last=*/true);
    }
    return message;
  }

  // RunSinglePacketMessage for an ECTX whose payload_only() is true, for
  // callers that checked it themselves: DeliverPacket's counts and
  // dispositions, with one counter update for the packet, the message and
  // the call (EctxCounters::single_calls).
  [[gnu::always_inline]] inline void RunPayloadOnly(const Ectx& ectx,
                                                    MessageState& message,
                                                    PacketView& packet);

  // Ends a message whose remaining packets will never arrive (transport
  // failure, flow control): runs the completion handler once.
  void Abort(const Ectx& ectx, MessageState& message,
             bool flow_control_triggered);

 private:
  void RunCompletion(const Ectx& ectx, MessageState& message,
                     bool flow_control_triggered, EctxCounters& counters);
  HandlerContext MakeContext(const Ectx& ectx) const {
    return HandlerContext(ectx.state(), ectx.regions(), sink_, lcore_index_,
                          ectx.id());
  }
  // Deliver's body, inlined into Deliver and RunSinglePacketMessage (and
  // so into the HPU's passthrough path).
  [[gnu::always_inline]] inline void DeliverPacket(const Ectx& ectx,
                                                   MessageState& message,
                                                   PacketView& packet,
                                                   bool first, bool last);
  // Counts one handler call, `call()`, and times it when it is due
  // (EctxCounters::cycles).
  template <typename Call>
  HandlerResult Invoke(const Ectx& ectx, EctxCounters& counters, Call call) {
    counters.invocations.Add();
    return InvokeCounted(ectx, counters, call);
  }
  // Invoke for a call already counted.
  template <typename Call>
  HandlerResult InvokeCounted(const Ectx& ectx, EctxCounters& counters,
                              Call call);
  // The payload handler's result: the packet's disposition and the
  // message's failure.
  [[gnu::always_inline]] inline void ApplyPayloadResult(const Ectx& ectx,
                                                        MessageState& message,
                                                        PacketView& packet,
                                                        HandlerResult result,
                                                        EctxCounters& counters);
  // A timed call: its weighted cycles, the budget check, the next gap.
  void RecordCycles(const Ectx& ectx, uint64_t cycles, EctxCounters& counters);
  // kFault: Fail, then an overrun (which may disable the ECTX).
  void Fault(const Ectx& ectx, MessageState& message, EctxCounters& counters);
  void Fail(const Ectx& ectx, MessageState& message, EngineEvent event,
            EctxCounters& counters);

  uint32_t lcore_index_;
  ActionSink* sink_;
  std::span<EctxCounters> counters_;
  // xorshift32 state for the sampling gaps; never zero.
  uint32_t random_ = 0x9e3779b9u;
};

template <typename Call>
inline HandlerResult SpinEngine::InvokeCounted(const Ectx& ectx,
                                               EctxCounters& counters,
                                               Call call) {
  // With a budget every call is timed: each one is checked against it.
  if (counters.untimed_left != 0 && ectx.cycle_budget() == 0) [[likely]] {
    --counters.untimed_left;
    return call();
  }
  const uint64_t start = rte_rdtsc();
  const HandlerResult result = call();
  RecordCycles(ectx, rte_rdtsc() - start, counters);
  return result;
}

inline void SpinEngine::ApplyPayloadResult(const Ectx& ectx,
                                           MessageState& message,
                                           PacketView& packet,
                                           HandlerResult result,
                                           EctxCounters& counters) {
  switch (result) {
    case HandlerResult::kSuccess:
      break;
    case HandlerResult::kDrop:
      packet.Drop();
      break;
    case HandlerResult::kFail:
      Fail(ectx, message, kEventHandlerFailed, counters);
      packet.Drop();
      break;
    case HandlerResult::kFault:
      Fault(ectx, message, counters);
      packet.Drop();
      break;
    default:  // PROCESS_DATA is a header-only code
      Fail(ectx, message, kEventHandlerInvalid, counters);
      packet.Drop();
      break;
  }
}

inline void SpinEngine::RunPayloadOnly(const Ectx& ectx, MessageState& message,
                                       PacketView& packet) {
  EctxCounters& counters = counters_[ectx.id()];
  counters.bytes.Add(packet.Length());
  if (ectx.disabled()) [[unlikely]] {
    counters.packets.Add();
    counters.bypassed.Add();
    return;
  }
  counters.single_calls.Add();
  // The message mode stays kStart: no completion handler reads it.
  HandlerContext ctx = MakeContext(ectx);
  const Ectx::PayloadFn payload = ectx.payload_fn();
  void* self = ectx.payload_self();
  const HandlerResult result =
      InvokeCounted(ectx, counters, [&] { return payload(self, ctx, packet); });
  if (result != HandlerResult::kSuccess) [[unlikely]] {
    ApplyPayloadResult(ectx, message, packet, result, counters);
  }
  if (packet.GetDisposition() == Disposition::kDrop) {
    counters.dropped.Add();
    message.dropped_bytes += packet.Length();
  }
}

inline void SpinEngine::DeliverPacket(const Ectx& ectx, MessageState& message,
                                      PacketView& packet, bool first,
                                      bool last) {
  EctxCounters& counters = counters_[ectx.id()];
  counters.packets.Add();
  counters.bytes.Add(packet.Length());
  if (ectx.disabled()) [[unlikely]] {
    // A disabled ECTX is transparent: the packet takes the default action.
    counters.bypassed.Add();
    return;
  }
  const HandlerOps& ops = *ectx.instance().ops();
  void* self = ectx.instance().self();
  HandlerContext ctx = MakeContext(ectx);

  if (first) {
    counters.messages.Add();
    message = MessageState();
    if (ops.header != nullptr) {
      const HandlerResult result =
          Invoke(ectx, counters, [&] { return ops.header(self, ctx, packet); });
      switch (result) {
        case HandlerResult::kProcessData:
          message.mode = MessageState::Mode::kPayload;
          break;
        case HandlerResult::kSuccess:
          message.mode = MessageState::Mode::kDefault;
          break;
        case HandlerResult::kDrop:
          message.mode = MessageState::Mode::kDropAll;
          break;
        case HandlerResult::kFail:
          Fail(ectx, message, kEventHandlerFailed, counters);
          break;
        case HandlerResult::kFault:
          Fault(ectx, message, counters);
          break;
        default:
          Fail(ectx, message, kEventHandlerInvalid, counters);
          break;
      }
    } else {
      message.mode = MessageState::Mode::kPayload;
    }
  }

  switch (message.mode) {
    case MessageState::Mode::kPayload:
      if (ops.payload != nullptr) {
        const HandlerResult result = Invoke(
            ectx, counters, [&] { return ops.payload(self, ctx, packet); });
        ApplyPayloadResult(ectx, message, packet, result, counters);
      }
      break;
    case MessageState::Mode::kDefault:
      break;
    case MessageState::Mode::kStart:  // unreachable: set above when first
    case MessageState::Mode::kDropAll:
    case MessageState::Mode::kFailed:
      packet.Drop();
      break;
  }
  if (packet.GetDisposition() == Disposition::kDrop) {
    counters.dropped.Add();
    message.dropped_bytes += packet.Length();
  }
  // Checked here too: most kinds have no completion handler, and this
  // spares them the call.
  if (last && ops.completion != nullptr) {
    RunCompletion(ectx, message, /*flow_control_triggered=*/false, counters);
  }
}

}  // namespace spinnic

#endif  // SPINNIC_DATAPLANE_SPIN_ENGINE_H_
