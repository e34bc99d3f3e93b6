#include "common/rate_limiter.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "util/fake_clock.h"

namespace strata {
namespace {

TEST(RateLimiterTest, UnlimitedNeverWaits) {
  test::FakeClock clock;
  RateLimiter limiter(0, &clock);
  const uint64_t start = clock.NowNanos();
  EXPECT_EQ(limiter.Request(1ull << 40), 0u);
  EXPECT_EQ(clock.NowNanos(), start);
  EXPECT_EQ(limiter.total_bytes(), 1ull << 40);
}

TEST(RateLimiterTest, SteadyStreamTakesBytesOverRate) {
  test::FakeClock clock;
  RateLimiter limiter(1'000'000, &clock, /*burst_micros=*/0);  // 1 MB/s, no burst
  const uint64_t start = clock.NowNanos();
  for (int i = 0; i < 100; i++) limiter.Request(10'000);  // 1 MB in all
  EXPECT_EQ(clock.NowNanos() - start, 1'000'000'000u);
  EXPECT_EQ(limiter.total_wait_micros(), 1'000'000u);
}

TEST(RateLimiterTest, IdleTimeEarnsCreditUpToTheBurst) {
  test::FakeClock clock;
  RateLimiter limiter(1'000'000, &clock, /*burst_micros=*/100'000);  // burst = 100 KB
  clock.Advance(10'000'000);  // 10 s idle: still only 100 KB of credit
  EXPECT_EQ(limiter.Reserve(100'000), 0u);
  // The credit is spent: the next 50 KB cost 50 ms.
  EXPECT_EQ(limiter.Reserve(50'000), 50'000u);
}

TEST(RateLimiterTest, LargeRequestWaitsItsShare) {
  test::FakeClock clock;
  RateLimiter limiter(1'000'000, &clock, /*burst_micros=*/100'000);
  clock.Advance(1'000'000);
  // 2 MB against 100 KB of credit: 1.9 s.
  EXPECT_EQ(limiter.Request(2'000'000), 1'900'000u);
}

TEST(RateLimiterTest, ChangingTheRateTakesEffect) {
  test::FakeClock clock;
  RateLimiter limiter(1'000'000, &clock, 0);
  EXPECT_EQ(limiter.Reserve(1'000'000), 1'000'000u);
  clock.Advance(1'000'000);
  limiter.SetBytesPerSecond(2'000'000);
  EXPECT_EQ(limiter.bytes_per_second(), 2'000'000u);
  EXPECT_EQ(limiter.Reserve(1'000'000), 500'000u);
  limiter.SetBytesPerSecond(0);
  EXPECT_EQ(limiter.Reserve(1'000'000), 0u);
}

// Time reserved but not yet reached is owed at the new rate: raising the
// rate shortens the wait of the next request, lowering it lengthens it.
TEST(RateLimiterTest, ChangingTheRateRescalesTheBacklog) {
  test::FakeClock clock;
  RateLimiter limiter(1'000, &clock, /*burst_micros=*/0);  // 1 KB/s
  EXPECT_EQ(limiter.Reserve(1'000'000), 1'000'000'000u);   // 1000 s owed
  limiter.SetBytesPerSecond(1'000'000'000);                // 1 GB/s: 1 ms owed
  EXPECT_EQ(limiter.Reserve(1), 1'001u);
  limiter.SetBytesPerSecond(1'000'000);  // 1 MB/s: 1 s and 1 ms owed
  EXPECT_EQ(limiter.Reserve(0), 1'000'001u);
  limiter.SetBytesPerSecond(0);  // unlimited: nothing owed, now or later
  EXPECT_EQ(limiter.Reserve(1'000'000), 0u);
  limiter.SetBytesPerSecond(1'000'000);
  EXPECT_EQ(limiter.Reserve(1'000), 1'000u);
}

TEST(RateLimiterTest, ConcurrentRequestsShareTheRate) {
  test::FakeClock clock;
  RateLimiter limiter(1'000'000, &clock, 0);
  // Without sleeping, the reservations of 4 threads add up: together they
  // are owed exactly the time their bytes cost at the rate.
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; i++) limiter.Reserve(250);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(limiter.Reserve(0), 1'000'000u);
  EXPECT_EQ(limiter.total_bytes(), 1'000'000u);
}

}  // namespace
}  // namespace strata
