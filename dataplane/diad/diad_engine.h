// The DiAD transport on one HPU lcore: the channels this HPU owns (channel
// c of every peer, for c % workers == this HPU), their reliability state
// (channel.h), the remote memory accesses they carry, and the sPIN delivery
// of incoming write and stream messages. Everything here belongs to one
// lcore: no locks, no allocation after construction (operations are
// allocated by their submitter), mbufs from the dataplane's pools.
//
// A received DiAD frame goes: checksum and header checks (wire.h) -> peer by
// source address -> channel (handed to its HPU if another one received it)
// -> session epochs -> acknowledgements it carries -> receive window
// (accept exactly the next sequence number) -> the message's handlers and
// the region or stream deposit -> responses. docs/diad.md has the whole
// protocol.
#ifndef SPINNIC_DATAPLANE_DIAD_DIAD_ENGINE_H_
#define SPINNIC_DATAPLANE_DIAD_DIAD_ENGINE_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "dataplane/classifier.h"
#include "dataplane/common/clock.h"
#include "dataplane/counter.h"
#include "dataplane/diad/channel.h"
#include "dataplane/diad/delay_window.h"
#include "dataplane/diad/diad_config.h"
#include "dataplane/diad/diad_op.h"
#include "dataplane/diad/peer_table.h"
#include "dataplane/diad/wire.h"
#include "dataplane/log2_histogram.h"
#include "dataplane/spin_engine.h"
#include "dataplane/transport.h"

struct rte_mbuf;
struct rte_mempool;
struct rte_ring;

namespace spinnic {
class EctxTable;
class Hpu;
class MemoryRegion;
class RegionTable;
class RegionTx;
}  // namespace spinnic

namespace spinnic::diad {

// Why a DiAD frame was dropped: the parse errors of wire.h first (same
// values), then the transport's own reasons. Names in DiadDropName().
enum class DiadDrop : uint8_t {
  kTruncated = static_cast<uint8_t>(ParseError::kTruncated),
  kBadVersion,
  kBadType,
  kBadFlags,
  kBadReserved,
  kBadLength,
  kBadChecksum,
  kChannelMismatch,
  kUnknownPeer,    // source address is not a configured peer
  kBadChannel,     // channel >= the configured channels per peer
  kStaleEpoch,     // addressed to an older session
  kDuplicate,      // sequence number already delivered (re-ACKed)
  kOutOfOrder,     // a gap before it (NACKed)
  kOutsideWindow,  // sequence number far outside the window
  kBusy,           // no room for the response yet (sender retransmits)
  kUnknownTxn,     // a response to no pending transaction of ours
  kInvalidAck,     // acknowledges data never sent
  kNoFirst,        // a message continued without its FIRST packet
  kNoBuffer,       // mbuf pool exhausted while answering
  kHandoffFull,    // the owning HPU's inbound ring was full
  // SELECTIVE recovery (docs/diad.md, "Selective repeat").
  kSackUnexpected,   // a SACK on a channel that is not SELECTIVE (yet)
  kSackOverlapsAck,  // a SACK claiming the cumulative ack's own number
  kSackNeverSent,    // a SACK claiming a number we never sent
  kReorderFull,      // out-of-order packet, reorder buffer full
  // A new peer epoch that does not know ours: challenged, not believed
  // (Session::Verdict::kChallenge).
  kUnverifiedReset,
  kCount,
};
const char* DiadDropName(DiadDrop drop);
inline constexpr size_t kDiadDropCount = static_cast<size_t>(DiadDrop::kCount);

struct alignas(64) DiadCounters {
  Counter rx_packets;
  Counter rx_bytes;
  Counter tx_data;  // sequenced packets sent (first transmissions)
  Counter tx_bytes;
  Counter retransmits;
  Counter acks_sent;
  Counter nacks_sent;
  Counter unacks_sent;
  Counter acks_received;
  Counter nacks_received;
  Counter unacks_received;
  Counter handoffs;            // frames passed to the owning HPU
  Counter messages_delivered;  // write and stream messages accepted whole
  Counter bytes_delivered;
  Counter reads_served;
  Counter ops_completed;
  Counter ops_failed;
  Counter channel_down;
  Counter peer_reset;
  Counter stream_no_target;  // a stream message nobody takes (dropped)
  Counter neighbor_answers;  // IPv6 neighbour solicitations answered
  Counter neighbor_ignored;  // other ICMPv6 to the node address
  Counter handler_puts;      // handler puts/gets started
  Counter handler_gets;
  Counter handler_refused;  // handler puts/gets that could not start
  // Handler puts/gets for a channel of another HPU, handed to it.
  Counter handler_handoffs;
  Counter sacks_sent;      // ACKs that carried a SACK bitmap
  Counter sacks_received;  // valid SACKs applied
  Counter reorder_held;    // out-of-order packets held (SELECTIVE)
  // READ response packets whose payload went out of the region (region_tx.h)
  Counter zero_copy_packets;
  // ... and those that were meant to but were copied (no reference or
  // mbuf, or a region being deregistered).
  Counter zero_copy_fallbacks;
  // Adaptive timeout: round-trip samples taken, and acks that released
  // packets without giving one because one of them was resent (Karn).
  Counter rtt_samples;
  Counter rtt_karn_skips;
  // The samples themselves (spinnic_diad_rtt_seconds, docs/metrics.md).
  RttHistogram rtt;
  // Reads and writes failed with deadline_exceeded (answered never).
  Counter txn_deadline_exceeded;
  // Congestion control (docs/congestion.md, "DiAD"): DiAD packets that
  // arrived CE-marked (counted with congestion control off too), ACKs we
  // sent and received with kFlagEcnEcho, and the windows' decreases by
  // cause (delay above the target, ECN echo, retransmission timeout).
  Counter ce_marks_received;
  Counter ecn_echoes_sent;
  Counter ecn_echoes_received;
  Counter cc_delay_decreases;
  Counter cc_ecn_decreases;
  Counter cc_timeout_decreases;
  // Sends held back by a window below one packet (PacingGapNs).
  Counter cc_paced;
  // Requests of peers this node refused (answered with that status), per
  // message: a forged key, range or access is counted here, never served.
  // Challenge ACKs sent to a claimed peer restart (kUnverifiedReset).
  Counter reset_challenges;
  Counter refused_bad_key;
  Counter refused_out_of_bounds;
  Counter refused_no_access;
  Counter refused_bad_length;
  std::array<Counter, kDiadDropCount> drops;

