// Match rules' pcap_filter: libpcap's errors reach the operator, compiled
// filters pass exactly the frames tcpdump would (byte-exact frames in real
// mbufs, single- and multi-segment), and a filter composes with the rule's
// fields in both lookups of EctxTable (the ordered walk and the shape hash).
// Compiling needs the EAL (rte_bpf_convert allocates with rte_malloc), so
// this test starts one without hugepages.
#include "dataplane/pcap_filter.h"

#include <rte_eal.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "dataplane/classifier.h"
#include "dataplane/ectx.h"
#include "dataplane/ectx_table.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "handlers/api/handler.h"
#include "tests/common/frames.h"

namespace spinnic {
namespace {

using ::testing::HasSubstr;

rte_mempool* g_pool = nullptr;

class PcapTestHandler {
 public:
  static constexpr absl::string_view kName = "pcap_test";
  static constexpr absl::string_view kDescription = "does nothing";
  static constexpr uint32_t kMinStateSize = 0;
  static absl::StatusOr<std::unique_ptr<PcapTestHandler>> Create(
      const HandlerParams&) {
    return std::make_unique<PcapTestHandler>();
  }
  HandlerResult Payload(HandlerContext&, PacketView&) {
    return HandlerResult::kSuccess;
  }
};
SPINNIC_HANDLER(PcapTestHandler);

// An mbuf holding `frame`, split into segments of at most `segment` bytes.
struct Mbuf {
  explicit Mbuf(const frames::Bytes& frame, size_t segment = 0) {
    if (segment == 0) segment = frame.size();
    for (size_t at = 0; at < frame.size(); at += segment) {
      rte_mbuf* m = rte_pktmbuf_alloc(g_pool);
      const size_t n = std::min(segment, frame.size() - at);
      std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(n)),
                  frame.data() + at, n);
      if (head == nullptr) {
        head = m;
      } else if (rte_pktmbuf_chain(head, m) != 0) {
        ADD_FAILURE() << "cannot chain segment";
      }
    }
  }
  ~Mbuf() { rte_pktmbuf_free(head); }
  rte_mbuf* head = nullptr;
};

frames::Bytes Udp6(uint16_t dport) {
  return frames::Udp6(frames::kMacA, frames::kMacB, "fd00::1", "fd00::2", 1000,
                      dport, frames::Bytes(32, 0xab));
}
frames::Bytes Udp4(uint16_t dport) {
  return frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1", "10.0.0.2",
                      1000, dport, frames::Bytes(32, 0xab));
}

constexpr char kRoce6[] = "ip6 and udp dst port 4791";

