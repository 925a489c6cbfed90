// spinnicd: the appliance daemon. Loads and validates the config, starts the
// EAL, the ports and the HPU lcores, prints counters while it runs, and on
// SIGINT/SIGTERM (or after runtime.duration_s) stops the workers, drains and
// closes the ports and prints the final counters. SIGUSR1 prints them at
// once; DPDK telemetry serves them too (dataplane/telemetry.h). SIGHUP
// re-reads the --config file and applies what can change live (handlers,
// DiAD peers), all or nothing, as spinctl apply does (docs/reload.md).
//
// Exit codes: 0 clean stop, 2 bad config or flags (nothing started), 1 a
// failure after the config was accepted (EAL, ports).
#include <malloc.h>
#include <rte_eal.h>
#include <rte_pdump.h>
#include <rte_version.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/internal/program_name.h"
#include "absl/flags/internal/usage.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "control/config_loader.h"
#include "control/default_config.h"
#include "control/grpc/control_server.h"
#include "control/memif_socket.h"
#include "control/metrics_exporter.h"
#include "control/service_monitor.h"
#include "control/stats_format.h"
#include "dataplane/common/log.h"
#include "dataplane/dataplane.h"
#include "dataplane/telemetry.h"
#include "handlers/api/handler.h"

ABSL_FLAG(
    std::string, config, "",
    "Text-format spinnic.v1.Config file; empty: the built-in default "
    "(the quick-start topology, see deploy/configs/quickstart.textproto)");
ABSL_FLAG(int64_t, duration_s, -1,
          "Stop after this many seconds (0: run until a signal); overrides "
          "runtime.duration_s");
ABSL_FLAG(int64_t, stats_interval_ms, -1,
          "Print counters this often (0: only at exit); overrides "
          "runtime.stats_interval_ms");
ABSL_FLAG(std::string, workers, "",
          "Comma-separated CPU cores for the HPU workers, e.g. 1,2; overrides "
          "`workers`");
ABSL_FLAG(int64_t, main_lcore, -1, "CPU core of the main (control) lcore");
ABSL_FLAG(std::string, stats_json, "",
          "At exit, write the final counters as JSON to this file");
ABSL_FLAG(std::string, control_socket, "/run/spinnic/spinnicd.sock",
          "Unix socket of the gRPC control API (mode 0600); empty: none "
          "(and no control API at all without --control_tcp)");
ABSL_FLAG(std::string, control_tcp, "",
          "Also serve the control API on TCP at HOST:PORT, e.g. "
          "0.0.0.0:50051 or [::1]:50051; needs --control_tls_cert and "
          "--control_tls_key, or --control_insecure_tcp on loopback");
ABSL_FLAG(std::string, control_tls_cert, "",
          "PEM certificate (chain) of the TCP control listener");
ABSL_FLAG(std::string, control_tls_key, "",
          "PEM private key of --control_tls_cert");
ABSL_FLAG(std::string, control_tls_client_ca, "",
          "PEM CA certificate(s): TCP clients must present a certificate "
          "signed by one of them (mutual TLS)");
ABSL_FLAG(bool, control_insecure_tcp, false,
          "Serve --control_tcp as plain text, without TLS; refused unless "
          "its host is a loopback address (127.0.0.0/8, ::1, localhost)");
ABSL_FLAG(int, control_max_message_bytes, 4 << 20,
          "Largest control API request or response, in bytes; bigger ones "
          "get RESOURCE_EXHAUSTED");
ABSL_FLAG(int, control_max_streams, 16,
          "Concurrent control API calls and streams per client connection");
ABSL_FLAG(int, control_memory_mb, 1024,
          "Memory, in MiB, all control API connections together may hold in "
          "gRPC's buffers; at the bound gRPC closes connections to reclaim "
          "it. 0: unbounded");
ABSL_FLAG(
    std::string, metrics_listen, "",
    "Serve Prometheus metrics (GET /metrics, docs/metrics.md) on "
    "IPv4 HOST:PORT, e.g. 127.0.0.1:9470; empty: off. A non-loopback host "
    "needs the control API's TLS (--control_tls_cert/--control_tls_key)");
