#include "prometheus_text.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>

namespace strata::test {
namespace {

bool NameStart(char c, bool colon) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
}
bool NameChar(char c, bool colon) { return NameStart(c, colon) || (c >= '0' && c <= '9'); }

// Reads a name at *pos; empty when there is none.
std::string ReadName(std::string_view line, size_t* pos, bool colon) {
  size_t p = *pos;
  if (p >= line.size() || !NameStart(line[p], colon)) return "";
  while (p < line.size() && NameChar(line[p], colon)) p++;
  std::string name(line.substr(*pos, p - *pos));
  *pos = p;
  return name;
}

bool ParseFloat(std::string_view s, double* out) {
  if (s == "+Inf" || s == "Inf") {
    *out = std::numeric_limits<double>::infinity();
    return true;
  }
  if (s == "-Inf") {
    *out = -std::numeric_limits<double>::infinity();
    return true;
  }
  if (s == "NaN") {
    *out = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (s.empty()) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-')) {
      return false;
    }
  }
  std::string copy(s);
  char* end = nullptr;
  *out = std::strtod(copy.c_str(), &end);
  return end == copy.c_str() + copy.size();
}

// The family a sample name belongs to, given the declared types.
std::string FamilyOf(const std::string& name, const std::map<std::string, std::string>& types) {
  if (types.count(name) != 0) return name;
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    const std::string s = suffix;
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
      const std::string base = name.substr(0, name.size() - s.size());
      auto it = types.find(base);
      if (it != types.end() && (it->second == "histogram" || it->second == "summary")) return base;
    }
  }
  return name;
}

std::string ParseSample(std::string_view line, PromSeries* s) {
  size_t pos = 0;
  s->name = ReadName(line, &pos, /*colon=*/true);
  if (s->name.empty()) return "no metric name";
  if (pos < line.size() && line[pos] == '{') {
    pos++;
    while (true) {
      if (pos < line.size() && line[pos] == '}') {
        pos++;
        break;
      }
      const std::string label = ReadName(line, &pos, /*colon=*/false);
      if (label.empty()) return "bad label name";
      if (pos >= line.size() || line[pos] != '=') return "no '=' after label " + label;
      pos++;
      if (pos >= line.size() || line[pos] != '"') return "label value not quoted";
      pos++;
      std::string value;
      bool closed = false;
      while (pos < line.size()) {
        char c = line[pos++];
        if (c == '"') {
          closed = true;
          break;
        }
        if (c == '\\') {
          if (pos >= line.size()) return "escape at the end of the line";
          const char e = line[pos++];
          if (e == '\\') {
            value += '\\';
          } else if (e == '"') {
            value += '"';
          } else if (e == 'n') {
            value += '\n';
          } else {
            return std::string("bad escape \\") + e;
          }
          continue;
        }
        value += c;
      }
      if (!closed) return "unterminated label value";
      if (!s->labels.emplace(label, value).second) return "label " + label + " twice";
      if (pos < line.size() && line[pos] == ',') {
        pos++;
        continue;
      }
      if (pos < line.size() && line[pos] == '}') continue;
      return "expected ',' or '}' after a label";
    }
  }
  if (pos >= line.size() || line[pos] != ' ') return "no space before the value";
  pos++;
  const size_t space = line.find(' ', pos);
  const std::string_view value =
      line.substr(pos, space == std::string_view::npos ? line.npos : space - pos);
  if (!ParseFloat(value, &s->value)) return "bad value '" + std::string(value) + "'";
  if (space != std::string_view::npos) {
    const std::string_view ts = line.substr(space + 1);
    if (ts.empty()) return "trailing space";
    for (size_t i = 0; i < ts.size(); i++) {
      if (!((ts[i] >= '0' && ts[i] <= '9') || (i == 0 && ts[i] == '-'))) return "bad timestamp";
    }
  }
  return "";
}

std::string SeriesKey(const PromSeries& s) {
  std::string key = s.name + "{";
  for (const auto& [k, v] : s.labels) key += k + "=" + v + ",";
  return key + "}";
}

