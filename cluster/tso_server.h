// TsoServer: one member of the timestamp service, PD's design on etcd.
//
// Any number of members run (the `strata-tso` daemon, or a TsoServer inside
// any process); one leads. The leader holds the key <root>/tso/leader under
// an etcd lease that it keeps alive, and that key tells clients
// (cluster/tso_client.h) where to connect. The others watch the key and
// campaign when it goes.
//
// A leader hands out timestamps (txn/timestamp.h layout: physical
// milliseconds << 18 | logical) only below a bound it has made durable in
// etcd (<root>/tso/bound), in an etcd transaction that re-checks its
// leadership; it raises the bound `window_millis` ahead of the clock before
// it is reached. A new leader starts at max(clock, last bound + 1 ms), so no
// timestamp is handed out twice or goes backwards across leaders. A leader
// stops serving before its lease can have expired (the lease's TTL from the
// moment its last renewal was sent, less a margin), and a new leader can
// only be elected once etcd has expired that lease, so two leaders never
// serve at once (given clocks that run at about the same rate).
//
// The wire protocol is cluster/tso_protocol.h. Thread-safe.
#ifndef STRATA_CLUSTER_TSO_SERVER_H_
#define STRATA_CLUSTER_TSO_SERVER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cluster/etcd_client.h"
#include "common/mutex.h"
#include "strata/status.h"

namespace strata::cluster {

struct TsoServerOptions {
  EtcdOptions etcd;
  // The etcd key prefix every Strata service of one cluster shares.
  std::string root = "/strata";
  // Where this member listens for clients: host:port, port 0 for any free
  // one.
  std::string listen = "127.0.0.1:0";
  // The address clients are told when this member leads; empty: the listen
  // host with the port it got.
  std::string advertise;
  // The leader's etcd lease (seconds, at least 1): how long timestamps stop
  // at most when a leader dies without resigning.
  int64_t lease_ttl_seconds = 3;
  // How far ahead of the clock each durable bound reaches (milliseconds,
  // 100 to 60000): larger, fewer etcd writes; a new leader starts at most
  // this far ahead of the clock.
  uint64_t window_millis = 3000;
};

class TsoServer {
 public:
  struct Stats {
    // Intentionally copyable.
    bool leader = false;
    uint64_t terms = 0;          // times this member became leader
    uint64_t requests = 0;       // requests answered with timestamps
    uint64_t timestamps = 0;     // timestamps handed out
    uint64_t bound_millis = 0;   // the durable bound of the current term
    uint64_t last_physical = 0;  // physical part of the last timestamp handed out
    // Why the last campaign or term ended without serving (etcd unreachable,
    // a bound key this service did not write), empty when none did.
    std::string last_error;
  };

  // Starts listening and campaigning. InvalidArgument for bad options,
  // IOError when the listen address cannot be bound.
  static Result<std::unique_ptr<TsoServer>> Start(const TsoServerOptions& options);

  // Stop().
  ~TsoServer();
  TsoServer(const TsoServer&) = delete;
  TsoServer& operator=(const TsoServer&) = delete;

  // Stops serving, resigns (revokes its lease, so another member takes over
  // at once) and joins every thread. Idempotent.
  void Stop();

  // The address clients reach this member at.
  const std::string& address() const { return address_; }
  Stats stats() const;

 private:
  TsoServer(TsoServerOptions options, std::unique_ptr<EtcdClient> etcd, int listen_fd,
            std::string address);

  void AcceptLoop();
  void ServeConnection(int fd);
  void SetError(std::string error);
  void CampaignLoop();
  // One term as leader: returns when leadership is lost or Stop() is
  // called; false when the term never started serving.
  bool Lead(int64_t lease, Deadline lease_valid_until, int64_t leader_revision);
  // Waits until the leader key is gone (or Stop()).
  void WaitForVacancy();
  // Hands out `n` timestamps from *first; the reply code otherwise.
  uint8_t Allocate(uint32_t n, uint64_t* first, std::string* why);
  void StepDown();
  // Sleeps up to `millis`, less if Stop() is called.
  void Pause(uint64_t millis);

  const TsoServerOptions options_;
  const std::unique_ptr<EtcdClient> etcd_;
  const int listen_fd_;
  const std::string address_;
  int wake_fds_[2] = {-1, -1};  // a pipe that wakes the accept loop at Stop()

  std::atomic<bool> stopping_{false};
  mutable Mutex mu_;
  CondVar cv_{&mu_};
  bool leader_ GUARDED_BY(mu_) = false;
  Deadline serve_until_ GUARDED_BY(mu_);  // the lease is surely alive until then
  uint64_t bound_ GUARDED_BY(mu_) = 0;    // physical parts handed out stay below it
  uint64_t physical_ GUARDED_BY(mu_) = 0;
  uint64_t logical_ GUARDED_BY(mu_) = 0;  // next logical value at physical_
  Stats stats_ GUARDED_BY(mu_);
  // One thread per client connection; a finished one is joined at the
  // next accept, so a long-running member does not pile them up.
  struct Connection {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::vector<Connection> connections_ GUARDED_BY(mu_);

  std::thread accept_thread_;
  std::thread campaign_thread_;
};

}  // namespace strata::cluster

#endif  // STRATA_CLUSTER_TSO_SERVER_H_
