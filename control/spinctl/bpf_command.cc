// spinctl bpf-check: runs spinnicd's own eBPF loader (handlers/bpf/
// bpf_program.h) on a program file, offline, and prints what it found.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "control/spinctl/command.h"
#include "control/spinctl/table.h"
#include "handlers/bpf/bpf_program.h"

namespace spinnic::spinctl {
namespace {

std::string JsonString(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out.push_back('\\');
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out.push_back(c);
  }
  return out + "\"";
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
      std::printf("{\"valid\":false,\"error\":%s}\n",
                  JsonString(std::string(program.status().message())).c_str());
    } else {
      std::fprintf(stderr, "spinctl: %s: refused: %s\n", path.c_str(),
                   std::string(program.status().message()).c_str());
    }
    return kExitServerError;
  }
  const bpf::ProgramReport& report = (*program)->report();
  if (env.json()) {
    std::vector<std::string> sections;
    for (const bpf::SectionReport& s : report.sections) {
      std::vector<std::string> helpers;
      for (const std::string& h : s.helpers) helpers.push_back(JsonString(h));
      sections.push_back(absl::StrCat("{\"name\":", JsonString(s.name),
                                      ",\"instructions\":", s.instructions,
                                      ",\"stack_bytes\":", s.stack_bytes,
                                      ",\"helpers\":[",
                                      absl::StrJoin(helpers, ","), "]}"));
    }
    std::printf("{\"valid\":true,\"jit\":%s,\"sections\":[%s]}\n",
                report.jit ? "true" : "false",
                absl::StrJoin(sections, ",").c_str());
    return kExitOk;
  }
  std::printf("%s: valid, runs %s\n", path.c_str(),
              report.jit ? "JIT-compiled" : "in the interpreter");
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
       "1 with the section and instruction at fault when refused.\n"
       "docs/bpf.md has the rules and the helpers.\n",
       &RunBpfCheck},
  };
}

}  // namespace spinnic::spinctl
