#include "handlers/bpf/bpf_program.h"

#include <bpf_def.h>
#include <gelf.h>
#include <libelf.h>
#include <rte_bpf.h>
#include <rte_errno.h>
#include <rte_log.h>

#include <algorithm>
#include <array>
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
// BPF_JMP | BPF_JSET | BPF_K. librte_bpf 22.11's x86 JIT mistranslates it:
// a near jump goes the wrong way, a far one lands inside another x86
// instruction (found by deep fuzzing; the interpreter and JSET with a
// register are right). A section with one runs on the interpreter.
constexpr uint8_t kJsetImmediate = 0x45;
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

constexpr int kStackBytes = 512;
constexpr uint8_t kRegisters = 11;  // r0..r10

// librte_bpf 22.11's validator follows every path from entry to exit, one
// at a time: a chain of n if-statements is 2^n paths, and 40 of them would
// hold an install (and the control plane's thread) for days. spinnic counts
// the paths first, in one pass, and refuses a program with too many. 2^16
// paths take librte_bpf about a second here; the examples have at most a
// few hundred.
constexpr uint64_t kMaxPaths = uint64_t{1} << 16;
constexpr uint64_t kManyPaths = uint64_t{1} << 62;  // counting saturates here

uint64_t CountPaths(const std::vector<ebpf_insn>& insns,
                    const std::vector<size_t>& order) {
  std::vector<uint64_t> paths(insns.size(), 0);  // from here to an exit
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    size_t next[2];
    const int count = Successors(insns, *it, next);
    uint64_t sum = count == 0 ? 1 : 0;
    for (int k = 0; k < count; ++k) {
      if (next[k] < insns.size()) {
        sum = std::min(kManyPaths, sum + paths[next[k]]);
      }
    }
    paths[*it] = sum;
  }
  return paths.empty() ? 0 : paths[0];
}

// What the loader knows of a register or an 8-byte stack slot on every path
// to an instruction.
struct Value {
  enum class Kind : uint8_t {
    kUnknown,
    kContext,       // the context pointer, unchanged
    kConstant,      // `number`
    kWindow,        // `number` bytes into a window of `size` bytes
    kWindowOrNull,  // a window helper's result not yet compared with 0
    kDerived,       // computed from an address: never dereferenced, stored
                    // outside the stack or passed to a helper
  };
  Kind kind = Kind::kUnknown;
  int64_t number = 0;
  uint32_t size = 0;
  bool operator==(const Value&) const = default;

  // Holds, or was computed from, an address.
  bool IsPointer() const {
    return kind == Kind::kContext || kind == Kind::kWindow ||
           kind == Kind::kWindowOrNull || kind == Kind::kDerived;
  }
};

Value Constant(int64_t number) { return {Value::Kind::kConstant, number, 0}; }

// On a path join: what holds on both paths.
Value Merge(const Value& a, const Value& b) {
  if (a == b) return a;
  auto window = [](const Value& v) {
    return v.kind == Value::Kind::kWindow ||
           v.kind == Value::Kind::kWindowOrNull;
  };
  if (window(a) && window(b) && a.number == b.number) {
    const bool maybe_null = a.kind == Value::Kind::kWindowOrNull ||
                            b.kind == Value::Kind::kWindowOrNull;
    return {maybe_null ? Value::Kind::kWindowOrNull : Value::Kind::kWindow,
            a.number, std::min(a.size, b.size)};
  }
  // An address on either path may be an address here.
  if (a.IsPointer() || b.IsPointer()) return {Value::Kind::kDerived, 0, 0};
  return {};
}

struct FlowState {
  std::array<Value, kRegisters> registers;
  std::array<Value, kStackBytes / 8> slots;

  void MergeFrom(const FlowState& other) {
    for (size_t r = 0; r < registers.size(); ++r) {
      registers[r] = Merge(registers[r], other.registers[r]);
    }
    for (size_t s = 0; s < slots.size(); ++s) {
      slots[s] = Merge(slots[s], other.slots[s]);
    }
  }
};

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

