// The CM's passive side: the actions it returns and the connection state
// machine (cm_service.h, docs/roce-cm.md).
#include "dataplane/roce/cm_service.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>

#include "dataplane/common/byte_order.h"

namespace spinnic::roce {
namespace {

size_t AttrIndex(CmAttr attr) { return static_cast<uint16_t>(attr) - 0x10; }

}  // namespace

// ----- Actions -----

const char* CmActionTypeName(CmActionType type) {
  switch (type) {
    case CmActionType::kCreateQp:
      return "create QP";
    case CmActionType::kSendMad:
      return "send MAD";
    case CmActionType::kEstablished:
      return "established";
    case CmActionType::kDestroyQp:
      return "destroy QP";
  }
  return "?";
}

const char* CmCloseReasonName(CmCloseReason reason) {
  switch (reason) {
    case CmCloseReason::kNone:
      return "none";
    case CmCloseReason::kPeerDisconnect:
      return "peer disconnect";
    case CmCloseReason::kPeerReject:
      return "peer reject";
    case CmCloseReason::kRepTimeout:
      return "REP timeout";
    case CmCloseReason::kLocalDisconnect:
      return "local disconnect";
    case CmCloseReason::kStale:
      return "stale";
  }
  return "?";
}

const char* CmConnStateName(CmConnState state) {
  switch (state) {
    case CmConnState::kFree:
      return "free";
    case CmConnState::kRepSent:
      return "REP sent";
    case CmConnState::kEstablished:
      return "established";
    case CmConnState::kDreqSent:
      return "DREQ sent";
    case CmConnState::kTimeWait:
      return "time wait";
  }
  return "?";
}

const char* CmResultName(CmResult result) {
  switch (result) {
    case CmResult::kHandled:
      return "handled";
    case CmResult::kAnsweredAgain:
      return "answered again";
    case CmResult::kRejected:
      return "rejected";
    case CmResult::kIgnoredDuplicate:
      return "ignored duplicate";
    case CmResult::kUnknownConnection:
      return "unknown connection";
    case CmResult::kWrongState:
      return "wrong state";
    case CmResult::kMismatch:
      return "mismatch";
    case CmResult::kParseError:
      return "parse error";
    case CmResult::kUnexpectedMessage:
      return "unexpected message";
    case CmResult::kNoActionSpace:
      return "no action space";
    case CmResult::kSidrRefused:
      return "SIDR refused";
    case CmResult::kCount:
      break;
  }
  return "?";
}

CmAction* CmActionList::Add(CmActionType type) {
  if (count_ >= kCmMaxActions) return nullptr;
  CmAction* a = &items_[count_++];
  a->type = type;
  a->local_comm_id = 0;
  a->local_qpn = 0;
  a->peer = CmPeer{};
  a->close_reason = CmCloseReason::kNone;
  return a;
}

// ----- The service -----

namespace {
constexpr uint32_t kSlotBits = 8;
static_assert(kCmMaxConnections == 1u << kSlotBits);
constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();
}  // namespace

CmService::CmService(const CmServiceConfig& config, CmAcceptor* acceptor)
    : config_(config), acceptor_(acceptor) {}

bool CmService::Listen(uint16_t port) {
  if (IsListening(port)) return true;
  if (listener_count_ >= kCmMaxListeners) return false;
  listeners_[listener_count_++] = port;
  return true;
}

bool CmService::StopListening(uint16_t port) {
  for (size_t i = 0; i < listener_count_; ++i) {
    if (listeners_[i] == port) {
      listeners_[i] = listeners_[--listener_count_];
      return true;
    }
  }
  return false;
}

bool CmService::IsListening(uint16_t port) const {
  for (size_t i = 0; i < listener_count_; ++i) {
    if (listeners_[i] == port) return true;
  }
  return false;
}

size_t CmService::connection_count() const {
  size_t n = 0;
  for (const Connection& c : connections_) {
    if (c.state != CmConnState::kFree) ++n;
  }
  return n;
}

CmConnState CmService::StateOfQpn(uint32_t local_qpn) const {
  for (const Connection& c : connections_) {
    if (c.state != CmConnState::kFree && c.local_qpn == local_qpn) {
      return c.state;
    }
  }
  return CmConnState::kFree;
}

uint64_t CmService::NextDeadline() const {
  uint64_t next = kNever;
  for (const Connection& c : connections_) {
    if (c.state != CmConnState::kFree && c.deadline_us != 0) {
      next = std::min(next, c.deadline_us);
    }
  }
  return next;
}

uint64_t CmService::RetransmitInterval(uint8_t exponent) const {
  return std::clamp(
      CmTimeoutMicros(exponent), config_.min_retransmit_us,
      std::max(config_.min_retransmit_us, config_.max_retransmit_us));
}

CmService::Connection* CmService::FindByLocalId(uint32_t local_comm_id) {
  Connection& c =
      connections_[(local_comm_id ^ config_.id_seed) & (kCmMaxConnections - 1)];
  if (c.state == CmConnState::kFree || c.local_comm_id != local_comm_id) {
    return nullptr;
  }
  return &c;
}

CmService::Connection* CmService::FindByRemote(const CmPeer& peer,
                                               uint32_t remote_comm_id) {
  for (Connection& c : connections_) {
    if (c.state != CmConnState::kFree && c.remote_comm_id == remote_comm_id &&
        c.peer.gid == peer.gid) {
      return &c;
    }
  }
  return nullptr;
}

CmService::Connection* CmService::FindOpenByQpn(uint32_t local_qpn) {
  for (Connection& c : connections_) {
    if ((c.state == CmConnState::kRepSent ||
         c.state == CmConnState::kEstablished) &&
        c.local_qpn == local_qpn) {
      return &c;
    }
  }
  return nullptr;
}

CmService::Connection* CmService::AllocateConnection() {
  Connection* oldest_timewait = nullptr;
  Connection* slot = nullptr;
  for (Connection& c : connections_) {
    if (c.state == CmConnState::kFree) {
      slot = &c;
      break;
    }
    if (c.state == CmConnState::kTimeWait &&
        (oldest_timewait == nullptr ||
         c.deadline_us < oldest_timewait->deadline_us)) {
      oldest_timewait = &c;
    }
  }
  if (slot == nullptr) {
    // Time-wait only guards against late duplicates; a live REQ matters
    // more than the oldest of them.
    if (oldest_timewait == nullptr) return nullptr;
    ++stats_.timewait_reclaimed;
    slot = oldest_timewait;
  }
  uint32_t index = uint32_t(slot - connections_.data());
  uint32_t generation = slot->generation;
  uint32_t id;
  do {
    ++generation;
    id = ((generation << kSlotBits) | index) ^ config_.id_seed;
  } while (id == 0);  // 0 means "unknown" in a REJ's remote ID
  *slot = Connection{};
  slot->generation = generation;
  slot->local_comm_id = id;
  return slot;
}

void CmService::Free(Connection* c) {
  uint32_t generation = c->generation;
  *c = Connection{};
  c->generation = generation;
}

void CmService::EnterTimeWait(Connection* c, uint64_t now_us) {
  c->state = CmConnState::kTimeWait;
  c->deadline_us = now_us + std::max<uint64_t>(config_.timewait_us, 1);
}

void CmService::SendMad(const CmPeer& to, uint32_t local_comm_id,
                        uint32_t local_qpn, const CmMad& mad,
                        CmActionList* actions,
                        std::array<uint8_t, kMadBytes>* cache) {
  CmAction* a = actions->Add(CmActionType::kSendMad);
  std::array<uint8_t, kMadBytes> scratch;
  std::array<uint8_t, kMadBytes>* bytes =
      cache != nullptr ? cache : (a != nullptr ? &a->mad : &scratch);
  BuildCmMad(mad, std::span<uint8_t, kMadBytes>(*bytes));
  ++stats_.sent[AttrIndex(AttrOf(mad.message))];
  if (a == nullptr) return;
  if (bytes != &a->mad) a->mad = *bytes;
  a->peer = to;
  a->local_comm_id = local_comm_id;
  a->local_qpn = local_qpn;
}

void CmService::SendCached(const Connection& c, CmActionList* actions) {
  CmAction* a = actions->Add(CmActionType::kSendMad);
  if (a == nullptr) return;
  a->mad = c.last_sent;
  a->peer = c.peer;
  a->local_comm_id = c.local_comm_id;
  a->local_qpn = c.local_qpn;
  uint16_t attr = LoadBe16(c.last_sent.data() + 16);
  if (attr >= 0x10 && attr - 0x10u < stats_.sent.size()) {
    ++stats_.sent[attr - 0x10];
  }
}

void CmService::SendRej(
    const CmPeer& to, uint64_t tid, uint32_t local_comm_id,
    uint32_t remote_comm_id, uint8_t message_rejected, CmRejReason reason,
    const std::array<uint8_t, kRejPrivateDataBytes>* private_data,
    CmActionList* actions, std::array<uint8_t, kMadBytes>* cache) {
  CmMad mad;
  mad.header.transaction_id = tid;
  CmRej rej;
  rej.local_comm_id = local_comm_id;
  rej.remote_comm_id = remote_comm_id;
  rej.message_rejected = message_rejected;
  rej.reason = static_cast<uint16_t>(reason);
  // The spec's ARI for "timeout" is the rejecting CA's GUID (the kernel
  // sends it; see the fixture's REJ).
  if (reason == CmRejReason::kTimeout) {
    StoreBe64(rej.ari.data(), config_.local_ca_guid);
    rej.reject_info_length = 8;
  }
  if (private_data != nullptr) rej.private_data = *private_data;
  mad.message = rej;
  ++stats_.rejects_sent;
  ++stats_.rejects_by_reason[std::min<size_t>(rej.reason, 63)];
  SendMad(to, local_comm_id, 0, mad, actions, cache);
}

void CmService::DestroyQp(const Connection& c, CmCloseReason reason,
                          CmActionList* actions) {
  CmAction* a = actions->Add(CmActionType::kDestroyQp);
  if (a == nullptr) return;
  a->local_comm_id = c.local_comm_id;
  a->local_qpn = c.local_qpn;
  a->peer = c.peer;
  a->close_reason = reason;
}

void CmService::StartDisconnect(Connection* c, CmCloseReason reason,
                                uint64_t now_us, CmActionList* actions) {
  DestroyQp(*c, reason, actions);
  CmMad mad;
  // Our own transaction: a fresh TID (the kernel forms its TIDs from the
  // local comm ID the same way).
  mad.header.transaction_id =
      uint64_t{++next_tid_ ^ config_.id_seed} << 32 | c->local_comm_id;
  CmDreq dreq;
  dreq.local_comm_id = c->local_comm_id;
  dreq.remote_comm_id = c->remote_comm_id;
  dreq.remote_qpn = c->remote_qpn;
  mad.message = dreq;
  c->transaction_id = mad.header.transaction_id;
  SendMad(c->peer, c->local_comm_id, c->local_qpn, mad, actions, &c->last_sent);
  c->state = CmConnState::kDreqSent;
  c->interval_us = RetransmitInterval(config_.local_cm_response_timeout);
  c->retries_left = c->max_cm_retries;
  c->deadline_us = now_us + c->interval_us;
}

CmResult CmService::HandleMad(const CmPeer& from,
                              std::span<const uint8_t> bytes, uint64_t now_us,
                              CmActionList* actions) {
  CmResult result;
  if (actions->free() < kCmMaxActionsPerInput) {
    result = CmResult::kNoActionSpace;
  } else {
    CmMad mad;
    CmParseError error = ParseCmMad(bytes, &mad);
    if (error != CmParseError::kNone) {
      ++stats_.parse_errors[static_cast<size_t>(error)];
      result = CmResult::kParseError;
    } else {
      ++stats_.received[AttrIndex(AttrOf(mad.message))];
      switch (AttrOf(mad.message)) {
        case CmAttr::kReq:
          result = HandleReq(from, mad, now_us, actions);
          break;
        case CmAttr::kRtu:
          result = HandleRtu(from, std::get<CmRtu>(mad.message), actions);
          break;
        case CmAttr::kDreq:
          result = HandleDreq(from, mad, now_us, actions);
          break;
        case CmAttr::kDrep:
          result = HandleDrep(from, std::get<CmDrep>(mad.message), now_us);
          break;
        case CmAttr::kRej:
          result =
              HandleRej(from, std::get<CmRej>(mad.message), now_us, actions);
          break;
        case CmAttr::kMra:
          result = HandleMra(from, std::get<CmMra>(mad.message), now_us);
          break;
        case CmAttr::kSidrReq:
          result = HandleSidrReq(from, mad, actions);
          break;
        case CmAttr::kRep:
        case CmAttr::kSidrRep:
        default:
          // We never send a REQ or a SIDR_REQ: a REP or SIDR_REP answers
          // nothing of ours.
          result = CmResult::kUnexpectedMessage;
          break;
      }
    }
  }
  ++stats_.results[static_cast<size_t>(result)];
  return result;
}

// We serve no UD QP. A SIDR_REQ (rdma_cm's UDP and IPoIB port spaces:
// udaddy, rdma_resolve_route on a UD id) gets a SIDR_REP "service ID not
// supported" at once, so that the client's rdma_cm reports the service
// unreachable instead of retrying into a timeout. Nothing is kept: a
// repeated SIDR_REQ gets the same answer again.
CmResult CmService::HandleSidrReq(const CmPeer& from, const CmMad& mad,
                                  CmActionList* actions) {
  const CmSidrReq& request = std::get<CmSidrReq>(mad.message);
  CmMad reply;
  reply.header.transaction_id = mad.header.transaction_id;
  CmSidrRep answer;
  answer.request_id = request.request_id;
  answer.status = static_cast<uint8_t>(CmSidrStatus::kServiceIdNotSupported);
  answer.service_id = request.service_id;
  reply.message = answer;
  SendMad(from, /*local_comm_id=*/0, /*local_qpn=*/0, reply, actions,
          /*cache=*/nullptr);
  return CmResult::kSidrRefused;
}

CmResult CmService::HandleReq(const CmPeer& from, const CmMad& mad,
                              uint64_t now_us, CmActionList* actions) {
  const CmReq& req = std::get<CmReq>(mad.message);
  const uint64_t tid = mad.header.transaction_id;

  if (Connection* c = FindByRemote(from, req.local_comm_id)) {
    return HandleRepeatedReq(*c, from, tid, req, actions);
  }

  // Checks in the order the kernel's CM and rdma_cm make them.
  uint16_t port = 0;
  RdmaCmHeader rdma_cm;
  if (const std::optional<CmRejReason> invalid =
          CheckNewReq(req, &port, &rdma_cm)) {
    SendRej(from, tid, 0, req.local_comm_id, kCmMsgReq, *invalid, nullptr,
            actions, nullptr);
    return CmResult::kRejected;
  }

  // A new REQ from a QP that we still hold a connection for: the peer lost
  // its state (12.9.8.3.1). Refuse it and close the old one.
  for (Connection& old : connections_) {
    if ((old.state == CmConnState::kRepSent ||
         old.state == CmConnState::kEstablished) &&
        old.peer.gid == from.gid && old.remote_qpn == req.local_qpn) {
      SendRej(from, tid, 0, req.local_comm_id, kCmMsgReq,
              CmRejReason::kStaleConnection, nullptr, actions, nullptr);
      StartDisconnect(&old, CmCloseReason::kStale, now_us, actions);
      return CmResult::kRejected;
    }
  }

  Connection* c = AllocateConnection();
  if (c == nullptr) {
    ++stats_.table_full;
    SendRej(from, tid, 0, req.local_comm_id, kCmMsgReq,
            CmRejReason::kNoResources, nullptr, actions, nullptr);
    return CmResult::kRejected;
  }

  // The REQ's responder resources are what the active side serves, so they
  // bound our initiator depth, and vice versa (the kernel's
  // cm_format_req_event swaps them the same way).
  CmConnectRequest request;
  request.peer = &from;
  request.req = &req;
  request.port = port;
  request.rdma_cm = rdma_cm;
  request.user_private_data =
      std::span<const uint8_t>(req.private_data).subspan(kRdmaCmHeaderBytes);
  request.responder_resources =
      std::min(req.initiator_depth, config_.max_responder_resources);
  request.initiator_depth =
      std::min(req.responder_resources, config_.max_initiator_depth);
  CmAcceptDecision decision;
  decision.responder_resources = request.responder_resources;
  decision.initiator_depth = request.initiator_depth;
  if (acceptor_ != nullptr) acceptor_->OnConnectRequest(request, &decision);

  if (!decision.accept) {
    Free(c);
    SendRej(from, tid, 0, req.local_comm_id, kCmMsgReq, decision.reject_reason,
            &decision.rej_private_data, actions, nullptr);
    return CmResult::kRejected;
  }

  c->state = CmConnState::kRepSent;
  c->remote_comm_id = req.local_comm_id;
  c->peer = from;
  c->port = port;
  c->local_qpn = decision.local_qpn & kPsnMask;
  c->remote_qpn = req.local_qpn;
  c->transaction_id = tid;
  c->max_cm_retries = req.max_cm_retries;
  c->retries_left = req.max_cm_retries;
  // The REQ's local CM response timeout is how long the active side takes
  // to answer our REP with its RTU.
  c->interval_us = RetransmitInterval(req.local_cm_response_timeout);
  c->deadline_us = now_us + c->interval_us;

  AddCreateQp(*c, req, request, decision, actions);
  SendRep(*c, mad.header, req, request, decision, actions);
  return CmResult::kHandled;
}

CmResult CmService::HandleRepeatedReq(Connection& c, const CmPeer& from,
                                      uint64_t tid, const CmReq& req,
                                      CmActionList* actions) {
  switch (c.state) {
    case CmConnState::kRepSent:
      // The REP was lost or is slow: answer again at once, without a
      // second QP; the retransmission budget is left alone.
      SendCached(c, actions);
      return CmResult::kAnsweredAgain;
    case CmConnState::kTimeWait:
      SendRej(from, tid, c.local_comm_id, req.local_comm_id, kCmMsgReq,
              CmRejReason::kStaleConnection, nullptr, actions, nullptr);
      return CmResult::kRejected;
    default:
      return CmResult::kIgnoredDuplicate;
  }
}

std::optional<CmRejReason> CmService::CheckNewReq(const CmReq& req,
                                                  uint16_t* port,
                                                  RdmaCmHeader* rdma_cm) const {
  uint16_t port_space = 0;
  if (!ParseRdmaCmServiceId(req.service_id, &port_space, port) ||
      port_space != kRdmaPsTcp || !IsListening(*port)) {
    return CmRejReason::kInvalidServiceId;
  }
  if (req.transport_service_type != kCmTransportRc) {
    return CmRejReason::kInvalidTransportType;
  }
  if (PathMtuBytes(req.path_mtu) == 0 || req.path_mtu > config_.max_path_mtu) {
    return CmRejReason::kInvalidMtu;
  }
  if (!ParseRdmaCmHeader(req.private_data, rdma_cm)) {
    // rdma_cm's listener refuses the REQ; the kernel then rejects as the
    // consumer.
    return CmRejReason::kConsumerReject;
  }
  return std::nullopt;
}

void CmService::AddCreateQp(const Connection& c, const CmReq& req,
                            const CmConnectRequest& request,
                            const CmAcceptDecision& decision,
                            CmActionList* actions) {
  CmAction* create = actions->Add(CmActionType::kCreateQp);
  if (create == nullptr) return;
  create->local_comm_id = c.local_comm_id;
  create->local_qpn = c.local_qpn;
  create->peer = c.peer;
  CmQpParams& qp = create->qp;
  qp = CmQpParams{};
  qp.local_comm_id = c.local_comm_id;
  qp.port = c.port;
  qp.local_qpn = c.local_qpn;
  qp.remote_qpn = req.local_qpn;
  // The kernel's CM (and so every rdma_cm peer) crosses them over: the
  // active side sends from the REP's starting PSN and expects the REQ's
  // (ib_send_cm_rep / cm_rep_handler); the rping capture shows it (REQ
  // 0x934201, REP 0x04229b, the client's first SEND is PSN 0x04229b).
  qp.expected_psn = decision.starting_psn & kPsnMask;
  qp.send_psn = req.starting_psn;
  qp.path_mtu = req.path_mtu;
  qp.retry_count = req.retry_count;
  qp.rnr_retry_count = req.rnr_retry_count;
  qp.local_ack_timeout = req.primary.local_ack_timeout;
  qp.max_rd_atomic =
      std::min(decision.initiator_depth, request.initiator_depth);
  qp.max_dest_rd_atomic =
      std::min(decision.responder_resources, request.responder_resources);
  qp.partition_key = req.partition_key;
  qp.local_gid = req.primary.remote_gid;
  qp.remote_gid = req.primary.local_gid;
  qp.flow_label = req.primary.flow_label;
  qp.traffic_class = req.primary.traffic_class;
  qp.hop_limit = req.primary.hop_limit;
  qp.sl = req.primary.sl;
  qp.rdma_cm = request.rdma_cm;
}

void CmService::SendRep(Connection& c, const MadHeader& req_header,
                        const CmReq& req, const CmConnectRequest& request,
                        const CmAcceptDecision& decision,
                        CmActionList* actions) {
  CmMad reply;
  reply.header = req_header;
  reply.header.status = 0;
  reply.header.class_specific = 0;
  reply.header.reserved = 0;
  reply.header.attribute_modifier = 0;
  CmRep rep;
  rep.local_comm_id = c.local_comm_id;
  rep.remote_comm_id = req.local_comm_id;
  rep.local_qpn = c.local_qpn;
  rep.starting_psn = decision.starting_psn & kPsnMask;
  rep.responder_resources =
      std::min(decision.responder_resources, request.responder_resources);
  rep.initiator_depth =
      std::min(decision.initiator_depth, request.initiator_depth);
  rep.target_ack_delay = config_.target_ack_delay;
  rep.failover_accepted = kCmFailoverAccepted;
  rep.end_to_end_flow_control = config_.end_to_end_flow_control;
  rep.rnr_retry_count = config_.rnr_retry_count;
  rep.local_ca_guid = config_.local_ca_guid;
  rep.private_data = decision.rep_private_data;
  reply.message = rep;
  SendMad(c.peer, c.local_comm_id, c.local_qpn, reply, actions, &c.last_sent);
}

CmResult CmService::HandleRtu(const CmPeer& from, const CmRtu& rtu,
                              CmActionList* actions) {
  Connection* c = FindByLocalId(rtu.remote_comm_id);
  if (c == nullptr) return CmResult::kUnknownConnection;
  if (c->remote_comm_id != rtu.local_comm_id || c->peer.gid != from.gid) {
    return CmResult::kMismatch;
  }
  if (c->state != CmConnState::kRepSent) return CmResult::kIgnoredDuplicate;
  c->state = CmConnState::kEstablished;
  c->deadline_us = 0;
  ++stats_.established;
  CmAction* a = actions->Add(CmActionType::kEstablished);
  if (a != nullptr) {
    a->local_comm_id = c->local_comm_id;
    a->local_qpn = c->local_qpn;
    a->peer = c->peer;
  }
  return CmResult::kHandled;
}

bool CmService::NotifyRcPacket(uint32_t local_qpn, uint64_t now_us,
                               CmActionList* actions) {
  (void)now_us;
  if (actions->free() < kCmMaxActionsPerInput) return false;
  Connection* c = FindOpenByQpn(local_qpn);
  if (c == nullptr || c->state != CmConnState::kRepSent) return false;
  c->state = CmConnState::kEstablished;
  c->deadline_us = 0;
  ++stats_.established;
  ++stats_.established_by_packet;
  CmAction* a = actions->Add(CmActionType::kEstablished);
  if (a != nullptr) {
    a->local_comm_id = c->local_comm_id;
    a->local_qpn = c->local_qpn;
    a->peer = c->peer;
  }
  return true;
}

CmResult CmService::HandleDreq(const CmPeer& from, const CmMad& mad,
                               uint64_t now_us, CmActionList* actions) {
  const CmDreq& dreq = std::get<CmDreq>(mad.message);
  CmMad reply;
  reply.header = mad.header;
  reply.header.status = 0;
  reply.header.class_specific = 0;
  reply.header.reserved = 0;
  reply.header.attribute_modifier = 0;
  CmDrep drep;
  drep.local_comm_id = dreq.remote_comm_id;
  drep.remote_comm_id = dreq.local_comm_id;
  reply.message = drep;

  Connection* c = FindByLocalId(dreq.remote_comm_id);
  if (c == nullptr) {
    // Like the kernel (cm_issue_drep): a peer whose DREQ finds nothing here
    // (we restarted, or time-wait ended) still gets its DREP, so that it
    // can finish its teardown.
    SendMad(from, dreq.remote_comm_id, 0, reply, actions, nullptr);
    return CmResult::kUnknownConnection;
  }
  if (c->remote_comm_id != dreq.local_comm_id || c->peer.gid != from.gid ||
      c->local_qpn != dreq.remote_qpn) {
    return CmResult::kMismatch;
  }
  switch (c->state) {
    case CmConnState::kRepSent:
    case CmConnState::kEstablished:
      DestroyQp(*c, CmCloseReason::kPeerDisconnect, actions);
      [[fallthrough]];
    case CmConnState::kDreqSent:  // both sides disconnect at once
      SendMad(from, c->local_comm_id, c->local_qpn, reply, actions,
              &c->last_sent);
      EnterTimeWait(c, now_us);
      return CmResult::kHandled;
    case CmConnState::kTimeWait:
      // Our DREP was lost: the same DREP again, with this DREQ's TID.
      if (LoadBe16(c->last_sent.data() + 16) ==
          static_cast<uint16_t>(CmAttr::kDrep)) {
        StoreBe64(c->last_sent.data() + 8, mad.header.transaction_id);
        SendCached(*c, actions);
      } else {
        SendMad(from, c->local_comm_id, c->local_qpn, reply, actions,
                &c->last_sent);
      }
      return CmResult::kAnsweredAgain;
    case CmConnState::kFree:
      break;
  }
  return CmResult::kWrongState;
}

CmResult CmService::HandleDrep(const CmPeer& from, const CmDrep& drep,
                               uint64_t now_us) {
  Connection* c = FindByLocalId(drep.remote_comm_id);
  if (c == nullptr) return CmResult::kUnknownConnection;
  if (c->remote_comm_id != drep.local_comm_id || c->peer.gid != from.gid) {
    return CmResult::kMismatch;
  }
  if (c->state != CmConnState::kDreqSent) return CmResult::kIgnoredDuplicate;
  EnterTimeWait(c, now_us);
  return CmResult::kHandled;
}

CmResult CmService::HandleRej(const CmPeer& from, const CmRej& rej,
                              uint64_t now_us, CmActionList* actions) {
  // A REJ of our REP names our comm ID; a REJ sent after a REQ timed out on
  // the peer (before it knew our ID) carries 0 and only its own.
  Connection* c = rej.remote_comm_id != 0
                      ? FindByLocalId(rej.remote_comm_id)
                      : FindByRemote(from, rej.local_comm_id);
  if (c == nullptr) return CmResult::kUnknownConnection;
  if (c->remote_comm_id != rej.local_comm_id || c->peer.gid != from.gid) {
    return CmResult::kMismatch;
  }
  switch (c->state) {
    case CmConnState::kRepSent:
    case CmConnState::kEstablished:
      DestroyQp(*c, CmCloseReason::kPeerReject, actions);
      EnterTimeWait(c, now_us);
      return CmResult::kHandled;
    case CmConnState::kDreqSent:
      EnterTimeWait(c, now_us);
      return CmResult::kHandled;
    default:
      return CmResult::kIgnoredDuplicate;
  }
}

CmResult CmService::HandleMra(const CmPeer& from, const CmMra& mra,
                              uint64_t now_us) {
  Connection* c = FindByLocalId(mra.remote_comm_id);
  if (c == nullptr) return CmResult::kUnknownConnection;
  if (c->remote_comm_id != mra.local_comm_id || c->peer.gid != from.gid) {
    return CmResult::kMismatch;
  }
  if (mra.message_mraed != kCmMsgRep || c->state != CmConnState::kRepSent) {
    return CmResult::kWrongState;
  }
  // The peer needs longer than its REQ said before it can send the RTU:
  // wait that long before the next REP (12.6.6).
  c->deadline_us =
      now_us + c->interval_us +
      std::min(CmTimeoutMicros(mra.service_timeout), config_.max_retransmit_us);
  return CmResult::kHandled;
}

bool CmService::Disconnect(uint32_t local_qpn, uint64_t now_us,
                           CmActionList* actions) {
  if (actions->free() < kCmMaxActionsPerInput) return false;
  Connection* c = FindOpenByQpn(local_qpn);
  if (c == nullptr) return false;
  StartDisconnect(c, CmCloseReason::kLocalDisconnect, now_us, actions);
  return true;
}

bool CmService::OnTimer(uint64_t now_us, CmActionList* actions) {
  for (Connection& c : connections_) {
    if (c.state == CmConnState::kFree || c.deadline_us == 0 ||
        now_us < c.deadline_us) {
      continue;
    }
    // Worst case per connection: REJ + DestroyQp.
    if (actions->free() < 2) return true;
    switch (c.state) {
      case CmConnState::kRepSent:
        if (c.retries_left > 0) {
          --c.retries_left;
          ++stats_.rep_retransmits;
          SendCached(c, actions);
          c.deadline_us = now_us + c.interval_us;
        } else {
          // No RTU and no data after every retry: give the connection up
          // and say so (12.9.6, REJ "timeout"), so that a peer that did
          // get a REP does not keep a half-open QP.
          ++stats_.rep_timeouts;
          DestroyQp(c, CmCloseReason::kRepTimeout, actions);
          SendRej(c.peer, c.transaction_id, c.local_comm_id, c.remote_comm_id,
                  kCmMsgRep, CmRejReason::kTimeout, nullptr, actions,
                  &c.last_sent);
          EnterTimeWait(&c, now_us);
        }
        break;
      case CmConnState::kDreqSent:
        if (c.retries_left > 0) {
          --c.retries_left;
          ++stats_.dreq_retransmits;
          SendCached(c, actions);
          c.deadline_us = now_us + c.interval_us;
        } else {
          ++stats_.dreq_timeouts;
          EnterTimeWait(&c, now_us);
        }
        break;
      case CmConnState::kTimeWait:
        Free(&c);
        break;
      default:
        c.deadline_us = 0;
        break;
    }
  }
  return false;
}

}  // namespace spinnic::roce
