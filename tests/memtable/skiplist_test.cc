#include "memtable/skiplist.h"

#include <gtest/gtest.h>

#include <cstring>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "common/arena.h"
#include "common/random.h"
#include "util/test_util.h"

namespace strata::memtable {
namespace {

using Key = uint64_t;

struct KeyComparator {
  int operator()(const Key& a, const Key& b) const { return a < b ? -1 : (a > b ? 1 : 0); }
};
using IntList = SkipList<Key, KeyComparator>;
using Model = std::set<Key>;

// Checks that `it` is where `expected` is in `model` (end() meaning !Valid()).
void ExpectAt(const IntList::Iterator& it, const Model& model, Model::const_iterator expected) {
  if (expected == model.end()) {
    ASSERT_FALSE(it.Valid());
  } else {
    ASSERT_TRUE(it.Valid());
    ASSERT_EQ(*expected, it.key());
  }
}

// Walks the whole list forwards and backwards and compares with the model.
void ExpectSameContents(const IntList& list, const Model& model) {
  IntList::Iterator it(&list);
  it.SeekToFirst();
  for (Key k : model) {
    ASSERT_TRUE(it.Valid());
    ASSERT_EQ(k, it.key());
    it.Next();
  }
  ASSERT_FALSE(it.Valid());

  it.SeekToLast();
  for (auto m = model.rbegin(); m != model.rend(); ++m) {
    ASSERT_TRUE(it.Valid());
    ASSERT_EQ(*m, it.key());
    it.Prev();
  }
  ASSERT_FALSE(it.Valid());
}

TEST(SkipListTest, Empty) {
  Arena arena;
  IntList list(KeyComparator(), &arena);
  EXPECT_FALSE(list.Contains(10));

  IntList::Iterator it(&list);
  EXPECT_FALSE(it.Valid());
  it.SeekToFirst();
  EXPECT_FALSE(it.Valid());
  it.Seek(100);
  EXPECT_FALSE(it.Valid());
  it.SeekForPrev(100);
  EXPECT_FALSE(it.Valid());
  it.SeekToLast();
  EXPECT_FALSE(it.Valid());
}

TEST(SkipListTest, SmallExample) {
  Arena arena;
  IntList list(KeyComparator(), &arena);
  for (Key k : {30, 10, 20}) list.Insert(k);

  EXPECT_TRUE(list.Contains(10));
  EXPECT_TRUE(list.Contains(20));
  EXPECT_TRUE(list.Contains(30));
  EXPECT_FALSE(list.Contains(0));
  EXPECT_FALSE(list.Contains(15));
  EXPECT_FALSE(list.Contains(31));

  IntList::Iterator it(&list);
  it.Seek(15);
  ASSERT_TRUE(it.Valid());
  EXPECT_EQ(20u, it.key());
  it.Prev();
  ASSERT_TRUE(it.Valid());
  EXPECT_EQ(10u, it.key());
  it.Prev();
  EXPECT_FALSE(it.Valid());

  it.Seek(20);
  ASSERT_TRUE(it.Valid());
  EXPECT_EQ(20u, it.key());
  it.Seek(31);
  EXPECT_FALSE(it.Valid());

  it.SeekForPrev(25);
  ASSERT_TRUE(it.Valid());
  EXPECT_EQ(20u, it.key());
  it.SeekForPrev(20);
  ASSERT_TRUE(it.Valid());
  EXPECT_EQ(20u, it.key());
  it.SeekForPrev(9);
  EXPECT_FALSE(it.Valid());
  it.SeekForPrev(1000);
  ASSERT_TRUE(it.Valid());
  EXPECT_EQ(30u, it.key());

  it.SeekToFirst();
  ASSERT_TRUE(it.Valid());
  EXPECT_EQ(10u, it.key());
  it.SeekToLast();
  ASSERT_TRUE(it.Valid());
  EXPECT_EQ(30u, it.key());
  it.Next();
  EXPECT_FALSE(it.Valid());
}

TEST(SkipListTest, InsertAndLookup) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  Random rnd(seed);
  constexpr int kInserts = 2000;
  constexpr Key kRange = 5000;
  Arena arena;
  IntList list(KeyComparator(), &arena);
  Model model;
  for (int i = 0; i < kInserts; i++) {
    Key k = rnd.Uniform(kRange);
    if (model.insert(k).second) list.Insert(k);
  }

