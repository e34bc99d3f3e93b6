// TransactionImpl: the Transaction of strata/transaction.h, one Percolator
// transaction begun on a TxnDB (txn/transaction_db.h). Reads see the
// snapshot at start_ts, resolving the locks they meet (lock_resolver.h);
// writes are buffered until Commit.
//
// The commit protocol (Percolator's, see txn/FORMAT.md for the cells):
//   1. prewrite the primary's row (alone, or in the first batch of its
//      table): data and locks at start_ts, if no write
//      record at or after start_ts and no lock (conflicts are resolved as
//      lock_resolver.h says: an older live lock aborts us, a younger one is
//      rolled back);
//   2. prewrite the other rows, in batches per table (CheckAndMutateBatch);
//   3. take commit_ts from the oracle;
//   4. commit the primary: its write records at commit_ts and its locks
//      erased, if its lock is still the one we wrote (the commit point);
//   5. commit the other rows, in the foreground or on a background thread.
// A fail point between any two steps stops the coordinator as a crash would:
// nothing more is written, and its owner dies, so its locks can be resolved.
//
// Thread-compatible: a transaction is used by one thread at a time. It holds
// its TxnDB, so it may outlive the caller's TransactionDB; its calls then
// fail as on a closed one.
//
// Invariants: the state is kOpen until Commit, Rollback or a failure ends
// the transaction (only a fail point after the primary's commit changes it
// again, from kCommitted to kStopped); every key's lock names the primary,
// the first buffered key in (table, row, column) order; a row is recorded
// as prewritten (primary_prewritten_, primary_row_, prewritten_) as soon as
// its prewrite is known to have applied, so that an abort undoes it, and
// those records point into Commit's rows, used only while Commit runs.
#ifndef STRATA_TXN_TRANSACTION_H_
#define STRATA_TXN_TRANSACTION_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "strata/row_store.h"
#include "strata/status.h"
#include "strata/transaction.h"
#include "txn/lock_resolver.h"
#include "txn/records.h"
#include "txn/transaction_db.h"

namespace strata::txn {

// What a transaction intends for one key, buffered until Commit.
struct PendingWrite {
  MutationKind kind = MutationKind::kPut;
  std::string value;  // kPut
};

using WriteMap = std::map<TxnKey, PendingWrite>;
using WriteRef = WriteMap::const_iterator;

// The keys of one row, in column order.
struct RowWrites {
  std::string row;
  std::vector<WriteRef> keys;
};

// The rows of one table that a commit writes, in row order.
struct TableWrites {
  std::string table;
  std::vector<RowWrites> rows;
};

class TransactionImpl final : public Transaction {
 public:
  TransactionImpl(std::shared_ptr<TxnDB> db, const TransactionOptions& options, uint64_t start_ts)
      : db_(std::move(db)), options_(options), start_ts_(start_ts) {}
  ~TransactionImpl() override;
  TransactionImpl(const TransactionImpl&) = delete;
  TransactionImpl& operator=(const TransactionImpl&) = delete;

  uint64_t start_ts() const override { return start_ts_; }
  uint64_t commit_ts() const override { return state_ == State::kCommitted ? commit_ts_ : 0; }
  const TransactionError& error() const override { return error_; }

  Result<std::string> Get(std::string_view table, std::string_view row,
                          std::string_view column) override;
  Result<std::vector<std::optional<std::string>>> BatchGet(std::string_view table,
                                                           const std::vector<Key>& keys) override;
  Result<std::unique_ptr<TransactionIterator>> Scan(
      std::string_view table, std::string_view start_row, std::string_view end_row,
      const std::vector<std::string>& columns) override;
  Result<std::string> GetForUpdate(std::string_view table, std::string_view row,
                                   std::string_view column) override;
  Status Set(std::string_view table, std::string_view row, std::string_view column,
             std::string_view value) override;
  Status Erase(std::string_view table, std::string_view row, std::string_view column) override;
  Status SetWeakNotification(std::string_view table, std::string_view row,
                             std::string_view column) override;

