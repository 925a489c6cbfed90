// spinctl's fleet rollout engine (control/spinctl/fleet.h) with fake
// appliances: the waves, the stop at the first failure, the rollback of
// exactly the appliances changed, and the report's rows and table.
#include "control/spinctl/fleet.h"

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace spinnic::spinctl {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

// What each fake appliance does, and the calls they all saw, in order.
class FakeFleet {
 public:
  void FailApply(const std::string& name, absl::Status status) {
    apply_errors_[name] = std::move(status);
  }
  void FailRollback(const std::string& name, absl::Status status) {
    rollback_errors_[name] = std::move(status);
  }
  std::vector<std::string> calls() const {
    absl::MutexLock lock(&mu_);
    return calls_;
  }

  ChangeFactory factory() {
    return [this](const v1::FleetTarget& target) {
      return std::make_unique<Change>(this, target.name());
    };
  }

 private:
  class Change : public ApplianceChange {
   public:
    Change(FakeFleet* fleet, std::string name)
        : fleet_(fleet), name_(std::move(name)) {}
    absl::StatusOr<std::string> Apply() override {
      fleet_->Record("apply " + name_);
      auto it = fleet_->apply_errors_.find(name_);
      if (it != fleet_->apply_errors_.end()) return it->second;
      return "applied at " + name_;
    }
    absl::StatusOr<std::string> Rollback() override {
      fleet_->Record("rollback " + name_);
      auto it = fleet_->rollback_errors_.find(name_);
      if (it != fleet_->rollback_errors_.end()) return it->second;
      return "undone at " + name_;
    }

   private:
    FakeFleet* fleet_;
    std::string name_;
  };

  void Record(std::string call) {
    absl::MutexLock lock(&mu_);
    calls_.push_back(std::move(call));
  }

  std::map<std::string, absl::Status> apply_errors_;
  std::map<std::string, absl::Status> rollback_errors_;
  mutable absl::Mutex mu_;
  std::vector<std::string> calls_;
};

v1::FleetTargets Targets(const std::vector<std::string>& names) {
  v1::FleetTargets targets;
  for (const std::string& name : names) {
    v1::FleetTarget* t = targets.add_targets();
    t->set_name(name);
    t->set_address("unix:/run/" + name + ".sock");
  }
  return targets;
}

// "name:wave:result" per row, in file order.
std::vector<std::string> Rows(const v1::FleetReport& report) {
  std::vector<std::string> rows;
  for (const v1::FleetResult& r : report.results()) {
    rows.push_back(absl::StrCat(r.target(), ":", r.wave(), ":", r.result()));
  }
  return rows;
}

std::string Printed(const v1::FleetReport& report) {
  std::FILE* file = std::tmpfile();
  PrintFleetReport(report, file);
  std::rewind(file);
  std::string text;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0) {
    text.append(buffer, n);
  }
  std::fclose(file);
  return text;
}

TEST(PlanWavesTest, CanaryThenWavesOfTheGivenSize) {
  using Waves = std::vector<std::vector<size_t>>;
  EXPECT_EQ(PlanWaves(5, 1, 2), (Waves{{0}, {1, 2}, {3, 4}}));
  EXPECT_EQ(PlanWaves(6, 2, 0), (Waves{{0, 1}, {2, 3, 4, 5}}));
  EXPECT_EQ(PlanWaves(4, 0, 0), (Waves{{0, 1, 2, 3}}));
  EXPECT_EQ(PlanWaves(5, 0, 2), (Waves{{0, 1}, {2, 3}, {4}}));
  // A canary as large as the fleet is the only wave; no empty wave follows.
  EXPECT_EQ(PlanWaves(3, 7, 1), (Waves{{0, 1, 2}}));
  EXPECT_EQ(PlanWaves(0, 1, 1), Waves{});
}

