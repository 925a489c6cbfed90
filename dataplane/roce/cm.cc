// The CM's MADs and the passive-side service (cm.h, docs/roce-cm.md).
#include "dataplane/roce/cm.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "dataplane/common/byte_order.h"

namespace spinnic::roce {
namespace {

template <size_t N>
void LoadBytes(const uint8_t (&in)[N], std::array<uint8_t, N>* out) {
  std::memcpy(out->data(), in, N);
}
template <size_t N>
void StoreBytes(const std::array<uint8_t, N>& in, uint8_t (&out)[N]) {
  std::memcpy(out, in.data(), N);
}

void LoadPath(const cm_wire::Path& w, CmPath* p) {
  p->local_lid = LoadBe16(w.local_lid);
  p->remote_lid = LoadBe16(w.remote_lid);
  LoadBytes(w.local_gid, &p->local_gid);
  LoadBytes(w.remote_gid, &p->remote_gid);
  uint32_t flow = LoadBe32(w.flow_label_rate);
  p->flow_label = flow >> 12;
  p->packet_rate = flow & 0x3f;
  p->traffic_class = w.traffic_class;
  p->hop_limit = w.hop_limit;
  p->sl = w.sl_subnet_local >> 4;
  p->subnet_local = (w.sl_subnet_local & 0x08) != 0;
  p->local_ack_timeout = w.local_ack_timeout >> 3;
}
void StorePath(const CmPath& p, cm_wire::Path* w) {
  StoreBe16(w->local_lid, p.local_lid);
  StoreBe16(w->remote_lid, p.remote_lid);
  StoreBytes(p.local_gid, w->local_gid);
  StoreBytes(p.remote_gid, w->remote_gid);
  StoreBe32(w->flow_label_rate,
            (p.flow_label & 0xfffff) << 12 | (p.packet_rate & 0x3f));
  w->traffic_class = p.traffic_class;
  w->hop_limit = p.hop_limit;
  w->sl_subnet_local = uint8_t((p.sl & 0xf) << 4 | (p.subnet_local ? 8 : 0));
  w->local_ack_timeout = uint8_t((p.local_ack_timeout & 0x1f) << 3);
}

void LoadReq(const cm_wire::Req& w, CmReq* m) {
  m->local_comm_id = LoadBe32(w.local_comm_id);
  m->vendor_id = LoadBe24(w.vendor_id);
  m->service_id = LoadBe64(w.service_id);
  m->local_ca_guid = LoadBe64(w.local_ca_guid);
  m->local_qkey = LoadBe32(w.local_qkey);
  m->local_qpn = LoadBe24(w.local_qpn_responder_resources);
  m->responder_resources = w.local_qpn_responder_resources[3];
  m->local_eecn = LoadBe24(w.local_eecn_initiator_depth);
  m->initiator_depth = w.local_eecn_initiator_depth[3];
  m->remote_eecn = LoadBe24(w.remote_eecn_timeout_type_fc);
  uint8_t b = w.remote_eecn_timeout_type_fc[3];
  m->remote_cm_response_timeout = b >> 3;
  m->transport_service_type = (b >> 1) & 3;
  m->end_to_end_flow_control = (b & 1) != 0;
  m->starting_psn = LoadBe24(w.psn_timeout_retry);
  b = w.psn_timeout_retry[3];
  m->local_cm_response_timeout = b >> 3;
  m->retry_count = b & 7;
  m->partition_key = LoadBe16(w.partition_key);
  m->path_mtu = w.mtu_rdc_rnr >> 4;
  m->rdc_exists = (w.mtu_rdc_rnr & 8) != 0;
  m->rnr_retry_count = w.mtu_rdc_rnr & 7;
  m->max_cm_retries = w.max_cm_retries_srq_ext >> 4;
  m->srq = (w.max_cm_retries_srq_ext & 8) != 0;
  m->extended_transport_type = w.max_cm_retries_srq_ext & 7;
  LoadPath(w.primary, &m->primary);
  LoadPath(w.alternate, &m->alternate);
  m->sap_supported = (w.alternate.local_ack_timeout & 0x04) != 0;
  LoadBytes(w.private_data, &m->private_data);
}
void StoreReq(const CmReq& m, cm_wire::Req* w) {
  StoreBe32(w->local_comm_id, m.local_comm_id);
  StoreBe24(w->vendor_id, m.vendor_id);
  StoreBe64(w->service_id, m.service_id);
  StoreBe64(w->local_ca_guid, m.local_ca_guid);
  StoreBe32(w->local_qkey, m.local_qkey);
  StoreBe24(w->local_qpn_responder_resources, m.local_qpn);
  w->local_qpn_responder_resources[3] = m.responder_resources;
  StoreBe24(w->local_eecn_initiator_depth, m.local_eecn);
  w->local_eecn_initiator_depth[3] = m.initiator_depth;
  StoreBe24(w->remote_eecn_timeout_type_fc, m.remote_eecn);
  w->remote_eecn_timeout_type_fc[3] =
      uint8_t((m.remote_cm_response_timeout & 0x1f) << 3 |
              (m.transport_service_type & 3) << 1 |
              (m.end_to_end_flow_control ? 1 : 0));
  StoreBe24(w->psn_timeout_retry, m.starting_psn);
  w->psn_timeout_retry[3] =
      uint8_t((m.local_cm_response_timeout & 0x1f) << 3 | (m.retry_count & 7));
  StoreBe16(w->partition_key, m.partition_key);
  w->mtu_rdc_rnr = uint8_t((m.path_mtu & 0xf) << 4 | (m.rdc_exists ? 8 : 0) |
                           (m.rnr_retry_count & 7));
  w->max_cm_retries_srq_ext =
      uint8_t((m.max_cm_retries & 0xf) << 4 | (m.srq ? 8 : 0) |
              (m.extended_transport_type & 7));
  StorePath(m.primary, &w->primary);
  StorePath(m.alternate, &w->alternate);
  if (m.sap_supported) w->alternate.local_ack_timeout |= 0x04;
  StoreBytes(m.private_data, w->private_data);
}

void LoadMra(const cm_wire::Mra& w, CmMra* m) {
  m->local_comm_id = LoadBe32(w.local_comm_id);
  m->remote_comm_id = LoadBe32(w.remote_comm_id);
  m->message_mraed = w.message_mraed >> 6;
  m->service_timeout = w.service_timeout >> 3;
  LoadBytes(w.private_data, &m->private_data);
}
void StoreMra(const CmMra& m, cm_wire::Mra* w) {
  StoreBe32(w->local_comm_id, m.local_comm_id);
  StoreBe32(w->remote_comm_id, m.remote_comm_id);
  w->message_mraed = uint8_t((m.message_mraed & 3) << 6);
  w->service_timeout = uint8_t((m.service_timeout & 0x1f) << 3);
  StoreBytes(m.private_data, w->private_data);
}

void LoadRej(const cm_wire::Rej& w, CmRej* m) {
  m->local_comm_id = LoadBe32(w.local_comm_id);
  m->remote_comm_id = LoadBe32(w.remote_comm_id);
  m->message_rejected = w.message_rejected >> 6;
  m->reject_info_length = w.reject_info_length >> 1;
  m->reason = LoadBe16(w.reason);
  LoadBytes(w.ari, &m->ari);
  LoadBytes(w.private_data, &m->private_data);
}
void StoreRej(const CmRej& m, cm_wire::Rej* w) {
  StoreBe32(w->local_comm_id, m.local_comm_id);
  StoreBe32(w->remote_comm_id, m.remote_comm_id);
  w->message_rejected = uint8_t((m.message_rejected & 3) << 6);
  w->reject_info_length = uint8_t((m.reject_info_length & 0x7f) << 1);
  StoreBe16(w->reason, m.reason);
  StoreBytes(m.ari, w->ari);
  StoreBytes(m.private_data, w->private_data);
}

void LoadRep(const cm_wire::Rep& w, CmRep* m) {
  m->local_comm_id = LoadBe32(w.local_comm_id);
  m->remote_comm_id = LoadBe32(w.remote_comm_id);
  m->local_qkey = LoadBe32(w.local_qkey);
  m->local_qpn = LoadBe24(w.local_qpn);
  m->local_eecn = LoadBe24(w.local_eecn);
  m->starting_psn = LoadBe24(w.starting_psn);
  m->vendor_id =
      uint32_t{w.vendor_id_h} << 16 | w.vendor_id_m << 8 | w.vendor_id_l;
  m->responder_resources = w.responder_resources;
  m->initiator_depth = w.initiator_depth;
  m->target_ack_delay = w.ack_delay_failover_fc >> 3;
  m->failover_accepted = (w.ack_delay_failover_fc >> 1) & 3;
  m->end_to_end_flow_control = (w.ack_delay_failover_fc & 1) != 0;
  m->rnr_retry_count = w.rnr_retry_srq >> 5;
  m->srq = (w.rnr_retry_srq & 0x10) != 0;
  m->local_ca_guid = LoadBe64(w.local_ca_guid);
  LoadBytes(w.private_data, &m->private_data);
}
void StoreRep(const CmRep& m, cm_wire::Rep* w) {
  StoreBe32(w->local_comm_id, m.local_comm_id);
  StoreBe32(w->remote_comm_id, m.remote_comm_id);
  StoreBe32(w->local_qkey, m.local_qkey);
  StoreBe24(w->local_qpn, m.local_qpn);
  StoreBe24(w->local_eecn, m.local_eecn);
  StoreBe24(w->starting_psn, m.starting_psn);
  w->vendor_id_h = uint8_t(m.vendor_id >> 16);
  w->vendor_id_m = uint8_t(m.vendor_id >> 8);
  w->vendor_id_l = uint8_t(m.vendor_id);
  w->responder_resources = m.responder_resources;
  w->initiator_depth = m.initiator_depth;
  w->ack_delay_failover_fc = uint8_t((m.target_ack_delay & 0x1f) << 3 |
                                     (m.failover_accepted & 3) << 1 |
                                     (m.end_to_end_flow_control ? 1 : 0));
  w->rnr_retry_srq = uint8_t((m.rnr_retry_count & 7) << 5 | (m.srq ? 0x10 : 0));
  StoreBe64(w->local_ca_guid, m.local_ca_guid);
  StoreBytes(m.private_data, w->private_data);
}

void LoadRtu(const cm_wire::Rtu& w, CmRtu* m) {
  m->local_comm_id = LoadBe32(w.local_comm_id);
  m->remote_comm_id = LoadBe32(w.remote_comm_id);
  LoadBytes(w.private_data, &m->private_data);
}
void StoreRtu(const CmRtu& m, cm_wire::Rtu* w) {
  StoreBe32(w->local_comm_id, m.local_comm_id);
  StoreBe32(w->remote_comm_id, m.remote_comm_id);
  StoreBytes(m.private_data, w->private_data);
}

void LoadDreq(const cm_wire::Dreq& w, CmDreq* m) {
  m->local_comm_id = LoadBe32(w.local_comm_id);
  m->remote_comm_id = LoadBe32(w.remote_comm_id);
  m->remote_qpn = LoadBe24(w.remote_qpn);
  LoadBytes(w.private_data, &m->private_data);
}
void StoreDreq(const CmDreq& m, cm_wire::Dreq* w) {
  StoreBe32(w->local_comm_id, m.local_comm_id);
  StoreBe32(w->remote_comm_id, m.remote_comm_id);
  StoreBe24(w->remote_qpn, m.remote_qpn);
  StoreBytes(m.private_data, w->private_data);
}

void LoadDrep(const cm_wire::Drep& w, CmDrep* m) {
  m->local_comm_id = LoadBe32(w.local_comm_id);
  m->remote_comm_id = LoadBe32(w.remote_comm_id);
  LoadBytes(w.private_data, &m->private_data);
}
void StoreDrep(const CmDrep& m, cm_wire::Drep* w) {
  StoreBe32(w->local_comm_id, m.local_comm_id);
  StoreBe32(w->remote_comm_id, m.remote_comm_id);
  StoreBytes(m.private_data, w->private_data);
}

// Wire structs are byte arrays (alignment 1): read them from a copy so that
// no pointer is cast over the caller's buffer.
template <typename Wire, typename Msg, typename LoadFn>
Msg LoadMessage(const uint8_t* data, LoadFn load) {
  static_assert(sizeof(Wire) == kCmMessageBytes);
  Wire w;
  std::memcpy(&w, data, sizeof(w));
  Msg m;
  load(w, &m);
  return m;
}

size_t AttrIndex(CmAttr attr) { return static_cast<uint16_t>(attr) - 0x10; }

}  // namespace

const char* CmAttrName(CmAttr attr) {
  switch (attr) {
    case CmAttr::kReq:
      return "REQ";
    case CmAttr::kMra:
      return "MRA";
    case CmAttr::kRej:
      return "REJ";
    case CmAttr::kRep:
      return "REP";
    case CmAttr::kRtu:
      return "RTU";
    case CmAttr::kDreq:
      return "DREQ";
    case CmAttr::kDrep:
      return "DREP";
  }
  return "?";
}

const char* CmRejReasonName(uint16_t reason) {
  switch (static_cast<CmRejReason>(reason)) {
    case CmRejReason::kNoQp:
      return "no QP available";
    case CmRejReason::kNoEec:
      return "no EEC available";
    case CmRejReason::kNoResources:
      return "no resources available";
    case CmRejReason::kTimeout:
      return "timeout";
    case CmRejReason::kUnsupportedRequest:
      return "unsupported request";
    case CmRejReason::kInvalidCommId:
      return "invalid communication ID";
    case CmRejReason::kInvalidCommInstance:
      return "invalid communication instance";
    case CmRejReason::kInvalidServiceId:
      return "invalid service ID";
    case CmRejReason::kInvalidTransportType:
      return "invalid transport service type";
    case CmRejReason::kStaleConnection:
      return "stale connection";
    case CmRejReason::kRdcNotExist:
      return "RDC does not exist";
    case CmRejReason::kInvalidGid:
      return "primary remote port GID rejected";
    case CmRejReason::kInvalidLid:
      return "primary remote port LID rejected";
    case CmRejReason::kInvalidSl:
      return "invalid primary SL";
    case CmRejReason::kInvalidTrafficClass:
      return "invalid primary traffic class";
    case CmRejReason::kInvalidHopLimit:
      return "invalid primary hop limit";
    case CmRejReason::kInvalidPacketRate:
      return "invalid primary packet rate";
    case CmRejReason::kPortCmRedirect:
      return "port and CM redirection";
    case CmRejReason::kPortRedirect:
      return "port redirection";
    case CmRejReason::kInvalidMtu:
      return "invalid path MTU";
    case CmRejReason::kInsufficientResponderResources:
      return "insufficient responder resources";
    case CmRejReason::kConsumerReject:
      return "consumer reject";
    case CmRejReason::kInvalidRnrRetry:
      return "RNR retry count reject";
    case CmRejReason::kDuplicateLocalCommId:
      return "duplicate local communication ID";
    case CmRejReason::kInvalidClassVersion:
      return "unsupported class version";
    case CmRejReason::kInvalidFlowLabel:
      return "invalid primary flow label";
  }
  return "other";
}

const char* CmParseErrorName(CmParseError error) {
  switch (error) {
    case CmParseError::kNone:
      return "none";
    case CmParseError::kTruncated:
      return "truncated";
    case CmParseError::kBadBaseVersion:
      return "bad base version";
    case CmParseError::kBadMgmtClass:
      return "bad management class";
    case CmParseError::kBadClassVersion:
      return "bad class version";
    case CmParseError::kBadMethod:
      return "bad method";
    case CmParseError::kUnsupportedAttribute:
      return "unsupported attribute";
    case CmParseError::kCount:
      break;
  }
  return "?";
}

CmParseError ParseMadHeader(std::span<const uint8_t> bytes, MadHeader* out) {
  if (bytes.size() < kMadBytes) return CmParseError::kTruncated;
  const uint8_t* p = bytes.data();
  out->base_version = p[0];
  out->mgmt_class = p[1];
  out->class_version = p[2];
  out->method = p[3];
  out->status = LoadBe16(p + 4);
  out->class_specific = LoadBe16(p + 6);
  out->transaction_id = LoadBe64(p + 8);
  out->attribute_id = LoadBe16(p + 16);
  out->reserved = LoadBe16(p + 18);
  out->attribute_modifier = LoadBe32(p + 20);
  if (out->base_version != kMadBaseVersion) {
    return CmParseError::kBadBaseVersion;
  }
  if (out->mgmt_class != kMgmtClassCm) return CmParseError::kBadMgmtClass;
  if (out->class_version != kCmClassVersion) {
    return CmParseError::kBadClassVersion;
  }
  if (out->method != kMadMethodSend) return CmParseError::kBadMethod;
  return CmParseError::kNone;
}

CmParseError ParseCmMad(std::span<const uint8_t> bytes, CmMad* out) {
  CmParseError error = ParseMadHeader(bytes, &out->header);
  if (error != CmParseError::kNone) return error;
  const uint8_t* data = bytes.data() + kMadHeaderBytes;
  switch (static_cast<CmAttr>(out->header.attribute_id)) {
    case CmAttr::kReq:
      out->message = LoadMessage<cm_wire::Req, CmReq>(data, LoadReq);
      return CmParseError::kNone;
    case CmAttr::kMra:
      out->message = LoadMessage<cm_wire::Mra, CmMra>(data, LoadMra);
      return CmParseError::kNone;
    case CmAttr::kRej:
      out->message = LoadMessage<cm_wire::Rej, CmRej>(data, LoadRej);
      return CmParseError::kNone;
    case CmAttr::kRep:
      out->message = LoadMessage<cm_wire::Rep, CmRep>(data, LoadRep);
      return CmParseError::kNone;
    case CmAttr::kRtu:
      out->message = LoadMessage<cm_wire::Rtu, CmRtu>(data, LoadRtu);
      return CmParseError::kNone;
    case CmAttr::kDreq:
      out->message = LoadMessage<cm_wire::Dreq, CmDreq>(data, LoadDreq);
      return CmParseError::kNone;
    case CmAttr::kDrep:
      out->message = LoadMessage<cm_wire::Drep, CmDrep>(data, LoadDrep);
      return CmParseError::kNone;
  }
  return CmParseError::kUnsupportedAttribute;
}

CmAttr AttrOf(const CmMessage& message) {
  static constexpr CmAttr kByIndex[] = {
      CmAttr::kReq, CmAttr::kMra,  CmAttr::kRej, CmAttr::kRep,
      CmAttr::kRtu, CmAttr::kDreq, CmAttr::kDrep};
  static_assert(std::variant_size_v<CmMessage> == std::size(kByIndex));
  return kByIndex[message.index()];
}

void BuildCmMad(const CmMad& mad, std::span<uint8_t, kMadBytes> out) {
  uint8_t* p = out.data();
  const MadHeader& h = mad.header;
  p[0] = h.base_version;
  p[1] = h.mgmt_class;
  p[2] = h.class_version;
  p[3] = h.method;
  StoreBe16(p + 4, h.status);
  StoreBe16(p + 6, h.class_specific);
  StoreBe64(p + 8, h.transaction_id);
  StoreBe16(p + 16, static_cast<uint16_t>(AttrOf(mad.message)));
  StoreBe16(p + 18, h.reserved);
  StoreBe32(p + 20, h.attribute_modifier);
  uint8_t* data = p + kMadHeaderBytes;
  std::visit(
      [data](const auto& m) {
        using M = std::decay_t<decltype(m)>;
        auto store = [data](const auto& msg, auto* wire, auto fn) {
          std::memset(wire, 0, sizeof(*wire));
          fn(msg, wire);
          std::memcpy(data, wire, sizeof(*wire));
        };
        if constexpr (std::is_same_v<M, CmReq>) {
          cm_wire::Req w;
          store(m, &w, StoreReq);
        } else if constexpr (std::is_same_v<M, CmMra>) {
          cm_wire::Mra w;
          store(m, &w, StoreMra);
        } else if constexpr (std::is_same_v<M, CmRej>) {
          cm_wire::Rej w;
          store(m, &w, StoreRej);
        } else if constexpr (std::is_same_v<M, CmRep>) {
          cm_wire::Rep w;
          store(m, &w, StoreRep);
        } else if constexpr (std::is_same_v<M, CmRtu>) {
          cm_wire::Rtu w;
          store(m, &w, StoreRtu);
        } else if constexpr (std::is_same_v<M, CmDreq>) {
          cm_wire::Dreq w;
          store(m, &w, StoreDreq);
        } else {
          static_assert(std::is_same_v<M, CmDrep>);
          cm_wire::Drep w;
          store(m, &w, StoreDrep);
        }
      },
      mad.message);
}

uint64_t CmTimeoutMicros(uint8_t exponent) {
  return (uint64_t{4096} << std::min<uint8_t>(exponent, 31)) / 1000;
}

// ----- rdma_cm -----

bool ParseRdmaCmServiceId(uint64_t service_id, uint16_t* port_space,
                          uint16_t* port) {
  if ((service_id >> 32) != 0) return false;
  *port_space = uint16_t(service_id >> 16);
  *port = uint16_t(service_id);
  return true;
}

bool ParseRdmaCmHeader(std::span<const uint8_t> private_data,
                       RdmaCmHeader* out) {
  if (private_data.size() < kRdmaCmHeaderBytes) return false;
  const uint8_t* p = private_data.data();
  RdmaCmHeader h;
  h.cma_version = p[0];
  h.ip_version = p[1] >> 4;
  h.src_port = LoadBe16(p + 2);
  std::memcpy(h.src_addr.data(), p + 4, 16);
  std::memcpy(h.dst_addr.data(), p + 20, 16);
  if (h.cma_version != kRdmaCmVersion) return false;
  if (h.ip_version != 4 && h.ip_version != 6) return false;
  *out = h;
  return true;
}

void BuildRdmaCmHeader(const RdmaCmHeader& header,
                       std::span<uint8_t> private_data) {
  if (private_data.size() < kRdmaCmHeaderBytes) return;
  uint8_t* p = private_data.data();
  p[0] = header.cma_version;
  p[1] = uint8_t(header.ip_version << 4);
  StoreBe16(p + 2, header.src_port);
  std::memcpy(p + 4, header.src_addr.data(), 16);
  std::memcpy(p + 20, header.dst_addr.data(), 16);
}

CmMad BuildRdmaCmReq(const RdmaCmConnectParams& params) {
  CmMad mad;
  mad.header.transaction_id = params.transaction_id;
  mad.header.attribute_id = static_cast<uint16_t>(CmAttr::kReq);
  CmReq req;
  req.local_comm_id = params.local_comm_id;
  req.service_id = RdmaCmServiceId(kRdmaPsTcp, params.port);
  req.local_ca_guid = params.local_ca_guid;
  req.local_qpn = params.local_qpn & kPsnMask;
  req.responder_resources = params.responder_resources;
  req.initiator_depth = params.initiator_depth;
  req.remote_cm_response_timeout = params.cm_response_timeout;
  req.transport_service_type = kCmTransportRc;
  req.starting_psn = params.starting_psn & kPsnMask;
  req.local_cm_response_timeout = params.cm_response_timeout;
  req.retry_count = params.retry_count;
  req.partition_key = kDefaultPkey;
  req.path_mtu = params.path_mtu;
  req.rnr_retry_count = params.rnr_retry_count;
  req.max_cm_retries = params.max_cm_retries;
  req.primary.local_gid = params.local_gid;
  req.primary.remote_gid = params.remote_gid;
  req.primary.flow_label = params.flow_label;
  req.primary.traffic_class = params.traffic_class;
  req.primary.hop_limit = params.hop_limit;
  req.primary.local_ack_timeout = params.local_ack_timeout;
  // rdma_cm leaves the alternate path empty, LIDs included.
  req.alternate.local_lid = 0;
  req.alternate.remote_lid = 0;
  BuildRdmaCmHeader(params.rdma_cm, req.private_data);
  size_t user =
      std::min(params.user_private_data.size(), kRdmaCmUserPrivateDataBytes);
  if (user > 0) {
    std::memcpy(req.private_data.data() + kRdmaCmHeaderBytes,
                params.user_private_data.data(), user);
  }
  mad.message = req;
  return mad;
}

CmMad BuildRtuFor(const MadHeader& rep_header, const CmRep& rep) {
  CmMad mad;
  mad.header.transaction_id = rep_header.transaction_id;
  mad.header.attribute_id = static_cast<uint16_t>(CmAttr::kRtu);
  CmRtu rtu;
  rtu.local_comm_id = rep.remote_comm_id;
  rtu.remote_comm_id = rep.local_comm_id;
  mad.message = rtu;
  return mad;
}

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
  if (attr >= 0x10 && attr <= 0x16) ++stats_.sent[attr - 0x10];
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
        case CmAttr::kRep:
        default:
          // We never send a REQ, so a REP answers nothing of ours.
          result = CmResult::kUnexpectedMessage;
          break;
      }
    }
  }
  ++stats_.results[static_cast<size_t>(result)];
  return result;
}

