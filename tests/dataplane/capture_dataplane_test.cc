// Frame capture (dataplane/capture.h) in the real HPU loop on in-process
// net_ring ports: the HPU is polled on the test thread, so every count is
// exact. What the filter passes is captured byte for byte and nothing else;
// drops carry their reason; an unpublished session gets nothing more; a
// full buffer is a counted miss while traffic flows on.
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dataplane/capture.h"
#include "dataplane/dataplane.h"
#include "dataplane/pcap_filter.h"
#include "gtest/gtest.h"
#include "tests/common/frames.h"
#include "tests/common/ring_dataplane.h"
#include "tests/common/wire_ring.h"

namespace spinnic {
namespace {

using frames::Bytes;
using frames::kMacA;
using frames::kMacB;

constexpr int kWire = 0;
constexpr int kHost = 1;

class EalEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    absl::Status status =
        InitEal({"capture_dataplane_test", "--no-huge", "-m", "256", "--no-pci",
                 "--no-shconf", "--lcores", "0@0,1@0", "--log-level", "4"});
    ASSERT_TRUE(status.ok()) << status;
  }
};

struct Captured {
  Bytes data;
  uint32_t original_length;
  uint16_t port;
  CaptureStage stage;
  DropReason reason;
};

class CaptureDataplaneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static int instance = 0;
    ++instance;
    absl::StatusOr<std::unique_ptr<testing_rings::RingDataplane>> rings =
        testing_rings::RingDataplane::Create(absl::StrCat("cap", instance));
    ASSERT_TRUE(rings.ok()) << rings.status();
    rings_ = *std::move(rings);
    pool_ =
        rte_pktmbuf_pool_create(absl::StrCat("capt", instance).c_str(), 1023, 0,
                                0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
    ASSERT_NE(pool_, nullptr);
  }
  void TearDown() override {
    rings_.reset();
    rte_mempool_free(pool_);
  }

  Dataplane& dataplane() { return rings_->dataplane(); }

  void Inject(int side, const std::vector<Bytes>& frames) {
    for (const Bytes& frame : frames) {
      rte_mbuf* m = rte_pktmbuf_alloc(pool_);
      ASSERT_NE(m, nullptr);
      char* data = rte_pktmbuf_append(m, static_cast<uint16_t>(frame.size()));
      ASSERT_NE(data, nullptr);
      std::memcpy(data, frame.data(), frame.size());
      ASSERT_EQ(testing_wire::PutOnWire(rings_->rx(side), m), 0);
    }
  }

  // Polls until the input rings are empty (bounded).
  void Poll() {
    for (int i = 0; i < 100; ++i) {
      dataplane().hpu(0).PollOnce();
      if (rte_ring_count(rings_->rx(kWire)) == 0 &&
          rte_ring_count(rings_->rx(kHost)) == 0) {
        return;
      }
    }
    FAIL() << "the HPU did not take every frame in 100 polls";
  }

  std::vector<Bytes> Sent(int side) {
    std::vector<Bytes> out;
    void* m;
    while (testing_wire::TakeFromWire(rings_->tx(side), &m) == 0) {
      rte_mbuf* packet = static_cast<rte_mbuf*>(m);
      const uint8_t* p = rte_pktmbuf_mtod(packet, const uint8_t*);
      out.emplace_back(p, p + packet->data_len);
      rte_pktmbuf_free(packet);
    }
    return out;
  }

  std::shared_ptr<CaptureSession> Start(CaptureSessionConfig config,
                                        const std::string& filter) {
    std::unique_ptr<PcapFilter> compiled;
    if (!filter.empty()) {
      absl::StatusOr<std::unique_ptr<PcapFilter>> f =
          PcapFilter::Compile(filter);
      EXPECT_TRUE(f.ok()) << f.status();
      if (!f.ok()) return nullptr;
      compiled = *std::move(f);
    }
    absl::StatusOr<std::unique_ptr<CaptureSession>> session =
        CaptureSession::Create(config, std::move(compiled));
    EXPECT_TRUE(session.ok()) << session.status();
    if (!session.ok()) return nullptr;
    std::shared_ptr<CaptureSession> shared = *std::move(session);
    absl::Status status = dataplane().StartCapture(shared);
    EXPECT_TRUE(status.ok()) << status;
    return shared;
  }

  static std::vector<Captured> Drain(CaptureSession& session) {
    std::vector<Captured> out;
    session.Drain(SIZE_MAX, [&](const CapturedFrame& frame) {
      out.push_back({Bytes(frame.data.begin(), frame.data.end()),
                     frame.original_length, frame.port, frame.stage,
                     frame.drop_reason});
    });
    return out;
  }

  // UDP frames to port 5000 (even i) and 6000 (odd i), each numbered in
  // its payload.
  static std::vector<Bytes> MixedFrames(int count) {
    std::vector<Bytes> out;
    for (int i = 0; i < count; ++i) {
      out.push_back(frames::Udp4(kMacA, kMacB, "10.0.0.1", "10.0.0.2", 1234,
                                 i % 2 == 0 ? 5000 : 6000,
                                 Bytes(32 + i, static_cast<uint8_t>(i))));
    }
    return out;
  }

  std::unique_ptr<testing_rings::RingDataplane> rings_;
  rte_mempool* pool_ = nullptr;
};

