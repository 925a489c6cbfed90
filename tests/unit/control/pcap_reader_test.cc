// spinctl's pcap reader (control/spinctl/pcap_reader.h): both byte orders
// and timestamp resolutions, the refusals with their messages, and random
// and truncated files that must end in a status, never a read outside the
// file.
#include "control/spinctl/pcap_reader.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace spinnic::spinctl {
namespace {

using ::testing::HasSubstr;

class PcapWriter {
 public:
  PcapWriter(bool big_endian, uint32_t magic, uint32_t link_type = 1)
      : big_(big_endian) {
    Put32(magic);
    Put16(2);
    Put16(4);
    Put32(0);
    Put32(0);
    Put32(65535);
    Put32(link_type);
  }
  void Record(uint32_t seconds, uint32_t fraction, std::vector<uint8_t> data,
              uint32_t original) {
    Put32(seconds);
    Put32(fraction);
    Put32(static_cast<uint32_t>(data.size()));
    Put32(original);
    bytes.insert(bytes.end(), data.begin(), data.end());
  }
  std::vector<uint8_t> bytes;

 private:
  void Put16(uint16_t v) {
    if (big_) {
      bytes.push_back(v >> 8);
      bytes.push_back(v & 0xff);
    } else {
      bytes.push_back(v & 0xff);
      bytes.push_back(v >> 8);
    }
  }
  void Put32(uint32_t v) {
    for (int i = 0; i < 4; ++i) {
      int shift = big_ ? 24 - 8 * i : 8 * i;
      bytes.push_back(static_cast<uint8_t>(v >> shift));
    }
  }
  bool big_;
};

TEST(PcapReaderTest, ReadsBothByteOrdersAndResolutions) {
  for (bool big : {false, true}) {
    for (bool nano : {false, true}) {
      PcapWriter w(big, nano ? 0xa1b23c4d : 0xa1b2c3d4);
      w.Record(1700000000, nano ? 123456789 : 123456, {1, 2, 3}, 3);
      w.Record(1700000001, 7, {9, 8, 7, 6, 5}, 60);
      absl::StatusOr<PcapReader> reader = PcapReader::Open(w.bytes);
      ASSERT_TRUE(reader.ok()) << reader.status();
      EXPECT_EQ(reader->header().nanosecond, nano);
      EXPECT_EQ(reader->header().snaplen, 65535u);
      EXPECT_EQ(reader->header().version_minor, 4);
      PcapRecord r;
      ASSERT_TRUE(reader->Next(&r));
      EXPECT_EQ(r.index, 1u);
      EXPECT_EQ(r.timestamp_ns, 1700000000'123456789ull - (nano ? 0 : 789));
      EXPECT_THAT(std::vector<uint8_t>(r.data.begin(), r.data.end()),
                  ::testing::ElementsAre(1, 2, 3));
      EXPECT_FALSE(r.cut_by_snaplen());
      ASSERT_TRUE(reader->Next(&r));
      EXPECT_EQ(r.index, 2u);
      EXPECT_EQ(r.timestamp_ns, 1700000001'000000000ull + (nano ? 7 : 7000));
      EXPECT_EQ(r.data.size(), 5u);
      EXPECT_EQ(r.original_length, 60u);
      EXPECT_TRUE(r.cut_by_snaplen());
      EXPECT_FALSE(reader->Next(&r));
      EXPECT_TRUE(reader->status().ok());
      EXPECT_FALSE(reader->Next(&r));
    }
  }
}

TEST(PcapReaderTest, RefusesWhatIsNotClassicEthernetPcap) {
  auto message = [](std::vector<uint8_t> bytes) {
    absl::StatusOr<PcapReader> r = PcapReader::Open(bytes);
    EXPECT_FALSE(r.ok());
    return std::string(r.status().message());
  };
  EXPECT_THAT(message({}), HasSubstr("empty"));
  EXPECT_THAT(message({0xd4, 0xc3, 0xb2, 0xa1, 2, 0}),
              HasSubstr("shorter than the 24-byte pcap file header"));
  std::vector<uint8_t> pcapng = {0x0a, 0x0d, 0x0d, 0x0a};
  pcapng.resize(28);
  EXPECT_THAT(message(pcapng), HasSubstr("pcapng"));
  std::vector<uint8_t> text(40, 'x');
  EXPECT_THAT(message(text), HasSubstr("magic 0x78787878"));
  EXPECT_THAT(message(PcapWriter(false, 0xa1b2c3d4, 113).bytes),
              HasSubstr("link type 113 is not Ethernet"));
}

TEST(PcapReaderTest, CorruptRecordsEndWithDataLoss) {
  PcapWriter w(false, 0xa1b2c3d4);
  w.Record(1, 0, std::vector<uint8_t>(100, 0xab), 100);
  {  // The file ends inside the record's bytes.
    std::vector<uint8_t> cut(w.bytes.begin(), w.bytes.end() - 1);
    absl::StatusOr<PcapReader> r = PcapReader::Open(cut);
    ASSERT_TRUE(r.ok());
    PcapRecord rec;
    EXPECT_FALSE(r->Next(&rec));
    EXPECT_EQ(r->status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(r->status().message(),
                HasSubstr("record 1 at byte 24: the file ends after 99 of "
                          "its 100 bytes"));
  }
  {  // Inside the record header.
    std::vector<uint8_t> cut(w.bytes.begin(), w.bytes.begin() + 24 + 9);
    absl::StatusOr<PcapReader> r = PcapReader::Open(cut);
    PcapRecord rec;
    EXPECT_FALSE(r->Next(&rec));
    EXPECT_THAT(r->status().message(),
                HasSubstr("ends 9 bytes into its 16-byte header"));
  }
  {  // Impossible lengths.
    PcapWriter big(false, 0xa1b2c3d4);
    big.Record(1, 0, {}, 0);
    big.bytes[24 + 8] = 0xff;   // captured length 0x000000ff... -> 255 bytes
    big.bytes[24 + 11] = 0x7f;  // ... 0x7f0000ff: beyond any record
    absl::StatusOr<PcapReader> r = PcapReader::Open(big.bytes);
    PcapRecord rec;
    EXPECT_FALSE(r->Next(&rec));
    EXPECT_THAT(r->status().message(), HasSubstr("corrupt file"));
    PcapWriter shorter(false, 0xa1b2c3d4);
    shorter.Record(1, 0, {1, 2, 3, 4}, 2);  // more captured than sent
    r = PcapReader::Open(shorter.bytes);
    EXPECT_FALSE(r->Next(&rec));
    EXPECT_THAT(r->status().message(), HasSubstr("more than it had"));
  }
}

// Random headers, random bytes and every truncation of a valid file: the
// reader ends with a status, and every record it returns lies inside the
// file.
TEST(PcapReaderTest, RandomAndTruncatedFilesStayInside) {
  PcapWriter w(true, 0xa1b23c4d);
  for (uint32_t i = 0; i < 5; ++i) {
    w.Record(i, i, std::vector<uint8_t>(10 + i * 7, static_cast<uint8_t>(i)),
             100);
  }
  std::mt19937 rng(42);
  size_t records = 0;
  for (int round = 0; round < 20000; ++round) {
    std::vector<uint8_t> file;
    if (round < static_cast<int>(w.bytes.size())) {
      file.assign(w.bytes.begin(), w.bytes.begin() + round);
    } else {
      file = w.bytes;
      for (int i = rng() % 6; i >= 0; --i) file[rng() % file.size()] = rng();
      file.resize(rng() % (file.size() + 1));
    }
    absl::StatusOr<PcapReader> reader = PcapReader::Open(file);
    if (!reader.ok()) continue;
    PcapRecord r;
    size_t n = 0;
    while (reader->Next(&r)) {
      ++n;
      ASSERT_GE(r.data.data(), file.data());
      ASSERT_LE(r.data.data() + r.data.size(), file.data() + file.size());
      ASSERT_LE(r.data.size(), kPcapMaxRecordBytes);
      ASSERT_LE(r.data.size(), r.original_length);
    }
    ASSERT_LE(n, 5u + file.size() / kPcapRecordHeaderBytes);
    records += n;
  }
  EXPECT_GT(records, 0u);
}

// pcapng, block by block, in either byte order.
class PcapngWriter {
 public:
  explicit PcapngWriter(bool big_endian, uint16_t major = 1)
      : big_(big_endian) {
    Section(major);
  }
  void Section(uint16_t major = 1) {
    Block(0x0a0d0d0a, [&] {
      Put32(0x1a2b3c4d);
      Put16(major);
      Put16(0);
      Put32(0xffffffff);  // section length: unknown
      Put32(0xffffffff);
    });
  }
  // tsresol < 0: no if_tsresol option (microseconds).
  void Interface(uint16_t link_type, uint32_t snaplen, int tsresol = -1) {
    Block(1, [&] {
      Put16(link_type);
      Put16(0);
      Put32(snaplen);
      Put16(2);  // if_name "eth0", to be skipped
      Put16(4);
      for (char c : std::string("eth0")) bytes.push_back(c);
      if (tsresol >= 0) {
        Put16(9);
        Put16(1);
        bytes.push_back(static_cast<uint8_t>(tsresol));
        Pad();
      }
      Put32(0);  // opt_endofopt
    });
  }
  void Enhanced(uint32_t interface, uint64_t units, std::vector<uint8_t> data,
                uint32_t original) {
    Block(6, [&] {
      Put32(interface);
      Put32(static_cast<uint32_t>(units >> 32));
      Put32(static_cast<uint32_t>(units));
      Put32(static_cast<uint32_t>(data.size()));
      Put32(original);
      bytes.insert(bytes.end(), data.begin(), data.end());
      Pad();
    });
  }
  void Simple(std::vector<uint8_t> data, uint32_t original) {
    Block(3, [&] {
      Put32(original);
      bytes.insert(bytes.end(), data.begin(), data.end());
      Pad();
    });
  }
  void Other(uint32_t type, size_t body) {
    Block(type, [&] { bytes.resize(bytes.size() + body, 0x5a); });
  }
  // The leading length of the block starting at `offset`.
  void SetLength(size_t offset, uint32_t v) { Set32(offset + 4, v); }
  std::vector<uint8_t> bytes;

 private:
  template <typename Body>
  void Block(uint32_t type, Body body) {
    const size_t start = bytes.size();
    Put32(type);
    Put32(0);
    body();
    Pad();
    const uint32_t length = static_cast<uint32_t>(bytes.size() - start + 4);
    Put32(length);
    Set32(start + 4, length);
  }
  void Pad() {
    while (bytes.size() % 4 != 0) bytes.push_back(0);
  }
  void Put16(uint16_t v) {
    bytes.push_back(static_cast<uint8_t>(big_ ? v >> 8 : v & 0xff));
    bytes.push_back(static_cast<uint8_t>(big_ ? v & 0xff : v >> 8));
  }
  void Put32(uint32_t v) {
    bytes.resize(bytes.size() + 4);
    Set32(bytes.size() - 4, v);
  }
  void Set32(size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) {
      int shift = big_ ? 24 - 8 * i : 8 * i;
      bytes[at + i] = static_cast<uint8_t>(v >> shift);
    }
  }
  bool big_;
};

std::vector<uint8_t> Bytes(size_t n, uint8_t first) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(first + i);
  return v;
}

TEST(PcapReaderTest, ReadsPcapngInBothByteOrders) {
  for (bool big : {false, true}) {
    SCOPED_TRACE(big ? "big-endian" : "little-endian");
    PcapngWriter w(big);
    w.Interface(1, 65535);  // microseconds
    w.Other(5, 20);         // interface statistics: skipped
    w.Enhanced(0, 1'500'000, Bytes(60, 0), 60);
    w.Simple(Bytes(61, 100), 61);  // padded to 64
    w.Other(0x40000bad, 8);        // a custom block: skipped
    w.Interface(1, 65535, 9);      // nanoseconds
    w.Enhanced(1, 2'000'000'123, Bytes(4, 7), 100);
    absl::StatusOr<PcapReader> reader = PcapReader::Open(w.bytes);
    ASSERT_TRUE(reader.ok()) << reader.status();
    EXPECT_TRUE(reader->header().pcapng);
    EXPECT_EQ(reader->header().link_type, kPcapLinkTypeEthernet);
    EXPECT_EQ(reader->header().version_major, 1);
    PcapRecord r;
    ASSERT_TRUE(reader->Next(&r)) << reader->status();
    EXPECT_EQ(r.index, 1u);
    EXPECT_EQ(r.timestamp_ns, 1'500'000'000u);
    EXPECT_FALSE(r.nanosecond);
    EXPECT_EQ(r.original_length, 60u);
    EXPECT_EQ(std::vector<uint8_t>(r.data.begin(), r.data.end()), Bytes(60, 0));
    EXPECT_EQ(reader->header().snaplen, 65535u);
    ASSERT_TRUE(reader->Next(&r)) << reader->status();
    EXPECT_EQ(r.index, 2u);
    EXPECT_EQ(r.timestamp_ns, 0u);  // a simple packet block has none
    EXPECT_EQ(std::vector<uint8_t>(r.data.begin(), r.data.end()),
              Bytes(61, 100));
    EXPECT_FALSE(r.cut_by_snaplen());
    ASSERT_TRUE(reader->Next(&r)) << reader->status();
    EXPECT_EQ(r.index, 3u);
    EXPECT_EQ(r.timestamp_ns, 2'000'000'123u);
    EXPECT_TRUE(r.nanosecond);
    EXPECT_EQ(r.data.size(), 4u);
    EXPECT_TRUE(r.cut_by_snaplen());
    EXPECT_FALSE(reader->Next(&r));
    EXPECT_TRUE(reader->status().ok()) << reader->status();
  }
}

TEST(PcapReaderTest, PcapngTimestampResolutionsAndSections) {
  PcapngWriter w(false);
  w.Interface(1, 0, 0x80 | 10);  // 2^-10 s
  w.Interface(1, 0, 0x80 | 30);  // 2^-30 s: finer than a microsecond
  w.Interface(1, 0, 3);          // milliseconds
  w.Enhanced(0, 1024 * 3, Bytes(14, 0), 14);
  w.Enhanced(1, uint64_t{1} << 30, Bytes(14, 0), 14);
  w.Enhanced(2, 2500, Bytes(14, 0), 14);
  // A second section in the other byte order: interfaces count from 0.
  PcapngWriter next(true);
  next.Interface(1, 1500, 6);
  next.Enhanced(0, 7, Bytes(20, 9), 20);
  w.bytes.insert(w.bytes.end(), next.bytes.begin(), next.bytes.end());
  absl::StatusOr<PcapReader> reader = PcapReader::Open(w.bytes);
  ASSERT_TRUE(reader.ok()) << reader.status();
  PcapRecord r;
  ASSERT_TRUE(reader->Next(&r));
  EXPECT_EQ(r.timestamp_ns, 3'000'000'000u);
  EXPECT_FALSE(r.nanosecond);
  ASSERT_TRUE(reader->Next(&r));
  EXPECT_EQ(r.timestamp_ns, 1'000'000'000u);
  EXPECT_TRUE(r.nanosecond);
  ASSERT_TRUE(reader->Next(&r));
  EXPECT_EQ(r.timestamp_ns, 2'500'000'000u);
  ASSERT_TRUE(reader->Next(&r)) << reader->status();
  EXPECT_EQ(r.index, 4u);
  EXPECT_EQ(r.timestamp_ns, 7'000u);
  EXPECT_EQ(std::vector<uint8_t>(r.data.begin(), r.data.end()), Bytes(20, 9));
  EXPECT_FALSE(reader->Next(&r));
  EXPECT_TRUE(reader->status().ok()) << reader->status();
}

TEST(PcapReaderTest, PcapngRefusals) {
  auto open_error = [](const std::vector<uint8_t>& bytes) {
    absl::StatusOr<PcapReader> r = PcapReader::Open(bytes);
    EXPECT_FALSE(r.ok());
    return std::string(r.status().message());
  };
  EXPECT_THAT(open_error(PcapngWriter(false, 2).bytes),
              HasSubstr("pcapng version 2.0 is not 1.x"));
  std::vector<uint8_t> bad_magic = PcapngWriter(false).bytes;
  bad_magic[8] = 0x99;
  EXPECT_THAT(open_error(bad_magic), HasSubstr("byte-order magic"));
  std::vector<uint8_t> short_file = PcapngWriter(true).bytes;
  short_file.resize(20);
  EXPECT_THAT(open_error(short_file), HasSubstr("shorter than the 28-byte"));

  auto next_error = [](const std::vector<uint8_t>& bytes) {
    absl::StatusOr<PcapReader> r = PcapReader::Open(bytes);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return absl::Status(r.status());
    PcapRecord rec;
    while (r->Next(&rec)) {
    }
    return r->status();
  };
  PcapngWriter cooked(false);
  cooked.Interface(113, 65535);
  cooked.Enhanced(0, 0, Bytes(20, 0), 20);
  absl::Status s = next_error(cooked.bytes);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("link type 113, not Ethernet"));
  PcapngWriter nowhere(false);
  nowhere.Interface(1, 65535);
  nowhere.Enhanced(3, 0, Bytes(20, 0), 20);
  EXPECT_THAT(next_error(nowhere.bytes).message(),
              HasSubstr("interface 3, which no interface description block"));
  // Interfaces do not outlive their section.
  PcapngWriter two(false);
  two.Interface(1, 65535);
  two.Section();
  two.Enhanced(0, 0, Bytes(20, 0), 20);
  EXPECT_THAT(next_error(two.bytes).message(),
              HasSubstr("interface 0, which no"));
}

TEST(PcapReaderTest, CorruptPcapngBlocksEndWithDataLoss) {
  PcapngWriter w(false);
  w.Interface(1, 65535);
  const size_t packet = w.bytes.size();
  w.Enhanced(0, 0, Bytes(20, 0), 20);  // 32 + 20 = 52 bytes
  auto status_of = [](const std::vector<uint8_t>& bytes) {
    absl::StatusOr<PcapReader> r = PcapReader::Open(bytes);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return absl::Status(r.status());
    PcapRecord rec;
    while (r->Next(&rec)) {
    }
    return r->status();
  };
  {
    std::vector<uint8_t> cut(w.bytes.begin(), w.bytes.end() - 4);
    absl::Status s = status_of(cut);
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(s.message(), HasSubstr("truncated file"));
  }
  {
    std::vector<uint8_t> cut(w.bytes.begin(), w.bytes.begin() + packet + 6);
    EXPECT_THAT(status_of(cut).message(), HasSubstr("before its 12-byte"));
  }
  {
    PcapngWriter odd = w;
    odd.SetLength(packet, 50);
    EXPECT_THAT(status_of(odd.bytes).message(),
                HasSubstr("is not a multiple of 4"));
  }
  {
    PcapngWriter mismatch = w;
    mismatch.SetLength(packet, 48);
    EXPECT_THAT(status_of(mismatch.bytes).message(),
                HasSubstr("trailing length"));
  }
  {  // Captured length beyond the block.
    PcapngWriter over = w;
    over.bytes[packet + 20] = 40;
    over.bytes[packet + 24] = 40;
    EXPECT_THAT(status_of(over.bytes).message(),
                HasSubstr("run past its 52-byte block"));
  }
  {  // More captured than the frame had.
    PcapngWriter more = w;
    more.bytes[packet + 24] = 10;
    EXPECT_THAT(status_of(more.bytes).message(), HasSubstr("more than it had"));
  }
  {  // An option running past its block.
    PcapngWriter opt(true);
    opt.Interface(1, 65535, 6);
    opt.bytes[28 + 16 + 3] = 200;  // if_name's length (big-endian low byte)
    EXPECT_THAT(status_of(opt.bytes).message(),
                HasSubstr("runs past the block"));
  }
}

// The same for pcapng: random bytes and every truncation end in a status,
// and every record lies inside the file.
TEST(PcapReaderTest, RandomAndTruncatedPcapngStayInside) {
  PcapngWriter w(true);
  w.Interface(1, 100, 9);
  for (uint32_t i = 0; i < 4; ++i) {
    w.Enhanced(0, i, std::vector<uint8_t>(10 + i * 7, static_cast<uint8_t>(i)),
               100);
    w.Simple(std::vector<uint8_t>(5 + i, 1), 5 + i);
  }
  std::mt19937 rng(7);
  size_t records = 0;
  for (int round = 0; round < 20000; ++round) {
    std::vector<uint8_t> file;
    if (round < static_cast<int>(w.bytes.size())) {
      file.assign(w.bytes.begin(), w.bytes.begin() + round);
    } else {
      file = w.bytes;
      for (int i = rng() % 6; i >= 0; --i) file[rng() % file.size()] = rng();
      file.resize(rng() % (file.size() + 1));
    }
    absl::StatusOr<PcapReader> reader = PcapReader::Open(file);
    if (!reader.ok()) continue;
    PcapRecord r;
    size_t n = 0;
    while (reader->Next(&r)) {
      ++n;
      ASSERT_GE(r.data.data(), file.data());
      ASSERT_LE(r.data.data() + r.data.size(), file.data() + file.size());
      ASSERT_LE(r.data.size(), kPcapMaxRecordBytes);
      ASSERT_LE(r.data.size(), r.original_length);
    }
    ASSERT_LE(n, file.size() / kPcapngBlockOverheadBytes);
    records += n;
  }
  EXPECT_GT(records, 0u);
}

}  // namespace
}  // namespace spinnic::spinctl
