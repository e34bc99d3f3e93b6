#include "observer/worker.h"

#include <algorithm>
#include <set>
#include <utility>

#include "common/hash.h"
#include "common/thread_util.h"
#include "txn/records.h"
#include "txn/timestamp.h"

namespace strata::observer {

namespace {

// Owners of advisory locks: unique in the process, so that the threads of
// several workers sharing a lock service never pass for one another.
std::atomic<uint64_t> next_owner{1};

// How long a row's advisory lock lasts; a run normally takes far less, and
// a lock whose holder vanished only costs other threads this long.
constexpr uint64_t kRowLeaseMicros = 60'000'000;
// Rows remembered per table as scan starts.
constexpr size_t kRecentRows = 64;
// Cells remembered as handled.
constexpr size_t kHandledCells = 1 << 16;
// The longest pause or backoff an option may ask for: a day.
constexpr uint64_t kMaxMillis = 24ull * 3600 * 1000;
// The longest wait WaitForQuiescence counts (a larger one waits as long).
constexpr uint64_t kMaxWaitMillis = 365ull * 24 * 3600 * 1000;

}  // namespace

Worker::Worker(WorkerConfig config)
    : config_(std::move(config)),
      clock_(config_.clock != nullptr ? config_.clock : Clock::Default()) {
  std::set<std::string> tables;
  for (const ObserverSpec& s : config_.observers) tables.insert(s.table);
  tables_.assign(tables.begin(), tables.end());
  MutexLock l(&mu_);
  rng_.seed(config_.seed != 0 ? config_.seed : std::random_device()());
  empty_passes_.assign(static_cast<size_t>(config_.options.threads), 0);
}

Result<std::unique_ptr<Worker>> Worker::Start(WorkerConfig config) {
  if (config.db == nullptr || config.locks == nullptr) {
    return Status::InvalidArgument("an observer worker needs a TransactionDB and a lock service");
  }
  const ObserverWorkerOptions& o = config.options;
  if (o.threads < 1 || o.threads > 256) {
    return Status::InvalidArgument("ObserverWorkerOptions::threads must be in [1, 256] (got " +
                                   std::to_string(o.threads) + ")");
  }
  if (o.max_idle_millis == 0 || o.max_idle_millis > kMaxMillis || o.retry_initial_millis == 0 ||
      o.retry_max_millis < o.retry_initial_millis || o.retry_max_millis > kMaxMillis ||
      o.failing_after == 0) {
    return Status::InvalidArgument(
        "ObserverWorkerOptions: max_idle_millis, retry_initial_millis and failing_after must be "
        "positive, retry_max_millis at least retry_initial_millis, and both limits at most a "
        "day (" +
        std::to_string(kMaxMillis) + " ms)");
  }
  if (config.observers.empty()) return Status::InvalidArgument("no observers to run");
  std::set<std::pair<std::string, std::string>> seen;
  for (const ObserverSpec& s : config.observers) {
    const std::string where = "observer of " + s.table + "/" + s.column;
    if (s.table.empty() || s.column.empty()) {
      return Status::InvalidArgument("an observer needs a table and a column");
    }
    if (s.observer == nullptr) return Status::InvalidArgument(where + ": no Observer");
    if (!seen.emplace(s.table, s.column).second) {
      return Status::InvalidArgument(where + ": a column has at most one observer");
    }
    if (s.kind == NotificationKind::kStrong && !config.db->Observed(s.table, s.column)) {
      return Status::InvalidArgument(
          where + ": a strong observer's column must be in the TransactionDB's "
                  "observed_columns, or its writes would notify nobody");
    }
    Status t = config.db->config().tables->Resolve(s.table).status();
    if (!t.ok()) return t.WithContext(where);
  }
  std::unique_ptr<Worker> w(new Worker(std::move(config)));
  Worker* p = w.get();
  MutexLock l(&w->stop_mu_);
  w->listener_ = w->config_.db->AddNotifyListener([p] {
    MutexLock l(&p->mu_);
    p->wake_seq_++;
    p->cv_.SignalAll();
  });
  for (int i = 0; i < w->config_.options.threads; i++) {
    w->threads_.emplace_back([p, i] { p->ThreadLoop(i); });
  }
  return w;
}

Worker::~Worker() { Stop().PermitUncheckedError(); }

Status Worker::Stop() {
  MutexLock stopping(&stop_mu_);
  {
    MutexLock l(&mu_);
    stop_ = true;
    stopping_.store(true, std::memory_order_release);
    cv_.SignalAll();
  }
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  if (listener_ != 0) {
    config_.db->RemoveNotifyListener(listener_);
    listener_ = 0;
  }
  return Status::OK();
}

const ObserverSpec* Worker::SpecFor(std::string_view table, std::string_view column) const {
  for (const ObserverSpec& s : config_.observers) {
    if (s.table == table && s.column == column) return &s;
  }
  return nullptr;
}

// ---- Finding work ----

std::string Worker::RandomStart(const std::string& table) {
  MutexLock l(&mu_);
  auto it = recent_rows_.find(table);
  if (it == recent_rows_.end() || it->second.empty()) return "";
  return it->second[rng_() % it->second.size()];
}

void Worker::RememberRow(const std::string& table, const std::string& row) {
  MutexLock l(&mu_);
  std::vector<std::string>& rows = recent_rows_[table];
  if (rows.size() < kRecentRows) {
    rows.push_back(row);
  } else {
    rows[rng_() % rows.size()] = row;
  }
}

void Worker::ThreadLoop(int index) {
  SetCurrentThreadName("strata-observer");
  const uint64_t owner = next_owner.fetch_add(1);
  uint64_t idle_micros = 500;
  size_t first_table = static_cast<size_t>(index);
  while (!stopping()) {
    uint64_t wake_before = 0;
    {
      MutexLock l(&mu_);
      wake_before = wake_seq_;
    }
    uint64_t seen = 0;
    for (size_t i = 0; i < tables_.size() && !stopping(); i++) {
      const std::string& table = tables_[(first_table + i) % tables_.size()];
      uint64_t n = 0;
      Status s = ScanTable(table, RandomStart(table), index, owner, &n);
      if (!s.ok()) {
        MutexLock l(&mu_);
        stats_.last_failure = "scanning the notifications of " + table + ": " + s.ToString();
      }
      seen += n;
    }
    first_table++;
    if (seen > 0) {
      idle_micros = 500;
      continue;
    }
    // Nothing found: wait for a commit that notifies, or a pause that grows.
    MutexLock l(&mu_);
    empty_passes_[static_cast<size_t>(index)]++;
    cv_.SignalAll();
    if (!stop_ && wake_seq_ == wake_before) cv_.WaitFor(idle_micros);
    idle_micros = std::min(idle_micros * 2, config_.options.max_idle_millis * 1000);
  }
}

Status Worker::ScanTable(const std::string& table, const std::string& start, int index,
                         uint64_t owner, uint64_t* seen) {
  const uint64_t threads = static_cast<uint64_t>(config_.options.threads);
  Result<std::shared_ptr<RowStore>> store = config_.db->config().tables->Resolve(table);
  STRATA_RETURN_IF_ERROR(store.status());
  // [start, end), then [first, start).
  const std::pair<std::string, std::string> parts[2] = {{start, ""}, {"", start}};
  for (int part = 0; part < (start.empty() ? 1 : 2); part++) {
    ScanSpec spec;
    spec.start_row = parts[part].first;
    spec.end_row = parts[part].second;
    spec.filter.families = {std::string(txn::kNotifyFamily)};
    uint64_t scan = 0;
    {
      MutexLock l(&mu_);
      scan = ++scans_;
    }
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<RowIterator> it, (*store)->Scan(ReadOptions(), spec));
    std::vector<Found> found;
    for (; it->Valid(); it->Next()) {
      if (stopping()) return Status::OK();
      if (threads > 1 && Hash64(it->row()) % threads != static_cast<uint64_t>(index)) continue;
      found.clear();
      // Cells come by column, newest first.
      for (const Cell& c : it->cells()) {
        if (!found.empty() && found.back().column == c.qualifier) {
          found.back().versions++;
          continue;
        }
        found.push_back(Found{std::string(it->row()), c.qualifier, c.timestamp, 1});
      }
      // Only observed columns, and not a cell waiting out a backoff (a pass
      // that finds only those has found nothing to do).
      found.erase(std::remove_if(found.begin(), found.end(),
                                 [&](const Found& f) {
                                   return SpecFor(table, f.column) == nullptr ||
                                          Waiting(Cell3{table, f.row, f.column});
                                 }),
                  found.end());
      if (found.empty()) continue;
      *seen += found.size();
      RememberRow(table, found.front().row);
      if (HandleRow(table, found, scan, owner) == Outcome::kBusy) {
        // Caught up with another thread: start elsewhere next time.
        return Status::OK();
      }
    }
    STRATA_RETURN_IF_ERROR(it->status());
  }
  return Status::OK();
}

