// RowStore: the row primitives that transactions and MVCC garbage collection
// are built on, as an interface (the row-store seam). One RowStore is one
// table: rows of cells, each cell a (family, qualifier, timestamp) -> value.
// NewTableRowStore (strata/table.h) makes a Table one; any store that keeps
// the contract below can stand in for it without a change above the seam.
//
// Thread-safe: any number of threads may call one RowStore at once. The
// iterators and read sessions it hands out are thread-compatible; they keep
// what they read alive and may outlive the RowStore object that made them.
//
// The contract every implementation keeps:
//
// Rows and cells. A row key is 1 or more bytes, up to the store's limit
// (GetLimits gives the row key, qualifier and value limits); rows
// order bytewise (as memcmp, shorter first on a tie). A cell's family is one of
// the store's families, an ordered list that changes only when the store's
// owner changes its schema (Tenant::AlterTable for the Table store, where the
// families kept keep their order and new ones come after them); its qualifier
// and value are any bytes up to the store's limits; its timestamp lies in
// [kMinTimestamp, kMaxTimestamp]. A row with no visible cell cannot be told from one never
// written.
//
// What a reader sees. The entries of a mutation take effect in order, each
// after everything written before it:
//   - Put sets the version of its column at its timestamp, replacing one
//     there;
//   - DeleteCell removes the version of its column at exactly its timestamp;
//   - DeleteColumn removes every version of its column at or below its
//     timestamp;
//   - DeleteRow removes every version of every column of the row at or below
//     its timestamp.
// A delete removes only what was written before it: a later Put is visible
// even at a timestamp the delete covered. The one exception: in a family
// with ColumnFamilyOptions::column_markers_hide_by_timestamp, a Put written
// after a DeleteColumn, below (not at) its timestamp, may or may not be
// visible; its writer must never need it. Nothing else removes a version,
// except garbage collection the store's owner sets up (a compaction filter
// installed in the Table store's engine).
//
// Order of cells. Every call that returns a row's cells orders them by family
// (in the store's family order), then qualifier (bytewise), then timestamp,
// newest first.
//
// Atomicity. Every write is atomic for its row: a reader (ReadRow, Scan, a
// read session's lookup) sees one row's mutation whole or not at all, and no
// write of the row comes between a CheckAndMutate's check and its write.
// Writes of different rows are independent, except that the rows of one
// CheckAndMutateAll apply together or not at all, and, on a store whose
// writes share one log (the Table store), the rows of one
// CheckAndMutateBatch that apply become durable together.
//
// Errors. Status codes, never exceptions:
//   - InvalidArgument: bad input, named in the message (each method lists
//     what counts); nothing is written and nothing is read.
//   - NotFound: the table behind the store is gone (dropped).
//   - any other code (IOError, ResourceExhausted for a budget, Corruption,
//     ...): the store could not do the work. The outcome of a write that
//     fails this way is unknown: it may be visible, now or once the store
//     recovers, or not at all. A caller that must know reads the row.
// Whether input is bad depends on the input and the store's schema and
// limits alone, never on the cells the store holds.
#ifndef STRATA_ROW_STORE_H_
#define STRATA_ROW_STORE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "strata/iterator.h"
#include "strata/options.h"
#include "strata/read_session.h"
#include "strata/row_mutation.h"
#include "strata/status.h"

namespace strata {

// The largest row key, qualifier and value (bytes) a store accepts. Intentionally copyable.
struct RowStoreLimits {
  size_t max_row_key_size = SIZE_MAX;
  size_t max_qualifier_size = SIZE_MAX;
  size_t max_value_size = SIZE_MAX;
};

class RowStore {
 public:
  virtual ~RowStore() = default;
  RowStore() = default;
  RowStore(const RowStore&) = delete;
  RowStore& operator=(const RowStore&) = delete;

  // The store's size limits, fixed for its life: a write of a larger row
  // key, qualifier or value is InvalidArgument and writes nothing, so a layer
  // above (a transaction buffering writes) can refuse such input at once.
  // The default says nothing is too large; the store's calls still decide.
  virtual RowStoreLimits GetLimits() const { return RowStoreLimits(); }

  // The row's cells that pass `filter`: the columns of filter.families and
  // filter.columns (every column when both are empty), versions with
  // min_timestamp <= timestamp <= max_timestamp, at most max_versions of them
  // per column, the newest. A row with no such cells gives an empty vector,
  // not NotFound.
  // InvalidArgument: an empty or oversized row key, an unknown family in the
  // filter, min_timestamp above max_timestamp, max_versions of 0.
  virtual Result<std::vector<Cell>> ReadRow(const ReadOptions& options, std::string_view row,
                                            const RowFilter& filter) const = 0;

