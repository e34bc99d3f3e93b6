// Histogram: a summary of a stream of non-negative values (latencies in
// microseconds or nanoseconds, sizes in bytes) that answers count, sum, mean,
// standard deviation, min, max and percentiles in constant memory.
//
// Values fall into fixed buckets whose limits grow geometrically, sixteen
// per power of ten (1, 1.2, 1.4, 1.6, 1.8, 2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 7,
// 8, 9, then 10, 12, ...), from [0, 1) up to 9e19 and one last bucket for
// anything larger. A percentile is interpolated linearly inside its bucket
// and clamped to [Min(), Max()], so it is off by at most the bucket's width
// (at most 25% of the value for values >= 1). Negative values count in the
// first bucket.
//
// Thread-compatible: callers that share one serialize access, or keep one per
// thread and Merge them. Intentionally copyable.
#ifndef STRATA_COMMON_HISTOGRAM_H_
#define STRATA_COMMON_HISTOGRAM_H_

#include <array>
#include <cstdint>
#include <string>

namespace strata {

class Histogram {
 public:
  // Buckets: 16 limits per decade for 10^0 .. 10^19, plus one unbounded.
  static constexpr int kNumBuckets = 16 * 20 + 1;

  Histogram() { Clear(); }

  void Clear();
  void Add(double value);
  // Adds every value `other` has seen. `other` may be *this.
  void Merge(const Histogram& other);

  uint64_t Count() const { return count_; }
  double Sum() const { return sum_; }
  // 0 when empty.
  double Min() const { return count_ == 0 ? 0 : min_; }
  double Max() const { return count_ == 0 ? 0 : max_; }
  double Average() const;
  double StandardDeviation() const;
  // The value below which `p` percent of the values fall (p in [0, 100]);
  // 0 when empty.
  double Percentile(double p) const;
  double Median() const { return Percentile(50); }

  // Several lines: count, mean, deviation, min, max, p50/p99/p99.9, then one
  // line per non-empty bucket with its share and a bar.
  std::string ToString() const;

  // The exclusive upper limit of bucket `b`; bucket b holds values in
  // [BucketLimit(b - 1), BucketLimit(b)), bucket 0 starts at 0 (or below).
  // REQUIRES: 0 <= b < kNumBuckets
  static double BucketLimit(int b);
  // The bucket `value` falls in.
  static int BucketFor(double value);
  uint64_t BucketCount(int b) const { return buckets_[b]; }

 private:
  double min_;
  double max_;
  double sum_;
  double sum_squares_;
  uint64_t count_;
  std::array<uint64_t, kNumBuckets> buckets_;
};

}  // namespace strata

#endif  // STRATA_COMMON_HISTOGRAM_H_
