// Table::CheckAndMutate and CheckAndMutateBatch through the public API: each
// condition kind against cells and every delete-marker kind in memtables,
// SSTables and after compaction; failure reports; pure checks; bad input with
// nothing written, also after reopen; batches that partly apply, in one log
// write, recovered whole; and concurrent counters that lose no update.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "common/random.h"
#include "strata/engine.h"
#include "engine_test_util.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata {
namespace {

using test::ScratchDir;

using test::TwoGroupSchema;

class CheckAndMutateTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }

  void Reopen() {
    table_ = Table();
    if (engine_) {
      ASSERT_OK(engine_->Close());
    }
    engine_.reset();
    auto e = Engine::Open(dir_.path(), options_);
    ASSERT_OK(e);
    engine_ = std::move(e.value());
    if (engine_->ListTenants()->empty()) {
      ASSERT_OK(engine_->CreateTenant("t"));
      ASSERT_OK(engine_->OpenTenant("t")->CreateTable("tab", TwoGroupSchema()));
    }
    auto tab = engine_->OpenTenant("t")->OpenTable("tab");
    ASSERT_OK(tab);
    table_ = *tab;
  }

  void Put(const std::string& row, const std::string& fam, const std::string& q, uint64_t ts,
           const std::string& v) {
    RowMutation m;
    m.Put(fam, q, ts, v);
    ASSERT_OK(table_.Mutate(WriteOptions(), row, m));
  }
  void Apply(const std::string& row, const RowMutation& m) {
    ASSERT_OK(table_.Mutate(WriteOptions(), row, m));
  }

  std::vector<Cell> Read(const std::string& row) {
    auto r = table_.ReadRow(ReadOptions(), row);
    EXPECT_OK(r);
    return r.ok() ? *r : std::vector<Cell>();
  }

  // The result of checking `conditions` alone (a pure check).
  CheckAndMutateResult Check(const std::string& row, const std::vector<Condition>& conditions) {
    auto r = table_.CheckAndMutate(WriteOptions(), row, conditions, RowMutation());
    EXPECT_OK(r);
    return r.ok() ? *r : CheckAndMutateResult();
  }
  bool Holds(const std::string& row, const Condition& c) { return Check(row, {c}).applied; }

  ScratchDir dir_{"cam"};
  EngineOptions options_;
  std::unique_ptr<Engine> engine_;
  Table table_;
};

TEST_F(CheckAndMutateTest, NoCellInRange) {
  Put("r", "a", "x", 5, "five");
  Put("r", "a", "x", 9, "nine");
  EXPECT_TRUE(Holds("r", Condition::NoCellInRange("a", "x", 1, 4)));
  EXPECT_TRUE(Holds("r", Condition::NoCellInRange("a", "x", 6, 8)));
  EXPECT_TRUE(Holds("r", Condition::NoCellInRange("a", "x", 10, kMaxTimestamp)));
  EXPECT_TRUE(Holds("r", Condition::NoCellInRange("a", "y", 1, kMaxTimestamp)));  // other column
  EXPECT_TRUE(Holds("r", Condition::NoCellInRange("c", "x", 1, kMaxTimestamp)));  // other family
  EXPECT_TRUE(Holds("other", Condition::NoCellInRange("a", "x", 1, kMaxTimestamp)));
  // Bounds are inclusive.
  EXPECT_FALSE(Holds("r", Condition::NoCellInRange("a", "x", 5, 5)));
  EXPECT_FALSE(Holds("r", Condition::NoCellInRange("a", "x", 1, 5)));
  EXPECT_FALSE(Holds("r", Condition::NoCellInRange("a", "x", 9, kMaxTimestamp)));
  // A failure reports every cell in the range, newest first.
  CheckAndMutateResult r = Check("r", {Condition::NoCellInRange("a", "x", 1, kMaxTimestamp)});
  EXPECT_FALSE(r.applied);
  ASSERT_EQ(r.failures.size(), 1u);
  EXPECT_EQ(r.failures[0].index, 0u);
  EXPECT_EQ(r.failures[0].cells, (std::vector<Cell>{{"a", "x", 9, "nine"}, {"a", "x", 5, "five"}}));
}

TEST_F(CheckAndMutateTest, CellExists) {
  Put("r", "b", "y", 7, "seven");
  EXPECT_TRUE(Holds("r", Condition::CellExists("b", "y", 7)));
  EXPECT_FALSE(Holds("r", Condition::CellExists("b", "y", 6)));
  EXPECT_FALSE(Holds("r", Condition::CellExists("b", "y", 8)));
  EXPECT_FALSE(Holds("r", Condition::CellExists("b", "z", 7)));
  EXPECT_FALSE(Holds("r", Condition::CellExists("a", "y", 7)));
  CheckAndMutateResult r = Check("r", {Condition::CellExists("b", "y", 6)});
  ASSERT_EQ(r.failures.size(), 1u);
  EXPECT_TRUE(r.failures[0].cells.empty());
}

