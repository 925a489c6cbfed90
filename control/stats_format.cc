#include "control/stats_format.h"

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace spinnic {
namespace {

std::string JsonString(absl::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += absl::StrFormat("\\u%04x", c);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string Hex(const std::vector<uint8_t>& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

uint64_t TotalDrops(const PortStats& port) {
  uint64_t total = 0;
  for (uint64_t d : port.drops) total += d;
  return total;
}

double Rate(uint64_t now, uint64_t before, double interval_s) {
  return interval_s > 0 ? static_cast<double>(now - before) / interval_s : 0;
}

// Three name/value pairs a line; zero drop counters are left out.
void AppendCounters(
    absl::string_view title,
    const std::vector<std::pair<std::string, uint64_t>>& counters,
    std::string* out) {
  absl::StrAppend(out, title, ":");
  int column = 0;
  for (const auto& [name, value] : counters) {
    if (value == 0 && absl::StartsWith(name, "drop_")) continue;
    if (column++ % 3 == 0) *out += "\n ";
    absl::StrAppendFormat(out, " %-20s %12u", name, value);
  }
  *out += "\n";
}

std::string JsonCounters(
    const std::vector<std::pair<std::string, uint64_t>>& counters) {
  std::string out = "{";
  for (size_t i = 0; i < counters.size(); ++i) {
    const auto& [name, value] = counters[i];
    absl::StrAppend(&out, i ? "," : "", JsonString(name), ":", value);
  }
  return out + "}";
}

}  // namespace

std::string FormatStatsText(const StatsSnapshot& now,
                            const StatsSnapshot* previous, double interval_s) {
  std::string out;
  absl::StrAppendFormat(&out, "%-10s %12s %14s %12s %14s %10s %10s %10s\n",
                        "port", "rx_pkts", "rx_bytes", "tx_pkts", "tx_bytes",
                        "drops", "rx_Mpps", "tx_Mpps");
  for (size_t i = 0; i < now.ports.size(); ++i) {
    const PortStats& p = now.ports[i];
    double rx_rate = 0, tx_rate = 0;
    const PortStats* before = previous != nullptr && i < previous->ports.size()
                                  ? &previous->ports[i]
                                  : nullptr;
    rx_rate = Rate(p.rx_packets, before ? before->rx_packets : 0, interval_s);
    tx_rate = Rate(p.tx_packets, before ? before->tx_packets : 0, interval_s);
    absl::StrAppendFormat(
        &out, "%-10s %12u %14u %12u %14u %10u %10.3f %10.3f\n", p.name,
        p.rx_packets, p.rx_bytes, p.tx_packets, p.tx_bytes, TotalDrops(p),
        rx_rate / 1e6, tx_rate / 1e6);
    for (size_t r = 0; r < p.drops.size(); ++r) {
      if (p.drops[r] == 0) continue;
      absl::StrAppendFormat(&out, "  drop %-16s %12u\n",
                            DropReasonName(static_cast<DropReason>(r)),
                            p.drops[r]);
    }
  }
  if (!now.ectxs.empty()) {
    absl::StrAppendFormat(&out, "%-16s %-12s %12s %12s %10s %10s %9s %s\n",
                          "handler", "kind", "packets", "bytes", "dropped",
                          "failed", "cyc/call", "flags");
    for (const EctxStats& e : now.ectxs) {
      double per_call = e.invocations != 0
                            ? static_cast<double>(e.cycles) / e.invocations
                            : 0;
      std::string flags;
      if (e.disabled) flags += "DISABLED ";
      if (e.over_budget != 0) {
        flags += absl::StrCat("over_budget=", e.over_budget, " ");
      }
      if (e.invalid != 0) flags += absl::StrCat("invalid=", e.invalid, " ");
      absl::StrAppendFormat(&out, "%-16s %-12s %12u %12u %10u %10u %9.1f %s\n",
                            e.name, e.kind, e.packets, e.bytes, e.dropped,
                            e.failed, per_call, flags);
    }
  }
  if (now.diad.enabled) AppendCounters("diad", now.diad.counters, &out);
  if (now.roce.enabled) AppendCounters("roce", now.roce.counters, &out);
  return out;
}

std::string FormatStatsJson(const StatsSnapshot& snapshot) {
  std::string out = "{\"ports\":[";
  for (size_t i = 0; i < snapshot.ports.size(); ++i) {
    const PortStats& p = snapshot.ports[i];
    absl::StrAppend(
        &out, i ? "," : "", "{\"id\":", i, ",\"name\":", JsonString(p.name),
        ",\"port_id\":", p.port_id, ",\"queues\":", p.queues,
        ",\"link_up\":", p.link_up ? "true" : "false",
        ",\"rx_packets\":", p.rx_packets, ",\"rx_bytes\":", p.rx_bytes,
        ",\"tx_packets\":", p.tx_packets, ",\"tx_bytes\":", p.tx_bytes,
        ",\"drops\":{");
    for (size_t r = 0; r < p.drops.size(); ++r) {
      absl::StrAppend(&out, r ? "," : "", "\"",
                      DropReasonName(static_cast<DropReason>(r)),
                      "\":", p.drops[r]);
    }
    absl::StrAppend(
        &out, "},\"hw\":{\"ipackets\":", p.hw_ipackets,
        ",\"opackets\":", p.hw_opackets, ",\"imissed\":", p.hw_imissed,
        ",\"ierrors\":", p.hw_ierrors, ",\"oerrors\":", p.hw_oerrors,
        ",\"rx_nombuf\":", p.hw_rx_nombuf, "}}");
  }
  out += "],\"lcores\":[";
  for (size_t i = 0; i < snapshot.hpus.size(); ++i) {
    const HpuStats& h = snapshot.hpus[i];
    absl::StrAppend(
        &out, i ? "," : "", "{\"index\":", h.index, ",\"lcore\":", h.lcore,
        ",\"loops\":", h.loops, ",\"busy_loops\":", h.busy_loops,
        ",\"rx_packets\":", h.rx_packets, ",\"tx_packets\":", h.tx_packets,
        ",\"events\":", h.events, ",\"event_overflow\":", h.event_overflow,
        ",\"emitted\":", h.emitted, ",\"emit_failed\":", h.emit_failed, "}");
  }
  out += "],\"ectxs\":[";
  for (size_t i = 0; i < snapshot.ectxs.size(); ++i) {
    const EctxStats& e = snapshot.ectxs[i];
    absl::StrAppend(
        &out, i ? "," : "", "{\"id\":", e.id, ",\"name\":", JsonString(e.name),
        ",\"kind\":", JsonString(e.kind),
        ",\"disabled\":", e.disabled ? "true" : "false",
        ",\"messages\":", e.messages, ",\"packets\":", e.packets,
        ",\"bytes\":", e.bytes, ",\"invocations\":", e.invocations,
        ",\"cycles\":", e.cycles, ",\"over_budget\":", e.over_budget,
        ",\"dropped\":", e.dropped, ",\"failed\":", e.failed,
        ",\"invalid\":", e.invalid, ",\"bypassed\":", e.bypassed,
        ",\"state_hex\":\"", Hex(e.state), "\"}");
  }
  out += "]";
  if (snapshot.diad.enabled) {
    absl::StrAppend(&out, ",\"diad\":", JsonCounters(snapshot.diad.counters));
  }
  if (snapshot.roce.enabled) {
    absl::StrAppend(&out, ",\"roce\":", JsonCounters(snapshot.roce.counters));
  }
  out += "}\n";
  return out;
}

}  // namespace spinnic
