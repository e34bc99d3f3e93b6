// What the tests of the command-line tools share: running a tool as a child
// process and looking at what it printed.
#ifndef STRATA_TESTS_TOOLS_TOOL_TEST_UTIL_H_
#define STRATA_TESTS_TOOLS_TOOL_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <string>

#include "common/json.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::tool_test {

inline std::string Quote(const std::string& s) { return test::ShellQuote(s); }

// Runs `tool` with `args` (shell syntax; standard error joins the output).
inline test::RunResult Run(const char* tool, const std::string& args) {
  return test::RunCommand(std::string(tool) + " " + args);
}

// What `tool --json <args>` wrote to standard output alone (standard error
// dropped), parsed as JSON (a document that does not parse fails the test
// and gives an empty value); its exit code in *exit_code.
inline Json RunJson(const char* tool, const std::string& args, int* exit_code) {
  test::RunResult r =
      test::RunCommand("{ " + std::string(tool) + " --json " + args + " 2>/dev/null; }");
  *exit_code = r.exit_code;
  Result<Json> json = Json::Parse(r.out);
  EXPECT_OK(json) << args << "\n" << r.out;
  return json.ok() ? *json : Json();
}

inline bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace strata::tool_test

#endif  // STRATA_TESTS_TOOLS_TOOL_TEST_UTIL_H_
