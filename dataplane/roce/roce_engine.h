// The RoCEv2 transport on the HPU lcores (docs/roce.md): ARP and neighbour
// solicitations for the appliance's RoCE addresses, the frame checks of
// wire.h (ICRC always), the reliable-connection queue pairs' responder
// (responder.h) with every remote access checked against the registered
// regions, and the replies: ACK/NAK, READ responses, atomic ACKs.
//
// Every queue pair is owned by one HPU (QpStatus::hpu, chosen when the QP
// number is claimed: round robin over the first roce.qp_hpus HPUs, a
// perftest client's connections together), and only its owner touches
// its state, so no QP needs a lock. Any HPU answers ARP and neighbour
// solicitations; a RoCE frame for a QP of another HPU is handed to its
// owner through the owner's inbound ring, unparsed beyond the BTH's
// destination QP. The connection manager (QP1) runs on HPU 0: it tells an
// owner to create or destroy a QP it accepted or closed through the owner's
// command ring, and an owner tells it of a connection's first packet
// through the CM notice ring. The control plane creates QPs and posts
// operations through the owner's command ring and destroys them through HPU
// 0's (the CM may have to disconnect first). No allocation after
// construction on the packet path; the reply mbufs come from the
// dataplane's pool.
#ifndef SPINNIC_DATAPLANE_ROCE_ROCE_ENGINE_H_
#define SPINNIC_DATAPLANE_ROCE_ROCE_ENGINE_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "dataplane/classifier.h"
#include "dataplane/common/clock.h"
#include "dataplane/counter.h"
#include "dataplane/log2_histogram.h"
#include "dataplane/roce/cm.h"
#include "dataplane/roce/dcqcn.h"
#include "dataplane/roce/ib_types.h"
#include "dataplane/roce/qp_service.h"
#include "dataplane/roce/requester.h"
#include "dataplane/roce/responder.h"
#include "dataplane/roce/roce_config.h"
#include "dataplane/roce/service_ports.h"
#include "dataplane/roce/wire.h"
#include "dataplane/spin_engine.h"
#include "dataplane/transport.h"
#include "handlers/naaice/function.h"

struct rte_mbuf;
struct rte_mempool;
struct rte_ring;

namespace spinnic {
class Ectx;
class EctxTable;
class Hpu;
class MemoryRegion;
class RegionTable;
class RegionTx;
}  // namespace spinnic

