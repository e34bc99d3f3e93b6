// ScanIterator: Table::Scan's row iterator — the rows of a range, merged row
// by row from the locality groups the scan's filter needs in every tablet the
// range covers, with each row's visible cells as ReadRow gives them.
//
// Thread-compatible (one caller at a time, as RowIterator). The iterator
// holds the views it reads, so memtables and files stay alive and on disk
// for as long as it does, and the schema of the call that made it.
#ifndef STRATA_ENGINE_SCAN_ITERATOR_H_
#define STRATA_ENGINE_SCAN_ITERATOR_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/iterator.h"
#include "engine/row_reader.h"
#include "engine/schema.h"
#include "engine/tablet.h"
#include "sstable/block_cache.h"
#include "strata/iterator.h"
#include "strata/status.h"

namespace strata::engine {

// What a read asks of the engine about records applied before their
// fdatasync (EngineOptions::apply_before_sync): EngineCore implements it.
class DurableReads {
 public:
  // The read point of a read whose snapshot is `snapshot`: the records of a
  // synced write applied before its fdatasync that the snapshot may hold.
  virtual ReadPoint ReadPointAt(SequenceNumber snapshot) const = 0;
  // Once a read's walks are done: when they looked at undurable records,
  // waits until those are durable, or returns the log's error when their
  // fdatasync failed (a crash may lose them: the read must not hand them
  // out).
  virtual Status AwaitDurableReads(const ReadPoint& at) const = 0;

 protected:
  ~DurableReads() = default;
};

class ScanIterator final : public RowIterator {
 public:
  // One source of the scan: a group's view in one tablet and an iterator
  // over the part of the range that tablet holds.
  struct GroupInput {
    std::shared_ptr<const GroupView> view;  // keeps memtables alive
    // Made by the scan's opener when the walk first reaches the input's
    // tablet; null before.
    std::unique_ptr<InternalIterator> it;
    // The length of the row prefix of the entry `it` stands on (0 when it
    // stands on no row of its tablet's part of the range), and whether the
    // row holds no 0x00 byte. Kept by the scan, which moves `it`.
    size_t prefix_size = 0;
    bool plain_row = false;
  };
  // One tablet's part of the scan: inputs [first_input, end_input), and
  // the rows [lo, hi) of the range it holds (encoded row prefixes; lo empty:
  // from the first row, hi empty: to the last). Tablets come in row order,
  // their parts disjoint. An input's iterator may hold rows outside its
  // tablet's part (files shared with split siblings): the scan reads only
  // the rows inside it.
  struct TabletPart {
    size_t first_input = 0;
    size_t end_input = 0;
    std::string lo;
    std::string hi;
  };
  // Makes the iterator of an input of `part`, over at least its rows.
  using InputOpener = std::function<Status(const GroupInput& input, const TabletPart& part,
                                           std::unique_ptr<InternalIterator>* it)>;

  // Rows from `start_prefix` (empty: the first) to before `end_prefix`
  // (empty: the last), both encoded row prefixes, as of `snapshot`. Only the
  // tablet the walk is in has its inputs opened and positioned: a scan
  // over many tablets costs per row what a scan of one does, and a seek
  // touches one tablet. `engine` must outlive the readers the inputs hold
  // (the iterator keeps it alive), and so must what `open` uses.
  // `fill_budget` (may be null) is the one the inputs' table iterators
  // share; each Seek refills it.
  ScanIterator(std::shared_ptr<const DurableReads> engine, std::shared_ptr<TableState> table,
               std::shared_ptr<const Schema> schema, std::vector<GroupInput> inputs,
               std::vector<TabletPart> parts, InputOpener open, std::string start_prefix,
               std::string end_prefix, ResolvedFilter filter, SequenceNumber snapshot,
               std::shared_ptr<sstable::CacheFillBudget> fill_budget = nullptr);

  bool Valid() const override { return valid_; }
  void Next() override { Advance(); }
  void Prev() override;
  void Seek(std::string_view row) override;
  std::string_view row() const override { return row_view_; }
  const std::vector<CellView>& cell_views() const override { return views_; }
  const std::vector<Cell>& cells() const override;
  Status status() const override { return status_; }

