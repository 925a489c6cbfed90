// The eBPF examples (handlers/bpf/examples/) against their native twins:
// on the same frames, the same result, disposition, bytes on the wire and
// state, through the handler kind `bpf` with the JIT-compiled program.
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "gtest/gtest.h"
#include "handlers/api/testing.h"
#include "tests/unit/handlers/frames.h"
#include "tests/unit/handlers/handler_test_util.h"

namespace spinnic::handler_test {
namespace {

std::string ExampleHex(const std::string& name) {
  std::ifstream in(std::string(SPINNIC_BPF_EXAMPLES_DIR) + "/" + name + ".o",
                   std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  std::string bytes{std::istreambuf_iterator<char>(in),
                    std::istreambuf_iterator<char>()};
  return absl::BytesToHexString(bytes);
}

// Frames of every shape the examples distinguish.
std::vector<std::vector<uint8_t>> Frames() {
  std::vector<FrameSpec> specs;
  FrameSpec udp;
  udp.payload = Text("GET /index.html");
  specs.push_back(udp);
  FrameSpec tcp = udp;
  tcp.l4 = L4::kTcp;
  tcp.payload = Text("POST /form");
  specs.push_back(tcp);
  FrameSpec udp6 = udp;
  udp6.ipv6 = true;
  specs.push_back(udp6);
  FrameSpec tcp6 = tcp;
  tcp6.ipv6 = true;
  tcp6.vlan_tcis = {100, 200};
  specs.push_back(tcp6);
  FrameSpec echo;
  echo.l4 = L4::kIcmp;
  echo.icmp_seq = 77;
  echo.payload = Text("ping");
  specs.push_back(echo);
  FrameSpec echo6 = echo;
  echo6.ipv6 = true;
  echo6.icmp_type = 128;
  specs.push_back(echo6);
  FrameSpec other_icmp = echo;
  other_icmp.icmp_type = 3;
  specs.push_back(other_icmp);
  FrameSpec raw;
  raw.l4 = L4::kNone;
  raw.payload = Text("GRE-ish");
  specs.push_back(raw);
  FrameSpec non_ip;
  non_ip.non_ip_ethertype = 0x88b5;
  non_ip.payload = Text("local experimental");
  specs.push_back(non_ip);
  FrameSpec group = udp;
  group.dst_mac = {0x01, 0x00, 0x5e, 0x00, 0x00, 0x01};
  specs.push_back(group);
  FrameSpec short_payload = udp;
  short_payload.payload = Text("GE");
  specs.push_back(short_payload);
  std::vector<std::vector<uint8_t>> frames;
  for (const FrameSpec& spec : specs) frames.push_back(Build(spec));
  return frames;
}

// Runs `native` and `ebpf` on every frame; everything observable must match.
void ExpectTwins(const std::string& kind,
                 const absl::flat_hash_map<std::string, std::string>& native,
                 const std::string& example,
                 absl::flat_hash_map<std::string, std::string> ebpf,
                 uint32_t state_size) {
  ebpf["program"] = ExampleHex(example);
  absl::StatusOr<HandlerInstance> a = CreateHandlerForTest(kind, native);
  absl::StatusOr<HandlerInstance> b = CreateHandlerForTest("bpf", ebpf);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  FakeEctx ectx_a(state_size), ectx_b(state_size);
  for (const std::vector<uint8_t>& frame : Frames()) {
    TestPacket pa(frame, ClassifierLayers(frame), /*in_port=*/1);
    TestPacket pb(frame, ClassifierLayers(frame), /*in_port=*/1);
    std::optional<HandlerResult> ra =
        RunPayload(*a, ectx_a.context(), pa.view());
    std::optional<HandlerResult> rb =
        RunPayload(*b, ectx_b.context(), pb.view());
    EXPECT_EQ(ra, rb) << Hex(frame);
    EXPECT_EQ(pa.view().GetDisposition(), pb.view().GetDisposition())
        << Hex(frame);
    EXPECT_EQ(Hex(pa.bytes()), Hex(pb.bytes()));
  }
  EXPECT_EQ(Hex(std::vector<uint8_t>(ectx_a.context().State().begin(),
                                     ectx_a.context().State().end())),
            Hex(std::vector<uint8_t>(ectx_b.context().State().begin(),
                                     ectx_b.context().State().end())));
}

TEST(BpfTwinTest, Count) { ExpectTwins("count", {}, "count", {}, 16); }

TEST(BpfTwinTest, FilterEverything) {
  ExpectTwins("filter", {}, "filter", {}, 0);
}

TEST(BpfTwinTest, FilterByPayloadPrefix) {
  ExpectTwins("filter", {{"payload_prefix", "474554"}}, "filter",
              {{"arg", "0x474554"}}, 0);
}

TEST(BpfTwinTest, Reflect) { ExpectTwins("reflect", {}, "reflect", {}, 0); }

// The MPI vector datatype (the eBPF example vector_scatter.c, built with its
// defaults BLOCKLEN 64, STRIDE 256, against the native datatype kind's
// layout=vector): the same message in the same packets lands in the same
// region bytes, each packet consumed, packets starting and ending mid-block.
TEST(BpfTwinTest, VectorScatter) {
  absl::StatusOr<HandlerInstance> native =
      CreateHandlerForTest("datatype", {{"layout", "vector"},
                                        {"blocklen", "64"},
                                        {"stride", "256"},
                                        {"base", "5"}});
  absl::StatusOr<HandlerInstance> ebpf = CreateHandlerForTest(
      "bpf", {{"program", ExampleHex("vector_scatter")}, {"arg", "5"}});
  ASSERT_TRUE(native.ok()) << native.status();
  ASSERT_TRUE(ebpf.ok()) << ebpf.status();
  constexpr size_t kMessage = 1000;
  std::vector<uint8_t> packed(kMessage);
  for (size_t k = 0; k < kMessage; ++k)
    packed[k] = static_cast<uint8_t>(k * 7 + 1);
  std::vector<uint8_t> region_a(4096, 0xee), region_b(4096, 0xee);
  FakeEctx ectx_a(48), ectx_b(0);
  ectx_a.AddRegion(1, region_a);
  ectx_b.AddRegion(1, region_b);
  size_t offset = 0;
  for (size_t size : {100, 1, 27, 500, 372}) {
    FrameSpec spec;
    spec.payload.assign(packed.begin() + offset,
                        packed.begin() + offset + size);
    const std::vector<uint8_t> frame = Build(spec);
    const MessageInfo message = {.transport = MessageTransport::kDiadStream,
                                 .source = 2,
                                 .offset = offset,
                                 .length = kMessage};
    TestPacket pa(frame, ClassifierLayers(frame)),
        pb(frame, ClassifierLayers(frame));
    pa.view().SetMessage(message);
    pb.view().SetMessage(message);
    if (offset == 0) {
      ASSERT_EQ(RunHeader(*native, ectx_a.context(), pa.view()),
                HandlerResult::kProcessData);
    }
    EXPECT_EQ(RunPayload(*native, ectx_a.context(), pa.view()),
              HandlerResult::kSuccess);
    EXPECT_EQ(RunPayload(*ebpf, ectx_b.context(), pb.view()),
              HandlerResult::kSuccess);
    EXPECT_EQ(pb.view().GetDisposition(), Disposition::kConsume);
    EXPECT_EQ(pa.view().GetDisposition(), pb.view().GetDisposition());
    offset += size;
  }
  ASSERT_EQ(offset, kMessage);
  EXPECT_EQ(Hex(region_a), Hex(region_b));
  // And the layout is the datatype's: message byte k at 5 + k/64*256 + k%64.
  for (size_t k = 0; k < kMessage; ++k) {
    ASSERT_EQ(region_b[5 + k / 64 * 256 + k % 64], packed[k]) << k;
  }
  // A message that runs past the region fails the packet.
  std::vector<uint8_t> small(300, 0);
  FakeEctx ectx_c(0);
  ectx_c.AddRegion(1, small);
  FrameSpec spec;
  spec.payload.assign(packed.begin(), packed.begin() + 200);
  const std::vector<uint8_t> frame = Build(spec);
  TestPacket pc(frame, ClassifierLayers(frame));
  pc.view().SetMessage({.offset = 0, .length = 200});
  EXPECT_EQ(RunPayload(*ebpf, ectx_c.context(), pc.view()),
            HandlerResult::kFault);
}

}  // namespace
}  // namespace spinnic::handler_test
