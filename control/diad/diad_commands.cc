// spinctl peers, peer-add, peer-remove, remote-write, remote-read,
// stream-send: the DiAD transport (docs/diad.md).
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "control/spinctl/command.h"
#include "control/spinctl/table.h"

namespace spinnic::spinctl {
namespace {

std::string Micros(uint64_t ns) {
  return absl::StrFormat("%.1f us", static_cast<double>(ns) / 1e3);
}

int RunPeers(Env& env, const ParsedArgs&) {
  ControlClient* client = env.Client();
  if (client == nullptr) return env.connect_exit();
  absl::StatusOr<v1::ListPeersResponse> peers = client->ListPeers();
  if (!peers.ok()) return env.ServerError(peers.status());
  if (env.json()) {
    env.PrintJson(*peers);
    return kExitOk;
  }
  if (peers->peers().empty()) {
    std::printf("no peers\n");
    return kExitOk;
  }
  Table table({"NAME",        "NODE",       "MAC",       "SLOT",
               "STATE",       "CH_DOWN",    "IN_FLIGHT", "TX_PACKETS",
               "TX_BYTES",    "RX_PACKETS", "RX_BYTES",  "RETRANS",
               "DOWN_EVENTS", "RESETS",     "OPS_OK",    "OPS_FAILED",
               "RECOVERY",    "SRTT_US",    "RTO_US",    "CWND",
               "CC_RTT_US",   "DEC_DELAY",  "DEC_ECN",   "DEC_RTO",
               "CE_RX",       "ECHO_RX"});
  for (const v1::PeerStatus& p : peers->peers()) {
    table.AddRow(
        {p.name(),
         p.node(),
         p.mac(),
         absl::StrCat(p.slot()),
         p.up() ? "up" : "down",
         absl::StrCat(p.channels_down()),
         absl::StrCat(p.in_flight_packets()),
         absl::StrCat(p.tx_packets()),
         absl::StrCat(p.tx_bytes()),
         absl::StrCat(p.rx_packets()),
         absl::StrCat(p.rx_bytes()),
         absl::StrCat(p.retransmits()),
         absl::StrCat(p.down_events()),
         absl::StrCat(p.resets()),
         absl::StrCat(p.ops_completed()),
         absl::StrCat(p.ops_failed()),
         p.recovery() == v1::DiadPeer::SELECTIVE ? "selective" : "go_back_n",
         absl::StrFormat("%.1f", p.srtt_ns() / 1e3),
         absl::StrFormat("%.1f", p.rto_ns() / 1e3),
         absl::StrFormat("%.2f", p.cc_window()),
         absl::StrFormat("%.1f", p.cc_rtt_ns() / 1e3),
         absl::StrCat(p.cc_delay_decreases()),
         absl::StrCat(p.cc_ecn_decreases()),
         absl::StrCat(p.cc_timeout_decreases()),
         absl::StrCat(p.ce_marks_received()),
         absl::StrCat(p.ecn_echoes_received())});
  }
  table.Print(stdout);
  return kExitOk;
}

int RunPeerAdd(Env& env, const ParsedArgs& args) {
  v1::DiadPeer peer;
  peer.set_name(args.positional[0]);
  peer.set_node(args.positional[1]);
  peer.set_mac(args.positional[2]);
  if (args.Has("recovery")) {
    const std::string& recovery = args.String("recovery");
    if (recovery == "selective") {
      peer.set_recovery(v1::DiadPeer::SELECTIVE);
    } else if (recovery != "go_back_n") {
      return env.UsageError(absl::StrCat("--recovery '", recovery,
                                         "': write go_back_n or selective"));
    }
  }
  ControlClient* client = env.Client();
  if (client == nullptr) return env.connect_exit();
  absl::StatusOr<uint32_t> slot = client->AddPeer(peer);
  if (!slot.ok()) return env.ServerError(slot.status());
  if (env.json()) {
    v1::AddPeerResponse response;
    response.set_slot(*slot);
    env.PrintJson(response);
  } else {
    std::printf("added peer %s (slot %u)\n", peer.name().c_str(), *slot);
  }
  return kExitOk;
}

int RunPeerRemove(Env& env, const ParsedArgs& args) {
  ControlClient* client = env.Client();
  if (client == nullptr) return env.connect_exit();
  if (absl::Status s = client->RemovePeer(args.positional[0]); !s.ok()) {
    return env.ServerError(s);
  }
  if (env.json()) {
    env.PrintJson(v1::RemovePeerResponse());
  } else {
    std::printf("removed peer %s\n", args.positional[0].c_str());
  }
  return kExitOk;
}

// PEER RKEY ADDRESS, the start of remote-write's and remote-read's
// arguments.
struct Target {
  std::string peer;
  uint32_t rkey = 0;
  uint64_t address = 0;
};

absl::StatusOr<Target> ParseTarget(const ParsedArgs& args) {
  Target target;
  target.peer = args.positional[0];
  absl::StatusOr<uint64_t> rkey =
      ParseUint("RKEY", args.positional[1], UINT32_MAX);
  if (!rkey.ok()) return rkey.status();
  target.rkey = static_cast<uint32_t>(*rkey);
  absl::StatusOr<uint64_t> address = ParseUint("ADDRESS", args.positional[2]);
  if (!address.ok()) return address.status();
  target.address = *address;
  return target;
}

// The bytes of exactly one of --data TEXT, --hex HEX, --file PATH (the
// flags `sources` offers).
absl::StatusOr<std::string> DataFlag(const ParsedArgs& args,
                                     const std::vector<std::string>& sources,
                                     absl::string_view usage) {
  int given = 0;
  for (const std::string& flag : sources) given += args.Has(flag) ? 1 : 0;
  if (given != 1) return absl::InvalidArgumentError(usage);
  if (args.Has("data")) return args.String("data");
  if (args.Has("hex")) return ParseHex("--hex", args.String("hex"));
  return ReadFile(args.String("file"));
}

uint32_t TimeoutMs(const ParsedArgs& args) {
  return static_cast<uint32_t>(args.Uint("timeout_ms"));
}

// Goodput of `bytes` in `ns`, as "12.3 MB/s" (10^6 bytes per second).
std::string Rate(uint64_t bytes, uint64_t ns) {
  if (ns == 0) return "-";
  return absl::StrFormat(
      "%.1f MB/s", static_cast<double>(bytes) * 1e3 / static_cast<double>(ns));
}

int RunRemoteWrite(Env& env, const ParsedArgs& args) {
  absl::StatusOr<Target> target = ParseTarget(args);
  if (!target.ok()) return env.UsageError(target.status());
  v1::RemoteWriteRequest request;
  const bool generate = args.Has("generate");
  std::string data;
  if (generate) {
    if (args.Has("data") || args.Has("hex") || args.Has("file")) {
      return env.UsageError(
          "--generate excludes --data, --hex and --file: pass one way to "
          "make the bytes");
    }
    if (!args.Has("size")) {
      return env.UsageError("--generate N needs --size BYTES");
    }
    if (args.Uint("generate") == 0) {
      return env.UsageError("--generate must be at least 1");
    }
    if (args.Uint("size") == 0) {
      return env.UsageError("--size must be at least 1");
    }
    request.set_generate_count(static_cast<uint32_t>(args.Uint("generate")));
    request.set_generate_size(static_cast<uint32_t>(args.Uint("size")));
    request.set_generate_region(args.Has("region") ? args.Uint("region") : 0);
  } else {
    if (args.Has("size") || args.Has("region")) {
      return env.UsageError("--size and --region go with --generate N");
    }
    absl::StatusOr<std::string> bytes =
        DataFlag(args, {"data", "hex", "file"},
                 "pass exactly one of --data TEXT, --hex HEX, --file PATH and "
                 "--generate N --size BYTES");
    if (!bytes.ok()) return env.UsageError(bytes.status());
    if (bytes->empty()) return env.UsageError("the data is empty");
    data = *std::move(bytes);
    request.set_data(data);
  }
  request.set_peer(target->peer);
  request.set_channel(static_cast<uint32_t>(args.Uint("channel")));
  request.set_rkey(target->rkey);
  request.set_address(target->address);
  request.set_timeout_ms(TimeoutMs(args));
  ControlClient* client = env.Client();
  if (client == nullptr) return env.connect_exit();
  absl::StatusOr<v1::RemoteWriteResponse> response =
      client->RemoteWrite(request);
  if (!response.ok()) return env.ServerError(response.status());
  if (env.json()) {
    env.PrintJson(*response);
  } else if (generate) {
    KeyValues fields;
    fields.Add("writes", absl::StrCat(response->writes()));
    fields.Add("bytes", absl::StrCat(response->bytes()));
    fields.Add("elapsed", Micros(response->elapsed_ns()));
    fields.Add("goodput", Rate(response->bytes(), response->elapsed_ns()));
    fields.Add("latency_p50", Micros(response->latency_p50_ns()));
    fields.Add("latency_p99", Micros(response->latency_p99_ns()));
    fields.Add("latency_max", Micros(response->latency_max_ns()));
    fields.Print(stdout);
  } else {
    std::printf("wrote %zu bytes to %s at 0x%llx (rkey 0x%08x) in %s\n",
                data.size(), target->peer.c_str(),
                static_cast<unsigned long long>(target->address), target->rkey,
                Micros(response->latency_ns()).c_str());
  }
  return kExitOk;
}

int RunRemoteRead(Env& env, const ParsedArgs& args) {
  absl::StatusOr<Target> target = ParseTarget(args);
  if (!target.ok()) return env.UsageError(target.status());
  absl::StatusOr<uint64_t> length =
      ParseUint("LENGTH", args.positional[3], UINT32_MAX);
  if (!length.ok()) return env.UsageError(length.status());
  v1::RemoteReadRequest request;
  request.set_peer(target->peer);
  request.set_channel(static_cast<uint32_t>(args.Uint("channel")));
  request.set_rkey(target->rkey);
  request.set_address(target->address);
  request.set_length(static_cast<uint32_t>(*length));
  request.set_timeout_ms(TimeoutMs(args));
  const bool repeat = args.Has("repeat");
  if (repeat) {
    if (args.Uint("repeat") == 0) {
      return env.UsageError("--repeat must be at least 1");
    }
    request.set_repeat(static_cast<uint32_t>(args.Uint("repeat")));
  }
  ControlClient* client = env.Client();
  if (client == nullptr) return env.connect_exit();
  absl::StatusOr<v1::RemoteReadResponse> response = client->RemoteRead(request);
  if (!response.ok()) return env.ServerError(response.status());
  if (repeat && !env.json() && !args.Has("out") && !args.Bool("raw")) {
    KeyValues fields;
    fields.Add("reads", absl::StrCat(response->reads()));
    fields.Add("elapsed", Micros(response->elapsed_ns()));
    fields.Add("latency_p50", Micros(response->latency_p50_ns()));
    fields.Add("latency_p99", Micros(response->latency_p99_ns()));
    fields.Add("latency_max", Micros(response->latency_max_ns()));
    fields.Print(stdout);
    return kExitOk;
  }
  return PrintBytes(env, args, response->data(), target->address, *response);
}

// Message i of --count/--size (docs/spinctl.md): bytes 0..7 are i, little
// endian; byte k >= 8 is (i + k) mod 256.
std::string PatternMessage(uint64_t i, uint64_t size) {
  std::string message(size, '\0');
  for (uint64_t k = 0; k < size; ++k) {
    message[k] =
        static_cast<char>(k < 8 ? (i >> (8 * k)) & 0xff : (i + k) & 0xff);
  }
  return message;
}

int RunStreamSend(Env& env, const ParsedArgs& args) {
  absl::StatusOr<uint64_t> stream_id =
      ParseUint("STREAM_ID", args.positional[1], UINT32_MAX);
  if (!stream_id.ok()) return env.UsageError(stream_id.status());
  if (*stream_id == 0) return env.UsageError("STREAM_ID must be at least 1");
  v1::StreamSendRequest request;
  bool pattern = args.Has("count") || args.Has("size");
  if (args.Has("generate")) {
    if (args.Has("data") || args.Has("file") || args.Has("count")) {
      return env.UsageError(
          "--generate excludes --data, --file and --count: pass one way to "
          "make the messages");
    }
    if (!args.Has("size")) {
      return env.UsageError("--generate N needs --size BYTES");
    }
    if (args.Uint("generate") == 0) {
      return env.UsageError("--generate must be at least 1");
    }
    if (args.Uint("size") < 8) {
      return env.UsageError(
          "--size must be at least 8 (a message starts with its index)");
    }
    request.set_generate_count(static_cast<uint32_t>(args.Uint("generate")));
    request.set_generate_size(static_cast<uint32_t>(args.Uint("size")));
  } else if (pattern) {
    if (args.Has("data") || args.Has("file")) {
      return env.UsageError(
          "--count/--size exclude --data and --file: pass one way to make "
          "the messages");
    }
    if (!args.Has("count") || !args.Has("size")) {
      return env.UsageError("pass both --count N and --size BYTES");
    }
    if (args.Uint("count") == 0) {
      return env.UsageError("--count must be at least 1");
    }
    if (args.Uint("size") < 8) {
      return env.UsageError(
          "--size must be at least 8 (a message starts with its index)");
    }
    for (uint64_t i = 0; i < args.Uint("count"); ++i) {
      request.add_messages(PatternMessage(i, args.Uint("size")));
    }
  } else {
    absl::StatusOr<std::string> data = DataFlag(
        args, {"data", "file"},
        "pass exactly one of --data TEXT, --file PATH and --count N --size "
        "BYTES");
    if (!data.ok()) return env.UsageError(data.status());
    if (data->empty()) return env.UsageError("the message is empty");
    request.add_messages(*std::move(data));
  }
  request.set_peer(args.positional[0]);
  request.set_channel(static_cast<uint32_t>(args.Uint("channel")));
  request.set_stream_id(static_cast<uint32_t>(*stream_id));
  request.set_timeout_ms(TimeoutMs(args));
  ControlClient* client = env.Client();
  if (client == nullptr) return env.connect_exit();
  absl::StatusOr<v1::StreamSendResponse> response = client->StreamSend(request);
  if (!response.ok()) return env.ServerError(response.status());
  if (env.json()) {
    env.PrintJson(*response);
    return kExitOk;
  }
  KeyValues fields;
  fields.Add("delivered", absl::StrCat(response->delivered()));
  fields.Add("latency_p50", Micros(response->latency_p50_ns()));
  fields.Add("latency_p99", Micros(response->latency_p99_ns()));
  fields.Add("latency_max", Micros(response->latency_max_ns()));
  fields.Add("bytes", absl::StrCat(response->bytes()));
  fields.Add("elapsed", Micros(response->elapsed_ns()));
  fields.Add("goodput", Rate(response->bytes(), response->elapsed_ns()));
  fields.Print(stdout);
  return kExitOk;
}

FlagSpec ChannelFlag() {
  return {"channel", FlagType::kUint, "N",
          "the peer's channel (default 0; GetInfo's diad.channels of them)",
          UINT32_MAX};
}

FlagSpec TimeoutFlag() {
  return {"timeout_ms", FlagType::kUint, "N",
          "wait at most N ms for the peer (default 10000); the global "
          "--timeout_ms goes before the command",
          UINT32_MAX};
}

}  // namespace

std::vector<Command> DiadCommands() {
  return {
      {"peers",
       "",
       0,
       0,
       "DiAD peers, their state and counters",
       {},
       "",
       RunPeers},
      {"peer-add",
       "NAME NODE MAC",
       3,
       3,
       "add a DiAD peer: its node address (fc00::/7) and MAC",
       {{"recovery", FlagType::kString, "MODE",
         "go_back_n (default, the paper's wire) or selective (selective "
         "repeat, when the peer is selective too)"}},
       "example:\n  spinctl peer-add b fd00:d1ad::2 02:00:00:00:00:02 "
       "--recovery selective\n",
       RunPeerAdd},
      {"peer-remove",
       "NAME",
       1,
       1,
       "remove a DiAD peer (what is pending to it fails)",
       {},
       "",
       RunPeerRemove},
      {"remote-write",
       "PEER RKEY ADDRESS",
       3,
       3,
       "write bytes into a peer's region (RKEY and ADDRESS: decimal or 0x hex)",
       {
           {"data", FlagType::kString, "TEXT", "the bytes of TEXT"},
           {"hex", FlagType::kString, "HEX", "the bytes, e.g. deadbeef"},
           {"file", FlagType::kString, "PATH", "the bytes of PATH (- : stdin)"},
           {"generate", FlagType::kUint, "N",
            "N writes generated by the server (with --size; benchmarks)",
            UINT32_MAX},
           {"size", FlagType::kUint, "BYTES", "bytes per generated write",
            UINT32_MAX},
           {"region", FlagType::kUint, "BYTES",
            "generated write i goes to ADDRESS + (i * size) mod BYTES "
            "(default: every one at ADDRESS)"},
           ChannelFlag(),
           TimeoutFlag(),
       },
       "With --generate N --size B the server builds N writes of B bytes "
       "(stream-send's\npattern, message i for write i) and issues them in "
       "one batch; it prints the\nelapsed time and goodput (--json: "
       "elapsed_ns, bytes, latency_p50_ns, ...).\n"
       "example (the peer's region-register printed the rkey and base):\n"
       "  spinctl remote-write b 0x1a2b3c4d 0x7f0000001000 --data hello\n"
       "  spinctl remote-write b 0x1a2b3c4d 0x7f0000001000 --generate 100 "
       "--size 65536\n",
       RunRemoteWrite},
      {"remote-read",
       "PEER RKEY ADDRESS LENGTH",
       4,
       4,
       "read bytes of a peer's region as a hex dump (or raw with --raw/--out)",
       {
           ChannelFlag(),
           TimeoutFlag(),
           {"out", FlagType::kString, "FILE", "write the raw bytes to FILE"},
           {"raw", FlagType::kBool, "", "write the raw bytes to stdout"},
           {"repeat", FlagType::kUint, "N",
            "N reads one after the other (server side); prints latency "
            "p50/p99/max",
            1000000},
       },
       "LENGTH is at most 1 MiB. With --json the bytes are base64 (`data`).\n"
       "With --repeat N the server reads N times and answers the last data "
       "and the\nlatency percentiles over the N reads (--json: "
       "latency_p50_ns, ...).\n",
       RunRemoteRead},
      {"stream-send",
       "PEER STREAM_ID",
       2,
       2,
       "send messages on a DiAD stream; prints how many were delivered",
       {
           {"data", FlagType::kString, "TEXT", "one message: TEXT"},
           {"file", FlagType::kString, "PATH",
            "one message: the bytes of PATH (- : stdin)"},
           {"count", FlagType::kUint, "N", "N generated messages (with --size)",
            UINT32_MAX},
           {"size", FlagType::kUint, "BYTES",
            "bytes per generated message (at least 8)", UINT32_MAX},
           {"generate", FlagType::kUint, "N",
            "N messages generated by the server (with --size; benchmarks)",
            UINT32_MAX},
           ChannelFlag(),
           TimeoutFlag(),
       },
       "Generated message i (from 0): bytes 0..7 are i as a little-endian "
       "u64,\nbyte k (k >= 8) is (i + k) mod 256. All go in one request, in "
       "order on one\nchannel. --generate N --size BYTES: the same "
       "messages, built by the server\n(no payload crosses gRPC); it "
       "reports the elapsed time and goodput.\n"
       "example:\n  spinctl stream-send b 7 --count 100 --size 1024\n",
       RunStreamSend},
  };
}

}  // namespace spinnic::spinctl