  Status Commit() override;

  // Makes this transaction an observer's run on the notification of
  // `trigger` (TxnDB::BeginObserverRun): `trigger` is locked as by
  // GetForUpdate and becomes the primary, and the primary's commit also
  // writes the run's ack and erases the notifications at or below start_ts
  // (txn/FORMAT.md, "Notifications"). REQUIRES: nothing buffered yet.
  Status SetTrigger(const TxnKey& trigger);
  Status Rollback() override;

  // For the scan iterator (txn_iterator.h).

  // Reads the committed value of `key` at start_ts, resolving locks in the
  // way; std::nullopt when there is none (never written, or erased).
  Result<std::optional<std::string>> ReadCommitted(RowStore& store, const TxnKey& key);
  // The value the write record `record`, read at `commit_ts`, leads to,
  // following it back past rollback and lock records.
  Result<std::optional<std::string>> ValueFromWrite(RowStore& store, const TxnKey& key,
                                                    uint64_t commit_ts, WriteRecord record);
  // Whether a lock blocks this transaction's read at `read_ts` (start_ts, or
  // a for_update_ts).
  bool LockBlocksRead(const LockRecord& lock, uint64_t read_ts) const {
    if (lock.kind == MutationKind::kLock || lock.min_commit_ts > read_ts) return false;
    auto pushed = pushed_.find(lock.start_ts);
    return pushed == pushed_.end() || pushed->second < read_ts;
  }
  Result<std::shared_ptr<RowStore>> StoreFor(const std::string& table);
  const WriteMap& writes() const { return writes_; }
  // A lock of kind kLock (GetForUpdate) hides no value, so reads never wait
  // for one; but one left by a dead coordinator is resolved here, once per
  // transaction, so that reading passes leave no dead lock behind.
  Status CleanUpLockKind(const TxnKey& key, const LockRecord& lock);
  // After a read: fails the transaction (kCoordinatorDead) when this
  // process's liveness may have run out (LivenessRegistry::
  // InstanceSurelyAlive), since other processes' collectors may then have
  // passed its snapshot and removed versions the read needed.
  Status CheckSnapshotHeld();

 private:
  // How often a conflict-resolving step may find the key changed again
  // before the call gives up (each round means another transaction moved).
  static constexpr int kMaxRounds = 32;

  // Commit's steps; Commit counts what they did.
  Status CommitSteps();
  enum class State { kOpen, kCommitted, kAborted, kStopped };

  Status CheckOpen();
  bool pessimistic() const { return options_.mode == TransactionOptions::Mode::kPessimistic; }
  // ReadCommitted at `read_ts`, waiting up to `wait_millis` for a live
  // lock's transaction before pushing it past read_ts.
  Result<std::optional<std::string>> ReadCommittedAt(RowStore& store, const TxnKey& key,
                                                     uint64_t read_ts, uint64_t wait_millis);
  // Takes the pessimistic lock of `key` (txn/pessimistic_locks.h) and its
  // for_update_ts, unless this transaction holds it already.
  Status LockForUpdate(const TxnKey& key);
  // Lets every pessimistic lock go, once the transaction can write no more
  // or its commit is visible.
  void ReleasePessimisticLocks();
  // One-phase commit (txn/FORMAT.md, "One-phase commit") when the options
  // allow it and `tables` is one table's rows that fit one batch: true once
  // committed; false when nothing was written and the two phases must run
  // (no all-or-nothing batch, a failed condition, a key another one-phase
  // commit holds); an error when the transaction failed.
  Result<bool> CommitOnePhase(const std::vector<TableWrites>& tables);
  // Moves to `state`. Leaving kOpen, except for kCommitted, ends the
  // transaction (End); a committed one ends once its secondaries are
  // committed, so that the garbage collector's safepoint never passes a
  // transaction whose secondaries may still be written.
  void SetState(State state);
  // Ends the transaction's hold on the safepoint (TxnDB::TransactionEnded),
  // once.
  void End();
  Status Buffer(std::string_view table, std::string_view row, std::string_view column,
                MutationKind kind, std::string_view value);
  // Records why the transaction stopped and gives `status` back.
  Status Fail(TransactionError::Kind kind, const TxnKey* key, uint64_t other_start,
              uint64_t other_commit, Status status);

