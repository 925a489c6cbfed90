#include "bench/linerate/gen/options.h"

#include <cmath>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "bench/linerate/gen/probe.h"

namespace spinnic::gen {
namespace {

absl::Status Bad(absl::string_view flag, absl::string_view value,
                 absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, "=", value, ": ", what));
}

template <typename T>
absl::Status ParseUint(absl::string_view flag, absl::string_view value,
                       uint64_t min, uint64_t max, T* out) {
  uint64_t v = 0;
  if (!absl::SimpleAtoi(value, &v) || value.empty() || value[0] == '-' ||
      value[0] == '+') {
    return Bad(
        flag, value,
        absl::StrCat("not a whole number; write one in ", min, "..", max));
  }
  if (v < min || v > max) {
    return Bad(flag, value,
               absl::StrCat("out of range; write ", min, "..", max));
  }
  *out = static_cast<T>(v);
  return absl::OkStatus();
}

absl::Status ParseSeconds(absl::string_view flag, absl::string_view value,
                          double min, double max, double* out) {
  double v = 0;
  if (!absl::SimpleAtod(value, &v) || !std::isfinite(v)) {
    return Bad(flag, value,
               absl::StrCat("not a number of seconds; write e.g. 10 or 0.5 (",
                            min, "..", max, ")"));
  }
  if (v < min || v > max) {
    return Bad(
        flag, value,
        absl::StrCat("out of range; write ", min, "..", max, " seconds"));
  }
  *out = v;
  return absl::OkStatus();
}

constexpr const char* kFlagNames[] = {
    "tx_port",  "rx_port",  "size",           "rate_pps",       "duration_s",
    "warmup_s", "flows",    "src_port",       "dst_port",       "mtu",
    "burst",    "drain_ms", "link_timeout_s", "peer_timeout_s", "threads",
    "help"};

}  // namespace

const char* ThreadsName(Threads threads) {
  switch (threads) {
    case Threads::kAuto:
      return "auto";
    case Threads::kSingle:
      return "single";
    case Threads::kSplit:
      return "split";
  }
  return "?";
}

