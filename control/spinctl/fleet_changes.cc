#include "control/spinctl/fleet_changes.h"

#include <memory>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace spinnic::spinctl {
namespace {

bool IsUnixAddress(const std::string& address) {
  return absl::StartsWith(address, "unix:") ||
         absl::StartsWith(address, "unix-abstract:") ||
         absl::StartsWith(address, "/") || absl::StartsWith(address, ".");
}

// A change request that got no answer may still have been carried out: the
// operator must look before trusting "failed" to mean "unchanged".
absl::Status MaybeUnknownOutcome(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kDeadlineExceeded &&
      status.code() != absl::StatusCode::kUnavailable &&
      status.code() != absl::StatusCode::kCancelled) {
    return status;
  }
  return absl::Status(
      status.code(),
      absl::StrCat(status.message(),
                   " (no answer: the change may or may not have been made "
                   "there; check with spinctl handlers)"));
}

// The handler `name` as ListHandlers describes it, as an install request;
// nullopt when there is none of that name. FAILED_PRECONDITION when the
// server lists it without its install record, which a rollback would need.
absl::StatusOr<std::optional<v1::InstallHandlerRequest>> CurrentSpec(
    ControlClient& client, const std::string& name) {
  absl::StatusOr<v1::ListHandlersResponse> list = client.ListHandlers();
  if (!list.ok()) return list.status();
  for (const v1::HandlerInstall& h : list->handlers()) {
    if (h.name() != name) continue;
    v1::InstallHandlerRequest spec;
    *spec.mutable_handler() = h;
    auto bound = list->bound_regions().find(name);
    if (bound != list->bound_regions().end()) {
      *spec.mutable_bound_regions() = bound->second.ids();
    }
    return spec;
  }
  for (const v1::HandlerStats& s : list->stats()) {
    if (s.name() == name) {
      return absl::FailedPreconditionError(absl::StrCat(
          "handler '", name,
          "' is listed without its install record, so it could not be "
          "reinstalled on rollback; change it on this appliance by hand"));
    }
  }
  return std::nullopt;
}

// What the handler changes share: the connection, made in Apply.
class HandlerChange : public ApplianceChange {
 protected:
  explicit HandlerChange(ClientOptions options)
      : options_(std::move(options)) {}

  absl::Status Connect() {
    absl::StatusOr<std::unique_ptr<ControlClient>> client =
        ControlClient::Connect(options_);
    if (!client.ok()) return client.status();
    client_ = *std::move(client);
    return absl::OkStatus();
  }

  ClientOptions options_;
  std::unique_ptr<ControlClient> client_;
};

class InstallChange : public HandlerChange {
 public:
  InstallChange(v1::InstallHandlerRequest request, ClientOptions options)
      : HandlerChange(std::move(options)), request_(std::move(request)) {
    request_.set_replace(false);
  }

  absl::StatusOr<std::string> Apply() override {
    if (absl::Status s = Connect(); !s.ok()) return s;
    absl::StatusOr<uint32_t> id = client_->InstallHandler(request_);
    if (!id.ok()) return MaybeUnknownOutcome(id.status());
    return absl::StrCat("installed, id ", *id);
  }

  absl::StatusOr<std::string> Rollback() override {
    absl::Status removed = client_->RemoveHandler(request_.handler().name());
    if (!removed.ok()) return removed;
    return std::string("installed, then removed again");
  }

 private:
  v1::InstallHandlerRequest request_;
};

class ReplaceChange : public HandlerChange {
 public:
  ReplaceChange(v1::InstallHandlerRequest request, ClientOptions options)
      : HandlerChange(std::move(options)), request_(std::move(request)) {
    request_.set_replace(true);
  }

  absl::StatusOr<std::string> Apply() override {
    if (absl::Status s = Connect(); !s.ok()) return s;
    absl::StatusOr<std::optional<v1::InstallHandlerRequest>> previous =
        CurrentSpec(*client_, request_.handler().name());
    if (!previous.ok()) return previous.status();
    previous_ = *std::move(previous);
    absl::StatusOr<uint32_t> id = client_->InstallHandler(request_);
    if (!id.ok()) return MaybeUnknownOutcome(id.status());
    return previous_.has_value()
               ? absl::StrCat("replaced, id ", *id)
               : absl::StrCat("installed (there was none to replace), id ",
                              *id);
  }

