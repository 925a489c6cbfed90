// The control half of the RoCEv2 transport (roce_module.h).
#include "dataplane/roce/roce_module.h"

#include <arpa/inet.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_ring.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "dataplane/dataplane_config.h"
#include "dataplane/port.h"
#include "dataplane/roce/icrc.h"
#include "dataplane/stats.h"
#include "handlers/naaice/function.h"

namespace spinnic {
namespace {

constexpr uint32_t kRoceCommandRingSize = 1024;
// Bytes a RoCE packet adds to its payload at most besides Ethernet: IPv6,
// UDP, BTH, RETH + ImmDt (WRITE ONLY with immediate), pad, ICRC.
constexpr uint32_t kRoceOverhead = 40 + 8 + roce::kBthBytes + roce::kRethBytes +
                                   roce::kImmDtBytes + 3 + roce::kIcrcBytes;

std::string AddressText(const roce::Gid& ip) {
  char text[INET6_ADDRSTRLEN];
  static constexpr std::array<uint8_t, 12> kMapped = {0, 0, 0, 0, 0,    0,
                                                      0, 0, 0, 0, 0xff, 0xff};
  if (std::equal(kMapped.begin(), kMapped.end(), ip.begin())) {
    inet_ntop(AF_INET, ip.data() + 12, text, sizeof text);
  } else {
    inet_ntop(AF_INET6, ip.data(), text, sizeof text);
  }
  return text;
}

bool SameFamily(const roce::Gid& a, const roce::Gid& b) {
  auto mapped = [](const roce::Gid& ip) {
    return ip[10] == 0xff && ip[11] == 0xff &&
           std::all_of(ip.begin(), ip.begin() + 10,
                       [](uint8_t x) { return x == 0; });
  };
  return mapped(a) == mapped(b);
}

}  // namespace

uint32_t RoceMaxPathMtu(uint32_t max_frame) {
  uint32_t best = 0;
  for (uint8_t code = 1; code <= 5; ++code) {
    const uint32_t mtu = roce::PathMtuBytes(code);
    if (mtu + kRoceOverhead + RTE_ETHER_HDR_LEN <= max_frame) best = mtu;
  }
  return best;
}

}  // namespace spinnic

