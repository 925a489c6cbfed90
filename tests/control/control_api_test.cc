// The gRPC control API end to end: a real dataplane (net_ring ports, EAL
// without hugepages), the real server on a Unix socket, a real gRPC client.
// Every bad request gets its canonical code and changes nothing.
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "control/grpc/control_server.h"
#include "control/grpc/service_internal.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "spinnic/v1/control.grpc.pb.h"
#include "tests/common/frames.h"
#include "tests/common/ring_dataplane.h"
#include "tests/common/wire_ring.h"

namespace spinnic {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

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
    static int instance = 0;
    // The region limit is above the EAL's 256 MiB: both can refuse.
    auto rings = testing_rings::RingDataplane::Create(
        absl::StrCat("ctl", ++instance),
        {.region_bytes_limit = uint64_t{300} << 20});
    ASSERT_TRUE(rings.ok()) << rings.status();
    rings_ = *std::move(rings);
    config_ = rings_->config();
    dataplane_ = &rings_->dataplane();

    socket_ = absl::StrCat("/tmp/spinnic-ctl-test-", getpid(), "/s.sock");
    auto server =
        ControlServer::Start({.unix_socket = socket_}, config_, dataplane_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    channel_ = grpc::CreateChannel(absl::StrCat("unix:", socket_),
                                   grpc::InsecureChannelCredentials());
    stub_ = v1::Spinnic::NewStub(channel_);
  }

  void TearDown() override {
    server_.reset();
    rings_.reset();  // frees the frames left in the rings
    rte_mempool_free(pool_);
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

  absl::StatusOr<v1::RegisterRegionResponse> Register(
      uint64_t length, bool local, bool remote, const std::string& name = "") {
    v1::RegisterRegionRequest request;
    request.set_length(length);
    request.set_name(name);
    request.mutable_access()->set_local_read(local);
    request.mutable_access()->set_local_write(local);
    request.mutable_access()->set_remote_read(remote);
    request.mutable_access()->set_remote_write(remote);
    grpc::ClientContext context;
    v1::RegisterRegionResponse response;
    grpc::Status status = stub_->RegisterRegion(&context, request, &response);
    if (!status.ok()) {
      return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                          status.error_message());
    }
    return response;
  }

  grpc::Status Deregister(uint64_t id) {
    grpc::ClientContext context;
    v1::DeregisterRegionRequest request;
    request.set_id(id);
    v1::DeregisterRegionResponse response;
    return stub_->DeregisterRegion(&context, request, &response);
  }

  grpc::Status Read(uint64_t id, uint64_t offset, uint64_t length,
                    std::string* data) {
    grpc::ClientContext context;
    v1::ReadRegionRequest request;
    request.set_id(id);
    request.set_offset(offset);
    request.set_length(length);
    v1::ReadRegionResponse response;
    grpc::Status status = stub_->ReadRegion(&context, request, &response);
    *data = response.data();
    return status;
  }

  grpc::Status Write(uint64_t id, uint64_t offset, const std::string& data) {
    grpc::ClientContext context;
    v1::WriteRegionRequest request;
    request.set_id(id);
    request.set_offset(offset);
    request.set_data(data);
    v1::WriteRegionResponse response;
    return stub_->WriteRegion(&context, request, &response);
  }

  v1::ListRegionsResponse Regions() {
    grpc::ClientContext context;
    v1::ListRegionsResponse response;
    EXPECT_TRUE(stub_->ListRegions(&context, {}, &response).ok());
    return response;
  }

