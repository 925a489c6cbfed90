// The requester side of one RC queue pair (docs/roce-requester.md): work
// requests in, packet plans out, responses in, completions out. Pure logic
// over PSNs and a caller-supplied monotonic clock in nanoseconds, owned by
// one lcore: no locks, no DPDK, every buffer sized at construction, nothing
// allocated per packet. The engine builds the frames (headers from the
// PacketPlan, payload copied from its local memory by offset) and copies
// READ response payloads to where OnResponse says.
//
// Rules (InfiniBand Architecture Specification vol. 1, 9.7 and 9.9):
//  - Messages are cut into PMTU packets with consecutive 24-bit PSNs; a
//    READ request takes one PSN per response packet it asks for.
//  - Responses are cumulative by PSN: an ACK completes every message it
//    covers; a READ response or atomic ACK implicitly acknowledges the
//    SEND/WRITE messages before it. Something that covers a READ or atomic
//    whose response never arrived means that response was lost: go back.
//  - Recovery is go-back-N from the oldest unacknowledged PSN (a NAK PSN
//    sequence error, a lost READ response, the local ACK timeout), counted
//    against retry_count; RNR NAKs wait the NAK's timer and count against
//    rnr_retry (7 = forever); any forward progress resets both counters.
//    During an RNR wait the ACK timer is stopped, and a sequence NAK for
//    the PSN the wait resends (the responder NAKing what followed it) is
//    a duplicate: neither goes back nor costs retry_count.
//  - The ACK timer is adaptive (RFC 6298 over measured ACK/response round
//    trips, Karn's rule), never above the negotiated local ACK timeout; an
//    expiry before it has backed off to that timeout goes back without
//    costing a retry, so retry_count keeps the meaning the client knows.
//  - A fatal NAK completes the WR it names with its status, every later WR
//    is flushed and the QP is in the error state.
#ifndef SPINNIC_DATAPLANE_ROCE_REQUESTER_H_
#define SPINNIC_DATAPLANE_ROCE_REQUESTER_H_

#include <cstdint>
#include <memory>

#include "dataplane/common/rtt_estimator.h"
#include "dataplane/roce/ib_types.h"

