// Engine behaviour through the public API: opening and locking, tenants and
// tables, row mutations and reads with every delete kind and filter, bad
// input, and recovery on reopen.
#include "strata/engine.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/fault_injection_fs.h"
#include "common/file_system.h"
#include "common/random.h"
#include "common/thread_util.h"
#include "engine/test_hooks.h"
#include "engine_test_util.h"
#include "strata/compaction_filter.h"
#include "util/forwarding_fs.h"
#include "util/gated_sync_fs.h"
#include "util/test_util.h"

namespace strata {
namespace {

using test::ScratchDir;

using test::TwoGroupSchema;

class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }

  void Reopen() {
    table_ = Table();
    tenant_ = Tenant();
    if (engine_) {
      ASSERT_TRUE(engine_->Close().ok());
    }
    engine_.reset();
    auto e = Engine::Open(dir_.path(), options_);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(e.value());
    if (engine_->ListTenants()->empty()) {
      ASSERT_TRUE(engine_->CreateTenant("t1").ok());
      auto t = engine_->OpenTenant("t1");
      ASSERT_TRUE(t.ok());
      ASSERT_TRUE(t->CreateTable("tab", TwoGroupSchema()).ok());
    }
    auto t = engine_->OpenTenant("t1");
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    tenant_ = *t;
    auto tab = tenant_.OpenTable("tab");
    ASSERT_TRUE(tab.ok()) << tab.status().ToString();
    table_ = *tab;
  }

  Status Put(const std::string& row, const std::string& fam, const std::string& q, uint64_t ts,
             const std::string& v) {
    RowMutation m;
    m.Put(fam, q, ts, v);
    return table_.Mutate(WriteOptions(), row, m);
  }

  // Drops the handles, closes the engine and returns what Close said.
  Status CloseEngine() {
    table_ = Table();
    tenant_ = Tenant();
    Status s = engine_->Close();
    engine_.reset();
    return s;
  }

  // Reopens with apply_before_sync over `fs`, writes a:x at 1 = "old" to
  // row "a-other" (and to "r" when `r_old`), holds fs's fdatasyncs and starts
  // a thread that writes a:x at 2 = "new" to row "r" (its Mutate's status
  // goes to `check`); returns once that write is applied and its fdatasync
  // waits.
  std::thread StartHeldSyncedWrite(test::GatedSyncFileSystem* fs, bool r_old,
                                   std::function<void(const Status&)> check) {
    options_.file_system = fs;
    options_.apply_before_sync = true;
    Reopen();
    EXPECT_TRUE(Put("a-other", "a", "x", 1, "old").ok());
    if (r_old) {
      EXPECT_TRUE(Put("r", "a", "x", 1, "old").ok());
    }
    fs->Hold();
    std::thread writer([this, check = std::move(check)] {
      RowMutation m;
      m.Put("a", "x", 2, "new");
      check(table_.Mutate(WriteOptions(), "r", m));
    });
    fs->AwaitGatedSyncs(1);
    return writer;
  }

  // The rows of a whole-table scan, and its status in *status.
  std::vector<std::string> ScanRows(Status* status) {
    std::vector<std::string> rows;
    auto it = table_.Scan(ReadOptions(), ScanSpec());
    if (!it.ok()) {
      *status = it.status();
      return rows;
    }
    for (; (*it)->Valid(); (*it)->Next()) rows.emplace_back((*it)->row());
    *status = (*it)->status();
    return rows;
  }

  std::vector<Cell> Read(const std::string& row, const RowFilter& f = RowFilter()) {
    auto r = table_.ReadRow(ReadOptions(), row, f);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : std::vector<Cell>();
  }

  ScratchDir dir_{"engine"};
  EngineOptions options_;
  std::unique_ptr<Engine> engine_;
  Tenant tenant_;
  Table table_;
};

TEST_F(EngineTest, PutAndReadVersionsNewestFirst) {
  ASSERT_TRUE(Put("r1", "a", "x", 5, "five").ok());
  ASSERT_TRUE(Put("r1", "a", "x", 9, "nine").ok());
  ASSERT_TRUE(Put("r1", "a", "x", 7, "seven").ok());
  auto cells = Read("r1");
  ASSERT_EQ(cells.size(), 3u);
  EXPECT_EQ(cells[0], (Cell{"a", "x", 9, "nine"}));
  EXPECT_EQ(cells[1], (Cell{"a", "x", 7, "seven"}));
  EXPECT_EQ(cells[2], (Cell{"a", "x", 5, "five"}));
  EXPECT_TRUE(Read("r0").empty());
  EXPECT_TRUE(Read("r10").empty());
}

TEST_F(EngineTest, OverwriteSameTimestampKeepsNewest) {
  ASSERT_TRUE(Put("r", "a", "x", 5, "old").ok());
  ASSERT_TRUE(Put("r", "a", "x", 5, "new").ok());
  auto cells = Read("r");
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].value, "new");
}

TEST_F(EngineTest, CellsOrderedByFamilyAcrossGroups) {
  RowMutation m;
  m.Put("c", "q", 1, "c1").Put("b", "q", 1, "b1").Put("a", "z", 1, "az").Put("a", "b", 1, "ab");
  ASSERT_TRUE(table_.Mutate(WriteOptions(), "row", m).ok());
  auto cells = Read("row");
  ASSERT_EQ(cells.size(), 4u);
  EXPECT_EQ(cells[0].family + cells[0].qualifier, "ab");
  EXPECT_EQ(cells[1].family + cells[1].qualifier, "az");
  EXPECT_EQ(cells[2].family + cells[2].qualifier, "bq");
  EXPECT_EQ(cells[3].family + cells[3].qualifier, "cq");
}

TEST_F(EngineTest, DeleteCellHidesOneVersion) {
  ASSERT_TRUE(Put("r", "a", "x", 1, "v1").ok());
  ASSERT_TRUE(Put("r", "a", "x", 2, "v2").ok());
  RowMutation m;
  m.DeleteCell("a", "x", 2);
  ASSERT_TRUE(table_.Mutate(WriteOptions(), "r", m).ok());
  auto cells = Read("r");
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].value, "v1");
  // A later put at the deleted timestamp is visible again.
  ASSERT_TRUE(Put("r", "a", "x", 2, "v2b").ok());
  cells = Read("r");
  ASSERT_EQ(cells.size(), 2u);
  EXPECT_EQ(cells[0].value, "v2b");
}

TEST_F(EngineTest, DeleteColumnHidesVersionsUpToTimestamp) {
  for (uint64_t ts = 1; ts <= 5; ts++) ASSERT_TRUE(Put("r", "a", "x", ts, "v").ok());
  ASSERT_TRUE(Put("r", "a", "y", 1, "other").ok());
  RowMutation m;
  m.DeleteColumn("a", "x", 3);
  ASSERT_TRUE(table_.Mutate(WriteOptions(), "r", m).ok());
  auto cells = Read("r");
  ASSERT_EQ(cells.size(), 3u);
  EXPECT_EQ(cells[0].timestamp, 5u);
  EXPECT_EQ(cells[1].timestamp, 4u);
  EXPECT_EQ(cells[2].qualifier, "y");
  // Written after the delete: visible even below its timestamp.
  ASSERT_TRUE(Put("r", "a", "x", 2, "late").ok());
  cells = Read("r", RowFilter{.columns = {{"a", "x"}}});
  ASSERT_EQ(cells.size(), 3u);
  EXPECT_EQ(cells[2], (Cell{"a", "x", 2, "late"}));
}

TEST_F(EngineTest, DeleteRowHidesEveryGroup) {
  RowMutation m;
  m.Put("a", "x", 5, "a5").Put("b", "y", 5, "b5").Put("c", "z", 9, "c9");
  ASSERT_TRUE(table_.Mutate(WriteOptions(), "r", m).ok());
  RowMutation d;
  d.DeleteRow(6);
  ASSERT_TRUE(table_.Mutate(WriteOptions(), "r", d).ok());
  auto cells = Read("r");
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0], (Cell{"c", "z", 9, "c9"}));
  RowMutation all;
  all.DeleteRow();
  ASSERT_TRUE(table_.Mutate(WriteOptions(), "r", all).ok());
  EXPECT_TRUE(Read("r").empty());
  ASSERT_TRUE(Put("r", "b", "y", 1, "again").ok());
  EXPECT_EQ(Read("r").size(), 1u);
}

TEST_F(EngineTest, EntriesOfOneMutationApplyInOrder) {
  ASSERT_TRUE(Put("r", "a", "x", 1, "before").ok());
  RowMutation m;
  m.DeleteColumn("a", "x").Put("a", "x", 1, "after");
  ASSERT_TRUE(table_.Mutate(WriteOptions(), "r", m).ok());
  auto cells = Read("r");
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].value, "after");
  RowMutation m2;
  m2.Put("a", "x", 1, "lost").DeleteColumn("a", "x");
  ASSERT_TRUE(table_.Mutate(WriteOptions(), "r", m2).ok());
  EXPECT_TRUE(Read("r").empty());
}

TEST_F(EngineTest, FiltersSelectFamiliesColumnsTimesAndVersions) {
  RowMutation m;
  for (uint64_t ts = 1; ts <= 4; ts++) {
    m.Put("a", "x", ts, "ax" + std::to_string(ts));
    m.Put("b", "y", ts, "by" + std::to_string(ts));
    m.Put("c", "z", ts, "cz" + std::to_string(ts));
  }
  ASSERT_TRUE(table_.Mutate(WriteOptions(), "r", m).ok());
  EXPECT_EQ(Read("r").size(), 12u);
  EXPECT_EQ(Read("r", RowFilter{.families = {"b"}}).size(), 4u);
  auto cols = Read("r", RowFilter{.families = {"c"}, .columns = {{"a", "x"}}});
  ASSERT_EQ(cols.size(), 8u);
  EXPECT_EQ(cols[0].family, "a");
  EXPECT_EQ(cols[4].family, "c");
  auto range = Read("r", RowFilter{.families = {"a"}, .min_timestamp = 2, .max_timestamp = 3});
  ASSERT_EQ(range.size(), 2u);
  EXPECT_EQ(range[0].timestamp, 3u);
  EXPECT_EQ(range[1].timestamp, 2u);
  auto newest = Read("r", RowFilter{.max_versions = 1});
  ASSERT_EQ(newest.size(), 3u);
  for (const auto& c : newest) EXPECT_EQ(c.timestamp, 4u);
  auto r = table_.ReadRow(ReadOptions(), "r", RowFilter{.families = {"nope"}});
  EXPECT_TRUE(r.status().IsInvalidArgument()) << r.status().ToString();
  r = table_.ReadRow(ReadOptions(), "r", RowFilter{.min_timestamp = 5, .max_timestamp = 4});
  EXPECT_TRUE(r.status().IsInvalidArgument());
}

// Many single columns in one filter, in any order, repeated, overlapping a
// family asked for whole, with binary qualifiers that sort next to each
// other, over a row in the memtable and two files: the cells are the whole
// row's cells of those columns, each once.
TEST_F(EngineTest, ManyColumnsInAnyOrderWithRepeatsReadEachOnce) {
  const std::vector<std::string> qualifiers = {
      "", std::string(1, '\0'), "x", std::string("x\0", 2), std::string("x\0y", 3), "x\xff", "xy",
      "y"};
  for (int layer = 0; layer < 3; layer++) {
    RowMutation m;
    for (const std::string fam : {"a", "b", "c"}) {
      for (size_t i = 0; i < qualifiers.size(); i++) {
        if ((i + layer) % 3 == 0) continue;
        m.Put(fam, qualifiers[i], 10 + layer,
              fam + std::to_string(i) + "@" + std::to_string(layer));
      }
    }
    if (layer == 1) m.DeleteColumn("b", "x", 11);
    ASSERT_TRUE(table_.Mutate(WriteOptions(), "r", m).ok());
    if (layer < 2) {
      ASSERT_TRUE(engine_->Flush().ok());
    }
  }
  const std::vector<Cell> whole = Read("r");
  ASSERT_GT(whole.size(), 30u);
  Random rnd(test::TestSeed());
  for (int round = 0; round < 50; round++) {
    RowFilter f;
    std::set<std::pair<std::string, std::string>> wanted;
    const int n = 1 + static_cast<int>(rnd.Uniform(12));
    for (int i = 0; i < n; i++) {
      std::string fam(1, static_cast<char>('a' + rnd.Uniform(3)));
      std::string q = qualifiers[rnd.Uniform(qualifiers.size())];
      f.columns.emplace_back(fam, q);
      wanted.emplace(fam, q);
      if (rnd.OneIn(3)) f.columns.emplace_back(fam, q);  // a repeat
    }
    std::string whole_family;
    if (rnd.OneIn(3)) {
      whole_family = std::string(1, static_cast<char>('a' + rnd.Uniform(3)));
      f.families.push_back(whole_family);
    }
    if (rnd.OneIn(2)) f.max_versions = 1 + static_cast<uint32_t>(rnd.Uniform(2));
    std::vector<Cell> expected;
    std::map<std::pair<std::string, std::string>, uint32_t> versions;
    for (const Cell& c : whole) {
      if (c.family != whole_family && wanted.count({c.family, c.qualifier}) == 0) continue;
      if (versions[{c.family, c.qualifier}]++ >= f.max_versions) continue;
      expected.push_back(c);
    }
    ASSERT_EQ(Read("r", f), expected) << "round " << round;
  }
}

TEST_F(EngineTest, BinaryKeysAndValues) {
  std::string row("r\0w\xff", 4);
  std::string q("\0\0", 2);
  std::string v("\0value\xff\0", 8);
  ASSERT_TRUE(Put(row, "a", q, 3, v).ok());
  ASSERT_TRUE(Put(std::string("r", 1), "a", q, 3, "short row").ok());
  auto cells = Read(row);
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0], (Cell{"a", q, 3, v}));
  EXPECT_EQ(Read("r").size(), 1u);
  EXPECT_EQ(Read("r")[0].value, "short row");
}

TEST_F(EngineTest, EmptyValueIsAValue) {
  ASSERT_TRUE(Put("r", "a", "", 1, "").ok());
  auto cells = Read("r");
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].value, "");
}

TEST_F(EngineTest, BadInputIsInvalidArgumentAndWritesNothing) {
  options_.max_row_key_size = 32;
  options_.max_qualifier_size = 16;
  options_.max_value_size = 100;
  Reopen();
  const uint64_t before = engine_->GetStats().last_sequence;
  auto expect_bad = [&](const std::string& row, const RowMutation& m, const char* why) {
    Status s = table_.Mutate(WriteOptions(), row, m);
    EXPECT_TRUE(s.IsInvalidArgument()) << why << ": " << s.ToString();
    EXPECT_FALSE(s.message().empty()) << why;
  };
  RowMutation ok;
  ok.Put("a", "q", 1, "v");
  expect_bad("", ok, "empty row");
  expect_bad(std::string(33, 'r'), ok, "row over the limit");
  RowMutation big_q;
  big_q.Put("a", std::string(17, 'q'), 1, "v");
  expect_bad("r", big_q, "qualifier over the limit");
  RowMutation big_v;
  big_v.Put("a", "q", 1, std::string(101, 'v'));
  expect_bad("r", big_v, "value over the limit");
  RowMutation fam;
  fam.Put("a", "q", 1, "v").Put("nope", "q", 1, "v");
  expect_bad("r", fam, "unknown family (second entry: first must not be applied)");
  RowMutation ts0;
  ts0.Put("a", "q", 0, "v");
  expect_bad("r", ts0, "timestamp 0");
  RowMutation tsmax;
  tsmax.Put("a", "q", UINT64_MAX, "v");
  expect_bad("r", tsmax, "timestamp max");
  expect_bad("r", RowMutation(), "empty mutation");
  EXPECT_EQ(engine_->GetStats().last_sequence, before);
  EXPECT_TRUE(Read("r").empty());

  // Exactly at the limits is fine.
  RowMutation edge;
  edge.Put("a", std::string(16, 'q'), kMaxTimestamp, std::string(100, 'v'));
  EXPECT_TRUE(table_.Mutate(WriteOptions(), std::string(32, 'r'), edge).ok());

  // A closed engine refuses everything, through every handle.
  ASSERT_TRUE(engine_->Close().ok());
  Status s = table_.Mutate(WriteOptions(), "r", ok);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.ToString().find("closed"), std::string::npos);
  EXPECT_TRUE(table_.ReadRow(ReadOptions(), "r").status().IsInvalidArgument());
  EXPECT_TRUE(tenant_.CreateTable("x", TwoGroupSchema()).IsInvalidArgument());
  EXPECT_TRUE(engine_->CreateTenant("t2").IsInvalidArgument());
  EXPECT_TRUE(engine_->OpenTenant("t1").status().IsInvalidArgument());
  // Reopen: nothing of the rejected writes appeared.
  Reopen();
  EXPECT_TRUE(Read("r").empty());
}

