// Loading spinnicd's configuration: a text-format spinnic.v1.Config message
// (proto/spinnic/v1/config.proto, docs/config.md).
//
//   text --ParseConfigText--> v1::Config (+ locations)     syntax errors
//        --ApplyOverrides---> v1::Config                    daemon flags
//        --ValidateConfig---> ok                            semantic errors
//        --ToDataplaneConfig / BuildEalArgs--> what the dataplane consumes
//
// LoadConfig() runs the first three steps. Every error is one line that says
// where and what to fix:
//
//   <source>:<line>:<column>: <field path>: <what is wrong, what to write>
//   e.g. spinnic.textproto:12:3: ports[1].vdev: ...
//
// Lines and columns are 1-based and point at the field's name (for a field
// that is missing, at the enclosing block). A problem with no place in the
// text (a required block absent from the whole file) is `<source>: <path>:
// ...`; a field set by a daemon flag is `command line: <path>: ...`.
#ifndef SPINNIC_CONTROL_CONFIG_LOADER_H_
#define SPINNIC_CONTROL_CONFIG_LOADER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "dataplane/dataplane_config.h"
#include "google/protobuf/text_format.h"
#include "spinnic/v1/config.pb.h"

namespace spinnic {

// Limits ValidateConfig enforces (docs/config.md lists them all).
inline constexpr uint32_t kMaxPortNameLength = 32;
inline constexpr uint32_t kMaxHandlerNameLength = 64;
inline constexpr uint32_t kMaxQueuesPerPort = 64;
inline constexpr uint32_t kMinMtu = 68;
inline constexpr uint32_t kMaxMtu = 9600;
inline constexpr uint32_t kMinDescriptors = 64;
inline constexpr uint32_t kMaxDescriptors = 4096;
inline constexpr uint32_t kDefaultDescriptors = 1024;
inline constexpr uint32_t kMaxCoreId = 1023;  // cores are 0..1023
inline constexpr uint32_t kMaxBurst = 512;
inline constexpr uint32_t kDefaultBurst = 32;
// ports[].transport_pacer (dataplane/tx_pacer.h). A share of 100 would
// leave the transports no frame at all, acknowledgements included, while
// host traffic fills the queue.
inline constexpr uint32_t kMaxPassthroughSharePercent = 99;
inline constexpr uint32_t kDefaultPacerQueueFrames = 512;
inline constexpr uint32_t kMaxPacerQueueFrames = 16384;
inline constexpr uint32_t kMaxPacerRateMbps = 400'000;  // 400 Gbit/s

// The source name errors use for the embedded default config.
inline constexpr absl::string_view kDefaultConfigSourceName =
    "<built-in default config>";

// Where the fields of a parsed config are in its text: filled by
// ParseConfigText/ParseConfigFile, read by ValidateConfig. Move-only.
class ConfigLocations {
 public:
  explicit ConfigLocations(absl::string_view source_name = "");
  ConfigLocations(ConfigLocations&&) noexcept;
  ConfigLocations& operator=(ConfigLocations&&) noexcept;
  ~ConfigLocations();

  const std::string& source_name() const { return source_name_; }

  // For the parser (TextFormat::Parser::WriteLocationsTo).
  google::protobuf::TextFormat::ParseInfoTree* tree() { return tree_.get(); }
  const google::protobuf::TextFormat::ParseInfoTree* tree() const {
    return tree_.get();
  }

  // Marks a field path ("workers", "runtime.duration_s", "eal_args[3]") as
  // set by a daemon flag: errors under it say `command line:` instead of a
  // file position.
  void MarkOverridden(std::string path);
  bool IsOverridden(absl::string_view path) const;

  // The keys of handlers[handler].params in text order (a map field loses it
  // once parsed; the location tree is indexed in text order). Empty when not
  // known.
  const std::vector<std::string>& ParamKeys(int handler) const;
  void SetParamKeys(int handler, std::vector<std::string> keys);

