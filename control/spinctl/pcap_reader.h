// A reader for capture files, for `spinctl decode`: classic libpcap (the
// format tcpdump -w and `tshark -F pcap` write) and pcapng (Wireshark's and
// dumpcap's default). Pure logic over the file's bytes: no I/O, no
// allocation per record, never reads outside the span.
//
// Classic pcap: both byte orders and both timestamp resolutions (magic
// 0xa1b2c3d4: microseconds, 0xa1b23c4d: nanoseconds); any link type other
// than Ethernet is refused.
//
// pcapng: Section Header, Interface Description, Enhanced Packet and Simple
// Packet blocks, in either byte order (each section its own), each
// interface's if_tsresol (decimal or binary; default microseconds); every
// other block type is skipped. A packet on an interface whose link type is
// not Ethernet, or on an interface no block described, ends the file with
// INVALID_ARGUMENT; a block whose lengths do not fit ends it with
// DATA_LOSS.
#ifndef SPINNIC_CONTROL_SPINCTL_PCAP_READER_H_
#define SPINNIC_CONTROL_SPINCTL_PCAP_READER_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace spinnic::spinctl {

inline constexpr size_t kPcapFileHeaderBytes = 24;
inline constexpr size_t kPcapRecordHeaderBytes = 16;
inline constexpr uint32_t kPcapLinkTypeEthernet = 1;
// Wireshark's own ceiling on a record (WTAP_MAX_PACKET_SIZE_STANDARD): a
// record header claiming more is corrupt, not a jumbo frame.
inline constexpr uint32_t kPcapMaxRecordBytes = 262144;

// pcapng's block overhead (type, two lengths) and its largest number of
// interfaces per section we keep (each costs a few bytes; a file claiming
// more is corrupt).
inline constexpr size_t kPcapngBlockOverheadBytes = 12;
inline constexpr size_t kPcapngMaxInterfaces = 4096;

struct PcapFileHeader {
  bool pcapng = false;        // a pcapng file (else classic pcap)
  bool byte_swapped = false;  // written on a host of the other byte order
                              // (pcapng: its first section)
  bool nanosecond = false;    // timestamps' second fraction is in ns
                              // (pcapng: see PcapRecord::nanosecond)
  uint16_t version_major = 0;
  uint16_t version_minor = 0;
  uint32_t snaplen = 0;    // pcapng: the first interface's (0 until read)
  uint32_t link_type = 0;  // LINKTYPE_*, low 16 bits of the header field
};

struct PcapRecord {
  uint64_t index = 0;             // 1-based, as Wireshark numbers frames
  uint64_t timestamp_ns = 0;      // since the Unix epoch
  uint32_t original_length = 0;   // on the wire
  std::span<const uint8_t> data;  // what was captured (may be shorter)
  // The timestamp's resolution is finer than a microsecond (classic pcap:
  // the file's; pcapng: the interface's if_tsresol).
  bool nanosecond = false;

  bool cut_by_snaplen() const { return data.size() < original_length; }
};

class PcapReader {
 public:
  // Checks the file header (pcapng: the first Section Header Block).
  // INVALID_ARGUMENT says what the bytes are instead (empty, too short,
  // unknown magic, not Ethernet, a pcapng section of another version).
  static absl::StatusOr<PcapReader> Open(std::span<const uint8_t> file);

  const PcapFileHeader& header() const { return header_; }

  // The next record: true with `record` filled (its data points into the
  // file), false at the end of the file or on a corrupt record; status()
  // tells which. Once false, stays false.
  bool Next(PcapRecord* record);

  // OK at a clean end (or before it); else DATA_LOSS naming the record and
  // file offset (a record cut short by the end of the file, an impossible
  // length), or for pcapng INVALID_ARGUMENT (a packet on a non-Ethernet or
  // undescribed interface, a section of another version).
  const absl::Status& status() const { return status_; }

 private:
  // A pcapng interface: what its packets need.
  struct Interface {
    uint16_t link_type = 0;
    uint32_t snaplen = 0;
    // if_tsresol: units of 10^-exponent s (decimal) or 2^-exponent s.
    bool binary = false;
    uint8_t exponent = 6;
  };

  PcapReader(std::span<const uint8_t> file, const PcapFileHeader& header,
             bool little_endian, size_t offset)
      : file_(file),
        header_(header),
        little_endian_(little_endian),
        offset_(offset) {}
  static absl::StatusOr<PcapReader> OpenPcapng(std::span<const uint8_t> file);
  uint16_t Load16(size_t offset) const;
  uint32_t Load32(size_t offset) const;
  bool NextPcap(PcapRecord* record);
  bool NextPcapng(PcapRecord* record);
  bool Fail(absl::Status status);
  // pcapng blocks at offset_, `length` bytes long, already checked.
  absl::Status ReadSectionHeader(size_t length);
  absl::Status ReadInterface(size_t length);
  absl::Status ReadPacket(uint32_t type, size_t length, PcapRecord* record);

  std::span<const uint8_t> file_;
  PcapFileHeader header_;
  bool little_endian_;
  size_t offset_;
  uint64_t records_ = 0;
  bool done_ = false;
  absl::Status status_;
  std::vector<Interface> interfaces_;  // pcapng: the current section's
};

}  // namespace spinnic::spinctl

#endif  // SPINNIC_CONTROL_SPINCTL_PCAP_READER_H_
