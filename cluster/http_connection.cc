#include "cluster/http_connection.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace strata::cluster {
namespace {

// Largest response head and body line taken: etcd's replies are small, and a
// peer that sends more is not etcd.
constexpr size_t kMaxHead = 64 << 10;
constexpr size_t kMaxBody = 64 << 20;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

bool ParseDecimal(std::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 18) return false;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

bool ParseHex(std::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 15) return false;
  int64_t v = 0;
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    } else {
      return false;
    }
    v = v * 16 + d;
  }
  *out = v;
  return true;
}

}  // namespace

HttpConnection::HttpConnection(int fd, Endpoint endpoint)
    : fd_(fd), endpoint_(std::move(endpoint)) {}

HttpConnection::~HttpConnection() { ::close(fd_); }

Result<std::unique_ptr<HttpConnection>> HttpConnection::Connect(const Endpoint& endpoint,
                                                                Deadline deadline) {
  STRATA_ASSIGN_OR_RETURN(int fd, ConnectTo(endpoint, deadline));
  return std::unique_ptr<HttpConnection>(new HttpConnection(fd, endpoint));
}

std::string HttpConnection::PostRequest(std::string_view path, std::string_view body) const {
  std::string request;
  request.reserve(body.size() + 160);
  request += "POST ";
  request += path;
  request += " HTTP/1.1\r\nHost: ";
  request += endpoint_.ToString();
  request += "\r\nContent-Type: application/json\r\nContent-Length: ";
  request += std::to_string(body.size());
  request += "\r\n\r\n";
  request += body;
  return request;
}

Status HttpConnection::Fail(Status s) {
  reusable_ = false;
  return s;
}

Status HttpConnection::WriteAll(std::string_view bytes, Deadline deadline) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n > 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd_, POLLOUT, 0};
      const int r = ::poll(&p, 1, RemainingMillis(deadline));
      if (r == 0)
        return Fail(Status::TimedOut("writing to " + endpoint_.ToString() + " timed out"));
      continue;
    }
    return Fail(
        Status::IOError("writing to " + endpoint_.ToString() + ": " + std::strerror(errno)));
  }
  return Status::OK();
}

Status HttpConnection::ReadSome(Deadline deadline) {
  while (true) {
    char buf[16384];
    const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n > 0) {
      in_.append(buf, static_cast<size_t>(n));
      return Status::OK();
    }
    if (n == 0) {
      eof_ = true;
      return Fail(Status::IOError("connection to " + endpoint_.ToString() + " closed"));
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return Fail(
          Status::IOError("reading from " + endpoint_.ToString() + ": " + std::strerror(errno)));
    }
    pollfd p{fd_, POLLIN, 0};
    const int r = ::poll(&p, 1, RemainingMillis(deadline));
    if (r == 0) return Status::TimedOut("reading from " + endpoint_.ToString() + " timed out");
  }
}

Status HttpConnection::ReadHead(Deadline deadline, int* status) {
  size_t end;
  while ((end = in_.find("\r\n\r\n")) == std::string::npos) {
    if (in_.size() > kMaxHead) return Fail(Status::Corruption("HTTP response head too long"));
    Status s = ReadSome(deadline);
    if (!s.ok()) return Fail(std::move(s));
  }
  const std::string head = in_.substr(0, end);
  in_.erase(0, end + 4);
  std::string_view rest = head;
  const size_t eol = rest.find("\r\n");
  const std::string_view status_line = rest.substr(0, eol);
  rest.remove_prefix(eol == std::string_view::npos ? rest.size() : eol + 2);
  // "HTTP/1.1 200 OK"
  const size_t sp = status_line.find(' ');
  int64_t code = 0;
  if (status_line.substr(0, 5) != "HTTP/" || sp == std::string_view::npos ||
      !ParseDecimal(status_line.substr(sp + 1, 3), &code)) {
    return Fail(Status::Corruption("bad HTTP status line from " + endpoint_.ToString()));
  }
  *status = static_cast<int>(code);
  chunked_ = false;
  close_after_ = false;
  remaining_ = -1;  // until the connection closes, unless told otherwise
  in_chunk_ = false;
  body_done_ = false;
  body_.clear();
  while (!rest.empty()) {
    const size_t line_end = rest.find("\r\n");
    const std::string_view line = rest.substr(0, line_end);
    rest.remove_prefix(line_end == std::string_view::npos ? rest.size() : line_end + 2);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string name = Lower(Trim(line.substr(0, colon)));
    const std::string value = Lower(Trim(line.substr(colon + 1)));
    if (name == "content-length") {
      if (!ParseDecimal(value, &remaining_) || static_cast<size_t>(remaining_) > kMaxBody) {
        return Fail(Status::Corruption("bad Content-Length from " + endpoint_.ToString()));
      }
    } else if (name == "transfer-encoding" && value.find("chunked") != std::string::npos) {
      chunked_ = true;
    } else if (name == "connection" && value == "close") {
      close_after_ = true;
    }
  }
  if (chunked_) remaining_ = 0;
  if (!chunked_ && remaining_ < 0) close_after_ = true;
  if (!chunked_ && remaining_ == 0) body_done_ = true;
  return Status::OK();
}

