// Shared by the roce_engine*.cc files only (not a public header): small
// helpers and RoceEngine::ServiceActions, a service's handle on its QP.
#ifndef SPINNIC_DATAPLANE_ROCE_ROCE_ENGINE_INTERNAL_H_
#define SPINNIC_DATAPLANE_ROCE_ROCE_ENGINE_INTERNAL_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <span>

#include "dataplane/ectx_table.h"
#include "dataplane/hpu.h"
#include "dataplane/roce/roce_engine.h"

namespace spinnic::roce {
namespace roce_engine_internal {

// Replies sent per QP per poll: a long READ is paced so that one QP cannot
// hold the HPU (or the TX batch) for a whole message.
inline constexpr uint32_t kReplyBudget = 32;
// The READ response gap after a duplicate READ: from 2 us (500,000
// packets/s) doubling to 1 ms; below the minimum, unpaced again.
inline constexpr uint64_t kReadGapMinNs = 2'000;
inline constexpr uint64_t kReadGapMaxNs = 1'000'000;

// An IPv4-mapped IPv6 address (::ffff:a.b.c.d): a RoCEv2-over-IPv4 peer.
inline bool IsMapped(const Gid& ip) {
  static constexpr std::array<uint8_t, 12> kPrefix = {0, 0, 0, 0, 0,    0,
                                                      0, 0, 0, 0, 0xff, 0xff};
  return std::equal(kPrefix.begin(), kPrefix.end(), ip.begin());
}

}  // namespace roce_engine_internal

// A service's handle on its QP for one call (qp_service.h).
class RoceEngine::ServiceActions final : public QpActions {
 public:
  // `table`: the ECTX table of this poll, or nullptr outside a packet's
  // handling (then the built-in functions).
  ServiceActions(RoceEngine* engine, Qp& qp, const EctxTable* table = nullptr)
      : engine_(engine), qp_(qp), table_(table) {}

  bool PostSend(std::span<const uint8_t> bytes, uint32_t tag) override {
    WorkRequest wr;
    wr.kind = WorkRequest::Kind::kSend;
    wr.local_offset = reinterpret_cast<uint64_t>(bytes.data());
    wr.length = static_cast<uint32_t>(bytes.size());
    return Post(wr, tag);
  }
  bool PostRead(std::span<uint8_t> local, uint64_t remote_va, uint32_t rkey,
                uint32_t tag) override {
    WorkRequest wr;
    wr.kind = WorkRequest::Kind::kRead;
    wr.local_offset = reinterpret_cast<uint64_t>(local.data());
    wr.length = static_cast<uint32_t>(local.size());
    wr.remote_va = remote_va;
    wr.rkey = rkey;
    return Post(wr, tag);
  }
  bool PostWrite(std::span<const uint8_t> local, uint64_t remote_va,
                 uint32_t rkey, const uint32_t* immediate,
                 uint32_t tag) override {
    WorkRequest wr;
    wr.kind = immediate != nullptr ? WorkRequest::Kind::kWriteImm
                                   : WorkRequest::Kind::kWrite;
    wr.local_offset = reinterpret_cast<uint64_t>(local.data());
    wr.length = static_cast<uint32_t>(local.size());
    wr.remote_va = remote_va;
    wr.rkey = rkey;
    if (immediate != nullptr) wr.imm = *immediate;
    return Post(wr, tag);
  }
  void ReportSend(const ReceivedSend& send) override {
    uint8_t data[Event::kMaxData] = {};
    const uint32_t head[4] = {qp_.qpn, static_cast<uint32_t>(send.bytes.size()),
                              send.immediate, send.has_immediate ? 1u : 0u};
    std::memcpy(data, head, sizeof head);
    const size_t shown = std::min(send.bytes.size(), sizeof data - sizeof head);
    if (shown != 0) std::memcpy(data + sizeof head, send.bytes.data(), shown);
    engine_->hpu_->RaiseTransportEvent(kEventRoceSend,
                                       {data, sizeof head + shown});
  }
  QpService* Sibling(uint32_t remote_qpn) override {
    return engine_->Sibling(qp_, remote_qpn);
  }
  void Start(QpService* sibling) override {
    engine_->StartSibling(qp_, sibling, table_);
  }
  void Fail() override { engine_->FailQp(qp_); }
  uint32_t qpn() const override { return qp_.qpn; }
  RoceCounters& counters() override { return engine_->counters_; }
  const ::spinnic::naaice::FunctionTable& naaice_functions() override {
    return table_ != nullptr ? engine_->FunctionsFor(*table_)
                             : engine_->functions_;
  }

 private:
  bool Post(const WorkRequest& wr, uint32_t tag) {
    const uint64_t wr_id = qp_.next_wr_id;
    if (!engine_->PostWork(qp_, wr, nullptr, nullptr)) return false;
    Qp::LocalWr& local = qp_.wrs[wr_id % kSqDepth];
    local.from_service = true;
    local.service_tag = tag;
    return true;
  }

  RoceEngine* const engine_;
  Qp& qp_;
  const EctxTable* const table_;
};

}  // namespace spinnic::roce

#endif  // SPINNIC_DATAPLANE_ROCE_ROCE_ENGINE_INTERNAL_H_