 private:
  // Where the row walks put the cells they find: their bytes appended to
  // one buffer, each cell an entry naming its parts by offset (the buffer
  // may move while the row grows). Reused from row to row.
  class Collector final : public RowSink {
   public:
    struct Entry {
      uint16_t family_id;
      const std::string* family;
      uint64_t timestamp;
      size_t offset;  // qualifier, then value, in bytes
      uint32_t qualifier_size;
      uint32_t value_size;
    };
    void Clear() {
      bytes.clear();
      entries.clear();
    }
    void Add(const FoundColumn& column, uint64_t timestamp, Slice value) override;

    std::string bytes;
    std::vector<Entry> entries;
  };

  // Moves to the first row at or after `target` (an encoded row prefix;
  // empty: the first row of the range).
  void SeekInputs(const std::string& target);
  // Opens (once) and positions the inputs of part `p` at `target`, or at the
  // part's first row when `target` is below it (or empty).
  void PositionPart(size_t p, const std::string& target);
  // Makes the iterator of `in`, an input of `part`, unless it has one;
  // false on an error, with status_ set.
  bool Open(const TabletPart& part, GroupInput* in);
  // Records where input `in` of part `p` stands (its prefix_size); false on
  // a malformed key, with status_ set.
  bool NotePosition(size_t p, GroupInput* in);
  void Advance();
  // The input of the current part standing on the smallest row, and that
  // row's prefix in *prefix; nullptr when none stands on a row. Once per
  // row: inline.
  const GroupInput* SmallestRow(Slice* prefix) const {
    const GroupInput* smallest = nullptr;
    const TabletPart& part = parts_[part_];
    for (size_t i = part.first_input; i < part.end_input; i++) {
      const GroupInput& in = inputs_[i];
      if (in.prefix_size == 0) continue;
      const Slice p(in.it->key().data(), in.prefix_size);
      if (smallest == nullptr || p.compare(*prefix) < 0) {
        smallest = &in;
        *prefix = p;
      }
    }
    return smallest;
  }
  // Reads the row `smallest` stands on (`prefix`) from every input on it and
  // publishes it; false when it has no cell for the scan, or on an error
  // (status_ set).
  bool ReadRow(const GroupInput& smallest, const Slice& prefix);
  // Orders the collected cells by family when the walks of several groups
  // gave them (each walk's run is already in order), then points views_ at
  // them.
  void PublishRow(const std::vector<size_t>& run_ends);

  const std::shared_ptr<const DurableReads> engine_;
  const std::shared_ptr<TableState> table_;
  // The schema of the call that made the iterator: a later schema change
  // does not reach it.
  const std::shared_ptr<const Schema> schema_;
  std::vector<GroupInput> inputs_;
  const std::vector<TabletPart> parts_;
  const InputOpener open_;
  size_t part_ = 0;  // the part the walk is in
  const std::string start_prefix_;
  const std::string end_prefix_;
  const ResolvedFilter filter_;
  // The read point of the scan's snapshot, taken when it began.
  const ReadPoint read_point_;
  const std::shared_ptr<sstable::CacheFillBudget> fill_budget_;  // may be null
  bool valid_ = false;
  std::string seek_target_;  // Seek's encoded target, its memory reused
  std::string row_prefix_;   // the encoded prefix of the row being read
  std::string prev_target_;  // Prev's current bound, its memory reused
  std::string row_;         // the row, when decoding it takes a copy
  std::string_view row_view_;  // the row: in row_prefix_ or row_
  Collector collected_;
  std::vector<Collector::Entry> merged_;  // scratch for PublishRow
  std::vector<Collector::Entry> merge_scratch_;
  std::vector<size_t> run_ends_;  // scratch for Advance
  std::vector<CellView> views_;
  // cells(): built from views_ on the first call for a row.
  mutable std::vector<Cell> cells_;
  mutable bool cells_built_ = false;
  Status status_;
};

}  // namespace strata::engine

#endif  // STRATA_ENGINE_SCAN_ITERATOR_H_
