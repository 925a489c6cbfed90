// The dataplane: mempool, ports, HPU lcores, the published ECTX table and the
// event rings. Created and driven by the control side on the main lcore; the
// main lcore itself never touches packets.
//
// Threading contract: Start and Stop are called from one control thread;
// InstallEctx, RemoveEctx and Snapshot from any thread (gRPC, telemetry).
// HPUs see ECTX changes through RCU-published EctxTable versions: a change
// builds a new version, swaps the pointer, waits until every HPU has passed a
// quiescent state (rte_rcu_qsbr_synchronize), then frees the old version, so
// an HPU never reads freed memory and traffic never stops.
#ifndef SPINNIC_DATAPLANE_DATAPLANE_H_
#define SPINNIC_DATAPLANE_DATAPLANE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "dataplane/dataplane_config.h"
#include "dataplane/ectx_table.h"
#include "dataplane/hpu.h"
#include "dataplane/port.h"
#include "dataplane/stats.h"

namespace spinnic {

// rte_eal_init with `args` (args[0] is the program name). Once per process.
// Fails with a message naming what to fix (hugepages, lcores, permissions).
absl::Status InitEal(const std::vector<std::string>& args);

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

  StatsSnapshot Snapshot() const;
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
  // Fills the device's own counters and link state of port `index` (live,
  // or as they were when the ports stopped).
  void ReadDevice(size_t index, PortStats* stats) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The counters of ECTX `id` summed over HPUs (only counter fields set).
  EctxStats SumEctxCounters(uint32_t id) const;

  // Guards what Snapshot reads that the control thread changes.
  mutable absl::Mutex mu_;
  rte_mempool* pool_ = nullptr;
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
  bool started_ = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<PortStats> final_device_ ABSL_GUARDED_BY(mu_);
};

}  // namespace spinnic

#endif  // SPINNIC_DATAPLANE_DATAPLANE_H_
