// Transaction: buffering, reads and the end of a transaction. Commit, its
// prewrites and commit records are in transaction_commit.cc.
#include "txn/transaction.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>

#include "common/coding.h"
#include "txn/txn_iterator.h"

namespace strata::txn {

namespace {

std::pair<std::string, std::string> Col(std::string_view family, std::string_view column) {
  return {std::string(family), std::string(column)};
}

Status CheckKeyInput(std::string_view table, std::string_view row, std::string_view column) {
  if (table.empty()) return Status::InvalidArgument("empty table name");
  if (row.empty()) return Status::InvalidArgument("empty row key");
  if (column.empty()) return Status::InvalidArgument("empty column name");
  return Status::OK();
}

// The row, column and value a write buffers against the limits of the store
// of its table (the column is the qualifier of every cell the key has), so
// that input no commit could write is refused before anything is buffered.
Status CheckSizes(const RowStore& store, std::string_view table, std::string_view row,
                  std::string_view column, std::string_view value) {
  const RowStoreLimits limits = store.GetLimits();
  auto too_big = [&](const char* what, size_t size, size_t limit) {
    return Status::InvalidArgument(std::string(what) + " is " + std::to_string(size) +
                                   " bytes; the limit of table '" + EscapePrefix(table) + "' is " +
                                   std::to_string(limit));
  };
  if (row.size() > limits.max_row_key_size) {
    return too_big("row key", row.size(), limits.max_row_key_size);
  }
  if (column.size() > limits.max_qualifier_size) {
    return too_big("column name", column.size(), limits.max_qualifier_size);
  }
  if (value.size() > limits.max_value_size) {
    return too_big("value", value.size(), limits.max_value_size);
  }
  return Status::OK();
}

}  // namespace

// ---- Buffering and state ----

TransactionImpl::~TransactionImpl() {
  if (hb_ != nullptr) db_->StopHeartbeat(hb_);
  ReleasePessimisticLocks();
  End();
}

void TransactionImpl::SetState(State state) {
  // A committed transaction ends once its secondaries are committed
  // (CommitSecondaries); its pessimistic locks go at once, its commit being
  // visible.
  if (state_ == State::kOpen && state != State::kOpen) {
    ReleasePessimisticLocks();
    if (state != State::kCommitted) End();
  }
  state_ = state;
}

void TransactionImpl::ReleasePessimisticLocks() {
  if (for_update_ts_.empty()) return;
  std::vector<TxnKey> keys;
  keys.reserve(for_update_ts_.size());
  for (const auto& [key, ts] : for_update_ts_) keys.push_back(key);
  db_->pessimistic_locks()->Release(start_ts_, keys);
  for_update_ts_.clear();
}

void TransactionImpl::End() {
  if (ended_) return;
  ended_ = true;
  db_->TransactionEnded(start_ts_);
}

Result<std::string> TransactionImpl::Get(std::string_view table, std::string_view row,
                                         std::string_view column) {
  STRATA_RETURN_IF_ERROR(CheckOpen());
  STRATA_RETURN_IF_ERROR(CheckKeyInput(table, row, column));
  TxnKey key{std::string(table), std::string(row), std::string(column)};
  auto it = writes_.find(key);
  if (it != writes_.end() && it->second.kind == MutationKind::kPut) return it->second.value;
  if (it != writes_.end() && it->second.kind == MutationKind::kDelete) {
    return Status::NotFound("erased by this transaction: " + key.ToString());
  }
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<RowStore> store, StoreFor(key.table));
  // A key this pessimistic transaction locked reads at its for_update_ts.
  const auto locked = for_update_ts_.find(key);
  STRATA_ASSIGN_OR_RETURN(
      std::optional<std::string> value,
      locked == for_update_ts_.end()
          ? ReadCommitted(*store, key)
          : ReadCommittedAt(*store, key, locked->second, options_.for_update_wait_millis));
  STRATA_RETURN_IF_ERROR(CheckSnapshotHeld());
  if (!value.has_value()) return Status::NotFound("no value at " + key.ToString());
  return std::move(*value);
}

Result<std::vector<std::optional<std::string>>> TransactionImpl::BatchGet(
    std::string_view table, const std::vector<Key>& keys) {
  std::vector<std::optional<std::string>> out;
  out.reserve(keys.size());
  for (const Key& k : keys) {
    Result<std::string> r = Get(table, k.row, k.column);
    if (r.ok()) {
      out.emplace_back(std::move(r).value());
    } else if (r.status().code() == Status::Code::kNotFound &&
               error_.kind == TransactionError::Kind::kNone) {
      out.emplace_back(std::nullopt);
    } else {
      return std::move(r).status();
    }
  }
  return out;
}

