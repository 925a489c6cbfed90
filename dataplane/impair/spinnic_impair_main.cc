// spinnic-impair: an impairment stage between two DPDK ports (netem does not
// exist here). Per direction it applies seeded loss, duplication, corruption,
// reordering and delay with jitter, and optionally a bottleneck (a rate
// limit, a bounded queue, ECN marking) (dataplane/impair/impair_stage.h),
// with its own counters. One lcore polls both ports in both directions.
//
//   spinnic-impair --port_a VDEV --port_b VDEV [flags] [-- EAL arguments]
//
// SIGUSR1 makes it stop polling both ports (frames stay where they are)
// until SIGINT/SIGTERM: a test stops its appliances after that, so that
// their memif disconnects never meet a burst in progress (DPDK 22.11's memif
// can crash the side that survives a peer's disconnect while frames flow,
// PLATFORM.md).
//
// Exit codes: 0 clean stop (SIGINT/SIGTERM or --duration_s), 2 bad flags
// (one line on stderr naming the flag; nothing started), 1 a failure after
// start (EAL, ports, stats file). docs/impair.md.

#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "dataplane/common/log.h"
#include "dataplane/impair/impair_stage.h"
#include "dataplane/impair/impairment_model.h"

ABSL_FLAG(std::string, port_a, "",
          "Port A: a vdev string (net_memif0,role=client,socket=/tmp/a.sock) "
          "or the name of an ethdev created by the EAL arguments");
ABSL_FLAG(std::string, port_b, "", "Port B: as --port_a");
ABSL_FLAG(uint64_t, seed, 1, "Seed of every random decision");
ABSL_FLAG(double, loss, 0, "Probability that a packet is dropped");
ABSL_FLAG(double, duplicate, 0,
          "Probability that a surviving packet is sent twice");
ABSL_FLAG(double, reorder, 0,
          "Probability that a copy is held back behind later packets");
ABSL_FLAG(uint32_t, reorder_depth, 3,
          "A reordered copy is overtaken by 1..reorder_depth later packets");
ABSL_FLAG(uint64_t, reorder_timeout_us, 1000,
          "A reordered copy leaves at the latest this long after its own "
          "departure time");
ABSL_FLAG(double, corrupt, 0, "Probability that a copy gets one bit flipped");
ABSL_FLAG(uint32_t, corrupt_from, 14,
          "Corruption touches only bytes at this offset or later");
ABSL_FLAG(uint64_t, delay_us, 0, "Delay of every copy, microseconds");
ABSL_FLAG(uint64_t, jitter_us, 0,
          "Extra delay, uniform in [0, jitter_us] per copy (reorders)");
ABSL_FLAG(double, a_to_b_loss, -1, "--loss for A->B only");
ABSL_FLAG(double, b_to_a_loss, -1, "--loss for B->A only");
ABSL_FLAG(double, a_to_b_duplicate, -1, "--duplicate for A->B only");
ABSL_FLAG(double, b_to_a_duplicate, -1, "--duplicate for B->A only");
ABSL_FLAG(double, a_to_b_reorder, -1, "--reorder for A->B only");
ABSL_FLAG(double, b_to_a_reorder, -1, "--reorder for B->A only");
ABSL_FLAG(double, a_to_b_corrupt, -1, "--corrupt for A->B only");
ABSL_FLAG(double, b_to_a_corrupt, -1, "--corrupt for B->A only");
ABSL_FLAG(uint64_t, a_to_b_delay_us, 0, "--delay_us for A->B only");
ABSL_FLAG(uint64_t, b_to_a_delay_us, 0, "--delay_us for B->A only");
ABSL_FLAG(uint64_t, a_to_b_jitter_us, 0, "--jitter_us for A->B only");
ABSL_FLAG(uint64_t, b_to_a_jitter_us, 0, "--jitter_us for B->A only");
ABSL_FLAG(double, rate_bps, 0,
          "Bottleneck rate, bits per second (e.g. 10e9); 0: no bottleneck");
ABSL_FLAG(double, a_to_b_rate_bps, -1, "--rate_bps for A->B only");
ABSL_FLAG(double, b_to_a_rate_bps, -1, "--rate_bps for B->A only");
ABSL_FLAG(uint32_t, bottleneck_frames, 1024,
          "Frames the bottleneck queue holds; one more is a tail drop");
ABSL_FLAG(uint32_t, frame_overhead_bytes, 24,
          "Wire bytes per frame besides its length (preamble, FCS, gap)");
ABSL_FLAG(uint32_t, ecn_min_frames, 0,
          "ECN: no CE mark with fewer frames queued");
