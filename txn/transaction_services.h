// What a TransactionServices (strata/transaction.h) holds: a timestamp
// oracle, a liveness registry and the directory the garbage collector keeps
// its files in, one per process and shared by every TransactionDB of it
// (the local ones of TransactionServices::Open, or a cluster's:
// strata/cluster.h); and TransactionServicesAccess, the library's way to
// them, which the public header does not offer.
//
// Thread-safe: the oracle and the registry are, and TxnServicesImpl does not
// change after it is made.
#ifndef STRATA_TXN_TRANSACTION_SERVICES_H_
#define STRATA_TXN_TRANSACTION_SERVICES_H_

#include <memory>
#include <string>
#include <utility>

#include "strata/transaction.h"
#include "txn/liveness_registry.h"
#include "txn/shared_safepoints.h"
#include "txn/timestamp_oracle.h"

namespace strata::txn {

// The oracle and the registry of TransactionServices.
class TxnServicesImpl {
 public:
  TxnServicesImpl(std::string dir, std::unique_ptr<TimestampOracle> oracle,
                  std::unique_ptr<LivenessRegistry> registry,
                  std::shared_ptr<SharedSafepoints> safepoints = nullptr)
      : dir_(std::move(dir)),
        oracle_(std::move(oracle)),
        registry_(std::move(registry)),
        safepoints_(std::move(safepoints)) {}
  // The directory the services keep their files in.
  const std::string& dir() const { return dir_; }
  TimestampOracle* oracle() const { return oracle_.get(); }
  LivenessRegistry* registry() const { return registry_.get(); }
  // The safepoints shared with other processes; nullptr for local services.
  const std::shared_ptr<SharedSafepoints>& safepoints() const { return safepoints_; }

 private:
  const std::string dir_;
  std::unique_ptr<TimestampOracle> oracle_;
  std::unique_ptr<LivenessRegistry> registry_;
  std::shared_ptr<SharedSafepoints> safepoints_;
};

// The oracle and the registry of a TransactionServices, for TransactionDB::Open
// and for tests and benchmarks that wire a TxnDB (txn/transaction_db.h)
// themselves. Not API: a friend of TransactionServices.
struct TransactionServicesAccess {
  static TimestampOracle* oracle(const TransactionServices& services) {
    return services.impl_->oracle();
  }
  static LivenessRegistry* registry(const TransactionServices& services) {
    return services.impl_->registry();
  }
  static const std::string& dir(const TransactionServices& services) {
    return services.impl_->dir();
  }
  static const std::shared_ptr<SharedSafepoints>& safepoints(const TransactionServices& services) {
    return services.impl_->safepoints();
  }
  // Services over `impl` (strata/cluster.h makes its own this way).
  static std::shared_ptr<TransactionServices> Make(std::unique_ptr<TxnServicesImpl> impl) {
    return std::shared_ptr<TransactionServices>(new TransactionServices(std::move(impl)));
  }
};

}  // namespace strata::txn

#endif  // STRATA_TXN_TRANSACTION_SERVICES_H_