TEST_F(CheckAndMutateTest, ValueEquals) {
  Put("r", "c", "z", 3, "three");
  Put("r", "c", "z", 4, "");
  EXPECT_TRUE(Holds("r", Condition::ValueEquals("c", "z", 3, "three")));
  EXPECT_TRUE(Holds("r", Condition::ValueEquals("c", "z", 4, "")));
  EXPECT_FALSE(Holds("r", Condition::ValueEquals("c", "z", 3, "thre")));
  EXPECT_FALSE(Holds("r", Condition::ValueEquals("c", "z", 3, "")));
  EXPECT_FALSE(Holds("r", Condition::ValueEquals("c", "z", 5, "")));  // missing is not empty
  // An unequal value is reported with its cell, a missing one with none.
  CheckAndMutateResult r = Check(
      "r", {Condition::ValueEquals("c", "z", 3, "x"), Condition::ValueEquals("c", "z", 5, "x")});
  ASSERT_EQ(r.failures.size(), 2u);
  EXPECT_EQ(r.failures[0].index, 0u);
  EXPECT_EQ(r.failures[0].cells, (std::vector<Cell>{{"c", "z", 3, "three"}}));
  EXPECT_EQ(r.failures[1].index, 1u);
  EXPECT_TRUE(r.failures[1].cells.empty());
}

TEST_F(CheckAndMutateTest, AppliesWholeMutationOnlyWhenAllConditionsHold) {
  Put("r", "a", "lock", 10, "held");
  RowMutation m;
  m.Put("a", "data", 20, "d").Put("b", "write", 21, "w").DeleteColumn("a", "lock");
  // One of three conditions fails: nothing is written; every failure is listed.
  auto r = table_.CheckAndMutate(WriteOptions(), "r",
                                 {Condition::NoCellInRange("a", "lock", 1, kMaxTimestamp),
                                  Condition::NoCellInRange("b", "write", 20, kMaxTimestamp),
                                  Condition::CellExists("a", "lock", 11)},
                                 m);
  ASSERT_OK(r);
  EXPECT_FALSE(r->applied);
  ASSERT_EQ(r->failures.size(), 2u);
  EXPECT_EQ(r->failures[0].index, 0u);
  EXPECT_EQ(r->failures[0].cells, (std::vector<Cell>{{"a", "lock", 10, "held"}}));
  EXPECT_EQ(r->failures[1].index, 2u);
  EXPECT_EQ(Read("r"), (std::vector<Cell>{{"a", "lock", 10, "held"}}));

  r = table_.CheckAndMutate(WriteOptions(), "r",
                            {Condition::ValueEquals("a", "lock", 10, "held"),
                             Condition::NoCellInRange("b", "write", 20, kMaxTimestamp)},
                            m);
  ASSERT_OK(r);
  EXPECT_TRUE(r->applied);
  EXPECT_TRUE(r->failures.empty());
  EXPECT_EQ(Read("r"), (std::vector<Cell>{{"a", "data", 20, "d"}, {"b", "write", 21, "w"}}));
  // The mutation's own changes are in place for the next check.
  EXPECT_FALSE(Holds("r", Condition::NoCellInRange("b", "write", 20, kMaxTimestamp)));
  EXPECT_FALSE(Holds("r", Condition::CellExists("a", "lock", 10)));
}

TEST_F(CheckAndMutateTest, NoConditionsAppliesAndPureCheckWritesNothing) {
  RowMutation m;
  m.Put("a", "x", 1, "v");
  auto r = table_.CheckAndMutate(WriteOptions(), "r", {}, m);
  ASSERT_OK(r);
  EXPECT_TRUE(r->applied);
  EXPECT_EQ(Read("r").size(), 1u);

  const EngineStats before = engine_->GetStats();
  EXPECT_TRUE(Holds("r", Condition::CellExists("a", "x", 1)));
  EXPECT_FALSE(Holds("r", Condition::CellExists("a", "x", 2)));
  const EngineStats after = engine_->GetStats();
  EXPECT_EQ(after.writes, before.writes);
  EXPECT_EQ(after.wal_bytes, before.wal_bytes);
  EXPECT_EQ(after.last_sequence, before.last_sequence);
}

