// ConcatIterator: one sorted view over iterators whose key ranges are
// disjoint and given in key order (the files of one level below level 0),
// read one after the other. A merge over a level's files through one
// ConcatIterator compares keys against one child for the whole level
// instead of one per file.
//
// Thread-compatible. The children are owned; whatever they read from must
// outlive the iterator (the caller pins it, e.g. with the merge that holds
// this iterator).
#ifndef STRATA_ENGINE_CONCAT_ITERATOR_H_
#define STRATA_ENGINE_CONCAT_ITERATOR_H_

#include <memory>
#include <vector>

#include "common/iterator.h"

namespace strata::engine {

// REQUIRES: every key of children[i] sorts before every key of children[i+1].
std::unique_ptr<InternalIterator> NewConcatIterator(
    std::vector<std::unique_ptr<InternalIterator>> children);

}  // namespace strata::engine

#endif  // STRATA_ENGINE_CONCAT_ITERATOR_H_
