#include "control/spinctl/args.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace spinnic::spinctl {
namespace {

const FlagSpec* FindSpec(absl::Span<const FlagSpec> specs,
                         absl::string_view name) {
  for (const FlagSpec& spec : specs) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool ParsedArgs::Has(absl::string_view name) const {
  return values_.find(name) != values_.end();
}

std::string ParsedArgs::String(absl::string_view name,
                               const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second.back();
}

uint64_t ParsedArgs::Uint(absl::string_view name, uint64_t fallback) const {
  auto it = uints_.find(name);
  return it == uints_.end() ? fallback : it->second;
}

bool ParsedArgs::Bool(absl::string_view name) const {
  auto it = values_.find(name);
  return it != values_.end() && it->second.back() == "true";
}

std::vector<std::string> ParsedArgs::List(absl::string_view name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>() : it->second;
}

absl::Status ParseFlags(absl::Span<const std::string> args,
                        absl::Span<const FlagSpec> specs,
                        bool stop_at_positional, size_t* consumed,
                        ParsedArgs* out) {
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      for (++i; i < args.size(); ++i) out->positional.push_back(args[i]);
      break;
    }
    // A lone "-" is an argument (stdin/stdout by convention), not a flag.
    if (!absl::StartsWith(arg, "-") || arg == "-") {
      if (stop_at_positional) break;
      out->positional.push_back(arg);
      continue;
    }
    // -h is the only short form: what people type when lost.
    absl::string_view body = arg == "-h" ? "help" : absl::string_view(arg);
    if (absl::StartsWith(body, "--")) {
      body.remove_prefix(2);
    } else if (body != "help") {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag '", arg, "': flags are written --name"));
    }
    absl::string_view name = body;
    std::string value;
    bool has_value = false;
    if (size_t eq = body.find('='); eq != absl::string_view::npos) {
      name = body.substr(0, eq);
      value = std::string(body.substr(eq + 1));
      has_value = true;
    }
    const FlagSpec* spec = FindSpec(specs, name);
    if (spec == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name));
    }
    if (spec->type == FlagType::kBool) {
      if (!has_value) {
        value = "true";
      } else if (value != "true" && value != "false") {
        return absl::InvalidArgumentError(absl::StrCat(
            "--", name, " takes no value, or =true / =false; got '", value,
            "'"));
      }
    } else if (!has_value) {
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--", name, " needs a value: --", name, " ", spec->value_name));
      }
      value = args[++i];
    }
    if (spec->type == FlagType::kUint) {
      absl::StatusOr<uint64_t> number =
          ParseUint(absl::StrCat("--", name), value, spec->max);
      if (!number.ok()) return number.status();
      out->uints_[std::string(name)] = *number;
    }
    std::vector<std::string>& values = out->values_[std::string(name)];
    if (spec->type != FlagType::kList) values.clear();
    values.push_back(std::move(value));
  }
  if (consumed != nullptr) *consumed = i;
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> ParseUint(absl::string_view what,
                                   absl::string_view text, uint64_t max) {
  uint64_t value = 0;
  bool ok;
  absl::string_view digits = text;
  if (absl::StartsWithIgnoreCase(digits, "0x")) {
    digits.remove_prefix(2);
    ok = !digits.empty() && absl::SimpleHexAtoi(digits, &value);
  } else {
    ok = !digits.empty() && absl::ascii_isdigit(digits[0]) &&
         absl::SimpleAtoi(digits, &value);
  }
  if (!ok) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": '", text,
                     "' is not a number (write decimal, or hex as 0x...)"));
  }
  if (value > max) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", text, " is above the maximum of ", max));
  }
  return value;
}

absl::StatusOr<std::string> ParseHex(absl::string_view what,
                                     absl::string_view text) {
  if (absl::StartsWithIgnoreCase(text, "0x")) text.remove_prefix(2);
  std::string bytes;
  int high = -1;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == ' ' || c == ':' || c == '\n' || c == '\t') {
      if (high >= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, ": a separator splits a byte at character ",
                         i + 1, "; write two hex digits per byte"));
      }
      continue;
    }
    int digit = HexDigit(c);
    if (digit < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": '", std::string(1, c), "' at character ", i + 1,
                       " is not a hex digit"));
    }
    if (high < 0) {
      high = digit;
    } else {
      bytes.push_back(static_cast<char>(high << 4 | digit));
      high = -1;
    }
  }
  if (high >= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": odd number of hex digits; write two per byte"));
  }
  return bytes;
}

}  // namespace spinnic::spinctl