  // The lock this transaction writes for `w` (every key's names the primary).
  LockRecord MakeLock(const PendingWrite& w) const;
  // What a prewrite of a row knows from earlier attempts: keys already
  // locked by this transaction, and per key the rollback records of other
  // transactions at or after start_ts (which do not conflict).
  struct PrewriteState {
    explicit PrewriteState(size_t n) : done(n, false), rollbacks(n) {}
    std::vector<bool> done;
    std::vector<std::vector<std::pair<uint64_t, std::string>>> rollbacks;
    // Per condition of the last attempt: its key, and whether it is about
    // the write column (else the lock column).
    std::vector<std::pair<size_t, bool>> condition_keys;
    // Waiting for an older transaction's lock (TransactionOptions::lock_wait_millis).
    uint64_t wait_until = 0;
    uint64_t backoff_micros = 200;
    bool waited = false;  // the last failure was waited out: not a round
  };
  // Appends the conditions a prewrite of `key` writes under (txn/FORMAT.md):
  // no write record at or after start_ts but `rollbacks` (other
  // transactions' rollback records seen before, each still exactly there),
  // and no lock from the newest commit record read in the column on.
  // *about_write (if given) gets, per condition, whether it is about the
  // write column (else the lock column).
  void AppendPrewriteConditions(const TxnKey& key,
                                const std::vector<std::pair<uint64_t, std::string>>& rollbacks,
                                std::vector<Condition>* conditions,
                                std::vector<bool>* about_write) const;
  ConditionalMutation PrewriteOf(const RowWrites& rw, PrewriteState* state) const;
  RowMutation CommitOf(const RowWrites& rw, uint64_t commit_ts) const;

  // The notifications a commit writes, per (table, row): the observed
  // columns it writes (but not its trigger) and its weak notifications.
  using Notes = std::map<std::pair<std::string, std::string>, std::set<std::string>>;
  Notes CollectNotes() const;
  // Writes the notifications of every row but the primary's at `commit_ts`
  // (the primary's go in its commit).
  Status WriteNotes(uint64_t commit_ts);
  // What the primary's commit adds: its row's notifications, and for an
  // observer's run the ack and the erasure of what it handled.
  void AddPrimaryExtras(RowMutation* m) const;
  // Commit of a transaction with nothing but weak notifications.
  Status CommitNotesOnly();
  // Prewrites one row, resolving conflicts; `first` is a result already in
  // hand (from a batch) or nullptr.
  Status PrewriteRow(RowStore& store, const RowWrites& rw, const CheckAndMutateResult* first,
                     PrewriteState* state);
  // Looks at why a prewrite of `rw` failed; OK to retry (after resolving what
  // could be), else the error that ends the transaction.
  Status HandlePrewriteFailure(const RowWrites& rw, const CheckAndMutateResult& result,
                               PrewriteState* state);
  // Commits the primary's row `rw` against the primary's lock, taking a new
  // commit_ts while a reader's push has left it too low.
  Status WritePrimaryCommit(RowStore& store, const RowWrites& rw);

