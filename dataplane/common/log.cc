#include "dataplane/common/log.h"

#include <rte_common.h>

namespace spinnic::log {
namespace {

// The type called `name`, at level INFO unless the EAL's --log-level (saved
// before main runs, applied when the EAL parses it) says otherwise. EAL's own
// type if registration fails, so that messages are never lost.
int Register(const char* name) {
  const int type = rte_log_register_type_and_pick_level(name, RTE_LOG_INFO);
  return type >= 0 ? type : RTE_LOGTYPE_EAL;
}

}  // namespace

int dataplane = RTE_LOGTYPE_EAL;
int diad = RTE_LOGTYPE_EAL;
int roce = RTE_LOGTYPE_EAL;
int control = RTE_LOGTYPE_EAL;
int impair = RTE_LOGTYPE_EAL;

// Before main (a constructor, like RTE_LOG_REGISTER), so that the EAL's
// --log-level options find the types when rte_eal_init parses them.
RTE_INIT(RegisterLogTypes) {
  dataplane = Register("spinnic.dataplane");
  diad = Register("spinnic.diad");
  roce = Register("spinnic.roce");
  control = Register("spinnic.control");
  impair = Register("spinnic.impair");
}

}  // namespace spinnic::log
