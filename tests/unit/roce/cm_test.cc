// The connection manager (dataplane/roce/cm.h): every CM MAD of the real
// soft-RoCE captures in tests/fixtures/roce parsed and rebuilt byte for
// byte, the rping REQ's fields one by one, rdma_cm's private-data header,
// and the passive-side service against those captures: the REP it sends
// is the kernel's REP but for the communication ID, then RTU, DREQ/DREP,
// REJ reasons, malformed MADs, retransmission and its bound, time-wait.
#include "dataplane/roce/cm.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "tests/common/hex.h"

namespace spinnic::roce {
namespace {

using testing_hex::ToHex;
using Mad = std::array<uint8_t, kMadBytes>;

// ----- A tiny pcap reader: the MAD sits at fixed offsets in these
// captures (Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + DETH 8). -----
constexpr size_t kMadOffset = 14 + 20 + 8 + kBthBytes + kDethBytes;

std::vector<std::vector<uint8_t>> ReadPcap(const std::string& name) {
  const char* dir = std::getenv("ROCE_FIXTURES");
  std::string path =
      std::string(dir != nullptr ? dir : "tests/fixtures/roce") + "/" + name;
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> d((std::istreambuf_iterator<char>(in)),
                         std::istreambuf_iterator<char>());
  std::vector<std::vector<uint8_t>> frames;
  if (d.size() < 24) return frames;
  uint32_t magic;
  std::memcpy(&magic, d.data(), 4);
  bool swap = magic == 0xd4c3b2a1 || magic == 0x4d3cb2a1;
  auto u32 = [&](size_t at) {
    uint32_t v;
    std::memcpy(&v, d.data() + at, 4);
    return swap ? __builtin_bswap32(v) : v;
  };
  for (size_t at = 24; at + 16 <= d.size();) {
    uint32_t caplen = u32(at + 8);
    at += 16;
    if (at + caplen > d.size()) break;
    frames.emplace_back(d.begin() + at, d.begin() + at + caplen);
    at += caplen;
  }
  return frames;
}

// The MADs of a capture: IPv4/UDP 4791 frames whose BTH is UD SEND ONLY to
// QP1 with the GSI Q_Key.
std::vector<Mad> MadsOf(const std::string& name) {
  std::vector<Mad> mads;
  for (const auto& f : ReadPcap(name)) {
    if (f.size() < kMadOffset + kMadBytes + kIcrcBytes) continue;
    if (f[12] != 0x08 || f[13] != 0x00 || f[23] != 17) continue;
    if ((f[36] << 8 | f[37]) != kRoceUdpPort) continue;
    const uint8_t* bth = f.data() + 42;
    if (bth[0] != static_cast<uint8_t>(Opcode::kUdSendOnly)) continue;
    if ((bth[5] << 16 | bth[6] << 8 | bth[7]) != kGsiQp) continue;
    const uint8_t* deth = bth + kBthBytes;
    uint32_t qkey =
        uint32_t(deth[0]) << 24 | deth[1] << 16 | deth[2] << 8 | deth[3];
    EXPECT_EQ(qkey, kGsiQkey);
    Mad mad;
    std::memcpy(mad.data(), f.data() + kMadOffset, kMadBytes);
    mads.push_back(mad);
  }
  return mads;
}

CmMad Parse(const Mad& bytes) {
  CmMad mad;
  EXPECT_EQ(ParseCmMad(bytes, &mad), CmParseError::kNone);
  return mad;
}

Mad Build(const CmMad& mad) {
  Mad out;
  out.fill(0xee);
  BuildCmMad(mad, out);
  return out;
}

Gid V4Gid(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  return {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d};
}
const Gid kServerGid = V4Gid(192, 0, 2, 11);
const Gid kClientGid = V4Gid(192, 0, 2, 12);

std::vector<uint16_t> AttrsOf(const std::vector<Mad>& mads) {
  std::vector<uint16_t> attrs;
  for (const Mad& m : mads) attrs.push_back(uint16_t(m[16] << 8 | m[17]));
  return attrs;
}

// ===================== Wire format =====================

TEST(CmWire, EveryFixtureMadRebuildsByteForByte) {
  struct Case {
    const char* file;
    std::vector<uint16_t> attrs;
  };
  const Case cases[] = {
      {"rping_v4.pcap", {0x10, 0x13, 0x14, 0x15, 0x16}},
      {"rxe_ops_imm_atomic_v4.pcap", {0x10, 0x13, 0x14, 0x15, 0x16}},
      {"ext_lone_rping_client_to_nonrdma_host.pcap", {0x10, 0x10, 0x10, 0x12}},
  };
  size_t total = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    std::vector<Mad> mads = MadsOf(c.file);
    ASSERT_EQ(AttrsOf(mads), c.attrs);
    for (const Mad& bytes : mads) {
      CmMad mad = Parse(bytes);
      EXPECT_EQ(mad.header.attribute_id,
                static_cast<uint16_t>(AttrOf(mad.message)));
      Mad rebuilt = Build(mad);
      EXPECT_EQ(ToHex(rebuilt.data(), kMadBytes),
                ToHex(bytes.data(), kMadBytes));
      // And the parse of the rebuilt bytes is the same message.
      CmMad again = Parse(rebuilt);
      EXPECT_EQ(again, mad);
      ++total;
    }
  }
  EXPECT_EQ(total, 14u);
}

TEST(CmWire, PrivateDataLengthsAreWhatRemainsOf232Bytes) {
  EXPECT_EQ(kCmMessageBytes, 232u);
  EXPECT_EQ(sizeof(cm_wire::Req) - offsetof(cm_wire::Req, private_data), 92u);
  EXPECT_EQ(sizeof(cm_wire::Rep) - offsetof(cm_wire::Rep, private_data), 196u);
  EXPECT_EQ(sizeof(cm_wire::Rej) - offsetof(cm_wire::Rej, private_data), 148u);
  EXPECT_EQ(sizeof(cm_wire::Rtu) - offsetof(cm_wire::Rtu, private_data), 224u);
  EXPECT_EQ(sizeof(cm_wire::Dreq) - offsetof(cm_wire::Dreq, private_data),
            220u);
  EXPECT_EQ(sizeof(cm_wire::Drep) - offsetof(cm_wire::Drep, private_data),
            224u);
  EXPECT_EQ(sizeof(cm_wire::Mra) - offsetof(cm_wire::Mra, private_data), 222u);
}

void PrintReq(const MadHeader& h, const CmReq& r) {
  std::printf(
      "rping REQ: tid=%016llx comm_id=%08x service_id=%016llx guid=%016llx "
      "qkey=%08x qpn=%06x resp_res=%u eecn=%u init_depth=%u remote_eecn=%u "
      "remote_cm_timeout=%u transport=%u e2e_fc=%d psn=%06x "
      "local_cm_timeout=%u retry=%u pkey=%04x mtu=%u rdc=%d rnr_retry=%u "
      "max_cm_retries=%u srq=%d ext=%u\n",
      (unsigned long long)h.transaction_id, r.local_comm_id,
      (unsigned long long)r.service_id, (unsigned long long)r.local_ca_guid,
      r.local_qkey, r.local_qpn, r.responder_resources, r.local_eecn,
      r.initiator_depth, r.remote_eecn, r.remote_cm_response_timeout,
      r.transport_service_type, r.end_to_end_flow_control, r.starting_psn,
      r.local_cm_response_timeout, r.retry_count, r.partition_key, r.path_mtu,
      r.rdc_exists, r.rnr_retry_count, r.max_cm_retries, r.srq,
      r.extended_transport_type);
  const CmPath& p = r.primary;
  std::printf(
      "  primary: lids %04x/%04x local_gid=%s remote_gid=%s flow=%05x "
      "rate=%u tclass=%u hop=%u sl=%u subnet_local=%d ack_timeout=%u\n",
      p.local_lid, p.remote_lid, ToHex(p.local_gid.data(), 16).c_str(),
      ToHex(p.remote_gid.data(), 16).c_str(), p.flow_label, p.packet_rate,
      p.traffic_class, p.hop_limit, p.sl, p.subnet_local, p.local_ack_timeout);
  std::printf("  private data: %s\n", ToHex(r.private_data.data(), 40).c_str());
}

TEST(CmWire, RpingReqFields) {
  std::vector<Mad> mads = MadsOf("rping_v4.pcap");
  ASSERT_FALSE(mads.empty());
  CmMad mad = Parse(mads[0]);
  ASSERT_TRUE(std::holds_alternative<CmReq>(mad.message));
  const CmReq& r = std::get<CmReq>(mad.message);
  PrintReq(mad.header, r);

  EXPECT_EQ(mad.header.base_version, 1);
  EXPECT_EQ(mad.header.mgmt_class, 0x07);
  EXPECT_EQ(mad.header.class_version, 2);
  EXPECT_EQ(mad.header.method, 0x03);
  EXPECT_EQ(mad.header.status, 0);
  EXPECT_EQ(mad.header.transaction_id, 0x00000002e0f4b854ull);
  EXPECT_EQ(mad.header.attribute_id, 0x0010);
  EXPECT_EQ(mad.header.attribute_modifier, 0u);

  EXPECT_EQ(r.local_comm_id, 0x54b8f4e0u);
  EXPECT_EQ(r.service_id, RdmaCmServiceId(kRdmaPsTcp, 7174));
  uint16_t ps = 0, port = 0;
  ASSERT_TRUE(ParseRdmaCmServiceId(r.service_id, &ps, &port));
  EXPECT_EQ(ps, kRdmaPsTcp);
  EXPECT_EQ(port, 7174);  // rping's default port
  EXPECT_EQ(r.local_ca_guid, 0x505400fffe000012ull);
  EXPECT_EQ(r.local_qkey, 0u);
  EXPECT_EQ(r.local_qpn, 0x11u);
  EXPECT_EQ(r.responder_resources, 1);
  EXPECT_EQ(r.local_eecn, 0u);
  EXPECT_EQ(r.initiator_depth, 1);
  EXPECT_EQ(r.remote_eecn, 0u);
  EXPECT_EQ(r.remote_cm_response_timeout, 20);
  EXPECT_EQ(r.transport_service_type, kCmTransportRc);
  EXPECT_FALSE(r.end_to_end_flow_control);
  EXPECT_EQ(r.starting_psn, 0x934201u);
  EXPECT_EQ(r.local_cm_response_timeout, 20);
  EXPECT_EQ(r.retry_count, 7);
  EXPECT_EQ(r.partition_key, 0xffff);
  EXPECT_EQ(r.path_mtu, 3);  // 1024
  EXPECT_EQ(PathMtuBytes(r.path_mtu), 1024u);
  EXPECT_FALSE(r.rdc_exists);
  EXPECT_EQ(r.rnr_retry_count, 7);
  EXPECT_EQ(r.max_cm_retries, 15);
  EXPECT_FALSE(r.srq);
  EXPECT_EQ(r.extended_transport_type, 0);
  EXPECT_EQ(r.primary.local_lid, 0xffff);
  EXPECT_EQ(r.primary.remote_lid, 0xffff);
  EXPECT_EQ(r.primary.local_gid, kClientGid);
  EXPECT_EQ(r.primary.remote_gid, kServerGid);
  EXPECT_EQ(r.primary.flow_label, 0x681d0u);
  EXPECT_EQ(r.primary.packet_rate, 0);
  EXPECT_EQ(r.primary.traffic_class, 0);
  EXPECT_EQ(r.primary.hop_limit, 64);
  EXPECT_EQ(r.primary.sl, 0);
  EXPECT_FALSE(r.primary.subnet_local);
  EXPECT_EQ(r.primary.local_ack_timeout, 19);
  EXPECT_EQ(r.alternate, (CmPath{0, 0}));

  RdmaCmHeader cma;
  ASSERT_TRUE(ParseRdmaCmHeader(r.private_data, &cma));
  EXPECT_EQ(cma.cma_version, 0);
  EXPECT_EQ(cma.ip_version, 4);
  EXPECT_EQ(cma.src_port, 0xb8f6);
  std::array<uint8_t, 16> src{}, dst{};
  src[12] = 192, src[14] = 2, src[15] = 12;
  dst[12] = 192, dst[14] = 2, dst[15] = 11;
  EXPECT_EQ(cma.src_addr, src);
  EXPECT_EQ(cma.dst_addr, dst);
  // rping sends no private data of its own.
  for (size_t i = kRdmaCmHeaderBytes; i < kReqPrivateDataBytes; ++i) {
    EXPECT_EQ(r.private_data[i], 0) << i;
  }
  std::array<uint8_t, kReqPrivateDataBytes> rebuilt{};
  BuildRdmaCmHeader(cma, rebuilt);
  EXPECT_EQ(rebuilt, r.private_data);
}

TEST(CmWire, RepRtuDreqDrepFields) {
  std::vector<Mad> mads = MadsOf("rping_v4.pcap");
  ASSERT_EQ(mads.size(), 5u);
  CmMad rep_mad = Parse(mads[1]);
  const CmRep& rep = std::get<CmRep>(rep_mad.message);
  EXPECT_EQ(rep_mad.header.transaction_id, 0x00000002e0f4b854ull);
  EXPECT_EQ(rep.local_comm_id, 0x52a64104u);
  EXPECT_EQ(rep.remote_comm_id, 0x54b8f4e0u);
  EXPECT_EQ(rep.local_qkey, 0u);
  EXPECT_EQ(rep.local_qpn, 0x11u);
  EXPECT_EQ(rep.starting_psn, 0x04229bu);
  EXPECT_EQ(rep.responder_resources, 1);
  EXPECT_EQ(rep.initiator_depth, 1);
  EXPECT_EQ(rep.target_ack_delay, 15);
  EXPECT_EQ(rep.failover_accepted, kCmFailoverAccepted);
  EXPECT_FALSE(rep.end_to_end_flow_control);
  EXPECT_EQ(rep.rnr_retry_count, 7);
  EXPECT_FALSE(rep.srq);
  EXPECT_EQ(rep.local_ca_guid, 0x505400fffe000011ull);
  // rdma_cm puts no header in the REP: rping's (absent) private data is
  // all zeros.
  EXPECT_EQ(rep.private_data, (std::array<uint8_t, kRepPrivateDataBytes>{}));

  // Keep the parsed MAD: the reference below points into it.

  const CmMad rtu_mad = Parse(mads[2]);

  const CmRtu& rtu = std::get<CmRtu>(rtu_mad.message);
  EXPECT_EQ(rtu.local_comm_id, 0x54b8f4e0u);
  EXPECT_EQ(rtu.remote_comm_id, 0x52a64104u);

  // The client disconnected; the DREQ reuses the connection's TID.
  CmMad dreq_mad = Parse(mads[3]);
  const CmDreq& dreq = std::get<CmDreq>(dreq_mad.message);
  EXPECT_EQ(dreq_mad.header.transaction_id, 0x00000002e0f4b854ull);
  EXPECT_EQ(dreq.local_comm_id, 0x54b8f4e0u);
  EXPECT_EQ(dreq.remote_comm_id, 0x52a64104u);
  EXPECT_EQ(dreq.remote_qpn, 0x11u);
  CmMad drep_mad = Parse(mads[4]);
  const CmDrep& drep = std::get<CmDrep>(drep_mad.message);
  EXPECT_EQ(drep_mad.header.transaction_id, 0x00000002e0f4b854ull);
  EXPECT_EQ(drep.local_comm_id, 0x52a64104u);
  EXPECT_EQ(drep.remote_comm_id, 0x54b8f4e0u);

  // rxe_ops passes application private data in its REP, verbatim.
  std::vector<Mad> ops = MadsOf("rxe_ops_imm_atomic_v4.pcap");
  ASSERT_EQ(ops.size(), 5u);
  // Keep the parsed MAD: the reference below points into it.
  const CmMad ops_req_mad = Parse(ops[0]);
  const CmReq& ops_req = std::get<CmReq>(ops_req_mad.message);
  EXPECT_EQ(ops_req.responder_resources, 4);
  EXPECT_EQ(ops_req.initiator_depth, 4);
  // Keep the parsed MAD: the reference below points into it.
  const CmMad ops_rep_mad = Parse(ops[1]);
  const CmRep& ops_rep = std::get<CmRep>(ops_rep_mad.message);
  EXPECT_EQ(ops_rep.responder_resources, 4);
  EXPECT_EQ(ops_rep.initiator_depth, 4);
  EXPECT_EQ(ToHex(ops_rep.private_data.data(), 12), "0000560d730af00000000267");
}

TEST(CmWire, ClientTimeoutRejFields) {
  std::vector<Mad> mads = MadsOf("ext_lone_rping_client_to_nonrdma_host.pcap");
  ASSERT_EQ(mads.size(), 4u);
  // The three REQs are one retransmitted REQ.
  EXPECT_EQ(mads[0], mads[1]);
  EXPECT_EQ(mads[0], mads[2]);
  CmMad mad = Parse(mads[3]);
  const CmRej& rej = std::get<CmRej>(mad.message);
  EXPECT_EQ(mad.header.transaction_id, Parse(mads[0]).header.transaction_id);
  EXPECT_EQ(rej.local_comm_id, 0xe01e9144u);
  EXPECT_EQ(rej.remote_comm_id, 0u);
  EXPECT_EQ(rej.message_rejected, kCmMsgOther);
  EXPECT_EQ(rej.reason, static_cast<uint16_t>(CmRejReason::kTimeout));
  EXPECT_STREQ(CmRejReasonName(rej.reason), "timeout");
  EXPECT_EQ(rej.reject_info_length, 8);
  EXPECT_EQ(ToHex(rej.ari.data(), 8), "505400fffef6e719");  // its CA GUID
}

TEST(CmWire, EveryMessageTypeRoundTripsWithAllBitsSet) {
  // Every field at its maximum: a field that bleeds into its neighbour or
  // loses a bit changes the parse.
  CmReq req;
  req.local_comm_id = 0xffffffff;
  req.vendor_id = 0xffffff;
  req.sap_supported = true;
  req.service_id = ~0ull;
  req.local_ca_guid = ~0ull;
  req.local_qkey = 0xffffffff;
  req.local_qpn = req.local_eecn = req.remote_eecn = req.starting_psn =
      0xffffff;
  req.responder_resources = req.initiator_depth = 0xff;
  req.remote_cm_response_timeout = req.local_cm_response_timeout = 31;
  req.transport_service_type = 3;
  req.end_to_end_flow_control = req.rdc_exists = req.srq = true;
  req.retry_count = req.rnr_retry_count = req.extended_transport_type = 7;
  req.partition_key = 0xffff;
  req.path_mtu = req.max_cm_retries = 15;
  for (CmPath* p : {&req.primary, &req.alternate}) {
    p->local_lid = p->remote_lid = 0xffff;
    p->local_gid.fill(0xff);
    p->remote_gid.fill(0xff);
    p->flow_label = 0xfffff;
    p->packet_rate = 63;
    p->traffic_class = p->hop_limit = 0xff;
    p->sl = 15;
    p->subnet_local = true;
    p->local_ack_timeout = 31;
  }
  req.private_data.fill(0xff);
  CmRep rep;
  rep.local_comm_id = rep.remote_comm_id = rep.local_qkey = 0xffffffff;
  rep.local_qpn = rep.local_eecn = rep.starting_psn = rep.vendor_id = 0xffffff;
  rep.responder_resources = rep.initiator_depth = 0xff;
  rep.target_ack_delay = 31;
  rep.failover_accepted = 3;
  rep.end_to_end_flow_control = rep.srq = true;
  rep.rnr_retry_count = 7;
  rep.local_ca_guid = ~0ull;
  rep.private_data.fill(0xff);
  CmRej rej;
  rej.local_comm_id = rej.remote_comm_id = 0xffffffff;
  rej.message_rejected = 3;
  rej.reject_info_length = 127;
  rej.reason = 0xffff;
  rej.ari.fill(0xff);
  rej.private_data.fill(0xff);
  CmMra mra;
  mra.local_comm_id = mra.remote_comm_id = 0xffffffff;
  mra.message_mraed = 3;
  mra.service_timeout = 31;
  mra.private_data.fill(0xff);
  CmDreq dreq;
  dreq.local_comm_id = dreq.remote_comm_id = 0xffffffff;
  dreq.remote_qpn = 0xffffff;
  dreq.private_data.fill(0xff);
  CmRtu rtu;
  rtu.local_comm_id = 1;
  rtu.private_data.fill(0xff);
  CmDrep drep;
  drep.remote_comm_id = 2;
  drep.private_data.fill(0xff);
  for (const CmMessage& m :
       std::initializer_list<CmMessage>{req, rep, rej, mra, dreq, rtu, drep}) {
    CmMad mad;
    mad.header.transaction_id = 0x0123456789abcdefull;
    mad.header.attribute_id = static_cast<uint16_t>(AttrOf(m));
    mad.message = m;
    Mad bytes = Build(mad);
    SCOPED_TRACE(CmAttrName(AttrOf(m)));
    EXPECT_EQ(Parse(bytes), mad);
  }
  // Where the reserved bits are: a REQ with every defined bit set has
  // zeros only in byte 4, bytes 24..27, 6 bits of each path's flow-label
  // word, 3 bits of each SL byte, 3 of the primary ACK-timeout byte and 2
  // of the alternate's (whose bit 2 is "SAP supported").
  CmMad mad;
  mad.message = req;
  Mad bytes = Build(mad);
  EXPECT_EQ(ToHex(bytes.data() + 24, 8), "ffffffff00ffffff");
  EXPECT_EQ(ToHex(bytes.data() + 24 + 24, 8), "00000000ffffffff");
  EXPECT_EQ(ToHex(bytes.data() + 24 + 88, 8), "fffff03ffffff8f8");
  EXPECT_EQ(ToHex(bytes.data() + 24 + 132, 8), "fffff03ffffff8fc");
  // The REP's ECE vendor ID sits in the bytes after its 24-bit fields.
  CmRep vendor;
  vendor.vendor_id = 0xabcdef;
  mad.message = vendor;
  bytes = Build(mad);
  EXPECT_EQ(ToHex(bytes.data() + 24 + 12, 12), "000000ab000000cd000000ef");
}

TEST(CmWire, MalformedMadsAreRefusedWithTheirReason) {
  Mad good = MadsOf("rping_v4.pcap").at(0);
  CmMad mad;
  EXPECT_EQ(ParseCmMad(std::span<const uint8_t>(good.data(), 255), &mad),
            CmParseError::kTruncated);
  EXPECT_EQ(ParseCmMad(std::span<const uint8_t>(), &mad),
            CmParseError::kTruncated);
  struct Case {
    size_t offset;
    uint8_t value;
    CmParseError error;
  };
  const Case cases[] = {
      {0, 2, CmParseError::kBadBaseVersion},
      {0, 0x80, CmParseError::kBadBaseVersion},  // OPA MADs
      {1, 0x04, CmParseError::kBadMgmtClass},    // the GSI's SA... not CM
      {2, 1, CmParseError::kBadClassVersion},
      {3, 0x01, CmParseError::kBadMethod},              // Get
      {3, 0x83, CmParseError::kBadMethod},              // a response bit
      {17, 0x19, CmParseError::kUnsupportedAttribute},  // LAP
      {17, 0x1a, CmParseError::kUnsupportedAttribute},  // APR
      {17, 0x01, CmParseError::kUnsupportedAttribute},  // ClassPortInfo
  };
  for (const Case& c : cases) {
    Mad bad = good;
    bad[c.offset] = c.value;
    EXPECT_EQ(ParseCmMad(bad, &mad), c.error)
        << c.offset << " " << CmParseErrorName(c.error);
  }
  // Longer input (padding) is fine: the first 256 bytes are the MAD.
  std::vector<uint8_t> longer(good.begin(), good.end());
  longer.resize(300, 0xaa);
  EXPECT_EQ(ParseCmMad(longer, &mad), CmParseError::kNone);
}

// A CM MAD by hand: the common header (Send, TID 0x512345678) with
// `attribute`, then `body` at offset 24; the rest zero.
Mad HandMadeCmMad(uint8_t attribute, std::span<const uint8_t> body) {
  Mad mad{};
  const uint8_t header[24] = {
      1,    0x07, 2,    0x03, 0,    0,         0, 0, 0x00, 0x00, 0x00, 0x05,
      0x12, 0x34, 0x56, 0x78, 0x00, attribute, 0, 0, 0,    0,    0,    0};
  std::copy(std::begin(header), std::end(header), mad.begin());
  std::copy(body.begin(), body.end(), mad.begin() + 24);
  return mad;
}

// A SIDR_REQ as the kernel's cm_format_sidr_req lays it out (request ID,
// P_Key, reserved, service ID, private data), from udaddy's UDP port space.
Mad UdaddySidrReq() {
  const uint8_t body[16] = {0xde, 0xad, 0xbe, 0xef, 0xff, 0xff, 0,    0,
                            0,    0,    0,    0,    0x01, 0x11, 0x1d, 0x2f};
  Mad mad = HandMadeCmMad(0x17, body);
  mad[24 + 16] = 0x5a;  // first byte of the private data
  mad[255] = 0xa5;      // its last
  return mad;
}

TEST(CmWire, SidrReqAndRepFieldsSitWhereTheKernelPutsThem) {
  CmMad mad = Parse(UdaddySidrReq());
  ASSERT_TRUE(std::holds_alternative<CmSidrReq>(mad.message));
  const CmSidrReq& req = std::get<CmSidrReq>(mad.message);
  EXPECT_EQ(mad.header.transaction_id, 0x0000000512345678ull);
  EXPECT_EQ(req.request_id, 0xdeadbeefu);
  EXPECT_EQ(req.partition_key, 0xffff);
  EXPECT_EQ(req.service_id, RdmaCmServiceId(kRdmaPsUdp, 7471));
  EXPECT_EQ(req.private_data.front(), 0x5a);
  EXPECT_EQ(req.private_data.back(), 0xa5);
  EXPECT_EQ(ToHex(Build(mad).data(), kMadBytes),
            ToHex(UdaddySidrReq().data(), kMadBytes));

  // Every SIDR_REP field at its maximum: none bleeds into its neighbour.
  CmSidrRep rep;
  rep.request_id = 0xffffffff;
  rep.status = 0xff;
  rep.additional_info_length = 0xff;
  rep.qpn = 0xffffff;
  rep.service_id = ~0ull;
  rep.qkey = 0xffffffff;
  rep.additional_info.fill(0xff);
  rep.private_data.fill(0xff);
  CmMad rep_mad;
  rep_mad.message = rep;
  const Mad bytes = Build(rep_mad);
  EXPECT_EQ(ToHex(bytes.data() + 16, 2), "0018");
  // Only the reserved 16 bits at 6 and 8 bits after the QPN are zero.
  EXPECT_EQ(ToHex(bytes.data() + 24, 12), "ffffffffffff0000ffffff00");
  for (size_t i = 24 + 12; i < kMadBytes; ++i) EXPECT_EQ(bytes[i], 0xff) << i;
  EXPECT_EQ(Parse(bytes).message, CmMessage(rep));
}

TEST(CmWire, TimeoutUnits) {
  EXPECT_EQ(CmTimeoutMicros(0), 4u);
  EXPECT_EQ(CmTimeoutMicros(20), 4294967u);  // 4.29 s: rping's timeouts
  EXPECT_EQ(CmTimeoutMicros(31), CmTimeoutMicros(40));
}

TEST(CmWire, RdmaCmHeaderRefusesWhatRdmaCmRefuses) {
  std::array<uint8_t, kReqPrivateDataBytes> pd{};
  RdmaCmHeader h;
  h.ip_version = 6;
  h.src_port = 0x1234;
  h.src_addr.fill(0x11);
  h.dst_addr.fill(0x22);
  BuildRdmaCmHeader(h, pd);
  EXPECT_EQ(pd[1], 0x60);
  RdmaCmHeader out;
  ASSERT_TRUE(ParseRdmaCmHeader(pd, &out));
  EXPECT_EQ(out, h);
  EXPECT_FALSE(
      ParseRdmaCmHeader(std::span<const uint8_t>(pd.data(), 35), &out));
  pd[0] = 1;  // cma version
  EXPECT_FALSE(ParseRdmaCmHeader(pd, &out));
  pd[0] = 0;
  pd[1] = 0x50;
  EXPECT_FALSE(ParseRdmaCmHeader(pd, &out));
  uint16_t ps, port;
  EXPECT_FALSE(ParseRdmaCmServiceId(0x0000000101060000ull, &ps, &port));
}

// The active side's builders reproduce the kernel's REQ and RTU from the
// rping capture byte for byte.
TEST(CmWire, ActiveSideReqAndRtuMatchTheKernel) {
  std::vector<Mad> mads = MadsOf("rping_v4.pcap");
  ASSERT_EQ(mads.size(), 5u);
  RdmaCmConnectParams p;
  p.transaction_id = 0x00000002e0f4b854ull;
  p.local_comm_id = 0x54b8f4e0;
  p.local_ca_guid = 0x505400fffe000012ull;
  p.local_qpn = 0x11;
  p.starting_psn = 0x934201;
  p.port = 7174;
  p.rdma_cm.src_port = 0xb8f6;
  p.rdma_cm.src_addr[12] = 192, p.rdma_cm.src_addr[14] = 2;
  p.rdma_cm.src_addr[15] = 12;
  p.rdma_cm.dst_addr[12] = 192, p.rdma_cm.dst_addr[14] = 2;
  p.rdma_cm.dst_addr[15] = 11;
  p.local_gid = kClientGid;
  p.remote_gid = kServerGid;
  p.flow_label = 0x681d0;
  EXPECT_EQ(ToHex(Build(BuildRdmaCmReq(p)).data(), kMadBytes),
            ToHex(mads[0].data(), kMadBytes));
  CmMad rep = Parse(mads[1]);
  EXPECT_EQ(
      ToHex(Build(BuildRtuFor(rep.header, std::get<CmRep>(rep.message))).data(),
            kMadBytes),
      ToHex(mads[2].data(), kMadBytes));
  // Application private data lands after rdma_cm's header, at most 56.
  std::vector<uint8_t> user(60, 0xab);
  p.user_private_data = user;
  // Keep the MAD: the reference below points into it.
  const CmMad req_mad = BuildRdmaCmReq(p);
  const CmReq& req = std::get<CmReq>(req_mad.message);
  EXPECT_EQ(req.private_data[kRdmaCmHeaderBytes], 0xab);
  EXPECT_EQ(req.private_data[kReqPrivateDataBytes - 1], 0xab);
  RdmaCmHeader h;
  ASSERT_TRUE(ParseRdmaCmHeader(req.private_data, &h));
  EXPECT_EQ(h, p.rdma_cm);
}

// ===================== The service =====================

class FakeAcceptor : public CmAcceptor {
 public:
  void OnConnectRequest(const CmConnectRequest& request,
                        CmAcceptDecision* decision) override {
    ++calls;
    last_port = request.port;
    last_rdma_cm = request.rdma_cm;
    offered_responder_resources = request.responder_resources;
    offered_initiator_depth = request.initiator_depth;
    decision->accept = accept;
    decision->local_qpn = next_qpn++;
    decision->starting_psn = psn;
    decision->rep_private_data = rep_private_data;
    decision->reject_reason = reject_reason;
    decision->rej_private_data[0] = 0x42;
  }
  bool accept = true;
  uint32_t next_qpn = 0x11;
  uint32_t psn = 0x04229b;
  std::array<uint8_t, kRepPrivateDataBytes> rep_private_data{};
  CmRejReason reject_reason = CmRejReason::kConsumerReject;
  int calls = 0;
  uint16_t last_port = 0;
  RdmaCmHeader last_rdma_cm;
  uint8_t offered_responder_resources = 0;
  uint8_t offered_initiator_depth = 0;
};

CmServiceConfig FixtureConfig() {
  CmServiceConfig config;
  config.local_ca_guid = 0x505400fffe000011ull;  // the server's in rping
  config.target_ack_delay = 15;
  config.rnr_retry_count = 7;
  return config;
}

const CmPeer kClient{kClientGid, kGsiQp};

std::vector<CmActionType> Types(const CmActionList& list) {
  std::vector<CmActionType> types;
  for (const CmAction& a : list) types.push_back(a.type);
  return types;
}

CmMad MadOfAction(const CmAction& a) {
  CmMad mad;
  EXPECT_EQ(ParseCmMad(a.mad, &mad), CmParseError::kNone);
  return mad;
}

// Our local comm ID goes where the kernel's was; everything else of the
// fixture's message must match ours byte for byte.
Mad WithLocalCommId(Mad mad, uint32_t id, size_t at = 24) {
  mad[at] = uint8_t(id >> 24);
  mad[at + 1] = uint8_t(id >> 16);
  mad[at + 2] = uint8_t(id >> 8);
  mad[at + 3] = uint8_t(id);
  return mad;
}

class CmServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rping_ = MadsOf("rping_v4.pcap");
    ASSERT_EQ(rping_.size(), 5u);
    ASSERT_TRUE(service_.Listen(7174));
  }
  // Sends the fixture REQ and returns our local comm ID.
  uint32_t Connect() {
    CmActionList actions;
    EXPECT_EQ(service_.HandleMad(kClient, rping_[0], now_, &actions),
              CmResult::kHandled);
    EXPECT_EQ(actions.size(), 2u);
    return actions.empty() ? 0 : actions[0].local_comm_id;
  }
  // A fixture message from the client, addressed to our comm ID instead of
  // the kernel server's (remote comm ID at MAD offset 28).
  Mad ToUs(const Mad& fixture, uint32_t local_comm_id) {
    return WithLocalCommId(fixture, local_comm_id, 28);
  }
  Mad ModifiedReq(void (*modify)(CmReq*)) {
    CmMad mad = Parse(rping_[0]);
    modify(&std::get<CmReq>(mad.message));
    return Build(mad);
  }

  FakeAcceptor acceptor_;
  CmService service_{FixtureConfig(), &acceptor_};
  std::vector<Mad> rping_;
  uint64_t now_ = 1'000'000;
};