Result<std::string> TransactionImpl::GetForUpdate(std::string_view table, std::string_view row,
                                                  std::string_view column) {
  if (pessimistic()) {
    STRATA_RETURN_IF_ERROR(CheckOpen());
    STRATA_RETURN_IF_ERROR(CheckKeyInput(table, row, column));
    TxnKey key{std::string(table), std::string(row), std::string(column)};
    STRATA_RETURN_IF_ERROR(StoreFor(key.table).status());
    STRATA_RETURN_IF_ERROR(LockForUpdate(key));
  }
  Result<std::string> value = Get(table, row, column);
  if (!value.ok() && value.status().code() != Status::Code::kNotFound) return value;
  if (!value.ok() && error_.kind != TransactionError::Kind::kNone) return value;
  TxnKey key{std::string(table), std::string(row), std::string(column)};
  if (writes_.find(key) == writes_.end()) {
    writes_.emplace(std::move(key), PendingWrite{MutationKind::kLock, {}});
  }
  return value;
}

Status TransactionImpl::LockForUpdate(const TxnKey& key) {
  if (for_update_ts_.count(key) != 0) return Status::OK();
  const uint64_t start_nanos = db_->clock()->NowNanos();
  PessimisticLocks::Outcome out =
      db_->pessimistic_locks()->Acquire(key, start_ts_, options_.for_update_wait_millis * 1000);
  if (out.waited) {
    TxnDB::Stats& stats = db_->mutable_stats();
    stats.pessimistic_lock_waits.fetch_add(1, std::memory_order_relaxed);
    stats.pessimistic_lock_wait_latency.AddNanos(db_->clock()->NowNanos() - start_nanos);
  }
  switch (out.kind) {
    case PessimisticLocks::Outcome::Kind::kAcquired:
      break;
    case PessimisticLocks::Outcome::Kind::kDeadlock:
      return Fail(TransactionError::Kind::kDeadlock, &key, out.holder, 0,
                  Status::Aborted("deadlock: " + out.cycle + "; transaction " +
                                  std::to_string(start_ts_) + " gives way"));
    case PessimisticLocks::Outcome::Kind::kTimeout:
      return Fail(TransactionError::Kind::kLockWaitTimeout, &key, out.holder, 0,
                  Status::Aborted("lock wait timeout: " + key.ToString() +
                                  " stayed locked by transaction " + std::to_string(out.holder) +
                                  " for " + std::to_string(options_.for_update_wait_millis) +
                                  " ms (for_update_wait_millis)"));
  }
  for_update_ts_[key] = 0;  // held: let go however the transaction ends
  // Taken with the lock held: every commit of the key by a transaction that
  // held it before is below it.
  Result<uint64_t> ts = db_->config().oracle->GetTimestamp();
  if (!ts.ok()) return Fail(TransactionError::Kind::kStorage, &key, 0, 0, ts.status());
  for_update_ts_[key] = *ts;
  lock_ts_ = std::max(lock_ts_, *ts);
  return Status::OK();
}

Status TransactionImpl::Set(std::string_view table, std::string_view row, std::string_view column,
                            std::string_view value) {
  return Buffer(table, row, column, MutationKind::kPut, value);
}

Status TransactionImpl::Erase(std::string_view table, std::string_view row,
                              std::string_view column) {
  return Buffer(table, row, column, MutationKind::kDelete, {});
}

Status TransactionImpl::SetWeakNotification(std::string_view table, std::string_view row,
                                            std::string_view column) {
  STRATA_RETURN_IF_ERROR(CheckOpen());
  STRATA_RETURN_IF_ERROR(CheckKeyInput(table, row, column));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<RowStore> store, StoreFor(std::string(table)));
  STRATA_RETURN_IF_ERROR(CheckSizes(*store, table, row, column, {}));
  weak_notes_.insert(TxnKey{std::string(table), std::string(row), std::string(column)});
  return Status::OK();
}

Status TransactionImpl::SetTrigger(const TxnKey& trigger) {
  STRATA_RETURN_IF_ERROR(CheckOpen());
  STRATA_RETURN_IF_ERROR(CheckKeyInput(trigger.table, trigger.row, trigger.column));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<RowStore> store, StoreFor(trigger.table));
  STRATA_RETURN_IF_ERROR(CheckSizes(*store, trigger.table, trigger.row, trigger.column, {}));
  if (!writes_.empty() || trigger_.has_value()) {
    return Status::InvalidArgument("a trigger must be set before anything is buffered");
  }
  trigger_ = trigger;
  writes_.emplace(trigger, PendingWrite{MutationKind::kLock, {}});
  return Status::OK();
}

