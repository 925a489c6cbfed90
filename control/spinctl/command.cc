#include "control/spinctl/command.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "control/script_json.h"
#include "control/spinctl/table.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"

namespace spinnic::spinctl {
namespace {

// Keeps the first error only: later ones usually follow from it.
class FirstError : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (!error_.empty()) return;
    // The parser counts from 0; editors and people count from 1.
    error_ = absl::StrCat(line + 1, ":", column + 1, ": ", message);
  }
  const std::string& error() const { return error_; }

 private:
  std::string error_;
};

}  // namespace

absl::Status ParseTextProto(absl::string_view what, const std::string& text,
                            google::protobuf::Message* message) {
  FirstError errors;
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, message)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ":", errors.error(), " (text format of ",
                     message->GetDescriptor()->full_name(), ")"));
  }
  return absl::OkStatus();
}

ControlClient* Env::Client() {
  if (client_ != nullptr) return client_.get();
  if (connect_exit_ != kExitOk) return nullptr;
  absl::StatusOr<std::unique_ptr<ControlClient>> client =
      ControlClient::Connect(options_);
  if (client.ok()) {
    client_ = *std::move(client);
    return client_.get();
  }
  const absl::Status& status = client.status();
  if (status.code() == absl::StatusCode::kInvalidArgument) {
    // Our own options were wrong (an unreadable TLS file, say): a usage
    // error, not an unreachable server.
    connect_exit_ = UsageError(status.message());
    return nullptr;
  }
  // A hint about our flags where a different address or credentials could
  // help; not after a permission problem, which another path would not fix.
  bool tcp = !absl::StartsWith(options_.target, "unix:");
  const char* hint = "";
  if (tcp) {
    hint =
        " check --target and the TLS flags (--tls_ca, --tls_cert, --tls_key, "
        "--insecure)";
  } else if (absl::EndsWith(status.message(), "is it running?")) {
    hint =
        " pass --socket PATH (spinnicd's --control_socket) or --target "
        "HOST:PORT";
  }
  std::fprintf(stderr, "spinctl: %s%s\n", std::string(status.message()).c_str(),
               hint);
  connect_exit_ = kExitUnreachable;
  return nullptr;
}

void Env::PrintJson(const google::protobuf::Message& message) const {
  absl::StatusOr<std::string> json = ScriptJson(message);
  if (!json.ok()) {
    std::fprintf(stderr, "spinctl: cannot print JSON: %s\n",
                 std::string(json.status().message()).c_str());
    return;
  }
  std::fprintf(stdout, "%s\n", json->c_str());
  std::fflush(stdout);
}

int Env::ServerError(const absl::Status& status) const {
  std::fprintf(stderr, "spinctl: %s: %s\n",
               absl::StatusCodeToString(status.code()).c_str(),
               std::string(status.message()).c_str());
  return kExitServerError;
}

int Env::UsageError(absl::string_view message) const {
  std::fprintf(stderr, "spinctl %s: %s\nrun 'spinctl %s --help' for usage\n",
               command_.c_str(), std::string(message).c_str(),
               command_.c_str());
  return kExitUsage;
}

std::vector<std::string> HandlerCounterHeaders() {
  return {"STATUS",      "MESSAGES", "PACKETS",     "BYTES",
          "INVOCATIONS", "CYC/INV",  "OVER_BUDGET", "DROPPED",
          "FAILED",      "INVALID",  "BYPASSED"};
}

std::vector<std::string> HandlerCounterCells(const v1::HandlerStats& s) {
  std::string cycles_per_invocation =
      s.invocations() == 0 ? "-" : absl::StrCat(s.cycles() / s.invocations());
  return {s.disabled() ? "disabled" : "enabled",
          absl::StrCat(s.messages()),
          absl::StrCat(s.packets()),
          absl::StrCat(s.bytes()),
          absl::StrCat(s.invocations()),
          cycles_per_invocation,
          absl::StrCat(s.over_budget()),
          absl::StrCat(s.dropped()),
          absl::StrCat(s.failed()),
          absl::StrCat(s.invalid()),
          absl::StrCat(s.bypassed())};
}

std::string FormatTimestamp(uint64_t unix_ns) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ",
                          absl::FromUnixNanos(static_cast<int64_t>(unix_ns)),
                          absl::UTCTimeZone());
}

absl::Status WriteFile(const std::string& path, const std::string& data) {
  bool to_stdout = path == "-";
  std::FILE* file = to_stdout ? stdout : std::fopen(path.c_str(), "wb");
  if (file == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot create ", path, ": ", std::strerror(errno)));
  }
  bool ok = std::fwrite(data.data(), 1, data.size(), file) == data.size();
  ok = (to_stdout ? std::fflush(file) : std::fclose(file)) == 0 && ok;
  if (!ok) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  bool from_stdin = path == "-";
  std::FILE* file = from_stdin ? stdin : std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  }
  std::string data;
  char buffer[65536];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0) {
    data.append(buffer, n);
  }
  bool failed = std::ferror(file) != 0;
  int error = errno;
  if (!from_stdin) std::fclose(file);
  if (failed) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read ", path, ": ", std::strerror(error)));
  }
  return data;
}

int PrintBytes(Env& env, const ParsedArgs& args, const std::string& data,
               uint64_t offset, const google::protobuf::Message& response) {
  if (args.Has("out")) {
    std::string path = args.String("out");
    if (absl::Status s = WriteFile(path, data); !s.ok()) {
      return env.UsageError(s);
    }
    if (path != "-") {
      std::printf("wrote %zu bytes to %s\n", data.size(), path.c_str());
    }
    return kExitOk;
  }
  if (args.Bool("raw")) {
    absl::Status s = WriteFile("-", data);
    return s.ok() ? kExitOk : env.UsageError(s);
  }
  if (env.json()) {
    env.PrintJson(response);
    return kExitOk;
  }
  if (data.empty()) {
    std::printf("(0 bytes)\n");
    return kExitOk;
  }
  std::fputs(HexDump(data, offset).c_str(), stdout);
  return kExitOk;
}

}  // namespace spinnic::spinctl
