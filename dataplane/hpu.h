// An HPU: one polled worker lcore running the packet way of ARCHITECTURE.md
// to completion: rx_burst -> classify -> (match -> sPIN engine) -> TX batch
// -> tx_burst, then report a quiescent state. Everything here is owned by the
// one lcore that runs Run(); the control side only reads counters.
#ifndef SPINNIC_DATAPLANE_HPU_H_
#define SPINNIC_DATAPLANE_HPU_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>

#include "dataplane/capture.h"
#include "dataplane/classifier.h"
#include "dataplane/counter.h"
#include "dataplane/ectx_table.h"
#include "dataplane/region_table.h"
#include "dataplane/spin_engine.h"
#include "dataplane/transport.h"
#include "dataplane/tx_pacer.h"
#include "handlers/api/context.h"

struct rte_mbuf;
struct rte_mempool;
struct rte_ring;
struct rte_rcu_qsbr;

namespace spinnic {

inline constexpr uint16_t kMaxPorts = 32;
inline constexpr uint16_t kNoPort = 0xffff;
inline constexpr uint16_t kHpuMaxBurst = 512;
static_assert(kMaxPorts == kCaptureMaxPorts);
static_assert(kHpuMaxBurst <= TxPacer::kMaxBurst);
// Size of each HPU's inbound ring and of each scheduled port's TX ring.
inline constexpr uint32_t kSchedulerRingSize = 4096;

struct alignas(64) PortCounters {
  Counter rx_packets;
  Counter rx_bytes;
  Counter tx_packets;
  Counter tx_bytes;
  std::array<Counter, static_cast<size_t>(DropReason::kCount)> drops;
  // The transport pacer (tx_pacer.h), when the port has one: frames it took
  // in, handed to the TX queue, refused (its queue full), and freed unsent
  // when the HPU stopped. Waiting now: enqueued - paced - discarded.
  Counter transport_enqueued;
  Counter transport_paced;
  Counter transport_refused;
  Counter transport_discarded;

  void Drop(DropReason reason) { drops[static_cast<size_t>(reason)].Add(); }
};

struct alignas(64) HpuCounters {
  Counter loops;
  Counter busy_loops;  // iterations that received at least one frame
  Counter events;
  Counter event_overflow;
  Counter emitted;
  Counter emit_failed;
};

// An event for the control plane (the software counterpart of a NIC's event
// queue entry). Fixed size so that the ring between HPU and control never
// allocates.
struct alignas(64) Event {
  static constexpr size_t kMaxData = 48;
  uint32_t code;
  uint32_t ectx_id;
  uint16_t hpu;
  uint16_t length;  // bytes valid in data
  uint8_t data[kMaxData];
};
static_assert(sizeof(Event) == 64);

// Per-port facts every HPU needs, fixed before the HPUs start.
//
// A port with fewer queue pairs than HPUs (no RSS, or fewer queues) is
// served by the software packet scheduler: the HPUs that own one of its RX
// queues spread what they receive over all HPUs by flow hash, through each
// HPU's inbound ring; HPUs without a TX queue on it hand their frames to
// the port's TX ring, which HPU 0 (owner of queue 0) drains.
struct HpuPort {
  uint16_t port_id = 0;         // ethdev id
  uint16_t rx_queue = kNoPort;  // this HPU's RX queue, or kNoPort
  uint16_t tx_queue = kNoPort;  // this HPU's TX queue, or kNoPort
  uint16_t pair = kNoPort;      // our index of the paired port
  uint32_t max_frame = 0;       // bytes, without VLAN tags
  bool scheduled = false;       // fewer queues than HPUs: see above
  // PortConfig::forward_unchecked: ForwardBurst reads no frame's bytes.
  bool forward_unchecked = false;
  rte_ring* tx_ring = nullptr;  // MP/SC, when scheduled
  TxPacerConfig pacer;          // the port's transport pacer
};

// What all HPUs share, owned by the Dataplane; read-only while they run.
struct HpuShared {
  std::atomic<bool>* stop = nullptr;
  std::atomic<const EctxTable*>* table = nullptr;
  // Registered memory regions by rkey, for the transports' remote accesses;
  // read under the same RCU discipline as `table`.
  std::atomic<const RegionTable*>* regions = nullptr;
  // The capture sessions (capture.h), null when none runs; read under the
  // same RCU discipline, once per poll.
  std::atomic<const CaptureTable*>* captures = nullptr;
  rte_rcu_qsbr* rcu = nullptr;
  rte_mempool* pool = nullptr;
  uint16_t burst = 32;
  uint32_t hpu_count = 1;
  // Inbound ring of each HPU (MP/SC), for the software scheduler and for
  // transport frames received by an HPU that does not own their state.
  rte_ring* const* inbound = nullptr;
  // The transports (transport.h), in the order their engines are asked for
  // frames; each HPU makes its own engine of each.
  std::span<TransportModule* const> transports;
};

class Hpu final : public ActionSink {
 public:
  // `ports` holds one entry per dataplane port, in our port-index order.
  Hpu(uint32_t index, const HpuShared& shared, std::span<const HpuPort> ports,
      rte_ring* events);
  ~Hpu();
  Hpu(const Hpu&) = delete;
  Hpu& operator=(const Hpu&) = delete;

