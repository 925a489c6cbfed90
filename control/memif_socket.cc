#include "control/memif_socket.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace spinnic {
namespace {

constexpr absl::string_view kMemifDriver = "net_memif";
constexpr absl::string_view kDefaultSocket = "/run/memif.sock";

// connect() to the socket file: 0 when something accepts, else errno.
int ConnectError(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.data(), path.size());
  // memif's sockets are SOCK_SEQPACKET; a stream connect would be refused
  // with EPROTOTYPE even by a live listener.
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  int error = 0;
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address),
              sizeof address) != 0) {
    error = errno;
  }
  close(fd);
  return error;
}

// The process listening on the Unix socket `path`, as "pid N (comm)", from
// /proc/net/unix (the socket's inode) and /proc/*/fd; "" when not found
// (another network namespace, no permission).
std::string ListenerOf(const std::string& path) {
  std::ifstream unix_table("/proc/net/unix");
  std::string line;
  std::string inode;
  while (std::getline(unix_table, line)) {
    // Num RefCount Protocol Flags Type St Inode Path
    std::vector<std::string> f =
        absl::StrSplit(line, ' ', absl::SkipWhitespace());
    if (f.size() >= 8 && f[7] == path && f[5] == "01") {  // listening
      inode = f[6];
      break;
    }
  }
  if (inode.empty()) return "";
  const std::string target = absl::StrCat("socket:[", inode, "]");
  std::error_code ec;
  for (const auto& proc : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string pid = proc.path().filename();
    if (pid.empty() || !absl::ascii_isdigit(pid[0])) continue;
    std::error_code fd_ec;
    for (const auto& fd :
         std::filesystem::directory_iterator(proc.path() / "fd", fd_ec)) {
      std::error_code link_ec;
      if (std::filesystem::read_symlink(fd.path(), link_ec) == target) {
        std::string comm;
        std::ifstream(proc.path() / "comm") >> comm;
        return absl::StrCat("pid ", pid, " (", comm, ")");
      }
    }
  }
  return "";
}

}  // namespace

std::string MemifServerSocketPath(absl::string_view vdev) {
  std::vector<absl::string_view> fields = absl::StrSplit(vdev, ',');
  if (fields.empty() || !absl::StartsWith(fields[0], kMemifDriver)) return "";
  std::string socket(kDefaultSocket);
  bool server = true;
  bool abstract = true;
  for (size_t i = 1; i < fields.size(); ++i) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(fields[i], absl::MaxSplits('=', 1));
    if (kv.first == "role") server = kv.second == "server";
    if (kv.first == "socket") socket = std::string(kv.second);
    if (kv.first == "socket-abstract") abstract = kv.second != "no";
  }
  return server && !abstract ? socket : "";
}

std::vector<MemifSocket> MemifServerSockets(const v1::Config& config) {
  std::vector<MemifSocket> out;
  absl::flat_hash_set<std::string> seen;
  for (const v1::Port& port : config.ports()) {
    if (port.device_case() != v1::Port::kVdev) continue;
    std::string path = MemifServerSocketPath(port.vdev());
    if (!path.empty() && seen.insert(path).second) {
      out.push_back({port.name(), std::move(path)});
    }
  }
  return out;
}

absl::Status RemoveStaleMemifSockets(const std::vector<MemifSocket>& sockets,
                                     std::vector<std::string>* removed) {
  for (const MemifSocket& s : sockets) {
    const std::string where =
        absl::StrCat("port '", s.port, "': memif socket ", s.path);
    struct stat st;
    if (lstat(s.path.c_str(), &st) != 0) {
      if (errno == ENOENT) continue;  // the usual case: nothing left behind
      return absl::FailedPreconditionError(absl::StrCat(
          where, ": cannot check it (", std::strerror(errno), ")"));
    }
    if (!S_ISSOCK(st.st_mode)) {
      return absl::FailedPreconditionError(
          absl::StrCat(where,
                       " exists and is not a socket; remove it or give the "
                       "port another socket= path"));
    }
    if (s.path.size() >= sizeof(sockaddr_un{}.sun_path)) continue;  // DPDK's
    const int error = ConnectError(s.path);
    if (error == 0) {
      const std::string who = ListenerOf(s.path);
      return absl::FailedPreconditionError(absl::StrCat(
          where, " is in use: another process",
          who.empty() ? "" : absl::StrCat(", ", who, ","),
          " listens on it (another spinnicd or memif server with the same "
          "socket= path); stop that process or give this port another "
          "socket= path"));
    }
    if (error != ECONNREFUSED) {
      return absl::FailedPreconditionError(absl::StrCat(
          where, ": cannot check it (connect: ", std::strerror(error), ")"));
    }
    // Nothing listens: a killed run's leftover.
    if (unlink(s.path.c_str()) != 0 && errno != ENOENT) {
      return absl::FailedPreconditionError(absl::StrCat(
          where, " is stale (nothing listens on it) but cannot be removed (",
          std::strerror(errno), ")"));
    }
    removed->push_back(s.path);
  }
  return absl::OkStatus();
}

}  // namespace spinnic
