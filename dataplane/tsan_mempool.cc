#include "dataplane/tsan_mempool.h"

#include "dataplane/common/tsan.h"

#ifdef SPINNIC_TSAN_BUILD
#include <rte_errno.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include <cstring>
#endif

namespace spinnic {

#ifdef SPINNIC_TSAN_BUILD
namespace {

// The ring drivers' own bodies, with the ring's synchronisation mode taken
// from the ring itself (each ring_* driver creates its ring with its flags).
int RingEnqueue(rte_mempool* pool, void* const* objects, unsigned count) {
  return rte_ring_enqueue_bulk(static_cast<rte_ring*>(pool->pool_data), objects,
                               count, nullptr) == 0
             ? -ENOBUFS
             : 0;
}

int RingDequeue(rte_mempool* pool, void** objects, unsigned count) {
  return rte_ring_dequeue_bulk(static_cast<rte_ring*>(pool->pool_data), objects,
                               count, nullptr) == 0
             ? -ENOBUFS
             : 0;
}

}  // namespace

void InstrumentMempoolRingOps() {
  for (uint32_t i = 0; i < rte_mempool_ops_table.num_ops; ++i) {
    rte_mempool_ops& ops = rte_mempool_ops_table.ops[i];
    if (std::strncmp(ops.name, "ring_", 5) != 0) continue;
    ops.enqueue = RingEnqueue;
    ops.dequeue = RingDequeue;
  }
}
#else
void InstrumentMempoolRingOps() {}
#endif

}  // namespace spinnic
