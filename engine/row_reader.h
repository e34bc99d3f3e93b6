// Row reading: turns the cell versions and delete markers of one row, as an
// iterator over cell keys yields them, into the cells a reader sees at a
// snapshot sequence number.
//
// Visibility rules (the same in every layer that merges versions):
//   - an entry with sequence > snapshot does not exist yet;
//   - of several entries at one (column, timestamp), the newest sequence wins;
//     a DeleteCell winner hides that version;
//   - a DeleteColumn at T hides versions with timestamp <= T written before it
//     (lower sequence); in a family with column_markers_hide_by_timestamp
//     (strata/options.h) it also hides every version below T written after
//     it, so nothing after it in its column's key order is visible;
//   - a DeleteRow at T hides every cell of the row with timestamp <= T written
//     before it.
//
// Thread-compatible.
#ifndef STRATA_ENGINE_ROW_READER_H_
#define STRATA_ENGINE_ROW_READER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/cell_key.h"
#include "common/coding.h"
#include "common/iterator.h"
#include "engine/schema.h"
#include "strata/options.h"
#include "strata/row_mutation.h"
#include "strata/status.h"

namespace strata::engine {

// The first 8 bytes of a column's bytes after the row in a cell key
// (family:u16 mc(qualifier)), zero-padded, as a big-endian integer: when two
// columns' heads differ, they order as their heads do.
// REQUIRES: 8 bytes readable at `p` (in a cell key, the timestamp and tag
// follow the column), and size >= 4.
inline uint64_t ColumnHead(const char* p, size_t size) {
  uint64_t head = DecodeBigEndian64(p);
  // A column has at least 4 bytes (family and mc's terminator).
  if (size < 8) head &= ~uint64_t{0} << (8 * (8 - size));
  return head;
}

// The versions of one column a row walk hands out: those with
// min_timestamp <= timestamp <= max_timestamp, newest first, at most
// max_versions of them.
struct VersionRange {
  uint64_t min_timestamp = kMinTimestamp;
  uint64_t max_timestamp = kMaxTimestamp;
  uint32_t max_versions = UINT32_MAX;
};

// A RowFilter with names resolved to family ids, and its single columns in
// the form a row walk meets them. Whole families are read over the filter's
// own range; each single column over the range it was added with.
// Intentionally copyable.
class ResolvedFilter {
 public:
  bool all_families = true;
  std::vector<bool> families;  // by family id: families wanted whole (may be empty)
  uint64_t min_timestamp = kMinTimestamp;
  uint64_t max_timestamp = kMaxTimestamp;
  uint32_t max_versions = UINT32_MAX;

  bool WantsFamily(uint16_t family) const {
    return all_families || (family < families.size() && families[family]);
  }
  // Whether any column of `family` may be wanted (whole family or single columns).
  bool MayWantFamily(uint16_t family) const;
  // The lowest timestamp any wanted version of a family in locality group
  // `group` of `schema` may have: an SSTable of the group whose cells (delete
  // markers included) are all older has nothing for the read, since its
  // markers hide only versions older still.
  uint64_t MinWantedTimestamp(const Schema& schema, uint32_t group) const;

  // Makes room for `columns` more single columns whose qualifiers have
  // `qualifier_bytes` bytes in all.
  void ReserveColumns(size_t columns, size_t qualifier_bytes);
  // Adds the single column (family, qualifier), read over `range`, and
  // clears all_families; call SortColumns() after the last one.
  void AddColumn(uint16_t family, const Slice& qualifier, const VersionRange& range);
  // The same, read over the filter's range (min_timestamp, max_timestamp,
  // max_versions) as it is at the call.
  void AddColumn(uint16_t family, const Slice& qualifier) {
    AddColumn(family, qualifier, VersionRange{min_timestamp, max_timestamp, max_versions});
  }
  // Sorts the single columns and merges repeats: the first added stays, read
  // over the smallest range that covers every repeat's (lowest minimum,
  // highest maximum, most versions).
  void SortColumns();
  // Removes every single column, keeping the memory for the next ones.
  void ClearColumns() {
    column_bytes_.clear();
    columns_.clear();
  }

