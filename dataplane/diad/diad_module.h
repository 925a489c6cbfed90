// The control half of the DiAD transport (transport.h): its clone pool and
// per-HPU command rings, the RCU-published peer table, remote operations
// submitted from the control side and waited for, and its counters. The HPU
// half is DiadEngine (diad_engine.h); docs/diad.md has the protocol.
//
// Threading: every method runs on control threads (gRPC, the daemon's main
// thread); peers and operations reach the HPUs through the peer table and
// the command rings.
#ifndef SPINNIC_DATAPLANE_DIAD_DIAD_MODULE_H_
#define SPINNIC_DATAPLANE_DIAD_DIAD_MODULE_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dataplane/diad/diad_config.h"
#include "dataplane/diad/diad_engine.h"
#include "dataplane/diad/diad_op.h"
#include "dataplane/diad/peer_table.h"
#include "dataplane/transport.h"

namespace spinnic {

// A DiAD peer as the control side reports it (counters summed over HPUs).
struct PeerInfo {
  std::string name;
  uint32_t slot = 0;
  diad::NodeAddress node{};
  diad::MacAddress mac{};
  diad::Recovery recovery = diad::Recovery::kGoBackN;  // as configured
  bool up = true;  // no channel of it is down
  uint32_t channels_down = 0;
  uint32_t in_flight_packets = 0;
  uint64_t tx_packets = 0, tx_bytes = 0, rx_packets = 0, rx_bytes = 0;
  uint64_t retransmits = 0, down_events = 0, resets = 0;
  uint64_t ops_completed = 0, ops_failed = 0;
  // Adaptive timeout: samples taken, and the largest smoothed round trip
  // and timeout among its HPUs (each from the channel sampled last; 0
  // before any sample). Transactions failed by their deadline.
  uint64_t rtt_samples = 0, srtt_ns = 0, rto_ns = 0;
  uint64_t txn_deadline_exceeded = 0;
  // Congestion control (docs/congestion.md; 0 with it off): the largest
  // window (packets) and RTT sample among its HPUs (each from the channel
  // that took the last ACK), decreases by cause, CE marks seen on its
  // packets and ECN echoes it sent us.
  double cc_window = 0;
  uint64_t cc_rtt_ns = 0;
  uint64_t cc_delay_decreases = 0, cc_ecn_decreases = 0,
           cc_timeout_decreases = 0;
  uint64_t ce_marks_received = 0, ecn_echoes_received = 0;
};

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

}  // namespace spinnic

namespace spinnic::diad {

class DiadModule final : public TransportModule {
 public:
  static absl::StatusOr<std::unique_ptr<TransportModule>> Make(
      const DataplaneConfig& config);
  ~DiadModule() override;

  // TransportModule.
  std::string_view name() const override { return "diad"; }
  uint32_t ExtraMbufs() const override;
  uint32_t MinDataRoom(uint32_t max_port_mtu) const override;
  bool NeedsInboundRings() const override { return config_.enabled; }
  absl::Status Open(const TransportEnv& env) override;
  std::unique_ptr<TransportEngine> CreateEngine(uint32_t hpu_index, Hpu& hpu,
                                                SpinEngine& spin) override;
  // A stream region (stream_id set) must hold the ring's header and one
  // record.
  absl::Status CheckRegion(const RegionConfig& region) const override;
  std::span<const BindingKind> BindingKinds() const override;
  absl::Status CheckBinding(const HandlerConfig& handler) const override;
  std::string DescribeBinding(const MessageBinding& binding) const override;
  void Snapshot(StatsSnapshot& snapshot) const override;
  void Close() override;
  // /spinnic/peers and /spinnic/peer,<name> (diad_telemetry.cc).
  std::vector<TelemetryCommand> TelemetryCommands() const override;

  // Peers (docs/diad.md). FAILED_PRECONDITION without a DiAD node address;
  // INVALID_ARGUMENT for a bad node address or MAC; ALREADY_EXISTS for a
  // name or node address in use; RESOURCE_EXHAUSTED at max_peers.
  absl::Status AddPeer(const PeerConfig& peer);
  // Pending operations to the peer fail (ABORTED); NOT_FOUND if unknown.
  absl::Status RemovePeer(absl::string_view name);
  std::vector<PeerInfo> ListPeers() const;
  bool HasPeer(std::string_view name) const override;
  // The configuration in effect (the MAC read from the port if unset).
  const DiadConfig& config() const { return config_; }
  // The HPU that serves channel `channel`.
  uint32_t ChannelHpu(uint32_t channel) const {
    return channel % std::max<uint32_t>(shared_.hpu_count, 1);
  }

  // Runs remote operations and waits for all of them (or `timeout`); see
  // Dataplane::DiadExecute for the status each result carries.
  absl::StatusOr<std::vector<DiadResult>> Execute(
      std::vector<DiadRequest> requests, absl::Duration timeout);
  // One remote operation, not waited for: checks `request` and hands it to
  // its channel's HPU. The caller then polls the operation's `done`
  // (acquire), reads its `status` (and a read's `data`) and calls Unref()
  // once. For callers that drive the HPUs themselves (Hpu::PollOnce on their
  // own thread: bench/cost), where Execute would wait for HPUs that never
  // run; so it does not ask whether the dataplane runs. UNAVAILABLE when
  // diad.max_pending_ops operations are pending or the command ring is full.
  absl::StatusOr<DiadOp*> Submit(DiadRequest request);

 private:
  explicit DiadModule(const DiadConfig& config) : config_(config) {}
  absl::Status CheckRequest(const DiadRequest& request, const Peer** peer) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PublishPeers(std::vector<Peer> peers) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A checked request as the operation its HPU runs (moves the data).
  static DiadOp* MakeOp(DiadRequest& request, const Peer& peer);

  DiadConfig config_;
  TransportEnv env_;
  DiadShared shared_;
  uint64_t epoch_seed_ = 0;
  rte_mempool* clone_pool_ = nullptr;
  std::vector<rte_ring*> command_rings_;
  std::vector<rte_ring*> action_rings_;  // per HPU: handed handler actions
  std::atomic<uint32_t> pending_ops_{0};
  // Submits refused because diad.max_pending_ops were pending or the HPU's
  // command ring was full (counter ops_refused_busy).
  std::atomic<uint64_t> ops_refused_busy_{0};
  // One per HPU, for counters; cleared before the HPUs are destroyed.
  std::vector<const DiadEngine*> engines_;
  mutable absl::Mutex mu_;
  std::atomic<const PeerTable*> peers_{nullptr};
  std::unique_ptr<const PeerTable> current_peers_ ABSL_GUARDED_BY(mu_);
  uint32_t next_peer_generation_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace spinnic::diad

#endif  // SPINNIC_DATAPLANE_DIAD_DIAD_MODULE_H_