TEST_F(CmServiceTest, ReqGivesCreateQpThenTheKernelsRep) {
  CmActionList actions;
  ASSERT_EQ(service_.HandleMad(kClient, rping_[0], now_, &actions),
            CmResult::kHandled);
  ASSERT_EQ(Types(actions),
            (std::vector<CmActionType>{CmActionType::kCreateQp,
                                       CmActionType::kSendMad}));
  EXPECT_EQ(acceptor_.calls, 1);
  EXPECT_EQ(acceptor_.last_port, 7174);
  EXPECT_EQ(acceptor_.last_rdma_cm.src_port, 0xb8f6);
  EXPECT_EQ(acceptor_.offered_responder_resources, 1);
  EXPECT_EQ(acceptor_.offered_initiator_depth, 1);

  const CmQpParams& qp = actions[0].qp;
  uint32_t id = actions[0].local_comm_id;
  EXPECT_NE(id, 0u);
  EXPECT_EQ(qp.local_comm_id, id);
  EXPECT_EQ(qp.port, 7174);
  EXPECT_EQ(qp.local_qpn, 0x11u);
  EXPECT_EQ(qp.remote_qpn, 0x11u);
  // Crossed over as the kernel does (rping_v4.pcap: the client's first
  // SEND carries the REP's PSN, the server's first READ the REQ's).
  EXPECT_EQ(qp.expected_psn, 0x04229bu);
  EXPECT_EQ(qp.send_psn, 0x934201u);
  EXPECT_EQ(qp.path_mtu, 3);
  EXPECT_EQ(qp.retry_count, 7);
  EXPECT_EQ(qp.rnr_retry_count, 7);
  EXPECT_EQ(qp.local_ack_timeout, 19);
  EXPECT_EQ(qp.max_rd_atomic, 1);
  EXPECT_EQ(qp.max_dest_rd_atomic, 1);
  EXPECT_EQ(qp.partition_key, 0xffff);
  EXPECT_EQ(qp.local_gid, kServerGid);
  EXPECT_EQ(qp.remote_gid, kClientGid);
  EXPECT_EQ(qp.flow_label, 0x681d0u);
  EXPECT_EQ(qp.hop_limit, 64);
  EXPECT_EQ(qp.rdma_cm.src_port, 0xb8f6);

  EXPECT_EQ(actions[1].peer, kClient);
  EXPECT_EQ(actions[1].local_qpn, 0x11u);
  // Byte for byte the REP the kernel sent in the capture, but for our
  // communication ID.
  EXPECT_EQ(ToHex(actions[1].mad.data(), kMadBytes),
            ToHex(WithLocalCommId(rping_[1], id).data(), kMadBytes));
  EXPECT_EQ(service_.StateOfQpn(0x11), CmConnState::kRepSent);
  EXPECT_EQ(service_.connection_count(), 1u);
}

