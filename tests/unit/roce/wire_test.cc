// The RoCEv2 wire format (dataplane/roce/wire.h, icrc.h):
//   - every RoCE frame of the soft-RoCE captures in tests/fixtures/roce
//     parses, its ICRC verifies with both implementations, and the builder
//     rebuilds it byte for byte from the parsed fields; frame counts match
//     the *.summary.txt files;
//   - golden frames derived independently by tests/unit/roce/roce_golden.py
//     (Python standard library, following the spec and the fixtures' README,
//     not wire.cc);
//   - one crafted frame per ParseError, every single-bit flip and every
//     truncation of valid frames;
//   - rte_net_crc's algorithms against the table reference; ComputeIcrc
//     and ComputeIcrcOver (ISA-L continuing) at every length and split;
//   - the UDP source port and flow label as Linux derives them.
// The environment variable ROCE_FIXTURES points at tests/fixtures/roce.
#include "dataplane/roce/wire.h"

#include <gtest/gtest.h>
#include <rte_net_crc.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "dataplane/classifier.h"
#include "dataplane/common/byte_order.h"
#include "dataplane/roce/icrc.h"
#include "tests/common/hex.h"
#include "tests/common/icrc_reference.h"

// From rte_vect.h, which DPDK 22.11 declares experimental and without
// extern "C" for C++.
extern "C" int rte_vect_set_max_simd_bitwidth(uint16_t bitwidth);

namespace spinnic::roce {
namespace {

constexpr uint16_t kSimd512 = 512;  // RTE_VECT_SIMD_512

using testing_hex::FromHex;
using testing_hex::ToHex;
using Bytes = std::vector<uint8_t>;

uint16_t Get16(const uint8_t* p) { return LoadBe16(p); }
void Put16(uint8_t* p, uint16_t v) { StoreBe16(p, v); }

// ----- A tiny classic-pcap reader (both byte orders, us/ns timestamps) -----

struct PcapFile {
  uint32_t link_type = 0;
  std::vector<Bytes> frames;
};

bool ReadPcap(const std::string& path, PcapFile* out, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  const Bytes data((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  if (data.size() < 24) {
    *error = "no pcap header";
    return false;
  }
  const uint32_t magic_le = uint32_t{data[0]} | uint32_t{data[1]} << 8 |
                            uint32_t{data[2]} << 16 | uint32_t{data[3]} << 24;
  bool little;
  if (magic_le == 0xa1b2c3d4 || magic_le == 0xa1b23c4d) {
    little = true;
  } else if (magic_le == 0xd4c3b2a1 || magic_le == 0x4d3cb2a1) {
    little = false;
  } else {
    *error = "not a classic pcap file";
    return false;
  }
  auto get32 = [&](size_t at) {
    const uint8_t* p = data.data() + at;
    return little ? uint32_t{p[0]} | uint32_t{p[1]} << 8 |
                        uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24
                  : uint32_t{p[3]} | uint32_t{p[2]} << 8 |
                        uint32_t{p[1]} << 16 | uint32_t{p[0]} << 24;
  };
  out->link_type = get32(20);
  size_t at = 24;
  while (at < data.size()) {
    if (data.size() - at < 16) {
      *error = "truncated record header";
      return false;
    }
    const uint32_t captured = get32(at + 8);
    at += 16;
    if (data.size() - at < captured) {
      *error = "truncated record";
      return false;
    }
    out->frames.emplace_back(data.begin() + at, data.begin() + at + captured);
    at += captured;
  }
  return true;
}

TEST(RocePcapReader, ReadsBothByteOrders) {
  // One 3-byte record, written little- and big-endian.
  const std::string le =
      "d4c3b2a1020004000000000000000000ffff000001000000"
      "0100000002000000030000000300000061626"
      "3";
  const std::string be =
      "a1b2c3d4000200040000000000000000"
      "0000ffff00000001"
      "0000000100000002000000030000000361626"
      "3";
  for (const std::string& hex : {le, be}) {
    const auto path = std::filesystem::temp_directory_path() /
                      ("roce_wire_test_" + std::to_string(getpid()) + ".pcap");
    const Bytes bytes = FromHex(hex);
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    PcapFile pcap;
    std::string error;
    ASSERT_TRUE(ReadPcap(path.string(), &pcap, &error)) << error;
    std::filesystem::remove(path);
    EXPECT_EQ(pcap.link_type, 1u);
    ASSERT_EQ(pcap.frames.size(), 1u);
    EXPECT_EQ(pcap.frames[0], (Bytes{'a', 'b', 'c'}));
  }
}

// ----- Helpers -----

struct Offsets {
  uint32_t ip = 0;
  uint32_t udp = 0;
};

// The classifier's offsets of a UDP/4791 frame; false for anything else.
bool ClassifyRoce(const Bytes& frame, Offsets* offsets) {
  ParsedFrame parsed;
  spinnic::ParseFrame(frame.data(), static_cast<uint32_t>(frame.size()),
                      &parsed);
  if (parsed.frame_class != FrameClass::kPassthrough) return false;
  if (!parsed.layers.is_ipv4 && !parsed.layers.is_ipv6) return false;
  if (parsed.layers.ip_proto != kIpProtoUdp || !parsed.has_l4_ports ||
      parsed.dst_port != kRoceUdpPort) {
    return false;
  }
  offsets->ip = parsed.layers.l3_offset;
  offsets->udp = parsed.layers.l4_offset;
  return true;
}

// ParseFrame, checking that the frame is byte-identical afterwards.
ParseError Parse(Bytes& frame, const Offsets& offsets, Packet* packet,
                 uint32_t length) {
  const Bytes before = frame;
  const ParseError error =
      ParseFrame(frame.data(), length, offsets.ip, offsets.udp, packet);
  EXPECT_EQ(frame, before) << "ParseFrame left the frame modified";
  return error;
}
ParseError Parse(Bytes& frame, const Offsets& offsets, Packet* packet) {
  return Parse(frame, offsets, packet, static_cast<uint32_t>(frame.size()));
}
ParseError Parse(Bytes& frame, const Offsets& offsets) {
  Packet packet;
  return Parse(frame, offsets, &packet);
}

// The builder's parameters that reproduce `frame` (what the builder must
// be told: addresses, IPv4 identification and DF, IP TOS/TTL or traffic
// class/flow label/hop limit, UDP source port and checksum policy).
FrameParams ParamsOf(const Bytes& frame, const Packet& p) {
  FrameParams params;
  std::memcpy(params.dst_mac.data(), frame.data(), 6);
  std::memcpy(params.src_mac.data(), frame.data() + 6, 6);
  params.vlan = p.ip_offset == kEthernetBytes + kVlanTagBytes;
  if (params.vlan) params.vlan_tci = Get16(frame.data() + 14);
  params.ip_version = p.ip_version;
  params.src_ip = p.src_ip;
  params.dst_ip = p.dst_ip;
  params.traffic_class = p.traffic_class;
  params.hop_limit = p.hop_limit;
  params.flow_label = p.flow_label;
  if (p.ip_version == 4) {
    params.ipv4_id = Get16(frame.data() + p.ip_offset + 4);
    params.ipv4_dont_fragment = (frame[p.ip_offset + 6] & 0x40) != 0;
  }
  params.udp_src_port = p.src_port;
  params.ipv6_udp_checksum = p.ip_version == 6 && p.udp_checksum != 0;
  return params;
}

Bytes Rebuild(const Bytes& frame, const Packet& p) {
  const FrameParams params = ParamsOf(frame, p);
  const uint32_t headers = HeaderBytes(p.ip_version, p.bth.opcode, params.vlan);
  Bytes out(
      FrameBytes(p.ip_version, p.bth.opcode, p.payload_length, params.vlan));
  if (headers == 0 || out.size() < headers + p.payload_length) return {};
  std::memcpy(out.data() + headers, frame.data() + p.payload_offset,
              p.payload_length);
  const uint32_t length =
      BuildFrame(params, p.bth, p.ext, p.payload_length, out.data(),
                 static_cast<uint32_t>(out.size()));
  out.resize(length);
  return out;
}

std::string FixtureDir() {
  const char* dir = std::getenv("ROCE_FIXTURES");
  return dir != nullptr ? dir : "tests/fixtures/roce";
}

// What a *.summary.txt says about its capture.
struct Summary {
  uint32_t roce_frames = 0;
  std::map<std::string, uint32_t> opcodes;  // scapy's names
};

Summary ReadSummary(const std::string& path) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  Summary summary;
  std::smatch m;
  if (std::regex_search(text, m,
                        std::regex(R"((\d+) RoCEv2 \(UDP 4791\) frames)"))) {
    summary.roce_frames = std::stoul(m[1]);
  }
  if (std::regex_search(text, m, std::regex(R"(BTH opcodes[^:]*:([^\n]*))"))) {
    const std::string list = m[1];
    const std::regex item(R"(([A-Z_]+) x(\d+))");
    for (auto it = std::sregex_iterator(list.begin(), list.end(), item);
         it != std::sregex_iterator(); ++it) {
      summary.opcodes[(*it)[1]] += std::stoul((*it)[2]);
    }
  }
  return summary;
}

// Scapy's spelling of the opcodes (scapy.contrib.roce), for the summaries.
std::string ScapyName(uint8_t opcode) {
  static const std::map<uint8_t, std::string> kNames = {
      {0x00, "RC_SEND_FIRST"},
      {0x01, "RC_SEND_MIDDLE"},
      {0x02, "RC_SEND_LAST"},
      {0x03, "RC_SEND_LAST_WITH_IMMEDIATE"},
      {0x04, "RC_SEND_ONLY"},
      {0x05, "RC_SEND_ONLY_WITH_IMMEDIATE"},
      {0x06, "RC_RDMA_WRITE_FIRST"},
      {0x07, "RC_RDMA_WRITE_MIDDLE"},
      {0x08, "RC_RDMA_WRITE_LAST"},
      {0x09, "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE"},
      {0x0a, "RC_RDMA_WRITE_ONLY"},
      {0x0b, "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE"},
      {0x0c, "RC_RDMA_READ_REQUEST"},
      {0x0d, "RC_RDMA_READ_RESPONSE_FIRST"},
      {0x0e, "RC_RDMA_READ_RESPONSE_MIDDLE"},
      {0x0f, "RC_RDMA_READ_RESPONSE_LAST"},
      {0x10, "RC_RDMA_READ_RESPONSE_ONLY"},
      {0x11, "RC_ACKNOWLEDGE"},
      {0x12, "RC_ATOMIC_ACKNOWLEDGE"},
      {0x13, "RC_COMPARE_SWAP"},
      {0x14, "RC_FETCH_ADD"},
      {0x64, "UD_SEND_ONLY"},
      {0x65, "UD_SEND_ONLY_WITH_IMMEDIATE"},
  };
  const auto it = kNames.find(opcode);
  return it != kNames.end() ? it->second : "opcode_" + std::to_string(opcode);
}

// ----- The captures -----

TEST(RoceWireFixtures, EveryFrameParsesVerifiesAndRebuildsExactly) {
  const std::string dir = FixtureDir();
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  std::vector<std::string> pcaps;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".pcap") pcaps.push_back(entry.path());
  }
  std::sort(pcaps.begin(), pcaps.end());
  ASSERT_EQ(pcaps.size(), 7u);