ABSL_FLAG(int64_t, hpu_stall_ms, 0,
          "An HPU whose loop counter does not move for this long is stalled: "
          "gRPC health NOT_SERVING, no systemd WATCHDOG=1; 0: half of "
          "systemd's WatchdogSec, or 2000 without a watchdog");
ABSL_FLAG(bool, check_config, false,
          "Validate the config, print the effective config, and exit");
ABSL_FLAG(bool, list_handlers, false,
          "List the compiled-in handler kinds with their parameters and exit");

namespace spinnic {
namespace {

constexpr int kExitBadConfig = 2;
constexpr int kExitFailure = 1;

std::atomic<int> g_signal{0};
std::atomic<bool> g_print_stats{false};
std::atomic<bool> g_reload{false};

void OnSignal(int signal) { g_signal.store(signal); }
void OnPrintStats(int) { g_print_stats.store(true); }
void OnReload(int) { g_reload.store(true); }

// What spinnicd is doing, for the operator: rte_log (stderr, and syslog once
// the EAL runs). Counters and --check_config's verdict are output (stdout).
void Log(absl::string_view line) {
  SPINNIC_LOG(NOTICE, control, "spinnicd: %s", std::string(line).c_str());
}
void LogError(absl::string_view line) {
  SPINNIC_LOG(ERR, control, "spinnicd: %s", std::string(line).c_str());
}

// SIGHUP: the config file again, through ApplyConfig's code. One line in
// the log either way; spinnicd keeps running with what it had when the
// file is unreadable, bad, or changes what needs a restart.
void Reload(SpinnicService& service, const std::string& config_path) {
  std::string text;
  std::string source = config_path;
  if (config_path.empty()) {
    text = std::string(DefaultConfigText());
    source = std::string(kDefaultConfigSourceName);
  } else {
    std::ifstream file(config_path);
    std::stringstream buffer;
    buffer << file.rdbuf();
    if (!file) {
      LogError(absl::StrCat("reload: cannot read ", config_path, ": ",
                            std::strerror(errno), "; nothing changed"));
      return;
    }
    text = buffer.str();
  }
  absl::StatusOr<v1::ApplyConfigResponse> applied =
      service.ApplyConfigText(text, source, /*dry_run=*/false);
  if (!applied.ok()) {
    LogError(absl::StrCat("reload of ", source, " refused, nothing changed: ",
                          applied.status().message()));
    return;
  }
  if (applied->changes().empty()) {
    Log(absl::StrCat("reload of ", source, ": no changes"));
    return;
  }
  std::vector<std::string> lines;
  for (const v1::ConfigChange& change : applied->changes()) {
    lines.push_back(change.line());
  }
  Log(absl::StrCat("reload of ", source, ": applied ", applied->changes_size(),
                   " change(s): ", absl::StrJoin(lines, "; ")));
}

void ListHandlers() {
  for (const HandlerKind& kind : RegisteredHandlerKinds()) {
    std::printf("%s: %s (state >= %u bytes)\n", std::string(kind.name).c_str(),
                std::string(kind.description).c_str(), kind.min_state_size);
    for (const ParamSpec& p : kind.params) {
      std::printf(
          "  %-16s %-9s %s%s\n", std::string(p.name).c_str(),
          std::string(ParamTypeName(p.type)).c_str(),
          p.required
              ? "required. "
              : absl::StrCat("default '", p.default_value, "'. ").c_str(),
          std::string(p.help).c_str());
    }
  }
}

// --help, -h, --helpfull and --helpshort print the flags and exit 0 (absl
// exits 1 after a help text; asking for one is no error, and help2man reads
// it). absl's own help modes print it. Anything else: nullopt.
std::optional<int> HelpRequested(int argc, char** argv) {
  using absl::flags_internal::HelpMode;
  HelpMode mode = HelpMode::kNone;
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg == "--help" || arg == "-help" || arg == "-h") {
      mode = HelpMode::kImportant;
    } else if (arg == "--helpfull" || arg == "-helpfull") {
      mode = HelpMode::kFull;
    } else if (arg == "--helpshort" || arg == "-helpshort") {
      mode = HelpMode::kShort;
    }
  }
  if (mode == HelpMode::kNone) return std::nullopt;
  // What ParseCommandLine would set: the help text names the program and
  // lists the flags of its own source files.
  absl::flags_internal::SetProgramInvocationName(argv[0]);
  absl::flags_internal::SetFlagsHelpMode(mode);
  absl::flags_internal::HandleUsageFlags(std::cout,
                                         absl::ProgramUsageMessage());
  std::cout.flush();
  return 0;
}

