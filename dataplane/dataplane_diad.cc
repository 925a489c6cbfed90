// The control side of the DiAD transport: its pools and rings, the
// published peer table, submitting remote operations and waiting for them,
// and its counters. The HPU side is dataplane/diad/diad_engine.cc.
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
#include "dataplane/dataplane.h"

namespace spinnic {
namespace {

constexpr uint32_t kCommandRingSize = 4096;
// Indirect mbufs for retransmission clones: one per held packet in flight
// on the wire at once, bounded by windows; plenty for any sane config.
constexpr uint32_t kMinClones = 8192;

std::string NodeText(const diad::NodeAddress& node) {
  char text[INET6_ADDRSTRLEN];
  inet_ntop(AF_INET6, node.data(), text, sizeof text);
  return text;
}

absl::Status StatusOf(diad::Status status, const DiadRequest& request,
                      uint64_t length) {
  const std::string where =
      absl::StrCat("peer '", request.peer, "' channel ", request.channel);
  switch (status) {
    case diad::Status::kOk:
      return absl::OkStatus();
    case diad::Status::kBadKey:
      return absl::NotFoundError(absl::StrCat(
          where, ": no region with rkey ", request.key, " (or no stream ",
          request.key, ") there; check the peer's regions"));
    case diad::Status::kOutOfBounds:
      return absl::OutOfRangeError(
          absl::StrFormat("%s: [0x%x, +%u) is outside the region with rkey %u",
                          where, request.address, length, request.key));
    case diad::Status::kNoAccess:
      return absl::PermissionDeniedError(absl::StrCat(
          where, ": the region with rkey ", request.key, " does not grant ",
          request.kind == diad::DiadOp::Kind::kRead ? "remote_read"
                                                    : "remote_write"));
    case diad::Status::kBadLength:
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": the peer refused the length"));
    case diad::Status::kRejected:
      return absl::AbortedError(
          absl::StrCat(where, ": a handler on the peer rejected the message"));
    case diad::Status::kPeerDown:
      return absl::UnavailableError(absl::StrCat(
          where,
          ": the peer stopped answering (retries exhausted); check the "
          "link and that the peer runs"));
    case diad::Status::kPeerReset:
      return absl::AbortedError(absl::StrCat(
          where, ": the peer restarted before it answered; retry"));
    case diad::Status::kAborted:
      return absl::AbortedError(absl::StrCat(
          where, ": aborted (peer removed or dataplane stopping)"));
  }
  return absl::InternalError(
      absl::StrCat(where, ": unknown status ", static_cast<int>(status)));
}

bool IsUnicastMac(const diad::MacAddress& mac) {
  bool zero =
      std::all_of(mac.begin(), mac.end(), [](uint8_t b) { return b == 0; });
  return !zero && (mac[0] & 1) == 0;
}

}  // namespace

absl::Status Dataplane::EnsureInboundRings(const DataplaneConfig& config,
                                           HpuShared* shared) {
  const uint32_t workers = static_cast<uint32_t>(config.worker_cores.size());
  if (workers > 1 && inbound_rings_.empty()) {
    for (uint32_t w = 0; w < workers; ++w) {
      std::string name = absl::StrCat("spinnic_in", w);
      rte_ring* ring = rte_ring_create(name.c_str(), kSchedulerRingSize,
                                       rte_socket_id(), RING_F_SC_DEQ);
      if (ring == nullptr) {
        return absl::ResourceExhaustedError("cannot create an inbound ring");
      }
      inbound_rings_.push_back(ring);
    }
    shared->inbound = inbound_rings_.data();
  }
  return absl::OkStatus();
}