// Where the cells and delete markers of the marker test are when it checks.
enum class Placement {
  kMemtable,           // everything in memtables
  kFlushed,            // everything in SSTables
  kMarkersInMemtable,  // cells in SSTables, markers in the memtable
  kCompacted,          // cells and markers flushed separately, then compacted
};

class CheckAndMutateMarkerTest : public CheckAndMutateTest,
                                 public ::testing::WithParamInterface<Placement> {};

TEST_P(CheckAndMutateMarkerTest, ConditionsSeeDeleteMarkers) {
  const Placement placement = GetParam();
  for (uint64_t ts = 1; ts <= 5; ts++) Put("r", "a", "x", ts, "v" + std::to_string(ts));
  for (uint64_t ts : {2, 4, 6}) Put("r", "b", "y", ts, "w" + std::to_string(ts));
  for (uint64_t ts : {2, 3}) Put("r", "c", "z", ts, "z" + std::to_string(ts));
  if (placement == Placement::kMarkersInMemtable || placement == Placement::kCompacted) {
    ASSERT_OK(engine_->Flush());
  }
  RowMutation d;
  d.DeleteCell("a", "x", 3).DeleteColumn("b", "y", 4).DeleteRow(2);
  Apply("r", d);
  Put("r", "c", "z", 1, "again");  // written after the row marker: visible
  switch (placement) {
    case Placement::kMemtable:
    case Placement::kMarkersInMemtable:
      break;
    case Placement::kFlushed:
      ASSERT_OK(engine_->Flush());
      break;
    case Placement::kCompacted:
      ASSERT_OK(engine_->Compact());
      break;
  }
  const EngineStats stats = engine_->GetStats();
  EXPECT_EQ(stats.table_files > 0, placement != Placement::kMemtable);
  if (placement == Placement::kCompacted) {
    EXPECT_EQ(stats.level_files[0], 0u);
  }
  ASSERT_EQ(Read("r"), (std::vector<Cell>{{"a", "x", 5, "v5"},
                                          {"a", "x", 4, "v4"},
                                          {"b", "y", 6, "w6"},
                                          {"c", "z", 3, "z3"},
                                          {"c", "z", 1, "again"}}));
  // DeleteCell hides exactly its version.
  EXPECT_FALSE(Holds("r", Condition::CellExists("a", "x", 3)));
  EXPECT_FALSE(Holds("r", Condition::ValueEquals("a", "x", 3, "v3")));
  EXPECT_TRUE(Holds("r", Condition::NoCellInRange("a", "x", 3, 3)));
  EXPECT_TRUE(Holds("r", Condition::ValueEquals("a", "x", 4, "v4")));
  // DeleteColumn hides the versions up to its timestamp.
  EXPECT_FALSE(Holds("r", Condition::CellExists("b", "y", 4)));
  EXPECT_FALSE(Holds("r", Condition::CellExists("b", "y", 2)));
  EXPECT_TRUE(Holds("r", Condition::NoCellInRange("b", "y", 1, 5)));
  EXPECT_TRUE(Holds("r", Condition::CellExists("b", "y", 6)));
  // DeleteRow hides every column's versions up to its timestamp, but not a
  // put written after it.
  EXPECT_TRUE(Holds("r", Condition::NoCellInRange("a", "x", 1, 2)));
  EXPECT_FALSE(Holds("r", Condition::CellExists("c", "z", 2)));
  EXPECT_TRUE(Holds("r", Condition::ValueEquals("c", "z", 1, "again")));
  EXPECT_TRUE(Holds("r", Condition::CellExists("c", "z", 3)));
  // A failure reports only the visible cells in the range.
  CheckAndMutateResult r = Check("r", {Condition::NoCellInRange("a", "x", 1, 4),
                                       Condition::NoCellInRange("b", "y", 1, kMaxTimestamp),
                                       Condition::NoCellInRange("c", "z", 1, 2)});
  ASSERT_EQ(r.failures.size(), 3u);
  EXPECT_EQ(r.failures[0].cells, (std::vector<Cell>{{"a", "x", 4, "v4"}}));
  EXPECT_EQ(r.failures[1].cells, (std::vector<Cell>{{"b", "y", 6, "w6"}}));
  EXPECT_EQ(r.failures[2].cells, (std::vector<Cell>{{"c", "z", 1, "again"}}));
  // And a check-and-mutate that relies on the markers applies.
  RowMutation m;
  m.Put("a", "x", 3, "v3-again");
  auto cam = table_.CheckAndMutate(
      WriteOptions(), "r",
      {Condition::NoCellInRange("a", "x", 3, 3), Condition::NoCellInRange("b", "y", 1, 5)}, m);
  ASSERT_OK(cam);
  EXPECT_TRUE(cam->applied);
  EXPECT_TRUE(Holds("r", Condition::ValueEquals("a", "x", 3, "v3-again")));
}

