// Snapshot-isolation transactions across rows and tables of one tenant, as
// Google's Percolator builds them on Bigtable: every read sees the snapshot of
// the transaction's start timestamp; Commit writes every row through a
// conditional mutation (prewrite), takes a commit timestamp and commits the
// primary cell first, which is the commit point; locks left behind by a
// coordinator that stopped are resolved lazily by whoever meets them.
//
//   TransactionServices  the timestamp oracle and the liveness registry, kept
//                        in one directory; one per process, shared by every
//                        TransactionDB (of any tenant) of the process.
//   TransactionDB        transactions over one tenant's transactional tables.
//   Transaction          Begin → Get/BatchGet/Scan/GetForUpdate, Set/Erase →
//                        Commit or Rollback.
//
// A transactional table stores each user column in Percolator's columns
// (txn/FORMAT.md): its value in `data`, commit records in `write`, locks in
// `lock` (an in-memory locality group). Create it with
// TransactionDB::CreateTable and write it only through transactions.
//
// Notifications (strata/observer.h): a transaction that writes a column
// named in TransactionDBOptions::observed_columns also writes that column's
// `notify` cell, and SetWeakNotification writes one without a write to the
// column; an ObserverWorker finds them and runs the column's observer.
//
// Isolation is snapshot isolation: write-write conflicts abort, but two
// transactions that read what the other writes may both commit (write skew).
// GetForUpdate makes a read conflict like a write, which prevents it.
//
// Optimistic and pessimistic transactions. An optimistic transaction (the
// default) takes no lock before Commit: a key another transaction commits
// after its start_ts aborts it there. A pessimistic one
// (TransactionOptions::mode, TransactionDBOptions::pessimistic) locks each key
// it reads with GetForUpdate at that read, in memory, and reads the key's
// newest committed value: transactions that GetForUpdate one key take turns,
// each waiting in the key's queue until the one before it ends, so a hot key's
// read-modify-write commits without aborting. A wait ends in a deadlock error
// at once when it would close a cycle, or in a timeout. Pessimistic locks live
// in memory only: a crash loses them together with the transactions that held
// them (what a commit had written is resolved as after any crash). They keep
// out other pessimistic transactions, not optimistic ones: an optimistic
// commit of a locked key in between makes the lock holder's Commit abort
// (kWriteConflict).
//
// Errors: every call returns a Status; a transaction that failed says why in
// error() (the key and the conflicting transaction's timestamps):
//   Aborted   a write conflict, a lock held by an older transaction, rolled
//             back by an older transaction or by a lock resolver, too old
//             (start_ts below the GC safepoint), a deadlock or a lock-wait
//             timeout of a pessimistic transaction; retry with a new
//             transaction
//   Busy      a read met a lock it may not resolve and could not push, or a
//             key's lock kept changing through every retry (kKeyLocked)
//   InvalidArgument  bad input (empty row or column, unknown table, a
//             transaction that is no longer open); nothing changes
//   NotFound  from Get: no value (also the table was dropped: see the message)
//   FailedPrecondition  a key's lock names a primary whose table was dropped:
//             its transaction's outcome cannot be known
//   others    the store failed; for Commit the outcome may be unknown
//             (error().kind == kUnknownOutcome)
//
// Thread safety: TransactionServices and TransactionDB are thread-safe; a
// Transaction is used by one thread at a time.
#ifndef STRATA_TRANSACTION_H_
#define STRATA_TRANSACTION_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "strata/engine.h"
#include "strata/latency_histogram.h"
#include "strata/options.h"
#include "strata/status.h"