  // The lcore entry point; returns when *shared.stop is set, after flushing.
  int Run();

  // ActionSink: handler actions.
  bool EmitFrame(std::span<const uint8_t> frame, EmitPort port) override;
  bool RaiseEvent(uint32_t code, std::span<const uint8_t> data) override;
  bool PutToPeer(const PeerPut& put) override;
  bool GetFromPeer(const PeerGet& get) override;

  // For the transports on this HPU: queue a frame for `port` (consumed
  // even when it is dropped, and counted where it is), say which ingress
  // port and ECTX handler actions come from, raise a transport event.
  //
  // A port with a transport pacer (tx_pacer.h) queues the frame there, to
  // leave after the loop's passthrough frames; false when that queue is full
  // and the frame was freed (transport_refused): the transport's recovery
  // sends it again. Without a pacer the frame joins the TX batch: true.
  bool Transmit(uint16_t port, rte_mbuf* packet) {
    TxPacer& pacer = pacers_[port];
    if (!pacer.enabled()) {
      Send(port, packet);
      return true;
    }
    if (!pacer.Enqueue(packet)) [[unlikely]] {
      RefuseTransport(port, packet);
      return false;
    }
    port_counters_[port].transport_enqueued.Add();
    return true;
  }
  // Frames Transmit would still take for `port` this loop (the pacer's free
  // room; unbounded without a pacer): a transport with its own send queue
  // checks before it commits a frame it could not hand over.
  uint32_t TransmitRoom(uint16_t port) const { return pacers_[port].room(); }
  void SetActionOrigin(uint16_t in_port, uint32_t ectx_id) {
    current_in_port_ = in_port;
    current_ectx_ = ectx_id;
  }
  void RaiseTransportEvent(uint32_t code, std::span<const uint8_t> data,
                           uint32_t ectx_id = 0) {
    current_ectx_ = ectx_id;
    RaiseEvent(code, data);
  }
  // The memory region behind bound region `index` of ECTX `ectx_id` in the
  // current table version, or nullptr.
  const MemoryRegion* BoundMemoryRegion(uint32_t ectx_id, uint32_t index) const;

  uint32_t index() const { return index_; }
  // How this HPU reaches port `port` (our index): its queues.
  const HpuPort& port(uint16_t port) const { return ports_[port]; }
  const PortCounters& port_counters(uint16_t port) const {
    return port_counters_[port];
  }
  const HpuCounters& counters() const { return counters_; }
  const EctxCounters& ectx_counters(uint32_t ectx_id) const {
    return ectx_counters_[ectx_id];
  }

