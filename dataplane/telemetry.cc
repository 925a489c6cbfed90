#include "dataplane/telemetry.h"

#include <malloc.h>
#include <rte_mempool.h>
#include <rte_telemetry.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "dataplane/dataplane.h"

namespace spinnic {
namespace {

// Telemetry callbacks run on the EAL's telemetry thread and commands cannot
// be unregistered, so they reach the dataplane through this guarded pointer.
absl::Mutex g_mu(absl::kConstInit);
const Dataplane* g_dataplane ABSL_GUARDED_BY(g_mu) = nullptr;

// Runs `fill` on a fresh snapshot; -EINVAL without a dataplane.
template <typename Fill>
int WithSnapshot(Fill fill) {
  absl::MutexLock lock(&g_mu);
  if (g_dataplane == nullptr) return -EINVAL;
  return fill(g_dataplane->Snapshot());
}

int ListPorts(const char*, const char*, rte_tel_data* d) {
  return WithSnapshot([d](const StatsSnapshot& s) {
    rte_tel_data_start_array(d, RTE_TEL_STRING_VAL);
    for (const PortStats& p : s.ports) {
      rte_tel_data_add_array_string(d, p.name.c_str());
    }
    return 0;
  });
}

int ShowPort(const char*, const char* params, rte_tel_data* d) {
  if (params == nullptr) return -EINVAL;
  return WithSnapshot([d, name = std::string(params)](const StatsSnapshot& s) {
    for (const PortStats& p : s.ports) {
      if (p.name != name) continue;
      rte_tel_data_start_dict(d);
      rte_tel_data_add_dict_u64(d, "rx_packets", p.rx_packets);
      rte_tel_data_add_dict_u64(d, "rx_bytes", p.rx_bytes);
      rte_tel_data_add_dict_u64(d, "tx_packets", p.tx_packets);
      rte_tel_data_add_dict_u64(d, "tx_bytes", p.tx_bytes);
      for (size_t r = 0; r < p.drops.size(); ++r) {
        std::string key =
            std::string("drop_") + DropReasonName(static_cast<DropReason>(r));
        rte_tel_data_add_dict_u64(d, key.c_str(), p.drops[r]);
      }
      rte_tel_data_add_dict_u64(d, "transport_paced", p.transport_paced);
      rte_tel_data_add_dict_u64(d, "transport_held", p.transport_held);
      rte_tel_data_add_dict_u64(d, "transport_refused", p.transport_refused);
      rte_tel_data_add_dict_u64(d, "hw_imissed", p.hw_imissed);
      rte_tel_data_add_dict_u64(d, "hw_rx_nombuf", p.hw_rx_nombuf);
      return 0;
    }
    return -EINVAL;
  });
}

int ListEctxs(const char*, const char*, rte_tel_data* d) {
  return WithSnapshot([d](const StatsSnapshot& s) {
    rte_tel_data_start_array(d, RTE_TEL_STRING_VAL);
    for (const EctxStats& e : s.ectxs) {
      rte_tel_data_add_array_string(d, e.name.c_str());
    }
    return 0;
  });
}

int ShowEctx(const char*, const char* params, rte_tel_data* d) {
  if (params == nullptr) return -EINVAL;
  return WithSnapshot([d, name = std::string(params)](const StatsSnapshot& s) {
    for (const EctxStats& e : s.ectxs) {
      if (e.name != name) continue;
      rte_tel_data_start_dict(d);
      rte_tel_data_add_dict_string(d, "kind", e.kind.c_str());
      rte_tel_data_add_dict_u64(d, "id", e.id);
      rte_tel_data_add_dict_u64(d, "disabled", e.disabled);
      rte_tel_data_add_dict_u64(d, "messages", e.messages);
      rte_tel_data_add_dict_u64(d, "packets", e.packets);
      rte_tel_data_add_dict_u64(d, "bytes", e.bytes);
      rte_tel_data_add_dict_u64(d, "invocations", e.invocations);
      rte_tel_data_add_dict_u64(d, "cycles", e.cycles);
      rte_tel_data_add_dict_u64(d, "over_budget", e.over_budget);
      rte_tel_data_add_dict_u64(d, "dropped", e.dropped);
      rte_tel_data_add_dict_u64(d, "failed", e.failed);
      rte_tel_data_add_dict_u64(d, "invalid", e.invalid);
      rte_tel_data_add_dict_u64(d, "bypassed", e.bypassed);
      return 0;
    }
    return -EINVAL;
  });
}

int CountHpus(const char*, const char*, rte_tel_data* d) {
  return WithSnapshot([d](const StatsSnapshot& s) {
    rte_tel_data_start_dict(d);
    rte_tel_data_add_dict_u64(d, "hpus", s.hpus.size());
    return 0;
  });
}

int ShowHpu(const char*, const char* params, rte_tel_data* d) {
  if (params == nullptr) return -EINVAL;
  char* end = nullptr;
  unsigned long index = std::strtoul(params, &end, 10);
  if (end == params || *end != '\0') return -EINVAL;
  return WithSnapshot([d, index](const StatsSnapshot& s) {
    if (index >= s.hpus.size()) return -EINVAL;
    const HpuStats& h = s.hpus[index];
    rte_tel_data_start_dict(d);
    rte_tel_data_add_dict_u64(d, "lcore", h.lcore);
    rte_tel_data_add_dict_u64(d, "loops", h.loops);
    rte_tel_data_add_dict_u64(d, "busy_loops", h.busy_loops);
    rte_tel_data_add_dict_u64(d, "rx_packets", h.rx_packets);
    rte_tel_data_add_dict_u64(d, "tx_packets", h.tx_packets);
    rte_tel_data_add_dict_u64(d, "events", h.events);
    rte_tel_data_add_dict_u64(d, "event_overflow", h.event_overflow);
    rte_tel_data_add_dict_u64(d, "emitted", h.emitted);
    rte_tel_data_add_dict_u64(d, "emit_failed", h.emit_failed);
    return 0;
  });
}

int ListTransports(const char*, const char*, rte_tel_data* d) {
  return WithSnapshot([d](const StatsSnapshot& s) {
    rte_tel_data_start_array(d, RTE_TEL_STRING_VAL);
    for (const TransportStats& t : s.transports) {
      if (t.enabled) rte_tel_data_add_array_string(d, t.name.c_str());
    }
    return 0;
  });
}

// One transport's counters by name, -EINVAL when it is unknown or off.
int TransportCounters(absl::string_view name, rte_tel_data* d) {
  return WithSnapshot([d, name](const StatsSnapshot& s) {
    for (const TransportStats& t : s.transports) {
      if (t.name != name || !t.enabled) continue;
      rte_tel_data_start_dict(d);
      for (const auto& [counter, value] : t.counters) {
        rte_tel_data_add_dict_u64(d, counter.c_str(), value);
      }
      return 0;
    }
    return -EINVAL;
  });
}

int ShowTransport(const char*, const char* params, rte_tel_data* d) {
  if (params == nullptr) return -EINVAL;
  return TransportCounters(params, d);
}

// The name scripts used before /spinnic/transport existed.
int ShowDiad(const char*, const char*, rte_tel_data* d) {
  return TransportCounters("diad", d);
}

// Every mempool of the process (name -> {size, in_use}: in_use excludes the
// per-lcore caches, so it is the mbufs held somewhere) and the libc heap
// (mallinfo2: brk arena, mmapped blocks, bytes in use). Read on the
// telemetry thread while HPUs run, so a busy pool's in_use is a moment's
// view; the soak (tests/soak/run) reads it once traffic has stopped.
void AddMempool(rte_mempool* mp, void* arg) {
  auto* pools = static_cast<rte_tel_data*>(arg);
  rte_tel_data* one = rte_tel_data_alloc();
  if (one == nullptr) return;
  rte_tel_data_start_dict(one);
  rte_tel_data_add_dict_u64(one, "size", mp->size);
  rte_tel_data_add_dict_u64(one, "in_use", rte_mempool_in_use_count(mp));
  rte_tel_data_add_dict_container(pools, mp->name, one, 0);
}

int ShowMemory(const char*, const char*, rte_tel_data* d) {
  rte_tel_data* pools = rte_tel_data_alloc();
  rte_tel_data* libc = rte_tel_data_alloc();
  if (pools == nullptr || libc == nullptr) {
    rte_tel_data_free(pools);
    rte_tel_data_free(libc);
    return -ENOMEM;
  }
  rte_tel_data_start_dict(pools);
  rte_mempool_walk(AddMempool, pools);
  const struct mallinfo2 mi = mallinfo2();
  rte_tel_data_start_dict(libc);
  rte_tel_data_add_dict_u64(libc, "arena_bytes", mi.arena);
  rte_tel_data_add_dict_u64(libc, "mmap_bytes", mi.hblkhd);
  rte_tel_data_add_dict_u64(libc, "in_use_bytes", mi.uordblks + mi.hblkhd);
  rte_tel_data_add_dict_u64(libc, "free_bytes", mi.fordblks);
  rte_tel_data_start_dict(d);
  rte_tel_data_add_dict_container(d, "mempools", pools, 0);
  rte_tel_data_add_dict_container(d, "libc", libc, 0);
  return 0;
}

// The transports' own commands, by name: DPDK passes the command to its
// callback, so one callback serves them all.
absl::flat_hash_map<std::string,
                    std::function<int(const char*, rte_tel_data*)>>&
TransportCommands() ABSL_EXCLUSIVE_LOCKS_REQUIRED(g_mu) {
  static auto* commands =
      new absl::flat_hash_map<std::string,
                              std::function<int(const char*, rte_tel_data*)>>();
  return *commands;
}

int RunTransportCommand(const char* cmd, const char* params, rte_tel_data* d) {
  absl::MutexLock lock(&g_mu);
  auto it = TransportCommands().find(cmd);
  if (g_dataplane == nullptr || it == TransportCommands().end()) return -EINVAL;
  return it->second(params, d);
}

void RegisterOnce() {
  static const bool registered = [] {
    rte_telemetry_register_cmd("/spinnic/ports", ListPorts,
                               "Names of spinnic's ports.");
    rte_telemetry_register_cmd("/spinnic/port", ShowPort,
                               "Counters of one port. Parameter: port name");
    rte_telemetry_register_cmd("/spinnic/ectxs", ListEctxs,
                               "Names of the installed handlers (ECTXs).");
    rte_telemetry_register_cmd("/spinnic/ectx", ShowEctx,
                               "Counters of one ECTX. Parameter: its name");
    rte_telemetry_register_cmd("/spinnic/hpus", CountHpus,
                               "Number of HPU worker lcores.");
    rte_telemetry_register_cmd("/spinnic/hpu", ShowHpu,
                               "Counters of one HPU. Parameter: its index");
    rte_telemetry_register_cmd("/spinnic/transports", ListTransports,
                               "Names of the transports that are on.");
    rte_telemetry_register_cmd("/spinnic/transport", ShowTransport,
                               "Counters of one transport. Parameter: its "
                               "name (diad, roce)");
    rte_telemetry_register_cmd("/spinnic/diad", ShowDiad,
                               "DiAD transport counters (when DiAD is on); "
                               "the same as /spinnic/transport,diad.");
    rte_telemetry_register_cmd(
        "/spinnic/memory", ShowMemory,
        "Mempools (size, in_use) and the libc heap (mallinfo2).");
    return true;
  }();
  (void)registered;
}

}  // namespace

void AttachTelemetry(const Dataplane* dataplane) {
  RegisterOnce();
  // Commands are registered once per process and never removed; a detached
  // or unknown one answers -EINVAL.
  static auto* registered = new absl::flat_hash_set<std::string>();
  absl::MutexLock lock(&g_mu);
  g_dataplane = dataplane;
  TransportCommands().clear();
  if (dataplane == nullptr) return;
  for (TransportModule* module : dataplane->transports()) {
    for (TelemetryCommand& command : module->TelemetryCommands()) {
      if (registered->insert(command.name).second) {
        rte_telemetry_register_cmd(command.name.c_str(), RunTransportCommand,
                                   command.help.c_str());
      }
      TransportCommands()[command.name] = std::move(command.handler);
    }
  }
}

}  // namespace spinnic