TransactionImpl::Notes TransactionImpl::CollectNotes() const {
  Notes notes;
  for (const auto& [key, w] : writes_) {
    if (w.kind == MutationKind::kLock) continue;
    // An observer's write to its own trigger does not notify again.
    if (trigger_.has_value() && key == *trigger_) continue;
    if (db_->Observed(key.table, key.column)) notes[{key.table, key.row}].insert(key.column);
  }
  for (const TxnKey& key : weak_notes_) notes[{key.table, key.row}].insert(key.column);
  return notes;
}

Status TransactionImpl::WriteNotes(uint64_t commit_ts) {
  WriteOptions wo;
  // Durable before the primary's commit is, which covers them when every
  // table shares one log.
  wo.sync = db_->config().options.sync && !db_->config().single_log;
  for (const auto& [where, columns] : notes_) {
    if (primary_ != nullptr && where.first == primary_->table && where.second == primary_->row) {
      continue;
    }
    STRATA_ASSIGN_OR_RETURN(std::shared_ptr<RowStore> store, StoreFor(where.first));
    RowMutation m;
    for (const std::string& c : columns) m.Put(kNotifyFamily, c, commit_ts, {});
    STRATA_RETURN_IF_ERROR(store->Mutate(wo, where.second, m));
  }
  return Status::OK();
}

void TransactionImpl::AddPrimaryExtras(RowMutation* m) const {
  auto it = notes_.find({primary_->table, primary_->row});
  if (it != notes_.end()) {
    for (const std::string& c : it->second) m->Put(kNotifyFamily, c, commit_ts_, {});
  }
  if (trigger_.has_value()) {
    m->Put(kAckFamily, trigger_->column, start_ts_, {});
    m->DeleteColumn(kNotifyFamily, trigger_->column, start_ts_);
  }
}

Status TransactionImpl::CommitNotesOnly() {
  for (const TxnKey& key : weak_notes_) {
    Status s = StoreFor(key.table).status();
    if (!s.ok()) return s;  // the transaction stays open, as for any store error here
  }
  notes_ = CollectNotes();
  Result<uint64_t> ts = db_->config().oracle->GetTimestamp();
  if (!ts.ok()) {
    SetState(State::kAborted);
    return Fail(TransactionError::Kind::kStorage, nullptr, 0, 0, ts.status());
  }
  commit_ts_ = *ts;
  WriteOptions wo;
  wo.sync = db_->config().options.sync;
  for (const auto& [where, columns] : notes_) {
    Status s = StoreFor(where.first).status();
    RowMutation m;
    for (const std::string& c : columns) m.Put(kNotifyFamily, c, commit_ts_, {});
    if (s.ok()) s = stores_.at(where.first)->Mutate(wo, where.second, m);
    if (!s.ok()) {
      // The notifications written so far stay: a run that finds nothing new
      // is harmless.
      SetState(State::kAborted);
      return Fail(TransactionError::Kind::kStorage, nullptr, 0, 0, s);
    }
  }
  SetState(State::kCommitted);
  End();
  db_->NotificationsWritten();
  return Status::OK();
}

Status TransactionImpl::CleanUpLockKind(const TxnKey& key, const LockRecord& lock) {
  if (!lock_kind_checked_.insert(lock.start_ts).second) return Status::OK();
  return db_->resolver()->Resolve(key, lock, LockResolver::Intent::kCheck, start_ts_).status();
}

Status TransactionImpl::CheckOpen() {
  if (state_ != State::kOpen) {
    return Status::InvalidArgument(
        "the transaction is no longer open (it committed, rolled "
        "back, failed or stopped)");
  }
  if (db_->closed()) return Status::InvalidArgument("the TransactionDB is closed");
  if (start_ts_ < db_->safepoint()) {
    return Fail(TransactionError::Kind::kTooOld, nullptr, 0, 0,
                Status::Aborted("transaction too old: start_ts " + std::to_string(start_ts_) +
                                " is below the GC safepoint " + std::to_string(db_->safepoint())));
  }
  return Status::OK();
}

Status TransactionImpl::CheckSnapshotHeld() {
  if (db_->config().registry->InstanceSurelyAlive()) return Status::OK();
  return Fail(TransactionError::Kind::kCoordinatorDead, nullptr, 0, 0,
              Status::Aborted("this process's liveness lease may have run out: other processes' "
                              "garbage collectors no longer hold back for start_ts " +
                              std::to_string(start_ts_)));
}