  absl::StatusOr<std::string> Rollback() override {
    if (!previous_.has_value()) {
      absl::Status removed = client_->RemoveHandler(request_.handler().name());
      if (!removed.ok()) return removed;
      return std::string("installed, then removed again");
    }
    v1::InstallHandlerRequest restore = *previous_;
    restore.set_replace(true);
    absl::StatusOr<uint32_t> id = client_->InstallHandler(restore);
    if (!id.ok()) return id.status();
    return absl::StrCat("replaced, then the previous spec restored, id ", *id);
  }

 private:
  v1::InstallHandlerRequest request_;
  std::optional<v1::InstallHandlerRequest> previous_;
};

class RemoveChange : public HandlerChange {
 public:
  RemoveChange(std::string name, ClientOptions options)
      : HandlerChange(std::move(options)), name_(std::move(name)) {}

  absl::StatusOr<std::string> Apply() override {
    if (absl::Status s = Connect(); !s.ok()) return s;
    absl::StatusOr<std::optional<v1::InstallHandlerRequest>> previous =
        CurrentSpec(*client_, name_);
    if (!previous.ok()) return previous.status();
    if (!previous->has_value()) {
      return absl::NotFoundError(
          absl::StrCat("no handler '", name_, "' installed here"));
    }
    previous_ = **previous;
    absl::Status removed = client_->RemoveHandler(name_);
    if (!removed.ok()) return MaybeUnknownOutcome(removed);
    return std::string("removed");
  }

  absl::StatusOr<std::string> Rollback() override {
    v1::InstallHandlerRequest restore = previous_;
    restore.set_replace(false);
    absl::StatusOr<uint32_t> id = client_->InstallHandler(restore);
    if (!id.ok()) return id.status();
    return absl::StrCat("removed, then reinstalled as it was, id ", *id);
  }

 private:
  std::string name_;
  v1::InstallHandlerRequest previous_;
};

}  // namespace

ClientOptions TargetClientOptions(const v1::FleetTarget& target,
                                  const ClientOptions& defaults) {
  ClientOptions options = defaults;
  options.target = target.address();
  if (IsUnixAddress(target.address())) {
    options.tls_ca_file.clear();
    options.tls_cert_file.clear();
    options.tls_key_file.clear();
    options.tls_server_name.clear();
    options.insecure = false;
  }
  if (!target.tls_ca().empty()) options.tls_ca_file = target.tls_ca();
  if (!target.tls_cert().empty()) options.tls_cert_file = target.tls_cert();
  if (!target.tls_key().empty()) options.tls_key_file = target.tls_key();
  if (!target.tls_server_name().empty()) {
    options.tls_server_name = target.tls_server_name();
  }
  if (target.insecure()) options.insecure = true;
  return options;
}

ChangeFactory InstallChanges(v1::InstallHandlerRequest request,
                             ClientOptions defaults) {
  return [request = std::move(request),
          defaults = std::move(defaults)](const v1::FleetTarget& target) {
    return std::make_unique<InstallChange>(
        request, TargetClientOptions(target, defaults));
  };
}

ChangeFactory ReplaceChanges(v1::InstallHandlerRequest request,
                             ClientOptions defaults) {
  return [request = std::move(request),
          defaults = std::move(defaults)](const v1::FleetTarget& target) {
    return std::make_unique<ReplaceChange>(
        request, TargetClientOptions(target, defaults));
  };
}

ChangeFactory RemoveChanges(std::string name, ClientOptions defaults) {
  return [name = std::move(name),
          defaults = std::move(defaults)](const v1::FleetTarget& target) {
    return std::make_unique<RemoveChange>(
        name, TargetClientOptions(target, defaults));
  };
}

}  // namespace spinnic::spinctl
