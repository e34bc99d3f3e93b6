#include "engine/input_checks.h"

#include <algorithm>
#include <utility>

#include "common/coding.h"
#include "engine/conditions.h"
#include "sstable/table_builder.h"
#include "wal/log_format.h"

namespace strata::engine {

namespace {

// The most EngineOptions::max_row_key_size, max_qualifier_size and
// max_value_size may allow: lengths are stored in 32 bits, and a write must
// fit with room to spare.
constexpr size_t kMaxWriteLimit = size_t{1} << 30;

CellType ToCellType(RowMutation::Kind kind) {
  switch (kind) {
    case RowMutation::Kind::kPut: return CellType::kPut;
    case RowMutation::Kind::kDeleteCell: return CellType::kDeleteCell;
    case RowMutation::Kind::kDeleteColumn: return CellType::kDeleteColumn;
    case RowMutation::Kind::kDeleteRow: return CellType::kDeleteRow;
  }
  return CellType::kPut;
}

Status NoSuchFamily(const std::string& table_name, std::string_view family) {
  return Status::InvalidArgument("table '" + table_name + "' has no column family '" +
                                 EscapePrefix(family) + "'");
}

}  // namespace

Status ValidateEngineOptions(const EngineOptions& options) {
  if (options.level0_compaction_trigger < 1 ||
      options.level0_slowdown_trigger <= options.level0_compaction_trigger ||
      options.level0_stop_trigger < options.level0_slowdown_trigger) {
    return Status::InvalidArgument(
        "level-0 triggers must satisfy 1 <= compaction < slowdown <= stop (got " +
        std::to_string(options.level0_compaction_trigger) + ", " +
        std::to_string(options.level0_slowdown_trigger) + ", " +
        std::to_string(options.level0_stop_trigger) + ")");
  }
  switch (options.background_priority) {
    case BackgroundPriority::kNormal:
    case BackgroundPriority::kBatch:
    case BackgroundPriority::kLow:
      break;
    default:
      return Status::InvalidArgument(
          "background_priority must be kNormal, kBatch or kLow (got " +
          std::to_string(static_cast<int>(options.background_priority)) + ")");
  }
  if (options.max_background_compactions < 1 || options.max_background_compactions > 64) {
    return Status::InvalidArgument("max_background_compactions must be in [1, 64] (got " +
                                   std::to_string(options.max_background_compactions) + ")");
  }
  if (options.max_immutable_memtables < 1) {
    return Status::InvalidArgument("max_immutable_memtables must be at least 1 (got " +
                                   std::to_string(options.max_immutable_memtables) + ")");
  }
  if (options.write_buffer_size < 4096 || options.target_file_size < 4096 ||
      options.level1_max_bytes < 4096 || options.total_write_buffer_size < 4096) {
    return Status::InvalidArgument(
        "write_buffer_size, total_write_buffer_size, target_file_size and level1_max_bytes must "
        "be at least 4096");
  }
  // The log writer would refuse it only after the log was recovered.
  if (options.wal_segment_size < wal::kBlockSize || options.wal_segment_size % wal::kBlockSize) {
    return Status::InvalidArgument("wal_segment_size must be a positive multiple of " +
                                   std::to_string(wal::kBlockSize) + " (got " +
                                   std::to_string(options.wal_segment_size) + ")");
  }
  for (const auto& [name, limit] :
       {std::pair<const char*, size_t>{"max_row_key_size", options.max_row_key_size},
        {"max_qualifier_size", options.max_qualifier_size},
        {"max_value_size", options.max_value_size}}) {
    if (limit < 1 || limit > kMaxWriteLimit) {
      return Status::InvalidArgument(std::string(name) + " must be in [1, " +
                                     std::to_string(kMaxWriteLimit) + "] (got " +
                                     std::to_string(limit) + ")");
    }
  }
  return Status::OK();
}

Status ValidateRowKey(const EngineOptions& options, std::string_view row) {
  if (row.empty()) return Status::InvalidArgument("row key is empty");
  if (row.size() > options.max_row_key_size) {
    return Status::InvalidArgument("row key is " + std::to_string(row.size()) +
                                   " bytes; the limit is " +
                                   std::to_string(options.max_row_key_size));
  }
  return Status::OK();
}

Status ValidateMutation(const EngineOptions& options, const std::string& table_name,
                        const Schema& schema, std::string_view row, const RowMutation& mutation) {
  STRATA_RETURN_IF_ERROR(ValidateRowKey(options, row));
  if (mutation.empty()) return Status::InvalidArgument("mutation has no entries");
  for (const auto& e : mutation.entries()) {
    if (e.timestamp < kMinTimestamp || e.timestamp > kMaxTimestamp) {
      return Status::InvalidArgument("timestamp " + std::to_string(e.timestamp) +
                                     " is reserved; use 1 to 2^64-2");
    }
    // A cell must fit in one table block once encoded (the row key and
    // qualifier double their 0x00 bytes): only cells near a gigabyte come
    // close, so the exact size is computed only for them.
    constexpr uint64_t kMaxCell = sstable::TableBuilder::kMaxEntryBytes - 64;
    if (2 * uint64_t{row.size()} + 2 * e.qualifier.size() + e.value.size() > kMaxCell - 64) {
      const uint64_t encoded =
          MemcomparableLength(row) + MemcomparableLength(e.qualifier) + e.value.size() + 2 + 16;
      if (encoded > kMaxCell) {
        return Status::InvalidArgument("a cell of " + std::to_string(encoded) +
                                       " bytes (key and value, encoded) does not fit in a table "
                                       "block of at most " +
                                       std::to_string(kMaxCell) + " bytes");
      }
    }
    if (e.kind == RowMutation::Kind::kDeleteRow) continue;
    if (schema.FindFamily(e.family) == nullptr) return NoSuchFamily(table_name, e.family);
    if (e.qualifier.size() > options.max_qualifier_size) {
      return Status::InvalidArgument("qualifier is " + std::to_string(e.qualifier.size()) +
                                     " bytes; the limit is " +
                                     std::to_string(options.max_qualifier_size));
    }
    if (e.value.size() > options.max_value_size) {
      return Status::InvalidArgument("value is " + std::to_string(e.value.size()) +
                                     " bytes; the limit is " +
                                     std::to_string(options.max_value_size));
    }
    if (e.kind != RowMutation::Kind::kPut && !e.value.empty()) {
      return Status::InvalidArgument("a delete carries no value");
    }
  }
  return Status::OK();
}

Status MutationEntries(const std::string& table_name, const Schema& schema,
                       const RowMutation& mutation, std::vector<CellEntry>* entries) {
  entries->clear();
  entries->reserve(mutation.size());
  for (const auto& e : mutation.entries()) {
    const FamilyInfo* f =
        e.kind == RowMutation::Kind::kDeleteRow ? nullptr : schema.FindFamily(e.family);
    if (e.kind != RowMutation::Kind::kDeleteRow && f == nullptr) {
      return NoSuchFamily(table_name, e.family);
    }
    entries->push_back(CellEntry{ToCellType(e.kind), f ? f->id : kRowMarkerFamily, e.qualifier,
                                 e.timestamp, e.value});
  }
  return Status::OK();
}

Status ValidateConditionalRows(const EngineOptions& options, const std::string& table_name,
                               const Schema& schema, const std::vector<ConditionalRow>& rows,
                               bool batch) {
  for (size_t i = 0; i < rows.size(); i++) {
    const ConditionalRow& r = rows[i];
    Status s;
    if (r.conditions->empty() && r.mutation->empty()) {
      s = Status::InvalidArgument("no conditions and an empty mutation");
    } else if (r.mutation->empty()) {
      s = ValidateRowKey(options, r.row);
    } else {
      s = ValidateMutation(options, table_name, schema, r.row, *r.mutation);
    }
    if (s.ok()) s = ValidateConditions(schema, table_name, options, *r.conditions);
    if (!s.ok()) return batch ? s.WithContext("batch entry " + std::to_string(i)) : s;
  }
  return Status::OK();
}

Status CheckDistinctRows(const std::vector<ConditionalRow>& rows) {
  std::vector<size_t> order(rows.size());
  for (size_t i = 0; i < order.size(); i++) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return rows[a].row < rows[b].row; });
  for (size_t i = 1; i < order.size(); i++) {
    if (rows[order[i - 1]].row == rows[order[i]].row) {
      const size_t first = std::min(order[i - 1], order[i]);
      const size_t second = std::max(order[i - 1], order[i]);
      return Status::InvalidArgument("batch entry " + std::to_string(second) + ": row '" +
                                     EscapePrefix(rows[second].row) +
                                     "' is already in batch entry " + std::to_string(first));
    }
  }
  return Status::OK();
}

