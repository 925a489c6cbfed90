// The control half of the DiAD transport (diad_module.h).
#include "dataplane/diad/diad_module.h"

#include <arpa/inet.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <sys/random.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "dataplane/dataplane_config.h"
#include "dataplane/diad/stream_ring.h"
#include "dataplane/memory_region.h"
#include "dataplane/port.h"
#include "dataplane/rcu_table.h"
#include "dataplane/stats.h"

namespace spinnic::diad {
namespace {

constexpr uint32_t kCommandRingSize = 4096;
// Indirect mbufs for retransmission clones: one per held packet in flight
// on the wire at once, bounded by windows; plenty for any sane config.
constexpr uint32_t kMinClones = 8192;

std::string NodeText(const NodeAddress& node) {
  char text[INET6_ADDRSTRLEN];
  inet_ntop(AF_INET6, node.data(), text, sizeof text);
  return text;
}

absl::Status StatusOf(Status status, const DiadRequest& request,
                      uint64_t length) {
  const std::string where =
      absl::StrCat("peer '", request.peer, "' channel ", request.channel);
  switch (status) {
    case Status::kOk:
      return absl::OkStatus();
    case Status::kBadKey:
      return absl::NotFoundError(absl::StrCat(
          where, ": no region with rkey ", request.key, " (or no stream ",
          request.key, ") there; check the peer's regions"));
    case Status::kOutOfBounds:
      return absl::OutOfRangeError(
          absl::StrFormat("%s: [0x%x, +%u) is outside the region with rkey %u",
                          where, request.address, length, request.key));
    case Status::kNoAccess:
      return absl::PermissionDeniedError(absl::StrCat(
          where, ": the region with rkey ", request.key, " does not grant ",
          request.kind == DiadOp::Kind::kRead ? "remote_read"
                                              : "remote_write"));
    case Status::kBadLength:
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": the peer refused the length"));
    case Status::kRejected:
      return absl::AbortedError(
          absl::StrCat(where, ": a handler on the peer rejected the message"));
    case Status::kPeerDown:
      return absl::UnavailableError(absl::StrCat(
          where,
          ": the peer stopped answering (retries exhausted); check the "
          "link and that the peer runs"));
    case Status::kPeerReset:
      return absl::AbortedError(absl::StrCat(
          where, ": the peer restarted before it answered; retry"));
    case Status::kAborted:
      return absl::AbortedError(absl::StrCat(
          where, ": aborted (peer removed or dataplane stopping)"));
    case Status::kDeadlineExceeded:
      // The channel is up (the peer acknowledges), but this transaction was
      // never answered: its slot was released after diad.txn_deadline_ms.
      return absl::DeadlineExceededError(absl::StrCat(
          where,
          ": the peer acknowledged the request but sent no response within "
          "the transaction deadline (diad.txn_deadline_ms); it may or may "
          "not have been carried out; check the peer's handlers and logs"));
  }
  return absl::InternalError(
      absl::StrCat(where, ": unknown status ", static_cast<int>(status)));
}

