// The dataplane: mempool, ports, HPU lcores, the published ECTX table and the
// event rings. Created and driven by the control side on the main lcore; the
// main lcore itself never touches packets.
//
// Threading contract: Start and Stop are called from one control thread;
// InstallEctx, RemoveEctx and Snapshot from any thread (gRPC, telemetry).
// HPUs see ECTX changes through RCU-published EctxTable versions: a change
// builds a new version, swaps the pointer, waits until every HPU has passed a
// quiescent state (PublishRcuTable), then frees the old version, so
// an HPU never reads freed memory and traffic never stops.
#ifndef SPINNIC_DATAPLANE_DATAPLANE_H_
#define SPINNIC_DATAPLANE_DATAPLANE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dataplane/capture.h"
#include "dataplane/dataplane_config.h"
#include "dataplane/ectx_table.h"
#include "dataplane/hpu.h"
#include "dataplane/memory_region.h"
#include "dataplane/port.h"
#include "dataplane/region_table.h"
#include "dataplane/region_tx.h"
#include "dataplane/stats.h"
#include "dataplane/transport.h"

namespace spinnic {

// rte_eal_init with `args` (args[0] is the program name). Once per process.
// Fails with a message naming what to fix (hugepages, lcores, permissions).
absl::Status InitEal(const std::vector<std::string>& args);

// A registered region as the control side reports it.
struct RegionInfo {
  uint64_t id = 0;
  std::string name;
  uint32_t rkey = 0;
  uint64_t base_address = 0;
  uint64_t length = 0;
  uint32_t access = 0;                // kLocalRead | ... bits
  uint32_t stream_id = 0;             // a DiAD stream region's stream
  uint32_t pins = 0;                  // in-flight transfers
  std::vector<std::string> bound_to;  // handler names
};

class Dataplane {
 public:
  // Opens the ports and installs the configured handlers; HPUs are not yet
  // running. Needs InitEal() with at least 1 + worker_cores.size() lcores.
  static absl::StatusOr<std::unique_ptr<Dataplane>> Create(
      const DataplaneConfig& config);
  ~Dataplane();

  // Launches one HPU per worker lcore.
  absl::Status Start();
  // Stops the HPUs (they flush their TX batches), then stops and closes the
  // ports. Idempotent; the destructor calls it.
  void Stop();

  // Installs a handler; returns its ECTX id. Safe while traffic flows. With
  // `replace`, a handler of the same name is swapped out in the same table
  // version (HPUs see either the old or the new one, never neither).
  absl::StatusOr<uint32_t> InstallEctx(const HandlerConfig& config,
                                       bool replace = false);
  // Removes the ECTX with that name; its memory is freed only after every
  // HPU has stopped using it.
  absl::Status RemoveEctx(absl::string_view name);

  // Memory regions (memory_region.h). Register allocates zeroed EAL memory
  // and publishes the region to the HPUs; ids are never reused. A region
  // bound to a handler or pinned by a transfer cannot be deregistered
  // (FAILED_PRECONDITION); its memory is freed only after every HPU has
  // stopped seeing it.
  absl::StatusOr<RegionInfo> RegisterRegion(const RegionConfig& config);
  absl::Status DeregisterRegion(uint64_t id);
  std::vector<RegionInfo> ListRegions() const;
  // Control-side copies (tooling and tests); OUT_OF_RANGE outside the
  // region. `length` 0 reads to the end; a read of more than `max_length`
  // bytes is INVALID_ARGUMENT (a reply must fit in a message).
  absl::StatusOr<std::string> ReadRegion(uint64_t id, uint64_t offset,
                                         uint64_t length,
                                         uint64_t max_length) const;
  absl::Status WriteRegion(uint64_t id, uint64_t offset,
                           std::span<const uint8_t> data);
  uint64_t region_bytes_limit() const { return region_bytes_limit_; }
  // The published region table, as transports on the HPUs read it.
  const RegionTable* region_table() const {
    return regions_.load(std::memory_order_acquire);
  }

  // Bytes [offset, offset + length) of the named ECTX's state memory
  // (`length` 0: to the end). NOT_FOUND, or OUT_OF_RANGE outside the state.
  absl::StatusOr<std::string> ReadEctxState(absl::string_view name,
                                            uint64_t offset,
                                            uint64_t length) const;
  // The installed ECTXs' names by id (events name their ECTX by id).
  absl::flat_hash_map<uint32_t, std::string> EctxNames() const;

  // The transports' control halves (transport.h), in registration order.
  std::span<TransportModule* const> transports() const {
    return transport_list_;
  }

  // The transport module of type `Module` (diad::DiadModule,
  // roce::RoceModule, ...): its own control calls, or nullptr when none is
  // registered.
  template <typename Module>
  Module* transport() const {
    for (TransportModule* module : transport_list_) {
      if (auto* typed = dynamic_cast<Module*>(module)) return typed;
    }
    return nullptr;
  }

