#include "handlers/api/params.h"

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace spinnic {
namespace {

absl::StatusOr<uint64_t> ParseUint(absl::string_view text) {
  uint64_t value = 0;
  bool ok = false;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    ok = absl::SimpleHexAtoi(text.substr(2), &value);
  } else {
    ok = absl::SimpleAtoi(text, &value);
  }
  if (!ok) return absl::InvalidArgumentError("not an unsigned integer");
  return value;
}

absl::StatusOr<std::vector<uint8_t>> ParseHex(absl::string_view text) {
  if (text.size() % 2 != 0) {
    return absl::InvalidArgumentError(
        "hex bytes need an even number of digits");
  }
  std::vector<uint8_t> bytes;
  bytes.reserve(text.size() / 2);
  for (size_t i = 0; i < text.size(); i += 2) {
    uint32_t byte = 0;
    if (!absl::ascii_isxdigit(text[i]) || !absl::ascii_isxdigit(text[i + 1]) ||
        !absl::SimpleHexAtoi(text.substr(i, 2), &byte)) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", text.substr(i, 2), "' is not a hex byte"));
    }
    bytes.push_back(static_cast<uint8_t>(byte));
  }
  return bytes;
}

}  // namespace

absl::string_view ParamTypeName(ParamType type) {
  switch (type) {
    case ParamType::kUint:
      return "uint";
    case ParamType::kBool:
      return "bool";
    case ParamType::kString:
      return "string";
    case ParamType::kBytes:
      return "hex bytes";
  }
  return "unknown";
}

absl::StatusOr<HandlerParams> HandlerParams::Validate(
    std::span<const ParamSpec> schema,
    const absl::flat_hash_map<std::string, std::string>& given) {
  for (const auto& [name, unused] : given) {
    bool known = false;
    for (const ParamSpec& spec : schema) known |= spec.name == name;
    if (!known) {
      std::vector<absl::string_view> names;
      for (const ParamSpec& spec : schema) names.push_back(spec.name);
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown parameter '", name, "'; this handler takes: ",
          names.empty() ? "no parameters" : absl::StrJoin(names, ", ")));
    }
  }
  HandlerParams params;
  for (const ParamSpec& spec : schema) {
    auto it = given.find(spec.name);
    absl::string_view text;
    if (it != given.end()) {
      text = it->second;
    } else if (spec.required) {
      return absl::InvalidArgumentError(
          absl::StrCat("missing required parameter '", spec.name, "' (",
                       ParamTypeName(spec.type), "): ", spec.help));
    } else {
      text = spec.default_value;
    }
    Value value;
    value.text = std::string(text);
    auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter '", spec.name, "' = '", text, "': ", why, " (expected ",
          ParamTypeName(spec.type), ": ", spec.help, ")"));
    };
    switch (spec.type) {
      case ParamType::kUint: {
        absl::StatusOr<uint64_t> parsed = ParseUint(text);
        if (!parsed.ok()) return bad(parsed.status().message());
        if (*parsed < spec.min || *parsed > spec.max) {
          return bad(
              absl::StrCat("out of range [", spec.min, ", ", spec.max, "]"));
        }
        value.uint_value = *parsed;
        break;
      }
      case ParamType::kBool: {
        std::string lower = absl::AsciiStrToLower(text);
        if (lower == "true" || lower == "1") {
          value.bool_value = true;
        } else if (lower == "false" || lower == "0") {
          value.bool_value = false;
        } else {
          return bad("not a bool; write true or false");
        }
        break;
      }
      case ParamType::kString:
        break;
      case ParamType::kBytes: {
        absl::StatusOr<std::vector<uint8_t>> parsed = ParseHex(text);
        if (!parsed.ok()) return bad(parsed.status().message());
        value.bytes = *std::move(parsed);
        break;
      }
    }
    params.values_.emplace(spec.name, std::move(value));
  }
  return params;
}

const HandlerParams::Value& HandlerParams::Find(absl::string_view name) const {
  auto it = values_.find(name);
  // Handlers only ask for names in their own schema, which Validate() filled;
  // anything else is a handler bug worth stopping on in tests.
  if (it == values_.end()) std::abort();
  return it->second;
}

uint64_t HandlerParams::GetUint(absl::string_view name) const {
  return Find(name).uint_value;
}
bool HandlerParams::GetBool(absl::string_view name) const {
  return Find(name).bool_value;
}
const std::string& HandlerParams::GetString(absl::string_view name) const {
  return Find(name).text;
}
const std::vector<uint8_t>& HandlerParams::GetBytes(
    absl::string_view name) const {
  return Find(name).bytes;
}

}  // namespace spinnic
