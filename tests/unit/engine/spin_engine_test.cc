// The sPIN engine's contract: header before payloads, completion after the
// last payload, what each return code does to the packet and the message,
// invalid codes, cycle budgets and auto-disable. Handlers here are test kinds
// that log their calls and return scripted codes.
#include "dataplane/spin_engine.h"

#include <rte_cycles.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "handlers/api/handler.h"

namespace spinnic {
namespace {

// Layers of a frame with none the classifier found; a view reads them in
// place, so they must outlive it.
const PacketLayers kNoLayers;

// What the scripted handlers return next, and the calls they saw.
struct Script {
  HandlerResult header = HandlerResult::kProcessData;
  std::vector<HandlerResult> payload;  // per packet; kSuccess when exhausted
  HandlerResult completion = HandlerResult::kSuccess;
  std::vector<std::string> calls;
  uint64_t completion_dropped_bytes = 0;
  int spin_cycles = 0;
  size_t payload_calls = 0;
  std::vector<uint64_t> message_lengths;  // what test_payload_only saw
};
Script* g_script = nullptr;

class Scripted {
 public:
  static constexpr absl::string_view kName = "test_scripted";
  static constexpr absl::string_view kDescription = "engine test";
  static constexpr uint32_t kMinStateSize = 0;
  static absl::StatusOr<std::unique_ptr<Scripted>> Create(
      const HandlerParams&) {
    return std::make_unique<Scripted>();
  }
  HandlerResult Header(HandlerContext&, PacketView& packet) {
    g_script->calls.push_back("header:" + std::to_string(packet.Length()));
    return g_script->header;
  }
  HandlerResult Payload(HandlerContext&, PacketView& packet) {
    g_script->calls.push_back("payload:" + std::to_string(packet.Length()));
    if (g_script->spin_cycles > 0) {
      uint64_t until = rte_rdtsc() + g_script->spin_cycles;
      while (rte_rdtsc() < until) {
      }
    }
    size_t i = g_script->payload_calls++;
    return i < g_script->payload.size() ? g_script->payload[i]
                                        : HandlerResult::kSuccess;
  }
  HandlerResult Completion(HandlerContext&, uint64_t dropped_bytes, bool) {
    g_script->calls.push_back("completion");
    g_script->completion_dropped_bytes = dropped_bytes;
    return g_script->completion;
  }
};
SPINNIC_HANDLER(Scripted);

// A kind with only a payload handler.
class PayloadOnly {
 public:
  static constexpr absl::string_view kName = "test_payload_only";
  static constexpr absl::string_view kDescription = "engine test";
  static constexpr uint32_t kMinStateSize = 0;
  static absl::StatusOr<std::unique_ptr<PayloadOnly>> Create(
      const HandlerParams&) {
    return std::make_unique<PayloadOnly>();
  }
  HandlerResult Payload(HandlerContext&, PacketView& packet) {
    g_script->calls.push_back("payload");
    g_script->message_lengths.push_back(packet.Message().length);
    size_t i = g_script->payload_calls++;
    return i < g_script->payload.size() ? g_script->payload[i]
                                        : HandlerResult::kSuccess;
  }
};
SPINNIC_HANDLER(PayloadOnly);

class RecordingSink : public ActionSink {
 public:
  bool EmitFrame(std::span<const uint8_t>, EmitPort) override { return true; }
  bool RaiseEvent(uint32_t code, std::span<const uint8_t>) override {
    events.push_back(code);
    return true;
  }
  std::vector<uint32_t> events;
};

class SpinEngineTest : public ::testing::Test {
 protected:
  SpinEngineTest() : counters_(Ectx::kMaxEctxs), engine_(0, &sink_, counters_) {
    g_script = &script_;
  }
  ~SpinEngineTest() override { g_script = nullptr; }