namespace spinnic::roce {

absl::StatusOr<std::unique_ptr<TransportModule>> RoceModule::Make(
    const DataplaneConfig& config) {
  // rte_net_crc picks its algorithm on first use, by the EAL's SIMD width:
  // choose now, on the control thread, before any HPU computes an ICRC.
  InitIcrc();
  return std::unique_ptr<TransportModule>(
      new RoceModule(config.transports.get<RoceConfig>()));
}

RoceModule::~RoceModule() { Close(); }

uint32_t RoceModule::MinDataRoom(uint32_t max_port_mtu) const {
  // RoCE builds every reply in one mbuf: room for the largest frame of the
  // path MTU the ports allow (up to 4096, plus headers).
  if (!config_.enabled) return 0;
  const uint32_t frame = std::min<uint32_t>(max_port_mtu, 4096 + 128) +
                         RTE_ETHER_HDR_LEN + 2 * RTE_VLAN_HLEN;
  return RTE_PKTMBUF_HEADROOM + frame;
}

// roce.congestion's line rate on a port that reports no link speed.
constexpr uint64_t kDefaultLineRateMbps = 100'000;

absl::Status RoceModule::Open(const TransportEnv& env) {
  env_ = env;
  if (!config_.enabled) return absl::OkStatus();
  if (config_.port >= env.ports.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "roce.port: port index ", config_.port, " does not exist"));
  }
  const Port& port = env.ports[config_.port];
  // The largest InfiniBand MTU whose packets fit the port (and one mbuf).
  const uint32_t fits = RoceMaxPathMtu(std::min<uint32_t>(
      port.max_frame(),
      rte_pktmbuf_data_room_size(env.pool) - RTE_PKTMBUF_HEADROOM));
  if (fits == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("port '", port.name(),
                     "' cannot carry RoCE packets of even a 256-byte "
                     "path MTU; raise its mtu to at least ",
                     256 + kRoceOverhead));
  }
  if (config_.path_mtu == 0) {
    config_.path_mtu = fits;
  } else if (config_.path_mtu > fits) {
    return absl::InvalidArgumentError(absl::StrCat(
        "roce.path_mtu ", config_.path_mtu, " does not fit port '", port.name(),
        "' (MTU ", port.max_frame() - RTE_ETHER_HDR_LEN,
        "): the largest that does is ", fits,
        "; lower roce.path_mtu (or leave it 0) or raise the port's mtu to ",
        config_.path_mtu + kRoceOverhead));
  }
  if (config_.congestion.enabled) {
    // DCQCN's line rate: the configured one, else the port's link speed,
    // else (a ring or memif port reports none) 100 Gb/s.
    DcqcnParams& dcqcn = config_.congestion.dcqcn;
    if (dcqcn.line_rate_bps == 0) {
      const uint64_t mbps = port.link_speed_mbps();
      dcqcn.line_rate_bps =
          (mbps != 0 ? mbps : kDefaultLineRateMbps) * 1'000'000;
      dcqcn.min_rate_bps = std::min(dcqcn.min_rate_bps, dcqcn.line_rate_bps);
      // A start above a slow port's speed is the port's speed.
      if (dcqcn.initial_rate_bps > dcqcn.line_rate_bps)
        dcqcn.initial_rate_bps = 0;
    }
    if (absl::Status s = ValidateDcqcnParams(dcqcn); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("roce.congestion (line rate ", dcqcn.line_rate_bps,
                       " b/s of port '", port.name(), "'): ", s.message()));
    }
  }
  if (std::all_of(config_.mac.begin(), config_.mac.end(),
                  [](uint8_t b) { return b == 0; })) {
    rte_ether_addr mac;
    if (rte_eth_macaddr_get(port.port_id(), &mac) != 0) {
      return absl::FailedPreconditionError(
          "cannot read the RoCE port's MAC; set addresses.mac");
    }
    std::memcpy(config_.mac.data(), mac.addr_bytes, 6);
  }
  for (uint32_t hpu = 0; hpu < env.hpu_count; ++hpu) {
    const std::string name = ResourceName(absl::StrCat("spinnic_roce_cmd", hpu),
                                          env.instance_suffix);
    rte_ring* ring = rte_ring_create(name.c_str(), kRoceCommandRingSize,
                                     rte_socket_id(), RING_F_SC_DEQ);
    if (ring == nullptr) {
      return absl::ResourceExhaustedError(
          absl::StrCat("cannot create the RoCE command ring of HPU ", hpu, " (",
                       rte_strerror(rte_errno), ")"));
    }
    command_rings_.push_back(ring);
  }
  cm_notices_ = rte_ring_create_elem(
      ResourceName("spinnic_roce_cmn", env.instance_suffix).c_str(),
      sizeof(uint32_t), kRoceCommandRingSize, rte_socket_id(), RING_F_SC_DEQ);
  if (cm_notices_ == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot create the RoCE CM notice ring (",
                     rte_strerror(rte_errno), ")"));
  }
  qp_status_ = std::make_unique<QpStatus[]>(config_.max_qps);
  shared_.config = &config_;
  shared_.regions = env.regions;
  shared_.pool = env.pool;
  // Chained packets only where the port sends them.
  if (config_.zero_copy_min_bytes != 0 &&
      env.ports[config_.port].tx_multi_segs()) {
    shared_.region_tx = env.region_tx;
  }
  shared_.commands = command_rings_.data();
  shared_.cm_notices = cm_notices_;
  shared_.inbound = env.inbound;
  shared_.hpu_count = env.hpu_count;
  shared_.qp_hpus = config_.qp_hpus == 0
                        ? env.hpu_count
                        : std::min(config_.qp_hpus, env.hpu_count);
  // QPs on other HPUs than the one that receives their frames need the
  // hand-off rings.
  if (env.inbound == nullptr) shared_.qp_hpus = 1;
  shared_.next_qp_hpu = &next_qp_hpu_;
  shared_.qp_status = qp_status_.get();
  return absl::OkStatus();
}

