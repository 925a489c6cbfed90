#include "dataplane/dataplane.h"

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>
#include <sys/random.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "dataplane/common/checksum.h"
#include "dataplane/common/tsan.h"
#include "dataplane/host_checks.h"
#include "dataplane/rcu_table.h"
#include "dataplane/tsan_mempool.h"

namespace spinnic {
namespace {

constexpr uint32_t kEventRingSize = 4096;
constexpr uint32_t kMempoolCache = 256;
// The longest pool and ring base names (the DiAD clone pool, the RoCE
// command ring of HPU 127) still fit DPDK's limits with the longest
// instance suffix.
static_assert(sizeof("spinnic_clones") - 1 + kMaxInstanceSuffix <
              RTE_MEMPOOL_NAMESIZE);
static_assert(sizeof("spinnic_roce_cmd127") - 1 + kMaxInstanceSuffix <
              RTE_RING_NAMESIZE);

// The EAL launches and joins the HPU lcores inside uninstrumented
// librte_eal: these annotations tell a ThreadSanitizer build that Start
// happens before an HPU's first poll and its last poll before Stop returns.
int HpuMain(void* arg) {
  tsan::Acquire(arg);  // Start's launch
  const int rc = static_cast<Hpu*>(arg)->Run();
  tsan::Release(arg);  // Stop's join
  return rc;
}

// Frees a ring of mbufs and the mbufs still in it.
void FreeRing(rte_ring* ring) {
  if (ring == nullptr) return;
  void* object;
  while (rte_ring_dequeue(ring, &object) == 0) {
    rte_pktmbuf_free(static_cast<rte_mbuf*>(object));
  }
  rte_ring_free(ring);
}

}  // namespace

absl::Status InitEal(const std::vector<std::string>& args) {
  // Before the EAL, whose own failure without hugepages names no fix.
  if (absl::Status status = CheckHugepages(args); !status.ok()) return status;
  std::vector<char*> argv;
  std::vector<std::string> copies = args;  // rte_eal_init may permute argv
  for (std::string& arg : copies) argv.push_back(arg.data());
  argv.push_back(nullptr);
  int rc = rte_eal_init(static_cast<int>(copies.size()), argv.data());
  if (rc < 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "EAL initialisation failed (", rte_strerror(rte_errno),
        "): check eal_args; without hugepages use \"--no-huge\" and \"-m\", "
        "and give each concurrent DPDK process its own \"--file-prefix\""));
  }
  InstrumentMempoolRingOps();  // ThreadSanitizer builds only
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Dataplane>> Dataplane::Create(
    const DataplaneConfig& config) {
  std::unique_ptr<Dataplane> dataplane(new Dataplane());
  // The checksum kernel is chosen at its first call: make that here, on the
  // control thread, rather than on an HPU's first long datagram.
  (void)checksum::KernelName();
  const size_t workers = config.worker_cores.size();
  if (workers == 0) {
    return absl::InvalidArgumentError(
        "no worker lcores: list at least one "
        "core in `workers`");
  }
  if (config.instance_suffix.size() > kMaxInstanceSuffix ||
      !std::all_of(config.instance_suffix.begin(), config.instance_suffix.end(),
                   [](char c) {
                     return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
                            c == '_';
                   })) {
    return absl::InvalidArgumentError(
        absl::StrCat("instance suffix '", config.instance_suffix,
                     "': use at most ", kMaxInstanceSuffix,
                     " characters of [A-Za-z0-9_] (DPDK names are 25 "
                     "characters at most)"));
  }
  if (config.ports.empty() || config.ports.size() > kMaxPorts) {
    return absl::InvalidArgumentError(absl::StrCat(
        "need 1..", kMaxPorts, " ports, got ", config.ports.size()));
  }
  // Worker lcores are the EAL's lcores after the main one, in id order.
  unsigned lcore_id;
  RTE_LCORE_FOREACH_WORKER(lcore_id) {
    if (dataplane->hpu_lcores_.size() < workers) {
      dataplane->hpu_lcores_.push_back(lcore_id);
    }
  }
  if (dataplane->hpu_lcores_.size() < workers) {
    return absl::FailedPreconditionError(absl::StrCat(
        workers, " workers configured but the EAL has only ",
        dataplane->hpu_lcores_.size(), " worker lcores; check --lcores"));
  }
  // The transports first: they size part of the pool.
  for (TransportMaker make : RegisteredTransports()) {
    absl::StatusOr<std::unique_ptr<TransportModule>> module = make(config);
    if (!module.ok()) return module.status();
    dataplane->transport_list_.push_back(module->get());
    dataplane->transports_.push_back(*std::move(module));
  }
  if (dataplane->transports_.size() > kMaxTransports) {
    return absl::InvalidArgumentError(
        absl::StrCat(dataplane->transports_.size(),
                     " transports are registered; an HPU runs at most ",
                     kMaxTransports, " (kMaxTransports in transport.h)"));
  }

  if (absl::Status status = dataplane->CreatePool(config); !status.ok()) {
    return status;
  }
  if (absl::Status status = dataplane->OpenPorts(config); !status.ok()) {
    return status;
  }
  size_t rcu_size = rte_rcu_qsbr_get_memsize(static_cast<uint32_t>(workers));
  dataplane->rcu_ = static_cast<rte_rcu_qsbr*>(
      rte_zmalloc("spinnic_rcu", rcu_size, RTE_CACHE_LINE_SIZE));
  if (dataplane->rcu_ == nullptr ||
      rte_rcu_qsbr_init(dataplane->rcu_, static_cast<uint32_t>(workers)) != 0) {
    return absl::ResourceExhaustedError("cannot allocate the RCU state");
  }

  dataplane->max_regions_ = config.max_regions;
  dataplane->region_bytes_limit_ = config.region_bytes_limit;
  {
    absl::MutexLock lock(&dataplane->mu_);
    dataplane->current_table_ = std::make_unique<EctxTable>();
    dataplane->table_.store(dataplane->current_table_.get());
    dataplane->current_regions_ = std::make_unique<RegionTable>();
    dataplane->regions_.store(dataplane->current_regions_.get());
  }
  if (absl::Status status = dataplane->CreateHpus(config); !status.ok()) {
    return status;
  }

  for (const HandlerConfig& handler : config.handlers) {
    absl::StatusOr<uint32_t> id = dataplane->InstallEctx(handler);
    if (!id.ok()) return id.status();
  }
  return dataplane;
}

