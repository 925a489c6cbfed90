// Fuzz target for the RoCEv2 CNP parser (dataplane/roce/cnp.h): the input is
// one received frame. spinnic::ParseFrame (dataplane/classifier.h) finds the
// IP/UDP offsets; roce::ParseCnp then runs on a copy with those offsets, the
// fixed ones of an untagged frame (14/34, 14/54) and offsets taken from the
// input. Besides "never touches bytes outside the frame" (ASan), every run
// must satisfy:
//   - the frame is byte-identical afterwards (the ICRC check masks fields in
//     place and must restore them);
//   - an accepted CNP has a UDP payload of exactly BTH + 16 + ICRC bytes,
//     opcode 0x81, a 24-bit DestQP, and the reference ICRC agrees;
//   - the RC parser (roce::ParseFrame) never accepts it;
//   - BuildCnp for that DestQP, with the frame's own IP and UDP fields,
//     where the builder can express them (untagged, no IPv4 id/flags it
//     does not write), gives a frame that ParseCnp accepts with the same
//     DestQP.
// Seeds: tests/fuzz/corpus/cnp/ (the ConnectX example and broken copies).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "dataplane/classifier.h"
#include "dataplane/common/byte_order.h"
#include "dataplane/roce/cnp.h"
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

void CheckRebuild(const std::vector<uint8_t>& frame, const Cnp& cnp,
                  uint32_t ip_offset) {
  if (ip_offset != kEthernetBytes) return;  // the builder writes no tags here
  FrameParams params;
  std::memcpy(params.dst_mac.data(), frame.data(), 6);
  std::memcpy(params.src_mac.data(), frame.data() + 6, 6);
  params.ip_version = cnp.ip_version;
  params.src_ip = cnp.src_ip;
  params.dst_ip = cnp.dst_ip;
  params.udp_src_port = cnp.src_port;
  std::vector<uint8_t> rebuilt(256);
  const uint32_t n = BuildCnp(params, cnp.dest_qp, rebuilt.data(),
                              static_cast<uint32_t>(rebuilt.size()), cnp.pkey);
  FUZZ_CHECK(n == CnpFrameBytes(cnp.ip_version));
  Cnp again;
  const uint32_t udp_offset =
      ip_offset + (cnp.ip_version == 4 ? kIpv4Bytes : kIpv6Bytes);
  FUZZ_CHECK(ParseCnp(rebuilt.data(), n, ip_offset, udp_offset, &again) ==
             ParseError::kNone);
  FUZZ_CHECK(again.dest_qp == cnp.dest_qp && again.pkey == cnp.pkey);
  FUZZ_CHECK(again.src_ip == cnp.src_ip && again.dst_ip == cnp.dst_ip);
}

void Check(const uint8_t* data, uint32_t size, uint32_t ip_offset,
           uint32_t udp_offset) {
  std::vector<uint8_t> frame(data, data + size);
  Cnp cnp;
  const ParseError error =
      ParseCnp(frame.data(), size, ip_offset, udp_offset, &cnp);
  FUZZ_CHECK(size == 0 || std::memcmp(frame.data(), data, size) == 0);
  FUZZ_CHECK(error < ParseError::kCount);
  if (error != ParseError::kNone) return;

  FUZZ_CHECK(cnp.ip_version == 4 || cnp.ip_version == 6);
  FUZZ_CHECK(cnp.dest_qp < (1u << 24));
  const uint32_t udp_length = LoadBe16(frame.data() + udp_offset + 4);
  FUZZ_CHECK(udp_length == kUdpBytes + kCnpUdpPayloadBytes);
  FUZZ_CHECK(uint64_t{udp_offset} + udp_length <= size);
  FUZZ_CHECK(frame[udp_offset + kUdpBytes] == kCnpOpcode);
  FUZZ_CHECK(LooksLikeCnp(frame.data(), size, udp_offset));
  const uint32_t icrc_offset = udp_offset + udp_length - kIcrcBytes;
  uint32_t reference = 0;
  FUZZ_CHECK(ComputeIcrcReference(frame.data(), size,
                                  IcrcSpan{ip_offset, udp_offset, icrc_offset},
                                  &reference));
  FUZZ_CHECK(reference == LoadLe32(frame.data() + icrc_offset));
  Packet packet;
  FUZZ_CHECK(ParseFrame(frame.data(), size, ip_offset, udp_offset, &packet) !=
             ParseError::kNone);
  CheckRebuild(frame, cnp, ip_offset);
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
  Check(data, length, 14, 34);
  Check(data, length, 14, 54);
  if (length >= 2) Check(data, length, data[0] % 64, data[1] % 96);
  return 0;
}
