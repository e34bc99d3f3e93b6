// Fault injection under the engine: a failed fdatasync or a full disk makes
// the write fail and stops the engine's writes until it is reopened; a power
// loss (everything unsynced forgotten, or the last write torn) loses no
// acknowledged write and leaves no row half-applied.
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/fault_injection_fs.h"
#include "common/random.h"
#include "engine/test_hooks.h"
#include "engine_test_util.h"
#include "strata/engine.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata {
namespace {

class EngineFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.file_system = &fs_;
    options_.wal_segment_size = 128 << 10;
    options_.write_buffer_size = 32 << 10;  // flushes (SSTables, manifest edits) happen too
    options_.level0_compaction_trigger = 2;  // and compactions
    options_.level1_max_bytes = 128 << 10;
    options_.target_file_size = 32 << 10;
    Open();
    ASSERT_OK(engine_->CreateTenant("t"));
    TableSchema s;
    s.locality_groups = {{.name = "g1"}, {.name = "g2"}};
    s.families = {{.name = "a", .locality_group = "g1"}, {.name = "b", .locality_group = "g2"}};
    ASSERT_OK(engine_->OpenTenant("t")->CreateTable("tab", s));
    table_ = *engine_->OpenTenant("t")->OpenTable("tab");
  }

  void Open() {
    auto e = Engine::Open(dir_.path(), options_);
    ASSERT_OK(e);
    engine_ = std::move(e.value());
    auto t = engine_->OpenTenant("t");
    if (t.ok()) table_ = *t->OpenTable("tab");
  }

  // Simulates a crash: the engine goes away without a clean close, then
  // whatever was not durable is lost.
  void Crash(bool tear) {
    fs_.SetFilesystemActive(false);
    engine_->Close().PermitUncheckedError();  // the file system is "off": errors expected
    engine_.reset();
    table_ = Table();
    fs_.SetFilesystemActive(true);
    fs_.ClearFaults();
    if (tear) {
      ASSERT_OK(fs_.TearUnsyncedData(&rnd_));
    } else {
      ASSERT_OK(fs_.DropUnsyncedData());
    }
  }

  Status Write(int i, bool sync = true) {
    RowMutation m;
    m.Put("a", "x", 1, "a" + std::to_string(i)).Put("b", "y", 1, std::string(50, 'b'));
    WriteOptions wo;
    wo.sync = sync;
    return table_.Mutate(wo, "row" + std::to_string(i), m);
  }

  // Rows 0..n-1 are whole; returns how many further rows exist (whole).
  int CheckRows(int acknowledged, int attempted) {
    int extra = 0;
    for (int i = 0; i < attempted; i++) {
      auto cells = table_.ReadRow(ReadOptions(), "row" + std::to_string(i));
      EXPECT_OK(cells);
      if (i < acknowledged) {
        EXPECT_EQ(cells->size(), 2u) << "acknowledged row " << i << " lost";
      } else {
        EXPECT_TRUE(cells->empty() || cells->size() == 2u) << "row " << i << " half applied";
        if (!cells->empty()) extra++;
      }
    }
    return extra;
  }

  test::ScratchDir dir_{"fault"};
  FaultInjectionFileSystem fs_;
  EngineOptions options_;
  std::unique_ptr<Engine> engine_;
  Table table_;
  Random rnd_{test::TestSeed()};
};

TEST_F(EngineFaultTest, FailedSyncStopsWritesUntilReopen) {
  for (int i = 0; i < 50; i++) ASSERT_OK(Write(i));
  fs_.FailAfter(FaultOp::kSync, 0, 1, EIO, "wal");
  Status s = Write(50);
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_NE(s.ToString().find("injected"), std::string::npos) << s.ToString();
  // The fault is gone, but the engine does not go on as if nothing happened.
  Status again = Write(51);
  EXPECT_FALSE(again.ok());
  Crash(/*tear=*/false);
  Open();
  CheckRows(50, 52);
  // After reopening, writes work again and survive.
  ASSERT_OK(Write(60));
  Crash(false);
  Open();
  CheckRows(50, 52);
  EXPECT_EQ(table_.ReadRow(ReadOptions(), "row60")->size(), 2u);
}