namespace strata {

namespace txn {
class TxnServicesImpl;
struct TransactionServicesAccess;
}  // namespace txn

struct TransactionServicesOptions {
  // How far ahead of the clock each durable oracle ceiling reaches
  // (milliseconds). Larger: fewer fsyncs; smaller: less of a jump ahead of
  // the clock after a crash.
  uint64_t oracle_window_millis = 3000;
  // How long a coordinator stays alive without a heartbeat (microseconds).
  // Longer: a hung coordinator blocks readers of its locks longer; heartbeats
  // come no more often than every millisecond (txn/README.md), so a few
  // milliseconds is too short.
  uint64_t liveness_timeout_micros = 10'000'000;
};

// The timestamp oracle and the liveness registry of one directory. Open locks
// the directory; every open is a new liveness instance, so the coordinators
// of an earlier open (a crashed process) are dead at once.
class TransactionServices {
 public:
  static Result<std::shared_ptr<TransactionServices>> Open(
      const std::string& dir, const TransactionServicesOptions& options = {});

  ~TransactionServices();
  TransactionServices(const TransactionServices&) = delete;
  TransactionServices& operator=(const TransactionServices&) = delete;

  // A fresh timestamp: above every timestamp handed out before.
  Result<uint64_t> GetTimestamp();

 private:
  friend struct txn::TransactionServicesAccess;  // the library's own access
  explicit TransactionServices(std::unique_ptr<txn::TxnServicesImpl> impl);
  std::unique_ptr<txn::TxnServicesImpl> impl_;
};

// The locality groups of a transactional table (txn/FORMAT.md). Each group
// is named after its family and is in memory or not as the schema says: the
// `name` and `in_memory` fields here are ignored.
struct TransactionalTableOptions {
  // The `data`, `write` and `ack` groups; LocalityGroupOptions says what
  // each field trades.
  LocalityGroupOptions data_group;
  // The `lock` group (in memory). Its family's column markers hide by
  // timestamp (txn/FORMAT.md, "How locks are erased"), so a read of a lock
  // column stops at the erase marker of the newest commit there. The erased
  // locks below it stay in the memtable until a flush drops them: a small
  // write buffer drops them sooner on rows many transactions write (and
  // bounds the walk over them in tables created before the option), at the
  // cost of more flushes.
  LocalityGroupOptions lock_group = [] {
    LocalityGroupOptions g;
    g.write_buffer_size = 1 << 20;
    return g;
  }();
  // The `notify` group (in memory). Observer workers scan it, past the
  // markers that erased handled notifications: as for locks, a small write
  // buffer keeps those scans short.
  LocalityGroupOptions notify_group = [] {
    LocalityGroupOptions g;
    g.write_buffer_size = 1 << 20;
    return g;
  }();
};

// A column of a transactional table that observers watch.
struct ObservedColumn {
  std::string table;
  std::string column;
  friend bool operator==(const ObservedColumn&, const ObservedColumn&) = default;
};

struct TransactionDBOptions {
  static constexpr uint64_t kMaxLockTtlMillis = 24ull * 3600 * 1000;  // a day
  // Commit returns once the commit is durable (prewrites need no sync of
  // their own: the primary's synced commit, later in the engine's one log,
  // covers them). Off is faster, but a crash may lose commits that returned.
  bool sync = true;
  // A lock's time to live (milliseconds of wall time, 1 to kMaxLockTtlMillis):
  // anyone may roll back a lock older than this that its transaction's
  // heartbeat has not refreshed. Shorter: a stalled coordinator blocks
  // readers for less time, but heartbeats come more often.
  uint64_t lock_ttl_millis = 3000;
  // Values up to this many bytes are stored in the commit record itself, so
  // a read of them needs no second lookup; a larger limit makes the `write`
  // group, which every read searches, bigger. 0 stores every value in `data`.
  uint32_t max_inline_value = 64;
  // Commit the secondaries on a background thread and return from Commit
  // once the primary is committed. Faster; readers that meet a secondary not
  // yet committed roll it forward themselves.
  bool commit_secondaries_in_background = true;
  // Most rows one prewrite or commit batch (one CheckAndMutateBatch, of one
  // table) carries. Larger: fewer, longer store calls for a transaction of
  // many rows.
  uint32_t max_batch_rows = 256;
  // Prewrite the primary's row on its own before any other row, as the
  // Percolator paper does. Off, the primary's row goes in the first batch of
  // its table: one log write fewer per transaction.
  bool prewrite_primary_alone = false;
  // Commit a transaction whose keys and notifications are all in one table
  // and fit one batch (max_batch_rows rows) in one phase (txn/FORMAT.md,
  // "One-phase commit"): its data and commit records are written at
  // commit_ts in one all-or-nothing conditional batch, with no lock and no
  // second write, while in-memory latches make readers that must see the
  // commit wait for it. Every TransactionDB reading or writing the tables
  // must share those latches: the ones opened in one process on one tenant
  // with one TransactionServices do. The two phases are used instead when
  // the store has no all-or-nothing batch, when a condition fails (a lock or
  // a conflict, which the two phases then resolve or report), or when another
  // one-phase commit holds one of the keys. Fail points are the two phases'.
  bool one_phase_commit = true;
  // Transactions are pessimistic unless TransactionOptions::mode says
  // otherwise.
  bool pessimistic = false;
  // The columns whose every committed write (put or erase) also writes a
  // notification for their strong observer (strata/observer.h), at the
  // commit timestamp and before the commit point, so that a commit always
  // notifies and an aborted one at most causes a run that finds nothing
  // new. Every TransactionDB that writes these columns, in any process,
  // must be opened with them; an ObserverWorker checks its own. A write by
  // an observer's run to the very cell that triggered it notifies nobody.
  std::vector<ObservedColumn> observed_columns;
};

struct TransactionOptions {
  // How long (milliseconds, with backoff) to wait for an older, live,
  // undecided transaction's lock before a read pushes that transaction's
  // commit past its snapshot and reads on, or a commit aborts (kKeyLocked);
  // 0 does so at once, and Begin rejects more than kMaxLockWaitMillis. Waiting
  // trades latency for fewer retries on keys that transactions contend for.
  static constexpr uint64_t kMaxLockWaitMillis = 24ull * 3600 * 1000;
  uint64_t lock_wait_millis = 0;

