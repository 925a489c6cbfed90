// spinnicd's health for systemd and gRPC health checking (service_monitor.h).
#include "control/service_monitor.h"

#include <systemd/sd-daemon.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "dataplane/common/log.h"

namespace spinnic {

std::vector<std::string> ServiceMonitor::Update(const StatsSnapshot& snapshot,
                                                absl::Time now) {
  std::vector<std::string> problems;
  if (last_loops_.size() != snapshot.hpus.size()) {
    last_loops_.assign(snapshot.hpus.size(), 0);
    last_progress_.assign(snapshot.hpus.size(), now);
  }
  // The control thread itself did not run for a while (the process was
  // stopped, e.g. SIGSTOP, or the host was suspended): the HPUs did not run
  // either, so the time since their last progress says nothing; start over.
  if (last_update_ != absl::InfinitePast() &&
      now - last_update_ > stall_after_ / 2) {
    for (absl::Time& t : last_progress_) t = now;
  }
  last_update_ = now;
  bool all_polled = true;
  for (size_t i = 0; i < snapshot.hpus.size(); ++i) {
    const HpuStats& hpu = snapshot.hpus[i];
    if (hpu.loops == 0) all_polled = false;
    if (hpu.loops != last_loops_[i]) {
      last_loops_[i] = hpu.loops;
      last_progress_[i] = now;
    } else if (now - last_progress_[i] > stall_after_) {
      problems.push_back(absl::StrFormat(
          "hpu %u (lcore %u) made no progress for %.1f s", hpu.index, hpu.lcore,
          absl::ToDoubleSeconds(now - last_progress_[i])));
    }
  }
  bool all_up = true;
  for (const PortStats& port : snapshot.ports) {
    if (!port.link_up) {
      all_up = false;
      problems.push_back(absl::StrCat("port ", port.name, ": link down"));
    }
  }
  ready_ = all_polled && all_up;
  return problems;
}

std::string StatusLine(const StatsSnapshot& now, const StatsSnapshot& before,
                       double seconds,
                       const std::vector<std::string>& problems) {
  uint64_t rx = 0, tx = 0, drops = 0;
  uint64_t rx0 = 0, tx0 = 0, drops0 = 0;
  for (const PortStats& p : now.ports) {
    rx += p.rx_packets;
    tx += p.tx_packets;
    for (uint64_t d : p.drops) drops += d;
  }
  for (const PortStats& p : before.ports) {
    rx0 += p.rx_packets;
    tx0 += p.tx_packets;
    for (uint64_t d : p.drops) drops0 += d;
  }
  auto rate = [&](uint64_t a, uint64_t b) {
    return seconds > 0 && a >= b ? static_cast<double>(a - b) / seconds : 0.0;
  };
  std::string line = absl::StrFormat(
      "rx %.0f pps, tx %.0f pps, drops %.0f/s; %u port(s), %u HPU(s), %u "
      "handler(s)",
      rate(rx, rx0), rate(tx, tx0), rate(drops, drops0), now.ports.size(),
      now.hpus.size(), now.ectxs.size());
  if (!problems.empty()) {
    absl::StrAppend(&line, "; NOT SERVING: ", absl::StrJoin(problems, "; "));
  }
  return line;
}

SystemdNotifier::SystemdNotifier() {
  const char* socket = std::getenv("NOTIFY_SOCKET");
  enabled_ = socket != nullptr && socket[0] != '\0';
  uint64_t usec = 0;
  if (enabled_ && sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
    watchdog_ = absl::Microseconds(static_cast<int64_t>(usec));
  }
}

void SystemdNotifier::Send(const std::string& message) {
  if (!enabled_) return;
  if (int rc = sd_notify(0, message.c_str()); rc < 0) {
    SPINNIC_LOG(WARNING, control,
                "spinnicd: sd_notify(%s) failed (error %d): is NOTIFY_SOCKET "
                "a datagram socket this process may write to?",
                message.c_str(), -rc);
  }
}

void SystemdNotifier::Ready() { Send("READY=1"); }
void SystemdNotifier::Status(const std::string& line) {
  Send(absl::StrCat("STATUS=", line));
}
void SystemdNotifier::Watchdog() { Send("WATCHDOG=1"); }
void SystemdNotifier::Stopping() { Send("STOPPING=1"); }

}  // namespace spinnic
