#include "engine/engine_core.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>

#include "common/clock.h"
#include "common/coding.h"
#include "common/thread_util.h"
#include "engine/compaction.h"
#include "engine/conditions.h"
#include "engine/input_checks.h"
#include "engine/point_read.h"
#include "engine/recovery.h"
#include "engine/split.h"
#include "engine/test_hooks.h"
#include "wal/log_reader.h"

namespace strata::engine {

namespace {

constexpr const char* kLockFileName = "LOCK";
constexpr const char* kLogDirName = "wal";
constexpr const char* kTableDirName = "sst";
// The nice value of background threads under BackgroundPriority::kLow.
constexpr int kLowPriorityNice = 19;

}  // namespace

// ---- Open ----

EngineCore::EngineCore(std::string dir, const EngineOptions& options, FileSystem* fs)
    : dir_(std::move(dir)),
      options_(options),
      fs_(fs),
      files_(std::make_unique<LiveFiles>(fs, JoinPath(dir_, kTableDirName),
                                         options.block_cache_size, options.max_open_tables)),
      governor_(options.total_write_buffer_size),
      versions_(std::make_unique<VersionSet>(fs, dir_, options.write_buffer_size, &governor_,
                                             files_.get())) {}

EngineCore::~EngineCore() {
  Close().PermitUncheckedError();  // Engine::Close reports errors
}

Status EngineCore::Open(const std::string& dir, const EngineOptions& options,
                        std::shared_ptr<EngineCore>* result) {
  if (dir.empty()) return Status::InvalidArgument("engine directory path is empty");
  // Checked here, before recovery touches the directory.
  STRATA_RETURN_IF_ERROR(ValidateEngineOptions(options));
  FileSystem* fs = options.file_system != nullptr ? options.file_system : FileSystem::Default();
  std::shared_ptr<EngineCore> core(new EngineCore(dir, options, fs));

  const bool exists = fs->FileExists(JoinPath(dir, Manifest::kFileName));
  if (!exists && !options.create_if_missing) {
    return Status::NotFound(dir + ": no engine here and create_if_missing is off");
  }
  if (exists && options.error_if_exists) {
    return Status::AlreadyExists(dir + ": an engine exists and error_if_exists is on");
  }
  STRATA_RETURN_IF_ERROR(fs->CreateDirIfMissing(dir));
  Status s = fs->LockFile(JoinPath(dir, kLockFileName), &core->lock_);
  if (s.IsBusy()) {
    return Status::Busy(dir + " is already open by another Engine (" + std::string(s.message()) +
                        ")");
  }
  STRATA_RETURN_IF_ERROR(s);
  if (!exists) {
    // A new engine only in a directory with no data of an old one: without
    // its manifest, table files and log segments would read as leftovers
    // and be deleted.
    for (const char* sub : {kTableDirName, kLogDirName}) {
      std::vector<std::string> names;
      if (!fs->GetChildren(JoinPath(dir, sub), &names).ok() || names.empty()) continue;
      return Status::Corruption(dir + ": no " + Manifest::kFileName + ", but " + sub + "/ holds " +
                                std::to_string(names.size()) +
                                " files; refusing to start a new engine over them");
    }
  }
  s = core->Recover();
  if (s.ok()) s = core->ContinueAboveRecordedSequences();
  if (!s.ok()) {
    core->Close().PermitUncheckedError();  // the recovery error is the one to report
    return s;
  }
  core->ChargeRecoveredMemTables();
  core->versions_->RefreshSstableBytes();
  core->UpdateLevel0Count();  // level-0 backpressure from the first write on
  *result = std::move(core);
  return Status::OK();
}

Status EngineCore::Recover() {
  STRATA_RETURN_IF_ERROR(versions_->Recover());
  STRATA_RETURN_IF_ERROR(fs_->CreateDirIfMissing(files_->dir()));
  for (LocalityGroupState* g : versions_->AllGroups()) {
    STRATA_RETURN_IF_ERROR(files_->MakeGroupResidentIfNeeded(*g));
  }

  const std::string log_dir = JoinPath(dir_, kLogDirName);
  SequenceNumber next = 0;
  STRATA_RETURN_IF_ERROR(RecoverTablets(fs_, log_dir, options_.wal_recovery_mode, versions_.get(),
                                        files_.get(), &next));
  // Relaxed: no other thread can see the core yet.
  visible_sequence_.store(next - 1, std::memory_order_relaxed);

  wal::LogOptions lo;
  lo.fs = fs_;
  lo.use_io_uring = options_.use_io_uring;
  lo.apply_before_sync = options_.apply_before_sync;
  lo.segment_size = options_.wal_segment_size;
  lo.recycle_segments = options_.recycle_wal_segments;
  lo.segment_started = [this](uint64_t number) { return versions_->RecordLogSegment(number); };
  STRATA_RETURN_IF_ERROR(wal::LogWriter::Open(
      lo, log_dir, next,
      [this](wal::WriteRequest* const* requests, size_t n) { ApplyGroup(requests, n); }, &log_));
  // Before any record goes into it (ContinueAboveRecordedSequences, writes).
  STRATA_RETURN_IF_ERROR(versions_->RecordLogSegment(log_->first_segment()));
  compaction_limiter_ = std::make_unique<RateLimiter>(options_.compaction_rate_limit);
  flush_thread_ = std::thread([this] { FlushThread(); });
  for (int i = 0; i < options_.max_background_compactions; i++) {
    compaction_threads_.emplace_back([this] { CompactionThread(); });
  }
  if (options_.tablet_split_size > 0) split_thread_ = std::thread([this] { SplitThread(); });
  return Status::OK();
}

Status EngineCore::ContinueAboveRecordedSequences() {
  const SequenceNumber recorded = versions_->last_sequence();
  const SequenceNumber next = log_->next_sequence();
  if (next > recorded) return Status::OK();
  wal::WriteRequest skip;
  skip.payload = SequenceSkipPayload();
  skip.sequence_count = recorded + 1 - next;
  skip.sync = true;
  return log_->Write(&skip);
}

void EngineCore::ChargeRecoveredMemTables() {
  MutexLock apply(&apply_mu_);
  // Tablets stay put: no call can drop a table before Open returns.
  for (LocalityGroupState* g : versions_->AllGroups()) ChargeMemTable(g);
}

// ---- The write path ----

Status EngineCore::AdmitWrite(const TableState& table, uint64_t bytes, bool adds_data,
                              std::shared_lock<SharedGate>* gate) {
  TenantBudget* budget = table.budget.get();
  // The quota comes first: a refused write should not wait before failing.
  if (adds_data) STRATA_RETURN_IF_ERROR(budget->CheckDiskQuota(bytes));
  const uint64_t wait_micros = budget->ReserveWriteBytes(bytes);
  if (wait_micros > 0) {
    budget->CountRateLimitStall(wait_micros);
    // Sleep without the close gate, so a slow tenant holds up neither Close
    // nor drops; then check again what the gate protects.
    gate->unlock();
    Clock::Default()->SleepMicros(wait_micros);
    gate->lock();
    if (closed_) return ClosedError();
    STRATA_RETURN_IF_ERROR(CheckLive(table));
  }
  // The waits for flushes and compactions below let go of the gate too:
  // held, it would keep a drop, alter, split or Close waiting, and every
  // other tenant's calls behind that (the gate lets no reader pass a
  // waiting writer) until this tenant's backlog clears.
  bool released = false;
  STRATA_RETURN_IF_ERROR(WaitToWrite(table, gate, &released));
  STRATA_RETURN_IF_ERROR(WaitForTenantShare(table, gate, &released));
  if (released) {
    if (closed_) return ClosedError();
    STRATA_RETURN_IF_ERROR(CheckLive(table));
  }
  return Status::OK();
}

Status EngineCore::WaitToWrite(const TableState& table, std::shared_lock<SharedGate>* gate,
                               bool* released) {
  if (bg_failed_.load(std::memory_order_relaxed) || versions_->failed()) {
    // Memtables can no longer be flushed, or the manifest's tail is unknown:
    // refuse writes. Everything acknowledged is in the log.
    {
      MutexLock l(&bg_mu_);
      if (!bg_error_.ok()) return bg_error_;
    }
    return versions_->error();
  }
  return WaitForWriteRoom(table, gate, released);
}

Status EngineCore::WaitForWriteRoom(const TableState& table, std::shared_lock<SharedGate>* gate,
                                    bool* released) {
  const TenantBudget& budget = *table.budget;
  // The waits end when the table goes (AdmitWrite then reports it): a
  // dropped table's tenant may never get under the triggers again.
  auto dropped = [&] { return table.dropped.load(std::memory_order_relaxed); };
  const uint64_t files = budget.level0_files();
  // The memtable stop holds the tenants whose memtables are among those
  // waiting: another tenant adds nothing to the flush backlog until its own
  // memtable fills, and then it waits too.
  auto memtables_full = [&] {
    return immutable_memtables_.load(std::memory_order_relaxed) >=
               options_.max_immutable_memtables &&
           budget.immutable_bytes() > 0;
  };
  const bool stop_for_memtables = memtables_full();
  if (files < static_cast<uint64_t>(options_.level0_slowdown_trigger) && !stop_for_memtables) {
    return Status::OK();
  }
  Clock* clock = Clock::Default();
  const uint64_t start = clock->NowNanos();
  GateReleased unlocked(gate, released);
  if (stop_for_memtables) {
    stat_memtable_stops_.fetch_add(1, std::memory_order_relaxed);
    MutexLock l(&bg_mu_);
    while (bg_error_.ok() && !bg_stop_ && !dropped() && memtables_full()) {
      bg_cv_.WaitFor(100 * 1000);
    }
    if (!bg_error_.ok()) return bg_error_;
  }
  if (files >= static_cast<uint64_t>(options_.level0_stop_trigger)) {
    stat_stops_.fetch_add(1, std::memory_order_relaxed);
    MutexLock l(&bg_mu_);
    while (bg_error_.ok() && !bg_stop_ && !dropped() &&
           budget.level0_files() >= static_cast<uint64_t>(options_.level0_stop_trigger)) {
      bg_cv_.WaitFor(100 * 1000);
    }
    if (!bg_error_.ok()) return bg_error_;
  } else if (files >= static_cast<uint64_t>(options_.level0_slowdown_trigger)) {
    stat_slowdowns_.fetch_add(1, std::memory_order_relaxed);
    clock->SleepMicros(1000);
  }
  stat_stall_micros_.fetch_add((clock->NowNanos() - start) / 1000, std::memory_order_relaxed);
  return Status::OK();
}
Status EngineCore::WaitForTenantShare(const TableState& table, std::shared_lock<SharedGate>* gate,
                                      bool* released) {
  TenantBudget* budget = table.budget.get();
  if (!budget->ImmutableOverShare()) return Status::OK();
  Clock* clock = Clock::Default();
  const uint64_t start = clock->NowNanos();
  budget->StartMemtableStall();
  GateReleased unlocked(gate, released);
  {
    // The flush thread signals bg_cv_ after each flush, which is what
    // brings the tenant's immutable bytes down.
    MutexLock l(&bg_mu_);
    while (bg_error_.ok() && !bg_stop_ && !table.dropped.load(std::memory_order_relaxed) &&
           budget->ImmutableOverShare()) {
      bg_cv_.WaitFor(100 * 1000);
    }
    if (!bg_error_.ok()) {
      budget->EndMemtableStall((clock->NowNanos() - start) / 1000);
      return bg_error_;
    }
  }
  budget->EndMemtableStall((clock->NowNanos() - start) / 1000);
  return Status::OK();
}

Status EngineCore::MakePendingRow(const TableState& table, const Schema& schema,
                                  std::string_view row, const RowMutation& mutation,
                                  PendingRow* out) const {
  out->tablet = table.FindTablet(row);
  if (out->tablet == nullptr) {
    return Status::Corruption("table '" + table.name + "' has no tablet for row '" +
                              EscapePrefix(row) + "'");
  }
  out->row = row;
  out->schema = &schema;
  return MutationEntries(table.name, schema, mutation, &out->entries);
}

Status EngineCore::WriteRows(const WriteOptions& options, const PendingRow* rows, size_t count) {
  LogRecordBuilder builder;
  for (size_t i = 0; i < count; i++)
    builder.AddRow(rows[i].tablet->id, rows[i].row, rows[i].entries);
  PendingWrite w{rows, count};
  wal::WriteRequest req;
  req.payload = builder.Finish();
  req.sequence_count = builder.entry_count();
  req.sync = options.sync;
  // Tenants take turns when more writes queue than one group holds.
  req.fairness_key = rows[0].tablet->table->tenant_id;
  req.arg = &w;
  // The log applies and publishes the record before Write returns, so a
  // writer that takes the row's lock after this one releases it reads it.
  return log_->Write(&req);
}

Status EngineCore::Mutate(const TableState& table, const WriteOptions& options,
                          std::string_view row, const RowMutation& mutation) {
  std::shared_lock<SharedGate> gate(close_mu_);
  if (closed_) return ClosedError();
  STRATA_RETURN_IF_ERROR(CheckLive(table));
  std::shared_ptr<const Schema> schema = table.schema();
  STRATA_RETURN_IF_ERROR(ValidateMutation(options_, table.name, *schema, row, mutation));
  const uint64_t bytes = MutationPayloadBytes(row, mutation);
  STRATA_RETURN_IF_ERROR(AdmitWrite(table, bytes, MutationAddsData(mutation), &gate));
  // The admission may have let go of the close gate, and a schema change may
  // have come meanwhile: the write then goes by the new schema. From here
  // to the apply the gate is held, so the schema stays.
  if (std::shared_ptr<const Schema> now = table.schema(); now != schema) {
    schema = std::move(now);
    STRATA_RETURN_IF_ERROR(ValidateMutation(options_, table.name, *schema, row, mutation));
  }
  PendingRow w;
  STRATA_RETURN_IF_ERROR(MakePendingRow(table, *schema, row, mutation, &w));
  // Shared: plain writes of one row may share a group commit; a
  // CheckAndMutate of the row waits for them and they for it.
  SharedRowLock row_lock(&row_locks_, table.id, w.row);
  STRATA_RETURN_IF_ERROR(WriteRows(options, &w, 1));
  table.budget->CountWrites(/*rows=*/1, bytes);
  return Status::OK();
}

// CheckAndMutate and CheckAndMutateBatch: validate every row, take the rows'
// stripes exclusively, read what the conditions look at, evaluate, and log
// the rows whose conditions hold as one record. See "Check and mutate" in
// engine/README.md.
Result<CheckAndMutateResult> EngineCore::CheckAndMutate(const TableState& table,
                                                        const WriteOptions& options,
                                                        std::string_view row,
                                                        const std::vector<Condition>& conditions,
                                                        const RowMutation& mutation) {
  std::shared_lock<SharedGate> gate(close_mu_);
  if (closed_) return ClosedError();
  STRATA_RETURN_IF_ERROR(CheckLive(table));
  std::vector<ConditionalRow> rows{ConditionalRow{row, &conditions, &mutation}};
  std::vector<CheckAndMutateResult> results;
  STRATA_RETURN_IF_ERROR(CheckAndMutateRows(table, options, rows, /*batch=*/false,
                                            /*all_or_nothing=*/false, &gate, &results));
  return std::move(results.front());
}

Result<std::vector<CheckAndMutateResult>> EngineCore::CheckAndMutateBatch(
    const TableState& table, const WriteOptions& options,
    const std::vector<ConditionalMutation>& batch, bool all_or_nothing) {
  std::shared_lock<SharedGate> gate(close_mu_);
  if (closed_) return ClosedError();
  STRATA_RETURN_IF_ERROR(CheckLive(table));
  std::vector<ConditionalRow> rows;
  rows.reserve(batch.size());
  for (const ConditionalMutation& m : batch) {
    rows.push_back(ConditionalRow{m.row, &m.conditions, &m.mutation});
  }
  std::vector<CheckAndMutateResult> results;
  STRATA_RETURN_IF_ERROR(
      CheckAndMutateRows(table, options, rows, /*batch=*/true, all_or_nothing, &gate, &results));
  return results;
}

Status EngineCore::CheckAndMutateRows(const TableState& table, const WriteOptions& options,
                                      const std::vector<ConditionalRow>& rows, bool batch,
                                      bool all_or_nothing, std::shared_lock<SharedGate>* gate,
                                      std::vector<CheckAndMutateResult>* results) {
  results->assign(rows.size(), CheckAndMutateResult());
  if (rows.empty()) return Status::OK();

  // Everything is checked before any lock is taken or anything is written.
  bool writes = false;
  bool adds_data = false;
  std::vector<uint64_t> bytes(rows.size(), 0);
  uint64_t total_bytes = 0;
  std::shared_ptr<const Schema> schema = table.schema();
  STRATA_RETURN_IF_ERROR(ValidateConditionalRows(options_, table.name, *schema, rows, batch));
  for (size_t i = 0; i < rows.size(); i++) {
    const ConditionalRow& r = rows[i];
    if (r.mutation->empty()) continue;
    writes = true;
    adds_data = adds_data || MutationAddsData(*r.mutation);
    bytes[i] = MutationPayloadBytes(r.row, *r.mutation);
    total_bytes += bytes[i];
  }
  if (batch) STRATA_RETURN_IF_ERROR(CheckDistinctRows(rows));
  // Admitted for the bytes every write would add, whether or not its
  // conditions hold: waits must come before the row locks.
  if (writes) STRATA_RETURN_IF_ERROR(AdmitWrite(table, total_bytes, adds_data, gate));
  // Resolved after the admission, which may have let go of the close gate;
  // a schema change that came meanwhile applies (as in Mutate). The gate is
  // held from here on, so the schema stays.
  if (std::shared_ptr<const Schema> now = table.schema(); now != schema) {
    schema = std::move(now);
    STRATA_RETURN_IF_ERROR(ValidateConditionalRows(options_, table.name, *schema, rows, batch));
  }
  std::vector<PendingRow> pending(rows.size());
  for (size_t i = 0; i < rows.size(); i++) {
    if (rows[i].mutation->empty()) continue;
    STRATA_RETURN_IF_ERROR(
        MakePendingRow(table, *schema, rows[i].row, *rows[i].mutation, &pending[i]));
  }

  std::vector<size_t> stripes(rows.size());
  for (size_t i = 0; i < rows.size(); i++) {
    stripes[i] = RowLocks::StripeOf(table.id, rows[i].row);
  }
  ExclusiveRowLocks locks(&row_locks_, std::move(stripes));
  // Every write of these rows that returned is applied and visible (writers
  // hold their stripe until then), and none can start until the locks go.
  for (size_t i = 0; i < rows.size(); i++) {
    const std::vector<Condition>& conditions = *rows[i].conditions;
    if (conditions.empty()) {
      (*results)[i].applied = true;
      continue;
    }
    RowCells cells;
    Status read = ReadRowOpenInto(table, *schema, rows[i].row,
                                  ConditionReadFilter(*schema, conditions), &cells);
    if (!read.ok()) return batch ? read.WithContext("batch entry " + std::to_string(i)) : read;
    // Groups interleave families: cells from several are ordered by family id.
    if (cells.track_families) cells.SortByFamily();
    EvaluateConditions(conditions, cells.cells, &(*results)[i]);
  }
  if (all_or_nothing && std::any_of(results->begin(), results->end(),
                                    [](const CheckAndMutateResult& r) { return !r.applied; })) {
    for (CheckAndMutateResult& r : *results) r.applied = false;
  }

  // One record for every row that applies, grouped by tablet.
  std::vector<PendingRow> apply;
  uint64_t applied_bytes = 0;
  for (size_t i = 0; i < rows.size(); i++) {
    if ((*results)[i].applied && !rows[i].mutation->empty()) {
      apply.push_back(std::move(pending[i]));
      applied_bytes += bytes[i];
    }
  }
  // Nothing to log (every condition failed, or pure checks): with sync,
  // the writes the checks saw are made durable all the same, so that a
  // caller acting on an answer never acts on something a crash could undo.
  if (apply.empty()) return options.sync ? log_->Sync() : Status::OK();
  std::stable_sort(apply.begin(), apply.end(), [](const PendingRow& a, const PendingRow& b) {
    return a.tablet->id < b.tablet->id;
  });
  STRATA_RETURN_IF_ERROR(WriteRows(options, apply.data(), apply.size()));
  table.budget->CountWrites(apply.size(), applied_bytes);
  return Status::OK();
}

void EngineCore::ApplyGroup(wal::WriteRequest* const* requests, size_t n) {
  MutexLock apply(&apply_mu_);
  SequenceNumber last = 0;
  uint64_t cells = 0;
  std::vector<LocalityGroupState*> touched;
  uint64_t rows = 0;
  for (size_t i = 0; i < n; i++) {
    last = requests[i]->first_sequence + requests[i]->sequence_count - 1;
    const auto* w = static_cast<const PendingWrite*>(requests[i]->arg);
    if (w == nullptr) continue;  // a sequence skip: no data
    SequenceNumber seq = requests[i]->first_sequence;
    for (size_t r = 0; r < w->count; r++) {
      const PendingRow& row = w->rows[r];
      InsertEntries(*row.tablet, *row.schema, row.row, row.entries, seq, /*replay=*/false,
                    &touched);
      seq += row.entries.size();
      cells += row.entries.size();
    }
    rows += w->count;
  }
  for (LocalityGroupState* g : touched) {
    ChargeMemTable(g);
    if (g->memtable_charge >= GroupWriteBufferSize(*g, options_.write_buffer_size)) {
      SwitchMemTable(g, last);
    }
  }
  EnforceMemtableShares(touched, last);
  visible_sequence_.store(last, std::memory_order_release);
  stat_writes_.fetch_add(rows, std::memory_order_relaxed);
  stat_cells_.fetch_add(cells, std::memory_order_relaxed);
}

void EngineCore::SwitchMemTable(LocalityGroupState* group, SequenceNumber last_sequence) {
  ChargeMemTable(group);
  const uint64_t charge = group->memtable_charge;
  group->memtable_charge = 0;
  {
    MutexLock l(&group->mu);
    auto view = std::make_shared<GroupView>(*group->view);
    view->imms.insert(view->imms.begin(), ImmutableMemTable{view->mem, last_sequence, charge});
    view->mem = NewGroupMemTable(GroupWriteBufferSize(*group, options_.write_buffer_size));
    group->view = std::move(view);
  }
  memtable_switches_.fetch_add(1, std::memory_order_release);
  group->tablet->table->budget->MemtableSwitched(charge);
  MutexLock l(&bg_mu_);
  flush_queue_.push_back(group);
  immutable_memtables_.fetch_add(1, std::memory_order_relaxed);
  bg_cv_.SignalAll();
}

void EngineCore::EnforceMemtableShares(const std::vector<LocalityGroupState*>& touched,
                                       SequenceNumber last_sequence) {
  std::vector<TenantBudget*> over;
  for (LocalityGroupState* g : touched) {
    TenantBudget* b = g->tablet->table->budget.get();
    if (b->ShouldSwitchMemtable() && std::find(over.begin(), over.end(), b) == over.end()) {
      over.push_back(b);
    }
  }
  for (TenantBudget* b : over) {
    // The writers of this group hold the close gate shared, so no table can
    // be dropped (which takes it exclusively) while these pointers are used.
    const std::vector<LocalityGroupState*> groups = versions_->TenantGroups(b->tenant_id());
    // Each switch empties one active memtable, so this ends.
    while (b->ShouldSwitchMemtable()) {
      LocalityGroupState* largest = nullptr;
      for (LocalityGroupState* g : groups) {
        if (g->memtable_charge > 0 &&
            (largest == nullptr || g->memtable_charge > largest->memtable_charge)) {
          largest = g;
        }
      }
      if (largest == nullptr || largest->current()->mem->num_entries() == 0) break;
      SwitchMemTable(largest, last_sequence);
      b->CountEarlyFlush();
    }
  }
}

// ---- The read path ----

Result<std::vector<Cell>> EngineCore::ReadRow(const TableState& table, const ReadOptions& options,
                                              std::string_view row, const RowFilter& filter) const {
  std::shared_lock<SharedGate> gate(close_mu_);
  if (closed_) return ClosedError();
  STRATA_RETURN_IF_ERROR(CheckLive(table));
  const std::shared_ptr<const Schema> schema = table.schema();
  Result<std::vector<Cell>> cells = ReadRowOpen(table, *schema, row, filter);
  if (cells.ok()) table.budget->CountRowRead();
  return cells;
}

Status EngineCore::ReadRowInto(const TableState& table, const Schema& schema, std::string_view row,
                               const ResolvedFilter& filter, RowSink* sink,
                               bool* stale_schema) const {
  std::shared_lock<SharedGate> gate(close_mu_);
  if (closed_) return ClosedError();
  STRATA_RETURN_IF_ERROR(CheckLive(table));
  STRATA_RETURN_IF_ERROR(ValidateRowKey(options_, row));
  // The gate keeps the schema from changing until the read is done.
  *stale_schema = !table.SchemaIs(&schema);
  if (*stale_schema) return Status::OK();
  STRATA_RETURN_IF_ERROR(ReadRowOpenInto(table, schema, row, filter, sink));
  table.budget->CountRowRead();
  return Status::OK();
}

Result<std::vector<Cell>> EngineCore::ReadRowOpen(const TableState& table, const Schema& schema,
                                                  std::string_view row,
                                                  const RowFilter& filter) const {
  STRATA_RETURN_IF_ERROR(ValidateRowKey(options_, row));
  ResolvedFilter resolved;
  STRATA_RETURN_IF_ERROR(ResolveFilter(table.name, schema, filter, &resolved));
  RowCells out;
  STRATA_RETURN_IF_ERROR(ReadRowOpenInto(table, schema, row, resolved, &out));
  // Groups interleave families: cells from several are ordered by family id.
  if (out.track_families) out.SortByFamily();
  return std::move(out.cells);
}

Status EngineCore::ReadRowOpenInto(const TableState& table, const Schema& schema,
                                   std::string_view row, const ResolvedFilter& filter,
                                   RowSink* sink) const {
  const TabletState* tablet = table.FindTablet(row);
  if (tablet == nullptr) return Status::OK();

  // Only the groups that hold a wanted family are read. Views first, then
  // the snapshot: every file and memtable entry a view holds was visible
  // before the snapshot was read. Most tables have few groups, whose views
  // are held without allocating.
  const size_t num_groups = schema.locality_groups().size();
  std::array<std::shared_ptr<const GroupView>, 4> few_views;
  std::vector<std::shared_ptr<const GroupView>> many_views;
  std::shared_ptr<const GroupView>* views = few_views.data();
  if (num_groups > few_views.size()) {
    many_views.resize(num_groups);
    views = many_views.data();
  }
  size_t groups_read = 0;
  const SequenceNumber snapshot = ViewsThenSnapshot(test_hooks::after_row_read_views, [&] {
    for (size_t g = 0; g < num_groups; g++) views[g].reset();
    groups_read = 0;
    for (const auto& f : schema.families()) {
      if (views[f.locality_group] == nullptr && filter.MayWantFamily(f.id)) {
        views[f.locality_group] = tablet->groups[f.locality_group]->current();
        groups_read++;
      }
    }
  });
  // The row's prefix: every key of the row starts with it.
  char prefix_buf[256];
  std::string prefix_heap;
  const size_t prefix_len = MemcomparableLength(row);
  char* prefix_data = prefix_buf;
  if (prefix_len > sizeof(prefix_buf)) {
    prefix_heap.resize(prefix_len);
    prefix_data = prefix_heap.data();
  }
  EncodeMemcomparable(prefix_data, row);
  const Slice prefix(prefix_data, prefix_len);

  ReadPoint at = ReadPointAt(snapshot);
  sink->BeginRow(groups_read);
  for (size_t g = 0; g < num_groups; g++) {
    if (!views[g]) continue;
    STRATA_RETURN_IF_ERROR(ReadRowFromGroup(*views[g], static_cast<uint32_t>(g),
                                            files_->table_cache(), table.budget->cache_id(), prefix,
                                            &at, filter, schema, sink));
  }
  return AwaitDurableReads(at);
}

ReadPoint EngineCore::ReadPointAt(SequenceNumber snapshot) const {
  ReadPoint at;
  at.snapshot = snapshot;
  if (log_ != nullptr) log_->UndurableSequences(&at.undurable_first, &at.undurable_last);
  return at;
}

Status EngineCore::AwaitDurableReads(const ReadPoint& at) const {
  if (!at.saw_undurable) return Status::OK();
  stat_durable_waits_.fetch_add(1, std::memory_order_relaxed);
  return log_->AwaitDurable(at.undurable_last);
}

Result<std::unique_ptr<RowIterator>> EngineCore::Scan(const std::shared_ptr<TableState>& table,
                                                      const ReadOptions& options,
                                                      const ScanSpec& spec) const {
  std::shared_lock<SharedGate> gate(close_mu_);
  if (closed_) return ClosedError();
  STRATA_RETURN_IF_ERROR(CheckLive(*table));
  if (!spec.end_row.empty() && spec.start_row > spec.end_row) {
    return Status::InvalidArgument("scan's start_row is after its end_row");
  }
  std::shared_ptr<const Schema> schema_ref = table->schema();
  const Schema& schema = *schema_ref;
  ResolvedFilter resolved;
  STRATA_RETURN_IF_ERROR(ResolveFilter(table->name, schema, spec.filter, &resolved));
  std::vector<bool> group_needed(schema.locality_groups().size(), false);
  for (const auto& f : schema.families()) {
    if (resolved.MayWantFamily(f.id)) group_needed[f.locality_group] = true;
  }
  std::string lo, hi;
  if (!spec.start_row.empty()) AppendRowPrefix(&lo, spec.start_row);
  if (!spec.end_row.empty()) AppendRowPrefix(&hi, spec.end_row);
  // Views first, then the snapshot (as in ReadRow).
  std::vector<ScanIterator::GroupInput> inputs;
  std::vector<ScanIterator::TabletPart> parts;
  const SequenceNumber snapshot = ViewsThenSnapshot(test_hooks::after_scan_views, [&] {
    inputs.clear();
    parts.clear();
    for (const auto& tablet : table->tablets) {
      if (!spec.end_row.empty() && !tablet->start_row.empty() &&
          tablet->start_row >= spec.end_row) {
        continue;
      }
      if (!tablet->end_row.empty() && tablet->end_row <= spec.start_row) continue;
      ScanIterator::TabletPart& part = parts.emplace_back();
      part.first_input = inputs.size();
      for (size_t g = 0; g < group_needed.size(); g++) {
        if (group_needed[g]) inputs.push_back({tablet->groups[g]->current(), nullptr});
      }
      part.end_input = inputs.size();
      // The tablet's part of [lo, hi).
      part.lo = RowBound(tablet->start_row);
      part.hi = RowBound(tablet->end_row);
    }
  });
  for (auto& part : parts) {
    if (part.lo < lo) part.lo = lo;
    if (part.hi.empty() || (!hi.empty() && hi < part.hi)) part.hi = hi;
  }
  // A quarter of the cache per scan between seeks (sstable::CacheFillBudget).
  auto fill_budget =
      std::make_shared<sstable::CacheFillBudget>(files_->block_cache()->capacity() / 4);
  // An input's iterator is made when the walk reaches its tablet. Its
  // view was taken before the snapshot, which is what NewRangeIterator
  // asks, and keeps its files on disk until then.
  auto open = [engine = shared_from_this(), owner = table->budget->cache_id(), fill_budget](
                  const ScanIterator::GroupInput& input, const ScanIterator::TabletPart& part,
                  std::unique_ptr<InternalIterator>* it) {
    return engine->files_->NewRangeIterator(*input.view, owner, part.lo, part.hi, fill_budget, it);
  };
  table->budget->CountScan();
  return std::unique_ptr<RowIterator>(new ScanIterator(
      shared_from_this(), table, std::move(schema_ref), std::move(inputs), std::move(parts),
      std::move(open), lo, hi, std::move(resolved), snapshot, std::move(fill_budget)));
}

// ---- Background work ----

void EngineCore::StartBackgroundThread(const char* name) const {
  SetCurrentThreadName(name);
  // Best effort: raising a thread's nice value, or moving it to SCHED_BATCH,
  // needs no privilege.
  if (options_.background_priority == BackgroundPriority::kLow) {
    (void)SetCurrentThreadNice(kLowPriorityNice);
  }
  if (options_.background_priority != BackgroundPriority::kNormal) {
    (void)SetCurrentThreadBatchScheduling();
  }
}

FlushJob::Context EngineCore::FlushContext() {
  FlushJob::Context ctx;
  ctx.fs = fs_;
  ctx.versions = versions_.get();
  ctx.files = files_.get();
  ctx.log = log_.get();
  ctx.visible_sequence = &visible_sequence_;
  ctx.flushes = &stat_flushes_;
  ctx.bytes_written = &stat_flush_bytes_;
  ctx.latency = &flush_latency_;
  ctx.clock = Clock::Default();
  return ctx;
}

CompactionJob::Context EngineCore::CompactionContext() {
  CompactionJob::Context ctx;
  ctx.options = &options_;
  ctx.fs = fs_;
  ctx.versions = versions_.get();
  ctx.files = files_.get();
  ctx.limiter = options_.compaction_rate_limit > 0 ? compaction_limiter_.get() : nullptr;
  ctx.closing = &closing_;
  ctx.compactions = &stat_compactions_;
  ctx.trivial_moves = &stat_trivial_moves_;
  ctx.bytes_read = &stat_compaction_read_;
  ctx.bytes_written = &stat_compaction_written_;
  ctx.latency = &compaction_latency_;
  ctx.clock = Clock::Default();
  return ctx;
}

void EngineCore::AfterBackgroundJob() {
  files_->PurgeObsolete();
  UpdateLevel0Count();
  versions_->RefreshSstableBytes();
}

void EngineCore::UpdateLevel0Count() {
  versions_->RefreshLevel0Files();
  MutexLock l(&bg_mu_);
  bg_cv_.SignalAll();
}

void EngineCore::FlushThread() {
  StartBackgroundThread("strata-flush");
  MutexLock l(&bg_mu_);
  while (!bg_stop_) {
    if (flush_queue_.empty()) {
      bg_cv_.Wait();
      continue;
    }
    LocalityGroupState* group = flush_queue_.front();
    flush_queue_.pop_front();
    flushes_running_++;
    bg_mu_.Unlock();
    Status s = FlushJob(FlushContext(), group).Run();
    AfterBackgroundJob();
    bg_mu_.Lock();
    flushes_running_--;
    immutable_memtables_.fetch_sub(1, std::memory_order_relaxed);
    if (!s.ok() && bg_error_.ok()) {
      bg_error_ = s.WithContext("background flush failed; reopen the engine");
      bg_failed_.store(true, std::memory_order_relaxed);
    }
    bg_cv_.SignalAll();
  }
}

void EngineCore::CompactionThread() {
  StartBackgroundThread("strata-compact");
  MutexLock l(&bg_mu_);
  while (!bg_stop_) {
    Compaction c;
    if (bg_error_.ok() && PickCompaction(versions_->AllGroups(), options_, files_->table_cache(),
                                         manual_compaction_, &c)) {
      compactions_running_++;
      bg_mu_.Unlock();
      Status s = CompactionJob(CompactionContext(), &c).Run();
      bg_mu_.Lock();
      ReleaseInputs(c);
      c = Compaction();  // drop the input references before purging
      compactions_running_--;
      bg_mu_.Unlock();
      AfterBackgroundJob();
      bg_mu_.Lock();
      if (!s.ok() && bg_error_.ok() && !bg_stop_) {
        bg_error_ = s.WithContext("background compaction failed; reopen the engine");
        bg_failed_.store(true, std::memory_order_relaxed);
      }
      bg_cv_.SignalAll();
      continue;
    }
    // A manual compaction is done once nothing is left to pick and nothing
    // picked is still running.
    if (manual_compaction_ && compactions_running_ == 0) {
      manual_compaction_ = false;
      bg_cv_.SignalAll();
    }
    bg_cv_.Wait();
  }
}

void EngineCore::SplitThread() {
  StartBackgroundThread("strata-split");
  // Tablets that could not be split, with their size then: tried again only
  // once they have grown by half.
  std::unordered_map<const TabletState*, uint64_t> stuck;
  MutexLock l(&bg_mu_);
  while (!bg_stop_ && !split_stop_) {
    TabletState* candidate = nullptr;
    uint64_t candidate_bytes = 0;
    if (bg_error_.ok()) {
      bg_mu_.Unlock();
      candidate =
          PickSplitCandidate(*versions_, options_.tablet_split_size, stuck, &candidate_bytes);
      bg_mu_.Lock();
    }
    if (candidate == nullptr || bg_stop_ || split_stop_) {
      if (!bg_stop_ && !split_stop_) bg_cv_.Wait();
      continue;
    }
    bg_mu_.Unlock();
    const uint64_t splits_before = stat_splits_.load(std::memory_order_relaxed);
    Status s = SplitTablet(candidate);
    if (stat_splits_.load(std::memory_order_relaxed) == splits_before) {
      stuck[candidate] = candidate_bytes;
    }
    bg_mu_.Lock();
    if (!s.ok() && bg_error_.ok() && !bg_stop_ && !split_stop_) {
      bg_error_ = s.WithContext("tablet split failed; reopen the engine");
      bg_failed_.store(true, std::memory_order_relaxed);
    }
    bg_cv_.SignalAll();
  }
}

Status EngineCore::FlushTabletMemtables(TabletState* tablet) {
  // Groups an AlterTable adds later are flushed by the second call, which
  // runs with the close gate held exclusively.
  const std::vector<LocalityGroupState*> groups = versions_->GroupsOf(*tablet);
  {
    MutexLock apply(&apply_mu_);
    const SequenceNumber last = visible_sequence_.load(std::memory_order_acquire);
    for (LocalityGroupState* g : groups) {
      if (g->current()->mem->num_entries() > 0) SwitchMemTable(g, last);
    }
  }
  MutexLock l(&bg_mu_);
  while (bg_error_.ok() && !bg_stop_ && !split_stop_) {
    bool pending = false;
    for (const LocalityGroupState* g : groups) pending |= !g->current()->imms.empty();
    if (!pending) return Status::OK();
    bg_cv_.Wait();
  }
  if (!bg_error_.ok()) return bg_error_;
  return Status::Aborted("split stopped: the engine is closing");
}

Status EngineCore::SplitTablet(TabletState* tablet) {
  std::string split_row;
  if (!PickSplitRow(*tablet, versions_->GroupsOf(*tablet), files_->table_cache(), &split_row)) {
    return Status::OK();
  }
  auto done = [](Status s) { return s.IsAborted() ? Status::OK() : s; };
  Status s = FlushTabletMemtables(tablet);
  if (!s.ok()) return done(s);

  std::unique_lock<SharedGate> gate(close_mu_);
  // Relaxed: see TableState::dropped.
  if (closed_ || tablet->table->dropped.load(std::memory_order_relaxed)) return done(Status::OK());
  s = FlushTabletMemtables(tablet);
  if (!s.ok()) return done(s);
  bool split = false;
  s = versions_->SplitTablet(tablet, split_row, &split);
  if (split) stat_splits_.fetch_add(1, std::memory_order_relaxed);
  return done(s);
}

Status EngineCore::Flush() {
  std::shared_lock<SharedGate> gate(close_mu_);
  if (closed_) return ClosedError();
  {
    MutexLock apply(&apply_mu_);
    const SequenceNumber last = visible_sequence_.load(std::memory_order_acquire);
    for (LocalityGroupState* g : versions_->AllGroups()) {
      if (g->current()->mem->num_entries() > 0) SwitchMemTable(g, last);
    }
  }
  // The wait holds no close gate, as in Compact: while some tenant's
  // flushes are stuck, it would keep drops, splits, schema changes and
  // Close waiting, and every call queued behind them. Close ends the wait;
  // the reference keeps the core alive until it has.
  gate.unlock();
  const std::shared_ptr<EngineCore> self = shared_from_this();
  MutexLock l(&bg_mu_);
  while (bg_error_.ok() && !bg_stop_ && (!flush_queue_.empty() || flushes_running_ > 0)) {
    bg_cv_.Wait();
  }
  if (!bg_error_.ok()) return bg_error_;
  return flush_queue_.empty() && flushes_running_ == 0 ? Status::OK() : ClosedError();
}

Status EngineCore::Compact() {
  STRATA_RETURN_IF_ERROR(Flush());
  {
    std::shared_lock<SharedGate> gate(close_mu_);
    if (closed_) return ClosedError();
  }
  // The wait holds no close gate: a manual compaction may take minutes, and
  // a split, drop or schema change (which take the gate exclusively) would
  // wait for all of it, with every read and write queued behind them. Close
  // ends the wait; the reference keeps the core alive until it has.
  const std::shared_ptr<EngineCore> self = shared_from_this();
  MutexLock l(&bg_mu_);
  manual_compaction_ = true;
  bg_cv_.SignalAll();
  while (bg_error_.ok() && manual_compaction_ && !bg_stop_) bg_cv_.Wait();
  if (!bg_error_.ok()) return bg_error_;
  return manual_compaction_ ? ClosedError() : Status::OK();
}

// ---- Stats and close ----

Status EngineCore::CheckUsable(const TableState& table) const {
  std::shared_lock<SharedGate> gate(close_mu_);
  if (closed_) return ClosedError();
  return CheckLive(table);
}

Result<std::vector<TabletStats>> EngineCore::GetTabletStats(const TableState& table) const {
  std::shared_lock<SharedGate> gate(close_mu_);
  if (closed_) return ClosedError();
  STRATA_RETURN_IF_ERROR(CheckLive(table));
  // The gate keeps the tablet list still (a split swaps it exclusively).
  std::vector<TabletStats> out;
  for (const auto& tablet : table.tablets) out.push_back(StatsOf(*tablet));
  return out;
}

EngineStats EngineCore::GetStats() const {
  std::shared_lock<SharedGate> gate(close_mu_);
  EngineStats s;
  s.writes = stat_writes_.load(std::memory_order_relaxed);
  s.cells_written = stat_cells_.load(std::memory_order_relaxed);
  s.last_sequence = visible_sequence_.load(std::memory_order_acquire);
  if (log_ != nullptr) {
    wal::LogWriter::Stats ls = log_->GetStats();
    s.wal_groups = ls.groups;
    s.wal_syncs = ls.syncs;
    s.wal_bytes = ls.bytes;
    s.wal_uses_io_uring = log_->using_io_uring();
    s.log_sync_latency = ls.synced_group_latency;
  }
  s.flush_latency = flush_latency_.Snapshot();
  s.compaction_latency = compaction_latency_.Snapshot();
  s.flushes = stat_flushes_.load(std::memory_order_relaxed);
  s.compactions = stat_compactions_.load(std::memory_order_relaxed);
  s.flush_bytes_written = stat_flush_bytes_.load(std::memory_order_relaxed);
  s.compaction_bytes_read = stat_compaction_read_.load(std::memory_order_relaxed);
  s.compaction_bytes_written = stat_compaction_written_.load(std::memory_order_relaxed);
  s.level_files.assign(kNumLevels, 0);
  s.trivial_moves = stat_trivial_moves_.load(std::memory_order_relaxed);
  s.write_slowdowns = stat_slowdowns_.load(std::memory_order_relaxed);
  s.write_stops = stat_stops_.load(std::memory_order_relaxed);
  s.write_stall_micros = stat_stall_micros_.load(std::memory_order_relaxed);
  s.max_level0_files = versions_->max_level0_files();
  s.memtable_stops = stat_memtable_stops_.load(std::memory_order_relaxed);
  s.durable_read_waits = stat_durable_waits_.load(std::memory_order_relaxed);
  s.tablet_splits = stat_splits_.load(std::memory_order_relaxed);
  s.immutable_memtables = immutable_memtables_.load(std::memory_order_relaxed);
  if (compaction_limiter_ != nullptr) {
    s.compaction_rate_limit_wait_micros = compaction_limiter_->total_wait_micros();
  }
  if (closed_) return s;
  versions_->AddCatalogStats(&s);
  return s;
}

Status EngineCore::Close() {
  {
    MutexLock l(&bg_mu_);
    split_stop_ = true;
    bg_cv_.SignalAll();
  }
  std::call_once(split_join_once_, [this] {
    if (split_thread_.joinable()) split_thread_.join();
  });
  std::unique_lock<SharedGate> gate(close_mu_);
  if (closed_) return Status::OK();
  closed_ = true;
  Status result;
  {
    MutexLock l(&bg_mu_);
    bg_stop_ = true;
    closing_.store(true, std::memory_order_relaxed);
    bg_cv_.SignalAll();
  }
  if (flush_thread_.joinable()) flush_thread_.join();
  for (std::thread& t : compaction_threads_) t.join();
  compaction_threads_.clear();
  if (log_ != nullptr) {
    Status s = log_->Close();
    if (result.ok()) result = s;
  }
  {
    Status s = versions_->Close();
    if (result.ok()) result = s;
  }
  if (lock_ != nullptr) {
    Status s = fs_->UnlockFile(std::move(lock_));
    if (result.ok()) result = s;
  }
  return result;
}

}  // namespace strata::engine