TEST_F(CaptureDataplaneTest, RxFilterCapturesExactlyTheMatchingFrames) {
  CaptureSessionConfig config;
  config.port = kWire;
  config.stage = CaptureStage::kRx;
  config.port_name = "wire0";
  std::shared_ptr<CaptureSession> session = Start(config, "udp dst port 5000");
  ASSERT_NE(session, nullptr);
  const std::vector<Bytes> sent = MixedFrames(20);
  Inject(kWire, sent);
  Poll();

  std::vector<Captured> captured = Drain(*session);
  ASSERT_EQ(captured.size(), 10u);
  for (size_t i = 0; i < captured.size(); ++i) {
    EXPECT_EQ(captured[i].data, sent[2 * i]) << "frame " << i;
    EXPECT_EQ(captured[i].original_length, sent[2 * i].size());
    EXPECT_EQ(captured[i].port, kWire);
    EXPECT_EQ(captured[i].stage, CaptureStage::kRx);
    EXPECT_EQ(captured[i].reason, DropReason::kCount);
  }
  EXPECT_EQ(session->missed(), 0u);
  // Capture copies; every frame still went its way.
  EXPECT_EQ(Sent(kHost), sent);
  dataplane().StopCapture(session.get());
}

TEST_F(CaptureDataplaneTest, TxStageSeesTheForwardedFramesCutToSnaplen) {
  CaptureSessionConfig config;
  config.port = kHost;
  config.stage = CaptureStage::kTx;
  config.snaplen = 40;
  std::shared_ptr<CaptureSession> session = Start(config, "");
  ASSERT_NE(session, nullptr);
  const std::vector<Bytes> sent = MixedFrames(6);
  Inject(kWire, sent);
  Poll();

  std::vector<Captured> captured = Drain(*session);
  ASSERT_EQ(captured.size(), 6u);
  for (size_t i = 0; i < captured.size(); ++i) {
    EXPECT_EQ(captured[i].data, Bytes(sent[i].begin(), sent[i].begin() + 40));
    EXPECT_EQ(captured[i].original_length, sent[i].size());
    EXPECT_EQ(captured[i].port, kHost);
    EXPECT_EQ(captured[i].stage, CaptureStage::kTx);
  }
  EXPECT_EQ(Sent(kHost).size(), 6u);
  dataplane().StopCapture(session.get());
}

