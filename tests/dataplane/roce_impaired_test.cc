// RoCEv2 end to end through a bad network: a client RDMA endpoint of ours
// (the project's own roce::Requester with its real retransmission timers for
// its requests, roce::Responder to acknowledge the appliance's SENDs and
// WRITEs, and an active-side CM that retransmits its REQ) talks to the real
// Dataplane over its in-process ring ports, through the seeded impairment
// stage (impair::ImpairStage, one per direction) that loses, reorders and
// duplicates frames both ways. Time is the real clock (rte timer cycles, as
// the engine's own timers); HPU 0 and the client are polled by hand in a
// bounded loop.
//
// Every scenario runs clean and impaired with several seeds, and checks
// outcomes only (never timings): every byte lands exactly once, results are
// exact, atomics execute once, no QP ends in error, and under impairment the
// stage really dropped, reordered and duplicated frames and someone really
// retransmitted.
#include <gtest/gtest.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "dataplane/classifier.h"
#include "dataplane/common/clock.h"
#include "dataplane/contiguous.h"
#include "dataplane/dataplane.h"
#include "dataplane/impair/impair_stage.h"
#include "dataplane/impair/impairment_model.h"
#include "dataplane/roce/cm.h"
#include "dataplane/roce/ib_types.h"
#include "dataplane/roce/mrsp.h"
#include "dataplane/roce/rc_packets.h"
#include "dataplane/roce/requester.h"
#include "dataplane/roce/responder.h"
#include "dataplane/roce/roce_engine.h"
#include "dataplane/roce/roce_module.h"
#include "dataplane/roce/wire.h"
#include "tests/common/ring_dataplane.h"
#include "tests/common/wire_ring.h"

namespace spinnic {
namespace {

using roce::Bth;
using roce::ExtHeaders;
using roce::Opcode;
using roce::WorkRequest;
using testing_rings::RingDataplane;
using testing_rings::RingDataplaneOptions;
using Bytes = std::vector<uint8_t>;

constexpr roce::Mac kDutMac = {0x02, 0, 0, 0, 0, 0x0a};
constexpr roce::Mac kClientMac = {0x02, 0, 0, 0, 0, 0x0c};
const roce::Gid kDutIp = roce::Ipv4Mapped(0xc000020b);     // 192.0.2.11
const roce::Gid kClientIp = roce::Ipv4Mapped(0xc000020c);  // 192.0.2.12
constexpr uint32_t kClientQpn = 0x11;
// The client's starting PSN (its REQ's): the appliance sends from it
// (Linux's CM crosses the PSNs over, cm.h). Close to the 24-bit wrap, so
// that the appliance's requester and our responder both cross it.
constexpr uint32_t kClientStartPsn = 0xfffff8;
constexpr uint32_t kPmtu = 1024;
constexpr uint16_t kListenPort = 7174;
constexpr uint16_t kNaaicePort = 12345;

// Local ACK timeouts: small, so that a lost frame costs milliseconds. The
// appliance's is a config code (4.096 us * 2^10 = 4.2 ms); ours the same.
constexpr uint8_t kDutAckTimeoutCode = 10;
constexpr uint64_t kClientAckTimeoutNs = roce::LocalAckTimeoutNs(10);
// The client's CM resends its REQ this often until a REP (or REJ) comes.
constexpr uint64_t kCmRetryNs = 10'000'000;
// Bounds of one phase of a scenario (they are bounds, not expectations: a
// phase normally takes milliseconds).
constexpr uint64_t kPhaseBudgetNs = 20'000'000'000;
constexpr uint64_t kMaxSteps = 20'000'000;
// Frames the client puts on the wire per step at most (the engine paces
// its own replies the same way).
constexpr uint32_t kClientBurst = 64;

class EalEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    ASSERT_TRUE(
        InitEal({"roce_impaired_test", "--no-huge", "-m", "512", "--no-pci",
                 "--no-shconf", "--lcores", "0@0,1@1", "--log-level", "4"})
            .ok());
  }
};

// The engine's clock, which the client's timers run on too.
uint64_t NowNs() { return clock::NowNanos(); }

Bytes Pattern(size_t length, uint32_t seed) {
  Bytes bytes(length);
  for (size_t i = 0; i < length; ++i) {
    bytes[i] = static_cast<uint8_t>((i * 131 + seed * 7 + (i >> 8)) & 0xff);
  }
  return bytes;
}

uint64_t Address(const void* p) { return reinterpret_cast<uint64_t>(p); }

// ------------------------------------------------------------------ wire

// How the wire between the client and the appliance misbehaves.
struct Impairment {
  std::string name;
  bool enabled = false;
  uint64_t seed = 0;
  double loss = 0.05;
  double reorder = 0.05;
  uint32_t reorder_depth = 3;
  double duplicate = 0.03;
};

// gtest names a failing case by this.
void PrintTo(const Impairment& impairment, std::ostream* os) {
  *os << impairment.name;
}

// The two directions of the wire: 0 client -> appliance, 1 appliance ->
// client, each through its own ImpairStage (stream 0 and 1 of one seed, as
// spinnic-impair does), or straight through when clean.
class Link {
 public:
  Link(const Impairment& impairment, rte_mempool* copy_pool) {
    if (!impairment.enabled) return;
    config_.seed = impairment.seed;
    config_.loss = impairment.loss;
    config_.reorder = impairment.reorder;
    config_.reorder_depth = impairment.reorder_depth;
    config_.duplicate = impairment.duplicate;
    EXPECT_TRUE(impair::ValidateImpairConfig(config_).ok());
    impair::StageOptions options;
    // Duplicates from the client's pool, so that the appliance's own pool
    // is never short because of the wire.
    options.copy_pool = copy_pool;
    for (int dir = 0; dir < 2; ++dir) {
      stages_[dir] =
          std::make_unique<impair::ImpairStage>(config_, dir, options);
    }
  }

  // Whether the first frame of direction `dir` is lost: the model's first
  // loss decision, which depends on the seed alone. The first frames are
  // the CM's REQ and REP, so this says whether the handshake must recover.
  bool FirstFrameLost(int dir) const {
    if (!impaired()) return false;
    impair::ImpairmentModel model(config_, static_cast<uint64_t>(dir));
    return model.DecidePacket().lost;
  }