bool IsUnicastMac(const MacAddress& mac) {
  bool zero =
      std::all_of(mac.begin(), mac.end(), [](uint8_t b) { return b == 0; });
  return !zero && (mac[0] & 1) == 0;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TransportModule>> DiadModule::Make(
    const DataplaneConfig& config) {
  return std::unique_ptr<TransportModule>(
      new DiadModule(config.transports.get<DiadConfig>()));
}

DiadModule::~DiadModule() { Close(); }

uint32_t DiadModule::ExtraMbufs() const {
  // Packets held for retransmission: full windows on a few busy peers.
  // Beyond that senders wait for buffers (counted, not lost).
  if (!config_.enabled) return 0;
  const uint32_t held = config_.channel.window_packets * config_.channels *
                        std::min<uint32_t>(config_.max_peers, 4);
  // SELECTIVE peers: the receiver holds out-of-order packets, and the
  // sender up to a window more (SACKed packets leave the window), for up to
  // four of them (beyond, senders wait and receivers drop, counted).
  const uint32_t reorder = (config_.channel.reorder_packets != 0
                                ? config_.channel.reorder_packets
                                : 2 * config_.channel.window_packets) +
                           config_.channel.window_packets;
  const uint32_t selective = static_cast<uint32_t>(std::count_if(
      config_.peers.begin(), config_.peers.end(), [](const PeerConfig& peer) {
        return peer.recovery == Recovery::kSelective;
      }));
  return held + reorder * config_.channels * std::min<uint32_t>(selective, 4);
}

uint32_t DiadModule::MinDataRoom(uint32_t /*max_port_mtu*/) const {
  // DiAD builds each packet in one mbuf: its path MTU sets a floor.
  if (!config_.enabled) return 0;
  return RTE_PKTMBUF_HEADROOM + kEthernetBytes + config_.path_mtu;
}

absl::Status DiadModule::Open(const TransportEnv& env) {
  env_ = env;
  if (!config_.enabled) return absl::OkStatus();
  if (config_.port >= env.ports.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "diad.port: port index ", config_.port, " does not exist"));
  }
  // A frame larger than the port's MTU is not something the device
  // promises to carry (DPDK 22.11's memif, asked to, delivers phantom
  // frames under load): the path MTU must fit the DiAD port.
  const Port& port = env.ports[config_.port];
  if (config_.path_mtu + uint32_t{RTE_ETHER_HDR_LEN} > port.max_frame()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "diad.path_mtu ", config_.path_mtu, " is larger than port '",
        port.name(), "''s MTU ", port.max_frame() - RTE_ETHER_HDR_LEN,
        "; lower diad.path_mtu or raise the port's mtu (if its device "
        "allows)"));
  }
  if (std::all_of(config_.mac.begin(), config_.mac.end(),
                  [](uint8_t b) { return b == 0; })) {
    rte_ether_addr mac;
    if (rte_eth_macaddr_get(port.port_id(), &mac) != 0) {
      return absl::FailedPreconditionError(
          "cannot read the DiAD port's MAC; set addresses.mac");
    }
    std::memcpy(config_.mac.data(), mac.addr_bytes, 6);
  }
  const uint32_t workers = env.hpu_count;
  uint32_t clones = kMinClones;
  clones = std::max<uint32_t>(
      clones, 2 * config_.channel.window_packets * config_.channels *
                  std::min<uint32_t>(config_.max_peers, 16));
  clone_pool_ = rte_pktmbuf_pool_create(
      ResourceName("spinnic_clones", env.instance_suffix).c_str(), clones, 256,
      0, 0, rte_socket_id());
  if (clone_pool_ == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot create the DiAD clone pool (", rte_strerror(rte_errno),
        "): give the EAL more memory (-m)"));
  }
  for (uint32_t w = 0; w < workers; ++w) {
    std::string name =
        ResourceName(absl::StrCat("spinnic_cmd", w), env.instance_suffix);
    rte_ring* ring = rte_ring_create(name.c_str(), kCommandRingSize,
                                     rte_socket_id(), RING_F_SC_DEQ);
    if (ring == nullptr) {
      return absl::ResourceExhaustedError("cannot create a DiAD command ring");
    }
    command_rings_.push_back(ring);
    name = ResourceName(absl::StrCat("spinnic_dput", w), env.instance_suffix);
    ring = rte_ring_create(name.c_str(), kCommandRingSize, rte_socket_id(),
                           RING_F_SC_DEQ);
    if (ring == nullptr) {
      return absl::ResourceExhaustedError(
          "cannot create a DiAD handler action ring");
    }
    action_rings_.push_back(ring);
  }
  {
    absl::MutexLock lock(&mu_);
    current_peers_ = std::make_unique<PeerTable>();
    peers_.store(current_peers_.get());
  }
  shared_.config = &config_;
  shared_.peers = &peers_;
  shared_.regions = env.regions;
  shared_.pool = env.pool;
  shared_.clone_pool = clone_pool_;
  // Chained packets only where the port sends them (a PMD without
  // MULTI_SEGS would send the header alone).
  if (config_.zero_copy_min_bytes != 0 &&
      env.ports[config_.port].tx_multi_segs()) {
    shared_.region_tx = env.region_tx;
  }
  shared_.commands = command_rings_.data();
  shared_.handler_actions = action_rings_.data();
  // Frames for a channel another HPU owns are handed over through the
  // inbound rings.
  shared_.inbound = env.inbound;
  shared_.hpu_count = workers;
  shared_.pending_ops = &pending_ops_;
  if (getrandom(&epoch_seed_, sizeof epoch_seed_, 0) != sizeof epoch_seed_) {
    return absl::InternalError("getrandom failed: cannot draw DiAD epochs");
  }
  for (const PeerConfig& peer : config_.peers) {
    absl::Status status = AddPeer(peer);
    if (!status.ok()) {
      return absl::Status(status.code(),
                          absl::StrCat("diad.peers: ", status.message()));
    }
  }
  return absl::OkStatus();
}