CmResult CmService::HandleReq(const CmPeer& from, const CmMad& mad,
                              uint64_t now_us, CmActionList* actions) {
  const CmReq& req = std::get<CmReq>(mad.message);
  const uint64_t tid = mad.header.transaction_id;

  if (Connection* c = FindByRemote(from, req.local_comm_id)) {
    switch (c->state) {
      case CmConnState::kRepSent:
        // The REP was lost or is slow: answer again at once, without a
        // second QP; the retransmission budget is left alone.
        SendCached(*c, actions);
        return CmResult::kAnsweredAgain;
      case CmConnState::kTimeWait:
        SendRej(from, tid, c->local_comm_id, req.local_comm_id, kCmMsgReq,
                CmRejReason::kStaleConnection, nullptr, actions, nullptr);
        return CmResult::kRejected;
      default:
        return CmResult::kIgnoredDuplicate;
    }
  }

  // Checks in the order the kernel's CM and rdma_cm make them.
  uint16_t port_space = 0;
  uint16_t port = 0;
  if (!ParseRdmaCmServiceId(req.service_id, &port_space, &port) ||
      port_space != kRdmaPsTcp || !IsListening(port)) {
    SendRej(from, tid, 0, req.local_comm_id, kCmMsgReq,
            CmRejReason::kInvalidServiceId, nullptr, actions, nullptr);
    return CmResult::kRejected;
  }
  if (req.transport_service_type != kCmTransportRc) {
    SendRej(from, tid, 0, req.local_comm_id, kCmMsgReq,
            CmRejReason::kInvalidTransportType, nullptr, actions, nullptr);
    return CmResult::kRejected;
  }
  if (PathMtuBytes(req.path_mtu) == 0 || req.path_mtu > config_.max_path_mtu) {
    SendRej(from, tid, 0, req.local_comm_id, kCmMsgReq,
            CmRejReason::kInvalidMtu, nullptr, actions, nullptr);
    return CmResult::kRejected;
  }
  RdmaCmHeader rdma_cm;
  if (!ParseRdmaCmHeader(req.private_data, &rdma_cm)) {
    // rdma_cm's listener refuses the REQ; the kernel then rejects as the
    // consumer.
    SendRej(from, tid, 0, req.local_comm_id, kCmMsgReq,
            CmRejReason::kConsumerReject, nullptr, actions, nullptr);
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

  CmAction* create = actions->Add(CmActionType::kCreateQp);
  if (create != nullptr) {
    create->local_comm_id = c->local_comm_id;
    create->local_qpn = c->local_qpn;
    create->peer = from;
    CmQpParams& qp = create->qp;
    qp = CmQpParams{};
    qp.local_comm_id = c->local_comm_id;
    qp.port = port;
    qp.local_qpn = c->local_qpn;
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
    qp.rdma_cm = rdma_cm;
  }

  CmMad reply;
  reply.header = mad.header;
  reply.header.status = 0;
  reply.header.class_specific = 0;
  reply.header.reserved = 0;
  reply.header.attribute_modifier = 0;
  CmRep rep;
  rep.local_comm_id = c->local_comm_id;
  rep.remote_comm_id = req.local_comm_id;
  rep.local_qpn = c->local_qpn;
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
  SendMad(from, c->local_comm_id, c->local_qpn, reply, actions, &c->last_sent);
  return CmResult::kHandled;
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