INSTANTIATE_TEST_SUITE_P(Placements, CheckAndMutateMarkerTest,
                         ::testing::Values(Placement::kMemtable, Placement::kFlushed,
                                           Placement::kMarkersInMemtable, Placement::kCompacted),
                         [](const ::testing::TestParamInfo<Placement>& info) {
                           switch (info.param) {
                             case Placement::kMemtable:
                               return std::string("Memtable");
                             case Placement::kFlushed:
                               return std::string("Flushed");
                             case Placement::kMarkersInMemtable:
                               return std::string("MarkersInMemtable");
                             case Placement::kCompacted:
                               return std::string("Compacted");
                           }
                           return std::string("Unknown");
                         });

TEST_F(CheckAndMutateTest, BadInputChangesNothing) {
  Put("r", "a", "x", 1, "v");
  const std::vector<Cell> before = Read("r");
  const uint64_t writes = engine_->GetStats().writes;
  RowMutation good;
  good.Put("a", "x", 2, "new");
  RowMutation bad_family;
  bad_family.Put("a", "x", 2, "new").Put("nope", "x", 2, "new");
  RowMutation bad_ts;
  bad_ts.Put("a", "x", 0, "new");
  const Condition ok_cond = Condition::CellExists("a", "x", 1);
  struct Case {
    std::string name;
    std::string row;
    std::vector<Condition> conditions;
    RowMutation mutation;
  };
  const std::vector<Case> cases = {
      {"empty row", "", {ok_cond}, good},
      {"empty row, pure check", "", {ok_cond}, RowMutation()},
      {"oversized row", std::string(options_.max_row_key_size + 1, 'r'), {ok_cond}, good},
      {"nothing to do", "r", {}, RowMutation()},
      {"unknown family in mutation", "r", {ok_cond}, bad_family},
      {"reserved timestamp in mutation", "r", {ok_cond}, bad_ts},
      {"unknown family in condition", "r", {ok_cond, Condition::CellExists("zz", "x", 1)}, good},
      {"timestamp 0", "r", {Condition::CellExists("a", "x", 0)}, good},
      {"timestamp max", "r", {Condition::ValueEquals("a", "x", UINT64_MAX, "v")}, good},
      {"range upper bound max", "r", {Condition::NoCellInRange("a", "x", 1, UINT64_MAX)}, good},
      {"min above max", "r", {Condition::NoCellInRange("a", "x", 5, 4)}, good},
      {"oversized qualifier",
       "r",
       {Condition::CellExists("a", std::string(options_.max_qualifier_size + 1, 'q'), 1)},
       good},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto r = table_.CheckAndMutate(WriteOptions(), c.row, c.conditions, c.mutation);
    EXPECT_TRUE(r.status().IsInvalidArgument()) << r.status().ToString();
  }
  // Conditions that name their index.
  auto r = table_.CheckAndMutate(WriteOptions(), "r",
                                 {ok_cond, Condition::NoCellInRange("a", "x", 9, 3)}, good);
  EXPECT_NE(r.status().ToString().find("condition 1"), std::string::npos) << r.status().ToString();

  // A batch with one bad entry writes none of the good ones.
  std::vector<ConditionalMutation> batch = {
      {"g1", {}, good},
      {"g2", {Condition::NoCellInRange("a", "x", 1, kMaxTimestamp)}, good},
      {"r", {Condition::CellExists("nope", "x", 1)}, good},
  };
  auto br = table_.CheckAndMutateBatch(WriteOptions(), batch);
  EXPECT_TRUE(br.status().IsInvalidArgument());
  EXPECT_NE(br.status().ToString().find("batch entry 2"), std::string::npos)
      << br.status().ToString();
  // The same row twice is refused, naming both entries.
  batch = {{"g1", {}, good}, {"g2", {}, good}, {"g1", {ok_cond}, RowMutation()}};
  br = table_.CheckAndMutateBatch(WriteOptions(), batch);
  EXPECT_TRUE(br.status().IsInvalidArgument());
  EXPECT_NE(br.status().ToString().find("batch entry 2"), std::string::npos);
  EXPECT_NE(br.status().ToString().find("entry 0"), std::string::npos);

  // An empty handle and a closed engine.
  Table empty;
  EXPECT_TRUE(empty.CheckAndMutate(WriteOptions(), "r", {}, good).status().IsInvalidArgument());
  EXPECT_TRUE(empty.CheckAndMutateBatch(WriteOptions(), batch).status().IsInvalidArgument());

  auto check_unchanged = [&] {
    EXPECT_EQ(Read("r"), before);
    EXPECT_TRUE(Read("g1").empty());
    EXPECT_TRUE(Read("g2").empty());
  };
  check_unchanged();
  EXPECT_EQ(engine_->GetStats().writes, writes);

  Table held = table_;
  ASSERT_OK(engine_->Close());
  auto closed = held.CheckAndMutate(WriteOptions(), "g1", {}, good);
  EXPECT_TRUE(closed.status().IsInvalidArgument());
  EXPECT_NE(closed.status().ToString().find("closed"), std::string::npos);
  EXPECT_TRUE(
      held.CheckAndMutateBatch(WriteOptions(), {{"g1", {}, good}}).status().IsInvalidArgument());
  held = Table();
  engine_.reset();
  Reopen();
  check_unchanged();
}

