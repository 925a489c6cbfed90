// The dataplane's counters as DPDK telemetry commands, so that operators use
// the stock client: `dpdk-telemetry.py -f <file-prefix>`, then e.g.
//   /spinnic/ports            names of the ports
//   /spinnic/port,wire0       one port's counters and drops by reason
//   /spinnic/ectxs            names of the installed handlers
//   /spinnic/ectx,count-icmp  one handler's counters
//   /spinnic/hpus             number of HPUs
//   /spinnic/hpu,0            one HPU's counters
//   /spinnic/transports       names of the transports that are on
//   /spinnic/transport,roce   one transport's counters
// and each transport's own commands (TransportModule::TelemetryCommands,
// e.g. DiAD's /spinnic/peers), registered when a dataplane attaches.
#ifndef SPINNIC_DATAPLANE_TELEMETRY_H_
#define SPINNIC_DATAPLANE_TELEMETRY_H_

namespace spinnic {

class Dataplane;

// Registers the commands (once per process; a transport's when a dataplane
// that has it first attaches) and points them at `dataplane`; nullptr
// detaches (commands then answer with an error). Call with nullptr before
// destroying the dataplane.
void AttachTelemetry(const Dataplane* dataplane);

}  // namespace spinnic

#endif  // SPINNIC_DATAPLANE_TELEMETRY_H_
