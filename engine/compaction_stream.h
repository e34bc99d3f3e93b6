// CompactionStream: takes the merged entries of a flush's memtable or a
// compaction's inputs and keeps only what a reader could still see (plus the
// delete markers that may still hide older data below), running the
// compaction filter per column.
//
// Rules, on top of row_reader.h's visibility rules:
//   - of the put/delete-cell entries at one (column, timestamp) only the
//     newest sequence survives;
//   - a put or delete-cell hidden by a DeleteColumn or DeleteRow marker in the
//     inputs is dropped;
//   - a marker that is itself hidden goes too, since the marker hiding it
//     hides the same versions below: a delete-cell as above, or beaten at
//     its timestamp by a newer entry; a DeleteColumn under a newer
//     DeleteColumn or a DeleteRow;
//   - the other markers (delete-cell, delete-column, delete-row) are kept
//     unless the output is bottommost, or nothing older than the inputs may
//     hold their row (asked per row, see `older_may_hold_row`): then
//     everything they could hide is in the inputs and already dropped, so
//     they go too;
//   - in a family with column_markers_hide_by_timestamp, everything after
//     a column's first DeleteColumn (lower timestamps, and its own timestamp
//     with lower sequences) is dropped, whatever its sequence, markers
//     included; that first marker is kept as above, even under a row marker
//     (which hides only what was written before it). A version written
//     below it later, in data newer than the inputs, is what the family's
//     writer promises never to need;
//   - a bottommost output holds puts only, at most one per (column,
//     timestamp), each older than every entry of its column in the levels
//     above: their sequence numbers are written as 0, as RocksDB does at
//     its bottommost level. A reader takes its files before its read point
//     (EngineCore::ViewsThenSnapshot), so every entry of a file it reads is
//     visible to it whatever the sequence; 0 only saves bytes.
//
// Thread-compatible.
#ifndef STRATA_ENGINE_COMPACTION_STREAM_H_
#define STRATA_ENGINE_COMPACTION_STREAM_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/cell_key.h"
#include "engine/schema.h"
#include "strata/compaction_filter.h"
#include "strata/slice.h"
#include "strata/status.h"

namespace strata::engine {

class CompactionStream {
 public:
  using Emit = std::function<Status(const Slice& key, const Slice& value)>;
  // Whether data older than the inputs (deeper files) may hold entries of
  // the row with this encoded prefix (AppendRowPrefix); false lets the row's
  // markers go. Asked at most once per row, and only for a row with markers.
  using RowProbe = std::function<bool(const Slice& row_prefix)>;

  // `filter` may be null; `schema` names families for it. Without
  // `older_may_hold_row` (or when bottommost), every row is taken to have
  // older data (or none).
  CompactionStream(bool bottommost, CompactionFilter* filter, CompactionFilter::Context context,
                   const Schema* schema, Emit emit, RowProbe older_may_hold_row = nullptr);

  // REQUIRES: keys strictly increasing (a merged compaction input).
  Status Add(const Slice& key, const Slice& value);
  Status Finish();

  uint64_t dropped() const { return dropped_; }

 private:
  struct Entry {
    std::string key;
    std::string value;
  };
  Status FlushColumn();
  bool HiddenByRow(uint64_t timestamp, SequenceNumber sequence) const;
  // Whether the current row's markers may go: nothing older holds the row.
  bool RowAtBottom();

  const bool bottommost_;
  const RowProbe older_may_hold_row_;
  CompactionFilter* const filter_;
  const CompactionFilter::Context context_;
  const Schema* const schema_;
  const Emit emit_;

  std::string row_prefix_;  // mc(row) of the current row
  enum class RowBottom : uint8_t { kUnknown, kYes, kNo };
  RowBottom row_bottom_ = RowBottom::kUnknown;  // RowAtBottom() of the current row
  struct RowMarker {
    uint64_t timestamp;
    SequenceNumber sequence;
  };
  std::vector<RowMarker> row_markers_;
  // The entries of the current column, in order: the first column_size_ of
  // column_. Entries past it are kept for their buffers, which the next
  // columns reuse, so a merge allocates only while its columns grow.
  std::vector<Entry> column_;
  size_t column_size_ = 0;
  uint16_t column_family_ = 0;  // the family id of the current column
  // Scratch of FlushColumn, kept for their capacity.
  std::vector<bool> keep_;
  std::vector<size_t> puts_;
  uint64_t dropped_ = 0;
};

}  // namespace strata::engine

#endif  // STRATA_ENGINE_COMPACTION_STREAM_H_