  // Takes ownership of `in` and appends to `out` what leaves the wire in
  // direction `dir` now (held copies that are due, then the survivors).
  void Carry(int dir, std::vector<rte_mbuf*>& in, std::vector<rte_mbuf*>* out) {
    if (stages_[dir] == nullptr) {
      out->insert(out->end(), in.begin(), in.end());
      in.clear();
      return;
    }
    const uint64_t now = rte_get_tsc_cycles();
    std::array<rte_mbuf*, 512> emitted;
    size_t next = 0;
    do {
      const uint16_t n =
          static_cast<uint16_t>(std::min<size_t>(in.size() - next, 128));
      const uint16_t got =
          stages_[dir]->Process(in.data() + next, n, now, emitted.data(),
                                static_cast<uint16_t>(emitted.size()));
      out->insert(out->end(), emitted.begin(), emitted.begin() + got);
      next += n;
    } while (next < in.size());
    in.clear();
  }

  bool impaired() const { return stages_[0] != nullptr; }
  impair::ImpairCounters counters(int dir) const {
    return stages_[dir] != nullptr ? stages_[dir]->counters()
                                   : impair::ImpairCounters();
  }
  std::string Describe() const {
    if (!impaired()) return "clean";
    std::string text;
    for (int dir = 0; dir < 2; ++dir) {
      const impair::ImpairCounters c = counters(dir);
      absl::StrAppendFormat(
          &text, "%s in %d out %d lost %d duplicated %d reordered %d; ",
          dir == 0 ? "client->appliance" : "appliance->client", c.in, c.out,
          c.lost, c.duplicated, c.reordered);
    }
    return text;
  }

 private:
  impair::ImpairConfig config_;
  std::unique_ptr<impair::ImpairStage> stages_[2];
};

// ---------------------------------------------------------------- client

// A memory region of the client, for the appliance's WRITEs to it.
struct ClientRegion {
  uint8_t* base = nullptr;
  size_t length = 0;
  uint32_t rkey = 0;
};

// The client's RDMA endpoint: one RC QP (kClientQpn) set up through the CM,
// its requests by roce::Requester, the appliance's requests answered by
// roce::Responder. Frames are mbufs from `pool`; VAs and local offsets are
// plain pointers into the test's buffers.
class Client {
 public:
  enum class CmState { kIdle, kReqSent, kConnected, kRejected };

  explicit Client(rte_mempool* pool) : pool_(pool) {}

  // Sends the REQ for `port` (and resends it every kCmRetryNs until a REP).
  void Connect(uint16_t port, uint64_t now) {
    roce::RdmaCmConnectParams& p = connect_;
    p.transaction_id = 0x5151000000000000ull | port;
    p.local_comm_id = 0xc0de0000u | port;
    p.local_qpn = kClientQpn;
    p.starting_psn = kClientStartPsn;
    p.port = port;
    p.rdma_cm.ip_version = 4;
    p.rdma_cm.src_port = 0xb8f6;
    std::copy(kClientIp.begin() + 12, kClientIp.end(),
              p.rdma_cm.src_addr.begin() + 12);
    std::copy(kDutIp.begin() + 12, kDutIp.end(),
              p.rdma_cm.dst_addr.begin() + 12);
    p.local_gid = kClientIp;
    p.remote_gid = kDutIp;
    p.path_mtu = roce::PathMtuCode(kPmtu);
    // Many READs/atomics in flight both ways (rdma_cm's default is 1 or
    // the device's; the appliance answers with at most its own).
    p.responder_resources = 16;
    p.initiator_depth = 16;
    p.retry_count = 7;
    p.rnr_retry_count = 7;
    p.local_ack_timeout = kDutAckTimeoutCode;
    req_ = roce::BuildRdmaCmReq(p);
    state_ = CmState::kReqSent;
    pending_mads_.push_back(req_);
    next_req_ns_ = now + kCmRetryNs;
  }

  // Registers client memory the appliance may write (by rkey).
  void AddRegion(uint8_t* base, size_t length, uint32_t rkey) {
    regions_.push_back({base, length, rkey});
  }

  // Posts a work request; returns its wr_id (or ~0 and a failure).
  uint64_t Post(WorkRequest wr) {
    EXPECT_NE(requester_, nullptr) << "post before the connection is up";
    if (requester_ == nullptr) return ~uint64_t{0};
    wr.wr_id = next_wr_id_++;
    wr.signaled = true;
    const roce::PostResult result = requester_->Post(wr);
    EXPECT_EQ(result, roce::PostResult::kOk);
    return result == roce::PostResult::kOk ? wr.wr_id : ~uint64_t{0};
  }

  // Everything the client sends now: CM MADs, request packets (new ones and
  // the requester's retransmissions), ACKs of the appliance's requests.
  void Transmit(uint64_t now, std::vector<rte_mbuf*>* out) {
    if (state_ == CmState::kReqSent && now >= next_req_ns_) {
      ++req_retransmits_;
      pending_mads_.push_back(req_);
      next_req_ns_ = now + kCmRetryNs;
    }
    for (const roce::CmMad& mad : pending_mads_) Push(MadFrame(mad), out);
    pending_mads_.clear();
    if (responder_ != nullptr) Queue(responder_->FlushAck());
    for (const roce::ResponderReply& reply : replies_) {
      Push(ReplyFrame(reply), out);
    }
    replies_.clear();
    if (requester_ == nullptr) return;
    if (now >= requester_->NextDeadline()) requester_->OnTimer(now);
    roce::PacketPlan plan;
    for (uint32_t budget = kClientBurst;
         budget != 0 && requester_->NextPacket(now, &plan); --budget) {
      Push(RequestFrame(plan), out);
    }
    DrainCompletions();
  }

  // One frame from the wire (freed here).
  void Receive(rte_mbuf* m, uint64_t now) {
    // A zero-copy READ response is a chain; the client's NIC would have
    // received it in one buffer.
    if (!MakeContiguous(&m, pool_)) {
      ++bad_frames_;
      rte_pktmbuf_free(m);
      return;
    }
    uint8_t* data = rte_pktmbuf_mtod(m, uint8_t*);
    const uint32_t length = m->data_len;
    ParsedFrame parsed;
    spinnic::ParseFrame(data, length, &parsed);
    roce::Packet p;
    if (!parsed.has_l4_ports || parsed.dst_port != roce::kRoceUdpPort) {
      ++ignored_;
    } else if (roce::ParseFrame(data, length, parsed.layers.l3_offset,
                                parsed.layers.l4_offset,
                                &p) != roce::ParseError::kNone) {
      // The stage never corrupts here: every frame of the appliance must
      // parse, ICRC included.
      ++bad_frames_;
    } else if (p.bth.dest_qp == roce::kGsiQp) {
      ReceiveMad(p, data);
    } else if (p.bth.dest_qp != kClientQpn || requester_ == nullptr) {
      ++ignored_;
    } else {
      switch (p.info->kind) {
        case roce::OpKind::kAck:
        case roce::OpKind::kReadResponse:
        case roce::OpKind::kAtomicAck:
          ReceiveResponse(p, data, now);
          break;
        case roce::OpKind::kSend:
        case roce::OpKind::kWrite:
        case roce::OpKind::kReadRequest:
        case roce::OpKind::kAtomic:
          ReceiveRequest(p, data);
          break;
        default:
          ++ignored_;
          break;
      }
    }
    rte_pktmbuf_free(m);
  }

