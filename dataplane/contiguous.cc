#include "dataplane/contiguous.h"

namespace spinnic {

bool MakeChainContiguous(rte_mbuf** packet, rte_mempool* pool) {
  rte_mbuf* m = *packet;
  if (RTE_MBUF_DIRECT(m) && rte_mbuf_refcnt_read(m) == 1 &&
      rte_pktmbuf_linearize(m) == 0) {
    return true;
  }
  // One mbuf must hold the whole frame for the copy to be contiguous.
  if (m->pkt_len > rte_pktmbuf_data_room_size(pool) - RTE_PKTMBUF_HEADROOM) {
    return false;
  }
  rte_mbuf* copy = rte_pktmbuf_copy(m, pool, 0, UINT32_MAX);
  if (copy == nullptr) return false;
  rte_pktmbuf_free(m);
  *packet = copy;
  return true;
}

}  // namespace spinnic
