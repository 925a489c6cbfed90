#include "dataplane/roce/dcqcn.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace spinnic::roce {
namespace {

absl::Status Invalid(absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("dcqcn.", field, ": ", what));
}

}  // namespace

absl::Status ValidateDcqcnParams(const DcqcnParams& p) {
  if (p.line_rate_bps == 0) {
    return Invalid("line_rate_bps",
                   "missing; write the port's rate in bits per second");
  }
  if (p.min_rate_bps == 0 || p.min_rate_bps > p.line_rate_bps) {
    return Invalid("min_rate_bps",
                   absl::StrCat(p.min_rate_bps,
                                " is out of range; write a floor in [1, "
                                "line_rate_bps = ",
                                p.line_rate_bps, "] bits per second"));
  }
  if (!(std::isfinite(p.g) && p.g > 0 && p.g <= 1)) {
    return Invalid("g", absl::StrFormat("%g is not a gain in (0, 1]; write "
                                        "e.g. 0.00390625 (1/256)",
                                        p.g));
  }
  if (p.alpha_timer_ns == 0) {
    return Invalid("alpha_timer_ns", "0; write a period, e.g. 55000 (55 us)");
  }
  if (p.increase_timer_ns == 0) {
    return Invalid("increase_timer_ns",
                   "0; write a period, e.g. 300000 (300 us)");
  }
  if (p.additive_increase_bps > p.line_rate_bps) {
    return Invalid("additive_increase_bps",
                   "above the line rate; write a step of at most "
                   "line_rate_bps, e.g. 5000000 (5 Mb/s)");
  }
  if (p.hyper_increase_bps > p.line_rate_bps) {
    return Invalid("hyper_increase_bps",
                   "above the line rate; write a step of at most "
                   "line_rate_bps, e.g. 50000000 (50 Mb/s)");
  }
  if (p.initial_rate_bps != 0 && (p.initial_rate_bps < p.min_rate_bps ||
                                  p.initial_rate_bps > p.line_rate_bps)) {
    return Invalid(
        "initial_rate_bps",
        absl::StrCat(p.initial_rate_bps,
                     " is out of range; write a rate in [min_rate_bps"
                     " = ",
                     p.min_rate_bps, ", line_rate_bps = ", p.line_rate_bps,
                     "], or 0 for the line rate"));
  }
  if (!(std::isfinite(p.initial_alpha) && p.initial_alpha >= 0 &&
        p.initial_alpha <= 1)) {
    return Invalid("initial_alpha",
                   absl::StrFormat("%g is out of range; write a value in "
                                   "[0, 1], e.g. 1",
                                   p.initial_alpha));
  }
  return absl::OkStatus();
}

DcqcnRateController::DcqcnRateController(const DcqcnParams& params,
                                         int64_t now_ns)
    : params_(params),
      current_rate_(static_cast<double>(params.line_rate_bps)),
      target_rate_(static_cast<double>(params.line_rate_bps)),
      alpha_(params.initial_alpha),
      last_ns_(now_ns) {
  Start(now_ns);
}

void DcqcnRateController::Start(int64_t now_ns) {
  const uint64_t line = params_.line_rate_bps;
  const uint64_t start = params_.initial_rate_bps == 0
                             ? line
                             : std::min(params_.initial_rate_bps, line);
  current_rate_ = static_cast<double>(start);
  target_rate_ = current_rate_;
  timer_stage_ = 0;
  byte_stage_ = 0;
  bytes_since_event_ = 0;
  throttled_ = start < line;
  increase_due_ns_ = now_ns + static_cast<int64_t>(params_.increase_timer_ns);
}

bool DcqcnRateController::Accept(int64_t now_ns) {
  if (now_ns < last_ns_) {
    ++counters_.clock_backwards;
    return false;
  }
  last_ns_ = now_ns;
  return true;
}

int64_t DcqcnRateController::NextEventNs() const {
  constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
  return std::min(alpha_live_ ? alpha_due_ns_ : kNever,
                  throttled_ ? increase_due_ns_ : kNever);
}

void DcqcnRateController::Clamp() {
  const double line = static_cast<double>(params_.line_rate_bps);
  const double floor = static_cast<double>(params_.min_rate_bps);
  current_rate_ = std::clamp(current_rate_, floor, line);
  target_rate_ = std::clamp(target_rate_, floor, line);
}

