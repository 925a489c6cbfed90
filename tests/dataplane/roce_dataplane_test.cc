// The RoCEv2 transport in the real dataplane: a scripted RDMA requester
// builds frames with the transport's own wire code (golden-tested against
// real soft-RoCE captures in tests/unit/roce) and sends them into a
// Dataplane's wire ring; the HPUs are driven by hand (Hpu::PollOnce), so
// every frame in and out is exact. Every test runs twice: with one HPU, and
// with two, where the test's QP is owned by HPU 1 while its frames arrive at
// HPU 0 (the port has one queue) and are handed over, and the CM's QPs
// land on HPU 0 or 1 round robin.
#include <gtest/gtest.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "dataplane/classifier.h"
#include "dataplane/common/byte_order.h"
#include "dataplane/common/checksum.h"
#include "dataplane/dataplane.h"
#include "dataplane/roce/cm.h"
#include "dataplane/roce/cm_service.h"
#include "dataplane/roce/cnp.h"
#include "dataplane/roce/echo_service.h"
#include "dataplane/roce/ib_types.h"
#include "dataplane/roce/mrsp.h"
#include "dataplane/roce/perftest_service.h"
#include "dataplane/roce/responder.h"
#include "dataplane/roce/roce_engine.h"
#include "dataplane/roce/roce_module.h"
#include "dataplane/roce/wire.h"
#include "handlers/naaice/function.h"
#include "tests/common/message_recorder.h"
#include "tests/common/ring_dataplane.h"
#include "tests/common/wire_ring.h"

namespace spinnic {
namespace {

using roce::Bth;
using roce::ExtHeaders;
using roce::Opcode;
using testing_rings::RingDataplane;
using testing_rings::RingDataplaneOptions;
using Bytes = std::vector<uint8_t>;
using testing_messages::MessageRecorder;
using testing_messages::RecordedMessage;
using testing_messages::RecordedMessages;
SPINNIC_HANDLER(MessageRecorder);

constexpr roce::Mac kDutMac = {0x02, 0, 0, 0, 0, 0x0a};
constexpr roce::Mac kClientMac = {0x02, 0, 0, 0, 0, 0x0c};
const roce::Gid kDutIp = roce::Ipv4Mapped(0xc000020b);     // 192.0.2.11
const roce::Gid kClientIp = roce::Ipv4Mapped(0xc000020c);  // 192.0.2.12
constexpr uint32_t kClientQpn = 0x11;
constexpr uint32_t kClientPsn = 0x123456;
constexpr uint32_t kPmtu = 1024;
constexpr uint16_t kListenPort = 7174;
constexpr uint16_t kNaaicePort = 12345;

class EalEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    ASSERT_TRUE(
        InitEal({"roce_dataplane_test", "--no-huge", "-m", "512", "--no-pci",
                 "--no-shconf", "--lcores", "0@0,1@1,2@1", "--log-level", "4"})
            .ok());
  }
};

Bytes Pattern(size_t length, uint32_t seed) {
  Bytes bytes(length);
  for (size_t i = 0; i < length; ++i) {
    bytes[i] = static_cast<uint8_t>((i * 131 + seed * 7 + (i >> 8)) & 0xff);
  }
  return bytes;
}

// A frame the appliance sent, parsed with the wire code (ICRC verified).
struct Out {
  Bytes frame;
  roce::Packet packet;
  bool roce = false;
  bool cnp = false;  // a CNP (cnp.h), which ParseFrame refuses
  Bytes payload() const {
    return Bytes(frame.begin() + packet.payload_offset,
                 frame.begin() + packet.payload_offset + packet.payload_length);
  }
};

// The parameter is the number of HPUs.
class RoceDataplaneTest : public ::testing::TestWithParam<uint32_t> {
 protected:
  void SetUp() override {
    static int instance = 0;
    RingDataplaneOptions options;
    options.workers = GetParam();
    options.mbufs = 8191;
    options.roce.enabled = true;
    options.roce.mac = kDutMac;
    options.roce.addresses = {kDutIp};
    options.roce.ack_every = 16;
    options.roce.listen_ports = {kListenPort, kNaaicePort};
    options.roce.naaice_port = kNaaicePort;
    Configure(options);
    absl::StatusOr<std::unique_ptr<RingDataplane>> rings =
        RingDataplane::Create("rd" + std::to_string(instance++), options);
    ASSERT_TRUE(rings.ok()) << rings.status();
    rings_ = *std::move(rings);
    if (pool_ == nullptr) {
      pool_ = rte_pktmbuf_pool_create("client_pool", 4095, 0, 0,
                                      RTE_MBUF_DEFAULT_BUF_SIZE, 0);
      ASSERT_NE(pool_, nullptr);
    }
    const roce::QpSpec spec = ClientQpSpec();
    roce::RoceModule& module = *dataplane().transport<roce::RoceModule>();
    if (GetParam() > 1) {
      // HPU 0 gets this one (round robin), HPU 1 the test's.
      roce::QpSpec other = spec;
      other.remote_qpn = kClientQpn + 1;
      ASSERT_TRUE(module.CreateQp(other).ok());
    }
    absl::StatusOr<uint32_t> qpn = module.CreateQp(spec);
    ASSERT_TRUE(qpn.ok()) << qpn.status();
    qpn_ = *qpn;
    Poll();
    for (const QpInfo& qp : module.ListQps()) {
      if (qp.qpn == qpn_) EXPECT_EQ(qp.hpu, GetParam() - 1);
    }
  }

  // The QP the fixture makes for the client (qpn_).
  static roce::QpSpec ClientQpSpec() {
    roce::QpSpec spec;
    spec.remote_qpn = kClientQpn;
    spec.remote_ip = kClientIp;
    spec.remote_mac = kClientMac;
    spec.pmtu = kPmtu;
    spec.expected_psn = kClientPsn;
    spec.send_psn = 0x777;
    return spec;
  }

  void TearDown() override { rings_.reset(); }
  // What a derived fixture changes in the dataplane's options.
  virtual void Configure(RingDataplaneOptions& /*options*/) {}

  Dataplane& dataplane() { return rings_->dataplane(); }
  void Poll(int times = 3) {
    for (int i = 0; i < times; ++i) {
      for (uint32_t h = 0; h < GetParam(); ++h) dataplane().hpu(h).PollOnce();
    }
  }

  RegionInfo Region(uint64_t length, uint32_t access) {
    RegionConfig config;
    config.length = length;
    config.access = access;
    absl::StatusOr<RegionInfo> region = dataplane().RegisterRegion(config);
    EXPECT_TRUE(region.ok()) << region.status();
    return region.ok() ? *region : RegionInfo();
  }

  void SendFrame(const Bytes& frame) {
    rte_mbuf* m = rte_pktmbuf_alloc(pool_);
    ASSERT_NE(m, nullptr);
    char* data = rte_pktmbuf_append(m, static_cast<uint16_t>(frame.size()));
    ASSERT_NE(data, nullptr);
    std::memcpy(data, frame.data(), frame.size());
    ASSERT_EQ(testing_wire::PutOnWire(rings_->rx(0), m), 0);
  }

  // A request from the client's QP to ours.
  Bytes Build(Opcode opcode, uint32_t psn, const ExtHeaders& ext,
              const Bytes& payload, bool ack_req = false,
              uint32_t dest_qp = 0) {
    roce::FrameParams params;
    params.src_mac = kClientMac;
    params.dst_mac = kDutMac;
    params.ip_version = 4;
    params.src_ip = kClientIp;
    params.dst_ip = kDutIp;
    params.udp_src_port = roce::UdpSourcePort(kClientQpn, qpn_);
    params.traffic_class = traffic_class_;
    Bth bth;
    bth.opcode = static_cast<uint8_t>(opcode);
    bth.dest_qp = dest_qp != 0 ? dest_qp : qpn_;
    bth.psn = psn;
    bth.ack_req = ack_req;
    const uint32_t size =
        roce::FrameBytes(4, bth.opcode, static_cast<uint32_t>(payload.size()));
    Bytes frame(size);
    const uint32_t headers = roce::WriteHeaders(
        params, bth, ext, static_cast<uint32_t>(payload.size()), frame.data(),
        size);
    EXPECT_NE(headers, 0u);
    std::copy(payload.begin(), payload.end(), frame.begin() + headers);
    EXPECT_EQ(roce::FinishFrame(params, frame.data(), size), size);
    return frame;
  }

  // A CM MAD from the client's QP1 to ours (UD SEND ONLY, GSI Q_Key).
  Bytes BuildMad(const roce::CmMad& mad) {
    std::array<uint8_t, roce::kMadBytes> bytes{};
    roce::BuildCmMad(mad, bytes);
    roce::FrameParams params;
    params.src_mac = kClientMac;
    params.dst_mac = kDutMac;
    params.ip_version = 4;
    params.src_ip = kClientIp;
    params.dst_ip = kDutIp;
    Bth bth;
    bth.opcode = static_cast<uint8_t>(Opcode::kUdSendOnly);
    bth.dest_qp = roce::kGsiQp;
    ExtHeaders ext;
    ext.deth.qkey = roce::kGsiQkey;
    ext.deth.src_qp = roce::kGsiQp;
    Bytes frame(roce::FrameBytes(4, bth.opcode, roce::kMadBytes));
    EXPECT_NE(roce::BuildFrame(params, bth, ext, roce::kMadBytes, frame.data(),
                               static_cast<uint32_t>(frame.size())),
              0u);
    const uint32_t headers = roce::HeaderBytes(4, bth.opcode);
    std::copy(bytes.begin(), bytes.end(), frame.begin() + headers);
    EXPECT_NE(roce::FinishFrame(params, frame.data(),
                                static_cast<uint32_t>(frame.size())),
              0u);
    return frame;
  }

  // The MAD in a frame the appliance sent to the client's QP1.
  roce::CmMad MadOf(const Out& o) {
    roce::CmMad mad;
    EXPECT_TRUE(o.roce);
    EXPECT_EQ(o.packet.bth.opcode, static_cast<uint8_t>(Opcode::kUdSendOnly));
    EXPECT_EQ(o.packet.bth.dest_qp, roce::kGsiQp);
    EXPECT_EQ(o.packet.ext.deth.qkey, roce::kGsiQkey);
    EXPECT_EQ(o.packet.ext.deth.src_qp, roce::kGsiQp);
    const Bytes payload = o.payload();
    EXPECT_EQ(roce::ParseCmMad(payload, &mad), roce::CmParseError::kNone);
    return mad;
  }

  ExtHeaders Reth(uint64_t va, uint32_t rkey, uint32_t length) {
    ExtHeaders ext;
    ext.reth = {va, rkey, length};
    return ext;
  }

  std::vector<Out> Collect(int side = 0) {
    std::vector<Out> out;
    void* m;
    while (testing_wire::TakeFromWire(rings_->tx(side), &m) == 0) {
      rte_mbuf* mbuf = static_cast<rte_mbuf*>(m);
      Out& o = out.emplace_back();
      // Whole, segments in order, as a NIC sends a chain (zero-copy READ
      // responses are three: headers, region bytes, pad and ICRC).
      o.frame.resize(mbuf->pkt_len);
      const void* bytes =
          rte_pktmbuf_read(mbuf, 0, mbuf->pkt_len, o.frame.data());
      if (bytes != o.frame.data()) {
        std::memcpy(o.frame.data(), bytes, mbuf->pkt_len);
      }
      if (mbuf->nb_segs > 1) ++chained_frames_;
      rte_pktmbuf_free(mbuf);
      ParsedFrame parsed;
      ParseFrame(o.frame.data(), static_cast<uint32_t>(o.frame.size()),
                 &parsed);
      // Frames out of the wire port are the appliance's own: RoCE ones
      // must parse (ICRC included).
      if (side == 0 && parsed.has_l4_ports &&
          parsed.dst_port == roce::kRoceUdpPort &&
          roce::LooksLikeCnp(o.frame.data(),
                             static_cast<uint32_t>(o.frame.size()),
                             parsed.layers.l4_offset)) {
        o.cnp = true;
      } else if (side == 0 && parsed.has_l4_ports &&
                 parsed.dst_port == roce::kRoceUdpPort) {
        Bytes copy = o.frame;
        const roce::ParseError error = roce::ParseFrame(
            copy.data(), static_cast<uint32_t>(copy.size()),
            parsed.layers.l3_offset, parsed.layers.l4_offset, &o.packet);
        EXPECT_EQ(error, roce::ParseError::kNone)
            << roce::ParseErrorName(error);
        o.roce = error == roce::ParseError::kNone;
      }
    }
    return out;
  }

  uint64_t Counter(const std::string& name) {
    for (const auto& [counter, value] :
         dataplane()
             .Snapshot(Dataplane::StateCopy::kOmit)
             .transport("roce")
             .counters) {
      if (counter == name) return value;
    }
    ADD_FAILURE() << "no RoCE counter " << name;
    return 0;
  }

  // The reply is an RC ACKNOWLEDGE to the client's QP with this AETH.
  void ExpectAck(const Out& o, uint32_t psn, uint8_t syndrome, uint32_t msn,
                 uint32_t remote_qpn = kClientQpn, uint32_t local_qpn = 0) {
    if (local_qpn == 0) local_qpn = qpn_;
    ASSERT_TRUE(o.roce);
    EXPECT_EQ(o.packet.bth.opcode, static_cast<uint8_t>(Opcode::kRcAck));
    EXPECT_EQ(o.packet.bth.dest_qp, remote_qpn);
    EXPECT_EQ(o.packet.bth.psn, psn);
    EXPECT_EQ(o.packet.ext.aeth.syndrome, syndrome);
    EXPECT_EQ(o.packet.ext.aeth.msn, msn);
    EXPECT_EQ(o.packet.src_ip, kDutIp);
    EXPECT_EQ(o.packet.dst_ip, kClientIp);
    EXPECT_EQ(o.packet.src_port, roce::UdpSourcePort(local_qpn, remote_qpn));
    EXPECT_TRUE(
        std::equal(kClientMac.begin(), kClientMac.end(), o.frame.begin()));
  }

  static rte_mempool* pool_;
  std::unique_ptr<RingDataplane> rings_;
  // Frames of more than one segment Collect saw (zero-copy responses).
  size_t chained_frames_ = 0;
  uint32_t qpn_ = 0;
  // The IPv4 TOS of the client's frames (Build): 3 is CE.
  uint8_t traffic_class_ = 0;
};

rte_mempool* RoceDataplaneTest::pool_ = nullptr;

TEST_P(RoceDataplaneTest, AnswersArpForItsAddress) {
  // who-has 192.0.2.11 tell 192.0.2.12
  Bytes arp = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0,  0,
               0x0c, 0x08, 0x06, 0,    1,    0x08, 0,    6, 4, 0,  1,
               0x02, 0,    0,    0,    0,    0x0c, 192,  0, 2, 12, 0,
               0,    0,    0,    0,    0,    192,  0,    2, 11};
  SendFrame(arp);
  Poll();
  std::vector<Out> out = Collect();
  ASSERT_EQ(out.size(), 1u);
  const Bytes& r = out[0].frame;
  ASSERT_GE(r.size(), 42u);
  EXPECT_EQ(Bytes(r.begin(), r.begin() + 6),
            Bytes(kClientMac.begin(), kClientMac.end()));
  EXPECT_EQ(r[21], 2);  // ARP reply
  EXPECT_EQ(Bytes(r.begin() + 22, r.begin() + 28),
            Bytes(kDutMac.begin(), kDutMac.end()));
  EXPECT_EQ(Bytes(r.begin() + 28, r.begin() + 32), Bytes({192, 0, 2, 11}));
  EXPECT_EQ(Counter("neighbor_answers"), 1u);
  // An ARP for another address is not answered (and not forwarded).
  arp[41] = 99;
  SendFrame(arp);
  Poll();
  EXPECT_TRUE(Collect().empty());
  EXPECT_TRUE(Collect(1).empty());
}

TEST_P(RoceDataplaneTest, WriteOnlyLandsAndIsAcknowledged) {
  RegionInfo region = Region(4096, kRemoteWrite | kRemoteRead);
  const Bytes data = Pattern(700, 1);
  SendFrame(Build(Opcode::kRcWriteOnly, kClientPsn,
                  Reth(region.base_address + 100, region.rkey, 700), data,
                  /*ack_req=*/true));
  Poll();
  std::vector<Out> out = Collect();
  ASSERT_EQ(out.size(), 1u);
  ExpectAck(out[0], kClientPsn, roce::AethAck(), 1);
  absl::StatusOr<std::string> stored =
      dataplane().ReadRegion(region.id, 100, 700, 1 << 20);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(Bytes(stored->begin(), stored->end()), data);
  EXPECT_EQ(Counter("writes"), 1u);
  EXPECT_EQ(Counter("write_bytes"), 700u);
  // Bytes around the write are untouched.
  absl::StatusOr<std::string> before =
      dataplane().ReadRegion(region.id, 0, 100, 1 << 20);
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(*before, std::string(100, '\0'));
}

TEST_P(RoceDataplaneTest, MultiPacketWriteCoalescesOneAck) {
  RegionInfo region = Region(8192, kRemoteWrite);
  const Bytes data = Pattern(2 * kPmtu + 300, 2);
  const uint64_t va = region.base_address + 8;
  SendFrame(Build(Opcode::kRcWriteFirst, kClientPsn,
                  Reth(va, region.rkey, static_cast<uint32_t>(data.size())),
                  Bytes(data.begin(), data.begin() + kPmtu)));
  SendFrame(Build(Opcode::kRcWriteMiddle, kClientPsn + 1, {},
                  Bytes(data.begin() + kPmtu, data.begin() + 2 * kPmtu)));
  SendFrame(Build(Opcode::kRcWriteLast, kClientPsn + 2, {},
                  Bytes(data.begin() + 2 * kPmtu, data.end())));
  Poll();
  std::vector<Out> out = Collect();
  // No ACK request: one coalesced ACK after the burst.
  ASSERT_EQ(out.size(), 1u);
  ExpectAck(out[0], kClientPsn + 2, roce::AethAck(), 1);
  absl::StatusOr<std::string> stored =
      dataplane().ReadRegion(region.id, 8, data.size(), 1 << 20);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(Bytes(stored->begin(), stored->end()), data);
}

