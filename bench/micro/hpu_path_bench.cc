// Per-packet costs of the HPU's path, without ports or the EAL:
// classification, match lookup as installed ECTXs grow (1 .. 4096 rules of
// several kinds, the matching rule first or last), and sPIN dispatch of a
// null handler. Items/s reads as packets/s.
// Run: build/bench/micro/hpu_path_bench (see bench/micro/README.md).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "bench/micro/bench_util.h"
#include "dataplane/classifier.h"
#include "dataplane/ectx_table.h"
#include "dataplane/match_rule.h"
#include "dataplane/spin_engine.h"
#include "tests/common/frames.h"

namespace spinnic {
namespace {

frames::Bytes UdpFrame() {
  return frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1", "10.0.0.2",
                      1234, 5678, frames::Bytes(18, 0));
}

void BM_ParseFrameUdp4(benchmark::State& state) {
  frames::Bytes frame = UdpFrame();
  ParsedFrame parsed;
  for (auto _ : state) {
    ParseFrame(frame.data(), static_cast<uint32_t>(frame.size()), &parsed);
    benchmark::DoNotOptimize(parsed);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ParseFrameUdp4)->Apply(bench::FixedIterationsIfRequested);

void BM_ParseFrameIpv6(benchmark::State& state) {
  frames::Bytes frame = frames::Udp6(frames::kMacA, frames::kMacB, "fd00::1",
                                     "fd00::2", 1, 2, frames::Bytes(18, 0));
  ParsedFrame parsed;
  for (auto _ : state) {
    ParseFrame(frame.data(), static_cast<uint32_t>(frame.size()), &parsed);
    benchmark::DoNotOptimize(parsed);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ParseFrameIpv6)->Apply(bench::FixedIterationsIfRequested);

enum class RuleKind { kExact, kWildcard, kPortOnly, kPortRange, kShapes };
enum class MatchAt { kFirst, kLast };

// A prefix the benchmark spells correctly; anything else is a bug here.
AddressPrefix Prefix(const std::string& text) {
  auto prefix = AddressPrefix::Parse(text);
  if (!prefix.ok()) {
    std::fprintf(stderr, "bad prefix %s: %s\n", text.c_str(),
                 std::string(prefix.status().message()).c_str());
    std::abort();
  }
  return *prefix;
}

// The IPv4 prefix of `address` (host order) with `bits` leading bits.
AddressPrefix Ipv4Prefix(uint32_t address, int bits) {
  const uint32_t masked = bits == 0 ? 0 : address & (~0u << (32 - bits));
  return Prefix(std::to_string(masked >> 24) + "." +
                std::to_string((masked >> 16) & 0xff) + "." +
                std::to_string((masked >> 8) & 0xff) + "." +
                std::to_string(masked & 0xff) + "/" + std::to_string(bits));
}

// Rule `i` of a table, matching UdpFrame() (10.0.0.1:1234 -> 10.0.0.2:5678,
// UDP) or not:
//   exact       the whole 5-tuple (two /32 prefixes, both ports); the
//               non-matching rules differ in the source address (other
//               clients of the same service);
//   wildcard    UDP, a destination /24 and a destination port range; the
//               non-matching rules name another /24;
//   port_only   UDP and one destination port, no address (the rule of the
//               earlier BM_EctxMatchWorstCase); the others name other ports;
//   port_range  UDP and a destination port range, no address; the others
//               name other ranges (rules that differ only in a range share
//               one hash key in the tuple space search);
//   shapes      every rule of its own shape (source and destination prefix
//               lengths, whether it names the protocol and the ethertype);
//               the non-matching rules name destination port 9999. The
//               adversarial case of a tuple space search.
MatchRule MakeRule(RuleKind kind, int i, bool matching) {
  const std::string hi = std::to_string(i >> 8);
  const std::string lo = std::to_string(i & 0xff);
  MatchRule rule;
  rule.match_ip_proto = true;
  rule.ip_proto = 17;
  switch (kind) {
    case RuleKind::kExact:
      rule.match_src = rule.match_dst = true;
      rule.src = Prefix(matching ? "10.0.0.1" : "10.1." + hi + "." + lo);
      rule.dst = Prefix("10.0.0.2");
      rule.src_port_first = rule.src_port_last = 1234;
      rule.dst_port_first = rule.dst_port_last = 5678;
      break;
    case RuleKind::kWildcard:
      rule.match_dst = true;
      rule.dst = Prefix(matching ? "10.0.0.0/24"
                                 : "10." + std::to_string(1 + (i >> 8)) + "." +
                                       lo + ".0/24");
      rule.dst_port_first = 5000;
      rule.dst_port_last = 5999;
      break;
    case RuleKind::kPortOnly:
      rule.dst_port_first = rule.dst_port_last =
          matching ? 5678 : static_cast<uint16_t>(10000 + i);
      break;
    case RuleKind::kPortRange:
      rule.dst_port_first =
          matching ? 5600 : static_cast<uint16_t>(6000 + 2 * i);
      rule.dst_port_last =
          matching ? 5699 : static_cast<uint16_t>(6001 + 2 * i);
      break;
    case RuleKind::kShapes: {
      // 34 x 34 x 4 = 4624 distinct shapes; prefix length 33 means "none".
      const int src_bits = i % 34;
      const int dst_bits = i / 34 % 34;
      const int flags = i / (34 * 34);
      rule.match_ip_proto = (flags & 1) != 0;
      rule.ethertype = (flags & 2) != 0 ? 0x0800 : 0;
      if (src_bits < 33) {
        rule.match_src = true;
        rule.src = Ipv4Prefix(0x0a000001, src_bits);
      }
      if (dst_bits < 33) {
        rule.match_dst = true;
        rule.dst = Ipv4Prefix(0x0a000002, dst_bits);
      }
      rule.dst_port_first = rule.dst_port_last = matching ? 5678 : 9999;
      break;
    }
  }
  return rule;
}

// state.range(0) installed ECTXs; the one whose rule matches the frame is
// the first or the last in match order (the last: a first-match walk tries
// every other rule first, and a frame that no rule matches pays about the
// same). The label reports the table's shape count (0: walked linearly).
void BM_EctxMatch(benchmark::State& state, RuleKind kind, MatchAt at) {
  const int n = static_cast<int>(state.range(0));
  const int matching = at == MatchAt::kFirst ? 0 : n - 1;
  std::vector<std::shared_ptr<const Ectx>> ectxs;
  for (int i = 0; i < n; ++i) {
    HandlerConfig config;
    config.name = "e" + std::to_string(i);
    config.kind = "null";
    config.match = MakeRule(kind, i, i == matching);
    auto ectx = Ectx::Create(static_cast<uint32_t>(i), config);
    if (!ectx.ok()) {
      state.SkipWithError("cannot create ECTX");
      return;
    }
    ectxs.push_back(std::move(*ectx));
  }
  const Ectx* expected = ectxs[matching].get();
  EctxTable table(std::move(ectxs));
  frames::Bytes frame = UdpFrame();
  ParsedFrame parsed;
  ParseFrame(frame.data(), static_cast<uint32_t>(frame.size()), &parsed);
  if (table.Match(parsed, 0, nullptr) != expected) {
    state.SkipWithError("the table does not match the ECTX it should");
    return;
  }
  state.SetLabel("shapes=" + std::to_string(table.shape_count()));
  for (auto _ : state) {
    benchmark::DoNotOptimize(table.Match(parsed, 0, nullptr));
  }
  state.SetItemsProcessed(state.iterations());
}

void EctxCounts(benchmark::internal::Benchmark* b) {
  b->Arg(1)->Arg(16)->Arg(256)->Arg(4096);
  bench::FixedIterationsIfRequested(b);
}
BENCHMARK_CAPTURE(BM_EctxMatch, exact_first, RuleKind::kExact, MatchAt::kFirst)
    ->Apply(EctxCounts);
BENCHMARK_CAPTURE(BM_EctxMatch, exact_last, RuleKind::kExact, MatchAt::kLast)
    ->Apply(EctxCounts);
BENCHMARK_CAPTURE(BM_EctxMatch, wildcard_first, RuleKind::kWildcard,
                  MatchAt::kFirst)
    ->Apply(EctxCounts);
BENCHMARK_CAPTURE(BM_EctxMatch, wildcard_last, RuleKind::kWildcard,
                  MatchAt::kLast)
    ->Apply(EctxCounts);
BENCHMARK_CAPTURE(BM_EctxMatch, port_only_first, RuleKind::kPortOnly,
                  MatchAt::kFirst)
    ->Apply(EctxCounts);
BENCHMARK_CAPTURE(BM_EctxMatch, port_only_last, RuleKind::kPortOnly,
                  MatchAt::kLast)
    ->Apply(EctxCounts);
BENCHMARK_CAPTURE(BM_EctxMatch, port_range_first, RuleKind::kPortRange,
                  MatchAt::kFirst)
    ->Apply(EctxCounts);
BENCHMARK_CAPTURE(BM_EctxMatch, port_range_last, RuleKind::kPortRange,
                  MatchAt::kLast)
    ->Apply(EctxCounts);
BENCHMARK_CAPTURE(BM_EctxMatch, shapes_first, RuleKind::kShapes,
                  MatchAt::kFirst)
    ->Apply(EctxCounts);
BENCHMARK_CAPTURE(BM_EctxMatch, shapes_last, RuleKind::kShapes, MatchAt::kLast)
    ->Apply(EctxCounts);

void BM_EngineNullHandler(benchmark::State& state) {
  HandlerConfig config;
  config.name = "null";
  config.kind = "null";
  auto ectx = Ectx::Create(0, config);
  if (!ectx.ok()) {
    state.SkipWithError("cannot create ECTX");
    return;
  }
  std::vector<EctxCounters> counters(Ectx::kMaxEctxs);
  SpinEngine engine(0, nullptr, counters);
  frames::Bytes frame = UdpFrame();
  ParsedFrame parsed;
  ParseFrame(frame.data(), static_cast<uint32_t>(frame.size()), &parsed);
  for (auto _ : state) {
    PacketView view(frame.data(), static_cast<uint32_t>(frame.size()),
                    parsed.layers, 0);
    engine.RunSinglePacketMessage(**ectx, view);
    benchmark::DoNotOptimize(view);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EngineNullHandler)->Apply(bench::FixedIterationsIfRequested);
BENCHMARK(bench::BM_EmptyLoop)->Apply(bench::FixedIterationsIfRequested);

}  // namespace
}  // namespace spinnic

BENCHMARK_MAIN();
