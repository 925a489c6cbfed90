// raid_parity: a data node puts exactly new XOR old of each block write
// packet to its parity node (a write at parity_address + region offset with
// parity_rkey) and leaves the new block in region 0; fed to a parity node,
// the recorded puts of two data nodes fold into parity == XOR of all their
// blocks; a refused put FAILs with the block store unchanged; packets
// outside region 0, other transports and unusable regions FAIL, counted;
// Peers() names the parity peer on a data node only; bad parameters say
// what to write.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "handlers/api/testing.h"
#include "tests/unit/handlers/handler_test_util.h"

namespace spinnic::handler_test {
namespace {

using ::testing::ElementsAre;

enum Word : size_t {
  kPackets = 0,
  kBytes = 1,
  kPutsRefused = 2,
  kOutOfRange = 3,
  kBadRegion = 4,
  kNotWrite = 5,
  kMessages = 6,
};

constexpr uint64_t kRegionBase = 0x5a5a000000;  // region 0's base_address
constexpr uint64_t kParityBase = 0x7b00000000;
constexpr uint64_t kBlockBytes = 4096;

HandlerParamMap DataParams(uint64_t parity_address = kParityBase) {
  return {{"role", "data"},
          {"parity_peer", "p"},
          {"parity_rkey", "0x1234"},
          {"parity_address", std::to_string(parity_address)}};
}

std::vector<uint8_t> Pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> bytes(n);
  for (size_t i = 0; i < n; ++i) {
    bytes[i] = static_cast<uint8_t>(i * 31 + seed * 17 + (i >> 8));
  }
  return bytes;
}

std::vector<uint8_t> Xor(std::vector<uint8_t> a,
                         const std::vector<uint8_t>& b) {
  for (size_t i = 0; i < a.size(); ++i) a[i] ^= b[i];
  return a;
}

// One DiAD write packet of `payload` at `address`.
HandlerResult RunWrite(const HandlerInstance& handler, FakeEctx& ectx,
                       const std::vector<uint8_t>& payload, uint64_t address,
                       uint64_t offset = 0, uint64_t length = 0,
                       Disposition* disposition = nullptr) {
  FrameSpec spec;
  spec.payload = payload;
  TestPacket packet(Build(spec));
  packet.view().SetMessage({.transport = MessageTransport::kDiadWrite,
                            .source = 1,
                            .offset = offset,
                            .length = length != 0 ? length : payload.size(),
                            .address = address,
                            .key = 0x42});
  HandlerResult result = *RunPayload(handler, ectx.context(), packet.view());
  if (disposition != nullptr) *disposition = packet.view().GetDisposition();
  return result;
}

// A data node: block store of `blocks` blocks, initially `initial`.
struct DataNode {
  explicit DataNode(std::vector<uint8_t> initial)
      : handler(MakeHandler("raid_parity", DataParams())),
        store(std::move(initial)) {
    ectx.AddRegion(1, store, true, true, kRegionBase);
  }
  HandlerInstance handler;
  FakeEctx ectx{56};
  std::vector<uint8_t> store;
};

TEST(RaidParityTest, DataNodePutsTheDeltaAndStoresTheNewBlock) {
  const std::vector<uint8_t> old_store = Pattern(4 * kBlockBytes, 1);
  DataNode node(old_store);
  const std::vector<uint8_t> block = Pattern(kBlockBytes, 9);
  // Block 2, as the DiAD engine cuts it: 1404, 1404 and 1288 bytes.
  const uint64_t at = 2 * kBlockBytes;
  for (uint64_t offset = 0; offset < kBlockBytes; offset += 1404) {
    const uint64_t size = std::min<uint64_t>(1404, kBlockBytes - offset);
    Disposition disposition;
    ASSERT_EQ(
        RunWrite(node.handler, node.ectx,
                 {block.begin() + offset, block.begin() + offset + size},
                 kRegionBase + at + offset, offset, kBlockBytes, &disposition),
        HandlerResult::kSuccess);
    EXPECT_EQ(disposition, Disposition::kConsume);
  }
  const auto& puts = node.ectx.sink().puts();
  ASSERT_EQ(puts.size(), 3u);
  uint64_t offset = 0;
  for (const auto& put : puts) {
    SCOPED_TRACE(offset);
    EXPECT_EQ(put.kind, PeerPut::Kind::kWrite);
    EXPECT_EQ(put.peer, "p");
    EXPECT_EQ(put.key, 0x1234u);
    EXPECT_EQ(put.address, kParityBase + at + offset);
    const size_t size = put.data.size();
    const std::vector<uint8_t> expected =
        Xor({block.begin() + offset, block.begin() + offset + size},
            {old_store.begin() + at + offset,
             old_store.begin() + at + offset + size});
    EXPECT_EQ(put.data, expected);
    offset += size;
  }
  EXPECT_EQ(offset, kBlockBytes);
  // The store holds the new block and nothing else changed.
  std::vector<uint8_t> expected_store = old_store;
  std::copy(block.begin(), block.end(), expected_store.begin() + at);
  EXPECT_EQ(node.store, expected_store);
  EXPECT_EQ(StateWord(node.ectx, kPackets), 3u);
  EXPECT_EQ(StateWord(node.ectx, kBytes), kBlockBytes);
  EXPECT_EQ(StateWord(node.ectx, kMessages), 1u);
}

// Two data nodes write blocks (some twice); a parity node fed with the
// recorded puts ends with parity == XOR of every node's current blocks.
TEST(RaidParityTest, ParityIsTheXorOfAllBlocksWrittenThroughTwoDataNodes) {
  constexpr size_t kStore = 3 * kBlockBytes;
  DataNode a(std::vector<uint8_t>(kStore, 0));
  DataNode b(std::vector<uint8_t>(kStore, 0));
  HandlerInstance parity = MakeHandler("raid_parity", {{"role", "parity"}});
  FakeEctx parity_ectx(56);
  // Offset by 3 bytes from 8-byte alignment: unaligned edges fold byte-wise.
  std::vector<uint8_t> parity_storage(kStore + 3, 0);
  std::span<uint8_t> parity_region(parity_storage.data() + 3, kStore);
  parity_ectx.AddRegion(2, parity_region, true, true, kParityBase);

  struct Write {
    DataNode* node;
    uint64_t at;
    size_t size;
    uint8_t seed;
  };
  const Write writes[] = {
      {&a, 0, kBlockBytes, 1},        {&b, 0, kBlockBytes, 2},
      {&a, kBlockBytes, 1000, 3},     {&b, 2 * kBlockBytes + 5, 777, 4},
      {&a, 0, kBlockBytes, 5},        {&b, kBlockBytes + 13, 3000, 6},
      {&a, 2 * kBlockBytes, 1404, 7},
  };
  for (const Write& write : writes) {
    const std::vector<uint8_t> bytes = Pattern(write.size, write.seed);
    ASSERT_EQ(RunWrite(write.node->handler, write.node->ectx, bytes,
                       kRegionBase + write.at),
              HandlerResult::kSuccess);
  }
  for (DataNode* node : {&a, &b}) {
    for (const auto& put : node->ectx.sink().puts()) {
      Disposition disposition;
      ASSERT_EQ(RunWrite(parity, parity_ectx, put.data, put.address, 0, 0,
                         &disposition),
                HandlerResult::kSuccess);
      EXPECT_EQ(disposition, Disposition::kConsume);
    }
  }
  EXPECT_EQ(std::vector<uint8_t>(parity_region.begin(), parity_region.end()),
            Xor(a.store, b.store));
  EXPECT_EQ(StateWord(parity_ectx, kPackets), 7u);
  EXPECT_TRUE(parity_ectx.sink().puts().empty());
}

TEST(RaidParityTest, RefusedPutFailsWithTheStoreUnchanged) {
  const std::vector<uint8_t> old_store = Pattern(kBlockBytes, 1);
  DataNode node(old_store);
  node.ectx.sink().set_fail_puts(true);
  EXPECT_EQ(
      RunWrite(node.handler, node.ectx, Pattern(512, 3), kRegionBase + 1024),
      HandlerResult::kFail);
  EXPECT_EQ(node.store, old_store);
  EXPECT_EQ(node.ectx.sink().refused_puts(), 1u);
  EXPECT_EQ(StateWord(node.ectx, kPutsRefused), 1u);
  EXPECT_EQ(StateWord(node.ectx, kPackets), 0u);
}

TEST(RaidParityTest, OutOfRangeFailsAndWritesNothing) {
  const std::vector<uint8_t> old_store = Pattern(kBlockBytes, 1);
  for (const char* role : {"data", "parity"}) {
    SCOPED_TRACE(role);
    HandlerInstance handler = MakeHandler(
        "raid_parity",
        role == std::string("data") ? DataParams() : HandlerParamMap{});
    FakeEctx ectx(56);
    std::vector<uint8_t> store = old_store;
    ectx.AddRegion(1, store, true, true, kRegionBase);
    // Past the end by one byte, wholly past it, below the base, and an
    // address whose offset would wrap.
    EXPECT_EQ(
        RunWrite(handler, ectx, Pattern(16, 2), kRegionBase + kBlockBytes - 15),
        HandlerResult::kFail);
    EXPECT_EQ(
        RunWrite(handler, ectx, Pattern(16, 2), kRegionBase + 2 * kBlockBytes),
        HandlerResult::kFail);
    EXPECT_EQ(RunWrite(handler, ectx, Pattern(16, 2), kRegionBase - 8),
              HandlerResult::kFail);
    EXPECT_EQ(RunWrite(handler, ectx, Pattern(16, 2), UINT64_MAX - 4),
              HandlerResult::kFail);
    EXPECT_EQ(store, old_store);
    EXPECT_EQ(StateWord(ectx, kOutOfRange), 4u);
    EXPECT_TRUE(ectx.sink().puts().empty());
    // The last byte of the region is inside.
    EXPECT_EQ(
        RunWrite(handler, ectx, Pattern(16, 2), kRegionBase + kBlockBytes - 16),
        HandlerResult::kSuccess);
  }
}

TEST(RaidParityTest, OtherTransportsAndBadRegionsFail) {
  HandlerInstance handler = MakeHandler("raid_parity", DataParams());
  FakeEctx ectx(56);
  // No region bound.
  EXPECT_EQ(RunWrite(handler, ectx, Pattern(8, 1), kRegionBase),
            HandlerResult::kFail);
  std::vector<uint8_t> read_only(64, 0);
  ectx.AddRegion(1, read_only, true, false, kRegionBase);
  EXPECT_EQ(RunWrite(handler, ectx, Pattern(8, 1), kRegionBase),
            HandlerResult::kFail);
  EXPECT_EQ(StateWord(ectx, kBadRegion), 2u);

  FrameSpec spec;
  spec.payload = Pattern(8, 1);
  TestPacket stream(Build(spec));
  stream.view().SetMessage(
      {.transport = MessageTransport::kDiadStream, .length = 8, .key = 3});
  EXPECT_EQ(RunPayload(handler, ectx.context(), stream.view()),
            HandlerResult::kFail);
  EXPECT_EQ(StateWord(ectx, kNotWrite), 1u);
  EXPECT_EQ(read_only, std::vector<uint8_t>(64, 0));
  EXPECT_TRUE(ectx.sink().puts().empty());
}

TEST(RaidParityTest, PeersNameTheParityNodeOnADataNodeOnly) {
  EXPECT_THAT(MakeHandler("raid_parity", DataParams()).Peers(),
              ElementsAre("p"));
  EXPECT_TRUE(MakeHandler("raid_parity", {{"role", "parity"}}).Peers().empty());
}

TEST(RaidParityTest, BadParamsSayWhatToWrite) {
  const BadParams cases[] = {
      {{{"role", "mirror"}}, "write data or parity"},
      {{{"role", "data"}}, "role=data needs parameters 'parity_peer'"},
      {{{"role", "data"}, {"parity_peer", "p"}, {"parity_rkey", "1"}},
       "parity_address"},
      {{{"role", "data"}, {"parity_rkey", "1"}, {"parity_address", "4096"}},
       "parity_peer"},
  };
  ExpectBadParamsSayWhatToFix("raid_parity", cases);
}

}  // namespace
}  // namespace spinnic::handler_test