std::unique_ptr<TransportEngine> RoceModule::CreateEngine(uint32_t hpu_index,
                                                          Hpu& hpu,
                                                          SpinEngine& spin) {
  if (!config_.enabled) return nullptr;
  auto engine = std::make_unique<RoceEngine>(hpu_index, shared_, &hpu, &spin);
  engines_.push_back(engine.get());
  return engine;
}

std::span<const BindingKind> RoceModule::BindingKinds() const {
  static constexpr BindingKind kKinds[] = {kBindQp, kBindNaaiceFunction,
                                           kBindRegionWrites};
  return kKinds;
}

absl::Status RoceModule::CheckBinding(const HandlerConfig& handler) const {
  const uint64_t key = handler.binding.key;
  switch (handler.binding.kind) {
    case kBindQp:
      if (!config_.enabled) {
        return absl::FailedPreconditionError(
            "takes a RoCE queue pair's messages but RoCE is off (add a roce "
            "section to the config)");
      }
      if (key < kFirstQpn || key - kFirstQpn >= config_.max_qps) {
        return absl::InvalidArgumentError(
            absl::StrCat("roce.qpn ", key,
                         " is not a queue pair number of this appliance; use ",
                         kFirstQpn, "..", kFirstQpn + config_.max_qps - 1,
                         " (spinctl qps lists them)"));
      }
      return absl::OkStatus();
    case kBindNaaiceFunction:
      if (!config_.enabled || services().port(ServiceSlot::kNaaice) == 0) {
        return absl::FailedPreconditionError(
            "takes NAAICE calls but no NAAICE port is configured (set "
            "roce.naaice_port, or spinctl roce-service naaice PORT)");
      }
      if (key == 0 || key >= ::spinnic::naaice::kFunctionCodes ||
          handler.kind != "naaice_function") {
        return absl::InvalidArgumentError(absl::StrCat(
            "a NAAICE function binding needs kind naaice_function and a "
            "code 1..127, not kind '",
            handler.kind, "' with code ", key));
      }
      return absl::OkStatus();
    default:
      return config_.enabled ? absl::OkStatus()
                             : absl::FailedPreconditionError(
                                   "RoCE is off (a roce section)");
  }
}

std::string RoceModule::DescribeBinding(const MessageBinding& binding) const {
  return binding.kind == kBindQp
             ? absl::StrCat("queue pair ", binding.key, "'s messages")
             : absl::StrCat("NAAICE function code ", binding.key);
}

void RoceModule::Close() {
  engines_.clear();
  // Commands the CM sent to other HPUs and nobody applied.
  for (rte_ring* ring : command_rings_) {
    void* entry = nullptr;
    while (rte_ring_dequeue(ring, &entry) == 0) {
      auto* command = static_cast<RoceCommand*>(entry);
      if (command->from_engine) delete command;
    }
    rte_ring_free(ring);
  }
  command_rings_.clear();
  rte_ring_free(cm_notices_);
  cm_notices_ = nullptr;
}

