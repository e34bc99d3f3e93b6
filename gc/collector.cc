#include "gc/collector.h"

#include <algorithm>
#include <utility>

#include "common/thread_util.h"
#include "gc/column_rules.h"
#include "txn/records.h"
#include "txn/timestamp.h"

namespace strata::gc {

namespace {

// How long a lock below the safepoint whose transaction is alive (another
// TransactionDB's, say) is waited for before it is rolled back.
constexpr uint64_t kLiveLockWaitMicros = 1'000'000;

// The safepoint `life_millis` before `now`.
uint64_t LifeFloor(uint64_t now, uint64_t life_millis) {
  if (life_millis > txn::kMaxPhysicalMillis) return 0;
  const uint64_t span = txn::ComposeTimestamp(life_millis, 0);
  return now > span ? now - span : 0;
}

}  // namespace

Collector::Collector(CollectorConfig config)
    : config_(std::move(config)),
      clock_(config_.clock != nullptr ? config_.clock : Clock::Default()),
      progress_(std::move(config_.progress)),
      keep_progress_(progress_ != nullptr) {
  if (config_.options.rows_per_second > 0) {
    limiter_ = std::make_unique<RateLimiter>(config_.options.rows_per_second, clock_);
  }
}

Result<std::unique_ptr<Collector>> Collector::Open(CollectorConfig config) {
  if (config.db == nullptr || config.store == nullptr) {
    return Status::InvalidArgument("a garbage collector needs a TransactionDB and a store");
  }
  if (config.options.workers < 0 || config.options.workers > 64) {
    return Status::InvalidArgument("GcOptions::workers must be in [0, 64] (got " +
                                   std::to_string(config.options.workers) + ")");
  }
  std::unique_ptr<Collector> c(new Collector(std::move(config)));
  const uint64_t stored = c->config_.store->Get();
  c->published_.store(stored, std::memory_order_release);
  c->config_.db->AdvanceSafepoint(stored);
  uint64_t collected = 0, resume = 0;
  if (c->keep_progress_) {
    MutexLock l(&c->progress_mu_);
    // Both were published, so neither is above the stored safepoint unless
    // its file was replaced; then the log is not trusted beyond it.
    STRATA_RETURN_IF_ERROR(c->progress_->Clamp(stored));
    const RoundProgress& p = c->progress_->progress();
    collected = p.collected;
    resume = p.round;
  }
  {
    MutexLock l(&c->round_mu_);
    c->resume_ = resume;
  }
  // Both rounds resolved their locks.
  c->ready_->store(std::max(collected, resume), std::memory_order_release);
  {
    MutexLock l(&c->mu_);
    c->stats_.safepoint = stored;
    c->stats_.collected_safepoint = collected;
  }
  for (int i = 0; i < c->config_.options.workers; i++) {
    c->workers_.emplace_back([p = c.get()] { p->WorkerLoop(); });
  }
  if (c->config_.options.interval_millis > 0) {
    c->background_ = std::thread([p = c.get()] { p->BackgroundLoop(); });
  }
  return c;
}

Collector::~Collector() { (void)Close(); }

Status Collector::Close() {
  {
    MutexLock l(&mu_);
    if (stop_ && !background_.joinable() && workers_.empty()) return Status::OK();
    stop_ = true;
    closing_.store(true, std::memory_order_relaxed);
    cv_.SignalAll();
  }
  if (background_.joinable()) background_.join();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
  return Status::OK();
}

GcStats Collector::GetStats() const {
  MutexLock l(&mu_);
  return stats_;
}

// ---- Service safepoints ----

Status Collector::HoldSafepoint(std::string_view id, uint64_t ts, uint64_t ttl_millis) {
  if (id.empty()) return Status::InvalidArgument("a service safepoint needs an id");
  if (ttl_millis == 0) return Status::InvalidArgument("a service safepoint needs a ttl");
  MutexLock l(&mu_);
  // Under mu_, which Candidate takes: a round either sees this one or
  // published its safepoint before it, which the check below then sees.
  const uint64_t published = published_.load(std::memory_order_acquire);
  if (ts < published) {
    return Status::FailedPrecondition("service safepoint " + std::string(id) + " at " +
                                      std::to_string(ts) + " is below the safepoint " +
                                      std::to_string(published) +
                                      ": versions below it may be gone already");
  }
  const uint64_t ttl_micros = ttl_millis > UINT64_MAX / 1000 ? UINT64_MAX : ttl_millis * 1000;
  const uint64_t now = clock_->NowMicros();
  services_[std::string(id)] =
      Service{ts, now > UINT64_MAX - ttl_micros ? UINT64_MAX : now + ttl_micros};
  return Status::OK();
}

Status Collector::ReleaseSafepoint(std::string_view id) {
  MutexLock l(&mu_);
  auto it = services_.find(id);
  if (it == services_.end()) {
    return Status::NotFound("no service safepoint " + std::string(id));
  }
  services_.erase(it);
  return Status::OK();
}

// ---- A round ----

Result<uint64_t> Collector::Candidate(uint64_t external, uint64_t* oldest_running,
                                      uint64_t* lowest_service) {
  uint64_t now = 0;
  STRATA_RETURN_IF_ERROR(config_.db->RunningFloor(oldest_running, &now));
  *lowest_service = UINT64_MAX;
  const uint64_t wall = clock_->NowMicros();
  for (auto it = services_.begin(); it != services_.end();) {
    if (it->second.expires_micros <= wall) {
      it = services_.erase(it);
      continue;
    }
    *lowest_service = std::min(*lowest_service, it->second.ts);
    ++it;
  }
  stats_.oldest_running_start_ts = *oldest_running;
  stats_.lowest_service_safepoint = *lowest_service;
  return std::min({LifeFloor(now, config_.options.life_time_millis), *oldest_running,
                   *lowest_service, external});
}

Status Collector::RunRound() {
  MutexLock round(&round_mu_);
  // Once closed, its files may belong to the tenant's next collector.
  if (closing()) return Status::Aborted("the garbage collector is closed");
  if (resume_ != 0) {
    // Once: a resumed round that fails is not tried again, the next round
    // collects at a newer safepoint anyway.
    const uint64_t resume = resume_;
    resume_ = 0;
    STRATA_RETURN_IF_ERROR(ResumeRound(resume));
  }
  uint64_t target = 0;
  bool collected_already = false;
  // Read before mu_ is taken: it may be a network call. A transaction
  // another process began but had not published yet, or begins after the
  // read, starts above the life time's floor (txn/shared_safepoints.h).
  uint64_t external = UINT64_MAX;
  if (config_.external_floor) {
    STRATA_ASSIGN_OR_RETURN(external, config_.external_floor());
  }
  {
    // The candidate and its publication under one hold of mu_:
    // HoldSafepoint, which takes mu_ too, either counts in the candidate or
    // comes after the publication and is checked against it.
    MutexLock l(&mu_);
    uint64_t oldest = 0, service = 0;
    STRATA_ASSIGN_OR_RETURN(const uint64_t candidate, Candidate(external, &oldest, &service));
    target = std::max(candidate, published_.load(std::memory_order_acquire));
    if (target > published_.load(std::memory_order_acquire)) {
      // Durable first: after a restart transactions below it must still
      // fail, whatever this round got to do.
      STRATA_RETURN_IF_ERROR(config_.store->Raise(target));
      config_.db->AdvanceSafepoint(target);
      published_.store(target, std::memory_order_release);
      stats_.safepoint = target;
    }
    collected_already = stats_.collected_safepoint >= target;
  }
  if (config_.hook) config_.hook(RoundStep::kPublished, target);
  if (!collected_already && target > 0) {
    STRATA_RETURN_IF_ERROR(ResolveLocksBelow(target));
    // Release: a compaction filter that reads it sees the records the
    // resolution wrote.
    ready_->store(target, std::memory_order_release);
    if (config_.hook) config_.hook(RoundStep::kLocksResolved, target);
    STRATA_RETURN_IF_ERROR(RecordStart(target));
    STRATA_RETURN_IF_ERROR(CollectAll(target, {}));
    STRATA_RETURN_IF_ERROR(RecordFinish());
    if (config_.hook) config_.hook(RoundStep::kCollected, target);
  }
  Result<uint64_t> now = config_.db->config().oracle->GetTimestamp();
  MutexLock l(&mu_);
  stats_.collected_safepoint = std::max(stats_.collected_safepoint, target);
  stats_.rounds++;
  if (now.ok()) {
    const uint64_t now_ms = txn::PhysicalMillis(*now);
    const uint64_t target_ms = txn::PhysicalMillis(target);
    stats_.lag_millis = now_ms > target_ms ? now_ms - target_ms : 0;
  }
  return Status::OK();
}

Status Collector::ResumeRound(uint64_t safepoint) {
  std::vector<RowRange> done;
  {
    MutexLock l(&progress_mu_);
    done = progress_->progress().done;
  }
  STRATA_RETURN_IF_ERROR(CollectAll(safepoint, done));
  STRATA_RETURN_IF_ERROR(RecordFinish());
  {
    MutexLock l(&mu_);
    stats_.tasks_skipped += done.size();
    stats_.collected_safepoint = std::max(stats_.collected_safepoint, safepoint);
  }
  if (config_.hook) config_.hook(RoundStep::kCollected, safepoint);
  return Status::OK();
}

Status Collector::RecordStart(uint64_t safepoint) {
  if (!keep_progress_) return Status::OK();
  MutexLock l(&progress_mu_);
  return progress_->StartRound(safepoint);
}

Status Collector::RecordRange(const Task& task) {
  if (!keep_progress_) return Status::OK();
  MutexLock l(&progress_mu_);
  return progress_->RangeDone(task);
}

Status Collector::RecordFinish() {
  if (!keep_progress_) return Status::OK();
  MutexLock l(&progress_mu_);
  return progress_->FinishRound();
}

Result<std::vector<std::pair<std::string, std::shared_ptr<RowStore>>>> Collector::Tables() {
  std::vector<std::pair<std::string, std::shared_ptr<RowStore>>> out;
  const txn::TxnDBConfig& db = config_.db->config();
  if (!db.list_tables) return out;
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> names, db.list_tables());
  tables_->Set(names);
  for (std::string& name : names) {
    Result<std::shared_ptr<RowStore>> store = db.tables->Resolve(name);
    if (store.status().IsNotFound()) continue;  // dropped since it was listed
    STRATA_RETURN_IF_ERROR(store.status());
    out.emplace_back(std::move(name), std::move(store.value()));
  }
  return out;
}

