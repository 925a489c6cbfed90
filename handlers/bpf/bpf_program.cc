#include "handlers/bpf/bpf_program.h"

#include <bpf_def.h>
#include <gelf.h>
#include <libelf.h>
#include <rte_bpf.h>
#include <rte_errno.h>
#include <rte_log.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "handlers/bpf/bpf_helpers.h"

namespace spinnic::bpf {

// A relocation of a handler section: the symbol an instruction refers to.
struct Relocation {
  uint64_t offset;  // of the instruction it patches, in bytes
  std::string name;
  bool defined;  // in this object (a function or section of the program)
};

namespace {

constexpr uint8_t kClassJmp = 0x05;
constexpr uint8_t kClassJmp32 = 0x06;
constexpr uint8_t kOpCall = 0x80;
constexpr uint8_t kOpExit = 0x90;
constexpr uint8_t kOpJa = 0x00;  // unconditional jump
constexpr uint8_t kLdImm64 = 0x18;
constexpr uint8_t kOpDiv = 0x30;
constexpr uint8_t kOpMod = 0x90;
constexpr uint8_t kOpLsh = 0x60;
constexpr uint8_t kOpRsh = 0x70;
constexpr uint8_t kOpArsh = 0xc0;
constexpr uint8_t kSourceRegister =
    0x08;  // BPF_X: the operand is a register  // BPF_LD | BPF_IMM | EBPF_DW
constexpr uint8_t kStackRegister = 10;

absl::Status Refuse(absl::string_view section, size_t insn,
                    absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat(section, ", instruction ", insn, ": ", what));
}

// An ELF object in memory, closed on scope exit.
class ElfFile {
 public:
  explicit ElfFile(std::span<const uint8_t> bytes)
      : bytes_(bytes.begin(), bytes.end()) {
    elf_version(EV_CURRENT);
    elf_ = elf_memory(reinterpret_cast<char*>(bytes_.data()), bytes_.size());
  }
  ~ElfFile() {
    if (elf_ != nullptr) elf_end(elf_);
  }
  Elf* get() const { return elf_; }