  CmState cm_state() const { return state_; }
  uint16_t reject_reason() const { return reject_reason_; }
  uint32_t dut_qpn() const { return dut_qpn_; }
  const roce::Requester* requester() const { return requester_.get(); }
  const roce::Responder* responder() const { return responder_.get(); }
  // Requests posted and not yet completed.
  uint32_t outstanding() const {
    return requester_ != nullptr ? requester_->outstanding() : 0;
  }
  const std::vector<roce::Completion>& completions() const {
    return completions_;
  }
  // Messages the client's responder accepted (each exactly once): SEND
  // payloads, and the immediates of WRITEs WITH IMMEDIATE.
  const std::vector<Bytes>& sends() const { return sends_; }
  const std::vector<uint32_t>& write_immediates() const {
    return write_immediates_;
  }
  uint64_t write_bytes() const { return write_bytes_; }
  uint64_t req_retransmits() const { return req_retransmits_; }
  uint64_t reps() const { return reps_; }
  // Things that must never happen: frames that do not parse, requests the
  // client had to refuse, frames it could not build.
  uint64_t bad_frames() const { return bad_frames_; }
  uint64_t refused_requests() const { return refused_requests_; }
  uint64_t no_mbuf() const { return no_mbuf_; }

  std::string Describe() const {
    std::string text =
        absl::StrFormat("client: cm state %d, REQ retransmits %d, REPs %d",
                        static_cast<int>(state_), req_retransmits_, reps_);
    if (requester_ != nullptr) {
      const roce::RequesterCounters& c = requester_->counters();
      absl::StrAppendFormat(
          &text,
          "; requester %s, outstanding %d, una %06x, next %06x, sent %d, "
          "retransmitted %d, reads reissued %d, timeouts %d, seq NAKs %d, "
          "retries %d",
          requester_->state() == roce::QpState::kError ? "ERROR" : "ok",
          requester_->outstanding(), requester_->oldest_unacked_psn(),
          requester_->next_new_psn(), c.packets_sent, c.packets_retransmitted,
          c.read_requests_reissued, c.timeouts, c.nak_sequence, c.retries);
    }
    if (responder_ != nullptr) {
      const roce::ResponderCounters& c = responder_->counters();
      absl::StrAppendFormat(
          &text,
          "; responder %s, ePSN %06x, accepted %d, messages %d, duplicates "
          "%d, sends %d, write immediates %d",
          responder_->state() == roce::QpState::kError ? "ERROR" : "ok",
          responder_->expected_psn(), c.accepted, c.messages, c.duplicates,
          sends_.size(), write_immediates_.size());
    }
    return text;
  }

 private:
  void Push(rte_mbuf* m, std::vector<rte_mbuf*>* out) {
    if (m != nullptr) out->push_back(m);
  }

  void DrainCompletions() {
    roce::Completion c;
    while (requester_->PollCompletion(&c)) completions_.push_back(c);
  }

  // A later ACK supersedes a queued one (ACKs are cumulative), as in the
  // engine.
  void Queue(const roce::ResponderReply& reply) {
    if (reply.kind == roce::ResponderReplyKind::kNone) return;
    if (reply.kind == roce::ResponderReplyKind::kAck && !replies_.empty() &&
        replies_.back().kind == roce::ResponderReplyKind::kAck) {
      replies_.back() = reply;
      return;
    }
    replies_.push_back(reply);
  }

  rte_mbuf* Frame(const roce::FrameParams& params, const Bth& bth,
                  const ExtHeaders& ext, const uint8_t* payload,
                  uint32_t length) {
    const uint32_t size = roce::FrameBytes(4, bth.opcode, length);
    rte_mbuf* m = rte_pktmbuf_alloc(pool_);
    uint8_t* frame = m == nullptr
                         ? nullptr
                         : reinterpret_cast<uint8_t*>(rte_pktmbuf_append(
                               m, static_cast<uint16_t>(size)));
    if (frame == nullptr) {
      if (m != nullptr) rte_pktmbuf_free(m);
      ++no_mbuf_;
      return nullptr;
    }
    const uint32_t headers =
        roce::WriteHeaders(params, bth, ext, length, frame, size);
    EXPECT_NE(headers, 0u);
    if (length != 0) std::memcpy(frame + headers, payload, length);
    EXPECT_EQ(roce::FinishFrame(params, frame, size), size);
    return m;
  }

  roce::FrameParams Params(uint16_t udp_src_port) const {
    roce::FrameParams params;
    params.src_mac = kClientMac;
    params.dst_mac = kDutMac;
    params.ip_version = 4;
    params.src_ip = kClientIp;
    params.dst_ip = kDutIp;
    params.udp_src_port = udp_src_port;
    return params;
  }

  // A MAD from our QP1 to the appliance's (UD SEND ONLY, GSI Q_Key).
  rte_mbuf* MadFrame(const roce::CmMad& mad) {
    std::array<uint8_t, roce::kMadBytes> bytes{};
    roce::BuildCmMad(mad, bytes);
    Bth bth;
    bth.opcode = static_cast<uint8_t>(Opcode::kUdSendOnly);
    bth.dest_qp = roce::kGsiQp;
    bth.psn = gsi_psn_;
    gsi_psn_ = roce::PsnAdd(gsi_psn_, 1);
    ExtHeaders ext;
    ext.deth.qkey = roce::kGsiQkey;
    ext.deth.src_qp = roce::kGsiQp;
    return Frame(Params(roce::UdpSourcePort(roce::kGsiQp, roce::kGsiQp)), bth,
                 ext, bytes.data(), roce::kMadBytes);
  }

  rte_mbuf* RequestFrame(const roce::PacketPlan& plan) {
    Bth bth;
    bth.opcode = static_cast<uint8_t>(plan.opcode);
    bth.dest_qp = dut_qpn_;
    bth.psn = plan.psn;
    bth.ack_req = plan.ack_req;
    ExtHeaders ext;
    ext.reth = {plan.reth_va, plan.reth_rkey, plan.reth_length};
    ext.atomic_eth = {plan.atomic_va, plan.atomic_rkey, plan.atomic_swap_add,
                      plan.atomic_compare};
    ext.imm_data = plan.imm;
    return Frame(Params(roce::UdpSourcePort(kClientQpn, dut_qpn_)), bth, ext,
                 reinterpret_cast<const uint8_t*>(plan.payload_offset),
                 plan.payload_length);
  }

