// Handler parameters: each handler kind declares a schema (name, type,
// required or default, help); install-time text values are checked against it
// once, so a handler reads typed values and never parses on the hot path.
#ifndef SPINNIC_HANDLERS_API_PARAMS_H_
#define SPINNIC_HANDLERS_API_PARAMS_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace spinnic {

enum class ParamType : uint8_t {
  kUint,    // decimal or 0x-hex, fits in uint64
  kBool,    // true/false/1/0
  kString,  // free text
  kBytes,   // hex string, even length, e.g. "a5ff"
};

absl::string_view ParamTypeName(ParamType type);

struct ParamSpec {
  absl::string_view name;
  ParamType type;
  bool required;
  absl::string_view default_value;  // used when !required and not given
  absl::string_view help;
  uint64_t min = 0;  // kUint bounds, inclusive
  uint64_t max = UINT64_MAX;
};

// Validated parameter values. Built only by Validate(), so every getter for a
// name in the schema succeeds with the declared type.
class HandlerParams {
 public:
  // Checks `given` against `schema`: unknown names, missing required values,
  // malformed or out-of-range values are INVALID_ARGUMENT naming the
  // parameter and what to write instead.
  static absl::StatusOr<HandlerParams> Validate(
      std::span<const ParamSpec> schema,
      const absl::flat_hash_map<std::string, std::string>& given);

  uint64_t GetUint(absl::string_view name) const;
  bool GetBool(absl::string_view name) const;
  const std::string& GetString(absl::string_view name) const;
  // Decoded bytes of a kBytes parameter.
  const std::vector<uint8_t>& GetBytes(absl::string_view name) const;

 private:
  struct Value {
    uint64_t uint_value = 0;
    bool bool_value = false;
    std::string text;
    std::vector<uint8_t> bytes;
  };
  const Value& Find(absl::string_view name) const;
  absl::flat_hash_map<std::string, Value> values_;
};

}  // namespace spinnic

#endif  // SPINNIC_HANDLERS_API_PARAMS_H_
