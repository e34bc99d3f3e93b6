#include "engine/live_files.h"

#include <cctype>
#include <cinttypes>
#include <cstdio>

#include "engine/concat_iterator.h"
#include "engine/merging_iterator.h"
#include "sstable/table_builder.h"

namespace strata::engine {

namespace {

sstable::TableCacheOptions CacheOptions(FileSystem* fs, const std::string& dir,
                                        int max_open_tables, sstable::BlockCache* blocks) {
  sstable::TableCacheOptions tco;
  tco.file_system = fs;
  tco.dir = dir;
  tco.max_open_tables = max_open_tables;
  tco.block_cache = blocks;
  return tco;
}

}  // namespace

LiveFiles::LiveFiles(FileSystem* fs, std::string dir, size_t block_cache_size,
                     int max_open_tables)
    : fs_(fs),
      dir_(std::move(dir)),
      block_cache_(block_cache_size),
      table_cache_(CacheOptions(fs, dir_, max_open_tables, &block_cache_)) {}

Status LiveFiles::MakeResident(const TableState& table, uint64_t file_number) {
  Result<std::shared_ptr<sstable::TableReader>> reader =
      table_cache_.Pin(file_number, table.budget->cache_id());
  if (!reader.ok()) return reader.status();
  // One pass loads every data block into the cache as resident.
  std::unique_ptr<InternalIterator> it = (*reader)->NewIterator();
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
  }
  return it->status();
}

void LiveFiles::Unpin(uint64_t file_number) {
  // The next read opens the file again, unpinned, and caches its blocks
  // like any other file's.
  table_cache_.Evict(file_number);
  block_cache_.EraseFile(file_number);
}

Status LiveFiles::MakeResidentIfNeeded(const LocalityGroupState& group, const FileMeta& meta,
                                       bool* pinned) {
  {
    MutexLock l(&group.mu);
    if (!group.resident) return Status::OK();
  }
  *pinned = true;
  return MakeResident(*group.tablet->table, meta.number);
}

Status LiveFiles::MakeGroupResidentIfNeeded(const LocalityGroupState& group) {
  bool pinned = false;
  for (const auto& level : group.current()->levels) {
    for (const auto& f : level) STRATA_RETURN_IF_ERROR(MakeResidentIfNeeded(group, f->meta, &pinned));
  }
  return Status::OK();
}

Status LiveFiles::ChangeResidency(
    const TableState& table,
    const std::map<uint64_t, std::pair<std::shared_ptr<TableFile>, bool>>& residency) {
  Status s;
  for (const auto& [number, entry] : residency) {
    if (!entry.second) {
      Unpin(number);
    } else if (s.ok()) {
      // Blocks read while the group was on disk may be cached as ordinary
      // entries, which a lookup would find (and the cache later evict):
      // they go first, so that all of them come back resident.
      block_cache_.EraseFile(number);
      s = MakeResident(table, number);
    }
  }
  return s;
}

Status LiveFiles::ShowNewFiles(LocalityGroupState* group, const std::vector<FileMeta>& files,
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

void LiveFiles::Discard(uint64_t number) {
  table_cache_.Evict(number);  // a pinned reader too
  block_cache_.EraseFile(number);
  // Best effort: a file left behind is deleted on the next open.
  fs_->DeleteFile(sstable::TableFileName(dir_, number)).PermitUncheckedError();
}

void LiveFiles::PurgeObsolete() {
  for (uint64_t number : obsolete_->Take()) Discard(number);
}

Status LiveFiles::DeleteUnlisted(const std::set<uint64_t>& live) {
  std::vector<std::string> names;
  STRATA_RETURN_IF_ERROR(fs_->GetChildren(dir_, &names));
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
      fs_->DeleteFile(JoinPath(dir_, name)).PermitUncheckedError();  // retried next open
    }
  }
  return Status::OK();
}

Status LiveFiles::NewRangeIterator(const GroupView& view, sstable::BlockCache::OwnerId owner,
                                   const std::string& lo, const std::string& hi,
                                   const std::shared_ptr<sstable::CacheFillBudget>& fill_budget,
                                   std::unique_ptr<InternalIterator>* result) {
  std::vector<std::unique_ptr<InternalIterator>> children;
  std::vector<std::shared_ptr<const void>> pins;
  // An active memtable empty now holds nothing the read's snapshot can see
  // (see the header).
  if (view.mem->num_entries() > 0) {
    children.push_back(view.mem->NewIterator());
    pins.push_back(view.mem);
  }
  for (const auto& imm : view.imms) {
    children.push_back(imm.mem->NewIterator());
    pins.push_back(imm.mem);
  }
  auto overlaps = [&](const TableFile& file) {
    return !(file.meta.largest < lo) && (hi.empty() || file.meta.smallest < hi);
  };
  for (size_t l = 0; l < view.levels.size(); l++) {
    if (l > 0) {
      // A deeper level's files are disjoint and ordered: one child reads
      // them in turn, opening each when the walk reaches it.
      std::vector<std::shared_ptr<TableFile>> files;
      for (const auto& file : view.levels[l]) {
        if (overlaps(*file)) files.push_back(file);
      }
      if (!files.empty()) {
        children.push_back(NewLevelIterator(std::move(files), &table_cache_, owner,
                                            /*fill_cache=*/true, fill_budget));
      }
      continue;
    }
    for (const auto& file : view.levels[l]) {
      if (!overlaps(*file)) continue;
      Result<std::shared_ptr<sstable::TableReader>> reader =
          table_cache_.Get(file->meta.number, owner);
      if (!reader.ok()) return reader.status();
      children.push_back((*reader)->NewIterator(/*fill_cache=*/true, fill_budget));
      pins.push_back(std::move(reader.value()));
      pins.push_back(file);  // the file stays on disk while the iterator may read it
    }
  }
  if (children.size() == 1 && pins.empty()) {
    // One level's files alone (they pin themselves): no merge to go through.
    *result = std::move(children.front());
  } else {
    *result = NewMergingIterator(std::move(children), std::move(pins));
  }
  return Status::OK();
}

}  // namespace strata::engine
