// OpenClusterServices (strata/cluster.h): TransactionServices over the
// timestamp service, the etcd liveness registry and the safepoints on etcd.
#include <unistd.h>

#include "cluster/etcd_liveness_registry.h"
#include "cluster/etcd_safepoint.h"
#include "cluster/tso_client.h"
#include "strata/cluster.h"
#include "strata/file_system.h"
#include "txn/transaction_services.h"

namespace strata {

Result<std::shared_ptr<TransactionServices>> OpenClusterServices(
    const std::string& dir, const ClusterServicesOptions& options) {
  if (dir.empty()) return Status::InvalidArgument("OpenClusterServices: empty directory");
  STRATA_RETURN_IF_ERROR(FileSystem::Default()->CreateDirIfMissing(dir));
  cluster::EtcdOptions etcd;
  etcd.endpoints = options.etcd_endpoints;
  etcd.call_timeout_millis = options.etcd_timeout_millis;

  cluster::TsoClientOptions tso;
  tso.etcd = etcd;
  tso.root = options.root;
  tso.call_timeout_millis = options.timestamp_timeout_millis;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<cluster::TsoClient> oracle,
                          cluster::TsoClient::Open(tso));

  cluster::EtcdLivenessOptions liveness;
  liveness.etcd = etcd;
  liveness.root = options.root;
  liveness.lease_ttl_seconds = options.lease_ttl_seconds;
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  liveness.description = std::string(host) + " pid " + std::to_string(::getpid());
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<cluster::EtcdLivenessRegistry> registry,
                          cluster::EtcdLivenessRegistry::Open(liveness));

  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<cluster::EtcdClient> client,
                          cluster::EtcdClient::Open(etcd));
  auto safepoints = std::make_shared<cluster::EtcdSharedSafepoints>(
      std::move(client), options.root, registry->instance_id(), registry->lease());
  return txn::TransactionServicesAccess::Make(std::make_unique<txn::TxnServicesImpl>(
      dir, std::move(oracle), std::move(registry), std::move(safepoints)));
}

}  // namespace strata
