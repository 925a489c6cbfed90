// spinnicd's gRPC listener: the Spinnic service plus standard health checking
// and server reflection (so grpcurl and health probes work), on a Unix socket
// only its owner may use. Bounded: message sizes and concurrent streams are
// configured, never left unbounded.
#ifndef SPINNIC_CONTROL_GRPC_CONTROL_SERVER_H_
#define SPINNIC_CONTROL_GRPC_CONTROL_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "control/grpc/spinnic_service.h"
#include "grpcpp/server.h"

namespace spinnic {

struct ControlServerOptions {
  std::string unix_socket;  // created with mode 0600; its directory 0700
  int max_message_bytes = 4 << 20;
  int max_concurrent_streams = 16;
};

class ControlServer {
 public:
  // Starts serving. FAILED_PRECONDITION says why the socket cannot be made.
  static absl::StatusOr<std::unique_ptr<ControlServer>> Start(
      const ControlServerOptions& options, const v1::Config& config,
      Dataplane* dataplane);
  ~ControlServer();

  // Cancels streams, waits for calls in progress, removes the socket.
  void Shutdown();

  SpinnicService& service() { return *service_; }

 private:
  ControlServer() = default;
  std::string socket_path_;
  std::unique_ptr<SpinnicService> service_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace spinnic

#endif  // SPINNIC_CONTROL_GRPC_CONTROL_SERVER_H_
