// The reliability state machines of one DiAD channel (one direction pair
// between us and one peer), owned by one HPU lcore: no locks, no atomics,
// no allocation after construction. Pure logic over sequence numbers, epochs
// and a caller-supplied clock in nanoseconds, so that unit tests drive it
// through a seeded lossy channel without DPDK (tests/unit/diad/).
//
// The protocol (docs/diad.md):
//  - Every sequenced packet (requests, responses, stream data) carries the
//    next sequence number of its direction; the receiver accepts exactly the
//    next expected one (go-back-N) and drops everything else: a duplicate is
//    re-ACKed, a gap gets one NACK (repeated at most every nack_interval
//    while the gap persists), a number far outside the window is dropped
//    without a reply.
//  - ACKs are cumulative and coalesced: one per `ack_every` accepted packets
//    or `ack_delay_ns` after the first unacknowledged one, earlier when the
//    packet asks (kFlagAckNow). Every sequenced packet we send carries the
//    cumulative ack too (piggyback), which counts as an ACK sent.
//  - The sender holds each packet (an mbuf clone in the dataplane) until it
//    is acknowledged; a NACK or the answer to an UNACK retransmits from the
//    receiver's next expected number (go-back-N). When the retransmission
//    timer fires without progress the sender asks with an UNACK, and doubles
//    the timeout (up to rto_max_ns); after `max_retries` expiries without
//    progress (and DownAfterNs of silence) the channel is down. The timeout
//    armed after progress is estimated from round-trip samples (RFC 6298,
//    adaptive_rto), taken only from packets sent once (Karn).
//  - Sessions: each side picks a random non-zero epoch per session. Packets
//    carry (src_epoch, dst_epoch). A packet with dst_epoch 0 and an unknown
//    src_epoch starts a new peer session (the peer restarted or reset): we
//    reset the channel and fail what was pending. A packet whose dst_epoch
//    is non-zero and not ours belongs to an old session and is dropped.
#ifndef SPINNIC_DATAPLANE_DIAD_CHANNEL_H_
#define SPINNIC_DATAPLANE_DIAD_CHANNEL_H_

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "dataplane/common/rtt_estimator.h"
#include "dataplane/diad/wire.h"

namespace spinnic::diad {

// How a channel recovers from loss (per peer: DiadConfig's PeerConfig).
enum class Recovery : uint8_t {
  // The paper's wire: the receiver drops everything but the next expected
  // packet, the sender resends from the first missing one.
  kGoBackN = 0,
  // Selective repeat, once both ends showed they speak it (kSackCapable):
  // the receiver holds out-of-order packets (ReorderBuffer) and reports them
  // in SACKs, the sender resends only the holes.
  kSelective = 1,
};
const char* RecoveryName(Recovery recovery);

// A SELECTIVE sender resends a hole once this many later packets were
// SACKed (the reordering it tolerates before calling a packet lost).
inline constexpr uint32_t kSackHoleThreshold = 3;

struct ChannelConfig {
  // Sequenced packets sent and not yet acknowledged; a power of two.
  uint32_t window_packets = 256;
  // Payload bytes sent and not yet acknowledged.
  uint64_t window_bytes = uint64_t{4} << 20;
  // Transactions (reads, writes, stream messages) in flight per channel:
  // 1..16 in the DiAD paper; a power of two up to 1024 here.
  uint32_t max_transactions = 16;
  uint32_t ack_every = 16;
  uint64_t ack_delay_ns = 20'000;
  uint64_t rto_ns = 1'000'000;  // first retransmission timeout
  uint64_t rto_max_ns = 16'000'000;
  // Adaptive retransmission timeout (RFC 6298; docs/diad.md, "Adaptive
  // timeout"): once a round trip was measured, the timeout armed after
  // progress is SRTT + max(ack_delay_ns, 4 RTTVAR), clamped to [rto_min_ns,
  // rto_max_ns]; rto_ns is only the first one. Expiries still double it up
  // to rto_max_ns. false: the paper's fixed timer (rto_ns after progress).
  bool adaptive_rto = true;
  uint64_t rto_min_ns = 100'000;
  // Timer expiries in a row without progress before the channel is down.
  uint32_t max_retries = 8;
  // At most one NACK per gap, and one go-back-N retransmission per
  // sequence number, per this interval (a flood of NACKs or UNACKs costs
  // the sender at most one window per interval).
  uint64_t nack_interval_ns = 200'000;
  // A sequence number this far (or farther) from the expected one, either
  // way, is outside the window: dropped without a reply.
  uint32_t receive_span = 1u << 20;
  // SELECTIVE: out-of-order packets a channel's receiver holds at most
  // (their mbufs); beyond, they are dropped and counted. 0: twice
  // window_packets, all a SELECTIVE sender can have beyond a hole.
  uint32_t reorder_packets = 0;
  // A read or write whose request went out whole and which got no response
  // packet for this long fails with kDeadlineExceeded, releasing its
  // transaction slot; the channel stays up (a peer that keeps ACKing but
  // never answers one transaction). 0: kTxnDeadlineDownAfters times
  // DownAfterNs (TxnDeadlineNs()).
  uint64_t txn_deadline_ns = 0;
};

// Time after which an unanswered channel is declared down with `config`:
// the sum of the timeouts of every retry. With adaptive_rto the timeouts
// may be shorter, but the channel is still not declared down before this
// (SendWindow::OnTimer).
uint64_t DownAfterNs(const ChannelConfig& config);

// The default transaction deadline, in units of DownAfterNs: long enough
// that a transaction only expires when its channel could have been declared
// down several times over, had the peer stopped answering altogether.
inline constexpr uint64_t kTxnDeadlineDownAfters = 10;
// The transaction deadline in force with `config` (txn_deadline_ns, or its
// default).
uint64_t TxnDeadlineNs(const ChannelConfig& config);

// ---------------------------------------------------------------- sessions

class Session {
 public:
  // `my_epoch` must be non-zero (the dataplane draws it from getrandom).
  explicit Session(uint32_t my_epoch) : my_epoch_(my_epoch) {}

