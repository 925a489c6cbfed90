// bpf: runs a user's eBPF handler program (spin_bpf.h, docs/bpf.md) as an
// ECTX: its spin/header, spin/payload and spin/completion functions where
// the native handlers' Header, Payload and Completion run, with the same
// result codes, state memory, bound regions, cycle budget and counters.
// A missing section is a missing function, as for a native kind without it
// (Stages()): no header means PROCESS_DATA, no payload means the packet goes
// on, no completion means SUCCESS. A helper's refused access makes the call
// FAIL and counts as an overrun (HandlerResult::kFault).
#include <rte_config.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "handlers/api/handler.h"
#include "handlers/bpf/bpf_helpers.h"
#include "handlers/bpf/bpf_program.h"

namespace spinnic::bpf {
namespace {

// Larger than any handler a person writes (SPIN_MAX_INSNS instructions per
// section, three sections, symbols, BTF), small enough to hex-encode.
constexpr size_t kMaxProgramBytes = 1 << 20;

absl::StatusOr<std::vector<uint8_t>> ReadProgramFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(absl::StrCat(
        "parameter 'program_file' = '", path,
        "': cannot read it; give a path spinnicd can read, or send the "
        "object itself in 'program'"));
  }
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  return bytes;
}

// The spin_ctx fields BpfHandler::Run fills together.
enum ContextGroup : uint8_t {
  kPacketFields = 1,      // packet_length
  kLayerFields = 2,       // l3_offset .. vlan_tags
  kEctxFields = 4,        // state_size, hpu, ectx_id
  kCompletionFields = 8,  // flow_control, reserved, dropped_bytes
  kParamField = 16,       // param
  kMessageFields = 32,    // message_offset .. reserved2
};

// The groups with a byte in `bytes` (what the loader proved a stage may
// touch).
uint8_t GroupsOf(const ContextBytes& bytes) {
  struct Range {
    size_t first, end;
    ContextGroup group;
  };
  static constexpr Range kRanges[] = {
      {0, offsetof(spin_ctx, l3_offset), kPacketFields},
      {offsetof(spin_ctx, l3_offset), offsetof(spin_ctx, state_size),
       kLayerFields},
      {offsetof(spin_ctx, state_size), offsetof(spin_ctx, flow_control),
       kEctxFields},
      {offsetof(spin_ctx, flow_control), offsetof(spin_ctx, param),
       kCompletionFields},
      {offsetof(spin_ctx, param), offsetof(spin_ctx, message_offset),
       kParamField},
      {offsetof(spin_ctx, message_offset), sizeof(spin_ctx), kMessageFields},
  };
  uint8_t groups = 0;
  for (const Range& range : kRanges) {
    for (size_t b = range.first; b < range.end; ++b) {
      if (bytes.test(b)) groups |= range.group;
    }
  }
  return groups;
}
// librte_bpf has a JIT for these architectures only; elsewhere every
// program runs in its interpreter. ListHandlerKinds says which this build
// does, ListHandlers (runtime) what each installed program got.
#if defined(RTE_ARCH_X86_64) || defined(RTE_ARCH_ARM64)
#define SPINNIC_BPF_RUNS "checked at install and JIT-compiled"
#else
#define SPINNIC_BPF_RUNS \
  "checked at install and run by librte_bpf's interpreter (no JIT here)"
#endif

class BpfHandler {
 public:
  static constexpr absl::string_view kName = "bpf";
  static constexpr absl::string_view kDescription =
      "a user's eBPF program (clang -target bpf; spin_bpf.h): its "
      "spin/header, spin/payload and spin/completion functions run as this "
      "handler, " SPINNIC_BPF_RUNS;
  static constexpr uint32_t kMinStateSize = 0;
  static constexpr ParamSpec kParams[] = {
      {.name = "program",
       .type = ParamType::kBytes,
       .required = false,
       .default_value = "",
       .help = "the ELF object clang made, in hex (spinctl install --bpf "
               "FILE sends it); or use program_file"},
      {.name = "program_file",
       .type = ParamType::kString,
       .required = false,
       .default_value = "",
       .help = "path of the ELF object on the appliance, read at install"},
      {.name = "peer",
       .type = ParamType::kString,
       .required = false,
       .default_value = "",
       .help = "the DiAD peer (its name) the program's spin_diad_put_* "
               "and spin_diad_get reach"},
      {.name = "arg",
       .type = ParamType::kUint,
       .required = false,
       .default_value = "0",
       .help = "a number the program reads as ctx->param"},
  };

