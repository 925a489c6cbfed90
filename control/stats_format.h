// Renders a StatsSnapshot for people (aligned text) and for scripts (JSON of
// v1::Stats, the same as the control API's GetStats; docs/counters.md), and
// the one conversion of a snapshot into v1::Stats.
#ifndef SPINNIC_CONTROL_STATS_FORMAT_H_
#define SPINNIC_CONTROL_STATS_FORMAT_H_

#include <string>

#include "absl/status/statusor.h"
#include "dataplane/stats.h"
#include "spinnic/v1/control.pb.h"

namespace spinnic {

// Counters as text tables, with packet rates over `interval_s` since
// `previous` (or since zero when null); no rates when interval_s is 0.
std::string FormatStatsText(const StatsSnapshot& now,
                            const StatsSnapshot* previous, double interval_s);

void FillHandlerStats(const EctxStats& e, v1::HandlerStats* out);
// What GetStats, WatchStats and --stats_json send; `state_hex` is the ECTX
// state memory when the snapshot copied it.
void FillStats(const StatsSnapshot& snapshot, v1::Stats* out);

// FillStats as script JSON (control/script_json.h), one line and a newline.
absl::StatusOr<std::string> FormatStatsJson(const StatsSnapshot& snapshot);

}  // namespace spinnic

#endif  // SPINNIC_CONTROL_STATS_FORMAT_H_
