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
//
// On roce.perftest_write_lat's port the data connection plays the server
// of ib_write_lat as configured (its size, iterations, -a): once the
// client's buffer is known it writes first, then answers each write.
#ifndef SPINNIC_DATAPLANE_ROCE_PERFTEST_SERVICE_H_
#define SPINNIC_DATAPLANE_ROCE_PERFTEST_SERVICE_H_

#include <array>
#include <cstdint>

#include "dataplane/roce/qp_service.h"
#include "dataplane/roce/roce_config.h"

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

// perftest's largest message: `-a` sweeps 2 B .. 2^23 B, and its
// server's buffer is max(size, cycle buffer) per QP (perftest_resources.h
// BUFF_SIZE). perftest sends neither the size nor `-a` to its peer, so a
// data connection's region is roce.perftest_region_bytes, 8 MiB unless
// configured (docs/roce.md, "Services").
inline constexpr uint64_t kPerftestMaxMessageBytes = uint64_t{1} << 23;

class PerftestService final : public QpService {
 public:
  // Which of the client's connections this is. The first from a peer on
  // the port is a control connection. A later one is undecided: the
  // client's data connection (made after its first destination exchange),
  // or the control connection of another client from the same address
  // (several perftests at once). What it does decides: a control
  // connection naming it in a destination exchange makes it a data
  // connection (the client's QP in that exchange is the one connected to
  // it); a first SEND of perftest's version message (16 bytes) makes it a
  // control connection. perftest names its data connection before it
  // sends anything on it, so neither can come too late.
  enum class Role : uint8_t { kControl, kData, kUndecided };

  // `region_bytes`: the data region a data connection advertises.
  // `write_lat` (port nonzero: roce.perftest_write_lat's port): a data
  // connection plays ib_write_lat's server as configured.
  PerftestService(uint32_t qpn, uint64_t region_bytes,
                  const std::array<uint8_t, 16>& local_gid, uint32_t out_reads,
                  Role role = Role::kControl,
                  const PerftestWriteLatConfig& write_lat = {});

  // A data (or undecided) connection's region, allocated when the
  // connection is accepted (the engine rejects the REQ when this fails:
  // kNotEnoughMemory when region_bytes is not there). kOk for a control
  // connection. An undecided one that turns out a control connection frees
  // it.
  ConnectionRegions::Status Prepare();
  // The data region (allocated on first use, zeroed); an empty region when
  // the memory is not there.
  const ConnectionRegions::Region& DataRegion();
  // The client's own destination (its buffer's address and rkey, from the
  // per-QP destination exchange): where the latency tests' replies go.
  void SetPeer(const PingpongDest& peer);
  Role role() const { return role_; }
  // Whether ReceiveArea() changed since the engine last asked (an
  // undecided connection became a control one: no longer its region); the
  // engine asks after each OnSend.
  bool TakeReceiveAreaChange() {
    const bool changed = receive_area_changed_;
    receive_area_changed_ = false;
    return changed;
  }
  // A control connection's region (one that began undecided) freed: the
  // engine calls it once no READ response it queued reads the region.
  void ReleaseRegion();
  uint64_t exchanges() const { return exchanges_; }

  // QpService.
  ServiceKind kind() const override { return ServiceKind::kPerftest; }
  uint32_t max_message_bytes() const override { return kPingpongDestBytes; }
  void OnSend(const ReceivedSend& send, QpActions& qp) override;
  std::span<uint8_t> ReceiveArea() override;
  // Only on perftest_write_lat's port. Writing each WRITE back does not
  // serve ib_write_lat, whose server writes first and then answers count
  // k with k + 1 at the last byte of a message whose size it knows from
  // its own command line (perftest does not send it): docs/interop.md,
  // "ib_write_lat".
  bool wants_writes() const override {
    return role_ != Role::kControl && write_lat_.port != 0;
  }
  void OnWrite(uint64_t va, uint64_t length, QpActions& qp) override;
  void OnCompletion(uint32_t tag, CompletionStatus status,
                    QpActions& qp) override;
  // ib_write_lat (a data connection on perftest_write_lat's port, once the
  // client's buffer is known): our first write.
  void OnStart(QpActions& qp) override;

 private:
  void OnControlSend(const ReceivedSend& send, QpActions& qp);
  // An undecided connection's role, from what it does.
  void BecomeData();
  void BecomeControl();
  // A SEND arrived on the data connection: it is owed an answer.
  void OnDataSend(uint64_t length, QpActions& qp);
  // ib_write_lat: the client's write of `length` bytes arrived.
  void OnLatencyWrite(uint64_t length, QpActions& qp);
  // ib_write_lat: lat_size_ bytes to the client's buffer whose last byte is
  // `count` (a char, as perftest's).
  void WriteCount(uint64_t count, QpActions& qp);

  const uint64_t region_bytes_;
  const std::array<uint8_t, 16> local_gid_;
  const uint32_t out_reads_;
  Role role_;
  bool receive_area_changed_ = false;
  const PerftestWriteLatConfig write_lat_;
  ConnectionRegions::Region data_;
  bool data_tried_ = false;
  uint64_t exchanges_ = 0;
  // The answer in flight. The client sends its next message only after it
  // received this one, so when it is overwritten only a retransmission can
  // still read it, and the client drops that as a duplicate.
  std::array<uint8_t, kPingpongDestBytes> reply_{};

  // Data connection, SENDs. ib_send_lat waits for each message to come
  // back before sending the next; ib_send_bw -b streams and expects as many
  // messages back as it sent; plain ib_send_bw streams and posts no
  // receives, so any SEND of ours draws RNR NAKs. perftest tells its server
  // none of this, so every message is owed an answer of its size, and the
  // client's receives decide how many go: one answer at a time until the
  // client has taken one (it posts receives), then up to kAnswersInFlight.
  // Against plain ib_send_bw the first answer draws RNR NAKs and is retried
  // after each RNR wait (the REQ's RNR retry count: perftest's 7 is
  // forever) without failing the QP, so the stream is acknowledged
  // meanwhile, and nothing more is sent. It cannot be withdrawn: a posted
  // work request ends only by completing or by the QP entering the error
  // state, which would end the client's stream too.
  static constexpr uint32_t kAnswersInFlight = 16;  // of the QP's 256
  void SendOwedAnswers(QpActions& qp);
  PingpongDest peer_{};
  bool has_peer_ = false;
  uint32_t answers_in_flight_ = 0;
  bool client_takes_answers_ = false;
  uint64_t answers_owed_ = 0;
  uint64_t answer_length_ = 0;  // the newest message's: a test's are alike

  // ib_write_lat (perftest's run_iter_lat_write, server side): we write
  // count 1 first; the client's k-th write at this size is answered with
  // k + 1 until it sent `iterations`; then the next size (all_sizes) or
  // the end. Writes of any other size are taken without an answer.
  uint32_t lat_size_ = 0;
  uint64_t lat_received_ = 0;
  bool lat_started_ = false;
  bool lat_done_ = false;
};

}  // namespace spinnic::roce

#endif  // SPINNIC_DATAPLANE_ROCE_PERFTEST_SERVICE_H_
