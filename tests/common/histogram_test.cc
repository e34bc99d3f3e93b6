#include "common/histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common/random.h"
#include "util/test_util.h"

namespace strata {
namespace {

TEST(HistogramTest, Empty) {
  Histogram h;
  EXPECT_EQ(h.Count(), 0u);
  EXPECT_EQ(h.Sum(), 0);
  EXPECT_EQ(h.Min(), 0);
  EXPECT_EQ(h.Max(), 0);
  EXPECT_EQ(h.Average(), 0);
  EXPECT_EQ(h.StandardDeviation(), 0);
  EXPECT_EQ(h.Percentile(50), 0);
  EXPECT_NE(h.ToString().find("Count: 0"), std::string::npos);
}

TEST(HistogramTest, SingleValue) {
  Histogram h;
  h.Add(42);
  EXPECT_EQ(h.Count(), 1u);
  EXPECT_EQ(h.Min(), 42);
  EXPECT_EQ(h.Max(), 42);
  EXPECT_EQ(h.Average(), 42);
  EXPECT_EQ(h.StandardDeviation(), 0);
  // Clamped to what was seen, so exact here.
  EXPECT_EQ(h.Percentile(0), 42);
  EXPECT_EQ(h.Median(), 42);
  EXPECT_EQ(h.Percentile(99.9), 42);
  EXPECT_EQ(h.Percentile(100), 42);
}

TEST(HistogramTest, OneToHundred) {
  Histogram h;
  for (int i = 1; i <= 100; i++) h.Add(i);
  EXPECT_EQ(h.Count(), 100u);
  EXPECT_EQ(h.Sum(), 5050);
  EXPECT_EQ(h.Min(), 1);
  EXPECT_EQ(h.Max(), 100);
  EXPECT_DOUBLE_EQ(h.Average(), 50.5);
  EXPECT_NEAR(h.StandardDeviation(), 28.866, 0.001);  // population deviation
  EXPECT_NEAR(h.Median(), 50, 5);
  EXPECT_NEAR(h.Percentile(99), 99, 5);
  EXPECT_LE(h.Percentile(99.9), 100);
  EXPECT_EQ(h.Percentile(100), 100);
}

TEST(HistogramTest, BucketLimitsAreIncreasingAndBucketForAgrees) {
  EXPECT_EQ(Histogram::BucketLimit(0), 1);
  for (int b = 1; b < Histogram::kNumBuckets; b++) {
    ASSERT_LT(Histogram::BucketLimit(b - 1), Histogram::BucketLimit(b)) << b;
    // Neighbouring limits differ by at most 25% (20 -> 25).
    if (b < Histogram::kNumBuckets - 1) {
      ASSERT_LE(Histogram::BucketLimit(b), Histogram::BucketLimit(b - 1) * 1.25 + 1e-9) << b;
    }
  }
  EXPECT_TRUE(std::isinf(Histogram::BucketLimit(Histogram::kNumBuckets - 1)));
  EXPECT_EQ(Histogram::BucketFor(0), 0);
  EXPECT_EQ(Histogram::BucketFor(0.99), 0);
  EXPECT_EQ(Histogram::BucketFor(1), 1);
  EXPECT_EQ(Histogram::BucketFor(-5), 0);
  EXPECT_EQ(Histogram::BucketFor(1e300), Histogram::kNumBuckets - 1);
  Random rnd(1);
  for (int i = 0; i < 10000; i++) {
    const double v = std::ldexp(static_cast<double>(rnd.Next64() >> 11), -53) *
                     std::pow(10.0, static_cast<double>(rnd.Uniform(22)));
    const int b = Histogram::BucketFor(v);
    if (b > 0) {
      ASSERT_GE(v, Histogram::BucketLimit(b - 1)) << v;
    }
    ASSERT_LT(v, Histogram::BucketLimit(b)) << v;
  }
}

TEST(HistogramTest, PercentilesAreWithinTheBucketError) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Random rnd(seed);
  for (int trial = 0; trial < 20; trial++) {
    Histogram h;
    std::vector<double> values;
    const int n = 1 + static_cast<int>(rnd.Uniform(3000));
    for (int i = 0; i < n; i++) {
      // Latency-like: mostly small, a long tail.
      const double v = 1 + static_cast<double>(rnd.Skewed(24)) + rnd.Uniform(1000) / 1000.0;
      values.push_back(v);
      h.Add(v);
    }
    std::sort(values.begin(), values.end());
    double previous = 0;
    for (double p : {0.0, 1.0, 10.0, 50.0, 90.0, 99.0, 99.9, 100.0}) {
      const double threshold = static_cast<double>(n) * (p / 100.0);
      const size_t rank = std::max<size_t>(1, static_cast<size_t>(std::ceil(threshold)));
      const double exact = values[std::min(rank, values.size()) - 1];
      const double estimate = h.Percentile(p);
      EXPECT_NEAR(estimate, exact, exact * 0.25 + 1e-9) << "p" << p << " n " << n;
      EXPECT_GE(estimate, previous);  // monotonic in p
      EXPECT_GE(estimate, h.Min());
      EXPECT_LE(estimate, h.Max());
      previous = estimate;
    }
  }
}

TEST(HistogramTest, MergeEqualsAddingEverything) {
  Random rnd(5);
  Histogram a, b, all;
  for (int i = 0; i < 1000; i++) {
    const double v = static_cast<double>(rnd.Uniform(100000));
    (i % 3 == 0 ? a : b).Add(v);
    all.Add(v);
  }
  Histogram merged = a;
  merged.Merge(b);
  EXPECT_EQ(merged.Count(), all.Count());
  EXPECT_DOUBLE_EQ(merged.Sum(), all.Sum());
  EXPECT_EQ(merged.Min(), all.Min());
  EXPECT_EQ(merged.Max(), all.Max());
  EXPECT_NEAR(merged.StandardDeviation(), all.StandardDeviation(), 1e-6);
  for (int bucket = 0; bucket < Histogram::kNumBuckets; bucket++) {
    ASSERT_EQ(merged.BucketCount(bucket), all.BucketCount(bucket)) << bucket;
  }
  EXPECT_EQ(merged.Percentile(99), all.Percentile(99));
  EXPECT_EQ(merged.ToString(), all.ToString());

  // Merging an empty histogram changes nothing, also min and max.
  Histogram empty;
  merged.Merge(empty);
  EXPECT_EQ(merged.Min(), all.Min());
  EXPECT_EQ(merged.Max(), all.Max());
  empty.Merge(all);
  EXPECT_EQ(empty.ToString(), all.ToString());
}

TEST(HistogramTest, MergeWithItselfDoubles) {
  Histogram h;
  for (int i = 1; i <= 10; i++) h.Add(i);
  h.Merge(h);
  EXPECT_EQ(h.Count(), 20u);
  EXPECT_EQ(h.Sum(), 110);
  EXPECT_EQ(h.BucketCount(Histogram::BucketFor(5)), 2u);
}

TEST(HistogramTest, ClearAndCopy) {
  Histogram h;
  h.Add(3);
  Histogram copy = h;
  h.Clear();
  EXPECT_EQ(h.Count(), 0u);
  EXPECT_EQ(h.Max(), 0);
  EXPECT_EQ(copy.Count(), 1u);
  EXPECT_EQ(copy.Max(), 3);
}

TEST(HistogramTest, ToStringShowsTheSummaryAndBuckets) {
  Histogram h;
  for (int i = 0; i < 10; i++) h.Add(15);
  h.Add(1000);
  const std::string s = h.ToString();
  EXPECT_NE(s.find("Count: 11"), std::string::npos) << s;
  EXPECT_NE(s.find("Min: 15.0000"), std::string::npos) << s;
  EXPECT_NE(s.find("Max: 1000.0000"), std::string::npos) << s;
  EXPECT_NE(s.find("P99:"), std::string::npos) << s;
  EXPECT_NE(s.find("P99.9:"), std::string::npos) << s;
  // Two non-empty buckets: one line each.
  const size_t lines = static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
  EXPECT_EQ(lines, 4u + 2u) << s;
  EXPECT_NE(s.find("90.909%"), std::string::npos) << s;
  EXPECT_NE(s.find("##################"), std::string::npos) << s;  // 18 of 20 marks
}

}  // namespace
}  // namespace strata
