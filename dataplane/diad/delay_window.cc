#include "dataplane/diad/delay_window.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace spinnic::diad {
namespace {

bool InRange(double v, double low, double high) {
  return std::isfinite(v) && v >= low && v <= high;
}

absl::Status Invalid(absl::string_view field, double value,
                     absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrFormat(
      "delay_window.%s: %g is out of range; write %s", field, value, what));
}

}  // namespace

absl::Status ValidateDelayWindowParams(const DelayWindowParams& p) {
  if (p.target_delay_ns <= 0) {
    return Invalid("target_delay_ns", static_cast<double>(p.target_delay_ns),
                   "the delay to steer towards, nanoseconds > 0, e.g. 50000");
  }
  if (!InRange(p.additive_increase, 0, 1e6) || p.additive_increase == 0) {
    return Invalid("additive_increase", p.additive_increase,
                   "packets per RTT > 0, e.g. 1");
  }
  if (!InRange(p.beta, 0, 1) || p.beta == 0) {
    return Invalid("beta", p.beta, "a factor in (0, 1], e.g. 0.8");
  }
  if (!InRange(p.max_mdf, 0, 1) || p.max_mdf == 0 || p.max_mdf == 1) {
    return Invalid("max_mdf", p.max_mdf,
                   "the largest share one decrease takes, in (0, 1), e.g. 0.5");
  }
  if (!InRange(p.min_window, 0, 1e9) || p.min_window == 0) {
    return Invalid("min_window", p.min_window,
                   "packets > 0 (below 1 only when the sender paces), e.g. 1");
  }
  if (!InRange(p.max_window, p.min_window, 1e9)) {
    return Invalid("max_window", p.max_window,
                   "packets, at least min_window, e.g. 256");
  }
  if (!InRange(p.initial_window, p.min_window, p.max_window)) {
    return Invalid("initial_window", p.initial_window,
                   "packets within [min_window, max_window], e.g. 16");
  }
  if (p.max_rtt_ns <= 0) {
    return Invalid("max_rtt_ns", static_cast<double>(p.max_rtt_ns),
                   "the longest believable RTT, nanoseconds > 0, e.g. 1e10");
  }
  return absl::OkStatus();
}

DelayWindow::DelayWindow(const DelayWindowParams& params)
    : params_(params), window_(params.initial_window) {}

bool DelayWindow::Accept(int64_t now_ns) {
  if (now_ns < last_ns_) {
    ++counters_.clock_backwards;
    return false;
  }
  last_ns_ = now_ns;
  return true;
}

void DelayWindow::Clamp() {
  window_ = std::clamp(window_, params_.min_window, params_.max_window);
}

bool DelayWindow::Decrease(int64_t now_ns, int64_t rtt_ns, double factor) {
  // Once per RTT: the effect of a decrease shows only an RTT later.
  if (last_decrease_ns_ != std::numeric_limits<int64_t>::min() &&
      now_ns - last_decrease_ns_ < rtt_ns) {
    ++counters_.decreases_held;
    return false;
  }
  window_ *= factor;
  Clamp();
  last_decrease_ns_ = now_ns;
  return true;
}

void DelayWindow::OnAck(int64_t now_ns, int64_t rtt_ns, uint32_t acked,
                        bool ecn_echo) {
  if (!Accept(now_ns)) return;
  const bool rtt_good = rtt_ns > 0 && rtt_ns <= params_.max_rtt_ns;
  if (!rtt_good) ++counters_.bad_rtt_samples;
  if (ecn_echo) {
    // Congestion whatever the delay says; gated by the best RTT known.
    const int64_t gate = rtt_good           ? rtt_ns
                         : last_rtt_ns_ > 0 ? last_rtt_ns_
                                            : params_.target_delay_ns;
    if (rtt_good) {
      last_rtt_ns_ = rtt_ns;
      ++counters_.acks;
    }
    if (Decrease(now_ns, gate, 1 - params_.max_mdf)) ++counters_.ecn_decreases;
    return;
  }
  if (!rtt_good) return;
  ++counters_.acks;
  last_rtt_ns_ = rtt_ns;
  if (rtt_ns < params_.target_delay_ns) {
    const double n = static_cast<double>(acked);
    window_ += window_ >= 1 ? params_.additive_increase * n / window_
                            : params_.additive_increase * n;
    Clamp();
    ++counters_.increases;
    return;
  }
  const double d = static_cast<double>(rtt_ns);
  const double over = d - static_cast<double>(params_.target_delay_ns);
  const double factor =
      std::max(1 - params_.beta * over / d, 1 - params_.max_mdf);
  if (Decrease(now_ns, rtt_ns, factor)) ++counters_.delay_decreases;
}

void DelayWindow::OnRetransmitTimeout(int64_t now_ns) {
  if (!Accept(now_ns)) return;
  const int64_t gate =
      last_rtt_ns_ > 0 ? last_rtt_ns_ : params_.target_delay_ns;
  if (Decrease(now_ns, gate, 1 - params_.max_mdf)) {
    ++counters_.timeout_decreases;
  }
}

uint32_t DelayWindow::PacketsInFlight() const {
  return std::max<uint32_t>(1, static_cast<uint32_t>(window_));
}

int64_t DelayWindow::PacingGapNs() const {
  if (window_ >= 1 || last_rtt_ns_ == 0) return 0;
  return static_cast<int64_t>(static_cast<double>(last_rtt_ns_) / window_);
}

}  // namespace spinnic::diad
