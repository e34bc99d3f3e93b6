// Write backpressure: its triggers checked at open, writers that wait while
// too many memtables await a flush, and tight triggers that lose nothing.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "engine_test_util.h"
#include "strata/engine.h"
#include "util/forwarding_fs.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata {
namespace {

using test::ExpectOneCellPerRow;

TEST(EngineBackpressureTest, BadTriggersAreRejected) {
  test::ScratchDir dir("bp");
  EngineOptions o;
  o.level0_compaction_trigger = 8;
  o.level0_slowdown_trigger = 8;
  auto e = Engine::Open(dir.path(), o);
  EXPECT_TRUE(e.status().IsInvalidArgument()) << e.status().ToString();
  o.level0_slowdown_trigger = 10;
  o.level0_stop_trigger = 9;
  EXPECT_TRUE(Engine::Open(dir.path(), o).status().IsInvalidArgument());
  o.level0_stop_trigger = 10;
  o.write_buffer_size = 10;
  EXPECT_TRUE(Engine::Open(dir.path(), o).status().IsInvalidArgument());
  o.write_buffer_size = 1 << 20;
  o.max_background_compactions = 0;
  EXPECT_TRUE(Engine::Open(dir.path(), o).status().IsInvalidArgument());
  o.max_background_compactions = 1;
  o.max_immutable_memtables = 0;
  EXPECT_TRUE(Engine::Open(dir.path(), o).status().IsInvalidArgument());
}

// A file system whose new SSTables wait at creation until the test opens the
// gate: flushes and compactions stall while the log keeps working.
class GatedTableFileSystem : public test::ForwardingFileSystem {
 public:
  Status NewWritableFile(const std::string& p, const FileOpenOptions& o,
                         std::unique_ptr<WritableFile>* r) override {
    if (p.size() > 4 && p.compare(p.size() - 4, 4, ".sst") == 0) {
      std::unique_lock<std::mutex> l(mu_);
      waiting_++;
      cv_.notify_all();
      cv_.wait(l, [&] { return open_; });
    }
    return test::ForwardingFileSystem::NewWritableFile(p, o, r);
  }
  void Open() {
    std::lock_guard<std::mutex> l(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void WaitForWaiter() {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return waiting_ > 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  int waiting_ = 0;
};

TEST(EngineBackpressureTest, WritesWaitWhileTooManyMemtablesAwaitFlush) {
  test::ScratchDir dir("bp");
  GatedTableFileSystem fs;
  EngineOptions o;
  o.file_system = &fs;
  o.write_buffer_size = 4096;
  o.max_immutable_memtables = 2;
  auto e = Engine::Open(dir.path(), o);
  ASSERT_OK(e);
  Table t = test::CreateOneFamilyTable(e->get());
  constexpr int kRows = 400;  // about 40 KB: many memtables' worth
  std::atomic<int> written{0};
  std::thread writer([&] {
    for (int i = 0; i < kRows; i++) {
      RowMutation m;
      m.Put("f", "q", 1, std::string(100, 'v'));
      ASSERT_OK(t.Mutate(WriteOptions{.sync = false}, "row" + std::to_string(i), m));
      written.fetch_add(1);
    }
  });
  // The first flush is stuck creating its file; the writer fills memtables
  // until two wait and then waits itself.
  fs.WaitForWaiter();
  while ((*e)->GetStats().memtable_stops == 0) std::this_thread::yield();
  EngineStats st = (*e)->GetStats();
  EXPECT_EQ(st.immutable_memtables, 2u);
  EXPECT_LT(written.load(), kRows);
  fs.Open();
  writer.join();
  ASSERT_EQ(written.load(), kRows);
  st = (*e)->GetStats();
  EXPECT_GT(st.memtable_stops, 0u);
  EXPECT_GT(st.write_stall_micros, 0u);
  ExpectOneCellPerRow(t, 0, kRows, 1);
}

TEST(EngineBackpressureTest, TightTriggersLoseNothing) {
  test::ScratchDir dir("bp");
  EngineOptions o;
  o.write_buffer_size = 16 << 10;
  o.level0_compaction_trigger = 2;
  o.level0_slowdown_trigger = 3;
  o.level0_stop_trigger = 4;
  o.target_file_size = 64 << 10;
  o.level1_max_bytes = 256 << 10;
  auto e = Engine::Open(dir.path(), o);
  ASSERT_OK(e);
  Table t = test::CreateOneFamilyTable(e->get());
  WriteOptions wo;
  wo.sync = false;
  for (int i = 0; i < 20000; i++) {
    RowMutation m;
    m.Put("f", "q", 1, std::string(64, 'v') + std::to_string(i));
    ASSERT_OK(t.Mutate(wo, "row" + std::to_string(i % 5000), m));
  }
  EngineStats st = (*e)->GetStats();
  EXPECT_GT(st.compactions + st.trivial_moves, 0u);
  for (int i = 15000; i < 20000; i++) {
    auto cells = t.ReadRow(ReadOptions(), "row" + std::to_string(i % 5000));
    ASSERT_OK(cells);
    ASSERT_EQ(cells->size(), 1u);
    EXPECT_EQ((*cells)[0].value, std::string(64, 'v') + std::to_string(i));
  }
}

}  // namespace
}  // namespace strata