TEST_F(CheckAndMutateTest, BatchAppliesExactlyTheRowsWhoseConditionsHold) {
  for (int i = 0; i < 8; i += 2) Put("row" + std::to_string(i), "a", "lock", 5, "L");
  std::vector<ConditionalMutation> batch;
  for (int i = 0; i < 8; i++) {
    ConditionalMutation m;
    m.row = "row" + std::to_string(i);
    m.conditions.push_back(Condition::NoCellInRange("a", "lock", 1, kMaxTimestamp));
    m.mutation.Put("a", "data", 10, "d" + std::to_string(i)).Put("b", "big", 10, "b");
    batch.push_back(std::move(m));
  }
  // A pure check and an unconditional write in the same batch.
  batch.push_back({"check", {Condition::NoCellInRange("c", "q", 1, kMaxTimestamp)}, {}});
  batch.push_back({"free", {}, RowMutation().Put("c", "q", 3, "free")});

  const EngineStats before = engine_->GetStats();
  auto r = table_.CheckAndMutateBatch(WriteOptions(), batch);
  ASSERT_OK(r);
  const EngineStats after = engine_->GetStats();
  ASSERT_EQ(r->size(), batch.size());
  for (int i = 0; i < 8; i++) {
    SCOPED_TRACE(i);
    EXPECT_EQ((*r)[i].applied, i % 2 == 1);
    if (i % 2 == 0) {
      ASSERT_EQ((*r)[i].failures.size(), 1u);
      EXPECT_EQ((*r)[i].failures[0].cells, (std::vector<Cell>{{"a", "lock", 5, "L"}}));
    }
  }
  EXPECT_TRUE((*r)[8].applied);
  EXPECT_TRUE((*r)[9].applied);
  // Four conditional rows and the free one, in one log write.
  EXPECT_EQ(after.writes - before.writes, 5u);
  EXPECT_EQ(after.cells_written - before.cells_written, 9u);
  EXPECT_EQ(after.wal_groups - before.wal_groups, 1u);

  auto check = [&] {
    for (int i = 0; i < 8; i++) {
      SCOPED_TRACE(i);
      const std::string row = "row" + std::to_string(i);
      if (i % 2 == 0) {
        EXPECT_EQ(Read(row), (std::vector<Cell>{{"a", "lock", 5, "L"}}));
      } else {
        EXPECT_EQ(Read(row), (std::vector<Cell>{{"a", "data", 10, "d" + std::to_string(i)},
                                                {"b", "big", 10, "b"}}));
      }
    }
    EXPECT_TRUE(Read("check").empty());
    EXPECT_EQ(Read("free"), (std::vector<Cell>{{"c", "q", 3, "free"}}));
  };
  check();
  Reopen();  // replays the multi-row record from the log
  check();
  ASSERT_OK(engine_->Flush());
  Reopen();
  check();

  // Nothing holds: nothing is logged.
  const EngineStats quiet = engine_->GetStats();
  std::vector<ConditionalMutation> none = {batch[0], batch[2]};
  r = table_.CheckAndMutateBatch(WriteOptions(), none);
  ASSERT_OK(r);
  EXPECT_FALSE((*r)[0].applied);
  EXPECT_FALSE((*r)[1].applied);
  EXPECT_EQ(engine_->GetStats().wal_bytes, quiet.wal_bytes);
  EXPECT_TRUE(table_.CheckAndMutateBatch(WriteOptions(), {})->empty());
}

