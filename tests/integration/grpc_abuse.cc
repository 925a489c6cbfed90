// grpc_abuse: a hostile client of spinnicd's control API (issue 20, item 3;
// tests/integration/grpc_abuse.sh runs it, docs/control-security.md
// "Abuse test" says what it sends and asserts).
//
// Against every method of spinnic.v1.Spinnic, DiadService, RoceService and
// grpc.health.v1.Health, over every --target (unix:PATH, or HOST:PORT with
// TLS), from --clients concurrent clients (one connection each), it sends
// --requests requests in all: request messages filled at random through
// protobuf reflection (random and out-of-range numbers, open-enum values no
// one defined, huge strings and repeated fields, names that exist and names
// that do not), those messages' serialized bytes corrupted or cut short,
// raw random bytes, and empty messages. Then streams opened and never read
// (WatchStats, WatchEvents, Capture, Health.Watch) dropped by a cancel, and
// requests above the server's --control_max_message_bytes. A prober checks
// health (SERVING) on every target throughout.
//
// Every call must end with a status before its deadline; UNKNOWN, INTERNAL,
// UNAVAILABLE and UNIMPLEMENTED count as failures, except INTERNAL for bytes
// that do not parse as the request type (gRPC's own "failed to parse"
// answer, before any spinnic code runs). Exit 0 when there was no failure,
// 1 otherwise; the codes seen per method go to stdout and --summary (JSON).
//
// --abandon_and_exit: open the never-read streams and leave with _exit(0)
// (the kernel closes the connections under the server's feet).
// --cleanup (default on): afterwards remove every handler, region, DiAD peer
// and RoCE QP the run left behind, so that RSS can be compared.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "google/protobuf/stubs/logging.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/security/credentials.h"
#include "spinnic/v1/control.grpc.pb.h"
#include "spinnic/v1/diad.grpc.pb.h"
#include "spinnic/v1/roce.grpc.pb.h"

ABSL_FLAG(std::vector<std::string>, target, {},
          "comma-separated: unix:PATH (plain) or HOST:PORT (TLS)");
ABSL_FLAG(std::string, tls_ca, "", "PEM CA of the TLS targets");
ABSL_FLAG(std::string, tls_cert, "", "PEM client certificate (mutual TLS)");
ABSL_FLAG(std::string, tls_key, "", "PEM client key (mutual TLS)");
ABSL_FLAG(int, requests, 10000, "random requests in all");
ABSL_FLAG(int, clients, 100, "concurrent clients, one connection each");
ABSL_FLAG(int, abandoned, 40, "never-read streams per target");
ABSL_FLAG(int, abandon_hold_ms, 1000, "how long they stay open unread");
ABSL_FLAG(bool, abandon_and_exit, false,
          "open the never-read streams, then _exit(0)");
ABSL_FLAG(uint64_t, max_message_bytes, 4 << 20,
          "the server's --control_max_message_bytes");
ABSL_FLAG(int, deadline_ms, 10000,
          "deadline of every unary call (plus 1 s per MiB above the limit)");
ABSL_FLAG(int, flood_clients, 0,
          "clients per target sending one --flood_bytes request at once");
ABSL_FLAG(uint64_t, flood_bytes, 32 << 20, "size of each flood request");
ABSL_FLAG(int, stream_ms, 300,
          "deadline of a stream the server accepted but keeps silent");
ABSL_FLAG(uint64_t, seed, 1, "random seed");
ABSL_FLAG(std::vector<std::string>, only, {},
          "random phase: only the methods whose path contains one of these");
ABSL_FLAG(bool, cleanup, true, "remove what the run installed, afterwards");
ABSL_FLAG(std::string, summary, "", "write the figures as JSON here");

namespace {

namespace pb = ::google::protobuf;
using Rng = std::mt19937_64;

struct Method {
  std::string path;  // /package.Service/Method
  const pb::Descriptor* input;
  bool streaming;  // server streaming
};

std::vector<Method> AllMethods() {
  std::vector<Method> methods;
  // Each file's descriptor is linked in (and so in the generated pool).
  spinnic::v1::GetInfoRequest::descriptor();
  spinnic::v1::AddPeerRequest::descriptor();
  spinnic::v1::CreateQpRequest::descriptor();
  grpc::health::v1::HealthCheckRequest::descriptor();
  const pb::DescriptorPool* pool = pb::DescriptorPool::generated_pool();
  const pb::ServiceDescriptor* services[] = {
      pool->FindServiceByName("spinnic.v1.Spinnic"),
      pool->FindServiceByName("spinnic.v1.DiadService"),
      pool->FindServiceByName("spinnic.v1.RoceService"),
      pool->FindServiceByName("grpc.health.v1.Health"),
  };
  for (const pb::ServiceDescriptor* service : services) {
    if (service == nullptr) {
      fprintf(stderr, "grpc_abuse: a service descriptor is missing\n");
      exit(2);
    }
    for (int i = 0; i < service->method_count(); ++i) {
      const pb::MethodDescriptor* m = service->method(i);
      if (m->client_streaming()) continue;  // none in these services
      const std::string path =
          absl::StrCat("/", service->full_name(), "/", m->name());
      const std::vector<std::string> only = absl::GetFlag(FLAGS_only);
      if (!only.empty() &&
          std::none_of(only.begin(), only.end(), [&](const std::string& o) {
            return absl::StrContains(path, o);
          })) {
        continue;
      }
      methods.push_back(
          {absl::StrCat("/", service->full_name(), "/", m->name()),
           m->input_type(), m->server_streaming()});
    }
  }
  return methods;
}

std::unique_ptr<pb::Message> NewRequest(const pb::Descriptor* d) {
  return std::unique_ptr<pb::Message>(
      pb::MessageFactory::generated_factory()->GetPrototype(d)->New());
}

// ---- random values ----------------------------------------------------------

uint64_t Pick(Rng& rng, uint64_t n) {
  return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng);
}
bool Chance(Rng& rng, double p) {
  return std::uniform_real_distribution<double>(0, 1)(rng) < p;
}

