// spinctl bpf-check: runs spinnicd's own eBPF loader (handlers/bpf/
// bpf_program.h) on a program file, offline, and prints what it found: a
// table for people, or --json a spinnic.v1.BpfReport (proto/spinnic/v1/
// bpf.proto) through protobuf's JSON printer.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "control/spinctl/command.h"
#include "control/spinctl/table.h"
#include "handlers/bpf/bpf_program.h"
#include "spinnic/v1/bpf.pb.h"

namespace spinnic::spinctl {
namespace {

v1::BpfReport ToProto(const bpf::ProgramReport& report) {
  v1::BpfReport out;
  out.set_valid(true);
  out.set_jit(report.jit);
  for (const bpf::SectionReport& s : report.sections) {
    v1::BpfSection* section = out.add_sections();
    section->set_name(s.name);
    section->set_instructions(s.instructions);
    section->set_stack_bytes(s.stack_bytes);
    for (const std::string& h : s.helpers) section->add_helpers(h);
  }
  return out;
}

int RunBpfCheck(Env& env, const ParsedArgs& args) {
  const std::string& path = args.positional[0];
  absl::StatusOr<std::string> bytes = ReadFile(path);
  if (!bytes.ok()) return env.UsageError(bytes.status());
  absl::StatusOr<std::unique_ptr<bpf::BpfProgram>> program =
      bpf::BpfProgram::Load(
          {reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size()});
  if (!program.ok()) {
    if (env.json()) {
      v1::BpfReport refused;
      refused.set_valid(false);
      refused.set_error(std::string(program.status().message()));
      env.PrintJson(refused);
    } else {
      std::fprintf(stderr, "spinctl: %s: refused: %s\n", path.c_str(),
                   std::string(program.status().message()).c_str());
    }
    return kExitServerError;
  }
  const bpf::ProgramReport& report = (*program)->report();
  if (env.json()) {
    env.PrintJson(ToProto(report));
    return kExitOk;
  }
  std::printf("%s: valid, runs %s\n", path.c_str(),
              report.jit ? "JIT-compiled" : "in the interpreter");
  for (const bpf::SectionReport& s : report.sections) {
    if (!s.interpreter_reason.empty()) {
      std::printf("%s: interpreted: %s\n", s.name.c_str(),
                  s.interpreter_reason.c_str());
    }
  }
  Table table({"SECTION", "INSTRUCTIONS", "STACK", "HELPERS"});
  for (const bpf::SectionReport& s : report.sections) {
    table.AddRow({s.name, absl::StrCat(s.instructions),
                  absl::StrCat(s.stack_bytes),
                  s.helpers.empty() ? "-" : absl::StrJoin(s.helpers, ",")});
  }
  table.Print(stdout);
  return kExitOk;
}

}  // namespace

std::vector<Command> BpfCommands() {
  return {
      {"bpf-check",
       "FILE.o",
       1,
       1,
       "check an eBPF handler program as spinnicd would (no spinnicd needed)",
       {},
       "Runs spinnicd's loader on the ELF object clang made (clang -O2 "
       "-target\n"
       "bpf -mcpu=v2 -c prog.c): its rules (sections, instruction limit, no\n"
       "loops, spin_bpf.h's helpers only, no globals, no division by a\n"
       "register) and librte_bpf's validator, then the JIT. Prints each\n"
       "handler section with its instructions, stack bytes and helpers; exit\n"
       "1 with the section and instruction at fault when refused. --json\n"
       "prints a spinnic.v1.BpfReport (proto/spinnic/v1/bpf.proto).\n"
       "docs/bpf.md has the rules and the helpers.\n",
       &RunBpfCheck},
  };
}

}  // namespace spinnic::spinctl
