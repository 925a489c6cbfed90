// The control API's listeners end to end: TLS and mutual TLS on TCP with
// certificates made by the openssl CLI at test time, plain TCP only on
// loopback, the option checks, standard health checking and server
// reflection, and the configured message-size and stream limits. A real
// dataplane (net_ring ports, EAL without hugepages) stands behind the server.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "control/grpc/control_server.h"
#include "gmock/gmock.h"
#include "google/protobuf/descriptor.pb.h"
#include "google/protobuf/unknown_field_set.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/byte_buffer.h"
#include "gtest/gtest.h"
#include "spinnic/v1/control.grpc.pb.h"
#include "tests/common/ring_dataplane.h"

namespace spinnic {
namespace {

using ::testing::HasSubstr;

std::string ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

// A CA, a server certificate for localhost/127.0.0.1 and a client
// certificate it signed, plus an unrelated "rogue" CA with its own client
// certificate. Made once per process by the openssl CLI.
struct Certs {
  std::string dir;
  std::string path(const std::string& name) const {
    return absl::StrCat(dir, "/", name);
  }
  std::string pem(const std::string& name) const {
    return ReadFile(path(name));
  }
};

// Empty `error`: made. Otherwise why not (the test skips or fails on it).
Certs MakeCerts(std::string* error) {
  Certs certs;
  if (std::system("command -v openssl >/dev/null 2>&1") != 0) {
    *error = "openssl is not on PATH (deploy/install-deps.sh installs it)";
    return certs;
  }
  char dir[] = "/tmp/spinnic-tls-certs-XXXXXX";
  if (mkdtemp(dir) == nullptr) {
    *error = "mkdtemp failed";
    return certs;
  }
  certs.dir = dir;
  // Extensions spelled out, so that the result does not depend on the
  // system's openssl.cnf.
  std::ofstream(certs.path("ext.cnf")) << R"([req]
distinguished_name = dn
[dn]
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[server]
basicConstraints = CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost,IP:127.0.0.1
[client]
basicConstraints = CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = clientAuth
)";
  // ca NAME; leaf NAME ISSUER CN SERIAL EXTENSIONS. EC keys: fast to make.
  const std::string script = absl::StrCat("cd ", certs.dir, R"( && {
set -e
key='-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes'
ca() {
  openssl req -x509 $key -keyout $1.key -out $1.crt -days 2 -subj /CN=$1 \
    -config ext.cnf -extensions ca
}
leaf() {
  openssl req -new $key -keyout $1.key -out $1.csr -subj /CN=$3 -config ext.cnf
  openssl x509 -req -in $1.csr -CA $2.crt -CAkey $2.key -set_serial $4 \
    -days 2 -out $1.crt -extfile ext.cnf -extensions $5
}
ca ca
ca rogue_ca
leaf server ca localhost 2 server
leaf client ca operator 3 client
leaf rogue_client rogue_ca operator 4 client
} > openssl.log 2>&1)");
  if (std::system(script.c_str()) != 0) {
    *error = absl::StrCat("openssl failed making test certificates: ",
                          ReadFile(certs.path("openssl.log")));
  }
  return certs;
}

