// Compactions: the compaction filter's view and decisions, the block cache
// (inputs read past it, outputs neither cached nor opened, so the blocks
// readers cached stay), Engine::Compact's whole-level steps, parallel
// compactions, and the rate limit (its pace, and neither Close nor a drop
// held off by a compaction it slows).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/random.h"
#include "engine/manifest.h"
#include "engine/tablet.h"
#include "engine_test_util.h"
#include "strata/compaction_filter.h"
#include "strata/engine.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata {
namespace {

using test::EngineTest;
using test::ExpectOneCellPerRow;

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
      ASSERT_OK(table_.Mutate(WriteOptions(), "row" + std::to_string(i), m));
    }
    ASSERT_OK(engine_->Flush());
  }
  ASSERT_OK(engine_->Compact());
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

// A tenant's own filter (Tenant::SetCompactionFilter) replaces the
// engine's for its tables only, from the next compaction on; removing it
// brings the engine's back.
TEST_F(EngineTest, TenantsCompactionFilterReplacesTheEnginesForItsTables) {
  auto engine_filter = std::make_shared<KeepNewest>(3);
  options_.compaction_filter = engine_filter;
  Reopen();
  ASSERT_OK(engine_->CreateTenant("other"));
  Tenant other = *engine_->OpenTenant("other");
  ASSERT_OK(other.CreateTable("tab", test::TwoGroupSchema()));
  Table other_table = *other.OpenTable("tab");
  auto tenant_filter = std::make_shared<KeepNewest>(1);
  ASSERT_OK(tenant_.SetCompactionFilter(tenant_filter));
  for (uint64_t ts = 1; ts <= 4; ts++) {
    RowMutation m;
    m.Put("a", "x", ts, "v" + std::to_string(ts));
    ASSERT_OK(table_.Mutate(WriteOptions(), "r", m));
    ASSERT_OK(other_table.Mutate(WriteOptions(), "r", m));
    ASSERT_OK(engine_->Flush());
  }
  ASSERT_OK(engine_->Compact());
  EXPECT_EQ(Read("r").size(), 1u);  // the tenant's filter: the newest only
  auto others = other_table.ReadRow(ReadOptions(), "r", RowFilter());
  ASSERT_OK(others);
  EXPECT_EQ(others->size(), 3u);  // the engine's filter: the newest three
  EXPECT_GT(tenant_filter->calls_.load(), 0);

  ASSERT_OK(tenant_.SetCompactionFilter(nullptr));
  EXPECT_TRUE(Tenant().SetCompactionFilter(nullptr).IsInvalidArgument());
}

// Creates tenant "reader" with table "rt" of 300 rows in one flushed file
// of small blocks (the cache's 16 shards of 16 KiB each hold some), and
// reads every row, so its blocks are in the block cache.
void CacheAReadersBlocks(Engine* engine, Tenant* reader, Table* rt) {
  ASSERT_OK(engine->CreateTenant("reader"));
  *reader = *engine->OpenTenant("reader");
  TableSchema schema;
  schema.locality_groups = {{.name = "g", .block_size = 1024}};
  schema.families = {{.name = "f", .locality_group = "g"}};
  ASSERT_OK(reader->CreateTable("rt", schema));
  *rt = *reader->OpenTable("rt");
  Random rnd(300);  // incompressible values
  for (int i = 0; i < 300; i++) {
    RowMutation m;
    m.Put("f", "q", 1, rnd.RandomBytes(100));
    ASSERT_OK(rt->Mutate(WriteOptions(), "r" + std::to_string(i), m));
  }
  ASSERT_OK(engine->Flush());
  for (int i = 0; i < 300; i++) ASSERT_OK(rt->ReadRow(ReadOptions(), "r" + std::to_string(i)));
  ASSERT_GT(reader->GetStats()->block_cache_bytes, 20000u);
}

