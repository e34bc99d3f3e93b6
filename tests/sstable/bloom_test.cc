#include "sstable/bloom.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "common/cell_key.h"
#include "common/coding.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::sstable {
namespace {

std::string RowKey(uint64_t i) {
  std::string row = "user" + std::to_string(i);
  std::string prefix;
  AppendRowPrefix(&prefix, row);
  return prefix;
}

// The false-positive rate of a filter over `n` keys, measured with `probes`
// keys that were not added.
double MeasureFpRate(int bits_per_key, uint64_t n, uint64_t probes) {
  BloomFilterBuilder b(bits_per_key);
  for (uint64_t i = 0; i < n; i++) b.AddKey(RowKey(i));
  std::string filter;
  b.Finish(&filter);
  for (uint64_t i = 0; i < n; i++) {
    EXPECT_TRUE(BloomMayMatch(filter, BloomHash(RowKey(i)))) << "false negative for key " << i;
  }
  uint64_t fp = 0;
  for (uint64_t i = 0; i < probes; i++) {
    if (BloomMayMatch(filter, BloomHash(RowKey(n + 1000000000 + i)))) fp++;
  }
  return static_cast<double>(fp) / static_cast<double>(probes);
}

TEST(BloomTest, EmptyFilterMatchesNothing) {
  BloomFilterBuilder b(10);
  std::string filter;
  b.Finish(&filter);
  EXPECT_FALSE(BloomMayMatch(filter, BloomHash("x")));
  EXPECT_FALSE(BloomMayMatch(filter, BloomHash("")));
}

TEST(BloomTest, MalformedFilterMatchesEverything) {
  EXPECT_TRUE(BloomMayMatch("", BloomHash("x")));
  std::string bad(10, '\0');
  bad.back() = 99;  // probe count out of range
  EXPECT_TRUE(BloomMayMatch(bad, BloomHash("x")));
}

TEST(BloomTest, NoFalseNegativesAcrossSizes) {
  for (int bits : {1, 4, 10, 20}) {
    for (uint64_t n : {1, 10, 100, 1000, 10000}) {
      BloomFilterBuilder b(bits);
      for (uint64_t i = 0; i < n; i++) b.AddKey(RowKey(i));
      std::string filter;
      b.Finish(&filter);
      for (uint64_t i = 0; i < n; i++) {
        ASSERT_TRUE(BloomMayMatch(filter, BloomHash(RowKey(i)))) << bits << " " << n << " " << i;
      }
    }
  }
}

// The figure quoted in sstable/FORMAT.md. Expected (1 - e^(-7/10))^7 = 0.82%.
TEST(BloomTest, FalsePositiveRateAt10BitsPerKey) {
  const uint64_t n = test::LongTests() ? 1000000 : 100000;
  const uint64_t probes = test::LongTests() ? 10000000 : 1000000;
  const double rate = MeasureFpRate(10, n, probes);
  std::printf("bloom 10 bits/key, %llu keys, %llu probes: false-positive rate %.3f%%\n",
              static_cast<unsigned long long>(n), static_cast<unsigned long long>(probes),
              rate * 100);
  EXPECT_LT(rate, 0.0125);
  EXPECT_GT(rate, 0.004);  // a much lower figure would mean the probe count is wrong
}

TEST(BloomTest, FalsePositiveRateFallsWithBits) {
  double prev = 1.0;
  for (int bits : {4, 8, 12, 16}) {
    const double rate = MeasureFpRate(bits, 20000, 200000);
    std::printf("bloom %d bits/key: false-positive rate %.3f%%\n", bits, rate * 100);
    EXPECT_LT(rate, prev);
    prev = rate;
  }
}

TEST(BloomTest, FilterBlockRoundTrip) {
  FilterBlockBuilder b(10);
  std::string row_a, row_b, col;
  AppendRowPrefix(&row_a, "a");
  AppendRowPrefix(&row_b, "b");
  AppendColumnPrefix(&col, "a", 1, "q");
  b.AddRow(row_a);
  b.AddColumn(col);
  auto reader = FilterBlockReader::Parse(b.Finish());
  ASSERT_OK(reader);
  EXPECT_TRUE(reader->RowMayMatch(row_a));
  EXPECT_TRUE(reader->ColumnMayMatch(col));
  EXPECT_EQ(reader->row_probes(), 7);
  EXPECT_EQ(reader->column_probes(), 7);
  // The two filters are separate: the row filter never saw the column key.
  int row_hits_for_columns = 0;
  for (int i = 0; i < 1000; i++) {
    std::string c;
    AppendColumnPrefix(&c, "a", static_cast<uint16_t>(i), "q");
    if (reader->RowMayMatch(c)) row_hits_for_columns++;
  }
  EXPECT_LT(row_hits_for_columns, 100);
}

TEST(BloomTest, FilterBlockParseRejectsGarbage) {
  EXPECT_TRUE(FilterBlockReader::Parse("").status().IsCorruption());
  std::string bad;
  PutFixed32(&bad, 1000);
  bad.append("xxxx");
  EXPECT_TRUE(FilterBlockReader::Parse(bad).status().IsCorruption());
}

}  // namespace
}  // namespace strata::sstable
