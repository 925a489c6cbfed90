// The RoCE part of the gRPC control API end to end: a real dataplane with
// RoCE on (net_ring ports, a launched HPU), the real server on a Unix
// socket, a real gRPC client. Queue pairs are created, listed and
// destroyed; every bad request gets its canonical code and a message that
// says what to fix, and changes nothing; GetInfo and GetStats report the
// transport; a WRITE with immediate from a scripted client (frames built
// with the transport's own wire code) reaches WatchEvents decoded. No
// timing is asserted: waits are bounded polls.
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "control/grpc/control_server.h"
#include "dataplane/roce/ib_types.h"
#include "dataplane/roce/roce_engine.h"
#include "dataplane/roce/wire.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "spinnic/v1/control.grpc.pb.h"
#include "spinnic/v1/roce.grpc.pb.h"
#include "tests/common/ring_dataplane.h"
#include "tests/common/wire_ring.h"

namespace spinnic {
namespace {

using ::testing::HasSubstr;

constexpr roce::Mac kDutMac = {0x02, 0, 0, 0, 0, 0x0b};
constexpr roce::Mac kClientMac = {0x02, 0, 0, 0, 0, 0x0c};
const roce::Gid kDutIp = roce::Ipv4Mapped(0xc000020b);     // 192.0.2.11
const roce::Gid kClientIp = roce::Ipv4Mapped(0xc000020c);  // 192.0.2.12
constexpr uint32_t kClientQpn = 0x11;
constexpr uint32_t kClientPsn = 0x123456;

roce::Gid Ipv6(const char* text) {
  roce::Gid ip{};
  EXPECT_EQ(inet_pton(AF_INET6, text, ip.data()), 1) << text;
  return ip;
}

// The appliance of the brief: addresses { ipv4: "192.0.2.11" ipv6:
// "fd00::11" mac: "02:00:00:00:00:0b" } roce { max_qps: 2 } on wire0
// (1500 bytes: the path MTU resolves to 1024).
testing_rings::RingDataplaneOptions RoceOptions() {
  testing_rings::RingDataplaneOptions options;
  roce::RoceConfig& r = options.roce;
  r.enabled = true;
  r.mac = kDutMac;
  r.addresses = {kDutIp, Ipv6("fd00::11")};
  r.max_qps = 2;
  return options;
}

class Server {
 public:
  // `roce` false: the same rings without RoCE.
  static std::unique_ptr<Server> Create(bool roce) {
    static int instance = 0;
    auto server = std::unique_ptr<Server>(new Server());
    ++instance;
    auto rings = testing_rings::RingDataplane::Create(
        absl::StrCat("rctl", instance),
        roce ? RoceOptions() : testing_rings::RingDataplaneOptions());
    EXPECT_TRUE(rings.ok()) << rings.status();
    if (!rings.ok()) return nullptr;
    server->rings_ = *std::move(rings);
    absl::Status started = server->rings_->dataplane().Start();
    EXPECT_TRUE(started.ok()) << started;
    server->dir_ =
        absl::StrCat("/tmp/spinnic-rctl-test-", getpid(), "-", instance);
    auto control = ControlServer::Start(
        {.unix_socket = server->dir_ + "/s.sock"}, server->rings_->config(),
        &server->rings_->dataplane());
    EXPECT_TRUE(control.ok()) << control.status();
    if (!control.ok()) return nullptr;
    server->control_ = *std::move(control);
    std::shared_ptr<grpc::Channel> channel =
        grpc::CreateChannel(absl::StrCat("unix:", server->dir_, "/s.sock"),
                            grpc::InsecureChannelCredentials());
    server->stub_ = v1::Spinnic::NewStub(channel);
    server->roce_stub_ = v1::RoceService::NewStub(channel);
    return server;
  }

  ~Server() {
    control_.reset();
    rings_.reset();
    rmdir(dir_.c_str());
  }

  v1::Spinnic::Stub& stub() { return *stub_; }
  v1::RoceService::Stub& roce() { return *roce_stub_; }
  Dataplane& dataplane() { return rings_->dataplane(); }
  SpinnicService& service() { return control_->service(); }
  testing_rings::RingDataplane& rings() { return *rings_; }

