// The DiAD parts of spinnicd's config (docs/config.md, docs/diad.md): the
// node address (addresses.diad_node), a handler's `diad` binding, the
// `diad` section with its peers; their checks and their conversion into
// the dataplane's diad::DiadConfig. The config loader (config_loader.h)
// calls these; the gRPC service converts AddPeer's peer with ToPeerConfig.
#ifndef SPINNIC_CONTROL_DIAD_DIAD_CONFIG_H_
#define SPINNIC_CONTROL_DIAD_DIAD_CONFIG_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "control/config_check.h"
#include "control/config_section.h"
#include "dataplane/dataplane_config.h"
#include "dataplane/diad/diad_config.h"
#include "spinnic/v1/config.pb.h"

namespace spinnic {

// Checks `peer` as the config's diad.peers[0] against `running` (a
// validated config with DiAD on): its name, its node (not the appliance's
// own), its MAC; not against the running peers (the dataplane refuses a
// name or node in use). Errors are ValidateConfig's without locations
// (`diad.peers[0].node: ...`).
absl::StatusOr<diad::PeerConfig> ToPeerConfig(const v1::DiadPeer& peer,
                                              const v1::Config& running);

namespace config_internal {

// DiAD's part of the config (config_section.h). Check: addresses.diad_node,
// the DiAD bindings of config.handlers, the diad section, in that order. A
// `diad` binding needs DiAD on, a stream or a region named, no match rule.
// Convert fills out's diad::DiadConfig when DiAD is on (diad_node set).
const ConfigSection& DiadConfigSection();

}  // namespace config_internal
}  // namespace spinnic

#endif  // SPINNIC_CONTROL_DIAD_DIAD_CONFIG_H_
