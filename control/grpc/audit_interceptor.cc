#include "control/grpc/audit_interceptor.h"

#include <array>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "dataplane/common/log.h"
#include "grpc/grpc_security_constants.h"
#include "grpcpp/server_context.h"

namespace spinnic {
namespace {

constexpr std::array<absl::string_view, 4> kReadOnlyVerbs = {"Get", "List",
                                                             "Watch", "Read"};
constexpr std::array<absl::string_view, 5> kTargetFields = {
    "name", "component", "peer", "id", "qpn"};

// gRPC's codes are absl's, number for number.
std::string CodeName(grpc::StatusCode code) {
  std::string name =
      absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
  return name.empty() ? "UNKNOWN" : name;
}

bool IsTargetField(absl::string_view name) {
  for (absl::string_view field : kTargetFields) {
    if (name == field) return true;
  }
  return false;
}

// The value of `field` when it is a set singular string or integer.
std::string ScalarText(const google::protobuf::Message& message,
                       const google::protobuf::FieldDescriptor& field) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Reflection& reflection = *message.GetReflection();
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_STRING:
      return reflection.GetString(message, &field);
    case FieldDescriptor::CPPTYPE_UINT64:
      return absl::StrCat(reflection.GetUInt64(message, &field));
    case FieldDescriptor::CPPTYPE_UINT32:
      return absl::StrCat(reflection.GetUInt32(message, &field));
    case FieldDescriptor::CPPTYPE_INT64:
      return absl::StrCat(reflection.GetInt64(message, &field));
    case FieldDescriptor::CPPTYPE_INT32:
      return absl::StrCat(reflection.GetInt32(message, &field));
    default:
      return "";
  }
}

std::string FindTarget(const google::protobuf::Message& message, int depth) {
  const google::protobuf::Descriptor& descriptor = *message.GetDescriptor();
  const google::protobuf::Reflection& reflection = *message.GetReflection();
  for (int i = 0; i < descriptor.field_count(); ++i) {
    const google::protobuf::FieldDescriptor& field = *descriptor.field(i);
    if (field.is_repeated() || !IsTargetField(field.name())) continue;
    if (std::string text = ScalarText(message, field);
        !text.empty() && text != "0") {
      return text;
    }
  }
  if (depth == 0) return "";
  for (int i = 0; i < descriptor.field_count(); ++i) {
    const google::protobuf::FieldDescriptor& field = *descriptor.field(i);
    if (field.is_repeated() ||
        field.cpp_type() !=
            google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE ||
        !reflection.HasField(message, &field)) {
      continue;
    }
    std::string text =
        FindTarget(reflection.GetMessage(message, &field), depth - 1);
    if (!text.empty()) return text;
  }
  return "";
}

// Who called: the peer as gRPC names it ("unix:", "ipv4:10.0.0.2:41234"),
// and with mutual TLS the certificate's subject.
std::string Who(grpc::ServerContextBase& context) {
  std::string who = absl::StrCat("peer=", LogfmtValue(context.peer()));
  std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth != nullptr) {
    for (const grpc::string_ref& subject :
         auth->FindPropertyValues(GRPC_X509_SUBJECT_PROPERTY_NAME)) {
      absl::StrAppend(
          &who, " subject=",
          LogfmtValue(absl::string_view(subject.data(), subject.size())));
      break;
    }
  }
  return who;
}

class AuditInterceptor : public grpc::experimental::Interceptor {
 public:
  explicit AuditInterceptor(grpc::experimental::ServerRpcInfo* info)
      : info_(info), start_(absl::Now()) {}

  void Intercept(
      grpc::experimental::InterceptorBatchMethods* methods) override {
    using grpc::experimental::InterceptionHookPoints;
    if (methods->QueryInterceptionHookPoint(
            InterceptionHookPoints::POST_RECV_MESSAGE) &&
        target_.empty() && methods->GetRecvMessage() != nullptr) {
      // The generated services of spinnic.* take protobuf requests.
      target_ = AuditTarget(*static_cast<const google::protobuf::Message*>(
          methods->GetRecvMessage()));
    }
    if (methods->QueryInterceptionHookPoint(
            InterceptionHookPoints::PRE_SEND_STATUS)) {
      const grpc::Status status = methods->GetSendStatus();
      std::string line = absl::StrCat("audit ", Who(*info_->server_context()),
                                      " method=", LogfmtValue(info_->method()),
                                      " target=", LogfmtValue(target_),
                                      " code=", CodeName(status.error_code()));
      if (!status.ok()) {
        absl::StrAppend(&line, " error=", LogfmtValue(status.error_message()));
      }
      absl::StrAppend(&line, " ms=",
                      absl::StrFormat("%.1f", absl::ToDoubleMilliseconds(
                                                  absl::Now() - start_)));
      SPINNIC_LOG(NOTICE, control, "%s", line.c_str());
    }
    methods->Proceed();
  }

 private:
  grpc::experimental::ServerRpcInfo* info_;
  absl::Time start_;
  std::string target_;
};

}  // namespace

bool IsMutatingMethod(absl::string_view method) {
  if (!absl::ConsumePrefix(&method, "/spinnic.")) return false;
  const size_t slash = method.rfind('/');
  if (slash == absl::string_view::npos) return false;
  const absl::string_view name = method.substr(slash + 1);
  for (absl::string_view verb : kReadOnlyVerbs) {
    if (absl::StartsWith(name, verb)) return false;
  }
  return !name.empty();
}

std::string AuditTarget(const google::protobuf::Message& request) {
  return FindTarget(request, 1);
}

std::string LogfmtValue(absl::string_view value) {
  bool bare = !value.empty();
  for (char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= ' ' || u >= 0x7f || c == '"' || c == '=' || c == '\\') {
      bare = false;
      break;
    }
  }
  if (bare) return std::string(value);
  std::string quoted = "\"";
  for (char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      absl::StrAppend(&quoted, "\\", std::string(1, c));
    } else if (c == '\n') {
      quoted += "\\n";
    } else if (c == '\t') {
      quoted += "\\t";
    } else if (u < ' ' || u == 0x7f) {
      absl::StrAppend(&quoted, absl::StrFormat("\\x%02x", u));
    } else {
      quoted += c;
    }
  }
  quoted += '"';
  return quoted;
}

grpc::experimental::Interceptor*
AuditInterceptorFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  // No interceptor at all (nullptr) for calls that are not audited.
  if (!IsMutatingMethod(info->method())) return nullptr;
  return new AuditInterceptor(info);
}

}  // namespace spinnic