// ---- Running observers ----

bool Worker::Waiting(const Cell3& cell) {
  MutexLock l(&mu_);
  auto it = failures_.find(cell);
  return it != failures_.end() && clock_->NowMicros() < it->second.retry_at_micros;
}

void Worker::Record(const Cell3& cell, const Status& s, bool aborted) {
  MutexLock l(&mu_);
  if (s.ok()) {
    auto it = failures_.find(cell);
    if (it != failures_.end()) {
      if (it->second.failures >= config_.options.failing_after) stats_.failing_cells--;
      failures_.erase(it);
    }
    return;
  }
  Failure& f = failures_[cell];
  uint32_t in_a_row = 0;
  if (aborted) {
    // A conflict with another transaction: back off, but the cell is not
    // failing.
    stats_.aborted++;
    in_a_row = ++f.aborts;
  } else {
    stats_.failures++;
    stats_.last_failure = std::get<0>(cell) + "/" + std::get<1>(cell) + "/" + std::get<2>(cell) +
                          ": " + s.ToString();
    f.aborts = 0;
    in_a_row = ++f.failures;
    if (f.failures == config_.options.failing_after) stats_.failing_cells++;
  }
  const uint64_t max = config_.options.retry_max_millis * 1000;
  uint64_t backoff = config_.options.retry_initial_millis * 1000;
  for (uint32_t i = 1; i < in_a_row && backoff < max; i++) backoff *= 2;
  f.retry_at_micros = clock_->NowMicros() + std::min(backoff, max);
}

