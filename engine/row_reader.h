// Row reading: turns the cell versions and delete markers of one row, as an
// iterator over cell keys yields them, into the cells a reader sees at a
// snapshot sequence number.
//
// Visibility rules (the same in every layer that merges versions):
//   - an entry with sequence > snapshot does not exist yet;
//   - of several entries at one (column, timestamp), the newest sequence wins;
//     a DeleteCell winner hides that version;
//   - a DeleteColumn at T hides versions with timestamp <= T written before it
//     (lower sequence);
//   - a DeleteRow at T hides every cell of the row with timestamp <= T written
//     before it.
//
// Thread-compatible.
#ifndef STRATA_ENGINE_ROW_READER_H_
#define STRATA_ENGINE_ROW_READER_H_

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/cell_key.h"
#include "common/iterator.h"
#include "engine/schema.h"
#include "strata/options.h"
#include "strata/row_mutation.h"
#include "strata/status.h"

namespace strata::engine {

// A RowFilter with names resolved to family ids.
struct ResolvedFilter {
  bool all_families = true;
  std::vector<bool> families;                        // by family id, when !all_families
  std::set<std::pair<uint16_t, std::string>> columns;  // single columns, when !all_families
  uint64_t min_timestamp = kMinTimestamp;
  uint64_t max_timestamp = kMaxTimestamp;
  uint32_t max_versions = UINT32_MAX;

  bool WantsFamily(uint16_t family) const {
    return all_families || (family < families.size() && families[family]);
  }
  // Whether any column of `family` may be wanted (whole family or single columns).
  bool MayWantFamily(uint16_t family) const;
  bool WantsColumn(uint16_t family, const std::string& qualifier) const {
    return WantsFamily(family) || columns.count({family, qualifier}) != 0;
  }
};

// The cells a reader collects from one row, ready to hand out, with the
// family id of each when the caller asks for it (to order cells gathered
// from several locality groups).
struct RowCells {
  std::vector<Cell> cells;
  // families[i] is the family id of cells[i]; kept only when `track_families`.
  std::vector<uint16_t> families;
  bool track_families = false;

  // Stable-sorts the cells by family id (schema order). REQUIRES: track_families
  void SortByFamily();
};

// Appends the row's visible cells that pass `filter` to *out, in cell-key
// order, from where `it` stands (at or before the row's first entry,
// `row_prefix` being AppendRowPrefix(row)); leaves `it` after the row.
// Family names come from `schema`; a family id it does not know is
// Corruption. Returns the iterator's error, if any.
Status CollectRowFromHere(InternalIterator* it, const Slice& row_prefix, SequenceNumber snapshot,
                          const ResolvedFilter& filter, const Schema& schema, RowCells* out);

}  // namespace strata::engine

#endif  // STRATA_ENGINE_ROW_READER_H_