absl::StatusOr<ConfigOverrides> OverridesFromFlags(
    const std::vector<char*>& positional) {
  ConfigOverrides overrides;
  if (int64_t v = absl::GetFlag(FLAGS_duration_s); v >= 0) {
    overrides.duration_s = static_cast<uint32_t>(v);
  }
  if (int64_t v = absl::GetFlag(FLAGS_stats_interval_ms); v >= 0) {
    overrides.stats_interval_ms = static_cast<uint32_t>(v);
  }
  if (int64_t v = absl::GetFlag(FLAGS_main_lcore); v >= 0) {
    overrides.main_lcore = static_cast<uint32_t>(v);
  }
  std::string workers = absl::GetFlag(FLAGS_workers);
  if (!workers.empty()) {
    std::vector<uint32_t> cores;
    for (absl::string_view part : absl::StrSplit(workers, ',')) {
      uint32_t core;
      if (!absl::SimpleAtoi(part, &core)) {
        return absl::InvalidArgumentError(
            absl::StrCat("command line: --workers: '", part,
                         "' is not a core number; write e.g. --workers=1,2"));
      }
      cores.push_back(core);
    }
    overrides.workers = cores;
  }
  // argv[0] is the program; the rest came after "--": extra EAL arguments.
  for (size_t i = 1; i < positional.size(); ++i) {
    overrides.extra_eal_args.emplace_back(positional[i]);
  }
  return overrides;
}

// The control API's listeners from the flags; nullopt: no control API.
absl::StatusOr<std::optional<ControlServerOptions>> ControlOptionsFromFlags() {
  ControlServerOptions options;
  options.unix_socket = absl::GetFlag(FLAGS_control_socket);
  options.tcp_address = absl::GetFlag(FLAGS_control_tcp);
  options.tls_cert_file = absl::GetFlag(FLAGS_control_tls_cert);
  options.tls_key_file = absl::GetFlag(FLAGS_control_tls_key);
  options.tls_client_ca_file = absl::GetFlag(FLAGS_control_tls_client_ca);
  options.insecure_tcp = absl::GetFlag(FLAGS_control_insecure_tcp);
  options.max_message_bytes = absl::GetFlag(FLAGS_control_max_message_bytes);
  options.max_concurrent_streams = absl::GetFlag(FLAGS_control_max_streams);
  options.memory_quota_mib = absl::GetFlag(FLAGS_control_memory_mb);
  // No listener and no TCP flag either: the operator turned the API off.
  // A TLS flag without a listener still goes through validation, which
  // says it has no effect.
  if (options.unix_socket.empty() && options.tcp_address.empty() &&
      options.tls_cert_file.empty() && options.tls_key_file.empty() &&
      options.tls_client_ca_file.empty() && !options.insecure_tcp) {
    return std::nullopt;
  }
  if (absl::Status status = ValidateControlServerOptions(options);
      !status.ok()) {
    return status;
  }
  return options;
}

