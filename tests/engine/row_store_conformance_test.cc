// The row-store contract (strata/row_store.h), checked the same way on both
// implementations: the Table store (NewTableRowStore) and the in-memory
// ModelRowStore. Scripted cases, with every expected answer written out, run
// on each store; for the Table store the cells move between memtables,
// SSTables, compactions and reopens along the way. Then random operation
// sequences run on both stores at once and every answer is compared: cells,
// scans, check-and-mutate results with their failure cells, batch results,
// read sessions and the status code of bad input.
#include <gtest/gtest.h>

#include <atomic>
#include <charconv>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/random.h"
#include "strata/engine.h"
#include "strata/row_store.h"
#include "strata/table.h"
#include "util/model_row_store.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata {

// How GoogleTest prints a cell in a failure message.
void PrintTo(const Cell& c, std::ostream* os) {
  auto bytes = [&](const std::string& s) {
    static const char kHex[] = "0123456789abcdef";
    std::string out;
    for (unsigned char ch : s) {
      if (ch >= 0x20 && ch < 0x7f && ch != '\\') {
        out += static_cast<char>(ch);
      } else {
        out += "\\x";
        out += kHex[ch >> 4];
        out += kHex[ch & 15];
      }
    }
    return out;
  };
  *os << "{" << c.family << ":" << bytes(c.qualifier) << "@" << c.timestamp << "=" << bytes(c.value)
      << "}";
}

namespace {

using test::ModelRowStore;
using test::ScratchDir;
using Cells = std::vector<Cell>;
using Rows = std::vector<std::pair<std::string, Cells>>;

// Families in schema order, which is neither alphabetical nor grouped by
// locality group.
TableSchema Schema() {
  TableSchema s;
  s.locality_groups = {{.name = "hot", .in_memory = true}, {.name = "cold"}};
  s.families = {{.name = "w", .locality_group = "cold"},
                {.name = "lock", .locality_group = "hot"},
                {.name = "data", .locality_group = "cold"},
                {.name = "a", .locality_group = "hot"}};
  return s;
}
const std::vector<std::string> kFamilies = {"w", "lock", "data", "a"};

constexpr size_t kMaxRow = 64;
constexpr size_t kMaxQualifier = 32;
constexpr size_t kMaxValue = 256;

// Small limits, so bad input is cheap to make, and small memtables, levels
// and tablets, so flushes, compactions and splits happen within a few
// thousand writes.
EngineOptions Options() {
  EngineOptions o;
  o.max_row_key_size = kMaxRow;
  o.max_qualifier_size = kMaxQualifier;
  o.max_value_size = kMaxValue;
  o.wal_segment_size = 256 << 10;
  o.write_buffer_size = 64 << 10;
  o.level0_compaction_trigger = 2;
  o.level1_max_bytes = 128 << 10;
  o.target_file_size = 32 << 10;
  o.tablet_split_size = 96 << 10;
  return o;
}

// A store under test, and what may happen to its storage between calls
// without changing what it holds.
class Harness {
 public:
  virtual ~Harness() = default;
  virtual RowStore* store() = 0;
  virtual void Flush() {}
  virtual void Compact() {}
  virtual void Reopen() {}
};

class ModelHarness final : public Harness {
 public:
  RowStore* store() override { return store_.get(); }

