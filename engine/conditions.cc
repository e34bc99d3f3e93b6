#include "engine/conditions.h"

#include <algorithm>
#include <cassert>
#include <string>
#include <utility>

#include "common/coding.h"

namespace strata::engine {

Status ValidateConditions(const Schema& schema, const std::string& table_name,
                          const EngineOptions& options, const std::vector<Condition>& conditions) {
  for (size_t i = 0; i < conditions.size(); i++) {
    const Condition& c = conditions[i];
    const std::string where = "condition " + std::to_string(i) + ": ";
    if (schema.FindFamily(c.family()) == nullptr) {
      return Status::InvalidArgument(where + "table '" + table_name + "' has no column family '" +
                                     EscapePrefix(c.family()) + "'");
    }
    if (c.qualifier().size() > options.max_qualifier_size) {
      return Status::InvalidArgument(
          where + "qualifier is " + std::to_string(c.qualifier().size()) + " bytes; the limit is " +
          std::to_string(options.max_qualifier_size));
    }
    if (c.value().size() > options.max_value_size) {
      return Status::InvalidArgument(where + "value is " + std::to_string(c.value().size()) +
                                     " bytes; the limit is " +
                                     std::to_string(options.max_value_size));
    }
    for (uint64_t ts : {c.min_timestamp(), c.max_timestamp()}) {
      if (ts < kMinTimestamp || ts > kMaxTimestamp) {
        return Status::InvalidArgument(where + "timestamp " + std::to_string(ts) +
                                       " is reserved; use 1 to 2^64-2");
      }
    }
    if (c.min_timestamp() > c.max_timestamp()) {
      return Status::InvalidArgument(where + "min_timestamp " + std::to_string(c.min_timestamp()) +
                                     " is above max_timestamp " +
                                     std::to_string(c.max_timestamp()));
    }
    if (c.kind() != Condition::Kind::kValueEquals && !c.value().empty()) {
      return Status::InvalidArgument(where + "only a value-equals condition carries a value");
    }
  }
  return Status::OK();
}

ResolvedFilter ConditionReadFilter(const Schema& schema, const std::vector<Condition>& conditions) {
  ResolvedFilter filter;
  size_t qualifier_bytes = 0;
  for (const Condition& c : conditions) qualifier_bytes += c.qualifier().size();
  filter.ReserveColumns(conditions.size(), qualifier_bytes);
  for (const Condition& c : conditions) {
    const FamilyInfo* family = schema.FindFamily(c.family());
    assert(family != nullptr);
    filter.AddColumn(family->id, c.qualifier(),
                     VersionRange{c.min_timestamp(), c.max_timestamp(), UINT32_MAX});
  }
  filter.SortColumns();  // repeats of a column read over the union of their ranges
  return filter;
}

void EvaluateConditions(const std::vector<Condition>& conditions, const std::vector<Cell>& cells,
                        CheckAndMutateResult* result) {
  result->failures.clear();
  for (size_t i = 0; i < conditions.size(); i++) {
    const Condition& c = conditions[i];
    std::vector<Cell> found;  // the column's cells in the condition's range, newest first
    for (const Cell& cell : cells) {
      if (cell.timestamp >= c.min_timestamp() && cell.timestamp <= c.max_timestamp() &&
          cell.family == c.family() && cell.qualifier == c.qualifier()) {
        found.push_back(cell);
      }
    }
    bool holds = false;
    switch (c.kind()) {
      case Condition::Kind::kNoCellInRange:
        holds = found.empty();
        break;
      case Condition::Kind::kCellExists:
        holds = !found.empty();
        break;
      case Condition::Kind::kValueEquals:
        holds = !found.empty() && found.front().value == c.value();
        break;
    }
    if (!holds) result->failures.push_back(ConditionFailure{i, std::move(found)});
  }
  result->applied = result->failures.empty();
}

}  // namespace strata::engine
