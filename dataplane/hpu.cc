#include "dataplane/hpu.h"

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_pause.h>
#include <rte_prefetch.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "dataplane/common/clock.h"
#include "dataplane/common/tsan.h"
#include "dataplane/contiguous.h"

namespace spinnic {
namespace {

// tx_burst attempts before the rest of a batch is dropped as kTxFull. The far
// side of a virtual port drains in bursts; a few retries ride that out
// without turning a congested peer into a stalled HPU.
constexpr int kTxRetries = 64;

}  // namespace

Hpu::Hpu(uint32_t index, const HpuShared& shared,
         std::span<const HpuPort> ports, rte_ring* events)
    : index_(index),
      shared_(shared),
      port_count_(
          static_cast<uint16_t>(std::min<size_t>(ports.size(), kMaxPorts))),
      events_(events),
      engine_(index, this, ectx_counters_) {
  std::copy_n(ports.begin(), port_count_, ports_.begin());
  shared_.burst = std::clamp<uint16_t>(shared_.burst, 1, kHpuMaxBurst);
  for (uint16_t p = 0; p < port_count_; ++p) {
    pacers_[p].Configure(ports_[p].pacer, shared_.burst);
  }
  for (TransportModule* module : shared_.transports) {
    std::unique_ptr<TransportEngine> transport =
        module->CreateEngine(index_, *this, engine_);
    if (transport == nullptr) continue;  // off in this config
    if (transport_count_ == kMaxTransports) {
      // Dataplane::Create never registers more modules than this.
      continue;
    }
    const std::optional<std::span<const IpAddress>> addresses =
        transport->Addresses();
    if (!addresses.has_value() ||
        transport_address_count_ + addresses->size() > kMaxTransportAddresses) {
      transports_take_any_ = true;
    } else {
      for (const IpAddress& address : *addresses) {
        transport_addresses_[transport_address_count_++] = address;
      }
    }
    transports_[transport_count_++] = std::move(transport);
  }
}

// An HPU polled by hand (tests) never ran Run's last flush: what its
// pacers hold goes back to the pool here, before the Dataplane frees it.
Hpu::~Hpu() { ReleasePacers(); }

// SPINNIC_TEST_STALL_HPU=INDEX:AFTER_MS:FOR_MS makes HPU INDEX stop
// polling AFTER_MS after it starts, for FOR_MS (0: until it stops), so that
// tests see health and the systemd watchdog react to a stalled HPU
// (docs/metrics.md). Read once here; the loop pays one predictable branch.
void Hpu::ArmStallHook() {
  const char* spec = std::getenv("SPINNIC_TEST_STALL_HPU");
  if (spec == nullptr) return;
  unsigned index = 0;
  unsigned long after_ms = 0, for_ms = 0;
  if (std::sscanf(spec, "%u:%lu:%lu", &index, &after_ms, &for_ms) != 3 ||
      index != index_) {
    return;
  }
  const uint64_t hz = rte_get_tsc_hz();
  stall_at_tsc_ = rte_rdtsc() + after_ms * hz / 1000;
  stall_cycles_ = for_ms == 0 ? UINT64_MAX : for_ms * hz / 1000;
}

void Hpu::StallIfDue() {
  const uint64_t now = rte_rdtsc();
  if (now < stall_at_tsc_) return;
  const uint64_t until =
      stall_cycles_ == UINT64_MAX ? UINT64_MAX : now + stall_cycles_;
  // No loop, no quiescent state: as a handler stuck in a loop would be.
  while (rte_rdtsc() < until &&
         !shared_.stop->load(std::memory_order_relaxed)) {
    rte_pause();
  }
  stall_at_tsc_ = 0;
}

int Hpu::Run() {
  rte_rcu_qsbr_thread_online(shared_.rcu, index_);
  ArmStallHook();
  while (!shared_.stop->load(std::memory_order_relaxed)) {
    if (stall_at_tsc_ != 0) [[unlikely]]
      StallIfDue();
    PollOnce();
    // Everything read from the table version is out of use now.
    rte_rcu_qsbr_quiescent(shared_.rcu, index_);
  }
  for (uint32_t t = 0; t < transport_count_; ++t) transports_[t]->Shutdown();
  FlushAll();
  ReleasePacers();
  rte_rcu_qsbr_thread_offline(shared_.rcu, index_);
  return 0;
}

uint32_t Hpu::PollOnce() {
  const EctxTable* table = shared_.table->load(std::memory_order_acquire);
  captures_ = shared_.captures->load(std::memory_order_acquire);
  rte_mbuf* packets[kHpuMaxBurst];
  uint32_t received = 0;
  for (uint16_t in = 0; in < port_count_; ++in) {
    const HpuPort& port = ports_[in];
    if (port.rx_queue == kNoPort) continue;
    uint16_t count =
        rte_eth_rx_burst(port.port_id, port.rx_queue, packets, shared_.burst);
    if (count == 0) continue;
    tsan::AcquireEach(packets, count);  // the PMD's hand-over
    received += count;
    if (captures_ != nullptr) [[unlikely]]
      Capture(in, CaptureStage::kRx, packets, count);
    ProcessBurst(in, packets, count, *table);
  }
  if (shared_.inbound != nullptr) {
    received += PollInbound(*table);
    if (index_ == 0) DrainTxRings();
  }
  for (uint32_t t = 0; t < transport_count_; ++t) transports_[t]->Poll(*table);
  FlushAll();
  counters_.loops.Add();
  if (received != 0) counters_.busy_loops.Add();
  // Past the quiescent state that follows, the table may be freed.
  captures_ = nullptr;
  return received;
}

// Inline into both callers: a passthrough frame that no rule matches pays
// no call on its way to the TX batch.
[[gnu::always_inline]] inline void Hpu::ProcessPacket(uint16_t in,
                                                      rte_mbuf* packet,
                                                      const ParsedFrame& frame,
                                                      const EctxTable& table) {
  const uint16_t pair = ports_[in].pair;
  if (pair == kNoPort) [[unlikely]] {
    DropPacket(in, packet, DropReason::kNoRoute);
    return;
  }
  uint32_t tags = frame.layers.vlan_tags;
  if (packet->pkt_len > ports_[pair].max_frame + 4 * tags) [[unlikely]] {
    DropPacket(in, packet, DropReason::kOversize);
    return;
  }
  const Ectx* ectx = table.Match(frame, in, packet);
  if (ectx != nullptr) {
    RunMatchedPayloadOnly(in, pair, packet, frame, *ectx);
    return;
  }
  Send(pair, packet);
}

[[gnu::always_inline]] inline void Hpu::RunMatchedPayloadOnly(
    uint16_t in, uint16_t pair, rte_mbuf* packet, const ParsedFrame& frame,
    const Ectx& ectx) {
  if (packet->nb_segs != 1 || !ectx.payload_only()) [[unlikely]] {
    RunMatched(in, pair, packet, frame, ectx);
    return;
  }
  PacketView view(rte_pktmbuf_mtod(packet, uint8_t*), packet->data_len,
                  frame.layers, in);
  current_in_port_ = in;
  current_ectx_ = ectx.id();
  MessageState message;
  engine_.RunPayloadOnly(ectx, message, view);
  current_in_port_ = kNoPort;
  if (view.GetDisposition() == Disposition::kForward) [[likely]] {
    Send(pair, packet);
    return;
  }
  FinishMatched(in, pair, packet, view.GetDisposition(), message.invalid);
}

void Hpu::RunMatched(uint16_t in, uint16_t pair, rte_mbuf* packet,
                     const ParsedFrame& frame, const Ectx& ectx) {
  if (!MakeContiguous(&packet, shared_.pool)) {
    DropPacket(in, packet, DropReason::kMultiSegment);
    return;
  }
  // A message of one packet: MessageInfo says passthrough, offset 0, the
  // payload's length (the view's default).
  PacketView view(rte_pktmbuf_mtod(packet, uint8_t*), packet->data_len,
                  frame.layers, in);
  current_in_port_ = in;
  current_ectx_ = ectx.id();
  const bool invalid = engine_.RunSinglePacketMessage(ectx, view).invalid;
  current_in_port_ = kNoPort;
  FinishMatched(in, pair, packet, view.GetDisposition(), invalid);
}

void Hpu::FinishMatched(uint16_t in, uint16_t pair, rte_mbuf* packet,
                        Disposition disposition, bool invalid) {
  uint16_t out = pair;
  switch (disposition) {
    case Disposition::kForward:
      break;
    case Disposition::kReply:
      out = in;
      break;
    case Disposition::kDrop:
      DropPacket(
          in, packet,
          invalid ? DropReason::kHandlerInvalid : DropReason::kHandlerDrop);
      return;
    case Disposition::kConsume:
      rte_pktmbuf_free(packet);
      return;
  }
  Send(out, packet);
}

// One frame's whole way from its RX burst: parse, transports, the software
// scheduler, then rules and handlers (ProcessPacket).
[[gnu::always_inline]] inline void Hpu::ProcessReceived(
    uint16_t in, rte_mbuf* packet, const EctxTable& table) {
  ParsedFrame frame;
  ParseFrame(rte_pktmbuf_mtod(packet, const uint8_t*), packet->data_len,
             &frame);
  if (frame.frame_class == FrameClass::kDrop) [[unlikely]] {
    if (packet->nb_segs == 1) {
      DropPacket(in, packet, frame.drop_reason);
      return;
    }
    // A chain (scattered RX; a zero-copy frame from another dataplane on
    // an in-memory port) looks truncated in its first segment: parse it
    // whole where it fits one mbuf. One that does not passes unchanged
    // (there is no handler that could see it).
    if (MakeContiguous(&packet, shared_.pool)) {
      ParseFrame(rte_pktmbuf_mtod(packet, const uint8_t*), packet->data_len,
                 &frame);
      if (frame.frame_class == FrameClass::kDrop) {
        DropPacket(in, packet, frame.drop_reason);
        return;
      }
    } else {
      frame = ParsedFrame();
    }
  }
  if (DeliverToTransport(packet, frame, in, table)) return;
  if (ports_[in].scheduled) [[unlikely]] {
    uint32_t target = ScheduleTarget(frame);
    if (target != index_) {
      // The frame's way continues on its flow's HPU, which parses it
      // again: cheaper than carrying the parse through the ring.
      packet->port = in;
      if (rte_ring_mp_enqueue(shared_.inbound[target], packet) != 0) {
        DropPacket(in, packet, DropReason::kSchedulerFull);
      }
      return;
    }
  }
  ProcessPacket(in, packet, frame, table);
}

// ProcessReceived's out-of-line copy, for ForwardBurst's rare frames.
void Hpu::ProcessReceivedSlowly(uint16_t in, rte_mbuf* packet,
                                const EctxTable& table) {
  ProcessReceived(in, packet, table);
}

bool Hpu::ForwardsUnprocessed(uint16_t in, const EctxTable& table) const {
  const HpuPort& port = ports_[in];
  return transport_count_ == 0 && !port.scheduled && port.pair != kNoPort &&
         !table.MayMatch(in);
}

// Frames no rule, transport or scheduler can want go to the paired port
// with the checks ProcessReceived would make and nothing else: the
// classifier's verdict without its layers (PassthroughVerdict), and the
// frames that need more (chains, ones beyond the pair's frame size, whose
// VLAN allowance takes the parse) take ProcessReceived's way. Without
// kCheckFrames (the port's forward_unchecked) the verdict goes too: no byte
// of a frame is read. Returns the burst's bytes.
template <bool kCheckFrames>
uint64_t Hpu::ForwardBurst(uint16_t in, rte_mbuf** packets, uint16_t count,
                           const EctxTable& table) {
  const uint16_t pair = ports_[in].pair;
  const uint32_t max_frame = ports_[pair].max_frame;
  // Send's work with what it looks up per frame read once: the TX batch
  // (or the ring, without a TX queue of ours) and the burst that flushes it.
  // The batch's count and bytes live in registers through the loop: kept in
  // the batch, every frame waited for the previous one's store to reach
  // the next load (about 5 cycles per frame, perf annotate).
  const bool to_batch = ports_[pair].tx_queue != kNoPort;
  const uint16_t burst = shared_.burst;
  TxBatch& batch = tx_[pair];
  uint16_t queued = batch.count;
  uint64_t queued_bytes = batch.bytes;
  uint64_t bytes = 0;
  for (uint16_t i = 0; i < count; ++i) {
    rte_mbuf* packet = packets[i];
    const uint32_t length = packet->pkt_len;
    bytes += length;
    if (packet->nb_segs != 1 || length > max_frame) [[unlikely]] {
      batch.count = queued;
      batch.bytes = queued_bytes;
      ProcessReceivedSlowly(in, packet, table);
      queued = batch.count;
      queued_bytes = batch.bytes;
      continue;
    }
    if constexpr (kCheckFrames) {
      // One segment: data_len is pkt_len.
      const DropReason verdict =
          PassthroughVerdict(rte_pktmbuf_mtod(packet, const uint8_t*), length);
      if (verdict != DropReason::kCount) [[unlikely]] {
        DropPacket(in, packet, verdict);
        continue;
      }
    }
    if (!to_batch) [[unlikely]] {
      SendThroughRing(pair, packet);
      continue;
    }
    batch.packets[queued++] = packet;
    queued_bytes += length;
    if (queued == burst) [[unlikely]] {
      batch.count = queued;
      batch.bytes = queued_bytes;
      Flush(pair);
      queued = 0;
      queued_bytes = 0;
    }
  }
  batch.count = queued;
  batch.bytes = queued_bytes;
  return bytes;
}

const Ectx* Hpu::HandlesEveryFrame(uint16_t in, const EctxTable& table) const {
  const HpuPort& port = ports_[in];
  if (port.scheduled || port.pair == kNoPort) return nullptr;
  const Ectx* ectx = table.EveryFrameOn(in);
  return ectx != nullptr && ectx->payload_only() ? ectx : nullptr;
}

// ProcessReceived and ProcessPacket for a port one payload-only ECTX takes
// whole: each frame is parsed (the handler sees its layers) and offered to
// the transports, and the rest runs the handler without a match. A loop of
// its own, not the ECTX passed down the general one: that cost 2.4 cycles
// more per frame (BM_NullHandler 35.0 against 32.6, alternating builds).
uint64_t Hpu::HandlerBurst(uint16_t in, rte_mbuf** packets, uint16_t count,
                           const EctxTable& table, const Ectx& ectx) {
  const uint16_t pair = ports_[in].pair;
  const uint32_t max_frame = ports_[pair].max_frame;
  uint64_t bytes = 0;
  for (uint16_t i = 0; i < count; ++i) {
    rte_mbuf* packet = packets[i];
    if (i + 1 < count) rte_prefetch0(rte_pktmbuf_mtod(packets[i + 1], void*));
    bytes += packet->pkt_len;
    if (packet->nb_segs != 1) [[unlikely]] {
      ProcessReceivedSlowly(in, packet, table);
      continue;
    }
    ParsedFrame frame;
    ParseFrame(rte_pktmbuf_mtod(packet, const uint8_t*), packet->data_len,
               &frame);
    if (frame.frame_class == FrameClass::kDrop) [[unlikely]] {
      DropPacket(in, packet, frame.drop_reason);
      continue;
    }
    if (DeliverToTransport(packet, frame, in, table)) continue;
    if (packet->pkt_len > max_frame + 4 * frame.layers.vlan_tags) [[unlikely]] {
      DropPacket(in, packet, DropReason::kOversize);
      continue;
    }
    RunMatchedPayloadOnly(in, pair, packet, frame, ectx);
  }
  return bytes;
}

void Hpu::ProcessBurst(uint16_t in, rte_mbuf** packets, uint16_t count,
                       const EctxTable& table) {
  PortCounters& in_counters = port_counters_[in];
  uint64_t rx_bytes = 0;
  if (ForwardsUnprocessed(in, table)) {
    rx_bytes = ports_[in].forward_unchecked
                   ? ForwardBurst<false>(in, packets, count, table)
                   : ForwardBurst<true>(in, packets, count, table);
  } else if (const Ectx* every = HandlesEveryFrame(in, table)) {
    rx_bytes = HandlerBurst(in, packets, count, table, *every);
  } else {
    for (uint16_t i = 0; i < count; ++i) {
      rte_mbuf* packet = packets[i];
      if (i + 1 < count) {
        rte_prefetch0(rte_pktmbuf_mtod(packets[i + 1], void*));
      }
      rx_bytes += packet->pkt_len;
      ProcessReceived(in, packet, table);
    }
  }
  in_counters.rx_packets.Add(count);
  in_counters.rx_bytes.Add(rx_bytes);
}

uint32_t Hpu::ScheduleTarget(const ParsedFrame& frame) const {
  if (shared_.hpu_count <= 1) return 0;
  const PacketLayers& l = frame.layers;
  if (!l.is_ipv4 && !l.is_ipv6) return index_;
  // Symmetric in source and destination so that both directions of a flow
  // meet on one HPU, as the transports' per-flow state will need.
  uint32_t hash = l.ip_proto;
  for (size_t i = 0; i < frame.src_addr.size(); ++i) {
    hash += static_cast<uint32_t>(frame.src_addr[i] ^ frame.dst_addr[i]) *
            (2654435761u + static_cast<uint32_t>(i));
    hash ^= hash >> 15;
  }
  hash += static_cast<uint32_t>(frame.src_port ^ frame.dst_port) * 40503u;
  hash ^= hash >> 13;
  hash *= 0x85ebca6bu;
  hash ^= hash >> 16;
  return hash % shared_.hpu_count;
}

uint32_t Hpu::PollInbound(const EctxTable& table) {
  rte_mbuf* packets[kHpuMaxBurst];
  unsigned count = rte_ring_sc_dequeue_burst(shared_.inbound[index_],
                                             reinterpret_cast<void**>(packets),
                                             shared_.burst, nullptr);
  for (unsigned i = 0; i < count; ++i) {
    rte_mbuf* packet = packets[i];
    ParsedFrame frame;
    ParseFrame(rte_pktmbuf_mtod(packet, const uint8_t*), packet->data_len,
               &frame);
    if (frame.frame_class == FrameClass::kDrop) frame = ParsedFrame();
    if (DeliverToTransport(packet, frame, packet->port, table)) continue;
    ProcessPacket(packet->port, packet, frame, table);
  }
  return count;
}

void Hpu::DrainTxRings() {
  for (uint16_t out = 0; out < port_count_; ++out) {
    rte_ring* ring = ports_[out].tx_ring;
    if (ring == nullptr) continue;
    TxBatch& batch = tx_[out];
    unsigned room = shared_.burst - batch.count;
    const unsigned taken = rte_ring_sc_dequeue_burst(
        ring, reinterpret_cast<void**>(batch.packets + batch.count), room,
        nullptr);
    for (unsigned i = 0; i < taken; ++i) {
      batch.bytes += batch.packets[batch.count + i]->pkt_len;
    }
    batch.count += static_cast<uint16_t>(taken);
  }
}

void Hpu::DropPacket(uint16_t port, rte_mbuf* packet, DropReason reason) {
  if (captures_ != nullptr) [[unlikely]]
    Capture(port, CaptureStage::kDrop, &packet, 1, reason);
  port_counters_[port].Drop(reason);
  rte_pktmbuf_free(packet);
}

void Hpu::Capture(uint16_t port, CaptureStage stage, rte_mbuf* const* packets,
                  uint32_t count, DropReason reason) {
  CaptureSession* session = captures_->Find(port, stage);
  if (session == nullptr) return;
  session->Offer(packets, count, clock::NowNanos(), reason);
}

void Hpu::SendThroughRing(uint16_t out, rte_mbuf* packet) {
  if (rte_ring_mp_enqueue(ports_[out].tx_ring, packet) != 0) {
    DropPacket(out, packet, DropReason::kTxFull);
  }
}

void Hpu::Flush(uint16_t out) {
  TxBatch& batch = tx_[out];
  if (batch.count == 0) return;  // always so for ports without our TX queue
  const HpuPort& port = ports_[out];
  uint64_t bytes = batch.bytes;
  if (captures_ != nullptr) [[unlikely]]
    Capture(out, CaptureStage::kTx, batch.packets, batch.count);
  tsan::ReleaseEach(batch.packets, batch.count);
  uint16_t sent =
      rte_eth_tx_burst(port.port_id, port.tx_queue, batch.packets, batch.count);
  const uint16_t first_sent = sent;
  for (int attempt = 1; attempt < kTxRetries && sent < batch.count; ++attempt) {
    sent += rte_eth_tx_burst(port.port_id, port.tx_queue, batch.packets + sent,
                             batch.count - sent);
  }
  // The pacer's share (tx_pacer.h) reads what passthrough met in this queue.
  pacers_[out].OnPassthrough(batch.count, first_sent, sent);
  PortCounters& counters = port_counters_[out];
  if (sent < batch.count) [[unlikely]] {
    for (uint16_t i = sent; i < batch.count; ++i) {
      bytes -= batch.packets[i]->pkt_len;
      DropPacket(out, batch.packets[i], DropReason::kTxFull);
    }
  }
  counters.tx_packets.Add(sent);
  counters.tx_bytes.Add(bytes);
  batch.count = 0;
  batch.bytes = 0;
}

void Hpu::DrainPacer(uint16_t out) {
  TxPacer& pacer = pacers_[out];
  const HpuPort& port = ports_[out];
  const uint64_t now = pacer.rate_limited() ? clock::NowNanos() : 0;
  PortCounters& counters = port_counters_[out];
  if (port.tx_queue != kNoPort) {
    const TxPacer::Drained drained = pacer.Drain(
        now, [this, out, &port](rte_mbuf** packets, uint16_t count) {
          // A frame the queue refuses stays in the pacer and is offered
          // (and captured) again next loop.
          if (captures_ != nullptr) [[unlikely]]
            Capture(out, CaptureStage::kTx, packets, count);
          tsan::ReleaseEach(packets, count);
          return rte_eth_tx_burst(port.port_id, port.tx_queue, packets, count);
        });
    counters.tx_packets.Add(drained.frames);
    counters.tx_bytes.Add(drained.bytes);
    counters.transport_paced.Add(drained.frames);
    return;
  }
  // No TX queue of ours on this port: the frames join the port's TX ring,
  // which HPU 0 sends (and counts) with its passthrough batch.
  const TxPacer::Drained drained =
      pacer.Drain(now, [&port](rte_mbuf** packets, uint16_t count) {
        return static_cast<uint16_t>(rte_ring_mp_enqueue_burst(
            port.tx_ring, reinterpret_cast<void**>(packets), count, nullptr));
      });
  counters.transport_paced.Add(drained.frames);
}

void Hpu::FlushAll() {
  for (uint16_t out = 0; out < port_count_; ++out) Flush(out);
  // Passthrough first, on every port, then the transports' frames.
  for (uint16_t out = 0; out < port_count_; ++out) {
    if (pacers_[out].enabled()) DrainPacer(out);
  }
}

void Hpu::ReleasePacers() {
  for (uint16_t out = 0; out < port_count_; ++out) {
    PortCounters& counters = port_counters_[out];
    pacers_[out].Clear([&counters](rte_mbuf* packet) {
      counters.transport_discarded.Add();
      rte_pktmbuf_free(packet);
    });
  }
}

void Hpu::RefuseTransport(uint16_t port, rte_mbuf* packet) {
  port_counters_[port].transport_refused.Add();
  rte_pktmbuf_free(packet);
}

bool Hpu::EmitFrame(std::span<const uint8_t> frame, EmitPort port) {
  uint16_t out = kNoPort;
  if (current_in_port_ != kNoPort) {
    out = port == EmitPort::kIngress ? current_in_port_
                                     : ports_[current_in_port_].pair;
  }
  if (out == kNoPort || frame.size() > UINT16_MAX) {
    counters_.emit_failed.Add();
    return false;
  }
  rte_mbuf* packet = rte_pktmbuf_alloc(shared_.pool);
  if (packet == nullptr) {
    counters_.emit_failed.Add();
    port_counters_[out].Drop(DropReason::kNoBuffer);
    return false;
  }
  char* data = rte_pktmbuf_append(packet, static_cast<uint16_t>(frame.size()));
  if (data == nullptr) {  // larger than one mbuf's data room
    rte_pktmbuf_free(packet);
    counters_.emit_failed.Add();
    return false;
  }
  std::memcpy(data, frame.data(), frame.size());
  counters_.emitted.Add();
  Send(out, packet);
  return true;
}

const MemoryRegion* Hpu::BoundMemoryRegion(uint32_t ectx_id,
                                           uint32_t index) const {
  const EctxTable* table = shared_.table->load(std::memory_order_acquire);
  for (const auto& ectx : table->ectxs()) {
    if (ectx->id() == ectx_id) return ectx->region_holder(index);
  }
  return nullptr;
}

bool Hpu::PutToPeer(const PeerPut& put) {
  for (uint32_t t = 0; t < transport_count_; ++t) {
    if (transports_[t]->HandlerPut(put, current_ectx_)) return true;
  }
  return false;
}

bool Hpu::GetFromPeer(const PeerGet& get) {
  for (uint32_t t = 0; t < transport_count_; ++t) {
    if (transports_[t]->HandlerGet(get, current_ectx_)) return true;
  }
  return false;
}

bool Hpu::RaiseEvent(uint32_t code, std::span<const uint8_t> data) {
  Event event;
  event.code = code;
  event.ectx_id = current_ectx_;
  event.hpu = static_cast<uint16_t>(index_);
  event.length =
      static_cast<uint16_t>(std::min<size_t>(data.size(), Event::kMaxData));
  std::memcpy(event.data, data.data(), event.length);
  if (events_ == nullptr ||
      rte_ring_sp_enqueue_elem(events_, &event, sizeof(Event)) != 0) {
    counters_.event_overflow.Add();
    return false;
  }
  counters_.events.Add();
  return true;
}

}  // namespace spinnic
