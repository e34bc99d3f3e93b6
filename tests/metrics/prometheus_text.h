// A checker of the Prometheus text exposition format (version 0.0.4), as
// Prometheus's own parser reads it, for the metrics tests: it parses every
// line and reports the first thing a scraper would refuse.
#ifndef STRATA_TESTS_METRICS_PROMETHEUS_TEXT_H_
#define STRATA_TESTS_METRICS_PROMETHEUS_TEXT_H_

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::test {

struct PromSeries {
  std::string name;  // as written: with _bucket, _sum or _count for a histogram
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct PromText {
  std::map<std::string, std::string> types;  // family name -> counter, gauge, ...
  std::map<std::string, std::string> helps;  // family name -> unescaped help
  std::vector<PromSeries> series;

  // The value of `name` with exactly `labels`; NaN when there is none.
  double Value(const std::string& name, const std::map<std::string, std::string>& labels) const;
};

// Parses `text`; returns "" and fills *out, or says what is wrong and on
// which line. Checks: line syntax (names, label names, quoted and escaped
// label values, float values, optional integer timestamp), each family's
// TYPE before its samples and at most one HELP and TYPE, a family's samples
// in one run, no series twice, counter names ending in _total, and for
// histograms: _bucket samples with an "le" label, cumulative counts that
// never fall, a last bucket le="+Inf" equal to _count, and _sum present.
std::string ParsePrometheusText(std::string_view text, PromText* out);

}  // namespace strata::test

#endif  // STRATA_TESTS_METRICS_PROMETHEUS_TEXT_H_
