// EtcdClient: the few calls of etcd's v3 API that the cluster services need
// (ranges, puts, deletes, transactions with compares, leases, watches),
// spoken as JSON over HTTP/1.1 to etcd's gateway (`/v3/...`, etcd 3.4 and
// later).
//
// Why the gateway and not gRPC: the calls are few and small, the gateway
// needs nothing beyond a socket (no generated code, no gRPC runtime with its
// own threads), and every step of a call can be bounded by one deadline.
// cluster/README.md has the rest.
//
// Every call has a deadline (EtcdOptions::call_timeout_millis). A call that
// cannot reach an endpoint, or that an endpoint answers "unavailable",
// tries the next one, round after round, until the deadline; it then fails
// with TimedOut. A call that changes state and whose request was sent before
// the connection failed is not sent again, since etcd may have applied it:
// it fails with IOError saying the outcome is unknown. Reads, lease grants
// and keep-alives are retried whatever happened, as repeating them is safe
// (a repeated grant leaves a lease that simply expires).
//
// Errors: etcd's answers map to NotFound (a lease that does not exist),
// InvalidArgument (a request etcd refuses), FailedPrecondition, TimedOut and
// IOError (everything else, the endpoint named). Thread-safe: calls from
// many threads share a pool of connections.
#ifndef STRATA_CLUSTER_ETCD_CLIENT_H_
#define STRATA_CLUSTER_ETCD_CLIENT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/http_connection.h"
#include "common/mutex.h"
#include "strata/status.h"

namespace strata::cluster {

struct EtcdOptions {
  // The cluster's client URLs, "host:port" or "http://host:port"; at least
  // one. Calls go to the one that answered last, and on to the others when
  // it does not.
  std::vector<std::string> endpoints;
  // How long one call may take, every retry included (milliseconds).
  uint64_t call_timeout_millis = 3000;
};

struct KeyValue {
  // Intentionally copyable.
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t version = 0;  // puts since the key was created; 0 when it does not exist
  int64_t lease = 0;    // the lease the key is attached to; 0 for none
};

struct RangeResult {
  // Intentionally copyable.
  int64_t revision = 0;  // the store's revision when the range was read
  int64_t count = 0;     // keys in the range (more than kvs.size() when limited)
  bool more = false;     // a limit cut the answer short
  std::vector<KeyValue> kvs;
};

// One comparison of a transaction's guard.
struct Compare {
  // Intentionally copyable.
  enum class Target : unsigned char { kValue, kVersion, kCreateRevision, kModRevision, kLease };
  enum class Op : unsigned char { kEqual, kNotEqual, kLess, kGreater };
  std::string key;
  Target target = Target::kValue;
  Op op = Op::kEqual;
  std::string value;   // kValue
  int64_t number = 0;  // every other target

  static Compare ValueEquals(std::string_view key, std::string_view value);
  // A key that does not exist has version 0 and create revision 0.
  static Compare Version(std::string_view key, Op op, int64_t version);
  static Compare CreateRevision(std::string_view key, Op op, int64_t revision);
  static Compare ModRevision(std::string_view key, Op op, int64_t revision);
};

// One operation of a transaction branch.
struct TxnOp {
  // Intentionally copyable.
  enum class Kind : unsigned char { kRange, kPut, kDelete };
  Kind kind = Kind::kRange;
  std::string key;
  std::string range_end;  // kRange, kDelete: empty for the one key
  std::string value;      // kPut
  int64_t lease = 0;      // kPut

  static TxnOp Get(std::string_view key);
  static TxnOp Range(std::string_view key, std::string_view range_end);
  static TxnOp Put(std::string_view key, std::string_view value, int64_t lease = 0);
  static TxnOp Delete(std::string_view key, std::string_view range_end = {});
};

struct TxnResult {
  // Intentionally copyable.
  bool succeeded = false;  // every compare held; the success branch ran
  int64_t revision = 0;    // the store's revision after the transaction
  // One per kRange operation of the branch that ran, in order.
  std::vector<RangeResult> ranges;
};

struct WatchEvent {
  // Intentionally copyable.
  enum class Type : unsigned char { kPut, kDelete };
  Type type = Type::kPut;
  KeyValue kv;  // for a delete: the key and the revision it was deleted at
};

// A watch over a key range, on a connection of its own. Thread-compatible,
// except Cancel().
class EtcdWatch {
 public:
  ~EtcdWatch();
  EtcdWatch(const EtcdWatch&) = delete;
  EtcdWatch& operator=(const EtcdWatch&) = delete;

