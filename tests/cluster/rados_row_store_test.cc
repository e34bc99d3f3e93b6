// The RADOS row store (cluster/rados_row_store.h) against a one-node Ceph
// cluster and etcd this binary starts once (LocalCeph): the row-store
// conformance suite, scripted and randomized against the model, and what
// only RADOS has: tables of many tablets, concurrent writers of one row, a
// monitor or OSD that stops answering.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cluster/local_ceph.h"
#include "cluster/rados_io.h"
#include "strata/rados.h"
#include "util/row_store_conformance.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::conformance {
namespace {

using cluster::LocalCeph;
using cluster::SharedCeph;

// The conformance suite's limits.
RadosOptions Options(uint64_t timeout_millis = 10000) {
  RadosOptions o = SharedCeph()->Options(timeout_millis);
  o.limits.max_row_key_size = kMaxRow;
  o.limits.max_qualifier_size = kMaxQualifier;
  o.limits.max_value_size = kMaxValue;
  return o;
}

std::string NewTableName() {
  static std::atomic<int> next{0};
  return "t" + std::to_string(next++);
}

class RadosHarness final : public Harness {
 public:
  // `server_side`: RadosOptions::server_side_conditions (off: every range
  // condition is checked by reading the row first).
  explicit RadosHarness(std::vector<std::string> splits = {}, bool server_side = true) {
    options_.server_side_conditions = server_side;
    EXPECT_OK(CreateRadosTable(options_, name_, Schema(), splits));
    Reopen();
  }
  RowStore* store() override { return store_.get(); }
  // A new connection and a fresh read of the map: what the table holds lives
  // in the objects.
  void Reopen() override {
    store_.reset();
    auto opened = OpenRadosRowStore(options_, name_);
    ASSERT_OK(opened);
    store_ = std::move(opened).value();
  }
  bool all_or_nothing() const override { return false; }
  const std::string& name() const { return name_; }

 private:
  RadosOptions options_ = Options();
  const std::string name_ = NewTableName();
  std::unique_ptr<RowStore> store_;
};

INSTANTIATE_TEST_SUITE_P(
    Stores, RowStoreConformanceTest,
    ::testing::Values(StoreKind{"rados", [] { return std::make_unique<RadosHarness>(); }},
                      StoreKind{"rados_split",
                                [] {
                                  return std::make_unique<RadosHarness>(
                                      std::vector<std::string>{"a\x01", "b", "bb", "c"});
                                }},
                      StoreKind{"rados_read_first",
                                [] {
                                  return std::make_unique<RadosHarness>(std::vector<std::string>{},
                                                                        /*server_side=*/false);
                                }}),
    StoreKindName);

TEST(RadosDifferentialTest, RandomOperationsGiveTheSameAnswersAsTheModel) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("STRATA_TEST_SEED=" + std::to_string(seed));
  RadosHarness rados({"row1", "row2"});
  auto model = ModelRowStore::ForSchema(Schema(), conformance::Options());
  RunRandomOps(seed, &rados, model.get(), test::UnderSanitizer() ? 300 : 2000);
}