  // The single columns: column(i) is a column's bytes after the row in a
  // cell key (family:u16 mc(qualifier), common/cell_key.h), ascending, so
  // in the order a walk over the row's keys meets them; qualifier(i) is its
  // qualifier, and column_source(i) the number of AddColumn calls that came
  // before the one that added it.
  // REQUIRES: SortColumns() since the last AddColumn().
  size_t num_columns() const { return columns_.size(); }
  Slice column(size_t i) const {
    return Slice(column_bytes_.data() + columns_[i].offset, columns_[i].size);
  }
  // column(i).compare(col), where `head` is ColumnHead(col): most columns
  // differ in their first 8 bytes, which one integer comparison settles.
  int CompareColumn(size_t i, const Slice& col, uint64_t head) const {
    const uint64_t mine = columns_[i].head;
    if (mine != head) return mine < head ? -1 : 1;
    return column(i).compare(col);
  }
  Slice qualifier(size_t i) const {
    const Span& c = columns_[i];
    return Slice(column_bytes_.data() + c.offset + c.size, c.qualifier_size);
  }
  size_t column_source(size_t i) const { return columns_[i].source; }
  const VersionRange& column_range(size_t i) const { return columns_[i].range; }

 private:
  // In column_bytes_: the column's encoding, then its qualifier as given.
  struct Span {
    uint64_t head;  // ColumnHead of the encoding
    size_t offset;
    size_t size;  // of the encoding
    size_t qualifier_size;
    size_t source;  // the AddColumn call that added it, counted from 0
    VersionRange range;
  };
  std::string column_bytes_;  // every column, in the order added
  std::vector<Span> columns_;
};

// The column whose visible cells a row walk hands to a RowSink. Valid only
// during RowSink::Add.
struct FoundColumn {
  // `index` of a column whose family is wanted whole.
  static constexpr size_t kWholeFamily = SIZE_MAX;

  uint16_t family_id = 0;
  const FamilyInfo* family = nullptr;
  // The index of the filter's single column (ResolvedFilter::column) that
  // asked for it, or kWholeFamily.
  size_t index = kWholeFamily;
  Slice qualifier;
};

// Where a read of rows stands: it sees the entries whose sequence numbers
// are at most `snapshot`. Those from undurable_first to undurable_last are
// the records of a synced write that was applied before its fdatasync
// (EngineOptions::apply_before_sync) and was not known durable when the read
// began (wal::LogWriter::UndurableSequences): a walk that looks at one of
// them says so in saw_undurable, and the read waits for that fdatasync
// before it hands out what it found.
struct ReadPoint {
  SequenceNumber snapshot = 0;
  SequenceNumber undurable_first = 1;  // none when above undurable_last
  SequenceNumber undurable_last = 0;
  bool saw_undurable = false;
};

// Where a row walk puts the visible cells it finds, in cell-key order.
class RowSink {
 public:
  // Called once by a read of one row before any Add: the number of locality
  // groups it will walk, one after another (each walk in cell-key order).
  virtual void BeginRow(size_t groups) {}
  // One visible version of `column`; `value` is valid only during the call.
  virtual void Add(const FoundColumn& column, uint64_t timestamp, Slice value) = 0;

 protected:
  ~RowSink() = default;
};

// The cells a reader collects from one row as Cells, ready to hand out, with
// the family id of each when several locality groups are read (to order
// their cells by family).
struct RowCells final : public RowSink {
  std::vector<Cell> cells;
  // families[i] is the family id of cells[i]; kept only when `track_families`.
  std::vector<uint16_t> families;
  bool track_families = false;

  // Tracks families when more than one group is read.
  void BeginRow(size_t groups) override { track_families = groups > 1; }
  void Add(const FoundColumn& column, uint64_t timestamp, Slice value) override;
  // Stable-sorts the cells by family id (schema order). REQUIRES: track_families
  void SortByFamily();
};

// Hands the row's visible cells at `at->snapshot` that pass `filter` to
// *out, in cell-key order, from where `it` stands (at or before the row's
// first entry, `row_prefix` being AppendRowPrefix(row)); leaves `it` after
// the row. Sets at->saw_undurable when an entry that may decide what it
// hands out (a version or cell delete of a wanted column in its range, a
// column or row delete marker) is one of at's undurable ones.
// Once a column has given its max_versions, or the walk is below its
// min_timestamp, or has met a column marker in a family whose column markers
// hide by timestamp, the rest of the column is skipped (by a Seek past it
// when more than a few entries remain): a column with a long history costs
// only the versions the filter can use, and those above them.
// Family names come from `schema`; a family id it does not know is
// Corruption. Returns the iterator's error, if any.
Status CollectRowFromHere(InternalIterator* it, const Slice& row_prefix, ReadPoint* at,
                          const ResolvedFilter& filter, const Schema& schema, RowSink* out);

}  // namespace strata::engine

#endif  // STRATA_ENGINE_ROW_READER_H_
