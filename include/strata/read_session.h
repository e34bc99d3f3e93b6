// ReadSession: a short-lived reader of one table (a transaction's reads, an
// observer's run) that caches every column it fetches, and ReadStats: what
// sessions asked for and what it cost.
//
// Prefetching: when a Get misses the cache, the session reads its column
// together with the columns of the same row that the table's past sessions
// read along with it, in one pass over the row (one storage lookup), and
// caches them all — a column with no visible cells is cached as empty. A later
// Get of any of them costs no lookup. What a session asked for, row by row,
// teaches the table's predictor when the session ends.
//
// Consistency: the cache holds each column as it was when first fetched; a
// session never sees a later write to a column it has already read. Columns
// fetched in one lookup come from one snapshot of the row; columns of the
// same row fetched by later lookups may be newer. A reader that bounds
// max_timestamp below every write still in flight (as Percolator does with
// its start timestamp) sees the same answers either way, as long as no
// delete in flight reaches down to that bound (a DeleteColumn or DeleteRow
// stamped above it hides versions below it unless its range stops short).
// Do not read through a session what must be fresh on every read (a lock
// column being waited on): use Table::ReadRow for it.
//
// Thread-compatible: one thread uses a session at a time; sessions of one
// table may run on any number of threads at once. A session may outlive the
// Table handle it came from and the engine's Close: after Close, what the
// cache holds is still answered and every lookup fails as Table calls do.
// It holds every cell it fetched until destroyed, so keep sessions short.
#ifndef STRATA_READ_SESSION_H_
#define STRATA_READ_SESSION_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "strata/row_mutation.h"
#include "strata/status.h"

namespace strata {

// Counters of read sessions: of one session (ReadSession::stats) or the
// totals of a table's ended sessions (Table::GetReadStats).
// Intentionally copyable.
struct ReadStats {
  uint64_t sessions = 0;            // sessions counted; 1 in a session's own stats
  uint64_t gets = 0;                // Get calls: single-column reads asked for
  uint64_t cache_hits = 0;          // Gets answered from the cache, with no lookup
  uint64_t lookups = 0;             // storage lookups: passes over a row (misses and ReadRow)
  uint64_t prefetched_columns = 0;  // columns fetched by prediction, not asked for yet
  uint64_t prefetched_cells = 0;    // their cells
  uint64_t prefetch_hits = 0;       // prefetched columns a Get then asked for
};

class ReadSession {
 public:
  // Adds the session's counters to its table's totals and teaches the
  // table's predictor what the session read.
  virtual ~ReadSession() = default;
  ReadSession() = default;
  ReadSession(const ReadSession&) = delete;
  ReadSession& operator=(const ReadSession&) = delete;

  // The versions of column (family, qualifier) of `row` within the session's
  // timestamp range, newest first, at most max_versions; empty when there are
  // none. Errors, as Table::ReadRow: InvalidArgument for an unknown family or
  // a bad row key, NotFound once the table is dropped.
  virtual Result<std::vector<Cell>> Get(std::string_view row, std::string_view family,
                                        std::string_view qualifier) = 0;

  // Table::ReadRow, counted as a lookup: neither cached nor predicted, and
  // `filter` alone says which versions come back.
  virtual Result<std::vector<Cell>> ReadRow(std::string_view row, const RowFilter& filter) = 0;

  // This session's counters so far.
  virtual ReadStats stats() const = 0;
};

}  // namespace strata

#endif  // STRATA_READ_SESSION_H_
