// Tests of LocalTimestampOracle: uniqueness and order under many threads, a
// fake clock that freezes and steps back, exhausting the logical counter,
// failed ceiling writes, power loss and restart.
#include "txn/local_timestamp_oracle.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "common/fault_injection_fs.h"
#include "common/random.h"
#include "util/fake_clock.h"
#include "txn/timestamp.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::txn {
namespace {

using test::FakeClock;
using test::ScratchDir;

std::unique_ptr<LocalTimestampOracle> OpenOracle(const std::string& dir, FileSystem* fs,
                                                 Clock* clock, uint64_t window_millis) {
  LocalTimestampOracleOptions options;
  options.fs = fs;
  options.clock = clock;
  options.window_millis = window_millis;
  std::unique_ptr<LocalTimestampOracle> oracle;
  Status s = LocalTimestampOracle::Open(dir, options, &oracle);
  EXPECT_OK(s);
  return oracle;
}

uint64_t MustGet(TimestampOracle* oracle) {
  Result<uint64_t> ts = oracle->GetTimestamp();
  EXPECT_OK(ts);
  return ts.ok() ? *ts : 0;
}

// Expects no duplicate in `all` (sorted in place).
void ExpectUnique(std::vector<uint64_t>* all) {
  std::sort(all->begin(), all->end());
  auto dup = std::adjacent_find(all->begin(), all->end());
  EXPECT_TRUE(dup == all->end()) << "timestamp " << *dup << " handed out twice";
}

TEST(TimestampLayoutTest, PhysicalAndLogicalParts) {
  const uint64_t ts = ComposeTimestamp(1'700'000'000'000, 5);
  EXPECT_EQ(PhysicalMillis(ts), 1'700'000'000'000u);
  EXPECT_EQ(LogicalPart(ts), 5u);
  EXPECT_EQ(ts, (uint64_t{1'700'000'000'000} << 18) | 5);
  // The logical counter carries into the next millisecond.
  EXPECT_EQ(ComposeTimestamp(7, kLogicalMask) + 1, ComposeTimestamp(8, 0));
}

// At the top of the range the oracle hands out what is left, never
// kMaxTimestamp, then fails: it never wraps around to repeat timestamps.
TEST(TimestampOracleTest, TopOfTheRangeIsExhaustedNotWrapped) {
  ScratchDir dir("oracle");
  FakeClock clock;
  clock.SetWallMicros((kMaxPhysicalMillis - 3) * 1000);
  auto oracle = OpenOracle(dir.path(), nullptr, &clock, 1);
  ASSERT_TRUE(oracle);
  uint64_t prev = 0;
  int failures = 0;
  for (int i = 0; i < 12; i++) {
    uint64_t first = 0;
    Status s = oracle->GetTimestamps(TimestampOracle::kMaxBatch, &first);
    if (!s.ok()) {
      EXPECT_TRUE(s.IsResourceExhausted()) << s.ToString();
      failures++;
      continue;
    }
    EXPECT_EQ(failures, 0) << "a batch after one that failed";
    EXPECT_GT(first, prev);
    prev = first + TimestampOracle::kMaxBatch - 1;
    EXPECT_LT(prev, kMaxTimestamp);
  }
  EXPECT_GT(prev, 0u);
  EXPECT_GT(failures, 0);
  Result<uint64_t> one = oracle->GetTimestamp();
  EXPECT_FALSE(one.ok());
}

TEST(TimestampOracleTest, SequentialAndBatched) {
  ScratchDir dir("oracle");
  FakeClock clock;
  auto oracle = OpenOracle(dir.path(), nullptr, &clock, 3000);
  ASSERT_TRUE(oracle);
  uint64_t prev = MustGet(oracle.get());
  EXPECT_GT(prev, 0u);
  EXPECT_EQ(PhysicalMillis(prev), clock.NowMicros() / 1000);
  EXPECT_EQ(LogicalPart(prev), 0u);
  for (int i = 0; i < 1000; i++) {
    uint64_t first = 0;
    const uint32_t n = 1 + i % 20;
    ASSERT_OK(oracle->GetTimestamps(n, &first));
    EXPECT_GT(first, prev);
    prev = first + n - 1;
    const uint64_t single = MustGet(oracle.get());
    EXPECT_GT(single, prev);
    prev = single;
  }
  EXPECT_LE(prev, oracle->persisted_ceiling());

  // The physical part follows the clock.
  clock.Advance(5'000'000);
  const uint64_t later = MustGet(oracle.get());
  EXPECT_EQ(PhysicalMillis(later), clock.NowMicros() / 1000);
  EXPECT_EQ(LogicalPart(later), 0u);
  EXPECT_LE(later, oracle->persisted_ceiling());
}

TEST(TimestampOracleTest, RejectsBadBatchSizes) {
  ScratchDir dir("oracle");
  auto oracle = OpenOracle(dir.path(), nullptr, nullptr, 3000);
  ASSERT_TRUE(oracle);
  uint64_t first = 0;
  EXPECT_TRUE(oracle->GetTimestamps(0, &first).IsInvalidArgument());
  EXPECT_TRUE(oracle->GetTimestamps(TimestampOracle::kMaxBatch + 1, &first).IsInvalidArgument());
  EXPECT_OK(oracle->GetTimestamps(TimestampOracle::kMaxBatch, &first));
}

TEST(TimestampOracleTest, RejectsBadOptionsAndSecondOpen) {
  ScratchDir dir("oracle");
  LocalTimestampOracleOptions options;
  std::unique_ptr<LocalTimestampOracle> oracle;
  options.window_millis = 0;
  EXPECT_TRUE(LocalTimestampOracle::Open(dir.path(), options, &oracle).IsInvalidArgument());
  options.window_millis = LocalTimestampOracle::kMaxWindowMillis + 1;
  EXPECT_TRUE(LocalTimestampOracle::Open(dir.path(), options, &oracle).IsInvalidArgument());
  options.window_millis = 100;
  ASSERT_OK(LocalTimestampOracle::Open(dir.path(), options, &oracle));
  std::unique_ptr<LocalTimestampOracle> second;
  Status s = LocalTimestampOracle::Open(dir.path(), options, &second);
  EXPECT_TRUE(s.IsBusy()) << s.ToString();
  oracle.reset();
  EXPECT_OK(LocalTimestampOracle::Open(dir.path(), options, &second));
}

// Many threads, singles and batches, the real clock and a window of a few
// milliseconds so that refills (and callers sharing them) happen all the time.
TEST(TimestampOracleTest, ManyThreadsUniqueAndOrdered) {
  ScratchDir dir("oracle");
  auto oracle = OpenOracle(dir.path(), nullptr, nullptr, /*window_millis=*/2);
  ASSERT_TRUE(oracle);
  constexpr int kThreads = 16;
  const int per_thread = test::LongTests() ? 400'000 : 40'000;
  std::vector<std::vector<uint64_t>> got(kThreads);
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      std::vector<uint64_t>& mine = got[t];
      mine.reserve(per_thread + 64);
      Random rnd(1000 + t);
      while (static_cast<int>(mine.size()) < per_thread) {
        if (rnd.OneIn(4)) {
          const uint32_t n = 1 + rnd.Uniform(32);
          uint64_t first = 0;
          if (!oracle->GetTimestamps(n, &first).ok()) {
            errors++;
            return;
          }
          for (uint32_t i = 0; i < n; i++) mine.push_back(first + i);
        } else {
          Result<uint64_t> ts = oracle->GetTimestamp();
          if (!ts.ok()) {
            errors++;
            return;
          }
          mine.push_back(*ts);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_EQ(errors.load(), 0);

  const uint64_t ceiling = oracle->persisted_ceiling();
  std::vector<uint64_t> all;
  for (int t = 0; t < kThreads; t++) {
    for (size_t i = 1; i < got[t].size(); i++) {
      ASSERT_LT(got[t][i - 1], got[t][i]) << "thread " << t << " index " << i;
    }
    EXPECT_LE(got[t].back(), ceiling);
    all.insert(all.end(), got[t].begin(), got[t].end());
  }
  ExpectUnique(&all);
  EXPECT_GT(oracle->GetStats().ceiling_writes, 1u);
}

// A timestamp taken after another call returned (in any thread) is larger.
TEST(TimestampOracleTest, OrderAcrossThreadsFollowsHappensBefore) {
  ScratchDir dir("oracle");
  auto oracle = OpenOracle(dir.path(), nullptr, nullptr, 3000);
  ASSERT_TRUE(oracle);
  std::atomic<uint64_t> handed{0};
  std::atomic<bool> bad{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50'000; i++) {
        const uint64_t seen = handed.load();  // a timestamp another call returned
        Result<uint64_t> ts = oracle->GetTimestamp();
        if (!ts.ok() || *ts <= seen) bad = true;
        uint64_t cur = handed.load();
        while (ts.ok() && cur < *ts && !handed.compare_exchange_weak(cur, *ts)) {
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_FALSE(bad.load());
}

TEST(TimestampOracleTest, FrozenClockMovesToNextMillisecond) {
  ScratchDir dir("oracle");
  FakeClock clock;
  auto oracle = OpenOracle(dir.path(), nullptr, &clock, /*window_millis=*/1);
  ASSERT_TRUE(oracle);
  const uint64_t ms = clock.NowMicros() / 1000;
  uint64_t first = 0;
  ASSERT_OK(oracle->GetTimestamps(TimestampOracle::kMaxBatch, &first));
  EXPECT_EQ(first, ComposeTimestamp(ms, 0));
  // The counter of this millisecond is used up; the next timestamp is in the
  // next millisecond although the clock has not moved.
  const uint64_t next = MustGet(oracle.get());
  EXPECT_EQ(next, ComposeTimestamp(ms + 1, 0));
  // Keep going, well past several windows, with the clock frozen: strictly
  // increasing, and every value covered by a durable ceiling.
  uint64_t prev = next;
  for (int i = 0; i < 20; i++) {
    ASSERT_OK(oracle->GetTimestamps(TimestampOracle::kMaxBatch / 2 + 7, &first));
    EXPECT_EQ(first, prev + 1);  // nothing else takes timestamps here
    prev = first + TimestampOracle::kMaxBatch / 2 + 6;
    const uint64_t single = MustGet(oracle.get());
    EXPECT_EQ(single, prev + 1);
    prev = single;
    EXPECT_LE(prev, oracle->persisted_ceiling());
  }
  EXPECT_GT(PhysicalMillis(prev), ms + 10);
  EXPECT_EQ(clock.NowMicros() / 1000, ms);
}

TEST(TimestampOracleTest, ClockSteppingBackNeverMovesTimestampsBack) {
  ScratchDir dir("oracle");
  FakeClock clock;
  auto oracle = OpenOracle(dir.path(), nullptr, &clock, /*window_millis=*/50);
  ASSERT_TRUE(oracle);
  const uint64_t start_micros = clock.NowMicros();
  const uint64_t a = MustGet(oracle.get());
  clock.SetWallMicros(start_micros - 3'600'000'000);  // an hour back
  const uint64_t b = MustGet(oracle.get());
  EXPECT_EQ(b, a + 1);
  EXPECT_EQ(PhysicalMillis(b), start_micros / 1000);
  clock.SetWallMicros(start_micros + 2'000);  // forward again, 2 ms
  const uint64_t c = MustGet(oracle.get());
  EXPECT_EQ(c, ComposeTimestamp(start_micros / 1000 + 2, 0));
  clock.SetWallMicros(start_micros + 1'000);  // back by 1 ms
  EXPECT_EQ(MustGet(oracle.get()), c + 1);
}

// Threads take timestamps while another thread moves the fake clock back and
// forth, freezes it and jumps it ahead.
TEST(TimestampOracleTest, ManyThreadsWithAnErraticClock) {
  ScratchDir dir("oracle");
  FakeClock clock;
  const uint64_t base = clock.NowMicros();
  auto oracle = OpenOracle(dir.path(), nullptr, &clock, /*window_millis=*/30);
  ASSERT_TRUE(oracle);
  std::atomic<bool> stop{false};
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::thread mover([&] {
    Random rnd(seed);
    uint64_t t = base;
    while (!stop.load()) {
      // Back up to 20 ms, ahead up to 20 ms, frozen, or a steady millisecond.
      const uint64_t move = rnd.Uniform(4);
      if (move == 0) {
        t -= rnd.Uniform(20'000);
      } else if (move == 1) {
        t += rnd.Uniform(20'000);
      } else if (move == 3) {
        t += 1'000;
      }
      clock.SetWallMicros(t);
      std::this_thread::yield();
    }
  });
  constexpr int kThreads = 8;
  // Per thread, the [first, last] of each call, in call order.
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> got(kThreads);
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10'000; i++) {
        uint64_t first = 0;
        const uint32_t n = (i % 3 == 0) ? 3000 : 1;
        if (!oracle->GetTimestamps(n, &first).ok()) {
          errors++;
          return;
        }
        got[t].emplace_back(first, first + n - 1);
      }
    });
  }
  for (auto& th : threads) th.join();
  stop = true;
  mover.join();
  ASSERT_EQ(errors.load(), 0);
  std::vector<std::pair<uint64_t, uint64_t>> all;
  for (auto& mine : got) {
    for (size_t i = 1; i < mine.size(); i++) ASSERT_LT(mine[i - 1].second, mine[i].first);
    all.insert(all.end(), mine.begin(), mine.end());
  }
  // No two calls' ranges overlap.
  std::sort(all.begin(), all.end());
  for (size_t i = 1; i < all.size(); i++) {
    ASSERT_LT(all[i - 1].second, all[i].first) << "ranges overlap at " << all[i].first;
  }
  EXPECT_LE(all.back().second, oracle->persisted_ceiling());
}

TEST(TimestampOracleTest, RestartStartsAboveCeiling) {
  ScratchDir dir("oracle");
  FakeClock clock;
  uint64_t last = 0, ceiling = 0;
  {
    auto oracle = OpenOracle(dir.path(), nullptr, &clock, 10'000);
    ASSERT_TRUE(oracle);
    for (int i = 0; i < 100; i++) last = MustGet(oracle.get());
    ceiling = oracle->persisted_ceiling();
    EXPECT_GE(PhysicalMillis(ceiling), clock.NowMicros() / 1000 + 10'000);
  }
  // The clock stepped back over the restart; the ceiling still holds.
  clock.SetWallMicros(clock.NowMicros() - 60'000'000);
  auto oracle = OpenOracle(dir.path(), nullptr, &clock, 10'000);
  ASSERT_TRUE(oracle);
  const uint64_t first = MustGet(oracle.get());
  EXPECT_GT(first, last);
  EXPECT_EQ(first, ceiling + 1);
}

// A failed fsync (or write) of the ceiling: the oracle hands out nothing above
// the old ceiling and says so with an error; once the disk works again it
// carries on above everything it handed out.
TEST(TimestampOracleTest, FailedCeilingSyncRefusesAboveOldCeiling) {
  for (FaultOp op : {FaultOp::kSync, FaultOp::kWrite}) {
    SCOPED_TRACE(FaultOpName(op));
    ScratchDir dir("oracle");
    FaultInjectionFileSystem fs;
    FakeClock clock;
    auto oracle = OpenOracle(dir.path(), &fs, &clock, /*window_millis=*/10);
    ASSERT_TRUE(oracle);
    uint64_t max_handed = MustGet(oracle.get());
    const uint64_t old_ceiling = oracle->persisted_ceiling();
    fs.FailAfter(op, 0, -1, EIO, LocalTimestampOracle::kCeilingFileName);

    // Past the middle of the window an early refill is tried and fails, but
    // timestamps below the durable ceiling are still fine.
    clock.Advance(7'000);
    const uint64_t inside = MustGet(oracle.get());
    EXPECT_GT(inside, max_handed);
    EXPECT_LE(inside, old_ceiling);
    max_handed = inside;
    EXPECT_GE(fs.InjectedCount(op), 1u);

    // Use up the rest of the window with the clock frozen: everything handed
    // out is at or below the old ceiling, then an error.
    Status s;
    for (int i = 0; i < 100 && s.ok(); i++) {
      uint64_t first = 0;
      s = oracle->GetTimestamps(TimestampOracle::kMaxBatch, &first);
      if (s.ok()) {
        EXPECT_GT(first, max_handed);
        max_handed = first + TimestampOracle::kMaxBatch - 1;
        EXPECT_LE(max_handed, old_ceiling);
      }
    }
    EXPECT_TRUE(s.IsIOError()) << s.ToString();
    // Time passing does not help while the disk fails.
    clock.Advance(60'000);
    Result<uint64_t> r = oracle->GetTimestamp();
    EXPECT_TRUE(r.status().IsIOError()) << r.status().ToString();
    EXPECT_EQ(oracle->persisted_ceiling(), old_ceiling);
    EXPECT_GE(oracle->GetStats().failed_ceiling_writes, 2u);

    fs.ClearFaults();
    const uint64_t after = MustGet(oracle.get());
    EXPECT_GT(after, max_handed);
    EXPECT_EQ(PhysicalMillis(after), clock.NowMicros() / 1000);
    EXPECT_GT(oracle->persisted_ceiling(), old_ceiling);

    // And a crash that drops everything unsynced cannot bring back an older
    // ceiling than what was handed out.
    oracle.reset();
    ASSERT_OK(fs.DropUnsyncedData());
    oracle = OpenOracle(dir.path(), &fs, &clock, 10);
    ASSERT_TRUE(oracle);
    EXPECT_GT(MustGet(oracle.get()), after);
  }
}

// Waiters behind a failed refill share its error rather than each retrying.
TEST(TimestampOracleTest, ConcurrentCallersAtAFailedCeiling) {
  ScratchDir dir("oracle");
  FaultInjectionFileSystem fs;
  FakeClock clock;
  auto oracle = OpenOracle(dir.path(), &fs, &clock, /*window_millis=*/1);
  ASSERT_TRUE(oracle);
  const uint64_t old_ceiling = oracle->persisted_ceiling();
  fs.FailAfter(FaultOp::kSync, 0, -1, EIO, LocalTimestampOracle::kCeilingFileName);
  std::vector<std::thread> threads;
  std::atomic<uint64_t> max_ok{0};
  std::atomic<int> wrong_errors{0};
  for (int t = 0; t < 8; t++) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; i++) {
        uint64_t first = 0;
        Status s = oracle->GetTimestamps(8192, &first);
        if (s.ok()) {
          uint64_t last = first + 8191, cur = max_ok.load();
          while (cur < last && !max_ok.compare_exchange_weak(cur, last)) {
          }
        } else if (!s.IsIOError()) {
          wrong_errors++;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong_errors.load(), 0);
  EXPECT_LE(max_ok.load(), old_ceiling);
  EXPECT_EQ(oracle->persisted_ceiling(), old_ceiling);
  fs.ClearFaults();
  EXPECT_GT(MustGet(oracle.get()), max_ok.load());
}

TEST(TimestampOracleTest, OpenFailsWhenTheFirstCeilingCannotBeSynced) {
  ScratchDir dir("oracle");
  FaultInjectionFileSystem fs;
  FakeClock clock;
  uint64_t last = 0;
  {
    auto oracle = OpenOracle(dir.path(), &fs, &clock, 100);
    ASSERT_TRUE(oracle);
    last = MustGet(oracle.get());
  }
  fs.FailAfter(FaultOp::kSync, 0, 1, EIO);
  LocalTimestampOracleOptions options;
  options.fs = &fs;
  options.clock = &clock;
  std::unique_ptr<LocalTimestampOracle> oracle;
  Status s = LocalTimestampOracle::Open(dir.path(), options, &oracle);
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  // The directory lock was released with the failed open.
  ASSERT_OK(LocalTimestampOracle::Open(dir.path(), options, &oracle));
  EXPECT_GT(MustGet(oracle.get()), last);
}

// Power loss, with and without a torn ceiling write in flight.
TEST(TimestampOracleTest, PowerLossKeepsTheCeiling) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Random rnd(seed);
  ScratchDir dir("oracle");
  FaultInjectionFileSystem fs;
  FakeClock clock;
  uint64_t max_handed = 0;
  for (int round = 0; round < 20; round++) {
    auto oracle = OpenOracle(dir.path(), &fs, &clock, /*window_millis=*/2);
    ASSERT_TRUE(oracle);
    for (int i = 0; i < 50; i++) {
      Result<uint64_t> ts = oracle->GetTimestamp();
      if (ts.ok()) {
        ASSERT_GT(*ts, max_handed);
        max_handed = *ts;
      }
      clock.Advance(rnd.Uniform(3000));
      if (rnd.OneIn(10)) fs.FailAfter(FaultOp::kSync, 0, 1, EIO);
    }
    // The crash: the disk stops, the process goes, unsynced data is lost or torn.
    if (rnd.OneIn(2)) fs.FailAfter(FaultOp::kSync, 0, -1, EIO);
    Result<uint64_t> ts = oracle->GetTimestamp();  // may leave a write in flight
    if (ts.ok()) max_handed = std::max(max_handed, *ts);
    fs.SetFilesystemActive(false);
    oracle.reset();
    fs.ClearFaults();
    if (rnd.OneIn(2)) {
      ASSERT_OK(fs.TearUnsyncedData(&rnd));
    } else {
      ASSERT_OK(fs.DropUnsyncedData());
    }
    fs.SetFilesystemActive(true);
    if (rnd.OneIn(3)) clock.SetWallMicros(clock.NowMicros() - rnd.Uniform(100'000));
  }
  auto oracle = OpenOracle(dir.path(), &fs, &clock, 2);
  ASSERT_TRUE(oracle);
  EXPECT_GT(MustGet(oracle.get()), max_handed);
}

}  // namespace
}  // namespace strata::txn
