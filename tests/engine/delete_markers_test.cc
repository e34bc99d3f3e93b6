// What flushes and compactions drop: versions a newer write or a delete
// marker hides, and the markers themselves once no older file holds their
// rows, without bringing a deleted cell back.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "common/file_system.h"
#include "engine_test_util.h"
#include "sstable/table_reader.h"
#include "strata/engine.h"
#include "util/status_matchers.h"

namespace strata {
namespace {

using test::EngineTest;

TEST_F(EngineTest, CompactionToTheBottomDropsDeletedDataAndMarkers) {
  options_.write_buffer_size = 64 << 10;
  Reopen();
  for (int i = 0; i < 2000; i++) {
    ASSERT_OK(Put("row" + std::to_string(i), "b", "y", 1, std::string(100, 'v')));
  }
  ASSERT_OK(engine_->Flush());
  EXPECT_GT(engine_->GetStats().table_bytes, 200000u);
  for (int i = 0; i < 2000; i++) {
    RowMutation m;
    if (i % 2 == 0) {
      m.DeleteRow();
    } else {
      m.DeleteColumn("b", "y");
    }
    ASSERT_OK(table_.Mutate(WriteOptions(), "row" + std::to_string(i), m));
  }
  ASSERT_OK(engine_->Compact());
  // Nothing is left: the versions were hidden and the markers had nothing
  // older below them.
  EngineStats st = engine_->GetStats();
  EXPECT_EQ(st.table_files, 0u);
  EXPECT_EQ(st.table_bytes, 0u);
  for (int i = 0; i < 2000; i += 97) EXPECT_TRUE(Read("row" + std::to_string(i)).empty());
  // Replaced files are gone from disk too (once no reader holds them).
  std::vector<std::string> names;
  ASSERT_OK(FileSystem::Default()->GetChildren(dir_.Join("sst"), &names));
  EXPECT_TRUE(names.empty()) << names.size() << " files left, e.g. " << names[0];
  Reopen();
  EXPECT_TRUE(Read("row1").empty());
  ASSERT_OK(Put("row1", "b", "y", 1, "back"));
  EXPECT_EQ(Read("row1").size(), 1u);
}

TEST_F(EngineTest, FlushWritesOnlyWhatTheMemtableDoesNotHide) {
  for (int i = 0; i < 1000; i++) {
    ASSERT_OK(Put("k", "b", "y", 7, std::string(100, 'a' + i % 26)));  // overwrites
    ASSERT_OK(Put("d" + std::to_string(i), "b", "y", 7, std::string(100, 'x')));
  }
  for (int i = 0; i < 1000; i++) {
    ASSERT_OK(table_.Mutate(WriteOptions(), "d" + std::to_string(i),
                            RowMutation().DeleteColumn("b", "y")));
  }
  ASSERT_OK(engine_->Flush());
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
    ASSERT_OK(table_.Mutate(WriteOptions(), "hot", m));
    ASSERT_OK(table_.Mutate(WriteOptions(), "hot", RowMutation().DeleteColumn("b", "lock", ts)));
  }
  // Written after the newest marker, at a timestamp below it: still visible.
  ASSERT_OK(Put("hot", "b", "lock", 500, "late"));
  ASSERT_OK(Put("hot", "b", "other", 3, "o"));
  ASSERT_OK(engine_->Flush());
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
  ASSERT_OK(Put("k", "b", "y", 5, "v5"));
  ASSERT_OK(Put("k", "c", "z", 1, "z1"));
  ASSERT_OK(engine_->Compact());  // level 1: k/b/y@5, k/c/z@1
  RowMutation m;
  m.Put("c", "z", 3, "z3").DeleteColumn("c", "z", 2);
  ASSERT_OK(table_.Mutate(WriteOptions(), "k", m));
  ASSERT_EQ(Read("k").size(), 2u);
  ASSERT_OK(engine_->Flush());
  ASSERT_EQ(Read("k").size(), 2u);
  // The new file, k/c/z@3 and the marker k/c/z@2, ends before k/c/z@1.
  ASSERT_OK(engine_->Compact());
  std::vector<Cell> cells = Read("k");
  ASSERT_EQ(cells.size(), 2u);
  EXPECT_EQ(cells[1].value, "z3");

