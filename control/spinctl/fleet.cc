#include "control/spinctl/fleet.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "control/spinctl/command.h"
#include "control/spinctl/table.h"

namespace spinnic::spinctl {
namespace {

// Calls `work(i)` for i in [0, count) on up to `parallel` threads. Once
// `*stop` is set no further i is started.
void ForEachParallel(size_t count, size_t parallel,
                     const std::atomic<bool>* stop,
                     const std::function<void(size_t)>& work) {
  std::atomic<size_t> next{0};
  auto worker = [&] {
    while (stop == nullptr || !stop->load()) {
      size_t i = next.fetch_add(1);
      if (i >= count) return;
      work(i);
    }
  };
  size_t threads = std::min(count, std::max<size_t>(parallel, 1));
  if (threads <= 1) {
    worker();
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (size_t t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (std::thread& t : pool) t.join();
}

std::string StatusText(const absl::Status& status) {
  return absl::StrCat(absl::StatusCodeToString(status.code()), ": ",
                      status.message());
}

}  // namespace

absl::StatusOr<v1::FleetTargets> ParseFleetTargets(absl::string_view path,
                                                   const std::string& text) {
  v1::FleetTargets targets;
  if (absl::Status s = ParseTextProto(path, text, &targets); !s.ok()) return s;
  if (targets.targets().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path,
        ": no targets; write one line per appliance: targets { name: "
        "\"node-a\" address: \"unix:/run/spinnic/spinnicd.sock\" }"));
  }
  absl::flat_hash_set<std::string> names;
  for (int i = 0; i < targets.targets_size(); ++i) {
    const v1::FleetTarget& t = targets.targets(i);
    std::string where = absl::StrCat(path, ": targets[", i, "]");
    if (t.name().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " has no name: give each target a unique name"));
    }
    if (t.address().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, " ('", t.name(),
          "') has no address: write address: \"unix:PATH\" or \"HOST:PORT\""));
    }
    if (!names.insert(t.name()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": the name '", t.name(),
                       "' is used twice; target names must be unique"));
    }
  }
  return targets;
}

std::vector<std::vector<size_t>> PlanWaves(size_t targets, size_t canary,
                                           size_t wave_size) {
  std::vector<std::vector<size_t>> waves;
  size_t next = 0;
  auto add_wave = [&](size_t size) {
    std::vector<size_t> wave;
    for (; next < targets && wave.size() < size; ++next) wave.push_back(next);
    waves.push_back(std::move(wave));
  };
  if (canary > 0 && targets > 0) add_wave(canary);
  while (next < targets) add_wave(wave_size == 0 ? targets : wave_size);
  return waves;
}

v1::FleetReport Rollout(const v1::FleetTargets& targets,
                        const RolloutOptions& options,
                        absl::string_view operation,
                        const ChangeFactory& make_change) {
  const size_t n = targets.targets_size();
  v1::FleetReport report;
  report.set_operation(std::string(operation));
  std::vector<std::vector<size_t>> waves =
      PlanWaves(n, options.canary, options.wave_size);
  for (const v1::FleetTarget& t : targets.targets()) {
    v1::FleetResult* row = report.add_results();
    row->set_target(t.name());
    row->set_address(t.address());
    row->set_result("not-run");
  }
  for (size_t w = 0; w < waves.size(); ++w) {
    for (size_t i : waves[w]) {
      report.mutable_results(static_cast<int>(i))
          ->set_wave(static_cast<uint32_t>(w + 1));
    }
  }

  // Each slot is written by the one thread working on that target.
  std::vector<std::unique_ptr<ApplianceChange>> changes(n);
  std::vector<absl::Duration> elapsed(n);
  // Targets changed so far, in the order their Apply returned.
  std::vector<size_t> changed;
  absl::Mutex changed_mu;
  std::atomic<bool> failed{false};

  for (const std::vector<size_t>& wave : waves) {
    ForEachParallel(wave.size(), options.parallel, &failed, [&](size_t k) {
      size_t i = wave[k];
      v1::FleetResult* row = report.mutable_results(static_cast<int>(i));
      absl::Time start = absl::Now();
      changes[i] = make_change(targets.targets(static_cast<int>(i)));
      absl::StatusOr<std::string> applied = changes[i]->Apply();
      elapsed[i] = absl::Now() - start;
      if (applied.ok()) {
        row->set_result("ok");
        row->set_detail(*applied);
        absl::MutexLock lock(&changed_mu);
        changed.push_back(i);
      } else {
        row->set_result("failed");
        row->set_detail(StatusText(applied.status()));
        failed.store(true);
      }
    });
    if (failed.load()) break;
  }

  if (failed.load()) {
    std::reverse(changed.begin(), changed.end());
    ForEachParallel(changed.size(), options.parallel, nullptr, [&](size_t k) {
      size_t i = changed[k];
      v1::FleetResult* row = report.mutable_results(static_cast<int>(i));
      absl::Time start = absl::Now();
      absl::StatusOr<std::string> undone = changes[i]->Rollback();
      elapsed[i] += absl::Now() - start;
      if (undone.ok()) {
        row->set_result("rolled-back");
        row->set_detail(*undone);
      } else {
        row->set_result("rollback-failed");
        row->set_detail(absl::StrCat(StatusText(undone.status()),
                                     " (applied: ", row->detail(), ")"));
      }
    });
  }
  for (size_t i = 0; i < n; ++i) {
    report.mutable_results(static_cast<int>(i))
        ->set_ms(static_cast<uint64_t>(absl::ToInt64Milliseconds(elapsed[i])));
  }
  report.set_ok(!failed.load());
  return report;
}

void PrintFleetReport(const v1::FleetReport& report, std::FILE* out) {
  Table table({"TARGET", "WAVE", "RESULT", "DETAIL", "MS"});
  size_t counts[5] = {};  // ok, failed, rolled-back, rollback-failed, not-run
  const char* words[5] = {"ok", "failed", "rolled-back", "rollback-failed",
                          "not-run"};
  for (const v1::FleetResult& r : report.results()) {
    bool ran = r.result() != "not-run";
    table.AddRow({r.target(), absl::StrCat(r.wave()), r.result(),
                  r.detail().empty() ? "-" : r.detail(),
                  ran ? absl::StrCat(r.ms()) : "-"});
    for (size_t w = 0; w < 5; ++w) {
      if (r.result() == words[w]) ++counts[w];
    }
  }
  table.Print(out);
  std::string summary;
  for (size_t w = 0; w < 5; ++w) {
    if (counts[w] == 0) continue;
    absl::StrAppend(&summary, summary.empty() ? "" : ", ", counts[w], " ",
                    words[w]);
  }
  std::fprintf(out, "%s %s: %s\n", report.operation().c_str(),
               report.ok() ? "done" : "FAILED, stopped", summary.c_str());
}

}  // namespace spinnic::spinctl
