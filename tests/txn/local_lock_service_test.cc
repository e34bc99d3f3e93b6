// Tests of LocalLockService: try-lock, lease expiry, renew, unlock by the
// wrong owner, keys of (tenant, table, row), a randomized run against a model,
// and mutual exclusion under concurrent use.
#include "txn/local_lock_service.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/random.h"
#include "util/fake_clock.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::txn {
namespace {

using test::FakeClock;

const LockKey kRow{"tenant", "table", "row1"};
constexpr uint64_t kLease = 1'000'000;

TEST(LockServiceTest, TryLockExcludesOtherOwners) {
  FakeClock clock;
  LocalLockService locks({.clock = &clock});
  ASSERT_OK(locks.TryLock(kRow, 1, kLease));
  Status s = locks.TryLock(kRow, 2, kLease);
  EXPECT_TRUE(s.IsBusy()) << s.ToString();
  EXPECT_NE(s.message().find("row1"), std::string_view::npos);
  // The same owner may take it again (renewing it).
  ASSERT_OK(locks.TryLock(kRow, 1, kLease));
  // Other rows are independent.
  ASSERT_OK(locks.TryLock({"tenant", "table", "row2"}, 2, kLease));
}

TEST(LockServiceTest, KeysAreTenantTableRowTriples) {
  LocalLockService locks;
  // Same bytes concatenated, different triples: different locks.
  ASSERT_OK(locks.TryLock({"ab", "c", "d"}, 1, kLease));
  ASSERT_OK(locks.TryLock({"a", "bc", "d"}, 2, kLease));
  ASSERT_OK(locks.TryLock({"a", "b", "cd"}, 3, kLease));
  // Same row and table name in another tenant, or another table.
  ASSERT_OK(locks.TryLock({"other", "c", "d"}, 4, kLease));
  ASSERT_OK(locks.TryLock({"ab", "x", "d"}, 5, kLease));
  EXPECT_TRUE(locks.TryLock({"ab", "c", "d"}, 9, kLease).IsBusy());
  // Binary bytes are fine.
  const std::string row("\0\xff\0", 3);
  ASSERT_OK(locks.TryLock({"ab", "c", row}, 6, kLease));
  EXPECT_TRUE(locks.TryLock({"ab", "c", row}, 7, kLease).IsBusy());
}

TEST(LockServiceTest, RejectsBadArguments) {
  LocalLockService locks;
  EXPECT_TRUE(locks.TryLock({"", "t", "r"}, 1, kLease).IsInvalidArgument());
  EXPECT_TRUE(locks.TryLock({"x", "", "r"}, 1, kLease).IsInvalidArgument());
  EXPECT_TRUE(locks.TryLock({"x", "t", ""}, 1, kLease).IsInvalidArgument());
  EXPECT_TRUE(locks.TryLock(kRow, 0, kLease).IsInvalidArgument());
  EXPECT_TRUE(locks.TryLock(kRow, 1, 0).IsInvalidArgument());
  EXPECT_TRUE(locks.TryLock(kRow, 1, LockService::kMaxLeaseMicros + 1).IsInvalidArgument());
  EXPECT_TRUE(locks.Renew(kRow, 0, kLease).IsInvalidArgument());
  EXPECT_TRUE(locks.Unlock({"x", "t", ""}, 1).IsInvalidArgument());
  EXPECT_EQ(locks.TrackedLocks(), 0u);
}

TEST(LockServiceTest, LeaseExpiryFreesTheLock) {
  FakeClock clock;
  LocalLockService locks({.clock = &clock});
  ASSERT_OK(locks.TryLock(kRow, 1, kLease));
  clock.Advance(kLease - 1);
  EXPECT_TRUE(locks.TryLock(kRow, 2, kLease).IsBusy());
  clock.Advance(1);
  ASSERT_OK(locks.TryLock(kRow, 2, kLease));  // expired: free for another owner
  // The former holder has lost it.
  EXPECT_TRUE(locks.Renew(kRow, 1, kLease).IsFailedPrecondition());
  EXPECT_TRUE(locks.Unlock(kRow, 1).IsFailedPrecondition());
  EXPECT_TRUE(locks.TryLock(kRow, 1, kLease).IsBusy());
}

TEST(LockServiceTest, ExpiredLeaseCannotBeRenewedEvenIfNobodyTookIt) {
  FakeClock clock;
  LocalLockService locks({.clock = &clock});
  ASSERT_OK(locks.TryLock(kRow, 1, kLease));
  clock.Advance(kLease);
  EXPECT_TRUE(locks.Renew(kRow, 1, kLease).IsFailedPrecondition());
  EXPECT_TRUE(locks.Unlock(kRow, 1).IsNotFound());
  ASSERT_OK(locks.TryLock(kRow, 1, kLease));  // but it can take it afresh
}

TEST(LockServiceTest, RenewExtendsTheLease) {
  FakeClock clock;
  LocalLockService locks({.clock = &clock});
  ASSERT_OK(locks.TryLock(kRow, 1, kLease));
  for (int i = 0; i < 10; i++) {
    clock.Advance(kLease * 3 / 4);
    ASSERT_OK(locks.Renew(kRow, 1, kLease));
    EXPECT_TRUE(locks.TryLock(kRow, 2, kLease).IsBusy());
  }
  // Renewing with a shorter lease shortens it.
  ASSERT_OK(locks.Renew(kRow, 1, 10));
  clock.Advance(10);
  ASSERT_OK(locks.TryLock(kRow, 2, kLease));
  // Nobody but the holder renews.
  EXPECT_TRUE(locks.Renew(kRow, 1, kLease).IsFailedPrecondition());
  EXPECT_TRUE(locks.Renew({"t", "t", "never"}, 1, kLease).IsFailedPrecondition());
}

TEST(LockServiceTest, UnlockByTheWrongOwnerIsRefused) {
  FakeClock clock;
  LocalLockService locks({.clock = &clock});
  ASSERT_OK(locks.TryLock(kRow, 1, kLease));
  Status s = locks.Unlock(kRow, 2);
  EXPECT_TRUE(s.IsFailedPrecondition()) << s.ToString();
  EXPECT_TRUE(locks.TryLock(kRow, 2, kLease).IsBusy());  // still held by 1
  ASSERT_OK(locks.Unlock(kRow, 1));
  EXPECT_TRUE(locks.Unlock(kRow, 1).IsNotFound());
  ASSERT_OK(locks.TryLock(kRow, 2, kLease));
  EXPECT_EQ(locks.TrackedLocks(), 1u);
}

TEST(LockServiceTest, ExpiredLocksAreSweptAway) {
  FakeClock clock;
  LocalLockService locks({.clock = &clock});
  for (int i = 0; i < 20'000; i++) {
    ASSERT_OK(locks.TryLock({"t", "t", "row" + std::to_string(i)}, 1, 1000));
    clock.Advance(10);  // about 100 leases alive at any time
  }
  EXPECT_LT(locks.TrackedLocks(), 16u * 300);
}

// Random operations against a model: a map from key to (owner, deadline).
TEST(LockServiceTest, RandomizedAgainstModel) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Random rnd(seed);
  FakeClock clock;
  LocalLockService locks({.clock = &clock});
  struct Held {
    uint64_t owner;
    uint64_t deadline;  // micros of fake monotonic time
  };
  std::map<std::tuple<std::string, std::string, std::string>, Held> model;
  uint64_t now = 0;  // fake micros since start
  const int ops = test::LongTests() ? 1'000'000 : 100'000;
  for (int i = 0; i < ops; i++) {
    const std::string tenant = "t" + std::to_string(rnd.Uniform(2));
    const std::string table = "b" + std::to_string(rnd.Uniform(2));
    const std::string row = "r" + std::to_string(rnd.Uniform(8));
    const LockKey key{tenant, table, row};
    const uint64_t owner = 1 + rnd.Uniform(4);
    const uint64_t lease = 1 + rnd.Uniform(200);
    auto it = model.find({tenant, table, row});
    const bool held = it != model.end() && it->second.deadline > now;
    const bool mine = held && it->second.owner == owner;
    switch (rnd.Uniform(3)) {
      case 0: {
        Status s = locks.TryLock(key, owner, lease);
        if (held && !mine) {
          ASSERT_TRUE(s.IsBusy()) << i << " " << s.ToString();
        } else {
          ASSERT_OK(s) << i;
          model[{tenant, table, row}] = Held{owner, now + lease};
        }
        break;
      }
      case 1: {
        Status s = locks.Renew(key, owner, lease);
        if (mine) {
          ASSERT_OK(s) << i;
          it->second.deadline = now + lease;
        } else {
          ASSERT_TRUE(s.IsFailedPrecondition()) << i << " " << s.ToString();
        }
        break;
      }
      default: {
        Status s = locks.Unlock(key, owner);
        if (mine) {
          ASSERT_OK(s) << i;
          model.erase(it);
        } else if (held) {
          ASSERT_TRUE(s.IsFailedPrecondition()) << i << " " << s.ToString();
        } else {
          ASSERT_TRUE(s.IsNotFound()) << i << " " << s.ToString();
        }
        break;
      }
    }
    const uint64_t step = rnd.Uniform(20);
    clock.Advance(step);
    now += step;
  }
}

