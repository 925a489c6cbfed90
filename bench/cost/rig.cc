#include "bench/cost/rig.h"

#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "dataplane/diad/diad_config.h"
#include "dataplane/roce/roce_config.h"
#include "dataplane/roce/roce_module.h"
#include "dataplane/stats.h"

namespace spinnic::cost {

void Fail(const std::string& what) {
  std::fprintf(stderr, "%s: %s\n", program_invocation_short_name, what.c_str());
  std::exit(1);
}

void Check(const absl::Status& status, const std::string& what) {
  if (!status.ok()) Fail(absl::StrCat(what, ": ", status.ToString()));
}

Bytes Pattern(size_t length, uint32_t seed) {
  Bytes bytes(length);
  for (size_t i = 0; i < length; ++i) {
    bytes[i] = static_cast<uint8_t>((i * 131 + seed * 7 + (i >> 8)) & 0xff);
  }
  return bytes;
}

uint64_t Counter(Dataplane& dataplane, const std::string& transport,
                 const std::string& name) {
  for (const auto& [counter, value] :
       dataplane.Snapshot(Dataplane::StateCopy::kOmit)
           .transport(transport)
           .counters) {
    if (counter == name) return value;
  }
  Fail(absl::StrCat("no ", transport, " counter ", name));
}

namespace {

// A ring ethdev on two rings (either may be shared with another port).
std::string RingPort(const std::string& name, rte_ring* rx, rte_ring* tx) {
  const int port = rte_eth_from_rings(name.c_str(), &rx, 1, &tx, 1, 0);
  char ethdev[RTE_ETH_NAME_MAX_LEN];
  if (port < 0 ||
      rte_eth_dev_get_name_by_port(static_cast<uint16_t>(port), ethdev) != 0) {
    Fail(absl::StrCat("cannot make the ring port ", name));
  }
  return ethdev;
}

}  // namespace

rte_ring* NewRing(const std::string& name, unsigned size) {
  rte_ring* ring =
      rte_ring_create(name.c_str(), size, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
  if (ring == nullptr) Fail(absl::StrCat("cannot create ring ", name));
  return ring;
}

void DrainRing(rte_ring* ring) {
  void* m;
  while (rte_ring_dequeue(ring, &m) == 0) {
    rte_pktmbuf_free(static_cast<rte_mbuf*>(m));
  }
}

bool Node::HasWork() const {
  if (!commands_known || rte_ring_count(wire_rx) != 0) return true;
  for (rte_ring* ring : commands) {
    if (rte_ring_count(ring) != 0) return true;
  }
  return false;
}

rte_mempool* Node::pool() const {
  return rte_mempool_lookup(ResourceName("spinnic_pkts", suffix).c_str());
}

DataplaneConfig NodeConfig(Node& node, const std::string& suffix) {
  node.suffix = suffix;
  node.host_rx = NewRing(absl::StrCat("c", suffix, "hrx"));
  node.host_tx = NewRing(absl::StrCat("c", suffix, "htx"));
  DataplaneConfig config;
  config.instance_suffix = suffix;
  PortConfig wire;
  wire.name = "wire0";
  wire.existing =
      RingPort(absl::StrCat("c", suffix, "w"), node.wire_rx, node.wire_tx);
  wire.role = PortRole::kWire;
  wire.rx_descriptors = wire.tx_descriptors = 256;
  PortConfig host = wire;
  host.name = "host0";
  host.existing =
      RingPort(absl::StrCat("c", suffix, "h"), node.host_rx, node.host_tx);
  host.role = PortRole::kHost;
  config.ports = {wire, host};
  config.port_pairs = {{0, 1}};
  config.worker_cores = {1};
  config.mbufs = 8191;
  return config;
}

void CreateNode(Node& node, const DataplaneConfig& config) {
  absl::StatusOr<std::unique_ptr<Dataplane>> dataplane =
      Dataplane::Create(config);
  Check(dataplane.status(), absl::StrCat("dataplane ", node.suffix));
  node.dataplane = *std::move(dataplane);
  // DiAD's and RoCE's command rings, when both transports are on; a
  // transport that renames its ring only costs the bench idle polls.
  node.commands_known = true;
  for (const char* base : {"spinnic_cmd0", "spinnic_roce_cmd0"}) {
    rte_ring* ring = rte_ring_lookup(ResourceName(base, node.suffix).c_str());
    if (ring == nullptr) node.commands_known = false;
    node.commands.push_back(ring);
  }
}

void DestroyNode(Node& node) {
  for (rte_ring* ring :
       {node.wire_rx, node.wire_tx, node.host_rx, node.host_tx}) {
    if (ring != nullptr) DrainRing(ring);
  }
  node.dataplane.reset();
  rte_ring_free(node.host_rx);
  rte_ring_free(node.host_tx);
  node.host_rx = node.host_tx = nullptr;
}

DataplaneConfig PairConfig(Node& node, const std::string& suffix, bool is_a) {
  DataplaneConfig config = NodeConfig(node, suffix);
  diad::DiadConfig& dc = config.transports.get<diad::DiadConfig>();
  dc.enabled = true;
  dc.node = is_a ? kNodeA : kNodeB;
  dc.mac = is_a ? kMacA : kMacB;
  dc.channels = 1;
  diad::PeerConfig peer;
  peer.name.assign(
      1, is_a ? 'b' : 'a');  // (GCC 12 -Wrestrict false positive on "b")
  peer.node = is_a ? kNodeB : kNodeA;
  peer.mac = is_a ? kMacB : kMacA;
  dc.peers = {peer};
  roce::RoceConfig& rc = config.transports.get<roce::RoceConfig>();
  rc.enabled = true;
  rc.mac = is_a ? kMacA : kMacB;
  rc.addresses = {is_a ? kIpA : kIpB};
  return config;
}

RegionInfo Register(Dataplane& dataplane, uint64_t length, uint32_t access,
                    uint32_t stream_id) {
  RegionConfig config;
  config.length = length;
  config.access = access;
  config.stream_id = stream_id;
  absl::StatusOr<RegionInfo> region = dataplane.RegisterRegion(config);
  Check(region.status(), "region");
  return *region;
}

uint32_t ConnectQps(Node& a, Node& b, uint32_t pmtu) {
  // QP numbers are kFirstQpn + slot: each side's first QP is kFirstQpn, so
  // each can name the other's before it exists.
  const uint32_t first = roce::kFirstQpn;
  roce::QpSpec to_b;
  to_b.remote_qpn = first;
  to_b.remote_ip = kIpB;
  to_b.local_ip = kIpA;
  to_b.remote_mac = kMacB;
  to_b.pmtu = pmtu;
  to_b.send_psn = 0x100;
  to_b.expected_psn = 0x200;
  roce::QpSpec to_a = to_b;
  to_a.remote_ip = kIpA;
  to_a.local_ip = kIpB;
  to_a.remote_mac = kMacA;
  to_a.send_psn = 0x200;
  to_a.expected_psn = 0x100;
  absl::StatusOr<uint32_t> qp_a =
      a.dataplane->transport<roce::RoceModule>()->CreateQp(to_b);
  Check(qp_a.status(), "QP on A");
  absl::StatusOr<uint32_t> qp_b =
      b.dataplane->transport<roce::RoceModule>()->CreateQp(to_a);
  Check(qp_b.status(), "QP on B");
  if (*qp_a != first || *qp_b != first) {
    Fail("the first QPs are not kFirstQpn: the QPs do not name each other");
  }
  return *qp_a;
}

Bytes UdpFrame(size_t length) {
  Bytes f(length, 0);
  const uint16_t ip_length = static_cast<uint16_t>(length - 14);
  const uint16_t udp_length = static_cast<uint16_t>(length - 34);
  // Ethernet: 02:00:00:00:00:0b from 02:00:00:00:00:0a, IPv4.
  const uint8_t ethernet[] = {2, 0, 0, 0, 0, 0x0b, 2, 0, 0, 0, 0, 0x0a, 8, 0};
  std::memcpy(f.data(), ethernet, sizeof ethernet);
  uint8_t* ip = f.data() + 14;
  ip[0] = 0x45;
  ip[2] = static_cast<uint8_t>(ip_length >> 8);
  ip[3] = static_cast<uint8_t>(ip_length);
  ip[6] = 0x40;  // don't fragment
  ip[8] = 64;    // TTL
  ip[9] = 17;    // UDP
  const uint8_t addresses[] = {10, 0, 0, 1, 10, 0, 0, 2};
  std::memcpy(ip + 12, addresses, sizeof addresses);
  uint8_t* udp = ip + 20;
  udp[0] = 0x0f;  // source port 4000
  udp[1] = 0xa0;
  udp[2] = 0x23;  // destination port 9000
  udp[3] = 0x28;
  udp[4] = static_cast<uint8_t>(udp_length >> 8);
  udp[5] = static_cast<uint8_t>(udp_length);
  for (size_t i = 42; i < length; ++i) f[i] = static_cast<uint8_t>(i);
  return f;
}

bool InitBenchEal(const char* program, int memory_mb) {
  absl::Status status =
      InitEal({program, "--no-huge", "-m", absl::StrCat(memory_mb), "--no-pci",
               "--no-shconf", "--lcores", "0@0,1@0", "--log-level", "3"});
  if (!status.ok()) {
    std::fprintf(stderr, "%s: %s\n", program,
                 std::string(status.message()).c_str());
    return false;
  }
  return true;
}

}  // namespace spinnic::cost