// One instruction's effect on what is known, and the checks it must pass.
class PointerProof {
 public:
  PointerProof(absl::string_view name, const std::vector<ebpf_insn>& insns)
      : name_(name), insns_(insns) {}

  // Every context byte an accepted instruction may touch.
  const ContextBytes& context_bytes() const { return context_bytes_; }

  // `st` holds at instruction `i`; on success it holds after it (on the
  // fall-through edge; `taken` on a conditional jump's other edge).
  absl::Status Step(size_t i, FlowState& st, FlowState& taken) {
    const ebpf_insn& insn = insns_[i];
    const uint8_t cls = insn.code & 0x07;
    const uint8_t mode = insn.code & 0xe0;
    if (insn.dst_reg >= kRegisters || insn.src_reg >= kRegisters) {
      return Refuse(name_, i, "names a register past r10");
    }
    Value& dst = st.registers[insn.dst_reg];
    const Value& src = st.registers[insn.src_reg];
    switch (cls) {
      case 0x00:  // LD: only the 16-byte immediate load
        if (insn.code != kLdImm64) {
          return Refuse(name_, i,
                        "packet loads by absolute offset are for socket "
                        "filters; use spin_pkt_ptr or spin_pkt_load");
        }
        dst = Constant(static_cast<int64_t>(
            static_cast<uint32_t>(insn.imm) |
            uint64_t{static_cast<uint32_t>(insns_[i + 1].imm)} << 32));
        return absl::OkStatus();
      case 0x01: {  // LDX
        if (mode != 0x60) return Refuse(name_, i, "an unknown load mode");
        const uint32_t size = AccessSize(insn.code);
        if (absl::Status s = CheckAccess(i, st, insn.src_reg, insn.off, size);
            !s.ok()) {
          return s;
        }
        // A whole slot reloads what was spilled there.
        const bool stack = insn.src_reg == kStackRegister;
        const bool reload = stack && size == 8 && insn.off % 8 == 0;
        if (reload) {
          dst = st.slots[SlotOf(insn.off)];
        } else if (stack && st.slots[SlotOf(insn.off)].IsPointer()) {
          dst = {Value::Kind::kDerived, 0, 0};  // part of a spilled address
        } else {
          dst = Value{};
        }
        return absl::OkStatus();
      }
      case 0x02:    // ST
      case 0x03: {  // STX (and atomic add)
        const bool atomic = cls == 0x03 && mode == 0xc0;
        if (mode != 0x60 && !atomic) {
          return Refuse(name_, i, "an unknown store mode");
        }
        const uint32_t size = AccessSize(insn.code);
        if (absl::Status s = CheckAccess(i, st, insn.dst_reg, insn.off, size);
            !s.ok()) {
          return s;
        }
        const bool spill = insn.dst_reg == kStackRegister;
        if (cls == 0x03 && src.IsPointer() && (!spill || atomic)) {
          return Refuse(name_, i,
                        absl::StrCat("stores the pointer in r", insn.src_reg,
                                     " where the program's user could read "
                                     "it; store values, not addresses"));
        }
        if (spill) {
          // Part of an address is an address's bits.
          const Value partial = cls == 0x03 && src.IsPointer()
                                    ? Value{Value::Kind::kDerived, 0, 0}
                                    : Value{};
          for (int32_t b = insn.off; b < insn.off + static_cast<int32_t>(size);
               b += 8 - ((b + kStackBytes) % 8)) {
            st.slots[SlotOf(b)] = partial;
          }
          if (cls == 0x03 && !atomic && size == 8 && insn.off % 8 == 0) {
            st.slots[SlotOf(insn.off)] = src;
          }
        }
        return absl::OkStatus();
      }
      case 0x04:    // ALU
      case 0x07: {  // ALU64
        if (insn.dst_reg == kStackRegister) {
          return Refuse(name_, i, "writes the frame pointer r10");
        }
        dst = Alu(insn, dst, src);
        return absl::OkStatus();
      }
      case kClassJmp:
        return Jump(i, st, taken);
      default:
        return Refuse(name_, i, "an unknown instruction class");
    }
  }

