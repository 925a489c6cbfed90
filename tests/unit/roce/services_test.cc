// The QP services (dataplane/roce/qp_service.h) against a recording
// QpActions: which work requests each posts for each message, with the
// exact bytes the real clients (rping, perftest -R, rdma_cm clients reading
// the REP's private data) parse.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "dataplane/dataplane.h"
#include "dataplane/roce/connection_regions.h"
#include "dataplane/roce/perftest_service.h"
#include "dataplane/roce/roce_engine.h"
#include "dataplane/roce/rping_service.h"
#include "dataplane/roce/verbs_service.h"

namespace spinnic::roce {
namespace {

using Bytes = std::vector<uint8_t>;

class EalEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    ASSERT_TRUE(InitEal({"roce_services_test", "--no-huge", "-m", "256",
                         "--no-pci", "--no-shconf", "--log-level", "4"})
                    .ok());
  }
};
const auto* const kEal =
    ::testing::AddGlobalTestEnvironment(new EalEnvironment);

struct Posted {
  enum class Kind { kSend, kRead, kWrite } kind;
  Bytes bytes;               // SEND/WRITE: what was handed over
  uint8_t* local = nullptr;  // READ: where the data goes
  uint32_t length = 0;
  uint64_t remote_va = 0;
  uint32_t rkey = 0;
  bool has_immediate = false;
  uint32_t immediate = 0;
  uint32_t tag = 0;
};

class RecordingActions final : public QpActions {
 public:
  explicit RecordingActions(uint32_t qpn) : qpn_(qpn) {}

  bool PostSend(std::span<const uint8_t> bytes, uint32_t tag) override {
    posted.push_back({Posted::Kind::kSend, Bytes(bytes.begin(), bytes.end()),
                      nullptr, static_cast<uint32_t>(bytes.size()), 0, 0, false,
                      0, tag});
    return accept_posts;
  }
  bool PostRead(std::span<uint8_t> local, uint64_t remote_va, uint32_t rkey,
                uint32_t tag) override {
    posted.push_back({Posted::Kind::kRead,
                      {},
                      local.data(),
                      static_cast<uint32_t>(local.size()),
                      remote_va,
                      rkey,
                      false,
                      0,
                      tag});
    return accept_posts;
  }
  bool PostWrite(std::span<const uint8_t> local, uint64_t remote_va,
                 uint32_t rkey, const uint32_t* immediate,
                 uint32_t tag) override {
    posted.push_back({Posted::Kind::kWrite, Bytes(local.begin(), local.end()),
                      nullptr, static_cast<uint32_t>(local.size()), remote_va,
                      rkey, immediate != nullptr,
                      immediate != nullptr ? *immediate : 0, tag});
    return accept_posts;
  }
  void ReportSend(const ReceivedSend& send) override {
    reported.emplace_back(send.bytes.begin(), send.bytes.end());
  }
  QpService* Sibling(uint32_t remote_qpn) override {
    last_sibling_qpn = remote_qpn;
    return sibling;
  }
  void Fail() override { ++failed; }
  uint32_t qpn() const override { return qpn_; }
  RoceCounters& counters() override { return counters_; }
  const naaice::FunctionTable& naaice_functions() override {
    return functions_;
  }

  std::vector<Posted> posted;
  std::vector<Bytes> reported;
  QpService* sibling = nullptr;
  uint32_t last_sibling_qpn = 0;
  bool accept_posts = true;
  int failed = 0;

 private:
  uint32_t qpn_;
  RoceCounters counters_;
  naaice::FunctionTable functions_ = naaice::BuiltinFunctions();
};

ReceivedSend Message(const Bytes& bytes) {
  ReceivedSend send;
  send.bytes = bytes;
  return send;
}

Bytes BigEndian64(uint64_t v) {
  Bytes out(8);
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(v >> (56 - 8 * i));
  return out;
}

Bytes BigEndian32(uint32_t v) {
  return {static_cast<uint8_t>(v >> 24), static_cast<uint8_t>(v >> 16),
          static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v)};
}

