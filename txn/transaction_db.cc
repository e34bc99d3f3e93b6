#include "txn/transaction_db.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <utility>

#include "common/thread_util.h"
#include "txn/records.h"
#include "txn/table_resolver.h"
#include "txn/transaction.h"
#include "txn/transaction_services.h"

namespace strata::txn {

uint64_t HeartbeatIntervalMicros(uint64_t lock_ttl_millis, uint64_t liveness_timeout_micros) {
  const uint64_t ttl_micros =
      lock_ttl_millis > UINT64_MAX / 1000 ? UINT64_MAX : lock_ttl_millis * 1000;
  return std::clamp<uint64_t>(std::min(ttl_micros, liveness_timeout_micros) / 3, 1000, 1'000'000);
}

const char* FailPointName(FailPoint point) {
  switch (point) {
    case FailPoint::kAfterPrimaryPrewrite:
      return "after-primary-prewrite";
    case FailPoint::kAfterSecondaryBatch:
      return "after-secondary-prewrite-batch";
    case FailPoint::kAfterCommitTs:
      return "after-commit-ts";
    case FailPoint::kAfterPrimaryCommit:
      return "after-primary-commit";
    case FailPoint::kAfterSecondaryCommit:
      return "after-secondary-commit-batch";
  }
  return "unknown";
}

// ---- TxnDB ----

namespace {

std::map<std::string, std::set<std::string, std::less<>>, std::less<>> ObservedSet(
    const TransactionDBOptions& options) {
  std::map<std::string, std::set<std::string, std::less<>>, std::less<>> out;
  for (const ObservedColumn& c : options.observed_columns) out[c.table].insert(c.column);
  return out;
}

}  // namespace

TxnDB::TxnDB(TxnDBConfig config)
    : config_(std::move(config)),
      observed_(ObservedSet(config_.options)),
      clock_(config_.clock != nullptr ? config_.clock : Clock::Default()),
      resolver_(config_.tables.get(), config_.registry, clock_,
                ResolverOptions{config_.options.sync && !config_.single_log}) {}

namespace {

// What TxnDB::Make hands out: closes the TxnDB when it goes (transactions may
// still hold it).
class TxnDBHandle final : public TransactionDB {
 public:
  explicit TxnDBHandle(std::shared_ptr<TxnDB> db) : db_(std::move(db)) {}
  ~TxnDBHandle() override { (void)db_->Close(); }

  Status CreateTable(std::string_view name, const TransactionalTableOptions& options) override {
    return db_->CreateTable(name, options);
  }
  Result<std::unique_ptr<Transaction>> Begin(const TransactionOptions& options) override {
    return db_->Begin(options);
  }
  void AdvanceSafepoint(uint64_t safepoint) override { db_->AdvanceSafepoint(safepoint); }
  TransactionStats GetStats() const override { return db_->GetStats(); }
  Status Close() override { return db_->Close(); }

  const std::shared_ptr<TxnDB>& db() const { return db_; }