TEST_F(CaptureDataplaneTest, DropStageCarriesTheReason) {
  CaptureSessionConfig config;
  config.port = kWire;
  config.stage = CaptureStage::kDrop;
  std::shared_ptr<CaptureSession> session = Start(config, "");
  ASSERT_NE(session, nullptr);
  const Bytes runt = {0x02, 0, 0, 0, 0, 0x0b, 0x02, 0, 0};
  Bytes truncated =
      frames::Udp4(kMacA, kMacB, "10.0.0.1", "10.0.0.2", 1, 2, Bytes(40, 7));
  truncated.resize(30);  // the IPv4 header runs past the end
  const Bytes good =
      frames::Udp4(kMacA, kMacB, "10.0.0.1", "10.0.0.2", 1, 2, Bytes(40, 7));
  Inject(kWire, {runt, good, truncated});
  Poll();

  std::vector<Captured> captured = Drain(*session);
  ASSERT_EQ(captured.size(), 2u);
  EXPECT_EQ(captured[0].data, runt);
  EXPECT_EQ(captured[0].reason, DropReason::kRunt);
  EXPECT_EQ(captured[0].stage, CaptureStage::kDrop);
  EXPECT_EQ(captured[1].data, truncated);
  EXPECT_EQ(captured[1].reason, DropReason::kTruncated);
  EXPECT_EQ(Sent(kHost), std::vector<Bytes>{good});
  dataplane().StopCapture(session.get());
}

TEST_F(CaptureDataplaneTest, StoppedSessionGetsNothingMore) {
  CaptureSessionConfig config;
  config.port = kWire;
  std::shared_ptr<CaptureSession> session = Start(config, "udp");
  ASSERT_NE(session, nullptr);
  Inject(kWire, MixedFrames(4));
  Poll();
  dataplane().StopCapture(session.get());
  Inject(kWire, MixedFrames(8));
  Poll();
  // The four from before the stop, none after.
  EXPECT_EQ(Drain(*session).size(), 4u);
  EXPECT_EQ(session->missed(), 0u);
  EXPECT_EQ(Sent(kHost).size(), 12u);
  // The port and stage are free again.
  std::shared_ptr<CaptureSession> again = Start(config, "");
  ASSERT_NE(again, nullptr);
  dataplane().StopCapture(again.get());
}

TEST_F(CaptureDataplaneTest, FullBufferIsACountedMissNotAStall) {
  CaptureSessionConfig config;
  config.port = kWire;
  config.buffer_frames = 4;
  std::shared_ptr<CaptureSession> session = Start(config, "");
  ASSERT_NE(session, nullptr);
  const std::vector<Bytes> sent = MixedFrames(10);
  Inject(kWire, sent);
  Poll();
  std::vector<Captured> captured = Drain(*session);
  ASSERT_EQ(captured.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(captured[i].data, sent[i]);
  EXPECT_EQ(session->missed(), 6u);
  EXPECT_EQ(Sent(kHost).size(), 10u);
  // Drained, the buffer takes frames again.
  Inject(kWire, MixedFrames(2));
  Poll();
  EXPECT_EQ(Drain(*session).size(), 2u);
  EXPECT_EQ(session->missed(), 6u);
  dataplane().StopCapture(session.get());
}

TEST_F(CaptureDataplaneTest, OneSessionPerPortAndStage) {
  CaptureSessionConfig config;
  config.port = kWire;
  config.stage = CaptureStage::kRx;
  std::shared_ptr<CaptureSession> first = Start(config, "udp port 5000");
  ASSERT_NE(first, nullptr);
  config.port_name = "wire0";
  absl::StatusOr<std::unique_ptr<CaptureSession>> second =
      CaptureSession::Create(config, nullptr);
  ASSERT_TRUE(second.ok());
  absl::Status status = dataplane().StartCapture(
      std::shared_ptr<CaptureSession>(*std::move(second)));
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(),
            "port wire0 stage rx is already being captured (filter \"udp "
            "port 5000\"); one capture per port and stage: end that one "
            "first");
  // Another stage of the same port is free.
  config.stage = CaptureStage::kDrop;
  std::shared_ptr<CaptureSession> drops = Start(config, "");
  ASSERT_NE(drops, nullptr);
  dataplane().StopCapture(first.get());
  dataplane().StopCapture(drops.get());
}

}  // namespace
}  // namespace spinnic

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new spinnic::EalEnvironment());
  return RUN_ALL_TESTS();
}
