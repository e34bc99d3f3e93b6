// PessimisticLocks: a key has one holder at a time, waiters get it in the
// order they came, a wait that runs out leaves the queue, and a wait that
// would close a cycle of waits fails at once.
#include "txn/pessimistic_locks.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace strata::txn {
namespace {

using Kind = PessimisticLocks::Outcome::Kind;
constexpr uint64_t kLong = 60'000'000;  // a minute: a test that waits this long has failed

TxnKey K(const char* row) { return TxnKey{"t", row, "c"}; }

// Waits until `n` transactions wait in `locks`.
void AwaitWaiting(const PessimisticLocks& locks, size_t n) {
  while (locks.waiting() != n) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

TEST(PessimisticLocksTest, OneHolderAtATime) {
  PessimisticLocks locks;
  EXPECT_EQ(locks.Acquire(K("a"), 1, 0).kind, Kind::kAcquired);
  EXPECT_EQ(locks.Acquire(K("a"), 1, 0).kind, Kind::kAcquired);  // held already
  PessimisticLocks::Outcome other = locks.Acquire(K("a"), 2, 0);
  EXPECT_EQ(other.kind, Kind::kTimeout);
  EXPECT_EQ(other.holder, 1u);
  EXPECT_EQ(locks.Acquire(K("b"), 2, 0).kind, Kind::kAcquired);
  locks.Release(2, {K("a")});  // not 2's: nothing happens
  EXPECT_EQ(locks.held(), 2u);
  locks.Release(1, {K("a")});
  locks.Release(2, {K("b")});
  EXPECT_EQ(locks.held(), 0u);
  EXPECT_EQ(locks.Acquire(K("a"), 3, 0).kind, Kind::kAcquired);
}

TEST(PessimisticLocksTest, WaitersGetTheKeyInTheOrderTheyCame) {
  PessimisticLocks locks;
  ASSERT_EQ(locks.Acquire(K("a"), 1, 0).kind, Kind::kAcquired);
  std::mutex mu;
  std::vector<uint64_t> order;
  auto wait = [&](uint64_t owner) {
    EXPECT_EQ(locks.Acquire(K("a"), owner, kLong).kind, Kind::kAcquired);
    {
      std::lock_guard<std::mutex> l(mu);
      order.push_back(owner);
    }
    locks.Release(owner, {K("a")});
  };
  std::vector<std::thread> threads;
  for (uint64_t owner = 2; owner <= 5; ++owner) {
    threads.emplace_back(wait, owner);
    AwaitWaiting(locks, owner - 1);  // queued before the next one comes
  }
  locks.Release(1, {K("a")});
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(order, (std::vector<uint64_t>{2, 3, 4, 5}));
  EXPECT_EQ(locks.held(), 0u);
}

TEST(PessimisticLocksTest, AWaitThatRunsOutLeavesTheQueue) {
  PessimisticLocks locks;
  ASSERT_EQ(locks.Acquire(K("a"), 1, 0).kind, Kind::kAcquired);
  PessimisticLocks::Outcome out = locks.Acquire(K("a"), 2, 20'000);
  EXPECT_EQ(out.kind, Kind::kTimeout);
  EXPECT_EQ(out.holder, 1u);
  EXPECT_EQ(locks.waiting(), 0u);
  locks.Release(1, {K("a")});
  EXPECT_EQ(locks.held(), 0u);  // not handed to the waiter that left
}

TEST(PessimisticLocksTest, ADeadlockOfTwoFailsTheWaitThatClosesIt) {
  PessimisticLocks locks;
  ASSERT_EQ(locks.Acquire(K("a"), 1, 0).kind, Kind::kAcquired);
  ASSERT_EQ(locks.Acquire(K("b"), 2, 0).kind, Kind::kAcquired);
  auto first = std::async(std::launch::async, [&] { return locks.Acquire(K("b"), 1, kLong); });
  AwaitWaiting(locks, 1);
  PessimisticLocks::Outcome out = locks.Acquire(K("a"), 2, kLong);
  ASSERT_EQ(out.kind, Kind::kDeadlock);
  EXPECT_EQ(out.holder, 1u);
  EXPECT_NE(out.cycle.find("transaction 2 waits for t/a/c"), std::string::npos) << out.cycle;
  EXPECT_NE(out.cycle.find("which waits for t/b/c, held by transaction 2"), std::string::npos)
      << out.cycle;
  // The one that gave way lets its keys go; the other goes on.
  locks.Release(2, {K("b")});
  EXPECT_EQ(first.get().kind, Kind::kAcquired);
  locks.Release(1, {K("a"), K("b")});
  EXPECT_EQ(locks.held(), 0u);
}

TEST(PessimisticLocksTest, ADeadlockOfThreeIsFound) {
  PessimisticLocks locks;
  ASSERT_EQ(locks.Acquire(K("a"), 1, 0).kind, Kind::kAcquired);
  ASSERT_EQ(locks.Acquire(K("b"), 2, 0).kind, Kind::kAcquired);
  ASSERT_EQ(locks.Acquire(K("c"), 3, 0).kind, Kind::kAcquired);
  auto one = std::async(std::launch::async, [&] { return locks.Acquire(K("b"), 1, kLong); });
  AwaitWaiting(locks, 1);
  auto two = std::async(std::launch::async, [&] { return locks.Acquire(K("c"), 2, kLong); });
  AwaitWaiting(locks, 2);
  EXPECT_EQ(locks.Acquire(K("a"), 3, kLong).kind, Kind::kDeadlock);
  locks.Release(3, {K("c")});
  EXPECT_EQ(two.get().kind, Kind::kAcquired);
  locks.Release(2, {K("b"), K("c")});
  EXPECT_EQ(one.get().kind, Kind::kAcquired);
  locks.Release(1, {K("a"), K("b")});
  EXPECT_EQ(locks.held(), 0u);
}

// Waiting behind a waiter is no cycle, nor is a chain that ends at a
// transaction that does not wait.
TEST(PessimisticLocksTest, ChainsWithoutACycleWait) {
  PessimisticLocks locks;
  ASSERT_EQ(locks.Acquire(K("a"), 1, 0).kind, Kind::kAcquired);
  ASSERT_EQ(locks.Acquire(K("b"), 2, 0).kind, Kind::kAcquired);
  auto two = std::async(std::launch::async, [&] { return locks.Acquire(K("a"), 2, kLong); });
  AwaitWaiting(locks, 1);
  // 3 waits for b (held by 2, which waits for a, held by 1, which runs).
  auto three = std::async(std::launch::async, [&] { return locks.Acquire(K("b"), 3, kLong); });
  AwaitWaiting(locks, 2);
  // 4 queues behind 2 for a.
  EXPECT_EQ(locks.Acquire(K("a"), 4, 10'000).kind, Kind::kTimeout);
  locks.Release(1, {K("a")});
  EXPECT_EQ(two.get().kind, Kind::kAcquired);
  locks.Release(2, {K("a"), K("b")});
  EXPECT_EQ(three.get().kind, Kind::kAcquired);
  locks.Release(3, {K("b")});
  EXPECT_EQ(locks.held(), 0u);
}

}  // namespace
}  // namespace strata::txn
