// Log levels by name at run time: spinnic's components (the rte_log types
// spinnic.*, dataplane/common/log.h), DPDK's own types (lib.eal,
// pmd.net.memif, ...) and the global ceiling. Serves the SetLogLevel and
// ListLogLevels RPCs (docs/logs.md). At start, the EAL's --log-level sets
// levels (spinnicd -- --log-level=spinnic.roce:debug, or the config's
// eal_args).
//
// A component is, in this order: "global"; a spinnic short name ("roce" is
// "spinnic.roce"); a registered type's exact name; a glob ("pmd.net.*")
// matching at least one registered type. Anything else is INVALID_ARGUMENT
// naming the known components.
#ifndef SPINNIC_CONTROL_LOG_LEVELS_H_
#define SPINNIC_CONTROL_LOG_LEVELS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace spinnic {

struct LogTypeLevel {
  std::string name;  // "spinnic.roce", "lib.eal", or "global"
  uint32_t level;    // RTE_LOG_EMERG (1) .. RTE_LOG_DEBUG (8)
};

// "emerg", "alert", "crit", "err", "warning", "notice", "info", "debug".
std::string LogLevelName(uint32_t level);

// A level name (case-insensitive; also "error", "critical", "warn") or its
// number 1..8. INVALID_ARGUMENT lists the names.
absl::StatusOr<uint32_t> ParseLogLevel(absl::string_view text);

// The registered types with their levels: spinnic.* first, then, with
// `include_dpdk`, every other type; each group by name.
std::vector<LogTypeLevel> ListLogLevels(bool include_dpdk);

// Sets `component` (see above) to `level` (ParseLogLevel's text); returns the
// types that now have it. Changes nothing on error.
absl::StatusOr<std::vector<LogTypeLevel>> SetLogLevel(
    absl::string_view component, absl::string_view level);

}  // namespace spinnic

#endif  // SPINNIC_CONTROL_LOG_LEVELS_H_
