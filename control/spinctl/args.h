// spinctl's command-line parsing: a small per-subcommand flag parser.
//
// Not absl flags: those are process-global, while each spinctl subcommand has
// its own flags (`--length` of region-read is not `--length` of state), and
// usage errors must name the subcommand. Both `--flag value` and
// `--flag=value` work; a boolean flag takes no value (`--raw`) or an explicit
// `--raw=true|false`; `--` ends the flags.
#ifndef SPINNIC_CONTROL_SPINCTL_ARGS_H_
#define SPINNIC_CONTROL_SPINCTL_ARGS_H_

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace spinnic::spinctl {

enum class FlagType {
  kString,
  kUint,  // decimal, or hex with 0x; checked against FlagSpec::max
  kBool,
  kList,  // a string that may be given several times
};

struct FlagSpec {
  absl::string_view name;  // without the leading --
  FlagType type;
  absl::string_view value_name;  // for usage text, e.g. "N", "PATH"
  absl::string_view help;
  uint64_t max = std::numeric_limits<uint64_t>::max();
};

class ParsedArgs {
 public:
  bool Has(absl::string_view name) const;
  // The last value given, or `fallback`.
  std::string String(absl::string_view name,
                     const std::string& fallback = "") const;
  uint64_t Uint(absl::string_view name, uint64_t fallback = 0) const;
  bool Bool(absl::string_view name) const;
  std::vector<std::string> List(absl::string_view name) const;

  std::vector<std::string> positional;

 private:
  friend absl::Status ParseFlags(absl::Span<const std::string> args,
                                 absl::Span<const FlagSpec> specs,
                                 bool stop_at_positional, size_t* consumed,
                                 ParsedArgs* out);
  std::map<std::string, std::vector<std::string>, std::less<>> values_;
  std::map<std::string, uint64_t, std::less<>> uints_;
};

// Parses `args` into `out`, adding to what it holds. With
// `stop_at_positional`, stops at the first argument that is not a flag and
// sets `*consumed` to its index; otherwise positional arguments are collected
// in `out->positional` wherever they appear. INVALID_ARGUMENT names the flag
// and what to write instead.
absl::Status ParseFlags(absl::Span<const std::string> args,
                        absl::Span<const FlagSpec> specs,
                        bool stop_at_positional, size_t* consumed,
                        ParsedArgs* out);

// "123" or "0x7b"; INVALID_ARGUMENT (naming `what`) when not a number or
// above `max`.
absl::StatusOr<uint64_t> ParseUint(absl::string_view what,
                                   absl::string_view text,
                                   uint64_t max = UINT64_MAX);

// Hex text to bytes: "0a0b", "0x0a0b", "0a 0b", "0a:0b" all give {0x0a,
// 0x0b}.
absl::StatusOr<std::string> ParseHex(absl::string_view what,
                                     absl::string_view text);

}  // namespace spinnic::spinctl

#endif  // SPINNIC_CONTROL_SPINCTL_ARGS_H_