// sPIN on RDMA: a handler bound to writes into a region runs on each packet
// of a WRITE message in place (header on the first, completion after the
// last) before the bytes are stored; here xor_payload changes them.
TEST_P(RoceDataplaneTest, WriteMessagesRunTheBoundHandlerInPlace) {
  RegionInfo region = Region(8192, kRemoteWrite);
  HandlerConfig handler;
  handler.name = "xor-rdma";
  handler.kind = "xor_payload";
  handler.params["key"] = "5a";
  handler.params["fix_checksum"] = "false";
  handler.binding = {kBindRegionWrites, region.id};
  absl::StatusOr<uint32_t> installed = dataplane().InstallEctx(handler);
  ASSERT_TRUE(installed.ok()) << installed.status();
  const Bytes data = Pattern(2 * kPmtu + 300, 8);
  const uint64_t va = region.base_address;
  SendFrame(Build(Opcode::kRcWriteFirst, kClientPsn,
                  Reth(va, region.rkey, static_cast<uint32_t>(data.size())),
                  Bytes(data.begin(), data.begin() + kPmtu)));
  SendFrame(Build(Opcode::kRcWriteMiddle, kClientPsn + 1, {},
                  Bytes(data.begin() + kPmtu, data.begin() + 2 * kPmtu)));
  SendFrame(Build(Opcode::kRcWriteLast, kClientPsn + 2, {},
                  Bytes(data.begin() + 2 * kPmtu, data.end()), true));
  Poll();
  std::vector<Out> out = Collect();
  ASSERT_EQ(out.size(), 1u);
  ExpectAck(out[0], kClientPsn + 2, roce::AethAck(), 1);
  absl::StatusOr<std::string> stored =
      dataplane().ReadRegion(region.id, 0, data.size(), 1 << 20);
  ASSERT_TRUE(stored.ok());
  Bytes expected = data;
  for (uint8_t& b : expected) b ^= 0x5a;
  EXPECT_EQ(Bytes(stored->begin(), stored->end()), expected);
  StatsSnapshot stats = dataplane().Snapshot(Dataplane::StateCopy::kOmit);
  bool found = false;
  for (const EctxStats& e : stats.ectxs) {
    if (e.name != "xor-rdma") continue;
    found = true;
    EXPECT_EQ(e.messages, 1u);
    EXPECT_EQ(e.packets, 3u);
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(Counter("handler_messages"), 1u);
}

// Every packet of a SEND or WRITE tells its handler its place in the
// message: the offset the QP has counted (middle and last packets carry no
// RETH), the WRITE's RETH length and VA on every packet, a SEND's length
// only on its last packet, and the client's QPN.
TEST_P(RoceDataplaneTest, HandlersSeeEachPacketsPlaceInItsMessage) {
  RegionInfo target = Region(8192, kRemoteWrite);
  RegionInfo write_records = Region(4096, kLocalWrite | kLocalRead);
  RegionInfo send_records = Region(4096, kLocalWrite | kLocalRead);
  HandlerConfig on_write;
  on_write.name = "record-writes";
  on_write.kind = "test_message_recorder";
  on_write.binding = {kBindRegionWrites, target.id};
  on_write.bound_regions = {write_records.id};
  ASSERT_TRUE(dataplane().InstallEctx(on_write).ok());
  HandlerConfig on_send = on_write;
  on_send.name = "record-sends";
  on_send.binding = {roce::kBindQp, qpn_};
  on_send.bound_regions = {send_records.id};
  ASSERT_TRUE(dataplane().InstallEctx(on_send).ok());

  const Bytes data = Pattern(2 * kPmtu + 10, 9);
  const uint64_t va = target.base_address + 8;
  SendFrame(Build(Opcode::kRcWriteFirst, kClientPsn,
                  Reth(va, target.rkey, static_cast<uint32_t>(data.size())),
                  Bytes(data.begin(), data.begin() + kPmtu)));
  SendFrame(Build(Opcode::kRcWriteMiddle, kClientPsn + 1, {},
                  Bytes(data.begin() + kPmtu, data.begin() + 2 * kPmtu)));
  SendFrame(Build(Opcode::kRcWriteLast, kClientPsn + 2, {},
                  Bytes(data.begin() + 2 * kPmtu, data.end())));
  SendFrame(Build(Opcode::kRcSendFirst, kClientPsn + 3, {},
                  Bytes(data.begin(), data.begin() + kPmtu)));
  SendFrame(Build(Opcode::kRcSendMiddle, kClientPsn + 4, {},
                  Bytes(data.begin() + kPmtu, data.begin() + 2 * kPmtu)));
  SendFrame(Build(Opcode::kRcSendLast, kClientPsn + 5, {},
                  Bytes(data.begin() + 2 * kPmtu, data.end()), true));
  Poll();
  std::vector<Out> out = Collect();
  ASSERT_FALSE(out.empty());
  ExpectAck(out.back(), kClientPsn + 5, roce::AethAck(), 2);

  const uint64_t offsets[] = {0, kPmtu, 2 * kPmtu};
  const uint64_t sizes[] = {kPmtu, kPmtu, 10};
  for (bool is_write : {true, false}) {
    SCOPED_TRACE(is_write ? "write" : "send");
    absl::StatusOr<std::string> bytes = dataplane().ReadRegion(
        is_write ? write_records.id : send_records.id, 0, 0, 1 << 20);
    ASSERT_TRUE(bytes.ok());
    std::vector<RecordedMessage> records = RecordedMessages(*bytes);
    ASSERT_EQ(records.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
      SCOPED_TRACE(i);
      EXPECT_EQ(records[i].transport,
                static_cast<uint32_t>(is_write ? MessageTransport::kRoceWrite
                                               : MessageTransport::kRoceSend));
      EXPECT_EQ(records[i].source, kClientQpn);
      EXPECT_EQ(records[i].offset, offsets[i]);
      EXPECT_EQ(records[i].payload_size, sizes[i]);
      if (is_write) {
        EXPECT_EQ(records[i].length, data.size());
        EXPECT_EQ(records[i].address, va + offsets[i]);
      } else {
        // A SEND's length is known once its last packet has come.
        EXPECT_EQ(records[i].length, i == 2 ? data.size() : 0u);
        EXPECT_EQ(records[i].address, 0u);
      }
    }
  }
}

// sPIN's datatype offload on an RDMA WRITE: packed blocks of 48 bytes land
// at a stride of 80 in the handler's region (PMTU 1024 is no multiple of
// 48, so the middle and last packets start mid-block); the WRITE's own
// target stays untouched and the WRITE is acknowledged.
TEST_P(RoceDataplaneTest, DatatypeVectorUnpacksAWriteIntoItsRegion) {
  RegionInfo target = Region(8192, kRemoteWrite | kRemoteRead);
  RegionInfo dest = Region(4096, kLocalWrite | kLocalRead);
  HandlerConfig scatter;
  scatter.name = "scatter";
  scatter.kind = "datatype";
  scatter.params = {{"blocklen", "48"}, {"stride", "80"}};
  scatter.binding = {kBindRegionWrites, target.id};
  scatter.bound_regions = {dest.id};
  ASSERT_TRUE(dataplane().InstallEctx(scatter).ok());
  const Bytes data = Pattern(2 * kPmtu + 300, 10);  // 48 blocks and 44 bytes
  SendFrame(Build(Opcode::kRcWriteFirst, kClientPsn,
                  Reth(target.base_address, target.rkey,
                       static_cast<uint32_t>(data.size())),
                  Bytes(data.begin(), data.begin() + kPmtu)));
  SendFrame(Build(Opcode::kRcWriteMiddle, kClientPsn + 1, {},
                  Bytes(data.begin() + kPmtu, data.begin() + 2 * kPmtu)));
  SendFrame(Build(Opcode::kRcWriteLast, kClientPsn + 2, {},
                  Bytes(data.begin() + 2 * kPmtu, data.end()), true));
  Poll();
  std::vector<Out> out = Collect();
  ASSERT_EQ(out.size(), 1u);
  ExpectAck(out[0], kClientPsn + 2, roce::AethAck(), 1);
  Bytes expected(4096, 0);
  for (size_t k = 0; k < data.size(); ++k) {
    expected[(k / 48) * 80 + k % 48] = data[k];
  }
  absl::StatusOr<std::string> placed =
      dataplane().ReadRegion(dest.id, 0, 0, 1 << 20);
  ASSERT_TRUE(placed.ok());
  EXPECT_TRUE(Bytes(placed->begin(), placed->end()) == expected);
  EXPECT_EQ(static_cast<uint8_t>((*placed)[48 * 80 + 43]), data.back());
  EXPECT_EQ((*placed)[48 * 80 + 44], 0);
  absl::StatusOr<std::string> own =
      dataplane().ReadRegion(target.id, 0, 0, 1 << 20);
  ASSERT_TRUE(own.ok());
  EXPECT_EQ(*own, std::string(8192, '\0'));
  StatsSnapshot stats = dataplane().Snapshot();
  bool found = false;
  for (const EctxStats& e : stats.ectxs) {
    if (e.name != "scatter") continue;
    found = true;
    EXPECT_EQ(e.messages, 1u);
    EXPECT_EQ(e.packets, 3u);
    EXPECT_EQ(e.dropped, 0u);
    ASSERT_GE(e.state.size(), 16u);
    uint64_t words[2];
    std::memcpy(words, e.state.data(), sizeof words);
    EXPECT_EQ(words[0], data.size());  // bytes placed
    EXPECT_EQ(words[1], 1u);           // messages
  }
  EXPECT_TRUE(found);
}

TEST_P(RoceDataplaneTest, SendsGoToTheQpsServiceAsEvents) {
  // A QP made over gRPC has the verbs service: each SEND (with or without
  // immediate) reaches the control plane as a roce_send event.
  const Bytes data = Pattern(kPmtu + 100, 4);
  SendFrame(Build(Opcode::kRcSendFirst, kClientPsn, {},
                  Bytes(data.begin(), data.begin() + kPmtu)));
  ExtHeaders imm;
  imm.imm_data = 0x11223344;
  SendFrame(Build(Opcode::kRcSendLastImm, kClientPsn + 1, imm,
                  Bytes(data.begin() + kPmtu, data.end()), true));
  Poll();
  std::vector<Out> out = Collect();
  ASSERT_EQ(out.size(), 1u);
  ExpectAck(out[0], kClientPsn + 1, roce::AethAck(), 1);
  std::vector<Event> events;
  dataplane().DrainEvents(&events);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].code, roce::kEventRoceSend);
  uint32_t head[4];
  ASSERT_EQ(events[0].length, Event::kMaxData);
  std::memcpy(head, events[0].data, sizeof head);
  EXPECT_EQ(head[0], qpn_);
  EXPECT_EQ(head[1], data.size());
  EXPECT_EQ(head[2], 0x11223344u);
  EXPECT_EQ(head[3], 1u);  // with immediate
  EXPECT_EQ(Bytes(events[0].data + 16, events[0].data + 48),
            Bytes(data.begin(), data.begin() + 32));
  EXPECT_EQ(Counter("sends"), 1u);
  EXPECT_EQ(Counter("send_bytes"), data.size());
}

TEST_P(RoceDataplaneTest, ASendLargerThanTheServiceTakesIsInvalid) {
  // The verbs service takes 4 KiB: a 5-packet SEND overflows its receive
  // buffer, which is an invalid request NAK and the error state.
  const Bytes chunk = Pattern(kPmtu, 5);
  SendFrame(Build(Opcode::kRcSendFirst, kClientPsn, {}, chunk));
  for (uint32_t i = 1; i < 4; ++i) {
    SendFrame(Build(Opcode::kRcSendMiddle, kClientPsn + i, {}, chunk));
  }
  SendFrame(Build(Opcode::kRcSendLast, kClientPsn + 4, {}, chunk, true));
  Poll();
  std::vector<Out> out = Collect();
  ASSERT_FALSE(out.empty());
  ExpectAck(out.back(), kClientPsn + 4,
            roce::AethNak(roce::NakCode::kInvalidRequest), 0);
  EXPECT_EQ(Counter("qp_errors"), 1u);
  EXPECT_EQ(Counter("sends"), 0u);
}

TEST_P(RoceDataplaneTest, SendMessagesRunTheQpsHandlerInPlace) {
  // sPIN on SENDs: a handler bound to the QP (roce { qpn }) sees every
  // packet of the message, in order, after the transport accepted it; the
  // service does not get the message.
  HandlerConfig handler;
  handler.name = "count-sends";
  handler.kind = "count";
  handler.binding = {roce::kBindQp, qpn_};
  absl::StatusOr<uint32_t> installed = dataplane().InstallEctx(handler);
  ASSERT_TRUE(installed.ok()) << installed.status();
  const Bytes data = Pattern(2 * kPmtu + 10, 6);
  SendFrame(Build(Opcode::kRcSendFirst, kClientPsn, {},
                  Bytes(data.begin(), data.begin() + kPmtu)));
  SendFrame(Build(Opcode::kRcSendMiddle, kClientPsn + 1, {},
                  Bytes(data.begin() + kPmtu, data.begin() + 2 * kPmtu)));
  // A duplicate of the middle packet: re-ACKed, not handed over again.
  SendFrame(Build(Opcode::kRcSendMiddle, kClientPsn + 1, {},
                  Bytes(data.begin() + kPmtu, data.begin() + 2 * kPmtu)));
  SendFrame(Build(Opcode::kRcSendLast, kClientPsn + 2, {},
                  Bytes(data.begin() + 2 * kPmtu, data.end()), true));
  Poll();
  std::vector<Out> out = Collect();
  ASSERT_FALSE(out.empty());
  ExpectAck(out.back(), kClientPsn + 2, roce::AethAck(), 1);
  StatsSnapshot stats = dataplane().Snapshot(Dataplane::StateCopy::kOmit);
  bool found = false;
  for (const EctxStats& e : stats.ectxs) {
    if (e.name != "count-sends") continue;
    found = true;
    EXPECT_EQ(e.messages, 1u);
    EXPECT_EQ(e.packets, 3u);
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(Counter("handler_messages"), 1u);
  std::vector<Event> events;
  dataplane().DrainEvents(&events);
  for (const Event& e : events) EXPECT_NE(e.code, roce::kEventRoceSend);
  // Removed: the next SEND goes to the service again.
  ASSERT_TRUE(dataplane().RemoveEctx("count-sends").ok());
  SendFrame(Build(Opcode::kRcSendOnly, kClientPsn + 3, {}, Bytes(8, 1), true));
  Poll();
  dataplane().DrainEvents(&events);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].code, roce::kEventRoceSend);
}

TEST_P(RoceDataplaneTest, ReadIsAnsweredInPmtuSegments) {
  RegionInfo region = Region(8192, kRemoteRead | kRemoteWrite);
  const Bytes data = Pattern(2500, 3);
  ASSERT_TRUE(dataplane().WriteRegion(region.id, 1000, data).ok());
  SendFrame(Build(Opcode::kRcReadRequest, kClientPsn,
                  Reth(region.base_address + 1000, region.rkey, 2500), {}));
  Poll();
  std::vector<Out> out = Collect();
  ASSERT_EQ(out.size(), 3u);
  const Opcode expected[] = {Opcode::kRcReadResponseFirst,
                             Opcode::kRcReadResponseMiddle,
                             Opcode::kRcReadResponseLast};
  Bytes joined;
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(out[i].roce);
    EXPECT_EQ(out[i].packet.bth.opcode, static_cast<uint8_t>(expected[i]));
    EXPECT_EQ(out[i].packet.bth.psn, kClientPsn + i);
    EXPECT_EQ(out[i].packet.bth.dest_qp, kClientQpn);
    const Bytes payload = out[i].payload();
    joined.insert(joined.end(), payload.begin(), payload.end());
  }
  EXPECT_EQ(out[0].packet.ext.aeth.msn, 1u);
  EXPECT_EQ(out[2].packet.ext.aeth.syndrome, roce::AethAck());
  EXPECT_EQ(joined, data);  // every ICRC checked by Collect
  EXPECT_EQ(Counter("reads"), 1u);
  EXPECT_EQ(Counter("read_bytes"), 2500u);
  // The two full packets left zero-copy from the region (headers, region
  // bytes, trailer); the 452-byte last one, below 1024, was copied.
  EXPECT_EQ(chained_frames_, 2u);
  EXPECT_EQ(Counter("zero_copy_packets"), 2u);
  EXPECT_EQ(Counter("zero_copy_fallbacks"), 0u);
  // The READ took three PSNs: the next request is kClientPsn + 3.
  SendFrame(Build(Opcode::kRcWriteOnly, kClientPsn + 3,
                  Reth(region.base_address, region.rkey, 4), {1, 2, 3, 4},
                  true));
  Poll();
  out = Collect();
  ASSERT_EQ(out.size(), 1u);
  ExpectAck(out[0], kClientPsn + 3, roce::AethAck(), 2);
}

TEST_P(RoceDataplaneTest, BadRkeyNaksWritesNothingAndErrorsTheQp) {
  RegionInfo region = Region(4096, kRemoteWrite);
  RegionInfo read_only = Region(4096, kRemoteRead);
  std::vector<Event> events;
  dataplane().DrainEvents(&events);
  events.clear();
  // Out of bounds by one byte.
  SendFrame(Build(Opcode::kRcWriteOnly, kClientPsn,
                  Reth(region.base_address + 4000, region.rkey, 97),
                  Pattern(97, 4), true));
  Poll();
  std::vector<Out> out = Collect();
  ASSERT_EQ(out.size(), 1u);
  ExpectAck(out[0], kClientPsn,
            roce::AethNak(roce::NakCode::kRemoteAccessError), 0);
  absl::StatusOr<std::string> stored =
      dataplane().ReadRegion(region.id, 0, 0, 1 << 20);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(*stored, std::string(4096, '\0'));
  // The QP is in the error state: everything after is dropped silently.
  SendFrame(Build(Opcode::kRcWriteOnly, kClientPsn + 1,
                  Reth(read_only.base_address, read_only.rkey, 4), {1, 2, 3, 4},
                  true));
  Poll();
  EXPECT_TRUE(Collect().empty());
  std::vector<QpInfo> qps =
      dataplane().transport<roce::RoceModule>()->ListQps();
  ASSERT_EQ(qps.size(), GetParam());  // the fixture's
  EXPECT_EQ(qps.back().qpn, qpn_);
  EXPECT_EQ(qps.back().state, roce::QpState::kError);
  EXPECT_EQ(qps.back().naks, 1u);
  EXPECT_EQ(Counter("qp_errors"), 1u);
  dataplane().DrainEvents(&events);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].code, roce::kEventRoceQpError);
}

TEST_P(RoceDataplaneTest, WriteWithoutRightIsRefused) {
  RegionInfo read_only = Region(4096, kRemoteRead);
  SendFrame(Build(Opcode::kRcWriteOnly, kClientPsn,
                  Reth(read_only.base_address, read_only.rkey, 4), {1, 2, 3, 4},
                  true));
  Poll();
  std::vector<Out> out = Collect();
  ASSERT_EQ(out.size(), 1u);
  ExpectAck(out[0], kClientPsn,
            roce::AethNak(roce::NakCode::kRemoteAccessError), 0);
  absl::StatusOr<std::string> stored =
      dataplane().ReadRegion(read_only.id, 0, 4, 1 << 20);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(*stored, std::string(4, '\0'));
}

TEST_P(RoceDataplaneTest, PsnGapGetsOneSequenceNak) {
  RegionInfo region = Region(4096, kRemoteWrite);
  for (uint32_t i = 1; i <= 3; ++i) {
    SendFrame(Build(Opcode::kRcWriteOnly, kClientPsn + i,
                    Reth(region.base_address, region.rkey, 4), {1, 2, 3, 4},
                    true));
  }
  Poll();
  std::vector<Out> out = Collect();
  ASSERT_EQ(out.size(), 1u);
  // The NAK names the PSN the responder expects (IBA 9.7.5.2.3).
  ExpectAck(out[0], kClientPsn, roce::AethNak(roce::NakCode::kPsnSequenceError),
            0);
  // Then the expected PSN and the rest, in order: accepted.
  for (uint32_t i = 0; i <= 3; ++i) {
    SendFrame(Build(Opcode::kRcWriteOnly, kClientPsn + i,
                    Reth(region.base_address, region.rkey, 4), {1, 2, 3, 4},
                    i == 3));
  }
  Poll();
  out = Collect();
  ASSERT_EQ(out.size(), 1u);
  ExpectAck(out[0], kClientPsn + 3, roce::AethAck(), 4);
}

TEST_P(RoceDataplaneTest, DuplicateWriteIsReAckedNotReExecuted) {
  RegionInfo region = Region(4096, kRemoteWrite);
  const Bytes frame =
      Build(Opcode::kRcWriteOnly, kClientPsn,
            Reth(region.base_address, region.rkey, 4), {1, 2, 3, 4}, true);
  SendFrame(frame);
  Poll();
  ASSERT_EQ(Collect().size(), 1u);
  ASSERT_TRUE(dataplane().WriteRegion(region.id, 0, Bytes{9, 9, 9, 9}).ok());
  SendFrame(frame);
  Poll();
  std::vector<Out> out = Collect();
  ASSERT_EQ(out.size(), 1u);
  ExpectAck(out[0], kClientPsn, roce::AethAck(), 1);
  absl::StatusOr<std::string> stored =
      dataplane().ReadRegion(region.id, 0, 4, 1 << 20);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(*stored, std::string(4, '\x09'));
  EXPECT_EQ(Counter("duplicates"), 1u);
}

TEST_P(RoceDataplaneTest, AtomicsExecuteOnceAndReplay) {
  RegionInfo region = Region(64, kRemoteRead | kRemoteWrite);
  uint64_t initial = 40;
  ASSERT_TRUE(
      dataplane()
          .WriteRegion(region.id, 8, {reinterpret_cast<uint8_t*>(&initial), 8})
          .ok());
  ExtHeaders ext;
  ext.atomic_eth = {region.base_address + 8, region.rkey, 2, 0};
  const Bytes fetch_add = Build(Opcode::kRcFetchAdd, kClientPsn, ext, {});
  SendFrame(fetch_add);
  Poll();
  std::vector<Out> out = Collect();
  ASSERT_EQ(out.size(), 1u);
  ASSERT_TRUE(out[0].roce);
  EXPECT_EQ(out[0].packet.bth.opcode,
            static_cast<uint8_t>(Opcode::kRcAtomicAck));
  EXPECT_EQ(out[0].packet.ext.atomic_ack_eth.original, 40u);
  // A duplicate is answered from the record, not executed again.
  SendFrame(fetch_add);
  Poll();
  out = Collect();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].packet.ext.atomic_ack_eth.original, 40u);
  // Compare-and-swap that matches.
  ext.atomic_eth = {region.base_address + 8, region.rkey, 7, 42};
  SendFrame(Build(Opcode::kRcCompareSwap, kClientPsn + 1, ext, {}));
  Poll();
  out = Collect();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].packet.ext.atomic_ack_eth.original, 42u);
  absl::StatusOr<std::string> stored =
      dataplane().ReadRegion(region.id, 8, 8, 1 << 20);
  ASSERT_TRUE(stored.ok());
  uint64_t now = 0;
  std::memcpy(&now, stored->data(), 8);
  EXPECT_EQ(now, 7u);
  EXPECT_EQ(Counter("atomics"), 2u);
}

TEST_P(RoceDataplaneTest, WriteWithImmediateRaisesAnEvent) {
  RegionInfo region = Region(4096, kRemoteWrite);
  std::vector<Event> events;
  dataplane().DrainEvents(&events);
  events.clear();
  ExtHeaders ext = Reth(region.base_address, region.rkey, 8);
  ext.imm_data = 0x00000083;
  SendFrame(
      Build(Opcode::kRcWriteOnlyImm, kClientPsn, ext, Pattern(8, 5), true));
  Poll();
  std::vector<Out> out = Collect();
  ASSERT_EQ(out.size(), 1u);
  ExpectAck(out[0], kClientPsn, roce::AethAck(), 1);
  dataplane().DrainEvents(&events);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].code, roce::kEventRoceWriteImm);
  uint32_t data[3];
  ASSERT_GE(events[0].length, sizeof data);
  std::memcpy(data, events[0].data, sizeof data);
  EXPECT_EQ(data[0], qpn_);
  EXPECT_EQ(data[1], 0x83u);
  EXPECT_EQ(data[2], 1u);
}

TEST_P(RoceDataplaneTest, BadFramesAreCountedDrops) {
  RegionInfo region = Region(4096, kRemoteWrite);
  Bytes frame =
      Build(Opcode::kRcWriteOnly, kClientPsn,
            Reth(region.base_address, region.rkey, 4), {1, 2, 3, 4}, true);
  Bytes corrupt = frame;
  corrupt[corrupt.size() - 6] ^= 0x01;  // a payload bit: the ICRC fails
  SendFrame(corrupt);
  SendFrame(Build(Opcode::kRcWriteOnly, kClientPsn,
                  Reth(region.base_address, region.rkey, 4), {1, 2, 3, 4}, true,
                  /*dest_qp=*/0x999));
  Poll();
  EXPECT_TRUE(Collect().empty());
  EXPECT_EQ(Counter("drop_bad_icrc"), 1u);
  EXPECT_EQ(Counter("drop_unknown_qp"), 1u);
  absl::StatusOr<std::string> stored =
      dataplane().ReadRegion(region.id, 0, 4, 1 << 20);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(*stored, std::string(4, '\0'));
  // The intact frame still works.
  SendFrame(frame);
  Poll();
  ASSERT_EQ(Collect().size(), 1u);
}

