// Memif server sockets left behind by a killed run. DPDK's net_memif server
// binds its Unix socket and refuses to start when the file exists; a run
// that was killed (SIGKILL, a crash) never removed it. Before the EAL
// starts, spinnicd looks at the socket file of every memif server port of
// its config (role=server, DPDK's default, with socket-abstract=no: an
// abstract socket leaves no file): a socket file nothing listens on
// (connect() says ECONNREFUSED) is stale and removed; one that something
// listens on is another process's, and spinnicd refuses to start, naming
// the path.
#ifndef SPINNIC_CONTROL_MEMIF_SOCKET_H_
#define SPINNIC_CONTROL_MEMIF_SOCKET_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "proto/spinnic/v1/config.pb.h"

namespace spinnic {

struct MemifSocket {
  std::string port;  // the config's port name
  std::string path;  // the socket file
};

// The socket files of `config`'s memif server ports, each path once (ports
// may share a socket with different ids).
std::vector<MemifSocket> MemifServerSockets(const v1::Config& config);

// The socket file of one vdev string, or "" when it is not a memif server
// with a socket file. DPDK's defaults: role=server, socket=/run/memif.sock,
// socket-abstract=yes.
std::string MemifServerSocketPath(absl::string_view vdev);

// Removes the stale ones of `sockets` (appending their paths to `removed`).
// FAILED_PRECONDITION, naming the port and path, when something listens on
// one, or when a path exists and is not a socket or cannot be checked.
absl::Status RemoveStaleMemifSockets(const std::vector<MemifSocket>& sockets,
                                     std::vector<std::string>* removed);

}  // namespace spinnic

#endif  // SPINNIC_CONTROL_MEMIF_SOCKET_H_