  enum class Mode {
    kDefault,      // TransactionDBOptions::pessimistic decides
    kOptimistic,   // no lock before Commit
    kPessimistic,  // GetForUpdate locks the key at the read (see the top of this file)
  };
  Mode mode = Mode::kDefault;
  // How long (milliseconds) a pessimistic GetForUpdate waits for a key
  // another transaction holds, or for a lock an optimistic commit left on
  // it, before the transaction fails (kLockWaitTimeout); 0 fails at once.
  // At most kMaxLockWaitMillis.
  uint64_t for_update_wait_millis = 3000;
};

// What stopped a transaction; kind kNone while nothing has.
struct TransactionError {
  enum class Kind {
    kNone,
    kWriteConflict,    // another transaction committed the key after start_ts
    kKeyLocked,        // an older live transaction holds the key's lock, or it kept changing
    kAbortedByOlder,   // an older transaction rolled this one back (priority)
    kRolledBack,       // a lock resolver rolled this one back (TTL ran out, owner dead)
    kTooOld,           // start_ts is below the GC safepoint
    kCoordinatorDead,  // the liveness registry declared this coordinator dead; on
                       // cluster services also: this process's lease may have run
                       // out, so its reads are no longer held safe from other
                       // processes' garbage collectors
    kUnknownOutcome,   // the store failed while committing the primary
    kStorage,          // the store failed; nothing was committed
    kDeadlock,         // a pessimistic lock wait would close a cycle of waits
    kLockWaitTimeout,  // a pessimistic lock wait ran out (for_update_wait_millis)
  };
  Kind kind = Kind::kNone;
  // The key the error is about, when there is one.
  std::string table;
  std::string row;
  std::string column;
  // The other transaction: its start_ts, and commit_ts for a write conflict.
  uint64_t other_start_ts = 0;
  uint64_t other_commit_ts = 0;
};

const char* TransactionErrorKindName(TransactionError::Kind kind);

// Counters of a TransactionDB since it was opened (TransactionDB::GetStats),
// over every transaction begun on it, observer runs included. Each counter
// is read on its own while transactions run, so two of them may disagree by
// the transactions in flight. Transactions that a test's fail point stopped
// (txn/transaction_db.h) are in none of them. Intentionally copyable.
struct TransactionStats {
  uint64_t begun = 0;
  // Commits of transactions that had something to write (a GetForUpdate
  // key counts: its commit writes a lock record; so do notifications), in
  // two phases or, when the commit fits one batch, in one
  // (TransactionDBOptions::one_phase_commit), and their sum; then commits
  // with nothing to write.
  uint64_t committed_two_phase = 0;
  uint64_t committed_one_phase = 0;
  uint64_t committed = 0;  // committed_two_phase + committed_one_phase
  uint64_t committed_read_only = 0;
  uint64_t rolled_back = 0;  // Rollback of an open transaction
  // Transactions that failed, by the kind their error() names: index
  // static_cast<size_t>(kind) (kNone's entry stays 0). kUnknownOutcome counts
  // commits whose outcome is unknown, kStorage other store failures.
  static constexpr size_t kErrorKinds =
      static_cast<size_t>(TransactionError::Kind::kLockWaitTimeout) + 1;
  std::array<uint64_t, kErrorKinds> failed{};
  // Sleeps (each one backoff step) of reads and prewrites waiting for an
  // older live transaction's lock (TransactionOptions::lock_wait_millis).
  uint64_t lock_wait_sleeps = 0;
  // Pessimistic GetForUpdate calls that queued for a key another transaction
  // held, however the wait ended.
  uint64_t pessimistic_lock_waits = 0;
  // Locks of other transactions this TransactionDB's reads and prewrites
  // resolved: rolled forward (their transaction had committed), rolled back
  // (its TTL ran out, its owner died, or an older transaction wounded it);
  // and reads that met a live transaction's lock and left its commit above
  // their snapshot (pushing it there, or finding it pushed already). A
  // garbage collector's resolutions are its own (GcStats::locks_resolved).
  uint64_t locks_rolled_forward = 0;
  uint64_t locks_rolled_back = 0;
  uint64_t commits_pushed = 0;
  // Background secondary-commit batches the store failed (their keys are
  // rolled forward by the next reader).
  uint64_t background_commit_failures = 0;
  // Latencies: of each Commit that succeeded with writes (from the call to
  // its return; secondaries committed in the background are not waited
  // for), and of each pessimistic lock wait.
  LatencyHistogram commit_latency;
  LatencyHistogram pessimistic_lock_wait_latency;
};

// One (row, column, value) of a transactional scan.
class TransactionIterator {
 public:
  virtual ~TransactionIterator() = default;
  virtual bool Valid() const = 0;
  virtual void Next() = 0;
  // Moves to the first (row, column) of the scan at or after the start of
  // `row` (a row before the scan's start_row: to start_row), or makes the
  // iterator !Valid() when there is none before its end_row. It reads the
  // same snapshot as the scan and the transaction's buffered writes as they
  // are now; backwards is fine. Does nothing once status() is not OK.
  virtual void Seek(std::string_view row) = 0;
  virtual std::string_view row() const = 0;
  virtual std::string_view column() const = 0;
  virtual std::string_view value() const = 0;
  // Not OK if the scan failed; Valid() is then false.
  virtual Status status() const = 0;
};

class Transaction {
 public:
  virtual ~Transaction() = default;

