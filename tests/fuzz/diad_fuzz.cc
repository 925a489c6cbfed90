// Fuzz target for the DiAD wire parser (dataplane/diad/wire.h): the input is
// one received frame. ParseFrame runs with the IPv6/UDP offsets the
// classifier finds (when it finds IPv6 and UDP) and with the fixed offsets
// 14/54 of an untagged frame. Besides "never reads outside the frame"
// (ASan), every accepted frame must satisfy:
//   - payload_offset = UDP offset + 8 + 48 and payload_offset +
//     payload_length <= length;
//   - StoreHeader of the parsed header gives back the frame's 48 header
//     bytes, and LoadHeader of those the same header;
//   - BuildFrame from the parsed header, addresses, port and payload gives
//     a frame that parses to the same header and whose UDP datagram is the
//     received one byte for byte.
// A SACK (an ACK with kFlagSack, SELECTIVE recovery) must also have a
// bitmap of 1..kMaxSackBytes described by msg_length, and its bitmap goes
// through the sender's checks (SendWindow::CheckSack, OnSack) against a
// window whose size comes from the frame: a SACK that passes them marks
// and resends only packets in flight, nothing SACKed is resent, and the
// final cumulative ack releases every packet exactly once.
// An ECN echo (kFlagEcnEcho, congestion control) is only ever on an ACK, and
// the rebuilt frame carries the received frame's ECN codepoint.
// Seeds: tests/fuzz/corpus/diad/ (tests/fuzz/gen_corpus.py).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "dataplane/classifier.h"
#include "dataplane/diad/channel.h"
#include "dataplane/diad/wire.h"

