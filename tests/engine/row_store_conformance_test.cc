// The row-store conformance suite (tests/util/row_store_conformance.h) on
// the Table store (NewTableRowStore) and the in-memory ModelRowStore, and
// what only the Table store can meet.
#include "util/row_store_conformance.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "strata/engine.h"
#include "strata/row_store.h"
#include "strata/table.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::conformance {
namespace {

using test::ScratchDir;

class TableHarness final : public Harness {
 public:
  TableHarness() { Open(/*create=*/true); }
  ~TableHarness() override {
    store_.reset();
    if (engine_ != nullptr) {
      EXPECT_OK(engine_->Close());
    }
  }

  RowStore* store() override { return store_.get(); }
  Engine* engine() { return engine_.get(); }
  void Flush() override { ASSERT_OK(engine_->Flush()); }
  void Compact() override { ASSERT_OK(engine_->Compact()); }
  void Reopen() override {
    store_.reset();
    ASSERT_OK(engine_->Close());
    engine_.reset();
    Open(/*create=*/false);
  }

 private:
  void Open(bool create) {
    auto e = Engine::Open(dir_.path(), Options());
    ASSERT_OK(e);
    engine_ = std::move(e.value());
    if (create) {
      ASSERT_OK(engine_->CreateTenant("t"));
      ASSERT_OK(engine_->OpenTenant("t")->CreateTable("rows", Schema()));
    }
    auto table = engine_->OpenTenant("t")->OpenTable("rows");
    ASSERT_OK(table);
    store_ = NewTableRowStore(*table);
  }

  ScratchDir dir_{"rowstore"};
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<RowStore> store_;
};

INSTANTIATE_TEST_SUITE_P(
    Stores, RowStoreConformanceTest,
    ::testing::Values(StoreKind{"table", [] { return std::make_unique<TableHarness>(); }},
                      StoreKind{"model", [] { return std::make_unique<ModelHarness>(); }}),
    StoreKindName);

// ----------------------------------------------------------------------------
// What only the Table store can meet: a dropped table, a closed engine, an
// empty handle; and its iterators and sessions outliving the store object.

TEST(TableRowStoreTest, ErrorsOfTheTableBehindTheStore) {
  ScratchDir dir("tablestore");
  auto opened = Engine::Open(dir.path(), Options());
  ASSERT_OK(opened);
  std::unique_ptr<Engine> engine = std::move(opened.value());
  ASSERT_OK(engine->CreateTenant("t"));
  Tenant tenant = *engine->OpenTenant("t");
  ASSERT_OK(tenant.CreateTable("rows", Schema()));
  ASSERT_OK(tenant.CreateTable("other", Schema()));
  Table table = *tenant.OpenTable("rows");

  std::unique_ptr<RowStore> store = NewTableRowStore(table);
  RowMutation m;
  m.Put("w", "q", 1, "v");
  ASSERT_OK(store->Mutate(WriteOptions(), "r", m));
  auto it = store->Scan(ReadOptions(), ScanSpec());
  ASSERT_OK(it);
  auto session = store->NewReadSession(ReadSessionOptions());
  ASSERT_OK(session);
  const Cells cells = {{"w", "q", 1, "v"}};
  EXPECT_EQ(*(*session)->Get("r", "w", "q"), cells);
  store.reset();
  ASSERT_TRUE((*it)->Valid());
  EXPECT_EQ((*it)->row(), "r");
  EXPECT_EQ((*it)->cells(), cells);
  EXPECT_EQ(*(*session)->Get("r", "w", "q"), cells);
  EXPECT_EQ(*(*session)->Get("r", "w", "other"), Cells());

  // Every call on a store whose table was dropped is NotFound.
  store = NewTableRowStore(table);
  ASSERT_OK(tenant.DropTable("rows"));
  const std::vector<ConditionalMutation> batch = {{"r", {}, m}};
  EXPECT_TRUE(store->ReadRow(ReadOptions(), "r", RowFilter()).status().IsNotFound());
  EXPECT_TRUE(store->Mutate(WriteOptions(), "r", m).IsNotFound());
  EXPECT_TRUE(store->CheckAndMutate(WriteOptions(), "r", {}, m).status().IsNotFound());
  EXPECT_TRUE(store->CheckAndMutateBatch(WriteOptions(), batch).status().IsNotFound());
  EXPECT_TRUE(store->Scan(ReadOptions(), ScanSpec()).status().IsNotFound());
  EXPECT_TRUE(store->NewReadSession(ReadSessionOptions()).status().IsNotFound());
  EXPECT_TRUE((*session)->Get("r", "w", "new").status().IsNotFound());

  // A closed engine: InvalidArgument, as Table documents.
  store = NewTableRowStore(*tenant.OpenTable("other"));
  ASSERT_OK(engine->Close());
  EXPECT_TRUE(store->ReadRow(ReadOptions(), "r", RowFilter()).status().IsInvalidArgument());
  EXPECT_TRUE(store->Mutate(WriteOptions(), "r", m).IsInvalidArgument());
  EXPECT_TRUE(store->CheckAndMutate(WriteOptions(), "r", {}, m).status().IsInvalidArgument());
  EXPECT_TRUE(store->CheckAndMutateBatch(WriteOptions(), batch).status().IsInvalidArgument());
  EXPECT_TRUE(store->Scan(ReadOptions(), ScanSpec()).status().IsInvalidArgument());

  // An empty handle: InvalidArgument from every call.
  store = NewTableRowStore(Table());
  EXPECT_TRUE(store->ReadRow(ReadOptions(), "r", RowFilter()).status().IsInvalidArgument());
  EXPECT_TRUE(store->Mutate(WriteOptions(), "r", m).IsInvalidArgument());
  EXPECT_TRUE(store->CheckAndMutate(WriteOptions(), "r", {}, m).status().IsInvalidArgument());
  EXPECT_TRUE(store->CheckAndMutateBatch(WriteOptions(), batch).status().IsInvalidArgument());
  EXPECT_TRUE(store->Scan(ReadOptions(), ScanSpec()).status().IsInvalidArgument());
  EXPECT_TRUE(store->NewReadSession(ReadSessionOptions()).status().IsInvalidArgument());
}

// ----------------------------------------------------------------------------
// Random operations on both stores at once, every answer compared.

TEST(RowStoreDifferentialTest, RandomOperationsGiveTheSameAnswersOnBothStores) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("STRATA_TEST_SEED=" + std::to_string(seed));
  TableHarness table;
  auto model = ModelRowStore::ForSchema(Schema(), Options());
  const int count = test::LongTests() ? 200000 : test::UnderSanitizer() ? 2000 : 15000;
  const uint64_t prefetched = RunRandomOps(seed, &table, model.get(), count);
  if (HasFailure()) return;
  EXPECT_GT(table.engine()->GetStats().table_files, 0u);
  // The predictor needs a few hundred sessions to learn: the short runs of
  // sanitizer builds may end before it predicts.
  if (count >= 15000) {
    EXPECT_GT(prefetched, 0u);
  }
}

}  // namespace
}  // namespace strata::conformance
