// RowIterator: walks the rows of a Table::Scan in row order, one row and its
// cells at a time.
//
// The contract follows LevelDB's iterators: check Valid() before row() and
// cells(); an error makes the iterator !Valid() and sticks in status(). The
// iterator reads one consistent snapshot taken when the scan began.
//
// Thread-compatible: one thread uses an iterator at a time. It keeps what it
// reads alive, so it may outlive the Table handle, but not the Engine's Close.
#ifndef STRATA_ITERATOR_H_
#define STRATA_ITERATOR_H_

#include <string_view>
#include <vector>

#include "strata/row_mutation.h"
#include "strata/status.h"

namespace strata {

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
  // REQUIRES: Valid(). Valid until the next Next().
  virtual std::string_view row() const = 0;
  // REQUIRES: Valid(). The row's cells, ordered as Table::ReadRow orders them.
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
