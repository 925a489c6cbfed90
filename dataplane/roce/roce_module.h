// The control half of the RoCEv2 transport (transport.h): the command rings
// to the HPUs that own QPs (roce_engine.h), the QP status table they publish,
// the effective path MTU, queue pairs made over gRPC, RDMA operations of
// ours submitted and waited for, and its counters. The HPU half is
// RoceEngine (roce_engine.h); docs/roce.md has the design.
//
// Threading: every method runs on control threads; QP state changes reach
// the QP's owner HPU through its command ring (destruction through HPU 0's,
// which runs the CM).
#ifndef SPINNIC_DATAPLANE_ROCE_ROCE_MODULE_H_
#define SPINNIC_DATAPLANE_ROCE_ROCE_MODULE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dataplane/memory_region.h"
#include "dataplane/roce/roce_config.h"
#include "dataplane/roce/roce_engine.h"
#include "dataplane/transport.h"

namespace spinnic {

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
  uint32_t hpu = 0;           // the HPU that owns it
  roce::ServiceKind service = roce::ServiceKind::kVerbs;  // what takes SENDs
  // Congestion control (roce.congestion): the requester's DCQCN rate (b/s;
  // 0 when off), alpha, its next send time on the congestion clock (ns),
  // CNPs received and sent, CE-marked packets received.
  uint64_t rate_bps = 0;
  double alpha = 0;
  uint64_t next_send_ns = 0;
  uint64_t cnps_received = 0;
  uint64_t cnps_sent = 0;
  uint64_t ce_marks = 0;
};

// One RDMA operation of ours on a RoCE QP (RoceModule::Execute): the local
// bytes are [offset, offset + length) of registered region `region_id`
// (atomics: 8 bytes that receive the original value).
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
  // ExecuteMany: from submitting the op to seeing its completion.
  absl::Duration latency = absl::ZeroDuration();
};
// ExecuteMany's answer: one result per op, in the order given, and the wall
// time from submitting the first op to seeing the last completion.
struct RoceBatchResult {
  std::vector<absl::StatusOr<RoceOpResult>> results;
  absl::Duration elapsed = absl::ZeroDuration();
};

// The largest InfiniBand path MTU whose RoCE packets fit frames of
// `max_frame` bytes (Ethernet header included, no VLAN), or 0.
uint32_t RoceMaxPathMtu(uint32_t max_frame);

}  // namespace spinnic

namespace spinnic::roce {

class RoceModule final : public TransportModule {
 public:
  static absl::StatusOr<std::unique_ptr<TransportModule>> Make(
      const DataplaneConfig& config);
  ~RoceModule() override;

  // TransportModule.
  std::string_view name() const override { return "roce"; }
  uint32_t MinDataRoom(uint32_t max_port_mtu) const override;
  bool NeedsInboundRings() const override { return config_.enabled; }
  absl::Status Open(const TransportEnv& env) override;
  std::unique_ptr<TransportEngine> CreateEngine(uint32_t hpu_index, Hpu& hpu,
                                                SpinEngine& spin) override;
  std::span<const BindingKind> BindingKinds() const override;
  absl::Status CheckBinding(const HandlerConfig& handler) const override;
  std::string DescribeBinding(const MessageBinding& binding) const override;
  void Snapshot(StatsSnapshot& snapshot) const override;
  void Close() override;

  // Queue pairs created explicitly, for clients that exchange QP numbers
  // out of band (the CM creates its own). The QP is ready to receive (RTS)
  // once its owner (the next QP-owning HPU, round robin) has applied the
  // command, on its next poll.
  // FAILED_PRECONDITION without a `roce` section.
  absl::StatusOr<uint32_t> CreateQp(QpSpec spec);
  absl::Status DestroyQp(uint32_t qpn);
  std::vector<QpInfo> ListQps() const;
  // Runs `ops` pipelined (up to kWindow in flight at once, in order per QP)
  // and waits up to `timeout` for all; see Dataplane::RoceExecuteMany.
  static constexpr size_t kWindow = 128;
  absl::StatusOr<RoceBatchResult> ExecuteMany(std::vector<RoceOp> ops,
                                              absl::Duration timeout);
  // One op: ExecuteMany's result for it, or the whole call's error.
  absl::StatusOr<RoceOpResult> Execute(const RoceOp& op,
                                       absl::Duration timeout);
  // The configuration in effect (path_mtu resolved against the port).
  const RoceConfig& config() const { return config_; }
  // The HPUs that own QPs (roce.qp_hpus resolved against the HPU count).
  uint32_t qp_hpus() const { return shared_.qp_hpus; }
  // Which port runs which built-in service (service_ports.h): what the CM
  // accepts the next connection with.
  ServicePorts services() const;
  // RoceService.SetService: changes the table (ServicePorts::Set's errors;
  // FAILED_PRECONDITION without a `roce` section), hands it to the CM's HPU
  // and waits up to `wait` for the HPU to adopt it (DEADLINE_EXCEEDED
  // beyond: it still will, on its next poll; a zero `wait` returns at
  // once, for callers that poll the HPUs themselves). Connections already
  // made keep their service.
  absl::StatusOr<ServicePorts> SetService(absl::string_view name, uint32_t port,
                                          bool enable, absl::Duration wait);

 private:
  explicit RoceModule(const RoceConfig& config)
      : config_(config), services_(ServicePorts::Of(config)) {}
  // To the command ring of HPU `hpu`.
  absl::Status SubmitCommand(std::shared_ptr<RoceCommand> command, uint32_t hpu)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Checks `op` against the QPs and regions (not the peer's side).
  absl::Status CheckOp(const RoceOp& op) const;
  // Pins the op's region and submits it as a kPost command.
  absl::StatusOr<std::shared_ptr<RoceCommand>> PostOp(const RoceOp& op)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  RoceConfig config_;
  RoceShared shared_;
  TransportEnv env_;
  std::vector<rte_ring*> command_rings_;  // per HPU
  rte_ring* cm_notices_ = nullptr;
  std::atomic<uint32_t> next_qp_hpu_{0};
  std::unique_ptr<QpStatus[]> qp_status_;
  // One per HPU, for counters; cleared before the HPUs are destroyed.
  std::vector<const RoceEngine*> engines_;
  mutable absl::Mutex mu_;
  // Submitted commands, kept until their HPU is done with them (a waiter
  // may hold one too).
  std::vector<std::shared_ptr<RoceCommand>> commands_ ABSL_GUARDED_BY(mu_);
  ServicePorts services_ ABSL_GUARDED_BY(mu_);
};

}  // namespace spinnic::roce

#endif  // SPINNIC_DATAPLANE_ROCE_ROCE_MODULE_H_
