#include "dataplane/impair/impairment_model.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "dataplane/common/byte_order.h"

namespace spinnic::impair {
namespace {

// Distinct, arbitrary constants: one stream per impairment kind.
constexpr uint64_t kLossStream = 0x6c6f7373ULL;       // "loss"
constexpr uint64_t kDuplicateStream = 0x64757065ULL;  // "dupe"
constexpr uint64_t kCorruptStream = 0x636f7272ULL;    // "corr"
constexpr uint64_t kReorderStream = 0x72656f72ULL;    // "reor"
constexpr uint64_t kDelayStream = 0x64656c61ULL;      // "dela"
constexpr uint64_t kMarkStream = 0x6d61726bULL;       // "mark"

constexpr uint16_t kEtherTypeIpv4 = 0x0800;
constexpr uint16_t kEtherTypeIpv6 = 0x86dd;
constexpr uint16_t kEtherTypeVlan = 0x8100;
constexpr uint16_t kEtherTypeQinQ = 0x88a8;
constexpr uint32_t kEthernetHeaderBytes = 14;
constexpr uint32_t kVlanTagBytes = 4;
constexpr uint32_t kIpv4MinHeaderBytes = 20;
constexpr uint32_t kIpv6HeaderBytes = 40;

uint64_t StreamSeed(uint64_t seed, uint64_t direction, uint64_t kind) {
  uint64_t state = seed;
  uint64_t a = SplitMix64(state);
  state = a ^ (direction * 0xd1b54a32d192ed03ULL) ^ (kind << 1);
  return SplitMix64(state);
}

absl::Status Invalid(absl::string_view prefix, absl::string_view field,
                     absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(prefix, field, ": ", what));
}

absl::Status CheckProbability(absl::string_view prefix, absl::string_view field,
                              double p) {
  if (std::isfinite(p) && p >= 0 && p <= 1) return absl::OkStatus();
  return Invalid(prefix, field,
                 absl::StrFormat("%g is not a probability; write a number in "
                                 "[0, 1], e.g. 0.01 for 1%%",
                                 p));
}

absl::Status CheckMicros(absl::string_view prefix, absl::string_view field,
                         uint64_t us, uint64_t min) {
  if (us >= min && us <= kMaxDelayUs) return absl::OkStatus();
  return Invalid(
      prefix, field,
      absl::StrCat(us, " us is out of range; write microseconds in [", min,
                   ", ", kMaxDelayUs, "]"));
}

absl::Status ValidateBottleneck(const ImpairConfig& config,
                                absl::string_view prefix) {
  if (config.rate_bps > kMaxRateBps) {
    return Invalid(prefix, "rate_bps",
                   absl::StrCat(config.rate_bps,
                                " is above 1 Tb/s; write bits per second, "
                                "e.g. 10e9 for 10 Gb/s, or 0 for no "
                                "bottleneck"));
  }
  if (config.bottleneck_frames < 1 ||
      config.bottleneck_frames > kMaxBottleneckFrames) {
    return Invalid(prefix, "bottleneck_frames",
                   absl::StrCat(config.bottleneck_frames,
                                " is out of range; write how many frames the "
                                "bottleneck queue holds, 1..",
                                kMaxBottleneckFrames));
  }
  if (config.frame_overhead_bytes > kMaxFrameOverheadBytes) {
    return Invalid(prefix, "frame_overhead_bytes",
                   absl::StrCat(config.frame_overhead_bytes,
                                " is out of range; write the wire bytes per "
                                "frame besides pkt_len, 0..",
                                kMaxFrameOverheadBytes,
                                " (24: preamble, FCS, inter-frame gap)"));
  }
  if (config.ecn_min_frames > config.ecn_max_frames) {
    return Invalid(
        prefix, "ecn_min_frames",
        absl::StrCat(config.ecn_min_frames, " is above ecn_max_frames (",
                     config.ecn_max_frames,
                     "); write min <= max (equal: one threshold)"));
  }
  if (config.ecn_max_frames > config.bottleneck_frames) {
    return Invalid(
        prefix, "ecn_max_frames",
        absl::StrCat(config.ecn_max_frames, " is above bottleneck_frames (",
                     config.bottleneck_frames,
                     "); a queue never gets that deep, write at "
                     "most the queue's size"));
  }
  if (config.ecn_max_frames != 0 && config.rate_bps == 0) {
    return Invalid(prefix, "ecn_max_frames",
                   "ECN marking needs a bottleneck for a queue to build; set "
                   "rate_bps too, or write 0");
  }
  if (!(std::isfinite(config.ecn_max_probability) &&
        config.ecn_max_probability > 0 && config.ecn_max_probability <= 1)) {
    return Invalid(
        prefix, "ecn_max_probability",
        absl::StrFormat("%g is not a probability in (0, 1]; write the marking "
                        "probability reached at ecn_max_frames, e.g. 0.2",
                        config.ecn_max_probability));
  }
  return absl::OkStatus();
}

uint16_t OnesComplementAdd(uint32_t a, uint32_t b) {
  uint32_t sum = a + b;
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(sum);
}

}  // namespace