namespace spinnic::roce {

// Why a frame to our RoCE addresses was dropped besides the parse errors
// of wire.h (counted apart, by ParseError). Names in RoceDropName().
enum class RoceDrop : uint8_t {
  kNotRoce = 0,     // to our address but neither RoCE, ARP nor NS
  kNeighbor,        // a malformed ARP / neighbour solicitation
  kUnknownQp,       // destination QP not in use
  kWrongPeer,       // source address is not the QP's peer
  kNotRequest,      // a response or ACK on a QP with nothing outstanding
  kUnsupported,     // an opcode the appliance does not serve (UD to a QP)
  kBadGsi,          // on QP1 but not a UD SEND of a MAD with the GSI Q_Key
  kBadMad,          // a MAD the connection manager refused (cm.h reasons)
  kResponder,       // the responder dropped it (its reasons per QP)
  kReplyQueueFull,  // the QP's replies are backed up (requester retries)
  kNoBuffer,        // mbuf pool exhausted while answering
  kHandoffFull,     // HPU 0's inbound ring was full
  kCnpUnknownQp,    // a CNP (cnp.h) whose destination QP is not in use
  kCount,
};
const char* RoceDropName(RoceDrop drop);
inline constexpr size_t kRoceDropCount = static_cast<size_t>(RoceDrop::kCount);
inline constexpr size_t kNakCodeCount = 5;  // NakCode values
inline constexpr size_t kResponderDropReasons =
    static_cast<size_t>(ResponderDropReason::kCount);
inline constexpr size_t kParseErrorCount =
    static_cast<size_t>(ParseError::kCount);

struct alignas(64) RoceCounters {
  // The requester's round-trip samples, every QP of the HPU
  // (spinnic_roce_rtt_seconds, docs/metrics.md).
  RttHistogram rtt;
  Counter rx_packets;
  Counter rx_bytes;
  Counter tx_packets;
  Counter tx_bytes;
  Counter writes;  // RDMA WRITE packets whose payload was stored
  Counter write_bytes;
  Counter reads;             // READ requests served (responses queued)
  Counter read_bytes;        // READ response payload bytes sent
  Counter atomics;           // atomics executed
  Counter ops_posted;        // our own requests (work requests) posted
  Counter ops_completed;     // ... completed successfully
  Counter ops_failed;        // ... completed in error (or refused)
  Counter retransmits;       // our request packets sent again
  Counter write_immediates;  // WRITE with immediate messages completed
  Counter sends;             // SEND messages received whole
  Counter send_bytes;
  Counter handler_messages;  // WRITE messages delivered to a handler
  Counter handler_drops;     // WRITE packets a handler kept from memory
  Counter handler_replies;   // SENDs handlers posted on their message's QP
  Counter handler_replies_refused;  // ... refused: too long, or no buffer
  Counter naaice_sessions;     // NAAICE connections (MRSP exchanges) started
  Counter naaice_calls;        // functions run
  Counter naaice_errors;       // calls answered with a nonzero return code
  Counter naaice_function_ns;  // time spent in functions
  Counter qp_errors;           // QPs moved to the error state
  Counter acks_sent;           // ACKs (coalesced) and re-ACKs
  Counter naks_sent;           // NAKs of every code, RNR NAKs included
  Counter duplicates;          // duplicate requests answered
  // READ response packets left unsent because a duplicate READ asked for
  // them again (its own responses carry them).
  Counter read_responses_superseded;
  Counter read_slowdowns;  // duplicate READs that slowed a QP's responses
  // Every request packet a QP's responder judged ends in exactly one of
  // these (docs/roce.md "Refusals"): executed (new, in sequence, its
  // memory checked), refused with a NAK of its code (counted when decided,
  // whether or not the NAK leaves), an RNR NAK, a duplicate answered, or a
  // responder drop by reason (drop_responder is their sum).
  Counter executed;
  std::array<Counter, kNakCodeCount> refused_naks;  // by NakCode
  Counter refused_rnr;
  std::array<Counter, kResponderDropReasons> responder_drops;
  Counter handoffs;     // frames passed to HPU 0
  Counter cm_received;  // CM MADs on QP1
  Counter cm_sent;
  Counter cm_connections;  // connections accepted (REP sent)
  Counter cm_rejects;      // REJ sent
  // ... of them, REQs refused for want of a QP (the QP table, roce.max_qps,
  // is full: REJ reason 1, No QP available) and of a CM connection slot
  // (kCmMaxConnections in set-up or time-wait: REJ reason 3, No resources).
  Counter cm_rejects_no_qp;
  Counter cm_rejects_no_resources;
  // SIDR_REQs (UD service resolution: rdma_cm's UDP port space) answered
  // with a SIDR_REP "service ID not supported": we serve no UD QP.
  Counter cm_sidr_refused;
  // By ServiceKind: connections the CM accepted for it (QPs created over
  // gRPC are verbs'), and the SEND messages it consumed.
  std::array<Counter, kServiceKinds> service_connections;
  std::array<Counter, kServiceKinds> service_sends;
  // perftest data connections rejected: no region of perftest_region_bytes.
  Counter perftest_region_rejects;
  Counter neighbor_answers;
  Counter udp_checksum_zero;  // frames with UDP checksum 0 (rxe sends it)
  // READ response and WRITE/SEND request packets whose payload went out of
  // the region (region_tx.h), and those meant to that were copied instead.
  Counter zero_copy_packets;
  Counter zero_copy_fallbacks;
  // Congestion control (docs/congestion.md): CE-marked packets received on
  // our QPs, CNPs sent for them (at most one per QP per interval) and held
  // back by the interval, valid CNPs received, and those received on a QP
  // without congestion control (counted and ignored).
  Counter ecn_ce_received;
  Counter cnp_sent;
  Counter cnp_held;
  Counter cnp_received;
  Counter cnp_ignored;
  std::array<Counter, kParseErrorCount> parse_errors;
  std::array<Counter, kRoceDropCount> drops;

