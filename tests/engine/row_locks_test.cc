// RowLocks: shared holders coexist, exclusive holders exclude everyone, a set
// of stripes is taken once each and in order, and neither kind of holder
// starves the other.
#include "engine/row_locks.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "util/test_util.h"

namespace strata::engine {
namespace {

using Clock = std::chrono::steady_clock;

TEST(RowLocksTest, StripesDependOnTableAndRow) {
  int same = 0;
  for (int i = 0; i < 1000; i++) {
    const std::string row = "row" + std::to_string(i);
    EXPECT_EQ(RowLocks::StripeOf(1, row), RowLocks::StripeOf(1, row));
    EXPECT_LT(RowLocks::StripeOf(1, row), RowLocks::kStripes);
    if (RowLocks::StripeOf(1, row) == RowLocks::StripeOf(2, row)) same++;
  }
  EXPECT_LT(same, 10);
}

TEST(RowLocksTest, SharedHoldersCoexist) {
  RowLocks locks;
  locks.LockShared(7);
  std::atomic<bool> got{false};
  std::thread other([&] {
    locks.LockShared(7);
    got = true;
    locks.UnlockShared(7);
  });
  other.join();  // would hang if shared holders excluded each other
  EXPECT_TRUE(got);
  locks.UnlockShared(7);
}

TEST(RowLocksTest, ExclusiveExcludesEveryone) {
  RowLocks locks;
  const int threads = 4;
  const int rounds = test::UnderSanitizer() ? 200 : 2000;
  int counter = 0;  // written only under the exclusive lock
  std::atomic<int> readers_inside{0};
  std::atomic<bool> overlap{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; t++) {
    workers.emplace_back([&, t] {
      for (int i = 0; i < rounds; i++) {
        if ((i + t) % 3 == 0) {
          locks.LockShared(3);
          readers_inside++;
          volatile int seen = counter;  // a read the exclusive holders must not race
          (void)seen;
          readers_inside--;
          locks.UnlockShared(3);
        } else {
          locks.LockExclusive(3);
          if (readers_inside.load() != 0) overlap = true;
          counter++;
          locks.UnlockExclusive(3);
        }
      }
    });
  }
  for (auto& w : workers) w.join();
  EXPECT_FALSE(overlap);
  int expected = 0;
  for (int t = 0; t < threads; t++) {
    for (int i = 0; i < rounds; i++) expected += (i + t) % 3 != 0;
  }
  EXPECT_EQ(counter, expected);
}

TEST(RowLocksTest, ExclusiveSetsTakeEachStripeOnceInOrder) {
  RowLocks locks;
  const int rounds = test::UnderSanitizer() ? 200 : 2000;
  std::atomic<int> done{0};
  // Opposite orders and repeats: would deadlock without sorting and dedup.
  std::thread a([&] {
    for (int i = 0; i < rounds; i++) {
      ExclusiveRowLocks l(&locks, {1, 2, 3, 2, 1});
      done++;
    }
  });
  std::thread b([&] {
    for (int i = 0; i < rounds; i++) {
      ExclusiveRowLocks l(&locks, {3, 2, 1});
      done++;
    }
  });
  std::thread c([&] {
    for (int i = 0; i < rounds; i++) {
      SharedRowLock l(&locks, 1, "x");
      done++;
    }
  });
  a.join();
  b.join();
  c.join();
  EXPECT_EQ(done, 3 * rounds);
}

// Shared holders that always overlap one another do not keep an exclusive
// locker out, and exclusive holders back to back do not keep a shared one out.
TEST(RowLocksTest, NeitherKindStarves) {
  RowLocks locks;
  std::atomic<bool> stop{false};
  auto hold = [&](bool exclusive) {
    while (!stop) {
      if (exclusive) {
        locks.LockExclusive(5);
      } else {
        locks.LockShared(5);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(500));
      if (exclusive) {
        locks.UnlockExclusive(5);
      } else {
        locks.UnlockShared(5);
      }
    }
  };
  for (bool exclusive_stream : {false, true}) {
    SCOPED_TRACE(exclusive_stream ? "exclusive stream" : "shared stream");
    stop = false;
    std::vector<std::thread> stream;
    for (int i = 0; i < 3; i++) stream.emplace_back(hold, exclusive_stream);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::atomic<bool> done{false};
    std::thread prober([&] {
      for (int i = 0; i < 20; i++) {
        if (exclusive_stream) {
          locks.LockShared(5);
          locks.UnlockShared(5);
        } else {
          locks.LockExclusive(5);
          locks.UnlockExclusive(5);
        }
      }
      done = true;
    });
    // Each acquisition waits for about one holding period; 20 s means starved.
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    while (!done && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_TRUE(done);
    stop = true;
    for (auto& t : stream) t.join();
    prober.join();
  }
}

}  // namespace
}  // namespace strata::engine
