// TxnDB: the TransactionDB of strata/transaction.h, built on any stores
// behind the row-store seam (a TableResolver), a TimestampOracle and a
// LivenessRegistry. TransactionDB::Open wires it to an engine's tenant; tests
// wire it to in-memory stores, fake clocks and fail points. It begins the
// transactions (txn/transaction.h, which says how they commit), keeps their
// owners and primary locks alive with a heartbeat thread, and commits their
// secondaries on a background thread.
//
// Thread-safe; a Transaction is used by one thread at a time.
//
// Invariants: a TxnDB is shared by the caller's handle and every transaction
// begun on it, and stays closed once closed; Close lets the queued
// background commits finish before it stops the threads.
#ifndef STRATA_TXN_TRANSACTION_DB_H_
#define STRATA_TXN_TRANSACTION_DB_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/latency_recorder.h"
#include "common/mutex.h"
#include "strata/transaction.h"
#include "txn/latches.h"
#include "txn/liveness_registry.h"
#include "txn/lock_resolver.h"
#include "txn/pessimistic_locks.h"
#include "txn/timestamp_oracle.h"

namespace strata::txn {

// The points between the steps of a commit where a coordinator can be made to
// stop (TxnDBConfig::fail_point).
enum class FailPoint {
  kAfterPrimaryPrewrite,  // the primary's row is prewritten, nothing else
  kAfterSecondaryBatch,   // after each batch of other rows' prewrites
  kAfterCommitTs,         // every row prewritten, commit_ts taken
  kAfterPrimaryCommit,    // committed; no secondary committed yet
  kAfterSecondaryCommit,  // after each batch of secondaries' commits, in the
                          // foreground (background commits merge transactions)
};
const char* FailPointName(FailPoint point);

// How often the TxnDB heartbeats its live transactions (microseconds): a
// third of the shorter of the lock TTL and the registry's liveness timeout,
// so that a beat may be missed, but at most a second and at least 1 ms.
uint64_t HeartbeatIntervalMicros(uint64_t lock_ttl_millis, uint64_t liveness_timeout_micros);

struct TxnDBConfig {
  TransactionDBOptions options;
  TimestampOracle* oracle = nullptr;      // required; outlives the TxnDB
  LivenessRegistry* registry = nullptr;   // required; outlives the TxnDB
  Clock* clock = nullptr;                 // wall clock for lock TTLs; nullptr = default
  std::shared_ptr<TableResolver> tables;  // required
  // Makes a transactional table (TransactionDB::CreateTable); nullptr:
  // CreateTable is NotSupported.
  std::function<Status(std::string_view, const TransactionalTableOptions&)> create_table;
  // Every table shares one log in which a synced write makes every write
  // before it durable: prewrites and lock resolutions are then written
  // without waiting for a sync of their own.
  bool single_log = false;
  // Consulted at each fail point with the transaction's start_ts; true stops
  // the coordinator there (Commit returns Aborted, "stopped at fail point").
  std::function<bool(FailPoint, uint64_t)> fail_point;
  // Keeps services (or anything else) alive as long as the TxnDB.
  std::shared_ptr<void> keep_alive;
  // The latches of one-phase commits (txn/latches.h), shared by every TxnDB
  // on the same tables; nullptr: the TxnDB's own.
  std::shared_ptr<Latches> latches;
  // The locks of pessimistic transactions (txn/pessimistic_locks.h), shared
  // like the latches; nullptr: the TxnDB's own.
  std::shared_ptr<PessimisticLocks> pessimistic_locks;

