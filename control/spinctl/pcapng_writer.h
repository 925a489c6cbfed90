// The pcapng blocks `spinctl capture` writes (the pcapng format, IETF draft
// draft-ietf-opsawg-pcapng): a Section Header Block, one Interface
// Description Block per captured port (if_name, if_tsresol of nanoseconds,
// if_filter), and an Enhanced Packet Block per frame, whose opt_comment
// carries a dropped frame's reason. Little-endian whatever the host, so
// the same frames give the same bytes. Pure functions: no I/O.
//
// Not DPDK's rte_pcapng: that one needs EAL mempools and cannot add a
// comment to a packet, and spinctl runs without the EAL.
#ifndef SPINNIC_CONTROL_SPINCTL_PCAPNG_WRITER_H_
#define SPINNIC_CONTROL_SPINCTL_PCAPNG_WRITER_H_

#include <cstdint>
#include <span>
#include <string>

#include "absl/strings/string_view.h"

namespace spinnic::spinctl {

// The file's first block; `application` goes into shb_userappl.
std::string PcapngSectionHeader(absl::string_view application);

// An Ethernet interface: its `name` (if_name), `description`
// (if_description, may be empty), `snaplen`, and the capture filter
// (if_filter, a libpcap expression; may be empty). Interfaces are numbered
// in the order their blocks are written, from 0.
std::string PcapngInterface(absl::string_view name,
                            absl::string_view description, uint32_t snaplen,
                            absl::string_view filter);

// A frame on interface `interface_id`, stamped in nanoseconds since the
// Unix epoch; `data` may be shorter than `original_length` (the snaplen
// cut it). A non-empty `comment` becomes opt_comment.
std::string PcapngPacket(uint32_t interface_id, uint64_t timestamp_ns,
                         uint32_t original_length,
                         std::span<const uint8_t> data,
                         absl::string_view comment);

}  // namespace spinnic::spinctl

#endif  // SPINNIC_CONTROL_SPINCTL_PCAPNG_WRITER_H_
