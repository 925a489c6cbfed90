// The DPDK side of spinnic-gen: ports, mbuf pools, the TX and RX loops and
// the supervision that turns a vanished peer into an error.
//
// Timeline of Run(), all on the TSC:
//   start ........ warmup_s ........ measure_start ... duration_s ... tx_end
//   ... drain_ms (RX only) ... stop.
// A frame is measured when its TX TSC is at or after measure_start (the TX
// side reads the TSC once per burst and writes that value into every probe
// of the burst, so sender and receiver agree exactly on which frames count);
// each stream's measured frames are numbered from 0.
#ifndef SPINNIC_BENCH_LINERATE_GEN_GENERATOR_H_
#define SPINNIC_BENCH_LINERATE_GEN_GENERATOR_H_

#include <memory>

#include "absl/status/statusor.h"
#include "bench/linerate/gen/options.h"
#include "bench/linerate/gen/report.h"

namespace spinnic::gen {

class Generator {
 public:
  // Needs an initialised EAL. Checks what the arguments could not (the
  // ports exist, --size fits their MTU, enough lcores for --threads),
  // creates the pools, configures and starts the ports with one RX and one
  // TX queue each and waits for both links. Errors say what to fix:
  // INVALID_ARGUMENT for an impossible setup (exit 2), UNAVAILABLE for a
  // link that did not come up (exit 1). Nothing is sent before it returns.
  static absl::StatusOr<std::unique_ptr<Generator>> Create(
      const Options& options);

  ~Generator();  // stops and closes the ports, frees the pools
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;

  // Runs warmup, measurement and drain and fills `result`: complete, or
  // partial with result->error set when the peer went away, a link went
  // down or a signal asked to stop.
  void Run(RunResult* result);

  // For SIGINT/SIGTERM handlers (async-signal-safe): Run stops and reports
  // "interrupted by signal N".
  static void RequestStop(int signal);

 private:
  struct State;
  explicit Generator(const Options& options);
  absl::Status Setup();

  std::unique_ptr<State> state_;
};

}  // namespace spinnic::gen

#endif  // SPINNIC_BENCH_LINERATE_GEN_GENERATOR_H_