 private:
  const std::shared_ptr<TxnDB> db_;
};

}  // namespace

std::shared_ptr<TxnDB> TxnDBOf(TransactionDB& db) {
  auto* handle = dynamic_cast<TxnDBHandle*>(&db);
  return handle == nullptr ? nullptr : handle->db();
}

Result<std::unique_ptr<TransactionDB>> TxnDB::Make(TxnDBConfig config) {
  if (config.oracle == nullptr || config.registry == nullptr || config.tables == nullptr) {
    return Status::InvalidArgument("a TxnDB needs an oracle, a liveness registry and tables");
  }
  if (config.latches == nullptr) config.latches = std::make_shared<Latches>();
  if (config.pessimistic_locks == nullptr) {
    config.pessimistic_locks = std::make_shared<PessimisticLocks>();
  }
  if (config.options.lock_ttl_millis == 0 ||
      config.options.lock_ttl_millis > TransactionDBOptions::kMaxLockTtlMillis) {
    return Status::InvalidArgument("lock_ttl_millis " +
                                   std::to_string(config.options.lock_ttl_millis) + " not in [1, " +
                                   std::to_string(TransactionDBOptions::kMaxLockTtlMillis) + "]");
  }
  std::shared_ptr<TxnDB> db(new TxnDB(std::move(config)));
  // The threads stop in Close, which the handle calls before it lets go.
  db->heartbeat_thread_ = std::thread([d = db.get()] { d->HeartbeatThread(); });
  db->background_thread_ = std::thread([d = db.get()] { d->BackgroundThread(); });
  return std::unique_ptr<TransactionDB>(new TxnDBHandle(std::move(db)));
}

TxnDB::~TxnDB() { (void)Close(); }

Status TxnDB::CreateTable(std::string_view name, const TransactionalTableOptions& options) {
  if (closed()) return Status::InvalidArgument("the TransactionDB is closed");
  if (!config_.create_table) return Status::NotSupported("this TransactionDB cannot create tables");
  return config_.create_table(name, options);
}

Result<std::unique_ptr<Transaction>> TxnDB::Begin(const TransactionOptions& options) {
  if (closed()) return Status::InvalidArgument("the TransactionDB is closed");
  if (options.lock_wait_millis > TransactionOptions::kMaxLockWaitMillis) {
    return Status::InvalidArgument("lock_wait_millis " + std::to_string(options.lock_wait_millis) +
                                   " is over the limit of " +
                                   std::to_string(TransactionOptions::kMaxLockWaitMillis));
  }
  if (options.for_update_wait_millis > TransactionOptions::kMaxLockWaitMillis) {
    return Status::InvalidArgument(
        "for_update_wait_millis " + std::to_string(options.for_update_wait_millis) +
        " is over the limit of " + std::to_string(TransactionOptions::kMaxLockWaitMillis));
  }
  TransactionOptions resolved = options;
  if (resolved.mode == TransactionOptions::Mode::kDefault) {
    resolved.mode = config_.options.pessimistic ? TransactionOptions::Mode::kPessimistic
                                                : TransactionOptions::Mode::kOptimistic;
  }
  uint64_t start_ts;
  {
    // Registered before a garbage collector can take a floor that misses it
    // (RunningFloor).
    std::shared_lock<SharedGate> gate(begin_gate_);
    Result<uint64_t> ts = config_.oracle->GetTimestamp();
    if (!ts.ok()) return ts.status();
    start_ts = *ts;
    MutexLock l(&running_mu_);
    running_.insert(start_ts);
  }
  stats_.begun.fetch_add(1, std::memory_order_relaxed);
  return std::unique_ptr<Transaction>(new TransactionImpl(shared_from_this(), resolved, start_ts));
}

TransactionStats TxnDB::GetStats() const {
  auto get = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  TransactionStats s;
  s.begun = get(stats_.begun);
  s.committed_two_phase = get(stats_.two_phase_commits);
  s.committed_one_phase = get(stats_.one_phase_commits);
  s.committed = s.committed_two_phase + s.committed_one_phase;
  s.committed_read_only = get(stats_.read_only_commits);
  s.rolled_back = get(stats_.rolled_back);
  for (size_t k = 0; k < s.failed.size(); k++) s.failed[k] = get(stats_.failed[k]);
  s.lock_wait_sleeps = get(stats_.lock_wait_sleeps);
  s.pessimistic_lock_waits = get(stats_.pessimistic_lock_waits);
  const LockResolver::Counts resolved = resolver_.counts();
  s.locks_rolled_forward = resolved.rolled_forward;
  s.locks_rolled_back = resolved.rolled_back;
  s.commits_pushed = resolved.pushed;
  s.background_commit_failures = get(stats_.background_failures);
  s.commit_latency = stats_.commit_latency.Snapshot();
  s.pessimistic_lock_wait_latency = stats_.pessimistic_lock_wait_latency.Snapshot();
  return s;
}

Result<std::unique_ptr<Transaction>> TxnDB::BeginObserverRun(const TxnKey* trigger) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> t, Begin(TransactionOptions()));
  if (trigger != nullptr) {
    STRATA_RETURN_IF_ERROR(static_cast<TransactionImpl*>(t.get())->SetTrigger(*trigger));
  }
  return t;
}

bool TxnDB::Observed(std::string_view table, std::string_view column) const {
  auto it = observed_.find(table);
  return it != observed_.end() && it->second.find(column) != it->second.end();
}

uint64_t TxnDB::AddNotifyListener(std::function<void()> listener) {
  MutexLock l(&listeners_mu_);
  const uint64_t id = next_listener_++;
  listeners_.emplace(id, std::move(listener));
  has_listeners_.store(true, std::memory_order_release);
  return id;
}

void TxnDB::RemoveNotifyListener(uint64_t id) {
  MutexLock l(&listeners_mu_);
  listeners_.erase(id);
  has_listeners_.store(!listeners_.empty(), std::memory_order_release);
}

