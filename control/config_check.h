// What the config checks of every section share (config_loader.cc,
// port_config.cc, handler_config.cc, diad/diad_config.cc,
// roce/roce_config.cc): field paths, the one-line error format, and the
// small parsers. Internal to the config loader: use config_loader.h.
#ifndef SPINNIC_CONTROL_CONFIG_CHECK_H_
#define SPINNIC_CONTROL_CONFIG_CHECK_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "control/config_loader.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/text_format.h"
#include "spinnic/v1/config.pb.h"

namespace spinnic::config_internal {

// A string value as it appears in an error: quoted, escaped, one line.
std::string Quote(absl::string_view text);

// Keeps an error on one line whatever text a value or a callee put into it.
std::string OneLine(absl::string_view text);

// A path from the Config root to one value: "ports[1].vdev",
// "handlers[0].params[\"by\"]". Rendered in errors and walked through the
// parse-location tree to find the value's line.
class FieldPath {
 public:
  FieldPath() : type_(v1::Config::descriptor()) {}

  // A singular field, or a whole repeated field.
  FieldPath F(absl::string_view name) const { return Step(name, -1, nullptr); }
  // Element `index` of a repeated field.
  FieldPath At(absl::string_view name, int index) const {
    return Step(name, index, nullptr);
  }
  // The entry of map field `name` with `key`; `text_index` is the entry's
  // position in the text (-1: unknown).
  FieldPath Key(absl::string_view name, absl::string_view key,
                int text_index) const {
    std::string k(key);
    return Step(name, text_index, &k);
  }

  std::string ToString() const;

  // The 0-based position of the deepest step found in `tree`, or (-1, -1).
  google::protobuf::TextFormat::ParseLocation Find(
      const google::protobuf::TextFormat::ParseInfoTree* tree) const;

 private:
  struct PathStep {
    const google::protobuf::FieldDescriptor* field;
    int index;
    bool has_key;
    std::string key;
  };

  FieldPath Step(absl::string_view name, int index,
                 const std::string* key) const;

  const google::protobuf::Descriptor* type_;
  std::vector<PathStep> steps_;
};

// Formats errors as `<source>:<line>:<col>: <path>: <message>`.
class Reporter {
 public:
  explicit Reporter(const ConfigLocations* locations) : locations_(locations) {}

  absl::Status Error(const FieldPath& path, absl::string_view message) const;

  // The 1-based line of a path's value, for "first on line N" hints; 0 when
  // unknown.
  int Line(const FieldPath& path) const {
    if (locations_ == nullptr) return 0;
    return path.Find(locations_->tree()).line + 1;
  }

  const ConfigLocations* locations() const { return locations_; }

 private:
  const ConfigLocations* locations_;
};

// `other` with its line when known: "ports[0] on line 3".
std::string WhereElse(const Reporter& reporter, const FieldPath& other);

bool IsNameChar(char c, bool allow_dot);

// "" when `name` is fine, else what is wrong with it.
std::string CheckName(absl::string_view name, size_t max_length,
                      bool allow_dot);

// The configured port names, for "ports are: ..." hints.
std::string PortNameList(const v1::Config& config);

bool ParseHexField(absl::string_view text, size_t min_digits, size_t max_digits,
                   uint32_t max_value, uint32_t* out);

// "02:00:00:00:00:01".
bool ParseMac(absl::string_view text, std::array<uint8_t, 6>* mac);

// An IPv6 address without prefix length.
bool ParseNode(const std::string& text, std::array<uint8_t, 16>* node);

bool IsPowerOfTwo(uint32_t value);

// A port index that names no port (DiAD's and RoCE's port before it is
// chosen).
inline constexpr uint16_t kNoPort = 0xffff;

}  // namespace spinnic::config_internal

#endif  // SPINNIC_CONTROL_CONFIG_CHECK_H_
