// Dataplanes stepped by hand in one thread, for the benches in bench/cost/:
// each has its wire and host ports on in-memory rings (net_ring ethdevs),
// one HPU that is never launched (the bench calls Hpu::PollOnce), and no
// other poller. Two of them, A and B, can face each other with DiAD and
// RoCE configured: the bench decides what sits between their wire rings
// (nothing in cost_bench, an impairment stage in loss_bench).
#ifndef SPINNIC_BENCH_COST_RIG_H_
#define SPINNIC_BENCH_COST_RIG_H_

#include <rte_ring.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "dataplane/dataplane.h"
#include "dataplane/diad/diad_config.h"
#include "dataplane/memory_region.h"
#include "dataplane/roce/cm_messages.h"

namespace spinnic::cost {

using Bytes = std::vector<uint8_t>;

// Ends the bench with `what` on stderr (exit status 1).
[[noreturn]] void Fail(const std::string& what);
void Check(const absl::Status& status, const std::string& what);

// `length` bytes that differ with `seed` and along the buffer.
Bytes Pattern(size_t length, uint32_t seed);

// A transport's counter `name` from the dataplane's snapshot (fails when
// there is none).
uint64_t Counter(Dataplane& dataplane, const std::string& transport,
                 const std::string& name);

// A single-producer single-consumer ring of `size` slots (a power of two;
// one fewer usable).
rte_ring* NewRing(const std::string& name, unsigned size = 1024);
void DrainRing(rte_ring* ring);  // frees the mbufs in it

// One dataplane's ports: the wire port, on rings the bench chooses, and the
// host port paired with it, on rings of its own.
struct Node {
  std::unique_ptr<Dataplane> dataplane;
  rte_ring* wire_rx = nullptr;
  rte_ring* wire_tx = nullptr;
  rte_ring* host_rx = nullptr;
  rte_ring* host_tx = nullptr;
  std::string suffix;
  // The transports' command rings of HPU 0, by their names (ResourceName);
  // empty when a name is not found (then HasWork always says yes).
  std::vector<rte_ring*> commands;
  bool commands_known = false;

  Hpu& hpu() { return dataplane->hpu(0); }
  // Whether a poll would find something: a frame in its wire RX ring or a
  // command from the control side. Timers are the caller's business: poll
  // now and then anyway.
  bool HasWork() const;
  rte_mempool* pool() const;
};

// A DataplaneConfig for `node`'s ports (wire_rx/wire_tx set by the caller)
// with one HPU; the resources' names end in `suffix`.
DataplaneConfig NodeConfig(Node& node, const std::string& suffix);
void CreateNode(Node& node, const DataplaneConfig& config);
// Frees what is in flight (mbufs of the node's pool) before the pool goes;
// the wire rings stay (they may be shared), the host rings go.
void DestroyNode(Node& node);

// The two ends of a pair.
inline constexpr diad::NodeAddress kNodeA = {0xfd, 0, 0xd1, 0xad, 0, 0, 0, 0,
                                             0,    0, 0,    0,    0, 0, 0, 1};
inline constexpr diad::NodeAddress kNodeB = {0xfd, 0, 0xd1, 0xad, 0, 0, 0, 0,
                                             0,    0, 0,    0,    0, 0, 0, 2};
inline constexpr diad::MacAddress kMacA = {0x02, 0, 0, 0, 0, 0x0a};
inline constexpr diad::MacAddress kMacB = {0x02, 0, 0, 0, 0, 0x0b};
inline constexpr roce::Gid kIpA = {0, 0, 0,    0,    0,   0, 0, 0,
                                   0, 0, 0xff, 0xff, 192, 0, 2, 10};
inline constexpr roce::Gid kIpB = {0, 0, 0,    0,    0,   0, 0, 0,
                                   0, 0, 0xff, 0xff, 192, 0, 2, 11};

// `node`'s config as end A or B of a pair: DiAD (one channel, the other
// end its peer "a" or "b") and RoCE on, with the defaults' timers.
DataplaneConfig PairConfig(Node& node, const std::string& suffix, bool is_a);

RegionInfo Register(Dataplane& dataplane, uint64_t length, uint32_t access,
                    uint32_t stream_id = 0);

// QPs on A and B that name each other (path MTU `pmtu`); both are the
// first QP of their side. Returns A's. The HPUs must poll before they are
// used.
uint32_t ConnectQps(Node& a, Node& b, uint32_t pmtu = 1024);

// A UDP/IPv4 frame of `length` bytes to 10.0.0.2:9000 (no transport's).
Bytes UdpFrame(size_t length);

// The cost benches' EAL: no hugepages (`memory_mb` of heap), no PCI, both
// lcores on core 0 (one thread steps everything). false, with the reason
// on stderr prefixed by `program`, when the EAL does not start.
bool InitBenchEal(const char* program, int memory_mb);

}  // namespace spinnic::cost

#endif  // SPINNIC_BENCH_COST_RIG_H_