 private:
  Server() = default;
  std::unique_ptr<testing_rings::RingDataplane> rings_;
  std::string dir_;
  std::unique_ptr<ControlServer> control_;
  std::unique_ptr<v1::Spinnic::Stub> stub_;
  std::unique_ptr<v1::RoceService::Stub> roce_stub_;
};

// The EAL, once per process: lcore 1 runs the HPU.
class EalEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    ASSERT_TRUE(
        InitEal({"roce_control_test", "--no-huge", "-m", "256", "--no-pci",
                 "--no-shconf", "--lcores", "0@0,1@1", "--log-level", "4"})
            .ok());
  }
};
::testing::Environment* const kEal =
    ::testing::AddGlobalTestEnvironment(new EalEnvironment);

v1::CreateQpRequest ClientQp() {
  v1::CreateQpRequest request;
  request.set_remote_qpn(kClientQpn);
  request.set_remote_ip("192.0.2.12");
  request.set_remote_mac("02:00:00:00:00:0c");
  request.set_path_mtu(1024);
  request.set_expected_psn(kClientPsn);
  request.set_send_psn(0x777);
  return request;
}

class RoceControlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = Server::Create(/*roce=*/true);
    ASSERT_NE(server_, nullptr);
  }
  void TearDown() override { server_.reset(); }

  v1::Spinnic::Stub& stub() { return server_->stub(); }
  v1::RoceService::Stub& roce() { return server_->roce(); }

  grpc::Status CreateQp(const v1::CreateQpRequest& request,
                        uint32_t* qpn = nullptr) {
    v1::CreateQpResponse response;
    grpc::ClientContext context;
    grpc::Status status = roce().CreateQp(&context, request, &response);
    if (qpn != nullptr) *qpn = response.qpn();
    return status;
  }

  grpc::Status DestroyQp(uint32_t qpn) {
    v1::DestroyQpRequest request;
    request.set_qpn(qpn);
    v1::DestroyQpResponse response;
    grpc::ClientContext context;
    return roce().DestroyQp(&context, request, &response);
  }

  v1::ListQpsResponse ListQps() {
    v1::ListQpsResponse response;
    grpc::ClientContext context;
    EXPECT_TRUE(roce().ListQps(&context, {}, &response).ok());
    return response;
  }

  // Until HPU 0 has applied the create command (at most 2 s).
  std::string WaitForState(uint32_t qpn, const std::string& state) {
    std::string seen;
    for (int i = 0; i < 200; ++i) {
      const v1::ListQpsResponse qps = ListQps();
      for (const v1::QpStatus& qp : qps.qps()) {
        if (qp.qpn() == qpn) seen = qp.state();
      }
      if (seen == state) break;
      usleep(10'000);
    }
    return seen;
  }

  std::unique_ptr<Server> server_;
};