absl::StatusOr<Options> ParseOptions(absl::Span<const char* const> args) {
  Options o;
  bool rx_port_given = false;
  for (size_t i = 0; i < args.size(); ++i) {
    absl::string_view arg = args[i] == nullptr ? "" : args[i];
    if (arg == "--help" || arg == "-h") {
      o.help = true;
      continue;
    }
    if (arg.substr(0, 2) != "--" || arg.size() == 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unexpected argument '", arg,
          "': spinnic-gen takes --flag=value flags after the EAL's `--` "
          "(see --help)"));
    }
    arg.remove_prefix(2);
    absl::string_view name = arg;
    std::optional<absl::string_view> value;
    if (const size_t eq = arg.find('='); eq != absl::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    }
    if (name == "help") {
      o.help = true;
      continue;
    }
    bool known = false;
    for (const char* n : kFlagNames) known |= name == n;
    if (!known) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag --", name, "; the flags are --",
                       absl::StrJoin(kFlagNames, ", --"), " (see --help)"));
    }
    if (!value) {
      if (i + 1 >= args.size() || args[i + 1] == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", name, " needs a value: --", name, "=VALUE"));
      }
      value = args[++i];
    }
    const absl::string_view v = *value;
    absl::Status s;
    if (name == "tx_port") {
      s = ParseUint(name, v, 0, 1023, &o.tx_port);
    } else if (name == "rx_port") {
      s = ParseUint(name, v, 0, 1023, &o.rx_port);
      rx_port_given = true;
    } else if (name == "size") {
      s = ParseUint(name, v, kMinFrameBytes, kMaxFrameBytes, &o.size);
      if (!s.ok()) {
        s = Bad(name, v,
                absl::StrCat("write a frame size in bytes without FCS, ",
                             kMinFrameBytes, "..", kMaxFrameBytes,
                             " (64 B is the smallest frame that holds the "
                             "IPv4/UDP headers and the probe)"));
      }
    } else if (name == "rate_pps") {
      s = ParseUint(name, v, 0, 1'000'000'000'000, &o.rate_pps);
    } else if (name == "duration_s") {
      s = ParseSeconds(name, v, 0.001, 86400, &o.duration_s);
    } else if (name == "warmup_s") {
      s = ParseSeconds(name, v, 0, 3600, &o.warmup_s);
    } else if (name == "flows") {
      s = ParseUint(name, v, 1, kMaxFlows, &o.flows);
    } else if (name == "src_port") {
      s = ParseUint(name, v, 1, 65535, &o.src_port);
    } else if (name == "dst_port") {
      s = ParseUint(name, v, 1, 65535, &o.dst_port);
    } else if (name == "mtu") {
      s = ParseUint(name, v, 0, kMaxFrameBytes, &o.mtu);
      if (s.ok() && o.mtu != 0 && o.mtu < 68) {
        s = Bad(name, v,
                "an IPv4 MTU is at least 68; write 0 for the "
                "device default MTU");
      }
    } else if (name == "burst") {
      s = ParseUint(name, v, 1, kMaxBurst, &o.burst);
    } else if (name == "drain_ms") {
      s = ParseUint(name, v, 0, 60'000, &o.drain_ms);
    } else if (name == "link_timeout_s") {
      s = ParseSeconds(name, v, 0, 600, &o.link_timeout_s);
    } else if (name == "peer_timeout_s") {
      s = ParseSeconds(name, v, 0.01, 600, &o.peer_timeout_s);
    } else if (name == "threads") {
      if (v == "auto") {
        o.threads = Threads::kAuto;
      } else if (v == "single") {
        o.threads = Threads::kSingle;
      } else if (v == "split") {
        o.threads = Threads::kSplit;
      } else {
        s = Bad(name, v, "write auto, single or split");
      }
    }
    if (!s.ok()) return s;
  }
  if (!rx_port_given) o.rx_port = o.tx_port;
  if (uint32_t{o.src_port} + o.flows - 1 > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--src_port=", o.src_port, " with --flows=", o.flows,
                     " runs past UDP port 65535; lower --src_port to at most ",
                     65536 - o.flows));
  }
  if (o.mtu != 0 && o.size > o.mtu + kEthHeaderBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("--size=", o.size, " does not fit --mtu=", o.mtu,
                     " (at most ", o.mtu + kEthHeaderBytes,
                     " B with the 14 B Ethernet header); raise "
                     "--mtu to ",
                     o.size - kEthHeaderBytes, " or lower --size"));
  }
  return o;
}

std::string Usage() {
  return R"(usage: spinnic-gen [EAL arguments] -- [flags]

Sends probe frames (Ethernet/IPv4/UDP with a sequence number and a TX TSC in
the payload) out of --tx_port, receives them on --rx_port, and prints one
JSON object on stdout: loss, reordering, duplicates, rates, round-trip
latency percentiles. Logs and messages go to stderr.

  --tx_port=N         ethdev port to send on (default 0)
  --rx_port=N         ethdev port to receive on (default: --tx_port)
  --size=BYTES        frame size without FCS, 64..9000 (default 64); must fit
                      the ports' MTU + 14
  --rate_pps=N        frames per second, paced by the TSC; 0 = as fast as
                      the TX queue takes them (default 0)
  --duration_s=S      measured time (default 10)
  --warmup_s=S        traffic before the measurement, not counted (default 1)
  --flows=N           UDP source ports --src_port .. +N-1, one sequence space
                      each, so that RSS spreads them (1..4096, default 1)
  --src_port=P        UDP source port of flow 0 (default 10000)
  --dst_port=P        UDP destination port (default 9)
  --mtu=N             the ports' MTU, set when they are configured (default
                      0: the device default, 1500 for most)
  --burst=N           TX/RX burst size (1..256, default 32)
  --drain_ms=MS       wait after the last frame for those in flight (200)
  --link_timeout_s=S  wait at most this for both links to come up (10)
  --peer_timeout_s=S  stop with an error when nothing arrives for this long
                      after something did (2; at least 3 frame intervals)
  --threads=MODE      auto | single (one loop on the main lcore) | split
                      (TX on a worker lcore, RX on the main lcore); auto is
                      split with 2+ EAL lcores (default auto)

Exit status: 0 measured; 1 runtime failure (a port did not come up, the
peer went away, interrupted: partial results in the JSON); 2 bad arguments
or an impossible setup (size above the MTU, no such port, too few lcores).
)";
}

}  // namespace spinnic::gen