// A hostile RoCE network (issue 20), on the same appliance as a live
// connection. Three kinds of forged frames, interleaved with the client's
// legitimate WRITEs (one and three packets), READs and atomics:
//  - a hostile peer on its own QPs (it knows its PSNs: on path), sending
//    random RC and UD opcodes (SEND/WRITE FIRST, MIDDLE, LAST, ONLY, with
//    immediate or invalidate, READ, atomics, responses) with random rkeys,
//    addresses, lengths, payload sizes and sometimes PSNs; its keys are
//    real ones with ranges outside their region or rights they lack, or no
//    region's; a QP its requests put into the error state is replaced;
//  - an off-path sender injecting into the live connection: a wrong source
//    address with the right QPN, or the client's address (spoofed) with a
//    wrong UDP source port and a guessed QPN (near the real one, or random)
//    and a PSN outside the window (anything but the one expected next);
//  - frames broken on the wire (ICRC, reserved opcode, truncated).
// Every region is registered between guard regions filled with a pattern,
// and the target region keeps 128-byte margins the client never writes.
// Asserted: no forged request moves a byte (the regions and guards are
// byte-exact against the client's writes; write, read and atomic bytes
// are the client's), every legitimate operation completes byte-exact and
// the connection is never errored, and every forged frame is counted
// exactly once: dropped by reason, refused by NAK code, answered as a
// duplicate, or executed without memory (a zero-length RDMA, which IBA 9.4
// serves with any rkey, or a SEND into the hostile QP's own receive
// buffer). SPINNIC_HOSTILE_REQUESTS sets how many (20,000 by default;
// docs/testing.md has the 10^6 command).
TEST_P(RoceDataplaneTest, ForgedRequestsAreRefusedAndWriteNothing) {
  const char* env = std::getenv("SPINNIC_HOSTILE_REQUESTS");
  const uint64_t forged =
      env != nullptr ? std::strtoull(env, nullptr, 10) : 20000;
  roce::RoceModule& module = *dataplane().transport<roce::RoceModule>();
  std::mt19937_64 random(20 + GetParam());
  auto pick = [&](uint64_t n) { return random() % n; };

  // Regions, each between guards; every byte starts as a pattern.
  constexpr uint64_t kTarget = 8192;
  constexpr uint64_t kMargin = 128;
  std::vector<std::pair<RegionInfo, Bytes>> expected;  // final images
  auto add = [&](uint64_t length, uint32_t access) {
    RegionInfo region = Region(length, access | kLocalRead | kLocalWrite);
    Bytes image = Pattern(length, static_cast<uint32_t>(region.id) + 77);
    EXPECT_TRUE(dataplane().WriteRegion(region.id, 0, image).ok());
    expected.emplace_back(region, image);
    return expected.size() - 1;
  };
  add(4096, 0);
  const size_t target_at = add(kTarget, kRemoteWrite | kRemoteRead);
  add(4096, 0);
  const size_t read_only_at = add(4096, kRemoteRead);
  add(4096, 0);
  const size_t local_at = add(4096, 0);
  add(4096, 0);
  const RegionInfo target = expected[target_at].first;
  const RegionInfo read_only = expected[read_only_at].first;
  const RegionInfo local = expected[local_at].first;
  Bytes& image = expected[target_at].second;
  std::set<uint32_t> real_keys;
  for (const auto& [region, bytes] : expected) real_keys.insert(region.rkey);

  // The hostile peer's QPs.
  constexpr roce::Mac kHostileMac = {0x02, 0, 0, 0, 0, 0x66};
  const roce::Gid kHostileIp = roce::Ipv4Mapped(0xc0000242);  // 192.0.2.66
  struct HostileQp {
    uint32_t qpn = 0;
    uint32_t remote_qpn = 0;
    uint32_t psn = 0;  // the next PSN it sends
  };
  std::vector<HostileQp> hostile(4);
  uint32_t next_remote = 0x6600;
  auto open_hostile = [&](HostileQp& h) {
    roce::QpSpec spec;
    spec.remote_qpn = h.remote_qpn = next_remote++;
    spec.remote_ip = kHostileIp;
    spec.remote_mac = kHostileMac;
    spec.pmtu = kPmtu;
    spec.expected_psn = h.psn = static_cast<uint32_t>(random()) & 0xffffff;
    absl::StatusOr<uint32_t> qpn = module.CreateQp(spec);
    ASSERT_TRUE(qpn.ok()) << qpn.status();
    h.qpn = *qpn;
  };
  for (HostileQp& h : hostile) open_hostile(h);
  Poll();

  const StatsSnapshot before =
      dataplane().Snapshot(Dataplane::StateCopy::kOmit);
  auto delta = [&](const std::string& name) {
    uint64_t then = 0;
    for (const auto& [counter, value] : before.transport("roce").counters) {
      if (counter == name) then = value;
    }
    return Counter(name) - then;
  };

  // The client's operations and what each answer must be.
  uint32_t legit_psn = kClientPsn;
  uint64_t legit_packets = 0;
  uint64_t legit_messages = 0;
  uint64_t legit_write_bytes = 0;
  uint64_t legit_read_bytes = 0;
  uint64_t legit_atomics = 0;
  std::map<uint32_t, Bytes> read_answers;       // response PSN -> bytes
  std::map<uint32_t, uint64_t> atomic_answers;  // PSN -> original value
  size_t reads_answered = 0;
  size_t atomics_answered = 0;
  std::vector<std::string> failures;
  auto send_write = [&] {
    const bool three = pick(4) == 0;
    const uint32_t length =
        three ? 2 * kPmtu + 1 + static_cast<uint32_t>(pick(kPmtu))
              : 1 + static_cast<uint32_t>(pick(kPmtu));
    const uint64_t offset = kMargin + pick(kTarget - 2 * kMargin - length + 1);
    const Bytes data = Pattern(length, static_cast<uint32_t>(random()));
    std::copy(data.begin(), data.end(), image.begin() + offset);
    const ExtHeaders reth =
        Reth(target.base_address + offset, target.rkey, length);
    if (!three) {
      SendFrame(
          Build(Opcode::kRcWriteOnly, legit_psn++, reth, data, pick(2) == 0));
      ++legit_packets;
    } else {
      SendFrame(Build(Opcode::kRcWriteFirst, legit_psn++, reth,
                      Bytes(data.begin(), data.begin() + kPmtu)));
      SendFrame(Build(Opcode::kRcWriteMiddle, legit_psn++, {},
                      Bytes(data.begin() + kPmtu, data.begin() + 2 * kPmtu)));
      SendFrame(Build(Opcode::kRcWriteLast, legit_psn++, {},
                      Bytes(data.begin() + 2 * kPmtu, data.end()), true));
      legit_packets += 3;
    }
    ++legit_messages;
    legit_write_bytes += length;
  };
  auto send_read = [&] {
    const uint32_t length = static_cast<uint32_t>(pick(3 * kPmtu));
    const uint64_t offset = pick(kTarget - length + 1);
    SendFrame(Build(Opcode::kRcReadRequest, legit_psn,
                    Reth(target.base_address + offset, target.rkey, length),
                    {}));
    const uint32_t packets = length == 0 ? 1 : (length + kPmtu - 1) / kPmtu;
    for (uint32_t i = 0; i < packets; ++i) {
      const uint64_t from = offset + uint64_t{i} * kPmtu;
      const uint64_t to = std::min<uint64_t>(offset + length, from + kPmtu);
      read_answers[(legit_psn + i) & 0xffffff] =
          Bytes(image.begin() + from, image.begin() + to);
    }
    legit_psn += packets;
    ++legit_packets;
    ++legit_messages;
    legit_read_bytes += length;
  };
  auto send_atomic = [&] {
    const bool fetch_add = pick(2) == 0;
    const uint64_t offset = fetch_add ? 64 : 72;  // inside the margin
    uint64_t original = 0;
    std::memcpy(&original, image.data() + offset, 8);
    const uint64_t operand = random();
    uint64_t now = original;
    ExtHeaders ext;
    if (fetch_add) {
      now = original + operand;
      ext.atomic_eth = {target.base_address + offset, target.rkey, operand, 0};
    } else {
      const uint64_t compare = pick(2) == 0 ? original : random();
      if (compare == original) now = operand;
      ext.atomic_eth = {target.base_address + offset, target.rkey, operand,
                        compare};
    }
    std::memcpy(image.data() + offset, &now, 8);
    atomic_answers[legit_psn & 0xffffff] = original;
    SendFrame(Build(fetch_add ? Opcode::kRcFetchAdd : Opcode::kRcCompareSwap,
                    legit_psn++, ext, {}));
    ++legit_packets;
    ++legit_messages;
    ++legit_atomics;
  };
  // The atomics' words are the client's too (margins elsewhere stay).
  auto send_legit = [&] {
    switch (pick(4)) {
      case 0:
        send_read();
        break;
      case 1:
        send_atomic();
        break;
      default:
        send_write();
        break;
    }
  };

  // A forged key and range: none grants the access its opcode needs.
  auto forge_key = [&](uint64_t* va, uint32_t* rkey, uint32_t* length,
                       bool write) {
    switch (pick(6)) {
      case 0:  // the target region, starting before it
        *rkey = target.rkey;
        *va = target.base_address - 1 - pick(1 << 20);
        if (*length == 0) *length = 1 + static_cast<uint32_t>(pick(64));
        break;
      case 1:  // the target region, running past its end
        *rkey = target.rkey;
        *length = std::max<uint32_t>(*length, 1 + pick(4096));
        *va = target.base_address + kTarget - *length + 1 + pick(64);
        break;
      case 2:  // the read-only region (written; a READ of it: its end)
        *rkey = read_only.rkey;
        *va = read_only.base_address + pick(4096);
        if (!write) {
          *length = std::max<uint32_t>(*length, 1);
          *va = read_only.base_address + 4096 - *length + 1 + pick(8);
        }
        break;
      case 3:  // a region with no remote access at all
        *rkey = local.rkey;
        *va = local.base_address + pick(4096);
        break;
      case 4:  // a connection region's key of some QP (its own, or not)
        *rkey = (static_cast<uint32_t>(roce::kFirstQpn + pick(16)) << 8) |
                (1 + static_cast<uint32_t>(pick(2)));
        *va = random();
        break;
      default:  // a key that is no region's
        do {
          *rkey = static_cast<uint32_t>(random());
        } while (real_keys.contains(*rkey));
        *va = pick(2) == 0 ? random() : target.base_address + pick(kTarget);
        break;
    }
  };
  // Opcodes WriteHeaders builds: RC requests and responses, UD SENDs.
  static constexpr uint8_t kOpcodes[] = {
      0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09,
      0x0a, 0x0b, 0x0c, 0x0c, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11,
      0x12, 0x13, 0x13, 0x14, 0x14, 0x16, 0x17, 0x64, 0x65};
  auto forge_frame = [&](roce::FrameParams params, uint32_t dest_qp,
                         uint32_t psn) {
    Bth bth;
    bth.opcode = kOpcodes[pick(std::size(kOpcodes))];
    bth.dest_qp = dest_qp;
    bth.psn = psn & 0xffffff;
    bth.ack_req = pick(2) == 0;
    bth.solicited = pick(8) == 0;
    const roce::OpcodeInfo& info = roce::GetOpcodeInfo(bth.opcode);
    const bool write =
        info.kind == roce::OpKind::kWrite || info.kind == roce::OpKind::kAtomic;
    uint32_t payload = 0;
    if (info.has(roce::kHasPayload)) {
      switch (pick(4)) {
        case 0:
          payload = kPmtu;
          break;
        case 1:
          payload = static_cast<uint32_t>(pick(kPmtu + 200));
          break;
        default:
          payload = static_cast<uint32_t>(pick(64));
          break;
      }
    }
    ExtHeaders ext;
    uint32_t length = pick(3) == 0   ? static_cast<uint32_t>(random())
                      : pick(4) == 0 ? 0
                                     : static_cast<uint32_t>(pick(8192));
    if (info.has(roce::kHasReth) && info.kind == roce::OpKind::kWrite &&
        pick(2) == 0) {
      length = payload;  // a WRITE ONLY whose length agrees
    }
    uint64_t va = 0;
    uint32_t rkey = 0;
    forge_key(&va, &rkey, &length, write);
    ext.reth = {va, rkey, length};
    // An atomic's 8 bytes: outside the target region (before its start,
    // or past its end), anywhere in the others.
    uint64_t atomic_va = va;
    if (rkey == target.rkey) {
      atomic_va = pick(2) == 0 ? target.base_address - 8 - pick(4096)
                               : target.base_address + kTarget + pick(4096);
    }
    if (pick(4) != 0) atomic_va &= ~uint64_t{7};
    ext.atomic_eth = {atomic_va, rkey, random(), random()};
    ext.aeth = {static_cast<uint8_t>(random()),
                static_cast<uint32_t>(random()) & 0xffffff};
    ext.atomic_ack_eth.original = random();
    ext.imm_data = static_cast<uint32_t>(random());
    ext.ieth = static_cast<uint32_t>(random());
    ext.deth.qkey = static_cast<uint32_t>(random());
    ext.deth.src_qp = static_cast<uint32_t>(random()) & 0xffffff;
    Bytes frame(roce::FrameBytes(4, bth.opcode, payload));
    const uint32_t headers =
        roce::WriteHeaders(params, bth, ext, payload, frame.data(),
                           static_cast<uint32_t>(frame.size()));
    EXPECT_NE(headers, 0u) << int(bth.opcode);
    for (uint32_t i = 0; i < payload; ++i) {
      frame[headers + i] = static_cast<uint8_t>(random());
    }
    EXPECT_NE(roce::FinishFrame(params, frame.data(),
                                static_cast<uint32_t>(frame.size())),
              0u);
    return frame;
  };
  auto client_params = [&] {
    roce::FrameParams params;
    params.src_mac = kClientMac;
    params.dst_mac = kDutMac;
    params.src_ip = kClientIp;
    params.dst_ip = kDutIp;
    params.udp_src_port = roce::UdpSourcePort(kClientQpn, qpn_);
    return params;
  };

  uint64_t on_path = 0, off_path = 0, broken = 0, replaced = 0;
  uint64_t naks_to_client = 0;
  size_t passed_to_host = 0;
  std::vector<Event> events;
  auto drain = [&] {
    Poll(2);
    for (const Out& o : Collect()) {
      if (!o.roce || o.packet.bth.dest_qp != kClientQpn) continue;
      const uint32_t psn = o.packet.bth.psn;
      const uint8_t opcode = o.packet.bth.opcode;
      const roce::OpKind kind = o.packet.info->kind;
      if (kind == roce::OpKind::kReadResponse) {
        auto it = read_answers.find(psn);
        if (it == read_answers.end() || it->second != o.payload()) {
          failures.push_back(absl::StrCat("READ response PSN ", psn));
        } else {
          ++reads_answered;
          read_answers.erase(it);
        }
      } else if (opcode == static_cast<uint8_t>(Opcode::kRcAtomicAck)) {
        auto it = atomic_answers.find(psn);
        if (it == atomic_answers.end() ||
            it->second != o.packet.ext.atomic_ack_eth.original) {
          failures.push_back(absl::StrCat("atomic answer PSN ", psn));
        } else {
          ++atomics_answered;
        }
      } else if (o.packet.ext.aeth.syndrome != roce::AethAck()) {
        // Only an injected PSN ahead of the window may NAK the client
        // (a sequence NAK naming the PSN it expects: harmless).
        if (o.packet.ext.aeth.syndrome !=
            roce::AethNak(roce::NakCode::kPsnSequenceError)) {
          failures.push_back(absl::StrCat("client NAKed PSN ", psn,
                                          " syndrome ",
                                          o.packet.ext.aeth.syndrome));
        }
        ++naks_to_client;
      }
    }
    passed_to_host += Collect(1).size();  // nothing forged may pass
    events.clear();
    dataplane().DrainEvents(&events);
    // Replace the hostile QPs its requests put into the error state, and
    // learn the PSNs the others expect (the peer knows its connection).
    for (const QpInfo& qp : module.ListQps()) {
      for (HostileQp& h : hostile) {
        if (h.qpn != qp.qpn) continue;
        if (qp.state == roce::QpState::kError) {
          ASSERT_TRUE(module.DestroyQp(h.qpn).ok());
          open_hostile(h);
          ++replaced;
        } else {
          h.psn = qp.expected_psn;
        }
      }
    }
  };

  std::set<uint32_t> hostile_qpns;
  for (uint64_t i = 0; i < forged; ++i) {
    const uint64_t kind = pick(16);
    if (kind < 8) {
      // On path: the hostile peer on one of its QPs.
      HostileQp& h = hostile[pick(hostile.size())];
      roce::FrameParams params = client_params();
      params.src_mac = kHostileMac;
      params.src_ip = kHostileIp;
      params.udp_src_port = roce::UdpSourcePort(h.remote_qpn, h.qpn);
      const uint32_t psn =
          pick(4) != 0 ? h.psn++ : static_cast<uint32_t>(random());
      SendFrame(forge_frame(params, h.qpn, psn));
      ++on_path;
    } else if (kind < 15) {
      // Off path, into the live connection.
      roce::FrameParams params = client_params();
      params.udp_src_port = static_cast<uint16_t>(random());
      uint32_t dest = qpn_;
      if (pick(3) == 0) {
        // A wrong source address with the right QPN (any PSN).
        params.src_ip = roce::Ipv4Mapped(
            pick(2) == 0 ? 0xc0000200u | static_cast<uint32_t>(pick(256))
                         : static_cast<uint32_t>(random()));
        if (params.src_ip == kClientIp) params.src_ip = kHostileIp;
      } else if (pick(2) == 0) {
        // A guessed QPN: near the real one, or any.
        do {
          dest = pick(2) == 0 ? qpn_ - 8 + static_cast<uint32_t>(pick(17))
                              : static_cast<uint32_t>(random()) & 0xffffff;
        } while (dest == qpn_ || dest == roce::kGsiQp);
      }
      // A PSN outside the window: anything but the one expected next
      // (and, with two HPUs, the other client QP's first).
      uint32_t psn;
      do {
        psn = static_cast<uint32_t>(random()) & 0xffffff;
      } while (psn == (legit_psn & 0xffffff) || psn == kClientPsn);
      SendFrame(forge_frame(params, dest, psn));
      ++off_path;
    } else {
      // Broken on the wire, to any of the QPs.
      HostileQp& h = hostile[pick(hostile.size())];
      roce::FrameParams params = client_params();
      params.src_ip = kHostileIp;
      Bytes frame = forge_frame(params, h.qpn, h.psn);
      switch (pick(3)) {
        case 0:
          frame[frame.size() - 1 - pick(4)] ^= 0x40;  // the ICRC
          break;
        case 1:
          frame[42] = static_cast<uint8_t>(0x18 + pick(8));  // reserved
          break;
        default: {
          // Cut inside the BTH, the IP and UDP lengths made to agree.
          const uint16_t cut = static_cast<uint16_t>(42 + pick(12));
          frame.resize(cut);
          StoreBe16(frame.data() + 16, static_cast<uint16_t>(cut - 14));
          StoreBe16(frame.data() + 38, static_cast<uint16_t>(cut - 34));
          StoreBe16(frame.data() + 24, 0);
          StoreBe16(frame.data() + 24,
                    checksum::Compute(frame.data() + 14, 20));
          break;
        }
      }
      SendFrame(frame);
      ++broken;
    }
    if (i % 8 == 7) {
      send_legit();
      drain();
    }
  }
  for (int i = 0; i < 4; ++i) drain();

  // Not one forged request moved a byte; every legitimate one did, once.
  EXPECT_TRUE(failures.empty())
      << failures.size() << " wrong answers; first: " << failures.front();
  for (const auto& [region, bytes] : expected) {
    absl::StatusOr<std::string> now =
        dataplane().ReadRegion(region.id, 0, 0, 1 << 20);
    ASSERT_TRUE(now.ok()) << now.status();
    EXPECT_TRUE(Bytes(now->begin(), now->end()) == bytes)
        << "region " << region.id << " (" << region.length
        << " bytes) changed outside the client's writes";
  }
  EXPECT_TRUE(read_answers.empty()) << read_answers.size() << " READ "
                                    << "response packets never came";
  EXPECT_EQ(atomics_answered, legit_atomics);
  EXPECT_EQ(delta("write_bytes"), legit_write_bytes);
  EXPECT_EQ(delta("read_bytes"), legit_read_bytes);
  EXPECT_EQ(delta("atomics"), legit_atomics);
  for (const QpInfo& qp : module.ListQps()) {
    if (qp.qpn != qpn_) continue;
    EXPECT_EQ(qp.state, roce::QpState::kRts);
    EXPECT_EQ(qp.expected_psn, legit_psn & 0xffffff);
    EXPECT_EQ(qp.msn, legit_messages & 0xffffff);
    // Nothing injected off path was executed on the live connection.
    EXPECT_EQ(qp.packets, legit_packets);
  }

  // Every forged frame counted exactly once.
  const uint64_t sent = on_path + off_path + broken;
  uint64_t parse_drops = 0;
  for (size_t e = 1; e < roce::kParseErrorCount; ++e) {
    parse_drops += delta(absl::StrCat(
        "drop_", roce::ParseErrorName(static_cast<roce::ParseError>(e))));
  }
  uint64_t responder_drops = 0;
  for (size_t r = 1; r < roce::kResponderDropReasons; ++r) {
    responder_drops += delta(absl::StrCat(
        "drop_responder_",
        roce::Describe(static_cast<roce::ResponderDropReason>(r))));
  }
  EXPECT_EQ(responder_drops, delta("drop_responder"));
  uint64_t refused = delta("refused_rnr");
  for (size_t n = 0; n < roce::kNakCodeCount; ++n) {
    refused += delta(absl::StrCat(
        "refused_", roce::ResponderNakName(static_cast<roce::NakCode>(n))));
  }
  const uint64_t engine_drops =
      delta("drop_unknown_qp") + delta("drop_wrong_peer") +
      delta("drop_unsupported") + delta("drop_not_request") +
      delta("drop_reply_queue_full") + delta("drop_no_buffer") +
      delta("drop_handoff_full");
  const uint64_t executed = delta("executed");
  ASSERT_GE(executed, legit_packets);
  const uint64_t forged_executed = executed - legit_packets;
  EXPECT_EQ(parse_drops + engine_drops + responder_drops + refused +
                delta("duplicates") + forged_executed,
            sent);
  // Every frame reached the RoCE engine (none was lost before it or
  // passed on to the host).
  EXPECT_EQ(passed_to_host, 0u);
  EXPECT_EQ(delta("rx_packets"), sent + legit_packets);
  EXPECT_EQ(delta("drop_reply_queue_full") + delta("drop_no_buffer") +
                delta("drop_handoff_full"),
            0u);
  std::printf(
      "forged %lu (on path %lu, off path %lu, broken %lu): parse drops %lu, "
      "engine drops %lu (unknown QP %lu, wrong peer %lu, unsupported %lu, "
      "not a request %lu), responder drops %lu, refused %lu (remote access "
      "%lu, invalid request %lu, PSN sequence %lu, RNR %lu), duplicates %lu, "
      "executed without memory %lu; hostile QPs replaced %lu; legitimate "
      "messages %lu (%lu packets), sequence NAKs to the client %lu\n",
      sent, on_path, off_path, broken, parse_drops, engine_drops,
      delta("drop_unknown_qp"), delta("drop_wrong_peer"),
      delta("drop_unsupported"), delta("drop_not_request"), responder_drops,
      refused, delta("refused_remote_access_error"),
      delta("refused_invalid_request"), delta("refused_psn_sequence_error"),
      delta("refused_rnr"), delta("duplicates"), forged_executed, replaced,
      legit_messages, legit_packets, naks_to_client);
}

