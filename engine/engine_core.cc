#include "engine/engine_core.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <mutex>
#include <set>

#include "common/clock.h"
#include "common/coding.h"
#include "common/thread_util.h"
#include "engine/clamped_iterator.h"
#include "engine/log_record.h"
#include "engine/merging_iterator.h"
#include "engine/point_read.h"
#include "engine/test_hooks.h"
#include "sstable/table_builder.h"
#include "wal/log_format.h"
#include "wal/log_reader.h"

namespace strata::engine {

namespace {

constexpr const char* kLockFileName = "LOCK";
constexpr const char* kLogDirName = "wal";
constexpr const char* kTableDirName = "sst";
// The most EngineOptions::max_row_key_size, max_qualifier_size and
// max_value_size may allow: lengths are stored in 32 bits, and a write must
// fit with room to spare.
constexpr size_t kMaxWriteLimit = size_t{1} << 30;

wal::RecoveryMode ToWalMode(WalRecoveryMode m) {
  switch (m) {
    case WalRecoveryMode::kTolerateTornTail: return wal::RecoveryMode::kTolerateTornTail;
    case WalRecoveryMode::kAbsoluteConsistency: return wal::RecoveryMode::kAbsoluteConsistency;
    case WalRecoveryMode::kPointInTime: return wal::RecoveryMode::kPointInTime;
  }
  return wal::RecoveryMode::kTolerateTornTail;
}

CellType ToCellType(RowMutation::Kind kind) {
  switch (kind) {
    case RowMutation::Kind::kPut: return CellType::kPut;
    case RowMutation::Kind::kDeleteCell: return CellType::kDeleteCell;
    case RowMutation::Kind::kDeleteColumn: return CellType::kDeleteColumn;
    case RowMutation::Kind::kDeleteRow: return CellType::kDeleteRow;
  }
  return CellType::kPut;
}

bool RowInRange(const Slice& row, const std::string& start, const std::string& end) {
  return (start.empty() || row.compare(start) >= 0) && (end.empty() || row.compare(end) < 0);
}

// The smallest cell key of `row` (empty for an empty row: unbounded).
std::string RowBound(const std::string& row) {
  std::string key;
  if (!row.empty()) AppendRowPrefix(&key, row);
  return key;
}

}  // namespace

std::shared_ptr<memtable::MemTable> NewGroupMemTable(uint64_t write_buffer_size) {
  return std::make_shared<memtable::MemTable>(static_cast<size_t>(write_buffer_size / 64));
}

std::unique_ptr<LocalityGroupState> NewGroupState(TabletState* tablet, uint32_t index,
                                                  const LocalityGroupOptions& options,
                                                  uint64_t engine_write_buffer_size) {
  auto group = std::make_unique<LocalityGroupState>();
  group->index = index;
  group->tablet = tablet;
  group->write_buffer_size.store(options.write_buffer_size, std::memory_order_relaxed);
  auto view = std::make_shared<GroupView>();
  view->mem = NewGroupMemTable(GroupWriteBufferSize(*group, engine_write_buffer_size));
  view->levels.resize(kNumLevels);
  MutexLock l(&group->mu);
  group->view = std::move(view);
  group->resident = options.in_memory;
  return group;
}

TabletState* TableState::FindTablet(const Slice& row) const {
  // Tablets are sorted by start_row and cover the whole key space.
  auto it = std::upper_bound(tablets.begin(), tablets.end(), row,
                             [](const Slice& r, const std::unique_ptr<TabletState>& t) {
                               return r.compare(t->start_row) < 0;
                             });
  if (it == tablets.begin()) return nullptr;
  TabletState* t = std::prev(it)->get();
  return RowInRange(row, t->start_row, t->end_row) ? t : nullptr;
}

EngineCore::EngineCore(std::string dir, const EngineOptions& options, FileSystem* fs)
    : dir_(std::move(dir)),
      options_(options),
      fs_(fs),
      governor_(options.total_write_buffer_size) {}

EngineCore::~EngineCore() { Close().PermitUncheckedError();  // Engine::Close reports errors
}

Status EngineCore::Open(const std::string& dir, const EngineOptions& options,
                        std::shared_ptr<EngineCore>* result) {
  if (dir.empty()) return Status::InvalidArgument("engine directory path is empty");
  if (options.level0_compaction_trigger < 1 ||
      options.level0_slowdown_trigger <= options.level0_compaction_trigger ||
      options.level0_stop_trigger < options.level0_slowdown_trigger) {
    return Status::InvalidArgument(
        "level-0 triggers must satisfy 1 <= compaction < slowdown <= stop (got " +
        std::to_string(options.level0_compaction_trigger) + ", " +
        std::to_string(options.level0_slowdown_trigger) + ", " +
        std::to_string(options.level0_stop_trigger) + ")");
  }
  if (options.background_nice < 0 || options.background_nice > 19) {
    return Status::InvalidArgument("background_nice must be in [0, 19] (got " +
                                   std::to_string(options.background_nice) + ")");
  }
  if (options.max_background_compactions < 1 || options.max_background_compactions > 64) {
    return Status::InvalidArgument("max_background_compactions must be in [1, 64] (got " +
                                   std::to_string(options.max_background_compactions) + ")");
  }
  if (options.max_immutable_memtables < 1) {
    return Status::InvalidArgument("max_immutable_memtables must be at least 1 (got " +
                                   std::to_string(options.max_immutable_memtables) + ")");
  }
  if (options.write_buffer_size < 4096 || options.target_file_size < 4096 ||
      options.level1_max_bytes < 4096 || options.total_write_buffer_size < 4096) {
    return Status::InvalidArgument(
        "write_buffer_size, total_write_buffer_size, target_file_size and level1_max_bytes must "
        "be at least 4096");
  }
  // Checked here, before recovery touches the directory (the log writer
  // would refuse it only after the log was recovered).
  if (options.wal_segment_size < wal::kBlockSize || options.wal_segment_size % wal::kBlockSize) {
    return Status::InvalidArgument("wal_segment_size must be a positive multiple of " +
                                   std::to_string(wal::kBlockSize) + " (got " +
                                   std::to_string(options.wal_segment_size) + ")");
  }
  for (const auto& [name, limit] :
       {std::pair<const char*, size_t>{"max_row_key_size", options.max_row_key_size},
        {"max_qualifier_size", options.max_qualifier_size},
        {"max_value_size", options.max_value_size}}) {
    if (limit < 1 || limit > kMaxWriteLimit) {
      return Status::InvalidArgument(std::string(name) + " must be in [1, " +
                                     std::to_string(kMaxWriteLimit) + "] (got " +
                                     std::to_string(limit) + ")");
    }
  }
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
  core->RefreshTenantDiskUsage();
  core->UpdateLevel0Count();  // level-0 backpressure from the first write on
  *result = std::move(core);
  return Status::OK();
}

std::shared_ptr<TableState> EngineCore::MakeTable(
    const VersionEdit::NewTable& table, const std::vector<VersionEdit::NewTablet>& tablets) const {
  auto t = std::make_shared<TableState>();
  t->id = table.id;
  t->tenant_id = table.tenant_id;
  t->name = table.name;
  auto schema = std::make_shared<const Schema>(table.schema);
  {
    MutexLock l(&t->schema_mu);
    t->current_schema = schema;
  }
  for (const auto& tab : tablets) {
    auto ts = std::make_unique<TabletState>();
    ts->id = tab.id;
    ts->table = t.get();
    ts->start_row = tab.start_row;
    ts->end_row = tab.end_row;
    for (uint32_t g = 0; g < schema->locality_groups().size(); g++) {
      ts->groups.push_back(
          NewGroupState(ts.get(), g, schema->locality_groups()[g], options_.write_buffer_size));
    }
    t->tablets.push_back(std::move(ts));
  }
  std::sort(t->tablets.begin(), t->tablets.end(),
            [](const auto& a, const auto& b) { return a->start_row < b->start_row; });
  return t;
}

Status EngineCore::Recover() {
  MutexLock l(&mu_);
  STRATA_RETURN_IF_ERROR(
      Manifest::Open(fs_, dir_, /*create=*/true, &catalog_, &manifest_));
  for (const auto& [id, tenant] : catalog_.tenants) {
    auto t = std::make_shared<TenantState>();
    t->id = id;
    t->name = tenant.name;
    auto options = catalog_.tenant_options.find(id);
    t->budget = governor_.AddTenant(
        id, tenant.name,
        options == catalog_.tenant_options.end() ? TenantOptions() : options->second);
    tenants_[tenant.name] = std::move(t);
  }
  // A file shared by the tablets of a split has one TableFile, so it is
  // deleted only once no tablet holds it.
  std::unordered_map<uint64_t, std::shared_ptr<TableFile>> files_by_number;
  for (const auto& [id, table] : catalog_.tables) {
    std::vector<VersionEdit::NewTablet> tablets;
    for (const auto& [tid, tablet] : catalog_.tablets) {
      if (tablet.table_id == id) tablets.push_back(tablet);
    }
    if (tablets.empty()) {
      return Status::Corruption(dir_ + "/MANIFEST: table " + table.name + " has no tablets");
    }
    auto state = MakeTable(table, tablets);
    auto tenant = catalog_.tenants.find(table.tenant_id);
    if (tenant == catalog_.tenants.end()) {
      return Status::Corruption(dir_ + "/MANIFEST: table " + table.name + " has no tenant");
    }
    state->budget = tenants_.at(tenant->second.name)->budget;
    for (const auto& tab : state->tablets) {
      tablets_by_id_[tab->id] = tab.get();
      for (auto& g : tab->groups) {
        auto it = catalog_.files.find({tab->id, g->index});
        if (it == catalog_.files.end()) continue;
        MutexLock gl(&g->mu);
        auto view = std::make_shared<GroupView>(*g->view);
        for (size_t level = 0; level < it->second.levels.size() && level < kNumLevels; level++) {
          for (const auto& meta : it->second.levels[level]) {
            std::shared_ptr<TableFile>& f = files_by_number[meta.number];
            if (f == nullptr) f = std::make_shared<TableFile>(meta, obsolete_files_);
            view->levels[level].push_back(f);
          }
        }
        g->view = std::move(view);
        g->flushed = it->second.flushed;
      }
    }
    tables_[{table.tenant_id, table.name}] = std::move(state);
  }

  STRATA_RETURN_IF_ERROR(fs_->CreateDirIfMissing(TableDir()));
  block_cache_ = std::make_unique<sstable::BlockCache>(options_.block_cache_size);
  sstable::TableCacheOptions tco;
  tco.file_system = fs_;
  tco.dir = TableDir();
  tco.max_open_tables = options_.max_open_tables;
  tco.block_cache = block_cache_.get();
  table_cache_ = std::make_unique<sstable::TableCache>(std::move(tco));
  for (const auto& [id, tablet] : tablets_by_id_) {
    for (const auto& g : tablet->groups) {
      bool pinned = false;
      for (const auto& level : g->current()->levels) {
        for (const auto& f : level) STRATA_RETURN_IF_ERROR(MakeResidentIfNeeded(*g, f->meta, &pinned));
      }
    }
  }

  const std::string log_dir = JoinPath(dir_, kLogDirName);
  STRATA_RETURN_IF_ERROR(fs_->CreateDirIfMissing(log_dir));
  STRATA_RETURN_IF_ERROR(CheckLogSegment(log_dir));
  wal::RecoveryInfo info;
  // Without a floor, the log must still hold everything from the first
  // sequence number on: a missing oldest segment is corruption too. When
  // recovery drops a tail with whole segments, the manifest first names the
  // last one kept, so that a crash in between does not leave it naming one
  // that is gone.
  STRATA_RETURN_IF_ERROR(wal::RecoverLog(
      fs_, log_dir, ToWalMode(options_.wal_recovery_mode),
      std::max<SequenceNumber>(catalog_.log_floor, 1),
      [this](SequenceNumber first, uint64_t count, Slice payload)
          NO_THREAD_SAFETY_ANALYSIS { return ReplayRecord(first, count, payload); },
      &info,
      [this](uint64_t last_kept) NO_THREAD_SAFETY_ANALYSIS {  // Recover holds mu_
        return catalog_.log_segment == 0 ? Status::OK() : RecordLogSegment(last_kept);
      }));
  // Only now that the manifest and the log agree: a catalog that misses
  // files must not cost them.
  STRATA_RETURN_IF_ERROR(DeleteObsoleteFiles());
  // With records in the log, the writer continues right after them (the log
  // was synced before any flush recorded a later sequence); an empty log
  // continues after the last sequence the manifest saw.
  const SequenceNumber next =
      info.records > 0 || info.records_skipped > 0
          ? info.next_sequence
          : std::max<SequenceNumber>(catalog_.last_sequence + 1, 1);
  // Relaxed: no other thread can see the core yet.
  visible_sequence_.store(next - 1, std::memory_order_relaxed);
  // A log left without records (a point-in-time recovery dropped them all,
  // or every one was flushed) needs nothing below `next` any more: say so,
  // or the next open would want the records it no longer has.
  if (info.records == 0 && info.records_skipped == 0 &&
      next > std::max<SequenceNumber>(catalog_.log_floor, 1)) {
    VersionEdit e;
    e.log_floor = next;
    STRATA_RETURN_IF_ERROR(AppendEdit(e));
    STRATA_RETURN_IF_ERROR(catalog_.Apply(e));
  }

  wal::LogOptions lo;
  lo.fs = fs_;
  lo.use_io_uring = options_.use_io_uring;
  lo.apply_before_sync = options_.apply_before_sync;
  lo.segment_size = options_.wal_segment_size;
  lo.recycle_segments = options_.recycle_wal_segments;
  lo.segment_started = [this](uint64_t number) {
    MutexLock l(&mu_);
    return RecordLogSegment(number);
  };
  STRATA_RETURN_IF_ERROR(wal::LogWriter::Open(
      lo, log_dir, next,
      [this](wal::WriteRequest* const* requests, size_t n) { ApplyGroup(requests, n); }, &log_));
  // Before any record goes into it (ContinueAboveRecordedSequences, writes).
  STRATA_RETURN_IF_ERROR(RecordLogSegment(log_->first_segment()));
  compaction_limiter_ = std::make_unique<RateLimiter>(options_.compaction_rate_limit);
  flush_thread_ = std::thread([this] { FlushThread(); });
  for (int i = 0; i < options_.max_background_compactions; i++) {
    compaction_threads_.emplace_back([this] { CompactionThread(); });
  }
  if (options_.tablet_split_size > 0) split_thread_ = std::thread([this] { SplitThread(); });
  return Status::OK();
}

Status EngineCore::ContinueAboveRecordedSequences() {
  SequenceNumber recorded;
  {
    MutexLock l(&mu_);
    recorded = catalog_.last_sequence;
  }
  const SequenceNumber next = log_->next_sequence();
  if (next > recorded) return Status::OK();
  wal::WriteRequest skip;
  skip.payload = SequenceSkipPayload();
  skip.sequence_count = recorded + 1 - next;
  skip.sync = true;
  return log_->Write(&skip);
}

std::string EngineCore::TableDir() const { return JoinPath(dir_, kTableDirName); }

Status EngineCore::DeleteObsoleteFiles() {
  mu_.AssertHeld();
  std::set<uint64_t> live;
  for (const auto& [key, g] : catalog_.files) {
    for (const auto& level : g.levels) {
      for (const auto& f : level) live.insert(f.number);
    }
  }
  std::vector<std::string> names;
  STRATA_RETURN_IF_ERROR(fs_->GetChildren(TableDir(), &names));
  for (const auto& name : names) {
    uint64_t number = 0;
    int consumed = 0;
    // Only names of table files (digits, then ".sst" and nothing more).
    if (std::sscanf(name.c_str(), "%" SCNu64 ".sst%n", &number, &consumed) != 1 || consumed <= 4 ||
        static_cast<size_t>(consumed) != name.size() ||
        !std::isdigit(static_cast<unsigned char>(name[0]))) {
      continue;
    }
    if (live.count(number) == 0) {
      // Left by a flush or compaction that died before its manifest edit.
      fs_->DeleteFile(JoinPath(TableDir(), name)).PermitUncheckedError();  // retried next open
    }
  }
  return Status::OK();
}

Status EngineCore::ReplayRecord(SequenceNumber first_sequence, uint64_t count, Slice payload) {
  mu_.AssertHeld();
  std::vector<LoggedRow> rows;
  LogRecordKind kind;
  Status s = DecodeLogRecord(payload, &rows, &kind);
  if (!s.ok()) return s.WithContext("record at sequence " + std::to_string(first_sequence));
  if (kind == LogRecordKind::kSequenceSkip) return Status::OK();  // its numbers hold no data
  uint64_t entries = 0;
  for (const auto& r : rows) entries += r.entries.size();
  if (entries != count) {
    return Status::Corruption("log record at sequence " + std::to_string(first_sequence) +
                              " holds " + std::to_string(entries) + " entries but uses " +
                              std::to_string(count) + " sequence numbers");
  }
  SequenceNumber seq = first_sequence;
  for (const auto& r : rows) {
    auto it = tablets_by_id_.find(r.tablet_id);
    if (it == tablets_by_id_.end() && catalog_.retired_tablets.count(r.tablet_id) != 0) {
      seq += r.entries.size();  // its table was dropped after this was logged
      continue;
    }
    if (it == tablets_by_id_.end()) {
      // Tablets are never removed yet, so a record naming an unknown one means
      // the log and the manifest disagree.
      return Status::Corruption("log record at sequence " + std::to_string(seq) +
                                " names unknown tablet " + std::to_string(r.tablet_id));
    }
    // Replay runs alone, before the core is shared: the schema is the last
    // one the manifest holds. A family id it lacks but once gave out belongs
    // to a family removed since, which held no data then: InsertEntries
    // skips its entries, as it skips those logged before a family moved.
    std::shared_ptr<const Schema> schema = it->second->table->schema();
    for (const auto& e : r.entries) {
      if (e.type != CellType::kDeleteRow && schema->FamilyById(e.family) == nullptr &&
          (e.family == kRowMarkerFamily || e.family >= schema->next_family_id())) {
        return Status::Corruption("log record at sequence " + std::to_string(seq) +
                                  " names unknown family id " + std::to_string(e.family));
      }
    }
    InsertEntries(*it->second, *schema, r.row, r.entries, seq, /*replay=*/true, nullptr);
    seq += r.entries.size();
  }
  return Status::OK();
}

void EngineCore::InsertEntries(const TabletState& tablet, const Schema& schema, const Slice& row,
                               const std::vector<CellEntry>& entries,
                               SequenceNumber first_sequence, bool replay,
                               std::vector<LocalityGroupState*>* touched) {
  auto insert = [&](LocalityGroupState* g, SequenceNumber seq, const CellEntry& e,
                    uint16_t family) NO_THREAD_SAFETY_ANALYSIS {
    std::shared_ptr<const GroupView> view;
    {
      MutexLock l(&g->mu);
      if (replay && seq <= g->flushed) return;  // already in the group's files
      view = g->view;
    }
    view->mem->Add(seq, e.type, row, family, e.qualifier, e.timestamp, e.value);
    if (touched != nullptr &&
        std::find(touched->begin(), touched->end(), g) == touched->end()) {
      touched->push_back(g);
    }
  };
  SequenceNumber seq = first_sequence;
  const size_t slots = std::min(schema.locality_groups().size(), tablet.groups.size());
  for (const auto& e : entries) {
    if (e.type == CellType::kDeleteRow) {
      // A row marker goes to every group that holds a family, so each
      // group's reads see it; it has nothing to hide in the others.
      for (uint32_t g = 0; g < slots; g++) {
        if (schema.GroupHasFamilies(g)) insert(tablet.groups[g].get(), seq, e, kRowMarkerFamily);
      }
    } else {
      const FamilyInfo* f = schema.FamilyById(e.family);
      // Only replay meets these: an entry of a family removed since, or
      // logged before the family moved to its group (engine/schema.h).
      if (f != nullptr && !(replay && seq <= f->moved_at)) {
        insert(tablet.groups[f->locality_group].get(), seq, e, e.family);
      }
    }
    seq++;
  }
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

void EngineCore::StartBackgroundThread(const char* name) const {
  SetCurrentThreadName(name);
  // Best effort: raising a thread's nice value, or moving it to SCHED_BATCH,
  // needs no privilege.
  if (options_.background_nice > 0) (void)SetCurrentThreadNice(options_.background_nice);
  if (options_.background_sched_batch) (void)SetCurrentThreadBatchScheduling();
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
    Status s = FlushOldest(group);
    PurgeObsoleteFiles();
    UpdateLevel0Count();
    RefreshTenantDiskUsage();
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
    CompactionJob job;
    if (bg_error_.ok() && PickCompaction(&job, manual_compaction_)) {
      compactions_running_++;
      bg_mu_.Unlock();
      Status s = RunCompaction(&job);
      bg_mu_.Lock();
      ReleaseInputs(job);
      job = CompactionJob();  // drop the input references before purging
      compactions_running_--;
      bg_mu_.Unlock();
      PurgeObsoleteFiles();
      UpdateLevel0Count();
      RefreshTenantDiskUsage();
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

namespace {

uint64_t LevelBytes(const std::vector<std::shared_ptr<TableFile>>& files) {
  uint64_t n = 0;
  for (const auto& f : files) n += f->meta.size;
  return n;
}

// The encoded row at the front of a cell key; encoded rows compare like
// rows. A malformed key (never written by the engine) gives the whole key.
Slice RowOf(const Slice& key) {
  Slice rest = key;
  if (!SkipMemcomparable(&rest)) return key;
  return Slice(key.data(), key.size() - rest.size());
}

// Whether the rows of `f` overlap the rows of the keys lo..hi. Compactions
// pick by rows, not keys: a delete marker hides cells of its row that sort
// after it (a row marker every family's cells, a column marker the column's
// older versions), so a file holding only those still belongs with it.
bool Overlaps(const FileMeta& f, const std::string& lo, const std::string& hi) {
  return !(RowOf(f.largest).compare(RowOf(lo)) < 0 || RowOf(f.smallest).compare(RowOf(hi)) > 0);
}

// A compaction output file whose appends wait on the compaction rate limit.
class RateLimitedFile final : public WritableFile {
 public:
  RateLimitedFile(std::unique_ptr<WritableFile> base, RateLimiter* limiter)
      : base_(std::move(base)), limiter_(limiter) {}
  Status Append(const Slice& data) override {
    limiter_->Request(data.size());
    return base_->Append(data);
  }
  Status WriteAt(uint64_t offset, const struct iovec* iov, int iovcnt) override {
    for (int i = 0; i < iovcnt; i++) limiter_->Request(iov[i].iov_len);
    return base_->WriteAt(offset, iov, iovcnt);
  }
  Status Flush() override { return base_->Flush(); }
  Status Sync() override { return base_->Sync(); }
  Status Allocate(uint64_t offset, uint64_t len) override { return base_->Allocate(offset, len); }
  Status Truncate(uint64_t size) override { return base_->Truncate(size); }
  Status Close() override { return base_->Close(); }
  uint64_t Size() const override { return base_->Size(); }

 private:
  const std::unique_ptr<WritableFile> base_;
  RateLimiter* const limiter_;
};

}  // namespace

bool EngineCore::PickCompaction(CompactionJob* job, bool force) {
  std::vector<LocalityGroupState*> groups;
  {
    MutexLock l(&mu_);
    for (const auto& [id, tablet] : tablets_by_id_) {
      for (const auto& g : tablet->groups) groups.push_back(g.get());
    }
  }
  // Every (group, level) that needs work, most urgent first: level 0 by
  // files over its trigger, deeper levels by bytes over their size.
  struct Candidate {
    double score;
    LocalityGroupState* group;
    std::shared_ptr<const GroupView> view;
    int level;
  };
  std::vector<Candidate> candidates;
  for (LocalityGroupState* g : groups) {
    std::shared_ptr<const GroupView> view = g->current();
    const int trigger = force ? 1 : options_.level0_compaction_trigger;
    if (static_cast<int>(view->levels[0].size()) >= trigger) {
      candidates.push_back(
          {static_cast<double>(view->levels[0].size()) / options_.level0_compaction_trigger, g,
           view, 0});
    }
    // A manual compaction also pushes every level down into the deepest
    // one that holds data, so each key ends up in one file.
    int deepest = 0;
    for (int n = kNumLevels - 1; n > 0 && deepest == 0; n--) {
      if (!view->levels[n].empty()) deepest = n;
    }
    uint64_t max_bytes = options_.level1_max_bytes;
    for (int n = 1; n < kNumLevels - 1; n++, max_bytes *= 10) {
      const uint64_t bytes = LevelBytes(view->levels[n]);
      if (bytes > max_bytes) {
        candidates.push_back({static_cast<double>(bytes) / max_bytes, g, view, n});
      } else if (force && bytes > 0 && n < deepest) {
        candidates.push_back({static_cast<double>(bytes) / max_bytes, g, view, n});
      }
    }
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
  for (const Candidate& c : candidates) {
    *job = CompactionJob();
    job->group = c.group;
    job->level = c.level;
    if (!PickInputs(*c.view, c.level, job)) continue;
    for (const auto& inputs : job->inputs) {
      for (const auto& f : inputs) f->being_compacted = true;
    }
    return true;
  }
  *job = CompactionJob();
  return false;
}

bool EngineCore::PickInputs(const GroupView& view, int level, CompactionJob* job) {
  const auto& here = view.levels[level];
  const auto& below = view.levels[level + 1];
  auto busy = [](const std::shared_ptr<TableFile>& f) { return f->being_compacted; };
  // The files of `below` that overlap [lo, hi]; false if one is busy.
  auto overlapping = [&](const std::string& lo, const std::string& hi,
                         std::vector<std::shared_ptr<TableFile>>* out) {
    for (const auto& f : below) {
      if (!Overlaps(f->meta, lo, hi)) continue;
      if (busy(f)) return false;
      if (out != nullptr) out->push_back(f);
    }
    return true;
  };
  if (level == 0) {
    // Level-0 files overlap one another: all of them go at once, and only
    // one level-0 compaction of a group runs at a time.
    if (std::any_of(here.begin(), here.end(), busy)) return false;
    job->inputs[0] = here;
  } else {
    // The file that rewrites the fewest bytes below per byte it moves down.
    double best = 0;
    for (const auto& f : here) {
      if (busy(f)) continue;
      uint64_t below_bytes = 0;
      bool free = true;
      for (const auto& b : below) {
        if (!Overlaps(b->meta, f->meta.smallest, f->meta.largest)) continue;
        if (busy(b)) free = false;
        below_bytes += b->meta.size;
      }
      if (!free) continue;
      const double ratio =
          static_cast<double>(below_bytes) / static_cast<double>(std::max<uint64_t>(f->meta.size, 1));
      if (job->inputs[0].empty() || ratio < best) {
        best = ratio;
        job->inputs[0] = {f};
      }
    }
    if (job->inputs[0].empty()) return false;
  }
  std::string lo = job->inputs[0].front()->meta.smallest;
  std::string hi = job->inputs[0].front()->meta.largest;
  for (const auto& f : job->inputs[0]) {
    lo = std::min(lo, f->meta.smallest);
    hi = std::max(hi, f->meta.largest);
  }
  if (!overlapping(lo, hi, &job->inputs[1])) return false;
  for (const auto& f : job->inputs[1]) {
    lo = std::min(lo, f->meta.smallest);
    hi = std::max(hi, f->meta.largest);
  }
  // Nothing deeper overlaps the output: delete markers can go. (A running
  // compaction cannot move data into this range: it would hold one of these
  // inputs.)
  job->bottommost = true;
  for (int n = level + 2; n < kNumLevels && job->bottommost; n++) {
    for (const auto& f : view.levels[n]) {
      if (Overlaps(f->meta, lo, hi)) job->bottommost = false;
    }
  }
  // A file alone, with nothing to merge with below, needs no rewrite —
  // unless a filter must see its data, or it carries delete markers to the
  // bottom (checked in RunCompaction), where a rewrite drops them.
  job->trivial_move = job->inputs[0].size() == 1 && job->inputs[1].empty() &&
                      options_.compaction_filter == nullptr;
  if (!job->bottommost && !job->trivial_move) {
    // A row that no deeper file holds is at the bottom all the same.
    job->deeper = std::make_shared<DeeperFiles>(view, level + 2, table_cache_.get(),
                                                job->group->tablet->table->budget->cache_id());
  }
  return true;
}

void EngineCore::ReleaseInputs(const CompactionJob& job) {
  for (const auto& inputs : job.inputs) {
    for (const auto& f : inputs) f->being_compacted = false;
  }
}

Status EngineCore::RunCompaction(CompactionJob* job) {
  LocalityGroupState* group = job->group;
  const TabletState& tablet = *group->tablet;
  const int out_level = job->level + 1;
  // The job's schema: output files take the options of the group as the
  // compaction starts.
  const std::shared_ptr<const Schema> schema = tablet.table->schema();
  const LocalityGroupOptions& group_options = schema->locality_groups()[group->index];
  if (job->trivial_move && job->bottommost) {
    // At the bottom a rewrite drops delete markers (and what they hide in
    // the same file); move only files that hold none.
    Result<std::shared_ptr<sstable::TableReader>> reader =
        table_cache_->Get(job->inputs[0].front()->meta.number, tablet.table->budget->cache_id());
    if (!reader.ok()) return reader.status();
    const sstable::TableProperties& p = (*reader)->properties();
    if (p.num_delete_cells + p.num_delete_columns + p.num_delete_rows > 0) {
      job->trivial_move = false;
    }
  }
  if (job->trivial_move) {
    const std::shared_ptr<TableFile>& f = job->inputs[0].front();
    VersionEdit edit;
    edit.deleted_files.push_back(
        {tablet.id, group->index, static_cast<uint32_t>(job->level), f->meta.number});
    edit.new_files.push_back({tablet.id, group->index, static_cast<uint32_t>(out_level), f->meta});
    {
      MutexLock l(&mu_);
      // Relaxed: set under mu_ (see UnlinkTables and SplitTablet).
      if (tablet.table->dropped.load(std::memory_order_relaxed) ||
          tablet.retired.load(std::memory_order_relaxed)) {
        return Status::OK();
      }
      STRATA_RETURN_IF_ERROR(AppendEdit(edit));
      STRATA_RETURN_IF_ERROR(catalog_.Apply(edit));
    }
    if (auto* hook = test_hooks::after_compaction_edit.load(std::memory_order_relaxed)) hook();
    MutexLock l(&group->mu);
    // A drop since the check above has emptied the view, marking f obsolete
    // with the rest, or is about to; a split has emptied it or is about to,
    // and its children took f from the manifest, moved. Moving f into the
    // emptied view would keep it alive (and on disk) as long as the engine.
    // Relaxed: see TableState::dropped and TabletState::retired; both are
    // set before the view is emptied.
    if (tablet.table->dropped.load(std::memory_order_relaxed) ||
        tablet.retired.load(std::memory_order_relaxed)) {
      return Status::OK();
    }
    auto view = std::make_shared<GroupView>(*group->view);
    auto& from = view->levels[job->level];
    from.erase(std::remove(from.begin(), from.end(), f), from.end());
    auto& to = view->levels[out_level];
    to.insert(std::upper_bound(to.begin(), to.end(), f,
                               [](const auto& a, const auto& b) {
                                 return a->meta.smallest < b->meta.smallest;
                               }),
              f);
    group->view = std::move(view);
    stat_trivial_moves_.fetch_add(1, std::memory_order_relaxed);
    return Status::OK();
  }
  std::vector<std::unique_ptr<InternalIterator>> children;
  std::vector<std::shared_ptr<const void>> pins;
  for (const auto& inputs : job->inputs) {
    for (const auto& f : inputs) {
      Result<std::shared_ptr<sstable::TableReader>> reader =
          table_cache_->Get(f->meta.number, tablet.table->budget->cache_id());
      if (!reader.ok()) return reader.status();
      // Read once: the inputs' blocks would only evict what readers use.
      children.push_back((*reader)->NewIterator(/*fill_cache=*/false));
      pins.push_back(std::move(reader.value()));
    }
  }
  std::unique_ptr<InternalIterator> input = NewMergingIterator(std::move(children), std::move(pins));
  if (!tablet.start_row.empty() || !tablet.end_row.empty()) {
    // Files shared with split siblings hold their rows too.
    input = std::make_unique<ClampedIterator>(std::move(input), RowBound(tablet.start_row),
                                              RowBound(tablet.end_row));
  }

  // Output files, cut at about target_file_size.
  std::vector<FileMeta> outputs;
  std::unique_ptr<WritableFile> file;
  std::unique_ptr<sstable::TableBuilder> builder;
  FileMeta meta;
  std::string path;
  auto finish_output = [&]() -> Status {
    if (builder == nullptr) return Status::OK();
    Status s = builder->Finish();
    if (s.ok()) s = file->Sync();
    if (s.ok()) s = file->Close();
    meta.size = builder->FileSize();
    builder.reset();
    file.reset();
    if (s.ok()) outputs.push_back(meta);
    return s;
  };
  auto cleanup = [&] {
    if (builder != nullptr) builder->Abandon();
    builder.reset();
    file.reset();
    if (!path.empty()) fs_->DeleteFile(path).PermitUncheckedError();  // reopen deletes leftovers
    for (const auto& m : outputs) DiscardTableFile(m.number);         // pinned, if resident
  };
  // Outputs end only between rows, so the files of a level never share a
  // row and a compaction that takes a file takes all of each of its rows.
  bool cut_pending = false;
  auto emit = [&](const Slice& key, const Slice& value) -> Status {
    if (cut_pending && RowOf(meta.largest) != RowOf(key)) {
      cut_pending = false;
      STRATA_RETURN_IF_ERROR(finish_output());
      path.clear();
    }
    if (builder == nullptr) {
      meta = FileMeta();
      {
        MutexLock l(&mu_);
        meta.number = catalog_.next_id++;
      }
      path = sstable::TableFileName(TableDir(), meta.number);
      STRATA_RETURN_IF_ERROR(fs_->NewWritableFile(path, FileOpenOptions(), &file));
      if (options_.compaction_rate_limit > 0) {
        file = std::make_unique<RateLimitedFile>(std::move(file), compaction_limiter_.get());
      }
      sstable::TableBuilderOptions bo =
          sstable::TableBuilderOptions::FromLocalityGroup(group_options);
      bo.table_id = tablet.table->id;
      bo.tablet_id = tablet.id;
      bo.locality_group_id = group->index;
      bo.file_number = meta.number;
      builder = std::make_unique<sstable::TableBuilder>(bo, file.get(), path);
      meta.min_sequence = kMaxSequenceNumber;
      meta.smallest = key.ToString();
    }
    meta.largest = key.ToString();
    const SequenceNumber seq = CellKeySequence(key);
    meta.min_sequence = std::min(meta.min_sequence, seq);
    meta.max_sequence = std::max(meta.max_sequence, seq);
    meta.entries++;
    STRATA_RETURN_IF_ERROR(builder->Add(key, value));
    if (builder->FileSize() >= options_.target_file_size) cut_pending = true;
    return Status::OK();
  };
  CompactionFilter::Context ctx;
  ctx.tablet_id = tablet.id;
  ctx.table = tablet.table->name;
  ctx.locality_group = group_options.name;
  ctx.bottommost = job->bottommost;
  CompactionStream::RowProbe older_may_hold_row;
  if (!job->bottommost && job->deeper != nullptr) {
    older_may_hold_row = [deeper = job->deeper.get()](const Slice& row) {
      return deeper->MayHoldRow(row);
    };
  }
  CompactionStream stream(job->bottommost, options_.compaction_filter.get(), ctx, schema.get(),
                          emit, std::move(older_may_hold_row));
  Status s;
  for (input->SeekToFirst(); input->Valid() && s.ok(); input->Next()) {
    // Relaxed: a hint to stop early; Close joins this thread afterwards.
    if (closing_.load(std::memory_order_relaxed)) {
      s = Status::Aborted("compaction stopped: the engine is closing");
      break;
    }
    s = stream.Add(input->key(), input->value());
  }
  if (s.ok()) s = input->status();
  if (s.ok()) s = stream.Finish();
  if (s.ok()) s = finish_output();
  if (s.ok()) s = fs_->SyncDir(TableDir());
  // All outputs or none: `resident` is read once, since an AlterTable
  // turning it on between two outputs would leave the earlier ones unpinned
  // (ShowNewFiles pins the files only when none of them is pinned).
  bool pinned = false;
  {
    MutexLock l(&group->mu);
    pinned = group->resident;
  }
  for (size_t i = 0; i < outputs.size() && s.ok() && pinned; i++) {
    s = MakeResident(*tablet.table, outputs[i].number);
  }
  if (!s.ok()) {
    cleanup();
    return s;
  }

  VersionEdit edit;
  for (int i = 0; i < 2; i++) {
    for (const auto& f : job->inputs[i]) {
      edit.deleted_files.push_back({tablet.id, group->index,
                                    static_cast<uint32_t>(job->level + i), f->meta.number});
    }
  }
  for (const auto& m : outputs) {
    edit.new_files.push_back({tablet.id, group->index, static_cast<uint32_t>(out_level), m});
  }
  bool dropped = false;
  {
    MutexLock l(&mu_);
    // Relaxed: set under mu_ (see UnlinkTables and SplitTablet).
    dropped = tablet.table->dropped.load(std::memory_order_relaxed) ||
              tablet.retired.load(std::memory_order_relaxed);
    if (!dropped) {
      edit.next_id = catalog_.next_id;
      s = AppendEdit(edit);
      if (s.ok()) s = catalog_.Apply(edit);
    }
  }
  if (!s.ok() || dropped) {
    path.clear();
    // The outputs of a dropped table's compaction go at once, as do those
    // of a refused edit (nothing written). Those of a failed append stay:
    // the edit may have reached the file (a failed sync), and the next open
    // keeps them or deletes them as leftovers.
    if (dropped || s.IsInvalidArgument()) cleanup();
    return s;
  }
  if (auto* hook = test_hooks::after_compaction_edit.load(std::memory_order_relaxed)) hook();
  bool orphaned = false;
  s = ShowNewFiles(group, outputs, pinned, [&]() NO_THREAD_SAFETY_ANALYSIS {
    // A drop since the check above has emptied the view (or is about to,
    // and takes the inputs along); the outputs then belong to no table.
    // Relaxed: see TableState::dropped; set before the view is emptied.
    if (tablet.table->dropped.load(std::memory_order_relaxed)) {
      orphaned = true;
      return;
    }
    // A split since the edit: its children took the outputs from the
    // manifest; the inputs left it with this edit. The parent's emptied view
    // keeps nothing.
    if (tablet.retired.load(std::memory_order_relaxed)) {
      for (const auto& inputs : job->inputs) {
        for (const auto& f : inputs) f->obsolete.store(true, std::memory_order_relaxed);
      }
      return;
    }
    auto view = std::make_shared<GroupView>(*group->view);
    for (int i = 0; i < 2; i++) {
      auto& level = view->levels[job->level + i];
      for (const auto& f : job->inputs[i]) {
        level.erase(std::remove(level.begin(), level.end(), f), level.end());
        f->obsolete.store(true, std::memory_order_relaxed);
      }
    }
    auto& out = view->levels[out_level];
    for (const auto& m : outputs) out.push_back(std::make_shared<TableFile>(m, obsolete_files_));
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
      return a->meta.smallest < b->meta.smallest;
    });
    group->view = std::move(view);
  });
  if (orphaned) {
    for (const FileMeta& m : outputs) DiscardTableFile(m.number);
    return s;
  }
  stat_compactions_.fetch_add(1, std::memory_order_relaxed);
  uint64_t read = 0, written = 0;
  for (const auto& inputs : job->inputs) {
    for (const auto& f : inputs) read += f->meta.size;
  }
  for (const auto& m : outputs) written += m.size;
  stat_compaction_read_.fetch_add(read, std::memory_order_relaxed);
  stat_compaction_written_.fetch_add(written, std::memory_order_relaxed);
  return s;
}

void EngineCore::UpdateLevel0Count() {
  uint64_t most = 0;
  {
    MutexLock l(&mu_);
    std::map<const TenantBudget*, uint64_t> per_tenant;
    for (const auto& [key, table] : tables_) {
      uint64_t& n = per_tenant[table->budget.get()];
      for (const auto& tablet : table->tablets) {
        for (const auto& g : tablet->groups) {
          std::shared_ptr<const GroupView> view = g->current();
          if (view == nullptr) continue;  // closed
          n = std::max<uint64_t>(n, view->levels[0].size());
        }
      }
      most = std::max(most, n);
    }
    for (const auto& [name, tenant] : tenants_) {
      auto it = per_tenant.find(tenant->budget.get());
      tenant->budget->SetLevel0Files(it == per_tenant.end() ? 0 : it->second);
    }
    // Under mu_ with the counts above, so a recount that raced this one
    // cannot leave its older figure behind.
    max_level0_files_.store(most, std::memory_order_relaxed);
  }
  MutexLock l(&bg_mu_);
  bg_cv_.SignalAll();
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

Status EngineCore::MakeResident(const TableState& table, uint64_t file_number) {
  Result<std::shared_ptr<sstable::TableReader>> reader =
      table_cache_->Pin(file_number, table.budget->cache_id());
  if (!reader.ok()) return reader.status();
  // One pass loads every data block into the cache as resident.
  std::unique_ptr<InternalIterator> it = (*reader)->NewIterator();
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
  }
  return it->status();
}

std::vector<LocalityGroupState*> EngineCore::GroupsOf(const TabletState& tablet) const {
  MutexLock l(&mu_);
  std::vector<LocalityGroupState*> groups;
  groups.reserve(tablet.groups.size());
  for (const auto& g : tablet.groups) groups.push_back(g.get());
  return groups;
}

void EngineCore::Unpin(uint64_t file_number) {
  // The next read opens the file again, unpinned, and caches its blocks
  // like any other file's.
  table_cache_->Evict(file_number);
  block_cache_->EraseFile(file_number);
}

Status EngineCore::MakeResidentIfNeeded(const LocalityGroupState& group, const FileMeta& meta,
                                        bool* pinned) {
  {
    MutexLock l(&group.mu);
    if (!group.resident) return Status::OK();
  }
  *pinned = true;
  return MakeResident(*group.tablet->table, meta.number);
}

Status EngineCore::ShowNewFiles(LocalityGroupState* group, const std::vector<FileMeta>& files,
                                bool pinned, const std::function<void()>& show) {
  Status s;
  bool resident = false;
  for (;;) {
    {
      MutexLock l(&group->mu);
      resident = group->resident;
      // Shown under the same lock that AlterTable sets `resident` under, so
      // either AlterTable's pass over the view sees these files or this
      // sees the flag it set.
      if (pinned || !resident || files.empty() || !s.ok()) {
        show();
        break;
      }
    }
    for (const FileMeta& m : files) {
      if (s.ok()) s = MakeResident(*group->tablet->table, m.number);
    }
    pinned = true;
  }
  if (pinned && !resident) {
    for (const FileMeta& m : files) Unpin(m.number);
  }
  return s;
}

void EngineCore::PurgeObsoleteFiles() {
  for (uint64_t number : obsolete_files_->Take()) DiscardTableFile(number);
}

void EngineCore::DiscardTableFile(uint64_t number) {
  table_cache_->Evict(number);  // a pinned reader too
  block_cache_->EraseFile(number);
  // Best effort: a file left behind is deleted on the next open.
  fs_->DeleteFile(sstable::TableFileName(TableDir(), number)).PermitUncheckedError();
}

Status EngineCore::WriteTableFile(const TabletState& tablet, uint32_t group, InternalIterator* it,
                                  DeeperFiles* older, FileMeta* meta) {
  {
    MutexLock l(&mu_);
    meta->number = catalog_.next_id++;
  }
  const std::string path = sstable::TableFileName(TableDir(), meta->number);
  std::unique_ptr<WritableFile> file;
  STRATA_RETURN_IF_ERROR(fs_->NewWritableFile(path, FileOpenOptions(), &file));
  // The options of the group as the flush starts apply to its file.
  const std::shared_ptr<const Schema> schema = tablet.table->schema();
  const LocalityGroupOptions& group_options = schema->locality_groups()[group];
  sstable::TableBuilderOptions bo = sstable::TableBuilderOptions::FromLocalityGroup(group_options);
  bo.table_id = tablet.table->id;
  bo.tablet_id = tablet.id;
  bo.locality_group_id = group;
  bo.file_number = meta->number;
  sstable::TableBuilder builder(bo, file.get(), path);
  Status s;
  meta->min_sequence = kMaxSequenceNumber;
  meta->max_sequence = 0;
  auto emit = [&](const Slice& key, const Slice& value) {
    if (meta->entries == 0) meta->smallest.assign(key.data(), key.size());
    meta->largest.assign(key.data(), key.size());
    const SequenceNumber seq = CellKeySequence(key);
    meta->min_sequence = std::min(meta->min_sequence, seq);
    meta->max_sequence = std::max(meta->max_sequence, seq);
    meta->entries++;
    return builder.Add(key, value);
  };
  // What the memtable itself hides (older entries at one timestamp, versions
  // under its own delete markers) is not written; the markers are, where
  // older files may hold what they hide. A cell written and deleted within
  // the memtable (a transaction's lock) thus leaves nothing. The compaction
  // filter is not run.
  CompactionFilter::Context ctx;
  ctx.tablet_id = tablet.id;
  ctx.table = tablet.table->name;
  ctx.locality_group = group_options.name;
  CompactionStream stream(/*bottommost=*/false, /*filter=*/nullptr, ctx, schema.get(), emit,
                          [older](const Slice& row) { return older->MayHoldRow(row); });
  for (it->SeekToFirst(); it->Valid() && s.ok(); it->Next()) {
    s = stream.Add(it->key(), it->value());
  }
  if (s.ok()) s = it->status();
  if (s.ok()) s = stream.Finish();
  if (s.ok() && meta->entries == 0) {
    // Everything cancelled out: no file (best effort; reopen deletes leftovers).
    builder.Abandon();
    file.reset();
    fs_->DeleteFile(path).PermitUncheckedError();
    return Status::OK();
  }
  if (s.ok()) s = builder.Finish();
  if (s.ok()) s = file->Sync();
  if (s.ok()) s = file->Close();
  if (s.ok()) s = fs_->SyncDir(TableDir());
  if (!s.ok()) {
    builder.Abandon();
    file.reset();
    fs_->DeleteFile(path).PermitUncheckedError();  // best effort; reopen deletes leftovers
    return s;
  }
  meta->size = builder.FileSize();
  return Status::OK();
}

SequenceNumber EngineCore::LogFloor(SequenceNumber visible) const {
  SequenceNumber floor = visible + 1;
  MutexLock l(&mu_);
  for (const auto& [id, tablet] : tablets_by_id_) {
    for (const auto& g : tablet->groups) {
      MutexLock gl(&g->mu);
      if (g->view->imms.empty() && g->view->mem->num_entries() == 0) continue;
      floor = std::min(floor, g->flushed + 1);
    }
  }
  return floor;
}

Status EngineCore::FlushOldest(LocalityGroupState* group) {
  ImmutableMemTable imm;
  // The files, which hold all the group's data older than imm (the oldest
  // memtable).
  std::unique_ptr<DeeperFiles> older;
  {
    MutexLock l(&group->mu);
    if (group->view->imms.empty()) return Status::OK();
    imm = group->view->imms.back();
    older = std::make_unique<DeeperFiles>(*group->view, /*first_level=*/0, table_cache_.get(),
                                          group->tablet->table->budget->cache_id());
  }
  const TabletState& tablet = *group->tablet;
  FileMeta meta;
  bool pinned = false;
  if (imm.mem->num_entries() > 0) {
    std::unique_ptr<InternalIterator> it = imm.mem->NewIterator();
    STRATA_RETURN_IF_ERROR(WriteTableFile(tablet, group->index, it.get(), older.get(), &meta));
  }
  if (meta.entries > 0) {
    Status s = MakeResidentIfNeeded(*group, meta, &pinned);
    if (!s.ok()) {
      DiscardTableFile(meta.number);
      return s;
    }
  }
  // Everything the manifest is about to call flushed must be durable in the
  // log too, or a crash could leave the log ending before the manifest's
  // last sequence. So `visible` is read before the sync: writes applied
  // after it may be lost in a crash, and the log floor and last sequence
  // recorded below must not reach past what the sync made durable. The
  // memtable's own entries were logged before their apply switched it out,
  // perhaps before that apply published them: the sync covers them too.
  const SequenceNumber visible =
      std::max(visible_sequence_.load(std::memory_order_acquire), imm.last_sequence);
  STRATA_RETURN_IF_ERROR(log_->Sync());
  if (auto* hook = test_hooks::after_flush_log_sync.load(std::memory_order_relaxed)) hook();
  VersionEdit edit;
  if (meta.entries > 0) edit.new_files.push_back({tablet.id, group->index, 0, meta});
  edit.flushed.push_back({tablet.id, group->index, imm.last_sequence});
  edit.last_sequence = visible;
  {
    MutexLock l(&mu_);
    // Relaxed: set under mu_ (see UnlinkTables and SplitTablet).
    if (tablet.table->dropped.load(std::memory_order_relaxed) ||
        tablet.retired.load(std::memory_order_relaxed)) {
      if (meta.entries > 0) DiscardTableFile(meta.number);  // pinned, if resident
      return Status::OK();
    }
    edit.next_id = catalog_.next_id;
    STRATA_RETURN_IF_ERROR(AppendEdit(edit));
    STRATA_RETURN_IF_ERROR(catalog_.Apply(edit));
  }
  bool popped = false;
  bool orphaned = false;
  std::vector<FileMeta> shown;
  if (meta.entries > 0) shown.push_back(meta);
  Status shown_status = ShowNewFiles(group, shown, pinned, [&]() NO_THREAD_SAFETY_ANALYSIS {
    auto view = std::make_shared<GroupView>(*group->view);
    // A drop that came after the check above has emptied the view already
    // (or is about to); the file then belongs to no table.
    if (!view->imms.empty() && view->imms.back().mem == imm.mem) {
      view->imms.pop_back();
      popped = true;
    }
    // Relaxed: see TableState::dropped; set before the view is emptied.
    orphaned = !popped || tablet.table->dropped.load(std::memory_order_relaxed);
    if (meta.entries > 0 && !orphaned) {
      view->levels[0].insert(view->levels[0].begin(),
                             std::make_shared<TableFile>(meta, obsolete_files_));
    }
    group->view = std::move(view);
    group->flushed = std::max(group->flushed, imm.last_sequence);
  });
  if (orphaned && meta.entries > 0) DiscardTableFile(meta.number);
  if (popped) tablet.table->budget->ImmutableFlushed(imm.charge);
  stat_flushes_.fetch_add(1, std::memory_order_relaxed);
  stat_flush_bytes_.fetch_add(meta.size, std::memory_order_relaxed);
  STRATA_RETURN_IF_ERROR(shown_status);
  // The manifest now says what the log no longer has to hold.
  const SequenceNumber floor = LogFloor(visible);
  {
    VersionEdit e;
    e.log_floor = floor;
    MutexLock l(&mu_);
    if (floor > catalog_.log_floor) {
      STRATA_RETURN_IF_ERROR(AppendEdit(e));
      STRATA_RETURN_IF_ERROR(catalog_.Apply(e));
    }
  }
  return log_->ReleaseBefore(floor);
}

Status EngineCore::Flush() {
  std::shared_lock<SharedGate> gate(close_mu_);
  if (closed_) return ClosedError();
  {
    MutexLock apply(&apply_mu_);
    const SequenceNumber last = visible_sequence_.load(std::memory_order_acquire);
    std::vector<LocalityGroupState*> groups;
    {
      MutexLock l(&mu_);
      for (const auto& [id, tablet] : tablets_by_id_) {
        for (const auto& g : tablet->groups) groups.push_back(g.get());
      }
    }
    for (LocalityGroupState* g : groups) {
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

Status EngineCore::ClosedError() const {
  return Status::InvalidArgument("engine " + dir_ + " is closed");
}

Status EngineCore::CreateTenant(std::string_view name, const TenantOptions& options) {
  std::shared_lock<SharedGate> gate(close_mu_);
  if (closed_) return ClosedError();
  STRATA_RETURN_IF_ERROR(ValidateName("tenant", name));
  STRATA_RETURN_IF_ERROR(ValidateTenantOptions(options));
  MutexLock l(&mu_);
  if (tenants_.count(name) != 0) {
    return Status::AlreadyExists("tenant '" + std::string(name) + "' already exists");
  }
  VersionEdit edit;
  VersionEdit::NewTenant t;
  t.id = catalog_.next_id;
  t.name = std::string(name);
  edit.tenants.push_back(t);
  // Default budgets are not written, so an engine that never sets one keeps
  // a manifest older versions can read.
  if (!(options == TenantOptions())) edit.tenant_options.push_back({t.id, options});
  edit.next_id = catalog_.next_id + 1;
  STRATA_RETURN_IF_ERROR(AppendEdit(edit));
  STRATA_RETURN_IF_ERROR(catalog_.Apply(edit));
  auto state = std::make_shared<TenantState>();
  state->id = t.id;
  state->name = t.name;
  state->budget = governor_.AddTenant(t.id, t.name, options);
  tenants_[t.name] = std::move(state);
  return Status::OK();
}

Result<std::shared_ptr<TenantState>> EngineCore::FindTenant(std::string_view name) const {
  std::shared_lock<SharedGate> gate(close_mu_);
  if (closed_) return ClosedError();
  MutexLock l(&mu_);
  auto it = tenants_.find(name);
  if (it == tenants_.end()) {
    return Status::NotFound("no tenant '" + EscapeBytes(name) + "'");
  }
  return it->second;
}

Result<std::vector<std::string>> EngineCore::ListTenants() const {
  std::shared_lock<SharedGate> gate(close_mu_);
  if (closed_) return ClosedError();
  MutexLock l(&mu_);
  std::vector<std::string> names;
  for (const auto& [name, t] : tenants_) names.push_back(name);
  return names;
}

Status EngineCore::CreateTable(const TenantState& tenant, std::string_view name,
                               const TableSchema& schema) {
  std::shared_lock<SharedGate> gate(close_mu_);
  if (closed_) return ClosedError();
  STRATA_RETURN_IF_ERROR(CheckLive(tenant));
  STRATA_RETURN_IF_ERROR(ValidateName("table", name));
  Result<Schema> resolved = Schema::FromUser(schema);
  if (!resolved.ok()) {
    return resolved.status().WithContext("table '" + std::string(name) + "'");
  }
  MutexLock l(&mu_);
  if (tables_.count({tenant.id, std::string(name)}) != 0) {
    return Status::AlreadyExists("table '" + std::string(name) + "' already exists in tenant '" +
                                 tenant.name + "'");
  }
  VersionEdit edit;
  VersionEdit::NewTable t;
  t.tenant_id = tenant.id;
  t.id = catalog_.next_id;
  t.name = std::string(name);
  t.schema = std::move(resolved.value());
  VersionEdit::NewTablet tab;
  tab.table_id = t.id;
  tab.id = catalog_.next_id + 1;
  edit.tables.push_back(t);
  edit.tablets.push_back(tab);
  edit.next_id = catalog_.next_id + 2;
  STRATA_RETURN_IF_ERROR(AppendEdit(edit));
  STRATA_RETURN_IF_ERROR(catalog_.Apply(edit));
  auto state = MakeTable(t, {tab});
  state->budget = tenant.budget;
  for (const auto& ts : state->tablets) tablets_by_id_[ts->id] = ts.get();
  tables_[{tenant.id, t.name}] = std::move(state);
  return Status::OK();
}

Result<std::shared_ptr<TableState>> EngineCore::FindTable(const TenantState& tenant,
                                                          std::string_view name) const {
  std::shared_lock<SharedGate> gate(close_mu_);
  if (closed_) return ClosedError();
  STRATA_RETURN_IF_ERROR(CheckLive(tenant));
  MutexLock l(&mu_);
  auto it = tables_.find(std::make_pair(tenant.id, std::string(name)));
  if (it == tables_.end()) {
    return Status::NotFound("no table '" + EscapeBytes(name) + "' in tenant '" + tenant.name +
                            "'");
  }
  return it->second;
}

Result<std::vector<std::string>> EngineCore::ListTables(const TenantState& tenant) const {
  std::shared_lock<SharedGate> gate(close_mu_);
  if (closed_) return ClosedError();
  STRATA_RETURN_IF_ERROR(CheckLive(tenant));
  MutexLock l(&mu_);
  std::vector<std::string> names;
  for (const auto& [key, t] : tables_) {
    if (key.first == tenant.id) names.push_back(key.second);
  }
  return names;
}

Status EngineCore::CheckLive(const TenantState& tenant) {
  // Relaxed: see TenantState::dropped.
  if (tenant.dropped.load(std::memory_order_relaxed)) {
    return Status::NotFound("tenant '" + tenant.name + "' was dropped");
  }
  return Status::OK();
}

Status EngineCore::CheckLive(const TableState& table) {
  // Relaxed: see TenantState::dropped.
  if (table.dropped.load(std::memory_order_relaxed)) {
    return Status::NotFound("table '" + table.name + "' was dropped");
  }
  return Status::OK();
}

Status EngineCore::DropTable(const TenantState& tenant, std::string_view name) {
  // Exclusive: every call in flight finishes first, so no write to the table
  // sits between its liveness check and its apply, and later calls see the
  // drop.
  std::unique_lock<SharedGate> gate(close_mu_);
  if (closed_) return ClosedError();
  STRATA_RETURN_IF_ERROR(CheckLive(tenant));
  std::vector<std::shared_ptr<TableState>> dropped;
  {
    MutexLock l(&mu_);
    auto it = tables_.find(std::make_pair(tenant.id, std::string(name)));
    if (it == tables_.end()) {
      return Status::NotFound("no table '" + EscapeBytes(name) + "' in tenant '" + tenant.name +
                              "'");
    }
    VersionEdit edit;
    edit.dropped_tables.push_back(it->second->id);
    STRATA_RETURN_IF_ERROR(AppendEdit(edit));
    STRATA_RETURN_IF_ERROR(catalog_.Apply(edit));
    dropped.push_back(it->second);
    tables_.erase(it);
    UnlinkTables(dropped);
  }
  RetireTables(dropped);
  RefreshTenantDiskUsage();
  UpdateLevel0Count();  // the table's level 0 no longer holds its tenant's writes
  return Status::OK();
}

Status EngineCore::DropTenant(std::string_view name) {
  std::unique_lock<SharedGate> gate(close_mu_);  // as in DropTable
  if (closed_) return ClosedError();
  std::shared_ptr<TenantState> tenant;
  std::vector<std::shared_ptr<TableState>> dropped;
  {
    MutexLock l(&mu_);
    auto it = tenants_.find(name);
    if (it == tenants_.end()) return Status::NotFound("no tenant '" + EscapeBytes(name) + "'");
    tenant = it->second;
    VersionEdit edit;
    for (const auto& [key, t] : tables_) {
      if (key.first == tenant->id) {
        edit.dropped_tables.push_back(t->id);
        dropped.push_back(t);
      }
    }
    edit.dropped_tenants.push_back(tenant->id);
    STRATA_RETURN_IF_ERROR(AppendEdit(edit));
    STRATA_RETURN_IF_ERROR(catalog_.Apply(edit));
    for (const auto& t : dropped) tables_.erase({tenant->id, t->name});
    UnlinkTables(dropped);
    tenants_.erase(it);
    // Relaxed: see TenantState::dropped.
    tenant->dropped.store(true, std::memory_order_relaxed);
  }
  governor_.RemoveTenant(tenant->budget.get());
  RetireTables(dropped);
  UpdateLevel0Count();  // for EngineStats::max_level0_files
  return Status::OK();
}

void EngineCore::UnlinkTables(const std::vector<std::shared_ptr<TableState>>& tables) {
  for (const auto& t : tables) {
    // Relaxed: see TenantState::dropped. Background work checks it under
    // mu_ before recording anything for the table.
    t->dropped.store(true, std::memory_order_relaxed);
    for (const auto& tablet : t->tablets) tablets_by_id_.erase(tablet->id);
    dropped_tables_.push_back(t);
  }
}

void EngineCore::RetireTables(const std::vector<std::shared_ptr<TableState>>& tables) {
  {
    MutexLock apply(&apply_mu_);  // memtable charges
    for (const auto& t : tables) {
      for (const auto& tablet : t->tablets) {
        for (const auto& g : tablet->groups) {
          MutexLock l(&g->mu);
          ReleaseMemTableCharges(g.get(), *g->view);
          for (const auto& level : g->view->levels) {
            for (const auto& f : level) f->obsolete.store(true, std::memory_order_relaxed);
          }
          // Memtables and files go as soon as no reader holds the old view.
          auto view = std::make_shared<GroupView>();
          view->mem = std::make_shared<memtable::MemTable>();
          view->levels.resize(kNumLevels);
          g->view = std::move(view);
        }
      }
    }
  }
  PurgeObsoleteFiles();
}

Status EngineCore::ValidateRowKey(std::string_view row) const {
  if (row.empty()) return Status::InvalidArgument("row key is empty");
  if (row.size() > options_.max_row_key_size) {
    return Status::InvalidArgument("row key is " + std::to_string(row.size()) +
                                   " bytes; the limit is " +
                                   std::to_string(options_.max_row_key_size));
  }
  return Status::OK();
}

Status EngineCore::ValidateMutation(const TableState& table, const Schema& schema,
                                    std::string_view row, const RowMutation& mutation) const {
  STRATA_RETURN_IF_ERROR(ValidateRowKey(row));
  if (mutation.empty()) return Status::InvalidArgument("mutation has no entries");
  for (const auto& e : mutation.entries()) {
    if (e.timestamp < kMinTimestamp || e.timestamp > kMaxTimestamp) {
      return Status::InvalidArgument("timestamp " + std::to_string(e.timestamp) +
                                     " is reserved; use 1 to 2^64-2");
    }
    // A cell must fit in one table block once encoded (the row key and
    // qualifier double their 0x00 bytes): only cells near a gigabyte come
    // close, so the exact size is computed only for them.
    constexpr uint64_t kMaxCell = sstable::TableBuilder::kMaxEntryBytes - 64;
    if (2 * uint64_t{row.size()} + 2 * e.qualifier.size() + e.value.size() > kMaxCell - 64) {
      const uint64_t encoded =
          MemcomparableLength(row) + MemcomparableLength(e.qualifier) + e.value.size() + 2 + 16;
      if (encoded > kMaxCell) {
        return Status::InvalidArgument("a cell of " + std::to_string(encoded) +
                                       " bytes (key and value, encoded) does not fit in a table "
                                       "block of at most " +
                                       std::to_string(kMaxCell) + " bytes");
      }
    }
    if (e.kind == RowMutation::Kind::kDeleteRow) continue;
    if (schema.FindFamily(e.family) == nullptr) {
      return Status::InvalidArgument("table '" + table.name + "' has no column family '" +
                                     EscapeBytes(e.family) + "'");
    }
    if (e.qualifier.size() > options_.max_qualifier_size) {
      return Status::InvalidArgument("qualifier is " + std::to_string(e.qualifier.size()) +
                                     " bytes; the limit is " +
                                     std::to_string(options_.max_qualifier_size));
    }
    if (e.value.size() > options_.max_value_size) {
      return Status::InvalidArgument("value is " + std::to_string(e.value.size()) +
                                     " bytes; the limit is " +
                                     std::to_string(options_.max_value_size));
    }
    if (e.kind != RowMutation::Kind::kPut && !e.value.empty()) {
      return Status::InvalidArgument("a delete carries no value");
    }
  }
  return Status::OK();
}

Status EngineCore::WaitToWrite(const TableState& table, std::shared_lock<SharedGate>* gate,
                               bool* released) {
  if (bg_failed_.load(std::memory_order_relaxed)) {
    // Memtables can no longer be flushed, or the manifest's tail is unknown:
    // refuse writes. Everything acknowledged is in the log.
    {
      MutexLock l(&bg_mu_);
      if (!bg_error_.ok()) return bg_error_;
    }
    MutexLock l(&manifest_error_mu_);
    return manifest_error_;
  }
  return WaitForWriteRoom(table, gate, released);
}

Status EngineCore::RecordLogSegment(uint64_t number) {
  VersionEdit e;
  e.log_segment = number;
  STRATA_RETURN_IF_ERROR(AppendEdit(e));
  return catalog_.Apply(e);
}

Status EngineCore::CheckLogSegment(const std::string& log_dir) const {
  // A point-in-time recovery takes what the log still has.
  if (catalog_.log_segment == 0 || options_.wal_recovery_mode == WalRecoveryMode::kPointInTime) {
    return Status::OK();
  }
  // The writer makes a segment's header durable before the segment is named
  // anywhere, so a bad header is no crash's doing either.
  Status s = wal::CheckSegmentFile(fs_, log_dir, catalog_.log_segment);
  if (s.IsNotFound() || s.IsCorruption()) {
    return Status::Corruption(
        std::string(s.message()) +
        ": the manifest names it as the log's newest segment, so it held "
        "the newest records (WalRecoveryMode::kPointInTime skips this check)");
  }
  return s;
}

Status EngineCore::AppendEdit(const VersionEdit& edit) {
  Status s = manifest_->Append(edit);
  if (!s.ok() && !s.IsInvalidArgument()) {
    MutexLock l(&manifest_error_mu_);
    if (manifest_error_.ok()) {
      manifest_error_ = s.WithContext("manifest write failed; reopen the engine");
    }
    bg_failed_.store(true, std::memory_order_relaxed);
  }
  return s;
}

Status EngineCore::MakePendingRow(const TableState& table, const Schema& schema,
                                  std::string_view row, const RowMutation& mutation,
                                  PendingRow* out) const {
  out->tablet = table.FindTablet(row);
  if (out->tablet == nullptr) {
    return Status::Corruption("table '" + table.name + "' has no tablet for row '" +
                              EscapeBytes(row) + "'");
  }
  out->row = row;
  out->schema = &schema;
  out->entries.clear();
  out->entries.reserve(mutation.size());
  for (const auto& e : mutation.entries()) {
    const FamilyInfo* f =
        e.kind == RowMutation::Kind::kDeleteRow ? nullptr : schema.FindFamily(e.family);
    if (e.kind != RowMutation::Kind::kDeleteRow && f == nullptr) {
      return Status::InvalidArgument("table '" + table.name + "' has no column family '" +
                                     EscapeBytes(e.family) + "'");
    }
    out->entries.push_back(CellEntry{ToCellType(e.kind), f ? f->id : kRowMarkerFamily,
                                     e.qualifier, e.timestamp, e.value});
  }
  return Status::OK();
}

Status EngineCore::WriteRows(const WriteOptions& options, const PendingRow* rows, size_t count) {
  LogRecordBuilder builder;
  for (size_t i = 0; i < count; i++) builder.AddRow(rows[i].tablet->id, rows[i].row, rows[i].entries);
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
  STRATA_RETURN_IF_ERROR(ValidateMutation(table, *schema, row, mutation));
  const uint64_t bytes = MutationPayloadBytes(row, mutation);
  STRATA_RETURN_IF_ERROR(AdmitWrite(table, bytes, MutationAddsData(mutation), &gate));
  // The admission may have let go of the close gate, and a schema change may
  // have come meanwhile: the write then goes by the new schema. From here
  // to the apply the gate is held, so the schema stays.
  if (std::shared_ptr<const Schema> now = table.schema(); now != schema) {
    schema = std::move(now);
    STRATA_RETURN_IF_ERROR(ValidateMutation(table, *schema, row, mutation));
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

Status EngineCore::ResolveFilter(const TableState& table, const Schema& schema,
                                 const RowFilter& filter, ResolvedFilter* resolved) const {
  if (filter.min_timestamp > filter.max_timestamp) {
    return Status::InvalidArgument("filter's min_timestamp is above its max_timestamp");
  }
  if (filter.max_versions == 0) return Status::InvalidArgument("filter's max_versions is 0");
  resolved->min_timestamp = filter.min_timestamp;
  resolved->max_timestamp = filter.max_timestamp;
  resolved->max_versions = filter.max_versions;
  resolved->all_families = filter.families.empty() && filter.columns.empty();
  if (resolved->all_families) return Status::OK();
  auto find = [&](const std::string& name) -> Result<uint16_t> {
    const FamilyInfo* f = schema.FindFamily(name);
    if (f == nullptr) {
      return Status::InvalidArgument("table '" + table.name + "' has no column family '" +
                                     EscapeBytes(name) + "'");
    }
    return f->id;
  };
  if (!filter.families.empty()) {
    // By id; ids of removed families are never reused, so they may exceed
    // the number of families.
    resolved->families.assign(schema.next_family_id(), false);
  }
  for (const auto& name : filter.families) {
    Result<uint16_t> id = find(name);
    if (!id.ok()) return id.status();
    resolved->families[*id] = true;
  }
  size_t qualifier_bytes = 0;
  for (const auto& column : filter.columns) qualifier_bytes += column.second.size();
  resolved->ReserveColumns(filter.columns.size(), qualifier_bytes);
  for (const auto& [family, qualifier] : filter.columns) {
    Result<uint16_t> id = find(family);
    if (!id.ok()) return id.status();
    resolved->AddColumn(*id, qualifier);
  }
  resolved->SortColumns();
  return Status::OK();
}

namespace {

// Rows of one tablet's needed groups, merged row by row.
class ScanIterator final : public RowIterator {
 public:
  struct GroupInput {
    std::shared_ptr<const GroupView> view;  // keeps memtables alive
    std::unique_ptr<InternalIterator> it;
  };

  ScanIterator(std::shared_ptr<const EngineCore> core, std::shared_ptr<TableState> table,
               std::shared_ptr<const Schema> schema, std::vector<GroupInput> inputs,
               std::string start_prefix, std::string end_prefix, ResolvedFilter filter,
               SequenceNumber snapshot)
      : core_(std::move(core)),
        table_(std::move(table)),
        schema_(std::move(schema)),
        inputs_(std::move(inputs)),
        end_prefix_(std::move(end_prefix)),
        filter_(std::move(filter)),
        snapshot_(snapshot) {
    for (auto& in : inputs_) {
      if (start_prefix.empty()) {
        in.it->SeekToFirst();
      } else {
        in.it->Seek(start_prefix);
      }
    }
    Advance();
  }

  bool Valid() const override { return valid_; }
  void Next() override { Advance(); }
  std::string_view row() const override { return row_; }
  const std::vector<Cell>& cells() const override { return cells_; }
  Status status() const override { return status_; }

 private:
  // The mc(row) prefix of the entry `it` stands on (empty when it is not valid).
  Slice PrefixOf(InternalIterator* it) {
    if (!it->Valid()) return Slice();
    Slice key = it->key();
    Slice rest = key;
    if (!SkipMemcomparable(&rest)) {
      status_ = Status::Corruption("scan met a malformed cell key " + HexBytes(key));
      return Slice();
    }
    return Slice(key.data(), key.size() - rest.size());
  }

  void Advance() {
    valid_ = false;
    while (status_.ok()) {
      std::string smallest;
      bool any = false;
      for (auto& in : inputs_) {
        if (!in.it->status().ok()) {
          status_ = in.it->status();
          return;
        }
        Slice p = PrefixOf(in.it.get());
        if (!status_.ok()) return;
        if (p.empty()) continue;
        if (!any || p.compare(smallest) < 0) smallest.assign(p.data(), p.size());
        any = true;
      }
      if (!any) return;
      if (!end_prefix_.empty() && Slice(smallest).compare(end_prefix_) >= 0) return;
      RowCells cells;
      // Inputs interleave families: cells from several are ordered by family id.
      cells.track_families = inputs_.size() > 1;
      ReadPoint at = core_->ReadPointAt(snapshot_);
      for (auto& in : inputs_) {
        if (PrefixOf(in.it.get()) != Slice(smallest)) continue;
        Status s = CollectRowFromHere(in.it.get(), smallest, &at, filter_, *schema_, &cells);
        if (!s.ok()) {
          status_ = s;
          return;
        }
      }
      // A row with records a crash may still lose is handed out once they
      // are durable.
      if (Status s = core_->AwaitDurableReads(at); !s.ok()) {
        status_ = s;
        return;
      }
      if (cells.cells.empty()) continue;  // deleted or filtered out
      Slice enc(smallest);
      if (!GetMemcomparable(&enc, &row_)) {
        status_ = Status::Corruption("scan met a malformed row key");
        return;
      }
      if (cells.track_families) cells.SortByFamily();
      cells_ = std::move(cells.cells);
      valid_ = true;
      return;
    }
  }

  const std::shared_ptr<const EngineCore> core_;  // outlives the readers the inputs hold
  const std::shared_ptr<TableState> table_;
  // The schema of the call that made the iterator: a later schema change
  // does not reach it.
  const std::shared_ptr<const Schema> schema_;
  std::vector<GroupInput> inputs_;
  const std::string end_prefix_;
  const ResolvedFilter filter_;
  const SequenceNumber snapshot_;
  bool valid_ = false;
  std::string row_;
  std::vector<Cell> cells_;
  Status status_;
};

}  // namespace

Status EngineCore::NewRangeIterator(const GroupView& view, sstable::BlockCache::TenantId tenant,
                                    const std::string& lo, const std::string& hi,
                                    std::unique_ptr<InternalIterator>* result) const {
  std::vector<std::unique_ptr<InternalIterator>> children;
  std::vector<std::shared_ptr<const void>> pins;
  children.push_back(view.mem->NewIterator());
  pins.push_back(view.mem);
  for (const auto& imm : view.imms) {
    children.push_back(imm.mem->NewIterator());
    pins.push_back(imm.mem);
  }
  for (const auto& level : view.levels) {
    for (const auto& file : level) {
      if (file->meta.largest < lo) continue;
      if (!hi.empty() && file->meta.smallest >= hi) continue;
      Result<std::shared_ptr<sstable::TableReader>> reader =
          table_cache_->Get(file->meta.number, tenant);
      if (!reader.ok()) return reader.status();
      children.push_back((*reader)->NewIterator());
      pins.push_back(std::move(reader.value()));
      pins.push_back(file);  // the file stays on disk while the iterator may read it
    }
  }
  *result = NewMergingIterator(std::move(children), std::move(pins));
  return Status::OK();
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
  STRATA_RETURN_IF_ERROR(ResolveFilter(*table, schema, spec.filter, &resolved));
  std::vector<bool> group_needed(schema.locality_groups().size(), false);
  for (const auto& f : schema.families()) {
    if (resolved.MayWantFamily(f.id)) group_needed[f.locality_group] = true;
  }
  std::string lo, hi;
  if (!spec.start_row.empty()) AppendRowPrefix(&lo, spec.start_row);
  if (!spec.end_row.empty()) AppendRowPrefix(&hi, spec.end_row);
  // Views first, then the snapshot (as in ReadRow).
  std::vector<ScanIterator::GroupInput> inputs;
  std::vector<const TabletState*> input_tablets;
  const SequenceNumber snapshot = ViewsThenSnapshot(test_hooks::after_scan_views, [&] {
    inputs.clear();
    input_tablets.clear();
    for (const auto& tablet : table->tablets) {
      if (!spec.end_row.empty() && !tablet->start_row.empty() &&
          tablet->start_row >= spec.end_row) {
        continue;
      }
      if (!tablet->end_row.empty() && tablet->end_row <= spec.start_row) continue;
      for (size_t g = 0; g < group_needed.size(); g++) {
        if (group_needed[g]) {
          inputs.push_back({tablet->groups[g]->current(), nullptr});
          input_tablets.push_back(tablet.get());
        }
      }
    }
  });
  for (size_t i = 0; i < inputs.size(); i++) {
    // Each tablet's part of [lo, hi): files shared with split siblings also
    // hold their rows, which the siblings' own inputs give.
    const TabletState& tablet = *input_tablets[i];
    std::string tlo = RowBound(tablet.start_row);
    std::string thi = RowBound(tablet.end_row);
    if (tlo < lo) tlo = lo;
    if (thi.empty() || (!hi.empty() && hi < thi)) thi = hi;
    STRATA_RETURN_IF_ERROR(
        NewRangeIterator(*inputs[i].view, table->budget->cache_id(), tlo, thi, &inputs[i].it));
    if (!tablet.start_row.empty() || !tablet.end_row.empty()) {
      inputs[i].it = std::make_unique<ClampedIterator>(std::move(inputs[i].it), tlo, thi);
    }
  }
  table->budget->CountScan();
  return std::unique_ptr<RowIterator>(new ScanIterator(shared_from_this(), table,
                                                       std::move(schema_ref), std::move(inputs),
                                                       lo, hi, std::move(resolved), snapshot));
}

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
  STRATA_RETURN_IF_ERROR(ValidateRowKey(row));
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
  STRATA_RETURN_IF_ERROR(ValidateRowKey(row));
  ResolvedFilter resolved;
  STRATA_RETURN_IF_ERROR(ResolveFilter(table, schema, filter, &resolved));
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
    STRATA_RETURN_IF_ERROR(ReadRowFromGroup(*views[g], static_cast<uint32_t>(g), table_cache_.get(),
                                            table.budget->cache_id(), prefix, &at, filter, schema,
                                            sink));
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
  for (const auto& tablet : table.tablets) {
    TabletStats t;
    t.start_row = tablet->start_row;
    t.end_row = tablet->end_row;
    t.level_files.assign(kNumLevels, 0);
    for (const auto& g : tablet->groups) {
      std::shared_ptr<const GroupView> v = g->current();
      t.memtable_bytes += v->mem->ApproximateMemoryUsage();
      for (const auto& imm : v->imms) t.memtable_bytes += imm.mem->ApproximateMemoryUsage();
      for (size_t n = 0; n < v->levels.size(); n++) {
        t.level_files[n] += v->levels[n].size();
        t.table_files += v->levels[n].size();
        for (const auto& f : v->levels[n]) t.table_bytes += f->meta.size;
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

EngineStats EngineCore::GetStats() const {
  std::shared_lock<SharedGate> gate(close_mu_);
  EngineStats s;
  std::set<uint64_t> counted;  // file numbers
  s.writes = stat_writes_.load(std::memory_order_relaxed);
  s.cells_written = stat_cells_.load(std::memory_order_relaxed);
  s.last_sequence = visible_sequence_.load(std::memory_order_acquire);
  if (log_ != nullptr) {
    wal::LogWriter::Stats ls = log_->GetStats();
    s.wal_groups = ls.groups;
    s.wal_syncs = ls.syncs;
    s.wal_bytes = ls.bytes;
    s.wal_uses_io_uring = log_->using_io_uring();
  }
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
  s.max_level0_files = max_level0_files_.load(std::memory_order_relaxed);
  s.memtable_stops = stat_memtable_stops_.load(std::memory_order_relaxed);
  s.durable_read_waits = stat_durable_waits_.load(std::memory_order_relaxed);
  s.tablet_splits = stat_splits_.load(std::memory_order_relaxed);
  s.immutable_memtables = immutable_memtables_.load(std::memory_order_relaxed);
  if (compaction_limiter_ != nullptr) {
    s.compaction_rate_limit_wait_micros = compaction_limiter_->total_wait_micros();
  }
  if (closed_) return s;
  MutexLock l(&mu_);
  for (const auto& [key, t] : tables_) {
    s.tablets += t->tablets.size();
    for (const auto& tab : t->tablets) {
      for (const auto& g : tab->groups) {
        std::shared_ptr<const GroupView> v = g->current();
        s.memtable_bytes += v->mem->ApproximateMemoryUsage();
        for (const auto& imm : v->imms) s.memtable_bytes += imm.mem->ApproximateMemoryUsage();
        for (size_t n = 0; n < v->levels.size(); n++) {
          for (const auto& f : v->levels[n]) {
            // A file shared by split tablets counts once.
            if (!counted.insert(f->meta.number).second) continue;
            s.table_files++;
            s.level_files[n]++;
            s.table_bytes += f->meta.size;
          }
        }
      }
    }
  }
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
    MutexLock l(&mu_);
    if (manifest_ != nullptr) {
      Status s = manifest_->Close();
      if (result.ok()) result = s;
    }
    // Handles may keep table states alive; their memory goes now.
    for (auto& [key, t] : tables_) {
      for (auto& tab : t->tablets) {
        for (auto& g : tab->groups) {
          MutexLock gl(&g->mu);
          g->view.reset();
        }
      }
    }
  }
  if (lock_ != nullptr) {
    Status s = fs_->UnlockFile(std::move(lock_));
    if (result.ok()) result = s;
  }
  return result;
}

}  // namespace strata::engine
