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
#include "strata/options.h"
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

// A visible cell, ready to hand out.
struct VisibleCell {
  uint16_t family;
  std::string qualifier;
  uint64_t timestamp;
  std::string value;
};

// Seeks `it` to `row` and appends the row's visible cells that pass `filter`
// to *out, in cell-key order. Returns the iterator's error, if any.
Status CollectRow(InternalIterator* it, const Slice& row, SequenceNumber snapshot,
                  const ResolvedFilter& filter, std::vector<VisibleCell>* out);
// As CollectRow, from where `it` stands (at or before the row's first entry,
// `row_prefix` being AppendRowPrefix(row)); leaves `it` after the row.
Status CollectRowFromHere(InternalIterator* it, const Slice& row_prefix, SequenceNumber snapshot,
                          const ResolvedFilter& filter, std::vector<VisibleCell>* out);

}  // namespace strata::engine

#endif  // STRATA_ENGINE_ROW_READER_H_