TEST_F(CmServiceTest, RxeOpsRepWithPrivateDataMatchesTheKernel) {
  std::vector<Mad> ops = MadsOf("rxe_ops_imm_atomic_v4.pcap");
  ASSERT_EQ(ops.size(), 5u);
  // Keep the parsed MAD: the reference below points into it.
  const CmMad kernel_rep_mad = Parse(ops[1]);
  const CmRep& kernel_rep = std::get<CmRep>(kernel_rep_mad.message);
  acceptor_.next_qpn = kernel_rep.local_qpn;
  acceptor_.psn = kernel_rep.starting_psn;
  acceptor_.rep_private_data = kernel_rep.private_data;
  // Keep the parsed MAD: the reference below points into it.
  const CmMad req_mad = Parse(ops[0]);
  const CmReq& req = std::get<CmReq>(req_mad.message);
  uint16_t ps, port;
  ASSERT_TRUE(ParseRdmaCmServiceId(req.service_id, &ps, &port));
  ASSERT_TRUE(service_.Listen(port));
  CmActionList actions;
  ASSERT_EQ(service_.HandleMad(kClient, ops[0], now_, &actions),
            CmResult::kHandled);
  ASSERT_EQ(actions.size(), 2u);
  EXPECT_EQ(actions[0].qp.max_rd_atomic, 4);
  EXPECT_EQ(actions[0].qp.max_dest_rd_atomic, 4);
  EXPECT_EQ(ToHex(actions[1].mad.data(), kMadBytes),
            ToHex(WithLocalCommId(ops[1], actions[1].local_comm_id).data(),
                  kMadBytes));
}

