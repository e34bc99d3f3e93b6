// A latency distribution as the statistics report it (EngineStats,
// TransactionStats): counts per fixed bucket of microseconds, the same
// buckets everywhere, so that histograms of one kind add up across engines
// and a monitoring system can aggregate them.
#ifndef STRATA_LATENCY_HISTOGRAM_H_
#define STRATA_LATENCY_HISTOGRAM_H_

#include <array>
#include <cstdint>

namespace strata {

// Thread-compatible. Intentionally copyable.
struct LatencyHistogram {
  // The buckets' inclusive upper bounds in microseconds: 1, 2, 5, 10, 20,
  // 50, ... 100 seconds; a last bucket, counts[kBounds.size()], holds what
  // lies above the last bound.
  static constexpr std::array<uint64_t, 25> kBounds = {
      1,       2,       5,       10,       20,       50,       100,      200,    500,
      1000,    2000,    5000,    10000,    20000,    50000,    100000,   200000, 500000,
      1000000, 2000000, 5000000, 10000000, 20000000, 50000000, 100000000};

  // counts[b]: values v with kBounds[b - 1] < v <= kBounds[b] (b = 0: v <= 1).
  std::array<uint64_t, kBounds.size() + 1> counts{};
  uint64_t count = 0;       // the sum of counts
  uint64_t sum_micros = 0;  // the sum of the values

  // The value below which `p` percent of the values fall (p in [0, 100]),
  // interpolated within its bucket; the last bound for the overflow bucket;
  // 0 when empty.
  double Percentile(double p) const;
};

}  // namespace strata

#endif  // STRATA_LATENCY_HISTOGRAM_H_