TEST_F(EngineFaultTest, NoSpaceFailsTheWriteAndIsReported) {
  for (int i = 0; i < 20; i++) ASSERT_OK(Write(i));
  fs_.FailAfter(FaultOp::kWrite, 0, -1, ENOSPC, "wal");
  Status s = Write(20);
  EXPECT_TRUE(s.IsResourceExhausted()) << s.ToString();
  fs_.ClearFaults();
  EXPECT_FALSE(Write(21).ok());
  Crash(false);
  Open();
  CheckRows(20, 22);
}

TEST_F(EngineFaultTest, FailureOnSegmentSwitchIsAnError) {
  // Small segments: fail the creation of a new segment file part way through.
  fs_.FailAfter(FaultOp::kOpen, 0, -1, ENOSPC, "wal");
  int acked = 0;
  Status s;
  for (int i = 0; i < 5000; i++) {
    s = Write(i);
    if (!s.ok()) break;
    acked++;
  }
  ASSERT_FALSE(s.ok()) << "no segment switch happened in 5000 writes";
  Crash(false);
  Open();
  CheckRows(acked, acked + 1);
}

TEST_F(EngineFaultTest, FailedFlushStopsWritesAndReopenRecovers) {
  fs_.FailAfter(FaultOp::kOpen, 0, -1, ENOSPC, "/sst/");
  int acked = 0;
  Status s;
  for (int i = 0; i < 20000; i++) {
    s = Write(i);
    if (!s.ok()) break;
    acked++;
  }
  ASSERT_FALSE(s.ok()) << "writes went on after the flush failed";
  EXPECT_TRUE(s.IsResourceExhausted()) << s.ToString();
  EXPECT_NE(s.ToString().find("flush"), std::string::npos) << s.ToString();
  EXPECT_FALSE(engine_->Flush().ok());
  Crash(/*tear=*/false);
  Open();
  CheckRows(acked, acked + 1);
  ASSERT_OK(engine_->Flush());
  EXPECT_GT(engine_->GetStats().table_files, 0u);
}

// A compaction whose manifest append fails (here its sync) does not know
// whether the edit reached the file: it keeps its outputs for the next open
// to keep or delete. Had it deleted them, a process crash (the edit in the
// file, its outputs gone, its inputs deleted at open) would lose the data.
TEST_F(EngineFaultTest, FailedCompactionEditKeepsItsOutputs) {
  engine_.reset();
  table_ = Table();
  options_.level0_compaction_trigger = 8;  // compactions only when asked
  options_.level0_slowdown_trigger = 9;
  options_.level0_stop_trigger = 10;
  Open();
  int acked = 0;
  for (bool power_loss : {false, true}) {
    SCOPED_TRACE(power_loss ? "power loss" : "process crash");
    for (int round = 0; round < 3; round++) {
      for (int i = 0; i < 100; i++) ASSERT_OK(Write(acked++));
      ASSERT_OK(engine_->Flush());
    }
    ASSERT_GE(engine_->GetStats().level_files[0], 3u);
    const uint64_t compactions = engine_->GetStats().compactions;
    fs_.FailAfter(FaultOp::kSync, 0, 1, EIO, "MANIFEST");
    EXPECT_FALSE(engine_->Compact().ok());
    EXPECT_EQ(engine_->GetStats().compactions, compactions);
    fs_.ClearFaults();
    if (power_loss) {
      Crash(/*tear=*/false);  // the edit is gone: the outputs are leftovers
    } else {
      // What the process wrote stays in the files: the edit is there.
      engine_->Close().PermitUncheckedError();
      engine_.reset();
      table_ = Table();
    }
    Open();
    CheckRows(acked, acked);
  }
}

