// kvs: GET finds what PUT stored, over a DiAD stream (the answer is a
// stream put to the sender's slot) and over passthrough UDP (the request
// frame comes back as the answer, byte for byte as built from scratch, every
// checksum valid); PUT overwrites; DELETE leaves a tombstone that keeps the
// probe chain intact; a full chain is FULL; malformed requests are
// BAD_REQUEST and write nothing; the region holds the documented slot
// layout; concurrent HPUs never see a torn value.
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "handlers/api/testing.h"
#include "tests/unit/handlers/handler_test_util.h"

namespace spinnic::handler_test {
namespace {

constexpr uint8_t kGet = 1, kPut = 2, kDelete = 3;
constexpr uint8_t kOk = 0, kNotFound = 1, kFull = 2, kBadRequest = 3, kBusy = 4,
                  kNoRoom = 5;
constexpr uint32_t kReplyStream = 9;
constexpr uint32_t kSource = 3;

enum Word : size_t {
  kGets = 0,
  kHits,
  kPuts,
  kDeletes,
  kNotFoundCount,
  kFullCount,
  kBusyCount,
  kBadRequests,
  kNoRoomCount,
  kRepliesRefused,
  kUnanswered,
  kNotUdp,
  kBadRegion,
};
constexpr uint32_t kStateSize = 104;

// The documented hash: FNV-1a, 64 bits, of the key's bytes.
uint64_t Fnv1a64(const std::string& key) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : key) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

std::vector<uint8_t> Request(uint8_t op, const std::string& key,
                             const std::string& value, uint32_t id,
                             size_t pad_to = 0) {
  std::vector<uint8_t> bytes = {op, static_cast<uint8_t>(key.size()),
                                static_cast<uint8_t>(value.size()),
                                static_cast<uint8_t>(value.size() >> 8)};
  for (int i = 0; i < 4; ++i)
    bytes.push_back(static_cast<uint8_t>(id >> 8 * i));
  bytes.insert(bytes.end(), key.begin(), key.end());
  bytes.insert(bytes.end(), value.begin(), value.end());
  if (bytes.size() < pad_to) bytes.resize(pad_to, 0);
  return bytes;
}

std::vector<uint8_t> ReplyBytes(uint8_t status, uint8_t op, uint32_t id,
                                const std::string& value = "",
                                uint16_t value_len = 0) {
  if (!value.empty()) value_len = static_cast<uint16_t>(value.size());
  std::vector<uint8_t> bytes = {status, op, static_cast<uint8_t>(value_len),
                                static_cast<uint8_t>(value_len >> 8)};
  for (int i = 0; i < 4; ++i)
    bytes.push_back(static_cast<uint8_t>(id >> 8 * i));
  bytes.insert(bytes.end(), value.begin(), value.end());
  return bytes;
}

HandlerParamMap Params(uint32_t key_max, uint32_t value_max,
                       uint32_t max_probe = 16,
                       uint32_t reply_stream = kReplyStream) {
  return {{"key_max", std::to_string(key_max)},
          {"value_max", std::to_string(value_max)},
          {"max_probe", std::to_string(max_probe)},
          {"reply_stream", std::to_string(reply_stream)}};
}

size_t SlotBytes(size_t key_max, size_t value_max) {
  return (8 + key_max + value_max + 7) / 8 * 8;
}

// Keys "k0", "k1", ... of which the first `n` share a home slot among
// `slots`.
std::vector<std::string> CollidingKeys(size_t slots, size_t n) {
  std::vector<std::string> keys;
  const uint64_t home = Fnv1a64("k0") % slots;
  for (int i = 0; keys.size() < n; ++i) {
    std::string key = "k" + std::to_string(i);
    if (Fnv1a64(key) % slots == home) keys.push_back(key);
  }
  return keys;
}

class KvsTest : public ::testing::Test {
 protected:
  void Install(uint32_t key_max, uint32_t value_max, size_t slots,
               uint32_t max_probe = 16, uint32_t reply_stream = kReplyStream) {
    key_max_ = key_max;
    value_max_ = value_max;
    handler_ =
        MakeHandler("kvs", Params(key_max, value_max, max_probe, reply_stream));
    region_.assign(slots * SlotBytes(key_max, value_max) / 8, 0);
    ectx_.AddRegion(1, RegionBytes());
  }