ABSL_FLAG(uint32_t, ecn_max_frames, 0,
          "ECN: CE on every ECT frame with this many queued (0: no marking)");
ABSL_FLAG(double, ecn_max_probability, 1.0,
          "ECN: marking probability just below ecn_max_frames (RED's Pmax)");
ABSL_FLAG(int64_t, duration_s, 0,
          "Stop after this many seconds (0: at "
          "SIGINT/SIGTERM)");
ABSL_FLAG(std::string, stats_json, "",
          "At exit, write the final counters as JSON to this file");
ABSL_FLAG(int64_t, stats_interval_s, 0,
          "Print the counters this often (0: only at exit)");
ABSL_FLAG(uint32_t, burst, 32, "RX burst size, 1..512");
ABSL_FLAG(uint32_t, queue_capacity, 4096,
          "Delay-queue entries per direction, 1..1048576");
ABSL_FLAG(uint32_t, descriptors, 1024, "RX and TX descriptors per port");
ABSL_FLAG(uint32_t, mbufs, 0, "Mbufs in the pool (0: enough for the queues)");

namespace spinnic::impair {
namespace {

constexpr int kExitFailure = 1;
constexpr int kExitBadFlags = 2;
constexpr char kProgram[] = "spinnic-impair";

std::atomic<int> g_signal{0};
void OnSignal(int signal) { g_signal.store(signal); }
std::atomic<bool> g_hold{false};
void OnHold(int) { g_hold.store(true); }

void Log(absl::string_view line) {
  std::printf("%s: %s\n", kProgram, std::string(line).c_str());
  std::fflush(stdout);
}

// What to write, per flag, when its value does not parse.
struct FlagSpec {
  const char* name;
  const char* what;
};
constexpr FlagSpec kFlags[] = {
    {"port_a", "a vdev string such as net_memif0,role=client,socket=/tmp/a"},
    {"port_b", "a vdev string such as net_memif1,role=client,socket=/tmp/b"},
    {"seed", "an unsigned integer"},
    {"loss", "a probability in [0, 1], e.g. 0.01"},
    {"duplicate", "a probability in [0, 1], e.g. 0.01"},
    {"reorder", "a probability in [0, 1], e.g. 0.01"},
    {"reorder_depth", "an integer 1..64"},
    {"reorder_timeout_us", "microseconds, an unsigned integer"},
    {"corrupt", "a probability in [0, 1], e.g. 0.01"},
    {"corrupt_from", "a byte offset, an unsigned integer"},
    {"delay_us", "microseconds, an unsigned integer"},
    {"jitter_us", "microseconds, an unsigned integer"},
    {"a_to_b_loss", "a probability in [0, 1]"},
    {"b_to_a_loss", "a probability in [0, 1]"},
    {"a_to_b_duplicate", "a probability in [0, 1]"},
    {"b_to_a_duplicate", "a probability in [0, 1]"},
    {"a_to_b_reorder", "a probability in [0, 1]"},
    {"b_to_a_reorder", "a probability in [0, 1]"},
    {"a_to_b_corrupt", "a probability in [0, 1]"},
    {"b_to_a_corrupt", "a probability in [0, 1]"},
    {"a_to_b_delay_us", "microseconds, an unsigned integer"},
    {"b_to_a_delay_us", "microseconds, an unsigned integer"},
    {"a_to_b_jitter_us", "microseconds, an unsigned integer"},
    {"b_to_a_jitter_us", "microseconds, an unsigned integer"},
    {"rate_bps", "bits per second, e.g. 10e9, or 0 for no bottleneck"},
    {"a_to_b_rate_bps", "bits per second, e.g. 10e9"},
    {"b_to_a_rate_bps", "bits per second, e.g. 10e9"},
    {"bottleneck_frames", "an integer 1..1048576"},
    {"frame_overhead_bytes", "bytes, an integer 0..1024"},
    {"ecn_min_frames", "frames, an unsigned integer"},
    {"ecn_max_frames", "frames, an unsigned integer (0: no marking)"},
    {"ecn_max_probability", "a probability in (0, 1], e.g. 0.2"},
    {"duration_s", "seconds, 0 to run until SIGINT/SIGTERM"},
    {"stats_json", "a file path"},
    {"stats_interval_s", "seconds, 0 for none"},
    {"burst", "an integer 1..512"},
    {"queue_capacity", "an integer 1..1048576"},
    {"descriptors", "an integer 64..4096"},
    {"mbufs", "an integer, 0 for automatic"},
};

const FlagSpec* FindSpec(absl::string_view name) {
  for (const FlagSpec& spec : kFlags) {
    if (name == spec.name) return &spec;
  }
  return nullptr;
}

void PrintUsage() {
  std::printf(
      "usage: %s --port_a VDEV --port_b VDEV [flags] [-- EAL arguments]\n"
      "Impairs traffic between two DPDK ports, per direction, seeded: loss, "
      "duplication, corruption, reordering, delay and jitter, and a "
      "bottleneck (rate, queue, ECN marking). "
      "docs/impair.md.\n\nflags (--name=value or --name value):\n",
      kProgram);
  for (const FlagSpec& spec : kFlags) {
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(spec.name);
    absl::string_view name = spec.name;
    bool per_direction =
        absl::StartsWith(name, "a_to_b_") || absl::StartsWith(name, "b_to_a_");
    std::printf(
        "  --%-20s %s (default: %s)\n", spec.name, flag->Help().c_str(),
        per_direction ? "the general flag" : flag->DefaultValue().c_str());
  }
  std::printf(
      "\nWithout EAL arguments: -l 0 --no-huge -m 256 --no-pci "
      "--no-shconf.\n");
}

struct ParsedArgs {
  std::set<std::string> set;          // flags given on the command line
  std::vector<std::string> eal_args;  // after "--"
  bool help = false;
};

// Parses our own flags (and only those) so that a bad one yields exactly one
// line and exit code 2, rather than absl's multi-line report and exit 1.
absl::StatusOr<ParsedArgs> ParseArgs(int argc, char** argv) {
  ParsedArgs parsed;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--") {
      for (++i; i < argc; ++i) parsed.eal_args.emplace_back(argv[i]);
      break;
    }
    if (arg == "--help" || arg == "-h" || arg == "-help") {
      parsed.help = true;
      continue;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected argument '", arg,
                       "'; flags are --name=value, EAL arguments go after --"));
    }
    arg.remove_prefix(arg[1] == '-' ? 2 : 1);
    absl::string_view name = arg.substr(0, arg.find('='));
    const FlagSpec* spec = FindSpec(name);
    if (spec == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--", name,
          ": unknown flag; see --help (EAL arguments go after --)"));
    }
    std::string value;
    if (name.size() < arg.size()) {
      value = std::string(arg.substr(name.size() + 1));
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, ": needs a value; write --", name, "=<",
                       spec->what, ">"));
    }
    std::string error;
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr || !flag->ParseFrom(value, &error)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--", name, ": '", value, "' is not valid; write ", spec->what));
    }
    parsed.set.insert(std::string(name));
  }
  return parsed;
}

