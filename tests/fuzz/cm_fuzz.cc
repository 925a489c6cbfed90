// Fuzz target for the connection manager (dataplane/roce/cm.h).
//
// Part 1: the input's first 256+ bytes go to ParseCmMad; whatever parses
// must rebuild into bytes that parse back to the same message.
// Part 2: the input is a script for a CmService (op byte, then operands):
//   0: a raw MAD of up to 256 bytes from the current peer
//   1: time passes (2 bytes * 1 ms), then OnTimer until it is done
//   2: an RC packet on QPN 0x10 + byte (NotifyRcPacket)
//   3: Disconnect(0x10 + byte)
//   4: the peer answers our last REP/DREQ: RTU, DREQ, DREP, REJ or MRA
//      (byte % 5), with our comm ID so that the state machine is reached
//   5: switch among 4 peer GIDs
//   6: a REQ built from the rping REQ with a new comm ID and QPN (byte)
// Invariants: the table never exceeds kCmMaxConnections, an action list
// never overflows, every MAD we send parses, QPs are created once and
// destroyed once, and a live QP's connection is REP sent or established.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <set>

#include "dataplane/roce/cm.h"

namespace {

using namespace spinnic::roce;

void Check(bool ok) {
  if (!ok) std::abort();
}

class FuzzAcceptor : public CmAcceptor {
 public:
  void OnConnectRequest(const CmConnectRequest& request,
                        CmAcceptDecision* decision) override {
    Check(request.req != nullptr && request.peer != nullptr);
    ++calls_;
    decision->accept = calls_ % 7 != 0;
    decision->reject_reason = CmRejReason::kNoQp;
    decision->local_qpn = 0x10 + calls_;  // unique per service
    decision->starting_psn = calls_ * 0x1234567u;
  }

 private:
  uint32_t calls_ = 0;
};

// The rping REQ's fields (tests/fixtures/roce/rping_v4.pcap) for op 6.
CmMad RpingReq() {
  CmMad mad;
  mad.header.transaction_id = 0x00000002e0f4b854ull;
  CmReq req;
  req.local_comm_id = 0x54b8f4e0;
  req.service_id = RdmaCmServiceId(kRdmaPsTcp, 7174);
  req.local_ca_guid = 0x505400fffe000012ull;
  req.local_qpn = 0x11;
  req.responder_resources = 1;
  req.initiator_depth = 1;
  req.remote_cm_response_timeout = 20;
  req.starting_psn = 0x934201;
  req.local_cm_response_timeout = 20;
  req.retry_count = 7;
  req.path_mtu = 3;
  req.rnr_retry_count = 7;
  req.max_cm_retries = 15;
  req.primary.local_gid = {0, 0, 0,    0,    0,   0, 0, 0,
                           0, 0, 0xff, 0xff, 192, 0, 2, 12};
  req.primary.remote_gid = req.primary.local_gid;
  req.primary.remote_gid[15] = 11;
  req.primary.hop_limit = 64;
  req.primary.local_ack_timeout = 19;
  RdmaCmHeader cma;
  cma.src_port = 0xb8f6;
  cma.src_addr[12] = 192, cma.src_addr[14] = 2, cma.src_addr[15] = 12;
  cma.dst_addr[12] = 192, cma.dst_addr[14] = 2, cma.dst_addr[15] = 11;
  BuildRdmaCmHeader(cma, req.private_data);
  mad.message = req;
  return mad;
}

void FuzzParser(const uint8_t* data, size_t size) {
  CmMad mad;
  if (ParseCmMad(std::span<const uint8_t>(data, size), &mad) !=
      CmParseError::kNone) {
    return;
  }
  std::array<uint8_t, kMadBytes> rebuilt;
  BuildCmMad(mad, rebuilt);
  CmMad again;
  Check(ParseCmMad(rebuilt, &again) == CmParseError::kNone);
  Check(again == mad);
}

struct Harness {
  FuzzAcceptor acceptor;
  std::unique_ptr<CmService> service;
  std::set<uint32_t> live_qps;
  uint64_t now_us = 1'000'000;
  CmPeer peer;
  std::array<uint8_t, kMadBytes> last_ours{};  // last REP or DREQ we sent
  bool have_last = false;

  Harness() {
    service = std::make_unique<CmService>(CmServiceConfig{}, &acceptor);
    Check(service->Listen(7174));
    peer.gid = std::get<CmReq>(RpingReq().message).primary.local_gid;
  }

