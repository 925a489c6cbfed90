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
#include <rte_ring.h>

#include <atomic>
#include <cstring>
#include <future>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "dataplane/classifier.h"
#include "dataplane/dataplane.h"
#include "dataplane/roce/cm.h"
#include "dataplane/roce/cnp.h"
#include "dataplane/roce/ib_types.h"
#include "dataplane/roce/mrsp.h"
#include "dataplane/roce/roce_engine.h"
#include "dataplane/roce/roce_module.h"
#include "dataplane/roce/wire.h"
#include "handlers/naaice/function.h"
#include "tests/common/message_recorder.h"
#include "tests/common/ring_dataplane.h"

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
    roce::QpSpec spec;
    spec.remote_qpn = kClientQpn;
    spec.remote_ip = kClientIp;
    spec.remote_mac = kClientMac;
    spec.pmtu = kPmtu;
    spec.expected_psn = kClientPsn;
    spec.send_psn = 0x777;
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
    ASSERT_EQ(rte_ring_enqueue(rings_->rx(0), m), 0);
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
    while (rte_ring_dequeue(rings_->tx(side), &m) == 0) {
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
  RoceOp op;
  op.qpn = qpn_;
  op.kind = roce::WorkRequest::Kind::kWriteImm;
  op.region_id = region.id;
  op.offset = 16;
  op.length = static_cast<uint32_t>(data.size());
  op.remote_va = 0x7f0000001000;
  op.rkey = 0x4242;
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
  EXPECT_EQ(joined, data);
  SendFrame(Ack(Opcode::kRcAck, 0x779, roce::AethAck(), {}));
  absl::StatusOr<RoceOpResult> done = Finish(result);
  EXPECT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(Counter("ops_completed"), 1u);
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
  RoceOp op;
  op.qpn = qpn_;
  op.kind = roce::WorkRequest::Kind::kRead;
  op.region_id = region.id;
  op.offset = 100;
  op.length = 600;
  op.remote_va = 0x1000;
  op.rkey = 7;
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
  RoceOp op;
  op.qpn = qpn_;
  op.kind = roce::WorkRequest::Kind::kFetchAdd;
  op.region_id = region.id;
  op.offset = 16;
  op.length = 8;
  op.remote_va = 0x2000;
  op.rkey = 9;
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
  RoceOp op;
  op.qpn = qpn_;
  op.kind = roce::WorkRequest::Kind::kWrite;
  op.region_id = region.id;
  op.length = 16;
  op.remote_va = 0x2000;
  op.rkey = 9;
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

// The clock congestion control reads in RoceCongestionTest: stepped by the
// test, so every interval and send time is exact.
std::atomic<uint64_t> fake_now_ns{0};
uint64_t FakeNow() { return fake_now_ns.load(std::memory_order_relaxed); }

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
  Bytes Cnp(uint32_t dest_qp) {
    Bytes frame(roce::CnpFrameBytes(4));
    EXPECT_EQ(roce::BuildCnp(ClientParams(), dest_qp, frame.data(),
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
  RoceOp op;
  op.qpn = qpn_;
  op.kind = roce::WorkRequest::Kind::kWrite;
  op.region_id = region.id;
  op.length = 4 * kPmtu;
  op.remote_va = 0x10000;
  op.rkey = 7;
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
  RoceOp op;
  op.qpn = qpn_;
  op.kind = roce::WorkRequest::Kind::kWrite;
  op.region_id = region.id;
  op.length = 4 * kPmtu;
  op.remote_va = 0x10000;
  op.rkey = 7;
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

INSTANTIATE_TEST_SUITE_P(Hpus, RoceDataplaneTest, ::testing::Values(1u, 2u),
                         [](const ::testing::TestParamInfo<uint32_t>& info) {
                           return absl::StrCat(info.param, "hpu");
                         });
INSTANTIATE_TEST_SUITE_P(Hpus, RoceRequesterTest, ::testing::Values(1u, 2u),
                         [](const ::testing::TestParamInfo<uint32_t>& info) {
                           return absl::StrCat(info.param, "hpu");
                         });
INSTANTIATE_TEST_SUITE_P(Hpus, RoceCongestionTest, ::testing::Values(1u, 2u),
                         [](const ::testing::TestParamInfo<uint32_t>& info) {
                           return absl::StrCat(info.param, "hpu");
                         });

}  // namespace
}  // namespace spinnic

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new spinnic::EalEnvironment());
  return RUN_ALL_TESTS();
}