  void Drop(DiadDrop reason) { drops[static_cast<size_t>(reason)].Add(); }
  void Refused(Status status) {
    switch (status) {
      case Status::kBadKey:
        refused_bad_key.Add();
        break;
      case Status::kOutOfBounds:
        refused_out_of_bounds.Add();
        break;
      case Status::kNoAccess:
        refused_no_access.Add();
        break;
      case Status::kBadLength:
        refused_bad_length.Add();
        break;
      default:
        break;
    }
  }
};

// Per (HPU, peer slot): what ListPeers shows, summed over HPUs.
struct alignas(64) DiadPeerCounters {
  Counter tx_packets;
  Counter tx_bytes;
  Counter rx_packets;
  Counter rx_bytes;
  Counter retransmits;
  Counter down_events;
  Counter resets;
  Counter ops_completed;
  Counter ops_failed;
  Counter rtt_samples;
  Counter txn_deadline_exceeded;
  // Channels of this peer on this HPU currently down (written by the HPU).
  std::atomic<uint32_t> channels_down{0};
  std::atomic<uint32_t> in_flight_packets{0};
  // The round-trip estimate of the channel that took the last sample, and
  // the timeout armed after progress (written by the HPU, 0 before any
  // sample).
  std::atomic<uint64_t> srtt_ns{0};
  std::atomic<uint64_t> rto_ns{0};
  // Congestion control (0 with it off): CE marks on the peer's packets,
  // its ECN echoes, our windows' decreases by cause; the window (packets)
  // and RTT sample of the channel that took the last ACK.
  Counter ce_marks_received;
  Counter ecn_echoes_received;
  Counter cc_delay_decreases;
  Counter cc_ecn_decreases;
  Counter cc_timeout_decreases;
  std::atomic<double> cc_window{0};
  std::atomic<uint64_t> cc_rtt_ns{0};
};

// Event codes the transport raises (Event.data says more; docs/diad.md).
enum DiadEvent : uint32_t {
  kEventDiadChannelDown = 0xffff0101,  // data: peer slot, channel (u32, u16)
  kEventDiadPeerReset = 0xffff0102,    // data: peer slot, channel
  kEventDiadOpFailed = 0xffff0103,     // data: slot, channel, txn, status
};

// What the engine shares with the dataplane (pointers owned by it).
struct DiadShared {
  const DiadConfig* config = nullptr;
  std::atomic<const PeerTable*>* peers = nullptr;
  std::atomic<const RegionTable*>* regions = nullptr;
  rte_mempool* pool = nullptr;
  // Indirect mbufs: retransmissions send clones of the held original.
  rte_mempool* clone_pool = nullptr;
  // Zero-copy READ responses (DiadConfig::zero_copy_min_bytes); nullptr
  // when they are off or the port cannot send chained mbufs.
  RegionTx* region_tx = nullptr;
  // Per HPU: DiadOp* submissions (MP/SC).
  rte_ring* const* commands = nullptr;
  // Per HPU: frames received by another HPU (the HPUs' inbound rings).
  rte_ring* const* inbound = nullptr;
  // Per HPU: handler puts and gets for its channels from other HPUs (mbuf
  // chains, DiadEngine::HandedAction; MP/SC).
  rte_ring* const* handler_actions = nullptr;
  uint32_t hpu_count = 1;
  // Operations queued or in flight (control side limits submissions).
  std::atomic<uint32_t>* pending_ops = nullptr;
};

class DiadEngine final : public TransportEngine {
 public:
  DiadEngine(uint32_t hpu_index, const DiadShared& shared, Hpu* hpu,
             SpinEngine* spin, uint64_t epoch_seed);
  ~DiadEngine() override;
  DiadEngine(const DiadEngine&) = delete;
  DiadEngine& operator=(const DiadEngine&) = delete;

