// spinctl's pcap reader (control/spinctl/pcap_reader.h): both byte orders
// and timestamp resolutions, the refusals with their messages, and random
// and truncated files that must end in a status, never a read outside the
// file.
#include "control/spinctl/pcap_reader.h"

#include <cstdint>
#include <random>
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

}  // namespace
}  // namespace spinnic::spinctl