Bytes RpingMessage(uint64_t buf, uint32_t rkey, uint32_t size) {
  Bytes out = BigEndian64(buf);
  for (uint8_t b : BigEndian32(rkey)) out.push_back(b);
  for (uint8_t b : BigEndian32(size)) out.push_back(b);
  return out;
}

// ------------------------------------------------------- ConnectionRegions

TEST(ConnectionRegionsTest, ResolvesOnlyItsOwnBytesWithPerQpRkeys) {
  ConnectionRegions regions(0x105, 8192);
  ConnectionRegions::Region a;
  ASSERT_EQ(regions.Allocate(4096, &a), ConnectionRegions::Status::kOk);
  EXPECT_EQ(a.id, 1u);
  EXPECT_EQ(a.rkey, 0x10501u);
  EXPECT_EQ(a.bytes.size(), 4096u);
  EXPECT_EQ(a.bytes[0], 0);  // zeroed
  EXPECT_EQ(regions.Resolve(a.rkey, a.address, 4096), a.bytes.data());
  EXPECT_EQ(regions.Resolve(a.rkey, a.address + 4000, 96),
            a.bytes.data() + 4000);
  EXPECT_EQ(regions.Resolve(a.rkey, a.address + 4000, 97), nullptr);
  EXPECT_EQ(regions.Resolve(a.rkey, a.address - 1, 1), nullptr);
  EXPECT_EQ(regions.Resolve(a.rkey + 1, a.address, 1), nullptr);
  ConnectionRegions::Region b;
  EXPECT_EQ(regions.Allocate(4097, &b),
            ConnectionRegions::Status::kNotEnoughMemory);
  ASSERT_EQ(regions.Allocate(4096, &b), ConnectionRegions::Status::kOk);
  EXPECT_EQ(regions.bytes(), 8192u);
  regions.Free(a.id);
  EXPECT_EQ(regions.Resolve(a.rkey, a.address, 1), nullptr);
  EXPECT_EQ(regions.bytes(), 4096u);
}

TEST(ConnectionRegionsTest, RefusesTheThirtyThirdRegion) {
  ConnectionRegions regions(0x100, 1 << 20);
  ConnectionRegions::Region r;
  for (uint32_t i = 0; i < ConnectionRegions::kMaxRegions; ++i) {
    ASSERT_EQ(regions.Allocate(64, &r), ConnectionRegions::Status::kOk);
  }
  EXPECT_EQ(regions.Allocate(64, &r),
            ConnectionRegions::Status::kTooManyRegions);
}

// ------------------------------------------------------------------ verbs

TEST(VerbsServiceTest, AdvertisesItsRegionInTheRepPrivateData) {
  VerbsService service(0x101, 65536);
  std::array<uint8_t, 196> data{};
  ASSERT_EQ(service.RepPrivateData(data), kVerbsPrivateDataBytes);
  const ConnectionRegions::Region& region = service.region();
  Bytes want = BigEndian64(region.address);
  for (uint8_t b : BigEndian32(region.rkey)) want.push_back(b);
  EXPECT_EQ(Bytes(data.begin(), data.begin() + 12), want);
  EXPECT_EQ(data[12], 0);
  EXPECT_EQ(region.rkey, 0x10101u);
  EXPECT_EQ(service.regions().Resolve(region.rkey, region.address, 65536),
            region.bytes.data());
}

TEST(VerbsServiceTest, AGrpcQpHasNoRegionAndReportsSends) {
  VerbsService service(0x102, 0);
  std::array<uint8_t, 196> data{};
  EXPECT_EQ(service.RepPrivateData(data), 0u);
  RecordingActions qp(0x102);
  const Bytes message = {1, 2, 3, 4, 5, 6, 7, 8};
  service.OnSend(Message(message), qp);
  ASSERT_EQ(qp.reported.size(), 1u);
  EXPECT_EQ(qp.reported[0], message);
  EXPECT_TRUE(qp.posted.empty());
}

// ------------------------------------------------------------------ rping

