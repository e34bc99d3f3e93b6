// LatencyRecorder: a LatencyHistogram (strata/latency_histogram.h) that many
// threads add to at once without a lock: one relaxed atomic per bucket. Relaxed
// is enough because nothing is published through the counts: a snapshot
// taken while values are added may hold some of them and not others (its
// count is still the sum of its buckets). Thread-safe.
#ifndef STRATA_COMMON_LATENCY_RECORDER_H_
#define STRATA_COMMON_LATENCY_RECORDER_H_

#include <atomic>
#include <cstdint>

#include "strata/latency_histogram.h"

namespace strata {

class LatencyRecorder {
 public:
  LatencyRecorder() = default;
  LatencyRecorder(const LatencyRecorder&) = delete;
  LatencyRecorder& operator=(const LatencyRecorder&) = delete;

  void Add(uint64_t micros);
  void AddNanos(uint64_t nanos) { Add((nanos + 999) / 1000); }

  // The counts so far. Values added while it runs may be in it or not; its
  // count is always the sum of its buckets.
  LatencyHistogram Snapshot() const;

 private:
  std::atomic<uint64_t> counts_[LatencyHistogram::kBounds.size() + 1] = {};
  std::atomic<uint64_t> sum_micros_{0};
};

}  // namespace strata

#endif  // STRATA_COMMON_LATENCY_RECORDER_H_