// Compaction reads its inputs past the block cache: one tenant's
// compactions do not evict the blocks another tenant's readers use (the
// block cache is engine-wide).
TEST_F(EngineTest, CompactionDoesNotEvictReadersBlocks) {
  options_.block_cache_size = 256 << 10;
  options_.level0_compaction_trigger = 4;
  Reopen();
  Tenant reader;
  Table rt;
  ASSERT_NO_FATAL_FAILURE(CacheAReadersBlocks(engine_.get(), &reader, &rt));
  const uint64_t cached = reader.GetStats()->block_cache_bytes;
  Random rnd(301);  // incompressible values

  // Four overlapping files of about 130 KB each in table tab's group "big"
  // (not in memory, 16 KiB blocks): the fourth flush starts a compaction
  // that reads about twice the cache's size.
  const uint64_t compactions = engine_->GetStats().compactions;
  for (int round = 0; round < 4; round++) {
    for (int i = 0; i < 1000; i++) {
      ASSERT_OK(Put("row" + std::to_string(i), "b", "y", 1 + round, rnd.RandomBytes(100)));
    }
    ASSERT_OK(engine_->Flush());
  }
  for (int i = 0; i < 10000 && engine_->GetStats().compactions == compactions; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_GT(engine_->GetStats().compactions, compactions);
  EXPECT_GT(engine_->GetStats().compaction_bytes_read, 400000u);
  EXPECT_EQ(reader.GetStats()->block_cache_bytes, cached);
  // Scans, like point reads, fill it (its first block, pinned while the scan
  // stands on it; a 16 KiB block outgrows a 16 KiB shard once let go).
  EXPECT_EQ(tenant_.GetStats()->block_cache_bytes, 0u);
  auto scan = table_.Scan(ReadOptions(), ScanSpec());
  ASSERT_OK(scan);
  EXPECT_GT(tenant_.GetStats()->block_cache_bytes, 0u);
  size_t rows = 0;
  for (; (*scan)->Valid(); (*scan)->Next()) rows++;
  ASSERT_OK((*scan)->status());
  EXPECT_EQ(rows, 1000u);
}

// A scan adds at most a quarter of the block cache between seeks, so one
// long scan leaves most of what point reads cached; each Seek lets it add
// another quarter.
TEST_F(EngineTest, LongScanAddsAtMostAQuarterOfTheBlockCache) {
  options_.block_cache_size = 2 << 20;
  Reopen();
  Tenant reader;
  Table rt;
  ASSERT_NO_FATAL_FAILURE(CacheAReadersBlocks(engine_.get(), &reader, &rt));
  const uint64_t cached = reader.GetStats()->block_cache_bytes;
  Random rnd(302);  // incompressible values
  // About 4 MiB in table tab's group "big" (16 KiB blocks): twice the cache.
  WriteOptions unsynced;
  unsynced.sync = false;
  for (int i = 0; i < 40000; i++) {
    char row[16];
    std::snprintf(row, sizeof(row), "row%06d", i);
    RowMutation m;
    m.Put("b", "y", 1, rnd.RandomBytes(100));
    ASSERT_OK(table_.Mutate(unsynced, row, m));
  }
  ASSERT_OK(engine_->Compact());
  const uint64_t quarter = (2u << 20) / 4;
  const uint64_t block = 17 << 10;  // a 16 KiB block's charge, and some

  auto scan = table_.Scan(ReadOptions(), ScanSpec());
  ASSERT_OK(scan);
  size_t rows = 0;
  for (; (*scan)->Valid(); (*scan)->Next()) rows++;
  ASSERT_OK((*scan)->status());
  EXPECT_EQ(rows, 40000u);
  const uint64_t after_scan = tenant_.GetStats()->block_cache_bytes;
  EXPECT_GT(after_scan, quarter / 2);
  EXPECT_LE(after_scan, quarter + block);
  // The reader's blocks stayed.
  EXPECT_EQ(reader.GetStats()->block_cache_bytes, cached);

  // A seek to the middle refills the budget: the walk from there adds blocks
  // the first scan left out (it stopped adding a quarter of the way in).
  (*scan)->Seek("row020000");
  ASSERT_TRUE((*scan)->Valid());
  for (int i = 0; i < 2000 && (*scan)->Valid(); i++) (*scan)->Next();
  ASSERT_OK((*scan)->status());
  EXPECT_GT(tenant_.GetStats()->block_cache_bytes, after_scan + 8 * block);
}

// Writes b:y at `ts` to the rows row(0)..row(n - 1), each value a new
// value(), unsynced, and flushes after the first half and at the end: two
// level-0 files, so that their compaction merges (a file alone would move
// down whole).
void WriteInTwoFlushes(Engine* engine, Table* table, int n, uint64_t ts,
                       const std::function<std::string(int)>& row,
                       const std::function<std::string()>& value) {
  WriteOptions unsynced;
  unsynced.sync = false;
  for (int i = 0; i < n; i++) {
    RowMutation m;
    m.Put("b", "y", ts, value());
    ASSERT_OK(table->Mutate(unsynced, row(i), m));
    if (i == n / 2 - 1) {
      ASSERT_OK(engine->Flush());
    }
  }
  ASSERT_OK(engine->Flush());
}

// Engine::Compact merges every level above the deepest one holding data
// into it in one compaction, so each byte it writes is written once.
TEST_F(EngineTest, ManualCompactionMergesEveryLevelIntoTheDeepestAtOnce) {
  options_.level0_compaction_trigger = 8;  // no compaction before Compact
  options_.level1_max_bytes = 64 << 10;
  options_.target_file_size = 16 << 10;
  Reopen();
  Random rnd(303);
  auto write_all = [&](uint64_t ts) {
    WriteInTwoFlushes(
        engine_.get(), &table_, 2000, ts, [](int i) { return "row" + std::to_string(i); },
        [&] { return rnd.RandomBytes(100); });
  };
  write_all(1);
  ASSERT_OK(engine_->Compact());
  EngineStats st = engine_->GetStats();
  // Level 1 overflowed into level 2, which holds everything now.
  ASSERT_EQ(st.level_files.size(), 7u);
  EXPECT_EQ(st.level_files[0] + st.level_files[1], 0u);
  EXPECT_GT(st.level_files[2], 0u);

  write_all(2);
  ASSERT_EQ(engine_->GetStats().level_files[0], 2u);
  // Level 1 too: one more flush, and level 0 compacts into level 1 (large
  // enough now to keep it all).
  options_.level0_compaction_trigger = 1;
  options_.level1_max_bytes = 1 << 30;
  Reopen();
  for (int i = 0; i < 200; i++) {
    ASSERT_OK(Put("row" + std::to_string(i), "b", "y", 3, rnd.RandomBytes(100)));
  }
  ASSERT_OK(engine_->Flush());
  for (int i = 0; i < 10000 && engine_->GetStats().level_files[0] > 0; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  options_.level0_compaction_trigger = 8;
  Reopen();
  write_all(4);
  st = engine_->GetStats();
  ASSERT_GT(st.level_files[0], 0u);
  ASSERT_GT(st.level_files[1], 0u);
  ASSERT_GT(st.level_files[2], 0u);
  const uint64_t compactions = st.compactions;
  const uint64_t written = st.compaction_bytes_written;
  ASSERT_OK(engine_->Compact());
  st = engine_->GetStats();
  // Levels 0 and 1 and the level-2 files they overlap (all of them), merged
  // into level 2 in one compaction: what it wrote is the whole table.
  EXPECT_EQ(st.compactions - compactions, 1u);
  EXPECT_EQ(st.level_files[0] + st.level_files[1], 0u);
  EXPECT_GT(st.level_files[2], 10u);
  EXPECT_EQ(st.compaction_bytes_written - written, st.table_bytes);
  for (int i = 0; i < 2000; i += 97) {
    auto cells = table_.ReadRow(ReadOptions(), "row" + std::to_string(i));
    ASSERT_OK(cells) << i;
    EXPECT_EQ(cells->size(), i < 200 ? 4u : 3u) << i;
  }
}

// Past half the target size, a compaction's output files end where a file
// of the level below the output ends, so a later compaction of one of them
// takes no file below that it only touches at an edge.
TEST_F(EngineTest, CompactionOutputsEndWhereFilesOfTheLevelBelowEnd) {
  // Level 2 first: 2000 rows in files of one 16 KiB block and a row each
  // (a file's size counts the blocks it has written).
  options_.level0_compaction_trigger = 8;
  options_.level1_max_bytes = 64 << 10;
  options_.target_file_size = 8 << 10;
  Reopen();
  Random rnd(305);
  auto row = [](int i) {
    char r[16];
    std::snprintf(r, sizeof(r), "row%05d", i);
    return std::string(r);
  };
  auto write_all = [&](uint64_t ts) {
    WriteInTwoFlushes(engine_.get(), &table_, 2000, ts, row,
                      [&] { return rnd.RandomBytes(50 + rnd.Uniform(100)); });
  };
  write_all(1);
  ASSERT_OK(engine_->Compact());
  ASSERT_EQ(engine_->GetStats().level_files[1], 0u);
  ASSERT_GT(engine_->GetStats().level_files[2], 10u);

  // Then every row again, compacted from level 0 into level 1 in outputs of
  // up to 64 KiB: each crosses the end of a level-2 file between half and
  // all of that, and cut at the target size alone would end inside one.
  options_.level0_compaction_trigger = 2;
  options_.level1_max_bytes = 1 << 30;
  options_.target_file_size = 64 << 10;
  Reopen();
  write_all(2);
  for (int i = 0; i < 10000 && engine_->GetStats().level_files[0] > 0; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(engine_->GetStats().level_files[0], 0u);

  engine::Catalog catalog;
  ASSERT_OK(engine::Manifest::Read(FileSystem::Default(), dir_.path(), &catalog));
  const engine::Catalog::GroupFiles* group = nullptr;
  for (const auto& [key, files] : catalog.files) {
    if (files.levels.size() > 2 && !files.levels[2].empty()) group = &files;
  }
  ASSERT_NE(group, nullptr);
  const auto& l1 = group->levels[1];
  const auto& l2 = group->levels[2];
  ASSERT_GE(l1.size(), 4u);
  auto row_of = [](const std::string& key) { return engine::EncodedRowOf(key).ToString(); };
  for (size_t i = 0; i + 1 < l1.size(); i++) {
    EXPECT_GE(l1[i].size, (64u << 10) / 2) << i;
    // Some level-2 file ends at or after this output's last row and before
    // the next output's first row.
    const std::string last = row_of(l1[i].largest);
    const std::string next = row_of(l1[i + 1].smallest);
    bool aligned = false;
    for (const auto& f : l2) {
      const std::string end = row_of(f.largest);
      if (last <= end && end < next) aligned = true;
    }
    EXPECT_TRUE(aligned) << "level-1 file " << i << " of " << l1.size();
  }
  for (int i = 0; i < 2000; i += 131) EXPECT_EQ(Read(row(i)).size(), 2u) << i;
}

// Counts reads (as CountingReadFileSystem) and records the files created,
// so a test can tell which files a compaction wrote and whether a reader
// touched the disk.
class FileAccessLog final : public test::CountingReadFileSystem {
 public:
  Status NewWritableFile(const std::string& p, const FileOpenOptions& o,
                         std::unique_ptr<WritableFile>* r) override {
    {
      std::lock_guard<std::mutex> l(mu_);
      created_.push_back(p);
    }
    return CountingReadFileSystem::NewWritableFile(p, o, r);
  }
  std::vector<std::string> created() const {
    std::lock_guard<std::mutex> l(mu_);
    return created_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> created_;
};

// Compactions through several levels do not insert their outputs' blocks
// into the block cache, and leave the blocks another tenant's reader cached
// where they were: reading those rows again reads no file.
TEST_F(EngineTest, CompactionLeavesCachedBlocksInTheCache) {
  // Outlives the fixture's engine, which is closed after the test body.
  static FileAccessLog& fs = *new FileAccessLog;
  options_.file_system = &fs;
  options_.block_cache_size = 256 << 10;
  options_.level0_compaction_trigger = 2;
  // Level 1 overflows after the first level-0 compaction, so files move
  // on to level 2 and merge there with what is below them.
  options_.level1_max_bytes = 64 << 10;
  options_.target_file_size = 32 << 10;
  Reopen();
  Tenant reader;
  Table rt;
  ASSERT_NO_FATAL_FAILURE(CacheAReadersBlocks(engine_.get(), &reader, &rt));
  const uint64_t cached = reader.GetStats()->block_cache_bytes;
  Random rnd(302);  // incompressible values
  const size_t files_before = fs.created().size();

  // Eight overlapping flushes of about 130 KB each into table tab's group
  // "big": level-0 compactions into level 1, and level 1 pushed to level 2.
  for (int round = 0; round < 8; round++) {
    for (int i = 0; i < 1000; i++) {
      ASSERT_OK(Put("row" + std::to_string(i), "b", "y", 1 + round, rnd.RandomBytes(100)));
    }
    ASSERT_OK(engine_->Flush());
  }
  auto level2_holds_data = [&] {
    const EngineStats s = engine_->GetStats();
    return s.level_files.size() > 2 && s.level_files[2] > 0;
  };
  for (int i = 0; i < 10000 && !level2_holds_data(); i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(level2_holds_data());
  // Settles tab's data; rt's one file moves to level 1 by a manifest edit,
  // which keeps its cached blocks (they are keyed by file number).
  ASSERT_OK(engine_->Compact());
  EXPECT_GT(engine_->GetStats().compaction_bytes_written, 1000000u);
  EXPECT_EQ(reader.GetStats()->block_cache_bytes, cached);
  EXPECT_EQ(tenant_.GetStats()->block_cache_bytes, 0u);

  // The live outputs hold no block in the cache (above, tab's cached bytes
  // are 0) even where one was opened since: a file moved to the bottom
  // level is opened for its properties (whether it holds delete markers),
  // which reads no data block.
  auto base_name = [](const std::string& path) { return path.substr(path.rfind('/') + 1); };
  std::vector<std::string> on_disk;
  ASSERT_OK(FileSystem::Default()->GetChildren(dir_.Join("sst"), &on_disk));
  size_t live_outputs = 0;
  const std::vector<std::string> created = fs.created();
  for (size_t i = files_before; i < created.size(); i++) {
    const std::string name = base_name(created[i]);
    if (std::find(on_disk.begin(), on_disk.end(), name) != on_disk.end()) live_outputs++;
  }
  EXPECT_GT(live_outputs, 1u);

  const uint64_t reads = fs.reads();
  for (int i = 0; i < 300; i++) ASSERT_OK(rt.ReadRow(ReadOptions(), "r" + std::to_string(i)));
  EXPECT_EQ(fs.reads(), reads);
  for (int i = 0; i < 1000; i += 37) {
    auto cells = table_.ReadRow(ReadOptions(), "row" + std::to_string(i));
    ASSERT_OK(cells) << i;
    EXPECT_EQ(cells->size(), 8u) << i;  // a version per round
  }
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
  ASSERT_OK(e);
  ASSERT_OK((*e)->CreateTenant("t"));
  Tenant tenant = *(*e)->OpenTenant("t");
  TableSchema s;
  s.locality_groups = {{.name = "g0"}, {.name = "g1"}};
  s.families = {{.name = "f0", .locality_group = "g0"}, {.name = "f1", .locality_group = "g1"}};
  constexpr int kTables = 3;
  constexpr int kRows = 1500;
  constexpr int kRounds = 4;
  std::vector<Table> tables;
  for (int i = 0; i < kTables; i++) {
    ASSERT_OK(tenant.CreateTable("tab" + std::to_string(i), s));
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
          ASSERT_OK(tables[t].Mutate(WriteOptions{.sync = false}, row, m));
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  auto check = [&] {
    for (int t = 0; t < kTables; t++) {
      for (int r = 0; r < kRows; r++) {
        auto cells = tables[t].ReadRow(ReadOptions(), "row" + std::to_string(r));
        ASSERT_OK(cells);
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
  ASSERT_OK((*e)->Compact());
  check();
  EngineStats st = (*e)->GetStats();
  EXPECT_EQ(st.level_files[0], 0u);
  ASSERT_OK((*e)->Close());
  e = Engine::Open(dir.path(), o);
  ASSERT_OK(e);
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
  ASSERT_OK(e);
  Table t = test::CreateOneFamilyTable(e->get());
  for (int i = 0; i < 5000; i++) {
    RowMutation m;
    m.Put("f", "q", 1, std::string(100, 'a' + i % 26));
    ASSERT_OK(t.Mutate(WriteOptions{.sync = false}, "row" + std::to_string(i), m));
    if (i == 2500) {
      ASSERT_OK((*e)->Flush());
    }
  }
  ASSERT_OK((*e)->Compact());  // two level-0 files merge into level 1
  EngineStats st = (*e)->GetStats();
  EXPECT_EQ(st.compactions, 1u);
  EXPECT_GT(st.compaction_bytes_written, 500u << 10);
  EXPECT_GT(st.compaction_rate_limit_wait_micros, 0u);
  auto cells = t.ReadRow(ReadOptions(), "row4999");
  ASSERT_OK(cells);
  EXPECT_EQ(cells->size(), 1u);
}

// Rows 0..7999 of `t` (family f) in two flushed files.
void WriteTwoFiles(Engine* e, Table& t) {
  for (int i = 0; i < 8000; i++) {
    RowMutation m;
    m.Put("f", "q", 1, std::string(100, 'a' + i % 26));
    ASSERT_OK(t.Mutate(WriteOptions{.sync = false}, "row" + std::to_string(i), m));
    if (i % 4000 == 3999) {
      ASSERT_OK(e->Flush());
    }
  }
}

TEST(EngineCompactionTest, CloseStopsACompactionHeldBackByTheRateLimit) {
  test::ScratchDir dir("ratelimit");
  EngineOptions o;
  o.compaction_rate_limit = 16 << 10;  // the compaction below would take a minute
  o.level0_compaction_trigger = 2;
  auto e = Engine::Open(dir.path(), o);
  ASSERT_OK(e);
  Table t = test::CreateOneFamilyTable(e->get());
  ASSERT_NO_FATAL_FAILURE(WriteTwoFiles(e->get(), t));
  // Two level-0 files: a compaction starts and soon waits on the limit.
  while ((*e)->GetStats().compaction_rate_limit_wait_micros == 0) std::this_thread::yield();
  ASSERT_OK((*e)->Close());
  e = Engine::Open(dir.path(), EngineOptions());
  ASSERT_OK(e);
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
  ASSERT_OK(e);
  Table t = test::CreateOneFamilyTable(e->get());
  TableSchema s;
  s.families = {{.name = "f"}};
  ASSERT_OK((*e)->OpenTenant("t")->CreateTable("other", s));
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
    EXPECT_OK((*e)->OpenTenant("t")->DropTable("other"));
    dropped = true;
  });
  for (int i = 0; i < 10000 && !dropped; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(dropped) << "the drop waited for the manual compaction";
  EXPECT_FALSE(compact_returned);
  ASSERT_OK((*e)->Close());
  compact.join();
  drop.join();
  EXPECT_FALSE(compact_status.ok());  // closed before it finished
  e = Engine::Open(dir.path(), EngineOptions());
  ASSERT_OK(e);
  t = *(*e)->OpenTenant("t")->OpenTable("tab");
  ExpectOneCellPerRow(t, 0, 8000, 333);
  EXPECT_FALSE((*e)->OpenTenant("t")->OpenTable("other").ok());
}

}  // namespace
}  // namespace strata
