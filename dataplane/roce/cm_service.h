// CmService, the Communication Manager's passive side (docs/roce-cm.md):
// listening ports, per-connection state in a fixed table, REP
// retransmission, disconnection, time-wait. It decides; the engine executes
// the CmActions it returns (create/destroy QPs, send MADs). The engine also
// strips the RoCEv2 headers: the MAD is the 256-byte payload of a UD SEND
// ONLY to QP1 whose DETH carries Q_Key kGsiQkey. Pure logic, no DPDK; the
// messages it parses and builds are in cm_messages.h.
#ifndef SPINNIC_DATAPLANE_ROCE_CM_SERVICE_H_
#define SPINNIC_DATAPLANE_ROCE_CM_SERVICE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "dataplane/roce/cm_messages.h"
#include "dataplane/roce/ib_types.h"

namespace spinnic::roce {

// ===================== The passive-side service =====================

inline constexpr size_t kCmMaxConnections = 256;
inline constexpr size_t kCmMaxListeners = 32;
inline constexpr size_t kCmMaxActions = 16;
// Every entry point except OnTimer needs this many free action slots; with
// fewer it does nothing and returns kNoActionSpace.
inline constexpr size_t kCmMaxActionsPerInput = 4;

// Where a MAD came from / goes to: the peer's GID (the IPv4-mapped address
// for RoCEv2 over IPv4) and source QP from the DETH (the GSI, QP1).
struct CmPeer {
  Gid gid{};
  uint32_t qpn = kGsiQp;
  bool operator==(const CmPeer&) const = default;
};

// What the engine programs into the QP of an accepted connection. Our QP
// goes INIT -> RTR with (remote_qpn, expected_psn, path_mtu,
// max_dest_rd_atomic, the path) and RTR -> RTS with (send_psn, retry_count,
// rnr_retry_count, local_ack_timeout, max_rd_atomic).
struct CmQpParams {
  uint32_t local_comm_id = 0;
  uint16_t port = 0;  // the listening port the REQ asked for
  uint32_t local_qpn = 0;
  uint32_t remote_qpn = 0;
  // As Linux's CM uses them (not as the names in the REQ/REP suggest):
  // the peer sends from the REP's starting PSN (ours) and we send from the
  // REQ's.
  uint32_t send_psn = 0;           // the REQ's starting PSN
  uint32_t expected_psn = 0;       // the REP's starting PSN (the acceptor's)
  uint8_t path_mtu = 0;            // PathMtuBytes() code
  uint8_t retry_count = 0;         // the REQ's: our QP's transport retries
  uint8_t rnr_retry_count = 0;     // the REQ's: our QP's RNR retries
  uint8_t local_ack_timeout = 0;   // the REQ's primary path: 4.096 us * 2^x
  uint8_t max_rd_atomic = 0;       // our initiator depth (the REP's)
  uint8_t max_dest_rd_atomic = 0;  // our responder resources (the REP's)
  uint16_t partition_key = kDefaultPkey;
  Gid local_gid{};   // the REQ's primary remote GID: our address
  Gid remote_gid{};  // the REQ's primary local GID: the peer's address
  uint32_t flow_label = 0;
  uint8_t traffic_class = 0;
  uint8_t hop_limit = 0;
  uint8_t sl = 0;
  RdmaCmHeader rdma_cm;  // the peer's IP addresses and source port
  bool operator==(const CmQpParams&) const = default;
};

// A REQ for a listened port, as the engine's acceptor sees it.
struct CmConnectRequest {
  const CmPeer* peer = nullptr;
  const CmReq* req = nullptr;
  uint16_t port = 0;
  RdmaCmHeader rdma_cm;
  // The application's bytes after rdma_cm's header (56).
  std::span<const uint8_t> user_private_data;
  // What the REP would negotiate: our responder resources and initiator
  // depth (the acceptor may lower them).
  uint8_t responder_resources = 0;
  uint8_t initiator_depth = 0;
};

struct CmAcceptDecision {
  bool accept = false;
  // When accepting: our QP's number and first PSN (24 bits each).
  uint32_t local_qpn = 0;
  uint32_t starting_psn = 0;
  uint8_t responder_resources = 0;  // preset from the request; lower only
  uint8_t initiator_depth = 0;      // preset from the request; lower only
  std::array<uint8_t, kRepPrivateDataBytes> rep_private_data{};
  // When rejecting.
  CmRejReason reject_reason = CmRejReason::kConsumerReject;
  std::array<uint8_t, kRejPrivateDataBytes> rej_private_data{};
};

// The engine's decision on each new REQ for a listened port: reserve a QPN
// and PSN and accept, or reject (kNoQp when out of QPs, kConsumerReject by
// policy). Called synchronously from HandleMad, at most once per connection
// (a retransmitted REQ is answered from the table).
class CmAcceptor {
 public:
  virtual ~CmAcceptor() = default;
  virtual void OnConnectRequest(const CmConnectRequest& request,
                                CmAcceptDecision* decision) = 0;
};

enum class CmActionType : uint8_t {
  kCreateQp,     // qp: create and bring to RTR (and RTS) with these
  kSendMad,      // send mad to peer (UD SEND ONLY to peer.qpn, kGsiQkey)
  kEstablished,  // the connection may carry data (RTU or first packet)
  kDestroyQp,    // close_reason: tear local_qpn down (flush its WRs)
};
const char* CmActionTypeName(CmActionType type);

enum class CmCloseReason : uint8_t {
  kNone = 0,
  kPeerDisconnect,   // DREQ received
  kPeerReject,       // REJ received
  kRepTimeout,       // no RTU after max CM retries REPs
  kLocalDisconnect,  // Disconnect() called
  kStale,            // the peer reconnected with the same QPN
};
const char* CmCloseReasonName(CmCloseReason reason);

struct CmAction {
  CmActionType type = CmActionType::kSendMad;
  uint32_t local_comm_id = 0;
  uint32_t local_qpn = 0;  // 0 for MADs outside a connection
  CmPeer peer;
  std::array<uint8_t, kMadBytes> mad{};               // kSendMad
  CmQpParams qp;                                      // kCreateQp
  CmCloseReason close_reason = CmCloseReason::kNone;  // kDestroyQp
};

// The actions of one call, in the order the engine must execute them
// (a QP is created before its REP is sent).
class CmActionList {
 public:
  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  size_t free() const { return kCmMaxActions - count_; }
  const CmAction& operator[](size_t i) const { return items_[i]; }
  const CmAction* begin() const { return items_.data(); }
  const CmAction* end() const { return items_.data() + count_; }
  void clear() { count_ = 0; }
  // nullptr when full (callers check free() first).
  CmAction* Add(CmActionType type);

