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
                                 uint32_t out_reads)
    : QpService(qpn, region_bytes),
      region_bytes_(region_bytes),
      local_gid_(local_gid),
      out_reads_(out_reads) {}

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

void PerftestService::OnSend(const ReceivedSend& send, QpActions& qp) {
  const size_t n = send.bytes.size();
  std::memset(reply_.data(), 0, reply_.size());
  if (n == kPerftestVersionBytes) {
    std::memcpy(reply_.data(), kPerftestVersion, sizeof kPerftestVersion);
  } else if (n == kPingpongDestBytes) {
    // Ours names the data connection and its region. The client connects
    // it after the first destination exchange, whose answer it ignores:
    // until then we name this QP and no region.
    QpService* sibling = qp.Sibling();
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
    }
    WritePingpongDest(dest, std::span<uint8_t, kPingpongDestBytes>(reply_));
  } else if (n != 8) {
    std::memcpy(reply_.data(), send.bytes.data(), n);
  }
  ++exchanges_;
  if (!qp.PostSend({reply_.data(), n}, 0)) qp.Fail();
}

}  // namespace spinnic::roce
