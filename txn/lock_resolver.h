// The Percolator protocol's cell operations on the row-store seam, and lazy
// lock resolution.
//
// Everything here reaches storage only through RowStore (strata/row_store.h)
// and decides the fate of a transaction only at its primary cell: a
// transaction is committed exactly when its primary has a commit record, and
// rolled back exactly when its primary has a rollback record (or its lock is
// gone without a commit record). Committing a primary (Transaction::Commit)
// and rolling it back (here) are conditional mutations of the primary's row,
// so exactly one of them wins; every other cell follows its primary.
//
// Thread-safe: a LockResolver holds no mutable state of its own.
#ifndef STRATA_TXN_LOCK_RESOLVER_H_
#define STRATA_TXN_LOCK_RESOLVER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "strata/row_store.h"
#include "strata/status.h"
#include "txn/liveness_registry.h"
#include "txn/records.h"
#include "txn/table_resolver.h"

namespace strata::txn {

// One user column of one row of one table.
struct TxnKey {
  std::string table;
  std::string row;
  std::string column;

  friend auto operator<=>(const TxnKey&, const TxnKey&) = default;
  std::string ToString() const;
};

// What a transaction's primary says about it.
struct TxnStatus {
  enum class State {
    kLocked,      // still prewritten: not committed, not rolled back
    kCommitted,   // commit record at commit_ts
    kRolledBack,  // rollback record, or the lock is gone without a commit
  };
  State state = State::kLocked;
  uint64_t commit_ts = 0;   // kCommitted
  WriteRecord record;       // kCommitted, kRolledBack with a record: the write record
  bool has_record = false;  // kRolledBack: whether a rollback record is there
  LockRecord lock;          // kLocked: the primary's lock
  std::string lock_bytes;   // kLocked: its encoding, for conditions
};

// Reads (row, column)'s lock at start_ts and the write record of the
// transaction that started at start_ts, in one atomic read of the row. A
// missing lock without a record reads as kRolledBack with record.kind
// kRollback and no record written: the caller decides whether to write one.
Result<TxnStatus> ReadTxnStatus(const RowStore& store, std::string_view row,
                                std::string_view column, uint64_t start_ts);

// The write record a lock turns into at commit.
WriteRecord CommitRecordFor(const LockRecord& lock);

// Appends to `m` the commit of (column) at commit_ts: the write record, and
// the lock's removal (a column marker at its start_ts, txn/FORMAT.md "How
// locks are erased"). Data stays (it is the value).
void AddCommit(RowMutation* m, std::string_view column, const LockRecord& lock, uint64_t commit_ts);
// Appends to `m` the rollback of (column) for start_ts: the rollback record,
// the lock's and the data's removal.
void AddRollback(RowMutation* m, std::string_view column, uint64_t start_ts,
                 uint64_t rolled_back_by);

struct ResolverOptions {
  // Wait for resolution writes to be durable. Off is safe when a later
  // synced write of any transaction makes them durable too (the engine's one
  // log); a lost resolution is simply done again.
  bool sync = false;
};

class LockResolver {
 public:
  LockResolver(TableResolver* tables, LivenessRegistry* registry, Clock* clock,
               const ResolverOptions& options);

  // What the caller wants done with a lock it met.
  enum class Intent {
    // A reader at `ts`: resolve it if the transaction is decided or dead;
    // otherwise push the primary's min_commit_ts above `ts`. A lock whose
    // primary is not prewritten yet has nothing to push: the reader rolls
    // its transaction back.
    kRead,
    // A prewriting transaction with start_ts `ts` younger than the lock's:
    // resolve it if decided or dead, otherwise leave it (kLive). A lock
    // whose primary is not prewritten yet is live while it is itself.
    kCheck,
    // A prewriting transaction with start_ts `ts` older than the lock's:
    // roll the lock's transaction back unless it has committed (priority).
    kWound,
  };

  struct Resolution {
    enum class Outcome {
      kCommitted,   // rolled forward: the key now has the commit record
      kRolledBack,  // the key's lock is gone and a rollback record is there
      kPushed,      // kRead: the writer will commit above the reader's ts
      kLive,        // kCheck: the lock's transaction is alive and undecided
    };
    Outcome outcome = Outcome::kLive;
    uint64_t commit_ts = 0;  // kCommitted
  };

  // Resolves `lock`, met at `key`, as `intent` asks; `ts` is the caller's
  // start_ts. On success the key no longer holds the lock unless the outcome
  // is kPushed or kLive.
  Result<Resolution> Resolve(const TxnKey& key, const LockRecord& lock, Intent intent, uint64_t ts);

  // Resolve, left out of counts(): for a garbage collector, which counts
  // its own resolutions.
  Result<Resolution> ResolveUncounted(const TxnKey& key, const LockRecord& lock, Intent intent,
                                      uint64_t ts);

  // What Resolve calls ended in, so far: kCommitted, kRolledBack, kPushed.
  // The counters are relaxed: each stands alone.
  struct Counts {
    uint64_t rolled_forward = 0;
    uint64_t rolled_back = 0;
    uint64_t pushed = 0;
  };
  Counts counts() const;

  // Rolls back the transaction whose primary is (store, row, column) at
  // start_ts, unless it has committed. Returns the primary's final status
  // (kCommitted or kRolledBack). `expected_lock_bytes`, when non-empty, is the
  // lock the caller decided on: if the lock changed meanwhile (a heartbeat),
  // the call re-reads and gives kLocked back for the caller to decide again.
  // When empty, the primary has no lock: the call reads the primary itself
  // and writes the rollback record only while its write column is as read,
  // with no record of start_ts, so a prewrite and commit of the primary
  // after the caller's read (which leaves no lock either) gives kCommitted,
  // never a rollback record beside the commit; a lock that appeared gives
  // kLocked.
  Result<TxnStatus> RollbackPrimary(RowStore& store, std::string_view row, std::string_view column,
                                    uint64_t start_ts, uint64_t rolled_back_by,
                                    const std::string& expected_lock_bytes);

  // Whether a lock is past its TTL on the wall clock, or its owner is dead.
  Result<bool> Expired(const LockRecord& primary_lock);

  uint64_t NowMillis() const { return clock_->NowMicros() / 1000; }
  Result<std::shared_ptr<RowStore>> Store(std::string_view table) {
    return tables_->Resolve(table);
  }
  const ResolverOptions& options() const { return options_; }

 private:
  // Applies a decided status of the primary to a secondary key.
  Status ApplyToKey(RowStore& store, const TxnKey& key, const LockRecord& lock,
                    const TxnStatus& status);

  TableResolver* const tables_;
  LivenessRegistry* const registry_;
  Clock* const clock_;
  const ResolverOptions options_;
  std::atomic<uint64_t> rolled_forward_{0};
  std::atomic<uint64_t> rolled_back_{0};
  std::atomic<uint64_t> pushed_{0};
};

}  // namespace strata::txn

#endif  // STRATA_TXN_LOCK_RESOLVER_H_