// Drains the HPUs' events: logged, and streamed to WatchEvents clients.
void ForwardEvents(Dataplane& dataplane, ControlServer* control,
                   std::vector<Event>& events) {
  events.clear();
  dataplane.DrainEvents(&events);
  if (control != nullptr) control->service().PublishEvents(events);
  for (const Event& e : events) {
    Log(absl::StrFormat("event: hpu %u ectx %u code 0x%08x (%u data bytes)",
                        e.hpu, e.ectx_id, e.code, e.length));
  }
}

// How often health is judged, STATUS= is sent.
constexpr absl::Duration kHealthCheckInterval = absl::Milliseconds(100);
constexpr absl::Duration kStatusInterval = absl::Seconds(5);

// Health for systemd and gRPC health checking (service_monitor.h): READY=1
// once every link is up and every HPU has polled; WATCHDOG=1 while nothing
// is wrong; NOT_SERVING, with the reason logged, while something is.
class HealthReporter {
 public:
  HealthReporter(ControlServer* control, absl::Duration stall_after,
                 SystemdNotifier* notifier)
      : control_(control), monitor_(stall_after), notifier_(notifier) {}

  void Check(const Dataplane& dp, absl::Time now) {
    if (now < next_check_) return;
    next_check_ = now + kHealthCheckInterval;
    StatsSnapshot snapshot = dp.Snapshot(Dataplane::StateCopy::kOmit);
    std::vector<std::string> problems = monitor_.Update(snapshot, now);
    if (!ready_sent_ && monitor_.Ready()) {
      ready_sent_ = true;
      Log("ready: every port's link is up and every HPU polls");
      notifier_->Ready();
    }
    if (ready_sent_ && problems != problems_) {
      if (problems.empty()) {
        Log("health: SERVING again (every HPU makes progress, every link "
            "is up)");
      } else {
        LogError(absl::StrCat("health: NOT_SERVING: ",
                              absl::StrJoin(problems, "; ")));
      }
      if (control_ != nullptr) control_->SetServing(problems.empty());
      problems_ = problems;
    }
    const absl::Duration watchdog = notifier_->watchdog();
    if (ready_sent_ && problems.empty() && watchdog > absl::ZeroDuration() &&
        now >= next_watchdog_) {
      notifier_->Watchdog();
      next_watchdog_ = now + watchdog / 4;
    }
    if (notifier_->enabled() && now >= next_status_) {
      if (status_time_ != absl::InfinitePast()) {
        notifier_->Status(StatusLine(snapshot, status_snapshot_,
                                     absl::ToDoubleSeconds(now - status_time_),
                                     problems));
      }
      status_snapshot_ = std::move(snapshot);
      status_time_ = now;
      next_status_ = now + kStatusInterval;
    }
  }

 private:
  ControlServer* control_;
  ServiceMonitor monitor_;
  SystemdNotifier* notifier_;
  bool ready_sent_ = false;
  std::vector<std::string> problems_;
  absl::Time next_check_ = absl::InfinitePast();
  absl::Time next_watchdog_ = absl::InfinitePast();
  absl::Time next_status_ = absl::InfinitePast();
  absl::Time status_time_ = absl::InfinitePast();
  StatsSnapshot status_snapshot_;
};

// How often the main thread returns free heap pages to the system.
constexpr absl::Duration kHeapTrimInterval = absl::Seconds(5);

