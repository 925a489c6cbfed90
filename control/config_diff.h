// The plan of a hitless reload (docs/reload.md): what differs between the
// config that runs and the one a file asks for. Pure functions on protos:
// no dataplane, no EAL; the apply (control/grpc/apply_rpcs.cc) carries the
// plan out.
//
// Live: handlers (added, replaced, removed) and DiAD peers (added,
// replaced, removed). Everything else a Config holds is restart-only: the
// ports, workers and lcores, the EAL arguments, the addresses, the runtime
// section, the DiAD and RoCE sections apart from diad.peers.
#ifndef SPINNIC_CONTROL_CONFIG_DIFF_H_
#define SPINNIC_CONTROL_CONFIG_DIFF_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "spinnic/v1/config.pb.h"
#include "spinnic/v1/control.pb.h"

namespace spinnic {

// The restart-only fields `wanted` changes, one line each, in field order:
// "ports[1].mtu: 1500 -> 9000", "workers: [1] -> [1, 2]",
// "roce: (unset) -> {port: \"wire0\"}". Empty when only live parts differ.
std::vector<std::string> RestartOnlyDifferences(const v1::Config& running,
                                                const v1::Config& wanted);

// The live changes from `running` to `wanted`, in the order they are
// applied: handlers removed, peers added and replaced, handlers replaced
// and added (in the file's order), peers removed. So a new handler finds the
// peer it names, and a binding a removed handler frees is free for the
// handler that takes it. Empty when the live parts are the same (a handler
// is compared field by field, params as a map; a peer by its node and MAC
// as addresses, not as text).
std::vector<v1::ConfigChange> LiveChanges(const v1::Config& running,
                                          const v1::Config& wanted);

// Both: FAILED_PRECONDITION naming every restart-only field `wanted`
// changes ("ports[1].mtu: 1500 -> 9000 needs a restart of spinnicd; ..."),
// else the live changes.
absl::StatusOr<std::vector<v1::ConfigChange>> PlanConfigChanges(
    const v1::Config& running, const v1::Config& wanted);

}  // namespace spinnic

#endif  // SPINNIC_CONTROL_CONFIG_DIFF_H_
