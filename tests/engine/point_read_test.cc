// Point reads: a row mutation seen whole across a memtable switch (scans
// too), bounded retries while memtables keep switching, a row gathered from
// memtables and files on every level, files older than the read skipped, and
// in-memory groups read without touching a file.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/test_hooks.h"
#include "engine_test_util.h"
#include "strata/engine.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata {
namespace {

using test::EngineTest;
using test::TwoGroupSchema;

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
  ASSERT_OK(tenant_.CreateTable("two", TwoGroupSchema()));
  Table t = *tenant_.OpenTable("two");
  auto put = [&](std::vector<std::string> families, const std::string& value) {
    RowMutation m;
    for (const std::string& f : families) m.Put(f, "q", 1, value);
    ASSERT_OK(t.Mutate(WriteOptions(), "r", m));
  };
  put({"a", "b"}, "v1");
  ASSERT_OK(engine_->Flush());
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
      ASSERT_OK(it);
      ASSERT_TRUE((*it)->Valid());
      for (const Cell& c : (*it)->cells()) seen[c.family] = c.value;
      return;
    }
    Result<std::vector<Cell>> cells = t.ReadRow(ReadOptions(), "r", RowFilter());
    ASSERT_OK(cells);
    for (const Cell& c : *cells) seen[c.family] = c.value;
  });
  while (!g_read_in_hook) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  put({"a"}, "x");
  ASSERT_OK(engine_->Flush());  // switches group "small" only: "big" is empty
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
  ASSERT_OK(tenant_.CreateTable("two", TwoGroupSchema()));
  Table t = *tenant_.OpenTable("two");
  RowMutation m;
  m.Put("a", "q", 1, "v").Put("b", "q", 1, "v");
  ASSERT_OK(t.Mutate(WriteOptions(), "r", m));
  std::atomic<bool> stop{false};
  std::thread switcher([&] {
    RowMutation a;
    a.Put("a", "q", 2, "w");
    while (!stop) {
      ASSERT_OK(t.Mutate(WriteOptions(), "s", a));
      ASSERT_OK(engine_->Flush());
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
  ASSERT_OK(cells);
  EXPECT_EQ(cells->size(), 2u);
  EXPECT_LE(g_view_attempts.load(), 5);
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
    ASSERT_OK(put("wide", "b", q(i), 1, std::string(60, 'x') + q(i)));
    want[q(i)][1] = std::string(60, 'x') + q(i);
  }
  ASSERT_OK(put("before", "b", "q", 1, "b"));
  ASSERT_OK(put("zafter", "b", "q", 1, "z"));
  ASSERT_OK(engine_->Compact());
  // The wide row is far past target_file_size, and in one file.
  EXPECT_EQ(engine_->GetStats().table_files, 2u);
  // Newer versions and deletes in a level-0 file and in the memtable.
  for (int i = 0; i < 1500; i += 7) {
    ASSERT_OK(put("wide", "b", q(i), 2, "two" + q(i)));
    want[q(i)][2] = "two" + q(i);
  }
  for (int i = 3; i < 1500; i += 11) {
    RowMutation m;
    m.DeleteColumn("b", q(i));
    ASSERT_OK(table_.Mutate(unsynced, "wide", m));
    want.erase(q(i));
  }
  ASSERT_OK(engine_->Flush());
  for (int i = 5; i < 1500; i += 13) {
    RowMutation m;
    m.DeleteCell("b", q(i), 1);
    ASSERT_OK(table_.Mutate(unsynced, "wide", m));
    if (want.count(q(i))) {
      want[q(i)].erase(1);
      if (want[q(i)].empty()) want.erase(q(i));
    }
  }
  ASSERT_OK(put("wide", "a", "in-memtable", 3, "m"));
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
  ASSERT_OK(engine_->Compact());
  check();
  RowMutation del;
  del.DeleteRow(2);
  ASSERT_OK(table_.Mutate(WriteOptions(), "wide", del));
  const std::vector<Cell> after = Read("wide");
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0].qualifier, "in-memtable");
}