TEST(RolloutTest, AllSucceedInWaveOrder) {
  FakeFleet fleet;
  v1::FleetReport report = Rollout(Targets({"a", "b", "c", "d", "e"}),
                                   {.canary = 1, .wave_size = 2, .parallel = 1},
                                   "install", fleet.factory());
  EXPECT_TRUE(report.ok());
  EXPECT_EQ(report.operation(), "install");
  EXPECT_THAT(Rows(report),
              ElementsAre("a:1:ok", "b:2:ok", "c:2:ok", "d:3:ok", "e:3:ok"));
  EXPECT_THAT(fleet.calls(), ElementsAre("apply a", "apply b", "apply c",
                                         "apply d", "apply e"));
  EXPECT_EQ(report.results(3).detail(), "applied at d");
  EXPECT_EQ(report.results(3).address(), "unix:/run/d.sock");
}

TEST(RolloutTest, StopsAtFirstFailureAndRollsBackOnlyTheChangedNewestFirst) {
  FakeFleet fleet;
  fleet.FailApply("c", absl::AlreadyExistsError("handler 'h' exists"));
  v1::FleetReport report = Rollout(Targets({"a", "b", "c", "d", "e"}),
                                   {.canary = 1, .wave_size = 2, .parallel = 1},
                                   "install", fleet.factory());
  EXPECT_FALSE(report.ok());
  EXPECT_THAT(Rows(report),
              ElementsAre("a:1:rolled-back", "b:2:rolled-back", "c:2:failed",
                          "d:3:not-run", "e:3:not-run"));
  EXPECT_THAT(fleet.calls(), ElementsAre("apply a", "apply b", "apply c",
                                         "rollback b", "rollback a"));
  EXPECT_EQ(report.results(2).detail(), "ALREADY_EXISTS: handler 'h' exists");
  EXPECT_EQ(report.results(0).detail(), "undone at a");
  EXPECT_EQ(report.results(3).detail(), "");
}

TEST(RolloutTest, FailureWithinAWaveStartsNoFurtherTargetOfIt) {
  FakeFleet fleet;
  fleet.FailApply("b", absl::UnavailableError("cannot reach spinnicd"));
  v1::FleetReport report = Rollout(Targets({"a", "b", "c", "d"}),
                                   {.parallel = 1}, "remove", fleet.factory());
  EXPECT_THAT(Rows(report), ElementsAre("a:1:rolled-back", "b:1:failed",
                                        "c:1:not-run", "d:1:not-run"));
  EXPECT_THAT(fleet.calls(), ElementsAre("apply a", "apply b", "rollback a"));
}

TEST(RolloutTest, FailedCanaryStopsEverythingWithNothingToRollBack) {
  FakeFleet fleet;
  fleet.FailApply("a", absl::InvalidArgumentError("bad param"));
  v1::FleetReport report =
      Rollout(Targets({"a", "b", "c"}), {.canary = 1, .parallel = 4}, "replace",
              fleet.factory());
  EXPECT_FALSE(report.ok());
  EXPECT_THAT(Rows(report),
              ElementsAre("a:1:failed", "b:2:not-run", "c:2:not-run"));
  EXPECT_THAT(fleet.calls(), ElementsAre("apply a"));
}

TEST(RolloutTest, ParallelWaveStillRollsBackExactlyTheChanged) {
  FakeFleet fleet;
  fleet.FailApply("e", absl::AlreadyExistsError("exists"));
  // e is alone in the last wave: every earlier one is changed for sure.
  v1::FleetReport report = Rollout(Targets({"a", "b", "c", "d", "e"}),
                                   {.canary = 1, .wave_size = 3, .parallel = 3},
                                   "install", fleet.factory());
  EXPECT_THAT(Rows(report),
              ElementsAre("a:1:rolled-back", "b:2:rolled-back",
                          "c:2:rolled-back", "d:2:rolled-back", "e:3:failed"));
  std::vector<std::string> calls = fleet.calls();
  ASSERT_EQ(calls.size(), 9u);
  EXPECT_EQ(calls[0], "apply a");
  EXPECT_THAT(std::vector<std::string>(calls.begin() + 1, calls.begin() + 4),
              UnorderedElementsAre("apply b", "apply c", "apply d"));
  EXPECT_EQ(calls[4], "apply e");
  EXPECT_THAT(std::vector<std::string>(calls.begin() + 5, calls.end()),
              UnorderedElementsAre("rollback a", "rollback b", "rollback c",
                                   "rollback d"));
}

