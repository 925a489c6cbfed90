#include "dataplane/impair/impairment_model.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace spinnic::impair {
namespace {

// Distinct, arbitrary constants: one stream per impairment kind.
constexpr uint64_t kLossStream = 0x6c6f7373ULL;       // "loss"
constexpr uint64_t kDuplicateStream = 0x64757065ULL;  // "dupe"
constexpr uint64_t kCorruptStream = 0x636f7272ULL;    // "corr"
constexpr uint64_t kReorderStream = 0x72656f72ULL;    // "reor"
constexpr uint64_t kDelayStream = 0x64656c61ULL;      // "dela"

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
  return absl::OkStatus();
}

std::string DescribeImpairConfig(const ImpairConfig& config) {
  return absl::StrFormat(
      "seed=%u loss=%g duplicate=%g reorder=%g reorder_depth=%u "
      "reorder_timeout_us=%u corrupt=%g corrupt_from=%u delay_us=%u "
      "jitter_us=%u",
      config.seed, config.loss, config.duplicate, config.reorder,
      config.reorder_depth, config.reorder_timeout_us, config.corrupt,
      config.corrupt_from, config.delay_us, config.jitter_us);
}

ImpairmentModel::ImpairmentModel(const ImpairConfig& config, uint64_t stream)
    : config_(config),
      loss_rng_(StreamSeed(config.seed, stream, kLossStream)),
      duplicate_rng_(StreamSeed(config.seed, stream, kDuplicateStream)),
      corrupt_rng_(StreamSeed(config.seed, stream, kCorruptStream)),
      reorder_rng_(StreamSeed(config.seed, stream, kReorderStream)),
      delay_rng_(StreamSeed(config.seed, stream, kDelayStream)) {}

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

}  // namespace spinnic::impair
