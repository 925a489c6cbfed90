#include "control/client/control_client.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"

namespace spinnic {
namespace {

using HealthStatus = grpc::health::v1::HealthCheckResponse::ServingStatus;

// absl and gRPC share the canonical code numbering, so the server's code
// passes through unchanged.
absl::Status FromGrpc(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

struct Target {
  std::string dial;         // what grpc::CreateChannel gets
  std::string socket_path;  // Unix socket on the file system; else empty
  bool is_unix = false;
};

absl::StatusOr<Target> ParseTarget(const std::string& target) {
  Target parsed;
  if (target.empty()) {
    return absl::InvalidArgumentError(
        "empty target: give a Unix socket path or host:port");
  }
  if (absl::StartsWith(target, "unix-abstract:")) {
    parsed.is_unix = true;
    parsed.dial = target;
    return parsed;
  }
  if (absl::StartsWith(target, "unix:")) {
    std::string path = target.substr(5);
    // gRPC's URI form unix:///abs/path has the same meaning as unix:/abs/path.
    if (absl::StartsWith(path, "//")) path = path.substr(2);
    parsed.is_unix = true;
    parsed.socket_path = path;
    parsed.dial = absl::StrCat("unix:", path);
    return parsed;
  }
  bool looks_like_path = target[0] == '/' || target[0] == '.' ||
                         (target.find(':') == std::string::npos &&
                          target.find('/') != std::string::npos);
  if (looks_like_path) {
    parsed.is_unix = true;
    parsed.socket_path = target;
    parsed.dial = absl::StrCat("unix:", target);
    return parsed;
  }
  parsed.dial = target;
  return parsed;
}

absl::StatusOr<std::string> ReadWholeFile(const char* what,
                                          const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", path, ": cannot open: ", std::strerror(errno)));
  }
  std::string contents;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0) {
    contents.append(buffer, n);
  }
  bool failed = std::ferror(file) != 0;
  int error = errno;
  std::fclose(file);
  if (failed) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", path, ": cannot read: ", std::strerror(error)));
  }
  if (contents.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", path, " is empty: expected PEM text"));
  }
  return contents;
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> Credentials(
    const ClientOptions& options, const Target& target) {
  bool any_tls =
      !options.tls_ca_file.empty() || !options.tls_cert_file.empty() ||
      !options.tls_key_file.empty() || !options.tls_server_name.empty();
  if (target.is_unix) {
    // The socket's owner-only mode is the access control; TLS over it would
    // add nothing, so asking for it is a mistake worth reporting.
    if (any_tls) {
      return absl::InvalidArgumentError(
          absl::StrCat("TLS options apply to TCP targets only; ", target.dial,
                       " is a Unix socket"));
    }
    return grpc::InsecureChannelCredentials();
  }
  if (options.insecure) {
    if (any_tls) {
      return absl::InvalidArgumentError(
          "insecure (plaintext) cannot be combined with TLS options");
    }
    return grpc::InsecureChannelCredentials();
  }
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return absl::InvalidArgumentError(
        "mutual TLS needs both a client certificate and its key; give both "
        "tls_cert_file and tls_key_file, or neither");
  }
  grpc::SslCredentialsOptions ssl;
  if (!options.tls_ca_file.empty()) {
    absl::StatusOr<std::string> ca =
        ReadWholeFile("tls_ca_file", options.tls_ca_file);
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *std::move(ca);
  }
  if (!options.tls_cert_file.empty()) {
    absl::StatusOr<std::string> cert =
        ReadWholeFile("tls_cert_file", options.tls_cert_file);
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key =
        ReadWholeFile("tls_key_file", options.tls_key_file);
    if (!key.ok()) return key.status();
    ssl.pem_cert_chain = *std::move(cert);
    ssl.pem_private_key = *std::move(key);
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials =
      grpc::SslCredentials(ssl);
  if (credentials == nullptr) {
    return absl::InvalidArgumentError("cannot create TLS credentials");
  }
  return credentials;
}

// A reason for an unreachable Unix socket that the channel cannot give: the
// file's absence or its permissions.
std::string UnixSocketProblem(const std::string& path) {
  if (path.empty()) return "";
  // spinnicd makes the socket 0600 and its directory 0700.
  constexpr char kOwnerOnly[] =
      " (the socket and its directory are owner-only: run as spinnicd's "
      "user)";
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    int error = errno;
    if (error == ENOENT) {
      return absl::StrCat("no socket at ", path, "; is it running?");
    }
    return absl::StrCat(path, ": ", std::strerror(error),
                        error == EACCES ? kOwnerOnly : "");
  }
  if (!S_ISSOCK(st.st_mode)) return absl::StrCat(path, " is not a socket");
  if (access(path.c_str(), R_OK | W_OK) != 0) {
    return absl::StrCat(path, ": ", std::strerror(errno), kOwnerOnly);
  }
  return "";
}

