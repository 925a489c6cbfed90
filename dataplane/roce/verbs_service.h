// The service of plain QPs (docs/roce.md, "Services"): CM connections on a
// roce.listen_ports port that no other service claims, and QPs created over
// gRPC. Each SEND message becomes a roce_send event for the control plane
// (its QP, length, immediate and first bytes). A CM connection also gets a
// region of its own, roce.connection_region_bytes zeroed, with remote read,
// write and atomic access, advertised in the REP's private data as
// { be64 address; be32 rkey; } the way rdma_cm servers commonly hand their
// buffer to the client (rxe-peer's rxe_ops expects exactly this).
#ifndef SPINNIC_DATAPLANE_ROCE_VERBS_SERVICE_H_
#define SPINNIC_DATAPLANE_ROCE_VERBS_SERVICE_H_

#include <cstdint>

#include "dataplane/roce/qp_service.h"

namespace spinnic::roce {

inline constexpr uint32_t kVerbsPrivateDataBytes = 12;
// SEND messages up to this size are taken (one page, like a typical
// receive buffer); the event carries their first bytes.
inline constexpr uint32_t kVerbsMaxSendBytes = 4096;

class VerbsService final : public QpService {
 public:
  // `region_bytes` 0: no region of its own (a QP created over gRPC uses the
  // registered regions).
  VerbsService(uint32_t qpn, uint64_t region_bytes);

  const ConnectionRegions::Region& region() const { return region_; }

  // QpService.
  ServiceKind kind() const override { return ServiceKind::kVerbs; }
  uint32_t max_message_bytes() const override { return kVerbsMaxSendBytes; }
  size_t RepPrivateData(std::span<uint8_t> out) override;
  void OnSend(const ReceivedSend& send, QpActions& qp) override;

 private:
  ConnectionRegions::Region region_;
};

}  // namespace spinnic::roce

#endif  // SPINNIC_DATAPLANE_ROCE_VERBS_SERVICE_H_