void TxnDB::NotificationsWritten() {
  if (!has_listeners_.load(std::memory_order_acquire)) return;
  MutexLock l(&listeners_mu_);
  for (const auto& [id, listener] : listeners_) listener();
}

Status TxnDB::RunningFloor(uint64_t* oldest, uint64_t* now) {
  std::unique_lock<SharedGate> gate(begin_gate_);
  Result<uint64_t> ts = config_.oracle->GetTimestamp();
  if (!ts.ok()) return ts.status();
  *now = *ts;
  MutexLock l(&running_mu_);
  *oldest = running_.empty() ? UINT64_MAX : *running_.begin();
  return Status::OK();
}

uint64_t TxnDB::OldestRunning() {
  MutexLock l(&running_mu_);
  return running_.empty() ? UINT64_MAX : *running_.begin();
}

void TxnDB::TransactionEnded(uint64_t start_ts) {
  MutexLock l(&running_mu_);
  auto it = running_.find(start_ts);
  if (it != running_.end()) running_.erase(it);
}

void TxnDB::AdvanceSafepoint(uint64_t safepoint) {
  uint64_t cur = safepoint_.load(std::memory_order_relaxed);
  while (cur < safepoint &&
         !safepoint_.compare_exchange_weak(cur, safepoint, std::memory_order_acq_rel)) {
  }
}

Status TxnDB::Close() {
  {
    MutexLock l(&mu_);
    if (stopping_) return Status::OK();
    // Background commits finish first: their transactions are committed and
    // readers would otherwise have to roll them forward.
    while (!jobs_.empty() || job_running_) jobs_cv_.Wait();
    stopping_ = true;
    closed_.store(true, std::memory_order_release);
    cv_.SignalAll();
    jobs_cv_.SignalAll();
  }
  if (heartbeat_thread_.joinable()) heartbeat_thread_.join();
  if (background_thread_.joinable()) background_thread_.join();
  return Status::OK();
}

void TxnDB::StartHeartbeat(const std::shared_ptr<HeartbeatState>& state) {
  MutexLock l(&mu_);
  live_.insert(state);
}

void TxnDB::StopHeartbeat(const std::shared_ptr<HeartbeatState>& state) {
  {
    MutexLock l(&state->mu);
    state->finished = true;
  }
  MutexLock l(&mu_);
  live_.erase(state);
}

void TxnDB::RefreshPrimary(HeartbeatState* state) {
  MutexLock l(&state->mu);
  if (state->finished || !state->prewritten) return;
  const uint64_t now = resolver_.NowMillis();
  LockRecord lock = state->primary_lock;
  // Refresh once a third of the TTL is used up.
  if (now + 2 * config_.options.lock_ttl_millis / 3 < lock.wall_millis + lock.ttl_millis) return;
  lock.ttl_millis = now - lock.wall_millis + config_.options.lock_ttl_millis;
  Result<std::shared_ptr<RowStore>> store = config_.tables->Resolve(state->primary.table);
  if (!store.ok()) return;
  RowMutation m;
  std::string bytes = EncodeLock(lock);
  m.Put(kLockFamily, state->primary.column, lock.start_ts, bytes);
  WriteOptions wo;
  wo.sync = false;
  Result<CheckAndMutateResult> r =
      (*store)->CheckAndMutate(wo, state->primary.row,
                               {Condition::ValueEquals(kLockFamily, state->primary.column,
                                                       lock.start_ts, state->primary_lock_bytes)},
                               m);
  if (r.ok() && r->applied) {
    state->primary_lock = std::move(lock);
    state->primary_lock_bytes = std::move(bytes);
    return;
  }
  // Pushed meanwhile: take the lock as it is; the next round refreshes it.
  Result<TxnStatus> s =
      ReadTxnStatus(**store, state->primary.row, state->primary.column, lock.start_ts);
  if (s.ok() && s->state == TxnStatus::State::kLocked) {
    state->primary_lock = s->lock;
    state->primary_lock_bytes = s->lock_bytes;
  }
}