 private:
  std::array<CmAction, kCmMaxActions> items_{};
  size_t count_ = 0;
};

struct CmServiceConfig {
  uint64_t local_ca_guid = 0;            // REP's local CA GUID, REJ ARI
  uint8_t max_responder_resources = 16;  // our QPs' max_dest_rd_atomic
  uint8_t max_initiator_depth = 16;      // our QPs' max_rd_atomic
  uint8_t max_path_mtu = 5;              // PathMtuBytes() code we support
  uint8_t target_ack_delay = 15;         // REP: 4.096 us * 2^x (rxe says 15)
  uint8_t rnr_retry_count = 7;  // REP: the peer's RNR retries (7: forever)
  bool end_to_end_flow_control = false;  // REP: we send no credits
  // Our DREQ's response timeout (the peer's is unknown): 4.096 us * 2^x.
  uint8_t local_cm_response_timeout = 20;
  // Retransmission interval bounds (µs) around the REQ's timeouts.
  uint64_t min_retransmit_us = 100'000;
  uint64_t max_retransmit_us = 10'000'000;
  // How long a closed connection's IDs stay reserved (repeated DREQs are
  // answered, a late REQ gets REJ stale connection).
  uint64_t timewait_us = 5'000'000;
  // Mixed into local communication IDs and our transaction IDs so that a
  // restarted appliance does not reuse its predecessor's IDs.
  uint32_t id_seed = 0x5a17c0de;
};

enum class CmConnState : uint8_t {
  kFree = 0,
  kRepSent,      // REP sent, waiting for RTU (retransmitting)
  kEstablished,  // RTU or first data packet seen
  kDreqSent,     // we disconnected, waiting for DREP
  kTimeWait,     // closed; IDs reserved until timewait_us
};
const char* CmConnStateName(CmConnState state);

// What HandleMad did with a MAD (counted in CmStats::results).
enum class CmResult : uint8_t {
  kHandled = 0,        // new state, actions issued
  kAnsweredAgain,      // duplicate REQ/DREQ: the cached REP/DREP/REJ again
  kRejected,           // a REQ answered with REJ
  kIgnoredDuplicate,   // duplicate RTU/DREP/REJ, or REQ on established
  kUnknownConnection,  // no connection with those IDs (dropped)
  kWrongState,         // e.g. MRA for a message we did not send
  kMismatch,           // IDs match but the peer / QPN does not
  kParseError,         // see CmStats::parse_errors
  kUnexpectedMessage,  // a REP or SIDR_REP (we never send REQ or SIDR_REQ)
  kNoActionSpace,      // fewer than kCmMaxActionsPerInput free slots
  kSidrRefused,        // a SIDR_REQ answered "service ID not supported"
  kCount,
};
const char* CmResultName(CmResult result);

struct CmStats {
  std::array<uint64_t, static_cast<size_t>(CmParseError::kCount)>
      parse_errors{};
  std::array<uint64_t, static_cast<size_t>(CmResult::kCount)> results{};
  // By attribute - 0x10 (REQ..SIDR_REP).
  std::array<uint64_t, 9> received{};
  std::array<uint64_t, 9> sent{};
  uint64_t rejects_sent = 0;
  std::array<uint64_t, 64> rejects_by_reason{};  // reasons >= 63 in [63]
  uint64_t rep_retransmits = 0;
  uint64_t dreq_retransmits = 0;
  uint64_t rep_timeouts = 0;
  uint64_t dreq_timeouts = 0;
  uint64_t established = 0;
  uint64_t established_by_packet = 0;
  uint64_t table_full = 0;
  uint64_t timewait_reclaimed = 0;  // oldest time-wait entry reused early
};

class CmService {
 public:
  // `acceptor` must outlive the service.
  CmService(const CmServiceConfig& config, CmAcceptor* acceptor);