  // Commit, step by step (the protocol above). A step that fails has ended
  // the transaction (undone its prewrites, or stopped at a fail point)
  // unless it says otherwise, and returns why.
  //
  // The buffered keys grouped by table and row, tables and rows in key
  // order; sets primary_, the first key.
  std::vector<TableWrites> GroupWrites();
  // Resolves every table's store (an error leaves the transaction open),
  // registers the owner and starts the heartbeat.
  Status StartCommit(const std::vector<TableWrites>& tables);
  // 1. Prewrites the primary's row, alone or with the first batch of its
  // table; *next_row is then the first row of that table not prewritten.
  Status PrewritePrimary(const std::vector<TableWrites>& tables, size_t* next_row);
  // 2. Prewrites the other rows, in batches per table, from row `next_row`
  // of the first table on.
  Status PrewriteSecondaries(const std::vector<TableWrites>& tables, size_t next_row);
  // Prewrites rows [begin, end) of `rows`: more than one as one batch, then
  // row by row whatever did not apply.
  Status PrewriteBatch(const std::shared_ptr<RowStore>& store, const std::vector<RowWrites>& rows,
                       size_t begin, size_t end, bool with_primary);
  size_t MaxBatchRows() const;
  // 3. Takes commit_ts from the oracle.
  Status TakeCommitTs();
  // Stops the heartbeat's refreshes of the primary's lock (they would race
  // the commit); aborts if the owner was declared dead meanwhile or start_ts
  // fell below the GC safepoint.
  Status CheckMayCommit();
  // 4. Commits the primary's row: the commit point. Committed on success.
  Status CommitPrimary(const RowWrites& primary_row);
  // 5. Commits the other rows, on the background thread or here; one that
  // fails to commit is rolled forward by its next reader.
  Status CommitSecondaries(const std::vector<TableWrites>& tables);

  // Undoes every prewrite done so far, primary first.
  void UndoPrewrites();
  Status StopAt(FailPoint point);
  void Finish(State state);

  const std::shared_ptr<TxnDB> db_;  // lives on, closed, if the caller's handle goes
  const TransactionOptions options_;
  const uint64_t start_ts_;
  // Where the transaction's locks, data and rollback record go: start_ts,
  // or for a pessimistic transaction its newest for_update_ts, so that no
  // lock is written below a commit record (txn/FORMAT.md, "Pessimistic
  // transactions"). Its locks name it as their start_ts.
  uint64_t lock_ts_ = start_ts_;
  uint64_t commit_ts_ = 0;
  State state_ = State::kOpen;
  // End has run, or the background thread will end it (its secondaries
  // are queued).
  bool ended_ = false;
  TransactionError error_;
  WriteMap writes_;
  // The transactions whose min_commit_ts this one pushed, and how far (the
  // read's timestamp: their commits come above it).
  std::map<uint64_t, uint64_t> pushed_;
  // The keys this pessimistic transaction holds locked, with their
  // for_update_ts (0 while it is being taken).
  std::map<TxnKey, uint64_t> for_update_ts_;
  std::set<TxnKey> weak_notes_;    // SetWeakNotification
  std::optional<TxnKey> trigger_;  // an observer's run: the notified cell
  Notes notes_;                    // CollectNotes, at Commit
  // The commit_ts the other rows' notifications were written at (0: not yet).
  uint64_t notes_written_ts_ = 0;
  // For each key read, the timestamp of the commit record the read found
  // (a put, delete or lock record, not a rollback). No lock below it is
  // alive (FORMAT.md, "How locks are erased"), so the prewrite's lock
  // condition reads the column from there, not through a hot row's whole
  // history of erased locks. At most kMaxLockFloors keys, so that a
  // transaction reading many keys does not grow without bound; keys past
  // that are searched whole.
  static constexpr size_t kMaxLockFloors = 4096;
  std::map<TxnKey, uint64_t> lock_floors_;
  std::set<uint64_t> lock_kind_checked_;  // kLock locks' transactions looked at
  std::map<std::string, std::shared_ptr<RowStore>, std::less<>> stores_;

  // Commit state.
  std::shared_ptr<HeartbeatState> hb_;
  uint64_t lock_wall_millis_ = 0;
  const TxnKey* primary_ = nullptr;
  std::shared_ptr<RowStore> primary_store_;
  bool primary_prewritten_ = false;
  bool committed_in_one_phase_ = false;  // CommitOnePhase committed it
  // The primary's row once prewritten (it may hold other keys); points into
  // Commit's rows, like prewritten_.
  const RowWrites* primary_row_ = nullptr;
  std::vector<std::pair<std::shared_ptr<RowStore>, const RowWrites*>> prewritten_;
};

}  // namespace strata::txn

#endif  // STRATA_TXN_TRANSACTION_H_