Status ResolveFilter(const std::string& table_name, const Schema& schema, const RowFilter& filter,
                     ResolvedFilter* resolved) {
  if (filter.min_timestamp > filter.max_timestamp) {
    return Status::InvalidArgument("filter's min_timestamp is above its max_timestamp");
  }
  if (filter.max_versions == 0) return Status::InvalidArgument("filter's max_versions is 0");
  resolved->min_timestamp = filter.min_timestamp;
  resolved->max_timestamp = filter.max_timestamp;
  resolved->max_versions = filter.max_versions;
  resolved->all_families = filter.families.empty() && filter.columns.empty();
  if (resolved->all_families) return Status::OK();
  auto find = [&](const std::string& name) -> Result<uint16_t> {
    const FamilyInfo* f = schema.FindFamily(name);
    if (f == nullptr) return NoSuchFamily(table_name, name);
    return f->id;
  };
  if (!filter.families.empty()) {
    // By id; ids of removed families are never reused, so they may exceed
    // the number of families.
    resolved->families.assign(schema.next_family_id(), false);
  }
  for (const auto& name : filter.families) {
    Result<uint16_t> id = find(name);
    if (!id.ok()) return id.status();
    resolved->families[*id] = true;
  }
  size_t qualifier_bytes = 0;
  for (const auto& column : filter.columns) qualifier_bytes += column.second.size();
  resolved->ReserveColumns(filter.columns.size(), qualifier_bytes);
  for (const auto& [family, qualifier] : filter.columns) {
    Result<uint16_t> id = find(family);
    if (!id.ok()) return id.status();
    resolved->AddColumn(*id, qualifier);
  }
  resolved->SortColumns();
  return Status::OK();
}

}  // namespace strata::engine