TEST(RadosTableTest, BadInputAndTheTableLifecycle) {
  const RadosOptions o = Options();
  EXPECT_TRUE(CreateRadosTable(o, "", Schema()).IsInvalidArgument());
  EXPECT_TRUE(CreateRadosTable(o, "bad/name", Schema()).IsInvalidArgument());
  EXPECT_TRUE(CreateRadosTable(o, "x", TableSchema()).IsInvalidArgument());
  EXPECT_TRUE(CreateRadosTable(o, "x", Schema(), {"b", "a"}).IsInvalidArgument());
  EXPECT_TRUE(CreateRadosTable(o, "x", Schema(), {""}).IsInvalidArgument());
  EXPECT_TRUE(OpenRadosRowStore(o, "never-made").status().IsNotFound());
  EXPECT_TRUE(DropRadosTable(o, "never-made").IsNotFound());
  RadosOptions no_timeout = o;
  no_timeout.timeout_millis = 0;
  EXPECT_TRUE(OpenRadosRowStore(no_timeout, "x").status().IsInvalidArgument());

  const std::string name = NewTableName();
  ASSERT_OK(CreateRadosTable(o, name, Schema(), {"m"}));
  EXPECT_EQ(CreateRadosTable(o, name, Schema()).code(), Status::Code::kAlreadyExists);
  auto store = OpenRadosRowStore(o, name);
  ASSERT_OK(store);
  RowMutation m;
  m.Put("w", "q", 1, "v");
  ASSERT_OK((*store)->Mutate(WriteOptions(), "a", m));
  ASSERT_OK((*store)->Mutate(WriteOptions(), "z", m));
  EXPECT_TRUE((*store)->CheckAndMutateAll(WriteOptions(), {}).status().IsNotSupported());

  // Every call on a dropped table is NotFound; nothing is created again.
  ASSERT_OK(DropRadosTable(o, name));
  const std::vector<ConditionalMutation> batch = {{"r", {}, m}};
  EXPECT_TRUE((*store)->ReadRow(ReadOptions(), "a", RowFilter()).status().IsNotFound());
  EXPECT_TRUE((*store)->Mutate(WriteOptions(), "a", m).IsNotFound());
  EXPECT_TRUE((*store)->CheckAndMutate(WriteOptions(), "z", {}, m).status().IsNotFound());
  EXPECT_TRUE((*store)->CheckAndMutateBatch(WriteOptions(), batch).status().IsNotFound());
  EXPECT_TRUE((*store)->Scan(ReadOptions(), ScanSpec()).status().IsNotFound());
  auto session = (*store)->NewReadSession(ReadSessionOptions());
  ASSERT_OK(session);  // reads nothing yet: its first Get says
  EXPECT_TRUE((*session)->Get("a", "w", "q").status().IsNotFound());
  EXPECT_TRUE(OpenRadosRowStore(o, name).status().IsNotFound());
  // The name can be used again, for an empty table; a store opened on the
  // dropped one still answers NotFound, never from the new table.
  ASSERT_OK(CreateRadosTable(o, name, Schema()));
  auto again = OpenRadosRowStore(o, name);
  ASSERT_OK(again);
  auto rows = ScanRows(**again, ScanSpec());
  ASSERT_OK(rows);
  EXPECT_TRUE(rows->empty());
  EXPECT_TRUE((*store)->ReadRow(ReadOptions(), "a", RowFilter()).status().IsNotFound());
  EXPECT_TRUE((*store)->Mutate(WriteOptions(), "a", m).IsNotFound());
}

// A column longer than one page of omap keys (the OSD gives at most 1024 a
// request): every version a filter asks for is read, over as many pages as
// it takes, and a max_timestamp of UINT64_MAX reads from the newest.
TEST(RadosTableTest, LongColumnsAreReadWholeAcrossPages) {
  RadosHarness h;
  RowStore* store = h.store();
  constexpr uint64_t kVersions = 1500;
  for (uint64_t ts = 1; ts <= kVersions;) {
    RowMutation m;
    for (int i = 0; i < 100 && ts <= kVersions; i++, ts++) m.Put("w", "q", ts, std::to_string(ts));
    ASSERT_OK(store->Mutate(WriteOptions(), "r", m));
  }
  auto newest_first = [](const std::vector<Cell>& cells, uint64_t from) {
    for (size_t i = 0; i < cells.size(); i++) {
      if (cells[i].timestamp != from - i || cells[i].value != std::to_string(from - i))
        return false;
    }
    return true;
  };
  RowFilter column;
  column.columns = {{"w", "q"}};
  column.max_versions = 1200;
  auto got = store->ReadRow(ReadOptions(), "r", column);
  ASSERT_OK(got);
  EXPECT_EQ(got->size(), 1200u);
  EXPECT_TRUE(newest_first(*got, kVersions));
  column.max_versions = 1;
  column.max_timestamp = UINT64_MAX;
  got = store->ReadRow(ReadOptions(), "r", column);
  ASSERT_OK(got);
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].timestamp, kVersions);
  column.max_versions = UINT32_MAX;
  column.max_timestamp = 1400;
  got = store->ReadRow(ReadOptions(), "r", column);
  ASSERT_OK(got);
  EXPECT_EQ(got->size(), 1400u);
  EXPECT_TRUE(newest_first(*got, 1400));
  got = store->ReadRow(ReadOptions(), "r", RowFilter());
  ASSERT_OK(got);
  EXPECT_EQ(got->size(), kVersions);
  EXPECT_TRUE(newest_first(*got, kVersions));

  ReadSessionOptions so;
  so.max_versions = 1100;
  so.max_timestamp = UINT64_MAX;
  auto session = store->NewReadSession(so);
  ASSERT_OK(session);
  auto cells = (*session)->Get("r", "w", "q");
  ASSERT_OK(cells);
  EXPECT_EQ(cells->size(), 1100u);
  EXPECT_TRUE(newest_first(*cells, kVersions));
}