  // Sends `frame` into the wire port and runs the HPU once on this thread.
  void Inject(const frames::Bytes& frame) {
    if (pool_ == nullptr) {
      std::string name =
          absl::StrCat("ctl_pool", reinterpret_cast<uintptr_t>(this));
      pool_ = rte_pktmbuf_pool_create(name.c_str(), 63, 0, 0,
                                      RTE_MBUF_DEFAULT_BUF_SIZE, 0);
      ASSERT_NE(pool_, nullptr);
    }
    rte_mbuf* m = rte_pktmbuf_alloc(pool_);
    ASSERT_NE(m, nullptr);
    std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(frame.size())),
                frame.data(), frame.size());
    ASSERT_EQ(testing_wire::PutOnWire(rings_->rx(0), m), 0);
    EXPECT_EQ(dataplane_->hpu(0).PollOnce(), 1u);
    // The forwarded copy, out of the host port's ring.
    void* out = nullptr;
    if (testing_wire::TakeFromWire(rings_->tx(1), &out) == 0) {
      rte_pktmbuf_free(static_cast<rte_mbuf*>(out));
    }
  }

  v1::Config config_;
  rte_mempool* pool_ = nullptr;
  std::unique_ptr<testing_rings::RingDataplane> rings_;
  Dataplane* dataplane_ = nullptr;
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
  EXPECT_TRUE(info.ports(0).link_up());
  EXPECT_GT(info.ports(0).link_speed_mbps(), 0u);
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
  // Named as the request names it, not as the config file would.
  EXPECT_THAT(status.error_message(), HasSubstr("handler.kind"));
  EXPECT_THAT(status.error_message(), Not(HasSubstr("handlers[0]")));

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

// A match rule's pcap_filter through the API: installed, read back as
// written, run on the real HPU path; a bad expression is INVALID_ARGUMENT
// that quotes it and libpcap's reason, and installs nothing.
TEST_F(ControlApiTest, InstallsPcapFilterRulesAndRefusesBadOnes) {
  v1::InstallHandlerRequest bad = Install("roce6", "count");
  bad.mutable_handler()->mutable_match()->set_pcap_filter(
      "ip6 and udp dst prot 4791");
  grpc::Status status = Call(bad);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("match.pcap_filter"));
  EXPECT_THAT(status.error_message(),
              HasSubstr("\"ip6 and udp dst prot 4791\""));
  EXPECT_THAT(status.error_message(), HasSubstr("unknown host 'prot'"));
  EXPECT_EQ(List().handlers_size(), 0);

  v1::InstallHandlerRequest request = Install("roce6", "count");
  request.mutable_handler()->mutable_match()->set_pcap_filter(
      "ip6 and udp dst port 4791");
  ASSERT_TRUE(Call(request).ok());
  v1::ListHandlersResponse listed = List();
  ASSERT_EQ(listed.handlers_size(), 1);
  EXPECT_EQ(listed.handlers(0).match().pcap_filter(),
            "ip6 and udp dst port 4791");

  Inject(frames::Udp6(frames::kMacA, frames::kMacB, "fd00::1", "fd00::2", 9,
                      4791, frames::Bytes(8, 0)));
  Inject(frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1", "10.0.0.2", 9,
                      4791, frames::Bytes(8, 0)));
  Inject(frames::Udp6(frames::kMacA, frames::kMacB, "fd00::1", "fd00::2", 9,
                      4792, frames::Bytes(8, 0)));
  listed = List();
  ASSERT_EQ(listed.stats_size(), 1);
  EXPECT_EQ(listed.stats(0).packets(), 1u);
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

// A WatchStats client asking for the longest interval (2^32-1 ms) and then
// cancelling must not keep a server thread asleep for 49 days: the server's
// shutdown waits for every handler thread, so it would hang. (Found by the
// control-plane abuse test, tests/integration/grpc_abuse.sh.)
TEST_F(ControlApiTest, CancelledWatchStatsWithHugeIntervalFreesItsThread) {
  grpc::ClientContext watch;
  v1::WatchStatsRequest slow;
  slow.set_interval_ms(UINT32_MAX);
  v1::Stats stats;
  auto stream = stub_->WatchStats(&watch, slow);
  ASSERT_TRUE(stream->Read(&stats));  // the first snapshot comes at once
  watch.TryCancel();
  while (stream->Read(&stats)) {
  }
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::CANCELLED);
  // Bounded: a handler still asleep would block Shutdown for 49 days.
  auto done = std::make_shared<absl::Notification>();
  std::thread([server = server_.get(), done] {
    server->Shutdown();
    done->Notify();
  }).detach();
  if (!done->WaitForNotificationWithTimeout(absl::Seconds(60))) {
    ADD_FAILURE() << "ControlServer::Shutdown still waits for the cancelled "
                     "WatchStats handler after 60 s";
    std::_Exit(1);  // the stuck thread would hang the test's exit too
  }
}

