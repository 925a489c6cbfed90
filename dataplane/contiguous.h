// Making a received chain of mbufs one contiguous buffer, for the parsers
// and handlers that read a frame as one span. A chain whose first segment
// is a private direct mbuf with room is linearised in place; one whose
// first segment shares its buffer (a clone, or a zero-copy packet from
// another dataplane over an in-memory ring, region_tx.h) is copied into a
// fresh mbuf instead, because linearising would write into the sender's
// buffer.
#ifndef SPINNIC_DATAPLANE_CONTIGUOUS_H_
#define SPINNIC_DATAPLANE_CONTIGUOUS_H_

#include <rte_mbuf.h>
#include <rte_mempool.h>

namespace spinnic {

// The out-of-line part of MakeContiguous.
bool MakeChainContiguous(rte_mbuf** packet, rte_mempool* pool);

// True with *packet one segment (possibly a new mbuf from `pool`, the old
// chain freed); false, *packet unchanged, when that cannot be had (no room
// and no mbuf): the caller drops it.
inline bool MakeContiguous(rte_mbuf** packet, rte_mempool* pool) {
  return (*packet)->nb_segs == 1 || MakeChainContiguous(packet, pool);
}

}  // namespace spinnic

#endif  // SPINNIC_DATAPLANE_CONTIGUOUS_H_