  ASSERT_OK(table_.Mutate(WriteOptions(), "k", RowMutation().DeleteRow()));
  // The row marker's file holds a key of the row before every family's.
  ASSERT_OK(engine_->Compact());
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
    ASSERT_OK(Put("new" + std::to_string(i), "b", "lock", 7, std::string(50, 'l')));
    ASSERT_OK(
        table_.Mutate(WriteOptions(), "new" + std::to_string(i), DeleteOfKind(i, "b", "lock", 7)));
  }
  ASSERT_OK(engine_->Flush());
  EngineStats st = engine_->GetStats();
  EXPECT_EQ(st.flushes, 2u);  // both groups: the row deletes went to each
  EXPECT_EQ(st.table_files, 0u);
  EXPECT_EQ(st.flush_bytes_written, 0u);
  EXPECT_TRUE(Read("new5").empty());

  for (int i = 0; i < 100; i++) {
    ASSERT_OK(Put("old" + std::to_string(i), "b", "y", 1, "v" + std::to_string(i)));
  }
  ASSERT_OK(engine_->Flush());
  ASSERT_EQ(engine_->GetStats().table_files, 1u);
  for (int i = 0; i < 100; i += 2) {
    ASSERT_OK(
        table_.Mutate(WriteOptions(), "old" + std::to_string(i), DeleteOfKind(i / 2, "b", "y", 1)));
    ASSERT_OK(Put("new" + std::to_string(i), "b", "lock", 8, "l"));
    ASSERT_OK(table_.Mutate(WriteOptions(), "new" + std::to_string(i),
                            RowMutation().DeleteColumn("b", "lock")));
  }
  ASSERT_OK(engine_->Flush());
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
  for (int i = 0; i < 200; i += 2) ASSERT_OK(Put(key(i), "b", "y", 1, std::string(100, 'o')));
  ASSERT_OK(engine_->Compact());
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
  // The compaction asks the deep file's row bloom; a false positive keeps
  // that row's marker. Count the odd rows the bloom cannot rule out.
  int odd_rows_maybe_deep = 0;
  {
    std::vector<std::string> names;
    ASSERT_OK(FileSystem::Default()->GetChildren(dir_.Join("sst"), &names));
    ASSERT_EQ(names.size(), 1u);
    const std::string path = dir_.Join("sst") + "/" + names[0];
    std::unique_ptr<RandomAccessFile> file;
    ASSERT_OK(FileSystem::Default()->NewRandomAccessFile(path, &file));
    Result<uint64_t> size = file->Size();
    ASSERT_OK(size);
    auto deep = sstable::TableReader::Open({}, std::move(file), *size, path);
    ASSERT_OK(deep);
    for (int i = 1; i < 200; i += 2) {
      if ((*deep)->RowMayMatch(key(i))) odd_rows_maybe_deep++;
    }
  }
  // Odd rows and some even ones, put in one level-0 file and deleted in the
  // next: the second flush starts a compaction of both into level 1, whose
  // range the deep file overlaps.
  for (int i = 1; i < 200; i += 2) ASSERT_OK(Put(key(i), "b", "y", 2, "new"));
  ASSERT_OK(engine_->Flush());
  for (int i = 1; i < 200; i += 2) {
    ASSERT_OK(table_.Mutate(WriteOptions(), key(i), DeleteOfKind(i / 2, "b", "y", 2)));
  }
  ASSERT_OK(engine_->Flush());
  ASSERT_TRUE(settled([&] { return levels()[0] == 0; }));
  // Nothing of the odd rows is left: no level-1 file (but for markers of
  // rows the deep file's bloom answered "maybe" for).
  EXPECT_EQ(levels()[1], odd_rows_maybe_deep > 0 ? 1u : 0u) << odd_rows_maybe_deep;
  for (int i = 0; i < 10; i++) {
    EXPECT_EQ(Read(key(i)).size(), i % 2 == 0 ? 1u : 0u) << i;
  }

  // Deletes of even rows keep their markers through the same compaction.
  for (int i = 0; i < 200; i += 4) {
    ASSERT_OK(Put(key(i), "b", "y", 3, "newer"));
  }
  ASSERT_OK(engine_->Flush());
  for (int i = 0; i < 200; i += 4) {
    RowMutation m;
    m.DeleteColumn("b", "y");
    ASSERT_OK(table_.Mutate(WriteOptions(), key(i), m));
  }
  ASSERT_OK(engine_->Flush());
  ASSERT_TRUE(settled([&] { return levels()[0] == 0; }));
  auto check = [&] {
    for (int i = 0; i < 200; i++) {
      EXPECT_EQ(Read(key(i)).size(), i % 2 == 0 && i % 4 != 0 ? 1u : 0u) << i;
    }
  };
  check();
  Reopen();
  check();
  ASSERT_OK(engine_->Compact());
  check();
}

}  // namespace
}  // namespace strata