  std::span<uint8_t> RegionBytes() {
    return {reinterpret_cast<uint8_t*>(region_.data()), region_.size() * 8};
  }

  // Runs one request as a single-packet DiAD stream message from slot
  // kSource; returns the answer put to the sender (empty when none).
  std::vector<uint8_t> Stream(const std::vector<uint8_t>& payload,
                              uint64_t length = 0, FakeEctx* ectx = nullptr) {
    if (ectx == nullptr) ectx = &ectx_;
    FrameSpec spec;
    spec.payload = payload;
    std::vector<uint8_t> frame = Build(spec);
    TestPacket packet(frame, ClassifierLayers(frame));
    packet.view().SetMessage({.transport = MessageTransport::kDiadStream,
                              .source = kSource,
                              .length = length != 0 ? length : payload.size()});
    const size_t puts = ectx->sink().puts().size();
    EXPECT_EQ(RunPayload(handler_, ectx->context(), packet.view()),
              HandlerResult::kSuccess);
    EXPECT_EQ(packet.view().GetDisposition(), Disposition::kConsume);
    if (ectx->sink().puts().size() == puts) return {};
    const FakeActionSink::RecordedPut& put = ectx->sink().puts().back();
    EXPECT_EQ(put.kind, PeerPut::Kind::kStream);
    EXPECT_EQ(put.peer, "");
    EXPECT_EQ(put.source, kSource);
    EXPECT_EQ(put.key, kReplyStream);
    return put.data;
  }

  std::vector<uint8_t> Get(const std::string& key, uint32_t id = 7) {
    return Stream(Request(kGet, key, "", id));
  }
  std::vector<uint8_t> Put(const std::string& key, const std::string& value,
                           uint32_t id = 7) {
    return Stream(Request(kPut, key, value, id));
  }
  std::vector<uint8_t> Delete(const std::string& key, uint32_t id = 7) {
    return Stream(Request(kDelete, key, "", id));
  }

  // The slot's bytes, in the region as the host sees it.
  std::span<const uint8_t> SlotOf(size_t index) {
    const size_t bytes = SlotBytes(key_max_, value_max_);
    return RegionBytes().subspan(index * bytes, bytes);
  }
  size_t Slots() {
    return RegionBytes().size() / SlotBytes(key_max_, value_max_);
  }