// Rows that share a lock stripe (or not) and overlapping batches in random
// orders: no deadlock, and every row's counter counts every applied increment.
TEST_F(CheckAndMutateTest, ConcurrentOverlappingBatchesLoseNoUpdate) {
  constexpr int kRows = 6;
  const int threads = 4;
  const int rounds = test::UnderSanitizer() ? 40 : 300;
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("STRATA_TEST_SEED=" + std::to_string(seed));
  for (int i = 0; i < kRows; i++) Put("n" + std::to_string(i), "a", "n", 1, "0");
  std::vector<std::atomic<int>> applied(kRows);
  std::vector<std::thread> workers;
  std::atomic<bool> failed{false};
  for (int t = 0; t < threads; t++) {
    workers.emplace_back([&, t] {
      Random rnd(seed + t);
      WriteOptions wo;
      wo.sync = false;
      for (int n = 0; n < rounds && !failed; n++) {
        std::vector<int> rows;
        for (int i = 0; i < kRows; i++) {
          if (rnd.OneIn(2)) rows.push_back(i);
        }
        if (rows.empty()) continue;
        for (size_t i = rows.size(); i > 1; i--) std::swap(rows[i - 1], rows[rnd.Uniform(i)]);
        std::vector<ConditionalMutation> batch;
        for (int i : rows) {
          const std::string row = "n" + std::to_string(i);
          auto cells = table_.ReadRow(ReadOptions(), row, RowFilter{.columns = {{"a", "n"}}});
          if (!cells.ok() || cells->size() != 1) {
            failed = true;
            return;
          }
          const std::string v = (*cells)[0].value;
          batch.push_back({row,
                           {Condition::ValueEquals("a", "n", 1, v)},
                           RowMutation().Put("a", "n", 1, std::to_string(std::stoi(v) + 1))});
        }
        auto r = table_.CheckAndMutateBatch(wo, batch);
        if (!r.ok()) {
          failed = true;
          return;
        }
        for (size_t k = 0; k < rows.size(); k++) {
          if ((*r)[k].applied) applied[rows[k]]++;
        }
        // A plain write of the same rows meanwhile, on another column.
        RowMutation m;
        m.Put("b", "t" + std::to_string(t), n + 1, "x");
        if (!table_.Mutate(wo, "n" + std::to_string(rows[0]), m).ok()) failed = true;
      }
    });
  }
  for (auto& w : workers) w.join();
  ASSERT_FALSE(failed);
  int total = 0;
  for (int i = 0; i < kRows; i++) {
    auto cells =
        table_.ReadRow(ReadOptions(), "n" + std::to_string(i), RowFilter{.columns = {{"a", "n"}}});
    ASSERT_OK(cells);
    ASSERT_EQ(cells->size(), 1u);
    EXPECT_EQ(std::stoi((*cells)[0].value), applied[i].load()) << "row " << i;
    total += applied[i];
  }
  EXPECT_GT(total, 0);
}

// Counters incremented from many threads by read + check-and-mutate. Either
// compare-and-set of the value at one timestamp, or append of a new version
// guarded by "no version above the one read".
struct CounterParam {
  bool compare_and_set;
  bool sync;
};

class CheckAndMutateCounterTest : public CheckAndMutateTest,
                                  public ::testing::WithParamInterface<CounterParam> {};

