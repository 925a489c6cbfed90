// Parsing spinnicd's config text (config_loader.h: ParseConfigText,
// ParseConfigFile) and where its fields are (ConfigLocations).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "control/config_check.h"
#include "control/config_loader.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace spinnic {
namespace {

using config_internal::FieldPath;
using config_internal::OneLine;
using config_internal::Reporter;
using google::protobuf::Descriptor;
using google::protobuf::EnumDescriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::FileDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using google::protobuf::TextFormat;

constexpr size_t kMaxConfigBytes = 16u << 20;

// Adds what protobuf's message leaves out: the names that would be right.
std::string SyntaxHint(const std::string& message) {
  const google::protobuf::DescriptorPool* pool =
      google::protobuf::DescriptorPool::generated_pool();
  if (absl::StrContains(message, "has no field named")) {
    // Message type "spinnic.v1.Port" has no field named "nme".
    std::vector<std::string> parts = absl::StrSplit(message, '"');
    if (parts.size() >= 2) {
      if (const Descriptor* type = pool->FindMessageTypeByName(parts[1])) {
        std::vector<std::string> fields;
        for (int i = 0; i < type->field_count(); ++i) {
          fields.push_back(type->field(i)->name());
        }
        return absl::StrCat(" The fields of ", type->name(),
                            " are: ", absl::StrJoin(fields, ", "),
                            " (docs/config.md).");
      }
    }
  }
  if (absl::StrContains(message, "Unknown enumeration value")) {
    // Unknown enumeration value of "X" for field "role".
    std::vector<std::string> parts = absl::StrSplit(message, '"');
    const FileDescriptor* file = v1::Config::descriptor()->file();
    if (parts.size() >= 4) {
      for (int m = 0; m < file->message_type_count(); ++m) {
        const FieldDescriptor* field =
            file->message_type(m)->FindFieldByName(parts[3]);
        if (field == nullptr || field->enum_type() == nullptr) continue;
        const EnumDescriptor* type = field->enum_type();
        std::vector<std::string> values;
        for (int i = 0; i < type->value_count(); ++i) {
          if (type->value(i)->number() != 0) {
            values.push_back(type->value(i)->name());
          }
        }
        return absl::StrCat(" Write one of: ", absl::StrJoin(values, ", "),
                            ".");
      }
    }
  }
  if (absl::StrContains(message, "another member of oneof")) {
    return " Keep only one of them.";
  }
  if (absl::StrContains(message, "is specified multiple times")) {
    return " Write it once (merge the two).";
  }
  if (absl::EndsWith(message, "got: ")) {
    return "end of file (is a '}' missing?)";
  }
  return "";
}

class NullErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int, google::protobuf::io::ColumnNumber,
                const std::string&) override {}
};

// For errors about a name protobuf has already read (unknown field, enum
// value, a field given twice), its position is the token after the name,
// which may be on the next line. The start of the token before (line,
// column) is where the operator has to look.
void MoveToPreviousToken(absl::string_view text, int* line, int* column) {
  google::protobuf::io::ArrayInputStream input(text.data(),
                                               static_cast<int>(text.size()));
  NullErrorCollector ignore;
  google::protobuf::io::Tokenizer tokenizer(&input, &ignore);
  tokenizer.set_comment_style(
      google::protobuf::io::Tokenizer::SH_COMMENT_STYLE);
  int prev_line = -1;
  int prev_column = -1;
  while (tokenizer.Next()) {
    const google::protobuf::io::Tokenizer::Token& token = tokenizer.current();
    if (token.line > *line ||
        (token.line == *line && token.column >= *column)) {
      break;
    }
    prev_line = token.line;
    prev_column = token.column;
  }
  if (prev_line >= 0) {
    *line = prev_line;
    *column = prev_column;
  }
}

class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (has_error_) return;
    has_error_ = true;
    line_ = line;
    column_ = column;
    message_ = message;
  }
  // Protobuf warns about nothing a spinnic config can contain; a warning is
  // not a failure either way.
  void AddWarning(int, google::protobuf::io::ColumnNumber,
                  const std::string&) override {}

  bool has_error() const { return has_error_; }
  std::string Format(absl::string_view source, absl::string_view text) const {
    int line = line_;
    int column = column_;
    if (line >= 0 &&
        (absl::StrContains(message_, "has no field named") ||
         absl::StrContains(message_, "Unknown enumeration value") ||
         absl::StrContains(message_, "another member of oneof") ||
         absl::StrContains(message_, "is specified multiple times"))) {
      MoveToPreviousToken(text, &line, &column);
    }
    std::string where =
        line >= 0 ? absl::StrCat(source, ":", line + 1, ":", column + 1)
                  : std::string(source);
    return OneLine(absl::StrCat(where, ": ", message_, SyntaxHint(message_)));
  }

 private:
  bool has_error_ = false;
  int line_ = -1;
  int column_ = -1;
  std::string message_;
};