// Exhaustion (issue 20): each limit answers with its documented refusal,
// counts it, and the connections that exist keep working. The fixture's
// QP table holds 4 QPs (the fixture's take 1 or 2) and regions 64 KiB.
class RoceLimitsTest : public RoceDataplaneTest {
 protected:
  void Configure(RingDataplaneOptions& options) override {
    options.roce.max_qps = max_qps_;
    options.region_bytes_limit = 64 << 10;
  }

  // An rdma_cm REQ from the client's QP `client_qpn` to the listened port.
  Bytes Req(uint32_t client_qpn, uint32_t comm_id) {
    roce::RdmaCmConnectParams params;
    params.transaction_id = comm_id;
    params.local_comm_id = comm_id;
    params.local_qpn = client_qpn;
    params.starting_psn = 0x1000 + client_qpn;
    params.port = kListenPort;
    params.rdma_cm.ip_version = 4;
    params.rdma_cm.src_port = static_cast<uint16_t>(0x8000 + client_qpn);
    std::copy(kClientIp.begin() + 12, kClientIp.end(),
              params.rdma_cm.src_addr.begin() + 12);
    std::copy(kDutIp.begin() + 12, kDutIp.end(),
              params.rdma_cm.dst_addr.begin() + 12);
    params.local_gid = kClientIp;
    params.remote_gid = kDutIp;
    return BuildMad(roce::BuildRdmaCmReq(params));
  }

  // The fixture's QP still serves a WRITE: acknowledged, bytes in place.
  void ExpectTheQpWorks(const RegionInfo& region) {
    const Bytes data = Pattern(256, next_psn_);
    SendFrame(Build(Opcode::kRcWriteOnly, next_psn_,
                    Reth(region.base_address, region.rkey, 256), data, true));
    Poll();
    bool acked = false;
    for (const Out& o : Collect()) {
      if (!o.roce || o.packet.bth.dest_qp != kClientQpn) continue;
      ExpectAck(o, next_psn_, roce::AethAck(), ++messages_);
      acked = true;
    }
    EXPECT_TRUE(acked) << "no ACK for PSN " << next_psn_;
    ++next_psn_;
    absl::StatusOr<std::string> stored =
        dataplane().ReadRegion(region.id, 0, 256, 1 << 20);
    ASSERT_TRUE(stored.ok());
    EXPECT_EQ(Bytes(stored->begin(), stored->end()), data);
  }

  uint32_t max_qps_ = 4;
  uint32_t next_psn_ = kClientPsn;
  uint32_t messages_ = 0;
};

// QP table full (roce.max_qps): a CM REQ is refused with REJ reason 1 ("No
// QP available", IBA 12.6.7.2), counted in cm_rejects_no_qp; CreateQp says
// RESOURCE_EXHAUSTED and names the setting; the QPs that exist keep
// working; a connection closed makes room for the next.
TEST_P(RoceLimitsTest, QpTableFullRejectsCmRequestsWithNoQp) {
  RegionInfo region = Region(4096, kRemoteWrite);
  const uint32_t free_qps = max_qps_ - GetParam();
  std::vector<roce::CmMad> reps;
  size_t rejected = 0;
  for (uint32_t i = 0; i < free_qps + 3; ++i) {
    SendFrame(Req(0x40 + i, 0xc000 + i));
    Poll();
    for (const Out& o : Collect()) {
      roce::CmMad mad = MadOf(o);
      if (std::get_if<roce::CmRep>(&mad.message) != nullptr) {
        reps.push_back(mad);
      } else if (const auto* rej = std::get_if<roce::CmRej>(&mad.message)) {
        EXPECT_EQ(rej->reason, static_cast<uint16_t>(roce::CmRejReason::kNoQp));
        EXPECT_EQ(rej->remote_comm_id, 0xc000 + i);
        ++rejected;
      } else {
        ADD_FAILURE() << "neither REP nor REJ for REQ " << i;
      }
    }
  }
  ASSERT_EQ(reps.size(), free_qps);
  EXPECT_EQ(rejected, 3u);
  EXPECT_EQ(Counter("cm_rejects_no_qp"), 3u);
  EXPECT_EQ(Counter("cm_rejects"), 3u);
  EXPECT_EQ(Counter("cm_connections"), free_qps);
  roce::RoceModule& module = *dataplane().transport<roce::RoceModule>();
  roce::QpSpec spec;
  spec.remote_qpn = 0x77;
  spec.remote_ip = kClientIp;
  spec.remote_mac = kClientMac;
  spec.pmtu = kPmtu;
  absl::StatusOr<uint32_t> refused = module.CreateQp(spec);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find("roce.max_qps"), std::string::npos)
      << refused.status();
  EXPECT_EQ(module.ListQps().size(), max_qps_);
  ExpectTheQpWorks(region);

  // The client closes its first connection: the next REQ is accepted.
  const roce::CmRep& rep = std::get<roce::CmRep>(reps[0].message);
  roce::CmMad dreq;
  dreq.header = reps[0].header;
  dreq.header.transaction_id = 0xd000;
  roce::CmDreq d;
  d.local_comm_id = 0xc000;
  d.remote_comm_id = rep.local_comm_id;
  d.remote_qpn = rep.local_qpn;
  dreq.message = d;
  SendFrame(BuildMad(dreq));
  Poll();
  ASSERT_EQ(Collect().size(), 1u);  // the DREP
  SendFrame(Req(0x60, 0xe000));
  Poll();
  std::vector<Out> out = Collect();
  ASSERT_EQ(out.size(), 1u);
  roce::CmMad again = MadOf(out[0]);
  EXPECT_NE(std::get_if<roce::CmRep>(&again.message), nullptr);
  ExpectTheQpWorks(region);
}

// Region memory at runtime.region_bytes_limit: RegisterRegion says
// RESOURCE_EXHAUSTED with what is in use and the setting to raise; the
// regions that exist keep serving RDMA; deregistering makes room.
TEST_P(RoceLimitsTest, RegionMemoryAtItsLimitIsAClearError) {
  RegionInfo region = Region(32 << 10, kRemoteWrite);
  RegionInfo second = Region(16 << 10, kRemoteWrite);
  RegionConfig config;
  config.length = 24 << 10;
  config.access = kRemoteWrite;
  absl::StatusOr<RegionInfo> refused = dataplane().RegisterRegion(config);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find("runtime.region_bytes_limit"),
            std::string::npos)
      << refused.status();
  EXPECT_NE(refused.status().message().find("49152 of the 65536"),
            std::string::npos)
      << refused.status();
  ExpectTheQpWorks(region);
  ASSERT_TRUE(dataplane().DeregisterRegion(second.id).ok());
  absl::StatusOr<RegionInfo> fits = dataplane().RegisterRegion(config);
  EXPECT_TRUE(fits.ok()) << fits.status();
  ExpectTheQpWorks(region);
}

// The mbuf pool empty (every mbuf held elsewhere, as under flat-out load):
// requests are still executed and their replies wait in the QP's reply
// queue, each attempt counted in drop_no_buffer; once mbufs are back, the
// replies leave, byte-exact, and the QP goes on.
TEST_P(RoceLimitsTest, MbufPoolExhaustionIsCountedAndRecovers) {
  RegionInfo region = Region(8192, kRemoteWrite | kRemoteRead);
  const Bytes data = Pattern(3000, 3);
  ASSERT_TRUE(dataplane().WriteRegion(region.id, 0, data).ok());
  rte_mempool* pool = rte_mempool_lookup("spinnic_pkts");
  ASSERT_NE(pool, nullptr);
  std::vector<rte_mbuf*> held;
  while (rte_mbuf* m = rte_pktmbuf_alloc(pool)) held.push_back(m);
  ASSERT_FALSE(held.empty());
  // A READ and an atomic: accepted, their answers cannot be built.
  SendFrame(Build(Opcode::kRcReadRequest, next_psn_,
                  Reth(region.base_address, region.rkey, 3000), {}));
  ExtHeaders fetch_add;
  fetch_add.atomic_eth = {region.base_address + 4096, region.rkey, 5, 0};
  SendFrame(Build(Opcode::kRcFetchAdd, next_psn_ + 3, fetch_add, {}));
  Poll(4);
  EXPECT_TRUE(Collect().empty());
  EXPECT_GE(Counter("drop_no_buffer"), 1u);
  for (rte_mbuf* m : held) rte_pktmbuf_free(m);
  Poll(4);
  std::vector<Out> out = Collect();
  ASSERT_EQ(out.size(), 4u);
  Bytes read;
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(out[i].roce);
    EXPECT_EQ(out[i].packet.bth.psn, next_psn_ + i);
    const Bytes part = out[i].payload();
    read.insert(read.end(), part.begin(), part.end());
  }
  EXPECT_EQ(read, data);
  EXPECT_EQ(out[3].packet.bth.opcode,
            static_cast<uint8_t>(Opcode::kRcAtomicAck));
  EXPECT_EQ(out[3].packet.ext.atomic_ack_eth.original, 0u);
  next_psn_ += 4;
  messages_ += 2;
  ExpectTheQpWorks(region);
}

// A control plane that does not drain events (a slow WatchEvents
// subscriber upstream): the HPU's event ring (4096 entries) fills, every
// event after that is counted in the HPU's event_overflow and lost, and
// the WRITEs that raise them are still stored and acknowledged; once
// drained, events flow again. (The gRPC side, EventHub's bounded queue per
// subscriber with missed_before, is control_api_test's
// SlowSubscriberLosesCountedEventsOthersDoNot.)
TEST_P(RoceLimitsTest, FullEventRingIsCountedAndWritesGoOn) {
  RegionInfo region = Region(4096, kRemoteWrite);
  std::vector<Event> events;
  dataplane().DrainEvents(&events);
  auto overflow = [&] {
    uint64_t total = 0;
    for (const HpuStats& h :
         dataplane().Snapshot(Dataplane::StateCopy::kOmit).hpus) {
      total += h.event_overflow;
    }
    return total;
  };
  constexpr uint32_t kWrites = 4200;
  for (uint32_t i = 0; i < kWrites; ++i) {
    ExtHeaders ext = Reth(region.base_address + 8, region.rkey, 4);
    ext.imm_data = i;
    SendFrame(Build(Opcode::kRcWriteOnlyImm, next_psn_++, ext,
                    {1, 2, 3, static_cast<uint8_t>(i)}, i + 1 == kWrites));
    if (i % 32 == 31 || i + 1 == kWrites) {
      Poll();
      Collect();
    }
  }
  messages_ += kWrites;
  EXPECT_EQ(Counter("write_immediates"), kWrites);
  events.clear();
  const size_t delivered = dataplane().DrainEvents(&events);
  EXPECT_GT(delivered, 0u);
  EXPECT_LT(delivered, kWrites);
  EXPECT_EQ(delivered + overflow(), kWrites);
  ASSERT_FALSE(events.empty());
  // The events kept are the first ones, in order.
  uint32_t data[3];
  std::memcpy(data, events.back().data, sizeof data);
  EXPECT_EQ(data[1], delivered - 1);
  ExpectTheQpWorks(region);
  // Drained: the next event is delivered.
  ExtHeaders ext = Reth(region.base_address + 8, region.rkey, 4);
  ext.imm_data = 0xabc;
  SendFrame(
      Build(Opcode::kRcWriteOnlyImm, next_psn_++, ext, {9, 9, 9, 9}, true));
  Poll();
  Collect();
  ++messages_;
  events.clear();
  dataplane().DrainEvents(&events);
  ASSERT_EQ(events.size(), 1u);
  std::memcpy(data, events[0].data, sizeof data);
  EXPECT_EQ(data[1], 0xabcu);
}

// A QP's reply queue (32 replies) full: READs arriving faster than their
// responses leave (8 KiB each, 8 response packets, 32 packets sent per QP
// per poll) find no room; they are not executed, counted in
// drop_reply_queue_full, and the client's retransmissions are served,
// byte-exact.
TEST_P(RoceLimitsTest, FullReplyQueueDropsUntilTheRequesterRetries) {
  RegionInfo region = Region(4 * 8192, kRemoteRead);
  Bytes image(4 * 8192);
  for (size_t i = 0; i < image.size(); ++i) image[i] = static_cast<uint8_t>(i);
  ASSERT_TRUE(dataplane().WriteRegion(region.id, 0, image).ok());
  constexpr uint32_t kReads = 40;
  constexpr uint32_t kLength = 8192;
  const uint32_t first_psn = next_psn_;
  std::map<uint32_t, Bytes> answers;  // response PSN -> payload
  auto read = [&](uint32_t i) {
    const uint32_t offset = (i % 4) * kLength;
    SendFrame(Build(Opcode::kRcReadRequest, first_psn + i * 8,
                    Reth(region.base_address + offset, region.rkey, kLength),
                    {}));
  };
  auto collect = [&] {
    for (const Out& o : Collect()) {
      if (o.roce && o.packet.info->kind == roce::OpKind::kReadResponse) {
        answers[o.packet.bth.psn] = o.payload();
      }
    }
  };
  for (uint32_t i = 0; i < kReads; ++i) read(i);
  for (int round = 0; round < 20; ++round) {
    Poll(1);
    collect();
  }
  EXPECT_GE(Counter("drop_reply_queue_full"), 1u);
  // The client retransmits from its first unanswered READ (go-back-N).
  for (int attempt = 0; attempt < 4; ++attempt) {
    uint32_t i = 0;
    while (i < kReads && answers.contains(first_psn + i * 8 + 7)) ++i;
    if (i == kReads) break;
    for (; i < kReads; ++i) read(i);
    for (int round = 0; round < 20; ++round) {
      Poll(1);
      collect();
    }
  }
  for (uint32_t i = 0; i < kReads; ++i) {
    const uint32_t offset = (i % 4) * kLength;
    for (uint32_t p = 0; p < 8; ++p) {
      auto it = answers.find(first_psn + i * 8 + p);
      ASSERT_NE(it, answers.end()) << "READ " << i << " packet " << p;
      EXPECT_EQ(it->second, Bytes(image.begin() + offset + p * kPmtu,
                                  image.begin() + offset + (p + 1) * kPmtu));
    }
  }
  next_psn_ = first_psn + kReads * 8;
  messages_ += kReads;
  RegionInfo target = Region(4096, kRemoteWrite);
  ExpectTheQpWorks(target);
}

// A CM REQ flood (roce.max_qps above the CM's table): REQs from distinct
// QPs fill the CM's kCmMaxConnections (256) connection slots; the rest are
// refused with REJ reason 3 ("No resources"), counted in
// cm_rejects_no_resources; the QPs that exist keep working.
class RoceCmFloodTest : public RoceLimitsTest {
 protected:
  void Configure(RingDataplaneOptions& options) override {
    max_qps_ = 320;
    RoceLimitsTest::Configure(options);
  }
};

TEST_P(RoceCmFloodTest, CmRequestFloodRejectsWithNoResources) {
  RegionInfo region = Region(4096, kRemoteWrite);
  constexpr uint32_t kFlood = 300;
  std::set<uint32_t> accepted;
  std::set<uint32_t> rejected;
  for (uint32_t i = 0; i < kFlood; ++i) {
    SendFrame(Req(0x1000 + i, 0x10000 + i));
    if (i % 32 != 31 && i + 1 != kFlood) continue;
    Poll();
    for (const Out& o : Collect()) {
      roce::CmMad mad = MadOf(o);
      if (const auto* rep = std::get_if<roce::CmRep>(&mad.message)) {
        accepted.insert(rep->remote_comm_id);
      } else if (const auto* rej = std::get_if<roce::CmRej>(&mad.message)) {
        EXPECT_EQ(rej->reason,
                  static_cast<uint16_t>(roce::CmRejReason::kNoResources));
        rejected.insert(rej->remote_comm_id);
      }
    }
  }
  EXPECT_EQ(accepted.size(), roce::kCmMaxConnections);
  EXPECT_EQ(rejected.size(), kFlood - roce::kCmMaxConnections);
  EXPECT_EQ(Counter("cm_rejects_no_resources"),
            kFlood - roce::kCmMaxConnections);
  EXPECT_EQ(Counter("cm_rejects_no_qp"), 0u);
  ExpectTheQpWorks(region);
}

TEST_P(RoceDataplaneTest, OtherTrafficStillPassesThrough) {
  // RoCE to another address is not ours: forwarded unchanged.
  Bytes frame = Build(Opcode::kRcWriteOnly, 1, Reth(0, 1, 4), {1, 2, 3, 4});
  frame[33] = 99;  // IPv4 destination 192.0.2.99; the IPv4 checksum is not
                   // the appliance's business on the passthrough path
  SendFrame(frame);
  Poll();
  std::vector<Out> host = Collect(1);
  ASSERT_EQ(host.size(), 1u);
  EXPECT_EQ(host[0].frame, frame);
}

// udaddy's service resolution (SIDR_REQ, rdma_cm's UDP port space): we serve
// no UD QP, so the answer is a SIDR_REP "service ID not supported" on the
// wire at once, counted; no QP is created.
TEST_P(RoceDataplaneTest, SidrReqIsRefusedOnTheWire) {
  const size_t qps =
      dataplane().transport<roce::RoceModule>()->ListQps().size();
  roce::CmMad request;
  request.header.transaction_id = 0x5151;
  roce::CmSidrReq sidr;
  sidr.request_id = 0x0badcafe;
  sidr.partition_key = 0xffff;
  sidr.service_id = roce::RdmaCmServiceId(roce::kRdmaPsUdp, kListenPort);
  request.message = sidr;
  SendFrame(BuildMad(request));
  Poll();
  std::vector<Out> out = Collect();
  ASSERT_EQ(out.size(), 1u);
  roce::CmMad answer = MadOf(out[0]);
  const auto* rep = std::get_if<roce::CmSidrRep>(&answer.message);
  ASSERT_NE(rep, nullptr);
  EXPECT_EQ(answer.header.transaction_id, 0x5151u);
  EXPECT_EQ(rep->request_id, 0x0badcafeu);
  EXPECT_EQ(rep->status,
            static_cast<uint8_t>(roce::CmSidrStatus::kServiceIdNotSupported));
  EXPECT_EQ(rep->service_id, sidr.service_id);
  EXPECT_EQ(rep->qpn, 0u);
  EXPECT_EQ(Counter("cm_sidr_refused"), 1u);
  EXPECT_EQ(Counter("cm_rejects"), 0u);
  EXPECT_EQ(dataplane().transport<roce::RoceModule>()->ListQps().size(), qps);
}

// librdmacm's connection, as rping makes it: REQ -> REP (a new QP) -> RTU,
// a WRITE on the new QP, then DREQ -> DREP and the QP is gone.
TEST_P(RoceDataplaneTest, ConnectsThroughTheCm) {
  RegionInfo region = Region(4096, kRemoteWrite);
  roce::RdmaCmConnectParams params;
  params.transaction_id = 0x1234;
  params.local_comm_id = 0xabcd0001;
  params.local_qpn = 0x33;
  params.starting_psn = 0x934201;
  params.port = kListenPort;
  params.rdma_cm.ip_version = 4;
  params.rdma_cm.src_port = 0xb8f6;
  std::copy(kClientIp.begin() + 12, kClientIp.end(),
            params.rdma_cm.src_addr.begin() + 12);
  std::copy(kDutIp.begin() + 12, kDutIp.end(),
            params.rdma_cm.dst_addr.begin() + 12);
  params.local_gid = kClientIp;
  params.remote_gid = kDutIp;
  params.flow_label = 0x681d0;
  SendFrame(BuildMad(roce::BuildRdmaCmReq(params)));
  Poll();
  std::vector<Out> out = Collect();
  ASSERT_EQ(out.size(), 1u);
  roce::CmMad rep_mad = MadOf(out[0]);
  const auto* rep = std::get_if<roce::CmRep>(&rep_mad.message);
  ASSERT_NE(rep, nullptr);
  EXPECT_EQ(rep_mad.header.transaction_id, 0x1234u);
  EXPECT_EQ(rep->remote_comm_id, 0xabcd0001u);
  const uint32_t qpn = rep->local_qpn;
  EXPECT_GE(qpn, roce::kFirstQpn);
  EXPECT_NE(qpn, qpn_);
  // The new QP is listed as the CM's, on the listened port.
  bool listed = false;
  for (const QpInfo& info :
       dataplane().transport<roce::RoceModule>()->ListQps()) {
    if (info.qpn != qpn) continue;
    listed = true;
    EXPECT_TRUE(info.from_cm);
    EXPECT_EQ(info.cm_port, kListenPort);
    EXPECT_EQ(info.spec.remote_qpn, 0x33u);
    EXPECT_EQ(info.spec.pmtu, 1024u);
  }
  EXPECT_TRUE(listed);
  SendFrame(BuildMad(roce::BuildRtuFor(rep_mad.header, *rep)));
  Poll();
  EXPECT_TRUE(Collect().empty());
  // Data on the new QP, from the REP's starting PSN (Linux's CM crosses
  // them over, cm.h).
  const uint32_t psn = rep->starting_psn;
  roce::FrameParams fp;
  fp.src_mac = kClientMac;
  fp.dst_mac = kDutMac;
  fp.src_ip = kClientIp;
  fp.dst_ip = kDutIp;
  Bth bth;
  bth.opcode = static_cast<uint8_t>(Opcode::kRcWriteOnly);
  bth.dest_qp = qpn;
  bth.psn = psn;
  bth.ack_req = true;
  Bytes write(roce::FrameBytes(4, bth.opcode, 4));
  ASSERT_NE(
      roce::WriteHeaders(fp, bth, Reth(region.base_address, region.rkey, 4), 4,
                         write.data(), static_cast<uint32_t>(write.size())),
      0u);
  std::copy_n(Bytes{5, 6, 7, 8}.begin(), 4,
              write.begin() + roce::HeaderBytes(4, bth.opcode));
  ASSERT_NE(
      roce::FinishFrame(fp, write.data(), static_cast<uint32_t>(write.size())),
      0u);
  SendFrame(write);
  Poll();
  out = Collect();
  ASSERT_EQ(out.size(), 1u);
  ASSERT_TRUE(out[0].roce);
  EXPECT_EQ(out[0].packet.bth.dest_qp, 0x33u);
  EXPECT_EQ(out[0].packet.bth.psn, psn);
  // rdma_cm connections take the UDP source port from the REQ's flow label.
  EXPECT_EQ(out[0].packet.src_port, roce::UdpSourcePortFromFlowLabel(0x681d0));
  // Disconnect.
  roce::CmMad dreq;
  dreq.header = rep_mad.header;
  dreq.header.transaction_id = 0x5678;
  roce::CmDreq d;
  d.local_comm_id = 0xabcd0001;
  d.remote_comm_id = rep->local_comm_id;
  d.remote_qpn = qpn;
  dreq.message = d;
  SendFrame(BuildMad(dreq));
  Poll();
  out = Collect();
  ASSERT_EQ(out.size(), 1u);
  roce::CmMad drep = MadOf(out[0]);
  ASSERT_NE(std::get_if<roce::CmDrep>(&drep.message), nullptr);
  for (const QpInfo& info :
       dataplane().transport<roce::RoceModule>()->ListQps())
    EXPECT_NE(info.qpn, qpn);
  // A disconnect is not an error.
  std::vector<Event> events;
  dataplane().DrainEvents(&events);
  for (const Event& e : events) EXPECT_NE(e.code, roce::kEventRoceQpError);
  EXPECT_EQ(Counter("qp_errors"), 0u);
  // The next connection gets another QP number (no immediate reuse).
  params.transaction_id = 0x1235;
  params.local_comm_id = 0xabcd0002;
  SendFrame(BuildMad(roce::BuildRdmaCmReq(params)));
  Poll();
  out = Collect();
  ASSERT_EQ(out.size(), 1u);
  roce::CmMad rep2 = MadOf(out[0]);
  ASSERT_NE(std::get_if<roce::CmRep>(&rep2.message), nullptr);
  EXPECT_NE(std::get<roce::CmRep>(rep2.message).local_qpn, qpn);
  EXPECT_EQ(Counter("cm_connections"), 2u);
  EXPECT_GE(Counter("cm_received"), 4u);
}