TEST(RpingServiceTest, ReadsSendsWritesSendsPerIteration) {
  RpingService service(0x103);
  RecordingActions qp(0x103);
  for (int iteration = 0; iteration < 3; ++iteration) {
    const uint32_t size = 64 + iteration;
    service.OnSend(Message(RpingMessage(0x7f0000001000, 0x1234, size)), qp);
    ASSERT_EQ(qp.posted.size(), 1u);
    Posted read = qp.posted[0];
    EXPECT_EQ(read.kind, Posted::Kind::kRead);
    EXPECT_EQ(read.length, size);
    EXPECT_EQ(read.remote_va, 0x7f0000001000u);
    EXPECT_EQ(read.rkey, 0x1234u);
    // The READ's data lands; then "go ahead".
    const std::string ping = "rdma-ping-" + std::to_string(iteration);
    std::memcpy(read.local, ping.data(), ping.size());
    qp.posted.clear();
    service.OnCompletion(read.tag, CompletionStatus::kSuccess, qp);
    ASSERT_EQ(qp.posted.size(), 1u);
    EXPECT_EQ(qp.posted[0].kind, Posted::Kind::kSend);
    EXPECT_EQ(qp.posted[0].length, kRpingMessageBytes);
    RpingInfo ours;
    ASSERT_TRUE(ParseRpingInfo(qp.posted[0].bytes, &ours));
    EXPECT_EQ(ours.size, size);
    EXPECT_EQ(service.state(), RpingService::State::kAwaitSink);
    // The client's sink: the bytes we read go there.
    qp.posted.clear();
    service.OnSend(Message(RpingMessage(0x7f0000002000, 0x5678, size)), qp);
    ASSERT_EQ(qp.posted.size(), 1u);
    const Posted write = qp.posted[0];
    EXPECT_EQ(write.kind, Posted::Kind::kWrite);
    EXPECT_EQ(write.remote_va, 0x7f0000002000u);
    EXPECT_EQ(write.rkey, 0x5678u);
    EXPECT_FALSE(write.has_immediate);
    ASSERT_EQ(write.length, size);
    EXPECT_EQ(
        std::string(write.bytes.begin(), write.bytes.begin() + ping.size()),
        ping);
    qp.posted.clear();
    service.OnCompletion(write.tag, CompletionStatus::kSuccess, qp);
    ASSERT_EQ(qp.posted.size(), 1u);
    EXPECT_EQ(qp.posted[0].kind, Posted::Kind::kSend);
    EXPECT_EQ(qp.posted[0].length, kRpingMessageBytes);
    qp.posted.clear();
    // Our SEND's own completion changes nothing.
    service.OnCompletion(3, CompletionStatus::kSuccess, qp);
    EXPECT_TRUE(qp.posted.empty());
  }
  EXPECT_EQ(service.iterations(), 3u);
  EXPECT_EQ(qp.failed, 0);
}

TEST(RpingServiceTest, BadMessagesFailTheConnection) {
  struct Case {
    const char* name;
    Bytes message;
  };
  const Case cases[] = {
      {"short", Bytes(15, 0)},
      {"long", Bytes(17, 0)},
      {"size 0", RpingMessage(0x1000, 1, 0)},
      {"size above 64 KiB", RpingMessage(0x1000, 1, kRpingBufferBytes + 1)},
  };
  for (const Case& c : cases) {
    RpingService service(0x104);
    RecordingActions qp(0x104);
    service.OnSend(Message(c.message), qp);
    EXPECT_EQ(qp.failed, 1) << c.name;
    EXPECT_TRUE(qp.posted.empty()) << c.name;
    EXPECT_EQ(service.state(), RpingService::State::kFailed) << c.name;
  }
}

TEST(RpingServiceTest, AMessageWhileReadingBreaksTheProtocol) {
  RpingService service(0x105);
  RecordingActions qp(0x105);
  service.OnSend(Message(RpingMessage(0x1000, 1, 64)), qp);
  service.OnSend(Message(RpingMessage(0x2000, 2, 64)), qp);
  EXPECT_EQ(qp.failed, 1);
  EXPECT_EQ(qp.posted.size(), 1u);  // only the first READ
}