TEST_F(RoceControlTest, CreateListDestroy) {
  EXPECT_TRUE(ListQps().qps().empty());
  uint32_t qpn = 0;
  grpc::Status created = CreateQp(ClientQp(), &qpn);
  ASSERT_TRUE(created.ok()) << created.error_message();
  EXPECT_EQ(qpn, roce::kFirstQpn);
  EXPECT_EQ(WaitForState(qpn, "rts"), "rts");

  v1::ListQpsResponse qps = ListQps();
  ASSERT_EQ(qps.qps_size(), 1);
  const v1::QpStatus& qp = qps.qps(0);
  EXPECT_EQ(qp.qpn(), qpn);
  // Read back as written, the defaults filled in.
  v1::CreateQpRequest expected = ClientQp();
  expected.set_local_ip("192.0.2.11");
  expected.set_max_rd_atomic(16);
  EXPECT_EQ(qp.spec().SerializeAsString(), expected.SerializeAsString())
      << qp.spec().DebugString();
  EXPECT_EQ(qp.expected_psn(), kClientPsn);
  EXPECT_EQ(qp.msn(), 0u);
  EXPECT_EQ(qp.packets(), 0u);
  EXPECT_EQ(qp.naks(), 0u);
  EXPECT_EQ(qp.origin(), "grpc");
  EXPECT_EQ(qp.cm_port(), 0u);

  // IPv6, with the local address given, the path MTU and responder
  // resources left to the config.
  v1::CreateQpRequest v6;
  v6.set_remote_qpn(0xabcdef);
  v6.set_remote_ip("fd00::12");
  v6.set_remote_mac("02:00:00:00:00:0d");
  v6.set_local_ip("fd00::11");
  uint32_t qpn6 = 0;
  ASSERT_TRUE(CreateQp(v6, &qpn6).ok());
  EXPECT_NE(qpn6, qpn);
  qps = ListQps();
  ASSERT_EQ(qps.qps_size(), 2);
  const v1::CreateQpRequest& spec6 = qps.qps(1).spec();
  EXPECT_EQ(qps.qps(1).qpn(), qpn6);
  EXPECT_EQ(spec6.remote_ip(), "fd00::12");
  EXPECT_EQ(spec6.local_ip(), "fd00::11");
  EXPECT_EQ(spec6.path_mtu(), 1024u);
  EXPECT_EQ(spec6.max_rd_atomic(), 16u);

  // roce.max_qps is 2.
  grpc::Status full = CreateQp(ClientQp());
  EXPECT_EQ(full.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(full.error_message(),
              HasSubstr("all 2 queue pairs are in use; destroy one or raise "
                        "roce.max_qps"));

  ASSERT_TRUE(DestroyQp(qpn).ok());
  qps = ListQps();
  ASSERT_EQ(qps.qps_size(), 1);
  EXPECT_EQ(qps.qps(0).qpn(), qpn6);
  grpc::Status again = DestroyQp(qpn);
  EXPECT_EQ(again.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(
      again.error_message(),
      absl::StrCat("no queue pair ", qpn, "; ListQps shows those in use"));
  ASSERT_TRUE(DestroyQp(qpn6).ok());
  EXPECT_TRUE(ListQps().qps().empty());
}

TEST_F(RoceControlTest, CreateQpErrorsSayWhatToFixAndChangeNothing) {
  uint32_t kept = 0;
  ASSERT_TRUE(CreateQp(ClientQp(), &kept).ok());
  const auto kInvalid = grpc::StatusCode::INVALID_ARGUMENT;
  struct Case {
    const char* what;
    void (*change)(v1::CreateQpRequest*);
    const char* says;
  };
  const Case kCases[] = {
      {"no remote_ip", [](v1::CreateQpRequest* r) { r->clear_remote_ip(); },
       "remote_ip: missing; give the client's address"},
      {"bad remote_ip",
       [](v1::CreateQpRequest* r) { r->set_remote_ip("192.0.2.300"); },
       "remote_ip: \"192.0.2.300\" is not an IP address; write IPv4 or IPv6 "
       "text without a prefix length"},
      {"remote_ip with a prefix",
       [](v1::CreateQpRequest* r) { r->set_remote_ip("fd00::12/64"); },
       "remote_ip: \"fd00::12/64\" is not an IP address"},
      {"no remote_mac", [](v1::CreateQpRequest* r) { r->clear_remote_mac(); },
       "remote_mac: missing"},
      {"short remote_mac",
       [](v1::CreateQpRequest* r) { r->set_remote_mac("02:00:00:00:0c"); },
       "remote_mac: \"02:00:00:00:0c\" is not a MAC address; write six hex "
       "bytes"},
      {"remote_mac with junk",
       [](v1::CreateQpRequest* r) { r->set_remote_mac("02:00:00:00:00:0cx"); },
       "remote_mac: \"02:00:00:00:00:0cx\" is not a MAC address"},
      {"multicast remote_mac",
       [](v1::CreateQpRequest* r) { r->set_remote_mac("01:00:5e:00:00:01"); },
       "the peer's MAC must be a unicast, non-zero address"},
      {"zero remote_qpn", [](v1::CreateQpRequest* r) { r->set_remote_qpn(0); },
       "remote QPN 0 is not a QP number; use 1..0xffffff"},
      {"25-bit remote_qpn",
       [](v1::CreateQpRequest* r) { r->set_remote_qpn(0x1000000); },
       "remote QPN 16777216 is not a QP number"},
      {"25-bit expected_psn",
       [](v1::CreateQpRequest* r) { r->set_expected_psn(0x1000000); },
       "PSNs are 24 bits"},
      {"25-bit send_psn",
       [](v1::CreateQpRequest* r) { r->set_send_psn(0x1000000); },
       "PSNs are 24 bits"},
      {"path_mtu not an IB MTU",
       [](v1::CreateQpRequest* r) { r->set_path_mtu(1000); },
       "path MTU 1000 is not allowed; use 256, 512, 1024, 2048 or 4096, at "
       "most 1024 (roce.path_mtu)"},
      {"path_mtu above the port's",
       [](v1::CreateQpRequest* r) { r->set_path_mtu(4096); },
       "path MTU 4096 is not allowed"},
      {"max_rd_atomic 17",
       [](v1::CreateQpRequest* r) { r->set_max_rd_atomic(17); },
       "max_rd_atomic 17 is not allowed; use 1..16, or 0 for 16"},
      {"max_rd_atomic beyond a byte",
       [](v1::CreateQpRequest* r) { r->set_max_rd_atomic(257); },
       "max_rd_atomic 257 is not allowed"},
      {"local_ip not ours",
       [](v1::CreateQpRequest* r) { r->set_local_ip("192.0.2.99"); },
       "local_ip: 192.0.2.99 is not one of the appliance's RoCE addresses "
       "(192.0.2.11, fd00::11); use one of them or leave local_ip empty"},
      {"local_ip of the other family",
       [](v1::CreateQpRequest* r) { r->set_local_ip("fd00::11"); },
       "no local address of the remote address's family (192.0.2.12)"},
  };
  for (const Case& c : kCases) {
    v1::CreateQpRequest request = ClientQp();
    c.change(&request);
    grpc::Status status = CreateQp(request);
    EXPECT_EQ(status.error_code(), kInvalid)
        << c.what << ": " << status.error_message();
    EXPECT_THAT(status.error_message(), HasSubstr(c.says)) << c.what;
  }
  v1::ListQpsResponse qps = ListQps();
  ASSERT_EQ(qps.qps_size(), 1);
  EXPECT_EQ(qps.qps(0).qpn(), kept);

  for (uint32_t qpn : {0u, 1u, roce::kFirstQpn + 1, 0xffffffu}) {
    grpc::Status status = DestroyQp(qpn);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND) << qpn;
    EXPECT_THAT(status.error_message(),
                HasSubstr(absl::StrCat("no queue pair ", qpn)));
  }
  EXPECT_EQ(ListQps().qps_size(), 1);
}

TEST_F(RoceControlTest, GetInfoReportsRoce) {
  v1::GetInfoResponse info;
  grpc::ClientContext context;
  ASSERT_TRUE(stub().GetInfo(&context, {}, &info).ok());
  const v1::RoceInfo& r = info.roce();
  EXPECT_TRUE(r.enabled());
  EXPECT_THAT(r.addresses(), ::testing::ElementsAre("192.0.2.11", "fd00::11"));
  EXPECT_EQ(r.mac(), "02:00:00:00:00:0b");
  EXPECT_EQ(r.port(), "wire0");
  EXPECT_EQ(r.udp_port(), 4791u);
  // 2048-byte packets do not fit a 1500-byte port.
  EXPECT_EQ(r.path_mtu(), 1024u);
  EXPECT_EQ(r.max_qps(), 2u);
  EXPECT_EQ(r.max_rd_atomic(), 16u);
  EXPECT_TRUE(r.listen_ports().empty());
  EXPECT_FALSE(info.diad().enabled());
}

// SetService over gRPC: the launched HPU adopts the table before the call
// returns, GetInfo lists it, and a refused change says what to fix.
TEST_F(RoceControlTest, SetServiceMovesServicesAndGetInfoListsThem) {
  auto set = [&](const std::string& name, uint32_t port, bool disable,
                 v1::SetServiceResponse* response) {
    v1::SetServiceRequest request;
    request.set_service(name);
    request.set_port(port);
    request.set_disable(disable);
    grpc::ClientContext context;
    return roce().SetService(&context, request, response);
  };
  v1::SetServiceResponse response;
  grpc::Status status = set("echo", 7600, false, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.services_size(), 1);
  EXPECT_EQ(response.services(0).name(), "echo");
  EXPECT_EQ(response.services(0).port(), 7600u);
  ASSERT_TRUE(set("verbs", 7601, false, &response).ok());
  EXPECT_EQ(response.services_size(), 2);

  v1::GetInfoResponse info;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub().GetInfo(&context, {}, &info).ok());
  }
  ASSERT_EQ(info.roce().services_size(), 2);
  EXPECT_EQ(info.roce().services(0).name(), "echo");
  EXPECT_EQ(info.roce().services(1).name(), "verbs");
  EXPECT_EQ(info.roce().services(1).port(), 7601u);
  EXPECT_THAT(info.roce().listen_ports(), ::testing::ElementsAre(7600, 7601));

  status = set("verbs", 7600, false, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(status.error_message(), HasSubstr("port 7600 runs echo"));
  status = set("telnet", 23, false, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("no service 'telnet'"));
  status = set("rping", 70000, false, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("use 1..65535"));

  ASSERT_TRUE(set("echo", 0, true, &response).ok());
  ASSERT_TRUE(set("verbs", 7601, true, &response).ok());
  EXPECT_EQ(response.services_size(), 0);
}