  enum class Verdict : uint8_t {
    kOk,         // current session (or the peer's first packet: learned)
    kPeerReset,  // the peer started a new session: reset the channel first
    kStale,      // an older session's packet: drop (count) it
    // A new epoch of the peer's that does not know ours yet (dst_epoch 0)
    // while a session is up: a restart, or a forged packet from anyone who
    // can spoof the peer's address. Drop it and answer with a challenge
    // ACK addressed to that epoch (ours in src_epoch): only the real peer
    // sees it, and its next packet, carrying our epoch, is the reset
    // (RFC 5961's challenge ACK, for epochs).
    kChallenge,
  };
  // Checks a received packet's epochs and learns the peer's epoch.
  Verdict Check(uint32_t src_epoch, uint32_t dst_epoch);
  // Starts a new session of our own (after the channel went down): a new
  // epoch, the peer's forgotten.
  void Restart(uint32_t new_epoch);

  uint32_t my_epoch() const { return my_epoch_; }
  uint32_t peer_epoch() const { return peer_epoch_; }

 private:
  uint32_t my_epoch_;
  uint32_t peer_epoch_ = 0;
  // The peer's epoch before its last kPeerReset: a late packet of that
  // session (even one with dst_epoch 0) is stale, not another reset.
  uint32_t retired_peer_epoch_ = 0;
};

// ---------------------------------------------------------------- receiver

class ReceiveWindow {
 public:
  explicit ReceiveWindow(const ChannelConfig& config) : config_(config) {}

  enum class Verdict : uint8_t {
    kAccept,     // the expected packet: deliver it (expected advanced)
    kDuplicate,  // already delivered: drop, ACK now
    kGap,        // a later packet (one went missing): drop; NACK if due
    kOutside,    // outside the window: drop, no reply
  };
  struct Result {
    Verdict verdict;
    bool send_nack;  // kGap: a NACK for expected() is due now
  };
  // A sequenced packet arrived at `now_ns`; `ack_now` is its kFlagAckNow.
  Result OnPacket(uint32_t seq, bool ack_now, uint64_t now_ns);
  // An UNACK arrived: an ACK (kFlagProbeReply) is due now. `seq` is the
  // UNACK's seq (its sender's next sequence number), which a SELECTIVE
  // probe reply echoes in `txn` (probe_echo()).
  void OnUnack(uint32_t seq = 0) {
    probe_reply_due_ = true;
    probe_echo_ = seq;
  }
  uint32_t probe_echo() const { return probe_echo_; }
  // SELECTIVE: OnPacket reports a gap without asking for a NACK (the
  // sender learns about holes from SACKs instead).
  void set_selective(bool selective) { selective_ = selective; }
  bool selective() const { return selective_; }
  // SELECTIVE: the SACK state changed (a packet was held, a held one
  // delivered, a duplicate of a held one arrived): an explicit ACK, which
  // carries the SACK, is due now; a piggybacked ack does not satisfy it.
  void RequestSack() { sack_now_ = true; }
  // Whether the due ACK must be an explicit one (a probe reply or a SACK):
  // the callers do not count a piggybacked ack as sent then.
  bool explicit_ack_due() const { return probe_reply_due_ || sack_now_; }