struct Settings {
  std::string port[2];
  ImpairConfig config[2];  // 0: A->B, 1: B->A
  int64_t duration_s;
  int64_t stats_interval_s;
  std::string stats_json;
  uint16_t burst;
  uint32_t queue_capacity;
  uint16_t descriptors;
  uint32_t mbufs;
};

absl::Status FlagError(absl::string_view flag, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", what));
}

// A rate flag's value as whole bits per second, or the flag's error.
absl::StatusOr<uint64_t> RateFromFlag(absl::string_view flag, double value) {
  if (!std::isfinite(value) || value < 0 ||
      value > static_cast<double>(kMaxRateBps)) {
    return FlagError(flag, absl::StrFormat("%g is out of range; write bits per "
                                           "second up to 1e12, e.g. 10e9, or "
                                           "0 for no bottleneck",
                                           value));
  }
  return static_cast<uint64_t>(std::llround(value));
}

absl::StatusOr<Settings> SettingsFromFlags(const ParsedArgs& args) {
  Settings s;
  s.port[0] = absl::GetFlag(FLAGS_port_a);
  s.port[1] = absl::GetFlag(FLAGS_port_b);
  for (int p = 0; p < 2; ++p) {
    const char* flag = p == 0 ? "port_a" : "port_b";
    if (s.port[p].empty()) {
      return FlagError(flag, absl::StrCat("missing; write a vdev string such "
                                          "as --",
                                          flag,
                                          "=net_memif0,role=client,socket=/"
                                          "tmp/x.sock, or net_null0"));
    }
  }
  if (s.port[0].substr(0, s.port[0].find(',')) ==
      s.port[1].substr(0, s.port[1].find(','))) {
    return FlagError("port_b",
                     "names the same device as --port_a; give the two "
                     "ports different names (net_memif0, net_memif1)");
  }
  ImpairConfig base;
  base.seed = absl::GetFlag(FLAGS_seed);
  base.loss = absl::GetFlag(FLAGS_loss);
  base.duplicate = absl::GetFlag(FLAGS_duplicate);
  base.reorder = absl::GetFlag(FLAGS_reorder);
  base.reorder_depth = absl::GetFlag(FLAGS_reorder_depth);
  base.reorder_timeout_us = absl::GetFlag(FLAGS_reorder_timeout_us);
  base.corrupt = absl::GetFlag(FLAGS_corrupt);
  base.corrupt_from = absl::GetFlag(FLAGS_corrupt_from);
  base.delay_us = absl::GetFlag(FLAGS_delay_us);
  base.jitter_us = absl::GetFlag(FLAGS_jitter_us);
  absl::StatusOr<uint64_t> rate =
      RateFromFlag("rate_bps", absl::GetFlag(FLAGS_rate_bps));
  if (!rate.ok()) return rate.status();
  base.rate_bps = *rate;
  base.bottleneck_frames = absl::GetFlag(FLAGS_bottleneck_frames);
  base.frame_overhead_bytes = absl::GetFlag(FLAGS_frame_overhead_bytes);
  base.ecn_min_frames = absl::GetFlag(FLAGS_ecn_min_frames);
  base.ecn_max_frames = absl::GetFlag(FLAGS_ecn_max_frames);
  base.ecn_max_probability = absl::GetFlag(FLAGS_ecn_max_probability);
  // With a bottleneck on one direction only (--a_to_b_rate_bps), the
  // general ECN flags are that direction's: check them as if the general
  // rate were set.
  ImpairConfig base_check = base;
  if (base_check.rate_bps == 0 && (args.set.count("a_to_b_rate_bps") != 0 ||
                                   args.set.count("b_to_a_rate_bps") != 0)) {
    base_check.rate_bps = 1;
  }
  if (absl::Status st = ValidateImpairConfig(base_check, "--"); !st.ok()) {
    return st;
  }

  const absl::Flag<double>* prob[2][4] = {
      {&FLAGS_a_to_b_loss, &FLAGS_a_to_b_duplicate, &FLAGS_a_to_b_reorder,
       &FLAGS_a_to_b_corrupt},
      {&FLAGS_b_to_a_loss, &FLAGS_b_to_a_duplicate, &FLAGS_b_to_a_reorder,
       &FLAGS_b_to_a_corrupt}};
  const absl::Flag<uint64_t>* micros[2][2] = {
      {&FLAGS_a_to_b_delay_us, &FLAGS_a_to_b_jitter_us},
      {&FLAGS_b_to_a_delay_us, &FLAGS_b_to_a_jitter_us}};
  for (int d = 0; d < 2; ++d) {
    const char* prefix = d == 0 ? "a_to_b_" : "b_to_a_";
    ImpairConfig& c = s.config[d];
    c = base;
    double* prob_fields[4] = {&c.loss, &c.duplicate, &c.reorder, &c.corrupt};
    const char* prob_names[4] = {"loss", "duplicate", "reorder", "corrupt"};
    for (int k = 0; k < 4; ++k) {
      if (args.set.count(absl::StrCat(prefix, prob_names[k])) != 0) {
        *prob_fields[k] = absl::GetFlag(*prob[d][k]);
      }
    }
    uint64_t* micro_fields[2] = {&c.delay_us, &c.jitter_us};
    const char* micro_names[2] = {"delay_us", "jitter_us"};
    for (int k = 0; k < 2; ++k) {
      if (args.set.count(absl::StrCat(prefix, micro_names[k])) != 0) {
        *micro_fields[k] = absl::GetFlag(*micros[d][k]);
      }
    }
    const absl::Flag<double>& rate_flag =
        d == 0 ? FLAGS_a_to_b_rate_bps : FLAGS_b_to_a_rate_bps;
    const std::string rate_name = absl::StrCat(prefix, "rate_bps");
    if (args.set.count(rate_name) != 0) {
      absl::StatusOr<uint64_t> direction_rate =
          RateFromFlag(rate_name, absl::GetFlag(rate_flag));
      if (!direction_rate.ok()) return direction_rate.status();
      c.rate_bps = *direction_rate;
    }
    if (c.rate_bps == 0) {
      // No bottleneck this way: its ECN settings have no queue to act on.
      c.ecn_min_frames = 0;
      c.ecn_max_frames = 0;
    }
    if (absl::Status st = ValidateImpairConfig(c, absl::StrCat("--", prefix));
        !st.ok()) {
      return st;
    }
  }
  s.duration_s = absl::GetFlag(FLAGS_duration_s);
  if (s.duration_s < 0) {
    return FlagError("duration_s",
                     "must not be negative; write seconds, or 0 to run "
                     "until SIGINT/SIGTERM");
  }
  s.stats_interval_s = absl::GetFlag(FLAGS_stats_interval_s);
  if (s.stats_interval_s < 0) {
    return FlagError("stats_interval_s",
                     "must not be negative; write seconds, or 0 for none");
  }
  s.stats_json = absl::GetFlag(FLAGS_stats_json);
  uint32_t burst = absl::GetFlag(FLAGS_burst);
  if (burst < 1 || burst > 512) {
    return FlagError("burst", absl::StrCat(burst,
                                           " is out of range; write "
                                           "an integer 1..512"));
  }
  s.burst = static_cast<uint16_t>(burst);
  s.queue_capacity = absl::GetFlag(FLAGS_queue_capacity);
  if (s.queue_capacity < 1 || s.queue_capacity > (1u << 20)) {
    return FlagError("queue_capacity",
                     absl::StrCat(s.queue_capacity,
                                  " is out of range; write an integer "
                                  "1..1048576"));
  }
  uint32_t descriptors = absl::GetFlag(FLAGS_descriptors);
  if (descriptors < 64 || descriptors > 4096) {
    return FlagError("descriptors", absl::StrCat(descriptors,
                                                 " is out of range; write an "
                                                 "integer 64..4096"));
  }
  s.descriptors = static_cast<uint16_t>(descriptors);
  s.mbufs = absl::GetFlag(FLAGS_mbufs);
  return s;
}