TEST_F(RoceControlTest, StatsCarryRoceCounters) {
  v1::Stats stats;
  grpc::ClientContext context;
  ASSERT_TRUE(stub().GetStats(&context, {}, &stats).ok());
  std::vector<std::string> names;
  for (const v1::Counter& c : stats.roce()) names.push_back(c.name());
  EXPECT_THAT(names,
              ::testing::IsSupersetOf({"rx_packets", "tx_packets", "writes",
                                       "reads", "atomics", "write_immediates",
                                       "qp_errors", "acks_sent", "naks_sent",
                                       "drop_bad_icrc", "drop_unknown_qp"}));
  EXPECT_TRUE(stats.diad().empty());
}

// A scripted client's WRITE ONLY with immediate lands in a region
// registered over gRPC; the dataplane's roce_write_imm event reaches a
// WatchEvents subscriber named and decoded, and ListQps counts the message.
TEST_F(RoceControlTest, WriteWithImmediateIsADecodedEvent) {
  grpc::ClientContext watch;
  auto events = stub().WatchEvents(&watch, {});
  for (int i = 0; i < 200 && server_->service().event_subscribers() == 0; ++i) {
    usleep(10'000);
  }
  ASSERT_EQ(server_->service().event_subscribers(), 1u);

  uint32_t qpn = 0;
  ASSERT_TRUE(CreateQp(ClientQp(), &qpn).ok());
  ASSERT_EQ(WaitForState(qpn, "rts"), "rts");
  v1::RegisterRegionRequest region_request;
  region_request.set_length(4096);
  region_request.mutable_access()->set_remote_write(true);
  v1::RegisterRegionResponse region;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub().RegisterRegion(&context, region_request, &region).ok());
  }

  // The client's frame, built as roce_dataplane_test builds its requests.
  const std::vector<uint8_t> payload = {1, 2, 3, 4, 5, 6, 7, 8};
  roce::FrameParams params;
  params.src_mac = kClientMac;
  params.dst_mac = kDutMac;
  params.ip_version = 4;
  params.src_ip = kClientIp;
  params.dst_ip = kDutIp;
  params.udp_src_port = roce::UdpSourcePort(kClientQpn, qpn);
  roce::Bth bth;
  bth.opcode = static_cast<uint8_t>(roce::Opcode::kRcWriteOnlyImm);
  bth.dest_qp = qpn;
  bth.psn = kClientPsn;
  bth.ack_req = true;
  roce::ExtHeaders ext;
  ext.reth = {region.base_address(), region.rkey(), 8};
  ext.imm_data = 0xcafe0083;
  const uint32_t size = roce::FrameBytes(4, bth.opcode, 8);
  std::vector<uint8_t> frame(size);
  const uint32_t headers =
      roce::WriteHeaders(params, bth, ext, 8, frame.data(), size);
  ASSERT_NE(headers, 0u);
  std::copy(payload.begin(), payload.end(), frame.begin() + headers);
  ASSERT_EQ(roce::FinishFrame(params, frame.data(), size), size);
  rte_mempool* pool = rte_pktmbuf_pool_create("rctl_client", 63, 0, 0,
                                              RTE_MBUF_DEFAULT_BUF_SIZE, 0);
  ASSERT_NE(pool, nullptr);
  rte_mbuf* m = rte_pktmbuf_alloc(pool);
  ASSERT_NE(m, nullptr);
  std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(size)), frame.data(),
              size);
  ASSERT_EQ(testing_wire::PutOnWire(server_->rings().rx(0), m), 0);

  // The daemon's loop forwards the HPU's events; here the test does.
  std::vector<Event> raised;
  for (int i = 0; i < 200 && raised.empty(); ++i) {
    server_->dataplane().DrainEvents(&raised);
    if (raised.empty()) usleep(10'000);
  }
  ASSERT_FALSE(raised.empty());
  server_->service().PublishEvents(raised);
  v1::Event event;
  ASSERT_TRUE(events->Read(&event));
  EXPECT_EQ(event.code(), roce::kEventRoceWriteImm);
  EXPECT_EQ(event.name(), "roce_write_imm");
  EXPECT_EQ(event.roce().qpn(), qpn);
  EXPECT_EQ(event.roce().immediate(), 0xcafe0083u);
  EXPECT_EQ(event.roce().msn(), 1u);
  EXPECT_TRUE(event.handler().empty());
  EXPECT_FALSE(event.has_diad());
  watch.TryCancel();
  while (events->Read(&event)) {
  }
  events->Finish();

  v1::ReadRegionRequest read;
  read.set_id(region.id());
  read.set_length(8);
  v1::ReadRegionResponse stored;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub().ReadRegion(&context, read, &stored).ok());
  }
  EXPECT_EQ(stored.data(), std::string(payload.begin(), payload.end()));
  v1::ListQpsResponse qps = ListQps();
  ASSERT_EQ(qps.qps_size(), 1);
  EXPECT_EQ(qps.qps(0).msn(), 1u);
  EXPECT_EQ(qps.qps(0).expected_psn(), kClientPsn + 1);
  EXPECT_EQ(qps.qps(0).packets(), 1u);
  ASSERT_TRUE(DestroyQp(qpn).ok());
  // The region can go once no QP uses it.
  grpc::ClientContext context;
  v1::DeregisterRegionRequest deregister;
  deregister.set_id(region.id());
  v1::DeregisterRegionResponse ignored;
  EXPECT_TRUE(stub().DeregisterRegion(&context, deregister, &ignored).ok());
  rte_mempool_free(pool);
}