  // Whether an ACK should go out now (coalescing count or delay reached,
  // or one was asked for). The caller sends it, then calls OnAckSent().
  bool AckDue(uint64_t now_ns) const;
  // True when the due ACK answers an UNACK (set kFlagProbeReply).
  bool probe_reply_due() const { return probe_reply_due_; }
  // An ACK or a sequenced packet carrying `expected()` went out.
  void OnAckSent();
  // Earliest time AckDue can become true by itself (0 when it already is);
  // UINT64_MAX if never.
  uint64_t ack_deadline() const;

  uint32_t expected() const { return expected_; }
  void Reset();  // a new session: expect sequence number 0

 private:
  friend class ChannelTestPeer;  // tests: sequence numbers near 2^32

  ChannelConfig config_;
  uint32_t expected_ = 0;
  uint32_t unacked_ = 0;  // accepted since the last ACK went out
  uint64_t first_unacked_ns_ = 0;
  bool ack_now_ = false;
  bool probe_reply_due_ = false;
  bool sack_now_ = false;
  bool selective_ = false;
  uint32_t probe_echo_ = 0;
  bool nack_sent_ = false;  // for the current value of expected_
  uint64_t nack_sent_ns_ = 0;
};

// ---------------------------------------------------------------- selective

// SELECTIVE recovery of one channel: configured for the peer, and whether
// the peer showed in this session that it speaks it (kSackCapable on a
// control packet). Only then are SACKs sent, out-of-order packets held and
// holes resent; until then, and always with a GO_BACK_N peer, the channel
// is go-back-N and nothing of the extension goes on the wire.
class SackNegotiation {
 public:
  explicit SackNegotiation(Recovery configured = Recovery::kGoBackN)
      : configured_(configured) {}
  // A control packet arrived; `advertised`: its key is kSackCapable. True
  // the first time the peer advertises it in this session while we are
  // SELECTIVE: the caller makes an ACK (ours advertises too) go out now, so
  // a peer that sends only data learns it without waiting.
  bool OnControl(bool advertised) {
    if (!advertised || configured_ != Recovery::kSelective || peer_capable_) {
      return false;
    }
    peer_capable_ = true;
    return true;
  }
  // What our control packets carry in `key`.
  uint32_t advert() const {
    return configured_ == Recovery::kSelective ? kSackCapable : 0;
  }
  bool active() const {
    return configured_ == Recovery::kSelective && peer_capable_;
  }
  Recovery configured() const { return configured_; }
  // A new session (either side's): the peer must show it again.
  void Reset() { peer_capable_ = false; }

 private:
  Recovery configured_;
  bool peer_capable_ = false;
};

// The receiver's out-of-order packets of one SELECTIVE channel: at most
// `capacity` handles, each for a sequence number within `span` (the
// window, a power of two) after the expected one. Sized at construction;
// holding and taking allocate nothing.
template <typename Handle>
class ReorderBuffer {
 public:
  ReorderBuffer(uint32_t span, uint32_t capacity);

  enum class HoldVerdict : uint8_t {
    kHeld,       // kept: the caller owns it no more
    kDuplicate,  // that number is held already: drop the new copy
    kFull,       // capacity reached: drop it (counted), the sender resends
    kOutside,    // not within (expected, expected + span): drop it
  };
  HoldVerdict Hold(uint32_t seq, uint32_t expected, Handle handle);
  // The handle held for `seq`, if any, taken out.
  bool Take(uint32_t seq, Handle* out);
  // The handle held for `seq`, left in place; nullptr if none.
  const Handle* Find(uint32_t seq) const {
    const Slot& slot = slots_[seq & mask_];
    return slot.used && slot.seq == seq ? &slot.handle : nullptr;
  }
  // Writes the SACK bitmap relative to `expected` (bit j: expected + j
  // held) into `out` (at most `max_bytes`, at most kMaxSackBytes); returns
  // its length in bytes, 0 when nothing is held.
  uint32_t WriteSack(uint32_t expected, uint8_t* out, uint32_t max_bytes) const;
  // Hands every held handle to `release(handle)` (a session reset).
  template <typename Release>
  void Reset(Release&& release);

