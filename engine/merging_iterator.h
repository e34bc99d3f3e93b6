// MergingIterator: one sorted view over several sorted iterators (a locality
// group's memtables and SSTables). Cell keys are unique across all of them —
// every entry has its own sequence number — so merging needs no tie rule.
//
// Thread-compatible. The children are owned; `pins` keep alive whatever the
// children read from (memtables, table readers) for as long as the merge lives.
#ifndef STRATA_ENGINE_MERGING_ITERATOR_H_
#define STRATA_ENGINE_MERGING_ITERATOR_H_

#include <memory>
#include <vector>

#include "common/iterator.h"

namespace strata::engine {

std::unique_ptr<InternalIterator> NewMergingIterator(
    std::vector<std::unique_ptr<InternalIterator>> children,
    std::vector<std::shared_ptr<const void>> pins = {});

// The same over children already positioned (each by a Seek to one target,
// or !Valid()): the merge starts at the smallest of their current entries, as
// a Seek to that target would put it, without seeking any child again.
std::unique_ptr<InternalIterator> NewMergingIteratorAtChildren(
    std::vector<std::unique_ptr<InternalIterator>> children,
    std::vector<std::shared_ptr<const void>> pins = {});

}  // namespace strata::engine

#endif  // STRATA_ENGINE_MERGING_ITERATOR_H_
