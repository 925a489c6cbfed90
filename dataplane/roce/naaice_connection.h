// One NAAICE connection on the appliance (docs/naaice.md): the session's
// state machine (naaice_session.h), the regions it allocated for the host
// (the memory the host's RDMA WRITEs land in and our results come from),
// the SEND it is receiving and the SEND it answers with. Owned by HPU 0's
// RoCE engine, one per QP connected on the NAAICE port.
//
// Regions are allocated when the host's memory-region setup message
// arrives (once per connection, not per packet), zeroed, from EAL memory,
// bounded by roce.naaice_max_bytes; freed when the connection closes.
#ifndef SPINNIC_DATAPLANE_ROCE_NAAICE_CONNECTION_H_
#define SPINNIC_DATAPLANE_ROCE_NAAICE_CONNECTION_H_

#include <array>
#include <cstdint>
#include <span>

#include "dataplane/roce/mrsp.h"
#include "dataplane/roce/naaice_session.h"
#include "handlers/naaice/function.h"

namespace spinnic::roce {

class NaaiceConnection final : public naaice::RegionAllocator {
 public:
  NaaiceConnection(uint32_t qpn, uint64_t max_bytes,
                   const ::spinnic::naaice::FunctionTable* functions);
  ~NaaiceConnection();
  NaaiceConnection(const NaaiceConnection&) = delete;
  NaaiceConnection& operator=(const NaaiceConnection&) = delete;

  naaice::Session& session() { return session_; }

  // The bytes [va, va + length) of the region with `rkey`, or nullptr when
  // no region of this connection holds them all (remote access error).
  uint8_t* Resolve(uint32_t rkey, uint64_t va, uint32_t length) const;

  // SEND reception: bytes of a SEND message at `offset`; false when the
  // message is larger than any MRSP message (it is then refused whole).
  bool Receive(uint64_t offset, std::span<const uint8_t> payload);
  // The message received so far.
  std::span<const uint8_t> received() const {
    return {receive_.data(), receive_length_};
  }
  void ClearReceived() { receive_length_ = 0; }
  // A stable copy of the session's reply (the session's own bytes change
  // with its next call; the requester sends from here).
  std::span<const uint8_t> KeepReply(std::span<const uint8_t> reply);

  uint64_t bytes() const { return bytes_; }

  // naaice::RegionAllocator.
  naaice::AllocStatus Allocate(const mrsp::RegionRequest& request,
                               naaice::Allocation* out) override;
  void Free(uint32_t id) override;

 private:
  struct Region {
    uint8_t* data = nullptr;
    uint64_t length = 0;
    uint32_t rkey = 0;
  };

  const uint32_t qpn_;
  const uint64_t max_bytes_;
  naaice::Session session_;
  std::array<Region, mrsp::kMaxRegions> regions_{};
  uint64_t bytes_ = 0;
  std::array<uint8_t, mrsp::kMaxMessageBytes> receive_{};
  uint32_t receive_length_ = 0;
  std::array<uint8_t, mrsp::kMaxMessageBytes> reply_{};
};

}  // namespace spinnic::roce

#endif  // SPINNIC_DATAPLANE_ROCE_NAAICE_CONNECTION_H_
