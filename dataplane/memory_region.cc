#include "dataplane/memory_region.h"

#include <rte_malloc.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"

namespace spinnic {

absl::StatusOr<std::unique_ptr<MemoryRegion>> MemoryRegion::Create(
    uint64_t id, const RegionConfig& config, uint32_t rkey,
    uint64_t base_address) {
  std::unique_ptr<MemoryRegion> region(new MemoryRegion());
  region->id_ = id;
  region->name_ = config.name;
  region->rkey_ = rkey;
  region->base_address_ = base_address;
  region->length_ = config.length;
  region->access_ = config.access;
  region->stream_id_ = config.stream_id;
  region->data_ = static_cast<uint8_t*>(
      rte_zmalloc("spinnic_region", config.length, RTE_CACHE_LINE_SIZE));
  if (region->data_ == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot allocate ", config.length,
        " bytes of EAL memory for the region: deregister regions, register a "
        "smaller one, or give the EAL more memory (-m or hugepages)"));
  }
  return region;
}

MemoryRegion::~MemoryRegion() { rte_free(data_); }

bool MemoryRegion::BeginRetireWithin(uint64_t wait_ns) const {
  retiring_.store(true);
  // Packets leave TX queues within microseconds while the link is up: poll
  // finely at first, then back off.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::nanoseconds(wait_ns);
  auto pause = std::chrono::microseconds(10);
  while (pins_.load() != 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      retiring_.store(false);
      return false;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(10'000));
  }
  return true;
}

std::string RegionAccessText(uint32_t access) {
  std::string text;
  auto add = [&](uint32_t bit, absl::string_view name) {
    if (access & bit) absl::StrAppend(&text, text.empty() ? "" : ",", name);
  };
  add(kLocalRead, "local_read");
  add(kLocalWrite, "local_write");
  add(kRemoteRead, "remote_read");
  add(kRemoteWrite, "remote_write");
  return text.empty() ? "none" : text;
}

}  // namespace spinnic
