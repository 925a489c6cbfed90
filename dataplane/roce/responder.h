// The responder side of one RoCEv2 reliable-connection queue pair as pure
// logic: which request packets to execute, which are duplicates to answer
// again, which get a NAK and which are dropped (docs/roce-responder.md).
// InfiniBand Architecture Specification vol. 1, 9.7 (reliable service) and
// 9.9 (error handling), cross-checked against the Linux rxe driver.
//
// No DPDK, no allocation after construction, one lcore. The dataplane
// engine parses the frame into an RcRequest and then drives two phases:
//
//   ResponderPlan plan = responder.Check(packet);
//   if (plan.needs_commit) {
//     // Validate the memory the plan names, look for a receive WQE when
//     // plan.consumes_receive, then call exactly one of:
//     //   responder.Accept(plan)  -- checks passed; move the bytes
//     //   responder.Fail(plan, NakCode::kRemoteAccessError)
//     //   responder.Rnr(plan)     -- no receive WQE
//     // and send the ResponderReply it returns.
//   } else {
//     // Send plan.reply (kNone: nothing to send).
//   }
//
// Check only changes state for final verdicts (a NAK sent, the Error
// state); the expected PSN, the MSN, the message in progress and the
// READ/atomic records move in Accept only. A plan that is not committed is
// forgotten by the next Check (the packet counts as lost; the requester
// retries it).
#ifndef SPINNIC_DATAPLANE_ROCE_RESPONDER_H_
#define SPINNIC_DATAPLANE_ROCE_RESPONDER_H_

#include <array>
#include <cstddef>
#include <cstdint>

#include "dataplane/roce/ib_types.h"

namespace spinnic::roce {

// One request packet as the engine parsed it, host order.
struct RcRequest {
  uint8_t opcode = 0;  // BTH opcode (Opcode values)
  uint32_t psn = 0;    // 24 bits
  bool ack_req = false;
  bool solicited = false;
  // Data bytes after the extension headers, without pad and ICRC.
  uint32_t payload_length = 0;
  uint8_t pad = 0;  // BTH pad count

  bool has_reth = false;
  uint64_t reth_va = 0;
  uint32_t reth_rkey = 0;
  uint32_t reth_dma_length = 0;

  bool has_atomic_eth = false;
  uint64_t atomic_va = 0;
  uint32_t atomic_rkey = 0;
  uint64_t atomic_swap_add = 0;
  uint64_t atomic_compare = 0;

  bool has_immediate = false;
  uint32_t immediate = 0;  // as on the wire (ImmDt is opaque)

