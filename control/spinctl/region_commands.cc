// spinctl regions, region-register, region-deregister, region-read,
// region-write.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "control/spinctl/command.h"
#include "control/spinctl/table.h"

namespace spinnic::spinctl {
namespace {

constexpr absl::string_view kAccessNames =
    "local_read, local_write, remote_read, remote_write";

absl::StatusOr<v1::RegionAccess> ParseAccess(const std::string& text) {
  v1::RegionAccess access;
  for (absl::string_view name :
       absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    name = absl::StripAsciiWhitespace(name);
    if (name == "local_read") {
      access.set_local_read(true);
    } else if (name == "local_write") {
      access.set_local_write(true);
    } else if (name == "remote_read") {
      access.set_remote_read(true);
    } else if (name == "remote_write") {
      access.set_remote_write(true);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("--access: unknown access '", name,
                       "'; write a comma-separated list of ", kAccessNames));
    }
  }
  return access;
}

std::string AccessCell(const v1::RegionAccess& access) {
  std::vector<std::string> names;
  if (access.local_read()) names.push_back("local_read");
  if (access.local_write()) names.push_back("local_write");
  if (access.remote_read()) names.push_back("remote_read");
  if (access.remote_write()) names.push_back("remote_write");
  return names.empty() ? "none" : absl::StrJoin(names, ",");
}

std::string Hex32(uint32_t v) { return absl::StrFormat("0x%08x", v); }
std::string Hex64(uint64_t v) { return absl::StrFormat("0x%x", v); }

absl::StatusOr<uint64_t> RegionId(const ParsedArgs& args) {
  return ParseUint("region ID", args.positional[0]);
}

int RunRegions(Env& env, const ParsedArgs&) {
  ControlClient* client = env.Client();
  if (client == nullptr) return env.connect_exit();
  absl::StatusOr<v1::ListRegionsResponse> regions = client->ListRegions();
  if (!regions.ok()) return env.ServerError(regions.status());
  if (env.json()) {
    env.PrintJson(*regions);
    return kExitOk;
  }
  if (regions->regions().empty()) {
    std::printf("no regions registered\n");
    return kExitOk;
  }
  Table table(
      {"ID", "NAME", "RKEY", "BASE", "LENGTH", "ACCESS", "STREAM", "BOUND_TO"});
  for (const v1::RegionInfo& r : regions->regions()) {
    table.AddRow(
        {absl::StrCat(r.id()), r.name().empty() ? "-" : r.name(),
         Hex32(r.rkey()), Hex64(r.base_address()), absl::StrCat(r.length()),
         AccessCell(r.access()),
         r.stream_id() == 0 ? "-" : absl::StrCat(r.stream_id()),
         r.bound_to().empty() ? "-" : absl::StrJoin(r.bound_to(), ",")});
  }
  table.Print(stdout);
  return kExitOk;
}

int RunRegister(Env& env, const ParsedArgs& args) {
  if (!args.Has("length")) {
    return env.UsageError("pass --length N (bytes)");
  }
  v1::RegisterRegionRequest request;
  request.set_length(args.Uint("length"));
  request.set_name(args.String("name"));
  request.set_stream_id(static_cast<uint32_t>(args.Uint("stream_id")));
  absl::StatusOr<v1::RegionAccess> access =
      ParseAccess(args.String("access", "local_read,local_write"));
  if (!access.ok()) return env.UsageError(access.status());
  *request.mutable_access() = *access;

  ControlClient* client = env.Client();
  if (client == nullptr) return env.connect_exit();
  absl::StatusOr<v1::RegisterRegionResponse> region =
      client->RegisterRegion(request);
  if (!region.ok()) return env.ServerError(region.status());
  if (env.json()) {
    env.PrintJson(*region);
    return kExitOk;
  }
  KeyValues fields;
  fields.Add("id", absl::StrCat(region->id()));
  fields.Add("rkey", Hex32(region->rkey()));
  fields.Add("base_address", Hex64(region->base_address()));
  fields.Add("length", absl::StrCat(region->length()));
  fields.Print(stdout);
  return kExitOk;
}

int RunDeregister(Env& env, const ParsedArgs& args) {
  absl::StatusOr<uint64_t> id = RegionId(args);
  if (!id.ok()) return env.UsageError(id.status());
  ControlClient* client = env.Client();
  if (client == nullptr) return env.connect_exit();
  if (absl::Status s = client->DeregisterRegion(*id); !s.ok()) {
    return env.ServerError(s);
  }
  if (env.json()) {
    env.PrintJson(v1::DeregisterRegionResponse());
  } else {
    std::printf("deregistered region %llu\n",
                static_cast<unsigned long long>(*id));
  }
  return kExitOk;
}

int RunRead(Env& env, const ParsedArgs& args) {
  absl::StatusOr<uint64_t> id = RegionId(args);
  if (!id.ok()) return env.UsageError(id.status());
  ControlClient* client = env.Client();
  if (client == nullptr) return env.connect_exit();
  uint64_t offset = args.Uint("offset");
  absl::StatusOr<std::string> data =
      client->ReadRegion(*id, offset, args.Uint("length"));
  if (!data.ok()) return env.ServerError(data.status());
  v1::ReadRegionResponse response;
  response.set_data(*data);
  return PrintBytes(env, args, *data, offset, response);
}

int RunWrite(Env& env, const ParsedArgs& args) {
  absl::StatusOr<uint64_t> id = RegionId(args);
  if (!id.ok()) return env.UsageError(id.status());
  if (args.Has("hex") == args.Has("in")) {
    return env.UsageError("pass exactly one of --hex HEX and --in FILE");
  }
  absl::StatusOr<std::string> data = args.Has("hex")
                                         ? ParseHex("--hex", args.String("hex"))
                                         : ReadFile(args.String("in"));
  if (!data.ok()) return env.UsageError(data.status());
  ControlClient* client = env.Client();
  if (client == nullptr) return env.connect_exit();
  uint64_t offset = args.Uint("offset");
  if (absl::Status s = client->WriteRegion(*id, offset, *data); !s.ok()) {
    return env.ServerError(s);
  }
  if (env.json()) {
    env.PrintJson(v1::WriteRegionResponse());
  } else {
    std::printf("wrote %zu bytes at offset %llu of region %llu\n", data->size(),
                static_cast<unsigned long long>(offset),
                static_cast<unsigned long long>(*id));
  }
  return kExitOk;
}

}  // namespace

