#include "dataplane/roce/perftest_service.h"

#include <algorithm>
#include <cstring>

#include "dataplane/common/byte_order.h"

namespace spinnic::roce {
namespace {}  // namespace

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
                                 uint32_t out_reads, Role role)
    : QpService(qpn, region_bytes),
      region_bytes_(region_bytes),
      local_gid_(local_gid),
      out_reads_(out_reads),
      role_(role) {}

ConnectionRegions::Status PerftestService::Prepare() {
  if (role_ != Role::kData) return ConnectionRegions::Status::kOk;
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
  // exchange messages into the engine's buffer.
  return role_ == Role::kData ? data_.bytes : std::span<uint8_t>();
}

void PerftestService::OnSend(const ReceivedSend& send, QpActions& qp) {
  if (role_ == Role::kData) {
    OnDataMessage(Echo::kSend, 0, send.bytes.size(), qp);
  } else {
    OnControlSend(send, qp);
  }
}

void PerftestService::OnWrite(uint64_t va, uint64_t length, QpActions& qp) {
  if (role_ == Role::kData && has_peer_ && peer_.rkey != 0) {
    OnDataMessage(Echo::kWrite, va, length, qp);
  }
}

void PerftestService::OnDataMessage(Echo kind, uint64_t va, uint64_t length,
                                    QpActions& qp) {
  if (streaming_) return;
  if (!in_flight_) {
    Reply(kind, va, length, qp);
    return;
  }
  if (owed_ != Echo::kNone) {
    // A second message while ours is in flight: a bandwidth test.
    streaming_ = true;
    owed_ = Echo::kNone;
    return;
  }
  owed_ = kind;
  owed_va_ = va;
  owed_length_ = length;
}

void PerftestService::Reply(Echo kind, uint64_t va, uint64_t length,
                            QpActions& qp) {
  bool posted = false;
  if (kind == Echo::kSend) {
    // ib_send_lat: the same number of bytes back (what it received is in
    // the region; the client compares nothing but the length).
    if (length > data_.bytes.size()) return;
    posted = qp.PostSend(data_.bytes.first(length), 0);
  } else {
    // ib_write_lat: the client polls the last byte of its own buffer at the
    // offset it wrote ours at; our region holds what it wrote.
    const uint64_t base = data_.address;
    if (va < base || va - base > data_.bytes.size() ||
        length > data_.bytes.size() - (va - base) || length > UINT32_MAX) {
      return;
    }
    posted = qp.PostWrite(data_.bytes.subspan(va - base, length),
                          peer_.vaddr + (va - base), peer_.rkey, nullptr, 0);
  }
  if (!posted) {
    qp.Fail();
    return;
  }
  in_flight_ = true;
  ++echoes_;
}

void PerftestService::OnCompletion(uint32_t tag, CompletionStatus status,
                                   QpActions& qp) {
  (void)tag;
  if (role_ != Role::kData) return;
  in_flight_ = false;
  if (status != CompletionStatus::kSuccess) return;
  if (owed_ != Echo::kNone && !streaming_) {
    const Echo kind = owed_;
    owed_ = Echo::kNone;
    Reply(kind, owed_va_, owed_length_, qp);
  }
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
    QpService* sibling = qp.Sibling(has_theirs ? theirs.qpn : 0);
    if (sibling == nullptr && has_theirs) sibling = qp.Sibling(0);
    PingpongDest dest;
    dest.out_reads = out_reads_;
    dest.qpn = regions().qpn();
    dest.gid = local_gid_;
    if (sibling != nullptr && sibling->kind() == ServiceKind::kPerftest) {
      PerftestService* data = static_cast<PerftestService*>(sibling);
      const ConnectionRegions::Region& region = data->DataRegion();
      dest.qpn = data->regions().qpn();
      dest.rkey = region.rkey;
      dest.vaddr = region.address;
      if (has_theirs) data->SetPeer(theirs);
    }
    WritePingpongDest(dest, std::span<uint8_t, kPingpongDestBytes>(reply_));
  } else if (n != 8) {
    std::memcpy(reply_.data(), send.bytes.data(), n);
  }
  ++exchanges_;
  if (!qp.PostSend({reply_.data(), n}, 0)) qp.Fail();
}

}  // namespace spinnic::roce
