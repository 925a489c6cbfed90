// The RoCEv2 parts of spinnicd's config (docs/config.md, docs/roce.md): a
// handler's `roce` binding (a queue pair or a NAAICE function code) and the
// `roce` section; their checks and their conversion into the dataplane's
// roce::RoceConfig. The config loader (config_loader.h) calls these.
#ifndef SPINNIC_CONTROL_ROCE_ROCE_CONFIG_H_
#define SPINNIC_CONTROL_ROCE_ROCE_CONFIG_H_

#include "absl/status/status.h"
#include "control/config_check.h"
#include "control/config_section.h"
#include "dataplane/dataplane_config.h"
#include "dataplane/roce/roce_config.h"
#include "spinnic/v1/config.pb.h"

namespace spinnic::config_internal {

// RoCE's part of the config (config_section.h). Check: the RoCE bindings
// of config.handlers, then the roce section. A `roce` binding: kind
// naaice_function exactly when bound to a function code, RoCE on, no match
// rule or DiAD binding, a valid code or data queue pair. Convert fills
// out's roce::RoceConfig when the roce section is set.
const ConfigSection& RoceConfigSection();

}  // namespace spinnic::config_internal

#endif  // SPINNIC_CONTROL_ROCE_ROCE_CONFIG_H_
