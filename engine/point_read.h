// Point reads: the cells of one row in one locality group, gathered from the
// group's memtables and the few files that may hold the row.
//
// Where a scan merges every memtable and file of a group, a point read seeks
// only the sources that can hold the row (files by key range and row bloom
// filter, then by whether the seek lands on the row) and reads a single
// source directly; only a row spread over several sources goes through a
// merging iterator. The cells are those CollectRowFromHere finds in the merge
// of all sources, so the visibility rules hold across memtables and levels.
//
// Thread-safe: a call touches only its own iterators and the immutable view.
#ifndef STRATA_ENGINE_POINT_READ_H_
#define STRATA_ENGINE_POINT_READ_H_

#include <memory>
#include <vector>

#include "common/cell_key.h"
#include "engine/row_reader.h"
#include "engine/schema.h"
#include "sstable/table_cache.h"
#include "strata/slice.h"
#include "strata/status.h"

namespace strata::engine {

struct GroupView;
struct TableFile;

// Hands *out the visible cells of the row whose encoded prefix is
// `row_prefix` (AppendRowPrefix) that pass `filter`, as of `at` (see
// CollectRowFromHere), in cell-key order, from `view`, the view of locality
// group `group`.
// `view` must stay alive for the call (it keeps the files on disk); tables
// it opens charge their cached blocks to `tenant`.
Status ReadRowFromGroup(const GroupView& view, uint32_t group, sstable::TableCache* tables,
                        sstable::BlockCache::OwnerId tenant, const Slice& row_prefix,
                        ReadPoint* at, const ResolvedFilter& filter, const Schema& schema,
                        RowSink* out);

// The files of a locality group's view from one level down, asked whether
// any may hold a row: what a flush (every level) or a compaction (the
// levels below its output) asks of the data older than its inputs, to drop
// the delete markers of rows that no older data holds
// (CompactionStream::RowProbe). A file may hold the row if its key range
// reaches the row and its row filter does not rule the row out; a file that
// cannot be opened may hold anything. Readers come from the table cache for
// each question and are not kept, so the cache's bound on open tables holds.
//
// Thread-compatible: one flush or compaction asks, row after row.
class DeeperFiles {
 public:
  // Takes the files of `view` at levels >= first_level (keeping them on
  // disk as long as this object, but not the view's memtables).
  DeeperFiles(const GroupView& view, int first_level, sstable::TableCache* tables,
              sstable::BlockCache::OwnerId tenant);

  bool MayHoldRow(const Slice& row_prefix);

 private:
  // Whether file `index` of level `level` may hold the row.
  bool FileMayHoldRow(size_t level, size_t index, const Slice& row_prefix);

  // The levels of the view from first_level_ on (the ones above: empty).
  std::vector<std::vector<std::shared_ptr<TableFile>>> levels_;
  const int first_level_;
  sstable::TableCache* const tables_;
  const sstable::BlockCache::OwnerId tenant_;
};

}  // namespace strata::engine

#endif  // STRATA_ENGINE_POINT_READ_H_