TEST(RpingServiceTest, AFailedReadSendsNothingMore) {
  RpingService service(0x106);
  RecordingActions qp(0x106);
  service.OnSend(Message(RpingMessage(0x1000, 1, 64)), qp);
  const uint32_t tag = qp.posted[0].tag;
  qp.posted.clear();
  service.OnCompletion(tag, CompletionStatus::kRemoteAccessError, qp);
  EXPECT_TRUE(qp.posted.empty());
  EXPECT_EQ(service.state(), RpingService::State::kFailed);
}

// --------------------------------------------------------------- perftest

const std::array<uint8_t, 16> kOurGid = {0, 0, 0,    0,    0,   0, 0, 0,
                                         0, 0, 0xff, 0xff, 192, 0, 2, 11};

TEST(PerftestServiceTest, AnswersEachMessageWithOneOfTheSameSize) {
  PerftestService control(0x107, 1 << 20, kOurGid, 16);
  RecordingActions qp(0x107);
  Bytes version(16, 0);
  std::memcpy(version.data(), "5.70", 4);
  control.OnSend(Message(version), qp);
  ASSERT_EQ(qp.posted.size(), 1u);
  Bytes want_version(16, 0);
  std::memcpy(want_version.data(), "6.06", 4);
  EXPECT_EQ(qp.posted.back().bytes, want_version);
  const Bytes page = BigEndian32(4096);
  control.OnSend(Message(page), qp);
  EXPECT_EQ(qp.posted.back().bytes, page);  // echoed
  const Bytes mtu = {'4', '0'};
  control.OnSend(Message(mtu), qp);
  EXPECT_EQ(qp.posted.back().bytes, mtu);
  const Bytes report = BigEndian64(0x4050000000000000);
  control.OnSend(Message(report), qp);
  EXPECT_EQ(qp.posted.back().bytes, Bytes(8, 0));  // our report: nothing
  EXPECT_EQ(qp.posted.size(), 4u);
  EXPECT_EQ(control.exchanges(), 4u);
  EXPECT_EQ(qp.failed, 0);
}

TEST(PerftestServiceTest, OurDestinationNamesTheDataConnectionsRegion) {
  PerftestService control(0x108, 1 << 20, kOurGid, 16);
  // A later connection from the peer (the engine's): named, it is data.
  PerftestService data(0x109, 1 << 20, kOurGid, 16,
                       PerftestService::Role::kUndecided);
  RecordingActions qp(0x108);
  qp.sibling = &data;
  control.OnSend(Message(Bytes(kPingpongDestBytes, 0xee)), qp);
  ASSERT_EQ(qp.posted.size(), 1u);
  const Bytes& sent = qp.posted[0].bytes;
  ASSERT_EQ(sent.size(), kPingpongDestBytes);
  const ConnectionRegions::Region& region = data.DataRegion();
  ASSERT_NE(region.id, 0u);
  EXPECT_EQ(region.bytes.size(), 1u << 20);
  Bytes want;
  for (uint32_t v : {0u, 16u, 0x109u, 0u, region.rkey, 0u}) {
    for (uint8_t b : BigEndian32(v)) want.push_back(b);
  }
  for (uint8_t b : BigEndian64(region.address)) want.push_back(b);
  want.insert(want.end(), kOurGid.begin(), kOurGid.end());
  for (uint8_t b : BigEndian32(0)) want.push_back(b);
  for (uint8_t b : BigEndian32(0)) want.push_back(b);
  EXPECT_EQ(sent, want);
  PingpongDest parsed;
  ASSERT_TRUE(ParsePingpongDest(sent, &parsed));
  EXPECT_EQ(parsed.qpn, 0x109u);
  EXPECT_EQ(parsed.vaddr, region.address);
  EXPECT_EQ(data.role(), PerftestService::Role::kData);
  // The data connection resolves what it advertised, the control one not.
  EXPECT_NE(data.regions().Resolve(region.rkey, region.address, 4096), nullptr);
  EXPECT_EQ(control.regions().Resolve(region.rkey, region.address, 4096),
            nullptr);
}