TEST(RoceControlOffTest, RoceOffIsFailedPrecondition) {
  std::unique_ptr<Server> server = Server::Create(/*roce=*/false);
  ASSERT_NE(server, nullptr);
  {
    v1::CreateQpResponse response;
    grpc::ClientContext context;
    grpc::Status status =
        server->roce().CreateQp(&context, ClientQp(), &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_THAT(status.error_message(),
                HasSubstr("RoCE is off: add a roce { } section"));
  }
  {
    v1::DestroyQpRequest request;
    request.set_qpn(roce::kFirstQpn);
    v1::DestroyQpResponse response;
    grpc::ClientContext context;
    grpc::Status status =
        server->roce().DestroyQp(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_THAT(status.error_message(), HasSubstr("RoCE is off"));
  }
  v1::ListQpsResponse qps;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(server->roce().ListQps(&context, {}, &qps).ok());
  }
  EXPECT_TRUE(qps.qps().empty());
  v1::GetInfoResponse info;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(server->stub().GetInfo(&context, {}, &info).ok());
  }
  EXPECT_FALSE(info.roce().enabled());
  EXPECT_TRUE(info.roce().addresses().empty());
  {
    v1::SetServiceRequest request;
    request.set_service("echo");
    request.set_port(7472);
    v1::SetServiceResponse response;
    grpc::ClientContext context;
    grpc::Status status =
        server->roce().SetService(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_THAT(status.error_message(), HasSubstr("RoCE is off"));
  }
  v1::Stats stats;
  grpc::ClientContext context;
  ASSERT_TRUE(server->stub().GetStats(&context, {}, &stats).ok());
  EXPECT_TRUE(stats.roce().empty());
}

// QpExecute's requests that cannot run: the canonical code, a message that
// says what to fix, and nothing posted on the QP.
TEST_F(RoceControlTest, QpExecuteErrorsSayWhatToFixAndPostNothing) {
  uint32_t qpn = 0;
  ASSERT_TRUE(CreateQp(ClientQp(), &qpn).ok());
  ASSERT_EQ(WaitForState(qpn, "rts"), "rts");
  v1::RegisterRegionRequest region_request;
  region_request.set_length(4096);
  region_request.mutable_access()->set_local_write(true);
  v1::RegisterRegionResponse region;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub().RegisterRegion(&context, region_request, &region).ok());
  }
  auto valid = [&] {
    v1::QpExecuteRequest request;
    request.set_kind("write");
    request.set_qpn(qpn);
    request.set_region_id(region.id());
    request.set_length(64);
    request.set_remote_address(0x1000);
    request.set_rkey(0x42);
    request.set_timeout_ms(100);
    return request;
  };
  struct Case {
    const char* what;
    std::function<void(v1::QpExecuteRequest&)> change;
    grpc::StatusCode code;
    const char* message;
  };
  const Case cases[] = {
      {"unknown kind", [](auto& r) { r.set_kind("writ"); },
       grpc::StatusCode::INVALID_ARGUMENT,
       "kind 'writ': use write, write_imm, read, send, fetch_add or cmp_swap"},
      {"no QP", [](auto& r) { r.set_qpn(roce::kFirstQpn + 1); },
       grpc::StatusCode::NOT_FOUND, "no queue pair 257 is connected"},
      {"zero length", [](auto& r) { r.set_length(0); },
       grpc::StatusCode::INVALID_ARGUMENT, "length 0: must be 1..2^31 bytes"},
      {"atomic of 16 bytes",
       [](auto& r) {
         r.set_kind("fetch_add");
         r.set_length(16);
       },
       grpc::StatusCode::INVALID_ARGUMENT, "atomics work on 8 bytes"},
      {"length with generation",
       [](auto& r) {
         r.set_generate_count(4);
         r.set_generate_size(64);
       },
       grpc::StatusCode::INVALID_ARGUMENT, "length: excludes generate_count"},
      {"size without count",
       [](auto& r) {
         r.set_length(0);
         r.set_generate_size(64);
       },
       grpc::StatusCode::INVALID_ARGUMENT,
       "generate_size: set without generate_count"},
      {"span below the size",
       [](auto& r) {
         r.set_length(0);
         r.set_generate_count(4);
         r.set_generate_size(64);
         r.set_generate_region(32);
       },
       grpc::StatusCode::INVALID_ARGUMENT,
       "generate_region 32: smaller than generate_size 64"},
      {"no region", [](auto& r) { r.set_region_id(999); },
       grpc::StatusCode::NOT_FOUND, "999"},
      {"outside the region", [](auto& r) { r.set_offset(4090); },
       grpc::StatusCode::OUT_OF_RANGE, "[4090, +64) is outside region"},
  };
  for (const Case& c : cases) {
    v1::QpExecuteRequest request = valid();
    c.change(request);
    v1::QpExecuteResponse response;
    grpc::ClientContext context;
    grpc::Status status = roce().QpExecute(&context, request, &response);
    EXPECT_EQ(status.error_code(), c.code) << c.what;
    EXPECT_THAT(status.error_message(), HasSubstr(c.message)) << c.what;
  }
  uint64_t posted = 1;
  for (const auto& [name, value] : server_->dataplane()
                                       .Snapshot(Dataplane::StateCopy::kOmit)
                                       .transport("roce")
                                       .counters) {
    if (name == "ops_posted") posted = value;
  }
  EXPECT_EQ(posted, 0u);
  EXPECT_EQ(rte_ring_count(server_->rings().tx(0)), 0u);
}

