// The gRPC control API end to end: a real dataplane (net_ring ports, EAL
// without hugepages), the real server on a Unix socket, a real gRPC client.
// Every bad request gets its canonical code and changes nothing.
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "control/grpc/control_server.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "spinnic/v1/control.grpc.pb.h"
#include "tests/common/frames.h"

namespace spinnic {
namespace {

using ::testing::HasSubstr;

// Fails every packet: the engine raises kEventHandlerFailed for each.
class FailsEverything {
 public:
  static constexpr absl::string_view kName = "test_fails";
  static constexpr absl::string_view kDescription = "returns FAIL";
  static constexpr uint32_t kMinStateSize = 0;
  static absl::StatusOr<std::unique_ptr<FailsEverything>> Create(
      const HandlerParams&) {
    return std::make_unique<FailsEverything>();
  }
  HandlerResult Payload(HandlerContext&, PacketView&) {
    return HandlerResult::kFail;
  }
};
SPINNIC_HANDLER(FailsEverything);

class ControlApiTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(
        InitEal({"control_api_test", "--no-huge", "-m", "256", "--no-pci",
                 "--no-shconf", "--lcores", "0@0,1@0", "--log-level", "4"})
            .ok());
  }

  void SetUp() override {
    static int instance = 0;  // ethdev names outlive a closed port
    ++instance;
    for (int side = 0; side < 2; ++side) {
      std::string name = absl::StrCat("ctl", instance, "_", side);
      rings_[side] =
          rte_ring_create(name.c_str(), 256, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
      ASSERT_NE(rings_[side], nullptr);
      int port = rte_eth_from_ring(rings_[side]);
      ASSERT_GE(port, 0);
      char ethdev[RTE_ETH_NAME_MAX_LEN];
      ASSERT_EQ(rte_eth_dev_get_name_by_port(port, ethdev), 0);
      ethdevs_[side] = ethdev;
    }
    // The config the daemon would run: ports by name; the test's ethdevs
    // stand in for the vdevs.
    v1::Port* wire = config_.add_ports();
    wire->set_name("wire0");
    wire->set_vdev("net_ring_unused0");
    wire->set_role(v1::PORT_ROLE_WIRE);
    v1::Port* host = config_.add_ports();
    host->set_name("host0");
    host->set_vdev("net_ring_unused1");
    host->set_role(v1::PORT_ROLE_HOST);
    config_.add_port_pairs()->set_a("wire0");
    config_.mutable_port_pairs(0)->set_b("host0");
    config_.add_workers(1);

    DataplaneConfig dataplane_config;
    for (int side = 0; side < 2; ++side) {
      PortConfig port;
      port.name = side ? "host0" : "wire0";
      port.existing = ethdevs_[side];
      port.rx_descriptors = port.tx_descriptors = 128;
      dataplane_config.ports.push_back(port);
    }
    dataplane_config.port_pairs = {{0, 1}};
    dataplane_config.worker_cores = {0};
    dataplane_config.mbufs = 4095;
    auto dataplane = Dataplane::Create(dataplane_config);
    ASSERT_TRUE(dataplane.ok()) << dataplane.status();
    dataplane_ = *std::move(dataplane);

    socket_ = absl::StrCat("/tmp/spinnic-ctl-test-", getpid(), "/s.sock");
    auto server = ControlServer::Start({.unix_socket = socket_}, config_,
                                       dataplane_.get());
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    channel_ = grpc::CreateChannel(absl::StrCat("unix:", socket_),
                                   grpc::InsecureChannelCredentials());
    stub_ = v1::Spinnic::NewStub(channel_);
  }

  void TearDown() override {
    server_.reset();
    dataplane_.reset();
    for (rte_ring* ring : rings_) rte_ring_free(ring);
    rmdir(absl::StrCat("/tmp/spinnic-ctl-test-", getpid()).c_str());
  }

  v1::InstallHandlerRequest Install(const std::string& name,
                                    const std::string& kind) {
    v1::InstallHandlerRequest request;
    request.mutable_handler()->set_name(name);
    request.mutable_handler()->set_kind(kind);
    return request;
  }

  grpc::Status Call(const v1::InstallHandlerRequest& request,
                    v1::InstallHandlerResponse* response = nullptr) {
    grpc::ClientContext context;
    v1::InstallHandlerResponse ignored;
    return stub_->InstallHandler(&context, request,
                                 response ? response : &ignored);
  }

  v1::ListHandlersResponse List() {
    grpc::ClientContext context;
    v1::ListHandlersResponse response;
    EXPECT_TRUE(stub_->ListHandlers(&context, {}, &response).ok());
    return response;
  }

  v1::Config config_;
  rte_ring* rings_[2];
  std::string ethdevs_[2];
  std::unique_ptr<Dataplane> dataplane_;
  std::string socket_;
  std::unique_ptr<ControlServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Spinnic::Stub> stub_;
};

TEST_F(ControlApiTest, SocketIsOwnerOnly) {
  struct stat st;
  ASSERT_EQ(stat(socket_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);
}

TEST_F(ControlApiTest, InfoDescribesPortsAndPairs) {
  v1::GetInfoResponse info;
  grpc::ClientContext context;
  ASSERT_TRUE(stub_->GetInfo(&context, {}, &info).ok());
  ASSERT_EQ(info.ports_size(), 2);
  EXPECT_EQ(info.ports(0).name(), "wire0");
  EXPECT_EQ(info.ports(0).paired_with(), "host0");
  EXPECT_EQ(info.hpus_size(), 1);
  EXPECT_EQ(info.max_handlers(), Ectx::kMaxEctxs);
}

TEST_F(ControlApiTest, ListsHandlerKindsWithSchemas) {
  grpc::ClientContext context;
  v1::ListHandlerKindsResponse response;
  ASSERT_TRUE(stub_->ListHandlerKinds(&context, {}, &response).ok());
  bool found = false;
  for (const auto& kind : response.kinds()) {
    if (kind.name() != "xor_payload") continue;
    found = true;
    ASSERT_GE(kind.params_size(), 1);
    EXPECT_EQ(kind.params(0).name(), "key");
    EXPECT_TRUE(kind.params(0).required());
  }
  EXPECT_TRUE(found);
}

TEST_F(ControlApiTest, InstallReadBackReplaceRemove) {
  v1::InstallHandlerRequest request = Install("c1", "count");
  request.mutable_handler()->mutable_match()->set_ip_proto(17);
  v1::InstallHandlerResponse response;
  ASSERT_TRUE(Call(request, &response).ok());
  v1::ListHandlersResponse listed = List();
  ASSERT_EQ(listed.handlers_size(), 1);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(
      listed.handlers(0), request.handler()));
  EXPECT_EQ(listed.stats(0).id(), response.id());

  EXPECT_EQ(Call(request).error_code(), grpc::StatusCode::ALREADY_EXISTS);
  request.set_replace(true);
  request.mutable_handler()->set_kind("filter");
  ASSERT_TRUE(Call(request).ok());
  listed = List();
  ASSERT_EQ(listed.handlers_size(), 1);
  EXPECT_EQ(listed.stats(0).kind(), "filter");

  grpc::ClientContext context;
  v1::RemoveHandlerRequest remove;
  remove.set_name("c1");
  v1::RemoveHandlerResponse removed;
  ASSERT_TRUE(stub_->RemoveHandler(&context, remove, &removed).ok());
  grpc::ClientContext again;
  EXPECT_EQ(stub_->RemoveHandler(&again, remove, &removed).error_code(),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(List().handlers_size(), 0);
}

TEST_F(ControlApiTest, BadInstallsGetTheirCodeAndChangeNothing) {
  grpc::Status status = Call(Install("x", "no_such_kind"));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("no_such_kind"));

  v1::InstallHandlerRequest bad_param = Install("x", "xor_payload");
  status = Call(bad_param);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("key"));