absl::Status Dataplane::CreateDiad(const DataplaneConfig& config,
                                   HpuShared* shared) {
  diad_config_ = config.diad;
  if (!diad_config_.enabled) return absl::OkStatus();
  if (diad_config_.port >= ports_.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "diad.port: port index ", diad_config_.port, " does not exist"));
  }
  // A frame larger than the port's MTU is not something the device
  // promises to carry (DPDK 22.11's memif, asked to, delivers phantom
  // frames under load): the path MTU must fit the DiAD port.
  const Port& port = ports_[diad_config_.port];
  if (diad_config_.path_mtu + uint32_t{RTE_ETHER_HDR_LEN} > port.max_frame()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "diad.path_mtu ", diad_config_.path_mtu, " is larger than port '",
        port.name(), "''s MTU ", port.max_frame() - RTE_ETHER_HDR_LEN,
        "; lower diad.path_mtu or raise the port's mtu (if its device "
        "allows)"));
  }
  if (std::all_of(diad_config_.mac.begin(), diad_config_.mac.end(),
                  [](uint8_t b) { return b == 0; })) {
    rte_ether_addr mac;
    if (rte_eth_macaddr_get(ports_[diad_config_.port].port_id(), &mac) != 0) {
      return absl::FailedPreconditionError(
          "cannot read the DiAD port's MAC; set addresses.mac");
    }
    std::memcpy(diad_config_.mac.data(), mac.addr_bytes, 6);
  }
  const uint32_t workers = static_cast<uint32_t>(config.worker_cores.size());
  uint32_t clones = kMinClones;
  clones = std::max<uint32_t>(
      clones, 2 * diad_config_.channel.window_packets * diad_config_.channels *
                  std::min<uint32_t>(diad_config_.max_peers, 16));
  clone_pool_ = rte_pktmbuf_pool_create("spinnic_clones", clones, 256, 0, 0,
                                        rte_socket_id());
  if (clone_pool_ == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot create the DiAD clone pool (", rte_strerror(rte_errno),
        "): give the EAL more memory (-m)"));
  }
  for (uint32_t w = 0; w < workers; ++w) {
    std::string name = absl::StrCat("spinnic_cmd", w);
    rte_ring* ring = rte_ring_create(name.c_str(), kCommandRingSize,
                                     rte_socket_id(), RING_F_SC_DEQ);
    if (ring == nullptr) {
      return absl::ResourceExhaustedError("cannot create a DiAD command ring");
    }
    command_rings_.push_back(ring);
  }
  // Frames for a channel another HPU owns are handed over through the
  // inbound rings.
  if (absl::Status status = EnsureInboundRings(config, shared); !status.ok()) {
    return status;
  }
  {
    absl::MutexLock lock(&mu_);
    current_peers_ = std::make_unique<diad::PeerTable>();
    peers_.store(current_peers_.get());
  }
  diad_shared_.config = &diad_config_;
  diad_shared_.peers = &peers_;
  diad_shared_.regions = &regions_;
  diad_shared_.pool = pool_;
  diad_shared_.clone_pool = clone_pool_;
  diad_shared_.commands = command_rings_.data();
  diad_shared_.inbound =
      inbound_rings_.empty() ? nullptr : inbound_rings_.data();
  diad_shared_.hpu_count = workers;
  diad_shared_.pending_ops = &diad_pending_ops_;
  shared->diad = &diad_shared_;
  uint64_t seed = 0;
  if (getrandom(&seed, sizeof seed, 0) != sizeof seed) {
    return absl::InternalError("getrandom failed: cannot draw DiAD epochs");
  }
  shared->diad_epoch_seed = seed;
  for (const diad::PeerConfig& peer : diad_config_.peers) {
    absl::Status status = AddPeer(peer);
    if (!status.ok()) {
      return absl::Status(status.code(),
                          absl::StrCat("diad.peers: ", status.message()));
    }
  }
  return absl::OkStatus();
}

