// The built-in handlers installed and run the way the dataplane runs them:
// Ectx::Create (schema, state allocation, factory) and the sPIN engine
// (return code to disposition, counters, transparent when disabled). The
// engine's own rules are tested in tests/unit/engine; this checks that the
// handlers' codes and state mean what their docs say once installed.
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "dataplane/ectx.h"
#include "dataplane/spin_engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "handlers/api/testing.h"
#include "tests/unit/handlers/frames.h"
#include "tests/unit/handlers/handler_test_util.h"

namespace spinnic::handler_test {
namespace {

class EnginePathTest : public ::testing::Test {
 protected:
  std::unique_ptr<Ectx> Install(HandlerConfig config) {
    absl::StatusOr<std::unique_ptr<Ectx>> ectx = Ectx::Create(kId, config);
    EXPECT_TRUE(ectx.ok()) << ectx.status();
    return ectx.ok() ? *std::move(ectx) : nullptr;
  }

  static HandlerConfig Config(std::string kind) {
    HandlerConfig config;
    config.name = "under_test";
    config.kind = std::move(kind);
    return config;
  }

  // Runs `frame` as a single-packet message; returns the packet afterwards.
  std::unique_ptr<TestPacket> Deliver(const Ectx& ectx,
                                      const std::vector<uint8_t>& frame) {
    auto packet =
        std::make_unique<TestPacket>(frame, ClassifierLayers(frame), 0);
    engine_.RunSinglePacketMessage(ectx, packet->view());
    return packet;
  }

  static constexpr uint32_t kId = 3;
  FakeActionSink sink_;
  std::vector<EctxCounters> counters_ =
      std::vector<EctxCounters>(Ectx::kMaxEctxs);
  SpinEngine engine_{/*lcore_index=*/0, &sink_, counters_};
};

TEST_F(EnginePathTest, FilterDropIsAHandlerDrop) {
  HandlerConfig config = Config("filter");
  config.params = {{"payload_prefix", "ff"}};
  std::unique_ptr<Ectx> ectx = Install(config);
  ASSERT_NE(ectx, nullptr);
  FrameSpec spec;
  spec.payload = {0xff, 0x01};
  EXPECT_EQ(Deliver(*ectx, Build(spec))->view().GetDisposition(),
            Disposition::kDrop);
  spec.payload = {0x01, 0xff};
  EXPECT_EQ(Deliver(*ectx, Build(spec))->view().GetDisposition(),
            Disposition::kForward);
  EXPECT_EQ(counters_[kId].dropped.Get(), 1u);
  EXPECT_EQ(counters_[kId].failed.Get(), 0u);
  EXPECT_EQ(counters_[kId].invalid.Get(), 0u);
  EXPECT_EQ(counters_[kId].Invocations(), 2u);
}

TEST_F(EnginePathTest, ReflectRepliesInPlace) {
  std::unique_ptr<Ectx> ectx = Install(Config("reflect"));
  ASSERT_NE(ectx, nullptr);
  FrameSpec spec;
  spec.payload = {1, 2, 3};
  std::unique_ptr<TestPacket> packet = Deliver(*ectx, Build(spec));
  EXPECT_EQ(packet->view().GetDisposition(), Disposition::kReply);
  EXPECT_EQ(Hex(packet->bytes()), Hex(Build(Reflected(spec))));
}

TEST_F(EnginePathTest, CountDefaultsToItsMinimumState) {
  std::unique_ptr<Ectx> ectx = Install(Config("count"));
  ASSERT_NE(ectx, nullptr);
  EXPECT_EQ(ectx->state().size(), 16u);
  std::vector<uint8_t> frame = Build(FrameSpec{});
  Deliver(*ectx, frame);
  Deliver(*ectx, frame);
  uint64_t packets = 0;
  uint64_t bytes = 0;
  std::memcpy(&packets, ectx->state().data(), 8);
  std::memcpy(&bytes, ectx->state().data() + 8, 8);
  EXPECT_EQ(packets, 2u);
  EXPECT_EQ(bytes, 2 * frame.size());
}

TEST_F(EnginePathTest, CountBucketsInInstalledState) {
  HandlerConfig config = Config("count");
  config.params = {{"by", "dst_port"}, {"buckets", "4"}};
  config.state_size = 16 * 4;
  std::unique_ptr<Ectx> ectx = Install(config);
  ASSERT_NE(ectx, nullptr);
  FrameSpec spec;
  spec.dst_port = 4003;  // bucket 3
  Deliver(*ectx, Build(spec));
  uint64_t packets = 0;
  std::memcpy(&packets, ectx->state().data() + 16 * 3, 8);
  EXPECT_EQ(packets, 1u);
}

TEST_F(EnginePathTest, InstallErrorsNameTheHandlerAndTheFix) {
  absl::StatusOr<std::unique_ptr<Ectx>> ectx =
      Ectx::Create(kId, Config("xor_payload"));
  EXPECT_EQ(ectx.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ectx.status().message(),
              HasSubstr("handler 'under_test': missing required parameter "
                        "'key'"));

  HandlerConfig config = Config("count");
  config.params = {{"by", "port"}};
  ectx = Ectx::Create(kId, config);
  EXPECT_EQ(ectx.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ectx.status().message(), HasSubstr("write one of none"));

  config = Config("count");
  config.state_size = 8;
  ectx = Ectx::Create(kId, config);
  EXPECT_EQ(ectx.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ectx.status().message(),
              HasSubstr("below the 16 bytes kind 'count' needs"));

  // The state a kind needs can depend on its parameters.
  config = Config("count");
  config.params = {{"by", "dst_port"}, {"buckets", "8"}};
  config.state_size = 64;
  ectx = Ectx::Create(kId, config);
  EXPECT_EQ(ectx.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ectx.status().message(), HasSubstr("at least 128"));
  config.state_size = 0;
  ectx = Ectx::Create(kId, config);
  ASSERT_TRUE(ectx.ok()) << ectx.status();
  EXPECT_EQ((*ectx)->state().size(), 128u);
}

// A handler disabled for overrunning its budget no longer runs: packets take
// the default action untouched.
TEST_F(EnginePathTest, DisabledReflectIsTransparent) {
  HandlerConfig config = Config("reflect");
  config.cycle_budget = 1;  // every call overruns
  config.disable_after_overruns = 1;
  std::unique_ptr<Ectx> ectx = Install(config);
  ASSERT_NE(ectx, nullptr);
  std::vector<uint8_t> frame = Build(FrameSpec{});
  EXPECT_EQ(Deliver(*ectx, frame)->view().GetDisposition(),
            Disposition::kReply);
  ASSERT_TRUE(ectx->disabled());
  std::unique_ptr<TestPacket> bypassed = Deliver(*ectx, frame);
  EXPECT_EQ(bypassed->view().GetDisposition(), Disposition::kForward);
  EXPECT_EQ(Hex(bypassed->bytes()), Hex(frame));
  EXPECT_EQ(counters_[kId].bypassed.Get(), 1u);
  ASSERT_EQ(sink_.events().size(), 1u);
  EXPECT_EQ(sink_.events()[0].code, kEventEctxDisabled);
}

}  // namespace
}  // namespace spinnic::handler_test
