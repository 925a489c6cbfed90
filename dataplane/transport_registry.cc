// The transports every Dataplane runs: one line each (transport.h).
#include <vector>

#include "dataplane/diad/diad_module.h"
#include "dataplane/roce/roce_module.h"
#include "dataplane/transport.h"

namespace spinnic {
namespace {

std::vector<TransportMaker>& Registry() {
  // Built-ins in the order their engines are asked for frames: DiAD
  // claims IPv6 to its node address first, RoCE its own addresses.
  static std::vector<TransportMaker> registry = {
      &diad::DiadModule::Make,
      &roce::RoceModule::Make,
  };
  return registry;
}

}  // namespace

std::span<const TransportMaker> RegisteredTransports() { return Registry(); }

void RegisterTransport(TransportMaker maker) { Registry().push_back(maker); }

}  // namespace spinnic
