// spinctl capture: frames of one port at one stage from a running spinnicd
// into a pcapng file (docs/capture.md). The filter runs on the HPUs; this
// side writes what the stream brings, block by block, flushed after every
// batch, so the file is whole whenever the capture ends (count, duration,
// Ctrl-C, or spinctl killed between batches).
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "control/spinctl/command.h"
#include "control/spinctl/pcapng_writer.h"

namespace spinnic::spinctl {
namespace {

constexpr uint64_t kMaxDurationS = 7 * 24 * 3600;

std::atomic<bool> interrupted{false};

void OnInterrupt(int) { interrupted.store(true); }

absl::StatusOr<v1::CaptureStage> ParseStage(const std::string& text) {
  if (text == "rx") return v1::CAPTURE_STAGE_RX;
  if (text == "tx") return v1::CAPTURE_STAGE_TX;
  if (text == "drop") return v1::CAPTURE_STAGE_DROP;
  return absl::InvalidArgumentError(absl::StrCat(
      "--stage \"", text, "\" is not a stage; write rx, tx or drop"));
}

const char* StageName(v1::CaptureStage stage) {
  switch (stage) {
    case v1::CAPTURE_STAGE_RX:
      return "rx";
    case v1::CAPTURE_STAGE_TX:
      return "tx";
    case v1::CAPTURE_STAGE_DROP:
      return "drop";
    default:
      return "?";
  }
}

bool WriteAll(std::FILE* file, const std::string& bytes) {
  return std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
}

int RunCapture(Env& env, const ParsedArgs& args) {
  for (absl::string_view required : {"port", "stage", "out"}) {
    if (!args.Has(required)) {
      return env.UsageError(absl::StrCat(
          "capture needs --", required,
          required == "port"    ? " NAME (spinctl info lists the ports)"
          : required == "stage" ? " rx|tx|drop"
                                : " FILE.pcapng (- for stdout)"));
    }
  }
  absl::StatusOr<v1::CaptureStage> stage = ParseStage(args.String("stage"));
  if (!stage.ok()) return env.UsageError(stage.status());
  v1::CaptureRequest request;
  request.set_port(args.String("port"));
  request.set_stage(*stage);
  request.set_filter(args.String("filter"));
  request.set_snaplen(static_cast<uint32_t>(args.Uint("snaplen")));
  request.set_count(args.Uint("count"));
  request.set_duration_ms(static_cast<uint32_t>(args.Uint("duration") * 1000));
  request.set_buffer_frames(static_cast<uint32_t>(args.Uint("buffer")));

  const std::string path = args.String("out");
  const bool to_stdout = path == "-";
  std::FILE* file = to_stdout ? stdout : std::fopen(path.c_str(), "wb");
  if (file == nullptr) {
    return env.UsageError(
        absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
  }
  auto close_file = [&] {
    if (!to_stdout) std::fclose(file);
  };
  ControlClient* client = env.Client();
  if (client == nullptr) {
    close_file();
    if (!to_stdout) ::unlink(path.c_str());
    return env.connect_exit();
  }

  // Ctrl-C (or SIGTERM) cancels the call; the stream then ends after the
  // batch being written, and the file stays whole.
  StreamCanceller canceller;
  struct sigaction action {};
  action.sa_handler = OnInterrupt;
  sigemptyset(&action.sa_mask);
  struct sigaction old_int {
  }, old_term{};
  sigaction(SIGINT, &action, &old_int);
  sigaction(SIGTERM, &action, &old_term);
  std::atomic<bool> done{false};
  std::thread watcher([&] {
    while (!done.load()) {
      if (interrupted.load()) {
        canceller.Cancel();
        return;
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
  });

  v1::CaptureSummary summary;
  v1::CaptureStarted started;
  uint64_t written = 0;
  bool write_failed = false;
  absl::Status status = client->Capture(
      request,
      [&](const v1::CaptureReply& reply) {
        std::string bytes;
        if (reply.has_started()) {
          started = reply.started();
          bytes = PcapngSectionHeader(
              absl::StrCat("spinctl capture (spinnic ", SPINNIC_VERSION, ")"));
          bytes += PcapngInterface(
              started.port(),
              absl::StrCat("spinnic port ", started.port(), ", stage ",
                           StageName(started.stage())),
              started.snaplen(), started.filter());
          std::fprintf(
              stderr, "capturing %s at %s%s%s%s, snaplen %u; Ctrl-C stops\n",
              started.port().c_str(), StageName(started.stage()),
              started.filter().empty() ? "" : " (filter \"",
              started.filter().c_str(), started.filter().empty() ? "" : "\")",
              started.snaplen());
        }
        for (const v1::CapturedFrame& frame : reply.frames()) {
          bytes += PcapngPacket(
              0, frame.timestamp_ns(), frame.original_length(),
              std::span<const uint8_t>(
                  reinterpret_cast<const uint8_t*>(frame.data().data()),
                  frame.data().size()),
              frame.drop_reason());
        }
        written += reply.frames_size();
        if (reply.has_summary()) summary = reply.summary();
        if (!WriteAll(file, bytes) || std::fflush(file) != 0) {
          write_failed = true;
          return false;
        }
        return true;
      },
      &canceller);
  done.store(true);
  watcher.join();
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  const int close_error = to_stdout ? 0 : std::fclose(file);
  if (!status.ok()) {
    // Refused before anything was captured: leave no empty file behind.
    if (!to_stdout && started.port().empty()) ::unlink(path.c_str());
    return env.ServerError(status);
  }
  if (write_failed || close_error != 0) {
    std::fprintf(stderr, "spinctl: writing %s failed: %s\n", path.c_str(),
                 std::strerror(errno));
    return kExitServerError;
  }
  summary.set_captured(written);
  if (canceller.cancelled() && summary.ended_by().empty()) {
    summary.set_ended_by("interrupted");
  }
  if (env.json() && !to_stdout) {
    env.PrintJson(summary);
  } else {
    std::fprintf(stderr, "%llu frames written to %s (%s)\n",
                 static_cast<unsigned long long>(written), path.c_str(),
                 summary.ended_by().c_str());
  }
  if (summary.not_captured() != 0) {
    std::fprintf(stderr,
                 "%llu frames not captured: ring full (the buffer of %u "
                 "frames filled faster than the stream drained it; narrow "
                 "the filter, lower --snaplen or raise --buffer)\n",
                 static_cast<unsigned long long>(summary.not_captured()),
                 started.buffer_frames());
  }
  return kExitOk;
}

}  // namespace

std::vector<Command> CaptureCommands() {
  return {
      {"capture",
       "",
       0,
       0,
       "capture a port's frames at a stage into a pcapng file",
       {
           {"port", FlagType::kString, "NAME", "the port (spinctl info)"},
           {"stage", FlagType::kString, "rx|tx|drop",
            "rx: as received; tx: as sent; drop: frames the HPU drops, with "
            "the reason as the packet comment"},
           {"filter", FlagType::kString, "EXPR",
            "tcpdump filter expression (man pcap-filter), run on the HPUs"},
           {"out", FlagType::kString, "FILE", "the pcapng file; - for stdout"},
           {"count", FlagType::kUint, "N", "stop after N frames"},
           {"duration", FlagType::kUint, "S", "stop after S seconds",
            kMaxDurationS},
           {"snaplen", FlagType::kUint, "BYTES",
            "bytes kept per frame (default: the port's largest frame)", 65535},
           {"buffer", FlagType::kUint, "N",
            "frames buffered in spinnicd between the HPUs and the stream "
            "(default 1024)",
            65536},
       },
       "Without --count or --duration the capture runs until Ctrl-C. Frames\n"
       "that find the buffer full are counted and reported at the end, never\n"
       "waited for. The file opens in Wireshark and tcpdump -r.\n",
       RunCapture},
  };
}

}  // namespace spinnic::spinctl
