#include "control/log_levels.h"

#include <fnmatch.h>
#include <rte_log.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace spinnic {
namespace {

constexpr absl::string_view kSpinnicPrefix = "spinnic.";
constexpr absl::string_view kGlobal = "global";

constexpr const char* kLevelNames[] = {
    "", "emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"};

struct RegisteredType {
  uint32_t id;
  std::string name;
};

// DPDK 22.11 has no iterator over log types; rte_log_dump writes one
// "id N: NAME, level is LEVEL" line per registered type.
std::vector<RegisteredType> RegisteredTypes() {
  std::vector<RegisteredType> types;
  char* text = nullptr;
  size_t size = 0;
  FILE* stream = open_memstream(&text, &size);
  if (stream == nullptr) return types;
  rte_log_dump(stream);
  std::fclose(stream);
  for (absl::string_view line :
       absl::StrSplit(absl::string_view(text, size), '\n')) {
    if (!absl::ConsumePrefix(&line, "id ")) continue;
    const size_t colon = line.find(": ");
    const size_t comma = line.rfind(", level is ");
    uint32_t id = 0;
    if (colon == absl::string_view::npos || comma == absl::string_view::npos ||
        comma < colon || !absl::SimpleAtoi(line.substr(0, colon), &id)) {
      continue;
    }
    types.push_back(
        {id, std::string(line.substr(colon + 2, comma - colon - 2))});
  }
  std::free(text);
  return types;
}

std::string KnownComponents() {
  std::vector<std::string> spinnic;
  for (const RegisteredType& type : RegisteredTypes()) {
    absl::string_view name = type.name;
    if (absl::ConsumePrefix(&name, kSpinnicPrefix)) {
      spinnic.emplace_back(name);
    }
  }
  std::sort(spinnic.begin(), spinnic.end());
  return absl::StrCat(
      absl::StrJoin(spinnic, ", "),
      " (the spinnic.* types), global, or a DPDK log type by name or glob "
      "(lib.eal, pmd.net.memif, pmd.net.*); `spinctl log --all` lists them");
}

}  // namespace

std::string LogLevelName(uint32_t level) {
  if (level >= 1 && level <= RTE_LOG_DEBUG) return kLevelNames[level];
  return absl::StrCat(level);
}

absl::StatusOr<uint32_t> ParseLogLevel(absl::string_view text) {
  const std::string lower = absl::AsciiStrToLower(text);
  uint32_t number = 0;
  if (absl::SimpleAtoi(lower, &number) && number >= RTE_LOG_EMERG &&
      number <= RTE_LOG_DEBUG) {
    return number;
  }
  for (uint32_t level = RTE_LOG_EMERG; level <= RTE_LOG_DEBUG; ++level) {
    if (lower == kLevelNames[level]) return level;
  }
  if (lower == "error") return uint32_t{RTE_LOG_ERR};
  if (lower == "critical") return uint32_t{RTE_LOG_CRIT};
  if (lower == "warn") return uint32_t{RTE_LOG_WARNING};
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown log level '", text,
      "'; use emerg, alert, crit, err, warning, notice, info or debug "
      "(or 1..8)"));
}

std::vector<LogTypeLevel> ListLogLevels(bool include_dpdk) {
  std::vector<LogTypeLevel> spinnic;
  std::vector<LogTypeLevel> dpdk;
  for (const RegisteredType& type : RegisteredTypes()) {
    const int level = rte_log_get_level(type.id);
    if (level < 0) continue;
    LogTypeLevel entry{type.name, static_cast<uint32_t>(level)};
    if (absl::StartsWith(type.name, kSpinnicPrefix)) {
      spinnic.push_back(std::move(entry));
    } else if (include_dpdk) {
      dpdk.push_back(std::move(entry));
    }
  }
  auto by_name = [](const LogTypeLevel& a, const LogTypeLevel& b) {
    return a.name < b.name;
  };
  std::sort(spinnic.begin(), spinnic.end(), by_name);
  std::sort(dpdk.begin(), dpdk.end(), by_name);
  spinnic.insert(spinnic.end(), dpdk.begin(), dpdk.end());
  return spinnic;
}

absl::StatusOr<std::vector<LogTypeLevel>> SetLogLevel(
    absl::string_view component, absl::string_view level_text) {
  absl::StatusOr<uint32_t> level = ParseLogLevel(level_text);
  if (!level.ok()) return level.status();
  const std::string name(absl::StripAsciiWhitespace(component));
  if (name == kGlobal) {
    rte_log_set_global_level(*level);
    return std::vector<LogTypeLevel>{{std::string(kGlobal), *level}};
  }
  const std::vector<RegisteredType> types = RegisteredTypes();
  std::vector<LogTypeLevel> changed;
  for (const std::string& candidate :
       {absl::StrCat(kSpinnicPrefix, name), name}) {
    for (const RegisteredType& type : types) {
      if (type.name == candidate && rte_log_set_level(type.id, *level) == 0) {
        changed.push_back({type.name, *level});
        return changed;
      }
    }
  }
  // A glob: DPDK's own matcher, which also remembers the pattern for types
  // registered later (a PMD probed after this call).
  if (name.find_first_of("*?[") != std::string::npos) {
    for (const RegisteredType& type : types) {
      if (fnmatch(name.c_str(), type.name.c_str(), 0) == 0) {
        changed.push_back({type.name, *level});
      }
    }
    if (!changed.empty() &&
        rte_log_set_level_pattern(name.c_str(), *level) == 0) {
      return changed;
    }
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown log component '",
                                                 component, "'; use one of ",
                                                 KnownComponents()));
}

}  // namespace spinnic
