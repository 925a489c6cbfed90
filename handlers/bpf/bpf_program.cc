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
namespace {

constexpr uint8_t kClassJmp = 0x05;
constexpr uint8_t kClassJmp32 = 0x06;
constexpr uint8_t kOpCall = 0x80;
constexpr uint8_t kOpExit = 0x90;
constexpr uint8_t kLdImm64 = 0x18;
constexpr uint8_t kOpDiv = 0x30;
constexpr uint8_t kOpMod = 0x90;
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
struct Relocation {
  uint64_t offset;  // of the instruction it patches, in bytes
  std::string name;
  bool defined;  // in this object (a function or section of the program)
};

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

// The jump at the end of a cycle of the control flow graph (a loop), if
// any. Clang places shared tails before the code that jumps to them, so a
// backward jump alone is no loop: only a jump back to an instruction still
// on the depth-first path is.
std::optional<size_t> FindLoop(const std::vector<ebpf_insn>& insns) {
  const size_t n = insns.size();
  auto successors = [&](size_t i, size_t out[2]) -> int {
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
    const size_t target =
        static_cast<size_t>(static_cast<int64_t>(i) + 1 + insn.off);
    out[0] = target;
    if (op == 0x00) return 1;  // BPF_JA: unconditional
    out[1] = i + 1;
    return 2;
  };
  enum : uint8_t { kNew, kOnPath, kDone };
  std::vector<uint8_t> state(n, kNew);
  // (instruction, next successor to visit)
  std::vector<std::pair<size_t, int>> stack = {{0, 0}};
  state[0] = kOnPath;
  while (!stack.empty()) {
    auto& [i, next] = stack.back();
    size_t out[2];
    const int count = successors(i, out);
    if (next == count) {
      state[i] = kDone;
      stack.pop_back();
      continue;
    }
    const size_t target = out[next++];
    if (target >= n) continue;  // off the end: librte_bpf refuses it
    if (state[target] == kOnPath) return i;
    if (state[target] == kNew) {
      state[target] = kOnPath;
      stack.emplace_back(target, 0);
    }
  }
  return std::nullopt;
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
    const bool alu = cls == 0x04 || cls == 0x07;  // ALU, ALU64
    const uint8_t op = insn.code & 0xf0;
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
  if (std::optional<size_t> loop = FindLoop(insns); loop.has_value()) {
    return Refuse(name, *loop,
                  "jumps back into a loop; unroll it (#pragma unroll with a "
                  "constant bound)");
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
    if (data == nullptr || data->d_size % sizeof(ebpf_insn) != 0) {
      return Refuse(name, 0, "not a whole number of instructions");
    }
    std::vector<ebpf_insn> insns(data->d_size / sizeof(ebpf_insn));
    if (!insns.empty()) std::memcpy(insns.data(), data->d_buf, data->d_size);
    absl::StatusOr<std::vector<Relocation>> relocations =
        Relocations(elf.get(), elf_ndxscn(section));
    if (!relocations.ok()) return relocations.status();
    SectionReport report;
    if (absl::Status s = CheckSection(name, insns, *relocations, &report);
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
    LoadedStage& loaded = program->stages_[stage];
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
    program->report_.sections.push_back(std::move(report));
  }
  if (program->report_.sections.empty()) {
    return absl::InvalidArgumentError(
        "program: no handler section; define at least one of "
        "SPIN_HEADER, SPIN_PAYLOAD, SPIN_COMPLETION (spin_bpf.h)");
  }
  program->report_.jit = true;
  for (const LoadedStage& stage : program->stages_) {
    if (stage.bpf != nullptr && stage.jit == nullptr) {
      program->report_.jit = false;
    }
  }
  return program;
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
