#include "control/grpc/control_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "control/grpc/audit_interceptor.h"
#include "grpc/health/v1/health.pb.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/resource_quota.h"
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

struct HostPort {
  std::string host;  // without brackets
  int port = 0;
};

absl::StatusOr<HostPort> SplitHostPort(const std::string& address) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("--control_tcp: '", address, "' ", why,
                     "; write HOST:PORT, e.g. 127.0.0.1:50051, [::1]:50051 or "
                     "0.0.0.0:50051"));
  };
  HostPort result;
  std::string port;
  if (absl::StartsWith(address, "[")) {
    size_t close_bracket = address.find(']');
    if (close_bracket == std::string::npos ||
        address.size() <= close_bracket + 1 ||
        address[close_bracket + 1] != ':') {
      return bad("has no ]:PORT after the IPv6 address");
    }
    result.host = address.substr(1, close_bracket - 1);
    port = address.substr(close_bracket + 2);
  } else {
    size_t colon = address.rfind(':');
    if (colon == std::string::npos) return bad("has no port");
    result.host = address.substr(0, colon);
    port = address.substr(colon + 1);
    if (absl::StrContains(result.host, ':')) {
      return bad("is an IPv6 address without brackets");
    }
  }
  // An empty host would make gRPC listen on every address: say so instead.
  if (result.host.empty()) return bad("has no host");
  if (!absl::SimpleAtoi(port, &result.port) || result.port < 0 ||
      result.port > 65535) {
    return bad("has no port number in 0..65535");
  }
  return result;
}

// The PEM contents the TCP listener's credentials are made of.
struct TlsMaterial {
  std::string cert;
  std::string key;
  std::string client_ca;
};

// Reads a PEM file named by `flag`; the marker check catches a swapped or
// DER file here, with its name, instead of as an anonymous handshake failure.
absl::StatusOr<std::string> ReadPem(absl::string_view flag,
                                    const std::string& path,
                                    absl::string_view marker) {
  std::ifstream file(path, std::ios::binary);
  if (!file.is_open()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": cannot read ", path, ": ", std::strerror(errno),
                     "; check the path and that spinnicd's user may read it"));
  }
  std::stringstream contents;
  contents << file.rdbuf();
  std::string pem = contents.str();
  if (!absl::StrContains(pem, marker)) {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, ": ", path, " has no '", marker,
        "' block; it needs a PEM file (convert DER with "
        "`openssl x509 -inform der` / `openssl pkey -inform der`)"));
  }
  return pem;
}

// The socket's directory exists or can be made, by reading only: the
// nearest existing ancestor must be a directory spinnicd may write, so that
// a bad --control_socket stops spinnicd before anything starts.
absl::Status CheckSocketDirectory(const std::string& socket) {
  if (socket.empty()) return absl::OkStatus();
  std::filesystem::path directory = std::filesystem::path(socket).parent_path();
  if (directory.empty()) directory = ".";
  std::error_code error;
  while (!std::filesystem::exists(directory, error) &&
         directory.has_parent_path() && directory != directory.parent_path()) {
    directory = directory.parent_path();
  }
  // A relative path none of whose directories exists yet.
  if (!std::filesystem::exists(directory, error)) directory = ".";
  const bool is_directory = std::filesystem::is_directory(directory, error);
  if (!is_directory || access(directory.c_str(), W_OK | X_OK) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--control_socket: cannot create ", socket, ": ", directory.string(),
        is_directory ? absl::StrCat(" is not writable by spinnicd (",
                                    std::strerror(errno), ")")
                     : " is not a directory",
        "; pass --control_socket with a path in a directory spinnicd's user "
        "may write, or create that directory for it"));
  }
  return absl::OkStatus();
}

