// RowMutation: an ordered list of changes to one row, applied atomically by
// Table::Mutate. RowFilter and Cell: what Table::ReadRow asks for and returns.
// Condition, ConditionalMutation and CheckAndMutateResult: what
// Table::CheckAndMutate checks, applies and reports.
//
// Later entries of one mutation win over earlier ones: a Put after a
// DeleteColumn of the same column at a covering timestamp is visible (but
// see ColumnFamilyOptions::column_markers_hide_by_timestamp).
//
// Value types; thread-compatible. Intentionally copyable.
#ifndef STRATA_ROW_MUTATION_H_
#define STRATA_ROW_MUTATION_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "strata/options.h"

namespace strata {

class RowMutation {
 public:
  // DO NOT CHANGE: the values are written to the log.
  enum class Kind : uint8_t {
    kPut = 1,           // set (family, qualifier, timestamp) to value
    kDeleteCell = 2,    // remove the version at exactly `timestamp`
    kDeleteColumn = 3,  // remove every version with timestamp <= `timestamp`
    kDeleteRow = 4,     // remove every cell of the row with timestamp <= `timestamp`
  };
  struct Entry {
    Kind kind;
    std::string family;     // empty for kDeleteRow
    std::string qualifier;  // empty for kDeleteRow
    uint64_t timestamp;
    std::string value;      // kPut only
  };

  RowMutation() = default;

  RowMutation& Put(std::string_view family, std::string_view qualifier, uint64_t timestamp,
                   std::string_view value) {
    entries_.push_back(Entry{Kind::kPut, std::string(family), std::string(qualifier), timestamp,
                             std::string(value)});
    return *this;
  }
  RowMutation& DeleteCell(std::string_view family, std::string_view qualifier,
                          uint64_t timestamp) {
    entries_.push_back(
        Entry{Kind::kDeleteCell, std::string(family), std::string(qualifier), timestamp, {}});
    return *this;
  }
  // Pass kMaxTimestamp to remove every version.
  RowMutation& DeleteColumn(std::string_view family, std::string_view qualifier,
                            uint64_t up_to_timestamp = kMaxTimestamp) {
    entries_.push_back(Entry{Kind::kDeleteColumn, std::string(family), std::string(qualifier),
                             up_to_timestamp, {}});
    return *this;
  }
  RowMutation& DeleteRow(uint64_t up_to_timestamp = kMaxTimestamp) {
    entries_.push_back(Entry{Kind::kDeleteRow, {}, {}, up_to_timestamp, {}});
    return *this;
  }

  const std::vector<Entry>& entries() const { return entries_; }
  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }
  void Clear() { entries_.clear(); }

 private:
  std::vector<Entry> entries_;
};

// One version of one column.
struct Cell {
  std::string family;
  std::string qualifier;
  uint64_t timestamp = 0;
  std::string value;

  friend bool operator==(const Cell&, const Cell&) = default;
};

// Which cells of a row a read returns. Cells come back ordered by family (in
// schema order), qualifier (bytewise), then timestamp, newest first.
struct RowFilter {
  // Families to read; empty means every family.
  std::vector<std::string> families;
  // Single columns (family, qualifier) to read, in addition to `families`.
  std::vector<std::pair<std::string, std::string>> columns;
  // Only versions with min_timestamp <= timestamp <= max_timestamp.
  uint64_t min_timestamp = kMinTimestamp;
  uint64_t max_timestamp = kMaxTimestamp;
  // At most this many versions of each column, newest first.
  uint32_t max_versions = UINT32_MAX;
};

// A condition on one column (family, qualifier) of a row, checked against the
// cells Table::ReadRow would return at that moment: delete markers applied,
// so a deleted version does not exist. Build one with the factories.
// Intentionally copyable.
class Condition {
 public:
  enum class Kind : uint8_t {
    // No visible cell of the column with min_timestamp <= timestamp <= max_timestamp.
    kNoCellInRange,
    // A visible cell of the column at exactly `timestamp`.
    kCellExists,
    // The visible cell of the column at exactly `timestamp` exists and its
    // value equals `value`.
    kValueEquals,
  };

  // REQUIRES (else InvalidArgument from the call that checks it):
  // kMinTimestamp <= min_timestamp <= max_timestamp <= kMaxTimestamp.
  // min_timestamp == max_timestamp checks a single version.
  static Condition NoCellInRange(std::string_view family, std::string_view qualifier,
                                 uint64_t min_timestamp, uint64_t max_timestamp) {
    return Condition(Kind::kNoCellInRange, family, qualifier, min_timestamp, max_timestamp, {});
  }
  static Condition CellExists(std::string_view family, std::string_view qualifier,
                              uint64_t timestamp) {
    return Condition(Kind::kCellExists, family, qualifier, timestamp, timestamp, {});
  }
  static Condition ValueEquals(std::string_view family, std::string_view qualifier,
                               uint64_t timestamp, std::string_view value) {
    return Condition(Kind::kValueEquals, family, qualifier, timestamp, timestamp, value);
  }

  Kind kind() const { return kind_; }
  const std::string& family() const { return family_; }
  const std::string& qualifier() const { return qualifier_; }
  // The timestamps looked at; both equal `timestamp` for kCellExists and kValueEquals.
  uint64_t min_timestamp() const { return min_timestamp_; }
  uint64_t max_timestamp() const { return max_timestamp_; }
  // kValueEquals only; empty otherwise.
  const std::string& value() const { return value_; }

  friend bool operator==(const Condition&, const Condition&) = default;

 private:
  Condition(Kind kind, std::string_view family, std::string_view qualifier, uint64_t min_ts,
            uint64_t max_ts, std::string_view value)
      : kind_(kind),
        family_(family),
        qualifier_(qualifier),
        min_timestamp_(min_ts),
        max_timestamp_(max_ts),
        value_(value) {}

  Kind kind_;
  std::string family_;
  std::string qualifier_;
  uint64_t min_timestamp_;
  uint64_t max_timestamp_;
  std::string value_;
};

// A condition that did not hold, and the cells that made it fail, newest
// first: for kNoCellInRange every visible cell of the column in the range;
// for kValueEquals the cell at the timestamp, whose value differs; none when
// the cell a kCellExists or kValueEquals asked for is missing.
struct ConditionFailure {
  size_t index = 0;  // the condition's position in the list passed in
  std::vector<Cell> cells;

  friend bool operator==(const ConditionFailure&, const ConditionFailure&) = default;
};

// The outcome of one row of a check-and-mutate.
struct CheckAndMutateResult {
  // Every condition held and the mutation (if any) was applied. When false,
  // nothing of the mutation was applied.
  bool applied = false;
  // When !applied: every condition that did not hold, in list order.
  std::vector<ConditionFailure> failures;
};

// One row of Table::CheckAndMutateBatch.
struct ConditionalMutation {
  std::string row;
  std::vector<Condition> conditions;
  RowMutation mutation;
};

}  // namespace strata

#endif  // STRATA_ROW_MUTATION_H_