void TxnDB::HeartbeatThread() {
  SetCurrentThreadName("strata-txn-hb");
  const uint64_t interval_micros =
      HeartbeatIntervalMicros(config_.options.lock_ttl_millis, config_.registry->timeout_micros());
  MutexLock l(&mu_);
  while (!stopping_) {
    cv_.WaitFor(static_cast<int64_t>(interval_micros));
    if (stopping_) break;
    std::vector<std::shared_ptr<HeartbeatState>> live(live_.begin(), live_.end());
    mu_.Unlock();
    for (const std::shared_ptr<HeartbeatState>& state : live) {
      Status s = config_.registry->Heartbeat(state->owner);
      if (!s.ok()) {
        MutexLock sl(&state->mu);
        state->owner_dead = true;
        continue;
      }
      RefreshPrimary(state.get());
    }
    mu_.Lock();
  }
}

void TxnDB::EnqueueSecondaries(SecondaryJob job) {
  MutexLock l(&mu_);
  jobs_.push_back(std::move(job));
  jobs_cv_.SignalAll();
}

bool TxnDB::CommitSecondaries(const SecondaryJob& job, Status* status) {
  WriteOptions wo;
  wo.sync = false;  // the primary's commit decides; a lost secondary is rolled forward
  const size_t max_rows = std::max<uint32_t>(1, config_.options.max_batch_rows);
  for (const auto& [table, rows] : job.tables) {
    Result<std::shared_ptr<RowStore>> store = config_.tables->Resolve(table);
    if (!store.ok()) {
      *status = store.status();
      continue;
    }
    for (size_t begin = 0; begin < rows.size(); begin += max_rows) {
      const size_t end = std::min(rows.size(), begin + max_rows);
      Status s;
      if (end - begin == 1) {
        s = (*store)->Mutate(wo, rows[begin].row, rows[begin].mutation);
      } else {
        std::vector<ConditionalMutation> batch(rows.begin() + begin, rows.begin() + end);
        s = (*store)->CheckAndMutateBatch(wo, batch).status();
      }
      if (!s.ok() && status->ok()) *status = s;
      if (job.start_ts != 0 && FailPointHit(FailPoint::kAfterSecondaryCommit, job.start_ts)) {
        return false;
      }
    }
  }
  return true;
}

void TxnDB::BackgroundThread() {
  SetCurrentThreadName("strata-txn-bg");
  MutexLock l(&mu_);
  while (true) {
    while (jobs_.empty() && !stopping_) jobs_cv_.Wait();
    if (jobs_.empty()) break;
    std::deque<SecondaryJob> jobs;
    jobs.swap(jobs_);
    job_running_ = true;
    mu_.Unlock();
    // Every queued transaction's rows together. (A fail point there stops
    // nothing more: the background thread has no transaction of its own.)
    Status s;
    CommitSecondaries(MergeJobs(jobs), &s);
    if (!s.ok()) stats_.background_failures.fetch_add(1, std::memory_order_relaxed);
    for (const SecondaryJob& job : jobs) TransactionEnded(job.start_ts);
    mu_.Lock();
    job_running_ = false;
    jobs_cv_.SignalAll();
  }
}

// The rows of several transactions' secondaries as one job: one batch (and
// one log record) per table for all of them. Commits of different
// transactions to one row go into one mutation: they touch different
// timestamps, so their order does not matter.
TxnDB::SecondaryJob TxnDB::MergeJobs(const std::deque<SecondaryJob>& jobs) {
  std::map<std::string, std::map<std::string, RowMutation>> tables;
  for (const SecondaryJob& job : jobs) {
    for (const auto& [table, rows] : job.tables) {
      auto& by_row = tables[table];
      for (const ConditionalMutation& cm : rows) {
        RowMutation& m = by_row[cm.row];
        for (const RowMutation::Entry& e : cm.mutation.entries()) {
          switch (e.kind) {
            case RowMutation::Kind::kPut:
              m.Put(e.family, e.qualifier, e.timestamp, e.value);
              break;
            case RowMutation::Kind::kDeleteCell:
              m.DeleteCell(e.family, e.qualifier, e.timestamp);
              break;
            case RowMutation::Kind::kDeleteColumn:
              m.DeleteColumn(e.family, e.qualifier, e.timestamp);
              break;
            case RowMutation::Kind::kDeleteRow:
              m.DeleteRow(e.timestamp);
              break;
          }
        }
      }
    }
  }
  SecondaryJob merged;
  for (auto& [table, by_row] : tables) {
    std::vector<ConditionalMutation> rows;
    rows.reserve(by_row.size());
    for (auto& [row, m] : by_row) rows.push_back(ConditionalMutation{row, {}, std::move(m)});
    merged.tables.emplace_back(table, std::move(rows));
  }
  return merged;
}

}  // namespace strata::txn