  v1::InstallHandlerRequest big = Install("x", "count");
  big.mutable_handler()->set_state_size(Ectx::kMaxStateSize + 1);
  EXPECT_EQ(Call(big).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  v1::InstallHandlerRequest bad_port = Install("x", "count");
  bad_port.mutable_handler()->mutable_match()->add_in_ports("nope");
  EXPECT_EQ(Call(bad_port).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  v1::InstallHandlerRequest region = Install("x", "count");
  region.add_bound_regions(7);
  EXPECT_EQ(Call(region).error_code(), grpc::StatusCode::NOT_FOUND);

  EXPECT_EQ(List().handlers_size(), 0);
}

TEST_F(ControlApiTest, ReadsStateAndRefusesOutOfRange) {
  ASSERT_TRUE(Call(Install("c", "count")).ok());
  grpc::ClientContext context;
  v1::ReadHandlerStateRequest request;
  request.set_name("c");
  v1::ReadHandlerStateResponse response;
  ASSERT_TRUE(stub_->ReadHandlerState(&context, request, &response).ok());
  EXPECT_EQ(response.data(), std::string(16, '\0'));
  request.set_offset(8);
  request.set_length(16);
  grpc::ClientContext out_of_range;
  EXPECT_EQ(
      stub_->ReadHandlerState(&out_of_range, request, &response).error_code(),
      grpc::StatusCode::OUT_OF_RANGE);
}

TEST_F(ControlApiTest, StatsAndWatchStats) {
  grpc::ClientContext context;
  v1::Stats stats;
  ASSERT_TRUE(stub_->GetStats(&context, {}, &stats).ok());
  ASSERT_EQ(stats.ports_size(), 2);
  EXPECT_EQ(stats.ports(1).name(), "host0");
  EXPECT_EQ(stats.ports(0).drops().at("runt"), 0u);

  grpc::ClientContext too_fast;
  v1::WatchStatsRequest fast;
  fast.set_interval_ms(1);
  auto reader = stub_->WatchStats(&too_fast, fast);
  EXPECT_FALSE(reader->Read(&stats));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  grpc::ClientContext watch;
  v1::WatchStatsRequest ok;
  ok.set_interval_ms(100);
  auto stream = stub_->WatchStats(&watch, ok);
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(stream->Read(&stats));
  watch.TryCancel();  // a client that goes away costs nothing
  while (stream->Read(&stats)) {
  }
  stream->Finish();
}

TEST_F(ControlApiTest, WatchEventsStreamsHandlerFailures) {
  ASSERT_TRUE(Call(Install("failing", "test_fails")).ok());
  grpc::ClientContext context;
  auto stream = stub_->WatchEvents(&context, {});
  for (int i = 0; i < 200 && server_->service().event_subscribers() == 0; ++i) {
    usleep(10'000);
  }
  ASSERT_EQ(server_->service().event_subscribers(), 1u);

  // A frame through the real HPU path: the handler fails, the engine raises
  // the event, the daemon's loop (here: the test) forwards it.
  rte_mempool* pool = rte_pktmbuf_pool_create("ctl_inject", 63, 0, 0,
                                              RTE_MBUF_DEFAULT_BUF_SIZE, 0);
  ASSERT_NE(pool, nullptr);
  frames::Bytes frame = frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1",
                                     "10.0.0.2", 1, 2, frames::Bytes(8, 0));
  rte_mbuf* m = rte_pktmbuf_alloc(pool);
  std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(frame.size())),
              frame.data(), frame.size());
  ASSERT_EQ(rte_ring_enqueue(rings_[0], m), 0);
  EXPECT_EQ(dataplane_->hpu(0).PollOnce(), 1u);
  std::vector<Event> events;
  dataplane_->DrainEvents(&events);
  ASSERT_EQ(events.size(), 1u);
  server_->service().PublishEvents(events);

