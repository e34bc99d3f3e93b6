#include "common/cell_key.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "common/coding.h"
#include "common/random.h"
#include "util/test_util.h"

namespace strata {
namespace {

struct Key {
  std::string row;
  uint16_t family;
  std::string qualifier;
  uint64_t timestamp;
  SequenceNumber sequence;
  CellType type;

  std::string Encode() const {
    std::string k;
    AppendCellKey(&k, row, family, qualifier, timestamp, sequence, type);
    return k;
  }
};

// The order DESIGN.md asks for, written out directly: row, family, qualifier
// ascending; timestamp, sequence descending. The type shares the tag with the
// sequence, so at equal sequence a larger type comes first.
bool ModelLess(const Key& a, const Key& b) {
  return std::forward_as_tuple(a.row, a.family, a.qualifier, b.timestamp, b.sequence,
                               static_cast<int>(b.type)) <
         std::forward_as_tuple(b.row, b.family, b.qualifier, a.timestamp, a.sequence,
                               static_cast<int>(a.type));
}

std::string RandomField(Random* rnd) {
  static const char kAlphabet[] = {'\x00', '\x01', '\xff', 'a', 'b'};
  std::string s(rnd->Uniform(5), '\0');
  for (char& c : s) c = kAlphabet[rnd->Uniform(sizeof(kAlphabet))];
  return s;
}

Key RandomKey(Random* rnd) {
  static const uint16_t kFamilies[] = {0, 1, 2, 255, 256, 65535};
  static const uint64_t kTimestamps[] = {0,         1, 2, 1000, uint64_t{1} << 63, UINT64_MAX - 1,
                                         UINT64_MAX};
  static const SequenceNumber kSequences[] = {
      0, 1, 2, 255, 256, kMaxSequenceNumber - 1, kMaxSequenceNumber};
  Key k;
  k.row = RandomField(rnd);
  k.family = kFamilies[rnd->Uniform(std::size(kFamilies))];
  k.qualifier = RandomField(rnd);
  k.timestamp = rnd->OneIn(4) ? rnd->Next64() : kTimestamps[rnd->Uniform(std::size(kTimestamps))];
  k.sequence = rnd->OneIn(4) ? (rnd->Next64() & kMaxSequenceNumber)
                             : kSequences[rnd->Uniform(std::size(kSequences))];
  k.type = static_cast<CellType>(1 + rnd->Uniform(kMaxCellType));
  return k;
}

int Sign(int v) { return (v > 0) - (v < 0); }

TEST(CellKeyTest, RoundTrip) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Random rnd(seed);
  for (int i = 0; i < 5000; i++) {
    const Key k = RandomKey(&rnd);
    std::string enc = "prefix";  // appends, keeps what was there
    AppendCellKey(&enc, k.row, k.family, k.qualifier, k.timestamp, k.sequence, k.type);
    ASSERT_EQ(enc.substr(0, 6), "prefix");
    const Slice key(enc.data() + 6, enc.size() - 6);
    ASSERT_EQ(key.size(), CellKeyLength(k.row, k.qualifier));

    ParsedCellKey p;
    ASSERT_TRUE(ParseCellKey(key, &p)) << HexBytes(key);
    EXPECT_EQ(p.row, k.row);
    EXPECT_EQ(p.family, k.family);
    EXPECT_EQ(p.qualifier, k.qualifier);
    EXPECT_EQ(p.timestamp, k.timestamp);
    EXPECT_EQ(p.sequence, k.sequence);
    EXPECT_EQ(p.type, k.type);

    EXPECT_EQ(CellKeyTimestamp(key), k.timestamp);
    EXPECT_EQ(CellKeySequence(key), k.sequence);
    EXPECT_EQ(CellKeyType(key), k.type);
    EXPECT_EQ(CellKeyTag(key), (k.sequence << 8) | static_cast<uint8_t>(k.type));

    std::string column;
    AppendColumnPrefix(&column, k.row, k.family, k.qualifier);
    EXPECT_EQ(CellKeyColumn(key).ToString(), column);
  }
}

TEST(CellKeyTest, MemcmpOrderEqualsModelOrder) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Random rnd(seed);
  const int n = test::LongTests() ? 3000 : 600;
  std::vector<Key> keys;
  for (int i = 0; i < n; i++) {
    keys.push_back(RandomKey(&rnd));
    // Near neighbours: the same column, or the same row, with other versions.
    if (rnd.OneIn(2)) {
      Key k = keys.back();
      switch (rnd.Uniform(4)) {
        case 0:
          k.timestamp = rnd.Next64();
          break;
        case 1:
          k.sequence = rnd.Next64() & kMaxSequenceNumber;
          break;
        case 2:
          k.type = static_cast<CellType>(1 + rnd.Uniform(kMaxCellType));
          break;
        default:
          k.qualifier = RandomField(&rnd);
          break;
      }
      keys.push_back(k);
    }
  }
  std::vector<std::string> enc;
  for (const Key& k : keys) enc.push_back(k.Encode());
  for (size_t i = 0; i < keys.size(); i++) {
    for (size_t j = 0; j < keys.size(); j++) {
      const int model = ModelLess(keys[i], keys[j]) ? -1 : (ModelLess(keys[j], keys[i]) ? 1 : 0);
      ASSERT_EQ(Sign(Slice(enc[i]).compare(enc[j])), model)
          << CellKeyDebugString(enc[i]) << " vs " << CellKeyDebugString(enc[j]);
    }
  }
}

