// The config's `ports` and `port_pairs` sections: their checks (the rules
// are in docs/config.md) and their conversion into the dataplane's structs.
// Internal to the config loader (config_loader.h).
#ifndef SPINNIC_CONTROL_PORT_CONFIG_H_
#define SPINNIC_CONTROL_PORT_CONFIG_H_

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "control/config_check.h"
#include "dataplane/dataplane_config.h"
#include "spinnic/v1/config.pb.h"

namespace spinnic::config_internal {

absl::Status CheckPorts(const v1::Config& config, const Reporter& r);
absl::Status CheckPortPairs(const v1::Config& config, const Reporter& r);

// Port name -> index, in `ports` order (the dataplane's port numbering).
absl::flat_hash_map<std::string, uint16_t> PortIndex(const v1::Config& config);

// Fills out->ports and out->port_pairs from a validated config (defaults:
// descriptors 1024, promiscuous true; queues 0 stays 0).
void ConvertPorts(const v1::Config& config, DataplaneConfig* out);

}  // namespace spinnic::config_internal

#endif  // SPINNIC_CONTROL_PORT_CONFIG_H_