absl::Status RoceModule::SubmitCommand(std::shared_ptr<RoceCommand> command,
                                       uint32_t hpu) {
  // Commands the HPUs have applied are done with.
  std::erase_if(commands_, [](const auto& c) {
    return c->done.load(std::memory_order_acquire);
  });
  if (hpu >= command_rings_.size() ||
      rte_ring_mp_enqueue(command_rings_[hpu], command.get()) != 0) {
    return absl::UnavailableError(absl::StrCat(
        "RoCE HPU ", hpu,
        " is not taking commands (its ring is full); is the dataplane "
        "running? retry shortly"));
  }
  commands_.push_back(std::move(command));
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> RoceModule::CreateQp(QpSpec spec) {
  if (!config_.enabled) {
    return absl::FailedPreconditionError(
        "RoCE is off: add a roce { } section (and addresses.ipv4 or "
        "addresses.ipv6) to the config");
  }
  if (spec.remote_qpn == 0 || spec.remote_qpn > 0xffffff) {
    return absl::InvalidArgumentError(
        absl::StrCat("remote QPN ", spec.remote_qpn,
                     " is not a QP number; use 1..0xffffff (the client's "
                     "ibv_qp->qp_num)"));
  }
  if (spec.expected_psn > roce::kPsnMask || spec.send_psn > roce::kPsnMask) {
    return absl::InvalidArgumentError(
        "PSNs are 24 bits: use 0..0xffffff for the starting PSNs");
  }
  if (roce::PathMtuCode(spec.pmtu) == 0 || spec.pmtu > config_.path_mtu) {
    return absl::InvalidArgumentError(
        absl::StrCat("path MTU ", spec.pmtu,
                     " is not allowed; use 256, 512, 1024, 2048 "
                     "or 4096, at most ",
                     config_.path_mtu, " (roce.path_mtu)"));
  }
  if (spec.max_rd_atomic == 0 || spec.max_rd_atomic > 16) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_rd_atomic ", spec.max_rd_atomic, " is not allowed; use 1..16"));
  }
  const bool zero_local =
      std::all_of(spec.local_ip.begin(), spec.local_ip.end(),
                  [](uint8_t b) { return b == 0; });
  bool local_ok = false;
  for (const roce::Gid& ip : config_.addresses) {
    if (zero_local && SameFamily(ip, spec.remote_ip)) {
      spec.local_ip = ip;
      local_ok = true;
      break;
    }
    local_ok |= ip == spec.local_ip;
  }
  if (!local_ok || !SameFamily(spec.local_ip, spec.remote_ip)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "no local address of the remote address's family (",
        AddressText(spec.remote_ip),
        "); the appliance's RoCE addresses are addresses.ipv4/ipv6"));
  }
  const bool zero_mac =
      std::all_of(spec.remote_mac.begin(), spec.remote_mac.end(),
                  [](uint8_t b) { return b == 0; });
  if (zero_mac || (spec.remote_mac[0] & 1) != 0) {
    return absl::InvalidArgumentError(
        "the peer's MAC must be a unicast, non-zero address");
  }
  absl::MutexLock lock(&mu_);
  uint32_t slot = 0;
  while (slot < config_.max_qps && !qp_status_[slot].Claim()) ++slot;
  if (slot == config_.max_qps) {
    return absl::ResourceExhaustedError(
        absl::StrCat("all ", config_.max_qps,
                     " queue pairs are in use; destroy one or raise "
                     "roce.max_qps"));
  }
  // Shown by ListQps at once; the owner writes the same when it applies it.
  qp_status_[slot].StoreSpec(spec);
  qp_status_[slot].destroying.store(false, std::memory_order_relaxed);
  qp_status_[slot].from_cm.store(false, std::memory_order_relaxed);
  const uint32_t owner = roce::NextQpHpu(shared_);
  qp_status_[slot].hpu.store(static_cast<uint16_t>(owner),
                             std::memory_order_relaxed);
  auto command = std::make_shared<roce::RoceCommand>();
  command->kind = roce::RoceCommand::Kind::kCreateQp;
  command->qpn = roce::kFirstQpn + slot;
  command->spec = spec;
  if (absl::Status s = SubmitCommand(std::move(command), owner); !s.ok()) {
    qp_status_[slot].claimed.store(0, std::memory_order_release);
    return s;
  }
  return roce::kFirstQpn + slot;
}

absl::Status RoceModule::DestroyQp(uint32_t qpn) {
  absl::MutexLock lock(&mu_);
  const uint32_t slot = qpn - roce::kFirstQpn;
  if (!config_.enabled || qpn < roce::kFirstQpn || slot >= config_.max_qps ||
      qp_status_[slot].claimed.load(std::memory_order_acquire) == 0 ||
      qp_status_[slot].destroying.load(std::memory_order_relaxed)) {
    return absl::NotFoundError(
        absl::StrCat("no queue pair ", qpn, "; ListQps shows those in use"));
  }
  auto command = std::make_shared<roce::RoceCommand>();
  command->kind = roce::RoceCommand::Kind::kDestroyQp;
  command->qpn = qpn;
  // Through the CM's HPU: a CM connection closes with a DREQ first; it
  // passes the command on to the owner.
  if (absl::Status s =
          SubmitCommand(std::move(command), roce::RoceEngine::kCmHpu);
      !s.ok()) {
    return s;
  }
  qp_status_[slot].destroying.store(true, std::memory_order_relaxed);
  return absl::OkStatus();
}

