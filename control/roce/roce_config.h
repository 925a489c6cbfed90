// The RoCEv2 parts of spinnicd's config (docs/config.md, docs/roce.md): a
// handler's `roce` binding (a queue pair or a NAAICE function code) and the
// `roce` section; their checks and their conversion into the dataplane's
// roce::RoceConfig. The config loader (config_loader.h) calls these.
#ifndef SPINNIC_CONTROL_ROCE_ROCE_CONFIG_H_
#define SPINNIC_CONTROL_ROCE_ROCE_CONFIG_H_

#include "absl/status/status.h"
#include "control/config_check.h"
#include "dataplane/dataplane_config.h"
#include "spinnic/v1/config.pb.h"

namespace spinnic::config_internal {

// The RoCE bindings of config.handlers, then the roce section.
absl::Status CheckRoce(const v1::Config& config, const Reporter& r);

// The `roce` binding of `handler` (at path `p`, "handlers[i]"): kind
// naaice_function exactly when bound to a function code, RoCE on, no match
// rule or DiAD binding, a valid code or data queue pair.
// The handler's `roce` binding as the dataplane takes it (binding.h), or
// false when it has none. `handler` is validated.
bool RoceBindingOf(const v1::HandlerInstall& handler, MessageBinding* out);

absl::Status CheckRoceBinding(const v1::Config& config,
                              const v1::HandlerInstall& handler,
                              const FieldPath& p, const Reporter& r);

// Fills out->roce from a validated config when the roce section is set;
// out->ports must be filled. Fails only when no port can carry RoCE.
absl::Status ConvertRoce(const v1::Config& config, DataplaneConfig* out);

}  // namespace spinnic::config_internal

#endif  // SPINNIC_CONTROL_ROCE_ROCE_CONFIG_H_