TEST_F(CmServiceTest, ResourcesAreTheMinimumOfOursAndTheirs) {
  CmServiceConfig config = FixtureConfig();
  config.max_responder_resources = 2;
  config.max_initiator_depth = 8;
  CmService service(config, &acceptor_);
  ASSERT_TRUE(service.Listen(7174));
  // The client serves 5 reads (responder resources) and issues 3
  // (initiator depth): we serve min(3, 2) and issue min(5, 8).
  Mad req = ModifiedReq([](CmReq* r) {
    r->responder_resources = 5;
    r->initiator_depth = 3;
  });
  CmActionList actions;
  ASSERT_EQ(service.HandleMad(kClient, req, now_, &actions),
            CmResult::kHandled);
  EXPECT_EQ(actions[0].qp.max_dest_rd_atomic, 2);
  EXPECT_EQ(actions[0].qp.max_rd_atomic, 5);
  // Keep the MAD: the reference below points into it.
  const CmMad rep_mad = MadOfAction(actions[1]);
  const CmRep& rep = std::get<CmRep>(rep_mad.message);
  EXPECT_EQ(rep.responder_resources, 2);
  EXPECT_EQ(rep.initiator_depth, 5);
}

TEST_F(CmServiceTest, RetransmittedReqGetsTheSameRepAndNoSecondQp) {
  CmActionList first;
  ASSERT_EQ(service_.HandleMad(kClient, rping_[0], now_, &first),
            CmResult::kHandled);
  CmActionList again;
  ASSERT_EQ(service_.HandleMad(kClient, rping_[0], now_ + 10, &again),
            CmResult::kAnsweredAgain);
  ASSERT_EQ(Types(again), (std::vector<CmActionType>{CmActionType::kSendMad}));
  EXPECT_EQ(again[0].mad, first[1].mad);
  EXPECT_EQ(again[0].peer, kClient);
  EXPECT_EQ(acceptor_.calls, 1);
  EXPECT_EQ(service_.connection_count(), 1u);
  // The same comm ID from another GID is another connection.
  CmPeer other{V4Gid(192, 0, 2, 99)};
  CmActionList third;
  EXPECT_EQ(service_.HandleMad(other, rping_[0], now_, &third),
            CmResult::kHandled);
  EXPECT_EQ(acceptor_.calls, 2);
}

