#include "common/logging.h"

#include <sys/time.h>

#include <cstdio>
#include <ctime>
#include <string>

namespace strata {
namespace {

class StderrLogger final : public Logger {
 public:
  explicit StderrLogger(LogLevel min_level) : min_level_(min_level) {}

  void Logv(LogLevel level, const char* format, va_list ap) override {
    if (level < min_level_) return;
    struct timeval now;
    ::gettimeofday(&now, nullptr);
    struct tm t;
    ::gmtime_r(&now.tv_sec, &t);
    char prefix[64];
    std::snprintf(prefix, sizeof(prefix), "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ %c ",
                  t.tm_year + 1900, t.tm_mon + 1, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec,
                  static_cast<long>(now.tv_usec), LogLevelName(level)[0]);
    std::string line = prefix;
    line += StringPrintfV(format, ap);
    if (line.back() != '\n') line += '\n';
    // One fwrite per line: stdio locks the stream for the call, so lines from
    // different threads do not interleave.
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
  }

 private:
  const LogLevel min_level_;
};

class NullLogger final : public Logger {
 public:
  void Logv(LogLevel, const char*, va_list) override {}
};

}  // namespace

const char* LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "DEBUG";
    case LogLevel::kInfo:
      return "INFO";
    case LogLevel::kWarn:
      return "WARN";
    case LogLevel::kError:
      return "ERROR";
  }
  return "UNKNOWN";
}

std::unique_ptr<Logger> NewStderrLogger(LogLevel min_level) {
  return std::make_unique<StderrLogger>(min_level);
}

std::unique_ptr<Logger> NewNullLogger() { return std::make_unique<NullLogger>(); }

void Log(Logger* logger, LogLevel level, const char* format, ...) {
  if (logger == nullptr) return;
  va_list ap;
  va_start(ap, format);
  logger->Logv(level, format, ap);
  va_end(ap);
}

std::string StringPrintfV(const char* format, va_list ap) {
  char stack[512];
  va_list copy;
  va_copy(copy, ap);
  const int n = std::vsnprintf(stack, sizeof(stack), format, copy);
  va_end(copy);
  if (n < 0) return std::string();
  if (static_cast<size_t>(n) < sizeof(stack)) return std::string(stack, static_cast<size_t>(n));
  std::string r(static_cast<size_t>(n), '\0');
  va_copy(copy, ap);
  std::vsnprintf(r.data(), r.size() + 1, format, copy);
  va_end(copy);
  return r;
}

std::string StringPrintf(const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  std::string r = StringPrintfV(format, ap);
  va_end(ap);
  return r;
}

}  // namespace strata