// ---- The public entry points ----

namespace strata {

namespace {

// The one T of the TransactionDBs opened in this process on one tenant with
// one TransactionServices: one set of latches, so that a one-phase commit of
// one holds back the readers of every other, and one set of pessimistic
// locks, so that their pessimistic transactions take turns.
template <typename T>
std::shared_ptr<T> SharedPerTenant(const TransactionServices& services, const std::string& tenant) {
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<T>>* registry =
      new std::map<std::string, std::weak_ptr<T>>();
  const std::string key = txn::TransactionServicesAccess::dir(services) + '\0' + tenant;
  std::lock_guard<std::mutex> l(mu);
  for (auto it = registry->begin(); it != registry->end();) {
    it = it->second.expired() ? registry->erase(it) : std::next(it);
  }
  std::shared_ptr<T> shared = (*registry)[key].lock();
  if (shared == nullptr) {
    shared = std::make_shared<T>();
    (*registry)[key] = shared;
  }
  return shared;
}

}  // namespace

Result<std::unique_ptr<TransactionDB>> txn::MakeOnServices(
    std::shared_ptr<TransactionServices> services, TxnDBConfig config) {
  if (services == nullptr) return Status::InvalidArgument("no TransactionServices");
  config.oracle = TransactionServicesAccess::oracle(*services);
  config.registry = TransactionServicesAccess::registry(*services);
  config.keep_alive = services;
  config.latches = SharedPerTenant<Latches>(*services, config.name);
  config.pessimistic_locks = SharedPerTenant<PessimisticLocks>(*services, config.name);
  const std::string name = config.name;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<TransactionDB> db, TxnDB::Make(std::move(config)));
  // Services shared with other processes publish this TransactionDB's
  // oldest running transaction, so their collectors stay below it.
  if (const std::shared_ptr<SharedSafepoints>& shared =
          TransactionServicesAccess::safepoints(*services)) {
    std::weak_ptr<TxnDB> weak = TxnDBOf(*db);
    shared->Track(name, [weak]() -> std::optional<uint64_t> {
      std::shared_ptr<TxnDB> live = weak.lock();
      if (live == nullptr || live->closed()) return std::nullopt;
      return live->OldestRunning();
    });
  }
  return db;
}

Result<std::unique_ptr<TransactionDB>> TransactionDB::Open(
    std::shared_ptr<TransactionServices> services, Tenant tenant,
    const TransactionDBOptions& options) {
  if (services == nullptr) return Status::InvalidArgument("no TransactionServices");
  auto tables = std::make_shared<txn::TenantTables>(std::move(tenant));
  txn::TxnDBConfig config;
  config.options = options;
  config.tables = tables;
  config.single_log = true;  // every table of an engine shares its one log
  config.create_table = [tables](std::string_view name,
                                 const TransactionalTableOptions& table_options) {
    return tables->tenant().CreateTable(name, txn::TransactionalSchema(table_options));
  };
  config.list_tables = [tables]() -> Result<std::vector<std::string>> {
    STRATA_ASSIGN_OR_RETURN(std::vector<std::string> names, tables->tenant().ListTables());
    std::vector<std::string> transactional;
    for (std::string& name : names) {
      Result<Table> table = tables->tenant().OpenTable(name);
      if (table.status().IsNotFound()) continue;  // dropped meanwhile
      STRATA_RETURN_IF_ERROR(table.status());
      Result<TableSchema> schema = table->GetSchema();
      if (schema.status().IsNotFound()) continue;
      STRATA_RETURN_IF_ERROR(schema.status());
      if (txn::IsTransactionalSchema(*schema)) transactional.push_back(std::move(name));
    }
    return transactional;
  };
  config.split_rows = [tables](std::string_view name) -> Result<std::vector<std::string>> {
    STRATA_ASSIGN_OR_RETURN(Table table, tables->tenant().OpenTable(name));
    STRATA_ASSIGN_OR_RETURN(std::vector<TabletStats> tablets, table.GetTabletStats());
    std::vector<std::string> rows;
    for (const TabletStats& t : tablets) {
      if (!t.start_row.empty()) rows.push_back(t.start_row);
    }
    return rows;
  };
  config.name = tables->tenant().name();
  return txn::MakeOnServices(std::move(services), std::move(config));
}

}  // namespace strata