  uint32_t count() const { return count_; }
  uint32_t capacity() const { return capacity_; }

 private:
  struct Slot {
    Handle handle{};
    uint32_t seq = 0;
    bool used = false;
  };
  std::vector<Slot> slots_;  // span entries, indexed seq & mask
  uint32_t mask_;
  uint32_t capacity_;
  uint32_t count_ = 0;
  uint32_t top_ = 0;  // the highest held sequence number (when count_ > 0)
};

// Validity of a received SACK against what the sender sent; an invalid one
// changes nothing and is counted by the caller as a drop of its reason.
enum class SackVerdict : uint8_t {
  kOk,
  kOverlapsAck,  // bit 0 set: `ack` itself claimed received
  kNeverSent,    // a bit for a number at or past next_seq
};

// ---------------------------------------------------------------- sender

// `Handle` is what the caller keeps per sent packet until it is
// acknowledged: an rte_mbuf* in the dataplane, an index in tests.
template <typename Handle>
class SendWindow {
 public:
  explicit SendWindow(const ChannelConfig& config);

  // Whether a packet of `payload_bytes` fits the window now. SACKed packets
  // (SELECTIVE) do not count against window_packets and window_bytes: the
  // receiver holds them, they are out of the network. At most twice
  // window_packets are held from base on, so that a hole does not stall
  // the sender for a round trip.
  bool CanSend(uint32_t payload_bytes) const;
  // The sequence number the next Push() gets.
  uint32_t next_seq() const { return next_seq_; }
  // Records a sent packet (after it was built with next_seq()); arms the
  // timer when the window was empty. `txn` and `completes_txn` are given
  // back when it is acknowledged (stream messages complete on their ACK).
  void Push(Handle handle, uint32_t payload_bytes, uint32_t txn,
            bool completes_txn, uint64_t now_ns);

  enum class AckVerdict : uint8_t {
    kProgress,  // released at least one packet
    kNoChange,  // acknowledged nothing new
    kInvalid,   // acknowledges data never sent: ignored (count it)
  };
  // A cumulative ack (from an ACK, NACK or any sequenced packet): every
  // held packet before `ack` is released through `release(handle, txn,
  // completes_txn)`. Progress resets the retry count and the timeout (to
  // the estimate, adaptive_rto). It is a round-trip sample when no packet
  // it releases was ever resent or SACKed (Karn: the ack then answers the
  // one transmission of `ack` - 1).
  template <typename Release>
  AckVerdict OnAck(uint32_t ack, uint64_t now_ns, Release&& release);

  // A NACK, or the ACK answering our UNACK, reported `ack` as the receiver's
  // next expected number: after OnAck(ack), every held packet from `ack` on
  // is passed to `retransmit(handle)`, oldest first, unless the same range
  // was retransmitted less than nack_interval_ns ago (then returns 0).
  // Returns how many were retransmitted; a retransmission re-arms the timer
  // (the timeout is kept). This form expects the caller to have applied
  // OnAck(ack) already (as for every packet carrying an ack): it releases
  // nothing, and resends nothing when `ack` is not in [base, next_seq).
  template <typename Retransmit>
  uint32_t GoBackN(uint32_t ack, uint64_t now_ns, Retransmit&& retransmit);
  // The same, applying OnAck(ack, now_ns, release) first.
  template <typename Release, typename Retransmit>
  uint32_t GoBackN(uint32_t ack, uint64_t now_ns, Release&& release,
                   Retransmit&& retransmit);
  // GO_BACK_N, the ACK answering our UNACK: as GoBackN, but only the
  // packets sent before that UNACK. On a path that keeps order they reached
  // the receiver before it, so the ones from `ack` on are lost; the ones
  // sent after it are still on their way and are not resent (doing so cost
  // about one retransmission per delivered packet with a full window and no
  // loss at all). Answers to the oldest UNACK not yet answered; a reply
  // with none outstanding (a duplicate) resends nothing.
  template <typename Retransmit>
  uint32_t GoBackNOnProbeReply(uint32_t ack, uint64_t now_ns,
                               Retransmit&& retransmit);

