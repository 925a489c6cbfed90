// A feature's part of spinnicd's config (docs/config.md): its own section,
// the addresses it needs and the handler bindings it owns, checked and
// converted by the feature (control/diad/diad_config.cc,
// control/roce/roce_config.cc) instead of by the config loader, which knows
// no transport by name. A feature registers once, in config_sections.cc.
#ifndef SPINNIC_CONTROL_CONFIG_SECTION_H_
#define SPINNIC_CONTROL_CONFIG_SECTION_H_

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "control/config_check.h"
#include "dataplane/binding.h"
#include "dataplane/dataplane_config.h"
#include "spinnic/v1/config.pb.h"

namespace spinnic::config_internal {

class ConfigSection {
 public:
  virtual ~ConfigSection() = default;

  // Everything of the feature in `config`: its addresses, the bindings of
  // config.handlers to it (each as CheckBinding), then its section.
  // ValidateConfig calls it after ports, workers and addresses and before
  // the handlers' own fields; errors follow config_check.h.
  virtual absl::Status Check(const v1::Config& config,
                             const Reporter& r) const = 0;

  // `handler`'s binding to this feature (at path `p`, "handlers[i]")
  // against `config`: what a handler needs to take the feature's messages.
  // OK when the handler has no binding of this feature's and needs none.
  virtual absl::Status CheckBinding(const v1::Config& config,
                                    const v1::HandlerInstall& handler,
                                    const FieldPath& p,
                                    const Reporter& r) const = 0;

  // The handler's binding as the dataplane takes it (binding.h), or false
  // when it has none of this feature's. `handler` is validated.
  virtual bool BindingOf(const v1::HandlerInstall& handler,
                         MessageBinding* out) const = 0;

  // Fills the feature's part of `out` from a validated config; out->ports
  // is filled. Fails only on what needs the converted ports (no port can
  // carry the feature).
  virtual absl::Status Convert(const v1::Config& config,
                               DataplaneConfig* out) const = 0;
};

// A section made of four functions with ConfigSection's signatures: what a
// feature's config file defines (diad_config.cc, roce_config.cc).
template <auto kCheck, auto kCheckBinding, auto kBindingOf, auto kConvert>
class SectionOf final : public ConfigSection {
 public:
  absl::Status Check(const v1::Config& config,
                     const Reporter& r) const override {
    return kCheck(config, r);
  }
  absl::Status CheckBinding(const v1::Config& config,
                            const v1::HandlerInstall& handler,
                            const FieldPath& p,
                            const Reporter& r) const override {
    return kCheckBinding(config, handler, p, r);
  }
  bool BindingOf(const v1::HandlerInstall& handler,
                 MessageBinding* out) const override {
    return kBindingOf(handler, out);
  }
  absl::Status Convert(const v1::Config& config,
                       DataplaneConfig* out) const override {
    return kConvert(config, out);
  }
};

// Every feature's section, in the order their checks run.
absl::Span<const ConfigSection* const> ConfigSections();

}  // namespace spinnic::config_internal

#endif  // SPINNIC_CONTROL_CONFIG_SECTION_H_
