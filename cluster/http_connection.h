// HttpConnection: one HTTP/1.1 client connection over TCP, for the JSON POST
// calls of etcd's gateway, every step bounded by a deadline.
//
// A connection carries one request at a time and is kept open between them
// (keep-alive) unless the server closes it. A streamed response (a watch)
// is read line by line, as the gateway writes one JSON message per line.
//
// Thread-compatible: one thread at a time uses a connection, except
// Shutdown(), which any thread may call to wake a blocked read.
#ifndef STRATA_CLUSTER_HTTP_CONNECTION_H_
#define STRATA_CLUSTER_HTTP_CONNECTION_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "cluster/socket_util.h"
#include "strata/status.h"

namespace strata::cluster {

class HttpConnection {
 public:
  struct Response {
    // Intentionally copyable.
    int status = 0;  // the HTTP status code
    std::string body;
  };

  // A connection to `endpoint`. IOError when it refuses or cannot be
  // resolved, TimedOut at the deadline.
  static Result<std::unique_ptr<HttpConnection>> Connect(const Endpoint& endpoint,
                                                         Deadline deadline);

  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  // POSTs `body` (JSON) to `path` and reads the whole response. `*sent` says
  // whether the request was written whole, after which the server may have
  // acted on it even when this returns an error. IOError when the
  // connection fails, TimedOut at the deadline; either leaves it unusable.
  Result<Response> Post(std::string_view path, std::string_view body, Deadline deadline,
                        bool* sent);

  // Starts a streamed POST: writes the request and reads the response head.
  // Its status code goes to `*status`; a non-200 response's body is then
  // read whole into `*error_body`. Errors as Post's.
  Status PostStream(std::string_view path, std::string_view body, Deadline deadline, int* status,
                    std::string* error_body);

  // The next line of a streamed body, without its newline. TimedOut at the
  // deadline (the stream stays usable); IOError when the stream ends or the
  // connection fails or is shut down.
  Result<std::string> NextLine(Deadline deadline);

  // Shuts the socket down: a read blocked in another thread returns IOError.
  void Shutdown();

  // Whether another request may be sent on this connection.
  bool reusable() const { return reusable_; }
  // Whether the peer has closed an idle connection (or sent bytes nobody
  // asked for): it is not worth a request. Does not wait.
  bool PeerClosed() const;
  const Endpoint& endpoint() const { return endpoint_; }

 private:
  HttpConnection(int fd, Endpoint endpoint);

  // The bytes of a POST of `body` (JSON) to `path`.
  std::string PostRequest(std::string_view path, std::string_view body) const;
  Status WriteAll(std::string_view bytes, Deadline deadline);
  // Reads what the socket has (at least one byte) into in_.
  Status ReadSome(Deadline deadline);
  Status ReadHead(Deadline deadline, int* status);
  // Moves decoded body bytes from in_ to body_. Sets body_done_ at the end of
  // the body.
  Status DecodeBody();
  // Reads and decodes until the whole body is in body_.
  Status ReadWholeBody(Deadline deadline);
  Status Fail(Status s);

  const int fd_;
  const Endpoint endpoint_;
  bool reusable_ = true;
  bool eof_ = false;  // the peer closed its side
  std::string in_;    // bytes read and not yet decoded
  std::string body_;  // decoded body bytes not yet consumed
  // The response being read.
  bool chunked_ = false;
  bool close_after_ = false;
  int64_t remaining_ = 0;  // body bytes left (length-delimited) or left in the chunk
  bool in_chunk_ = false;  // chunked: between a chunk's size line and its data's end
  bool body_done_ = false;
};

}  // namespace strata::cluster

#endif  // STRATA_CLUSTER_HTTP_CONNECTION_H_