Dataplane::~Dataplane() {
  Stop();
  // HPUs (and their transports' held mbufs and queued operations) go
  // before the rings and pools they use.
  hpus_.clear();
  for (TransportModule* module : transport_list_) module->Close();
  for (rte_ring* ring : event_rings_) rte_ring_free(ring);
  // Frames still queued between HPUs when they stopped are freed here.
  for (rte_ring* ring : inbound_rings_) FreeRing(ring);
  for (rte_ring* ring : tx_rings_) FreeRing(ring);
  rte_free(rcu_);
  // Ports closed in Stop(); the pool's mbufs are all back by now, and with
  // them every zero-copy reference.
  region_tx_.reset();
  rte_mempool_free(pool_);
}

absl::Status Dataplane::CreatePool(const DataplaneConfig& config) {
  const size_t workers = config.worker_cores.size();
  // Enough mbufs to fill every descriptor ring, every HPU's bursts and the
  // mempool caches, with headroom for handlers' emitted frames.
  uint32_t mbufs = config.mbufs;
  uint32_t max_mtu = RTE_ETHER_MTU;
  if (mbufs == 0) {
    mbufs = 4096;
    for (const PortConfig& port : config.ports) {
      uint32_t queues = port.queues != 0 ? port.queues : workers;
      mbufs += queues * (port.rx_descriptors + port.tx_descriptors);
    }
    mbufs += workers * (kHpuMaxBurst * kMaxPorts + kMempoolCache);
    // Frames parked in the software scheduler's rings, if it runs.
    if (workers > 1) mbufs += kSchedulerRingSize * (workers + kMaxPorts / 8);
    // Transport frames waiting in the pacers (tx_pacer.h), per HPU.
    for (const PortConfig& port : config.ports) {
      if (port.transport_pacer.enabled) {
        mbufs += workers * port.transport_pacer.queue_frames;
      }
    }
    // What the transports hold (retransmission buffers).
    for (const TransportModule* module : transport_list_) {
      mbufs += module->ExtraMbufs();
    }
  }
  for (const PortConfig& port : config.ports) {
    max_mtu = std::max<uint32_t>(max_mtu, port.mtu);
  }
  // One mbuf holds a standard frame; jumbo MTUs scatter over several.
  // Transports that build each packet in one mbuf set a floor.
  uint32_t data_room = RTE_MBUF_DEFAULT_BUF_SIZE;
  for (const TransportModule* module : transport_list_) {
    data_room = std::max<uint32_t>(data_room, module->MinDataRoom(max_mtu));
  }
  pool_ = rte_pktmbuf_pool_create(
      ResourceName("spinnic_pkts", config.instance_suffix).c_str(), mbufs,
      kMempoolCache, 0, static_cast<uint16_t>(data_room), rte_socket_id());
  if (pool_ == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot create a pool of ", mbufs, " mbufs (", rte_strerror(rte_errno),
        "): give the EAL more memory (-m) or set runtime.mbufs lower"));
  }
  // A zero-copy reference for every mbuf that could carry a range.
  absl::StatusOr<std::unique_ptr<RegionTx>> region_tx =
      RegionTx::Create(ResourceName("spinnic_zc", config.instance_suffix),
                       mbufs, static_cast<int>(rte_socket_id()));
  if (!region_tx.ok()) return region_tx.status();
  region_tx_ = *std::move(region_tx);
  return absl::OkStatus();
}

