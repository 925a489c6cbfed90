// spinctl: the command line of spinnicd's control API (docs/spinctl.md).
//
//   spinctl [GLOBAL FLAGS] COMMAND [ARGS] [FLAGS]
//
// Global flags may also follow the command, except where the command has a
// flag of the same name (events --timeout_ms): there the command's wins.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "control/client/control_client.h"
#include "control/spinctl/args.h"
#include "control/spinctl/command.h"
#include "grpc/support/log.h"

namespace spinnic::spinctl {
namespace {

const std::vector<FlagSpec>& GlobalFlags() {
  static const auto* flags = new std::vector<FlagSpec>{
      {"socket", FlagType::kString, "PATH",
       "spinnicd's Unix socket (default /run/spinnic/spinnicd.sock)"},
      {"target", FlagType::kString, "HOST:PORT",
       "spinnicd's TCP listener (--control_tcp), over TLS"},
      {"tls_ca", FlagType::kString, "FILE",
       "PEM CA that signed the server's certificate (default: system roots)"},
      {"tls_cert", FlagType::kString, "FILE",
       "PEM client certificate, for mutual TLS (with --tls_key)"},
      {"tls_key", FlagType::kString, "FILE", "PEM key of --tls_cert"},
      {"tls_server_name", FlagType::kString, "NAME",
       "name to expect in the server's certificate (default: the host)"},
      {"insecure", FlagType::kBool, "",
       "plain-text TCP (only to a loopback listener started insecure)"},
      {"timeout_ms", FlagType::kUint, "N",
       "connect and per-call deadline (default 10000)", 24ull * 3600 * 1000},
      {"json", FlagType::kBool, "",
       "print responses as JSON, one document per line"},
      {"targets", FlagType::kString, "FILE",
       "fleet mode: run install, replace or remove on every appliance FILE "
       "names, in waves ('spinctl --targets FILE install --help')"},
      {"help", FlagType::kBool, "", "print usage"},
      {"version", FlagType::kBool, "", "print spinctl's version"},
  };
  return *flags;
}

std::vector<Command> AllCommands() {
  std::vector<Command> all;
  for (auto* group :
       {&HandlerCommands, &RegionCommands, &DiadCommands, &RoceCommands,
        &StatsCommands, &ConfigCommands, &LogCommands, &CaptureCommands,
        &DecodeCommands, &BpfCommands}) {
    for (Command& c : group()) all.push_back(std::move(c));
  }
  return all;
}

const Command* FindCommand(const std::vector<Command>& commands,
                           absl::string_view name) {
  for (const Command& c : commands) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

// Appends `text` word-wrapped to 80 columns, continuation lines indented to
// `column` (the first line is assumed to be there already).
void AppendWrapped(std::string* out, absl::string_view text, size_t column) {
  size_t used = column;
  bool first = true;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (!first && used + 1 + word.size() > 80) {
      absl::StrAppend(out, "\n", std::string(column, ' '));
      used = column;
      first = true;
    }
    if (!first) {
      out->push_back(' ');
      ++used;
    }
    absl::StrAppend(out, word);
    used += word.size();
    first = false;
  }
  out->push_back('\n');
}

// "  NAME<padding>" to `column`, or on a line of its own when longer.
void AppendLeft(std::string* out, std::string left, size_t column) {
  if (left.size() + 1 > column) {
    absl::StrAppend(out, left, "\n", std::string(column, ' '));
  } else {
    left.resize(column, ' ');
    absl::StrAppend(out, left);
  }
}

constexpr size_t kHelpColumn = 30;
constexpr size_t kCommandColumn = 24;

std::string FlagLines(const std::vector<FlagSpec>& flags) {
  std::string out;
  for (const FlagSpec& f : flags) {
    std::string left = absl::StrCat("  --", f.name);
    if (!f.value_name.empty()) absl::StrAppend(&left, " ", f.value_name);
    if (f.type == FlagType::kList) absl::StrAppend(&left, " ...");
    AppendLeft(&out, left, kHelpColumn);
    AppendWrapped(&out, f.help, kHelpColumn);
  }
  return out;
}

void PrintUsage(std::FILE* out, const std::vector<Command>& commands) {
  std::string text =
      "usage: spinctl [GLOBAL FLAGS] COMMAND [ARGS] [FLAGS]\n"
      "\n"
      "Drives a running spinnicd over its gRPC control API.\n"
      "\n"
      "commands:\n";
  for (const Command& c : commands) {
    std::string left = absl::StrCat("  ", c.name);
    if (!c.arguments.empty()) absl::StrAppend(&left, " ", c.arguments);
    AppendLeft(&text, left, kCommandColumn);
    AppendWrapped(&text, c.summary, kCommandColumn);
  }
  AppendLeft(&text, "  help [COMMAND]", kCommandColumn);
  AppendWrapped(&text, "this text, or a command's flags", kCommandColumn);
  absl::StrAppend(&text, "\nglobal flags:\n", FlagLines(GlobalFlags()),
                  "\nexit codes: 0 ok, 1 the server answered with an error, "
                  "2 usage error,\n3 cannot connect. 'spinctl COMMAND --help' "
                  "shows a command's flags.\n");
  std::fputs(text.c_str(), out);
}

void PrintCommandUsage(std::FILE* out, const Command& c) {
  std::string text = absl::StrCat("usage: spinctl ", c.name);
  if (!c.arguments.empty()) absl::StrAppend(&text, " ", c.arguments);
  if (!c.flags.empty()) absl::StrAppend(&text, " [FLAGS]");
  absl::StrAppend(&text, "\n\n", c.summary, "\n");
  if (!c.flags.empty()) {
    absl::StrAppend(&text, "\nflags:\n", FlagLines(c.flags));
  }
  if (!c.details.empty()) absl::StrAppend(&text, "\n", c.details);
  absl::StrAppend(&text,
                  "\nglobal flags (spinctl help): --socket, --target, "
                  "--tls_ca, --tls_cert, --tls_key,\n--tls_server_name, "
                  "--insecure, --timeout_ms, --json\n");
  std::fputs(text.c_str(), out);
}

int TopUsageError(absl::string_view message) {
  std::fprintf(stderr, "spinctl: %s\nrun 'spinctl help' for usage\n",
               std::string(message).c_str());
  return kExitUsage;
}

int Main(const std::vector<std::string>& argv) {
  std::vector<Command> commands = AllCommands();
  ParsedArgs global;
  size_t consumed = 0;
  if (absl::Status s =
          ParseFlags(argv, GlobalFlags(),
                     /*stop_at_positional=*/true, &consumed, &global);
      !s.ok()) {
    return TopUsageError(s.message());
  }
  if (global.Bool("version")) {
    std::printf("spinctl %s\n", SPINNIC_VERSION);
    return kExitOk;
  }
  if (global.Bool("help")) {
    PrintUsage(stdout, commands);
    return kExitOk;
  }
  if (consumed == argv.size()) {
    PrintUsage(stderr, commands);
    return kExitUsage;
  }
  const std::string& name = argv[consumed];
  absl::Span<const std::string> rest =
      absl::MakeConstSpan(argv).subspan(consumed + 1);
  if (name == "help") {
    if (rest.empty()) {
      PrintUsage(stdout, commands);
      return kExitOk;
    }
    const Command* command = FindCommand(commands, rest[0]);
    if (command == nullptr) {
      return TopUsageError(absl::StrCat("unknown command '", rest[0], "'"));
    }
    PrintCommandUsage(stdout, *command);
    return kExitOk;
  }
  // Fleet mode (fleet_command.cc): commands of the same names that take the
  // targets file as their own --targets flag.
  const bool fleet = global.Has("targets");
  std::vector<std::string> fleet_rest;
  if (fleet) {
    commands = FleetCommands();
    fleet_rest = {"--targets", global.String("targets")};
    fleet_rest.insert(fleet_rest.end(), rest.begin(), rest.end());
    rest = fleet_rest;
  }
  const Command* command = FindCommand(commands, name);
  if (command == nullptr) {
    return TopUsageError(
        fleet ? absl::StrCat("'", name,
                             "' has no fleet mode: --targets works with "
                             "install, replace, remove and apply")
              : absl::StrCat("unknown command '", name, "'"));
  }

  // The command's flags first: where a name is in both, the command's wins.
  std::vector<FlagSpec> specs = command->flags;
  auto is_command_flag = [command](absl::string_view flag) {
    for (const FlagSpec& f : command->flags) {
      if (f.name == flag) return true;
    }
    return false;
  };
  for (const FlagSpec& f : GlobalFlags()) {
    if (!is_command_flag(f.name)) specs.push_back(f);
  }
  ParsedArgs args;
  Env usage_env(name, ClientOptions(), false);
  if (absl::Status s =
          ParseFlags(rest, specs, /*stop_at_positional=*/false, nullptr, &args);
      !s.ok()) {
    return usage_env.UsageError(s);
  }
  // A global flag after the command counts as if it came before it.
  auto global_flags = [&](absl::string_view flag) -> const ParsedArgs& {
    return !is_command_flag(flag) && args.Has(flag) ? args : global;
  };
  if (global_flags("help").Bool("help")) {
    PrintCommandUsage(stdout, *command);
    return kExitOk;
  }
  if (args.positional.size() < command->min_positional ||
      args.positional.size() > command->max_positional) {
    return usage_env.UsageError(
        command->arguments.empty()
            ? absl::StrCat("takes no arguments, got '", args.positional[0], "'")
            : absl::StrCat("expects ", command->arguments));
  }

  ClientOptions options;
  bool has_socket = global_flags("socket").Has("socket");
  bool has_target = global_flags("target").Has("target");
  if (!fleet && args.Has("targets")) {
    return usage_env.UsageError(
        "--targets goes before the command: spinctl --targets FILE " + name +
        " ...");
  }
  if (fleet && (has_socket || has_target)) {
    return usage_env.UsageError(
        "--socket and --target do not combine with --targets: the targets "
        "file gives each appliance's address");
  }
  if (has_socket && has_target) {
    return usage_env.UsageError(
        "--socket and --target exclude each other: pick the Unix socket or "
        "the TCP listener");
  }
  std::string socket =
      global_flags("socket").String("socket", kDefaultControlSocket);
  options.target = has_target ? global_flags("target").String("target")
                   : absl::StartsWith(socket, "unix:")
                       ? socket
                       : absl::StrCat("unix:", socket);
  options.tls_ca_file = global_flags("tls_ca").String("tls_ca");
  options.tls_cert_file = global_flags("tls_cert").String("tls_cert");
  options.tls_key_file = global_flags("tls_key").String("tls_key");
  options.tls_server_name =
      global_flags("tls_server_name").String("tls_server_name");
  options.insecure = global_flags("insecure").Bool("insecure");
  uint64_t timeout_ms = global_flags("timeout_ms").Uint("timeout_ms", 10000);
  if (timeout_ms == 0) {
    return usage_env.UsageError("--timeout_ms must be at least 1");
  }
  options.timeout = absl::Milliseconds(timeout_ms);
  Env env(name, std::move(options), global_flags("json").Bool("json"));
  return command->run(env, args);
}

}  // namespace
}  // namespace spinnic::spinctl

int main(int argc, char** argv) {
  // gRPC's own log lines (a failed TLS handshake, say) repeat what the
  // status spinctl prints already says; GRPC_VERBOSITY still brings them back
  // for debugging.
  if (std::getenv("GRPC_VERBOSITY") == nullptr) {
    gpr_set_log_function([](gpr_log_func_args*) {});
  }
  std::vector<std::string> args(argv + 1, argv + argc);
  return spinnic::spinctl::Main(args);
}
