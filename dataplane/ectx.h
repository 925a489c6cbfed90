// An execution context (ECTX): one installed handler with its state memory,
// parameters, bound regions, match rule and cycle budget. Immutable after
// Create() except for the disable flag and the overrun count, which HPUs
// update atomically on the (rare) over-budget path.
#ifndef SPINNIC_DATAPLANE_ECTX_H_
#define SPINNIC_DATAPLANE_ECTX_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dataplane/dataplane_config.h"
#include "dataplane/match_rule.h"
#include "dataplane/memory_region.h"
#include "dataplane/pcap_filter.h"
#include "handlers/api/handler.h"
#include "handlers/api/params.h"

namespace spinnic {

class Ectx {
 public:
  // Largest state memory an ECTX may ask for.
  static constexpr uint32_t kMaxStateSize = 1u << 20;
  // ECTX ids index per-lcore counter arrays: [0, kMaxEctxs).
  static constexpr uint32_t kMaxEctxs = 4096;

  // Looks up the kind, validates parameters against its schema, allocates and
  // initialises state (initial_state, then zeros). INVALID_ARGUMENT names the
  // handler and what to fix. `regions` are config.bound_regions resolved by
  // the caller; the ECTX keeps them alive.
  static absl::StatusOr<std::unique_ptr<Ectx>> Create(
      uint32_t id, const HandlerConfig& config,
      std::vector<std::shared_ptr<const MemoryRegion>> regions = {});

  ~Ectx();
  Ectx(const Ectx&) = delete;
  Ectx& operator=(const Ectx&) = delete;

  uint32_t id() const { return id_; }
  const std::string& name() const { return name_; }
  const HandlerKind& kind() const { return *kind_; }
  const HandlerInstance& instance() const { return instance_; }
  const MatchRule& match() const { return match_; }
  // The match rule's fields, then its pcap_filter (if any) on the bytes of
  // `packet`; a rule with a filter fails a nullptr packet. No allocation,
  // no locks.
  bool Matches(const ParsedFrame& frame, uint16_t in_port,
               const rte_mbuf* packet) const {
    return match_.Matches(frame, in_port) &&
           (filter_ == nullptr || filter_->Passes(packet));
  }
  // The compiled match.pcap_filter, or nullptr.
  const PcapFilter* filter() const { return filter_.get(); }
  // The validated install parameters (what transports that run a kind
  // themselves, like RoCE's NAAICE functions, read).
  const HandlerParams& params() const { return params_; }
  // A transport's messages it takes instead of frames (binding.h).
  const MessageBinding& binding() const { return binding_; }
  uint32_t priority() const { return priority_; }
  uint64_t cycle_budget() const { return cycle_budget_; }
  std::span<uint8_t> state() const { return {state_, state_size_}; }
  // Kept as a span: the handler context is built from it on every call,
  // and a vector's size() divides by sizeof(BoundRegion).
  std::span<const BoundRegion> regions() const { return regions_view_; }
  // The kind runs a payload handler only (no header, no completion): a
  // one-packet message is one call (SpinEngine::RunSinglePacketMessage).
  bool payload_only() const { return payload_only_; }
  // instance().ops()->payload and instance().self(), kept beside the id:
  // the payload-only fast path calls through them on every frame, one
  // dependent load fewer.
  using PayloadFn = HandlerResult (*)(void* self, HandlerContext&, PacketView&);
  PayloadFn payload_fn() const { return payload_fn_; }
  void* payload_self() const { return payload_self_; }
  // The registered region behind regions()[index], or nullptr.
  const MemoryRegion* region_holder(size_t index) const {
    return index < region_holders_.size() ? region_holders_[index].get()
                                          : nullptr;
  }
  bool Binds(uint64_t region_id) const {
    for (const BoundRegion& region : regions_) {
      if (region.id == region_id) return true;
    }
    return false;
  }

  bool disabled() const { return disabled_.load(std::memory_order_relaxed); }
  // Records one over-budget invocation; true if this one disabled the ECTX.
  bool RecordOverrun() const;
  uint64_t overruns() const {
    return overruns_.load(std::memory_order_relaxed);
  }

 private:
  Ectx() = default;

  uint32_t id_ = 0;
  PayloadFn payload_fn_ = nullptr;
  void* payload_self_ = nullptr;
  std::string name_;
  const HandlerKind* kind_ = nullptr;
  HandlerInstance instance_;
  MatchRule match_;
  // Freed with the Ectx, i.e. after the grace period of the last table
  // version that held it (rcu_table.h), so no HPU still runs it.
  std::unique_ptr<const PcapFilter> filter_;
  HandlerParams params_;
  MessageBinding binding_;
  uint32_t priority_ = 0;
  uint64_t cycle_budget_ = 0;
  uint32_t disable_after_overruns_ = 0;
  uint8_t* state_ = nullptr;
  uint32_t state_size_ = 0;
  std::vector<BoundRegion> regions_;
  std::span<const BoundRegion> regions_view_;
  bool payload_only_ = false;
  std::vector<std::shared_ptr<const MemoryRegion>> region_holders_;
  // Mutable: HPUs record overruns on a const Ectx from the published table.
  mutable std::atomic<bool> disabled_{false};
  mutable std::atomic<uint64_t> overruns_{0};
};

}  // namespace spinnic

#endif  // SPINNIC_DATAPLANE_ECTX_H_
