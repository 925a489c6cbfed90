// Installs, replaces and removes a handler N times (default 1,000) over the
// gRPC API while traffic flows through a launched HPU, and reports what
// was lost and what memory did: the figures issue 3 asks for. Usage:
//
//   build/bench/control/churn_bench [cycles]
#include <cstdio>
#include <cstdlib>

#include "tests/common/churn_rig.h"

int main(int argc, char** argv) {
  using spinnic::churn::ChurnResult;
  using spinnic::churn::Rig;
  int cycles = argc > 1 ? std::atoi(argv[1]) : 1000;
  absl::StatusOr<std::unique_ptr<Rig>> rig = Rig::Create("churn_bench");
  if (!rig.ok()) {
    std::fprintf(stderr, "churn_bench: %s\n", rig.status().ToString().c_str());
    return 1;
  }
  absl::StatusOr<ChurnResult> result = (*rig)->Churn(cycles);
  if (!result.ok()) {
    std::fprintf(stderr, "churn_bench: %s\n",
                 result.status().ToString().c_str());
    return 1;
  }
  const ChurnResult& r = *result;
  double seconds = absl::ToDoubleSeconds(r.elapsed);
  std::printf(
      "cycles                 %llu (install, replace, remove; "
      "every 10th also region + capture)\n",
      static_cast<unsigned long long>(r.cycles));
  std::printf("control calls          %llu in %.2f s (%.0f calls/s)\n",
              static_cast<unsigned long long>(r.control_calls), seconds,
              r.control_calls / seconds);
  std::printf("frames sent            %llu (%.0f frames/s)\n",
              static_cast<unsigned long long>(r.traffic.sent),
              r.traffic.sent / seconds);
  std::printf("frames received        %llu\n",
              static_cast<unsigned long long>(r.traffic.received));
  std::printf(
      "frames lost            %llu\n",
      static_cast<unsigned long long>(r.traffic.sent - r.traffic.received));
  std::printf("out of order/corrupted %llu/%llu\n",
              static_cast<unsigned long long>(r.traffic.out_of_order),
              static_cast<unsigned long long>(r.traffic.corrupted));
  std::printf("dataplane drops        %llu\n",
              static_cast<unsigned long long>(r.port_drops));
  std::printf("handled by churned     %llu packets\n",
              static_cast<unsigned long long>(r.handled_packets));
  std::printf("libc heap in use       %llu -> %llu bytes\n",
              static_cast<unsigned long long>(r.before.malloc_in_use),
              static_cast<unsigned long long>(r.after.malloc_in_use));
  std::printf("EAL heap in use        %llu -> %llu bytes\n",
              static_cast<unsigned long long>(r.before.eal_in_use),
              static_cast<unsigned long long>(r.after.eal_in_use));
  std::printf("resident set           %llu -> %llu KiB\n",
              static_cast<unsigned long long>(r.before.rss >> 10),
              static_cast<unsigned long long>(r.after.rss >> 10));
  return 0;
}