// A row key of 1 GiB of 0x00 bytes is within max_row_key_size but encodes
// to 2 GiB in a cell key, more than a table block holds: the write is
// refused up front instead of leaving a memtable no flush can write.
TEST_F(EngineTest, CellsTooLargeForATableBlockAreRefused) {
  options_.max_row_key_size = 1u << 30;
  Reopen();
  const uint64_t before = engine_->GetStats().last_sequence;
  const std::string row(size_t{1} << 30, '\0');
  RowMutation m;
  m.DeleteRow();
  Status s = table_.Mutate(WriteOptions(), row, m);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find("does not fit in a table block"), std::string_view::npos);
  EXPECT_EQ(engine_->GetStats().last_sequence, before);
}

TEST_F(EngineTest, EmptyHandlesReturnErrors) {
  Table t;
  EXPECT_TRUE(t.Mutate(WriteOptions(), "r", RowMutation().Put("a", "q", 1, "v")).IsInvalidArgument());
  EXPECT_TRUE(t.ReadRow(ReadOptions(), "r").status().IsInvalidArgument());
  Tenant n;
  EXPECT_TRUE(n.CreateTable("x", TwoGroupSchema()).IsInvalidArgument());
  EXPECT_TRUE(n.OpenTable("x").status().IsInvalidArgument());
}

TEST_F(EngineTest, TenantsAndTablesNamesAndErrors) {
  EXPECT_TRUE(engine_->CreateTenant("t1").IsAlreadyExists());
  EXPECT_TRUE(engine_->CreateTenant("").IsInvalidArgument());
  EXPECT_TRUE(engine_->CreateTenant(std::string(65, 'x')).IsInvalidArgument());
  EXPECT_TRUE(engine_->CreateTenant("bad name").IsInvalidArgument());
  EXPECT_TRUE(engine_->CreateTenant(std::string("nul\0", 4)).IsInvalidArgument());
  EXPECT_TRUE(engine_->CreateTenant(std::string(64, 'x')).ok());
  EXPECT_TRUE(engine_->OpenTenant("missing").status().IsNotFound());

  EXPECT_TRUE(tenant_.CreateTable("tab", TwoGroupSchema()).IsAlreadyExists());
  EXPECT_TRUE(tenant_.OpenTable("missing").status().IsNotFound());
  TableSchema none;
  EXPECT_TRUE(tenant_.CreateTable("t2", none).IsInvalidArgument());
  TableSchema dup;
  dup.families = {{.name = "f"}, {.name = "f"}};
  EXPECT_TRUE(tenant_.CreateTable("t2", dup).IsInvalidArgument());
  TableSchema unknown_group;
  unknown_group.families = {{.name = "f", .locality_group = "nowhere"}};
  EXPECT_TRUE(tenant_.CreateTable("t2", unknown_group).IsInvalidArgument());
  TableSchema bad_family;
  bad_family.families = {{.name = "f:1"}};
  EXPECT_TRUE(tenant_.CreateTable("t2", bad_family).IsInvalidArgument());
  EXPECT_EQ(*tenant_.ListTables(), std::vector<std::string>{"tab"});

  // The same table name in another tenant is another table.
  ASSERT_TRUE(engine_->CreateTenant("t2").ok());
  auto other = engine_->OpenTenant("t2");
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE(other->CreateTable("tab", TwoGroupSchema()).ok());
  auto other_tab = other->OpenTable("tab");
  ASSERT_TRUE(other_tab.ok());
  ASSERT_TRUE(Put("r", "a", "q", 1, "tenant one").ok());
  EXPECT_TRUE(other_tab->ReadRow(ReadOptions(), "r")->empty());

  Reopen();
  EXPECT_EQ(engine_->ListTenants()->size(), 3u);
  other = engine_->OpenTenant("t2");
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(*other->ListTables(), std::vector<std::string>{"tab"});
  EXPECT_EQ(Read("r").size(), 1u);
}

TEST_F(EngineTest, SecondOpenOfTheDirectoryFails) {
  auto second = Engine::Open(dir_.path(), options_);
  ASSERT_FALSE(second.ok());
  EXPECT_TRUE(second.status().IsBusy()) << second.status().ToString();
  EXPECT_NE(second.status().ToString().find(dir_.path()), std::string::npos);
  ASSERT_TRUE(engine_->Close().ok());
  auto third = Engine::Open(dir_.path(), options_);
  EXPECT_TRUE(third.ok()) << third.status().ToString();
}

TEST(EngineOpenTest, CreateIfMissingAndErrorIfExists) {
  ScratchDir dir("open");
  EngineOptions o;
  o.create_if_missing = false;
  auto e = Engine::Open(dir.Join("db"), o);
  EXPECT_TRUE(e.status().IsNotFound()) << e.status().ToString();
  o.create_if_missing = true;
  e = Engine::Open(dir.Join("db"), o);
  ASSERT_TRUE(e.ok());
  ASSERT_TRUE((*e)->Close().ok());
  o.error_if_exists = true;
  EXPECT_TRUE(Engine::Open(dir.Join("db"), o).status().IsAlreadyExists());
}

TEST_F(EngineTest, ReopenRecoversEverything) {
  for (int i = 0; i < 500; i++) {
    RowMutation m;
    m.Put("a", "x", 1 + i % 3, "a" + std::to_string(i));
    m.Put("b", "y", 7, "b" + std::to_string(i));
    if (i % 10 == 0) m.DeleteColumn("a", "x", 1);
    WriteOptions wo;
    wo.sync = i % 2 == 0;
    ASSERT_TRUE(table_.Mutate(wo, "row" + std::to_string(i % 100), m).ok());
  }
  std::map<std::string, std::vector<Cell>> before;
  for (int i = 0; i < 100; i++) before["row" + std::to_string(i)] = Read("row" + std::to_string(i));
  const uint64_t seq = engine_->GetStats().last_sequence;
  Reopen();
  EXPECT_EQ(engine_->GetStats().last_sequence, seq);
  for (const auto& [row, cells] : before) EXPECT_EQ(Read(row), cells) << row;
  // Writes after recovery continue the sequence and survive another reopen.
  ASSERT_TRUE(Put("row0", "a", "new", 1, "after").ok());
  EXPECT_GT(engine_->GetStats().last_sequence, seq);
  Reopen();
  Reopen();
  EXPECT_EQ(Read("row0").size(), before["row0"].size() + 1);
}

TEST_F(EngineTest, ConcurrentWritersAllRecovered) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 300;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; i++) {
        RowMutation m;
        m.Put("a", "x", 1, std::to_string(i)).Put("b", "y", 1, std::to_string(i));
        if (!table_.Mutate(WriteOptions(), "t" + std::to_string(t) + "-" + std::to_string(i), m)
                 .ok()) {
          failures++;
        }
      }
    });
  }
  // A reader running alongside sees each row whole or not at all.
  std::atomic<bool> stop{false};
  std::thread reader([&] {
    Random rnd(1);
    while (!stop.load()) {
      auto cells = table_.ReadRow(ReadOptions(), "t" + std::to_string(rnd.Uniform(kThreads)) + "-" +
                                                     std::to_string(rnd.Uniform(kPerThread)));
      if (!cells.ok() || (cells->size() != 0 && cells->size() != 2)) failures++;
    }
  });
  for (auto& th : threads) th.join();
  stop = true;
  reader.join();
  EXPECT_EQ(failures.load(), 0);
  EngineStats st = engine_->GetStats();
  EXPECT_EQ(st.writes, static_cast<uint64_t>(kThreads * kPerThread));
  EXPECT_LE(st.wal_syncs, st.writes);
  Reopen();
  for (int t = 0; t < kThreads; t++) {
    for (int i = 0; i < kPerThread; i++) {
      auto cells = Read("t" + std::to_string(t) + "-" + std::to_string(i));
      ASSERT_EQ(cells.size(), 2u);
      EXPECT_EQ(cells[0].value, std::to_string(i));
    }
  }
}

// EngineOptions::apply_before_sync: synced and unsynced writers mixed;
// each reads its row back the moment its write returns, and everything is
// there after a reopen.
TEST_F(EngineTest, ApplyBeforeSyncWritersReadTheirWritesAndAllRecover) {
  options_.apply_before_sync = true;
  Reopen();
  constexpr int kThreads = 6;
  constexpr int kPerThread = 200;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; i++) {
        const std::string row = "t" + std::to_string(t) + "-" + std::to_string(i);
        RowMutation m;
        m.Put("a", "x", 1, std::to_string(i)).Put("b", "y", 1, std::to_string(i));
        WriteOptions wo;
        wo.sync = (i + t) % 3 == 0;
        if (!table_.Mutate(wo, row, m).ok()) failures++;
        auto cells = table_.ReadRow(ReadOptions(), row);
        if (!cells.ok() || cells->size() != 2) failures++;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  Reopen();
  for (int t = 0; t < kThreads; t++) {
    for (int i = 0; i < kPerThread; i++) {
      ASSERT_EQ(Read("t" + std::to_string(t) + "-" + std::to_string(i)).size(), 2u);
    }
  }
}

// With apply_before_sync, a synced write is in the memtables while its
// fdatasync runs (held here): a read of its row and a scan over it wait
// until the fdatasync is done and then see it (a CheckAndMutate of the row
// waits too, for the writer's row lock); reads and unsynced writes of other
// rows go on meanwhile.
TEST_F(EngineTest, ApplyBeforeSyncReadsOfAnUndurableWriteWaitForItsSync) {
  test::GatedSyncFileSystem fs;
  std::thread writer =
      StartHeldSyncedWrite(&fs, /*r_old=*/true, [](const Status& s) { EXPECT_TRUE(s.ok()); });
  const uint64_t waits_before = engine_->GetStats().durable_read_waits;

  EXPECT_EQ(Read("a-other").size(), 1u);
  WriteOptions unsynced;
  unsynced.sync = false;
  RowMutation m;
  m.Put("a", "x", 1, "v");
  EXPECT_TRUE(table_.Mutate(unsynced, "z-third", m).ok());
  EXPECT_EQ(Read("z-third").size(), 1u);
  EXPECT_EQ(engine_->GetStats().durable_read_waits, waits_before);

  std::atomic<int> done{0};
  std::vector<std::thread> readers;
  readers.emplace_back([&] {
    auto cells = table_.ReadRow(ReadOptions(), "r");
    EXPECT_TRUE(cells.ok()) << cells.status().ToString();
    if (cells.ok()) {
      EXPECT_EQ(cells->size(), 2u);
    }
    done++;
  });
  readers.emplace_back([&] {
    Status scan;
    EXPECT_EQ(ScanRows(&scan), (std::vector<std::string>{"a-other", "r", "z-third"}));
    EXPECT_TRUE(scan.ok()) << scan.ToString();
    done++;
  });
  readers.emplace_back([&] {
    WriteOptions wo;
    wo.sync = false;
    RowMutation put;
    put.Put("a", "y", 1, "checked");
    auto r = table_.CheckAndMutate(wo, "r", {Condition::ValueEquals("a", "x", 2, "new")}, put);
    EXPECT_TRUE(r.ok() && r->applied);
    done++;
  });
  // The read and the scan count their wait before they block.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (engine_->GetStats().durable_read_waits < waits_before + 2 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(done.load(), 0) << "a read handed out a write whose fdatasync is held";
  fs.Permit(1 << 20);
  for (auto& t : readers) t.join();
  writer.join();
  EXPECT_EQ(done.load(), 3);
  EXPECT_GE(engine_->GetStats().durable_read_waits, waits_before + 2);
  EXPECT_EQ(Read("r").size(), 3u);
  ASSERT_TRUE(CloseEngine().ok());
}

