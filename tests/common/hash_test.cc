#include "common/hash.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "common/random.h"
#include "util/test_util.h"

namespace strata {
namespace {

TEST(HashTest, Deterministic) {
  const std::string data = "the quick brown fox";
  EXPECT_EQ(Hash64(data), Hash64(data.data(), data.size()));
  EXPECT_EQ(Hash64(data, 7), Hash64(data.data(), data.size(), 7));
  EXPECT_EQ(Checksum32(data.data(), data.size()), static_cast<uint32_t>(Hash64(data)));
}

// Checksums are stored on disk: these values must never change.
TEST(HashTest, GoldenValues) {
  EXPECT_EQ(Hash64("", 0), 0x2d06800538d394c2ULL);  // XXH3-64 of nothing, seed 0
  const std::string abc = "abc";
  EXPECT_EQ(Hash64(abc), 0x78af5f94892f3950ULL);
  EXPECT_EQ(Checksum32(abc.data(), abc.size()), 0x892f3950u);
}

TEST(HashTest, SeedChangesValue) {
  const std::string data = "block contents";
  std::set<uint64_t> seen;
  for (uint64_t seed = 0; seed < 50; seed++) seen.insert(Hash64(data, seed));
  EXPECT_EQ(seen.size(), 50u);
  EXPECT_NE(Checksum32(data.data(), data.size(), 1), Checksum32(data.data(), data.size(), 2));
  ChecksumBuilder a(1), b(2);
  a.Update(data);
  b.Update(data);
  EXPECT_NE(a.Finish64(), b.Finish64());
}

TEST(HashTest, SingleBitFlipsChangeTheChecksum) {
  Random rnd(17);
  const std::string data = rnd.RandomBytes(300);
  const uint32_t base = Checksum32(data.data(), data.size());
  for (size_t bit = 0; bit < data.size() * 8; bit++) {
    std::string flipped = data;
    flipped[bit / 8] = static_cast<char>(flipped[bit / 8] ^ (1 << (bit % 8)));
    ASSERT_NE(Checksum32(flipped.data(), flipped.size()), base) << bit;
  }
}

TEST(HashTest, BuilderEqualsOneShot) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Random rnd(seed);
  for (int i = 0; i < 300; i++) {
    // Sizes around XXH3's internal block and stripe boundaries.
    const std::string data = rnd.RandomBytes(rnd.OneIn(3) ? rnd.Uniform(5000) : rnd.Uniform(300));
    const uint64_t hash_seed = rnd.OneIn(2) ? 0 : rnd.Next64();
    ChecksumBuilder b(hash_seed);
    size_t pos = 0;
    while (pos < data.size()) {
      const size_t n =
          std::min<size_t>(data.size() - pos, rnd.Uniform(100) + (rnd.OneIn(5) ? 0 : 1));
      if (rnd.OneIn(2)) {
        b.Update(data.data() + pos, n);
      } else {
        b.Update(Slice(data.data() + pos, n));
      }
      pos += n;
    }
    ASSERT_EQ(b.Finish64(), Hash64(data, hash_seed)) << data.size();
    ASSERT_EQ(b.Finish32(), Checksum32(data.data(), data.size(), hash_seed));
    // Finishing does not end the stream.
    b.Update("x", 1);
    ASSERT_EQ(b.Finish64(), Hash64(data + "x", hash_seed));
  }
}

TEST(HashTest, EmptyBuilder) {
  ChecksumBuilder b;
  EXPECT_EQ(b.Finish64(), Hash64("", 0));
  ChecksumBuilder s(99);
  EXPECT_EQ(s.Finish32(), Checksum32("", 0, 99));
}

}  // namespace
}  // namespace strata
