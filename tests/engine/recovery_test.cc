// Recovery on reopen: every write, from one or many writers, is there again
// with the sequence continued, through either log writer; a point-in-time
// recovery keeps sequences above what flushes recorded; missing log segments
// are Corruption, not a silent loss.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "common/random.h"
#include "engine_test_util.h"
#include "strata/engine.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata {
namespace {

using test::EngineTest;
using test::ScratchDir;

TEST_F(EngineTest, ReopenRecoversEverything) {
  for (int i = 0; i < 500; i++) {
    RowMutation m;
    m.Put("a", "x", 1 + i % 3, "a" + std::to_string(i));
    m.Put("b", "y", 7, "b" + std::to_string(i));
    if (i % 10 == 0) m.DeleteColumn("a", "x", 1);
    WriteOptions wo;
    wo.sync = i % 2 == 0;
    ASSERT_OK(table_.Mutate(wo, "row" + std::to_string(i % 100), m));
  }
  std::map<std::string, std::vector<Cell>> before;
  for (int i = 0; i < 100; i++) before["row" + std::to_string(i)] = Read("row" + std::to_string(i));
  const uint64_t seq = engine_->GetStats().last_sequence;
  Reopen();
  EXPECT_EQ(engine_->GetStats().last_sequence, seq);
  for (const auto& [row, cells] : before) EXPECT_EQ(Read(row), cells) << row;
  // Writes after recovery continue the sequence and survive another reopen.
  ASSERT_OK(Put("row0", "a", "new", 1, "after"));
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

TEST_F(EngineTest, FallbackWriterWorksAndIsChosenByOption) {
  options_.use_io_uring = false;
  Reopen();
  EXPECT_FALSE(engine_->GetStats().wal_uses_io_uring);
  ASSERT_OK(Put("r", "a", "x", 1, "v"));
  options_.use_io_uring = true;
  Reopen();
  EXPECT_EQ(Read("r").size(), 1u);
}

// Puts f:q@1 = `prefix` + i in rows r0 .. r<n-1>.
void PutNumberedRows(Table& table, int n, const std::string& prefix) {
  for (int i = 0; i < n; i++) {
    RowMutation m;
    m.Put("f", "q", 1, prefix + std::to_string(i));
    ASSERT_OK(table.Mutate(WriteOptions(), "r" + std::to_string(i), m));
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
    ASSERT_OK(engine);
    Table table = test::CreateOneFamilyTable(engine->get());
    PutNumberedRows(table, 10, "old-value-");
    ASSERT_OK((*engine)->Flush());
    flushed_sequence = (*engine)->GetStats().last_sequence;
    ASSERT_OK((*engine)->Close());
  }
  // Damage the fourth record: the log's current segment still holds them all.
  ASSERT_TRUE(DamageLogAt(dir, "old-value-3"));

  auto check = [&](const char* when) {
    auto engine = Engine::Open(dir.path(), options);
    ASSERT_OK(engine) << when << ": " << engine.status().ToString();
    Table table = *(*engine)->OpenTenant("t")->OpenTable("tab");
    EXPECT_GE((*engine)->GetStats().last_sequence, flushed_sequence) << when;
    if (std::string(when) == "after the cut") {
      RowMutation m;
      m.Put("f", "q", 1, "new");
      ASSERT_OK(table.Mutate(WriteOptions(), "r5", m));
    }
    auto cells = table.ReadRow(ReadOptions(), "r5");
    ASSERT_OK(cells);
    ASSERT_EQ(cells->size(), 1u) << when;
    EXPECT_EQ((*cells)[0].value, "new") << when;
    cells = table.ReadRow(ReadOptions(), "r9");  // flushed: the cut loses nothing of it
    ASSERT_TRUE(cells.ok() && cells->size() == 1) << when;
    EXPECT_EQ((*cells)[0].value, "old-value-9") << when;
    ASSERT_OK((*engine)->Close());
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
    ASSERT_OK(engine);
    Table table = test::CreateOneFamilyTable(engine->get());
    for (int i = 0; i < kRows; i++) {
      RowMutation m;
      m.Put("f", "q", 1, std::string(100, 'v'));
      ASSERT_OK(table.Mutate(WriteOptions(), "r" + std::to_string(i), m));
    }
    ASSERT_EQ((*engine)->GetStats().table_files, 0u);
    ASSERT_OK((*engine)->Close());
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
  ASSERT_OK(s);
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
  ASSERT_OK(s);
  EXPECT_GT(rows, 0);
  EXPECT_LT(rows, kRows);
  auto again = Engine::Open(dir.path() + "-copy", options);
  ASSERT_OK(again);
  ASSERT_OK((*again)->Close());
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
    ASSERT_OK(engine);
    Table table = test::CreateOneFamilyTable(engine->get());
    PutNumberedRows(table, 5, "first-value-");
    TableSchema altered;
    altered.families = {{.name = "f"}, {.name = "g"}};
    ASSERT_OK((*engine)->OpenTenant("t")->AlterTable("tab", altered));
    ASSERT_OK((*engine)->Close());
  }
  // Damage the first record: point in time drops it and all after it.
  ASSERT_TRUE(DamageLogAt(dir, "first-value-0"));
  EngineOptions pit = options;
  pit.wal_recovery_mode = WalRecoveryMode::kPointInTime;
  {
    auto engine = Engine::Open(dir.path(), pit);
    ASSERT_OK(engine);
    Table table = *(*engine)->OpenTenant("t")->OpenTable("tab");
    EXPECT_TRUE(table.ReadRow(ReadOptions(), "r0")->empty());
    RowMutation m;
    m.Put("f", "q", 2, "after");
    ASSERT_OK(table.Mutate(WriteOptions(), "r9", m));
    ASSERT_OK((*engine)->Close());
  }
  for (const EngineOptions& o : {options, pit}) {
    auto engine = Engine::Open(dir.path(), o);
    ASSERT_OK(engine);
    Table table = *(*engine)->OpenTenant("t")->OpenTable("tab");
    auto cells = table.ReadRow(ReadOptions(), "r9");
    ASSERT_TRUE(cells.ok() && cells->size() == 1) << cells.status().ToString();
    EXPECT_EQ((*cells)[0].value, "after");
    ASSERT_OK((*engine)->Close());
  }
}

}  // namespace
}  // namespace strata