// Serves from `start` until a stop signal or runtime.duration_s, printing
// the counters every runtime.stats_interval_ms and on SIGUSR1, forwarding
// the dataplane's events to `control` (may be null), reporting health and
// calling `reload` on SIGHUP.
void ServeUntilStopped(Dataplane& dp, ControlServer* control,
                       const v1::Config& config, absl::Time start,
                       std::vector<Event>& events, HealthReporter& health,
                       const std::function<void()>& reload) {
  const absl::Duration duration = absl::Seconds(config.runtime().duration_s());
  const absl::Duration interval =
      absl::Milliseconds(config.runtime().stats_interval_ms());
  absl::Time next_stats = start + interval;
  StatsSnapshot previous = dp.Snapshot();
  absl::Time previous_time = start;
  absl::Time next_trim = start + kHeapTrimInterval;
  while (g_signal.load() == 0) {
    absl::SleepFor(absl::Milliseconds(50));
    absl::Time now = absl::Now();
    if (now >= next_trim) {
      // glibc keeps what the control threads freed in its arenas: after a
      // burst of large or many concurrent requests (gRPC over TLS holds
      // several copies of each message) RSS would stay at the peak for good.
      // Give the free pages back (tests/integration/grpc_abuse.sh).
      malloc_trim(0);
      next_trim = now + kHeapTrimInterval;
    }
    ForwardEvents(dp, control, events);
    health.Check(dp, now);
    if (g_reload.exchange(false)) reload();
    if (duration > absl::ZeroDuration() && now - start >= duration) break;
    const bool on_demand = g_print_stats.exchange(false);
    if (on_demand || (interval > absl::ZeroDuration() && now >= next_stats)) {
      StatsSnapshot snapshot = dp.Snapshot();
      double elapsed = absl::ToDoubleSeconds(now - previous_time);
      std::printf("--- %.1f s\n%s", absl::ToDoubleSeconds(now - start),
                  FormatStatsText(snapshot, &previous, elapsed).c_str());
      std::fflush(stdout);
      previous = std::move(snapshot);
      previous_time = now;
      if (!on_demand) next_stats += interval;
      if (next_stats < now) next_stats = now + interval;
    }
  }
}

// glibc gives each thread that allocates concurrently an arena of its own
// (up to 8 per core) and keeps what is freed in it: gRPC's many short-lived
// handler and executor threads left spinnicd's heap 150 MB above its level
// after three rounds of tests/integration/grpc_abuse.sh (120 -> 274 MB RSS;
// more on machines with more cores), which malloc_trim does not give back.
// With two arenas (the main thread's and one shared by the rest) the same
// three rounds went 64 -> 84 MB. Only the control plane allocates with malloc:
// the HPUs never do per packet, so the lock the threads now share is off the
// hot path.
constexpr int kMallocArenas = 2;