  // Whether the classified frame is addressed to our node: a DiAD frame
  // (UDP to our port) or ICMPv6 for our node address. Cheap: the HPU asks
  // for every IPv6 frame.
  bool ForUs(const ParsedFrame& frame) const override {
    return frame.layers.is_ipv6 && (frame.dst_addr == config_.node ||
                                    (frame.layers.ip_proto == kIcmpv6 &&
                                     frame.dst_addr == solicited_node_));
  }
  // Takes a frame ForUs() accepted; always consumes the mbuf (delivered,
  // answered, handed to its HPU, or dropped and counted).
  void Receive(rte_mbuf* packet, const ParsedFrame& frame, uint16_t in_port,
               const EctxTable& table) override;
  // Timers, queued sends, ACKs, new submissions, peer table changes. Called
  // once per HPU loop iteration after the receive bursts.
  void Poll(const EctxTable& table) override;
  // Our node address (ICMPv6 to its solicited-node group is always
  // offered).
  std::optional<std::span<const IpAddress>> Addresses() const override {
    return std::span<const IpAddress>(&config_.node, 1);
  }
  // Handler actions (handlers/api/context.h): start now or return false.
  bool HandlerPut(const PeerPut& put, uint32_t ectx_id) override;
  bool HandlerGet(const PeerGet& get, uint32_t ectx_id) override;
  // Releases every held mbuf and fails every operation (shutdown).
  void Shutdown() override;
  // Frees the handler actions other HPUs handed over through `ring` and
  // nobody started (their gets' regions unpinned): at shutdown, and by the
  // module for what arrived after an HPU stopped.
  static void DiscardHandedActions(rte_ring* ring);

  const DiadCounters& counters() const { return counters_; }
  const DiadPeerCounters& peer_counters(uint32_t slot) const {
    return peer_counters_[slot];
  }

 private:
  // The engine's clock (DiadConfig::now_ns).
  uint64_t Now() const {
    return config_.now_ns != nullptr ? config_.now_ns() : clock::NowNanos();
  }
  struct ResponseJob {
    PacketType type = PacketType::kWriteResponse;
    Status status = Status::kOk;
    uint32_t txn = 0;
    uint32_t key = 0;
    uint64_t address = 0;
    uint32_t length = 0;
    uint32_t sent = 0;
    const MemoryRegion* region = nullptr;  // pinned while a read is served
  };
  static constexpr uint32_t kMaxResponses = 64;

  // The message being received on a channel (there is one at a time: the
  // channel is ordered).
  struct RxMessage {
    bool active = false;
    PacketType type = PacketType::kStream;
    Status status = Status::kOk;
    uint32_t key = 0;
    uint32_t length = 0;
    uint32_t ectx_id = UINT32_MAX;  // UINT32_MAX: no handler
    MessageState spin;
    // Stream deposit: where the record went in the stream region (offset
    // of its payload in the ring's byte stream) and whether it fit.
    const MemoryRegion* ring = nullptr;
    uint64_t ring_offset = 0;
    bool deposit = false;
  };

