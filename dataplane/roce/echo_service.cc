#include "dataplane/roce/echo_service.h"

#include <cstring>

namespace spinnic::roce {

EchoService::EchoService(uint32_t qpn)
    : QpService(qpn, 0),
      answers_(new uint8_t[size_t{kEchoDepth} * kEchoMaxMessageBytes]) {}

void EchoService::OnSend(const ReceivedSend& send, QpActions& qp) {
  // The engine asked CanReceive before taking the SEND and refused larger
  // ones: both hold here unless the engine broke its contract.
  if (in_flight_ >= kEchoDepth || send.bytes.size() > kEchoMaxMessageBytes) {
    qp.Fail();
    return;
  }
  const uint32_t slot = next_ % kEchoDepth;
  uint8_t* answer = answers_.get() + size_t{slot} * kEchoMaxMessageBytes;
  if (!send.bytes.empty()) {
    std::memcpy(answer, send.bytes.data(), send.bytes.size());
  }
  if (!qp.PostSend({answer, send.bytes.size()}, slot)) {
    qp.Fail();  // the send queue refused it: the QP is in error or full
    return;
  }
  ++next_;
  ++in_flight_;
}

// Success or not, the answer's buffer is free again (a failed one fails
// the QP, which flushes the rest).
void EchoService::OnCompletion(uint32_t tag, CompletionStatus status,
                               QpActions& qp) {
  (void)tag, (void)status, (void)qp;
  if (in_flight_ > 0) --in_flight_;
}

}  // namespace spinnic::roce