TEST(PerftestServiceTest, WithoutADataConnectionItNamesItself) {
  PerftestService control(0x10a, 65536, kOurGid, 4);
  RecordingActions qp(0x10a);
  control.OnSend(Message(Bytes(kPingpongDestBytes, 0)), qp);
  PingpongDest parsed;
  ASSERT_TRUE(ParsePingpongDest(qp.posted[0].bytes, &parsed));
  EXPECT_EQ(parsed.qpn, 0x10au);
  EXPECT_EQ(parsed.out_reads, 4u);
  EXPECT_EQ(parsed.gid, kOurGid);
  EXPECT_EQ(parsed.rkey, 0u);  // no region until the data connection
  EXPECT_EQ(parsed.vaddr, 0u);
  EXPECT_EQ(control.regions().bytes(), 0u);
}

TEST(PerftestServiceTest, ARefusedPostFailsTheConnection) {
  PerftestService control(0x10b, 65536, kOurGid, 4);
  RecordingActions qp(0x10b);
  qp.accept_posts = false;
  control.OnSend(Message(BigEndian32(64)), qp);
  EXPECT_EQ(qp.failed, 1);
}

TEST(PerftestServiceTest, EachOfTheClientsQpsGetsItsOwnDataConnection) {
  // ib_write_bw -q 4: the client's destination per QP names its QP; ours
  // names the data connection connected to it (the engine's Sibling(qpn)).
  PerftestService control(0x10c, 65536, kOurGid, 4);
  PerftestService data(0x10d, 65536, kOurGid, 4, PerftestService::Role::kData);
  ASSERT_EQ(data.Prepare(), ConnectionRegions::Status::kOk);
  RecordingActions qp(0x10c);
  qp.sibling = &data;
  PingpongDest theirs;
  theirs.qpn = 0x33;
  theirs.rkey = 0x4711;
  theirs.vaddr = 0x7000;
  Bytes bytes(kPingpongDestBytes);
  WritePingpongDest(theirs,
                    std::span<uint8_t, kPingpongDestBytes>(bytes.data(), 56));
  control.OnSend(Message(bytes), qp);
  EXPECT_EQ(qp.last_sibling_qpn, 0x33u);
  PingpongDest ours;
  ASSERT_TRUE(ParsePingpongDest(qp.posted.back().bytes, &ours));
  EXPECT_EQ(ours.qpn, 0x10du);
  EXPECT_EQ(ours.rkey, data.DataRegion().rkey);
  // The data connection takes SENDs into its region (ib_send_bw), up to
  // the region's size.
  EXPECT_EQ(data.ReceiveArea().size(), 65536u);
  EXPECT_FALSE(data.wants_writes());  // ib_write_lat: docs/interop.md
  EXPECT_FALSE(control.wants_writes());
  EXPECT_TRUE(control.ReceiveArea().empty());
}

