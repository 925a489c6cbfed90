#include "bench/linerate/gen/probe.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "dataplane/common/checksum.h"

namespace spinnic::gen {
namespace {

constexpr uint16_t kEtherTypeIpv4 = 0x0800;
constexpr uint16_t kEtherTypeVlan = 0x8100;
constexpr uint16_t kEtherTypeQinQ = 0x88a8;
constexpr uint8_t kProtoUdp = 17;

}  // namespace

const char* ProbeParseName(ProbeParse result) {
  switch (result) {
    case ProbeParse::kOk:
      return "ok";
    case ProbeParse::kTruncated:
      return "truncated";
    case ProbeParse::kNotIpv4Udp:
      return "not_ipv4_udp";
    case ProbeParse::kFragment:
      return "fragment";
    case ProbeParse::kBadMagic:
      return "bad_magic";
  }
  return "?";
}

ProbeParse ParseProbe(const uint8_t* head, size_t head_len, size_t frame_len,
                      Probe* out) {
  // Only the bytes that are both in the head and in the frame are real.
  const size_t len = std::min(head_len, frame_len);
  if (head == nullptr || len < kEthHeaderBytes) return ProbeParse::kTruncated;

  size_t l3 = kEthHeaderBytes;
  uint16_t ethertype = LoadBe16(head + 12);
  for (int tags = 0;
       tags < 2 && (ethertype == kEtherTypeVlan || ethertype == kEtherTypeQinQ);
       ++tags) {
    if (len < l3 + 4) return ProbeParse::kTruncated;
    ethertype = LoadBe16(head + l3 + 2);
    l3 += 4;
  }
  if (ethertype != kEtherTypeIpv4) return ProbeParse::kNotIpv4Udp;

  if (len < l3 + kIpv4HeaderBytes) return ProbeParse::kTruncated;
  const uint8_t* ip = head + l3;
  if ((ip[0] >> 4) != 4) return ProbeParse::kNotIpv4Udp;
  const size_t ihl = size_t{ip[0] & 0x0fu} * 4;
  if (ihl < kIpv4HeaderBytes) return ProbeParse::kNotIpv4Udp;
  if (ip[9] != kProtoUdp) return ProbeParse::kNotIpv4Udp;
  // More fragments, or a fragment offset: not a whole datagram.
  if ((LoadBe16(ip + 6) & 0x3fff) != 0) return ProbeParse::kFragment;

  const size_t ip_total = LoadBe16(ip + 2);
  const size_t l4 = l3 + ihl;
  const size_t probe_at = l4 + kUdpHeaderBytes;
  const size_t probe_end = probe_at + sizeof(ProbeHeader);
  // The IP datagram must fit in the frame and hold UDP and the probe.
  if (ip_total < ihl + kUdpHeaderBytes + sizeof(ProbeHeader) ||
      l3 + ip_total > frame_len) {
    return ProbeParse::kTruncated;
  }
  if (len < probe_end) return ProbeParse::kTruncated;
  const size_t udp_len = LoadBe16(head + l4 + 4);
  if (udp_len < kUdpHeaderBytes + sizeof(ProbeHeader) ||
      udp_len > ip_total - ihl) {
    return ProbeParse::kTruncated;
  }

  const uint8_t* probe = head + probe_at;
  if (std::memcmp(probe + offsetof(ProbeHeader, magic), kProbeMagic.data(),
                  kProbeMagic.size()) != 0) {
    return ProbeParse::kBadMagic;
  }
  out->stream = LoadBe16(probe + offsetof(ProbeHeader, stream));
  out->seq = LoadBe64(probe + offsetof(ProbeHeader, seq));
  out->tx_tsc = LoadBe64(probe + offsetof(ProbeHeader, tx_tsc));
  return ProbeParse::kOk;
}

absl::Status BuildProbeFrame(const FrameSpec& spec, absl::Span<uint8_t> out) {
  if (spec.size < kMinFrameBytes || spec.size > kMaxFrameBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("frame size ", spec.size, " B is outside ", kMinFrameBytes,
                     "..", kMaxFrameBytes,
                     " (bytes without FCS; 64 B is the smallest that holds "
                     "Ethernet, IPv4, UDP and the 22-byte probe)"));
  }
  if (out.size() < spec.size) {
    return absl::InvalidArgumentError(
        absl::StrCat("frame buffer of ", out.size(),
                     " B is smaller than the frame size ", spec.size, " B"));
  }
  uint8_t* f = out.data();
  std::memset(f, 0, spec.size);
  std::memcpy(f, spec.dst_mac.data(), 6);
  std::memcpy(f + 6, spec.src_mac.data(), 6);
  StoreBe16(f + 12, kEtherTypeIpv4);

  uint8_t* ip = f + kEthHeaderBytes;
  ip[0] = 0x45;  // version 4, IHL 5
  ip[1] = 0;     // DSCP/ECN
  StoreBe16(ip + 2, static_cast<uint16_t>(spec.size - kEthHeaderBytes));
  StoreBe16(ip + 4, 0);       // identification (DF set: never fragmented)
  StoreBe16(ip + 6, 0x4000);  // DF
  ip[8] = 64;                 // TTL
  ip[9] = kProtoUdp;
  StoreBe16(ip + 12, static_cast<uint16_t>(spec.src_ip >> 16));
  StoreBe16(ip + 14, static_cast<uint16_t>(spec.src_ip));
  StoreBe16(ip + 16, static_cast<uint16_t>(spec.dst_ip >> 16));
  StoreBe16(ip + 18, static_cast<uint16_t>(spec.dst_ip));
  StoreBe16(ip + 10, checksum::Compute(ip, kIpv4HeaderBytes));

  uint8_t* udp = ip + kIpv4HeaderBytes;
  StoreBe16(udp, spec.src_port);
  StoreBe16(udp + 2, spec.dst_port);
  StoreBe16(udp + 4, static_cast<uint16_t>(spec.size - kEthHeaderBytes -
                                           kIpv4HeaderBytes));
  StoreBe16(udp + 6, 0);  // no checksum

  std::memcpy(f + kProbeOffset, kProbeMagic.data(), kProbeMagic.size());
  return absl::OkStatus();
}

}  // namespace spinnic::gen
