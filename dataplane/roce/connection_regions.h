// Memory a connection's service gives its peer (docs/roce.md, "Services"):
// regions allocated zeroed from EAL memory when the connection needs them
// (the NAAICE memory-region setup, the region a verbs or perftest
// connection advertises), freed with the connection, bounded in total
// bytes. Their rkeys are unique per QP and region, `(qpn << 8) | index+1`,
// and valid only on that QP: the engine resolves them before the
// registered regions, without a virtual call per packet.
#ifndef SPINNIC_DATAPLANE_ROCE_CONNECTION_REGIONS_H_
#define SPINNIC_DATAPLANE_ROCE_CONNECTION_REGIONS_H_

#include <array>
#include <cstdint>
#include <span>

namespace spinnic::roce {

class ConnectionRegions {
 public:
  static constexpr uint32_t kMaxRegions = 32;

  enum class Status : uint8_t { kOk, kNotEnoughMemory, kTooManyRegions };
  struct Region {
    uint32_t id = 0;  // 1..kMaxRegions
    uint64_t address = 0;
    uint32_t rkey = 0;
    std::span<uint8_t> bytes;
  };

  ConnectionRegions(uint32_t qpn, uint64_t max_bytes)
      : qpn_(qpn), max_bytes_(max_bytes) {}
  ~ConnectionRegions();
  ConnectionRegions(const ConnectionRegions&) = delete;
  ConnectionRegions& operator=(const ConnectionRegions&) = delete;

  Status Allocate(uint64_t length, Region* out);
  void Free(uint32_t id);
  void FreeAll();

  // The bytes [va, va + length) of the region with `rkey`, or nullptr when
  // no region holds them all (a remote access error).
  uint8_t* Resolve(uint32_t rkey, uint64_t va, uint32_t length) const;

  uint64_t bytes() const { return bytes_; }
  uint32_t qpn() const { return qpn_; }

 private:
  struct Slot {
    uint8_t* data = nullptr;
    uint64_t length = 0;
    uint32_t rkey = 0;
  };

  const uint32_t qpn_;
  const uint64_t max_bytes_;
  std::array<Slot, kMaxRegions> slots_{};
  uint64_t bytes_ = 0;
};

}  // namespace spinnic::roce

#endif  // SPINNIC_DATAPLANE_ROCE_CONNECTION_REGIONS_H_
