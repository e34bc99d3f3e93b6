#include "common/latency_recorder.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace strata {
namespace {

TEST(LatencyRecorderTest, BucketsHoldTheirInclusiveUpperBound) {
  LatencyRecorder r;
  for (uint64_t v : {0, 1, 2, 3, 5, 6, 100'000'000, 100'000'001}) r.Add(v);
  const LatencyHistogram h = r.Snapshot();
  EXPECT_EQ(h.counts[0], 2u);  // 0 and 1
  EXPECT_EQ(h.counts[1], 1u);  // 2
  EXPECT_EQ(h.counts[2], 2u);  // 3 and 5
  EXPECT_EQ(h.counts[3], 1u);  // 6
  EXPECT_EQ(h.counts[LatencyHistogram::kBounds.size() - 1], 1u);
  EXPECT_EQ(h.counts[LatencyHistogram::kBounds.size()], 1u);  // above the last bound
  EXPECT_EQ(h.count, 8u);
  EXPECT_EQ(h.sum_micros, 0u + 1 + 2 + 3 + 5 + 6 + 100'000'000 + 100'000'001);
}

TEST(LatencyRecorderTest, NanosRoundUp) {
  LatencyRecorder r;
  r.AddNanos(1);      // 1 us
  r.AddNanos(1'001);  // 2 us
  const LatencyHistogram h = r.Snapshot();
  EXPECT_EQ(h.counts[0], 1u);
  EXPECT_EQ(h.counts[1], 1u);
  EXPECT_EQ(h.sum_micros, 3u);
}

TEST(LatencyRecorderTest, PercentilesInterpolateWithinABucket) {
  LatencyHistogram empty;
  EXPECT_EQ(empty.Percentile(50), 0);
  LatencyRecorder r;
  for (int i = 0; i < 100; i++) r.Add(15);  // all in (10, 20]
  const LatencyHistogram h = r.Snapshot();
  EXPECT_DOUBLE_EQ(h.Percentile(0), 10);
  EXPECT_DOUBLE_EQ(h.Percentile(50), 15);
  EXPECT_DOUBLE_EQ(h.Percentile(100), 20);
  LatencyRecorder over;
  over.Add(1'000'000'000);
  EXPECT_DOUBLE_EQ(over.Snapshot().Percentile(99), 100'000'000);
}

TEST(LatencyRecorderTest, ConcurrentAddsAllCount) {
  LatencyRecorder r;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&r, t] {
      for (int i = 0; i < 100'000; i++) r.Add(static_cast<uint64_t>(i % 1000) * (t + 1));
    });
  }
  for (auto& t : threads) t.join();
  const LatencyHistogram h = r.Snapshot();
  EXPECT_EQ(h.count, 400'000u);
  uint64_t sum = 0;
  for (int t = 0; t < 4; t++) sum += 100u * 999 * 1000 / 2 * (t + 1);
  EXPECT_EQ(h.sum_micros, sum);
}

}  // namespace
}  // namespace strata
