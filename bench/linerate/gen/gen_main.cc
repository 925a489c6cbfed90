// spinnic-gen: a DPDK traffic generator for spinnic's line-rate benchmarks.
// Sends probe frames (probe.h) out of one port at a target rate or flat
// out, receives them back on the same or another port and prints one JSON
// object on stdout (report.h; fields in bench/linerate/README.md).
//
//   spinnic-gen [EAL arguments] -- [--tx_port N] [--rx_port N] [--size B]
//       [--rate_pps N] [--duration_s S] [--warmup_s S] [--flows N] ...
//
// stdout carries exactly that JSON object, whatever happens after the
// arguments were read (its "error" is null exactly when the exit status is
// 0); the EAL's and the drivers' log lines, and every message, go to
// stderr. --help prints the flags.
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_log.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "bench/linerate/gen/generator.h"
#include "bench/linerate/gen/options.h"
#include "bench/linerate/gen/report.h"

namespace {

using spinnic::gen::FormatJson;
using spinnic::gen::Generator;
using spinnic::gen::Options;
using spinnic::gen::RunResult;

constexpr int kExitOk = 0;
constexpr int kExitRuntime = 1;
constexpr int kExitUsage = 2;

// The real stdout, kept for the JSON; fd 1 itself points at stderr so that
// whatever else prints to stdout (drivers do) cannot corrupt the object.
FILE* g_json_out = nullptr;

void ReserveStdout() {
  std::fflush(stdout);
  const int fd = dup(STDOUT_FILENO);
  if (fd >= 0) g_json_out = fdopen(fd, "w");
  if (g_json_out == nullptr)
    g_json_out = stdout;  // could not: share it
  else
    dup2(STDERR_FILENO, STDOUT_FILENO);
}

int Finish(RunResult& result, const Options& options, int code) {
  // The run as asked for (Run fills the same; a run that never started
  // reports its arguments with zero counts).
  result.size = options.size;
  result.flows = options.flows;
  result.rate_pps = options.rate_pps;
  result.tx_port = options.tx_port;
  result.rx_port = options.rx_port;
  if (result.error) {
    std::fprintf(stderr, "spinnic-gen: %s\n", result.error->c_str());
  }
  std::fprintf(g_json_out, "%s\n", FormatJson(result).c_str());
  std::fflush(g_json_out);
  return code;
}

// Exit status for a setup error: the arguments can fix INVALID_ARGUMENT.
int SetupExitCode(const absl::Status& status) {
  return status.code() == absl::StatusCode::kInvalidArgument ? kExitUsage
                                                             : kExitRuntime;
}

void OnSignal(int signal) { Generator::RequestStop(signal); }

}  // namespace

int main(int argc, char** argv) {
  ReserveStdout();

  // EAL arguments, then ours after the first "--".
  int eal_argc = argc;
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--") {
      eal_argc = i;
      break;
    }
  }
  std::vector<const char*> own(argv + std::min(eal_argc + 1, argc),
                               argv + argc);
  // Keep an unparsed RunResult on the heap: it holds a 30 KiB histogram.
  auto result = std::make_unique<RunResult>();
  absl::StatusOr<Options> options = spinnic::gen::ParseOptions(own);
  if (!options.ok()) {
    result->error = std::string(options.status().message());
    return Finish(*result, Options(), kExitUsage);
  }
  if (options->help) {
    std::fprintf(g_json_out, "%s", spinnic::gen::Usage().c_str());
    return kExitOk;
  }

  rte_openlog_stream(stderr);
  std::vector<char*> eal_args(argv, argv + eal_argc);
  eal_args.push_back(nullptr);
  if (rte_eal_init(eal_argc, eal_args.data()) < 0) {
    result->error = absl::StrCat(
        "EAL initialisation failed (", rte_strerror(rte_errno),
        "): check the EAL arguments before `--` (-l/--lcores must name cores "
        "that exist: this machine has ",
        sysconf(_SC_NPROCESSORS_ONLN),
        " online; each --vdev must be valid; two DPDK processes need "
        "different --file-prefix)");
    return Finish(*result, *options, kExitUsage);
  }
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);

  int code = kExitOk;
  {
    absl::StatusOr<std::unique_ptr<Generator>> gen =
        Generator::Create(*options);
    if (!gen.ok()) {
      result->error = std::string(gen.status().message());
      code = SetupExitCode(gen.status());
    } else {
      (*gen)->Run(result.get());
      if (result->error) code = kExitRuntime;
    }
  }  // ports closed here
  rte_eal_cleanup();
  return Finish(*result, *options, code);
}
