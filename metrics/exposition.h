// The metrics model RenderMetrics fills (metric families of samples) and its
// two renderings: the Prometheus text exposition format 0.0.4 and JSON.
#ifndef STRATA_METRICS_EXPOSITION_H_
#define STRATA_METRICS_EXPOSITION_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "strata/latency_histogram.h"

namespace strata::metrics {

using Labels = std::vector<std::pair<std::string, std::string>>;

struct Sample {
  Labels labels;
  // An integer count, or a value with a fraction (seconds).
  bool integral = true;
  uint64_t count = 0;
  double value = 0;
  // kHistogram only: a latency distribution, rendered in seconds.
  LatencyHistogram histogram;
};

struct Family {
  enum class Type { kCounter, kGauge, kHistogram };
  std::string name;
  std::string help;
  Type type = Type::kCounter;
  std::vector<Sample> samples;
};

// The families in the order they were first asked for; samples of one
// family stay together, as the text format requires.
class Exposition {
 public:
  void Counter(const std::string& name, const std::string& help, const Labels& labels,
               uint64_t value);
  // A counter of seconds, from microseconds.
  void CounterSeconds(const std::string& name, const std::string& help, const Labels& labels,
                      uint64_t micros);
  void Gauge(const std::string& name, const std::string& help, const Labels& labels,
             uint64_t value);
  void GaugeSeconds(const std::string& name, const std::string& help, const Labels& labels,
                    double seconds);
  void Histogram(const std::string& name, const std::string& help, const Labels& labels,
                 const LatencyHistogram& histogram);

  const std::vector<Family>& families() const { return families_; }

  std::string ToPrometheus() const;
  std::string ToJson() const;

 private:
  Family& Get(const std::string& name, const std::string& help, Family::Type type);

  std::vector<Family> families_;
};

}  // namespace strata::metrics

#endif  // STRATA_METRICS_EXPOSITION_H_