TEST_P(RoceDataplaneTest, CmRejectsAnUnlistenedPort) {
  roce::RdmaCmConnectParams params;
  params.transaction_id = 1;
  params.local_comm_id = 7;
  params.local_qpn = 0x44;
  params.port = kListenPort + 1;
  params.rdma_cm.ip_version = 4;
  params.local_gid = kClientIp;
  params.remote_gid = kDutIp;
  SendFrame(BuildMad(roce::BuildRdmaCmReq(params)));
  Poll();
  std::vector<Out> out = Collect();
  ASSERT_EQ(out.size(), 1u);
  roce::CmMad mad = MadOf(out[0]);
  const auto* rej = std::get_if<roce::CmRej>(&mad.message);
  ASSERT_NE(rej, nullptr);
  EXPECT_EQ(rej->reason,
            static_cast<uint16_t>(roce::CmRejReason::kInvalidServiceId));
  EXPECT_EQ(dataplane().transport<roce::RoceModule>()->ListQps().size(),
            GetParam());  // the fixture's
  EXPECT_EQ(Counter("cm_rejects"), 1u);
}

// Our requester: RoceExecute runs on a thread while this one drives HPU 0
// and plays the client's responder.
// What the result write of a NAAICE call carried.
struct NaaiceResult {
  uint32_t immediate = 0xffffffff;
  Bytes payload;
};

Bytes Doubles(std::initializer_list<double> values) {
  Bytes bytes;
  for (double v : values) {
    uint8_t b[8];
    std::memcpy(b, &v, 8);
    bytes.insert(bytes.end(), b, b + 8);
  }
  return bytes;
}

class RoceRequesterTest : public RoceDataplaneTest {
 protected:
  // A NAAICE host over the CM: MRSP (two inputs, one output of 4
  // doubles), inputs 1,2,3,4 and 10,20,30,40, one call with `code`.
  // `connection` numbers the host's connections (QPN, communication ID);
  // `hpu`, if given, receives the HPU that owned the NAA's QP.
  void NaaiceCall(uint8_t code, NaaiceResult* outcome, uint32_t connection = 0,
                  uint32_t* hpu = nullptr);
  // A work request on the test's QP from `region` to the client's
  // `remote_va` under `rkey`.
  RoceOp Op(roce::WorkRequest::Kind kind, const RegionInfo& region,
            uint32_t length, uint64_t remote_va, uint32_t rkey) const {
    RoceOp op;
    op.qpn = qpn_;
    op.kind = kind;
    op.region_id = region.id;
    op.length = length;
    op.remote_va = remote_va;
    op.rkey = rkey;
    return op;
  }
  std::future<absl::StatusOr<RoceOpResult>> Start(const RoceOp& op) {
    return std::async(std::launch::async, [this, op] {
      return dataplane().transport<roce::RoceModule>()->Execute(
          op, absl::Seconds(20));
    });
  }
  // Polls until the appliance sent `count` frames (bounded).
  std::vector<Out> Await(size_t count) {
    std::vector<Out> all;
    for (int i = 0; i < 20000 && all.size() < count; ++i) {
      Poll(1);
      std::vector<Out> out = Collect();
      all.insert(all.end(), out.begin(), out.end());
      if (all.size() < count) absl::SleepFor(absl::Microseconds(100));
    }
    return all;
  }
  absl::StatusOr<RoceOpResult> Finish(
      std::future<absl::StatusOr<RoceOpResult>>& result) {
    for (int i = 0; i < 20000; ++i) {
      if (result.wait_for(std::chrono::milliseconds(0)) ==
          std::future_status::ready) {
        break;
      }
      Poll(1);
      absl::SleepFor(absl::Microseconds(100));
    }
    return result.get();
  }
  // The client's ACK (or NAK) for our PSN.
  Bytes Ack(Opcode opcode, uint32_t psn, uint8_t syndrome, const Bytes& data,
            uint64_t original = 0) {
    ExtHeaders ext;
    ext.aeth = {syndrome, 1};
    ext.atomic_ack_eth.original = original;
    return Build(opcode, psn, ext, data, false, qpn_);
  }
};

TEST_P(RoceRequesterTest, WritesToTheClientAndCompletesOnItsAck) {
  RegionInfo region = Region(8192, kRemoteWrite);
  const Bytes data = Pattern(2 * kPmtu + 10, 6);
  ASSERT_TRUE(dataplane().WriteRegion(region.id, 16, data).ok());
  RoceOp op = Op(roce::WorkRequest::Kind::kWriteImm, region,
                 static_cast<uint32_t>(data.size()), 0x7f0000001000, 0x4242);
  op.offset = 16;
  op.imm = 0x00000100;
  auto result = Start(op);
  std::vector<Out> out = Await(3);
  ASSERT_EQ(out.size(), 3u);
  const Opcode expected[] = {Opcode::kRcWriteFirst, Opcode::kRcWriteMiddle,
                             Opcode::kRcWriteLastImm};
  Bytes joined;
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(out[i].roce);
    EXPECT_EQ(out[i].packet.bth.opcode, static_cast<uint8_t>(expected[i]));
    EXPECT_EQ(out[i].packet.bth.dest_qp, kClientQpn);
    EXPECT_EQ(out[i].packet.bth.psn, 0x777u + i);
    const Bytes payload = out[i].payload();
    joined.insert(joined.end(), payload.begin(), payload.end());
  }
  EXPECT_EQ(out[0].packet.ext.reth.va, 0x7f0000001000u);
  EXPECT_EQ(out[0].packet.ext.reth.rkey, 0x4242u);
  EXPECT_EQ(out[0].packet.ext.reth.dma_length, data.size());
  EXPECT_EQ(out[2].packet.ext.imm_data, 0x100u);
  EXPECT_TRUE(out[2].packet.bth.ack_req);
  EXPECT_TRUE(out[2].packet.bth.solicited);
  EXPECT_EQ(joined, data);  // every ICRC checked by Await
  // The two full packets left zero-copy from the region (headers, region
  // bytes, trailer), as a hardware requester DMAs them; the 10-byte last
  // one, below zero_copy_min_bytes, was copied.
  EXPECT_EQ(chained_frames_, 2u);
  EXPECT_EQ(Counter("zero_copy_packets"), 2u);
  EXPECT_EQ(Counter("zero_copy_fallbacks"), 0u);
  SendFrame(Ack(Opcode::kRcAck, 0x779, roce::AethAck(), {}));
  absl::StatusOr<RoceOpResult> done = Finish(result);
  EXPECT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(Counter("ops_completed"), 1u);
}

// A fatal NAK fails our WRITE and, as IB has one state per QP, puts the
// whole QP in Error: ListQps says error, not rts, and the responder stops.
TEST_P(RoceRequesterTest, FatalNakPutsTheWholeQpInError) {
  RegionInfo region = Region(4096, kRemoteWrite);
  const Bytes data = Pattern(64, 2);
  ASSERT_TRUE(dataplane().WriteRegion(region.id, 0, data).ok());
  RoceOp op =
      Op(roce::WorkRequest::Kind::kWrite, region, 64, 0x7f0000001000, 0x4242);
  auto result = Start(op);
  ASSERT_EQ(Await(1).size(), 1u);
  SendFrame(Ack(Opcode::kRcAck, 0x777,
                roce::AethNak(roce::NakCode::kRemoteAccessError), {}));
  absl::StatusOr<RoceOpResult> done = Finish(result);
  EXPECT_FALSE(done.ok());
  std::vector<QpInfo> qps =
      dataplane().transport<roce::RoceModule>()->ListQps();
  ASSERT_FALSE(qps.empty());
  EXPECT_EQ(qps.back().qpn, qpn_);
  EXPECT_EQ(qps.back().state, roce::QpState::kError);
  EXPECT_EQ(Counter("qp_errors"), 1u);
  // The client's WRITE to us is not executed any more.
  SendFrame(Build(Opcode::kRcWriteOnly, kClientPsn,
                  Reth(region.base_address, region.rkey, 4), {9, 9, 9, 9},
                  true));
  Poll();
  absl::StatusOr<std::string> stored =
      dataplane().ReadRegion(region.id, 0, 4, 1 << 20);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(Bytes(stored->begin(), stored->end()),
            Bytes(data.begin(), data.begin() + 4));
}

// kvs on a QP's SENDs (roce { qpn }): a PUT is stored and a GET answered
// with the PUT value, each answer a SEND of ours on the same QP (our PSNs
// from 0x777), its buffer held until the client acknowledges it.
TEST_P(RoceRequesterTest, KvsAnswersSendsWithSendsOnTheSameQp) {
  RegionInfo table = Region(4096, kLocalRead | kLocalWrite);
  HandlerConfig kvs;
  kvs.name = "kvs";
  kvs.kind = "kvs";
  kvs.params = {{"key_max", "8"}, {"value_max", "16"}};
  kvs.binding = {roce::kBindQp, qpn_};
  kvs.bound_regions = {table.id};
  absl::StatusOr<uint32_t> installed = dataplane().InstallEctx(kvs);
  ASSERT_TRUE(installed.ok()) << installed.status();
  // op, key_len, value_len (LE), request id (LE), key, value.
  SendFrame(Build(
      Opcode::kRcSendOnly, kClientPsn, {},
      Bytes{2, 3, 5, 0, 7, 0, 0, 0, 'k', 'e', 'y', 'v', 'a', 'l', 'u', 'e'},
      true));
  SendFrame(Build(Opcode::kRcSendOnly, kClientPsn + 1, {},
                  Bytes{1, 3, 0, 0, 8, 0, 0, 0, 'k', 'e', 'y'}, true));
  // Our SENDs, once each (the ACK timer may resend them meanwhile).
  std::vector<Out> sends;
  for (int i = 0; i < 200 && sends.size() < 2; ++i) {
    for (const Out& o : Await(1)) {
      if (o.roce &&
          o.packet.bth.opcode == static_cast<uint8_t>(Opcode::kRcSendOnly) &&
          (sends.empty() || o.packet.bth.psn != sends.back().packet.bth.psn)) {
        sends.push_back(o);
      }
    }
  }
  ASSERT_EQ(sends.size(), 2u);
  EXPECT_EQ(sends[0].packet.bth.dest_qp, kClientQpn);
  EXPECT_EQ(sends[0].packet.bth.psn, 0x777u);
  EXPECT_EQ(sends[0].payload(), (Bytes{0, 2, 0, 0, 7, 0, 0, 0}));
  EXPECT_EQ(sends[1].packet.bth.psn, 0x778u);
  EXPECT_EQ(sends[1].payload(),
            (Bytes{0, 1, 5, 0, 8, 0, 0, 0, 'v', 'a', 'l', 'u', 'e'}));
  EXPECT_EQ(Counter("handler_replies"), 2u);
  SendFrame(Ack(Opcode::kRcAck, 0x778, roce::AethAck(), {}));
  Poll();
  EXPECT_EQ(Counter("ops_completed"), 2u);
  EXPECT_EQ(Counter("handler_replies_refused"), 0u);
}

TEST_P(RoceRequesterTest, ReadsFromTheClient) {
  RegionInfo region = Region(4096, kRemoteWrite);
  RoceOp op = Op(roce::WorkRequest::Kind::kRead, region, 600, 0x1000, 7);
  op.offset = 100;
  auto result = Start(op);
  std::vector<Out> out = Await(1);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_TRUE(out[0].roce);
  EXPECT_EQ(out[0].packet.bth.opcode,
            static_cast<uint8_t>(Opcode::kRcReadRequest));
  EXPECT_EQ(out[0].packet.ext.reth.dma_length, 600u);
  const Bytes data = Pattern(600, 7);
  SendFrame(Ack(Opcode::kRcReadResponseOnly, 0x777, roce::AethAck(), data));
  absl::StatusOr<RoceOpResult> done = Finish(result);
  EXPECT_TRUE(done.ok()) << done.status();
  absl::StatusOr<std::string> stored =
      dataplane().ReadRegion(region.id, 100, 600, 1 << 20);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(Bytes(stored->begin(), stored->end()), data);
}

TEST_P(RoceRequesterTest, FetchAddReturnsTheOriginal) {
  RegionInfo region = Region(64, kRemoteWrite);
  RoceOp op = Op(roce::WorkRequest::Kind::kFetchAdd, region, 8, 0x2000, 9);
  op.offset = 16;
  op.swap_add = 5;
  auto result = Start(op);
  std::vector<Out> out = Await(1);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].packet.bth.opcode,
            static_cast<uint8_t>(Opcode::kRcFetchAdd));
  EXPECT_EQ(out[0].packet.ext.atomic_eth.swap_add, 5u);
  SendFrame(Ack(Opcode::kRcAtomicAck, 0x777, roce::AethAck(), {}, 1234));
  absl::StatusOr<RoceOpResult> done = Finish(result);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->atomic_original, 1234u);
  // ... and in the local bytes, host order, as a NIC's completion has it.
  absl::StatusOr<std::string> local =
      dataplane().ReadRegion(region.id, 16, 8, 1 << 20);
  ASSERT_TRUE(local.ok()) << local.status();
  uint64_t stored = 0;
  std::memcpy(&stored, local->data(), 8);
  EXPECT_EQ(stored, 1234u);
}

TEST_P(RoceRequesterTest, RemoteAccessNakFailsTheOperation) {
  RegionInfo region = Region(64, kRemoteWrite);
  RoceOp op = Op(roce::WorkRequest::Kind::kWrite, region, 16, 0x2000, 9);
  auto result = Start(op);
  ASSERT_EQ(Await(1).size(), 1u);
  SendFrame(Ack(Opcode::kRcAck, 0x777,
                roce::AethNak(roce::NakCode::kRemoteAccessError), {}));
  absl::StatusOr<RoceOpResult> done = Finish(result);
  EXPECT_EQ(done.status().code(), absl::StatusCode::kPermissionDenied)
      << done.status();
  // A bad request never reaches the wire.
  op.region_id = 999;
  EXPECT_EQ(dataplane()
                .transport<roce::RoceModule>()
                ->Execute(op, absl::Seconds(1))
                .status()
                .code(),
            absl::StatusCode::kNotFound);
}

// A NAAICE host against the appliance, as the NAAICE library's AP1 client
// talks to its NAA: connect on the NAAICE port, the memory-region setup
// protocol over SEND, inputs by RDMA WRITE, the function code in the last
// WRITE's immediate, the result back by WRITE with immediate.
void RoceRequesterTest::NaaiceCall(uint8_t code, NaaiceResult* outcome,
                                   uint32_t connection, uint32_t* hpu) {
  const uint32_t kHostQpn = 0x55 + connection;
  constexpr uint32_t kHostPsn = 0x100;
  const uint64_t sessions_before = Counter("naaice_sessions");
  const uint64_t completed_before = Counter("ops_completed");
  roce::RdmaCmConnectParams params;
  params.transaction_id = 77 + connection;
  params.local_comm_id = 0x1001 + connection;
  params.local_qpn = kHostQpn;
  params.starting_psn = kHostPsn;
  params.port = kNaaicePort;
  params.rdma_cm.ip_version = 4;
  params.local_gid = kClientIp;
  params.remote_gid = kDutIp;
  SendFrame(BuildMad(roce::BuildRdmaCmReq(params)));
  std::vector<Out> out = Await(1);
  ASSERT_EQ(out.size(), 1u);
  roce::CmMad rep_mad = MadOf(out[0]);
  const auto* rep = std::get_if<roce::CmRep>(&rep_mad.message);
  ASSERT_NE(rep, nullptr);
  const uint32_t naa_qpn = rep->local_qpn;
  for (const QpInfo& qp :
       dataplane().transport<roce::RoceModule>()->ListQps()) {
    if (qp.qpn == naa_qpn && hpu != nullptr) *hpu = qp.hpu;
  }
  // The host sends from the REP's PSN, we from the REQ's (cm.h).
  const uint32_t host_psn = rep->starting_psn;
  const uint32_t naa_psn = kHostPsn;
  SendFrame(BuildMad(roce::BuildRtuFor(rep_mad.header, *rep)));

  // The host's requests (AckReq on each) and its ACKs of ours, to the NAA's
  // QP.
  auto send_from_host = [&](Opcode opcode, uint32_t psn, const ExtHeaders& ext,
                            const Bytes& payload) {
    SendFrame(Build(opcode, psn, ext, payload, /*ack_req=*/true, naa_qpn));
  };
  auto host_ack = [&](uint32_t psn) {
    ExtHeaders ext;
    ext.aeth = {roce::AethAck(), 1};
    SendFrame(Build(Opcode::kRcAck, psn, ext, {}, false, naa_qpn));
  };

  // MRSP: two inputs and one output of 4 doubles each.
  std::vector<roce::mrsp::RegionRequest> regions(3);
  for (uint32_t i = 0; i < 3; ++i) {
    regions[i].flags = i < 2 ? roce::mrsp::kFlagInput : roce::mrsp::kFlagOutput;
    regions[i].host_address = 0x7000 + 0x1000 * i;
    regions[i].rkey = 0x20 + i;
    regions[i].size = 32;
  }
  Bytes request(roce::mrsp::kMaxMessageBytes);
  request.resize(roce::mrsp::BuildAdvertiseRequest(regions, request.data(),
                                                   request.size()));
  ASSERT_FALSE(request.empty());
  send_from_host(Opcode::kRcSendOnly, host_psn, {}, request);
  out = Await(2);
  ASSERT_EQ(out.size(), 2u);
  ExpectAck(out[0], host_psn, roce::AethAck(), 1, kHostQpn, naa_qpn);
  ASSERT_EQ(out[1].packet.bth.opcode,
            static_cast<uint8_t>(Opcode::kRcSendOnly));
  EXPECT_EQ(out[1].packet.bth.psn, naa_psn);
  EXPECT_TRUE(out[1].packet.bth.solicited);
  roce::mrsp::Advertise advert;
  ASSERT_EQ(roce::mrsp::ParseAdvertise(out[1].payload(), &advert),
            roce::mrsp::ParseError::kNone);
  ASSERT_EQ(advert.count, 3);
  host_ack(naa_psn);

  // The function code rides on the last input's WRITE with immediate.
  send_from_host(Opcode::kRcWriteOnly, roce::PsnAdd(host_psn, 1),
                 Reth(advert.regions[0].address, advert.regions[0].rkey, 32),
                 Doubles({1, 2, 3, 4}));
  ExtHeaders last = Reth(advert.regions[1].address, advert.regions[1].rkey, 32);
  last.imm_data = roce::mrsp::MakeRequestImmediate(code, 0);
  send_from_host(Opcode::kRcWriteOnlyImm, roce::PsnAdd(host_psn, 2), last,
                 Doubles({10, 20, 30, 40}));
  out = Await(3);
  ASSERT_GE(out.size(), 2u);
  // The ACK of the host's writes first (one, coalesced), then the result.
  ExpectAck(out[0], roce::PsnAdd(host_psn, 2), roce::AethAck(), 3, kHostQpn,
            naa_qpn);
  const Out* result = nullptr;
  for (const Out& o : out) {
    if (o.packet.bth.opcode == static_cast<uint8_t>(Opcode::kRcWriteOnlyImm)) {
      result = &o;
    }
  }
  ASSERT_NE(result, nullptr);
  EXPECT_EQ(result->packet.bth.dest_qp, kHostQpn);
  EXPECT_EQ(result->packet.bth.psn, roce::PsnAdd(naa_psn, 1));
  EXPECT_EQ(result->packet.ext.reth.va, 0x9000u);
  EXPECT_EQ(result->packet.ext.reth.rkey, 0x22u);
  EXPECT_TRUE(result->packet.bth.solicited);
  outcome->immediate = result->packet.ext.imm_data;
  outcome->payload = result->payload();
  host_ack(roce::PsnAdd(naa_psn, 1));
  Poll();
  EXPECT_EQ(Counter("naaice_sessions"), sessions_before + 1);
  // Our SEND and our result write.
  EXPECT_EQ(Counter("ops_completed"), completed_before + 2);
}

TEST_P(RoceRequesterTest, NaaiceVectorSumEndToEnd) {
  NaaiceResult result;
  ASSERT_NO_FATAL_FAILURE(NaaiceCall(naaice::kCodeVectorSum, &result));
  EXPECT_EQ(result.immediate, 0u);  // success
  EXPECT_EQ(result.payload, Doubles({11, 22, 33, 44}));
  EXPECT_EQ(Counter("naaice_calls"), 1u);
  EXPECT_EQ(Counter("naaice_errors"), 0u);
}

