// Logger: where Strata writes human-readable diagnostics (recovery decisions,
// background errors, compaction summaries). Not a data path: nothing reads
// these lines back.
//
// Two implementations: one writing to stderr and one discarding everything.
// Messages use printf-style formats; a line is written whole, never
// interleaved with another thread's.
//
// Implementations are thread-safe.
#ifndef STRATA_COMMON_LOGGING_H_
#define STRATA_COMMON_LOGGING_H_

#include <cstdarg>
#include <memory>
#include <string>

#if defined(__GNUC__) || defined(__clang__)
#define STRATA_PRINTF_FORMAT(format_index, first_arg) \
  __attribute__((format(printf, format_index, first_arg)))
#else
#define STRATA_PRINTF_FORMAT(format_index, first_arg)
#endif

namespace strata {

enum class LogLevel : int {
  kDebug = 0,
  kInfo = 1,
  kWarn = 2,
  kError = 3,
};

// "DEBUG", "INFO", "WARN" or "ERROR".
const char* LogLevelName(LogLevel level);

class Logger {
 public:
  Logger() = default;
  virtual ~Logger() = default;
  Logger(const Logger&) = delete;
  Logger& operator=(const Logger&) = delete;

  // Writes one message; a newline is added if the message lacks one.
  virtual void Logv(LogLevel level, const char* format, va_list ap) = 0;
};

// Writes lines "2024-05-01T12:00:00.123456Z W message" (UTC) to stderr,
// dropping messages below `min_level`.
std::unique_ptr<Logger> NewStderrLogger(LogLevel min_level = LogLevel::kInfo);
// Discards everything.
std::unique_ptr<Logger> NewNullLogger();

// Formats and logs one message; does nothing when `logger` is null.
void Log(Logger* logger, LogLevel level, const char* format, ...) STRATA_PRINTF_FORMAT(3, 4);

// Formats like printf into a std::string.
std::string StringPrintf(const char* format, ...) STRATA_PRINTF_FORMAT(1, 2);
std::string StringPrintfV(const char* format, va_list ap);

}  // namespace strata

#endif  // STRATA_COMMON_LOGGING_H_