namespace spinnic::roce {

// The local ACK timeout of a QP attribute `timeout` code (9.7, the
// transport timer: 4.096 us * 2^code); code 0 means "no timeout" and gives 0.
// Codes above 31 are clamped to 31.
inline constexpr uint64_t LocalAckTimeoutNs(uint8_t code) {
  return code == 0 ? 0 : uint64_t{4096} << (code > 31 ? 31 : code);
}
// The wait an RNR NAK's 5-bit timer code asks for (table 45).
inline constexpr uint64_t RnrWaitNs(uint8_t timer_code) {
  return uint64_t{kRnrTimerMicros[timer_code & kAethValueMask]} * 1000;
}

// Largest message (2^31 bytes, IB vol. 1 9.7): the limit responder.h's
// kMaxMessageBytes states, named apart so both headers can be included.
inline constexpr uint32_t kRequesterMaxMessageBytes = 0x80000000u;
// Outstanding PSNs stay below half the PSN space so that serial
// arithmetic orders them (9.7.1): the window may be at most this.
inline constexpr uint32_t kMaxInflightPsns = 1u << 22;

struct RequesterConfig {
  uint32_t pmtu = 1024;  // 256, 512, 1024, 2048 or 4096
  // Work requests posted and not yet completed, plus completions not yet
  // drained: a power of two, 1..65536.
  uint32_t sq_depth = 256;
  uint32_t initial_psn = 0;  // masked to 24 bits
  // READ/atomic requests the responder accepts outstanding (the QP's
  // max_rd_atomic, from the peer's responder resources): 1..16.
  uint8_t max_rd_atomic = 16;
  uint8_t retry_count = 7;  // 0..7; 7 is seven retries, not infinite
  uint8_t rnr_retry = 7;    // 0..7; 7 is infinite
  // 0 disables the timer (IB timeout code 0).
  uint64_t ack_timeout_ns = LocalAckTimeoutNs(14);
  // Adaptive ACK timer (docs/roce-requester.md, "Adaptive timeout"): after
  // progress the timer is armed with an RFC 6298 estimate over measured
  // ACK/response round trips, clamped to [min_ack_timeout_ns,
  // ack_timeout_ns], and doubled on each expiry up to ack_timeout_ns.
  // Expiries shorter than ack_timeout_ns go back but are not charged to
  // retry_count. false: always ack_timeout_ns (the IB timer as is).
  bool adaptive_timeout = true;
  uint64_t min_ack_timeout_ns = 100'000;
  // PSNs outstanding (sent, not acknowledged; a READ counts the response
  // packets it asks for): 1..kMaxInflightPsns. A READ larger than the
  // window goes when nothing else is outstanding.
  uint32_t max_inflight_psns = 1024;
  // AckReq is set on the last packet of every message and on at least one
  // packet in this many, so a long message is acknowledged before the
  // window closes. 0 means max_inflight_psns / 2 (at least 1).
  uint32_t ack_request_interval = 0;
};

// Why a config is unusable, or nullptr when it is fine.
const char* RequesterConfigError(const RequesterConfig& config);

struct WorkRequest {
  enum class Kind : uint8_t {
    kSend,
    kSendImm,
    kWrite,
    kWriteImm,
    kRead,
    kCompareSwap,
    kFetchAdd,
  };
  uint64_t wr_id = 0;
  Kind kind = Kind::kSend;
  // An address in local memory that the engine understands: the payload
  // source of SEND/WRITE, the destination of READ data. Atomics return
  // their original value in the completion instead.
  uint64_t local_offset = 0;
  uint32_t length = 0;  // atomics: must be 8
  uint64_t remote_va = 0;
  uint32_t rkey = 0;
  uint32_t imm = 0;  // kSendImm, kWriteImm (host order)
  uint64_t compare = 0;
  uint64_t swap_add = 0;  // swap value (kCompareSwap) or addend (kFetchAdd)
  bool signaled = true;
};

enum class PostResult : uint8_t {
  kOk,
  kQueueFull,  // sq_depth WRs and undrained completions already held
  kInvalid,    // length > 2^31 (or beyond the PSN space), atomic length
               // != 8 or remote_va not 8-byte aligned, unknown kind
  kQpError,    // the QP is in the error state: nothing is accepted
};

// One packet to transmit. Extension headers are present exactly as
// GetOpcodeInfo(opcode) says; the fields of absent ones are zero.
struct PacketPlan {
  Opcode opcode = Opcode::kRcSendOnly;
  uint32_t psn = 0;
  bool ack_req = false;
  bool retransmission = false;  // this PSN was sent before
  uint64_t wr_id = 0;
  // RETH: WRITE FIRST/ONLY (whole message) and READ requests (the part
  // still missing when a READ is re-issued from the middle, 9.7).
  uint64_t reth_va = 0;
  uint32_t reth_rkey = 0;
  uint32_t reth_length = 0;
  // AtomicETH (va, rkey, swap/add data, compare data).
  uint64_t atomic_va = 0;
  uint32_t atomic_rkey = 0;
  uint64_t atomic_swap_add = 0;
  uint64_t atomic_compare = 0;
  uint32_t imm = 0;  // ImmDt, host order
  // The payload: `payload_length` bytes of local memory at
  // `payload_offset` (0 bytes for requests without payload).
  uint64_t payload_offset = 0;
  uint32_t payload_length = 0;
};

// A response packet for this QP, fields in host order as parsed.
struct ResponsePacket {
  uint8_t opcode = 0;  // raw BTH opcode
  uint32_t psn = 0;
  uint8_t syndrome = 0;  // AETH; ignored on READ RESPONSE MIDDLE
  uint32_t msn = 0;      // AETH; carried, not needed (completion is by PSN)
  uint32_t payload_length = 0;
  uint64_t atomic_original = 0;  // AtomicAckETH
};

enum class ResponseVerdict : uint8_t {
  kAck,            // ACK (possibly completing messages, possibly nothing new)
  kReadData,       // copy the payload to `placement` (before draining
                   // completions: the READ may have completed with it)
  kAtomicAck,      // the atomic completed with the original value
  kNakSequence,    // go-back-N from the NAK's PSN scheduled
  kNakRnr,         // the RNR wait started (or rnr_retry ran out)
  kNakFatal,       // the WR completed in error; the QP is in error
  kDuplicate,      // an older response (or a repeated NAK): ignored
  kOutOfOrder,     // a READ response after a gap: ignored (timer recovers)
  kImpliedNak,     // covers a READ/atomic whose response was lost: go back
  kUnexpected,     // nothing outstanding at that PSN, wrong opcode or
                   // position, not a response opcode: ignored
  kBadLength,      // READ response payload of the wrong size: WR fails with
                   // kLocalLengthError, QP in error
  kRetryExceeded,  // the go-back this asked for exceeded retry_count
  kQpError,        // the QP is already in the error state: ignored
};

struct Placement {
  uint64_t local_offset = 0;
  uint32_t length = 0;
};

struct Completion {
  uint64_t wr_id = 0;
  CompletionStatus status = CompletionStatus::kSuccess;
  WorkRequest::Kind kind = WorkRequest::Kind::kSend;
  uint32_t byte_len = 0;  // the WR's length when successful
  uint64_t atomic_original = 0;
};

struct RequesterCounters {
  uint64_t posted = 0;
  uint64_t post_rejected = 0;
  uint64_t packets_sent = 0;  // including retransmissions
  uint64_t packets_retransmitted = 0;
  uint64_t read_requests_reissued = 0;  // READ requests re-sent
  uint64_t timeouts = 0;
  uint64_t acks = 0;
  uint64_t read_responses = 0;  // accepted READ response packets
  uint64_t atomic_acks = 0;
  uint64_t nak_sequence = 0;
  uint64_t nak_rnr = 0;
  uint64_t nak_invalid_request = 0;
  uint64_t nak_remote_access = 0;
  uint64_t nak_remote_operational = 0;
  uint64_t nak_invalid_rd_request = 0;
  uint64_t nak_unknown = 0;
  uint64_t rnr_waits = 0;
  uint64_t implied_naks = 0;
  uint64_t duplicates = 0;
  uint64_t out_of_order = 0;
  uint64_t unexpected = 0;
  uint64_t bad_length = 0;
  uint64_t retries = 0;  // go-backs started (sequence NAK, implied, timer)
  // Adaptive timer: round-trip samples taken, and expiries of a timer
  // shorter than ack_timeout_ns (go-backs not charged to retry_count; also
  // counted in timeouts).
  uint64_t rtt_samples = 0;
  uint64_t fast_timeouts = 0;
  uint64_t window_stalls = 0;     // NextPacket held back by the window
  uint64_t rd_atomic_stalls = 0;  // held back by max_rd_atomic
  // Completions by CompletionStatus value, including unsignaled successes.
  uint64_t completions[8] = {};
};

class Requester {
 public:
  // An invalid config (RequesterConfigError) gives a requester in the
  // error state that accepts nothing.
  explicit Requester(const RequesterConfig& config);
  ~Requester();
  Requester(const Requester&) = delete;
  Requester& operator=(const Requester&) = delete;

