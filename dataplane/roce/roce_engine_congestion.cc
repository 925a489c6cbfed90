// RoceEngine's congestion control (roce_engine.h, docs/congestion.md):
// DCQCN's notification point (a CNP back to the sender of CE-marked
// packets, at most one per QP per roce.congestion.cnp_interval_us) and its
// reaction point (a received CNP cuts the requester's rate; its timers run
// from Poll; the requester's packets are paced by the rate).
#include <rte_mbuf.h>

#include <algorithm>
#include <cstdint>

#include "dataplane/hpu.h"
#include "dataplane/roce/cnp.h"
#include "dataplane/roce/roce_engine.h"

namespace spinnic::roce {
namespace {

// What a frame costs on the wire besides its bytes: FCS, preamble and
// start-of-frame delimiter, inter-frame gap.
constexpr uint64_t kWireOverheadBytes = 4 + 8 + 12;
// How far a paced QP's send time may lag behind the clock: a poll that
// comes late sends what the rate allowed meanwhile, up to this much (a
// burst of at most this time's worth at the rate), so a rate above one
// packet per poll is still reached. Idle time beyond it is not credited.
constexpr uint64_t kPacingSlackNs = 10'000;

}  // namespace

void RoceEngine::OnCeMarked(Qp& qp) {
  counters_.ecn_ce_received.Add();
  shared_.qp_status[qp.qpn - kFirstQpn].ce_marks.fetch_add(
      1, std::memory_order_relaxed);
  if (!config_.congestion.enabled) return;
  const uint64_t now = CongestionNow();
  if (qp.cnp_sent_once &&
      now - qp.last_cnp_ns < config_.congestion.cnp_interval_ns) {
    counters_.cnp_held.Add();
    return;
  }
  // The CNP goes back on the QP's own addresses and UDP source port, with
  // the QP's DSCP and Not-ECT: a congestion notification is not itself
  // subject to marking.
  FrameParams params = qp.params;
  params.traffic_class &= static_cast<uint8_t>(~0x3u);
  const uint32_t length = CnpFrameBytes(params.ip_version, params.vlan);
  rte_mbuf* m = rte_pktmbuf_alloc(shared_.pool);
  if (m == nullptr) {
    counters_.Drop(RoceDrop::kNoBuffer);
    return;
  }
  uint8_t* frame = reinterpret_cast<uint8_t*>(
      rte_pktmbuf_append(m, static_cast<uint16_t>(length)));
  if (frame == nullptr ||
      BuildCnp(params, qp.spec.remote_qpn, frame, length) != length) {
    rte_pktmbuf_free(m);
    counters_.Drop(RoceDrop::kNoBuffer);
    return;
  }
  qp.cnp_sent_once = true;
  qp.last_cnp_ns = now;
  counters_.cnp_sent.Add();
  counters_.tx_packets.Add();
  counters_.tx_bytes.Add(m->pkt_len);
  shared_.qp_status[qp.qpn - kFirstQpn].cnps_sent.fetch_add(
      1, std::memory_order_relaxed);
  hpu_->Transmit(config_.port, m);
}

void RoceEngine::ReceiveCnp(rte_mbuf* packet, const ParsedFrame& frame) {
  Cnp cnp;
  const ParseError error =
      ParseCnp(rte_pktmbuf_mtod(packet, uint8_t*), packet->data_len,
               frame.layers.l3_offset, frame.layers.l4_offset, &cnp);
  if (error != ParseError::kNone) {
    counters_.parse_errors[static_cast<size_t>(error)].Add();
    return;
  }
  Qp* qp = FindQp(cnp.dest_qp);
  if (qp == nullptr) {
    counters_.Drop(RoceDrop::kCnpUnknownQp);
    return;
  }
  if (cnp.src_ip != qp->spec.remote_ip) {
    counters_.Drop(RoceDrop::kWrongPeer);
    return;
  }
  counters_.cnp_received.Add();
  shared_.qp_status[qp->qpn - kFirstQpn].cnps_received.fetch_add(
      1, std::memory_order_relaxed);
  if (!qp->dcqcn.has_value()) {
    counters_.cnp_ignored.Add();
    return;
  }
  const uint64_t now = CongestionNow();
  qp->dcqcn->OnCnp(static_cast<int64_t>(now));
  // Paced from now on: no credit from before the cut.
  qp->next_send_ns = std::max(qp->next_send_ns, now);
  ListTimers(*qp);
  PublishRate(*qp);
}

void RoceEngine::OnRequestSent(Qp& qp, uint32_t bytes, bool paced,
                               uint64_t cc_now) {
  const uint64_t now = paced ? cc_now : CongestionNow();
  DcqcnRateController& dcqcn = *qp.dcqcn;
  dcqcn.OnBytesSent(bytes, static_cast<int64_t>(now));
  if (paced) {
    // The packet's time on the wire at the current rate (never zero: the
    // rate is at least the min rate, so the wait is bounded).
    const double gap_ns = static_cast<double>(bytes + kWireOverheadBytes) *
                          8e9 / dcqcn.rate_bps();
    qp.next_send_ns =
        std::max(qp.next_send_ns, now - std::min(now, kPacingSlackNs)) +
        static_cast<uint64_t>(gap_ns);
  }
  ListTimers(qp);
  PublishRate(qp);
}

void RoceEngine::ListTimers(Qp& qp) {
  const int64_t next = qp.dcqcn->NextEventNs();
  if (next == INT64_MAX) return;
  cc_next_event_ns_ = std::min(cc_next_event_ns_, static_cast<uint64_t>(next));
  if (qp.cc_listed) return;
  qp.cc_listed = true;
  cc_timers_.push_back(qp.qpn - kFirstQpn);  // reserved: max_qps
}

void RoceEngine::RunCongestionTimers() {
  const uint64_t now = CongestionNow();
  if (now < cc_next_event_ns_) return;
  uint64_t next = UINT64_MAX;
  size_t keep = 0;
  for (size_t i = 0; i < cc_timers_.size(); ++i) {
    Qp& qp = *qps_[cc_timers_[i]];
    if (!qp.in_use || !qp.dcqcn.has_value()) {
      qp.cc_listed = false;
      continue;
    }
    if (static_cast<int64_t>(now) >= qp.dcqcn->NextEventNs()) {
      qp.dcqcn->Advance(static_cast<int64_t>(now));
      PublishRate(qp);
    }
    const int64_t due = qp.dcqcn->NextEventNs();
    if (due == INT64_MAX) {
      qp.cc_listed = false;
      continue;
    }
    next = std::min(next, static_cast<uint64_t>(due));
    cc_timers_[keep++] = cc_timers_[i];
  }
  cc_timers_.resize(keep);
  cc_next_event_ns_ = next;
}

void RoceEngine::PublishRate(const Qp& qp) {
  QpStatus& s = shared_.qp_status[qp.qpn - kFirstQpn];
  const bool on = qp.dcqcn.has_value();
  s.rate_bps.store(on ? static_cast<uint64_t>(qp.dcqcn->rate_bps()) : 0,
                   std::memory_order_relaxed);
  s.alpha_ppm.store(
      on ? static_cast<uint32_t>(qp.dcqcn->alpha() * 1e6 + 0.5) : 0,
      std::memory_order_relaxed);
  s.next_send_ns.store(qp.next_send_ns, std::memory_order_relaxed);
}

}  // namespace spinnic::roce
