// The DiAD part of the gRPC control API end to end: a real dataplane with
// DiAD on (net_ring ports, a launched HPU), the real server on a Unix
// socket, a real gRPC client. Peers are added, listed and removed; every bad
// request gets its canonical code with a message naming the field; remote
// operations to a peer nobody plays (its frames leave through a ring into
// the void) fail with UNAVAILABLE once the channel is declared down, which
// ListPeers and WatchEvents then report. No timing is asserted.
#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "control/grpc/control_server.h"
#include "dataplane/diad/channel.h"
#include "dataplane/diad/diad_engine.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "spinnic/v1/control.grpc.pb.h"
#include "spinnic/v1/diad.grpc.pb.h"
#include "tests/common/ring_dataplane.h"

namespace spinnic {
namespace {

using ::testing::HasSubstr;

diad::NodeAddress Node(const char* text) {
  diad::NodeAddress node{};
  EXPECT_EQ(inet_pton(AF_INET6, text, node.data()), 1) << text;
  return node;
}

// The config the brief's daemon would run: addresses { diad_node:
// "fd00:d1ad::1" mac: "02:00:00:00:00:01" } diad { rto_us: 200 rto_max_us:
// 1000 max_retries: 3 } (RingDataplane writes it into its v1::Config).
testing_rings::RingDataplaneOptions DiadOptions() {
  testing_rings::RingDataplaneOptions options;
  diad::DiadConfig& d = options.diad;
  d.enabled = true;
  d.node = Node("fd00:d1ad::1");
  d.mac = {0x02, 0, 0, 0, 0, 0x01};
  d.channel.rto_ns = 200'000;
  d.channel.rto_max_ns = 1'000'000;
  d.channel.max_retries = 3;
  return options;
}

class Server {
 public:
  // `diad` false: the same rings without DiAD.
  static std::unique_ptr<Server> Create(bool diad) {
    static int instance = 0;
    auto server = std::unique_ptr<Server>(new Server());
    ++instance;
    auto rings = testing_rings::RingDataplane::Create(
        absl::StrCat("dctl", instance),
        diad ? DiadOptions() : testing_rings::RingDataplaneOptions());
    EXPECT_TRUE(rings.ok()) << rings.status();
    if (!rings.ok()) return nullptr;
    server->rings_ = *std::move(rings);
    absl::Status started = server->rings_->dataplane().Start();
    EXPECT_TRUE(started.ok()) << started;
    server->dir_ =
        absl::StrCat("/tmp/spinnic-dctl-test-", getpid(), "-", instance);
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
    server->diad_stub_ = v1::DiadService::NewStub(channel);
    return server;
  }

  ~Server() {
    control_.reset();
    rings_.reset();
    rmdir(dir_.c_str());
  }

  v1::Spinnic::Stub& stub() { return *stub_; }
  v1::DiadService::Stub& diad() { return *diad_stub_; }
  Dataplane& dataplane() { return rings_->dataplane(); }
  SpinnicService& service() { return control_->service(); }

 private:
  Server() = default;
  std::unique_ptr<testing_rings::RingDataplane> rings_;
  std::string dir_;
  std::unique_ptr<ControlServer> control_;
  std::unique_ptr<v1::Spinnic::Stub> stub_;
  std::unique_ptr<v1::DiadService::Stub> diad_stub_;
};

// The EAL, once per process: lcore 1 runs the HPU.
class EalEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    ASSERT_TRUE(
        InitEal({"diad_control_test", "--no-huge", "-m", "256", "--no-pci",
                 "--no-shconf", "--lcores", "0@0,1@1", "--log-level", "4"})
            .ok());
  }
};
::testing::Environment* const kEal =
    ::testing::AddGlobalTestEnvironment(new EalEnvironment);

class DiadControlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = Server::Create(/*diad=*/true);
    ASSERT_NE(server_, nullptr);
  }
  void TearDown() override { server_.reset(); }

  v1::Spinnic::Stub& stub() { return server_->stub(); }
  v1::DiadService::Stub& diad() { return server_->diad(); }

  grpc::Status AddPeer(const std::string& name, const std::string& node,
                       const std::string& mac) {
    v1::AddPeerRequest request;
    request.mutable_peer()->set_name(name);
    request.mutable_peer()->set_node(node);
    request.mutable_peer()->set_mac(mac);
    v1::AddPeerResponse response;
    grpc::ClientContext context;
    return diad().AddPeer(&context, request, &response);
  }

  grpc::Status RemovePeer(const std::string& name) {
    v1::RemovePeerRequest request;
    request.set_name(name);
    v1::RemovePeerResponse response;
    grpc::ClientContext context;
    return diad().RemovePeer(&context, request, &response);
  }

  v1::ListPeersResponse ListPeers() {
    v1::ListPeersResponse response;
    grpc::ClientContext context;
    EXPECT_TRUE(diad().ListPeers(&context, {}, &response).ok());
    return response;
  }

  grpc::Status Write(const std::string& peer, uint32_t channel,
                     const std::string& data) {
    v1::RemoteWriteRequest request;
    request.set_peer(peer);
    request.set_channel(channel);
    request.set_rkey(0x1234);
    request.set_address(0x1000);
    request.set_data(data);
    request.set_timeout_ms(5000);
    v1::RemoteWriteResponse response;
    grpc::ClientContext context;
    return diad().RemoteWrite(&context, request, &response);
  }

  grpc::Status Read(const std::string& peer, uint32_t channel,
                    uint32_t length) {
    v1::RemoteReadRequest request;
    request.set_peer(peer);
    request.set_channel(channel);
    request.set_rkey(0x1234);
    request.set_address(0x1000);
    request.set_length(length);
    request.set_timeout_ms(5000);
    v1::RemoteReadResponse response;
    grpc::ClientContext context;
    return diad().RemoteRead(&context, request, &response);
  }

  grpc::Status Send(const std::string& peer, uint32_t stream_id,
                    const std::vector<std::string>& messages,
                    uint32_t channel = 0) {
    v1::StreamSendRequest request;
    request.set_peer(peer);
    request.set_channel(channel);
    request.set_stream_id(stream_id);
    for (const std::string& m : messages) request.add_messages(m);
    request.set_timeout_ms(5000);
    v1::StreamSendResponse response;
    grpc::ClientContext context;
    return diad().StreamSend(&context, request, &response);
  }

  std::unique_ptr<Server> server_;
};

