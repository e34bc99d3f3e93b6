// What the commands of `strata` print with: a JSON writer that streams one
// document to standard output (for --json), and the text forms of bytes,
// sizes and timestamps. Thread-compatible.
#ifndef STRATA_TOOLS_STRATA_CLI_OUTPUT_H_
#define STRATA_TOOLS_STRATA_CLI_OUTPUT_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace strata::cli {

// Writes one JSON document, indented, to a FILE as it goes. Members of an
// object take a key; elements of an array take none. Strings are made valid
// JSON whatever their bytes (JsonQuote of common/json.h quotes them; bytes
// that are not UTF-8 become \xNN); byte strings from the store go through
// Bytes.
class JsonWriter {
 public:
  explicit JsonWriter(std::FILE* out) : out_(out) {}
  JsonWriter(const JsonWriter&) = delete;
  JsonWriter& operator=(const JsonWriter&) = delete;

  // An empty key: an array element (or the document itself).
  void BeginObject(std::string_view key = {});
  void BeginArray(std::string_view key = {});
  // Closes the innermost object or array.
  void End();

  void String(std::string_view key, std::string_view text);
  void Number(std::string_view key, uint64_t value);
  void Signed(std::string_view key, int64_t value);
  void Bool(std::string_view key, bool value);
  void Null(std::string_view key);
  // `bytes` escaped as EscapeBytes does, and beside it `<key>_hex` with the
  // bytes in hex when escaping changed them or `hex` is set.
  void Bytes(std::string_view key, std::string_view bytes, bool hex);
  // A transaction timestamp: the number, and `<key>_time` its UTC wall time.
  void Timestamp(std::string_view key, uint64_t ts);

  // Ends a document cut short: closes what is open down to the root object,
  // adds "error": `message` to it, and closes it.
  void Fail(std::string_view message);
  // Whether the document is complete (its root closed).
  bool done() const { return started_ && stack_.empty(); }
  // Whether any JSON writer of the process has written anything.
  static bool AnyStarted();

 private:
  // Writes what comes before a value: a comma, a new line, the indent and
  // the key.
  void Prefix(std::string_view key);

  std::FILE* const out_;
  struct Open {
    char closer;      // '}' or ']'
    bool has_values;  // whether a value was written in it yet
  };
  std::vector<Open> stack_;
  bool started_ = false;
};

// Says `message` on standard error as one line, "strata: <message>", after
// flushing what standard output holds; the first message is kept.
void PrintError(const std::string& message);
// The first message PrintError said; empty when none.
const std::string& FirstError();

// `bytes` for a line of text: hex, or escaped (EscapeBytes) between single
// quotes.
std::string ShowBytes(std::string_view bytes, bool hex);

// A size: "12 B", "3.4 KiB", ...
std::string SizeString(uint64_t n);
// "1 file", "2 files".
std::string Count(uint64_t n, const char* one, const char* many);

// A transaction timestamp's wall-clock part as UTC ("2023-11-14
// 22:13:20.123 UTC"); "?" when it does not fit a calendar.
std::string WallTime(uint64_t ts);
// Wall-clock milliseconds as UTC, as WallTime.
std::string MillisTime(uint64_t millis);
// "<ts> (<WallTime>)".
std::string ShowTimestamp(uint64_t ts);
// Signed milliseconds as seconds with three decimals ("12.345 s").
std::string ShowSeconds(int64_t millis);

// The wall clock now, in milliseconds since the epoch.
uint64_t NowMillis();

}  // namespace strata::cli

#endif  // STRATA_TOOLS_STRATA_CLI_OUTPUT_H_