TEST(PerftestServiceTest, AnUndecidedConnectionSendingTheVersionIsControl) {
  // Another perftest's control connection from the same address: its
  // version message decides it; its region goes back, and the engine is
  // told to receive into a buffer of the control messages' size.
  PerftestService later(0x10e, 65536, kOurGid, 4,
                        PerftestService::Role::kUndecided);
  ASSERT_EQ(later.Prepare(), ConnectionRegions::Status::kOk);
  EXPECT_EQ(later.ReceiveArea().size(), 65536u);
  EXPECT_FALSE(later.TakeReceiveAreaChange());
  RecordingActions qp(0x10e);
  Bytes version(kPerftestVersionBytes, 0);
  std::memcpy(version.data(), "6.10", 4);
  later.OnSend(Message(version), qp);
  Bytes want(kPerftestVersionBytes, 0);
  std::memcpy(want.data(), "6.06", 4);
  ASSERT_EQ(qp.posted.size(), 1u);
  EXPECT_EQ(qp.posted.back().bytes, want);
  EXPECT_EQ(later.role(), PerftestService::Role::kControl);
  EXPECT_TRUE(later.TakeReceiveAreaChange());
  EXPECT_FALSE(later.TakeReceiveAreaChange());
  EXPECT_TRUE(later.ReceiveArea().empty());
  EXPECT_EQ(later.regions().bytes(), 65536u);  // until the engine says
  later.ReleaseRegion();
  EXPECT_EQ(later.regions().bytes(), 0u);
  // A control connection is never named as another's data connection.
  PerftestService control(0x10f, 65536, kOurGid, 4);
  RecordingActions control_qp(0x10f);
  control_qp.sibling = &later;
  PingpongDest theirs;
  theirs.qpn = 0x34;
  theirs.rkey = 0x4712;
  Bytes bytes(kPingpongDestBytes);
  WritePingpongDest(theirs,
                    std::span<uint8_t, kPingpongDestBytes>(bytes.data(), 56));
  control.OnSend(Message(bytes), control_qp);
  PingpongDest ours;
  ASSERT_TRUE(ParsePingpongDest(control_qp.posted.back().bytes, &ours));
  EXPECT_EQ(ours.qpn, 0x10fu);  // itself, no region
  EXPECT_EQ(ours.rkey, 0u);
}

TEST(PerftestServiceTest, AnUndecidedConnectionSendingDataIsData) {
  PerftestService later(0x110, 65536, kOurGid, 4,
                        PerftestService::Role::kUndecided);
  ASSERT_EQ(later.Prepare(), ConnectionRegions::Status::kOk);
  RecordingActions qp(0x110);
  later.OnSend(Message(Bytes(4096, 7)), qp);
  EXPECT_EQ(later.role(), PerftestService::Role::kData);
  EXPECT_FALSE(later.TakeReceiveAreaChange());
  ASSERT_EQ(qp.posted.size(), 1u);  // ib_send_lat: sent back
  EXPECT_EQ(qp.posted[0].length, 4096u);
}

// perftest tells its server neither -b nor the test: the client's
// receives decide. One answer at a time until the client takes one; then
// every message is answered, up to 16 in flight.
TEST(PerftestServiceTest, EveryMessageIsAnsweredOnceTheClientTakesAnswers) {
  PerftestService data(0x111, 65536, kOurGid, 4,
                       PerftestService::Role::kUndecided);
  ASSERT_EQ(data.Prepare(), ConnectionRegions::Status::kOk);
  RecordingActions qp(0x111);
  for (int i = 0; i < 100; ++i) data.OnSend(Message(Bytes(512, 1)), qp);
  // Plain ib_send_bw: its first answer is never taken (RNR NAKs).
  ASSERT_EQ(qp.posted.size(), 1u);
  EXPECT_EQ(qp.posted[0].length, 512u);
  // ib_send_bw -b: it is; the owed 99 follow, 16 at a time.
  data.OnCompletion(qp.posted[0].tag, CompletionStatus::kSuccess, qp);
  EXPECT_EQ(qp.posted.size(), 17u);
  size_t completed = 1;
  while (completed < qp.posted.size()) {
    data.OnCompletion(qp.posted[completed++].tag, CompletionStatus::kSuccess,
                      qp);
    EXPECT_LE(qp.posted.size() - completed, 16u);
  }
  EXPECT_EQ(qp.posted.size(), 100u);
  for (const auto& p : qp.posted) EXPECT_EQ(p.length, 512u);
  // A flushed answer (the client went away) sends nothing more: 16 in
  // flight, 4 owed.
  for (int i = 0; i < 20; ++i) data.OnSend(Message(Bytes(512, 1)), qp);
  ASSERT_EQ(qp.posted.size(), 116u);
  data.OnCompletion(qp.posted[100].tag, CompletionStatus::kFlushed, qp);
  EXPECT_EQ(qp.posted.size(), 116u);
  EXPECT_EQ(qp.failed, 0);
}

}  // namespace
}  // namespace spinnic::roce
