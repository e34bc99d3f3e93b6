#include "txn/lock_resolver.h"

#include <algorithm>
#include <utility>

#include "common/coding.h"
#include "strata/slice.h"

namespace strata::txn {

namespace {

// A resolver gives up after this many rounds of a key changing under it; each
// round means another transaction moved (a heartbeat, a late prewrite).
constexpr int kMaxRounds = 64;

std::pair<std::string, std::string> Column(std::string_view family, std::string_view column) {
  return {std::string(family), std::string(column)};
}

}  // namespace

std::string TxnKey::ToString() const {
  return table + "/" + EscapePrefix(Slice(row.data(), row.size())) + "/" +
         EscapePrefix(Slice(column.data(), column.size()));
}

namespace {

// ReadTxnStatus, also giving the cells it decided on: the column's lock and
// write cells at or above start_ts.
Result<TxnStatus> ReadTxnStatusCells(const RowStore& store, std::string_view row,
                                     std::string_view column, uint64_t start_ts,
                                     std::vector<Cell>* cells_out) {
  RowFilter filter;
  filter.columns = {Column(kLockFamily, column), Column(kWriteFamily, column)};
  filter.min_timestamp = start_ts;
  STRATA_ASSIGN_OR_RETURN(*cells_out, store.ReadRow(ReadOptions(), row, filter));
  const std::vector<Cell>& cells = *cells_out;
  TxnStatus status;
  for (const Cell& cell : cells) {
    if (cell.family == kLockFamily && cell.timestamp == start_ts) {
      status.state = TxnStatus::State::kLocked;
      status.lock_bytes = cell.value;
      STRATA_RETURN_IF_ERROR(DecodeLock(cell.value, &status.lock));
      return status;
    }
  }
  for (const Cell& cell : cells) {
    if (cell.family != kWriteFamily) continue;
    WriteRecord record;
    STRATA_RETURN_IF_ERROR(DecodeWrite(cell.value, &record));
    if (record.start_ts != start_ts) continue;
    if (record.kind == WriteKind::kRollback) {
      status.state = TxnStatus::State::kRolledBack;
      status.has_record = true;
    } else {
      status.state = TxnStatus::State::kCommitted;
      status.commit_ts = cell.timestamp;
    }
    status.record = std::move(record);
    return status;
  }
  status.state = TxnStatus::State::kRolledBack;
  status.record.kind = WriteKind::kRollback;
  status.record.start_ts = start_ts;
  return status;
}

// Conditions that hold while `column`'s write cells at or above start_ts are
// exactly `cells` (those of ReadTxnStatusCells; other families are skipped):
// each cell seen still there with its value, and none in the gaps between.
void AppendWritesUnchanged(std::string_view column, uint64_t start_ts,
                           const std::vector<Cell>& cells, std::vector<Condition>* conditions) {
  std::vector<const Cell*> writes;
  for (const Cell& cell : cells) {
    if (cell.family == kWriteFamily) writes.push_back(&cell);
  }
  std::sort(writes.begin(), writes.end(),
            [](const Cell* a, const Cell* b) { return a->timestamp < b->timestamp; });
  uint64_t from = start_ts;
  for (const Cell* cell : writes) {
    if (cell->timestamp > from) {
      conditions->push_back(
          Condition::NoCellInRange(kWriteFamily, column, from, cell->timestamp - 1));
    }
    conditions->push_back(
        Condition::ValueEquals(kWriteFamily, column, cell->timestamp, cell->value));
    if (cell->timestamp == kMaxTimestamp) return;
    from = cell->timestamp + 1;
  }
  conditions->push_back(Condition::NoCellInRange(kWriteFamily, column, from, kMaxTimestamp));
}

}  // namespace

Result<TxnStatus> ReadTxnStatus(const RowStore& store, std::string_view row,
                                std::string_view column, uint64_t start_ts) {
  std::vector<Cell> cells;
  return ReadTxnStatusCells(store, row, column, start_ts, &cells);
}

WriteRecord CommitRecordFor(const LockRecord& lock) {
  WriteRecord record;
  switch (lock.kind) {
    case MutationKind::kPut:
      record.kind = WriteKind::kPut;
      break;
    case MutationKind::kDelete:
      record.kind = WriteKind::kDelete;
      break;
    case MutationKind::kLock:
      record.kind = WriteKind::kLock;
      break;
  }
  record.start_ts = lock.start_ts;
  record.has_inline_value = lock.has_inline_value;
  record.inline_value = lock.inline_value;
  return record;
}

void AddCommit(RowMutation* m, std::string_view column, const LockRecord& lock,
               uint64_t commit_ts) {
  m->Put(kWriteFamily, column, commit_ts, EncodeWrite(CommitRecordFor(lock)));
  // A column marker: no other lock version it hides can be live or come
  // later (txn/FORMAT.md "How locks are erased"), and flushes keep only the
  // newest of them.
  m->DeleteColumn(kLockFamily, column, lock.start_ts);
}

void AddRollback(RowMutation* m, std::string_view column, uint64_t start_ts,
                 uint64_t rolled_back_by) {
  WriteRecord record;
  record.kind = WriteKind::kRollback;
  record.start_ts = start_ts;
  record.rolled_back_by = rolled_back_by;
  m->Put(kWriteFamily, column, start_ts, EncodeWrite(record));
  m->DeleteCell(kLockFamily, column, start_ts);
  m->DeleteCell(kDataFamily, column, start_ts);
}

LockResolver::LockResolver(TableResolver* tables, LivenessRegistry* registry, Clock* clock,
                           const ResolverOptions& options)
    : tables_(tables), registry_(registry), clock_(clock), options_(options) {}

Result<bool> LockResolver::Expired(const LockRecord& primary_lock) {
  if (NowMillis() > primary_lock.wall_millis + primary_lock.ttl_millis) return true;
  if (primary_lock.owner.instance_id == 0 || registry_ == nullptr) return false;
  STRATA_ASSIGN_OR_RETURN(bool alive, registry_->IsAlive(primary_lock.owner));
  return !alive;
}

Result<TxnStatus> LockResolver::RollbackPrimary(RowStore& store, std::string_view row,
                                                std::string_view column, uint64_t start_ts,
                                                uint64_t rolled_back_by,
                                                const std::string& expected_lock_bytes) {
  WriteOptions wo;
  wo.sync = options_.sync;
  for (int round = 0; round < kMaxRounds; ++round) {
    std::vector<Condition> conditions;
    RowMutation m;
    if (!expected_lock_bytes.empty()) {
      conditions.push_back(
          Condition::ValueEquals(kLockFamily, column, start_ts, expected_lock_bytes));
    } else {
      // No lock: a rollback record keeps a late prewrite of the primary out.
      // "No lock" alone is not enough: the transaction may prewrite and
      // commit the primary after the caller found it missing, and the commit
      // removes the lock again. So the status is read here, and the rollback
      // holds only while the write column is as that read saw it, without a
      // record of start_ts (a commit record lands at a commit_ts above it).
      std::vector<Cell> cells;
      STRATA_ASSIGN_OR_RETURN(TxnStatus status,
                              ReadTxnStatusCells(store, row, column, start_ts, &cells));
      if (status.state == TxnStatus::State::kLocked) return status;  // decide again
      if (status.state == TxnStatus::State::kCommitted || status.has_record) return status;
      conditions.push_back(Condition::NoCellInRange(kLockFamily, column, start_ts, start_ts));
      AppendWritesUnchanged(column, start_ts, cells, &conditions);
    }
    AddRollback(&m, column, start_ts, rolled_back_by);
    STRATA_ASSIGN_OR_RETURN(CheckAndMutateResult r, store.CheckAndMutate(wo, row, conditions, m));
    if (r.applied) {
      TxnStatus status;
      status.state = TxnStatus::State::kRolledBack;
      status.has_record = true;
      status.record.kind = WriteKind::kRollback;
      status.record.start_ts = start_ts;
      status.record.rolled_back_by = rolled_back_by;
      return status;
    }
    if (expected_lock_bytes.empty()) continue;  // the next round reads what changed
    STRATA_ASSIGN_OR_RETURN(TxnStatus status, ReadTxnStatus(store, row, column, start_ts));
    if (status.state == TxnStatus::State::kLocked) return status;  // changed: decide again
    if (status.state == TxnStatus::State::kCommitted || status.has_record) return status;
    // The lock went away without a record (it cannot without one; be safe
    // and write the record against a missing lock).
    return RollbackPrimary(store, row, column, start_ts, rolled_back_by, std::string());
  }
  return Status::Busy("rolling back the primary " + std::string(column) + " of transaction " +
                      std::to_string(start_ts) + ": it kept changing");
}

Status LockResolver::ApplyToKey(RowStore& store, const TxnKey& key, const LockRecord& lock,
                                const TxnStatus& status) {
  WriteOptions wo;
  wo.sync = options_.sync;
  RowMutation m;
  if (status.state == TxnStatus::State::kCommitted) {
    AddCommit(&m, key.column, lock, status.commit_ts);
    // Only while the lock is there: once it is gone the key is committed
    // already, and a second record would be harmless but needless.
    STRATA_ASSIGN_OR_RETURN(
        CheckAndMutateResult r,
        store.CheckAndMutate(wo, key.row,
                             {Condition::CellExists(kLockFamily, key.column, lock.start_ts)}, m));
    (void)r;
    return Status::OK();
  }
  AddRollback(&m, key.column, lock.start_ts, status.record.rolled_back_by);
  return store.Mutate(wo, key.row, m);
}

Result<LockResolver::Resolution> LockResolver::Resolve(const TxnKey& key, const LockRecord& lock,
                                                       Intent intent, uint64_t ts) {
  Result<Resolution> r = ResolveUncounted(key, lock, intent, ts);
  if (r.ok()) {
    switch (r->outcome) {
      case Resolution::Outcome::kCommitted:
        rolled_forward_.fetch_add(1, std::memory_order_relaxed);
        break;
      case Resolution::Outcome::kRolledBack:
        rolled_back_.fetch_add(1, std::memory_order_relaxed);
        break;
      case Resolution::Outcome::kPushed:
        pushed_.fetch_add(1, std::memory_order_relaxed);
        break;
      case Resolution::Outcome::kLive:
        break;
    }
  }
  return r;
}

LockResolver::Counts LockResolver::counts() const {
  Counts c;
  c.rolled_forward = rolled_forward_.load(std::memory_order_relaxed);
  c.rolled_back = rolled_back_.load(std::memory_order_relaxed);
  c.pushed = pushed_.load(std::memory_order_relaxed);
  return c;
}

Result<LockResolver::Resolution> LockResolver::ResolveUncounted(const TxnKey& key,
                                                                const LockRecord& lock,
                                                                Intent intent, uint64_t ts) {
  Result<std::shared_ptr<RowStore>> primary_store = Store(lock.primary_table);
  if (primary_store.status().code() == Status::Code::kNotFound) {
    // Not NotFound: a reader would take that for "no value" and miss the
    // value committed below the lock.
    return Status::FailedPrecondition(
        "the lock of transaction " + std::to_string(lock.start_ts) + " on " + key.ToString() +
        " cannot be resolved: its primary's table " + lock.primary_table + " is gone (" +
        primary_store.status().ToString() + ")");
  }
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<RowStore> pstore, std::move(primary_store));
  const bool is_primary = lock.primary_table == key.table && lock.primary_row == key.row &&
                          lock.primary_column == key.column;
  for (int round = 0; round < kMaxRounds; ++round) {
    STRATA_ASSIGN_OR_RETURN(TxnStatus status, ReadTxnStatus(*pstore, lock.primary_row,
                                                            lock.primary_column, lock.start_ts));
    if (status.state == TxnStatus::State::kLocked) {
      STRATA_ASSIGN_OR_RETURN(bool expired, Expired(status.lock));
      if (!expired && intent == Intent::kCheck) return Resolution{Resolution::Outcome::kLive, 0};
      if (!expired && intent == Intent::kRead) {
        if (status.lock.min_commit_ts > ts) return Resolution{Resolution::Outcome::kPushed, 0};
        LockRecord pushed = status.lock;
        pushed.min_commit_ts = ts + 1;
        RowMutation m;
        m.Put(kLockFamily, lock.primary_column, lock.start_ts, EncodeLock(pushed));
        WriteOptions wo;
        wo.sync = options_.sync;
        STRATA_ASSIGN_OR_RETURN(
            CheckAndMutateResult r,
            pstore->CheckAndMutate(wo, lock.primary_row,
                                   {Condition::ValueEquals(kLockFamily, lock.primary_column,
                                                           lock.start_ts, status.lock_bytes)},
                                   m));
        if (r.applied) return Resolution{Resolution::Outcome::kPushed, 0};
        continue;  // committed, rolled back, refreshed or pushed meanwhile
      }
      // Expired or dead, or wounded by an older transaction.
      STRATA_ASSIGN_OR_RETURN(
          status, RollbackPrimary(*pstore, lock.primary_row, lock.primary_column, lock.start_ts,
                                  expired ? 0 : ts, status.lock_bytes));
      if (status.state == TxnStatus::State::kLocked) continue;
    } else if (status.state == TxnStatus::State::kRolledBack && !status.has_record) {
      // Neither locked nor decided: its primary is not prewritten yet (its
      // prewrite met a lock and is tried again after the other rows). A
      // younger prewriter leaves the transaction alone while the lock it
      // met is live, as it would a live primary: the older one wins. A
      // wound names the older transaction, as it does on a live lock.
      if (intent == Intent::kCheck) {
        STRATA_ASSIGN_OR_RETURN(bool expired, Expired(lock));
        if (!expired) return Resolution{Resolution::Outcome::kLive, 0};
      }
      STRATA_ASSIGN_OR_RETURN(
          status, RollbackPrimary(*pstore, lock.primary_row, lock.primary_column, lock.start_ts,
                                  intent == Intent::kWound ? ts : 0, std::string()));
      if (status.state == TxnStatus::State::kLocked) continue;
    }
    if (!is_primary) {
      STRATA_ASSIGN_OR_RETURN(std::shared_ptr<RowStore> store, Store(key.table));
      STRATA_RETURN_IF_ERROR(ApplyToKey(*store, key, lock, status));
    }
    if (status.state == TxnStatus::State::kCommitted) {
      return Resolution{Resolution::Outcome::kCommitted, status.commit_ts};
    }
    return Resolution{Resolution::Outcome::kRolledBack, 0};
  }
  return Status::Busy("resolving the lock of transaction " + std::to_string(lock.start_ts) +
                      " on " + key.ToString() + ": its primary kept changing");
}

}  // namespace strata::txn
