// DiAD loss recovery, GO_BACK_N against SELECTIVE, in the seeded lossy-
// channel simulation of tests/unit/diad/channel_sim.h: two endpoints with the
// real channel state machines (channel.h) on one thread in simulated time,
// so the figures are exact and repeatable (no scheduler, no clock). Prints,
// per loss rate, retransmitted packets per delivered packet, transmissions
// per delivered packet, and goodput relative to the lossless run of the same
// recovery mode, timer and workload, and the packets delivered per simulated
// millisecond. Each table runs twice: with the paper's fixed retransmission
// timer (adaptive_rto false: rto_ns after progress, as before issue 17 item
// 2) and with the adaptive one (RFC 6298 estimate, the default). Pure loss
// both ways (no reordering, duplication or corruption: the tests cover
// those). Not a test: it asserts nothing.
//
//   build/bench/micro/diad_recovery_bench [transactions per side]
//       [fixed|adaptive|both]
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "dataplane/diad/channel.h"
#include "tests/unit/diad/channel_sim.h"

namespace spinnic::diad::sim {
namespace {

struct Result {
  uint64_t pushed = 0;
  uint64_t retransmitted = 0;
  uint64_t delivered_msgs = 0;
  uint64_t timeouts = 0;
  uint64_t end_ns = 0;
  bool complete = false;
};

Result RunOnce(const ChannelConfig& config, Recovery recovery, double loss,
               uint64_t seed, uint64_t transactions) {
  Impairments imp;
  imp.loss = loss;
  Simulation sim(seed, config, imp, transactions, recovery, recovery);
  Result r;
  r.end_ns = sim.Run(uint64_t{3600} * 1'000'000'000);
  r.complete = sim.ep(0).Idle() && sim.ep(1).Idle();
  for (int i = 0; i < 2; ++i) {
    const EndpointStats& s = sim.ep(i).stats();
    r.pushed += s.data_pushed;
    r.retransmitted += s.retransmitted;
    r.delivered_msgs += s.msgs_delivered;
    r.timeouts += s.unacks_timer;
  }
  return r;
}

void Table(const char* name, ChannelConfig config, uint64_t transactions,
           bool adaptive) {
  config.adaptive_rto = adaptive;
  static constexpr double kLoss[] = {0, 0.001, 0.01, 0.05};
  static constexpr uint64_t kSeeds[] = {1, 2, 3};
  std::printf(
      "%s, %s timer: window_packets %u, ack_every %u, rto %.1f ms%s, "
      "nack_interval %.0f us, one-way delay %.0f us, %llu transactions each "
      "way, seeds 1-3\n",
      name, adaptive ? "adaptive" : "fixed", config.window_packets,
      config.ack_every, config.rto_ns / 1e6,
      adaptive ? " first (then estimated)" : "", config.nack_interval_ns / 1e3,
      Simulation::kDelayNs / 1e3,
      static_cast<unsigned long long>(transactions));
  std::printf("%-10s %6s %12s %10s %10s %12s %14s\n", "recovery", "loss",
              "retx/deliv", "tx/deliv", "goodput", "pkts/ms", "timeouts/1000");
  for (Recovery recovery : {Recovery::kGoBackN, Recovery::kSelective}) {
    double lossless_rate = 0;
    for (double loss : kLoss) {
      uint64_t pushed = 0;
      uint64_t retransmitted = 0;
      uint64_t timeouts = 0;
      double time_ns = 0;
      bool complete = true;
      for (uint64_t seed : kSeeds) {
        const Result r = RunOnce(config, recovery, loss, seed, transactions);
        pushed += r.pushed;
        retransmitted += r.retransmitted;
        timeouts += r.timeouts;
        time_ns += static_cast<double>(r.end_ns);
        complete = complete && r.complete;
      }
      // The same packets are delivered at every loss rate (same seeds, same
      // workload): goodput is packets per simulated second.
      const double rate = static_cast<double>(pushed) / time_ns;
      if (loss == 0) lossless_rate = rate;
      std::printf("%-10s %5.1f%% %12.3f %10.3f %10.3f %12.1f %14.2f%s\n",
                  RecoveryName(recovery), loss * 100,
                  static_cast<double>(retransmitted) / pushed,
                  static_cast<double>(pushed + retransmitted) / pushed,
                  rate / lossless_rate, rate * 1e6, 1000.0 * timeouts / pushed,
                  complete ? "" : "  (INCOMPLETE)");
    }
  }
  std::printf("\n");
}

}  // namespace
}  // namespace spinnic::diad::sim

int main(int argc, char** argv) {
  using spinnic::diad::ChannelConfig;
  const uint64_t transactions =
      argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 20'000;
  const std::string timers = argc > 2 ? argv[2] : "both";
  if (timers != "fixed" && timers != "adaptive" && timers != "both") {
    std::fprintf(stderr, "usage: %s [transactions] [fixed|adaptive|both]\n",
                 argv[0]);
    return 2;
  }
  std::vector<bool> modes;
  if (timers != "adaptive") modes.push_back(false);
  if (timers != "fixed") modes.push_back(true);
  // The unit test's configuration (tests/unit/diad/channel_test.cc
  // SimConfig).
  ChannelConfig small;
  small.window_packets = 64;
  small.window_bytes = 16 << 10;
  small.max_transactions = 16;
  small.ack_every = 8;
  for (bool adaptive : modes) {
    spinnic::diad::sim::Table("test configuration", small, transactions,
                              adaptive);
  }
  // The dataplane's defaults (diad.window_packets 256, 4 MiB, 16
  // transactions in flight; docs/diad.md), with as many transactions in
  // flight as the window can carry.
  ChannelConfig defaults;
  defaults.max_transactions = 256;
  for (bool adaptive : modes) {
    spinnic::diad::sim::Table("dataplane defaults, max_transactions 256",
                              defaults, transactions, adaptive);
  }
  return 0;
}
