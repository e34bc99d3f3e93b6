#include "sstable/block.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "common/coding.h"
#include "common/random.h"
#include "sstable/block_builder.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::sstable {
namespace {

std::unique_ptr<Block> BuildBlock(const std::map<std::string, std::string>& kvs,
                                  int restart_interval) {
  BlockBuilder b(restart_interval);
  for (const auto& [k, v] : kvs) b.Add(k, v);
  const size_t estimate = b.CurrentSizeEstimate();
  std::string contents = b.Finish().ToString();
  EXPECT_EQ(estimate, contents.size());
  auto block = Block::Parse(std::move(contents));
  EXPECT_OK(block);
  return std::move(*block);
}

// A forward walk from the first entry gives exactly `kvs`, in order.
void ExpectWalksInOrder(InternalIterator* it, const std::map<std::string, std::string>& kvs) {
  auto m = kvs.begin();
  for (it->SeekToFirst(); it->Valid(); it->Next(), ++m) {
    ASSERT_NE(m, kvs.end());
    EXPECT_EQ(it->key().ToString(), m->first);
    EXPECT_EQ(it->value().ToString(), m->second);
  }
  EXPECT_EQ(m, kvs.end());
}

TEST(BlockTest, EmptyBlock) {
  auto block = BuildBlock({}, 16);
  auto it = block->NewIterator();
  it->SeekToFirst();
  EXPECT_FALSE(it->Valid());
  it->Seek("a");
  EXPECT_FALSE(it->Valid());
  it->SeekToLast();
  EXPECT_FALSE(it->Valid());
  EXPECT_OK(it->status());
}

TEST(BlockTest, RandomRoundTripAndSeek) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Random rnd(seed);
  for (int restart : {1, 2, 3, 16, 1000}) {
    std::map<std::string, std::string> kvs;
    const int n = static_cast<int>(rnd.Uniform(300));
    for (int i = 0; i < n; i++) {
      kvs[rnd.RandomBytes(rnd.Uniform(20))] = rnd.RandomBytes(rnd.Uniform(50));
    }
    auto block = BuildBlock(kvs, restart);
    auto it = block->NewIterator();
    ExpectWalksInOrder(it.get(), kvs);
    EXPECT_OK(it->status());
    if (!kvs.empty()) {
      it->SeekToLast();
      ASSERT_TRUE(it->Valid());
      EXPECT_EQ(it->key().ToString(), kvs.rbegin()->first);
    }
    for (int i = 0; i < 200; i++) {
      std::string target = rnd.RandomBytes(rnd.Uniform(20));
      if (!kvs.empty() && rnd.OneIn(2)) {
        auto pick = kvs.begin();
        std::advance(pick, rnd.Uniform(kvs.size()));
        target = pick->first;
      }
      it->Seek(target);
      auto want = kvs.lower_bound(target);
      if (want == kvs.end()) {
        EXPECT_FALSE(it->Valid());
      } else {
        ASSERT_TRUE(it->Valid());
        EXPECT_EQ(it->key().ToString(), want->first);
      }
    }
  }
}

TEST(BlockTest, KeysLongerThanTheInlineBufferRoundTrip) {
  // Keys of 100 to 1100 bytes sharing long prefixes: the iterator's key
  // buffer moves to the heap and keeps the shared bytes when it does.
  std::map<std::string, std::string> kvs;
  Random rnd(test::TestSeed());
  const std::string stem(90, 's');
  for (int i = 0; i < 200; i++) {
    kvs[stem + rnd.RandomBytes(10 + rnd.Uniform(1000))] = rnd.RandomBytes(rnd.Uniform(20));
  }
  for (int restart : {1, 16}) {
    auto block = BuildBlock(kvs, restart);
    auto it = block->NewIterator();
    ExpectWalksInOrder(it.get(), kvs);
    for (const auto& [k, v] : kvs) {
      it->Seek(k);
      ASSERT_TRUE(it->Valid());
      EXPECT_EQ(it->key().ToString(), k);
    }
    EXPECT_OK(it->status());
  }
}

TEST(BlockTest, BadRestartArrayIsCorruption) {
  std::map<std::string, std::string> kvs = {{"a", "1"}, {"b", "2"}, {"c", "3"}};
  BlockBuilder b(1);
  for (const auto& [k, v] : kvs) b.Add(k, v);
  const std::string good = b.Finish().ToString();

  EXPECT_TRUE(Block::Parse("").status().IsCorruption());
  EXPECT_TRUE(Block::Parse("abc").status().IsCorruption());
  std::string bad = good;
  EncodeFixed32(bad.data() + bad.size() - 4, 1000);  // restart count
  EXPECT_TRUE(Block::Parse(bad).status().IsCorruption());
  bad = good;
  EncodeFixed32(bad.data() + bad.size() - 8, 999);  // last restart offset
  EXPECT_TRUE(Block::Parse(bad).status().IsCorruption());
}

TEST(BlockTest, BadEntryIsStickyCorruption) {
  BlockBuilder b(16);
  b.Add("key1", "value1");
  b.Add("key2", "value2");
  std::string contents = b.Finish().ToString();
  contents[1] = 100;  // non_shared length of the first entry runs past the entries
  auto block = Block::Parse(contents);
  ASSERT_OK(block);
  auto it = (*block)->NewIterator();
  it->SeekToFirst();
  EXPECT_FALSE(it->Valid());
  EXPECT_TRUE(it->status().IsCorruption());
  EXPECT_NE(it->status().message().find("offset 0"), std::string_view::npos);
  it->Seek("key2");
  EXPECT_FALSE(it->Valid());
  EXPECT_TRUE(it->status().IsCorruption());
}

}  // namespace
}  // namespace strata::sstable