  // A transaction this side started: a control operation, or a handler's
  // put or get (op null).
  struct Txn {
    DiadOp* op = nullptr;
    const MemoryRegion* dest = nullptr;  // a handler get's region (pinned)
    uint64_t dest_offset = 0;
    uint32_t length = 0;    // a handler get's bytes
    uint32_t received = 0;  // a handler get's bytes placed
    uint32_t ectx_id = 0;   // the handler's ECTX
    // A read or write fails with kDeadlineExceeded at this time: armed when
    // its request went out whole, pushed back by each response packet.
    uint64_t deadline_ns = UINT64_MAX;
  };

  struct Channel {
    Channel(const ChannelConfig& config, const DiadCongestionConfig& cc);
    uint32_t generation = 0;    // the peer's generation served; 0: unused
    uint32_t active_index = 0;  // where in active_ while generation != 0
    uint32_t slot = 0;
    uint16_t channel = 0;
    bool down = false;
    Session session{1};
    SackNegotiation sack;
    // SELECTIVE: out-of-order packets (mbufs, their receive port in
    // mbuf->port), delivered when the expected number reaches them.
    ReorderBuffer<rte_mbuf*> reorder;
    ReceiveWindow rx;
    SendWindow<rte_mbuf*> tx;
    // Congestion control (diad.congestion.enabled): the delay-based window
    // that caps tx's packets in flight, a new one per session.
    std::optional<DelayWindow> cc;
    // The peer advertised kEcnEchoCapable in this session: our ACKs may
    // carry kFlagEcnEcho.
    bool ecn_peer = false;
    // A sequenced packet arrived CE-marked since our last ACK: the next
    // ACK echoes it (a piggybacked ack does not count as sent then).
    bool ce_pending = false;
    // A window below one packet: no sequenced packet before this.
    uint64_t next_send_ns = 0;
    TransactionTable<Txn> txns;
    DiadOp* queue_head = nullptr;  // ops not yet fully sent, FIFO
    DiadOp* queue_tail = nullptr;
    std::array<ResponseJob, kMaxResponses> responses;
    uint32_t response_head = 0;
    uint32_t response_count = 0;
    RxMessage rx_message;
    uint64_t last_stale_reply_ns = 0;
    // Liveness while transactions wait for responses with nothing held
    // (the retransmission timer is idle then): last valid packet from the
    // peer, last sequenced packet sent, last UNACK probe.
    uint64_t last_heard_ns = 0;
    uint64_t last_sent_ns = 0;
    uint64_t last_probe_ns = 0;
    // No transaction's deadline comes before this (a lower bound: deadlines
    // only move later, so it may be early; ExpireTransactions refreshes it).
    uint64_t next_txn_deadline_ns = UINT64_MAX;
  };

  uint32_t NextEpoch();
  Channel* ChannelFor(const Peer& peer, uint16_t channel);
  void SyncPeers(const EctxTable& table);
  void ResetChannel(Channel& ch, Status why, const EctxTable* table);
  void ChannelDown(Channel& ch, const EctxTable* table);

