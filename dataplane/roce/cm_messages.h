// The Communication Manager's wire format (IB spec vol. 1, chapter 12), as
// librdmacm uses it over RoCEv2 (docs/roce-cm.md): the 24-byte common MAD
// header and the CM messages REQ, MRA, REJ, REP, RTU, DREQ, DREP, SIDR_REQ
// and SIDR_REP (host-order structs with every field, Parse/Build with
// static_asserted offsets), rdma_cm's REQ private-data header and service
// IDs, and the active side's messages. Pure logic, no DPDK; the state machine
// that uses them is CmService (cm_service.h).
#ifndef SPINNIC_DATAPLANE_ROCE_CM_MESSAGES_H_
#define SPINNIC_DATAPLANE_ROCE_CM_MESSAGES_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <variant>

#include "dataplane/roce/ib_types.h"

namespace spinnic::roce {

// ===================== MAD and CM wire format =====================

inline constexpr size_t kMadBytes = 256;
inline constexpr size_t kMadHeaderBytes = 24;
inline constexpr size_t kCmMessageBytes = kMadBytes - kMadHeaderBytes;  // 232

inline constexpr uint8_t kMadBaseVersion = 1;
inline constexpr uint8_t kMgmtClassCm = 0x07;
inline constexpr uint8_t kCmClassVersion = 2;
// The CM's messages are all unsolicited Sends (13.4.5, table 154); it never
// uses Get/Set/response methods for connection setup.
inline constexpr uint8_t kMadMethodSend = 0x03;

// Attribute IDs of the CM messages (12.6).
enum class CmAttr : uint16_t {
  kReq = 0x0010,
  kMra = 0x0011,
  kRej = 0x0012,
  kRep = 0x0013,
  kRtu = 0x0014,
  kDreq = 0x0015,
  kDrep = 0x0016,
  // Service ID resolution for UD QPs (12.11): rdma_cm's RDMA_PS_UDP and
  // RDMA_PS_IPOIB (udaddy). We serve no UD QP; a SIDR_REQ is answered with
  // a SIDR_REP saying so.
  kSidrReq = 0x0017,
  kSidrRep = 0x0018,
};
const char* CmAttrName(CmAttr attr);

// Private data lengths: what remains of the 232 bytes after each message's
// fixed fields (12.6.5 - 12.6.11).
inline constexpr size_t kReqPrivateDataBytes = 92;
inline constexpr size_t kMraPrivateDataBytes = 222;
inline constexpr size_t kRejPrivateDataBytes = 148;
inline constexpr size_t kRepPrivateDataBytes = 196;
inline constexpr size_t kRtuPrivateDataBytes = 224;
inline constexpr size_t kDreqPrivateDataBytes = 220;
inline constexpr size_t kDrepPrivateDataBytes = 224;
inline constexpr size_t kRejAriBytes = 72;
inline constexpr size_t kSidrReqPrivateDataBytes = 216;
inline constexpr size_t kSidrRepInfoBytes = 72;
inline constexpr size_t kSidrRepPrivateDataBytes = 136;

using Gid = std::array<uint8_t, 16>;

// The common MAD header (13.4.3, table 145), host order.
struct MadHeader {
  uint8_t base_version = kMadBaseVersion;
  uint8_t mgmt_class = kMgmtClassCm;
  uint8_t class_version = kCmClassVersion;
  uint8_t method = kMadMethodSend;
  uint16_t status = 0;
  uint16_t class_specific = 0;
  uint64_t transaction_id = 0;
  uint16_t attribute_id = 0;
  uint16_t reserved = 0;
  uint32_t attribute_modifier = 0;
  bool operator==(const MadHeader&) const = default;
};

// ----- Wire layouts: byte arrays, big-endian, bit fields MSB first -----
namespace cm_wire {
struct MadHeader {
  uint8_t base_version;
  uint8_t mgmt_class;
  uint8_t class_version;
  uint8_t method;
  uint8_t status[2];
  uint8_t class_specific[2];
  uint8_t transaction_id[8];
  uint8_t attribute_id[2];
  uint8_t reserved[2];
  uint8_t attribute_modifier[4];
};
static_assert(sizeof(MadHeader) == kMadHeaderBytes);
static_assert(offsetof(MadHeader, status) == 4);
static_assert(offsetof(MadHeader, transaction_id) == 8);
static_assert(offsetof(MadHeader, attribute_id) == 16);
static_assert(offsetof(MadHeader, attribute_modifier) == 20);

// One path of a REQ (primary at 52, alternate at 96 of the message).
struct Path {
  uint8_t local_lid[2];
  uint8_t remote_lid[2];
  uint8_t local_gid[16];
  uint8_t remote_gid[16];
  uint8_t flow_label_rate[4];  // flow label:20, reserved:6, packet rate:6
  uint8_t traffic_class;
  uint8_t hop_limit;
  uint8_t sl_subnet_local;  // SL:4, subnet local:1, reserved:3
  // Local ACK timeout:5, then (alternate path only) SAP supported:1,
  // reserved:2.
  uint8_t local_ack_timeout;
};
static_assert(sizeof(Path) == 44);

// Offsets below are those of the CM message, i.e. MAD offset - 24.
struct Req {  // 12.6.5 (IBA 1.4 table 106)
  uint8_t local_comm_id[4];
  uint8_t reserved0;
  uint8_t vendor_id[3];  // ECE vendor ID (IBA 1.4)
  uint8_t service_id[8];
  uint8_t local_ca_guid[8];
  uint8_t reserved1[4];
  uint8_t local_qkey[4];
  uint8_t local_qpn_responder_resources[4];  // QPN:24, responder res.:8
  uint8_t local_eecn_initiator_depth[4];     // EECN:24, initiator depth:8
  // remote EECN:24, remote CM response timeout:5, transport type:2, E2E FC:1
  uint8_t remote_eecn_timeout_type_fc[4];
  // starting PSN:24, local CM response timeout:5, retry count:3
  uint8_t psn_timeout_retry[4];
  uint8_t partition_key[2];
  uint8_t mtu_rdc_rnr;  // path MTU:4, RDC exists:1, RNR retry count:3
  uint8_t max_cm_retries_srq_ext;  // max CM retries:4, SRQ:1, ext. type:3
  Path primary;
  Path alternate;
  uint8_t private_data[kReqPrivateDataBytes];
};
static_assert(sizeof(Req) == kCmMessageBytes);
static_assert(offsetof(Req, vendor_id) == 5);
static_assert(offsetof(Req, service_id) == 8);
static_assert(offsetof(Req, local_ca_guid) == 16);
static_assert(offsetof(Req, local_qkey) == 28);
static_assert(offsetof(Req, local_qpn_responder_resources) == 32);
static_assert(offsetof(Req, local_eecn_initiator_depth) == 36);
static_assert(offsetof(Req, remote_eecn_timeout_type_fc) == 40);
static_assert(offsetof(Req, psn_timeout_retry) == 44);
static_assert(offsetof(Req, partition_key) == 48);
static_assert(offsetof(Req, mtu_rdc_rnr) == 50);
static_assert(offsetof(Req, max_cm_retries_srq_ext) == 51);
static_assert(offsetof(Req, primary) == 52);
static_assert(offsetof(Req, primary) + offsetof(Path, local_gid) == 56);
static_assert(offsetof(Req, primary) + offsetof(Path, remote_gid) == 72);
static_assert(offsetof(Req, primary) + offsetof(Path, flow_label_rate) == 88);
static_assert(offsetof(Req, primary) + offsetof(Path, traffic_class) == 92);
static_assert(offsetof(Req, primary) + offsetof(Path, local_ack_timeout) == 95);
static_assert(offsetof(Req, alternate) == 96);
static_assert(offsetof(Req, private_data) == 140);

struct Mra {  // 12.6.6 (table 107)
  uint8_t local_comm_id[4];
  uint8_t remote_comm_id[4];
  uint8_t message_mraed;    // message MRAed:2, reserved:6
  uint8_t service_timeout;  // service timeout:5, reserved:3
  uint8_t private_data[kMraPrivateDataBytes];
};
static_assert(sizeof(Mra) == kCmMessageBytes);
static_assert(offsetof(Mra, private_data) == 10);

struct Rej {  // 12.6.7 (table 108)
  uint8_t local_comm_id[4];
  uint8_t remote_comm_id[4];
  uint8_t message_rejected;    // message rejected:2, reserved:6
  uint8_t reject_info_length;  // length:7, reserved:1
  uint8_t reason[2];
  uint8_t ari[kRejAriBytes];
  uint8_t private_data[kRejPrivateDataBytes];
};
static_assert(sizeof(Rej) == kCmMessageBytes);
static_assert(offsetof(Rej, reason) == 10);
static_assert(offsetof(Rej, ari) == 12);
static_assert(offsetof(Rej, private_data) == 84);

struct Rep {  // 12.6.8 (table 110)
  uint8_t local_comm_id[4];
  uint8_t remote_comm_id[4];
  uint8_t local_qkey[4];
  // Each 24-bit field is followed by a byte of the ECE vendor ID (IBA 1.4).
  uint8_t local_qpn[3];
  uint8_t vendor_id_h;
  uint8_t local_eecn[3];
  uint8_t vendor_id_m;
  uint8_t starting_psn[3];
  uint8_t vendor_id_l;
  uint8_t responder_resources;
  uint8_t initiator_depth;
  uint8_t ack_delay_failover_fc;  // target ACK delay:5, failover:2, E2E FC:1
  uint8_t rnr_retry_srq;          // RNR retry count:3, SRQ:1, reserved:4
  uint8_t local_ca_guid[8];
  uint8_t private_data[kRepPrivateDataBytes];
};
static_assert(sizeof(Rep) == kCmMessageBytes);
static_assert(offsetof(Rep, local_qpn) == 12);
static_assert(offsetof(Rep, vendor_id_h) == 15);
static_assert(offsetof(Rep, vendor_id_m) == 19);
static_assert(offsetof(Rep, vendor_id_l) == 23);
static_assert(offsetof(Rep, starting_psn) == 20);
static_assert(offsetof(Rep, responder_resources) == 24);
static_assert(offsetof(Rep, local_ca_guid) == 28);
static_assert(offsetof(Rep, private_data) == 36);

struct Rtu {  // 12.6.9 (table 111)
  uint8_t local_comm_id[4];
  uint8_t remote_comm_id[4];
  uint8_t private_data[kRtuPrivateDataBytes];
};
static_assert(sizeof(Rtu) == kCmMessageBytes);

struct Dreq {  // 12.6.10 (table 112)
  uint8_t local_comm_id[4];
  uint8_t remote_comm_id[4];
  uint8_t remote_qpn[4];  // remote QPN/EECN:24, reserved:8
  uint8_t private_data[kDreqPrivateDataBytes];
};
static_assert(sizeof(Dreq) == kCmMessageBytes);
static_assert(offsetof(Dreq, private_data) == 12);

struct Drep {  // 12.6.11 (table 113)
  uint8_t local_comm_id[4];
  uint8_t remote_comm_id[4];
  uint8_t private_data[kDrepPrivateDataBytes];
};
static_assert(sizeof(Drep) == kCmMessageBytes);

struct SidrReq {  // 12.11 (SIDR), the kernel's struct cm_sidr_req_msg
  uint8_t request_id[4];
  uint8_t partition_key[2];
  uint8_t reserved[2];
  uint8_t service_id[8];
  uint8_t private_data[kSidrReqPrivateDataBytes];
};
static_assert(sizeof(SidrReq) == kCmMessageBytes);
static_assert(offsetof(SidrReq, service_id) == 8);

struct SidrRep {  // 12.11 (SIDR), the kernel's struct cm_sidr_rep_msg
  uint8_t request_id[4];
  uint8_t status;
  uint8_t additional_info_length;
  uint8_t reserved[2];
  uint8_t qpn[4];  // QPN:24, reserved:8
  uint8_t service_id[8];
  uint8_t qkey[4];
  uint8_t additional_info[kSidrRepInfoBytes];
  uint8_t private_data[kSidrRepPrivateDataBytes];
};
static_assert(sizeof(SidrRep) == kCmMessageBytes);
static_assert(offsetof(SidrRep, qpn) == 8);
static_assert(offsetof(SidrRep, service_id) == 12);
static_assert(offsetof(SidrRep, qkey) == 20);
static_assert(offsetof(SidrRep, private_data) == 96);
}  // namespace cm_wire

// ----- Host-order messages. Reserved bits are dropped when parsing and
// written as zero when building; every other bit has a field. -----

struct CmPath {
  uint16_t local_lid = 0xffff;  // RoCE has no LIDs: the permissive LID
  uint16_t remote_lid = 0xffff;
  Gid local_gid{};
  Gid remote_gid{};
  uint32_t flow_label = 0;  // 20 bits
  uint8_t packet_rate = 0;  // 6 bits
  uint8_t traffic_class = 0;
  uint8_t hop_limit = 0;
  uint8_t sl = 0;  // 4 bits
  bool subnet_local = false;
  uint8_t local_ack_timeout = 0;  // 5 bits: 4.096 us * 2^x
  bool operator==(const CmPath&) const = default;
};

// Transport service types of a REQ (12.6.5).
inline constexpr uint8_t kCmTransportRc = 0;
inline constexpr uint8_t kCmTransportUc = 1;
inline constexpr uint8_t kCmTransportRd = 2;

struct CmReq {
  uint32_t local_comm_id = 0;
  uint32_t vendor_id = 0;  // 24 bits, ECE (0 from rdma_cm without ECE)
  uint64_t service_id = 0;
  uint64_t local_ca_guid = 0;
  uint32_t local_qkey = 0;
  uint32_t local_qpn = 0;           // 24 bits
  uint8_t responder_resources = 0;  // reads/atomics the sender will serve
  uint32_t local_eecn = 0;          // 24 bits
  uint8_t initiator_depth = 0;      // reads/atomics the sender will issue
  uint32_t remote_eecn = 0;         // 24 bits
  uint8_t remote_cm_response_timeout = 0;           // 5 bits: 4.096 us * 2^x
  uint8_t transport_service_type = kCmTransportRc;  // 2 bits
  bool end_to_end_flow_control = false;
  uint32_t starting_psn = 0;  // 24 bits: the first PSN the sender sends
  uint8_t local_cm_response_timeout = 0;  // 5 bits
  uint8_t retry_count = 0;                // 3 bits: for the receiver's QP
  uint16_t partition_key = kDefaultPkey;
  uint8_t path_mtu = 0;  // 4 bits, PathMtuBytes() code
  bool rdc_exists = false;
  uint8_t rnr_retry_count = 0;  // 3 bits: for the receiver's QP
  uint8_t max_cm_retries = 0;   // 4 bits
  bool srq = false;
  uint8_t extended_transport_type = 0;  // 3 bits
  CmPath primary;
  CmPath alternate;
  bool sap_supported = false;  // in the alternate path's ACK timeout byte
  std::array<uint8_t, kReqPrivateDataBytes> private_data{};
  bool operator==(const CmReq&) const = default;
};

// "Message MRAed" / "Message Rejected" codes (12.6.6, 12.6.7).
inline constexpr uint8_t kCmMsgReq = 0;
inline constexpr uint8_t kCmMsgRep = 1;
inline constexpr uint8_t kCmMsgOther = 2;  // MRA: LAP; REJ: none of the above

struct CmMra {
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  uint8_t message_mraed = 0;    // 2 bits
  uint8_t service_timeout = 0;  // 5 bits: 4.096 us * 2^x
  std::array<uint8_t, kMraPrivateDataBytes> private_data{};
  bool operator==(const CmMra&) const = default;
};

// REJ reasons (12.6.7.2). The kernel's enum ib_cm_rej_reason has
// the same values.
enum class CmRejReason : uint16_t {
  kNoQp = 1,
  kNoEec = 2,
  kNoResources = 3,
  kTimeout = 4,
  kUnsupportedRequest = 5,
  kInvalidCommId = 6,
  kInvalidCommInstance = 7,
  kInvalidServiceId = 8,
  kInvalidTransportType = 9,
  kStaleConnection = 10,
  kRdcNotExist = 11,
  kInvalidGid = 12,
  kInvalidLid = 13,
  kInvalidSl = 14,
  kInvalidTrafficClass = 15,
  kInvalidHopLimit = 16,
  kInvalidPacketRate = 17,
  kPortCmRedirect = 24,
  kPortRedirect = 25,
  kInvalidMtu = 26,
  kInsufficientResponderResources = 27,
  kConsumerReject = 28,
  kInvalidRnrRetry = 29,
  kDuplicateLocalCommId = 30,
  kInvalidClassVersion = 31,
  kInvalidFlowLabel = 32,
};
const char* CmRejReasonName(uint16_t reason);

struct CmRej {
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  uint8_t message_rejected = 0;    // 2 bits
  uint8_t reject_info_length = 0;  // 7 bits: valid bytes of ari
  uint16_t reason = 0;
  std::array<uint8_t, kRejAriBytes> ari{};
  std::array<uint8_t, kRejPrivateDataBytes> private_data{};
  bool operator==(const CmRej&) const = default;
};

// REP "Failover Accepted" (12.6.8): 0 accepted, 1 not supported, 2 rejected.
inline constexpr uint8_t kCmFailoverAccepted = 0;

struct CmRep {
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  uint32_t local_qkey = 0;
  uint32_t local_qpn = 0;     // 24 bits
  uint32_t local_eecn = 0;    // 24 bits
  uint32_t starting_psn = 0;  // 24 bits
  uint32_t vendor_id = 0;     // 24 bits, ECE
  uint8_t responder_resources = 0;
  uint8_t initiator_depth = 0;
  uint8_t target_ack_delay = 0;   // 5 bits
  uint8_t failover_accepted = 0;  // 2 bits
  bool end_to_end_flow_control = false;
  uint8_t rnr_retry_count = 0;  // 3 bits: for the REQ sender's QP
  bool srq = false;
  uint64_t local_ca_guid = 0;
  std::array<uint8_t, kRepPrivateDataBytes> private_data{};
  bool operator==(const CmRep&) const = default;
};

struct CmRtu {
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  std::array<uint8_t, kRtuPrivateDataBytes> private_data{};
  bool operator==(const CmRtu&) const = default;
};

struct CmDreq {
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  uint32_t remote_qpn = 0;  // 24 bits: the receiver's QPN
  std::array<uint8_t, kDreqPrivateDataBytes> private_data{};
  bool operator==(const CmDreq&) const = default;
};

struct CmDrep {
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  std::array<uint8_t, kDrepPrivateDataBytes> private_data{};
  bool operator==(const CmDrep&) const = default;
};

// SIDR_REP status (12.11; the kernel's enum ib_cm_sidr_status).
enum class CmSidrStatus : uint8_t {
  kSuccess = 0,
  kServiceIdNotSupported = 1,
  kRejected = 2,
  kNoQp = 3,
  kRedirect = 4,
  kUnsupportedVersion = 5,
};

struct CmSidrReq {
  uint32_t request_id = 0;
  uint16_t partition_key = 0;
  uint64_t service_id = 0;
  std::array<uint8_t, kSidrReqPrivateDataBytes> private_data{};
  bool operator==(const CmSidrReq&) const = default;
};

struct CmSidrRep {
  uint32_t request_id = 0;  // the SIDR_REQ's
  uint8_t status = 0;       // CmSidrStatus
  uint8_t additional_info_length = 0;
  uint32_t qpn = 0;  // 24 bits
  uint64_t service_id = 0;
  uint32_t qkey = 0;
  std::array<uint8_t, kSidrRepInfoBytes> additional_info{};
  std::array<uint8_t, kSidrRepPrivateDataBytes> private_data{};
  bool operator==(const CmSidrRep&) const = default;
};

using CmMessage = std::variant<CmReq, CmMra, CmRej, CmRep, CmRtu, CmDreq,
                               CmDrep, CmSidrReq, CmSidrRep>;

struct CmMad {
  MadHeader header;  // attribute_id agrees with the message's type
  CmMessage message;
  bool operator==(const CmMad&) const = default;
};

// Why a MAD was refused; counted by CmService per reason.
enum class CmParseError : uint8_t {
  kNone = 0,
  kTruncated,             // fewer than 256 bytes
  kBadBaseVersion,        // not 1
  kBadMgmtClass,          // not the CM (0x07)
  kBadClassVersion,       // not 2
  kBadMethod,             // not Send (0x03)
  kUnsupportedAttribute,  // not REQ..SIDR_REP (LAP/APR, ClassPortInfo)
  kCount,
};
const char* CmParseErrorName(CmParseError error);

// Reads a MAD: the first 256 bytes of `bytes` (more is allowed: padding).
// Never reads outside `bytes`. On error `out` is unspecified.
CmParseError ParseCmMad(std::span<const uint8_t> bytes, CmMad* out);
// Only the header, with the same checks except the attribute.
CmParseError ParseMadHeader(std::span<const uint8_t> bytes, MadHeader* out);

// Writes the 256 bytes of `mad`; header.attribute_id is taken from the
// message's type, not from `mad.header`. Fields wider than their bit field
// are masked.
void BuildCmMad(const CmMad& mad, std::span<uint8_t, kMadBytes> out);
CmAttr AttrOf(const CmMessage& message);

// 4.096 us * 2^exponent, the unit of every CM timeout field, in
// microseconds (rounded down; exponent above 31 counts as 31).
uint64_t CmTimeoutMicros(uint8_t exponent);

// ===================== rdma_cm conventions =====================

// Port spaces (librdmacm's enum rdma_port_space). rdma_cm's service ID is
// ps << 16 | port (the kernel's cma.c, rdma_get_service_id()).
inline constexpr uint16_t kRdmaPsIpoib = 0x0002;
inline constexpr uint16_t kRdmaPsIb = 0x013f;
inline constexpr uint16_t kRdmaPsTcp = 0x0106;
inline constexpr uint16_t kRdmaPsUdp = 0x0111;

inline constexpr uint64_t RdmaCmServiceId(uint16_t port_space, uint16_t port) {
  return (uint64_t{port_space} << 16) | port;
}
// True when `service_id` has rdma_cm's form (bits 63..32 zero); fills the
// port space and port.
bool ParseRdmaCmServiceId(uint64_t service_id, uint16_t* port_space,
                          uint16_t* port);

// The header rdma_cm puts at the start of the REQ's private data (cma.c's
// struct cma_hdr); the application's private data (up to 56 bytes) follows.
inline constexpr size_t kRdmaCmHeaderBytes = 36;
inline constexpr size_t kRdmaCmUserPrivateDataBytes =
    kReqPrivateDataBytes - kRdmaCmHeaderBytes;
inline constexpr uint8_t kRdmaCmVersion = 0;

struct RdmaCmHeader {
  uint8_t cma_version = kRdmaCmVersion;
  uint8_t ip_version = 4;  // 4 or 6 (the wire's bits 7..4)
  uint16_t src_port = 0;   // the active side's port
  // IPv4 addresses occupy the last 4 bytes; the first 12 are zero.
  std::array<uint8_t, 16> src_addr{};
  std::array<uint8_t, 16> dst_addr{};
  bool operator==(const RdmaCmHeader&) const = default;
};

// Reads the header from a REQ's private data; false (nothing trusted) when
// shorter than 36 bytes, cma_version is not 0 or the IP version not 4 or 6.
bool ParseRdmaCmHeader(std::span<const uint8_t> private_data,
                       RdmaCmHeader* out);
// Writes 36 bytes at the start of `private_data` (which must hold them).
void BuildRdmaCmHeader(const RdmaCmHeader& header,
                       std::span<uint8_t> private_data);

// ----- The active side's messages (no state machine: a plus for tests and
// for connecting out later) -----

// What an rdma_cm client puts in its REQ; defaults are what Linux 6.1 sent
// in rping_v4.pcap.
struct RdmaCmConnectParams {
  uint64_t transaction_id = 0;
  uint32_t local_comm_id = 0;
  uint64_t local_ca_guid = 0;
  uint32_t local_qpn = 0;
  uint32_t starting_psn = 0;
  uint16_t port = 0;     // the server's port (service ID)
  RdmaCmHeader rdma_cm;  // our source port and both IP addresses
  Gid local_gid{};
  Gid remote_gid{};
  uint8_t path_mtu = 3;  // 1024
  uint8_t responder_resources = 1;
  uint8_t initiator_depth = 1;
  uint8_t retry_count = 7;
  uint8_t rnr_retry_count = 7;
  uint8_t cm_response_timeout = 20;  // both the local and the remote one
  uint8_t max_cm_retries = 15;
  uint8_t local_ack_timeout = 19;
  uint32_t flow_label = 0;
  uint8_t traffic_class = 0;
  uint8_t hop_limit = 64;
  // The application's bytes after rdma_cm's header (at most 56 are sent).
  std::span<const uint8_t> user_private_data;
};
CmMad BuildRdmaCmReq(const RdmaCmConnectParams& params);
// The RTU that accepts `rep` (same TID, IDs swapped).
CmMad BuildRtuFor(const MadHeader& rep_header, const CmRep& rep);

}  // namespace spinnic::roce

#endif  // SPINNIC_DATAPLANE_ROCE_CM_MESSAGES_H_