ServicePorts RoceModule::services() const {
  absl::MutexLock lock(&mu_);
  return services_;
}

absl::StatusOr<ServicePorts> RoceModule::SetService(absl::string_view name,
                                                    uint32_t port, bool enable,
                                                    absl::Duration wait) {
  if (!config_.enabled) {
    return absl::FailedPreconditionError(
        "RoCE is off: add a roce { } section (and addresses.ipv4 or "
        "addresses.ipv6) to the config");
  }
  auto command = std::make_shared<roce::RoceCommand>();
  command->kind = roce::RoceCommand::Kind::kSetServices;
  {
    absl::MutexLock lock(&mu_);
    ServicePorts changed = services_;
    if (absl::Status s = changed.Set(name, port, enable); !s.ok()) return s;
    command->services = changed;
    if (absl::Status s = SubmitCommand(command, roce::RoceEngine::kCmHpu);
        !s.ok()) {
      return s;
    }
    services_ = changed;
  }
  const absl::Time deadline = absl::Now() + wait;
  while (wait > absl::ZeroDuration() &&
         !command->done.load(std::memory_order_acquire)) {
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "the connection manager's HPU has not applied the change within ",
          absl::FormatDuration(wait),
          "; it will on its next poll (is the dataplane running?)"));
    }
    absl::SleepFor(absl::Microseconds(100));
  }
  return command->services;
}

std::vector<QpInfo> RoceModule::ListQps() const {
  std::vector<QpInfo> out;
  for (uint32_t slot = 0; config_.enabled && slot < config_.max_qps; ++slot) {
    const roce::QpStatus& s = qp_status_[slot];
    if (s.claimed.load(std::memory_order_acquire) == 0 ||
        s.destroying.load(std::memory_order_relaxed)) {
      continue;
    }
    QpInfo& info = out.emplace_back();
    info.qpn = roce::kFirstQpn + slot;
    info.spec = s.LoadSpec();
    info.from_cm = s.from_cm.load(std::memory_order_relaxed);
    info.cm_port = s.cm_port.load(std::memory_order_relaxed);
    info.hpu = s.hpu.load(std::memory_order_relaxed);
    info.service = static_cast<roce::ServiceKind>(
        s.service.load(std::memory_order_relaxed));
    info.state =
        static_cast<roce::QpState>(s.state.load(std::memory_order_relaxed));
    info.expected_psn = s.expected_psn.load(std::memory_order_relaxed);
    info.msn = s.msn.load(std::memory_order_relaxed);
    info.packets = s.packets.load(std::memory_order_relaxed);
    info.naks = s.naks.load(std::memory_order_relaxed);
    info.rate_bps = s.rate_bps.load(std::memory_order_relaxed);
    info.alpha = s.alpha_ppm.load(std::memory_order_relaxed) / 1e6;
    info.next_send_ns = s.next_send_ns.load(std::memory_order_relaxed);
    info.cnps_received = s.cnps_received.load(std::memory_order_relaxed);
    info.cnps_sent = s.cnps_sent.load(std::memory_order_relaxed);
    info.ce_marks = s.ce_marks.load(std::memory_order_relaxed);
  }
  return out;
}