  for (Key k = 0; k < kRange; k++) ASSERT_EQ(model.count(k) == 1, list.Contains(k)) << k;
  ExpectSameContents(list, model);

  IntList::Iterator it(&list);
  for (Key k = 0; k <= kRange; k++) {
    it.Seek(k);
    ExpectAt(it, model, model.lower_bound(k));
    it.SeekForPrev(k);
    auto after = model.upper_bound(k);
    ExpectAt(it, model, after == model.begin() ? model.end() : std::prev(after));
  }
}

// Interleaves inserts with every kind of positioning and stepping, checking
// each result against std::set.
TEST(SkipListTest, RandomizedAgainstModel) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  Random rnd(seed);
  const int rounds = test::LongTests() ? 200 : 20;
  for (int round = 0; round < rounds; round++) {
    Arena arena;
    IntList list(KeyComparator(), &arena);
    Model model;
    // Mix dense lists (many neighbours, many misses) with sparse ones.
    const Key range = uint64_t{1} << (4 + rnd.Uniform(40));
    const int ops = static_cast<int>(rnd.Uniform(3000)) + 1;
    for (int op = 0; op < ops; op++) {
      if (rnd.OneIn(2)) {
        // Keys at the extremes of the key type as well as in range.
        Key k = rnd.OneIn(50) ? (rnd.OneIn(2) ? 0 : ~Key{0}) : rnd.Uniform(range);
        if (model.insert(k).second) list.Insert(k);
        continue;
      }
      IntList::Iterator it(&list);
      Model::const_iterator expected;
      Key target = rnd.Uniform(range + 2);
      switch (rnd.Uniform(4)) {
        case 0:
          it.Seek(target);
          expected = model.lower_bound(target);
          break;
        case 1: {
          it.SeekForPrev(target);
          auto after = model.upper_bound(target);
          expected = after == model.begin() ? model.end() : std::prev(after);
          break;
        }
        case 2:
          it.SeekToFirst();
          expected = model.begin();
          break;
        default:
          it.SeekToLast();
          expected = model.empty() ? model.end() : std::prev(model.end());
          break;
      }
      ASSERT_NO_FATAL_FAILURE(ExpectAt(it, model, expected));
      for (int step = static_cast<int>(rnd.Uniform(8)); step > 0 && it.Valid(); step--) {
        if (rnd.OneIn(2)) {
          it.Next();
          ++expected;
        } else {
          it.Prev();
          expected = expected == model.begin() ? model.end() : std::prev(expected);
        }
        ASSERT_NO_FATAL_FAILURE(ExpectAt(it, model, expected));
      }
      ASSERT_EQ(model.count(target) == 1, list.Contains(target));
    }
    ASSERT_NO_FATAL_FAILURE(ExpectSameContents(list, model));
  }
}

// Keys that point to bytes in the same arena, as the memtable's do.
struct CStringComparator {
  int operator()(const char* a, const char* b) const { return std::strcmp(a, b); }
};

TEST(SkipListTest, PointerKeys) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  Random rnd(seed);
  Arena arena;
  SkipList<const char*, CStringComparator> list(CStringComparator(), &arena);
  std::set<std::string> model;
  for (int i = 0; i < 3000; i++) {
    // Lengths up to past a quarter arena block, where the arena switches to
    // dedicated blocks.
    std::string s = rnd.RandomLetters(rnd.OneIn(100) ? 20000 : rnd.Uniform(20));
    if (!model.insert(s).second) continue;
    char* key = arena.Allocate(s.size() + 1);
    std::memcpy(key, s.c_str(), s.size() + 1);
    list.Insert(key);
  }
  SkipList<const char*, CStringComparator>::Iterator it(&list);
  it.SeekToFirst();
  for (const std::string& s : model) {
    ASSERT_TRUE(it.Valid());
    ASSERT_EQ(s, it.key());
    it.Next();
  }
  ASSERT_FALSE(it.Valid());
  for (const std::string& s : model) ASSERT_TRUE(list.Contains(s.c_str())) << s;
  EXPECT_FALSE(list.Contains("not a lowercase key"));
}

}  // namespace
}  // namespace strata::memtable
