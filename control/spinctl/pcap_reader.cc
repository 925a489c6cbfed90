#include "control/spinctl/pcap_reader.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "dataplane/common/byte_order.h"

namespace spinnic::spinctl {
namespace {

constexpr uint32_t kMagicMicro = 0xa1b2c3d4;
constexpr uint32_t kMagicNano = 0xa1b23c4d;
// A pcapng file starts with a Section Header Block, type 0x0a0d0d0a (the
// same bytes in either byte order); its byte-order magic tells the order.
constexpr uint32_t kPcapngSectionHeader = 0x0a0d0d0a;
constexpr uint32_t kPcapngByteOrderMagic = 0x1a2b3c4d;
constexpr uint32_t kPcapngInterface = 1;
constexpr uint32_t kPcapngSimplePacket = 3;
constexpr uint32_t kPcapngEnhancedPacket = 6;
constexpr uint16_t kOptEndOfOpt = 0;
constexpr uint16_t kOptIfTsresol = 9;
// Smallest blocks, lengths included: type, length, the fixed body fields,
// the trailing length.
constexpr size_t kSectionHeaderMinBytes = 28;
constexpr size_t kInterfaceMinBytes = 20;
constexpr size_t kEnhancedPacketMinBytes = 32;
constexpr size_t kSimplePacketMinBytes = 16;
constexpr uint32_t kLinkTypeMask = 0xffff;

size_t Pad4(size_t n) { return (n + 3) & ~size_t{3}; }

// `units` of 10^-exponent s (or 2^-exponent s) in ns, saturating.
uint64_t UnitsToNs(uint64_t units, bool binary, uint8_t exponent) {
  __extension__ typedef unsigned __int128 u128;
  u128 ns = 0;
  if (binary) {  // exponent < 128: the shift is defined
    ns = (u128{units} * 1'000'000'000) >> exponent;
  } else if (exponent <= 9) {
    ns = u128{units};
    for (int i = exponent; i < 9; ++i) ns *= 10;
  } else {
    ns = u128{units};
    for (int i = 9; i < exponent && ns != 0; ++i) ns /= 10;
  }
  return ns > std::numeric_limits<uint64_t>::max()
             ? std::numeric_limits<uint64_t>::max()
             : static_cast<uint64_t>(ns);
}

}  // namespace

absl::StatusOr<PcapReader> PcapReader::Open(std::span<const uint8_t> file) {
  if (file.empty()) return absl::InvalidArgumentError("the file is empty");
  if (file.size() >= 4 && LoadLe32(file.data()) == kPcapngSectionHeader) {
    return OpenPcapng(file);
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
        "(either byte order), nor a pcapng section header",
        big));
  }
  // "Swapped" relative to this host, for information only: every load
  // below names the file's order explicitly.
  header.byte_swapped =
      little_endian_file != (std::endian::native == std::endian::little);

  PcapReader reader(file, header, little_endian_file, kPcapFileHeaderBytes);
  reader.header_.version_major = reader.Load16(4);
  reader.header_.version_minor = reader.Load16(6);
  reader.header_.snaplen = reader.Load32(16);
  const uint32_t link = reader.Load32(20);
  reader.header_.link_type = link & kLinkTypeMask;
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

absl::StatusOr<PcapReader> PcapReader::OpenPcapng(
    std::span<const uint8_t> file) {
  if (file.size() < kSectionHeaderMinBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "not a pcapng file: ", file.size(), " bytes, shorter than the ",
        kSectionHeaderMinBytes, "-byte section header block"));
  }
  const uint8_t* magic = file.data() + 8;
  bool little_endian_file;
  if (LoadLe32(magic) == kPcapngByteOrderMagic) {
    little_endian_file = true;
  } else if (LoadBe32(magic) == kPcapngByteOrderMagic) {
    little_endian_file = false;
  } else {
    return absl::InvalidArgumentError(absl::StrFormat(
        "not a pcapng file: byte-order magic 0x%08x is not 1a2b3c4d "
        "(either byte order)",
        LoadBe32(magic)));
  }
  PcapFileHeader header;
  header.pcapng = true;
  header.byte_swapped =
      little_endian_file != (std::endian::native == std::endian::little);
  // Each packet's interface is checked to be Ethernet as it comes.
  header.link_type = kPcapLinkTypeEthernet;
  PcapReader reader(file, header, little_endian_file, 0);
  reader.header_.version_major = reader.Load16(12);
  reader.header_.version_minor = reader.Load16(14);
  if (reader.header_.version_major != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("pcapng version ", reader.header_.version_major, ".",
                     reader.header_.version_minor, " is not 1.x"));
  }
  return reader;
}