  virtual uint64_t start_ts() const = 0;
  // The commit timestamp once Commit has succeeded, else 0.
  virtual uint64_t commit_ts() const = 0;

  // The value of (row, column) in the snapshot at start_ts, or this
  // transaction's own buffered write. NotFound when there is none.
  virtual Result<std::string> Get(std::string_view table, std::string_view row,
                                  std::string_view column) = 0;
  struct Key {
    std::string row;
    std::string column;
  };
  // Get for each key; std::nullopt where there is no value.
  virtual Result<std::vector<std::optional<std::string>>> BatchGet(
      std::string_view table, const std::vector<Key>& keys) = 0;
  // Every (row, column) with a value in [start_row, end_row) (an empty
  // bound is open), in row then column order; `columns` empty means every
  // column. Includes this transaction's buffered writes. The iterator must
  // not outlive the transaction; a Rollback meanwhile leaves it usable.
  virtual Result<std::unique_ptr<TransactionIterator>> Scan(
      std::string_view table, std::string_view start_row, std::string_view end_row,
      const std::vector<std::string>& columns = {}) = 0;
  // Get, and make the key conflict as if it were written: Commit aborts if
  // another transaction commits the key after start_ts, and one that tries
  // to commit it later conflicts with this one.
  //
  // Pessimistic: first locks the key (waiting for its holder, or failing
  // with kDeadlock or kLockWaitTimeout, which end the transaction and let
  // every lock it held go), then takes a fresh timestamp, for_update_ts, and
  // reads the newest value committed at or below it. Until the transaction
  // ends, Get of the key reads at for_update_ts too, and Commit aborts only
  // if a commit of the key came after for_update_ts (start_ts for the keys
  // it did not lock this way). Its other reads stay at start_ts.
  virtual Result<std::string> GetForUpdate(std::string_view table, std::string_view row,
                                           std::string_view column) = 0;

