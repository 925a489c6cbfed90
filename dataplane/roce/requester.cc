#include "dataplane/roce/requester.h"

#include <algorithm>
#include <limits>

namespace spinnic::roce {

namespace {

using Kind = WorkRequest::Kind;

// One message takes at most this many PSNs, so that it alone stays below
// half the PSN space (9.7.1) even at PMTU 256 and 2^31 bytes.
constexpr uint32_t kMaxMessagePsns = (1u << 23) - 1;

bool IsSendKind(Kind kind) {
  return kind == Kind::kSend || kind == Kind::kSendImm;
}
bool IsWriteKind(Kind kind) {
  return kind == Kind::kWrite || kind == Kind::kWriteImm;
}
bool IsAtomicKind(Kind kind) {
  return kind == Kind::kCompareSwap || kind == Kind::kFetchAdd;
}
bool IsPowerOfTwo(uint32_t value) {
  return value != 0 && (value & (value - 1)) == 0;
}

Opcode SendOrWriteOpcode(Kind kind, bool first, bool last) {
  const bool imm = kind == Kind::kSendImm || kind == Kind::kWriteImm;
  if (IsSendKind(kind)) {
    if (first && last) {
      return imm ? Opcode::kRcSendOnlyImm : Opcode::kRcSendOnly;
    }
    if (first) return Opcode::kRcSendFirst;
    if (last) return imm ? Opcode::kRcSendLastImm : Opcode::kRcSendLast;
    return Opcode::kRcSendMiddle;
  }
  if (first && last) {
    return imm ? Opcode::kRcWriteOnlyImm : Opcode::kRcWriteOnly;
  }
  if (first) return Opcode::kRcWriteFirst;
  if (last) return imm ? Opcode::kRcWriteLastImm : Opcode::kRcWriteLast;
  return Opcode::kRcWriteMiddle;
}

}  // namespace

struct Requester::Wqe {
  WorkRequest wr;
  uint32_t packets = 1;  // PSNs the message takes
  uint32_t first_psn = 0;
  uint32_t last_psn = 0;
  // Counted in rd_atomic_outstanding_ (a READ/atomic sent at least once).
  bool holds_rd_atomic = false;
};

const char* RequesterConfigError(const RequesterConfig& config) {
  if (PathMtuCode(config.pmtu) == 0) {
    return "pmtu must be 256, 512, 1024, 2048 or 4096";
  }
  if (!IsPowerOfTwo(config.sq_depth) || config.sq_depth > 65536) {
    return "sq_depth must be a power of two up to 65536";
  }
  if (config.max_rd_atomic < 1 || config.max_rd_atomic > 16) {
    return "max_rd_atomic must be 1..16";
  }
  if (config.retry_count > 7) return "retry_count must be 0..7";
  if (config.rnr_retry > 7) return "rnr_retry must be 0..7";
  if (config.max_inflight_psns < 1 ||
      config.max_inflight_psns > kMaxInflightPsns) {
    return "max_inflight_psns must be 1..2^22";
  }
  return nullptr;
}

Requester::Requester(const RequesterConfig& config) : config_(config) {
  if (RequesterConfigError(config_) != nullptr) {
    error_ = true;
    config_.sq_depth = 1;
    config_.pmtu = 1024;
  }
  config_.initial_psn &= kPsnMask;
  ack_request_interval_ =
      config_.ack_request_interval != 0
          ? config_.ack_request_interval
          : std::max<uint32_t>(1, config_.max_inflight_psns / 2);
  wqes_ = std::make_unique<Wqe[]>(config_.sq_depth);
  completions_ = std::make_unique<Completion[]>(config_.sq_depth);
  una_psn_ = config_.initial_psn;
  sent_end_psn_ = config_.initial_psn;
  retries_left_ = config_.retry_count;
  rnr_retries_left_ = config_.rnr_retry;
  timeout_ns_ = config_.ack_timeout_ns;
  // The negotiated timeout is both the first value and the ceiling; G = 0
  // (the responder's ACK coalescing shows up in the samples and their
  // variance, and the floor covers the rest).
  rtt_ = RttEstimator(config_.ack_timeout_ns, config_.min_ack_timeout_ns,
                      config_.ack_timeout_ns, 0);
}

Requester::~Requester() = default;

void Requester::ArmTimer(uint64_t now) {
  // During an RNR wait nothing is outstanding that the responder could
  // still answer: the NAK acknowledged everything before its PSN and asked
  // for that one again after the wait. The packet that ends the wait arms
  // the timer (NextPacket); an expiry before would go back to packets the
  // wait keeps from being sent and charge retry_count for nothing, until
  // the QP failed while the responder was only waiting for a receive.
  if (config_.ack_timeout_ns == 0 || rnr_waiting_) return;
  timer_armed_ = true;
  timer_deadline_ = now + timeout_ns_;
}

Requester::Wqe& Requester::SlotOf(uint64_t index) {
  return wqes_[index & (config_.sq_depth - 1)];
}

uint32_t Requester::PacketsOf(const WorkRequest& wr) const {
  if (wr.kind == Kind::kRead || IsSendKind(wr.kind) || IsWriteKind(wr.kind)) {
    if (wr.length == 0) return 1;
    return static_cast<uint32_t>((uint64_t{wr.length} + config_.pmtu - 1) /
                                 config_.pmtu);
  }
  return 1;
}

bool Requester::IsReadOrAtomic(const Wqe& wqe) const {
  return wqe.wr.kind == Kind::kRead || IsAtomicKind(wqe.wr.kind);
}

PostResult Requester::Post(const WorkRequest& wr) {
  if (error_) {
    ++counters_.post_rejected;
    return PostResult::kQpError;
  }
  const bool known = IsSendKind(wr.kind) || IsWriteKind(wr.kind) ||
                     wr.kind == Kind::kRead || IsAtomicKind(wr.kind);
  bool valid = known && wr.length <= kRequesterMaxMessageBytes;
  if (valid && IsAtomicKind(wr.kind)) {
    // Atomics operate on one naturally aligned 64-bit word (9.4).
    valid = wr.length == 8 && (wr.remote_va & 7) == 0;
  }
  if (valid) valid = PacketsOf(wr) <= kMaxMessagePsns;
  if (!valid) {
    ++counters_.post_rejected;
    return PostResult::kInvalid;
  }
  // Every WR held and every completion not yet drained share sq_depth, so
  // the completion ring can never overflow.
  if ((tail_ - head_) + (completion_tail_ - completion_head_) >=
      config_.sq_depth) {
    ++counters_.post_rejected;
    return PostResult::kQueueFull;
  }
  Wqe& wqe = SlotOf(tail_);
  wqe = Wqe{};
  wqe.wr = wr;
  wqe.packets = PacketsOf(wr);
  ++tail_;
  ++counters_.posted;
  return PostResult::kOk;
}

bool Requester::NextPacket(uint64_t now, PacketPlan* out) {
  if (error_) return false;
  if (rnr_waiting_) {
    if (now < rnr_until_) return false;
    rnr_waiting_ = false;
  }
  if (cursor_ == tail_) return false;
  Wqe& wqe = SlotOf(cursor_);
  const bool fresh = cursor_ == assigned_;
  const uint32_t psn =
      fresh ? sent_end_psn_ : PsnAdd(wqe.first_psn, cursor_packet_);
  const bool read = wqe.wr.kind == Kind::kRead;
  // A READ request asks for every response packet still missing.
  const uint32_t cost = read ? wqe.packets - cursor_packet_ : 1;
  const bool retransmission = PsnBefore(psn, sent_end_psn_);
  if (!retransmission) {
    const uint32_t inflight =
        static_cast<uint32_t>(PsnDiff(sent_end_psn_, una_psn_));
    if (inflight > 0 && uint64_t{inflight} + cost > config_.max_inflight_psns) {
      ++counters_.window_stalls;
      return false;
    }
    if (IsReadOrAtomic(wqe) && !wqe.holds_rd_atomic &&
        rd_atomic_outstanding_ >= config_.max_rd_atomic) {
      ++counters_.rd_atomic_stalls;
      return false;
    }
  }
  if (fresh) {
    wqe.first_psn = psn;
    wqe.last_psn = PsnAdd(psn, wqe.packets - 1);
    ++assigned_;
  }
  if (IsReadOrAtomic(wqe) && !wqe.holds_rd_atomic) {
    wqe.holds_rd_atomic = true;
    ++rd_atomic_outstanding_;
  }

  PacketPlan plan;
  plan.psn = psn;
  plan.retransmission = retransmission;
  plan.wr_id = wqe.wr.wr_id;
  const uint64_t offset = uint64_t{cursor_packet_} * config_.pmtu;
  bool ends_message = true;
  if (read) {
    plan.opcode = Opcode::kRcReadRequest;
    plan.reth_va = wqe.wr.remote_va + offset;
    plan.reth_rkey = wqe.wr.rkey;
    plan.reth_length = static_cast<uint32_t>(wqe.wr.length - offset);
    if (retransmission) ++counters_.read_requests_reissued;
  } else if (IsAtomicKind(wqe.wr.kind)) {
    plan.opcode = wqe.wr.kind == Kind::kCompareSwap ? Opcode::kRcCompareSwap
                                                    : Opcode::kRcFetchAdd;
    plan.atomic_va = wqe.wr.remote_va;
    plan.atomic_rkey = wqe.wr.rkey;
    plan.atomic_swap_add = wqe.wr.swap_add;
    plan.atomic_compare =
        wqe.wr.kind == Kind::kCompareSwap ? wqe.wr.compare : 0;
  } else {
    const bool first = cursor_packet_ == 0;
    ends_message = cursor_packet_ + 1 == wqe.packets;
    plan.opcode = SendOrWriteOpcode(wqe.wr.kind, first, ends_message);
    const OpcodeInfo& info = GetOpcodeInfo(plan.opcode);
    if (info.has(kHasReth)) {
      plan.reth_va = wqe.wr.remote_va;
      plan.reth_rkey = wqe.wr.rkey;
      plan.reth_length = wqe.wr.length;
    }
    if (info.has(kHasImmDt)) plan.imm = wqe.wr.imm;
    plan.payload_offset = wqe.wr.local_offset + offset;
    plan.payload_length = static_cast<uint32_t>(
        std::min<uint64_t>(config_.pmtu, wqe.wr.length - offset));
  }
  const uint32_t end_psn = PsnAdd(psn, cost);
  ++packets_since_ack_req_;
  // The last packet of a go-back asks too, so the retransmission round is
  // answered even when it ends inside a message.
  plan.ack_req = ends_message ||
                 packets_since_ack_req_ >= ack_request_interval_ ||
                 (retransmission && end_psn == sent_end_psn_);
  if (plan.ack_req) packets_since_ack_req_ = 0;

  if (read || IsAtomicKind(wqe.wr.kind) || cursor_packet_ + 1 == wqe.packets) {
    ++cursor_;
    cursor_packet_ = 0;
  } else {
    ++cursor_packet_;
  }
  if (PsnDiff(end_psn, sent_end_psn_) > 0) sent_end_psn_ = end_psn;
  ++counters_.packets_sent;
  if (retransmission) ++counters_.packets_retransmitted;
  // Time a new packet the responder answers at once (AckReq), one at a
  // time. Its first PSN: a READ's first response packet answers it.
  if (config_.adaptive_timeout && !timing_ && !retransmission && plan.ack_req) {
    timing_ = true;
    timed_psn_ = psn;
    timed_at_ = now;
  }
  if (!timer_armed_) ArmTimer(now);
  *out = plan;
  return true;
}

void Requester::PushCompletion(const Completion& completion) {
  // Post() keeps WRs plus undrained completions within sq_depth, so this
  // cannot be full; guard anyway rather than overwrite.
  if (completion_tail_ - completion_head_ >= config_.sq_depth) return;
  completions_[completion_tail_ & (config_.sq_depth - 1)] = completion;
  ++completion_tail_;
}

bool Requester::PollCompletion(Completion* out) {
  if (completion_head_ == completion_tail_) return false;
  *out = completions_[completion_head_ & (config_.sq_depth - 1)];
  ++completion_head_;
  return true;
}

void Requester::CompleteHead(CompletionStatus status,
                             uint64_t atomic_original) {
  Wqe& wqe = SlotOf(head_);
  if (wqe.holds_rd_atomic) {
    wqe.holds_rd_atomic = false;
    --rd_atomic_outstanding_;
  }
  ++counters_.completions[static_cast<uint8_t>(status) & 7];
  if (wqe.wr.signaled || status != CompletionStatus::kSuccess) {
    Completion completion;
    completion.wr_id = wqe.wr.wr_id;
    completion.status = status;
    completion.kind = wqe.wr.kind;
    completion.byte_len =
        status == CompletionStatus::kSuccess ? wqe.wr.length : 0;
    completion.atomic_original = atomic_original;
    PushCompletion(completion);
  }
  ++head_;
  if (assigned_ < head_) assigned_ = head_;
  if (cursor_ < head_) {
    cursor_ = head_;
    cursor_packet_ = 0;
  }
}

void Requester::Progress(uint64_t now) {
  // Forward progress restores both retry budgets (as rxe does; a retry
  // budget is for one stall, not for the life of the QP).
  retries_left_ = config_.retry_count;
  rnr_retries_left_ = config_.rnr_retry;
  retry_pending_ = false;
  if (timing_ && PsnBefore(timed_psn_, una_psn_)) {
    timing_ = false;
    // A clock that went backwards gives no sample.
    if (now >= timed_at_) {
      rtt_.OnSample(now - timed_at_);
      ++counters_.rtt_samples;
    }
  }
  // Progress resets the backoff: the estimate (or the negotiated timeout
  // before any sample, or with the fixed timer).
  if (config_.adaptive_timeout) timeout_ns_ = rtt_.rto_ns();
  // A late ACK can overtake a go-back: never resend what is acknowledged.
  if (cursor_ == head_ && head_ < assigned_) {
    const int32_t acked_packets = PsnDiff(una_psn_, SlotOf(head_).first_psn);
    if (acked_packets > static_cast<int32_t>(cursor_packet_)) {
      cursor_packet_ = static_cast<uint32_t>(acked_packets);
    }
  }
  if (una_psn_ != sent_end_psn_ && config_.ack_timeout_ns != 0) {
    ArmTimer(now);
  } else {
    timer_armed_ = false;
  }
}

Requester::Stop Requester::AcknowledgeThrough(uint32_t acked_psn,
                                              uint64_t now) {
  if (PsnBefore(acked_psn, una_psn_)) return Stop::kNone;
  const uint32_t una_before = una_psn_;
  Stop stop = Stop::kNone;
  while (head_ < assigned_ && !PsnBefore(acked_psn, una_psn_)) {
    Wqe& wqe = SlotOf(head_);
    if (IsReadOrAtomic(wqe)) {
      // The responder has gone past a READ/atomic whose response we still
      // lack at una_psn_: that response was lost (an implied NAK, 9.7).
      // Inside the READ's own PSNs it is only a response out of order.
      if (!PsnBefore(acked_psn, wqe.last_psn)) stop = Stop::kImpliedNak;
      break;
    }
    if (PsnBefore(acked_psn, wqe.last_psn)) {
      una_psn_ = PsnAdd(acked_psn, 1);
      break;
    }
    una_psn_ = PsnAdd(wqe.last_psn, 1);
    CompleteHead(CompletionStatus::kSuccess, 0);
  }
  if (una_psn_ != una_before) Progress(now);
  return stop;
}

void Requester::Rewind() {
  // Karn: what is resent from here gives no round-trip sample.
  timing_ = false;
  cursor_ = head_;
  cursor_packet_ = 0;
  if (head_ < assigned_) {
    cursor_packet_ =
        static_cast<uint32_t>(PsnDiff(una_psn_, SlotOf(head_).first_psn));
  }
}

bool Requester::StartRetry(uint64_t now, bool charge) {
  ++counters_.retries;
  if (charge) {
    if (retries_left_ == 0) {
      Fail(CompletionStatus::kRetryExceeded, head_);
      return false;
    }
    --retries_left_;
  }
  Rewind();
  retry_pending_ = true;
  ArmTimer(now);
  return true;
}

void Requester::Fail(CompletionStatus status, uint64_t target) {
  error_ = true;
  while (head_ < tail_) {
    CompleteHead(head_ == target ? status : CompletionStatus::kFlushed, 0);
  }
  assigned_ = cursor_ = head_;
  cursor_packet_ = 0;
  rd_atomic_outstanding_ = 0;
  timer_armed_ = false;
  rnr_waiting_ = false;
}

void Requester::SetError() {
  if (error_) return;
  Fail(CompletionStatus::kFlushed, tail_);
}

bool Requester::OnTimer(uint64_t now) {
  if (error_ || rnr_waiting_ || !timer_armed_ || now < timer_deadline_) {
    return false;
  }
  timer_armed_ = false;
  if (una_psn_ == sent_end_psn_) return false;
  ++counters_.timeouts;
  // A timeout always goes back, even when a NAK's go-back is pending: that
  // go-back's packets may themselves have been lost.
  retry_pending_ = false;
  // An adaptive timer shorter than the negotiated timeout is our own early
  // guess: it goes back, but is charged to retry_count only once it has
  // backed off to the negotiated timeout. The client thus still sees at
  // least retry_count + 1 negotiated timeouts of silence before
  // kRetryExceeded, as IB promises it.
  const bool charge = timeout_ns_ >= config_.ack_timeout_ns;
  if (!charge) ++counters_.fast_timeouts;
  timeout_ns_ = timeout_ns_ > config_.ack_timeout_ns / 2
                    ? config_.ack_timeout_ns
                    : 2 * timeout_ns_;
  StartRetry(now, charge);
  return true;
}

uint64_t Requester::NextDeadline() const {
  uint64_t deadline = std::numeric_limits<uint64_t>::max();
  if (error_) return deadline;
  if (timer_armed_) deadline = timer_deadline_;
  if (rnr_waiting_) deadline = std::min(deadline, rnr_until_);
  return deadline;
}

ResponseVerdict Requester::OnResponse(const ResponsePacket& packet,
                                      uint64_t now, Placement* placement) {
  if (error_) return ResponseVerdict::kQpError;
  const OpcodeInfo& info = GetOpcodeInfo(packet.opcode);
  const uint32_t psn = packet.psn & kPsnMask;
  if (info.kind != OpKind::kAck && info.kind != OpKind::kReadResponse &&
      info.kind != OpKind::kAtomicAck) {
    ++counters_.unexpected;
    return ResponseVerdict::kUnexpected;
  }
  // Only PSNs we have sent can be answered.
  if (!PsnBefore(psn, sent_end_psn_)) {
    ++counters_.unexpected;
    return ResponseVerdict::kUnexpected;
  }
  if (info.kind == OpKind::kAck) return OnAck(packet, psn, now);
  return OnReadOrAtomicResponse(packet, info, psn, now, placement);
}

ResponseVerdict Requester::OnAck(const ResponsePacket& packet, uint32_t psn,
                                 uint64_t now) {
  const uint8_t syndrome_type = packet.syndrome & kAethTypeMask;
  if (syndrome_type == kAethAck) {
    ++counters_.acks;
    if (PsnBefore(psn, una_psn_)) {
      ++counters_.duplicates;
      return ResponseVerdict::kDuplicate;
    }
    if (AcknowledgeThrough(psn, now) == Stop::kImpliedNak) {
      ++counters_.implied_naks;
      if (retry_pending_) return ResponseVerdict::kAck;
      return StartRetry(now) ? ResponseVerdict::kImpliedNak
                             : ResponseVerdict::kRetryExceeded;
    }
    return ResponseVerdict::kAck;
  }
  if (PsnBefore(psn, una_psn_)) {
    ++counters_.duplicates;
    return ResponseVerdict::kDuplicate;
  }
  if (syndrome_type == kAethRnrNak) return OnRnrNak(packet, psn, now);
  if (syndrome_type != kAethNak) {
    ++counters_.unexpected;
    return ResponseVerdict::kUnexpected;
  }
  return OnNak(packet, psn, now);
}

ResponseVerdict Requester::OnRnrNak(const ResponsePacket& packet, uint32_t psn,
                                    uint64_t now) {
  const uint32_t before_psn = PsnAdd(psn, kPsnMask);  // psn - 1
  ++counters_.nak_rnr;
  // A copy of the NAK that started this wait.
  if (rnr_waiting_ && psn == una_psn_) {
    ++counters_.duplicates;
    return ResponseVerdict::kDuplicate;
  }
  // The NAK acknowledges everything before its PSN (9.7).
  AcknowledgeThrough(before_psn, now);
  if (config_.rnr_retry != 7) {
    if (rnr_retries_left_ == 0) {
      Fail(CompletionStatus::kRnrRetryExceeded, head_);
      return ResponseVerdict::kNakRnr;
    }
    --rnr_retries_left_;
  }
  ++counters_.rnr_waits;
  rnr_waiting_ = true;
  rnr_until_ = now + RnrWaitNs(packet.syndrome);
  timer_armed_ = false;
  retry_pending_ = false;
  Rewind();
  return ResponseVerdict::kNakRnr;
}

ResponseVerdict Requester::OnNak(const ResponsePacket& packet, uint32_t psn,
                                 uint64_t now) {
  const uint32_t before_psn = PsnAdd(psn, kPsnMask);  // psn - 1
  const uint8_t code = packet.syndrome & kAethValueMask;
  if (code == static_cast<uint8_t>(NakCode::kPsnSequenceError)) {
    ++counters_.nak_sequence;
    const uint32_t waiting_psn = una_psn_;  // what an RNR wait resends
    AcknowledgeThrough(before_psn, now);
    if (rnr_waiting_) {
      // The responder NAKs the packets that followed the one it had no
      // receive for (rxe sends an RNR NAK and then this, for the same
      // PSN): the RNR wait resends from there already. A second go-back
      // would conflict with it and cost a retry every wait.
      if (psn == waiting_psn) {
        ++counters_.duplicates;
        return ResponseVerdict::kDuplicate;
      }
      // It took the RNR NAKed packet after all: the wait is moot, and
      // this go-back (with the ACK timer) replaces it.
      rnr_waiting_ = false;
      retry_pending_ = false;
    }
    // One go-back per stall: a repeated NAK (a copy, or one answering
    // packets of the same round) waits for progress or the timer.
    if (retry_pending_) {
      ++counters_.duplicates;
      return ResponseVerdict::kDuplicate;
    }
    return StartRetry(now) ? ResponseVerdict::kNakSequence
                           : ResponseVerdict::kRetryExceeded;
  }
  CompletionStatus status = CompletionStatus::kRemoteOperationalError;
  switch (static_cast<NakCode>(code)) {
    case NakCode::kInvalidRequest:
      ++counters_.nak_invalid_request;
      status = CompletionStatus::kRemoteInvalidRequest;
      break;
    case NakCode::kRemoteAccessError:
      ++counters_.nak_remote_access;
      status = CompletionStatus::kRemoteAccessError;
      break;
    case NakCode::kRemoteOperationalError:
      ++counters_.nak_remote_operational;
      break;
    case NakCode::kInvalidRdRequest:
      ++counters_.nak_invalid_rd_request;
      status = CompletionStatus::kRemoteInvalidRequest;
      break;
    default:
      ++counters_.nak_unknown;
      break;
  }
  AcknowledgeThrough(before_psn, now);
  // The NAKed WR gets the status; a READ before it still lacking data
  // (its response lost) is flushed with the rest.
  uint64_t target = head_;
  while (target < assigned_ && PsnBefore(SlotOf(target).last_psn, psn)) {
    ++target;
  }
  Fail(status, target);
  return ResponseVerdict::kNakFatal;
}

ResponseVerdict Requester::OnReadOrAtomicResponse(const ResponsePacket& packet,
                                                  const OpcodeInfo& info,
                                                  uint32_t psn, uint64_t now,
                                                  Placement* placement) {
  const uint8_t syndrome_type = packet.syndrome & kAethTypeMask;
  const uint32_t before_psn = PsnAdd(psn, kPsnMask);  // psn - 1
  if (PsnBefore(psn, una_psn_)) {
    ++counters_.duplicates;
    return ResponseVerdict::kDuplicate;
  }
  if (info.has(kHasAeth) && syndrome_type != kAethAck) {
    ++counters_.unexpected;
    return ResponseVerdict::kUnexpected;
  }
  // A READ response or atomic ACK acknowledges the SEND/WRITE messages
  // before it (9.7: responses come back in request order).
  if (AcknowledgeThrough(before_psn, now) == Stop::kImpliedNak) {
    ++counters_.implied_naks;
    if (retry_pending_) {
      ++counters_.duplicates;
      return ResponseVerdict::kDuplicate;
    }
    return StartRetry(now) ? ResponseVerdict::kImpliedNak
                           : ResponseVerdict::kRetryExceeded;
  }
  if (head_ == assigned_) {
    ++counters_.unexpected;
    return ResponseVerdict::kUnexpected;
  }
  Wqe& wqe = SlotOf(head_);

  if (info.kind == OpKind::kAtomicAck) {
    if (!IsAtomicKind(wqe.wr.kind) || psn != wqe.first_psn) {
      ++counters_.unexpected;
      return ResponseVerdict::kUnexpected;
    }
    ++counters_.atomic_acks;
    una_psn_ = PsnAdd(psn, 1);
    CompleteHead(CompletionStatus::kSuccess, packet.atomic_original);
    Progress(now);
    return ResponseVerdict::kAtomicAck;
  }
  return OnReadResponse(packet, info, psn, wqe, now, placement);
}

ResponseVerdict Requester::OnReadResponse(const ResponsePacket& packet,
                                          const OpcodeInfo& info, uint32_t psn,
                                          Wqe& wqe, uint64_t now,
                                          Placement* placement) {
  if (wqe.wr.kind != Kind::kRead) {
    ++counters_.unexpected;
    return ResponseVerdict::kUnexpected;
  }
  if (psn != una_psn_) {
    // An earlier response packet is missing; rxe drops these too and lets
    // the timer (or an implied NAK) ask again.
    ++counters_.out_of_order;
    return ResponseVerdict::kOutOfOrder;
  }
  const bool last = psn == wqe.last_psn;
  // Position must fit; FIRST/ONLY may also start mid-message, answering a
  // READ re-issued from there (9.7).
  if (info.ends_message() != last) {
    ++counters_.unexpected;
    return ResponseVerdict::kUnexpected;
  }
  const uint64_t offset =
      uint64_t{static_cast<uint32_t>(PsnDiff(psn, wqe.first_psn))} *
      config_.pmtu;
  const uint32_t expected_length = static_cast<uint32_t>(
      std::min<uint64_t>(config_.pmtu, wqe.wr.length - offset));
  if (packet.payload_length != expected_length) {
    ++counters_.bad_length;
    Fail(CompletionStatus::kLocalLengthError, head_);
    return ResponseVerdict::kBadLength;
  }
  ++counters_.read_responses;
  if (placement != nullptr) {
    placement->local_offset = wqe.wr.local_offset + offset;
    placement->length = expected_length;
  }
  una_psn_ = PsnAdd(psn, 1);
  if (last) CompleteHead(CompletionStatus::kSuccess, 0);
  Progress(now);
  return ResponseVerdict::kReadData;
}

}  // namespace spinnic::roce