// Generated DiAD operations (RemoteWrite/StreamSend generate_count) of all
// requests together hold at most kMaxGenerateBytes: 100 clients asking for
// 1 GiB each must not make spinnicd hold 100 GiB (found by grpc_abuse).
TEST(GenerateReservationTest, AllRequestsTogetherStayWithinTheLimit) {
  ASSERT_EQ(GenerateReservation::InFlight(), 0u);
  {
    absl::StatusOr<GenerateReservation> first =
        GenerateReservation::Acquire(kMaxGenerateBytes - 10);
    ASSERT_TRUE(first.ok()) << first.status();
    absl::StatusOr<GenerateReservation> small =
        GenerateReservation::Acquire(10);
    ASSERT_TRUE(small.ok()) << small.status();
    absl::StatusOr<GenerateReservation> over = GenerateReservation::Acquire(1);
    ASSERT_FALSE(over.ok());
    EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_THAT(over.status().message(),
                HasSubstr("other requests hold 1073741824 bytes"));
    EXPECT_EQ(GenerateReservation::InFlight(), kMaxGenerateBytes);
  }
  EXPECT_EQ(GenerateReservation::InFlight(), 0u);
  absl::StatusOr<GenerateReservation> again =
      GenerateReservation::Acquire(kMaxGenerateBytes);
  EXPECT_TRUE(again.ok()) << again.status();
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
  Inject(frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1", "10.0.0.2", 1,
                      2, frames::Bytes(8, 0)));
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
}

TEST_F(ControlApiTest, RegionRegisterWriteReadDeregister) {
  absl::StatusOr<v1::RegisterRegionResponse> region =
      Register(4096, true, true, "buf");
  ASSERT_TRUE(region.ok()) << region.status();
  EXPECT_NE(region->rkey(), 0u);
  EXPECT_EQ(region->length(), 4096u);
  EXPECT_EQ(region->base_address() % 4096, 0u);
  EXPECT_GE(region->base_address(), uint64_t{1} << 32);
  EXPECT_LT(region->base_address() + 4096, uint64_t{1} << 47);

  v1::ListRegionsResponse listed = Regions();
  ASSERT_EQ(listed.regions_size(), 1);
  EXPECT_EQ(listed.regions(0).id(), region->id());
  EXPECT_EQ(listed.regions(0).name(), "buf");
  EXPECT_EQ(listed.regions(0).rkey(), region->rkey());
  EXPECT_EQ(listed.regions(0).base_address(), region->base_address());
  EXPECT_TRUE(listed.regions(0).access().local_write());
  EXPECT_TRUE(listed.regions(0).access().remote_read());

  ASSERT_TRUE(Write(region->id(), 100, "hello, region").ok());
  std::string data;
  ASSERT_TRUE(Read(region->id(), 100, 13, &data).ok());
  EXPECT_EQ(data, "hello, region");
  // Length 0 reads to the end; the rest of the region is zero.
  ASSERT_TRUE(Read(region->id(), 0, 0, &data).ok());
  std::string expected(4096, '\0');
  expected.replace(100, 13, "hello, region");
  EXPECT_EQ(data, expected);
  // The last byte is inside; one more is not, for reads and for writes.
  EXPECT_TRUE(Write(region->id(), 4095, "x").ok());
  grpc::Status status = Read(region->id(), 4095, 2, &data);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::OUT_OF_RANGE);
  EXPECT_THAT(status.error_message(), HasSubstr("4096 bytes"));
  EXPECT_EQ(Write(region->id(), 4095, "xy").error_code(),
            grpc::StatusCode::OUT_OF_RANGE);
  EXPECT_EQ(Write(region->id(), ~uint64_t{0}, "x").error_code(),
            grpc::StatusCode::OUT_OF_RANGE);
  ASSERT_TRUE(Read(region->id(), 4094, 2, &data).ok());
  EXPECT_EQ(data, std::string("\0x", 2));

  ASSERT_TRUE(Deregister(region->id()).ok());
  EXPECT_EQ(Regions().regions_size(), 0);
  EXPECT_EQ(Deregister(region->id()).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Read(region->id(), 0, 1, &data).error_code(),
            grpc::StatusCode::NOT_FOUND);
  // Ids are never reused: a stale id cannot name a new region.
  absl::StatusOr<v1::RegisterRegionResponse> next = Register(64, true, false);
  ASSERT_TRUE(next.ok());
  EXPECT_GT(next->id(), region->id());
}

