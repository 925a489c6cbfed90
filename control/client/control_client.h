// A C++ client of spinnicd's control API (proto/spinnic/v1/control.proto),
// used by spinctl and by anything else that drives the appliance from C++.
//
// Every call returns the server's canonical gRPC code and message unchanged
// as an absl::Status (the two share the code numbering), so a caller can
// branch on NOT_FOUND or ALREADY_EXISTS and show people the server's words.
// Unary calls get a deadline of ClientOptions::timeout; an expired one is
// DEADLINE_EXCEEDED. A ControlClient may be used from several threads.
#ifndef SPINNIC_CONTROL_CLIENT_CONTROL_CLIENT_H_
#define SPINNIC_CONTROL_CLIENT_CONTROL_CLIENT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/channel.h"
#include "spinnic/v1/control.grpc.pb.h"
#include "spinnic/v1/diad.grpc.pb.h"
#include "spinnic/v1/roce.grpc.pb.h"

namespace spinnic {

// spinnicd's default control socket (its --control_socket default).
inline constexpr char kDefaultControlSocket[] = "/run/spinnic/spinnicd.sock";

struct ClientOptions {
  // "unix:/path" or a bare path ("/run/...", "./x.sock") for the Unix
  // socket; anything else ("host:port", "dns:///host:port") is TCP.
  std::string target = std::string("unix:") + kDefaultControlSocket;
  // TCP only. Without tls_ca_file the system's default roots verify the
  // server; tls_cert_file and tls_key_file (both or neither) make it mutual.
  std::string tls_ca_file;
  std::string tls_cert_file;
  std::string tls_key_file;
  // TCP only: plaintext, for a server started insecure on loopback. Cannot be
  // combined with the TLS files.
  bool insecure = false;
  // Connect() waits this long for the channel; each unary call's deadline.
  absl::Duration timeout = absl::Seconds(10);
  // TCP with TLS only: the name the server's certificate must carry, when it
  // differs from the target's host (e.g. connecting by IP address).
  std::string tls_server_name;
};

// Ends a stream call from another thread (spinctl capture's Ctrl-C). A
// Cancel before the call starts ends it as soon as it does.
class StreamCanceller {
 public:
  void Cancel();
  bool cancelled() const;

 private:
  friend class ControlClient;
  void Attach(grpc::ClientContext* context);
  void Detach();

  mutable absl::Mutex mu_;
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

class ControlClient {
 public:
  // Opens a channel and waits up to `options.timeout` for it to be ready.
  // INVALID_ARGUMENT for bad options (naming the unreadable file or the
  // conflicting settings); UNAVAILABLE when the server cannot be reached,
  // with a message that says what to check.
  static absl::StatusOr<std::unique_ptr<ControlClient>> Connect(
      const ClientOptions& options);

  // The target as dialled ("unix:/run/spinnic/spinnicd.sock").
  const std::string& target() const { return target_; }

  absl::StatusOr<v1::GetInfoResponse> GetInfo();
  absl::StatusOr<v1::ListHandlerKindsResponse> ListHandlerKinds();

  // Returns the new ECTX's id.
  absl::StatusOr<uint32_t> InstallHandler(
      const v1::InstallHandlerRequest& request);
  absl::Status RemoveHandler(const std::string& name);
  absl::StatusOr<v1::ListHandlersResponse> ListHandlers();
  // `length` 0 reads to the end of the state.
  absl::StatusOr<std::string> ReadHandlerState(const std::string& name,
                                               uint32_t offset,
                                               uint32_t length);

  absl::StatusOr<v1::RegisterRegionResponse> RegisterRegion(
      const v1::RegisterRegionRequest& request);
  absl::Status DeregisterRegion(uint64_t id);
  absl::StatusOr<v1::ListRegionsResponse> ListRegions();
  absl::StatusOr<std::string> ReadRegion(uint64_t id, uint64_t offset,
                                         uint64_t length);
  absl::Status WriteRegion(uint64_t id, uint64_t offset,
                           const std::string& data);

  absl::StatusOr<v1::Stats> GetStats();

