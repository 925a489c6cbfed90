// The config's `handlers` section: the checks of each entry (name, kind,
// params, state, match rule; the rules are in docs/config.md) and its
// conversion into the dataplane's HandlerConfig. A handler's DiAD and RoCE
// bindings are checked by diad/diad_config.h and roce/roce_config.h.
// Internal to the config loader (config_loader.h).
#ifndef SPINNIC_CONTROL_HANDLER_CONFIG_H_
#define SPINNIC_CONTROL_HANDLER_CONFIG_H_

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "control/config_check.h"
#include "dataplane/dataplane_config.h"
#include "spinnic/v1/config.pb.h"

namespace spinnic::config_internal {

// Every entry of config.handlers, names unique across them.
absl::Status CheckHandlers(const v1::Config& config, const Reporter& r);

// One handler at path `p` (entry `index` of the text, for the location of
// its params), against config's ports. `names` (may be null) are the names
// of the handlers before it, by index; the handler's is added.
absl::Status CheckHandler(const v1::Config& config,
                          const v1::HandlerInstall& handler, int index,
                          const FieldPath& p, const Reporter& r,
                          absl::flat_hash_map<std::string, int>* names);

// A validated handler as the dataplane takes it; in_ports by `port_index`
// (PortIndex()).
absl::StatusOr<HandlerConfig> ConvertHandler(
    const v1::HandlerInstall& handler,
    const absl::flat_hash_map<std::string, uint16_t>& port_index);

}  // namespace spinnic::config_internal

#endif  // SPINNIC_CONTROL_HANDLER_CONFIG_H_
