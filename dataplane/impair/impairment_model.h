// The impairment model: seeded, per-packet decisions for one direction of
// the impairment stage (loss, duplication, corruption, reordering, delay with
// jitter). Pure logic, no EAL: the DPDK side (impair_stage.h) asks it what to
// do with each packet and does it. docs/impair.md describes the semantics.
//
// Determinism: every impairment kind draws from its own xoshiro256** stream,
// seeded (through splitmix64) from the config seed and the kind, so the same
// seed and the same sequence of calls give the same decisions, and the i-th
// loss decision depends on nothing but the seed and i.
#ifndef SPINNIC_DATAPLANE_IMPAIR_IMPAIRMENT_MODEL_H_
#define SPINNIC_DATAPLANE_IMPAIR_IMPAIRMENT_MODEL_H_

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
inline constexpr uint64_t kMaxDelayUs = 10'000'000;  // 10 s

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
};

// OK, or INVALID_ARGUMENT with one line "<prefix><field>: what is wrong; what
// to write". `prefix` names where the fields come from (e.g. "--" for flags,
// "--a_to_b_" for a direction's overrides).
absl::Status ValidateImpairConfig(const ImpairConfig& config,
                                  absl::string_view prefix = "");

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

  const ImpairConfig& config() const { return config_; }

 private:
  ImpairConfig config_;
  Xoshiro256 loss_rng_;
  Xoshiro256 duplicate_rng_;
  Xoshiro256 corrupt_rng_;
  Xoshiro256 reorder_rng_;
  Xoshiro256 delay_rng_;
};

// Flips bit `bit` (0..7) of data[offset]. offset < length is the caller's
// business (CopyFate guarantees it for the length it was given).
inline void FlipBit(uint8_t* data, uint32_t offset, uint8_t bit) {
  data[offset] ^= static_cast<uint8_t>(1u << (bit & 7));
}

}  // namespace spinnic::impair

#endif  // SPINNIC_DATAPLANE_IMPAIR_IMPAIRMENT_MODEL_H_
