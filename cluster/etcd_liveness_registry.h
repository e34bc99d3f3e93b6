// EtcdLivenessRegistry: a txn::LivenessRegistry shared by many processes,
// each instance alive as long as an etcd lease it keeps alive (Percolator's
// workers held a Chubby lock for the same purpose).
//
// Open grants a lease of `lease_ttl_seconds` and creates the instance key
// <root>/live/<instance id> under it; the instance id is that key's create
// revision, which etcd makes unique and greater than every earlier one. A
// background thread renews the lease every third of its TTL.
//
// Owners of this instance are tokens, counted from 1 and tracked in memory
// as the local registry does; each is alive while it heartbeats within the
// timeout (the lease's TTL) *and* the instance's lease is surely alive: from
// the moment its last successful renewal was sent, for the TTL less a margin.
// So a process cut off from etcd refuses heartbeats, and its transactions
// stop committing, before its lease can have expired and other processes
// roll its locks back.
//
// An owner of another instance is alive while that instance's key exists:
// etcd deletes it when the lease expires or is revoked, and instance ids are
// never reused, so death is final. Its tokens cannot be seen from here; a
// hung coordinator in a live process is caught by its locks' TTL instead.
//
// Thread-safe.
#ifndef STRATA_CLUSTER_ETCD_LIVENESS_REGISTRY_H_
#define STRATA_CLUSTER_ETCD_LIVENESS_REGISTRY_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "cluster/etcd_client.h"
#include "common/mutex.h"
#include "strata/status.h"
#include "txn/liveness_registry.h"

namespace strata::cluster {

struct EtcdLivenessOptions {
  EtcdOptions etcd;
  // The etcd key prefix of the cluster.
  std::string root = "/strata";
  // The instance's lease (seconds, 2 to 3600), which is also how long a
  // token lives without a heartbeat. Longer: a dead process blocks readers
  // of its locks longer; shorter: more renewals, and a process stalled for
  // longer than this loses its locks.
  int64_t lease_ttl_seconds = 10;
  // What the instance key holds, for an operator (host and pid, say).
  std::string description;
};

class EtcdLivenessRegistry final : public txn::LivenessRegistry {
 public:
  // Registers a new instance. InvalidArgument for bad options; the etcd
  // client's errors when etcd cannot be reached.
  static Result<std::unique_ptr<EtcdLivenessRegistry>> Open(const EtcdLivenessOptions& options);

  // Revokes the lease: every owner of this instance is dead at once, for
  // every process.
  ~EtcdLivenessRegistry() override;
  EtcdLivenessRegistry(const EtcdLivenessRegistry&) = delete;
  EtcdLivenessRegistry& operator=(const EtcdLivenessRegistry&) = delete;

  uint64_t instance_id() const override { return instance_id_; }
  uint64_t timeout_micros() const override {
    return static_cast<uint64_t>(options_.lease_ttl_seconds) * 1'000'000;
  }
  Result<txn::Owner> Register() override;
  Status Heartbeat(const txn::Owner& owner) override;
  Status Unregister(const txn::Owner& owner) override;
  Result<bool> IsAlive(const txn::Owner& owner) override;

  // Whether this instance's lease is surely alive now.
  bool lease_alive() const;
  bool InstanceSurelyAlive() const override { return lease_alive(); }
  // The instance's etcd lease: keys attached to it vanish with the process
  // (cluster/etcd_safepoint.h publishes under it).
  int64_t lease() const { return lease_; }
  // The instance key of `instance_id`.
  static std::string InstanceKey(const std::string& root, uint64_t instance_id);

 private:
  EtcdLivenessRegistry(EtcdLivenessOptions options, std::unique_ptr<EtcdClient> etcd, int64_t lease,
                       uint64_t instance_id, Deadline valid_until);
  void RenewLoop();
  // Whether `token` of this instance is alive; sweeps it when it is not.
  bool TokenAlive(uint64_t token) EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const EtcdLivenessOptions options_;
  const std::unique_ptr<EtcdClient> etcd_;
  const int64_t lease_;
  const uint64_t instance_id_;

  mutable Mutex mu_;
  CondVar cv_{&mu_};
  bool stopping_ GUARDED_BY(mu_) = false;
  bool lease_lost_ GUARDED_BY(mu_) = false;  // etcd said the lease is gone: final
  Deadline valid_until_ GUARDED_BY(mu_);
  uint64_t next_token_ GUARDED_BY(mu_) = 1;
  std::unordered_map<uint64_t, Deadline> tokens_ GUARDED_BY(mu_);  // token -> last heartbeat
  std::unordered_set<uint64_t> dead_instances_ GUARDED_BY(mu_);    // seen dead: final
  std::thread renewer_;
};

}  // namespace strata::cluster

#endif  // STRATA_CLUSTER_ETCD_LIVENESS_REGISTRY_H_
