// The public GarbageCollector over an engine tenant, end to end: rounds
// through RunOnce and in the background, old versions gone from the engine's
// tables (and, after a compaction, from its files), the safepoint kept
// across a reopen of everything, one collector per tenant.
#include "strata/gc.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "strata/engine.h"
#include "strata/table.h"
#include "strata/transaction.h"
#include "txn/records.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata {
namespace {

class GarbageCollectorTest : public ::testing::Test {
 protected:
  void Open() {
    Result<std::unique_ptr<Engine>> e = Engine::Open(dir_.Join("db"));
    ASSERT_OK(e);
    engine_ = std::move(e).value();
    Status s = engine_->CreateTenant("t");
    ASSERT_TRUE(s.ok() || s.IsAlreadyExists()) << s.ToString();
    Result<std::shared_ptr<TransactionServices>> services =
        TransactionServices::Open(dir_.Join("services"));
    ASSERT_OK(services);
    services_ = *services;
    Result<std::unique_ptr<TransactionDB>> db =
        TransactionDB::Open(services_, *engine_->OpenTenant("t"));
    ASSERT_OK(db);
    db_ = std::move(db).value();
    s = db_->CreateTable("accounts");
    ASSERT_TRUE(s.ok() || s.IsAlreadyExists()) << s.ToString();
  }
  void OpenCollector(const GcOptions& options) {
    Result<std::unique_ptr<GarbageCollector>> gc =
        GarbageCollector::Open(services_, db_.get(), options);
    ASSERT_OK(gc);
    gc_ = std::move(gc).value();
  }
  void Close() {
    if (gc_ != nullptr) {
      ASSERT_OK(gc_->Close());
    }
    gc_.reset();
    if (db_ != nullptr) {
      ASSERT_OK(db_->Close());
    }
    db_.reset();
    services_.reset();
    if (engine_ != nullptr) {
      ASSERT_OK(engine_->Close());
    }
    engine_.reset();
  }
  void TearDown() override { Close(); }

  void Set(const std::string& row, const std::string& value) {
    auto t = db_->Begin();
    ASSERT_OK(t);
    ASSERT_OK((*t)->Set("accounts", row, "bal", value));
    ASSERT_OK((*t)->Commit());
  }
  std::string Get(const std::string& row) {
    auto t = db_->Begin();
    EXPECT_OK(t);
    Result<std::string> v = (*t)->Get("accounts", row, "bal");
    if (v.status().IsNotFound()) return "<none>";
    EXPECT_OK(v);
    return v.ok() ? *v : "<error>";
  }
  // Visible commit records of accounts/row/bal, as the engine reads them.
  size_t WriteRecords(const std::string& row) {
    Table table = *engine_->OpenTenant("t")->OpenTable("accounts");
    RowFilter filter;
    filter.columns = {{std::string(txn::kWriteFamily), "bal"}};
    Result<std::vector<Cell>> cells = table.ReadRow(ReadOptions(), row, filter);
    EXPECT_OK(cells);
    return cells.ok() ? cells->size() : 0;
  }

  test::ScratchDir dir_{"gc_engine"};
  std::unique_ptr<Engine> engine_;
  std::shared_ptr<TransactionServices> services_;
  std::unique_ptr<TransactionDB> db_;
  std::unique_ptr<GarbageCollector> gc_;
};

TEST_F(GarbageCollectorTest, RunOnceLeavesTheNewestVersionOfEachColumn) {
  Open();
  for (int i = 0; i < 20; i++) {
    Set("alice", "a" + std::to_string(i));
    Set("bob", "b" + std::to_string(i));
  }
  ASSERT_EQ(WriteRecords("alice"), 20u);
  ASSERT_OK(engine_->Compact());
  const uint64_t bytes_before = engine_->GetStats().table_bytes;
  OpenCollector({.life_time_millis = 0, .interval_millis = 0, .workers = 1});
  ASSERT_OK(gc_->RunOnce());
  EXPECT_EQ(WriteRecords("alice"), 1u);
  EXPECT_EQ(WriteRecords("bob"), 1u);
  EXPECT_EQ(Get("alice"), "a19");
  EXPECT_EQ(Get("bob"), "b19");
  const GcStats s = gc_->GetStats();
  EXPECT_EQ(s.versions_dropped, 38u);
  EXPECT_EQ(s.rows_collected, 2u);
  EXPECT_EQ(s.collected_safepoint, s.safepoint);
  EXPECT_GT(s.safepoint, 0u);
  // A compaction drops what the markers hide: the files shrink.
  ASSERT_OK(engine_->Compact());
  EXPECT_LT(engine_->GetStats().table_bytes, bytes_before);
  EXPECT_EQ(WriteRecords("alice"), 1u);
  EXPECT_EQ(Get("alice"), "a19");
}

TEST_F(GarbageCollectorTest, BackgroundRoundsKeepUpWithWrites) {
  Open();
  OpenCollector({.life_time_millis = 0, .interval_millis = 5, .workers = 1});
  for (int i = 0; i < 50; i++) Set("alice", std::to_string(i));
  // Rounds run every 5 ms; wait (bounded) for one that saw every write.
  for (int i = 0; i < 1000 && WriteRecords("alice") > 1; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(WriteRecords("alice"), 1u);
  EXPECT_EQ(Get("alice"), "49");
  EXPECT_GT(gc_->GetStats().rounds, 0u);
}

TEST_F(GarbageCollectorTest, LifeTimeKeepsRecentVersions) {
  Open();
  for (int i = 0; i < 5; i++) Set("alice", std::to_string(i));
  OpenCollector({.life_time_millis = 3'600'000, .interval_millis = 0});
  ASSERT_OK(gc_->RunOnce());
  EXPECT_EQ(WriteRecords("alice"), 5u);  // all younger than an hour
  EXPECT_EQ(gc_->GetStats().versions_dropped, 0u);
}

TEST_F(GarbageCollectorTest, SafepointSurvivesAReopenAndOneCollectorPerTenant) {
  Open();
  OpenCollector({.life_time_millis = 0, .interval_millis = 0});
  Set("alice", "1");
  ASSERT_OK(gc_->RunOnce());
  const uint64_t sp = gc_->safepoint();
  // A second collector on the tenant is refused while the first is open.
  Result<std::unique_ptr<GarbageCollector>> second =
      GarbageCollector::Open(services_, db_.get(), {.interval_millis = 0});
  EXPECT_TRUE(second.status().IsBusy()) << second.status().ToString();
  Close();

  Open();
  OpenCollector({.life_time_millis = 3'600'000, .interval_millis = 0});
  EXPECT_EQ(gc_->safepoint(), sp);
  ASSERT_OK(gc_->RunOnce());
  EXPECT_EQ(gc_->safepoint(), sp);  // an hour's life time does not take it down
  EXPECT_EQ(Get("alice"), "1");
}

TEST_F(GarbageCollectorTest, BadArguments) {
  Open();
  EXPECT_TRUE(GarbageCollector::Open(nullptr, db_.get()).status().IsInvalidArgument());
  EXPECT_TRUE(GarbageCollector::Open(services_, nullptr).status().IsInvalidArgument());
  EXPECT_TRUE(
      GarbageCollector::Open(services_, db_.get(), {.workers = -1}).status().IsInvalidArgument());
}

}  // namespace
}  // namespace strata
