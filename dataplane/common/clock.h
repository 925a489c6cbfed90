// The one monotonic clock of the dataplane: DPDK's timer cycles (the TSC on
// x86) converted to nanoseconds with a 32.32 fixed-point factor computed once.
// No system call, no lock; one multiplication per reading.
//
// The first reading computes the factor from rte_get_timer_hz(), which the
// EAL measures in rte_eal_init: call nothing here before it (the check
// aborts with a message rather than divide by zero).
//
//   const uint64_t start = clock::NowNanos();
//   ...
//   latency.Add(clock::NowNanos() - start);
//
// For latencies stamped per packet, Ticks() at the start and
// TicksToNanos(Ticks() - start) at the end cost one conversion instead of two.
#ifndef SPINNIC_DATAPLANE_COMMON_CLOCK_H_
#define SPINNIC_DATAPLANE_COMMON_CLOCK_H_

#include <rte_cycles.h>
#include <rte_debug.h>

#include <cstdint>

namespace spinnic::clock {
namespace internal {

// Nanoseconds per timer tick, 32.32 fixed point.
inline uint64_t NanosPerTickQ32() {
  static const uint64_t factor = [] {
    const uint64_t hz = rte_get_timer_hz();
    RTE_VERIFY(hz != 0);  // the clock was read before rte_eal_init
    return static_cast<uint64_t>(
        (static_cast<__uint128_t>(1'000'000'000ull) << 32) / hz);
  }();
  return factor;
}

}  // namespace internal

// Timer ticks (rte_get_timer_cycles).
inline uint64_t Ticks() { return rte_get_timer_cycles(); }

// `ticks` (a reading of Ticks() or a difference of two) in nanoseconds.
inline uint64_t TicksToNanos(uint64_t ticks) {
  return static_cast<uint64_t>(
      (static_cast<__uint128_t>(ticks) * internal::NanosPerTickQ32()) >> 32);
}

// Nanoseconds since an arbitrary start (the TSC's), monotonic.
inline uint64_t NowNanos() { return TicksToNanos(Ticks()); }

// Microseconds on the same clock.
inline uint64_t NowMicros() { return NowNanos() / 1000; }

}  // namespace spinnic::clock

#endif  // SPINNIC_DATAPLANE_COMMON_CLOCK_H_
