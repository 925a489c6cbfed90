// The Dataplane's memory regions (dataplane.h, memory_region.h): register
// with unguessable rkeys and addresses, publish by RCU, deregister when no
// handler binds and no transfer pins a region, and control-side copies of
// region and ECTX state bytes.
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>
#include <sys/random.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "dataplane/dataplane.h"
#include "dataplane/rcu_table.h"

namespace spinnic {
namespace {

// Region addresses: random 4 KiB-aligned bases in [4 GiB, 128 TiB), so that
// neither a host address nor another region's base can be inferred.
constexpr uint64_t kRegionSpaceStart = uint64_t{1} << 32;
constexpr uint64_t kRegionSpaceEnd = uint64_t{1} << 47;
constexpr uint64_t kRegionAlign = 4096;
// How long DeregisterRegion waits for a region's pins to go.
constexpr uint64_t kDeregisterWaitNs = 1'000'000'000;

// OUT_OF_RANGE unless [offset, offset + length) lies in `size` bytes.
absl::Status CheckRange(uint64_t size, uint64_t offset, uint64_t length,
                        absl::string_view what) {
  if (offset > size || length > size - offset) {
    return absl::OutOfRangeError(absl::StrCat("bytes [", offset, ", ",
                                              offset + length, ") are outside ",
                                              what, " of ", size, " bytes"));
  }
  return absl::OkStatus();
}

// INVALID_ARGUMENT when one read asks for more than a reply may carry.
absl::Status CheckReadLength(uint64_t length, uint64_t max_length) {
  if (length > max_length) {
    return absl::InvalidArgumentError(
        absl::StrCat("length ", length, " is over the ", max_length,
                     " bytes one read may return; read in pieces"));
  }
  return absl::OkStatus();
}

// A copy of `length` bytes at `offset` (0: to the end) of live memory that
// handlers and peers may be writing: each byte is as of some moment, as a
// DMA read of live memory would be.
absl::StatusOr<std::string> CopyRange(std::span<const uint8_t> bytes,
                                      uint64_t offset, uint64_t length,
                                      uint64_t max_length,
                                      absl::string_view what) {
  if (length == 0 && offset <= bytes.size()) length = bytes.size() - offset;
  if (absl::Status ok = CheckReadLength(length, max_length); !ok.ok()) {
    return ok;
  }
  if (absl::Status in = CheckRange(bytes.size(), offset, length, what);
      !in.ok()) {
    return in;
  }
  return std::string(reinterpret_cast<const char*>(bytes.data() + offset),
                     length);
}

// Kernel randomness (getrandom): rkeys are capabilities, so a peer must not
// be able to predict one from others it has seen.
uint64_t SecureRandom64() {
  uint64_t value = 0;
  size_t got = 0;
  while (got < sizeof(value)) {
    ssize_t n = getrandom(reinterpret_cast<uint8_t*>(&value) + got,
                          sizeof(value) - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
  }
  return value;
}

}  // namespace

absl::StatusOr<RegionInfo> Dataplane::RegisterRegion(
    const RegionConfig& config) {
  if (config.length == 0) {
    return absl::InvalidArgumentError(
        "region length is 0; give its size in bytes");
  }
  if (config.access == 0) {
    return absl::InvalidArgumentError(
        "region grants no access; set at least one of local_read, "
        "local_write, remote_read, remote_write");
  }
  // What a transport needs of the regions it delivers into (a DiAD stream
  // region holds a ring).
  for (const TransportModule* module : transport_list_) {
    if (absl::Status status = module->CheckRegion(config); !status.ok()) {
      return status;
    }
  }
  if (config.length > kRegionSpaceEnd - kRegionSpaceStart) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "a region of ", config.length, " bytes is larger than the ",
        kRegionSpaceEnd - kRegionSpaceStart, "-byte region address space"));
  }
  absl::MutexLock lock(&mu_);
  const auto& regions = current_regions_->regions();
  if (regions.size() >= max_regions_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("at most ", max_regions_,
                     " regions can be registered; deregister one first"));
  }
  if (config.length > region_bytes_limit_ - region_bytes_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "a region of ", config.length, " bytes does not fit: ", region_bytes_,
        " of the ", region_bytes_limit_,
        " bytes allowed for regions are in use; deregister regions, ask for "
        "less, or raise runtime.region_bytes_limit"));
  }
  for (const auto& region : regions) {
    if (config.stream_id != 0 && region->stream_id() == config.stream_id) {
      return absl::AlreadyExistsError(
          absl::StrCat("region ", region->id(), " already receives stream ",
                       config.stream_id, "; deregister it first"));
    }
    if (!config.name.empty() && region->name() == config.name) {
      return absl::AlreadyExistsError(absl::StrCat(
          "a region named '", config.name, "' is registered (id ", region->id(),
          "); deregister it first or choose another name"));
    }
  }
  // An rkey no live region has; a base whose range overlaps no live
  // region's, so that an address alone also names at most one region.
  uint32_t rkey = 0;
  uint64_t base = 0;
  for (bool clash = true; clash;) {
    rkey = static_cast<uint32_t>(SecureRandom64());
    uint64_t slots =
        (kRegionSpaceEnd - kRegionSpaceStart - config.length) / kRegionAlign;
    base = kRegionSpaceStart + SecureRandom64() % slots * kRegionAlign;
    clash = rkey == 0 || current_regions_->FindByRkey(rkey) != nullptr;
    for (const auto& region : regions) {
      clash = clash || (base < region->base_address() + region->length() &&
                        region->base_address() < base + config.length);
    }
  }
  absl::StatusOr<std::unique_ptr<MemoryRegion>> created =
      MemoryRegion::Create(next_region_id_, config, rkey, base);
  if (!created.ok()) return created.status();
  ++next_region_id_;
  region_bytes_ += config.length;
  std::shared_ptr<const MemoryRegion> region(std::move(*created));
  std::vector<std::shared_ptr<const MemoryRegion>> next = regions;
  next.push_back(region);
  PublishRegions(std::move(next));
  return DescribeRegion(*region);
}