// When the held fdatasync fails, the reads that met its write get the log's
// error (ReadRow, a scan, a read session, CheckAndMutate's conditions);
// other rows stay readable.
TEST_F(EngineTest, ApplyBeforeSyncReadsOfAWriteWhoseSyncFailedGetTheError) {
  test::GatedSyncFileSystem fs;
  std::thread writer = StartHeldSyncedWrite(&fs, /*r_old=*/false,
                                            [](const Status& s) { EXPECT_TRUE(s.IsIOError()); });
  Status read;
  std::thread reader([&] { read = table_.ReadRow(ReadOptions(), "r").status(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  fs.FailNextPermitted();
  fs.Permit(1 << 20);
  reader.join();
  writer.join();
  EXPECT_TRUE(read.IsIOError()) << read.ToString();
  EXPECT_TRUE(table_.ReadRow(ReadOptions(), "r").status().IsIOError());
  {
    Status scan;
    EXPECT_EQ(ScanRows(&scan), std::vector<std::string>{"a-other"});
    EXPECT_TRUE(scan.IsIOError()) << scan.ToString();
  }
  {
    auto session = table_.NewReadSession(ReadSessionOptions());
    ASSERT_TRUE(session.ok());
    EXPECT_TRUE((*session)->Get("r", "a", "x").status().IsIOError());
    EXPECT_TRUE((*session)->Get("a-other", "a", "x").ok());
  }
  {
    WriteOptions unsynced;
    unsynced.sync = false;
    auto checked = table_.CheckAndMutate(
        unsynced, "r", {Condition::ValueEquals("a", "x", 2, "new")}, RowMutation());
    EXPECT_TRUE(checked.status().IsIOError()) << checked.status().ToString();
  }
  EXPECT_EQ(Read("a-other").size(), 1u);
  EXPECT_FALSE(CloseEngine().ok());
}

TEST_F(EngineTest, FallbackWriterWorksAndIsChosenByOption) {
  options_.use_io_uring = false;
  Reopen();
  EXPECT_FALSE(engine_->GetStats().wal_uses_io_uring);
  ASSERT_TRUE(Put("r", "a", "x", 1, "v").ok());
  options_.use_io_uring = true;
  Reopen();
  EXPECT_EQ(Read("r").size(), 1u);
}

}  // namespace
}  // namespace strata

namespace strata {
namespace {

TEST_F(EngineTest, FlushWritesTablesReleasesLogAndSurvivesReopen) {
  options_.write_buffer_size = 64 << 10;
  options_.wal_segment_size = 64 << 10;
  Reopen();
  for (int i = 0; i < 3000; i++) {
    RowMutation m;
    m.Put("a", "x", 1, std::string(40, 'a') + std::to_string(i));
    m.Put("b", "y", 2, std::string(40, 'b') + std::to_string(i));
    ASSERT_TRUE(table_.Mutate(WriteOptions(), "row" + std::to_string(i), m).ok());
  }
  // Deletes that land in memtables must hide versions already in SSTables.
  EXPECT_GT(engine_->GetStats().flushes, 0u);
  RowMutation del;
  del.DeleteColumn("a", "x");
  ASSERT_TRUE(table_.Mutate(WriteOptions(), "row7", del).ok());
  RowMutation delrow;
  delrow.DeleteRow();
  ASSERT_TRUE(table_.Mutate(WriteOptions(), "row8", delrow).ok());
  ASSERT_TRUE(engine_->Flush().ok());
  EngineStats st = engine_->GetStats();
  EXPECT_GT(st.table_files, 1u);
  EXPECT_GT(st.table_bytes, 0u);
  // Flushed data no longer needs the log: at most the current segment and
  // spares hold records.
  std::vector<std::string> logs;
  ASSERT_TRUE(FileSystem::Default()->GetChildren(dir_.Join("wal"), &logs).ok());
  size_t segments = 0;
  for (const auto& n : logs) segments += n.size() > 4 && n.substr(n.size() - 4) == ".log";
  EXPECT_LE(segments, 2u);

  auto check = [&] {
    for (int i = 0; i < 3000; i++) {
      auto cells = Read("row" + std::to_string(i));
      if (i == 7) {
        ASSERT_EQ(cells.size(), 1u);
        EXPECT_EQ(cells[0].family, "b");
      } else if (i == 8) {
        EXPECT_TRUE(cells.empty());
      } else {
        ASSERT_EQ(cells.size(), 2u) << i;
        EXPECT_EQ(cells[0].value, std::string(40, 'a') + std::to_string(i));
      }
    }
  };
  check();
  Reopen();
  check();
  // Writes after a reopen of a fully flushed engine continue the sequence.
  const uint64_t seq = engine_->GetStats().last_sequence;
  ASSERT_TRUE(Put("row0", "a", "x", 3, "newer").ok());
  EXPECT_EQ(engine_->GetStats().last_sequence, seq + 1);
  Reopen();
  EXPECT_EQ(Read("row0")[0].value, "newer");
}

// Puts f:q@1 = `prefix` + i in rows r0 .. r<n-1>.
void PutNumberedRows(Table& table, int n, const std::string& prefix) {
  for (int i = 0; i < n; i++) {
    RowMutation m;
    m.Put("f", "q", 1, prefix + std::to_string(i));
    ASSERT_TRUE(table.Mutate(WriteOptions(), "r" + std::to_string(i), m).ok());
  }
}

// Flips a byte of `needle` in every log segment under `dir` that holds it;
// false when none does.
bool DamageLogAt(const ScratchDir& dir, const std::string& needle) {
  bool damaged = false;
  for (const auto& entry : std::filesystem::directory_iterator(dir.Join("wal"))) {
    if (entry.path().extension() != ".log") continue;
    std::string bytes = test::ReadAll(entry.path().string());
    const size_t at = bytes.find(needle);
    if (at == std::string::npos) continue;
    bytes[at] ^= 0x55;
    test::WriteAll(entry.path().string(), bytes);
    damaged = true;
  }
  return damaged;
}

// Point-in-time recovery may cut the log below sequences that flushes
// already recorded. Writes after the open must still get sequence numbers
// above those: a lower one would be shadowed by the flushed version of its
// cell, and skipped by the next replay as already flushed.
TEST(EngineRecoveryTest, PointInTimeCutBelowFlushedDataKeepsSequencesAbove) {
  ScratchDir dir("pit");
  EngineOptions options;
  options.wal_recovery_mode = WalRecoveryMode::kPointInTime;
  uint64_t flushed_sequence = 0;
  {
    auto engine = Engine::Open(dir.path(), options);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    Table table = test::CreateOneFamilyTable(engine->get());
    PutNumberedRows(table, 10, "old-value-");
    ASSERT_TRUE((*engine)->Flush().ok());
    flushed_sequence = (*engine)->GetStats().last_sequence;
    ASSERT_TRUE((*engine)->Close().ok());
  }
  // Damage the fourth record: the log's current segment still holds them all.
  ASSERT_TRUE(DamageLogAt(dir, "old-value-3"));

  auto check = [&](const char* when) {
    auto engine = Engine::Open(dir.path(), options);
    ASSERT_TRUE(engine.ok()) << when << ": " << engine.status().ToString();
    Table table = *(*engine)->OpenTenant("t")->OpenTable("tab");
    EXPECT_GE((*engine)->GetStats().last_sequence, flushed_sequence) << when;
    if (std::string(when) == "after the cut") {
      RowMutation m;
      m.Put("f", "q", 1, "new");
      ASSERT_TRUE(table.Mutate(WriteOptions(), "r5", m).ok());
    }
    auto cells = table.ReadRow(ReadOptions(), "r5");
    ASSERT_TRUE(cells.ok()) << cells.status().ToString();
    ASSERT_EQ(cells->size(), 1u) << when;
    EXPECT_EQ((*cells)[0].value, "new") << when;
    cells = table.ReadRow(ReadOptions(), "r9");  // flushed: the cut loses nothing of it
    ASSERT_TRUE(cells.ok() && cells->size() == 1) << when;
    EXPECT_EQ((*cells)[0].value, "old-value-9") << when;
    ASSERT_TRUE((*engine)->Close().ok());
  };
  check("after the cut");
  check("after a reopen");
}

// A log segment that went missing is Corruption, not a silent loss of the
// writes in it: the oldest (the log must reach back to sequence 1 when no
// flush set a floor), the newest (the manifest names the segment its writer
// started last), or all of them. A point-in-time recovery takes what is left.
TEST(EngineRecoveryTest, MissingLogSegmentsAreCorruptionNotLoss) {
  namespace fs = std::filesystem;
  ScratchDir dir("missing-segment");
  EngineOptions options;
  options.wal_segment_size = 64 << 10;  // several segments, nothing flushed
  constexpr int kRows = 2000;
  {
    auto engine = Engine::Open(dir.path(), options);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    Table table = test::CreateOneFamilyTable(engine->get());
    for (int i = 0; i < kRows; i++) {
      RowMutation m;
      m.Put("f", "q", 1, std::string(100, 'v'));
      ASSERT_TRUE(table.Mutate(WriteOptions(), "r" + std::to_string(i), m).ok());
    }
    ASSERT_EQ((*engine)->GetStats().table_files, 0u);
    ASSERT_TRUE((*engine)->Close().ok());
  }
  std::vector<fs::path> segments;
  for (const auto& e : fs::directory_iterator(dir.Join("wal"))) {
    if (e.path().extension() == ".log") segments.push_back(e.path());
  }
  std::sort(segments.begin(), segments.end());
  ASSERT_GE(segments.size(), 3u);

  // Opens a copy of the engine without the segments `drop` picks; returns
  // the open's status and, when it opened, how many rows it found.
  auto open_without = [&](const std::function<bool(size_t)>& drop, WalRecoveryMode mode,
                          int* rows) {
    const std::string copy = dir.path() + "-copy";
    fs::remove_all(copy);
    fs::copy(dir.path(), copy, fs::copy_options::recursive);
    for (size_t i = 0; i < segments.size(); i++) {
      if (drop(i)) fs::remove(fs::path(copy) / "wal" / segments[i].filename());
    }
    EngineOptions o = options;
    o.wal_recovery_mode = mode;
    auto engine = Engine::Open(copy, o);
    if (!engine.ok()) return engine.status();
    Table table = *(*engine)->OpenTenant("t")->OpenTable("tab");
    *rows = 0;
    for (int i = 0; i < kRows; i++) {
      auto cells = table.ReadRow(ReadOptions(), "r" + std::to_string(i));
      if (cells.ok() && !cells->empty()) ++*rows;
    }
    return (*engine)->Close();
  };
  const size_t n = segments.size();
  int rows = -1;
  Status s = open_without([](size_t) { return false; }, WalRecoveryMode::kTolerateTornTail, &rows);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(rows, kRows);
  for (WalRecoveryMode mode :
       {WalRecoveryMode::kTolerateTornTail, WalRecoveryMode::kAbsoluteConsistency}) {
    s = open_without([](size_t i) { return i == 0; }, mode, &rows);
    EXPECT_TRUE(s.IsCorruption()) << "oldest: " << s.ToString();
    s = open_without([n](size_t i) { return i == n - 1; }, mode, &rows);
    EXPECT_TRUE(s.IsCorruption()) << "newest: " << s.ToString();
    EXPECT_NE(s.ToString().find(segments[n - 1].filename().string()), std::string::npos)
        << s.ToString();
    s = open_without([](size_t) { return true; }, mode, &rows);
    EXPECT_TRUE(s.IsCorruption()) << "all: " << s.ToString();
  }
  // A newest segment cut to nothing (its header gone) is no crash's doing
  // either: the writer made the header durable before naming the segment.
  {
    const std::string copy = dir.path() + "-copy";
    fs::remove_all(copy);
    fs::copy(dir.path(), copy, fs::copy_options::recursive);
    fs::resize_file(fs::path(copy) / "wal" / segments[n - 1].filename(), 0);
    auto engine = Engine::Open(copy, options);
    ASSERT_FALSE(engine.ok());
    EXPECT_TRUE(engine.status().IsCorruption()) << engine.status().ToString();
    EXPECT_NE(engine.status().ToString().find("no valid segment header"), std::string::npos)
        << engine.status().ToString();
  }
  // Point in time: the rows of the segments left, and the copy opens again
  // in the default mode afterwards (its manifest names the new segment).
  s = open_without([n](size_t i) { return i == n - 1; }, WalRecoveryMode::kPointInTime, &rows);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_GT(rows, 0);
  EXPECT_LT(rows, kRows);
  auto again = Engine::Open(dir.path() + "-copy", options);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  ASSERT_TRUE((*again)->Close().ok());
  fs::remove_all(dir.path() + "-copy");
}

// A point-in-time recovery that drops every record of the log leaves a log
// that starts above what the manifest last said recovery needs (here a
// schema change recorded its sequence before any flush): the open records
// the new floor, so that later opens, in any mode, do not ask for the
// records given up.
TEST(EngineRecoveryTest, PointInTimeRecoveryOfNothingLeavesAnOpenableEngine) {
  ScratchDir dir("pit-nothing");
  EngineOptions options;
  {
    auto engine = Engine::Open(dir.path(), options);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    Table table = test::CreateOneFamilyTable(engine->get());
    PutNumberedRows(table, 5, "first-value-");
    TableSchema altered;
    altered.families = {{.name = "f"}, {.name = "g"}};
    ASSERT_TRUE((*engine)->OpenTenant("t")->AlterTable("tab", altered).ok());
    ASSERT_TRUE((*engine)->Close().ok());
  }
  // Damage the first record: point in time drops it and all after it.
  ASSERT_TRUE(DamageLogAt(dir, "first-value-0"));
  EngineOptions pit = options;
  pit.wal_recovery_mode = WalRecoveryMode::kPointInTime;
  {
    auto engine = Engine::Open(dir.path(), pit);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    Table table = *(*engine)->OpenTenant("t")->OpenTable("tab");
    EXPECT_TRUE(table.ReadRow(ReadOptions(), "r0")->empty());
    RowMutation m;
    m.Put("f", "q", 2, "after");
    ASSERT_TRUE(table.Mutate(WriteOptions(), "r9", m).ok());
    ASSERT_TRUE((*engine)->Close().ok());
  }
  for (const EngineOptions& o : {options, pit}) {
    auto engine = Engine::Open(dir.path(), o);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    Table table = *(*engine)->OpenTenant("t")->OpenTable("tab");
    auto cells = table.ReadRow(ReadOptions(), "r9");
    ASSERT_TRUE(cells.ok() && cells->size() == 1) << cells.status().ToString();
    EXPECT_EQ((*cells)[0].value, "after");
    ASSERT_TRUE((*engine)->Close().ok());
  }
}

// Nice value and scheduling policy of each thread of this process, by name.
struct ThreadSched {
  int nice;
  int policy;
  bool operator==(const ThreadSched&) const = default;
};
std::map<std::string, std::vector<ThreadSched>> ThreadsByName() {
  std::map<std::string, std::vector<ThreadSched>> by_name;
  std::vector<std::string> tids;
  EXPECT_TRUE(FileSystem::Default()->GetChildren("/proc/self/task", &tids).ok());
  for (const std::string& tid : tids) {
    std::string comm;
    if (!ReadFileToString(FileSystem::Default(), "/proc/self/task/" + tid + "/comm", &comm).ok()) {
      continue;  // the thread ended
    }
    while (!comm.empty() && comm.back() == '\n') comm.pop_back();
    const int id = std::stoi(tid);
    by_name[comm].push_back({getpriority(PRIO_PROCESS, static_cast<id_t>(id)),
                             sched_getscheduler(static_cast<pid_t>(id))});
  }
  return by_name;
}

// The background threads carry names; background_nice sets their nice value
// and background_sched_batch (on by default) their policy. Off, they keep
// what they inherit from the thread that opened the engine. A nice value
// outside 0..19 is refused.
TEST(EngineThreadsTest, BackgroundThreadsAreNamedNicedAndBatchScheduled) {
  ScratchDir dir("threads");
  const int caller_policy = sched_getscheduler(0);
  const int caller_nice = getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)));
  // Whether a thread may move to SCHED_BATCH here (some sandboxes refuse,
  // and a caller under another policy keeps it).
  bool batch_allowed = false;
  std::thread([&] { batch_allowed = SetCurrentThreadBatchScheduling().ok(); }).join();
  for (const bool on : {true, false}) {
    SCOPED_TRACE(on ? "on" : "off");
    EngineOptions options;
    options.background_nice = on ? 19 : 0;
    options.background_sched_batch = on;
    options.max_background_compactions = 2;
    auto engine = Engine::Open(dir.path(), options);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    const ThreadSched want{on ? 19 : caller_nice,
                           on && batch_allowed ? SCHED_BATCH : caller_policy};
    const std::map<std::string, size_t> threads = {
        {"strata-flush", 1}, {"strata-compact", 2}, {"strata-split", 1}};
    // The threads set their name, nice value and policy as they start.
    std::map<std::string, std::vector<ThreadSched>> by_name;
    for (int attempt = 0; attempt < 500; attempt++) {
      by_name = ThreadsByName();
      bool all = true;
      for (const auto& [name, count] : threads) {
        all = all && by_name[name] == std::vector<ThreadSched>(count, want);
      }
      if (all) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    for (const auto& [name, count] : threads) {
      SCOPED_TRACE(name);
      ASSERT_EQ(by_name[name].size(), count);
      for (const ThreadSched& t : by_name[name]) {
        EXPECT_EQ(t.nice, want.nice);
        EXPECT_EQ(t.policy, want.policy);
      }
    }
    // The caller's own thread is left as it was.
    EXPECT_EQ(sched_getscheduler(0), caller_policy);
    ASSERT_TRUE((*engine)->Close().ok());
  }

  EngineOptions options;
  for (int bad : {-1, 20}) {
    options.background_nice = bad;
    EXPECT_TRUE(Engine::Open(dir.path(), options).status().IsInvalidArgument()) << bad;
  }
}

// A point read takes its groups' views, then its snapshot. A memtable
// switch of one group in between, followed by a row mutation over both
// groups, must not leave the read with that mutation's cells in one group
// and not the other: the read takes its views again.
std::atomic<bool> g_read_in_hook{false};
std::atomic<bool> g_release_read{false};
void StopReadAfterViews() {
  engine::test_hooks::after_row_read_views.store(nullptr);  // the retry runs on
  g_read_in_hook = true;
  while (!g_release_read) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void StopScanAfterViews() {
  engine::test_hooks::after_scan_views.store(nullptr);
  g_read_in_hook = true;
  while (!g_release_read) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

class EngineSwitchTest : public EngineTest, public ::testing::WithParamInterface<bool> {};

TEST_P(EngineSwitchTest, ReadSeesARowMutationWholeAcrossAMemtableSwitch) {
  const bool scan = GetParam();
  ASSERT_TRUE(tenant_.CreateTable("two", TwoGroupSchema()).ok());
  Table t = *tenant_.OpenTable("two");
  auto put = [&](std::vector<std::string> families, const std::string& value) {
    RowMutation m;
    for (const std::string& f : families) m.Put(f, "q", 1, value);
    ASSERT_TRUE(t.Mutate(WriteOptions(), "r", m).ok());
  };
  put({"a", "b"}, "v1");
  ASSERT_TRUE(engine_->Flush().ok());
  g_read_in_hook = false;
  g_release_read = false;
  if (scan) {
    engine::test_hooks::after_scan_views.store(&StopScanAfterViews);
  } else {
    engine::test_hooks::after_row_read_views.store(&StopReadAfterViews);
  }
  std::map<std::string, std::string> seen;
  std::thread reader([&] {
    if (scan) {
      Result<std::unique_ptr<RowIterator>> it = t.Scan(ReadOptions(), ScanSpec());
      ASSERT_TRUE(it.ok()) << it.status().ToString();
      ASSERT_TRUE((*it)->Valid());
      for (const Cell& c : (*it)->cells()) seen[c.family] = c.value;
      return;
    }
    Result<std::vector<Cell>> cells = t.ReadRow(ReadOptions(), "r", RowFilter());
    ASSERT_TRUE(cells.ok()) << cells.status().ToString();
    for (const Cell& c : *cells) seen[c.family] = c.value;
  });
  while (!g_read_in_hook) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  put({"a"}, "x");
  ASSERT_TRUE(engine_->Flush().ok());  // switches group "small" only: "big" is empty
  put({"a", "b"}, "v2");
  g_release_read = true;
  reader.join();
  engine::test_hooks::after_row_read_views.store(nullptr);
  engine::test_hooks::after_scan_views.store(nullptr);
  EXPECT_EQ(seen["a"], "v2");
  EXPECT_EQ(seen["b"], "v2");
}
INSTANTIATE_TEST_SUITE_P(ReadAndScan, EngineSwitchTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? "Scan" : "ReadRow";
                         });

// Memtables switching without end do not keep a read retrying: after a few
// stale attempts it takes its views and snapshot with switches held off.
std::atomic<int> g_view_attempts{0};
std::atomic<uint64_t> g_flushes_seen{0};
Engine* g_engine = nullptr;
void WaitForASwitch() {
  g_view_attempts++;
  // Until a flush (a switch) happens, or 100 ms: none can while the read
  // holds switches off.
  const uint64_t before = g_flushes_seen.load();
  for (int i = 0; i < 100 && g_engine->GetStats().flushes <= before; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  g_flushes_seen = g_engine->GetStats().flushes;
}

TEST_F(EngineTest, ReadRetriesAreBoundedWhileMemtablesKeepSwitching) {
  ASSERT_TRUE(tenant_.CreateTable("two", TwoGroupSchema()).ok());
  Table t = *tenant_.OpenTable("two");
  RowMutation m;
  m.Put("a", "q", 1, "v").Put("b", "q", 1, "v");
  ASSERT_TRUE(t.Mutate(WriteOptions(), "r", m).ok());
  std::atomic<bool> stop{false};
  std::thread switcher([&] {
    RowMutation a;
    a.Put("a", "q", 2, "w");
    while (!stop) {
      ASSERT_TRUE(t.Mutate(WriteOptions(), "s", a).ok());
      ASSERT_TRUE(engine_->Flush().ok());
    }
  });
  g_engine = engine_.get();
  g_view_attempts = 0;
  g_flushes_seen = engine_->GetStats().flushes;
  engine::test_hooks::after_row_read_views.store(&WaitForASwitch);
  Result<std::vector<Cell>> cells = t.ReadRow(ReadOptions(), "r", RowFilter());
  engine::test_hooks::after_row_read_views.store(nullptr);
  stop = true;
  switcher.join();
  ASSERT_TRUE(cells.ok()) << cells.status().ToString();
  EXPECT_EQ(cells->size(), 2u);
  EXPECT_LE(g_view_attempts.load(), 5);
}

// A group with a write buffer size of its own flushes at that size while
// the others wait for the engine's; AlterTable sets and clears it, and the
// schema keeps it across a reopen.
TEST_F(EngineTest, GroupWriteBufferSizeFlushesThatGroupOnly) {
  options_.write_buffer_size = 8 << 20;
  Reopen();
  TableSchema schema = TwoGroupSchema();
  schema.locality_groups[0].write_buffer_size = 16 << 10;  // "small", families a and c
  ASSERT_TRUE(tenant_.CreateTable("own", schema).ok());
  Table t = *tenant_.OpenTable("own");
  auto write = [&](const std::string& family, int from, int n) {
    for (int i = from; i < from + n; i++) {
      RowMutation m;
      m.Put(family, "q", 1, std::string(100, 'v'));
      ASSERT_TRUE(t.Mutate(WriteOptions(), "row" + std::to_string(i), m).ok());
    }
  };
  // Waits until no full memtable waits for or is in a flush; a flush counts
  // before its memtable stops counting as immutable, so the count is final.
  auto flushes_settled = [&] {
    for (int i = 0; i < 1000 && engine_->GetStats().immutable_memtables > 0; i++) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(engine_->GetStats().immutable_memtables, 0u);
    return engine_->GetStats().flushes;
  };
  write("b", 0, 2000);  // about 250 KiB into "big": below 8 MiB
  EXPECT_EQ(engine_->GetStats().flushes, 0u);
  write("a", 0, 2000);  // about 250 KiB into "small": 16 KiB memtables
  const uint64_t before = flushes_settled();
  ASSERT_GE(before, 5u);
  write("b", 2000, 2000);  // memtables are switched by the writes themselves
  EXPECT_EQ(flushes_settled(), before) << "the other group flushed";

  // Reopened, the table still has its own size; altered, "big" gets one too.
  Reopen();
  t = *tenant_.OpenTable("own");
  Result<TableSchema> got = t.GetSchema();
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->locality_groups.size(), 2u);
  EXPECT_EQ(got->locality_groups[0].write_buffer_size, 16u << 10);
  EXPECT_EQ(got->locality_groups[1].write_buffer_size, 0u);
  got->locality_groups[1].write_buffer_size = 16 << 10;
  ASSERT_TRUE(tenant_.AlterTable("own", *got).ok());
  const uint64_t altered = flushes_settled();
  write("b", 4000, 2000);
  EXPECT_GE(flushes_settled(), altered + 5) << "the altered group did not flush";
  for (int i : {0, 1999, 3999, 5999}) {
    Result<std::vector<Cell>> cells = t.ReadRow(ReadOptions(), "row" + std::to_string(i));
    ASSERT_TRUE(cells.ok());
    EXPECT_FALSE(cells->empty()) << i;
  }

  // Out of range: InvalidArgument, nothing changed.
  TableSchema bad = *t.GetSchema();
  for (uint64_t size : {uint64_t{100}, uint64_t{4095}, (uint64_t{1} << 30) + 1}) {
    bad.locality_groups[0].write_buffer_size = size;
    EXPECT_TRUE(tenant_.AlterTable("own", bad).IsInvalidArgument()) << size;
    EXPECT_TRUE(tenant_.CreateTable("bad", bad).IsInvalidArgument()) << size;
  }
  EXPECT_EQ(t.GetSchema()->locality_groups[0].write_buffer_size, 16u << 10);
  EXPECT_TRUE(tenant_.OpenTable("bad").status().IsNotFound());
}

// A point read gathers one row from memtables and files on every level. A
// wide row stays whole in one file of a level: compaction output is cut
// only between rows.
TEST_F(EngineTest, ReadRowGathersARowAcrossFilesAndLevels) {
  options_.write_buffer_size = 64 << 10;
  options_.target_file_size = 8 << 10;
  options_.level1_max_bytes = 32 << 10;
  options_.level0_compaction_trigger = 2;
  Reopen();
  WriteOptions unsynced;
  unsynced.sync = false;
  auto put = [&](const std::string& row, const std::string& fam, const std::string& qual,
                 uint64_t ts, const std::string& v) {
    RowMutation m;
    m.Put(fam, qual, ts, v);
    return table_.Mutate(unsynced, row, m);
  };
  auto q = [](int i) {
    char buf[16];
    std::snprintf(buf, sizeof(buf), "q%04d", i);
    return std::string(buf);
  };
  // Expected cells of "wide" in family "b": qualifier -> (timestamp -> value).
  std::map<std::string, std::map<uint64_t, std::string, std::greater<>>> want;
  for (int i = 0; i < 1500; i++) {
    ASSERT_TRUE(put("wide", "b", q(i), 1, std::string(60, 'x') + q(i)).ok());
    want[q(i)][1] = std::string(60, 'x') + q(i);
  }
  ASSERT_TRUE(put("before", "b", "q", 1, "b").ok());
  ASSERT_TRUE(put("zafter", "b", "q", 1, "z").ok());
  ASSERT_TRUE(engine_->Compact().ok());
  // The wide row is far past target_file_size, and in one file.
  EXPECT_EQ(engine_->GetStats().table_files, 2u);
  // Newer versions and deletes in a level-0 file and in the memtable.
  for (int i = 0; i < 1500; i += 7) {
    ASSERT_TRUE(put("wide", "b", q(i), 2, "two" + q(i)).ok());
    want[q(i)][2] = "two" + q(i);
  }
  for (int i = 3; i < 1500; i += 11) {
    RowMutation m;
    m.DeleteColumn("b", q(i));
    ASSERT_TRUE(table_.Mutate(unsynced, "wide", m).ok());
    want.erase(q(i));
  }
  ASSERT_TRUE(engine_->Flush().ok());
  for (int i = 5; i < 1500; i += 13) {
    RowMutation m;
    m.DeleteCell("b", q(i), 1);
    ASSERT_TRUE(table_.Mutate(unsynced, "wide", m).ok());
    if (want.count(q(i))) {
      want[q(i)].erase(1);
      if (want[q(i)].empty()) want.erase(q(i));
    }
  }
  ASSERT_TRUE(put("wide", "a", "in-memtable", 3, "m").ok());
  auto check = [&] {
    std::vector<Cell> got = Read("wide");
    std::vector<Cell> expected{{"a", "in-memtable", 3, "m"}};
    for (const auto& [qual, versions] : want) {
      for (const auto& [ts, v] : versions) expected.push_back({"b", qual, ts, v});
    }
    ASSERT_EQ(got.size(), expected.size());
    EXPECT_TRUE(got == expected);
    EXPECT_EQ(Read("before").size(), 1u);
    EXPECT_EQ(Read("zafter").size(), 1u);
    EXPECT_TRUE(Read("wid").empty());
    EXPECT_TRUE(Read("widf").empty());
  };
  check();
  // Everything in files, then a row delete in the memtable hides it all.
  ASSERT_TRUE(engine_->Compact().ok());
  check();
  RowMutation del;
  del.DeleteRow(2);
  ASSERT_TRUE(table_.Mutate(WriteOptions(), "wide", del).ok());
  const std::vector<Cell> after = Read("wide");
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0].qualifier, "in-memtable");
}

}  // namespace
}  // namespace strata

