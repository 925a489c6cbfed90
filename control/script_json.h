// The one JSON form spinnic prints for scripts: protobuf's JSON printer with
// proto field names (snake_case) and every field present, zeros and empty
// lists included. proto3 JSON writes 64-bit integers as strings
// (docs/counters.md).
#ifndef SPINNIC_CONTROL_SCRIPT_JSON_H_
#define SPINNIC_CONTROL_SCRIPT_JSON_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/protobuf/message.h"
#include "google/protobuf/util/json_util.h"

namespace spinnic {

inline google::protobuf::util::JsonPrintOptions ScriptJsonOptions() {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  // Scripts should not have to know that a missing counter means zero.
  options.always_print_primitive_fields = true;
  return options;
}

// `message` as one line of JSON (no trailing newline).
inline absl::StatusOr<std::string> ScriptJson(
    const google::protobuf::Message& message) {
  std::string json;
  // protobuf 3.21's own Status type, not absl's.
  auto status = google::protobuf::util::MessageToJsonString(
      message, &json, ScriptJsonOptions());
  if (!status.ok()) return absl::InternalError(status.ToString());
  return json;
}

}  // namespace spinnic

#endif  // SPINNIC_CONTROL_SCRIPT_JSON_H_
