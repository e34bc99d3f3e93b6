// Conditions of a check-and-mutate: checking them as input, the one read
// that sees every cell they look at, and evaluating them against its result.
//
// Pure functions; thread-safe.
#ifndef STRATA_ENGINE_CONDITIONS_H_
#define STRATA_ENGINE_CONDITIONS_H_

#include <string>
#include <vector>

#include "engine/row_reader.h"
#include "engine/schema.h"
#include "strata/options.h"
#include "strata/row_mutation.h"
#include "strata/status.h"

namespace strata::engine {

// InvalidArgument, naming the condition by its index, when a condition names
// a family `schema` lacks, has a qualifier or value over the limits of
// `options`, or timestamps outside [kMinTimestamp, kMaxTimestamp] or with
// min above max. `table_name` is for the message.
Status ValidateConditions(const Schema& schema, const std::string& table_name,
                          const EngineOptions& options, const std::vector<Condition>& conditions);

// The filter of the one read that sees every visible cell any of
// `conditions` looks at: their columns, each read over the timestamps its
// conditions ask for (from the lowest to the highest of them), every version.
// REQUIRES: ValidateConditions(schema, ...) is OK for `conditions`.
ResolvedFilter ConditionReadFilter(const Schema& schema, const std::vector<Condition>& conditions);

// Evaluates `conditions` against `cells`, what a read with
// ConditionReadFilter(conditions) returns (ordered by family, qualifier, then
// newest first). Sets result->applied to whether all hold and lists the
// failures.
void EvaluateConditions(const std::vector<Condition>& conditions, const std::vector<Cell>& cells,
                        CheckAndMutateResult* result);

}  // namespace strata::engine

#endif  // STRATA_ENGINE_CONDITIONS_H_