  PostResult Post(const WorkRequest& wr);

  // The next packet to transmit, new or retransmitted, if the window,
  // max_rd_atomic and an RNR wait allow one now. Starts the ACK timer.
  bool NextPacket(uint64_t now, PacketPlan* out);

  // Every ACK, NAK, READ response and atomic ACK received for this QP.
  // `placement` is filled when the verdict is kReadData.
  ResponseVerdict OnResponse(const ResponsePacket& packet, uint64_t now,
                             Placement* placement);

  // Call when now >= NextDeadline(): a local ACK timeout goes back to the
  // oldest unacknowledged PSN (or, retries exhausted, fails the QP with
  // kRetryExceeded). Returns true when it timed out.
  bool OnTimer(uint64_t now);
  // When OnTimer or NextPacket next has something to do by time alone
  // (the ACK timer or the end of an RNR wait); UINT64_MAX when never.
  uint64_t NextDeadline() const;

  // Drains one completion (signaled WRs, and every error).
  bool PollCompletion(Completion* out);

  // Moves the QP to the error state (e.g. the engine tears it down):
  // every WR not completed is flushed.
  void SetError();

  QpState state() const { return error_ ? QpState::kError : QpState::kRts; }
  const RequesterCounters& counters() const { return counters_; }
  const RequesterConfig& config() const { return config_; }
  // The PSN the next new packet gets; the oldest unacknowledged PSN.
  uint32_t next_new_psn() const { return sent_end_psn_; }
  uint32_t oldest_unacked_psn() const { return una_psn_; }
  // WRs posted and not yet completed.
  uint32_t outstanding() const { return static_cast<uint32_t>(tail_ - head_); }
  // The ACK timeout armed next (the estimate after progress, backed off
  // after expiries); the round-trip estimate behind it.
  uint64_t ack_timeout_ns() const { return timeout_ns_; }
  const RttEstimator& rtt() const { return rtt_; }

