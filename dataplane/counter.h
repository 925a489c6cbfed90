// A statistics counter written by exactly one lcore and read by the control
// side. Relaxed atomics compile to plain loads and stores on x86-64 (no lock
// prefix), so the hot path pays nothing, and readers see no torn values.
#ifndef SPINNIC_DATAPLANE_COUNTER_H_
#define SPINNIC_DATAPLANE_COUNTER_H_

#include <atomic>
#include <cstdint>

namespace spinnic {

class Counter {
 public:
  // Only the owning lcore may call Add.
  void Add(uint64_t n = 1) {
    value_.store(value_.load(std::memory_order_relaxed) + n,
                 std::memory_order_relaxed);
  }
  uint64_t Get() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

}  // namespace spinnic

#endif  // SPINNIC_DATAPLANE_COUNTER_H_