  rte_mbuf* ReplyFrame(const roce::ResponderReply& reply) {
    // The client's responder only ever ACKs/NAKs: it refuses READs and
    // atomics (the appliance sends neither in these scenarios).
    Bth bth;
    bth.opcode =
        static_cast<uint8_t>(reply.kind == roce::ResponderReplyKind::kAtomicAck
                                 ? Opcode::kRcAtomicAck
                                 : Opcode::kRcAck);
    bth.dest_qp = dut_qpn_;
    bth.psn = reply.psn;
    ExtHeaders ext;
    ext.aeth = {reply.syndrome, reply.msn};
    ext.atomic_ack_eth.original = reply.original_value;
    return Frame(Params(roce::UdpSourcePort(kClientQpn, dut_qpn_)), bth, ext,
                 nullptr, 0);
  }

  void ReceiveMad(const roce::Packet& p, const uint8_t* data) {
    roce::CmMad mad;
    if (p.payload_length < roce::kMadBytes ||
        roce::ParseCmMad({data + p.payload_offset, roce::kMadBytes}, &mad) !=
            roce::CmParseError::kNone) {
      ++bad_frames_;
      return;
    }
    if (const auto* rep = std::get_if<roce::CmRep>(&mad.message)) {
      if (rep->remote_comm_id != connect_.local_comm_id ||
          mad.header.transaction_id != connect_.transaction_id) {
        ++ignored_;
        return;
      }
      ++reps_;
      if (state_ == CmState::kReqSent) {
        SetUpQp(*rep);
        state_ = CmState::kConnected;
      }
      // Every REP gets an RTU: a second REP means our RTU was lost (or the
      // REP was duplicated on the wire, and the extra RTU is ignored).
      pending_mads_.push_back(roce::BuildRtuFor(mad.header, *rep));
    } else if (const auto* rej = std::get_if<roce::CmRej>(&mad.message)) {
      if (rej->remote_comm_id != connect_.local_comm_id) return;
      state_ = CmState::kRejected;
      reject_reason_ = rej->reason;
    }
  }

  void SetUpQp(const roce::CmRep& rep) {
    dut_qpn_ = rep.local_qpn;
    roce::RequesterConfig rc;
    rc.pmtu = kPmtu;
    // We send from the REP's starting PSN, the appliance from the REQ's.
    rc.initial_psn = rep.starting_psn;
    rc.max_rd_atomic =
        std::clamp<uint8_t>(rep.responder_resources, uint8_t{1}, uint8_t{16});
    rc.retry_count = 7;
    rc.rnr_retry = 7;
    rc.ack_timeout_ns = kClientAckTimeoutNs;
    requester_ = std::make_unique<roce::Requester>(rc);
    EXPECT_EQ(roce::RequesterConfigError(rc), nullptr);
    roce::ResponderConfig sc;
    sc.pmtu = kPmtu;
    sc.initial_epsn = kClientStartPsn;
    sc.qp_access = roce::kAccessRemoteWrite;
    responder_ = std::make_unique<roce::Responder>(sc);
    responder_->SetState(roce::QpState::kRts);
  }

  void ReceiveResponse(const roce::Packet& p, const uint8_t* data,
                       uint64_t now) {
    roce::Placement placement;
    const roce::ResponseVerdict verdict =
        requester_->OnResponse(roce::ResponsePacketOf(p), now, &placement);
    if (verdict == roce::ResponseVerdict::kReadData && placement.length != 0) {
      // Before the completions are drained: the READ may have completed
      // with this very packet.
      std::memcpy(reinterpret_cast<uint8_t*>(placement.local_offset),
                  data + p.payload_offset, placement.length);
    }
    DrainCompletions();
  }

  // The client memory [va, va + length) under rkey, or nullptr.
  uint8_t* Resolve(uint32_t rkey, uint64_t va, uint32_t length) {
    for (const ClientRegion& r : regions_) {
      if (r.rkey != rkey) continue;
      const uint64_t base = Address(r.base);
      if (va < base || va - base > r.length ||
          length > r.length - (va - base)) {
        return nullptr;
      }
      return r.base + (va - base);
    }
    return nullptr;
  }

  void ReceiveRequest(const roce::Packet& p, const uint8_t* data) {
    const roce::RcRequest request = roce::RcRequestOf(p);
    const roce::ResponderPlan plan = responder_->Check(request);
    if (!plan.needs_commit) {
      Queue(plan.reply);
      return;
    }
    const uint8_t* payload = data + p.payload_offset;
    switch (plan.action) {
      case roce::ResponderAction::kWrite: {
        bool ok = !plan.validate_range || Resolve(plan.rkey, plan.range_va,
                                                  plan.range_length) != nullptr;
        uint8_t* target = nullptr;
        if (ok && plan.length != 0) {
          target = Resolve(plan.rkey, plan.va, plan.length);
          ok = target != nullptr;
        }
        if (!ok) {
          ++refused_requests_;
          Queue(responder_->Fail(plan, roce::NakCode::kRemoteAccessError));
          return;
        }
        if (plan.length != 0) std::memcpy(target, payload, plan.length);
        write_bytes_ += plan.length;
        Queue(responder_->Accept(plan));
        if (plan.ends_message && plan.has_immediate) {
          write_immediates_.push_back(plan.immediate);
        }
        return;
      }
      case roce::ResponderAction::kSend: {
        if (plan.send_offset + plan.length > receive_.size()) {
          ++refused_requests_;
          Queue(responder_->Fail(plan, roce::NakCode::kInvalidRequest));
          return;
        }
        std::memcpy(receive_.data() + plan.send_offset, payload, plan.length);
        Queue(responder_->Accept(plan));
        if (plan.ends_message) {
          sends_.emplace_back(
              receive_.begin(),
              receive_.begin() +
                  static_cast<ptrdiff_t>(plan.send_offset + plan.length));
        }
        return;
      }
      default:
        ++refused_requests_;
        Queue(responder_->Fail(plan, roce::NakCode::kInvalidRequest));
        return;
    }
  }

