// The handler operations of spinctl's fleet mode as ApplianceChanges
// (fleet.h): install, replace and remove, each with its undo.
//
//   install  apply: InstallHandler          undo: RemoveHandler
//   replace  apply: ListHandlers (keep the   undo: InstallHandler(replace) of
//                   spec), InstallHandler          the kept spec, or
//                   (replace)                      RemoveHandler if none was
//   remove   apply: ListHandlers (keep the   undo: InstallHandler of the kept
//                   spec), RemoveHandler           spec
//
// The kept spec is ListHandlers' HandlerInstall with its bound_regions: the
// whole install request. What a reinstall cannot bring back is said in
// docs/spinctl.md: counters, the id, and state memory written since (it
// starts again from initial_state).
#ifndef SPINNIC_CONTROL_SPINCTL_FLEET_CHANGES_H_
#define SPINNIC_CONTROL_SPINCTL_FLEET_CHANGES_H_

#include <string>

#include "control/client/control_client.h"
#include "control/spinctl/fleet.h"
#include "spinnic/v1/control.pb.h"
#include "spinnic/v1/fleet.pb.h"

namespace spinnic::spinctl {

// How to reach `target`: its address and TLS settings, the command line's
// (`defaults`: TLS files, insecure, timeout) where it has none. A Unix
// socket target takes no TLS settings from the command line.
ClientOptions TargetClientOptions(const v1::FleetTarget& target,
                                  const ClientOptions& defaults);

// `request.replace` is ignored: install always fails on an appliance that
// has a handler of that name (ALREADY_EXISTS), replace always replaces.
ChangeFactory InstallChanges(v1::InstallHandlerRequest request,
                             ClientOptions defaults);
ChangeFactory ReplaceChanges(v1::InstallHandlerRequest request,
                             ClientOptions defaults);
ChangeFactory RemoveChanges(std::string name, ClientOptions defaults);

}  // namespace spinnic::spinctl

#endif  // SPINNIC_CONTROL_SPINCTL_FLEET_CHANGES_H_
