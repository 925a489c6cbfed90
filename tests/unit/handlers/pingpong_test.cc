// pingpong: every DiAD packet is put back to its sender (empty peer, the
// message's source) as it arrives, as a stream message to reply_stream (or
// the ping's own stream id) or as a write at reply_address + offset with
// reply_rkey, with exactly the packet's bytes, and consumed; a refused put
// drops the packet and is counted; a passthrough UDP frame is reflected in
// place exactly as reflect does; bad parameters say what to write.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "handlers/api/testing.h"
#include "tests/unit/handlers/handler_test_util.h"

namespace spinnic::handler_test {
namespace {

enum Word : size_t {
  kPackets = 0,
  kBytes = 1,
  kPutsRefused = 2,
  kMessages = 3,
  kUnsupported = 4,
  kNotReflected = 5,
};

std::vector<uint8_t> UdpFrame(const std::vector<uint8_t>& payload) {
  FrameSpec spec;
  spec.payload = payload;
  return Build(spec);
}

// The packets of one message of `bytes`, cut every `packet` bytes, sent by
// the peer in `source`, handed to the handler out of order (last first) to
// show that each is answered on its own.
void RunMessage(const HandlerInstance& handler, FakeEctx& ectx,
                const std::vector<uint8_t>& bytes, size_t packet,
                const MessageInfo& message) {
  std::vector<size_t> offsets;
  for (size_t at = 0; at < bytes.size(); at += packet) offsets.push_back(at);
  for (auto it = offsets.rbegin(); it != offsets.rend(); ++it) {
    const size_t at = *it;
    const size_t size = std::min(packet, bytes.size() - at);
    TestPacket p(UdpFrame({bytes.begin() + at, bytes.begin() + at + size}));
    MessageInfo info = message;
    info.offset = at;
    info.length = bytes.size();
    if (info.transport == MessageTransport::kDiadWrite) info.address += at;
    p.view().SetMessage(info);
    ASSERT_EQ(RunPayload(handler, ectx.context(), p.view()),
              HandlerResult::kSuccess);
    EXPECT_EQ(p.view().GetDisposition(), Disposition::kConsume);
  }
}

std::vector<uint8_t> Pattern(size_t n) {
  std::vector<uint8_t> bytes(n);
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>(i * 7 + 3);
  return bytes;
}

TEST(PingpongTest, StreamModePutsEachPacketBackToItsSource) {
  HandlerInstance handler =
      MakeHandler("pingpong", {{"mode", "stream"}, {"reply_stream", "42"}});
  FakeEctx ectx(48);
  const std::vector<uint8_t> ping = Pattern(1000);
  RunMessage(
      handler, ectx, ping, 300,
      {.transport = MessageTransport::kDiadStream, .source = 5, .key = 7});
  const auto& puts = ectx.sink().puts();
  ASSERT_EQ(puts.size(), 4u);
  // Last packet first: offsets 900, 600, 300, 0.
  for (size_t i = 0; i < puts.size(); ++i) {
    SCOPED_TRACE(i);
    const size_t at = 900 - 300 * i;
    EXPECT_EQ(puts[i].kind, PeerPut::Kind::kStream);
    EXPECT_EQ(puts[i].peer, "");
    EXPECT_EQ(puts[i].source, 5u);
    EXPECT_EQ(puts[i].key, 42u);
    EXPECT_EQ(puts[i].address, 0u);
    EXPECT_EQ(puts[i].data,
              std::vector<uint8_t>(
                  ping.begin() + at,
                  ping.begin() + std::min<size_t>(at + 300, ping.size())));
  }
  EXPECT_EQ(StateWord(ectx, kPackets), 4u);
  EXPECT_EQ(StateWord(ectx, kBytes), 1000u);
  EXPECT_EQ(StateWord(ectx, kMessages), 1u);
  EXPECT_EQ(StateWord(ectx, kPutsRefused), 0u);
}

TEST(PingpongTest, StreamModeDefaultsToThePingsStreamId) {
  HandlerInstance handler = MakeHandler("pingpong");
  FakeEctx ectx(48);
  RunMessage(
      handler, ectx, Text("ping"), 64,
      {.transport = MessageTransport::kDiadStream, .source = 2, .key = 9});
  ASSERT_EQ(ectx.sink().puts().size(), 1u);
  EXPECT_EQ(ectx.sink().puts()[0].key, 9u);
  EXPECT_EQ(ectx.sink().puts()[0].source, 2u);
  EXPECT_EQ(ectx.sink().puts()[0].data, Text("ping"));

  // A write ping has no stream id to answer on: passed untouched.
  TestPacket p(UdpFrame(Text("write")));
  p.view().SetMessage({.transport = MessageTransport::kDiadWrite,
                       .source = 2,
                       .length = 5,
                       .address = 0x10000,
                       .key = 0x77});
  EXPECT_EQ(RunPayload(handler, ectx.context(), p.view()),
            HandlerResult::kSuccess);
  EXPECT_EQ(p.view().GetDisposition(), Disposition::kForward);
  EXPECT_EQ(ectx.sink().puts().size(), 1u);
  EXPECT_EQ(StateWord(ectx, kUnsupported), 1u);
}

TEST(PingpongTest, WriteModeReassemblesThePongAtReplyAddressPlusOffset) {
  HandlerInstance handler =
      MakeHandler("pingpong", {{"mode", "write"},
                               {"reply_rkey", "0x1a2b3c4d"},
                               {"reply_address", "0x100000000"}});
  FakeEctx ectx(48);
  const std::vector<uint8_t> ping = Pattern(1000);
  RunMessage(handler, ectx, ping, 256,
             {.transport = MessageTransport::kDiadWrite,
              .source = 3,
              .address = 0x200000000,
              .key = 0x55});
  const auto& puts = ectx.sink().puts();
  ASSERT_EQ(puts.size(), 4u);
  // Reassemble the pong as the sender's region would: by address.
  std::vector<uint8_t> pong(ping.size(), 0);
  for (const auto& put : puts) {
    EXPECT_EQ(put.kind, PeerPut::Kind::kWrite);
    EXPECT_EQ(put.peer, "");
    EXPECT_EQ(put.source, 3u);
    EXPECT_EQ(put.key, 0x1a2b3c4du);
    ASSERT_GE(put.address, 0x100000000u);
    const size_t at = put.address - 0x100000000u;
    ASSERT_LE(at + put.data.size(), pong.size());
    std::memcpy(pong.data() + at, put.data.data(), put.data.size());
  }
  EXPECT_EQ(puts[0].address, 0x100000000u + 768);
  EXPECT_EQ(puts[0].data.size(), 1000u - 768);
  EXPECT_EQ(puts[3].address, 0x100000000u);
  EXPECT_EQ(pong, ping);
  EXPECT_EQ(StateWord(ectx, kMessages), 1u);
  EXPECT_EQ(StateWord(ectx, kBytes), 1000u);
}

TEST(PingpongTest, RefusedPutDropsThePacketAndIsCounted) {
  HandlerInstance handler = MakeHandler("pingpong", {{"reply_stream", "4"}});
  FakeEctx ectx(48);
  ectx.sink().set_fail_puts(true);
  TestPacket p(UdpFrame(Text("lost")));
  p.view().SetMessage({.transport = MessageTransport::kDiadStream,
                       .source = 1,
                       .length = 4,
                       .key = 4});
  EXPECT_EQ(RunPayload(handler, ectx.context(), p.view()),
            HandlerResult::kDrop);
  EXPECT_TRUE(ectx.sink().puts().empty());
  EXPECT_EQ(ectx.sink().refused_puts(), 1u);
  EXPECT_EQ(StateWord(ectx, kPutsRefused), 1u);
  EXPECT_EQ(StateWord(ectx, kPackets), 0u);
  EXPECT_EQ(StateWord(ectx, kMessages), 0u);
}

TEST(PingpongTest, PassthroughUdpIsReflectedInPlace) {
  HandlerInstance handler = MakeHandler("pingpong");
  FakeEctx ectx(48);
  FrameSpec spec;
  spec.payload = Text("ping-pong payload");
  const std::vector<uint8_t> in = Build(spec);
  ASSERT_TRUE(ChecksumsValid(in));
  TestPacket p(in, ClassifierLayers(in), /*in_port=*/1);
  EXPECT_EQ(RunPayload(handler, ectx.context(), p.view()),
            HandlerResult::kSuccess);
  EXPECT_EQ(p.view().GetDisposition(), Disposition::kReply);
  EXPECT_EQ(Hex(p.bytes()), Hex(Build(Reflected(spec))));
  EXPECT_TRUE(ChecksumsValid(p.bytes()));
  EXPECT_TRUE(ectx.sink().puts().empty());
  EXPECT_EQ(StateWord(ectx, kPackets), 1u);
  EXPECT_EQ(StateWord(ectx, kBytes), in.size());
  EXPECT_EQ(StateWord(ectx, kMessages), 1u);

  // A group destination is not answered: forwarded untouched.
  spec.dst_mac = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  const std::vector<uint8_t> group = Build(spec);
  TestPacket g(group, ClassifierLayers(group));
  EXPECT_EQ(RunPayload(handler, ectx.context(), g.view()),
            HandlerResult::kSuccess);
  EXPECT_EQ(g.view().GetDisposition(), Disposition::kForward);
  EXPECT_EQ(g.bytes(), group);
  EXPECT_EQ(StateWord(ectx, kNotReflected), 1u);
}

TEST(PingpongTest, RocePassesUntouched) {
  HandlerInstance handler = MakeHandler("pingpong");
  FakeEctx ectx(48);
  const std::vector<uint8_t> frame = UdpFrame(Text("roce"));
  TestPacket p(frame);
  p.view().SetMessage({.transport = MessageTransport::kRoceSend});
  EXPECT_EQ(RunPayload(handler, ectx.context(), p.view()),
            HandlerResult::kSuccess);
  EXPECT_EQ(p.view().GetDisposition(), Disposition::kForward);
  EXPECT_EQ(p.bytes(), frame);
  EXPECT_TRUE(ectx.sink().puts().empty());
  EXPECT_EQ(StateWord(ectx, kUnsupported), 1u);
}

TEST(PingpongTest, NamesNoPeers) {
  absl::StatusOr<HandlerInstance> handler = CreateHandlerForTest("pingpong");
  ASSERT_TRUE(handler.ok());
  EXPECT_TRUE(handler->Peers().empty());
}

TEST(PingpongTest, BadParamsSayWhatToWrite) {
  const BadParams cases[] = {
      {{{"mode", "echo"}}, "write stream or write"},
      {{{"mode", "write"}},
       "needs parameters 'reply_rkey' and 'reply_address'"},
      {{{"mode", "write"}, {"reply_rkey", "5"}}, "reply_address"},
      {{{"reply_stream", "0x100000000"}}, "reply_stream"},
  };
  ExpectBadParamsSayWhatToFix("pingpong", cases);
}

}  // namespace
}  // namespace spinnic::handler_test
