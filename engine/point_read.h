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

#include "common/cell_key.h"
#include "engine/row_reader.h"
#include "engine/schema.h"
#include "sstable/table_cache.h"
#include "strata/slice.h"
#include "strata/status.h"

namespace strata::engine {

struct GroupView;

// Hands *out the visible cells of the row whose encoded prefix is
// `row_prefix` (AppendRowPrefix) that pass `filter`, as of `snapshot`, in
// cell-key order, from `view`, the view of locality group `group`.
// `view` must stay alive for the call (it keeps the files on disk); tables
// it opens charge their cached blocks to `tenant`.
Status ReadRowFromGroup(const GroupView& view, uint32_t group, sstable::TableCache* tables,
                        sstable::BlockCache::TenantId tenant, const Slice& row_prefix,
                        SequenceNumber snapshot,
                        const ResolvedFilter& filter, const Schema& schema, RowSink* out);

}  // namespace strata::engine

#endif  // STRATA_ENGINE_POINT_READ_H_