absl::Status Dataplane::DeregisterRegion(uint64_t id) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<std::shared_ptr<const MemoryRegion>> region = FindRegion(id);
  if (!region.ok()) return region.status();
  RegionInfo info = DescribeRegion(**region);
  if (!info.bound_to.empty()) {
    std::string names;
    for (const std::string& name : info.bound_to) {
      absl::StrAppend(&names, names.empty() ? "'" : ", '", name, "'");
    }
    return absl::FailedPreconditionError(
        absl::StrCat("region ", id, " is bound to handler ", names,
                     "; remove (or replace) the handler first"));
  }
  // Zero-copy packets pin their region until the NIC frees them, which
  // takes microseconds on a running link: wait that out rather than refuse.
  if (!(*region)->BeginRetireWithin(kDeregisterWaitNs)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "region ", id, " is still in use by ", (*region)->pins(),
        " in-flight transfer(s) or queued packet(s) after ",
        kDeregisterWaitNs / 1'000'000,
        " ms; retry when they have completed (a port whose link is down "
        "holds its queued packets)"));
  }
  std::vector<std::shared_ptr<const MemoryRegion>> next =
      current_regions_->regions();
  std::erase_if(next, [&](const auto& r) { return r->id() == id; });
  region_bytes_ -= (*region)->length();
  // Returns after every HPU has stopped seeing the region; the last
  // reference (here) then frees its memory.
  PublishRegions(std::move(next));
  return absl::OkStatus();
}

std::vector<RegionInfo> Dataplane::ListRegions() const {
  absl::MutexLock lock(&mu_);
  std::vector<RegionInfo> out;
  for (const auto& region : current_regions_->regions()) {
    out.push_back(DescribeRegion(*region));
  }
  return out;
}

absl::StatusOr<std::string> Dataplane::ReadRegion(uint64_t id, uint64_t offset,
                                                  uint64_t length,
                                                  uint64_t max_length) const {
  // An explicit length over the limit is refused before any lookup.
  if (absl::Status ok = CheckReadLength(length, max_length); !ok.ok()) {
    return ok;
  }
  absl::MutexLock lock(&mu_);
  absl::StatusOr<std::shared_ptr<const MemoryRegion>> region = FindRegion(id);
  if (!region.ok()) return region.status();
  return CopyRange((*region)->bytes(), offset, length, max_length,
                   absl::StrCat("region ", id));
}

absl::Status Dataplane::WriteRegion(uint64_t id, uint64_t offset,
                                    std::span<const uint8_t> data) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<std::shared_ptr<const MemoryRegion>> region = FindRegion(id);
  if (!region.ok()) return region.status();
  std::span<uint8_t> bytes = (*region)->bytes();
  if (absl::Status in = CheckRange(bytes.size(), offset, data.size(),
                                   absl::StrCat("region ", id));
      !in.ok()) {
    return in;
  }
  if (!data.empty()) {
    std::memcpy(bytes.data() + offset, data.data(), data.size());
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Dataplane::ReadEctxState(absl::string_view name,
                                                     uint64_t offset,
                                                     uint64_t length) const {
  absl::MutexLock lock(&mu_);
  for (const auto& ectx : current_table_->ectxs()) {
    if (ectx->name() != name) continue;
    return CopyRange(ectx->state(), offset, length,
                     std::numeric_limits<uint64_t>::max(),
                     absl::StrCat("handler '", name, "' state"));
  }
  return absl::NotFoundError(
      absl::StrCat("no handler named '", name, "' is installed"));
}

absl::StatusOr<std::shared_ptr<const MemoryRegion>> Dataplane::FindRegion(
    uint64_t id) const {
  for (const auto& region : current_regions_->regions()) {
    if (region->id() == id) return region;
  }
  return absl::NotFoundError(absl::StrCat(
      "no region with id ", id, " is registered (list them with ListRegions)"));
}

RegionInfo Dataplane::DescribeRegion(const MemoryRegion& region) const {
  RegionInfo info;
  info.id = region.id();
  info.name = region.name();
  info.rkey = region.rkey();
  info.base_address = region.base_address();
  info.length = region.length();
  info.access = region.access();
  info.stream_id = region.stream_id();
  info.pins = region.pins();
  for (const auto& ectx : current_table_->ectxs()) {
    if (ectx->Binds(region.id())) info.bound_to.push_back(ectx->name());
  }
  return info;
}

void Dataplane::PublishRegions(
    std::vector<std::shared_ptr<const MemoryRegion>> regions) {
  PublishRcuTable(rcu_, regions_, current_regions_,
                  std::make_unique<const RegionTable>(std::move(regions)));
}

}  // namespace spinnic