namespace spinnic::diad {
namespace {

#define FUZZ_CHECK(cond)                                                    \
  do {                                                                      \
    if (!(cond)) {                                                          \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
                   #cond);                                                  \
      std::abort();                                                         \
    }                                                                       \
  } while (0)

bool SameHeader(const Header& a, const Header& b) {
  return a.type == b.type && a.flags == b.flags && a.channel == b.channel &&
         a.src_epoch == b.src_epoch && a.dst_epoch == b.dst_epoch &&
         a.seq == b.seq && a.ack == b.ack && a.txn == b.txn && a.key == b.key &&
         a.address == b.address && a.msg_length == b.msg_length &&
         a.msg_offset == b.msg_offset && a.payload_length == b.payload_length &&
         a.status == b.status;
}

// The sender's side of a parsed SACK. SendWindow is header-only logic
// (channel_impl.h) but for DownAfterNs, from channel.cc.
void CheckSackAgainstWindow(const Header& h, const uint8_t* bitmap) {
  ChannelConfig config;
  config.window_packets = 1024;
  config.window_bytes = UINT64_MAX;
  SendWindow<int> window(config);
  // Up to a window in flight: how many from the frame's seq.
  const int sent = static_cast<int>(h.seq % 1025);
  for (int i = 0; i < sent; ++i) window.Push(i, 1, 0, false, 0);
  int released = 0;
  auto release = [&](int handle, uint32_t, bool) {
    FUZZ_CHECK(handle == released);  // in order, each once
    ++released;
  };
  if (window.OnAck(h.ack, 1, release) ==
      SendWindow<int>::AckVerdict::kInvalid) {
    return;
  }
  const std::span<const uint8_t> bits(bitmap, h.payload_length);
  if (window.CheckSack(h.ack, bits) != SackVerdict::kOk) return;
  FUZZ_CHECK((bitmap[0] & 0x80) == 0);
  const uint32_t resent = window.OnSack(
      h.ack, bits, (h.flags & kFlagProbeReply) != 0, h.txn, 2, [&](int handle) {
        const uint32_t seq = static_cast<uint32_t>(handle);
        FUZZ_CHECK(SeqDiff(seq, window.base()) >= 0);
        FUZZ_CHECK(SeqDiff(seq, window.next_seq()) < 0);
        FUZZ_CHECK(!window.sacked(seq));
      });
  FUZZ_CHECK(resent <= window.in_flight_packets());
  window.OnAck(window.next_seq(), 3, release);
  FUZZ_CHECK(released == sent);
  FUZZ_CHECK(window.in_flight_packets() == 0);
}

void Check(const uint8_t* data, uint32_t size, uint32_t ip, uint32_t udp) {
  Header h;
  uint32_t payload_offset = 0;
  const ParseError e = ParseFrame(data, size, ip, udp, &h, &payload_offset);
  FUZZ_CHECK(e < ParseError::kCount);
  if (e != ParseError::kNone) return;

  FUZZ_CHECK(payload_offset == udp + kUdpBytes + kHeaderBytes);
  FUZZ_CHECK(uint64_t{payload_offset} + h.payload_length <= size);
  const bool sack = (h.flags & kFlagSack) != 0;
  FUZZ_CHECK(IsSequenced(h.type) || h.payload_length == 0 || sack);
  if (sack) {
    FUZZ_CHECK(h.type == PacketType::kAck);
    FUZZ_CHECK(h.payload_length >= 1 && h.payload_length <= kMaxSackBytes);
    FUZZ_CHECK(h.msg_length == h.payload_length && h.msg_offset == 0);
    CheckSackAgainstWindow(h, data + payload_offset);
  }
  FUZZ_CHECK(h.channel < kMaxChannels);
  if ((h.flags & kFlagEcnEcho) != 0) FUZZ_CHECK(h.type == PacketType::kAck);

  uint8_t bytes[kHeaderBytes];
  StoreHeader(h, bytes);
  FUZZ_CHECK(std::memcmp(bytes, data + udp + kUdpBytes, kHeaderBytes) == 0);
  Header back;
  LoadHeader(bytes, &back);
  FUZZ_CHECK(SameHeader(back, h));

  Endpoint src, dst;
  std::memcpy(dst.mac.data(), data, 6);
  std::memcpy(src.mac.data(), data + 6, 6);
  std::memcpy(src.ip.data(), data + ip + 8, 16);
  std::memcpy(dst.ip.data(), data + ip + 24, 16);
  src.ecn = static_cast<uint8_t>((data[ip + 1] >> 4) & 3);
  const uint16_t port =
      static_cast<uint16_t>(data[udp + 2] << 8 | data[udp + 3]);
  std::vector<uint8_t> rebuilt(kFrameOverhead + h.payload_length);
  const uint32_t n = BuildFrame(
      src, dst, port, h,
      std::span<const uint8_t>(data + payload_offset, h.payload_length),
      rebuilt.data());
  FUZZ_CHECK(n == rebuilt.size());
  Header again;
  uint32_t again_offset = 0;
  FUZZ_CHECK(ParseFrame(rebuilt.data(), n, kEthernetBytes,
                        kEthernetBytes + kIpv6Bytes, &again,
                        &again_offset) == ParseError::kNone);
  FUZZ_CHECK(SameHeader(again, h));
  FUZZ_CHECK(((rebuilt[kEthernetBytes + 1] >> 4) & 3) == src.ecn);
  FUZZ_CHECK(std::memcmp(rebuilt.data() + kEthernetBytes + kIpv6Bytes,
                         data + udp, n - kEthernetBytes - kIpv6Bytes) == 0);
}

}  // namespace
}  // namespace spinnic::diad

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 0xffff) return 0;
  const uint32_t length = static_cast<uint32_t>(size);
  spinnic::ParsedFrame parsed;
  spinnic::ParseFrame(data, length, &parsed);
  const spinnic::PacketLayers& layers = parsed.layers;
  if (parsed.frame_class != spinnic::FrameClass::kDrop && layers.is_ipv6 &&
      layers.ip_proto == 17 &&
      layers.l4_offset != spinnic::PacketLayers::kAbsent) {
    spinnic::diad::Check(data, length, layers.l3_offset, layers.l4_offset);
  }
  spinnic::diad::Check(data, length, 14, 54);
  return 0;
}