  // Receive side.
  void OnSequenced(Channel& ch, const Header& h, rte_mbuf* packet,
                   const ParsedFrame& frame, uint32_t payload_offset,
                   uint16_t in_port, const EctxTable& table);
  void OnWrite(Channel& ch, const Header& h, rte_mbuf* packet,
               const ParsedFrame& frame, uint32_t payload_offset,
               uint16_t in_port, const EctxTable& table);
  void OnStream(Channel& ch, const Header& h, rte_mbuf* packet,
                const ParsedFrame& frame, uint32_t payload_offset,
                uint16_t in_port, const EctxTable& table);
  // Queues a response to `request` (type, txn, key, address, length set).
  ResponseJob& NewResponse(Channel& ch, PacketType type, const Header& request);
  void OnReadRequest(Channel& ch, const Header& h);
  void OnReadResponse(Channel& ch, const Header& h, const uint8_t* payload);
  void OnWriteResponse(Channel& ch, const Header& h);
  // Runs the ECTX's handlers on one packet of an incoming message (`h`, on
  // channel `ch`); false when the handler chain said the packet is not to be
  // deposited.
  bool RunHandlers(const Channel& ch, const Header& h, RxMessage& message,
                   const Ectx& ectx, rte_mbuf* packet, const ParsedFrame& frame,
                   uint32_t payload_offset, uint16_t in_port);
  // Applies a cumulative ack (and a go-back-N resend); false when the ack
  // is invalid (counted).
  // What an ACK-carrying packet asks of the sender besides the ack.
  enum class GoBack : uint8_t {
    kNo,
    kNack,        // resend from the ack on
    kProbeReply,  // resend from the ack what was sent before our UNACK
  };
  bool ApplyAck(Channel& ch, uint32_t ack, GoBack go_back, uint64_t now,
                bool ecn_echo = false);
  // Congestion control: feeds the window an ACK that released `acked`
  // packets (`sampled`: it gave the round-trip sample just taken), or an
  // ECN echo, and applies the result. No-op with congestion control off.
  void OnCongestionAck(Channel& ch, uint64_t now, uint32_t acked, bool sampled,
                       bool ecn_echo);
  // The same for a retransmission timeout.
  void OnCongestionTimeout(Channel& ch, uint64_t now);
  // Caps the channel's send window by the congestion window and publishes
  // it and the decreases since `before`.
  void ApplyCongestionWindow(Channel& ch, const DelayWindowCounters& before);
  // An unsequenced control packet (ACK, NACK, UNACK) applied and consumed;
  // false for a sequenced packet, which the caller goes on with.
  bool OnControl(Channel& ch, const Header& h, rte_mbuf* packet,
                 uint32_t payload_offset, uint64_t now);
  // An ACK on a SELECTIVE channel that carries a SACK or answers our UNACK:
  // checked (a bad SACK is a counted drop), applied, holes resent.
  void OnSelectiveAck(Channel& ch, const Header& h, rte_mbuf* packet,
                      uint32_t payload_offset, uint64_t now);
  // Learns the peer's kSackCapable advert from a control packet.
  // ... and the peer's kEcnEchoCapable advert (congestion control).
  void LearnRecovery(Channel& ch, const Header& h);
  // SELECTIVE: holds an out-of-order packet (or drops it, counted).
  void HoldOutOfOrder(Channel& ch, const Header& h, rte_mbuf* packet,
                      uint16_t in_port);
  // SELECTIVE: delivers held packets from the expected number on, in order,
  // while they are there (and a request's response slot is free).
  void DrainReorder(Channel& ch, const EctxTable& table, uint64_t now);