std::vector<Command> RegionCommands() {
  return {
      {"regions", "", 0, 0, "registered memory regions", {}, "", RunRegions},
      {"region-register",
       "",
       0,
       0,
       "register a zeroed memory region; prints id, rkey, base address",
       {
           {"length", FlagType::kUint, "N", "bytes (required)"},
           {"access", FlagType::kString, "LIST",
            "comma-separated: local_read, local_write, remote_read, "
            "remote_write (default local_read,local_write)"},
           {"name", FlagType::kString, "NAME", "for people; unique when set"},
           {"stream_id", FlagType::kUint, "N",
            "a stream region: DiAD stream N's messages that no handler "
            "takes land in it as a ring (docs/diad.md)",
            UINT32_MAX},
       },
       "example:\n"
       "  spinctl region-register --length 4096 --access "
       "local_read,local_write,remote_write --name rx-buf\n",
       RunRegister},
      {"region-deregister",
       "ID",
       1,
       1,
       "deregister a memory region",
       {},
       "",
       RunDeregister},
      {"region-read",
       "ID",
       1,
       1,
       "read a region's bytes as a hex dump (or raw with --raw/--out)",
       {
           {"offset", FlagType::kUint, "N", "first byte (default 0)"},
           {"length", FlagType::kUint, "N",
            "bytes to read (default: to the end; at most 1 MiB)"},
           {"out", FlagType::kString, "FILE", "write the raw bytes to FILE"},
           {"raw", FlagType::kBool, "", "write the raw bytes to stdout"},
       },
       "",
       RunRead},
      {"region-write",
       "ID",
       1,
       1,
       "write bytes into a region",
       {
           {"offset", FlagType::kUint, "N", "first byte (default 0)"},
           {"hex", FlagType::kString, "HEX", "the bytes, e.g. deadbeef"},
           {"in", FlagType::kString, "FILE", "the bytes of FILE (- : stdin)"},
       },
       "example:\n  spinctl region-write 1 --offset 100 --hex deadbeef\n",
       RunWrite},
  };
}

}  // namespace spinnic::spinctl
