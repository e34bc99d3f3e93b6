// What the commands of `strata` print with: see output.h.
#include "output.h"

#include <cinttypes>
#include <cstdlib>
#include <ctime>

#include "common/clock.h"
#include "common/coding.h"
#include "common/json.h"
#include "txn/timestamp.h"

namespace strata::cli {

namespace {

// The length of the well-formed UTF-8 sequence at s[i] (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF), or 0.
size_t Utf8Length(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xbf;  // bounds of the second byte
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; k++) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xbf) return 0;
  }
  return n;
}

// `text` with every byte that is not part of well-formed UTF-8 written as
// the four characters \xNN.
std::string ValidUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t n = Utf8Length(text, i);
    if (n == 0) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned char>(text[i]));
      out += buf;
      i++;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

bool any_json_started = false;  // JsonWriter::AnyStarted

// What FirstError returns.
std::string& FirstErrorStorage() {
  static auto* first = new std::string;
  return *first;
}

}  // namespace

bool JsonWriter::AnyStarted() { return any_json_started; }

void PrintError(const std::string& message) {
  std::fflush(stdout);
  std::fprintf(stderr, "strata: %s\n", message.c_str());
  if (FirstErrorStorage().empty()) FirstErrorStorage() = message;
}

const std::string& FirstError() { return FirstErrorStorage(); }

void JsonWriter::Prefix(std::string_view key) {
  if (!stack_.empty()) {
    std::fputs(stack_.back().has_values ? ",\n" : "\n", out_);
    stack_.back().has_values = true;
    for (size_t i = 0; i < stack_.size(); i++) std::fputs("  ", out_);
  }
  started_ = true;
  any_json_started = true;
  if (!key.empty()) {
    const std::string quoted = JsonQuote(ValidUtf8(key));
    std::fprintf(out_, "%s: ", quoted.c_str());
  }
}

void JsonWriter::BeginObject(std::string_view key) {
  Prefix(key);
  std::fputc('{', out_);
  stack_.push_back({'}', false});
}

void JsonWriter::BeginArray(std::string_view key) {
  Prefix(key);
  std::fputc('[', out_);
  stack_.push_back({']', false});
}

void JsonWriter::End() {
  if (stack_.empty()) return;
  const Open open = stack_.back();
  stack_.pop_back();
  if (open.has_values) {
    std::fputc('\n', out_);
    for (size_t i = 0; i < stack_.size(); i++) std::fputs("  ", out_);
  }
  std::fputc(open.closer, out_);
  if (stack_.empty()) std::fputc('\n', out_);
}

void JsonWriter::String(std::string_view key, std::string_view text) {
  Prefix(key);
  std::fputs(JsonQuote(ValidUtf8(text)).c_str(), out_);
}

void JsonWriter::Number(std::string_view key, uint64_t value) {
  Prefix(key);
  std::fprintf(out_, "%" PRIu64, value);
}

void JsonWriter::Signed(std::string_view key, int64_t value) {
  Prefix(key);
  std::fprintf(out_, "%" PRId64, value);
}

void JsonWriter::Bool(std::string_view key, bool value) {
  Prefix(key);
  std::fputs(value ? "true" : "false", out_);
}

void JsonWriter::Null(std::string_view key) {
  Prefix(key);
  std::fputs("null", out_);
}

void JsonWriter::Bytes(std::string_view key, std::string_view bytes, bool hex) {
  const std::string escaped = EscapeBytes(bytes);
  String(key, escaped);
  if (hex || escaped != bytes) String(std::string(key) + "_hex", HexBytes(bytes));
}

void JsonWriter::Timestamp(std::string_view key, uint64_t ts) {
  Number(key, ts);
  String(std::string(key) + "_time", WallTime(ts));
}

void JsonWriter::Fail(std::string_view message) {
  if (!started_) BeginObject();
  while (stack_.size() > 1 || (stack_.size() == 1 && stack_.back().closer != '}')) End();
  if (stack_.empty()) return;  // a document already complete stays as it is
  String("error", message);
  End();
}

std::string ShowBytes(std::string_view bytes, bool hex) {
  return hex ? HexBytes(bytes) : "'" + EscapeBytes(bytes) + "'";
}

std::string SizeString(uint64_t n) {
  char buf[32];
  if (n < 1024) {
    std::snprintf(buf, sizeof(buf), "%" PRIu64 " B", n);
  } else if (n < (uint64_t{1} << 20)) {
    std::snprintf(buf, sizeof(buf), "%.1f KiB", static_cast<double>(n) / 1024);
  } else if (n < (uint64_t{1} << 30)) {
    std::snprintf(buf, sizeof(buf), "%.1f MiB", static_cast<double>(n) / (1 << 20));
  } else {
    std::snprintf(buf, sizeof(buf), "%.2f GiB", static_cast<double>(n) / (1 << 30));
  }
  return buf;
}

std::string Count(uint64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string MillisTime(uint64_t ms) {
  const time_t secs = static_cast<time_t>(ms / 1000);
  struct tm tm;
  char buf[64];
  if (gmtime_r(&secs, &tm) == nullptr || std::strftime(buf, sizeof(buf), "%F %T", &tm) == 0) {
    return "?";
  }
  char out[80];
  std::snprintf(out, sizeof(out), "%s.%03u UTC", buf, static_cast<unsigned>(ms % 1000));
  return out;
}

std::string WallTime(uint64_t ts) { return MillisTime(txn::PhysicalMillis(ts)); }

std::string ShowTimestamp(uint64_t ts) { return std::to_string(ts) + " (" + WallTime(ts) + ")"; }

std::string ShowSeconds(int64_t millis) {
  const uint64_t magnitude =
      millis < 0 ? uint64_t{0} - static_cast<uint64_t>(millis) : static_cast<uint64_t>(millis);
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%s%" PRIu64 ".%03u s", millis < 0 ? "-" : "", magnitude / 1000,
                static_cast<unsigned>(magnitude % 1000));
  return buf;
}

uint64_t NowMillis() { return Clock::Default()->NowMicros() / 1000; }

}  // namespace strata::cli