namespace strata {
namespace {

// Keeps the newest `n` versions of every column and upper-cases the values
// of the ones it keeps in family "b".
class KeepNewest final : public CompactionFilter {
 public:
  explicit KeepNewest(size_t n) : n_(n) {}
  void FilterColumn(const Context& context, std::string_view row, std::string_view family,
                    std::string_view qualifier, const std::vector<Version>& versions,
                    std::vector<Decision>* decisions,
                    std::vector<std::string>* new_values) override {
    calls_++;
    for (size_t i = 1; i < versions.size(); i++) {
      if (versions[i].timestamp >= versions[i - 1].timestamp) bad_order_++;
    }
    for (size_t i = 0; i < versions.size(); i++) {
      if (i >= n_) {
        (*decisions)[i] = Decision::kDrop;
      } else if (family == "b") {
        (*decisions)[i] = Decision::kRewrite;
        std::string v(versions[i].value);
        for (auto& c : v) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        (*new_values)[i] = v;
      }
    }
  }
  std::atomic<int> calls_{0};
  std::atomic<int> bad_order_{0};

 private:
  const size_t n_;
};

TEST_F(EngineTest, CompactionFilterSeesColumnsNewestFirstAndDecides) {
  auto filter = std::make_shared<KeepNewest>(2);
  options_.compaction_filter = filter;
  options_.write_buffer_size = 64 << 10;
  Reopen();
  for (uint64_t ts = 1; ts <= 5; ts++) {
    for (int i = 0; i < 200; i++) {
      RowMutation m;
      m.Put("a", "x", ts, "a" + std::to_string(ts)).Put("b", "y", ts, "b" + std::to_string(ts));
      ASSERT_TRUE(table_.Mutate(WriteOptions(), "row" + std::to_string(i), m).ok());
    }
    ASSERT_TRUE(engine_->Flush().ok());
  }
  ASSERT_TRUE(engine_->Compact().ok());
  EXPECT_GT(engine_->GetStats().compactions, 0u);
  EXPECT_GT(filter->calls_.load(), 0);
  EXPECT_EQ(filter->bad_order_.load(), 0);
  auto check = [&] {
    for (int i = 0; i < 200; i++) {
      auto cells = Read("row" + std::to_string(i));
      ASSERT_EQ(cells.size(), 4u) << i;
      EXPECT_EQ(cells[0], (Cell{"a", "x", 5, "a5"}));
      EXPECT_EQ(cells[1], (Cell{"a", "x", 4, "a4"}));
      EXPECT_EQ(cells[2], (Cell{"b", "y", 5, "B5"}));
      EXPECT_EQ(cells[3], (Cell{"b", "y", 4, "B4"}));
    }
  };
  check();
  Reopen();
  check();
}

TEST_F(EngineTest, CompactionToTheBottomDropsDeletedDataAndMarkers) {
  options_.write_buffer_size = 64 << 10;
  Reopen();
  for (int i = 0; i < 2000; i++) {
    ASSERT_TRUE(Put("row" + std::to_string(i), "b", "y", 1, std::string(100, 'v')).ok());
  }
  ASSERT_TRUE(engine_->Flush().ok());
  EXPECT_GT(engine_->GetStats().table_bytes, 200000u);
  for (int i = 0; i < 2000; i++) {
    RowMutation m;
    if (i % 2 == 0) {
      m.DeleteRow();
    } else {
      m.DeleteColumn("b", "y");
    }
    ASSERT_TRUE(table_.Mutate(WriteOptions(), "row" + std::to_string(i), m).ok());
  }
  ASSERT_TRUE(engine_->Compact().ok());
  // Nothing is left: the versions were hidden and the markers had nothing
  // older below them.
  EngineStats st = engine_->GetStats();
  EXPECT_EQ(st.table_files, 0u);
  EXPECT_EQ(st.table_bytes, 0u);
  for (int i = 0; i < 2000; i += 97) EXPECT_TRUE(Read("row" + std::to_string(i)).empty());
  // Replaced files are gone from disk too (once no reader holds them).
  std::vector<std::string> names;
  ASSERT_TRUE(FileSystem::Default()->GetChildren(dir_.Join("sst"), &names).ok());
  EXPECT_TRUE(names.empty()) << names.size() << " files left, e.g. " << names[0];
  Reopen();
  EXPECT_TRUE(Read("row1").empty());
  ASSERT_TRUE(Put("row1", "b", "y", 1, "back").ok());
  EXPECT_EQ(Read("row1").size(), 1u);
}

// Compaction reads its inputs past the block cache: one tenant's
// compactions do not evict the blocks another tenant's readers use (the
// block cache is engine-wide).
TEST_F(EngineTest, CompactionDoesNotEvictReadersBlocks) {
  options_.block_cache_size = 256 << 10;
  options_.level0_compaction_trigger = 4;
  Reopen();
  ASSERT_TRUE(engine_->CreateTenant("reader").ok());
  Tenant reader = *engine_->OpenTenant("reader");
  // Small blocks: the cache's 16 shards of 16 KiB each hold some.
  TableSchema schema;
  schema.locality_groups = {{.name = "g", .block_size = 1024}};
  schema.families = {{.name = "f", .locality_group = "g"}};
  ASSERT_TRUE(reader.CreateTable("rt", schema).ok());
  Table rt = *reader.OpenTable("rt");
  Random rnd(301);  // incompressible values
  for (int i = 0; i < 300; i++) {
    RowMutation m;
    m.Put("f", "q", 1, rnd.RandomBytes(100));
    ASSERT_TRUE(rt.Mutate(WriteOptions(), "r" + std::to_string(i), m).ok());
  }
  ASSERT_TRUE(engine_->Flush().ok());
  for (int i = 0; i < 300; i++)
    ASSERT_TRUE(rt.ReadRow(ReadOptions(), "r" + std::to_string(i)).ok());
  const uint64_t cached = reader.GetStats()->block_cache_bytes;
  ASSERT_GT(cached, 20000u);

  // Four overlapping files of about 130 KB each in table tab's group "big"
  // (not in memory, 16 KiB blocks): the fourth flush starts a compaction
  // that reads about twice the cache's size.
  const uint64_t compactions = engine_->GetStats().compactions;
  for (int round = 0; round < 4; round++) {
    for (int i = 0; i < 1000; i++) {
      ASSERT_TRUE(Put("row" + std::to_string(i), "b", "y", 1 + round, rnd.RandomBytes(100)).ok());
    }
    ASSERT_TRUE(engine_->Flush().ok());
  }
  for (int i = 0; i < 10000 && engine_->GetStats().compactions == compactions; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_GT(engine_->GetStats().compactions, compactions);
  EXPECT_GT(engine_->GetStats().compaction_bytes_read, 400000u);
  EXPECT_EQ(reader.GetStats()->block_cache_bytes, cached);
  // Scans, like point reads, fill it.
  EXPECT_EQ(tenant_.GetStats()->block_cache_bytes, 0u);
  auto scan = table_.Scan(ReadOptions(), ScanSpec());
  ASSERT_TRUE(scan.ok()) << scan.status().ToString();
  size_t rows = 0;
  for (; (*scan)->Valid(); (*scan)->Next()) rows++;
  ASSERT_TRUE((*scan)->status().ok());
  EXPECT_EQ(rows, 1000u);
  EXPECT_GT(tenant_.GetStats()->block_cache_bytes, 0u);
}

TEST_F(EngineTest, FlushWritesOnlyWhatTheMemtableDoesNotHide) {
  for (int i = 0; i < 1000; i++) {
    ASSERT_TRUE(Put("k", "b", "y", 7, std::string(100, 'a' + i % 26)).ok());  // overwrites
    ASSERT_TRUE(Put("d" + std::to_string(i), "b", "y", 7, std::string(100, 'x')).ok());
  }
  for (int i = 0; i < 1000; i++) {
    ASSERT_TRUE(table_.Mutate(WriteOptions(), "d" + std::to_string(i),
                              RowMutation().DeleteColumn("b", "y"))
                    .ok());
  }
  ASSERT_TRUE(engine_->Flush().ok());
  // One version of k and 1000 markers: far less than the 200 KB of values.
  EngineStats st = engine_->GetStats();
  EXPECT_EQ(st.table_files, 1u);
  EXPECT_LT(st.flush_bytes_written, 40u << 10);
  std::vector<Cell> cells = Read("k");
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].value, std::string(100, 'a' + 999 % 26));
  EXPECT_TRUE(Read("d5").empty());
  Reopen();
  EXPECT_EQ(Read("k").size(), 1u);
  EXPECT_TRUE(Read("d5").empty());
}

// A column written and erased over and over with column markers, as a
// transaction's lock is, flushes to the newest marker and what it does not
// hide: an older marker under a newer one hides nothing more.
TEST_F(EngineTest, FlushKeepsOnlyTheNewestOfStackedColumnMarkers) {
  for (uint64_t ts = 1; ts <= 1000; ts++) {
    RowMutation m;
    m.Put("b", "lock", ts, std::string(100, 'l'));
    ASSERT_TRUE(table_.Mutate(WriteOptions(), "hot", m).ok());
    ASSERT_TRUE(
        table_.Mutate(WriteOptions(), "hot", RowMutation().DeleteColumn("b", "lock", ts)).ok());
  }
  // Written after the newest marker, at a timestamp below it: still visible.
  ASSERT_TRUE(Put("hot", "b", "lock", 500, "late").ok());
  ASSERT_TRUE(Put("hot", "b", "other", 3, "o").ok());
  ASSERT_TRUE(engine_->Flush().ok());
  EngineStats st = engine_->GetStats();
  EXPECT_EQ(st.table_files, 1u);
  // Three entries (the marker, the late put, the other column), not 2000.
  EXPECT_LT(st.flush_bytes_written, 4u << 10);
  auto check = [&] {
    std::vector<Cell> cells = Read("hot");
    ASSERT_EQ(cells.size(), 2u);
    EXPECT_EQ(cells[0].qualifier, "lock");
    EXPECT_EQ(cells[0].timestamp, 500u);
    EXPECT_EQ(cells[0].value, "late");
    EXPECT_EQ(cells[1].qualifier, "other");
  };
  check();
  Reopen();
  check();
}

// A delete marker hides cells of its row that sort after it: a row marker
// every family's cells, a column marker the column's older versions. A file
// holding only those cells overlaps the marker's row though not its key, and
// must be merged with it before the marker may be dropped at the bottom.
TEST_F(EngineTest, MarkersReachingTheBottomTakeTheirWholeRowAlong) {
  ASSERT_TRUE(Put("k", "b", "y", 5, "v5").ok());
  ASSERT_TRUE(Put("k", "c", "z", 1, "z1").ok());
  ASSERT_TRUE(engine_->Compact().ok());  // level 1: k/b/y@5, k/c/z@1
  RowMutation m;
  m.Put("c", "z", 3, "z3").DeleteColumn("c", "z", 2);
  ASSERT_TRUE(table_.Mutate(WriteOptions(), "k", m).ok());
  ASSERT_EQ(Read("k").size(), 2u);
  ASSERT_TRUE(engine_->Flush().ok());
  ASSERT_EQ(Read("k").size(), 2u);
  // The new file, k/c/z@3 and the marker k/c/z@2, ends before k/c/z@1.
  ASSERT_TRUE(engine_->Compact().ok());
  std::vector<Cell> cells = Read("k");
  ASSERT_EQ(cells.size(), 2u);
  EXPECT_EQ(cells[1].value, "z3");

  ASSERT_TRUE(table_.Mutate(WriteOptions(), "k", RowMutation().DeleteRow()).ok());
  // The row marker's file holds a key of the row before every family's.
  ASSERT_TRUE(engine_->Compact().ok());
  EXPECT_TRUE(Read("k").empty());
  EXPECT_EQ(engine_->GetStats().table_files, 0u);
  Reopen();
  EXPECT_TRUE(Read("k").empty());
}

// Deletes of each kind, for row i of a test.
RowMutation DeleteOfKind(int i, const std::string& family, const std::string& qualifier,
                         uint64_t timestamp) {
  RowMutation m;
  switch (i % 3) {
    case 0:
      m.DeleteCell(family, qualifier, timestamp);
      break;
    case 1:
      m.DeleteColumn(family, qualifier);
      break;
    default:
      m.DeleteRow();
  }
  return m;
}

// Rows written and deleted within one memtable (as transactions' locks
// are) flush to nothing, markers included: no older data holds them. Rows
// that older files hold keep their markers, or the deleted cells would come
// back.
TEST_F(EngineTest, FlushDropsMarkersOfRowsNoOlderFileHolds) {
  for (int i = 0; i < 300; i++) {
    ASSERT_TRUE(Put("new" + std::to_string(i), "b", "lock", 7, std::string(50, 'l')).ok());
    ASSERT_TRUE(
        table_.Mutate(WriteOptions(), "new" + std::to_string(i), DeleteOfKind(i, "b", "lock", 7))
            .ok());
  }
  ASSERT_TRUE(engine_->Flush().ok());
  EngineStats st = engine_->GetStats();
  EXPECT_EQ(st.flushes, 2u);  // both groups: the row deletes went to each
  EXPECT_EQ(st.table_files, 0u);
  EXPECT_EQ(st.flush_bytes_written, 0u);
  EXPECT_TRUE(Read("new5").empty());

  for (int i = 0; i < 100; i++) {
    ASSERT_TRUE(Put("old" + std::to_string(i), "b", "y", 1, "v" + std::to_string(i)).ok());
  }
  ASSERT_TRUE(engine_->Flush().ok());
  ASSERT_EQ(engine_->GetStats().table_files, 1u);
  for (int i = 0; i < 100; i += 2) {
    ASSERT_TRUE(
        table_.Mutate(WriteOptions(), "old" + std::to_string(i), DeleteOfKind(i / 2, "b", "y", 1))
            .ok());
    ASSERT_TRUE(Put("new" + std::to_string(i), "b", "lock", 8, "l").ok());
    ASSERT_TRUE(table_
                    .Mutate(WriteOptions(), "new" + std::to_string(i),
                            RowMutation().DeleteColumn("b", "lock"))
                    .ok());
  }
  ASSERT_TRUE(engine_->Flush().ok());
  EXPECT_EQ(engine_->GetStats().table_files, 2u);
  auto check = [&] {
    for (int i = 0; i < 100; i++) {
      EXPECT_EQ(Read("old" + std::to_string(i)).size(), i % 2 == 0 ? 0u : 1u) << i;
      EXPECT_TRUE(Read("new" + std::to_string(i)).empty()) << i;
    }
  };
  check();
  Reopen();
  check();
}

// A compaction above the bottom drops the markers of rows no deeper file
// holds, and keeps those of rows a deeper file does.
TEST_F(EngineTest, CompactionDropsMarkersOfRowsNoDeeperFileHolds) {
  options_.level1_max_bytes = 4096;  // the least: the rows below move on to level 2
  options_.level0_compaction_trigger = 2;
  Reopen();
  auto key = [](int i) {
    char buf[16];
    std::snprintf(buf, sizeof(buf), "k%04d", i);
    return std::string(buf);
  };
  // Even rows, deep down.
  for (int i = 0; i < 200; i += 2)
    ASSERT_TRUE(Put(key(i), "b", "y", 1, std::string(100, 'o')).ok());
  ASSERT_TRUE(engine_->Compact().ok());
  auto levels = [&] { return engine_->GetStats().level_files; };
  auto settled = [&](auto done) {
    for (int i = 0; i < 10000 && !done(); i++) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return done();
  };
  ASSERT_TRUE(settled([&] {
    std::vector<uint64_t> l = levels();
    return l[0] == 0 && l[1] == 0 && l[2] + l[3] + l[4] + l[5] + l[6] == 1;
  }));
  // Odd rows and some even ones, put in one level-0 file and deleted in the
  // next: the second flush starts a compaction of both into level 1, whose
  // range the deep file overlaps.
  for (int i = 1; i < 200; i += 2) ASSERT_TRUE(Put(key(i), "b", "y", 2, "new").ok());
  ASSERT_TRUE(engine_->Flush().ok());
  for (int i = 1; i < 200; i += 2) {
    ASSERT_TRUE(table_.Mutate(WriteOptions(), key(i), DeleteOfKind(i / 2, "b", "y", 2)).ok());
  }
  ASSERT_TRUE(engine_->Flush().ok());
  ASSERT_TRUE(settled([&] { return levels()[0] == 0; }));
  // Nothing of the odd rows is left: no level-1 file.
  EXPECT_EQ(levels()[1], 0u);
  for (int i = 0; i < 10; i++) {
    EXPECT_EQ(Read(key(i)).size(), i % 2 == 0 ? 1u : 0u) << i;
  }

  // Deletes of even rows keep their markers through the same compaction.
  for (int i = 0; i < 200; i += 4) {
    ASSERT_TRUE(Put(key(i), "b", "y", 3, "newer").ok());
  }
  ASSERT_TRUE(engine_->Flush().ok());
  for (int i = 0; i < 200; i += 4) {
    RowMutation m;
    m.DeleteColumn("b", "y");
    ASSERT_TRUE(table_.Mutate(WriteOptions(), key(i), m).ok());
  }
  ASSERT_TRUE(engine_->Flush().ok());
  ASSERT_TRUE(settled([&] { return levels()[0] == 0; }));
  auto check = [&] {
    for (int i = 0; i < 200; i++) {
      EXPECT_EQ(Read(key(i)).size(), i % 2 == 0 && i % 4 != 0 ? 1u : 0u) << i;
    }
  };
  check();
  Reopen();
  check();
  ASSERT_TRUE(engine_->Compact().ok());
  check();
}

}  // namespace
}  // namespace strata