  void Absorb(const CmActionList& actions) {
    Check(actions.size() <= kCmMaxActions);
    for (const CmAction& a : actions) {
      switch (a.type) {
        case CmActionType::kCreateQp:
          Check(live_qps.insert(a.local_qpn).second);
          Check(a.qp.local_qpn == a.local_qpn);
          Check(PathMtuBytes(a.qp.path_mtu) != 0);
          break;
        case CmActionType::kDestroyQp:
          Check(live_qps.erase(a.local_qpn) == 1);
          break;
        case CmActionType::kEstablished:
          Check(live_qps.count(a.local_qpn) == 1);
          break;
        case CmActionType::kSendMad: {
          CmMad mad;
          Check(ParseCmMad(a.mad, &mad) == CmParseError::kNone);
          CmAttr attr = AttrOf(mad.message);
          if (attr == CmAttr::kRep || attr == CmAttr::kDreq) {
            last_ours = a.mad;
            have_last = true;
          }
          break;
        }
      }
    }
    Check(service->connection_count() <= kCmMaxConnections);
    for (uint32_t qpn : live_qps) {
      CmConnState s = service->StateOfQpn(qpn);
      Check(s == CmConnState::kRepSent || s == CmConnState::kEstablished);
    }
  }

  void Mad(std::span<const uint8_t> bytes) {
    CmActionList actions;
    service->HandleMad(peer, bytes, now_us, &actions);
    Absorb(actions);
  }

  void Reply(uint8_t kind) {
    if (!have_last) return;
    CmMad ours;
    if (ParseCmMad(last_ours, &ours) != CmParseError::kNone) return;
    uint32_t our_id = 0, their_id = 0, our_qpn = 0;
    if (const CmRep* rep = std::get_if<CmRep>(&ours.message)) {
      our_id = rep->local_comm_id;
      their_id = rep->remote_comm_id;
      our_qpn = rep->local_qpn;
    } else if (const CmDreq* dreq = std::get_if<CmDreq>(&ours.message)) {
      our_id = dreq->local_comm_id;
      their_id = dreq->remote_comm_id;
    }
    CmMad reply;
    reply.header.transaction_id = ours.header.transaction_id;
    switch (kind % 5) {
      case 0:
        reply.message = CmRtu{their_id, our_id, {}};
        break;
      case 1:
        reply.message = CmDreq{their_id, our_id, our_qpn, {}};
        break;
      case 2:
        reply.message = CmDrep{their_id, our_id, {}};
        break;
      case 3:
        reply.message = CmRej{their_id, our_id, kCmMsgRep, 0, 28, {}, {}};
        break;
      default:
        reply.message = CmMra{their_id, our_id, kCmMsgRep, 18, {}};
        break;
    }
    std::array<uint8_t, kMadBytes> bytes;
    BuildCmMad(reply, bytes);
    Mad(bytes);
  }
};

void FuzzService(const uint8_t* data, size_t size) {
  Harness h;
  size_t at = 0;
  auto next = [&]() -> uint8_t { return at < size ? data[at++] : 0; };
  for (int ops = 0; at < size && ops < 2000; ++ops) {
    uint8_t op = next() % 7;
    switch (op) {
      case 0: {
        size_t n = std::min<size_t>(kMadBytes, size - at);
        h.Mad(std::span<const uint8_t>(data + at, n));
        at += n;
        break;
      }
      case 1: {
        uint64_t ms = uint64_t{next()} << 8 | next();
        h.now_us += ms * 1000;
        for (int i = 0; i < 64; ++i) {
          CmActionList actions;
          bool more = h.service->OnTimer(h.now_us, &actions);
          h.Absorb(actions);
          if (!more) break;
        }
        break;
      }
      case 2: {
        CmActionList actions;
        h.service->NotifyRcPacket(0x10 + next(), h.now_us, &actions);
        h.Absorb(actions);
        break;
      }
      case 3: {
        CmActionList actions;
        h.service->Disconnect(0x10 + next(), h.now_us, &actions);
        h.Absorb(actions);
        break;
      }
      case 4:
        h.Reply(next());
        break;
      case 5:
        h.peer.gid[15] = next() & 3;
        break;
      default: {
        uint8_t b = next();
        CmMad mad = RpingReq();
        CmReq& req = std::get<CmReq>(mad.message);
        req.local_comm_id = 0x1000 + b;
        req.local_qpn = 0x100 + b;
        req.max_cm_retries = b & 0xf;
        req.local_cm_response_timeout = b & 0x1f;
        std::array<uint8_t, kMadBytes> bytes;
        BuildCmMad(mad, bytes);
        h.Mad(bytes);
        break;
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzParser(data, size);
  FuzzService(data, size);
  return 0;
}