  // Send side.
  void PumpChannel(Channel& ch, uint64_t now, const EctxTable& table);
  bool PumpResponses(Channel& ch, uint64_t now);
  bool PumpOps(Channel& ch, uint64_t now);
  // Builds and sends one sequenced packet, holding the original for
  // retransmission. False when no mbuf could be had (try again later).
  bool SendSequenced(Channel& ch, Header& header,
                     std::span<const uint8_t> payload, uint32_t txn,
                     bool completes_txn, uint64_t now,
                     const MemoryRegion* zero_copy = nullptr);
  // `challenge_epoch`: non-zero for a challenge ACK, the epoch it goes to.
  void SendControl(Channel& ch, PacketType type, uint8_t flags, uint32_t ack,
                   uint32_t challenge_epoch = 0);
  void Retransmit(Channel& ch, rte_mbuf* held);
  bool TxRoom() const;
  // Congestion control: the congestion window is below window_packets (no
  // full-window UNACK then).
  bool CongestionLimited(const Channel& ch) const;
  // `zero_copy`: the payload lies in that region and goes out from there
  // (a header mbuf chained to it); when that cannot be had, it is copied.
  rte_mbuf* BuildPacket(const Channel& ch, Header& header,
                        std::span<const uint8_t> payload,
                        const MemoryRegion* zero_copy = nullptr);
  void Enqueue(Channel& ch, DiadOp* op);
  // Ends transaction `txn` (already out of the table) with `status`.
  void Finish(Channel& ch, uint32_t txn, const Txn& t, Status status);
  // The read or write `txn` of `type` sent its request whole (or got a
  // response packet) at `now`: its deadline is now + txn_deadline_ns_.
  void ArmDeadline(Channel& ch, uint32_t txn, PacketType type, uint64_t now);
  // Fails every transaction of `ch` past its deadline (kDeadlineExceeded);
  // the channel stays up.
  void ExpireTransactions(Channel& ch, uint64_t now);
  // Publishes what the last ack did to the round-trip estimate.
  void NoteRtt(Channel& ch, uint64_t samples_before, uint64_t skips_before);
  void Complete(Channel& ch, DiadOp* op, Status status);
  // A handler's put or get may start now on `ch`: no other message is
  // half sent, a transaction slot is free, and `packets`/`bytes` fit the
  // window.
  bool HandlerCanStart(const Channel& ch, uint32_t packets,
                       uint64_t bytes) const;
  // The peer a handler's put or get names (by name, or empty: the sender
  // of the DiAD message being handled, by slot), or null.
  const Peer* HandlerPeer(std::string_view peer_name, uint32_t source) const;
  // The channel a handler's put or get asked for (PeerPut::channel).
  uint16_t HandlerChannel(uint16_t requested) const;
  // A handler's put or get on a channel of another HPU, as it travels to
  // that HPU: this in the first mbuf of a chain from the pool, a put's
  // bytes in the next ones, one DiAD payload per mbuf. Its owner starts
  // them in order (so a handler's messages on one channel stay in order),
  // holding back the first one its channel cannot start yet.
  struct HandedAction {
    bool get = false;
    PeerPut::Kind kind = PeerPut::Kind::kStream;
    uint16_t channel = 0;
    uint32_t peer_slot = 0;
    uint32_t peer_generation = 0;
    uint32_t key = 0;  // a put's key, a get's rkey
    uint64_t address = 0;
    uint32_t length = 0;
    uint32_t ectx_id = 0;
    // A get's destination, pinned by the HPU that handed it over.
    const MemoryRegion* dest = nullptr;
    uint64_t dest_offset = 0;
  };
  bool HandOff(const HandedAction& action, std::span<const uint8_t> data);
  void TakeHandedActions();
  // False: its channel cannot start it yet (kept in held_action_).
  bool StartHandedAction(rte_mbuf* chain);
  rte_mbuf* held_action_ = nullptr;
  static void DiscardHandedAction(rte_mbuf* chain);
  // Starts a put of `length` bytes on `ch`, whose channel this HPU owns;
  // `segment(offset, size)` gives the bytes of each DiAD payload.
  template <typename SegmentFn>
  bool StartPut(Channel& ch, PeerPut::Kind kind, uint32_t key, uint64_t address,
                uint32_t length, uint32_t ectx_id, SegmentFn segment);
  bool StartGet(Channel& ch, const HandedAction& get);
  // Handlers run on a DiAD message now (RunHandlers): a put without a peer
  // name answers its sender.
  bool delivering_ = false;
  void TakeCommands();
  void AnswerNeighbor(rte_mbuf* packet, const ParsedFrame& frame,
                      uint16_t in_port);
  void Drop(rte_mbuf* packet, DiadDrop reason);
  // An event with data (u32 peer slot, u16 channel, u32 txn, u8 status),
  // as the ECTX `ectx_id`'s (0: the transport's own).
  void RaiseChannelEvent(uint32_t code, const Channel& ch, uint32_t txn,
                         Status status, uint32_t ectx_id = 0);

  static constexpr uint8_t kIcmpv6 = 58;
  static constexpr uint32_t kNoEctx = UINT32_MAX;  // RxMessage: no handler

  uint32_t hpu_index_;
  DiadShared shared_;
  const DiadConfig& config_;
  Hpu* hpu_;
  SpinEngine* spin_;
  uint64_t rng_state_;
  // Channels this HPU owns: [slot * local_channels_ + local index].
  uint32_t local_channels_ = 0;
  std::vector<std::unique_ptr<Channel>> channels_;
  // The channels in use (generation != 0), in no order: what Poll walks.
  // channels_ has max_peers x local channels slots (256 by default), and
  // walking all of them cost an idle Poll about 500 instructions; capacity
  // is reserved up front, so Activate never allocates on the HPU.
  std::vector<Channel*> active_;
  void Activate(Channel& ch, uint32_t generation);
  void Deactivate(Channel& ch);
  const PeerTable* seen_peers_ = nullptr;
  Endpoint self_;
  // ff02::1:ffXX:XXXX for our node address: where solicitations for it go.
  NodeAddress solicited_node_{};
  uint64_t down_after_ns_ = 0;    // DownAfterNs(config_.channel)
  uint64_t txn_deadline_ns_ = 0;  // TxnDeadlineNs(config_.channel)
  DiadCounters counters_;
  std::vector<DiadPeerCounters> peer_counters_;
  // SendControl's SACK bitmap, written just before it is copied out.
  std::array<uint8_t, kMaxSackBytes> sack_scratch_{};
};

}  // namespace spinnic::diad

#endif  // SPINNIC_DATAPLANE_DIAD_DIAD_ENGINE_H_