  HandlerInstance handler_;
  FakeEctx ectx_{kStateSize};
  std::vector<uint64_t> region_;  // 8-byte aligned, as a registered region
  uint32_t key_max_ = 0;
  uint32_t value_max_ = 0;
};

TEST_F(KvsTest, GetAfterPutOverDiadStream) {
  Install(16, 64, 8);
  EXPECT_EQ(Put("alpha", "one", 0x01020304), ReplyBytes(kOk, kPut, 0x01020304));
  EXPECT_EQ(Get("alpha", 0xa0b0c0d0), ReplyBytes(kOk, kGet, 0xa0b0c0d0, "one"));
  EXPECT_EQ(StateWord(ectx_, kPuts), 1u);
  EXPECT_EQ(StateWord(ectx_, kGets), 1u);
  EXPECT_EQ(StateWord(ectx_, kHits), 1u);
  EXPECT_EQ(ectx_.sink().puts().size(), 2u);
}

TEST_F(KvsTest, PutOverwrites) {
  Install(16, 64, 8);
  EXPECT_EQ(Put("k", "short")[0], kOk);
  EXPECT_EQ(Put("k", "a much longer value than before")[0], kOk);
  EXPECT_EQ(Get("k"),
            ReplyBytes(kOk, kGet, 7, "a much longer value than before"));
  EXPECT_EQ(Put("k", "x")[0], kOk);
  EXPECT_EQ(Get("k"), ReplyBytes(kOk, kGet, 7, "x"));
}

TEST_F(KvsTest, MissingKeyIsNotFound) {
  Install(16, 64, 8);
  EXPECT_EQ(Get("nothing"), ReplyBytes(kNotFound, kGet, 7));
  EXPECT_EQ(Delete("nothing"), ReplyBytes(kNotFound, kDelete, 7));
  EXPECT_EQ(Put("something", "v")[0], kOk);
  EXPECT_EQ(Get("somethin"), ReplyBytes(kNotFound, kGet, 7));
  EXPECT_EQ(StateWord(ectx_, kNotFoundCount), 3u);
}

TEST_F(KvsTest, DeleteLeavesATombstoneThatKeepsTheChain) {
  Install(8, 16, 4);
  const std::vector<std::string> keys = CollidingKeys(4, 3);
  EXPECT_EQ(Put(keys[0], "first")[0], kOk);
  EXPECT_EQ(Put(keys[1], "second")[0], kOk);
  EXPECT_EQ(Put(keys[2], "third")[0], kOk);
  EXPECT_EQ(Delete(keys[0]), ReplyBytes(kOk, kDelete, 7));
  EXPECT_EQ(Get(keys[0]), ReplyBytes(kNotFound, kGet, 7));
  EXPECT_EQ(Delete(keys[0]), ReplyBytes(kNotFound, kDelete, 7));
  // Past the tombstone, both later keys of the chain are still found.
  EXPECT_EQ(Get(keys[1]), ReplyBytes(kOk, kGet, 7, "second"));
  EXPECT_EQ(Get(keys[2]), ReplyBytes(kOk, kGet, 7, "third"));
  EXPECT_EQ(Delete(keys[1])[0], kOk);
  EXPECT_EQ(Get(keys[2]), ReplyBytes(kOk, kGet, 7, "third"));
  // The home slot is the tombstone of keys[0] (bit 1 set, key kept); a PUT
  // of that key revives it in place.
  const size_t home = Fnv1a64(keys[0]) % 4;
  uint32_t word;
  std::memcpy(&word, SlotOf(home).data(), 4);
  EXPECT_EQ(word & 3, 2u);
  EXPECT_EQ(Put(keys[0], "again")[0], kOk);
  std::memcpy(&word, SlotOf(home).data(), 4);
  EXPECT_EQ(word & 3, 0u);
  EXPECT_EQ(Get(keys[0]), ReplyBytes(kOk, kGet, 7, "again"));
  EXPECT_EQ(StateWord(ectx_, kDeletes), 3u);
}

TEST_F(KvsTest, NoFreeSlotWithinTheProbesIsFull) {
  Install(8, 16, 4, /*max_probe=*/2);
  const std::vector<std::string> keys = CollidingKeys(4, 3);
  EXPECT_EQ(Put(keys[0], "a")[0], kOk);
  EXPECT_EQ(Put(keys[1], "b")[0], kOk);
  EXPECT_EQ(Put(keys[2], "c"), ReplyBytes(kFull, kPut, 7));
  EXPECT_EQ(Get(keys[2])[0], kNotFound);
  // Replacing a key that is there still works in a full chain.
  EXPECT_EQ(Put(keys[1], "B")[0], kOk);
  EXPECT_EQ(Get(keys[1]), ReplyBytes(kOk, kGet, 7, "B"));
  EXPECT_EQ(StateWord(ectx_, kFullCount), 1u);

  // A tombstone is not free for another key.
  EXPECT_EQ(Delete(keys[0])[0], kOk);
  EXPECT_EQ(Put(keys[2], "c")[0], kFull);
}

TEST_F(KvsTest, EveryMalformedRequestIsBadRequestAndWritesNothing) {
  Install(4, 8, 4);
  const std::vector<uint8_t> before(RegionBytes().begin(), RegionBytes().end());
  std::vector<uint8_t> short_put = Request(kPut, "ab", "value", 5);
  short_put.pop_back();  // one value byte missing
  std::vector<uint8_t> get_with_value = Request(kGet, "ab", "", 5);
  get_with_value[2] = 1;
  const std::vector<std::vector<uint8_t>> bad = {
      Request(0, "ab", "", 5),
      Request(4, "ab", "", 5),
      Request(kGet, "", "", 5),
      Request(kPut, "", "v", 5),
      Request(kGet, "abcde", "", 5),        // key longer than key_max
      Request(kPut, "ab", "123456789", 5),  // value longer than value_max
      short_put,
      get_with_value,
      {kGet, 3, 0, 0, 5, 0, 0, 0, 'a'},  // key_len past the payload
  };
  for (size_t i = 0; i < bad.size(); ++i) {
    SCOPED_TRACE(i);
    std::vector<uint8_t> reply = Stream(bad[i]);
    ASSERT_EQ(reply.size(), 8u);
    EXPECT_EQ(reply[0], kBadRequest);
    EXPECT_EQ(reply[1], bad[i][0]);
    EXPECT_EQ(reply[4], 5);
  }
  // A request of several packets: its first packet is answered BAD_REQUEST.
  std::vector<uint8_t> put = Request(kPut, "ab", "v", 6);
  EXPECT_EQ(Stream(put, /*length=*/put.size() + 100),
            ReplyBytes(kBadRequest, kPut, 6));
  EXPECT_EQ(StateWord(ectx_, kBadRequests), bad.size() + 1);
  EXPECT_EQ(StateWord(ectx_, kPuts), 0u);
  EXPECT_EQ(std::vector<uint8_t>(RegionBytes().begin(), RegionBytes().end()),
            before);

  // Shorter than the 8-byte header: no request id to answer, dropped.
  FrameSpec spec;
  spec.payload = {kGet, 1, 0, 0, 5};
  std::vector<uint8_t> frame = Build(spec);
  TestPacket packet(frame, ClassifierLayers(frame));
  packet.view().SetMessage({.transport = MessageTransport::kDiadStream,
                            .source = kSource,
                            .length = 5});
  const size_t puts = ectx_.sink().puts().size();
  EXPECT_EQ(RunPayload(handler_, ectx_.context(), packet.view()),
            HandlerResult::kDrop);
  EXPECT_EQ(ectx_.sink().puts().size(), puts);
  EXPECT_EQ(StateWord(ectx_, kBadRequests), bad.size() + 2);
}

TEST_F(KvsTest, RegionHoldsTheDocumentedSlotLayout) {
  Install(5, 10, 4);  // slot: 8 + 5 + 10 = 23, rounded to 24 bytes
  ASSERT_EQ(RegionBytes().size(), 96u);
  ASSERT_EQ(Put("abc", "hello")[0], kOk);
  const size_t home = Fnv1a64("abc") % 4;
  for (size_t i = 0; i < Slots(); ++i) {
    if (i == home) continue;
    EXPECT_EQ(SlotOf(i)[0] | SlotOf(i)[1] | SlotOf(i)[2] | SlotOf(i)[3], 0)
        << "slot " << i << " is empty";
  }
  std::span<const uint8_t> slot = SlotOf(home);
  uint32_t word;
  uint16_t key_len, value_len;
  std::memcpy(&word, slot.data(), 4);
  std::memcpy(&key_len, slot.data() + 4, 2);
  std::memcpy(&value_len, slot.data() + 6, 2);
  EXPECT_EQ(word, 4u) << "generation 1, stable, live";
  EXPECT_EQ(key_len, 3);
  EXPECT_EQ(value_len, 5);
  EXPECT_EQ(std::string(slot.begin() + 8, slot.begin() + 13),
            std::string("abc\0\0", 5));
  EXPECT_EQ(std::string(slot.begin() + 13, slot.begin() + 18), "hello");

  ASSERT_EQ(Put("abc", "0123456789")[0], kOk);
  std::memcpy(&word, slot.data(), 4);
  std::memcpy(&value_len, slot.data() + 6, 2);
  EXPECT_EQ(word, 8u) << "generation 2";
  EXPECT_EQ(value_len, 10);
  EXPECT_EQ(std::string(slot.begin() + 13, slot.begin() + 23), "0123456789");

  ASSERT_EQ(Delete("abc")[0], kOk);
  std::memcpy(&word, slot.data(), 4);
  std::memcpy(&key_len, slot.data() + 4, 2);
  std::memcpy(&value_len, slot.data() + 6, 2);
  EXPECT_EQ(word, 14u) << "generation 3, tombstone";
  EXPECT_EQ(key_len, 3);
  EXPECT_EQ(value_len, 0);
}

// A host that fills a slot by the documented layout is read by GET.
TEST_F(KvsTest, GetReadsASlotTheHostWrote) {
  Install(5, 10, 4);
  const size_t home = Fnv1a64("key") % 4;
  uint8_t* slot = RegionBytes().data() + home * 24;
  const uint32_t word = 40;
  const uint16_t lengths[2] = {3, 4};
  std::memcpy(slot, &word, 4);
  std::memcpy(slot + 4, lengths, 4);
  std::memcpy(slot + 8, "key", 3);
  std::memcpy(slot + 13, "host", 4);
  EXPECT_EQ(Get("key"), ReplyBytes(kOk, kGet, 7, "host"));
  // A slot left odd (being written) answers BUSY after its polls.
  const uint32_t locked = 41;
  std::memcpy(slot, &locked, 4);
  EXPECT_EQ(Get("key"), ReplyBytes(kBusy, kGet, 7));
  EXPECT_EQ(StateWord(ectx_, kBusyCount), 1u);
}

// Over passthrough UDP the request frame comes back as the answer: exactly
// the frame a responder would build from scratch, checksums included.
TEST_F(KvsTest, UdpRequestsAreAnsweredInPlace) {
  Install(16, 64, 8);
  for (int variant = 0; variant < 3; ++variant) {
    const bool ipv6 = variant == 1;
    SCOPED_TRACE(variant == 0   ? "IPv4"
                 : variant == 1 ? "IPv6"
                                : "IPv4 without UDP checksum");
    auto run = [&](const std::vector<uint8_t>& request,
                   const std::vector<uint8_t>& reply) {
      FrameSpec spec;
      spec.ipv6 = ipv6;
      spec.udp_zero_checksum = variant == 2;
      spec.src_port = 40000;
      spec.dst_port = 7777;
      spec.payload = request;
      std::vector<uint8_t> frame = Build(spec);
      ASSERT_TRUE(ChecksumsValid(frame));
      TestPacket packet(frame, ClassifierLayers(frame), /*in_port=*/1);
      EXPECT_EQ(RunPayload(handler_, ectx_.context(), packet.view()),
                HandlerResult::kSuccess);
      EXPECT_EQ(packet.view().GetDisposition(), Disposition::kReply);
      FrameSpec answer = spec;
      answer.payload = reply;
      answer.pad_to = frame.size();
      EXPECT_EQ(Hex(packet.bytes()), Hex(Build(Reflected(answer))));
      EXPECT_TRUE(ChecksumsValid(packet.bytes()));
    };
    const std::string key = "key" + std::to_string(variant);
    run(Request(kPut, key, "the value", 11), ReplyBytes(kOk, kPut, 11));
    // A GET padded to the answer's size gets the value.
    run(Request(kGet, key, "", 12, 8 + 9),
        ReplyBytes(kOk, kGet, 12, "the value"));
    run(Request(kDelete, key, "", 13), ReplyBytes(kOk, kDelete, 13));
    run(Request(kGet, key, "", 14), ReplyBytes(kNotFound, kGet, 14));
  }
  EXPECT_TRUE(ectx_.sink().puts().empty());
}

TEST_F(KvsTest, UdpGetWithoutRoomSaysHowLongTheValueIs) {
  Install(16, 200, 8);
  ASSERT_EQ(Put("big", std::string(150, 'v'))[0], kOk);
  FrameSpec spec;
  spec.payload = Request(kGet, "big", "", 21);
  std::vector<uint8_t> frame = Build(spec);
  TestPacket packet(frame, ClassifierLayers(frame));
  EXPECT_EQ(RunPayload(handler_, ectx_.context(), packet.view()),
            HandlerResult::kSuccess);
  FrameSpec answer = Reflected(spec);
  answer.payload = ReplyBytes(kNoRoom, kGet, 21, "", 150);
  answer.pad_to = frame.size();
  EXPECT_EQ(Hex(packet.bytes()), Hex(Build(answer)));
  EXPECT_TRUE(ChecksumsValid(packet.bytes()));
  EXPECT_EQ(StateWord(ectx_, kNoRoomCount), 1u);
  EXPECT_EQ(StateWord(ectx_, kHits), 0u);
}

TEST_F(KvsTest, NonUdpPassthroughIsForwardedUntouched) {
  Install(16, 64, 8);
  FrameSpec spec;
  spec.l4 = L4::kTcp;
  spec.payload = Request(kPut, "k", "v", 1);
  std::vector<uint8_t> frame = Build(spec);
  TestPacket packet(frame, ClassifierLayers(frame));
  EXPECT_EQ(RunPayload(handler_, ectx_.context(), packet.view()),
            HandlerResult::kSuccess);
  EXPECT_EQ(packet.view().GetDisposition(), Disposition::kForward);
  EXPECT_EQ(packet.bytes(), frame);
  EXPECT_EQ(StateWord(ectx_, kNotUdp), 1u);
  EXPECT_EQ(StateWord(ectx_, kPuts), 0u);
}

TEST_F(KvsTest, GroupDestinationIsForwardedUntouched) {
  Install(16, 64, 8);
  FrameSpec spec;
  spec.dst_mac = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  spec.payload = Request(kPut, "k", "v", 1);
  std::vector<uint8_t> frame = Build(spec);
  TestPacket packet(frame, ClassifierLayers(frame));
  EXPECT_EQ(RunPayload(handler_, ectx_.context(), packet.view()),
            HandlerResult::kSuccess);
  EXPECT_EQ(packet.view().GetDisposition(), Disposition::kForward);
  EXPECT_EQ(packet.bytes(), frame);
  EXPECT_EQ(StateWord(ectx_, kNotUdp), 1u);
}

// The packets after the first of a request of several are consumed without
// an answer (the first was answered BAD_REQUEST).
TEST_F(KvsTest, LaterPacketsOfALongRequestAreConsumedQuietly) {
  Install(16, 64, 8);
  FrameSpec spec;
  spec.payload = Request(kPut, "k", "v", 1);
  std::vector<uint8_t> frame = Build(spec);
  TestPacket packet(frame, ClassifierLayers(frame));
  packet.view().SetMessage({.transport = MessageTransport::kRoceSend,
                            .source = kSource,
                            .offset = 1000,
                            .length = 1000 + spec.payload.size()});
  EXPECT_EQ(RunPayload(handler_, ectx_.context(), packet.view()),
            HandlerResult::kSuccess);
  EXPECT_EQ(packet.view().GetDisposition(), Disposition::kConsume);
  EXPECT_TRUE(ectx_.sink().puts().empty());
  EXPECT_EQ(StateWord(ectx_, kPuts), 0u);
  EXPECT_EQ(StateWord(ectx_, kBadRequests), 0u);
}

// A RoCE SEND of one packet (its length known on its last packet) is a
// request like a DiAD stream message, answered by a SEND on its QP: a put
// without a peer name and without a reply stream.
TEST_F(KvsTest, RoceSendRequestsAreCarriedOut) {
  Install(16, 64, 8);
  const std::vector<uint8_t> request = Request(kPut, "rdma", "value", 4);
  FrameSpec spec;
  spec.payload = request;
  std::vector<uint8_t> frame = Build(spec);
  TestPacket packet(frame, ClassifierLayers(frame));
  packet.view().SetMessage({.transport = MessageTransport::kRoceSend,
                            .source = 0x1234,
                            .length = request.size()});
  EXPECT_EQ(RunPayload(handler_, ectx_.context(), packet.view()),
            HandlerResult::kSuccess);
  EXPECT_EQ(packet.view().GetDisposition(), Disposition::kConsume);
  ASSERT_EQ(ectx_.sink().puts().size(), 1u);
  EXPECT_EQ(ectx_.sink().puts()[0].peer, "");
  EXPECT_EQ(ectx_.sink().puts()[0].key, 0u);
  EXPECT_EQ(ectx_.sink().puts()[0].data, ReplyBytes(kOk, kPut, 4));
  EXPECT_EQ(Get("rdma"), ReplyBytes(kOk, kGet, 7, "value"));
}

TEST_F(KvsTest, RefusedAndSkippedAnswersAreCounted) {
  Install(16, 64, 8);
  ectx_.sink().set_fail_puts(true);
  EXPECT_TRUE(Put("k", "v").empty());
  EXPECT_EQ(ectx_.sink().refused_puts(), 1u) << "tried once, never again";
  EXPECT_EQ(StateWord(ectx_, kRepliesRefused), 1u);
  ectx_.sink().set_fail_puts(false);
  EXPECT_EQ(Get("k"), ReplyBytes(kOk, kGet, 7, "v")) << "the PUT was done";

  // reply_stream 0: DiAD requests are carried out, not answered.
  HandlerInstance quiet = MakeHandler("kvs", Params(16, 64, 16, 0));
  std::swap(handler_, quiet);
  EXPECT_TRUE(Put("q", "v").empty());
  EXPECT_EQ(StateWord(ectx_, kUnanswered), 1u);
  std::swap(handler_, quiet);
  EXPECT_EQ(Get("q"), ReplyBytes(kOk, kGet, 7, "v"));
}

TEST_F(KvsTest, UnusableRegionFails) {
  handler_ = MakeHandler("kvs", Params(16, 64));
  FakeEctx none(kStateSize);
  FrameSpec spec;
  spec.payload = Request(kGet, "k", "", 1);
  std::vector<uint8_t> frame = Build(spec);
  TestPacket packet(frame, ClassifierLayers(frame));
  EXPECT_EQ(RunPayload(handler_, none.context(), packet.view()),
            HandlerResult::kFail);
  std::vector<uint64_t> words(64);
  FakeEctx read_only(kStateSize);
  read_only.AddRegion(1, {reinterpret_cast<uint8_t*>(words.data()), 512},
                      /*readable=*/true, /*writable=*/false);
  EXPECT_EQ(RunPayload(handler_, read_only.context(), packet.view()),
            HandlerResult::kFail);
  FakeEctx too_small(kStateSize);
  too_small.AddRegion(1, {reinterpret_cast<uint8_t*>(words.data()), 80});
  EXPECT_EQ(RunPayload(handler_, too_small.context(), packet.view()),
            HandlerResult::kFail);
  EXPECT_EQ(StateWord(none, kBadRegion), 1u);
  EXPECT_EQ(StateWord(read_only, kBadRegion), 1u);
  EXPECT_EQ(StateWord(too_small, kBadRegion), 1u);
}

TEST(KvsParamsTest, BadParametersSayWhatToWrite) {
  const BadParams cases[] = {
      {{{"value_max", "64"}}, "key_max"},
      {{{"key_max", "0"}, {"value_max", "64"}}, "key_max"},
      {{{"key_max", "256"}, {"value_max", "64"}}, "1..255"},
      {{{"key_max", "16"}, {"value_max", "4097"}}, "1..4096"},
      {{{"key_max", "16"}, {"value_max", "64"}, {"max_probe", "0"}},
       "max_probe"},
  };
  ExpectBadParamsSayWhatToFix("kvs", cases);
}

// Several HPUs at once on a shared region: writers put whole values of
// one repeated byte to a shared key and to their own keys while readers
// GET the shared key; every value read back is one that was written whole
// (its bytes all equal, its length the one that byte implies), never a mix
// of two writes, and each key ends up in exactly one slot.
TEST_F(KvsTest, ConcurrentHpusNeverSeeTornValues) {
  Install(16, 1024, 64);
  constexpr int kWriters = 2;
  constexpr int kReaders = 2;
  constexpr int kRounds = 20000;
  constexpr int kFills = 8;
  auto value_for = [](int fill) {
    return std::string(64 + 128 * fill, static_cast<char>('A' + fill));
  };
  // Packets built once and run again and again (a stream request is only
  // read, never rewritten).
  auto packet_for = [](const std::vector<uint8_t>& payload) {
    FrameSpec spec;
    spec.payload = payload;
    auto packet = std::make_unique<TestPacket>(Build(spec));
    packet->view().SetMessage({.transport = MessageTransport::kDiadStream,
                               .source = kSource,
                               .length = payload.size()});
    return packet;
  };
  std::vector<std::unique_ptr<FakeEctx>> ectxs;
  for (int t = 0; t < kWriters + kReaders; ++t) {
    ectxs.push_back(std::make_unique<FakeEctx>(kStateSize, t));
    ectxs.back()->AddRegion(1, RegionBytes());
  }
  std::atomic<int> torn{0};
  std::atomic<int> ok_reads{0};
  std::atomic<int> wrong_own{0};
  std::atomic<int> writers_done{0};
  // The answer to `packet`, or empty.
  auto run = [&](FakeEctx& ectx, TestPacket& packet) {
    ectx.sink().Clear();
    RunPayload(handler_, ectx.context(), packet.view());
    return ectx.sink().puts().empty() ? std::vector<uint8_t>{}
                                      : ectx.sink().puts().back().data;
  };
  auto intact = [&](const std::vector<uint8_t>& reply) {
    if (reply.size() < 8 || reply[0] != kOk) return true;
    const std::string value(reply.begin() + 8, reply.end());
    const int fill = value.empty() ? -1 : value[0] - 'A';
    return fill >= 0 && fill < kFills && value == value_for(fill);
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kWriters; ++t) {
    threads.emplace_back([&, t] {
      FakeEctx& ectx = *ectxs[t];
      const std::string own = "own" + std::to_string(t);
      std::vector<std::unique_ptr<TestPacket>> shared_puts, own_puts;
      for (int f = 0; f < kFills; ++f) {
        shared_puts.push_back(
            packet_for(Request(kPut, "shared", value_for(f), f)));
        own_puts.push_back(packet_for(Request(kPut, own, value_for(f), f)));
      }
      auto own_get = packet_for(Request(kGet, own, "", 0));
      for (int i = 0; i < kRounds; ++i) {
        const int fill = (t * 3 + i) % kFills;
        run(ectx, *shared_puts[fill]);
        if (i % 16 != 0) continue;
        const std::vector<uint8_t> put = run(ectx, *own_puts[fill]);
        const std::vector<uint8_t> reply = run(ectx, *own_get);
        // Only this thread writes its own key: it reads what it put (or
        // BUSY, when a slot on its chain stayed locked too long).
        if (!put.empty() && put[0] == kOk && !reply.empty() &&
            reply[0] == kOk &&
            std::string(reply.begin() + 8, reply.end()) != value_for(fill)) {
          ++wrong_own;
        }
      }
      ++writers_done;
    });
  }
  for (int t = kWriters; t < kWriters + kReaders; ++t) {
    threads.emplace_back([&, t] {
      FakeEctx& ectx = *ectxs[t];
      auto get = packet_for(Request(kGet, "shared", "", 0));
      // Reads while the writers run, and once after: on a loaded machine a
      // reader may not be scheduled before the writers are done, and the
      // last read must still find the key whole.
      bool writing = true;
      while (writing) {
        writing = writers_done.load() < kWriters;
        const std::vector<uint8_t> reply = run(ectx, *get);
        if (!intact(reply)) ++torn;
        if (!reply.empty() && reply[0] == kOk) ++ok_reads;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(torn.load(), 0);
  EXPECT_EQ(wrong_own.load(), 0);
  EXPECT_GT(ok_reads.load(), 0);
  int live = 0;
  for (size_t i = 0; i < Slots(); ++i) {
    uint32_t word;
    std::memcpy(&word, SlotOf(i).data(), 4);
    EXPECT_EQ(word & 1, 0u);
    if (word != 0) ++live;
  }
  EXPECT_EQ(live, kWriters + 1);
}

}  // namespace
}  // namespace spinnic::handler_test