// A failed manifest write (here a drop's sync) may still have put the edit
// in the file: writes stop at once, so none is acknowledged into a table the
// next open finds dropped, and reopening goes on from what the file holds.
TEST_F(EngineFaultTest, FailedManifestWriteStopsWritesUntilReopen) {
  TableSchema s;
  s.families = {{.name = "f"}};
  Tenant tenant = *engine_->OpenTenant("t");
  ASSERT_OK(tenant.CreateTable("doomed", s));
  Table doomed = *tenant.OpenTable("doomed");
  for (int i = 0; i < 10; i++) ASSERT_OK(Write(i));
  fs_.FailAfter(FaultOp::kSync, 0, 1, EIO, "MANIFEST");
  EXPECT_FALSE(tenant.DropTable("doomed").ok());
  fs_.ClearFaults();
  RowMutation m;
  m.Put("f", "q", 1, "after the failed drop");
  EXPECT_FALSE(doomed.Mutate(WriteOptions(), "r", m).ok());
  EXPECT_FALSE(Write(10).ok());
  // The process dies; the drop's edit is in the file.
  doomed = Table();
  tenant = Tenant();
  engine_->Close().PermitUncheckedError();
  engine_.reset();
  table_ = Table();
  Open();
  EXPECT_TRUE(engine_->OpenTenant("t")->OpenTable("doomed").status().IsNotFound());
  CheckRows(10, 11);
  ASSERT_OK(Write(11));
}

TEST_F(EngineFaultTest, PowerLossKeepsEverySyncedWrite) {
  const int rounds = test::LongTests() ? 50 : 10;
  int next = 0;
  int acked = 0;
  for (int r = 0; r < rounds; r++) {
    const int n = 1 + static_cast<int>(rnd_.Uniform(300));
    for (int i = 0; i < n; i++) {
      ASSERT_OK(Write(next++));
      acked = next;
    }
    // Some unsynced writes at the end, which may be lost.
    const int unsynced = static_cast<int>(rnd_.Uniform(20));
    for (int i = 0; i < unsynced; i++) ASSERT_OK(Write(next++, /*sync=*/false));
    Crash(/*tear=*/r % 2 == 1);
    Open();
    int extra = CheckRows(acked, next);
    // Whatever of the unsynced writes survived is a prefix (the log is in order).
    for (int i = acked; i < acked + extra; i++) {
      EXPECT_EQ(table_.ReadRow(ReadOptions(), "row" + std::to_string(i))->size(), 2u);
    }
    acked += extra;
    next = acked;
  }
}

// Writers on several threads write unsynced; one synced write makes every
// write acknowledged before it began durable, whichever thread wrote it. The
// power fails the moment the synced write returns.
// A flush records a log floor and last sequence no further than what its
// log sync made durable. Here an unsynced write lands right after the sync,
// in a table then dropped (so no memtable holds the floor back): had the
// flush read its sequence after the write, the floor would pass the log's
// durable end, and after a power loss the engine would hand out sequence
// numbers below the floor, which replay then skips, losing a synced write.
using ParkedFlush = test::ParkedHook<&engine::test_hooks::after_flush_log_sync>;

