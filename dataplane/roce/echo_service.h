// An echo server on a CM connection to roce.echo_port (docs/roce.md,
// "Services"): every SEND message (up to kEchoMaxMessageBytes, with or
// without immediate) is sent back as a SEND of the same bytes, the way
// librdmacm's rdma_server and rdma_xserver examples answer rdma_client and
// rdma_xclient. Up to kEchoDepth answers may be in flight; a SEND beyond
// that waits for one to complete (RNR NAK), as a server with that many
// buffers posted would make it.
#ifndef SPINNIC_DATAPLANE_ROCE_ECHO_SERVICE_H_
#define SPINNIC_DATAPLANE_ROCE_ECHO_SERVICE_H_

#include <cstdint>
#include <memory>

#include "dataplane/roce/qp_service.h"

namespace spinnic::roce {

inline constexpr uint32_t kEchoMaxMessageBytes = 4096;
inline constexpr uint32_t kEchoDepth = 16;

class EchoService final : public QpService {
 public:
  explicit EchoService(uint32_t qpn);

  // QpService.
  ServiceKind kind() const override { return ServiceKind::kEcho; }
  uint32_t max_message_bytes() const override { return kEchoMaxMessageBytes; }
  bool CanReceive() const override { return in_flight_ < kEchoDepth; }
  void OnSend(const ReceivedSend& send, QpActions& qp) override;
  void OnCompletion(uint32_t tag, CompletionStatus status,
                    QpActions& qp) override;

 private:
  // kEchoDepth answers of up to kEchoMaxMessageBytes, reused in order (an
  // RC send queue completes in order): allocated with the connection.
  std::unique_ptr<uint8_t[]> answers_;
  uint32_t next_ = 0;       // the slot of the next answer
  uint32_t in_flight_ = 0;  // answers posted and not completed
};

}  // namespace spinnic::roce

#endif  // SPINNIC_DATAPLANE_ROCE_ECHO_SERVICE_H_
