#include "sstable/table_cache.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "common/cell_key.h"
#include "common/fault_injection_fs.h"
#include "common/random.h"
#include "sstable/sstable_test_util.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::sstable {
namespace {

class TableCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (uint64_t f = 1; f <= 5; f++) ASSERT_NO_FATAL_FAILURE(WriteFile(f));
    fs_.ResetCounters();
  }

  // Table `f`, one cell whose value is "file<f>".
  void WriteFile(uint64_t f) {
    test::Model m;
    std::string k;
    AppendCellKey(&k, "row", 1, "q", 1, f, CellType::kPut);
    m[k] = "file" + std::to_string(f);
    TableBuilderOptions o;
    o.file_number = f;
    ASSERT_OK(test::WriteTable(&fs_, TableFileName(dir_.path(), f), o, m));
  }

  static std::string FirstValue(const TableReader& t) {
    auto it = t.NewIterator();
    it->SeekToFirst();
    return it->Valid() ? it->value().ToString() : "";
  }

  test::ScratchDir dir_{"sst-tc"};
  FaultInjectionFileSystem fs_;
};

TEST_F(TableCacheTest, OpensOnceAndEvictsLru) {
  BlockCache block_cache(1 << 20);
  TableCache cache(TableCacheOptions{&fs_, dir_.path(), nullptr, 3, &block_cache});
  for (uint64_t f = 1; f <= 3; f++) {
    auto t = cache.Get(f);
    ASSERT_OK(t);
    EXPECT_EQ(FirstValue(**t), "file" + std::to_string(f));
  }
  EXPECT_EQ(fs_.OpCount(FaultOp::kOpen), 3u);
  ASSERT_OK(cache.Get(1));  // hit; 1 is now the most recent
  EXPECT_EQ(fs_.OpCount(FaultOp::kOpen), 3u);
  ASSERT_OK(cache.Get(4));  // evicts 2
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_EQ(fs_.OpCount(FaultOp::kOpen), 4u);
  ASSERT_OK(cache.Get(1));
  ASSERT_OK(cache.Get(3));
  EXPECT_EQ(fs_.OpCount(FaultOp::kOpen), 4u);
  ASSERT_OK(cache.Get(2));  // reopened
  EXPECT_EQ(fs_.OpCount(FaultOp::kOpen), 5u);
}

TEST_F(TableCacheTest, EvictedReaderStaysUsable) {
  TableCache cache(TableCacheOptions{&fs_, dir_.path(), nullptr, 1, nullptr});
  auto t1 = cache.Get(1);
  ASSERT_OK(t1);
  std::shared_ptr<TableReader> held = *t1;
  ASSERT_OK(cache.Get(2));
  cache.Evict(2);
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(FirstValue(*held), "file1");
}

TEST_F(TableCacheTest, PinnedReadersStayOpenUntilEvicted) {
  BlockCache block_cache(1 << 20);
  TableCache cache(TableCacheOptions{&fs_, dir_.path(), nullptr, 1, &block_cache});
  ASSERT_OK(cache.Get(1));
  ASSERT_OK(cache.Pin(1));  // replaces the LRU reader
  ASSERT_OK(cache.Pin(2));
  EXPECT_EQ(cache.size(), 0u);  // pinned readers are outside the LRU
  const uint64_t opens = fs_.OpCount(FaultOp::kOpen);
  for (int round = 0; round < 3; round++) {
    for (uint64_t f = 3; f <= 5; f++) ASSERT_OK(cache.Get(f));  // LRU churn of one slot
    auto pinned = cache.Get(2);
    ASSERT_OK(pinned);
    EXPECT_EQ(FirstValue(**pinned), "file2");
    ASSERT_OK(cache.Get(1));
  }
  EXPECT_EQ(fs_.OpCount(FaultOp::kOpen), opens + 9);  // only files 3..5, every round
  EXPECT_GT(block_cache.pinned_usage(), 0u);  // blocks read through a pinned table stay
  cache.Evict(2);
  ASSERT_OK(cache.Get(2));
  EXPECT_EQ(fs_.OpCount(FaultOp::kOpen), opens + 10);
}

TEST_F(TableCacheTest, ErrorsAreNotCached) {
  TableCache cache(TableCacheOptions{&fs_, dir_.path(), nullptr, 10, nullptr});
  EXPECT_FALSE(cache.Get(99).ok());  // no such file
  test::WriteAll(TableFileName(dir_.path(), 50), "not a table at all, just some words to read");
  auto bad = cache.Get(50);
  EXPECT_TRUE(bad.status().IsCorruption()) << bad.status().ToString();
  EXPECT_EQ(cache.size(), 0u);
  fs_.FailAfter(FaultOp::kOpen, 0, 1, 5);
  EXPECT_TRUE(cache.Get(3).status().IsIOError());
  ASSERT_OK(cache.Get(3));  // the fault is gone, the open works
}

TEST_F(TableCacheTest, CustomFileNames) {
  TableCacheOptions o{&fs_, "", nullptr, 10, nullptr};
  o.file_name = [this](uint64_t n) { return TableFileName(dir_.path(), n + 1); };
  TableCache cache(o);
  auto t = cache.Get(2);
  ASSERT_OK(t);
  EXPECT_EQ(FirstValue(**t), "file3");
}

TEST_F(TableCacheTest, ConcurrentGets) {
  BlockCache block_cache(1 << 20);
  TableCache cache(TableCacheOptions{&fs_, dir_.path(), nullptr, 2, &block_cache});
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&, t] {
      Random rnd(t);
      for (int i = 0; i < 2000; i++) {
        const uint64_t f = 1 + rnd.Uniform(5);
        auto r = cache.Get(f);
        if (!r.ok() || FirstValue(**r) != "file" + std::to_string(f)) bad++;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_LE(cache.size(), 2u);
}

// A cache of 256 tables is four shards of 64: it never holds more than 256
// readers, each shard evicts its own least recently used, and pinned
// readers stay outside the bound.
TEST_F(TableCacheTest, ShardedCacheKeepsItsBound) {
  for (uint64_t f = 6; f <= 400; f++) ASSERT_NO_FATAL_FAILURE(WriteFile(f));
  BlockCache block_cache(1 << 20);
  TableCache cache(TableCacheOptions{&fs_, dir_.path(), nullptr, 256, &block_cache});
  for (uint64_t f = 1; f <= 8; f++) ASSERT_OK(cache.Pin(f));
  for (uint64_t f = 1; f <= 400; f++) {
    auto t = cache.Get(f);
    ASSERT_OK(t);
    EXPECT_EQ(FirstValue(**t), "file" + std::to_string(f));
    EXPECT_LE(cache.size(), 256u);
  }
  EXPECT_EQ(cache.size(), 256u);
  fs_.ResetCounters();
  // The newest 64 of each shard (numbers 337..400) and the pinned ones are
  // open; the oldest unpinned ones were evicted.
  for (uint64_t f = 337; f <= 400; f++) ASSERT_OK(cache.Get(f));
  for (uint64_t f = 1; f <= 8; f++) ASSERT_OK(cache.Get(f));
  EXPECT_EQ(fs_.OpCount(FaultOp::kOpen), 0u);
  ASSERT_OK(cache.Get(9));
  EXPECT_EQ(fs_.OpCount(FaultOp::kOpen), 1u);
  // Evicting a pinned reader frees no room under the bound; evicting an
  // unpinned one does.
  cache.Evict(1);
  EXPECT_EQ(cache.size(), 256u);
  cache.Evict(400);
  EXPECT_EQ(cache.size(), 255u);
}

}  // namespace
}  // namespace strata::sstable