uint16_t PcapReader::Load16(size_t offset) const {
  const uint8_t* p = file_.data() + offset;
  return static_cast<uint16_t>(little_endian_ ? p[0] | p[1] << 8
                                              : p[0] << 8 | p[1]);
}

uint32_t PcapReader::Load32(size_t offset) const {
  const uint8_t* p = file_.data() + offset;
  return little_endian_ ? LoadLe32(p) : LoadBe32(p);
}

bool PcapReader::Fail(absl::Status status) {
  done_ = true;
  status_ = std::move(status);
  return false;
}

bool PcapReader::Next(PcapRecord* record) {
  if (done_) return false;
  return header_.pcapng ? NextPcapng(record) : NextPcap(record);
}

bool PcapReader::NextPcap(PcapRecord* record) {
  const size_t left = file_.size() - offset_;
  if (left == 0) {
    done_ = true;
    return false;
  }
  const uint64_t index = records_ + 1;
  if (left < kPcapRecordHeaderBytes) {
    return Fail(absl::DataLossError(
        absl::StrCat("record ", index, " at byte ", offset_, ": the file ends ",
                     left, " bytes into its 16-byte header (truncated file)")));
  }
  const uint32_t seconds = Load32(offset_);
  const uint32_t fraction = Load32(offset_ + 4);
  const uint32_t captured = Load32(offset_ + 8);
  const uint32_t original = Load32(offset_ + 12);
  if (captured > kPcapMaxRecordBytes) {
    return Fail(absl::DataLossError(absl::StrCat(
        "record ", index, " at byte ", offset_, ": claims ", captured,
        " captured bytes, more than any pcap record holds (",
        kPcapMaxRecordBytes, "): corrupt file")));
  }
  if (original < captured) {
    return Fail(absl::DataLossError(
        absl::StrCat("record ", index, " at byte ", offset_, ": ", captured,
                     " bytes captured of a ", original,
                     "-byte frame (more than it had): corrupt file")));
  }
  if (left - kPcapRecordHeaderBytes < captured) {
    return Fail(absl::DataLossError(
        absl::StrCat("record ", index, " at byte ", offset_,
                     ": the file ends after ", left - kPcapRecordHeaderBytes,
                     " of its ", captured, " bytes (truncated file)")));
  }
  record->index = index;
  record->timestamp_ns =
      uint64_t{seconds} * 1'000'000'000 +
      (header_.nanosecond ? uint64_t{fraction} : uint64_t{fraction} * 1000);
  record->original_length = original;
  record->data = file_.subspan(offset_ + kPcapRecordHeaderBytes, captured);
  record->nanosecond = header_.nanosecond;
  offset_ += kPcapRecordHeaderBytes + captured;
  records_ = index;
  return true;
}

