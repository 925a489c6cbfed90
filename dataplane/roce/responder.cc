// The RC responder's rules (docs/roce-responder.md). The order of the checks
// follows IBA 9.7 (responder) and 9.9 (error classes) and rxe: QP state,
// transport, PSN (new, duplicate or ahead), opcode sequence, QP access, headers
// and lengths; the engine then checks memory and receive WQEs, the remaining
// two steps.
#include "dataplane/roce/responder.h"

namespace spinnic::roce {

namespace {

constexpr uint32_t kMinPmtu = 256;
constexpr uint32_t kMaxPmtu = 4096;

ResponderConfig Clamp(const ResponderConfig& in) {
  ResponderConfig out = in;
  if (PathMtuCode(out.pmtu) == 0) {
    // The largest valid PMTU not above the request; 256 below the range.
    uint32_t pmtu = kMinPmtu;
    while (pmtu * 2 <= kMaxPmtu && pmtu * 2 <= in.pmtu) pmtu *= 2;
    out.pmtu = pmtu;
  }
  out.initial_epsn &= kPsnMask;
  if (out.max_dest_rd_atomic < 1) out.max_dest_rd_atomic = 1;
  if (out.max_dest_rd_atomic > kMaxDestRdAtomic) {
    out.max_dest_rd_atomic = kMaxDestRdAtomic;
  }
  out.min_rnr_timer &= kAethValueMask;
  if (out.ack_every < 1) out.ack_every = 1;
  return out;
}

bool IsMiddleOrLast(OpPosition position) {
  return position == OpPosition::kMiddle || position == OpPosition::kLast;
}

}  // namespace

const char* ValidateResponderConfig(const ResponderConfig& config) {
  if (PathMtuCode(config.pmtu) == 0)
    return "pmtu must be 256, 512, 1024, 2048 or 4096";
  if (config.initial_epsn > kPsnMask) return "initial_epsn exceeds 24 bits";
  if (config.max_dest_rd_atomic < 1 ||
      config.max_dest_rd_atomic > kMaxDestRdAtomic) {
    return "max_dest_rd_atomic must be 1..16";
  }
  if (config.min_rnr_timer > kAethValueMask)
    return "min_rnr_timer must be 0..31";
  if (config.ack_every < 1) return "ack_every must be at least 1";
  return nullptr;
}

Responder::Responder(const ResponderConfig& config) { Reset(config); }

void Responder::Reset(const ResponderConfig& config) {
  config_ = Clamp(config);
  state_ = QpState::kReset;
  epsn_ = config_.initial_epsn;
  msn_ = 0;
  nak_outstanding_ = false;
  unacked_ = 0;
  in_progress_ = InProgress::kNone;
  message_offset_ = 0;
  write_va_ = 0;
  write_rkey_ = 0;
  write_length_ = 0;
  records_ = {};
  next_record_ = 0;
  pending_ticket_ = 0;
}

void Responder::SetState(QpState state) {
  state_ = state;
  pending_ticket_ = 0;
}

// ------------------------------------------------------------------ Check

ResponderPlan Responder::Check(const RcRequest& packet) {
  // A plan that was never committed is forgotten: the packet counts as lost.
  pending_ticket_ = 0;
  if (state_ == QpState::kError)
    return Drop(packet, ResponderDropReason::kQpError);
  if (state_ != QpState::kRtr && state_ != QpState::kRts) {
    return Drop(packet, ResponderDropReason::kQpNotReady);
  }
  // Only RC opcodes (transport bits 000) reach an RC QP (9.2.1 table 38); rxe
  // drops the others in its header check too.
  if ((packet.opcode >> 5) != 0) {
    return Drop(packet, ResponderDropReason::kWrongTransport);
  }
  const OpcodeInfo& info = GetOpcodeInfo(packet.opcode);
  if (info.kind == OpKind::kReadResponse || info.kind == OpKind::kAck ||
      info.kind == OpKind::kAtomicAck) {
    return Drop(packet, ResponderDropReason::kNotARequest);
  }

  const uint32_t psn = packet.psn & kPsnMask;
  const int32_t distance = PsnDiff(psn, epsn_);
  if (distance > 0) {
    // Class B (9.9): one PSN sequence error NAK, then nothing but
    // duplicates are answered until the expected PSN arrives.
    if (nak_outstanding_) {
      return Drop(packet, ResponderDropReason::kNakOutstanding);
    }
    nak_outstanding_ = true;
    ResponderPlan plan;
    plan.verdict = ResponderVerdict::kNak;
    plan.nak = NakCode::kPsnSequenceError;
    plan.opcode = packet.opcode;
    plan.psn = psn;
    plan.reply = Nak(epsn_, NakCode::kPsnSequenceError);
    return plan;
  }
  if (distance < 0) return CheckDuplicate(packet, info);
  nak_outstanding_ = false;
  return CheckNew(packet, info);
}

ResponderPlan Responder::CheckNew(const RcRequest& packet,
                                  const OpcodeInfo& info) {
  // Reserved RC opcodes are class C "unsupported or reserved opcode".
  if (!info.valid()) return InvalidRequest(packet);
  if (!IsValidNew(packet, info)) return InvalidRequest(packet);

  ResponderPlan plan;
  plan.verdict = ResponderVerdict::kExecute;
  plan.opcode = packet.opcode;
  plan.psn = packet.psn & kPsnMask;
  plan.starts_message = info.starts_message();
  plan.ends_message = info.ends_message();
  plan.ack_req = packet.ack_req;
  plan.solicited = packet.solicited;
  plan.has_immediate = info.has(kHasImmDt);
  plan.immediate = plan.has_immediate ? packet.immediate : 0;
  plan.has_invalidate = info.has(kHasIeth);
  plan.invalidate_rkey = plan.has_invalidate ? packet.invalidate_rkey : 0;

  if (!PlanAction(packet, info, &plan)) return InvalidRequest(packet);

  plan.needs_commit = true;
  plan.ticket = next_ticket_++;
  pending_ticket_ = plan.ticket;
  return plan;
}

bool Responder::IsValidNew(const RcRequest& packet,
                           const OpcodeInfo& info) const {
  // Opcode sequence (9.7 / rxe check_op_seq): inside a SEND only
  // SEND MIDDLE/LAST, inside a WRITE only WRITE MIDDLE/LAST; outside a
  // message no MIDDLE/LAST at all.
  const bool send = info.kind == OpKind::kSend;
  const bool write = info.kind == OpKind::kWrite;
  switch (in_progress_) {
    case InProgress::kSend:
      if (!send || !IsMiddleOrLast(info.position)) return false;
      break;
    case InProgress::kWrite:
      if (!write || !IsMiddleOrLast(info.position)) {
        return false;
      }
      break;
    case InProgress::kNone:
      if ((send || write) && IsMiddleOrLast(info.position)) {
        return false;
      }
      break;
  }

  // What the QP allows (class C unsupported opcode, as rxe check_op_valid).
  const uint32_t access = config_.qp_access;
  if ((write && !(access & kAccessRemoteWrite)) ||
      (info.kind == OpKind::kReadRequest && !(access & kAccessRemoteRead)) ||
      (info.kind == OpKind::kAtomic && !(access & kAccessRemoteAtomic))) {
    return false;
  }

  // The headers the opcode carries must have been parsed.
  if ((info.has(kHasReth) && !packet.has_reth) ||
      (info.has(kHasAtomicEth) && !packet.has_atomic_eth) ||
      (info.has(kHasImmDt) && !packet.has_immediate) ||
      (info.has(kHasIeth) && !packet.has_invalidate)) {
    return false;
  }

  // Packet lengths (9.7 / rxe check_length): FIRST and
  // MIDDLE carry exactly one PMTU (so no pad), LAST 1..PMTU, ONLY 0..PMTU;
  // READ and atomic requests carry no payload.
  const uint32_t payload = packet.payload_length;
  const uint32_t pmtu = config_.pmtu;
  switch (info.position) {
    case OpPosition::kFirst:
    case OpPosition::kMiddle:
      if (payload != pmtu || packet.pad != 0) return false;
      break;
    case OpPosition::kLast:
      if (payload == 0 || payload > pmtu) return false;
      break;
    case OpPosition::kOnly:
    case OpPosition::kNone:
      if (payload > pmtu) return false;
      break;
  }
  if (!info.has(kHasPayload) && payload != 0) return false;
  return true;
}

bool Responder::PlanAction(const RcRequest& packet, const OpcodeInfo& info,
                           ResponderPlan* plan) const {
  const uint32_t payload = packet.payload_length;
  switch (info.kind) {
    case OpKind::kSend: {
      const uint64_t offset = plan->starts_message ? 0 : message_offset_;
      if (offset + payload > kMaxMessageBytes) return false;
      plan->action = ResponderAction::kSend;
      plan->send_offset = offset;
      plan->length = payload;
      plan->consumes_receive = plan->starts_message;
      break;
    }
    case OpKind::kWrite: {
      uint64_t message_va = write_va_;
      uint32_t rkey = write_rkey_;
      uint32_t message_length = write_length_;
      uint64_t offset = message_offset_;
      if (plan->starts_message) {
        if (packet.reth_dma_length > kMaxMessageBytes) {
          return false;
        }
        message_va = packet.reth_va;
        rkey = packet.reth_rkey;
        message_length = packet.reth_dma_length;
        offset = 0;
        plan->validate_range = message_length != 0;
        plan->range_va = message_va;
        plan->range_length = message_length;
      }
      // No packet writes past the RETH length, and the last one ends
      // exactly there (RETH DMA length, 9.4; rxe check_rkey's resid rules).
      const uint64_t end = offset + payload;
      if (end > message_length ||
          (plan->ends_message && end != message_length)) {
        return false;
      }
      plan->action = ResponderAction::kWrite;
      plan->va = message_va + offset;
      plan->rkey = rkey;
      plan->length = payload;
      plan->consumes_receive = plan->ends_message && plan->has_immediate;
      if (!plan->starts_message) {
        // Carried so that Accept needs nothing from Check-time state.
        plan->range_va = message_va;
        plan->range_length = message_length;
      }
      break;
    }
    case OpKind::kReadRequest: {
      if (packet.reth_dma_length > kMaxMessageBytes) {
        return false;
      }
      plan->action = ResponderAction::kRead;
      plan->va = packet.reth_va;
      plan->rkey = packet.reth_rkey;
      plan->length = packet.reth_dma_length;
      plan->validate_range = plan->length != 0;
      plan->range_va = plan->va;
      plan->range_length = plan->length;
      plan->response_psn = plan->psn;
      plan->response_packets = ReadPackets(plan->length);
      break;
    }
    case OpKind::kAtomic: {
      // Atomics act on naturally aligned 8 bytes (9.4.5); rxe answers
      // a misaligned one with NAK invalid request.
      if ((packet.atomic_va & 7) != 0) return false;
      plan->action =
          packet.opcode == static_cast<uint8_t>(Opcode::kRcCompareSwap)
              ? ResponderAction::kCompareSwap
              : ResponderAction::kFetchAdd;
      plan->va = packet.atomic_va;
      plan->rkey = packet.atomic_rkey;
      plan->length = 8;
      plan->validate_range = true;
      plan->range_va = plan->va;
      plan->range_length = 8;
      plan->swap_add = packet.atomic_swap_add;
      plan->compare = packet.atomic_compare;
      break;
    }
    default:
      return false;
  }
  return true;
}

ResponderPlan Responder::CheckDuplicate(const RcRequest& packet,
                                        const OpcodeInfo& info) {
  ++counters_.duplicates;
  const uint32_t psn = packet.psn & kPsnMask;
  ResponderPlan plan;
  plan.verdict = ResponderVerdict::kDuplicate;
  plan.opcode = packet.opcode;
  plan.psn = psn;

  if (info.kind == OpKind::kSend || info.kind == OpKind::kWrite) {
    // C9-105 (as rxe cites it): not executed again, acknowledged again with the
    // latest PSN and MSN, whether or not AckReq is set (rxe does the same).
    ++counters_.acks_again;
    unacked_ = 0;
    plan.action = ResponderAction::kAckAgain;
    plan.reply = AckReply(PsnAdd(epsn_, kPsnMask));
    return plan;
  }
  if (info.kind == OpKind::kReadRequest) {
    // 9.7 duplicate requests: a duplicate READ is executed again from its own
    // PSN, if it lies in a remembered request and asks for part of it.
    const Record* record = FindRecord(psn);
    if (record == nullptr || record->kind != RecordKind::kRead) {
      return Drop(packet, ResponderDropReason::kDuplicateNoRecord);
    }
    const uint64_t va = packet.reth_va;
    const uint32_t length = packet.reth_dma_length;
    const uint32_t packets = ReadPackets(length);
    if (!packet.has_reth || packet.reth_rkey != record->rkey ||
        va < record->va || length > record->length ||
        va - record->va > record->length - length ||
        PsnDiff(PsnAdd(psn, packets - 1), record->last_psn) > 0) {
      return Drop(packet, ResponderDropReason::kDuplicateReadMismatch);
    }
    plan.action = ResponderAction::kReplayRead;
    plan.starts_message = true;
    plan.ends_message = true;
    plan.va = va;
    plan.rkey = record->rkey;
    plan.length = length;
    plan.validate_range = length != 0;
    plan.range_va = va;
    plan.range_length = length;
    plan.response_psn = psn;
    plan.response_packets = packets;
    plan.needs_commit = true;
    plan.ticket = next_ticket_++;
    pending_ticket_ = plan.ticket;
    return plan;
  }
  if (info.kind == OpKind::kAtomic) {
    // 9.7 duplicate requests: the atomic is not executed again; its saved
    // original value is returned.
    const Record* record = FindRecord(psn);
    if (record == nullptr || record->kind != RecordKind::kAtomic) {
      return Drop(packet, ResponderDropReason::kDuplicateNoRecord);
    }
    ++counters_.atomic_replays;
    unacked_ = 0;
    plan.action = ResponderAction::kReplayAtomic;
    plan.reply.kind = ResponderReplyKind::kAtomicAck;
    plan.reply.psn = psn;
    plan.reply.msn = msn_;
    plan.reply.syndrome = AethAck();
    plan.reply.original_value = record->original_value;
    return plan;
  }
  // A reserved opcode with an old PSN: nothing to answer.
  return Drop(packet, ResponderDropReason::kDuplicateNoRecord);
}

ResponderPlan Responder::Drop(const RcRequest& packet,
                              ResponderDropReason reason) {
  ++counters_.drops[static_cast<std::size_t>(reason)];
  ResponderPlan plan;
  plan.verdict = ResponderVerdict::kDrop;
  plan.drop_reason = reason;
  plan.opcode = packet.opcode;
  plan.psn = packet.psn & kPsnMask;
  return plan;
}

ResponderPlan Responder::InvalidRequest(const RcRequest& packet) {
  // Class C (9.9): NAK invalid request for the packet's PSN, then the
  // QP is in the Error state (rxe: do_class_ac_error).
  ResponderPlan plan;
  plan.verdict = ResponderVerdict::kNak;
  plan.nak = NakCode::kInvalidRequest;
  plan.opcode = packet.opcode;
  plan.psn = packet.psn & kPsnMask;
  plan.reply = Nak(plan.psn, NakCode::kInvalidRequest);
  EnterError();
  return plan;
}

// ---------------------------------------------------------------- commits

bool Responder::TakeTicket(const ResponderPlan& plan) {
  if (!plan.needs_commit || plan.ticket == 0 ||
      plan.ticket != pending_ticket_ ||
      (state_ != QpState::kRtr && state_ != QpState::kRts)) {
    ++counters_.bad_commits;
    return false;
  }
  pending_ticket_ = 0;
  return true;
}

ResponderReply Responder::Accept(const ResponderPlan& plan,
                                 uint64_t atomic_original) {
  if (!TakeTicket(plan)) return {};
  ResponderReply reply;
  switch (plan.action) {
    case ResponderAction::kSend:
    case ResponderAction::kWrite: {
      const bool write = plan.action == ResponderAction::kWrite;
      if (plan.starts_message) {
        message_offset_ = 0;
        if (write) {
          write_va_ = plan.range_va;
          write_rkey_ = plan.rkey;
          write_length_ = plan.range_length;
        }
      }
      message_offset_ += plan.length;
      if (plan.ends_message) {
        in_progress_ = InProgress::kNone;
        message_offset_ = 0;
        msn_ = (msn_ + 1) & kMsnMask;
        ++counters_.messages;
      } else {
        in_progress_ = write ? InProgress::kWrite : InProgress::kSend;
      }
      epsn_ = PsnAdd(plan.psn, 1);
      ++counters_.accepted;
      ++unacked_;
      // 9.7: AckReq asks for an ACK now; otherwise ACKs are
      // coalesced (a later ACK covers every earlier PSN).
      if (plan.ack_req || unacked_ >= config_.ack_every) {
        reply = AckReply(plan.psn);
        unacked_ = 0;
        ++counters_.acks;
      }
      return reply;
    }
    case ResponderAction::kRead: {
      // C9-148: a READ counts as a completed message once accepted.
      msn_ = (msn_ + 1) & kMsnMask;
      ++counters_.messages;
      ++counters_.accepted;
      epsn_ = PsnAdd(plan.psn, plan.response_packets);
      Record& record = records_[next_record_];
      next_record_ = (next_record_ + 1) % config_.max_dest_rd_atomic;
      record = Record{RecordKind::kRead,
                      plan.psn,
                      PsnAdd(plan.psn, plan.response_packets - 1),
                      plan.va,
                      plan.rkey,
                      plan.length,
                      0};
      unacked_ = 0;  // the READ responses acknowledge everything before
      reply.kind = ResponderReplyKind::kReadResponse;
      reply.psn = plan.response_psn;
      reply.msn = msn_;
      reply.syndrome = AethAck();
      reply.va = plan.va;
      reply.rkey = plan.rkey;
      reply.length = plan.length;
      reply.packets = plan.response_packets;
      return reply;
    }
    case ResponderAction::kCompareSwap:
    case ResponderAction::kFetchAdd: {
      msn_ = (msn_ + 1) & kMsnMask;
      ++counters_.messages;
      ++counters_.accepted;
      epsn_ = PsnAdd(plan.psn, 1);
      Record& record = records_[next_record_];
      next_record_ = (next_record_ + 1) % config_.max_dest_rd_atomic;
      record = Record{RecordKind::kAtomic, plan.psn, plan.psn,       plan.va,
                      plan.rkey,           8,        atomic_original};
      unacked_ = 0;
      reply.kind = ResponderReplyKind::kAtomicAck;
      reply.psn = plan.psn;
      reply.msn = msn_;
      reply.syndrome = AethAck();
      reply.original_value = atomic_original;
      return reply;
    }
    case ResponderAction::kReplayRead: {
      ++counters_.read_replays;
      unacked_ = 0;
      reply.kind = ResponderReplyKind::kReadResponse;
      reply.psn = plan.response_psn;
      reply.msn = msn_;
      reply.syndrome = AethAck();
      reply.va = plan.va;
      reply.rkey = plan.rkey;
      reply.length = plan.length;
      reply.packets = plan.response_packets;
      return reply;
    }
    default:
      ++counters_.bad_commits;
      return reply;
  }
}

ResponderReply Responder::Fail(const ResponderPlan& plan, NakCode code) {
  if (!TakeTicket(plan)) return {};
  if (code != NakCode::kInvalidRequest && code != NakCode::kRemoteAccessError &&
      code != NakCode::kRemoteOperationalError) {
    // A sequence error or an RD code is not the engine's to give: the
    // failure is still local to this QP.
    ++counters_.bad_commits;
    code = NakCode::kRemoteOperationalError;
  }
  // Class A/C errors (9.9): NAK with the request's PSN (for a READ the
  // PSN its first response would have had), then the Error state.
  ResponderReply reply = Nak(plan.psn, code);
  EnterError();
  return reply;
}

ResponderReply Responder::Rnr(const ResponderPlan& plan) {
  if (!TakeTicket(plan)) return {};
  if (!plan.consumes_receive) {
    ++counters_.bad_commits;
    return {};
  }
  // Class B (9.9): the PSN does not advance; the RNR NAK carries the
  // packet's PSN and so acknowledges everything before it. Packets the
  // requester had already pipelined behind it are dropped silently until
  // the retry of this PSN arrives: a PSN sequence NAK for them would make
  // the requester retry at once instead of after the RNR timer.
  nak_outstanding_ = true;
  ++counters_.rnr_naks;
  unacked_ = 0;
  ResponderReply reply;
  reply.kind = ResponderReplyKind::kRnrNak;
  reply.psn = plan.psn;
  reply.msn = msn_;
  reply.syndrome = AethRnrNak(config_.min_rnr_timer);
  return reply;
}

ResponderReply Responder::FlushAck() {
  if (unacked_ == 0 || (state_ != QpState::kRtr && state_ != QpState::kRts)) {
    return {};
  }
  unacked_ = 0;
  ++counters_.acks;
  return AckReply(PsnAdd(epsn_, kPsnMask));
}

// ---------------------------------------------------------------- helpers

ResponderReply Responder::Nak(uint32_t psn, NakCode code) {
  ++counters_.naks[static_cast<std::size_t>(code)];
  // A NAK acknowledges every PSN before its own (9.7).
  unacked_ = 0;
  ResponderReply reply;
  reply.kind = ResponderReplyKind::kNak;
  reply.psn = psn;
  reply.msn = msn_;
  reply.syndrome = AethNak(code);
  return reply;
}

ResponderReply Responder::AckReply(uint32_t psn) const {
  ResponderReply reply;
  reply.kind = ResponderReplyKind::kAck;
  reply.psn = psn;
  reply.msn = msn_;
  reply.syndrome = AethAck();
  return reply;
}

void Responder::EnterError() {
  if (state_ != QpState::kError) ++counters_.errors_entered;
  state_ = QpState::kError;
  pending_ticket_ = 0;
  in_progress_ = InProgress::kNone;
  message_offset_ = 0;
  unacked_ = 0;
}

const Responder::Record* Responder::FindRecord(uint32_t psn) const {
  for (uint32_t i = 0; i < config_.max_dest_rd_atomic; ++i) {
    const Record& record = records_[i];
    if (record.kind == RecordKind::kFree) continue;
    // A record half the PSN space old no longer lies behind ePSN: it can
    // not be told from a future PSN and is ignored.
    if (PsnDiff(epsn_, record.last_psn) <= 0) continue;
    if (PsnDiff(psn, record.first_psn) >= 0 &&
        PsnDiff(psn, record.last_psn) <= 0) {
      return &record;
    }
  }
  return nullptr;
}

uint32_t Responder::ReadPackets(uint32_t length) const {
  // A zero-length READ still gets one (empty) READ RESPONSE ONLY.
  if (length == 0) return 1;
  return static_cast<uint32_t>((uint64_t{length} + config_.pmtu - 1) /
                               config_.pmtu);
}

// ------------------------------------------------------------------ names

const char* Describe(ResponderVerdict verdict) {
  switch (verdict) {
    case ResponderVerdict::kExecute:
      return "execute";
    case ResponderVerdict::kDuplicate:
      return "duplicate";
    case ResponderVerdict::kNak:
      return "nak";
    case ResponderVerdict::kDrop:
      return "drop";
  }
  return "unknown";
}

const char* Describe(ResponderAction action) {
  switch (action) {
    case ResponderAction::kNone:
      return "none";
    case ResponderAction::kSend:
      return "send";
    case ResponderAction::kWrite:
      return "write";
    case ResponderAction::kRead:
      return "read";
    case ResponderAction::kCompareSwap:
      return "compare_swap";
    case ResponderAction::kFetchAdd:
      return "fetch_add";
    case ResponderAction::kReplayRead:
      return "replay_read";
    case ResponderAction::kReplayAtomic:
      return "replay_atomic";
    case ResponderAction::kAckAgain:
      return "ack_again";
  }
  return "unknown";
}

const char* Describe(ResponderDropReason reason) {
  switch (reason) {
    case ResponderDropReason::kNone:
      return "none";
    case ResponderDropReason::kQpNotReady:
      return "qp_not_ready";
    case ResponderDropReason::kQpError:
      return "qp_error";
    case ResponderDropReason::kNakOutstanding:
      return "nak_outstanding";
    case ResponderDropReason::kWrongTransport:
      return "wrong_transport";
    case ResponderDropReason::kNotARequest:
      return "not_a_request";
    case ResponderDropReason::kDuplicateNoRecord:
      return "duplicate_no_record";
    case ResponderDropReason::kDuplicateReadMismatch:
      return "duplicate_read_mismatch";
    case ResponderDropReason::kCount:
      break;
  }
  return "unknown";
}

const char* Describe(ResponderReplyKind kind) {
  switch (kind) {
    case ResponderReplyKind::kNone:
      return "none";
    case ResponderReplyKind::kAck:
      return "ack";
    case ResponderReplyKind::kNak:
      return "nak";
    case ResponderReplyKind::kRnrNak:
      return "rnr_nak";
    case ResponderReplyKind::kReadResponse:
      return "read_response";
    case ResponderReplyKind::kAtomicAck:
      return "atomic_ack";
  }
  return "unknown";
}

const char* ResponderNakName(NakCode code) {
  switch (code) {
    case NakCode::kPsnSequenceError:
      return "psn_sequence_error";
    case NakCode::kInvalidRequest:
      return "invalid_request";
    case NakCode::kRemoteAccessError:
      return "remote_access_error";
    case NakCode::kRemoteOperationalError:
      return "remote_operational_error";
    case NakCode::kInvalidRdRequest:
      return "invalid_rd_request";
  }
  return "unknown";
}

}  // namespace spinnic::roce