absl::StatusOr<HealthStatus> HealthCheck(
    const std::shared_ptr<grpc::Channel>& channel, const std::string& service,
    absl::Duration timeout) {
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  grpc::Status status = grpc::health::v1::Health::NewStub(channel)->Check(
      &context, request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response.status();
}

// Hands each message of a server stream to `on_message` until it returns
// false (then cancels the stream; Finish() may only follow a Read() that
// returned false, so the rest is drained) or the stream ends. Returns the
// stream's status, and whether the caller stopped it.
template <typename Message>
std::pair<grpc::Status, bool> ReadStream(
    grpc::ClientContext& context, grpc::ClientReader<Message>& reader,
    const std::function<bool(const Message&)>& on_message) {
  Message message;
  bool stopped = false;
  while (reader.Read(&message)) {
    if (!on_message(message)) {
      stopped = true;
      context.TryCancel();
      while (reader.Read(&message)) {
      }
      break;
    }
  }
  return {reader.Finish(), stopped};
}

}  // namespace

absl::StatusOr<std::unique_ptr<ControlClient>> ControlClient::Connect(
    const ClientOptions& options) {
  if (options.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("timeout must be positive");
  }
  absl::StatusOr<Target> target = ParseTarget(options.target);
  if (!target.ok()) return target.status();
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      Credentials(options, *target);
  if (!credentials.ok()) return credentials.status();

  grpc::ChannelArguments args;
  if (!target->is_unix && !options.insecure &&
      !options.tls_server_name.empty()) {
    args.SetSslTargetNameOverride(options.tls_server_name);
  }
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateCustomChannel(target->dial, *credentials, args);

  std::string unreachable =
      absl::StrCat("cannot reach spinnicd at ", target->dial, ": ");
  if (target->is_unix) {
    // Checked first: gRPC only reports "failed to connect", not why.
    std::string problem = UnixSocketProblem(target->socket_path);
    if (!problem.empty()) {
      return absl::UnavailableError(absl::StrCat(unreachable, problem));
    }
  }
  absl::Time deadline = absl::Now() + options.timeout;
  grpc_connectivity_state state = channel->GetState(/*try_to_connect=*/true);
  while (state != GRPC_CHANNEL_READY) {
    if (state == GRPC_CHANNEL_TRANSIENT_FAILURE ||
        state == GRPC_CHANNEL_SHUTDOWN) {
      // Fail fast, as a gRPC call would: waiting out the whole timeout for a
      // refused connection helps nobody. A call on the failed channel
      // carries the reason (refused, TLS handshake, name resolution).
      absl::StatusOr<HealthStatus> probe =
          HealthCheck(channel, "", absl::Seconds(1));
      std::string reason = probe.ok() ? "connection failed"
                                      : std::string(probe.status().message());
      return absl::UnavailableError(
          absl::StrCat(unreachable, reason, "; is it running?"));
    }
    if (!channel->WaitForStateChange(state, absl::ToChronoTime(deadline))) {
      return absl::UnavailableError(absl::StrCat(
          unreachable, "not ready within ",
          absl::FormatDuration(options.timeout), "; is it running?"));
    }
    state = channel->GetState(/*try_to_connect=*/true);
  }
  return std::unique_ptr<ControlClient>(
      new ControlClient(target->dial, std::move(channel), options.timeout));
}