// One direction's state: its stage and the packets it still has to send.
struct Direction {
  std::unique_ptr<ImpairStage> stage;
  uint16_t src = 0;
  uint16_t dst = 0;
  std::vector<rte_mbuf*> pending;  // what the last call emitted
  uint16_t pending_off = 0;
  uint16_t pending_n = 0;
  uint64_t tx_dropped = 0;  // not sent at exit within the grace period
};

// Sends what is pending; true when nothing is left.
bool SendPending(Direction& d) {
  if (d.pending_n == 0) return true;
  uint16_t sent =
      rte_eth_tx_burst(d.dst, 0, d.pending.data() + d.pending_off, d.pending_n);
  d.pending_off = static_cast<uint16_t>(d.pending_off + sent);
  d.pending_n = static_cast<uint16_t>(d.pending_n - sent);
  if (d.pending_n == 0) d.pending_off = 0;
  return d.pending_n == 0;
}

struct OpenedPort {
  uint16_t id = 0;
  bool probed = false;  // we probed it: remove it at close
  bool open = false;
};

absl::Status OpenPort(const char* flag, const std::string& devargs,
                      rte_mempool* pool, uint16_t descriptors,
                      OpenedPort* port) {
  std::string name = devargs.substr(0, devargs.find(','));
  auto fail = [&](absl::string_view what, int rc) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--", flag, " '", devargs, "': ", what,
        rc != 0 ? absl::StrCat(" (", rte_strerror(rc < 0 ? -rc : rc), ")")
                : ""));
  };
  if (rte_eth_dev_get_port_by_name(name.c_str(), &port->id) != 0) {
    int rc = rte_dev_probe(devargs.c_str());
    if (rc != 0) {
      return fail("cannot probe it; check the driver name and its arguments",
                  rc);
    }
    port->probed = true;
    if (rte_eth_dev_get_port_by_name(name.c_str(), &port->id) != 0) {
      return fail("probed, but no ethdev has that name", 0);
    }
  }
  port->open = true;
  rte_eth_dev_info info;
  int rc = rte_eth_dev_info_get(port->id, &info);
  if (rc != 0) return fail("cannot read device info", rc);
  rte_eth_conf conf;
  std::memset(&conf, 0, sizeof conf);
  if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) {
    conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
  }
  rc = rte_eth_dev_configure(port->id, 1, 1, &conf);
  if (rc != 0) return fail("configure failed", rc);
  uint16_t rx_desc = descriptors;
  uint16_t tx_desc = descriptors;
  rc = rte_eth_dev_adjust_nb_rx_tx_desc(port->id, &rx_desc, &tx_desc);
  if (rc != 0) return fail("descriptor counts rejected", rc);
  int socket = rte_eth_dev_socket_id(port->id);
  if (socket < 0) socket = 0;
  rc = rte_eth_rx_queue_setup(port->id, 0, rx_desc, socket, nullptr, pool);
  if (rc != 0) return fail("RX queue setup failed", rc);
  rc = rte_eth_tx_queue_setup(port->id, 0, tx_desc, socket, nullptr);
  if (rc != 0) return fail("TX queue setup failed", rc);
  rc = rte_eth_dev_start(port->id);
  if (rc != 0) return fail("start failed", rc);
  rte_eth_promiscuous_enable(port->id);  // some vdevs have no such mode
  return absl::OkStatus();
}

