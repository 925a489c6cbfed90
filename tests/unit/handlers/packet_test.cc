// PacketView with the layers of the dataplane's classifier (ParseFrame):
// Payload() ends where the IP datagram ends (PacketLayers::l3_end), so the
// Ethernet padding of a short frame is never payload, while Bytes() and
// Length() still cover the whole frame.
#include "handlers/api/packet.h"

#include <cstdint>
#include <span>
#include <vector>

#include "dataplane/classifier.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "handlers/api/testing.h"
#include "tests/unit/handlers/frames.h"
#include "tests/unit/handlers/handler_test_util.h"

namespace spinnic::handler_test {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr uint8_t kPadding = 0xee;

// `spec` built and padded to `frame_length` with kPadding bytes (not zeros,
// so that padding read as payload would show), then parsed by the
// classifier; the packet has the classifier's layers.
std::vector<uint8_t> PaddedFrame(const FrameSpec& spec, size_t frame_length,
                                 PacketLayers* layers) {
  std::vector<uint8_t> frame = Build(spec);
  const size_t datagram_end = frame.size();
  frame.resize(frame_length, kPadding);
  ParsedFrame parsed;
  ParseFrame(frame.data(), static_cast<uint32_t>(frame.size()), &parsed);
  EXPECT_EQ(parsed.frame_class, FrameClass::kPassthrough)
      << DropReasonName(parsed.drop_reason);
  EXPECT_EQ(parsed.layers.l3_end, datagram_end);
  *layers = parsed.layers;
  return frame;
}

// Pads `spec`'s frame (payload "ab") to `frame_length` and checks that
// Payload() is exactly the two bytes at `payload_at`, while Bytes() and
// Length() still cover the whole frame.
void ExpectPayloadExcludesPadding(FrameSpec spec, size_t frame_length,
                                  uint32_t payload_at) {
  spec.payload = Text("ab");
  PacketLayers layers;
  std::vector<uint8_t> frame = PaddedFrame(spec, frame_length, &layers);
  ASSERT_EQ(frame.size(), frame_length);
  EXPECT_EQ(layers.payload_offset, payload_at);
  EXPECT_EQ(layers.l3_end, payload_at + 2);
  TestPacket packet(frame, layers);
  std::span<uint8_t> payload = packet.view().Payload();
  EXPECT_EQ(payload.data(), packet.view().Bytes().data() + payload_at);
  EXPECT_THAT(payload, ElementsAre('a', 'b'));
  EXPECT_EQ(packet.view().Length(), frame_length);
  EXPECT_EQ(packet.view().Bytes().size(), frame_length);
}

// 14 + 20 + 8 + 2 = 44 bytes, padded to the Ethernet minimum of 60.
TEST(PacketViewPayloadTest, ExcludesEthernetPaddingIpv4) {
  FrameSpec spec;
  ExpectPayloadExcludesPadding(spec, 60, 14 + 20 + 8);
}

// IPv6 with UDP takes at least 62 bytes, so the minimum never pads it, but
// bytes after the datagram (padding added before a VLAN tag was stripped,
// say) are left out all the same.
TEST(PacketViewPayloadTest, ExcludesEthernetPaddingIpv6) {
  FrameSpec spec;
  spec.ipv6 = true;
  ExpectPayloadExcludesPadding(spec, 68, 14 + 40 + 8);
}

TEST(PacketViewPayloadTest, ExcludesPaddingBehindVlanTagsAndTcp) {
  FrameSpec tagged;
  tagged.vlan_tcis = {100};
  tagged.payload = Text("x");
  FrameSpec qinq_tcp;
  qinq_tcp.vlan_tcis = {10, 20};
  qinq_tcp.l4 = L4::kTcp;
  qinq_tcp.payload = Text("x");
  FrameSpec icmp6;
  icmp6.ipv6 = true;
  icmp6.l4 = L4::kIcmp;
  icmp6.icmp_type = 128;
  icmp6.payload = Text("x");
  for (const FrameSpec* spec : {&tagged, &qinq_tcp, &icmp6}) {
    PacketLayers layers;
    std::vector<uint8_t> frame = PaddedFrame(*spec, 96, &layers);
    TestPacket packet(frame, layers);
    EXPECT_THAT(packet.view().Payload(), ElementsAre('x')) << Hex(frame);
  }
}

// A datagram without payload on a padded frame: all that follows the UDP
// header is padding, so the payload is empty.
TEST(PacketViewPayloadTest, PaddingAloneIsNoPayload) {
  for (bool ipv6 : {false, true}) {
    FrameSpec spec;
    spec.ipv6 = ipv6;
    PacketLayers layers;
    std::vector<uint8_t> frame = PaddedFrame(spec, 64, &layers);
    TestPacket packet(frame, layers);
    EXPECT_THAT(packet.view().Payload(), IsEmpty()) << "ipv6 " << ipv6;
  }
}

// Without padding the payload runs to the end of the frame, as before.
TEST(PacketViewPayloadTest, UnpaddedPayloadRunsToTheFrameEnd) {
  FrameSpec spec;
  spec.payload = Text("the whole rest");
  std::vector<uint8_t> frame = Build(spec);
  TestPacket packet(frame, ClassifierLayers(frame));
  EXPECT_EQ(packet.view().Payload().size(), spec.payload.size());
  EXPECT_EQ(packet.view().Payload().data() + spec.payload.size(),
            packet.view().Bytes().data() + frame.size());
}

// Writes through Payload() stay inside the datagram.
TEST(PacketViewPayloadTest, WritesThroughThePayloadLeaveThePaddingAlone) {
  FrameSpec spec;
  spec.payload = Text("ab");
  PacketLayers layers;
  std::vector<uint8_t> frame = PaddedFrame(spec, 60, &layers);
  TestPacket packet(frame, layers);
  for (uint8_t& byte : packet.view().Payload()) byte = 'z';
  std::vector<uint8_t> expected = frame;
  expected[14 + 20 + 8] = 'z';
  expected[14 + 20 + 8 + 1] = 'z';
  EXPECT_EQ(Hex(packet.bytes()), Hex(expected));
}

// A packet built without a MessageInfo is a passthrough message of one packet:
// it starts at offset 0 and is as long as its payload (padding excluded).
TEST(PacketViewMessageTest, DefaultIsASinglePacketPassthroughMessage) {
  FrameSpec spec;
  spec.payload = Text("seven b");
  PacketLayers layers;
  std::vector<uint8_t> frame = PaddedFrame(spec, 64, &layers);
  TestPacket packet(frame, layers);
  const MessageInfo& message = packet.view().Message();
  EXPECT_EQ(message.transport, MessageTransport::kPassthrough);
  EXPECT_EQ(message.offset, 0u);
  EXPECT_EQ(message.length, 7u);
  EXPECT_EQ(message.address, 0u);
  EXPECT_EQ(message.source, 0u);

  // No L4 header: no payload, so an empty message.
  FrameSpec raw;
  raw.l4 = L4::kNone;
  std::vector<uint8_t> raw_frame = Build(raw);
  TestPacket raw_packet(raw_frame, ClassifierLayers(raw_frame));
  EXPECT_EQ(raw_packet.view().Message().length, 0u);
}

// A transport's MessageInfo is kept as given, and SetMessage replaces it.
TEST(PacketViewMessageTest, TransportMessageIsKeptAndCanBeReplaced) {
  FrameSpec spec;
  spec.payload = Text("xy");
  std::vector<uint8_t> frame = Build(spec);
  const MessageInfo write{.transport = MessageTransport::kDiadWrite,
                          .source = 3,
                          .offset = 1398,
                          .length = 4000,
                          .address = 0x10000576};
  const PacketLayers layers = ClassifierLayers(frame);
  PacketView view(frame.data(), static_cast<uint32_t>(frame.size()), layers, 0,
                  write);
  EXPECT_EQ(view.Message().transport, MessageTransport::kDiadWrite);
  EXPECT_EQ(view.Message().source, 3u);
  EXPECT_EQ(view.Message().offset, 1398u);
  EXPECT_EQ(view.Message().length, 4000u);
  EXPECT_EQ(view.Message().address, 0x10000576u);
  view.SetMessage({.transport = MessageTransport::kRoceSend, .offset = 1024});
  EXPECT_EQ(view.Message().transport, MessageTransport::kRoceSend);
  EXPECT_EQ(view.Message().offset, 1024u);
  EXPECT_EQ(view.Message().length, 0u);
}

}  // namespace
}  // namespace spinnic::handler_test