  void Drop(RoceDrop reason) { drops[static_cast<size_t>(reason)].Add(); }
};

using Gid = std::array<uint8_t, 16>;  // IPv6, or IPv4-mapped
using Mac = std::array<uint8_t, 6>;

// What a queue pair is created with (by the CM or over gRPC).
struct QpSpec {
  uint32_t remote_qpn = 0;
  Gid remote_ip{};
  Gid local_ip{};  // one of our addresses, same family as remote_ip
  Mac remote_mac{};
  uint32_t pmtu = 1024;
  // The PSN we expect first from the peer (its starting PSN) and our own
  // starting PSN (for our requests and READ responses' numbering is the
  // peer's).
  uint32_t expected_psn = 0;
  uint32_t send_psn = 0;
  uint8_t max_rd_atomic = 16;  // responder resources
  // The CM REQ's flow label (rdma_cm connections): the UDP source port is
  // derived from it as rxe does; 0: from the QP numbers.
  uint32_t flow_label = 0;
  // Our requests on the QP (results written back, gRPC operations): READs
  // and atomics outstanding at once (the peer's responder resources), and
  // the retry counts the peer asked for (CM REQ) or the config's.
  uint8_t initiator_depth = 16;
  uint8_t retry_count = 7;
  uint8_t rnr_retry = 7;
  uint32_t access =
      kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
};

// A request to a QP's owner HPU. The control plane's: the submitter owns
// it and keeps it alive until `done`; the HPU sets `done` (release) after
// applying it. The CM's (HPU 0 to another owner, `from_engine`): the HPU
// that applies it deletes it.
struct RoceCommand {
  // kSetServices: the CM's HPU adopts `services` (service_ports.h).
  enum class Kind : uint8_t { kCreateQp, kDestroyQp, kPost, kSetServices };
  Kind kind = Kind::kCreateQp;
  uint32_t qpn = 0;
  QpSpec spec;
  // Sent by another HPU's engine; deleted once applied. kCreateQp: a QP
  // the CM accepted on `cm_port`, with the service its REP advertised.
  // kDestroyQp: destroy at once (the CM already closed the connection).
  bool from_engine = false;
  bool from_cm = false;
  uint16_t cm_port = 0;
  std::unique_ptr<QpService> service;
  // kPost: an operation of ours on the QP. wr.local_offset is the address
  // of its local bytes in `region`, which the submitter pinned; HPU 0
  // unpins it when the operation completes.
  WorkRequest wr;
  const MemoryRegion* region = nullptr;
  // kPost results, valid once done.
  bool posted = false;  // false: refused (post_result says why)
  PostResult post_result = PostResult::kOk;
  CompletionStatus status = CompletionStatus::kSuccess;
  uint64_t atomic_original = 0;
  ServicePorts services;
  std::atomic<bool> done{false};
};

// One QP slot as every side sees it. `claimed` reserves the slot (the
// control plane for CreateQp, the CM for an accepted REQ: compare-exchange
// 0 -> 1; the owner releases it when the QP is destroyed). `hpu`, the
// owner, is written by the claimer before it tells the owner; any HPU reads
// it to steer the QP's frames. The rest is written by the owner (relaxed)
// for ListQps: a reader may see a QP being recreated half-updated, which
// only a display can observe.
struct alignas(64) QpStatus {
  std::atomic<uint8_t> claimed{0};
  std::atomic<uint16_t> hpu{0};
  std::atomic<bool> in_use{false};
  // Set by the control plane when it asks for the QP's destruction, cleared
  // by HPU 0 when it creates a QP in the slot.
  std::atomic<bool> destroying{false};
  std::atomic<bool> from_cm{false};
  std::atomic<uint16_t> cm_port{0};
  std::atomic<uint8_t> service{0};  // ServiceKind
  std::atomic<uint8_t> state{static_cast<uint8_t>(QpState::kReset)};
  std::atomic<uint32_t> remote_qpn{0};
  std::atomic<uint64_t> remote_ip_high{0};
  std::atomic<uint64_t> remote_ip_low{0};
  std::atomic<uint64_t> local_ip_high{0};
  std::atomic<uint64_t> local_ip_low{0};
  std::atomic<uint64_t> remote_mac{0};
  std::atomic<uint32_t> pmtu{0};
  std::atomic<uint32_t> first_expected_psn{0};
  std::atomic<uint32_t> send_psn{0};
  std::atomic<uint8_t> max_rd_atomic{0};
  std::atomic<uint32_t> expected_psn{0};
  std::atomic<uint32_t> msn{0};
  std::atomic<uint64_t> packets{0};
  std::atomic<uint64_t> naks{0};
  // Congestion control: the requester's rate (b/s, 0 without congestion
  // control), alpha in millionths, its next send time (congestion clock,
  // ns), CNPs received and sent on this QP, CE-marked packets it received
  // (with congestion control off too).
  std::atomic<uint64_t> rate_bps{0};
  std::atomic<uint32_t> alpha_ppm{0};
  std::atomic<uint64_t> next_send_ns{0};
  std::atomic<uint64_t> cnps_received{0};
  std::atomic<uint64_t> cnps_sent{0};
  std::atomic<uint64_t> ce_marks{0};