TEST_P(RoceRequesterTest, NaaiceConnectionsRunOnEveryHpu) {
  // The CM places connections round robin: with two HPUs, one each.
  std::vector<uint32_t> calls_on(GetParam());
  for (uint32_t connection = 0; connection < 2; ++connection) {
    NaaiceResult result;
    uint32_t hpu = UINT32_MAX;
    ASSERT_NO_FATAL_FAILURE(
        NaaiceCall(naaice::kCodeVectorSum, &result, connection, &hpu));
    EXPECT_EQ(result.immediate, 0u);
    EXPECT_EQ(result.payload, Doubles({11, 22, 33, 44}));
    ASSERT_LT(hpu, GetParam());
    ++calls_on[hpu];
  }
  for (uint32_t h = 0; h < GetParam(); ++h) {
    EXPECT_EQ(calls_on[h], 2u / GetParam()) << "HPU " << h;
  }
  EXPECT_EQ(Counter("naaice_calls"), 2u);
  EXPECT_EQ(Counter("naaice_errors"), 0u);
}

TEST_P(RoceRequesterTest, NaaiceCallsAFunctionInstalledAsAnEctx) {
  // Code 40 has no built-in function; an ECTX of kind naaice_function binds
  // vector_sum to it.
  HandlerConfig handler;
  handler.name = "sum40";
  handler.kind = "naaice_function";
  handler.params["function"] = "vector_sum";
  handler.binding = {roce::kBindNaaiceFunction, 40};
  absl::StatusOr<uint32_t> installed = dataplane().InstallEctx(handler);
  ASSERT_TRUE(installed.ok()) << installed.status();
  NaaiceResult result;
  ASSERT_NO_FATAL_FAILURE(NaaiceCall(40, &result));
  EXPECT_EQ(result.immediate, 0u);
  EXPECT_EQ(result.payload, Doubles({11, 22, 33, 44}));
  EXPECT_EQ(Counter("naaice_calls"), 1u);
}

TEST_P(RoceRequesterTest, NaaiceCodeWithoutFunctionIsAnsweredUnknown) {
  NaaiceResult result;
  ASSERT_NO_FATAL_FAILURE(NaaiceCall(40, &result));
  // Return code 0x7f (unknown function) in the immediate; no output bytes.
  EXPECT_EQ(result.immediate,
            roce::mrsp::MakeResultImmediate(naaice::kErrorUnknownFunction));
  EXPECT_TRUE(result.payload.empty());
  EXPECT_EQ(Counter("naaice_calls"), 0u);
}

TEST_P(RoceDataplaneTest, QpLifecycleOverTheControlApi) {
  roce::QpSpec spec;
  spec.remote_qpn = 0;
  EXPECT_EQ(
      dataplane().transport<roce::RoceModule>()->CreateQp(spec).status().code(),
      absl::StatusCode::kInvalidArgument);
  spec.remote_qpn = 0x22;
  spec.remote_ip = kClientIp;
  spec.remote_mac = kClientMac;
  spec.pmtu = 4096;  // above what a 1500-byte port carries
  EXPECT_EQ(
      dataplane().transport<roce::RoceModule>()->CreateQp(spec).status().code(),
      absl::StatusCode::kInvalidArgument);
  spec.pmtu = 1024;
  absl::StatusOr<uint32_t> qpn =
      dataplane().transport<roce::RoceModule>()->CreateQp(spec);
  ASSERT_TRUE(qpn.ok()) << qpn.status();
  EXPECT_NE(*qpn, qpn_);
  Poll();
  const size_t before = GetParam();  // the fixture's QPs
  EXPECT_EQ(dataplane().transport<roce::RoceModule>()->ListQps().size(),
            before + 1);
  ASSERT_TRUE(dataplane().transport<roce::RoceModule>()->DestroyQp(*qpn).ok());
  EXPECT_EQ(dataplane().transport<roce::RoceModule>()->DestroyQp(*qpn).code(),
            absl::StatusCode::kNotFound);
  Poll();
  EXPECT_EQ(dataplane().transport<roce::RoceModule>()->ListQps().size(),
            before);
  EXPECT_EQ(dataplane().transport<roce::RoceModule>()->config().path_mtu,
            1024u);
}

TEST_P(RoceDataplaneTest, QpsSpreadOverTheHpusThatOwnThem) {
  roce::RoceModule& module = *dataplane().transport<roce::RoceModule>();
  EXPECT_EQ(module.qp_hpus(), GetParam());
  std::vector<uint32_t> per_hpu(GetParam());
  for (const QpInfo& qp : module.ListQps()) {
    ASSERT_LT(qp.hpu, GetParam());
    ++per_hpu[qp.hpu];
  }
  for (uint32_t h = 0; h < GetParam(); ++h) EXPECT_EQ(per_hpu[h], 1u) << h;
  // A write on the test's QP lands once, whichever HPU received it.
  RegionInfo region = Region(4096, kRemoteWrite);
  SendFrame(Build(Opcode::kRcWriteOnly, kClientPsn,
                  Reth(region.base_address, region.rkey, 64), Pattern(64, 9),
                  /*ack_req=*/true));
  Poll();
  ASSERT_EQ(Collect().size(), 1u);
  EXPECT_EQ(Counter("writes"), 1u);
  EXPECT_EQ(Counter("handoffs"), GetParam() > 1 ? 1u : 0u);
}

// Congestion control off (the default): a CE-marked packet is counted and
// executed as any other, no CNP answers it, and our packets are Not-ECT.
TEST_P(RoceDataplaneTest, CeMarksWithoutCongestionControlAreOnlyCounted) {
  RegionInfo region = Region(4096, kRemoteWrite);
  traffic_class_ = roce::kEcnCe;
  SendFrame(Build(Opcode::kRcWriteOnly, kClientPsn,
                  Reth(region.base_address, region.rkey, 64), Pattern(64, 2),
                  /*ack_req=*/true));
  Poll();
  std::vector<Out> out = Collect();
  ASSERT_EQ(out.size(), 1u);
  ExpectAck(out[0], kClientPsn, roce::AethAck(), 1);
  EXPECT_EQ(out[0].packet.ecn(), roce::kEcnNotEct);
  EXPECT_EQ(Counter("ecn_ce_received"), 1u);
  EXPECT_EQ(Counter("cnp_sent"), 0u);
  EXPECT_EQ(Counter("writes"), 1u);
}

// A clock the test steps, so that every interval, timer and send time is
// exact: congestion control's in RoceCongestionTest, the requester's
// (ACK and RNR timers, READ response pacing) in RocePerftestClockTest,
// RocePerftestWriteLatTest and RoceReadPacingTest.
std::atomic<uint64_t> fake_now_ns{0};
uint64_t FakeNow() { return fake_now_ns.load(std::memory_order_relaxed); }
void AdvanceFakeNow(uint64_t ns) { fake_now_ns.fetch_add(ns); }
// The requester's clock on the stepped one, started far from zero.
void UseFakeRequesterClock(RingDataplaneOptions& options) {
  fake_now_ns = uint64_t{1} << 40;
  options.roce.requester_now_ns = &FakeNow;
}

// roce.congestion on: ECT(0), CNPs at most every 50 us, DCQCN at a 10 Gb/s
// line rate with the published defaults.
class RoceCongestionTest : public RoceRequesterTest {
 protected:
  static constexpr uint64_t kStart = 1'000'000'000;
  static constexpr uint64_t kLineRate = 10'000'000'000;
  void Configure(RingDataplaneOptions& options) override {
    fake_now_ns = kStart;
    options.roce.congestion.enabled = true;
    options.roce.congestion.ecn = roce::kEcnEct0;
    options.roce.congestion.cnp_interval_ns = 50'000;
    options.roce.congestion.dcqcn.line_rate_bps = kLineRate;
    options.roce.congestion.now_ns = &FakeNow;
  }
  QpInfo Info() {
    for (const QpInfo& qp :
         dataplane().transport<roce::RoceModule>()->ListQps()) {
      if (qp.qpn == qpn_) return qp;
    }
    ADD_FAILURE() << "no QP " << qpn_;
    return QpInfo();
  }
  // The client's frame params (the appliance's are these mirrored).
  roce::FrameParams ClientParams() const {
    roce::FrameParams params;
    params.src_mac = kClientMac;
    params.dst_mac = kDutMac;
    params.ip_version = 4;
    params.src_ip = kClientIp;
    params.dst_ip = kDutIp;
    params.udp_src_port = roce::UdpSourcePort(kClientQpn, qpn_);
    return params;
  }
  Bytes Cnp(uint32_t dest_qp) { return Cnp(dest_qp, ClientParams()); }
  Bytes Cnp(uint32_t dest_qp, const roce::FrameParams& params) {
    Bytes frame(roce::CnpFrameBytes(4));
    EXPECT_EQ(roce::BuildCnp(params, dest_qp, frame.data(),
                             static_cast<uint32_t>(frame.size())),
              frame.size());
    return frame;
  }
  // A CE-marked WRITE Only of 64 bytes with `psn`; the CNPs it caused.
  std::vector<Out> CeWrite(const RegionInfo& region, uint32_t psn) {
    traffic_class_ = roce::kEcnCe;
    SendFrame(Build(Opcode::kRcWriteOnly, psn,
                    Reth(region.base_address, region.rkey, 64), Pattern(64, 3),
                    /*ack_req=*/true));
    Poll();
    std::vector<Out> cnps;
    for (Out& o : Collect()) {
      if (o.cnp) cnps.push_back(std::move(o));
    }
    return cnps;
  }
};

TEST_P(RoceCongestionTest, CeMarkedWriteGetsOneCnpPerInterval) {
  RegionInfo region = Region(4096, kRemoteWrite);
  std::vector<Out> cnps = CeWrite(region, kClientPsn);
  ASSERT_EQ(cnps.size(), 1u);
  // Byte for byte what BuildCnp makes for the client's QP, from the QP's
  // addresses and UDP source port, Not-ECT.
  roce::FrameParams params;
  params.src_mac = kDutMac;
  params.dst_mac = kClientMac;
  params.ip_version = 4;
  params.src_ip = kDutIp;
  params.dst_ip = kClientIp;
  params.udp_src_port = roce::UdpSourcePort(qpn_, kClientQpn);
  Bytes expected(roce::CnpFrameBytes(4));
  ASSERT_EQ(roce::BuildCnp(params, kClientQpn, expected.data(),
                           static_cast<uint32_t>(expected.size())),
            expected.size());
  EXPECT_EQ(cnps[0].frame, expected);
  // Within the interval: none, however many marks.
  EXPECT_TRUE(CeWrite(region, kClientPsn + 1).empty());
  fake_now_ns = kStart + 49'999;
  EXPECT_TRUE(CeWrite(region, kClientPsn + 2).empty());
  // The interval is over: one more.
  fake_now_ns = kStart + 50'000;
  cnps = CeWrite(region, kClientPsn + 3);
  ASSERT_EQ(cnps.size(), 1u);
  EXPECT_EQ(cnps[0].frame, expected);
  EXPECT_EQ(Counter("ecn_ce_received"), 4u);
  EXPECT_EQ(Counter("cnp_sent"), 2u);
  EXPECT_EQ(Counter("cnp_held"), 2u);
  EXPECT_EQ(Counter("writes"), 4u);  // marked packets are executed
  EXPECT_EQ(Info().cnps_sent, 2u);
  EXPECT_EQ(Info().ce_marks, 4u);
}

TEST_P(RoceCongestionTest, CnpCutsTheRateAndPacesTheWrites) {
  EXPECT_EQ(Info().rate_bps, kLineRate);
  SendFrame(Cnp(qpn_));
  Poll();
  EXPECT_TRUE(Collect().empty());
  // DCQCN's first cut with alpha 1: Rc = Rc (1 - 1/2); alpha = (1 - g) + g.
  QpInfo info = Info();
  EXPECT_EQ(info.rate_bps, 5'000'000'000u);
  EXPECT_DOUBLE_EQ(info.alpha, 1.0);
  EXPECT_EQ(info.cnps_received, 1u);
  EXPECT_EQ(Counter("cnp_received"), 1u);

  RegionInfo region = Region(8192, kRemoteWrite);
  RoceOp op =
      Op(roce::WorkRequest::Kind::kWrite, region, 4 * kPmtu, 0x10000, 7);
  auto result = Start(op);
  // The clock stands still: one packet, then the requester waits for its
  // time on the wire at 5 Gb/s (frame + 24 bytes of FCS, preamble, gap).
  // WRITE First: 14 + 20 + 8 + 12 + 16 + 1024 + 4 = 1098 bytes,
  // 1122 * 8 / 5 = 1795.2 ns; Middle and Last without the RETH: 1769.6 ns.
  std::vector<Out> out = Await(1);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].packet.bth.opcode,
            static_cast<uint8_t>(Opcode::kRcWriteFirst));
  EXPECT_EQ(out[0].packet.ecn(), roce::kEcnEct0);
  EXPECT_EQ(out[0].frame.size(), 1098u);
  uint64_t next = kStart + 1795;
  EXPECT_EQ(Info().next_send_ns, next);
  const uint64_t gaps[] = {1769, 1769, 0};
  for (int i = 1; i < 4; ++i) {
    fake_now_ns = next - 1;
    Poll();
    EXPECT_TRUE(Collect().empty()) << "packet " << i << " before its time";
    fake_now_ns = next;
    Poll();
    std::vector<Out> sent = Collect();
    ASSERT_EQ(sent.size(), 1u) << "packet " << i;
    EXPECT_EQ(sent[0].packet.bth.psn, 0x777u + i);
    EXPECT_EQ(sent[0].packet.ecn(), roce::kEcnEct0);
    EXPECT_EQ(sent[0].frame.size(), 1082u);
    if (gaps[i - 1] != 0) {
      next += gaps[i - 1];
      EXPECT_EQ(Info().next_send_ns, next);
    }
  }
  traffic_class_ = 0;
  SendFrame(Ack(Opcode::kRcAck, 0x77a, roce::AethAck(), {}));
  absl::StatusOr<RoceOpResult> done = Finish(result);
  EXPECT_TRUE(done.ok()) << done.status();
}

// A poll that comes late sends what the rate allowed meanwhile (the pacing
// slack), and no more.
TEST_P(RoceCongestionTest, ALatePollCatchesUpToTheRate) {
  SendFrame(Cnp(qpn_));
  Poll();
  RegionInfo region = Region(8192, kRemoteWrite);
  RoceOp op =
      Op(roce::WorkRequest::Kind::kWrite, region, 4 * kPmtu, 0x10000, 7);
  auto result = Start(op);
  ASSERT_EQ(Await(1).size(), 1u);  // WRITE First at kStart, 1795 ns
  // Time for two more at 5 Gb/s (1769 ns each) and a bit: two leave.
  fake_now_ns = kStart + 1795 + 1769 + 1000;
  Poll();
  EXPECT_EQ(Collect().size(), 2u);
  EXPECT_EQ(Info().next_send_ns, kStart + 1795 + 2 * 1769);
  fake_now_ns = kStart + 1795 + 2 * 1769 - 1;
  Poll();
  EXPECT_TRUE(Collect().empty());
  fake_now_ns = kStart + 1795 + 2 * 1769;
  Poll();
  EXPECT_EQ(Collect().size(), 1u);
  SendFrame(Ack(Opcode::kRcAck, 0x77a, roce::AethAck(), {}));
  absl::StatusOr<RoceOpResult> done = Finish(result);
  EXPECT_TRUE(done.ok()) << done.status();
}

TEST_P(RoceCongestionTest, CnpForAnUnknownQpIsCountedAndIgnored) {
  SendFrame(Cnp(qpn_ + 50));
  Poll();
  EXPECT_TRUE(Collect().empty());
  EXPECT_EQ(Counter("drop_cnp_unknown_qp"), 1u);
  EXPECT_EQ(Counter("cnp_received"), 0u);
  EXPECT_EQ(Info().rate_bps, kLineRate);
  EXPECT_EQ(Info().cnps_received, 0u);
}

TEST_P(RoceCongestionTest, CnpFromAnotherAddressIsCountedAndIgnored) {
  roce::FrameParams params = ClientParams();
  params.src_ip[15] ^= 1;
  SendFrame(Cnp(qpn_, params));
  Poll();
  EXPECT_TRUE(Collect().empty());
  EXPECT_EQ(Counter("drop_wrong_peer"), 1u);
  EXPECT_EQ(Counter("cnp_received"), 0u);
  EXPECT_EQ(Info().rate_bps, kLineRate);
}

// However many CNPs, the rate stops at DCQCN's min rate (1 Mb/s) and the
// QP still sends, one packet per its time on the wire at that rate.
TEST_P(RoceCongestionTest, ManyCnpsStopAtTheMinRateAndTheQpStillSends) {
  // Alpha stays 1 ((1 - g) 1 + g), so each CNP halves: 10 G / 2^14 is below
  // 1 Mb/s.
  for (int i = 0; i < 20; ++i) SendFrame(Cnp(qpn_));
  Poll();
  EXPECT_EQ(Info().cnps_received, 20u);
  EXPECT_EQ(Info().rate_bps, 1'000'000u);
  RegionInfo region = Region(8192, kRemoteWrite);
  RoceOp op =
      Op(roce::WorkRequest::Kind::kWrite, region, 2 * kPmtu, 0x10000, 7);
  auto result = Start(op);
  ASSERT_EQ(Await(1).size(), 1u);  // WRITE First at once
  // (1098 + 24) * 8 bits at 1 Mb/s: 8.976 ms.
  const uint64_t next = kStart + 8'976'000;
  EXPECT_EQ(Info().next_send_ns, next);
  fake_now_ns = next - 1;
  Poll();
  EXPECT_TRUE(Collect().empty());
  fake_now_ns = next;
  Poll();
  std::vector<Out> sent = Collect();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].packet.bth.opcode,
            static_cast<uint8_t>(Opcode::kRcWriteLast));
  // Its timers ran meanwhile (the increase timer every 300 us): the rate
  // is above the floor again.
  EXPECT_GT(Info().rate_bps, 1'000'000u);
  SendFrame(Ack(Opcode::kRcAck, 0x778, roce::AethAck(), {}));
  absl::StatusOr<RoceOpResult> done = Finish(result);
  EXPECT_TRUE(done.ok()) << done.status();
}

// roce.congestion.initial_rate_mbps: a new QP is paced at the initial rate
// before any CNP.
class RoceInitialRateTest : public RoceCongestionTest {
 protected:
  void Configure(RingDataplaneOptions& options) override {
    RoceCongestionTest::Configure(options);
    options.roce.congestion.dcqcn.initial_rate_bps = 2'500'000'000;
  }
};