  std::unique_ptr<Ectx> Make(absl::string_view kind, uint64_t budget = 0,
                             uint32_t disable_after = 0) {
    HandlerConfig config;
    config.name = "t";
    config.kind = std::string(kind);
    config.cycle_budget = budget;
    config.disable_after_overruns = disable_after;
    absl::StatusOr<std::unique_ptr<Ectx>> ectx = Ectx::Create(3, config);
    EXPECT_TRUE(ectx.ok()) << ectx.status();
    return *std::move(ectx);
  }

  // Delivers a message of packets with the given lengths; returns their
  // dispositions.
  std::vector<Disposition> Message(const Ectx& ectx,
                                   std::vector<uint32_t> lengths) {
    MessageState message;
    std::vector<Disposition> out;
    for (size_t i = 0; i < lengths.size(); ++i) {
      std::vector<uint8_t> bytes(lengths[i]);
      PacketView packet(bytes.data(), lengths[i], kNoLayers, 0);
      engine_.Deliver(ectx, message, packet, i == 0, i + 1 == lengths.size());
      out.push_back(packet.GetDisposition());
    }
    return out;
  }

  const EctxCounters& Counters() { return counters_[3]; }

  Script script_;
  RecordingSink sink_;
  std::vector<EctxCounters> counters_;
  SpinEngine engine_;
};

using D = Disposition;
using R = HandlerResult;

TEST_F(SpinEngineTest, HeaderThenEveryPayloadThenCompletion) {
  auto ectx = Make("test_scripted");
  EXPECT_EQ(Message(*ectx, {100, 200, 300}),
            (std::vector<D>{D::kForward, D::kForward, D::kForward}));
  EXPECT_EQ(script_.calls, (std::vector<std::string>{
                               "header:100", "payload:100", "payload:200",
                               "payload:300", "completion"}));
  EXPECT_EQ(Counters().messages.Get(), 1u);
  EXPECT_EQ(Counters().packets.Get(), 3u);
  EXPECT_EQ(Counters().bytes.Get(), 600u);
  EXPECT_EQ(Counters().invocations.Get(), 5u);
}

TEST_F(SpinEngineTest, SinglePacketMessageRunsAllThreeInOrder) {
  auto ectx = Make("test_scripted");
  std::vector<uint8_t> bytes(64);
  PacketView packet(bytes.data(), 64, kNoLayers, 0);
  engine_.RunSinglePacketMessage(*ectx, packet);
  EXPECT_EQ(script_.calls, (std::vector<std::string>{"header:64", "payload:64",
                                                     "completion"}));
}

TEST_F(SpinEngineTest, HeaderSuccessSkipsPayloadHandlersButNotCompletion) {
  script_.header = R::kSuccess;
  auto ectx = Make("test_scripted");
  EXPECT_EQ(Message(*ectx, {10, 20}),
            (std::vector<D>{D::kForward, D::kForward}));
  EXPECT_EQ(script_.calls,
            (std::vector<std::string>{"header:10", "completion"}));
}

TEST_F(SpinEngineTest, HeaderDropDropsTheWholeMessage) {
  script_.header = R::kDrop;
  auto ectx = Make("test_scripted");
  EXPECT_EQ(Message(*ectx, {10, 20}), (std::vector<D>{D::kDrop, D::kDrop}));
  EXPECT_EQ(script_.calls,
            (std::vector<std::string>{"header:10", "completion"}));
  EXPECT_EQ(script_.completion_dropped_bytes, 30u);
  EXPECT_EQ(Counters().dropped.Get(), 2u);
  EXPECT_TRUE(sink_.events.empty());
}

TEST_F(SpinEngineTest, HeaderFailDropsMessageAndRaisesEvent) {
  script_.header = R::kFail;
  auto ectx = Make("test_scripted");
  EXPECT_EQ(Message(*ectx, {10, 20}), (std::vector<D>{D::kDrop, D::kDrop}));
  EXPECT_EQ(Counters().failed.Get(), 1u);
  EXPECT_EQ(sink_.events, std::vector<uint32_t>{kEventHandlerFailed});
}

TEST_F(SpinEngineTest, PayloadDropDropsOnlyThatPacket) {
  script_.payload = {R::kSuccess, R::kDrop, R::kSuccess};
  auto ectx = Make("test_scripted");
  EXPECT_EQ(Message(*ectx, {10, 20, 30}),
            (std::vector<D>{D::kForward, D::kDrop, D::kForward}));
  EXPECT_EQ(script_.completion_dropped_bytes, 20u);
  EXPECT_EQ(Counters().dropped.Get(), 1u);
}

TEST_F(SpinEngineTest, PayloadFailDropsTheRestAndStillCompletes) {
  script_.payload = {R::kSuccess, R::kFail};
  auto ectx = Make("test_scripted");
  EXPECT_EQ(Message(*ectx, {10, 20, 30}),
            (std::vector<D>{D::kForward, D::kDrop, D::kDrop}));
  EXPECT_EQ(script_.calls,
            (std::vector<std::string>{"header:10", "payload:10", "payload:20",
                                      "completion"}));
  EXPECT_EQ(script_.completion_dropped_bytes, 50u);
  EXPECT_EQ(sink_.events, std::vector<uint32_t>{kEventHandlerFailed});
}

TEST_F(SpinEngineTest, InvalidCodesAreCountedAndTreatedAsFail) {
  script_.payload = {R::kProcessData};  // a header-only code
  auto ectx = Make("test_scripted");
  EXPECT_EQ(Message(*ectx, {10, 20}), (std::vector<D>{D::kDrop, D::kDrop}));
  EXPECT_EQ(Counters().invalid.Get(), 1u);
  EXPECT_EQ(sink_.events, std::vector<uint32_t>{kEventHandlerInvalid});

  script_ = Script();
  sink_.events.clear();
  script_.header = static_cast<HandlerResult>(42);  // not a code at all
  EXPECT_EQ(Message(*ectx, {10}), (std::vector<D>{D::kDrop}));
  EXPECT_EQ(Counters().invalid.Get(), 2u);

  script_ = Script();
  script_.completion = R::kProcessData;
  EXPECT_EQ(Message(*ectx, {10}), (std::vector<D>{D::kForward}));
  EXPECT_EQ(Counters().invalid.Get(), 3u);
}

TEST_F(SpinEngineTest, SinglePacketMessageReportsInvalidCodes) {
  auto ectx = Make("test_scripted");
  std::vector<uint8_t> bytes(10);
  PacketView ok(bytes.data(), 10, kNoLayers, 0);
  EXPECT_FALSE(engine_.RunSinglePacketMessage(*ectx, ok).invalid);
  script_ = Script();
  script_.payload = {R::kProcessData};
  PacketView bad(bytes.data(), 10, kNoLayers, 0);
  EXPECT_TRUE(engine_.RunSinglePacketMessage(*ectx, bad).invalid);
  EXPECT_EQ(bad.GetDisposition(), D::kDrop);
}

TEST_F(SpinEngineTest, CompletionFailIsCountedWithEvent) {
  script_.completion = R::kFail;
  auto ectx = Make("test_scripted");
  Message(*ectx, {10});
  EXPECT_EQ(Counters().failed.Get(), 1u);
  EXPECT_EQ(sink_.events, std::vector<uint32_t>{kEventHandlerFailed});
}

TEST_F(SpinEngineTest, KindWithoutHeaderRunsPayloadOnEveryPacket) {
  auto ectx = Make("test_payload_only");
  Message(*ectx, {10, 20});
  EXPECT_EQ(script_.calls, (std::vector<std::string>{"payload", "payload"}));
}

// A payload-only kind's one-packet messages take RunPayloadOnly, which
// counts a packet, a message and a call once (single_calls): the totals
// must read as Deliver's would.
TEST_F(SpinEngineTest, PayloadOnlySinglePacketMessagesCountAsDeliverDoes) {
  auto ectx = Make("test_payload_only");
  script_.payload = {R::kSuccess, R::kDrop, R::kProcessData, R::kFail};
  std::vector<uint8_t> bytes(100);
  PacketLayers layers;
  layers.l3_end = 90;
  layers.payload_offset = 42;
  std::vector<D> dispositions;
  std::vector<bool> invalid;
  for (int i = 0; i < 4; ++i) {
    PacketView packet(bytes.data(), 100, layers, 0);
    invalid.push_back(engine_.RunSinglePacketMessage(*ectx, packet).invalid);
    dispositions.push_back(packet.GetDisposition());
  }
  EXPECT_EQ(dispositions,
            (std::vector<D>{D::kForward, D::kDrop, D::kDrop, D::kDrop}));
  EXPECT_EQ(invalid, (std::vector<bool>{false, false, true, false}));
  // The message is the payload: from 42 to the IP datagram's end at 90.
  EXPECT_EQ(script_.message_lengths, (std::vector<uint64_t>(4, 48)));
  EXPECT_EQ(Counters().Messages(), 4u);
  EXPECT_EQ(Counters().Packets(), 4u);
  EXPECT_EQ(Counters().Invocations(), 4u);
  EXPECT_EQ(Counters().bytes.Get(), 400u);
  EXPECT_EQ(Counters().dropped.Get(), 3u);
  EXPECT_EQ(Counters().invalid.Get(), 1u);
  EXPECT_EQ(Counters().failed.Get(), 1u);
  EXPECT_EQ(sink_.events,
            (std::vector<uint32_t>{kEventHandlerInvalid, kEventHandlerFailed}));
  // A multi-packet message of the same kind still counts through Deliver.
  Message(*ectx, {10, 20});
  EXPECT_EQ(Counters().Messages(), 5u);
  EXPECT_EQ(Counters().Packets(), 6u);
  EXPECT_EQ(Counters().Invocations(), 6u);
}

TEST_F(SpinEngineTest, AbortRunsCompletionOnce) {
  auto ectx = Make("test_scripted");
  MessageState message;
  std::vector<uint8_t> bytes(10);
  PacketView packet(bytes.data(), 10, kNoLayers, 0);
  engine_.Deliver(*ectx, message, packet, true, false);
  engine_.Abort(*ectx, message, /*flow_control_triggered=*/true);
  EXPECT_EQ(script_.calls, (std::vector<std::string>{"header:10", "payload:10",
                                                     "completion"}));
}

// Budgets are far above what a call that does not spin costs, even under
// sanitizers, and spinning is far above the budget: the outcome does not
// depend on how fast the machine is.
constexpr int kSpinCycles = 50'000'000;
constexpr uint64_t kBudget = 5'000'000;

TEST_F(SpinEngineTest, OverBudgetIsCountedAndAutoDisableMakesEctxTransparent) {
  script_.spin_cycles = kSpinCycles;
  auto ectx = Make("test_scripted", kBudget, /*disable_after=*/2);
  Message(*ectx, {10});  // payload over budget once
  EXPECT_EQ(Counters().over_budget.Get(), 1u);
  EXPECT_FALSE(ectx->disabled());
  Message(*ectx, {10});
  EXPECT_TRUE(ectx->disabled());
  EXPECT_EQ(sink_.events, std::vector<uint32_t>{kEventEctxDisabled});
  size_t calls = script_.calls.size();
  EXPECT_EQ(Message(*ectx, {10}), (std::vector<D>{D::kForward}));
  EXPECT_EQ(script_.calls.size(), calls) << "a disabled ECTX ran a handler";
  EXPECT_EQ(Counters().bypassed.Get(), 1u);
}

TEST_F(SpinEngineTest, BudgetWithoutAutoDisableNeverDisables) {
  script_.spin_cycles = kSpinCycles;
  auto ectx = Make("test_scripted", kBudget);
  for (int i = 0; i < 3; ++i) Message(*ectx, {10});
  EXPECT_EQ(Counters().over_budget.Get(), 3u);
  EXPECT_FALSE(ectx->disabled());
}

// Past kExactCalls only some calls are timed (EctxCounters::cycles); each
// timed one stands for the calls since the previous one, so cycles per
// invocation stays the mean cost of a call: here at least what the payload
// calls spin. No tight upper bound: on a shared machine a timed call that
// is preempted weighs as much as the calls it stands for. It cannot exceed
// the time that passed times the largest weight, though.
TEST_F(SpinEngineTest, SampledCyclesEstimateTheMeanCostPerCall) {
  constexpr int kMessages = 3000;
  constexpr int kPayloadSpin = 20'000;
  script_.spin_cycles = kPayloadSpin;
  auto ectx = Make("test_scripted");
  const uint64_t start = rte_rdtsc();
  for (int i = 0; i < kMessages; ++i) Message(*ectx, {10});
  const uint64_t elapsed = rte_rdtsc() - start;
  EXPECT_EQ(Counters().invocations.Get(), 3u * kMessages);
  EXPECT_GT(Counters().cycles.Get(), uint64_t{kPayloadSpin} * kMessages / 2);
  EXPECT_LE(Counters().cycles.Get(), elapsed * (kCycleSamplePeriod * 3 / 2));

  // The histogram holds the same timed calls with the same weights: its
  // sum is `cycles`, its count lags the invocations by fewer than 1.5
  // sampling periods, and the spinning payload calls (a third of all) are
  // at or above 20,000 cycles while the others are not.
  CycleHistogramStats h;
  h.Add(Counters().call_cycles);
  EXPECT_EQ(h.sum, Counters().cycles.Get());
  EXPECT_LE(h.total(), 3u * kMessages);
  EXPECT_GT(h.total(), 3u * kMessages - kCycleSamplePeriod * 3 / 2);
  uint64_t slow = 0;
  for (size_t b = CycleHistogram::BucketOf(kPayloadSpin);
       b < CycleHistogram::kBuckets; ++b) {
    slow += h.counts[b];
  }
  EXPECT_GT(slow, h.total() / 6);
  EXPECT_LT(slow, h.total() * 2 / 3);
}

TEST(EctxTest, CreateValidatesKindStateAndParams) {
  HandlerConfig config;
  config.name = "x";
  config.kind = "no_such_kind";
  absl::StatusOr<std::unique_ptr<Ectx>> ectx = Ectx::Create(0, config);
  ASSERT_FALSE(ectx.ok());
  EXPECT_EQ(ectx.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(ectx.status().message().find("test_scripted"),
            absl::string_view::npos)
      << "the error should list the known kinds: " << ectx.status();

  config.kind = "test_scripted";
  config.state_size = Ectx::kMaxStateSize + 1;
  EXPECT_FALSE(Ectx::Create(0, config).ok());
  config.state_size = 4;
  config.initial_state = {1, 2, 3, 4, 5};
  EXPECT_FALSE(Ectx::Create(0, config).ok());
  config.initial_state = {1, 2};
  ectx = Ectx::Create(0, config);
  ASSERT_TRUE(ectx.ok());
  EXPECT_EQ(
      std::vector<uint8_t>((*ectx)->state().begin(), (*ectx)->state().end()),
      (std::vector<uint8_t>{1, 2, 0, 0}));
  config.params = {{"unknown", "1"}};
  EXPECT_FALSE(Ectx::Create(0, config).ok());
  EXPECT_EQ(Ectx::Create(Ectx::kMaxEctxs,
                         HandlerConfig{.name = "y", .kind = "test_scripted"})
                .status()
                .code(),
            absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace spinnic
