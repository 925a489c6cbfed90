// cond_read: a read whose expected version matches the region's version
// word is answered with the data; a mismatch is refused with the current
// version; a range past the region, a read above max_length or a short
// request is BAD_REQUEST; answers go to the sender over a DiAD stream or in
// place over UDP (byte for byte, checksums valid); refused puts are counted.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "handlers/api/testing.h"
#include "tests/unit/handlers/handler_test_util.h"

namespace spinnic::handler_test {
namespace {

constexpr uint8_t kOk = 0, kRefused = 1, kBadRequest = 2, kNoRoom = 3;
constexpr uint32_t kReplyStream = 5;
constexpr uint32_t kSource = 2;
constexpr uint32_t kStateSize = 80;

enum Word : size_t {
  kReads = 0,
  kServed,
  kRefusedCount,
  kBad,
  kRepliesRefused,
  kBytesServed,
  kNoRoomCount,
  kUnanswered,
  kNotUdp,
  kBadRegion,
};

void PutLe(std::vector<uint8_t>& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(static_cast<uint8_t>(value >> 8 * i));
}

std::vector<uint8_t> Request(uint32_t id, uint32_t length, uint64_t offset,
                             uint64_t expected, size_t pad_to = 0) {
  std::vector<uint8_t> bytes;
  PutLe(bytes, id, 4);
  PutLe(bytes, length, 4);
  PutLe(bytes, offset, 8);
  PutLe(bytes, expected, 8);
  if (bytes.size() < pad_to) bytes.resize(pad_to, 0);
  return bytes;
}

std::vector<uint8_t> Reply(uint32_t id, uint8_t status, uint64_t version,
                           const std::vector<uint8_t>& data = {}) {
  std::vector<uint8_t> bytes;
  PutLe(bytes, id, 4);
  bytes.push_back(status);
  bytes.insert(bytes.end(), 3, 0);
  PutLe(bytes, version, 8);
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

class CondReadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Region: version word at 8, data after it.
    region_.assign(64, 0);
    SetVersion(41);
    for (size_t i = 16; i < RegionBytes().size(); ++i) {
      RegionBytes()[i] = static_cast<uint8_t>(i);
    }
    ectx_.AddRegion(1, RegionBytes(), /*readable=*/true, /*writable=*/false);
    handler_ = MakeHandler("cond_read", {{"version_offset", "8"},
                                         {"max_length", "100"},
                                         {"reply_stream", "5"}});
  }

  std::span<uint8_t> RegionBytes() {
    return {reinterpret_cast<uint8_t*>(region_.data()), region_.size() * 8};
  }
  void SetVersion(uint64_t version) { region_[1] = version; }
  std::vector<uint8_t> Data(size_t offset, size_t length) {
    return {RegionBytes().begin() + offset,
            RegionBytes().begin() + offset + length};
  }

  // One request as a DiAD stream message from slot kSource; the answer put
  // to the sender, empty when none.
  std::vector<uint8_t> Stream(
      const std::vector<uint8_t>& payload,
      HandlerResult expected = HandlerResult::kSuccess) {
    FrameSpec spec;
    spec.payload = payload;
    std::vector<uint8_t> frame = Build(spec);
    TestPacket packet(frame, ClassifierLayers(frame));
    packet.view().SetMessage({.transport = MessageTransport::kDiadStream,
                              .source = kSource,
                              .length = payload.size()});
    const size_t puts = ectx_.sink().puts().size();
    EXPECT_EQ(RunPayload(handler_, ectx_.context(), packet.view()), expected);
    if (ectx_.sink().puts().size() == puts) return {};
    const FakeActionSink::RecordedPut& put = ectx_.sink().puts().back();
    EXPECT_EQ(put.kind, PeerPut::Kind::kStream);
    EXPECT_EQ(put.peer, "");
    EXPECT_EQ(put.source, kSource);
    EXPECT_EQ(put.key, kReplyStream);
    return put.data;
  }