grpc::ByteBuffer ToByteBuffer(const std::string& bytes) {
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

std::string FromByteBuffer(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string bytes;
  if (!buffer.Dump(&slices).ok()) return bytes;
  for (const grpc::Slice& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return bytes;
}

// Debian's gRPC packages install no reflection proto, so its messages are
// encoded by hand. Only what these tests send: one length-delimited field
// (wire type 2) shorter than 128 bytes, so that its length is a one-byte
// varint.
std::string StringField(int number, const std::string& value) {
  EXPECT_LT(value.size(), 128u);
  return absl::StrCat(std::string(1, static_cast<char>((number << 3) | 2)),
                      std::string(1, static_cast<char>(value.size())), value);
}

// Waits for the completion of `tag` on `cq`; returns its ok bit.
bool Await(grpc::CompletionQueue& cq, void* tag) {
  void* got = nullptr;
  bool ok = false;
  EXPECT_TRUE(cq.Next(&got, &ok));
  EXPECT_EQ(got, tag);
  return ok;
}

void DrainAndShutdown(grpc::CompletionQueue& cq) {
  cq.Shutdown();
  void* got;
  bool ok;
  while (cq.Next(&got, &ok)) {
  }
}

std::chrono::system_clock::time_point Deadline(int ms = 10'000) {
  return std::chrono::system_clock::now() + std::chrono::milliseconds(ms);
}

// grpc.health.v1.Health/Check for `service`. On OK, *serving holds the
// response's status (1 = SERVING, 2 = NOT_SERVING).
grpc::Status HealthCheck(const std::shared_ptr<grpc::Channel>& channel,
                         const std::string& service, uint64_t* serving) {
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  grpc::ClientContext context;
  context.set_deadline(Deadline());
  grpc::Status status = grpc::health::v1::Health::NewStub(channel)->Check(
      &context, request, &response);
  *serving = status.ok() ? response.status() : 0;
  return status;
}

// ServerReflectionInfo with the one (encoded) request; the responses, still
// encoded, in *responses.
grpc::Status ReflectionInfo(const std::shared_ptr<grpc::Channel>& channel,
                            const std::string& request,
                            std::vector<std::string>* responses) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(Deadline());
  grpc::CompletionQueue cq;
  auto call = stub.PrepareCall(
      &context,
      "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", &cq);
  int tag;
  call->StartCall(&tag);
  Await(cq, &tag);
  call->Write(ToByteBuffer(request), &tag);
  Await(cq, &tag);
  call->WritesDone(&tag);
  Await(cq, &tag);
  grpc::ByteBuffer response;
  for (;;) {
    call->Read(&response, &tag);
    if (!Await(cq, &tag)) break;
    responses->push_back(FromByteBuffer(response));
  }
  grpc::Status status;
  call->Finish(&status, &tag);
  Await(cq, &tag);
  DrainAndShutdown(cq);
  return status;
}

// ServerReflectionInfo with one list_services request; the names listed.
grpc::Status ListServices(const std::shared_ptr<grpc::Channel>& channel,
                          std::vector<std::string>* names) {
  // ServerReflectionRequest { oneof { string list_services = 7; } }: the
  // oneof member is on the wire even when empty.
  std::vector<std::string> responses;
  grpc::Status status = ReflectionInfo(channel, StringField(7, ""), &responses);
  // ServerReflectionResponse { ListServiceResponse list_services_response =
  // 6; } ListServiceResponse { repeated ServiceResponse service = 1; }
  // ServiceResponse { string name = 1; }
  for (const std::string& bytes : responses) {
    google::protobuf::UnknownFieldSet top;
    if (!top.ParseFromString(bytes)) continue;
    for (int i = 0; i < top.field_count(); ++i) {
      if (top.field(i).number() != 6) continue;
      google::protobuf::UnknownFieldSet list;
      if (!list.ParseFromString(top.field(i).length_delimited())) continue;
      for (int j = 0; j < list.field_count(); ++j) {
        if (list.field(j).number() != 1) continue;
        google::protobuf::UnknownFieldSet service;
        if (!service.ParseFromString(list.field(j).length_delimited())) {
          continue;
        }
        for (int k = 0; k < service.field_count(); ++k) {
          if (service.field(k).number() == 1) {
            names->push_back(service.field(k).length_delimited());
          }
        }
      }
    }
  }
  return status;
}

// ServerReflectionInfo with one file_containing_symbol request. The encoded
// FileDescriptorProtos of a file_descriptor_response go to *files (the one
// defining `symbol` first); an error_response goes to *error as
// "<code>: <message>".
grpc::Status FileContainingSymbol(const std::shared_ptr<grpc::Channel>& channel,
                                  const std::string& symbol,
                                  std::vector<std::string>* files,
                                  std::string* error) {
  // ServerReflectionRequest { oneof { string file_containing_symbol = 4; } }
  std::vector<std::string> responses;
  grpc::Status status =
      ReflectionInfo(channel, StringField(4, symbol), &responses);
  // ServerReflectionResponse { FileDescriptorResponse
  // file_descriptor_response = 4; ErrorResponse error_response = 7; }
  // FileDescriptorResponse { repeated bytes file_descriptor_proto = 1; }
  // ErrorResponse { int32 error_code = 1; string error_message = 2; }
  for (const std::string& bytes : responses) {
    google::protobuf::UnknownFieldSet top;
    if (!top.ParseFromString(bytes)) continue;
    for (int i = 0; i < top.field_count(); ++i) {
      if (top.field(i).number() != 4 && top.field(i).number() != 7) continue;
      google::protobuf::UnknownFieldSet inner;
      if (!inner.ParseFromString(top.field(i).length_delimited())) continue;
      if (top.field(i).number() == 4) {
        for (int j = 0; j < inner.field_count(); ++j) {
          if (inner.field(j).number() == 1) {
            files->push_back(inner.field(j).length_delimited());
          }
        }
        continue;
      }
      std::string code = "?";
      std::string message;
      for (int j = 0; j < inner.field_count(); ++j) {
        if (inner.field(j).number() == 1) {
          code = absl::StrCat(inner.field(j).varint());
        } else if (inner.field(j).number() == 2) {
          message = inner.field(j).length_delimited();
        }
      }
      *error = absl::StrCat(code, ": ", message);
    }
  }
  return status;
}

// Each channel gets its own connection: gRPC otherwise shares subchannels
// between channels in a process, and a test about credentials must not
// reuse another client's handshake.
grpc::ChannelArguments OwnConnection() {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return args;
}

std::shared_ptr<grpc::Channel> PlainChannel(const std::string& target) {
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(),
                                   OwnConnection());
}

