// The RoCEv2 transport's configuration as the dataplane sees it (the
// loader fills it from config.proto's `roce` section; docs/roce.md has
// every field and its default).
#ifndef SPINNIC_DATAPLANE_ROCE_ROCE_CONFIG_H_
#define SPINNIC_DATAPLANE_ROCE_ROCE_CONFIG_H_

#include <array>
#include <cstdint>
#include <vector>

#include "dataplane/roce/dcqcn.h"

namespace spinnic::roce {

// Binding kinds RoCE defines (dataplane/binding.h): an ECTX that takes a
// queue pair's SEND and WRITE messages (key: QPN), or NAAICE calls of a
// function code (key: 1..127). RDMA WRITEs into a region are the shared
// kBindRegionWrites.
inline constexpr uint16_t kBindQp = 0x20;
inline constexpr uint16_t kBindNaaiceFunction = 0x21;

// ECN codepoints (RFC 3168) our RoCE packets may carry.
inline constexpr uint8_t kEcnNotEct = 0;
inline constexpr uint8_t kEcnEct1 = 1;
inline constexpr uint8_t kEcnEct0 = 2;
inline constexpr uint8_t kEcnCe = 3;

// DCQCN congestion control (docs/congestion.md): `roce.congestion`.
struct RoceCongestionConfig {
  // Off: no CNPs sent, received CNPs counted and ignored, no pacing.
  bool enabled = false;
  // The ECN codepoint of every packet our QPs send (kEcnNotEct, kEcnEct0
  // or kEcnEct1); the loader sets ECT(0) when enabled and not configured.
  uint8_t ecn = kEcnNotEct;
  // The notification point's minimum time between two CNPs of one QP.
  uint64_t cnp_interval_ns = 50'000;
  // The reaction point; line_rate_bps 0: the port's link speed (100 Gb/s
  // when the port reports none).
  DcqcnParams dcqcn;
  // Tests only: the clock congestion control reads (nanoseconds); null:
  // clock::NowNanos().
  uint64_t (*now_ns)() = nullptr;
};

// roce.perftest_write_lat (docs/interop.md, "ib_write_lat"): the test the
// ib_write_lat clients on `port` run, as perftest's server is told it on
// its command line. A data connection on the port then plays that
// server: it writes first, answers count k with k + 1, `iterations` per
// size, through every size from 2 B to 8 MiB with `all_sizes`.
struct PerftestWriteLatConfig {
  uint16_t port = 0;
  uint32_t size = 2;
  uint32_t iterations = 1000;
  bool all_sizes = false;
};

struct RoceConfig {
  // On when the config has a `roce` section.
  bool enabled = false;
  std::array<uint8_t, 6> mac{};  // all zero: the RoCE port's own MAC
  // Our addresses; IPv4 as IPv4-mapped IPv6 (::ffff:a.b.c.d) like the
  // classifier's ParsedFrame.
  std::vector<std::array<uint8_t, 16>> addresses;
  // Our index of the port that faces the clients.
  uint16_t port = 0;
  // 0: the largest the RoCE port carries (up to 4096); the dataplane
  // resolves it (Dataplane::roce_config()).
  uint32_t path_mtu = 0;
  uint32_t max_qps = 256;
  // The HPUs that own queue pairs: the first qp_hpus (0: every HPU). 1
  // keeps every QP, service and NAAICE function on HPU 0.
  uint32_t qp_hpus = 0;
  // READ response packets with at least this many payload bytes go out
  // zero-copy (region_tx.h: the payload mbuf points into the region) when
  // the RoCE port sends chained mbufs; 0: every one is copied.
  uint32_t zero_copy_min_bytes = 1024;
  std::vector<uint16_t> listen_ports;
  uint32_t ack_every = 16;
  uint8_t local_ack_timeout = 14;
  // The requester's adaptive ACK timer (RequesterConfig::adaptive_timeout,
  // min_ack_timeout_ns).
  bool adaptive_ack_timeout = true;
  uint64_t min_ack_timeout_ns = 100'000;
  uint8_t retry_count = 7;
  uint8_t rnr_retry = 7;
  uint8_t min_rnr_timer = 12;
  uint8_t max_rd_atomic = 16;
  bool ipv6_udp_checksum = false;
  uint32_t receive_depth = 64;
  // NAAICE offload on this rdma_cm port (0: off), and its regions' bytes
  // per connection.
  uint16_t naaice_port = 0;
  uint64_t naaice_max_bytes = uint64_t{64} << 20;
  // rping and perftest -R servers on these rdma_cm ports (0: off).
  uint16_t rping_port = 0;
  // Connections to this port get an echo service (echo_service.h); 0: off.
  uint16_t echo_port = 0;
  uint16_t perftest_port = 0;
  // A plain CM connection's advertised region, a perftest data region.
  uint64_t connection_region_bytes = uint64_t{1} << 20;
  // A perftest data connection's region: perftest's largest message (-a's
  // 8 MiB; the client never says which sizes it will use). A client whose
  // data connection cannot get it is rejected (CM REJ, no resources).
  uint64_t perftest_region_bytes = uint64_t{1} << 23;
  // ib_write_lat's server (roce.perftest_write_lat; port 0: off).
  PerftestWriteLatConfig perftest_write_lat;
  RoceCongestionConfig congestion;
  // Tests and benches only: the clock our requesters' timers read
  // (nanoseconds; bench/cost/incast_bench.cc's virtual network time);
  // null: clock::NowNanos().
  uint64_t (*requester_now_ns)() = nullptr;
};

}  // namespace spinnic::roce

#endif  // SPINNIC_DATAPLANE_ROCE_ROCE_CONFIG_H_
