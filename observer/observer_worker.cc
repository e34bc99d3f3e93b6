// ObserverWorker (strata/observer.h): a Worker over a TransactionDB::Open
// database, with the process's advisory lock service.
#include <memory>
#include <utility>

#include "observer/worker.h"
#include "strata/observer.h"
#include "txn/local_lock_service.h"
#include "txn/transaction_db.h"

namespace strata {

namespace {

// One per process, shared by every worker, so that two workers on a tenant
// keep out of each other's rows too.
txn::LockService* ProcessLockService() {
  static txn::LocalLockService* service = new txn::LocalLockService();  // never destroyed
  return service;
}

class ObserverWorkerImpl final : public ObserverWorker {
 public:
  explicit ObserverWorkerImpl(std::unique_ptr<observer::Worker> worker)
      : worker_(std::move(worker)) {}
  ~ObserverWorkerImpl() override { worker_->Stop().PermitUncheckedError(); }
  Status WaitForQuiescence(uint64_t timeout_millis) override {
    return worker_->WaitForQuiescence(timeout_millis);
  }
  ObserverStats GetStats() const override { return worker_->GetStats(); }
  Status Stop() override { return worker_->Stop(); }

 private:
  const std::unique_ptr<observer::Worker> worker_;
};

}  // namespace

Result<std::unique_ptr<ObserverWorker>> ObserverWorker::Start(TransactionDB* db,
                                                              std::vector<ObserverSpec> observers,
                                                              const ObserverWorkerOptions& options) {
  if (db == nullptr) return Status::InvalidArgument("an observer worker needs a TransactionDB");
  std::shared_ptr<txn::TxnDB> txn_db = txn::TxnDBOf(*db);
  if (txn_db == nullptr) {
    return Status::InvalidArgument("the TransactionDB was not opened by TransactionDB::Open");
  }
  observer::WorkerConfig config;
  config.tenant = txn_db->config().name;
  config.db = std::move(txn_db);
  config.observers = std::move(observers);
  config.options = options;
  config.locks = ProcessLockService();
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<observer::Worker> worker,
                          observer::Worker::Start(std::move(config)));
  return std::unique_ptr<ObserverWorker>(new ObserverWorkerImpl(std::move(worker)));
}

}  // namespace strata
