#include "metrics/exposition.h"

#include <cassert>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>

#include "common/json.h"

namespace strata::metrics {
namespace {

// A sample value as the text format and JSON both take it: integers exact,
// other values as the shortest decimal that reads back as the same double.
std::string Number(bool integral, uint64_t count, double value) {
  char buf[48];
  if (integral) {
    std::snprintf(buf, sizeof(buf), "%" PRIu64, count);
    return buf;
  }
  for (int digits = 1; digits <= 17; digits++) {
    std::snprintf(buf, sizeof(buf), "%.*g", digits, value);
    if (std::strtod(buf, nullptr) == value) break;
  }
  return buf;
}

std::string Double(double value) { return Number(false, 0, value); }

// A bucket bound in seconds, as the "le" label and JSON number show it, the
// way Prometheus's client libraries write bounds ("1e-06", "0.0002", "100"):
// every bound has one significant digit, which %.6g keeps exact.
std::string BoundSeconds(uint64_t micros) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.6g", static_cast<double>(micros) / 1e6);
  return buf;
}

// A label value in the text format: backslash, double quote and line feed
// escaped.
std::string EscapeLabel(const std::string& v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

// HELP text: backslash and line feed escaped.
std::string EscapeHelp(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

// {a="x",b="y"}, with `extra` (name, value) last; empty when there are none.
std::string LabelText(const Labels& labels, const char* extra_name = nullptr,
                      const std::string& extra_value = {}) {
  if (labels.empty() && extra_name == nullptr) return "";
  std::string out = "{";
  for (const auto& [name, value] : labels) {
    if (out.size() > 1) out += ",";
    out += name + "=\"" + EscapeLabel(value) + "\"";
  }
  if (extra_name != nullptr) {
    if (out.size() > 1) out += ",";
    out += std::string(extra_name) + "=\"" + EscapeLabel(extra_value) + "\"";
  }
  return out + "}";
}

const char* TypeName(Family::Type type) {
  switch (type) {
    case Family::Type::kCounter:
      return "counter";
    case Family::Type::kGauge:
      return "gauge";
    case Family::Type::kHistogram:
      return "histogram";
  }
  return "untyped";
}

}  // namespace

Family& Exposition::Get(const std::string& name, const std::string& help, Family::Type type) {
  for (Family& f : families_) {
    if (f.name == name) {
      assert(f.type == type);
      return f;
    }
  }
  families_.push_back(Family{name, help, type, {}});
  return families_.back();
}

void Exposition::Counter(const std::string& name, const std::string& help, const Labels& labels,
                         uint64_t value) {
  Sample s;
  s.labels = labels;
  s.count = value;
  Get(name, help, Family::Type::kCounter).samples.push_back(std::move(s));
}

void Exposition::CounterSeconds(const std::string& name, const std::string& help,
                                const Labels& labels, uint64_t micros) {
  Sample s;
  s.labels = labels;
  s.integral = false;
  s.value = static_cast<double>(micros) / 1e6;
  Get(name, help, Family::Type::kCounter).samples.push_back(std::move(s));
}

void Exposition::Gauge(const std::string& name, const std::string& help, const Labels& labels,
                       uint64_t value) {
  Sample s;
  s.labels = labels;
  s.count = value;
  Get(name, help, Family::Type::kGauge).samples.push_back(std::move(s));
}

void Exposition::GaugeSeconds(const std::string& name, const std::string& help,
                              const Labels& labels, double seconds) {
  Sample s;
  s.labels = labels;
  s.integral = false;
  s.value = seconds;
  Get(name, help, Family::Type::kGauge).samples.push_back(std::move(s));
}

void Exposition::Histogram(const std::string& name, const std::string& help, const Labels& labels,
                           const LatencyHistogram& histogram) {
  Sample s;
  s.labels = labels;
  s.histogram = histogram;
  Get(name, help, Family::Type::kHistogram).samples.push_back(std::move(s));
}

std::string Exposition::ToPrometheus() const {
  std::string out;
  for (const Family& f : families_) {
    out += "# HELP " + f.name + " " + EscapeHelp(f.help) + "\n";
    out += "# TYPE " + f.name + " " + TypeName(f.type) + "\n";
    for (const Sample& s : f.samples) {
      if (f.type != Family::Type::kHistogram) {
        out += f.name + LabelText(s.labels) + " " + Number(s.integral, s.count, s.value) + "\n";
        continue;
      }
      const LatencyHistogram& h = s.histogram;
      uint64_t cumulative = 0;
      for (size_t b = 0; b < LatencyHistogram::kBounds.size(); b++) {
        cumulative += h.counts[b];
        out += f.name + "_bucket" +
               LabelText(s.labels, "le", BoundSeconds(LatencyHistogram::kBounds[b])) + " " +
               std::to_string(cumulative) + "\n";
      }
      out += f.name + "_bucket" + LabelText(s.labels, "le", "+Inf") + " " +
             std::to_string(h.count) + "\n";
      out += f.name + "_sum" + LabelText(s.labels) + " " +
             Double(static_cast<double>(h.sum_micros) / 1e6) + "\n";
      out += f.name + "_count" + LabelText(s.labels) + " " + std::to_string(h.count) + "\n";
    }
  }
  return out;
}

std::string Exposition::ToJson() const {
  std::string out = "{\"metrics\": [";
  bool first_family = true;
  for (const Family& f : families_) {
    out += first_family ? "\n" : ",\n";
    first_family = false;
    out += "  {\"name\": " + JsonQuote(f.name) + ", \"type\": \"" + TypeName(f.type) +
           "\", \"help\": " + JsonQuote(f.help) + ", \"samples\": [";
    bool first_sample = true;
    for (const Sample& s : f.samples) {
      out += first_sample ? "\n" : ",\n";
      first_sample = false;
      out += "    {\"labels\": {";
      for (size_t i = 0; i < s.labels.size(); i++) {
        out += (i == 0 ? "" : ", ") + JsonQuote(s.labels[i].first) + ": " +
               JsonQuote(s.labels[i].second);
      }
      out += "}";
      if (f.type != Family::Type::kHistogram) {
        out += ", \"value\": " + Number(s.integral, s.count, s.value) + "}";
        continue;
      }
      const LatencyHistogram& h = s.histogram;
      out += ", \"count\": " + std::to_string(h.count) +
             ", \"sum\": " + Double(static_cast<double>(h.sum_micros) / 1e6);
      out += ", \"p50\": " + Double(h.Percentile(50) / 1e6) +
             ", \"p99\": " + Double(h.Percentile(99) / 1e6) +
             ", \"p999\": " + Double(h.Percentile(99.9) / 1e6) + ", \"buckets\": [";
      uint64_t cumulative = 0;
      for (size_t b = 0; b < LatencyHistogram::kBounds.size(); b++) {
        cumulative += h.counts[b];
        out += "{\"le\": " + BoundSeconds(LatencyHistogram::kBounds[b]) +
               ", \"count\": " + std::to_string(cumulative) + "}, ";
      }
      out += "{\"le\": \"+Inf\", \"count\": " + std::to_string(h.count) + "}]}";
    }
    out += first_sample ? "]}" : "\n  ]}";
  }
  out += first_family ? "]}\n" : "\n]}\n";
  return out;
}

}  // namespace strata::metrics