  // Applies every entry of `mutation` to `row`, atomically for the row. With
  // options.sync, the change is durable when the call returns OK.
  // InvalidArgument: an empty or oversized row key, an empty mutation, an
  // entry with an unknown family (DeleteRow names none), an oversized
  // qualifier or value, or a timestamp outside [kMinTimestamp, kMaxTimestamp].
  virtual Status Mutate(const WriteOptions& options, std::string_view row,
                        const RowMutation& mutation) = 0;

  // Evaluates every condition against the row's visible cells (as ReadRow
  // with no filter sees them) and, if all hold, applies `mutation` as Mutate
  // does, all atomically for the row. The result says whether it applied;
  // when it did not, nothing was written and `failures` lists each failed
  // condition, in list order, by its index and the cells that made it fail,
  // newest first: for NoCellInRange every visible cell of the column in the
  // range; for ValueEquals the cell at the timestamp, whose value differs;
  // none when the cell a CellExists or ValueEquals names is missing. Every
  // condition is evaluated, so a caller sees every conflicting lock or write
  // without a second read. No conditions: the mutation applies
  // unconditionally (applied is true). An empty mutation with conditions: a
  // pure check that writes nothing, applied saying whether all held. With
  // options.sync, every write the conditions saw is durable on return,
  // whatever the outcome, and so is the mutation if it applied.
  // InvalidArgument: as Mutate for a non-empty mutation (for an empty one,
  // only the row key is checked); a condition with an unknown family, an
  // oversized qualifier or value, a timestamp outside [kMinTimestamp,
  // kMaxTimestamp] or min above max; no conditions and an empty mutation.
  virtual Result<CheckAndMutateResult> CheckAndMutate(const WriteOptions& options,
                                                      std::string_view row,
                                                      const std::vector<Condition>& conditions,
                                                      const RowMutation& mutation) = 0;

  // CheckAndMutate for each entry of `batch`, each row checked and applied
  // atomically on its own; results in the order of `batch`. On the Table
  // store the rows that apply become durable together: after a crash all of
  // them are there or none. A store without one log for its rows (the RADOS
  // store, strata/rados.h) makes each row durable on its own, all of them by
  // the time the call returns OK; nothing above the seam relies on more. An
  // empty batch gives an empty vector.
  // InvalidArgument, naming the entry, with nothing written for any entry:
  // an entry with bad input (as CheckAndMutate), or a row that an earlier
  // entry already names.
  virtual Result<std::vector<CheckAndMutateResult>> CheckAndMutateBatch(
      const WriteOptions& options, const std::vector<ConditionalMutation>& batch) = 0;

  // CheckAndMutateBatch, all or nothing (optional): the rows are written
  // only if every row's conditions hold, and then a reader that sees one
  // row's write sees every other row's too (a ReadRow, Scan or read session
  // begun after it). When any condition fails, nothing is written and every
  // result has applied = false, with failures listed for the rows whose
  // conditions failed. Durability and errors as CheckAndMutateBatch. A
  // store that cannot do this returns NotSupported, the default, and writes
  // nothing (a transaction then commits in two phases).
  virtual Result<std::vector<CheckAndMutateResult>> CheckAndMutateAll(
      const WriteOptions& options, const std::vector<ConditionalMutation>& batch) {
    return Status::NotSupported("this row store has no all-or-nothing batch");
  }

  // The rows in [spec.start_row, spec.end_row) (an empty bound is open) that
  // have cells passing spec.filter, in row order, each with those cells as
  // ReadRow returns them. The iterator reads one snapshot taken by this call:
  // it sees every write that completed before the call and none that starts
  // after the call returns.
  // InvalidArgument: start_row after a non-empty end_row; a filter ReadRow
  // rejects. A start_row equal to end_row gives an empty scan.
  virtual Result<std::unique_ptr<RowIterator>> Scan(const ReadOptions& options,
                                                    const ScanSpec& spec) const = 0;

  // A read session (strata/read_session.h) over this store: Get reads one
  // column within the session's timestamp range and version limit, answering
  // later Gets of a column it has fetched from its cache, so a session never
  // sees a later write to a column it has read; its ReadRow is this store's
  // ReadRow, never cached. A store may prefetch columns it predicts (the
  // Table store does when options.prefetch is set) or fetch only the column
  // asked for; either way a column is what the row held at some moment
  // between the session's creation and the Get that returns it. A dropped
  // table's NotFound may come here (the Table store) or only from the
  // session's first Get (the RADOS store, which reads nothing until then).
  // InvalidArgument: min_timestamp above max_timestamp, max_versions of 0.
  virtual Result<std::unique_ptr<ReadSession>> NewReadSession(
      const ReadSessionOptions& options) const = 0;
};

}  // namespace strata

#endif  // STRATA_ROW_STORE_H_
