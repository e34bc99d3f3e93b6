// NewTableRowStore: a Table behind the RowStore interface. Every call
// forwards to the Table call of the same name; the handle is thread-safe, so
// the store is too.
#include <memory>
#include <utility>

#include "strata/row_store.h"
#include "strata/table.h"

namespace strata {

namespace {

class TableRowStore final : public RowStore {
 public:
  explicit TableRowStore(Table table) : table_(std::move(table)) {}

  RowStoreLimits GetLimits() const override { return table_.GetLimits(); }

  Result<std::vector<Cell>> ReadRow(const ReadOptions& options, std::string_view row,
                                    const RowFilter& filter) const override {
    return table_.ReadRow(options, row, filter);
  }

  Status Mutate(const WriteOptions& options, std::string_view row,
                const RowMutation& mutation) override {
    return table_.Mutate(options, row, mutation);
  }

  Result<CheckAndMutateResult> CheckAndMutate(const WriteOptions& options, std::string_view row,
                                              const std::vector<Condition>& conditions,
                                              const RowMutation& mutation) override {
    return table_.CheckAndMutate(options, row, conditions, mutation);
  }

  Result<std::vector<CheckAndMutateResult>> CheckAndMutateBatch(
      const WriteOptions& options, const std::vector<ConditionalMutation>& batch) override {
    return table_.CheckAndMutateBatch(options, batch);
  }

  Result<std::vector<CheckAndMutateResult>> CheckAndMutateAll(
      const WriteOptions& options, const std::vector<ConditionalMutation>& batch) override {
    return table_.CheckAndMutateAll(options, batch);
  }

  Result<std::unique_ptr<RowIterator>> Scan(const ReadOptions& options,
                                            const ScanSpec& spec) const override {
    return table_.Scan(options, spec);
  }

  Result<std::unique_ptr<ReadSession>> NewReadSession(
      const ReadSessionOptions& options) const override {
    return table_.NewReadSession(options);
  }

 private:
  Table table_;
};

}  // namespace

std::unique_ptr<RowStore> NewTableRowStore(Table table) {
  return std::make_unique<TableRowStore>(std::move(table));
}

}  // namespace strata
