#include "dataplane/spin_engine.h"

#include <rte_cycles.h>

namespace spinnic {
namespace {

void RaiseEngineEvent(ActionSink* sink, EngineEvent event, const Ectx& ectx) {
  if (sink == nullptr) return;
  uint32_t id = ectx.id();
  sink->RaiseEvent(
      event, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&id),
                                      sizeof id));
}

}  // namespace

void SpinEngine::RecordCycles(const Ectx& ectx, uint64_t cycles,
                              EctxCounters& counters) {
  const uint64_t budget = ectx.cycle_budget();
  // With a budget every call is timed, whatever an earlier ECTX of the
  // same id left in timed_weight.
  const uint32_t weight = budget != 0 ? 1 : counters.timed_weight;
  counters.cycles.Add(cycles * weight);
  counters.call_cycles.Record(cycles, weight);
  uint32_t gap = 1;
  if (budget == 0 && counters.Invocations() >= kExactCalls) {
    random_ ^= random_ << 13;
    random_ ^= random_ >> 17;
    random_ ^= random_ << 5;
    gap = kCycleSamplePeriod / 2 + random_ % kCycleSamplePeriod;
  }
  counters.timed_weight = gap;
  counters.untimed_left = gap - 1;
  if (budget != 0 && cycles > budget) [[unlikely]] {
    counters.over_budget.Add();
    if (ectx.RecordOverrun()) {
      RaiseEngineEvent(sink_, kEventEctxDisabled, ectx);
    }
  }
}

void SpinEngine::Fail(const Ectx& ectx, MessageState& message,
                      EngineEvent event, EctxCounters& counters) {
  message.mode = MessageState::Mode::kFailed;
  if (event == kEventHandlerInvalid) {
    message.invalid = true;
    counters.invalid.Add();
  } else {
    counters.failed.Add();
  }
  RaiseEngineEvent(sink_, event, ectx);
}

void SpinEngine::Fault(const Ectx& ectx, MessageState& message,
                       EctxCounters& counters) {
  Fail(ectx, message, kEventHandlerFailed, counters);
  if (ectx.RecordOverrun()) RaiseEngineEvent(sink_, kEventEctxDisabled, ectx);
}

void SpinEngine::Deliver(const Ectx& ectx, MessageState& message,
                         PacketView& packet, bool first, bool last) {
  DeliverPacket(ectx, message, packet, first, last);
}

void SpinEngine::RunCompletion(const Ectx& ectx, MessageState& message,
                               bool flow_control_triggered,
                               EctxCounters& counters) {
  const HandlerOps& ops = *ectx.instance().ops();
  if (ops.completion == nullptr) return;
  HandlerContext ctx = MakeContext(ectx);
  const HandlerResult result = Invoke(ectx, counters, [&] {
    return ops.completion(ectx.instance().self(), ctx, message.dropped_bytes,
                          flow_control_triggered);
  });
  if (result == HandlerResult::kSuccess) return;
  if (result == HandlerResult::kFault) {
    Fault(ectx, message, counters);
    return;
  }
  Fail(ectx, message,
       result == HandlerResult::kFail ? kEventHandlerFailed
                                      : kEventHandlerInvalid,
       counters);
}

void SpinEngine::Abort(const Ectx& ectx, MessageState& message,
                       bool flow_control_triggered) {
  if (ectx.disabled()) return;
  RunCompletion(ectx, message, flow_control_triggered, counters_[ectx.id()]);
}

}  // namespace spinnic