// Many threads try to claim each round's cell of one row; exactly one wins
// each round, and every loser is told the winner's cell. `range` makes the
// condition one the omap compare cannot express (read, then write).
void OneWinnerPerRound(bool range) {
  RadosHarness table;
  RowStore& store = *table.store();
  constexpr int kThreads = 8;
  const int kRounds = test::UnderSanitizer() ? 10 : 40;
  std::vector<std::atomic<int>> wins(kRounds + 1);
  std::atomic<int> errors{0}, wrong_failures{0};
  std::barrier sync(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      for (int r = 1; r <= kRounds; r++) {
        sync.arrive_and_wait();
        const uint64_t ts = static_cast<uint64_t>(r);
        RowMutation m;
        m.Put("lock", "k", ts, std::to_string(t));
        const Condition c = range ? Condition::NoCellInRange("lock", "k", ts, kMaxTimestamp)
                                  : Condition::NoCellInRange("lock", "k", ts, ts);
        auto result = store.CheckAndMutate(WriteOptions(), "row", {c}, m);
        if (!result.ok()) {
          errors++;
        } else if (result->applied) {
          wins[r]++;
        } else if (result->failures.size() != 1 || result->failures[0].cells.size() != 1 ||
                   result->failures[0].cells[0].timestamp != ts) {
          wrong_failures++;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(wrong_failures.load(), 0);
  for (int r = 1; r <= kRounds; r++) EXPECT_EQ(wins[r].load(), 1) << "round " << r;
  auto cells = store.ReadRow(ReadOptions(), "row", Families({"lock"}));
  ASSERT_OK(cells);
  EXPECT_EQ(cells->size(), static_cast<size_t>(kRounds));
}

TEST(RadosConcurrencyTest, OneWinnerPerRoundWithACompareOfOneKey) { OneWinnerPerRound(false); }
TEST(RadosConcurrencyTest, OneWinnerPerRoundWithARangeCondition) { OneWinnerPerRound(true); }

// A stopped OSD or monitor: every call fails within about its deadline with
// TimedOut or IOError, and the store works again once it is back.
TEST(RadosFaultTest, UnreachableOsdOrMonitorFailsWithinTheDeadline) {
  const std::string name = NewTableName();
  ASSERT_OK(CreateRadosTable(Options(), name, Schema()));
  constexpr uint64_t kTimeout = 2000;
  auto opened = OpenRadosRowStore(Options(kTimeout), name);
  ASSERT_OK(opened);
  RowStore& store = **opened;
  RowMutation m;
  m.Put("w", "q", 1, "before");
  ASSERT_OK(store.Mutate(WriteOptions(), "r", m));

  auto expect_bounded = [&](const char* what, const std::function<Status()>& call) {
    const auto start = std::chrono::steady_clock::now();
    const Status s = call();
    const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now() - start)
                            .count();
    EXPECT_TRUE(s.IsTimedOut() || s.IsIOError()) << what << ": " << s.ToString();
    EXPECT_LT(millis, static_cast<int64_t>(2 * kTimeout + 1000)) << what;
  };
  SharedCeph()->Pause(SharedCeph()->osd_pid());
  expect_bounded("ReadRow",
                 [&] { return store.ReadRow(ReadOptions(), "r", RowFilter()).status(); });
  RowMutation later;
  later.Put("w", "q", 2, "during");
  expect_bounded("Mutate", [&] { return store.Mutate(WriteOptions(), "r", later); });
  expect_bounded("CheckAndMutate", [&] {
    return store
        .CheckAndMutate(WriteOptions(), "r", {Condition::NoCellInRange("w", "q", 1, 5)}, later)
        .status();
  });
  expect_bounded("Scan", [&] { return store.Scan(ReadOptions(), ScanSpec()).status(); });
  SharedCeph()->Resume(SharedCeph()->osd_pid());
  auto cells = store.ReadRow(ReadOptions(), "r", Timestamps(1, 1));
  ASSERT_OK(cells);
  EXPECT_EQ(*cells, (Cells{{"w", "q", 1, "before"}}));

  SharedCeph()->Pause(SharedCeph()->mon_pid());
  expect_bounded("OpenRadosRowStore",
                 [&] { return OpenRadosRowStore(Options(kTimeout), name).status(); });
  SharedCeph()->Resume(SharedCeph()->mon_pid());
  ASSERT_OK(OpenRadosRowStore(Options(kTimeout), name).status());
}

// A range condition is one compound write where the OSD checks it
// (cls_lua, which the test cluster loads), and a read, then a write, where
// it does not: counted in the operations this process sent.
TEST(RadosRangeTest, ARangeConditionIsOneWriteWhereTheOsdChecksIt) {
  for (const bool server_side : {true, false}) {
    SCOPED_TRACE(server_side ? "checked on the OSD" : "read first");
    RadosHarness h({}, server_side);
    RowStore& store = *h.store();
    const std::vector<Condition> none = {Condition::NoCellInRange("lock", "k", 3, 9)};
    RowMutation m;
    m.Put("lock", "k", 5, "x");
    cluster::RadosOpCounts& sent = cluster::RadosOpsSent();
    const uint64_t reads = sent.reads.load(), writes = sent.writes.load();
    auto first = store.CheckAndMutate(WriteOptions(), "r", none, m);
    ASSERT_OK(first);
    EXPECT_TRUE(first->applied);
    EXPECT_EQ(sent.reads.load() - reads, server_side ? 0u : 1u);
    EXPECT_EQ(sent.writes.load() - writes, 1u);
    // Held no more: nothing written, the failure reported with its cell.
    auto second = store.CheckAndMutate(WriteOptions(), "r", none, m);
    ASSERT_OK(second);
    EXPECT_FALSE(second->applied);
    ASSERT_EQ(second->failures.size(), 1u);
    ASSERT_EQ(second->failures[0].cells.size(), 1u);
    EXPECT_EQ(second->failures[0].cells[0].timestamp, 5u);
  }
}

// CheckAndMutate's rate, one at a time and many in flight in one batch, on
// one tablet and with each row in a tablet of its own (for the README;
// asserts nothing about speed).
TEST(RadosRateTest, CheckAndMutateOneAtATimeAndBatched) {
  constexpr size_t kBatch = 32;
  std::vector<std::string> rows, splits;
  for (size_t j = 0; j < kBatch; j++) rows.push_back("r" + std::to_string(j));
  std::sort(rows.begin(), rows.end());
  splits.assign(rows.begin() + 1, rows.end());
  const int kOps = test::UnderSanitizer() ? 64 : 1024;
  auto rate = [&](RowStore& store, size_t batch_size, bool range) {
    const auto start = std::chrono::steady_clock::now();
    int done = 0;
    for (int i = 0; done < kOps; i++) {
      std::vector<ConditionalMutation> batch(batch_size);
      for (size_t j = 0; j < batch_size; j++) {
        batch[j].row = rows[j] + (range ? "x" : "");
        const uint64_t ts = static_cast<uint64_t>(i + 1);
        batch[j].conditions = {range ? Condition::NoCellInRange("lock", "k", ts, kMaxTimestamp)
                                     : Condition::NoCellInRange("lock", "k", ts, ts)};
        batch[j].mutation.Put("lock", "k", ts, "v");
      }
      auto r = store.CheckAndMutateBatch(WriteOptions(), batch);
      EXPECT_OK(r);
      done += static_cast<int>(batch_size);
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return done / secs;
  };
  // A compare of one key; a range checked on the OSD (cls_lua); a range
  // checked by reading the row first.
  const char* const kinds[] = {"one compound write", "a range checked on the OSD",
                               "a range: read, then write"};
  for (int kind = 0; kind < 3; kind++) {
    const bool range = kind > 0;
    RadosHarness one_tablet({}, kind != 2), many_tablets(splits, kind != 2);
    const double one = rate(*one_tablet.store(), 1, range);
    const double same = rate(*one_tablet.store(), kBatch, range);
    const double spread = rate(*many_tablets.store(), kBatch, range);
    std::printf(
        "CheckAndMutate (%s): %.0f ops/s one at a time; 32 in flight: %.0f ops/s in one tablet, "
        "%.0f ops/s in 32 tablets\n",
        kinds[kind], one, same, spread);
  }
}

}  // namespace
}  // namespace strata::conformance
