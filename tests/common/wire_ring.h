// The test's end of an in-process wire: the rte_rings behind a net_ring port
// (rte_eth_from_rings), which the test fills and drains while the port's PMD
// (Debian's uninstrumented librte_net_ring) drains and fills them for the
// HPUs. Same as rte_ring_enqueue/dequeue, plus the ThreadSanitizer hand-over
// annotations (dataplane/common/tsan.h) that pair with the HPU's at its
// rte_eth_rx_burst/tx_burst, so that a frame built by the test and read by a
// launched HPU (and back) is not reported as a race. Free in other builds.
#ifndef SPINNIC_TESTS_COMMON_WIRE_RING_H_
#define SPINNIC_TESTS_COMMON_WIRE_RING_H_

#include <rte_mbuf.h>
#include <rte_ring.h>

#include "dataplane/common/tsan.h"

namespace spinnic::testing_wire {

// 0 when the frame is on the ring; -ENOBUFS when the ring is full (the frame
// is still the caller's).
inline int PutOnWire(rte_ring* ring, rte_mbuf* frame) {
  tsan::Release(frame);
  return rte_ring_enqueue(ring, frame);
}

// How many of `count` frames went on the ring (the rest stay the caller's).
inline unsigned PutBurstOnWire(rte_ring* ring, rte_mbuf* const* frames,
                               unsigned count) {
  tsan::ReleaseEach(frames, count);
  return rte_ring_enqueue_burst(ring, reinterpret_cast<void* const*>(frames),
                                count, nullptr);
}

// 0 and the frame in *object; -ENOENT when the ring is empty.
inline int TakeFromWire(rte_ring* ring, void** object) {
  const int rc = rte_ring_dequeue(ring, object);
  if (rc == 0) tsan::Acquire(*object);
  return rc;
}

// How many frames (up to `count`) were taken into `objects`.
inline unsigned TakeBurstFromWire(rte_ring* ring, void** objects,
                                  unsigned count) {
  const unsigned taken = rte_ring_dequeue_burst(ring, objects, count, nullptr);
  tsan::AcquireEach(objects, taken);
  return taken;
}

}  // namespace spinnic::testing_wire

#endif  // SPINNIC_TESTS_COMMON_WIRE_RING_H_
