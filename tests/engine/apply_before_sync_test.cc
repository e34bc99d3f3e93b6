// EngineOptions::apply_before_sync: writers read their own writes at once and
// everything recovers; reads that meet a synced write whose fdatasync is still
// running wait for it, and get the log's error when it fails.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "engine_test_util.h"
#include "strata/engine.h"
#include "util/gated_sync_fs.h"
#include "util/status_matchers.h"

namespace strata {
namespace {

using test::EngineTest;

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
      StartHeldSyncedWrite(&fs, /*r_old=*/true, [](const Status& s) { EXPECT_OK(s); });
  const uint64_t waits_before = engine_->GetStats().durable_read_waits;

  EXPECT_EQ(Read("a-other").size(), 1u);
  WriteOptions unsynced;
  unsynced.sync = false;
  RowMutation m;
  m.Put("a", "x", 1, "v");
  EXPECT_OK(table_.Mutate(unsynced, "z-third", m));
  EXPECT_EQ(Read("z-third").size(), 1u);
  EXPECT_EQ(engine_->GetStats().durable_read_waits, waits_before);

  std::atomic<int> done{0};
  std::vector<std::thread> readers;
  readers.emplace_back([&] {
    auto cells = table_.ReadRow(ReadOptions(), "r");
    EXPECT_OK(cells);
    if (cells.ok()) {
      EXPECT_EQ(cells->size(), 2u);
    }
    done++;
  });
  readers.emplace_back([&] {
    Status scan;
    EXPECT_EQ(ScanRows(&scan), (std::vector<std::string>{"a-other", "r", "z-third"}));
    EXPECT_OK(scan);
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
  ASSERT_OK(CloseEngine());
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
    ASSERT_OK(session);
    EXPECT_TRUE((*session)->Get("r", "a", "x").status().IsIOError());
    EXPECT_OK((*session)->Get("a-other", "a", "x"));
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

}  // namespace
}  // namespace strata
