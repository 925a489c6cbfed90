// The CM's MADs: parsing and building the MAD header, the CM messages and
// rdma_cm's private-data header (cm_messages.h, docs/roce-cm.md).
#include "dataplane/roce/cm_messages.h"

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

void LoadSidrReq(const cm_wire::SidrReq& w, CmSidrReq* m) {
  m->request_id = LoadBe32(w.request_id);
  m->partition_key = LoadBe16(w.partition_key);
  m->service_id = LoadBe64(w.service_id);
  LoadBytes(w.private_data, &m->private_data);
}
void StoreSidrReq(const CmSidrReq& m, cm_wire::SidrReq* w) {
  StoreBe32(w->request_id, m.request_id);
  StoreBe16(w->partition_key, m.partition_key);
  StoreBe64(w->service_id, m.service_id);
  StoreBytes(m.private_data, w->private_data);
}

void LoadSidrRep(const cm_wire::SidrRep& w, CmSidrRep* m) {
  m->request_id = LoadBe32(w.request_id);
  m->status = w.status;
  m->additional_info_length = w.additional_info_length;
  m->qpn = LoadBe24(w.qpn);
  m->service_id = LoadBe64(w.service_id);
  m->qkey = LoadBe32(w.qkey);
  LoadBytes(w.additional_info, &m->additional_info);
  LoadBytes(w.private_data, &m->private_data);
}
void StoreSidrRep(const CmSidrRep& m, cm_wire::SidrRep* w) {
  StoreBe32(w->request_id, m.request_id);
  w->status = m.status;
  w->additional_info_length = m.additional_info_length;
  StoreBe24(w->qpn, m.qpn);
  StoreBe64(w->service_id, m.service_id);
  StoreBe32(w->qkey, m.qkey);
  StoreBytes(m.additional_info, w->additional_info);
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
    case CmAttr::kSidrReq:
      return "SIDR_REQ";
    case CmAttr::kSidrRep:
      return "SIDR_REP";
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
    case CmAttr::kSidrReq:
      out->message =
          LoadMessage<cm_wire::SidrReq, CmSidrReq>(data, LoadSidrReq);
      return CmParseError::kNone;
    case CmAttr::kSidrRep:
      out->message =
          LoadMessage<cm_wire::SidrRep, CmSidrRep>(data, LoadSidrRep);
      return CmParseError::kNone;
  }
  return CmParseError::kUnsupportedAttribute;
}

CmAttr AttrOf(const CmMessage& message) {
  static constexpr CmAttr kByIndex[] = {
      CmAttr::kReq,  CmAttr::kMra,     CmAttr::kRej,
      CmAttr::kRep,  CmAttr::kRtu,     CmAttr::kDreq,
      CmAttr::kDrep, CmAttr::kSidrReq, CmAttr::kSidrRep};
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
        } else if constexpr (std::is_same_v<M, CmDrep>) {
          cm_wire::Drep w;
          store(m, &w, StoreDrep);
        } else if constexpr (std::is_same_v<M, CmSidrReq>) {
          cm_wire::SidrReq w;
          store(m, &w, StoreSidrReq);
        } else {
          static_assert(std::is_same_v<M, CmSidrRep>);
          cm_wire::SidrRep w;
          store(m, &w, StoreSidrRep);
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

}  // namespace spinnic::roce
