#include "engine/engine_core.h"

#include <algorithm>
#include <array>
#include <cinttypes>
#include <cstdio>
#include <set>
#include <mutex>

#include "common/clock.h"
#include "common/coding.h"
#include "engine/log_record.h"
#include "engine/merging_iterator.h"
#include "engine/point_read.h"
#include "sstable/table_builder.h"
#include "wal/log_reader.h"

namespace strata::engine {

namespace {

constexpr const char* kLockFileName = "LOCK";
constexpr const char* kLogDirName = "wal";
constexpr const char* kTableDirName = "sst";

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

}  // namespace

// A row mutation between Mutate and the log's apply function.
struct EngineCore::PendingWrite {
  const TabletState* tablet;
  Slice row;
  std::vector<CellEntry> entries;
};

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
    : dir_(std::move(dir)), options_(options), fs_(fs) {}

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
  if (options.write_buffer_size < 4096 || options.target_file_size < 4096 ||
      options.level1_max_bytes < 4096) {
    return Status::InvalidArgument(
        "write_buffer_size, target_file_size and level1_max_bytes must be at least 4096");
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
  s = core->Recover();
  if (!s.ok()) {
    core->Close().PermitUncheckedError();  // the recovery error is the one to report
    return s;
  }
  *result = std::move(core);
  return Status::OK();
}

std::shared_ptr<TableState> EngineCore::MakeTable(
    const VersionEdit::NewTable& table, const std::vector<VersionEdit::NewTablet>& tablets) const {
  auto t = std::make_shared<TableState>();
  t->id = table.id;
  t->tenant_id = table.tenant_id;
  t->name = table.name;
  t->schema = table.schema;
  for (const auto& tab : tablets) {
    auto ts = std::make_unique<TabletState>();
    ts->id = tab.id;
    ts->table = t.get();
    ts->start_row = tab.start_row;
    ts->end_row = tab.end_row;
    for (uint32_t g = 0; g < t->schema.locality_groups().size(); g++) {
      auto group = std::make_unique<LocalityGroupState>();
      group->index = g;
      group->tablet = ts.get();
      auto view = std::make_shared<GroupView>();
      view->mem = std::make_shared<memtable::MemTable>();
      view->levels.resize(kNumLevels);
      MutexLock l(&group->mu);
      group->view = std::move(view);
      ts->groups.push_back(std::move(group));
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
    tenants_[tenant.name] = std::move(t);
  }
  for (const auto& [id, table] : catalog_.tables) {
    std::vector<VersionEdit::NewTablet> tablets;
    for (const auto& [tid, tablet] : catalog_.tablets) {
      if (tablet.table_id == id) tablets.push_back(tablet);
    }
    if (tablets.empty()) {
      return Status::Corruption(dir_ + "/MANIFEST: table " + table.name + " has no tablets");
    }
    auto state = MakeTable(table, tablets);
    for (const auto& tab : state->tablets) {
      tablets_by_id_[tab->id] = tab.get();
      for (auto& g : tab->groups) {
        auto it = catalog_.files.find({tab->id, g->index});
        if (it == catalog_.files.end()) continue;
        MutexLock gl(&g->mu);
        auto view = std::make_shared<GroupView>(*g->view);
        for (size_t level = 0; level < it->second.levels.size() && level < kNumLevels; level++) {
          for (const auto& meta : it->second.levels[level]) {
            view->levels[level].push_back(std::make_shared<TableFile>(meta, obsolete_files_));
          }
        }
        g->view = std::move(view);
        g->flushed = it->second.flushed;
      }
    }
    tables_[{table.tenant_id, table.name}] = std::move(state);
  }

  STRATA_RETURN_IF_ERROR(fs_->CreateDirIfMissing(TableDir()));
  STRATA_RETURN_IF_ERROR(DeleteObsoleteFiles());
  block_cache_ = std::make_unique<sstable::BlockCache>(options_.block_cache_size);
  sstable::TableCacheOptions tco;
  tco.file_system = fs_;
  tco.dir = TableDir();
  tco.max_open_tables = options_.max_open_tables;
  tco.block_cache = block_cache_.get();
  table_cache_ = std::make_unique<sstable::TableCache>(std::move(tco));

  const std::string log_dir = JoinPath(dir_, kLogDirName);
  STRATA_RETURN_IF_ERROR(fs_->CreateDirIfMissing(log_dir));
  wal::RecoveryInfo info;
  STRATA_RETURN_IF_ERROR(wal::RecoverLog(
      fs_, log_dir, ToWalMode(options_.wal_recovery_mode), catalog_.log_floor,
      [this](SequenceNumber first, uint64_t count, Slice payload) NO_THREAD_SAFETY_ANALYSIS {
        return ReplayRecord(first, count, payload);
      },
      &info));
  // With records in the log, the writer continues right after them (the log
  // was synced before any flush recorded a later sequence); an empty log
  // continues after the last sequence the manifest saw.
  const SequenceNumber next =
      info.records > 0 || info.records_skipped > 0
          ? info.next_sequence
          : std::max<SequenceNumber>(catalog_.last_sequence + 1, 1);
  // Relaxed: no other thread can see the core yet.
  visible_sequence_.store(next - 1, std::memory_order_relaxed);

  wal::LogOptions lo;
  lo.fs = fs_;
  lo.use_io_uring = options_.use_io_uring;
  lo.segment_size = options_.wal_segment_size;
  lo.recycle_segments = options_.recycle_wal_segments;
  STRATA_RETURN_IF_ERROR(wal::LogWriter::Open(
      lo, log_dir, next,
      [this](wal::WriteRequest* const* requests, size_t n) { ApplyGroup(requests, n); }, &log_));
  flush_thread_ = std::thread([this] { FlushThread(); });
  return Status::OK();
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
    if (std::sscanf(name.c_str(), "%" SCNu64 ".sst", &number) != 1) continue;
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
  Status s = DecodeLogRecord(payload, &rows);
  if (!s.ok()) return s.WithContext("record at sequence " + std::to_string(first_sequence));
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
    if (it == tablets_by_id_.end()) {
      // Tablets are never removed yet, so a record naming an unknown one means
      // the log and the manifest disagree.
      return Status::Corruption("log record at sequence " + std::to_string(seq) +
                                " names unknown tablet " + std::to_string(r.tablet_id));
    }
    for (const auto& e : r.entries) {
      if (e.type != CellType::kDeleteRow && it->second->table->schema.FamilyById(e.family) == nullptr) {
        return Status::Corruption("log record at sequence " + std::to_string(seq) +
                                  " names unknown family id " + std::to_string(e.family));
      }
    }
    InsertEntries(*it->second, r.row, r.entries, seq, /*replay=*/true, nullptr);
    seq += r.entries.size();
  }
  return Status::OK();
}

void EngineCore::InsertEntries(const TabletState& tablet, const Slice& row,
                               const std::vector<CellEntry>& entries,
                               SequenceNumber first_sequence, bool replay,
                               std::vector<LocalityGroupState*>* touched) {
  const Schema& schema = tablet.table->schema;
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
  for (const auto& e : entries) {
    if (e.type == CellType::kDeleteRow) {
      // A row marker goes to every group, so each group's reads see it.
      for (const auto& g : tablet.groups) insert(g.get(), seq, e, kRowMarkerFamily);
    } else {
      const FamilyInfo* f = schema.FamilyById(e.family);
      insert(tablet.groups[f->locality_group].get(), seq, e, e.family);
    }
    seq++;
  }
}

void EngineCore::ApplyGroup(wal::WriteRequest* const* requests, size_t n) {
  MutexLock apply(&apply_mu_);
  SequenceNumber last = 0;
  uint64_t cells = 0;
  std::vector<LocalityGroupState*> touched;
  for (size_t i = 0; i < n; i++) {
    const auto* w = static_cast<const PendingWrite*>(requests[i]->arg);
    InsertEntries(*w->tablet, w->row, w->entries, requests[i]->first_sequence,
                  /*replay=*/false, &touched);
    last = requests[i]->first_sequence + requests[i]->sequence_count - 1;
    cells += w->entries.size();
  }
  for (LocalityGroupState* g : touched) {
    if (g->current()->mem->ApproximateMemoryUsage() >= options_.write_buffer_size) {
      SwitchMemTable(g, last);
    }
  }
  visible_sequence_.store(last, std::memory_order_release);
  stat_writes_.fetch_add(n, std::memory_order_relaxed);
  stat_cells_.fetch_add(cells, std::memory_order_relaxed);
}

void EngineCore::SwitchMemTable(LocalityGroupState* group, SequenceNumber last_sequence) {
  {
    MutexLock l(&group->mu);
    auto view = std::make_shared<GroupView>(*group->view);
    view->imms.insert(view->imms.begin(), ImmutableMemTable{view->mem, last_sequence});
    view->mem = std::make_shared<memtable::MemTable>();
    group->view = std::move(view);
  }
  MutexLock l(&bg_mu_);
  flush_queue_.push_back(group);
  bg_cv_.SignalAll();
}

void EngineCore::FlushThread() {
  MutexLock l(&bg_mu_);
  while (true) {
    if (bg_stop_) return;
    if (!flush_queue_.empty()) {
      LocalityGroupState* group = flush_queue_.front();
      flush_queue_.pop_front();
      flushes_running_++;
      bg_mu_.Unlock();
      Status s = FlushOldest(group);
      PurgeObsoleteFiles();
      UpdateLevel0Count();
      bg_mu_.Lock();
      flushes_running_--;
      if (!s.ok() && bg_error_.ok()) {
        bg_error_ = s.WithContext("background flush failed; reopen the engine");
        bg_failed_.store(true, std::memory_order_relaxed);
      }
      bg_cv_.SignalAll();
      continue;
    }
    CompactionJob job;
    if (bg_error_.ok() && PickCompaction(&job, manual_compaction_)) {
      bg_mu_.Unlock();
      Status s = RunCompaction(&job);
      job = CompactionJob();  // drop the input references before purging
      PurgeObsoleteFiles();
      UpdateLevel0Count();
      bg_mu_.Lock();
      if (!s.ok() && bg_error_.ok()) {
        bg_error_ = s.WithContext("background compaction failed; reopen the engine");
        bg_failed_.store(true, std::memory_order_relaxed);
      }
      bg_cv_.SignalAll();
      continue;
    }
    if (manual_compaction_) {
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

// Whether [smallest, largest] of `f` overlaps [lo, hi].
bool Overlaps(const FileMeta& f, const std::string& lo, const std::string& hi) {
  return !(f.largest < lo || f.smallest > hi);
}

}  // namespace

bool EngineCore::PickCompaction(CompactionJob* job, bool force) {
  std::vector<LocalityGroupState*> groups;
  {
    MutexLock l(&mu_);
    for (const auto& [id, tablet] : tablets_by_id_) {
      for (const auto& g : tablet->groups) groups.push_back(g.get());
    }
  }
  for (LocalityGroupState* g : groups) {
    std::shared_ptr<const GroupView> view = g->current();
    int level = -1;
    const int trigger = force ? 1 : options_.level0_compaction_trigger;
    if (static_cast<int>(view->levels[0].size()) >= trigger) {
      level = 0;
    } else {
      uint64_t max_bytes = options_.level1_max_bytes;
      for (int n = 1; n < kNumLevels - 1; n++, max_bytes *= 10) {
        if (LevelBytes(view->levels[n]) > max_bytes) {
          level = n;
          break;
        }
      }
    }
    if (level < 0) continue;
    job->group = g;
    job->level = level;
    if (level == 0) {
      job->inputs[0] = view->levels[0];
    } else {
      // The file with the smallest keys; the level's files take turns as
      // later compactions push them down.
      job->inputs[0] = {view->levels[level].front()};
    }
    std::string lo = job->inputs[0].front()->meta.smallest;
    std::string hi = job->inputs[0].front()->meta.largest;
    for (const auto& f : job->inputs[0]) {
      lo = std::min(lo, f->meta.smallest);
      hi = std::max(hi, f->meta.largest);
    }
    for (const auto& f : view->levels[level + 1]) {
      if (Overlaps(f->meta, lo, hi)) job->inputs[1].push_back(f);
    }
    for (const auto& f : job->inputs[1]) {
      lo = std::min(lo, f->meta.smallest);
      hi = std::max(hi, f->meta.largest);
    }
    job->bottommost = true;
    for (int n = level + 2; n < kNumLevels && job->bottommost; n++) {
      for (const auto& f : view->levels[n]) {
        if (Overlaps(f->meta, lo, hi)) job->bottommost = false;
      }
    }
    // A file alone, with nothing to merge with below, needs no rewrite —
    // unless a filter must see its data, or it carries delete markers to the
    // bottom (checked in RunCompaction), where a rewrite drops them.
    job->trivial_move = job->inputs[0].size() == 1 && job->inputs[1].empty() &&
                        options_.compaction_filter == nullptr;
    return true;
  }
  return false;
}

Status EngineCore::RunCompaction(CompactionJob* job) {
  LocalityGroupState* group = job->group;
  const TabletState& tablet = *group->tablet;
  const int out_level = job->level + 1;
  if (job->trivial_move && job->bottommost) {
    // At the bottom a rewrite drops delete markers (and what they hide in
    // the same file); move only files that hold none.
    Result<std::shared_ptr<sstable::TableReader>> reader =
        table_cache_->Get(job->inputs[0].front()->meta.number);
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
      STRATA_RETURN_IF_ERROR(manifest_->Append(edit));
      STRATA_RETURN_IF_ERROR(catalog_.Apply(edit));
    }
    MutexLock l(&group->mu);
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
      Result<std::shared_ptr<sstable::TableReader>> reader = table_cache_->Get(f->meta.number);
      if (!reader.ok()) return reader.status();
      children.push_back((*reader)->NewIterator());
      pins.push_back(std::move(reader.value()));
    }
  }
  std::unique_ptr<InternalIterator> input = NewMergingIterator(std::move(children), std::move(pins));

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
    for (const auto& m : outputs) {
      fs_->DeleteFile(sstable::TableFileName(TableDir(), m.number)).PermitUncheckedError();
    }
  };
  auto emit = [&](const Slice& key, const Slice& value) -> Status {
    if (builder == nullptr) {
      meta = FileMeta();
      {
        MutexLock l(&mu_);
        meta.number = catalog_.next_id++;
      }
      path = sstable::TableFileName(TableDir(), meta.number);
      STRATA_RETURN_IF_ERROR(fs_->NewWritableFile(path, FileOpenOptions(), &file));
      sstable::TableBuilderOptions bo = sstable::TableBuilderOptions::FromLocalityGroup(
          tablet.table->schema.locality_groups()[group->index]);
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
    if (builder->FileSize() >= options_.target_file_size) {
      STRATA_RETURN_IF_ERROR(finish_output());
      path.clear();
    }
    return Status::OK();
  };
  CompactionFilter::Context ctx;
  ctx.tablet_id = tablet.id;
  ctx.table = tablet.table->name;
  ctx.locality_group = tablet.table->schema.locality_groups()[group->index].name;
  ctx.bottommost = job->bottommost;
  CompactionStream stream(job->bottommost, options_.compaction_filter.get(), ctx,
                          &tablet.table->schema, emit);
  Status s;
  for (input->SeekToFirst(); input->Valid() && s.ok(); input->Next()) {
    s = stream.Add(input->key(), input->value());
  }
  if (s.ok()) s = input->status();
  if (s.ok()) s = stream.Finish();
  if (s.ok()) s = finish_output();
  if (s.ok()) s = fs_->SyncDir(TableDir());
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
  {
    MutexLock l(&mu_);
    edit.next_id = catalog_.next_id;
    s = manifest_->Append(edit);
    if (s.ok()) s = catalog_.Apply(edit);
  }
  if (!s.ok()) {
    path.clear();
    cleanup();
    return s;
  }
  {
    MutexLock l(&group->mu);
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
  }
  stat_compactions_.fetch_add(1, std::memory_order_relaxed);
  uint64_t read = 0, written = 0;
  for (const auto& inputs : job->inputs) {
    for (const auto& f : inputs) read += f->meta.size;
  }
  for (const auto& m : outputs) written += m.size;
  stat_compaction_read_.fetch_add(read, std::memory_order_relaxed);
  stat_compaction_written_.fetch_add(written, std::memory_order_relaxed);
  return Status::OK();
}

void EngineCore::UpdateLevel0Count() {
  uint64_t most = 0;
  {
    MutexLock l(&mu_);
    for (const auto& [id, tablet] : tablets_by_id_) {
      for (const auto& g : tablet->groups) {
        most = std::max<uint64_t>(most, g->current()->levels[0].size());
      }
    }
  }
  max_level0_files_.store(most, std::memory_order_relaxed);
  MutexLock l(&bg_mu_);
  bg_cv_.SignalAll();
}

Status EngineCore::WaitForLevel0Room() {
  const uint64_t files = max_level0_files_.load(std::memory_order_relaxed);
  if (files < static_cast<uint64_t>(options_.level0_slowdown_trigger)) return Status::OK();
  Clock* clock = Clock::Default();
  const uint64_t start = clock->NowNanos();
  if (files < static_cast<uint64_t>(options_.level0_stop_trigger)) {
    stat_slowdowns_.fetch_add(1, std::memory_order_relaxed);
    clock->SleepMicros(1000);
  } else {
    stat_stops_.fetch_add(1, std::memory_order_relaxed);
    MutexLock l(&bg_mu_);
    while (bg_error_.ok() && !bg_stop_ &&
           max_level0_files_.load(std::memory_order_relaxed) >=
               static_cast<uint64_t>(options_.level0_stop_trigger)) {
      bg_cv_.WaitFor(100 * 1000);
    }
    if (!bg_error_.ok()) return bg_error_;
  }
  stat_stall_micros_.fetch_add((clock->NowNanos() - start) / 1000, std::memory_order_relaxed);
  return Status::OK();
}

void EngineCore::PurgeObsoleteFiles() {
  for (uint64_t number : obsolete_files_->Take()) {
    table_cache_->Evict(number);
    block_cache_->EraseFile(number);
    // Best effort: a file left behind is deleted on the next open.
    fs_->DeleteFile(sstable::TableFileName(TableDir(), number)).PermitUncheckedError();
  }
}

Status EngineCore::WriteTableFile(const TabletState& tablet, uint32_t group, InternalIterator* it,
                                  FileMeta* meta) {
  {
    MutexLock l(&mu_);
    meta->number = catalog_.next_id++;
  }
  const std::string path = sstable::TableFileName(TableDir(), meta->number);
  std::unique_ptr<WritableFile> file;
  STRATA_RETURN_IF_ERROR(fs_->NewWritableFile(path, FileOpenOptions(), &file));
  sstable::TableBuilderOptions bo = sstable::TableBuilderOptions::FromLocalityGroup(
      tablet.table->schema.locality_groups()[group]);
  bo.table_id = tablet.table->id;
  bo.tablet_id = tablet.id;
  bo.locality_group_id = group;
  bo.file_number = meta->number;
  sstable::TableBuilder builder(bo, file.get(), path);
  Status s;
  meta->min_sequence = kMaxSequenceNumber;
  meta->max_sequence = 0;
  for (it->SeekToFirst(); it->Valid() && s.ok(); it->Next()) {
    const Slice key = it->key();
    if (meta->entries == 0) meta->smallest.assign(key.data(), key.size());
    meta->largest.assign(key.data(), key.size());
    const SequenceNumber seq = CellKeySequence(key);
    meta->min_sequence = std::min(meta->min_sequence, seq);
    meta->max_sequence = std::max(meta->max_sequence, seq);
    meta->entries++;
    s = builder.Add(key, it->value());
  }
  if (s.ok()) s = it->status();
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
  {
    MutexLock l(&group->mu);
    if (group->view->imms.empty()) return Status::OK();
    imm = group->view->imms.back();
  }
  const TabletState& tablet = *group->tablet;
  FileMeta meta;
  if (imm.mem->num_entries() > 0) {
    std::unique_ptr<InternalIterator> it = imm.mem->NewIterator();
    STRATA_RETURN_IF_ERROR(WriteTableFile(tablet, group->index, it.get(), &meta));
  }
  // Everything the manifest is about to call flushed must be durable in the
  // log too, or a crash could leave the log ending before the manifest's
  // last sequence.
  STRATA_RETURN_IF_ERROR(log_->Sync());
  VersionEdit edit;
  if (meta.entries > 0) edit.new_files.push_back({tablet.id, group->index, 0, meta});
  edit.flushed.push_back({tablet.id, group->index, imm.last_sequence});
  const SequenceNumber visible = visible_sequence_.load(std::memory_order_acquire);
  edit.last_sequence = visible;
  {
    MutexLock l(&mu_);
    edit.next_id = catalog_.next_id;
    STRATA_RETURN_IF_ERROR(manifest_->Append(edit));
    STRATA_RETURN_IF_ERROR(catalog_.Apply(edit));
  }
  {
    MutexLock l(&group->mu);
    auto view = std::make_shared<GroupView>(*group->view);
    view->imms.pop_back();
    if (meta.entries > 0) {
      view->levels[0].insert(view->levels[0].begin(),
                             std::make_shared<TableFile>(meta, obsolete_files_));
    }
    group->view = std::move(view);
    group->flushed = std::max(group->flushed, imm.last_sequence);
  }
  stat_flushes_.fetch_add(1, std::memory_order_relaxed);
  stat_flush_bytes_.fetch_add(meta.size, std::memory_order_relaxed);
  // The manifest now says what the log no longer has to hold.
  const SequenceNumber floor = LogFloor(visible);
  {
    VersionEdit e;
    e.log_floor = floor;
    MutexLock l(&mu_);
    if (floor > catalog_.log_floor) {
      STRATA_RETURN_IF_ERROR(manifest_->Append(e));
      STRATA_RETURN_IF_ERROR(catalog_.Apply(e));
    }
  }
  return log_->ReleaseBefore(floor);
}

Status EngineCore::Flush() {
  std::shared_lock<std::shared_mutex> gate(close_mu_);
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
  MutexLock l(&bg_mu_);
  while (bg_error_.ok() && (!flush_queue_.empty() || flushes_running_ > 0)) bg_cv_.Wait();
  return bg_error_;
}

Status EngineCore::Compact() {
  STRATA_RETURN_IF_ERROR(Flush());
  std::shared_lock<std::shared_mutex> gate(close_mu_);
  if (closed_) return ClosedError();
  MutexLock l(&bg_mu_);
  manual_compaction_ = true;
  bg_cv_.SignalAll();
  while (bg_error_.ok() && manual_compaction_) bg_cv_.Wait();
  return bg_error_;
}

Status EngineCore::ClosedError() const {
  return Status::InvalidArgument("engine " + dir_ + " is closed");
}

Status EngineCore::CreateTenant(std::string_view name) {
  std::shared_lock<std::shared_mutex> gate(close_mu_);
  if (closed_) return ClosedError();
  STRATA_RETURN_IF_ERROR(ValidateName("tenant", name));
  MutexLock l(&mu_);
  if (tenants_.count(name) != 0) {
    return Status::AlreadyExists("tenant '" + std::string(name) + "' already exists");
  }
  VersionEdit edit;
  VersionEdit::NewTenant t;
  t.id = catalog_.next_id;
  t.name = std::string(name);
  edit.tenants.push_back(t);
  edit.next_id = catalog_.next_id + 1;
  STRATA_RETURN_IF_ERROR(manifest_->Append(edit));
  STRATA_RETURN_IF_ERROR(catalog_.Apply(edit));
  auto state = std::make_shared<TenantState>();
  state->id = t.id;
  state->name = t.name;
  tenants_[t.name] = std::move(state);
  return Status::OK();
}

Result<std::shared_ptr<TenantState>> EngineCore::FindTenant(std::string_view name) const {
  std::shared_lock<std::shared_mutex> gate(close_mu_);
  if (closed_) return ClosedError();
  MutexLock l(&mu_);
  auto it = tenants_.find(name);
  if (it == tenants_.end()) {
    return Status::NotFound("no tenant '" + EscapeBytes(name) + "'");
  }
  return it->second;
}

Result<std::vector<std::string>> EngineCore::ListTenants() const {
  std::shared_lock<std::shared_mutex> gate(close_mu_);
  if (closed_) return ClosedError();
  MutexLock l(&mu_);
  std::vector<std::string> names;
  for (const auto& [name, t] : tenants_) names.push_back(name);
  return names;
}

Status EngineCore::CreateTable(const TenantState& tenant, std::string_view name,
                               const TableSchema& schema) {
  std::shared_lock<std::shared_mutex> gate(close_mu_);
  if (closed_) return ClosedError();
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
  STRATA_RETURN_IF_ERROR(manifest_->Append(edit));
  STRATA_RETURN_IF_ERROR(catalog_.Apply(edit));
  auto state = MakeTable(t, {tab});
  for (const auto& ts : state->tablets) tablets_by_id_[ts->id] = ts.get();
  tables_[{tenant.id, t.name}] = std::move(state);
  return Status::OK();
}

Result<std::shared_ptr<TableState>> EngineCore::FindTable(const TenantState& tenant,
                                                          std::string_view name) const {
  std::shared_lock<std::shared_mutex> gate(close_mu_);
  if (closed_) return ClosedError();
  MutexLock l(&mu_);
  auto it = tables_.find(std::make_pair(tenant.id, std::string(name)));
  if (it == tables_.end()) {
    return Status::NotFound("no table '" + EscapeBytes(name) + "' in tenant '" + tenant.name +
                            "'");
  }
  return it->second;
}

Result<std::vector<std::string>> EngineCore::ListTables(const TenantState& tenant) const {
  std::shared_lock<std::shared_mutex> gate(close_mu_);
  if (closed_) return ClosedError();
  MutexLock l(&mu_);
  std::vector<std::string> names;
  for (const auto& [key, t] : tables_) {
    if (key.first == tenant.id) names.push_back(key.second);
  }
  return names;
}

Status EngineCore::ValidateMutation(const TableState& table, std::string_view row,
                                    const RowMutation& mutation) const {
  if (row.empty()) return Status::InvalidArgument("row key is empty");
  if (row.size() > options_.max_row_key_size) {
    return Status::InvalidArgument("row key is " + std::to_string(row.size()) +
                                   " bytes; the limit is " +
                                   std::to_string(options_.max_row_key_size));
  }
  if (mutation.empty()) return Status::InvalidArgument("mutation has no entries");
  for (const auto& e : mutation.entries()) {
    if (e.timestamp < kMinTimestamp || e.timestamp > kMaxTimestamp) {
      return Status::InvalidArgument("timestamp " + std::to_string(e.timestamp) +
                                     " is reserved; use 1 to 2^64-2");
    }
    if (e.kind == RowMutation::Kind::kDeleteRow) continue;
    if (table.schema.FindFamily(e.family) == nullptr) {
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

Status EngineCore::Mutate(const TableState& table, const WriteOptions& options,
                          std::string_view row, const RowMutation& mutation) {
  std::shared_lock<std::shared_mutex> gate(close_mu_);
  if (closed_) return ClosedError();
  STRATA_RETURN_IF_ERROR(ValidateMutation(table, row, mutation));
  if (bg_failed_.load(std::memory_order_relaxed)) {
    // Memtables can no longer be flushed: refuse writes rather than grow
    // memory without bound. Everything acknowledged is in the log.
    MutexLock l(&bg_mu_);
    return bg_error_;
  }
  STRATA_RETURN_IF_ERROR(WaitForLevel0Room());
  PendingWrite w;
  w.tablet = table.FindTablet(row);
  if (w.tablet == nullptr) {
    return Status::Corruption("table '" + table.name + "' has no tablet for row '" +
                              EscapeBytes(row) + "'");
  }
  w.row = row;
  w.entries.reserve(mutation.size());
  for (const auto& e : mutation.entries()) {
    const FamilyInfo* f = e.kind == RowMutation::Kind::kDeleteRow
                              ? nullptr
                              : table.schema.FindFamily(e.family);
    w.entries.push_back(CellEntry{ToCellType(e.kind), f ? f->id : kRowMarkerFamily, e.qualifier,
                                  e.timestamp, e.value});
  }
  LogRecordBuilder builder;
  builder.AddRow(w.tablet->id, w.row, w.entries);
  wal::WriteRequest req;
  req.payload = builder.Finish();
  req.sequence_count = w.entries.size();
  req.sync = options.sync;
  req.arg = &w;
  return log_->Write(&req);
}

Status EngineCore::ResolveFilter(const TableState& table, const RowFilter& filter,
                                 ResolvedFilter* resolved) const {
  if (filter.min_timestamp > filter.max_timestamp) {
    return Status::InvalidArgument("filter's min_timestamp is above its max_timestamp");
  }
  if (filter.max_versions == 0) return Status::InvalidArgument("filter's max_versions is 0");
  resolved->min_timestamp = filter.min_timestamp;
  resolved->max_timestamp = filter.max_timestamp;
  resolved->max_versions = filter.max_versions;
  resolved->all_families = filter.families.empty() && filter.columns.empty();
  if (resolved->all_families) return Status::OK();
  resolved->families.assign(table.schema.families().size() + 1, false);
  auto find = [&](const std::string& name) -> Result<uint16_t> {
    const FamilyInfo* f = table.schema.FindFamily(name);
    if (f == nullptr) {
      return Status::InvalidArgument("table '" + table.name + "' has no column family '" +
                                     EscapeBytes(name) + "'");
    }
    return f->id;
  };
  for (const auto& name : filter.families) {
    Result<uint16_t> id = find(name);
    if (!id.ok()) return id.status();
    resolved->families[*id] = true;
  }
  for (const auto& [family, qualifier] : filter.columns) {
    Result<uint16_t> id = find(family);
    if (!id.ok()) return id.status();
    resolved->columns.insert({*id, qualifier});
  }
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
               std::vector<GroupInput> inputs, std::string start_prefix, std::string end_prefix,
               ResolvedFilter filter, SequenceNumber snapshot)
      : core_(std::move(core)),
        table_(std::move(table)),
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
      for (auto& in : inputs_) {
        if (PrefixOf(in.it.get()) != Slice(smallest)) continue;
        Status s = CollectRowFromHere(in.it.get(), smallest, snapshot_, filter_, table_->schema,
                                      &cells);
        if (!s.ok()) {
          status_ = s;
          return;
        }
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

Status EngineCore::NewRangeIterator(const GroupView& view, const std::string& lo,
                                    const std::string& hi,
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
      Result<std::shared_ptr<sstable::TableReader>> reader = table_cache_->Get(file->meta.number);
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
  std::shared_lock<std::shared_mutex> gate(close_mu_);
  if (closed_) return ClosedError();
  if (!spec.end_row.empty() && spec.start_row > spec.end_row) {
    return Status::InvalidArgument("scan's start_row is after its end_row");
  }
  ResolvedFilter resolved;
  STRATA_RETURN_IF_ERROR(ResolveFilter(*table, spec.filter, &resolved));
  const Schema& schema = table->schema;
  std::vector<bool> group_needed(schema.locality_groups().size(), false);
  for (const auto& f : schema.families()) {
    if (resolved.MayWantFamily(f.id)) group_needed[f.locality_group] = true;
  }
  std::string lo, hi;
  if (!spec.start_row.empty()) AppendRowPrefix(&lo, spec.start_row);
  if (!spec.end_row.empty()) AppendRowPrefix(&hi, spec.end_row);
  // Views first, then the snapshot (as in ReadRow).
  std::vector<ScanIterator::GroupInput> inputs;
  for (const auto& tablet : table->tablets) {
    if (!spec.end_row.empty() && !tablet->start_row.empty() && tablet->start_row >= spec.end_row) {
      continue;
    }
    if (!tablet->end_row.empty() && tablet->end_row <= spec.start_row) continue;
    for (size_t g = 0; g < group_needed.size(); g++) {
      if (group_needed[g]) inputs.push_back({tablet->groups[g]->current(), nullptr});
    }
  }
  const SequenceNumber snapshot = visible_sequence_.load(std::memory_order_acquire);
  for (auto& in : inputs) {
    STRATA_RETURN_IF_ERROR(NewRangeIterator(*in.view, lo, hi, &in.it));
  }
  return std::unique_ptr<RowIterator>(new ScanIterator(shared_from_this(), table,
                                                       std::move(inputs), lo, hi,
                                                       std::move(resolved), snapshot));
}

Result<std::vector<Cell>> EngineCore::ReadRow(const TableState& table, const ReadOptions& options,
                                              std::string_view row,
                                              const RowFilter& filter) const {
  std::shared_lock<std::shared_mutex> gate(close_mu_);
  if (closed_) return ClosedError();
  if (row.empty()) return Status::InvalidArgument("row key is empty");
  if (row.size() > options_.max_row_key_size) {
    return Status::InvalidArgument("row key is " + std::to_string(row.size()) +
                                   " bytes; the limit is " +
                                   std::to_string(options_.max_row_key_size));
  }
  ResolvedFilter resolved;
  STRATA_RETURN_IF_ERROR(ResolveFilter(table, filter, &resolved));
  const TabletState* tablet = table.FindTablet(row);
  if (tablet == nullptr) return std::vector<Cell>();

  // Only the groups that hold a wanted family are read. Views first, then
  // the snapshot: every file and memtable entry a view holds was visible
  // before the snapshot was read. Most tables have few groups, whose views
  // are held without allocating.
  const Schema& schema = table.schema;
  const size_t num_groups = schema.locality_groups().size();
  std::array<std::shared_ptr<const GroupView>, 4> few_views;
  std::vector<std::shared_ptr<const GroupView>> many_views;
  std::shared_ptr<const GroupView>* views = few_views.data();
  if (num_groups > few_views.size()) {
    many_views.resize(num_groups);
    views = many_views.data();
  }
  size_t groups_read = 0;
  for (const auto& f : schema.families()) {
    if (views[f.locality_group] == nullptr && resolved.MayWantFamily(f.id)) {
      views[f.locality_group] = tablet->groups[f.locality_group]->current();
      groups_read++;
    }
  }
  const SequenceNumber snapshot = visible_sequence_.load(std::memory_order_acquire);
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

  RowCells out;
  // Groups interleave families: cells from several are ordered by family id.
  out.track_families = groups_read > 1;
  for (size_t g = 0; g < num_groups; g++) {
    if (!views[g]) continue;
    STRATA_RETURN_IF_ERROR(ReadRowFromGroup(*views[g], table_cache_.get(), prefix, snapshot,
                                            resolved, schema, &out));
  }
  if (out.track_families) out.SortByFamily();
  return std::move(out.cells);
}

EngineStats EngineCore::GetStats() const {
  std::shared_lock<std::shared_mutex> gate(close_mu_);
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
  if (closed_) return s;
  MutexLock l(&mu_);
  for (const auto& [key, t] : tables_) {
    for (const auto& tab : t->tablets) {
      for (const auto& g : tab->groups) {
        std::shared_ptr<const GroupView> v = g->current();
        s.memtable_bytes += v->mem->ApproximateMemoryUsage();
        for (const auto& imm : v->imms) s.memtable_bytes += imm.mem->ApproximateMemoryUsage();
        for (size_t n = 0; n < v->levels.size(); n++) {
          s.table_files += v->levels[n].size();
          s.level_files[n] += v->levels[n].size();
          for (const auto& f : v->levels[n]) s.table_bytes += f->meta.size;
        }
      }
    }
  }
  return s;
}

Status EngineCore::Close() {
  std::unique_lock<std::shared_mutex> gate(close_mu_);
  if (closed_) return Status::OK();
  closed_ = true;
  Status result;
  if (flush_thread_.joinable()) {
    {
      MutexLock l(&bg_mu_);
      bg_stop_ = true;
      bg_cv_.SignalAll();
    }
    flush_thread_.join();
  }
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