 private:
  struct Wqe;
  enum class Stop : uint8_t { kNone, kImpliedNak };

  Wqe& SlotOf(uint64_t index);
  uint32_t PacketsOf(const WorkRequest& wr) const;
  bool IsReadOrAtomic(const Wqe& wqe) const;
  // Completes SEND/WRITE messages acknowledged up to and including
  // `acked_psn`; stops at an unfinished READ/atomic that it covers.
  Stop AcknowledgeThrough(uint32_t acked_psn, uint64_t now);
  void CompleteHead(CompletionStatus status, uint64_t atomic_original);
  void Progress(uint64_t now);
  // Go-back-N to una_psn_; false (and the QP in error) when retries are
  // exhausted. `charge`: counts against retry_count (all but an early
  // expiry of the adaptive timer).
  bool StartRetry(uint64_t now, bool charge = true);
  // Arms the ACK timer for timeout_ns_ from now (if the QP has a timer).
  void ArmTimer(uint64_t now);
  void Rewind();
  // The error state: the WR at index `target` completes with `status`,
  // every other one not completed with kFlushed.
  void Fail(CompletionStatus status, uint64_t target);
  void PushCompletion(const Completion& completion);
  // OnResponse's parts, by kind of response (psn masked to 24 bits).
  ResponseVerdict OnAck(const ResponsePacket& packet, uint32_t psn,
                        uint64_t now);
  ResponseVerdict OnRnrNak(const ResponsePacket& packet, uint32_t psn,
                           uint64_t now);
  ResponseVerdict OnNak(const ResponsePacket& packet, uint32_t psn,
                        uint64_t now);
  ResponseVerdict OnReadOrAtomicResponse(const ResponsePacket& packet,
                                         const OpcodeInfo& info, uint32_t psn,
                                         uint64_t now, Placement* placement);
  ResponseVerdict OnReadResponse(const ResponsePacket& packet,
                                 const OpcodeInfo& info, uint32_t psn, Wqe& wqe,
                                 uint64_t now, Placement* placement);

  RequesterConfig config_;
  uint32_t ack_request_interval_ = 1;
  bool error_ = false;
  std::unique_ptr<Wqe[]> wqes_;
  std::unique_ptr<Completion[]> completions_;
  uint64_t completion_head_ = 0;
  uint64_t completion_tail_ = 0;

  // WQE indices (free running): [head_, tail_) posted and not completed;
  // [head_, assigned_) have PSNs; cursor_ is the WQE of the next packet.
  uint64_t head_ = 0;
  uint64_t assigned_ = 0;
  uint64_t cursor_ = 0;
  uint64_t tail_ = 0;
  uint32_t cursor_packet_ = 0;  // packet index within the cursor's WQE

  uint32_t una_psn_ = 0;       // oldest unacknowledged PSN
  uint32_t sent_end_psn_ = 0;  // one past the highest PSN ever sent
  uint32_t packets_since_ack_req_ = 0;
  uint32_t rd_atomic_outstanding_ = 0;

  uint8_t retries_left_ = 0;
  uint8_t rnr_retries_left_ = 0;
  // A go-back to this PSN already started with no progress since: a
  // repeated NAK for it (duplicated on the wire) must not start another.
  bool retry_pending_ = false;
  uint32_t retry_psn_ = 0;

  bool timer_armed_ = false;
  uint64_t timer_deadline_ = 0;
  // The adaptive timer: the timeout armed next, and the estimate.
  uint64_t timeout_ns_ = 0;
  RttEstimator rtt_;
  // The one PSN being timed (TCP-style, one sample per round trip): sent
  // at timed_at_ as a new packet that asked for an ACK; the sample is taken
  // when una_psn_ passes it, and dropped when anything goes back (Karn:
  // the PSN may then be sent again, and its answer would be ambiguous).
  bool timing_ = false;
  uint32_t timed_psn_ = 0;
  uint64_t timed_at_ = 0;
  bool rnr_waiting_ = false;
  uint64_t rnr_until_ = 0;

  RequesterCounters counters_;
};

}  // namespace spinnic::roce

#endif  // SPINNIC_DATAPLANE_ROCE_REQUESTER_H_