// A point read skips a file whose cells, delete markers included, are all
// older than the versions it asks for; the same read with an older range
// reads the file.
TEST(EnginePointReadTest, FilesOlderThanTheReadAreNotRead) {
  test::ScratchDir dir("older");
  test::CountingReadFileSystem fs;
  EngineOptions o;
  o.file_system = &fs;
  auto e = Engine::Open(dir.path(), o);
  ASSERT_OK(e);
  ASSERT_OK((*e)->CreateTenant("t"));
  TableSchema schema;
  schema.locality_groups.push_back({.name = "g", .block_size = 256});  // a block per few rows
  schema.locality_groups.push_back({.name = "other"});
  schema.families.push_back({.name = "f", .locality_group = "g"});
  schema.families.push_back({.name = "h", .locality_group = "other"});
  ASSERT_OK((*e)->OpenTenant("t")->CreateTable("tab", schema));
  Table t = *(*e)->OpenTenant("t")->OpenTable("tab");
  for (int i = 0; i < 200; i++) {  // the older file: timestamps 1..5 and a marker at 5
    RowMutation m;
    m.Put("f", "q", 1 + i % 5, std::string(40, 'v')).DeleteCell("f", "gone", 5);
    ASSERT_OK(t.Mutate(WriteOptions(), "r" + std::to_string(1000 + i), m));
  }
  ASSERT_OK((*e)->Flush());
  RowMutation newer;
  newer.Put("f", "q", 50, "new");
  ASSERT_OK(t.Mutate(WriteOptions(), "r1000", newer));
  ASSERT_OK((*e)->Flush());
  ASSERT_EQ((*e)->GetStats().table_files, 2u);
  auto read = [&](const std::string& row, uint64_t min_timestamp) {
    Result<std::vector<Cell>> cells =
        t.ReadRow(ReadOptions(), row, RowFilter{.min_timestamp = min_timestamp});
    EXPECT_OK(cells);
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
  Result<CheckAndMutateResult> checked =
      t.CheckAndMutate(WriteOptions(), "r1160",
                       {Condition::NoCellInRange("f", "q", 6, kMaxTimestamp),
                        Condition::NoCellInRange("h", "q", kMinTimestamp, kMaxTimestamp)},
                       RowMutation());
  ASSERT_OK(checked);
  EXPECT_TRUE(checked->applied);
  EXPECT_EQ(fs.reads(), before) << "a condition read a file older than its range";
  before = fs.reads();
  EXPECT_EQ(read("r1174", 5), 1u);  // its one version, at 5
  EXPECT_GT(fs.reads(), before) << "the file the read needs was not read";
  ASSERT_OK((*e)->Close());
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
      ASSERT_OK(t.Mutate(WriteOptions{.sync = false}, "row" + std::to_string(i), m));
    }
  };
  auto read_small = [&](Table& t, int round) {
    for (int i = 0; i < kRows; i++) {
      auto cells =
          t.ReadRow(ReadOptions(), "row" + std::to_string(i), RowFilter{.families = {"a", "c"}});
      ASSERT_OK(cells);
      ASSERT_EQ(cells->size(), 1u);
      ASSERT_EQ((*cells)[0].value, std::to_string(round) + std::string(40, 'a'));
    }
  };
  {
    auto e = Engine::Open(dir.path(), o);
    ASSERT_OK(e);
    ASSERT_OK((*e)->CreateTenant("t"));
    ASSERT_OK((*e)->OpenTenant("t")->CreateTable("tab", TwoGroupSchema()));
    Table t = *(*e)->OpenTenant("t")->OpenTable("tab");
    write(t, 0);
    write(t, 1);
    ASSERT_OK((*e)->Compact());
    EXPECT_GT((*e)->GetStats().table_files, 2u);
    // Flushed and compacted while running: still no file reads.
    const uint64_t before = fs.reads();
    read_small(t, 1);
    EXPECT_EQ(fs.reads(), before);
    // The big group is read from files (its blocks do not fit the cache).
    auto big = t.ReadRow(ReadOptions(), "row7", RowFilter{.families = {"b"}});
    ASSERT_OK(big);
    ASSERT_EQ(big->size(), 1u);
    EXPECT_GT(fs.reads(), before);
    ASSERT_OK((*e)->Close());
  }
  // After open, reads of the in-memory group never touch a file.
  auto e = Engine::Open(dir.path(), o);
  ASSERT_OK(e);
  Table t = *(*e)->OpenTenant("t")->OpenTable("tab");
  const uint64_t after_open = fs.reads();
  for (int pass = 0; pass < 2; pass++) read_small(t, 1);
  auto it = t.Scan(ReadOptions(), ScanSpec{.filter = {.families = {"a"}}});
  ASSERT_OK(it);
  int rows = 0;
  for (; (*it)->Valid(); (*it)->Next()) rows++;
  EXPECT_EQ(rows, kRows);
  EXPECT_EQ(fs.reads(), after_open);
}

}  // namespace
}  // namespace strata
