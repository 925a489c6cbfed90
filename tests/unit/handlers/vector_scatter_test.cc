// vector_scatter: packed messages cut into packets at arbitrary points
// (mid-block, several blocks per packet) land byte for byte where the MPI
// vector type puts them, the gaps untouched; stride == blocklen is a plain
// copy; an extent past the region, a read-only region and overflowing
// parameters FAIL with their counters and write nothing; the end-of-message
// event and the state counters are as documented.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "handlers/api/testing.h"
#include "tests/unit/handlers/handler_test_util.h"

namespace spinnic::handler_test {
namespace {

constexpr uint8_t kUntouched = 0xee;

enum Word : size_t {
  kBytes = 0,
  kMessages = 1,
  kFailed = 2,
  kOutOfRange = 3,
  kNotWritable = 4,
  kEventsRefused = 5,
};

uint64_t StateWord(FakeEctx& ectx, Word word) {
  uint64_t value;
  std::memcpy(&value, ectx.state().data() + 8 * word, 8);
  return value;
}

std::vector<uint8_t> Packed(size_t length) {
  std::vector<uint8_t> bytes(length);
  for (size_t i = 0; i < length; ++i) {
    bytes[i] = static_cast<uint8_t>(i * 7 + 1 + (i >> 8));
  }
  return bytes;
}

// The reference layout, byte by byte: message byte k is in block
// k / blocklen at position k % blocklen.
std::vector<uint8_t> Expected(const std::vector<uint8_t>& packed,
                              size_t blocklen, size_t stride, size_t base,
                              size_t region_size) {
  std::vector<uint8_t> region(region_size, kUntouched);
  for (size_t k = 0; k < packed.size(); ++k) {
    region.at(base + (k / blocklen) * stride + k % blocklen) = packed[k];
  }
  return region;
}

HandlerParamMap Params(size_t blocklen, size_t stride, size_t base) {
  return {{"blocklen", std::to_string(blocklen)},
          {"stride", std::to_string(stride)},
          {"base", std::to_string(base)}};
}

// One packet: a UDP frame whose payload is `payload`, as part of `message`.
struct Packet {
  explicit Packet(const std::vector<uint8_t>& payload,
                  const MessageInfo& message)
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

// Runs `packed` through the handler as the engine runs a message: cut
// after each of `sizes` bytes (the rest in a last packet), Header on the
// first, Payload on each (each must be consumed), Completion after the last.
// `length` is what the transport says of the message (0: not known).
void RunMessage(const HandlerInstance& handler, FakeEctx& ectx,
                const std::vector<uint8_t>& packed,
                const std::vector<size_t>& sizes, uint64_t length,
                MessageTransport transport = MessageTransport::kDiadStream,
                uint32_t source = 0) {
  size_t offset = 0;
  size_t index = 0;
  while (offset < packed.size()) {
    size_t size = index < sizes.size() ? sizes[index] : packed.size() - offset;
    size = std::min(size, packed.size() - offset);
    SCOPED_TRACE(testing::Message() << "packet at offset " << offset);
    std::vector<uint8_t> payload(packed.begin() + offset,
                                 packed.begin() + offset + size);
    Packet p(payload, {.transport = transport,
                       .source = source,
                       .offset = offset,
                       .length = length});
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

TEST(VectorScatterTest, PacketsStartingMidBlockLandByteForByte) {
  // 95 bytes: nine blocks of 10 and a partial tenth; packets of 23, 4, 1
  // and 40 bytes start and end mid-block, the last spans five blocks.
  const size_t blocklen = 10, stride = 16, base = 3;
  HandlerInstance handler =
      MakeHandler("vector_scatter", Params(blocklen, stride, base));
  FakeEctx ectx(48);
  std::vector<uint8_t> region(200, kUntouched);
  ectx.AddRegion(1, region);
  const std::vector<uint8_t> packed = Packed(95);
  RunMessage(handler, ectx, packed, {23, 4, 1, 40}, packed.size());
  EXPECT_EQ(Hex(region),
            Hex(Expected(packed, blocklen, stride, base, region.size())));
  EXPECT_EQ(StateWord(ectx, kBytes), 95u);
  EXPECT_EQ(StateWord(ectx, kMessages), 1u);
  EXPECT_EQ(StateWord(ectx, kFailed), 0u);
  // Spot checks independent of Expected(): block 0 at base, block 1 at
  // base + stride, the 6-byte gap between them untouched.
  EXPECT_EQ(region[3], packed[0]);
  EXPECT_EQ(region[12], packed[9]);
  EXPECT_EQ(region[13], kUntouched);
  EXPECT_EQ(region[18], kUntouched);
  EXPECT_EQ(region[19], packed[10]);
  EXPECT_EQ(region[3 + 9 * 16 + 4], packed[94]);
  EXPECT_EQ(region[3 + 9 * 16 + 5], kUntouched);
}

TEST(VectorScatterTest, EveryCutPointGivesTheSameLayout) {
  const size_t blocklen = 7, stride = 12, base = 0;
  const std::vector<uint8_t> packed = Packed(64);
  const std::vector<uint8_t> expected =
      Expected(packed, blocklen, stride, base, 128);
  for (size_t first = 1; first < packed.size(); ++first) {
    for (size_t second : {size_t{1}, size_t{6}, size_t{7}, size_t{15}}) {
      SCOPED_TRACE(testing::Message() << first << " then " << second);
      HandlerInstance handler =
          MakeHandler("vector_scatter", Params(blocklen, stride, base));
      FakeEctx ectx(48);
      std::vector<uint8_t> region(128, kUntouched);
      ectx.AddRegion(1, region);
      RunMessage(handler, ectx, packed, {first, second}, packed.size());
      ASSERT_EQ(Hex(region), Hex(expected));
    }
  }
}

TEST(VectorScatterTest, StrideEqualToBlocklenIsAContiguousCopy) {
  HandlerInstance handler = MakeHandler("vector_scatter", Params(16, 16, 5));
  FakeEctx ectx(48);
  std::vector<uint8_t> region(120, kUntouched);
  ectx.AddRegion(1, region);
  const std::vector<uint8_t> packed = Packed(100);
  RunMessage(handler, ectx, packed, {33, 50}, packed.size());
  std::vector<uint8_t> expected(120, kUntouched);
  std::copy(packed.begin(), packed.end(), expected.begin() + 5);
  EXPECT_EQ(Hex(region), Hex(expected));
  EXPECT_EQ(StateWord(ectx, kBytes), 100u);
}

TEST(VectorScatterTest, ExtentPastTheRegionFailsInTheHeaderAndWritesNothing) {
  // 4 blocks of 8 at stride 20 from base 4: the last byte lands at
  // 4 + 3 * 20 + 7 = 71, so 72 bytes fit and 71 do not.
  const std::vector<uint8_t> packed = Packed(32);
  {
    HandlerInstance handler = MakeHandler("vector_scatter", Params(8, 20, 4));
    FakeEctx ectx(48);
    std::vector<uint8_t> region(72, kUntouched);
    ectx.AddRegion(1, region);
    RunMessage(handler, ectx, packed, {10}, packed.size());
    EXPECT_EQ(Hex(region), Hex(Expected(packed, 8, 20, 4, 72)));
    EXPECT_EQ(StateWord(ectx, kOutOfRange), 0u);
  }
  HandlerInstance handler = MakeHandler("vector_scatter", Params(8, 20, 4));
  FakeEctx ectx(48);
  std::vector<uint8_t> region(71, kUntouched);
  ectx.AddRegion(1, region);
  Packet first({packed.begin(), packed.begin() + 10},
               {.offset = 0, .length = packed.size()});
  EXPECT_EQ(RunHeader(handler, ectx.context(), first.packet.view()),
            HandlerResult::kFail);
  EXPECT_EQ(StateWord(ectx, kOutOfRange), 1u);
  EXPECT_EQ(StateWord(ectx, kBytes), 0u);
  EXPECT_EQ(Hex(region), Hex(std::vector<uint8_t>(71, kUntouched)));
  // The engine runs Completion after a failed message with its dropped
  // bytes: counted as failed, not placed.
  EXPECT_EQ(RunCompletion(handler, ectx.context(), /*dropped_bytes=*/32),
            HandlerResult::kSuccess);
  EXPECT_EQ(StateWord(ectx, kFailed), 1u);
  EXPECT_EQ(StateWord(ectx, kMessages), 0u);
}

TEST(VectorScatterTest, UnknownLengthIsCheckedPacketByPacket) {
  // A RoCE SEND before its last packet: length 0. The header cannot check
  // the extent; the packet that would cross the region's end fails, and
  // nothing of it is written.
  HandlerInstance handler = MakeHandler("vector_scatter", Params(4, 8, 0));
  FakeEctx ectx(48);
  std::vector<uint8_t> region(30, kUntouched);  // blocks 0..3 fit (ends 28)
  ectx.AddRegion(1, region);
  const std::vector<uint8_t> packed = Packed(20);
  Packet first({packed.begin(), packed.begin() + 12},
               {.transport = MessageTransport::kRoceSend, .offset = 0});
  ASSERT_EQ(RunHeader(handler, ectx.context(), first.packet.view()),
            HandlerResult::kProcessData);
  ASSERT_EQ(RunPayload(handler, ectx.context(), first.packet.view()),
            HandlerResult::kSuccess);
  Packet second(
      {packed.begin() + 12, packed.end()},
      {.transport = MessageTransport::kRoceSend, .offset = 12, .length = 20});
  EXPECT_EQ(RunPayload(handler, ectx.context(), second.packet.view()),
            HandlerResult::kFail);
  EXPECT_EQ(StateWord(ectx, kOutOfRange), 1u);
  EXPECT_EQ(StateWord(ectx, kBytes), 12u);
  std::vector<uint8_t> expected(30, kUntouched);
  for (size_t k = 0; k < 12; ++k) expected[(k / 4) * 8 + k % 4] = packed[k];
  EXPECT_EQ(Hex(region), Hex(expected));
}

TEST(VectorScatterTest, ReadOnlyRegionFailsAndIsNotWritten) {
  HandlerInstance handler = MakeHandler("vector_scatter", Params(4, 8, 0));
  FakeEctx ectx(48);
  std::vector<uint8_t> region(64, kUntouched);
  ectx.AddRegion(1, region, /*readable=*/true, /*writable=*/false);
  const std::vector<uint8_t> packed = Packed(16);
  Packet packet(packed, {.offset = 0, .length = 16});
  EXPECT_EQ(RunHeader(handler, ectx.context(), packet.packet.view()),
            HandlerResult::kFail);
  // Payload checks too (a message the header could not refuse).
  EXPECT_EQ(RunPayload(handler, ectx.context(), packet.packet.view()),
            HandlerResult::kFail);
  EXPECT_EQ(StateWord(ectx, kNotWritable), 2u);
  EXPECT_EQ(StateWord(ectx, kBytes), 0u);
  EXPECT_EQ(Hex(region), Hex(std::vector<uint8_t>(64, kUntouched)));
}

TEST(VectorScatterTest, OverflowingExtentFailsInsteadOfWrapping) {
  // Block 2^24 at stride 2^40 is past 2^64: it must not wrap into range.
  HandlerInstance handler = MakeHandler(
      "vector_scatter",
      {{"blocklen", "1"}, {"stride", "0x10000000000"}, {"base", "0"}});
  FakeEctx ectx(48);
  std::vector<uint8_t> region(64, kUntouched);
  ectx.AddRegion(1, region);
  Packet packet(Packed(1), {.offset = uint64_t{1} << 24,
                            .length = (uint64_t{1} << 24) + 1});
  EXPECT_EQ(RunHeader(handler, ectx.context(), packet.packet.view()),
            HandlerResult::kFail);
  EXPECT_EQ(RunPayload(handler, ectx.context(), packet.packet.view()),
            HandlerResult::kFail);
  EXPECT_EQ(StateWord(ectx, kOutOfRange), 2u);
  EXPECT_EQ(Hex(region), Hex(std::vector<uint8_t>(64, kUntouched)));
}

TEST(VectorScatterTest, RaisesItsEventWhenAMessageIsPlaced) {
  HandlerParamMap params = Params(4, 8, 0);
  params["event"] = "0x5653";
  HandlerInstance handler = MakeHandler("vector_scatter", params);
  FakeEctx ectx(48);
  std::vector<uint8_t> region(64, kUntouched);
  ectx.AddRegion(1, region);
  const std::vector<uint8_t> packed = Packed(20);
  RunMessage(handler, ectx, packed, {6, 6}, packed.size(),
             MessageTransport::kRoceWrite, /*source=*/0x11);
  ASSERT_EQ(ectx.sink().events().size(), 1u);  // once, at the end
  const FakeActionSink::RaisedEvent& event = ectx.sink().events()[0];
  EXPECT_EQ(event.code, 0x5653u);
  ASSERT_EQ(event.data.size(), 16u);
  uint64_t length;
  uint32_t source, transport;
  std::memcpy(&length, event.data.data(), 8);
  std::memcpy(&source, event.data.data() + 8, 4);
  std::memcpy(&transport, event.data.data() + 12, 4);
  EXPECT_EQ(length, 20u);
  EXPECT_EQ(source, 0x11u);
  EXPECT_EQ(transport, static_cast<uint32_t>(MessageTransport::kRoceWrite));

  ectx.sink().Clear();
  ectx.sink().set_fail_events(true);
  RunMessage(handler, ectx, packed, {}, packed.size());
  EXPECT_EQ(StateWord(ectx, kEventsRefused), 1u);
  EXPECT_EQ(StateWord(ectx, kMessages), 2u);

  // Without `event`, none.
  HandlerInstance quiet = MakeHandler("vector_scatter", Params(4, 8, 0));
  FakeEctx quiet_ectx(48);
  quiet_ectx.AddRegion(1, region);
  RunMessage(quiet, quiet_ectx, packed, {}, packed.size());
  EXPECT_TRUE(quiet_ectx.sink().events().empty());
}

TEST(VectorScatterTest, PassthroughPacketIsAMessageOfItsOwn) {
  // Matched by a rule: the default MessageInfo (offset 0, the payload's
  // length) places the payload as a whole message.
  HandlerInstance handler = MakeHandler("vector_scatter", Params(3, 5, 1));
  FakeEctx ectx(48);
  std::vector<uint8_t> region(32, kUntouched);
  ectx.AddRegion(1, region);
  const std::vector<uint8_t> packed = Packed(8);
  TestPacket packet(Packet::Frame(packed));
  ASSERT_EQ(packet.view().Message().length, 8u);
  ASSERT_EQ(RunHeader(handler, ectx.context(), packet.view()),
            HandlerResult::kProcessData);
  ASSERT_EQ(RunPayload(handler, ectx.context(), packet.view()),
            HandlerResult::kSuccess);
  EXPECT_EQ(packet.view().GetDisposition(), Disposition::kConsume);
  EXPECT_EQ(Hex(region), Hex(Expected(packed, 3, 5, 1, 32)));
}

TEST(VectorScatterTest, RefusesOverlappingBlocksAndMissingParameters) {
  const BadParams cases[] = {
      {Params(8, 4, 0), "stride' = 4 < blocklen 8"},
      {{{"stride", "8"}}, "blocklen"},
      {{{"blocklen", "0"}, {"stride", "8"}}, "blocklen"},
  };
  ExpectBadParamsSayWhatToFix("vector_scatter", cases);
  const HandlerKind* kind = FindHandlerKind("vector_scatter");
  ASSERT_NE(kind, nullptr);
  EXPECT_EQ(kind->min_regions, 1u);
  EXPECT_EQ(kind->min_state_size, 48u);
  EXPECT_TRUE(kind->has_header && kind->has_payload && kind->has_completion);
}

}  // namespace
}  // namespace spinnic::handler_test
