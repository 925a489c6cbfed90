// spinnicd's view of its own health, for systemd and gRPC health checking:
// every HPU makes progress (its loop counter moves) and every port's link is
// up. ServiceMonitor judges snapshots; SystemdNotifier speaks sd_notify(3)
// (Type=notify: READY=1, STATUS=, WATCHDOG=1) through libsystemd.
#ifndef SPINNIC_CONTROL_SERVICE_MONITOR_H_
#define SPINNIC_CONTROL_SERVICE_MONITOR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "dataplane/stats.h"

namespace spinnic {

class ServiceMonitor {
 public:
  // An HPU whose loop counter has not moved for `stall_after` is stalled.
  explicit ServiceMonitor(absl::Duration stall_after)
      : stall_after_(stall_after) {}

  // Takes a snapshot read at `now` (call it often: every 100 ms; a gap of
  // more than stall_after/2 since the last call restarts the stall clocks,
  // since the process itself was not running); returns what is wrong, one
  // line each
  // ("hpu 0 (lcore 1) made no progress for 1.2 s", "port p0: link down"),
  // empty when healthy.
  std::vector<std::string> Update(const StatsSnapshot& snapshot,
                                  absl::Time now);

  // Every HPU has polled at least once and every link is up (as of the
  // last Update): what READY=1 waits for.
  bool Ready() const { return ready_; }

 private:
  absl::Duration stall_after_;
  std::vector<uint64_t> last_loops_;
  std::vector<absl::Time> last_progress_;
  absl::Time last_update_ = absl::InfinitePast();
  bool ready_ = false;
};

// Rates for STATUS=, from two snapshots `seconds` apart.
std::string StatusLine(const StatsSnapshot& now, const StatsSnapshot& before,
                       double seconds,
                       const std::vector<std::string>& problems);

class SystemdNotifier {
 public:
  // Reads NOTIFY_SOCKET and WATCHDOG_USEC (sd_watchdog_enabled).
  SystemdNotifier();

  bool enabled() const { return enabled_; }
  // WatchdogSec as systemd passed it; zero when the watchdog is off.
  absl::Duration watchdog() const { return watchdog_; }

  void Ready();
  void Status(const std::string& line);
  void Watchdog();
  void Stopping();

 private:
  void Send(const std::string& message);
  bool enabled_ = false;
  absl::Duration watchdog_ = absl::ZeroDuration();
};

}  // namespace spinnic

#endif  // SPINNIC_CONTROL_SERVICE_MONITOR_H_