TEST_F(ControlApiTest, BadRegionRequestsGetTheirCodeAndChangeNothing) {
  EXPECT_EQ(Register(0, true, true).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::Status no_access = Register(64, false, false).status();
  EXPECT_EQ(no_access.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(no_access.message(), HasSubstr("local_read"));
  // Over the configured limit (300 MiB here).
  absl::Status over_limit = Register(uint64_t{301} << 20, true, true).status();
  EXPECT_EQ(over_limit.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(over_limit.message(), HasSubstr("region_bytes_limit"));
  // Within the limit but beyond what the EAL (-m 256) has.
  absl::Status no_memory = Register(uint64_t{290} << 20, true, true).status();
  EXPECT_EQ(no_memory.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(no_memory.message(), HasSubstr("EAL memory"));
  EXPECT_EQ(Regions().regions_size(), 0);

  ASSERT_TRUE(Register(64, true, true, "dup").ok());
  EXPECT_EQ(Register(64, true, true, "dup").status().code(),
            absl::StatusCode::kAlreadyExists);
  std::string data;
  grpc::Status too_long = Read(Regions().regions(0).id(), 0, 2 << 20, &data);
  EXPECT_EQ(too_long.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Regions().regions_size(), 1);
}

TEST_F(ControlApiTest, RkeysAndAddressesAreDistinct) {
  std::set<uint32_t> rkeys;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (int i = 0; i < 64; ++i) {
    absl::StatusOr<v1::RegisterRegionResponse> region =
        Register(8192, false, true);
    ASSERT_TRUE(region.ok()) << region.status();
    rkeys.insert(region->rkey());
    for (const auto& [base, length] : ranges) {
      EXPECT_TRUE(region->base_address() >= base + length ||
                  base >= region->base_address() + region->length());
    }
    ranges.emplace_back(region->base_address(), region->length());
  }
  EXPECT_EQ(rkeys.size(), 64u);
  // Not a counter: consecutive rkeys are not consecutive numbers.
  std::vector<uint32_t> sorted(rkeys.begin(), rkeys.end());
  int adjacent = 0;
  for (size_t i = 1; i < sorted.size(); ++i) {
    adjacent += sorted[i] - sorted[i - 1] == 1;
  }
  EXPECT_LT(adjacent, 3);
  // The published table finds each by rkey in one probe.
  for (uint32_t rkey : rkeys) {
    ASSERT_NE(dataplane_->region_table()->FindByRkey(rkey), nullptr);
  }
}

TEST_F(ControlApiTest, HandlerWritesItsBoundRegionWhichCannotGoWhileBound) {
  absl::StatusOr<v1::RegisterRegionResponse> region =
      Register(1024, true, false);
  ASSERT_TRUE(region.ok());

  // capture needs a region; a region without local access cannot be bound.
  grpc::Status status = Call(Install("cap", "capture"));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("needs 1 bound region"));
  absl::StatusOr<v1::RegisterRegionResponse> remote_only =
      Register(1024, false, true);
  ASSERT_TRUE(remote_only.ok());
  v1::InstallHandlerRequest bad = Install("cap", "capture");
  bad.add_bound_regions(remote_only->id());
  EXPECT_EQ(Call(bad).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(List().handlers_size(), 0);

  v1::InstallHandlerRequest install = Install("cap", "capture");
  (*install.mutable_handler()->mutable_params())["snap"] = "128";
  install.add_bound_regions(region->id());
  ASSERT_TRUE(Call(install).ok());
  // ListHandlers gives the whole install request back, regions included.
  v1::ListHandlersResponse handlers = List();
  ASSERT_EQ(handlers.bound_regions().count("cap"), 1u);
  EXPECT_THAT(handlers.bound_regions().at("cap").ids(),
              ElementsAre(region->id()));
  v1::ListRegionsResponse listed = Regions();
  ASSERT_EQ(listed.regions(0).bound_to_size(), 1);
  EXPECT_EQ(listed.regions(0).bound_to(0), "cap");

  status = Deregister(region->id());
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(status.error_message(), HasSubstr("'cap'"));

  // A frame through the real HPU lands in the region as the handler's
  // documented record: length, captured length, the frame's bytes.
  frames::Bytes frame = frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1",
                                     "10.0.0.2", 1, 2, frames::Bytes(20, 0x5a));
  Inject(frame);
  std::string record;
  ASSERT_TRUE(Read(region->id(), 0, 128, &record).ok());
  uint32_t length = 0;
  uint32_t captured = 0;
  std::memcpy(&length, record.data(), 4);
  std::memcpy(&captured, record.data() + 4, 4);
  EXPECT_EQ(length, frame.size());
  EXPECT_EQ(captured, frame.size());
  EXPECT_EQ(record.substr(8, frame.size()),
            std::string(frame.begin(), frame.end()));

  grpc::ClientContext context;
  v1::RemoveHandlerRequest remove;
  remove.set_name("cap");
  v1::RemoveHandlerResponse removed;
  ASSERT_TRUE(stub_->RemoveHandler(&context, remove, &removed).ok());
  EXPECT_TRUE(List().bound_regions().empty());
  EXPECT_TRUE(Deregister(region->id()).ok());
}

TEST_F(ControlApiTest, PinnedRegionCannotBeDeregistered) {
  absl::StatusOr<v1::RegisterRegionResponse> region =
      Register(4096, false, true);
  ASSERT_TRUE(region.ok());
  const MemoryRegion* found =
      dataplane_->region_table()->FindByRkey(region->rkey());
  ASSERT_NE(found, nullptr);
  // What a transport does with a remote access: translate with bounds and
  // rights, pin for the transfer.
  uint64_t base = region->base_address();
  EXPECT_EQ(found->Translate(base, 4096, kRemoteWrite).size(), 4096u);
  EXPECT_EQ(found->Translate(base + 4000, 96, kRemoteRead).size(), 96u);
  EXPECT_TRUE(found->Translate(base + 4000, 97, kRemoteRead).empty());
  EXPECT_TRUE(found->Translate(base - 1, 1, kRemoteRead).empty());
  EXPECT_TRUE(found->Translate(base, 1, kLocalWrite).empty());
  EXPECT_TRUE(found->Translate(base + 8, ~uint64_t{0}, kRemoteRead).empty());

  ASSERT_TRUE(found->Pin());
  grpc::Status status = Deregister(region->id());
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(status.error_message(), HasSubstr("in-flight"));
  EXPECT_EQ(Regions().regions_size(), 1);
  found->Unpin();
  EXPECT_TRUE(Deregister(region->id()).ok());
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