absl::Status Dataplane::OpenPorts(const DataplaneConfig& config) {
  const size_t workers = config.worker_cores.size();
  for (const PortConfig& port_config : config.ports) {
    absl::StatusOr<Port> port =
        Port::Open(port_config, static_cast<uint16_t>(workers), pool_);
    if (!port.ok()) return port.status();
    ports_.push_back(*std::move(port));
  }

  // Ports with fewer queue pairs than HPUs go through the software
  // scheduler (hpu.h): every HPU gets an inbound ring, each such port a TX
  // ring that HPU 0 drains.
  bool any_scheduled = false;
  for (size_t p = 0; p < ports_.size(); ++p) {
    if (ports_[p].queues() < workers) {
      any_scheduled = true;
      std::string name =
          ResourceName(absl::StrCat("spinnic_tx", p), config.instance_suffix);
      rte_ring* ring = rte_ring_create(name.c_str(), kSchedulerRingSize,
                                       rte_socket_id(), RING_F_SC_DEQ);
      if (ring == nullptr) {
        return absl::ResourceExhaustedError("cannot create a TX ring");
      }
      tx_rings_.resize(ports_.size(), nullptr);
      tx_rings_[p] = ring;
    }
  }
  // Transports hand frames to the HPU that owns their state through the
  // same rings.
  bool handoffs = false;
  for (const TransportModule* module : transport_list_) {
    handoffs |= module->NeedsInboundRings();
  }
  if (any_scheduled || (handoffs && workers > 1)) {
    if (absl::Status status =
            CreateInboundRings(workers, config.instance_suffix);
        !status.ok()) {
      return status;
    }
  }
  return absl::OkStatus();
}

