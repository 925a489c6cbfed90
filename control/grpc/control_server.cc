#include "control/grpc/control_server.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"

namespace spinnic {
namespace {

// True when something accepts connections on the Unix socket `path`.
bool SocketIsLive(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  bool live =
      connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  close(fd);
  return live;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ControlServer>> ControlServer::Start(
    const ControlServerOptions& options, const v1::Config& config,
    Dataplane* dataplane) {
  std::unique_ptr<ControlServer> server(new ControlServer());
  server->socket_path_ = options.unix_socket;
  std::filesystem::path path(options.unix_socket);
  std::error_code error;
  if (path.has_parent_path()) {
    bool created =
        std::filesystem::create_directories(path.parent_path(), error);
    if (created) {
      std::filesystem::permissions(path.parent_path(),
                                   std::filesystem::perms::owner_all, error);
    }
    if (error) {
      return absl::FailedPreconditionError(absl::StrCat(
          "control socket: cannot create ", path.parent_path().string(), ": ",
          error.message(), "; pass --control_socket with a writable path"));
    }
  }
  if (std::filesystem::is_socket(path, error)) {
    if (SocketIsLive(options.unix_socket)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "control socket: ", options.unix_socket,
          " is in use (another spinnicd?); stop it or pass --control_socket "
          "elsewhere"));
    }
    // Left by a run that did not stop cleanly.
    std::filesystem::remove(path, error);
  }
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  server->service_ = std::make_unique<SpinnicService>(config, dataplane);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(absl::StrCat("unix:", options.unix_socket),
                           grpc::InsecureServerCredentials());
  builder.RegisterService(server->service_.get());
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                             options.max_concurrent_streams);
  // Owner-only from the moment the socket exists: no window in which another
  // user could connect before a chmod.
  mode_t old_mask = umask(0177);  // socket mode 0600
  server->server_ = builder.BuildAndStart();
  umask(old_mask);
  if (server->server_ == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "control socket: cannot listen on ", options.unix_socket,
        "; is another spinnicd using it? pass --control_socket elsewhere"));
  }
  return server;
}

ControlServer::~ControlServer() { Shutdown(); }

void ControlServer::Shutdown() {
  if (server_ == nullptr) return;
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  server_.reset();
  std::error_code error;
  std::filesystem::remove(socket_path_, error);
}

}  // namespace spinnic