bool Worker::Handled(const Cell3& cell, uint64_t ts, uint64_t scan) {
  MutexLock l(&mu_);
  auto it = handled_.find(cell);
  return it != handled_.end() && it->second.ts >= ts && scan <= it->second.scan;
}

void Worker::SetHandled(const Cell3& cell, uint64_t ts) {
  MutexLock l(&mu_);
  auto [it, inserted] = handled_.emplace(cell, HandledAt{ts, scans_});
  if (!inserted) {
    it->second = HandledAt{std::max(it->second.ts, ts), scans_};
    return;
  }
  handled_order_.push_back(cell);
  if (handled_order_.size() > kHandledCells) {
    handled_.erase(handled_order_.front());
    handled_order_.pop_front();
  }
}

Worker::Outcome Worker::HandleRow(const std::string& table, const std::vector<Found>& found,
                                  uint64_t scan, uint64_t owner) {
  const std::string& row = found.front().row;
  // What this scan's snapshot shows may have been handled by another thread
  // since: then this scan trails that thread.
  if (std::all_of(found.begin(), found.end(), [&](const Found& f) {
        return Handled(Cell3{table, f.row, f.column}, f.newest, scan);
      })) {
    return Outcome::kBusy;
  }
  const txn::LockKey key{config_.tenant, table, row};
  Status locked = config_.locks->TryLock(key, owner, kRowLeaseMicros);
  if (locked.IsBusy()) return Outcome::kBusy;
  if (!locked.ok()) return Outcome::kFailed;
  {
    MutexLock l(&mu_);
    runs_in_flight_++;
    runs_started_++;
  }
  Outcome outcome = Outcome::kDone;
  Result<std::shared_ptr<RowStore>> store = config_.db->config().tables->Resolve(table);
  for (const Found& f : found) {
    if (stopping()) break;
    const Cell3 cell{table, f.row, f.column};
    const ObserverSpec* spec = SpecFor(table, f.column);
    Status s = store.status();
    if (s.ok()) {
      s = spec->kind == NotificationKind::kStrong ? RunStrong(table, f, **store)
                                                  : RunWeak(table, f, **store);
    }
    const bool aborted = s.IsAborted() || s.IsBusy();
    Record(cell, s, aborted);
    if (s.ok()) SetHandled(cell, f.newest);
    if (!s.ok()) outcome = Outcome::kFailed;
  }
  config_.locks->Unlock(key, owner).PermitUncheckedError();  // an expired lease is gone anyway
  MutexLock l(&mu_);
  runs_in_flight_--;
  cv_.SignalAll();
  return outcome;
}

