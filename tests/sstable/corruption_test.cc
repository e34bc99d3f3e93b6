// Damage in every part of a table is detected and named: bit flips in each
// block kind and in the footer, truncation at any length, read errors.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "common/cell_key.h"
#include "common/fault_injection_fs.h"
#include "common/random.h"
#include "sstable/sstable_test_util.h"
#include "sstable/table_reader.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::sstable {
namespace {

using test::Model;

class CorruptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Random rnd(42);
    model_ = test::RandomModel(&rnd, 500, 200);
    TableBuilderOptions o;
    o.block_size = 2048;
    o.compression = CompressionType::kZstd;
    path_ = dir_.Join("c.sst");
    ASSERT_OK(test::WriteTable(FileSystem::Default(), path_, o, model_));
    good_ = test::ReadAll(path_);
    auto table = test::OpenTable(FileSystem::Default(), path_);
    ASSERT_OK(table);
    ASSERT_OK((*table)->ListBlocks(&blocks_));
  }

  // Opens the table, scans it and verifies it; returns the first error.
  Status OpenScanVerify() {
    auto table = test::OpenTable(FileSystem::Default(), path_);
    if (!table.ok()) return table.status();
    auto it = (*table)->NewIterator();
    size_t n = 0;
    for (it->SeekToFirst(); it->Valid(); it->Next()) n++;
    if (!it->status().ok()) return it->status();
    Status s = (*table)->VerifyChecksums();
    if (!s.ok()) return s;
    if (n != model_.size()) return Status::Corruption("undetected: wrong cell count");
    return Status::OK();
  }

  const TableReader::BlockInfo& FirstBlockOf(BlockKind kind) {
    for (const auto& b : blocks_) {
      if (b.kind == kind) return b;
    }
    ADD_FAILURE() << "no block of kind " << BlockKindName(kind);
    return blocks_.front();
  }

  void FlipBit(uint64_t offset, int bit) {
    std::string bad = good_;
    bad[offset] = static_cast<char>(bad[offset] ^ (1 << bit));
    test::WriteAll(path_, bad);
  }

  test::ScratchDir dir_{"sst-corrupt"};
  std::string path_;
  std::string good_;
  Model model_;
  std::vector<TableReader::BlockInfo> blocks_;
};

TEST_F(CorruptionTest, GoodFileIsClean) { EXPECT_OK(OpenScanVerify()); }

TEST_F(CorruptionTest, EachBlockKindIsNamed) {
  for (BlockKind kind :
       {BlockKind::kData, BlockKind::kIndex, BlockKind::kFilter, BlockKind::kProperties}) {
    const auto& b = FirstBlockOf(kind);
    // Flip a bit in the contents, in the type byte and in the checksum.
    for (uint64_t at : {b.handle.offset + b.handle.size / 2, b.handle.offset + b.handle.size,
                        b.handle.offset + b.handle.size + 3}) {
      FlipBit(at, 3);
      Status s = OpenScanVerify();
      ASSERT_TRUE(s.IsCorruption()) << BlockKindName(kind) << ": " << s.ToString();
      const std::string want = std::string(BlockKindName(kind)) + " block at offset " +
                               std::to_string(b.handle.offset);
      EXPECT_NE(s.message().find(want), std::string_view::npos) << s.ToString();
      EXPECT_NE(s.message().find("c.sst"), std::string_view::npos) << s.ToString();
    }
  }
}

TEST_F(CorruptionTest, DataCorruptionSticksInIterator) {
  const auto& b = FirstBlockOf(BlockKind::kData);
  FlipBit(b.handle.offset + 1, 0);
  auto table = test::OpenTable(FileSystem::Default(), path_);
  ASSERT_OK(table);  // data blocks are read lazily
  auto it = (*table)->NewIterator();
  it->SeekToFirst();
  EXPECT_FALSE(it->Valid());
  EXPECT_TRUE(it->status().IsCorruption());
  it->Seek(model_.rbegin()->first);  // a healthy block: the error still sticks
  EXPECT_FALSE(it->Valid());
  EXPECT_TRUE(it->status().IsCorruption());
  // A fresh iterator can still read the healthy blocks.
  auto it2 = (*table)->NewIterator();
  it2->Seek(model_.rbegin()->first);
  ASSERT_TRUE(it2->Valid());
  EXPECT_TRUE((*table)->VerifyChecksums().IsCorruption());
}

TEST_F(CorruptionTest, FooterIsNamed) {
  const uint64_t footer = good_.size() - Footer::kEncodedLength;
  for (uint64_t at : {footer, footer + 20, footer + 50, footer + 53, footer + 60}) {
    FlipBit(at, 5);
    Status s = OpenScanVerify();
    ASSERT_TRUE(s.IsCorruption()) << at << ": " << s.ToString();
    EXPECT_NE(s.message().find("footer at offset " + std::to_string(footer)),
              std::string_view::npos)
        << s.ToString();
  }
}

