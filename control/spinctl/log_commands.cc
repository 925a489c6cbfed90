// spinctl log: lists log levels, or sets one (docs/logs.md).
#include <cstdio>
#include <string>
#include <vector>

#include "control/spinctl/command.h"
#include "control/spinctl/table.h"

namespace spinnic::spinctl {
namespace {

int RunList(Env& env, const ParsedArgs& args) {
  ControlClient* client = env.Client();
  if (client == nullptr) return env.connect_exit();
  absl::StatusOr<v1::ListLogLevelsResponse> levels =
      client->ListLogLevels(args.Bool("all"));
  if (!levels.ok()) return env.ServerError(levels.status());
  if (env.json()) {
    env.PrintJson(*levels);
    return kExitOk;
  }
  Table table({"COMPONENT", "LEVEL"});
  table.AddRow({"global", levels->global_level()});
  for (const v1::LogTypeLevel& type : levels->levels()) {
    table.AddRow({type.name(), type.level()});
  }
  table.Print(stdout);
  return kExitOk;
}

int RunLog(Env& env, const ParsedArgs& args) {
  if (args.positional.size() == 1) {
    return env.UsageError(
        "give COMPONENT and LEVEL to set a level, or neither to list");
  }
  if (args.positional.empty()) return RunList(env, args);
  ControlClient* client = env.Client();
  if (client == nullptr) return env.connect_exit();
  absl::StatusOr<v1::SetLogLevelResponse> changed =
      client->SetLogLevel(args.positional[0], args.positional[1]);
  if (!changed.ok()) return env.ServerError(changed.status());
  if (env.json()) {
    env.PrintJson(*changed);
    return kExitOk;
  }
  for (const v1::LogTypeLevel& type : changed->changed()) {
    std::printf("%s: %s\n", type.name().c_str(), type.level().c_str());
  }
  return kExitOk;
}

}  // namespace

std::vector<Command> LogCommands() {
  return {
      {"log",
       "[COMPONENT LEVEL]",
       0,
       2,
       "list log levels, or set a component's level",
       {
           {"all", FlagType::kBool, "",
            "list DPDK's own log types too (lib.*, pmd.*, ...)"},
       },
       "COMPONENT: dataplane, diad, roce, control, impair (spinnic.*), "
       "global, or a DPDK log type by name or glob (pmd.net.memif, "
       "pmd.net.*). LEVEL: emerg, alert, crit, err, warning, notice, info, "
       "debug, or 1..8.\n"
       "examples:\n"
       "  spinctl log\n"
       "  spinctl log roce debug\n"
       "  spinctl log 'pmd.net.*' notice\n",
       RunLog},
  };
}

}  // namespace spinnic::spinctl
