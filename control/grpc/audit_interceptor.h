// The audit trail of the control API: one logfmt line per call of a
// mutating RPC, written when its status is sent, at NOTICE on
// spinnic.control (so it reaches syslog / the journal):
//
//   audit peer=unix: method=/spinnic.v1.Spinnic/InstallHandler
//     target=counter code=OK ms=1.2
//
// (one line). Who (`peer`: grpc::ServerContext::peer(); with mutual TLS also
// `subject`, the client certificate's subject), what (`method`, and `target`:
// the request's object), the result (`code`, with `error` the status message
// when not OK) and how long it took. Values that are empty or hold spaces,
// quotes, '=' or control characters are quoted and escaped.
//
// Mutating is decided by name, so that RPCs added later are audited without
// anyone remembering to: every method of a spinnic.* service is mutating
// unless its name starts with a read-only verb (Get, List, Watch, Read).
// Other services (grpc.health.v1, reflection) are never audited.
#ifndef SPINNIC_CONTROL_GRPC_AUDIT_INTERCEPTOR_H_
#define SPINNIC_CONTROL_GRPC_AUDIT_INTERCEPTOR_H_

#include <string>

#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"
#include "grpcpp/support/server_interceptor.h"

namespace spinnic {

// `method` as gRPC names it: "/spinnic.v1.Spinnic/InstallHandler".
bool IsMutatingMethod(absl::string_view method);

// The object a request acts on: its first set field named name, component,
// peer, id or qpn, at the top level or one message down (InstallHandler's
// handler.name); "" when there is none.
std::string AuditTarget(const google::protobuf::Message& request);

// `value` as a logfmt value: bare when it can be, else in double quotes
// with backslash escapes (quote, backslash, n, t, xNN).
std::string LogfmtValue(absl::string_view value);

class AuditInterceptorFactory
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;
};

}  // namespace spinnic

#endif  // SPINNIC_CONTROL_GRPC_AUDIT_INTERCEPTOR_H_
