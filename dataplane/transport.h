// The seam between the HPU loop and the transports it terminates (DiAD,
// RoCEv2, and whatever comes next). A transport is two halves:
//
//   TransportModule  one per Dataplane, on the control thread: sizes what it
//                    needs from the mbuf pool, opens its rings and tables
//                    once the ports are up, makes one engine per HPU,
//                    reports its counters, closes after the HPUs are gone.
//   TransportEngine  one per HPU, on that HPU's lcore only: claims the
//                    frames addressed to it, receives them, polls its timers
//                    and command rings once per loop, shuts down last.
//
// The HPU keeps its engines in a small array and asks them in registration
// order, in one place (Hpu::DeliverToTransport) for both the RX bursts and
// the inbound ring. A new transport is its own folders (dataplane/<name>/,
// control/<name>/) plus one line in transport_registry.cc; tests and
// experiments may add one at run time with RegisterTransport before
// Dataplane::Create (tests/dataplane/toy_transport_test.cc does).
//
// Contracts:
// - Everything here is called on the control thread except the engine's
//   methods, which only the owning HPU's lcore calls.
// - ForUs is asked for every frame that reaches an HPU (after the
//   classifier, before passthrough): keep it a few compares. Receive always
//   consumes the mbuf (delivered, answered, handed to another HPU through
//   the inbound rings, or dropped and counted).
// - Engines are destroyed before their module's Close; a module may keep
//   plain pointers to its engines for counters until then.
#ifndef SPINNIC_DATAPLANE_TRANSPORT_H_
#define SPINNIC_DATAPLANE_TRANSPORT_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "dataplane/binding.h"
#include "dataplane/classifier.h"

struct rte_mbuf;
struct rte_mempool;
struct rte_rcu_qsbr;
struct rte_ring;
struct rte_tel_data;

namespace spinnic {

class EctxTable;
class MemoryRegion;
class Hpu;
class Port;
class RegionTable;
class RegionTx;
class SpinEngine;
struct DataplaneConfig;
struct HandlerConfig;
struct RegionConfig;
struct PeerGet;
struct PeerPut;
struct StatsSnapshot;

// Most transports one dataplane runs at once (the HPU's array).
inline constexpr uint32_t kMaxTransports = 4;
// Longest DataplaneConfig::instance_suffix: the longest base name with it
// must fit a mempool name (RTE_MEMPOOL_NAMESIZE, 25 characters, since
// rte_pktmbuf_pool_create also names a ring and a memzone after the pool)
// and a ring name (RTE_RING_NAMESIZE); dataplane.cc checks both.
inline constexpr size_t kMaxInstanceSuffix = 8;

// The process-wide name of a DPDK object a Dataplane or one of its
// transports creates: `base` ("spinnic_pkts", "spinnic_cmd0") followed by
// the dataplane's instance suffix. Every such name is made here, so that two
// Dataplanes with different suffixes never collide.
inline std::string ResourceName(std::string_view base,
                                std::string_view suffix) {
  std::string name(base);
  name.append(suffix);
  return name;
}

// An IP address as the classifier reports it (ParsedFrame::dst_addr).
using IpAddress = std::array<uint8_t, 16>;

class TransportEngine {
 public:
  virtual ~TransportEngine() = default;

  // Whether the classified frame is addressed to this transport.
  virtual bool ForUs(const ParsedFrame& frame) const = 0;
  // Takes a frame ForUs() accepted; always consumes the mbuf. `table` is
  // the ECTX table version of this poll (handlers bound to the transport's
  // messages run from it, in place).
  virtual void Receive(rte_mbuf* packet, const ParsedFrame& frame,
                       uint16_t in_port, const EctxTable& table) = 0;
  // Timers, queued sends, acknowledgements, commands from the control side.
  // Once per HPU loop iteration, after the receive bursts.
  virtual void Poll(const EctxTable& table) = 0;
  // Releases every held mbuf and pinned region and fails what is pending.
  // The HPU calls it once, when it stops, before its last TX flush.
  virtual void Shutdown() = 0;

  // The destination addresses (16-byte form: IPv4 mapped as ::ffff:a.b.c.d,
  // as ParsedFrame has them) it claims IP frames for, so that the HPU can
  // pass every other IP frame by without asking ForUs. nullopt (the
  // default): it may claim any frame, and the HPU asks it about each one.
  // ARP and ICMPv6 frames are always offered (neighbour discovery).
  virtual std::optional<std::span<const IpAddress>> Addresses() const {
    return std::nullopt;
  }

