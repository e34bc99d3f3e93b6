// The collection compactions do on their way: the filter's decisions on one
// column's versions, and on an engine, compactions that remove old records
// before (and instead of) the rounds' row-range tasks.
#include "gc/compaction_filter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "gc/collector.h"
#include "gc/safepoint_store.h"
#include "strata/engine.h"
#include "strata/table.h"
#include "strata/transaction.h"
#include "txn/records.h"
#include "txn/table_resolver.h"
#include "txn/transaction_db.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::gc {
namespace {

using Decision = CompactionFilter::Decision;
using txn::WriteKind;

std::string Record(WriteKind kind, uint64_t start_ts, bool inline_value) {
  txn::WriteRecord w;
  w.kind = kind;
  w.start_ts = start_ts;
  w.has_inline_value = inline_value;
  if (inline_value) w.inline_value = "v";
  return txn::EncodeWrite(w);
}

class FilterRulesTest : public ::testing::Test {
 protected:
  // Decisions for `versions` (timestamp, record), newest first.
  std::vector<Decision> Filter(const std::vector<std::pair<uint64_t, std::string>>& versions,
                               uint64_t safepoint, bool bottommost, std::string_view family = "write",
                               std::string_view table = "acc") {
    ready_->store(safepoint);
    std::vector<CompactionFilter::Version> v;
    for (const auto& [ts, value] : versions) v.push_back({ts, value});
    std::vector<Decision> decisions(v.size(), Decision::kKeep);
    std::vector<std::string> values(v.size());
    CompactionFilter::Context ctx;
    ctx.table = table;
    ctx.bottommost = bottommost;
    filter_.FilterColumn(ctx, "row", family, "col", v, &decisions, &values);
    return decisions;
  }

