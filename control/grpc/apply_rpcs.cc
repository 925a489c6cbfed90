// The reload RPCs of SpinnicService (docs/reload.md): ApplyConfig and
// GetRunningConfig, and ApplyConfigText, which spinnicd's SIGHUP shares.
// The plan is control/config_diff.h's; this file carries it out through the
// calls the single RPCs use (Dataplane::InstallEctx, which replaces a
// handler in one RCU publication, RemoveEctx, DiadModule::AddPeer,
// RemovePeer), and undoes what it did when a change fails.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "control/config_diff.h"
#include "control/config_loader.h"
#include "control/diad/diad_config.h"
#include "control/grpc/service_internal.h"
#include "control/grpc/spinnic_service.h"
#include "dataplane/common/log.h"
#include "dataplane/diad/diad_module.h"
#include "google/protobuf/text_format.h"

namespace spinnic {
namespace {

constexpr absl::string_view kDefaultSourceName = "<config>";

// One change, and how to take it back.
struct Step {
  const v1::ConfigChange* change;
  std::function<absl::Status()> apply;
  std::function<absl::Status()> undo;
};

// The text form of a peer as the dataplane holds it.
v1::DiadPeer PeerOf(const PeerInfo& info) {
  v1::DiadPeer peer;
  peer.set_name(info.name);
  peer.set_node(AddressText(info.node));
  peer.set_mac(MacText(info.mac));
  peer.set_recovery(info.recovery == diad::Recovery::kSelective
                        ? v1::DiadPeer::SELECTIVE
                        : v1::DiadPeer::GO_BACK_N);
  return peer;
}

const v1::HandlerInstall* FindHandler(const v1::Config& config,
                                      absl::string_view name) {
  for (const v1::HandlerInstall& h : config.handlers()) {
    if (h.name() == name) return &h;
  }
  return nullptr;
}

const v1::DiadPeer* FindPeer(const v1::Config& config, absl::string_view name) {
  for (const v1::DiadPeer& p : config.diad().peers()) {
    if (p.name() == name) return &p;
  }
  return nullptr;
}

}  // namespace

v1::Config SpinnicService::RunningConfig() {
  absl::MutexLock lock(&mu_);
  return RunningConfigLocked();
}

v1::Config SpinnicService::RunningConfigLocked() {
  v1::Config running = config_;
  running.clear_handlers();
  // The dataplane's order: by priority, equal priorities in install order.
  for (const EctxStats& e :
       dataplane_->Snapshot(Dataplane::StateCopy::kOmit).ectxs) {
    if (auto it = installed_.find(e.name); it != installed_.end()) {
      *running.add_handlers() = it->second;
    }
  }
  const diad::DiadModule* peer_table =
      dataplane_->transport<diad::DiadModule>();
  if (running.has_diad()) running.mutable_diad()->clear_peers();
  if (peer_table != nullptr) {
    for (const PeerInfo& info : peer_table->ListPeers()) {
      *running.mutable_diad()->add_peers() = PeerOf(info);
    }
  }
  return running;
}

absl::StatusOr<v1::ApplyConfigResponse> SpinnicService::ApplyConfigText(
    absl::string_view text, absl::string_view source_name, bool dry_run) {
  absl::StatusOr<ParsedConfig> parsed = ParseConfigText(
      text, source_name.empty() ? kDefaultSourceName : source_name);
  if (!parsed.ok()) return parsed.status();
  {
    absl::MutexLock lock(&mu_);
    ApplyOverrides(overrides_, &parsed->config, &parsed->locations);
  }
  if (absl::Status valid = ValidateConfig(parsed->config, &parsed->locations);
      !valid.ok()) {
    return valid;
  }
  const v1::Config& wanted = parsed->config;

  absl::MutexLock lock(&mu_);
  const v1::Config running = RunningConfigLocked();
  absl::StatusOr<std::vector<v1::ConfigChange>> plan =
      PlanConfigChanges(running, wanted);
  if (!plan.ok()) return plan.status();
  v1::ApplyConfigResponse response;
  for (const v1::ConfigChange& change : *plan) *response.add_changes() = change;
  if (dry_run || plan->empty()) return response;

  diad::DiadModule* peer_table = dataplane_->transport<diad::DiadModule>();
  auto install = [this](const v1::HandlerInstall& handler,
                        bool replace) -> absl::Status {
    absl::StatusOr<HandlerConfig> converted = ToHandlerConfig(handler, config_);
    if (!converted.ok()) return converted.status();
    auto regions = bound_regions_.find(handler.name());
    if (regions != bound_regions_.end()) {
      converted->bound_regions = regions->second;
    }
    absl::StatusOr<uint32_t> id = dataplane_->InstallEctx(*converted, replace);
    if (!id.ok()) return id.status();
    installed_[handler.name()] = handler;
    return absl::OkStatus();
  };
  auto remove = [this](const std::string& name) -> absl::Status {
    absl::Status removed = dataplane_->RemoveEctx(name);
    if (removed.ok()) installed_.erase(name);
    return removed;
  };
  auto add_peer = [this, peer_table](const v1::DiadPeer& peer) -> absl::Status {
    if (peer_table == nullptr) {
      return absl::FailedPreconditionError("DiAD is not part of this build");
    }
    absl::StatusOr<diad::PeerConfig> converted = ToPeerConfig(peer, config_);
    if (!converted.ok()) return converted.status();
    return peer_table->AddPeer(*converted);
  };
  auto remove_peer = [peer_table](const std::string& name) -> absl::Status {
    if (peer_table == nullptr) {
      return absl::FailedPreconditionError("DiAD is not part of this build");
    }
    return peer_table->RemovePeer(name);
  };

  std::vector<Step> steps;
  for (const v1::ConfigChange& change : response.changes()) {
    const std::string name = change.name();
    Step step{&change, nullptr, nullptr};
    if (change.object() == "handler") {
      const v1::HandlerInstall* before = FindHandler(running, name);
      const v1::HandlerInstall* after = FindHandler(wanted, name);
      switch (change.action()) {
        case v1::ConfigChange::CONFIG_CHANGE_ADD:
          step.apply = [=] { return install(*after, false); };
          step.undo = [=, this] {
            absl::Status removed = remove(name);
            bound_regions_.erase(name);
            return removed;
          };
          break;
        case v1::ConfigChange::CONFIG_CHANGE_MODIFY:
          // One publication: the HPUs see the old handler or the new one.
          step.apply = [=] { return install(*after, true); };
          step.undo = [=] { return install(*before, true); };
          break;
        default:
          step.apply = [=] { return remove(name); };
          step.undo = [=] { return install(*before, false); };
          break;
      }
    } else {
      const v1::DiadPeer* before = FindPeer(running, name);
      const v1::DiadPeer* after = FindPeer(wanted, name);
      switch (change.action()) {
        case v1::ConfigChange::CONFIG_CHANGE_ADD:
          step.apply = [=] { return add_peer(*after); };
          step.undo = [=] { return remove_peer(name); };
          break;
        case v1::ConfigChange::CONFIG_CHANGE_MODIFY:
          // The peer table has no replace: its channels start afresh.
          step.apply = [=]() -> absl::Status {
            if (absl::Status s = remove_peer(name); !s.ok()) return s;
            absl::Status added = add_peer(*after);
            if (!added.ok()) add_peer(*before).IgnoreError();  // as it was
            return added;
          };
          step.undo = [=]() -> absl::Status {
            if (absl::Status s = remove_peer(name); !s.ok()) return s;
            return add_peer(*before);
          };
          break;
        default:
          step.apply = [=] { return remove_peer(name); };
          step.undo = [=] { return add_peer(*before); };
          break;
      }
    }
    steps.push_back(std::move(step));
  }

  for (size_t i = 0; i < steps.size(); ++i) {
    absl::Status status = steps[i].apply();
    if (status.ok()) continue;
    std::vector<std::string> undo_failures;
    for (size_t j = i; j-- > 0;) {
      if (absl::Status undone = steps[j].undo(); !undone.ok()) {
        undo_failures.push_back(absl::StrCat("'", steps[j].change->line(),
                                             "' (", undone.message(), ")"));
      }
    }
    std::string message = absl::StrCat("change ", i + 1, " of ", steps.size(),
                                       ", '", steps[i].change->line(),
                                       "', failed: ", status.message(), "; ");
    if (undo_failures.empty()) {
      absl::StrAppend(&message, i == 0 ? "nothing was applied"
                                       : absl::StrCat("the ", i,
                                                      " change(s) before it "
                                                      "were rolled back; "
                                                      "nothing changed"));
    } else {
      absl::StrAppend(&message, "rolling back failed for ",
                      absl::StrJoin(undo_failures, ", "),
                      ": the running state is partly changed (spinctl config "
                      "show prints it)");
    }
    return absl::Status(status.code(), message);
  }
  for (const v1::ConfigChange& change : response.changes()) {
    if (change.object() == "handler" &&
        change.action() == v1::ConfigChange::CONFIG_CHANGE_REMOVE) {
      bound_regions_.erase(change.name());
    }
  }
  response.set_applied(true);
  return response;
}

grpc::Status SpinnicService::ApplyConfig(grpc::ServerContext*,
                                         const v1::ApplyConfigRequest* request,
                                         v1::ApplyConfigResponse* response) {
  absl::StatusOr<v1::ApplyConfigResponse> applied = ApplyConfigText(
      request->config_text(), request->source_name(), request->dry_run());
  if (!applied.ok()) return ToGrpc(applied.status());
  *response = *std::move(applied);
  if (response->applied()) {
    std::vector<std::string> lines;
    for (const v1::ConfigChange& change : response->changes()) {
      lines.push_back(change.line());
    }
    SPINNIC_LOG(NOTICE, control, "ApplyConfig: applied %d change(s): %s",
                response->changes_size(), absl::StrJoin(lines, "; ").c_str());
  }
  return grpc::Status::OK;
}

grpc::Status SpinnicService::GetRunningConfig(
    grpc::ServerContext*, const v1::GetRunningConfigRequest*,
    v1::GetRunningConfigResponse* response) {
  *response->mutable_config() = RunningConfig();
  std::string text;
  if (!google::protobuf::TextFormat::PrintToString(response->config(), &text)) {
    return grpc::Status(grpc::StatusCode::INTERNAL,
                        "cannot print the running config as text");
  }
  response->set_config_text(std::move(text));
  return grpc::Status::OK;
}

}  // namespace spinnic
