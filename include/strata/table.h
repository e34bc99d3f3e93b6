// Table: a handle on one table of one tenant. Rows of cells, each cell a
// (family, qualifier, timestamp) -> value; every change to a row is atomic.
//
// Handles are cheap to copy and thread-safe: any number of threads may use
// copies of one handle at once. A handle outlives what it names safely: once
// the engine is closed (or the table dropped), every call returns an error
// that says so. Intentionally copyable.
#ifndef STRATA_TABLE_H_
#define STRATA_TABLE_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "strata/iterator.h"
#include "strata/options.h"
#include "strata/read_session.h"
#include "strata/row_mutation.h"
#include "strata/row_store.h"
#include "strata/status.h"

namespace strata {

namespace engine {
class EngineCore;
struct TableState;
}  // namespace engine

// One tablet of a table as it is now: its rows and what holds them.
struct TabletStats {
  std::string start_row;  // inclusive; empty = unbounded
  std::string end_row;    // exclusive; empty = unbounded
  uint64_t memtable_bytes = 0;       // active and immutable memtables, all groups
  uint64_t table_files = 0;          // SSTables, all groups
  uint64_t table_bytes = 0;          // their size on disk (a file shared with a
                                     // split sibling counts in both)
  std::vector<uint64_t> level_files;  // SSTables per level (0 = newest)
};

class Table {
 public:
  // An empty handle; every call on it returns InvalidArgument.
  Table() = default;

  // The table's name; empty for an empty handle.
  std::string name() const;

  // Whether the table this handle opened was dropped (or its tenant was). A
  // handle stays bound to that table: one created again under the name is
  // another table, reached through a new OpenTable. False for an empty handle.
  bool dropped() const;

  // Applies every entry of `mutation` to `row` atomically: a reader sees all
  // of them or none. With options.sync, returns once the change is durable.
  // Errors: InvalidArgument for bad input (empty or oversized row key,
  // qualifier or value, unknown family, timestamp outside [kMinTimestamp,
  // kMaxTimestamp], empty mutation, closed engine) with nothing written;
  // IOError/ResourceExhausted when the log cannot be written, after which the
  // engine refuses writes until it is reopened.
  Status Mutate(const WriteOptions& options, std::string_view row, const RowMutation& mutation);

  // Checks every condition against the row as ReadRow would see it now and,
  // if all hold, applies `mutation` as Mutate does; atomic for the row: no
  // Mutate or CheckAndMutate of the row comes between the check and the
  // write, and a reader sees the mutation whole or not at all. When a
  // condition fails nothing is written and the result lists every failed
  // condition with the cells that made it fail. With no conditions the
  // mutation is applied unconditionally; an empty mutation with conditions is
  // a pure check (nothing is logged). With options.sync, every write the
  // conditions saw is durable on return (a check that logs nothing syncs
  // the log), and so is the mutation if applied.
  // Errors: InvalidArgument for bad input (as Mutate, plus an unknown family,
  // oversized qualifier or value, or timestamps outside [kMinTimestamp,
  // kMaxTimestamp] or with min > max in a condition; no conditions and an
  // empty mutation) with nothing written; errors of the log as Mutate.
  Result<CheckAndMutateResult> CheckAndMutate(const WriteOptions& options, std::string_view row,
                                              const std::vector<Condition>& conditions,
                                              const RowMutation& mutation);

  // CheckAndMutate for many rows in one call: each row is checked and applied
  // atomically on its own, with results in the order of `batch`. Every row
  // whose conditions hold is written with one log record and one group
  // commit, so a crash keeps all of them or none. Errors: InvalidArgument
  // naming the entry when any entry is bad input (as CheckAndMutate) or names
  // the same row as an earlier one, with nothing written. An empty batch
  // gives an empty vector.
  Result<std::vector<CheckAndMutateResult>> CheckAndMutateBatch(
      const WriteOptions& options, const std::vector<ConditionalMutation>& batch);

  // CheckAndMutateBatch, all or nothing: the rows are written only if every
  // row's conditions hold, then all with one log record, visible to readers
  // at once (a read that sees one row's write sees every other row's too).
  // When any condition fails, nothing is written and every result has
  // applied = false; a row whose conditions held has no failures listed.
  // Errors as CheckAndMutateBatch.
  Result<std::vector<CheckAndMutateResult>> CheckAndMutateAll(
      const WriteOptions& options, const std::vector<ConditionalMutation>& batch);

  // The row's cells that pass `filter`, newest version first within a column.
  // A row with no such cells gives an empty vector (not NotFound).
  Result<std::vector<Cell>> ReadRow(const ReadOptions& options, std::string_view row,
                                    const RowFilter& filter = RowFilter()) const;

  // The rows in [spec.start_row, spec.end_row) that have cells passing
  // spec.filter, in row order, from one snapshot taken now. Reads only the
  // locality groups that hold a family the filter asks for.
  Result<std::unique_ptr<RowIterator>> Scan(const ReadOptions& options,
                                            const ScanSpec& spec) const;

  // A new read session (strata/read_session.h): single-column reads through
  // a cache that prefetches the columns past sessions read together. Cheap;
  // it reads nothing until its first Get. Errors: InvalidArgument for a
  // timestamp range with min above max or max_versions of 0; NotFound once
  // the table is dropped.
  Result<std::unique_ptr<ReadSession>> NewReadSession(
      const ReadSessionOptions& options = ReadSessionOptions()) const;

  // The counters of this table's read sessions that have ended, added up
  // since the engine opened (a session adds its own when it is destroyed).
  Result<ReadStats> GetReadStats() const;

  // The largest row key, qualifier and value a write may carry: the
  // EngineOptions the engine was opened with. For an empty handle, the
  // defaults of EngineOptions.
  RowStoreLimits GetLimits() const;

  // The table's tablets in row order. NotFound once the table is dropped.
  Result<std::vector<TabletStats>> GetTabletStats() const;

  // The table's schema as it is now (Tenant::AlterTable changes it): every
  // locality group with its options (the implicit "default" one included),
  // and the families in schema order, each naming its group. NotFound once
  // the table is dropped.
  Result<TableSchema> GetSchema() const;

 private:
  friend class Tenant;
  Table(std::shared_ptr<engine::EngineCore> core, std::shared_ptr<engine::TableState> state)
      : core_(std::move(core)), state_(std::move(state)) {}

  std::shared_ptr<engine::EngineCore> core_;
  std::shared_ptr<engine::TableState> state_;
};

// `table` as a RowStore (strata/row_store.h): each call forwards to the
// Table call of the same name, whose documentation gives the details of the
// contract (the errors of a closed engine, a dropped table and the log). The
// store holds a copy of the handle; an empty handle makes a store whose every
// call returns InvalidArgument.
std::unique_ptr<RowStore> NewTableRowStore(Table table);

}  // namespace strata

#endif  // STRATA_TABLE_H_
