// The registry as the control plane sees it: every built-in kind is linked
// in, once, under its name, with a schema whose defaults are themselves valid.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "handlers/api/handler.h"
#include "handlers/api/params.h"
#include "handlers/api/testing.h"

namespace spinnic {
namespace {

using ::testing::IsSupersetOf;

std::vector<std::string> KindNames() {
  std::vector<std::string> names;
  for (const HandlerKind& kind : RegisteredHandlerKinds()) {
    names.emplace_back(kind.name);
  }
  return names;
}

// A value of the right type for a required parameter.
std::string SampleValue(const ParamSpec& spec) {
  switch (spec.type) {
    case ParamType::kUint:
      return std::to_string(spec.min);
    case ParamType::kBool:
      return "true";
    case ParamType::kString:
      return "x";
    case ParamType::kBytes:
      return "a5";
  }
  return "";
}

TEST(RegistryTest, ListsEveryBuiltInKind) {
  EXPECT_THAT(KindNames(),
              IsSupersetOf({"agg", "bcast", "cond_read", "count", "datatype",
                            "filter", "kvs", "null", "pingpong", "raid_parity",
                            "reduce", "reflect", "xor_payload"}));
}

TEST(RegistryTest, NamesAreUniqueAndSorted) {
  std::vector<std::string> names = KindNames();
  std::set<std::string> unique(names.begin(), names.end());
  EXPECT_EQ(unique.size(), names.size());
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
}

TEST(RegistryTest, FindHandlerKindFindsEachByName) {
  for (const HandlerKind& kind : RegisteredHandlerKinds()) {
    const HandlerKind* found = FindHandlerKind(kind.name);
    ASSERT_NE(found, nullptr) << kind.name;
    EXPECT_EQ(found->name, kind.name);
  }
  EXPECT_EQ(FindHandlerKind("no_such_kind"), nullptr);
}

TEST(RegistryTest, DeclaredMinimumStateSizes) {
  EXPECT_EQ(FindHandlerKind("agg")->min_state_size, 48u);
  EXPECT_EQ(FindHandlerKind("cond_read")->min_state_size, 80u);
  EXPECT_EQ(FindHandlerKind("count")->min_state_size, 16u);
  EXPECT_EQ(FindHandlerKind("datatype")->min_state_size, 48u);
  EXPECT_EQ(FindHandlerKind("filter")->min_state_size, 0u);
  EXPECT_EQ(FindHandlerKind("kvs")->min_state_size, 104u);
  EXPECT_EQ(FindHandlerKind("null")->min_state_size, 0u);
  EXPECT_EQ(FindHandlerKind("reflect")->min_state_size, 0u);
  EXPECT_EQ(FindHandlerKind("xor_payload")->min_state_size, 0u);
  EXPECT_EQ(FindHandlerKind("pingpong")->min_state_size, 48u);
  EXPECT_EQ(FindHandlerKind("bcast")->min_state_size, 48u);
  EXPECT_EQ(FindHandlerKind("raid_parity")->min_state_size, 56u);
  EXPECT_EQ(FindHandlerKind("raid_parity")->min_regions, 1u);
}

TEST(RegistryTest, SchemasSayWhatToWrite) {
  for (const HandlerKind& kind : RegisteredHandlerKinds()) {
    SCOPED_TRACE(std::string(kind.name));
    EXPECT_FALSE(kind.description.empty());
    std::set<std::string> names;
    for (const ParamSpec& spec : kind.params) {
      EXPECT_FALSE(spec.name.empty());
      EXPECT_TRUE(names.insert(std::string(spec.name)).second)
          << "parameter " << spec.name << " declared twice";
      EXPECT_GE(spec.help.size(), 20u)
          << "help for " << spec.name << " is too short to guide a user";
      EXPECT_LE(spec.min, spec.max);
    }
  }
}

TEST(RegistryTest, SchemasOfParameterisedKindsAreNonEmpty) {
  for (absl::string_view name :
       {"agg", "bcast", "cond_read", "count", "datatype", "filter", "kvs",
        "pingpong", "raid_parity", "xor_payload"}) {
    EXPECT_FALSE(FindHandlerKind(name)->params.empty()) << name;
  }
  for (absl::string_view name : {"null", "reflect"}) {
    EXPECT_TRUE(FindHandlerKind(name)->params.empty()) << name;
  }
}

// Defaults go through the same validation as user text, and the factory must
// accept them: a kind installed with only its required parameters works.
TEST(RegistryTest, EveryKindCreatesWithItsDefaults) {
  for (const HandlerKind& kind : RegisteredHandlerKinds()) {
    SCOPED_TRACE(std::string(kind.name));
    // A user's program is what `bpf` runs, so it has no defaults to create
    // with; tests/unit/bpf creates it with programs.
    if (kind.name == "bpf") {
      EXPECT_FALSE(kind.create(*HandlerParams::Validate(kind.params, {})).ok());
      continue;
    }
    absl::flat_hash_map<std::string, std::string> given;
    for (const ParamSpec& spec : kind.params) {
      if (spec.required) given[std::string(spec.name)] = SampleValue(spec);
    }
    // datatype's required parameters depend on its layout, so the schema
    // cannot mark them: its default layout (vector) needs these two, and
    // says so when they are missing (tests/unit/handlers/datatype_test.cc).
    if (kind.name == "datatype") {
      EXPECT_FALSE(
          kind.create(*HandlerParams::Validate(kind.params, given)).ok());
      given["blocklen"] = "64";
      given["stride"] = "256";
    }
    absl::StatusOr<HandlerParams> params =
        HandlerParams::Validate(kind.params, given);
    ASSERT_TRUE(params.ok()) << params.status();
    absl::StatusOr<HandlerInstance> instance = kind.create(*params);
    ASSERT_TRUE(instance.ok()) << instance.status();
    ASSERT_NE(instance->self(), nullptr);
    ASSERT_NE(instance->ops(), nullptr);
    EXPECT_EQ(instance->ops()->header != nullptr, kind.has_header);
    EXPECT_EQ(instance->ops()->payload != nullptr, kind.has_payload);
    EXPECT_EQ(instance->ops()->completion != nullptr, kind.has_completion);
    EXPECT_NE(instance->ops()->destroy, nullptr);
  }
}

TEST(RegistryTest, BuiltInKindsArePayloadOnly) {
  for (absl::string_view name :
       {"agg", "bcast", "cond_read", "count", "filter", "kvs", "null",
        "pingpong", "raid_parity", "reflect", "xor_payload"}) {
    const HandlerKind* kind = FindHandlerKind(name);
    EXPECT_FALSE(kind->has_header) << name;
    EXPECT_TRUE(kind->has_payload) << name;
    EXPECT_FALSE(kind->has_completion) << name;
  }
}

TEST(RegistryTest, KindsThatNeedARegionSayHowMany) {
  EXPECT_EQ(FindHandlerKind("kvs")->min_regions, 1u);
  EXPECT_EQ(FindHandlerKind("cond_read")->min_regions, 1u);
  EXPECT_TRUE(CreateHandlerForTest("kvs", {{"key_max", "16"},
                                           {"value_max", "64"},
                                           {"max_probe", "8"},
                                           {"reply_stream", "9"}})
                  .ok());
  EXPECT_TRUE(CreateHandlerForTest("cond_read", {{"version_offset", "64"},
                                                 {"max_length", "4096"},
                                                 {"reply_stream", "9"}})
                  .ok());
}

// Only kinds that put to peers by name name any: bcast its children,
// raid_parity (role=data) its parity node.
TEST(RegistryTest, KindsWithDefaultsNameNoPeers) {
  for (absl::string_view name : {"pingpong", "raid_parity", "reflect"}) {
    absl::StatusOr<HandlerInstance> handler = CreateHandlerForTest(name);
    ASSERT_TRUE(handler.ok()) << name << ": " << handler.status();
    EXPECT_TRUE(handler->Peers().empty()) << name;
  }
  absl::StatusOr<HandlerInstance> bcast =
      CreateHandlerForTest("bcast", {{"tree", "a,b,c"}, {"rank", "0"}});
  ASSERT_TRUE(bcast.ok()) << bcast.status();
  EXPECT_EQ(bcast->Peers(), (std::vector<std::string>{"b", "c"}));
}

TEST(RegistryTest, UnknownParameterIsRejectedWithTheKnownOnes) {
  absl::StatusOr<HandlerInstance> handler =
      CreateHandlerForTest("count", {{"bucket", "4"}});
  EXPECT_EQ(handler.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(handler.status().message(),
              ::testing::HasSubstr("unknown parameter 'bucket'"));
  EXPECT_THAT(handler.status().message(), ::testing::HasSubstr("buckets"));
}

}  // namespace
}  // namespace spinnic