  // One receive-process-transmit pass over all ports; exposed for tests that
  // drive an HPU on the calling thread. Returns frames received.
  uint32_t PollOnce();

 private:
  struct TxBatch {
    uint16_t count = 0;
    // The packets' pkt_len summed as they join: the TX counter's bytes
    // without a second pass over the mbufs in Flush.
    uint64_t bytes = 0;
    rte_mbuf* packets[kHpuMaxBurst];
  };

  void ProcessBurst(uint16_t in, rte_mbuf** packets, uint16_t count,
                    const EctxTable& table);
  void ProcessReceived(uint16_t in, rte_mbuf* packet, const EctxTable& table);
  void ProcessReceivedSlowly(uint16_t in, rte_mbuf* packet,
                             const EctxTable& table);
  // Whether `in`'s frames can skip the rules, transports and scheduler:
  // nothing installed for it, no transport on this HPU, no scheduling.
  bool ForwardsUnprocessed(uint16_t in, const EctxTable& table) const;
  // kCheckFrames false: the port forwards unchecked (HpuPort), no frame's
  // bytes are read.
  template <bool kCheckFrames>
  uint64_t ForwardBurst(uint16_t in, rte_mbuf** packets, uint16_t count,
                        const EctxTable& table);
  // The payload-only ECTX that takes every frame of `in` no transport
  // claims (EctxTable::EveryFrameOn), when the port is not scheduled and
  // has a pair; else nullptr.
  const Ectx* HandlesEveryFrame(uint16_t in, const EctxTable& table) const;
  // ProcessReceived for a burst of such a port: the ECTX is known for the
  // whole burst, so no frame is matched.
  uint64_t HandlerBurst(uint16_t in, rte_mbuf** packets, uint16_t count,
                        const EctxTable& table, const Ectx& ectx);
  // Hands the frame to the transport it is addressed to (the only place
  // the HPU looks at transports per frame); false if none claims it.
  bool DeliverToTransport(rte_mbuf* packet, const ParsedFrame& frame,
                          uint16_t in, const EctxTable& table) {
    if (transport_count_ == 0 || !MayBeForTransport(frame)) return false;
    for (uint32_t t = 0; t < transport_count_; ++t) {
      TransportEngine& transport = *transports_[t];
      if (transport.ForUs(frame)) {
        transport.Receive(packet, frame, in, table);
        return true;
      }
    }
    return false;
  }
  // Whether any transport might claim the frame: ARP, ICMPv6, or IP to one
  // of their Addresses(). Passthrough frames skip the transports on this
  // data-only check instead of a virtual ForUs per transport
  // (bench/micro/hpu_loop_bench).
  bool MayBeForTransport(const ParsedFrame& frame) const {
    if (transports_take_any_) return true;
    const PacketLayers& l = frame.layers;
    if (l.is_ipv4 || l.is_ipv6) {
      if (l.is_ipv6 && l.ip_proto == kIpProtoIcmpv6) return true;
      for (uint32_t a = 0; a < transport_address_count_; ++a) {
        if (frame.dst_addr == transport_addresses_[a]) return true;
      }
      return false;
    }
    return l.ethertype == kEthertypeArp;
  }
  // Classify, match, run handlers, queue for TX: one frame's whole way.
  void ProcessPacket(uint16_t in, rte_mbuf* packet, const ParsedFrame& frame,
                     const EctxTable& table);
  // ProcessPacket's part for a frame `ectx` matched: run its handlers, then
  // forward (to `pair`), reply, drop or consume as they say.
  void RunMatched(uint16_t in, uint16_t pair, rte_mbuf* packet,
                  const ParsedFrame& frame, const Ectx& ectx);
  // RunMatched for the common case, inlined into the burst loop: a
  // one-segment frame and a payload-only kind (Ectx::payload_only). The
  // rest goes to RunMatched.
  void RunMatchedPayloadOnly(uint16_t in, uint16_t pair, rte_mbuf* packet,
                             const ParsedFrame& frame, const Ectx& ectx);
  // Where a handler's `disposition` sends `packet`; `invalid`: the drop is
  // counted as kHandlerInvalid.
  void FinishMatched(uint16_t in, uint16_t pair, rte_mbuf* packet,
                     Disposition disposition, bool invalid);
  // The HPU a frame of a scheduled port belongs to (flow hash).
  uint32_t ScheduleTarget(const ParsedFrame& frame) const;
  uint32_t PollInbound(const EctxTable& table);
  void DrainTxRings();
  // Queues `packet` for `out`'s TX batch. Inline: every forwarded frame
  // comes this way.
  void Send(uint16_t out, rte_mbuf* packet) {
    if (ports_[out].tx_queue == kNoPort) [[unlikely]] {
      SendThroughRing(out, packet);
      return;
    }
    TxBatch& batch = tx_[out];
    batch.bytes += packet->pkt_len;
    batch.packets[batch.count++] = packet;
    if (batch.count == shared_.burst) [[unlikely]]
      Flush(out);
  }
  // No TX queue of our own on `out`: HPU 0 transmits for us.
  void SendThroughRing(uint16_t out, rte_mbuf* packet);
  void Flush(uint16_t out);
  // Hands `out`'s paced transport frames to its TX queue (or to its TX ring
  // when this HPU has no queue there): after Flush, once per loop.
  void DrainPacer(uint16_t out);
  void FlushAll();
  // Frees what the pacers still hold (the HPU stops), counted discarded.
  void ReleasePacers();
  // A transport frame the full pacer queue refused: freed, counted.
  void RefuseTransport(uint16_t port, rte_mbuf* packet);
  void DropPacket(uint16_t port, rte_mbuf* packet, DropReason reason);
  // Offers `packets` to the capture session on `port` and `stage`, if one
  // runs. Called only when captures_ is set (capture.h).
  void Capture(uint16_t port, CaptureStage stage, rte_mbuf* const* packets,
               uint32_t count, DropReason reason = DropReason::kCount);