  uint32_t total = 0;
  uint32_t ipv6 = 0;
  for (const std::string& path : pcaps) {
    SCOPED_TRACE(path);
    PcapFile pcap;
    std::string error;
    ASSERT_TRUE(ReadPcap(path, &pcap, &error)) << error;
    ASSERT_EQ(pcap.link_type, 1u);  // Ethernet
    const std::string name = std::filesystem::path(path).stem();
    const Summary summary =
        ReadSummary((std::filesystem::path(dir) / (name + ".summary.txt")));
    ASSERT_GT(summary.roce_frames, 0u);

    uint32_t count = 0;
    std::map<std::string, uint32_t> opcodes;
    std::map<uint32_t, std::set<uint16_t>> ports_by_dest_qp;
    std::set<uint32_t> req_flow_labels;
    for (size_t i = 0; i < pcap.frames.size(); ++i) {
      Bytes frame = pcap.frames[i];
      Offsets offsets;
      if (!ClassifyRoce(frame, &offsets)) continue;
      SCOPED_TRACE("frame " + std::to_string(i + 1));
      ++count;
      Packet p;
      ASSERT_EQ(Parse(frame, offsets, &p), ParseError::kNone);
      ASSERT_NE(p.info, nullptr);
      EXPECT_EQ(p.info, &GetOpcodeInfo(p.bth.opcode));
      ++opcodes[ScapyName(p.bth.opcode)];
      if (p.ip_version == 6) {
        ++ipv6;
        // rxe sends flow label 0 and UDP checksum 0 over IPv6 too.
        EXPECT_EQ(p.flow_label, 0u);
      }
      EXPECT_EQ(p.udp_checksum, 0);
      EXPECT_EQ(p.payload_offset + p.payload_length + p.pad_count,
                p.icrc_offset);
      ports_by_dest_qp[p.bth.dest_qp].insert(p.src_port);
      // A CM REQ (MAD attribute 0x0010) to QP1: its primary path's flow
      // label (bits 31..12 of the CM word at MAD byte 112).
      if (p.bth.dest_qp == kGsiQp && p.payload_length >= 256 &&
          Get16(&frame[p.payload_offset + 16]) == 0x0010) {
        const uint8_t* word = &frame[p.payload_offset + 112];
        req_flow_labels.insert((uint32_t{word[0]} << 24 |
                                uint32_t{word[1]} << 16 |
                                uint32_t{word[2]} << 8 | word[3]) >>
                               12);
      }

      // Both ICRC implementations agree with the frame's ICRC.
      const IcrcSpan span{p.ip_offset, p.udp_offset, p.icrc_offset};
      uint32_t fast = 0, reference = 0;
      ASSERT_TRUE(ComputeIcrc(frame.data(), frame.size(), span, &fast));
      ASSERT_TRUE(
          ComputeIcrcReference(frame.data(), frame.size(), span, &reference));
      EXPECT_EQ(fast, reference);
      EXPECT_TRUE(VerifyIcrc(frame.data(), frame.size(), span));

      // Rebuilt from the parsed fields: the same bytes up to the ICRC
      // (Ethernet padding after the IP datagram is not the builder's).
      const Bytes rebuilt = Rebuild(frame, p);
      const Bytes original(frame.begin(), frame.begin() + p.icrc_offset + 4);
      EXPECT_EQ(ToHex(rebuilt.data(), rebuilt.size()),
                ToHex(original.data(), original.size()));
    }
    EXPECT_EQ(count, summary.roce_frames);
    EXPECT_EQ(opcodes, summary.opcodes);
    total += count;

    // The UDP source ports: rxe gives QP1 (the CM's MADs) 0xc000 +
    // hash_32(1, 14) = 0xd872. RC QPs set up without rdma_cm (perftest,
    // ibv_rc_pingpong) have no flow label and use rdma_get_udp_sport(0,
    // lqpn, rqpn): in these captures each connection joins equal QP numbers
    // on the two hosts (0x11-0x11, 0x12-0x12). rdma_cm (rping, rxe_ops)
    // gives both ends the flow label of the CM REQ's primary path, and the
    // port is folded from it.
    const bool rdma_cm = name.find("rping") != std::string::npos ||
                         name.find("rxe_ops") != std::string::npos;
    EXPECT_EQ(req_flow_labels.size(), rdma_cm ? 1u : 0u);
    for (const auto& [dest_qp, ports] : ports_by_dest_qp) {
      SCOPED_TRACE("dest QP " + std::to_string(dest_qp));
      ASSERT_EQ(ports.size(), 1u);  // one port per connection and direction
      if (dest_qp == kGsiQp) {
        EXPECT_EQ(*ports.begin(), 0xd872);
      } else if (rdma_cm) {
        ASSERT_EQ(req_flow_labels.size(), 1u);
        const uint32_t flow_label = *req_flow_labels.begin();
        EXPECT_NE(flow_label, 0u);
        EXPECT_EQ(*ports.begin(), UdpSourcePortFromFlowLabel(flow_label));
        EXPECT_EQ(*ports.begin(),
                  UdpSourcePortWithFlowLabel(flow_label, dest_qp, dest_qp));
        EXPECT_NE(*ports.begin(), UdpSourcePort(dest_qp, dest_qp));
      } else {
        EXPECT_EQ(*ports.begin(), UdpSourcePort(dest_qp, dest_qp));
        EXPECT_EQ(*ports.begin(),
                  UdpSourcePortWithFlowLabel(0, dest_qp, dest_qp));
      }
    }
  }
  // The sum of the summaries' counts. (The fixtures' README speaks of 489
  // frames; the seven captures hold 240.)
  EXPECT_EQ(total, 240u);
  EXPECT_EQ(ipv6, 30u);
}

// ----- Golden frames (tests/unit/roce/roce_golden.py) -----

FrameParams Golden(uint8_t ip_version) {
  FrameParams params;
  params.ip_version = ip_version;
  return params;
}

const std::array<uint8_t, 6> kMac1 = {0x02, 0, 0, 0, 0, 0x01};
const std::array<uint8_t, 6> kMac2 = {0x02, 0, 0, 0, 0, 0x02};
std::array<uint8_t, 16> V6(uint8_t last) {
  return {0xfd, 0, 0, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, last};
}

Bytes BuildGolden(const FrameParams& params, const Bth& bth,
                  const ExtHeaders& ext, const Bytes& payload) {
  const uint32_t headers =
      HeaderBytes(params.ip_version, bth.opcode, params.vlan);
  Bytes frame(
      FrameBytes(params.ip_version, bth.opcode, payload.size(), params.vlan));
  EXPECT_NE(headers, 0u);
  std::copy(payload.begin(), payload.end(), frame.begin() + headers);
  const uint32_t length =
      BuildFrame(params, bth, ext, payload.size(), frame.data(), frame.size());
  EXPECT_EQ(length, frame.size());
  frame.resize(length);
  return frame;
}

// FinishChainedFrame (zero-copy READ responses): headers, the payload where
// it lies and a separate trailer make, end to end, exactly the frame
// BuildFrame makes in one buffer: same pad, ICRC and UDP checksum, for every
// payload length modulo 4, even and odd, IPv4, IPv6 with and without the
// UDP checksum, with a VLAN tag.
TEST(RoceWireChained, ConcatenationEqualsTheContiguousFrame) {
  for (uint8_t version : {4, 6}) {
    for (bool udp_checksum : {false, true}) {
      for (bool vlan : {false, true}) {
        for (uint32_t length :
             {1u, 2u, 3u, 4u, 5u, 1023u, 1024u, 1025u, 1026u, 4095u}) {
          FrameParams params = Golden(version);
          params.ipv6_udp_checksum = udp_checksum;
          params.vlan = vlan;
          params.vlan_tci = 7;
          Bth bth;
          bth.opcode = static_cast<uint8_t>(Opcode::kRcReadResponseMiddle);
          bth.dest_qp = 0x33;
          bth.psn = 0xabcdef;
          if (length == 4095) {
            bth.opcode = static_cast<uint8_t>(Opcode::kRcReadResponseLast);
          }
          ExtHeaders ext;
          ext.aeth = {AethAck(), 9};
          Bytes payload(length);
          for (uint32_t i = 0; i < length; ++i) {
            payload[i] = static_cast<uint8_t>(i * 7 + length);
          }
          const Bytes whole = BuildGolden(params, bth, ext, payload);
          const uint32_t header_bytes =
              HeaderBytes(params.ip_version, bth.opcode, params.vlan);
          Bytes headers(header_bytes);
          ASSERT_EQ(WriteHeaders(params, bth, ext, length, headers.data(),
                                 static_cast<uint32_t>(whole.size())),
                    header_bytes);
          Bytes trailer(TrailerBytes(length), 0xaa);
          ASSERT_EQ(FinishChainedFrame(params, headers.data(), header_bytes,
                                       payload, trailer.data()),
                    whole.size());
          Bytes joined = headers;
          joined.insert(joined.end(), payload.begin(), payload.end());
          joined.insert(joined.end(), trailer.begin(), trailer.end());
          EXPECT_EQ(joined, whole)
              << "IPv" << int{version} << " udp_checksum " << udp_checksum
              << " vlan " << vlan << " payload " << length;
        }
      }
    }
  }
  // Headers that do not describe this payload are refused.
  FrameParams params = Golden(4);
  Bth bth;
  bth.opcode = static_cast<uint8_t>(Opcode::kRcReadResponseMiddle);
  ExtHeaders ext;
  Bytes payload(100);
  const uint32_t header_bytes = HeaderBytes(4, bth.opcode);
  Bytes headers(header_bytes);
  ASSERT_EQ(WriteHeaders(params, bth, ext, 100, headers.data(), 4096),
            header_bytes);
  Bytes trailer(TrailerBytes(101));
  EXPECT_EQ(FinishChainedFrame(params, headers.data(), header_bytes, Bytes(101),
                               trailer.data()),
            0u);
}

TEST(RoceWireGolden, WriteOnlyImmediateOverIpv6WithUdpChecksum) {
  FrameParams params = Golden(6);
  params.dst_mac = kMac2;
  params.src_mac = kMac1;
  params.src_ip = V6(0x12);
  params.dst_ip = V6(0x11);
  params.traffic_class = 0x02;
  params.flow_label = 0xabcde;
  params.udp_src_port = UdpSourcePort(0x11, 0x12);
  params.ipv6_udp_checksum = true;
  Bth bth;
  bth.opcode = static_cast<uint8_t>(Opcode::kRcWriteOnlyImm);
  bth.solicited = true;
  bth.pad_count = 0;  // the builder computes it
  bth.dest_qp = 0x12;
  bth.ack_req = true;
  bth.psn = 0x123456;
  ExtHeaders ext;
  ext.reth = {0x00007f0012345678, 0x1234, 5};
  ext.imm_data = 0xdeadbeef;
  const Bytes frame = BuildGolden(params, bth, ext, {'h', 'e', 'l', 'l', 'o'});
  EXPECT_EQ(ToHex(frame.data(), frame.size()),
            "02000000000202000000000186dd602abcde00341140fd0000010000000000"
            "00000000000012fd000001000000000000000000000011c13212b700342b37"
            "0bb0ffff000000128012345600007f00123456780000123400000005deadbe"
            "ef68656c6c6f00000069980126");

  Bytes copy = frame;
  Offsets offsets;
  ASSERT_TRUE(ClassifyRoce(copy, &offsets));
  Packet p;
  ASSERT_EQ(Parse(copy, offsets, &p), ParseError::kNone);
  EXPECT_EQ(p.ip_version, 6);
  EXPECT_EQ(p.pad_count, 3);
  EXPECT_EQ(p.payload_length, 5u);
  EXPECT_EQ(p.payload_offset, 14u + 40 + 8 + 12 + 16 + 4);
  EXPECT_EQ(p.ext_offset, 14u + 40 + 8 + 12);
  EXPECT_EQ(p.udp_checksum, 0x2b37);
  EXPECT_EQ(p.flow_label, 0xabcdeu);
  EXPECT_EQ(p.traffic_class, 0x02);
  EXPECT_EQ(p.ecn(), 2);
  EXPECT_TRUE(p.bth.solicited);
  EXPECT_TRUE(p.bth.ack_req);
  EXPECT_EQ(p.bth.psn, 0x123456u);
  EXPECT_EQ(p.ext.reth.va, 0x00007f0012345678u);
  EXPECT_EQ(p.ext.reth.rkey, 0x1234u);
  EXPECT_EQ(p.ext.reth.dma_length, 5u);
  EXPECT_EQ(p.ext.imm_data, 0xdeadbeefu);
  EXPECT_EQ(p.src_port, 0xc132);

  // The same frame without the IPv6 UDP checksum (the default, like rxe):
  // only the checksum differs, the ICRC does not cover it.
  params.ipv6_udp_checksum = false;
  const Bytes plain = BuildGolden(params, bth, ext, {'h', 'e', 'l', 'l', 'o'});
  Bytes expected = frame;
  expected[14 + 40 + 6] = 0;
  expected[14 + 40 + 7] = 0;
  EXPECT_EQ(plain, expected);
}

TEST(RoceWireGolden, AckWithNakSyndromeOverIpv4) {
  FrameParams params = Golden(4);
  params.dst_mac = kMac1;
  params.src_mac = kMac2;
  params.src_ip = Ipv4Mapped(0xc000020b);
  params.dst_ip = Ipv4Mapped(0xc000020c);
  params.traffic_class = 0x02;
  params.ipv4_id = 0x1234;
  params.udp_src_port = 0xc121;
  Bth bth;
  bth.opcode = static_cast<uint8_t>(Opcode::kRcAck);
  bth.dest_qp = 0x11;
  bth.psn = 0xfffffe;
  ExtHeaders ext;
  ext.aeth = {AethNak(NakCode::kRemoteAccessError), 0x102};
  const Bytes frame = BuildGolden(params, bth, ext, {});
  EXPECT_EQ(ToHex(frame.data(), frame.size()),
            "020000000001020000000002080045020030123440004011a46fc000020bc0"
            "00020cc12112b7001c00001100ffff0000001100fffffe62000102534b7fcb");
  Bytes copy = frame;
  Packet p;
  ASSERT_EQ(Parse(copy, {14, 34}, &p), ParseError::kNone);
  EXPECT_EQ(p.ext.aeth.syndrome, 0x62);
  EXPECT_EQ(p.ext.aeth.msn, 0x102u);
  EXPECT_EQ(p.payload_length, 0u);
  EXPECT_EQ(p.payload_offset, p.icrc_offset);
  EXPECT_EQ(p.src_ip, Ipv4Mapped(0xc000020b));
  EXPECT_EQ(p.dst_ip, Ipv4Mapped(0xc000020c));
}

TEST(RoceWireGolden, ReadResponseFirstInVlan) {
  FrameParams params = Golden(4);
  params.dst_mac = kMac2;
  params.src_mac = kMac1;
  params.vlan = true;
  params.vlan_tci = 100;
  params.src_ip = Ipv4Mapped(0xc000020c);
  params.dst_ip = Ipv4Mapped(0xc000020b);
  params.hop_limit = 255;
  params.ipv4_id = 0xbeef;
  params.udp_src_port = 0xc121;
  Bth bth;
  bth.opcode = static_cast<uint8_t>(Opcode::kRcReadResponseFirst);
  bth.becn = true;
  bth.dest_qp = 0x11;
  bth.psn = 9;
  ExtHeaders ext;
  ext.aeth = {AethAck(), 7};
  Bytes payload(16);
  for (int i = 0; i < 16; ++i) payload[i] = static_cast<uint8_t>(i);
  const Bytes frame = BuildGolden(params, bth, ext, payload);
  EXPECT_EQ(ToHex(frame.data(), frame.size()),
            "02000000000202000000000181000064080045000040beef4000ff1138a5c0"
            "00020cc000020bc12112b7002c00000d00ffff40000011000000091f000007"
            "000102030405060708090a0b0c0d0e0f5584ccf5");
  Bytes copy = frame;
  Offsets offsets;
  ASSERT_TRUE(ClassifyRoce(copy, &offsets));  // the classifier skips the tag
  EXPECT_EQ(offsets.ip, 18u);
  Packet p;
  ASSERT_EQ(Parse(copy, offsets, &p), ParseError::kNone);
  EXPECT_TRUE(p.bth.becn);
  EXPECT_FALSE(p.bth.fecn);
  EXPECT_EQ(p.payload_length, 16u);
  EXPECT_EQ(p.hop_limit, 255);
}

// ----- Header images -----

TEST(RoceWireHeaders, BthAndExtensionHeadersRoundTrip) {
  Bth bth;
  bth.opcode = 0x0b;
  bth.solicited = true;
  bth.migreq = true;
  bth.pad_count = 2;
  bth.tver = 0;
  bth.pkey = 0x8001;
  bth.fecn = true;
  bth.becn = false;
  bth.reserved_6 = 0x15;
  bth.dest_qp = 0xabcdef;
  bth.ack_req = true;
  bth.reserved_7 = 0x05;
  bth.psn = 0x010203;
  uint8_t bytes[kBthBytes];
  StoreBth(bth, bytes);
  EXPECT_EQ(ToHex(bytes, sizeof(bytes)), "0be0800195abcdef85010203");
  Bth back;
  LoadBth(bytes, &back);
  uint8_t again[kBthBytes];
  StoreBth(back, again);
  EXPECT_EQ(std::memcmp(bytes, again, sizeof(bytes)), 0);
  EXPECT_EQ(back.dest_qp, 0xabcdefu);
  EXPECT_EQ(back.pad_count, 2);
  EXPECT_TRUE(back.migreq);
  EXPECT_TRUE(back.fecn);

  // Every extension header once, in wire order (no opcode has all of
  // them; the order is the spec's).
  ExtHeaders ext;
  ext.deth = {kGsiQkey, 0, 0x000001};
  ext.reth = {0x0102030405060708, 0x090a0b0c, 0x0d0e0f10};
  ext.atomic_eth = {0x1112131415161718, 0x191a1b1c, 0x1d1e1f2021222324,
                    0x2526272829303132};
  ext.aeth = {0x60, 0x333435};
  ext.atomic_ack_eth = {0x3637383940414243};
  ext.imm_data = 0x44454647;
  ext.ieth = 0x48495051;
  const uint8_t all = kHasDeth | kHasReth | kHasAtomicEth | kHasAeth |
                      kHasAtomicAckEth | kHasImmDt | kHasIeth;
  uint8_t ext_bytes[internal::ExtBytes(all)];
  StoreExtHeaders(ext, all, ext_bytes);
  EXPECT_EQ(ToHex(ext_bytes, sizeof(ext_bytes)),
            "8001000000000001"
            "0102030405060708090a0b0c0d0e0f10"
            "1112131415161718191a1b1c1d1e1f20212223242526272829303132"
            "60333435"
            "3637383940414243"
            "44454647"
            "48495051");
  ExtHeaders loaded;
  LoadExtHeaders(ext_bytes, all, &loaded);
  EXPECT_EQ(loaded.deth.qkey, kGsiQkey);
  EXPECT_EQ(loaded.deth.src_qp, 1u);
  EXPECT_EQ(loaded.reth.dma_length, 0x0d0e0f10u);
  EXPECT_EQ(loaded.atomic_eth.compare, 0x2526272829303132u);
  EXPECT_EQ(loaded.atomic_eth.swap_add, 0x1d1e1f2021222324u);
  EXPECT_EQ(loaded.aeth.msn, 0x333435u);
  EXPECT_EQ(loaded.atomic_ack_eth.original, 0x3637383940414243u);
  EXPECT_EQ(loaded.imm_data, 0x44454647u);
  EXPECT_EQ(loaded.ieth, 0x48495051u);
}

// ----- Refusals -----

// A valid frame to mutate: SEND ONLY of `payload_length` bytes (or the
// given opcode) over IPv4, no VLAN (IP at 14, UDP at 34) or IPv6 (UDP at 54).
Bytes ValidFrame(uint8_t ip_version = 4, Opcode opcode = Opcode::kRcSendOnly,
                 uint32_t payload_length = 5) {
  FrameParams params = Golden(ip_version);
  params.dst_mac = kMac1;
  params.src_mac = kMac2;
  if (ip_version == 4) {
    params.src_ip = Ipv4Mapped(0xc000020b);
    params.dst_ip = Ipv4Mapped(0xc000020c);
    params.ipv4_id = 0x4321;
  } else {
    params.src_ip = V6(0x11);
    params.dst_ip = V6(0x12);
    params.flow_label = 0x12345;
  }
  params.udp_src_port = UdpSourcePort(0x11, 0x11);
  Bth bth;
  bth.opcode = static_cast<uint8_t>(opcode);
  bth.dest_qp = 0x11;
  bth.psn = 77;
  bth.ack_req = true;
  ExtHeaders ext;
  ext.aeth = {AethAck(), 3};
  ext.reth = {0x1000, 0x55, payload_length};
  ext.deth = {kGsiQkey, 0, 1};
  Bytes payload(payload_length);
  for (uint32_t i = 0; i < payload_length; ++i) payload[i] = i * 7 + 1;
  return BuildGolden(params, bth, ext, payload);
}

constexpr Offsets kV4{14, 34};
constexpr Offsets kV6{14, 54};

void FixIpv4Checksum(Bytes& f) {
  Put16(&f[24], 0);
  uint32_t sum = 0;
  for (int i = 0; i < 20; i += 2) sum += Get16(&f[14 + i]);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  Put16(&f[24], static_cast<uint16_t>(~sum));
}

// Moves the IP and UDP lengths by `delta` (the frame keeps its size).
void AdjustLengths(Bytes& f, int delta) {
  Put16(&f[16], static_cast<uint16_t>(Get16(&f[16]) + delta));
  Put16(&f[38], static_cast<uint16_t>(Get16(&f[38]) + delta));
  FixIpv4Checksum(f);
}

void FixIcrc(Bytes& f, uint32_t icrc_offset) {
  ASSERT_TRUE(WriteIcrc(f.data(), f.size(), IcrcSpan{14, 34, icrc_offset}));
}

TEST(RoceWireRefusals, OneCraftedFramePerParseError) {
  std::set<ParseError> seen;
  auto expect = [&](Bytes f, ParseError error, Offsets offsets = kV4,
                    int64_t length = -1) {
    SCOPED_TRACE(ParseErrorName(error));
    Packet p;
    EXPECT_EQ(Parse(f, offsets, &p,
                    length < 0 ? static_cast<uint32_t>(f.size())
                               : static_cast<uint32_t>(length)),
              error);
    seen.insert(error);
  };
  const Bytes good = ValidFrame();
  expect(good, ParseError::kNone);
  expect(ValidFrame(6), ParseError::kNone, kV6);

  expect(good, ParseError::kBadOffsets, {4, 24});   // ip_offset < 8
  expect(good, ParseError::kBadOffsets, {14, 38});  // not after IPv4
  expect(ValidFrame(6), ParseError::kBadOffsets, {14, 34});
  expect(good, ParseError::kTruncated, kV4, 30);  // IPv4 header cut
  expect(good, ParseError::kTruncated, kV4, 14);
  expect(ValidFrame(6), ParseError::kTruncated, kV6, 50);
  {
    Bytes f = good;
    f[14] = 0x55;
    expect(f, ParseError::kNotIp);
  }
  {
    Bytes f = good;
    f[14] = 0x46;  // IHL 6: an option word
    expect(f, ParseError::kIpOptions);
    Bytes g = ValidFrame(6);
    g[20] = 0;  // hop-by-hop options
    expect(g, ParseError::kIpOptions, kV6);
  }
  {
    Bytes f = good;
    f[20] |= 0x20;  // MF
    FixIpv4Checksum(f);
    expect(f, ParseError::kIpFragment);
    Bytes g = good;
    g[21] = 1;  // fragment offset 8
    FixIpv4Checksum(g);
    expect(g, ParseError::kIpFragment);
    Bytes h = ValidFrame(6);
    h[20] = 44;
    expect(h, ParseError::kIpFragment, kV6);
  }
  {
    Bytes f = good;
    f[25] ^= 0x01;
    expect(f, ParseError::kIpChecksum);
  }
  {
    Bytes f = good;
    f[23] = 6;  // TCP
    FixIpv4Checksum(f);
    expect(f, ParseError::kNotUdp);
    Bytes g = ValidFrame(6);
    g[20] = 6;
    expect(g, ParseError::kNotUdp, kV6);
  }
  {
    Bytes f = good;
    Put16(&f[16], static_cast<uint16_t>(f.size() - 14 + 1));  // past the end
    FixIpv4Checksum(f);
    expect(f, ParseError::kIpLength);
    Bytes g = good;
    Put16(&g[16], 19);
    FixIpv4Checksum(g);
    expect(g, ParseError::kIpLength);
    Bytes h = ValidFrame(6);
    Put16(&h[18], static_cast<uint16_t>(Get16(&h[18]) + 1));
    expect(h, ParseError::kIpLength, kV6);
  }
  {
    Bytes f = good;
    Put16(&f[38], static_cast<uint16_t>(Get16(&f[38]) + 4));
    expect(f, ParseError::kUdpLength);
    Bytes g = good;
    Put16(&g[16], 20 + 6);  // IP payload shorter than a UDP header
    FixIpv4Checksum(g);
    expect(g, ParseError::kUdpLength);
  }
  {
    Bytes f = good;
    Put16(&f[36], 4792);
    expect(f, ParseError::kNotRocePort);
  }
  {
    Bytes f = good;
    Put16(&f[40], 0x1234);
    expect(f, ParseError::kUdpChecksum);
  }
  {
    // An ACK whose AETH is missing: UDP payload = BTH + ICRC only.
    Bytes f = ValidFrame(4, Opcode::kRcAck, 0);
    AdjustLengths(f, -4);
    expect(f, ParseError::kTooShort);
    Bytes g = ValidFrame(4, Opcode::kRcAck, 0);
    AdjustLengths(g, -12);  // not even BTH + ICRC
    expect(g, ParseError::kTooShort);
  }
  {
    Bytes f = good;
    f[43] |= 0x01;  // TVer 1
    expect(f, ParseError::kBadTver);
  }
  for (uint8_t opcode : {0x15, 0x18, 0x1f, 0x20, 0x63, 0x66, 0xff}) {
    Bytes f = good;
    f[42] = opcode;
    expect(f, ParseError::kBadOpcode);
  }
  {
    Bytes f = ValidFrame(4, Opcode::kRcAck, 0);
    f[43] |= 0x10;  // pad 1 on an ACK
    expect(f, ParseError::kUnexpectedPad);
    Bytes g = ValidFrame(4, Opcode::kRcReadRequest, 0);
    g[43] |= 0x30;
    expect(g, ParseError::kUnexpectedPad);
  }
  {
    // An ACK with 4 more bytes before its ICRC.
    Bytes f = ValidFrame(4, Opcode::kRcAck, 0);
    f.insert(f.end() - 4, {1, 2, 3, 4});
    AdjustLengths(f, 4);
    FixIcrc(f, f.size() - 4);
    expect(f, ParseError::kUnexpectedPayload);
  }
  {
    Bytes f = good;  // 5 payload bytes + 3 pad: shorten by one
    AdjustLengths(f, -1);
    expect(f, ParseError::kUnalignedPayload);
  }
  {
    Bytes f = ValidFrame(4, Opcode::kRcSendOnly, 0);
    f[43] |= 0x10;  // pad 1, but nothing after the BTH
    expect(f, ParseError::kPadTooLong);
  }
  {
    Bytes f = good;
    f[f.size() - 6] ^= 0x40;  // a payload bit
    expect(f, ParseError::kBadIcrc);
    Bytes g = good;
    g[g.size() - 1] ^= 0x80;  // an ICRC bit
    expect(g, ParseError::kBadIcrc);
  }
  // Every reason has a name of its own and a frame above.
  std::set<std::string> names;
  for (int e = 0; e < static_cast<int>(ParseError::kCount); ++e) {
    const ParseError error = static_cast<ParseError>(e);
    EXPECT_TRUE(seen.count(error)) << ParseErrorName(error);
    EXPECT_STRNE(ParseErrorName(error), "unknown");
    names.insert(ParseErrorName(error));
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(ParseError::kCount));
}

TEST(RoceWireRefusals, EthernetPaddingAfterTheDatagramIsAccepted) {
  Bytes f = ValidFrame(4, Opcode::kRcAck, 0);  // 62 bytes
  f.resize(f.size() + 8, 0xee);
  Packet p;
  EXPECT_EQ(Parse(f, kV4, &p), ParseError::kNone);
  EXPECT_EQ(p.icrc_offset, 58u);
}

// Which bits of a frame the ICRC does not cover and nothing else checks:
// IPv6 traffic class, flow label, hop limit (IPv4's TOS and TTL are
// covered by the header checksum), and BTH byte 4 (FECN, BECN, reserved)
// unless a UDP checksum covers it.
bool VariantBit(uint8_t ip_version, bool udp_checksum, uint32_t byte,
                uint8_t bit) {
  const uint32_t bth = ip_version == 4 ? 42 : 62;
  if (byte == bth + 4) return !udp_checksum;
  if (ip_version == 6) {
    if (byte == 14) return bit < 4;  // the version nibble is covered
    if (byte >= 15 && byte <= 17) return true;
    if (byte == 21) return true;
  }
  return false;
}

TEST(RoceWireRefusals, EverySingleBitFlipBeyondEthernetIsRefusedUnlessVariant) {
  struct Case {
    uint8_t ip_version;
    Opcode opcode;
    uint32_t payload;
    bool udp_checksum;
  };
  for (const Case& c : {Case{4, Opcode::kRcSendOnly, 5, false},
                        Case{4, Opcode::kRcAck, 0, false},
                        Case{6, Opcode::kRcWriteOnlyImm, 3, false},
                        Case{6, Opcode::kUdSendOnly, 8, true}}) {
    Bytes good = ValidFrame(c.ip_version, c.opcode, c.payload);
    if (c.udp_checksum) {
      FrameParams params = Golden(6);
      // Rebuild with a real IPv6 UDP checksum.
      Packet p;
      ASSERT_EQ(Parse(good, kV6, &p), ParseError::kNone);
      params = ParamsOf(good, p);
      params.ipv6_udp_checksum = true;
      ASSERT_EQ(FinishFrame(params, good.data(), good.size()), good.size());
      ASSERT_NE(Get16(&good[60]), 0);
    }
    const Offsets offsets = c.ip_version == 4 ? kV4 : kV6;
    ASSERT_EQ(Parse(good, offsets), ParseError::kNone);
    for (uint32_t byte = kEthernetBytes; byte < good.size(); ++byte) {
      for (uint8_t bit = 0; bit < 8; ++bit) {
        Bytes f = good;
        f[byte] ^= static_cast<uint8_t>(1u << bit);
        const ParseError error = Parse(f, offsets);
        if (VariantBit(c.ip_version, c.udp_checksum, byte, bit)) {
          EXPECT_EQ(error, ParseError::kNone)
              << "byte " << byte << " bit " << int{bit};
        } else {
          EXPECT_NE(error, ParseError::kNone)
              << "byte " << byte << " bit " << int{bit};
        }
      }
    }
  }
}

TEST(RoceWireRefusals, Ipv4TosAndTtlAreVariantButTheIdentificationIsNot) {
  const Bytes good = ValidFrame();
  // A router decrementing TTL or marking ECN CE updates the header
  // checksum; the ICRC still verifies.
  for (uint32_t byte : {15u, 22u}) {
    for (uint8_t bit = 0; bit < 8; ++bit) {
      Bytes f = good;
      f[byte] ^= static_cast<uint8_t>(1u << bit);
      FixIpv4Checksum(f);
      EXPECT_EQ(Parse(f, kV4), ParseError::kNone) << byte << "/" << int{bit};
    }
  }
  Bytes ce = good;
  ce[15] |= 0x3;  // CE
  FixIpv4Checksum(ce);
  Packet p;
  ASSERT_EQ(Parse(ce, kV4, &p), ParseError::kNone);
  EXPECT_EQ(p.ecn(), 3);
  // Identification, addresses: covered by the ICRC.
  for (uint32_t byte : {18u, 19u, 26u, 33u}) {
    Bytes f = good;
    f[byte] ^= 0x10;
    FixIpv4Checksum(f);
    EXPECT_EQ(Parse(f, kV4), ParseError::kBadIcrc) << byte;
  }
}

TEST(RoceWireRefusals, EveryTruncationIsRefused) {
  for (uint8_t ip_version : {4, 6}) {
    for (Opcode opcode : {Opcode::kRcSendOnly, Opcode::kRcAck,
                          Opcode::kRcAtomicAck, Opcode::kUdSendOnlyImm}) {
      const uint32_t payload = GetOpcodeInfo(opcode).has(kHasPayload) ? 6 : 0;
      Bytes good = ValidFrame(ip_version, opcode, payload);
      const Offsets offsets = ip_version == 4 ? kV4 : kV6;
      ASSERT_EQ(Parse(good, offsets), ParseError::kNone);
      for (uint32_t length = 0; length < good.size(); ++length) {
        // Exactly `length` bytes, so that ASan sees a read past them.
        Bytes cut(good.begin(), good.begin() + length);
        Packet p;
        const ParseError error =
            ParseFrame(cut.data(), length, offsets.ip, offsets.udp, &p);
        EXPECT_NE(error, ParseError::kNone) << length;
        EXPECT_TRUE(std::equal(cut.begin(), cut.end(), good.begin()));
      }
    }
  }
}

// ----- Builder limits -----

TEST(RoceWireBuilder, SizesAndRefusals) {
  EXPECT_EQ(HeaderBytes(4, 0x04), 14u + 20 + 8 + 12);
  EXPECT_EQ(HeaderBytes(6, 0x0b), 14u + 40 + 8 + 12 + 16 + 4);
  EXPECT_EQ(HeaderBytes(4, 0x12, true), 18u + 20 + 8 + 12 + 4 + 8);
  EXPECT_EQ(HeaderBytes(6, 0x64), 14u + 40 + 8 + 12 + 8);
  EXPECT_EQ(HeaderBytes(5, 0x04), 0u);
  EXPECT_EQ(HeaderBytes(4, 0x15), 0u);
  EXPECT_EQ(TrailerBytes(5), 7u);
  EXPECT_EQ(TrailerBytes(8), 4u);
  EXPECT_EQ(FrameBytes(4, 0x11, 0), 62u);
  EXPECT_EQ(PadCount(1), 3);
  EXPECT_EQ(PadCount(1024), 0);

  Bytes buffer(9000);
  FrameParams params = Golden(4);
  Bth bth;
  ExtHeaders ext;
  bth.opcode = 0x15;
  EXPECT_EQ(BuildFrame(params, bth, ext, 0, buffer.data(), buffer.size()), 0u);
  bth.opcode = static_cast<uint8_t>(Opcode::kRcAck);
  EXPECT_EQ(BuildFrame(params, bth, ext, 4, buffer.data(), buffer.size()), 0u)
      << "payload on an ACK";
  EXPECT_EQ(BuildFrame(params, bth, ext, 0, buffer.data(), 61), 0u);
  EXPECT_EQ(BuildFrame(params, bth, ext, 0, buffer.data(), 62), 62u);
  params.ip_version = 5;
  EXPECT_EQ(BuildFrame(params, bth, ext, 0, buffer.data(), buffer.size()), 0u);
  params.ip_version = 4;
  bth.opcode = static_cast<uint8_t>(Opcode::kRcSendOnly);
  Bytes big(70000);
  EXPECT_EQ(BuildFrame(params, bth, ext, 65500, big.data(), big.size()), 0u)
      << "IPv4 total length above 65535";
  params.ip_version = 6;
  EXPECT_NE(BuildFrame(params, bth, ext, 65500 - 40, big.data(), big.size()),
            0u)
      << "IPv6 payload length is without the IPv6 header";
}

// ----- ICRC -----

// ComputeIcrc against the byte-at-a-time reference on frames of every
// payload length up to 300 and a few long ones (ISA-L's folding loops and
// their tails), IPv4 and IPv6, and ComputeIcrcOver with the payload split
// off at every point, the way a zero-copy frame carries it. The frame is
// left as it was (ComputeIcrc is read-only).
TEST(RoceIcrc, MatchesTheTableAtEveryLengthAndSplit) {
  InitIcrc();
  std::mt19937 random(7);
  std::vector<uint32_t> lengths;
  for (uint32_t n = 0; n <= 300; ++n) lengths.push_back(n);
  for (uint32_t n : {511u, 512u, 1000u, 1024u, 1500u, 4096u}) {
    lengths.push_back(n);
  }
  for (uint8_t ip_version : {uint8_t{4}, uint8_t{6}}) {
    for (uint32_t payload : lengths) {
      Bytes frame = ValidFrame(ip_version, Opcode::kRcSendOnly, payload);
      for (uint8_t& byte : frame) {
        if (&byte - frame.data() >= 62) byte = static_cast<uint8_t>(random());
      }
      const uint32_t n = static_cast<uint32_t>(frame.size());
      const uint32_t udp_offset = ip_version == 4 ? 34 : 54;
      const IcrcSpan span{14, udp_offset, n - 4};
      const Bytes before = frame;
      uint32_t want = 0;
      uint32_t got = 0;
      ASSERT_TRUE(ComputeIcrcReference(frame.data(), n, span, &want));
      ASSERT_TRUE(ComputeIcrc(frame.data(), n, span, &got));
      ASSERT_EQ(got, want) << "IPv" << int{ip_version} << " payload "
                           << payload;
      ASSERT_EQ(frame, before);
      // Headers end at the BTH; the rest is "payload" and "pad" parts.
      const uint32_t headers = udp_offset + 8 + kBthBytes;
      const uint32_t rest = n - 4 - headers;
      for (uint32_t split : {0u, 1u, rest / 2, rest}) {
        if (split > rest) continue;
        uint32_t over = 0;
        ASSERT_TRUE(ComputeIcrcOver(
            frame.data(), headers + kIcrcBytes,
            IcrcSpan{14, udp_offset, headers}, {frame.data() + headers, split},
            {frame.data() + headers + split, rest - split}, &over));
        ASSERT_EQ(over, want) << "split at " << split;
      }
    }
  }
}

TEST(RoceIcrc, EveryRteNetCrcAlgorithmMatchesTheTable) {
  const uint8_t check[] = {'1', '2', '3', '4', '5', '6', '7', '8', '9'};
  EXPECT_EQ(Crc32Reference(check, sizeof(check)), 0xcbf43926u);
  std::mt19937 random(7);
  // Room for the longest length at the largest misalignment below.
  Bytes data(5000 + 3);
  for (uint8_t& byte : data) byte = static_cast<uint8_t>(random());
  std::vector<uint32_t> lengths;
  for (uint32_t n = 1; n <= 300; ++n) lengths.push_back(n);
  for (uint32_t n : {511u, 512u, 1000u, 1024u, 1500u, 4096u, 4999u}) {
    lengths.push_back(n);
  }
  // Before rte_eal_init the EAL's SIMD limit is 0 and rte_net_crc uses the
  // table; raising the limit by hand lets this test reach the SIMD code.
  for (uint32_t n : lengths) {
    ASSERT_EQ(rte_net_crc_calc(data.data() + 1, n, RTE_NET_CRC32_ETH),
              Crc32Reference(data.data() + 1, n));
  }
  ASSERT_EQ(rte_vect_set_max_simd_bitwidth(kSimd512), 0);
  for (rte_net_crc_alg alg :
       {RTE_NET_CRC_SCALAR, RTE_NET_CRC_SSE42, RTE_NET_CRC_AVX512}) {
    rte_net_crc_set_alg(alg);
    for (uint32_t n : lengths) {
      for (uint32_t misalign : {0u, 1u, 3u}) {
        ASSERT_EQ(
            rte_net_crc_calc(data.data() + misalign, n, RTE_NET_CRC32_ETH),
            Crc32Reference(data.data() + misalign, n))
            << "alg " << alg << " length " << n;
      }
    }
    // The fast ICRC on a frame equals the reference with this algorithm.
    Bytes frame = ValidFrame(6, Opcode::kRcWriteOnly, 999);
    EXPECT_EQ(Parse(frame, kV6), ParseError::kNone);
  }
  rte_net_crc_set_alg(RTE_NET_CRC_SCALAR);
  InitIcrc();  // whatever it picks, frames still verify
  Bytes frame = ValidFrame();
  EXPECT_EQ(Parse(frame, kV4), ParseError::kNone);
}

TEST(RoceIcrc, InvalidSpansAreRefused) {
  Bytes frame = ValidFrame();
  const uint32_t n = frame.size();
  uint32_t icrc = 0;
  EXPECT_TRUE(ComputeIcrc(frame.data(), n, {14, 34, n - 4}, &icrc));
  EXPECT_FALSE(ComputeIcrc(frame.data(), n, {6, 26, n - 4}, &icrc))
      << "needs 8 bytes before the IP header";
  EXPECT_FALSE(ComputeIcrc(frame.data(), n, {14, 34, n - 3}, &icrc));
  EXPECT_FALSE(ComputeIcrc(frame.data(), n, {14, 30, n - 4}, &icrc));
  EXPECT_FALSE(ComputeIcrc(frame.data(), n, {14, 34, 34 + 8 + 11}, &icrc));
  frame[14] = 0x55;  // neither IPv4 nor IPv6
  EXPECT_FALSE(ComputeIcrc(frame.data(), n, {14, 34, n - 4}, &icrc));
  EXPECT_FALSE(ComputeIcrcReference(frame.data(), n, {14, 34, n - 4}, &icrc));
}

// ----- UDP source port -----

TEST(RoceUdpSourcePort, AsLinuxDerivesIt) {
  // Values from include/rdma/ib_verbs.h's formulas, computed in Python.
  EXPECT_EQ(FlowLabel(0x11, 0x12), 0x132u);
  EXPECT_EQ(UdpSourcePort(0x11, 0x11), 0xc121);
  EXPECT_EQ(UdpSourcePort(0x12, 0x12), 0xc144);
  EXPECT_EQ(UdpSourcePort(1, 1), 0xc001);
  EXPECT_EQ(FlowLabel(0xabcdef, 0x123456), 0xac3e3u);
  EXPECT_EQ(UdpSourcePort(0xabcdef, 0x123456), 0xc3c8);
  EXPECT_EQ(FlowLabel(0xffffff, 0xffffff), 0xfff1eu);
  EXPECT_EQ(UdpSourcePort(0xffffff, 0xffffff), 0xff21);
  // Symmetric: both ends of a connection pick the same port.
  EXPECT_EQ(UdpSourcePort(0x1234, 0x99), UdpSourcePort(0x99, 0x1234));
  for (uint32_t a = 0; a < 2000; a += 13) {
    EXPECT_GE(UdpSourcePort(a, a + 5), 0xc000);
  }
}

}  // namespace
}  // namespace spinnic::roce
