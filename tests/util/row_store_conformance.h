// The row-store conformance suite (strata/row_store.h), shared by every
// implementation of the seam: scripted cases with every expected answer
// written out (row_store_conformance_cases.cc, compiled into each test
// binary that instantiates RowStoreConformanceTest with its stores), and
// random operation sequences run on a store and the ModelRowStore at once,
// every answer compared: cells, scans, check-and-mutate results with their
// failure cells, batch results, read sessions and the status code of bad
// input. A store's Harness says what may happen to its storage between
// calls without changing what it holds (flushes, compactions, reopens).
//
// Thread-compatible, as tests are.
#ifndef STRATA_TESTS_UTIL_ROW_STORE_CONFORMANCE_H_
#define STRATA_TESTS_UTIL_ROW_STORE_CONFORMANCE_H_

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "strata/options.h"
#include "strata/row_store.h"
#include "util/model_row_store.h"
#include "util/status_matchers.h"

namespace strata {

// How GoogleTest prints a cell in a failure message.
void PrintTo(const Cell& c, std::ostream* os);

namespace conformance {

using test::ModelRowStore;
// Families in schema order, which is neither alphabetical nor grouped by
// locality group.
inline TableSchema Schema() {
  TableSchema s;
  s.locality_groups = {{.name = "hot", .in_memory = true}, {.name = "cold"}};
  s.families = {{.name = "w", .locality_group = "cold"},
                {.name = "lock", .locality_group = "hot"},
                {.name = "data", .locality_group = "cold"},
                {.name = "a", .locality_group = "hot"}};
  return s;
}
inline const std::vector<std::string> kFamilies = {"w", "lock", "data", "a"};

constexpr size_t kMaxRow = 64;
constexpr size_t kMaxQualifier = 32;
constexpr size_t kMaxValue = 256;

// Small limits, so bad input is cheap to make, and small memtables, levels
// and tablets, so flushes, compactions and splits happen within a few
// thousand writes.
EngineOptions Options();

// A store under test, and what may happen to its storage between calls
// without changing what it holds.
class Harness {
 public:
  virtual ~Harness() = default;
  virtual RowStore* store() = 0;
  virtual void Flush() {}
  virtual void Compact() {}
  virtual void Reopen() {}
  // Whether the store has CheckAndMutateAll; a store without answers
  // NotSupported, and the cases of that call check only that.
  virtual bool all_or_nothing() const { return true; }
};

// A kind of store the scripted cases run on: its name (the test's suffix)
// and how to make a fresh, empty one with Schema() and Options()' limits.
struct StoreKind {
  std::string name;
  std::function<std::unique_ptr<Harness>()> make;
};
std::string StoreKindName(const ::testing::TestParamInfo<StoreKind>& info);

// The model as a Harness.
class ModelHarness final : public Harness {
 public:
  RowStore* store() override { return store_.get(); }
  ModelRowStore* model() { return store_.get(); }

 private:
  std::unique_ptr<ModelRowStore> store_ = ModelRowStore::ForSchema(Schema(), Options());
};

using Cells = std::vector<Cell>;
using Rows = std::vector<std::pair<std::string, Cells>>;

// Every row of a scan, or its error.
Result<Rows> ScanRows(const RowStore& store, const ScanSpec& spec);
::testing::AssertionResult SameResult(const CheckAndMutateResult& got,
                                      const CheckAndMutateResult& want);
CheckAndMutateResult Applied();
CheckAndMutateResult Failed(std::vector<ConditionFailure> failures);
RowFilter Families(std::vector<std::string> families);
RowFilter Columns(std::vector<std::pair<std::string, std::string>> columns);
RowFilter Timestamps(uint64_t min, uint64_t max, uint32_t max_versions = UINT32_MAX);
ScanSpec Range(std::string start, std::string end, RowFilter filter = RowFilter());

// The scripted cases' fixture.
class RowStoreConformanceTest : public ::testing::TestWithParam<StoreKind> {
 protected:
  void SetUp() override { harness_ = GetParam().make(); }

  RowStore& store() { return *harness_->store(); }

  void Apply(const std::string& row, const RowMutation& m) {
    ASSERT_OK(store().Mutate(WriteOptions{.sync = false}, row, m));
  }
  void Put(const std::string& row, const std::string& family, const std::string& qualifier,
           uint64_t ts, const std::string& value) {
    RowMutation m;
    m.Put(family, qualifier, ts, value);
    Apply(row, m);
  }
  Cells Read(const std::string& row, const RowFilter& filter = RowFilter()) {
    auto r = store().ReadRow(ReadOptions(), row, filter);
    EXPECT_OK(r);
    return r.ok() ? *r : Cells{{"read", "failed", 0, r.status().ToString()}};
  }
  Rows Scan(const ScanSpec& spec) {
    auto r = ScanRows(store(), spec);
    EXPECT_OK(r);
    return r.ok() ? *r : Rows{{"scan failed", {}}};
  }
  CheckAndMutateResult Check(const std::string& row, const std::vector<Condition>& conditions,
                             const RowMutation& m = RowMutation()) {
    auto r = store().CheckAndMutate(WriteOptions{.sync = false}, row, conditions, m);
    EXPECT_OK(r);
    return r.ok() ? *r : CheckAndMutateResult();
  }
  bool Holds(const std::string& row, const Condition& c) { return Check(row, {c}).applied; }

  // Runs `check` on the store as it is, then after a flush, a compaction and
  // a reopen (each a no-op for the model).
  void CheckEverywhere(const std::function<void()>& check) {
    {
      SCOPED_TRACE("as written");
      check();
    }
    harness_->Flush();
    {
      SCOPED_TRACE("after a flush");
      check();
    }
    harness_->Compact();
    {
      SCOPED_TRACE("after a compaction");
      check();
    }
    harness_->Reopen();
    {
      SCOPED_TRACE("after a reopen");
      check();
    }
  }

  std::unique_ptr<Harness> harness_;
};

// Runs `ops` random operations on `store` and `model` at once, stopping at
// the first difference, then compares every row (after a compaction).
// Returns the columns the store's read sessions fetched by prediction.
uint64_t RunRandomOps(uint64_t seed, Harness* store, ModelRowStore* model, int ops);

}  // namespace conformance
}  // namespace strata

#endif  // STRATA_TESTS_UTIL_ROW_STORE_CONFORMANCE_H_