  // False when the table of kCmMaxListeners ports is full (true if the port
  // is already listened to).
  bool Listen(uint16_t port);
  // Existing connections stay up. False when the port was not listened to.
  bool StopListening(uint16_t port);
  bool IsListening(uint16_t port) const;
  std::span<const uint16_t> listeners() const {
    return {listeners_.data(), listener_count_};
  }

  // One MAD received on QP1 from `from` (the engine has checked the BTH,
  // DETH Q_Key and ICRC). `now_us` is a monotonic clock.
  CmResult HandleMad(const CmPeer& from, std::span<const uint8_t> mad,
                     uint64_t now_us, CmActionList* actions);

  // The first RC packet on `local_qpn` while the REP waits for its RTU
  // establishes the connection (12.9.6: the RTU may be lost). Cheap to call
  // for every packet of a QP in RTR; true if it established one.
  bool NotifyRcPacket(uint32_t local_qpn, uint64_t now_us,
                      CmActionList* actions);

  // Our side closes `local_qpn`: DREQ (retransmitted until DREP or max CM
  // retries) and DestroyQp. False if no open connection has that QPN or the
  // action list lacks space.
  bool Disconnect(uint32_t local_qpn, uint64_t now_us, CmActionList* actions);

  // Retransmissions and expiries due at `now_us`. Returns true when it
  // stopped for lack of action space (call again with an emptier list).
  // Call every few milliseconds; CM timeouts are 100 ms and more.
  bool OnTimer(uint64_t now_us, CmActionList* actions);

  // Earliest pending deadline, or UINT64_MAX when none.
  uint64_t NextDeadline() const;

  size_t connection_count() const;  // entries not kFree (time-wait too)
  // kFree when no open or time-wait connection has that QPN.
  CmConnState StateOfQpn(uint32_t local_qpn) const;
  const CmStats& stats() const { return stats_; }
  const CmServiceConfig& config() const { return config_; }

