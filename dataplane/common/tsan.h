// ThreadSanitizer happens-before annotations for hand-overs that pass through
// code TSan cannot see: Debian's DPDK is not built with TSan, so a frame the
// test's peer puts on a net_ring port and an HPU receives through the PMD's
// rte_eth_rx_burst (compiled into librte_net_ring), or an HPU's launch by the
// EAL, carries no synchronisation in TSan's eyes. The side that hands an
// object over calls Release(object) first; the side that takes it calls
// Acquire(object) after. docs/testing.md, "ThreadSanitizer", lists where.
//
// In every other build these are empty inline functions and the loops in
// ReleaseEach/AcquireEach compile to nothing: no cost on the hot path.
#ifndef SPINNIC_DATAPLANE_COMMON_TSAN_H_
#define SPINNIC_DATAPLANE_COMMON_TSAN_H_

#include <cstddef>

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SPINNIC_TSAN_BUILD 1
#endif
#endif
#if !defined(SPINNIC_TSAN_BUILD) && defined(__SANITIZE_THREAD__)
#define SPINNIC_TSAN_BUILD 1
#endif

#ifdef SPINNIC_TSAN_BUILD
// The TSan runtime's dynamic annotations.
extern "C" void AnnotateHappensBefore(const char* file, int line,
                                      const volatile void* addr);
extern "C" void AnnotateHappensAfter(const char* file, int line,
                                     const volatile void* addr);
#endif

namespace spinnic::tsan {

// Everything this thread did so far happens before what a thread does after
// its Acquire(object).
inline void Release([[maybe_unused]] const void* object) {
#ifdef SPINNIC_TSAN_BUILD
  AnnotateHappensBefore(__FILE__, __LINE__, object);
#endif
}

inline void Acquire([[maybe_unused]] const void* object) {
#ifdef SPINNIC_TSAN_BUILD
  AnnotateHappensAfter(__FILE__, __LINE__, object);
#endif
}

// For a burst of mbufs (the head of a chain stands for all its segments).
template <typename T>
inline void ReleaseEach([[maybe_unused]] T* const* objects,
                        [[maybe_unused]] size_t count) {
#ifdef SPINNIC_TSAN_BUILD
  for (size_t i = 0; i < count; ++i) Release(objects[i]);
#endif
}

template <typename T>
inline void AcquireEach([[maybe_unused]] T* const* objects,
                        [[maybe_unused]] size_t count) {
#ifdef SPINNIC_TSAN_BUILD
  for (size_t i = 0; i < count; ++i) Acquire(objects[i]);
#endif
}

}  // namespace spinnic::tsan

#endif  // SPINNIC_DATAPLANE_COMMON_TSAN_H_
