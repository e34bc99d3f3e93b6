#include "common/arena.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "common/random.h"
#include "util/test_util.h"

namespace strata {
namespace {

TEST(ArenaTest, Empty) {
  Arena arena;
  EXPECT_EQ(arena.MemoryUsage(), 0u);
}

// Fills every allocation with a pattern derived from its index and checks
// them all at the end: allocations must not overlap.
TEST(ArenaTest, ManyAllocationsDoNotOverlap) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Random rnd(seed);
  Arena arena;
  std::vector<std::pair<size_t, char*>> allocated;
  size_t total = 0;
  const int n = test::LongTests() ? 100000 : 20000;
  for (int i = 0; i < n; i++) {
    size_t size;
    if (i % (n / 10) == 0) {
      size = i + 1;
    } else {
      size = rnd.OneIn(4000) ? rnd.Uniform(6000) + 1
                             : (rnd.OneIn(10) ? rnd.Uniform(100) + 1 : rnd.Uniform(20) + 1);
    }
    char* r = rnd.OneIn(10) ? arena.AllocateAligned(size) : arena.Allocate(size);
    for (size_t b = 0; b < size; b++) r[b] = static_cast<char>(i % 256);
    total += size;
    allocated.emplace_back(size, r);
    ASSERT_GE(arena.MemoryUsage(), total);
    // Little waste beyond the block being filled.
    ASSERT_LE(arena.MemoryUsage(), total * 1.10 + Arena::kBlockSize + 1024);
  }
  for (size_t i = 0; i < allocated.size(); i++) {
    const auto [size, p] = allocated[i];
    for (size_t b = 0; b < size; b++) {
      ASSERT_EQ(static_cast<int>(p[b]) & 0xff, static_cast<int>(i % 256)) << i << " " << b;
    }
  }
}

TEST(ArenaTest, AlignedAllocationsAreAligned) {
  Arena arena;
  for (size_t size : {1, 3, 7, 8, 15, 16, 17, 100, 5000, 20000, 100000}) {
    arena.Allocate(1);  // unalign the bump pointer
    char* p = arena.AllocateAligned(size);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % alignof(std::max_align_t), 0u) << size;
  }
}

TEST(ArenaTest, LargeAllocationsKeepTheCurrentBlock) {
  Arena arena;
  char* a = arena.Allocate(10);
  const size_t usage = arena.MemoryUsage();
  // Bigger than a quarter block: gets a block of its own...
  char* big = arena.Allocate(Arena::kBlockSize);
  EXPECT_GE(arena.MemoryUsage(), usage + Arena::kBlockSize);
  // ...and small allocations continue right after the first one.
  char* b = arena.Allocate(10);
  EXPECT_EQ(b, a + 10);
  EXPECT_NE(big, nullptr);
}

TEST(ArenaTest, MemoryUsageCountsBlocks) {
  Arena arena;
  arena.Allocate(1);
  EXPECT_GE(arena.MemoryUsage(), Arena::kBlockSize);
  EXPECT_LT(arena.MemoryUsage(), 2 * Arena::kBlockSize);
  for (size_t used = 1; used < Arena::kBlockSize; used += 100) arena.Allocate(100);
  EXPECT_GE(arena.MemoryUsage(), 2 * Arena::kBlockSize);
}

}  // namespace
}  // namespace strata
