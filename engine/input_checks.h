// Checks of what callers hand the engine — its options, row keys, row
// mutations and read filters — before anything is touched, and the forms
// the engine works with once they pass: mutations as entries with family
// ids, filters resolved against a schema.
//
// Pure functions; thread-safe. Every failure is InvalidArgument with a
// message that names the field, limit or family involved.
#ifndef STRATA_ENGINE_INPUT_CHECKS_H_
#define STRATA_ENGINE_INPUT_CHECKS_H_

#include <string>
#include <string_view>
#include <vector>

#include "engine/log_record.h"
#include "engine/row_reader.h"
#include "engine/schema.h"
#include "strata/options.h"
#include "strata/row_mutation.h"
#include "strata/status.h"

namespace strata::engine {

// The options an Engine may open with: level-0 triggers in order, sizes and
// limits in range (checked before recovery touches the directory).
Status ValidateEngineOptions(const EngineOptions& options);

// A row key is not empty and at most options.max_row_key_size bytes.
Status ValidateRowKey(const EngineOptions& options, std::string_view row);

// A row mutation of `table_name` fits `schema` and the limits of `options`:
// a valid row key, at least one entry, timestamps in [kMinTimestamp,
// kMaxTimestamp], known families, qualifier and value sizes within the
// limits, no value on a delete, and every cell small enough for a table
// block.
Status ValidateMutation(const EngineOptions& options, const std::string& table_name,
                        const Schema& schema, std::string_view row, const RowMutation& mutation);

// The mutation's entries with family names resolved through `schema`, in
// order, pointing into `mutation`. REQUIRES: ValidateMutation passed with
// `schema` (a family it lacks is still reported, naming `table_name`).
Status MutationEntries(const std::string& table_name, const Schema& schema,
                       const RowMutation& mutation, std::vector<CellEntry>* entries);

// One row of a check-and-mutate call, pointing into the caller's arguments.
struct ConditionalRow {
  std::string_view row;
  const std::vector<Condition>* conditions = nullptr;
  const RowMutation* mutation = nullptr;
};

// Every row of a check-and-mutate call fits `schema` and `options`: a
// mutation as ValidateMutation checks it (or, with none, a valid row key and
// at least one condition), and its conditions as ValidateConditions checks
// them. With `batch`, a message names the entry.
Status ValidateConditionalRows(const EngineOptions& options, const std::string& table_name,
                               const Schema& schema, const std::vector<ConditionalRow>& rows,
                               bool batch);

// InvalidArgument naming both entries when two rows of a batch are one row.
Status CheckDistinctRows(const std::vector<ConditionalRow>& rows);

// `filter` with its family names resolved through `schema` (`table_name` is
// for messages); checks its timestamp range and max_versions.
Status ResolveFilter(const std::string& table_name, const Schema& schema, const RowFilter& filter,
                     ResolvedFilter* resolved);

}  // namespace strata::engine

#endif  // STRATA_ENGINE_INPUT_CHECKS_H_