absl::Status Dataplane::CreateHpus(const DataplaneConfig& config) {
  const size_t workers = config.worker_cores.size();
  std::vector<uint16_t> pair(config.ports.size(), kNoPort);
  for (const auto& [a, b] : config.port_pairs) {
    pair[a] = b;
    pair[b] = a;
  }
  HpuShared shared;
  if (absl::Status status = OpenTransports(config, &shared); !status.ok()) {
    return status;
  }
  shared.stop = &stop_;
  shared.table = &table_;
  shared.regions = &regions_;
  shared.captures = &captures_;
  shared.rcu = rcu_;
  shared.pool = pool_;
  shared.burst = config.burst;
  shared.hpu_count = static_cast<uint32_t>(workers);
  shared.inbound = inbound_rings_.empty() ? nullptr : inbound_rings_.data();
  for (size_t w = 0; w < workers; ++w) {
    std::vector<HpuPort> hpu_ports(ports_.size());
    for (size_t p = 0; p < ports_.size(); ++p) {
      const Port& port = ports_[p];
      HpuPort& hp = hpu_ports[p];
      hp.port_id = port.port_id();
      if (w < port.queues()) {
        hp.rx_queue = static_cast<uint16_t>(w);
        hp.tx_queue = static_cast<uint16_t>(w);
      }
      hp.scheduled = port.queues() < workers;
      if (hp.scheduled) hp.tx_ring = tx_rings_[p];
      hp.pair = pair[p];
      hp.max_frame = port.max_frame();
      hp.pacer = config.ports[p].transport_pacer;
      hp.forward_unchecked = config.ports[p].forward_unchecked;
    }
    std::string ring_name =
        ResourceName(absl::StrCat("spinnic_ev", w), config.instance_suffix);
    rte_ring* ring =
        rte_ring_create_elem(ring_name.c_str(), sizeof(Event), kEventRingSize,
                             rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
    if (ring == nullptr) {
      return absl::ResourceExhaustedError("cannot create an event ring");
    }
    event_rings_.push_back(ring);
    if (rte_rcu_qsbr_thread_register(rcu_, static_cast<unsigned>(w)) != 0) {
      return absl::InternalError("cannot register an HPU with RCU");
    }
    hpus_.push_back(std::make_unique<Hpu>(static_cast<uint32_t>(w), shared,
                                          hpu_ports, ring));
  }
  return absl::OkStatus();
}

absl::Status Dataplane::Start() {
  if (started_) return absl::FailedPreconditionError("already started");
  for (size_t w = 0; w < hpus_.size(); ++w) {
    tsan::Release(hpus_[w].get());
    int rc = rte_eal_remote_launch(HpuMain, hpus_[w].get(), hpu_lcores_[w]);
    if (rc != 0) {
      stop_.store(true);
      rte_eal_mp_wait_lcore();
      return absl::InternalError(
          absl::StrCat("cannot launch HPU ", w, " on lcore ", hpu_lcores_[w]));
    }
  }
  started_ = true;
  running_.store(true, std::memory_order_relaxed);
  return absl::OkStatus();
}

absl::Status Dataplane::CreateInboundRings(size_t workers,
                                           std::string_view suffix) {
  for (size_t w = 0; w < workers; ++w) {
    std::string name = ResourceName(absl::StrCat("spinnic_in", w), suffix);
    rte_ring* ring = rte_ring_create(name.c_str(), kSchedulerRingSize,
                                     rte_socket_id(), RING_F_SC_DEQ);
    if (ring == nullptr) {
      return absl::ResourceExhaustedError("cannot create an inbound ring");
    }
    inbound_rings_.push_back(ring);
  }
  return absl::OkStatus();
}

absl::Status Dataplane::OpenTransports(const DataplaneConfig& config,
                                       HpuShared* shared) {
  TransportEnv env;
  env.config = &config;
  env.ports = ports_;
  env.pool = pool_;
  env.region_tx = region_tx_.get();
  env.regions = &regions_;
  env.rcu = rcu_;
  env.hpu_count = static_cast<uint32_t>(config.worker_cores.size());
  env.inbound = inbound_rings_.empty() ? nullptr : inbound_rings_.data();
  env.running = &running_;
  env.instance_suffix = config.instance_suffix;
  env.find_region = [this](uint64_t id) {
    absl::MutexLock lock(&mu_);
    return FindRegion(id);
  };
  for (TransportModule* module : transport_list_) {
    if (absl::Status status = module->Open(env); !status.ok()) return status;
  }
  shared->transports = transport_list_;
  return absl::OkStatus();
}

void Dataplane::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return;
  }
  running_.store(false, std::memory_order_relaxed);
  stop_.store(true, std::memory_order_relaxed);
  if (started_) {
    rte_eal_mp_wait_lcore();
    for (const auto& hpu : hpus_) tsan::Acquire(hpu.get());
  }
  absl::MutexLock lock(&mu_);
  // The device's own counters and link state die with the port: keep their
  // last values for snapshots taken after the stop.
  final_device_.resize(ports_.size());
  for (size_t p = 0; p < ports_.size(); ++p) ReadDevice(p, &final_device_[p]);
  stopped_ = true;
  for (Port& port : ports_) port.Close();
}

