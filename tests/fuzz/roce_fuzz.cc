// Fuzz target for the RoCEv2 frame parser (dataplane/roce/wire.h): the input
// is one received frame. spinnic::ParseFrame (dataplane/classifier.h) finds
// the IP/UDP offsets (VLAN tags included); roce::ParseFrame then runs on a
// copy with those offsets and with the fixed ones of an untagged frame
// (14/34, 14/54). Besides "never touches bytes outside the frame" (ASan),
// every run must satisfy:
//   - the frame is byte-identical afterwards (the ICRC masks fields in place
//     and must restore them);
//   - an accepted packet's offsets are ordered and inside the frame,
//     payload_offset + payload_length + pad_count = icrc_offset, info is
//     GetOpcodeInfo(opcode), and the reference ICRC agrees;
//   - where the builder can express the frame (untagged or one 802.1Q tag,
//     no IPv4 reserved flag, the UDP checksum policy the builder has),
//     BuildFrame from the parsed fields gives back the same bytes up to the
//     ICRC, and that frame parses again.
// Seeds: tests/fuzz/corpus/roce/ (python3 tests/unit/roce/roce_golden.py
// --seeds tests/fuzz/corpus/roce).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "dataplane/classifier.h"
#include "dataplane/common/byte_order.h"
#include "dataplane/roce/icrc.h"
#include "dataplane/roce/wire.h"
#include "tests/common/icrc_reference.h"

