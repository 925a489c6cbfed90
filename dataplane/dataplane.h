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
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dataplane/dataplane_config.h"
#include "dataplane/diad/diad_op.h"
#include "dataplane/diad/peer_table.h"
#include "dataplane/ectx_table.h"
#include "dataplane/hpu.h"
#include "dataplane/memory_region.h"
#include "dataplane/port.h"
#include "dataplane/region_table.h"
#include "dataplane/roce/roce_engine.h"
#include "dataplane/stats.h"

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

// A DiAD peer as the control side reports it (counters summed over HPUs).
struct PeerInfo {
  std::string name;
  uint32_t slot = 0;
  diad::NodeAddress node{};
  diad::MacAddress mac{};
  bool up = true;  // no channel of it is down
  uint32_t channels_down = 0;
  uint32_t in_flight_packets = 0;
  uint64_t tx_packets = 0, tx_bytes = 0, rx_packets = 0, rx_bytes = 0;
  uint64_t retransmits = 0, down_events = 0, resets = 0;
  uint64_t ops_completed = 0, ops_failed = 0;
};

// A RoCE queue pair as the control side reports it.
struct QpInfo {
  uint32_t qpn = 0;
  roce::QpSpec spec;
  roce::QpState state = roce::QpState::kReset;
  uint32_t expected_psn = 0;  // next PSN the responder expects
  uint32_t msn = 0;           // messages completed (24 bits)
  uint64_t packets = 0;       // request packets executed
  uint64_t naks = 0;          // NAKs and RNR NAKs sent
  bool from_cm = false;       // connected through the CM (else gRPC)
  uint16_t cm_port = 0;       // the rdma_cm port it connected to
  roce::ServiceKind service = roce::ServiceKind::kVerbs;  // what takes SENDs
};

// One RDMA operation of ours on a RoCE QP (Dataplane::RoceExecute): the
// local bytes are [offset, offset + length) of registered region
// `region_id` (atomics: 8 bytes that receive the original value).
struct RoceOp {
  uint32_t qpn = 0;
  roce::WorkRequest::Kind kind = roce::WorkRequest::Kind::kWrite;
  uint64_t region_id = 0;
  uint64_t offset = 0;
  uint32_t length = 0;
  uint64_t remote_va = 0;
  uint32_t rkey = 0;
  uint32_t imm = 0;
  uint64_t compare = 0;
  uint64_t swap_add = 0;
};
struct RoceOpResult {
  uint64_t atomic_original = 0;  // atomics
  // RoceExecuteMany: from submitting the op to seeing its completion.
  absl::Duration latency = absl::ZeroDuration();
};
// RoceExecuteMany's answer: one result per op, in the order given, and the
// wall time from submitting the first op to seeing the last completion.
struct RoceBatchResult {
  std::vector<absl::StatusOr<RoceOpResult>> results;
  absl::Duration elapsed = absl::ZeroDuration();
};

// The largest InfiniBand path MTU whose RoCE packets fit frames of
// `max_frame` bytes (Ethernet header included, no VLAN), or 0.
uint32_t RoceMaxPathMtu(uint32_t max_frame);

// A remote operation for DiadExecute: a write or stream message of `data`,
// or a read of `read_length` bytes, on channel `channel` of peer `peer`.
struct DiadRequest {
  diad::DiadOp::Kind kind = diad::DiadOp::Kind::kWrite;
  std::string peer;
  uint16_t channel = 0;
  uint32_t key = 0;      // rkey (write, read) or stream id (stream)
  uint64_t address = 0;  // remote address (write, read)
  std::string data;
  uint32_t read_length = 0;
};

struct DiadResult {
  absl::Status status;  // OK, or what the peer or the transport said
  std::string data;     // a read's bytes
  uint64_t latency_ns = 0;
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

  // DiAD peers (docs/diad.md). FAILED_PRECONDITION without a DiAD node
  // address; INVALID_ARGUMENT for a bad node address or MAC; ALREADY_EXISTS
  // for a name or node address in use; RESOURCE_EXHAUSTED at max_peers.
  absl::Status AddPeer(const diad::PeerConfig& peer);
  // Pending operations to the peer fail (ABORTED); NOT_FOUND if unknown.
  absl::Status RemovePeer(absl::string_view name);
  std::vector<PeerInfo> ListPeers() const;
  const diad::DiadConfig& diad_config() const { return diad_config_; }

