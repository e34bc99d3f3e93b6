// What the tests of the command-line tools share: running a tool as a child
// process and looking at what it printed.
#ifndef STRATA_TESTS_TOOLS_TOOL_TEST_UTIL_H_
#define STRATA_TESTS_TOOLS_TOOL_TEST_UTIL_H_

#include <string>

#include "util/test_util.h"

namespace strata::tool_test {

inline std::string Quote(const std::string& s) { return test::ShellQuote(s); }

// Runs `tool` with `args` (shell syntax; standard error joins the output).
inline test::RunResult Run(const char* tool, const std::string& args) {
  return test::RunCommand(std::string(tool) + " " + args);
}

inline bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace strata::tool_test

#endif  // STRATA_TESTS_TOOLS_TOOL_TEST_UTIL_H_