std::string RandomBytes(Rng& rng, size_t n) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

std::string RandomPrintable(Rng& rng, size_t n) {
  std::string s(n, ' ');
  for (char& c : s) c = static_cast<char>(' ' + Pick(rng, 95));
  return s;
}

std::string RandomString(Rng& rng) {
  static const char* const kWords[] = {
      "",
      "p0",
      "p1",
      "count",
      "filter",
      "reflect",
      "null",
      "xor_payload",
      "bpf",
      "abuse",
      "spinnic.roce",
      "spinnic.*",
      "lib.eal",
      "err",
      "warning",
      "fd00::1",
      "192.0.2.1",
      "02:00:00:00:00:01",
      "ip_proto: 1",
      "tcp port 80",
      "((((((((((",
      "handlers { name: \"abuse\" kind: \"count\" }",
      "ports { name: \"p9\" vdev: \"net_null9\" }",
      "../../../../etc/passwd",
      "%s%s%s%n%n",
      "\xc3\xa9t\xc3\xa9",
  };
  switch (Pick(rng, 10)) {
    case 0:
    case 1:
    case 2:
    case 3:
      return kWords[Pick(rng, std::size(kWords))];
    case 4:
      return absl::StrCat("abuse-", Pick(rng, 64));
    case 5:
      return RandomPrintable(rng, 1 + Pick(rng, 4096));
    case 6:
      // Huge (inside the message limit), rarely.
      if (Chance(rng, 0.2))
        return std::string(256 * 1024 + Pick(rng, 1 << 20), 'A');
      return RandomPrintable(rng, Pick(rng, 300));
    default:
      return RandomPrintable(rng, Pick(rng, 32));
  }
}

uint64_t RandomU64(Rng& rng, uint64_t bits) {
  static const uint64_t kEdges[] = {0,
                                    1,
                                    2,
                                    3,
                                    7,
                                    8,
                                    63,
                                    64,
                                    100,
                                    1500,
                                    4096,
                                    4097,
                                    9000,
                                    65535,
                                    65536,
                                    1u << 20,
                                    (1u << 20) + 1,
                                    1u << 24,
                                    1u << 30,
                                    0x7fffffff,
                                    0x80000000,
                                    0xffffffff,
                                    uint64_t{1} << 32,
                                    uint64_t{1} << 40,
                                    uint64_t{1} << 63,
                                    UINT64_MAX - 1,
                                    UINT64_MAX};
  uint64_t v = Chance(rng, 0.6) ? kEdges[Pick(rng, std::size(kEdges))] : rng();
  if (Chance(rng, 0.2)) v = Pick(rng, 16);
  return bits >= 64 ? v : (v & ((uint64_t{1} << bits) - 1));
}

void FillMessage(pb::Message* m, Rng& rng, int depth);