// Workers contend for a few rows with real time and long leases; each records
// entering and leaving its critical section, so two holders at once show up.
TEST(LockServiceTest, ConcurrentTryLockIsMutuallyExclusive) {
  LocalLockService locks;
  constexpr int kRows = 4;
  constexpr int kThreads = 8;
  std::atomic<int> inside[kRows] = {};
  std::atomic<int> violations{0};
  std::atomic<int> acquired{0};
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      Random rnd(77 + t);
      const uint64_t owner = 100 + t;
      for (int i = 0; i < 20'000; i++) {
        const int r = static_cast<int>(rnd.Uniform(kRows));
        const std::string row = "row" + std::to_string(r);
        const LockKey key{"tenant", "table", row};
        Status s = locks.TryLock(key, owner, 60'000'000);
        if (s.IsBusy()) continue;
        if (!s.ok()) {
          errors++;
          continue;
        }
        acquired++;
        if (inside[r].fetch_add(1) != 0) violations++;
        if (rnd.OneIn(4) && !locks.Renew(key, owner, 60'000'000).ok()) errors++;
        if (inside[r].fetch_sub(1) != 1) violations++;
        if (!locks.Unlock(key, owner).ok()) errors++;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(violations.load(), 0);
  EXPECT_EQ(errors.load(), 0);
  EXPECT_GT(acquired.load(), 0);
  EXPECT_EQ(locks.TrackedLocks(), 0u);
}

}  // namespace
}  // namespace strata::txn
