// Tablet splits: when a tablet is due for one, and the row it splits at.
// A tablet whose SSTables (all groups) have grown past tablet_split_size
// becomes two tablets that divide its row range at a row boundary and share
// its files until compactions rewrite them.
//
// The steps (EngineCore::SplitTablet):
//   1. Pick a row near the middle of the tablet's largest locality group
//      (PickSplitRow).
//   2. Flush its memtables while writes go on.
//   3. With the close gate held exclusively (no call in flight, so no write
//      between its tablet lookup and its apply), flush what arrived during
//      step 2, then record one manifest edit — the parent retired, two new
//      tablets, the parent's files (as the catalog lists them) under each
//      new tablet whose rows they overlap, the flushed sequences — and swap
//      the new tablets in (VersionSet::SplitTablet).
// Compactions of the parent may run on: one that records its result before
// the edit changed the catalog the edit copies (its inputs then go once no
// view holds them); one that would record after it finds the parent retired
// and throws its output away. Since the parent was wholly flushed, log
// replay skips its records; a crash before the edit leaves the parent as it
// was, after it the children.
//
// Thread-safe: the functions read immutable views and open readers through
// the (thread-safe) table cache.
#ifndef STRATA_ENGINE_SPLIT_H_
#define STRATA_ENGINE_SPLIT_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/tablet.h"
#include "engine/version_set.h"
#include "sstable/table_cache.h"

namespace strata::engine {

// SSTable bytes of the tablet, all groups, leaving out files still shared
// with a split sibling. REQUIRES: the tablet's group list is stable (the
// catalog mutex or the close gate held).
uint64_t TabletBytes(const TabletState& tablet);

// The live tablet of `versions` with the most SSTable bytes over
// `split_size` (*bytes says how many), or null. A tablet in `stuck`, which
// maps tablets that could not be split to their size then, is passed over
// until it has grown by half.
TabletState* PickSplitCandidate(const VersionSet& versions, uint64_t split_size,
                                const std::unordered_map<const TabletState*, uint64_t>& stuck,
                                uint64_t* bytes);

// A row near the middle of the bytes of the largest of `groups` (the
// tablet's), found through the files' indexes; false if none lies strictly
// inside the tablet's range or a file cannot be read. Readers come from
// `tables`, charged to the tablet's tenant.
bool PickSplitRow(const TabletState& tablet, const std::vector<LocalityGroupState*>& groups,
                  sstable::TableCache* tables, std::string* row);

}  // namespace strata::engine

#endif  // STRATA_ENGINE_SPLIT_H_