// Trusts `ca_pem`; presents a client certificate when `client` names one.
std::shared_ptr<grpc::Channel> TlsChannel(int port, const std::string& ca_pem,
                                          const Certs* certs = nullptr,
                                          const std::string& client = "") {
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = ca_pem;
  if (!client.empty()) {
    ssl.pem_cert_chain = certs->pem(client + ".crt");
    ssl.pem_private_key = certs->pem(client + ".key");
  }
  // By IP: the server certificate's IP SAN is what gets checked.
  return grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", port),
                                   grpc::SslCredentials(ssl), OwnConnection());
}

grpc::Status GetInfo(const std::shared_ptr<grpc::Channel>& channel) {
  auto stub = v1::Spinnic::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(Deadline());
  v1::GetInfoResponse info;
  return stub->GetInfo(&context, {}, &info);
}

// One EAL and one set of certificates per process.
class TlsTestEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    ASSERT_TRUE(
        InitEal({"control_tls_test", "--no-huge", "-m", "256", "--no-pci",
                 "--no-shconf", "--lcores", "0@0,1@0", "--log-level", "4"})
            .ok());
    certs = MakeCerts(&certs_error);
  }
  void TearDown() override {
    std::error_code error;
    if (!certs.dir.empty()) std::filesystem::remove_all(certs.dir, error);
  }

  Certs certs;
  std::string certs_error;
};

TlsTestEnvironment* const environment = static_cast<TlsTestEnvironment*>(
    ::testing::AddGlobalTestEnvironment(new TlsTestEnvironment));

class ControlTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static int instance = 0;
    auto rings =
        testing_rings::RingDataplane::Create(absl::StrCat("tls", ++instance));
    ASSERT_TRUE(rings.ok()) << rings.status();
    rings_ = *std::move(rings);
    config_ = rings_->config();
    socket_dir_ = absl::StrCat("/tmp/spinnic-tls-test-", getpid());
  }

  void TearDown() override {
    servers_.clear();
    rings_.reset();
    std::error_code error;
    std::filesystem::remove_all(socket_dir_, error);
  }

  ControlServerOptions TlsOptions(bool mutual) {
    ControlServerOptions options;
    options.tcp_address = "127.0.0.1:0";
    options.tls_cert_file = certs_->path("server.crt");
    options.tls_key_file = certs_->path("server.key");
    if (mutual) options.tls_client_ca_file = certs_->path("ca.crt");
    return options;
  }

  // Starts a server kept until the end of the test.
  absl::StatusOr<ControlServer*> Start(const ControlServerOptions& options) {
    auto server = ControlServer::Start(options, config_, &rings_->dataplane());
    if (!server.ok()) return server.status();
    servers_.push_back(*std::move(server));
    return servers_.back().get();
  }

  // A server on the Unix socket and on TCP (TLS when openssl made the
  // certificates, else plain loopback), and a client channel to each.
  void StartOnUnixAndTcp(
      std::vector<std::shared_ptr<grpc::Channel>>* channels) {
    const bool tls = environment->certs_error.empty();
    ControlServerOptions options;
    if (tls) {
      options = TlsOptions(/*mutual=*/false);
    } else {
      options.tcp_address = "127.0.0.1:0";
      options.insecure_tcp = true;
    }
    options.unix_socket = SocketPath();
    auto server = Start(options);
    ASSERT_TRUE(server.ok()) << server.status();
    const int port = (*server)->tcp_port();
    channels->push_back(PlainChannel(absl::StrCat("unix:", SocketPath())));
    channels->push_back(tls ? TlsChannel(port, certs_->pem("ca.crt"))
                            : PlainChannel(absl::StrCat("127.0.0.1:", port)));
  }

  std::string SocketPath() const {
    return absl::StrCat(socket_dir_, "/s.sock");
  }

  const Certs* certs_ = &environment->certs;
  v1::Config config_;
  std::unique_ptr<testing_rings::RingDataplane> rings_;
  std::string socket_dir_;
  std::vector<std::unique_ptr<ControlServer>> servers_;
};

// The tests that need certificates: skipped without openssl, failed when
// openssl could not make them.
class ControlTlsCertsTest : public ControlTlsTest {
 protected:
  void SetUp() override {
    if (certs_->dir.empty()) GTEST_SKIP() << environment->certs_error;
    ASSERT_TRUE(environment->certs_error.empty()) << environment->certs_error;
    ControlTlsTest::SetUp();
  }
};

TEST_F(ControlTlsCertsTest, TlsListenerServesTlsClientsAndRefusesPlainOnes) {
  auto server = Start(TlsOptions(/*mutual=*/false));
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->tcp_port();
  ASSERT_GT(port, 0);
  EXPECT_EQ((*server)->Describe(),
            absl::StrCat("tcp 127.0.0.1:", port, " (TLS)"));

  EXPECT_TRUE(GetInfo(TlsChannel(port, certs_->pem("ca.crt"))).ok());

  grpc::Status plain = GetInfo(PlainChannel(absl::StrCat("127.0.0.1:", port)));
  EXPECT_EQ(plain.error_code(), grpc::StatusCode::UNAVAILABLE)
      << plain.error_message();
  // A client that does not trust the issuer must not get through either.
  grpc::Status untrusting =
      GetInfo(TlsChannel(port, certs_->pem("rogue_ca.crt")));
  EXPECT_EQ(untrusting.error_code(), grpc::StatusCode::UNAVAILABLE)
      << untrusting.error_message();
}

TEST_F(ControlTlsCertsTest,
       MutualTlsNeedsAClientCertificateFromTheConfiguredCa) {
  auto server = Start(TlsOptions(/*mutual=*/true));
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->tcp_port();
  EXPECT_EQ((*server)->Describe(),
            absl::StrCat("tcp 127.0.0.1:", port, " (mutual TLS)"));
  const std::string ca = certs_->pem("ca.crt");

  grpc::Status no_cert = GetInfo(TlsChannel(port, ca));
  EXPECT_EQ(no_cert.error_code(), grpc::StatusCode::UNAVAILABLE)
      << no_cert.error_message();
  grpc::Status rogue = GetInfo(TlsChannel(port, ca, certs_, "rogue_client"));
  EXPECT_EQ(rogue.error_code(), grpc::StatusCode::UNAVAILABLE)
      << rogue.error_message();
  grpc::Status good = GetInfo(TlsChannel(port, ca, certs_, "client"));
  EXPECT_TRUE(good.ok()) << good.error_message();
}

