// The registry of config sections: one line per feature.
#include "control/config_section.h"
#include "control/diad/diad_config.h"
#include "control/roce/roce_config.h"

namespace spinnic::config_internal {

absl::Span<const ConfigSection* const> ConfigSections() {
  static const ConfigSection* const kSections[] = {
      &DiadConfigSection(),
      &RoceConfigSection(),
  };
  return kSections;
}

}  // namespace spinnic::config_internal