Status TransactionImpl::Buffer(std::string_view table, std::string_view row,
                               std::string_view column, MutationKind kind, std::string_view value) {
  STRATA_RETURN_IF_ERROR(CheckOpen());
  STRATA_RETURN_IF_ERROR(CheckKeyInput(table, row, column));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<RowStore> store, StoreFor(std::string(table)));
  STRATA_RETURN_IF_ERROR(CheckSizes(*store, table, row, column, value));
  PendingWrite& w = writes_[TxnKey{std::string(table), std::string(row), std::string(column)}];
  w.kind = kind;
  w.value.assign(value.data(), value.size());
  return Status::OK();
}

Status TransactionImpl::Fail(TransactionError::Kind kind, const TxnKey* key, uint64_t other_start,
                             uint64_t other_commit, Status status) {
  if (error_.kind == TransactionError::Kind::kNone && kind != TransactionError::Kind::kNone) {
    db_->mutable_stats().failed[static_cast<size_t>(kind)].fetch_add(1, std::memory_order_relaxed);
  }
  error_.kind = kind;
  if (key != nullptr) {
    error_.table = key->table;
    error_.row = key->row;
    error_.column = key->column;
  }
  error_.other_start_ts = other_start;
  error_.other_commit_ts = other_commit;
  if (state_ == State::kOpen) SetState(State::kAborted);
  return status;
}

// ---- Reads ----

Result<std::shared_ptr<RowStore>> TransactionImpl::StoreFor(const std::string& table) {
  auto it = stores_.find(table);
  if (it != stores_.end()) return it->second;
  Result<std::shared_ptr<RowStore>> store = db_->config().tables->Resolve(table);
  if (!store.ok()) {
    if (store.status().code() == Status::Code::kNotFound) {
      // The resolver's message may echo the name whole: it is cut too.
      return Status::InvalidArgument("unknown table " + EscapePrefix(table) + ": " +
                                     EscapePrefix(store.status().message(), 256));
    }
    return store.status();
  }
  stores_.emplace(table, *store);
  return std::move(store).value();
}

Result<std::optional<std::string>> TransactionImpl::ValueFromWrite(RowStore& store,
                                                                   const TxnKey& key,
                                                                   uint64_t commit_ts,
                                                                   WriteRecord record) {
  uint64_t ts = commit_ts;
  // Rollback and lock records change no value: look further back.
  while (record.kind == WriteKind::kRollback || record.kind == WriteKind::kLock) {
    if (ts <= kMinTimestamp) return std::optional<std::string>();
    RowFilter filter;
    filter.columns = {Col(kWriteFamily, key.column)};
    filter.max_timestamp = ts - 1;
    filter.max_versions = 16;
    STRATA_ASSIGN_OR_RETURN(std::vector<Cell> cells, store.ReadRow(ReadOptions(), key.row, filter));
    if (cells.empty()) return std::optional<std::string>();
    bool found = false;
    for (const Cell& cell : cells) {
      STRATA_RETURN_IF_ERROR(DecodeWrite(cell.value, &record));
      ts = cell.timestamp;
      if (record.kind == WriteKind::kPut || record.kind == WriteKind::kDelete) {
        found = true;
        break;
      }
    }
    if (!found && cells.size() < filter.max_versions) return std::optional<std::string>();
  }
  if (record.kind == WriteKind::kDelete) return std::optional<std::string>();
  if (record.has_inline_value) return std::optional<std::string>(std::move(record.inline_value));
  RowFilter filter;
  filter.columns = {Col(kDataFamily, key.column)};
  filter.min_timestamp = record.start_ts;
  filter.max_timestamp = record.start_ts;
  STRATA_ASSIGN_OR_RETURN(std::vector<Cell> cells, store.ReadRow(ReadOptions(), key.row, filter));
  if (cells.empty()) {
    return Status::Corruption("the value of " + key.ToString() + " committed at " +
                              std::to_string(ts) + " (start_ts " + std::to_string(record.start_ts) +
                              ") is missing from data");
  }
  return std::optional<std::string>(std::move(cells[0].value));
}

Result<std::optional<std::string>> TransactionImpl::ReadCommitted(RowStore& store,
                                                                  const TxnKey& key) {
  return ReadCommittedAt(store, key, start_ts_, options_.lock_wait_millis);
}