TEST(RolloutTest, FailedRollbackIsReportedWithBothReasons) {
  FakeFleet fleet;
  fleet.FailApply("b", absl::AlreadyExistsError("exists"));
  fleet.FailRollback("a", absl::UnavailableError("connection lost"));
  v1::FleetReport report =
      Rollout(Targets({"a", "b"}), {.canary = 1}, "install", fleet.factory());
  EXPECT_THAT(Rows(report), ElementsAre("a:1:rollback-failed", "b:2:failed"));
  EXPECT_EQ(report.results(0).detail(),
            "UNAVAILABLE: connection lost (applied: applied at a)");
}

TEST(PrintFleetReportTest, TableAndSummary) {
  FakeFleet fleet;
  fleet.FailApply("node-c", absl::AlreadyExistsError("handler 'h' exists"));
  v1::FleetReport report = Rollout(
      Targets({"node-a", "node-b", "node-c", "node-d"}),
      {.canary = 1, .wave_size = 2, .parallel = 1}, "install", fleet.factory());
  // MS varies from run to run; the table right-aligns it last, so cut it.
  std::string text = Printed(report);
  std::vector<std::string> lines;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    std::string line = text.substr(start, end - start);
    if (line.rfind("install", 0) != 0) {
      size_t last = line.find_last_of(' ');
      line = line.substr(0, line.find_last_not_of(' ', last) + 1);
    }
    lines.push_back(line);
    start = end + 1;
  }
  EXPECT_THAT(
      lines,
      ElementsAre(
          "TARGET  WAVE  RESULT       DETAIL",
          "node-a     1  rolled-back  undone at node-a",
          "node-b     2  rolled-back  undone at node-b",
          "node-c     2  failed       ALREADY_EXISTS: handler 'h' exists",
          "node-d     3  not-run      -",
          "install FAILED, stopped: 1 failed, 2 rolled-back, 1 not-run"));
}

TEST(ParseFleetTargetsTest, ReadsTargetsInOrder) {
  absl::StatusOr<v1::FleetTargets> targets = ParseFleetTargets(
      "t.textproto",
      "targets { name: \"a\" address: \"unix:/run/a.sock\" }\n"
      "targets { name: \"b\" address: \"10.0.0.7:50051\" tls_ca: \"ca.pem\" "
      "}\n");
  ASSERT_TRUE(targets.ok()) << targets.status();
  ASSERT_EQ(targets->targets_size(), 2);
  EXPECT_EQ(targets->targets(1).name(), "b");
  EXPECT_EQ(targets->targets(1).tls_ca(), "ca.pem");
}

TEST(ParseFleetTargetsTest, RefusesWhatCannotBeRolledOutTo) {
  auto error = [](const std::string& text) {
    return std::string(
        ParseFleetTargets("t.textproto", text).status().message());
  };
  EXPECT_THAT(error(""), HasSubstr("t.textproto: no targets; write one line"));
  EXPECT_EQ(error("targets { address: \"unix:/x\" }"),
            "t.textproto: targets[0] has no name: give each target a unique "
            "name");
  EXPECT_EQ(error("targets { name: \"a\" }"),
            "t.textproto: targets[0] ('a') has no address: write address: "
            "\"unix:PATH\" or \"HOST:PORT\"");
  EXPECT_EQ(error("targets { name: \"a\" address: \"unix:/x\" }\n"
                  "targets { name: \"a\" address: \"unix:/y\" }"),
            "t.textproto: targets[1]: the name 'a' is used twice; target "
            "names must be unique");
  EXPECT_THAT(error("targets { name: \"a\" adress: \"unix:/x\" }"),
              HasSubstr("t.textproto:1:"));
  EXPECT_THAT(error("targets { name: \"a\" adress: \"unix:/x\" }"),
              HasSubstr("spinnic.v1.FleetTargets"));
}

}  // namespace
}  // namespace spinnic::spinctl
