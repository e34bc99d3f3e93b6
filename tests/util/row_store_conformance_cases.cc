// The scripted cases of the row-store conformance suite
// (row_store_conformance.h), with every expected answer written out. Each
// test binary that compiles this file instantiates RowStoreConformanceTest
// with its stores; on the Table store the cells move between memtables,
// SSTables, compactions and reopens along the way.
#include <gtest/gtest.h>

#include <atomic>
#include <charconv>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "util/row_store_conformance.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::conformance {
namespace {

TEST_P(RowStoreConformanceTest, CellsComeInSchemaFamilyOrderThenQualifierThenNewestFirst) {
  const std::string nul("\0", 1);
  const std::string ff("\xff", 1);
  const std::string a_nul("a\0", 2);
  RowMutation m;
  m.Put("a", "x", 1, "a-x")
      .Put("data", ff, 3, "d-ff")
      .Put("data", nul, 3, "d-00")
      .Put("lock", "", 5, "l")
      .Put("w", "b", 2, "w-b")
      .Put("w", "ab", 1, "w-ab")
      .Put("w", a_nul, 1, "w-a0")
      .Put("w", "a", 7, "w-a7")
      .Put("w", "a", 10, "w-a10")
      .Put("w", "a", 9, "w-a9")
      .Put("data", "", 4, "d-empty");
  Apply("r", m);
  const Cells expected = {
      {"w", "a", 10, "w-a10"}, {"w", "a", 9, "w-a9"},      {"w", "a", 7, "w-a7"},
      {"w", a_nul, 1, "w-a0"}, {"w", "ab", 1, "w-ab"},     {"w", "b", 2, "w-b"},
      {"lock", "", 5, "l"},    {"data", "", 4, "d-empty"}, {"data", nul, 3, "d-00"},
      {"data", ff, 3, "d-ff"}, {"a", "x", 1, "a-x"}};
  CheckEverywhere([&] {
    EXPECT_EQ(Read("r"), expected);
    EXPECT_EQ(Scan(ScanSpec()), (Rows{{"r", expected}}));
    // A filter's order of families does not change the order of cells.
    EXPECT_EQ(Read("r", Families({"a", "lock", "w"})),
              (Cells{expected[0], expected[1], expected[2], expected[3], expected[4], expected[5],
                     expected[6], expected[10]}));
  });
}

TEST_P(RowStoreConformanceTest, PutReplacesAVersionAndLaterEntriesWin) {
  Put("r", "w", "q", 5, "one");
  Put("r", "w", "q", 5, "two");
  EXPECT_EQ(Read("r"), (Cells{{"w", "q", 5, "two"}}));
  RowMutation m;
  m.Put("w", "q", 6, "x").Put("w", "q", 6, "y");
  Apply("r", m);
  EXPECT_EQ(Read("r"), (Cells{{"w", "q", 6, "y"}, {"w", "q", 5, "two"}}));
  m.Clear();
  m.Put("w", "q", 7, "gone").DeleteCell("w", "q", 7);
  Apply("r", m);
  m.Clear();
  m.DeleteColumn("w", "q", 6).Put("w", "q", 6, "back");
  Apply("r", m);
  m.Clear();
  m.Put("w", "q", 3, "three").DeleteRow(4);
  Apply("r", m);
  CheckEverywhere([&] { EXPECT_EQ(Read("r"), (Cells{{"w", "q", 6, "back"}})); });
}

TEST_P(RowStoreConformanceTest, DeletesRemoveOnlyWhatWasWrittenBefore) {
  RowMutation m;
  for (uint64_t ts = 1; ts <= 5; ts++) m.Put("w", "q", ts, "v" + std::to_string(ts));
  m.Put("lock", "l", 3, "L3").Put("data", "d", 2, "D2").Put("a", "x", 9, "X9");
  Apply("r", m);
  Put("s", "w", "q", 1, "other row");
  harness_->Flush();  // the cells in SSTables, the markers in memtables

  m.Clear();
  m.DeleteCell("w", "q", 4).DeleteCell("w", "q", 8);  // 8 was never written
  Apply("r", m);
  EXPECT_EQ(
      Read("r", Families({"w"})),
      (Cells{{"w", "q", 5, "v5"}, {"w", "q", 3, "v3"}, {"w", "q", 2, "v2"}, {"w", "q", 1, "v1"}}));
  harness_->Compact();

  m.Clear();
  m.DeleteColumn("w", "q", 2);
  Apply("r", m);
  EXPECT_EQ(Read("r", Families({"w"})), (Cells{{"w", "q", 5, "v5"}, {"w", "q", 3, "v3"}}));
  harness_->Flush();

  m.Clear();
  m.DeleteRow(3);
  Apply("r", m);
  const Cells after_row_delete = {{"w", "q", 5, "v5"}, {"a", "x", 9, "X9"}};
  EXPECT_EQ(Read("r"), after_row_delete);
  EXPECT_EQ(Read("s"), (Cells{{"w", "q", 1, "other row"}}));

  // Later puts at covered timestamps are visible.
  m.Clear();
  m.Put("w", "q", 1, "new1").Put("lock", "l", 3, "newL").Put("w", "q", 4, "new4");
  Apply("r", m);
  const Cells rewritten = {{"w", "q", 5, "v5"},
                           {"w", "q", 4, "new4"},
                           {"w", "q", 1, "new1"},
                           {"lock", "l", 3, "newL"},
                           {"a", "x", 9, "X9"}};
  CheckEverywhere([&] { EXPECT_EQ(Read("r"), rewritten); });

  m.Clear();
  m.DeleteRow();
  Apply("r", m);
  m.Clear();
  m.DeleteColumn("w", "q").DeleteRow(7);
  Apply("never-written", m);
  CheckEverywhere([&] {
    EXPECT_EQ(Read("r"), Cells());
    EXPECT_EQ(Read("never-written"), Cells());
    EXPECT_EQ(Scan(ScanSpec()), (Rows{{"s", {{"w", "q", 1, "other row"}}}}));
  });
}

TEST_P(RowStoreConformanceTest, FilterSelectsFamiliesColumnsTimestampsAndVersions) {
  RowMutation m;
  m.Put("w", "p", 1, "p1").Put("w", "p", 2, "p2").Put("w", "p", 3, "p3");
  m.Put("w", "q", 2, "q2").Put("lock", "p", 5, "l5");
  m.Put("data", "p", 1, "d1").Put("data", "p", 7, "d7").Put("a", "z", 4, "z4");
  Apply("r", m);
  const Cell p3{"w", "p", 3, "p3"}, p2{"w", "p", 2, "p2"}, p1{"w", "p", 1, "p1"};
  const Cell q2{"w", "q", 2, "q2"}, l5{"lock", "p", 5, "l5"};
  const Cell d7{"data", "p", 7, "d7"}, d1{"data", "p", 1, "d1"}, z4{"a", "z", 4, "z4"};
  CheckEverywhere([&] {
    EXPECT_EQ(Read("r"), (Cells{p3, p2, p1, q2, l5, d7, d1, z4}));
    EXPECT_EQ(Read("r", Families({"data"})), (Cells{d7, d1}));
    EXPECT_EQ(Read("r", Families({"lock", "w"})), (Cells{p3, p2, p1, q2, l5}));
    EXPECT_EQ(Read("r", Columns({{"a", "z"}, {"w", "q"}})), (Cells{q2, z4}));
    EXPECT_EQ(Read("r", Columns({{"w", "nope"}, {"lock", "q"}})), Cells());
    RowFilter both = Families({"data"});
    both.columns = {{"w", "p"}, {"data", "p"}};
    EXPECT_EQ(Read("r", both), (Cells{p3, p2, p1, d7, d1}));
    EXPECT_EQ(Read("r", Timestamps(2, 4)), (Cells{p3, p2, q2, z4}));
    EXPECT_EQ(Read("r", Timestamps(2, 2)), (Cells{p2, q2}));
    EXPECT_EQ(Read("r", Timestamps(kMinTimestamp, kMaxTimestamp, 1)), (Cells{p3, q2, l5, d7, z4}));
    // max_versions counts the versions inside the timestamp range.
    EXPECT_EQ(Read("r", Timestamps(1, 2, 1)), (Cells{p2, q2, d1}));
    EXPECT_EQ(Read("r", Timestamps(1, 2, 2)), (Cells{p2, p1, q2, d1}));
    EXPECT_EQ(Read("r", Timestamps(kMaxTimestamp, kMaxTimestamp)), Cells());
    RowFilter mixed = Columns({{"w", "p"}});
    mixed.min_timestamp = 2;
    mixed.max_versions = 1;
    EXPECT_EQ(Read("r", mixed), (Cells{p3}));
    EXPECT_EQ(Read("other"), Cells());
  });
}

TEST_P(RowStoreConformanceTest, ConditionsSeeVisibleCellsAndReportWhatFailed) {
  RowMutation m;
  m.Put("lock", "k", 10, "held").Put("data", "v", 5, "five").Put("data", "v", 9, "nine");
  m.Put("w", "c", 7, "seven").Put("data", "v", 12, "twelve");
  Apply("r", m);
  harness_->Flush();
  m.Clear();
  m.DeleteCell("data", "v", 12);  // a deleted version does not exist
  Apply("r", m);
  const Cell held{"lock", "k", 10, "held"}, five{"data", "v", 5, "five"};
  const Cell nine{"data", "v", 9, "nine"}, seven{"w", "c", 7, "seven"};

  CheckEverywhere([&] {
    EXPECT_TRUE(Holds("r", Condition::NoCellInRange("data", "v", 1, 4)));
    EXPECT_TRUE(Holds("r", Condition::NoCellInRange("data", "v", 10, 12)));
    EXPECT_TRUE(Holds("r", Condition::NoCellInRange("data", "other", 1, kMaxTimestamp)));
    EXPECT_TRUE(Holds("r", Condition::NoCellInRange("a", "v", 1, kMaxTimestamp)));
    EXPECT_TRUE(Holds("elsewhere", Condition::NoCellInRange("lock", "k", 1, kMaxTimestamp)));
    EXPECT_TRUE(SameResult(Check("r", {Condition::NoCellInRange("data", "v", 5, 5)}),
                           Failed({{0, {five}}})));
    EXPECT_TRUE(SameResult(Check("r", {Condition::NoCellInRange("data", "v", 1, kMaxTimestamp)}),
                           Failed({{0, {nine, five}}})));

    EXPECT_TRUE(Holds("r", Condition::CellExists("data", "v", 9)));
    EXPECT_TRUE(
        SameResult(Check("r", {Condition::CellExists("data", "v", 12)}), Failed({{0, {}}})));
    EXPECT_FALSE(Holds("r", Condition::CellExists("data", "v", 6)));
    EXPECT_FALSE(Holds("elsewhere", Condition::CellExists("data", "v", 9)));

    EXPECT_TRUE(Holds("r", Condition::ValueEquals("data", "v", 9, "nine")));
    EXPECT_TRUE(SameResult(Check("r", {Condition::ValueEquals("data", "v", 9, "nine!")}),
                           Failed({{0, {nine}}})));
    EXPECT_TRUE(SameResult(Check("r", {Condition::ValueEquals("data", "v", 12, "twelve")}),
                           Failed({{0, {}}})));
    EXPECT_FALSE(Holds("r", Condition::ValueEquals("data", "v", 13, "")));  // missing is not empty

    // Every failure, in list order; nothing of the mutation is written.
    RowMutation write;
    write.Put("data", "v", 20, "new");
    EXPECT_TRUE(SameResult(
        Check("r",
              {Condition::NoCellInRange("lock", "k", 1, kMaxTimestamp),
               Condition::CellExists("w", "c", 7), Condition::ValueEquals("w", "c", 7, "x"),
               Condition::NoCellInRange("data", "v", 6, 9)},
              write),
        Failed({{0, {held}}, {2, {seven}}, {3, {nine}}})));
    EXPECT_EQ(Read("r"), (Cells{seven, held, nine, five}));
  });

  RowMutation commit;
  commit.Put("data", "v", 20, "new").DeleteColumn("lock", "k");
  EXPECT_TRUE(SameResult(Check("r",
                               {Condition::ValueEquals("lock", "k", 10, "held"),
                                Condition::NoCellInRange("data", "v", 13, kMaxTimestamp)},
                               commit),
                         Applied()));
  const Cell twenty{"data", "v", 20, "new"};
  CheckEverywhere([&] {
    EXPECT_EQ(Read("r"), (Cells{seven, twenty, nine, five}));
    EXPECT_TRUE(Holds("r", Condition::NoCellInRange("lock", "k", 1, kMaxTimestamp)));
    EXPECT_FALSE(Holds("r", Condition::NoCellInRange("data", "v", 13, kMaxTimestamp)));
  });

  // No conditions: applied unconditionally.
  RowMutation plain;
  plain.Put("a", "x", 1, "ax");
  EXPECT_TRUE(SameResult(Check("r", {}, plain), Applied()));
  EXPECT_EQ(Read("r", Families({"a"})), (Cells{{"a", "x", 1, "ax"}}));
}

TEST_P(RowStoreConformanceTest, BatchRowsApplyIndependently) {
  Put("a", "lock", "k", 1, "x");
  std::vector<ConditionalMutation> batch(5);
  batch[0].row = "a";
  batch[0].conditions = {Condition::NoCellInRange("lock", "k", 1, kMaxTimestamp)};
  batch[0].mutation.Put("data", "v", 2, "a2");
  batch[1].row = "b";
  batch[1].conditions = {Condition::NoCellInRange("lock", "k", 1, kMaxTimestamp)};
  batch[1].mutation.Put("data", "v", 2, "b2").Put("lock", "k", 2, "b");
  batch[2].row = "c";
  batch[2].mutation.Put("w", "c", 3, "c3");
  batch[3].row = "d";
  batch[3].conditions = {Condition::CellExists("w", "c", 3)};  // a pure check
  batch[4].row = std::string("a\0", 2);
  batch[4].conditions = {Condition::NoCellInRange("lock", "k", 1, kMaxTimestamp),
                         Condition::NoCellInRange("data", "v", 1, 1)};
  batch[4].mutation.Put("data", "v", 2, "a0");
  auto r = store().CheckAndMutateBatch(WriteOptions(), batch);
  ASSERT_OK(r);
  ASSERT_EQ(r->size(), 5u);
  EXPECT_TRUE(SameResult((*r)[0], Failed({{0, {{"lock", "k", 1, "x"}}}})));
  EXPECT_TRUE(SameResult((*r)[1], Applied()));
  EXPECT_TRUE(SameResult((*r)[2], Applied()));
  EXPECT_TRUE(SameResult((*r)[3], Failed({{0, {}}})));
  EXPECT_TRUE(SameResult((*r)[4], Applied()));
  CheckEverywhere([&] {
    EXPECT_EQ(Scan(ScanSpec()), (Rows{{"a", {{"lock", "k", 1, "x"}}},
                                      {std::string("a\0", 2), {{"data", "v", 2, "a0"}}},
                                      {"b", {{"lock", "k", 2, "b"}, {"data", "v", 2, "b2"}}},
                                      {"c", {{"w", "c", 3, "c3"}}}}));
  });

  auto empty = store().CheckAndMutateBatch(WriteOptions(), {});
  ASSERT_OK(empty);
  EXPECT_TRUE(empty->empty());

  // Each row sees the writes of earlier calls.
  std::vector<ConditionalMutation> next(2);
  next[0].row = "b";
  next[0].conditions = {Condition::ValueEquals("lock", "k", 2, "b")};
  next[0].mutation.DeleteColumn("lock", "k");
  next[1].row = "c";
  next[1].conditions = {Condition::CellExists("w", "c", 3)};
  r = store().CheckAndMutateBatch(WriteOptions{.sync = false}, next);
  ASSERT_OK(r);
  ASSERT_EQ(r->size(), 2u);
  EXPECT_TRUE(SameResult((*r)[0], Applied()));
  EXPECT_TRUE(SameResult((*r)[1], Applied()));
  EXPECT_EQ(Read("b"), (Cells{{"data", "v", 2, "b2"}}));
}

TEST_P(RowStoreConformanceTest, AllOrNothingBatchAppliesEveryRowOrNone) {
  if (!harness_->all_or_nothing()) {
    EXPECT_TRUE(store().CheckAndMutateAll(WriteOptions(), {}).status().IsNotSupported());
    GTEST_SKIP() << GetParam().name << " has no all-or-nothing batch";
  }
  Put("a", "lock", "k", 1, "x");
  std::vector<ConditionalMutation> batch(3);
  batch[0].row = "b";
  batch[0].conditions = {Condition::NoCellInRange("lock", "k", 1, kMaxTimestamp)};
  batch[0].mutation.Put("data", "v", 2, "b2");
  batch[1].row = "a";
  batch[1].conditions = {Condition::NoCellInRange("lock", "k", 1, kMaxTimestamp)};
  batch[1].mutation.Put("data", "v", 2, "a2");
  batch[2].row = "c";
  batch[2].mutation.Put("w", "c", 3, "c3");
  // Row a's condition fails: nothing is written, and every result says so.
  auto r = store().CheckAndMutateAll(WriteOptions(), batch);
  ASSERT_OK(r);
  ASSERT_EQ(r->size(), 3u);
  EXPECT_TRUE(SameResult((*r)[0], Failed({})));
  EXPECT_TRUE(SameResult((*r)[1], Failed({{0, {{"lock", "k", 1, "x"}}}})));
  EXPECT_TRUE(SameResult((*r)[2], Failed({})));
  CheckEverywhere([&] { EXPECT_EQ(Scan(ScanSpec()), (Rows{{"a", {{"lock", "k", 1, "x"}}}})); });
  // Once it holds, every row is written.
  RowMutation unlock;
  unlock.DeleteColumn("lock", "k");
  ASSERT_OK(store().Mutate(WriteOptions(), "a", unlock));
  r = store().CheckAndMutateAll(WriteOptions{.sync = false}, batch);
  ASSERT_OK(r);
  for (const CheckAndMutateResult& one : *r) EXPECT_TRUE(SameResult(one, Applied()));
  CheckEverywhere([&] {
    EXPECT_EQ(Scan(ScanSpec()), (Rows{{"a", {{"data", "v", 2, "a2"}}},
                                      {"b", {{"data", "v", 2, "b2"}}},
                                      {"c", {{"w", "c", 3, "c3"}}}}));
  });
  // Bad input anywhere: InvalidArgument, nothing written.
  batch[2].row = "b";
  EXPECT_TRUE(store().CheckAndMutateAll(WriteOptions(), batch).status().IsInvalidArgument());
  auto empty = store().CheckAndMutateAll(WriteOptions(), {});
  ASSERT_OK(empty);
  EXPECT_TRUE(empty->empty());
}

TEST_P(RowStoreConformanceTest, AllOrNothingRowsAreSeenTogether) {
  if (!harness_->all_or_nothing()) {
    EXPECT_TRUE(store().CheckAndMutateAll(WriteOptions(), {}).status().IsNotSupported());
    GTEST_SKIP() << GetParam().name << " has no all-or-nothing batch";
  }
  // A writer sets rows x and y to the same counter in each batch; a reader
  // that reads x, then y, must never find y older than x.
  const int kWrites = test::UnderSanitizer() ? 200 : 2000;
  std::atomic<bool> done{false};
  std::atomic<int> torn{0}, errors{0};
  auto counter = [](const Result<std::vector<Cell>>& r) {
    return r.ok() && !r->empty() ? std::stoi((*r)[0].value) : 0;
  };
  std::thread reader([&] {
    while (!done.load()) {
      const int x = counter(store().ReadRow(ReadOptions(), "x", RowFilter()));
      const int y = counter(store().ReadRow(ReadOptions(), "y", RowFilter()));
      if (y < x) torn++;
    }
  });
  for (int i = 1; i <= kWrites; i++) {
    std::vector<ConditionalMutation> batch(2);
    batch[0].row = "x";
    batch[1].row = "y";
    for (ConditionalMutation& m : batch) {
      m.conditions = {Condition::NoCellInRange("lock", "k", 1, kMaxTimestamp)};
      m.mutation.Put("data", "v", 1, std::to_string(i));
    }
    auto r = store().CheckAndMutateAll(WriteOptions{.sync = false}, batch);
    if (!r.ok() || !(*r)[0].applied || !(*r)[1].applied) errors++;
  }
  done = true;
  reader.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(torn.load(), 0);
}

TEST_P(RowStoreConformanceTest, ScanWalksRowRangesFromOneSnapshot) {
  const std::string a0("a\0", 2), bff("b\xff", 2);
  for (const std::string& row : {std::string("c"), bff, std::string("b"), std::string("ab"), a0,
                                 std::string("a"), std::string("ca")}) {
    Put(row, "w", "q", 1, row);
  }
  Put("bb", "lock", "l", 1, "bb");
  RowMutation gone;
  gone.DeleteRow();
  Apply("ca", gone);
  auto row = [](const std::string& r) { return std::make_pair(r, Cells{{"w", "q", 1, r}}); };
  const std::pair<std::string, Cells> bb = {"bb", {{"lock", "l", 1, "bb"}}};
  CheckEverywhere([&] {
    EXPECT_EQ(Scan(ScanSpec()),
              (Rows{row("a"), row(a0), row("ab"), row("b"), bb, row(bff), row("c")}));
    EXPECT_EQ(Scan(Range(a0, "b")), (Rows{row(a0), row("ab")}));
    EXPECT_EQ(Scan(Range("ab", "")), (Rows{row("ab"), row("b"), bb, row(bff), row("c")}));
    EXPECT_EQ(Scan(Range("", a0)), (Rows{row("a")}));
    EXPECT_EQ(Scan(Range("b", "b")), Rows());
    EXPECT_EQ(Scan(Range("c", "d")), (Rows{row("c")}));
    EXPECT_EQ(Scan(Range("zz", "")), Rows());
    EXPECT_EQ(Scan(Range("", "", Families({"lock"}))), (Rows{bb}));
    EXPECT_EQ(Scan(Range("b", "", Families({"w"}))), (Rows{row("b"), row(bff), row("c")}));
    EXPECT_EQ(Scan(Range("", "", Timestamps(2, kMaxTimestamp))), Rows());
  });

  // Writes after the scan began are not seen by it.
  auto it = store().Scan(ReadOptions(), Range("a", "c"));
  ASSERT_OK(it);
  Put("aa", "w", "q", 1, "aa");
  Put("a", "w", "q", 2, "newer");
  Apply("b", gone);
  Rows seen;
  for (; (*it)->Valid(); (*it)->Next()) seen.emplace_back((*it)->row(), (*it)->cells());
  EXPECT_OK((*it)->status());
  EXPECT_EQ(seen, (Rows{row("a"), row(a0), row("ab"), row("b"), bb, row(bff)}));
  EXPECT_EQ(Scan(Range("a", "c")), (Rows{{"a", {{"w", "q", 2, "newer"}, {"w", "q", 1, "a"}}},
                                         row(a0),
                                         row("aa"),
                                         row("ab"),
                                         bb,
                                         row(bff)}));
}

TEST_P(RowStoreConformanceTest, ScanStepsBackWithPrev) {
  const std::string a0("a\0", 2);
  for (const std::string& row : {std::string("a"), a0, std::string("b"), std::string("bb"),
                                 std::string("c"), std::string("d")}) {
    Put(row, "w", "q", 1, row);
  }
  Put("ab", "lock", "l", 1, "ab");
  RowMutation gone;
  gone.DeleteRow();
  Apply("c", gone);
  CheckEverywhere([&] {
    auto it = store().Scan(ReadOptions(), Range(a0, "d", Families({"w"})));
    ASSERT_OK(it);
    RowIterator& rows = **it;
    rows.Seek("c");  // deleted, and d is past end_row
    EXPECT_FALSE(rows.Valid());
    // Backwards from the last row of [a\0, d): past "ab", which the filter
    // leaves out, to the start of the range ("a" is below it).
    rows.Seek("bb");
    std::vector<std::string> back;
    for (; rows.Valid(); rows.Prev()) back.emplace_back(rows.row());
    EXPECT_OK(rows.status());
    EXPECT_EQ(back, (std::vector<std::string>{"bb", "b", a0}));
    // Next goes on from where Prev lands; Seek works after Prev ran out.
    rows.Seek("b");
    rows.Prev();
    ASSERT_TRUE(rows.Valid());
    EXPECT_EQ(rows.row(), a0);
    rows.Next();
    ASSERT_TRUE(rows.Valid());
    EXPECT_EQ(rows.row(), "b");
    EXPECT_EQ(rows.cells(), (Cells{{"w", "q", 1, "b"}}));
  });
}

TEST_P(RowStoreConformanceTest, ReadSessionCachesWhatItFetched) {
  RowMutation m;
  m.Put("w", "q", 1, "1").Put("w", "q", 2, "2").Put("w", "q", 3, "3").Put("lock", "k", 5, "k5");
  Apply("r", m);
  harness_->Flush();
  ReadSessionOptions o{.min_timestamp = 1, .max_timestamp = 2, .prefetch = false};
  auto session = store().NewReadSession(o);
  ASSERT_OK(session);
  ReadSession& s = **session;
  const Cell w2{"w", "q", 2, "2"}, w1{"w", "q", 1, "1"};
  EXPECT_EQ(*s.Get("r", "w", "q"), (Cells{w2, w1}));
  EXPECT_EQ(*s.Get("r", "lock", "k"), Cells());  // outside the session's range
  EXPECT_EQ(*s.Get("r", "a", "none"), Cells());

  m.Clear();
  m.Put("w", "q", 1, "one").Put("lock", "k", 2, "k2");
  Apply("r", m);
  // What the session fetched stays as fetched; its ReadRow reads now.
  EXPECT_EQ(*s.Get("r", "w", "q"), (Cells{w2, w1}));
  EXPECT_EQ(*s.Get("r", "lock", "k"), Cells());
  EXPECT_EQ(*s.ReadRow("r", Columns({{"w", "q"}})),
            (Cells{{"w", "q", 3, "3"}, w2, {"w", "q", 1, "one"}}));
  const ReadStats stats = s.stats();
  EXPECT_EQ(stats.sessions, 1u);
  EXPECT_EQ(stats.gets, 5u);
  EXPECT_EQ(stats.cache_hits, 2u);
  EXPECT_EQ(stats.lookups, 4u);

  auto fresh = store().NewReadSession(o);
  ASSERT_OK(fresh);
  EXPECT_EQ(*(*fresh)->Get("r", "lock", "k"), (Cells{{"lock", "k", 2, "k2"}}));
  auto newest = store().NewReadSession(ReadSessionOptions{.max_versions = 1});
  ASSERT_OK(newest);
  EXPECT_EQ(*(*newest)->Get("r", "w", "q"), (Cells{{"w", "q", 3, "3"}}));
  EXPECT_EQ(*(*newest)->Get("nothing", "w", "q"), Cells());

  EXPECT_TRUE(s.Get("r", "nope", "q").status().IsInvalidArgument());
  EXPECT_TRUE(s.Get("", "w", "q").status().IsInvalidArgument());
  EXPECT_TRUE(s.Get(std::string(kMaxRow + 1, 'r'), "w", "q").status().IsInvalidArgument());
  EXPECT_TRUE(s.ReadRow("r", Families({"nope"})).status().IsInvalidArgument());
  EXPECT_TRUE(s.ReadRow("r", Timestamps(3, 2)).status().IsInvalidArgument());
  EXPECT_TRUE(store()
                  .NewReadSession(ReadSessionOptions{.min_timestamp = 3, .max_timestamp = 2})
                  .status()
                  .IsInvalidArgument());
  EXPECT_TRUE(
      store().NewReadSession(ReadSessionOptions{.max_versions = 0}).status().IsInvalidArgument());
}

TEST_P(RowStoreConformanceTest, LimitsAreInclusive) {
  const std::string row(kMaxRow, 'r');
  RowMutation m;
  m.Put("w", std::string(kMaxQualifier, 'q'), kMaxTimestamp, std::string(kMaxValue, 'v'))
      .Put("w", "", kMinTimestamp, "");
  Apply(row, m);
  EXPECT_TRUE(
      SameResult(Check(row, {Condition::ValueEquals("w", std::string(kMaxQualifier, 'q'),
                                                    kMaxTimestamp, std::string(kMaxValue, 'v'))}),
                 Applied()));
  CheckEverywhere([&] {
    EXPECT_EQ(Read(row), (Cells{{"w", "", kMinTimestamp, ""},
                                {"w", std::string(kMaxQualifier, 'q'), kMaxTimestamp,
                                 std::string(kMaxValue, 'v')}}));
  });
}

TEST_P(RowStoreConformanceTest, BadInputIsInvalidArgumentAndWritesNothing) {
  const WriteOptions wo;
  const std::string long_row(kMaxRow + 1, 'r');
  const std::string long_qualifier(kMaxQualifier + 1, 'q');
  const std::string long_value(kMaxValue + 1, 'v');
  auto expect_invalid = [](const Status& s, const char* what) {
    EXPECT_TRUE(s.IsInvalidArgument()) << what << ": " << s.ToString();
  };

  // Mutate.
  RowMutation ok;
  ok.Put("w", "q", 1, "v");
  expect_invalid(store().Mutate(wo, "", ok), "empty row");
  expect_invalid(store().Mutate(wo, long_row, ok), "long row");
  expect_invalid(store().Mutate(wo, "r", RowMutation()), "empty mutation");
  struct BadEntry {
    const char* what;
    std::function<void(RowMutation*)> add;
  };
  const std::vector<BadEntry> bad_entries = {
      {"unknown family", [](RowMutation* m) { m->Put("nope", "q", 1, "v"); }},
      {"unknown family in DeleteCell", [](RowMutation* m) { m->DeleteCell("nope", "q", 1); }},
      {"unknown family in DeleteColumn", [](RowMutation* m) { m->DeleteColumn("nope", "q"); }},
      {"timestamp 0", [](RowMutation* m) { m->Put("w", "q", 0, "v"); }},
      {"timestamp max", [](RowMutation* m) { m->Put("w", "q", UINT64_MAX, "v"); }},
      {"DeleteRow at 0", [](RowMutation* m) { m->DeleteRow(0); }},
      {"DeleteColumn at max", [&](RowMutation* m) { m->DeleteColumn("w", "q", UINT64_MAX); }},
      {"long qualifier", [&](RowMutation* m) { m->Put("w", long_qualifier, 1, "v"); }},
      {"long value", [&](RowMutation* m) { m->Put("w", "q", 1, long_value); }},
  };
  for (const BadEntry& bad : bad_entries) {
    RowMutation m;
    m.Put("w", "q", 1, "v");  // a good entry first: it is not written either
    bad.add(&m);
    expect_invalid(store().Mutate(wo, "r", m), bad.what);
    // The same entry in a check-and-mutate, alone and in a batch.
    expect_invalid(store().CheckAndMutate(wo, "r", {}, m).status(), bad.what);
    std::vector<ConditionalMutation> batch(2);
    batch[0].row = "b";
    batch[0].mutation = ok;
    batch[1].row = "r";
    batch[1].mutation = m;
    expect_invalid(store().CheckAndMutateBatch(wo, batch).status(), bad.what);
  }

  // Conditions.
  const std::vector<std::pair<const char*, Condition>> bad_conditions = {
      {"condition on unknown family", Condition::CellExists("nope", "q", 1)},
      {"condition with long qualifier", Condition::CellExists("w", long_qualifier, 1)},
      {"condition with long value", Condition::ValueEquals("w", "q", 1, long_value)},
      {"condition min above max", Condition::NoCellInRange("w", "q", 5, 4)},
      {"condition at 0", Condition::CellExists("w", "q", 0)},
      {"condition range to max", Condition::NoCellInRange("w", "q", 1, UINT64_MAX)},
  };
  for (const auto& [what, c] : bad_conditions) {
    expect_invalid(
        store().CheckAndMutate(wo, "r", {Condition::CellExists("w", "q", 1), c}, ok).status(),
        what);
    expect_invalid(store().CheckAndMutate(wo, "r", {c}, RowMutation()).status(), what);
  }
  expect_invalid(store().CheckAndMutate(wo, "r", {}, RowMutation()).status(),
                 "no conditions and no mutation");
  expect_invalid(
      store().CheckAndMutate(wo, "", {Condition::CellExists("w", "q", 1)}, RowMutation()).status(),
      "pure check of an empty row key");
  expect_invalid(
      store()
          .CheckAndMutate(wo, long_row, {Condition::CellExists("w", "q", 1)}, RowMutation())
          .status(),
      "pure check of a long row key");

  // Batches: a bad entry or a repeated row fails the whole batch.
  std::vector<ConditionalMutation> batch(3);
  batch[0].row = "x";
  batch[0].mutation = ok;
  batch[1].row = "y";
  batch[1].mutation = ok;
  batch[2].row = "x";
  batch[2].conditions = {Condition::NoCellInRange("w", "q", 1, kMaxTimestamp)};
  expect_invalid(store().CheckAndMutateBatch(wo, batch).status(), "repeated row");
  batch[2].row = "z";
  batch[2].conditions.clear();
  expect_invalid(store().CheckAndMutateBatch(wo, batch).status(), "entry with nothing to do");

  // Reads.
  expect_invalid(store().ReadRow(ReadOptions(), "", RowFilter()).status(), "read of empty row");
  expect_invalid(store().ReadRow(ReadOptions(), long_row, RowFilter()).status(),
                 "read of long row");
  expect_invalid(store().ReadRow(ReadOptions(), "r", Families({"w", "nope"})).status(),
                 "read of unknown family");
  expect_invalid(store().ReadRow(ReadOptions(), "r", Columns({{"nope", "q"}})).status(),
                 "read of unknown column family");
  expect_invalid(store().ReadRow(ReadOptions(), "r", Timestamps(2, 1)).status(),
                 "read with min above max");
  expect_invalid(store().ReadRow(ReadOptions(), "r", Timestamps(1, 2, 0)).status(),
                 "read of 0 versions");
  expect_invalid(store().Scan(ReadOptions(), Range("b", "a")).status(), "scan start after end");
  expect_invalid(store().Scan(ReadOptions(), Range("", "", Families({"nope"}))).status(),
                 "scan of unknown family");
  expect_invalid(store().Scan(ReadOptions(), Range("", "", Timestamps(1, 1, 0))).status(),
                 "scan of 0 versions");

  CheckEverywhere([&] { EXPECT_EQ(Scan(ScanSpec()), Rows()); });
}

TEST_P(RowStoreConformanceTest, ConcurrentWritesAreAtomicPerRow) {
  // Threads increment two counter rows with check-and-mutate and write pairs
  // of columns that must be seen together; a reader checks every pair.
  constexpr int kThreads = 4;
  const int kIncrements = test::UnderSanitizer() ? 30 : 100;
  const WriteOptions wo{.sync = false};
  for (const char* row : {"c0", "c1"}) Put(row, "data", "n", 1, "0");
  std::atomic<bool> done{false};
  std::atomic<int> torn{0};
  std::thread reader([&] {
    while (!done.load()) {
      auto r = store().ReadRow(ReadOptions(), "pair", RowFilter());
      if (!r.ok() || (r->size() != 0 && r->size() != 2) ||
          (r->size() == 2 && (*r)[0].value != (*r)[1].value)) {
        torn++;
      }
    }
  });
  std::vector<std::thread> writers;
  std::atomic<int> errors{0};
  for (int t = 0; t < kThreads; t++) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < kIncrements; i++) {
        const std::string row = (i + t) % 2 == 0 ? "c0" : "c1";
        for (;;) {
          auto cur = store().ReadRow(ReadOptions(), row, RowFilter());
          if (!cur.ok() || cur->size() != 1) {
            errors++;
            return;
          }
          int n = 0;
          const std::string& value = (*cur)[0].value;
          std::from_chars(value.data(), value.data() + value.size(), n);
          const std::string next = std::to_string(n + 1);
          RowMutation m;
          m.Put("data", "n", 1, next);
          auto r = store().CheckAndMutate(
              wo, row, {Condition::ValueEquals("data", "n", 1, (*cur)[0].value)}, m);
          if (!r.ok()) {
            errors++;
            return;
          }
          if (r->applied) break;
        }
        RowMutation pair;
        const std::string v = std::to_string(t) + "/" + std::to_string(i);
        pair.Put("w", "x", 1, v).Put("a", "y", 1, v);
        if (!store().Mutate(wo, "pair", pair).ok()) errors++;
      }
    });
  }
  for (auto& w : writers) w.join();
  done = true;
  reader.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(torn.load(), 0);
  const int total = kThreads * kIncrements;
  EXPECT_EQ(Read("c0"), (Cells{{"data", "n", 1, std::to_string(total / 2)}}));
  EXPECT_EQ(Read("c1"), (Cells{{"data", "n", 1, std::to_string(total - total / 2)}}));
}

}  // namespace
}  // namespace strata::conformance