namespace strata {
namespace {

std::vector<std::pair<std::string, size_t>> ScanAll(Table& table, const ScanSpec& spec) {
  std::vector<std::pair<std::string, size_t>> rows;
  auto it = table.Scan(ReadOptions(), spec);
  EXPECT_TRUE(it.ok()) << it.status().ToString();
  if (!it.ok()) return rows;
  for (; (*it)->Valid(); (*it)->Next()) rows.emplace_back((*it)->row(), (*it)->cells().size());
  EXPECT_TRUE((*it)->status().ok()) << (*it)->status().ToString();
  return rows;
}

TEST_F(EngineTest, ScanWalksRowsInOrderAcrossMemtablesAndFiles) {
  options_.write_buffer_size = 32 << 10;
  Reopen();
  // Rows 0..599 (zero-padded) with a cell in each family; flushes happen on the way.
  auto key = [](int i) {
    char buf[16];
    std::snprintf(buf, sizeof(buf), "k%04d", i);
    return std::string(buf);
  };
  for (int i = 0; i < 600; i++) {
    RowMutation m;
    m.Put("a", "x", 1, std::string(30, 'a')).Put("b", "y", 1, "b").Put("c", "z", 2, "c");
    ASSERT_TRUE(table_.Mutate(WriteOptions(), key(i), m).ok());
  }
  // Delete every 10th row; drop family a from every 7th.
  for (int i = 0; i < 600; i += 10) {
    ASSERT_TRUE(table_.Mutate(WriteOptions(), key(i), RowMutation().DeleteRow()).ok());
  }
  for (int i = 0; i < 600; i += 7) {
    ASSERT_TRUE(table_.Mutate(WriteOptions(), key(i), RowMutation().DeleteColumn("a", "x")).ok());
  }
  EXPECT_GT(engine_->GetStats().flushes, 0u);

  auto rows = ScanAll(table_, ScanSpec());
  ASSERT_EQ(rows.size(), 540u);
  for (size_t j = 1; j < rows.size(); j++) ASSERT_LT(rows[j - 1].first, rows[j].first);
  for (const auto& [row, n] : rows) {
    int i = std::stoi(row.substr(1));
    EXPECT_NE(i % 10, 0) << row;
    EXPECT_EQ(n, i % 7 == 0 ? 2u : 3u) << row;
  }
  // Row range: [k0100, k0200) without deleted rows.
  auto range = ScanAll(table_, ScanSpec{.start_row = key(100), .end_row = key(200)});
  ASSERT_EQ(range.size(), 90u);
  EXPECT_EQ(range.front().first, key(101));
  EXPECT_EQ(range.back().first, key(199));
  // A family filter: rows that lost family a are absent.
  auto fam_a = ScanAll(table_, ScanSpec{.filter = {.families = {"a"}}});
  size_t expect_a = 0;
  for (int i = 0; i < 600; i++) expect_a += (i % 10 != 0 && i % 7 != 0);
  EXPECT_EQ(fam_a.size(), expect_a);
  // Timestamp range and max versions.
  auto ts2 = ScanAll(table_, ScanSpec{.filter = {.min_timestamp = 2}});
  ASSERT_EQ(ts2.size(), 540u);
  EXPECT_EQ(ts2[0].second, 1u);
  // Empty and bad ranges.
  EXPECT_TRUE(ScanAll(table_, ScanSpec{.start_row = "x", .end_row = "y"}).empty());
  EXPECT_TRUE(ScanAll(table_, ScanSpec{.start_row = key(5), .end_row = key(5)}).empty());
  EXPECT_TRUE(
      table_.Scan(ReadOptions(), ScanSpec{.start_row = "b", .end_row = "a"}).status().IsInvalidArgument());
  // The same after compaction and reopen.
  ASSERT_TRUE(engine_->Compact().ok());
  EXPECT_EQ(ScanAll(table_, ScanSpec()), rows);
  Reopen();
  EXPECT_EQ(ScanAll(table_, ScanSpec()), rows);
}

TEST_F(EngineTest, ScanSeesOneSnapshotWhileWritesGoOn) {
  for (int i = 0; i < 100; i++) ASSERT_TRUE(Put("r" + std::to_string(i), "a", "x", 1, "v").ok());
  auto it = table_.Scan(ReadOptions(), ScanSpec());
  ASSERT_TRUE(it.ok());
  // Writes after the scan began are not seen by it.
  for (int i = 0; i < 100; i++) ASSERT_TRUE(Put("s" + std::to_string(i), "a", "x", 1, "v").ok());
  ASSERT_TRUE(table_.Mutate(WriteOptions(), "r5", RowMutation().DeleteRow()).ok());
  size_t n = 0;
  for (; (*it)->Valid(); (*it)->Next()) {
    EXPECT_EQ((*it)->row()[0], 'r');
    n++;
  }
  EXPECT_EQ(n, 100u);
}

TEST(EngineScanGroupsTest, ScanOfOneGroupOpensOnlyThatGroupsFiles) {
  test::ScratchDir dir("scan-groups");
  FaultInjectionFileSystem fs;
  EngineOptions o;
  o.file_system = &fs;
  TableSchema schema;
  schema.locality_groups = {{.name = "small"}, {.name = "large"}};
  schema.families = {{.name = "s", .locality_group = "small"},
                     {.name = "l", .locality_group = "large"}};
  {
    auto e = Engine::Open(dir.path(), o);
    ASSERT_TRUE(e.ok());
    ASSERT_TRUE((*e)->CreateTenant("t").ok());
    ASSERT_TRUE((*e)->OpenTenant("t")->CreateTable("tab", schema).ok());
    Table t = *(*e)->OpenTenant("t")->OpenTable("tab");
    for (int i = 0; i < 2000; i++) {
      RowMutation m;
      m.Put("l", "big", 1, std::string(500, 'x'));
      if (i % 20 == 0) m.Put("s", "flag", 1, "1");
      ASSERT_TRUE(t.Mutate(WriteOptions(), "row" + std::to_string(i), m).ok());
    }
    ASSERT_TRUE((*e)->Flush().ok());
    ASSERT_TRUE((*e)->Close().ok());
  }
  auto e = Engine::Open(dir.path(), o);
  ASSERT_TRUE(e.ok());
  Table t = *(*e)->OpenTenant("t")->OpenTable("tab");
  const uint64_t opens_before = fs.OpCount(FaultOp::kOpen);
  const uint64_t reads_before = fs.OpCount(FaultOp::kRead);
  auto it = t.Scan(ReadOptions(), ScanSpec{.filter = {.families = {"s"}}});
  ASSERT_TRUE(it.ok());
  size_t rows = 0;
  for (; (*it)->Valid(); (*it)->Next()) rows++;
  EXPECT_EQ(rows, 100u);
  // One file for the small group, opened once; the large group's ~1 MB of
  // files is never opened.
  EXPECT_EQ(fs.OpCount(FaultOp::kOpen) - opens_before, 1u);
  const uint64_t small_reads = fs.OpCount(FaultOp::kRead) - reads_before;
  EXPECT_GT(small_reads, 0u);
  EXPECT_LT(small_reads, 10u);
}

}  // namespace
}  // namespace strata

