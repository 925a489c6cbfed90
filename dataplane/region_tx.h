// Zero-copy transmission out of region memory: an mbuf whose data is a range
// of a registered region (rte_pktmbuf_attach_extbuf), chained behind a header
// mbuf, so that a NIC that does DMA takes the payload straight from the
// region, as a hardware RDMA responder does, instead of the HPU copying it
// into a packet buffer first (docs/architecture.md, "Zero-copy").
//
// The region stays pinned (MemoryRegion::Pin) until the last mbuf that refers
// to the range is freed: the packet and every clone a transport keeps for
// retransmission. That last free happens wherever the mbuf ends -- the PMD's
// TX completion on the HPU, a ring consumer on another thread, a port's stop
// -- so the reference is a mempool object (thread-safe to return from
// anywhere), holding DPDK's shared-info refcount. Deregistering a region
// waits for its pins (MemoryRegion::BeginRetireWithin), so its memory is
// never freed under a queued packet.
#ifndef SPINNIC_DATAPLANE_REGION_TX_H_
#define SPINNIC_DATAPLANE_REGION_TX_H_

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "dataplane/memory_region.h"

namespace spinnic {

class RegionTx {
 public:
  // `capacity` references (at most that many zero-copy segments in flight
  // at once), in a mempool named `name`.
  static absl::StatusOr<std::unique_ptr<RegionTx>> Create(
      const std::string& name, uint32_t capacity, int socket);
  // Every mbuf attached through it must be freed before.
  ~RegionTx();
  RegionTx(const RegionTx&) = delete;
  RegionTx& operator=(const RegionTx&) = delete;

  // An mbuf from `pool` whose data is `data[0, length)` inside `region`,
  // with the region pinned until the mbuf and all its clones are freed.
  // nullptr (the caller copies instead) when `pool` or the references are
  // exhausted, the region is being deregistered, or the range is not
  // IOVA-contiguous (physical addressing across a page boundary).
  rte_mbuf* Attach(rte_mempool* pool, const MemoryRegion& region,
                   const uint8_t* data, uint16_t length);

  // References taken and not yet returned.
  uint32_t in_use() const { return rte_mempool_in_use_count(refs_); }

 private:
  explicit RegionTx(rte_mempool* refs) : refs_(refs) {}

  rte_mempool* refs_;
};

}  // namespace spinnic

#endif  // SPINNIC_DATAPLANE_REGION_TX_H_
