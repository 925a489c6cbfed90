#include "dataplane/roce/qp_service.h"

namespace spinnic::roce {

const char* ServiceKindName(ServiceKind kind) {
  switch (kind) {
    case ServiceKind::kVerbs:
      return "verbs";
    case ServiceKind::kNaaice:
      return "naaice";
    case ServiceKind::kRping:
      return "rping";
    case ServiceKind::kPerftest:
      return "perftest";
    case ServiceKind::kEcho:
      return "echo";
    case ServiceKind::kCount:
      break;
  }
  return "unknown";
}

}  // namespace spinnic::roce