// Everything ValidateControlServerOptions checks; returns the PEM contents
// so that Start reads each file once.
absl::StatusOr<TlsMaterial> CheckOptions(const ControlServerOptions& options) {
  if (options.max_message_bytes < kMinControlMessageBytes ||
      options.max_message_bytes > kMaxControlMessageBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("--control_max_message_bytes: ", options.max_message_bytes,
                     " is out of range; use ", kMinControlMessageBytes, "..",
                     kMaxControlMessageBytes, " (default ", 4 << 20, ")"));
  }
  if (options.max_concurrent_streams < 1 ||
      options.max_concurrent_streams > kMaxControlConcurrentStreams) {
    return absl::InvalidArgumentError(
        absl::StrCat("--control_max_streams: ", options.max_concurrent_streams,
                     " is out of range; use 1..", kMaxControlConcurrentStreams,
                     " (default 16)"));
  }
  const int64_t min_quota_mib =
      (int64_t{kMinQuotaMessages} * options.max_message_bytes + (1 << 20) -
       1) >>
      20;
  if (options.memory_quota_mib < 0 ||
      (options.memory_quota_mib > 0 &&
       options.memory_quota_mib < min_quota_mib)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--control_memory_mb: ", options.memory_quota_mib,
        " cannot hold a request and a response of --control_max_message_bytes "
        "(",
        options.max_message_bytes, "); use at least ", min_quota_mib,
        ", or 0 for no bound (default 1024)"));
  }
  // sun_path holds the path and its terminating NUL.
  if (options.unix_socket.size() >= sizeof(sockaddr_un{}.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--control_socket: '", options.unix_socket, "' is longer than ",
        sizeof(sockaddr_un{}.sun_path) - 1,
        " bytes, the limit of a Unix socket path; choose a shorter path"));
  }
  if (absl::Status status = CheckSocketDirectory(options.unix_socket);
      !status.ok()) {
    return status;
  }
  const bool any_tls = !options.tls_cert_file.empty() ||
                       !options.tls_key_file.empty() ||
                       !options.tls_client_ca_file.empty();
  if (options.tcp_address.empty()) {
    if (any_tls || options.insecure_tcp) {
      return absl::InvalidArgumentError(
          "--control_tls_cert, --control_tls_key, --control_tls_client_ca and "
          "--control_insecure_tcp only apply to a TCP listener: add "
          "--control_tcp=HOST:PORT or drop them");
    }
    if (options.unix_socket.empty()) {
      return absl::InvalidArgumentError(
          "control API: nothing to listen on; set --control_socket or "
          "--control_tcp");
    }
    return TlsMaterial{};
  }
  absl::StatusOr<HostPort> host_port = SplitHostPort(options.tcp_address);
  if (!host_port.ok()) return host_port.status();
  if (options.insecure_tcp && any_tls) {
    return absl::InvalidArgumentError(
        "--control_insecure_tcp together with --control_tls_* is ambiguous: "
        "drop --control_insecure_tcp to serve TLS, or the TLS files to serve "
        "plain text on loopback");
  }
  if (options.insecure_tcp) {
    if (!IsLoopbackHost(host_port->host)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--control_insecure_tcp: '", host_port->host,
          "' is not a loopback address, and plain-text TCP would let anyone "
          "who reaches it control the appliance; use 127.0.0.1, [::1] or "
          "localhost, or serve TLS there with --control_tls_cert and "
          "--control_tls_key"));
    }
    return TlsMaterial{};
  }
  if (!options.tls_client_ca_file.empty() &&
      (options.tls_cert_file.empty() || options.tls_key_file.empty())) {
    return absl::InvalidArgumentError(
        "--control_tls_client_ca needs the server's own certificate too: pass "
        "--control_tls_cert and --control_tls_key with it");
  }
  if (options.tls_cert_file.empty() && options.tls_key_file.empty()) {
    return absl::InvalidArgumentError(
        "TCP needs TLS: pass --control_tls_cert and --control_tls_key, or "
        "--control_insecure_tcp on a loopback address");
  }
  if (options.tls_cert_file.empty() || options.tls_key_file.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TLS needs both the certificate and its private key: pass ",
        options.tls_cert_file.empty() ? "--control_tls_cert"
                                      : "--control_tls_key",
        " too"));
  }
  TlsMaterial tls;
  absl::StatusOr<std::string> pem =
      ReadPem("--control_tls_cert", options.tls_cert_file, "CERTIFICATE-----");
  if (!pem.ok()) return pem.status();
  tls.cert = *std::move(pem);
  pem = ReadPem("--control_tls_key", options.tls_key_file, "PRIVATE KEY-----");
  if (!pem.ok()) return pem.status();
  // A daemon has nobody to ask for the passphrase.
  if (absl::StrContains(*pem, "ENCRYPTED PRIVATE KEY-----")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--control_tls_key: ", options.tls_key_file,
        " is encrypted; give spinnicd an unencrypted key readable only by "
        "its user (`openssl pkey -in KEY -out PLAIN.key`, then chmod 600)"));
  }
  tls.key = *std::move(pem);
  if (!options.tls_client_ca_file.empty()) {
    pem = ReadPem("--control_tls_client_ca", options.tls_client_ca_file,
                  "CERTIFICATE-----");
    if (!pem.ok()) return pem.status();
    tls.client_ca = *std::move(pem);
  }
  return tls;
}

std::shared_ptr<grpc::ServerCredentials> TcpCredentials(
    const ControlServerOptions& options, const TlsMaterial& tls) {
  if (options.insecure_tcp) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions ssl(
      tls.client_ca.empty()
          ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
          : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  ssl.pem_key_cert_pairs.push_back({tls.key, tls.cert});
  ssl.pem_root_certs = tls.client_ca;
  return grpc::SslServerCredentials(ssl);
}

// Prepares the socket's directory and clears a stale socket.
absl::Status PrepareUnixSocket(const std::string& socket) {
  std::filesystem::path path(socket);
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
    if (SocketIsLive(socket)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "control socket: ", socket,
          " is in use (another spinnicd?); stop it or pass --control_socket "
          "elsewhere"));
    }
    // Left by a run that did not stop cleanly.
    std::filesystem::remove(path, error);
  }
  return absl::OkStatus();
}

}  // namespace