  rte_mempool* pool_;
  CmState state_ = CmState::kIdle;
  roce::RdmaCmConnectParams connect_;
  roce::CmMad req_;
  uint64_t next_req_ns_ = 0;
  std::vector<roce::CmMad> pending_mads_;
  uint32_t gsi_psn_ = 0x42;
  uint16_t reject_reason_ = 0;
  uint32_t dut_qpn_ = 0;
  std::unique_ptr<roce::Requester> requester_;
  std::unique_ptr<roce::Responder> responder_;
  std::vector<roce::ResponderReply> replies_;
  uint64_t next_wr_id_ = 1;
  std::vector<roce::Completion> completions_;
  std::vector<ClientRegion> regions_;
  Bytes receive_ = Bytes(4096);  // the receive buffer of SENDs to us
  std::vector<Bytes> sends_;
  std::vector<uint32_t> write_immediates_;
  uint64_t write_bytes_ = 0;
  uint64_t req_retransmits_ = 0;
  uint64_t reps_ = 0;
  uint64_t ignored_ = 0;
  uint64_t bad_frames_ = 0;
  uint64_t refused_requests_ = 0;
  uint64_t no_mbuf_ = 0;
};

// --------------------------------------------------------------- fixture

Impairment Clean() { return {.name = "clean"}; }
Impairment Impaired(uint64_t seed) {
  return {.name = absl::StrCat("loss5_reorder5_dup3_seed", seed),
          .enabled = true,
          .seed = seed};
}

class RoceImpairedTest : public ::testing::TestWithParam<Impairment> {
 protected:
  void SetUp() override {
    static int instance = 0;
    RingDataplaneOptions options;
    options.ring_size = 2048;
    options.mbufs = 8191;
    options.roce.enabled = true;
    options.roce.mac = kDutMac;
    options.roce.addresses = {kDutIp};
    options.roce.ack_every = 16;
    options.roce.listen_ports = {kListenPort, kNaaicePort};
    options.roce.naaice_port = kNaaicePort;
    options.roce.local_ack_timeout = kDutAckTimeoutCode;
    absl::StatusOr<std::unique_ptr<RingDataplane>> rings =
        RingDataplane::Create("ri" + std::to_string(instance++), options);
    ASSERT_TRUE(rings.ok()) << rings.status();
    rings_ = *std::move(rings);
    if (pool_ == nullptr) {
      pool_ = rte_pktmbuf_pool_create("impaired_client", 8191, 256, 0,
                                      RTE_MBUF_DEFAULT_BUF_SIZE, 0);
      ASSERT_NE(pool_, nullptr);
    }
    link_ = std::make_unique<Link>(GetParam(), pool_);
    client_ = std::make_unique<Client>(pool_);
  }

  void TearDown() override {
    // Frames still held by the wire belong to both pools: freed before the
    // dataplane's pool goes.
    link_.reset();
    rings_.reset();
    client_.reset();
  }

  Dataplane& dataplane() { return rings_->dataplane(); }

  RegionInfo Region(uint64_t length, uint32_t access) {
    RegionConfig config;
    config.length = length;
    config.access = access;
    absl::StatusOr<RegionInfo> region = dataplane().RegisterRegion(config);
    EXPECT_TRUE(region.ok()) << region.status();
    return region.ok() ? *region : RegionInfo();
  }

  uint64_t Counter(const std::string& name) {
    for (const auto& [counter, value] :
         dataplane()
             .Snapshot(Dataplane::StateCopy::kOmit)
             .transport("roce")
             .counters) {
      if (counter == name) return value;
    }
    ADD_FAILURE() << "no RoCE counter " << name;
    return 0;
  }

  // One turn of the loop: the client's frames cross the wire into the
  // appliance's wire port, HPU 0 polls once, its frames cross back to the
  // client. False when nothing moved at all.
  bool Step() {
    to_dut_.clear();
    client_->Transmit(NowNs(), &to_dut_);
    const bool sent = !to_dut_.empty();
    arrived_.clear();
    link_->Carry(0, to_dut_, &arrived_);
    const unsigned enqueued = testing_wire::PutBurstOnWire(
        rings_->rx(0), arrived_.data(), static_cast<unsigned>(arrived_.size()));
    for (size_t i = enqueued; i < arrived_.size(); ++i) {
      rte_pktmbuf_free(arrived_[i]);
      ++ring_drops_;  // not the stage's doing: must stay 0
    }
    const bool delivered = !arrived_.empty();
    const uint32_t polled = dataplane().hpu(0).PollOnce();
    from_dut_.clear();
    void* m;
    while (testing_wire::TakeFromWire(rings_->tx(0), &m) == 0) {
      from_dut_.push_back(static_cast<rte_mbuf*>(m));
    }
    while (testing_wire::TakeFromWire(rings_->tx(1), &m) == 0) {
      // Nothing of this conversation may leak to the host side.
      rte_pktmbuf_free(static_cast<rte_mbuf*>(m));
      ++host_side_frames_;
    }
    const bool answered = !from_dut_.empty();
    arrived_.clear();
    link_->Carry(1, from_dut_, &arrived_);
    for (rte_mbuf* frame : arrived_) client_->Receive(frame, NowNs());
    return sent || delivered || polled != 0 || answered || !arrived_.empty();
  }