TEST_P(RoceInitialRateTest, NewQpStartsPacedAtTheInitialRate) {
  EXPECT_EQ(Info().rate_bps, 2'500'000'000u);
  RegionInfo region = Region(8192, kRemoteWrite);
  RoceOp op =
      Op(roce::WorkRequest::Kind::kWrite, region, 4 * kPmtu, 0x10000, 7);
  auto result = Start(op);
  // A QP that starts sending gets the pacing slack (10 us) at the rate, a
  // bounded burst: at 2.5 Gb/s the WRITE First takes (1098 + 24) * 8 /
  // 2.5 = 3590 ns, a Middle or Last (1082 + 24) * 8 / 2.5 = 3539 ns. From
  // kStart - 10 us: First, Middle, Middle leave at once; the Last is due
  // at kStart - 10000 + 3590 + 2 * 3539 = kStart + 668.
  std::vector<Out> out = Await(3);
  ASSERT_EQ(out.size(), 3u);
  const uint64_t next = kStart + 668;
  EXPECT_EQ(Info().next_send_ns, next);
  fake_now_ns = next - 1;
  Poll();
  EXPECT_TRUE(Collect().empty());
  fake_now_ns = next;
  Poll();
  std::vector<Out> last = Collect();
  ASSERT_EQ(last.size(), 1u);
  EXPECT_EQ(last[0].packet.bth.opcode,
            static_cast<uint8_t>(Opcode::kRcWriteLast));
  EXPECT_EQ(Counter("cnp_received"), 0u);
  SendFrame(Ack(Opcode::kRcAck, 0x77a, roce::AethAck(), {}));
  absl::StatusOr<RoceOpResult> done = Finish(result);
  EXPECT_TRUE(done.ok()) << done.status();
}

std::string HpuCountName(const ::testing::TestParamInfo<uint32_t>& info) {
  return absl::StrCat(info.param, "hpu");
}
// perftest's -R server (roce.perftest_port), frame by frame as the rxe
// guests' perftest 6.06 clients drive it (docs/interop.md): a control
// connection whose SENDs we answer one for one, then a data connection
// with a region of roce.perftest_region_bytes, into which the tests WRITE
// or SEND. ib_write_lat and ib_send_lat wait for each message to come back;
// the bandwidth tests stream.
class RocePerftestTest : public RoceRequesterTest {
 protected:
  static constexpr uint16_t kPerftestPort = 18515;
  struct Conn {
    uint32_t qpn = 0;         // ours
    uint32_t client_qpn = 0;  // the client's
    uint32_t client_psn = 0;  // its next request's
    uint32_t our_psn = 0;     // our next request's
  };

  void Configure(RingDataplaneOptions& options) override {
    options.roce.perftest_port = kPerftestPort;
    options.roce.listen_ports.push_back(kPerftestPort);
    options.roce.perftest_region_bytes = region_bytes_;
  }

  // REQ to the perftest port; the appliance's answer (REP or REJ).
  roce::CmMad Request(uint32_t client_qpn, uint32_t comm_id,
                      uint16_t port = kPerftestPort) {
    roce::RdmaCmConnectParams params;
    params.transaction_id = 0x900 + comm_id;
    params.local_comm_id = comm_id;
    params.local_qpn = client_qpn;
    params.starting_psn = 0x5000 * client_qpn;
    params.port = port;
    params.rdma_cm.ip_version = 4;
    params.local_gid = kClientIp;
    params.remote_gid = kDutIp;
    SendFrame(BuildMad(roce::BuildRdmaCmReq(params)));
    std::vector<Out> out = Await(1);
    EXPECT_EQ(out.size(), 1u);
    return out.empty() ? roce::CmMad() : MadOf(out[0]);
  }
  Conn Connect(uint32_t client_qpn, uint32_t comm_id,
               uint16_t port = kPerftestPort) {
    Conn c;
    roce::CmMad mad = Request(client_qpn, comm_id, port);
    const auto* rep = std::get_if<roce::CmRep>(&mad.message);
    EXPECT_NE(rep, nullptr);
    if (rep == nullptr) return c;
    c.qpn = rep->local_qpn;
    c.client_qpn = client_qpn;
    c.client_psn = rep->starting_psn;  // the client sends from the REP's
    c.our_psn = 0x5000 * client_qpn;   // we from the REQ's (cm.h)
    SendFrame(BuildMad(roce::BuildRtuFor(mad.header, *rep)));
    Poll();
    EXPECT_TRUE(Collect().empty());
    return c;
  }
  // A SEND (FIRST/MIDDLE/LAST at the path MTU) or a WRITE ONLY from the
  // client, AckReq on its last packet.
  void ClientSend(Conn& c, const Bytes& message) {
    const size_t packets =
        std::max<size_t>(1, (message.size() + kPmtu - 1) / kPmtu);
    for (size_t i = 0; i < packets; ++i) {
      const Opcode opcode = packets == 1      ? Opcode::kRcSendOnly
                            : i == 0          ? Opcode::kRcSendFirst
                            : i + 1 < packets ? Opcode::kRcSendMiddle
                                              : Opcode::kRcSendLast;
      const size_t begin = i * kPmtu;
      const size_t end = std::min(message.size(), begin + kPmtu);
      SendFrame(Build(opcode, c.client_psn, {},
                      Bytes(message.begin() + begin, message.begin() + end),
                      i + 1 == packets, c.qpn));
      c.client_psn = roce::PsnAdd(c.client_psn, 1);
    }
  }
  void ClientWrite(Conn& c, uint64_t va, uint32_t rkey, const Bytes& data) {
    SendFrame(Build(Opcode::kRcWriteOnly, c.client_psn,
                    Reth(va, rkey, static_cast<uint32_t>(data.size())), data,
                    true, c.qpn));
    c.client_psn = roce::PsnAdd(c.client_psn, 1);
  }
  // The client acknowledges our requests up to `psn`.
  void ClientAck(const Conn& c, uint32_t psn) {
    ExtHeaders ext;
    ext.aeth = {roce::AethAck(), 1};
    SendFrame(Build(Opcode::kRcAck, psn, ext, {}, false, c.qpn));
    Poll();
  }
  // One control exchange: the client's SEND, our ACK and our SEND of the
  // same size (acknowledged by the client); our SEND's bytes.
  Bytes Exchange(Conn& control, const Bytes& message) {
    ClientSend(control, message);
    std::vector<Out> out = Await(2);
    EXPECT_EQ(out.size(), 2u);
    Bytes answer;
    for (const Out& o : out) {
      if (o.packet.bth.opcode == static_cast<uint8_t>(Opcode::kRcSendOnly)) {
        EXPECT_EQ(o.packet.bth.dest_qp, control.client_qpn);
        EXPECT_EQ(o.packet.bth.psn, control.our_psn);
        answer = o.payload();
      }
    }
    ClientAck(control, control.our_psn);
    control.our_psn = roce::PsnAdd(control.our_psn, 1);
    return answer;
  }
  Bytes Dest(uint32_t qpn, uint32_t rkey, uint64_t vaddr) {
    roce::PingpongDest dest;
    dest.qpn = qpn;
    dest.rkey = rkey;
    dest.vaddr = vaddr;
    dest.out_reads = 1;
    Bytes bytes(roce::kPingpongDestBytes);
    roce::WritePingpongDest(dest, std::span<uint8_t, roce::kPingpongDestBytes>(
                                      bytes.data(), bytes.size()));
    return bytes;
  }
  // The client's side up to the test: control connection, version,
  // destination exchange, data connection, the per-QP destinations (the
  // client's buffer at kClientVa, rkey kClientRkey). Our destination.
  roce::PingpongDest Setup(Conn* control, Conn* data) {
    Connections(control, data);
    roce::PingpongDest ours;
    EXPECT_TRUE(roce::ParsePingpongDest(
        Exchange(*control, Dest(0x21, kClientRkey, kClientVa)), &ours));
    EXPECT_EQ(ours.qpn, data->qpn);
    return ours;
  }

  // Setup up to the client's own destination: both connections, the
  // version and the first destination exchange.
  void Connections(Conn* control, Conn* data) {
    *control = Connect(0x20, 0x7001);
    Bytes version(16, 0);
    std::memcpy(version.data(), "6.06", 4);
    EXPECT_EQ(Exchange(*control, version)[0], '6');
    Exchange(*control, Dest(0, 0, 0));  // before the data connection
    *data = Connect(0x21, 0x7002);
  }

  static constexpr uint32_t kClientRkey = 0x4711;
  static constexpr uint64_t kClientVa = 0x7f0000100000;
  uint64_t region_bytes_ = uint64_t{1} << 23;
};

TEST_P(RocePerftestTest, DataRegionHoldsPerftestsLargestMessage) {
  Conn control, data;
  const roce::PingpongDest ours = Setup(&control, &data);
  ASSERT_NE(ours.rkey, 0u);
  // ib_write_bw -a's last size, 8 MiB: its last 1 KiB lands (the region
  // was 1 MiB: a remote access error at 2 MiB).
  const Bytes tail = Pattern(kPmtu, 3);
  ClientWrite(data, ours.vaddr + (uint64_t{1} << 23) - kPmtu, ours.rkey, tail);
  std::vector<Out> out = Await(1);
  ASSERT_GE(out.size(), 1u);
  ExpectAck(out[0], roce::PsnAdd(data.client_psn, -1), roce::AethAck(), 1,
            data.client_qpn, data.qpn);
  // One byte past it is outside: remote access error.
  ClientWrite(data, ours.vaddr + (uint64_t{1} << 23) - kPmtu + 1, ours.rkey,
              tail);
  out = Await(1);
  ASSERT_GE(out.size(), 1u);
  EXPECT_EQ(out[0].packet.ext.aeth.syndrome,
            roce::AethNak(roce::NakCode::kRemoteAccessError));
}

TEST_P(RocePerftestTest, SendLatIsAnsweredOneMessageAtATime) {
  Conn control, data;
  Setup(&control, &data);
  // ib_send_lat: each SEND (larger than any control message) comes back,
  // same size.
  for (int n = 0; n < 2; ++n) {
    ClientSend(data, Pattern(3000, n));
    std::vector<Out> out = Await(4);
    ASSERT_EQ(out.size(), 4u);
    ExpectAck(out[0], roce::PsnAdd(data.client_psn, -1), roce::AethAck(), n + 1,
              data.client_qpn, data.qpn);
    Bytes answer;
    for (size_t i = 1; i < 4; ++i) {
      EXPECT_EQ(out[i].packet.bth.dest_qp, data.client_qpn);
      const Bytes p = out[i].payload();
      answer.insert(answer.end(), p.begin(), p.end());
    }
    EXPECT_EQ(answer.size(), 3000u);
    data.our_psn = roce::PsnAdd(data.our_psn, 3);
    ClientAck(data, roce::PsnAdd(data.our_psn, -1));
  }
  EXPECT_EQ(Counter("naks_sent"), 0u);
}

TEST_P(RocePerftestTest, SendBwWithoutReceivesHasOneAnswerInFlight) {
  Conn control, data;
  Setup(&control, &data);
  // ib_send_bw streams and posts no receives (our answer draws RNR NAKs):
  // one answer in flight until the client takes it, the other SENDs owed
  // and only acknowledged (SendBwAnswerRnrNakedKeepsTheStreamGoing has the
  // client that takes it, ib_send_bw -b).
  for (int n = 0; n < 6; ++n) ClientSend(data, Pattern(8192, n));
  // Our unacknowledged answer is retransmitted meanwhile (the client
  // would answer it with RNR NAKs): its PSNs, not its frames, are counted.
  std::vector<Out> out = Await(40);
  std::set<uint32_t> answer_psns;
  uint32_t acked = 0;
  for (const Out& o : out) {
    ASSERT_TRUE(o.roce);
    if (o.packet.bth.opcode == static_cast<uint8_t>(Opcode::kRcAck)) {
      EXPECT_EQ(o.packet.ext.aeth.syndrome, roce::AethAck());
      acked = o.packet.ext.aeth.msn;
    } else {
      EXPECT_EQ(o.packet.bth.dest_qp, data.client_qpn);
      answer_psns.insert(o.packet.bth.psn);
    }
  }
  EXPECT_EQ(acked, 6u);               // all six SENDs taken
  EXPECT_EQ(answer_psns.size(), 8u);  // the first one's answer only
  EXPECT_EQ(Counter("qp_errors"), 0u);
  EXPECT_EQ(Counter("naks_sent"), 0u);
}

// Three ib_write_bw -R at once from one address: all three control
// connections first, then their data connections. A later connection from
// the peer is not taken for a data connection by its arrival: the version
// message makes the 2nd and 3rd control connections, and each client's
// destination names the data connection connected to its own QP, whose
// region takes its WRITEs.
TEST_P(RocePerftestTest, ConcurrentClientsFromOneAddressEachGetTheirPair) {
  constexpr int kClients = 3;
  Conn control[kClients], data[kClients];
  Bytes version(16, 0);
  std::memcpy(version.data(), "6.10", 4);  // not ours: an echo shows
  for (int k = 0; k < kClients; ++k) {
    control[k] = Connect(0x30 + 2 * k, 0x7101 + 2 * k);
  }
  for (int k = 0; k < kClients; ++k) {
    const Bytes answer = Exchange(control[k], version);
    ASSERT_EQ(answer.size(), 16u);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(answer.data()), 4),
              "6.06")
        << "client " << k;
  }
  for (int k = 0; k < kClients; ++k) {
    Exchange(control[k], Dest(0, 0, 0));  // before the data connection
  }
  for (int k = 0; k < kClients; ++k) {
    data[k] = Connect(0x31 + 2 * k, 0x7102 + 2 * k);
  }
  roce::PingpongDest ours[kClients];
  for (int k = kClients - 1; k >= 0; --k) {
    ASSERT_TRUE(roce::ParsePingpongDest(
        Exchange(control[k],
                 Dest(0x31 + 2 * k, kClientRkey + k, kClientVa + k * 0x1000)),
        &ours[k]));
    EXPECT_EQ(ours[k].qpn, data[k].qpn) << "client " << k;
    EXPECT_NE(ours[k].rkey, 0u) << "client " << k;
  }
  EXPECT_NE(ours[0].rkey, ours[1].rkey);
  EXPECT_NE(ours[1].rkey, ours[2].rkey);
  for (int k = 0; k < kClients; ++k) {
    const Bytes bytes = Pattern(kPmtu, 10 + k);
    ClientWrite(data[k], ours[k].vaddr + 4096, ours[k].rkey, bytes);
    std::vector<Out> out = Await(1);
    ASSERT_EQ(out.size(), 1u);
    ExpectAck(out[0], roce::PsnAdd(data[k].client_psn, -1), roce::AethAck(), 1,
              data[k].client_qpn, data[k].qpn);
  }
  // Another exchange on a control connection that began undecided: still
  // a control one (its messages in a buffer of their size).
  Bytes mtu(4, 0);
  mtu[0] = 3;
  EXPECT_EQ(Exchange(control[2], mtu), mtu);
  EXPECT_EQ(Counter("naks_sent"), 0u);
  EXPECT_EQ(Counter("qp_errors"), 0u);
}

// The requester on a fake clock (RoceConfig::requester_now_ns): RNR waits
// and ACK timeouts are stepped, not waited for.
class RocePerftestClockTest : public RocePerftestTest {
 protected:
  void Configure(RingDataplaneOptions& options) override {
    RocePerftestTest::Configure(options);
    UseFakeRequesterClock(options);
  }
  // The client's ACK, RNR NAK or NAK for our PSN on `c`.
  void ClientAeth(const Conn& c, uint32_t psn, uint8_t syndrome) {
    ExtHeaders ext;
    ext.aeth = {syndrome, 0};
    SendFrame(Build(Opcode::kRcAck, psn, ext, {}, false, c.qpn));
  }
};

// ib_send_bw against Linux rxe: the client posts no receives, so our
// answer to its first SEND draws an RNR NAK (timer code 0: 655 ms) and,
// for the packets that followed it, a PSN sequence error NAK for the same
// PSN. Our answer waits the RNR timer and is sent again, as often as it
// takes (rnr_retry 7); the sequence NAK starts no go-back of its own, the
// ACK timer does not run during the wait, and neither costs retry_count:
// the QP stays up and the client's stream keeps being acknowledged.
TEST_P(RocePerftestClockTest, SendBwAnswerRnrNakedKeepsTheStreamGoing) {
  Conn control, data;
  Setup(&control, &data);
  ClientSend(data, Pattern(4 * kPmtu, 1));
  std::vector<Out> out = Await(5);
  ASSERT_EQ(out.size(), 5u);
  ExpectAck(out[0], roce::PsnAdd(data.client_psn, -1), roce::AethAck(), 1,
            data.client_qpn, data.qpn);
  const uint32_t answer_psn = data.our_psn;
  EXPECT_EQ(out[1].packet.bth.psn, answer_psn);
  const uint64_t failed_before = Counter("ops_failed");
  uint32_t msn = 1;
  for (int round = 0; round < 10; ++round) {
    ClientAeth(data, answer_psn, roce::AethRnrNak(0));
    ClientAeth(data, answer_psn,
               roce::AethNak(roce::NakCode::kPsnSequenceError));
    Poll();
    EXPECT_TRUE(Collect().empty());
    // 640 ms of the 655 ms wait, the client streaming: every SEND is
    // acknowledged, our answer is not sent again yet.
    for (int i = 0; i < 64; ++i) {
      AdvanceFakeNow(10'000'000);
      ClientSend(data, Pattern(64, i));
      ++msn;
      Poll();
      out = Collect();
      ASSERT_EQ(out.size(), 1u) << "round " << round << " SEND " << i;
      ExpectAck(out[0], roce::PsnAdd(data.client_psn, -1), roce::AethAck(), msn,
                data.client_qpn, data.qpn);
    }
    // The wait is over: the whole answer again, from its first PSN.
    AdvanceFakeNow(20'000'000);
    Poll();
    out = Collect();
    ASSERT_EQ(out.size(), 4u) << "round " << round;
    for (uint32_t i = 0; i < 4; ++i) {
      EXPECT_EQ(out[i].packet.bth.dest_qp, data.client_qpn);
      EXPECT_EQ(out[i].packet.bth.psn, roce::PsnAdd(answer_psn, i));
    }
  }
  // Plain ib_send_bw never takes it: nothing more was sent meanwhile. The
  // client that finally takes it posts receives (ib_send_bw -b, which
  // expects a message back for each of its own): every SEND it sent is
  // answered, with the newest one's size, up to 16 answers in flight.
  ClientAck(data, roce::PsnAdd(answer_psn, 3));
  uint32_t next_psn = roce::PsnAdd(answer_psn, 4);
  uint32_t answered = 1;
  for (int round = 0; round < 100 && answered < msn; ++round) {
    Poll();
    out = Collect();
    ASSERT_FALSE(out.empty()) << answered << " of " << msn << " answered";
    ASSERT_LE(out.size(), 16u);
    for (const Out& o : out) {
      EXPECT_EQ(o.packet.bth.dest_qp, data.client_qpn);
      EXPECT_EQ(o.packet.bth.psn, next_psn);
      EXPECT_EQ(o.packet.payload_length, 64u);
      next_psn = roce::PsnAdd(next_psn, 1);
    }
    answered += static_cast<uint32_t>(out.size());
    ClientAck(data, roce::PsnAdd(next_psn, -1));
  }
  EXPECT_EQ(answered, msn);  // 1 + 640 SENDs, each answered once
  AdvanceFakeNow(1'000'000'000);
  Poll();
  EXPECT_TRUE(Collect().empty());
  EXPECT_EQ(Counter("qp_errors"), 0u);
  EXPECT_EQ(Counter("ops_failed"), failed_before);
  EXPECT_EQ(Counter("drop_responder_qp_error"), 0u);
}

// roce.echo_port, as librdmacm's rdma_client uses it: every SEND comes back,
// the same bytes, one packet or several; a SEND larger than the service
// takes is NAKed invalid request.
class RoceEchoTest : public RocePerftestTest {
 protected:
  void Configure(RingDataplaneOptions& options) override {
    options.roce.echo_port = kPerftestPort;
    options.roce.listen_ports.push_back(kPerftestPort);
  }
};

TEST_P(RoceEchoTest, EverySendComesBackByteForByte) {
  Conn c = Connect(0x20, 0x7001);
  ASSERT_NE(c.qpn, 0u);
  // rdma_client's message: 16 bytes, one packet each way.
  const Bytes hello = Pattern(16, 1);
  EXPECT_EQ(Exchange(c, hello), hello);
  // Three packets each way at the 1 KiB path MTU.
  const Bytes large = Pattern(3000, 2);
  ClientSend(c, large);
  std::vector<Out> out = Await(4);
  ASSERT_EQ(out.size(), 4u);
  ExpectAck(out[0], roce::PsnAdd(c.client_psn, -1), roce::AethAck(), 2,
            c.client_qpn, c.qpn);
  Bytes answer;
  for (size_t i = 1; i < 4; ++i) {
    EXPECT_EQ(out[i].packet.bth.dest_qp, c.client_qpn);
    EXPECT_EQ(out[i].packet.bth.psn, roce::PsnAdd(c.our_psn, i - 1));
    const Bytes p = out[i].payload();
    answer.insert(answer.end(), p.begin(), p.end());
  }
  EXPECT_EQ(answer, large);
  c.our_psn = roce::PsnAdd(c.our_psn, 3);
  ClientAck(c, roce::PsnAdd(c.our_psn, -1));
  EXPECT_EQ(Counter("naks_sent"), 0u);
  EXPECT_EQ(Counter("qp_errors"), 0u);
  // kEchoDepth answers unacknowledged by the client: the next SEND finds
  // no free answer buffer and draws an RNR NAK, nothing else.
  for (uint32_t i = 0; i < roce::kEchoDepth; ++i) {
    ClientSend(c, Pattern(16, 10 + i));
  }
  out = Await(2 * roce::kEchoDepth);
  std::set<uint32_t> answered;  // our answers' PSNs (retransmissions too)
  for (const Out& o : out) {
    if (o.packet.bth.opcode == static_cast<uint8_t>(Opcode::kRcSendOnly)) {
      answered.insert(o.packet.bth.psn);
    } else {
      EXPECT_EQ(o.packet.ext.aeth.syndrome, roce::AethAck());
    }
  }
  EXPECT_EQ(answered.size(), roce::kEchoDepth);
  ClientSend(c, Pattern(16, 99));
  out = Await(1);
  ASSERT_GE(out.size(), 1u);
  EXPECT_EQ(out[0].packet.ext.aeth.syndrome >> 5,
            roce::AethRnrNak(0) >> 5);  // an RNR NAK, whatever its timer
  // The client acknowledges our answers: the SEND it retries is taken.
  ClientAck(c, roce::PsnAdd(c.our_psn, roce::kEchoDepth - 1));
  c.our_psn = roce::PsnAdd(c.our_psn, roce::kEchoDepth);
  c.client_psn = roce::PsnAdd(c.client_psn, -1);
  const Bytes retried = Pattern(16, 99);
  EXPECT_EQ(Exchange(c, retried), retried);
  EXPECT_EQ(Counter("qp_errors"), 0u);
  // One byte more than an echo takes: invalid request, as a NIC whose
  // posted receive is too small answers.
  ClientSend(c, Pattern(roce::kEchoMaxMessageBytes + 1, 3));
  out = Await(1);
  ASSERT_GE(out.size(), 1u);
  EXPECT_EQ(out[0].packet.ext.aeth.syndrome,
            roce::AethNak(roce::NakCode::kInvalidRequest));
}

// RoceService.SetService (service_ports.h) while connections go on: a
// service turned on at a port takes the next connection there; turned off,
// its port refuses REQs (invalid service ID) and the connection made before
// keeps its service; a plain port gets verbs; refused changes leave the
// table as it was; the per-service counters follow.
class RoceServiceTest : public RocePerftestTest {
 protected:
  static constexpr uint16_t kEchoPort = 7600;
  static constexpr uint16_t kPlainPort = 7601;
  roce::RoceModule& module() {
    return *dataplane().transport<roce::RoceModule>();
  }
  // The rig steps the HPUs itself: no waiting, then a poll applies it.
  absl::StatusOr<roce::ServicePorts> Set(absl::string_view name, uint32_t port,
                                         bool enable = true) {
    absl::StatusOr<roce::ServicePorts> services =
        module().SetService(name, port, enable, absl::ZeroDuration());
    Poll();
    return services;
  }
  uint16_t RejectReason(uint32_t client_qpn, uint32_t comm_id, uint16_t port) {
    roce::CmMad mad = Request(client_qpn, comm_id, port);
    const auto* rej = std::get_if<roce::CmRej>(&mad.message);
    EXPECT_NE(rej, nullptr) << "no REJ for a REQ to port " << port;
    return rej == nullptr ? 0 : rej->reason;
  }
};

TEST_P(RoceServiceTest, ServicesStartMoveAndStopWhileConnectionsGoOn) {
  const uint16_t kInvalidServiceId =
      static_cast<uint16_t>(roce::CmRejReason::kInvalidServiceId);
  EXPECT_EQ(RejectReason(0x30, 0x7101, kEchoPort), kInvalidServiceId);
  const size_t plain_before = module().services().plain_ports().size();
  // The fixture's own QPs (made over gRPC) are verbs'.
  const uint64_t verbs_before = Counter("service_verbs_connections");

  absl::StatusOr<roce::ServicePorts> services = Set("echo", kEchoPort);
  ASSERT_TRUE(services.ok()) << services.status();
  EXPECT_EQ(services->port(roce::ServiceSlot::kEcho), kEchoPort);
  EXPECT_EQ(services->port(roce::ServiceSlot::kPerftest), kPerftestPort);
  Conn echo = Connect(0x31, 0x7102, kEchoPort);
  ASSERT_NE(echo.qpn, 0u);
  EXPECT_EQ(Exchange(echo, Pattern(16, 1)), Pattern(16, 1));

  // Off: the port refuses new REQs; the connection made before echoes on.
  services = Set("echo", 0, /*enable=*/false);
  ASSERT_TRUE(services.ok()) << services.status();
  EXPECT_EQ(services->port(roce::ServiceSlot::kEcho), 0);
  EXPECT_EQ(RejectReason(0x32, 0x7103, kEchoPort), kInvalidServiceId);
  EXPECT_EQ(Exchange(echo, Pattern(40, 2)), Pattern(40, 2));

  // A plain port: the verbs service (a connection region, no answers).
  ASSERT_TRUE(Set("verbs", kPlainPort).ok());
  Conn plain = Connect(0x33, 0x7104, kPlainPort);
  ASSERT_NE(plain.qpn, 0u);
  bool listed = false;
  for (const QpInfo& qp : module().ListQps()) {
    if (qp.qpn == plain.qpn) {
      listed = true;
      EXPECT_EQ(qp.service, roce::ServiceKind::kVerbs);
    }
    if (qp.qpn == echo.qpn) EXPECT_EQ(qp.service, roce::ServiceKind::kEcho);
  }
  EXPECT_TRUE(listed);

  // Refused, and the table unchanged: another service's port, an unknown
  // service, port 0, a plain port that is not one.
  EXPECT_EQ(Set("echo", kPerftestPort).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Set("echo", kPlainPort).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Set("ftp", 21).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Set("rping", 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Set("verbs", 9999, false).status().code(),
            absl::StatusCode::kNotFound);
  const roce::ServicePorts now = module().services();
  EXPECT_EQ(now.port(roce::ServiceSlot::kPerftest), kPerftestPort);
  EXPECT_EQ(now.port(roce::ServiceSlot::kEcho), 0);
  ASSERT_EQ(now.plain_ports().size(), plain_before + 1);
  EXPECT_EQ(now.plain_ports().back(), kPlainPort);

  // Removing the plain port: its REQs are refused again.
  ASSERT_TRUE(Set("verbs", kPlainPort, false).ok());
  EXPECT_EQ(RejectReason(0x34, 0x7105, kPlainPort), kInvalidServiceId);

  EXPECT_EQ(Counter("service_echo_connections"), 1u);
  EXPECT_EQ(Counter("service_echo_sends"), 2u);
  EXPECT_EQ(Counter("service_verbs_connections"), verbs_before + 1);
  EXPECT_EQ(Counter("service_perftest_connections"), 0u);
  EXPECT_EQ(Counter("qp_errors"), 0u);
}

// roce.perftest_write_lat: ib_write_lat -R -s 64 -n 3 (or -a -n 2), whose
// server writes first and answers each count with the next.
class RocePerftestWriteLatTest : public RocePerftestTest {
 protected:
  void Configure(RingDataplaneOptions& options) override {
    RocePerftestTest::Configure(options);
    options.roce.perftest_port = kPerftestPort + 1;
    options.roce.perftest_write_lat.port = kPerftestPort;
    options.roce.perftest_write_lat.size = 64;
    options.roce.perftest_write_lat.iterations = all_sizes_ ? 2 : 3;
    options.roce.perftest_write_lat.all_sizes = all_sizes_;
    // The requester's clock stands still: no ACK timeout fires between our
    // write and the client's ACK, however slowly the test runs (under
    // TSan a retransmitted write came in as a third frame).
    UseFakeRequesterClock(options);
  }
  // The client's own destination: our ACK and SEND on the control
  // connection, and our first write on the data connection (returned).
  Out StartTest(Conn& control, Conn& data, roce::PingpongDest* ours) {
    ClientSend(control, Dest(0x21, kClientRkey, kClientVa));
    std::vector<Out> out = Await(3);
    EXPECT_EQ(out.size(), 3u);
    Out write;
    for (Out& o : out) {
      if (o.packet.bth.dest_qp == data.client_qpn) {
        write = std::move(o);
      } else if (o.packet.bth.opcode ==
                 static_cast<uint8_t>(Opcode::kRcSendOnly)) {
        EXPECT_TRUE(roce::ParsePingpongDest(o.payload(), ours));
      }
    }
    ClientAck(control, control.our_psn);
    control.our_psn = roce::PsnAdd(control.our_psn, 1);
    return write;
  }
  // Checks that `o` is our WRITE ONLY of `size` bytes to the client's
  // buffer with `count` in the last byte, and acknowledges it.
  void ExpectCount(const Out& o, Conn& data, uint32_t size, uint8_t count) {
    ASSERT_TRUE(o.roce);
    ASSERT_LE(size, kPmtu);  // one packet
    EXPECT_EQ(o.packet.bth.opcode, static_cast<uint8_t>(Opcode::kRcWriteOnly));
    EXPECT_EQ(o.packet.bth.dest_qp, data.client_qpn);
    EXPECT_EQ(o.packet.bth.psn, data.our_psn);
    EXPECT_EQ(o.packet.ext.reth.va, kClientVa);
    EXPECT_EQ(o.packet.ext.reth.rkey, kClientRkey);
    EXPECT_EQ(o.packet.ext.reth.dma_length, size);
    ASSERT_EQ(o.payload().size(), size);
    EXPECT_EQ(o.payload().back(), count);
    ClientAck(data, data.our_psn);
    data.our_psn = roce::PsnAdd(data.our_psn, 1);
  }
  // The client's write of count `count` (`size` bytes into our region):
  // what we sent back, our ACK first, then our answer if any.
  // `expected`: the frames to wait for (1: our ACK alone); what a few
  // more polls bring is returned too.
  std::vector<Out> ClientCount(Conn& data, const roce::PingpongDest& ours,
                               uint32_t size, uint8_t count,
                               size_t expected = 2) {
    Bytes payload = Pattern(size, count);
    payload.back() = count;
    ClientWrite(data, ours.vaddr, ours.rkey, payload);
    std::vector<Out> out = Await(expected);
    Poll(4);
    for (Out& o : Collect()) out.push_back(std::move(o));
    // The ACK first, whichever left first.
    std::stable_partition(out.begin(), out.end(), [](const Out& o) {
      return o.packet.bth.opcode == static_cast<uint8_t>(Opcode::kRcAck);
    });
    return out;
  }
  bool all_sizes_ = false;
};

TEST_P(RocePerftestWriteLatTest, WritesFirstAndAnswersEachCountUntilTheLast) {
  Conn control, data;
  Connections(&control, &data);
  roce::PingpongDest ours;
  const Out first = StartTest(control, data, &ours);
  ASSERT_NE(ours.rkey, 0u);
  ExpectCount(first, data, 64, 1);
  for (uint8_t k = 1; k <= 3; ++k) {
    std::vector<Out> out = ClientCount(data, ours, 64, k, k < 3 ? 2 : 1);
    ASSERT_GE(out.size(), 1u);
    ExpectAck(out[0], roce::PsnAdd(data.client_psn, -1), roce::AethAck(), k,
              data.client_qpn, data.qpn);
    if (k < 3) {
      ASSERT_EQ(out.size(), 2u) << "no answer to count " << int{k};
      ExpectCount(out[1], data, 64, k + 1);
    } else {
      EXPECT_EQ(out.size(), 1u) << "an answer after the last count";
    }
  }
  // Nothing after the last count: a write of the client's is only taken.
  std::vector<Out> out = ClientCount(data, ours, 64, 9, 1);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].packet.bth.opcode, static_cast<uint8_t>(Opcode::kRcAck));
  EXPECT_EQ(Counter("qp_errors"), 0u);
  EXPECT_EQ(Counter("naks_sent"), 0u);
}

