// The per-column rules of MVCC garbage collection: given the write records
// of one user column at or below the safepoint, which of them go, and which
// data cells with them. gc/README.md ("The rules") says why each is safe.
//
// For the versions at or below the safepoint, newest first:
//   - rollback and lock records newer than the first put or delete go;
//   - the first put stays, with its data; everything older goes, with its
//     data;
//   - when the first is a delete, it goes together with everything older:
//     the column reads as absent either way.
// Everything goes in one row mutation, atomic for the row (and logged as one
// record), so no reader, crash included, ever sees an older put without the
// delete above it.
//
// Pure functions; thread-safe.
#ifndef STRATA_GC_COLUMN_RULES_H_
#define STRATA_GC_COLUMN_RULES_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "strata/row_mutation.h"
#include "txn/records.h"

namespace strata::gc {

// One write record of a column: at commit_ts for a commit, at the rolled-back
// transaction's start_ts for a rollback.
struct WriteVersion {
  uint64_t ts = 0;
  txn::WriteRecord record;
};

// What goes of one column.
struct ColumnCollection {
  // When nonzero, every write record at or below this timestamp goes
  // (a column marker): the versions older than the first put, or the first
  // delete and everything older.
  uint64_t write_marker = 0;
  // Single write records that go (rollback and lock records above the
  // marker).
  std::vector<uint64_t> write_cells;
  // When nonzero, every data cell at or below this timestamp goes: the
  // largest start_ts of a put that goes with its value in `data`. No data
  // cell a surviving record names lies at or below it (gc/README.md).
  uint64_t data_marker = 0;

  uint64_t versions_dropped = 0;  // write records that go
  uint64_t data_dropped = 0;      // data cells that go with them

  bool empty() const { return write_marker == 0 && write_cells.empty() && data_marker == 0; }
};

// The collection of one column whose write records at or below the safepoint
// are `versions`, newest first (a RowStore returns them so).
ColumnCollection CollectColumn(const std::vector<WriteVersion>& versions);

// Appends to `m` the deletes that carry out `c` for user column `column`.
void AddCollection(RowMutation* m, std::string_view column, const ColumnCollection& c);

}  // namespace strata::gc

#endif  // STRATA_GC_COLUMN_RULES_H_