ControlClient::ControlClient(std::string target,
                             std::shared_ptr<grpc::Channel> channel,
                             absl::Duration timeout)
    : target_(std::move(target)),
      channel_(std::move(channel)),
      stub_(v1::Spinnic::NewStub(channel_)),
      diad_stub_(v1::DiadService::NewStub(channel_)),
      roce_stub_(v1::RoceService::NewStub(channel_)),
      timeout_(timeout) {}

std::unique_ptr<grpc::ClientContext> ControlClient::UnaryContext() const {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(absl::ToChronoTime(absl::Now() + timeout_));
  return context;
}

std::unique_ptr<grpc::ClientContext> ControlClient::RemoteContext(
    uint64_t timeout_ms) const {
  auto context = std::make_unique<grpc::ClientContext>();
  absl::Duration remote =
      timeout_ms == 0 ? absl::Seconds(10) : absl::Milliseconds(timeout_ms);
  context->set_deadline(absl::ToChronoTime(absl::Now() + timeout_ + remote));
  return context;
}

absl::StatusOr<v1::GetInfoResponse> ControlClient::GetInfo() {
  v1::GetInfoResponse response;
  grpc::Status status =
      stub_->GetInfo(UnaryContext().get(), v1::GetInfoRequest(), &response);
  if (!status.ok()) return FromGrpc(status);
  return response;
}

absl::StatusOr<v1::ListHandlerKindsResponse> ControlClient::ListHandlerKinds() {
  v1::ListHandlerKindsResponse response;
  grpc::Status status = stub_->ListHandlerKinds(
      UnaryContext().get(), v1::ListHandlerKindsRequest(), &response);
  if (!status.ok()) return FromGrpc(status);
  return response;
}

