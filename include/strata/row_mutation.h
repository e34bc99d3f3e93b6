// RowMutation: an ordered list of changes to one row, applied atomically by
// Table::Mutate. RowFilter and Cell: what Table::ReadRow asks for and returns.
//
// Later entries of one mutation win over earlier ones: a Put after a
// DeleteColumn of the same column at a covering timestamp is visible.
//
// Value types; thread-compatible. Intentionally copyable.
#ifndef STRATA_ROW_MUTATION_H_
#define STRATA_ROW_MUTATION_H_

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

}  // namespace strata

#endif  // STRATA_ROW_MUTATION_H_