absl::Status RoceModule::CheckOp(const RoceOp& op) const {
  using Kind = roce::WorkRequest::Kind;
  const bool atomic =
      op.kind == Kind::kCompareSwap || op.kind == Kind::kFetchAdd;
  if (atomic && op.length != 8) {
    return absl::InvalidArgumentError(
        "atomics work on 8 bytes: set length 8 (the local bytes receive the "
        "original value)");
  }
  const uint32_t slot = op.qpn - roce::kFirstQpn;
  if (op.qpn < roce::kFirstQpn || slot >= config_.max_qps ||
      !qp_status_[slot].in_use.load(std::memory_order_relaxed)) {
    return absl::NotFoundError(absl::StrCat(
        "no queue pair ", op.qpn, " is connected; ListQps shows them"));
  }
  absl::StatusOr<std::shared_ptr<const MemoryRegion>> region =
      env_.find_region(op.region_id);
  if (!region.ok()) return region.status();
  const uint64_t size = (*region)->length();
  if (op.offset > size || op.length > size - op.offset) {
    return absl::OutOfRangeError(
        absl::StrCat("[", op.offset, ", +", op.length, ") is outside region ",
                     op.region_id, " (", size, " bytes)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<RoceCommand>> RoceModule::PostOp(
    const RoceOp& op) {
  absl::StatusOr<std::shared_ptr<const MemoryRegion>> region =
      env_.find_region(op.region_id);
  if (!region.ok()) return region.status();
  if (!(*region)->Pin()) {
    return absl::FailedPreconditionError(
        absl::StrCat("region ", op.region_id, " is being deregistered"));
  }
  auto command = std::make_shared<roce::RoceCommand>();
  command->kind = roce::RoceCommand::Kind::kPost;
  command->qpn = op.qpn;
  command->region = region->get();
  roce::WorkRequest& wr = command->wr;
  wr.kind = op.kind;
  wr.local_offset =
      reinterpret_cast<uint64_t>((*region)->bytes().data() + op.offset);
  wr.length = op.length;
  wr.remote_va = op.remote_va;
  wr.rkey = op.rkey;
  wr.imm = op.imm;
  wr.compare = op.compare;
  wr.swap_add = op.swap_add;
  const uint32_t owner =
      qp_status_[op.qpn - roce::kFirstQpn].hpu.load(std::memory_order_relaxed);
  if (absl::Status s = SubmitCommand(command, owner); !s.ok()) {
    (*region)->Unpin();
    return s;
  }
  return command;
}

namespace {

// The outcome of a finished kPost command.
absl::StatusOr<RoceOpResult> RoceCommandResult(
    const roce::RoceCommand& command) {
  if (!command.posted) {
    switch (command.post_result) {
      case roce::PostResult::kQueueFull:
        return absl::UnavailableError(
            "the QP's send queue is full; retry when operations complete");
      case roce::PostResult::kQpError:
        return absl::FailedPreconditionError(
            absl::StrCat("QP ", command.qpn,
                         " is in the error state; destroy and "
                         "reconnect"));
      default:
        return absl::InvalidArgumentError(
            "the operation is not valid (length above 2^31?)");
    }
  }
  using S = roce::CompletionStatus;
  switch (command.status) {
    case S::kSuccess:
      return RoceOpResult{command.atomic_original};
    case S::kRemoteAccessError:
      return absl::PermissionDeniedError(
          "the peer refused the access (remote access error: rkey, bounds "
          "or rights)");
    case S::kRemoteInvalidRequest:
      return absl::InvalidArgumentError(
          "the peer NAKed the request as invalid");
    case S::kRemoteOperationalError:
      return absl::AbortedError("the peer reported an operational error");
    case S::kRetryExceeded:
    case S::kRnrRetryExceeded:
      return absl::UnavailableError(
          "the peer stopped answering (retries exhausted); the QP is in the "
          "error state");
    case S::kFlushed:
      return absl::AbortedError(
          "flushed: the QP went to the error state or was destroyed first");
    case S::kLocalLengthError:
      return absl::InvalidArgumentError("local length error");
  }
  return absl::InternalError("unknown completion status");
}

}  // namespace

absl::StatusOr<RoceOpResult> RoceModule::Execute(const RoceOp& op,
                                                 absl::Duration timeout) {
  absl::StatusOr<RoceBatchResult> batch = ExecuteMany({op}, timeout);
  if (!batch.ok()) return batch.status();
  return std::move(batch->results.front());
}

absl::StatusOr<RoceBatchResult> RoceModule::ExecuteMany(
    std::vector<RoceOp> ops, absl::Duration timeout) {
  if (!config_.enabled) {
    return absl::FailedPreconditionError(
        "RoCE is off: add a roce { } section to the config");
  }
  {
    absl::MutexLock lock(&mu_);
    for (const RoceOp& op : ops) {
      if (absl::Status s = CheckOp(op); !s.ok()) return s;
    }
  }
  RoceBatchResult batch;
  batch.results.assign(ops.size(), absl::UnknownError("not run"));
  struct InFlight {
    size_t index;
    absl::Time submitted;
    std::shared_ptr<roce::RoceCommand> command;
  };
  std::vector<InFlight> in_flight;
  in_flight.reserve(kWindow);
  const absl::Time start = absl::Now();
  const absl::Time deadline = start + timeout;
  size_t next = 0;
  absl::Time last_progress = start;
  while (next < ops.size() || !in_flight.empty()) {
    const absl::Time now = absl::Now();
    // Completed ops leave the window (its owner completes a QP's ops in order,
    // but ops may span QPs).
    std::erase_if(in_flight, [&](InFlight& f) {
      if (!f.command->done.load(std::memory_order_acquire)) return false;
      absl::StatusOr<RoceOpResult> result = RoceCommandResult(*f.command);
      if (result.ok()) result->latency = now - f.submitted;
      batch.results[f.index] = std::move(result);
      last_progress = now;
      return true;
    });
    if (now >= deadline) break;
    if (next < ops.size() && in_flight.size() < kWindow) {
      absl::MutexLock lock(&mu_);
      while (next < ops.size() && in_flight.size() < kWindow) {
        // Re-checked: the QP or region may have gone since.
        absl::Status check = CheckOp(ops[next]);
        absl::StatusOr<std::shared_ptr<roce::RoceCommand>> command =
            check.ok() ? PostOp(ops[next]) : check;
        if (!command.ok()) {
          batch.results[next++] = command.status();
          continue;
        }
        in_flight.push_back({next++, absl::Now(), *std::move(command)});
      }
      continue;
    }
    // Spin briefly after progress (latency), then sleep (a long op).
    if (absl::Now() - last_progress < absl::Microseconds(200)) {
      std::this_thread::yield();
    } else {
      absl::SleepFor(absl::Microseconds(20));
    }
  }
  batch.elapsed = absl::Now() - start;
  for (const InFlight& f : in_flight) {
    batch.results[f.index] = absl::DeadlineExceededError(
        absl::StrCat("the operation on QP ", ops[f.index].qpn,
                     " did not complete within ", absl::FormatDuration(timeout),
                     "; it goes on (the peer may be slow or gone)"));
  }
  for (size_t i = next; i < ops.size(); ++i) {
    batch.results[i] = absl::DeadlineExceededError(
        absl::StrCat("not started within ", absl::FormatDuration(timeout)));
  }
  return batch;
}

void RoceModule::Snapshot(StatsSnapshot& snapshot) const {
  TransportStats* stats = &snapshot.transports.emplace_back();
  stats->name = std::string(name());
  stats->enabled = config_.enabled;
  if (!stats->enabled) return;
  using C = roce::RoceCounters;
  static constexpr std::pair<const char*, Counter C::*> kFields[] = {
      {"rx_packets", &C::rx_packets},
      {"rx_bytes", &C::rx_bytes},
      {"tx_packets", &C::tx_packets},
      {"tx_bytes", &C::tx_bytes},
      {"writes", &C::writes},
      {"write_bytes", &C::write_bytes},
      {"reads", &C::reads},
      {"read_bytes", &C::read_bytes},
      {"atomics", &C::atomics},
      {"ops_posted", &C::ops_posted},
      {"ops_completed", &C::ops_completed},
      {"ops_failed", &C::ops_failed},
      {"retransmits", &C::retransmits},
      {"write_immediates", &C::write_immediates},
      {"sends", &C::sends},
      {"send_bytes", &C::send_bytes},
      {"handler_messages", &C::handler_messages},
      {"handler_drops", &C::handler_drops},
      {"handler_replies", &C::handler_replies},
      {"handler_replies_refused", &C::handler_replies_refused},
      {"naaice_sessions", &C::naaice_sessions},
      {"naaice_calls", &C::naaice_calls},
      {"naaice_errors", &C::naaice_errors},
      {"naaice_function_ns", &C::naaice_function_ns},
      {"qp_errors", &C::qp_errors},
      {"acks_sent", &C::acks_sent},
      {"naks_sent", &C::naks_sent},
      {"duplicates", &C::duplicates},
      {"read_responses_superseded", &C::read_responses_superseded},
      {"read_slowdowns", &C::read_slowdowns},
      {"executed", &C::executed},
      {"refused_rnr", &C::refused_rnr},
      {"handoffs", &C::handoffs},
      {"cm_received", &C::cm_received},
      {"cm_sent", &C::cm_sent},
      {"cm_connections", &C::cm_connections},
      {"cm_rejects", &C::cm_rejects},
      {"cm_rejects_no_qp", &C::cm_rejects_no_qp},
      {"cm_rejects_no_resources", &C::cm_rejects_no_resources},
      {"cm_sidr_refused", &C::cm_sidr_refused},
      {"perftest_region_rejects", &C::perftest_region_rejects},
      {"neighbor_answers", &C::neighbor_answers},
      {"udp_checksum_zero", &C::udp_checksum_zero},
      {"zero_copy_packets", &C::zero_copy_packets},
      {"zero_copy_fallbacks", &C::zero_copy_fallbacks},
      {"ecn_ce_received", &C::ecn_ce_received},
      {"cnp_sent", &C::cnp_sent},
      {"cnp_held", &C::cnp_held},
      {"cnp_received", &C::cnp_received},
      {"cnp_ignored", &C::cnp_ignored},
  };
  auto sum = [&](auto get) {
    uint64_t total = 0;
    for (const RoceEngine* engine : engines_) {
      total += get(engine->counters()).Get();
    }
    return total;
  };
  for (const auto& [name, member] : kFields) {
    // A copy: clang before 16 cannot capture a structured binding.
    const auto field = member;
    stats->counters.emplace_back(
        name, sum([field](const C& c) -> const Counter& { return c.*field; }));
  }
  for (size_t e = 1; e < roce::kParseErrorCount; ++e) {
    stats->counters.emplace_back(
        absl::StrCat("drop_",
                     roce::ParseErrorName(static_cast<roce::ParseError>(e))),
        sum([e](const C& c) -> const Counter& { return c.parse_errors[e]; }));
  }
  for (size_t n = 0; n < roce::kNakCodeCount; ++n) {
    stats->counters.emplace_back(
        absl::StrCat("refused_",
                     roce::ResponderNakName(static_cast<roce::NakCode>(n))),
        sum([n](const C& c) -> const Counter& { return c.refused_naks[n]; }));
  }
  for (size_t r = 1; r < roce::kResponderDropReasons; ++r) {
    stats->counters.emplace_back(
        absl::StrCat("drop_responder_",
                     roce::Describe(static_cast<roce::ResponderDropReason>(r))),
        sum([r](const C& c) -> const Counter& {
          return c.responder_drops[r];
        }));
  }
  for (size_t k = 0; k < roce::kServiceKinds; ++k) {
    const char* service = ServiceKindName(static_cast<ServiceKind>(k));
    stats->counters.emplace_back(
        absl::StrCat("service_", service, "_connections"),
        sum([k](const C& c) -> const Counter& {
          return c.service_connections[k];
        }));
    stats->counters.emplace_back(
        absl::StrCat("service_", service, "_sends"),
        sum([k](const C& c) -> const Counter& { return c.service_sends[k]; }));
  }
  for (size_t d = 0; d < roce::kRoceDropCount; ++d) {
    stats->counters.emplace_back(
        absl::StrCat("drop_",
                     roce::RoceDropName(static_cast<roce::RoceDrop>(d))),
        sum([d](const C& c) -> const Counter& { return c.drops[d]; }));
  }
  RttHistogramStats rtt;
  for (const RoceEngine* engine : engines_) rtt.Add(engine->counters().rtt);
  stats->histograms.emplace_back("rtt", rtt);
}

}  // namespace spinnic::roce