TEST_F(CmServiceTest, RtuEstablishesOnce) {
  uint32_t id = Connect();
  CmActionList actions;
  ASSERT_EQ(service_.HandleMad(kClient, ToUs(rping_[2], id), now_, &actions),
            CmResult::kHandled);
  ASSERT_EQ(Types(actions),
            (std::vector<CmActionType>{CmActionType::kEstablished}));
  EXPECT_EQ(actions[0].local_qpn, 0x11u);
  EXPECT_EQ(service_.StateOfQpn(0x11), CmConnState::kEstablished);
  EXPECT_EQ(service_.NextDeadline(), UINT64_MAX);  // no more REPs
  CmActionList dup;
  EXPECT_EQ(service_.HandleMad(kClient, ToUs(rping_[2], id), now_, &dup),
            CmResult::kIgnoredDuplicate);
  EXPECT_TRUE(dup.empty());
  // The kernel server's comm ID is not ours.
  EXPECT_EQ(service_.HandleMad(kClient, rping_[2], now_, &dup),
            CmResult::kUnknownConnection);
  // An RTU from another GID with our IDs does not count.
  CmService fresh(FixtureConfig(), &acceptor_);
  ASSERT_TRUE(fresh.Listen(7174));
  CmActionList a;
  fresh.HandleMad(kClient, rping_[0], now_, &a);
  uint32_t fresh_id = a[0].local_comm_id;
  uint32_t fresh_qpn = a[0].local_qpn;
  a.clear();
  EXPECT_EQ(
      fresh.HandleMad(CmPeer{kServerGid}, ToUs(rping_[2], fresh_id), now_, &a),
      CmResult::kMismatch);
  EXPECT_EQ(fresh.StateOfQpn(fresh_qpn), CmConnState::kRepSent);
}

