// Collector: the garbage collector behind strata/gc.h, over a TxnDB's tables
// reached through the row-store seam only (so any store behind it is
// collected alike). A round:
//   1. takes the candidate safepoint: the oracle's time less the life time,
//      capped by the oldest running transaction of the TxnDB (taken with
//      Begin held off, so none is missed), by every service safepoint held,
//      and by what other processes hold (CollectorConfig::external_floor),
//      and never below the safepoint published before;
//   2. publishes it: durable in the SafepointStore first, then raised in the
//      TxnDB, so that transactions below it can no longer read or commit;
//   3. resolves every lock below it, in every table, through the lock's
//      primary (rolled forward when the primary committed, back otherwise),
//      so that no secondary is left whose primary's record step 4 removes;
//   4. collects: every row range of every table (workers take them), each
//      column's versions at or below the safepoint cut as column_rules.h
//      says, each row in one mutation.
// gc/README.md gives the reasons; a failed round is done again by the next.
// With a ProgressLog, each range collected is recorded; the first round of
// a collector opened on a log whose round was left unfinished first
// finishes that round, at its safepoint, without the ranges it recorded.
//
// Thread-safe: rounds run one at a time (round_mu_); stats and service
// safepoints under mu_.
#ifndef STRATA_GC_COLLECTOR_H_
#define STRATA_GC_COLLECTOR_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/rate_limiter.h"
#include "gc/compaction_filter.h"
#include "gc/progress_log.h"
#include "gc/safepoint_store.h"
#include "strata/gc.h"
#include "strata/row_store.h"
#include "txn/lock_resolver.h"
#include "txn/transaction_db.h"

namespace strata::gc {

// The points between the steps of a round (CollectorConfig::hook).
enum class RoundStep {
  kPublished,      // the safepoint is durable and raised in the TxnDB
  kLocksResolved,  // no lock below it is left
  kCollected,      // every table collected at it (also for a resumed round)
};

struct CollectorConfig {
  std::shared_ptr<txn::TxnDB> db;          // required
  std::unique_ptr<SafepointStore> store;   // required
  // Optional: without it progress is not kept. A range is recorded once
  // its last row mutation, written synced, is durable; that covers the
  // range's earlier unsynced ones only when every table shares one log (an
  // engine's tenant does).
  std::unique_ptr<ProgressLog> progress;
  Clock* clock = nullptr;                  // service safepoints' TTLs; nullptr = default
  GcOptions options;
  // What other processes hold the safepoint at (their running transactions
  // and service safepoints: txn/shared_safepoints.h), UINT64_MAX for
  // nothing; each candidate stays at or below it. nullptr: no other process.
  std::function<Result<uint64_t>()> external_floor;
  // Called with the round's safepoint after each step (tests); may block.
  std::function<void(RoundStep, uint64_t safepoint)> hook;
};

class Collector {
 public:
  // Raises the TxnDB to the stored safepoint and, unless
  // options.interval_millis is 0, starts the background rounds.
  static Result<std::unique_ptr<Collector>> Open(CollectorConfig config);
  ~Collector();
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  uint64_t safepoint() const { return published_.load(std::memory_order_acquire); }
  // The ready safepoint: every lock below it is resolved (0 until a round
  // has resolved them). What the compaction filter collects at; shared so
  // that it outlives the collector while a compaction holds the filter.
  std::shared_ptr<const std::atomic<uint64_t>> ready() const { return ready_; }
  // The transactional tables as the last round listed them (for the
  // compaction filter, likewise shared).
  std::shared_ptr<const TableSet> transactional_tables() const { return tables_; }
  // As GarbageCollector's.
  Status HoldSafepoint(std::string_view id, uint64_t ts, uint64_t ttl_millis) LOCKS_EXCLUDED(mu_);
  Status ReleaseSafepoint(std::string_view id) LOCKS_EXCLUDED(mu_);
  Status RunRound() LOCKS_EXCLUDED(round_mu_);
  GcStats GetStats() const LOCKS_EXCLUDED(mu_);
  Status Close();

 private:
  using Task = RowRange;

  explicit Collector(CollectorConfig config);

  // Step 1: the candidate, at or below `external` (what other processes
  // hold), and what held it back.
  Result<uint64_t> Candidate(uint64_t external, uint64_t* oldest_running, uint64_t* lowest_service)
      EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Step 3.
  Status ResolveLocksBelow(uint64_t safepoint);
  Status ResolveLock(const txn::TxnKey& key, const txn::LockRecord& lock);
  // Step 4, without the ranges in `done`.
  Status CollectAll(uint64_t safepoint, const std::vector<RowRange>& done);
  Status CollectRange(const Task& task, uint64_t safepoint);
  // Finishes the round the progress log left unfinished at open.
  Status ResumeRound(uint64_t safepoint) EXCLUSIVE_LOCKS_REQUIRED(round_mu_);
  // The progress log's calls, under progress_mu_; OK without a log.
  Status RecordStart(uint64_t safepoint) LOCKS_EXCLUDED(progress_mu_);
  Status RecordRange(const Task& task) LOCKS_EXCLUDED(progress_mu_);
  Status RecordFinish() LOCKS_EXCLUDED(progress_mu_);
  // The stores of the TxnDB's transactional tables; a table dropped since it
  // was listed is left out.
  Result<std::vector<std::pair<std::string, std::shared_ptr<RowStore>>>> Tables();
  bool closing() const { return closing_.load(std::memory_order_relaxed); }

  void BackgroundLoop();
  void WorkerLoop();

  CollectorConfig config_;
  Clock* const clock_;
  std::unique_ptr<RateLimiter> limiter_;  // null when rows_per_second is 0

  // Held by a round from start to end.
  Mutex round_mu_;
  // The round the progress log left unfinished, finished by the next round
  // (0: none).
  uint64_t resume_ GUARDED_BY(round_mu_) = 0;
  // Workers record their ranges in turn.
  Mutex progress_mu_;
  std::unique_ptr<ProgressLog> progress_ GUARDED_BY(progress_mu_);  // may be null
  const bool keep_progress_;  // progress_ != nullptr
  // The published safepoint (step 2). Written under round_mu_; read with
  // acquire anywhere, after the store and the TxnDB hold it.
  std::atomic<uint64_t> published_{0};
  // Stored with release by a round once its locks are resolved.
  const std::shared_ptr<std::atomic<uint64_t>> ready_ = std::make_shared<std::atomic<uint64_t>>(0);
  // Set by each listing of the tables (Tables), before ready_ is raised.
  const std::shared_ptr<TableSet> tables_ = std::make_shared<TableSet>();

  mutable Mutex mu_;
  CondVar cv_{&mu_};  // background loop, workers, task completion
  struct Service {
    uint64_t ts = 0;
    uint64_t expires_micros = 0;  // clock_ time
  };
  std::map<std::string, Service, std::less<>> services_ GUARDED_BY(mu_);
  GcStats stats_ GUARDED_BY(mu_);
  bool stop_ GUARDED_BY(mu_) = false;
  std::deque<Task> tasks_ GUARDED_BY(mu_);
  uint64_t tasks_pending_ GUARDED_BY(mu_) = 0;  // queued or running
  Status task_error_ GUARDED_BY(mu_);
  uint64_t task_safepoint_ GUARDED_BY(mu_) = 0;
  // stop_ for code that does not hold mu_ (a range being collected).
  // Relaxed: a hint to stop early; Close joins the threads afterwards.
  std::atomic<bool> closing_{false};
  std::thread background_;
  std::vector<std::thread> workers_;
};

}  // namespace strata::gc

#endif  // STRATA_GC_COLLECTOR_H_