std::unique_ptr<TransportEngine> DiadModule::CreateEngine(uint32_t hpu_index,
                                                          Hpu& hpu,
                                                          SpinEngine& spin) {
  if (!config_.enabled) return nullptr;
  auto engine = std::make_unique<DiadEngine>(hpu_index, shared_, &hpu, &spin,
                                             epoch_seed_);
  engines_.push_back(engine.get());
  return engine;
}

absl::Status DiadModule::CheckRegion(const RegionConfig& region) const {
  const uint64_t smallest =
      StreamRing::kHeaderBytes + StreamRing::RecordBytes(1);
  if (region.stream_id != 0 && region.length < smallest) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a stream region needs at least ", smallest,
        " bytes (a 64-byte header and one record); size it for the messages "
        "a reader may fall behind by"));
  }
  return absl::OkStatus();
}

std::span<const BindingKind> DiadModule::BindingKinds() const {
  static constexpr BindingKind kKinds[] = {kBindStream, kBindRegionWrites};
  return kKinds;
}

absl::Status DiadModule::CheckBinding(const HandlerConfig& handler) const {
  if (config_.enabled) return absl::OkStatus();
  return absl::FailedPreconditionError(
      handler.binding.kind == kBindStream
          ? "takes DiAD stream messages but DiAD is off (no "
            "addresses.diad_node)"
          : "DiAD is off (addresses.diad_node)");
}

std::string DiadModule::DescribeBinding(const MessageBinding& binding) const {
  return absl::StrCat("stream ", binding.key);
}

void DiadModule::Close() {
  engines_.clear();
  for (rte_ring* ring : command_rings_) rte_ring_free(ring);
  command_rings_.clear();
  for (rte_ring* ring : action_rings_) {
    DiadEngine::DiscardHandedActions(ring);  // handed after its HPU stopped
    rte_ring_free(ring);
  }
  action_rings_.clear();
  rte_mempool_free(clone_pool_);
  clone_pool_ = nullptr;
}

absl::Status DiadModule::AddPeer(const PeerConfig& config) {
  if (!config_.enabled) {
    return absl::FailedPreconditionError(
        "DiAD is off: set addresses.diad_node (and addresses.mac) in the "
        "config to give this appliance a node address");
  }
  if (config.name.empty()) {
    return absl::InvalidArgumentError("peer name: must not be empty");
  }
  if ((config.node[0] & 0xfe) != 0xfc) {
    return absl::InvalidArgumentError(absl::StrCat(
        "peer '", config.name, "': node address ", NodeText(config.node),
        " is not in fc00::/7 (DiAD nodes use unique local "
        "addresses, e.g. fd00:d1ad::2)"));
  }
  if (config.node == config_.node) {
    return absl::InvalidArgumentError(
        absl::StrCat("peer '", config.name, "': ", NodeText(config.node),
                     " is this appliance's own node address"));
  }
  if (!IsUnicastMac(config.mac)) {
    return absl::InvalidArgumentError(
        absl::StrCat("peer '", config.name,
                     "': the MAC must be a unicast, non-zero address"));
  }
  absl::MutexLock lock(&mu_);
  std::vector<Peer> peers = current_peers_->peers();
  std::vector<bool> used(config_.max_peers, false);
  for (const Peer& peer : peers) {
    if (peer.name == config.name) {
      return absl::AlreadyExistsError(absl::StrCat(
          "a peer named '", config.name, "' exists; remove it first"));
    }
    if (peer.node == config.node) {
      return absl::AlreadyExistsError(
          absl::StrCat("peer '", peer.name, "' already has node address ",
                       NodeText(config.node)));
    }
    used[peer.slot] = true;
  }
  auto free_slot = std::find(used.begin(), used.end(), false);
  if (free_slot == used.end()) {
    return absl::ResourceExhaustedError(
        absl::StrCat("all ", config_.max_peers,
                     " peer slots are in use (diad.max_peers); remove a peer "
                     "or raise the limit"));
  }
  Peer peer;
  peer.slot = static_cast<uint32_t>(free_slot - used.begin());
  peer.generation = next_peer_generation_++;
  peer.name = config.name;
  peer.node = config.node;
  peer.mac = config.mac;
  peer.recovery = config.recovery;
  peers.push_back(std::move(peer));
  PublishPeers(std::move(peers));
  return absl::OkStatus();
}