absl::Status Dataplane::CheckBinding(const HandlerConfig& config,
                                     const EctxTable& current) const {
  const MessageBinding& binding = config.binding;
  const auto fail = [&](absl::StatusCode code, absl::string_view what) {
    return absl::Status(code,
                        absl::StrCat("handler '", config.name, "': ", what));
  };
  // The transports that deliver this kind: one of them, as configured,
  // must take the handler.
  const TransportModule* owner = nullptr;
  std::vector<absl::Status> refusals;
  for (const TransportModule* module : transport_list_) {
    const auto kinds = module->BindingKinds();
    if (std::find(kinds.begin(), kinds.end(), binding.kind) == kinds.end()) {
      continue;
    }
    absl::Status status = module->CheckBinding(config);
    if (status.ok()) {
      if (owner == nullptr) owner = module;
    } else {
      refusals.push_back(std::move(status));
    }
  }
  if (owner == nullptr) {
    if (refusals.size() == 1) {
      return fail(refusals[0].code(), refusals[0].message());
    }
    std::string why;
    for (const absl::Status& refusal : refusals) {
      absl::StrAppend(&why, why.empty() ? "" : "; ", refusal.message());
    }
    return fail(absl::StatusCode::kFailedPrecondition,
                refusals.empty()
                    ? absl::StrCat("binding kind ", binding.kind,
                                   " belongs to no transport of this build")
                    : absl::StrCat("takes ",
                                   binding.kind == kBindRegionWrites
                                       ? "writes into a region"
                                       : "transport messages",
                                   ", but no transport that delivers them is "
                                   "on: ",
                                   why));
  }
  if (binding.kind == kBindRegionWrites) {
    absl::StatusOr<std::shared_ptr<const MemoryRegion>> region =
        FindRegion(binding.key);
    if (!region.ok()) {
      return fail(
          region.status().code(),
          absl::StrCat("diad.write_region: ", region.status().message()));
    }
    if (((*region)->access() & kRemoteWrite) == 0) {
      return fail(absl::StatusCode::kFailedPrecondition,
                  absl::StrCat("region ", binding.key,
                               " does not grant remote_write, so no remote "
                               "write can reach it"));
    }
  }
  for (const auto& ectx : current.ectxs()) {
    if (ectx->binding() == binding && ectx->name() != config.name) {
      return fail(
          absl::StatusCode::kAlreadyExists,
          absl::StrCat("handler '", ectx->name(), "' already takes ",
                       binding.kind == kBindRegionWrites
                           ? absl::StrCat("writes into region ", binding.key)
                           : owner->DescribeBinding(binding),
                       "; remove it or use replace"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> Dataplane::InstallEctx(const HandlerConfig& config,
                                                bool replace) {
  absl::MutexLock lock(&mu_);
  const EctxTable& current = *current_table_;
  std::vector<bool> used(Ectx::kMaxEctxs, false);
  for (const auto& ectx : current.ectxs()) {
    // A replaced ECTX keeps its id until the publish below has synchronised.
    used[ectx->id()] = true;
    if (ectx->name() == config.name && !replace) {
      return absl::AlreadyExistsError(absl::StrCat(
          "a handler named '", config.name,
          "' is installed; remove it first or choose another name"));
    }
  }
  std::vector<std::shared_ptr<const MemoryRegion>> regions;
  for (uint64_t region_id : config.bound_regions) {
    absl::StatusOr<std::shared_ptr<const MemoryRegion>> region =
        FindRegion(region_id);
    if (!region.ok()) {
      return absl::Status(
          region.status().code(),
          absl::StrCat("handler '", config.name,
                       "': bound_regions: ", region.status().message()));
    }
    if (((*region)->access() & (kLocalRead | kLocalWrite)) == 0) {
      return absl::PermissionDeniedError(absl::StrCat(
          "handler '", config.name, "': region ", region_id,
          " grants handlers no access (", RegionAccessText((*region)->access()),
          "); register it with local_read and/or local_write to bind it"));
    }
    for (const auto& bound : regions) {
      if (bound->id() == region_id) {
        return absl::InvalidArgumentError(
            absl::StrCat("handler '", config.name, "': region ", region_id,
                         " is listed twice in bound_regions"));
      }
    }
    regions.push_back(*std::move(region));
  }
  if (config.binding.kind != kBindNone) {
    if (absl::Status status = CheckBinding(config, current); !status.ok()) {
      return status;
    }
  }
  uint32_t id = 0;
  while (id < Ectx::kMaxEctxs && used[id]) ++id;
  absl::StatusOr<std::unique_ptr<Ectx>> ectx =
      Ectx::Create(id, config, std::move(regions));
  if (!ectx.ok()) return ectx.status();
  for (const std::string& peer : (*ectx)->instance().Peers()) {
    if (std::none_of(transport_list_.begin(), transport_list_.end(),
                     [&](const TransportModule* module) {
                       return module->HasPeer(peer);
                     })) {
      return absl::InvalidArgumentError(absl::StrCat(
          "handler '", config.name, "': its parameters name peer '", peer,
          "', which is not a DiAD peer of this appliance; add it first "
          "(spinctl peer-add, or diad.peers in the config) or correct the "
          "name"));
    }
  }

  // No HPU writes this id's counters until the publish below (a previous
  // holder of the id is gone since its removal synchronised), so the sums
  // now are the new ECTX's zero.
  ectx_baseline_[id] = SumEctxCounters(id);
  std::vector<std::shared_ptr<const Ectx>> ectxs = current.ectxs();
  std::erase_if(ectxs, [&](const auto& e) { return e->name() == config.name; });
  std::shared_ptr<const Ectx> added(std::move(*ectx));
  // Stable: equal priorities keep install order.
  auto at = std::upper_bound(
      ectxs.begin(), ectxs.end(), added->priority(),
      [](uint32_t priority, const std::shared_ptr<const Ectx>& e) {
        return priority < e->priority();
      });
  ectxs.insert(at, added);
  Publish(std::move(ectxs));
  return id;
}

absl::Status Dataplane::RemoveEctx(absl::string_view name) {
  absl::MutexLock lock(&mu_);
  std::vector<std::shared_ptr<const Ectx>> ectxs = current_table_->ectxs();
  auto it = std::find_if(ectxs.begin(), ectxs.end(),
                         [&](const auto& e) { return e->name() == name; });
  if (it == ectxs.end()) {
    return absl::NotFoundError(
        absl::StrCat("no handler named '", name, "' is installed"));
  }
  ectxs.erase(it);
  Publish(std::move(ectxs));
  return absl::OkStatus();
}

void Dataplane::Publish(std::vector<std::shared_ptr<const Ectx>> ectxs) {
  PublishRcuTable(rcu_, table_, current_table_,
                  std::make_unique<const EctxTable>(std::move(ectxs)));
}

absl::flat_hash_map<uint32_t, std::string> Dataplane::EctxNames() const {
  absl::MutexLock lock(&mu_);
  absl::flat_hash_map<uint32_t, std::string> names;
  for (const auto& ectx : current_table_->ectxs()) {
    names[ectx->id()] = ectx->name();
  }
  return names;
}

}  // namespace spinnic