Status HttpConnection::DecodeBody() {
  while (!body_done_ && !in_.empty()) {
    if (!chunked_) {
      if (remaining_ < 0) {  // until close
        body_ += in_;
        in_.clear();
        break;
      }
      const size_t n = std::min<size_t>(in_.size(), static_cast<size_t>(remaining_));
      body_.append(in_, 0, n);
      in_.erase(0, n);
      remaining_ -= static_cast<int64_t>(n);
      if (remaining_ == 0) body_done_ = true;
      continue;
    }
    if (in_chunk_) {
      if (remaining_ > 0) {
        const size_t n = std::min<size_t>(in_.size(), static_cast<size_t>(remaining_));
        body_.append(in_, 0, n);
        in_.erase(0, n);
        remaining_ -= static_cast<int64_t>(n);
        continue;
      }
      if (in_.size() < 2) break;
      if (in_.compare(0, 2, "\r\n") != 0) {
        return Fail(Status::Corruption("bad chunk end from " + endpoint_.ToString()));
      }
      in_.erase(0, 2);
      in_chunk_ = false;
      continue;
    }
    const size_t eol = in_.find("\r\n");
    if (eol == std::string::npos) {
      if (in_.size() > kMaxHead) return Fail(Status::Corruption("chunk size line too long"));
      break;
    }
    std::string_view size_text(in_.data(), eol);
    size_text = Trim(size_text.substr(0, size_text.find(';')));
    int64_t size = 0;
    if (!ParseHex(size_text, &size) || static_cast<size_t>(size) > kMaxBody) {
      return Fail(Status::Corruption("bad chunk size from " + endpoint_.ToString()));
    }
    if (size == 0) {
      // The last chunk: trailers up to an empty line.
      const size_t end = in_.find("\r\n\r\n", eol);
      if (eol + 2 <= in_.size() && in_.compare(eol + 2, 2, "\r\n") == 0) {
        in_.erase(0, eol + 4);
      } else if (end != std::string::npos) {
        in_.erase(0, end + 4);
      } else {
        break;
      }
      body_done_ = true;
      break;
    }
    in_.erase(0, eol + 2);
    remaining_ = size;
    in_chunk_ = true;
  }
  if (body_.size() > kMaxBody) return Fail(Status::Corruption("HTTP body too long"));
  return Status::OK();
}

Status HttpConnection::ReadWholeBody(Deadline deadline) {
  STRATA_RETURN_IF_ERROR(DecodeBody());
  while (!body_done_) {
    Status s = ReadSome(deadline);
    if (!s.ok()) {
      if (remaining_ < 0 && !chunked_ && eof_) {  // until close: EOF ends the body
        body_done_ = true;
        break;
      }
      return Fail(std::move(s));
    }
    STRATA_RETURN_IF_ERROR(DecodeBody());
  }
  if (close_after_) reusable_ = false;
  return Status::OK();
}

Result<HttpConnection::Response> HttpConnection::Post(std::string_view path, std::string_view body,
                                                      Deadline deadline, bool* sent) {
  *sent = false;
  if (!reusable_) return Status::IOError("connection to " + endpoint_.ToString() + " is closed");
  STRATA_RETURN_IF_ERROR(WriteAll(PostRequest(path, body), deadline));
  *sent = true;
  Response response;
  Status s = ReadHead(deadline, &response.status);
  if (s.ok()) s = ReadWholeBody(deadline);
  if (!s.ok()) return Fail(std::move(s));
  response.body = std::move(body_);
  body_.clear();
  return response;
}

Status HttpConnection::PostStream(std::string_view path, std::string_view body, Deadline deadline,
                                  int* status, std::string* error_body) {
  STRATA_RETURN_IF_ERROR(WriteAll(PostRequest(path, body), deadline));
  Status s = ReadHead(deadline, status);
  if (!s.ok()) return Fail(std::move(s));
  reusable_ = false;  // a stream ends only with the connection
  if (*status != 200) {
    STRATA_RETURN_IF_ERROR(ReadWholeBody(deadline));
    *error_body = std::move(body_);
    body_.clear();
  }
  return DecodeBody();
}

Result<std::string> HttpConnection::NextLine(Deadline deadline) {
  while (true) {
    const size_t eol = body_.find('\n');
    if (eol != std::string::npos) {
      std::string line = body_.substr(0, eol);
      body_.erase(0, eol + 1);
      return line;
    }
    if (body_done_) {
      return Status::IOError("stream from " + endpoint_.ToString() + " ended");
    }
    STRATA_RETURN_IF_ERROR(ReadSome(deadline));
    STRATA_RETURN_IF_ERROR(DecodeBody());
  }
}

void HttpConnection::Shutdown() { ::shutdown(fd_, SHUT_RDWR); }

bool HttpConnection::PeerClosed() const {
  pollfd p{fd_, POLLIN | POLLRDHUP, 0};
  return ::poll(&p, 1, 0) != 0;
}

}  // namespace strata::cluster
