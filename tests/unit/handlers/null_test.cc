// null: returns SUCCESS and leaves every byte, the disposition and the state
// alone; it is the baseline for dispatch benchmarks.
#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "handlers/api/testing.h"
#include "tests/unit/handlers/frames.h"
#include "tests/unit/handlers/handler_test_util.h"

namespace spinnic::handler_test {
namespace {

TEST(NullTest, ForwardsUnchanged) {
  absl::StatusOr<HandlerInstance> handler = CreateHandlerForTest("null");
  ASSERT_TRUE(handler.ok()) << handler.status();
  FakeEctx ectx(/*state_size=*/64);
  FrameSpec spec;
  spec.payload = {1, 2, 3};
  std::vector<uint8_t> frame = Build(spec);
  TestPacket packet(frame, ClassifierLayers(frame));
  EXPECT_EQ(RunPayload(*handler, ectx.context(), packet.view()),
            HandlerResult::kSuccess);
  EXPECT_EQ(packet.view().GetDisposition(), Disposition::kForward);
  EXPECT_EQ(Hex(packet.bytes()), Hex(frame));
  for (uint8_t byte : ectx.state()) EXPECT_EQ(byte, 0);
  EXPECT_TRUE(ectx.sink().frames().empty());
  EXPECT_TRUE(ectx.sink().events().empty());
}

TEST(NullTest, TakesNoParameters) {
  absl::StatusOr<HandlerInstance> handler =
      CreateHandlerForTest("null", {{"x", "1"}});
  EXPECT_EQ(handler.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(handler.status().message(),
              ::testing::HasSubstr("this handler takes: no parameters"));
}

}  // namespace
}  // namespace spinnic::handler_test