  void StoreSpec(const QpSpec& spec);
  QpSpec LoadSpec() const;
  // Claims the slot; false when someone else holds it.
  bool Claim() {
    uint8_t expected = 0;
    return claimed.compare_exchange_strong(expected, 1,
                                           std::memory_order_acq_rel);
  }
};

// Events the transport raises (Event.data says more; docs/roce.md).
enum RoceEvent : uint32_t {
  // An RDMA WRITE with immediate completed: data = qpn, immediate (as on
  // the wire), MSN (u32 each, little-endian).
  kEventRoceWriteImm = 0xffff0201,
  // A QP entered the error state: data = qpn.
  kEventRoceQpError = 0xffff0202,
  // A SEND message arrived on a plain (verbs service) QP: data = qpn,
  // length, immediate (as on the wire), flags (bit 0: with immediate), u32
  // each little-endian, then the message's first bytes (up to 32).
  kEventRoceSend = 0xffff0203,
};

// QP numbers: slot s is QP kFirstQpn + s (QP 0 and 1 are the SMI/GSI).
inline constexpr uint32_t kFirstQpn = 0x100;

// Shared with the dataplane (pointers owned by it).
struct RoceShared {
  const RoceConfig* config = nullptr;
  std::atomic<const RegionTable*>* regions = nullptr;
  rte_mempool* pool = nullptr;
  // Zero-copy READ responses (RoceConfig::zero_copy_min_bytes); nullptr
  // when off or the port cannot send chained mbufs.
  RegionTx* region_tx = nullptr;
  rte_ring* const* commands = nullptr;  // per HPU: RoceCommand*, MP/SC
  // uint32_t QPNs, MP/SC to HPU 0: a CM connection's first RC packet
  // arrived at its owner (the CM stops waiting for the RTU).
  rte_ring* cm_notices = nullptr;
  rte_ring* const* inbound = nullptr;
  uint32_t hpu_count = 1;
  // The HPUs that own QPs: 0 .. qp_hpus - 1 (roce.qp_hpus, at most
  // hpu_count).
  uint32_t qp_hpus = 1;
  QpStatus* qp_status = nullptr;  // config->max_qps entries
  // The next QP's owner, round robin (the control plane's CreateQp and the
  // CM share it).
  std::atomic<uint32_t>* next_qp_hpu = nullptr;
};

// The owner of a new QP: the next of the QP-owning HPUs, round robin.
uint32_t NextQpHpu(const RoceShared& shared);

class RoceEngine final : public CmAcceptor, public TransportEngine {
 public:
  RoceEngine(uint32_t hpu_index, const RoceShared& shared, Hpu* hpu,
             SpinEngine* spin);
  ~RoceEngine() override;
  RoceEngine(const RoceEngine&) = delete;
  RoceEngine& operator=(const RoceEngine&) = delete;