absl::Status ValidateImpairConfig(const ImpairConfig& config,
                                  absl::string_view prefix) {
  for (auto [field, p] :
       {std::pair<absl::string_view, double>{"loss", config.loss},
        {"duplicate", config.duplicate},
        {"reorder", config.reorder},
        {"corrupt", config.corrupt}}) {
    if (absl::Status s = CheckProbability(prefix, field, p); !s.ok()) return s;
  }
  if (config.reorder_depth < 1 || config.reorder_depth > kMaxReorderDepth) {
    return Invalid(prefix, "reorder_depth",
                   absl::StrCat(config.reorder_depth,
                                " is out of range; write how many later "
                                "packets may overtake a reordered one, 1..",
                                kMaxReorderDepth));
  }
  if (absl::Status s = CheckMicros(prefix, "reorder_timeout_us",
                                   config.reorder_timeout_us, 1);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckMicros(prefix, "delay_us", config.delay_us, 0);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckMicros(prefix, "jitter_us", config.jitter_us, 0);
      !s.ok()) {
    return s;
  }
  if (config.corrupt_from > 65535) {
    return Invalid(prefix, "corrupt_from",
                   absl::StrCat(config.corrupt_from,
                                " is beyond any frame; write the first byte "
                                "offset corruption may touch, 0..65535 "
                                "(14 skips the Ethernet header)"));
  }
  return ValidateBottleneck(config, prefix);
}

std::string DescribeImpairConfig(const ImpairConfig& config) {
  return absl::StrFormat(
      "seed=%u loss=%g duplicate=%g reorder=%g reorder_depth=%u "
      "reorder_timeout_us=%u corrupt=%g corrupt_from=%u delay_us=%u "
      "jitter_us=%u rate_bps=%u bottleneck_frames=%u "
      "frame_overhead_bytes=%u ecn_min_frames=%u ecn_max_frames=%u "
      "ecn_max_probability=%g",
      config.seed, config.loss, config.duplicate, config.reorder,
      config.reorder_depth, config.reorder_timeout_us, config.corrupt,
      config.corrupt_from, config.delay_us, config.jitter_us, config.rate_bps,
      config.bottleneck_frames, config.frame_overhead_bytes,
      config.ecn_min_frames, config.ecn_max_frames, config.ecn_max_probability);
}

ImpairmentModel::ImpairmentModel(const ImpairConfig& config, uint64_t stream)
    : config_(config),
      loss_rng_(StreamSeed(config.seed, stream, kLossStream)),
      duplicate_rng_(StreamSeed(config.seed, stream, kDuplicateStream)),
      corrupt_rng_(StreamSeed(config.seed, stream, kCorruptStream)),
      reorder_rng_(StreamSeed(config.seed, stream, kReorderStream)),
      delay_rng_(StreamSeed(config.seed, stream, kDelayStream)),
      mark_rng_(StreamSeed(config.seed, stream, kMarkStream)) {}

PacketFate ImpairmentModel::DecidePacket() {
  PacketFate fate;
  fate.lost = loss_rng_.Bernoulli(config_.loss);
  if (!fate.lost) fate.duplicate = duplicate_rng_.Bernoulli(config_.duplicate);
  return fate;
}

CopyFate ImpairmentModel::DecideCopy(uint32_t length) {
  CopyFate fate;
  if (corrupt_rng_.Bernoulli(config_.corrupt) &&
      length > config_.corrupt_from) {
    fate.corrupt = true;
    fate.corrupt_offset =
        config_.corrupt_from + static_cast<uint32_t>(corrupt_rng_.Below(
                                   length - config_.corrupt_from));
    fate.corrupt_bit = static_cast<uint8_t>(corrupt_rng_.Below(8));
  }
  if (reorder_rng_.Bernoulli(config_.reorder)) {
    fate.reorder = true;
    fate.reorder_after =
        1 + static_cast<uint32_t>(reorder_rng_.Below(config_.reorder_depth));
  }
  fate.delay_us = config_.delay_us;
  if (config_.jitter_us > 0) {
    fate.delay_us += delay_rng_.Below(config_.jitter_us + 1);
  }
  return fate;
}

