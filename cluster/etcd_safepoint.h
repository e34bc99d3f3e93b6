// The GC safepoint of a cluster on etcd (TiDB keeps the same under
// /tidb/server/minstartts/ and in PD): what each process holds it down
// with, the service safepoints, and the safepoint itself.
//
// Keys, under <root>/gc/<name>/ (one `name` per collected keyspace, e.g. a
// tenant):
//
//   min_start_ts/<instance>  the oldest start_ts of a process's running
//                            transactions, under the process's liveness
//                            lease: it vanishes when the process dies
//   service/<id>             a service safepoint (a backup, a long reader),
//                            under a lease of its own time to live
//   safepoint                the published safepoint; only ever raised
//
// Rules (tests/cluster/etcd_safepoint_test.cc):
//   * Floor() is the minimum over every live process's min_start_ts and
//     every service safepoint that has not expired; UINT64_MAX when there
//     are none.
//   * Raise() never lowers the safepoint, whoever calls it and however
//     calls race: it is a compare-and-swap on the key's revision.
//   * A service safepoint at or below the published safepoint is refused
//     (FailedPrecondition), as GarbageCollector::HoldSafepoint refuses it.
//
// A process publishes its min_start_ts often enough that a transaction it
// begins is counted before a safepoint can pass its start_ts: a candidate
// safepoint trails the clock by the GC life time, which must be longer
// than the publication interval (gc/README.md).
//
// Thread-safe.
#ifndef STRATA_CLUSTER_ETCD_SAFEPOINT_H_
#define STRATA_CLUSTER_ETCD_SAFEPOINT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "cluster/etcd_client.h"
#include "common/mutex.h"
#include "gc/safepoint_store.h"
#include "strata/status.h"
#include "txn/shared_safepoints.h"

namespace strata::cluster {

class EtcdSafepoints {
 public:
  // The safepoint keys of `name` under `root`, through `etcd` (shared with
  // the caller; it must outlive this). InvalidArgument for an empty or
  // slash-holding name.
  static Result<std::unique_ptr<EtcdSafepoints>> Open(std::shared_ptr<EtcdClient> etcd,
                                                      std::string root, std::string name);

  // Publishes `ts` as the oldest start_ts running in instance `instance`,
  // attached to `lease` (the instance's liveness lease); UINT64_MAX removes
  // it (nothing running).
  Status PublishMinStartTs(uint64_t instance, int64_t lease, uint64_t ts);

  // Holds the safepoint at or below `ts` for `ttl_seconds` (etcd leases
  // count whole seconds; at least 1), replacing an earlier hold of `id`.
  // FailedPrecondition when `ts` is already below the safepoint.
  Status HoldService(std::string_view id, uint64_t ts, int64_t ttl_seconds);
  // Lets go of `id`; NotFound when it is not held.
  Status ReleaseService(std::string_view id);

  // The lowest timestamp any live process or unexpired service holds;
  // UINT64_MAX when none.
  Result<uint64_t> Floor();

  // The published safepoint; 0 before the first.
  Result<uint64_t> Get();
  // Raises the published safepoint to `safepoint` unless it is already at
  // or above it. Returns the safepoint now published.
  Result<uint64_t> Raise(uint64_t safepoint);

  std::string SafepointKey() const { return prefix_ + "safepoint"; }
  std::string MinStartTsPrefix() const { return prefix_ + "min_start_ts/"; }
  std::string ServicePrefix() const { return prefix_ + "service/"; }

 private:
  EtcdSafepoints(std::shared_ptr<EtcdClient> etcd, std::string prefix)
      : etcd_(std::move(etcd)), prefix_(std::move(prefix)) {}
  // The lowest value under `prefix`; UINT64_MAX when none.
  Result<uint64_t> LowestUnder(const std::string& prefix);

  const std::shared_ptr<EtcdClient> etcd_;
  const std::string prefix_;  // <root>/gc/<name>/
  Mutex mu_;
  std::map<std::string, int64_t, std::less<>> service_leases_ GUARDED_BY(mu_);  // id -> lease
};

// A gc::SafepointStore on the published safepoint, so a collector's
// safepoint is the cluster's. Get() is the value read at open or last
// raised through this store.
class EtcdSafepointStore final : public gc::SafepointStore {
 public:
  static Result<std::unique_ptr<EtcdSafepointStore>> Open(std::shared_ptr<EtcdSafepoints> points);
  uint64_t Get() const override;
  Status Raise(uint64_t safepoint) override;

 private:
  EtcdSafepointStore(std::shared_ptr<EtcdSafepoints> points, uint64_t current)
      : points_(std::move(points)), current_(current) {}
  const std::shared_ptr<EtcdSafepoints> points_;
  uint64_t current_;  // thread-compatible, as SafepointStore
};

// txn::SharedSafepoints on etcd, for cluster services (strata/cluster.h):
// EtcdSafepoints per name, and a thread that publishes the tracked oldest
// start_ts of each name under the process's liveness lease.
class EtcdSharedSafepoints final : public txn::SharedSafepoints {
 public:
  // `instance` and `lease`: the process's liveness instance
  // (cluster/etcd_liveness_registry.h), which outlives this.
  EtcdSharedSafepoints(std::shared_ptr<EtcdClient> etcd, std::string root, uint64_t instance,
                       int64_t lease);
  // Stops publishing (what was published goes with the lease).
  ~EtcdSharedSafepoints() override;
  EtcdSharedSafepoints(const EtcdSharedSafepoints&) = delete;
  EtcdSharedSafepoints& operator=(const EtcdSharedSafepoints&) = delete;

  Result<uint64_t> Get(std::string_view name) override;
  Result<uint64_t> Raise(std::string_view name, uint64_t safepoint) override;
  Result<uint64_t> Floor(std::string_view name) override;
  void Track(std::string_view name, std::function<std::optional<uint64_t>()> oldest) override;

  // The keys of `name` (InvalidArgument for a bad name).
  Result<std::shared_ptr<EtcdSafepoints>> Points(std::string_view name);
  // Publishes every tracked name now (tests; the thread does it every
  // kPublishMillis).
  Status PublishNow();

 private:
  void PublishLoop();

  const std::shared_ptr<EtcdClient> etcd_;
  const std::string root_;
  const uint64_t instance_;
  const int64_t lease_;
  Mutex mu_;
  CondVar cv_{&mu_};
  bool stopping_ GUARDED_BY(mu_) = false;
  std::map<std::string, std::shared_ptr<EtcdSafepoints>, std::less<>> points_ GUARDED_BY(mu_);
  struct Tracker {
    std::string name;
    std::function<std::optional<uint64_t>()> oldest;
  };
  std::vector<Tracker> trackers_ GUARDED_BY(mu_);
  std::map<std::string, uint64_t, std::less<>> published_ GUARDED_BY(mu_);  // name -> last value
  Mutex publish_mu_;  // one publication at a time
  std::thread publisher_;
};

}  // namespace strata::cluster

#endif  // STRATA_CLUSTER_ETCD_SAFEPOINT_H_
