#include "util/test_util.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <random>

namespace strata::test {

ScratchDir::ScratchDir(const std::string& tag) {
  std::random_device rd;
  std::string base = std::filesystem::temp_directory_path().string();
  for (int attempt = 0;; attempt++) {
    path_ = base + "/strata-" + tag + "-" + std::to_string(::getpid()) + "-" +
            std::to_string(rd() % 1000000);
    std::error_code ec;
    if (std::filesystem::create_directory(path_, ec)) break;
    if (attempt > 100) std::abort();
  }
}

ScratchDir::~ScratchDir() {
  if (std::getenv("STRATA_KEEP_TEST_DIRS") == nullptr) RemoveTree(path_);
}

void RemoveTree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

uint64_t TestSeed() {
  if (const char* s = std::getenv("STRATA_TEST_SEED")) return std::strtoull(s, nullptr, 10);
  return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteAll(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

RunResult RunCommand(const std::string& command) {
  RunResult r;
  const std::string cmd = command + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

std::string ShellQuote(const std::string& s) {
  std::string r = "'";
  for (char c : s) {
    if (c == '\'') {
      r += "'\\''";
    } else {
      r += c;
    }
  }
  return r + "'";
}

bool UnderSanitizer() {
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  return true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

bool LongTests() {
#ifdef STRATA_LONG_TESTS
  return true;
#else
  const char* s = std::getenv("STRATA_LONG_TESTS");
  return s != nullptr && s[0] == '1';
#endif
}

KilledChild RunChildUntilKilled(const std::function<void(int fd)>& child, int delay_ms) {
  KilledChild result;
  int fds[2];
  if (pipe(fds) != 0) {
    result.error = "pipe failed";
    return result;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    result.error = "fork failed";
    return result;
  }
  if (pid == 0) {
    close(fds[0]);
    child(fds[1]);
    _exit(99);  // the child must not return
  }
  close(fds[1]);
  fcntl(fds[0], F_SETFL, O_NONBLOCK);
  char buf[4096];
  auto drain = [&] {
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof(buf))) > 0) result.output.append(buf, n);
  };
  // The first acknowledgement may take a while on a loaded machine (opening
  // recovers the log); after it the child runs for `delay_ms` more.
  for (int waited_ms = 0; result.output.find('\n') == std::string::npos && waited_ms < 60000;
       waited_ms++) {
    drain();
    usleep(1000);
  }
  const bool acknowledged = result.output.find('\n') != std::string::npos;
  for (int waited_ms = 0; acknowledged && waited_ms < delay_ms; waited_ms++) {
    drain();
    usleep(1000);
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  fcntl(fds[0], F_SETFL, 0);
  drain();
  close(fds[0]);
  if (!acknowledged) {
    result.error = "child acknowledged nothing in 60 s";
  } else if (!WIFSIGNALED(status)) {
    result.error = "child exited on its own with status " + std::to_string(WEXITSTATUS(status));
  }
  return result;
}

}  // namespace strata::test
