#include "control/config_check.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"

namespace spinnic::config_internal {

using google::protobuf::FieldDescriptor;
using google::protobuf::TextFormat;

namespace {

constexpr absl::string_view kCommandLine = "command line";

}  // namespace

std::string Quote(absl::string_view text) {
  return absl::StrCat("\"", absl::CHexEscape(text), "\"");
}

std::string OneLine(absl::string_view text) {
  return absl::StrReplaceAll(text, {{"\r", "\\r"}, {"\n", "\\n"}});
}

std::string FieldPath::ToString() const {
  std::string out;
  for (const PathStep& step : steps_) {
    if (!out.empty()) out += '.';
    absl::StrAppend(&out, step.field->name());
    if (step.has_key) {
      absl::StrAppend(&out, "[", Quote(step.key), "]");
    } else if (step.field->is_repeated() && step.index >= 0) {
      absl::StrAppend(&out, "[", step.index, "]");
    }
  }
  return out;
}

TextFormat::ParseLocation FieldPath::Find(
    const TextFormat::ParseInfoTree* tree) const {
  TextFormat::ParseLocation best;
  for (const PathStep& step : steps_) {
    if (tree == nullptr) break;
    const FieldDescriptor* field = step.field;
    // Singular fields are indexed -1; a whole repeated field is found at
    // its first occurrence; a map entry whose text position is unknown
    // has no location of its own.
    if (step.has_key && step.index < 0) break;
    int index = field->is_repeated() ? std::max(step.index, 0) : -1;
    TextFormat::ParseLocation here = tree->GetLocation(field, index);
    // `workers: [1, 2, 3]` records one location for the whole list: an
    // element without its own is in the nearest list before it.
    for (int i = index - 1; here.line < 0 && i >= 0; --i) {
      here = tree->GetLocation(field, i);
    }
    if (here.line >= 0) best = here;
    if (field->type() != FieldDescriptor::TYPE_MESSAGE ||
        (field->is_repeated() && step.index < 0)) {
      break;
    }
    tree = tree->GetTreeForNested(field, index);
  }
  return best;
}

FieldPath FieldPath::Step(absl::string_view name, int index,
                          const std::string* key) const {
  const FieldDescriptor* field =
      type_ == nullptr ? nullptr : type_->FindFieldByName(std::string(name));
  // Paths are spelled in the config checks; a wrong one is a bug the unit tests
  // hit at once.
  if (field == nullptr) {
    std::fprintf(stderr, "config_loader: no field %s in %s\n",
                 std::string(name).c_str(),
                 type_ == nullptr ? "(scalar)" : type_->full_name().c_str());
    std::abort();
  }
  FieldPath next = *this;
  next.steps_.push_back(PathStep{field, index, key != nullptr,
                                 key != nullptr ? *key : std::string()});
  next.type_ = field->message_type();
  if (field->is_map()) {
    next.type_ =
        field->message_type()->FindFieldByName("value")->message_type();
  }
  return next;
}

absl::Status Reporter::Error(const FieldPath& path,
                             absl::string_view message) const {
  std::string where = path.ToString();
  std::string prefix;
  if (locations_ != nullptr) {
    std::string source = locations_->source_name().empty()
                             ? std::string("config")
                             : locations_->source_name();
    if (locations_->IsOverridden(where)) {
      prefix = absl::StrCat(kCommandLine, ": ");
    } else {
      TextFormat::ParseLocation at = path.Find(locations_->tree());
      prefix = at.line >= 0 ? absl::StrCat(source, ":", at.line + 1, ":",
                                           at.column + 1, ": ")
                            : absl::StrCat(source, ": ");
    }
  }
  return absl::InvalidArgumentError(
      OneLine(absl::StrCat(prefix, where, ": ", message)));
}

std::string WhereElse(const Reporter& reporter, const FieldPath& other) {
  int line = reporter.Line(other);
  return line > 0 ? absl::StrCat(other.ToString(), " on line ", line)
                  : other.ToString();
}

bool IsNameChar(char c, bool allow_dot) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' ||
         c == '-' || (allow_dot && c == '.');
}

// "" when `name` is fine, else what is wrong with it.
std::string CheckName(absl::string_view name, size_t max_length,
                      bool allow_dot) {
  absl::string_view allowed = allow_dot ? "letters, digits, '_', '-' and '.'"
                                        : "letters, digits, '_' and '-'";
  for (char c : name) {
    if (!IsNameChar(c, allow_dot)) {
      return absl::StrCat(Quote(name), " contains ",
                          Quote(absl::string_view(&c, 1)), "; use only ",
                          allowed);
    }
  }
  if (name.size() > max_length) {
    return absl::StrCat(Quote(name), " is ", name.size(),
                        " characters long; use at most ", max_length);
  }
  return "";
}

std::string PortNameList(const v1::Config& config) {
  std::vector<std::string> names;
  for (const v1::Port& port : config.ports()) {
    if (!port.name().empty()) names.push_back(port.name());
  }
  return names.empty() ? std::string("(no named ports)")
                       : absl::StrJoin(names, ", ");
}

bool ParseHexField(absl::string_view text, size_t min_digits, size_t max_digits,
                   uint32_t max_value, uint32_t* out) {
  if (text.size() < min_digits || text.size() > max_digits) return false;
  for (char c : text) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return absl::SimpleHexAtoi(text, out) && *out <= max_value;
}

bool ParseMac(absl::string_view text, std::array<uint8_t, 6>* mac) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
  if (parts.size() != 6) return false;
  for (size_t i = 0; i < 6; ++i) {
    uint32_t byte = 0;
    if (!ParseHexField(parts[i], 2, 2, 0xff, &byte)) return false;
    (*mac)[i] = static_cast<uint8_t>(byte);
  }
  return true;
}

bool IsPowerOfTwo(uint32_t value) {
  return value != 0 && (value & (value - 1)) == 0;
}

bool ParseNode(const std::string& text, std::array<uint8_t, 16>* node) {
  in6_addr v6;
  if (absl::StrContains(text, '/') ||
      inet_pton(AF_INET6, text.c_str(), &v6) != 1) {
    return false;
  }
  std::memcpy(node->data(), v6.s6_addr, 16);
  return true;
}

}  // namespace spinnic::config_internal
