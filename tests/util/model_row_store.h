// ModelRowStore: a RowStore (strata/row_store.h) held in memory in std::maps,
// the second implementation of the row-store seam and a reference model for
// the engine's.
//
// It keeps only visible cells: a mutation's entries are applied to the maps
// one after another, a Put setting a version and each delete erasing the
// versions it covers at that moment. Since a delete hides only what was
// written before it, that is the contract's visibility by definition, with
// no markers, sequences or merging. It ignores
// ColumnFamilyOptions::column_markers_hide_by_timestamp: a Put below an
// earlier DeleteColumn shows, which the contract allows. Every call takes
// one mutex, so calls are atomic for every row at once (stronger than the
// contract asks). Nothing is durable: WriteOptions::sync changes nothing.
//
// Input is checked as the Table store checks it: the same families (in
// schema order) and the same size limits. Scans copy their rows' cells when
// they start. Read sessions fetch one column per miss (no prediction) and
// cache it for the rest of the session.
//
// Thread-safe; its iterators and sessions are thread-compatible and may
// outlive it.
#ifndef STRATA_TESTS_UTIL_MODEL_ROW_STORE_H_
#define STRATA_TESTS_UTIL_MODEL_ROW_STORE_H_

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "strata/options.h"
#include "strata/row_store.h"

namespace strata::test {

class ModelRowStore final : public RowStore {
 public:
  // What one write may carry; larger input is InvalidArgument. The defaults
  // are EngineOptions'.
  struct Limits : RowStoreLimits {
    Limits() {
      max_row_key_size = EngineOptions().max_row_key_size;
      max_qualifier_size = EngineOptions().max_qualifier_size;
      max_value_size = EngineOptions().max_value_size;
    }
  };

  // A store with `families`, in the order cells of a row come back in, and
  // the default limits. REQUIRES: the names are distinct.
  explicit ModelRowStore(std::vector<std::string> families);
  ModelRowStore(std::vector<std::string> families, const Limits& limits);
  // The families of `schema` (its order) and the limits of `options`: the
  // model of a table created with `schema` in an engine opened with `options`.
  static std::unique_ptr<ModelRowStore> ForSchema(const TableSchema& schema,
                                                  const EngineOptions& options = EngineOptions());
  ~ModelRowStore() override;

  RowStoreLimits GetLimits() const override;

  Result<std::vector<Cell>> ReadRow(const ReadOptions& options, std::string_view row,
                                    const RowFilter& filter) const override;
  Status Mutate(const WriteOptions& options, std::string_view row,
                const RowMutation& mutation) override;
  Result<CheckAndMutateResult> CheckAndMutate(const WriteOptions& options, std::string_view row,
                                              const std::vector<Condition>& conditions,
                                              const RowMutation& mutation) override;
  Result<std::vector<CheckAndMutateResult>> CheckAndMutateBatch(
      const WriteOptions& options, const std::vector<ConditionalMutation>& batch) override;
  Result<std::vector<CheckAndMutateResult>> CheckAndMutateAll(
      const WriteOptions& options, const std::vector<ConditionalMutation>& batch) override;
  Result<std::unique_ptr<RowIterator>> Scan(const ReadOptions& options,
                                            const ScanSpec& spec) const override;
  Result<std::unique_ptr<ReadSession>> NewReadSession(
      const ReadSessionOptions& options) const override;

  // Every row with a visible cell, with all its cells: what a full scan with
  // no filter returns.
  std::vector<std::pair<std::string, std::vector<Cell>>> Dump() const;

 private:
  class State;

  Result<std::vector<CheckAndMutateResult>> Batch(const std::vector<ConditionalMutation>& batch,
                                                  bool all_or_nothing);

  std::shared_ptr<State> state_;
};

}  // namespace strata::test

#endif  // STRATA_TESTS_UTIL_MODEL_ROW_STORE_H_
