// spinctl qps, qp-create, qp-destroy: RoCEv2 queue pairs set up by hand
// (docs/spinctl.md; the transport: docs/roce.md).
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
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
  Table table({"QPN", "REMOTE_QPN", "REMOTE_IP", "REMOTE_MAC", "LOCAL_IP",
               "PMTU", "RD_ATOMIC", "STATE", "FIRST_PSN", "SEND_PSN",
               "EXPECTED_PSN", "MSN", "PACKETS", "NAKS", "ORIGIN"});
  for (const v1::QpStatus& qp : qps->qps()) {
    const v1::CreateQpRequest& s = qp.spec();
    table.AddRow({absl::StrCat(qp.qpn()), Hex24(s.remote_qpn()), s.remote_ip(),
                  s.remote_mac(), s.local_ip(), absl::StrCat(s.path_mtu()),
                  absl::StrCat(s.max_rd_atomic()), qp.state(),
                  Hex24(s.expected_psn()), Hex24(s.send_psn()),
                  Hex24(qp.expected_psn()), absl::StrCat(qp.msn()),
                  absl::StrCat(qp.packets()), absl::StrCat(qp.naks()),
                  qp.origin() == "cm" ? absl::StrCat("cm:", qp.cm_port())
                                      : qp.origin()});
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

}  // namespace

std::vector<Command> RoceCommands() {
  return {
      {"qps",
       "",
       0,
       0,
       "RoCE queue pairs, their state and counters",
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
      {"qp-destroy",
       "QPN",
       1,
       1,
       "destroy a RoCE queue pair (QPN: decimal or 0x hex)",
       {},
       "",
       RunQpDestroy},
  };
}

}  // namespace spinnic::spinctl