Result<std::optional<std::string>> TransactionImpl::ReadCommittedAt(RowStore& store,
                                                                    const TxnKey& key,
                                                                    uint64_t read_ts,
                                                                    uint64_t wait_millis) {
  // A one-phase commit of the key that this snapshot must see may be
  // between its commit_ts and its write (txn/FORMAT.md, "One-phase commit").
  db_->latches()->WaitForKey(key, read_ts);
  const uint64_t wait_until = db_->resolver()->NowMillis() + wait_millis;
  uint64_t backoff_micros = 500;
  for (int round = 0; round < kMaxRounds; ++round) {
    RowFilter filter;
    filter.columns = {Col(kLockFamily, key.column), Col(kWriteFamily, key.column)};
    filter.max_timestamp = read_ts;
    filter.max_versions = 1;
    STRATA_ASSIGN_OR_RETURN(std::vector<Cell> cells, store.ReadRow(ReadOptions(), key.row, filter));
    const Cell* write = nullptr;
    bool blocked = false;
    for (const Cell& cell : cells) {
      if (cell.family == kWriteFamily) {
        write = &cell;
        continue;
      }
      LockRecord lock;
      STRATA_RETURN_IF_ERROR(DecodeLock(cell.value, &lock));
      if (lock.kind == MutationKind::kLock) {
        STRATA_RETURN_IF_ERROR(CleanUpLockKind(key, lock));
        continue;
      }
      if (!LockBlocksRead(lock, read_ts)) continue;
      if (wait_millis > 0 && db_->resolver()->NowMillis() < wait_until) {
        STRATA_ASSIGN_OR_RETURN(
            LockResolver::Resolution res,
            db_->resolver()->Resolve(key, lock, LockResolver::Intent::kCheck, read_ts));
        if (res.outcome == LockResolver::Resolution::Outcome::kLive) {
          db_->mutable_stats().lock_wait_sleeps.fetch_add(1, std::memory_order_relaxed);
          db_->clock()->SleepMicros(backoff_micros);
          backoff_micros = std::min<uint64_t>(backoff_micros * 2, 50'000);
          // Waiting is bounded by wait_until, not by the rounds: only
          // rounds in which the key changed count.
          --round;
        }
        blocked = true;
        break;
      }
      STRATA_ASSIGN_OR_RETURN(
          LockResolver::Resolution res,
          db_->resolver()->Resolve(key, lock, LockResolver::Intent::kRead, read_ts));
      if (res.outcome == LockResolver::Resolution::Outcome::kPushed) {
        // The writer will commit above read_ts: this read may ignore it.
        uint64_t& above = pushed_[lock.start_ts];
        above = std::max(above, read_ts);
        continue;
      }
      blocked = true;  // rolled forward or back: read the key again
      break;
    }
    if (blocked) continue;
    if (write == nullptr) return std::optional<std::string>();
    WriteRecord record;
    STRATA_RETURN_IF_ERROR(DecodeWrite(write->value, &record));
    if (record.kind != WriteKind::kRollback && lock_floors_.size() < kMaxLockFloors) {
      lock_floors_[key] = write->timestamp;
    }
    return ValueFromWrite(store, key, write->timestamp, std::move(record));
  }
  return Fail(TransactionError::Kind::kKeyLocked, &key, 0, 0,
              Status::Busy("reading " + key.ToString() + ": its lock kept changing"));
}

Status TransactionImpl::Rollback() {
  if (state_ == State::kCommitted) {
    return Status::InvalidArgument("the transaction has committed; it cannot roll back");
  }
  if (state_ != State::kOpen) return Status::OK();
  // The buffered writes stay (unused) until the transaction goes: an open
  // scan iterator walks them.
  SetState(State::kAborted);
  db_->mutable_stats().rolled_back.fetch_add(1, std::memory_order_relaxed);
  return Status::OK();
}

}  // namespace strata::txn

// ---- The public entry points ----

namespace strata {

const char* TransactionErrorKindName(TransactionError::Kind kind) {
  using K = TransactionError::Kind;
  switch (kind) {
    case K::kNone:
      return "none";
    case K::kWriteConflict:
      return "write conflict";
    case K::kKeyLocked:
      return "key locked";
    case K::kAbortedByOlder:
      return "aborted by an older transaction";
    case K::kRolledBack:
      return "rolled back by a lock resolver";
    case K::kTooOld:
      return "transaction too old";
    case K::kCoordinatorDead:
      return "coordinator declared dead";
    case K::kUnknownOutcome:
      return "unknown outcome";
    case K::kStorage:
      return "storage error";
    case K::kDeadlock:
      return "deadlock";
    case K::kLockWaitTimeout:
      return "lock wait timeout";
  }
  return "unknown";
}

}  // namespace strata