TEST_F(EngineFaultTest, FlushFloorStaysWithinTheSyncedLog) {
  TableSchema s;
  s.families = {{.name = "f"}};
  ASSERT_OK(engine_->OpenTenant("t")->CreateTable("doomed", s));
  Table doomed = *engine_->OpenTenant("t")->OpenTable("doomed");
  auto put_a = [&](const std::string& row) {
    RowMutation m;
    m.Put("a", "x", 1, row);  // group g1 only
    return table_.Mutate(WriteOptions(), row, m);
  };
  ParkedFlush::Arm();
  // Fill g1's memtable until a write switches it: that write's entries are
  // in the switched memtable, so no memtable holds data after it. (A
  // background flush, not Engine::Flush, which holds off DropTable.)
  int rows = 0;
  while (engine_->GetStats().immutable_memtables == 0) {
    ASSERT_OK(put_a("before" + std::to_string(rows++)));
  }
  ASSERT_TRUE(ParkedFlush::WaitReached());
  WriteOptions unsynced;
  unsynced.sync = false;
  RowMutation m;
  m.Put("f", "q", 1, std::string(100, 'w'));
  for (int i = 0; i < 10; i++) {
    ASSERT_OK(doomed.Mutate(unsynced, "w" + std::to_string(i), m));
  }
  doomed = Table();
  ASSERT_OK(engine_->OpenTenant("t")->DropTable("doomed"));
  ParkedFlush::Release();
  while (engine_->GetStats().immutable_memtables > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

  Crash(/*tear=*/false);
  Open();
  ASSERT_OK(put_a("after"));  // synced
  Crash(false);
  Open();
  for (int i = 0; i <= rows; i++) {
    const std::string row = i < rows ? "before" + std::to_string(i) : "after";
    Result<std::vector<Cell>> cells = table_.ReadRow(ReadOptions(), row);
    ASSERT_OK(cells);
    EXPECT_EQ(cells->size(), 1u) << "synced row " << row << " lost";
  }
}

// A synced check that logs nothing (a pure check, or conditions that fail)
// still makes the writes it saw durable: a power loss right after it
// returns keeps the unsynced cell its answer was about.
TEST_F(EngineFaultTest, SyncedCheckMakesWhatItSawDurable) {
  for (const bool holds : {true, false}) {
    SCOPED_TRACE(holds ? "pure check" : "failed condition");
    const std::string row = holds ? "checked" : "refused";
    RowMutation put;
    put.Put("a", "x", 5, "unsynced");
    ASSERT_OK(table_.Mutate(WriteOptions{.sync = false}, row, put));
    RowMutation nothing;
    RowMutation other;
    other.Put("b", "y", 1, "never");
    WriteOptions synced;
    synced.sync = true;
    Result<CheckAndMutateResult> r =
        holds ? table_.CheckAndMutate(synced, row, {Condition::CellExists("a", "x", 5)}, nothing)
              : table_.CheckAndMutate(synced, row, {Condition::ValueEquals("a", "x", 5, "other")},
                                      other);
    ASSERT_OK(r);
    EXPECT_EQ(r->applied, holds);
    Crash(/*tear=*/false);
    Open();
    Result<std::vector<Cell>> cells = table_.ReadRow(ReadOptions(), row);
    ASSERT_OK(cells);
    ASSERT_EQ(cells->size(), 1u) << "the cell the check saw was lost";
    EXPECT_EQ((*cells)[0].value, "unsynced");
  }
}

TEST_F(EngineFaultTest, SyncedWriteMakesEarlierUnsyncedWritesDurable) {
  const int rounds = test::LongTests() ? 20 : 5;
  for (int r = 0; r < rounds; r++) {
    std::mutex mu;
    std::vector<std::string> acked;  // rows, in the order their writes returned
    std::vector<std::string> attempted;
    std::atomic<bool> stop{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; t++) {
      threads.emplace_back([&, t] {
        Table table = table_;
        for (int i = 0; !stop.load(); i++) {
          const std::string row = "r" + std::to_string(r) + "-t" + std::to_string(t) + "-" +
                                  std::to_string(i);
          {
            std::lock_guard<std::mutex> l(mu);
            attempted.push_back(row);
          }
          RowMutation m;
          m.Put("a", "x", 1, row).Put("b", "y", 1, std::string(i % 100, 'b'));
          WriteOptions wo;
          wo.sync = false;
          if (!table.Mutate(wo, row, m).ok()) break;
          std::lock_guard<std::mutex> l(mu);
          acked.push_back(row);
        }
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5 + 3 * r));
    size_t before = 0;
    // On a loaded machine no writer may have run yet: wait (bounded) for one
    // acknowledgement, so the synced write has something before it.
    for (int i = 0; i < 10000 && before == 0; i++) {
      {
        std::lock_guard<std::mutex> l(mu);
        before = acked.size();
      }
      if (before == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_OK(Write(1000000 + r, /*sync=*/true));
    fs_.SetFilesystemActive(false);  // the instant of the crash, then Crash() cleans up
    stop = true;
    for (auto& t : threads) t.join();
    Crash(/*tear=*/r % 2 == 1);
    Open();
    ASSERT_GT(before, 0u);
    EXPECT_EQ(table_.ReadRow(ReadOptions(), "row" + std::to_string(1000000 + r))->size(), 2u);
    for (size_t i = 0; i < before; i++) {
      auto cells = table_.ReadRow(ReadOptions(), acked[i]);
      ASSERT_OK(cells);
      ASSERT_EQ(cells->size(), 2u) << "row " << acked[i] << ", acknowledged before the synced "
                                   << "write began, is lost (round " << r << ")";
    }
    for (const std::string& row : attempted) {
      auto cells = table_.ReadRow(ReadOptions(), row);
      ASSERT_OK(cells);
      EXPECT_TRUE(cells->empty() || cells->size() == 2u) << "row " << row << " half applied";
    }
  }
}

}  // namespace
}  // namespace strata