  // SELECTIVE: checks a SACK (ack and bitmap as received; OnAck(ack) did
  // not call it invalid).
  SackVerdict CheckSack(uint32_t ack, std::span<const uint8_t> bitmap) const;
  // SELECTIVE, after OnAck(ack) and a kOk CheckSack: marks the SACKed
  // packets (never resent, released only by the cumulative ack), then
  // passes the holes to `retransmit(handle)`, oldest first: every unSACKed
  // packet kSackHoleThreshold or more before the highest SACKed one and,
  // when `probe_reply` (the answer to our UNACK that carried `probe_end`,
  // our next_seq() when we sent it), every unSACKed one before probe_end.
  // A resent packet goes again once kSackHoleThreshold packets sent after
  // it were SACKed, or nack_interval_ns later. An empty bitmap is allowed
  // (a probe reply when the receiver holds nothing). Returns how many were
  // resent; a resend re-arms the timer. New SACK information resets the
  // retry count (the peer is alive). The newest newly SACKed packet that
  // was never resent is a round-trip sample (the receiver SACKs at once).
  template <typename Retransmit>
  uint32_t OnSack(uint32_t ack, std::span<const uint8_t> bitmap,
                  bool probe_reply, uint32_t probe_end, uint64_t now_ns,
                  Retransmit&& retransmit);
  // Whether the packet `seq` (in flight) was SACKed; tests.
  bool sacked(uint32_t seq) const { return slots_[seq & mask_].sacked; }

  enum class TimerVerdict : uint8_t {
    kIdle,       // not due
    kSendUnack,  // timed out: send an UNACK (timeout doubled)
    kDown,       // expiry max_retries + 1 without progress, and at least
                 // DownAfterNs since the last progress: the channel is
                 // down (held packets stay held until Reset)
  };
  TimerVerdict OnTimer(uint64_t now_ns);
  // Window full: whether to send an UNACK now (at most one per
  // nack_interval_ns), so the receiver's ACK reopens the window early.
  bool UnackDueOnFullWindow(uint64_t now_ns);
  // When OnTimer next becomes due; UINT64_MAX when nothing is held.
  uint64_t timer_deadline() const;

  // Hands every held packet to `release(handle, txn, completes_txn)` and
  // starts again from sequence number 0 (peer reset, channel down).
  template <typename Release>
  void Reset(Release&& release);

  // Congestion control (docs/congestion.md): at most `packets` in the
  // network (SACKed ones excluded, as for window_packets), never more than
  // window_packets; window_packets until set.
  void set_congestion_window(uint32_t packets) {
    cwnd_packets_ = std::min(packets, config_.window_packets);
  }
  uint32_t congestion_window() const { return cwnd_packets_; }

  uint32_t in_flight_packets() const { return next_seq_ - base_; }
  uint64_t in_flight_bytes() const { return in_flight_bytes_; }
  uint32_t base() const { return base_; }
  uint32_t retries() const { return retries_; }
  // The timeout in force (backed off after expiries).
  uint64_t rto_ns() const { return rto_ns_; }
  // The timeout armed after progress: the estimate (adaptive_rto, once
  // sampled) or rto_ns.
  uint64_t base_rto_ns() const {
    return config_.adaptive_rto ? rtt_.rto_ns() : config_.rto_ns;
  }
  // The round-trip estimate (adaptive_rto); samples() counts what fed it.
  const RttEstimator& rtt() const { return rtt_; }
  // Acks that released packets but gave no sample because one of them was
  // resent or SACKed (Karn), since construction.
  uint64_t karn_skips() const { return karn_skips_; }

 private:
  friend class ChannelTestPeer;  // tests: sequence numbers near 2^32

  struct Slot {
    Handle handle{};
    uint32_t payload_bytes = 0;
    uint32_t txn = 0;
    bool completes_txn = false;
    // When it was first sent: a round-trip sample when it is acknowledged
    // having been sent once (Karn).
    uint64_t sent_ns = 0;
    // SELECTIVE: the receiver holds it; and when it was last resent. A
    // resent packet gives no round-trip sample (Karn): the ack may answer
    // either copy.
    bool sacked = false;
    bool resent = false;
    uint64_t resent_ns = 0;
    uint32_t resent_next = 0;  // next_seq_ when it was last resent
  };

