#include "txn/transaction_services.h"

#include <memory>
#include <string>
#include <utility>

#include "txn/local_liveness_registry.h"
#include "txn/local_timestamp_oracle.h"

namespace strata {

TransactionServices::TransactionServices(std::unique_ptr<txn::TxnServicesImpl> impl)
    : impl_(std::move(impl)) {}
TransactionServices::~TransactionServices() = default;

Result<std::shared_ptr<TransactionServices>> TransactionServices::Open(
    const std::string& dir, const TransactionServicesOptions& options) {
  txn::LocalTimestampOracleOptions oracle_options;
  oracle_options.window_millis = options.oracle_window_millis;
  std::unique_ptr<txn::LocalTimestampOracle> oracle;
  STRATA_RETURN_IF_ERROR(txn::LocalTimestampOracle::Open(dir, oracle_options, &oracle));
  txn::LocalLivenessRegistryOptions registry_options;
  registry_options.timeout_micros = options.liveness_timeout_micros;
  std::unique_ptr<txn::LocalLivenessRegistry> registry;
  STRATA_RETURN_IF_ERROR(txn::LocalLivenessRegistry::Open(dir, registry_options, &registry));
  return std::shared_ptr<TransactionServices>(new TransactionServices(
      std::make_unique<txn::TxnServicesImpl>(dir, std::move(oracle), std::move(registry))));
}

Result<uint64_t> TransactionServices::GetTimestamp() { return impl_->oracle()->GetTimestamp(); }

}  // namespace strata