absl::Status DiadModule::RemovePeer(absl::string_view name) {
  absl::MutexLock lock(&mu_);
  if (current_peers_ == nullptr) {
    return absl::NotFoundError(absl::StrCat("no peer named '", name, "'"));
  }
  std::vector<Peer> peers = current_peers_->peers();
  auto it = std::find_if(peers.begin(), peers.end(),
                         [&](const Peer& p) { return p.name == name; });
  if (it == peers.end()) {
    return absl::NotFoundError(absl::StrCat("no peer named '", name, "'"));
  }
  peers.erase(it);
  PublishPeers(std::move(peers));
  return absl::OkStatus();
}

bool DiadModule::HasPeer(std::string_view name) const {
  absl::MutexLock lock(&mu_);
  return current_peers_ != nullptr &&
         current_peers_->FindByName(
             absl::string_view(name.data(), name.size())) != nullptr;
}

std::vector<PeerInfo> DiadModule::ListPeers() const {
  absl::MutexLock lock(&mu_);
  std::vector<PeerInfo> list;
  if (current_peers_ == nullptr) return list;
  for (const Peer& peer : current_peers_->peers()) {
    PeerInfo info;
    info.name = peer.name;
    info.slot = peer.slot;
    info.node = peer.node;
    info.mac = peer.mac;
    info.recovery = peer.recovery;
    for (const DiadEngine* engine : engines_) {
      const DiadPeerCounters& c = engine->peer_counters(peer.slot);
      info.channels_down += c.channels_down.load(std::memory_order_relaxed);
      info.in_flight_packets +=
          c.in_flight_packets.load(std::memory_order_relaxed);
      info.tx_packets += c.tx_packets.Get();
      info.tx_bytes += c.tx_bytes.Get();
      info.rx_packets += c.rx_packets.Get();
      info.rx_bytes += c.rx_bytes.Get();
      info.retransmits += c.retransmits.Get();
      info.down_events += c.down_events.Get();
      info.resets += c.resets.Get();
      info.ops_completed += c.ops_completed.Get();
      info.ops_failed += c.ops_failed.Get();
      info.rtt_samples += c.rtt_samples.Get();
      info.txn_deadline_exceeded += c.txn_deadline_exceeded.Get();
      info.srtt_ns = std::max<uint64_t>(
          info.srtt_ns, c.srtt_ns.load(std::memory_order_relaxed));
      info.rto_ns = std::max<uint64_t>(
          info.rto_ns, c.rto_ns.load(std::memory_order_relaxed));
      info.cc_window = std::max<double>(
          info.cc_window, c.cc_window.load(std::memory_order_relaxed));
      info.cc_rtt_ns = std::max<uint64_t>(
          info.cc_rtt_ns, c.cc_rtt_ns.load(std::memory_order_relaxed));
      info.cc_delay_decreases += c.cc_delay_decreases.Get();
      info.cc_ecn_decreases += c.cc_ecn_decreases.Get();
      info.cc_timeout_decreases += c.cc_timeout_decreases.Get();
      info.ce_marks_received += c.ce_marks_received.Get();
      info.ecn_echoes_received += c.ecn_echoes_received.Get();
    }
    info.up = info.channels_down == 0;
    list.push_back(std::move(info));
  }
  return list;
}

absl::Status DiadModule::CheckRequest(const DiadRequest& request,
                                      const Peer** peer) const {
  if (!config_.enabled) {
    return absl::FailedPreconditionError(
        "DiAD is off: set addresses.diad_node in the config");
  }
  *peer = nullptr;
  std::string known;
  for (const Peer& p : current_peers_->peers()) {
    if (p.name == request.peer) *peer = &p;
    absl::StrAppend(&known, known.empty() ? "" : ", ", p.name);
  }
  if (*peer == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("no peer named '", request.peer,
                     "' (peers: ", known.empty() ? "none" : known, ")"));
  }
  if (request.channel >= config_.channels) {
    return absl::InvalidArgumentError(absl::StrCat(
        "channel ", request.channel, " does not exist: the ", "appliance has ",
        config_.channels, " channels per peer (diad.channels)"));
  }
  uint64_t length = request.kind == DiadOp::Kind::kRead ? request.read_length
                                                        : request.data.size();
  if (length == 0 || length > config_.max_message_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "length ", length, ": must be 1..", config_.max_message_bytes,
        " bytes (diad.max_message_bytes)"));
  }
  return absl::OkStatus();
}