  std::shared_ptr<std::atomic<uint64_t>> ready_ = std::make_shared<std::atomic<uint64_t>>(0);
  std::shared_ptr<TableSet> tables_ = [] {
    auto t = std::make_shared<TableSet>();
    t->Set({"acc"});
    return t;
  }();
  GcCompactionFilter filter_{ready_, tables_};
};

TEST_F(FilterRulesTest, InlinePutsUnderTheFirstPutGoValuesInDataStay) {
  const auto d = Filter({{30, Record(WriteKind::kPut, 29, true)},     // above the safepoint
                         {20, Record(WriteKind::kRollback, 20, false)},
                         {15, Record(WriteKind::kPut, 14, true)},     // the first put: stays
                         {12, Record(WriteKind::kLock, 11, false)},
                         {10, Record(WriteKind::kPut, 9, true)},
                         {8, Record(WriteKind::kPut, 7, false)},      // value in data
                         {5, Record(WriteKind::kDelete, 4, false)}},
                        /*safepoint=*/25, /*bottommost=*/false);
  EXPECT_EQ(d, (std::vector<Decision>{Decision::kKeep, Decision::kDrop, Decision::kKeep,
                                      Decision::kDrop, Decision::kDrop, Decision::kKeep,
                                      Decision::kDrop}));
  EXPECT_EQ(filter_.dropped(), 4u);
}

TEST_F(FilterRulesTest, TheNewestDeleteGoesOnlyAtTheBottomWithEverythingUnderIt) {
  const std::vector<std::pair<uint64_t, std::string>> v = {
      {15, Record(WriteKind::kDelete, 14, false)}, {10, Record(WriteKind::kPut, 9, true)}};
  EXPECT_EQ(Filter(v, 20, /*bottommost=*/false),
            (std::vector<Decision>{Decision::kKeep, Decision::kDrop}));
  EXPECT_EQ(Filter(v, 20, /*bottommost=*/true),
            (std::vector<Decision>{Decision::kDrop, Decision::kDrop}));
  // A value in data under it keeps it: the tasks remove the three together.
  const std::vector<std::pair<uint64_t, std::string>> w = {
      {15, Record(WriteKind::kDelete, 14, false)}, {10, Record(WriteKind::kPut, 9, false)}};
  EXPECT_EQ(Filter(w, 20, /*bottommost=*/true),
            (std::vector<Decision>{Decision::kKeep, Decision::kKeep}));
}

TEST_F(FilterRulesTest, NothingBeforeASafepointAndNothingOutsideWrite) {
  const std::vector<std::pair<uint64_t, std::string>> v = {
      {15, Record(WriteKind::kPut, 14, true)}, {10, Record(WriteKind::kPut, 9, true)}};
  EXPECT_EQ(Filter(v, 0, true), (std::vector<Decision>{Decision::kKeep, Decision::kKeep}));
  EXPECT_EQ(Filter(v, 20, true, "data"), (std::vector<Decision>{Decision::kKeep, Decision::kKeep}));
  EXPECT_EQ(Filter(v, 12, true), (std::vector<Decision>{Decision::kKeep, Decision::kKeep}));
  EXPECT_EQ(filter_.dropped(), 0u);
}

// Acks: every version but the newest goes, whatever the safepoint (even
// before the first round) and the level.
TEST_F(FilterRulesTest, OnlyTheNewestAckStays) {
  const std::vector<std::pair<uint64_t, std::string>> v = {{40, ""}, {30, ""}, {20, ""}};
  EXPECT_EQ(Filter(v, 0, /*bottommost=*/false, "ack"),
            (std::vector<Decision>{Decision::kKeep, Decision::kDrop, Decision::kDrop}));
  EXPECT_EQ(Filter({{40, ""}}, 100, true, "ack"), std::vector<Decision>{Decision::kKeep});
  EXPECT_EQ(filter_.dropped(), 2u);
}

// A table the collector did not list as transactional keeps everything,
// whatever its families are called.
TEST_F(FilterRulesTest, OtherTablesAreLeftAlone) {
  EXPECT_EQ(Filter({{40, ""}, {30, ""}}, 100, true, "ack", "plain"),
            (std::vector<Decision>{Decision::kKeep, Decision::kKeep}));
  EXPECT_EQ(Filter({{15, Record(WriteKind::kPut, 14, true)}, {10, Record(WriteKind::kPut, 9, true)}},
                   20, true, "write", "plain"),
            (std::vector<Decision>{Decision::kKeep, Decision::kKeep}));
  EXPECT_EQ(filter_.dropped(), 0u);
}

// On an engine: compactions run with the filter once a round has resolved
// its locks, and remove the old inline records before the round's tasks.
TEST(GcCompactionTest, CompactionsCollectInlineRecordsBeforeTheTasks) {
  test::ScratchDir dir("gc_compaction");
  auto engine = Engine::Open(dir.Join("db"));
  ASSERT_OK(engine);
  ASSERT_OK((*engine)->CreateTenant("t"));
  auto services = TransactionServices::Open(dir.Join("services"));
  ASSERT_OK(services);
  auto handle = TransactionDB::Open(*services, *(*engine)->OpenTenant("t"));
  ASSERT_OK(handle);
  ASSERT_OK((*handle)->CreateTable("acc"));
  auto commit = [&](const std::string& row, const char* value) {
    auto t = (*handle)->Begin();
    ASSERT_OK(t);
    if (value != nullptr) {
      ASSERT_OK((*t)->Set("acc", row, "c", value));
    } else {
      ASSERT_OK((*t)->Erase("acc", row, "c"));
    }
    ASSERT_OK((*t)->Commit());
  };
  for (int i = 0; i < 10; i++) commit("kept", std::to_string(i).c_str());
  commit("gone", "1");
  commit("gone", "2");
  commit("gone", nullptr);
  ASSERT_OK((*engine)->Flush());

  std::shared_ptr<txn::TxnDB> db = txn::TxnDBOf(**handle);
  CollectorConfig config;
  config.db = db;
  config.store = NewMemorySafepointStore();
  config.options = {.life_time_millis = 0, .interval_millis = 0, .workers = 0};
  // Once the locks are resolved, before the tasks: a full compaction.
  config.hook = [&](RoundStep step, uint64_t) {
    if (step == RoundStep::kLocksResolved) {
      EXPECT_OK((*engine)->Compact());
    }
  };
  auto collector = Collector::Open(std::move(config));
  ASSERT_OK(collector);
  auto filter = std::make_shared<GcCompactionFilter>((*collector)->ready(),
                                                     (*collector)->transactional_tables());
  ASSERT_OK((*engine)->OpenTenant("t")->SetCompactionFilter(filter));
  ASSERT_OK((*collector)->RunRound());

  EXPECT_EQ(filter->dropped(), 9u + 3u);  // the nine older puts; all of "gone"
  EXPECT_EQ((*collector)->GetStats().versions_dropped, 0u);  // nothing left to the tasks
  Table table = *(*engine)->OpenTenant("t")->OpenTable("acc");
  RowFilter writes;
  writes.families = {"write"};
  EXPECT_EQ(table.ReadRow(ReadOptions(), "kept", writes)->size(), 1u);
  EXPECT_EQ(table.ReadRow(ReadOptions(), "gone", writes)->size(), 0u);
  auto t = (*handle)->Begin();
  ASSERT_OK(t);
  EXPECT_EQ(*(*t)->Get("acc", "kept", "c"), "9");
  EXPECT_TRUE((*t)->Get("acc", "gone", "c").status().IsNotFound());
  ASSERT_OK((*collector)->Close());
  ASSERT_OK((*handle)->Close());
  ASSERT_OK((*engine)->Close());
}

}  // namespace
}  // namespace strata::gc