  static absl::StatusOr<std::unique_ptr<BpfHandler>> Create(
      const HandlerParams& params) {
    const std::vector<uint8_t>& inline_program = params.GetBytes("program");
    const std::string& path = params.GetString("program_file");
    if (inline_program.empty() == path.empty()) {
      return absl::InvalidArgumentError(
          "give the program in exactly one of the parameters 'program' (hex "
          "bytes; spinctl install --bpf FILE) and 'program_file' (a path)");
    }
    std::vector<uint8_t> from_file;
    if (!path.empty()) {
      absl::StatusOr<std::vector<uint8_t>> read = ReadProgramFile(path);
      if (!read.ok()) return read.status();
      from_file = *std::move(read);
    }
    std::span<const uint8_t> elf =
        path.empty() ? std::span<const uint8_t>(inline_program) : from_file;
    if (elf.size() > kMaxProgramBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("program: ", elf.size(), " bytes, more than ",
                       kMaxProgramBytes, "; strip debug information (-g0)"));
    }
    absl::StatusOr<std::unique_ptr<BpfProgram>> program = BpfProgram::Load(elf);
    if (!program.ok()) return program.status();
    return std::unique_ptr<BpfHandler>(new BpfHandler(
        *std::move(program), params.GetUint("arg"), params.GetString("peer")));
  }

  // The engine calls only the functions the program defines (the others
  // cost nothing, not even their cycle accounting).
  uint8_t Stages() const {
    return (program_->Has(Stage::kHeader) ? kHeaderStage : 0) |
           (program_->Has(Stage::kPayload) ? kPayloadStage : 0) |
           (program_->Has(Stage::kCompletion) ? kCompletionStage : 0);
  }
  HandlerResult Header(HandlerContext& ctx, PacketView& packet) {
    return Run(Stage::kHeader, ctx, &packet, 0, false);
  }
  HandlerResult Payload(HandlerContext& ctx, PacketView& packet) {
    return Run(Stage::kPayload, ctx, &packet, 0, false);
  }
  HandlerResult Completion(HandlerContext& ctx, uint64_t dropped_bytes,
                           bool flow_control) {
    return Run(Stage::kCompletion, ctx, nullptr, dropped_bytes, flow_control);
  }

  // ListHandlers' runtime: "jit: header 12 insns, payload 40 insns", or
  // "interpreter: ..." where librte_bpf could not JIT-compile it.
  std::string Describe() const {
    const ProgramReport& report = program_->report();
    std::vector<std::string> sections;
    for (const SectionReport& s : report.sections) {
      absl::string_view name = s.name;
      absl::ConsumePrefix(&name, "spin/");
      sections.push_back(absl::StrCat(name, " ", s.instructions, " insns"));
    }
    return absl::StrCat(report.jit ? "jit: " : "interpreter: ",
                        absl::StrJoin(sections, ", "));
  }

 private:
  BpfHandler(std::unique_ptr<BpfProgram> program, uint64_t arg,
             std::string peer)
      : program_(std::move(program)), arg_(arg), peer_(std::move(peer)) {
    for (Stage stage : {Stage::kHeader, Stage::kPayload, Stage::kCompletion}) {
      fill_[static_cast<size_t>(stage)] =
          GroupsOf(program_->ContextBytesOf(stage));
    }
  }

  // Fills only the context fields the program can reach (the loader proved
  // which bytes it touches): a program that reads packet_length alone pays
  // for one store, not the whole context.
  HandlerResult Run(Stage stage, HandlerContext& ctx, PacketView* packet,
                    uint64_t dropped_bytes, bool flow_control) const {
    BpfInvocation inv;
    spin_ctx& c = inv.pub;
    const uint8_t fill = fill_[static_cast<size_t>(stage)];
    if (fill & kPacketFields) {
      c.packet_length = packet != nullptr ? packet->Length() : 0;
    }
    if (fill & kLayerFields) {
      if (packet != nullptr) {
        const PacketLayers& layers = packet->Layers();
        c.l3_offset = layers.l3_offset;
        c.l4_offset = layers.l4_offset;
        c.payload_offset = layers.payload_offset;
        c.l3_end = layers.l3_end;
        c.ethertype = layers.ethertype;
        c.ip_proto = layers.ip_proto;
        c.flags =
            (layers.is_ipv4 ? SPIN_IPV4 : 0) | (layers.is_ipv6 ? SPIN_IPV6 : 0);
        c.in_port = packet->InPort();
        c.vlan_tags = layers.vlan_tags;
      } else {
        c.l3_offset = c.l4_offset = c.payload_offset = c.l3_end = SPIN_ABSENT;
        c.ethertype = 0;
        c.ip_proto = c.flags = 0;
        c.in_port = c.vlan_tags = 0;
      }
    }
    if (fill & kEctxFields) {
      c.state_size = static_cast<spin_u32>(ctx.State().size());
      c.hpu = ctx.LcoreIndex();
      c.ectx_id = ctx.EctxId();
    }
    if (fill & kCompletionFields) {
      c.flow_control = flow_control ? 1 : 0;
      c.reserved = 0;
      c.dropped_bytes = dropped_bytes;
    }
    if (fill & kParamField) c.param = arg_;
    if (fill & kMessageFields) {
      // The completion handler has no packet; the message is the last
      // packet's, which the engine does not keep: zeros.
      const MessageInfo message =
          packet != nullptr ? packet->Message() : MessageInfo{};
      c.message_offset = message.offset;
      c.message_length = message.length;
      c.message_address = message.address;
      c.message_source = message.source;
      c.transport = static_cast<spin_u8>(message.transport);
      c.reserved2[0] = c.reserved2[1] = c.reserved2[2] = 0;
    }
    inv.handler = &ctx;
    inv.packet = packet;
    inv.peer = peer_;
    inv.fault = false;
    const uint64_t rc = program_->Run(stage, &inv);
    // A refused access: FAIL, and an overrun toward disable_after_overruns.
    if (inv.fault) return HandlerResult::kFault;
    // Codes past FAIL are the engine's to count as invalid.
    return static_cast<HandlerResult>(rc > 0xff ? 0xff : rc);
  }

  std::unique_ptr<BpfProgram> program_;
  uint64_t arg_;
  std::string peer_;
  std::array<uint8_t, 3> fill_{};  // ContextGroups per Stage
};

SPINNIC_HANDLER(BpfHandler);

}  // namespace
}  // namespace spinnic::bpf