TEST_P(RocePerftestWriteLatTest, WriteOfAnotherSizeIsTakenWithoutAnswer) {
  Conn control, data;
  Connections(&control, &data);
  roce::PingpongDest ours;
  ExpectCount(StartTest(control, data, &ours), data, 64, 1);
  std::vector<Out> out = ClientCount(data, ours, 32, 1, 1);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].packet.bth.opcode, static_cast<uint8_t>(Opcode::kRcAck));
  out = ClientCount(data, ours, 64, 1);  // the right one is answered
  ASSERT_EQ(out.size(), 2u);
  ExpectCount(out[1], data, 64, 2);
}

class RocePerftestWriteLatAllTest : public RocePerftestWriteLatTest {
 protected:
  void Configure(RingDataplaneOptions& options) override {
    all_sizes_ = true;
    RocePerftestWriteLatTest::Configure(options);
  }
};

TEST_P(RocePerftestWriteLatAllTest, EverySizeStartsWithOurWriteOfCountOne) {
  Conn control, data;
  Connections(&control, &data);
  roce::PingpongDest ours;
  ExpectCount(StartTest(control, data, &ours), data, 2, 1);
  // -a -n 2: 2 B, 4 B, ... each size two counts each way, our write first
  // (to 1 KiB: one packet each; perftest goes on to 8 MiB).
  for (uint32_t size = 2; size <= 512; size *= 2) {
    for (uint8_t k = 1; k <= 2; ++k) {
      std::vector<Out> out = ClientCount(data, ours, size, k);
      ASSERT_EQ(out.size(), 2u) << size << " bytes, count " << int{k};
      if (k == 1) {
        ExpectCount(out[1], data, size, 2);
      } else {
        ExpectCount(out[1], data, size * 2, 1);  // the next size
      }
    }
  }
  EXPECT_EQ(Counter("qp_errors"), 0u);
}

class RocePerftestLimitTest : public RocePerftestTest {
 protected:
  void Configure(RingDataplaneOptions& options) override {
    region_bytes_ = uint64_t{3} << 30;  // more than the EAL has
    RocePerftestTest::Configure(options);
  }
};

TEST_P(RocePerftestLimitTest, DataConnectionWithoutItsRegionIsRejected) {
  Conn control = Connect(0x20, 0x7001);
  Bytes version(16, 0);
  std::memcpy(version.data(), "6.06", 4);
  Exchange(control, version);
  // The control connection needs no region; the data connection's REQ is
  // rejected with a reason the client's rdma_cm reports.
  roce::CmMad mad = Request(0x21, 0x7002);
  const auto* rej = std::get_if<roce::CmRej>(&mad.message);
  ASSERT_NE(rej, nullptr);
  EXPECT_EQ(rej->reason,
            static_cast<uint16_t>(roce::CmRejReason::kNoResources));
  const std::string text(
      reinterpret_cast<const char*>(rej->private_data.data()));
  EXPECT_EQ(text,
            "spinnic: no 3221225472-byte perftest data region "
            "(roce.perftest_region_bytes; connection memory in use)");
  EXPECT_EQ(Counter("perftest_region_rejects"), 1u);
  EXPECT_EQ(Counter("cm_rejects"), 1u);
  // The control connection goes on.
  Exchange(control, Bytes{0, 0, 0x10, 0});
  EXPECT_EQ(Counter("qp_errors"), 0u);
}

// The HPUs launched on their own lcores (Dataplane::Start, the daemon's
// threads) instead of polled by hand, so that they and the control thread
// really run at once (deploy/tsan.sh runs this under ThreadSanitizer). With
// two, the QP is HPU 1's: HPU 0 receives its frames and hands them over
// through HPU 1's inbound ring, and HPU 1's ACKs leave through HPU 0's TX
// ring. Acknowledged WRITEs into one region while the control thread
// registers and deregisters another around each (region table publications
// under traffic): every WRITE lands byte-exact and is acknowledged in order.
TEST_P(RoceDataplaneTest, LaunchedHpusWriteWhileRegionsComeAndGo) {
  RegionInfo region = Region(64 * 1024, kRemoteWrite | kRemoteRead);
  ASSERT_TRUE(dataplane().Start().ok());
  constexpr uint32_t kWrites = 32;
  std::vector<Out> acks;
  for (uint32_t i = 0; i < kWrites; ++i) {
    RegionInfo other = Region(4096, kRemoteWrite);
    SendFrame(Build(Opcode::kRcWriteOnly, kClientPsn + i,
                    Reth(region.base_address + 1000 * i, region.rkey, 1000),
                    Pattern(1000, i), /*ack_req=*/true));
    absl::Status gone = dataplane().DeregisterRegion(other.id);
    ASSERT_TRUE(gone.ok()) << gone;
    const absl::Time deadline = absl::Now() + absl::Seconds(120);
    while (acks.size() <= i && absl::Now() < deadline) {
      for (Out& o : Collect()) {
        if (o.roce) acks.push_back(std::move(o));
      }
      absl::SleepFor(absl::Microseconds(200));
    }
    ASSERT_EQ(acks.size(), i + 1) << "WRITE " << i << " was not acknowledged";
  }
  dataplane().Stop();
  for (uint32_t i = 0; i < kWrites; ++i) {
    ExpectAck(acks[i], kClientPsn + i, roce::AethAck(), i + 1);
    absl::StatusOr<std::string> stored =
        dataplane().ReadRegion(region.id, 1000 * i, 1000, 1 << 20);
    ASSERT_TRUE(stored.ok()) << stored.status();
    EXPECT_EQ(Bytes(stored->begin(), stored->end()), Pattern(1000, i)) << i;
  }
  EXPECT_EQ(Counter("writes"), kWrites);
}

// The engine's clock stepped by the test (RoceConfig::requester_now_ns):
// READ response pacing waits are stepped, not waited for.
class RoceReadPacingTest : public RoceDataplaneTest {
 protected:
  void Configure(RingDataplaneOptions& options) override {
    UseFakeRequesterClock(options);
  }
  // A READ of `packets` full packets from `first`, at PSN kClientPsn + first
  // (a duplicate when first > 0: it asks again from that packet on).
  void Read(const RegionInfo& region, uint32_t first, uint32_t packets,
            uint32_t psn_base = kClientPsn) {
    SendFrame(Build(
        Opcode::kRcReadRequest, psn_base + first,
        Reth(region.base_address + first * kPmtu, region.rkey, packets * kPmtu),
        {}));
  }
  // Polls once; the READ response PSNs that left, each payload checked
  // against the region's bytes.
  std::vector<uint32_t> Responses(const Bytes& data,
                                  uint32_t psn_base = kClientPsn) {
    Poll();
    std::vector<uint32_t> psns;
    for (const Out& o : Collect()) {
      EXPECT_TRUE(o.roce);
      const uint32_t k = o.packet.bth.psn - psn_base;
      EXPECT_EQ(o.payload(),
                Bytes(data.begin() + k * kPmtu, data.begin() + (k + 1) * kPmtu))
          << "PSN +" << k;
      psns.push_back(k);
    }
    return psns;
  }
  static std::vector<uint32_t> Range(uint32_t first, uint32_t count) {
    std::vector<uint32_t> v(count);
    for (uint32_t i = 0; i < count; ++i) v[i] = first + i;
    return v;
  }
};

// An rxe requester in a slow guest loses most of a long READ's responses
// and asks again from the first one it lacks. The duplicate supersedes
// the queued rest (never sent), and the QP's READ responses go one per gap
// from then on: 2 us, doubled by each duplicate, cut by a quarter by each
// new READ, unpaced again below 2 us.
TEST_P(RoceReadPacingTest, DuplicateReadSupersedesQueuedResponsesAndPaces) {
  constexpr uint32_t kPackets = 256;
  RegionInfo region = Region(kPackets * kPmtu, kRemoteRead);
  const Bytes data = Pattern(kPackets * kPmtu, 9);
  ASSERT_TRUE(dataplane().WriteRegion(region.id, 0, data).ok());
  Read(region, 0, kPackets);
  // Unpaced: 32 per QP per poll, some polls' worth in one Responses.
  const std::vector<uint32_t> first = Responses(data);
  const uint32_t unpaced = static_cast<uint32_t>(first.size());
  ASSERT_GE(unpaced, 32u);
  ASSERT_LT(unpaced, kPackets - 10);
  EXPECT_EQ(first, Range(0, unpaced));
  // The requester got 0..9 and asks again from 10: the rest of the first
  // READ never leaves, the duplicate's own responses start at once, then
  // one per 2 us.
  // (With 2 HPUs the duplicate is handed to the QP's HPU a poll later, and
  // more of the first READ's responses leave before it arrives.)
  Read(region, 10, kPackets - 10);
  std::vector<uint32_t> psns = Responses(data);
  ASSERT_FALSE(psns.empty());
  EXPECT_EQ(psns.back(), 10u);
  psns.pop_back();
  const uint32_t sent = unpaced + static_cast<uint32_t>(psns.size());
  EXPECT_EQ(psns, Range(unpaced, sent - unpaced));
  EXPECT_EQ(Counter("read_responses_superseded"), kPackets - sent);
  EXPECT_EQ(Counter("read_slowdowns"), 1u);
  EXPECT_TRUE(Responses(data).empty());
  AdvanceFakeNow(1'999);
  EXPECT_TRUE(Responses(data).empty());
  AdvanceFakeNow(1);
  EXPECT_EQ(Responses(data), Range(11, 1));
  // Again from 12: the gap doubles to 4 us; 12.. of the first duplicate
  // are superseded in turn.
  Read(region, 12, kPackets - 12);
  EXPECT_EQ(Responses(data), Range(12, 1));
  EXPECT_EQ(Counter("read_responses_superseded"),
            kPackets - sent + kPackets - 12);
  std::vector<uint32_t> got;
  for (int step = 0; step < 1000 && got.size() < kPackets - 13; ++step) {
    AdvanceFakeNow(2'000);
    psns = Responses(data);
    EXPECT_EQ(psns.size(), step % 2 == 0 ? 0u : 1u) << "step " << step;
    got.insert(got.end(), psns.begin(), psns.end());
  }
  EXPECT_EQ(got, Range(13, kPackets - 13));  // each once, in order
  EXPECT_EQ(Counter("reads"), 3u);
  // New READs (the next PSNs) shrink the gap: 4 -> 3 -> 2.25 us, then
  // under 2 us: unpaced again, as many responses at once as at first.
  uint32_t next = kClientPsn + kPackets;
  for (int i = 0; i < 3; ++i) {
    Read(region, 0, 1, next);
    AdvanceFakeNow(1'000'000);
    EXPECT_EQ(Responses(data, next), Range(0, 1)) << "READ " << i;
    ++next;
  }
  Read(region, 0, kPackets, next);
  EXPECT_EQ(Responses(data, next), Range(0, unpaced));
  EXPECT_EQ(Counter("read_slowdowns"), 2u);
  EXPECT_EQ(Counter("qp_errors"), 0u);
}

// The pacing belongs to the connection: a QP made again with the same
// number (its engine object is reused) starts unpaced.
TEST_P(RoceReadPacingTest, ANewQpOfTheSameNumberStartsUnpaced) {
  constexpr uint32_t kPackets = 256;
  RegionInfo region = Region(kPackets * kPmtu, kRemoteRead);
  const Bytes data = Pattern(kPackets * kPmtu, 5);
  ASSERT_TRUE(dataplane().WriteRegion(region.id, 0, data).ok());
  Read(region, 0, kPackets);
  const uint32_t unpaced = static_cast<uint32_t>(Responses(data).size());
  ASSERT_LT(unpaced, kPackets - 1);
  // Three duplicates: the gap grows to 8 us, which one new READ would only
  // cut to 6.
  for (uint32_t from = 1; from <= 3; ++from) {
    Read(region, from, kPackets - from);
    const std::vector<uint32_t> psns = Responses(data);
    ASSERT_FALSE(psns.empty());
    EXPECT_EQ(psns.back(), from);
  }
  EXPECT_EQ(Counter("read_slowdowns"), 3u);
  roce::RoceModule& module = *dataplane().transport<roce::RoceModule>();
  ASSERT_TRUE(module.DestroyQp(qpn_).ok());
  Poll();
  Collect();
  absl::StatusOr<uint32_t> qpn = module.CreateQp(ClientQpSpec());
  ASSERT_TRUE(qpn.ok()) << qpn.status();
  ASSERT_EQ(*qpn, qpn_);
  Poll();
  // Unpaced: a poll's 32 responses and more with the clock standing still
  // (paced, one would leave). With 2 HPUs the new QP may be on the other
  // HPU, which changes how many polls' worth one Responses sees.
  Read(region, 0, kPackets);
  const std::vector<uint32_t> psns = Responses(data);
  EXPECT_GE(psns.size(), 32u);
  EXPECT_EQ(psns, Range(0, static_cast<uint32_t>(psns.size())));
}

INSTANTIATE_TEST_SUITE_P(Hpus, RoceDataplaneTest, ::testing::Values(1u, 2u),
                         HpuCountName);
INSTANTIATE_TEST_SUITE_P(Hpus, RoceReadPacingTest, ::testing::Values(1u, 2u),
                         HpuCountName);
INSTANTIATE_TEST_SUITE_P(Hpus, RoceRequesterTest, ::testing::Values(1u, 2u),
                         HpuCountName);
INSTANTIATE_TEST_SUITE_P(Hpus, RoceCongestionTest, ::testing::Values(1u, 2u),
                         HpuCountName);
INSTANTIATE_TEST_SUITE_P(Hpus, RoceLimitsTest, ::testing::Values(1u, 2u),
                         HpuCountName);
INSTANTIATE_TEST_SUITE_P(Hpus, RoceCmFloodTest, ::testing::Values(1u, 2u),
                         HpuCountName);
INSTANTIATE_TEST_SUITE_P(Hpus, RocePerftestWriteLatTest,
                         ::testing::Values(1u, 2u), HpuCountName);
INSTANTIATE_TEST_SUITE_P(Hpus, RocePerftestWriteLatAllTest,
                         ::testing::Values(1u, 2u), HpuCountName);
INSTANTIATE_TEST_SUITE_P(Hpus, RoceInitialRateTest, ::testing::Values(1u, 2u),
                         HpuCountName);
INSTANTIATE_TEST_SUITE_P(Hpus, RocePerftestTest, ::testing::Values(1u, 2u),
                         HpuCountName);
INSTANTIATE_TEST_SUITE_P(Hpus, RocePerftestClockTest, ::testing::Values(1u, 2u),
                         HpuCountName);
INSTANTIATE_TEST_SUITE_P(Hpus, RoceServiceTest, ::testing::Values(1u, 2u),
                         HpuCountName);
INSTANTIATE_TEST_SUITE_P(Hpus, RoceEchoTest, ::testing::Values(1u, 2u),
                         HpuCountName);
INSTANTIATE_TEST_SUITE_P(Hpus, RocePerftestLimitTest, ::testing::Values(1u, 2u),
                         HpuCountName);

}  // namespace
}  // namespace spinnic

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new spinnic::EalEnvironment());
  return RUN_ALL_TESTS();
}
