#include "sstable/bloom.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <optional>
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

bool MayMatch(BloomLayout layout, const Slice& filter, uint64_t h) {
  return layout == BloomLayout::kBlocked ? BlockedBloomMayMatch(filter, h)
                                         : BloomMayMatch(filter, h);
}

// The false-positive rate of a filter over `n` keys, measured with `probes`
// keys that were not added.
double MeasureFpRate(int bits_per_key, uint64_t n, uint64_t probes,
                     BloomLayout layout = BloomLayout::kFlat) {
  BloomFilterBuilder b(bits_per_key, layout);
  for (uint64_t i = 0; i < n; i++) b.AddKey(RowKey(i));
  std::string filter;
  b.Finish(&filter);
  for (uint64_t i = 0; i < n; i++) {
    EXPECT_TRUE(MayMatch(layout, filter, BloomHash(RowKey(i)))) << "false negative for key " << i;
  }
  uint64_t fp = 0;
  for (uint64_t i = 0; i < probes; i++) {
    if (MayMatch(layout, filter, BloomHash(RowKey(n + 1000000000 + i)))) fp++;
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

// The table in sstable/FORMAT.md: both layouts at the same sizes, 100,000
// keys, 1,000,000 absent keys probed (10x both with STRATA_LONG_TESTS).
TEST(BloomTest, FalsePositiveRatesOfBothLayouts) {
  const uint64_t n = test::LongTests() ? 1000000 : 100000;
  const uint64_t probes = test::LongTests() ? 10000000 : 1000000;
  std::printf("bits/key  flat: probes rate   blocked: probes rate\n");
  double prev_blocked = 1.0;
  for (int bits : {4, 8, 10, 12, 16}) {
    const double flat = MeasureFpRate(bits, n, probes, BloomLayout::kFlat);
    const double blocked = MeasureFpRate(bits, n, probes, BloomLayout::kBlocked);
    std::printf("%8d  %11d %.3f%%  %14d %.3f%%\n", bits, BloomProbes(bits, BloomLayout::kFlat),
                flat * 100, BloomProbes(bits, BloomLayout::kBlocked), blocked * 100);
    EXPECT_LT(blocked, prev_blocked);
    prev_blocked = blocked;
    // Lines fill unevenly, so a blocked bloom does somewhat worse than a flat
    // one of the same size, never wildly.
    EXPECT_LT(blocked, flat * 2.5 + 0.001) << bits;
  }
}

TEST(BloomTest, BlockedFalsePositiveRateAt10BitsPerKey) {
  const double rate = MeasureFpRate(10, 100000, 1000000, BloomLayout::kBlocked);
  EXPECT_LT(rate, 0.0125);
  EXPECT_GT(rate, 0.004);
}

TEST(BloomTest, BlockedNoFalseNegativesAcrossSizes) {
  for (int bits : {1, 4, 10, 20}) {
    for (uint64_t n : {0, 1, 7, 51, 52, 1000, 20000}) {
      BloomFilterBuilder b(bits, BloomLayout::kBlocked);
      for (uint64_t i = 0; i < n; i++) b.AddKey(RowKey(i));
      std::string filter;
      b.Finish(&filter);
      ASSERT_EQ((filter.size() - 1) % kBloomLineBytes, 0u);
      ASSERT_GE(filter.size(), kBloomLineBytes + 1);
      // Whole lines, at least bits_per_key bits per key.
      EXPECT_GE((filter.size() - 1) * 8, n * bits);
      EXPECT_LE((filter.size() - 1) * 8, std::max<uint64_t>(512, n * bits + 511));
      for (uint64_t i = 0; i < n; i++) {
        ASSERT_TRUE(BlockedBloomMayMatch(filter, BloomHash(RowKey(i)))) << bits << " " << n;
      }
    }
  }
}

TEST(BloomTest, BlockedProbesOfAKeyStayInOneLine) {
  for (uint64_t key = 0; key < 200; key++) {
    BloomFilterBuilder b(10, BloomLayout::kBlocked);
    // 100 keys' worth of bits: 1000 bits, two lines; only one key added.
    for (int i = 0; i < 100; i++) b.AddKey(RowKey(key));
    std::string filter;
    b.Finish(&filter);
    ASSERT_EQ(filter.size(), 2 * kBloomLineBytes + 1);
    int lines_touched = 0, bits_set = 0;
    for (size_t line = 0; line < 2; line++) {
      int here = 0;
      for (size_t j = 0; j < kBloomLineBytes; j++) {
        here += __builtin_popcount(static_cast<uint8_t>(filter[line * kBloomLineBytes + j]));
      }
      if (here > 0) lines_touched++;
      bits_set += here;
    }
    EXPECT_EQ(lines_touched, 1);
    EXPECT_GE(bits_set, 1);
    EXPECT_LE(bits_set, BloomProbes(10, BloomLayout::kBlocked));
  }
}

TEST(BloomTest, MalformedBlockedFilterMatchesEverything) {
  EXPECT_TRUE(BlockedBloomMayMatch("", BloomHash("x")));
  EXPECT_TRUE(BlockedBloomMayMatch(std::string(64, '\0'), BloomHash("x")));  // no probe byte
  std::string bad(65, '\0');
  bad.back() = 0;  // zero probes
  EXPECT_TRUE(BlockedBloomMayMatch(bad, BloomHash("x")));
  bad.back() = 7;
  EXPECT_FALSE(BlockedBloomMayMatch(bad, BloomHash("x")));  // well-formed and empty
  bad.push_back('\0');                                      // not whole lines
  EXPECT_TRUE(BlockedBloomMayMatch(bad, BloomHash("x")));
}

TEST(BloomTest, BlockedFilterBlockRoundTrip) {
  std::string row_a, row_b, col_a1, col_a2, col_b;
  AppendRowPrefix(&row_a, "a");
  AppendRowPrefix(&row_b, "b");
  AppendColumnPrefix(&col_a1, "a", 1, "q");
  AppendColumnPrefix(&col_a2, "a", 2, "q");
  AppendColumnPrefix(&col_b, "b", 1, "q");
  {
    // Two columns in row a: the column filter is kept.
    FilterBlockBuilder b(10, BloomLayout::kBlocked, /*omit_single_columns=*/true);
    b.AddRow(row_a);
    b.AddColumn(col_a1);
    b.AddColumn(col_a2);
    auto reader = FilterBlockReader::Parse(b.Finish(), BloomLayout::kBlocked);
    ASSERT_OK(reader);
    EXPECT_TRUE(reader->has_column_filter());
    EXPECT_EQ(reader->row_filter_size(), kBloomLineBytes + 1);
    EXPECT_EQ(reader->column_filter_size(), kBloomLineBytes + 1);
    EXPECT_TRUE(reader->RowMayMatch(row_a));
    EXPECT_TRUE(reader->ColumnMayMatch(col_a1));
    EXPECT_TRUE(reader->ColumnMayMatch(col_a2));
    EXPECT_EQ(reader->row_probes(), BloomProbes(10, BloomLayout::kBlocked));
    // A copy shares the aligned filters.
    FilterBlockReader copy = *reader;
    EXPECT_TRUE(copy.ColumnMayMatch(col_a2));
  }
  {
    // One column per row: no column filter; column probes ask the row filter.
    FilterBlockBuilder b(10, BloomLayout::kBlocked, /*omit_single_columns=*/true);
    b.AddRow(row_a);
    b.AddColumn(col_a1);
    std::string contents = b.Finish();
    EXPECT_EQ(contents.size(), 4 + kBloomLineBytes + 1);
    auto reader = FilterBlockReader::Parse(contents, BloomLayout::kBlocked);
    ASSERT_OK(reader);
    EXPECT_FALSE(reader->has_column_filter());
    EXPECT_TRUE(reader->ColumnMayMatch(col_a1));
    EXPECT_TRUE(reader->ColumnMayMatch(col_a2));  // same row: maybe
    EXPECT_EQ(reader->ColumnMayMatch(col_b), reader->RowMayMatch(row_b));
  }
}

TEST(BloomTest, BlockedFilterBlockParseRejectsGarbage) {
  auto parse = [](const std::string& s) {
    return FilterBlockReader::Parse(s, BloomLayout::kBlocked).status();
  };
  EXPECT_TRUE(parse("").IsCorruption());
  std::string block;
  PutFixed32(&block, 65);
  block.append(64, '\0');
  block.push_back(7);
  EXPECT_OK(parse(block));                         // a row filter alone
  EXPECT_TRUE(parse(block + "x").IsCorruption());  // a column filter of no whole line
  std::string with_columns = block + std::string(64, '\0') + "\x07";
  EXPECT_OK(parse(with_columns));
  with_columns.back() = 0;
  EXPECT_TRUE(parse(with_columns).IsCorruption());  // zero probes
  std::string bad = block;
  EncodeFixed32(bad.data(), 64);  // not lines plus a probe byte
  EXPECT_TRUE(parse(bad).IsCorruption());
  EncodeFixed32(bad.data(), 1000);  // past the end
  EXPECT_TRUE(parse(bad).IsCorruption());
  bad = block;
  bad[4 + 64] = 31;  // too many probes
  EXPECT_TRUE(parse(bad).IsCorruption());
}

TEST(BloomTest, FilterBlockRoundTrip) {
  FilterBlockBuilder b(10);
  std::string row_a, row_b, col;
  AppendRowPrefix(&row_a, "a");
  AppendRowPrefix(&row_b, "b");
  AppendColumnPrefix(&col, "a", 1, "q");
  b.AddRow(row_a);
  b.AddColumn(col);
  // A copy outlives the reader it came from.
  std::optional<FilterBlockReader> reader;
  {
    auto parsed = FilterBlockReader::Parse(b.Finish());
    ASSERT_OK(parsed);
    reader = *parsed;
  }
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