  // Steps until `done` (bounded by time and steps; the failure says what
  // was awaited and where everything stood).
  bool RunUntil(const std::function<bool()>& done, const std::string& what) {
    const uint64_t deadline = NowNs() + kPhaseBudgetNs;
    uint64_t steps = 0;
    for (; steps < kMaxSteps; ++steps) {
      if (done()) {
        DrainEvents();
        return true;
      }
      if (NowNs() > deadline) break;
      if (client_->requester() != nullptr &&
          client_->requester()->state() == roce::QpState::kError) {
        break;
      }
      // Idle (everyone waits for a timer): yield the shared cores.
      if (!Step()) std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    DrainEvents();
    ADD_FAILURE() << "gave up waiting for " << what << " after " << steps
                  << " steps: " << Describe();
    return false;
  }

  std::string Describe() {
    std::string text =
        absl::StrCat(GetParam().name, ": ", client_->Describe(),
                     "; wire: ", link_->Describe(), "; appliance:");
    for (const auto& [counter, value] :
         dataplane()
             .Snapshot(Dataplane::StateCopy::kOmit)
             .transport("roce")
             .counters) {
      if (value != 0) absl::StrAppend(&text, " ", counter, "=", value);
    }
    return text;
  }

  void DrainEvents() {
    std::vector<Event> events;
    dataplane().DrainEvents(&events);
    events_.insert(events_.end(), events.begin(), events.end());
  }

  // CM connect to `port`: REQ (resent until answered) -> REP -> RTU.
  bool Connect(uint16_t port) {
    client_->Connect(port, NowNs());
    if (!RunUntil(
            [&] { return client_->cm_state() != Client::CmState::kReqSent; },
            "the REP")) {
      return false;
    }
    EXPECT_EQ(client_->cm_state(), Client::CmState::kConnected)
        << "REJ reason " << client_->reject_reason();
    if (client_->cm_state() != Client::CmState::kConnected) return false;
    bool listed = false;
    for (const QpInfo& info :
         dataplane().transport<roce::RoceModule>()->ListQps()) {
      if (info.qpn != client_->dut_qpn()) continue;
      listed = true;
      EXPECT_TRUE(info.from_cm);
      EXPECT_EQ(info.cm_port, port);
      EXPECT_EQ(info.spec.pmtu, kPmtu);
      EXPECT_EQ(info.spec.remote_qpn, kClientQpn);
    }
    EXPECT_TRUE(listed);
    // A lost REQ or REP is recovered by the client's REQ retransmission
    // (the appliance answers a repeated REQ with its cached REP).
    if (link_->FirstFrameLost(0) || link_->FirstFrameLost(1)) {
      EXPECT_GT(client_->req_retransmits(), 0u);
    }
    return listed;
  }

  // Runs until every posted request completed; all must have succeeded.
  bool Complete(const std::string& what) {
    if (!RunUntil([&] { return client_->outstanding() == 0; }, what)) {
      return false;
    }
    bool ok = true;
    for (const roce::Completion& c : client_->completions()) {
      EXPECT_EQ(c.status, roce::CompletionStatus::kSuccess)
          << what << ": wr " << c.wr_id << " " << Describe();
      ok = ok && c.status == roce::CompletionStatus::kSuccess;
    }
    return ok;
  }

  const roce::Completion* CompletionOf(uint64_t wr_id) const {
    for (const roce::Completion& c : client_->completions()) {
      if (c.wr_id == wr_id) return &c;
    }
    return nullptr;
  }

  // The write-immediate events of the client's QP, in order.
  std::vector<uint32_t> WriteImmEvents() const {
    std::vector<uint32_t> immediates;
    for (const Event& e : events_) {
      if (e.code != roce::kEventRoceWriteImm) continue;
      uint32_t data[3];
      EXPECT_GE(e.length, sizeof data);
      std::memcpy(data, e.data, sizeof data);
      if (data[0] == client_->dut_qpn()) immediates.push_back(data[1]);
    }
    return immediates;
  }

  // No QP in error on either side, nothing refused, nothing lost by the
  // harness itself.
  void ExpectHealthy() {
    DrainEvents();
    for (const Event& e : events_) {
      EXPECT_NE(e.code, roce::kEventRoceQpError) << Describe();
    }
    EXPECT_EQ(Counter("qp_errors"), 0u);
    for (const QpInfo& info :
         dataplane().transport<roce::RoceModule>()->ListQps()) {
      EXPECT_NE(info.state, roce::QpState::kError) << "QP " << info.qpn;
    }
    ASSERT_NE(client_->requester(), nullptr);
    EXPECT_NE(client_->requester()->state(), roce::QpState::kError);
    EXPECT_NE(client_->responder()->state(), roce::QpState::kError);
    EXPECT_EQ(client_->bad_frames(), 0u);
    EXPECT_EQ(client_->refused_requests(), 0u);
    EXPECT_EQ(client_->no_mbuf(), 0u);
    EXPECT_EQ(ring_drops_, 0u);
    EXPECT_EQ(host_side_frames_, 0u);
    EXPECT_EQ(Counter("drop_bad_icrc"), 0u);
    EXPECT_EQ(Counter("drop_no_buffer"), 0u);
  }

  // Under impairment: the stage really lost, reordered and duplicated
  // frames (both directions together), and someone retransmitted.
  void ExpectImpairmentWorked(bool appliance_requests) {
    const impair::ImpairCounters a = link_->counters(0);
    const impair::ImpairCounters b = link_->counters(1);
    const roce::RequesterCounters& c = client_->requester()->counters();
    const uint64_t ours = c.packets_retransmitted + c.read_requests_reissued;
    const uint64_t theirs = Counter("retransmits");
    // Shown with the test's output: what the wire did and who recovered.
    std::printf(
        "[ %s ] lost %lu, reordered %lu, duplicated %lu; client "
        "retransmitted %lu (READs reissued %lu, REQ %lu), appliance "
        "retransmitted %lu, appliance saw %lu duplicates, client %lu\n",
        GetParam().name.c_str(), a.lost + b.lost, a.reordered + b.reordered,
        a.duplicated + b.duplicated, ours, c.read_requests_reissued,
        client_->req_retransmits(), theirs, Counter("duplicates"),
        client_->responder()->counters().duplicates);
    if (!link_->impaired()) return;
    const Impairment& impairment = GetParam();
    // (A soak run may switch a kind off: then it has nothing to prove.)
    if (impairment.loss > 0) {
      EXPECT_GT(a.lost + b.lost, 0u) << Describe();
    }
    if (impairment.reorder > 0) {
      EXPECT_GT(a.reordered + b.reordered, 0u) << Describe();
    }
    if (impairment.duplicate > 0) {
      EXPECT_GT(a.duplicated + b.duplicated, 0u) << Describe();
    }
    EXPECT_EQ(a.queue_full_drops + b.queue_full_drops, 0u);
    if (impairment.loss == 0) return;  // nothing to recover from
    EXPECT_GT(ours + theirs, 0u) << Describe();
    if (appliance_requests) {
      // The appliance's own requests crossed the same wire: its duplicates
      // (and our ACKs' losses) make it retransmit or see duplicates.
      EXPECT_GT(theirs + client_->responder()->counters().duplicates, 0u)
          << Describe();
    }
  }

  static rte_mempool* pool_;
  std::unique_ptr<RingDataplane> rings_;
  std::unique_ptr<Link> link_;
  std::unique_ptr<Client> client_;
  std::vector<rte_mbuf*> to_dut_;
  std::vector<rte_mbuf*> from_dut_;
  std::vector<rte_mbuf*> arrived_;
  std::vector<Event> events_;
  uint64_t ring_drops_ = 0;
  uint64_t host_side_frames_ = 0;
};

rte_mempool* RoceImpairedTest::pool_ = nullptr;

// Scenario 1: CM connect to a listened port, then RDMA WRITE (multi-packet:
// FIRST/MIDDLE/LAST at PMTU 1024, and ONLY) in two overlapping rounds,
// WRITE WITH IMMEDIATE, READ back multi-packet, and FETCH_ADDs that must
// each execute exactly once.
TEST_P(RoceImpairedTest, VerbsOverTheCm) {
  constexpr uint32_t kRegionBytes = 96 * 1024;
  const RegionInfo region = Region(kRegionBytes, kRemoteRead | kRemoteWrite);
  const RegionInfo counter = Region(64, kRemoteRead | kRemoteWrite);
  ASSERT_TRUE(Connect(kListenPort));

  // Two rounds of writes; round 2 overwrites parts of round 1 with other
  // bytes, so a late duplicate of round 1 executed again would show.
  struct Write {
    uint32_t offset;
    uint32_t length;
    bool with_immediate;
    uint32_t immediate;
  };
  const std::vector<Write> rounds[2] = {
      {{0, 3 * kPmtu - 100, false, 0},  // FIRST MIDDLE LAST
       {4096, 24 * kPmtu, false, 0},
       {30000, 1, false, 0},  // ONLY, one byte
       {32768, 2 * kPmtu, true, 0x1001},
       {40000, 700, true, 0x1002},  // ONLY WITH IMMEDIATE
       {45056, 40 * kPmtu + 13, false, 0}},
      {{1000, 5 * kPmtu, false, 0},
       {20000, 17 * kPmtu + 1, true, 0x2001},
       {45056 + 512, 8 * kPmtu, false, 0},
       {kRegionBytes - 3000, 3000, true, 0x2002}}};
  Bytes expected(kRegionBytes, 0);
  std::vector<Bytes> sources;
  std::vector<uint32_t> immediates;
  uint64_t total_bytes = 0;
  uint32_t seed = 1;
  for (const std::vector<Write>& round : rounds) {
    sources.clear();
    sources.reserve(round.size());
    for (const Write& w : round) {
      sources.push_back(Pattern(w.length, seed++));
      std::copy(sources.back().begin(), sources.back().end(),
                expected.begin() + w.offset);
      WorkRequest wr;
      wr.kind = w.with_immediate ? WorkRequest::Kind::kWriteImm
                                 : WorkRequest::Kind::kWrite;
      wr.local_offset = Address(sources.back().data());
      wr.length = w.length;
      wr.remote_va = region.base_address + w.offset;
      wr.rkey = region.rkey;
      wr.imm = w.immediate;
      client_->Post(wr);
      total_bytes += w.length;
      if (w.with_immediate) immediates.push_back(w.immediate);
    }
    ASSERT_TRUE(Complete("a round of writes"));
  }
  absl::StatusOr<std::string> stored =
      dataplane().ReadRegion(region.id, 0, kRegionBytes, 1 << 20);
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_TRUE(Bytes(stored->begin(), stored->end()) == expected)
      << "region contents differ";
  // Exactly once: every WRITE packet executed once, whatever crossed the
  // wire twice or was retransmitted.
  EXPECT_EQ(Counter("write_bytes"), total_bytes);
  EXPECT_EQ(Counter("write_immediates"), immediates.size());
  EXPECT_EQ(WriteImmEvents(), immediates);

  // READ it back in three multi-packet READs (the last one ends unaligned).
  Bytes readback(kRegionBytes, 0xee);
  const uint32_t cuts[] = {0, 40 * 1024, 40 * 1024 + 7, kRegionBytes};
  for (size_t i = 0; i + 1 < std::size(cuts); ++i) {
    WorkRequest wr;
    wr.kind = WorkRequest::Kind::kRead;
    wr.local_offset = Address(readback.data() + cuts[i]);
    wr.length = cuts[i + 1] - cuts[i];
    wr.remote_va = region.base_address + cuts[i];
    wr.rkey = region.rkey;
    client_->Post(wr);
  }
  ASSERT_TRUE(Complete("the READs"));
  EXPECT_TRUE(readback == expected) << "READ back differs from the region";

  // FETCH_ADD: initial 1000, adds 1..12, all in flight together.
  const uint64_t initial = 1000;
  ASSERT_TRUE(dataplane()
                  .WriteRegion(counter.id, 8,
                               {reinterpret_cast<const uint8_t*>(&initial), 8})
                  .ok());
  std::vector<uint64_t> atomic_ids;
  constexpr uint64_t kAtomics = 12;
  for (uint64_t i = 1; i <= kAtomics; ++i) {
    WorkRequest wr;
    wr.kind = WorkRequest::Kind::kFetchAdd;
    wr.length = 8;
    wr.remote_va = counter.base_address + 8;
    wr.rkey = counter.rkey;
    wr.swap_add = i;
    atomic_ids.push_back(client_->Post(wr));
  }
  ASSERT_TRUE(Complete("the FETCH_ADDs"));
  uint64_t running = initial;
  for (uint64_t i = 1; i <= kAtomics; ++i) {
    const roce::Completion* c = CompletionOf(atomic_ids[i - 1]);
    ASSERT_NE(c, nullptr);
    // In PSN order, each one saw every earlier add exactly once.
    EXPECT_EQ(c->atomic_original, running) << "FETCH_ADD " << i;
    running += i;
  }
  absl::StatusOr<std::string> word =
      dataplane().ReadRegion(counter.id, 8, 8, 1 << 20);
  ASSERT_TRUE(word.ok());
  uint64_t final_value = 0;
  std::memcpy(&final_value, word->data(), 8);
  EXPECT_EQ(final_value, initial + kAtomics * (kAtomics + 1) / 2);
  EXPECT_EQ(Counter("atomics"), kAtomics);

  EXPECT_EQ(client_->sends().size(), 0u);
  ExpectHealthy();
  ExpectImpairmentWorked(/*appliance_requests=*/false);
}

// Scenario 2: NAAICE function offload over the CM on the NAAICE port: MRSP
// by SEND both ways, inputs by RDMA WRITE, the call by WRITE WITH IMMEDIATE
// (vector sum, function code 16), the result written back into the
// client's region by WRITE WITH IMMEDIATE; several calls with new inputs.
TEST_P(RoceImpairedTest, NaaiceVectorSum) {
  // 12 KiB per region: every input and the result take 12 packets.
  constexpr uint32_t kDoubles = 1536;
  constexpr uint32_t kBytes = kDoubles * 8;
  constexpr int kCalls = 6;
  std::vector<double> a(kDoubles), b(kDoubles), y(kDoubles);
  constexpr uint32_t kRkeyA = 0x20, kRkeyB = 0x21, kRkeyY = 0x22;
  // Only y is the appliance's to write (its inputs are ours to send).
  client_->AddRegion(reinterpret_cast<uint8_t*>(y.data()), kBytes, kRkeyY);
  ASSERT_TRUE(Connect(kNaaicePort));

  std::vector<roce::mrsp::RegionRequest> regions(3);
  const double* buffers[3] = {a.data(), b.data(), y.data()};
  const uint32_t rkeys[3] = {kRkeyA, kRkeyB, kRkeyY};
  for (int i = 0; i < 3; ++i) {
    regions[i].flags = i < 2 ? roce::mrsp::kFlagInput : roce::mrsp::kFlagOutput;
    regions[i].host_address = Address(buffers[i]);
    regions[i].rkey = rkeys[i];
    regions[i].size = kBytes;
  }
  Bytes request(roce::mrsp::kMaxMessageBytes);
  request.resize(roce::mrsp::BuildAdvertiseRequest(regions, request.data(),
                                                   request.size()));
  ASSERT_FALSE(request.empty());
  WorkRequest send;
  send.kind = WorkRequest::Kind::kSend;
  send.local_offset = Address(request.data());
  send.length = static_cast<uint32_t>(request.size());
  client_->Post(send);
  ASSERT_TRUE(RunUntil(
      [&] { return client_->outstanding() == 0 && !client_->sends().empty(); },
      "the MRSP exchange"));
  ASSERT_EQ(client_->sends().size(), 1u);
  roce::mrsp::Advertise advert;
  ASSERT_EQ(roce::mrsp::ParseAdvertise(client_->sends()[0], &advert),
            roce::mrsp::ParseError::kNone);
  ASSERT_EQ(advert.count, 3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(advert.regions[i].size, kBytes);

  for (int call = 0; call < kCalls; ++call) {
    // Values whose sums are exact in binary64: small integers and halves.
    for (uint32_t j = 0; j < kDoubles; ++j) {
      a[j] = static_cast<double>(j) + 0.5 * call;
      b[j] = 1000.0 * (call + 1) - 3.0 * j;
    }
    // Poison y: the result must replace every byte.
    std::fill(y.begin(), y.end(), -1.0);
    const size_t results_before = client_->write_immediates().size();
    WorkRequest wa;
    wa.kind = WorkRequest::Kind::kWrite;
    wa.local_offset = Address(a.data());
    wa.length = kBytes;
    wa.remote_va = advert.regions[0].address;
    wa.rkey = advert.regions[0].rkey;
    client_->Post(wa);
    WorkRequest wb = wa;
    wb.kind = WorkRequest::Kind::kWriteImm;
    wb.local_offset = Address(b.data());
    wb.remote_va = advert.regions[1].address;
    wb.rkey = advert.regions[1].rkey;
    wb.imm = roce::mrsp::MakeRequestImmediate(16, 0);
    client_->Post(wb);
    ASSERT_TRUE(RunUntil(
        [&] {
          return client_->outstanding() == 0 &&
                 client_->write_immediates().size() > results_before;
        },
        absl::StrCat("the result of call ", call)));
    ASSERT_EQ(client_->write_immediates().size(), results_before + 1)
        << "call " << call;
    EXPECT_EQ(client_->write_immediates().back(),
              roce::mrsp::MakeResultImmediate(0))
        << "call " << call;
    int wrong = 0;
    for (uint32_t j = 0; j < kDoubles; ++j) {
      if (y[j] != a[j] + b[j] && wrong++ < 4) {
        ADD_FAILURE() << "call " << call << ": y[" << j << "] = " << y[j]
                      << ", want " << a[j] + b[j];
      }
    }
    EXPECT_EQ(wrong, 0) << "call " << call;
  }
  // Our ACK of the last result must reach the appliance: its requester
  // then has nothing outstanding (the MRSP SEND and every result write).
  ASSERT_TRUE(RunUntil([&] { return Counter("ops_completed") == 1 + kCalls; },
                       "the appliance's last completion"));
  for (const roce::Completion& c : client_->completions()) {
    EXPECT_EQ(c.status, roce::CompletionStatus::kSuccess);
  }
  // Exactly once on both sides: one advertisement, one result per call.
  EXPECT_EQ(client_->sends().size(), 1u);
  EXPECT_EQ(client_->write_immediates().size(), static_cast<size_t>(kCalls));
  EXPECT_EQ(client_->write_bytes(), uint64_t{kBytes} * kCalls);
  EXPECT_EQ(Counter("naaice_sessions"), 1u);
  EXPECT_EQ(Counter("naaice_calls"), static_cast<uint64_t>(kCalls));
  EXPECT_EQ(Counter("naaice_errors"), 0u);
  EXPECT_EQ(Counter("write_bytes"), uint64_t{2} * kBytes * kCalls);
  EXPECT_EQ(Counter("ops_failed"), 0u);
  ExpectHealthy();
  ExpectImpairmentWorked(/*appliance_requests=*/true);
}

// Seeds: 1 at random; 2 duplicates the REQ; 4 loses the REP and 44 the REQ
// (the first decisions of direction 1 and 0, which depend on the seed
// alone), so the handshake's recovery is exercised on every run.
INSTANTIATE_TEST_SUITE_P(Wire, RoceImpairedTest,
                         ::testing::Values(Clean(), Impaired(1), Impaired(2),
                                           Impaired(4), Impaired(44)),
                         [](const ::testing::TestParamInfo<Impairment>& param) {
                           return param.param.name;
                         });

// Soak runs on demand, e.g. 100 seeds at 10 % loss, 10 % reordering (depth
// 8) and 5 % duplication:
//   ROCE_IMPAIRED_SOAK=0.10,0.10,8,0.05,1,100 roce_impaired_test
// (loss, reorder, reorder depth, duplicate, first seed, last seed). Without
// the variable this adds no test.
std::vector<Impairment> SoakImpairments() {
  std::vector<Impairment> soak;
  const char* spec = std::getenv("ROCE_IMPAIRED_SOAK");
  if (spec == nullptr) return soak;
  Impairment base = Impaired(0);
  unsigned first = 0, last = 0;
  if (std::sscanf(spec, "%lf,%lf,%u,%lf,%u,%u", &base.loss, &base.reorder,
                  &base.reorder_depth, &base.duplicate, &first, &last) != 6) {
    std::fprintf(stderr,
                 "ROCE_IMPAIRED_SOAK: write LOSS,REORDER,DEPTH,DUPLICATE,"
                 "FIRST_SEED,LAST_SEED, e.g. 0.10,0.10,8,0.05,1,100\n");
    std::exit(2);
  }
  for (unsigned seed = first; seed <= last; ++seed) {
    Impairment impairment = base;
    impairment.seed = seed;
    impairment.name = absl::StrFormat(
        "loss%g_reorder%g_depth%u_dup%g_seed%u", base.loss * 100,
        base.reorder * 100, base.reorder_depth, base.duplicate * 100, seed);
    std::replace(impairment.name.begin(), impairment.name.end(), '.', 'p');
    soak.push_back(impairment);
  }
  return soak;
}
INSTANTIATE_TEST_SUITE_P(Soak, RoceImpairedTest,
                         ::testing::ValuesIn(SoakImpairments()),
                         [](const ::testing::TestParamInfo<Impairment>& param) {
                           return param.param.name;
                         });

}  // namespace
}  // namespace spinnic

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new spinnic::EalEnvironment());
  return RUN_ALL_TESTS();
}
