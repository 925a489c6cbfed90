// spinnicd's gRPC listeners: the Spinnic service plus standard health checking
// and server reflection (so grpcurl and health probes work). By default on a
// Unix socket only its owner may use; optionally also on TCP, which needs TLS
// (mutual TLS when a client CA is given) unless it is explicitly started
// insecure on a loopback address. Bounded: message sizes and concurrent
// streams are configured, never left unbounded.
#ifndef SPINNIC_CONTROL_GRPC_CONTROL_SERVER_H_
#define SPINNIC_CONTROL_GRPC_CONTROL_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "control/grpc/spinnic_service.h"
#include "grpcpp/server.h"

namespace spinnic {

struct ControlServerOptions {
  // Created with mode 0600, its directory 0700. May be empty only when
  // tcp_address is set.
  std::string unix_socket;
  // HOST:PORT, e.g. "127.0.0.1:50051", "[::1]:50051", "0.0.0.0:50051"; port 0
  // picks a free port (see ControlServer::tcp_port). Empty: no TCP listener.
  std::string tcp_address;
  // PEM files. cert + key make the TCP listener TLS; a client CA on top makes
  // it mutual TLS (clients must present a certificate that CA signed).
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_client_ca_file;
  // Plain-text TCP, accepted only on a loopback address.
  bool insecure_tcp = false;
  int max_message_bytes = 4 << 20;
  int max_concurrent_streams = 16;
  // Memory all control connections together may hold in gRPC's buffers (a
  // grpc::ResourceQuota); 0: unbounded. gRPC 1.51 receives the whole of an
  // oversized request before it answers RESOURCE_EXHAUSTED, so without a
  // bound, clients sending 32 MB requests at once grow spinnicd by their sum;
  // at the bound gRPC closes connections (GOAWAY) to get memory back, any
  // connections. 1 GiB: 400 busy connections (grpc_abuse's heavy form) stay
  // below it; at 256 MiB their own buffers reached it and gRPC closed some.
  int memory_quota_mib = 1024;
};

// Bounds ValidateControlServerOptions enforces. Below the minimum message
// size some responses (GetInfo, ListHandlerKinds) would no longer fit.
inline constexpr int kMinControlMessageBytes = 4 << 10;
inline constexpr int kMaxControlMessageBytes = 256 << 20;
inline constexpr int kMaxControlConcurrentStreams = 1024;
// The quota holds at least this many largest messages (one request and its
// response); below that a legitimate call could be refused for memory.
inline constexpr int kMinQuotaMessages = 2;

// Checks a combination of options without starting anything (files are only
// read). INVALID_ARGUMENT says what to change, in terms of spinnicd's flags.
absl::Status ValidateControlServerOptions(const ControlServerOptions& options);

// True when `host` (no port, no brackets) names the loopback interface:
// 127.0.0.0/8, ::1 or "localhost". The wildcards 0.0.0.0 and :: are not.
bool IsLoopbackHost(const std::string& host);

class ControlServer {
 public:
  // Validates `options` (INVALID_ARGUMENT as above) and starts serving.
  // FAILED_PRECONDITION names the socket or address that cannot be listened
  // on and why.
  static absl::StatusOr<std::unique_ptr<ControlServer>> Start(
      const ControlServerOptions& options, const v1::Config& config,
      Dataplane* dataplane);
  ~ControlServer();

  // Cancels streams, waits for calls in progress, removes the socket.
  void Shutdown();

  SpinnicService& service() { return *service_; }

  // grpc.health.v1: SERVING or NOT_SERVING for the server ("") and every
  // service it serves (spinnicd: an HPU stalled, a link down).
  void SetServing(bool serving);

  // The TCP port actually bound (the one picked for port 0); 0 without TCP.
  int tcp_port() const { return tcp_port_; }

  // Where it listens, for the daemon's start-up line, e.g.
  // "unix:/run/spinnic/spinnicd.sock, tcp 127.0.0.1:50051 (mutual TLS)".
  std::string Describe() const;

 private:
  ControlServer() = default;
  ControlServerOptions options_;
  int tcp_port_ = 0;
  std::unique_ptr<SpinnicService> service_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace spinnic

#endif  // SPINNIC_CONTROL_GRPC_CONTROL_SERVER_H_
