// DCQCN's reaction point against sequences computed by hand from the
// paper's equations (Zhu et al., SIGCOMM 2015, figure 7), written out here:
//   CNP:        Rt = Rc; Rc = Rc (1 - a/2); a = (1 - g) a + g
//   alpha timer a = (1 - g) a
//   increase:   fast recovery Rc = (Rt + Rc)/2; additive Rt += Rai first;
//               hyper Rt += Rhai first.
// with g = 1/256, so (1 - g) = 255/256 and the alphas are exact fractions.
#include "dataplane/roce/dcqcn.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace spinnic::roce {
namespace {

constexpr int64_t kUs = 1000;
constexpr double kG = 1e9;

// 100 Gb/s, the defaults otherwise, and no byte counter unless a test
// turns it on (so that only the timer drives increases).
DcqcnParams Params() {
  DcqcnParams p;
  p.line_rate_bps = 100'000'000'000;
  p.byte_counter_bytes = 0;
  return p;
}

TEST(DcqcnTest, DefaultsAreThePublishedOnes) {
  DcqcnParams p;
  EXPECT_EQ(p.g, 1.0 / 256);
  EXPECT_EQ(p.alpha_timer_ns, 55'000u);
  EXPECT_EQ(p.increase_timer_ns, 300'000u);
  EXPECT_EQ(p.fast_recovery_stages, 5u);
  EXPECT_EQ(p.additive_increase_bps, 5'000'000u);
  EXPECT_EQ(p.hyper_increase_bps, 50'000'000u);
  EXPECT_EQ(p.min_rate_bps, 1'000'000u);
  EXPECT_EQ(p.byte_counter_bytes, 10'000'000u);
  EXPECT_EQ(p.initial_alpha, 1.0);
}

TEST(DcqcnTest, StartsAtLineRateWithNoTimers) {
  DcqcnRateController rp(Params(), 0);
  EXPECT_EQ(rp.rate_bps(), 100 * kG);
  EXPECT_EQ(rp.target_rate_bps(), 100 * kG);
  EXPECT_FALSE(rp.throttled());
  EXPECT_EQ(rp.NextEventNs(), std::numeric_limits<int64_t>::max());
  rp.Advance(10'000 * kUs);  // nothing happens without a CNP
  EXPECT_EQ(rp.rate_bps(), 100 * kG);
  EXPECT_EQ(rp.counters().alpha_decays, 0u);
}

TEST(DcqcnTest, FirstCnpHalvesTheRateAtAlphaOne) {
  DcqcnRateController rp(Params(), 0);
  rp.OnCnp(0);
  // Rt = 100 G; Rc = 100 G (1 - 1/2) = 50 G; a = 255/256 + 1/256 = 1.
  EXPECT_EQ(rp.target_rate_bps(), 100 * kG);
  EXPECT_EQ(rp.rate_bps(), 50 * kG);
  EXPECT_EQ(rp.alpha(), 1.0);
  EXPECT_TRUE(rp.throttled());
  EXPECT_EQ(rp.counters().cnps, 1u);
  // Timers: alpha at 55 us, increase at 300 us.
  EXPECT_EQ(rp.NextEventNs(), 55 * kUs);
}

TEST(DcqcnTest, AlphaDecaysEveryPeriodAndScalesTheNextCut) {
  DcqcnRateController rp(Params(), 0);
  rp.OnCnp(0);
  rp.Advance(55 * kUs);
  EXPECT_EQ(rp.alpha(), 255.0 / 256);
  EXPECT_EQ(rp.NextEventNs(), 110 * kUs);
  rp.Advance(110 * kUs);
  // (255/256)^2 = 65025/65536.
  EXPECT_EQ(rp.alpha(), 65025.0 / 65536);
  EXPECT_EQ(rp.counters().alpha_decays, 2u);
  // A CNP now: Rt = 50 G; Rc = 50 G (1 - 65025/131072) = 50 G * 66047/131072
  // = 25,194,931,030.2734375 b/s; a = 255/256 * 65025/65536 + 1/256 =
  // (16,581,375 + 65,536) / 16,777,216 = 16,646,911 / 16,777,216.
  rp.OnCnp(110 * kUs);
  EXPECT_EQ(rp.target_rate_bps(), 50 * kG);
  EXPECT_NEAR(rp.rate_bps(), 25'194'931'030.2734375, 1e-3);
  EXPECT_DOUBLE_EQ(rp.alpha(), 16'646'911.0 / 16'777'216);
  // The timers restarted at the CNP.
  EXPECT_EQ(rp.NextEventNs(), 165 * kUs);
}

// Two CNPs 1 us apart: Rt = 50 G, Rc = 25 G, a = 1, timers from t = 1 us.
DcqcnRateController TwiceCut(const DcqcnParams& params) {
  DcqcnRateController rp(params, 0);
  rp.OnCnp(0);
  rp.OnCnp(1 * kUs);
  return rp;
}

TEST(DcqcnTest, FastRecoveryThenAdditiveIncreaseOnTheTimer) {
  DcqcnRateController rp = TwiceCut(Params());
  ASSERT_EQ(rp.target_rate_bps(), 50 * kG);
  ASSERT_EQ(rp.rate_bps(), 25 * kG);
  // Increase timer at 301, 601, ... us. Events 1..5: fast recovery, Rc
  // halves its distance to Rt = 50 G: 37.5, 43.75, 46.875, 48.4375,
  // 49.21875 G.
  const double fast_recovery[] = {37.5, 43.75, 46.875, 48.4375, 49.21875};
  for (int i = 0; i < 5; ++i) {
    rp.Advance((301 + 300 * i) * kUs - 1);
    EXPECT_EQ(rp.timer_stage(), static_cast<uint32_t>(i)) << "before " << i;
    rp.Advance((301 + 300 * i) * kUs);
    EXPECT_EQ(rp.rate_bps(), fast_recovery[i] * kG) << i;
    EXPECT_EQ(rp.target_rate_bps(), 50 * kG) << i;
  }
  // Event 6 (T = 6 > F = 5, BC = 0): additive. Rt = 50.005 G; Rc =
  // (50.005 + 49.21875) / 2 = 49.611875 G.
  rp.Advance(1801 * kUs);
  EXPECT_NEAR(rp.target_rate_bps(), 50.005 * kG, 1e-3);
  EXPECT_NEAR(rp.rate_bps(), 49.611875 * kG, 1e-3);
  // Event 7: Rt = 50.010 G; Rc = (50.010 + 49.611875) / 2 = 49.8109375 G.
  rp.Advance(2101 * kUs);
  EXPECT_NEAR(rp.target_rate_bps(), 50.010 * kG, 1e-3);
  EXPECT_NEAR(rp.rate_bps(), 49.8109375 * kG, 1e-3);
  EXPECT_EQ(rp.counters().fast_recoveries, 5u);
  EXPECT_EQ(rp.counters().additive_increases, 2u);
  EXPECT_EQ(rp.counters().hyper_increases, 0u);
  // Alpha decayed at 56, 111, ..., 2091 us: 38 periods.
  EXPECT_EQ(rp.counters().alpha_decays, 38u);
  EXPECT_DOUBLE_EQ(rp.alpha(), std::pow(255.0 / 256, 38));
}

TEST(DcqcnTest, ByteCounterLeadsToHyperIncrease) {
  DcqcnParams params = Params();
  params.byte_counter_bytes = 1'000'000;
  DcqcnRateController rp = TwiceCut(params);
  // As above, the timer alone to T = 6 (no bytes sent): 5 fast recoveries
  // and one additive increase: Rt = 50.005 G, Rc = 49.611875 G.
  rp.Advance(1801 * kUs);
  ASSERT_EQ(rp.timer_stage(), 6u);
  ASSERT_NEAR(rp.rate_bps(), 49.611875 * kG, 1e-3);
  // Now 1 MB at a time at 1802 us: BC = 1..5 with T = 6: max > F, min <= F:
  // additive; BC = 6: min(6, 6) > 5: hyper (Rt += 50 Mb/s).
  //   BC  Rt (G)   Rc (G) = (Rt + Rc) / 2
  //   1   50.010   49.8109375
  //   2   50.015   49.91296875
  //   3   50.020   49.966484375
  //   4   50.025   49.9957421875
  //   5   50.030   50.01287109375
  //   6   50.080   50.046435546875
  const double want_target[] = {50.010, 50.015, 50.020, 50.025, 50.030, 50.080};
  const double want_rate[] = {49.8109375,    49.91296875,    49.966484375,
                              49.9957421875, 50.01287109375, 50.046435546875};
  for (int i = 0; i < 6; ++i) {
    rp.OnBytesSent(1'000'000, 1802 * kUs);
    EXPECT_EQ(rp.byte_stage(), static_cast<uint32_t>(i + 1));
    EXPECT_NEAR(rp.target_rate_bps(), want_target[i] * kG, 1e-3) << i;
    EXPECT_NEAR(rp.rate_bps(), want_rate[i] * kG, 1e-3) << i;
  }
  EXPECT_EQ(rp.counters().additive_increases, 6u);
  EXPECT_EQ(rp.counters().hyper_increases, 1u);
  // Less than a counter's worth does nothing; the remainder is kept.
  const double rate = rp.rate_bps();
  rp.OnBytesSent(600'000, 1803 * kUs);
  EXPECT_EQ(rp.rate_bps(), rate);
  rp.OnBytesSent(400'000, 1803 * kUs);
  EXPECT_EQ(rp.byte_stage(), 7u);
}

TEST(DcqcnTest, BytesBeforeFastRecoveryEndsCountAsStages) {
  // Right after the cuts, 1 MB at a time: BC = 1..5 (T = 0) are fast
  // recovery, exactly as with the timer: 37.5, 43.75, ... G.
  DcqcnParams params = Params();
  params.byte_counter_bytes = 1'000'000;
  DcqcnRateController rp = TwiceCut(params);
  const double fast_recovery[] = {37.5, 43.75, 46.875, 48.4375, 49.21875};
  for (int i = 0; i < 5; ++i) {
    rp.OnBytesSent(1'000'000, 2 * kUs);
    EXPECT_EQ(rp.rate_bps(), fast_recovery[i] * kG) << i;
  }
  // A CNP restarts both stage counts: the next event is fast recovery again.
  rp.OnCnp(3 * kUs);
  EXPECT_EQ(rp.byte_stage(), 0u);
  EXPECT_EQ(rp.timer_stage(), 0u);
}

TEST(DcqcnTest, NeverBelowTheFloor) {
  DcqcnParams params = Params();
  params.line_rate_bps = 1'000'000'000;
  params.min_rate_bps = 100'000'000;
  DcqcnRateController rp(params, 0);
  // Alpha stays 1 with CNPs back to back: 1 G -> 500 M -> 250 M -> 125 M
  // -> 62.5 M, floored at 100 M; and it stays there.
  const double want[] = {500e6, 250e6, 125e6, 100e6, 100e6, 100e6};
  for (int i = 0; i < 6; ++i) {
    rp.OnCnp(i);
    EXPECT_EQ(rp.rate_bps(), want[i]) << i;
    EXPECT_GE(rp.target_rate_bps(), 100e6);
  }
}

TEST(DcqcnTest, RecoversToLineRateAndNeverAbove) {
  // Rt = 50 G after two cuts: getting back to 100 G needs Rt to climb, by
  // Rai and then (once both stage counts pass F) by Rhai per event.
  DcqcnParams params = Params();
  params.byte_counter_bytes = 1'000'000;
  DcqcnRateController rp = TwiceCut(params);
  int64_t now = 1 * kUs;
  // Bounded: 2000 timer periods with 10 MB sent in each.
  for (int i = 0; i < 2000 && rp.throttled(); ++i) {
    now += 300 * kUs;
    rp.OnBytesSent(10'000'000, now);
    ASSERT_LE(rp.rate_bps(), 100 * kG);
    ASSERT_LE(rp.target_rate_bps(), 100 * kG);
  }
  EXPECT_FALSE(rp.throttled());
  EXPECT_EQ(rp.rate_bps(), 100 * kG);
  EXPECT_GT(rp.counters().hyper_increases, 0u);
  // Unthrottled: only the alpha timer is left (every 55 us from the CNP
  // at 1 us).
  EXPECT_EQ((rp.NextEventNs() - 1 * kUs) % (55 * kUs), 0);
}

TEST(DcqcnTest, ClockGoingBackwardsIsCountedAndIgnored) {
  DcqcnRateController rp(Params(), 0);
  rp.OnCnp(1000 * kUs);
  rp.Advance(500 * kUs);
  EXPECT_EQ(rp.counters().clock_backwards, 1u);
  EXPECT_EQ(rp.counters().alpha_decays, 0u);
  EXPECT_EQ(rp.rate_bps(), 50 * kG);
  // A CNP stamped in the past still cuts, at the latest time seen: the
  // timers restart from 1000 us.
  rp.OnCnp(10 * kUs);
  EXPECT_EQ(rp.counters().clock_backwards, 2u);
  EXPECT_EQ(rp.rate_bps(), 25 * kG);
  EXPECT_EQ(rp.NextEventNs(), 1055 * kUs);
}

TEST(DcqcnTest, LongGapResetsInsteadOfReplaying) {
  DcqcnRateController rp(Params(), 0);
  rp.OnCnp(0);
  // 10 s later: 181,818 alpha periods (55 us .. 9,999,990 us): more than
  // kMaxCatchUpEvents, so the flow restarts at line rate, alpha decayed in
  // closed form, (255/256)^181818 ~ 1e-309.
  rp.Advance(10'000'000 * kUs);
  EXPECT_EQ(rp.counters().idle_resets, 1u);
  EXPECT_EQ(rp.rate_bps(), 100 * kG);
  EXPECT_FALSE(rp.throttled());
  EXPECT_LT(rp.alpha(), 1e-300);
  EXPECT_EQ(rp.NextEventNs(), 10'000'055 * kUs);
  // The next CNP barely cuts: Rc = 100 G (1 - a/2) ~ 100 G.
  rp.OnCnp(10'000'001 * kUs);
  EXPECT_EQ(rp.rate_bps(), 100 * kG);
  EXPECT_DOUBLE_EQ(rp.alpha(), 1.0 / 256);
}

// roce.congestion.initial_rate_mbps: a new flow starts at 25 G of 100 G,
// as if a cut had just brought Rc and Rt there.
TEST(DcqcnTest, InitialRateStartsThrottledAndClimbsByTheSteps) {
  DcqcnParams p = Params();
  p.initial_rate_bps = 25'000'000'000;
  EXPECT_EQ(DcqcnParams().initial_rate_bps, 0u);  // default: line rate
  DcqcnRateController rp(p, 0);
  EXPECT_EQ(rp.rate_bps(), 25 * kG);
  EXPECT_EQ(rp.target_rate_bps(), 25 * kG);
  EXPECT_TRUE(rp.throttled());
  // Only the increase timer runs: alpha's starts with the first CNP.
  EXPECT_EQ(rp.NextEventNs(), 300 * kUs);
  // Stages 1..5 (300 .. 1500 us) are fast recovery: Rc = (25 G + 25 G)/2.
  rp.Advance(1500 * kUs);
  EXPECT_EQ(rp.timer_stage(), 5u);
  EXPECT_EQ(rp.counters().fast_recoveries, 5u);
  EXPECT_EQ(rp.rate_bps(), 25 * kG);
  EXPECT_EQ(rp.alpha(), 1.0);
  EXPECT_EQ(rp.counters().alpha_decays, 0u);
  // Stage 6 at 1800 us: additive, Rt = 25.005 G, Rc = (25.005 G + 25 G)/2
  // = 25.0025 G.
  rp.Advance(1800 * kUs);
  EXPECT_EQ(rp.counters().additive_increases, 1u);
  EXPECT_EQ(rp.target_rate_bps(), 25'005'000'000.0);
  EXPECT_EQ(rp.rate_bps(), 25'002'500'000.0);
  EXPECT_EQ(rp.NextEventNs(), 2100 * kUs);
  // A CNP then: Rt = 25.0025 G, Rc = 25.0025 G (1 - 1/2) = 12.50125 G,
  // alpha = 1; both timers run from now.
  rp.OnCnp(1900 * kUs);
  EXPECT_EQ(rp.target_rate_bps(), 25'002'500'000.0);
  EXPECT_EQ(rp.rate_bps(), 12'501'250'000.0);
  EXPECT_EQ(rp.alpha(), 1.0);
  EXPECT_EQ(rp.NextEventNs(), 1955 * kUs);
}

TEST(DcqcnTest, InitialRateIsWhereAnIdleFlowRestarts) {
  DcqcnParams p = Params();
  p.initial_rate_bps = 10'000'000'000;
  DcqcnRateController rp(p, 0);
  // Never sent, polled 10 s later: 33,333 increase periods are more than
  // kMaxCatchUpEvents, so the flow starts again at 10 G with the increase
  // timer 300 us from now (not at the line rate it would have reached).
  rp.Advance(10'000'000 * kUs);
  EXPECT_EQ(rp.counters().idle_resets, 1u);
  EXPECT_EQ(rp.rate_bps(), 10 * kG);
  EXPECT_EQ(rp.target_rate_bps(), 10 * kG);
  EXPECT_TRUE(rp.throttled());
  EXPECT_EQ(rp.alpha(), 1.0);  // no CNP yet: alpha does not decay
  EXPECT_EQ(rp.NextEventNs(), 10'000'300 * kUs);
  // The same after a CNP and recovery's timers: back to 10 G.
  rp.OnCnp(10'000'000 * kUs);
  EXPECT_EQ(rp.rate_bps(), 5 * kG);
  rp.Advance(20'000'000 * kUs);
  EXPECT_EQ(rp.counters().idle_resets, 2u);
  EXPECT_EQ(rp.rate_bps(), 10 * kG);
  EXPECT_TRUE(rp.throttled());
  EXPECT_LT(rp.alpha(), 1e-300);
}

TEST(DcqcnTest, InitialRateAtTheLineRateIsTheDefaultStart) {
  DcqcnParams p = Params();
  p.initial_rate_bps = p.line_rate_bps;
  DcqcnRateController rp(p, 0);
  EXPECT_EQ(rp.rate_bps(), 100 * kG);
  EXPECT_FALSE(rp.throttled());
  EXPECT_EQ(rp.NextEventNs(), std::numeric_limits<int64_t>::max());
}

TEST(DcqcnTest, ValidationNamesTheField) {
  struct Case {
    void (*mutate)(DcqcnParams&);
    const char* message_start;
  };
  const Case cases[] = {
      {[](DcqcnParams& p) { p.line_rate_bps = 0; }, "dcqcn.line_rate_bps: "},
      {[](DcqcnParams& p) { p.min_rate_bps = 0; }, "dcqcn.min_rate_bps: 0"},
      {[](DcqcnParams& p) { p.min_rate_bps = p.line_rate_bps + 1; },
       "dcqcn.min_rate_bps: "},
      {[](DcqcnParams& p) { p.g = 0; }, "dcqcn.g: 0 is not"},
      {[](DcqcnParams& p) { p.g = 1.5; }, "dcqcn.g: 1.5"},
      {[](DcqcnParams& p) { p.alpha_timer_ns = 0; }, "dcqcn.alpha_timer_ns"},
      {[](DcqcnParams& p) { p.increase_timer_ns = 0; },
       "dcqcn.increase_timer_ns"},
      {[](DcqcnParams& p) { p.additive_increase_bps = p.line_rate_bps + 1; },
       "dcqcn.additive_increase_bps"},
      {[](DcqcnParams& p) { p.hyper_increase_bps = p.line_rate_bps + 1; },
       "dcqcn.hyper_increase_bps"},
      {[](DcqcnParams& p) { p.initial_alpha = -1; }, "dcqcn.initial_alpha"},
      {[](DcqcnParams& p) { p.initial_rate_bps = p.line_rate_bps + 1; },
       "dcqcn.initial_rate_bps: "},
      {[](DcqcnParams& p) { p.initial_rate_bps = p.min_rate_bps - 1; },
       "dcqcn.initial_rate_bps: "},
  };
  EXPECT_TRUE(ValidateDcqcnParams(Params()).ok());
  for (const Case& test_case : cases) {
    DcqcnParams p = Params();
    test_case.mutate(p);
    absl::Status status = ValidateDcqcnParams(p);
    ASSERT_EQ(status.code(), absl::StatusCode::kInvalidArgument)
        << test_case.message_start;
    std::string message(status.message());
    EXPECT_EQ(message.rfind(test_case.message_start, 0), 0u) << message;
    EXPECT_NE(message.find("write"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace spinnic::roce