  // Handler actions (handlers/api/context.h) a transport may serve: start
  // the put or get now and return true, or return false (not this
  // transport's, or no room: the handler sees the failure).
  virtual bool HandlerPut(const PeerPut& /*put*/, uint32_t /*ectx_id*/) {
    return false;
  }
  virtual bool HandlerGet(const PeerGet& /*get*/, uint32_t /*ectx_id*/) {
    return false;
  }
};

// What the Dataplane lends a module when it opens (valid for its lifetime).
struct TransportEnv {
  const DataplaneConfig* config = nullptr;
  std::span<const Port> ports;
  rte_mempool* pool = nullptr;
  // Zero-copy payloads out of region memory (region_tx.h).
  RegionTx* region_tx = nullptr;
  // The published region table, for the engines' remote accesses.
  std::atomic<const RegionTable*>* regions = nullptr;
  // Waits out every HPU's use of an old table version (rcu_table.h).
  rte_rcu_qsbr* rcu = nullptr;
  uint32_t hpu_count = 1;
  // Per HPU, MP/SC: frames handed to the HPU that owns their state. Set
  // when any module NeedsInboundRings (or the software scheduler runs).
  rte_ring* const* inbound = nullptr;
  // True while the HPUs run (launched, not stopping): operations submitted
  // from the control side are only served then.
  const std::atomic<bool>* running = nullptr;
  // DataplaneConfig::instance_suffix: name DPDK objects with ResourceName.
  std::string instance_suffix;
  // The registered region with that id, or NOT_FOUND saying so (the
  // Dataplane's region table, looked up under its lock), for operations the
  // control side submits.
  std::function<absl::StatusOr<std::shared_ptr<const MemoryRegion>>(uint64_t)>
      find_region;
};

// A DPDK telemetry command ("/spinnic/peers"): `handler` answers it with
// the command's parameter (or nullptr) as rte_telemetry callbacks do.
struct TelemetryCommand {
  std::string name;
  std::string help;
  std::function<int(const char* params, rte_tel_data* data)> handler;
};

class TransportModule {
 public:
  virtual ~TransportModule() = default;

  // Lower case, as in counters, logs and errors ("diad", "roce").
  virtual std::string_view name() const = 0;

  // Asked before the mbuf pool exists: mbufs it holds beyond the ports'
  // rings (retransmission buffers), and the smallest data room one mbuf
  // must have for the frames it builds (0: no floor).
  virtual uint32_t ExtraMbufs() const { return 0; }
  virtual uint32_t MinDataRoom(uint32_t /*max_port_mtu*/) const { return 0; }
  // Whether its engines hand frames to other HPUs through env.inbound.
  virtual bool NeedsInboundRings() const { return false; }

  // After the ports and the pool are up, before any HPU exists. An error
  // names the config field to fix; the Dataplane is not created then.
  virtual absl::Status Open(const TransportEnv& env) = 0;
  // HPU `hpu_index`'s engine, or nullptr when the config leaves this
  // transport off. Called once per HPU, in HPU order, after Open.
  virtual std::unique_ptr<TransportEngine> CreateEngine(uint32_t hpu_index,
                                                        Hpu& hpu,
                                                        SpinEngine& spin) = 0;
  // The binding kinds (binding.h) whose messages it delivers to ECTXs.
  virtual std::span<const BindingKind> BindingKinds() const { return {}; }
  // A handler bound to one of them: OK when this transport, as configured,
  // delivers such messages; else an error naming what to set or change
  // (the Dataplane adds the handler's name). Regions, and that no other
  // handler takes the same messages, are the Dataplane's to check.
  virtual absl::Status CheckBinding(const HandlerConfig& /*handler*/) const {
    return absl::OkStatus();
  }
  // Whether `name` is one of its peers (DiAD): a handler whose parameters
  // name a peer (bcast's tree) installs only when some transport knows it.
  virtual bool HasPeer(std::string_view /*name*/) const { return false; }
  // What a binding of one of its kinds takes, for messages: "stream 7".
  virtual std::string DescribeBinding(const MessageBinding& binding) const {
    return absl::StrCat("messages of kind ", binding.kind, " key ",
                        binding.key);
  }

  // A region about to be registered: OK, or what this transport needs of
  // it that it lacks (INVALID_ARGUMENT saying what to change).
  virtual absl::Status CheckRegion(const RegionConfig& /*region*/) const {
    return absl::OkStatus();
  }

  // Adds its counters to a stats snapshot (any thread; engines' counters
  // are single-writer and read relaxed).
  virtual void Snapshot(StatsSnapshot& /*snapshot*/) const {}
  // DPDK telemetry commands of its own (telemetry.h registers them beside
  // the dataplane's; its counters are served already, by name).
  virtual std::vector<TelemetryCommand> TelemetryCommands() const { return {}; }
  // After every engine is destroyed: frees its rings and pools.
  virtual void Close() {}
};

// Makes a transport's module for a config (always: a transport the config
// leaves off makes no engines), or fails naming the field to fix.
using TransportMaker = absl::StatusOr<std::unique_ptr<TransportModule>> (*)(
    const DataplaneConfig& config);

// The transports every Dataplane makes, built-in ones first (in the order
// their HPU engines are asked ForUs), then those added by RegisterTransport.
std::span<const TransportMaker> RegisteredTransports();
// Adds a transport for Dataplanes created from now on (once per process,
// before Dataplane::Create, from one thread: tests and experiments).
void RegisterTransport(TransportMaker maker);

}  // namespace spinnic

#endif  // SPINNIC_DATAPLANE_TRANSPORT_H_
