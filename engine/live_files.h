// LiveFiles: the engine's SSTables on disk and in its caches — the directory
// they live in, the table and block caches they are read through, pinning
// the files of in-memory groups, showing new files to readers with the
// right residency, and deleting files no view holds any more.
//
// Thread-safe: the caches are, and the calls that touch a group take its
// mutex. Invariant: a file is deleted only once no view shows it (its
// TableFile marked obsolete and gone, or it never reached a view).
#ifndef STRATA_ENGINE_LIVE_FILES_H_
#define STRATA_ENGINE_LIVE_FILES_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/file_system.h"
#include "common/iterator.h"
#include "engine/file_meta.h"
#include "engine/table_file.h"
#include "engine/tablet.h"
#include "sstable/block_cache.h"
#include "sstable/table_cache.h"
#include "strata/status.h"

namespace strata::engine {

class LiveFiles {
 public:
  // Files live in `dir`; at most `max_open_tables` readers stay open, and
  // the block cache holds `block_cache_size` bytes.
  LiveFiles(FileSystem* fs, std::string dir, size_t block_cache_size, int max_open_tables);
  LiveFiles(const LiveFiles&) = delete;
  LiveFiles& operator=(const LiveFiles&) = delete;

  const std::string& dir() const { return dir_; }
  sstable::TableCache* table_cache() { return &table_cache_; }
  sstable::BlockCache* block_cache() { return &block_cache_; }

  // A handle for a file about to be shown in a view: once marked obsolete
  // and released by every view, the file is queued for deletion.
  std::shared_ptr<TableFile> NewTableFile(const FileMeta& meta) const {
    return std::make_shared<TableFile>(meta, obsolete_);
  }

  // Opens a file for good and loads all of its blocks as resident, so
  // reading it never touches the disk (for in-memory groups); Unpin undoes
  // it. `table` is the owner whose tenant the blocks are charged to.
  Status MakeResident(const TableState& table, uint64_t file_number);
  void Unpin(uint64_t file_number);
  // MakeResident when the group is resident; *pinned says whether it was.
  Status MakeResidentIfNeeded(const LocalityGroupState& group, const FileMeta& meta,
                              bool* pinned) LOCKS_EXCLUDED(group.mu);
  // At open: MakeResidentIfNeeded for every file the group's view shows.
  Status MakeGroupResidentIfNeeded(const LocalityGroupState& group) LOCKS_EXCLUDED(group.mu);
  // After a schema change of `table` (VersionSet::AlterTable): pins the
  // files whose group turned in_memory on, first dropping blocks of them
  // cached as ordinary entries, and unpins those whose group turned it off.
  // `residency` maps file numbers to the file and its new flag. Every unpin
  // is done; the first pin error is returned.
  Status ChangeResidency(
      const TableState& table,
      const std::map<uint64_t, std::pair<std::shared_ptr<TableFile>, bool>>& residency);
  // Runs `show` (which replaces group->view by one showing `files`) under
  // group->mu once the files' residency matches the group's, which an
  // AlterTable may have changed since they were written: pins them first if
  // the group became resident, unpins them after if it stopped being.
  // `pinned` says whether they are pinned now. A pin error is returned
  // after `show` has run (the files are recorded; only residency failed).
  Status ShowNewFiles(LocalityGroupState* group, const std::vector<FileMeta>& files, bool pinned,
                      const std::function<void()>& show) LOCKS_EXCLUDED(group->mu);

  // Drops a table file that no view shows (any more): its reader, pinned or
  // not, its cached blocks (resident ones too) and the file itself.
  void Discard(uint64_t number);
  // Discards every file whose last holder has gone since the last call.
  void PurgeObsolete();
  // At open, before any view is shared: deletes every table file in the
  // directory whose number is not in `live` (left by a flush or compaction
  // that died before its manifest edit).
  Status DeleteUnlisted(const std::set<uint64_t>& live);

  // A merged iterator over the view's memtables and the files that may hold
  // keys in [lo, hi) (hi empty: unbounded), for scans; tables it opens
  // charge their cached blocks to `owner`. Level-0 files are opened now
  // (an error to open one is returned); each deeper level is one child that
  // opens its files as the walk reaches them (errors in its status()).
  // REQUIRES: the read's snapshot was taken after `view` (ViewsThenSnapshot)
  // and before this call, so an active memtable with no entries now has none
  // the read may see, and is left out.
  // Point reads go through
  // ReadRowFromGroup (engine/point_read.h). The tables' iterators add the
  // blocks they read to the cache while `fill_budget` lasts (the scan's).
  Status NewRangeIterator(const GroupView& view, sstable::BlockCache::OwnerId owner,
                          const std::string& lo, const std::string& hi,
                          const std::shared_ptr<sstable::CacheFillBudget>& fill_budget,
                          std::unique_ptr<InternalIterator>* result);

 private:
  FileSystem* const fs_;
  const std::string dir_;
  const std::shared_ptr<ObsoleteFiles> obsolete_ = std::make_shared<ObsoleteFiles>();
  // Declared before the table cache, whose readers hold blocks of it.
  sstable::BlockCache block_cache_;
  sstable::TableCache table_cache_;
};

}  // namespace strata::engine

#endif  // STRATA_ENGINE_LIVE_FILES_H_
