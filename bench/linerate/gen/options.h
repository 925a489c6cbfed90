// spinnic-gen's own command-line flags (those after the EAL's `--`), parsed
// and range-checked without DPDK. Everything that can be checked from the
// arguments alone is checked here; what needs the ports (MTU, port count,
// lcores) is checked in generator.cc before anything is sent.
#ifndef SPINNIC_BENCH_LINERATE_GEN_OPTIONS_H_
#define SPINNIC_BENCH_LINERATE_GEN_OPTIONS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace spinnic::gen {

// Which lcores run the TX and RX loops.
enum class Threads : uint8_t {
  kAuto,    // kSingle with one EAL lcore, kSplit with two or more
  kSingle,  // one loop on the main lcore does TX and RX
  kSplit,   // TX on the first worker lcore, RX on the main lcore
};

struct Options {
  uint16_t tx_port = 0;
  uint16_t rx_port = 0;   // defaults to tx_port
  uint32_t size = 64;     // frame bytes without FCS
  uint64_t rate_pps = 0;  // 0: as fast as the TX queue takes them
  double duration_s = 10;
  double warmup_s = 1;
  uint32_t flows = 1;
  uint16_t src_port = 10000;  // UDP source port of flow 0
  uint16_t dst_port = 9;      // UDP destination port of every flow
  uint32_t mtu = 0;           // 0: the device default (1500)
  uint32_t burst = 32;
  uint32_t drain_ms = 200;
  double link_timeout_s = 10;
  double peer_timeout_s = 2;
  Threads threads = Threads::kAuto;
  bool help = false;
};

inline constexpr uint32_t kMaxFlows = 4096;
inline constexpr uint32_t kMaxBurst = 256;

// Parses `args` (the flags after `--`, without the program name). Flags are
// --name=value or --name value. INVALID_ARGUMENT with a message naming the
// flag and what to write instead.
absl::StatusOr<Options> ParseOptions(absl::Span<const char* const> args);

// The --help text.
std::string Usage();

const char* ThreadsName(Threads threads);

}  // namespace spinnic::gen

#endif  // SPINNIC_BENCH_LINERATE_GEN_OPTIONS_H_
