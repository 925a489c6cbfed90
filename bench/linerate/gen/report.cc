#include "bench/linerate/gen/report.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace spinnic::gen {
namespace {

double PerSecond(double amount, double seconds) {
  return seconds > 0 ? amount / seconds : 0.0;
}

double Gbps(uint64_t bytes, double seconds) {
  return PerSecond(static_cast<double>(bytes) * 8.0, seconds) / 1e9;
}

}  // namespace

std::string JsonString(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (u < 0x20) {
      out += absl::StrFormat("\\u%04x", u);
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

std::string FormatJson(const RunResult& r) {
  const double d = r.duration_s;
  const double tx_pps = PerSecond(static_cast<double>(r.sent), d);
  const double rx_pps = PerSecond(static_cast<double>(r.seq.received), d);
  const double offered_pps =
      r.rate_pps > 0 ? static_cast<double>(r.rate_pps) : tx_pps;
  const LatencyHistogram& h = r.latency_ns;
  std::string latency;
  if (h.count() == 0) {
    latency =
        "{\"min\":null,\"mean\":null,\"p50\":null,\"p90\":null,\"p99\":null,"
        "\"p999\":null,\"max\":null,\"count\":0}";
  } else {
    latency = absl::StrFormat(
        "{\"min\":%d,\"mean\":%.1f,\"p50\":%d,\"p90\":%d,\"p99\":%d,"
        "\"p999\":%d,\"max\":%d,\"count\":%d}",
        h.min(), h.mean(), h.Percentile(50), h.Percentile(90), h.Percentile(99),
        h.Percentile(99.9), h.max(), h.count());
  }
  return absl::StrCat(
      "{",
      absl::StrFormat("\"sent\":%d,\"received\":%d,\"lost\":%d,", r.sent,
                      r.seq.received, r.seq.lost),
      absl::StrFormat("\"reordered\":%d,\"duplicates\":%d,\"late\":%d,",
                      r.seq.reordered, r.seq.duplicates, r.seq.late),
      absl::StrFormat("\"not_ours\":%d,\"warmup_sent\":%d,"
                      "\"warmup_received\":%d,",
                      r.not_ours, r.warmup_sent, r.warmup_received),
      absl::StrFormat("\"tx_pps\":%.1f,\"rx_pps\":%.1f,\"offered_pps\":%.1f,",
                      tx_pps, rx_pps, offered_pps),
      absl::StrFormat("\"tx_gbps\":%.4f,\"rx_gbps\":%.4f,\"rx_gbps_l2\":%.4f,",
                      Gbps(r.tx_bytes + kL1OverheadBytes * r.sent, d),
                      Gbps(r.rx_bytes + kL1OverheadBytes * r.seq.received, d),
                      Gbps(r.rx_bytes, d)),
      absl::StrFormat("\"duration_s\":%.6f,", d), "\"latency_ns\":", latency,
      absl::StrFormat(",\"size\":%d,\"flows\":%d,\"rate_pps\":%d,", r.size,
                      r.flows, r.rate_pps),
      absl::StrFormat("\"tx_port\":%d,\"rx_port\":%d,\"threads\":\"%s\",",
                      r.tx_port, r.rx_port, r.threads),
      absl::StrFormat("\"tsc_hz\":%d,", r.tsc_hz),
      "\"error\":", r.error ? JsonString(*r.error) : "null", "}");
}

}  // namespace spinnic::gen
