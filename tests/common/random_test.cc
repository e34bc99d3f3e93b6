#include "common/random.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <set>
#include <vector>

#include "util/test_util.h"

namespace strata {
namespace {

TEST(RandomTest, SameSeedSameSequence) {
  Random a(42), b(42);
  for (int i = 0; i < 1000; i++) ASSERT_EQ(a.Next64(), b.Next64());
  a.Seed(7);
  b.Seed(7);
  for (int i = 0; i < 100; i++) ASSERT_EQ(a.Uniform(1000), b.Uniform(1000));
}

TEST(RandomTest, DifferentSeedsDiffer) {
  std::set<uint64_t> firsts;
  for (uint64_t seed = 0; seed < 100; seed++) firsts.insert(Random(seed).Next64());
  EXPECT_EQ(firsts.size(), 100u);
  // Seed 0 does not make a degenerate (all-zero) state.
  Random zero(0);
  uint64_t acc = 0;
  for (int i = 0; i < 10; i++) acc |= zero.Next64();
  EXPECT_NE(acc, 0u);
}

TEST(RandomTest, UniformStaysInRangeAndIsFlat) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Random rnd(seed);
  constexpr int kBuckets = 10;
  constexpr int kDraws = 100000;
  std::vector<int> counts(kBuckets, 0);
  for (int i = 0; i < kDraws; i++) {
    const uint64_t v = rnd.Uniform(kBuckets);
    ASSERT_LT(v, static_cast<uint64_t>(kBuckets));
    counts[v]++;
  }
  // Chi-squared with 9 degrees of freedom; 40 is far beyond p = 1e-5.
  double chi2 = 0;
  const double expected = static_cast<double>(kDraws) / kBuckets;
  for (int c : counts) chi2 += (c - expected) * (c - expected) / expected;
  EXPECT_LT(chi2, 40.0);
  for (int i = 0; i < 1000; i++) ASSERT_EQ(rnd.Uniform(1), 0u);
  // Large bounds too.
  const uint64_t big = (uint64_t{1} << 63) + 12345;
  for (int i = 0; i < 1000; i++) ASSERT_LT(rnd.Uniform(big), big);
}

TEST(RandomTest, OneIn) {
  Random rnd(1);
  for (int i = 0; i < 100; i++) ASSERT_TRUE(rnd.OneIn(1));
  int hits = 0;
  for (int i = 0; i < 100000; i++) hits += rnd.OneIn(4);
  EXPECT_NEAR(hits, 25000, 1000);
}

TEST(RandomTest, Skewed) {
  Random rnd(3);
  int small = 0;
  for (int i = 0; i < 10000; i++) {
    const uint64_t v = rnd.Skewed(10);
    ASSERT_LT(v, uint64_t{1} << 10);
    small += v < 32;
  }
  // Half the bit counts are <= 5, so well over a third of draws are < 32.
  EXPECT_GT(small, 4000);
}

TEST(RandomTest, Next32UsesAllBits) {
  Random rnd(5);
  uint32_t ored = 0, anded = ~0u;
  for (int i = 0; i < 1000; i++) {
    const uint32_t v = rnd.Next();
    ored |= v;
    anded &= v;
  }
  EXPECT_EQ(ored, ~0u);
  EXPECT_EQ(anded, 0u);
}

TEST(RandomTest, RandomBytesAndLetters) {
  Random rnd(9);
  EXPECT_EQ(rnd.RandomBytes(0), "");
  const std::string bytes = rnd.RandomBytes(10000);
  ASSERT_EQ(bytes.size(), 10000u);
  std::set<char> seen(bytes.begin(), bytes.end());
  EXPECT_EQ(seen.size(), 256u);  // every byte value, 0x00 and 0xFF included
  const std::string letters = rnd.RandomLetters(1000);
  ASSERT_EQ(letters.size(), 1000u);
  std::set<char> seen_letters(letters.begin(), letters.end());
  EXPECT_EQ(seen_letters.size(), 26u);
  for (char c : letters) ASSERT_TRUE(c >= 'a' && c <= 'z') << c;
}

TEST(RandomTest, CopiesContinueIdentically) {
  Random a(11);
  a.Next64();
  Random b = a;
  for (int i = 0; i < 100; i++) ASSERT_EQ(a.Next64(), b.Next64());
}

}  // namespace
}  // namespace strata