Status Worker::RunStrong(const std::string& table, const Found& f, RowStore& store) {
  // As late as possible: is the notification still there (another
  // process's run may have handled it since the scan), and the newest ack,
  // where a committed run started after every change whose notification is
  // below it.
  RowFilter now;
  now.columns = {{std::string(txn::kAckFamily), f.column},
                 {std::string(txn::kNotifyFamily), f.column}};
  now.max_versions = 1;
  STRATA_ASSIGN_OR_RETURN(std::vector<Cell> cells, store.ReadRow(ReadOptions(), f.row, now));
  uint64_t ack = 0, newest = 0;
  for (const Cell& c : cells) {
    (c.family == txn::kAckFamily ? ack : newest) = c.timestamp;
  }
  if (newest == 0) return Status::OK();  // handled meanwhile
  if (ack > newest) {
    RowMutation m;
    m.DeleteColumn(txn::kNotifyFamily, f.column, ack);
    WriteOptions wo;
    wo.sync = false;  // lost in a crash, it only causes another look
    STRATA_RETURN_IF_ERROR(store.Mutate(wo, f.row, m));
    MutexLock l(&mu_);
    stats_.skipped += f.versions;
    return Status::OK();
  }
  const txn::TxnKey trigger{table, f.row, f.column};
  return Run(table, f, &trigger).status();
}

Result<std::unique_ptr<Transaction>> Worker::Run(const std::string& table, const Found& f,
                                                 const txn::TxnKey* trigger) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> t, config_.db->BeginObserverRun(trigger));
  Status s = SpecFor(table, f.column)->observer->Process(t.get(), table, f.row, f.column);
  if (!s.ok()) {
    t->Rollback().PermitUncheckedError();
    // An observer's own Aborted (a conflict it met) counts as a conflict.
    return s;
  }
  STRATA_RETURN_IF_ERROR(t->Commit());
  MutexLock l(&mu_);
  stats_.runs++;
  stats_.collapsed += f.versions - 1;
  return t;
}

Status Worker::RunWeak(const std::string& table, const Found& f, RowStore& store) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> t, Run(table, f, nullptr));
  // Every notification up to start_ts came from a commit the run saw. A
  // crash before this erasure runs the observer again.
  RowMutation m;
  m.DeleteColumn(txn::kNotifyFamily, f.column, t->start_ts());
  WriteOptions wo;
  wo.sync = false;
  return store.Mutate(wo, f.row, m);
}

// ---- Quiescence and stats ----