  // Buffered until Commit. InvalidArgument, with nothing buffered, for an
  // empty table, row or column, an unknown table, or a row key, column or
  // value larger than the table's store accepts (RowStore::GetLimits: the
  // engine's EngineOptions limits), and likewise for Erase and
  // SetWeakNotification.
  virtual Status Set(std::string_view table, std::string_view row, std::string_view column,
                     std::string_view value) = 0;
  virtual Status Erase(std::string_view table, std::string_view row, std::string_view column) = 0;
  // Marks (row, column) dirty for the column's observer without writing it:
  // Commit writes its notification (at commit_ts, before the commit point).
  // Conflicts with nothing; many of them before a run make one run. Meant
  // for weak observers, which run at least once after the notification and
  // must bear running again; a strong observer of the column runs for it as
  // for a write.
  virtual Status SetWeakNotification(std::string_view table, std::string_view row,
                                     std::string_view column) = 0;

  // Prewrites, takes commit_ts, commits the primary. OK means committed
  // (durable with TransactionDBOptions::sync). A transaction with no writes
  // and no notifications commits without touching the store. A second Commit after success is a
  // no-op returning OK.
  virtual Status Commit() = 0;
  // Ends the transaction without committing, undoing any prewrite.
  virtual Status Rollback() = 0;

  virtual const TransactionError& error() const = 0;
};

class TransactionDB {
 public:
  // Transactions over `tenant`'s transactional tables. Keeps a reference to
  // `services`.
  static Result<std::unique_ptr<TransactionDB>> Open(std::shared_ptr<TransactionServices> services,
                                                     Tenant tenant,
                                                     const TransactionDBOptions& options = {});

  // Closes it (Close). Transactions it began may outlive it: their later
  // calls fail as after Close, and destroying them is safe.
  virtual ~TransactionDB() = default;

  // Creates a table with the transactional schema (txn/FORMAT.md).
  virtual Status CreateTable(std::string_view name,
                             const TransactionalTableOptions& options = {}) = 0;

  virtual Result<std::unique_ptr<Transaction>> Begin(const TransactionOptions& options = {}) = 0;

  // Raises the GC safepoint: transactions that started below it can no
  // longer read or commit (kTooOld). Never lowers it.
  virtual void AdvanceSafepoint(uint64_t safepoint) = 0;

  // The counters so far; after Close they stay as they were.
  virtual TransactionStats GetStats() const = 0;

  // Waits for background commits, stops the heartbeat. Transactions still
  // open fail their later calls. Idempotent.
  virtual Status Close() = 0;
};

}  // namespace strata

#endif  // STRATA_TRANSACTION_H_