TEST(PcapFilterTest, BadExpressionIsInvalidArgumentQuotingIt) {
  const std::string bad = "ip6 and udp dst prot 4791";
  for (const absl::Status& status :
       {PcapFilter::Check(bad), PcapFilter::Compile(bad).status()}) {
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_THAT(status.message(), HasSubstr("\"" + bad + "\""));
    // libpcap's own words: "prot" is taken for a host name.
    EXPECT_THAT(status.message(), HasSubstr("unknown host 'prot'"));
    EXPECT_THAT(status.message(), HasSubstr("man pcap-filter"));
  }
  absl::Status syntax = PcapFilter::Check("ip6 and (udp");
  EXPECT_EQ(syntax.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(syntax.message(), HasSubstr("\"ip6 and (udp\""));
  EXPECT_THAT(syntax.message(), HasSubstr("syntax error"));
  // Parses, but libpcap refuses it (a port number out of range).
  absl::Status range = PcapFilter::Check("udp port 70000");
  EXPECT_EQ(range.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(range.message(), HasSubstr("70000"));
  EXPECT_EQ(PcapFilter::Check("").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PcapFilter::Check(std::string("ip\0 or ip6", 10)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PcapFilter::Check(std::string(2000, 'x')).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(PcapFilter::Check(kRoce6).ok());
}

TEST(PcapFilterTest, PassesExactlyTheFramesTcpdumpWould) {
  absl::StatusOr<std::unique_ptr<PcapFilter>> filter =
      PcapFilter::Compile(kRoce6);
  ASSERT_TRUE(filter.ok()) << filter.status();
  EXPECT_EQ((*filter)->expression(), kRoce6);
#if defined(__x86_64__)
  EXPECT_TRUE((*filter)->jit());
#endif
  EXPECT_TRUE((*filter)->Passes(Mbuf(Udp6(4791)).head));
  EXPECT_FALSE((*filter)->Passes(Mbuf(Udp4(4791)).head));
  EXPECT_FALSE((*filter)->Passes(Mbuf(Udp6(4792)).head));
  EXPECT_FALSE((*filter)->Passes(Mbuf(frames::WithVlan(Udp6(4791), 7)).head));
  EXPECT_FALSE((*filter)->Passes(nullptr));
  // The UDP header in the second segment: the loads go through
  // rte_pktmbuf_read.
  Mbuf split(Udp6(4791), 40);
  ASSERT_GT(split.head->nb_segs, 1);
  EXPECT_TRUE((*filter)->Passes(split.head));
  EXPECT_FALSE((*filter)->Passes(Mbuf(Udp6(4792), 40).head));
  // Shorter than the headers the filter reads: out of bounds fails.
  frames::Bytes cut = Udp6(4791);
  cut.resize(50);
  EXPECT_FALSE((*filter)->Passes(Mbuf(cut).head));

  absl::StatusOr<std::unique_ptr<PcapFilter>> v4 =
      PcapFilter::Compile("ip and udp dst port 4791");
  ASSERT_TRUE(v4.ok()) << v4.status();
  EXPECT_TRUE((*v4)->Passes(Mbuf(Udp4(4791)).head));
  EXPECT_FALSE((*v4)->Passes(Mbuf(Udp6(4791)).head));
}

std::shared_ptr<const Ectx> MakeEctx(uint32_t id, const std::string& name,
                                     MatchRule match) {
  HandlerConfig config;
  config.name = name;
  config.kind = "pcap_test";
  config.match = std::move(match);
  absl::StatusOr<std::unique_ptr<Ectx>> ectx = Ectx::Create(id, config);
  EXPECT_TRUE(ectx.ok()) << ectx.status();
  return ectx.ok() ? std::shared_ptr<const Ectx>(std::move(*ectx)) : nullptr;
}

// The name of the ECTX `table` picks for `frame` arriving on `in_port`.
std::string Pick(const EctxTable& table, const frames::Bytes& frame,
                 uint16_t in_port, bool with_mbuf = true) {
  ParsedFrame parsed;
  ParseFrame(frame.data(), static_cast<uint32_t>(frame.size()), &parsed);
  Mbuf mbuf(frame);
  const Ectx* ectx =
      table.Match(parsed, in_port, with_mbuf ? mbuf.head : nullptr);
  return ectx == nullptr ? "-" : ectx->name();
}

TEST(PcapFilterTest, EctxCreateRefusesABadFilterNamingTheHandler) {
  HandlerConfig config;
  config.name = "roce6";
  config.kind = "pcap_test";
  config.match.pcap_filter = "udp dst port";
  absl::StatusOr<std::unique_ptr<Ectx>> ectx = Ectx::Create(0, config);
  ASSERT_FALSE(ectx.ok());
  EXPECT_EQ(ectx.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ectx.status().message(), HasSubstr("handler 'roce6'"));
  EXPECT_THAT(ectx.status().message(), HasSubstr("\"udp dst port\""));
}

TEST(PcapFilterTest, FilterAloneMatchesEveryFrameItPasses) {
  MatchRule rule;
  rule.pcap_filter = kRoce6;
  EctxTable table({MakeEctx(0, "roce6", rule)});
  ASSERT_NE(table.ectxs()[0]->filter(), nullptr);
  EXPECT_EQ(Pick(table, Udp6(4791), 0), "roce6");
  EXPECT_EQ(Pick(table, Udp6(4791), 5), "roce6");
  EXPECT_EQ(Pick(table, Udp4(4791), 0), "-");
  EXPECT_EQ(Pick(table, Udp6(4792), 0), "-");
  // Without the packet bytes a filtered rule cannot match.
  EXPECT_EQ(Pick(table, Udp6(4791), 0, /*with_mbuf=*/false), "-");
}

TEST(PcapFilterTest, FieldsFirstThenFilter) {
  MatchRule rule;
  rule.in_port_mask = uint64_t{1} << 1;
  rule.ethertype = 0x86dd;
  rule.pcap_filter = "udp dst port 4791";
  MatchRule fallback;
  fallback.ethertype = 0x86dd;
  EctxTable table(
      {MakeEctx(0, "roce6", rule), MakeEctx(1, "other6", fallback)});
  EXPECT_EQ(table.shape_count(), 0u);  // the ordered walk
  EXPECT_EQ(Pick(table, Udp6(4791), 1), "roce6");
  EXPECT_EQ(Pick(table, Udp6(4791), 0), "other6");  // in_port fails
  EXPECT_EQ(Pick(table, Udp6(4792), 1), "other6");  // the filter fails
  // The filter alone would pass IPv4 UDP 4791; the ethertype field fails it.
  EXPECT_EQ(Pick(table, Udp4(4791), 1), "-");
}

// More rules than kLinearMax: the shape hash finds the candidates by their
// fields and must still run each candidate's filter before taking it.
TEST(PcapFilterTest, ShapeHashRunsTheFilterOfEachCandidate) {
  std::vector<std::shared_ptr<const Ectx>> ectxs;
  MatchRule filtered;
  filtered.ethertype = 0x86dd;
  filtered.pcap_filter = "udp dst port 4791";
  ectxs.push_back(MakeEctx(0, "roce6", filtered));
  MatchRule only_filter;
  only_filter.pcap_filter = "ip and udp dst port 4791";
  ectxs.push_back(MakeEctx(1, "roce4", only_filter));
  // Same shape and key as "roce6", later in match order.
  MatchRule same_fields;
  same_fields.ethertype = 0x86dd;
  ectxs.push_back(MakeEctx(2, "other6", same_fields));
  for (uint32_t i = 0; i < EctxTable::kLinearMax; ++i) {
    MatchRule filler;
    filler.match_ip_proto = true;
    filler.ip_proto = 6;
    filler.dst_port_first = filler.dst_port_last =
        static_cast<uint16_t>(9000 + i);
    ectxs.push_back(MakeEctx(3 + i, absl::StrCat("tcp", i), filler));
  }
  EctxTable table(std::move(ectxs));
  ASSERT_GT(table.shape_count(), 0u);
  EXPECT_EQ(Pick(table, Udp6(4791), 0), "roce6");
  EXPECT_EQ(Pick(table, Udp6(4792), 0), "other6");
  EXPECT_EQ(Pick(table, Udp4(4791), 0), "roce4");
  EXPECT_EQ(Pick(table, Udp4(4792), 0), "-");
  EXPECT_EQ(Pick(table, Udp6(4791), 0, /*with_mbuf=*/false), "other6");
  EXPECT_EQ(Pick(table, Udp4(4791), 0, /*with_mbuf=*/false), "-");
}

}  // namespace
}  // namespace spinnic

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const char* eal_args[] = {
      "pcap_filter_test", "--no-huge", "-m", "128",         "--no-pci",
      "--no-shconf",      "-l",        "0",  "--log-level", "4"};
  int eal_argc = static_cast<int>(sizeof eal_args / sizeof eal_args[0]);
  if (rte_eal_init(eal_argc, const_cast<char**>(eal_args)) < 0) {
    std::fprintf(stderr, "EAL init failed\n");
    return 1;
  }
  spinnic::g_pool = rte_pktmbuf_pool_create(
      "pcap_filter_test", 1023, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
  if (spinnic::g_pool == nullptr) {
    std::fprintf(stderr, "cannot create the mbuf pool\n");
    rte_eal_cleanup();
    return 1;
  }
  int rc = RUN_ALL_TESTS();
  rte_mempool_free(spinnic::g_pool);
  rte_eal_cleanup();
  return rc;
}
