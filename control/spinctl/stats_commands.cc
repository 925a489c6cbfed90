// spinctl stats, watch-stats, events.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "control/spinctl/command.h"
#include "control/spinctl/table.h"

namespace spinnic::spinctl {
namespace {

// Packets per second between two snapshots; "-" without a previous one.
std::string Rate(uint64_t now, uint64_t before, uint64_t now_ns,
                 uint64_t before_ns) {
  if (now_ns <= before_ns || now < before) return "-";
  double seconds = static_cast<double>(now_ns - before_ns) / 1e9;
  return absl::StrFormat("%.0f", static_cast<double>(now - before) / seconds);
}

std::string DropsCell(const v1::PortCounters& port) {
  std::vector<std::string> drops;
  for (const auto& [reason, count] : port.drops()) {
    if (count != 0) drops.push_back(absl::StrCat(reason, "=", count));
  }
  std::sort(drops.begin(), drops.end());
  return drops.empty() ? "-" : absl::StrJoin(drops, ",");
}

// The DATA column of `events`: a DiAD event's fields, else the bytes in hex.
std::string EventData(const v1::Event& event) {
  if (event.has_diad()) {
    const v1::DiadEvent& d = event.diad();
    std::string peer =
        d.peer().empty() ? absl::StrCat("slot ", d.peer_slot()) : d.peer();
    return absl::StrCat("peer=", peer, " channel=", d.channel(),
                        " txn=", d.txn(), " status=", d.status());
  }
  if (event.has_roce()) {
    const v1::RoceEvent& r = event.roce();
    if (event.name() == "roce_write_imm") {
      return absl::StrFormat("qpn=%u immediate=0x%08x msn=%u", r.qpn(),
                             r.immediate(), r.msn());
    }
    if (event.name() == "roce_send") {
      std::string text = absl::StrCat("qpn=", r.qpn(), " length=", r.length());
      if (r.has_immediate()) {
        absl::StrAppendFormat(&text, " immediate=0x%08x", r.immediate());
      }
      if (!r.head().empty()) absl::StrAppend(&text, " head=", Hex(r.head()));
      return text;
    }
    return absl::StrCat("qpn=", r.qpn());
  }
  return event.data().empty() ? "-" : Hex(event.data());
}

// With `previous`, the port table also has per-second rates since then.
void PrintStats(const v1::Stats& stats, const v1::Stats* previous) {
  std::vector<std::string> headers = {
      "ID", "NAME", "LINK", "RX_PACKETS", "RX_BYTES", "TX_PACKETS", "TX_BYTES"};
  if (previous != nullptr) {
    headers.push_back("RX_PPS");
    headers.push_back("TX_PPS");
  }
  headers.push_back("DROPS");
  Table ports(std::move(headers));
  for (int i = 0; i < stats.ports_size(); ++i) {
    const v1::PortCounters& p = stats.ports(i);
    std::vector<std::string> row = {
        absl::StrCat(p.id()),        p.name(),
        p.link_up() ? "up" : "down", absl::StrCat(p.rx_packets()),
        absl::StrCat(p.rx_bytes()),  absl::StrCat(p.tx_packets()),
        absl::StrCat(p.tx_bytes())};
    if (previous != nullptr) {
      bool have = i < previous->ports_size();
      const v1::PortCounters& q = have ? previous->ports(i) : p;
      uint64_t before_ns = have ? previous->timestamp_ns() : 0;
      row.push_back(Rate(p.rx_packets(), q.rx_packets(), stats.timestamp_ns(),
                         before_ns));
      row.push_back(Rate(p.tx_packets(), q.tx_packets(), stats.timestamp_ns(),
                         before_ns));
    }
    row.push_back(DropsCell(p));
    ports.AddRow(std::move(row));
  }
  std::printf("ports:\n");
  ports.Print(stdout, "  ");

  // The transport pacers (config ports[].transport_pacer), for the ports
  // where one did anything: how much transport traffic they let out, hold,
  // and turned away while keeping passthrough's share of the TX queues.
  Table pacers({"ID", "NAME", "PACED", "HELD", "REFUSED"});
  bool any_pacer = false;
  for (const v1::PortCounters& p : stats.ports()) {
    if (p.transport_paced() == 0 && p.transport_held() == 0 &&
        p.transport_refused() == 0) {
      continue;
    }
    any_pacer = true;
    pacers.AddRow({absl::StrCat(p.id()), p.name(),
                   absl::StrCat(p.transport_paced()),
                   absl::StrCat(p.transport_held()),
                   absl::StrCat(p.transport_refused())});
  }
  if (any_pacer) {
    std::printf("transport pacers:\n");
    pacers.Print(stdout, "  ");
  }

  Table hpus({"INDEX", "LCORE", "LOOPS", "BUSY_LOOPS", "RX_PACKETS",
              "TX_PACKETS", "EVENTS", "EVENT_OVERFLOW", "EMITTED",
              "EMIT_FAILED"});
  for (const v1::HpuCounters& h : stats.hpus()) {
    hpus.AddRow({absl::StrCat(h.index()), absl::StrCat(h.lcore()),
                 absl::StrCat(h.loops()), absl::StrCat(h.busy_loops()),
                 absl::StrCat(h.rx_packets()), absl::StrCat(h.tx_packets()),
                 absl::StrCat(h.events()), absl::StrCat(h.event_overflow()),
                 absl::StrCat(h.emitted()), absl::StrCat(h.emit_failed())});
  }
  std::printf("hpus:\n");
  hpus.Print(stdout, "  ");

  // Each transport's counters under its name; like the ports' DROPS, only
  // drops that happened (all in --json).
  auto print_transport = [](const std::string& name, const auto& counters) {
    if (counters.empty()) return;
    std::printf("%s:\n", name.c_str());
    KeyValues values;
    for (const v1::Counter& c : counters) {
      if (c.value() == 0 && absl::StartsWith(c.name(), "drop_")) continue;
      values.Add(c.name(), absl::StrCat(c.value()));
    }
    values.Print(stdout, "  ");
  };
  print_transport("diad", stats.diad());
  print_transport("roce", stats.roce());
  for (const v1::TransportCounters& t : stats.transports()) {
    print_transport(t.name(), t.counters());
  }

  if (stats.handlers().empty()) return;
  std::vector<std::string> handler_headers = {"ID", "NAME", "KIND"};
  for (std::string& h : HandlerCounterHeaders()) handler_headers.push_back(h);
  Table handlers(std::move(handler_headers));
  for (const v1::HandlerStats& s : stats.handlers()) {
    std::vector<std::string> row = {absl::StrCat(s.id()), s.name(), s.kind()};
    for (std::string& cell : HandlerCounterCells(s)) row.push_back(cell);
    handlers.AddRow(std::move(row));
  }
  std::printf("handlers:\n");
  handlers.Print(stdout, "  ");
}

int RunStats(Env& env, const ParsedArgs&) {
  ControlClient* client = env.Client();
  if (client == nullptr) return env.connect_exit();
  absl::StatusOr<v1::Stats> stats = client->GetStats();
  if (!stats.ok()) return env.ServerError(stats.status());
  if (env.json()) {
    env.PrintJson(*stats);
    return kExitOk;
  }
  std::printf("time: %s\n", FormatTimestamp(stats->timestamp_ns()).c_str());
  PrintStats(*stats, nullptr);
  return kExitOk;
}

int RunWatchStats(Env& env, const ParsedArgs& args) {
  ControlClient* client = env.Client();
  if (client == nullptr) return env.connect_exit();
  uint64_t count = args.Uint("count");
  uint64_t seen = 0;
  v1::Stats previous;
  absl::Status status = client->WatchStats(
      static_cast<uint32_t>(args.Uint("interval_ms", 1000)),
      [&](const v1::Stats& stats) {
        if (env.json()) {
          env.PrintJson(stats);
        } else {
          if (seen > 0) std::printf("\n");
          std::printf("time: %s\n",
                      FormatTimestamp(stats.timestamp_ns()).c_str());
          PrintStats(stats, seen > 0 ? &previous : nullptr);
          std::fflush(stdout);
        }
        previous = stats;
        return count == 0 || ++seen < count;
      });
  if (!status.ok()) return env.ServerError(status);
  return kExitOk;
}

int RunEvents(Env& env, const ParsedArgs& args) {
  ControlClient* client = env.Client();
  if (client == nullptr) return env.connect_exit();
  uint64_t count = args.Uint("count");
  absl::Duration max_wait = args.Has("timeout_ms")
                                ? absl::Milliseconds(args.Uint("timeout_ms"))
                                : absl::InfiniteDuration();
  uint64_t seen = 0;
  if (!env.json()) {
    std::printf("%-8s %-24s %-4s %-20s %-10s %-18s %s\n", "SEQ", "TIME", "HPU",
                "HANDLER", "CODE", "EVENT", "DATA");
    std::fflush(stdout);
  }
  absl::Status status = client->WatchEvents(
      [&](const v1::Event& event) {
        if (env.json()) {
          env.PrintJson(event);
        } else {
          if (event.missed_before() != 0) {
            std::printf("(%llu events missed: the buffer was full)\n",
                        static_cast<unsigned long long>(event.missed_before()));
          }
          std::printf(
              "%-8llu %-24s %-4u %-20s 0x%08x %-18s %s\n",
              static_cast<unsigned long long>(event.sequence()),
              FormatTimestamp(event.timestamp_ns()).c_str(), event.hpu(),
              event.handler().empty() ? "-" : event.handler().c_str(),
              event.code(), event.name().empty() ? "-" : event.name().c_str(),
              EventData(event).c_str());
          std::fflush(stdout);
        }
        return count == 0 || ++seen < count;
      },
      max_wait);
  if (!status.ok()) return env.ServerError(status);
  return kExitOk;
}

}  // namespace

std::vector<Command> StatsCommands() {
  return {
      {"stats",
       "",
       0,
       0,
       "port, HPU and handler counters now",
       {},
       "",
       RunStats},
      {"watch-stats",
       "",
       0,
       0,
       "counters every --interval_ms, with packet rates",
       {
           {"interval_ms", FlagType::kUint, "N",
            "milliseconds between snapshots (default 1000, at least 100)",
            UINT32_MAX},
           {"count", FlagType::kUint, "N", "stop after N snapshots"},
       },
       "",
       RunWatchStats},
      {"events",
       "",
       0,
       0,
       "stream handler and engine events as they happen",
       {
           {"count", FlagType::kUint, "N", "stop after N events"},
           {"timeout_ms", FlagType::kUint, "N",
            "stop after N milliseconds (default: never)"},
       },
       "",
       RunEvents},
  };
}

}  // namespace spinnic::spinctl
