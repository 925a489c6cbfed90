#include "control/stats_format.h"

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "control/script_json.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/reflection.h"

namespace spinnic {
namespace {

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
    if (p.transport_paced != 0 || p.transport_held != 0 ||
        p.transport_refused != 0) {
      absl::StrAppendFormat(&out, "  pacer paced %u held %u refused %u\n",
                            p.transport_paced, p.transport_held,
                            p.transport_refused);
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
  for (const TransportStats& t : now.transports) {
    if (t.enabled) AppendCounters(t.name, t.counters, &out);
  }
  return out;
}

void FillHandlerStats(const EctxStats& e, v1::HandlerStats* out) {
  out->set_id(e.id);
  out->set_name(e.name);
  out->set_kind(e.kind);
  out->set_disabled(e.disabled);
  out->set_runtime(e.runtime);
  out->set_messages(e.messages);
  out->set_packets(e.packets);
  out->set_bytes(e.bytes);
  out->set_invocations(e.invocations);
  out->set_cycles(e.cycles);
  out->set_over_budget(e.over_budget);
  out->set_dropped(e.dropped);
  out->set_failed(e.failed);
  out->set_invalid(e.invalid);
  out->set_bypassed(e.bypassed);
  out->set_state_hex(Hex(e.state));
}

void FillStats(const StatsSnapshot& snapshot, v1::Stats* out) {
  out->set_timestamp_ns(static_cast<uint64_t>(absl::ToUnixNanos(absl::Now())));
  for (size_t i = 0; i < snapshot.ports.size(); ++i) {
    const PortStats& p = snapshot.ports[i];
    v1::PortCounters* port = out->add_ports();
    port->set_id(static_cast<uint32_t>(i));
    port->set_name(p.name);
    port->set_link_up(p.link_up);
    port->set_rx_packets(p.rx_packets);
    port->set_rx_bytes(p.rx_bytes);
    port->set_tx_packets(p.tx_packets);
    port->set_tx_bytes(p.tx_bytes);
    for (size_t r = 0; r < p.drops.size(); ++r) {
      (*port->mutable_drops())[DropReasonName(static_cast<DropReason>(r))] =
          p.drops[r];
    }
    port->set_hw_ipackets(p.hw_ipackets);
    port->set_hw_opackets(p.hw_opackets);
    port->set_hw_imissed(p.hw_imissed);
    port->set_hw_ierrors(p.hw_ierrors);
    port->set_hw_oerrors(p.hw_oerrors);
    port->set_hw_rx_nombuf(p.hw_rx_nombuf);
    port->set_port_id(p.port_id);
    port->set_queues(p.queues);
    port->set_transport_paced(p.transport_paced);
    port->set_transport_held(p.transport_held);
    port->set_transport_refused(p.transport_refused);
  }
  for (const HpuStats& h : snapshot.hpus) {
    v1::HpuCounters* hpu = out->add_hpus();
    hpu->set_index(h.index);
    hpu->set_lcore(h.lcore);
    hpu->set_loops(h.loops);
    hpu->set_busy_loops(h.busy_loops);
    hpu->set_rx_packets(h.rx_packets);
    hpu->set_tx_packets(h.tx_packets);
    hpu->set_events(h.events);
    hpu->set_event_overflow(h.event_overflow);
    hpu->set_emitted(h.emitted);
    hpu->set_emit_failed(h.emit_failed);
  }
  for (const EctxStats& e : snapshot.ectxs) {
    FillHandlerStats(e, out->add_handlers());
  }
  // A transport's counters go to the v1::Stats list named after it (`diad`,
  // `roce`: what scripts read), else to the generic `transports` list, so a
  // new transport's counters need no code here.
  const google::protobuf::Descriptor* descriptor = v1::Stats::descriptor();
  for (const TransportStats& t : snapshot.transports) {
    const google::protobuf::FieldDescriptor* field =
        descriptor->FindFieldByName(t.name);
    google::protobuf::RepeatedPtrField<v1::Counter>* counters = nullptr;
    if (field != nullptr && field->is_repeated() &&
        field->message_type() == v1::Counter::descriptor()) {
      counters =
          v1::Stats::GetReflection()->MutableRepeatedPtrField<v1::Counter>(
              out, field);
    } else {
      v1::TransportCounters* own = out->add_transports();
      own->set_name(t.name);
      counters = own->mutable_counters();
    }
    for (const auto& [name, value] : t.counters) {
      v1::Counter* counter = counters->Add();
      counter->set_name(name);
      counter->set_value(value);
    }
  }
}

absl::StatusOr<std::string> FormatStatsJson(const StatsSnapshot& snapshot) {
  v1::Stats stats;
  FillStats(snapshot, &stats);
  absl::StatusOr<std::string> json = ScriptJson(stats);
  if (json.ok()) *json += "\n";
  return json;
}

}  // namespace spinnic
