// The impairment model: seeded, per-packet decisions for one direction of
// the impairment stage (loss, duplication, corruption, reordering, delay with
// jitter) and the pure parts of its bottleneck (the link's serialization
// clock, ECN marking decisions and rewrites, the queue depth histogram).
// Pure logic, no EAL: the DPDK side (impair_stage.h) asks it what to do with
// each packet and does it. docs/impair.md describes the semantics.
//
// Determinism: every impairment kind draws from its own xoshiro256** stream,
// seeded (through splitmix64) from the config seed and the kind, so the same
// seed and the same sequence of calls give the same decisions, and the i-th
// loss decision depends on nothing but the seed and i.
#ifndef SPINNIC_DATAPLANE_IMPAIR_IMPAIRMENT_MODEL_H_
#define SPINNIC_DATAPLANE_IMPAIR_IMPAIRMENT_MODEL_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace spinnic::impair {

// splitmix64: seeds the xoshiro streams (and is a fine generator by itself).
inline uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// xoshiro256** 1.0 (Blackman, Vigna): small, fast, good statistical quality.
class Xoshiro256 {
 public:
  explicit Xoshiro256(uint64_t seed) {
    uint64_t sm = seed;
    for (uint64_t& word : s_) word = SplitMix64(sm);
  }
  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1) with 53 bits.
  double NextDouble() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  // true with probability p (p <= 0: never; p >= 1: always).
  bool Bernoulli(double p) { return NextDouble() < p; }
  // Uniform in [0, n) for n >= 1 (Lemire's multiply-shift; the bias is below
  // 2^-32 for the ranges used here).
  uint64_t Below(uint64_t n) {
    __extension__ using Uint128 = unsigned __int128;
    return static_cast<uint64_t>((static_cast<Uint128>(Next()) * n) >> 64);
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

// Limits, also checked by ValidateImpairConfig.
inline constexpr uint32_t kMaxReorderDepth = 64;
inline constexpr uint64_t kMaxDelayUs = 10'000'000;         // 10 s
inline constexpr uint64_t kMaxRateBps = 1'000'000'000'000;  // 1 Tb/s
inline constexpr uint32_t kMaxBottleneckFrames = 1u << 20;
inline constexpr uint32_t kMaxFrameOverheadBytes = 1024;

struct ImpairConfig {
  uint64_t seed = 1;
  // Probabilities in [0, 1].
  double loss = 0;       // a packet is dropped
  double duplicate = 0;  // a surviving packet is sent twice
  double reorder = 0;    // a copy is held back behind later packets
  double corrupt = 0;    // a copy gets one bit flipped
  // A reordered copy is released after the next 1..reorder_depth packets
  // (uniform) of its direction left the stage, or reorder_timeout_us after
  // its own (delayed) departure time, whichever comes first.
  uint32_t reorder_depth = 3;
  uint64_t reorder_timeout_us = 1000;
  // Each copy leaves delay_us + U[0, jitter_us] microseconds after it came
  // in. Jitter can reorder packets (the hold queue releases by time).
  uint64_t delay_us = 0;
  uint64_t jitter_us = 0;
  // Corruption flips one bit of a byte at an offset in [corrupt_from, length)
  // (14: after the Ethernet header, so the frame still reaches its peer and
  // the peer's checksums catch it). Frames no longer than corrupt_from are
  // never corrupted.
  uint32_t corrupt_from = 14;

  // The bottleneck (docs/impair.md, "Bottleneck"): what survives the
  // impairments above waits in one FIFO of at most `bottleneck_frames`
  // frames and leaves at `rate_bps`, as at a switch's congested egress port.
  // 0: no bottleneck (frames leave as soon as the impairments let them).
  uint64_t rate_bps = 0;
  uint32_t bottleneck_frames = 1024;
  // Bytes each frame costs on the wire besides pkt_len: preamble and SFD (8),
  // FCS (4, not in pkt_len), inter-frame gap (12).
  uint32_t frame_overhead_bytes = 24;
  // ECN marking at enqueue, RED-like as DCQCN's switches (Zhu et al.,
  // SIGCOMM 2015, section 3): with d frames already queued, no mark below
  // ecn_min_frames, a mark at or above ecn_max_frames, and in between with
  // probability ecn_max_probability * (d - min) / (max - min). min == max: a
  // plain threshold (DCTCP's K). ecn_max_frames 0: no marking.
  uint32_t ecn_min_frames = 0;
  uint32_t ecn_max_frames = 0;
  double ecn_max_probability = 1.0;
};

// OK, or INVALID_ARGUMENT with one line "<prefix><field>: what is wrong; what
// to write". `prefix` names where the fields come from (e.g. "--" for flags,
// "--a_to_b_" for a direction's overrides).
absl::Status ValidateImpairConfig(const ImpairConfig& config,
                                  absl::string_view prefix = "");

// Whether `config` has a bottleneck, and whether it marks ECN.
inline bool HasBottleneck(const ImpairConfig& config) {
  return config.rate_bps != 0;
}
inline bool MarksEcn(const ImpairConfig& config) {
  return HasBottleneck(config) && config.ecn_max_frames != 0;
}

// One config as a single human-readable line (for logs and the stats JSON).
std::string DescribeImpairConfig(const ImpairConfig& config);

// What happens to one packet as it comes in.
struct PacketFate {
  bool lost = false;
  bool duplicate = false;  // only when !lost
};

// What happens to one copy (the original, or its duplicate) that survived.
struct CopyFate {
  bool corrupt = false;  // flip bit `corrupt_bit` of byte `corrupt_offset`
  uint32_t corrupt_offset = 0;
  uint8_t corrupt_bit = 0;     // 0..7
  bool reorder = false;        // hold until `reorder_after` packets passed
  uint32_t reorder_after = 0;  // 1..reorder_depth when reorder
  uint64_t delay_us = 0;       // delay_us + U[0, jitter_us]
};

class ImpairmentModel {
 public:
  // `config` must be valid (ValidateImpairConfig). `stream` distinguishes
  // models sharing one seed (the two directions of a stage: 0 and 1).
  explicit ImpairmentModel(const ImpairConfig& config, uint64_t stream = 0);

  // The fate of the next packet in: one loss draw, then (if not lost) one
  // duplicate draw.
  PacketFate DecidePacket();
  // The fate of one surviving copy of `length` bytes: corruption (one draw
  // and, when chosen and the frame is long enough, an offset and a bit),
  // reordering (one draw and, when chosen, a depth), delay (a jitter draw
  // when jitter_us > 0). Call once for the original, then once for the
  // duplicate.
  CopyFate DecideCopy(uint32_t length);
  // Whether a frame that finds `depth` frames in the bottleneck queue gets a
  // CE mark (if it is ECT). Draws from its own stream only where the
  // probability is strictly between 0 and 1, so the thresholds alone are
  // deterministic and the other streams never shift.
  bool DecideMark(uint32_t depth);

  const ImpairConfig& config() const { return config_; }

 private:
  ImpairConfig config_;
  Xoshiro256 loss_rng_;
  Xoshiro256 duplicate_rng_;
  Xoshiro256 corrupt_rng_;
  Xoshiro256 reorder_rng_;
  Xoshiro256 delay_rng_;
  Xoshiro256 mark_rng_;
};

// The bottleneck link's clock: when each frame has left, at `rate_bps`,
// work-conserving, FIFO. Times are TSC cycles at `tsc_hz`. The link's busy
// horizon is kept in cycles times rate_bps, so serialization times that are
// not whole cycles add up exactly: after n back-to-back frames of b bits the
// last one leaves at ceil(n * b * tsc_hz / rate_bps) cycles after the first
// started, with no rounding drift.
class LinkClock {
 public:
  LinkClock(uint64_t rate_bps, uint64_t tsc_hz)
      : rate_bps_(rate_bps), tsc_hz_(tsc_hz) {}

  // The time at which a frame of `wire_bytes` (overhead included) that
  // reaches the link at `now` has been sent: it starts when the link is
  // free (now, or when the frame ahead of it ends). rate_bps must be > 0.
  uint64_t Depart(uint64_t now, uint64_t wire_bytes) {
    const Uint128 now_scaled = static_cast<Uint128>(now) * rate_bps_;
    if (busy_until_scaled_ < now_scaled) busy_until_scaled_ = now_scaled;
    busy_until_scaled_ += static_cast<Uint128>(wire_bytes) * 8 * tsc_hz_;
    return static_cast<uint64_t>((busy_until_scaled_ + rate_bps_ - 1) /
                                 rate_bps_);
  }

 private:
  __extension__ using Uint128 = unsigned __int128;
  uint64_t rate_bps_;
  uint64_t tsc_hz_;
  Uint128 busy_until_scaled_ = 0;
};

// Queue depths seen by arriving frames, in kDepthBuckets buckets of equal
// width that together cover 0..capacity (width 1 for a queue of at most
// kDepthBuckets - 1 frames: exact depths). Fixed size: adding a sample
// never allocates.
class DepthHistogram {
 public:
  static constexpr uint32_t kDepthBuckets = 128;

  explicit DepthHistogram(uint32_t capacity = 0)
      : capacity_(capacity),
        width_((capacity + kDepthBuckets) / kDepthBuckets) {}

  void Add(uint32_t depth) {
    uint32_t bucket = depth / width_;
    if (bucket >= kDepthBuckets) bucket = kDepthBuckets - 1;
    ++counts_[bucket];
    ++samples_;
  }
  // The smallest depth d such that at least fraction q (0..1] of the samples
  // were at most d, rounded up to its bucket's upper bound (so exact for
  // width 1, an upper bound otherwise, never above the capacity). 0 without
  // samples.
  uint32_t Percentile(double q) const;

  uint32_t bucket_width() const { return width_; }
  uint64_t samples() const { return samples_; }
  const std::array<uint64_t, kDepthBuckets>& counts() const { return counts_; }

 private:
  uint32_t capacity_;
  uint32_t width_;
  uint64_t samples_ = 0;
  std::array<uint64_t, kDepthBuckets> counts_{};
};

// Where a frame's ECN field is (Ethernet, up to two VLAN tags, IPv4 or IPv6)
// and what it holds (RFC 3168: 0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE).
enum class EcnCodepoint : uint8_t {
  kNotEct = 0,
  kEct1 = 1,
  kEct0 = 2,
  kCe = 3
};
struct EcnField {
  enum class Kind : uint8_t { kNotIp, kIpv4, kIpv6 } kind = Kind::kNotIp;
  uint32_t l3_offset = 0;
  EcnCodepoint codepoint = EcnCodepoint::kNotEct;
};
// Reads the first `length` bytes of a frame (the contiguous part holding the
// headers); a frame too short for its IP header is kNotIp.
EcnField FindEcnField(const uint8_t* frame, uint32_t length);

enum class MarkResult : uint8_t {
  kMarked,     // was ECT(0) or ECT(1), now CE
  kAlreadyCe,  // left alone
  kNotEct,     // Not-ECT IP, or not IP at all: left alone
};
// Sets CE on an ECT frame, in place, and keeps the IPv4 header checksum
// valid (RFC 1624 incremental update; IPv6 has no header checksum, and
// neither UDP nor RoCE's ICRC covers the ECN bits).
MarkResult MarkCongestionExperienced(uint8_t* frame, uint32_t length);

// Flips bit `bit` (0..7) of data[offset]. offset < length is the caller's
// business (CopyFate guarantees it for the length it was given).
inline void FlipBit(uint8_t* data, uint32_t offset, uint8_t bit) {
  data[offset] ^= static_cast<uint8_t>(1u << (bit & 7));
}

}  // namespace spinnic::impair

#endif  // SPINNIC_DATAPLANE_IMPAIR_IMPAIRMENT_MODEL_H_
