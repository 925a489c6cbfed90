// spinctl capture's pcapng blocks (control/spinctl/pcapng_writer.h): the
// exact bytes of an Enhanced Packet Block with a comment, and a whole file
// read back by spinctl decode's reader with its frames, lengths and
// nanosecond timestamps intact.
#include "control/spinctl/pcapng_writer.h"

#include <cstdint>
#include <string>
#include <vector>

#include "control/spinctl/pcap_reader.h"
#include "gtest/gtest.h"

namespace spinnic::spinctl {
namespace {

std::vector<uint8_t> Bytes(const std::string& s) {
  return std::vector<uint8_t>(s.begin(), s.end());
}

TEST(PcapngWriterTest, PacketBlockWithCommentIsExact) {
  const std::vector<uint8_t> data = {1, 2, 3, 4, 5};
  const std::string block =
      PcapngPacket(0, 0x0000000100000002ull, 60, data, "no_route");
  const std::vector<uint8_t> expected = {
      6,   0,   0,   0,                      // type: Enhanced Packet Block
      56,  0,   0,   0,                      // total length
      0,   0,   0,   0,                      // interface 0
      1,   0,   0,   0,                      // timestamp, high word
      2,   0,   0,   0,                      // timestamp, low word
      5,   0,   0,   0,                      // captured length
      60,  0,   0,   0,                      // original length
      1,   2,   3,   4,   5,   0,   0,   0,  // data, padded
      1,   0,   8,   0,                      // opt_comment, 8 bytes
      'n', 'o', '_', 'r', 'o', 'u', 't', 'e', 0, 0, 0, 0,  // opt_endofopt
      56,  0,   0,   0,                                    // total length again
  };
  EXPECT_EQ(Bytes(block), expected);
}

TEST(PcapngWriterTest, FileReadsBackThroughSpinctlsReader) {
  const std::vector<uint8_t> first = {0xaa, 0xbb, 0xcc};
  std::vector<uint8_t> second(64);
  for (size_t i = 0; i < second.size(); ++i) second[i] = uint8_t(i);
  const uint64_t t1 = 1764150000123456789ull;
  std::string file = PcapngSectionHeader("spinctl capture test");
  file += PcapngInterface("p0", "spinnic port p0, stage drop", 1526,
                          "udp port 4791");
  file += PcapngPacket(0, t1, 3, first, "");
  file += PcapngPacket(0, t1 + 1, 1500, second, "tx_full");
  const std::vector<uint8_t> bytes = Bytes(file);

  absl::StatusOr<PcapReader> reader = PcapReader::Open(bytes);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_TRUE(reader->header().pcapng);
  EXPECT_EQ(reader->header().link_type, kPcapLinkTypeEthernet);
  PcapRecord record;
  ASSERT_TRUE(reader->Next(&record)) << reader->status();
  EXPECT_EQ(std::vector<uint8_t>(record.data.begin(), record.data.end()),
            first);
  EXPECT_EQ(record.original_length, 3u);
  EXPECT_EQ(record.timestamp_ns, t1);
  EXPECT_TRUE(record.nanosecond);
  ASSERT_TRUE(reader->Next(&record)) << reader->status();
  EXPECT_EQ(std::vector<uint8_t>(record.data.begin(), record.data.end()),
            second);
  EXPECT_EQ(record.original_length, 1500u);
  EXPECT_TRUE(record.cut_by_snaplen());
  EXPECT_EQ(record.timestamp_ns, t1 + 1);
  EXPECT_FALSE(reader->Next(&record));
  EXPECT_TRUE(reader->status().ok()) << reader->status();
  EXPECT_EQ(reader->header().snaplen, 1526u);
}

}  // namespace
}  // namespace spinnic::spinctl
