// The Dataplane's capture sessions (dataplane.h, capture.h): one per port and
// stage, published to the HPUs by RCU; no table at all when none runs.
#include "absl/strings/str_cat.h"
#include "dataplane/dataplane.h"
#include "dataplane/rcu_table.h"

namespace spinnic {

absl::Status Dataplane::StartCapture(std::shared_ptr<CaptureSession> session) {
  const CaptureSessionConfig& config = session->config();
  if (config.port >= ports_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("capture port index ", config.port, " is not below the ",
                     ports_.size(), " ports"));
  }
  absl::MutexLock lock(&capture_mu_);
  std::vector<std::shared_ptr<CaptureSession>> sessions;
  if (current_captures_ != nullptr) {
    if (const CaptureSession* running =
            current_captures_->Find(config.port, config.stage);
        running != nullptr) {
      const std::string filter = running->filter_expression();
      return absl::FailedPreconditionError(absl::StrCat(
          "port ", ports_[config.port].name(), " stage ",
          CaptureStageName(config.stage), " is already being captured (",
          filter.empty() ? "no filter"
                         : absl::StrCat("filter \"", filter, "\""),
          "); one capture per port and stage: end that one first"));
    }
    sessions = current_captures_->sessions();
  }
  sessions.push_back(std::move(session));
  PublishRcuTable(rcu_, captures_, current_captures_,
                  std::make_unique<const CaptureTable>(std::move(sessions)));
  return absl::OkStatus();
}

void Dataplane::StopCapture(const CaptureSession* session) {
  absl::MutexLock lock(&capture_mu_);
  if (current_captures_ == nullptr) return;
  std::vector<std::shared_ptr<CaptureSession>> rest;
  bool found = false;
  for (const std::shared_ptr<CaptureSession>& s :
       current_captures_->sessions()) {
    if (s.get() == session) {
      found = true;
    } else {
      rest.push_back(s);
    }
  }
  if (!found) return;
  // With no session left the HPUs see a null table: no capture cost.
  PublishRcuTable(rcu_, captures_, current_captures_,
                  rest.empty()
                      ? std::unique_ptr<const CaptureTable>()
                      : std::make_unique<const CaptureTable>(std::move(rest)));
}

}  // namespace spinnic