TEST_F(CmServiceTest, FirstRcPacketEstablishesWhenTheRtuIsLost) {
  Connect();
  CmActionList actions;
  EXPECT_FALSE(service_.NotifyRcPacket(0x99, now_, &actions));
  ASSERT_TRUE(service_.NotifyRcPacket(0x11, now_, &actions));
  ASSERT_EQ(Types(actions),
            (std::vector<CmActionType>{CmActionType::kEstablished}));
  EXPECT_EQ(service_.StateOfQpn(0x11), CmConnState::kEstablished);
  EXPECT_FALSE(service_.NotifyRcPacket(0x11, now_, &actions));
  EXPECT_EQ(service_.stats().established_by_packet, 1u);
  // No REP retransmission after that.
  actions.clear();
  EXPECT_FALSE(service_.OnTimer(now_ + 100'000'000, &actions));
  EXPECT_TRUE(actions.empty());
}

TEST_F(CmServiceTest, DreqGivesDrepAndTeardownAndARepeatIsAnswered) {
  uint32_t id = Connect();
  CmActionList actions;
  service_.HandleMad(kClient, ToUs(rping_[2], id), now_, &actions);
  actions.clear();
  ASSERT_EQ(service_.HandleMad(kClient, ToUs(rping_[3], id), now_, &actions),
            CmResult::kHandled);
  ASSERT_EQ(Types(actions),
            (std::vector<CmActionType>{CmActionType::kDestroyQp,
                                       CmActionType::kSendMad}));
  EXPECT_EQ(actions[0].local_qpn, 0x11u);
  EXPECT_EQ(actions[0].close_reason, CmCloseReason::kPeerDisconnect);
  // The kernel's DREP from the capture, but for our comm ID.
  EXPECT_EQ(ToHex(actions[1].mad.data(), kMadBytes),
            ToHex(WithLocalCommId(rping_[4], id).data(), kMadBytes));
  EXPECT_EQ(service_.StateOfQpn(0x11), CmConnState::kTimeWait);

  CmActionList again;
  ASSERT_EQ(service_.HandleMad(kClient, ToUs(rping_[3], id), now_, &again),
            CmResult::kAnsweredAgain);
  ASSERT_EQ(Types(again), (std::vector<CmActionType>{CmActionType::kSendMad}));
  EXPECT_EQ(again[0].mad, actions[1].mad);

  // A late REQ for the closed connection: stale.
  CmActionList late;
  ASSERT_EQ(service_.HandleMad(kClient, rping_[0], now_, &late),
            CmResult::kRejected);
  // Keep the MAD: the reference below points into it.
  const CmMad rej_mad = MadOfAction(late[0]);
  const CmRej& rej = std::get<CmRej>(rej_mad.message);
  EXPECT_EQ(rej.reason, static_cast<uint16_t>(CmRejReason::kStaleConnection));

  // Time-wait ends; the entry is free and a DREQ still gets a DREP.
  CmActionList timer;
  EXPECT_FALSE(service_.OnTimer(now_ + FixtureConfig().timewait_us, &timer));
  EXPECT_TRUE(timer.empty());
  EXPECT_EQ(service_.connection_count(), 0u);
  CmActionList orphan;
  EXPECT_EQ(service_.HandleMad(kClient, ToUs(rping_[3], id), now_, &orphan),
            CmResult::kUnknownConnection);
  ASSERT_EQ(orphan.size(), 1u);
  EXPECT_EQ(ToHex(orphan[0].mad.data(), kMadBytes),
            ToHex(WithLocalCommId(rping_[4], id).data(), kMadBytes));
}

TEST_F(CmServiceTest, DreqForAnotherQpnIsIgnored) {
  uint32_t id = Connect();
  CmMad dreq = Parse(ToUs(rping_[3], id));
  std::get<CmDreq>(dreq.message).remote_qpn = 0x12;
  CmActionList actions;
  EXPECT_EQ(service_.HandleMad(kClient, Build(dreq), now_, &actions),
            CmResult::kMismatch);
  EXPECT_TRUE(actions.empty());
  EXPECT_EQ(service_.StateOfQpn(0x11), CmConnState::kRepSent);
}

void ExpectRej(const CmAction& action, const Mad& req, CmRejReason reason) {
  ASSERT_EQ(action.type, CmActionType::kSendMad);
  CmMad mad = MadOfAction(action);
  CmMad req_mad = Parse(req);
  ASSERT_TRUE(std::holds_alternative<CmRej>(mad.message));
  const CmRej& rej = std::get<CmRej>(mad.message);
  EXPECT_EQ(mad.header.transaction_id, req_mad.header.transaction_id);
  EXPECT_EQ(rej.reason, static_cast<uint16_t>(reason))
      << CmRejReasonName(rej.reason);
  EXPECT_EQ(rej.message_rejected, kCmMsgReq);
  EXPECT_EQ(rej.local_comm_id, 0u);
  EXPECT_EQ(rej.remote_comm_id, std::get<CmReq>(req_mad.message).local_comm_id);
  EXPECT_EQ(action.peer, kClient);
}

TEST_F(CmServiceTest, UnknownPortIsRejectedAsInvalidServiceId) {
  ASSERT_TRUE(service_.StopListening(7174));
  CmActionList actions;
  ASSERT_EQ(service_.HandleMad(kClient, rping_[0], now_, &actions),
            CmResult::kRejected);
  ASSERT_EQ(actions.size(), 1u);
  ExpectRej(actions[0], rping_[0], CmRejReason::kInvalidServiceId);
  EXPECT_EQ(std::get<CmRej>(MadOfAction(actions[0]).message).reason, 8);
  EXPECT_EQ(acceptor_.calls, 0);
  EXPECT_EQ(service_.connection_count(), 0u);
  // Another port space (RDMA_PS_UDP) on the listened port: the same.
  ASSERT_TRUE(service_.Listen(7174));
  Mad udp = ModifiedReq(
      [](CmReq* r) { r->service_id = RdmaCmServiceId(kRdmaPsUdp, 7174); });
  actions.clear();
  ASSERT_EQ(service_.HandleMad(kClient, udp, now_, &actions),
            CmResult::kRejected);
  ExpectRej(actions[0], udp, CmRejReason::kInvalidServiceId);
  EXPECT_EQ(service_.stats().rejects_by_reason[8], 2u);
}

TEST_F(CmServiceTest, ReqsWeCannotServeAreRejectedWithTheirReason) {
  struct Case {
    void (*modify)(CmReq*);
    CmRejReason reason;
  };
  const Case cases[] = {
      {[](CmReq* r) { r->transport_service_type = kCmTransportUc; },
       CmRejReason::kInvalidTransportType},
      {[](CmReq* r) { r->path_mtu = 0; }, CmRejReason::kInvalidMtu},
      {[](CmReq* r) { r->path_mtu = 6; }, CmRejReason::kInvalidMtu},
      {[](CmReq* r) { r->private_data[1] = 0x50; },  // IP version 5
       CmRejReason::kConsumerReject},
  };
  for (const Case& c : cases) {
    Mad req = ModifiedReq(c.modify);
    CmActionList actions;
    ASSERT_EQ(service_.HandleMad(kClient, req, now_, &actions),
              CmResult::kRejected);
    ASSERT_EQ(actions.size(), 1u);
    ExpectRej(actions[0], req, c.reason);
  }
  EXPECT_EQ(acceptor_.calls, 0);
  EXPECT_EQ(service_.connection_count(), 0u);
}

TEST_F(CmServiceTest, AcceptorRejectsWithItsReasonAndPrivateData) {
  acceptor_.accept = false;
  CmActionList actions;
  ASSERT_EQ(service_.HandleMad(kClient, rping_[0], now_, &actions),
            CmResult::kRejected);
  ASSERT_EQ(actions.size(), 1u);
  ExpectRej(actions[0], rping_[0], CmRejReason::kConsumerReject);
  EXPECT_EQ(std::get<CmRej>(MadOfAction(actions[0]).message).private_data[0],
            0x42);
  EXPECT_EQ(service_.connection_count(), 0u);
  acceptor_.reject_reason = CmRejReason::kNoQp;
  actions.clear();
  service_.HandleMad(kClient, rping_[0], now_, &actions);
  ExpectRej(actions[0], rping_[0], CmRejReason::kNoQp);
}