 private:
  struct Connection {
    CmConnState state = CmConnState::kFree;
    uint32_t generation = 0;
    uint32_t local_comm_id = 0;
    uint32_t remote_comm_id = 0;
    CmPeer peer;
    uint16_t port = 0;
    uint32_t local_qpn = 0;
    uint32_t remote_qpn = 0;
    uint64_t transaction_id = 0;  // of the REQ (REP, REJ) or our DREQ
    uint64_t deadline_us = 0;     // retransmit / expiry; 0: none
    uint64_t interval_us = 0;
    uint8_t retries_left = 0;
    uint8_t max_cm_retries = 0;
    std::array<uint8_t, kMadBytes> last_sent{};  // REP, DREQ, DREP or REJ
  };

  CmResult HandleReq(const CmPeer& from, const CmMad& mad, uint64_t now_us,
                     CmActionList* actions);
  // HandleReq's parts: a REQ for a connection we hold; the checks a new
  // REQ passes (the REJ reason when it fails one, the port and rdma_cm
  // header when it passes); the accepted connection's QP and REP.
  CmResult HandleRepeatedReq(Connection& c, const CmPeer& from, uint64_t tid,
                             const CmReq& req, CmActionList* actions);
  std::optional<CmRejReason> CheckNewReq(const CmReq& req, uint16_t* port,
                                         RdmaCmHeader* rdma_cm) const;
  void AddCreateQp(const Connection& c, const CmReq& req,
                   const CmConnectRequest& request,
                   const CmAcceptDecision& decision, CmActionList* actions);
  void SendRep(Connection& c, const MadHeader& req_header, const CmReq& req,
               const CmConnectRequest& request,
               const CmAcceptDecision& decision, CmActionList* actions);
  CmResult HandleRtu(const CmPeer& from, const CmRtu& rtu,
                     CmActionList* actions);
  CmResult HandleDreq(const CmPeer& from, const CmMad& mad, uint64_t now_us,
                      CmActionList* actions);
  CmResult HandleDrep(const CmPeer& from, const CmDrep& drep, uint64_t now_us);
  CmResult HandleRej(const CmPeer& from, const CmRej& rej, uint64_t now_us,
                     CmActionList* actions);
  CmResult HandleMra(const CmPeer& from, const CmMra& mra, uint64_t now_us);
  CmResult HandleSidrReq(const CmPeer& from, const CmMad& mad,
                         CmActionList* actions);

  Connection* FindByLocalId(uint32_t local_comm_id);
  Connection* FindByRemote(const CmPeer& peer, uint32_t remote_comm_id);
  Connection* FindOpenByQpn(uint32_t local_qpn);
  Connection* AllocateConnection();
  void EnterTimeWait(Connection* c, uint64_t now_us);
  void Free(Connection* c);
  void StartDisconnect(Connection* c, CmCloseReason reason, uint64_t now_us,
                       CmActionList* actions);
  void SendMad(const CmPeer& to, uint32_t local_comm_id, uint32_t local_qpn,
               const CmMad& mad, CmActionList* actions,
               std::array<uint8_t, kMadBytes>* cache);
  void SendCached(const Connection& c, CmActionList* actions);
  void SendRej(const CmPeer& to, uint64_t tid, uint32_t local_comm_id,
               uint32_t remote_comm_id, uint8_t message_rejected,
               CmRejReason reason,
               const std::array<uint8_t, kRejPrivateDataBytes>* private_data,
               CmActionList* actions, std::array<uint8_t, kMadBytes>* cache);
  void DestroyQp(const Connection& c, CmCloseReason reason,
                 CmActionList* actions);
  uint64_t RetransmitInterval(uint8_t exponent) const;

  CmServiceConfig config_;
  CmAcceptor* acceptor_;
  std::array<uint16_t, kCmMaxListeners> listeners_{};
  size_t listener_count_ = 0;
  std::array<Connection, kCmMaxConnections> connections_{};
  CmStats stats_;
  uint32_t next_tid_ = 0;
};

}  // namespace spinnic::roce

#endif  // SPINNIC_DATAPLANE_ROCE_CM_SERVICE_H_