namespace spinnic::roce {
namespace {

#define FUZZ_CHECK(cond)                                                    \
  do {                                                                      \
    if (!(cond)) {                                                          \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
                   #cond);                                                  \
      std::abort();                                                         \
    }                                                                       \
  } while (0)

uint16_t Get16(const uint8_t* p) { return LoadBe16(p); }

void CheckRebuild(const std::vector<uint8_t>& frame, const Packet& p) {
  FrameParams params;
  if (p.ip_offset == kEthernetBytes) {
    params.vlan = false;
  } else if (p.ip_offset == kEthernetBytes + kVlanTagBytes &&
             Get16(frame.data() + 12) == kEtherTypeVlan) {
    params.vlan = true;
    params.vlan_tci = Get16(frame.data() + 14);
  } else {
    return;  // QinQ or odd offsets: not something the builder writes
  }
  const uint16_t ethertype = Get16(frame.data() + p.ip_offset - 2);
  if (ethertype != (p.ip_version == 4 ? kEtherTypeIpv4 : kEtherTypeIpv6)) {
    return;
  }
  const uint8_t* ip = frame.data() + p.ip_offset;
  if (p.ip_version == 4) {
    if ((ip[6] & 0x80) != 0 || p.udp_checksum != 0) return;
    params.ipv4_id = Get16(ip + 4);
    params.ipv4_dont_fragment = (ip[6] & 0x40) != 0;
  } else {
    params.ipv6_udp_checksum = p.udp_checksum != 0;
  }
  std::memcpy(params.dst_mac.data(), frame.data(), 6);
  std::memcpy(params.src_mac.data(), frame.data() + 6, 6);
  params.ip_version = p.ip_version;
  params.src_ip = p.src_ip;
  params.dst_ip = p.dst_ip;
  params.traffic_class = p.traffic_class;
  params.hop_limit = p.hop_limit;
  params.flow_label = p.flow_label;
  params.udp_src_port = p.src_port;

  const uint32_t headers = HeaderBytes(p.ip_version, p.bth.opcode, params.vlan);
  FUZZ_CHECK(headers == p.payload_offset);
  std::vector<uint8_t> out(
      FrameBytes(p.ip_version, p.bth.opcode, p.payload_length, params.vlan));
  FUZZ_CHECK(out.size() == p.icrc_offset + kIcrcBytes);
  std::memcpy(out.data() + headers, frame.data() + p.payload_offset,
              p.payload_length);
  // The builder writes zero pad bytes; a sender may not have.
  bool zero_pad = true;
  for (uint32_t i = 0; i < p.pad_count; ++i) {
    zero_pad &= frame[p.payload_offset + p.payload_length + i] == 0;
  }
  const uint32_t length =
      BuildFrame(params, p.bth, p.ext, p.payload_length, out.data(),
                 static_cast<uint32_t>(out.size()));
  FUZZ_CHECK(length == out.size());
  if (zero_pad) {
    FUZZ_CHECK(std::memcmp(out.data(), frame.data(), out.size()) == 0);
  }
  Packet again;
  FUZZ_CHECK(ParseFrame(out.data(), length, p.ip_offset, p.udp_offset,
                        &again) == ParseError::kNone);
  FUZZ_CHECK(again.payload_length == p.payload_length);
  FUZZ_CHECK(again.bth.psn == p.bth.psn);
}

void Check(const uint8_t* data, uint32_t size, uint32_t ip_offset,
           uint32_t udp_offset) {
  std::vector<uint8_t> frame(data, data + size);
  Packet p;
  const ParseError error =
      ParseFrame(frame.data(), size, ip_offset, udp_offset, &p);
  FUZZ_CHECK(size == 0 || std::memcmp(frame.data(), data, size) == 0);
  FUZZ_CHECK(error < ParseError::kCount);
  if (error != ParseError::kNone) return;

  FUZZ_CHECK(p.ip_version == 4 || p.ip_version == 6);
  FUZZ_CHECK(p.ip_offset == ip_offset && p.udp_offset == udp_offset);
  FUZZ_CHECK(p.ip_offset >= kIcrcLrhBytes);
  FUZZ_CHECK(p.ip_offset < p.udp_offset);
  FUZZ_CHECK(p.bth_offset == p.udp_offset + kUdpBytes);
  FUZZ_CHECK(p.ext_offset == p.bth_offset + kBthBytes);
  FUZZ_CHECK(p.info == &GetOpcodeInfo(p.bth.opcode) && p.info->valid());
  FUZZ_CHECK(p.payload_offset == p.ext_offset + p.info->ext_bytes);
  FUZZ_CHECK(p.payload_offset + p.payload_length + p.pad_count ==
             p.icrc_offset);
  FUZZ_CHECK(uint64_t{p.icrc_offset} + kIcrcBytes <= size);
  FUZZ_CHECK(p.pad_count <= 3 && p.bth.tver == 0);
  FUZZ_CHECK(p.info->has(kHasPayload) ||
             (p.payload_length == 0 && p.pad_count == 0));
  FUZZ_CHECK(p.dst_port == kRoceUdpPort);
  uint32_t reference = 0;
  FUZZ_CHECK(ComputeIcrcReference(
      frame.data(), size, IcrcSpan{p.ip_offset, p.udp_offset, p.icrc_offset},
      &reference));
  const uint8_t* icrc = frame.data() + p.icrc_offset;
  FUZZ_CHECK(reference == (uint32_t{icrc[0]} | uint32_t{icrc[1]} << 8 |
                           uint32_t{icrc[2]} << 16 | uint32_t{icrc[3]} << 24));
  CheckRebuild(frame, p);
}

}  // namespace
}  // namespace spinnic::roce

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spinnic::roce;
  if (size > 0xffff) return 0;
  const uint32_t length = static_cast<uint32_t>(size);
  spinnic::ParsedFrame parsed;
  spinnic::ParseFrame(data, length, &parsed);
  if ((parsed.layers.is_ipv4 || parsed.layers.is_ipv6) &&
      parsed.layers.l4_offset != spinnic::PacketLayers::kAbsent) {
    Check(data, length, parsed.layers.l3_offset, parsed.layers.l4_offset);
  }
  // Offsets the classifier would not give (mismatched, out of range) must
  // be refused just as safely.
  Check(data, length, 14, 34);
  Check(data, length, 14, 54);
  if (length >= 2) Check(data, length, data[0] % 64, data[1] % 96);
  return 0;
}
