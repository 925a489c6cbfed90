// One NAAICE connection on the appliance (docs/naaice.md): the session's
// state machine (naaice_session.h) driven by the host's SENDs (the
// memory-region setup protocol) and WRITEs WITH IMMEDIATE (function
// calls), the regions it allocated for the host (the memory the host's RDMA
// WRITEs land in and our results come from), and the result write-back.
// The service of every QP connected on roce.naaice_port.
//
// Regions are allocated when the host's memory-region setup message
// arrives (once per connection, not per packet), zeroed, from EAL memory,
// bounded by roce.naaice_max_bytes; freed when the connection closes.
#ifndef SPINNIC_DATAPLANE_ROCE_NAAICE_SERVICE_H_
#define SPINNIC_DATAPLANE_ROCE_NAAICE_SERVICE_H_

#include <array>
#include <cstdint>
#include <span>

#include "dataplane/roce/mrsp.h"
#include "dataplane/roce/naaice_session.h"
#include "dataplane/roce/qp_service.h"
#include "handlers/naaice/function.h"

namespace spinnic::roce {

class NaaiceService final : public QpService, public naaice::RegionAllocator {
 public:
  NaaiceService(uint32_t qpn, uint64_t max_bytes,
                const ::spinnic::naaice::FunctionTable* functions);
  ~NaaiceService() override;

  naaice::Session& session() { return session_; }

  // QpService.
  ServiceKind kind() const override { return ServiceKind::kNaaice; }
  uint32_t max_message_bytes() const override { return mrsp::kMaxMessageBytes; }
  void OnSend(const ReceivedSend& send, QpActions& qp) override;
  void OnWriteImm(uint32_t immediate, uint32_t msn, QpActions& qp) override;
  void OnCompletion(uint32_t tag, CompletionStatus status,
                    QpActions& qp) override;

  // naaice::RegionAllocator.
  naaice::AllocStatus Allocate(const mrsp::RegionRequest& request,
                               naaice::Allocation* out) override;
  void Free(uint32_t id) override;

 private:
  static constexpr uint32_t kTagReply = 1;
  static constexpr uint32_t kTagResult = 2;
  static constexpr uint32_t kTagResultEnd = 3;

  void WriteBack(const naaice::WriteBack& write_back, QpActions& qp);

  naaice::Session session_;
  // A stable copy of the session's reply (the session's own bytes change
  // with its next call; the requester sends from here).
  std::array<uint8_t, mrsp::kMaxMessageBytes> reply_{};
};

}  // namespace spinnic::roce

#endif  // SPINNIC_DATAPLANE_ROCE_NAAICE_SERVICE_H_
