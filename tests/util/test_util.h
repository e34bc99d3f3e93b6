// Helpers shared by the test suites: scratch directories and random data.
//
// Thread-compatible.
#ifndef STRATA_TESTS_UTIL_TEST_UTIL_H_
#define STRATA_TESTS_UTIL_TEST_UTIL_H_

#include <cstdint>
#include <functional>
#include <string>

namespace strata::test {

// A fresh, empty directory under the system temp dir, removed with its
// contents when the object dies (kept if the environment has STRATA_KEEP_TEST_DIRS).
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag = "test");
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  std::string Join(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Removes a directory tree; ignores what is not there.
void RemoveTree(const std::string& path);

// A seed for randomized tests: STRATA_TEST_SEED from the environment if set,
// otherwise derived from the time. Tests print it so a failure can be replayed.
uint64_t TestSeed();

// The whole content of a file ("" when it cannot be read).
std::string ReadAll(const std::string& path);
// Replaces the content of a file.
void WriteAll(const std::string& path, const std::string& data);

// The exit code and combined stdout+stderr of a command run through the shell.
struct RunResult {
  int exit_code = -1;  // 128 + signal number when killed by a signal
  std::string out;
};
RunResult RunCommand(const std::string& command);
// `s` quoted for the shell.
std::string ShellQuote(const std::string& s);

// Crash tests: forks a child that runs `child(fd)`, which writes a line to
// `fd` for each write it has had acknowledged and never returns; waits (up
// to 60 s) for its first line, lets it run `delay_ms` longer, kills it with
// SIGKILL and returns everything it wrote. Nothing written, or a child that
// exits on its own, is an error whose message says so.
struct KilledChild {
  std::string output;
  std::string error;  // empty when the child was killed as planned
};
KilledChild RunChildUntilKilled(const std::function<void(int fd)>& child, int delay_ms);

// True in ASan or TSan builds, where randomized tests run fewer operations
// (the instrumented code is 5-20x slower; the interleavings are what matter).
bool UnderSanitizer();

// True when the long variants of randomized tests were asked for (configure
// with -DSTRATA_LONG_TESTS=ON, or STRATA_LONG_TESTS=1 in the environment).
bool LongTests();

}  // namespace strata::test

#endif  // STRATA_TESTS_UTIL_TEST_UTIL_H_
