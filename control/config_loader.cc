// The config loader's core: the checks of the sections that are the whole
// appliance's (workers, addresses, eal_args, runtime), the order of all
// checks, and the conversion. The other sections have their own files:
// port_config.cc, handler_config.cc, and each feature's ConfigSection
// (config_sections.cc lists them); parsing is config_parse.cc.
#include "control/config_loader.h"

#include <arpa/inet.h>
#include <rte_config.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "control/config_check.h"
#include "control/config_section.h"
#include "control/default_config.h"
#include "control/handler_config.h"
#include "control/port_config.h"

namespace spinnic {
namespace {

using config_internal::CheckHandlers;
using config_internal::CheckPortPairs;
using config_internal::CheckPorts;
using config_internal::FieldPath;
using config_internal::ParseMac;
using config_internal::Quote;
using config_internal::Reporter;
using config_internal::WhereElse;

absl::Status CheckWorkers(const v1::Config& config, const Reporter& r) {
  const FieldPath root;
  if (config.main_lcore() > kMaxCoreId) {
    return r.Error(root.F("main_lcore"),
                   absl::StrCat("core ", config.main_lcore(),
                                " is out of range; cores are 0..", kMaxCoreId));
  }
  if (config.workers_size() == 0) {
    return r.Error(root.F("workers"),
                   "no worker cores; add at least one, e.g. workers: [1] (one "
                   "HPU worker on core 1)");
  }
  // Lcore ids are dense: the main lcore is 0, workers 1..N.
  if (config.workers_size() > RTE_MAX_LCORE - 1) {
    return r.Error(root.At("workers", RTE_MAX_LCORE - 1),
                   absl::StrCat(config.workers_size(),
                                " workers, but DPDK supports ", RTE_MAX_LCORE,
                                " lcores (RTE_MAX_LCORE) and the main lcore "
                                "takes one; use at most ",
                                RTE_MAX_LCORE - 1, " workers"));
  }
  absl::flat_hash_map<uint32_t, int> seen;
  for (int i = 0; i < config.workers_size(); ++i) {
    uint32_t core = config.workers(i);
    const FieldPath p = root.At("workers", i);
    if (core > kMaxCoreId) {
      return r.Error(
          p, absl::StrCat("core ", core, " is out of range; cores are 0..",
                          kMaxCoreId));
    }
    if (core == config.main_lcore() && !config.main_lcore_shared()) {
      return r.Error(
          p, absl::StrCat("core ", core,
                          " is also main_lcore, which never handles packets; "
                          "put this worker on another core, change "
                          "main_lcore, or set main_lcore_shared: true"));
    }
    if (auto [it, inserted] = seen.emplace(core, i); !inserted) {
      return r.Error(
          p, absl::StrCat("core ", core, " is already workers[", it->second,
                          "]; each worker needs its own core"));
    }
  }
  return absl::OkStatus();
}

// Checks one of the appliance's own unicast addresses; `family` AF_INET or
// AF_INET6. Returns the 16-byte form (IPv4 mapped) in *out.
absl::Status CheckOwnAddress(const Reporter& r, const FieldPath& p,
                             const std::string& text, int family,
                             std::array<uint8_t, 16>* out) {
  absl::string_view example =
      family == AF_INET ? "\"192.0.2.10\"" : "\"fd00:1::10\"";
  if (absl::StrContains(text, '/')) {
    return r.Error(p, absl::StrCat(Quote(text),
                                   " has a prefix length; write the address "
                                   "alone, e.g. ",
                                   example));
  }
  out->fill(0);
  if (family == AF_INET) {
    in_addr v4;
    if (inet_pton(AF_INET, text.c_str(), &v4) != 1) {
      return r.Error(p, absl::StrCat(Quote(text),
                                     " is not an IPv4 address; write dotted "
                                     "decimal, e.g. ",
                                     example));
    }
    (*out)[10] = 0xff;
    (*out)[11] = 0xff;
    std::memcpy(out->data() + 12, &v4, 4);
    uint8_t first = (*out)[12];
    uint32_t host = ntohl(v4.s_addr);
    if (host == 0 || host == 0xffffffffu || (first & 0xf0) == 0xe0) {
      return r.Error(p, absl::StrCat(Quote(text),
                                     " is not a unicast address and cannot "
                                     "be the appliance's own; use e.g. ",
                                     example));
    }
  } else {
    in6_addr v6;
    if (inet_pton(AF_INET6, text.c_str(), &v6) != 1) {
      return r.Error(
          p, absl::StrCat(Quote(text), " is not an IPv6 address; write e.g. ",
                          example));
    }
    std::memcpy(out->data(), &v6, 16);
    bool all_zero = true;
    for (uint8_t byte : *out) all_zero &= byte == 0;
    if (all_zero || (*out)[0] == 0xff) {
      return r.Error(p, absl::StrCat(Quote(text),
                                     " is not a unicast address and cannot "
                                     "be the appliance's own; use e.g. ",
                                     example));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckAddresses(const v1::Config& config, const Reporter& r) {
  const FieldPath a = FieldPath().F("addresses");
  const v1::Addresses& addresses = config.addresses();
  if (!addresses.mac().empty()) {
    std::array<uint8_t, 6> mac{};
    if (!ParseMac(addresses.mac(), &mac)) {
      return r.Error(a.F("mac"),
                     absl::StrCat(Quote(addresses.mac()),
                                  " is not a MAC address; write six hex bytes "
                                  "separated by ':', e.g. "
                                  "\"02:00:00:00:00:01\", or leave it out to "
                                  "use the first wire port's MAC"));
    }
    bool all_zero = true;
    for (uint8_t byte : mac) all_zero &= byte == 0;
    if (all_zero || (mac[0] & 1) != 0) {
      return r.Error(a.F("mac"),
                     absl::StrCat(Quote(addresses.mac()),
                                  " is not a unicast MAC (all zeros, or the "
                                  "multicast bit of the first byte is set); "
                                  "use e.g. \"02:00:00:00:00:01\""));
    }
  }
  absl::flat_hash_map<std::array<uint8_t, 16>, FieldPath> seen;
  for (const char* list : {"ipv4", "ipv6"}) {
    bool v4 = absl::string_view(list) == "ipv4";
    const auto& texts = v4 ? addresses.ipv4() : addresses.ipv6();
    for (int i = 0; i < texts.size(); ++i) {
      const FieldPath p = a.At(list, i);
      std::array<uint8_t, 16> bytes{};
      if (absl::Status s =
              CheckOwnAddress(r, p, texts[i], v4 ? AF_INET : AF_INET6, &bytes);
          !s.ok()) {
        return s;
      }
      if (auto [it, inserted] = seen.emplace(bytes, p); !inserted) {
        return r.Error(p,
                       absl::StrCat(Quote(texts[i]), " is listed twice (",
                                    WhereElse(r, it->second), "); remove one"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckEalArgs(const v1::Config& config, const Reporter& r) {
  const FieldPath root;
  int no_huge = -1;
  int in_memory = -1;
  for (int i = 0; i < config.eal_args_size(); ++i) {
    if (config.eal_args(i) == "--no-huge") no_huge = i;
    if (config.eal_args(i) == "--in-memory") in_memory = i;
  }
  if (no_huge >= 0 && in_memory >= 0) {
    // --no-huge implies legacy memory, which EAL refuses with --in-memory.
    return r.Error(root.At("eal_args", std::max(no_huge, in_memory)),
                   "--no-huge and --in-memory cannot be combined (EAL: "
                   "--legacy-mem is not compatible with --in-memory); keep "
                   "--no-huge and replace --in-memory with --file-prefix "
                   "<a name unique on this host>");
  }
  for (int i = 0; i < config.eal_args_size(); ++i) {
    const std::string& arg = config.eal_args(i);
    const FieldPath p = root.At("eal_args", i);
    if (arg.empty()) {
      return r.Error(p, "empty argument; remove it");
    }
    absl::string_view option = absl::string_view(arg).substr(0, arg.find('='));
    bool lcore_option = option == "--lcores" || option == "--main-lcore" ||
                        option == "--master-lcore" ||
                        (arg.size() >= 2 && arg[0] == '-' && arg[1] != '-' &&
                         (arg[1] == 'l' || arg[1] == 'c'));
    if (lcore_option) {
      return r.Error(p, absl::StrCat(Quote(arg),
                                     " conflicts with the lcore layout "
                                     "spinnicd derives from workers and "
                                     "main_lcore; remove it and set those "
                                     "fields instead"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckRuntime(const v1::Config& config, const Reporter& r) {
  if (config.runtime().burst() > kMaxBurst) {
    return r.Error(
        FieldPath().F("runtime").F("burst"),
        absl::StrCat(config.runtime().burst(), " is over ", kMaxBurst,
                     "; use 1..", kMaxBurst, ", or 0 for ", kDefaultBurst));
  }
  return absl::OkStatus();
}

}  // namespace

void ApplyOverrides(const ConfigOverrides& overrides, v1::Config* config,
                    ConfigLocations* locations) {
  auto mark = [&](std::string path) {
    if (locations != nullptr) locations->MarkOverridden(std::move(path));
  };
  if (overrides.duration_s.has_value()) {
    config->mutable_runtime()->set_duration_s(*overrides.duration_s);
    mark("runtime.duration_s");
  }
  if (overrides.stats_interval_ms.has_value()) {
    config->mutable_runtime()->set_stats_interval_ms(
        *overrides.stats_interval_ms);
    mark("runtime.stats_interval_ms");
  }
  if (overrides.workers.has_value()) {
    config->clear_workers();
    for (uint32_t core : *overrides.workers) config->add_workers(core);
    mark("workers");
  }
  if (overrides.main_lcore.has_value()) {
    config->set_main_lcore(*overrides.main_lcore);
    mark("main_lcore");
  }
  for (const std::string& arg : overrides.extra_eal_args) {
    mark(absl::StrCat("eal_args[", config->eal_args_size(), "]"));
    config->add_eal_args(arg);
  }
}

absl::Status ValidateConfig(const v1::Config& config,
                            const ConfigLocations* locations) {
  const Reporter r(locations);
  for (auto check :
       {&CheckPorts, &CheckPortPairs, &CheckWorkers, &CheckAddresses}) {
    if (absl::Status s = check(config, r); !s.ok()) return s;
  }
  for (const config_internal::ConfigSection* section :
       config_internal::ConfigSections()) {
    if (absl::Status s = section->Check(config, r); !s.ok()) return s;
  }
  for (auto check : {&CheckHandlers, &CheckEalArgs, &CheckRuntime}) {
    if (absl::Status s = check(config, r); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::Config> LoadConfig(absl::string_view path,
                                      const ConfigOverrides& overrides) {
  absl::StatusOr<ParsedConfig> parsed =
      path.empty()
          ? ParseConfigText(DefaultConfigText(), kDefaultConfigSourceName)
          : ParseConfigFile(std::string(path));
  if (!parsed.ok()) return parsed.status();
  ApplyOverrides(overrides, &parsed->config, &parsed->locations);
  if (absl::Status s = ValidateConfig(parsed->config, &parsed->locations);
      !s.ok()) {
    return s;
  }
  return std::move(parsed->config);
}

absl::StatusOr<DataplaneConfig> ToDataplaneConfig(const v1::Config& config) {
  if (absl::Status s = ValidateConfig(config); !s.ok()) return s;
  DataplaneConfig out;
  config_internal::ConvertPorts(config, &out);
  out.worker_cores.assign(config.workers().begin(), config.workers().end());
  const absl::flat_hash_map<std::string, uint16_t> index =
      config_internal::PortIndex(config);
  for (const v1::HandlerInstall& handler : config.handlers()) {
    absl::StatusOr<HandlerConfig> h =
        config_internal::ConvertHandler(handler, index);
    if (!h.ok()) return h.status();
    out.handlers.push_back(*std::move(h));
  }
  for (const config_internal::ConfigSection* section :
       config_internal::ConfigSections()) {
    if (absl::Status s = section->Convert(config, &out); !s.ok()) return s;
  }
  out.mbufs = config.runtime().mbufs();
  if (config.runtime().max_regions() != 0) {
    out.max_regions = config.runtime().max_regions();
  }
  if (config.runtime().region_bytes_limit() != 0) {
    out.region_bytes_limit = config.runtime().region_bytes_limit();
  }
  out.burst = static_cast<uint16_t>(
      config.runtime().burst() != 0 ? config.runtime().burst() : kDefaultBurst);
  return out;
}

std::vector<std::string> BuildEalArgs(const v1::Config& config) {
  std::vector<std::string> args = {"spinnicd"};
  std::string lcores = absl::StrCat("0@", config.main_lcore());
  for (int i = 0; i < config.workers_size(); ++i) {
    absl::StrAppend(&lcores, ",", i + 1, "@", config.workers(i));
  }
  args.push_back("--lcores");
  args.push_back(std::move(lcores));
  args.push_back("--main-lcore");
  args.push_back("0");
  args.insert(args.end(), config.eal_args().begin(), config.eal_args().end());
  return args;
}

}  // namespace spinnic