 private:
  static size_t SlotOf(int32_t off) { return (off + kStackBytes) / 8; }

  // librte_bpf's validator lets a program compute with its context pointer
  // and then dereference the result, or pass a stack address where a
  // helper expects the context (fuzzing found both): so every load and
  // store must go through the frame pointer r10, the context pointer
  // unchanged, or a window pointer compared with 0, inside their bounds.
  absl::Status CheckAccess(size_t i, const FlowState& st, uint8_t base,
                           int16_t off, uint32_t size) {
    if (base == kStackRegister) {
      if (off < -kStackBytes || off + static_cast<int32_t>(size) > 0) {
        return Refuse(name_, i,
                      absl::StrCat("stack access at r10", off,
                                   " outside the 512-byte stack"));
      }
      return absl::OkStatus();
    }
    const Value& v = st.registers[base];
    switch (v.kind) {
      case Value::Kind::kContext:
        if (off < 0 ||
            off + static_cast<int64_t>(size) > int64_t{sizeof(spin_ctx)}) {
          return Refuse(
              name_, i,
              absl::StrCat("context access at offset ", off, " outside its ",
                           sizeof(spin_ctx), " bytes"));
        }
        for (uint32_t b = 0; b < size; ++b) context_bytes_.set(off + b);
        return absl::OkStatus();
      case Value::Kind::kWindow: {
        const int64_t at = v.number + off;
        if (at < 0 || at + size > v.size) {
          return Refuse(
              name_, i,
              absl::StrCat("accesses bytes ", at, "..", at + size - 1, " of a ",
                           v.size, "-byte window (r", base,
                           "); ask spin_pkt_ptr/spin_state_ptr for more"));
        }
        return absl::OkStatus();
      }
      case Value::Kind::kWindowOrNull:
        return Refuse(name_, i,
                      absl::StrCat("dereferences r", base,
                                   " before comparing it with 0; a window "
                                   "helper returns 0 when the bytes are "
                                   "not there"));
      default:
        return Refuse(name_, i,
                      absl::StrCat("accesses memory through r", base,
                                   ", which holds no pointer the loader "
                                   "can prove (the context, the stack, a "
                                   "window at a constant offset); use the "
                                   "helpers for variable offsets"));
    }
  }

  static Value Alu(const ebpf_insn& insn, const Value& dst, const Value& src) {
    const uint8_t op = insn.code & 0xf0;
    // NEG has no operand; END's source bit picks the byte order, not a
    // register.
    constexpr uint8_t kNeg = 0x80, kEnd = 0xd0;
    const bool unary = op == kNeg || op == kEnd;
    const Value operand = unary ? Value{}
                          : (insn.code & kSourceRegister) != 0
                              ? src
                              : Constant(insn.imm);
    const Value result = AluOnKnown(insn, dst, operand);
    // Arithmetic on an address yields an address's bits: tracked, so that
    // they reach no memory the user reads and no helper.
    constexpr uint8_t kMov = 0xb0;
    const bool reads_dst = op != kMov;
    if (result.kind == Value::Kind::kUnknown &&
        (operand.IsPointer() || (reads_dst && dst.IsPointer()))) {
      return {Value::Kind::kDerived, 0, 0};
    }
    return result;
  }