DiadOp* DiadModule::MakeOp(DiadRequest& request, const Peer& peer) {
  auto* op = new DiadOp();
  op->kind = request.kind;
  op->peer_slot = peer.slot;
  op->peer_generation = peer.generation;
  op->channel = request.channel;
  op->key = request.key;
  op->address = request.address;
  if (op->kind == DiadOp::Kind::kRead) {
    op->data.assign(request.read_length, '\0');
  } else {
    op->data = std::move(request.data);
  }
  return op;
}

absl::StatusOr<DiadOp*> DiadModule::Submit(DiadRequest request) {
  DiadOp* op = nullptr;
  {
    absl::MutexLock lock(&mu_);
    const Peer* peer = nullptr;
    if (absl::Status status = CheckRequest(request, &peer); !status.ok()) {
      return status;
    }
    op = MakeOp(request, *peer);
  }
  if (pending_ops_.fetch_add(1, std::memory_order_relaxed) >=
      config_.max_pending_ops) {
    pending_ops_.fetch_sub(1, std::memory_order_relaxed);
    ops_refused_busy_.fetch_add(1, std::memory_order_relaxed);
    delete op;
    return absl::UnavailableError(
        absl::StrCat(config_.max_pending_ops,
                     " operations are pending (diad.max_pending_ops); poll "
                     "the HPUs and retry"));
  }
  if (rte_ring_mp_enqueue(command_rings_[op->channel % env_.hpu_count], op) !=
      0) {
    pending_ops_.fetch_sub(1, std::memory_order_relaxed);
    ops_refused_busy_.fetch_add(1, std::memory_order_relaxed);
    delete op;
    return absl::UnavailableError(
        "the HPU's DiAD command ring is full; poll the HPUs and retry");
  }
  return op;
}

absl::StatusOr<std::vector<DiadResult>> DiadModule::Execute(
    std::vector<DiadRequest> requests, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  std::vector<DiadOp*> ops;
  ops.reserve(requests.size());
  {
    absl::MutexLock lock(&mu_);
    for (size_t i = 0; i < requests.size(); ++i) {
      const Peer* peer = nullptr;
      absl::Status status = CheckRequest(requests[i], &peer);
      if (!status.ok()) {
        for (DiadOp* op : ops) delete op;
        if (requests.size() == 1) return status;
        return absl::Status(
            status.code(), absl::StrCat("request ", i, ": ", status.message()));
      }
      ops.push_back(MakeOp(requests[i], *peer));
    }
  }
  if (env_.running == nullptr ||
      !env_.running->load(std::memory_order_relaxed)) {
    // Tests drive HPUs by hand; nothing would ever run the operations.
    for (DiadOp* op : ops) delete op;
    return absl::FailedPreconditionError("the dataplane is not running");
  }
  // Submit in order, holding back while too many are pending: the HPUs
  // complete them meanwhile.
  const uint32_t workers = env_.hpu_count;
  size_t submitted = 0;
  absl::Duration nap = absl::Microseconds(20);
  std::vector<DiadResult> results(ops.size());
  size_t waited = 0;
  while (waited < ops.size()) {
    bool progress = false;
    while (submitted < ops.size() && absl::Now() < deadline &&
           pending_ops_.load(std::memory_order_relaxed) <
               config_.max_pending_ops) {
      DiadOp* op = ops[submitted];
      rte_ring* ring = command_rings_[op->channel % workers];
      pending_ops_.fetch_add(1, std::memory_order_relaxed);
      if (rte_ring_mp_enqueue(ring, op) != 0) {
        pending_ops_.fetch_sub(1, std::memory_order_relaxed);
        break;  // ring full: wait for the HPU to take some
      }
      ++submitted;
      progress = true;
    }
    while (waited < submitted &&
           ops[waited]->done.load(std::memory_order_acquire)) {
      DiadOp* op = ops[waited];
      DiadResult& result = results[waited];
      result.status = StatusOf(op->status, requests[waited], op->data.size());
      result.latency_ns = op->latency_ns;
      if (op->kind == DiadOp::Kind::kRead && result.status.ok()) {
        result.data = std::move(op->data);
      }
      op->Unref();
      ++waited;
      progress = true;
    }
    if (waited == ops.size()) break;
    if (absl::Now() >= deadline) {
      for (size_t i = waited; i < ops.size(); ++i) {
        results[i].status = absl::DeadlineExceededError(absl::StrCat(
            "peer '", requests[i].peer, "' channel ", requests[i].channel,
            ": not complete within the timeout",
            i < submitted ? " (still in flight)" : " (never started)"));
        if (i < submitted) {
          ops[i]->Unref();  // the HPU drops the other reference
        } else {
          delete ops[i];
        }
      }
      break;
    }
    if (progress) {
      nap = absl::Microseconds(20);
    } else {
      absl::SleepFor(nap);
      nap = std::min(nap * 2, absl::Milliseconds(2));
    }
  }
  return results;
}