// One real op: QpExecute's fetch-and-add leaves as a byte-exact FETCH_ADD
// request to the client (scripted here with the transport's wire code),
// and the client's ATOMIC ACKNOWLEDGE completes it with the original value.
TEST_F(RoceControlTest, QpExecuteFetchAddCompletesWithThePeersAnswer) {
  uint32_t qpn = 0;
  ASSERT_TRUE(CreateQp(ClientQp(), &qpn).ok());
  ASSERT_EQ(WaitForState(qpn, "rts"), "rts");
  v1::RegisterRegionRequest region_request;
  region_request.set_length(4096);
  region_request.mutable_access()->set_local_write(true);
  v1::RegisterRegionResponse region;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub().RegisterRegion(&context, region_request, &region).ok());
  }
  v1::QpExecuteRequest request;
  request.set_kind("fetch_add");
  request.set_qpn(qpn);
  request.set_region_id(region.id());
  request.set_offset(8);
  request.set_remote_address(0x5000);
  request.set_rkey(0x77);
  request.set_swap_add(5);
  request.set_timeout_ms(10000);
  v1::QpExecuteResponse response;
  grpc::Status status;
  std::thread caller([&] {
    grpc::ClientContext context;
    status = roce().QpExecute(&context, request, &response);
  });

  rte_mbuf* sent = nullptr;
  for (int i = 0; i < 500 && sent == nullptr; ++i) {
    void* m = nullptr;
    if (testing_wire::TakeFromWire(server_->rings().tx(0), &m) == 0) {
      sent = static_cast<rte_mbuf*>(m);
    } else {
      usleep(10'000);
    }
  }
  ASSERT_NE(sent, nullptr);
  std::vector<uint8_t> out(rte_pktmbuf_pkt_len(sent));
  std::memcpy(out.data(), rte_pktmbuf_mtod(sent, uint8_t*), out.size());
  rte_pktmbuf_free(sent);
  roce::Packet packet;
  ASSERT_EQ(roce::ParseFrame(out.data(), static_cast<uint32_t>(out.size()), 14,
                             34, &packet),
            roce::ParseError::kNone);
  EXPECT_EQ(packet.bth.opcode, static_cast<uint8_t>(roce::Opcode::kRcFetchAdd));
  EXPECT_EQ(packet.bth.dest_qp, kClientQpn);
  EXPECT_EQ(packet.bth.psn, 0x777u);  // ClientQp's send_psn
  EXPECT_TRUE(packet.bth.ack_req);
  EXPECT_EQ(packet.ext.atomic_eth.va, 0x5000u);
  EXPECT_EQ(packet.ext.atomic_eth.rkey, 0x77u);
  EXPECT_EQ(packet.ext.atomic_eth.swap_add, 5u);
  EXPECT_EQ(packet.src_ip, kDutIp);
  EXPECT_EQ(packet.dst_ip, kClientIp);
  EXPECT_TRUE(std::equal(kClientMac.begin(), kClientMac.end(), out.begin()));

  roce::FrameParams params;
  params.src_mac = kClientMac;
  params.dst_mac = kDutMac;
  params.ip_version = 4;
  params.src_ip = kClientIp;
  params.dst_ip = kDutIp;
  params.udp_src_port = roce::UdpSourcePort(kClientQpn, qpn);
  roce::Bth bth;
  bth.opcode = static_cast<uint8_t>(roce::Opcode::kRcAtomicAck);
  bth.dest_qp = qpn;
  bth.psn = 0x777;
  roce::ExtHeaders ext;
  ext.aeth = {roce::AethAck(), 1};
  ext.atomic_ack_eth.original = 0x1122334455667788;
  const uint32_t size = roce::FrameBytes(4, bth.opcode, 0);
  std::vector<uint8_t> frame(size);
  ASSERT_NE(roce::WriteHeaders(params, bth, ext, 0, frame.data(), size), 0u);
  ASSERT_EQ(roce::FinishFrame(params, frame.data(), size), size);
  rte_mempool* pool = rte_pktmbuf_pool_create("rctl_atomic", 63, 0, 0,
                                              RTE_MBUF_DEFAULT_BUF_SIZE, 0);
  ASSERT_NE(pool, nullptr);
  rte_mbuf* m = rte_pktmbuf_alloc(pool);
  ASSERT_NE(m, nullptr);
  std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(size)), frame.data(),
              size);
  ASSERT_EQ(testing_wire::PutOnWire(server_->rings().rx(0), m), 0);
  caller.join();
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.ops(), 1u);
  EXPECT_EQ(response.bytes(), 8u);
  EXPECT_EQ(response.atomic_original(), 0x1122334455667788u);
  EXPECT_GT(response.latency_max_ns(), 0u);
  ASSERT_TRUE(DestroyQp(qpn).ok());
  // The HPU is done with the mbuf before the pool goes.
  for (int i = 0; i < 200 && rte_mempool_full(pool) == 0; ++i) usleep(10'000);
  rte_mempool_free(pool);
}

TEST(RoceControlOffTest, QpExecuteIsFailedPrecondition) {
  std::unique_ptr<Server> server = Server::Create(/*roce=*/false);
  ASSERT_NE(server, nullptr);
  v1::QpExecuteRequest request;
  request.set_kind("read");
  request.set_qpn(roce::kFirstQpn);
  request.set_region_id(1);
  request.set_length(8);
  v1::QpExecuteResponse response;
  grpc::ClientContext context;
  grpc::Status status = server->roce().QpExecute(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(status.error_message(), HasSubstr("RoCE is off"));
}

}  // namespace
}  // namespace spinnic
