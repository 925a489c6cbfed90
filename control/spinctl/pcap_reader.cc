#include "control/spinctl/pcap_reader.h"

#include <bit>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "dataplane/common/byte_order.h"

namespace spinnic::spinctl {
namespace {

constexpr uint32_t kMagicMicro = 0xa1b2c3d4;
constexpr uint32_t kMagicNano = 0xa1b23c4d;
// A pcapng file starts with a Section Header Block, type 0x0a0d0d0a (the
// same bytes in either byte order).
constexpr uint32_t kPcapngBlockType = 0x0a0d0d0a;

}  // namespace

absl::StatusOr<PcapReader> PcapReader::Open(std::span<const uint8_t> file) {
  if (file.empty()) return absl::InvalidArgumentError("the file is empty");
  if (file.size() >= 4 && LoadLe32(file.data()) == kPcapngBlockType) {
    return absl::InvalidArgumentError(
        "this is a pcapng file; only classic pcap is read (convert it: "
        "editcap -F pcap IN OUT, or tcpdump/tshark -F pcap)");
  }
  if (file.size() < kPcapFileHeaderBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a pcap file: ", file.size(),
                     " bytes, shorter than the 24-byte pcap file header"));
  }
  // The writer stored the magic in its own byte order: whichever explicit
  // load gives a known magic is the file's order (our host's does not
  // matter).
  PcapFileHeader header;
  const uint32_t big = LoadBe32(file.data());
  const uint32_t little = LoadLe32(file.data());
  bool little_endian_file;
  if (little == kMagicMicro || little == kMagicNano) {
    little_endian_file = true;
    header.nanosecond = little == kMagicNano;
  } else if (big == kMagicMicro || big == kMagicNano) {
    little_endian_file = false;
    header.nanosecond = big == kMagicNano;
  } else {
    return absl::InvalidArgumentError(absl::StrFormat(
        "not a pcap file: magic 0x%08x is none of a1b2c3d4, a1b23c4d "
        "(either byte order)",
        big));
  }
  // "Swapped" relative to this host, for information only: every load
  // below names the file's order explicitly.
  header.byte_swapped =
      little_endian_file != (std::endian::native == std::endian::little);

  PcapReader reader(file, header, little_endian_file);
  const uint8_t* version = file.data() + 4;  // two 16-bit fields
  reader.header_.version_major =
      static_cast<uint16_t>(little_endian_file ? version[0] | version[1] << 8
                                               : version[0] << 8 | version[1]);
  reader.header_.version_minor =
      static_cast<uint16_t>(little_endian_file ? version[2] | version[3] << 8
                                               : version[2] << 8 | version[3]);
  reader.header_.snaplen = reader.Load32(16);
  const uint32_t link = reader.Load32(20);
  reader.header_.link_type = link & 0xffff;
  if (reader.header_.version_major != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("pcap version ", reader.header_.version_major, ".",
                     reader.header_.version_minor, " is not 2.x"));
  }
  if (reader.header_.link_type != kPcapLinkTypeEthernet) {
    return absl::InvalidArgumentError(
        absl::StrCat("link type ", reader.header_.link_type,
                     " is not Ethernet (1): capture on an Ethernet "
                     "interface, not 'any' (Linux cooked)"));
  }
  return reader;
}

uint32_t PcapReader::Load32(size_t offset) const {
  const uint8_t* p = file_.data() + offset;
  return little_endian_ ? LoadLe32(p) : LoadBe32(p);
}

bool PcapReader::Next(PcapRecord* record) {
  if (done_) return false;
  const size_t left = file_.size() - offset_;
  if (left == 0) {
    done_ = true;
    return false;
  }
  const uint64_t index = records_ + 1;
  if (left < kPcapRecordHeaderBytes) {
    done_ = true;
    status_ = absl::DataLossError(
        absl::StrCat("record ", index, " at byte ", offset_, ": the file ends ",
                     left, " bytes into its 16-byte header (truncated file)"));
    return false;
  }
  const uint32_t seconds = Load32(offset_);
  const uint32_t fraction = Load32(offset_ + 4);
  const uint32_t captured = Load32(offset_ + 8);
  const uint32_t original = Load32(offset_ + 12);
  if (captured > kPcapMaxRecordBytes) {
    done_ = true;
    status_ = absl::DataLossError(absl::StrCat(
        "record ", index, " at byte ", offset_, ": claims ", captured,
        " captured bytes, more than any pcap record holds (",
        kPcapMaxRecordBytes, "): corrupt file"));
    return false;
  }
  if (original < captured) {
    done_ = true;
    status_ = absl::DataLossError(
        absl::StrCat("record ", index, " at byte ", offset_, ": ", captured,
                     " bytes captured of a ", original,
                     "-byte frame (more than it had): corrupt file"));
    return false;
  }
  if (left - kPcapRecordHeaderBytes < captured) {
    done_ = true;
    status_ = absl::DataLossError(
        absl::StrCat("record ", index, " at byte ", offset_,
                     ": the file ends after ", left - kPcapRecordHeaderBytes,
                     " of its ", captured, " bytes (truncated file)"));
    return false;
  }
  record->index = index;
  record->timestamp_ns =
      uint64_t{seconds} * 1'000'000'000 +
      (header_.nanosecond ? uint64_t{fraction} : uint64_t{fraction} * 1000);
  record->original_length = original;
  record->data = file_.subspan(offset_ + kPcapRecordHeaderBytes, captured);
  offset_ += kPcapRecordHeaderBytes + captured;
  records_ = index;
  return true;
}

}  // namespace spinnic::spinctl