// Each block: type, total length, body, total length again. Every block
// advances the offset by at least 12 bytes, so the loop ends.
bool PcapReader::NextPcapng(PcapRecord* record) {
  while (true) {
    const size_t left = file_.size() - offset_;
    if (left == 0) {
      done_ = true;
      return false;
    }
    if (left < kPcapngBlockOverheadBytes) {
      return Fail(absl::DataLossError(absl::StrCat(
          "block at byte ", offset_, ": the file ends ", left,
          " bytes into it, before its 12-byte frame (truncated file)")));
    }
    // The section header's type reads the same in either byte order.
    const uint32_t type = Load32(offset_);
    if (type == kPcapngSectionHeader) {
      // A new section may have the other byte order.
      const uint8_t* magic = file_.data() + offset_ + 8;
      if (LoadLe32(magic) == kPcapngByteOrderMagic) {
        little_endian_ = true;
      } else if (LoadBe32(magic) == kPcapngByteOrderMagic) {
        little_endian_ = false;
      } else {
        return Fail(absl::DataLossError(absl::StrFormat(
            "section header block at byte %d: byte-order magic 0x%08x is "
            "not 1a2b3c4d: corrupt file",
            offset_, LoadBe32(magic))));
      }
    }
    const uint32_t length = Load32(offset_ + 4);
    if (length < kPcapngBlockOverheadBytes || length % 4 != 0) {
      return Fail(absl::DataLossError(absl::StrCat(
          "block at byte ", offset_, " (type ", type, "): length ", length,
          " is not a multiple of 4 of at least 12: corrupt file")));
    }
    if (length > left) {
      return Fail(absl::DataLossError(absl::StrCat(
          "block at byte ", offset_, " (type ", type, "): claims ", length,
          " bytes, the file has ", left, " left (truncated file)")));
    }
    if (Load32(offset_ + length - 4) != length) {
      return Fail(absl::DataLossError(absl::StrCat(
          "block at byte ", offset_, " (type ", type, "): its trailing length ",
          Load32(offset_ + length - 4), " differs from its leading ", length,
          ": corrupt file")));
    }
    absl::Status status;
    switch (type) {
      case kPcapngSectionHeader:
        status = ReadSectionHeader(length);
        break;
      case kPcapngInterface:
        status = ReadInterface(length);
        break;
      case kPcapngEnhancedPacket:
      case kPcapngSimplePacket:
        status = ReadPacket(type, length, record);
        if (status.ok()) {
          offset_ += length;
          return true;
        }
        break;
      default:  // statistics, name resolution, custom, ...: not ours
        break;
    }
    if (!status.ok()) return Fail(std::move(status));
    offset_ += length;
  }
}

absl::Status PcapReader::ReadSectionHeader(size_t length) {
  if (length < kSectionHeaderMinBytes) {
    return absl::DataLossError(
        absl::StrCat("section header block at byte ", offset_, ": ", length,
                     " bytes, shorter than its ", kSectionHeaderMinBytes,
                     "-byte minimum: corrupt file"));
  }
  const uint16_t major = Load16(offset_ + 12);
  if (major != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("section at byte ", offset_, ": pcapng version ", major,
                     ".", Load16(offset_ + 14), " is not 1.x"));
  }
  interfaces_.clear();  // interface ids count from 0 in each section
  return absl::OkStatus();
}

absl::Status PcapReader::ReadInterface(size_t length) {
  if (length < kInterfaceMinBytes) {
    return absl::DataLossError(
        absl::StrCat("interface description block at byte ", offset_, ": ",
                     length, " bytes, shorter than its ", kInterfaceMinBytes,
                     "-byte minimum: corrupt file"));
  }
  if (interfaces_.size() >= kPcapngMaxInterfaces) {
    return absl::DataLossError(absl::StrCat(
        "interface description block at byte ", offset_, ": more than ",
        kPcapngMaxInterfaces, " interfaces in one section: corrupt file"));
  }
  Interface itf;
  itf.link_type = Load16(offset_ + 8);
  itf.snaplen = Load32(offset_ + 12);
  // Options: code, length, value padded to 4 bytes; up to opt_endofopt or
  // the block's trailing length.
  const size_t end = offset_ + length - 4;
  size_t pos = offset_ + 16;
  while (end - pos >= 4) {
    const uint16_t code = Load16(pos);
    const uint16_t size = Load16(pos + 2);
    if (code == kOptEndOfOpt) break;
    if (Pad4(size) > end - pos - 4) {
      return absl::DataLossError(
          absl::StrCat("interface description block at byte ", offset_,
                       ": option ", code, " at byte ", pos, " (", size,
                       " bytes) runs past the block: corrupt file"));
    }
    if (code == kOptIfTsresol && size >= 1) {
      const uint8_t v = file_[pos + 4];
      itf.binary = (v & 0x80) != 0;
      itf.exponent = v & 0x7f;
    }
    pos += 4 + Pad4(size);
  }
  if (header_.snaplen == 0) header_.snaplen = itf.snaplen;
  interfaces_.push_back(itf);
  return absl::OkStatus();
}

