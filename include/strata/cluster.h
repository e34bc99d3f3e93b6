// Transaction services shared by many processes: the timestamp service and
// the liveness registry on etcd (cluster/README.md).
//
//   strata::ClusterServicesOptions o;
//   o.etcd_endpoints = {"http://10.0.0.1:2379", "http://10.0.0.2:2379"};
//   auto services = strata::OpenClusterServices("/var/lib/app/txn", o);
//   auto db = strata::TransactionDB::Open(*services, tenant);
//
// Transactions in every process opened this way take their timestamps from
// one service, so they share one order, and a process's locks are resolved by
// the others once its etcd lease has expired. A GarbageCollector opened on
// these services keeps its safepoint in etcd (never lowered, whichever
// process raises it) and stays below the oldest transaction every process
// of the cluster runs on the same tenant name. At least one `strata-tso`
// member (tools/strata_tso.cc) must run for the cluster's root.
//
// Thread-safe, as TransactionServices.
#ifndef STRATA_CLUSTER_H_
#define STRATA_CLUSTER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "strata/status.h"
#include "strata/transaction.h"

namespace strata {

struct ClusterServicesOptions {
  // etcd's client URLs, host:port or http://host:port; at least one.
  std::vector<std::string> etcd_endpoints;
  // The etcd key prefix every process and strata-tso member of one cluster
  // shares.
  std::string root = "/strata";
  // How long one etcd call may take, retries on other endpoints included
  // (milliseconds).
  uint64_t etcd_timeout_millis = 3000;
  // How long one timestamp request may take, a leader change of the
  // timestamp service included (milliseconds). Longer than the service's
  // lease (3 s by default) rides out a leader's death.
  uint64_t timestamp_timeout_millis = 5000;
  // This process's liveness lease (seconds, 2 to 3600): how long its locks
  // block others at most after it dies, and how long it may be cut off from
  // etcd before its transactions stop committing.
  int64_t lease_ttl_seconds = 10;
};

// Services whose oracle is the cluster's timestamp service and whose
// liveness registry is etcd's; `dir` (created if missing) is where this
// process's garbage collectors keep their files (as
// TransactionServices::Open's directory).
// Registers a liveness instance at once: the etcd client's errors when etcd
// cannot be reached, InvalidArgument for bad options.
Result<std::shared_ptr<TransactionServices>> OpenClusterServices(
    const std::string& dir, const ClusterServicesOptions& options);

}  // namespace strata

#endif  // STRATA_CLUSTER_H_
