// Scans: rows in order across memtables and files, with row ranges and
// filters; one snapshot while writes go on; one iterator seeking anywhere in
// its range across tablets and levels; a scan of one locality group opens
// only that group's files.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "common/fault_injection_fs.h"
#include "engine_test_util.h"
#include "strata/engine.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata {
namespace {

using test::EngineTest;

std::vector<std::pair<std::string, size_t>> ScanAll(Table& table, const ScanSpec& spec) {
  std::vector<std::pair<std::string, size_t>> rows;
  auto it = table.Scan(ReadOptions(), spec);
  EXPECT_OK(it);
  if (!it.ok()) return rows;
  for (; (*it)->Valid(); (*it)->Next()) rows.emplace_back((*it)->row(), (*it)->cells().size());
  EXPECT_OK((*it)->status());
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
    ASSERT_OK(table_.Mutate(WriteOptions(), key(i), m));
  }
  // Delete every 10th row; drop family a from every 7th.
  for (int i = 0; i < 600; i += 10) {
    ASSERT_OK(table_.Mutate(WriteOptions(), key(i), RowMutation().DeleteRow()));
  }
  for (int i = 0; i < 600; i += 7) {
    ASSERT_OK(table_.Mutate(WriteOptions(), key(i), RowMutation().DeleteColumn("a", "x")));
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
  EXPECT_TRUE(table_.Scan(ReadOptions(), ScanSpec{.start_row = "b", .end_row = "a"})
                  .status()
                  .IsInvalidArgument());
  // The same after compaction and reopen.
  ASSERT_OK(engine_->Compact());
  EXPECT_EQ(ScanAll(table_, ScanSpec()), rows);
  Reopen();
  EXPECT_EQ(ScanAll(table_, ScanSpec()), rows);
}

TEST_F(EngineTest, ScanSeesOneSnapshotWhileWritesGoOn) {
  for (int i = 0; i < 100; i++) ASSERT_OK(Put("r" + std::to_string(i), "a", "x", 1, "v"));
  auto it = table_.Scan(ReadOptions(), ScanSpec());
  ASSERT_OK(it);
  // Writes after the scan began are not seen by it.
  for (int i = 0; i < 100; i++) ASSERT_OK(Put("s" + std::to_string(i), "a", "x", 1, "v"));
  ASSERT_OK(table_.Mutate(WriteOptions(), "r5", RowMutation().DeleteRow()));
  size_t n = 0;
  for (; (*it)->Valid(); (*it)->Next()) {
    EXPECT_EQ((*it)->row()[0], 'r');
    n++;
  }
  EXPECT_EQ(n, 100u);
}

TEST_F(EngineTest, OneIteratorSeeksAnywhereInItsRangeAcrossTabletsAndLevels) {
  options_.write_buffer_size = 64 << 10;
  options_.tablet_split_size = 256 << 10;
  options_.level0_compaction_trigger = 2;
  options_.target_file_size = 64 << 10;
  Reopen();
  auto key = [](int i) {
    char buf[16];
    std::snprintf(buf, sizeof(buf), "k%05d", i);
    return std::string(buf);
  };
  constexpr int kRows = 8000;
  for (int i = 0; i < kRows; i++) {
    RowMutation m;
    m.Put("a", "x", 1, std::string(60, static_cast<char>('a' + i % 26)))
        .Put("b", "y", 2, std::to_string(i));
    ASSERT_OK(table_.Mutate(WriteOptions{.sync = false}, key(i), m));
  }
  ASSERT_OK(engine_->Compact());
  for (int n = 0; engine_->GetStats().tablet_splits == 0 && n < 1000; n++) {
    ASSERT_OK(engine_->Flush());
  }
  ASSERT_GT(engine_->GetStats().tablet_splits, 0u);
  ASSERT_OK(engine_->Compact());
  // Deletes of every 10th row stay in the memtable, over the files' rows.
  for (int i = 0; i < kRows; i += 10) {
    ASSERT_OK(table_.Mutate(WriteOptions{.sync = false}, key(i), RowMutation().DeleteRow()));
  }
  auto tablets = table_.GetTabletStats();
  ASSERT_OK(tablets);
  ASSERT_GT(tablets->size(), 1u);

  auto it = table_.Scan(ReadOptions(), ScanSpec{.start_row = key(1000), .end_row = key(7000)});
  ASSERT_OK(it);
  RowIterator& rows = **it;
  // Where each step must land: the row (-1: !Valid()).
  auto expect_at = [&](int i, const char* step) {
    SCOPED_TRACE(step);
    ASSERT_OK(rows.status());
    if (i < 0) {
      EXPECT_FALSE(rows.Valid());
      return;
    }
    ASSERT_TRUE(rows.Valid());
    EXPECT_EQ(rows.row(), key(i));
    // Family a (group "small") before family b (group "big"), as ReadRow
    // orders them.
    ASSERT_EQ(rows.cell_views().size(), 2u);
    EXPECT_EQ(rows.cell_views()[0].family, "a");
    EXPECT_EQ(rows.cell_views()[0].value, std::string(60, static_cast<char>('a' + i % 26)));
    EXPECT_EQ(rows.cell_views()[1].family, "b");
    EXPECT_EQ(rows.cell_views()[1].timestamp, 2u);
    EXPECT_EQ(rows.cell_views()[1].value, std::to_string(i));
    ASSERT_EQ(rows.cells().size(), 2u);
    EXPECT_EQ(rows.cells()[1].value, std::to_string(i));
  };
  expect_at(1001, "first row: start_row 1000 is deleted");
  rows.Seek(key(4000));
  expect_at(4001, "seek to a deleted row");
  rows.Next();
  expect_at(4002, "next");
  rows.Seek(key(1500) + "x");
  expect_at(1501, "backwards, between rows");
  rows.Seek("");
  expect_at(1001, "the empty row: the start of the range");
  rows.Seek("a");
  expect_at(1001, "below start_row");
  rows.Seek(key(6999));
  expect_at(6999, "the last row of the range");
  rows.Next();
  expect_at(-1, "past end_row");
  rows.Seek(key(3333));
  expect_at(3333, "a seek after the end");
  rows.Seek(key(7000));
  expect_at(-1, "end_row");
  rows.Seek("zzz");
  expect_at(-1, "beyond every row");
  // Every tablet boundary, walked across by Next after a seek just below it.
  for (const TabletStats& t : *tablets) {
    if (t.start_row.empty() || t.start_row <= key(1000) || t.start_row >= key(6990)) continue;
    const int first = std::stoi(t.start_row.substr(1));
    rows.Seek(key(first - 3));
    for (int i = first - 3; i < first + 3; i++) {
      if (i % 10 == 0) continue;
      expect_at(i, "across a tablet boundary");
      rows.Next();
    }
    // And back across it with Prev, from a row that is not deleted.
    const int top = (first + 3) % 10 == 0 ? first + 2 : first + 3;
    rows.Seek(key(top));
    for (int i = top; i > first - 3; i--) {
      if (i % 10 == 0) continue;
      expect_at(i, "back across a tablet boundary");
      rows.Prev();
    }
  }
  // Prev steps over deleted rows, stops at start_row, and Next goes on
  // from where it lands.
  rows.Seek(key(4001));
  rows.Prev();
  expect_at(3999, "prev over a deleted row");
  rows.Prev();
  expect_at(3998, "prev");
  rows.Next();
  expect_at(3999, "next after prev");
  rows.Seek(key(1001));
  rows.Prev();
  expect_at(-1, "prev from the first row");
  rows.Seek(key(6999));
  int walked = 0;
  for (int i = 6999; rows.Valid(); rows.Prev(), walked++) {
    if (i % 10 == 0) i--;
    expect_at(i--, "the whole range backwards");
    if (HasFatalFailure()) return;
  }
  ASSERT_OK(rows.status());
  EXPECT_EQ(walked, 6000 - 600);
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
    ASSERT_OK(e);
    ASSERT_OK((*e)->CreateTenant("t"));
    ASSERT_OK((*e)->OpenTenant("t")->CreateTable("tab", schema));
    Table t = *(*e)->OpenTenant("t")->OpenTable("tab");
    for (int i = 0; i < 2000; i++) {
      RowMutation m;
      m.Put("l", "big", 1, std::string(500, 'x'));
      if (i % 20 == 0) m.Put("s", "flag", 1, "1");
      ASSERT_OK(t.Mutate(WriteOptions(), "row" + std::to_string(i), m));
    }
    ASSERT_OK((*e)->Flush());
    ASSERT_OK((*e)->Close());
  }
  auto e = Engine::Open(dir.path(), o);
  ASSERT_OK(e);
  Table t = *(*e)->OpenTenant("t")->OpenTable("tab");
  const uint64_t opens_before = fs.OpCount(FaultOp::kOpen);
  const uint64_t reads_before = fs.OpCount(FaultOp::kRead);
  auto it = t.Scan(ReadOptions(), ScanSpec{.filter = {.families = {"s"}}});
  ASSERT_OK(it);
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