void ClosePort(OpenedPort& port) {
  if (!port.open) return;
  port.open = false;
  rte_eth_dev_info info;
  rte_device* device = nullptr;
  if (rte_eth_dev_info_get(port.id, &info) == 0) device = info.device;
  rte_eth_dev_stop(port.id);
  rte_eth_dev_close(port.id);
  if (port.probed && device != nullptr) rte_dev_remove(device);
}

std::string CountersJson(const ImpairStage& stage, uint64_t tx_dropped) {
  const ImpairCounters& c = stage.counters();
  const DepthHistogram& depths = stage.queue_depths();
  return absl::StrFormat(
      "{\"in\": %u, \"out\": %u, \"lost\": %u, \"duplicated\": %u, "
      "\"reordered\": %u, \"corrupted\": %u, \"delayed\": %u, "
      "\"held_max\": %u, \"queue_full_drops\": %u, \"no_buffer\": %u, "
      "\"reorder_skipped\": %u, \"flushed\": %u, \"tx_dropped\": %u, "
      "\"tail_drops\": %u, \"ecn_marked\": %u, \"ecn_not_ect\": %u, "
      "\"ecn_already_ce\": %u, \"queue_max\": %u, \"queue_p50\": %u, "
      "\"queue_p99\": %u, \"queue_depths\": {\"bucket_frames\": %u, "
      "\"counts\": [%s]}}",
      c.in, c.out, c.lost, c.duplicated, c.reordered, c.corrupted, c.delayed,
      c.held_max, c.queue_full_drops, c.no_buffer, c.reorder_skipped, c.flushed,
      tx_dropped, c.tail_drops, c.ecn_marked, c.ecn_not_ect, c.ecn_already_ce,
      c.queue_max, depths.Percentile(0.5), depths.Percentile(0.99),
      depths.bucket_width(), absl::StrJoin(depths.counts(), ", "));
}

