// The config spinnicd runs when started without --config: the quick-start
// topology (deploy/configs/quickstart.textproto holds the same text; a unit
// test keeps the two equal).
#ifndef SPINNIC_CONTROL_DEFAULT_CONFIG_H_
#define SPINNIC_CONTROL_DEFAULT_CONFIG_H_

#include "absl/strings/string_view.h"

namespace spinnic {

// Text-format spinnic.v1.Config: ports wire0 (net_af_packet0 on spn-wire0,
// PORT_ROLE_WIRE) and host0 (net_af_packet1 on spn-host0, PORT_ROLE_HOST),
// paired; main lcore on core 0, one worker on core 1; no hugepages; count
// handlers for ICMP and ICMPv6; counters every second, run until signalled.
absl::string_view DefaultConfigText();

}  // namespace spinnic

#endif  // SPINNIC_CONTROL_DEFAULT_CONFIG_H_