TEST_P(CheckAndMutateCounterTest, ConcurrentIncrementsLoseNoUpdate) {
  const CounterParam p = GetParam();
  const int threads = 8;
  const int per_thread = test::UnderSanitizer() ? 25 : (p.sync ? 60 : 400);
  WriteOptions wo;
  wo.sync = p.sync;
  const RowFilter newest{.columns = {{"a", "n"}}, .max_versions = 1};
  if (p.compare_and_set) Put("counter", "a", "n", 1, "0");
  std::atomic<int> conflicts{0};
  std::atomic<bool> failed{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; t++) {
    workers.emplace_back([&, t] {
      for (int done = 0; done < per_thread && !failed;) {
        auto cells = table_.ReadRow(ReadOptions(), "counter", newest);
        if (!cells.ok()) {
          failed = true;
          return;
        }
        const uint64_t ts = cells->empty() ? 0 : (*cells)[0].timestamp;
        const int value = cells->empty() ? 0 : std::stoi((*cells)[0].value);
        std::vector<Condition> conds;
        RowMutation m;
        if (p.compare_and_set) {
          conds.push_back(Condition::ValueEquals("a", "n", 1, std::to_string(value)));
          m.Put("a", "n", 1, std::to_string(value + 1));
        } else {
          conds.push_back(Condition::NoCellInRange("a", "n", ts + 1, kMaxTimestamp));
          m.Put("a", "n", ts + 1, std::to_string(value + 1));
        }
        // Plain writes to the same row, interleaved.
        m.Put("b", "by" + std::to_string(t), ts + 1, "x");
        auto r = table_.CheckAndMutate(wo, "counter", conds, m);
        if (!r.ok()) {
          failed = true;
          return;
        }
        if (r->applied) {
          done++;
        } else {
          conflicts++;
          if (r->failures.size() != 1 || r->failures[0].cells.empty()) failed = true;
        }
        RowMutation plain;
        plain.Put("c", "t" + std::to_string(t), done + 1, "p");
        if (!table_.Mutate(wo, "counter", plain).ok()) failed = true;
      }
    });
  }
  for (auto& w : workers) w.join();
  ASSERT_FALSE(failed);
  const int total = threads * per_thread;
  auto check = [&] {
    auto cells = table_.ReadRow(ReadOptions(), "counter", newest);
    ASSERT_OK(cells);
    ASSERT_EQ(cells->size(), 1u);
    EXPECT_EQ((*cells)[0].value, std::to_string(total));
    if (!p.compare_and_set) {
      // One version per increment, each one more than the last.
      auto all = table_.ReadRow(ReadOptions(), "counter", RowFilter{.columns = {{"a", "n"}}});
      ASSERT_OK(all);
      ASSERT_EQ(all->size(), static_cast<size_t>(total));
      for (const Cell& c : *all) EXPECT_EQ(c.value, std::to_string(c.timestamp));
    }
  };
  check();
  Reopen();
  check();
  std::printf("%d increments, %d conflicts\n", total, conflicts.load());
}

INSTANTIATE_TEST_SUITE_P(Modes, CheckAndMutateCounterTest,
                         ::testing::Values(CounterParam{true, false}, CounterParam{false, false},
                                           CounterParam{true, true}, CounterParam{false, true}),
                         [](const ::testing::TestParamInfo<CounterParam>& info) {
                           return std::string(info.param.compare_and_set ? "CompareAndSet"
                                                                         : "AppendVersion") +
                                  (info.param.sync ? "Sync" : "NoSync");
                         });

// Crash test: a child process runs batches with sync on from two threads and
// is killed with SIGKILL at a random moment. Each batch writes kBatchRows new
// rows, advances its thread's counter row by compare-and-set and includes one
// entry that always fails; after reopening, every batch the child reported is
// there, and any batch is either whole (its rows and its counter step) or
// absent, never partly applied.
constexpr int kCrashThreads = 2;
constexpr int kBatchRows = 6;

std::string CrashRow(int round, int thread, int batch, int k) {
  return "r" + std::to_string(round) + "-t" + std::to_string(thread) + "-" + std::to_string(batch) +
         "-" + std::to_string(k);
}
std::string CounterRow(int round, int thread) {
  return "ctr-r" + std::to_string(round) + "-t" + std::to_string(thread);
}

[[noreturn]] void RunBatchChild(const std::string& dir, int round, int fd) {
  EngineOptions o;
  o.wal_segment_size = 1 << 20;    // crashes also land on segment switches
  o.write_buffer_size = 64 << 10;  // and on flushes
  auto engine = Engine::Open(dir, o);
  if (!engine.ok()) {
    std::fprintf(stderr, "child open: %s\n", engine.status().ToString().c_str());
    _exit(3);
  }
  auto table = (*engine)->OpenTenant("t")->OpenTable("tab");
  if (!table.ok()) _exit(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < kCrashThreads; t++) {
    threads.emplace_back([&, t] {
      Table tab = *table;
      for (int i = 0;; i++) {
        std::vector<ConditionalMutation> batch;
        const std::string v = "v" + std::to_string(i);
        for (int k = 0; k < kBatchRows; k++) {
          batch.push_back(
              {CrashRow(round, t, i, k),
               {Condition::NoCellInRange("a", "x", 1, kMaxTimestamp)},
               RowMutation().Put("a", "x", 1, v).Put("b", "y", 2, v + std::string(k * 40, 'p'))});
        }
        batch.push_back({"always-locked",
                         {Condition::NoCellInRange("a", "lock", 1, kMaxTimestamp)},
                         RowMutation().Put("a", "x", 1, v)});
        ConditionalMutation counter{CounterRow(round, t), {}, RowMutation()};
        counter.conditions.push_back(i == 0
                                         ? Condition::NoCellInRange("a", "n", 1, kMaxTimestamp)
                                         : Condition::ValueEquals("a", "n", 1, std::to_string(i)));
        counter.mutation.Put("a", "n", 1, std::to_string(i + 1));
        batch.insert(batch.begin() + 2, std::move(counter));
        auto r = tab.CheckAndMutateBatch(WriteOptions(), batch);
        if (!r.ok()) {
          std::fprintf(stderr, "child batch: %s\n", r.status().ToString().c_str());
          _exit(5);
        }
        for (size_t k = 0; k < batch.size(); k++) {
          if ((*r)[k].applied != (batch[k].row != "always-locked")) {
            std::fprintf(stderr, "child batch %d: entry %zu applied=%d\n", i, k, (*r)[k].applied);
            _exit(6);
          }
        }
        char line[64];
        int n = std::snprintf(line, sizeof(line), "%d %d\n", t, i);
        if (write(fd, line, n) != n) _exit(7);
      }
    });
  }
  for (auto& th : threads) th.join();
  _exit(0);
}

