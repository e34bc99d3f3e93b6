// Test doubles for transactions: an oracle that hands out chosen timestamps,
// tables held in ModelRowStores, and a TxnDB wired to them.
#ifndef STRATA_TESTS_TXN_TXN_TEST_UTIL_H_
#define STRATA_TESTS_TXN_TXN_TEST_UTIL_H_

#include <atomic>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/coding.h"
#include "strata/engine.h"
#include "strata/row_store.h"
#include "strata/transaction.h"
#include "txn/local_liveness_registry.h"
#include "txn/records.h"
#include "txn/timestamp_oracle.h"
#include "txn/transaction_db.h"
#include "util/model_row_store.h"

namespace strata::test {

// A store that forwards every call to another; tests derive from it and
// override the calls they watch or interpose on.
class ForwardingRowStore : public RowStore {
 public:
  explicit ForwardingRowStore(std::shared_ptr<RowStore> base) : base_(std::move(base)) {}

  RowStoreLimits GetLimits() const override { return base_->GetLimits(); }

  Result<std::vector<Cell>> ReadRow(const ReadOptions& o, std::string_view row,
                                    const RowFilter& f) const override {
    return base_->ReadRow(o, row, f);
  }
  Status Mutate(const WriteOptions& o, std::string_view row, const RowMutation& m) override {
    return base_->Mutate(o, row, m);
  }
  Result<CheckAndMutateResult> CheckAndMutate(const WriteOptions& o, std::string_view row,
                                              const std::vector<Condition>& c,
                                              const RowMutation& m) override {
    return base_->CheckAndMutate(o, row, c, m);
  }
  Result<std::vector<CheckAndMutateResult>> CheckAndMutateBatch(
      const WriteOptions& o, const std::vector<ConditionalMutation>& batch) override {
    return base_->CheckAndMutateBatch(o, batch);
  }
  Result<std::vector<CheckAndMutateResult>> CheckAndMutateAll(
      const WriteOptions& o, const std::vector<ConditionalMutation>& batch) override {
    return base_->CheckAndMutateAll(o, batch);
  }
  Result<std::unique_ptr<RowIterator>> Scan(const ReadOptions& o,
                                            const ScanSpec& spec) const override {
    return base_->Scan(o, spec);
  }
  Result<std::unique_ptr<ReadSession>> NewReadSession(const ReadSessionOptions& o) const override {
    return base_->NewReadSession(o);
  }

 protected:
  RowStore& base() const { return *base_; }

 private:
  std::shared_ptr<RowStore> base_;
};

// Timestamps 1, 2, 3, ... unless the test sets the next one.
class CountingOracle final : public txn::TimestampOracle {
 public:
  Result<uint64_t> GetTimestamp() override { return next_.fetch_add(1); }
  Status GetTimestamps(uint32_t n, uint64_t* first) override {
    *first = next_.fetch_add(n);
    return Status::OK();
  }
  // REQUIRES: above every timestamp handed out.
  void SetNext(uint64_t ts) { next_.store(ts); }

 private:
  std::atomic<uint64_t> next_{1};
};

// Tables by name, each a ModelRowStore with the transactional schema.
class ModelTables final : public txn::TableResolver {
 public:
  Result<std::shared_ptr<RowStore>> Resolve(std::string_view table) override {
    std::lock_guard<std::mutex> l(mu_);
    auto it = stores_.find(std::string(table));
    if (it == stores_.end()) return Status::NotFound("no table " + EscapePrefix(table));
    return it->second;
  }
  Status Create(std::string_view table) {
    std::lock_guard<std::mutex> l(mu_);
    auto [it, inserted] = stores_.emplace(
        std::string(table),
        std::shared_ptr<RowStore>(ModelRowStore::ForSchema(txn::TransactionalSchema({}))));
    return inserted ? Status::OK() : Status::AlreadyExists("table " + std::string(table));
  }
  std::shared_ptr<RowStore> Get(const std::string& table) {
    std::lock_guard<std::mutex> l(mu_);
    return stores_.at(table);
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<RowStore>> stores_;
};

// Every cell of `row` in `family`, newest first per column.
inline std::vector<Cell> CellsOf(const RowStore& store, std::string_view row,
                                 std::string_view family) {
  RowFilter filter;
  filter.families = {std::string(family)};
  Result<std::vector<Cell>> cells = store.ReadRow(ReadOptions(), row, filter);
  return cells.ok() ? *cells : std::vector<Cell>();
}

// The commit mode transaction tests open their TransactionDBs with, set in
// `options`: one phase when STRATA_TEST_ONE_PHASE=1 is in the environment,
// pessimistic transactions (with one phase, the default) when
// STRATA_TEST_PESSIMISTIC=1, two phases and optimistic transactions
// otherwise. CTest runs the transaction tests once in each mode. Tests of
// what only one mode does set TransactionDBOptions::one_phase_commit and
// TransactionOptions::mode themselves.
inline void SetCommitModeFromEnvironment(TransactionDBOptions* options) {
  auto set = [](const char* name) {
    const char* s = std::getenv(name);
    return s != nullptr && s[0] == '1';
  };
  options->pessimistic = set("STRATA_TEST_PESSIMISTIC");
  options->one_phase_commit = set("STRATA_TEST_ONE_PHASE") || options->pessimistic;
}

// The transactional tables of an engine tenant, as TransactionDB::Open wires
// them (TenantTables in txn/transaction_db.cc).
class EngineTables final : public txn::TableResolver {
 public:
  explicit EngineTables(Tenant tenant) : tenant_(std::move(tenant)) {}
  Result<std::shared_ptr<RowStore>> Resolve(std::string_view table) override {
    std::lock_guard<std::mutex> l(mu_);
    auto it = stores_.find(std::string(table));
    if (it != stores_.end()) return it->second;
    STRATA_ASSIGN_OR_RETURN(Table t, tenant_.OpenTable(table));
    std::shared_ptr<RowStore> store = NewTableRowStore(std::move(t));
    stores_.emplace(std::string(table), store);
    return store;
  }
  Status Create(std::string_view table) {
    return tenant_.CreateTable(table, txn::TransactionalSchema({}));
  }

 private:
  Tenant tenant_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<RowStore>> stores_;
};

// Every lock cell of a whole table.
inline size_t CountLocks(const RowStore& store) {
  ScanSpec spec;
  spec.filter.families = {std::string(txn::kLockFamily)};
  Result<std::unique_ptr<RowIterator>> it = store.Scan(ReadOptions(), spec);
  if (!it.ok()) return SIZE_MAX;
  size_t n = 0;
  for (; (*it)->Valid(); (*it)->Next()) n += (*it)->cells().size();
  return n;
}

}  // namespace strata::test

#endif  // STRATA_TESTS_TXN_TXN_TEST_UTIL_H_