// eBPF handlers (docs/bpf.md) uploaded as bytes over the Unix socket and
// over mutual TLS: ListHandlers shows each with how it runs (runtime); a
// program the loader refuses gets INVALID_ARGUMENT with the loader's words.
TEST_F(ControlTlsCertsTest, BpfProgramsOverUnixAndMutualTlsListTheirRuntime) {
#if !defined(SPINNIC_BPF_EXAMPLES_DIR) || !defined(SPINNIC_BPF_TEST_DIR)
  GTEST_SKIP() << "no clang: the eBPF programs were not built";
#else
  ControlServerOptions options = TlsOptions(/*mutual=*/true);
  options.unix_socket = SocketPath();
  auto server = Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  auto unix_stub =
      v1::Spinnic::NewStub(PlainChannel(absl::StrCat("unix:", SocketPath())));
  auto tls_stub = v1::Spinnic::NewStub(TlsChannel(
      (*server)->tcp_port(), certs_->pem("ca.crt"), certs_, "client"));
  auto install = [](v1::Spinnic::Stub& stub, const std::string& name,
                    const std::string& object) {
    v1::InstallHandlerRequest request;
    request.mutable_handler()->set_name(name);
    request.mutable_handler()->set_kind("bpf");
    request.mutable_handler()->set_state_size(16);
    (*request.mutable_handler()->mutable_params())["program"] =
        absl::BytesToHexString(ReadFile(object));
    grpc::ClientContext context;
    context.set_deadline(Deadline());
    v1::InstallHandlerResponse response;
    return stub.InstallHandler(&context, request, &response);
  };
  const std::string count = absl::StrCat(SPINNIC_BPF_EXAMPLES_DIR, "/count.o");
  grpc::Status over_unix = install(*unix_stub, "count-unix", count);
  ASSERT_TRUE(over_unix.ok()) << over_unix.error_message();
  grpc::Status over_tls = install(*tls_stub, "count-tls", count);
  ASSERT_TRUE(over_tls.ok()) << over_tls.error_message();

  grpc::Status refused =
      install(*tls_stub, "loop", absl::StrCat(SPINNIC_BPF_TEST_DIR, "/loop.o"));
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(refused.error_message(),
              HasSubstr("spin/payload, instruction 10: jumps back into a "
                        "loop; unroll it"));
  grpc::Status not_elf = install(*tls_stub, "text", certs_->path("ext.cnf"));
  EXPECT_EQ(not_elf.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(not_elf.error_message(), HasSubstr("not an ELF object"));

  for (v1::Spinnic::Stub* stub : {unix_stub.get(), tls_stub.get()}) {
    grpc::ClientContext context;
    context.set_deadline(Deadline());
    v1::ListHandlersResponse list;
    grpc::Status status = stub->ListHandlers(&context, {}, &list);
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_EQ(list.stats_size(), 2);
    ASSERT_EQ(list.handlers_size(), 2);
    for (int i = 0; i < 2; ++i) {
      EXPECT_THAT(list.handlers(i).name(), ::testing::StartsWith("count-"));
      EXPECT_EQ(list.handlers(i).kind(), "bpf");
      EXPECT_EQ(list.stats(i).kind(), "bpf");
      EXPECT_EQ(list.stats(i).runtime(), "jit: payload 13 insns")
          << list.stats(i).name();
    }
  }
#endif
}

TEST_F(ControlTlsTest, InsecureTcpServesPlainClientsOnLoopback) {
  ControlServerOptions options;
  options.unix_socket = SocketPath();
  options.tcp_address = "127.0.0.1:0";
  options.insecure_tcp = true;
  auto server = Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->tcp_port();
  ASSERT_GT(port, 0);
  EXPECT_EQ((*server)->Describe(),
            absl::StrCat("unix:", SocketPath(), ", tcp 127.0.0.1:", port,
                         " (INSECURE loopback)"));
  EXPECT_TRUE(GetInfo(PlainChannel(absl::StrCat("127.0.0.1:", port))).ok());
  EXPECT_TRUE(GetInfo(PlainChannel(absl::StrCat("unix:", SocketPath()))).ok());
}

TEST_F(ControlTlsTest, PortInUseIsAFailedPreconditionNamingTheAddress) {
  ControlServerOptions options;
  options.tcp_address = "127.0.0.1:0";
  options.insecure_tcp = true;
  auto first = Start(options);
  ASSERT_TRUE(first.ok()) << first.status();
  options.tcp_address = absl::StrCat("127.0.0.1:", (*first)->tcp_port());
  options.unix_socket = SocketPath();
  auto second = Start(options);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(second.status().message(),
              HasSubstr(absl::StrCat("tcp ", options.tcp_address)));
  // Its Unix socket was bound first (gRPC unlinks it as it gives up): a
  // failed start must not leave a socket nothing answers on.
  EXPECT_FALSE(std::filesystem::exists(SocketPath()));
}

TEST_F(ControlTlsTest, HealthAnswersServingOnUnixAndTcp) {
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  ASSERT_NO_FATAL_FAILURE(StartOnUnixAndTcp(&channels));
  for (const auto& channel : channels) {
    constexpr uint64_t kServing = 1;
    uint64_t serving = 0;
    grpc::Status status = HealthCheck(channel, "", &serving);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(serving, kServing);
    // The API and each feature's service, by name.
    for (const char* service : {"spinnic.v1.Spinnic", "spinnic.v1.DiadService",
                                "spinnic.v1.RoceService"}) {
      serving = 0;
      status = HealthCheck(channel, service, &serving);
      ASSERT_TRUE(status.ok()) << service << ": " << status.error_message();
      EXPECT_EQ(serving, kServing) << service;
    }
    EXPECT_EQ(HealthCheck(channel, "no.such.Service", &serving).error_code(),
              grpc::StatusCode::NOT_FOUND);
  }
}

TEST_F(ControlTlsTest, ReflectionListsTheServices) {
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  ASSERT_NO_FATAL_FAILURE(StartOnUnixAndTcp(&channels));
  for (const auto& channel : channels) {
    std::vector<std::string> names;
    grpc::Status status = ListServices(channel, &names);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_THAT(names, ::testing::IsSupersetOf(
                           {"spinnic.v1.Spinnic", "spinnic.v1.DiadService",
                            "spinnic.v1.RoceService", "grpc.health.v1.Health",
                            "grpc.reflection.v1alpha.ServerReflection"}));
  }
}

// The health service is libgrpc++'s, but spinnicd carries its descriptor, so
// reflection clients (grpcurl) can call it without a .proto file.
TEST_F(ControlTlsTest, ReflectionDescribesTheHealthService) {
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  ASSERT_NO_FATAL_FAILURE(StartOnUnixAndTcp(&channels));
  for (const auto& channel : channels) {
    std::vector<std::string> files;
    std::string error;
    grpc::Status status =
        FileContainingSymbol(channel, "grpc.health.v1.Health", &files, &error);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(error, "");
    ASSERT_FALSE(files.empty());
    google::protobuf::FileDescriptorProto file;
    ASSERT_TRUE(file.ParseFromString(files[0]));
    EXPECT_EQ(file.name(), "grpc/health/v1/health.proto");
    EXPECT_EQ(file.package(), "grpc.health.v1");
    ASSERT_EQ(file.service_size(), 1);
    EXPECT_EQ(file.service(0).name(), "Health");
  }
}

TEST_F(ControlTlsTest, OversizedRequestIsResourceExhausted) {
  ControlServerOptions options;
  options.unix_socket = SocketPath();
  options.max_message_bytes = 64 << 10;
  ASSERT_TRUE(Start(options).ok());
  auto stub =
      v1::Spinnic::NewStub(PlainChannel(absl::StrCat("unix:", SocketPath())));
  v1::InstallHandlerRequest request;
  request.mutable_handler()->set_name("big");
  request.mutable_handler()->set_kind("count");
  request.mutable_handler()->set_state_size(128 << 10);
  request.mutable_handler()->set_initial_state(std::string(128 << 10, 'x'));
  grpc::ClientContext context;
  context.set_deadline(Deadline());
  v1::InstallHandlerResponse response;
  grpc::Status status = stub->InstallHandler(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << status.error_message();

  // Under the limit the same call goes through.
  request.mutable_handler()->set_state_size(16 << 10);
  request.mutable_handler()->set_initial_state(std::string(16 << 10, 'x'));
  grpc::ClientContext small;
  small.set_deadline(Deadline());
  status = stub->InstallHandler(&small, request, &response);
  EXPECT_TRUE(status.ok()) << status.error_message();
}

TEST_F(ControlTlsTest, StreamsBeyondTheLimitWait) {
  ControlServerOptions options;
  options.unix_socket = SocketPath();
  options.max_concurrent_streams = 1;
  ASSERT_TRUE(Start(options).ok());
  auto stub =
      v1::Spinnic::NewStub(PlainChannel(absl::StrCat("unix:", SocketPath())));
  grpc::ClientContext watch;
  v1::WatchStatsRequest request;
  request.set_interval_ms(100);
  auto stream = stub->WatchStats(&watch, request);
  v1::Stats stats;
  ASSERT_TRUE(stream->Read(&stats));  // the one allowed stream is open

  grpc::ClientContext blocked;
  blocked.set_deadline(Deadline(500));
  v1::GetInfoResponse info;
  EXPECT_EQ(stub->GetInfo(&blocked, {}, &info).error_code(),
            grpc::StatusCode::DEADLINE_EXCEEDED);

  watch.TryCancel();
  while (stream->Read(&stats)) {
  }
  stream->Finish();
  grpc::ClientContext after;
  after.set_deadline(Deadline());
  EXPECT_TRUE(stub->GetInfo(&after, {}, &info).ok());
}

// The option checks need no server, no EAL and no real files.
ControlServerOptions Tcp(const std::string& address) {
  ControlServerOptions options;
  options.tcp_address = address;
  return options;
}

void ExpectInvalid(const ControlServerOptions& options,
                   const std::string& substring) {
  absl::Status status = ValidateControlServerOptions(options);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(status.message(), HasSubstr(substring));
}

TEST(ControlOptionsTest, AcceptsTheDefaultsAndLoopbackInsecure) {
  EXPECT_TRUE(
      ValidateControlServerOptions({.unix_socket = "/tmp/x.sock"}).ok());
  for (const char* address : {"127.0.0.1:0", "127.1.2.3:50051", "[::1]:50051",
                              "localhost:50051", "LocalHost:1"}) {
    ControlServerOptions options = Tcp(address);
    options.insecure_tcp = true;
    EXPECT_TRUE(ValidateControlServerOptions(options).ok()) << address;
  }
}

TEST(ControlOptionsTest, InsecureOnlyOnLoopback) {
  for (const char* address :
       {"0.0.0.0:50051", "[::]:50051", "10.1.2.3:50051", "192.168.0.1:1",
        "[2001:db8::1]:50051", "example.com:50051"}) {
    ControlServerOptions options = Tcp(address);
    options.insecure_tcp = true;
    ExpectInvalid(options, "not a loopback address");
  }
}

TEST(ControlOptionsTest, TcpNeedsTls) {
  ExpectInvalid(Tcp("0.0.0.0:50051"),
                "TCP needs TLS: pass --control_tls_cert and --control_tls_key, "
                "or --control_insecure_tcp on a loopback address");
  ControlServerOptions cert_only = Tcp("0.0.0.0:50051");
  cert_only.tls_cert_file = "/x.crt";
  ExpectInvalid(cert_only, "pass --control_tls_key too");
  ControlServerOptions ca_only = Tcp("0.0.0.0:50051");
  ca_only.tls_client_ca_file = "/ca.crt";
  ExpectInvalid(ca_only, "--control_tls_client_ca needs the server's own");
}

TEST(ControlOptionsTest, TlsAndInsecureTogetherAreAmbiguous) {
  ControlServerOptions options = Tcp("127.0.0.1:50051");
  options.insecure_tcp = true;
  options.tls_cert_file = "/x.crt";
  options.tls_key_file = "/x.key";
  ExpectInvalid(options, "ambiguous");
}

TEST(ControlOptionsTest, MissingOrNonPemFilesAreNamed) {
  ControlServerOptions options = Tcp("0.0.0.0:50051");
  options.tls_cert_file = "/nonexistent/spinnic-server.crt";
  options.tls_key_file = "/nonexistent/spinnic-server.key";
  ExpectInvalid(
      options,
      "--control_tls_cert: cannot read /nonexistent/spinnic-server.crt");

  char dir[] = "/tmp/spinnic-tls-opts-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string not_pem = absl::StrCat(dir, "/server.der");
  std::ofstream(not_pem) << "not a certificate";
  options.tls_cert_file = not_pem;
  ExpectInvalid(options, absl::StrCat("--control_tls_cert: ", not_pem,
                                      " has no 'CERTIFICATE-----' block"));
  // Readable PEM, but encrypted: spinnicd could not ask for the passphrase.
  std::ofstream(not_pem) << "-----BEGIN CERTIFICATE-----\n";
  const std::string encrypted = absl::StrCat(dir, "/server.key");
  std::ofstream(encrypted) << "-----BEGIN ENCRYPTED PRIVATE KEY-----\n";
  options.tls_key_file = encrypted;
  ExpectInvalid(options, absl::StrCat(encrypted, " is encrypted"));
  std::filesystem::remove_all(dir);
}

TEST(ControlOptionsTest, TlsFilesWithoutTcpHaveNoEffect) {
  ControlServerOptions options;
  options.unix_socket = "/tmp/x.sock";
  options.tls_cert_file = "/x.crt";
  ExpectInvalid(options, "only apply to a TCP listener");
  ExpectInvalid({}, "nothing to listen on");
}

TEST(ControlOptionsTest, BadAddressesAndLimits) {
  ControlServerOptions options = Tcp("50051");
  options.insecure_tcp = true;
  ExpectInvalid(options, "has no port");
  options.tcp_address = "::1:50051";
  ExpectInvalid(options, "without brackets");
  options.tcp_address = ":50051";
  ExpectInvalid(options, "has no host");
  options.tcp_address = "127.0.0.1:70000";
  ExpectInvalid(options, "0..65535");

  ControlServerOptions limits = {.unix_socket = "/tmp/x.sock"};
  for (int bytes : {0, -1, 100, 1 << 30}) {
    limits.max_message_bytes = bytes;
    ExpectInvalid(limits, "--control_max_message_bytes");
  }
  limits.max_message_bytes = 64 << 10;
  for (int streams : {0, -5, 100000}) {
    limits.max_concurrent_streams = streams;
    ExpectInvalid(limits, "--control_max_streams");
  }
  limits.max_concurrent_streams = 16;
  limits.max_message_bytes = 200 << 20;  // a request and a response: 400 MiB
  for (int mib : {-1, 1, 399}) {
    limits.memory_quota_mib = mib;
    ExpectInvalid(limits, "--control_memory_mb");
  }
  for (int mib : {0, 400}) {
    limits.memory_quota_mib = mib;
    EXPECT_TRUE(ValidateControlServerOptions(limits).ok()) << mib;
  }
  ExpectInvalid({.unix_socket = std::string(200, 's')}, "--control_socket");
}

TEST(ControlOptionsTest, LoopbackHosts) {
  EXPECT_TRUE(IsLoopbackHost("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackHost("127.255.0.9"));
  EXPECT_TRUE(IsLoopbackHost("::1"));
  EXPECT_TRUE(IsLoopbackHost("localhost"));
  EXPECT_FALSE(IsLoopbackHost("0.0.0.0"));
  EXPECT_FALSE(IsLoopbackHost("::"));
  EXPECT_FALSE(IsLoopbackHost("128.0.0.1"));
  EXPECT_FALSE(IsLoopbackHost("localhost.example.com"));
  EXPECT_FALSE(IsLoopbackHost(""));
}

}  // namespace
}  // namespace spinnic