absl::Status Dataplane::AddPeer(const diad::PeerConfig& config) {
  if (!diad_config_.enabled) {
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
  if (config.node == diad_config_.node) {
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
  std::vector<diad::Peer> peers = current_peers_->peers();
  std::vector<bool> used(diad_config_.max_peers, false);
  for (const diad::Peer& peer : peers) {
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
        absl::StrCat("all ", diad_config_.max_peers,
                     " peer slots are in use (diad.max_peers); remove a peer "
                     "or raise the limit"));
  }
  diad::Peer peer;
  peer.slot = static_cast<uint32_t>(free_slot - used.begin());
  peer.generation = next_peer_generation_++;
  peer.name = config.name;
  peer.node = config.node;
  peer.mac = config.mac;
  peers.push_back(std::move(peer));
  PublishPeers(std::move(peers));
  return absl::OkStatus();
}

absl::Status Dataplane::RemovePeer(absl::string_view name) {
  absl::MutexLock lock(&mu_);
  if (current_peers_ == nullptr) {
    return absl::NotFoundError(absl::StrCat("no peer named '", name, "'"));
  }
  std::vector<diad::Peer> peers = current_peers_->peers();
  auto it = std::find_if(peers.begin(), peers.end(),
                         [&](const diad::Peer& p) { return p.name == name; });
  if (it == peers.end()) {
    return absl::NotFoundError(absl::StrCat("no peer named '", name, "'"));
  }
  peers.erase(it);
  PublishPeers(std::move(peers));
  return absl::OkStatus();
}

std::vector<PeerInfo> Dataplane::ListPeers() const {
  absl::MutexLock lock(&mu_);
  std::vector<PeerInfo> list;
  if (current_peers_ == nullptr) return list;
  for (const diad::Peer& peer : current_peers_->peers()) {
    PeerInfo info;
    info.name = peer.name;
    info.slot = peer.slot;
    info.node = peer.node;
    info.mac = peer.mac;
    for (const auto& hpu : hpus_) {
      if (hpu->diad() == nullptr) continue;
      const diad::DiadPeerCounters& c = hpu->diad()->peer_counters(peer.slot);
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
    }
    info.up = info.channels_down == 0;
    list.push_back(std::move(info));
  }
  return list;
}

absl::Status Dataplane::CheckDiadRequest(const DiadRequest& request,
                                         const diad::Peer** peer) const {
  if (!diad_config_.enabled) {
    return absl::FailedPreconditionError(
        "DiAD is off: set addresses.diad_node in the config");
  }
  *peer = nullptr;
  std::string known;
  for (const diad::Peer& p : current_peers_->peers()) {
    if (p.name == request.peer) *peer = &p;
    absl::StrAppend(&known, known.empty() ? "" : ", ", p.name);
  }
  if (*peer == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("no peer named '", request.peer,
                     "' (peers: ", known.empty() ? "none" : known, ")"));
  }
  if (request.channel >= diad_config_.channels) {
    return absl::InvalidArgumentError(absl::StrCat(
        "channel ", request.channel, " does not exist: the ", "appliance has ",
        diad_config_.channels, " channels per peer (diad.channels)"));
  }
  uint64_t length = request.kind == diad::DiadOp::Kind::kRead
                        ? request.read_length
                        : request.data.size();
  if (length == 0 || length > diad_config_.max_message_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "length ", length, ": must be 1..", diad_config_.max_message_bytes,
        " bytes (diad.max_message_bytes)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<DiadResult>> Dataplane::DiadExecute(
    std::vector<DiadRequest> requests, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  std::vector<diad::DiadOp*> ops;
  ops.reserve(requests.size());
  {
    absl::MutexLock lock(&mu_);
    for (size_t i = 0; i < requests.size(); ++i) {
      const diad::Peer* peer = nullptr;
      absl::Status status = CheckDiadRequest(requests[i], &peer);
      if (!status.ok()) {
        for (diad::DiadOp* op : ops) delete op;
        if (requests.size() == 1) return status;
        return absl::Status(
            status.code(), absl::StrCat("request ", i, ": ", status.message()));
      }
      auto* op = new diad::DiadOp();
      op->kind = requests[i].kind;
      op->peer_slot = peer->slot;
      op->peer_generation = peer->generation;
      op->channel = requests[i].channel;
      op->key = requests[i].key;
      op->address = requests[i].address;
      if (op->kind == diad::DiadOp::Kind::kRead) {
        op->data.assign(requests[i].read_length, '\0');
      } else {
        op->data = std::move(requests[i].data);
      }
      ops.push_back(op);
    }
  }
  if (!started_ || stop_.load(std::memory_order_relaxed)) {
    // Tests drive HPUs by hand; nothing would ever run the operations.
    for (diad::DiadOp* op : ops) delete op;
    return absl::FailedPreconditionError("the dataplane is not running");
  }
  // Submit in order, holding back while too many are pending: the HPUs
  // complete them meanwhile.
  const uint32_t workers = static_cast<uint32_t>(hpus_.size());
  size_t submitted = 0;
  absl::Duration nap = absl::Microseconds(20);
  std::vector<DiadResult> results(ops.size());
  size_t waited = 0;
  while (waited < ops.size()) {
    bool progress = false;
    while (submitted < ops.size() && absl::Now() < deadline &&
           diad_pending_ops_.load(std::memory_order_relaxed) <
               diad_config_.max_pending_ops) {
      diad::DiadOp* op = ops[submitted];
      rte_ring* ring = command_rings_[op->channel % workers];
      diad_pending_ops_.fetch_add(1, std::memory_order_relaxed);
      if (rte_ring_mp_enqueue(ring, op) != 0) {
        diad_pending_ops_.fetch_sub(1, std::memory_order_relaxed);
        break;  // ring full: wait for the HPU to take some
      }
      ++submitted;
      progress = true;
    }
    while (waited < submitted &&
           ops[waited]->done.load(std::memory_order_acquire)) {
      diad::DiadOp* op = ops[waited];
      DiadResult& result = results[waited];
      result.status = StatusOf(op->status, requests[waited], op->data.size());
      result.latency_ns = op->latency_ns;
      if (op->kind == diad::DiadOp::Kind::kRead && result.status.ok()) {
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

void Dataplane::SnapshotDiad(DiadStats* stats) const {
  stats->enabled = diad_config_.enabled;
  if (!stats->enabled) return;
  using C = diad::DiadCounters;
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
  };
  for (const auto& [name, field] : kFields) {
    uint64_t sum = 0;
    for (const auto& hpu : hpus_) {
      if (hpu->diad() != nullptr) sum += (hpu->diad()->counters().*field).Get();
    }
    stats->counters.emplace_back(name, sum);
  }
  for (size_t r = static_cast<size_t>(diad::DiadDrop::kTruncated);
       r < diad::kDiadDropCount; ++r) {
    uint64_t sum = 0;
    for (const auto& hpu : hpus_) {
      if (hpu->diad() != nullptr) sum += hpu->diad()->counters().drops[r].Get();
    }
    stats->counters.emplace_back(
        absl::StrCat("drop_",
                     diad::DiadDropName(static_cast<diad::DiadDrop>(r))),
        sum);
  }
}

}  // namespace spinnic
