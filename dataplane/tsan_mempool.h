// ThreadSanitizer builds only: makes the mempool's hand-over of an mbuf
// between threads visible to TSan. Debian's ring mempool driver
// (librte_mempool_ring) is uninstrumented, so an mbuf freed by one HPU and
// allocated by another looks, to TSan, like two unsynchronised writes. After
// rte_eal_init has loaded the drivers, this points the ring drivers' enqueue
// and dequeue at the header-inline rte_ring functions compiled into our
// (instrumented) objects. Same ring, same layout, same semantics; in other
// builds it does nothing.
#ifndef SPINNIC_DATAPLANE_TSAN_MEMPOOL_H_
#define SPINNIC_DATAPLANE_TSAN_MEMPOOL_H_

namespace spinnic {

// Call once, after rte_eal_init and before the first mempool is created.
void InstrumentMempoolRingOps();

}  // namespace spinnic

#endif  // SPINNIC_DATAPLANE_TSAN_MEMPOOL_H_
