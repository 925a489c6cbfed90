// Shared setup of the built-in handlers' tests: the frame tools of frames.h
// and the test helpers of handlers/api/testing.h under the short names the
// tests use, and the few helpers every handler test needs.
//
// Test-only: the tests are written inside namespace spinnic::handler_test,
// so that the using-declarations below serve them all.
#ifndef SPINNIC_TESTS_UNIT_HANDLERS_HANDLER_TEST_UTIL_H_
#define SPINNIC_TESTS_UNIT_HANDLERS_HANDLER_TEST_UTIL_H_

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "handlers/api/testing.h"
#include "tests/unit/handlers/frames.h"

namespace spinnic::handler_test {

using ::spinnic::test_frames::Build;
using ::spinnic::test_frames::ChecksumsValid;
using ::spinnic::test_frames::ClassifierLayers;
using ::spinnic::test_frames::FrameSpec;
using ::spinnic::test_frames::Get16;
using ::spinnic::test_frames::Hex;
using ::spinnic::test_frames::L4;
using ::spinnic::test_frames::Reflected;
using ::spinnic::test_frames::XorBytes;
using ::testing::HasSubstr;

using HandlerParamMap = absl::flat_hash_map<std::string, std::string>;

// The uint64 word number `index` of the ECTX's state (the layout most
// handlers document: counters of 8 bytes, in host byte order).
inline uint64_t StateWord(FakeEctx& ectx, size_t index) {
  uint64_t value;
  std::memcpy(&value, ectx.state().data() + 8 * index, 8);
  return value;
}

// The characters of `text` as bytes, e.g. for a payload.
inline std::vector<uint8_t> Text(absl::string_view text) {
  return {text.begin(), text.end()};
}

// A handler of `kind` created with `params` the way an install creates it;
// fails the test when that is refused.
inline HandlerInstance MakeHandler(absl::string_view kind,
                                   const HandlerParamMap& params = {}) {
  absl::StatusOr<HandlerInstance> handler = CreateHandlerForTest(kind, params);
  EXPECT_TRUE(handler.ok()) << handler.status();
  return *std::move(handler);
}

// Parameters an install must refuse, and what the refusal must say.
struct BadParams {
  HandlerParamMap params;
  std::string says;
};

// Expects each case to be refused as INVALID_ARGUMENT saying what to fix.
inline void ExpectBadParamsSayWhatToFix(absl::string_view kind,
                                        std::span<const BadParams> cases) {
  for (const BadParams& bad : cases) {
    SCOPED_TRACE(bad.says);
    absl::StatusOr<HandlerInstance> handler =
        CreateHandlerForTest(kind, bad.params);
    EXPECT_EQ(handler.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(handler.status().message(), HasSubstr(bad.says));
  }
}

}  // namespace spinnic::handler_test

#endif  // SPINNIC_TESTS_UNIT_HANDLERS_HANDLER_TEST_UTIL_H_