std::string ConfigJson(const ImpairConfig& c) {
  return absl::StrFormat(
      "{\"seed\": %u, \"loss\": %.17g, \"duplicate\": %.17g, "
      "\"reorder\": %.17g, \"reorder_depth\": %u, \"reorder_timeout_us\": %u, "
      "\"corrupt\": %.17g, \"corrupt_from\": %u, \"delay_us\": %u, "
      "\"jitter_us\": %u, \"rate_bps\": %u, \"bottleneck_frames\": %u, "
      "\"frame_overhead_bytes\": %u, \"ecn_min_frames\": %u, "
      "\"ecn_max_frames\": %u, \"ecn_max_probability\": %.17g}",
      c.seed, c.loss, c.duplicate, c.reorder, c.reorder_depth,
      c.reorder_timeout_us, c.corrupt, c.corrupt_from, c.delay_us, c.jitter_us,
      c.rate_bps, c.bottleneck_frames, c.frame_overhead_bytes, c.ecn_min_frames,
      c.ecn_max_frames, c.ecn_max_probability);
}

std::string PortJson(uint16_t port_id) {
  rte_eth_stats st;
  if (rte_eth_stats_get(port_id, &st) != 0) std::memset(&st, 0, sizeof st);
  return absl::StrFormat(
      "{\"port_id\": %u, \"ipackets\": %u, \"opackets\": %u, \"ibytes\": %u, "
      "\"obytes\": %u, \"imissed\": %u, \"ierrors\": %u, \"oerrors\": %u, "
      "\"rx_nombuf\": %u}",
      port_id, st.ipackets, st.opackets, st.ibytes, st.obytes, st.imissed,
      st.ierrors, st.oerrors, st.rx_nombuf);
}

std::string CountersLine(const char* name, const Direction& d) {
  const ImpairCounters& c = d.stage->counters();
  std::string line = absl::StrFormat(
      "%s: in %u out %u lost %u duplicated %u reordered %u corrupted %u "
      "delayed %u held_max %u queue_full_drops %u no_buffer %u "
      "reorder_skipped %u flushed %u tx_dropped %u",
      name, c.in, c.out, c.lost, c.duplicated, c.reordered, c.corrupted,
      c.delayed, c.held_max, c.queue_full_drops, c.no_buffer, c.reorder_skipped,
      c.flushed, d.tx_dropped);
  if (!HasBottleneck(d.stage->model().config())) return line;
  const DepthHistogram& depths = d.stage->queue_depths();
  return absl::StrCat(
      line, absl::StrFormat(" tail_drops %u ecn_marked %u ecn_not_ect %u "
                            "ecn_already_ce %u queue_max %u queue_p50 %u "
                            "queue_p99 %u",
                            c.tail_drops, c.ecn_marked, c.ecn_not_ect,
                            c.ecn_already_ce, c.queue_max,
                            depths.Percentile(0.5), depths.Percentile(0.99)));
}

