// Version-1 and version-2 tables written by the writers of those versions
// (tests/sstable/testdata/, described in old_format_testdata.h) open and read
// exactly as they did: every cell, seeks to and between every key, and every
// bloom answer.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "common/cell_key.h"
#include "common/coding.h"
#include "sstable/old_format_testdata.h"
#include "sstable/sstable_test_util.h"
#include "util/status_matchers.h"

namespace strata::sstable {
namespace {

using test::OldFormatCells;
using test::OldFormatTable;
using test::OldFormatTables;

std::string TestdataPath(const char* name) {
  return std::string(STRATA_SSTABLE_TESTDATA_DIR) + "/" + name;
}

// Which of the kOldFormatAbsentProbes absent rows, and of the absent columns
// of the present rows (old_format_testdata.h), the filters answered "maybe"
// for, as printed by the writer run that made the files. Tables without a
// filter answer "maybe" for everything.
struct ExpectedBloom {
  std::vector<int> absent_rows_maybe;
  std::vector<int> absent_columns_maybe;
};
const std::map<std::string, ExpectedBloom>& ExpectedBlooms() {
  static const std::map<std::string, ExpectedBloom> m = {
      {"v1_plain_bloom.sst",
       {{308, 374, 378, 553, 686, 1132, 1301, 1443, 1728, 2026, 2082, 2411, 2496, 2502, 2569, 2638,
         2795, 2862},
        {54, 364, 416, 564, 569, 603, 623, 768, 874, 983, 1155, 1159, 1177, 1350}}},
      {"v1_zstd_bloom.sst",
       {{121,  181,  307,  335,  446,  514,  539,  601,  618,  673,  675,
         801,  939,  1026, 1471, 1525, 1684, 1872, 1980, 2078, 2082, 2121,
         2158, 2339, 2531, 2548, 2712, 2778, 2857, 2937, 2944},
        {87,   129,  211,  272,  277,  531,  900,  990,  1143, 1154, 1253, 1269, 1384,
         1420, 1445, 1514, 1620, 1643, 1671, 1707, 1911, 1946, 1994, 1995, 2014, 2390}}},
      {"v2_plain_bloom.sst", {{273, 674, 728, 2812, 2869}, {496, 696, 1190, 1426}}},
      {"v2_zstd_bloom.sst", {{2820}, {1145, 2239}}},
  };
  return m;
}

// A walk of `it` from its first entry gives exactly `cells`, in order.
void ExpectCellsInOrder(InternalIterator* it, const std::map<std::string, std::string>& cells) {
  auto want = cells.begin();
  for (it->SeekToFirst(); it->Valid(); it->Next(), ++want) {
    ASSERT_NE(want, cells.end());
    ASSERT_EQ(HexBytes(it->key()), HexBytes(want->first));
    ASSERT_EQ(it->value().ToString(), want->second);
  }
  ASSERT_OK(it->status());
  EXPECT_EQ(want, cells.end());
}

class OldFormatTest : public ::testing::TestWithParam<OldFormatTable> {};

TEST_P(OldFormatTest, ReadsEveryCellSeekAndBloomAnswer) {
  const OldFormatTable& t = GetParam();
  const std::map<std::string, std::string> cells = OldFormatCells(t.num_rows);
  FileSystem* fs = FileSystem::Default();
  auto opened = test::OpenTable(fs, TestdataPath(t.file_name));
  ASSERT_OK(opened);
  const TableReader& table = **opened;
  EXPECT_EQ(table.footer().format_version, t.format_version);
  EXPECT_EQ(table.properties().format_version, t.format_version);
  EXPECT_EQ(table.data_key_encoding(), t.format_version == kFormatVersion1
                                           ? KeyEncoding::kWholeKey
                                           : KeyEncoding::kCellKeyTail);
  EXPECT_EQ(table.properties().num_cells, cells.size());
  EXPECT_GT(table.properties().num_data_blocks, 1u);
  EXPECT_EQ(table.properties().compression, static_cast<uint8_t>(t.compression));
  ASSERT_OK(table.VerifyChecksums());

  // Every cell, in order.
  auto it = table.NewIterator();
  ASSERT_NO_FATAL_FAILURE(ExpectCellsInOrder(it.get(), cells));

  // Seeks to every key and between keys: the key plus a 0x00 byte, the key
  // cut short, its column and row prefixes.
  for (const auto& [key, value] : cells) {
    size_t row_len = 0, column_len = 0;
    ASSERT_TRUE(CellKeyPrefixLengths(key, &row_len, &column_len));
    for (const std::string& target :
         {key, key + std::string(1, '\0'), key.substr(0, key.size() - 1), key.substr(0, column_len),
          key.substr(0, row_len)}) {
      it->Seek(target);
      auto w = cells.lower_bound(target);
      if (w == cells.end()) {
        ASSERT_FALSE(it->Valid());
      } else {
        ASSERT_TRUE(it->Valid()) << HexBytes(target);
        ASSERT_EQ(HexBytes(it->key()), HexBytes(w->first)) << HexBytes(target);
        ASSERT_EQ(it->value().ToString(), w->second);
      }
    }
  }
  ASSERT_OK(it->status());

  // Bloom answers: every present row and column, and the recorded answers
  // for absent ones.
  EXPECT_EQ(table.has_filter(), t.bloom_bits_per_key > 0);
  for (const auto& [key, value] : cells) {
    ParsedCellKey k;
    ASSERT_TRUE(ParseCellKey(key, &k));
    EXPECT_TRUE(table.RowMayMatch(k.row));
    EXPECT_TRUE(table.ColumnMayMatch(k.row, k.family, k.qualifier));
  }
  std::vector<int> rows_maybe, columns_maybe;
  for (int i = 0; i < test::kOldFormatAbsentProbes; i++) {
    if (table.RowMayMatch(test::OldFormatAbsentRow(i))) rows_maybe.push_back(i);
  }
  for (int i = 0; i < t.num_rows; i++) {
    for (int f = 0; f < test::kOldFormatAbsentFamilies; f++) {
      const auto family = static_cast<uint16_t>(test::kOldFormatAbsentFamilyBase + f);
      if (table.ColumnMayMatch(test::OldFormatRow(i), family, "absent")) {
        columns_maybe.push_back(i * test::kOldFormatAbsentFamilies + f);
      }
    }
  }
  if (t.bloom_bits_per_key == 0) {
    EXPECT_EQ(rows_maybe.size(), static_cast<size_t>(test::kOldFormatAbsentProbes));
    EXPECT_EQ(columns_maybe.size(),
              static_cast<size_t>(t.num_rows * test::kOldFormatAbsentFamilies));
  } else {
    auto e = ExpectedBlooms().find(t.file_name);
    ASSERT_NE(e, ExpectedBlooms().end());
    EXPECT_EQ(rows_maybe, e->second.absent_rows_maybe);
    EXPECT_EQ(columns_maybe, e->second.absent_columns_maybe);
  }
}

// Asked for their version, the writer still writes these files byte for byte.
TEST_P(OldFormatTest, WriterStillWritesOldVersionByteForByte) {
  const OldFormatTable& t = GetParam();
  FileSystem* fs = FileSystem::Default();
  test::ScratchDir dir("sst_old");
  const std::string path = dir.Join(t.file_name);
  const TableBuilderOptions o = test::OldFormatOptions(t);
  ASSERT_OK(test::WriteTable(fs, path, o, OldFormatCells(t.num_rows)));
  std::string written, checked_in;
  ASSERT_OK(ReadFileToString(fs, path, &written));
  ASSERT_OK(ReadFileToString(fs, TestdataPath(t.file_name), &checked_in));
  EXPECT_EQ(HexBytes(written), HexBytes(checked_in));
}

// The same cells in the current version read back the same and take less
// room.
TEST_P(OldFormatTest, CurrentVersionHoldsTheSameCellsInLessSpace) {
  const OldFormatTable& t = GetParam();
  const std::map<std::string, std::string> cells = OldFormatCells(t.num_rows);
  FileSystem* fs = FileSystem::Default();
  test::ScratchDir dir("sst_current");
  const std::string path = dir.Join(t.file_name);
  TableBuilderOptions o = test::OldFormatOptions(t);
  o.format_version = kFormatVersion;
  ASSERT_OK(test::WriteTable(fs, path, o, cells));
  auto current = test::OpenTable(fs, path);
  ASSERT_OK(current);
  auto old = test::OpenTable(fs, TestdataPath(t.file_name));
  ASSERT_OK(old);
  EXPECT_EQ((*current)->footer().format_version, kFormatVersion);
  EXPECT_EQ((*current)->data_key_encoding(), KeyEncoding::kCellKeyTailSuffix);
  // With a restart interval of 1 every entry keeps its whole key.
  if (t.restart_interval > 1) {
    EXPECT_LT((*current)->file_size(), (*old)->file_size());
  } else {
    EXPECT_LE((*current)->file_size(), (*old)->file_size());
  }
  ASSERT_NO_FATAL_FAILURE(ExpectCellsInOrder((*current)->NewIterator().get(), cells));
  ASSERT_OK((*current)->VerifyChecksums());
}

INSTANTIATE_TEST_SUITE_P(Files, OldFormatTest, ::testing::ValuesIn(OldFormatTables()),
                         [](const ::testing::TestParamInfo<OldFormatTable>& info) {
                           std::string name = info.param.file_name;
                           name = name.substr(0, name.find('.'));
                           return name;
                         });

}  // namespace
}  // namespace strata::sstable
