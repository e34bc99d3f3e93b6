// Runs one fuzz target's kept inputs in the ordinary test build: every file
// under tests/fuzz/corpus/<target>/ (seeds, written by fuzz_seeds) and
// tests/fuzz/regressions/<target>/ (inputs that once crashed it, each kept
// after its fix). The target aborts on a broken invariant, and the
// sanitizer builds catch what it reads out of bounds. This build checks
// checksums, unlike the fuzzing build, so damaged inputs stop earlier here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

TEST(FuzzReplay, EveryKeptInputRunsClean) {
  size_t inputs = 0;
  for (const char* dir : {STRATA_FUZZ_CORPUS, STRATA_FUZZ_REGRESSIONS}) {
    if (!std::filesystem::is_directory(dir)) continue;
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(dir)) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& path : files) {
      SCOPED_TRACE(path.string());
      std::ifstream in(path, std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
      EXPECT_EQ(
          LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), 0);
      inputs++;
    }
  }
  // Every target has seeds checked in.
  EXPECT_GT(inputs, 0u);
}

}  // namespace