  // Whether the classified frame is ours: IPv4/IPv6 to one of our
  // addresses, an ARP frame, or ICMPv6 to the solicited-node group of one.
  bool ForUs(const ParsedFrame& frame) const override;
  // Takes a frame ForUs() accepted; always consumes the mbuf.
  // `table` is the ECTX table version of this poll: RDMA WRITEs into a
  // region an ECTX is bound to run its handlers (sPIN).
  void Receive(rte_mbuf* packet, const ParsedFrame& frame, uint16_t in_port,
               const EctxTable& table) override;
  // Commands, queued replies (READ responses), coalesced ACKs. Once per
  // HPU loop iteration.
  void Poll(const EctxTable& table) override;
  // Our IPv4 (mapped) and IPv6 addresses; ARP and ICMPv6 are always
  // offered.
  std::optional<std::span<const IpAddress>> Addresses() const override {
    return std::span<const IpAddress>(config_.addresses);
  }
  // Releases pinned regions and queued work (shutdown).
  void Shutdown() override;
  // A handler answering the RoCE message it runs on (PeerPut with no peer
  // name, kind stream): a SEND of put.data on that message's QP, the bytes
  // copied into one of kHandlerReplies buffers until acknowledged. False
  // when the put names a peer (DiAD's) or no RoCE message is being handled;
  // false and counted (handler_replies_refused) when it is not a stream
  // put, is empty or over kHandlerReplyBytes, every buffer is in flight or
  // the send queue is full.
  bool HandlerPut(const PeerPut& put, uint32_t ectx_id) override;
  static constexpr uint32_t kHandlerReplies = 32;
  static constexpr uint32_t kHandlerReplyBytes = 4160;

  const RoceCounters& counters() const { return counters_; }
  const Responder* responder(uint32_t qpn) const;
  // The connection manager (HPU 0 only; nullptr elsewhere).
  const CmService* cm() const { return cm_.get(); }
  // The HPU that runs the connection manager (QP1).
  static constexpr uint32_t kCmHpu = 0;

 private:
  struct ReplyJob {
    ResponderReply reply;
    uint32_t sent = 0;                     // READ response packets sent so far
    const MemoryRegion* region = nullptr;  // pinned while a READ is served
    const uint8_t* data = nullptr;         // the READ's first byte
  };
  static constexpr uint32_t kReplyQueue = 32;  // > max_rd_atomic + ACKs

  struct Qp {
    bool in_use = false;
    uint32_t qpn = 0;
    QpSpec spec;
    FrameParams params;  // addresses, UDP source port, checksum policy
    Responder responder{ResponderConfig{}};
    std::array<ReplyJob, kReplyQueue> replies;
    uint32_t reply_head = 0;  // next to send
    uint32_t reply_count = 0;
    // READ responses to a requester that lost some (a duplicate READ asked
    // for them again): at most one packet per read_gap_ns (0: unpaced),
    // the gap doubled by each duplicate READ and cut by a quarter by each
    // new one (docs/roce-responder.md, "A requester that loses READ
    // responses").
    uint64_t read_gap_ns = 0;
    uint64_t next_read_ns = 0;
    bool touched = false;       // received in this poll: flush its ACK
    bool awaiting_rtu = false;  // CM REP sent: the first packet establishes
    // Our side: the requester (created with the QP) and, per work request
    // slot (wr_id % kSqDepth), what to release or tell when it completes.
    std::unique_ptr<Requester> requester;
    struct LocalWr {
      const MemoryRegion* region = nullptr;  // pinned
      RoceCommand* command = nullptr;        // a gRPC operation, or null
      bool from_service = false;             // the service's: tell it
      uint32_t service_tag = 0;
      int32_t handler_reply = -1;  // a handler's reply buffer to free
    };
    // What consumes its SENDs (qp_service.h); set while in use.
    std::unique_ptr<QpService> service;
    // The SEND message being received (service->max_message_bytes()).
    std::vector<uint8_t> receive;
    // Where SENDs land: `receive`, or the service's ReceiveArea().
    std::span<uint8_t> receive_area;
    uint32_t receive_length = 0;
    // The service wants OnWrite; the WRITE message in progress began at
    // this address (its RETH).
    bool service_writes = false;
    uint64_t write_start_va = 0;
    uint16_t cm_port = 0;     // the rdma_cm port it was connected on, or 0
    uint64_t generation = 0;  // creation order (Sibling: the newest)
    // The SEND or WRITE message in progress runs this ECTX's handlers
    // (sPIN), or kNoEctx; the SEND in progress goes to the QP's handler
    // rather than its service.
    uint32_t message_ectx = kNoEctx;
    bool send_to_handler = false;
    MessageState spin;
    std::array<LocalWr, 256> wrs{};
    uint64_t next_wr_id = 0;
    bool requesting = false;  // in requesting_
    // Congestion control (config_.congestion.enabled): the reaction
    // point's rate and the pacing it sets (no packet of ours before
    // next_send_ns), the notification point's last CNP.
    std::optional<DcqcnRateController> dcqcn;
    uint64_t next_send_ns = 0;
    uint64_t last_cnp_ns = 0;
    bool cnp_sent_once = false;
    bool cc_listed = false;  // in cc_timers_
    bool requester_error_raised = false;
  };
  static constexpr uint32_t kSqDepth = 256;
  static constexpr uint32_t kNoEctx = UINT32_MAX;
  struct Neighbor {
    Gid ip{};
    Mac mac{};
  };
  static constexpr uint32_t kNeighbors = 64;