 private:
  std::string source_name_;
  std::unique_ptr<google::protobuf::TextFormat::ParseInfoTree> tree_;
  std::vector<std::string> overridden_;
  absl::flat_hash_map<int, std::vector<std::string>> param_keys_;
};

// A config as parsed, with the location of every field.
struct ParsedConfig {
  v1::Config config;
  ConfigLocations locations;
};

// Parses text-format spinnic.v1.Config. Syntax only: unknown fields, wrong
// types, bad enum names, a oneof set twice, a map key given twice, as
// INVALID_ARGUMENT `<source_name>:<line>:<col>: <what protobuf says>`.
absl::StatusOr<ParsedConfig> ParseConfigText(absl::string_view text,
                                             absl::string_view source_name);

// Reads and parses a file; the path is the source name in errors. NOT_FOUND /
// PERMISSION_DENIED / INVALID_ARGUMENT say what is wrong with the file.
absl::StatusOr<ParsedConfig> ParseConfigFile(const std::string& path);

// Values the daemon's flags put over the config file's.
struct ConfigOverrides {
  std::optional<uint32_t> duration_s;            // runtime.duration_s
  std::optional<uint32_t> stats_interval_ms;     // runtime.stats_interval_ms
  std::optional<std::vector<uint32_t>> workers;  // replaces workers
  std::optional<uint32_t> main_lcore;            // main_lcore
  std::vector<std::string> extra_eal_args;       // appended to eal_args
};

// Applies `overrides` to `config`. When `locations` is given, marks the
// fields it changed so that their errors blame the command line.
void ApplyOverrides(const ConfigOverrides& overrides, v1::Config* config,
                    ConfigLocations* locations = nullptr);

// Checks everything the daemon needs to start from this config (every rule
// is in docs/config.md). INVALID_ARGUMENT, one line, for the first problem.
// `locations` may be null (config not from text, e.g. built in a test or
// received over gRPC): the error is then `<field path>: <message>`.
// Handler kinds must already be registered (link the handler library).
absl::Status ValidateConfig(const v1::Config& config,
                            const ConfigLocations* locations = nullptr);

// Parse (file at `path`, or DefaultConfigText() when `path` is empty), apply
// overrides, validate. What spinnicd calls at start.
absl::StatusOr<v1::Config> LoadConfig(absl::string_view path,
                                      const ConfigOverrides& overrides = {});

// Converts a config into the dataplane's structs: port names become indices
// (in `ports` order), in_ports a bitmask, defaults filled (descriptors 0 ->
// 1024, promiscuous unset -> true, burst 0 -> 32; queues 0 stays 0, meaning
// one per worker). Validates first (without locations) and fails the same
// way ValidateConfig does.
absl::StatusOr<DataplaneConfig> ToDataplaneConfig(const v1::Config& config);

// Checks one handler (what InstallHandler sends) as ValidateConfig checks
// an entry of `handlers`, against `running`, a validated config: its name,
// kind, params, state and match rule (against running's ports), its DiAD
// or RoCE binding (against running's sections). Not against running's
// other handlers: a name in use is the dataplane's to refuse or replace
// (InstallHandlerRequest.replace). Then converts it as
// ToDataplaneConfig does (bound_regions are left empty). Errors are
// ValidateConfig's without locations, the handler's path `handlers[0]`.
absl::StatusOr<HandlerConfig> ToHandlerConfig(const v1::HandlerInstall& handler,
                                              const v1::Config& running);

// The argv for rte_eal_init: "spinnicd", then "--lcores" "0@<main_lcore>,
// 1@<workers[0]>,2@<workers[1]>,..." (EAL lcore ids are dense: 0 is the main
// lcore, worker i is lcore i + 1), "--main-lcore" "0", then eal_args as
// given. Ports are not on it: the dataplane probes them (rte_dev_probe).
std::vector<std::string> BuildEalArgs(const v1::Config& config);

}  // namespace spinnic

#endif  // SPINNIC_CONTROL_CONFIG_LOADER_H_