// Records handlers[i].params keys in text order (the parse tree's order),
// before any typed access turns the entries into an unordered map, and
// rejects a key given twice (the map would silently keep one).
absl::Status RecordParamKeys(const v1::Config& config,
                             ConfigLocations* locations) {
  const FieldDescriptor* params_field =
      v1::HandlerInstall::descriptor()->FindFieldByName("params");
  const Reporter r(locations);
  for (int i = 0; i < config.handlers_size(); ++i) {
    const Message& handler = config.handlers(i);
    const Reflection* reflection = handler.GetReflection();
    std::vector<std::string> keys;
    absl::flat_hash_map<std::string, int> seen;
    for (int j = 0; j < reflection->FieldSize(handler, params_field); ++j) {
      const Message& entry =
          reflection->GetRepeatedMessage(handler, params_field, j);
      const FieldDescriptor* key_field =
          entry.GetDescriptor()->FindFieldByName("key");
      std::string key = entry.GetReflection()->GetString(entry, key_field);
      const FieldPath at = FieldPath().At("handlers", i).Key("params", key, j);
      if (auto [it, inserted] = seen.emplace(key, j); !inserted) {
        const FieldPath first =
            FieldPath().At("handlers", i).Key("params", key, it->second);
        return r.Error(at, absl::StrCat("given twice (first on line ",
                                        r.Line(first), "); keep one"));
      }
      keys.push_back(std::move(key));
    }
    if (!keys.empty()) locations->SetParamKeys(i, std::move(keys));
  }
  return absl::OkStatus();
}

}  // namespace

ConfigLocations::ConfigLocations(absl::string_view source_name)
    : source_name_(source_name),
      tree_(std::make_unique<TextFormat::ParseInfoTree>()) {}
ConfigLocations::ConfigLocations(ConfigLocations&&) noexcept = default;
ConfigLocations& ConfigLocations::operator=(ConfigLocations&&) noexcept =
    default;
ConfigLocations::~ConfigLocations() = default;

void ConfigLocations::MarkOverridden(std::string path) {
  overridden_.push_back(std::move(path));
}

bool ConfigLocations::IsOverridden(absl::string_view path) const {
  for (const std::string& marked : overridden_) {
    if (absl::StartsWith(path, marked) &&
        (path.size() == marked.size() || path[marked.size()] == '.' ||
         path[marked.size()] == '[')) {
      return true;
    }
  }
  return false;
}

const std::vector<std::string>& ConfigLocations::ParamKeys(int handler) const {
  static const auto* const kNone = new std::vector<std::string>();
  auto it = param_keys_.find(handler);
  return it == param_keys_.end() ? *kNone : it->second;
}

void ConfigLocations::SetParamKeys(int handler, std::vector<std::string> keys) {
  param_keys_[handler] = std::move(keys);
}

absl::StatusOr<ParsedConfig> ParseConfigText(absl::string_view text,
                                             absl::string_view source_name) {
  ParsedConfig parsed{v1::Config(), ConfigLocations(source_name)};
  if (text.size() > kMaxConfigBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(OneLine(source_name), ": the config is ", text.size(),
                     " bytes; configs over ", kMaxConfigBytes,
                     " bytes are not supported (is this the right file?)"));
  }
  TextFormat::Parser parser;
  FirstErrorCollector errors;
  parser.RecordErrorsTo(&errors);
  parser.WriteLocationsTo(parsed.locations.tree());
  google::protobuf::io::ArrayInputStream input(text.data(),
                                               static_cast<int>(text.size()));
  if (!parser.Parse(&input, &parsed.config)) {
    if (!errors.has_error()) {
      return absl::InvalidArgumentError(absl::StrCat(
          OneLine(source_name),
          ": not a text-format spinnic.v1.Config (see docs/config.md)"));
    }
    return absl::InvalidArgumentError(
        errors.Format(OneLine(source_name), text));
  }
  if (absl::Status s = RecordParamKeys(parsed.config, &parsed.locations);
      !s.ok()) {
    return s;
  }
  return parsed;
}

absl::StatusOr<ParsedConfig> ParseConfigFile(const std::string& path) {
  auto fail = [&](int error) {
    std::string message = absl::StrCat(
        OneLine(path), ": cannot read the config file: ", std::strerror(error),
        "; pass --config a readable text-format spinnic.v1.Config "
        "file (or leave --config out for the built-in default)");
    if (error == ENOENT) return absl::NotFoundError(message);
    if (error == EACCES || error == EPERM) {
      return absl::PermissionDeniedError(message);
    }
    return absl::InvalidArgumentError(message);
  };
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return fail(errno);
  std::string text;
  char buffer[64 * 1024];
  while (true) {
    size_t n = std::fread(buffer, 1, sizeof(buffer), file);
    text.append(buffer, n);
    if (text.size() > kMaxConfigBytes) break;
    if (n < sizeof(buffer)) {
      if (std::ferror(file)) {
        int error = errno;
        std::fclose(file);
        return fail(error);
      }
      break;
    }
  }
  std::fclose(file);
  return ParseConfigText(text, path);
}

}  // namespace spinnic