bool IsLoopbackHost(const std::string& host) {
  if (absl::AsciiStrToLower(host) == "localhost") return true;
  in_addr v4;
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6;
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    return IN6_IS_ADDR_LOOPBACK(&v6);
  }
  return false;
}

absl::Status ValidateControlServerOptions(const ControlServerOptions& options) {
  return CheckOptions(options).status();
}

absl::StatusOr<std::unique_ptr<ControlServer>> ControlServer::Start(
    const ControlServerOptions& options, const v1::Config& config,
    Dataplane* dataplane) {
  absl::StatusOr<TlsMaterial> tls = CheckOptions(options);
  if (!tls.ok()) return tls.status();
  std::unique_ptr<ControlServer> server(new ControlServer());
  server->options_ = options;
  if (!options.unix_socket.empty()) {
    if (absl::Status status = PrepareUnixSocket(options.unix_socket);
        !status.ok()) {
      return status;
    }
  }
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  // libgrpc++ serves grpc.health.v1.Health without its C++ descriptor, and
  // nothing else here references health.pb.o, so the static link would drop
  // it: this keeps it, putting the health service in the pool reflection
  // describes.
  grpc::health::v1::HealthCheckRequest::descriptor();
  server->service_ = std::make_unique<SpinnicService>(config, dataplane);
  grpc::ServerBuilder builder;
  int unix_bound = 0;
  if (!options.unix_socket.empty()) {
    builder.AddListeningPort(absl::StrCat("unix:", options.unix_socket),
                             grpc::InsecureServerCredentials(), &unix_bound);
  }
  if (!options.tcp_address.empty()) {
    builder.AddListeningPort(options.tcp_address, TcpCredentials(options, *tls),
                             &server->tcp_port_);
  }
  builder.RegisterService(server->service_.get());
  for (const auto& feature : server->service_->features()) {
    builder.RegisterService(feature->service());
  }
  // One audit line per mutating call (audit_interceptor.h).
  std::vector<
      std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
      interceptors;
  interceptors.push_back(std::make_unique<AuditInterceptorFactory>());
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  if (options.memory_quota_mib > 0) {
    grpc::ResourceQuota quota("spinnic-control");
    quota.Resize(size_t{static_cast<size_t>(options.memory_quota_mib)} << 20);
    builder.SetResourceQuota(quota);
  }
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                             options.max_concurrent_streams);
  // gRPC sets SO_REUSEPORT by default: a second spinnicd on the same port
  // would then start "fine" and take half the connections. Fail instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // Owner-only from the moment the socket exists: no window in which another
  // user could connect before a chmod.
  mode_t old_mask = umask(0177);  // socket mode 0600
  server->server_ = builder.BuildAndStart();
  umask(old_mask);
  if (server->server_ == nullptr) {
    // gRPC binds in the order added and stops at the first failure.
    if (!options.unix_socket.empty() && unix_bound == 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "control socket: cannot listen on ", options.unix_socket,
          "; is another spinnicd using it? pass --control_socket elsewhere"));
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "control API: cannot listen on tcp ", options.tcp_address,
        " (port in use, or not an address of this host?); pass another "
        "--control_tcp"));
  }
  // Probes may ask for the API by name as well as for the server ("").
  if (grpc::HealthCheckServiceInterface* health =
          server->server_->GetHealthCheckService();
      health != nullptr) {
    health->SetServingStatus(v1::Spinnic::service_full_name(), true);
    for (const auto& feature : server->service_->features()) {
      health->SetServingStatus(std::string(feature->service_name()), true);
    }
  }
  return server;
}

std::string ControlServer::Describe() const {
  std::string description;
  if (!options_.unix_socket.empty()) {
    absl::StrAppend(&description, "unix:", options_.unix_socket);
  }
  if (!options_.tcp_address.empty()) {
    absl::StatusOr<HostPort> host_port = SplitHostPort(options_.tcp_address);
    std::string host = host_port.ok() ? host_port->host : "?";
    if (absl::StrContains(host, ':')) host = absl::StrCat("[", host, "]");
    absl::StrAppend(&description, description.empty() ? "" : ", ", "tcp ", host,
                    ":", tcp_port_, " (",
                    options_.insecure_tcp                  ? "INSECURE loopback"
                    : !options_.tls_client_ca_file.empty() ? "mutual TLS"
                                                           : "TLS",
                    ")");
  }
  return description;
}

void ControlServer::SetServing(bool serving) {
  if (server_ == nullptr) return;
  if (grpc::HealthCheckServiceInterface* health =
          server_->GetHealthCheckService();
      health != nullptr) {
    health->SetServingStatus(serving);
  }
}

ControlServer::~ControlServer() { Shutdown(); }

void ControlServer::Shutdown() {
  if (server_ == nullptr) return;
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  server_.reset();
  if (!options_.unix_socket.empty()) {
    std::error_code error;
    std::filesystem::remove(options_.unix_socket, error);
  }
}

}  // namespace spinnic
