// Flushes: memtables written to table files that survive a reopen, the log
// released behind them, and a locality group with a write buffer size of its
// own flushing at that size alone.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "common/file_system.h"
#include "engine_test_util.h"
#include "strata/engine.h"
#include "util/status_matchers.h"

namespace strata {
namespace {

using test::EngineTest;
using test::TwoGroupSchema;

TEST_F(EngineTest, FlushWritesTablesReleasesLogAndSurvivesReopen) {
  options_.write_buffer_size = 64 << 10;
  options_.wal_segment_size = 64 << 10;
  Reopen();
  for (int i = 0; i < 3000; i++) {
    RowMutation m;
    m.Put("a", "x", 1, std::string(40, 'a') + std::to_string(i));
    m.Put("b", "y", 2, std::string(40, 'b') + std::to_string(i));
    ASSERT_OK(table_.Mutate(WriteOptions(), "row" + std::to_string(i), m));
  }
  // Deletes that land in memtables must hide versions already in SSTables.
  EXPECT_GT(engine_->GetStats().flushes, 0u);
  RowMutation del;
  del.DeleteColumn("a", "x");
  ASSERT_OK(table_.Mutate(WriteOptions(), "row7", del));
  RowMutation delrow;
  delrow.DeleteRow();
  ASSERT_OK(table_.Mutate(WriteOptions(), "row8", delrow));
  ASSERT_OK(engine_->Flush());
  EngineStats st = engine_->GetStats();
  EXPECT_GT(st.table_files, 1u);
  EXPECT_GT(st.table_bytes, 0u);
  // Flushed data no longer needs the log: at most the current segment and
  // spares hold records.
  std::vector<std::string> logs;
  ASSERT_OK(FileSystem::Default()->GetChildren(dir_.Join("wal"), &logs));
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
  ASSERT_OK(Put("row0", "a", "x", 3, "newer"));
  EXPECT_EQ(engine_->GetStats().last_sequence, seq + 1);
  Reopen();
  EXPECT_EQ(Read("row0")[0].value, "newer");
}

// A group with a write buffer size of its own flushes at that size while
// the others wait for the engine's; AlterTable sets and clears it, and the
// schema keeps it across a reopen.
TEST_F(EngineTest, GroupWriteBufferSizeFlushesThatGroupOnly) {
  options_.write_buffer_size = 8 << 20;
  Reopen();
  TableSchema schema = TwoGroupSchema();
  schema.locality_groups[0].write_buffer_size = 16 << 10;  // "small", families a and c
  ASSERT_OK(tenant_.CreateTable("own", schema));
  Table t = *tenant_.OpenTable("own");
  auto write = [&](const std::string& family, int from, int n) {
    for (int i = from; i < from + n; i++) {
      RowMutation m;
      m.Put(family, "q", 1, std::string(100, 'v'));
      ASSERT_OK(t.Mutate(WriteOptions(), "row" + std::to_string(i), m));
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
  ASSERT_OK(got);
  ASSERT_EQ(got->locality_groups.size(), 2u);
  EXPECT_EQ(got->locality_groups[0].write_buffer_size, 16u << 10);
  EXPECT_EQ(got->locality_groups[1].write_buffer_size, 0u);
  got->locality_groups[1].write_buffer_size = 16 << 10;
  ASSERT_OK(tenant_.AlterTable("own", *got));
  const uint64_t altered = flushes_settled();
  write("b", 4000, 2000);
  EXPECT_GE(flushes_settled(), altered + 5) << "the altered group did not flush";
  for (int i : {0, 1999, 3999, 5999}) {
    Result<std::vector<Cell>> cells = t.ReadRow(ReadOptions(), "row" + std::to_string(i));
    ASSERT_OK(cells);
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

}  // namespace
}  // namespace strata
