// Renders a StatsSnapshot for people (aligned text) and for scripts (JSON;
// the schema is in docs/counters.md).
#ifndef SPINNIC_CONTROL_STATS_FORMAT_H_
#define SPINNIC_CONTROL_STATS_FORMAT_H_

#include <string>

#include "dataplane/stats.h"

namespace spinnic {

// Counters as text tables, with packet rates over `interval_s` since
// `previous` (or since zero when null); no rates when interval_s is 0.
std::string FormatStatsText(const StatsSnapshot& now,
                            const StatsSnapshot* previous, double interval_s);

std::string FormatStatsJson(const StatsSnapshot& snapshot);

}  // namespace spinnic

#endif  // SPINNIC_CONTROL_STATS_FORMAT_H_
