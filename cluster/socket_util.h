// Socket steps the cluster's clients and servers share: connect, listen,
// and read or write a whole buffer, each bounded by a deadline. Sockets are
// non-blocking; waits are poll() calls.
//
// Functions are thread-safe (they share no state).
#ifndef STRATA_CLUSTER_SOCKET_UTIL_H_
#define STRATA_CLUSTER_SOCKET_UTIL_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "strata/status.h"

namespace strata::cluster {

using Deadline = std::chrono::steady_clock::time_point;

// host:port, from "host:port" or "http://host:port" (no path, no TLS).
struct Endpoint {
  // Intentionally copyable.
  std::string host;
  uint16_t port = 0;

  // InvalidArgument for anything else, an https URL included. Port 0 (any
  // free port) only with `listening`.
  static Result<Endpoint> Parse(std::string_view text, bool listening = false);
  std::string ToString() const { return host + ":" + std::to_string(port); }
};

// Milliseconds left until `deadline`, 0 once it has passed.
int RemainingMillis(Deadline deadline);

// Reads exactly `n` bytes. TimedOut at the deadline; IOError when the peer
// closes or the socket fails.
Status ReadFull(int fd, void* buf, size_t n, Deadline deadline);
// Reads into buf[*have, cap) until at least `need` bytes are there, taking
// whatever else has arrived too (one recv for a whole reply, usually).
// Waits first when `wait_first` (a reply to a request just sent is not
// there yet: this saves a recv that would find nothing). Errors as
// ReadFull's. REQUIRES: need <= cap.
Status ReadAtLeast(int fd, char* buf, size_t cap, size_t need, size_t* have, Deadline deadline,
                   bool wait_first);
// Writes all of `bytes`. TimedOut at the deadline; IOError on failure.
Status WriteFull(int fd, const void* buf, size_t n, Deadline deadline);
// A listening TCP socket (non-blocking) at `endpoint` (port 0: any free
// one); the port it got goes to `*port`.
Result<int> Listen(const Endpoint& endpoint, uint16_t* port);
// A connected TCP socket (non-blocking) to `endpoint`.
Result<int> ConnectTo(const Endpoint& endpoint, Deadline deadline);

}  // namespace strata::cluster

#endif  // STRATA_CLUSTER_SOCKET_UTIL_H_
