#include "txn/transaction.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>

#include "common/coding.h"
#include "txn/txn_iterator.h"

namespace strata::txn {

namespace {

// How often a conflict-resolving step may find the key changed again before
// the call gives up (each round means another transaction moved).
constexpr int kMaxRounds = 32;
// How often a prewrite is sent again after the store failed it.
constexpr int kMaxStoreRetries = 2;

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

// ---- Commit ----

LockRecord TransactionImpl::MakeLock(const PendingWrite& w) const {
  LockRecord lock;
  lock.kind = w.kind;
  lock.start_ts = lock_ts_;
  lock.wall_millis = lock_wall_millis_;
  lock.ttl_millis = db_->config().options.lock_ttl_millis;
  lock.min_commit_ts = lock_ts_ + 1;
  if (hb_ != nullptr) lock.owner = hb_->owner;  // none in a one-phase commit
  lock.primary_table = primary_->table;
  lock.primary_row = primary_->row;
  lock.primary_column = primary_->column;
  const uint32_t max_inline = db_->config().options.max_inline_value;
  if (w.kind == MutationKind::kPut && max_inline > 0 && w.value.size() <= max_inline) {
    lock.has_inline_value = true;
    lock.inline_value = w.value;
  }
  return lock;
}

void TransactionImpl::AppendPrewriteConditions(
    const TxnKey& key, const std::vector<std::pair<uint64_t, std::string>>& rollbacks,
    std::vector<Condition>* conditions, std::vector<bool>* about_write) const {
  auto add = [&](Condition c, bool write) {
    conditions->push_back(std::move(c));
    if (about_write != nullptr) about_write->push_back(write);
  };
  // No write record at or after start_ts (for a key locked pessimistically,
  // its for_update_ts: txn/FORMAT.md, "Pessimistic transactions"), except
  // other transactions' rollback records seen before, which must still be
  // exactly there.
  const auto locked = for_update_ts_.find(key);
  uint64_t from = locked == for_update_ts_.end() ? start_ts_ : locked->second;
  for (const auto& [ts, bytes] : rollbacks) {
    if (ts > from) add(Condition::NoCellInRange(kWriteFamily, key.column, from, ts - 1), true);
    add(Condition::ValueEquals(kWriteFamily, key.column, ts, bytes), true);
    from = ts + 1;
  }
  add(Condition::NoCellInRange(kWriteFamily, key.column, from, kMaxTimestamp), true);
  // No lock: none at or above the newest commit record read in the column
  // (lock_floors_), below which every lock is erased.
  const auto floor = lock_floors_.find(key);
  add(Condition::NoCellInRange(kLockFamily, key.column,
                               floor == lock_floors_.end() ? kMinTimestamp : floor->second,
                               kMaxTimestamp),
      false);
}

ConditionalMutation TransactionImpl::PrewriteOf(const RowWrites& rw, PrewriteState* state) const {
  ConditionalMutation cm;
  cm.row = rw.row;
  state->condition_keys.clear();
  std::vector<bool> about_write;
  for (size_t i = 0; i < rw.keys.size(); ++i) {
    if (state->done[i]) continue;
    const TxnKey& key = rw.keys[i]->first;
    const PendingWrite& w = rw.keys[i]->second;
    about_write.clear();
    AppendPrewriteConditions(key, state->rollbacks[i], &cm.conditions, &about_write);
    for (bool write : about_write) state->condition_keys.emplace_back(i, write);
    LockRecord lock = MakeLock(w);
    if (w.kind == MutationKind::kPut && !lock.has_inline_value) {
      cm.mutation.Put(kDataFamily, key.column, lock_ts_, w.value);
    }
    cm.mutation.Put(kLockFamily, key.column, lock_ts_, EncodeLock(lock));
  }
  return cm;
}

RowMutation TransactionImpl::CommitOf(const RowWrites& rw, uint64_t commit_ts) const {
  RowMutation m;
  for (WriteRef ref : rw.keys) AddCommit(&m, ref->first.column, MakeLock(ref->second), commit_ts);
  return m;
}

Status TransactionImpl::HandlePrewriteFailure(const RowWrites& rw,
                                              const CheckAndMutateResult& result,
                                              PrewriteState* state) {
  const std::vector<std::pair<size_t, bool>> condition_keys = state->condition_keys;
  // Write records first: they end the transaction whatever the locks say.
  for (const ConditionFailure& f : result.failures) {
    if (f.index >= condition_keys.size() || !condition_keys[f.index].second) continue;
    const size_t i = condition_keys[f.index].first;
    const TxnKey& key = rw.keys[i]->first;
    for (const Cell& cell : f.cells) {
      WriteRecord record;
      STRATA_RETURN_IF_ERROR(DecodeWrite(cell.value, &record));
      if (record.start_ts == lock_ts_ && record.kind == WriteKind::kRollback) {
        if (record.rolled_back_by != 0) {
          return Fail(
              TransactionError::Kind::kAbortedByOlder, &key, record.rolled_back_by, 0,
              Status::Aborted("aborted by the older transaction " +
                              std::to_string(record.rolled_back_by) + " at " + key.ToString()));
        }
        return Fail(TransactionError::Kind::kRolledBack, &key, 0, 0,
                    Status::Aborted("rolled back by a lock resolver at " + key.ToString() +
                                    " (its lock outlived its TTL or its owner)"));
      }
      if (record.kind == WriteKind::kRollback) {
        // Another transaction's rollback: it changes no value and only keeps
        // that transaction's late prewrite out. Prewrite around it.
        // A record may be rewritten (a victim's own undo after a wound puts
        // rolled_back_by 0 where the wound put the older start_ts): the
        // newest bytes seen at a timestamp replace the older ones.
        auto& seen = state->rollbacks[i];
        auto at = std::find_if(seen.begin(), seen.end(),
                               [&](const auto& r) { return r.first == cell.timestamp; });
        if (at != seen.end()) {
          at->second = cell.value;
        } else {
          seen.emplace_back(cell.timestamp, cell.value);
          std::sort(seen.begin(), seen.end());
        }
        continue;
      }
      return Fail(TransactionError::Kind::kWriteConflict, &key, record.start_ts, cell.timestamp,
                  Status::Aborted("write conflict at " + key.ToString() + ": transaction " +
                                  std::to_string(record.start_ts) + " committed at " +
                                  std::to_string(cell.timestamp) + ", after this transaction's " +
                                  (for_update_ts_.count(key) != 0
                                       ? "for_update_ts " + std::to_string(for_update_ts_.at(key))
                                       : "start_ts " + std::to_string(start_ts_))));
    }
  }
  for (const ConditionFailure& f : result.failures) {
    if (f.index >= condition_keys.size() || condition_keys[f.index].second) continue;
    const size_t i = condition_keys[f.index].first;
    const TxnKey& key = rw.keys[i]->first;
    for (const Cell& cell : f.cells) {
      LockRecord lock;
      STRATA_RETURN_IF_ERROR(DecodeLock(cell.value, &lock));
      if (lock.start_ts == lock_ts_) {
        state->done[i] = true;  // ours, from an earlier attempt
        continue;
      }
      const bool older = lock.start_ts < lock_ts_;
      STRATA_ASSIGN_OR_RETURN(
          LockResolver::Resolution res,
          db_->resolver()->Resolve(
              key, lock, older ? LockResolver::Intent::kCheck : LockResolver::Intent::kWound,
              lock_ts_));
      if (res.outcome == LockResolver::Resolution::Outcome::kLive) {
        // An older transaction is committing: wait for it if the options
        // allow, else give way at once (older transactions win).
        const uint64_t now = db_->resolver()->NowMillis();
        if (state->wait_until == 0) state->wait_until = now + options_.lock_wait_millis;
        if (now < state->wait_until) {
          db_->mutable_stats().lock_wait_sleeps.fetch_add(1, std::memory_order_relaxed);
          db_->clock()->SleepMicros(state->backoff_micros);
          state->backoff_micros = std::min<uint64_t>(state->backoff_micros * 2, 20'000);
          state->waited = true;
          return Status::OK();
        }
        return Fail(TransactionError::Kind::kKeyLocked, &key, lock.start_ts, 0,
                    Status::Aborted("key locked: " + key.ToString() +
                                    " is locked by the older transaction " +
                                    std::to_string(lock.start_ts)));
      }
    }
  }
  return Status::OK();
}

Status TransactionImpl::PrewriteRow(RowStore& store, const RowWrites& rw,
                                    const CheckAndMutateResult* first, PrewriteState* state) {
  WriteOptions wo;
  wo.sync = db_->config().options.sync && !db_->config().single_log;
  CheckAndMutateResult result;
  if (first != nullptr) result = *first;
  int errors = 0;
  // Whether the last round failed knowing that none of its locks was
  // written (not after an unknown outcome, whose retry must find the locks
  // it may have written byte for byte).
  bool known_failure = first != nullptr;
  for (int round = 0; round < kMaxRounds; ++round) {
    if (round > 0 || first == nullptr) {
      // A lock's TTL runs from its wall time: after waiting for an older
      // lock, which may take longer than the TTL, the time is taken anew,
      // so the lock is not written with its TTL spent. Only while no key of
      // the row is done, so that the row's locks carry one time.
      if (known_failure &&
          std::none_of(state->done.begin(), state->done.end(), [](bool d) { return d; })) {
        lock_wall_millis_ = db_->resolver()->NowMillis();
      }
      known_failure = false;
      ConditionalMutation cm = PrewriteOf(rw, state);
      if (cm.mutation.empty()) return Status::OK();
      Result<CheckAndMutateResult> r = store.CheckAndMutate(wo, rw.row, cm.conditions, cm.mutation);
      if (!r.ok()) {
        // The outcome is unknown; a retry finds our own locks if it applied.
        if (++errors <= kMaxStoreRetries && r.status().code() != Status::Code::kInvalidArgument) {
          continue;
        }
        return Fail(TransactionError::Kind::kStorage, &rw.keys[0]->first, 0, 0, r.status());
      }
      result = std::move(r).value();
    }
    if (result.applied) return Status::OK();
    STRATA_RETURN_IF_ERROR(HandlePrewriteFailure(rw, result, state));
    known_failure = true;
    if (state->waited) {
      state->waited = false;
      --round;
    }
    if (std::all_of(state->done.begin(), state->done.end(), [](bool d) { return d; })) {
      return Status::OK();
    }
  }
  return Fail(TransactionError::Kind::kKeyLocked, &rw.keys[0]->first, 0, 0,
              Status::Busy("prewriting row of " + rw.keys[0]->first.ToString() +
                           ": its locks kept changing"));
}

Status TransactionImpl::WritePrimaryCommit(RowStore& store, const RowWrites& rw) {
  WriteOptions wo;
  wo.sync = db_->config().options.sync;
  const TxnKey& pk = *primary_;
  for (int round = 0; round < kMaxRounds; ++round) {
    std::string expected;
    uint64_t min_commit_ts = 0;
    {
      MutexLock l(&hb_->mu);
      expected = hb_->primary_lock_bytes;
      min_commit_ts = hb_->primary_lock.min_commit_ts;
    }
    // The lock we commit against may carry a reader's push, taken over by
    // the heartbeat or by the previous round: commit above it.
    while (commit_ts_ < min_commit_ts) {
      Result<uint64_t> ts = db_->config().oracle->GetTimestamp();
      if (!ts.ok()) return Fail(TransactionError::Kind::kStorage, &pk, 0, 0, ts.status());
      commit_ts_ = *ts;
    }
    // The other rows' notifications first, at the commit_ts the commit
    // will have: once committed, a transaction has notified (txn/FORMAT.md,
    // "Notifications").
    if (notes_written_ts_ != commit_ts_ &&
        !(notes_.empty() || (notes_.size() == 1 && notes_.begin()->first.first == pk.table &&
                             notes_.begin()->first.second == pk.row))) {
      Status s = WriteNotes(commit_ts_);
      if (!s.ok()) return Fail(TransactionError::Kind::kStorage, &pk, 0, 0, s);
      notes_written_ts_ = commit_ts_;
    }
    RowMutation commit = CommitOf(rw, commit_ts_);
    AddPrimaryExtras(&commit);
    Result<CheckAndMutateResult> r = store.CheckAndMutate(
        wo, pk.row, {Condition::ValueEquals(kLockFamily, pk.column, lock_ts_, expected)}, commit);
    if (r.ok() && r->applied) return Status::OK();
    // Not applied, or the outcome is unknown: the primary says what happened.
    Result<TxnStatus> status = ReadTxnStatus(store, pk.row, pk.column, lock_ts_);
    if (!status.ok()) {
      return Fail(TransactionError::Kind::kUnknownOutcome, &pk, 0, 0,
                  r.ok() ? status.status() : r.status());
    }
    if (status->state == TxnStatus::State::kCommitted) {
      commit_ts_ = status->commit_ts;
      return Status::OK();
    }
    if (status->state == TxnStatus::State::kRolledBack) {
      const uint64_t by = status->record.rolled_back_by;
      return Fail(
          by != 0 ? TransactionError::Kind::kAbortedByOlder : TransactionError::Kind::kRolledBack,
          &pk, by, 0,
          Status::Aborted(by != 0 ? "aborted by the older transaction " + std::to_string(by) +
                                        " before commit"
                                  : "rolled back by a lock resolver before commit (the "
                                    "lock outlived its TTL or its owner)"));
    }
    if (!r.ok()) {
      return Fail(TransactionError::Kind::kUnknownOutcome, &pk, 0, 0, r.status());
    }
    // Still locked by us: a reader pushed min_commit_ts or the heartbeat
    // refreshed the TTL.
    {
      MutexLock l(&hb_->mu);
      hb_->primary_lock = status->lock;
      hb_->primary_lock_bytes = status->lock_bytes;
    }
  }
  return Fail(TransactionError::Kind::kKeyLocked, &pk, 0, 0,
              Status::Busy("committing the primary " + pk.ToString() + ": it kept changing"));
}

void TransactionImpl::UndoPrewrites() {
  WriteOptions wo;
  wo.sync = false;
  if (primary_prewritten_) {
    std::string expected;
    {
      MutexLock l(&hb_->mu);
      expected = hb_->primary_lock_bytes;
    }
    for (int round = 0; round < kMaxRounds; ++round) {
      Result<TxnStatus> s = db_->resolver()->RollbackPrimary(
          *primary_store_, primary_->row, primary_->column, lock_ts_, 0, expected);
      if (!s.ok() || s->state != TxnStatus::State::kLocked) break;
      expected = s->lock_bytes;
    }
  }
  // The other prewritten keys follow the primary; undoing them now only
  // saves readers the trip to it. That includes the primary row's other
  // keys, prewritten with it.
  if (primary_row_ != nullptr && primary_row_->keys.size() > 1) {
    RowMutation m;
    for (WriteRef ref : primary_row_->keys) {
      if (&ref->first != primary_) AddRollback(&m, ref->first.column, lock_ts_, 0);
    }
    (void)primary_store_->Mutate(wo, primary_row_->row, m);
  }
  for (auto& [store, rw] : prewritten_) {
    RowMutation m;
    for (WriteRef ref : rw->keys) AddRollback(&m, ref->first.column, lock_ts_, 0);
    (void)store->Mutate(wo, rw->row, m);
  }
}

void TransactionImpl::Finish(State state) {
  SetState(state);
  if (hb_ == nullptr) return;
  db_->StopHeartbeat(hb_);
  if (hb_->owner.instance_id != 0) (void)db_->config().registry->Unregister(hb_->owner);
}

Status TransactionImpl::StopAt(FailPoint point) {
  error_.kind = TransactionError::Kind::kStorage;
  Finish(State::kStopped);  // the owner dies with the coordinator
  return Status::Aborted(std::string("stopped at fail point ") + FailPointName(point));
}

Status TransactionImpl::Commit() {
  if (state_ == State::kCommitted) return Status::OK();
  const bool writes = !writes_.empty() || !weak_notes_.empty();
  const uint64_t start_nanos = db_->clock()->NowNanos();
  Status s = CommitSteps();
  if (s.ok()) {
    TxnDB::Stats& stats = db_->mutable_stats();
    if (writes) {
      // A one-phase commit counted itself (CommitOnePhase).
      if (!committed_in_one_phase_) stats.two_phase_commits.fetch_add(1, std::memory_order_relaxed);
      stats.commit_latency.AddNanos(db_->clock()->NowNanos() - start_nanos);
    } else {
      stats.read_only_commits.fetch_add(1, std::memory_order_relaxed);
    }
  }
  return s;
}

Status TransactionImpl::CommitSteps() {
  STRATA_RETURN_IF_ERROR(CheckOpen());
  if (writes_.empty()) {
    if (!weak_notes_.empty()) return CommitNotesOnly();
    commit_ts_ = start_ts_;
    SetState(State::kCommitted);
    End();
    return Status::OK();
  }
  // The rows outlive every step: primary_row_ and prewritten_ point into them.
  const std::vector<TableWrites> tables = GroupWrites();
  notes_ = CollectNotes();
  STRATA_ASSIGN_OR_RETURN(bool committed, CommitOnePhase(tables));
  if (committed) return Status::OK();
  STRATA_RETURN_IF_ERROR(StartCommit(tables));
  size_t next_row = 0;
  STRATA_RETURN_IF_ERROR(PrewritePrimary(tables, &next_row));     // 1.
  STRATA_RETURN_IF_ERROR(PrewriteSecondaries(tables, next_row));  // 2.
  STRATA_RETURN_IF_ERROR(TakeCommitTs());                         // 3.
  STRATA_RETURN_IF_ERROR(CheckMayCommit());
  STRATA_RETURN_IF_ERROR(CommitPrimary(tables[0].rows[0]));  // 4. The commit point.
  return CommitSecondaries(tables);                          // 5.
}

Result<bool> TransactionImpl::CommitOnePhase(const std::vector<TableWrites>& tables) {
  if (!db_->config().options.one_phase_commit || tables.size() != 1) return false;
  const std::string& table = tables[0].table;
  size_t rows = tables[0].rows.size();
  for (const auto& [where, columns] : notes_) {
    if (where.first != table) return false;
    rows++;  // at most: a row may carry writes and notes
  }
  if (rows > MaxBatchRows()) return false;
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<RowStore> store, StoreFor(table));
  if (start_ts_ < db_->safepoint()) {
    SetState(State::kAborted);
    return Fail(TransactionError::Kind::kTooOld, primary_, 0, 0,
                Status::Aborted("transaction too old: start_ts " + std::to_string(start_ts_) +
                                " fell below the GC safepoint"));
  }
  std::vector<TxnKey> keys;
  keys.reserve(writes_.size());
  for (const auto& [key, w] : writes_) keys.push_back(key);
  Latches* latches = db_->latches();
  if (!latches->TryAcquire(keys)) return false;
  struct Releaser {
    Latches* latches;
    const std::vector<TxnKey>& keys;
    ~Releaser() { latches->Release(keys); }
  } releaser{latches, keys};

  // commit_ts after the latches: a reader that got its start_ts later finds
  // them and waits.
  Result<uint64_t> ts = db_->config().oracle->GetTimestamp();
  if (!ts.ok()) {
    SetState(State::kAborted);
    return Fail(TransactionError::Kind::kStorage, nullptr, 0, 0, ts.status());
  }
  commit_ts_ = *ts;
  latches->SetCommitTs(keys, commit_ts_);

  // Each row: the prewrite's conditions, then its data and commit records
  // at once; then the notifications, and the primary's extras.
  std::vector<ConditionalMutation> batch;
  std::map<std::string, size_t, std::less<>> index;
  for (const RowWrites& rw : tables[0].rows) {
    ConditionalMutation cm;
    cm.row = rw.row;
    for (WriteRef ref : rw.keys) {
      const TxnKey& key = ref->first;
      const PendingWrite& w = ref->second;
      AppendPrewriteConditions(key, {}, &cm.conditions, nullptr);
      // What a prewrite would lock, committed at once.
      const LockRecord lock = MakeLock(w);
      if (w.kind == MutationKind::kPut && !lock.has_inline_value) {
        cm.mutation.Put(kDataFamily, key.column, lock_ts_, w.value);
      }
      cm.mutation.Put(kWriteFamily, key.column, commit_ts_, EncodeWrite(CommitRecordFor(lock)));
    }
    index.emplace(rw.row, batch.size());
    batch.push_back(std::move(cm));
  }
  for (const auto& [where, columns] : notes_) {
    auto it = index.find(where.second);
    if (it == index.end()) {
      it = index.emplace(where.second, batch.size()).first;
      batch.push_back(ConditionalMutation{where.second, {}, RowMutation()});
    }
    if (where.second == primary_->row) continue;  // AddPrimaryExtras writes them
    for (const std::string& c : columns)
      batch[it->second].mutation.Put(kNotifyFamily, c, commit_ts_, {});
  }
  AddPrimaryExtras(&batch[index.at(primary_->row)].mutation);

  WriteOptions wo;
  wo.sync = db_->config().options.sync;
  Result<std::vector<CheckAndMutateResult>> r = store->CheckAndMutateAll(wo, batch);
  if (r.status().IsNotSupported()) return false;
  if (!r.ok()) {
    SetState(State::kAborted);
    return Fail(r.status().IsInvalidArgument() ? TransactionError::Kind::kStorage
                                               : TransactionError::Kind::kUnknownOutcome,
                primary_, 0, 0, r.status());
  }
  for (const CheckAndMutateResult& one : *r) {
    if (!one.applied) return false;  // a lock or a conflict: the two phases say which
  }
  SetState(State::kCommitted);
  End();
  committed_in_one_phase_ = true;
  db_->CountOnePhaseCommit();
  if (!notes_.empty()) db_->NotificationsWritten();
  return true;
}

std::vector<TableWrites> TransactionImpl::GroupWrites() {
  // Group the keys by table and row; the primary is the first key, or an
  // observer's trigger.
  primary_ = trigger_.has_value() ? &writes_.find(*trigger_)->first : &writes_.begin()->first;
  std::vector<TableWrites> tables;
  for (WriteRef it = writes_.begin(); it != writes_.end(); ++it) {
    if (tables.empty() || tables.back().table != it->first.table) {
      tables.push_back(TableWrites{it->first.table, {}});
    }
    std::vector<RowWrites>& rows = tables.back().rows;
    if (rows.empty() || rows.back().row != it->first.row)
      rows.push_back(RowWrites{it->first.row, {}});
    rows.back().keys.push_back(it);
  }
  if (trigger_.has_value()) {
    // The primary's table first, and its row first in it.
    auto t = std::find_if(tables.begin(), tables.end(),
                          [&](const TableWrites& tw) { return tw.table == primary_->table; });
    std::rotate(tables.begin(), t, t + 1);
    std::vector<RowWrites>& rows = tables.front().rows;
    auto r = std::find_if(rows.begin(), rows.end(),
                          [&](const RowWrites& rw) { return rw.row == primary_->row; });
    std::rotate(rows.begin(), r, r + 1);
  }
  return tables;
}

Status TransactionImpl::StartCommit(const std::vector<TableWrites>& tables) {
  // Every store first: past this point only Finish ends the commit.
  for (const TableWrites& tw : tables) STRATA_RETURN_IF_ERROR(StoreFor(tw.table).status());
  primary_store_ = stores_.at(primary_->table);

  Result<Owner> owner = db_->config().registry->Register();
  if (!owner.ok()) return Fail(TransactionError::Kind::kStorage, nullptr, 0, 0, owner.status());
  hb_ = std::make_shared<HeartbeatState>();
  hb_->owner = *owner;
  hb_->primary = *primary_;
  lock_wall_millis_ = db_->resolver()->NowMillis();
  // The owner is kept alive from now on, and the primary's lock from the
  // moment it is written: a prewrite may wait for older locks long before
  // the first batch is done.
  db_->StartHeartbeat(hb_);
  return Status::OK();
}

Status TransactionImpl::PrewritePrimary(const std::vector<TableWrites>& tables, size_t* next_row) {
  const std::shared_ptr<RowStore> store = stores_.at(tables[0].table);  // resolved in StartCommit
  const std::vector<RowWrites>& rows = tables[0].rows;
  size_t end = std::min(rows.size(), MaxBatchRows());
  if (db_->config().options.prewrite_primary_alone) end = 1;
  STRATA_RETURN_IF_ERROR(PrewriteBatch(store, rows, 0, end, /*with_primary=*/true));
  *next_row = end;
  if (db_->FailPointHit(FailPoint::kAfterPrimaryPrewrite, start_ts_)) {
    return StopAt(FailPoint::kAfterPrimaryPrewrite);
  }
  return Status::OK();
}

Status TransactionImpl::PrewriteSecondaries(const std::vector<TableWrites>& tables,
                                            size_t next_row) {
  for (size_t t = 0; t < tables.size(); ++t) {
    const std::shared_ptr<RowStore> store = stores_.at(tables[t].table);  // resolved above
    const std::vector<RowWrites>& rows = tables[t].rows;
    for (size_t begin = t == 0 ? next_row : 0; begin < rows.size();) {
      const size_t end = std::min(rows.size(), begin + MaxBatchRows());
      STRATA_RETURN_IF_ERROR(PrewriteBatch(store, rows, begin, end, /*with_primary=*/false));
      begin = end;
      if (db_->FailPointHit(FailPoint::kAfterSecondaryBatch, start_ts_)) {
        return StopAt(FailPoint::kAfterSecondaryBatch);
      }
    }
  }
  return Status::OK();
}

size_t TransactionImpl::MaxBatchRows() const {
  return std::max<uint32_t>(1, db_->config().options.max_batch_rows);
}

Status TransactionImpl::PrewriteBatch(const std::shared_ptr<RowStore>& store,
                                      const std::vector<RowWrites>& rows, size_t begin, size_t end,
                                      bool with_primary) {
  WriteOptions wo;
  wo.sync = db_->config().options.sync && !db_->config().single_log;
  std::vector<ConditionalMutation> batch;
  std::vector<PrewriteState> states;
  states.reserve(end - begin);
  for (size_t i = begin; i < end; ++i) {
    states.emplace_back(rows[i].keys.size());
    batch.push_back(PrewriteOf(rows[i], &states.back()));
  }
  // One row goes alone (PrewriteRow); more go as one batch.
  Result<std::vector<CheckAndMutateResult>> results = std::vector<CheckAndMutateResult>();
  if (end - begin > 1) results = store->CheckAndMutateBatch(wo, batch);
  const bool have_results = results.ok() && results->size() == end - begin;
  auto prewritten = [&](size_t i) {
    if (with_primary && i == 0) {
      primary_prewritten_ = true;
      primary_row_ = &rows[i];
      MutexLock l(&hb_->mu);
      hb_->prewritten = true;
      hb_->primary_lock = MakeLock(writes_.find(*primary_)->second);
      hb_->primary_lock_bytes = EncodeLock(hb_->primary_lock);
    } else {
      prewritten_.emplace_back(store, &rows[i]);
    }
  };
  // What applied first, so that an abort below undoes all of it.
  for (size_t i = begin; have_results && i < end; ++i) {
    if ((*results)[i - begin].applied) prewritten(i);
  }
  Status s;
  if (!results.ok() && results.status().code() == Status::Code::kInvalidArgument) {
    s = Fail(TransactionError::Kind::kStorage, &rows[begin].keys[0]->first, 0, 0, results.status());
  }
  // Rows that met a conflict, or a failed batch, go again row by row.
  for (size_t i = begin; i < end && s.ok(); ++i) {
    const CheckAndMutateResult* first = have_results ? &(*results)[i - begin] : nullptr;
    if (first != nullptr && first->applied) continue;
    s = PrewriteRow(*store, rows[i], first, &states[i - begin]);
    if (s.ok()) {
      prewritten(i);
    } else if (error_.kind == TransactionError::Kind::kNone) {
      // Resolving a lock on the way failed (a store error, or a lock
      // that kept changing): say so in error() too.
      s = Fail(s.IsBusy() ? TransactionError::Kind::kKeyLocked : TransactionError::Kind::kStorage,
               &rows[i].keys[0]->first, 0, 0, s);
    }
  }
  if (!s.ok()) {
    UndoPrewrites();
    Finish(State::kAborted);
    return s;
  }
  return Status::OK();
}

Status TransactionImpl::TakeCommitTs() {
  Result<uint64_t> ts = db_->config().oracle->GetTimestamp();
  if (!ts.ok()) {
    UndoPrewrites();
    Finish(State::kAborted);
    return Fail(TransactionError::Kind::kStorage, nullptr, 0, 0, ts.status());
  }
  commit_ts_ = *ts;
  if (db_->FailPointHit(FailPoint::kAfterCommitTs, start_ts_)) {
    return StopAt(FailPoint::kAfterCommitTs);
  }
  return Status::OK();
}

Status TransactionImpl::CheckMayCommit() {
  Status s;
  {
    MutexLock l(&hb_->mu);
    hb_->finished = true;  // no more heartbeats: they would only race the commit
    // One more heartbeat, now: the registry may have declared the owner dead
    // since the heartbeat thread last looked (a registry on a lease that
    // could not be renewed), and a commit must not start after that.
    if (!hb_->owner_dead && !db_->config().registry->Heartbeat(hb_->owner).ok()) {
      hb_->owner_dead = true;
    }
    if (hb_->owner_dead) {
      s = Fail(TransactionError::Kind::kCoordinatorDead, primary_, 0, 0,
               Status::Aborted("the liveness registry declared this coordinator dead; its "
                               "locks may have been rolled back"));
    }
  }
  if (s.ok() && start_ts_ < db_->safepoint()) {
    s = Fail(TransactionError::Kind::kTooOld, primary_, 0, 0,
             Status::Aborted("transaction too old: start_ts " + std::to_string(start_ts_) +
                             " fell below the GC safepoint"));
  }
  if (!s.ok()) {
    UndoPrewrites();
    Finish(State::kAborted);
    return s;
  }
  return Status::OK();
}

Status TransactionImpl::CommitPrimary(const RowWrites& primary_row) {
  Status s = WritePrimaryCommit(*primary_store_, primary_row);
  if (!s.ok()) {
    if (error_.kind != TransactionError::Kind::kUnknownOutcome) UndoPrewrites();
    Finish(State::kAborted);
    return s;
  }
  if (db_->FailPointHit(FailPoint::kAfterPrimaryCommit, start_ts_)) {
    return StopAt(FailPoint::kAfterPrimaryCommit);
  }
  Finish(State::kCommitted);
  if (!notes_.empty()) db_->NotificationsWritten();
  return Status::OK();
}

Status TransactionImpl::CommitSecondaries(const std::vector<TableWrites>& tables) {
  TxnDB::SecondaryJob job;
  job.start_ts = start_ts_;
  job.commit_ts = commit_ts_;
  for (size_t t = 0; t < tables.size(); ++t) {
    std::vector<ConditionalMutation> rows;
    for (size_t i = (t == 0 ? 1 : 0); i < tables[t].rows.size(); ++i) {
      rows.push_back(
          ConditionalMutation{tables[t].rows[i].row, {}, CommitOf(tables[t].rows[i], commit_ts_)});
    }
    if (!rows.empty()) job.tables.emplace_back(tables[t].table, std::move(rows));
  }
  if (job.tables.empty()) {
    End();
    return Status::OK();
  }
  if (db_->config().options.commit_secondaries_in_background) {
    // The background thread ends the transaction once the rows are committed.
    ended_ = true;
    db_->EnqueueSecondaries(std::move(job));
    return Status::OK();
  }
  Status secondary_status;
  const bool done = db_->CommitSecondaries(job, &secondary_status);
  End();
  if (!done) {
    SetState(State::kStopped);
    return Status::Aborted(std::string("stopped at fail point ") +
                           FailPointName(FailPoint::kAfterSecondaryCommit));
  }
  // A secondary that failed to commit is rolled forward by its next reader;
  // the transaction is committed either way.
  return Status::OK();
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