  static Value AluOnKnown(const ebpf_insn& insn, const Value& dst,
                          const Value& operand) {
    const bool alu64 = (insn.code & 0x07) == 0x07;
    const uint8_t op = insn.code & 0xf0;
    constexpr uint8_t kAdd = 0x00, kSub = 0x10, kMov = 0xb0;
    if (op == kMov) {
      if (alu64) return operand;
      if (operand.kind == Value::Kind::kConstant) {
        return Constant(static_cast<uint32_t>(operand.number));
      }
      return {};
    }
    if (!alu64) return {};
    // A window moved by a constant stays a window; its bounds are checked
    // at every access.
    if (op == kAdd || op == kSub) {
      const int64_t sign = op == kAdd ? 1 : -1;
      if (dst.kind == Value::Kind::kWindow &&
          operand.kind == Value::Kind::kConstant) {
        return {Value::Kind::kWindow, dst.number + sign * operand.number,
                dst.size};
      }
      if (op == kAdd && dst.kind == Value::Kind::kConstant &&
          operand.kind == Value::Kind::kWindow) {
        return {Value::Kind::kWindow, operand.number + dst.number,
                operand.size};
      }
      if (dst.kind == Value::Kind::kConstant &&
          operand.kind == Value::Kind::kConstant) {
        return Constant(dst.number + sign * operand.number);
      }
    }
    return {};
  }

  absl::Status Jump(size_t i, FlowState& st, FlowState& taken) const {
    const ebpf_insn& insn = insns_[i];
    const uint8_t op = insn.code & 0xf0;
    if (op == kOpCall) return Call(i, st);
    taken = st;
    // The one comparison that proves a window: with 0.
    constexpr uint8_t kJeq = 0x10, kJne = 0x50;
    Value& v = st.registers[insn.dst_reg];
    if ((op == kJeq || op == kJne) && (insn.code & kSourceRegister) == 0 &&
        insn.imm == 0 && v.kind == Value::Kind::kWindowOrNull) {
      const Value window = {Value::Kind::kWindow, v.number, v.size};
      Value& on_taken = taken.registers[insn.dst_reg];
      if (op == kJeq) {
        on_taken = Constant(0);
        v = window;
      } else {
        on_taken = window;
        v = Constant(0);
      }
    }
    return absl::OkStatus();
  }

  absl::Status Call(size_t i, FlowState& st) const {
    const size_t helper = static_cast<size_t>(insns_[i].imm);
    if (helper >= Helpers().size()) {
      return absl::OkStatus();  // CheckSection resolved every call
    }
    const rte_bpf_xsym& x = Helpers()[helper];
    if (x.func.nb_args > 0 && x.func.args[0].type == RTE_BPF_ARG_PTR &&
        st.registers[1].kind != Value::Kind::kContext) {
      return Refuse(
          name_, i,
          absl::StrCat("calls ", x.name, " without the context in r1"));
    }
    for (uint32_t a = 0; a < x.func.nb_args; ++a) {
      if (a == 0 && x.func.args[0].type == RTE_BPF_ARG_PTR) continue;
      if (st.registers[1 + a].IsPointer()) {
        return Refuse(name_, i,
                      absl::StrCat("passes the pointer in r", 1 + a, " to ",
                                   x.name, "; pass values, not addresses"));
      }
    }
    Value result;
    if (ReturnsWindow(helper)) {
      const Value& length = st.registers[kWindowLengthRegister];
      if (length.kind != Value::Kind::kConstant || length.number <= 0 ||
          length.number > SPIN_WINDOW_MAX) {
        return Refuse(
            name_, i,
            absl::StrCat(x.name, "'s length must be a constant 1..",
                         SPIN_WINDOW_MAX,
                         " (the loader proves every access stays inside it)"));
      }
      result = {Value::Kind::kWindowOrNull, 0,
                static_cast<uint32_t>(length.number)};
    }
    for (uint8_t r = 0; r <= 5; ++r) st.registers[r] = Value{};
    st.registers[0] = result;
    return absl::OkStatus();
  }

  absl::string_view name_;
  const std::vector<ebpf_insn>& insns_;
  ContextBytes context_bytes_;
};
static_assert(sizeof(spin_ctx) <= ContextBytes().size(),
              "ContextBytes has a bit per context byte");