absl::StatusOr<uint32_t> ControlClient::InstallHandler(
    const v1::InstallHandlerRequest& request) {
  v1::InstallHandlerResponse response;
  grpc::Status status =
      stub_->InstallHandler(UnaryContext().get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response.id();
}

absl::Status ControlClient::RemoveHandler(const std::string& name) {
  v1::RemoveHandlerRequest request;
  request.set_name(name);
  v1::RemoveHandlerResponse response;
  return FromGrpc(
      stub_->RemoveHandler(UnaryContext().get(), request, &response));
}

absl::StatusOr<v1::ListHandlersResponse> ControlClient::ListHandlers() {
  v1::ListHandlersResponse response;
  grpc::Status status = stub_->ListHandlers(
      UnaryContext().get(), v1::ListHandlersRequest(), &response);
  if (!status.ok()) return FromGrpc(status);
  return response;
}

absl::StatusOr<v1::ApplyConfigResponse> ControlClient::ApplyConfig(
    const v1::ApplyConfigRequest& request) {
  v1::ApplyConfigResponse response;
  grpc::Status status =
      stub_->ApplyConfig(UnaryContext().get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response;
}

absl::StatusOr<v1::GetRunningConfigResponse> ControlClient::GetRunningConfig() {
  v1::GetRunningConfigResponse response;
  grpc::Status status = stub_->GetRunningConfig(
      UnaryContext().get(), v1::GetRunningConfigRequest(), &response);
  if (!status.ok()) return FromGrpc(status);
  return response;
}

absl::StatusOr<std::string> ControlClient::ReadHandlerState(
    const std::string& name, uint32_t offset, uint32_t length) {
  v1::ReadHandlerStateRequest request;
  request.set_name(name);
  request.set_offset(offset);
  request.set_length(length);
  v1::ReadHandlerStateResponse response;
  grpc::Status status =
      stub_->ReadHandlerState(UnaryContext().get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return std::move(*response.mutable_data());
}

absl::StatusOr<v1::RegisterRegionResponse> ControlClient::RegisterRegion(
    const v1::RegisterRegionRequest& request) {
  v1::RegisterRegionResponse response;
  grpc::Status status =
      stub_->RegisterRegion(UnaryContext().get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response;
}

absl::Status ControlClient::DeregisterRegion(uint64_t id) {
  v1::DeregisterRegionRequest request;
  request.set_id(id);
  v1::DeregisterRegionResponse response;
  return FromGrpc(
      stub_->DeregisterRegion(UnaryContext().get(), request, &response));
}

absl::StatusOr<v1::ListRegionsResponse> ControlClient::ListRegions() {
  v1::ListRegionsResponse response;
  grpc::Status status = stub_->ListRegions(UnaryContext().get(),
                                           v1::ListRegionsRequest(), &response);
  if (!status.ok()) return FromGrpc(status);
  return response;
}

absl::StatusOr<std::string> ControlClient::ReadRegion(uint64_t id,
                                                      uint64_t offset,
                                                      uint64_t length) {
  v1::ReadRegionRequest request;
  request.set_id(id);
  request.set_offset(offset);
  request.set_length(length);
  v1::ReadRegionResponse response;
  grpc::Status status =
      stub_->ReadRegion(UnaryContext().get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return std::move(*response.mutable_data());
}

absl::Status ControlClient::WriteRegion(uint64_t id, uint64_t offset,
                                        const std::string& data) {
  v1::WriteRegionRequest request;
  request.set_id(id);
  request.set_offset(offset);
  request.set_data(data);
  v1::WriteRegionResponse response;
  return FromGrpc(stub_->WriteRegion(UnaryContext().get(), request, &response));
}

absl::StatusOr<v1::Stats> ControlClient::GetStats() {
  v1::Stats response;
  grpc::Status status =
      stub_->GetStats(UnaryContext().get(), v1::GetStatsRequest(), &response);
  if (!status.ok()) return FromGrpc(status);
  return response;
}

absl::StatusOr<v1::SetLogLevelResponse> ControlClient::SetLogLevel(
    const std::string& component, const std::string& level) {
  v1::SetLogLevelRequest request;
  request.set_component(component);
  request.set_level(level);
  v1::SetLogLevelResponse response;
  grpc::Status status =
      stub_->SetLogLevel(UnaryContext().get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response;
}

absl::StatusOr<v1::ListLogLevelsResponse> ControlClient::ListLogLevels(
    bool include_dpdk) {
  v1::ListLogLevelsRequest request;
  request.set_include_dpdk(include_dpdk);
  v1::ListLogLevelsResponse response;
  grpc::Status status =
      stub_->ListLogLevels(UnaryContext().get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response;
}

absl::StatusOr<uint32_t> ControlClient::AddPeer(const v1::DiadPeer& peer) {
  v1::AddPeerRequest request;
  *request.mutable_peer() = peer;
  v1::AddPeerResponse response;
  grpc::Status status =
      diad_stub_->AddPeer(UnaryContext().get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response.slot();
}

absl::Status ControlClient::RemovePeer(const std::string& name) {
  v1::RemovePeerRequest request;
  request.set_name(name);
  v1::RemovePeerResponse response;
  return FromGrpc(
      diad_stub_->RemovePeer(UnaryContext().get(), request, &response));
}

absl::StatusOr<v1::ListPeersResponse> ControlClient::ListPeers() {
  v1::ListPeersResponse response;
  grpc::Status status = diad_stub_->ListPeers(
      UnaryContext().get(), v1::ListPeersRequest(), &response);
  if (!status.ok()) return FromGrpc(status);
  return response;
}

absl::StatusOr<uint32_t> ControlClient::CreateQp(
    const v1::CreateQpRequest& request) {
  v1::CreateQpResponse response;
  grpc::Status status =
      roce_stub_->CreateQp(UnaryContext().get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response.qpn();
}

absl::Status ControlClient::DestroyQp(uint32_t qpn) {
  v1::DestroyQpRequest request;
  request.set_qpn(qpn);
  v1::DestroyQpResponse response;
  return FromGrpc(
      roce_stub_->DestroyQp(UnaryContext().get(), request, &response));
}

absl::StatusOr<v1::ListQpsResponse> ControlClient::ListQps() {
  v1::ListQpsResponse response;
  grpc::Status status = roce_stub_->ListQps(UnaryContext().get(),
                                            v1::ListQpsRequest(), &response);
  if (!status.ok()) return FromGrpc(status);
  return response;
}

absl::StatusOr<v1::SetServiceResponse> ControlClient::SetService(
    const v1::SetServiceRequest& request) {
  v1::SetServiceResponse response;
  grpc::Status status =
      roce_stub_->SetService(UnaryContext().get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response;
}

absl::StatusOr<v1::QpExecuteResponse> ControlClient::QpExecute(
    const v1::QpExecuteRequest& request) {
  v1::QpExecuteResponse response;
  grpc::Status status = roce_stub_->QpExecute(
      RemoteContext(request.timeout_ms()).get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response;
}

absl::StatusOr<v1::RemoteWriteResponse> ControlClient::RemoteWrite(
    const v1::RemoteWriteRequest& request) {
  v1::RemoteWriteResponse response;
  grpc::Status status = diad_stub_->RemoteWrite(
      RemoteContext(request.timeout_ms()).get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response;
}

absl::StatusOr<v1::RemoteReadResponse> ControlClient::RemoteRead(
    const v1::RemoteReadRequest& request) {
  v1::RemoteReadResponse response;
  // timeout_ms is per read: N repeated reads may take N times as long.
  const uint64_t per_read =
      request.timeout_ms() == 0 ? 10000 : request.timeout_ms();
  const uint64_t reads = std::max<uint32_t>(request.repeat(), 1);
  grpc::Status status = diad_stub_->RemoteRead(
      RemoteContext(per_read * reads).get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response;
}

absl::StatusOr<v1::StreamSendResponse> ControlClient::StreamSend(
    const v1::StreamSendRequest& request) {
  v1::StreamSendResponse response;
  grpc::Status status = diad_stub_->StreamSend(
      RemoteContext(request.timeout_ms()).get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response;
}

absl::Status ControlClient::WatchStats(
    uint32_t interval_ms,
    const std::function<bool(const v1::Stats&)>& on_stats) {
  grpc::ClientContext context;
  v1::WatchStatsRequest request;
  request.set_interval_ms(interval_ms);
  std::unique_ptr<grpc::ClientReader<v1::Stats>> reader =
      stub_->WatchStats(&context, request);
  auto [status, stopped] = ReadStream(context, *reader, on_stats);
  if (stopped) return absl::OkStatus();
  return FromGrpc(status);
}

absl::Status ControlClient::WatchEvents(
    const std::function<bool(const v1::Event&)>& on_event,
    absl::Duration max_wait) {
  grpc::ClientContext context;
  if (max_wait != absl::InfiniteDuration()) {
    context.set_deadline(absl::ToChronoTime(absl::Now() + max_wait));
  }
  std::unique_ptr<grpc::ClientReader<v1::Event>> reader =
      stub_->WatchEvents(&context, v1::WatchEventsRequest());
  auto [status, stopped] = ReadStream(context, *reader, on_event);
  if (stopped) return absl::OkStatus();
  // The deadline is the caller's max_wait running out, not a failure.
  if (max_wait != absl::InfiniteDuration() &&
      status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    return absl::OkStatus();
  }
  return FromGrpc(status);
}

void StreamCanceller::Cancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
  if (context_ != nullptr) context_->TryCancel();
}

bool StreamCanceller::cancelled() const {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

void StreamCanceller::Attach(grpc::ClientContext* context) {
  absl::MutexLock lock(&mu_);
  context_ = context;
  if (cancelled_) context_->TryCancel();
}

void StreamCanceller::Detach() {
  absl::MutexLock lock(&mu_);
  context_ = nullptr;
}

absl::Status ControlClient::Capture(
    const v1::CaptureRequest& request,
    const std::function<bool(const v1::CaptureReply&)>& on_reply,
    StreamCanceller* canceller) {
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReader<v1::CaptureReply>> reader =
      stub_->Capture(&context, request);
  if (canceller != nullptr) canceller->Attach(&context);
  auto [status, stopped] = ReadStream(context, *reader, on_reply);
  if (canceller != nullptr) canceller->Detach();
  if (stopped) return absl::OkStatus();
  if (canceller != nullptr && canceller->cancelled() &&
      status.error_code() == grpc::StatusCode::CANCELLED) {
    return absl::OkStatus();
  }
  return FromGrpc(status);
}

absl::StatusOr<bool> ControlClient::CheckHealth(const std::string& service) {
  absl::StatusOr<HealthStatus> status =
      HealthCheck(channel_, service, timeout_);
  if (!status.ok()) return status.status();
  return *status == grpc::health::v1::HealthCheckResponse::SERVING;
}

}  // namespace spinnic
