// What every spinctl subcommand shares: the connection (made on first use,
// after the subcommand's own arguments were checked, so that a usage error
// never waits for a server), the output mode and the exit-code conventions:
//
//   0 success
//   1 the server answered with an error ("spinctl: NOT_FOUND: ...")
//   2 usage error: unknown subcommand or flag, bad number, unreadable file
//   3 cannot connect to spinnicd
#ifndef SPINNIC_CONTROL_SPINCTL_COMMAND_H_
#define SPINNIC_CONTROL_SPINCTL_COMMAND_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "control/client/control_client.h"
#include "control/spinctl/args.h"
#include "google/protobuf/message.h"

namespace spinnic::spinctl {

inline constexpr int kExitOk = 0;
inline constexpr int kExitServerError = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitUnreachable = 3;

class Env {
 public:
  Env(std::string command, ClientOptions options, bool json)
      : command_(std::move(command)),
        options_(std::move(options)),
        json_(json) {}

  // Connects on the first call. On failure prints why and returns nullptr;
  // the command then returns connect_exit().
  ControlClient* Client();
  int connect_exit() const { return connect_exit_; }

  bool json() const { return json_; }
  // How Client() connects (fleet mode: the defaults for every target).
  const ClientOptions& options() const { return options_; }

  // One JSON document on one line (proto field names, defaults included).
  void PrintJson(const google::protobuf::Message& message) const;

  // Prints "spinctl: CODE: message" and returns kExitServerError.
  int ServerError(const absl::Status& status) const;
  // Prints what to fix, and where to read the usage; returns kExitUsage.
  int UsageError(absl::string_view message) const;
  int UsageError(const absl::Status& status) const {
    return UsageError(status.message());
  }

 private:
  std::string command_;
  ClientOptions options_;
  bool json_;
  std::unique_ptr<ControlClient> client_;
  int connect_exit_ = kExitOk;
};

struct Command {
  absl::string_view name;
  absl::string_view arguments;  // positional ones, for usage: "NAME"
  size_t min_positional;
  size_t max_positional;
  absl::string_view summary;  // one line
  std::vector<FlagSpec> flags;
  absl::string_view details;  // more usage text; may be empty
  int (*run)(Env& env, const ParsedArgs& args);
};

// The subcommands, by area, in the order `spinctl help` lists them.
std::vector<Command> HandlerCommands();
std::vector<Command> RegionCommands();
std::vector<Command> StatsCommands();
std::vector<Command> DiadCommands();
std::vector<Command> RoceCommands();
// Hitless reload: apply, config show (config_commands.cc).
std::vector<Command> ConfigCommands();
// Log levels (log_commands.cc).
std::vector<Command> LogCommands();
// Streams a port's frames into a pcapng file (capture_command.cc).
std::vector<Command> CaptureCommands();
// Offline: decodes a capture, never connects (decode_command.cc).
std::vector<Command> DecodeCommands();
// Offline: checks an eBPF handler program (bpf_command.cc).
std::vector<Command> BpfCommands();
// What `spinctl --targets FILE COMMAND` runs on many appliances
// (fleet_command.cc): install, replace, remove.
std::vector<Command> FleetCommands();

// install's flags, without --replace (handler_commands.cc).
std::vector<FlagSpec> InstallFlags();
// The InstallHandlerRequest that InstallFlags() describe: --handler_file,
// the other flags on top. INVALID_ARGUMENT says which flag to fix.
absl::StatusOr<v1::InstallHandlerRequest> InstallRequest(
    const ParsedArgs& args);

// Text format of `message`'s type into `message`; INVALID_ARGUMENT names
// `what`, the line:column of the first error, and the message type.
absl::Status ParseTextProto(absl::string_view what, const std::string& text,
                            google::protobuf::Message* message);

// Counters shared by the `handlers` and `stats` tables.
std::vector<std::string> HandlerCounterHeaders();
std::vector<std::string> HandlerCounterCells(const v1::HandlerStats& stats);

// "2026-11-22T10:00:00.123Z" (UTC) for a CLOCK_REALTIME nanosecond stamp.
std::string FormatTimestamp(uint64_t unix_ns);

// The bytes of `state` and `region-read`: raw to --out FILE or, with --raw,
// to stdout; else `response` as JSON with --json; else a hex dump whose
// offsets start at `offset`.
int PrintBytes(Env& env, const ParsedArgs& args, const std::string& data,
               uint64_t offset, const google::protobuf::Message& response);

// Writes `data` to `path` ("-": stdout). Returns an error naming the file.
absl::Status WriteFile(const std::string& path, const std::string& data);
// Reads `path` ("-": stdin) whole.
absl::StatusOr<std::string> ReadFile(const std::string& path);

}  // namespace spinnic::spinctl

#endif  // SPINNIC_CONTROL_SPINCTL_COMMAND_H_