// Runs PointerProof over the instructions in topological order (there are
// no loops), joining what is known where paths meet.
absl::Status CheckPointers(absl::string_view name,
                           const std::vector<ebpf_insn>& insns,
                           const std::vector<size_t>& order,
                           ContextBytes* context_bytes) {
  std::vector<std::optional<FlowState>> in(insns.size());
  in[0].emplace();
  in[0]->registers[1].kind = Value::Kind::kContext;
  // The frame pointer is an address: a copy of it is never dereferenced
  // (stack accesses go through r10 itself), stored or passed.
  in[0]->registers[kStackRegister].kind = Value::Kind::kDerived;
  PointerProof proof(name, insns);
  for (size_t i : order) {
    if (!in[i].has_value()) continue;
    FlowState st = *in[i];
    FlowState taken;
    if (absl::Status s = proof.Step(i, st, taken); !s.ok()) return s;
    size_t next[2];
    const int count = Successors(insns, i, next);
    const bool conditional =
        count == 2;  // next[0] is the jump's target, next[1] falls through
    for (int k = 0; k < count; ++k) {
      const size_t j = next[k];
      if (j >= insns.size()) continue;
      const FlowState& out = (conditional && k == 0) ? taken : st;
      if (!in[j].has_value()) {
        in[j] = out;
      } else {
        in[j]->MergeFrom(out);
      }
    }
  }
  *context_bytes = proof.context_bytes();
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
  // Every instruction but exit and an unconditional jump goes on to the
  // next, a 16-byte load and a call too: the last one must be exit or a
  // jump (librte_bpf's validator would read past the program; the fuzz
  // target found both a load and a call there).
  {
    const size_t last = insns.size() - 1;
    const uint8_t op = insns[last].code & 0xf0;
    const bool ends_flow = !second_half[last] &&
                           (insns[last].code & 0x07) == kClassJmp &&
                           (op == kOpExit || op == kOpJa);
    if (!ends_flow) {
      return Refuse(name, second_half[last] ? last - 1 : last,
                    "the section ends without exit; every path must return");
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
  if (const uint64_t paths = CountPaths(insns, flow.order); paths > kMaxPaths) {
    return Refuse(
        name, 0,
        absl::StrCat(paths >= kManyPaths ? "more than " : "", paths,
                     " paths from entry to exit, more than ", kMaxPaths,
                     "; librte_bpf's validator walks each one. Branch less: "
                     "leave an unrolled loop with `break` or return early "
                     "instead of an if per iteration, compute min/max "
                     "without branches"));
  }
  if (absl::Status s =
          CheckPointers(name, insns, flow.order, &report->context_bytes);
      !s.ok()) {
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
  const bool jit_safe = std::none_of(
      insns.begin(), insns.end(),
      [](const ebpf_insn& insn) { return insn.code == kJsetImmediate; });
  rte_bpf_jit jit{};
  if (jit_safe && rte_bpf_get_jit(loaded.bpf, &jit) == 0 &&
      jit.func != nullptr) {
    loaded.jit = jit.func;
  }
  report.interpreter_reason =
      jit_safe ? ""
               : "jset with an immediate, which librte_bpf 22.11's JIT "
                 "mistranslates";
  loaded.context_bytes = report.context_bytes;
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

uint64_t BpfProgram::Interpret(const LoadedStage& stage, void* ctx) {
  return rte_bpf_exec(stage.bpf, ctx);
}

std::string DescribeReport(const ProgramReport& report) {
  std::vector<std::string> parts;
  for (const SectionReport& s : report.sections) {
    parts.push_back(absl::StrCat(
        s.name, ": ", s.instructions, " instructions, stack ", s.stack_bytes,
        " B, helpers ",
        s.helpers.empty() ? "none" : absl::StrJoin(s.helpers, ", ")));
  }
  std::string runtime = report.jit ? "JIT" : "interpreter";
  for (const SectionReport& s : report.sections) {
    if (!s.interpreter_reason.empty()) {
      absl::StrAppend(&runtime, " (", s.name, ": ", s.interpreter_reason, ")");
    }
  }
  parts.push_back(std::move(runtime));
  return absl::StrJoin(parts, "; ");
}

}  // namespace spinnic::bpf
