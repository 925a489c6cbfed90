// DiAD's own DPDK telemetry commands (docs/counters.md): the peers by name
// and one peer's state and counters. Its transport counters are served by
// the dataplane's /spinnic/transport,diad.
#include <rte_telemetry.h>

#include <string>
#include <vector>

#include "dataplane/diad/diad_module.h"

namespace spinnic::diad {

std::vector<TelemetryCommand> DiadModule::TelemetryCommands() const {
  std::vector<TelemetryCommand> commands;
  commands.push_back({"/spinnic/peers", "Names of the DiAD peers.",
                      [this](const char*, rte_tel_data* d) {
                        rte_tel_data_start_array(d, RTE_TEL_STRING_VAL);
                        for (const PeerInfo& peer : ListPeers()) {
                          rte_tel_data_add_array_string(d, peer.name.c_str());
                        }
                        return 0;
                      }});
  commands.push_back(
      {"/spinnic/peer",
       "State and counters of one DiAD peer. Parameter: its name",
       [this](const char* params, rte_tel_data* d) {
         if (params == nullptr) return -EINVAL;
         for (const PeerInfo& p : ListPeers()) {
           if (p.name != params) continue;
           rte_tel_data_start_dict(d);
           rte_tel_data_add_dict_u64(d, "up", p.up ? 1 : 0);
           rte_tel_data_add_dict_u64(d, "channels_down", p.channels_down);
           rte_tel_data_add_dict_u64(d, "in_flight_packets",
                                     p.in_flight_packets);
           rte_tel_data_add_dict_u64(d, "tx_packets", p.tx_packets);
           rte_tel_data_add_dict_u64(d, "tx_bytes", p.tx_bytes);
           rte_tel_data_add_dict_u64(d, "rx_packets", p.rx_packets);
           rte_tel_data_add_dict_u64(d, "rx_bytes", p.rx_bytes);
           rte_tel_data_add_dict_u64(d, "retransmits", p.retransmits);
           rte_tel_data_add_dict_u64(d, "down_events", p.down_events);
           rte_tel_data_add_dict_u64(d, "resets", p.resets);
           rte_tel_data_add_dict_u64(d, "ops_completed", p.ops_completed);
           rte_tel_data_add_dict_u64(d, "ops_failed", p.ops_failed);
           rte_tel_data_add_dict_u64(d, "rtt_samples", p.rtt_samples);
           rte_tel_data_add_dict_u64(d, "srtt_ns", p.srtt_ns);
           rte_tel_data_add_dict_u64(d, "rto_ns", p.rto_ns);
           rte_tel_data_add_dict_u64(d, "txn_deadline_exceeded",
                                     p.txn_deadline_exceeded);
           rte_tel_data_add_dict_u64(
               d, "cc_window_milli",
               static_cast<uint64_t>(p.cc_window * 1000 + 0.5));
           rte_tel_data_add_dict_u64(d, "cc_rtt_ns", p.cc_rtt_ns);
           rte_tel_data_add_dict_u64(d, "cc_delay_decreases",
                                     p.cc_delay_decreases);
           rte_tel_data_add_dict_u64(d, "cc_ecn_decreases", p.cc_ecn_decreases);
           rte_tel_data_add_dict_u64(d, "cc_timeout_decreases",
                                     p.cc_timeout_decreases);
           rte_tel_data_add_dict_u64(d, "ce_marks_received",
                                     p.ce_marks_received);
           rte_tel_data_add_dict_u64(d, "ecn_echoes_received",
                                     p.ecn_echoes_received);
           return 0;
         }
         return -EINVAL;
       }});
  return commands;
}

}  // namespace spinnic::diad
