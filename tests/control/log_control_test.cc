// Logs over the control API: SetLogLevel / ListLogLevels against rte_log,
// and the audit trail (control/grpc/audit_interceptor.h): exactly one line
// per mutating call, none for reads. A real dataplane (net_ring ports, EAL
// without hugepages), the real server on a Unix socket, a real gRPC client;
// rte_log writes to a file the test reads.
#include <rte_log.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "control/grpc/audit_interceptor.h"
#include "control/grpc/control_server.h"
#include "dataplane/common/log.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "spinnic/v1/control.grpc.pb.h"
#include "tests/common/ring_dataplane.h"

namespace spinnic {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::StartsWith;

class LogControlTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // Global level NOTICE: the audit lines pass, DPDK's INFO chatter not.
    ASSERT_TRUE(
        InitEal({"log_control_test", "--no-huge", "-m", "128", "--no-pci",
                 "--no-shconf", "--lcores", "0@0,1@0", "--log-level", "6"})
            .ok());
  }

  void SetUp() override {
    static int instance = 0;
    auto rings =
        testing_rings::RingDataplane::Create(absl::StrCat("log", ++instance));
    ASSERT_TRUE(rings.ok()) << rings.status();
    rings_ = *std::move(rings);
    dir_ = absl::StrCat("/tmp/spinnic-log-test-", getpid());
    log_path_ = dir_ + "/log";
    socket_ = dir_ + "/s.sock";
    auto server = ControlServer::Start({.unix_socket = socket_},
                                       rings_->config(), &rings_->dataplane());
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    log_ = std::fopen(log_path_.c_str(), "w");
    ASSERT_NE(log_, nullptr);
    ASSERT_EQ(rte_openlog_stream(log_), 0);
    stub_ = v1::Spinnic::NewStub(grpc::CreateChannel(
        absl::StrCat("unix:", socket_), grpc::InsecureChannelCredentials()));
  }

  void TearDown() override {
    server_.reset();
    rings_.reset();
    rte_openlog_stream(nullptr);  // back to stderr
    std::fclose(log_);
    std::remove(log_path_.c_str());
    rmdir(dir_.c_str());
  }

  // The audit lines written since the previous call (rte_log flushes each
  // message, and the interceptor logs before the status is sent).
  std::vector<std::string> NewAuditLines() {
    std::ifstream file(log_path_);
    std::stringstream text;
    text << file.rdbuf();
    std::vector<std::string> lines;
    int index = 0;
    for (absl::string_view line : absl::StrSplit(text.str(), '\n')) {
      if (!absl::StartsWith(line, "audit ")) continue;
      if (index++ >= seen_) lines.emplace_back(line);
    }
    seen_ = index;
    return lines;
  }

  grpc::Status Install(const std::string& name, const std::string& kind) {
    v1::InstallHandlerRequest request;
    request.mutable_handler()->set_name(name);
    request.mutable_handler()->set_kind(kind);
    grpc::ClientContext context;
    v1::InstallHandlerResponse response;
    return stub_->InstallHandler(&context, request, &response);
  }

  grpc::Status SetLevel(const std::string& component, const std::string& level,
                        v1::SetLogLevelResponse* response) {
    v1::SetLogLevelRequest request;
    request.set_component(component);
    request.set_level(level);
    grpc::ClientContext context;
    return stub_->SetLogLevel(&context, request, response);
  }

  v1::ListLogLevelsResponse ListLevels(bool include_dpdk) {
    v1::ListLogLevelsRequest request;
    request.set_include_dpdk(include_dpdk);
    grpc::ClientContext context;
    v1::ListLogLevelsResponse response;
    EXPECT_TRUE(stub_->ListLogLevels(&context, request, &response).ok());
    return response;
  }

  std::unique_ptr<testing_rings::RingDataplane> rings_;
  std::string dir_;
  std::string log_path_;
  std::string socket_;
  FILE* log_ = nullptr;
  int seen_ = 0;
  std::unique_ptr<ControlServer> server_;
  std::unique_ptr<v1::Spinnic::Stub> stub_;
};