  // Hitless reload (docs/reload.md).
  absl::StatusOr<v1::ApplyConfigResponse> ApplyConfig(
      const v1::ApplyConfigRequest& request);
  absl::StatusOr<v1::GetRunningConfigResponse> GetRunningConfig();
  // Log levels (docs/logs.md): `component` a spinnic component ("roce"), a
  // DPDK type or glob, or "global"; `level` a name or 1..8.
  absl::StatusOr<v1::SetLogLevelResponse> SetLogLevel(
      const std::string& component, const std::string& level);
  absl::StatusOr<v1::ListLogLevelsResponse> ListLogLevels(bool include_dpdk);

  // DiAD peers (spinnic.v1.DiadService). AddPeer returns the peer's slot.
  absl::StatusOr<uint32_t> AddPeer(const v1::DiadPeer& peer);
  absl::Status RemovePeer(const std::string& name);
  absl::StatusOr<v1::ListPeersResponse> ListPeers();
  // DiAD remote operations. Their deadline is ClientOptions::timeout plus
  // the request's timeout_ms (0: the server's 10 s; for RemoteRead times
  // its repeat, timeout_ms being per read), so that the server's answer,
  // DEADLINE_EXCEEDED included, arrives before the call expires.
  absl::StatusOr<v1::RemoteWriteResponse> RemoteWrite(
      const v1::RemoteWriteRequest& request);
  absl::StatusOr<v1::RemoteReadResponse> RemoteRead(
      const v1::RemoteReadRequest& request);
  absl::StatusOr<v1::StreamSendResponse> StreamSend(
      const v1::StreamSendRequest& request);

  // RoCE queue pairs created by hand (spinnic.v1.RoceService). CreateQp
  // returns the new QPN.
  absl::StatusOr<uint32_t> CreateQp(const v1::CreateQpRequest& request);
  absl::Status DestroyQp(uint32_t qpn);
  absl::StatusOr<v1::ListQpsResponse> ListQps();
  absl::StatusOr<v1::SetServiceResponse> SetService(
      const v1::SetServiceRequest& request);
  // RDMA operations on a QP (its deadline allows for timeout_ms).
  absl::StatusOr<v1::QpExecuteResponse> QpExecute(
      const v1::QpExecuteRequest& request);

  // Streams. `on_*` runs on the calling thread for every message; returning
  // false ends the stream and the call returns OK. Otherwise the call returns
  // when the server ends the stream, with the server's status.
  absl::Status WatchStats(
      uint32_t interval_ms,
      const std::function<bool(const v1::Stats&)>& on_stats);
  // Also returns OK once `max_wait` has passed (absl::InfiniteDuration():
  // never), so "wait up to N seconds for events" needs no timer of its own.
  absl::Status WatchEvents(
      const std::function<bool(const v1::Event&)>& on_event,
      absl::Duration max_wait);

  // A frame capture (docs/capture.md): `on_reply` gets the started
  // message, the frame batches and the summary. Returns OK when the server
  // ended the capture, `on_reply` returned false, or `canceller` (may be
  // null) cancelled it; else the server's status (INVALID_ARGUMENT for a
  // filter, FAILED_PRECONDITION while another capture runs there).
  absl::Status Capture(
      const v1::CaptureRequest& request,
      const std::function<bool(const v1::CaptureReply&)>& on_reply,
      StreamCanceller* canceller);

  // grpc.health.v1.Health/Check for `service` ("" = the server as a whole,
  // "spinnic.v1.Spinnic" = the API). True when SERVING; NOT_FOUND when the
  // server does not know `service`.
  absl::StatusOr<bool> CheckHealth(const std::string& service);

 private:
  ControlClient(std::string target, std::shared_ptr<grpc::Channel> channel,
                absl::Duration timeout);

  // A context whose deadline is `timeout_` from now.
  std::unique_ptr<grpc::ClientContext> UnaryContext() const;
  // A context for a remote operation that may take `timeout_ms` (0: 10 s)
  // on the server.
  std::unique_ptr<grpc::ClientContext> RemoteContext(uint64_t timeout_ms) const;

  std::string target_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Spinnic::Stub> stub_;
  std::unique_ptr<v1::DiadService::Stub> diad_stub_;
  std::unique_ptr<v1::RoceService::Stub> roce_stub_;
  absl::Duration timeout_;
};

}  // namespace spinnic

#endif  // SPINNIC_CONTROL_CLIENT_CONTROL_CLIENT_H_
