#include "util/test_util.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
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

bool LongTests() {
#ifdef STRATA_LONG_TESTS
  return true;
#else
  const char* s = std::getenv("STRATA_LONG_TESTS");
  return s != nullptr && s[0] == '1';
#endif
}

}  // namespace strata::test
