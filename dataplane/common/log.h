// Logging through rte_log, one log type per component, so that operators
// pick levels per component with the EAL's --log-level (e.g.
// --log-level=spinnic.roce:debug) and messages reach DPDK's log stream
// (stderr, and syslog once rte_eal_init has run).
//
//   SPINNIC_LOG(ERR, control, "%s", std::string(status.message()).c_str());
//
// LEVEL is an RTE_LOG_ level without its prefix (ERR, WARNING, NOTICE, INFO,
// DEBUG); COMPONENT one of the log types below; FMT a printf format literal,
// to which the macro appends the newline. The types are registered (at level
// INFO) before main, so logging works before rte_eal_init too. Not for the
// per-packet path: rte_log formats and writes.
//
// Program output that scripts parse (counters, reports, --help) is not a
// log and stays on stdout with printf.
#ifndef SPINNIC_DATAPLANE_COMMON_LOG_H_
#define SPINNIC_DATAPLANE_COMMON_LOG_H_

#include <rte_log.h>

namespace spinnic::log {

// rte_log types, registered by log.cc before main.
extern int dataplane;  // "spinnic.dataplane": ports, HPUs, the sPIN engine
extern int diad;       // "spinnic.diad": the DiAD transport
extern int roce;       // "spinnic.roce": the RoCEv2 transport
extern int control;    // "spinnic.control": spinnicd and its control API
extern int impair;     // "spinnic.impair": the spinnic-impair tool

}  // namespace spinnic::log

#define SPINNIC_LOG(level, component, fmt, ...)       \
  rte_log(RTE_LOG_##level, ::spinnic::log::component, \
          fmt "\n" __VA_OPT__(, ) __VA_ARGS__)

#endif  // SPINNIC_DATAPLANE_COMMON_LOG_H_