TEST_F(CmServiceTest, MalformedMadsProduceNothing) {
  const std::pair<size_t, uint8_t> corruptions[] = {
      {0, 2}, {1, 0x04}, {2, 1}, {3, 0x83}, {17, 0x19}};
  for (auto [offset, value] : corruptions) {
    Mad bad = rping_[0];
    bad[offset] = value;
    CmActionList actions;
    EXPECT_EQ(service_.HandleMad(kClient, bad, now_, &actions),
              CmResult::kParseError);
    EXPECT_TRUE(actions.empty());
  }
  CmActionList actions;
  EXPECT_EQ(service_.HandleMad(kClient,
                               std::span<const uint8_t>(rping_[0].data(), 100),
                               now_, &actions),
            CmResult::kParseError);
  const CmStats& s = service_.stats();
  EXPECT_EQ(s.parse_errors[size_t(CmParseError::kBadBaseVersion)], 1u);
  EXPECT_EQ(s.parse_errors[size_t(CmParseError::kBadMgmtClass)], 1u);
  EXPECT_EQ(s.parse_errors[size_t(CmParseError::kBadClassVersion)], 1u);
  EXPECT_EQ(s.parse_errors[size_t(CmParseError::kBadMethod)], 1u);
  EXPECT_EQ(s.parse_errors[size_t(CmParseError::kUnsupportedAttribute)], 1u);
  EXPECT_EQ(s.parse_errors[size_t(CmParseError::kTruncated)], 1u);
  EXPECT_EQ(s.results[size_t(CmResult::kParseError)], 6u);
  EXPECT_EQ(service_.connection_count(), 0u);
  // A REP is an answer to a REQ we never sent.
  EXPECT_EQ(service_.HandleMad(kClient, rping_[1], now_, &actions),
            CmResult::kUnexpectedMessage);
  EXPECT_TRUE(actions.empty());
}

// We serve no UD QP: a SIDR_REQ is answered at once, "service ID not
// supported", with its TID, request ID and service ID, and nothing else.
TEST_F(CmServiceTest, SidrReqIsAnsweredServiceIdNotSupported) {
  for (int attempt = 0; attempt < 2; ++attempt) {  // a retry: same answer
    CmActionList actions;
    ASSERT_EQ(service_.HandleMad(kClient, UdaddySidrReq(), now_, &actions),
              CmResult::kSidrRefused);
    ASSERT_EQ(Types(actions), std::vector{CmActionType::kSendMad});
    // Request ID, status 1, no additional information, QPN 0, the service
    // ID, Q_Key 0; the rest zero.
    const uint8_t body[24] = {0xde, 0xad, 0xbe, 0xef, 0x01, 0, 0, 0,
                              0,    0,    0,    0,    0,    0, 0, 0,
                              0x01, 0x11, 0x1d, 0x2f, 0,    0, 0, 0};
    const Mad expected = HandMadeCmMad(0x18, body);
    EXPECT_EQ(ToHex(actions[0].mad.data(), kMadBytes),
              ToHex(expected.data(), kMadBytes));
    EXPECT_EQ(actions[0].peer.gid, kClient.gid);
    EXPECT_EQ(actions[0].peer.qpn, kClient.qpn);
  }
  EXPECT_EQ(service_.connection_count(), 0u);
  EXPECT_EQ(acceptor_.calls, 0);
  const CmStats& s = service_.stats();
  EXPECT_EQ(s.results[size_t(CmResult::kSidrRefused)], 2u);
  EXPECT_EQ(s.received[0x17 - 0x10], 2u);
  EXPECT_EQ(s.sent[0x18 - 0x10], 2u);
  // A SIDR_REP answers a SIDR_REQ we never sent.
  CmActionList actions;
  CmMad rep;
  rep.message = CmSidrRep{};
  EXPECT_EQ(service_.HandleMad(kClient, Build(rep), now_, &actions),
            CmResult::kUnexpectedMessage);
  EXPECT_TRUE(actions.empty());
}

TEST_F(CmServiceTest, RepIsRetransmittedMaxCmRetriesTimesThenRejected) {
  // rping: max CM retries 15, local CM response timeout 20 (4.29 s).
  CmActionList first;
  ASSERT_EQ(service_.HandleMad(kClient, rping_[0], now_, &first),
            CmResult::kHandled);
  const Mad rep = first[1].mad;
  const uint64_t interval = CmTimeoutMicros(20);
  EXPECT_EQ(service_.NextDeadline(), now_ + interval);
  uint64_t t = now_;
  for (int i = 0; i < 15; ++i) {
    CmActionList early;
    EXPECT_FALSE(service_.OnTimer(t + interval - 1, &early));
    EXPECT_TRUE(early.empty()) << i;
    t += interval;
    CmActionList actions;
    EXPECT_FALSE(service_.OnTimer(t, &actions));
    ASSERT_EQ(Types(actions),
              (std::vector<CmActionType>{CmActionType::kSendMad}))
        << i;
    EXPECT_EQ(actions[0].mad, rep);
  }
  t += interval;
  CmActionList last;
  EXPECT_FALSE(service_.OnTimer(t, &last));
  ASSERT_EQ(Types(last), (std::vector<CmActionType>{CmActionType::kDestroyQp,
                                                    CmActionType::kSendMad}));
  EXPECT_EQ(last[0].close_reason, CmCloseReason::kRepTimeout);
  CmMad rej_mad = MadOfAction(last[1]);
  const CmRej& rej = std::get<CmRej>(rej_mad.message);
  EXPECT_EQ(rej.reason, static_cast<uint16_t>(CmRejReason::kTimeout));
  EXPECT_EQ(rej.message_rejected, kCmMsgRep);
  EXPECT_EQ(rej.local_comm_id, first[0].local_comm_id);
  EXPECT_EQ(rej.remote_comm_id, 0x54b8f4e0u);
  EXPECT_EQ(ToHex(rej.ari.data(), 8), "505400fffe000011");
  EXPECT_EQ(service_.stats().rep_retransmits, 15u);
  EXPECT_EQ(service_.stats().rep_timeouts, 1u);
  EXPECT_EQ(service_.StateOfQpn(0x11), CmConnState::kTimeWait);
  // Nothing more until time-wait ends.
  CmActionList quiet;
  EXPECT_FALSE(service_.OnTimer(t + 1, &quiet));
  EXPECT_TRUE(quiet.empty());
  EXPECT_FALSE(service_.OnTimer(t + FixtureConfig().timewait_us, &quiet));
  EXPECT_EQ(service_.connection_count(), 0u);
}

TEST_F(CmServiceTest, RetransmitIntervalIsClampedAndMraDefersTheRep) {
  Mad req = ModifiedReq([](CmReq* r) {
    r->local_cm_response_timeout = 0;  // 4 us: clamped to 100 ms
    r->max_cm_retries = 1;
  });
  CmActionList actions;
  ASSERT_EQ(service_.HandleMad(kClient, req, now_, &actions),
            CmResult::kHandled);
  uint32_t id = actions[0].local_comm_id;
  EXPECT_EQ(service_.NextDeadline(), now_ + FixtureConfig().min_retransmit_us);
  // The client asks for 4.29 s more before its RTU.
  CmMad mra;
  mra.message = CmMra{0x54b8f4e0, id, kCmMsgRep, 20, {}};
  CmActionList a;
  ASSERT_EQ(service_.HandleMad(kClient, Build(mra), now_, &a),
            CmResult::kHandled);
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(service_.NextDeadline(),
            now_ + FixtureConfig().min_retransmit_us + CmTimeoutMicros(20));
  // An MRA of something else is refused.
  std::get<CmMra>(mra.message).message_mraed = kCmMsgReq;
  EXPECT_EQ(service_.HandleMad(kClient, Build(mra), now_, &a),
            CmResult::kWrongState);
}

TEST_F(CmServiceTest, ClientRejTearsDown) {
  uint32_t id = Connect();
  CmMad rej;
  rej.message = CmRej{0x54b8f4e0, id, kCmMsgRep, 0, 28, {}, {}};
  CmActionList actions;
  ASSERT_EQ(service_.HandleMad(kClient, Build(rej), now_, &actions),
            CmResult::kHandled);
  ASSERT_EQ(Types(actions),
            (std::vector<CmActionType>{CmActionType::kDestroyQp}));
  EXPECT_EQ(actions[0].close_reason, CmCloseReason::kPeerReject);
  EXPECT_EQ(service_.StateOfQpn(0x11), CmConnState::kTimeWait);
  // The client's own timeout REJ (remote comm ID 0) finds it too.
  CmService other(FixtureConfig(), &acceptor_);
  ASSERT_TRUE(other.Listen(7174));
  CmActionList b;
  other.HandleMad(kClient, rping_[0], now_, &b);
  b.clear();
  rej.message = CmRej{0x54b8f4e0, 0, kCmMsgOther, 0, 4, {}, {}};
  EXPECT_EQ(other.HandleMad(kClient, Build(rej), now_, &b), CmResult::kHandled);
  ASSERT_EQ(Types(b), (std::vector<CmActionType>{CmActionType::kDestroyQp}));
}

