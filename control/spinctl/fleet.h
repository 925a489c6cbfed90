// spinctl's fleet rollout engine: one change made on many appliances in
// waves, stopped at the first failure, with every appliance already changed
// rolled back (docs/spinctl.md, "Fleet rollout").
//
// The engine knows nothing of handlers or gRPC: an operation is an
// ApplianceChange per target (apply, and how to undo it), so that another
// operation (say, applying a whole config, undone by applying the running
// config read before) is one more ApplianceChange, not a new engine.
#ifndef SPINNIC_CONTROL_SPINCTL_FLEET_H_
#define SPINNIC_CONTROL_SPINCTL_FLEET_H_

#include <cstddef>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "spinnic/v1/fleet.pb.h"

namespace spinnic::spinctl {

// The text-format spinnic.v1.FleetTargets in `text` (read from `path`, named
// in errors): at least one target, every name unique and non-empty, every
// address non-empty.
absl::StatusOr<v1::FleetTargets> ParseFleetTargets(absl::string_view path,
                                                   const std::string& text);

// The waves over `targets` appliances, as indices in file order: with
// `canary` > 0 first a wave of the first `canary` ones, then the rest in
// waves of `wave_size` (0: all the rest in one wave). canary 0 makes every
// wave `wave_size` long. Never an empty wave.
std::vector<std::vector<size_t>> PlanWaves(size_t targets, size_t canary,
                                           size_t wave_size);

// One appliance's part of an operation. Apply runs at most once; Rollback
// only after a successful Apply, on another thread perhaps, never
// concurrently with Apply.
class ApplianceChange {
 public:
  virtual ~ApplianceChange() = default;
  // Makes the change. On success, what the report's DETAIL shows ("id 7");
  // on failure, why (the server's code and words). A failed Apply must leave
  // the appliance as it was, or say in its message that it may not have.
  virtual absl::StatusOr<std::string> Apply() = 0;
  // Undoes a successful Apply; on success, what DETAIL shows.
  virtual absl::StatusOr<std::string> Rollback() = 0;
};

// Makes the change for one target; connecting belongs in Apply, so that an
// unreachable appliance is a failed row like any other.
using ChangeFactory =
    std::function<std::unique_ptr<ApplianceChange>(const v1::FleetTarget&)>;

struct RolloutOptions {
  size_t canary = 0;
  size_t wave_size = 0;
  // Appliances worked on at once within a wave, and during rollback.
  size_t parallel = 16;
};

// Runs the waves in order. Within a wave, up to `parallel` appliances are
// changed at once; once one fails no further appliance is started (those in
// flight finish), the remaining ones are "not-run", and every appliance
// changed so far is rolled back, the most recently changed first. Result
// words are those of v1::FleetResult.
v1::FleetReport Rollout(const v1::FleetTargets& targets,
                        const RolloutOptions& options,
                        absl::string_view operation,
                        const ChangeFactory& make_change);

// The report as a table (TARGET WAVE RESULT DETAIL MS) and a summary line.
void PrintFleetReport(const v1::FleetReport& report, std::FILE* out);

}  // namespace spinnic::spinctl

#endif  // SPINNIC_CONTROL_SPINCTL_FLEET_H_
