// A reader for classic libpcap capture files (the format tcpdump -w and
// `tshark -F pcap` write), for `spinctl decode`. Pure logic over the file's
// bytes: no I/O, no allocation per record, never reads outside the span.
//
// Both byte orders and both timestamp resolutions (magic 0xa1b2c3d4:
// microseconds, 0xa1b23c4d: nanoseconds). pcapng is recognised and refused
// with a hint, as is any link type other than Ethernet.
#ifndef SPINNIC_CONTROL_SPINCTL_PCAP_READER_H_
#define SPINNIC_CONTROL_SPINCTL_PCAP_READER_H_

#include <cstddef>
#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace spinnic::spinctl {

inline constexpr size_t kPcapFileHeaderBytes = 24;
inline constexpr size_t kPcapRecordHeaderBytes = 16;
inline constexpr uint32_t kPcapLinkTypeEthernet = 1;
// Wireshark's own ceiling on a record (WTAP_MAX_PACKET_SIZE_STANDARD): a
// record header claiming more is corrupt, not a jumbo frame.
inline constexpr uint32_t kPcapMaxRecordBytes = 262144;

struct PcapFileHeader {
  bool byte_swapped = false;  // written on a host of the other byte order
  bool nanosecond = false;    // timestamps' second fraction is in ns
  uint16_t version_major = 0;
  uint16_t version_minor = 0;
  uint32_t snaplen = 0;
  uint32_t link_type = 0;  // LINKTYPE_*, low 16 bits of the header field
};

struct PcapRecord {
  uint64_t index = 0;             // 1-based, as Wireshark numbers frames
  uint64_t timestamp_ns = 0;      // since the Unix epoch
  uint32_t original_length = 0;   // on the wire
  std::span<const uint8_t> data;  // what was captured (may be shorter)

  bool cut_by_snaplen() const { return data.size() < original_length; }
};

class PcapReader {
 public:
  // Checks the file header. INVALID_ARGUMENT says what the bytes are
  // instead (empty, too short, pcapng, unknown magic, not Ethernet).
  static absl::StatusOr<PcapReader> Open(std::span<const uint8_t> file);

  const PcapFileHeader& header() const { return header_; }

  // The next record: true with `record` filled (its data points into the
  // file), false at the end of the file or on a corrupt record; status()
  // tells which. Once false, stays false.
  bool Next(PcapRecord* record);

  // OK at a clean end (or before it); else DATA_LOSS naming the record and
  // file offset (a record cut short by the end of the file, an impossible
  // length).
  const absl::Status& status() const { return status_; }

 private:
  PcapReader(std::span<const uint8_t> file, const PcapFileHeader& header,
             bool little_endian)
      : file_(file),
        header_(header),
        little_endian_(little_endian),
        offset_(kPcapFileHeaderBytes) {}
  uint32_t Load32(size_t offset) const;

  std::span<const uint8_t> file_;
  PcapFileHeader header_;
  bool little_endian_;
  size_t offset_;
  uint64_t records_ = 0;
  bool done_ = false;
  absl::Status status_;
};

}  // namespace spinnic::spinctl

#endif  // SPINNIC_CONTROL_SPINCTL_PCAP_READER_H_
