// stream_check: numbered messages split into DiAD-shaped packets (UDP, a
// 48-byte header with msg_length / msg_offset, then the payload), in order,
// with a wrong byte, a missing packet, a duplicate, a gap, on two HPUs, and
// packets that are not DiAD; the documented state words after each.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "handlers/api/testing.h"
#include "tests/unit/handlers/handler_test_util.h"

namespace spinnic::handler_test {
namespace {

constexpr uint32_t kStateSize = 64 + 64 * 16;
constexpr uint32_t kMaxPayload = 1404;

enum Word { kExpected, kMessages, kOk, kBad, kOutOfOrder, kBytes, kFirstError, kUnchecked };

// The documented content of message `number`: the number (little-endian),
// then byte k = (number + k) & 0xff.
std::vector<uint8_t> Message(uint64_t number, uint32_t size) {
  std::vector<uint8_t> bytes(size);
  for (uint32_t k = 0; k < size; ++k) {
    bytes[k] = k < 8 ? static_cast<uint8_t>(number >> (8 * k))
                     : static_cast<uint8_t>((number + k) & 0xff);
  }
  return bytes;
}

void Be32(std::vector<uint8_t>& bytes, size_t at, uint32_t value) {
  bytes[at] = static_cast<uint8_t>(value >> 24);
  bytes[at + 1] = static_cast<uint8_t>(value >> 16);
  bytes[at + 2] = static_cast<uint8_t>(value >> 8);
  bytes[at + 3] = static_cast<uint8_t>(value);
}

struct Packet {
  std::vector<uint8_t> frame;
  PacketLayers layers;
};

// One packet of a message as the DiAD engine hands it to a handler: the
// payload offset points past the DiAD header.
Packet DiadPacket(const std::vector<uint8_t>& message, uint32_t offset,
                  uint32_t length) {
  std::vector<uint8_t> payload(48, 0);
  Be32(payload, 36, static_cast<uint32_t>(message.size()));
  Be32(payload, 40, offset);
  payload.insert(payload.end(), message.begin() + offset,
                 message.begin() + offset + length);
  FrameSpec spec;
  spec.ipv6 = true;
  spec.src_port = 49152;
  spec.dst_port = 4792;
  spec.payload = payload;
  Packet p{Build(spec), {}};
  p.layers = ClassifierLayers(p.frame);
  p.layers.payload_offset = static_cast<uint16_t>(p.layers.payload_offset + 48);
  return p;
}

std::vector<Packet> Split(const std::vector<uint8_t>& message) {
  std::vector<Packet> packets;
  for (uint32_t at = 0; at < message.size() || at == 0; at += kMaxPayload) {
    uint32_t n = std::min<uint32_t>(kMaxPayload, message.size() - at);
    packets.push_back(DiadPacket(message, at, n));
    if (n == 0) break;
  }
  return packets;
}

// Runs the handler over `packets` as one message, the way the engine does.
void Deliver(const HandlerInstance& handler, FakeEctx& ectx,
             std::vector<Packet>& packets, uint64_t dropped_bytes = 0) {
  for (size_t i = 0; i < packets.size(); ++i) {
    TestPacket packet(packets[i].frame, packets[i].layers);
    if (i == 0) {
      EXPECT_EQ(RunHeader(handler, ectx.context(), packet.view()),
                HandlerResult::kProcessData);
    }
    EXPECT_EQ(RunPayload(handler, ectx.context(), packet.view()),
              HandlerResult::kSuccess);
    EXPECT_EQ(packet.view().GetDisposition(), Disposition::kForward);
    EXPECT_EQ(packet.bytes(), packets[i].frame) << "the packet is not changed";
  }
  EXPECT_EQ(RunCompletion(handler, ectx.context(), dropped_bytes),
            HandlerResult::kSuccess);
}

void Send(const HandlerInstance& handler, FakeEctx& ectx, uint64_t number,
          uint32_t size) {
  std::vector<Packet> packets = Split(Message(number, size));
  Deliver(handler, ectx, packets);
}

TEST(StreamCheckTest, CountsInOrderIntactMessagesOfMixedSizes) {
  HandlerInstance handler = MakeHandler("stream_check");
  FakeEctx ectx(kStateSize);
  const uint32_t sizes[] = {8, 9, 100, 1404, 1405, 3000, 9000, 64};
  uint64_t bytes = 0;
  for (uint64_t i = 0; i < 300; ++i) {
    uint32_t size = sizes[i % 8];
    Send(handler, ectx, i, size);
    bytes += size;
  }
  EXPECT_EQ(StateWord(ectx, kExpected), 300u);
  EXPECT_EQ(StateWord(ectx, kMessages), 300u);
  EXPECT_EQ(StateWord(ectx, kOk), 300u);
  EXPECT_EQ(StateWord(ectx, kBad), 0u);
  EXPECT_EQ(StateWord(ectx, kOutOfOrder), 0u);
  EXPECT_EQ(StateWord(ectx, kBytes), bytes);
  EXPECT_EQ(StateWord(ectx, kFirstError), 0u);
  EXPECT_EQ(StateWord(ectx, kUnchecked), 0u);
}

TEST(StreamCheckTest, AWrongByteAnywhereMakesTheMessageBad) {
  for (uint32_t at : {0u, 7u, 8u, 1403u, 1404u, 2999u}) {
    SCOPED_TRACE(at);
    HandlerInstance handler = MakeHandler("stream_check");
    FakeEctx ectx(kStateSize);
    Send(handler, ectx, 0, 3000);
    std::vector<uint8_t> message = Message(1, 3000);
    message[at] ^= 0x10;
    std::vector<Packet> packets = Split(message);
    Deliver(handler, ectx, packets);
    Send(handler, ectx, 2, 3000);
    if (at >= 8) {
      EXPECT_EQ(StateWord(ectx, kOk), 2u);
      EXPECT_EQ(StateWord(ectx, kBad), 1u);
      EXPECT_EQ(StateWord(ectx, kOutOfOrder), 0u);
      EXPECT_EQ(StateWord(ectx, kFirstError), 2u) << "names message 1";
    } else {
      // A wrong byte in the number: message 1 arrives under another number,
      // out of order (and 2 after it).
      const uint64_t wrong = 1 ^ (uint64_t{0x10} << (8 * at));
      EXPECT_EQ(StateWord(ectx, kOutOfOrder), 2u);
      EXPECT_EQ(StateWord(ectx, kFirstError), wrong + 1);
    }
  }
}

TEST(StreamCheckTest, AMissingOrRepeatedPacketMakesTheMessageBad) {
  HandlerInstance handler = MakeHandler("stream_check");
  FakeEctx ectx(kStateSize);
  std::vector<Packet> packets = Split(Message(0, 3000));
  ASSERT_EQ(packets.size(), 3u);
  std::vector<Packet> missing = {packets[0], packets[2]};
  Deliver(handler, ectx, missing);
  std::vector<Packet> again = Split(Message(1, 3000));
  std::vector<Packet> repeated = {again[0], again[1], again[1], again[2]};
  Deliver(handler, ectx, repeated);
  std::vector<Packet> dropped = Split(Message(2, 100));
  Deliver(handler, ectx, dropped, /*dropped_bytes=*/100);
  EXPECT_EQ(StateWord(ectx, kOk), 0u);
  EXPECT_EQ(StateWord(ectx, kBad), 3u);
  EXPECT_EQ(StateWord(ectx, kOutOfOrder), 0u);
  EXPECT_EQ(StateWord(ectx, kFirstError), 1u);
}

TEST(StreamCheckTest, DuplicatesGapsAndReorderingAreOutOfOrder) {
  HandlerInstance handler = MakeHandler("stream_check");
  FakeEctx ectx(kStateSize);
  for (uint64_t n : {0, 1, 1, 2, 4, 3, 5}) Send(handler, ectx, n, 50);
  // 1 again (duplicate), 4 (gap after 2), 3 (behind 4), 5 (after 3).
  EXPECT_EQ(StateWord(ectx, kOutOfOrder), 4u);
  EXPECT_EQ(StateWord(ectx, kOk), 7u) << "each message itself is intact";
  EXPECT_EQ(StateWord(ectx, kFirstError), 2u);
  EXPECT_EQ(StateWord(ectx, kExpected), 6u);
}

TEST(StreamCheckTest, InitialStateSetsTheFirstNumberExpected) {
  HandlerInstance handler = MakeHandler("stream_check");
  FakeEctx ectx(kStateSize);
  const uint64_t first = 1000;
  std::memcpy(ectx.state().data(), &first, 8);
  Send(handler, ectx, 1000, 20);
  Send(handler, ectx, 1001, 20);
  EXPECT_EQ(StateWord(ectx, kOutOfOrder), 0u);
  EXPECT_EQ(StateWord(ectx, kOk), 2u);
}

TEST(StreamCheckTest, TooShortForANumberIsBad) {
  HandlerInstance handler = MakeHandler("stream_check");
  FakeEctx ectx(kStateSize);
  std::vector<Packet> packets = {DiadPacket({1, 2, 3}, 0, 3)};
  Deliver(handler, ectx, packets);
  EXPECT_EQ(StateWord(ectx, kBad), 1u);
  EXPECT_EQ(StateWord(ectx, kOk), 0u);
}

TEST(StreamCheckTest, EachHpuKeepsItsOwnMessageInProgress) {
  HandlerInstance handler = MakeHandler("stream_check");
  FakeEctx ectx(kStateSize);
  std::vector<Packet> a = Split(Message(0, 3000));
  std::vector<Packet> b = Split(Message(1, 3000));
  // Packets of two messages interleaved on HPUs 0 and 1.
  for (size_t i = 0; i < a.size(); ++i) {
    for (uint32_t hpu : {0u, 1u}) {
      ectx.set_lcore_index(hpu);
      Packet& p = hpu == 0 ? a[i] : b[i];
      TestPacket packet(p.frame, p.layers);
      if (i == 0) RunHeader(handler, ectx.context(), packet.view());
      RunPayload(handler, ectx.context(), packet.view());
    }
  }
  for (uint32_t hpu : {0u, 1u}) {
    ectx.set_lcore_index(hpu);
    RunCompletion(handler, ectx.context());
  }
  EXPECT_EQ(StateWord(ectx, kOk), 2u);
  EXPECT_EQ(StateWord(ectx, kBad), 0u);
}

TEST(StreamCheckTest, PacketsThatAreNotDiadAreUncheckedAndPass) {
  HandlerInstance handler = MakeHandler("stream_check");
  FakeEctx ectx(kStateSize);
  FrameSpec spec;
  spec.payload = Message(0, 100);
  std::vector<uint8_t> frame = Build(spec);
  TestPacket packet(frame, ClassifierLayers(frame));
  EXPECT_EQ(RunPayload(handler, ectx.context(), packet.view()),
            HandlerResult::kSuccess);
  EXPECT_EQ(packet.view().GetDisposition(), Disposition::kForward);
  EXPECT_EQ(StateWord(ectx, kUnchecked), 1u);
  EXPECT_EQ(packet.bytes(), frame);
}

TEST(StreamCheckTest, HpusBeyondTheSlotsAreCountedNotWritten) {
  HandlerInstance handler = MakeHandler("stream_check");
  FakeEctx ectx(kStateSize, /*lcore_index=*/16);
  Send(handler, ectx, 0, 100);
  EXPECT_EQ(StateWord(ectx, kUnchecked), 1u);
  EXPECT_EQ(StateWord(ectx, kBad), 1u);
  EXPECT_EQ(StateWord(ectx, kOk), 0u);
}

}  // namespace
}  // namespace spinnic::handler_test
