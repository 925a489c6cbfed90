// reduce: N contributors' vectors, cut into packets at odd element
// boundaries or inside elements (integers), sum exactly into region 0
// (int32 and int64 wrapping, float64 within rounding); float packets
// misaligned to the element size and packets past `count` elements FAIL
// with nothing written; the round event is raised once, at the
// N-th completed contribution; a read-only, short or misaligned region
// FAILs; bad parameters say what to write.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "gtest/gtest.h"
#include "handlers/api/testing.h"
#include "tests/unit/handlers/handler_test_util.h"

namespace spinnic::handler_test {
namespace {

constexpr uint8_t kUntouched = 0xee;

enum Word : size_t {
  kContributions = 0,
  kElements = 1,
  kBadPackets = 2,
  kRounds = 3,
  kFailed = 4,
  kBadRegion = 5,
  kEventsRefused = 6,
};

HandlerParamMap Params(absl::string_view type, size_t count,
                       size_t contributors, uint32_t event = 0) {
  return {{"type", std::string(type)},
          {"count", std::to_string(count)},
          {"contributors", std::to_string(contributors)},
          {"event", std::to_string(event)}};
}

// The elements as little-endian wire bytes.
template <typename T>
std::vector<uint8_t> Wire(const std::vector<T>& elements) {
  std::vector<uint8_t> bytes;
  for (T element : elements) {
    uint8_t raw[sizeof(T)];
    std::memcpy(raw, &element, sizeof(T));  // the tests run little-endian
    bytes.insert(bytes.end(), raw, raw + sizeof(T));
  }
  return bytes;
}

template <typename T>
std::vector<T> Elements(const std::vector<uint8_t>& region, size_t count) {
  std::vector<T> elements(count);
  std::memcpy(elements.data(), region.data(), count * sizeof(T));
  return elements;
}

struct Packet {
  Packet(const std::vector<uint8_t>& payload, const MessageInfo& message)
      : packet(Frame(payload)) {
    packet.view().SetMessage(message);
  }
  static std::vector<uint8_t> Frame(const std::vector<uint8_t>& payload) {
    FrameSpec spec;
    spec.payload = payload;
    return Build(spec);
  }
  TestPacket packet;
};

// Runs one contribution as the engine runs a message: cut after each of
// `sizes` bytes (the rest in a last packet), Header on the first, Payload on
// each (each must be consumed), Completion after the last.
void RunMessage(const HandlerInstance& handler, FakeEctx& ectx,
                const std::vector<uint8_t>& wire,
                const std::vector<size_t>& sizes,
                MessageTransport transport = MessageTransport::kDiadStream) {
  size_t offset = 0;
  size_t index = 0;
  while (offset < wire.size()) {
    size_t size = index < sizes.size() ? sizes[index] : wire.size() - offset;
    size = std::min(size, wire.size() - offset);
    SCOPED_TRACE(testing::Message() << "packet at offset " << offset);
    Packet p({wire.begin() + offset, wire.begin() + offset + size},
             {.transport = transport, .offset = offset, .length = wire.size()});
    if (offset == 0) {
      ASSERT_EQ(RunHeader(handler, ectx.context(), p.packet.view()),
                HandlerResult::kProcessData);
    }
    ASSERT_EQ(RunPayload(handler, ectx.context(), p.packet.view()),
              HandlerResult::kSuccess);
    EXPECT_EQ(p.packet.view().GetDisposition(), Disposition::kConsume);
    offset += size;
    ++index;
  }
  EXPECT_EQ(RunCompletion(handler, ectx.context()), HandlerResult::kSuccess);
}

template <typename T>
void ExpectExactIntegerSum(absl::string_view type, bool cut_inside_elements) {
  using U = std::make_unsigned_t<T>;
  constexpr size_t kCount = 13;
  constexpr size_t kContributors = 5;
  HandlerInstance handler =
      MakeHandler("reduce", Params(type, kCount, kContributors));
  FakeEctx ectx(56);
  std::vector<uint8_t> region(kCount * sizeof(T), 0);
  ectx.AddRegion(1, region);
  std::vector<U> expected(kCount, 0);
  for (size_t c = 0; c < kContributors; ++c) {
    std::vector<T> vector(kCount);
    for (size_t i = 0; i < kCount; ++i) {
      // Large and negative values: the sum wraps past the type's range.
      const U magnitude = static_cast<U>((c + 1) * 1000003 * (i + 1));
      vector[i] = static_cast<T>(i % 2 == 0 ? magnitude : U{0} - magnitude);
      if (i == 4) vector[i] = std::numeric_limits<T>::max() - T(c);
      expected[i] += static_cast<U>(vector[i]);
    }
    // Packets of 1, 3, 2, 7 elements: odd element boundaries, different
    // per contributor; or cut inside elements, as DiAD's 1404-byte
    // packets cut int64 vectors (5, 11, 3, 2, ... bytes).
    const size_t first = (c % 3 + 1) * sizeof(T);
    if (cut_inside_elements) {
      RunMessage(handler, ectx, Wire(vector), {c + 1, 11, 3, 2, 1, 9, 13});
    } else {
      RunMessage(handler, ectx, Wire(vector),
                 {first, 3 * sizeof(T), 2 * sizeof(T)});
    }
  }
  EXPECT_EQ(Elements<U>(region, kCount), expected);
  EXPECT_EQ(StateWord(ectx, kContributions), kContributors);
  EXPECT_EQ(StateWord(ectx, kElements), kContributors * kCount);
  EXPECT_EQ(StateWord(ectx, kRounds), 1u);
  EXPECT_EQ(StateWord(ectx, kBadPackets), 0u);
}

TEST(ReduceTest, Int32SumIsExactAndWraps) {
  ExpectExactIntegerSum<int32_t>("int32", false);
}

TEST(ReduceTest, Int64SumIsExactAndWraps) {
  ExpectExactIntegerSum<int64_t>("int64", false);
}

TEST(ReduceTest, Int32SumIsExactWhenPacketsCutElements) {
  ExpectExactIntegerSum<int32_t>("int32", true);
}

TEST(ReduceTest, Int64SumIsExactWhenPacketsCutElements) {
  ExpectExactIntegerSum<int64_t>("int64", true);
}

// Each element's bytes may arrive in any order, from any packets: the parts
// add up to the element. Every byte of a two-element int64 vector as a
// packet of its own, in reverse order.
TEST(ReduceTest, Int64BytesInAnyOrderSumExactly) {
  HandlerInstance handler = MakeHandler("reduce", Params("int64", 2, 1));
  FakeEctx ectx(56);
  std::vector<uint8_t> region(16, 0);
  ectx.AddRegion(1, region);
  const std::vector<int64_t> vector = {-0x0123456789abcdefLL,
                                       0x7edcba9876543210LL};
  const std::vector<uint8_t> wire = Wire(vector);
  for (size_t i = wire.size(); i-- > 0;) {
    Packet p({wire[i]}, {.offset = i, .length = wire.size()});
    ASSERT_EQ(RunPayload(handler, ectx.context(), p.packet.view()),
              HandlerResult::kSuccess);
  }
  EXPECT_EQ(Elements<int64_t>(region, 2), vector);
  EXPECT_EQ(StateWord(ectx, kElements), 2u);
}

TEST(ReduceTest, Float64Sum) {
  constexpr size_t kCount = 7;
  HandlerInstance handler = MakeHandler("reduce", Params("float64", kCount, 3));
  FakeEctx ectx(56);
  std::vector<uint8_t> region(kCount * 8, 0);
  ectx.AddRegion(1, region);
  const std::vector<double> a = {1.5, -2.25, 1e10, 0.0, 3.0, -0.5, 7.0};
  const std::vector<double> b = {0.5, 2.25, 1.0, -1.0, 4.0, 0.25, 1e-3};
  const std::vector<double> c = {1.0, 0.0, -1e10, 2.0, 5.0, 0.25, 2.0};
  RunMessage(handler, ectx, Wire(a), {8, 24});
  RunMessage(handler, ectx, Wire(b), {40});
  RunMessage(handler, ectx, Wire(c), {16, 8, 8});
  const std::vector<double> sum = Elements<double>(region, kCount);
  for (size_t i = 0; i < kCount; ++i) {
    EXPECT_DOUBLE_EQ(sum[i], a[i] + b[i] + c[i]) << i;
  }
  EXPECT_EQ(sum[0], 3.0);
  EXPECT_EQ(sum[4], 12.0);
}

TEST(ReduceTest, Float32Sum) {
  HandlerInstance handler = MakeHandler("reduce", Params("float32", 3, 2));
  FakeEctx ectx(56);
  std::vector<uint8_t> region(12, 0);
  ectx.AddRegion(1, region);
  RunMessage(handler, ectx, Wire(std::vector<float>{1.5f, 2.0f, -3.0f}), {4});
  RunMessage(handler, ectx, Wire(std::vector<float>{0.25f, 2.0f, 1.0f}), {8});
  EXPECT_EQ(Elements<float>(region, 3),
            (std::vector<float>{1.75f, 4.0f, -2.0f}));
}

// A float cannot be added in parts: its packets must hold whole elements.
TEST(ReduceTest, MisalignedFloatPacketsAreRefusedAndWriteNothing) {
  HandlerInstance handler = MakeHandler("reduce", Params("float32", 8, 2));
  FakeEctx ectx(56);
  std::vector<uint8_t> region(32, kUntouched);
  ectx.AddRegion(1, region);
  const std::vector<uint8_t> wire = Wire(std::vector<float>{1, 2, 3, 4});
  // Offset not a multiple of 4.
  Packet offset_off(wire, {.offset = 2, .length = 0});
  EXPECT_EQ(RunPayload(handler, ectx.context(), offset_off.packet.view()),
            HandlerResult::kFail);
  // Length not a multiple of 4.
  Packet length_off({wire.begin(), wire.begin() + 6}, {.offset = 4});
  EXPECT_EQ(RunPayload(handler, ectx.context(), length_off.packet.view()),
            HandlerResult::kFail);
  // A message whose known length is not a multiple: refused in the header.
  Packet header_off(wire, {.offset = 0, .length = 18});
  EXPECT_EQ(RunHeader(handler, ectx.context(), header_off.packet.view()),
            HandlerResult::kFail);
  EXPECT_EQ(StateWord(ectx, kBadPackets), 3u);
  EXPECT_EQ(StateWord(ectx, kElements), 0u);
  EXPECT_EQ(Hex(region), Hex(std::vector<uint8_t>(32, kUntouched)));
  // The failed message is not a contribution.
  EXPECT_EQ(RunCompletion(handler, ectx.context(), /*dropped_bytes=*/16),
            HandlerResult::kSuccess);
  EXPECT_EQ(StateWord(ectx, kFailed), 1u);
  EXPECT_EQ(StateWord(ectx, kContributions), 0u);
}

TEST(ReduceTest, PastCountElementsIsRefusedAndWritesNothing) {
  HandlerInstance handler = MakeHandler("reduce", Params("int64", 4, 1));
  FakeEctx ectx(56);
  // Larger than count * 8: the handler must stop at count, not the region.
  std::vector<uint8_t> region(64, kUntouched);
  ectx.AddRegion(1, region);
  const std::vector<uint8_t> wire = Wire(std::vector<int64_t>{1, 2});
  // Elements 3 and 4 of a 4-element vector: past the end.
  Packet packet(wire, {.transport = MessageTransport::kRoceSend, .offset = 24});
  EXPECT_EQ(RunPayload(handler, ectx.context(), packet.packet.view()),
            HandlerResult::kFail);
  // Far past, where offset + size would wrap.
  Packet wrap(wire, {.offset = ~uint64_t{0} - 7});
  EXPECT_EQ(RunPayload(handler, ectx.context(), wrap.packet.view()),
            HandlerResult::kFail);
  // A message of 5 elements: refused whole by the header.
  Packet header(wire, {.offset = 0, .length = 40});
  EXPECT_EQ(RunHeader(handler, ectx.context(), header.packet.view()),
            HandlerResult::kFail);
  EXPECT_EQ(StateWord(ectx, kBadPackets), 3u);
  EXPECT_EQ(Hex(region), Hex(std::vector<uint8_t>(64, kUntouched)));
  // The last two elements exactly fit.
  Packet fits(wire, {.offset = 16});
  EXPECT_EQ(RunPayload(handler, ectx.context(), fits.packet.view()),
            HandlerResult::kSuccess);
  EXPECT_EQ(StateWord(ectx, kElements), 2u);
}

TEST(ReduceTest, RaisesTheEventOnceAtTheNthCompletionPerRound) {
  HandlerInstance handler =
      MakeHandler("reduce", Params("int32", 2, 3, /*event=*/0x5244));
  FakeEctx ectx(56);
  std::vector<uint8_t> region(8, 0);
  ectx.AddRegion(1, region);
  const std::vector<uint8_t> wire = Wire(std::vector<int32_t>{1, 10});
  for (int i = 0; i < 2; ++i) RunMessage(handler, ectx, wire, {4});
  EXPECT_TRUE(ectx.sink().events().empty());
  // A failed message does not complete the round.
  EXPECT_EQ(RunCompletion(handler, ectx.context(), /*dropped_bytes=*/4),
            HandlerResult::kSuccess);
  EXPECT_TRUE(ectx.sink().events().empty());
  RunMessage(handler, ectx, wire, {});
  ASSERT_EQ(ectx.sink().events().size(), 1u);
  EXPECT_EQ(ectx.sink().events()[0].code, 0x5244u);
  ASSERT_EQ(ectx.sink().events()[0].data.size(), 8u);
  uint64_t round;
  std::memcpy(&round, ectx.sink().events()[0].data.data(), 8);
  EXPECT_EQ(round, 1u);
  EXPECT_EQ(Elements<int32_t>(region, 2), (std::vector<int32_t>{3, 30}));
  EXPECT_EQ(StateWord(ectx, kRounds), 1u);

  // The host zeroes the region; the next round counts on.
  std::fill(region.begin(), region.end(), 0);
  for (int i = 0; i < 2; ++i) RunMessage(handler, ectx, wire, {});
  EXPECT_EQ(ectx.sink().events().size(), 1u);
  ectx.sink().set_fail_events(true);
  RunMessage(handler, ectx, wire, {});
  EXPECT_EQ(StateWord(ectx, kRounds), 2u);
  EXPECT_EQ(StateWord(ectx, kEventsRefused), 1u);
  EXPECT_EQ(StateWord(ectx, kContributions), 6u);
  EXPECT_EQ(Elements<int32_t>(region, 2), (std::vector<int32_t>{3, 30}));

  // Without `event`, the round completes silently.
  HandlerInstance quiet = MakeHandler("reduce", Params("int32", 2, 1));
  FakeEctx quiet_ectx(56);
  quiet_ectx.AddRegion(1, region);
  RunMessage(quiet, quiet_ectx, wire, {});
  EXPECT_TRUE(quiet_ectx.sink().events().empty());
  EXPECT_EQ(StateWord(quiet_ectx, kRounds), 1u);
}

TEST(ReduceTest, UnusableRegionFailsAndIsNotWritten) {
  const std::vector<uint8_t> wire = Wire(std::vector<int32_t>{1, 2});
  struct Case {
    const char* what;
    size_t size;
    size_t skew;
    bool writable;
  };
  for (const Case& c :
       {Case{"read-only", 8, 0, false}, Case{"shorter than count", 7, 0, true},
        Case{"misaligned", 8, 1, true}}) {
    SCOPED_TRACE(c.what);
    HandlerInstance handler = MakeHandler("reduce", Params("int32", 2, 1));
    FakeEctx ectx(56);
    std::vector<uint8_t> region(16, kUntouched);
    ectx.AddRegion(1, std::span<uint8_t>(region).subspan(c.skew, c.size),
                   /*readable=*/true, c.writable);
    Packet packet(wire, {.offset = 0, .length = 8});
    EXPECT_EQ(RunHeader(handler, ectx.context(), packet.packet.view()),
              HandlerResult::kFail);
    EXPECT_EQ(RunPayload(handler, ectx.context(), packet.packet.view()),
              HandlerResult::kFail);
    EXPECT_EQ(StateWord(ectx, kBadRegion), 2u);
    EXPECT_EQ(Hex(region), Hex(std::vector<uint8_t>(16, kUntouched)));
  }
}

TEST(ReduceTest, RefusesBadParametersSayingWhatToWrite) {
  const BadParams cases[] = {
      {Params("int16", 4, 2), "write one of int32, int64, float32, float64"},
      {Params("int32", 0, 2), "count"},
      {Params("int32", 4, 0), "contributors"},
      {Params("int32", 4, 65537), "contributors"},
      {{{"count", "4"}}, "contributors"},
      {{{"contributors", "4"}}, "count"},
  };
  ExpectBadParamsSayWhatToFix("reduce", cases);
  const HandlerKind* kind = FindHandlerKind("reduce");
  ASSERT_NE(kind, nullptr);
  EXPECT_EQ(kind->min_regions, 1u);
  EXPECT_EQ(kind->min_state_size, 56u);
  EXPECT_TRUE(kind->has_header && kind->has_payload && kind->has_completion);
}

}  // namespace
}  // namespace spinnic::handler_test