TEST_F(DiadControlTest, AddListRemovePeer) {
  EXPECT_TRUE(ListPeers().peers().empty());
  v1::AddPeerRequest request;
  request.mutable_peer()->set_name("b");
  request.mutable_peer()->set_node("fd00:d1ad::2");
  request.mutable_peer()->set_mac("02:00:00:00:00:02");
  v1::AddPeerResponse response;
  {
    grpc::ClientContext context;
    grpc::Status status = diad().AddPeer(&context, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  v1::ListPeersResponse peers = ListPeers();
  ASSERT_EQ(peers.peers_size(), 1);
  const v1::PeerStatus& b = peers.peers(0);
  EXPECT_EQ(b.name(), "b");
  EXPECT_EQ(b.node(), "fd00:d1ad::2");
  EXPECT_EQ(b.mac(), "02:00:00:00:00:02");
  EXPECT_EQ(b.slot(), response.slot());
  EXPECT_TRUE(b.up());
  EXPECT_EQ(b.channels_down(), 0u);
  EXPECT_EQ(b.ops_failed(), 0u);

  ASSERT_TRUE(AddPeer("c", "fd00:d1ad::3", "02:00:00:00:00:03").ok());
  EXPECT_EQ(ListPeers().peers_size(), 2);
  ASSERT_TRUE(RemovePeer("b").ok());
  peers = ListPeers();
  ASSERT_EQ(peers.peers_size(), 1);
  EXPECT_EQ(peers.peers(0).name(), "c");
  // A name freed is free again.
  EXPECT_TRUE(AddPeer("b", "fd00:d1ad::2", "02:00:00:00:00:02").ok());
}

TEST_F(DiadControlTest, AddPeerErrorsNameTheFieldAndChangeNothing) {
  ASSERT_TRUE(AddPeer("b", "fd00:d1ad::2", "02:00:00:00:00:02").ok());
  struct Case {
    const char* name;
    const char* node;
    const char* mac;
    grpc::StatusCode code;
    const char* says;
  };
  const Case kCases[] = {
      {"", "fd00:d1ad::3", "02:00:00:00:00:03",
       grpc::StatusCode::INVALID_ARGUMENT, "peer.name"},
      {"x", "2001:db8::3", "02:00:00:00:00:03",
       grpc::StatusCode::INVALID_ARGUMENT, "peer.node"},
      {"x", "not-an-address", "02:00:00:00:00:03",
       grpc::StatusCode::INVALID_ARGUMENT, "peer.node"},
      {"x", "fd00:d1ad::3/64", "02:00:00:00:00:03",
       grpc::StatusCode::INVALID_ARGUMENT, "peer.node"},
      {"x", "fd00:d1ad::1", "02:00:00:00:00:03",
       grpc::StatusCode::INVALID_ARGUMENT, "own diad_node"},
      {"x", "fd00:d1ad::3", "02:00:00:00:03",
       grpc::StatusCode::INVALID_ARGUMENT, "peer.mac"},
      {"x", "fd00:d1ad::3", "01:00:5e:00:00:01",
       grpc::StatusCode::INVALID_ARGUMENT, "peer.mac"},
      {"x", "fd00:d1ad::3", "00:00:00:00:00:00",
       grpc::StatusCode::INVALID_ARGUMENT, "peer.mac"},
      {"b", "fd00:d1ad::3", "02:00:00:00:00:03",
       grpc::StatusCode::ALREADY_EXISTS, "'b'"},
      {"x", "fd00:d1ad::2", "02:00:00:00:00:03",
       grpc::StatusCode::ALREADY_EXISTS, "already has node address"},
  };
  for (const Case& c : kCases) {
    grpc::Status status = AddPeer(c.name, c.node, c.mac);
    EXPECT_EQ(status.error_code(), c.code)
        << c.name << " " << c.node << " " << c.mac << ": "
        << status.error_message();
    EXPECT_THAT(status.error_message(), HasSubstr(c.says));
  }
  v1::ListPeersResponse peers = ListPeers();
  ASSERT_EQ(peers.peers_size(), 1);
  EXPECT_EQ(peers.peers(0).node(), "fd00:d1ad::2");

  grpc::Status removed = RemovePeer("nosuch");
  EXPECT_EQ(removed.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(removed.error_message(), HasSubstr("nosuch"));
  EXPECT_EQ(RemovePeer("").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(ListPeers().peers_size(), 1);
}

TEST_F(DiadControlTest, RemoteRequestErrors) {
  ASSERT_TRUE(AddPeer("b", "fd00:d1ad::2", "02:00:00:00:00:02").ok());
  auto expect = [](const grpc::Status& status, grpc::StatusCode code,
                   const std::string& says) {
    EXPECT_EQ(status.error_code(), code) << status.error_message();
    EXPECT_THAT(status.error_message(), HasSubstr(says));
  };
  const auto kInvalid = grpc::StatusCode::INVALID_ARGUMENT;
  expect(Write("nosuch", 0, "x"), grpc::StatusCode::NOT_FOUND, "nosuch");
  expect(Read("nosuch", 0, 8), grpc::StatusCode::NOT_FOUND, "nosuch");
  expect(Send("nosuch", 7, {"x"}), grpc::StatusCode::NOT_FOUND, "nosuch");
  // Four channels per peer by default.
  expect(Write("b", 4, "x"), kInvalid, "channel");
  expect(Read("b", 70000, 8), kInvalid, "channel");
  expect(Send("b", 7, {"x", "y"}, 4), kInvalid, "channel");
  expect(Write("b", 0, ""), kInvalid, "data: empty");
  expect(Read("b", 0, 0), kInvalid, "length");
  expect(Read("b", 0, (1u << 20) + 1), kInvalid, "length");
  expect(Send("b", 0, {"x"}), kInvalid, "stream_id");
  expect(Send("b", 7, {}), kInvalid, "messages: none given");
  expect(Send("b", 7, {"x", ""}), kInvalid, "messages[1]");
  // Nothing was started.
  v1::ListPeersResponse peers = ListPeers();
  ASSERT_EQ(peers.peers_size(), 1);
  EXPECT_EQ(peers.peers(0).ops_completed() + peers.peers(0).ops_failed(), 0u);
}

// Server-side generation (StreamSend/RemoteWrite generate_count and
// generate_size) and repeated reads: every bad combination is refused
// with INVALID_ARGUMENT naming the field, before anything starts.
TEST_F(DiadControlTest, GenerateAndRepeatErrorsNameTheField) {
  ASSERT_TRUE(AddPeer("b", "fd00:d1ad::2", "02:00:00:00:00:02").ok());
  auto expect = [](const grpc::Status& status, const std::string& says) {
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << status.error_message();
    EXPECT_THAT(status.error_message(), HasSubstr(says));
  };
  auto gen_send = [&](uint32_t count, uint32_t size,
                      const std::vector<std::string>& messages) {
    v1::StreamSendRequest request;
    request.set_peer("b");
    request.set_stream_id(7);
    for (const std::string& m : messages) request.add_messages(m);
    request.set_generate_count(count);
    request.set_generate_size(size);
    request.set_timeout_ms(5000);
    v1::StreamSendResponse response;
    grpc::ClientContext context;
    return diad().StreamSend(&context, request, &response);
  };
  auto gen_write = [&](uint32_t count, uint32_t size, const std::string& data,
                       uint64_t region = 0) {
    v1::RemoteWriteRequest request;
    request.set_peer("b");
    request.set_rkey(0x1234);
    request.set_address(0x1000);
    request.set_data(data);
    request.set_generate_count(count);
    request.set_generate_size(size);
    request.set_generate_region(region);
    request.set_timeout_ms(5000);
    v1::RemoteWriteResponse response;
    grpc::ClientContext context;
    return diad().RemoteWrite(&context, request, &response);
  };
  auto read = [&](uint32_t repeat) {
    v1::RemoteReadRequest request;
    request.set_peer("b");
    request.set_rkey(0x1234);
    request.set_address(0x1000);
    request.set_length(8);
    request.set_repeat(repeat);
    request.set_timeout_ms(5000);
    v1::RemoteReadResponse response;
    grpc::ClientContext context;
    return diad().RemoteRead(&context, request, &response);
  };
  // A size without a count, a count without a (valid) size.
  expect(gen_send(0, 64, {}), "generate_size");
  expect(gen_send(4, 0, {}), "generate_size");
  expect(gen_send(4, 7, {}), "generate_size");  // below the 8-byte index
  expect(gen_send(4, (16u << 20) + 1, {}), "generate_size");
  expect(gen_send(4, 64, {"x"}), "generate_count");  // and messages
  expect(gen_send(1000001, 8, {}), "generate_count");
  expect(gen_send(1025, 1u << 20, {}), "generate_count");  // 1 GiB + 1 MiB
  expect(gen_write(0, 64, ""), "generate_size");
  expect(gen_write(0, 64, "x"), "generate_size");
  expect(gen_write(4, 0, ""), "generate_size");
  expect(gen_write(4, (16u << 20) + 1, ""), "generate_size");
  expect(gen_write(4, 64, "x"), "generate_count");  // and data
  expect(gen_write(1000001, 1, ""), "generate_count");
  expect(gen_write(4, 64, "", 32), "generate_region");
  expect(read(1000001), "repeat");
  // Nothing was started.
  v1::ListPeersResponse peers = ListPeers();
  ASSERT_EQ(peers.peers_size(), 1);
  EXPECT_EQ(peers.peers(0).ops_completed() + peers.peers(0).ops_failed(), 0u);
}

TEST_F(DiadControlTest, PeerNobodyPlaysGoesDown) {
  grpc::ClientContext watch;
  auto events = stub().WatchEvents(&watch, {});
  for (int i = 0; i < 200 && server_->service().event_subscribers() == 0; ++i) {
    usleep(10'000);
  }
  ASSERT_EQ(server_->service().event_subscribers(), 1u);
  ASSERT_TRUE(AddPeer("ghost", "fd00:d1ad::9", "02:00:00:00:00:09").ok());

  grpc::Status written = Write("ghost", 0, std::string(100, 'x'));
  EXPECT_EQ(written.error_code(), grpc::StatusCode::UNAVAILABLE)
      << written.error_message();

  v1::ListPeersResponse peers = ListPeers();
  ASSERT_EQ(peers.peers_size(), 1);
  EXPECT_FALSE(peers.peers(0).up());
  EXPECT_GE(peers.peers(0).channels_down(), 1u);
  EXPECT_GE(peers.peers(0).down_events(), 1u);
  EXPECT_GE(peers.peers(0).ops_failed(), 1u);
  EXPECT_GT(peers.peers(0).tx_packets(), 0u);

  // A stream to it fails too, saying how many messages were delivered.
  grpc::Status sent = Send("ghost", 7, {"a", "b"});
  EXPECT_FALSE(sent.ok());
  EXPECT_THAT(sent.error_message(), HasSubstr("of 2 messages delivered"));

  // The daemon's loop forwards the HPU's events; here the test does.
  std::vector<Event> raised;
  bool down_raised = false;
  for (int i = 0; i < 200 && !down_raised; ++i) {
    std::vector<Event> batch;
    server_->dataplane().DrainEvents(&batch);
    for (const Event& e : batch) {
      down_raised |= e.code == diad::kEventDiadChannelDown;
      raised.push_back(e);
    }
    if (!down_raised) usleep(10'000);
  }
  ASSERT_TRUE(down_raised);
  server_->service().PublishEvents(raised);
  bool seen = false;
  v1::Event event;
  for (size_t i = 0; i < raised.size() && !seen; ++i) {
    ASSERT_TRUE(events->Read(&event));
    if (event.name() != "diad_channel_down") continue;
    seen = true;
    EXPECT_EQ(event.code(), diad::kEventDiadChannelDown);
    EXPECT_EQ(event.diad().peer(), "ghost");
    EXPECT_EQ(event.diad().channel(), 0u);
    EXPECT_EQ(event.diad().status(), "peer_down");
    EXPECT_TRUE(event.handler().empty());
  }
  EXPECT_TRUE(seen);
  watch.TryCancel();
  while (events->Read(&event)) {
  }
  events->Finish();

  // Removed, it is gone; what it said stays said.
  EXPECT_TRUE(RemovePeer("ghost").ok());
  EXPECT_TRUE(ListPeers().peers().empty());
}

TEST_F(DiadControlTest, GetInfoReportsDiad) {
  v1::GetInfoResponse info;
  grpc::ClientContext context;
  ASSERT_TRUE(stub().GetInfo(&context, {}, &info).ok());
  const v1::DiadInfo& d = info.diad();
  EXPECT_TRUE(d.enabled());
  EXPECT_EQ(d.node(), "fd00:d1ad::1");
  EXPECT_EQ(d.mac(), "02:00:00:00:00:01");
  EXPECT_EQ(d.port(), "wire0");
  EXPECT_EQ(d.udp_port(), diad::kDefaultUdpPort);
  EXPECT_EQ(d.path_mtu(), 1500u);
  EXPECT_EQ(d.max_payload(), 1500u - 96u);
  EXPECT_EQ(d.channels(), 4u);
  EXPECT_EQ(d.max_peers(), 64u);
  EXPECT_EQ(d.max_message_bytes(), 16u << 20);
  EXPECT_EQ(d.window_packets(), 256u);
  EXPECT_EQ(d.max_transactions(), 16u);
  EXPECT_EQ(d.rto_us(), 200u);
  EXPECT_EQ(d.rto_max_us(), 1000u);
  EXPECT_EQ(d.max_retries(), 3u);
  EXPECT_EQ(d.down_after_us(),
            diad::DownAfterNs(DiadOptions().diad.channel) / 1000);
  EXPECT_GT(d.down_after_us(), 0u);
  // The adaptive timeout (on by default, ChannelConfig's 100 us floor) and
  // the transaction deadline in force (10 x down_after by default).
  EXPECT_TRUE(d.adaptive_rto());
  EXPECT_EQ(d.rto_min_us(), 100u);
  EXPECT_EQ(d.txn_deadline_ms(),
            diad::TxnDeadlineNs(DiadOptions().diad.channel) / 1'000'000);
  EXPECT_EQ(info.addresses().diad_node(), "fd00:d1ad::1");
}

TEST_F(DiadControlTest, StreamRegionRoundTrips) {
  v1::RegisterRegionRequest request;
  request.set_length(65536);
  request.set_name("ring7");
  request.set_stream_id(7);
  request.mutable_access()->set_local_read(true);
  request.mutable_access()->set_local_write(true);
  v1::RegisterRegionResponse stream_region;
  {
    grpc::ClientContext context;
    grpc::Status status =
        stub().RegisterRegion(&context, request, &stream_region);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  request.set_name("plain");
  request.set_stream_id(0);
  v1::RegisterRegionResponse plain;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub().RegisterRegion(&context, request, &plain).ok());
  }
  v1::ListRegionsResponse regions;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub().ListRegions(&context, {}, &regions).ok());
  }
  ASSERT_EQ(regions.regions_size(), 2);
  for (const v1::RegionInfo& r : regions.regions()) {
    EXPECT_EQ(r.stream_id(), r.id() == stream_region.id() ? 7u : 0u)
        << r.name();
  }
  grpc::ClientContext context;
  v1::DeregisterRegionRequest deregister;
  deregister.set_id(stream_region.id());
  v1::DeregisterRegionResponse ignored;
  EXPECT_TRUE(stub().DeregisterRegion(&context, deregister, &ignored).ok());
}

TEST_F(DiadControlTest, StatsCarryDiadCounters) {
  v1::Stats stats;
  grpc::ClientContext context;
  ASSERT_TRUE(stub().GetStats(&context, {}, &stats).ok());
  std::vector<std::string> names;
  for (const v1::Counter& c : stats.diad()) names.push_back(c.name());
  EXPECT_THAT(
      names, ::testing::IsSupersetOf({"tx_data", "retransmits", "ops_completed",
                                      "ops_failed", "channel_down"}));
  EXPECT_TRUE(std::any_of(names.begin(), names.end(), [](const std::string& n) {
    return n.rfind("drop_", 0) == 0;
  }));
}

TEST(DiadControlOffTest, DiadOffIsFailedPrecondition) {
  std::unique_ptr<Server> server = Server::Create(/*diad=*/false);
  ASSERT_NE(server, nullptr);
  v1::AddPeerRequest request;
  request.mutable_peer()->set_name("b");
  request.mutable_peer()->set_node("fd00:d1ad::2");
  request.mutable_peer()->set_mac("02:00:00:00:00:02");
  v1::AddPeerResponse response;
  {
    grpc::ClientContext context;
    grpc::Status status = server->diad().AddPeer(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_THAT(status.error_message(), HasSubstr("diad_node"));
  }
  {
    v1::RemoteWriteRequest write;
    write.set_peer("b");
    write.set_data("x");
    v1::RemoteWriteResponse ignored;
    grpc::ClientContext context;
    EXPECT_EQ(
        server->diad().RemoteWrite(&context, write, &ignored).error_code(),
        grpc::StatusCode::FAILED_PRECONDITION);
  }
  v1::GetInfoResponse info;
  grpc::ClientContext context;
  ASSERT_TRUE(server->stub().GetInfo(&context, {}, &info).ok());
  EXPECT_FALSE(info.diad().enabled());
  v1::ListPeersResponse peers;
  grpc::ClientContext list;
  ASSERT_TRUE(server->diad().ListPeers(&list, {}, &peers).ok());
  EXPECT_TRUE(peers.peers().empty());
}

}  // namespace
}  // namespace spinnic