  uint32_t index_;
  HpuShared shared_;
  uint16_t port_count_;
  std::array<HpuPort, kMaxPorts> ports_;
  rte_ring* events_;
  SpinEngine engine_;
  // The engines of the transports that are on, in shared_.transports order.
  std::array<std::unique_ptr<TransportEngine>, kMaxTransports> transports_;
  uint32_t transport_count_ = 0;
  // Test hook (SPINNIC_TEST_STALL_HPU, hpu.cc): when nonzero, the TSC at
  // which this HPU stops making progress, and for how many cycles.
  uint64_t stall_at_tsc_ = 0;
  uint64_t stall_cycles_ = 0;
  void ArmStallHook();
  void StallIfDue();
  // The union of their Addresses(); transports_take_any_ when one of them
  // claims frames by more than address, or there are too many addresses.
  static constexpr uint32_t kMaxTransportAddresses = 16;
  static constexpr uint8_t kIpProtoIcmpv6 = 58;
  static constexpr uint16_t kEthertypeArp = 0x0806;
  std::array<IpAddress, kMaxTransportAddresses> transport_addresses_{};
  uint32_t transport_address_count_ = 0;
  bool transports_take_any_ = false;
  // The capture table PollOnce loaded (null: no capture runs, and the
  // stages pay this one test); reset when the poll ends.
  const CaptureTable* captures_ = nullptr;
  // Set around handler invocations so that actions know their origin.
  uint16_t current_in_port_ = kNoPort;
  uint32_t current_ectx_ = 0;

  HpuCounters counters_;
  std::array<PortCounters, kMaxPorts> port_counters_;
  std::array<TxBatch, kMaxPorts> tx_;
  std::array<TxPacer, kMaxPorts> pacers_;
  std::array<EctxCounters, Ectx::kMaxEctxs> ectx_counters_;
};

}  // namespace spinnic

#endif  // SPINNIC_DATAPLANE_HPU_H_