// ---- Step 3: locks ----

Status Collector::ResolveLocksBelow(uint64_t safepoint) {
  if (safepoint <= kMinTimestamp) return Status::OK();
  STRATA_ASSIGN_OR_RETURN(auto tables, Tables());
  for (const auto& [name, store] : tables) {
    ScanSpec spec;
    spec.filter.families = {std::string(txn::kLockFamily)};
    spec.filter.max_timestamp = safepoint - 1;
    Result<std::unique_ptr<RowIterator>> it = store->Scan(ReadOptions(), spec);
    if (it.status().IsNotFound()) continue;  // dropped
    STRATA_RETURN_IF_ERROR(it.status());
    for (; (*it)->Valid(); (*it)->Next()) {
      if (closing()) return Status::Aborted("garbage collection stopped: closing");
      for (const Cell& cell : (*it)->cells()) {
        txn::LockRecord lock;
        Status s = txn::DecodeLock(cell.value, &lock);
        txn::TxnKey key{name, std::string((*it)->row()), cell.qualifier};
        if (!s.ok()) {
          return s.WithContext("lock of " + key.ToString() + " at " +
                               std::to_string(cell.timestamp));
        }
        STRATA_RETURN_IF_ERROR(ResolveLock(key, lock));
      }
    }
    Status s = (*it)->status();
    if (!s.ok() && !s.IsNotFound()) return s;
  }
  return Status::OK();
}