// Histogram checks over the samples of family `base`.
std::string CheckHistogram(const std::string& base, const std::vector<PromSeries>& series) {
  // Per label set without "le": the buckets in order, the count, the sum.
  struct Group {
    std::vector<std::pair<double, double>> buckets;  // (le, cumulative count)
    bool has_count = false, has_sum = false;
    double count = 0;
  };
  std::map<std::string, Group> groups;
  for (const PromSeries& s : series) {
    if (FamilyOf(s.name, {{base, "histogram"}}) != base) continue;
    PromSeries key = s;
    key.labels.erase("le");
    key.name = base;
    Group& g = groups[SeriesKey(key)];
    if (s.name == base + "_bucket") {
      auto le = s.labels.find("le");
      if (le == s.labels.end()) return base + "_bucket without le";
      double bound;
      if (!ParseFloat(le->second, &bound)) return base + "_bucket with a bad le";
      g.buckets.emplace_back(bound, s.value);
    } else if (s.name == base + "_count") {
      g.has_count = true;
      g.count = s.value;
    } else if (s.name == base + "_sum") {
      g.has_sum = true;
    } else {
      return "histogram " + base + " has sample " + s.name;
    }
  }
  for (const auto& [key, g] : groups) {
    if (g.buckets.empty() || !g.has_count || !g.has_sum) return key + ": incomplete histogram";
    for (size_t i = 1; i < g.buckets.size(); i++) {
      if (!(g.buckets[i].first > g.buckets[i - 1].first)) return key + ": le not increasing";
      if (g.buckets[i].second < g.buckets[i - 1].second) return key + ": bucket counts fall";
    }
    if (!std::isinf(g.buckets.back().first)) return key + ": no le=\"+Inf\" bucket";
    if (g.buckets.back().second != g.count) return key + ": +Inf bucket is not _count";
  }
  return "";
}

}  // namespace

double PromText::Value(const std::string& name,
                       const std::map<std::string, std::string>& labels) const {
  for (const PromSeries& s : series) {
    if (s.name == name && s.labels == labels) return s.value;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

std::string ParsePrometheusText(std::string_view text, PromText* out) {
  *out = PromText();
  if (!text.empty() && text.back() != '\n') return "the text does not end with a line feed";
  std::set<std::string> finished;  // families whose run of samples ended
  std::set<std::string> seen;      // series keys
  std::string current;             // the family of the last sample
  size_t line_no = 0;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    line_no++;
    auto fail = [&](const std::string& why) {
      return "line " + std::to_string(line_no) + ": " + why + ": " + std::string(line);
    };
    if (line.empty()) continue;
    if (line[0] == '#') {
      if (line.rfind("# HELP ", 0) != 0 && line.rfind("# TYPE ", 0) != 0) continue;  // comment
      const bool help = line[2] == 'H';
      size_t pos = 7;
      const std::string name = ReadName(line, &pos, /*colon=*/true);
      if (name.empty()) return fail("no metric name");
      if (pos < line.size() && line[pos] != ' ') return fail("bad metric name");
      const std::string rest = pos < line.size() ? std::string(line.substr(pos + 1)) : "";
      if (help) {
        if (out->helps.count(name) != 0) return fail("second HELP");
        std::string unescaped;
        for (size_t i = 0; i < rest.size(); i++) {
          if (rest[i] == '\\' && i + 1 < rest.size() &&
              (rest[i + 1] == '\\' || rest[i + 1] == 'n')) {
            unescaped += rest[i + 1] == 'n' ? '\n' : '\\';
            i++;
          } else {
            unescaped += rest[i];
          }
        }
        out->helps[name] = unescaped;
      } else {
        static const std::set<std::string> kTypes = {"counter", "gauge", "histogram", "summary",
                                                     "untyped"};
        if (kTypes.count(rest) == 0) return fail("unknown type");
        if (out->types.count(name) != 0) return fail("second TYPE");
        if (finished.count(name) != 0 || current == name) return fail("TYPE after samples");
        if (rest == "counter" && (name.size() < 6 || name.substr(name.size() - 6) != "_total")) {
          return fail("a counter's name does not end in _total");
        }
        out->types[name] = rest;
      }
      continue;
    }
    PromSeries s;
    const std::string why = ParseSample(line, &s);
    if (!why.empty()) return fail(why);
    const std::string family = FamilyOf(s.name, out->types);
    if (family != current) {
      if (finished.count(family) != 0) return fail("samples of " + family + " split in two runs");
      if (!current.empty()) finished.insert(current);
      current = family;
    }
    if (!seen.insert(SeriesKey(s)).second) return fail("the same series twice");
    out->series.push_back(std::move(s));
  }
  for (const auto& [name, type] : out->types) {
    if (type != "histogram") continue;
    const std::string why = CheckHistogram(name, out->series);
    if (!why.empty()) return why;
  }
  return "";
}

}  // namespace strata::test