bool ImpairmentModel::DecideMark(uint32_t depth) {
  if (config_.ecn_max_frames == 0 || depth < config_.ecn_min_frames) {
    return false;
  }
  if (depth >= config_.ecn_max_frames) return true;
  // min <= depth < max, so max > min: the linear ramp of RED.
  const double p =
      config_.ecn_max_probability *
      static_cast<double>(depth - config_.ecn_min_frames) /
      static_cast<double>(config_.ecn_max_frames - config_.ecn_min_frames);
  if (p <= 0) return false;
  return mark_rng_.Bernoulli(p);
}

uint32_t DepthHistogram::Percentile(double q) const {
  if (samples_ == 0) return 0;
  // The rank of the sample at quantile q (1-based), at least 1.
  const double wanted = std::ceil(q * static_cast<double>(samples_));
  const uint64_t rank = wanted < 1 ? 1 : static_cast<uint64_t>(wanted);
  uint64_t seen = 0;
  for (uint32_t i = 0; i < kDepthBuckets; ++i) {
    seen += counts_[i];
    if (seen >= rank) return std::min((i + 1) * width_ - 1, capacity_);
  }
  return capacity_;
}

EcnField FindEcnField(const uint8_t* frame, uint32_t length) {
  EcnField field;
  if (length < kEthernetHeaderBytes) return field;
  uint32_t offset = 12;
  uint16_t ether_type = LoadBe16(frame + offset);
  for (int tags = 0; tags < 2 && (ether_type == kEtherTypeVlan ||
                                  ether_type == kEtherTypeQinQ);
       ++tags) {
    offset += kVlanTagBytes;
    if (length < offset + 2) return field;
    ether_type = LoadBe16(frame + offset);
  }
  const uint32_t l3 = offset + 2;
  if (ether_type == kEtherTypeIpv4) {
    if (length < l3 + kIpv4MinHeaderBytes || (frame[l3] >> 4) != 4) {
      return field;
    }
    field.kind = EcnField::Kind::kIpv4;
    field.codepoint = static_cast<EcnCodepoint>(frame[l3 + 1] & 3);
  } else if (ether_type == kEtherTypeIpv6) {
    if (length < l3 + kIpv6HeaderBytes || (frame[l3] >> 4) != 6) return field;
    field.kind = EcnField::Kind::kIpv6;
    // Traffic class: the low nibble of byte 0, the high nibble of byte 1;
    // ECN is its two low bits.
    field.codepoint = static_cast<EcnCodepoint>((frame[l3 + 1] >> 4) & 3);
  } else {
    return field;
  }
  field.l3_offset = l3;
  return field;
}

MarkResult MarkCongestionExperienced(uint8_t* frame, uint32_t length) {
  const EcnField field = FindEcnField(frame, length);
  if (field.kind == EcnField::Kind::kNotIp ||
      field.codepoint == EcnCodepoint::kNotEct) {
    return MarkResult::kNotEct;
  }
  if (field.codepoint == EcnCodepoint::kCe) return MarkResult::kAlreadyCe;
  uint8_t* ip = frame + field.l3_offset;
  if (field.kind == EcnField::Kind::kIpv6) {
    ip[1] |= 0x30;
    return MarkResult::kMarked;
  }
  // RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), m the 16-bit word holding the
  // TOS byte. One's complement sums do not care about byte order as long as
  // every term is read the same way.
  const uint16_t old_word = LoadBe16(ip);
  ip[1] |= 0x03;
  const uint16_t new_word = LoadBe16(ip);
  const uint16_t old_checksum = LoadBe16(ip + 10);
  const uint16_t sum =
      OnesComplementAdd(OnesComplementAdd(static_cast<uint16_t>(~old_checksum),
                                          static_cast<uint16_t>(~old_word)),
                        new_word);
  StoreBe16(ip + 10, static_cast<uint16_t>(~sum));
  return MarkResult::kMarked;
}

}  // namespace spinnic::impair
