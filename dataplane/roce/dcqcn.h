// DCQCN's reaction point (RP): the sender-side rate controller of RoCEv2
// congestion control (Zhu et al., "Congestion Control for Large-Scale RDMA
// Deployments", SIGCOMM 2015, section 3.1 and figure 7). A pure state
// machine: no DPDK objects, no clock of its own; the caller passes the time
// in nanoseconds and the bytes it sent, and reads the rate to pace at.
// docs/congestion.md describes where it sits.
//
// The algorithm, with Rc the current rate, Rt the target rate and alpha the
// estimate of congestion:
//  - a CNP arrives:  Rt = Rc; Rc = Rc (1 - alpha / 2);
//                    alpha = (1 - g) alpha + g;
//                    the increase timer, byte counter and both stage counts
//                    restart (T = BC = 0), and so does the alpha timer.
//  - alpha timer (every alpha_timer_ns without a CNP): alpha = (1 - g) alpha.
//  - increase events, after the first CNP, from the increase timer (every
//    increase_timer_ns: T += 1) and the byte counter (every
//    byte_counter_bytes sent: BC += 1):
//      max(T, BC) <= F           fast recovery:     Rc = (Rt + Rc) / 2
//      min(T, BC) >  F           hyper increase:    Rt += Rhai; then as above
//      otherwise                 additive increase: Rt += Rai;  then as above
//    (F = fast_recovery_stages: the first F events of either counter after a
//    cut are fast recovery, the paper's "F = 5" stages.)
//  - Rc and Rt stay within [min_rate_bps, line_rate_bps].
//
// Bad input is counted and ignored: a time earlier than one already seen
// (a clock that jumped back) changes nothing; a gap of more than
// kMaxCatchUpEvents timer periods (a stalled caller, a clock that jumped
// forward) does not replay every period, it resets the controller to line
// rate (or the initial rate when one is configured), as a flow that has
// been quiet for that long would be.
#ifndef SPINNIC_DATAPLANE_ROCE_DCQCN_H_
#define SPINNIC_DATAPLANE_ROCE_DCQCN_H_

#include <cstdint>

#include "absl/status/status.h"

namespace spinnic::roce {

// Defaults: the paper's constants where it gives them, NVIDIA's published
// ConnectX defaults (the "DCQCN Parameters" page of the MLNX_OFED/DOCA
// documentation, parameters rpg_* of /sys/class/net/<if>/ecn/roce_rp) for
// the rest. Where the two differ the choice is noted.
struct DcqcnParams {
  // The port's rate; Rc and Rt never exceed it. No default: required.
  uint64_t line_rate_bps = 0;
  // Floor of Rc and Rt: a sender never stalls. NVIDIA rpg_min_rate: 1 Mb/s.
  uint64_t min_rate_bps = 1'000'000;
  // Gain of the alpha EWMA. Paper: g = 1/256. (NVIDIA's dce_tcp_g 1019/1024
  // is the decay factor, i.e. g = 5/1024.)
  double g = 1.0 / 256;
  // Alpha decays once per this period without a CNP. Paper: K = 55 us.
  uint64_t alpha_timer_ns = 55'000;
  // Rate increase timer. NVIDIA rpg_time_reset: 300 us.
  uint64_t increase_timer_ns = 300'000;
  // Rate increase byte counter; 0 turns it off (then BC stays 0: fast
  // recovery, then additive increase only). Paper: B = 10 MB.
  uint64_t byte_counter_bytes = 10'000'000;
  // Fast recovery stages F. Paper: F = 5 (NVIDIA's rpg_threshold defaults
  // to 1 on some firmware; the paper's value is the documented algorithm).
  uint32_t fast_recovery_stages = 5;
  // Additive increase step Rai. NVIDIA rpg_ai_rate: 5 Mb/s.
  uint64_t additive_increase_bps = 5'000'000;
  // Hyper increase step Rhai. NVIDIA rpg_hai_rate: 50 Mb/s.
  uint64_t hyper_increase_bps = 50'000'000;
  // Alpha before the first CNP. Paper: 1; NVIDIA initial_alpha_value
  // 1023/1024.
  double initial_alpha = 1.0;
  // The rate a new flow starts at; 0: the line rate (the paper's start,
  // and NVIDIA's). Below the line rate the flow starts as if a cut had
  // just brought Rc and Rt there: throttled, the increase timer and byte
  // counter running from the start (fast recovery, which changes nothing
  // while Rc = Rt, then additive and hyper increase up to the line rate);
  // alpha keeps initial_alpha and its timer starts with the first CNP.
  // Softens an N:1 incast's first round trip, which otherwise fills the
  // bottleneck before any CNP arrives. A flow reset after a long gap
  // (idle_resets) starts here again.
  uint64_t initial_rate_bps = 0;
};

// OK, or INVALID_ARGUMENT naming the field and what to write.
absl::Status ValidateDcqcnParams(const DcqcnParams& params);

struct DcqcnCounters {
  uint64_t cnps = 0;             // CNPs taken (each one cut the rate)
  uint64_t alpha_decays = 0;     // alpha timer expiries
  uint64_t fast_recoveries = 0;  // increase events by kind
  uint64_t additive_increases = 0;
  uint64_t hyper_increases = 0;
  uint64_t clock_backwards = 0;  // calls with a time before the last one
  uint64_t idle_resets = 0;      // gaps too long to replay: back to line rate
};

class DcqcnRateController {
 public:
  // Timer periods replayed per call at most; a longer gap resets the flow.
  static constexpr uint64_t kMaxCatchUpEvents = 4096;