  // For the garbage collector (gc/): the names of the transactional tables,
  // and the rows that divide a table into ranges for its tasks (an engine
  // table's tablet boundaries). nullptr: no tables listed; no boundaries.
  std::function<Result<std::vector<std::string>>()> list_tables;
  std::function<Result<std::vector<std::string>>(std::string_view table)> split_rows;
  // The name the collector's state is kept under (the tenant's).
  std::string name;
};

// What a transaction's heartbeat needs, shared with the DB's heartbeat thread.
struct HeartbeatState {
  Mutex mu;
  Owner owner;  // immutable once registered
  bool prewritten GUARDED_BY(mu) = false;
  bool finished GUARDED_BY(mu) = false;  // committing, committed or aborted
  bool owner_dead GUARDED_BY(mu) = false;
  TxnKey primary;  // immutable once the heartbeat has the state (StartHeartbeat)
  LockRecord primary_lock GUARDED_BY(mu);
  std::string primary_lock_bytes GUARDED_BY(mu);
};

// The state of a TransactionDB, shared by the handle its caller holds
// (TxnDB::Make's TransactionDB, which closes it when it goes) and by every
// transaction begun on it, so that a transaction may outlive the handle: its
// calls then fail as on a closed TransactionDB.
class TxnDB final : public std::enable_shared_from_this<TxnDB> {
 public:
  // The caller's handle on a new TxnDB.
  static Result<std::unique_ptr<TransactionDB>> Make(TxnDBConfig config);
  ~TxnDB();

  // As TransactionDB's.
  Status CreateTable(std::string_view name, const TransactionalTableOptions& options);
  Result<std::unique_ptr<Transaction>> Begin(const TransactionOptions& options);
  void AdvanceSafepoint(uint64_t safepoint);
  Status Close();

  // For the garbage collector: the lowest start_ts among the transactions
  // begun here that have not ended (UINT64_MAX when none), and a fresh
  // timestamp `now`, both taken with Begin held off: a transaction not
  // counted in *oldest started, or will start, above *now.
  Status RunningFloor(uint64_t* oldest, uint64_t* now);
  // The lowest start_ts among the transactions begun here that have not
  // ended, UINT64_MAX when none; without holding Begin off (for publishing
  // to other processes: txn/shared_safepoints.h).
  uint64_t OldestRunning();
  // Called once per transaction when it can write no more: it rolled back,
  // failed or stopped, or is destroyed open; or it committed and its
  // secondaries are committed (by the background thread when queued there).
  void TransactionEnded(uint64_t start_ts);

  // For observers (observer/): a transaction that runs the observer of
  // `trigger` (the observed cell whose notification it handles; nullptr for
  // a weak observer). A strong run's primary is `trigger`, locked like a
  // GetForUpdate of it, and its commit acknowledges the notification
  // (txn/FORMAT.md, "Notifications").
  Result<std::unique_ptr<Transaction>> BeginObserverRun(const TxnKey* trigger);
  // Whether writes of `column` in `table` notify (options.observed_columns).
  bool Observed(std::string_view table, std::string_view column) const;
  // Calls `listener` after every commit that wrote notifications (from the
  // committing thread; it must be quick and must not call back into the
  // TxnDB). The id removes it.
  uint64_t AddNotifyListener(std::function<void()> listener) LOCKS_EXCLUDED(listeners_mu_);
  void RemoveNotifyListener(uint64_t id) LOCKS_EXCLUDED(listeners_mu_);
  void NotificationsWritten() LOCKS_EXCLUDED(listeners_mu_);

  // For the transactions.
  const TxnDBConfig& config() const { return config_; }
  LockResolver* resolver() { return &resolver_; }
  Latches* latches() const { return config_.latches.get(); }
  PessimisticLocks* pessimistic_locks() const { return config_.pessimistic_locks.get(); }
  Clock* clock() const { return clock_; }
  uint64_t safepoint() const { return safepoint_.load(std::memory_order_acquire); }
  bool closed() const { return closed_.load(std::memory_order_acquire); }
  bool FailPointHit(FailPoint point, uint64_t start_ts) const {
    return config_.fail_point && config_.fail_point(point, start_ts);
  }
  void StartHeartbeat(const std::shared_ptr<HeartbeatState>& state);
  void StopHeartbeat(const std::shared_ptr<HeartbeatState>& state);

  // Secondary commits handed to the background thread.
  struct SecondaryJob {
    uint64_t start_ts = 0;
    uint64_t commit_ts = 0;
    // Per table, per row, the mutation that commits the row.
    std::vector<std::pair<std::string, std::vector<ConditionalMutation>>> tables;
  };
  // start_ts 0: several transactions merged (no fail points).
  // Commits the rows of `job`, in batches; false when a fail point stopped it.
  bool CommitSecondaries(const SecondaryJob& job, Status* status);
  void EnqueueSecondaries(SecondaryJob job);

