// One immutable version of the registered memory regions, indexed by rkey:
// the appliance's address-translation table (APEnet's TLB). Lookups are one
// hash probe however many regions exist. Published like the ECTX table:
// built by the control side, swapped in by pointer, the old version freed
// after every HPU has passed a quiescent state (see dataplane.cc).
#ifndef SPINNIC_DATAPLANE_REGION_TABLE_H_
#define SPINNIC_DATAPLANE_REGION_TABLE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "dataplane/memory_region.h"

namespace spinnic {

class RegionTable {
 public:
  RegionTable() = default;
  explicit RegionTable(std::vector<std::shared_ptr<const MemoryRegion>> regions)
      : regions_(std::move(regions)) {
    by_rkey_.reserve(regions_.size());
    for (const auto& region : regions_) {
      by_rkey_[region->rkey()] = region.get();
      if (region->stream_id() != 0) {
        by_stream_[region->stream_id()] = region.get();
      }
    }
  }

  // The region a peer names with `rkey`, or nullptr.
  const MemoryRegion* FindByRkey(uint32_t rkey) const {
    auto it = by_rkey_.find(rkey);
    return it == by_rkey_.end() ? nullptr : it->second;
  }

  // The stream region of DiAD stream `stream_id`, or nullptr.
  const MemoryRegion* FindByStream(uint32_t stream_id) const {
    auto it = by_stream_.find(stream_id);
    return it == by_stream_.end() ? nullptr : it->second;
  }

  // In registration order.
  const std::vector<std::shared_ptr<const MemoryRegion>>& regions() const {
    return regions_;
  }

 private:
  std::vector<std::shared_ptr<const MemoryRegion>> regions_;
  absl::flat_hash_map<uint32_t, const MemoryRegion*> by_rkey_;
  absl::flat_hash_map<uint32_t, const MemoryRegion*> by_stream_;
};

}  // namespace spinnic

#endif  // SPINNIC_DATAPLANE_REGION_TABLE_H_
