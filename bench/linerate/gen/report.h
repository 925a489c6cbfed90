// The one JSON object spinnic-gen prints on stdout: the contract with the
// harness (bench/linerate/README.md lists every field). Pure formatting, no
// DPDK, so that the field set is unit tested.
#ifndef SPINNIC_BENCH_LINERATE_GEN_REPORT_H_
#define SPINNIC_BENCH_LINERATE_GEN_REPORT_H_

#include <cstdint>
#include <optional>
#include <string>

#include "bench/linerate/gen/accounting.h"

namespace spinnic::gen {

// Bytes a frame occupies on the wire beyond what --size counts: preamble
// and start delimiter (8), inter-frame gap (12), FCS (4).
inline constexpr uint64_t kL1OverheadBytes = 24;

struct RunResult {
  // The run as asked for.
  uint32_t size = 0;
  uint32_t flows = 0;
  uint64_t rate_pps = 0;  // 0: flat out
  uint16_t tx_port = 0;
  uint16_t rx_port = 0;
  const char* threads = "single";
  uint64_t tsc_hz = 0;
  // What happened in the measured phase (warmup excluded).
  double duration_s = 0;  // from the first measured frame to the last sent
  uint64_t sent = 0;
  uint64_t tx_bytes = 0;  // frame bytes without FCS
  SequenceCounts seq;     // summed over the streams, Finish()ed
  uint64_t rx_bytes = 0;  // of the frames counted in seq.received
  LatencyHistogram latency_ns;
  // Outside the measured phase.
  uint64_t warmup_sent = 0;
  uint64_t warmup_received = 0;
  uint64_t not_ours = 0;
  std::optional<std::string> error;
};

// One line, no trailing newline. Rates are 0 when duration_s is 0; latency
// fields other than count are null when no latency was recorded.
std::string FormatJson(const RunResult& result);

// `text` as a JSON string literal, quotes included.
std::string JsonString(const std::string& text);

}  // namespace spinnic::gen

#endif  // SPINNIC_BENCH_LINERATE_GEN_REPORT_H_