  bool RunsCm() const { return hpu_index_ == kCmHpu; }
  // The HPU that processes `packet`, a RoCE frame to one of our addresses:
  // its destination QP's owner, HPU 0 for QP1, this HPU for a frame too
  // short to name a QP or a QP number out of range (it counts the drop).
  uint32_t OwnerOf(const rte_mbuf* packet, const ParsedFrame& frame) const;
  // NAAICE functions by code under ECTX table `table`: the built-ins, then
  // the installed naaice_function ECTXs' over them. Rebuilt when the table
  // version changes (installs are rare; a call is a whole message).
  const ::spinnic::naaice::FunctionTable& FunctionsFor(const EctxTable& table);
  void HandOff(rte_mbuf* packet, uint16_t in_port, uint32_t owner);
  void AnswerNeighbor(rte_mbuf* packet, const ParsedFrame& frame,
                      uint16_t in_port);
  // What Execute needs of the packet to run handlers on it in place.
  struct Arrival {
    rte_mbuf* mbuf = nullptr;
    const ParsedFrame* frame = nullptr;
    const Packet* packet = nullptr;
    uint16_t in_port = 0;
    const EctxTable* table = nullptr;
  };
  void ReceiveRoce(rte_mbuf* packet, const ParsedFrame& frame, uint16_t in_port,
                   const EctxTable& table);
  void Request(Qp& qp, const Arrival& arrival, const RegionTable& regions);
  // Runs a committed plan's memory access; returns false (and the NAK is
  // queued) when the access check failed.
  bool Execute(Qp& qp, const ResponderPlan& plan, const Arrival& arrival,
               const RegionTable& regions);
  // Runs the bound ECTX's handlers on a WRITE packet (header on the first,
  // completion after the last); false when they drop its payload.
  bool RunHandlers(Qp& qp, const ResponderPlan& plan, const Arrival& arrival,
                   const MemoryRegion* region);
  static const Ectx* BoundEctx(const Qp& qp, const EctxTable& table,
                               const MemoryRegion* region);
  void RaiseQpError(const Qp& qp);
  void Queue(Qp& qp, const ResponderReply& reply,
             const MemoryRegion* region = nullptr,
             const uint8_t* data = nullptr);
  void SendReplies(Qp& qp, uint32_t budget);
  // A duplicate READ from `psn` supersedes what is still unsent of the
  // queued responses from that PSN on (rxe does the same); the QP's READ
  // responses are paced from then on.
  void OnReadReplayed(Qp& qp, uint32_t psn);
  bool SendAck(Qp& qp, const ResponderReply& reply);
  bool SendReadResponse(Qp& qp, ReplyJob& job);
  // A frame as headers, `length` bytes of `region` at `bytes` and the
  // trailer (zero-copy); nullptr when it cannot be had (the caller copies).
  rte_mbuf* ZeroCopyFrame(const FrameParams& params, const MemoryRegion& region,
                          const Bth& bth, const ExtHeaders& ext,
                          const uint8_t* bytes, uint32_t length);
  // Sends a ZeroCopyFrame and counts it: its bytes on the wire, or 0 (a
  // fallback, counted when zero-copy was meant) when the caller must copy.
  uint32_t SendZeroCopy(const FrameParams& params, const MemoryRegion& region,
                        const Bth& bth, const ExtHeaders& ext,
                        const uint8_t* bytes, uint32_t length);
  // A reply frame with headers written and `payload` pointing at its
  // payload; the caller fills the payload, then FinishAndSend.
  rte_mbuf* NewFrame(const FrameParams& params, const Bth& bth,
                     const ExtHeaders& ext, uint32_t payload_length,
                     uint8_t** payload);
  void FinishAndSend(const FrameParams& params, rte_mbuf* m);
  void ApplyCommands();
  // The CM's decisions for a QP owned by another HPU, sent to it; false
  // (and counted) when its command ring is full.
  bool SendToOwner(uint32_t owner, std::unique_ptr<RoceCommand> command);
  // CM notices from other owners (HPU 0).
  void ApplyCmNotices();
  // Our requests: post, send what the requester allows, its timers, the
  // responses, completions.
  bool PostWork(Qp& qp, WorkRequest wr, const MemoryRegion* region,
                RoceCommand* command);
  void DriveRequester(Qp& qp, uint64_t now_ns);
  // The frame's bytes, or 0 when no mbuf was to be had.
  uint32_t SendRequestPacket(Qp& qp, const PacketPlan& plan);
  void Response(Qp& qp, const Packet& p, const uint8_t* frame);
  void DrainCompletions(Qp& qp);
  // Congestion control: the clock it reads, a CE mark on one of `qp`'s
  // packets (the notification point), a received CNP (the reaction
  // point), the DCQCN timers, and what ListQps shows.
  uint64_t RequesterNow() const {
    return config_.requester_now_ns != nullptr ? config_.requester_now_ns()
                                               : clock::NowNanos();
  }
  uint64_t CongestionNow() const {
    return config_.congestion.now_ns != nullptr ? config_.congestion.now_ns()
                                                : clock::NowNanos();
  }
  void OnCeMarked(Qp& qp);
  void ReceiveCnp(rte_mbuf* packet, const ParsedFrame& frame);
  // A request packet of `bytes` left (`paced`: at `cc_now`, throttled).
  void OnRequestSent(Qp& qp, uint32_t bytes, bool paced, uint64_t cc_now);
  void RunCongestionTimers();
  void ListTimers(Qp& qp);
  void PublishRate(const Qp& qp);
  void FailWork(Qp& qp);
  // Services (qp_service.h): what a connection on `cm_port` (0: created
  // over gRPC) runs, the actions they take on their QP.
  class ServiceActions;
  // `perftest_later`: on a perftest port, not the peer's first connection
  // there: a data connection or another client's control connection,
  // decided by what it does (PerftestService::Role::kUndecided).
  std::unique_ptr<QpService> NewService(uint32_t qpn, uint16_t cm_port,
                                        const Gid& local_ip,
                                        bool perftest_later = false) const;
  // Where the QP's SENDs land: the service's ReceiveArea(), or a buffer of
  // its max_message_bytes() (asked when the QP is created, and again when
  // a perftest connection's role was decided).
  void SetReceiveArea(Qp& qp);
  bool ReceiveSend(Qp& qp, const ResponderPlan& plan, const Arrival& arrival,
                   const uint8_t* payload);
  QpService* Sibling(const Qp& qp, uint32_t remote_qpn);
  // QpActions::Start: `sibling` (a Sibling of `qp`) starts with actions on
  // its own QP.
  void StartSibling(const Qp& qp, QpService* sibling, const EctxTable* table);
  // perftest's ports: perftest_port and perftest_write_lat.port.
  bool IsPerftestPort(uint16_t port) const {
    return port != 0 &&
           (port == services_.port(ServiceSlot::kPerftest) ||
            port == services_.port(ServiceSlot::kPerftestWriteLat));
  }
  // kSetServices on the CM's HPU: listen on the new ports, stop on the old.
  void SetServices(const ServicePorts& services);
  void FailQp(Qp& qp);
  static uint8_t* Resolve(const Qp& qp, const RegionTable& regions,
                          uint32_t rkey, uint64_t va, uint32_t length,
                          uint32_t access, const MemoryRegion** region);
  // `service`: what the CM accepted the connection with; null: a new one.
  void CreateQp(uint32_t qpn, const QpSpec& spec, bool from_cm = false,
                uint16_t cm_port = 0,
                std::unique_ptr<QpService> service = nullptr);
  // The owner of a QP the CM accepts from `peer` on `cm_port`: the next
  // round robin, but on a perftest port the HPU of that client's newest
  // live connection there (its control and data QPs see each other as
  // siblings, QpActions::Sibling).
  uint32_t PlaceCmQp(const Gid& peer, uint16_t cm_port) const;
  // Whether `peer` has a live connection on `cm_port` (HPU 0).
  bool HasCmConnection(const Gid& peer, uint16_t cm_port) const;
  void DestroyQp(Qp& qp);
  // The connection manager: MADs on QP1, its actions, its timers.
  void ReceiveGsi(const Packet& p, const uint8_t* frame);
  void RunCmActions();
  void SendMad(const CmPeer& peer, std::span<const uint8_t, kMadBytes> mad);
  void OnConnectRequest(const CmConnectRequest& request,
                        CmAcceptDecision* decision) override;
  void Learn(const Gid& ip, const uint8_t* mac);
  const Mac* Lookup(const Gid& ip) const;
  const Gid* LocalFor(const Gid& remote) const;
  void Publish(const Qp& qp);
  Qp* FindQp(uint32_t qpn);

