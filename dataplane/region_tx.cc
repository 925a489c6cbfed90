#include "dataplane/region_tx.h"

#include <rte_errno.h>
#include <rte_malloc.h>
#include <rte_memory.h>

#include "absl/strings/str_cat.h"

namespace spinnic {
namespace {

// One zero-copy range in flight: DPDK's shared info (the refcount the
// packet and its clones share) and what to release when it drops to 0.
struct TxRef {
  rte_mbuf_ext_shared_info shinfo;
  const MemoryRegion* region;
  rte_mempool* home;
};

// rte_mbuf_ext_shared_info::free_cb: the last mbuf on the range is gone.
void ReleaseRef(void* /*addr*/, void* opaque) {
  TxRef* ref = static_cast<TxRef*>(opaque);
  ref->region->Unpin();
  rte_mempool_put(ref->home, ref);
}

}  // namespace

absl::StatusOr<std::unique_ptr<RegionTx>> RegionTx::Create(
    const std::string& name, uint32_t capacity, int socket) {
  const unsigned cache =
      std::min<unsigned>(RTE_MEMPOOL_CACHE_MAX_SIZE, capacity / 8);
  rte_mempool* refs =
      rte_mempool_create(name.c_str(), capacity, sizeof(TxRef), cache, 0,
                         nullptr, nullptr, nullptr, nullptr, socket, 0);
  if (refs == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot create the zero-copy reference pool ", name, " (",
                     capacity, " entries): ", rte_strerror(rte_errno),
                     "; give the EAL more memory (-m or hugepages)"));
  }
  return std::unique_ptr<RegionTx>(new RegionTx(refs));
}

RegionTx::~RegionTx() { rte_mempool_free(refs_); }

rte_mbuf* RegionTx::Attach(rte_mempool* pool, const MemoryRegion& region,
                           const uint8_t* data, uint16_t length) {
  rte_iova_t iova = reinterpret_cast<uintptr_t>(data);
  if (rte_eal_iova_mode() != RTE_IOVA_VA) {
    iova = rte_malloc_virt2iova(data);
    // A NIC reads the range as one IOVA run: physical pages must follow.
    if (iova == RTE_BAD_IOVA || length == 0 ||
        rte_malloc_virt2iova(data + length - 1) != iova + length - 1) {
      return nullptr;
    }
  }
  void* object;
  if (rte_mempool_get(refs_, &object) != 0) return nullptr;
  rte_mbuf* m = rte_pktmbuf_alloc(pool);
  if (m == nullptr) {
    rte_mempool_put(refs_, object);
    return nullptr;
  }
  if (!region.Pin()) {
    rte_pktmbuf_free(m);
    rte_mempool_put(refs_, object);
    return nullptr;
  }
  TxRef* ref = static_cast<TxRef*>(object);
  ref->region = &region;
  ref->home = refs_;
  ref->shinfo.free_cb = ReleaseRef;
  ref->shinfo.fcb_opaque = ref;
  rte_mbuf_ext_refcnt_set(&ref->shinfo, 1);
  // The mbuf API takes a non-const buffer; nothing writes through it (a
  // packet's payload is only read on its way out).
  rte_pktmbuf_attach_extbuf(m, const_cast<uint8_t*>(data), iova, length,
                            &ref->shinfo);
  m->data_len = length;
  m->pkt_len = length;
  return m;
}

}  // namespace spinnic