 private:
  std::vector<uint8_t> bytes_;  // libelf reads from this copy
  Elf* elf_ = nullptr;
};

absl::Status CheckHeader(Elf* elf) {
  GElf_Ehdr header;
  if (elf == nullptr || elf_kind(elf) != ELF_K_ELF ||
      gelf_getehdr(elf, &header) == nullptr) {
    return absl::InvalidArgumentError(
        "program: not an ELF object; compile the handler with clang -O2 "
        "-target bpf -mcpu=v2 -c file.c -o file.o and send file.o");
  }
  if (header.e_ident[EI_CLASS] != ELFCLASS64 ||
      header.e_ident[EI_DATA] != ELFDATA2LSB || header.e_machine != EM_BPF) {
    return absl::InvalidArgumentError(
        absl::StrCat("program: an ELF object for machine ", header.e_machine,
                     ", not little-endian 64-bit BPF (", EM_BPF,
                     "); compile with clang -target bpf (bpfel)"));
  }
  if (header.e_type != ET_REL) {
    return absl::InvalidArgumentError(
        "program: not a relocatable object; compile with -c and do not link");
  }
  return absl::OkStatus();
}

std::string SectionName(Elf* elf, Elf_Scn* section) {
  size_t names = 0;
  GElf_Shdr header;
  if (elf_getshdrstrndx(elf, &names) != 0 ||
      gelf_getshdr(section, &header) == nullptr) {
    return "";
  }
  const char* name = elf_strptr(elf, names, header.sh_name);
  return name != nullptr ? name : "";
}

// The symbol names that relocations of section `target` refer to, by the
// byte offset of the instruction they patch.
absl::StatusOr<std::vector<Relocation>> Relocations(Elf* elf, size_t target) {
  std::vector<Relocation> out;
  Elf_Scn* section = nullptr;
  while ((section = elf_nextscn(elf, section)) != nullptr) {
    GElf_Shdr header;
    if (gelf_getshdr(section, &header) == nullptr) continue;
    if (header.sh_info != target) continue;
    if (header.sh_type == SHT_RELA) {
      return absl::InvalidArgumentError(
          "program: RELA relocations; compile with clang -target bpf");
    }
    if (header.sh_type != SHT_REL) continue;
    Elf_Scn* symbols = elf_getscn(elf, header.sh_link);
    GElf_Shdr symbols_header;
    Elf_Data* symbol_data = symbols ? elf_getdata(symbols, nullptr) : nullptr;
    Elf_Data* data = elf_getdata(section, nullptr);
    if (symbol_data == nullptr || data == nullptr ||
        gelf_getshdr(symbols, &symbols_header) == nullptr) {
      return absl::InvalidArgumentError("program: unreadable relocations");
    }
    const size_t count =
        header.sh_entsize ? header.sh_size / header.sh_entsize : 0;
    for (size_t i = 0; i < count; ++i) {
      GElf_Rel rel;
      GElf_Sym symbol;
      if (gelf_getrel(data, static_cast<int>(i), &rel) == nullptr ||
          gelf_getsym(symbol_data, static_cast<int>(GELF_R_SYM(rel.r_info)),
                      &symbol) == nullptr) {
        return absl::InvalidArgumentError("program: unreadable relocation");
      }
      const char* name =
          elf_strptr(elf, symbols_header.sh_link, symbol.st_name);
      std::string symbol_name = name != nullptr ? name : "";
      if (symbol_name.empty() && symbol.st_shndx != SHN_UNDEF) {
        // A section symbol: a call into the program's own .text.
        symbol_name = SectionName(elf, elf_getscn(elf, symbol.st_shndx));
      }
      out.push_back(
          {rel.r_offset, std::move(symbol_name), symbol.st_shndx != SHN_UNDEF});
    }
  }
  return out;
}

// The instructions control may go to after instruction `i` (jump targets
// were checked to be instructions of the section).
int Successors(const std::vector<ebpf_insn>& insns, size_t i, size_t out[2]) {
  const ebpf_insn& insn = insns[i];
  const uint8_t cls = insn.code & 0x07;
  const uint8_t op = insn.code & 0xf0;
  if (insn.code == kLdImm64) {
    out[0] = i + 2;
    return 1;
  }
  if (cls != kClassJmp || op == kOpCall) {
    out[0] = i + 1;
    return 1;
  }
  if (op == kOpExit) return 0;
  out[0] = static_cast<size_t>(static_cast<int64_t>(i) + 1 + insn.off);
  if (op == kOpJa) return 1;
  out[1] = i + 1;
  return 2;
}

// Depth-first from the entry: the jump at the end of a cycle of the control
// flow graph (a loop), if any, else the reachable instructions in reverse
// postorder (a topological order). Clang places shared tails before the
// code that jumps to them, so a backward jump alone is no loop: only a jump
// back to an instruction still on the depth-first path is.
struct FlowOrder {
  std::optional<size_t> loop;
  std::vector<size_t> order;
};
FlowOrder OrderFlow(const std::vector<ebpf_insn>& insns) {
  const size_t n = insns.size();
  enum : uint8_t { kNew, kOnPath, kDone };
  std::vector<uint8_t> state(n, kNew);
  FlowOrder result;
  // (instruction, next successor to visit)
  std::vector<std::pair<size_t, int>> stack = {{0, 0}};
  state[0] = kOnPath;
  while (!stack.empty()) {
    auto& [i, next] = stack.back();
    size_t out[2];
    const int count = Successors(insns, i, out);
    if (next == count) {
      state[i] = kDone;
      result.order.push_back(i);
      stack.pop_back();
      continue;
    }
    const size_t target = out[next++];
    if (target >= n) continue;  // CheckSection refused such a flow
    if (state[target] == kOnPath) {
      result.loop = i;
      return result;
    }
    if (state[target] == kNew) {
      state[target] = kOnPath;
      stack.emplace_back(target, 0);
    }
  }
  std::reverse(result.order.begin(), result.order.end());
  return result;
}

// What is known at an instruction on every path to it: which registers, and
// which 8-byte stack slots, hold the context pointer unchanged.
struct PointerState {
  uint16_t registers = 0;
  uint64_t stack_slots = 0;
};

constexpr int kStackBytes = 512;

uint32_t AccessSize(uint8_t code) {
  switch (code & 0x18) {
    case 0x00:
      return 4;
    case 0x08:
      return 2;
    case 0x10:
      return 1;
    default:
      return 8;
  }
}

// librte_bpf's validator lets a program compute with its context pointer
// and then dereference the result, or pass a stack address where a helper
// expects the context (fuzzing found both): spinnic proves instead that
// every load and store goes through the frame pointer r10 or a register
// that holds the context pointer unchanged, within their bounds, and that
// every helper that takes the context gets it in r1.
absl::Status CheckPointers(absl::string_view name,
                           const std::vector<ebpf_insn>& insns,
                           const std::vector<size_t>& order) {
  std::vector<PointerState> in(insns.size());
  std::vector<bool> reached(insns.size(), false);
  in[0].registers = 1u << 1;  // r1: the context
  reached[0] = true;
  for (size_t i : order) {
    if (!reached[i]) continue;
    PointerState st = in[i];
    const ebpf_insn& insn = insns[i];
    const uint8_t cls = insn.code & 0x07;
    const uint8_t mode = insn.code & 0xe0;
    auto holds_context = [&](uint8_t reg) {
      return reg < 16 && (st.registers & (1u << reg)) != 0;
    };
    auto check_access = [&](uint8_t base, int16_t off,
                            uint32_t size) -> absl::Status {
      if (base == kStackRegister) {
        if (off < -kStackBytes || off + static_cast<int32_t>(size) > 0) {
          return Refuse(name, i,
                        absl::StrCat("stack access at r10", off,
                                     " outside the 512-byte stack"));
        }
        return absl::OkStatus();
      }
      if (holds_context(base)) {
        if (off < 0 ||
            off + static_cast<int64_t>(size) > int64_t{sizeof(spin_ctx)}) {
          return Refuse(
              name, i,
              absl::StrCat("context access at offset ", off, " outside its ",
                           sizeof(spin_ctx), " bytes"));
        }
        return absl::OkStatus();
      }
      return Refuse(name, i,
                    absl::StrCat("accesses memory through r", base,
                                 ", which holds neither the context nor "
                                 "the stack pointer; use the helpers"));
    };
    auto slot_of = [](int16_t off) { return (off + kStackBytes) / 8; };
    auto clobber_slots = [&](int16_t off, uint32_t size) {
      for (int16_t b = off; b < off + static_cast<int16_t>(size); b += 1) {
        st.stack_slots &= ~(uint64_t{1} << slot_of(b));
      }
    };
    switch (cls) {
      case 0x00:  // LD: only the 16-byte immediate load
        if (insn.code != kLdImm64) {
          return Refuse(name, i,
                        "packet loads by absolute offset are for socket "
                        "filters; use spin_pkt_load");
        }
        st.registers &= ~(1u << insn.dst_reg);
        break;
      case 0x01: {  // LDX
        if (mode != 0x60) return Refuse(name, i, "an unknown load mode");
        const uint32_t size = AccessSize(insn.code);
        if (absl::Status s = check_access(insn.src_reg, insn.off, size);
            !s.ok()) {
          return s;
        }
        const bool reload = insn.src_reg == kStackRegister && size == 8 &&
                            insn.off % 8 == 0 &&
                            (st.stack_slots >> slot_of(insn.off) & 1) != 0;
        if (reload) {
          st.registers |= 1u << insn.dst_reg;
        } else {
          st.registers &= ~(1u << insn.dst_reg);
        }
        break;
      }
      case 0x02:    // ST
      case 0x03: {  // STX (and atomic add)
        if (mode != 0x60 && !(cls == 0x03 && mode == 0xc0)) {
          return Refuse(name, i, "an unknown store mode");
        }
        const uint32_t size = AccessSize(insn.code);
        if (absl::Status s = check_access(insn.dst_reg, insn.off, size);
            !s.ok()) {
          return s;
        }
        if (insn.dst_reg == kStackRegister) {
          clobber_slots(insn.off, size);
          if (cls == 0x03 && mode == 0x60 && size == 8 && insn.off % 8 == 0 &&
              holds_context(insn.src_reg)) {
            st.stack_slots |= uint64_t{1} << slot_of(insn.off);  // a spill
          }
        }
        break;
      }
      case 0x04:    // ALU
      case 0x07: {  // ALU64
        if (insn.dst_reg == kStackRegister) {
          return Refuse(name, i, "writes the frame pointer r10");
        }
        const bool copy = insn.code == 0xbf;  // MOV64 from a register
        if (copy && holds_context(insn.src_reg)) {
          st.registers |= 1u << insn.dst_reg;
        } else {
          st.registers &= ~(1u << insn.dst_reg);
        }
        break;
      }
      case kClassJmp:
        if ((insn.code & 0xf0) == kOpCall) {
          const size_t helper = static_cast<size_t>(insn.imm);
          if (helper < Helpers().size() &&
              Helpers()[helper].func.args[0].type == RTE_BPF_ARG_PTR &&
              !holds_context(1)) {
            return Refuse(name, i,
                          absl::StrCat("calls ", Helpers()[helper].name,
                                       " without the context in r1"));
          }
          st.registers &= ~uint16_t{0x3f};  // r0-r5: results and scratch
        }
        break;
      default:
        return Refuse(name, i, "an unknown instruction class");
    }
    size_t next[2];
    const int count = Successors(insns, i, next);
    for (int k = 0; k < count; ++k) {
      const size_t j = next[k];
      if (j >= insns.size()) continue;
      if (!reached[j]) {
        in[j] = st;
        reached[j] = true;
      } else {
        in[j].registers &= st.registers;
        in[j].stack_slots &= st.stack_slots;
      }
    }
  }
  return absl::OkStatus();
}

// spinnic's own rules over one section's instructions; resolves calls to
// helper indices (what librte_bpf's EBPF_CALL imm means).
absl::Status CheckSection(absl::string_view name, std::vector<ebpf_insn>& insns,
                          const std::vector<Relocation>& relocations,
                          SectionReport* report) {
  if (insns.empty()) return Refuse(name, 0, "empty");
  if (insns.size() > SPIN_MAX_INSNS) {
    return Refuse(
        name, SPIN_MAX_INSNS,
        absl::StrCat(insns.size(), " instructions, more than ", SPIN_MAX_INSNS,
                     "; split the work or "
                     "simplify the handler"));
  }
  std::vector<const Relocation*> symbol(insns.size(), nullptr);
  for (const Relocation& relocation : relocations) {
    const uint64_t index = relocation.offset / sizeof(ebpf_insn);
    if (relocation.offset % sizeof(ebpf_insn) != 0 || index >= insns.size()) {
      return Refuse(name, index, "a relocation outside the section");
    }
    symbol[index] = &relocation;
  }
  // The second halves of 16-byte instructions: no jump may land there (the
  // JIT would run the constant as code).
  std::vector<bool> second_half(insns.size(), false);
  for (size_t i = 0; i < insns.size(); ++i) {
    if (insns[i].code == kLdImm64) {
      if (i + 1 == insns.size()) {
        return Refuse(name, i, "a 16-byte load cut off by the section's end");
      }
      second_half[++i] = true;
    }
  }
  int64_t lowest_stack = 0;
  for (size_t i = 0; i < insns.size(); ++i) {
    ebpf_insn& insn = insns[i];
    const uint8_t cls = insn.code & 0x07;
    if (insn.code == kLdImm64) {
      if (symbol[i] != nullptr) {
        return Refuse(name, i,
                      absl::StrCat("refers to `", symbol[i]->name,
                                   "`: global variables and maps are not "
                                   "supported; keep data in state memory "
                                   "(spin_state_*)"));
      }
      ++i;  // the second half of the 16-byte instruction
      continue;
    }
    if (cls == kClassJmp32) {
      return Refuse(name, i, "a 32-bit jump (eBPF v3); compile with -mcpu=v2");
    }
    if (cls == kClassJmp && (insn.code & 0xf0) == kOpCall) {
      if (symbol[i] != nullptr && symbol[i]->defined) {
        return Refuse(name, i,
                      absl::StrCat("calls `", symbol[i]->name,
                                   "`, a function of the program; declare it "
                                   "SPIN_INLINE"));
      }
      if (symbol[i] == nullptr) {
        return Refuse(name, i,
                      absl::StrCat("calls helper number ", insn.imm,
                                   "; only spin_bpf.h's helpers, by name"));
      }
      int index = FindHelper(symbol[i]->name);
      if (index < 0) {
        return Refuse(name, i,
                      absl::StrCat("calls `", symbol[i]->name,
                                   "`, which is not a spinnic helper "
                                   "(spin_bpf.h lists them)"));
      }
      insn.imm = index;
      insn.src_reg = 0;
      if (std::find(report->helpers.begin(), report->helpers.end(),
                    symbol[i]->name) == report->helpers.end()) {
        report->helpers.push_back(symbol[i]->name);
      }
      continue;
    }
    // Every instruction but exit and an unconditional jump goes on to the
    // next: the last one must not (librte_bpf's validator would read past
    // the program).
    const bool ends_flow = cls == kClassJmp && ((insn.code & 0xf0) == kOpExit ||
                                                (insn.code & 0xf0) == kOpJa);
    if (i + 1 == insns.size() && !ends_flow) {
      return Refuse(name, i,
                    "the section ends without exit; every path must return");
    }
    if (cls == kClassJmp && (insn.code & 0xf0) != kOpExit &&
        (insn.code & 0xf0) != kOpCall) {
      const int64_t target = static_cast<int64_t>(i) + 1 + insn.off;
      if (target < 0 || target >= static_cast<int64_t>(insns.size()) ||
          second_half[static_cast<size_t>(target)]) {
        return Refuse(name, i,
                      absl::StrCat("jumps to ", target,
                                   ", which is not the start of an "
                                   "instruction of this section"));
      }
    }
    const bool alu = cls == 0x04 || cls == 0x07;  // ALU, ALU64
    const uint8_t op = insn.code & 0xf0;
    const uint32_t width = cls == 0x07 ? 64 : 32;
    if (alu && (op == kOpLsh || op == kOpRsh || op == kOpArsh) &&
        (insn.code & kSourceRegister) == 0 &&
        static_cast<uint32_t>(insn.imm) >= width) {
      return Refuse(name, i,
                    absl::StrCat("shifts a ", width, "-bit value by ", insn.imm,
                                 " bits"));
    }
    if (alu && (op == kOpDiv || op == kOpMod) &&
        ((insn.code & kSourceRegister) != 0 || insn.imm == 0)) {
      return Refuse(name, i,
                    "divides by a value that may be zero; divide by a "
                    "non-zero constant, or shift");
    }
    // Loads and stores relative to the frame pointer size the stack.
    const bool load = cls == 0x01;                  // LDX
    const bool store = cls == 0x02 || cls == 0x03;  // ST, STX
    if ((load && insn.src_reg == kStackRegister) ||
        (store && insn.dst_reg == kStackRegister)) {
      lowest_stack = std::min<int64_t>(lowest_stack, insn.off);
    }
  }
  const FlowOrder flow = OrderFlow(insns);
  if (flow.loop.has_value()) {
    return Refuse(name, *flow.loop,
                  "jumps back into a loop; unroll it (#pragma unroll with a "
                  "constant bound)");
  }
  if (absl::Status s = CheckPointers(name, insns, flow.order); !s.ok()) {
    return s;
  }
  report->name = std::string(name);
  report->instructions = static_cast<uint32_t>(insns.size());
  report->stack_bytes = static_cast<uint32_t>(-lowest_stack);
  return absl::OkStatus();
}

// librte_bpf says why it refused a program only in its log: catch it.
class LogCapture {
 public:
  LogCapture() : previous_(rte_log_get_stream()) {
    stream_ = open_memstream(&buffer_, &size_);
    if (stream_ != nullptr) rte_openlog_stream(stream_);
  }
  ~LogCapture() {
    Finish();
    std::free(buffer_);
  }
  // What was logged, one line per message, without librte_bpf's prefixes.
  std::string Text() {
    Finish();
    std::vector<std::string> lines;
    for (absl::string_view line :
         absl::StrSplit(absl::string_view(buffer_ ? buffer_ : "", size_), '\n',
                        absl::SkipWhitespace())) {
      lines.emplace_back(absl::StripAsciiWhitespace(line));
    }
    return absl::StrJoin(lines, "; ");
  }