  const uint32_t hpu_index_;
  const RoceShared shared_;
  const RoceConfig& config_;
  // Which port runs which service: the config's, then SetService's (the
  // CM's HPU only: it accepts connections and makes their services).
  ServicePorts services_;
  Hpu* const hpu_;
  SpinEngine* const spin_;
  std::vector<Gid> ipv6_;  // our IPv6 addresses
  std::vector<std::array<uint8_t, 4>> ipv4_;
  std::vector<Gid> solicited_;  // their solicited-node groups
  // slot = qpn - kFirstQpn; made when this HPU first owns the slot.
  std::vector<std::unique_ptr<Qp>> qps_;
  std::vector<uint32_t> touched_;     // slots received on in this poll
  std::vector<uint32_t> busy_;        // slots with queued replies
  std::vector<uint32_t> requesting_;  // slots whose requester has work
  // Slots whose DCQCN controller has a timer running, and the earliest due.
  std::vector<uint32_t> cc_timers_;
  uint64_t cc_next_event_ns_ = UINT64_MAX;
  // The reaction point's line rate (the configured one or the port's).
  uint64_t line_rate_bps_ = 0;
  std::unique_ptr<CmService> cm_;  // HPU 0
  // Services of accepted connections whose QP is not created yet (the REP
  // carries their private data), by slot (HPU 0).
  std::vector<std::unique_ptr<QpService>> accepted_services_;
  // The CM's live connections by slot, for PlaceCmQp (HPU 0).
  struct CmPlacement {
    bool live = false;
    uint16_t cm_port = 0;
    uint32_t hpu = 0;
    uint64_t order = 0;
    Gid peer{};
  };
  std::vector<CmPlacement> cm_placements_;
  uint64_t next_cm_order_ = 0;
  uint64_t next_generation_ = 0;
  const ::spinnic::naaice::FunctionTable functions_ =
      ::spinnic::naaice::BuiltinFunctions();
  // functions_ with the installed naaice_function ECTXs of table version
  // functions_version_ over them (FunctionsFor).
  ::spinnic::naaice::FunctionTable installed_functions_;
  uint64_t functions_version_ = 0;
  CmActionList cm_actions_;
  uint64_t cm_deadline_us_ = UINT64_MAX;
  uint32_t gsi_psn_ = 0;
  uint32_t next_cm_slot_ = 0;
  // Peers' MACs by address, learned from their CM MADs (replies and
  // retransmissions go to them); overwritten round robin.
  std::array<Neighbor, kNeighbors> neighbors_{};
  uint32_t next_neighbor_ = 0;
  RoceCounters counters_;
  // The QP whose message the handlers run on now (HandlerPut's target).
  Qp* delivering_ = nullptr;
  // Handler replies in flight: kHandlerReplies buffers of
  // kHandlerReplyBytes, and the free ones' indices.
  std::vector<uint8_t> handler_reply_bytes_;
  std::vector<uint16_t> free_handler_replies_;
};

}  // namespace spinnic::roce

#endif  // SPINNIC_DATAPLANE_ROCE_ROCE_ENGINE_H_
