// ConcatIterator: one sorted view over children whose key ranges are
// disjoint and given in key order (the files of one level below level 0),
// read one after the other, each opened only when the walk or a seek reaches
// it. A merge over a level's files through one ConcatIterator compares keys
// against one child for the whole level instead of one per file, and a scan
// opens only the files it reads.
//
// Thread-compatible.
#ifndef STRATA_ENGINE_CONCAT_ITERATOR_H_
#define STRATA_ENGINE_CONCAT_ITERATOR_H_

#include <memory>
#include <vector>

#include "common/iterator.h"
#include "engine/table_file.h"
#include "sstable/block_cache.h"
#include "sstable/table_cache.h"
#include "strata/status.h"

namespace strata::engine {

// The children of a concatenation.
class ConcatChildren {
 public:
  virtual ~ConcatChildren() = default;
  virtual size_t size() const = 0;
  // The last key of child i: a seek skips, unopened, every child that ends
  // before its target.
  virtual Slice last_key(size_t i) const = 0;
  // An iterator over child i, and what must outlive it (may be null).
  struct Opened {
    std::unique_ptr<InternalIterator> it;
    std::shared_ptr<const void> pin;
  };
  virtual Result<Opened> Open(size_t i) = 0;
};

// REQUIRES: every key of child i sorts before every key of child i+1. An
// error opening or reading a child sticks in status().
std::unique_ptr<InternalIterator> NewConcatIterator(std::unique_ptr<ConcatChildren> children);

// The concatenation of one level's files (ordered by smallest key, with
// disjoint ranges), opened through `cache` (which must outlive the iterator)
// as the walk reaches them, their blocks charged to `owner`; fill_cache and
// fill_budget as sstable::TableReader::NewIterator. The iterator holds the
// files, so they stay on disk while it may read them.
std::unique_ptr<InternalIterator> NewLevelIterator(
    std::vector<std::shared_ptr<TableFile>> files, sstable::TableCache* cache,
    sstable::BlockCache::OwnerId owner, bool fill_cache = true,
    std::shared_ptr<sstable::CacheFillBudget> fill_budget = nullptr);

}  // namespace strata::engine

#endif  // STRATA_ENGINE_CONCAT_ITERATOR_H_
