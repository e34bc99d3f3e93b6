// Transaction: Commit, in one phase or two: prewrites, the commit
// timestamp, the primary's commit record (the commit point), the
// secondaries'; and undoing prewrites when a commit stops.
#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>

#include "common/coding.h"
#include "txn/transaction.h"

namespace strata::txn {

namespace {

// How often a prewrite is sent again after the store failed it.
constexpr int kMaxStoreRetries = 2;

}  // namespace

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

}  // namespace strata::txn
