// Scans: rows in order across memtables and files, with row ranges and
// filters; one snapshot while writes go on; a scan of one locality group
// opens only that group's files.
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
