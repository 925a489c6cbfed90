#include "dataplane/roce/connection_regions.h"

#include <rte_malloc.h>

#include <algorithm>

namespace spinnic::roce {

ConnectionRegions::~ConnectionRegions() { FreeAll(); }

ConnectionRegions::Status ConnectionRegions::Allocate(uint64_t length,
                                                      Region* out) {
  if (length == 0 || length > max_bytes_ - bytes_) {
    return Status::kNotEnoughMemory;
  }
  auto free_slot =
      std::find_if(slots_.begin(), slots_.end(),
                   [](const Slot& s) { return s.data == nullptr; });
  if (free_slot == slots_.end()) return Status::kTooManyRegions;
  uint8_t* data = static_cast<uint8_t*>(
      rte_zmalloc("spinnic_connection", length, RTE_CACHE_LINE_SIZE));
  if (data == nullptr) return Status::kNotEnoughMemory;
  const uint32_t index = static_cast<uint32_t>(free_slot - slots_.begin());
  free_slot->data = data;
  free_slot->length = length;
  free_slot->rkey = (qpn_ << 8) | (index + 1);
  bytes_ += length;
  out->id = index + 1;
  out->address = reinterpret_cast<uint64_t>(data);
  out->rkey = free_slot->rkey;
  out->bytes = {data, length};
  return Status::kOk;
}

void ConnectionRegions::Free(uint32_t id) {
  if (id == 0 || id > slots_.size()) return;
  Slot& s = slots_[id - 1];
  if (s.data == nullptr) return;
  rte_free(s.data);
  bytes_ -= s.length;
  s = Slot();
}

void ConnectionRegions::FreeAll() {
  for (uint32_t id = 1; id <= slots_.size(); ++id) Free(id);
}

uint8_t* ConnectionRegions::Resolve(uint32_t rkey, uint64_t va,
                                    uint32_t length) const {
  if (bytes_ == 0) return nullptr;
  for (const Slot& s : slots_) {
    if (s.data == nullptr || s.rkey != rkey) continue;
    const uint64_t base = reinterpret_cast<uint64_t>(s.data);
    if (va < base || va - base > s.length || length > s.length - (va - base)) {
      return nullptr;
    }
    return s.data + (va - base);
  }
  return nullptr;
}

}  // namespace spinnic::roce
