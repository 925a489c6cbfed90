// The server side of perftest's rdma_cm mode (`ib_write_bw -R`,
// `ib_read_bw -R`, perftest 4.5/6.x) on roce.perftest_port (docs/roce.md,
// "Services"; the exchange is in docs/interop.md). A client opens two
// connections to the port: a control connection, on which every exchange
// is one SEND from the client answered by exactly one SEND of ours, and a
// data connection that carries the test's RDMA WRITEs or READs into the
// region we advertise. Both are PerftestServices; the control one answers
// by message size:
//
//   16 bytes  the version: "6.06" (clients refuse peers older than 5.70)
//   56 bytes  a struct pingpong_dest: ours, naming the data connection's
//             QP and region (its rkey and address), big-endian
//   8 bytes   a bandwidth report field: 0 (we measure nothing)
//   other     echoed (system page and cache line sizes, the MTU)
#ifndef SPINNIC_DATAPLANE_ROCE_PERFTEST_SERVICE_H_
#define SPINNIC_DATAPLANE_ROCE_PERFTEST_SERVICE_H_

#include <array>
#include <cstdint>

#include "dataplane/roce/qp_service.h"

namespace spinnic::roce {

inline constexpr uint32_t kPingpongDestBytes = 56;
inline constexpr char kPerftestVersion[] = "6.06";
inline constexpr uint32_t kPerftestVersionBytes = 16;  // char version[16]

// perftest's struct pingpong_dest as its rdma_cm mode exchanges it.
struct PingpongDest {
  uint32_t lid = 0;
  uint32_t out_reads = 0;
  uint32_t qpn = 0;
  uint32_t psn = 0;
  uint32_t rkey = 0;
  uint64_t vaddr = 0;
  std::array<uint8_t, 16> gid{};
  uint32_t srqn = 0;
  uint32_t gid_index = 0;
};
void WritePingpongDest(const PingpongDest& dest,
                       std::span<uint8_t, kPingpongDestBytes> out);
bool ParsePingpongDest(std::span<const uint8_t> bytes, PingpongDest* dest);

class PerftestService final : public QpService {
 public:
  // `region_bytes`: the data region a data connection advertises.
  PerftestService(uint32_t qpn, uint64_t region_bytes,
                  const std::array<uint8_t, 16>& local_gid, uint32_t out_reads);

  // The data region (allocated on first use, zeroed); an empty region when
  // the memory is not there.
  const ConnectionRegions::Region& DataRegion();
  uint64_t exchanges() const { return exchanges_; }

  // QpService.
  ServiceKind kind() const override { return ServiceKind::kPerftest; }
  uint32_t max_message_bytes() const override { return kPingpongDestBytes; }
  void OnSend(const ReceivedSend& send, QpActions& qp) override;

 private:
  const uint64_t region_bytes_;
  const std::array<uint8_t, 16> local_gid_;
  const uint32_t out_reads_;
  ConnectionRegions::Region data_;
  bool data_tried_ = false;
  uint64_t exchanges_ = 0;
  // The answer in flight. The client sends its next message only after it
  // received this one, so when it is overwritten only a retransmission can
  // still read it, and the client drops that as a duplicate.
  std::array<uint8_t, kPingpongDestBytes> reply_{};
};

}  // namespace spinnic::roce

#endif  // SPINNIC_DATAPLANE_ROCE_PERFTEST_SERVICE_H_