  HandlerInstance handler_;
  FakeEctx ectx_{kStateSize};
  std::vector<uint64_t> region_;
};

TEST_F(CondReadTest, MatchingVersionGetsTheData) {
  EXPECT_EQ(Stream(Request(0x11223344, 20, 30, 41)),
            Reply(0x11223344, kOk, 41, Data(30, 20)));
  // Up to the region's last byte; a zero-length read probes the version.
  EXPECT_EQ(Stream(Request(2, 34, 478, 41)), Reply(2, kOk, 41, Data(478, 34)));
  EXPECT_EQ(Stream(Request(3, 0, 512, 41)), Reply(3, kOk, 41));
  EXPECT_EQ(StateWord(ectx_, kReads), 3u);
  EXPECT_EQ(StateWord(ectx_, kServed), 3u);
  EXPECT_EQ(StateWord(ectx_, kBytesServed), 54u);
}

TEST_F(CondReadTest, MismatchIsRefusedWithTheCurrentVersion) {
  EXPECT_EQ(Stream(Request(9, 20, 30, 40)), Reply(9, kRefused, 41));
  SetVersion(42);
  EXPECT_EQ(Stream(Request(10, 20, 30, 41)), Reply(10, kRefused, 42));
  EXPECT_EQ(Stream(Request(11, 20, 30, 42)), Reply(11, kOk, 42, Data(30, 20)));
  EXPECT_EQ(StateWord(ectx_, kRefusedCount), 2u);
  EXPECT_EQ(StateWord(ectx_, kServed), 1u);
}

TEST_F(CondReadTest, BadRequests) {
  std::vector<uint8_t> short_request = Request(4, 8, 16, 41);
  short_request.resize(23);
  const std::vector<std::vector<uint8_t>> bad = {
      Request(4, 8, 510, 41),           // past the end
      Request(4, 1, 512, 41),           // starts at the end
      Request(4, 8, ~uint64_t{0}, 41),  // offset + length wraps
      Request(4, 101, 16, 41),          // above max_length
      short_request,
  };
  for (size_t i = 0; i < bad.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(Stream(bad[i]), Reply(4, kBadRequest, 41));
  }
  EXPECT_EQ(StateWord(ectx_, kBad), bad.size());
  // Not even a request id: dropped, nobody answered.
  EXPECT_TRUE(Stream({1, 2, 3}, HandlerResult::kDrop).empty());
  EXPECT_EQ(StateWord(ectx_, kBad), bad.size() + 1);
  EXPECT_EQ(StateWord(ectx_, kServed), 0u);
}

TEST_F(CondReadTest, RefusedPutIsCountedNotRetried) {
  ectx_.sink().set_fail_puts(true);
  EXPECT_TRUE(Stream(Request(1, 8, 16, 41)).empty());
  EXPECT_EQ(ectx_.sink().refused_puts(), 1u);
  EXPECT_EQ(StateWord(ectx_, kRepliesRefused), 1u);
  EXPECT_EQ(StateWord(ectx_, kServed), 1u);
}

TEST_F(CondReadTest, UdpRequestsAreAnsweredInPlace) {
  for (bool ipv6 : {false, true}) {
    SCOPED_TRACE(ipv6 ? "IPv6" : "IPv4");
    auto run = [&](const std::vector<uint8_t>& request,
                   const std::vector<uint8_t>& reply) {
      FrameSpec spec;
      spec.ipv6 = ipv6;
      spec.payload = request;
      std::vector<uint8_t> frame = Build(spec);
      TestPacket packet(frame, ClassifierLayers(frame), /*in_port=*/1);
      EXPECT_EQ(RunPayload(handler_, ectx_.context(), packet.view()),
                HandlerResult::kSuccess);
      EXPECT_EQ(packet.view().GetDisposition(), Disposition::kReply);
      FrameSpec answer = Reflected(spec);
      answer.payload = reply;
      answer.pad_to = frame.size();
      EXPECT_EQ(Hex(packet.bytes()), Hex(Build(answer)));
      EXPECT_TRUE(ChecksumsValid(packet.bytes()));
    };
    run(Request(1, 40, 100, 41, 16 + 40), Reply(1, kOk, 41, Data(100, 40)));
    run(Request(2, 40, 100, 7), Reply(2, kRefused, 41));
    // The frame is too short for the data: pad the request.
    run(Request(3, 40, 100, 41), Reply(3, kNoRoom, 41));
  }
  EXPECT_EQ(StateWord(ectx_, kNoRoomCount), 2u);
  EXPECT_TRUE(ectx_.sink().puts().empty());
}

TEST_F(CondReadTest, UnusableRegionFails) {
  FakeEctx none(kStateSize);
  FrameSpec spec;
  spec.payload = Request(1, 8, 16, 41);
  std::vector<uint8_t> frame = Build(spec);
  TestPacket packet(frame, ClassifierLayers(frame));
  EXPECT_EQ(RunPayload(handler_, none.context(), packet.view()),
            HandlerResult::kFail);
  // Too short to hold the version word at offset 8.
  FakeEctx small(kStateSize);
  small.AddRegion(1, RegionBytes().first(12));
  EXPECT_EQ(RunPayload(handler_, small.context(), packet.view()),
            HandlerResult::kFail);
  EXPECT_EQ(StateWord(none, kBadRegion), 1u);
  EXPECT_EQ(StateWord(small, kBadRegion), 1u);
}

TEST(CondReadParamsTest, BadParametersSayWhatToWrite) {
  const BadParams cases[] = {
      {{{"version_offset", "12"}}, "write a multiple of 8"},
      {{{"max_length", "0"}}, "max_length"},
      {{{"max_length", "4097"}}, "1..4096"},
  };
  ExpectBadParamsSayWhatToFix("cond_read", cases);
}

}  // namespace
}  // namespace spinnic::handler_test
