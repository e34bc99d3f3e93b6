// Tablet splits: files shared with the parent counted once, the split row
// near the middle, every row kept as a table grows and under concurrent
// writes and reads, and a split during a trivial move leaving no file behind.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/random.h"
#include "engine/test_hooks.h"
#include "engine_test_util.h"
#include "strata/engine.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata {
namespace {

using test::ScratchDir;
using test::TwoGroupSchema;

// Parks a compaction between its manifest edit and showing its result.
using ParkedCompaction = test::ParkedHook<&engine::test_hooks::after_compaction_edit>;

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
  ASSERT_OK(engine);
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
    ASSERT_OK(table.Mutate(WriteOptions{.sync = false}, row(20 * i), m));
  }
  ASSERT_OK((*engine)->Flush());
  ASSERT_TRUE(ParkedCompaction::WaitReached());  // the move is in the manifest
  for (int i = 0; i < 2000; i++) {
    RowMutation m;
    m.Put("f", "q", 2, std::string(100, 'b'));
    ASSERT_OK(table.Mutate(WriteOptions{.sync = false}, row(2 * i + 1), m));
  }
  ASSERT_OK((*engine)->Flush());
  for (int i = 0; i < 10000 && (*engine)->GetStats().tablet_splits == 0; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ((*engine)->GetStats().tablet_splits, 1u);
  ParkedCompaction::Release();
  ASSERT_OK((*engine)->Compact());
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
  ASSERT_OK((*engine)->Close());
}

class EngineSplitTest : public ::testing::Test {
 protected:
  void Open() {
    auto e = Engine::Open(dir_.path(), options_);
    ASSERT_OK(e);
    engine_ = std::move(e.value());
    if (engine_->ListTenants()->empty()) {
      ASSERT_OK(engine_->CreateTenant("t"));
      ASSERT_OK(engine_->OpenTenant("t")->CreateTable("tab", TwoGroupSchema()));
    }
    table_ = *engine_->OpenTenant("t")->OpenTable("tab");
  }
  void Reopen() {
    table_ = Table();
    ASSERT_OK(engine_->Close());
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
      ASSERT_OK(cells);
      ASSERT_EQ(cells->size(), 2u) << Row(i);
      EXPECT_EQ((*cells)[0].value, Value(i, round)) << Row(i);
    }
    auto it = table_.Scan(ReadOptions(), ScanSpec());
    ASSERT_OK(it);
    int n = 0;
    for (; (*it)->Valid(); (*it)->Next(), n++) {
      ASSERT_EQ((*it)->row(), Row(n));
      ASSERT_EQ((*it)->cells().size(), 2u) << Row(n);
    }
    ASSERT_OK((*it)->status());
    EXPECT_EQ(n, rows);
    // A range across tablet boundaries.
    auto part = table_.Scan(ReadOptions(),
                            ScanSpec{.start_row = Row(rows / 3), .end_row = Row(2 * rows / 3)});
    ASSERT_OK(part);
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
    ASSERT_OK(table_.Mutate(WriteOptions{.sync = false}, Row(i), m));
  }
  ASSERT_OK(engine_->Compact());
  while (engine_->GetStats().tablet_splits < 1) {
    ASSERT_OK(engine_->Flush());
    std::this_thread::yield();
  }
  // Reopen without splits or compactions, so that nothing changes the files
  // while the figures are read (the open refreshes the usage).
  options_.tablet_split_size = 0;
  options_.level0_compaction_trigger = 19;
  ASSERT_NO_FATAL_FAILURE(Reopen());
  auto tablets = table_.GetTabletStats();
  ASSERT_OK(tablets);
  uint64_t per_tablet = 0;
  for (const auto& t : *tablets) per_tablet += t.table_bytes;
  const EngineStats st = engine_->GetStats();
  ASSERT_GT(per_tablet, st.table_bytes) << "no file is shared by two tablets";
  auto usage = engine_->OpenTenant("t")->GetStats();
  ASSERT_OK(usage);
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
  ASSERT_OK(engine_->OpenTenant("t")->CreateTable("fine", schema));
  std::vector<int> order(6000);
  for (int i = 0; i < static_cast<int>(order.size()); i++) order[i] = i;
  Random rnd(11);
  for (size_t i = order.size() - 1; i > 0; i--) std::swap(order[i], order[rnd.Uniform(i + 1)]);
  {
    Table table = *engine_->OpenTenant("t")->OpenTable("fine");
    for (int i : order) {
      RowMutation m;
      m.Put("f", "q", 1, std::string(100, 'v'));
      ASSERT_OK(table.Mutate(WriteOptions{.sync = false}, Row(i), m));
    }
  }
  ASSERT_OK(engine_->Flush());
  EXPECT_GE(engine_->GetStats().level_files[0], 3u);
  EXPECT_EQ(engine_->GetStats().level_files[1], 0u);
  options_.tablet_split_size = 256 << 10;
  ASSERT_NO_FATAL_FAILURE(Reopen());
  for (int i = 0; i < 10000 && engine_->GetStats().tablet_splits == 0; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(engine_->GetStats().tablet_splits, 1u);
  auto tablets = engine_->OpenTenant("t")->OpenTable("fine")->GetTabletStats();
  ASSERT_OK(tablets);
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
      ASSERT_OK(table_.Mutate(WriteOptions{.sync = false}, Row(i), m));
    }
  }
  ASSERT_OK(engine_->Compact());
  // Splits follow flushes and compactions on their own thread.
  while (engine_->GetStats().tablet_splits < 2) {
    ASSERT_OK(engine_->Flush());
    std::this_thread::yield();
  }
  EngineStats st = engine_->GetStats();
  EXPECT_EQ(st.tablets, 1 + st.tablet_splits);
  // The tablets cover every row once, in order, each holding data (more
  // splits may have come since the stats were read).
  auto tablets = table_.GetTabletStats();
  ASSERT_OK(tablets);
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
    ASSERT_OK(table_.Mutate(WriteOptions{.sync = false}, Row(i), m));
  }
  ASSERT_OK(engine_->Compact());
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
          ASSERT_OK(table_.Mutate(WriteOptions{.sync = false}, Row(i), m));
        }
      }
    });
  }
  for (auto& t : writers) t.join();
  stop = true;
  reader.join();
  EXPECT_EQ(bad_reads.load(), 0);
  ASSERT_OK(engine_->Compact());
  while (engine_->GetStats().tablet_splits == 0) {
    ASSERT_OK(engine_->Flush());
    std::this_thread::yield();
  }
  ASSERT_NO_FATAL_FAILURE(CheckAll(kRows, 2));
  Reopen();
  ASSERT_NO_FATAL_FAILURE(CheckAll(kRows, 2));
}

}  // namespace
}  // namespace strata
