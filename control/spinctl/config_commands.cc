// spinctl apply, config show: hitless reload (docs/reload.md).
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "control/spinctl/command.h"

namespace spinnic::spinctl {
namespace {

int RunApply(Env& env, const ParsedArgs& args) {
  const std::string& path = args.positional[0];
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return env.UsageError(text.status());
  ControlClient* client = env.Client();
  if (client == nullptr) return env.connect_exit();
  v1::ApplyConfigRequest request;
  request.set_config_text(*std::move(text));
  request.set_dry_run(args.Bool("dry-run") || args.Bool("dry_run"));
  request.set_source_name(path == "-" ? "<stdin>" : path);
  absl::StatusOr<v1::ApplyConfigResponse> response =
      client->ApplyConfig(request);
  if (!response.ok()) return env.ServerError(response.status());
  if (env.json()) {
    env.PrintJson(*response);
    return kExitOk;
  }
  for (const v1::ConfigChange& change : response->changes()) {
    std::printf("%s\n", change.line().c_str());
  }
  const int n = response->changes_size();
  if (n == 0) {
    std::printf("no changes: the running state is what %s says\n",
                path.c_str());
  } else if (response->applied()) {
    std::printf("applied %d change(s)\n", n);
  } else {
    std::printf("dry run: %d change(s), nothing applied\n", n);
  }
  return kExitOk;
}

int RunConfig(Env& env, const ParsedArgs& args) {
  if (args.positional[0] != "show") {
    return env.UsageError(absl::StrCat("unknown config subcommand '",
                                       args.positional[0],
                                       "'; the one there is: show"));
  }
  ControlClient* client = env.Client();
  if (client == nullptr) return env.connect_exit();
  absl::StatusOr<v1::GetRunningConfigResponse> response =
      client->GetRunningConfig();
  if (!response.ok()) return env.ServerError(response.status());
  if (env.json()) {
    env.PrintJson(response->config());
    return kExitOk;
  }
  std::fputs(response->config_text().c_str(), stdout);
  return kExitOk;
}

}  // namespace

std::vector<Command> ConfigCommands() {
  return {
      {"apply",
       "FILE",
       1,
       1,
       "bring the running handlers and DiAD peers to what a config file says, "
       "without losing a frame; prints the changes",
       {
           {"dry-run", FlagType::kBool, "", "print the changes, apply nothing"},
           {"dry_run", FlagType::kBool, "", "the same as --dry-run"},
       },
       "FILE is a spinnicd config (\"-\": stdin). One line per change:\n"
       "  + handler foo (kind count)\n"
       "  ~ handler bar: params changed\n"
       "  - peer c\n"
       "Changes to anything else (ports, workers, addresses, EAL arguments,\n"
       "runtime, the diad and roce sections) are refused as a whole, naming\n"
       "each field; a change the dataplane refuses rolls back the ones before\n"
       "it. Either way nothing changes and the exit code is 1.\n"
       "docs/reload.md.\n",
       &RunApply},
      {"config",
       "show",
       1,
       1,
       "print the running config (the start config with the handlers and "
       "peers in effect now), in the config file's format",
       {},
       "Apply its output later (spinctl apply) to come back to this state.\n"
       "--json prints the spinnic.v1.Config as JSON.\n",
       &RunConfig},
  };
}

}  // namespace spinnic::spinctl