  // TransactionStats as the transactions count them. Relaxed: each counter
  // stands alone, nothing is published through them, and GetStats says two
  // may disagree by the transactions in flight.
  struct Stats {
    std::atomic<uint64_t> begun{0};
    std::atomic<uint64_t> two_phase_commits{0};
    std::atomic<uint64_t> read_only_commits{0};
    std::atomic<uint64_t> rolled_back{0};
    std::atomic<uint64_t> failed[TransactionStats::kErrorKinds] = {};
    std::atomic<uint64_t> lock_wait_sleeps{0};
    std::atomic<uint64_t> pessimistic_lock_waits{0};
    // Background secondary-commit batches the store failed; their keys are
    // rolled forward by the next reader.
    std::atomic<uint64_t> background_failures{0};
    // Transactions committed in one phase.
    std::atomic<uint64_t> one_phase_commits{0};
    LatencyRecorder commit_latency;
    LatencyRecorder pessimistic_lock_wait_latency;
  };
  const Stats& stats() const { return stats_; }
  Stats& mutable_stats() { return stats_; }
  void CountOnePhaseCommit() { stats_.one_phase_commits.fetch_add(1, std::memory_order_relaxed); }
  TransactionStats GetStats() const;

 private:
  explicit TxnDB(TxnDBConfig config);
  void HeartbeatThread();
  void BackgroundThread();
  void RefreshPrimary(HeartbeatState* state);
  static SecondaryJob MergeJobs(const std::deque<SecondaryJob>& jobs);

  const TxnDBConfig config_;
  // options.observed_columns: table -> columns.
  const std::map<std::string, std::set<std::string, std::less<>>, std::less<>> observed_;
  Clock* const clock_;
  LockResolver resolver_;
  std::atomic<uint64_t> safepoint_{0};
  std::atomic<bool> closed_{false};

  // Begin takes it shared from its timestamp to its registration in
  // running_; RunningFloor exclusively.
  SharedGate begin_gate_;
  Mutex running_mu_;
  // The start_ts of every transaction begun here that has not ended.
  std::multiset<uint64_t> running_ GUARDED_BY(running_mu_);
  Stats stats_;

  Mutex mu_;
  CondVar cv_{&mu_};       // the heartbeat thread: stopping_
  CondVar jobs_cv_{&mu_};  // jobs_, job_running_, stopping_
  bool stopping_ GUARDED_BY(mu_) = false;
  std::set<std::shared_ptr<HeartbeatState>> live_ GUARDED_BY(mu_);
  std::deque<SecondaryJob> jobs_ GUARDED_BY(mu_);
  bool job_running_ GUARDED_BY(mu_) = false;
  std::thread heartbeat_thread_;
  std::thread background_thread_;

  Mutex listeners_mu_;
  uint64_t next_listener_ GUARDED_BY(listeners_mu_) = 1;
  std::map<uint64_t, std::function<void()>> listeners_ GUARDED_BY(listeners_mu_);
  // listeners_ is not empty: lets a commit skip the mutex when nobody listens.
  std::atomic<bool> has_listeners_{false};
};

// The TxnDB behind a TransactionDB that TxnDB::Make or TransactionDB::Open
// made; null for any other.
std::shared_ptr<TxnDB> TxnDBOf(TransactionDB& db);

// A TxnDB on `services` (TransactionDB::Open's, and the one over RADOS
// tables): `config` brings the tables, their hooks and config.name (under
// which its collector keeps its state); the services fill in the oracle,
// the registry and keep_alive, the latches and pessimistic locks shared with
// every TxnDB of this process on the same services and name, and, with
// services shared by many processes, publish its oldest running transaction.
Result<std::unique_ptr<TransactionDB>> MakeOnServices(std::shared_ptr<TransactionServices> services,
                                                      TxnDBConfig config);

}  // namespace strata::txn

#endif  // STRATA_TXN_TRANSACTION_DB_H_
