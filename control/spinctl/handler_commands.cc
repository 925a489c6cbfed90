// spinctl info, kinds, handlers, install, remove, state, health.
#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "control/spinctl/command.h"
#include "control/spinctl/table.h"

namespace spinnic::spinctl {
namespace {

// PORT_ROLE_WIRE -> wire.
std::string EnumShortName(const std::string& name, absl::string_view prefix) {
  return absl::AsciiStrToLower(absl::StripPrefix(name, prefix));
}

std::string Or(std::string value, absl::string_view fallback) {
  return value.empty() ? std::string(fallback) : value;
}

int RunInfo(Env& env, const ParsedArgs&) {
  ControlClient* client = env.Client();
  if (client == nullptr) return env.connect_exit();
  absl::StatusOr<v1::GetInfoResponse> info = client->GetInfo();
  if (!info.ok()) return env.ServerError(info.status());
  if (env.json()) {
    env.PrintJson(*info);
    return kExitOk;
  }
  KeyValues fields;
  fields.Add("version", info->version());
  fields.Add("dpdk_version", info->dpdk_version());
  fields.Add("max_handlers", absl::StrCat(info->max_handlers()));
  fields.Add("max_state_size", absl::StrCat(info->max_state_size()));
  fields.Add("max_region_bytes", absl::StrCat(info->max_region_bytes()));
  fields.Add("checksum", info->checksum_algorithm());
  const v1::Addresses& addresses = info->addresses();
  fields.Add("mac", Or(addresses.mac(), "(first wire port's)"));
  fields.Add("ipv4", Or(absl::StrJoin(addresses.ipv4(), ", "), "-"));
  fields.Add("ipv6", Or(absl::StrJoin(addresses.ipv6(), ", "), "-"));
  fields.Add("diad_node", Or(addresses.diad_node(), "-"));
  fields.Print(stdout);

  std::printf("\nports:\n");
  Table ports({"ID", "NAME", "ROLE", "DEVICE", "QUEUES", "MTU", "LINK",
               "SPEED_MBPS", "PAIRED_WITH"});
  for (const v1::PortInfo& p : info->ports()) {
    ports.AddRow(
        {absl::StrCat(p.id()), p.name(),
         EnumShortName(v1::PortRole_Name(p.role()), "PORT_ROLE_"), p.device(),
         absl::StrCat(p.queues()), absl::StrCat(p.mtu()),
         p.link_up() ? "up" : "down",
         p.link_speed_mbps() == 0 ? "-" : absl::StrCat(p.link_speed_mbps()),
         Or(p.paired_with(), "-")});
  }
  ports.Print(stdout, "  ");

  std::printf("\nhpus:\n");
  Table hpus({"INDEX", "LCORE", "CPU"});
  for (const v1::HpuInfo& h : info->hpus()) {
    hpus.AddRow({absl::StrCat(h.index()), absl::StrCat(h.lcore()),
                 absl::StrCat(h.cpu())});
  }
  hpus.Print(stdout, "  ");

  const v1::RoceInfo& r = info->roce();
  std::printf("\nroce:%s\n", r.enabled() ? "" : " off");
  if (r.enabled()) {
    KeyValues roce;
    roce.Add("addresses", absl::StrJoin(r.addresses(), ", "));
    roce.Add("mac", r.mac());
    roce.Add("port", r.port());
    roce.Add("udp_port", absl::StrCat(r.udp_port()));
    roce.Add("path_mtu", absl::StrCat(r.path_mtu()));
    roce.Add("max_qps", absl::StrCat(r.max_qps()));
    roce.Add("qp_hpus", absl::StrCat(r.qp_hpus()));
    roce.Add("max_rd_atomic", absl::StrCat(r.max_rd_atomic()));
    roce.Add("icrc", r.icrc_algorithm());
    roce.Add("listen_ports",
             r.listen_ports().empty()
                 ? std::string("- (queue pairs only through qp-create)")
                 : absl::StrJoin(r.listen_ports(), ", "));
    std::vector<std::string> services;
    for (const v1::RoceServiceInfo& service : r.services()) {
      services.push_back(absl::StrCat(service.name(), ":", service.port()));
    }
    if (!services.empty()) roce.Add("services", absl::StrJoin(services, ", "));
    roce.Print(stdout, "  ");
  }

  const v1::DiadInfo& d = info->diad();
  std::printf("\ndiad:%s\n", d.enabled() ? "" : " off");
  if (!d.enabled()) return kExitOk;
  KeyValues diad;
  diad.Add("node", d.node());
  diad.Add("mac", d.mac());
  diad.Add("udp_port", absl::StrCat(d.udp_port()));
  diad.Add("port", d.port());
  diad.Add("path_mtu", absl::StrCat(d.path_mtu(), " (", d.max_payload(),
                                    " payload bytes per packet)"));
  diad.Add("channels", absl::StrCat(d.channels(), " (served by HPUs ",
                                    absl::StrJoin(d.channel_hpus(), " "), ")"));
  diad.Add("max_peers", absl::StrCat(d.max_peers()));
  diad.Add("max_message_bytes", absl::StrCat(d.max_message_bytes()));
  diad.Add("window", absl::StrCat(d.window_packets(), " packets, ",
                                  d.window_bytes(), " bytes"));
  diad.Add("max_transactions", absl::StrCat(d.max_transactions()));
  diad.Add(
      "rto",
      absl::StrCat(d.rto_us(), " us first, doubling to ", d.rto_max_us(), " us",
                   d.adaptive_rto()
                       ? absl::StrCat(", adaptive from ", d.rto_min_us(), " us")
                       : ", fixed"));
  diad.Add("max_retries", absl::StrCat(d.max_retries()));
  diad.Add("down_after", absl::StrCat(d.down_after_us(), " us"));
  diad.Add("txn_deadline", absl::StrCat(d.txn_deadline_ms(), " ms"));
  diad.Print(stdout, "  ");
  return kExitOk;
}

int RunKinds(Env& env, const ParsedArgs&) {
  ControlClient* client = env.Client();
  if (client == nullptr) return env.connect_exit();
  absl::StatusOr<v1::ListHandlerKindsResponse> kinds =
      client->ListHandlerKinds();
  if (!kinds.ok()) return env.ServerError(kinds.status());
  if (env.json()) {
    env.PrintJson(*kinds);
    return kExitOk;
  }
  bool first = true;
  for (const v1::HandlerKindInfo& kind : kinds->kinds()) {
    if (!first) std::printf("\n");
    first = false;
    std::vector<std::string> parts;
    if (kind.has_header()) parts.push_back("header");
    if (kind.has_payload()) parts.push_back("payload");
    if (kind.has_completion()) parts.push_back("completion");
    std::printf("%s: %s\n", kind.name().c_str(), kind.description().c_str());
    std::printf("  handlers: %s; state >= %u bytes\n",
                parts.empty() ? "none" : absl::StrJoin(parts, ", ").c_str(),
                kind.min_state_size());
    if (kind.params().empty()) {
      std::printf("  no parameters\n");
      continue;
    }
    Table params(
        {"PARAM", "TYPE", "REQUIRED", "DEFAULT", "MIN", "MAX", "HELP"});
    for (const v1::ParamSchema& p : kind.params()) {
      bool ranged = p.type() == v1::ParamSchema::TYPE_UINT &&
                    (p.min() != 0 || p.max() != 0);
      params.AddRow(
          {p.name(),
           EnumShortName(v1::ParamSchema_Type_Name(p.type()), "TYPE_"),
           p.required() ? "yes" : "no",
           p.required() ? "-" : absl::StrCat("'", p.default_value(), "'"),
           ranged ? absl::StrCat(p.min()) : "-",
           ranged ? absl::StrCat(p.max()) : "-", p.help()});
    }
    params.Print(stdout, "  ");
  }
  return kExitOk;
}

std::string ParamsCell(const v1::HandlerInstall& handler) {
  std::vector<std::string> params;
  // A bpf handler's `program` is its whole ELF object in hex: the table
  // shows its start and length (--json has all of it).
  constexpr size_t kMaxValue = 32;
  for (const auto& [key, value] : handler.params()) {
    if (value.size() > kMaxValue) {
      params.push_back(absl::StrCat(key, "=", value.substr(0, 16), "...(",
                                    value.size(), " chars)"));
    } else {
      params.push_back(absl::StrCat(key, "=", value));
    }
  }
  // Protobuf maps have no order; a table should not reshuffle between runs.
  std::sort(params.begin(), params.end());
  return Or(absl::StrJoin(params, ","), "-");
}

int RunHandlers(Env& env, const ParsedArgs&) {
  ControlClient* client = env.Client();
  if (client == nullptr) return env.connect_exit();
  absl::StatusOr<v1::ListHandlersResponse> handlers = client->ListHandlers();
  if (!handlers.ok()) return env.ServerError(handlers.status());
  if (env.json()) {
    env.PrintJson(*handlers);
    return kExitOk;
  }
  // Joined by name rather than by position, so that a list that lacks an
  // install record still prints its counters.
  absl::flat_hash_map<std::string, const v1::HandlerInstall*> installs;
  for (const v1::HandlerInstall& h : handlers->handlers()) {
    installs[h.name()] = &h;
  }
  std::vector<std::string> headers = {"ID",   "NAME",  "KIND",
                                      "PRIO", "MATCH", "PARAMS"};
  for (std::string& h : HandlerCounterHeaders()) headers.push_back(h);
  // RUNTIME (HandlerStats.runtime) only when some handler describes how it
  // runs (bpf: JIT or interpreter), so that native-only tables stay as they
  // were.
  const bool runtime = std::any_of(
      handlers->stats().begin(), handlers->stats().end(),
      [](const v1::HandlerStats& s) { return !s.runtime().empty(); });
  if (runtime) headers.push_back("RUNTIME");
  Table table(std::move(headers));
  for (const v1::HandlerStats& s : handlers->stats()) {
    auto it = installs.find(s.name());
    const v1::HandlerInstall* install =
        it == installs.end() ? nullptr : it->second;
    std::vector<std::string> row = {
        absl::StrCat(s.id()),
        s.name(),
        s.kind(),
        install ? absl::StrCat(install->priority()) : "-",
        install ? Or(install->match().ShortDebugString(), "*") : "-",
        install ? ParamsCell(*install) : "-"};
    for (std::string& cell : HandlerCounterCells(s)) row.push_back(cell);
    if (runtime) row.push_back(Or(s.runtime(), "-"));
    table.AddRow(std::move(row));
  }
  if (table.empty()) {
    std::printf("no handlers installed\n");
    return kExitOk;
  }
  table.Print(stdout);
  return kExitOk;
}

}  // namespace

absl::StatusOr<v1::InstallHandlerRequest> InstallRequest(
    const ParsedArgs& args) {
  v1::InstallHandlerRequest request;
  v1::HandlerInstall* handler = request.mutable_handler();
  if (args.Has("handler_file")) {
    std::string path = args.String("handler_file");
    absl::StatusOr<std::string> text = ReadFile(path);
    if (!text.ok()) return text.status();
    if (absl::Status s = ParseTextProto(path, *text, handler); !s.ok()) {
      return s;
    }
  }
  if (args.Has("name")) handler->set_name(args.String("name"));
  if (args.Has("kind")) handler->set_kind(args.String("kind"));
  if (args.Has("bpf")) {
    // The object goes as the kind's `program` parameter; spinnicd checks it.
    absl::StatusOr<std::string> object = ReadFile(args.String("bpf"));
    if (!object.ok()) return object.status();
    if (handler->kind().empty()) handler->set_kind("bpf");
    (*handler->mutable_params())["program"] = absl::BytesToHexString(*object);
  }
  for (const std::string& param : args.List("param")) {
    size_t eq = param.find('=');
    if (eq == std::string::npos || eq == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--param '", param, "': write --param KEY=VALUE"));
    }
    (*handler->mutable_params())[param.substr(0, eq)] = param.substr(eq + 1);
  }
  if (args.Has("state_size")) {
    handler->set_state_size(static_cast<uint32_t>(args.Uint("state_size")));
  }
  if (args.Has("initial_state")) {
    absl::StatusOr<std::string> bytes =
        ParseHex("--initial_state", args.String("initial_state"));
    if (!bytes.ok()) return bytes.status();
    handler->set_initial_state(*bytes);
  }
  if (args.Has("match")) {
    handler->clear_match();
    if (absl::Status s = ParseTextProto("--match", args.String("match"),
                                        handler->mutable_match());
        !s.ok()) {
      return s;
    }
  }
  // On top of --match, so that the expression needs no textproto quoting.
  if (args.Has("pcap_filter")) {
    handler->mutable_match()->set_pcap_filter(args.String("pcap_filter"));
  }
  if (args.Has("priority")) {
    handler->set_priority(static_cast<uint32_t>(args.Uint("priority")));
  }
  if (args.Has("cycle_budget")) {
    handler->set_cycle_budget(args.Uint("cycle_budget"));
  }
  if (args.Has("disable_after_overruns")) {
    handler->set_disable_after_overruns(
        static_cast<uint32_t>(args.Uint("disable_after_overruns")));
  }
  for (const std::string& bind : args.List("bind")) {
    absl::StatusOr<uint64_t> id = ParseUint("--bind", bind);
    if (!id.ok()) return id.status();
    request.add_bound_regions(*id);
  }
  request.set_replace(args.Bool("replace"));
  // The server validates everything else; these two only make its first
  // complaint a usage error here rather than a round trip.
  if (handler->name().empty()) {
    return absl::InvalidArgumentError(
        "no handler name: pass --name NAME (or name in --handler_file)");
  }
  if (handler->kind().empty()) {
    return absl::InvalidArgumentError(
        "no handler kind: pass --kind KIND (spinctl kinds lists them)");
  }
  return request;
}

namespace {

int RunInstall(Env& env, const ParsedArgs& args) {
  absl::StatusOr<v1::InstallHandlerRequest> request = InstallRequest(args);
  if (!request.ok()) return env.UsageError(request.status());
  ControlClient* client = env.Client();
  if (client == nullptr) return env.connect_exit();
  absl::StatusOr<uint32_t> id = client->InstallHandler(*request);
  if (!id.ok()) return env.ServerError(id.status());
  if (env.json()) {
    v1::InstallHandlerResponse response;
    response.set_id(*id);
    env.PrintJson(response);
    return kExitOk;
  }
  std::printf("id: %u\n", *id);
  return kExitOk;
}

int RunRemove(Env& env, const ParsedArgs& args) {
  ControlClient* client = env.Client();
  if (client == nullptr) return env.connect_exit();
  const std::string& name = args.positional[0];
  if (absl::Status s = client->RemoveHandler(name); !s.ok()) {
    return env.ServerError(s);
  }
  if (env.json()) {
    env.PrintJson(v1::RemoveHandlerResponse());
  } else {
    std::printf("removed handler '%s'\n", name.c_str());
  }
  return kExitOk;
}

int RunState(Env& env, const ParsedArgs& args) {
  ControlClient* client = env.Client();
  if (client == nullptr) return env.connect_exit();
  auto offset = static_cast<uint32_t>(args.Uint("offset"));
  absl::StatusOr<std::string> data = client->ReadHandlerState(
      args.positional[0], offset, static_cast<uint32_t>(args.Uint("length")));
  if (!data.ok()) return env.ServerError(data.status());
  v1::ReadHandlerStateResponse response;
  response.set_data(*data);
  return PrintBytes(env, args, *data, offset, response);
}

int RunHealth(Env& env, const ParsedArgs& args) {
  ControlClient* client = env.Client();
  if (client == nullptr) return env.connect_exit();
  std::string service = args.String("service");
  absl::StatusOr<bool> serving = client->CheckHealth(service);
  if (!serving.ok()) return env.ServerError(serving.status());
  const char* status = *serving ? "SERVING" : "NOT_SERVING";
  if (env.json()) {
    std::printf("{\"status\":\"%s\"}\n", status);
  } else {
    std::printf("%s%s%s\n", service.empty() ? "" : service.c_str(),
                service.empty() ? "" : ": ", status);
  }
  return *serving ? kExitOk : kExitServerError;
}

constexpr uint64_t kMaxU32 = UINT32_MAX;

}  // namespace

std::vector<FlagSpec> InstallFlags() {
  return {
      {"name", FlagType::kString, "NAME", "unique instance name"},
      {"kind", FlagType::kString, "KIND", "handler kind (spinctl kinds)"},
      {"bpf", FlagType::kString, "FILE.o",
       "an eBPF handler program (clang -target bpf; docs/bpf.md): kind "
       "bpf, the object as its program"},
      {"param", FlagType::kList, "KEY=VALUE",
       "a parameter of the kind; repeat for more"},
      {"state_size", FlagType::kUint, "N",
       "bytes of state memory (default: the kind's minimum)", kMaxU32},
      {"initial_state", FlagType::kString, "HEX",
       "initial state bytes, e.g. 0a0b0c"},
      {"match", FlagType::kString, "TEXTPROTO",
       "spinnic.v1.MatchRule, e.g. 'ip_proto: 1' or "
       "'in_ports: \"wire0\" dst_port { first: 53 }'"},
      {"pcap_filter", FlagType::kString, "EXPR",
       "a tcpdump filter the frame must also pass (the match rule's "
       "pcap_filter), e.g. 'ip6 and udp dst port 4791'"},
      {"priority", FlagType::kUint, "N", "lower is matched first", kMaxU32},
      {"cycle_budget", FlagType::kUint, "N",
       "TSC cycles per invocation; 0: none"},
      {"disable_after_overruns", FlagType::kUint, "N",
       "disable after N over-budget calls; 0: never", kMaxU32},
      {"bind", FlagType::kList, "REGION_ID",
       "a memory region the handler may use; repeat for more"},
      {"handler_file", FlagType::kString, "FILE",
       "text-format spinnic.v1.HandlerInstall; the flags above override "
       "its fields"},
  };
}

namespace {

std::vector<FlagSpec> WithReplaceFlag(std::vector<FlagSpec> flags) {
  // Before --handler_file, as the usage text always listed it.
  flags.insert(flags.end() - 1,
               FlagSpec{"replace", FlagType::kBool, "",
                        "replace the handler of the same name (counters "
                        "restart)"});
  return flags;
}

}  // namespace

std::vector<Command> HandlerCommands() {
  std::vector<FlagSpec> bytes_out = {
      {"out", FlagType::kString, "FILE", "write the raw bytes to FILE"},
      {"raw", FlagType::kBool, "", "write the raw bytes to stdout"},
  };
  std::vector<FlagSpec> state_flags = {
      {"offset", FlagType::kUint, "N", "first byte (default 0)", kMaxU32},
      {"length", FlagType::kUint, "N", "bytes to read (default: to the end)",
       kMaxU32},
  };
  state_flags.insert(state_flags.end(), bytes_out.begin(), bytes_out.end());
  return {
      {"info",
       "",
       0,
       0,
       "version, ports and link state, HPUs, addresses, limits",
       {},
       "",
       RunInfo},
      {"kinds",
       "",
       0,
       0,
       "the compiled-in handler kinds and their parameters",
       {},
       "",
       RunKinds},
      {"handlers",
       "",
       0,
       0,
       "installed handlers with their counters",
       {},
       "",
       RunHandlers},
      {"install", "", 0, 0, "install (or --replace) a handler; prints its id",
       WithReplaceFlag(InstallFlags()),
       "examples:\n"
       "  spinctl install --name count-icmp --kind count --match 'ip_proto: "
       "1'\n"
       "  spinctl install --name f1 --kind filter --param action=drop "
       "--match 'ip_proto: 17 dst_port { first: 9 }'\n"
       "  spinctl install --name roce6 --kind count --pcap_filter 'ip6 and "
       "udp dst port 4791'\n"
       "  spinctl install --handler_file h.textproto --replace\n"
       "  spinctl install --name c --bpf count.o --state_size 16\n",
       RunInstall},
      {"remove",
       "NAME",
       1,
       1,
       "remove an installed handler",
       {},
       "",
       RunRemove},
      {"state", "NAME", 1, 1,
       "a handler's state memory as a hex dump (or raw with --raw/--out)",
       state_flags, "", RunState},
      {"health",
       "",
       0,
       0,
       "grpc.health.v1 check; exit 0 when SERVING, 1 otherwise",
       {{"service", FlagType::kString, "NAME",
         "a service, e.g. spinnic.v1.Spinnic (default: the server)"}},
       "",
       RunHealth},
  };
}

}  // namespace spinnic::spinctl