absl::Status PcapReader::ReadPacket(uint32_t type, size_t length,
                                    PcapRecord* record) {
  const uint64_t index = records_ + 1;
  const bool enhanced = type == kPcapngEnhancedPacket;
  const size_t min = enhanced ? kEnhancedPacketMinBytes : kSimplePacketMinBytes;
  if (length < min) {
    return absl::DataLossError(absl::StrCat(
        "packet ", index, " at byte ", offset_, ": a ", length, "-byte ",
        enhanced ? "enhanced" : "simple", " packet block, shorter than its ",
        min, "-byte minimum: corrupt file"));
  }
  // A simple packet block is on interface 0 and has no timestamp.
  const uint32_t interface = enhanced ? Load32(offset_ + 8) : 0;
  if (interface >= interfaces_.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "packet ", index, " at byte ", offset_, " is on interface ", interface,
        ", which no interface description block of its section describes"));
  }
  const Interface& itf = interfaces_[interface];
  if (itf.link_type != kPcapLinkTypeEthernet) {
    return absl::InvalidArgumentError(absl::StrCat(
        "packet ", index, " at byte ", offset_, " is on interface ", interface,
        " of link type ", itf.link_type,
        ", not Ethernet (1): capture on an Ethernet interface, not 'any' "
        "(Linux cooked)"));
  }
  uint32_t captured;
  uint32_t original;
  size_t data_offset;
  uint64_t units = 0;
  if (enhanced) {
    units = uint64_t{Load32(offset_ + 12)} << 32 | Load32(offset_ + 16);
    captured = Load32(offset_ + 20);
    original = Load32(offset_ + 24);
    data_offset = offset_ + 28;
    if (captured > kPcapMaxRecordBytes) {
      return absl::DataLossError(absl::StrCat(
          "packet ", index, " at byte ", offset_, ": claims ", captured,
          " captured bytes, more than any packet holds (", kPcapMaxRecordBytes,
          "): corrupt file"));
    }
    if (Pad4(captured) > length - kEnhancedPacketMinBytes) {
      return absl::DataLossError(
          absl::StrCat("packet ", index, " at byte ", offset_, ": its ",
                       captured, " captured bytes run past its ", length,
                       "-byte block: corrupt file"));
    }
    if (original < captured) {
      return absl::DataLossError(
          absl::StrCat("packet ", index, " at byte ", offset_, ": ", captured,
                       " bytes captured of a ", original,
                       "-byte frame (more than it had): corrupt file"));
    }
  } else {
    original = Load32(offset_ + 8);
    data_offset = offset_ + 12;
    // What was captured: the frame up to the interface's snaplen, as much
    // as the block holds.
    size_t room = length - kSimplePacketMinBytes;
    if (itf.snaplen != 0) room = std::min<size_t>(room, itf.snaplen);
    room = std::min<size_t>(room, kPcapMaxRecordBytes);
    captured = static_cast<uint32_t>(std::min<size_t>(original, room));
  }
  record->index = index;
  record->timestamp_ns = UnitsToNs(units, itf.binary, itf.exponent);
  record->original_length = original;
  record->data = file_.subspan(data_offset, captured);
  // Finer than a microsecond: 10^-7 s and below, 2^-20 s and below.
  record->nanosecond = itf.binary ? itf.exponent >= 20 : itf.exponent > 6;
  records_ = index;
  return absl::OkStatus();
}

}  // namespace spinnic::spinctl
