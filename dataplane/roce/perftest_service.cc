#include "dataplane/roce/perftest_service.h"

#include <algorithm>
#include <cstring>

#include "dataplane/common/byte_order.h"

namespace spinnic::roce {
namespace {

// Completion tags: ib_send_lat's answers (0) and ib_write_lat's counts.
constexpr uint32_t kSendBackTag = 0;
constexpr uint32_t kWriteCountTag = 1;

}  // namespace

// Layout (perftest_communication.c, the rdma_cm exchange): lid, out_reads,
// qpn, psn, rkey, 4 bytes of padding, vaddr (8), gid (16), srqn,
// gid_index; integers big-endian.
void WritePingpongDest(const PingpongDest& dest,
                       std::span<uint8_t, kPingpongDestBytes> out) {
  uint8_t* p = out.data();
  std::memset(p, 0, kPingpongDestBytes);
  StoreBe32(p + 0, dest.lid);
  StoreBe32(p + 4, dest.out_reads);
  StoreBe32(p + 8, dest.qpn);
  StoreBe32(p + 12, dest.psn);
  StoreBe32(p + 16, dest.rkey);
  StoreBe64(p + 24, dest.vaddr);
  std::memcpy(p + 32, dest.gid.data(), 16);
  StoreBe32(p + 48, dest.srqn);
  StoreBe32(p + 52, dest.gid_index);
}

bool ParsePingpongDest(std::span<const uint8_t> bytes, PingpongDest* dest) {
  if (bytes.size() != kPingpongDestBytes) return false;
  const uint8_t* p = bytes.data();
  dest->lid = LoadBe32(p + 0);
  dest->out_reads = LoadBe32(p + 4);
  dest->qpn = LoadBe32(p + 8);
  dest->psn = LoadBe32(p + 12);
  dest->rkey = LoadBe32(p + 16);
  dest->vaddr = LoadBe64(p + 24);
  std::memcpy(dest->gid.data(), p + 32, 16);
  dest->srqn = LoadBe32(p + 48);
  dest->gid_index = LoadBe32(p + 52);
  return true;
}

PerftestService::PerftestService(uint32_t qpn, uint64_t region_bytes,
                                 const std::array<uint8_t, 16>& local_gid,
                                 uint32_t out_reads, Role role,
                                 const PerftestWriteLatConfig& write_lat)
    : QpService(qpn, region_bytes),
      region_bytes_(region_bytes),
      local_gid_(local_gid),
      out_reads_(out_reads),
      role_(role),
      write_lat_(write_lat) {}

ConnectionRegions::Status PerftestService::Prepare() {
  if (role_ == Role::kControl) return ConnectionRegions::Status::kOk;
  data_tried_ = true;
  const ConnectionRegions::Status status =
      regions().Allocate(region_bytes_, &data_);
  if (status != ConnectionRegions::Status::kOk) data_ = {};
  return status;
}

const ConnectionRegions::Region& PerftestService::DataRegion() {
  if (!data_tried_) {
    data_tried_ = true;
    if (regions().Allocate(region_bytes_, &data_) !=
        ConnectionRegions::Status::kOk) {
      data_ = {};
    }
  }
  return data_;
}

void PerftestService::SetPeer(const PingpongDest& peer) {
  peer_ = peer;
  has_peer_ = true;
}

std::span<uint8_t> PerftestService::ReceiveArea() {
  // A data connection receives ib_send_bw's and ib_send_lat's messages (up
  // to the region's size) into its region; a control one the 56-byte
  // exchange messages into the engine's buffer. An undecided one may be
  // either: its region until it turns out a control connection.
  return role_ != Role::kControl ? data_.bytes : std::span<uint8_t>();
}

void PerftestService::BecomeData() {
  if (role_ == Role::kUndecided) role_ = Role::kData;
}

void PerftestService::BecomeControl() {
  if (role_ != Role::kUndecided) return;
  role_ = Role::kControl;
  receive_area_changed_ = true;  // the region goes with ReleaseRegion
}

void PerftestService::ReleaseRegion() {
  if (role_ != Role::kControl || data_.id == 0) return;
  regions().Free(data_.id);
  data_ = {};
}

void PerftestService::OnSend(const ReceivedSend& send, QpActions& qp) {
  if (role_ == Role::kUndecided) {
    // Nothing named it a data connection before its first SEND: perftest's
    // version message opens a control connection; anything else is data.
    if (send.bytes.size() != kPerftestVersionBytes) BecomeData();
  }
  if (role_ == Role::kData) {
    OnDataSend(send.bytes.size(), qp);
    return;
  }
  const bool undecided = role_ == Role::kUndecided;
  OnControlSend(send, qp);  // reads the message (in the region) first
  if (undecided) BecomeControl();
}

void PerftestService::OnWrite(uint64_t va, uint64_t length, QpActions& qp) {
  (void)va;
  if (role_ == Role::kData && write_lat_.port != 0) {
    OnLatencyWrite(length, qp);
  }
}

void PerftestService::OnStart(QpActions& qp) {
  if (role_ != Role::kData || write_lat_.port == 0 || lat_started_ ||
      !has_peer_ || peer_.rkey == 0) {
    return;
  }
  lat_started_ = true;
  lat_size_ = write_lat_.all_sizes ? 2 : write_lat_.size;
  lat_received_ = 0;
  WriteCount(1, qp);
}

void PerftestService::OnLatencyWrite(uint64_t length, QpActions& qp) {
  if (!lat_started_ || lat_done_ || length != lat_size_) return;
  ++lat_received_;
  if (lat_received_ < write_lat_.iterations) {
    WriteCount(lat_received_ + 1, qp);
    return;
  }
  // The client's last write at this size: -a goes on with twice the size,
  // the server writing first again.
  if (write_lat_.all_sizes && lat_size_ < kPerftestMaxMessageBytes) {
    lat_size_ *= 2;
    lat_received_ = 0;
    WriteCount(1, qp);
    return;
  }
  lat_done_ = true;
}

void PerftestService::WriteCount(uint64_t count, QpActions& qp) {
  // The source is the start of our region, where the client's writes land:
  // the client writes again only after it saw this one, so the bytes stay
  // ours while the write may still be on its way (or retransmitted).
  if (lat_size_ == 0 || lat_size_ > data_.bytes.size()) {
    qp.Fail();
    return;
  }
  const std::span<uint8_t> bytes = data_.bytes.first(lat_size_);
  bytes[lat_size_ - 1] = static_cast<uint8_t>(count);
  if (!qp.PostWrite(bytes, peer_.vaddr, peer_.rkey, nullptr, kWriteCountTag)) {
    qp.Fail();
  }
}

void PerftestService::OnDataSend(uint64_t length, QpActions& qp) {
  ++answers_owed_;
  answer_length_ = length;
  SendOwedAnswers(qp);
}

void PerftestService::SendOwedAnswers(QpActions& qp) {
  // The same number of bytes back (what it received is in the region; the
  // client compares nothing but the length).
  const uint32_t window = client_takes_answers_ ? kAnswersInFlight : 1;
  while (answers_owed_ > 0 && answers_in_flight_ < window) {
    if (answer_length_ > data_.bytes.size()) return;
    if (!qp.PostSend(data_.bytes.first(answer_length_), kSendBackTag)) {
      qp.Fail();
      return;
    }
    --answers_owed_;
    ++answers_in_flight_;
  }
}

void PerftestService::OnCompletion(uint32_t tag, CompletionStatus status,
                                   QpActions& qp) {
  // A count's completion says nothing about the SENDs' answers.
  if (role_ != Role::kData || tag != kSendBackTag) return;
  if (answers_in_flight_ > 0) --answers_in_flight_;
  if (status != CompletionStatus::kSuccess) return;
  client_takes_answers_ = true;
  SendOwedAnswers(qp);
}

void PerftestService::OnControlSend(const ReceivedSend& send, QpActions& qp) {
  const size_t n = send.bytes.size();
  std::memset(reply_.data(), 0, reply_.size());
  if (n == kPerftestVersionBytes) {
    std::memcpy(reply_.data(), kPerftestVersion, sizeof kPerftestVersion);
  } else if (n == kPingpongDestBytes) {
    // Ours names the data connection and its region. The client connects
    // it after the first destination exchange, whose answer it ignores:
    // until then we name this QP and no region. The client's own (its
    // buffer, for the latency tests' replies) goes to the data connection.
    // With -q N the client has N data connections and sends its own
    // destination per QP: ours names the data connection its QP is
    // connected to (the earlier exchanges carry zeros: the newest).
    PingpongDest theirs;
    const bool has_theirs =
        ParsePingpongDest(send.bytes, &theirs) && theirs.rkey != 0;
    // Another client's control connection (several perftests from one
    // address) is never named.
    auto data_sibling = [&qp](uint32_t qpn) -> PerftestService* {
      QpService* s = qp.Sibling(qpn);
      if (s == nullptr || s->kind() != ServiceKind::kPerftest) return nullptr;
      auto* perftest = static_cast<PerftestService*>(s);
      return perftest->role() == Role::kControl ? nullptr : perftest;
    };
    PerftestService* data = data_sibling(has_theirs ? theirs.qpn : 0);
    if (data == nullptr && has_theirs) data = data_sibling(0);
    PingpongDest dest;
    dest.out_reads = out_reads_;
    dest.qpn = regions().qpn();
    dest.gid = local_gid_;
    if (data != nullptr) {
      const ConnectionRegions::Region& region = data->DataRegion();
      dest.qpn = data->regions().qpn();
      dest.rkey = region.rkey;
      dest.vaddr = region.address;
      if (has_theirs) {
        data->BecomeData();
        data->SetPeer(theirs);
        qp.Start(data);  // ib_write_lat's server writes first
      }
    }
    WritePingpongDest(dest, std::span<uint8_t, kPingpongDestBytes>(reply_));
  } else if (n != 8) {
    std::memcpy(reply_.data(), send.bytes.data(), n);
  }
  ++exchanges_;
  if (!qp.PostSend({reply_.data(), n}, 0)) qp.Fail();
}

}  // namespace spinnic::roce