  // The next events, in revision order, waiting up to `timeout_millis`:
  // TimedOut when none came (the watch goes on). Aborted when etcd ended the
  // watch (its start revision was compacted away, say); IOError when the
  // connection failed or Cancel() was called. After either, make a new
  // watch from the last revision seen plus one.
  Result<std::vector<WatchEvent>> Next(uint64_t timeout_millis);

  // Ends the watch; a Next() blocked in another thread returns IOError.
  void Cancel();

 private:
  friend class EtcdClient;
  explicit EtcdWatch(std::unique_ptr<HttpConnection> connection);
  std::unique_ptr<HttpConnection> connection_;
};

class EtcdClient {
 public:
  // A client of the cluster at `options.endpoints`. Connects lazily: a
  // cluster that is down fails the first call, not this. InvalidArgument
  // for a malformed endpoint or none.
  static Result<std::unique_ptr<EtcdClient>> Open(const EtcdOptions& options);

  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  // The value of `key`: NotFound when it does not exist.
  Result<KeyValue> Get(std::string_view key);
  // The keys in [key, range_end) (range_end empty: `key` alone), at most
  // `limit` of them (0: all).
  Result<RangeResult> Range(std::string_view key, std::string_view range_end, int64_t limit = 0);
  // Sets `key`, attached to `lease` unless 0. Returns the new revision.
  Result<int64_t> Put(std::string_view key, std::string_view value, int64_t lease = 0);
  // Removes the keys in [key, range_end) (range_end empty: `key` alone).
  // Returns how many there were.
  Result<int64_t> Delete(std::string_view key, std::string_view range_end = {});
  // If every compare holds, runs `success`, else `failure`, atomically.
  Result<TxnResult> Txn(const std::vector<Compare>& compares, const std::vector<TxnOp>& success,
                        const std::vector<TxnOp>& failure = {});

  // A new lease of `ttl_seconds` (etcd may grant more, never less).
  // Returns its id and granted TTL in seconds.
  Result<std::pair<int64_t, int64_t>> GrantLease(int64_t ttl_seconds);
  // Renews `lease` once. Returns its TTL in seconds, now full again;
  // NotFound when the lease has expired or was revoked.
  Result<int64_t> KeepAliveOnce(int64_t lease);
  // Ends `lease` and deletes its keys. NotFound when it no longer exists.
  Status RevokeLease(int64_t lease);
  // The seconds `lease` has left; NotFound when it no longer exists.
  Result<int64_t> LeaseTimeToLive(int64_t lease);

  // Watches [key, range_end) (range_end empty: `key` alone) from
  // `start_revision` (0: from now). Returns once etcd confirmed the watch.
  Result<std::unique_ptr<EtcdWatch>> Watch(std::string_view key, std::string_view range_end,
                                           int64_t start_revision = 0);

  // The end of the range of every key that starts with `prefix` (for
  // Range/Delete/Watch): the prefix with its last byte below 0xff raised.
  static std::string PrefixEnd(std::string_view prefix);

  const EtcdOptions& options() const { return options_; }

 private:
  EtcdClient(EtcdOptions options, std::vector<Endpoint> endpoints);

  // POSTs `body` to `path` as described at the top of this file; the parsed
  // JSON reply of a 200 answer goes to `*reply`.
  Status Call(std::string_view path, const std::string& body, bool retry_after_send,
              std::string* reply);
  std::unique_ptr<HttpConnection> TakeConnection(size_t endpoint);
  void ReturnConnection(size_t endpoint, std::unique_ptr<HttpConnection> connection);

  const EtcdOptions options_;
  const std::vector<Endpoint> endpoints_;
  Mutex mu_;
  size_t preferred_ GUARDED_BY(mu_) = 0;  // the endpoint that answered last
  // Idle connections, per endpoint.
  std::vector<std::vector<std::unique_ptr<HttpConnection>>> idle_ GUARDED_BY(mu_);
};

}  // namespace strata::cluster

#endif  // STRATA_CLUSTER_ETCD_CLIENT_H_