namespace strata {
namespace {

TEST(EngineBackpressureTest, BadTriggersAreRejected) {
  test::ScratchDir dir("bp");
  EngineOptions o;
  o.level0_compaction_trigger = 8;
  o.level0_slowdown_trigger = 8;
  auto e = Engine::Open(dir.path(), o);
  EXPECT_TRUE(e.status().IsInvalidArgument()) << e.status().ToString();
  o.level0_slowdown_trigger = 10;
  o.level0_stop_trigger = 9;
  EXPECT_TRUE(Engine::Open(dir.path(), o).status().IsInvalidArgument());
  o.level0_stop_trigger = 10;
  o.write_buffer_size = 10;
  EXPECT_TRUE(Engine::Open(dir.path(), o).status().IsInvalidArgument());
  o.write_buffer_size = 1 << 20;
  o.max_background_compactions = 0;
  EXPECT_TRUE(Engine::Open(dir.path(), o).status().IsInvalidArgument());
  o.max_background_compactions = 1;
  o.max_immutable_memtables = 0;
  EXPECT_TRUE(Engine::Open(dir.path(), o).status().IsInvalidArgument());
}

// Options the log or the write path would refuse later are refused before
// the directory is touched: a bad open of an existing engine changes no file.
TEST(EngineOptionsTest, BadLogAndWriteLimitsChangeNothing) {
  test::ScratchDir dir("options");
  {
    auto e = Engine::Open(dir.path(), EngineOptions());
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    ASSERT_TRUE((*e)->CreateTenant("t").ok());
    ASSERT_TRUE((*e)->Close().ok());
  }
  auto listing = [&] {
    std::string all;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(dir.path())) {
      all += entry.path().string() + " " +
             (entry.is_regular_file() ? std::to_string(entry.file_size()) : "dir") + "\n";
    }
    return all;
  };
  const std::string before = listing();
  std::vector<EngineOptions> bad(7);
  bad[0].wal_segment_size = 0;
  bad[1].wal_segment_size = 100000;  // not a multiple of 32 KiB
  bad[2].max_row_key_size = 0;
  bad[3].max_qualifier_size = (size_t{1} << 30) + 1;
  bad[4].max_value_size = 0;
  bad[5].max_value_size = size_t{5} << 30;  // past what 32-bit lengths hold
  bad[6].max_row_key_size = SIZE_MAX;
  for (size_t i = 0; i < bad.size(); i++) {
    auto e = Engine::Open(dir.path(), bad[i]);
    EXPECT_TRUE(e.status().IsInvalidArgument()) << i << ": " << e.status().ToString();
    EXPECT_EQ(listing(), before) << i;
  }
  EngineOptions limits;
  limits.max_value_size = size_t{1} << 30;
  limits.max_row_key_size = 1;
  auto e = Engine::Open(dir.path(), limits);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_TRUE((*e)->OpenTenant("t").ok());
}

// Rows "row<i>" for i in [begin, end) by `step` hold one cell each.
void ExpectOneCellPerRow(const Table& t, int begin, int end, int step) {
  for (int i = begin; i < end; i += step) {
    auto cells = t.ReadRow(ReadOptions(), "row" + std::to_string(i));
    ASSERT_TRUE(cells.ok()) << i;
    ASSERT_EQ(cells->size(), 1u) << i;
  }
}

// A file system whose new SSTables wait at creation until the test opens the
// gate: flushes and compactions stall while the log keeps working.
class GatedTableFileSystem : public test::ForwardingFileSystem {
 public:
  Status NewWritableFile(const std::string& p, const FileOpenOptions& o,
                         std::unique_ptr<WritableFile>* r) override {
    if (p.size() > 4 && p.compare(p.size() - 4, 4, ".sst") == 0) {
      std::unique_lock<std::mutex> l(mu_);
      waiting_++;
      cv_.notify_all();
      cv_.wait(l, [&] { return open_; });
    }
    return test::ForwardingFileSystem::NewWritableFile(p, o, r);
  }
  void Open() {
    std::lock_guard<std::mutex> l(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void WaitForWaiter() {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return waiting_ > 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  int waiting_ = 0;
};

TEST(EngineBackpressureTest, WritesWaitWhileTooManyMemtablesAwaitFlush) {
  test::ScratchDir dir("bp");
  GatedTableFileSystem fs;
  EngineOptions o;
  o.file_system = &fs;
  o.write_buffer_size = 4096;
  o.max_immutable_memtables = 2;
  auto e = Engine::Open(dir.path(), o);
  ASSERT_TRUE(e.ok());
  Table t = test::CreateOneFamilyTable(e->get());
  constexpr int kRows = 400;  // about 40 KB: many memtables' worth
  std::atomic<int> written{0};
  std::thread writer([&] {
    for (int i = 0; i < kRows; i++) {
      RowMutation m;
      m.Put("f", "q", 1, std::string(100, 'v'));
      ASSERT_TRUE(t.Mutate(WriteOptions{.sync = false}, "row" + std::to_string(i), m).ok());
      written.fetch_add(1);
    }
  });
  // The first flush is stuck creating its file; the writer fills memtables
  // until two wait and then waits itself.
  fs.WaitForWaiter();
  while ((*e)->GetStats().memtable_stops == 0) std::this_thread::yield();
  EngineStats st = (*e)->GetStats();
  EXPECT_EQ(st.immutable_memtables, 2u);
  EXPECT_LT(written.load(), kRows);
  fs.Open();
  writer.join();
  ASSERT_EQ(written.load(), kRows);
  st = (*e)->GetStats();
  EXPECT_GT(st.memtable_stops, 0u);
  EXPECT_GT(st.write_stall_micros, 0u);
  ExpectOneCellPerRow(t, 0, kRows, 1);
}

TEST(EngineCompactionTest, ParallelCompactionsLoseNothing) {
  test::ScratchDir dir("parallel");
  EngineOptions o;
  o.max_background_compactions = 3;
  o.write_buffer_size = 16 << 10;
  o.level0_compaction_trigger = 2;
  o.target_file_size = 16 << 10;
  o.level1_max_bytes = 64 << 10;
  auto e = Engine::Open(dir.path(), o);
  ASSERT_TRUE(e.ok());
  ASSERT_TRUE((*e)->CreateTenant("t").ok());
  Tenant tenant = *(*e)->OpenTenant("t");
  TableSchema s;
  s.locality_groups = {{.name = "g0"}, {.name = "g1"}};
  s.families = {{.name = "f0", .locality_group = "g0"}, {.name = "f1", .locality_group = "g1"}};
  constexpr int kTables = 3;
  constexpr int kRows = 1500;
  constexpr int kRounds = 4;
  std::vector<Table> tables;
  for (int i = 0; i < kTables; i++) {
    ASSERT_TRUE(tenant.CreateTable("tab" + std::to_string(i), s).ok());
    tables.push_back(*tenant.OpenTable("tab" + std::to_string(i)));
  }
  // Each thread owns one table: rounds of overwrites, and deletes of every
  // 5th row in the last round, so compactions in every group of every table
  // merge versions and markers at once.
  auto value = [](int round, int row) { return std::to_string(round) + "/" + std::to_string(row); };
  std::vector<std::thread> threads;
  for (int t = 0; t < kTables; t++) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; round++) {
        for (int r = 0; r < kRows; r++) {
          RowMutation m;
          const std::string row = "row" + std::to_string(r);
          if (round == kRounds - 1 && r % 5 == 0) {
            m.DeleteRow();
          } else {
            m.Put("f0", "q", round + 1, value(round, r) + std::string(40, 'x'));
            m.Put("f1", "q", 1, value(round, r));
          }
          ASSERT_TRUE(tables[t].Mutate(WriteOptions{.sync = false}, row, m).ok());
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  auto check = [&] {
    for (int t = 0; t < kTables; t++) {
      for (int r = 0; r < kRows; r++) {
        auto cells = tables[t].ReadRow(ReadOptions(), "row" + std::to_string(r));
        ASSERT_TRUE(cells.ok());
        if (r % 5 == 0) {
          ASSERT_TRUE(cells->empty()) << t << " " << r;
          continue;
        }
        ASSERT_EQ(cells->size(), 1u + kRounds) << t << " " << r;  // f0: a version a round
        EXPECT_EQ((*cells)[0].value, value(kRounds - 1, r) + std::string(40, 'x'));
        EXPECT_EQ(cells->back().value, value(kRounds - 1, r));
      }
    }
  };
  check();
  EXPECT_GT((*e)->GetStats().compactions, 0u);
  ASSERT_TRUE((*e)->Compact().ok());
  check();
  EngineStats st = (*e)->GetStats();
  EXPECT_EQ(st.level_files[0], 0u);
  ASSERT_TRUE((*e)->Close().ok());
  e = Engine::Open(dir.path(), o);
  ASSERT_TRUE(e.ok());
  tenant = *(*e)->OpenTenant("t");
  for (int i = 0; i < kTables; i++) tables[i] = *tenant.OpenTable("tab" + std::to_string(i));
  check();
}

TEST(EngineCompactionTest, RateLimitPacesCompactionOutput) {
  test::ScratchDir dir("ratelimit");
  EngineOptions o;
  // 256 KB/s with 100 ms of burst: the ~600 KB a full compaction writes
  // below must wait for most of two seconds.
  o.compaction_rate_limit = 256 << 10;
  auto e = Engine::Open(dir.path(), o);
  ASSERT_TRUE(e.ok());
  Table t = test::CreateOneFamilyTable(e->get());
  for (int i = 0; i < 5000; i++) {
    RowMutation m;
    m.Put("f", "q", 1, std::string(100, 'a' + i % 26));
    ASSERT_TRUE(t.Mutate(WriteOptions{.sync = false}, "row" + std::to_string(i), m).ok());
    if (i == 2500) {
      ASSERT_TRUE((*e)->Flush().ok());
    }
  }
  ASSERT_TRUE((*e)->Compact().ok());  // two level-0 files merge into level 1
  EngineStats st = (*e)->GetStats();
  EXPECT_EQ(st.compactions, 1u);
  EXPECT_GT(st.compaction_bytes_written, 500u << 10);
  EXPECT_GT(st.compaction_rate_limit_wait_micros, 0u);
  auto cells = t.ReadRow(ReadOptions(), "row4999");
  ASSERT_TRUE(cells.ok());
  EXPECT_EQ(cells->size(), 1u);
}

// Rows 0..7999 of `t` (family f) in two flushed files.
void WriteTwoFiles(Engine* e, Table& t) {
  for (int i = 0; i < 8000; i++) {
    RowMutation m;
    m.Put("f", "q", 1, std::string(100, 'a' + i % 26));
    ASSERT_TRUE(t.Mutate(WriteOptions{.sync = false}, "row" + std::to_string(i), m).ok());
    if (i % 4000 == 3999) {
      ASSERT_TRUE(e->Flush().ok());
    }
  }
}

TEST(EngineCompactionTest, CloseStopsACompactionHeldBackByTheRateLimit) {
  test::ScratchDir dir("ratelimit");
  EngineOptions o;
  o.compaction_rate_limit = 16 << 10;  // the compaction below would take a minute
  o.level0_compaction_trigger = 2;
  auto e = Engine::Open(dir.path(), o);
  ASSERT_TRUE(e.ok());
  Table t = test::CreateOneFamilyTable(e->get());
  ASSERT_NO_FATAL_FAILURE(WriteTwoFiles(e->get(), t));
  // Two level-0 files: a compaction starts and soon waits on the limit.
  while ((*e)->GetStats().compaction_rate_limit_wait_micros == 0) std::this_thread::yield();
  ASSERT_TRUE((*e)->Close().ok());
  e = Engine::Open(dir.path(), EngineOptions());
  ASSERT_TRUE(e.ok());
  t = *(*e)->OpenTenant("t")->OpenTable("tab");
  ExpectOneCellPerRow(t, 0, 8000, 333);
}

// Engine::Compact waits for its compactions without the close gate: a drop
// (which takes the gate exclusively, and with it every read and write) goes
// through while a long compaction runs, and Close ends the wait.
TEST(EngineCompactionTest, ManualCompactionDoesNotHoldOffADrop) {
  test::ScratchDir dir("manual-compaction");
  EngineOptions o;
  o.compaction_rate_limit = 16 << 10;  // the compaction below would take a minute
  auto e = Engine::Open(dir.path(), o);
  ASSERT_TRUE(e.ok());
  Table t = test::CreateOneFamilyTable(e->get());
  TableSchema s;
  s.families = {{.name = "f"}};
  ASSERT_TRUE((*e)->OpenTenant("t")->CreateTable("other", s).ok());
  ASSERT_NO_FATAL_FAILURE(WriteTwoFiles(e->get(), t));
  std::atomic<bool> compact_returned{false};
  Status compact_status;
  std::thread compact([&] {
    compact_status = (*e)->Compact();
    compact_returned = true;
  });
  while ((*e)->GetStats().compaction_rate_limit_wait_micros == 0) std::this_thread::yield();
  std::atomic<bool> dropped{false};
  std::thread drop([&] {
    EXPECT_TRUE((*e)->OpenTenant("t")->DropTable("other").ok());
    dropped = true;
  });
  for (int i = 0; i < 10000 && !dropped; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(dropped) << "the drop waited for the manual compaction";
  EXPECT_FALSE(compact_returned);
  ASSERT_TRUE((*e)->Close().ok());
  compact.join();
  drop.join();
  EXPECT_FALSE(compact_status.ok());  // closed before it finished
  e = Engine::Open(dir.path(), EngineOptions());
  ASSERT_TRUE(e.ok());
  t = *(*e)->OpenTenant("t")->OpenTable("tab");
  ExpectOneCellPerRow(t, 0, 8000, 333);
  EXPECT_FALSE((*e)->OpenTenant("t")->OpenTable("other").ok());
}

TEST(EngineBackpressureTest, TightTriggersLoseNothing) {
  test::ScratchDir dir("bp");
  EngineOptions o;
  o.write_buffer_size = 16 << 10;
  o.level0_compaction_trigger = 2;
  o.level0_slowdown_trigger = 3;
  o.level0_stop_trigger = 4;
  o.target_file_size = 64 << 10;
  o.level1_max_bytes = 256 << 10;
  auto e = Engine::Open(dir.path(), o);
  ASSERT_TRUE(e.ok());
  Table t = test::CreateOneFamilyTable(e->get());
  WriteOptions wo;
  wo.sync = false;
  for (int i = 0; i < 20000; i++) {
    RowMutation m;
    m.Put("f", "q", 1, std::string(64, 'v') + std::to_string(i));
    ASSERT_TRUE(t.Mutate(wo, "row" + std::to_string(i % 5000), m).ok());
  }
  EngineStats st = (*e)->GetStats();
  EXPECT_GT(st.compactions + st.trivial_moves, 0u);
  for (int i = 15000; i < 20000; i++) {
    auto cells = t.ReadRow(ReadOptions(), "row" + std::to_string(i % 5000));
    ASSERT_TRUE(cells.ok());
    ASSERT_EQ(cells->size(), 1u);
    EXPECT_EQ((*cells)[0].value, std::string(64, 'v') + std::to_string(i));
  }
}

}  // namespace
}  // namespace strata

namespace strata {
namespace {

size_t TableFilesOnDisk(const test::ScratchDir& dir) {
  std::vector<std::string> names;
  EXPECT_TRUE(FileSystem::Default()->GetChildren(dir.Join("sst"), &names).ok());
  return names.size();
}

// A database whose manifest is missing or damaged is refused with its files
// untouched: without the manifest every table file would read as a leftover.
TEST_F(EngineTest, MissingOrDamagedManifestLeavesTheFilesAlone) {
  for (int i = 0; i < 100; i++) ASSERT_TRUE(Put("r" + std::to_string(i), "b", "y", 1, "v").ok());
  ASSERT_TRUE(engine_->Flush().ok());
  ASSERT_TRUE(Put("logged", "b", "y", 1, "v").ok());
  ASSERT_TRUE(CloseEngine().ok());
  const size_t files = TableFilesOnDisk(dir_);
  ASSERT_GT(files, 0u);
  std::string manifest;
  ASSERT_TRUE(ReadFileToString(FileSystem::Default(), dir_.Join("MANIFEST"), &manifest).ok());

  ASSERT_TRUE(FileSystem::Default()->DeleteFile(dir_.Join("MANIFEST")).ok());
  auto e = Engine::Open(dir_.path(), options_);
  EXPECT_TRUE(e.status().IsCorruption()) << e.status().ToString();
  EXPECT_EQ(TableFilesOnDisk(dir_), files);
  EXPECT_FALSE(FileSystem::Default()->FileExists(dir_.Join("MANIFEST")));

  std::string damaged = manifest;
  damaged[damaged.size() / 2] ^= 0x01;  // inside the snapshot, its only record
  ASSERT_TRUE(WriteFileAtomically(FileSystem::Default(), dir_.Join("MANIFEST"), damaged).ok());
  e = Engine::Open(dir_.path(), options_);
  EXPECT_TRUE(e.status().IsCorruption()) << e.status().ToString();
  EXPECT_EQ(TableFilesOnDisk(dir_), files);

  // A file in sst/ that only starts like a table file's name is not one.
  ASSERT_TRUE(WriteFileAtomically(FileSystem::Default(), dir_.Join("MANIFEST"), manifest).ok());
  ASSERT_TRUE(
      WriteFileAtomically(FileSystem::Default(), dir_.Join("sst/999999.sst.bak"), "keep").ok());
  Reopen();
  EXPECT_EQ(TableFilesOnDisk(dir_), files + 1);
  EXPECT_EQ(Read("r7").size(), 1u);
  EXPECT_EQ(Read("logged").size(), 1u);
}

TEST_F(EngineTest, DropTableEndsItsHandlesAndFreesItsName) {
  for (int i = 0; i < 200; i++) ASSERT_TRUE(Put("r" + std::to_string(i), "b", "y", 1, "v").ok());
  ASSERT_TRUE(engine_->Compact().ok());
  ASSERT_TRUE(Put("unflushed", "a", "x", 1, "v").ok());
  EXPECT_GT(TableFilesOnDisk(dir_), 0u);
  Table copy = table_;
  EXPECT_FALSE(table_.dropped());
  EXPECT_FALSE(Table().dropped());

  EXPECT_TRUE(tenant_.DropTable("nope").IsNotFound());
  ASSERT_TRUE(tenant_.DropTable("tab").ok());
  for (Table* t : {&table_, &copy}) {
    EXPECT_TRUE(t->dropped());
    Status s = t->Mutate(WriteOptions(), "r1", RowMutation().Put("b", "y", 2, "w"));
    EXPECT_TRUE(s.IsNotFound()) << s.ToString();
    EXPECT_NE(s.ToString().find("dropped"), std::string::npos) << s.ToString();
    EXPECT_TRUE(t->ReadRow(ReadOptions(), "r1").status().IsNotFound());
    EXPECT_TRUE(t->Scan(ReadOptions(), ScanSpec()).status().IsNotFound());
    EXPECT_TRUE(t->CheckAndMutate(WriteOptions(), "r1", {Condition::CellExists("b", "y", 1)},
                                  RowMutation().Put("b", "y", 2, "w"))
                    .status()
                    .IsNotFound());
    EXPECT_TRUE(t->CheckAndMutateBatch(WriteOptions(), {}).status().IsNotFound());
    EXPECT_TRUE(t->GetTabletStats().status().IsNotFound());
  }
  EXPECT_TRUE(tenant_.OpenTable("tab").status().IsNotFound());
  EXPECT_TRUE(tenant_.ListTables()->empty());
  EXPECT_TRUE(tenant_.DropTable("tab").IsNotFound());
  EXPECT_EQ(TableFilesOnDisk(dir_), 0u);
  EXPECT_EQ(engine_->GetStats().table_files, 0u);

  // The name is free again, for a new and empty table.
  ASSERT_TRUE(tenant_.CreateTable("tab", TwoGroupSchema()).ok());
  table_ = *tenant_.OpenTable("tab");
  EXPECT_FALSE(table_.dropped());
  EXPECT_TRUE(copy.dropped());
  EXPECT_TRUE(Read("r1").empty());
  EXPECT_TRUE(Read("unflushed").empty());
  ASSERT_TRUE(Put("new", "a", "x", 1, "n").ok());
  EXPECT_TRUE(copy.ReadRow(ReadOptions(), "new").status().IsNotFound());

  // The log still holds records of the dropped table: replay skips them.
  Reopen();
  EXPECT_TRUE(Read("r1").empty());
  EXPECT_TRUE(Read("unflushed").empty());
  EXPECT_EQ(Read("new").size(), 1u);
  ASSERT_TRUE(engine_->Compact().ok());
  Reopen();
  EXPECT_EQ(Read("new").size(), 1u);
}

TEST_F(EngineTest, DropTenantDropsItsTablesAndLeavesOthersAlone) {
  ASSERT_TRUE(engine_->CreateTenant("t2").ok());
  Tenant t2 = *engine_->OpenTenant("t2");
  ASSERT_TRUE(t2.CreateTable("tab", TwoGroupSchema()).ok());
  ASSERT_TRUE(t2.CreateTable("other", TwoGroupSchema()).ok());
  Table t2tab = *t2.OpenTable("tab");
  for (int i = 0; i < 100; i++) {
    ASSERT_TRUE(Put("r" + std::to_string(i), "b", "y", 1, "mine").ok());
    ASSERT_TRUE(t2tab.Mutate(WriteOptions(), "r" + std::to_string(i),
                             RowMutation().Put("b", "y", 1, "theirs"))
                    .ok());
  }
  ASSERT_TRUE(engine_->Flush().ok());

  EXPECT_TRUE(engine_->DropTenant("nobody").IsNotFound());
  ASSERT_TRUE(engine_->DropTenant("t2").ok());
  EXPECT_EQ(*engine_->ListTenants(), std::vector<std::string>{"t1"});
  EXPECT_TRUE(engine_->OpenTenant("t2").status().IsNotFound());
  EXPECT_TRUE(t2.OpenTable("tab").status().IsNotFound());
  EXPECT_TRUE(t2.ListTables().status().IsNotFound());
  EXPECT_TRUE(t2.CreateTable("x", TwoGroupSchema()).IsNotFound());
  EXPECT_TRUE(t2.DropTable("other").IsNotFound());
  EXPECT_TRUE(t2tab.ReadRow(ReadOptions(), "r1").status().IsNotFound());
  EXPECT_TRUE(t2tab.dropped());
  EXPECT_FALSE(table_.dropped());
  ASSERT_EQ(Read("r1").size(), 1u);
  EXPECT_EQ(Read("r1")[0].value, "mine");

  Reopen();
  EXPECT_EQ(*engine_->ListTenants(), std::vector<std::string>{"t1"});
  EXPECT_EQ(Read("r99")[0].value, "mine");
  // A new tenant of the same name starts empty.
  ASSERT_TRUE(engine_->CreateTenant("t2").ok());
  EXPECT_TRUE(engine_->OpenTenant("t2")->ListTables()->empty());
}

// A table dropped while a compaction of it is between its manifest edit and
// showing its result: neither the outputs of a merge nor a file moved down
// may outlive the drop (they belong to no table; only a reopen would have
// deleted them).
using ParkedCompaction = test::ParkedHook<&engine::test_hooks::after_compaction_edit>;

// An in-memory group's flush pins its new file before recording it; a drop
// of the table meanwhile discards the file, and with it the pinned reader
// and the resident blocks charged to the tenant.
using ParkedFlush = test::ParkedHook<&engine::test_hooks::after_flush_log_sync>;

TEST(EngineDropTest, DropDuringAFlushOfAnInMemoryGroupUnpinsItsFile) {
  ScratchDir dir("drop-flush");
  EngineOptions options;
  options.write_buffer_size = 64 << 10;
  auto engine = Engine::Open(dir.path(), options);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  ASSERT_TRUE((*engine)->CreateTenant("t").ok());
  Tenant tenant = *(*engine)->OpenTenant("t");
  TableSchema schema;
  schema.locality_groups.push_back({.name = "mem", .in_memory = true});
  schema.families.push_back({.name = "a", .locality_group = "mem"});
  ASSERT_TRUE(tenant.CreateTable("tab", schema).ok());
  Table table = *tenant.OpenTable("tab");
  ParkedFlush::Arm();
  // Fill the memtable until it switches; its flush stops in the hook. No
  // more writes: one held back by a full flush queue would keep the drop
  // out.
  for (int i = 0; (*engine)->GetStats().immutable_memtables == 0; i++) {
    RowMutation m;
    m.Put("a", "x", 1, std::string(100, 'v'));
    ASSERT_TRUE(table.Mutate(WriteOptions{.sync = false}, "row" + std::to_string(i), m).ok());
  }
  ASSERT_TRUE(ParkedFlush::WaitReached());
  EXPECT_GT(tenant.GetStats()->block_cache_bytes, 0u);  // the new file's blocks
  table = Table();
  ASSERT_TRUE(tenant.DropTable("tab").ok());
  ParkedFlush::Release();
  for (int i = 0; i < 10000 && (*engine)->GetStats().immutable_memtables > 0; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(tenant.GetStats()->block_cache_bytes, 0u);
  // No descriptor of a deleted table file stays open.
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const std::string target = std::filesystem::read_symlink(e.path(), ec).string();
    EXPECT_EQ(target.find(".sst (deleted)"), std::string::npos) << target;
  }
  ASSERT_TRUE((*engine)->Close().ok());
}

class EngineDropDuringCompactionTest : public ::testing::TestWithParam<bool> {};

TEST_P(EngineDropDuringCompactionTest, LeavesNoFileBehind) {
  const bool trivial_move = GetParam();
  ScratchDir dir("drop-compaction");
  EngineOptions options;
  // One file is enough for a compaction, which then moves it down a level;
  // two overlapping ones are merged.
  options.level0_compaction_trigger = trivial_move ? 1 : 2;
  auto engine = Engine::Open(dir.path(), options);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  Table table = test::CreateOneFamilyTable(engine->get());
  ParkedCompaction::Arm();
  for (int file = 0; file < (trivial_move ? 1 : 2); file++) {
    for (int i = 0; i < 100; i++) {
      RowMutation m;
      m.Put("f", "q", 1 + file, std::string(100, 'v'));
      ASSERT_TRUE(table.Mutate(WriteOptions(), "r" + std::to_string(i), m).ok());
    }
    ASSERT_TRUE((*engine)->Flush().ok());
  }
  ASSERT_TRUE(ParkedCompaction::WaitReached());
  table = Table();
  ASSERT_TRUE((*engine)->OpenTenant("t")->DropTable("tab").ok());
  ParkedCompaction::Release();
  auto table_files = [&] {
    size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir.Join("sst"))) {
      n += e.path().extension() == ".sst";
    }
    return n;
  };
  // The compaction ends on its own; its thread then purges obsolete files.
  for (int i = 0; i < 10000 && table_files() > 0; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(table_files(), 0u);
  ASSERT_TRUE((*engine)->Close().ok());
}

INSTANTIATE_TEST_SUITE_P(Kinds, EngineDropDuringCompactionTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "TrivialMove" : "Merge"; });

// A split between a trivial move's manifest edit and its showing the move:
// the children share the moved file with the retired parent. Showing the
// move in the parent's emptied view would keep the file alive (and on disk)
// for the engine's lifetime after the children compact it away.
TEST(EngineSplitDuringCompactionTest, TrivialMoveLeavesNoFileBehind) {
  ScratchDir dir("split-trivial-move");
  EngineOptions options;
  options.level0_compaction_trigger = 1;
  options.tablet_split_size = 200 << 10;
  options.max_background_compactions = 1;
  auto engine = Engine::Open(dir.path(), options);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  Table table = test::CreateOneFamilyTable(engine->get());
  auto row = [](int i) {
    char buf[16];
    std::snprintf(buf, sizeof(buf), "row%06d", i);
    return std::string(buf);
  };
  ParkedCompaction::Arm();
  for (int i = 0; i < 200; i++) {
    RowMutation m;
    m.Put("f", "q", 1, std::string(100, 'a'));
    ASSERT_TRUE(table.Mutate(WriteOptions{.sync = false}, row(20 * i), m).ok());
  }
  ASSERT_TRUE((*engine)->Flush().ok());
  ASSERT_TRUE(ParkedCompaction::WaitReached());  // the move is in the manifest
  for (int i = 0; i < 2000; i++) {
    RowMutation m;
    m.Put("f", "q", 2, std::string(100, 'b'));
    ASSERT_TRUE(table.Mutate(WriteOptions{.sync = false}, row(2 * i + 1), m).ok());
  }
  ASSERT_TRUE((*engine)->Flush().ok());
  for (int i = 0; i < 10000 && (*engine)->GetStats().tablet_splits == 0; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ((*engine)->GetStats().tablet_splits, 1u);
  ParkedCompaction::Release();
  ASSERT_TRUE((*engine)->Compact().ok());
  auto table_files = [&] {
    size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir.Join("sst"))) {
      n += e.path().extension() == ".sst";
    }
    return n;
  };
  // Compact returns once the work is done; the thread then purges.
  for (int i = 0; i < 10000 && table_files() != (*engine)->GetStats().table_files; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(table_files(), (*engine)->GetStats().table_files);
  EXPECT_EQ(table.ReadRow(ReadOptions(), row(0))->size(), 1u);
  EXPECT_EQ(table.ReadRow(ReadOptions(), row(3999))->size(), 1u);
  ASSERT_TRUE((*engine)->Close().ok());
}

TEST(EngineDropTest, DropUnderConcurrentWritesAndCompactions) {
  test::ScratchDir dir("drop");
  EngineOptions o;
  o.write_buffer_size = 8 << 10;
  o.level0_compaction_trigger = 2;
  o.max_background_compactions = 2;
  auto e = Engine::Open(dir.path(), o);
  ASSERT_TRUE(e.ok());
  ASSERT_TRUE((*e)->CreateTenant("t").ok());
  Tenant tenant = *(*e)->OpenTenant("t");
  TableSchema s;
  s.families = {{.name = "f"}};
  ASSERT_TRUE(tenant.CreateTable("doomed", s).ok());
  ASSERT_TRUE(tenant.CreateTable("kept", s).ok());
  Table doomed = *tenant.OpenTable("doomed");
  Table kept = *tenant.OpenTable("kept");
  std::atomic<bool> stop{false};
  std::atomic<int> kept_rows{0};
  std::atomic<int> refused{0};
  std::thread doomed_writer([&] {
    for (int i = 0; !stop.load(); i++) {
      Status st = doomed.Mutate(WriteOptions{.sync = false}, "r" + std::to_string(i % 3000),
                                RowMutation().Put("f", "q", 1, std::string(50, 'd')));
      if (st.IsNotFound()) {
        refused++;
        continue;
      }
      ASSERT_TRUE(st.ok()) << st.ToString();
      auto r = doomed.ReadRow(ReadOptions(), "r" + std::to_string(i % 3000));
      ASSERT_TRUE(r.ok() || r.status().IsNotFound()) << r.status().ToString();
    }
  });
  std::thread kept_writer([&] {
    for (int i = 0; i < 6000; i++) {
      ASSERT_TRUE(kept.Mutate(WriteOptions{.sync = false}, "r" + std::to_string(i),
                              RowMutation().Put("f", "q", 1, std::string(50, 'k')))
                      .ok());
      kept_rows = i + 1;
    }
  });
  while (kept_rows.load() < 2000) std::this_thread::yield();
  ASSERT_TRUE(tenant.DropTable("doomed").ok());
  kept_writer.join();
  while (refused.load() == 0) std::this_thread::yield();
  stop = true;
  doomed_writer.join();
  ASSERT_TRUE((*e)->Compact().ok());
  ASSERT_TRUE((*e)->Close().ok());
  e = Engine::Open(dir.path(), o);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  tenant = *(*e)->OpenTenant("t");
  EXPECT_EQ(*tenant.ListTables(), std::vector<std::string>{"kept"});
  kept = *tenant.OpenTable("kept");
  for (int i = 0; i < 6000; i += 7) {
    auto r = kept.ReadRow(ReadOptions(), "r" + std::to_string(i));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->size(), 1u) << i;
  }
}

}  // namespace
}  // namespace strata

namespace strata {
namespace {

class EngineSplitTest : public ::testing::Test {
 protected:
  void Open() {
    auto e = Engine::Open(dir_.path(), options_);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(e.value());
    if (engine_->ListTenants()->empty()) {
      ASSERT_TRUE(engine_->CreateTenant("t").ok());
      ASSERT_TRUE(engine_->OpenTenant("t")->CreateTable("tab", TwoGroupSchema()).ok());
    }
    table_ = *engine_->OpenTenant("t")->OpenTable("tab");
  }
  void Reopen() {
    table_ = Table();
    ASSERT_TRUE(engine_->Close().ok());
    engine_.reset();
    Open();
  }
  static std::string Row(int i) {
    char buf[16];
    std::snprintf(buf, sizeof(buf), "row%06d", i);
    return buf;
  }
  static std::string Value(int i, int round) {
    return std::to_string(round) + ":" + std::string(60, static_cast<char>('a' + i % 26));
  }
  // Every row once, in order, with the round's value in both groups.
  void CheckAll(int rows, int round) {
    for (int i = 0; i < rows; i += 37) {
      auto cells = table_.ReadRow(ReadOptions(), Row(i));
      ASSERT_TRUE(cells.ok());
      ASSERT_EQ(cells->size(), 2u) << Row(i);
      EXPECT_EQ((*cells)[0].value, Value(i, round)) << Row(i);
    }
    auto it = table_.Scan(ReadOptions(), ScanSpec());
    ASSERT_TRUE(it.ok());
    int n = 0;
    for (; (*it)->Valid(); (*it)->Next(), n++) {
      ASSERT_EQ((*it)->row(), Row(n));
      ASSERT_EQ((*it)->cells().size(), 2u) << Row(n);
    }
    ASSERT_TRUE((*it)->status().ok());
    EXPECT_EQ(n, rows);
    // A range across tablet boundaries.
    auto part = table_.Scan(ReadOptions(), ScanSpec{.start_row = Row(rows / 3),
                                                    .end_row = Row(2 * rows / 3)});
    ASSERT_TRUE(part.ok());
    n = rows / 3;
    for (; (*part)->Valid(); (*part)->Next(), n++) ASSERT_EQ((*part)->row(), Row(n));
    EXPECT_EQ(n, 2 * rows / 3);
  }