  bool has_invalidate = false;  // IETH (SEND ... with invalidate)
  uint32_t invalidate_rkey = 0;
};

struct ResponderConfig {
  uint32_t pmtu = 1024;       // 256, 512, 1024, 2048 or 4096
  uint32_t initial_epsn = 0;  // the requester's starting PSN (CM REQ)
  // Responder resources: how many READ/atomic requests are remembered for
  // duplicates (max_dest_rd_atomic, 1..16).
  uint32_t max_dest_rd_atomic = 16;
  uint8_t min_rnr_timer = 12;  // RNR NAK timer code (table 45), 0.64 ms
  // Unsolicited ACK after this many accepted SEND/WRITE packets (>= 1).
  uint32_t ack_every = 16;
  // Remote operations the QP allows (ibv qp_access_flags): kAccessRemote*.
  uint32_t qp_access =
      kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
};

inline constexpr uint32_t kMaxDestRdAtomic = 16;
// Largest RDMA / message length (2^31 bytes, as rxe check_length enforces).
inline constexpr uint64_t kMaxMessageBytes = uint64_t{1} << 31;

// Returns nullptr when `config` is usable as is, else why not. The
// constructor clamps an unusable config to the nearest usable one.
const char* ValidateResponderConfig(const ResponderConfig& config);

enum class ResponderVerdict : uint8_t {
  kExecute,    // new, in sequence, well formed: do plan.action
  kDuplicate,  // earlier PSN: answer again (plan.action / plan.reply)
  kNak,        // send plan.reply (a NAK); nothing executed
  kDrop,       // nothing to send; plan.drop_reason says why
};

enum class ResponderAction : uint8_t {
  kNone,
  kSend,          // copy payload to receive buffer offset plan.send_offset
  kWrite,         // copy payload to [plan.va, plan.va + plan.length)
  kRead,          // READ responses for [va, va + length) from response_psn
  kCompareSwap,   // 8 bytes at plan.va
  kFetchAdd,      // 8 bytes at plan.va
  kReplayRead,    // duplicate READ: respond again, nothing is re-counted
  kReplayAtomic,  // duplicate atomic: plan.reply carries the saved value
  kAckAgain,      // duplicate SEND/WRITE: plan.reply re-acknowledges
};

enum class ResponderDropReason : uint8_t {
  kNone,
  kQpNotReady,         // Reset or Init: the QP takes no requests yet
  kQpError,            // Error state: everything is dropped
  kNakOutstanding,     // PSN ahead after a sequence/RNR NAK, before ePSN came
  kWrongTransport,     // not an RC opcode (UC/UD/RD/CNP...)
  kNotARequest,        // RC response/ACK opcode handed to the responder
  kDuplicateNoRecord,  // duplicate READ/atomic older than the records
  kDuplicateReadMismatch,  // duplicate READ outside its recorded request
  kCount,
};

enum class ResponderReplyKind : uint8_t {
  kNone,
  kAck,           // RC ACKNOWLEDGE, syndrome AethAck()
  kNak,           // RC ACKNOWLEDGE carrying a NAK syndrome
  kRnrNak,        // RC ACKNOWLEDGE carrying an RNR NAK syndrome
  kReadResponse,  // READ RESPONSE packets (FIRST..LAST or ONLY)
  kAtomicAck,     // ATOMIC ACKNOWLEDGE with original_value
};

// What to put on the wire now.
struct ResponderReply {
  ResponderReplyKind kind = ResponderReplyKind::kNone;
  uint32_t psn = 0;      // BTH PSN (the first one for READ responses)
  uint32_t msn = 0;      // AETH MSN
  uint8_t syndrome = 0;  // full AETH syndrome byte
  // kReadResponse: `packets` responses, PSN psn..psn+packets-1, carrying
  // [va, va + length) under rkey (one ONLY with no payload when 0 bytes).
  uint64_t va = 0;
  uint32_t rkey = 0;
  uint32_t length = 0;
  uint32_t packets = 0;
  uint64_t original_value = 0;  // kAtomicAck
};

struct ResponderPlan {
  ResponderVerdict verdict = ResponderVerdict::kDrop;
  ResponderAction action = ResponderAction::kNone;
  ResponderDropReason drop_reason = ResponderDropReason::kNone;
  NakCode nak = NakCode::kPsnSequenceError;  // kNak only
  // True for kExecute and for kDuplicate/kReplayRead: the engine must call
  // exactly one of Accept, Fail or Rnr with this plan. Otherwise `reply` is
  // final and Check has already counted it.
  bool needs_commit = false;

  uint8_t opcode = 0;
  uint32_t psn = 0;
  bool starts_message = false;
  bool ends_message = false;
  // SEND FIRST/ONLY, WRITE LAST/ONLY with immediate: needs a receive WQE
  // (Rnr when there is none).
  bool consumes_receive = false;
  bool ack_req = false;
  bool solicited = false;
  bool has_immediate = false;
  uint32_t immediate = 0;
  bool has_invalidate = false;
  uint32_t invalidate_rkey = 0;

  // kWrite: this packet's bytes go to [va, va + length) under rkey.
  // kRead / kReplayRead: the bytes to read. Atomics: the 8-byte target.
  uint64_t va = 0;
  uint32_t rkey = 0;
  uint32_t length = 0;
  // kWrite FIRST/ONLY, kRead, kReplayRead, atomics: validate the whole
  // range [range_va, range_va + range_length) under rkey once (false for a
  // zero-length RDMA, which needs no valid R_Key: 9.4, rxe check_rkey). For a
  // WRITE the range is the whole message (the RETH), set on FIRST/ONLY.
  bool validate_range = false;
  uint64_t range_va = 0;
  uint32_t range_length = 0;
  // kSend: byte offset of this packet's payload in the receive buffer.
  uint64_t send_offset = 0;
  // kRead / kReplayRead: first response PSN and how many responses.
  uint32_t response_psn = 0;
  uint32_t response_packets = 0;
  // Atomics.
  uint64_t swap_add = 0;
  uint64_t compare = 0;

  ResponderReply reply;  // final verdicts only

  uint64_t ticket = 0;  // ties a commit to its Check
};

struct ResponderCounters {
  uint64_t accepted = 0;           // packets executed (Accept of kExecute)
  uint64_t messages = 0;           // messages completed (the MSN, unwrapped)
  uint64_t duplicates = 0;         // every duplicate PSN seen
  uint64_t acks_again = 0;         // duplicate SEND/WRITE re-ACKs
  uint64_t read_replays = 0;       // duplicate READs re-executed (Accept)
  uint64_t atomic_replays = 0;     // duplicate atomics answered from a record
  uint64_t acks = 0;               // ACKs from Accept/FlushAck (not re-ACKs)
  std::array<uint64_t, 5> naks{};  // indexed by NakCode
  uint64_t rnr_naks = 0;
  std::array<uint64_t, static_cast<std::size_t>(ResponderDropReason::kCount)>
      drops{};
  uint64_t errors_entered = 0;  // transitions to QpState::kError
  uint64_t bad_commits = 0;     // Accept/Fail/Rnr with a stale/wrong plan
};

class Responder {
 public:
  explicit Responder(const ResponderConfig& config);