 private:
  void Finish() {
    if (stream_ == nullptr) return;
    rte_openlog_stream(previous_);
    std::fclose(stream_);
    stream_ = nullptr;
  }
  FILE* previous_;
  FILE* stream_ = nullptr;
  char* buffer_ = nullptr;
  size_t size_ = 0;
};

absl::Mutex g_log_mu;  // one capture at a time: the log stream is global

}  // namespace

absl::StatusOr<std::unique_ptr<BpfProgram>> BpfProgram::Load(
    std::span<const uint8_t> elf_bytes) {
  ElfFile elf(elf_bytes);
  if (absl::Status s = CheckHeader(elf.get()); !s.ok()) return s;
  std::unique_ptr<BpfProgram> program(new BpfProgram());
  Elf_Scn* section = nullptr;
  while ((section = elf_nextscn(elf.get(), section)) != nullptr) {
    const std::string name = SectionName(elf.get(), section);
    size_t stage = 0;
    while (stage < kSectionNames.size() && name != kSectionNames[stage]) {
      ++stage;
    }
    if (stage == kSectionNames.size()) continue;
    if (program->stages_[stage].bpf != nullptr) {
      return Refuse(name, 0, "defined twice; one function per section");
    }
    Elf_Data* data = elf_getdata(section, nullptr);
    if (data == nullptr || (data->d_size != 0 && data->d_buf == nullptr) ||
        data->d_size % sizeof(ebpf_insn) != 0) {
      return Refuse(name, 0, "not a whole number of instructions");
    }
    std::vector<ebpf_insn> insns(data->d_size / sizeof(ebpf_insn));
    if (!insns.empty()) std::memcpy(insns.data(), data->d_buf, data->d_size);
    absl::StatusOr<std::vector<Relocation>> relocations =
        Relocations(elf.get(), elf_ndxscn(section));
    if (!relocations.ok()) return relocations.status();
    if (absl::Status s =
            program->LoadStage(static_cast<Stage>(stage), insns, *relocations);
        !s.ok()) {
      return s;
    }
  }
  if (program->report_.sections.empty()) {
    return absl::InvalidArgumentError(
        "program: no handler section; define at least one of "
        "SPIN_HEADER, SPIN_PAYLOAD, SPIN_COMPLETION (spin_bpf.h)");
  }
  return program;
}

