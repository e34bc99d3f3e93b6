// EngineCore::CheckAndMutate and CheckAndMutateBatch: validate every row,
// take the rows' stripes exclusively, read what the conditions look at,
// evaluate, and log the rows whose conditions hold as one record. See "Check
// and mutate" in engine/README.md.
#include <algorithm>
#include <mutex>
#include <string>

#include "common/coding.h"
#include "engine/conditions.h"
#include "engine/engine_core.h"
#include "engine/resource_governor.h"

namespace strata::engine {

Result<CheckAndMutateResult> EngineCore::CheckAndMutate(const TableState& table,
                                                        const WriteOptions& options,
                                                        std::string_view row,
                                                        const std::vector<Condition>& conditions,
                                                        const RowMutation& mutation) {
  std::shared_lock<SharedGate> gate(close_mu_);
  if (closed_) return ClosedError();
  STRATA_RETURN_IF_ERROR(CheckLive(table));
  std::vector<ConditionalRow> rows{ConditionalRow{row, &conditions, &mutation}};
  std::vector<CheckAndMutateResult> results;
  STRATA_RETURN_IF_ERROR(
      CheckAndMutateRows(table, options, rows, /*batch=*/false, &gate, &results));
  return std::move(results.front());
}

Result<std::vector<CheckAndMutateResult>> EngineCore::CheckAndMutateBatch(
    const TableState& table, const WriteOptions& options,
    const std::vector<ConditionalMutation>& batch) {
  std::shared_lock<SharedGate> gate(close_mu_);
  if (closed_) return ClosedError();
  STRATA_RETURN_IF_ERROR(CheckLive(table));
  std::vector<ConditionalRow> rows;
  rows.reserve(batch.size());
  for (const ConditionalMutation& m : batch) {
    rows.push_back(ConditionalRow{m.row, &m.conditions, &m.mutation});
  }
  std::vector<CheckAndMutateResult> results;
  STRATA_RETURN_IF_ERROR(
      CheckAndMutateRows(table, options, rows, /*batch=*/true, &gate, &results));
  return results;
}

Status EngineCore::CheckAndMutateRows(const TableState& table, const WriteOptions& options,
                                      const std::vector<ConditionalRow>& rows, bool batch,
                                      std::shared_lock<SharedGate>* gate,
                                      std::vector<CheckAndMutateResult>* results) {
  results->assign(rows.size(), CheckAndMutateResult());
  if (rows.empty()) return Status::OK();

  // Everything is checked before any lock is taken or anything is written.
  bool writes = false;
  bool adds_data = false;
  std::vector<uint64_t> bytes(rows.size(), 0);
  uint64_t total_bytes = 0;
  std::shared_ptr<const Schema> schema = table.schema();
  auto validate = [&]() -> Status {
    for (size_t i = 0; i < rows.size(); i++) {
      const ConditionalRow& r = rows[i];
      Status s;
      if (r.conditions->empty() && r.mutation->empty()) {
        s = Status::InvalidArgument("no conditions and an empty mutation");
      } else if (r.mutation->empty()) {
        s = ValidateRowKey(r.row);
      } else {
        s = ValidateMutation(table, *schema, r.row, *r.mutation);
      }
      if (s.ok()) s = ValidateConditions(*schema, table.name, options_, *r.conditions);
      if (!s.ok()) return batch ? s.WithContext("batch entry " + std::to_string(i)) : s;
    }
    return Status::OK();
  };
  STRATA_RETURN_IF_ERROR(validate());
  for (size_t i = 0; i < rows.size(); i++) {
    const ConditionalRow& r = rows[i];
    if (r.mutation->empty()) continue;
    writes = true;
    adds_data = adds_data || MutationAddsData(*r.mutation);
    bytes[i] = MutationPayloadBytes(r.row, *r.mutation);
    total_bytes += bytes[i];
  }
  if (batch) {
    std::vector<size_t> order(rows.size());
    for (size_t i = 0; i < order.size(); i++) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return rows[a].row < rows[b].row; });
    for (size_t i = 1; i < order.size(); i++) {
      if (rows[order[i - 1]].row == rows[order[i]].row) {
        const size_t first = std::min(order[i - 1], order[i]);
        const size_t second = std::max(order[i - 1], order[i]);
        return Status::InvalidArgument("batch entry " + std::to_string(second) + ": row '" +
                                       EscapeBytes(rows[second].row) +
                                       "' is already in batch entry " + std::to_string(first));
      }
    }
  }
  // Admitted for the bytes every write would add, whether or not its
  // conditions hold: waits must come before the row locks.
  if (writes) STRATA_RETURN_IF_ERROR(AdmitWrite(table, total_bytes, adds_data, gate));
  // Resolved after the admission, which may have let go of the close gate;
  // a schema change that came meanwhile applies (as in Mutate). The gate is
  // held from here on, so the schema stays.
  if (std::shared_ptr<const Schema> now = table.schema(); now != schema) {
    schema = std::move(now);
    STRATA_RETURN_IF_ERROR(validate());
  }
  std::vector<PendingRow> pending(rows.size());
  for (size_t i = 0; i < rows.size(); i++) {
    if (rows[i].mutation->empty()) continue;
    STRATA_RETURN_IF_ERROR(
        MakePendingRow(table, *schema, rows[i].row, *rows[i].mutation, &pending[i]));
  }

  std::vector<size_t> stripes(rows.size());
  for (size_t i = 0; i < rows.size(); i++) {
    stripes[i] = RowLocks::StripeOf(table.id, rows[i].row);
  }
  ExclusiveRowLocks locks(&row_locks_, std::move(stripes));
  // Every write of these rows that returned is applied and visible (writers
  // hold their stripe until then), and none can start until the locks go.
  for (size_t i = 0; i < rows.size(); i++) {
    const std::vector<Condition>& conditions = *rows[i].conditions;
    if (conditions.empty()) {
      (*results)[i].applied = true;
      continue;
    }
    RowCells cells;
    Status read = ReadRowOpenInto(table, *schema, rows[i].row,
                                  ConditionReadFilter(*schema, conditions), &cells);
    if (!read.ok()) return batch ? read.WithContext("batch entry " + std::to_string(i)) : read;
    // Groups interleave families: cells from several are ordered by family id.
    if (cells.track_families) cells.SortByFamily();
    EvaluateConditions(conditions, cells.cells, &(*results)[i]);
  }

  // One record for every row that applies, grouped by tablet.
  std::vector<PendingRow> apply;
  uint64_t applied_bytes = 0;
  for (size_t i = 0; i < rows.size(); i++) {
    if ((*results)[i].applied && !rows[i].mutation->empty()) {
      apply.push_back(std::move(pending[i]));
      applied_bytes += bytes[i];
    }
  }
  // Nothing to log (every condition failed, or pure checks): with sync,
  // the writes the checks saw are made durable all the same, so that a
  // caller acting on an answer never acts on something a crash could undo.
  if (apply.empty()) return options.sync ? log_->Sync() : Status::OK();
  std::stable_sort(apply.begin(), apply.end(), [](const PendingRow& a, const PendingRow& b) {
    return a.tablet->id < b.tablet->id;
  });
  STRATA_RETURN_IF_ERROR(WriteRows(options, apply.data(), apply.size()));
  table.budget->CountWrites(apply.size(), applied_bytes);
  return Status::OK();
}

}  // namespace strata::engine