  // Starts over (modify QP to Reset, then set up again): state kReset,
  // ePSN, MSN, records, message and ACK state from `config`; counters kept.
  void Reset(const ResponderConfig& config);
  // Modify QP. Requests are taken in kRtr and kRts only.
  void SetState(QpState state);

  ResponderPlan Check(const RcRequest& packet);
  // `atomic_original` is the 8 bytes the engine found at the target before
  // an atomic (ignored for other actions): it is kept for duplicates.
  ResponderReply Accept(const ResponderPlan& plan,
                        uint64_t atomic_original = 0);
  // The engine's memory check failed (R_Key unknown, out of bounds, rights
  // missing: kRemoteAccessError; no room in the receive buffer:
  // kInvalidRequest; a broken receive WQE: kRemoteOperationalError). Class
  // A/C errors: the NAK is sent and the QP enters the Error state.
  ResponderReply Fail(const ResponderPlan& plan, NakCode code);
  // No receive WQE for a plan with consumes_receive: RNR NAK for the
  // packet's PSN; nothing advances, so its retry is accepted later.
  ResponderReply Rnr(const ResponderPlan& plan);
  // Idle hook: the coalesced ACK for accepted packets not yet
  // acknowledged, if any.
  ResponderReply FlushAck();

  QpState state() const { return state_; }
  uint32_t expected_psn() const { return epsn_; }
  uint32_t msn() const { return msn_; }
  // Packets accepted since the last ACK/READ response/NAK that covers them.
  uint32_t unacknowledged() const { return unacked_; }
  // A PSN sequence NAK or RNR NAK was sent and ePSN has not arrived since.
  bool nak_outstanding() const { return nak_outstanding_; }
  bool message_in_progress() const { return in_progress_ != InProgress::kNone; }
  const ResponderConfig& config() const { return config_; }
  const ResponderCounters& counters() const { return counters_; }

 private:
  enum class InProgress : uint8_t { kNone, kSend, kWrite };
  enum class RecordKind : uint8_t { kFree, kRead, kAtomic };
  struct Record {
    RecordKind kind = RecordKind::kFree;
    uint32_t first_psn = 0;
    uint32_t last_psn = 0;
    uint64_t va = 0;
    uint32_t rkey = 0;
    uint32_t length = 0;
    uint64_t original_value = 0;
  };

  ResponderPlan CheckNew(const RcRequest& packet, const OpcodeInfo& info);
  // CheckNew's parts: the opcode sequence, the QP's access, the headers
  // and the lengths are valid; the action and its memory range (false:
  // an invalid request).
  bool IsValidNew(const RcRequest& packet, const OpcodeInfo& info) const;
  bool PlanAction(const RcRequest& packet, const OpcodeInfo& info,
                  ResponderPlan* plan) const;
  ResponderPlan CheckDuplicate(const RcRequest& packet, const OpcodeInfo& info);
  ResponderPlan Drop(const RcRequest& packet, ResponderDropReason reason);
  ResponderPlan InvalidRequest(const RcRequest& packet);
  ResponderReply Nak(uint32_t psn, NakCode code);
  ResponderReply AckReply(uint32_t psn) const;
  void EnterError();
  bool TakeTicket(const ResponderPlan& plan);
  const Record* FindRecord(uint32_t psn) const;
  uint32_t ReadPackets(uint32_t length) const;

  ResponderConfig config_;
  QpState state_ = QpState::kReset;
  uint32_t epsn_ = 0;
  uint32_t msn_ = 0;
  bool nak_outstanding_ = false;
  uint32_t unacked_ = 0;

  InProgress in_progress_ = InProgress::kNone;
  uint64_t message_offset_ = 0;  // bytes of the current message so far
  uint64_t write_va_ = 0;        // current WRITE's RETH
  uint32_t write_rkey_ = 0;
  uint32_t write_length_ = 0;

  std::array<Record, kMaxDestRdAtomic> records_{};
  uint32_t next_record_ = 0;

  uint64_t next_ticket_ = 1;
  uint64_t pending_ticket_ = 0;  // 0: no plan awaits a commit

  ResponderCounters counters_;
};

// Names for logs and counters ("execute", "psn_sequence_error", ...).
const char* Describe(ResponderVerdict verdict);
const char* Describe(ResponderAction action);
const char* Describe(ResponderDropReason reason);
const char* Describe(ResponderReplyKind kind);
const char* ResponderNakName(NakCode code);

}  // namespace spinnic::roce

#endif  // SPINNIC_DATAPLANE_ROCE_RESPONDER_H_
