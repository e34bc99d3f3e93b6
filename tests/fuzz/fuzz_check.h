// What the fuzz targets share: FUZZ_CHECK, an invariant that must hold for
// every input (a failure aborts, and libFuzzer keeps the input as a crash).
#ifndef STRATA_TESTS_FUZZ_FUZZ_CHECK_H_
#define STRATA_TESTS_FUZZ_FUZZ_CHECK_H_

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond)                                                                \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      std::fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                     \
    }                                                                                   \
  } while (0)

#endif  // STRATA_TESTS_FUZZ_FUZZ_CHECK_H_