TEST_F(CorruptionTest, EveryBitFlipIsDetected) {
  Random rnd(test::TestSeed());
  const int trials = test::LongTests() ? 5000 : 400;
  for (int i = 0; i < trials; i++) {
    const uint64_t at = rnd.Uniform(good_.size());
    const int bit = static_cast<int>(rnd.Uniform(8));
    FlipBit(at, bit);
    Status s = OpenScanVerify();
    ASSERT_TRUE(s.IsCorruption()) << "flip at " << at << " bit " << bit << ": " << s.ToString();
  }
}

TEST_F(CorruptionTest, TruncationIsDetected) {
  std::vector<uint64_t> lengths = {0, 1, 7, Footer::kEncodedLength - 1, Footer::kEncodedLength,
                                   Footer::kEncodedLength + 1, good_.size() - 1};
  for (const auto& b : blocks_) {
    lengths.push_back(b.handle.offset);
    lengths.push_back(b.handle.end());
    lengths.push_back(b.handle.offset + b.handle.size / 2);
  }
  Random rnd(7);
  for (int i = 0; i < 100; i++) lengths.push_back(rnd.Uniform(good_.size()));
  for (uint64_t len : lengths) {
    test::WriteAll(path_, good_.substr(0, len));
    Status s = OpenScanVerify();
    ASSERT_TRUE(s.IsCorruption()) << "length " << len << ": " << s.ToString();
    EXPECT_NE(s.message().find("c.sst"), std::string_view::npos) << s.ToString();
  }
}

TEST_F(CorruptionTest, TrailingGarbageIsDetected) {
  test::WriteAll(path_, good_ + "garbage");
  EXPECT_TRUE(OpenScanVerify().IsCorruption());
  test::WriteAll(path_, std::string(4096, 'x'));
  Status s = OpenScanVerify();
  EXPECT_TRUE(s.IsCorruption());
  EXPECT_NE(s.message().find("magic"), std::string_view::npos) << s.ToString();
}

TEST_F(CorruptionTest, BlockReadAsWrongKindFails) {
  const auto& b = FirstBlockOf(BlockKind::kData);
  const std::string stored = good_.substr(b.handle.offset, b.handle.size + kBlockTrailerSize);
  BlockContents c;
  EXPECT_OK(DecodeStoredBlock(stored, "f", BlockKind::kData, b.handle.offset, &c));
  for (BlockKind wrong : {BlockKind::kIndex, BlockKind::kFilter, BlockKind::kProperties}) {
    Status s = DecodeStoredBlock(stored, "f", wrong, b.handle.offset, &c);
    EXPECT_TRUE(s.IsCorruption());
    EXPECT_NE(s.message().find("checksum mismatch"), std::string_view::npos);
  }
}

TEST_F(CorruptionTest, UnknownVersionIsNotSupported) {
  // Rewrite the footer with version 99 and a matching checksum.
  const uint64_t footer_offset = good_.size() - Footer::kEncodedLength;
  auto f = Footer::Decode(Slice(good_.data() + footer_offset, Footer::kEncodedLength), "f",
                          footer_offset);
  ASSERT_OK(f);
  Footer g = *f;
  g.format_version = 99;
  std::string enc;
  g.EncodeTo(&enc);
  test::WriteAll(path_, good_.substr(0, footer_offset) + enc);
  auto table = test::OpenTable(FileSystem::Default(), path_);
  EXPECT_TRUE(table.status().IsNotSupported()) << table.status().ToString();
}

TEST_F(CorruptionTest, FooterAndPropertiesVersionsMustAgree) {
  // A current-version file whose footer claims version 1 (checksum fixed up).
  const uint64_t footer_offset = good_.size() - Footer::kEncodedLength;
  auto f = Footer::Decode(Slice(good_.data() + footer_offset, Footer::kEncodedLength), "f",
                          footer_offset);
  ASSERT_OK(f);
  ASSERT_EQ(f->format_version, kFormatVersion);
  Footer g = *f;
  g.format_version = kFormatVersion1;
  std::string enc;
  g.EncodeTo(&enc);
  test::WriteAll(path_, good_.substr(0, footer_offset) + enc);
  auto table = test::OpenTable(FileSystem::Default(), path_);
  ASSERT_TRUE(table.status().IsCorruption()) << table.status().ToString();
  EXPECT_NE(table.status().message().find("properties block at offset"), std::string_view::npos)
      << table.status().ToString();
}

