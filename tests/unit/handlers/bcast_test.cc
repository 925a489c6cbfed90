// bcast: the binomial tree's children (r + 2^k for 2^k > r, r + 2^k < P)
// for several sizes, every non-root rank with exactly one parent; each DiAD
// packet put to every child (a write at the same address with `rkey`, a
// stream packet to `stream`, each defaulting to the message's own key) and
// left to the transport; a refused put FAILs the packet and is counted; bad
// parameters (unknown rank, empty or duplicate names, P > 64) say what to
// write.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "handlers/api/testing.h"
#include "tests/unit/handlers/handler_test_util.h"

namespace spinnic::handler_test {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

enum Word : size_t {
  kPackets = 0,
  kBytes = 1,
  kPuts = 2,
  kPutsRefused = 3,
  kNotDiad = 4,
  kBadAddress = 5,
};

// "r0,r1,...": rank i is named r<i>.
std::string Tree(size_t ranks) {
  std::vector<std::string> names;
  for (size_t i = 0; i < ranks; ++i) names.push_back(absl::StrCat("r", i));
  return absl::StrJoin(names, ",");
}

std::vector<std::string> ChildrenOf(size_t rank, size_t ranks) {
  HandlerInstance handler = MakeHandler(
      "bcast", {{"tree", Tree(ranks)}, {"rank", std::to_string(rank)}});
  return handler.Peers();
}

TEST(BcastTest, ChildrenOfEightRanks) {
  // 0 -> {1, 2, 4}, 1 -> {3, 5}, 2 -> {6}, 3 -> {7}, 4..7 leaves.
  EXPECT_THAT(ChildrenOf(0, 8), ElementsAre("r1", "r2", "r4"));
  EXPECT_THAT(ChildrenOf(1, 8), ElementsAre("r3", "r5"));
  EXPECT_THAT(ChildrenOf(2, 8), ElementsAre("r6"));
  EXPECT_THAT(ChildrenOf(3, 8), ElementsAre("r7"));
  for (size_t rank = 4; rank < 8; ++rank) {
    EXPECT_THAT(ChildrenOf(rank, 8), IsEmpty()) << rank;
  }
}

TEST(BcastTest, ChildrenOfOtherSizes) {
  EXPECT_THAT(ChildrenOf(0, 1), IsEmpty());
  EXPECT_THAT(ChildrenOf(0, 2), ElementsAre("r1"));
  EXPECT_THAT(ChildrenOf(0, 5), ElementsAre("r1", "r2", "r4"));
  EXPECT_THAT(ChildrenOf(1, 5), ElementsAre("r3"));
  EXPECT_THAT(ChildrenOf(2, 5), IsEmpty());
  EXPECT_THAT(ChildrenOf(0, 64),
              ElementsAre("r1", "r2", "r4", "r8", "r16", "r32"));
  EXPECT_THAT(ChildrenOf(5, 64), ElementsAre("r13", "r21", "r37"));
  EXPECT_THAT(ChildrenOf(63, 64), IsEmpty());
}

// For every P up to 64: each rank but the root is the child of exactly one
// rank, the one with its highest bit cleared, so the tree reaches all ranks
// once.
TEST(BcastTest, TreeCoversEveryRankOnce) {
  for (size_t ranks = 1; ranks <= 64; ++ranks) {
    SCOPED_TRACE(ranks);
    std::vector<int> parents(ranks, 0);
    for (size_t rank = 0; rank < ranks; ++rank) {
      for (const std::string& child : ChildrenOf(rank, ranks)) {
        const size_t c = std::stoul(child.substr(1));
        ASSERT_LT(c, ranks);
        ++parents[c];
        size_t top = 1;
        while (top * 2 <= c) top *= 2;
        EXPECT_EQ(c - top, rank) << "child " << c;
      }
    }
    EXPECT_EQ(parents[0], 0);
    for (size_t rank = 1; rank < ranks; ++rank) {
      EXPECT_EQ(parents[rank], 1) << "rank " << rank;
    }
  }
}

TEST(BcastTest, OwnEntryIsAPlaceholderAndNamesAreTrimmed) {
  HandlerInstance handler =
      MakeHandler("bcast", {{"tree", " me , b ,c"}, {"rank", "0"}});
  EXPECT_THAT(handler.Peers(), ElementsAre("b", "c"));
}

struct Sent {
  std::vector<uint8_t> frame;
  Disposition disposition;
  HandlerResult result;
};

Sent RunPacket(const HandlerInstance& handler, FakeEctx& ectx,
               const std::vector<uint8_t>& payload,
               const MessageInfo& message) {
  FrameSpec spec;
  spec.payload = payload;
  TestPacket packet(Build(spec));
  packet.view().SetMessage(message);
  HandlerResult result = *RunPayload(handler, ectx.context(), packet.view());
  return {packet.bytes(), packet.view().GetDisposition(), result};
}

TEST(BcastTest, WritePacketGoesToEachChildAtTheSameAddress) {
  HandlerInstance handler = MakeHandler(
      "bcast", {{"tree", Tree(8)}, {"rank", "1"}, {"rkey", "0xabc"}});
  FakeEctx ectx(48);
  const std::vector<uint8_t> payload = Text("a broadcast packet");
  FrameSpec spec;
  spec.payload = payload;
  const std::vector<uint8_t> frame = Build(spec);
  Sent sent = RunPacket(handler, ectx, payload,
                        {.transport = MessageTransport::kDiadWrite,
                         .source = 4,
                         .offset = 1404,
                         .length = 4000,
                         .address = 0x100000000 + 1404,
                         .key = 0x99});
  EXPECT_EQ(sent.result, HandlerResult::kSuccess);
  EXPECT_EQ(sent.disposition, Disposition::kForward);  // stored locally too
  EXPECT_EQ(sent.frame, frame);
  const auto& puts = ectx.sink().puts();
  ASSERT_EQ(puts.size(), 2u);
  EXPECT_EQ(puts[0].peer, "r3");
  EXPECT_EQ(puts[1].peer, "r5");
  for (const auto& put : puts) {
    EXPECT_EQ(put.kind, PeerPut::Kind::kWrite);
    EXPECT_EQ(put.key, 0xabcu);
    EXPECT_EQ(put.address, 0x100000000u + 1404);
    EXPECT_EQ(put.data, payload);
  }
  EXPECT_EQ(StateWord(ectx, kPackets), 1u);
  EXPECT_EQ(StateWord(ectx, kBytes), payload.size());
  EXPECT_EQ(StateWord(ectx, kPuts), 2u);
}

TEST(BcastTest, StreamPacketGoesToEachChildAsAStreamMessage) {
  HandlerInstance handler =
      MakeHandler("bcast", {{"tree", Tree(8)}, {"rank", "0"}});
  FakeEctx ectx(48);
  const std::vector<uint8_t> payload = Text("stream bytes");
  Sent sent = RunPacket(handler, ectx, payload,
                        {.transport = MessageTransport::kDiadStream,
                         .source = 1,
                         .length = 12,
                         .key = 7});
  EXPECT_EQ(sent.result, HandlerResult::kSuccess);
  EXPECT_EQ(sent.disposition, Disposition::kForward);
  const auto& puts = ectx.sink().puts();
  ASSERT_EQ(puts.size(), 3u);
  const char* names[] = {"r1", "r2", "r4"};
  for (size_t i = 0; i < puts.size(); ++i) {
    EXPECT_EQ(puts[i].peer, names[i]);
    EXPECT_EQ(puts[i].kind, PeerPut::Kind::kStream);
    EXPECT_EQ(puts[i].key, 7u);  // the message's own stream id
    EXPECT_EQ(puts[i].address, 0u);
    EXPECT_EQ(puts[i].data, payload);
  }

  // With `stream` set, the children get that stream id; a write without
  // `rkey` keeps its own.
  HandlerInstance renamed = MakeHandler(
      "bcast", {{"tree", Tree(4)}, {"rank", "0"}, {"stream", "11"}});
  FakeEctx other(48);
  RunPacket(
      renamed, other, payload,
      {.transport = MessageTransport::kDiadStream, .length = 12, .key = 7});
  RunPacket(renamed, other, payload,
            {.transport = MessageTransport::kDiadWrite,
             .length = 12,
             .address = 0x2000,
             .key = 0x31});
  ASSERT_EQ(other.sink().puts().size(), 4u);
  EXPECT_EQ(other.sink().puts()[0].key, 11u);
  EXPECT_EQ(other.sink().puts()[1].key, 11u);
  EXPECT_EQ(other.sink().puts()[2].key, 0x31u);
  EXPECT_EQ(other.sink().puts()[2].address, 0x2000u);
}

// Across appliances every rank's buffer has its own rkey and base address:
// a write goes to the same offset in each child's buffer, with its rkey.
TEST(BcastTest, WriteGoesToTheSameOffsetInEachChildsBuffer) {
  HandlerInstance handler = MakeHandler(
      "bcast",
      {{"tree", Tree(4)},
       {"rank", "1"},
       {"rkeys", "0x10, 0x11 ,0x12,0x13"},
       {"addresses", "0x100000000,0x200000000,0x300000000,0x400000000"}});
  FakeEctx ectx(48);
  const std::vector<uint8_t> payload = Text("offset 0x40");
  // Rank 1 of 4 has one child, rank 3.
  Sent sent = RunPacket(handler, ectx, payload,
                        {.transport = MessageTransport::kDiadWrite,
                         .length = 11,
                         .address = 0x200000040,
                         .key = 0x11});
  EXPECT_EQ(sent.result, HandlerResult::kSuccess);
  ASSERT_EQ(ectx.sink().puts().size(), 1u);
  EXPECT_EQ(ectx.sink().puts()[0].peer, "r3");
  EXPECT_EQ(ectx.sink().puts()[0].key, 0x13u);
  EXPECT_EQ(ectx.sink().puts()[0].address, 0x400000040u);
  EXPECT_EQ(ectx.sink().puts()[0].data, payload);

  // Below this rank's own buffer: no offset to keep, nothing put.
  sent = RunPacket(handler, ectx, payload,
                   {.transport = MessageTransport::kDiadWrite,
                    .length = 11,
                    .address = 0x1fffffff0,
                    .key = 0x11});
  EXPECT_EQ(sent.result, HandlerResult::kFail);
  EXPECT_EQ(ectx.sink().puts().size(), 1u);
  EXPECT_EQ(StateWord(ectx, kBadAddress), 1u);

  // Streams ignore both lists.
  sent = RunPacket(
      handler, ectx, payload,
      {.transport = MessageTransport::kDiadStream, .length = 11, .key = 7});
  ASSERT_EQ(ectx.sink().puts().size(), 2u);
  EXPECT_EQ(ectx.sink().puts()[1].kind, PeerPut::Kind::kStream);
  EXPECT_EQ(ectx.sink().puts()[1].key, 7u);
  EXPECT_EQ(ectx.sink().puts()[1].address, 0u);
}

TEST(BcastTest, LeafOnlyDelivers) {
  HandlerInstance handler =
      MakeHandler("bcast", {{"tree", Tree(8)}, {"rank", "7"}});
  FakeEctx ectx(48);
  Sent sent = RunPacket(
      handler, ectx, Text("x"),
      {.transport = MessageTransport::kDiadStream, .length = 1, .key = 7});
  EXPECT_EQ(sent.result, HandlerResult::kSuccess);
  EXPECT_EQ(sent.disposition, Disposition::kForward);
  EXPECT_TRUE(ectx.sink().puts().empty());
  EXPECT_EQ(StateWord(ectx, kPackets), 1u);
}

TEST(BcastTest, RefusedPutFailsThePacket) {
  HandlerInstance handler =
      MakeHandler("bcast", {{"tree", Tree(8)}, {"rank", "0"}});
  FakeEctx ectx(48);
  ectx.sink().set_fail_puts(true);
  Sent sent = RunPacket(
      handler, ectx, Text("x"),
      {.transport = MessageTransport::kDiadStream, .length = 1, .key = 7});
  EXPECT_EQ(sent.result, HandlerResult::kFail);
  EXPECT_EQ(StateWord(ectx, kPutsRefused), 1u);
  EXPECT_EQ(StateWord(ectx, kPackets), 0u);
}

TEST(BcastTest, OtherTransportsPassUntouched) {
  HandlerInstance handler =
      MakeHandler("bcast", {{"tree", Tree(8)}, {"rank", "0"}});
  FakeEctx ectx(48);
  Sent sent = RunPacket(handler, ectx, Text("x"), {});
  EXPECT_EQ(sent.result, HandlerResult::kSuccess);
  EXPECT_EQ(sent.disposition, Disposition::kForward);
  EXPECT_TRUE(ectx.sink().puts().empty());
  EXPECT_EQ(StateWord(ectx, kNotDiad), 1u);
}

TEST(BcastTest, BadParamsSayWhatToWrite) {
  const BadParams cases[] = {
      {{{"tree", "a,b,c"}, {"rank", "3"}}, "write 0..2"},
      {{{"tree", "a,b,a"}, {"rank", "0"}}, "'a' appears twice"},
      {{{"tree", "a,,c"}, {"rank", "0"}}, "rank 1 has no name"},
      {{{"tree", ""}, {"rank", "0"}}, "rank 0 has no name"},
      {{{"tree", Tree(65)}, {"rank", "0"}}, "at most 64"},
      {{{"tree", "a,b"}}, "missing required parameter 'rank'"},
      {{{"tree", "a,b,c"}, {"rank", "0"}, {"rkeys", "1,2"}},
       "'rkeys' has 2 entries for the 3 ranks"},
      {{{"tree", "a,b"}, {"rank", "0"}, {"rkeys", "1,0x100000000"}},
       "entry 1 is not a number up to 4294967295"},
      {{{"tree", "a,b"}, {"rank", "0"}, {"addresses", "0x1000,zz"}},
       "parameter 'addresses'"},
      {{{"tree", "a,b"}, {"rank", "0"}, {"addresses", "0x1000,"}},
       "entry 1 is not a number"},
  };
  ExpectBadParamsSayWhatToFix("bcast", cases);
}

}  // namespace
}  // namespace spinnic::handler_test