void SetField(pb::Message* m, const pb::FieldDescriptor* f, Rng& rng,
              int depth) {
  const pb::Reflection* r = m->GetReflection();
  const bool rep = f->is_repeated();
  switch (f->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_INT32: {
      auto v = static_cast<int32_t>(RandomU64(rng, 32));
      rep ? r->AddInt32(m, f, v) : r->SetInt32(m, f, v);
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_INT64: {
      auto v = static_cast<int64_t>(RandomU64(rng, 64));
      rep ? r->AddInt64(m, f, v) : r->SetInt64(m, f, v);
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_UINT32: {
      auto v = static_cast<uint32_t>(RandomU64(rng, 32));
      rep ? r->AddUInt32(m, f, v) : r->SetUInt32(m, f, v);
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_UINT64: {
      uint64_t v = RandomU64(rng, 64);
      rep ? r->AddUInt64(m, f, v) : r->SetUInt64(m, f, v);
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_DOUBLE:
    case pb::FieldDescriptor::CPPTYPE_FLOAT: {
      static const double kDoubles[] = {0.0,
                                        -0.0,
                                        1.0,
                                        -1.0,
                                        1e308,
                                        -1e308,
                                        std::numeric_limits<double>::infinity(),
                                        std::nan("")};
      double v = kDoubles[Pick(rng, std::size(kDoubles))];
      if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_FLOAT) {
        rep ? r->AddFloat(m, f, static_cast<float>(v))
            : r->SetFloat(m, f, static_cast<float>(v));
      } else {
        rep ? r->AddDouble(m, f, v) : r->SetDouble(m, f, v);
      }
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_BOOL: {
      bool v = Chance(rng, 0.5);
      rep ? r->AddBool(m, f, v) : r->SetBool(m, f, v);
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_ENUM: {
      // Proto3 enums are open: values nobody defined are legal on the wire.
      int v = Chance(rng, 0.6)
                  ? f->enum_type()
                        ->value(Pick(rng, f->enum_type()->value_count()))
                        ->number()
                  : static_cast<int>(RandomU64(rng, 31)) -
                        (Chance(rng, 0.3) ? 5 : 0);
      rep ? r->AddEnumValue(m, f, v) : r->SetEnumValue(m, f, v);
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_STRING: {
      std::string v;
      if (f->type() == pb::FieldDescriptor::TYPE_BYTES) {
        v = Chance(rng, 0.3)
                ? RandomString(rng)
                : RandomBytes(rng, Chance(rng, 0.05) ? Pick(rng, 1 << 20)
                                                     : Pick(rng, 300));
      } else {
        v = RandomString(rng);
      }
      rep ? r->AddString(m, f, std::move(v)) : r->SetString(m, f, std::move(v));
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_MESSAGE: {
      pb::Message* sub = rep ? r->AddMessage(m, f) : r->MutableMessage(m, f);
      if (depth < 4) FillMessage(sub, rng, depth + 1);
      break;
    }
  }
}

void FillMessage(pb::Message* m, Rng& rng, int depth) {
  const pb::Descriptor* d = m->GetDescriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const pb::FieldDescriptor* f = d->field(i);
    if (Chance(rng, 0.3)) continue;  // left at its default
    if (f->is_repeated()) {
      size_t n = Chance(rng, 0.03) ? 100 + Pick(rng, 2000) : Pick(rng, 4);
      if (depth > 1) n = std::min<size_t>(n, 3);
      for (size_t k = 0; k < n; ++k) SetField(m, f, rng, depth);
    } else {
      SetField(m, f, rng, depth);
    }
  }
}

// ---- one request ---------------------------------------------------------

enum class Mode { kRandom, kEmpty, kCorrupt, kRaw };
const char* ModeName(Mode m) {
  switch (m) {
    case Mode::kRandom:
      return "random";
    case Mode::kEmpty:
      return "empty";
    case Mode::kCorrupt:
      return "corrupt";
    case Mode::kRaw:
      return "raw";
  }
  return "?";
}

struct Request {
  Mode mode;
  std::string bytes;
  bool parses;  // as the method's request type
};

Request MakeRequest(const Method& method, Rng& rng) {
  Request req;
  uint64_t roll = Pick(rng, 100);
  req.mode = roll < 65   ? Mode::kRandom
             : roll < 72 ? Mode::kEmpty
             : roll < 86 ? Mode::kCorrupt
                         : Mode::kRaw;
  std::unique_ptr<pb::Message> msg = NewRequest(method.input);
  if (req.mode == Mode::kRandom || req.mode == Mode::kCorrupt) {
    FillMessage(msg.get(), rng, 0);
    msg->SerializeToString(&req.bytes);
  }
  if (req.mode == Mode::kCorrupt && !req.bytes.empty()) {
    if (Chance(rng, 0.5)) {
      req.bytes.resize(Pick(rng, req.bytes.size()));  // cut short
    }
    for (uint64_t n = 1 + Pick(rng, 8); n > 0 && !req.bytes.empty(); --n) {
      req.bytes[Pick(rng, req.bytes.size())] ^=
          static_cast<char>(1 + Pick(rng, 255));
    }
  }
  if (req.mode == Mode::kRaw) {
    req.bytes = RandomBytes(
        rng, Chance(rng, 0.02) ? Pick(rng, 2 << 20) : Pick(rng, 512));
  }
  std::unique_ptr<pb::Message> check = NewRequest(method.input);
  req.parses = check->ParseFromString(req.bytes);
  return req;
}

// ---- results ----------------------------------------------------------------

// gRPC's codes are absl's, number for number.
std::string CodeName(int code) {
  std::string name =
      absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
  return name.empty() ? absl::StrCat("BAD_CODE_", code) : name;
}

class Tally {
 public:
  // `what` names the outcome: a status code, or STREAMING (a stream the
  // server accepted and sent on), or HANG (no status by the deadline).
  void Add(const std::string& section, const std::string& method,
           const std::string& what, bool failure, const std::string& detail) {
    absl::MutexLock lock(&mu_);
    counts_[section][method][what]++;
    ++total_;
    if (failure) {
      ++failures_;
      if (failure_lines_.size() < 30) {
        failure_lines_.push_back(
            absl::StrCat(section, " ", method, " ", what, ": ", detail));
      }
    }
  }
  uint64_t failures() {
    absl::MutexLock lock(&mu_);
    return failures_;
  }
  uint64_t total() {
    absl::MutexLock lock(&mu_);
    return total_;
  }

  std::string Report() {
    absl::MutexLock lock(&mu_);
    std::string out;
    for (const auto& [section, methods] : counts_) {
      absl::StrAppend(&out, section, ":\n");
      for (const auto& [method, codes] : methods) {
        std::vector<std::string> parts;
        for (const auto& [code, n] : codes)
          parts.push_back(absl::StrCat(code, "=", n));
        absl::StrAppend(&out, "  ", method, " ", absl::StrJoin(parts, " "),
                        "\n");
      }
    }
    absl::StrAppend(&out, "calls: ", total_, ", failures: ", failures_, "\n");
    for (const std::string& line : failure_lines_) {
      absl::StrAppend(&out, "FAILURE ", line, "\n");
    }
    return out;
  }

  std::string Json(const std::string& extra) {
    absl::MutexLock lock(&mu_);
    std::string out =
        absl::StrCat("{\"calls\": ", total_, ", \"failures\": ", failures_,
                     extra, ", \"codes\": {");
    bool first_section = true;
    for (const auto& [section, methods] : counts_) {
      absl::StrAppend(&out, first_section ? "" : ", ", "\"", section, "\": {");
      first_section = false;
      bool first_method = true;
      for (const auto& [method, codes] : methods) {
        absl::StrAppend(&out, first_method ? "" : ", ", "\"", method, "\": {");
        first_method = false;
        bool first_code = true;
        for (const auto& [code, n] : codes) {
          absl::StrAppend(&out, first_code ? "" : ", ", "\"", code, "\": ", n);
          first_code = false;
        }
        absl::StrAppend(&out, "}");
      }
      absl::StrAppend(&out, "}");
    }
    absl::StrAppend(&out, "}}\n");
    return out;
  }

 private:
  absl::Mutex mu_;
  std::map<std::string, std::map<std::string, std::map<std::string, uint64_t>>>
      counts_ ABSL_GUARDED_BY(mu_);
  uint64_t total_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t failures_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::string> failure_lines_ ABSL_GUARDED_BY(mu_);
};

// ---- calls ------------------------------------------------------------------

std::string ReadFile(const std::string& path) {
  if (path.empty()) return "";
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& target,
                                           int index) {
  grpc::ChannelArguments args;
  // A connection of its own: each client is a separate peer to the server.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt("spinnic.abuse_client", index);
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  if (absl::StartsWith(target, "unix:")) {
    return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(),
                                     args);
  }
  grpc::SslCredentialsOptions tls;
  tls.pem_root_certs = ReadFile(absl::GetFlag(FLAGS_tls_ca));
  tls.pem_cert_chain = ReadFile(absl::GetFlag(FLAGS_tls_cert));
  tls.pem_private_key = ReadFile(absl::GetFlag(FLAGS_tls_key));
  return grpc::CreateCustomChannel(target, grpc::SslCredentials(tls), args);
}

grpc::ByteBuffer ToBuffer(const std::string& bytes) {
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

// A server-streaming call through the generic (bidi) stub: write the request,
// read one message, then cancel. With read_first false, the stream is never
// read (abandoned) until Cancel().
class StreamCall
    : public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  StreamCall(grpc::GenericStub* stub, const std::string& path,
             const std::string& bytes, absl::Duration deadline, bool read_first)
      : request_(ToBuffer(bytes)) {
    context_.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
    stub->PrepareBidiStreamingCall(&context_, path, grpc::StubOptions(), this);
    StartWrite(&request_);
    StartWritesDone();
    if (read_first) StartRead(&response_);
    StartCall();
  }
  void OnReadDone(bool ok) override {
    if (ok) {
      got_message_ = true;
      context_.TryCancel();  // seen the server accept it; enough
    }
  }
  void OnDone(const grpc::Status& status) override {
    status_ = status;
    done_.Notify();
  }
  void Cancel() { context_.TryCancel(); }
  bool Wait(absl::Duration limit) {
    return done_.WaitForNotificationWithTimeout(limit);
  }
  bool got_message() const { return got_message_; }
  const grpc::Status& status() const { return status_; }

 private:
  grpc::ClientContext context_;
  grpc::ByteBuffer request_;
  grpc::ByteBuffer response_;
  std::atomic<bool> got_message_{false};
  grpc::Status status_;
  absl::Notification done_;
};

// INTERNAL is gRPC's answer, not spinnic's, in two cases: bytes that do not
// parse as the request type ("Failed to parse request", before any service
// code runs), and libgrpc++'s own health service, whose Watch answers a
// request it refuses (a service name over its length limit, or bytes its upb
// parser rejects) with INTERNAL "could not parse request" where Check says
// INVALID_ARGUMENT.
bool InternalJustified(const Method& method, const Request& req,
                       const grpc::Status& status) {
  if (!req.parses) return true;
  return method.path == "/grpc.health.v1.Health/Watch" &&
         status.error_message() == "could not parse request";
}

void Classify(Tally& tally, const std::string& section, const Method& method,
              const Request& req, const grpc::Status& status, bool streamed) {
  if (streamed) {
    tally.Add(section, method.path, "STREAMING", false, "");
    return;
  }
  const auto code = status.error_code();
  bool failure = false;
  switch (code) {
    case grpc::StatusCode::UNKNOWN:
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::UNIMPLEMENTED:
    case grpc::StatusCode::DATA_LOSS:
      failure = true;
      break;
    case grpc::StatusCode::INTERNAL:
      failure = !InternalJustified(method, req, status);
      break;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      // A unary call that outlived its deadline is a hang; a stream the
      // server accepted and keeps quiet on (WatchEvents without events)
      // is what a stream is.
      failure = !method.streaming;
      break;
    case grpc::StatusCode::CANCELLED:
      failure = true;  // nobody cancelled it here
      break;
    default:
      break;
  }
  std::string what = CodeName(code);
  if (code == grpc::StatusCode::INTERNAL && !failure) {
    what = req.parses ? "INTERNAL(health-watch)" : "INTERNAL(unparsable)";
  }
  tally.Add(section, method.path, what, failure,
            absl::StrCat(ModeName(req.mode), " request of ", req.bytes.size(),
                         " bytes (", req.parses ? "parses" : "does not parse",
                         "): ", status.error_message().substr(0, 200)));
}

// The unary deadline for `bytes` of request. gRPC 1.51 reads the whole of an
// oversized message before it answers RESOURCE_EXHAUSTED (docs/
// control-security.md, "Limits"), so the answer to 57 MB takes as
// long as moving 57 MB does: one more second per MiB above the limit keeps a
// starved machine from turning that into DEADLINE_EXCEEDED.
int UnaryDeadlineMs(size_t bytes) {
  const uint64_t limit = absl::GetFlag(FLAGS_max_message_bytes);
  const uint64_t excess_mib = bytes > limit ? (bytes - limit) >> 20 : 0;
  return absl::GetFlag(FLAGS_deadline_ms) + static_cast<int>(excess_mib) * 1000;
}

void OneCall(grpc::GenericStub& stub, const Method& method, const Request& req,
             Tally& tally, const std::string& section) {
  const int deadline_ms = UnaryDeadlineMs(req.bytes.size());
  const absl::Duration grace = absl::Seconds(10);
  if (!method.streaming) {
    grpc::ClientContext context;
    context.set_deadline(
        absl::ToChronoTime(absl::Now() + absl::Milliseconds(deadline_ms)));
    grpc::ByteBuffer request = ToBuffer(req.bytes);
    grpc::ByteBuffer response;
    grpc::Status status;
    absl::Notification done;
    stub.UnaryCall(&context, method.path, grpc::StubOptions(), &request,
                   &response, [&](grpc::Status s) {
                     status = std::move(s);
                     done.Notify();
                   });
    if (!done.WaitForNotificationWithTimeout(absl::Milliseconds(deadline_ms) +
                                             grace)) {
      tally.Add(section, method.path, "HANG", true,
                "no status by the deadline");
      context.TryCancel();
      done.WaitForNotification();
      return;
    }
    Classify(tally, section, method, req, status, false);
    return;
  }
  auto call = std::make_unique<StreamCall>(
      &stub, method.path, req.bytes,
      absl::Milliseconds(absl::GetFlag(FLAGS_stream_ms)), true);
  if (!call->Wait(absl::Milliseconds(absl::GetFlag(FLAGS_stream_ms)) + grace)) {
    tally.Add(section, method.path, "HANG", true, "stream: no status");
    call->Cancel();
    call->Wait(absl::InfiniteDuration());
    return;
  }
  Classify(tally, section, method, req, call->status(), call->got_message());
}

std::string TargetKind(const std::string& target) {
  return absl::StartsWith(target, "unix:") ? "unix" : "tls";
}

// ---- health prober ----------------------------------------------------------

class HealthProber {
 public:
  explicit HealthProber(const std::vector<std::string>& targets) {
    for (size_t i = 0; i < targets.size(); ++i) {
      threads_.emplace_back([this, target = targets[i], i] {
        auto stub =
            grpc::health::v1::Health::NewStub(MakeChannel(target, 100000 + i));
        while (!stop_.HasBeenNotified()) {
          for (const char* service : {"", "spinnic.v1.Spinnic"}) {
            grpc::ClientContext context;
            context.set_deadline(
                absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
            grpc::health::v1::HealthCheckRequest request;
            request.set_service(service);
            grpc::health::v1::HealthCheckResponse response;
            grpc::Status status = stub->Check(&context, request, &response);
            absl::MutexLock lock(&mu_);
            ++probes_;
            if (!status.ok() ||
                response.status() !=
                    grpc::health::v1::HealthCheckResponse::SERVING) {
              ++bad_;
              if (bad_lines_.size() < 10) {
                bad_lines_.push_back(absl::StrCat(
                    TargetKind(target), " '", service,
                    "': ", CodeName(status.error_code()), " ",
                    status.error_message(), " status=", response.status()));
              }
            }
          }
          stop_.WaitForNotificationWithTimeout(absl::Milliseconds(50));
        }
      });
    }
  }
  void Stop() {
    stop_.Notify();
    for (auto& t : threads_) t.join();
  }
  uint64_t probes() {
    absl::MutexLock lock(&mu_);
    return probes_;
  }
  uint64_t bad() {
    absl::MutexLock lock(&mu_);
    return bad_;
  }
  std::vector<std::string> bad_lines() {
    absl::MutexLock lock(&mu_);
    return bad_lines_;
  }

 private:
  absl::Notification stop_;
  std::vector<std::thread> threads_;
  absl::Mutex mu_;
  uint64_t probes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t bad_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::string> bad_lines_ ABSL_GUARDED_BY(mu_);
};

// ---- phases -----------------------------------------------------------------

void RandomPhase(const std::vector<std::string>& targets,
                 const std::vector<Method>& methods, Tally& tally) {
  const int clients = std::max(1, absl::GetFlag(FLAGS_clients));
  const int requests = absl::GetFlag(FLAGS_requests);
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    const int share = requests / clients + (c < requests % clients ? 1 : 0);
    threads.emplace_back([&, c, share] {
      const std::string& target = targets[c % targets.size()];
      grpc::GenericStub stub(MakeChannel(target, c));
      Rng rng(absl::GetFlag(FLAGS_seed) * 1000003 + c);
      for (int i = 0; i < share; ++i) {
        const Method& method = methods[Pick(rng, methods.size())];
        Request req = MakeRequest(method, rng);
        OneCall(stub, method, req, tally,
                absl::StrCat("random/", TargetKind(target)));
      }
    });
  }
  for (auto& t : threads) t.join();
}

struct StreamSpec {
  std::string path;
  std::unique_ptr<pb::Message> request;
};

std::vector<StreamSpec> AbandonSpecs() {
  std::vector<StreamSpec> specs;
  {
    auto r = std::make_unique<spinnic::v1::WatchStatsRequest>();
    r->set_interval_ms(100);
    specs.push_back({"/spinnic.v1.Spinnic/WatchStats", std::move(r)});
  }
  {
    // The longest interval: the server must still notice the cancel.
    auto r = std::make_unique<spinnic::v1::WatchStatsRequest>();
    r->set_interval_ms(UINT32_MAX);
    specs.push_back({"/spinnic.v1.Spinnic/WatchStats", std::move(r)});
  }
  specs.push_back({"/spinnic.v1.Spinnic/WatchEvents",
                   std::make_unique<spinnic::v1::WatchEventsRequest>()});
  {
    // Every frame of a full-rate port, never read.
    auto r = std::make_unique<spinnic::v1::CaptureRequest>();
    r->set_port("p0");
    r->set_stage(spinnic::v1::CAPTURE_STAGE_RX);
    specs.push_back({"/spinnic.v1.Spinnic/Capture", std::move(r)});
  }
  specs.push_back({"/grpc.health.v1.Health/Watch",
                   std::make_unique<grpc::health::v1::HealthCheckRequest>()});
  return specs;
}

// Opens --abandoned never-read streams per target, each on a connection of
// its own, and holds them for --abandon_hold_ms.
struct Abandoned {
  std::vector<std::unique_ptr<grpc::GenericStub>> stubs;
  std::vector<std::unique_ptr<StreamCall>> calls;
  std::vector<std::string> paths, sections;
};

Abandoned OpenAbandoned(const std::vector<std::string>& targets) {
  Abandoned a;
  std::vector<StreamSpec> specs = AbandonSpecs();
  int index = 200000;
  for (const std::string& target : targets) {
    for (int i = 0; i < absl::GetFlag(FLAGS_abandoned); ++i) {
      const StreamSpec& spec = specs[i % specs.size()];
      a.stubs.push_back(
          std::make_unique<grpc::GenericStub>(MakeChannel(target, index++)));
      a.calls.push_back(std::make_unique<StreamCall>(
          a.stubs.back().get(), spec.path, spec.request->SerializeAsString(),
          absl::Hours(1), /*read_first=*/false));
      a.paths.push_back(spec.path);
      a.sections.push_back(absl::StrCat("abandoned/", TargetKind(target)));
    }
  }
  absl::SleepFor(absl::Milliseconds(absl::GetFlag(FLAGS_abandon_hold_ms)));
  return a;
}

// Waits until the one capture of port p0 (RX) is free: a capture the random
// phase opened and cancelled ends on the server when its handler next looks
// (every few ms, longer on a starved machine), and until then the abandoned
// captures would all be refused, which DropAbandoned reads as a capture left
// over. A probe of 1 ms ends itself and releases the capture before its
// status is sent, so OK means free. A capture still taken after `limit` is a
// leak: counted as a failure.
void WaitForCaptureSlot(const std::string& target, Tally& tally,
                        absl::Duration limit) {
  auto stub = spinnic::v1::Spinnic::NewStub(MakeChannel(target, 400000));
  spinnic::v1::CaptureRequest request;
  request.set_port("p0");
  request.set_stage(spinnic::v1::CAPTURE_STAGE_RX);
  request.set_duration_ms(1);
  const absl::Time give_up = absl::Now() + limit;
  grpc::Status status;
  do {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    auto reader = stub->Capture(&context, request);
    spinnic::v1::CaptureReply reply;
    while (reader->Read(&reply)) {
    }
    status = reader->Finish();
    if (status.ok()) return;
    absl::SleepFor(absl::Milliseconds(100));
  } while (status.error_code() == grpc::StatusCode::FAILED_PRECONDITION &&
           absl::Now() < give_up);
  tally.Add("abandoned", "/spinnic.v1.Spinnic/Capture", "STILL_TAKEN", true,
            absl::StrCat(
                "the capture of p0 was not free ", absl::FormatDuration(limit),
                " after the random phase: ", CodeName(status.error_code()), " ",
                status.error_message()));
}

void DropAbandoned(Abandoned& a, Tally& tally) {
  for (auto& call : a.calls) call->Cancel();
  int captures_opened = 0;
  for (size_t i = 0; i < a.calls.size(); ++i) {
    if (!a.calls[i]->Wait(absl::Seconds(30))) {
      tally.Add(a.sections[i], a.paths[i], "HANG", true,
                "no end 30 s after the cancel");
      continue;
    }
    // The client's own cancel, seen as CANCELLED; anything else means the
    // server ended it first: a failure, but for the documented limit of one
    // capture per port and stage (FAILED_PRECONDITION).
    const auto code = a.calls[i]->status().error_code();
    const bool capture = absl::EndsWith(a.paths[i], "/Capture");
    if (capture && code == grpc::StatusCode::CANCELLED) ++captures_opened;
    tally.Add(a.sections[i], a.paths[i], CodeName(code),
              code != grpc::StatusCode::CANCELLED &&
                  !(capture && code == grpc::StatusCode::FAILED_PRECONDITION),
              a.calls[i]->status().error_message());
  }
  // Each capture that came before (earlier rounds, the clients that left
  // with _exit) must have ended: else this port and stage stay taken.
  if (absl::GetFlag(FLAGS_abandoned) > 0 && captures_opened == 0) {
    tally.Add("abandoned", "/spinnic.v1.Spinnic/Capture", "NONE_OPENED", true,
              "no capture could start: one left over from before?");
  }
}

void OversizedPhase(const std::vector<std::string>& targets, Tally& tally) {
  const uint64_t limit = absl::GetFlag(FLAGS_max_message_bytes);
  Rng rng(absl::GetFlag(FLAGS_seed) + 77);
  std::vector<std::pair<Method, std::string>> cases;
  {
    spinnic::v1::WriteRegionRequest r;
    r.set_id(1);
    r.set_data(std::string(limit + 1, 'w'));
    cases.push_back(
        {{"/spinnic.v1.Spinnic/WriteRegion", r.GetDescriptor(), false},
         r.SerializeAsString()});
  }
  {
    spinnic::v1::InstallHandlerRequest r;
    r.mutable_handler()->set_name("abuse-huge");
    r.mutable_handler()->set_kind("count");
    r.mutable_handler()->set_initial_state(std::string(limit + 4096, 's'));
    cases.push_back(
        {{"/spinnic.v1.Spinnic/InstallHandler", r.GetDescriptor(), false},
         r.SerializeAsString()});
  }
  {
    spinnic::v1::ApplyConfigRequest r;
    r.set_config_text(std::string(2 * limit, '#'));
    cases.push_back(
        {{"/spinnic.v1.Spinnic/ApplyConfig", r.GetDescriptor(), false},
         r.SerializeAsString()});
  }
  cases.push_back({{"/spinnic.v1.Spinnic/GetInfo",
                    spinnic::v1::GetInfoRequest::descriptor(), false},
                   RandomBytes(rng, limit + 1)});
  {
    spinnic::v1::CaptureRequest r;
    r.set_port("p0");
    r.set_filter(std::string(limit, 'f'));
    cases.push_back({{"/spinnic.v1.Spinnic/Capture", r.GetDescriptor(), true},
                     r.SerializeAsString()});
  }
  int index = 300000;
  for (const std::string& target : targets) {
    grpc::GenericStub stub(MakeChannel(target, index++));
    for (const auto& [method, bytes] : cases) {
      Request req{Mode::kRaw, bytes, true};
      // Only RESOURCE_EXHAUSTED is right: the limit, before any service.
      const std::string section =
          absl::StrCat("oversized/", TargetKind(target));
      Tally scratch;
      OneCall(stub, method, req, scratch, section);
      std::string report = scratch.Report();
      bool exhausted = absl::StrContains(report, "RESOURCE_EXHAUSTED=1");
      tally.Add(section, method.path,
                exhausted ? "RESOURCE_EXHAUSTED" : "OTHER", !exhausted, report);
    }
  }
}

// Many clients at once, each sending one request of --flood_bytes (far above
// the limit). Each must end RESOURCE_EXHAUSTED, or UNAVAILABLE when the
// server's memory quota closed its connection to reclaim memory (a client
// reconnects on its next call); never a hang or another code. The script
// checks that the server's memory stayed within the quota (VmHWM). Runs
// after the health prober stops: a reclaimed connection may be a prober's.
void OversizedFlood(const std::vector<std::string>& targets, Tally& tally) {
  const int clients = absl::GetFlag(FLAGS_flood_clients);
  if (clients <= 0) return;
  spinnic::v1::WriteRegionRequest r;
  r.set_id(1);
  r.set_data(std::string(absl::GetFlag(FLAGS_flood_bytes), 'f'));
  const Method method{"/spinnic.v1.Spinnic/WriteRegion", r.GetDescriptor(),
                      false};
  const Request req{Mode::kRaw, r.SerializeAsString(), true};
  std::vector<std::thread> threads;
  for (const std::string& target : targets) {
    const std::string section = absl::StrCat("flood/", TargetKind(target));
    for (int i = 0; i < clients; ++i) {
      threads.emplace_back([&, target, section, i] {
        grpc::GenericStub stub(MakeChannel(target, 500000 + i));
        Tally scratch;
        OneCall(stub, method, req, scratch, section);
        std::string report = scratch.Report();
        const char* what = absl::StrContains(report, "RESOURCE_EXHAUSTED=1")
                               ? "RESOURCE_EXHAUSTED"
                           : absl::StrContains(report, "UNAVAILABLE=1")
                               ? "UNAVAILABLE(reclaimed)"
                               : nullptr;
        tally.Add(section, method.path, what != nullptr ? what : "OTHER",
                  what == nullptr, report);
      });
    }
  }
  for (auto& t : threads) t.join();
}

// Removes what random requests installed: handlers first (they may hold
// regions), then regions, DiAD peers and RoCE QPs.
void Cleanup(const std::string& target) {
  auto channel = MakeChannel(target, 400000);
  auto deadline = [] {
    return absl::ToChronoTime(absl::Now() + absl::Seconds(10));
  };
  auto spinnic = spinnic::v1::Spinnic::NewStub(channel);
  {
    grpc::ClientContext context;
    context.set_deadline(deadline());
    spinnic::v1::ListHandlersResponse list;
    if (spinnic->ListHandlers(&context, {}, &list).ok()) {
      for (const auto& h : list.handlers()) {
        grpc::ClientContext c;
        c.set_deadline(deadline());
        spinnic::v1::RemoveHandlerRequest r;
        r.set_name(h.name());
        spinnic::v1::RemoveHandlerResponse ignored;
        spinnic->RemoveHandler(&c, r, &ignored);
      }
    }
  }
  {
    grpc::ClientContext context;
    context.set_deadline(deadline());
    spinnic::v1::ListRegionsResponse list;
    if (spinnic->ListRegions(&context, {}, &list).ok()) {
      for (const auto& region : list.regions()) {
        grpc::ClientContext c;
        c.set_deadline(deadline());
        spinnic::v1::DeregisterRegionRequest r;
        r.set_id(region.id());
        spinnic::v1::DeregisterRegionResponse ignored;
        spinnic->DeregisterRegion(&c, r, &ignored);
      }
    }
  }
  {
    auto diad = spinnic::v1::DiadService::NewStub(channel);
    grpc::ClientContext context;
    context.set_deadline(deadline());
    spinnic::v1::ListPeersResponse list;
    if (diad->ListPeers(&context, {}, &list).ok()) {
      for (const auto& peer : list.peers()) {
        grpc::ClientContext c;
        c.set_deadline(deadline());
        spinnic::v1::RemovePeerRequest r;
        r.set_name(peer.name());
        spinnic::v1::RemovePeerResponse ignored;
        diad->RemovePeer(&c, r, &ignored);
      }
    }
  }
  {
    auto roce = spinnic::v1::RoceService::NewStub(channel);
    grpc::ClientContext context;
    context.set_deadline(deadline());
    spinnic::v1::ListQpsResponse list;
    if (roce->ListQps(&context, {}, &list).ok()) {
      for (const auto& qp : list.qps()) {
        grpc::ClientContext c;
        c.set_deadline(deadline());
        spinnic::v1::DestroyQpRequest r;
        r.set_qpn(qp.qpn());
        spinnic::v1::DestroyQpResponse ignored;
        roce->DestroyQp(&c, r, &ignored);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  // Checking whether corrupt bytes parse makes protobuf complain about every
  // invalid UTF-8 string; that is the point here, not news.
  pb::SetLogHandler([](pb::LogLevel, const char*, int, const std::string&) {});
  const std::vector<std::string> targets = absl::GetFlag(FLAGS_target);
  if (targets.empty()) {
    fprintf(stderr, "grpc_abuse: --target is required\n");
    return 2;
  }
  if (absl::GetFlag(FLAGS_abandon_and_exit)) {
    Abandoned a = OpenAbandoned(targets);
    printf("grpc_abuse: %zu streams open and unread; leaving without a word\n",
           a.calls.size());
    fflush(stdout);
    _exit(0);
  }
  const std::vector<Method> methods = AllMethods();
  Tally tally;
  HealthProber prober(targets);
  const absl::Time start = absl::Now();

  RandomPhase(targets, methods, tally);
  const uint64_t random_calls = tally.total();
  WaitForCaptureSlot(targets.front(), tally, absl::Seconds(30));
  Abandoned abandoned = OpenAbandoned(targets);
  DropAbandoned(abandoned, tally);
  abandoned = Abandoned();
  OversizedPhase(targets, tally);
  if (absl::GetFlag(FLAGS_cleanup)) {
    for (const std::string& target : targets) Cleanup(target);
  }
  prober.Stop();
  OversizedFlood(targets, tally);
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);

  const uint64_t failures = tally.failures() + prober.bad();
  printf("%s", tally.Report().c_str());
  printf(
      "methods: %zu, random requests: %llu, health probes: %llu (not "
      "SERVING: %llu), %.1f s\n",
      methods.size(), static_cast<unsigned long long>(random_calls),
      static_cast<unsigned long long>(prober.probes()),
      static_cast<unsigned long long>(prober.bad()), seconds);
  for (const std::string& line : prober.bad_lines()) {
    printf("HEALTH %s\n", line.c_str());
  }
  if (const std::string path = absl::GetFlag(FLAGS_summary); !path.empty()) {
    std::ofstream out(path);
    out << tally.Json(absl::StrCat(", \"random_requests\": ", random_calls,
                                   ", \"methods\": ", methods.size(),
                                   ", \"health_probes\": ", prober.probes(),
                                   ", \"health_not_serving\": ", prober.bad(),
                                   ", \"seconds\": ", seconds));
  }
  printf("grpc_abuse: %s\n", failures == 0 ? "PASS" : "FAIL");
  return failures == 0 ? 0 : 1;
}