// Run's forwarding loop: both directions through their stages until the
// duration ends or a signal arrives, counters logged every interval.
void ForwardUntilDone(const Settings& s, Direction (&dirs)[2], uint16_t out_cap,
                      uint64_t start, uint64_t hz) {
  const uint64_t end = s.duration_s > 0
                           ? start + static_cast<uint64_t>(s.duration_s) * hz
                           : UINT64_MAX;
  const uint64_t interval = static_cast<uint64_t>(s.stats_interval_s) * hz;
  uint64_t next_stats = interval > 0 ? start + interval : UINT64_MAX;
  std::vector<rte_mbuf*> rx(s.burst);
  bool held = false;
  while (g_signal.load(std::memory_order_relaxed) == 0) {
    uint64_t now = rte_rdtsc();
    if (now >= end) break;
    if (now >= next_stats) {
      next_stats += interval;
      Log(CountersLine("A->B", dirs[0]));
      Log(CountersLine("B->A", dirs[1]));
    }
    if (g_hold.load(std::memory_order_relaxed)) [[unlikely]] {
      if (!held) Log("SIGUSR1: holding (no polling) until stopped");
      held = true;
      rte_delay_us_sleep(1000);
      continue;
    }
    for (Direction& d : dirs) {
      // Back-pressure: no RX in this direction while TX is behind.
      if (!SendPending(d)) continue;
      uint16_t n = rte_eth_rx_burst(d.src, 0, rx.data(), s.burst);
      now = rte_rdtsc();
      d.pending_n =
          n > 0 ? d.stage->Process(rx.data(), n, now, d.pending.data(), out_cap)
                : d.stage->Poll(now, d.pending.data(), out_cap);
      SendPending(d);
    }
  }
  if (int signal = g_signal.load(); signal != 0) {
    Log(absl::StrCat("signal ", signal, ": stopping"));
  }
}

// After the loop: held copies are released (sent) at once; what the ports
// do not take within half a second is freed and counted as tx_dropped.
void FlushAndDrop(Direction (&dirs)[2], uint16_t out_cap, uint64_t hz) {
  const uint64_t grace = rte_rdtsc() + hz / 2;
  for (;;) {
    bool busy = false;
    for (Direction& d : dirs) {
      if (SendPending(d) && d.stage->held() > 0) {
        d.pending_n = d.stage->Flush(d.pending.data(), out_cap);
        SendPending(d);
      }
      busy |= d.pending_n > 0 || d.stage->held() > 0;
    }
    if (!busy || rte_rdtsc() >= grace) break;
  }
  for (Direction& d : dirs) {
    for (uint16_t i = 0; i < d.pending_n; ++i) {
      rte_pktmbuf_free(d.pending[d.pending_off + i]);
    }
    d.tx_dropped += d.pending_n + d.stage->held();
    d.pending_n = 0;
  }
}

// --stats_json: the run's duration, both configurations, both directions'
// counters and the ports' statistics. False (and a message) when the file
// cannot be written.
bool WriteStatsJson(const Settings& s, double seconds,
                    const Direction (&dirs)[2], const OpenedPort (&ports)[2]) {
  std::string json = absl::StrCat(
      "{\n  \"duration_s\": ", absl::StrFormat("%.3f", seconds),
      ",\n  \"config\": {\"a_to_b\": ", ConfigJson(s.config[0]),
      ", \"b_to_a\": ", ConfigJson(s.config[1]),
      "},\n  \"a_to_b\": ", CountersJson(*dirs[0].stage, dirs[0].tx_dropped),
      ",\n  \"b_to_a\": ", CountersJson(*dirs[1].stage, dirs[1].tx_dropped),
      ",\n  \"ports\": {\"a\": ", PortJson(ports[0].id),
      ", \"b\": ", PortJson(ports[1].id), "}\n}\n");
  std::ofstream file(s.stats_json, std::ios::trunc);
  file << json;
  file.close();
  if (!file) {
    SPINNIC_LOG(ERR, impair, "%s: cannot write --stats_json '%s'", kProgram,
                s.stats_json.c_str());
    return false;
  }
  return true;
}