void DcqcnRateController::IncreaseEvent() {
  const uint32_t high = std::max(timer_stage_, byte_stage_);
  const uint32_t low = std::min(timer_stage_, byte_stage_);
  const uint32_t stages = params_.fast_recovery_stages;
  if (high <= stages) {
    ++counters_.fast_recoveries;
  } else if (low > stages) {
    target_rate_ += static_cast<double>(params_.hyper_increase_bps);
    ++counters_.hyper_increases;
  } else {
    target_rate_ += static_cast<double>(params_.additive_increase_bps);
    ++counters_.additive_increases;
  }
  current_rate_ = (target_rate_ + current_rate_) / 2;
  Clamp();
  const double line = static_cast<double>(params_.line_rate_bps);
  // Back at line rate: nothing left to recover until the next CNP.
  if (current_rate_ >= line && target_rate_ >= line) throttled_ = false;
}

void DcqcnRateController::ResetToLineRate(int64_t now_ns,
                                          uint64_t alpha_periods) {
  // Alpha decays in closed form; the rate is where a flow that has been
  // quiet this long would be: where a new one starts.
  if (alpha_live_) {
    alpha_ *= std::pow(1 - params_.g, static_cast<double>(alpha_periods));
  }
  Start(now_ns);
  alpha_due_ns_ = now_ns + static_cast<int64_t>(params_.alpha_timer_ns);
  ++counters_.idle_resets;
}

void DcqcnRateController::RunTimers(int64_t now_ns) {
  if (!alpha_live_ && !throttled_) return;
  const int64_t alpha_period = static_cast<int64_t>(params_.alpha_timer_ns);
  const int64_t increase_period =
      static_cast<int64_t>(params_.increase_timer_ns);
  const uint64_t alpha_events =
      alpha_live_ && alpha_due_ns_ <= now_ns
          ? static_cast<uint64_t>((now_ns - alpha_due_ns_) / alpha_period) + 1
          : 0;
  const uint64_t increase_events =
      throttled_ && increase_due_ns_ <= now_ns
          ? static_cast<uint64_t>((now_ns - increase_due_ns_) /
                                  increase_period) +
                1
          : 0;
  if (alpha_events > kMaxCatchUpEvents || increase_events > kMaxCatchUpEvents) {
    ResetToLineRate(now_ns, alpha_events);
    return;
  }
  // Both timers' expiries in time order (alpha first on a tie), so that an
  // increase sees the alpha of its moment; bounded by the counts above.
  for (;;) {
    const bool alpha_due = alpha_live_ && alpha_due_ns_ <= now_ns;
    const bool increase_due = throttled_ && increase_due_ns_ <= now_ns;
    if (!alpha_due && !increase_due) break;
    if (alpha_due && (!increase_due || alpha_due_ns_ <= increase_due_ns_)) {
      alpha_ *= 1 - params_.g;
      alpha_due_ns_ += alpha_period;
      ++counters_.alpha_decays;
    } else {
      ++timer_stage_;
      increase_due_ns_ += increase_period;
      IncreaseEvent();
    }
  }
}

void DcqcnRateController::Advance(int64_t now_ns) {
  if (!Accept(now_ns)) return;
  RunTimers(now_ns);
}

void DcqcnRateController::OnCnp(int64_t now_ns) {
  // A CNP stamped before a time already seen is still congestion: it is
  // taken at the latest time seen (and the stamp counted as bad).
  if (Accept(now_ns)) RunTimers(now_ns);
  now_ns = last_ns_;
  ++counters_.cnps;
  target_rate_ = current_rate_;
  current_rate_ *= 1 - alpha_ / 2;
  alpha_ = (1 - params_.g) * alpha_ + params_.g;
  Clamp();
  throttled_ = true;
  alpha_live_ = true;
  timer_stage_ = 0;
  byte_stage_ = 0;
  bytes_since_event_ = 0;
  alpha_due_ns_ = now_ns + static_cast<int64_t>(params_.alpha_timer_ns);
  increase_due_ns_ = now_ns + static_cast<int64_t>(params_.increase_timer_ns);
}

void DcqcnRateController::OnBytesSent(uint64_t bytes, int64_t now_ns) {
  if (Accept(now_ns)) RunTimers(now_ns);
  if (!throttled_ || params_.byte_counter_bytes == 0) return;
  bytes_since_event_ += bytes;
  uint64_t events = bytes_since_event_ / params_.byte_counter_bytes;
  bytes_since_event_ %= params_.byte_counter_bytes;
  // A burst worth more events than that would recover any flow anyway.
  events = std::min<uint64_t>(events, kMaxCatchUpEvents);
  for (uint64_t i = 0; i < events && throttled_; ++i) {
    ++byte_stage_;
    IncreaseEvent();
  }
}

}  // namespace spinnic::roce