Status Collector::ResolveLock(const txn::TxnKey& key, const txn::LockRecord& lock) {
  using Intent = txn::LockResolver::Intent;
  using Outcome = txn::LockResolver::Resolution::Outcome;
  const uint64_t deadline = clock_->NowMicros() + kLiveLockWaitMicros;
  uint64_t backoff = 1000;
  for (;;) {
    // A live transaction's lock is waited for a while, then rolled back
    // (unless its primary committed meanwhile): it can no longer commit.
    const Intent intent = clock_->NowMicros() < deadline ? Intent::kCheck : Intent::kWound;
    Result<txn::LockResolver::Resolution> r =
        config_.db->resolver()->ResolveUncounted(key, lock, intent, /*ts=*/0);
    if (r.status().IsFailedPrecondition()) {
      // The primary's table is gone: the lock can never be resolved, and a
      // reader of the key gets the same error.
      MutexLock l(&mu_);
      stats_.locks_unresolvable++;
      return Status::OK();
    }
    if (r.status().IsNotFound()) return Status::OK();  // the table went meanwhile
    STRATA_RETURN_IF_ERROR(r.status());
    if (r->outcome != Outcome::kLive) {
      MutexLock l(&mu_);
      stats_.locks_resolved++;
      return Status::OK();
    }
    if (closing()) return Status::Aborted("garbage collection stopped: closing");
    clock_->SleepMicros(backoff);
    backoff = std::min<uint64_t>(backoff * 2, 100'000);
  }
}

// ---- Step 4: collection ----

Status Collector::CollectAll(uint64_t safepoint, const std::vector<RowRange>& done) {
  STRATA_ASSIGN_OR_RETURN(auto tables, Tables());
  std::vector<Task> tasks;
  const txn::TxnDBConfig& db = config_.db->config();
  for (const auto& [name, store] : tables) {
    std::vector<std::string> bounds;
    if (db.split_rows) {
      Result<std::vector<std::string>> rows = db.split_rows(name);
      if (rows.status().IsNotFound()) continue;  // dropped
      STRATA_RETURN_IF_ERROR(rows.status());
      bounds = std::move(rows.value());
      std::sort(bounds.begin(), bounds.end());
    }
    std::string start;
    for (const std::string& b : bounds) {
      if (b.empty() || b <= start) continue;
      tasks.push_back(Task{name, start, b});
      start = b;
    }
    tasks.push_back(Task{name, start, ""});
  }
  // Tablets may have split since `done` was recorded: what is left of each.
  if (!done.empty()) tasks = SubtractRanges(tasks, done);
  if (workers_.empty()) {
    for (const Task& t : tasks) STRATA_RETURN_IF_ERROR(CollectRange(t, safepoint));
    return Status::OK();
  }
  MutexLock l(&mu_);
  task_error_ = Status::OK();
  task_safepoint_ = safepoint;
  for (Task& t : tasks) tasks_.push_back(std::move(t));
  tasks_pending_ += tasks.size();
  cv_.SignalAll();
  while (tasks_pending_ > 0 && !stop_) cv_.Wait();
  if (tasks_pending_ > 0) return Status::Aborted("garbage collection stopped: closing");
  return task_error_;
}

Status Collector::CollectRange(const Task& task, uint64_t safepoint) {
  Result<std::shared_ptr<RowStore>> store_or = config_.db->config().tables->Resolve(task.table);
  if (store_or.status().IsNotFound()) return Status::OK();  // dropped
  STRATA_RETURN_IF_ERROR(store_or.status());
  RowStore& store = **store_or;
  ScanSpec spec;
  spec.start_row = task.start_row;
  spec.end_row = task.end_row;
  spec.filter.families = {std::string(txn::kWriteFamily), std::string(txn::kAckFamily)};
  spec.filter.max_timestamp = safepoint;
  Result<std::unique_ptr<RowIterator>> it = store.Scan(ReadOptions(), spec);
  if (it.status().IsNotFound()) return Status::OK();
  STRATA_RETURN_IF_ERROR(it.status());
  GcStats local;
  std::vector<WriteVersion> versions;
  // Each row's mutation is written once the next one is ready, so that the
  // range's last can be synced when progress is kept: a synced write makes
  // every earlier one durable too (wal/README.md), before the range is
  // recorded as done. The rest are unsynced: a collection a crash loses is
  // done again by a later round.
  std::string pending_row;
  RowMutation pending;
  bool dropped = false;  // the table went meanwhile
  auto write_pending = [&](bool sync) -> Status {
    if (pending.empty()) return Status::OK();
    WriteOptions wo;
    wo.sync = sync;
    Status ws = store.Mutate(wo, pending_row, pending);
    pending = RowMutation();
    if (ws.IsNotFound()) {
      dropped = true;
      return Status::OK();
    }
    if (ws.ok()) local.rows_collected++;
    return ws;
  };
  Status s;
  for (; (*it)->Valid() && s.ok() && !dropped; (*it)->Next()) {
    if (closing()) {
      s = Status::Aborted("garbage collection stopped: closing");
      break;
    }
    if (limiter_ != nullptr) limiter_->Request(1);
    local.rows_examined++;
    const std::vector<Cell>& cells = (*it)->cells();
    RowMutation m;
    // Cells come by family, then qualifier, newest first: one column after
    // another.
    for (size_t i = 0; i < cells.size() && s.ok();) {
      size_t j = i;
      if (cells[i].family == txn::kAckFamily) {
        // Only the newest ack of a column is ever read (observer/README.md).
        for (; j < cells.size() && cells[j].family == cells[i].family &&
               cells[j].qualifier == cells[i].qualifier;
             j++) {
        }
        if (j - i > 1) {
          m.DeleteColumn(txn::kAckFamily, cells[i].qualifier, cells[i + 1].timestamp);
          local.versions_dropped += j - i - 1;
        }
        i = j;
        continue;
      }
      versions.clear();
      for (; j < cells.size() && cells[j].family == cells[i].family &&
             cells[j].qualifier == cells[i].qualifier;
           j++) {
        WriteVersion v;
        v.ts = cells[j].timestamp;
        s = txn::DecodeWrite(cells[j].value, &v.record);
        if (!s.ok()) {
          s = s.WithContext("write record of " +
                            txn::TxnKey{task.table, std::string((*it)->row()), cells[j].qualifier}
                                .ToString() +
                            " at " + std::to_string(v.ts));
          break;
        }
        versions.push_back(std::move(v));
      }
      if (!s.ok()) break;
      const ColumnCollection c = CollectColumn(versions);
      if (!c.empty()) {
        AddCollection(&m, cells[i].qualifier, c);
        local.versions_dropped += c.versions_dropped;
        local.data_cells_dropped += c.data_dropped;
      }
      i = j;
    }
    if (!s.ok() || m.empty()) continue;
    s = write_pending(/*sync=*/false);
    pending_row.assign((*it)->row());
    pending = std::move(m);
  }
  if (s.ok() && !dropped) {
    Status is = (*it)->status();
    if (!is.IsNotFound()) s = is;
  }
  if (s.ok()) s = write_pending(/*sync=*/keep_progress_);
  // A dropped table has nothing left to collect: its range is done.
  if (s.ok()) s = RecordRange(task);
  MutexLock l(&mu_);
  stats_.rows_examined += local.rows_examined;
  stats_.rows_collected += local.rows_collected;
  stats_.versions_dropped += local.versions_dropped;
  stats_.data_cells_dropped += local.data_cells_dropped;
  if (s.ok()) stats_.tasks_done++;
  return s;
}

// ---- Threads ----

void Collector::WorkerLoop() {
  MutexLock l(&mu_);
  while (!stop_) {
    if (tasks_.empty()) {
      cv_.Wait();
      continue;
    }
    Task task = std::move(tasks_.front());
    tasks_.pop_front();
    const uint64_t safepoint = task_safepoint_;
    mu_.Unlock();
    Status s = CollectRange(task, safepoint);
    mu_.Lock();
    if (!s.ok() && task_error_.ok()) task_error_ = s;
    tasks_pending_--;
    cv_.SignalAll();
  }
}

void Collector::BackgroundLoop() {
  SetCurrentThreadName("strata-gc");
  for (;;) {
    // A failed round is done again by the next one.
    RunRound().PermitUncheckedError();
    MutexLock l(&mu_);
    if (stop_) return;
    cv_.WaitFor(config_.options.interval_millis * 1000);
    if (stop_) return;
  }
}

}  // namespace strata::gc