  v1::Event event;
  ASSERT_TRUE(stream->Read(&event));
  EXPECT_EQ(event.code(), kEventHandlerFailed);
  EXPECT_EQ(event.handler(), "failing");
  EXPECT_EQ(event.sequence(), 1u);
  EXPECT_EQ(event.missed_before(), 0u);
  context.TryCancel();
  while (stream->Read(&event)) {
  }
  stream->Finish();
  for (int i = 0; i < 200 && server_->service().event_subscribers() != 0; ++i) {
    usleep(10'000);
  }
  EXPECT_EQ(server_->service().event_subscribers(), 0u)
      << "a departed client must cost nothing";
  rte_mempool_free(pool);
}

TEST(EventHubTest, SlowSubscriberLosesCountedEventsOthersDoNot) {
  EventHub hub;
  auto slow = hub.Subscribe();
  v1::Event event;
  for (size_t i = 0; i < EventHub::kQueueCapacity + 5; ++i) hub.Publish(event);
  auto fast = hub.Subscribe();
  std::vector<v1::Event> got;
  slow->Wait(absl::ZeroDuration(), &got);
  ASSERT_EQ(got.size(), EventHub::kQueueCapacity);
  EXPECT_EQ(got.back().sequence(), EventHub::kQueueCapacity);
  hub.Publish(event);
  got.clear();
  slow->Wait(absl::ZeroDuration(), &got);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].missed_before(), 5u);
  got.clear();
  fast->Wait(absl::ZeroDuration(), &got);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].missed_before(), 0u);
}

}  // namespace
}  // namespace spinnic
