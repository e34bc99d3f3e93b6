// RowIterator: walks the rows of a Table::Scan in row order, one row and its
// cells at a time, and can Seek to another row of the scan's range as often
// as it likes (one iterator serves many seeks: no new scan per seek), or
// step back to the row before (Prev).
//
// The contract follows LevelDB's iterators: check Valid() before row() and
// the cells; an error makes the iterator !Valid() and sticks in status().
// The iterator reads one consistent snapshot taken when the scan began;
// every Seek and Prev reads that same snapshot.
//
// Cells come two ways: cell_views() hands out views into the iterator's own
// buffers (no allocation per row once the buffers have grown to the largest
// row), valid until the iterator moves; cells() copies them into Cells,
// built on the first call for each row.
//
// Thread-compatible: one thread uses an iterator at a time. It keeps what it
// reads alive, so it may outlive the Table handle, but not the Engine's Close.
#ifndef STRATA_ITERATOR_H_
#define STRATA_ITERATOR_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "strata/row_mutation.h"
#include "strata/status.h"

namespace strata {

// One cell as a RowIterator hands it out: views valid until the iterator
// moves (family until the iterator is destroyed).
struct CellView {
  std::string_view family;
  std::string_view qualifier;
  uint64_t timestamp = 0;
  std::string_view value;
};

class RowIterator {
 public:
  virtual ~RowIterator() = default;
  RowIterator() = default;
  RowIterator(const RowIterator&) = delete;
  RowIterator& operator=(const RowIterator&) = delete;

  virtual bool Valid() const = 0;
  // REQUIRES: Valid(). Moves to the next row with at least one cell that
  // passes the scan's filter.
  virtual void Next() = 0;
  // REQUIRES: Valid(). Moves to the previous row with at least one cell
  // that passes the filter, or makes the iterator !Valid() when there is
  // none at or after the scan's start_row (then only Seek moves it again).
  // A step back searches every source of the scan for the row before (a
  // binary search in each table and memtable, not a walk), and goes on
  // back past rows with no cell for the scan (deleted, or newer than its
  // snapshot), one search per such row.
  virtual void Prev() = 0;
  // Moves to the first row at or after `row` (a row before the scan's
  // start_row: to start_row; empty: to the start of the range) with at
  // least one cell that passes the filter, or makes the iterator !Valid()
  // when there is none before the scan's end_row. Backwards is fine: a Seek
  // may go to a row before the current one. Does nothing once status() is
  // not OK.
  virtual void Seek(std::string_view row) = 0;
  // REQUIRES: Valid(). Valid until the iterator moves.
  virtual std::string_view row() const = 0;
  // REQUIRES: Valid(). The row's cells, ordered as Table::ReadRow orders
  // them, as views valid until the iterator moves.
  virtual const std::vector<CellView>& cell_views() const = 0;
  // REQUIRES: Valid(). The same cells, copied; valid until the iterator moves.
  virtual const std::vector<Cell>& cells() const = 0;
  virtual Status status() const = 0;
};

// What a scan reads: a row range and a filter on each row's cells.
struct ScanSpec {
  std::string start_row;  // inclusive; empty = from the first row
  std::string end_row;    // exclusive; empty = through the last row
  RowFilter filter;
};

}  // namespace strata

#endif  // STRATA_ITERATOR_H_