  // RoCE queue pairs (docs/roce.md) created explicitly, for clients that
  // exchange QP numbers out of band (the CM creates its own). The QP is
  // ready to receive (RTS) once HPU 0 has applied the command, on its next
  // poll. FAILED_PRECONDITION without a `roce` section.
  absl::StatusOr<uint32_t> CreateQp(roce::QpSpec spec);
  absl::Status DestroyQp(uint32_t qpn);
  std::vector<QpInfo> ListQps() const;
  // Runs `op` on its QP (our requester: segmentation, retransmission) and
  // waits up to `timeout` for its completion. The peer's NAKs map to
  // PERMISSION_DENIED (remote access), INVALID_ARGUMENT (invalid request),
  // ABORTED (remote operational error, flushed), UNAVAILABLE (retries
  // exhausted), DEADLINE_EXCEEDED (still running at the timeout).
  absl::StatusOr<RoceOpResult> RoceExecute(const RoceOp& op,
                                           absl::Duration timeout);
  // Runs `ops` pipelined (up to kRoceWindow of them in flight at once, in
  // order per QP) and waits up to `timeout` for all. Each result's status
  // maps as RoceExecute's; ops not complete at the timeout are
  // DEADLINE_EXCEEDED (they go on). The call fails as a whole only for a
  // bad op (NOT_FOUND QP or region, OUT_OF_RANGE, INVALID_ARGUMENT,
  // FAILED_PRECONDITION without RoCE): nothing is started then.
  static constexpr size_t kRoceWindow = 128;
  absl::StatusOr<RoceBatchResult> RoceExecuteMany(std::vector<RoceOp> ops,
                                                  absl::Duration timeout);
  // The configuration in effect (path_mtu resolved against the port).
  const roce::RoceConfig& roce_config() const { return roce_config_; }

  // Runs remote operations and waits for all of them (or `timeout`). Each
  // result's status maps the transport's: NOT_FOUND (no such rkey or stream
  // on the peer), OUT_OF_RANGE, PERMISSION_DENIED, INVALID_ARGUMENT,
  // ABORTED (a handler on the peer rejected it, the peer restarted, the
  // peer was removed), UNAVAILABLE (the peer stopped answering),
  // DEADLINE_EXCEEDED (still running at the timeout). Operations on one
  // channel go out in order. The call fails as a whole only for a bad
  // request (nothing is started then).
  absl::StatusOr<std::vector<DiadResult>> DiadExecute(
      std::vector<DiadRequest> requests, absl::Duration timeout);

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
  // Swaps `next` in as the version HPUs read, waits until no HPU can hold
  // the old one, then frees it (with whatever only it referenced).
  template <typename Table>
  void PublishTable(std::atomic<const Table*>& published,
                    std::unique_ptr<const Table>& current,
                    std::unique_ptr<const Table> next)
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

  absl::Status CreateDiad(const DataplaneConfig& config, HpuShared* shared);
  absl::Status CreateRoce(const DataplaneConfig& config, HpuShared* shared);
  // Inbound rings for every HPU, for transports that hand frames to the HPU
  // that owns their state, if the software scheduler did not make them.
  absl::Status EnsureInboundRings(const DataplaneConfig& config,
                                  HpuShared* shared);
  absl::Status SubmitRoceCommand(std::shared_ptr<roce::RoceCommand> command)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Checks `op` against the QPs and regions (not the peer's side).
  absl::Status CheckRoceOp(const RoceOp& op) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Pins the op's region and submits it as a kPost command.
  absl::StatusOr<std::shared_ptr<roce::RoceCommand>> PostRoceOp(
      const RoceOp& op) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SnapshotRoce(RoceStats* stats) const;
  void SnapshotDiad(DiadStats* stats) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PublishPeers(std::vector<diad::Peer> peers)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CheckDiadRequest(const DiadRequest& request,
                                const diad::Peer** peer) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

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
  std::atomic<const RegionTable*> regions_{nullptr};
  std::unique_ptr<const RegionTable> current_regions_ ABSL_GUARDED_BY(mu_);
  uint64_t next_region_id_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t region_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint32_t max_regions_ = 0;
  uint64_t region_bytes_limit_ = 0;
  // DiAD (dataplane_diad.cc).
  diad::DiadConfig diad_config_;
  diad::DiadShared diad_shared_;
  rte_mempool* clone_pool_ = nullptr;
  std::vector<rte_ring*> command_rings_;
  std::atomic<uint32_t> diad_pending_ops_{0};
  std::atomic<const diad::PeerTable*> peers_{nullptr};
  std::unique_ptr<const diad::PeerTable> current_peers_ ABSL_GUARDED_BY(mu_);
  uint32_t next_peer_generation_ ABSL_GUARDED_BY(mu_) = 1;
  // RoCE (dataplane_roce.cc).
  roce::RoceConfig roce_config_;
  roce::RoceShared roce_shared_;
  rte_ring* roce_command_ring_ = nullptr;
  std::unique_ptr<roce::QpStatus[]> qp_status_;
  // Submitted commands, kept until HPU 0 is done with them (a waiter may
  // hold one too).
  std::vector<std::shared_ptr<roce::RoceCommand>> roce_commands_
      ABSL_GUARDED_BY(mu_);
  bool started_ = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<PortStats> final_device_ ABSL_GUARDED_BY(mu_);
};

}  // namespace spinnic

#endif  // SPINNIC_DATAPLANE_DATAPLANE_H_
