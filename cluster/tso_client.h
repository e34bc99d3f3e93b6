// TsoClient: a txn::TimestampOracle that takes its timestamps from the
// timestamp service (cluster/tso_server.h), so that transactions in many
// processes share one order.
//
// The client finds the leader through etcd (<root>/tso/leader) and keeps one
// connection to it. Concurrent calls are batched: while one request is on
// the wire, the calls that arrive queue up, and the next request asks for
// all of them at once; each call gets its own consecutive range. A call
// that began after another returned is answered by a later request, so its
// timestamps are higher, as TimestampOracle requires.
//
// When the leader does not answer (it died, lost its lease, or moved), the
// client asks etcd again and retries until the call's deadline; then the
// call fails with TimedOut, naming the last error. Thread-safe.
#ifndef STRATA_CLUSTER_TSO_CLIENT_H_
#define STRATA_CLUSTER_TSO_CLIENT_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "cluster/etcd_client.h"
#include "common/mutex.h"
#include "strata/status.h"
#include "txn/timestamp_oracle.h"

namespace strata::cluster {

struct TsoClientOptions {
  EtcdOptions etcd;
  // The etcd key prefix of the cluster (TsoServerOptions::root).
  std::string root = "/strata";
  // How long one GetTimestamp(s) call may take, failover included
  // (milliseconds). Longer than the servers' lease TTL rides out a leader's
  // death; shorter fails calls sooner.
  uint64_t call_timeout_millis = 5000;
};

class TsoClient : public txn::TimestampOracle {
 public:
  // Does not connect yet: the first call finds the leader. InvalidArgument
  // for bad options.
  static Result<std::unique_ptr<TsoClient>> Open(const TsoClientOptions& options);

  ~TsoClient() override;
  TsoClient(const TsoClient&) = delete;
  TsoClient& operator=(const TsoClient&) = delete;

  Result<uint64_t> GetTimestamp() override;
  Status GetTimestamps(uint32_t n, uint64_t* first) override;

  // Round trips to the leader so far (fewer than calls when calls were
  // batched).
  uint64_t requests() const;

 private:
  struct Waiter;
  TsoClient(TsoClientOptions options, std::unique_ptr<EtcdClient> etcd);

  // Sends one request for the calls at the head of queue_ and hands their
  // timestamps out; then hands sending to the next queued call. Called by
  // the one thread whose turn it is to send.
  void SendQueued();
  // Fetches `n` timestamps from the leader, finding it and retrying until
  // `deadline`. Called by one thread at a time (the one sending).
  Status Fetch(uint32_t n, Deadline deadline, uint64_t* first);
  Status FetchOnce(uint32_t n, Deadline deadline, uint64_t* first, bool* retry_same_leader);
  void Disconnect();

  const TsoClientOptions options_;
  const std::unique_ptr<EtcdClient> etcd_;

  mutable Mutex mu_;
  std::deque<std::shared_ptr<Waiter>> queue_ GUARDED_BY(mu_);
  // A call is sending, or has been told to send next: calls that come
  // meanwhile queue up.
  bool sending_ GUARDED_BY(mu_) = false;
  uint64_t requests_ GUARDED_BY(mu_) = 0;

  // Owned by the sending thread.
  int fd_ = -1;
  std::string leader_;
};

}  // namespace strata::cluster

#endif  // STRATA_CLUSTER_TSO_CLIENT_H_
