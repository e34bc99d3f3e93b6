#include "common/histogram.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace strata {
namespace {

// Limits of one decade, in tenths of its power of ten.
constexpr int kDecadeSteps[16] = {10, 12, 14, 16, 18, 20, 25, 30, 35, 40, 45, 50, 60, 70, 80, 90};

struct Limits {
  std::array<double, Histogram::kNumBuckets> v;
  Limits() {
    int b = 0;
    double scale = 0.1;  // tenths of 10^0
    for (int decade = 0; decade < 20; decade++) {
      for (int step : kDecadeSteps) v[b++] = step * scale;
      scale *= 10;
    }
    v[b] = std::numeric_limits<double>::infinity();
  }
};

const Limits& BucketLimits() {
  static const Limits limits;
  return limits;
}

}  // namespace

double Histogram::BucketLimit(int b) { return BucketLimits().v[b]; }

int Histogram::BucketFor(double value) {
  const auto& v = BucketLimits().v;
  // The first limit above the value; NaN and +inf land in the last bucket.
  if (!(value < v[kNumBuckets - 2])) return kNumBuckets - 1;
  return static_cast<int>(std::upper_bound(v.begin(), v.end(), value) - v.begin());
}

void Histogram::Clear() {
  min_ = std::numeric_limits<double>::infinity();
  max_ = -std::numeric_limits<double>::infinity();
  sum_ = 0;
  sum_squares_ = 0;
  count_ = 0;
  buckets_.fill(0);
}

void Histogram::Add(double value) {
  buckets_[BucketFor(value)]++;
  min_ = std::min(min_, value);
  max_ = std::max(max_, value);
  count_++;
  sum_ += value;
  sum_squares_ += value * value;
}

void Histogram::Merge(const Histogram& other) {
  // Reads `other` completely before writing, so merging with itself doubles.
  const double other_min = other.min_, other_max = other.max_;
  const double other_sum = other.sum_, other_squares = other.sum_squares_;
  const uint64_t other_count = other.count_;
  for (int b = 0; b < kNumBuckets; b++) buckets_[b] += other.buckets_[b];
  min_ = std::min(min_, other_min);
  max_ = std::max(max_, other_max);
  sum_ += other_sum;
  sum_squares_ += other_squares;
  count_ += other_count;
}

double Histogram::Average() const { return count_ == 0 ? 0 : sum_ / static_cast<double>(count_); }

double Histogram::StandardDeviation() const {
  if (count_ == 0) return 0;
  const double n = static_cast<double>(count_);
  const double variance = (sum_squares_ * n - sum_ * sum_) / (n * n);
  return variance <= 0 ? 0 : std::sqrt(variance);
}

double Histogram::Percentile(double p) const {
  if (count_ == 0) return 0;
  p = std::clamp(p, 0.0, 100.0);
  const double threshold = static_cast<double>(count_) * (p / 100.0);
  double cumulative = 0;
  for (int b = 0; b < kNumBuckets; b++) {
    if (buckets_[b] == 0) continue;
    const double in_bucket = static_cast<double>(buckets_[b]);
    if (cumulative + in_bucket >= threshold) {
      // Assume the bucket's values are spread evenly over its range, which is
      // cut to what was actually seen.
      const double left = b == 0 ? min_ : std::max(BucketLimit(b - 1), min_);
      const double right = std::min(BucketLimit(b), max_);
      const double fraction = (threshold - cumulative) / in_bucket;
      return std::clamp(left + (right - left) * fraction, min_, max_);
    }
    cumulative += in_bucket;
  }
  return max_;
}

std::string Histogram::ToString() const {
  std::string r;
  char buf[256];
  std::snprintf(buf, sizeof(buf), "Count: %llu  Average: %.4f  StdDev: %.2f\n",
                static_cast<unsigned long long>(count_), Average(), StandardDeviation());
  r += buf;
  std::snprintf(buf, sizeof(buf), "Min: %.4f  Median: %.4f  Max: %.4f\n", Min(), Median(), Max());
  r += buf;
  std::snprintf(buf, sizeof(buf), "P50: %.4f  P99: %.4f  P99.9: %.4f\n", Percentile(50),
                Percentile(99), Percentile(99.9));
  r += buf;
  r += "------------------------------------------------------\n";
  if (count_ == 0) return r;
  const double total = static_cast<double>(count_);
  uint64_t cumulative = 0;
  for (int b = 0; b < kNumBuckets; b++) {
    if (buckets_[b] == 0) continue;
    cumulative += buckets_[b];
    const double share = 100.0 * static_cast<double>(buckets_[b]) / total;
    std::snprintf(buf, sizeof(buf), "[ %10.4g, %10.4g ) %8llu %7.3f%% %7.3f%% ",
                  b == 0 ? 0.0 : BucketLimit(b - 1), BucketLimit(b),
                  static_cast<unsigned long long>(buckets_[b]), share,
                  100.0 * static_cast<double>(cumulative) / total);
    r += buf;
    // One mark per 5%, rounded.
    r.append(static_cast<size_t>(share / 5.0 + 0.5), '#');
    r += '\n';
  }
  return r;
}

}  // namespace strata
