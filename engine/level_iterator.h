// LevelIterator: one sorted view over the files of one level below level 0,
// whose key ranges are disjoint and ordered: the files are read one after
// another, each opened (through the table cache) only when the walk reaches
// it, so a child of a merge stands for a whole level instead of one child per
// file.
//
// Thread-compatible. The iterator holds the files it was given, so they stay
// on disk while it may read them, and the reader of the file it stands in.
#ifndef STRATA_ENGINE_LEVEL_ITERATOR_H_
#define STRATA_ENGINE_LEVEL_ITERATOR_H_

#include <memory>
#include <vector>

#include "common/iterator.h"
#include "engine/table_file.h"
#include "sstable/block_cache.h"
#include "sstable/table_cache.h"

namespace strata::engine {

// `files` ordered by smallest key with disjoint ranges; `cache` must outlive
// the iterator. An error opening a file sticks in status().
std::unique_ptr<InternalIterator> NewLevelIterator(std::vector<std::shared_ptr<TableFile>> files,
                                                   sstable::TableCache* cache,
                                                   sstable::BlockCache::OwnerId owner);

}  // namespace strata::engine

#endif  // STRATA_ENGINE_LEVEL_ITERATOR_H_
