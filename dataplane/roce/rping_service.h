// The server side of rdma-core's rping (librdmacm/examples/rping.c) on a
// CM connection to roce.rping_port (docs/roce.md, "Services"): per
// iteration the client SENDs the address, rkey and size of its source
// buffer; we RDMA READ it into a buffer of ours and SEND "go ahead"; the
// client SENDs its sink buffer; we RDMA WRITE what we read into it and
// SEND again. Every message of both sides is 16 bytes,
// struct rping_rdma_info { be64 buf; be32 rkey; be32 size; }.
// Our two SENDs carry our own buffer's description, as rping's server does;
// the client only checks their length.
#ifndef SPINNIC_DATAPLANE_ROCE_RPING_SERVICE_H_
#define SPINNIC_DATAPLANE_ROCE_RPING_SERVICE_H_

#include <array>
#include <cstdint>

#include "dataplane/roce/qp_service.h"

namespace spinnic::roce {

inline constexpr uint32_t kRpingMessageBytes = 16;
// rping's largest -S (RPING_BUFSIZE).
inline constexpr uint32_t kRpingBufferBytes = 64 * 1024;

struct RpingInfo {
  uint64_t buf = 0;
  uint32_t rkey = 0;
  uint32_t size = 0;
};
// Big-endian on the wire; false when the message is not 16 bytes.
bool ParseRpingInfo(std::span<const uint8_t> bytes, RpingInfo* info);
void WriteRpingInfo(const RpingInfo& info, std::span<uint8_t, 16> out);

class RpingService final : public QpService {
 public:
  explicit RpingService(uint32_t qpn);

  enum class State : uint8_t {
    kAwaitSource,  // waiting for the client's source buffer
    kReading,      // our READ of it is outstanding
    kAwaitSink,    // "go ahead" sent, waiting for the sink buffer
    kWriting,      // our WRITE into it is outstanding
    kFailed,       // a bad message or a failed operation
  };
  State state() const { return state_; }
  uint64_t iterations() const { return iterations_; }

  // QpService.
  ServiceKind kind() const override { return ServiceKind::kRping; }
  uint32_t max_message_bytes() const override { return kRpingMessageBytes; }
  void OnSend(const ReceivedSend& send, QpActions& qp) override;
  void OnCompletion(uint32_t tag, CompletionStatus status,
                    QpActions& qp) override;

 private:
  enum Tag : uint32_t { kTagRead = 1, kTagWrite, kTagSend };

  void SendOurs(QpActions& qp);
  void Fail(QpActions& qp);

  State state_ = State::kAwaitSource;
  ConnectionRegions::Region buffer_;
  uint32_t size_ = 0;  // bytes of this iteration
  uint64_t iterations_ = 0;
  std::array<uint8_t, kRpingMessageBytes> message_{};
};

}  // namespace spinnic::roce

#endif  // SPINNIC_DATAPLANE_ROCE_RPING_SERVICE_H_
