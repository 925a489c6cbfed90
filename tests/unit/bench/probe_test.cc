// spinnic-gen's probe frames: the bytes BuildProbeFrame/StampProbe write
// (golden), the parser's answers for ours, truncated and foreign frames,
// and a fuzz-style sweep (every prefix, random bytes, mutations) that must
// never crash it or read past the buffer (the ASan tree checks the reads).
#include "bench/linerate/gen/probe.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

namespace spinnic::gen {
namespace {

std::vector<uint8_t> Build(uint32_t size, const Probe& probe,
                           uint16_t base_port = 10000) {
  FrameSpec spec;
  spec.size = size;
  spec.src_mac = {0x02, 0, 0, 0, 0, 0x01};
  spec.dst_mac = {0x02, 0, 0, 0, 0, 0x02};
  spec.src_port = base_port;
  std::vector<uint8_t> frame(size);
  EXPECT_TRUE(BuildProbeFrame(spec, absl::MakeSpan(frame)).ok());
  StampProbe(frame.data(), base_port, probe);
  return frame;
}

Probe MakeProbe(uint16_t stream, uint64_t seq, uint64_t tsc) {
  Probe p;
  p.stream = stream;
  p.seq = seq;
  p.tx_tsc = tsc;
  return p;
}

// Parses from an exactly sized heap copy, so that ASan sees any overread.
ProbeParse ParseExact(const std::vector<uint8_t>& bytes, size_t frame_len,
                      Probe* out) {
  auto copy = std::make_unique<uint8_t[]>(bytes.size() + 1);
  if (!bytes.empty()) std::memcpy(copy.get(), bytes.data(), bytes.size());
  return ParseProbe(bytes.empty() ? nullptr : copy.get(), bytes.size(),
                    frame_len, out);
}

ProbeParse ParseExact(const std::vector<uint8_t>& bytes, Probe* out) {
  return ParseExact(bytes, bytes.size(), out);
}

TEST(ProbeFrameTest, GoldenBytesOfA64ByteProbe) {
  const std::vector<uint8_t> frame =
      Build(64, MakeProbe(3, 0x0102030405060708, 0x1112131415161718));
  const std::vector<uint8_t> golden = {
      // Ethernet: dst, src, IPv4
      0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01,
      0x08, 0x00,
      // IPv4: 45, tos 0, length 50, id 0, DF, TTL 64, UDP, checksum,
      // 198.18.0.1 -> 198.19.0.1
      0x45, 0x00, 0x00, 0x32, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xae, 0x93,
      0xc6, 0x12, 0x00, 0x01, 0xc6, 0x13, 0x00, 0x01,
      // UDP: 10003 -> 9, length 30, no checksum
      0x27, 0x13, 0x00, 0x09, 0x00, 0x1e, 0x00, 0x00,
      // probe: "SPNG", stream 3, seq, tsc
      0x53, 0x50, 0x4e, 0x47, 0x00, 0x03, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06,
      0x07, 0x08, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18};
  EXPECT_EQ(frame, golden);
}

TEST(ProbeFrameTest, Ipv4HeaderChecksumVerifies) {
  for (uint32_t size : {64u, 65u, 1514u, 9000u}) {
    const std::vector<uint8_t> frame = Build(size, MakeProbe(0, 0, 0));
    uint32_t sum = 0;
    for (size_t i = 14; i < 34; i += 2) sum += LoadBe16(&frame[i]);
    while (sum > 0xffff) sum = (sum & 0xffff) + (sum >> 16);
    EXPECT_EQ(sum, 0xffffu) << "size " << size;
    EXPECT_EQ(LoadBe16(&frame[16]), size - 14);
    EXPECT_EQ(LoadBe16(&frame[38]), size - 34);
  }
}

TEST(ProbeFrameTest, PaddingIsZero) {
  const std::vector<uint8_t> frame = Build(200, MakeProbe(1, 2, 3));
  for (size_t i = kMinFrameBytes; i < frame.size(); ++i) {
    ASSERT_EQ(frame[i], 0) << "byte " << i;
  }
}

TEST(ProbeFrameTest, RejectsSizesOutsideTheRangeAndShortBuffers) {
  FrameSpec spec;
  std::vector<uint8_t> buf(kMaxFrameBytes + 1);
  spec.size = 63;
  EXPECT_FALSE(BuildProbeFrame(spec, absl::MakeSpan(buf)).ok());
  spec.size = 9001;
  EXPECT_FALSE(BuildProbeFrame(spec, absl::MakeSpan(buf)).ok());
  spec.size = 128;
  EXPECT_FALSE(BuildProbeFrame(spec, absl::MakeSpan(buf.data(), 127)).ok());
  EXPECT_TRUE(BuildProbeFrame(spec, absl::MakeSpan(buf.data(), 128)).ok());
}

TEST(ProbeParseTest, RoundTripsEveryFieldAndSize) {
  for (uint32_t size : {64u, 65u, 100u, 1518u, 9000u}) {
    const Probe sent = MakeProbe(4095, 0xfedcba9876543210, 0x8000000000000001);
    const std::vector<uint8_t> frame = Build(size, sent);
    Probe got;
    ASSERT_EQ(ParseExact(frame, &got), ProbeParse::kOk) << "size " << size;
    EXPECT_EQ(got.stream, sent.stream);
    EXPECT_EQ(got.seq, sent.seq);
    EXPECT_EQ(got.tx_tsc, sent.tx_tsc);
    // UDP source port = base + stream.
    EXPECT_EQ(LoadBe16(&frame[34]), 10000 + 4095);
  }
}

TEST(ProbeParseTest, AcceptsASegmentedFrameFromItsHead) {
  const std::vector<uint8_t> frame = Build(1518, MakeProbe(1, 77, 99));
  const std::vector<uint8_t> head(frame.begin(),
                                  frame.begin() + kMaxProbeHeadBytes);
  Probe got;
  ASSERT_EQ(ParseExact(head, frame.size(), &got), ProbeParse::kOk);
  EXPECT_EQ(got.seq, 77u);
  // The same head claimed as the whole frame: IP length runs past it.
  EXPECT_EQ(ParseExact(head, &got), ProbeParse::kTruncated);
}

TEST(ProbeParseTest, AcceptsVlanTagsAndIpOptions) {
  const std::vector<uint8_t> plain = Build(100, MakeProbe(2, 5, 6));
  for (uint16_t tpid : {0x8100, 0x88a8}) {
    std::vector<uint8_t> tagged(plain.begin(), plain.begin() + 12);
    tagged.insert(tagged.end(), {static_cast<uint8_t>(tpid >> 8),
                                 static_cast<uint8_t>(tpid), 0x00, 0x2a});
    if (tpid == 0x88a8) {  // QinQ: an inner 802.1Q tag too
      tagged.insert(tagged.end(), {0x81, 0x00, 0x00, 0x07});
    }
    tagged.insert(tagged.end(), plain.begin() + 12, plain.end());
    Probe got;
    ASSERT_EQ(ParseExact(tagged, &got), ProbeParse::kOk) << tpid;
    EXPECT_EQ(got.seq, 5u);
  }
  // IHL 6: four bytes of options (NOPs) before UDP.
  std::vector<uint8_t> opts(plain.begin(), plain.begin() + 34);
  opts[14] = 0x46;
  StoreBe16(&opts[16], static_cast<uint16_t>(LoadBe16(&opts[16]) + 4));
  opts.insert(opts.end(), {0x01, 0x01, 0x01, 0x01});
  opts.insert(opts.end(), plain.begin() + 34, plain.end());
  Probe got;
  ASSERT_EQ(ParseExact(opts, &got), ProbeParse::kOk);
  EXPECT_EQ(got.stream, 2u);
}

TEST(ProbeParseTest, EveryPrefixIsTruncatedNeverOk) {
  const std::vector<uint8_t> frame = Build(64, MakeProbe(1, 2, 3));
  for (size_t len = 0; len < frame.size(); ++len) {
    const std::vector<uint8_t> prefix(frame.begin(), frame.begin() + len);
    Probe got = MakeProbe(0xabcd, 0xabcd, 0xabcd);
    // As a whole frame, and as a short head of the whole 64-byte frame.
    EXPECT_EQ(ParseExact(prefix, &got), ProbeParse::kTruncated) << len;
    EXPECT_EQ(ParseExact(prefix, frame.size(), &got), ProbeParse::kTruncated)
        << len;
    EXPECT_EQ(got.stream, 0xabcd) << "out written for prefix " << len;
  }
}

TEST(ProbeParseTest, RejectsForeignFrames) {
  const std::vector<uint8_t> good = Build(64, MakeProbe(1, 2, 3));
  Probe got;
  struct Case {
    const char* what;
    size_t at;
    uint8_t value;
    ProbeParse want;
  };
  const Case cases[] = {
      {"ARP", 13, 0x06, ProbeParse::kNotIpv4Udp},
      {"IPv6 ethertype", 12, 0x86, ProbeParse::kNotIpv4Udp},
      {"IP version 6", 14, 0x65, ProbeParse::kNotIpv4Udp},
      {"IHL 4", 14, 0x44, ProbeParse::kNotIpv4Udp},
      {"IHL 15: header past the frame", 14, 0x4f, ProbeParse::kTruncated},
      {"TCP", 23, 6, ProbeParse::kNotIpv4Udp},
      {"more fragments", 20, 0x20, ProbeParse::kFragment},
      {"fragment offset", 21, 0x01, ProbeParse::kFragment},
      {"IP length past the frame", 17, 0x33, ProbeParse::kTruncated},
      {"IP length too short for the probe", 17, 0x31, ProbeParse::kTruncated},
      {"UDP length too short", 39, 0x1d, ProbeParse::kTruncated},
      {"UDP length past IP", 39, 0x1f, ProbeParse::kTruncated},
      {"magic", 45, 0x48, ProbeParse::kBadMagic},
  };
  for (const Case& c : cases) {
    std::vector<uint8_t> frame = good;
    frame[c.at] = c.value;
    EXPECT_EQ(ParseExact(frame, &got), c.want) << c.what;
  }
  EXPECT_EQ(ParseExact(good, &got), ProbeParse::kOk);
  EXPECT_STREQ(ProbeParseName(ProbeParse::kBadMagic), "bad_magic");
}

TEST(ProbeParseTest, FuzzRandomBytesAndMutationsNeverCrash) {
  std::mt19937_64 rng(20261122);
  const std::vector<uint8_t> good = Build(96, MakeProbe(7, 8, 9));
  int ok = 0;
  for (int round = 0; round < 200000; ++round) {
    std::vector<uint8_t> bytes;
    if (round % 2 == 0) {
      bytes.resize(rng() % 160);
      for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
      // Often make it look like IPv4/UDP so that the deeper checks run.
      if (bytes.size() > 24 && rng() % 2) {
        bytes[12] = 0x08;
        bytes[13] = 0x00;
        bytes[14] = static_cast<uint8_t>(0x40 | (rng() % 16));
        bytes[23] = 17;
      }
    } else {
      bytes = good;
      for (int edits = 1 + static_cast<int>(rng() % 4); edits > 0; --edits) {
        bytes[rng() % bytes.size()] = static_cast<uint8_t>(rng());
      }
      if (rng() % 4 == 0) bytes.resize(rng() % (bytes.size() + 1));
    }
    // Head and frame lengths may disagree either way.
    const size_t frame_len = rng() % 4 == 0 ? rng() % 200 : bytes.size();
    Probe got = MakeProbe(1, 1, 1);
    const ProbeParse result = ParseExact(bytes, frame_len, &got);
    if (result == ProbeParse::kOk) {
      ++ok;
      ASSERT_GE(bytes.size(), kMinFrameBytes);
      ASSERT_GE(frame_len, kMinFrameBytes);
    } else {
      ASSERT_EQ(got.seq, 1u);  // untouched
    }
  }
  EXPECT_GT(ok, 0);  // mutations that miss the headers still parse
}

}  // namespace
}  // namespace spinnic::gen
