// An eBPF handler program (spin_bpf.h): the ELF object clang made, checked
// and loaded once at install, then run per packet by JIT-compiled code (the
// interpreter only where librte_bpf has no JIT).
//
// Load checks, in order, and stops at the first problem with
// INVALID_ARGUMENT naming the section and the instruction index:
//   the file: ELF, 64-bit little-endian, relocatable, machine BPF;
//   the sections: at least one of spin/header, spin/payload,
//     spin/completion, each 1..SPIN_MAX_INSNS instructions;
//   the instructions: no loops (no cycle in the control flow), no 32-bit
//     jumps (eBPF v3: compile with -mcpu=v2), calls only to spin_bpf.h's
//     helpers by name (a program's own functions must be inlined), no
//     global variables or maps, no division or modulo by a register (it
//     may be zero) or by the constant 0, no shift by the value's width or
//     more, every jump to the start of an instruction of its section;
//   then librte_bpf's validator: every register and memory access provably
//     inside the context or the stack, helper arguments of the right kind,
//     every path ends in exit.
// Control path only; a loaded program is immutable and may run on every
// HPU at once.
#ifndef SPINNIC_HANDLERS_BPF_BPF_PROGRAM_H_
#define SPINNIC_HANDLERS_BPF_BPF_PROGRAM_H_

#include <array>
#include <bitset>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

struct ebpf_insn;
struct rte_bpf;

namespace spinnic::bpf {

struct Relocation;

// A bit per byte of spin_ctx (88 bytes).
using ContextBytes = std::bitset<128>;

enum class Stage : uint8_t { kHeader = 0, kPayload = 1, kCompletion = 2 };
inline constexpr std::array<const char*, 3> kSectionNames = {
    "spin/header", "spin/payload", "spin/completion"};

// What the checks found, for spinctl bpf-check and ListHandlers.
struct SectionReport {
  std::string name;
  uint32_t instructions = 0;
  uint32_t stack_bytes = 0;
  std::vector<std::string> helpers;  // called, in first-use order
  // Bit i: the program may read or write byte i of its spin_ctx. The
  // handler fills only the fields a program can reach.
  ContextBytes context_bytes;
  // Why the interpreter runs this section although the JIT is there;
  // empty when the JIT runs it (or is not available).
  std::string interpreter_reason;
};
struct ProgramReport {
  std::vector<SectionReport> sections;
  bool jit = false;  // false: librte_bpf's interpreter runs it
};

class BpfProgram {
 public:
  static absl::StatusOr<std::unique_ptr<BpfProgram>> Load(
      std::span<const uint8_t> elf);
  ~BpfProgram();
  BpfProgram(const BpfProgram&) = delete;
  BpfProgram& operator=(const BpfProgram&) = delete;

  bool Has(Stage stage) const {
    return stages_[static_cast<size_t>(stage)].bpf != nullptr;
  }
  // SectionReport::context_bytes of the stage (0 when it is absent).
  const ContextBytes& ContextBytesOf(Stage stage) const {
    return stages_[static_cast<size_t>(stage)].context_bytes;
  }
  // Runs the stage's function on `ctx` (a BpfInvocation). The stage exists.
  // Inline: the JIT's function is the whole per-packet cost.
  uint64_t Run(Stage stage, void* ctx) const {
    const LoadedStage& loaded = stages_[static_cast<size_t>(stage)];
    return loaded.jit != nullptr ? loaded.jit(ctx) : Interpret(loaded, ctx);
  }

  const ProgramReport& report() const { return report_; }

  // For fuzzing: raw instructions as a payload handler, through the same
  // checks (without relocations, so a helper call is refused).
  static absl::StatusOr<std::unique_ptr<BpfProgram>> LoadInstructions(
      std::span<const uint8_t> code);

 private:
  BpfProgram() = default;
  // Checks, validates and JIT-compiles one section (calls resolved in place).
  absl::Status LoadStage(Stage stage, std::vector<ebpf_insn>& insns,
                         const std::vector<Relocation>& relocations);
  struct LoadedStage {
    rte_bpf* bpf = nullptr;
    uint64_t (*jit)(void*) = nullptr;
    ContextBytes context_bytes;
  };
  static uint64_t Interpret(const LoadedStage& stage, void* ctx);
  std::array<LoadedStage, 3> stages_;
  ProgramReport report_;
};

// "spin/payload: 12 instructions, stack 16 B, helpers spin_pkt_load; ...;
// JIT".
std::string DescribeReport(const ProgramReport& report);

}  // namespace spinnic::bpf

#endif  // SPINNIC_HANDLERS_BPF_BPF_PROGRAM_H_