 private:
  std::unique_ptr<ModelRowStore> store_ = ModelRowStore::ForSchema(Schema(), Options());
};

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

std::unique_ptr<Harness> MakeHarness(const std::string& kind) {
  if (kind == "table") return std::make_unique<TableHarness>();
  return std::make_unique<ModelHarness>();
}

// Every row of a scan, or its error.
Result<Rows> ScanRows(const RowStore& store, const ScanSpec& spec) {
  auto it = store.Scan(ReadOptions(), spec);
  if (!it.ok()) return it.status();
  Rows rows;
  for (; (*it)->Valid(); (*it)->Next()) {
    rows.emplace_back(std::string((*it)->row()), (*it)->cells());
  }
  STRATA_RETURN_IF_ERROR((*it)->status());
  return rows;
}

::testing::AssertionResult SameResult(const CheckAndMutateResult& got,
                                      const CheckAndMutateResult& want) {
  if (got.applied != want.applied) {
    return ::testing::AssertionFailure()
           << "applied is " << got.applied << ", expected " << want.applied;
  }
  if (got.failures != want.failures) {
    auto failure = ::testing::AssertionFailure() << "failures differ: got";
    for (const auto& f : got.failures) {
      failure << " #" << f.index << ::testing::PrintToString(f.cells);
    }
    failure << "; expected";
    for (const auto& f : want.failures) {
      failure << " #" << f.index << ::testing::PrintToString(f.cells);
    }
    return failure;
  }
  return ::testing::AssertionSuccess();
}

CheckAndMutateResult Applied() { return CheckAndMutateResult{.applied = true}; }
CheckAndMutateResult Failed(std::vector<ConditionFailure> failures) {
  return CheckAndMutateResult{.applied = false, .failures = std::move(failures)};
}

RowFilter Families(std::vector<std::string> families) {
  RowFilter f;
  f.families = std::move(families);
  return f;
}
RowFilter Columns(std::vector<std::pair<std::string, std::string>> columns) {
  RowFilter f;
  f.columns = std::move(columns);
  return f;
}
RowFilter Timestamps(uint64_t min, uint64_t max, uint32_t max_versions = UINT32_MAX) {
  RowFilter f;
  f.min_timestamp = min;
  f.max_timestamp = max;
  f.max_versions = max_versions;
  return f;
}
ScanSpec Range(std::string start, std::string end, RowFilter filter = RowFilter()) {
  return ScanSpec{std::move(start), std::move(end), std::move(filter)};
}

// ----------------------------------------------------------------------------
// Scripted cases, run on each store.

class RowStoreConformanceTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { harness_ = MakeHarness(GetParam()); }

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

INSTANTIATE_TEST_SUITE_P(Stores, RowStoreConformanceTest, ::testing::Values("table", "model"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

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

class RandomOps {
 public:
  RandomOps(uint64_t seed, TableHarness* table, ModelRowStore* model)
      : rnd_(seed), table_(table), model_(model) {}

  // Runs `ops` random operations; stops at the first difference.
  void Run(int ops) {
    for (op_ = 0; op_ < ops && !::testing::Test::HasFailure(); op_++) {
      const uint64_t dice = rnd_.Uniform(1000);
      if (dice < 300) {
        MutateOne();
      } else if (dice < 450) {
        CheckAndMutateOne();
      } else if (dice < 530) {
        BatchOne();
      } else if (dice < 800) {
        ReadOne();
      } else if (dice < 880) {
        ScanOne();
      } else if (dice < 960) {
        SessionOne();
      } else if (dice < 990) {
        Churn();
      } else if (dice < 996) {
        table_->Flush();
      } else if (dice < 999) {
        table_->Compact();
      } else {
        table_->Reopen();
      }
    }
    if (::testing::Test::HasFailure()) ADD_FAILURE() << "first difference at op " << op_ - 1;
  }

  // Columns the Table store's sessions fetched by prediction.
  uint64_t prefetched_columns() const { return prefetched_columns_; }

  // Every row, read and scanned, after a compaction.
  void CompareEverything() {
    table_->Compact();
    const Rows all = model_->Dump();
    auto scanned = ScanRows(*table_->store(), ScanSpec());
    ASSERT_OK(scanned);
    EXPECT_EQ(*scanned, all);
    for (const std::string& row : RowPool()) {
      CompareRead(row, RowFilter());
    }
  }

 private:
  static const std::vector<std::string>& RowPool() {
    static const std::vector<std::string> rows = [] {
      std::vector<std::string> r = {"a", std::string("a\0", 2),    "ab", "abc", "b", "b\xff", "bb",
                                    "c", std::string(kMaxRow, 'm')};
      for (int i = 0; i < 24; i++) r.push_back("row" + std::to_string(i));
      return r;
    }();
    return rows;
  }

  // Mostly good input; now and then something a store must reject.
  std::string Row() {
    if (rnd_.OneIn(200)) return rnd_.OneIn(2) ? std::string() : std::string(kMaxRow + 1, 'm');
    return RowPool()[rnd_.Uniform(RowPool().size())];
  }
  std::string Family() {
    if (rnd_.OneIn(300)) return "nope";
    return kFamilies[rnd_.Uniform(kFamilies.size())];
  }
  std::string Qualifier() {
    static const std::vector<std::string> kQualifiers = {"", "q", std::string("q\0", 2), "r",
                                                         "\xff"};
    if (rnd_.OneIn(400)) return std::string(kMaxQualifier + 1, 'q');
    return kQualifiers[rnd_.Uniform(kQualifiers.size())];
  }
  uint64_t Timestamp() {
    if (rnd_.OneIn(400)) return rnd_.OneIn(2) ? 0 : UINT64_MAX;
    if (rnd_.OneIn(50)) return kMaxTimestamp;
    return 1 + rnd_.Uniform(12);
  }
  std::string Value() {
    if (rnd_.OneIn(500)) return std::string(kMaxValue + 1, 'v');
    return rnd_.RandomLetters(std::min<uint64_t>(rnd_.Skewed(8), kMaxValue));
  }
  WriteOptions Write() { return WriteOptions{.sync = rnd_.OneIn(20)}; }

  RowMutation Mutation(int max_entries) {
    RowMutation m;
    const int n = static_cast<int>(rnd_.Uniform(max_entries + 1));
    for (int i = 0; i < n; i++) {
      const uint64_t k = rnd_.Uniform(20);
      if (k < 12) {
        m.Put(Family(), Qualifier(), Timestamp(), Value());
      } else if (k < 15) {
        m.DeleteCell(Family(), Qualifier(), Timestamp());
      } else if (k < 18) {
        m.DeleteColumn(Family(), Qualifier(), rnd_.OneIn(3) ? kMaxTimestamp : Timestamp());
      } else {
        m.DeleteRow(rnd_.OneIn(3) ? kMaxTimestamp : Timestamp());
      }
    }
    return m;
  }

  // A condition that often names a cell the row has, so that some hold and
  // some fail with cells to report.
  Condition RandomCondition(const std::string& row) {
    std::string family = Family();
    std::string qualifier = Qualifier();
    uint64_t ts = Timestamp();
    std::string value = Value();
    auto cells = model_->ReadRow(ReadOptions(), row, RowFilter());
    if (cells.ok() && !cells->empty() && rnd_.OneIn(2)) {
      const Cell& c = (*cells)[rnd_.Uniform(cells->size())];
      family = c.family;
      qualifier = c.qualifier;
      ts = c.timestamp;
      if (!rnd_.OneIn(4)) value = c.value;
    }
    switch (rnd_.Uniform(3)) {
      case 0: {
        uint64_t min = ts > 3 && rnd_.OneIn(2) ? ts - rnd_.Uniform(3) : ts;
        uint64_t max = rnd_.OneIn(5) ? kMaxTimestamp : ts + rnd_.Uniform(4);
        if (rnd_.OneIn(100)) std::swap(min, max);
        return Condition::NoCellInRange(family, qualifier, min, max);
      }
      case 1:
        return Condition::CellExists(family, qualifier, ts);
      default:
        return Condition::ValueEquals(family, qualifier, ts, value);
    }
  }
  std::vector<Condition> Conditions(const std::string& row) {
    std::vector<Condition> conditions;
    const int n = static_cast<int>(rnd_.Uniform(4));
    for (int i = 0; i < n; i++) conditions.push_back(RandomCondition(row));
    return conditions;
  }

  RowFilter Filter() {
    RowFilter f;
    if (rnd_.OneIn(3)) {
      const int n = 1 + static_cast<int>(rnd_.Uniform(2));
      for (int i = 0; i < n; i++) f.families.push_back(Family());
    }
    if (rnd_.OneIn(3)) {
      const int n = 1 + static_cast<int>(rnd_.Uniform(3));
      for (int i = 0; i < n; i++) f.columns.emplace_back(Family(), Qualifier());
    }
    if (rnd_.OneIn(3)) {
      f.min_timestamp = 1 + rnd_.Uniform(12);
      f.max_timestamp = rnd_.OneIn(4) ? kMaxTimestamp : f.min_timestamp + rnd_.Uniform(6);
      if (rnd_.OneIn(100)) std::swap(f.min_timestamp, f.max_timestamp);
    }
    if (rnd_.OneIn(3)) f.max_versions = static_cast<uint32_t>(rnd_.Uniform(4));
    if (f.max_versions == 0 && !rnd_.OneIn(50)) f.max_versions = 1;
    return f;
  }

  template <typename T>
  bool SameStatus(const Result<T>& got, const Result<T>& want, const char* what) {
    EXPECT_EQ(got.status().code(), want.status().code())
        << what << ": table store says " << got.status().ToString() << ", model says "
        << want.status().ToString();
    return got.ok() && want.ok();
  }

  void MutateOne() {
    const std::string row = Row();
    const RowMutation m = Mutation(4);
    const WriteOptions wo = Write();
    Status got = table_->store()->Mutate(wo, row, m);
    Status want = model_->Mutate(wo, row, m);
    EXPECT_EQ(got.code(), want.code())
        << "Mutate: table store says " << got.ToString() << ", model says " << want.ToString();
  }

  void CheckAndMutateOne() {
    const std::string row = Row();
    const std::vector<Condition> conditions = Conditions(row);
    const RowMutation m = Mutation(3);
    const WriteOptions wo = Write();
    auto got = table_->store()->CheckAndMutate(wo, row, conditions, m);
    auto want = model_->CheckAndMutate(wo, row, conditions, m);
    if (SameStatus(got, want, "CheckAndMutate")) {
      EXPECT_TRUE(SameResult(*got, *want));
    }
  }

  void BatchOne() {
    std::vector<ConditionalMutation> batch(rnd_.Uniform(5));
    std::vector<std::string> rows = RowPool();
    for (auto& entry : batch) {
      // Distinct rows, but now and then a repeat.
      entry.row = rnd_.OneIn(30) ? Row() : rows[rnd_.Uniform(rows.size())];
      std::erase(rows, entry.row);
      if (rows.empty()) rows = RowPool();
      entry.conditions = Conditions(entry.row);
      entry.mutation = Mutation(3);
    }
    const WriteOptions wo = Write();
    auto got = table_->store()->CheckAndMutateBatch(wo, batch);
    auto want = model_->CheckAndMutateBatch(wo, batch);
    if (!SameStatus(got, want, "CheckAndMutateBatch")) return;
    ASSERT_EQ(got->size(), want->size());
    for (size_t i = 0; i < got->size(); i++) {
      EXPECT_TRUE(SameResult((*got)[i], (*want)[i])) << "batch entry " << i;
    }
  }

  void CompareRead(const std::string& row, const RowFilter& f) {
    auto got = table_->store()->ReadRow(ReadOptions(), row, f);
    auto want = model_->ReadRow(ReadOptions(), row, f);
    if (SameStatus(got, want, "ReadRow")) {
      EXPECT_EQ(*got, *want) << "row " << row;
    }
  }
  void ReadOne() { CompareRead(Row(), Filter()); }

  void ScanOne() {
    ScanSpec spec;
    if (!rnd_.OneIn(3)) spec.start_row = RowPool()[rnd_.Uniform(RowPool().size())];
    if (!rnd_.OneIn(3)) spec.end_row = RowPool()[rnd_.Uniform(RowPool().size())];
    if (spec.start_row > spec.end_row && !spec.end_row.empty() && !rnd_.OneIn(20)) {
      std::swap(spec.start_row, spec.end_row);
    }
    spec.filter = Filter();
    auto got = ScanRows(*table_->store(), spec);
    auto want = ScanRows(*model_, spec);
    if (SameStatus(got, want, "Scan")) {
      EXPECT_EQ(*got, *want);
    }
  }

  // A session with a few reads and no writes while it lives, so what it
  // caches or prefetches cannot differ from what the model fetches.
  void SessionOne() {
    ReadSessionOptions o;
    if (rnd_.OneIn(2)) {
      o.min_timestamp = 1 + rnd_.Uniform(12);
      o.max_timestamp = o.min_timestamp + rnd_.Uniform(6);
      if (rnd_.OneIn(50)) std::swap(o.min_timestamp, o.max_timestamp);
    }
    if (rnd_.OneIn(2)) o.max_versions = static_cast<uint32_t>(1 + rnd_.Uniform(3));
    if (rnd_.OneIn(100)) o.max_versions = 0;
    o.prefetch = !rnd_.OneIn(4);
    auto got = table_->store()->NewReadSession(o);
    auto want = model_->NewReadSession(o);
    if (!SameStatus(got, want, "NewReadSession")) return;
    const std::string row = Row();
    // Half the sessions read the same columns of a row, one after another,
    // as a transaction reads its lock and write columns: the Table store
    // learns to prefetch them.
    const bool pattern = rnd_.OneIn(2);
    static const std::vector<std::pair<std::string, std::string>> kPattern = {
        {"lock", "q"}, {"w", "q"}, {"data", "q"}, {"a", ""}};
    const int n =
        pattern ? static_cast<int>(kPattern.size()) : 1 + static_cast<int>(rnd_.Uniform(8));
    for (int i = 0; i < n; i++) {
      if (pattern) {
        auto a = (*got)->Get(row, kPattern[i].first, kPattern[i].second);
        auto b = (*want)->Get(row, kPattern[i].first, kPattern[i].second);
        if (SameStatus(a, b, "ReadSession::Get")) {
          EXPECT_EQ(*a, *b);
        }
        continue;
      }
      if (rnd_.OneIn(8)) {
        const RowFilter f = Filter();
        auto a = (*got)->ReadRow(row, f);
        auto b = (*want)->ReadRow(row, f);
        if (SameStatus(a, b, "ReadSession::ReadRow")) {
          EXPECT_EQ(*a, *b);
        }
        continue;
      }
      const std::string get_row = rnd_.OneIn(4) ? Row() : row;
      const std::string family = Family();
      const std::string qualifier = Qualifier();
      auto a = (*got)->Get(get_row, family, qualifier);
      auto b = (*want)->Get(get_row, family, qualifier);
      if (SameStatus(a, b, "ReadSession::Get")) {
        EXPECT_EQ(*a, *b);
      }
    }
    prefetched_columns_ += (*got)->stats().prefetched_columns;
  }

  // Many writes to one row, so that memtables fill and flushes, compactions
  // and splits happen under the random operations.
  void Churn() {
    const std::string row = "row" + std::to_string(rnd_.Uniform(24));
    for (int i = 0; i < 8; i++) {
      RowMutation m;
      for (int j = 0; j < 4; j++) {
        m.Put(kFamilies[rnd_.Uniform(kFamilies.size())], "bulk" + std::to_string(rnd_.Uniform(6)),
              1 + rnd_.Uniform(12), rnd_.RandomLetters(kMaxValue));
      }
      if (rnd_.OneIn(4)) m.DeleteColumn(kFamilies[rnd_.Uniform(4)], "bulk0", 1 + rnd_.Uniform(12));
      ASSERT_OK(table_->store()->Mutate(WriteOptions{.sync = false}, row, m));
      ASSERT_OK(model_->Mutate(WriteOptions{.sync = false}, row, m));
    }
  }

  Random rnd_;
  TableHarness* const table_;
  ModelRowStore* const model_;
  int op_ = 0;
  uint64_t prefetched_columns_ = 0;
};

TEST(RowStoreDifferentialTest, RandomOperationsGiveTheSameAnswersOnBothStores) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("STRATA_TEST_SEED=" + std::to_string(seed));
  TableHarness table;
  auto model = ModelRowStore::ForSchema(Schema(), Options());
  RandomOps ops(seed, &table, model.get());
  const int count = test::LongTests() ? 200000 : test::UnderSanitizer() ? 2000 : 15000;
  ops.Run(count);
  if (HasFailure()) return;
  ops.CompareEverything();
  EXPECT_GT(table.engine()->GetStats().table_files, 0u);
  // The predictor needs a few hundred sessions to learn: the short runs of
  // sanitizer builds may end before it predicts.
  if (count >= 15000) {
    EXPECT_GT(ops.prefetched_columns(), 0u);
  }
}

}  // namespace
}  // namespace strata
