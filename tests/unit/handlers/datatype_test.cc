// datatype: packed messages cut into packets at arbitrary points
// (mid-block, several blocks per packet) land byte for byte where the MPI
// vector or indexed type puts them, in every arrival order, the gaps
// untouched; stride == blocklen is a plain copy; an extent past the region
// or past the indexed type, a read-only region and overflowing parameters
// FAIL with their counters and write nothing; bad parameters are refused
// saying what to write; the end-of-message event and the state counters are
// as documented.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
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

TEST(DatatypeTest, PacketsStartingMidBlockLandByteForByte) {
  // 95 bytes: nine blocks of 10 and a partial tenth; packets of 23, 4, 1
  // and 40 bytes start and end mid-block, the last spans five blocks.
  const size_t blocklen = 10, stride = 16, base = 3;
  HandlerInstance handler =
      MakeHandler("datatype", Params(blocklen, stride, base));
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

TEST(DatatypeTest, EveryCutPointGivesTheSameLayout) {
  const size_t blocklen = 7, stride = 12, base = 0;
  const std::vector<uint8_t> packed = Packed(64);
  const std::vector<uint8_t> expected =
      Expected(packed, blocklen, stride, base, 128);
  for (size_t first = 1; first < packed.size(); ++first) {
    for (size_t second : {size_t{1}, size_t{6}, size_t{7}, size_t{15}}) {
      SCOPED_TRACE(testing::Message() << first << " then " << second);
      HandlerInstance handler =
          MakeHandler("datatype", Params(blocklen, stride, base));
      FakeEctx ectx(48);
      std::vector<uint8_t> region(128, kUntouched);
      ectx.AddRegion(1, region);
      RunMessage(handler, ectx, packed, {first, second}, packed.size());
      ASSERT_EQ(Hex(region), Hex(expected));
    }
  }
}

TEST(DatatypeTest, StrideEqualToBlocklenIsAContiguousCopy) {
  HandlerInstance handler = MakeHandler("datatype", Params(16, 16, 5));
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

TEST(DatatypeTest, ExtentPastTheRegionFailsInTheHeaderAndWritesNothing) {
  // 4 blocks of 8 at stride 20 from base 4: the last byte lands at
  // 4 + 3 * 20 + 7 = 71, so 72 bytes fit and 71 do not.
  const std::vector<uint8_t> packed = Packed(32);
  {
    HandlerInstance handler = MakeHandler("datatype", Params(8, 20, 4));
    FakeEctx ectx(48);
    std::vector<uint8_t> region(72, kUntouched);
    ectx.AddRegion(1, region);
    RunMessage(handler, ectx, packed, {10}, packed.size());
    EXPECT_EQ(Hex(region), Hex(Expected(packed, 8, 20, 4, 72)));
    EXPECT_EQ(StateWord(ectx, kOutOfRange), 0u);
  }
  HandlerInstance handler = MakeHandler("datatype", Params(8, 20, 4));
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

TEST(DatatypeTest, UnknownLengthIsCheckedPacketByPacket) {
  // A RoCE SEND before its last packet: length 0. The header cannot check
  // the extent; the packet that would cross the region's end fails, and
  // nothing of it is written.
  HandlerInstance handler = MakeHandler("datatype", Params(4, 8, 0));
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

TEST(DatatypeTest, ReadOnlyRegionFailsAndIsNotWritten) {
  HandlerInstance handler = MakeHandler("datatype", Params(4, 8, 0));
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

TEST(DatatypeTest, OverflowingExtentFailsInsteadOfWrapping) {
  // Block 2^24 at stride 2^40 is past 2^64: it must not wrap into range.
  HandlerInstance handler = MakeHandler(
      "datatype",
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

TEST(DatatypeTest, RaisesItsEventWhenAMessageIsPlaced) {
  HandlerParamMap params = Params(4, 8, 0);
  params["event"] = "0x5653";
  HandlerInstance handler = MakeHandler("datatype", params);
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
  HandlerInstance quiet = MakeHandler("datatype", Params(4, 8, 0));
  FakeEctx quiet_ectx(48);
  quiet_ectx.AddRegion(1, region);
  RunMessage(quiet, quiet_ectx, packed, {}, packed.size());
  EXPECT_TRUE(quiet_ectx.sink().events().empty());
}

TEST(DatatypeTest, PassthroughPacketIsAMessageOfItsOwn) {
  // Matched by a rule: the default MessageInfo (offset 0, the payload's
  // length) places the payload as a whole message.
  HandlerInstance handler = MakeHandler("datatype", Params(3, 5, 1));
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

// An indexed type's blocks as (length, displacement), in packed order.
using Blocks = std::vector<std::pair<size_t, size_t>>;

// The reference indexed layout, byte by byte: message byte k is in
// instance k / size, at packed byte k % size of it, which block j holds at
// its position (k % size) - (the lengths of the blocks before j).
std::vector<uint8_t> ExpectedIndexed(const std::vector<uint8_t>& packed,
                                     const Blocks& blocks, size_t base,
                                     size_t region_size) {
  size_t size = 0, extent = 0;
  for (const auto& [length, disp] : blocks) {
    size += length;
    extent = std::max(extent, disp + length);
  }
  std::vector<uint8_t> region(region_size, kUntouched);
  for (size_t k = 0; k < packed.size(); ++k) {
    size_t r = k % size, j = 0;
    while (r >= blocks[j].first) r -= blocks[j++].first;
    region.at(base + (k / size) * extent + blocks[j].second + r) = packed[k];
  }
  return region;
}

HandlerParamMap Indexed(const std::string& blocks, size_t base,
                        size_t count = 1) {
  return {{"layout", "indexed"},
          {"blocks", blocks},
          {"base", std::to_string(base)},
          {"count", std::to_string(count)}};
}

// Runs `packed` cut into packets of `sizes` (which sum to its length), the
// packets arriving in the order `order` (indices into the cut): Header on
// the first to arrive, Payload on each (each consumed), Completion after.
void RunInOrder(const HandlerInstance& handler, FakeEctx& ectx,
                const std::vector<uint8_t>& packed,
                const std::vector<size_t>& sizes,
                const std::vector<size_t>& order) {
  std::vector<size_t> offsets;
  size_t offset = 0;
  for (size_t size : sizes) {
    offsets.push_back(offset);
    offset += size;
  }
  ASSERT_EQ(offset, packed.size());
  for (size_t n = 0; n < order.size(); ++n) {
    const size_t at = offsets[order[n]], size = sizes[order[n]];
    SCOPED_TRACE(testing::Message() << "packet at offset " << at);
    Packet p({packed.begin() + at, packed.begin() + at + size},
             {.transport = MessageTransport::kDiadWrite,
              .offset = at,
              .length = packed.size()});
    if (n == 0) {
      ASSERT_EQ(RunHeader(handler, ectx.context(), p.packet.view()),
                HandlerResult::kProcessData);
    }
    ASSERT_EQ(RunPayload(handler, ectx.context(), p.packet.view()),
              HandlerResult::kSuccess);
    EXPECT_EQ(p.packet.view().GetDisposition(), Disposition::kConsume);
  }
  EXPECT_EQ(RunCompletion(handler, ectx.context()), HandlerResult::kSuccess);
}

TEST(DatatypeTest, IndexedPacketsLandByteForByte) {
  // Four blocks, listed out of displacement order (the packed order is the
  // list's): 10 bytes at 3, 7 at 40, 20 at 17, 5 at 100; size 42, extent
  // 105. Packets of 4, 9, 17 and 12 bytes start and end mid-block; the
  // third spans blocks 1, 2 and 3.
  const Blocks blocks = {{10, 3}, {7, 40}, {20, 17}, {5, 100}};
  const size_t base = 6;
  HandlerInstance handler =
      MakeHandler("datatype", Indexed("10@3, 7@40,20@0x11,5@100", base));
  FakeEctx ectx(48);
  std::vector<uint8_t> region(base + 105 + 9, kUntouched);
  ectx.AddRegion(1, region);
  const std::vector<uint8_t> packed = Packed(42);
  RunMessage(handler, ectx, packed, {4, 9, 17}, packed.size());
  EXPECT_EQ(Hex(region),
            Hex(ExpectedIndexed(packed, blocks, base, region.size())));
  EXPECT_EQ(StateWord(ectx, kBytes), 42u);
  EXPECT_EQ(StateWord(ectx, kMessages), 1u);
  EXPECT_EQ(StateWord(ectx, kOutOfRange), 0u);
  // Spot checks independent of ExpectedIndexed(): block 0 at base + 3,
  // block 1 (message bytes 10..16) at base + 40, block 2 (17..36) at
  // base + 17, block 3 (37..41) at base + 100; the gaps untouched.
  EXPECT_EQ(region[base + 2], kUntouched);
  EXPECT_EQ(region[base + 3], packed[0]);
  EXPECT_EQ(region[base + 12], packed[9]);
  EXPECT_EQ(region[base + 13], kUntouched);
  EXPECT_EQ(region[base + 16], kUntouched);
  EXPECT_EQ(region[base + 17], packed[17]);
  EXPECT_EQ(region[base + 36], packed[36]);
  EXPECT_EQ(region[base + 37], kUntouched);
  EXPECT_EQ(region[base + 40], packed[10]);
  EXPECT_EQ(region[base + 46], packed[16]);
  EXPECT_EQ(region[base + 47], kUntouched);
  EXPECT_EQ(region[base + 99], kUntouched);
  EXPECT_EQ(region[base + 100], packed[37]);
  EXPECT_EQ(region[base + 104], packed[41]);
  EXPECT_EQ(region[base + 105], kUntouched);
}

TEST(DatatypeTest, IndexedEveryCutPointGivesTheSameLayout) {
  // Two instances of a three-block type (size 19, extent 40), so packets
  // also run from the last block of one instance into the next.
  const Blocks blocks = {{5, 0}, {3, 9}, {11, 29}};
  const std::vector<uint8_t> packed = Packed(38);
  const std::vector<uint8_t> expected = ExpectedIndexed(packed, blocks, 2, 100);
  for (size_t first = 1; first < packed.size(); ++first) {
    for (size_t second : {size_t{1}, size_t{4}, size_t{19}, size_t{23}}) {
      SCOPED_TRACE(testing::Message() << first << " then " << second);
      HandlerInstance handler =
          MakeHandler("datatype", Indexed("5@0,3@9,11@29", 2, 2));
      FakeEctx ectx(48);
      std::vector<uint8_t> region(100, kUntouched);
      ectx.AddRegion(1, region);
      RunMessage(handler, ectx, packed, {first, second}, packed.size());
      ASSERT_EQ(Hex(region), Hex(expected));
    }
  }
}

TEST(DatatypeTest, IndexedLayoutExactForEveryArrivalOrder) {
  // Five packets cut mid-block, the second spanning three blocks, the last
  // crossing into the type's second instance; all 120 arrival orders.
  const Blocks blocks = {{6, 50}, {4, 0}, {9, 20}, {3, 12}};  // size 22
  const std::vector<uint8_t> packed = Packed(40);             // 2 instances
  const std::vector<size_t> sizes = {5, 13, 2, 1, 19};
  const std::vector<uint8_t> expected = ExpectedIndexed(packed, blocks, 1, 120);
  std::vector<size_t> order = {0, 1, 2, 3, 4};
  size_t orders = 0;
  do {
    SCOPED_TRACE(testing::Message() << "order " << order[0] << order[1]
                                    << order[2] << order[3] << order[4]);
    HandlerInstance handler =
        MakeHandler("datatype", Indexed("6@50,4@0,9@20,3@12", 1, 2));
    FakeEctx ectx(48);
    std::vector<uint8_t> region(120, kUntouched);
    ectx.AddRegion(1, region);
    RunInOrder(handler, ectx, packed, sizes, order);
    ASSERT_EQ(Hex(region), Hex(expected));
    ASSERT_EQ(StateWord(ectx, kBytes), 40u);
    ++orders;
  } while (std::next_permutation(order.begin(), order.end()));
  EXPECT_EQ(orders, 120u);
}

TEST(DatatypeTest, StridedLayoutExactForEveryArrivalOrder) {
  const size_t blocklen = 7, stride = 11, base = 2;
  const std::vector<uint8_t> packed = Packed(45);
  const std::vector<size_t> sizes = {3, 16, 8, 1, 17};
  const std::vector<uint8_t> expected =
      Expected(packed, blocklen, stride, base, 80);
  std::vector<size_t> order = {0, 1, 2, 3, 4};
  size_t orders = 0;
  do {
    SCOPED_TRACE(testing::Message() << "order " << order[0] << order[1]
                                    << order[2] << order[3] << order[4]);
    HandlerInstance handler =
        MakeHandler("datatype", Params(blocklen, stride, base));
    FakeEctx ectx(48);
    std::vector<uint8_t> region(80, kUntouched);
    ectx.AddRegion(1, region);
    RunInOrder(handler, ectx, packed, sizes, order);
    ASSERT_EQ(Hex(region), Hex(expected));
    ++orders;
  } while (std::next_permutation(order.begin(), order.end()));
  EXPECT_EQ(orders, 120u);
}

TEST(DatatypeTest, IndexedExtentPastTheRegionFailsAndWritesNothing) {
  // 8@0,4@20: the type ends at 24, so base 3 needs 27 bytes.
  const std::vector<uint8_t> packed = Packed(12);
  {
    HandlerInstance handler = MakeHandler("datatype", Indexed("8@0,4@20", 3));
    FakeEctx ectx(48);
    std::vector<uint8_t> region(27, kUntouched);
    ectx.AddRegion(1, region);
    RunMessage(handler, ectx, packed, {5}, packed.size());
    EXPECT_EQ(Hex(region), Hex(ExpectedIndexed(packed, {{8, 0}, {4, 20}}, 3,
                                               region.size())));
  }
  HandlerInstance handler = MakeHandler("datatype", Indexed("8@0,4@20", 3));
  FakeEctx ectx(48);
  std::vector<uint8_t> region(26, kUntouched);
  ectx.AddRegion(1, region);
  Packet first({packed.begin(), packed.begin() + 5},
               {.offset = 0, .length = packed.size()});
  EXPECT_EQ(RunHeader(handler, ectx.context(), first.packet.view()),
            HandlerResult::kFail);
  // A packet the header could not refuse (length unknown) that crosses
  // the end fails too, writing nothing; the one before it fits.
  Packet early({packed.begin(), packed.begin() + 9},
               {.transport = MessageTransport::kRoceSend, .offset = 0});
  EXPECT_EQ(RunPayload(handler, ectx.context(), early.packet.view()),
            HandlerResult::kSuccess);
  Packet late({packed.begin() + 9, packed.end()},
              {.transport = MessageTransport::kRoceSend, .offset = 9});
  EXPECT_EQ(RunPayload(handler, ectx.context(), late.packet.view()),
            HandlerResult::kFail);
  EXPECT_EQ(StateWord(ectx, kOutOfRange), 2u);
  EXPECT_EQ(StateWord(ectx, kBytes), 9u);
  std::vector<uint8_t> expected(26, kUntouched);
  for (size_t k = 0; k < 8; ++k) expected[3 + k] = packed[k];
  expected[3 + 20] = packed[8];
  EXPECT_EQ(Hex(region), Hex(expected));
}

TEST(DatatypeTest, OutOfOrderBlocksCheckTheFarthestByteBeforeTheLast) {
  // 4@30,4@0: the message's first block is the type's last in memory, so
  // a packet holding bytes 4..7 lands below 8 but its message reaches 34:
  // with the length unknown it fails when the region ends before 34 + base,
  // and writes nothing.
  HandlerInstance handler = MakeHandler("datatype", Indexed("4@30,4@0", 0));
  FakeEctx ectx(48);
  std::vector<uint8_t> region(33, kUntouched);
  ectx.AddRegion(1, region);
  const std::vector<uint8_t> packed = Packed(8);
  Packet second({packed.begin() + 4, packed.end()},
                {.transport = MessageTransport::kRoceSend, .offset = 4});
  EXPECT_EQ(RunPayload(handler, ectx.context(), second.packet.view()),
            HandlerResult::kFail);
  Packet whole(packed, {.offset = 0, .length = 8});
  EXPECT_EQ(RunHeader(handler, ectx.context(), whole.packet.view()),
            HandlerResult::kFail);
  EXPECT_EQ(StateWord(ectx, kOutOfRange), 2u);
  EXPECT_EQ(Hex(region), Hex(std::vector<uint8_t>(33, kUntouched)));
}

TEST(DatatypeTest, PacketPastTheTypeFailsAndWritesNothing) {
  // One instance of 8@0,4@20 is 12 bytes: a 13th byte has no place, even
  // though the region has room.
  const std::vector<uint8_t> packed = Packed(16);
  HandlerInstance handler = MakeHandler("datatype", Indexed("8@0,4@20", 0));
  FakeEctx ectx(48);
  std::vector<uint8_t> region(200, kUntouched);
  ectx.AddRegion(1, region);
  Packet header({packed.begin(), packed.begin() + 4},
                {.offset = 0, .length = 13});
  EXPECT_EQ(RunHeader(handler, ectx.context(), header.packet.view()),
            HandlerResult::kFail);
  Packet past({packed.begin() + 10, packed.begin() + 13},
              {.transport = MessageTransport::kRoceSend, .offset = 10});
  EXPECT_EQ(RunPayload(handler, ectx.context(), past.packet.view()),
            HandlerResult::kFail);
  Packet beyond({packed.begin(), packed.begin() + 4},
                {.transport = MessageTransport::kRoceSend, .offset = 12});
  EXPECT_EQ(RunPayload(handler, ectx.context(), beyond.packet.view()),
            HandlerResult::kFail);
  EXPECT_EQ(StateWord(ectx, kOutOfRange), 3u);
  EXPECT_EQ(StateWord(ectx, kBytes), 0u);
  EXPECT_EQ(Hex(region), Hex(std::vector<uint8_t>(200, kUntouched)));
  // With count 2 the same 16 bytes are the first instance and 4 bytes of
  // the second, at the extent 24.
  HandlerInstance twice = MakeHandler("datatype", Indexed("8@0,4@20", 0, 2));
  FakeEctx twice_ectx(48);
  twice_ectx.AddRegion(1, region);
  RunMessage(twice, twice_ectx, packed, {3, 9}, packed.size());
  EXPECT_EQ(Hex(region),
            Hex(ExpectedIndexed(packed, {{8, 0}, {4, 20}}, 0, region.size())));
  EXPECT_EQ(region[24], packed[12]);
}

TEST(DatatypeTest, IndexedReadOnlyRegionFailsAndIsNotWritten) {
  HandlerInstance handler = MakeHandler("datatype", Indexed("4@0,4@8", 0));
  FakeEctx ectx(48);
  std::vector<uint8_t> region(64, kUntouched);
  ectx.AddRegion(1, region, /*readable=*/true, /*writable=*/false);
  Packet packet(Packed(8), {.offset = 0, .length = 8});
  EXPECT_EQ(RunHeader(handler, ectx.context(), packet.packet.view()),
            HandlerResult::kFail);
  EXPECT_EQ(RunPayload(handler, ectx.context(), packet.packet.view()),
            HandlerResult::kFail);
  EXPECT_EQ(StateWord(ectx, kNotWritable), 2u);
  EXPECT_EQ(Hex(region), Hex(std::vector<uint8_t>(64, kUntouched)));
}

TEST(DatatypeTest, RefusesBadIndexedBlocksSayingWhatToWrite) {
  std::string too_many;
  for (size_t i = 0; i < 1025; ++i) {
    too_many +=
        (i == 0 ? "" : ",") + std::to_string(1) + "@" + std::to_string(2 * i);
  }
  const BadParams cases[] = {
      {{{"layout", "indexed"}}, "'blocks' is empty"},
      {Indexed(" ", 0), "e.g. 64@0,32@1024,128@4096"},
      {Indexed("64@0,0@128", 0), "entry 2 '0@128' has length 0"},
      {Indexed("64@0,32", 0), "entry 2 '32' is not LEN@DISP"},
      {Indexed("64@0,32@x", 0), "e.g. 64@0,32@1024"},
      {Indexed("64@0,,8@200", 0), "entry 2 '' is not LEN@DISP"},
      {Indexed("64@0@1", 0), "is not LEN@DISP"},
      {Indexed("-1@0", 0), "is not LEN@DISP"},
      {Indexed("64@0,32@1024,", 0), "entry 3 '' is not LEN@DISP"},
      {Indexed("64@0,32@32", 0),
       "entry 2 (32@32) overlaps entry 1 (64@0, which ends at 64)"},
      {Indexed("8@100,64@0,8@60", 0), "entry 3 (8@60) overlaps entry 2 (64@0"},
      {Indexed(too_many, 0), "1025 entries; at most 1024 blocks"},
      {Indexed("0x100000001@0", 0), "too large"},
      {Indexed("1@0x1000000000001", 0), "too large"},
      {{{"layout", "indexed"}, {"blocks", "8@0"}, {"blocklen", "8"}},
       "apply to layout=vector"},
      {{{"layout", "indexed"}, {"blocks", "8@0"}, {"count", "0"}}, "count"},
      {{{"layout", "indexed"},
        {"blocks", "8@0x1000000000000"},
        {"count", "0x100000000"}},
       "write a smaller count"},
      {{{"layout", "struct"}, {"blocks", "8@0"}},
       "'layout' = 'struct': write vector or indexed"},
      {{{"blocklen", "8"}, {"stride", "8"}, {"blocks", "8@0"}},
       "'blocks' applies to layout=indexed"},
      {{{"blocklen", "8"}, {"stride", "8"}, {"count", "2"}},
       "'count' applies to layout=indexed"},
  };
  ExpectBadParamsSayWhatToFix("datatype", cases);
  // 1024 entries are accepted.
  std::string most;
  for (size_t i = 0; i < 1024; ++i) {
    most +=
        (i == 0 ? "" : ",") + std::to_string(1) + "@" + std::to_string(2 * i);
  }
  EXPECT_TRUE(CreateHandlerForTest("datatype", Indexed(most, 0)).ok());
  // Blocks that touch (one ends where the next starts) do not overlap.
  EXPECT_TRUE(CreateHandlerForTest("datatype", Indexed("8@8,8@0", 0)).ok());
}

TEST(DatatypeTest, RefusesOverlappingBlocksAndMissingParameters) {
  const BadParams cases[] = {
      {Params(8, 4, 0), "stride' = 4 < blocklen 8"},
      {{{"stride", "8"}}, "blocklen"},
      {{{"blocklen", "0"}, {"stride", "8"}}, "blocklen"},
      {{{"blocklen", "8"}}, "layout=vector needs parameter 'stride'"},
  };
  ExpectBadParamsSayWhatToFix("datatype", cases);
  const HandlerKind* kind = FindHandlerKind("datatype");
  ASSERT_NE(kind, nullptr);
  EXPECT_EQ(kind->min_regions, 1u);
  EXPECT_EQ(kind->min_state_size, 48u);
  EXPECT_TRUE(kind->has_header && kind->has_payload && kind->has_completion);
}

}  // namespace
}  // namespace spinnic::handler_test
