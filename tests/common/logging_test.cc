#include "common/logging.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace strata {
namespace {

class RecordingLogger final : public Logger {
 public:
  void Logv(LogLevel level, const char* format, va_list ap) override {
    lines.emplace_back(level, StringPrintfV(format, ap));
  }
  std::vector<std::pair<LogLevel, std::string>> lines;
};

TEST(LoggingTest, LogFormatsAndPassesTheLevel) {
  RecordingLogger logger;
  Log(&logger, LogLevel::kWarn, "file %s at offset %d: %s", "/x/000001.log", 4096, "torn");
  Log(&logger, LogLevel::kDebug, "plain");
  ASSERT_EQ(logger.lines.size(), 2u);
  EXPECT_EQ(logger.lines[0].first, LogLevel::kWarn);
  EXPECT_EQ(logger.lines[0].second, "file /x/000001.log at offset 4096: torn");
  EXPECT_EQ(logger.lines[1].first, LogLevel::kDebug);
  EXPECT_EQ(logger.lines[1].second, "plain");
}

TEST(LoggingTest, NullLoggers) {
  Log(nullptr, LogLevel::kError, "nobody hears %d", 1);  // no crash
  std::unique_ptr<Logger> null = NewNullLogger();
  testing::internal::CaptureStderr();
  Log(null.get(), LogLevel::kError, "discarded %d", 2);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

TEST(LoggingTest, StderrLoggerWritesWholeLinesAboveItsLevel) {
  std::unique_ptr<Logger> logger = NewStderrLogger(LogLevel::kInfo);
  testing::internal::CaptureStderr();
  Log(logger.get(), LogLevel::kDebug, "hidden");
  Log(logger.get(), LogLevel::kInfo, "recovered %d records", 42);
  Log(logger.get(), LogLevel::kError, "already ends in a newline\n");
  const std::string out = testing::internal::GetCapturedStderr();
  EXPECT_EQ(out.find("hidden"), std::string::npos) << out;
  EXPECT_NE(out.find(" I recovered 42 records\n"), std::string::npos) << out;
  EXPECT_NE(out.find(" E already ends in a newline\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("\n\n"), std::string::npos) << out;
  // "YYYY-MM-DDTHH:MM:SS.uuuuuuZ " in front.
  ASSERT_GE(out.size(), 28u);
  EXPECT_EQ(out[4], '-');
  EXPECT_EQ(out[10], 'T');
  EXPECT_EQ(out[26], 'Z');
}

TEST(LoggingTest, StderrLinesDoNotInterleave) {
  std::unique_ptr<Logger> logger = NewStderrLogger(LogLevel::kDebug);
  testing::internal::CaptureStderr();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&logger, t] {
      const std::string payload(200, static_cast<char>('a' + t));
      for (int i = 0; i < 100; i++) Log(logger.get(), LogLevel::kInfo, "%s", payload.c_str());
    });
  }
  for (auto& t : threads) t.join();
  const std::string out = testing::internal::GetCapturedStderr();
  size_t lines = 0;
  size_t start = 0;
  while (start < out.size()) {
    const size_t end = out.find('\n', start);
    ASSERT_NE(end, std::string::npos);
    const std::string line = out.substr(start, end - start);
    const std::string payload = line.substr(line.size() - 200);
    EXPECT_EQ(payload, std::string(200, payload[0])) << line;
    lines++;
    start = end + 1;
  }
  EXPECT_EQ(lines, 400u);
}

TEST(LoggingTest, StringPrintf) {
  EXPECT_EQ(StringPrintf("%d-%s-%.2f", 7, "x", 1.5), "7-x-1.50");
  EXPECT_EQ(StringPrintf("%s", ""), "");
  // Longer than any fixed buffer.
  const std::string big(5000, 'q');
  EXPECT_EQ(StringPrintf("<%s>", big.c_str()), "<" + big + ">");
}

TEST(LoggingTest, LevelNames) {
  EXPECT_STREQ(LogLevelName(LogLevel::kDebug), "DEBUG");
  EXPECT_STREQ(LogLevelName(LogLevel::kInfo), "INFO");
  EXPECT_STREQ(LogLevelName(LogLevel::kWarn), "WARN");
  EXPECT_STREQ(LogLevelName(LogLevel::kError), "ERROR");
}

}  // namespace
}  // namespace strata