TEST_F(CmServiceTest, LocalDisconnectSendsDreqUntilDrep) {
  uint32_t id = Connect();
  CmActionList actions;
  service_.HandleMad(kClient, ToUs(rping_[2], id), now_, &actions);
  actions.clear();
  EXPECT_FALSE(service_.Disconnect(0x77, now_, &actions));
  ASSERT_TRUE(service_.Disconnect(0x11, now_, &actions));
  ASSERT_EQ(Types(actions),
            (std::vector<CmActionType>{CmActionType::kDestroyQp,
                                       CmActionType::kSendMad}));
  CmMad dreq_mad = MadOfAction(actions[1]);
  const CmDreq& dreq = std::get<CmDreq>(dreq_mad.message);
  EXPECT_EQ(dreq.local_comm_id, id);
  EXPECT_EQ(dreq.remote_comm_id, 0x54b8f4e0u);
  EXPECT_EQ(dreq.remote_qpn, 0x11u);
  EXPECT_EQ(service_.StateOfQpn(0x11), CmConnState::kDreqSent);
  // Retransmitted once per interval.
  CmActionList timer;
  service_.OnTimer(now_ + CmTimeoutMicros(20), &timer);
  ASSERT_EQ(timer.size(), 1u);
  EXPECT_EQ(timer[0].mad, actions[1].mad);
  // The client's DREP ends it.
  CmMad drep;
  drep.header.transaction_id = dreq_mad.header.transaction_id;
  drep.message = CmDrep{0x54b8f4e0, id, {}};
  CmActionList a;
  EXPECT_EQ(service_.HandleMad(kClient, Build(drep), now_, &a),
            CmResult::kHandled);
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(service_.StateOfQpn(0x11), CmConnState::kTimeWait);
  EXPECT_EQ(service_.HandleMad(kClient, Build(drep), now_, &a),
            CmResult::kIgnoredDuplicate);
}

TEST_F(CmServiceTest, NewReqFromAConnectedQpIsStale) {
  Connect();
  Mad req = ModifiedReq([](CmReq* r) { r->local_comm_id = 0x01020304; });
  CmActionList actions;
  ASSERT_EQ(service_.HandleMad(kClient, req, now_, &actions),
            CmResult::kRejected);
  ASSERT_EQ(Types(actions),
            (std::vector<CmActionType>{CmActionType::kSendMad,
                                       CmActionType::kDestroyQp,
                                       CmActionType::kSendMad}));
  ExpectRej(actions[0], req, CmRejReason::kStaleConnection);
  EXPECT_EQ(actions[1].close_reason, CmCloseReason::kStale);
  EXPECT_TRUE(std::holds_alternative<CmDreq>(MadOfAction(actions[2]).message));
  EXPECT_EQ(acceptor_.calls, 1);
}

TEST_F(CmServiceTest, FullTableRejectsWithNoResourcesAndNeverGrows) {
  for (uint32_t i = 0; i < kCmMaxConnections; ++i) {
    Mad req = rping_[0];
    CmMad mad = Parse(req);
    std::get<CmReq>(mad.message).local_comm_id = 0x1000 + i;
    std::get<CmReq>(mad.message).local_qpn = 0x100 + i;
    CmActionList actions;
    ASSERT_EQ(service_.HandleMad(kClient, Build(mad), now_, &actions),
              CmResult::kHandled)
        << i;
  }
  EXPECT_EQ(service_.connection_count(), kCmMaxConnections);
  CmActionList actions;
  ASSERT_EQ(service_.HandleMad(kClient, rping_[0], now_, &actions),
            CmResult::kRejected);
  ExpectRej(actions[0], rping_[0], CmRejReason::kNoResources);
  EXPECT_EQ(service_.connection_count(), kCmMaxConnections);
  EXPECT_EQ(service_.stats().table_full, 1u);
  // All 256 REPs fall due at once: OnTimer stops when the list is full
  // and carries on with the next call.
  uint64_t t = now_ + CmTimeoutMicros(20);
  size_t sent = 0;
  int calls = 0;
  bool more = true;
  while (more && calls < 100) {
    CmActionList timer;
    more = service_.OnTimer(t, &timer);
    sent += timer.size();
    ++calls;
  }
  EXPECT_EQ(sent, kCmMaxConnections);
  EXPECT_GT(calls, 1);
}

TEST_F(CmServiceTest, TooFewFreeActionSlotsChangesNothing) {
  CmActionList actions;
  for (size_t i = 0; i + kCmMaxActionsPerInput - 1 < kCmMaxActions; ++i) {
    actions.Add(CmActionType::kEstablished);
  }
  ASSERT_LT(actions.free(), kCmMaxActionsPerInput);
  size_t before = actions.size();
  EXPECT_EQ(service_.HandleMad(kClient, rping_[0], now_, &actions),
            CmResult::kNoActionSpace);
  EXPECT_EQ(actions.size(), before);
  EXPECT_EQ(acceptor_.calls, 0);
  EXPECT_EQ(service_.connection_count(), 0u);
}

// The lone rping client's capture replayed at a listening service: its
// REQ retransmissions (6 s apart) are answered with the same REP, and its
// final REJ "timeout" (remote comm ID 0: it never saw a REP) tears the
// connection down.
TEST_F(CmServiceTest, LoneClientReplay) {
  std::vector<Mad> lone = MadsOf("ext_lone_rping_client_to_nonrdma_host.pcap");
  ASSERT_EQ(lone.size(), 4u);
  const CmPeer client{V4Gid(192, 0, 2, 50)};
  CmActionList first;
  ASSERT_EQ(service_.HandleMad(client, lone[0], now_, &first),
            CmResult::kHandled);
  ASSERT_EQ(first.size(), 2u);
  for (int i = 1; i <= 2; ++i) {
    CmActionList again;
    ASSERT_EQ(service_.HandleMad(client, lone[i], now_ + i * 6'000'000, &again),
              CmResult::kAnsweredAgain);
    ASSERT_EQ(again.size(), 1u);
    EXPECT_EQ(again[0].mad, first[1].mad);
  }
  CmActionList rej;
  ASSERT_EQ(service_.HandleMad(client, lone[3], now_ + 20'000'000, &rej),
            CmResult::kHandled);
  ASSERT_EQ(Types(rej), (std::vector<CmActionType>{CmActionType::kDestroyQp}));
  EXPECT_EQ(rej[0].local_qpn, first[0].local_qpn);
  EXPECT_EQ(rej[0].close_reason, CmCloseReason::kPeerReject);
  EXPECT_EQ(acceptor_.calls, 1);
  // From another GID the same REJ names nothing of ours.
  CmActionList other;
  EXPECT_EQ(service_.HandleMad(kClient, lone[3], now_, &other),
            CmResult::kUnknownConnection);
}

TEST_F(CmServiceTest, LocalCommIdsAreUniqueAndNeverZero) {
  std::vector<uint32_t> ids;
  for (int i = 0; i < 600; ++i) {
    CmMad mad = Parse(rping_[0]);
    std::get<CmReq>(mad.message).local_comm_id = 0x2000 + i;
    std::get<CmReq>(mad.message).local_qpn = 0x200 + i;
    CmActionList actions;
    ASSERT_EQ(service_.HandleMad(kClient, Build(mad), now_, &actions),
              CmResult::kHandled);
    uint32_t id = actions[0].local_comm_id;
    EXPECT_NE(id, 0u);
    for (uint32_t old : ids) ASSERT_NE(old, id);
    ids.push_back(id);
    // Close at once so that the slot is reused.
    CmMad rej;
    rej.message = CmRej{0x2000u + i, id, kCmMsgRep, 0, 28, {}, {}};
    actions.clear();
    ASSERT_EQ(service_.HandleMad(kClient, Build(rej), now_, &actions),
              CmResult::kHandled);
    actions.clear();
    service_.OnTimer(now_ + FixtureConfig().timewait_us, &actions);
  }
}

}  // namespace
}  // namespace spinnic::roce
