// GarbageCollector (strata/gc.h): a Collector over a TransactionDB::Open
// database (or one over RADOS tables), its safepoint and progress in files of
// the TransactionServices' directory (gc/FORMAT.md). On an engine tenant it
// also installs the compaction filter; other stores have no compaction, and
// the rounds alone collect them.
#include <memory>
#include <optional>
#include <string>

#include "common/file_system.h"
#include "gc/collector.h"
#include "gc/compaction_filter.h"
#include "gc/progress_log.h"
#include "gc/safepoint_store.h"
#include "strata/gc.h"
#include "txn/table_resolver.h"
#include "txn/transaction_db.h"
#include "txn/transaction_services.h"

namespace strata {

namespace {

class GarbageCollectorImpl final : public GarbageCollector {
 public:
  GarbageCollectorImpl(std::shared_ptr<TransactionServices> services,
                       std::unique_ptr<FileLock> lock, std::unique_ptr<gc::Collector> collector,
                       std::optional<Tenant> tenant, std::shared_ptr<gc::GcCompactionFilter> filter)
      : services_(std::move(services)),
        lock_(std::move(lock)),
        collector_(std::move(collector)),
        tenant_(std::move(tenant)),
        filter_(std::move(filter)) {}
  ~GarbageCollectorImpl() override { Close().PermitUncheckedError(); }

  uint64_t safepoint() const override { return collector_->safepoint(); }
  Status HoldSafepoint(std::string_view id, uint64_t ts, uint64_t ttl_millis) override {
    return collector_->HoldSafepoint(id, ts, ttl_millis);
  }
  Status ReleaseSafepoint(std::string_view id) override { return collector_->ReleaseSafepoint(id); }
  Status RunOnce() override { return collector_->RunRound(); }
  GcStats GetStats() const override {
    GcStats s = collector_->GetStats();
    if (filter_ != nullptr) s.versions_dropped_in_compaction = filter_->dropped();
    return s;
  }
  Status Close() override {
    Status s = collector_->Close();
    if (!closed_ && tenant_.has_value()) {
      closed_ = true;
      // A compaction under way keeps the filter it started with. A tenant
      // dropped meanwhile has no filter to remove.
      Status f = tenant_->SetCompactionFilter(nullptr);
      if (s.ok() && !f.IsNotFound() && !f.IsInvalidArgument()) s = f;
    }
    if (lock_ != nullptr) {
      Status u = FileSystem::Default()->UnlockFile(std::move(lock_));
      if (s.ok()) s = u;
    }
    return s;
  }

 private:
  const std::shared_ptr<TransactionServices> services_;
  std::unique_ptr<FileLock> lock_;
  const std::unique_ptr<gc::Collector> collector_;
  std::optional<Tenant> tenant_;                          // an engine tenant's
  const std::shared_ptr<gc::GcCompactionFilter> filter_;  // null without a tenant
  bool closed_ = false;
};

}  // namespace

Result<std::unique_ptr<GarbageCollector>> GarbageCollector::Open(
    std::shared_ptr<TransactionServices> services, TransactionDB* db, const GcOptions& options) {
  if (services == nullptr || db == nullptr) {
    return Status::InvalidArgument(
        "a garbage collector needs TransactionServices and a TransactionDB");
  }
  std::shared_ptr<txn::TxnDB> txn_db = txn::TxnDBOf(*db);
  if (txn_db == nullptr || txn_db->config().name.empty()) {
    return Status::InvalidArgument(
        "the TransactionDB was opened by neither TransactionDB::Open nor OpenRadosTransactionDB");
  }
  FileSystem* fs = FileSystem::Default();
  const std::string& dir = txn::TransactionServicesAccess::dir(*services);
  const std::string base = JoinPath(dir, "GC_SAFEPOINT-" + txn_db->config().name);
  // One collector per tenant: two would write the same file in turn.
  std::unique_ptr<FileLock> lock;
  Status s = fs->LockFile(base + ".lock", &lock);
  if (s.IsBusy()) {
    return Status::Busy("tenant " + txn_db->config().name + " already has a garbage collector (" +
                        std::string(s.message()) + ")");
  }
  STRATA_RETURN_IF_ERROR(s);
  gc::CollectorConfig config;
  config.db = std::move(txn_db);
  config.options = options;
  // Services shared by many processes keep the safepoint where all of them
  // see it, and their running transactions hold it down.
  const std::shared_ptr<txn::SharedSafepoints>& shared =
      txn::TransactionServicesAccess::safepoints(*services);
  if (shared != nullptr) {
    // A transaction another process begins is published within
    // kPublishMillis; until then only the life time keeps the safepoint
    // below it.
    if (options.life_time_millis <= txn::SharedSafepoints::kPublishMillis) {
      fs->UnlockFile(std::move(lock)).PermitUncheckedError();
      return Status::InvalidArgument(
          "with services shared by many processes, GcOptions::life_time_millis must be above " +
          std::to_string(txn::SharedSafepoints::kPublishMillis) + " ms (got " +
          std::to_string(options.life_time_millis) + ")");
    }
    const std::string name = config.db->config().name;
    s = gc::OpenSharedSafepointStore(shared, name, &config.store);
    config.external_floor = [shared, name] { return shared->Floor(name); };
  } else {
    s = gc::OpenLocalSafepointStore(fs, base, &config.store);
  }
  if (s.ok()) {
    s = gc::ProgressLog::Open(fs, JoinPath(dir, "GC_PROGRESS-" + config.db->config().name),
                              &config.progress);
  }
  if (!s.ok()) {
    fs->UnlockFile(std::move(lock)).PermitUncheckedError();  // the open's error is the one
    return s;
  }
  std::optional<Tenant> tenant;
  if (auto* tables = dynamic_cast<txn::TenantTables*>(config.db->config().tables.get())) {
    tenant = tables->tenant();
  }
  Result<std::unique_ptr<gc::Collector>> collector = gc::Collector::Open(std::move(config));
  if (!collector.ok()) {
    fs->UnlockFile(std::move(lock)).PermitUncheckedError();
    return collector.status();
  }
  std::shared_ptr<gc::GcCompactionFilter> filter;
  if (tenant.has_value()) {
    filter = std::make_shared<gc::GcCompactionFilter>((*collector)->ready(),
                                                      (*collector)->transactional_tables());
    s = tenant->SetCompactionFilter(filter);
    if (!s.ok()) {
      (*collector)->Close().PermitUncheckedError();  // the filter's error is the one
      fs->UnlockFile(std::move(lock)).PermitUncheckedError();
      return s;
    }
  }
  return std::unique_ptr<GarbageCollector>(
      new GarbageCollectorImpl(std::move(services), std::move(lock), std::move(collector.value()),
                               std::move(tenant), std::move(filter)));
}

}  // namespace strata
