#include "sstable/block_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "common/random.h"
#include "sstable/block_builder.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::sstable {
namespace {

// A block whose single entry records `id`, to tell blocks apart.
std::unique_ptr<Block> MakeBlock(int id) {
  BlockBuilder b(16);
  b.Add("id", std::to_string(id));
  auto block = Block::Parse(b.Finish().ToString());
  EXPECT_OK(block);
  return std::move(*block);
}

int IdOf(const BlockCache::Handle& h) {
  auto it = h.block()->NewIterator();
  it->SeekToFirst();
  return std::stoi(it->value().ToString());
}

BlockCache::Key K(uint64_t offset, uint64_t file = 1) { return BlockCache::Key{file, offset}; }

TEST(BlockCacheTest, HitAndMiss) {
  BlockCache cache(1000, 0);
  EXPECT_FALSE(cache.Lookup(K(1)));
  { auto h = cache.Insert(K(1), MakeBlock(100), 10, 1); }
  auto h = cache.Lookup(K(1));
  ASSERT_TRUE(h);
  EXPECT_EQ(IdOf(h), 100);
  EXPECT_FALSE(cache.Lookup(K(1, 2)));  // another file
  EXPECT_EQ(cache.hits(), 1u);
  EXPECT_EQ(cache.misses(), 2u);
}

TEST(BlockCacheTest, EvictsLeastRecentlyUsed) {
  BlockCache cache(100, 0);
  for (int i = 0; i < 10; i++) cache.Insert(K(i), MakeBlock(i), 10, 0);
  EXPECT_EQ(cache.usage(), 100u);
  EXPECT_TRUE(cache.Lookup(K(0)));  // 0 becomes the most recently used
  cache.Insert(K(10), MakeBlock(10), 10, 0);
  EXPECT_TRUE(cache.Lookup(K(0)));
  EXPECT_FALSE(cache.Lookup(K(1)));  // the oldest went
  EXPECT_TRUE(cache.Lookup(K(2)));
  EXPECT_EQ(cache.usage(), 100u);
  cache.Insert(K(11), MakeBlock(11), 35, 0);  // needs four slots
  EXPECT_LE(cache.usage(), 100u);
  EXPECT_FALSE(cache.Lookup(K(3)));
  EXPECT_FALSE(cache.Lookup(K(5)));
  EXPECT_TRUE(cache.Lookup(K(11)));
}

TEST(BlockCacheTest, ReplaceAndErase) {
  BlockCache cache(1000, 0);
  auto old = cache.Insert(K(1), MakeBlock(1), 10, 0);
  cache.Insert(K(1), MakeBlock(2), 20, 0);
  EXPECT_EQ(IdOf(cache.Lookup(K(1))), 2);
  EXPECT_EQ(IdOf(old), 1);           // still pinned and valid
  EXPECT_EQ(cache.usage(), 30u);     // the replaced entry lives while pinned
  EXPECT_EQ(cache.num_entries(), 1u);
  old.Reset();
  EXPECT_EQ(cache.usage(), 20u);
  cache.Erase(K(1));
  EXPECT_FALSE(cache.Lookup(K(1)));
  EXPECT_EQ(cache.usage(), 0u);
}

TEST(BlockCacheTest, PinnedEntriesAreNotEvicted) {
  BlockCache cache(100, 0);
  auto pinned = cache.Insert(K(0), MakeBlock(0), 60, 0);
  EXPECT_EQ(cache.pinned_usage(), 60u);
  for (int i = 1; i < 20; i++) cache.Insert(K(i), MakeBlock(i), 20, 0);
  EXPECT_TRUE(cache.Lookup(K(0)));
  EXPECT_LE(cache.usage(), 100u);
  EXPECT_EQ(cache.pinned_usage(), 60u);
  // A handle held while the cache is over capacity: usage may exceed it.
  auto big = cache.Insert(K(100), MakeBlock(100), 90, 0);
  EXPECT_EQ(cache.usage(), 150u);
  EXPECT_EQ(cache.pinned_usage(), 150u);
  big.Reset();  // released: now evictable, and evicted to get under capacity
  EXPECT_LE(cache.usage(), 100u);
  pinned.Reset();
  EXPECT_EQ(cache.pinned_usage(), 0u);
}

TEST(BlockCacheTest, ResidentEntriesStayUntilErased) {
  BlockCache cache(100, 0);
  for (int i = 0; i < 3; i++) {
    cache.Insert(K(i, 9), MakeBlock(i), 20, 7, BlockCache::Priority::kResident);
  }
  EXPECT_EQ(cache.pinned_usage(), 60u);
  for (int i = 0; i < 50; i++) cache.Insert(K(i), MakeBlock(i), 10, 1);
  for (int i = 0; i < 3; i++) EXPECT_TRUE(cache.Lookup(K(i, 9))) << i;
  EXPECT_EQ(cache.OwnerUsage(7), 60u);
  EXPECT_LE(cache.usage(), 100u);
  EXPECT_EQ(cache.pinned_usage(), 60u);
  cache.EraseFile(9);
  EXPECT_EQ(cache.OwnerUsage(7), 0u);
  EXPECT_EQ(cache.pinned_usage(), 0u);
  for (int i = 0; i < 3; i++) EXPECT_FALSE(cache.Lookup(K(i, 9)));
}

// A block once resident stays so: a normal insert of the same key (a reader
// of the file opened unpinned, racing with the pass that made the file
// resident) keeps the resident entry, and a resident reader's hit on a
// normal entry makes it resident.
TEST(BlockCacheTest, ResidentEntriesAreNeverDowngraded) {
  BlockCache cache(100, 0);
  cache.Insert(K(1), MakeBlock(1), 20, 7, BlockCache::Priority::kResident);
  {
    auto h = cache.Insert(K(1), MakeBlock(2), 20, 7);
    EXPECT_EQ(IdOf(h), 1);  // the resident block
  }
  cache.Insert(K(2), MakeBlock(2), 20, 7);  // normal
  EXPECT_TRUE(cache.Lookup(K(2), BlockCache::Priority::kResident));
  EXPECT_EQ(cache.pinned_usage(), 40u);
  cache.SetCapacity(0);
  EXPECT_TRUE(cache.Lookup(K(1)));
  EXPECT_TRUE(cache.Lookup(K(2)));
  EXPECT_EQ(cache.OwnerUsage(7), 40u);
  cache.EraseFile(1);
  EXPECT_EQ(cache.usage(), 0u);
  EXPECT_EQ(cache.pinned_usage(), 0u);
}

TEST(BlockCacheTest, PerOwnerCharges) {
  BlockCache cache(10000, 2);
  for (int i = 0; i < 30; i++) cache.Insert(K(i), MakeBlock(i), 10 + i % 3, 1 + i % 3);
  size_t want[4] = {0, 0, 0, 0};
  for (int i = 0; i < 30; i++) want[1 + i % 3] += 10 + i % 3;
  for (int t = 1; t <= 3; t++) EXPECT_EQ(cache.OwnerUsage(t), want[t]) << t;
  EXPECT_EQ(cache.OwnerUsage(4), 0u);
  EXPECT_EQ(cache.usage(), want[1] + want[2] + want[3]);
  cache.SetCapacity(0);  // evicts everything unpinned
  EXPECT_EQ(cache.usage(), 0u);
  for (int t = 1; t <= 3; t++) EXPECT_EQ(cache.OwnerUsage(t), 0u);
}

TEST(BlockCacheTest, ConcurrentUse) {
  BlockCache cache(64 * 100, 3);
  const int kThreads = 4;
  const int kOps = test::LongTests() ? 200000 : 30000;
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      Random rnd(t + 1);
      std::vector<BlockCache::Handle> held;
      for (int i = 0; i < kOps; i++) {
        const int id = static_cast<int>(rnd.Uniform(500));
        const auto owner = static_cast<BlockCache::OwnerId>(id % 4);
        BlockCache::Handle h = cache.Lookup(K(id));
        if (!h) h = cache.Insert(K(id), MakeBlock(id), 64, owner);
        if (IdOf(h) != id) bad++;
        if (rnd.OneIn(10)) held.push_back(std::move(h));
        if (held.size() > 8) held.erase(held.begin());
        if (rnd.OneIn(100)) cache.Erase(K(rnd.Uniform(500)));
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(cache.pinned_usage(), 0u);
  EXPECT_LE(cache.usage(), cache.capacity());
  size_t sum = 0;
  for (BlockCache::OwnerId t = 0; t < 4; t++) sum += cache.OwnerUsage(t);
  EXPECT_EQ(sum, cache.usage());
  EXPECT_EQ(cache.usage(), cache.num_entries() * 64);
}

// Runs `body` on a new thread, whose block memory pool starts empty.
void OnFreshThread(const std::function<void()>& body) { std::thread(body).join(); }

// An evicted block's buffer goes to the evicting thread's pool, and the next
// buffer of a size it fits is that one.
TEST(BlockCacheTest, EvictedBlockBuffersAreReused) {
  OnFreshThread([] {
    BlockCache cache(100, 0);
    // Make the buffer of a real block, as a read on a miss does.
    BlockMemory m = AllocateBlockMemory(4000);
    BlockBuilder b(16);
    b.Add("id", "7");
    const Slice contents = b.Finish();
    std::memcpy(m.data.get(), contents.data(), contents.size());
    const char* buffer = m.data.get();
    auto block = Block::Parse(std::move(m), contents.size());
    ASSERT_OK(block);
    EXPECT_EQ((*block)->memory_usage(), 4000 + sizeof(Block));
    cache.Insert(K(1), std::move(*block), 60, 0);
    cache.Insert(K(2), MakeBlock(2), 60, 0);  // evicts K(1)
    EXPECT_FALSE(cache.Lookup(K(1)));
    // Too large for what is asked (over 1/8 to spare): a new buffer.
    BlockMemory small = AllocateBlockMemory(100);
    EXPECT_NE(small.data.get(), buffer);
    EXPECT_EQ(small.capacity, 100u);
    // Too small: a new buffer.
    BlockMemory big = AllocateBlockMemory(4001);
    EXPECT_NE(big.data.get(), buffer);
    // Fits: the evicted block's buffer.
    BlockMemory reused = AllocateBlockMemory(3900);
    EXPECT_EQ(reused.data.get(), buffer);
    EXPECT_EQ(reused.capacity, 4000u);
    ReleaseBlockMemory(std::move(small));
    ReleaseBlockMemory(std::move(big));
    ReleaseBlockMemory(std::move(reused));
  });
}

// A thread's pool keeps its four largest buffers and never one over 64 KiB.
TEST(BlockCacheTest, BlockMemoryPoolKeepsTheLargestBuffers) {
  OnFreshThread([] {
    std::vector<const char*> kept;
    for (size_t n : {1000, 2000, 3000, 4000, 5000}) {
      BlockMemory m = AllocateBlockMemory(n);
      if (n > 1000) kept.push_back(m.data.get());
      ReleaseBlockMemory(std::move(m));
    }
    BlockMemory huge = AllocateBlockMemory(100 << 10);
    ReleaseBlockMemory(std::move(huge));  // freed, not pooled
    for (size_t i = 0; i < kept.size(); i++) {
      const size_t n = 2000 + 1000 * i;  // the sizes kept, each fitting one buffer exactly
      BlockMemory m = AllocateBlockMemory(n);
      EXPECT_EQ(m.data.get(), kept[i]) << n;
    }
  });
}

}  // namespace
}  // namespace strata::sstable