  // `params` must be valid (ValidateDcqcnParams). Starts at time `now_ns`
  // at the line rate, unthrottled, or at initial_rate_bps when that is set
  // and below the line rate (throttled, the increase timer running).
  DcqcnRateController(const DcqcnParams& params, int64_t now_ns);

  // A CNP for this flow arrived at `now_ns` (the timers due before it run
  // first).
  void OnCnp(int64_t now_ns);
  // `bytes` were sent at `now_ns`: runs the byte counter.
  void OnBytesSent(uint64_t bytes, int64_t now_ns);
  // Runs the timers due at `now_ns`. Call it at least every
  // NextEventNs(); calling it more often is harmless.
  void Advance(int64_t now_ns);

  // The rate to pace at, bits per second (Rc).
  double rate_bps() const { return current_rate_; }
  double target_rate_bps() const { return target_rate_; }
  double alpha() const { return alpha_; }
  // Whether a CNP has throttled the flow and it has not recovered yet.
  bool throttled() const { return throttled_; }
  uint32_t timer_stage() const { return timer_stage_; }
  uint32_t byte_stage() const { return byte_stage_; }
  // When the next timer (alpha or increase) is due; INT64_MAX when none is
  // (at the line rate before the first CNP).
  int64_t NextEventNs() const;
  const DcqcnCounters& counters() const { return counters_; }
  const DcqcnParams& params() const { return params_; }

 private:
  enum class Source { kTimer, kBytes };
  // false (and counted) when `now_ns` is before a time already seen.
  bool Accept(int64_t now_ns);
  void RunTimers(int64_t now_ns);
  void IncreaseEvent();
  void Clamp();
  void ResetToLineRate(int64_t now_ns, uint64_t alpha_periods);
  // The state of a new flow at `now_ns`: the line rate, or the initial
  // rate with the increase timer running.
  void Start(int64_t now_ns);

  DcqcnParams params_;
  double current_rate_;
  double target_rate_;
  double alpha_;
  bool throttled_ = false;   // increase timer and byte counter running
  bool alpha_live_ = false;  // alpha timer running (after the first CNP)
  int64_t last_ns_;
  int64_t alpha_due_ns_ = 0;
  int64_t increase_due_ns_ = 0;
  uint64_t bytes_since_event_ = 0;
  uint32_t timer_stage_ = 0;
  uint32_t byte_stage_ = 0;
  DcqcnCounters counters_;
};

}  // namespace spinnic::roce

#endif  // SPINNIC_DATAPLANE_ROCE_DCQCN_H_
