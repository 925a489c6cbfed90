// spinctl --targets FILE install|replace|remove: one handler change rolled
// out to many appliances in waves (fleet.h), with a per-appliance report.
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "control/spinctl/command.h"
#include "control/spinctl/fleet.h"
#include "control/spinctl/fleet_changes.h"

namespace spinnic::spinctl {
namespace {

constexpr uint64_t kMaxTargets = 1u << 20;

std::vector<FlagSpec> RolloutFlags() {
  return {
      {"targets", FlagType::kString, "FILE",
       "the appliances: text-format spinnic.v1.FleetTargets (give it before "
       "the command: spinctl --targets FILE ...)"},
      {"canary", FlagType::kUint, "N",
       "a first wave of the first N appliances; the rest follow only if all "
       "of them succeed (default 0: no canary wave)",
       kMaxTargets},
      {"wave_size", FlagType::kUint, "M",
       "the appliances after the canary wave go M at a time (default 0: all "
       "at once)",
       kMaxTargets},
      {"parallel", FlagType::kUint, "N",
       "appliances changed at once within a wave, and rolled back at once "
       "(default 16)",
       1024},
  };
}

std::vector<FlagSpec> WithRolloutFlags(std::vector<FlagSpec> flags) {
  for (FlagSpec& f : RolloutFlags()) flags.push_back(f);
  return flags;
}

int RunRollout(Env& env, const ParsedArgs& args, absl::string_view operation,
               const ChangeFactory& make_change) {
  std::string path = args.String("targets");
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return env.UsageError(text.status());
  absl::StatusOr<v1::FleetTargets> targets = ParseFleetTargets(path, *text);
  if (!targets.ok()) return env.UsageError(targets.status());
  RolloutOptions options;
  options.canary = args.Uint("canary");
  options.wave_size = args.Uint("wave_size");
  options.parallel = args.Uint("parallel", 16);
  if (options.parallel == 0) {
    return env.UsageError("--parallel must be at least 1");
  }
  v1::FleetReport report = Rollout(*targets, options, operation, make_change);
  if (env.json()) {
    env.PrintJson(report);
  } else {
    PrintFleetReport(report, stdout);
  }
  return report.ok() ? kExitOk : kExitServerError;
}

int RunFleetInstall(Env& env, const ParsedArgs& args) {
  absl::StatusOr<v1::InstallHandlerRequest> request = InstallRequest(args);
  if (!request.ok()) return env.UsageError(request.status());
  return RunRollout(env, args, "install",
                    InstallChanges(*std::move(request), env.options()));
}

int RunFleetReplace(Env& env, const ParsedArgs& args) {
  absl::StatusOr<v1::InstallHandlerRequest> request = InstallRequest(args);
  if (!request.ok()) return env.UsageError(request.status());
  return RunRollout(env, args, "replace",
                    ReplaceChanges(*std::move(request), env.options()));
}

int RunFleetRemove(Env& env, const ParsedArgs& args) {
  return RunRollout(env, args, "remove",
                    RemoveChanges(args.positional[0], env.options()));
}

constexpr absl::string_view kRolloutDetails =
    "Waves: with --canary N the first N appliances of the targets file, then\n"
    "the rest in file order, --wave_size M at a time (0: all at once). The\n"
    "first failure stops the rollout: no further appliance is started, and\n"
    "every appliance already changed is rolled back (install: removed again;\n"
    "replace: the previous spec installed again, or removed if there was\n"
    "none; remove: reinstalled from the spec ListHandlers gave before). The\n"
    "table (or --json, a spinnic.v1.FleetReport) has a row per appliance:\n"
    "TARGET WAVE RESULT (ok, failed, rolled-back, rollback-failed, not-run)\n"
    "DETAIL MS. Exit 0 when every appliance is ok, else 1. --timeout_ms is\n"
    "each appliance's connect and per-call deadline; --tls_* and --insecure\n"
    "apply to TCP targets that set none of their own.\n"
    "\n"
    "targets file (docs/spinctl.md, \"Fleet rollout\"):\n"
    "  targets { name: \"node-a\" address: \"unix:/run/spinnic/a.sock\" }\n"
    "  targets { name: \"node-b\" address: \"10.0.0.7:50051\" tls_ca: "
    "\"ca.pem\" }\n";

}  // namespace

std::vector<Command> FleetCommands() {
  return {
      {"install", "", 0, 0,
       "install a handler on every appliance of --targets, in waves",
       WithRolloutFlags(InstallFlags()), kRolloutDetails, RunFleetInstall},
      {"replace", "", 0, 0,
       "replace (or install) a handler on every appliance, in waves",
       WithRolloutFlags(InstallFlags()), kRolloutDetails, RunFleetReplace},
      {"remove", "NAME", 1, 1,
       "remove a handler from every appliance, in waves", RolloutFlags(),
       kRolloutDetails, RunFleetRemove},
  };
}

}  // namespace spinnic::spinctl
