// Fuzz target for config loading: the input is the text of a config file
// (text-format spinnic.v1.Config). It runs what spinnicd runs on it --
// ParseConfigText, ValidateConfig with the parse locations, ToDataplaneConfig,
// BuildEalArgs -- and checks, besides "no crash":
//   - every error is INVALID_ARGUMENT with a non-empty message of exactly one
//     line, that names the source ("fuzz:") when it came from the text;
//   - a config is valid with its locations iff it is valid without them;
//   - ToDataplaneConfig succeeds iff ValidateConfig(config, nullptr) does,
//     and then fails the same way, or converts every port, pair, worker and
//     handler into indices that exist;
//   - BuildEalArgs starts with "spinnicd", the derived lcore layout, then
//     eal_args as given.
// Handler kinds register by static initialisation: the binary links the
// built-in handler library. Seeds: tests/fuzz/corpus/config/ (the configs of
// deploy/configs/ plus small valid and broken ones).

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "control/config_loader.h"

namespace spinnic {
namespace {

#define FUZZ_CHECK(cond)                                                    \
  do {                                                                      \
    if (!(cond)) {                                                          \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
                   #cond);                                                  \
      std::abort();                                                         \
    }                                                                       \
  } while (0)

constexpr absl::string_view kSource = "fuzz";

// Prints the offending message before failing, so that a crash report says
// which error broke the rule.
void CheckError(const absl::Status& status, bool from_text) {
  const absl::string_view message = status.message();
  const bool ok = status.code() == absl::StatusCode::kInvalidArgument &&
                  !message.empty() && !absl::StrContains(message, '\n') &&
                  (!from_text || absl::StartsWith(message, "fuzz:"));
  if (!ok) {
    std::fprintf(stderr, "bad error (code %d, from_text %d): [%.*s]\n",
                 static_cast<int>(status.code()), from_text ? 1 : 0,
                 static_cast<int>(message.size()), message.data());
  }
  FUZZ_CHECK(ok);
}

void CheckEalArgs(const v1::Config& config) {
  const std::vector<std::string> args = BuildEalArgs(config);
  FUZZ_CHECK(!args.empty() && args[0] == "spinnicd");
  FUZZ_CHECK(args.size() == 5u + static_cast<size_t>(config.eal_args_size()));
  FUZZ_CHECK(args[1] == "--lcores" && args[3] == "--main-lcore" &&
             args[4] == "0");
  FUZZ_CHECK(absl::StartsWith(args[2], "0@"));
  for (int i = 0; i < config.eal_args_size(); ++i) {
    FUZZ_CHECK(args[5 + i] == config.eal_args(i));
  }
}

void CheckConversion(const v1::Config& config) {
  const absl::Status valid = ValidateConfig(config, nullptr);
  const absl::StatusOr<DataplaneConfig> converted = ToDataplaneConfig(config);
  FUZZ_CHECK(converted.ok() == valid.ok());
  if (!valid.ok()) {
    CheckError(valid, /*from_text=*/false);
    FUZZ_CHECK(converted.status() == valid);
    return;
  }
  const DataplaneConfig& out = *converted;
  FUZZ_CHECK(out.ports.size() == static_cast<size_t>(config.ports_size()));
  FUZZ_CHECK(out.port_pairs.size() ==
             static_cast<size_t>(config.port_pairs_size()));
  for (const auto& [a, b] : out.port_pairs) {
    FUZZ_CHECK(a < out.ports.size() && b < out.ports.size() && a != b);
  }
  FUZZ_CHECK(out.worker_cores.size() ==
             static_cast<size_t>(config.workers_size()));
  FUZZ_CHECK(out.handlers.size() ==
             static_cast<size_t>(config.handlers_size()));
  for (const HandlerConfig& handler : out.handlers) {
    if (out.ports.size() < 64) {
      FUZZ_CHECK((handler.match.in_port_mask >> out.ports.size()) == 0 ||
                 handler.match.in_port_mask == MatchRule::kAllPorts);
    }
  }
  FUZZ_CHECK(out.burst >= 1 && out.burst <= kMaxBurst);
}

}  // namespace
}  // namespace spinnic

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spinnic;  // NOLINT(build/namespaces): entry point only
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<ParsedConfig> parsed = ParseConfigText(text, kSource);
  if (!parsed.ok()) {
    CheckError(parsed.status(), /*from_text=*/true);
    return 0;
  }
  const absl::Status with_locations =
      ValidateConfig(parsed->config, &parsed->locations);
  if (!with_locations.ok()) CheckError(with_locations, /*from_text=*/true);
  FUZZ_CHECK(with_locations.ok() == ValidateConfig(parsed->config).ok());
  CheckConversion(parsed->config);
  CheckEalArgs(parsed->config);
  return 0;
}