absl::StatusOr<std::unique_ptr<BpfProgram>> BpfProgram::LoadInstructions(
    std::span<const uint8_t> code) {
  std::vector<ebpf_insn> insns(code.size() / sizeof(ebpf_insn));
  if (!insns.empty()) {
    std::memcpy(insns.data(), code.data(), insns.size() * sizeof(ebpf_insn));
  }
  std::unique_ptr<BpfProgram> program(new BpfProgram());
  if (absl::Status s = program->LoadStage(Stage::kPayload, insns, {});
      !s.ok()) {
    return s;
  }
  return program;
}

absl::Status BpfProgram::LoadStage(Stage stage, std::vector<ebpf_insn>& insns,
                                   const std::vector<Relocation>& relocations) {
  const char* name = kSectionNames[static_cast<size_t>(stage)];
  SectionReport report;
  if (absl::Status s = CheckSection(name, insns, relocations, &report);
      !s.ok()) {
    return s;
  }
  rte_bpf_prm prm{};
  prm.ins = insns.data();
  prm.nb_ins = static_cast<uint32_t>(insns.size());
  prm.xsym = Helpers().data();
  prm.nb_xsym = static_cast<uint32_t>(Helpers().size());
  prm.prog_arg.type = RTE_BPF_ARG_PTR;
  prm.prog_arg.size = sizeof(spin_ctx);
  LoadedStage& loaded = stages_[static_cast<size_t>(stage)];
  {
    absl::MutexLock lock(&g_log_mu);
    LogCapture log;
    loaded.bpf = rte_bpf_load(&prm);
    if (loaded.bpf == nullptr) {
      const std::string why = log.Text();
      return absl::InvalidArgumentError(absl::StrCat(
          name, ": librte_bpf's validator refused it (",
          std::strerror(rte_errno), ")", why.empty() ? "" : ": ", why));
    }
  }
  rte_bpf_jit jit{};
  if (rte_bpf_get_jit(loaded.bpf, &jit) == 0 && jit.func != nullptr) {
    loaded.jit = jit.func;
  }
  report_.sections.push_back(std::move(report));
  report_.jit = true;
  for (const LoadedStage& s : stages_) {
    if (s.bpf != nullptr && s.jit == nullptr) report_.jit = false;
  }
  return absl::OkStatus();
}

BpfProgram::~BpfProgram() {
  for (LoadedStage& stage : stages_) {
    if (stage.bpf != nullptr) rte_bpf_destroy(stage.bpf);
  }
}

uint64_t BpfProgram::Run(Stage stage, void* ctx) const {
  const LoadedStage& loaded = stages_[static_cast<size_t>(stage)];
  return loaded.jit != nullptr ? loaded.jit(ctx)
                               : rte_bpf_exec(loaded.bpf, ctx);
}

std::string DescribeReport(const ProgramReport& report) {
  std::vector<std::string> parts;
  for (const SectionReport& s : report.sections) {
    parts.push_back(absl::StrCat(
        s.name, ": ", s.instructions, " instructions, stack ", s.stack_bytes,
        " B, helpers ",
        s.helpers.empty() ? "none" : absl::StrJoin(s.helpers, ", ")));
  }
  parts.push_back(report.jit ? "JIT" : "interpreter");
  return absl::StrJoin(parts, "; ");
}

}  // namespace spinnic::bpf