  test::ScratchDir dir_{"split"};
  EngineOptions options_ = [] {
    EngineOptions o;
    o.write_buffer_size = 64 << 10;
    o.tablet_split_size = 256 << 10;
    o.level0_compaction_trigger = 2;
    o.target_file_size = 64 << 10;
    return o;
  }();
  std::unique_ptr<Engine> engine_;
  Table table_;
};

// Split tablets share their parent's files until compactions rewrite them;
// the tenant's disk usage (which its disk quota is checked against) counts
// each file once, as the engine's stats do.
TEST_F(EngineSplitTest, SharedFilesCountOnceInTheTenantsDiskUsage) {
  Open();
  for (int i = 0; i < 12000; i++) {
    RowMutation m;
    m.Put("a", "x", 1, Value(i, 0)).Put("b", "y", 1, "b" + std::to_string(i));
    ASSERT_TRUE(table_.Mutate(WriteOptions{.sync = false}, Row(i), m).ok());
  }
  ASSERT_TRUE(engine_->Compact().ok());
  while (engine_->GetStats().tablet_splits < 1) {
    ASSERT_TRUE(engine_->Flush().ok());
    std::this_thread::yield();
  }
  // Reopen without splits or compactions, so that nothing changes the files
  // while the figures are read (the open refreshes the usage).
  options_.tablet_split_size = 0;
  options_.level0_compaction_trigger = 19;
  ASSERT_NO_FATAL_FAILURE(Reopen());
  auto tablets = table_.GetTabletStats();
  ASSERT_TRUE(tablets.ok());
  uint64_t per_tablet = 0;
  for (const auto& t : *tablets) per_tablet += t.table_bytes;
  const EngineStats st = engine_->GetStats();
  ASSERT_GT(per_tablet, st.table_bytes) << "no file is shared by two tablets";
  auto usage = engine_->OpenTenant("t")->GetStats();
  ASSERT_TRUE(usage.ok());
  EXPECT_EQ(usage->sstable_bytes, st.table_bytes);
}

// Rows written in no order fill level 0 with files that each span nearly
// the whole tablet; the split row still lies near the middle of the rows.
TEST_F(EngineSplitTest, SplitRowIsNearTheMiddleWhenLevelZeroOverlaps) {
  // Written with splits off, so that the files are all there (in level 0)
  // when the one split comes; its halves share every file, so neither
  // splits again.
  options_.tablet_split_size = 0;
  options_.level0_compaction_trigger = 16;  // keep the files in level 0
  Open();
  // Small blocks: the split row is placed from the files' indexes, to
  // within about a block of each file.
  TableSchema schema;
  schema.locality_groups = {{.name = "g", .block_size = 1024}};
  schema.families = {{.name = "f", .locality_group = "g"}};
  ASSERT_TRUE(engine_->OpenTenant("t")->CreateTable("fine", schema).ok());
  std::vector<int> order(6000);
  for (int i = 0; i < static_cast<int>(order.size()); i++) order[i] = i;
  Random rnd(11);
  for (size_t i = order.size() - 1; i > 0; i--) std::swap(order[i], order[rnd.Uniform(i + 1)]);
  {
    Table table = *engine_->OpenTenant("t")->OpenTable("fine");
    for (int i : order) {
      RowMutation m;
      m.Put("f", "q", 1, std::string(100, 'v'));
      ASSERT_TRUE(table.Mutate(WriteOptions{.sync = false}, Row(i), m).ok());
    }
  }
  ASSERT_TRUE(engine_->Flush().ok());
  EXPECT_GE(engine_->GetStats().level_files[0], 3u);
  EXPECT_EQ(engine_->GetStats().level_files[1], 0u);
  options_.tablet_split_size = 256 << 10;
  ASSERT_NO_FATAL_FAILURE(Reopen());
  for (int i = 0; i < 10000 && engine_->GetStats().tablet_splits == 0; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(engine_->GetStats().tablet_splits, 1u);
  auto tablets = engine_->OpenTenant("t")->OpenTable("fine")->GetTabletStats();
  ASSERT_TRUE(tablets.ok());
  ASSERT_EQ(tablets->size(), 2u);
  const std::string split = (*tablets)[1].start_row;
  size_t below = 0;
  for (int i : order) below += Row(i) < split;
  EXPECT_GT(below, order.size() * 2 / 5) << split;
  EXPECT_LT(below, order.size() * 3 / 5) << split;
}

TEST_F(EngineSplitTest, GrowingTableSplitsAndKeepsEveryRow) {
  Open();
  constexpr int kRows = 12000;
  for (int round = 0; round < 2; round++) {
    for (int i = 0; i < kRows; i++) {
      RowMutation m;
      m.Put("a", "x", 1, Value(i, round)).Put("b", "y", 1, "b" + std::to_string(i));
      ASSERT_TRUE(table_.Mutate(WriteOptions{.sync = false}, Row(i), m).ok());
    }
  }
  ASSERT_TRUE(engine_->Compact().ok());
  // Splits follow flushes and compactions on their own thread.
  while (engine_->GetStats().tablet_splits < 2) {
    ASSERT_TRUE(engine_->Flush().ok());
    std::this_thread::yield();
  }
  EngineStats st = engine_->GetStats();
  EXPECT_EQ(st.tablets, 1 + st.tablet_splits);
  // The tablets cover every row once, in order, each holding data (more
  // splits may have come since the stats were read).
  auto tablets = table_.GetTabletStats();
  ASSERT_TRUE(tablets.ok());
  ASSERT_GE(tablets->size(), st.tablets);
  EXPECT_EQ(tablets->front().start_row, "");
  EXPECT_EQ(tablets->back().end_row, "");
  for (size_t i = 0; i < tablets->size(); i++) {
    EXPECT_GT((*tablets)[i].table_bytes, 0u);
    if (i > 0) {
      EXPECT_EQ((*tablets)[i].start_row, (*tablets)[i - 1].end_row);
      EXPECT_LT((*tablets)[i - 1].start_row, (*tablets)[i].start_row);
    }
  }
  ASSERT_NO_FATAL_FAILURE(CheckAll(kRows, 1));
  // Deletes and overwrites land in the new tablets; compactions of each
  // tablet keep to its rows.
  for (int i = 0; i < kRows; i++) {
    RowMutation m;
    m.Put("a", "x", 1, Value(i, 2));
    ASSERT_TRUE(table_.Mutate(WriteOptions{.sync = false}, Row(i), m).ok());
  }
  ASSERT_TRUE(engine_->Compact().ok());
  ASSERT_NO_FATAL_FAILURE(CheckAll(kRows, 2));
  Reopen();
  EXPECT_GE(engine_->GetStats().tablets, 3u);
  ASSERT_NO_FATAL_FAILURE(CheckAll(kRows, 2));
}

TEST_F(EngineSplitTest, SplitsUnderConcurrentWritesAndReadsLoseNothing) {
  options_.max_background_compactions = 2;
  Open();
  constexpr int kRows = 8000;
  constexpr int kWriters = 3;
  std::atomic<bool> stop{false};
  std::atomic<int> bad_reads{0};
  std::thread reader([&] {
    Random rnd(7);
    while (!stop.load()) {
      const int i = static_cast<int>(rnd.Uniform(kRows));
      auto cells = table_.ReadRow(ReadOptions(), Row(i));
      if (!cells.ok()) bad_reads++;
      // A row is written whole: both groups or neither.
      if (cells.ok() && cells->size() != 0 && cells->size() != 2) bad_reads++;
    }
  });
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; w++) {
    writers.emplace_back([&, w] {
      for (int round = 0; round < 3; round++) {
        for (int i = w; i < kRows; i += kWriters) {
          RowMutation m;
          m.Put("a", "x", 1, Value(i, round)).Put("b", "y", 1, "b" + std::to_string(i));
          ASSERT_TRUE(table_.Mutate(WriteOptions{.sync = false}, Row(i), m).ok());
        }
      }
    });
  }
  for (auto& t : writers) t.join();
  stop = true;
  reader.join();
  EXPECT_EQ(bad_reads.load(), 0);
  ASSERT_TRUE(engine_->Compact().ok());
  while (engine_->GetStats().tablet_splits == 0) {
    ASSERT_TRUE(engine_->Flush().ok());
    std::this_thread::yield();
  }
  ASSERT_NO_FATAL_FAILURE(CheckAll(kRows, 2));
  Reopen();
  ASSERT_NO_FATAL_FAILURE(CheckAll(kRows, 2));
}

}  // namespace
}  // namespace strata

namespace strata {
namespace {

// A point read skips a file whose cells, delete markers included, are all
// older than the versions it asks for; the same read with an older range
// reads the file.
TEST(EnginePointReadTest, FilesOlderThanTheReadAreNotRead) {
  test::ScratchDir dir("older");
  test::CountingReadFileSystem fs;
  EngineOptions o;
  o.file_system = &fs;
  auto e = Engine::Open(dir.path(), o);
  ASSERT_TRUE(e.ok());
  ASSERT_TRUE((*e)->CreateTenant("t").ok());
  TableSchema schema;
  schema.locality_groups.push_back({.name = "g", .block_size = 256});  // a block per few rows
  schema.locality_groups.push_back({.name = "other"});
  schema.families.push_back({.name = "f", .locality_group = "g"});
  schema.families.push_back({.name = "h", .locality_group = "other"});
  ASSERT_TRUE((*e)->OpenTenant("t")->CreateTable("tab", schema).ok());
  Table t = *(*e)->OpenTenant("t")->OpenTable("tab");
  for (int i = 0; i < 200; i++) {  // the older file: timestamps 1..5 and a marker at 5
    RowMutation m;
    m.Put("f", "q", 1 + i % 5, std::string(40, 'v')).DeleteCell("f", "gone", 5);
    ASSERT_TRUE(t.Mutate(WriteOptions(), "r" + std::to_string(1000 + i), m).ok());
  }
  ASSERT_TRUE((*e)->Flush().ok());
  RowMutation newer;
  newer.Put("f", "q", 50, "new");
  ASSERT_TRUE(t.Mutate(WriteOptions(), "r1000", newer).ok());
  ASSERT_TRUE((*e)->Flush().ok());
  ASSERT_EQ((*e)->GetStats().table_files, 2u);
  auto read = [&](const std::string& row, uint64_t min_timestamp) {
    Result<std::vector<Cell>> cells =
        t.ReadRow(ReadOptions(), row, RowFilter{.min_timestamp = min_timestamp});
    EXPECT_TRUE(cells.ok());
    return cells.ok() ? cells->size() : size_t{999};
  };
  // Opens both files and reads r1000's blocks in each.
  ASSERT_EQ(read("r1000", 1), 2u);
  ASSERT_EQ(read("r1000", 10), 1u);  // only the newer file's version

  uint64_t before = fs.reads();
  EXPECT_EQ(read("r1150", 6), 0u);  // the older file holds only timestamps up to 5
  EXPECT_EQ(fs.reads(), before) << "a file older than the read was read";
  // A check-and-mutate's conditions: each group's files are judged by the
  // ranges of its own columns (h, in the other group, asks for everything).
  before = fs.reads();
  Result<CheckAndMutateResult> checked = t.CheckAndMutate(
      WriteOptions(), "r1160",
      {Condition::NoCellInRange("f", "q", 6, kMaxTimestamp),
       Condition::NoCellInRange("h", "q", kMinTimestamp, kMaxTimestamp)},
      RowMutation());
  ASSERT_TRUE(checked.ok()) << checked.status().ToString();
  EXPECT_TRUE(checked->applied);
  EXPECT_EQ(fs.reads(), before) << "a condition read a file older than its range";
  before = fs.reads();
  EXPECT_EQ(read("r1174", 5), 1u);  // its one version, at 5
  EXPECT_GT(fs.reads(), before) << "the file the read needs was not read";
  ASSERT_TRUE((*e)->Close().ok());
}

TEST(EngineInMemoryTest, InMemoryGroupsAreReadWithoutTouchingFiles) {
  test::ScratchDir dir("inmemory");
  test::CountingReadFileSystem fs;
  EngineOptions o = test::InMemoryTestOptions(&fs);
  constexpr int kRows = 3000;
  auto write = [&](Table& t, int round) {
    for (int i = 0; i < kRows; i++) {
      RowMutation m;
      m.Put("a", "x", 1, std::to_string(round) + std::string(40, 'a'))
          .Put("b", "y", 1, std::string(100, 'b'));
      ASSERT_TRUE(t.Mutate(WriteOptions{.sync = false}, "row" + std::to_string(i), m).ok());
    }
  };
  auto read_small = [&](Table& t, int round) {
    for (int i = 0; i < kRows; i++) {
      auto cells = t.ReadRow(ReadOptions(), "row" + std::to_string(i),
                             RowFilter{.families = {"a", "c"}});
      ASSERT_TRUE(cells.ok());
      ASSERT_EQ(cells->size(), 1u);
      ASSERT_EQ((*cells)[0].value, std::to_string(round) + std::string(40, 'a'));
    }
  };
  {
    auto e = Engine::Open(dir.path(), o);
    ASSERT_TRUE(e.ok());
    ASSERT_TRUE((*e)->CreateTenant("t").ok());
    ASSERT_TRUE((*e)->OpenTenant("t")->CreateTable("tab", TwoGroupSchema()).ok());
    Table t = *(*e)->OpenTenant("t")->OpenTable("tab");
    write(t, 0);
    write(t, 1);
    ASSERT_TRUE((*e)->Compact().ok());
    EXPECT_GT((*e)->GetStats().table_files, 2u);
    // Flushed and compacted while running: still no file reads.
    const uint64_t before = fs.reads();
    read_small(t, 1);
    EXPECT_EQ(fs.reads(), before);
    // The big group is read from files (its blocks do not fit the cache).
    auto big = t.ReadRow(ReadOptions(), "row7", RowFilter{.families = {"b"}});
    ASSERT_TRUE(big.ok());
    ASSERT_EQ(big->size(), 1u);
    EXPECT_GT(fs.reads(), before);
    ASSERT_TRUE((*e)->Close().ok());
  }
  // After open, reads of the in-memory group never touch a file.
  auto e = Engine::Open(dir.path(), o);
  ASSERT_TRUE(e.ok());
  Table t = *(*e)->OpenTenant("t")->OpenTable("tab");
  const uint64_t after_open = fs.reads();
  for (int pass = 0; pass < 2; pass++) read_small(t, 1);
  auto it = t.Scan(ReadOptions(), ScanSpec{.filter = {.families = {"a"}}});
  ASSERT_TRUE(it.ok());
  int rows = 0;
  for (; (*it)->Valid(); (*it)->Next()) rows++;
  EXPECT_EQ(rows, kRows);
  EXPECT_EQ(fs.reads(), after_open);
}

}  // namespace
}  // namespace strata