Status Worker::Pending(std::vector<Cell3>* cells, uint64_t* oldest_ts) const {
  *oldest_ts = UINT64_MAX;
  for (const std::string& table : tables_) {
    STRATA_ASSIGN_OR_RETURN(std::shared_ptr<RowStore> store,
                            config_.db->config().tables->Resolve(table));
    ScanSpec spec;
    spec.filter.families = {std::string(txn::kNotifyFamily)};
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<RowIterator> it, store->Scan(ReadOptions(), spec));
    for (; it->Valid(); it->Next()) {
      for (const Cell& c : it->cells()) {
        if (SpecFor(table, c.qualifier) == nullptr) continue;
        cells->emplace_back(table, std::string(it->row()), c.qualifier);
        *oldest_ts = std::min(*oldest_ts, c.timestamp);
      }
    }
    STRATA_RETURN_IF_ERROR(it->status());
  }
  return Status::OK();
}

Status Worker::WaitForQuiescence(uint64_t timeout_millis) {
  const uint64_t deadline = clock_->NowMicros() + std::min(timeout_millis, kMaxWaitMillis) * 1000;
  for (;;) {
    uint64_t started = 0;
    {
      // Until every thread has passed twice over its rows finding nothing
      // (the second pass began after this call), or 50 ms: only then look
      // at the store, which means a scan of every notification.
      MutexLock l(&mu_);
      const std::vector<uint64_t> before = empty_passes_;
      const uint64_t until = std::min(deadline, clock_->NowMicros() + 50'000);
      auto all_idle = [&]() EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        for (size_t i = 0; i < before.size(); i++) {
          if (empty_passes_[i] < before[i] + 2) return false;
        }
        return true;
      };
      while (!stop_ && !all_idle() && clock_->NowMicros() < until) cv_.WaitFor(1000);
      while (runs_in_flight_ > 0 && !stop_ && clock_->NowMicros() < deadline) {
        cv_.WaitFor(1000);
      }
      if (stop_) return Status::Aborted("the observer worker stopped");
      if (runs_in_flight_ > 0) {
        return Status::TimedOut("a run was still under way after " +
                                std::to_string(timeout_millis) + " ms");
      }
      // No run under way now: one that begins from here on changes
      // runs_started_, and the check below sees it.
      started = runs_started_;
    }
    std::vector<Cell3> pending;
    uint64_t oldest = 0;
    STRATA_RETURN_IF_ERROR(Pending(&pending, &oldest));
    bool all_failing = !pending.empty();
    {
      MutexLock l(&mu_);
      // Nothing left, and no run began or was under way while we looked.
      if (pending.empty() && runs_in_flight_ == 0 && runs_started_ == started) return Status::OK();
      for (const Cell3& c : pending) {
        auto it = failures_.find(c);
        if (it == failures_.end() || it->second.failures < config_.options.failing_after) {
          all_failing = false;
          break;
        }
      }
      if (stop_) return Status::Aborted("the observer worker stopped");
    }
    if (all_failing) {
      return Status::Aborted(std::to_string(pending.size()) +
                             " notifications are left, all on cells whose observer keeps "
                             "failing (ObserverStats::last_failure)");
    }
    if (clock_->NowMicros() >= deadline) {
      return Status::TimedOut(std::to_string(pending.size()) + " notifications still pending after " +
                              std::to_string(timeout_millis) + " ms");
    }
  }
}

ObserverStats Worker::GetStats() const {
  std::vector<Cell3> pending;
  uint64_t oldest = UINT64_MAX;
  Status s = Pending(&pending, &oldest);
  MutexLock l(&mu_);
  ObserverStats out = stats_;
  if (s.ok()) {
    out.pending = pending.size();
    if (!pending.empty()) {
      const uint64_t now_ms = clock_->NowMicros() / 1000;
      const uint64_t oldest_ms = txn::PhysicalMillis(oldest);
      out.oldest_pending_millis = now_ms > oldest_ms ? now_ms - oldest_ms : 0;
    }
  }
  return out;
}

}  // namespace strata::observer