int Run(int argc, char** argv) {
  absl::StatusOr<ParsedArgs> args = ParseArgs(argc, argv);
  if (!args.ok()) {
    SPINNIC_LOG(ERR, impair, "%s: %s", kProgram,
                std::string(args.status().message()).c_str());
    return kExitBadFlags;
  }
  if (args->help) {
    PrintUsage();
    return 0;
  }
  absl::StatusOr<Settings> settings = SettingsFromFlags(*args);
  if (!settings.ok()) {
    SPINNIC_LOG(ERR, impair, "%s: %s", kProgram,
                std::string(settings.status().message()).c_str());
    return kExitBadFlags;
  }
  const Settings& s = *settings;

  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGUSR1, OnHold);

  std::vector<std::string> eal_args = args->eal_args;
  if (eal_args.empty()) {
    eal_args = {"-l", "0", "--no-huge", "-m", "256", "--no-pci", "--no-shconf"};
  }
  eal_args.insert(eal_args.begin(), kProgram);
  std::vector<char*> eal_argv;
  for (std::string& a : eal_args) eal_argv.push_back(a.data());
  if (rte_eal_init(static_cast<int>(eal_argv.size()), eal_argv.data()) < 0) {
    SPINNIC_LOG(ERR, impair, "%s: EAL init failed: %s", kProgram,
                rte_strerror(rte_errno));
    return kExitFailure;
  }

  int exit_code = 0;
  OpenedPort ports[2];
  Direction dirs[2];
  const uint16_t out_cap =
      static_cast<uint16_t>(std::max<uint32_t>(2u * s.burst, 64u));
  uint32_t mbufs = s.mbufs;
  if (mbufs == 0) {
    // Both directions' hold structures (and their duplicates), their
    // bottleneck queues, the rings of both ports, the pending arrays, slack.
    mbufs =
        2 * (s.queue_capacity + 64) + 4u * s.descriptors + 4u * out_cap + 2048;
    for (const ImpairConfig& c : s.config) {
      if (HasBottleneck(c)) mbufs += c.bottleneck_frames;
    }
  }
  rte_mempool* pool = rte_pktmbuf_pool_create(
      "impair_pool", mbufs, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
      static_cast<int>(rte_socket_id()));
  if (pool == nullptr) {
    SPINNIC_LOG(ERR, impair,
                "%s: cannot create a pool of %u mbufs (%s); give the EAL "
                "more memory (-m) or lower --queue_capacity / --mbufs",
                kProgram, mbufs, rte_strerror(rte_errno));
    rte_eal_cleanup();
    return kExitFailure;
  }
  for (int p = 0; p < 2 && exit_code == 0; ++p) {
    absl::Status st = OpenPort(p == 0 ? "port_a" : "port_b", s.port[p], pool,
                               s.descriptors, &ports[p]);
    if (!st.ok()) {
      SPINNIC_LOG(ERR, impair, "%s: %s", kProgram,
                  std::string(st.message()).c_str());
      exit_code = kExitFailure;
    }
  }

  uint64_t hz = rte_get_tsc_hz();
  uint64_t start = rte_rdtsc();
  if (exit_code == 0) {
    for (int d = 0; d < 2; ++d) {
      StageOptions options;
      options.hold_capacity = s.queue_capacity;
      options.tsc_hz = hz;
      options.copy_pool = pool;
      dirs[d].stage = std::make_unique<ImpairStage>(s.config[d], d, options);
      dirs[d].src = ports[d].id;
      dirs[d].dst = ports[1 - d].id;
      dirs[d].pending.resize(out_cap);
    }
    Log(absl::StrCat("A->B ", DescribeImpairConfig(s.config[0])));
    Log(absl::StrCat("B->A ", DescribeImpairConfig(s.config[1])));
    Log(absl::StrCat("forwarding between ", s.port[0], " and ", s.port[1],
                     s.duration_s > 0
                         ? absl::StrCat(" for ", s.duration_s, " s")
                         : std::string(" until SIGINT/SIGTERM")));
    ForwardUntilDone(s, dirs, out_cap, start, hz);
    FlushAndDrop(dirs, out_cap, hz);
  }
  const double seconds =
      static_cast<double>(rte_rdtsc() - start) / static_cast<double>(hz);

  if (exit_code == 0) {
    Log(CountersLine("A->B", dirs[0]));
    Log(CountersLine("B->A", dirs[1]));
    if (!s.stats_json.empty() && !WriteStatsJson(s, seconds, dirs, ports)) {
      exit_code = kExitFailure;
    }
  }
  for (Direction& d : dirs) d.stage.reset();  // frees anything still held
  for (OpenedPort& p : ports) ClosePort(p);
  rte_mempool_free(pool);
  rte_eal_cleanup();
  return exit_code;
}

}  // namespace
}  // namespace spinnic::impair

int main(int argc, char** argv) { return spinnic::impair::Run(argc, argv); }
