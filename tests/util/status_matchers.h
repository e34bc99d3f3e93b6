// ASSERT_OK / EXPECT_OK for Status and Result<T>: on failure they print the
// expression and the status (code and message), not just "false".
//
// Header-only; thread-compatible like GoogleTest's own assertions.
#ifndef STRATA_TESTS_UTIL_STATUS_MATCHERS_H_
#define STRATA_TESTS_UTIL_STATUS_MATCHERS_H_

#include <gtest/gtest.h>

#include "strata/status.h"

namespace strata::test {

inline const Status& StatusOf(const Status& s) { return s; }
template <typename T>
const Status& StatusOf(const Result<T>& r) {
  return r.status();
}

template <typename S>
::testing::AssertionResult IsOkFormat(const char* expr, const S& s) {
  const Status& status = StatusOf(s);
  if (status.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << expr << " is " << status.ToString();
}

}  // namespace strata::test

#define ASSERT_OK(expr) ASSERT_PRED_FORMAT1(::strata::test::IsOkFormat, expr)
#define EXPECT_OK(expr) EXPECT_PRED_FORMAT1(::strata::test::IsOkFormat, expr)

#endif  // STRATA_TESTS_UTIL_STATUS_MATCHERS_H_
