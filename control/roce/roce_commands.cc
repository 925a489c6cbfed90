// spinctl qps, qp-create, qp-destroy: RoCEv2 queue pairs set up by hand;
// roce-service: the built-in services' rdma_cm ports;
// qp-write, qp-read, qp-atomic: RDMA operations of ours on them
// (docs/spinctl.md; the transport: docs/roce.md).
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "control/spinctl/args.h"
#include "control/spinctl/command.h"
#include "control/spinctl/table.h"

namespace spinnic::spinctl {
namespace {

// QP numbers and PSNs are 24-bit fields of the BTH.
constexpr uint64_t kMax24 = 0xffffff;

std::string Hex24(uint32_t value) { return absl::StrFormat("0x%06x", value); }

int RunQps(Env& env, const ParsedArgs&) {
  ControlClient* client = env.Client();
  if (client == nullptr) return env.connect_exit();
  absl::StatusOr<v1::ListQpsResponse> qps = client->ListQps();
  if (!qps.ok()) return env.ServerError(qps.status());
  if (env.json()) {
    env.PrintJson(*qps);
    return kExitOk;
  }
  if (qps->qps().empty()) {
    std::printf("no queue pairs\n");
    return kExitOk;
  }
  Table table({"QPN",       "REMOTE_QPN", "REMOTE_IP",    "REMOTE_MAC",
               "LOCAL_IP",  "PMTU",       "RD_ATOMIC",    "STATE",
               "FIRST_PSN", "SEND_PSN",   "EXPECTED_PSN", "MSN",
               "PACKETS",   "NAKS",       "ORIGIN",       "SERVICE",
               "HPU",       "RATE_MBPS",  "ALPHA",        "CNP_RX",
               "CNP_TX"});
  for (const v1::QpStatus& qp : qps->qps()) {
    const v1::CreateQpRequest& s = qp.spec();
    table.AddRow(
        {absl::StrCat(qp.qpn()), Hex24(s.remote_qpn()), s.remote_ip(),
         s.remote_mac(), s.local_ip(), absl::StrCat(s.path_mtu()),
         absl::StrCat(s.max_rd_atomic()), qp.state(), Hex24(s.expected_psn()),
         Hex24(s.send_psn()), Hex24(qp.expected_psn()), absl::StrCat(qp.msn()),
         absl::StrCat(qp.packets()), absl::StrCat(qp.naks()),
         qp.origin() == "cm" ? absl::StrCat("cm:", qp.cm_port()) : qp.origin(),
         qp.service(), absl::StrCat(qp.hpu()),
         // Congestion control: "-" for a QP without it (rate 0).
         qp.rate_bps() == 0 ? "-" : absl::StrCat(qp.rate_bps() / 1'000'000),
         qp.rate_bps() == 0 ? "-" : absl::StrFormat("%.4f", qp.alpha()),
         absl::StrCat(qp.cnps_received()), absl::StrCat(qp.cnps_sent())});
  }
  table.Print(stdout);
  return kExitOk;
}

int RunQpCreate(Env& env, const ParsedArgs& args) {
  for (const char* flag : {"remote_qpn", "remote_ip", "remote_mac"}) {
    if (!args.Has(flag)) {
      return env.UsageError(absl::StrCat(
          "--", flag,
          " is missing; a queue pair needs --remote_qpn N --remote_ip ADDRESS "
          "--remote_mac MAC (the client's QP number, address and MAC)"));
    }
  }
  if (args.Uint("remote_qpn") == 0) {
    return env.UsageError(
        "--remote_qpn must be 1..0xffffff (the client's ibv_qp->qp_num)");
  }
  v1::CreateQpRequest request;
  request.set_remote_qpn(static_cast<uint32_t>(args.Uint("remote_qpn")));
  request.set_remote_ip(args.String("remote_ip"));
  request.set_remote_mac(args.String("remote_mac"));
  request.set_local_ip(args.String("local_ip"));
  request.set_path_mtu(static_cast<uint32_t>(args.Uint("path_mtu")));
  request.set_expected_psn(static_cast<uint32_t>(args.Uint("expected_psn")));
  request.set_send_psn(static_cast<uint32_t>(args.Uint("send_psn")));
  request.set_max_rd_atomic(static_cast<uint32_t>(args.Uint("max_rd_atomic")));
  ControlClient* client = env.Client();
  if (client == nullptr) return env.connect_exit();
  absl::StatusOr<uint32_t> qpn = client->CreateQp(request);
  if (!qpn.ok()) return env.ServerError(qpn.status());
  if (env.json()) {
    v1::CreateQpResponse response;
    response.set_qpn(*qpn);
    env.PrintJson(response);
  } else {
    std::printf("qpn: %u (0x%06x)\n", *qpn, *qpn);
  }
  return kExitOk;
}

int RunQpDestroy(Env& env, const ParsedArgs& args) {
  absl::StatusOr<uint64_t> qpn = ParseUint("QPN", args.positional[0], kMax24);
  if (!qpn.ok()) return env.UsageError(qpn.status());
  ControlClient* client = env.Client();
  if (client == nullptr) return env.connect_exit();
  if (absl::Status s = client->DestroyQp(static_cast<uint32_t>(*qpn));
      !s.ok()) {
    return env.ServerError(s);
  }
  if (env.json()) {
    env.PrintJson(v1::DestroyQpResponse());
  } else {
    std::printf("destroyed queue pair %llu\n",
                static_cast<unsigned long long>(*qpn));
  }
  return kExitOk;
}

int RunService(Env& env, const ParsedArgs& args) {
  v1::SetServiceRequest request;
  request.set_service(args.positional[0]);
  if (args.positional.size() > 1) {
    absl::StatusOr<uint64_t> port =
        ParseUint("PORT", args.positional[1], 0xffff);
    if (!port.ok()) return env.UsageError(port.status());
    request.set_port(static_cast<uint32_t>(*port));
  }
  request.set_disable(args.Bool("off"));
  if (!request.disable() && request.port() == 0) {
    return env.UsageError(
        "PORT is missing: the rdma_cm port the service runs on (or --off)");
  }
  ControlClient* client = env.Client();
  if (client == nullptr) return env.connect_exit();
  absl::StatusOr<v1::SetServiceResponse> response = client->SetService(request);
  if (!response.ok()) return env.ServerError(response.status());
  if (env.json()) {
    env.PrintJson(*response);
    return kExitOk;
  }
  Table table({"SERVICE", "PORT"});
  for (const v1::RoceServiceInfo& service : response->services()) {
    table.AddRow({service.name(), absl::StrCat(service.port())});
  }
  table.Print(stdout);
  return kExitOk;
}

std::string Micros(uint64_t ns) {
  return absl::StrFormat("%.1f us", static_cast<double>(ns) / 1e3);
}

// Fills what qp-write, qp-read and qp-atomic share: QPN RKEY ADDRESS and
// --region/--offset/--timeout_ms; a usage error's text otherwise.
absl::Status ParseQpTarget(const ParsedArgs& args,
                           v1::QpExecuteRequest* request) {
  absl::StatusOr<uint64_t> qpn = ParseUint("QPN", args.positional[0], kMax24);
  if (!qpn.ok()) return qpn.status();
  absl::StatusOr<uint64_t> rkey =
      ParseUint("RKEY", args.positional[1], UINT32_MAX);
  if (!rkey.ok()) return rkey.status();
  absl::StatusOr<uint64_t> address =
      ParseUint("ADDRESS", args.positional[2], UINT64_MAX);
  if (!address.ok()) return address.status();
  if (!args.Has("region")) {
    return absl::InvalidArgumentError(
        "--region ID is missing: the local registered region the bytes come "
        "from or land in (spinctl regions)");
  }
  request->set_qpn(static_cast<uint32_t>(*qpn));
  request->set_rkey(static_cast<uint32_t>(*rkey));
  request->set_remote_address(*address);
  request->set_region_id(args.Uint("region"));
  request->set_offset(args.Uint("offset"));
  request->set_timeout_ms(static_cast<uint32_t>(args.Uint("timeout_ms")));
  return absl::OkStatus();
}

// --length L, or --generate N --size S [--span B] [--sequential].
absl::Status ParseQpAmount(const ParsedArgs& args,
                           v1::QpExecuteRequest* request) {
  if (args.Has("generate")) {
    if (args.Has("length")) {
      return absl::InvalidArgumentError(
          "--generate excludes --length: give --size BYTES per op");
    }
    if (args.Uint("generate") == 0 || args.Uint("size") == 0) {
      return absl::InvalidArgumentError(
          "--generate N needs N >= 1 and --size BYTES >= 1");
    }
    request->set_generate_count(static_cast<uint32_t>(args.Uint("generate")));
    request->set_generate_size(static_cast<uint32_t>(args.Uint("size")));
    request->set_generate_region(args.Uint("span"));
    request->set_one_at_a_time(args.Has("sequential"));
    return absl::OkStatus();
  }
  if (args.Has("size") || args.Has("span") || args.Has("sequential")) {
    return absl::InvalidArgumentError(
        "--size, --span and --sequential go with --generate N");
  }
  if (args.Uint("length") == 0) {
    return absl::InvalidArgumentError(
        "--length BYTES (>= 1) or --generate N --size BYTES is missing");
  }
  request->set_length(static_cast<uint32_t>(args.Uint("length")));
  return absl::OkStatus();
}

int PrintQpExecute(Env& env, const v1::QpExecuteRequest& request) {
  ControlClient* client = env.Client();
  if (client == nullptr) return env.connect_exit();
  absl::StatusOr<v1::QpExecuteResponse> response = client->QpExecute(request);
  if (!response.ok()) return env.ServerError(response.status());
  if (env.json()) {
    env.PrintJson(*response);
    return kExitOk;
  }
  KeyValues fields;
  fields.Add("ops", absl::StrCat(response->ops()));
  fields.Add("bytes", absl::StrCat(response->bytes()));
  fields.Add("elapsed", Micros(response->elapsed_ns()));
  if (response->elapsed_ns() != 0) {
    fields.Add("goodput", absl::StrFormat(
                              "%.1f MB/s",
                              static_cast<double>(response->bytes()) * 1e3 /
                                  static_cast<double>(response->elapsed_ns())));
  }
  fields.Add("latency_p50", Micros(response->latency_p50_ns()));
  fields.Add("latency_p99", Micros(response->latency_p99_ns()));
  fields.Add("latency_max", Micros(response->latency_max_ns()));
  if (request.kind() == "fetch_add" || request.kind() == "cmp_swap") {
    fields.Add("original",
               absl::StrFormat("0x%016x", response->atomic_original()));
  }
  fields.Print(stdout);
  return kExitOk;
}

int RunQpWrite(Env& env, const ParsedArgs& args) {
  v1::QpExecuteRequest request;
  if (absl::Status s = ParseQpTarget(args, &request); !s.ok()) {
    return env.UsageError(s);
  }
  if (absl::Status s = ParseQpAmount(args, &request); !s.ok()) {
    return env.UsageError(s);
  }
  if (args.Has("send") && args.Has("imm")) {
    return env.UsageError("--send excludes --imm");
  }
  request.set_kind(args.Has("send")  ? "send"
                   : args.Has("imm") ? "write_imm"
                                     : "write");
  request.set_imm(static_cast<uint32_t>(args.Uint("imm")));
  return PrintQpExecute(env, request);
}

int RunQpRead(Env& env, const ParsedArgs& args) {
  v1::QpExecuteRequest request;
  if (absl::Status s = ParseQpTarget(args, &request); !s.ok()) {
    return env.UsageError(s);
  }
  if (absl::Status s = ParseQpAmount(args, &request); !s.ok()) {
    return env.UsageError(s);
  }
  request.set_kind("read");
  return PrintQpExecute(env, request);
}

int RunQpAtomic(Env& env, const ParsedArgs& args) {
  v1::QpExecuteRequest request;
  if (absl::Status s = ParseQpTarget(args, &request); !s.ok()) {
    return env.UsageError(s);
  }
  const bool add = args.Has("add");
  const bool cas = args.Has("compare") || args.Has("swap");
  if (add == cas || (cas && !(args.Has("compare") && args.Has("swap")))) {
    return env.UsageError(
        "pass either --add N (fetch-and-add) or --compare C --swap S "
        "(compare-and-swap)");
  }
  request.set_kind(add ? "fetch_add" : "cmp_swap");
  request.set_length(8);
  request.set_compare(args.Uint("compare"));
  request.set_swap_add(add ? args.Uint("add") : args.Uint("swap"));
  return PrintQpExecute(env, request);
}

std::vector<FlagSpec> QpTargetFlags() {
  return {
      {"region", FlagType::kUint, "ID",
       "the local registered region (spinctl regions)", UINT64_MAX},
      {"offset", FlagType::kUint, "BYTES",
       "where the local bytes start in the region (default 0)", UINT64_MAX},
      {"timeout_ms", FlagType::kUint, "N",
       "wait at most N ms for all ops (default 10000)", UINT32_MAX},
  };
}

std::vector<FlagSpec> QpAmountFlags(std::vector<FlagSpec> flags) {
  for (FlagSpec flag : std::vector<FlagSpec>{
           {"length", FlagType::kUint, "BYTES", "one op of BYTES", UINT32_MAX},
           {"generate", FlagType::kUint, "N",
            "N ops generated by the server (benchmarks), pipelined", 1000000},
           {"size", FlagType::kUint, "BYTES", "each generated op's bytes",
            UINT32_MAX},
           {"span", FlagType::kUint, "BYTES",
            "op i at ADDRESS (and --offset) + (i x size) mod span (default: "
            "all at the same place)",
            UINT64_MAX},
           {"sequential", FlagType::kBool, "",
            "generated ops one after the other (latency), not pipelined"},
       }) {
    flags.push_back(std::move(flag));
  }
  return flags;
}

}  // namespace

std::vector<Command> RoceCommands() {
  return {
      {"qps",
       "",
       0,
       0,
       "RoCE queue pairs, their state and counters (congestion control: "
       "the DCQCN rate, alpha, CNPs received and sent)",
       {},
       "",
       RunQps},
      {"qp-create",
       "",
       0,
       0,
       "create a RoCE queue pair to an RDMA client's QP; prints its QPN",
       {
           {"remote_qpn", FlagType::kUint, "N",
            "the client's QP number (ibv_qp->qp_num), 1..0xffffff", kMax24},
           {"remote_ip", FlagType::kString, "ADDRESS",
            "the client's IPv4 or IPv6 address, e.g. 192.0.2.12 or fd00::12"},
           {"remote_mac", FlagType::kString, "MAC",
            "where frames to the client go (its MAC or the next hop's), e.g. "
            "02:00:00:00:00:0c"},
           {"local_ip", FlagType::kString, "ADDRESS",
            "one of the appliance's RoCE addresses (default: the first of "
            "the client's family)"},
           {"path_mtu", FlagType::kUint, "BYTES",
            "256, 512, 1024, 2048 or 4096, as the client's QP (default: "
            "info's roce path_mtu)",
            UINT32_MAX},
           {"expected_psn", FlagType::kUint, "PSN",
            "the PSN of the client's first request, its sq_psn (default 0)",
            kMax24},
           {"send_psn", FlagType::kUint, "PSN",
            "our starting PSN, the client's rq_psn (default 0)", kMax24},
           {"max_rd_atomic", FlagType::kUint, "N",
            "READs and atomics served at once, 1..16 (default: "
            "roce.max_rd_atomic)",
            UINT32_MAX},
       },
       "The client's QP then goes to RTR with dest_qp_num = the printed QPN, "
       "the\nappliance's address as its destination GID and the same path "
       "MTU and PSNs.\n"
       "example:\n  spinctl qp-create --remote_qpn 0x11 --remote_ip "
       "192.0.2.12 \\\n      --remote_mac 02:00:00:00:00:0c --path_mtu 1024 "
       "--expected_psn 0x123456\n",
       RunQpCreate},
      {"roce-service",
       "NAME [PORT]",
       1,
       2,
       "turn a built-in RoCE service on at an rdma_cm port, move it, or "
       "turn it off (--off), while traffic flows; prints the services",
       {{"off", FlagType::kBool, "",
         "turn it off (verbs: stop listening on PORT)"}},
       "NAME: verbs (a plain port: connection region, SENDs as roce_send "
       "events), naaice,\nrping, perftest, perftest_write_lat or echo. "
       "Connections made before keep\ntheir service.\n"
       "examples:\n  spinctl roce-service echo 7472\n  spinctl roce-service "
       "verbs 7480\n  spinctl roce-service rping --off\n",
       RunService},
      {"qp-destroy",
       "QPN",
       1,
       1,
       "destroy a RoCE queue pair (QPN: decimal or 0x hex)",
       {},
       "",
       RunQpDestroy},
      {"qp-write", "QPN RKEY ADDRESS", 3, 3,
       "RDMA WRITE (or WRITE with immediate, or SEND) from a local region "
       "on a QP",
       QpAmountFlags([] {
         std::vector<FlagSpec> flags = QpTargetFlags();
         flags.push_back({"imm", FlagType::kUint, "VALUE",
                          "WRITE with immediate VALUE", UINT32_MAX});
         flags.push_back({"send", FlagType::kBool, "",
                          "a SEND instead (RKEY and ADDRESS are ignored)"});
         return flags;
       }()),
       "The peer's region is RKEY at ADDRESS (its remote_write access).\n"
       "examples:\n  spinctl qp-write 256 0x1000 0x7f0000000000 --region 1 "
       "--length 4096\n  spinctl --json qp-write 256 0x1000 0x7f0000000000 "
       "--region 1 \\\n      --generate 4096 --size 65536 --span 8388608\n",
       RunQpWrite},
      {"qp-read", "QPN RKEY ADDRESS", 3, 3,
       "RDMA READ into a local region on a QP", QpAmountFlags(QpTargetFlags()),
       "example (8-byte read latency):\n  spinctl qp-read 256 0x1000 "
       "0x7f0000000000 --region 1 --generate 2000 \\\n      --size 8 "
       "--sequential\n",
       RunQpRead},
      {"qp-atomic", "QPN RKEY ADDRESS", 3, 3,
       "RDMA fetch-and-add or compare-and-swap of 8 bytes; prints the "
       "original value",
       [] {
         std::vector<FlagSpec> flags = QpTargetFlags();
         flags.push_back(
             {"add", FlagType::kUint, "N", "fetch-and-add N", UINT64_MAX});
         flags.push_back({"compare", FlagType::kUint, "C",
                          "compare-and-swap: the expected value", UINT64_MAX});
         flags.push_back({"swap", FlagType::kUint, "S",
                          "compare-and-swap: the new value", UINT64_MAX});
         return flags;
       }(),
       "The original value also lands in the local region's 8 bytes at "
       "--offset.\n",
       RunQpAtomic},
  };
}

}  // namespace spinnic::spinctl
