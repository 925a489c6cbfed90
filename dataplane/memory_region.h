// A registered memory region: bytes that handlers (bound regions) and remote
// peers (DiAD, RoCE, by rkey) read and write, with the access rights it was
// registered with. The control side registers and deregisters regions; HPUs
// find them through the RCU-published RegionTable (region_table.h).
//
// Addresses: a region has a random, 4 KiB-aligned base address in a private
// 47-bit space, which is what the network sees (a remote write names
// base + offset). Host virtual addresses never leave the appliance, and a
// peer cannot derive one region's address from another's.
#ifndef SPINNIC_DATAPLANE_MEMORY_REGION_H_
#define SPINNIC_DATAPLANE_MEMORY_REGION_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "absl/status/statusor.h"

namespace spinnic {

// Region access rights, a bit mask.
inline constexpr uint32_t kLocalRead = 1u << 0;    // handlers may read
inline constexpr uint32_t kLocalWrite = 1u << 1;   // handlers may write
inline constexpr uint32_t kRemoteRead = 1u << 2;   // peers may read
inline constexpr uint32_t kRemoteWrite = 1u << 3;  // peers may write

struct RegionConfig {
  std::string name;  // optional; unique when given
  uint64_t length = 0;
  uint32_t access = 0;  // kLocalRead | ... bits
  // Non-zero: DiAD stream messages to this stream id that no handler takes
  // land in this region, laid out as a ring (dataplane/diad/stream_ring.h).
  uint32_t stream_id = 0;
};

class MemoryRegion {
 public:
  // Allocates `config.length` zeroed bytes of EAL memory (rte_zmalloc: the
  // hugepage memory a NIC could DMA into, when the EAL has hugepages).
  // RESOURCE_EXHAUSTED when the EAL has too little memory left.
  static absl::StatusOr<std::unique_ptr<MemoryRegion>> Create(
      uint64_t id, const RegionConfig& config, uint32_t rkey,
      uint64_t base_address);
  ~MemoryRegion();
  MemoryRegion(const MemoryRegion&) = delete;
  MemoryRegion& operator=(const MemoryRegion&) = delete;

  uint64_t id() const { return id_; }
  const std::string& name() const { return name_; }
  uint32_t rkey() const { return rkey_; }
  uint64_t base_address() const { return base_address_; }
  uint64_t length() const { return length_; }
  uint32_t access() const { return access_; }
  uint32_t stream_id() const { return stream_id_; }
  std::span<uint8_t> bytes() const { return {data_, length_}; }

  // The bytes [address, address + length) in the network's address space,
  // or an empty span when they are not all inside the region or `access`
  // is not granted. O(1); no allocation (the HPU path of remote accesses).
  std::span<uint8_t> Translate(uint64_t address, uint64_t length,
                               uint32_t access) const {
    if ((access_ & access) != access) return {};
    if (address < base_address_) return {};
    uint64_t offset = address - base_address_;
    if (offset > length_ || length > length_ - offset) return {};
    return {data_ + offset, length};
  }

  // In-flight transfers pin the region so that it cannot be deregistered
  // under them. Pin fails once deregistration has begun. Both sides use
  // sequentially consistent operations (a Dekker handshake): either the
  // transfer sees `retiring` and backs off, or deregistration sees the pin
  // and refuses.
  bool Pin() const {
    pins_.fetch_add(1);
    if (retiring_.load()) {
      pins_.fetch_sub(1);
      return false;
    }
    return true;
  }
  void Unpin() const { pins_.fetch_sub(1); }
  uint32_t pins() const { return pins_.load(); }

  // Control side: begins deregistration; false (and nothing changed) while
  // a transfer holds a pin.
  bool BeginRetire() const { return BeginRetireWithin(0); }
  // Control side: begins deregistration and waits up to `wait_ns` for the
  // pins to go: transfers in flight, and zero-copy packets (region_tx.h)
  // that a TX queue still holds, which unpin when the NIC frees them. New
  // pins fail from the start (a transfer that comes now is refused as if
  // the region were gone). False, and nothing changed, when pins remain.
  bool BeginRetireWithin(uint64_t wait_ns) const;

 private:
  MemoryRegion() = default;

  uint64_t id_ = 0;
  std::string name_;
  uint32_t rkey_ = 0;
  uint64_t base_address_ = 0;
  uint64_t length_ = 0;
  uint32_t access_ = 0;
  uint32_t stream_id_ = 0;
  uint8_t* data_ = nullptr;
  mutable std::atomic<uint32_t> pins_{0};
  mutable std::atomic<bool> retiring_{false};
};

// "local_read,remote_write" for messages and listings.
std::string RegionAccessText(uint32_t access);

}  // namespace spinnic

#endif  // SPINNIC_DATAPLANE_MEMORY_REGION_H_