int Run(int argc, char** argv) {
  // Before any thread exists (the EAL's, gRPC's): arenas are made on demand.
  mallopt(M_ARENA_MAX, kMallocArenas);
  // Before anything else, so that a stop request during start-up is honoured
  // once the dataplane runs instead of killing the process half set up.
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGUSR1, OnPrintStats);
  // SIGHUP's default would end the daemon: a reload asked for during
  // start-up waits until it serves.
  std::signal(SIGHUP, OnReload);
  absl::SetProgramUsageMessage(
      "spinnicd [--config FILE] [flags] [-- extra EAL arguments]\n"
      "The spinnic software SmartNIC dataplane.");
  absl::FlagsUsageConfig usage_config;
  usage_config.version_string = [] {
    return absl::StrCat("spinnicd ", SPINNIC_VERSION, "\n", rte_version(),
                        "; assertions ",
#ifdef NDEBUG
                        "off",
#else
                        "on",
#endif
                        "\n");
  };
  absl::SetFlagsUsageConfig(usage_config);
  if (std::optional<int> exit_code = HelpRequested(argc, argv)) {
    return *exit_code;
  }
  std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  if (absl::GetFlag(FLAGS_list_handlers)) {
    ListHandlers();
    return 0;
  }
  absl::StatusOr<ConfigOverrides> overrides = OverridesFromFlags(positional);
  if (!overrides.ok()) {
    SPINNIC_LOG(ERR, control, "%s",
                std::string(overrides.status().message()).c_str());
    return kExitBadConfig;
  }
  absl::StatusOr<std::optional<ControlServerOptions>> control_options =
      ControlOptionsFromFlags();
  if (!control_options.ok()) {
    SPINNIC_LOG(ERR, control, "%s",
                std::string(control_options.status().message()).c_str());
    return kExitBadConfig;
  }
  const std::string metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  if (!metrics_listen.empty()) {
    const bool control_tls = !absl::GetFlag(FLAGS_control_tls_cert).empty() &&
                             !absl::GetFlag(FLAGS_control_tls_key).empty();
    if (absl::Status status =
            ValidateMetricsListen(metrics_listen, control_tls);
        !status.ok()) {
      SPINNIC_LOG(ERR, control, "%s", std::string(status.message()).c_str());
      return kExitBadConfig;
    }
  }
  if (absl::GetFlag(FLAGS_hpu_stall_ms) < 0) {
    SPINNIC_LOG(ERR, control,
                "--hpu_stall_ms: %lld is negative; write a time in "
                "milliseconds, or 0 for the default",
                static_cast<long long>(absl::GetFlag(FLAGS_hpu_stall_ms)));
    return kExitBadConfig;
  }
  std::string config_path = absl::GetFlag(FLAGS_config);
  absl::StatusOr<v1::Config> config = LoadConfig(config_path, *overrides);
  if (!config.ok()) {
    SPINNIC_LOG(ERR, control, "%s",
                std::string(config.status().message()).c_str());
    return kExitBadConfig;
  }
  absl::StatusOr<DataplaneConfig> dataplane_config = ToDataplaneConfig(*config);
  if (!dataplane_config.ok()) {
    SPINNIC_LOG(ERR, control, "%s",
                std::string(dataplane_config.status().message()).c_str());
    return kExitBadConfig;
  }
  if (absl::GetFlag(FLAGS_check_config)) {
    std::printf("%s: config ok\n",
                config_path.empty() ? "built-in default" : config_path.c_str());
    return 0;
  }

  // A memif server socket left by a killed run would stop its port from
  // starting: removed when nothing listens on it (control/memif_socket.h).
  std::vector<std::string> removed;
  if (absl::Status status =
          RemoveStaleMemifSockets(MemifServerSockets(*config), &removed);
      !status.ok()) {
    LogError(status.message());
    return kExitFailure;
  }
  for (const std::string& path : removed) {
    Log(absl::StrCat("removed stale memif socket ", path,
                     " (left by an earlier run; nothing listened on it)"));
  }

  std::vector<std::string> eal_args = BuildEalArgs(*config);
  Log(absl::StrCat("EAL arguments: ", absl::StrJoin(eal_args, " ")));
  if (absl::Status status = InitEal(eal_args); !status.ok()) {
    LogError(status.message());
    return kExitFailure;
  }
  // Lets operators capture any port with dpdk-dumpcap / dpdk-pdump. Needs
  // the EAL's multi-process channel and shared (hugepage) memory: without
  // them capture is unavailable, which is worth a line but not a failure.
  if (rte_pdump_init() != 0) {
    Log("packet capture (pdump) unavailable: run with a --file-prefix and "
        "without --no-shconf/--in-memory to use dpdk-dumpcap");
  }
  int exit_code = 0;
  {
    absl::StatusOr<std::unique_ptr<Dataplane>> dataplane =
        Dataplane::Create(*dataplane_config);
    if (!dataplane.ok()) {
      LogError(dataplane.status().message());
      rte_eal_cleanup();
      return kExitFailure;
    }
    Dataplane& dp = **dataplane;
    AttachTelemetry(&dp);
    std::unique_ptr<ControlServer> control;
    if (control_options->has_value()) {
      absl::StatusOr<std::unique_ptr<ControlServer>> started =
          ControlServer::Start(**control_options, *config, &dp);
      if (started.ok()) {
        control = *std::move(started);
        Log(absl::StrCat("control API on ", control->Describe()));
      } else {
        // Stops at once below: the dataplane still shuts down cleanly.
        LogError(started.status().message());
        exit_code = kExitFailure;
      }
    }
    std::unique_ptr<MetricsExporter> metrics;
    if (!metrics_listen.empty() && exit_code == 0) {
      absl::StatusOr<std::unique_ptr<MetricsExporter>> started =
          MetricsExporter::Start(metrics_listen, &dp);
      if (started.ok()) {
        metrics = *std::move(started);
        Log(absl::StrCat("metrics on http://", metrics_listen, "/metrics"));
      } else {
        LogError(started.status().message());
        exit_code = kExitFailure;
      }
    }
    // The final counters' rates are over the HPUs' whole run: from here to
    // the end of Stop.
    const absl::Time hpus_started = absl::Now();
    if (absl::Status status = dp.Start(); !status.ok()) {
      LogError(status.message());
      rte_eal_cleanup();
      return kExitFailure;
    }
    for (size_t p = 0; exit_code == 0 && p < dp.port_count(); ++p) {
      Log(absl::StrCat("port ", dp.port(p).name(), ": ethdev ",
                       dp.port(p).port_id(), ", ", dp.port(p).queues(),
                       " queue(s), link ",
                       dp.port(p).link_up() ? "up" : "down"));
    }
    if (exit_code == 0) {
      Log(absl::StrCat(
          "running with ", dp.hpu_count(), " HPU(s)",
          config->runtime().duration_s() != 0
              ? absl::StrCat(" for ", config->runtime().duration_s(), " s")
              : "",
          "; Ctrl-C to stop"));
    }

    const absl::Time start = absl::Now();
    std::vector<Event> events;
    SystemdNotifier notifier;
    absl::Duration stall_after =
        absl::Milliseconds(absl::GetFlag(FLAGS_hpu_stall_ms));
    if (stall_after == absl::ZeroDuration()) {
      stall_after = notifier.watchdog() > absl::ZeroDuration()
                        ? notifier.watchdog() / 2
                        : absl::Seconds(2);
    }
    if (notifier.enabled()) {
      Log(absl::StrCat("systemd notification on; watchdog ",
                       notifier.watchdog() > absl::ZeroDuration()
                           ? absl::FormatDuration(notifier.watchdog())
                           : "off",
                       ", an HPU is stalled after ",
                       absl::FormatDuration(stall_after)));
    }
    HealthReporter health(control.get(), stall_after, &notifier);
    // Reload applies through the control API's service; without a listener
    // spinnicd keeps one of its own for it.
    std::unique_ptr<SpinnicService> reload_service;
    SpinnicService* reloader = nullptr;
    if (control != nullptr) {
      reloader = &control->service();
    } else {
      reload_service = std::make_unique<SpinnicService>(*config, &dp);
      reloader = reload_service.get();
    }
    reloader->set_config_overrides(*overrides);
    if (exit_code == 0) {
      ServeUntilStopped(dp, control.get(), *config, start, events, health,
                        [&] { Reload(*reloader, config_path); });
    }
    notifier.Stopping();
    if (int signal = g_signal.load(); signal != 0) {
      Log(absl::StrCat("signal ", signal, ": stopping"));
    }
    metrics.reset();
    if (control != nullptr) control->Shutdown();
    AttachTelemetry(nullptr);
    dp.Stop();
    const double run_s = absl::ToDoubleSeconds(absl::Now() - hpus_started);
    ForwardEvents(dp, nullptr, events);
    // Read with the HPUs stopped, so that the counters add up.
    StatsSnapshot final_stats = dp.Snapshot();
    std::printf("--- final counters after %.3f s\n%s", run_s,
                FormatStatsText(final_stats, nullptr, run_s).c_str());
    std::fflush(stdout);
    std::string json_path = absl::GetFlag(FLAGS_stats_json);
    if (!json_path.empty()) {
      absl::StatusOr<std::string> text = FormatStatsJson(final_stats);
      std::ofstream json(json_path);
      if (text.ok()) json << *text;
      if (!text.ok() || !json) {
        LogError(
            absl::StrCat("cannot write ", json_path, ": ",
                         text.ok() ? "write failed" : text.status().message()));
        exit_code = kExitFailure;
      }
    }
  }
  rte_pdump_uninit();
  rte_eal_cleanup();
  return exit_code;
}

}  // namespace
}  // namespace spinnic

int main(int argc, char** argv) { return spinnic::Run(argc, argv); }
