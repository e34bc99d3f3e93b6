// Crash test: a child process writes with sync on from several threads and is
// killed with SIGKILL at a random moment; the parent reopens the engine and
// checks that every write the child reported as acknowledged is there and
// that no row is half-applied. Repeated many times on one directory, so each
// round also recovers from the logs of every earlier crash.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <set>
#include <thread>

#include "common/random.h"
#include "strata/engine.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata {
namespace {

constexpr int kThreads = 4;
constexpr int kCellsPerRow = 3;  // across two locality groups

TableSchema CrashSchema() {
  TableSchema s;
  s.locality_groups.push_back({.name = "g1"});
  s.locality_groups.push_back({.name = "g2"});
  s.families.push_back({.name = "a", .locality_group = "g1"});
  s.families.push_back({.name = "b", .locality_group = "g2"});
  return s;
}

std::string RowKey(int round, int thread, int i) {
  return "r" + std::to_string(round) + "-t" + std::to_string(thread) + "-" + std::to_string(i);
}

// Child: writes rows from kThreads threads until killed. After each
// acknowledged write it sends "thread index\n" down the pipe.
[[noreturn]] void RunChild(const std::string& dir, int round, int fd, bool use_uring,
                           bool apply_before_sync) {
  EngineOptions o;
  o.use_io_uring = use_uring;
  o.apply_before_sync = apply_before_sync;
  o.wal_segment_size = 1 << 20;  // small segments: crashes also land on segment switches
  o.write_buffer_size = 64 << 10;  // and on flushes
  o.level0_compaction_trigger = 2;  // and compactions
  o.level1_max_bytes = 256 << 10;
  o.target_file_size = 64 << 10;
  o.tablet_split_size = 96 << 10;  // and tablet splits
  auto engine = Engine::Open(dir, o);
  if (!engine.ok()) {
    std::fprintf(stderr, "child open: %s\n", engine.status().ToString().c_str());
    _exit(3);
  }
  auto tenant = (*engine)->OpenTenant("t");
  auto table = tenant->OpenTable("crash");
  if (!table.ok()) _exit(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      Table tab = *table;
      for (int i = 0;; i++) {
        RowMutation m;
        const std::string v = RowKey(round, t, i);
        m.Put("a", "x", 1, v).Put("a", "y", 2, v).Put("b", "z", 3, std::string(i % 200, 'p') + v);
        Status s = tab.Mutate(WriteOptions(), RowKey(round, t, i), m);
        if (!s.ok()) {
          std::fprintf(stderr, "child write: %s\n", s.ToString().c_str());
          _exit(5);
        }
        char line[64];
        int n = std::snprintf(line, sizeof(line), "%d %d\n", t, i);
        if (write(fd, line, n) != n) _exit(6);
      }
    });
  }
  for (auto& th : threads) th.join();
  _exit(0);
}

struct RoundResult {
  std::map<int, int> max_acked;  // thread -> highest acknowledged index (-1: none)
};

TEST(CrashTest, SigkillDuringSyncedWritesLosesNothing) {
  test::ScratchDir dir("crash");
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("STRATA_TEST_SEED=" + std::to_string(seed));
  Random rnd(seed);
  {
    auto engine = Engine::Open(dir.path());
    ASSERT_OK(engine);
    ASSERT_OK((*engine)->CreateTenant("t"));
    ASSERT_OK((*engine)->OpenTenant("t")->CreateTable("crash", CrashSchema()));
  }
  const int rounds = test::LongTests() ? 200 : 24;
  std::vector<RoundResult> results;
  uint64_t tablets = 0;
  for (int round = 0; round < rounds; round++) {
    const bool use_uring = round % 2 == 0;
    const bool apply_before_sync = round % 4 >= 2;
    const test::KilledChild killed = test::RunChildUntilKilled(
        [&](int fd) { RunChild(dir.path(), round, fd, use_uring, apply_before_sync); },
        static_cast<int>(rnd.Uniform(100)));
    ASSERT_TRUE(killed.error.empty()) << "round " << round << ": " << killed.error;
    const std::string& acks = killed.output;

    RoundResult rr;
    for (int t = 0; t < kThreads; t++) rr.max_acked[t] = -1;
    size_t pos = 0;
    while (true) {
      size_t nl = acks.find('\n', pos);
      if (nl == std::string::npos) break;  // a partial last line is no acknowledgement
      int t, i;
      ASSERT_EQ(std::sscanf(acks.c_str() + pos, "%d %d", &t, &i), 2);
      rr.max_acked[t] = std::max(rr.max_acked[t], i);
      pos = nl + 1;
    }
    results.push_back(rr);

    // Reopen and check every round so far.
    auto engine = Engine::Open(dir.path());
    ASSERT_OK(engine) << "round " << round << ": " << engine.status().ToString();
    auto table = (*engine)->OpenTenant("t")->OpenTable("crash");
    ASSERT_OK(table);
    for (int r = 0; r <= round; r++) {
      for (int t = 0; t < kThreads; t++) {
        // Every acknowledged row is whole.
        for (int i = 0; i <= results[r].max_acked[t]; i++) {
          auto cells = table->ReadRow(ReadOptions(), RowKey(r, t, i));
          ASSERT_OK(cells);
          ASSERT_EQ(cells->size(), static_cast<size_t>(kCellsPerRow))
              << "acknowledged row " << RowKey(r, t, i) << " lost or partial after round "
              << round;
          EXPECT_EQ((*cells)[0].value, RowKey(r, t, i));
        }
        // Rows past the acknowledged ones (in flight at the kill) are whole or absent.
        for (int i = results[r].max_acked[t] + 1; i <= results[r].max_acked[t] + 64; i++) {
          auto cells = table->ReadRow(ReadOptions(), RowKey(r, t, i));
          ASSERT_OK(cells);
          ASSERT_TRUE(cells->empty() || cells->size() == static_cast<size_t>(kCellsPerRow))
              << "row " << RowKey(r, t, i) << " half applied";
        }
      }
    }
    tablets = (*engine)->GetStats().tablets;
    ASSERT_OK((*engine)->Close());
  }
  int total = 0;
  for (const auto& rr : results) {
    for (const auto& [t, i] : rr.max_acked) total += i + 1;
  }
  std::printf("crash test: %d rounds, %d acknowledged rows checked, %llu tablets at the end\n",
              rounds, total, static_cast<unsigned long long>(tablets));
  EXPECT_GT(total, 0);
}

}  // namespace
}  // namespace strata
