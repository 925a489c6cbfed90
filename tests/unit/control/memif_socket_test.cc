// Memif server sockets left by a killed run (control/memif_socket.h): which
// vdev strings have a socket file, and what RemoveStaleMemifSockets does
// with a missing path, a stale socket, a live listener and a regular file.
#include "control/memif_socket.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace spinnic {
namespace {

using ::testing::HasSubstr;

TEST(MemifSocketTest, ServerSocketPathFollowsDpdkDefaults) {
  EXPECT_EQ(MemifServerSocketPath(
                "net_memif0,role=server,socket=/tmp/a.sock,socket-abstract=no"),
            "/tmp/a.sock");
  // role=server is DPDK's default; so is /run/memif.sock.
  EXPECT_EQ(MemifServerSocketPath("net_memif3,socket-abstract=no"),
            "/run/memif.sock");
  // An abstract socket (DPDK 22.11's default) leaves no file; a client
  // binds nothing; other drivers have no memif socket.
  EXPECT_EQ(MemifServerSocketPath("net_memif0,socket=/tmp/a.sock"), "");
  EXPECT_EQ(MemifServerSocketPath(
                "net_memif0,role=client,socket=/tmp/a.sock,socket-abstract=no"),
            "");
  EXPECT_EQ(MemifServerSocketPath("net_af_packet0,iface=veth0"), "");
  EXPECT_EQ(MemifServerSocketPath(""), "");
}

TEST(MemifSocketTest, EachPathOnceFromTheConfig) {
  v1::Config config;
  v1::Port* p0 = config.add_ports();
  p0->set_name("p0");
  p0->set_vdev("net_memif0,id=0,socket=/tmp/x.sock,socket-abstract=no");
  v1::Port* p1 = config.add_ports();
  p1->set_name("p1");
  p1->set_vdev("net_memif1,id=1,socket=/tmp/x.sock,socket-abstract=no");
  v1::Port* p2 = config.add_ports();
  p2->set_name("p2");
  p2->set_pci("0000:03:00.0");
  std::vector<MemifSocket> sockets = MemifServerSockets(config);
  ASSERT_EQ(sockets.size(), 1u);
  EXPECT_EQ(sockets[0].port, "p0");
  EXPECT_EQ(sockets[0].path, "/tmp/x.sock");
}

class MemifSocketFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/memif_socket_test.XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    path_ = dir_ + "/p0.sock";
  }
  void TearDown() override {
    if (listener_ >= 0) close(listener_);
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }
  // A socket bound to path_; listening, or closed without unlink (what a
  // killed server leaves).
  void Bind(bool listen_on_it) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path_.c_str(), sizeof address.sun_path - 1);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address),
              0);
    if (listen_on_it) {
      ASSERT_EQ(listen(fd, 1), 0);
      listener_ = fd;
    } else {
      close(fd);
    }
  }
  bool Exists() const {
    struct stat st;
    return lstat(path_.c_str(), &st) == 0;
  }

  std::string dir_;
  std::string path_;
  int listener_ = -1;
};

TEST_F(MemifSocketFiles, MissingPathIsNothingToDo) {
  std::vector<std::string> removed;
  EXPECT_TRUE(RemoveStaleMemifSockets({{"p0", path_}}, &removed).ok());
  EXPECT_TRUE(removed.empty());
}

TEST_F(MemifSocketFiles, StaleSocketIsRemoved) {
  Bind(/*listen_on_it=*/false);
  ASSERT_TRUE(Exists());
  std::vector<std::string> removed;
  EXPECT_TRUE(RemoveStaleMemifSockets({{"p0", path_}}, &removed).ok());
  EXPECT_EQ(removed, std::vector<std::string>{path_});
  EXPECT_FALSE(Exists());
}

TEST_F(MemifSocketFiles, LiveListenerIsRefusedAndNamed) {
  Bind(/*listen_on_it=*/true);
  std::vector<std::string> removed;
  absl::Status s = RemoveStaleMemifSockets({{"p0", path_}}, &removed);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("port 'p0': memif socket " + path_ +
                                     " is in use: another process"));
  // This process holds the listener: it is the one named.
  EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("pid ", getpid())));
  EXPECT_TRUE(removed.empty());
  EXPECT_TRUE(Exists());
}

TEST_F(MemifSocketFiles, RegularFileIsRefusedAndKept) {
  std::ofstream(path_) << "not a socket";
  std::vector<std::string> removed;
  absl::Status s = RemoveStaleMemifSockets({{"p0", path_}}, &removed);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("exists and is not a socket"));
  EXPECT_TRUE(Exists());
}

}  // namespace
}  // namespace spinnic