  // Releases held packets in order until base_ == end. Returns false when
  // one of them was resent or SACKed (its ack is then no round-trip
  // sample).
  template <typename Release>
  bool ReleaseUpTo(uint32_t end, Release& release);
  // A round-trip sample of a packet sent at `sent_ns`, acknowledged now.
  void Sample(uint64_t sent_ns, uint64_t now_ns);

  ChannelConfig config_;
  std::vector<Slot> slots_;  // 2 * window_packets entries, seq & mask
  uint32_t mask_;
  uint32_t base_ = 0;      // oldest unacknowledged sequence number
  uint32_t next_seq_ = 0;  // next to assign
  uint64_t in_flight_bytes_ = 0;
  uint64_t rto_ns_;
  uint64_t deadline_ns_ = UINT64_MAX;
  uint32_t retries_ = 0;
  RttEstimator rtt_;
  uint64_t karn_skips_ = 0;
  // The down decision (OnTimer): the last progress (or the first packet
  // into an empty window), and DownAfterNs(config_).
  uint64_t stall_start_ns_ = 0;
  uint64_t down_after_ns_;
  // Go-back-N damping: last retransmission's start and time.
  uint32_t last_gbn_from_ = 0;
  uint64_t last_gbn_ns_ = 0;
  bool gbn_done_ = false;
  uint64_t last_unack_ns_ = 0;
  bool unack_sent_ = false;
  // The oldest UNACK not answered yet: our next_seq_ when it left.
  uint32_t probe_end_ = 0;
  bool probe_outstanding_ = false;
  // GoBackN's work for [ack, end), end at most next_seq_.
  template <typename Retransmit>
  uint32_t GoBackNBefore(uint32_t ack, uint32_t end, uint64_t now_ns,
                         Retransmit& retransmit);
  // SELECTIVE: the highest SACKed sequence number, when has_high_sacked_
  // (stale once base_ passed it).
  uint32_t high_sacked_ = 0;
  bool has_high_sacked_ = false;
  // SELECTIVE: held packets the receiver SACKed, and their payload bytes.
  uint32_t sacked_packets_ = 0;
  uint64_t sacked_bytes_ = 0;
  uint32_t cwnd_packets_;  // set_congestion_window
};

// ---------------------------------------------------------------- transactions

// Transactions this side started on one channel, by id: reads and writes
// wait for their response, stream messages for the ACK of their last
// packet. Ids are per channel, increasing; a response with an id not in
// the table is refused (counted by the caller).
template <typename Cookie>
class TransactionTable {
 public:
  explicit TransactionTable(uint32_t capacity);  // a power of two

  bool Full() const { return count_ == slots_.size(); }
  uint32_t count() const { return count_; }
  // A new transaction; its id. Precondition: !Full().
  uint32_t Begin(PacketType type, Cookie cookie);
  // The pending transaction `txn` of `type`, or nullptr.
  Cookie* Find(uint32_t txn, PacketType type);
  // Ends `txn` (precondition: Find succeeded) and returns its cookie.
  Cookie End(uint32_t txn);
  // Ends every pending transaction, oldest first, through fn(txn, cookie).
  template <typename Fn>
  void EndAll(Fn&& fn);
  // Calls fn(txn, cookie&) for every pending transaction, in slot order
  // (not by age); fn may End() the transaction it is given, nothing else.
  template <typename Fn>
  void ForEach(Fn&& fn);

 private:
  friend class ChannelTestPeer;  // tests: ids near 2^32

  struct Slot {
    bool used = false;
    PacketType type = PacketType::kAck;
    uint32_t txn = 0;
    Cookie cookie{};
  };
  std::vector<Slot> slots_;
  std::vector<uint32_t> order_;  // EndAll's scratch: capacity entries
  uint32_t next_txn_ = 1;
  uint32_t count_ = 0;
};

}  // namespace spinnic::diad

#include "dataplane/diad/channel_impl.h"  // IWYU pragma: export

#endif  // SPINNIC_DATAPLANE_DIAD_CHANNEL_H_
