// Tablet splits: a tablet whose SSTables have grown past tablet_split_size
// becomes two tablets that divide its row range at a row boundary and share
// its files until compactions rewrite them.
//
// The steps (SplitTablet):
//   1. Pick a row near the middle of the tablet's largest locality group.
//   2. Flush its memtables while writes go on.
//   3. With the close gate held exclusively (no call in flight, so no write
//      between its tablet lookup and its apply), flush what arrived during
//      step 2, then, under mu_, record one manifest edit — the parent
//      retired, two new tablets, the parent's files (as the catalog lists
//      them) under each new tablet whose rows they overlap, the flushed
//      sequences — and swap the new tablets in.
// Compactions of the parent may run on: one that records its result before
// the edit changed the catalog the edit copies (its inputs then go once no
// view holds them); one that would record after it finds the parent retired
// and throws its output away. Since the parent was wholly flushed, log
// replay skips its records; a crash before the edit leaves the parent as it
// was, after it the children.
#include <algorithm>

#include "common/cell_key.h"
#include "common/coding.h"
#include "engine/engine_core.h"

namespace strata::engine {

namespace {

// The encoded row at the front of a cell key (see RowOf in engine_core.cc).
Slice EncodedRow(const Slice& key) {
  Slice rest = key;
  if (!SkipMemcomparable(&rest)) return key;
  return Slice(key.data(), key.size() - rest.size());
}

// Whether the file holds keys of rows in [start, end) (empty: unbounded).
bool FileMeetsRows(const FileMeta& f, const std::string& start, const std::string& end) {
  std::string lo, hi;
  if (!start.empty()) AppendRowPrefix(&lo, start);
  if (!end.empty()) AppendRowPrefix(&hi, end);
  return (lo.empty() || EncodedRow(f.largest).compare(Slice(lo)) >= 0) &&
         (hi.empty() || EncodedRow(f.smallest).compare(Slice(hi)) < 0);
}

// Whether every key of the file is a row in [start, end) (empty: unbounded).
bool FileWithinRows(const FileMeta& f, const std::string& start, const std::string& end) {
  std::string lo, hi;
  if (!start.empty()) AppendRowPrefix(&lo, start);
  if (!end.empty()) AppendRowPrefix(&hi, end);
  return (lo.empty() || EncodedRow(f.smallest).compare(Slice(lo)) >= 0) &&
         (hi.empty() || EncodedRow(f.largest).compare(Slice(hi)) < 0);
}

bool InsideTablet(const std::string& row, const TabletState& t) {
  return row > t.start_row && (t.end_row.empty() || row < t.end_row);
}

}  // namespace

uint64_t EngineCore::TabletBytes(const TabletState& tablet) {
  // Files still shared with a split sibling do not count: their size says
  // nothing about this tablet's half, and counting them whole would split
  // the new tablets again at once. Compactions soon rewrite them into files
  // of the tablet's own.
  uint64_t bytes = 0;
  for (const auto& g : tablet.groups) {
    std::shared_ptr<const GroupView> v = g->current();
    for (const auto& level : v->levels) {
      for (const auto& f : level) {
        if (FileWithinRows(f->meta, tablet.start_row, tablet.end_row)) bytes += f->meta.size;
      }
    }
  }
  return bytes;
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
      {
        MutexLock cl(&mu_);
        for (const auto& [id, tablet] : tablets_by_id_) {
          const uint64_t bytes = TabletBytes(*tablet);
          if (bytes <= options_.tablet_split_size || bytes <= candidate_bytes) continue;
          auto it = stuck.find(tablet);
          if (it != stuck.end() && bytes < it->second + it->second / 2) continue;
          candidate = tablet;
          candidate_bytes = bytes;
        }
      }
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

bool EngineCore::PickSplitRow(const TabletState& tablet, std::string* row) {
  // The weighted middle of the largest group: every level counts, and
  // level-0 files overlap (with keys written in no order each spans nearly
  // the whole tablet), so no order of files says where half the bytes lie.
  // Each file's index does: where the block that may hold a row's first key
  // lies tells about how many of the file's bytes come before the row.
  // Candidate rows are real rows found at evenly spaced blocks of each file;
  // the one with about half of the tablet's bytes before it wins.
  const LocalityGroupState* largest = nullptr;
  uint64_t largest_bytes = 0;
  for (const LocalityGroupState* g : GroupsOf(tablet)) {
    std::shared_ptr<const GroupView> v = g->current();
    uint64_t bytes = 0;
    for (const auto& level : v->levels) {
      for (const auto& f : level) bytes += f->meta.size;
    }
    if (bytes > largest_bytes) {
      largest = g;
      largest_bytes = bytes;
    }
  }
  if (largest == nullptr) return false;
  std::shared_ptr<const GroupView> view = largest->current();

  // Each file's data blocks with the byte range holding the tablet's rows (a
  // file shared with a split sibling holds the sibling's too). A row's
  // position in a file is taken as the middle of the block that may hold its
  // first key.
  struct Source {
    std::shared_ptr<sstable::TableReader> reader;
    std::vector<sstable::TableReader::BlockInfo> blocks;  // data blocks only
    uint64_t lo = 0, hi = 0;
    uint64_t PositionOf(const std::string& row_key) const {
      std::string key;
      AppendRowPrefix(&key, row_key);
      auto b = std::lower_bound(blocks.begin(), blocks.end(), Slice(key),
                                [](const sstable::TableReader::BlockInfo& info, const Slice& k) {
                                  return Slice(info.separator).compare(k) < 0;
                                });
      return b == blocks.end() ? reader->DataEnd() : b->handle.offset + b->handle.size / 2;
    }
  };
  std::vector<Source> sources;
  uint64_t total = 0;
  for (const auto& level : view->levels) {
    for (const auto& f : level) {
      Result<std::shared_ptr<sstable::TableReader>> reader =
          table_cache_->Get(f->meta.number, tablet.table->budget->cache_id());
      if (!reader.ok()) return false;
      Source src{std::move(*reader)};
      if (!src.reader->ListBlocks(&src.blocks).ok()) return false;
      std::erase_if(src.blocks, [](const auto& b) { return b.kind != sstable::BlockKind::kData; });
      src.lo = tablet.start_row.empty() ? 0 : src.PositionOf(tablet.start_row);
      src.hi = tablet.end_row.empty() ? src.reader->DataEnd() : src.PositionOf(tablet.end_row);
      if (src.hi <= src.lo) continue;
      total += src.hi - src.lo;
      sources.push_back(std::move(src));
    }
  }
  constexpr size_t kSamplesPerFile = 32;
  std::vector<std::string> candidates;
  for (const Source& src : sources) {
    std::vector<const sstable::TableReader::BlockInfo*> inside;
    for (const auto& b : src.blocks) {
      if (b.handle.offset + b.handle.size > src.lo && b.handle.offset < src.hi) {
        inside.push_back(&b);
      }
    }
    const size_t step = std::max<size_t>(1, inside.size() / kSamplesPerFile);
    std::unique_ptr<InternalIterator> it = src.reader->NewIterator(/*fill_cache=*/false);
    for (size_t i = 0; i < inside.size(); i += step) {
      // The first key past the block's separator: the next block's first.
      it->Seek(inside[i]->separator);
      ParsedCellKey key;
      if (it->Valid() && ParseCellKey(it->key(), &key) && InsideTablet(key.row, tablet)) {
        candidates.push_back(key.row);
      }
    }
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  uint64_t best_distance = UINT64_MAX;
  for (const std::string& candidate : candidates) {
    uint64_t before = 0;
    for (const Source& src : sources) {
      before += std::clamp(src.PositionOf(candidate), src.lo, src.hi) - src.lo;
    }
    const uint64_t distance = 2 * before > total ? 2 * before - total : total - 2 * before;
    if (distance < best_distance) {
      best_distance = distance;
      *row = candidate;
    }
  }
  return best_distance != UINT64_MAX;
}

Status EngineCore::FlushTabletMemtables(TabletState* tablet) {
  // Groups an AlterTable adds later are flushed by the second call, which
  // runs with the close gate held exclusively.
  const std::vector<LocalityGroupState*> groups = GroupsOf(*tablet);
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
  if (!PickSplitRow(*tablet, &split_row)) return Status::OK();
  auto done = [](Status s) { return s.IsAborted() ? Status::OK() : s; };
  Status s = FlushTabletMemtables(tablet);
  if (!s.ok()) return done(s);

  std::unique_lock<SharedGate> gate(close_mu_);
  TableState* table = tablet->table;
  // Relaxed: see TableState::dropped.
  if (closed_ || table->dropped.load(std::memory_order_relaxed)) return done(Status::OK());
  s = FlushTabletMemtables(tablet);
  if (!s.ok()) return done(s);

  const std::string parent_start = tablet->start_row;
  const std::string parent_end = tablet->end_row;
  std::vector<std::unique_ptr<TabletState>> children;
  {
    MutexLock l(&mu_);
    VersionEdit edit;
    edit.retired_tablets.push_back(tablet->id);
    const uint64_t first_id = catalog_.next_id;
    edit.next_id = first_id + 2;
    // One TableFile per file for both children: a file is deleted when its
    // last TableFile marked obsolete goes, so two for one file would let one
    // child's compaction delete a file the other still reads.
    std::unordered_map<uint64_t, std::shared_ptr<TableFile>> live;
    for (int c = 0; c < 2; c++) {
      auto child = std::make_unique<TabletState>();
      child->id = first_id + c;
      child->table = table;
      child->start_row = c == 0 ? parent_start : split_row;
      child->end_row = c == 0 ? split_row : parent_end;
      edit.tablets.push_back({table->id, child->id, child->start_row, child->end_row});
      for (const auto& parent_group : tablet->groups) {
        auto group = std::make_unique<LocalityGroupState>();
        group->index = parent_group->index;
        group->tablet = child.get();
        group->write_buffer_size.store(
            parent_group->write_buffer_size.load(std::memory_order_relaxed),
            std::memory_order_relaxed);
        auto view = std::make_shared<GroupView>();
        view->mem = NewGroupMemTable(GroupWriteBufferSize(*group, options_.write_buffer_size));
        view->levels.resize(kNumLevels);
        std::shared_ptr<const GroupView> parent_view;
        SequenceNumber flushed;
        bool resident;
        {
          MutexLock gl(&parent_group->mu);
          parent_view = parent_group->view;
          flushed = parent_group->flushed;
          resident = parent_group->resident;
        }
        // The catalog, not the view, says which files the parent holds: a
        // compaction may have recorded its result and not yet shown it, so
        // its outputs may be in no view yet (and in the view read for the
        // second child but not the first).
        for (const auto& level : parent_view->levels) {
          for (const auto& f : level) live.try_emplace(f->meta.number, f);
        }
        auto listed = catalog_.files.find({tablet->id, parent_group->index});
        for (uint32_t n = 0; n < kNumLevels; n++) {
          if (listed == catalog_.files.end() || n >= listed->second.levels.size()) break;
          for (const FileMeta& meta : listed->second.levels[n]) {
            if (!FileMeetsRows(meta, child->start_row, child->end_row)) continue;
            std::shared_ptr<TableFile>& f = live[meta.number];
            if (f == nullptr) f = std::make_shared<TableFile>(meta, obsolete_files_);
            view->levels[n].push_back(f);
          }
          // Level 0 is listed oldest first, as replay puts each file in front.
          const auto& kept = view->levels[n];
          for (size_t i = 0; i < kept.size(); i++) {
            const auto& f = n == 0 ? kept[kept.size() - 1 - i] : kept[i];
            edit.new_files.push_back({child->id, group->index, n, f->meta});
          }
        }
        edit.flushed.push_back({child->id, group->index, flushed});
        {
          MutexLock gl(&group->mu);
          group->view = std::move(view);
          group->flushed = flushed;
          group->resident = resident;
        }
        child->groups.push_back(std::move(group));
      }
      children.push_back(std::move(child));
    }
    s = AppendEdit(edit);
    if (s.ok()) s = catalog_.Apply(edit);
    if (s.ok()) {
      // Relaxed: background work reads it under mu_, held here.
      tablet->retired.store(true, std::memory_order_relaxed);
      tablets_by_id_.erase(tablet->id);
      auto pos = std::find_if(table->tablets.begin(), table->tablets.end(),
                              [&](const auto& t) { return t.get() == tablet; });
      retired_tablets_.push_back(std::move(*pos));
      pos = table->tablets.erase(pos);
      for (auto& child : children) tablets_by_id_[child->id] = child.get();
      table->tablets.insert(pos, std::make_move_iterator(children.begin()),
                            std::make_move_iterator(children.end()));
      stat_splits_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  if (s.ok()) {
    // The parent's view goes; the files it shares live on in the children.
    for (const auto& g : tablet->groups) {
      auto view = std::make_shared<GroupView>();
      view->mem = std::make_shared<memtable::MemTable>();
      view->levels.resize(kNumLevels);
      MutexLock gl(&g->mu);
      g->view = std::move(view);
    }
  }
  return done(s);
}

}  // namespace strata::engine
