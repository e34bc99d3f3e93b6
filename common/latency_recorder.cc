#include "common/latency_recorder.h"

#include <algorithm>

namespace strata {

double LatencyHistogram::Percentile(double p) const {
  if (count == 0) return 0;
  p = std::clamp(p, 0.0, 100.0);
  const double target = p / 100.0 * static_cast<double>(count);
  double seen = 0;
  for (size_t b = 0; b < counts.size(); b++) {
    if (counts[b] == 0) continue;
    const double next = seen + static_cast<double>(counts[b]);
    if (next >= target) {
      if (b == kBounds.size()) return static_cast<double>(kBounds.back());
      const double low = b == 0 ? 0 : static_cast<double>(kBounds[b - 1]);
      const double high = static_cast<double>(kBounds[b]);
      const double within = (target - seen) / static_cast<double>(counts[b]);
      return low + (high - low) * within;
    }
    seen = next;
  }
  return static_cast<double>(kBounds.back());
}

void LatencyRecorder::Add(uint64_t micros) {
  const auto& bounds = LatencyHistogram::kBounds;
  const size_t b = std::lower_bound(bounds.begin(), bounds.end(), micros) - bounds.begin();
  counts_[b].fetch_add(1, std::memory_order_relaxed);
  sum_micros_.fetch_add(micros, std::memory_order_relaxed);
}

LatencyHistogram LatencyRecorder::Snapshot() const {
  LatencyHistogram h;
  for (size_t b = 0; b < h.counts.size(); b++) {
    h.counts[b] = counts_[b].load(std::memory_order_relaxed);
    h.count += h.counts[b];
  }
  h.sum_micros = sum_micros_.load(std::memory_order_relaxed);
  return h;
}

}  // namespace strata
