#include "sstable/block.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/cell_key.h"
#include "common/coding.h"
#include "common/random.h"
#include "sstable/block_builder.h"
#include "sstable/cell_key_tail.h"
#include "sstable/sstable_test_util.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::sstable {
namespace {

std::unique_ptr<Block> BuildBlock(const std::map<std::string, std::string>& kvs,
                                  int restart_interval,
                                  KeyEncoding encoding = KeyEncoding::kWholeKey) {
  BlockBuilder b(restart_interval, encoding);
  for (const auto& [k, v] : kvs) b.Add(k, v);
  const size_t estimate = b.CurrentSizeEstimate();
  std::string contents = b.Finish().ToString();
  EXPECT_EQ(estimate, contents.size());
  auto block = Block::Parse(std::move(contents), encoding);
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

// A block of `kvs` walks in order and a seek to each key finds it.
void ExpectWalksAndFindsEveryKey(const std::map<std::string, std::string>& kvs, int restart,
                                 KeyEncoding encoding) {
  auto block = BuildBlock(kvs, restart, encoding);
  auto it = block->NewIterator();
  ExpectWalksInOrder(it.get(), kvs);
  for (const auto& [k, v] : kvs) {
    it->Seek(k);
    ASSERT_TRUE(it->Valid());
    EXPECT_EQ(it->key().ToString(), k);
  }
  EXPECT_OK(it->status());
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
    ASSERT_NO_FATAL_FAILURE(ExpectWalksAndFindsEveryKey(kvs, restart, KeyEncoding::kWholeKey));
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

// ---- Version-2 data blocks: the cell-key tail ----

// A cell key whose timestamp and sequence are often extreme: 0, the maxima,
// anything in 64 (56) bits, or close to the previous key's.
std::string RandomTailCellKey(Random* rnd) {
  uint64_t ts;
  switch (rnd->Uniform(5)) {
    case 0:
      ts = 0;
      break;
    case 1:
      ts = UINT64_MAX - rnd->Uniform(3);
      break;
    case 2:
      ts = rnd->Next64();
      break;
    default:
      ts = 1700000000000000ull + rnd->Uniform(1000);
      break;
  }
  SequenceNumber seq;
  switch (rnd->Uniform(4)) {
    case 0:
      seq = rnd->Uniform(2) == 0 ? 0 : kMaxSequenceNumber - rnd->Uniform(2);
      break;
    case 1:
      seq = rnd->Next64() & kMaxSequenceNumber;
      break;
    default:
      seq = rnd->Uniform(1000);
      break;
  }
  const auto type = static_cast<CellType>(1 + rnd->Uniform(kMaxCellType));
  std::string key;
  AppendCellKey(&key, test::RandomKeyPart(rnd, 12), static_cast<uint16_t>(rnd->Uniform(4)),
                test::RandomKeyPart(rnd, 6), ts, seq, type);
  return key;
}

// Seek targets around `key`: itself, just before and after it, its column
// and row prefixes, and a cut-off copy.
std::vector<std::string> TargetsAround(const std::string& key) {
  std::vector<std::string> t = {key, key + std::string(1, '\0'), key.substr(0, key.size() - 1),
                                key.substr(0, key.size() - 16), key.substr(0, key.size() / 2)};
  std::string before = key;
  for (size_t i = before.size(); i-- > 0;) {
    if (before[i] != '\0') {
      before[i]--;
      break;
    }
  }
  t.push_back(before);
  return t;
}

void ExpectSeeksLikeModel(Block::Iter* it, const std::map<std::string, std::string>& kvs,
                          const std::string& target) {
  // The last entry below the target, and the walk on from it.
  it->SeekBefore(target);
  auto below = kvs.lower_bound(target);
  if (below == kvs.begin()) {
    EXPECT_FALSE(it->Valid()) << HexBytes(target);
  } else {
    --below;
    ASSERT_TRUE(it->Valid()) << HexBytes(target);
    EXPECT_EQ(HexBytes(it->key()), HexBytes(below->first)) << HexBytes(target);
    EXPECT_EQ(it->value().ToString(), below->second);
    it->Next();
    ++below;
    if (below == kvs.end()) {
      EXPECT_FALSE(it->Valid());
    } else {
      ASSERT_TRUE(it->Valid());
      EXPECT_EQ(HexBytes(it->key()), HexBytes(below->first));
    }
  }
  it->Seek(target);
  auto want = kvs.lower_bound(target);
  if (want == kvs.end()) {
    EXPECT_FALSE(it->Valid()) << HexBytes(target);
  } else {
    ASSERT_TRUE(it->Valid()) << HexBytes(target);
    EXPECT_EQ(HexBytes(it->key()), HexBytes(want->first)) << HexBytes(target);
    EXPECT_EQ(it->value().ToString(), want->second);
    // And the walk goes on from there.
    it->Next();
    ++want;
    if (want == kvs.end()) {
      EXPECT_FALSE(it->Valid());
    } else {
      ASSERT_TRUE(it->Valid());
      EXPECT_EQ(HexBytes(it->key()), HexBytes(want->first));
    }
  }
}

TEST(BlockTest, ZigZagRoundTrips) {
  for (uint64_t d : {uint64_t{0}, uint64_t{1}, ~uint64_t{0}, uint64_t{1} << 63,
                     (uint64_t{1} << 63) - 1, uint64_t{12345}, -uint64_t{12345}}) {
    EXPECT_EQ(ZigZagDecode(ZigZagEncode(d)), d);
  }
  EXPECT_EQ(ZigZagEncode(0), 0u);
  EXPECT_EQ(ZigZagEncode(-uint64_t{1}), 1u);
  EXPECT_EQ(ZigZagEncode(1), 2u);
  uint64_t tag;
  const uint64_t max_tag = kMaxSequenceNumber << 8 | 4;
  ASSERT_TRUE(DecodeSequenceAndType(EncodeSequenceAndType(max_tag, 1 << 8 | 2), 1 << 8 | 2, &tag));
  EXPECT_EQ(tag, max_tag);
  ASSERT_TRUE(DecodeSequenceAndType(EncodeSequenceAndType(3, max_tag), max_tag, &tag));
  EXPECT_EQ(tag, 3u);
  EXPECT_FALSE(DecodeSequenceAndType(0, 5 << 8 | 1, &tag));                      // type 0
  EXPECT_FALSE(DecodeSequenceAndType(5, 5 << 8 | 1, &tag));                      // type 5
  EXPECT_FALSE(DecodeSequenceAndType(ZigZagEncode(1) << 3 | 1, max_tag, &tag));  // past the max
  EXPECT_FALSE(DecodeSequenceAndType(ZigZagEncode(-uint64_t{6}) << 3 | 1, 5 << 8 | 1, &tag));
}

TEST(BlockTest, CellKeyTailRandomRoundTripAndSeek) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Random rnd(seed);
  for (int restart : {1, 2, 3, 16, 1000}) {
    for (KeyEncoding encoding : {KeyEncoding::kCellKeyTail, KeyEncoding::kCellKeyTailSuffix}) {
      std::map<std::string, std::string> kvs;
      const int n = static_cast<int>(rnd.Uniform(400));
      for (int i = 0; i < n; i++) {
        std::string key = rnd.OneIn(2) ? RandomTailCellKey(&rnd) : test::RandomCellKey(&rnd);
        kvs[key] = rnd.OneIn(5) ? "" : rnd.RandomBytes(rnd.Uniform(50));
        // Runs of versions of one column, as compaction writes them.
        if (rnd.OneIn(4)) {
          for (int v = 0; v < 5; v++) {
            std::string version = key.substr(0, key.size() - 16);
            PutFixed64(&version, 0);  // replaced below
            EncodeBigEndian64(version.data() + version.size() - 8, rnd.Next64());
            PutFixed64(&version, 0);
            EncodeBigEndian64(version.data() + version.size() - 8,
                              ~((rnd.Next64() & kMaxSequenceNumber) << 8 | (1 + rnd.Uniform(4))));
            kvs[version] = rnd.RandomBytes(rnd.Uniform(10));
          }
        }
      }
      auto block = BuildBlock(kvs, restart, encoding);
      auto it = block->NewIterator();
      ExpectWalksInOrder(it.get(), kvs);
      ASSERT_OK(it->status());
      if (!kvs.empty()) {
        it->SeekToLast();
        ASSERT_TRUE(it->Valid());
        EXPECT_EQ(it->key().ToString(), kvs.rbegin()->first);
      }
      for (const auto& [k, v] : kvs) {
        for (const std::string& target : TargetsAround(k)) {
          ExpectSeeksLikeModel(it.get(), kvs, target);
        }
      }
      for (int i = 0; i < 100; i++) ExpectSeeksLikeModel(it.get(), kvs, rnd.RandomBytes(20));
      // Restart points, then onwards to the end.
      for (uint32_t r = 0; r <= block->num_restarts(); r++) {
        it->SeekToRestartPoint(r);
        size_t walked = 0;
        for (; it->Valid(); it->Next()) walked++;
        if (r == 0) {
          EXPECT_EQ(walked, kvs.size());
        }
      }
      ASSERT_OK(it->status());
    }
  }
}

TEST(BlockTest, CellKeyTailEveryCellTypeAndExtremes) {
  std::map<std::string, std::string> kvs;
  uint32_t i = 0;
  for (uint64_t ts : {UINT64_MAX, UINT64_MAX - 1, uint64_t{1} << 63, uint64_t{5}, uint64_t{0}}) {
    for (SequenceNumber seq : {kMaxSequenceNumber, SequenceNumber{1} << 40, SequenceNumber{0}}) {
      for (uint8_t type = 1; type <= kMaxCellType; type++) {
        std::string key;
        AppendCellKey(&key, std::string("r\0w", 3), type == 4 ? 0 : 1, "q", ts, seq,
                      static_cast<CellType>(type));
        kvs[key] = std::to_string(i++);
      }
    }
  }
  for (int restart : {1, 4, 16}) {
    for (KeyEncoding encoding : {KeyEncoding::kCellKeyTail, KeyEncoding::kCellKeyTailSuffix}) {
      ASSERT_NO_FATAL_FAILURE(ExpectWalksAndFindsEveryKey(kvs, restart, encoding));
    }
  }
}

TEST(BlockTest, CellKeyTailIsSmallerThanWholeKeys) {
  // db_bench's cells: a 16-digit row, family 1, qualifier "q", timestamp 1,
  // sequences in a random order, 100-byte values.
  Random rnd(7);
  std::map<std::string, std::string> kvs;
  for (int i = 0; i < 1000; i++) {
    char row[17];
    std::snprintf(row, sizeof(row), "%016llu",
                  static_cast<unsigned long long>(rnd.Uniform(200000)));
    std::string key;
    AppendCellKey(&key, row, 1, "q", 1, 1 + rnd.Uniform(200000), CellType::kPut);
    kvs[key] = "";
  }
  BlockBuilder whole(16), tail(16, KeyEncoding::kCellKeyTail),
      suffix(16, KeyEncoding::kCellKeyTailSuffix);
  for (const auto& [k, v] : kvs) {
    whole.Add(k, v);
    tail.Add(k, v);
    suffix.Add(k, v);
  }
  const size_t w = whole.Finish().size(), t = tail.Finish().size(), s = suffix.Finish().size();
  std::printf(
      "db_bench-like keys, per cell: whole keys %.2f bytes, cell-key tail %.2f bytes, "
      "with shared suffixes %.2f bytes\n",
      static_cast<double>(w) / kvs.size(), static_cast<double>(t) / kvs.size(),
      static_cast<double>(s) / kvs.size());
  EXPECT_LT(t + 10 * kvs.size(), w);
  // The row's terminator, the family and mc("q") (7 bytes) come from the
  // previous column, for one byte of suffix length.
  EXPECT_LT(s + 5 * kvs.size(), t);
}

// Offsets of entry `index`'s fields in a kCellKeyTail block built with
// restart interval `restart` (entries with one-byte headers).
struct EntryFields {
  size_t start, suffix, ts, seq_type, value;
};
EntryFields FindEntry(const std::string& contents, int index, int restart) {
  size_t p = 0;
  EntryFields f{};
  for (int i = 0; i <= index; i++) {
    f.start = p;
    const auto non_shared = static_cast<uint8_t>(contents[p + 1]);
    const auto value_len = static_cast<uint8_t>(contents[p + 2]);
    f.suffix = p + 3;
    p = f.suffix + non_shared;
    if (i % restart != 0) {
      f.ts = p;
      Slice in(contents.data() + p, contents.size() - p);
      uint64_t v;
      EXPECT_TRUE(GetVarint64(&in, &v));
      f.seq_type = contents.size() - in.size();
      EXPECT_TRUE(GetVarint64(&in, &v));
      p = contents.size() - in.size();
    }
    f.value = p;
    p += value_len;
  }
  return f;
}

TEST(BlockTest, CellKeyTailCorruptionIsStickyAndNamesTheEntry) {
  std::map<std::string, std::string> kvs;
  for (int i = 0; i < 8; i++) {
    std::string key;
    AppendCellKey(&key, "row" + std::to_string(i), 1, "q", 100 + i, i, CellType::kPut);
    kvs[key] = "v";
  }
  BlockBuilder b(4, KeyEncoding::kCellKeyTail);
  for (const auto& [k, v] : kvs) b.Add(k, v);
  const std::string good = b.Finish().ToString();
  const EntryFields e1 = FindEntry(good, 1, 4);
  const EntryFields e4 = FindEntry(good, 4, 4);  // a restart entry

  struct Case {
    const char* name;
    std::function<void(std::string*)> damage;
    const char* message;
    size_t offset;
  };
  const std::vector<Case> cases = {
      {"type 0", [&](std::string* c) { (*c)[e1.seq_type] &= ~7; },
       "bad sequence or cell type in cell key tail", e1.start},
      {"type 7", [&](std::string* c) { (*c)[e1.seq_type] |= 7; },
       "bad sequence or cell type in cell key tail", e1.start},
      {"sequence below 0",  // entry 1 follows sequence 0
       [&](std::string* c) {
         (*c)[e1.seq_type] = static_cast<char>(ZigZagEncode(-uint64_t{1}) << 3 | 1);
       },
       "bad sequence or cell type in cell key tail", e1.start},
      {"timestamp varint runs into the value",
       [&](std::string* c) {
         for (size_t p = e1.ts; p < good.size() - 4 * 3; p++) (*c)[p] = '\x80';
       },
       "bad cell key tail", e1.start},
      {"restart entry too short for a cell key", [&](std::string* c) { (*c)[e4.start + 1] = 3; },
       "bad restart entry", e4.start},
      {"restart entry with a bad type", [&](std::string* c) { (*c)[e4.value - 1] = '\xff'; },
       "bad cell type in restart entry", e4.start},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    std::string contents = good;
    k.damage(&contents);
    auto block = Block::Parse(contents, KeyEncoding::kCellKeyTail);
    ASSERT_OK(block);
    auto it = (*block)->NewIterator();
    size_t walked = 0;
    for (it->SeekToFirst(); it->Valid(); it->Next()) walked++;
    EXPECT_TRUE(it->status().IsCorruption());
    EXPECT_NE(it->status().message().find(k.message), std::string_view::npos)
        << it->status().ToString();
    EXPECT_NE(it->status().message().find("at offset " + std::to_string(k.offset) + " "),
              std::string_view::npos)
        << it->status().ToString();
    // Sticky: seeks do not clear it.
    it->SeekToFirst();
    EXPECT_FALSE(it->Valid());
    EXPECT_TRUE(it->status().IsCorruption());
  }

  // An entry that runs over a restart point.
  {
    std::string contents = good;
    const uint32_t r1 = DecodeFixed32(contents.data() + contents.size() - 4 - 4 * 2 + 4);
    EncodeFixed32(contents.data() + contents.size() - 4 - 4 * 2 + 4, r1 - 1);
    auto block = Block::Parse(contents, KeyEncoding::kCellKeyTail);
    ASSERT_OK(block);
    auto it = (*block)->NewIterator();
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
    }
    EXPECT_TRUE(it->status().IsCorruption()) << it->status().ToString();
  }
}

}  // namespace
}  // namespace strata::sstable
