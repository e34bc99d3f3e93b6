// What a TransactionServices (strata/transaction.h) holds: the timestamp
// oracle and the liveness registry of one directory, one per process and
// shared by every TransactionDB of it; and TransactionServicesAccess, the
// library's way to them, which the public header does not offer.
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
#include "txn/local_liveness_registry.h"
#include "txn/local_timestamp_oracle.h"
#include "txn/timestamp_oracle.h"

namespace strata::txn {

// The oracle and the registry of TransactionServices.
class TxnServicesImpl {
 public:
  TxnServicesImpl(std::string dir, std::unique_ptr<LocalTimestampOracle> oracle,
                  std::unique_ptr<LocalLivenessRegistry> registry)
      : dir_(std::move(dir)), oracle_(std::move(oracle)), registry_(std::move(registry)) {}
  // The directory the services keep their files in.
  const std::string& dir() const { return dir_; }
  TimestampOracle* oracle() const { return oracle_.get(); }
  LivenessRegistry* registry() const { return registry_.get(); }

 private:
  const std::string dir_;
  std::unique_ptr<LocalTimestampOracle> oracle_;
  std::unique_ptr<LocalLivenessRegistry> registry_;
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
};

}  // namespace strata::txn

#endif  // STRATA_TXN_TRANSACTION_SERVICES_H_