TEST_F(LogControlTest, EachMutatingCallWritesOneAuditLineReadsNone) {
  ASSERT_TRUE(Install("c1", "count").ok());
  EXPECT_THAT(NewAuditLines(),
              ElementsAre(MatchesRegex(
                  "audit peer=unix:[^ ]* "
                  "method=/spinnic.v1.Spinnic/InstallHandler target=c1 "
                  "code=OK ms=[0-9]+\\.[0-9]")));

  // Refused: the code and the server's message, quoted and escaped.
  EXPECT_EQ(Install("x y", "count").error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  std::vector<std::string> refused = NewAuditLines();
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_THAT(refused[0], StartsWith("audit peer=unix:"));
  EXPECT_THAT(refused[0],
              HasSubstr(" method=/spinnic.v1.Spinnic/InstallHandler "
                        "target=\"x y\" code=INVALID_ARGUMENT "
                        "error=\"handler.name: \\\"x y\\\" contains "
                        "\\\" \\\"; use only letters, digits, '_', '-' "
                        "and '.'\" ms="));

  {
    grpc::ClientContext context;
    v1::ListHandlersResponse listed;
    ASSERT_TRUE(stub_->ListHandlers(&context, {}, &listed).ok());
  }
  {
    grpc::ClientContext context;
    v1::GetInfoResponse info;
    ASSERT_TRUE(stub_->GetInfo(&context, {}, &info).ok());
  }
  {
    grpc::ClientContext context;
    v1::Stats stats;
    ASSERT_TRUE(stub_->GetStats(&context, {}, &stats).ok());
  }
  ListLevels(true);
  EXPECT_THAT(NewAuditLines(), ElementsAre());

  grpc::ClientContext context;
  v1::RemoveHandlerRequest remove;
  remove.set_name("c1");
  v1::RemoveHandlerResponse removed;
  ASSERT_TRUE(stub_->RemoveHandler(&context, remove, &removed).ok());
  EXPECT_THAT(NewAuditLines(),
              ElementsAre(HasSubstr(
                  " method=/spinnic.v1.Spinnic/RemoveHandler target=c1 "
                  "code=OK ms=")));
}

TEST_F(LogControlTest, SetLogLevelChangesRteLogAndIsAudited) {
  v1::SetLogLevelResponse response;
  ASSERT_TRUE(SetLevel("roce", "debug", &response).ok());
  EXPECT_EQ(rte_log_get_level(log::roce), RTE_LOG_DEBUG);
  ASSERT_EQ(response.changed_size(), 1);
  EXPECT_EQ(response.changed(0).name(), "spinnic.roce");
  EXPECT_EQ(response.changed(0).level(), "debug");
  EXPECT_THAT(NewAuditLines(),
              ElementsAre(HasSubstr(
                  " method=/spinnic.v1.Spinnic/SetLogLevel target=roce "
                  "code=OK ")));

  response.Clear();
  ASSERT_TRUE(SetLevel("spinnic.roce", "6", &response).ok());
  EXPECT_EQ(rte_log_get_level(log::roce), RTE_LOG_NOTICE);

  // DPDK's own types, by name and by glob.
  ASSERT_TRUE(SetLevel("lib.eal", "WARNING", &response).ok());
  EXPECT_EQ(rte_log_get_level(RTE_LOGTYPE_EAL), RTE_LOG_WARNING);
  response.Clear();
  ASSERT_TRUE(SetLevel("lib.mem*", "err", &response).ok());
  EXPECT_EQ(rte_log_get_level(RTE_LOGTYPE_MEMPOOL), RTE_LOG_ERR);
  EXPECT_EQ(rte_log_get_level(RTE_LOGTYPE_EAL), RTE_LOG_WARNING);
  ASSERT_GE(response.changed_size(), 1);
  for (const v1::LogTypeLevel& type : response.changed()) {
    EXPECT_THAT(type.name(), MatchesRegex("lib\\.mem.*"));
    EXPECT_EQ(type.level(), "err");
  }

  ListLevels(false);
  v1::ListLogLevelsResponse listed = ListLevels(false);
  EXPECT_EQ(listed.global_level(), "notice");
  std::vector<std::string> names;
  for (const v1::LogTypeLevel& type : listed.levels()) {
    names.push_back(absl::StrCat(type.name(), "=", type.level()));
  }
  EXPECT_THAT(names, ElementsAre("spinnic.control=info",
                                 "spinnic.dataplane=info", "spinnic.diad=info",
                                 "spinnic.impair=info", "spinnic.roce=notice"));
  EXPECT_GT(ListLevels(true).levels_size(), listed.levels_size());

  NewAuditLines();
  const int before = rte_log_get_level(log::roce);
  grpc::Status unknown = SetLevel("nosuch", "debug", &response);
  EXPECT_EQ(unknown.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(unknown.error_message(),
            "unknown log component 'nosuch'; use one of control, dataplane, "
            "diad, impair, roce (the spinnic.* types), global, or a DPDK log "
            "type by name or glob (lib.eal, pmd.net.memif, pmd.net.*); "
            "`spinctl log --all` lists them");
  EXPECT_THAT(NewAuditLines(),
              ElementsAre(HasSubstr(
                  " target=nosuch code=INVALID_ARGUMENT error=\"unknown log "
                  "component 'nosuch'; use one of control,")));
  grpc::Status bad_level = SetLevel("roce", "loud", &response);
  EXPECT_EQ(bad_level.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(bad_level.error_message(),
            "unknown log level 'loud'; use emerg, alert, crit, err, warning, "
            "notice, info or debug (or 1..8)");
  EXPECT_EQ(SetLevel("pmd.nothing.*", "debug", &response).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(rte_log_get_level(log::roce), before);

  // Restores what the other tests see.
  ASSERT_TRUE(SetLevel("roce", "info", &response).ok());
  ASSERT_TRUE(SetLevel("lib.*", "info", &response).ok());
}

TEST(AuditRuleTest, MutatingIsEverySpinnicMethodButReads) {
  EXPECT_TRUE(IsMutatingMethod("/spinnic.v1.Spinnic/InstallHandler"));
  EXPECT_TRUE(IsMutatingMethod("/spinnic.v1.Spinnic/SetLogLevel"));
  EXPECT_TRUE(IsMutatingMethod("/spinnic.v1.DiadService/RemoteWrite"));
  EXPECT_TRUE(IsMutatingMethod("/spinnic.v1.RoceService/QpExecute"));
  EXPECT_FALSE(IsMutatingMethod("/spinnic.v1.Spinnic/GetInfo"));
  EXPECT_FALSE(IsMutatingMethod("/spinnic.v1.Spinnic/ListLogLevels"));
  EXPECT_FALSE(IsMutatingMethod("/spinnic.v1.Spinnic/WatchEvents"));
  EXPECT_FALSE(IsMutatingMethod("/spinnic.v1.Spinnic/ReadRegion"));
  EXPECT_FALSE(IsMutatingMethod("/grpc.health.v1.Health/Check"));
  EXPECT_FALSE(IsMutatingMethod(
      "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"));
}

TEST(AuditRuleTest, LogfmtValuesAreQuotedOnlyWhenNeeded) {
  EXPECT_EQ(LogfmtValue("ipv4:127.0.0.1:5000"), "ipv4:127.0.0.1:5000");
  EXPECT_EQ(LogfmtValue(""), "\"\"");
  EXPECT_EQ(LogfmtValue("CN=a b"), "\"CN=a b\"");
  EXPECT_EQ(LogfmtValue("say \"x\"\\\n\x01"), "\"say \\\"x\\\"\\\\\\n\\x01\"");
}

TEST(AuditRuleTest, TargetIsTheRequestsObject) {
  v1::InstallHandlerRequest install;
  install.mutable_handler()->set_name("counter");
  install.mutable_handler()->set_kind("count");
  EXPECT_EQ(AuditTarget(install), "counter");
  v1::DeregisterRegionRequest deregister;
  deregister.set_id(7);
  EXPECT_EQ(AuditTarget(deregister), "7");
  EXPECT_EQ(AuditTarget(v1::GetInfoRequest()), "");
}

}  // namespace
}  // namespace spinnic
