#include "cluster/socket_util.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace strata::cluster {
namespace {

bool ParsePort(std::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 5) return false;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

}  // namespace

Result<Endpoint> Endpoint::Parse(std::string_view text, bool listening) {
  std::string_view rest = text;
  if (rest.substr(0, 8) == "https://") {
    return Status::InvalidArgument("endpoint '" + std::string(text.substr(0, 64)) +
                                   "': TLS is not supported");
  }
  if (rest.substr(0, 7) == "http://") rest.remove_prefix(7);
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  const size_t colon = rest.rfind(':');
  int64_t port = 0;
  if (colon == std::string_view::npos || colon == 0 || !ParsePort(rest.substr(colon + 1), &port) ||
      (port == 0 && !listening) || port > 65535 || rest.find('/') != std::string_view::npos) {
    return Status::InvalidArgument("endpoint '" + std::string(text.substr(0, 64)) +
                                   "': expected host:port or http://host:port");
  }
  Endpoint e;
  e.host.assign(rest.substr(0, colon));
  e.port = static_cast<uint16_t>(port);
  return e;
}

int RemainingMillis(Deadline deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                        deadline - std::chrono::steady_clock::now())
                        .count();
  return left <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left, 1 << 30));
}

Status ReadFull(int fd, void* buf, size_t n, Deadline deadline) {
  char* p = static_cast<char*>(buf);
  while (n > 0) {
    const ssize_t r = ::recv(fd, p, n, 0);
    if (r > 0) {
      p += r;
      n -= static_cast<size_t>(r);
      continue;
    }
    if (r == 0) return Status::IOError("connection closed by the peer");
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return Status::IOError(std::string("recv: ") + std::strerror(errno));
    }
    pollfd pfd{fd, POLLIN, 0};
    if (::poll(&pfd, 1, RemainingMillis(deadline)) == 0) return Status::TimedOut("read timed out");
  }
  return Status::OK();
}

Status ReadAtLeast(int fd, char* buf, size_t cap, size_t need, size_t* have, Deadline deadline,
                   bool wait_first) {
  bool wait = wait_first;
  while (*have < need) {
    if (wait) {
      pollfd pfd{fd, POLLIN, 0};
      if (::poll(&pfd, 1, RemainingMillis(deadline)) == 0) {
        return Status::TimedOut("read timed out");
      }
    }
    const ssize_t r = ::recv(fd, buf + *have, cap - *have, 0);
    if (r > 0) {
      *have += static_cast<size_t>(r);
      wait = true;  // the rest, if any, is still on its way
      continue;
    }
    if (r == 0) return Status::IOError("connection closed by the peer");
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return Status::IOError(std::string("recv: ") + std::strerror(errno));
    }
    wait = true;
  }
  return Status::OK();
}

Status WriteFull(int fd, const void* buf, size_t n, Deadline deadline) {
  const char* p = static_cast<const char*>(buf);
  while (n > 0) {
    const ssize_t r = ::send(fd, p, n, MSG_NOSIGNAL);
    if (r > 0) {
      p += r;
      n -= static_cast<size_t>(r);
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      return Status::IOError(std::string("send: ") + std::strerror(errno));
    }
    pollfd pfd{fd, POLLOUT, 0};
    if (::poll(&pfd, 1, RemainingMillis(deadline)) == 0) {
      return Status::TimedOut("write timed out");
    }
  }
  return Status::OK();
}

Result<int> Listen(const Endpoint& endpoint, uint16_t* port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* addrs = nullptr;
  const std::string service = std::to_string(endpoint.port);
  const int rc = ::getaddrinfo(endpoint.host.c_str(), service.c_str(), &hints, &addrs);
  if (rc != 0) {
    return Status::InvalidArgument("cannot resolve " + endpoint.ToString() + ": " +
                                   gai_strerror(rc));
  }
  Status last = Status::IOError("no address for " + endpoint.ToString());
  for (addrinfo* a = addrs; a != nullptr; a = a->ai_next) {
    const int fd =
        ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    (void)::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));  // best effort
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, 64) != 0) {
      last =
          Status::IOError("cannot listen at " + endpoint.ToString() + ": " + std::strerror(errno));
      ::close(fd);
      continue;
    }
    sockaddr_storage bound{};
    socklen_t len = sizeof(bound);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
    *port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                              : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    ::freeaddrinfo(addrs);
    return fd;
  }
  ::freeaddrinfo(addrs);
  return last;
}

Result<int> ConnectTo(const Endpoint& endpoint, Deadline deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* addrs = nullptr;
  const std::string service = std::to_string(endpoint.port);
  const int rc = ::getaddrinfo(endpoint.host.c_str(), service.c_str(), &hints, &addrs);
  if (rc != 0) {
    return Status::IOError("cannot resolve " + endpoint.ToString() + ": " + gai_strerror(rc));
  }
  Status last = Status::IOError("no address for " + endpoint.ToString());
  for (addrinfo* a = addrs; a != nullptr; a = a->ai_next) {
    const int fd =
        ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int err = 0;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        pollfd pfd{fd, POLLOUT, 0};
        const int n = ::poll(&pfd, 1, RemainingMillis(deadline));
        if (n == 0) {
          ::close(fd);
          ::freeaddrinfo(addrs);
          return Status::TimedOut("connecting to " + endpoint.ToString() + " timed out");
        }
        socklen_t len = sizeof(err);
        if (n < 0 || ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      }
    }
    if (err != 0) {
      last = Status::IOError("connecting to " + endpoint.ToString() + ": " + std::strerror(err));
      ::close(fd);
      continue;
    }
    int one = 1;
    (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));  // best effort
    ::freeaddrinfo(addrs);
    return fd;
  }
  ::freeaddrinfo(addrs);
  return last;
}

}  // namespace strata::cluster
