// The non-template parts of the DiAD reliability state machines
// (channel.h): the down time, sessions and the go-back-N receiver.
#include "dataplane/diad/channel.h"

#include <cstdint>

namespace spinnic::diad {

using internal::NextRtoNs;
using internal::SaturatingAdd;

const char* RecoveryName(Recovery recovery) {
  switch (recovery) {
    case Recovery::kGoBackN:
      return "GO_BACK_N";
    case Recovery::kSelective:
      return "SELECTIVE";
  }
  return "unknown";
}

uint64_t DownAfterNs(const ChannelConfig& config) {
  // Mirrors SendWindow: the timer is armed with rto_ns; every expiry that
  // does not bring the channel down doubles the timeout (capped at
  // rto_max_ns) and re-arms it; expiry max_retries + 1 brings it down.
  const uint64_t expiries = uint64_t{config.max_retries} + 1;
  uint64_t total = 0;
  uint64_t rto = config.rto_ns;
  for (uint64_t expiry = 1; expiry <= expiries; ++expiry) {
    const uint64_t next = NextRtoNs(rto, config);
    if (next == rto) {
      // At the cap: the remaining expiries all wait `rto` (no loop of
      // four billion rounds for a huge max_retries).
      const uint64_t remaining = expiries - expiry + 1;
      if (rto != 0 && remaining > (UINT64_MAX - total) / rto) {
        return UINT64_MAX;
      }
      return total + remaining * rto;
    }
    total = SaturatingAdd(total, rto);
    rto = next;
  }
  return total;
}

uint64_t TxnDeadlineNs(const ChannelConfig& config) {
  if (config.txn_deadline_ns != 0) return config.txn_deadline_ns;
  const uint64_t down = DownAfterNs(config);
  return down > UINT64_MAX / kTxnDeadlineDownAfters
             ? UINT64_MAX
             : down * kTxnDeadlineDownAfters;
}

// ---------------------------------------------------------------- sessions

Session::Verdict Session::Check(uint32_t src_epoch, uint32_t dst_epoch) {
  // Epochs are never zero; a packet claiming zero as its sender's epoch, or
  // coming from the session the peer left behind, is stale.
  if (src_epoch == 0 || src_epoch == retired_peer_epoch_) {
    return Verdict::kStale;
  }
  // Addressed to a session of ours other than the current one.
  if (dst_epoch != 0 && dst_epoch != my_epoch_) return Verdict::kStale;
  if (peer_epoch_ == 0) {
    // The peer's first packet (ours or its session is new): learn it.
    peer_epoch_ = src_epoch;
    return Verdict::kOk;
  }
  if (src_epoch == peer_epoch_) return Verdict::kOk;
  // An epoch we do not know while a session is up. One that does not know
  // ours yet is challenged, not believed: a single spoofed packet must not
  // reset the channel and abort its transactions. One that knows our
  // current epoch (32 random bits, only ever sent to the peer) learned it
  // from our challenge, or from our stale reply after we restarted: the
  // peer's new session.
  if (dst_epoch == 0) return Verdict::kChallenge;
  retired_peer_epoch_ = peer_epoch_;
  peer_epoch_ = src_epoch;
  return Verdict::kPeerReset;
}

void Session::Restart(uint32_t new_epoch) {
  my_epoch_ = new_epoch;
  peer_epoch_ = 0;
}

// ---------------------------------------------------------------- receiver

ReceiveWindow::Result ReceiveWindow::OnPacket(uint32_t seq, bool ack_now,
                                              uint64_t now_ns) {
  const int64_t diff = SeqDiff(seq, expected_);
  if (diff == 0) {
    ++expected_;
    if (unacked_ == 0) first_unacked_ns_ = now_ns;
    ++unacked_;
    if (ack_now) ack_now_ = true;
    nack_sent_ = false;  // a new expected value: its gap is not NACKed yet
    return {Verdict::kAccept, false};
  }
  const int64_t distance = diff < 0 ? -diff : diff;
  if (distance >= int64_t{config_.receive_span}) {
    return {Verdict::kOutside, false};
  }
  if (diff < 0) {
    // Delivered before: our ACK was lost or is late; repeat it now.
    ack_now_ = true;
    return {Verdict::kDuplicate, false};
  }
  // SELECTIVE: the caller holds it and sends a SACK instead of a NACK.
  if (selective_) return {Verdict::kGap, false};
  const bool nack =
      !nack_sent_ ||
      now_ns >= SaturatingAdd(nack_sent_ns_, config_.nack_interval_ns);
  if (nack) {
    nack_sent_ = true;
    nack_sent_ns_ = now_ns;
  }
  return {Verdict::kGap, nack};
}

bool ReceiveWindow::AckDue(uint64_t now_ns) const {
  if (ack_now_ || probe_reply_due_ || sack_now_) return true;
  if (unacked_ == 0) return false;
  return unacked_ >= config_.ack_every ||
         now_ns >= SaturatingAdd(first_unacked_ns_, config_.ack_delay_ns);
}

void ReceiveWindow::OnAckSent() {
  unacked_ = 0;
  first_unacked_ns_ = 0;
  ack_now_ = false;
  probe_reply_due_ = false;
  sack_now_ = false;
}

uint64_t ReceiveWindow::ack_deadline() const {
  if (ack_now_ || probe_reply_due_ || sack_now_) return 0;
  if (unacked_ == 0) return UINT64_MAX;
  if (unacked_ >= config_.ack_every) return 0;
  return SaturatingAdd(first_unacked_ns_, config_.ack_delay_ns);
}

void ReceiveWindow::Reset() {
  expected_ = 0;
  selective_ = false;  // renegotiated per session
  OnAckSent();
  nack_sent_ = false;
  nack_sent_ns_ = 0;
}

}  // namespace spinnic::diad
