#include "dataplane/spin_engine.h"

#include <rte_cycles.h>

namespace spinnic {
namespace {

HandlerContext MakeContext(const Ectx& ectx, ActionSink* sink,
                           uint32_t lcore_index) {
  return HandlerContext(ectx.state(), ectx.regions(), sink, lcore_index,
                        ectx.id());
}

void RaiseEngineEvent(ActionSink* sink, EngineEvent event, const Ectx& ectx) {
  if (sink == nullptr) return;
  uint32_t id = ectx.id();
  sink->RaiseEvent(
      event, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&id),
                                      sizeof id));
}

}  // namespace

template <typename Call>
inline HandlerResult SpinEngine::Invoke(const Ectx& ectx,
                                        EctxCounters& counters, Call call) {
  counters.invocations.Add();
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

void SpinEngine::RecordCycles(const Ectx& ectx, uint64_t cycles,
                              EctxCounters& counters) {
  counters.cycles.Add(cycles * counters.timed_weight);
  uint32_t gap = 1;
  const uint64_t budget = ectx.cycle_budget();
  if (budget == 0 && counters.invocations.Get() >= kExactCalls) {
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
  HandlerContext ctx = MakeContext(ectx, sink_, lcore_index_);

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

void SpinEngine::Deliver(const Ectx& ectx, MessageState& message,
                         PacketView& packet, bool first, bool last) {
  DeliverPacket(ectx, message, packet, first, last);
}

MessageState SpinEngine::RunSinglePacketMessage(const Ectx& ectx,
                                                PacketView& packet) {
  MessageState message;
  DeliverPacket(ectx, message, packet, /*first=*/true, /*last=*/true);
  return message;
}

void SpinEngine::RunCompletion(const Ectx& ectx, MessageState& message,
                               bool flow_control_triggered,
                               EctxCounters& counters) {
  const HandlerOps& ops = *ectx.instance().ops();
  if (ops.completion == nullptr) return;
  HandlerContext ctx = MakeContext(ectx, sink_, lcore_index_);
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