TEST(CheckAndMutateCrashTest, SigkillDuringBatchesKeepsEachBatchWhole) {
  ScratchDir dir("cam-crash");
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("STRATA_TEST_SEED=" + std::to_string(seed));
  Random rnd(seed);
  {
    auto engine = Engine::Open(dir.path());
    ASSERT_OK(engine);
    ASSERT_OK((*engine)->CreateTenant("t"));
    ASSERT_OK((*engine)->OpenTenant("t")->CreateTable("tab", TwoGroupSchema()));
    auto table = (*engine)->OpenTenant("t")->OpenTable("tab");
    ASSERT_OK(
        table->Mutate(WriteOptions(), "always-locked", RowMutation().Put("a", "lock", 7, "L")));
  }
  const int rounds = test::LongTests() ? 60 : 6;
  std::vector<std::map<int, int>> acked;  // per round: thread -> highest acknowledged batch
  for (int round = 0; round < rounds; round++) {
    const test::KilledChild killed = test::RunChildUntilKilled(
        [&](int fd) { RunBatchChild(dir.path(), round, fd); }, static_cast<int>(rnd.Uniform(100)));
    ASSERT_TRUE(killed.error.empty()) << "round " << round << ": " << killed.error;
    const std::string& acks = killed.output;
    std::map<int, int> max_acked;
    for (int t = 0; t < kCrashThreads; t++) max_acked[t] = -1;
    for (size_t pos = 0, nl; (nl = acks.find('\n', pos)) != std::string::npos; pos = nl + 1) {
      int t, i;
      ASSERT_EQ(std::sscanf(acks.c_str() + pos, "%d %d", &t, &i), 2);
      max_acked[t] = std::max(max_acked[t], i);
    }
    acked.push_back(max_acked);

    auto engine = Engine::Open(dir.path());
    ASSERT_OK(engine);
    auto table = (*engine)->OpenTenant("t")->OpenTable("tab");
    ASSERT_OK(table);
    for (int r = 0; r <= round; r++) {
      for (int t = 0; t < kCrashThreads; t++) {
        SCOPED_TRACE("round " + std::to_string(r) + " thread " + std::to_string(t) +
                     " after round " + std::to_string(round));
        auto counter = table->ReadRow(ReadOptions(), CounterRow(r, t));
        ASSERT_OK(counter);
        ASSERT_LE(counter->size(), 1u);
        // No counter: the thread's first batch never made it (nor was acknowledged).
        const int batches = counter->empty() ? 0 : std::stoi((*counter)[0].value);
        // Every acknowledged batch, and at most the ones in flight beyond.
        ASSERT_GE(batches, acked[r][t] + 1);
        ASSERT_LE(batches, acked[r][t] + 2);
        for (int i = 0; i <= batches; i++) {
          for (int k = 0; k < kBatchRows; k++) {
            auto cells = table->ReadRow(ReadOptions(), CrashRow(r, t, i, k));
            ASSERT_OK(cells);
            ASSERT_EQ(cells->size(), i < batches ? 2u : 0u)
                << "batch " << i << " row " << k << " with " << batches << " batches counted";
          }
        }
      }
    }
    auto locked = table->ReadRow(ReadOptions(), "always-locked");
    ASSERT_OK(locked);
    EXPECT_EQ(locked->size(), 1u);
    ASSERT_OK((*engine)->Close());
  }
  int total = 0;
  for (const auto& m : acked) {
    for (const auto& [t, i] : m) total += i + 1;
  }
  std::printf("check-and-mutate crash test: %d rounds, %d acknowledged batches checked\n", rounds,
              total);
  EXPECT_GT(total, 0);
}

}  // namespace
}  // namespace strata
