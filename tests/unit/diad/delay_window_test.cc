// The delay-based window against sequences computed by hand from its
// equations (delay_window.h, after Swift's algorithm 1):
//   d < target:  W += ai n / W  (W >= 1),  W += ai n  (W < 1)
//   d >= target: W *= max(1 - beta (d - target) / d, 1 - max_mdf),
//                at most once per RTT
//   ECN echo, timeout: W *= 1 - max_mdf, at most once per RTT
// with target 50 us, ai 1, beta 0.8, max_mdf 0.5 unless a test says
// otherwise.
#include "dataplane/diad/delay_window.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace spinnic::diad {
namespace {

constexpr int64_t kUs = 1000;

DelayWindowParams Params(double initial = 10) {
  DelayWindowParams p;
  p.target_delay_ns = 50 * kUs;
  p.additive_increase = 1;
  p.beta = 0.8;
  p.max_mdf = 0.5;
  p.min_window = 1;
  p.max_window = 256;
  p.initial_window = initial;
  return p;
}

TEST(DelayWindowTest, AdditiveIncreaseBelowTarget) {
  DelayWindow w(Params());
  // 10 + 1/10 = 10.1; then 10.1 + 1/10.1; an ACK of 5: + 5/W.
  w.OnAck(1 * kUs, 20 * kUs, 1, false);
  EXPECT_DOUBLE_EQ(w.window(), 10.1);
  w.OnAck(2 * kUs, 20 * kUs, 1, false);
  EXPECT_DOUBLE_EQ(w.window(), 10.1 + 1 / 10.1);
  const double before = w.window();
  w.OnAck(3 * kUs, 20 * kUs, 5, false);
  EXPECT_DOUBLE_EQ(w.window(), before + 5 / before);
  EXPECT_EQ(w.counters().increases, 3u);
  EXPECT_EQ(w.PacketsInFlight(), 10u);
}

TEST(DelayWindowTest, AboutOnePacketPerRttOfAcks) {
  // A window's worth of single ACKs below the target adds about ai: from 10,
  // ten ACKs give 10 + 1/10 + 1/10.1 + ... , between 10.9 and 11.
  DelayWindow w(Params());
  for (int i = 0; i < 10; ++i) w.OnAck(i * kUs, 20 * kUs, 1, false);
  EXPECT_GT(w.window(), 10.9);
  EXPECT_LT(w.window(), 11.0);
}

TEST(DelayWindowTest, DecreaseProportionalToExcessDelay) {
  DelayWindow w(Params());
  // d = 100 us: 1 - 0.8 * 50/100 = 0.6: 10 -> 6.
  w.OnAck(1000 * kUs, 100 * kUs, 1, false);
  EXPECT_DOUBLE_EQ(w.window(), 6.0);
  // Within the RTT (100 us) of that decrease: held, no change.
  w.OnAck(1050 * kUs, 100 * kUs, 1, false);
  EXPECT_DOUBLE_EQ(w.window(), 6.0);
  EXPECT_EQ(w.counters().decreases_held, 1u);
  // An RTT later: again, d = 80 us: 1 - 0.8 * 30/80 = 0.7: 6 -> 4.2.
  w.OnAck(1100 * kUs, 80 * kUs, 1, false);
  EXPECT_DOUBLE_EQ(w.window(), 6.0 * 0.7);
  EXPECT_EQ(w.counters().delay_decreases, 2u);
  // Exactly at the target counts as over it: factor 1 - 0 = 1, a
  // "decrease" that changes nothing but restarts the RTT gate.
  w.OnAck(1200 * kUs, 50 * kUs, 1, false);
  EXPECT_DOUBLE_EQ(w.window(), 6.0 * 0.7);
}

TEST(DelayWindowTest, DecreaseBoundedByMaxMdf) {
  DelayWindow w(Params());
  // d = 1000 us: 1 - 0.8 * 950/1000 = 0.24, below 1 - max_mdf = 0.5: 10 -> 5.
  w.OnAck(5000 * kUs, 1000 * kUs, 1, false);
  EXPECT_DOUBLE_EQ(w.window(), 5.0);
}

TEST(DelayWindowTest, EcnEchoIsCongestionEvenBelowTarget) {
  DelayWindow w(Params());
  w.OnAck(1000 * kUs, 20 * kUs, 1, true);
  EXPECT_DOUBLE_EQ(w.window(), 5.0);  // 10 (1 - 0.5)
  EXPECT_EQ(w.counters().ecn_decreases, 1u);
  EXPECT_EQ(w.counters().increases, 0u);
  // Another echo within 20 us: held.
  w.OnAck(1010 * kUs, 20 * kUs, 1, true);
  EXPECT_DOUBLE_EQ(w.window(), 5.0);
  EXPECT_EQ(w.counters().decreases_held, 1u);
  // 20 us after the decrease: 2.5.
  w.OnAck(1020 * kUs, 20 * kUs, 1, true);
  EXPECT_DOUBLE_EQ(w.window(), 2.5);
}

TEST(DelayWindowTest, NeverBelowMinOrAboveMax) {
  DelayWindowParams p = Params(2);
  p.max_window = 12;
  DelayWindow w(p);
  // Halvings from 2: 1, then floored at 1.
  int64_t now = 0;
  for (int i = 0; i < 5; ++i) {
    now += 1000 * kUs;
    w.OnAck(now, 1000 * kUs, 1, false);
  }
  EXPECT_DOUBLE_EQ(w.window(), 1.0);
  EXPECT_EQ(w.PacingGapNs(), 0);  // whole packets: no pacing
  // 1000 ACKs of 10 packets below target: capped at 12.
  for (int i = 0; i < 1000; ++i) {
    now += 1 * kUs;
    w.OnAck(now, 10 * kUs, 10, false);
  }
  EXPECT_DOUBLE_EQ(w.window(), 12.0);
  EXPECT_EQ(w.PacketsInFlight(), 12u);
}

TEST(DelayWindowTest, FractionalWindowPaces) {
  DelayWindowParams p = Params(1);
  p.min_window = 0.1;
  DelayWindow w(p);
  // d = 200 us: 1 - 0.8 * 150/200 = 0.4, below 1 - max_mdf = 0.5, so
  // each decrease (one per 200 us) halves: 1 -> 0.5 -> 0.25 -> 0.125 ->
  // 0.0625, floored at 0.1.
  w.OnAck(1000 * kUs, 200 * kUs, 1, false);
  EXPECT_DOUBLE_EQ(w.window(), 0.5);
  w.OnAck(1200 * kUs, 200 * kUs, 1, false);
  EXPECT_DOUBLE_EQ(w.window(), 0.25);
  EXPECT_EQ(w.PacketsInFlight(), 1u);
  // One packet every RTT / W = 200 us / 0.25 = 800 us.
  EXPECT_EQ(w.PacingGapNs(), 800 * kUs);
  w.OnAck(1400 * kUs, 200 * kUs, 1, false);
  EXPECT_DOUBLE_EQ(w.window(), 0.125);
  w.OnAck(1600 * kUs, 200 * kUs, 1, false);
  EXPECT_DOUBLE_EQ(w.window(), 0.1);  // floor
  // Below one packet the increase is ai per ACK: 0.1 + 1 = 1.1.
  w.OnAck(1700 * kUs, 20 * kUs, 1, false);
  EXPECT_DOUBLE_EQ(w.window(), 1.1);
  EXPECT_EQ(w.PacingGapNs(), 0);
}

TEST(DelayWindowTest, TimeoutDecreasesOncePerRtt) {
  DelayWindow w(Params());
  w.OnAck(100 * kUs, 30 * kUs, 1, false);  // 10.1, last RTT 30 us
  w.OnRetransmitTimeout(1000 * kUs);
  EXPECT_DOUBLE_EQ(w.window(), 10.1 * 0.5);
  w.OnRetransmitTimeout(1010 * kUs);  // within 30 us: held
  EXPECT_DOUBLE_EQ(w.window(), 10.1 * 0.5);
  w.OnRetransmitTimeout(1030 * kUs);
  EXPECT_DOUBLE_EQ(w.window(), 10.1 * 0.25);
  EXPECT_EQ(w.counters().timeout_decreases, 2u);
}

TEST(DelayWindowTest, AbsurdSamplesAreCountedAndIgnored) {
  DelayWindow w(Params());
  w.OnAck(1000 * kUs, 0, 1, false);
  w.OnAck(1001 * kUs, -5 * kUs, 1, false);
  w.OnAck(1002 * kUs, 10'000'000'001, 1, false);  // 10 s + 1 ns
  EXPECT_EQ(w.counters().bad_rtt_samples, 3u);
  EXPECT_DOUBLE_EQ(w.window(), 10.0);
  EXPECT_EQ(w.counters().acks, 0u);
  // 10 s exactly is believable (and far above the target).
  w.OnAck(1003 * kUs, 10'000'000'000, 1, false);
  EXPECT_DOUBLE_EQ(w.window(), 5.0);
  // A time before one already seen: counted, ignored.
  w.OnAck(900 * kUs, 10 * kUs, 1, false);
  EXPECT_EQ(w.counters().clock_backwards, 1u);
  EXPECT_DOUBLE_EQ(w.window(), 5.0);
}

TEST(DelayWindowTest, EcnEchoWithBadSampleStillCounts) {
  DelayWindow w(Params());
  w.OnAck(100 * kUs, 40 * kUs, 1, false);  // 10.1, last RTT 40 us
  w.OnAck(1000 * kUs, -1, 1, true);
  EXPECT_EQ(w.counters().bad_rtt_samples, 1u);
  EXPECT_DOUBLE_EQ(w.window(), 10.1 * 0.5);
  // Gated by the last good RTT (40 us).
  w.OnAck(1030 * kUs, 0, 1, true);
  EXPECT_DOUBLE_EQ(w.window(), 10.1 * 0.5);
  w.OnAck(1040 * kUs, 0, 1, true);
  EXPECT_DOUBLE_EQ(w.window(), 10.1 * 0.25);
}

TEST(DelayWindowTest, ValidationNamesTheField) {
  struct Case {
    void (*mutate)(DelayWindowParams&);
    const char* message_start;
  };
  const Case cases[] = {
      {[](DelayWindowParams& p) { p.target_delay_ns = 0; },
       "delay_window.target_delay_ns: 0"},
      {[](DelayWindowParams& p) { p.additive_increase = 0; },
       "delay_window.additive_increase: 0"},
      {[](DelayWindowParams& p) { p.beta = 1.5; }, "delay_window.beta: 1.5"},
      {[](DelayWindowParams& p) { p.max_mdf = 1; }, "delay_window.max_mdf: 1"},
      {[](DelayWindowParams& p) { p.min_window = 0; },
       "delay_window.min_window: 0"},
      {[](DelayWindowParams& p) { p.max_window = 0.5; },
       "delay_window.max_window: 0.5"},
      {[](DelayWindowParams& p) { p.initial_window = 300; },
       "delay_window.initial_window: 300"},
      {[](DelayWindowParams& p) { p.max_rtt_ns = 0; },
       "delay_window.max_rtt_ns: 0"},
  };
  EXPECT_TRUE(ValidateDelayWindowParams(Params()).ok());
  EXPECT_TRUE(ValidateDelayWindowParams(DelayWindowParams()).ok());
  for (const Case& test_case : cases) {
    DelayWindowParams p = Params();
    test_case.mutate(p);
    absl::Status status = ValidateDelayWindowParams(p);
    ASSERT_EQ(status.code(), absl::StatusCode::kInvalidArgument)
        << test_case.message_start;
    std::string message(status.message());
    EXPECT_EQ(message.rfind(test_case.message_start, 0), 0u) << message;
    EXPECT_NE(message.find("write"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace spinnic::diad