TEST(CellKeyTest, NewerVersionsSortFirst) {
  const std::string older = Key{"r", 1, "q", 10, 5, CellType::kPut}.Encode();
  const std::string newer_ts = Key{"r", 1, "q", 11, 1, CellType::kPut}.Encode();
  const std::string newer_seq = Key{"r", 1, "q", 10, 6, CellType::kPut}.Encode();
  EXPECT_LT(Slice(newer_ts).compare(older), 0);
  EXPECT_LT(Slice(newer_seq).compare(older), 0);
  // A row delete (family 0) sorts before every cell of its row.
  const std::string row_delete =
      Key{"r", kRowMarkerFamily, "", 0, 0, CellType::kDeleteRow}.Encode();
  EXPECT_LT(Slice(row_delete).compare(newer_ts), 0);
  // Rows compare as byte strings, however their escapes look: "r" < "r\0" < "r\x01".
  const std::string r0 = Key{std::string("r\0", 2), 0, "", 0, 0, CellType::kPut}.Encode();
  const std::string r1 = Key{"r\x01", 0, "", 0, 0, CellType::kPut}.Encode();
  EXPECT_LT(Slice(older).compare(r0), 0);
  EXPECT_LT(Slice(r0).compare(r1), 0);
}

TEST(CellKeyTest, RowAndColumnPrefixes) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Random rnd(seed);
  for (int i = 0; i < 2000; i++) {
    const Key a = RandomKey(&rnd);
    const Key b = RandomKey(&rnd);
    std::string row_prefix;
    AppendRowPrefix(&row_prefix, a.row);
    const std::string ea = a.Encode();
    const std::string eb = b.Encode();
    EXPECT_TRUE(Slice(ea).starts_with(row_prefix));
    EXPECT_LT(Slice(row_prefix).compare(ea), 0);
    // Keys of other rows neither start with the prefix nor sit between it
    // and the row's keys.
    EXPECT_EQ(Slice(eb).starts_with(row_prefix), a.row == b.row);
    if (b.row < a.row) {
      EXPECT_LT(Slice(eb).compare(row_prefix), 0);
    }
    if (b.row > a.row) {
      EXPECT_GT(Slice(eb).compare(row_prefix), 0);
    }

    std::string column_prefix;
    AppendColumnPrefix(&column_prefix, a.row, a.family, a.qualifier);
    EXPECT_TRUE(Slice(ea).starts_with(column_prefix));
    const bool same_column = a.row == b.row && a.family == b.family && a.qualifier == b.qualifier;
    EXPECT_EQ(Slice(eb).starts_with(column_prefix), same_column);
  }
}

TEST(CellKeyTest, ParseRejectsMalformedKeys) {
  const std::string key = Key{std::string("r\0w", 3), 7, "q", 42, 9, CellType::kPut}.Encode();
  ParsedCellKey p;
  ASSERT_TRUE(ParseCellKey(key, &p));
  for (size_t len = 0; len < key.size(); len++) {
    EXPECT_FALSE(ParseCellKey(Slice(key.data(), len), &p)) << "cut to " << len;
  }
  EXPECT_FALSE(ParseCellKey(key + "x", &p));
  // Type 0 and types past the last one are not cell keys.
  for (int type : {0, kMaxCellType + 1, 255}) {
    std::string bad;
    AppendCellKey(&bad, "r", 1, "q", 42, 9, static_cast<CellType>(type));
    EXPECT_FALSE(ParseCellKey(bad, &p)) << type;
  }
  // A broken escape inside the row.
  std::string broken = key;
  broken[2] = '\x05';  // the 0xFF after the row's 0x00
  EXPECT_FALSE(ParseCellKey(broken, &p));
  EXPECT_NE(CellKeyDebugString(broken).find("bad cell key"), std::string::npos);
}

TEST(CellKeyTest, DebugString) {
  const std::string key =
      Key{std::string("r\0w", 3), 7, "q", 42, 9, CellType::kDeleteColumn}.Encode();
  EXPECT_EQ(CellKeyDebugString(key), "'r\\x00w' f7:'q' @42 #9 del-column");
}

}  // namespace
}  // namespace strata