// Damage to the cell-key tail that passes the block checksum (the block is
// re-encoded) is Corruption naming the file, the data block and the entry,
// from scans and from VerifyChecksums. Here the second entry of a data block
// is damaged by `damage` (given the block's raw bytes and that entry's
// offset), and the message must name `what`.
void ExpectDamagedTailEntry(const std::function<void(std::string*, size_t)>& damage,
                            const std::string& what) {
  test::ScratchDir dir("sst-tail");
  const std::string path = dir.Join("000042.sst");
  Model model;
  for (int i = 0; i < 300; i++) {
    std::string key;
    AppendCellKey(&key, "row" + std::to_string(1000 + i), 1, "q", 7, 100 + i, CellType::kPut);
    model[key] = "value";
  }
  TableBuilderOptions o;
  o.block_size = 1024;
  ASSERT_OK(test::WriteTable(FileSystem::Default(), path, o, model));
  const std::string good = test::ReadAll(path);
  std::vector<TableReader::BlockInfo> blocks;
  {
    auto table = test::OpenTable(FileSystem::Default(), path);
    ASSERT_OK(table);
    ASSERT_EQ((*table)->data_key_encoding(), KeyEncoding::kCellKeyTailSuffix);
    ASSERT_OK((*table)->ListBlocks(&blocks));
  }
  const TableReader::BlockInfo& second = blocks[1];  // a data block not at offset 0
  ASSERT_EQ(second.kind, BlockKind::kData);
  std::string raw = good.substr(second.handle.offset, second.handle.size);
  // Entry 0 is a restart entry: 3 header bytes, the key, the value.
  const size_t entry1 = 3 + static_cast<uint8_t>(raw[1]) + static_cast<uint8_t>(raw[2]);
  damage(&raw, entry1);
  std::string stored;
  EncodeBlock(raw, BlockKind::kData, CompressionType::kNone, 0, nullptr, &stored);
  ASSERT_EQ(stored.size(), second.handle.size + kBlockTrailerSize);
  std::string bad = good;
  bad.replace(second.handle.offset, stored.size(), stored);
  test::WriteAll(path, bad);

  auto table = test::OpenTable(FileSystem::Default(), path);
  ASSERT_OK(table);
  const std::string want = "file " + path + ": data block at offset " +
                           std::to_string(second.handle.offset) + ": " + what + " at offset " +
                           std::to_string(entry1) + " within the block";
  auto it = (*table)->NewIterator();
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
  }
  ASSERT_TRUE(it->status().IsCorruption());
  EXPECT_NE(it->status().message().find(want), std::string_view::npos) << it->status().ToString();
  Status v = (*table)->VerifyChecksums();
  ASSERT_TRUE(v.IsCorruption());
  EXPECT_NE(v.message().find("data block at offset " + std::to_string(second.handle.offset)),
            std::string_view::npos)
      << v.ToString();
}

// Entry 1 of the block is a tail entry: 3 header bytes, its column's middle
// bytes, the shared suffix length (1 byte), ts_delta (1 byte), seq_type.
TEST(CellKeyTailCorruptionTest, BadTypeNamesFileBlockAndEntry) {
  ExpectDamagedTailEntry(
      [](std::string* raw, size_t entry1) {
        const size_t seq_type = entry1 + 3 + static_cast<uint8_t>((*raw)[entry1 + 1]) + 2;
        ASSERT_EQ((*raw)[seq_type] & 7, 1);                           // a put
        (*raw)[seq_type] = static_cast<char>((*raw)[seq_type] & ~7);  // type 0
      },
      "bad sequence or cell type in cell key tail");
}

TEST(CellKeyTailCorruptionTest, SharedBytesBeyondThePreviousColumn) {
  ExpectDamagedTailEntry(
      [](std::string* raw, size_t entry1) {
        const size_t suffix = entry1 + 3 + static_cast<uint8_t>((*raw)[entry1 + 1]);
        ASSERT_GT((*raw)[suffix], 0);  // the row terminator, family and qualifier
        (*raw)[suffix] = 0x7f;         // more bytes than the previous column has
      },
      "bad shared column bytes in cell key tail");
}

TEST_F(CorruptionTest, ReadErrorsStickInIterator) {
  FaultInjectionFileSystem fs;
  auto table = test::OpenTable(&fs, path_);
  ASSERT_OK(table);
  fs.FailAfter(FaultOp::kRead, 1, -1, 5 /* EIO */);
  auto it = (*table)->NewIterator();
  size_t n = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next()) n++;
  EXPECT_LT(n, model_.size());
  EXPECT_TRUE(it->status().IsIOError()) << it->status().ToString();
  EXPECT_NE(it->status().message().find("data block at offset"), std::string_view::npos);
  fs.ClearFaults();
}

}  // namespace
}  // namespace strata::sstable