  // Frame capture (capture.h, dataplane_capture.cc). StartCapture publishes
  // `session` to the HPUs; FAILED_PRECONDITION, naming the running one, when
  // its port and stage already have one. StopCapture unpublishes it and
  // returns once no HPU can offer it another frame (what they enqueued
  // before stays readable). Both safe while traffic flows, from any thread.
  absl::Status StartCapture(std::shared_ptr<CaptureSession> session);
  void StopCapture(const CaptureSession* session);

  // Whether a snapshot copies every ECTX's state memory (up to
  // Ectx::kMaxStateSize each); callers that only want counters omit it.
  enum class StateCopy { kInclude, kOmit };
  StatsSnapshot Snapshot(StateCopy state = StateCopy::kInclude) const;
  // Moves pending events from the HPUs' rings into `out`; returns how many.
  size_t DrainEvents(std::vector<Event>* out);

  size_t port_count() const { return ports_.size(); }
  const Port& port(size_t index) const { return ports_[index]; }
  size_t hpu_count() const { return hpus_.size(); }
  // For tests that drive HPU 0 on the calling thread instead of Start().
  Hpu& hpu(size_t index) { return *hpus_[index]; }

 private:
  Dataplane() = default;
  // Builds and publishes a table with `ectxs`, then reclaims the old one.
  void Publish(std::vector<std::shared_ptr<const Ectx>> ectxs)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PublishRegions(std::vector<std::shared_ptr<const MemoryRegion>> regions)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The registered region `id`, or NOT_FOUND saying so.
  absl::StatusOr<std::shared_ptr<const MemoryRegion>> FindRegion(
      uint64_t id) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  RegionInfo DescribeRegion(const MemoryRegion& region) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Fills the device's own counters and link state of port `index` (live,
  // or as they were when the ports stopped).
  void ReadDevice(size_t index, PortStats* stats) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The counters of ECTX `id` summed over HPUs (only counter fields set).
  EctxStats SumEctxCounters(uint32_t id) const;

  // A handler's binding (binding.h): a transport that delivers its kind
  // takes it, its region grants remote writes, no other handler has it.
  absl::Status CheckBinding(const HandlerConfig& config,
                            const EctxTable& current) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Create's steps: the mbuf pool (sized for the ports, HPUs and
  // transports), the ports with the software scheduler's rings, the HPUs
  // with their event rings and the transports' engines.
  absl::Status CreatePool(const DataplaneConfig& config);
  absl::Status OpenPorts(const DataplaneConfig& config);
  absl::Status CreateHpus(const DataplaneConfig& config);
  // Makes every registered transport's module and opens it (transport.h).
  absl::Status OpenTransports(const DataplaneConfig& config, HpuShared* shared);
  // Inbound rings for every HPU (the software scheduler's, or for
  // transports that hand frames to the HPU owning their state).
  absl::Status CreateInboundRings(size_t workers, std::string_view suffix);

  // Guards what Snapshot reads that the control thread changes.
  mutable absl::Mutex mu_;
  rte_mempool* pool_ = nullptr;
  // Zero-copy payload references (region_tx.h); freed after the pool's
  // mbufs are back.
  std::unique_ptr<RegionTx> region_tx_;
  std::vector<Port> ports_;
  std::vector<std::unique_ptr<Hpu>> hpus_;
  std::vector<rte_ring*> event_rings_;
  // Software scheduler (hpu.h): per HPU, and per port (null if unneeded).
  std::vector<rte_ring*> inbound_rings_;
  std::vector<rte_ring*> tx_rings_;
  std::vector<uint32_t> hpu_lcores_;
  rte_rcu_qsbr* rcu_ = nullptr;
  std::atomic<bool> stop_{false};
  std::atomic<const EctxTable*> table_{nullptr};
  std::unique_ptr<const EctxTable> current_table_ ABSL_GUARDED_BY(mu_);
  // Counter sums per ECTX id when its current holder was installed: ids are
  // reused, HPU counters are never reset (single writer), so snapshots
  // subtract this.
  std::vector<EctxStats> ectx_baseline_ ABSL_GUARDED_BY(mu_) =
      std::vector<EctxStats>(Ectx::kMaxEctxs);
  std::atomic<const RegionTable*> regions_{nullptr};
  std::unique_ptr<const RegionTable> current_regions_ ABSL_GUARDED_BY(mu_);
  uint64_t next_region_id_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t region_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint32_t max_regions_ = 0;
  uint64_t region_bytes_limit_ = 0;
  // The capture sessions (capture.h); null when none runs.
  absl::Mutex capture_mu_;
  std::atomic<const CaptureTable*> captures_{nullptr};
  std::unique_ptr<const CaptureTable> current_captures_
      ABSL_GUARDED_BY(capture_mu_);
  // The transports (transport.h), made for every config (off or on).
  std::vector<std::unique_ptr<TransportModule>> transports_;
  std::vector<TransportModule*> transport_list_;
  // What TransportEnv::running points to.
  std::atomic<bool> running_{false};
  bool started_ = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<PortStats> final_device_ ABSL_GUARDED_BY(mu_);
};

}  // namespace spinnic

#endif  // SPINNIC_DATAPLANE_DATAPLANE_H_