void DiadModule::Snapshot(StatsSnapshot& snapshot) const {
  TransportStats* stats = &snapshot.transports.emplace_back();
  stats->name = std::string(name());
  stats->enabled = config_.enabled;
  if (!stats->enabled) return;
  using C = DiadCounters;
  static constexpr std::pair<const char*, Counter C::*> kFields[] = {
      {"rx_packets", &C::rx_packets},
      {"rx_bytes", &C::rx_bytes},
      {"tx_data", &C::tx_data},
      {"tx_bytes", &C::tx_bytes},
      {"retransmits", &C::retransmits},
      {"acks_sent", &C::acks_sent},
      {"nacks_sent", &C::nacks_sent},
      {"unacks_sent", &C::unacks_sent},
      {"acks_received", &C::acks_received},
      {"nacks_received", &C::nacks_received},
      {"unacks_received", &C::unacks_received},
      {"handoffs", &C::handoffs},
      {"messages_delivered", &C::messages_delivered},
      {"bytes_delivered", &C::bytes_delivered},
      {"reads_served", &C::reads_served},
      {"ops_completed", &C::ops_completed},
      {"ops_failed", &C::ops_failed},
      {"channel_down", &C::channel_down},
      {"peer_reset", &C::peer_reset},
      {"stream_no_target", &C::stream_no_target},
      {"neighbor_answers", &C::neighbor_answers},
      {"neighbor_ignored", &C::neighbor_ignored},
      {"handler_puts", &C::handler_puts},
      {"handler_gets", &C::handler_gets},
      {"handler_refused", &C::handler_refused},
      {"handler_handoffs", &C::handler_handoffs},
      {"sacks_sent", &C::sacks_sent},
      {"sacks_received", &C::sacks_received},
      {"reorder_held", &C::reorder_held},
      {"zero_copy_packets", &C::zero_copy_packets},
      {"zero_copy_fallbacks", &C::zero_copy_fallbacks},
      {"rtt_samples", &C::rtt_samples},
      {"rtt_karn_skips", &C::rtt_karn_skips},
      {"txn_deadline_exceeded", &C::txn_deadline_exceeded},
      {"ce_marks_received", &C::ce_marks_received},
      {"ecn_echoes_sent", &C::ecn_echoes_sent},
      {"ecn_echoes_received", &C::ecn_echoes_received},
      {"cc_delay_decreases", &C::cc_delay_decreases},
      {"cc_ecn_decreases", &C::cc_ecn_decreases},
      {"cc_timeout_decreases", &C::cc_timeout_decreases},
      {"cc_paced", &C::cc_paced},
      {"reset_challenges", &C::reset_challenges},
      {"refused_bad_key", &C::refused_bad_key},
      {"refused_out_of_bounds", &C::refused_out_of_bounds},
      {"refused_no_access", &C::refused_no_access},
      {"refused_bad_length", &C::refused_bad_length},
  };
  for (const auto& [name, field] : kFields) {
    uint64_t sum = 0;
    for (const DiadEngine* engine : engines_) {
      sum += (engine->counters().*field).Get();
    }
    stats->counters.emplace_back(name, sum);
  }
  stats->counters.emplace_back(
      "ops_refused_busy", ops_refused_busy_.load(std::memory_order_relaxed));
  for (size_t r = static_cast<size_t>(DiadDrop::kTruncated); r < kDiadDropCount;
       ++r) {
    uint64_t sum = 0;
    for (const DiadEngine* engine : engines_) {
      sum += engine->counters().drops[r].Get();
    }
    stats->counters.emplace_back(
        absl::StrCat("drop_", DiadDropName(static_cast<DiadDrop>(r))), sum);
  }
  RttHistogramStats rtt;
  for (const DiadEngine* engine : engines_) rtt.Add(engine->counters().rtt);
  stats->histograms.emplace_back("rtt", rtt);
}

void DiadModule::PublishPeers(std::vector<Peer> peers) {
  PublishRcuTable(env_.rcu, peers_, current_peers_,
                  std::make_unique<const PeerTable>(std::move(peers)));
}

}  // namespace spinnic::diad
