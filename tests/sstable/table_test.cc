#include <gtest/gtest.h>

#include <map>
#include <string>

#include "common/cell_key.h"
#include "common/coding.h"
#include "common/fault_injection_fs.h"
#include "common/random.h"
#include "sstable/block_cache.h"
#include "sstable/sstable_test_util.h"
#include "sstable/table_builder.h"
#include "sstable/table_reader.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::sstable {
namespace {

using test::Model;

// Checks a full scan of `it` against the model.
void CheckScan(InternalIterator* it, const Model& model) {
  auto m = model.begin();
  for (it->SeekToFirst(); it->Valid(); it->Next(), ++m) {
    ASSERT_NE(m, model.end());
    ASSERT_EQ(it->key().ToString(), m->first);
    ASSERT_EQ(it->value().ToString(), m->second);
  }
  ASSERT_OK(it->status());
  ASSERT_EQ(m, model.end());
}

// Checks a full scan, Seek to every key, Seek between keys and to random
// targets against the model.
void CheckTable(const TableReader& table, const Model& model, Random* rnd) {
  auto it = table.NewIterator();
  ASSERT_NO_FATAL_FAILURE(CheckScan(it.get(), model));

  auto check_seek = [&](const std::string& target) {
    it->Seek(target);
    auto want = model.lower_bound(target);
    if (want == model.end()) {
      ASSERT_FALSE(it->Valid()) << HexBytes(target);
    } else {
      ASSERT_TRUE(it->Valid()) << HexBytes(target);
      ASSERT_EQ(it->key().ToString(), want->first);
      ASSERT_EQ(it->value().ToString(), want->second);
    }
    // And the last entry below the target.
    it->SeekBefore(target);
    if (want == model.begin()) {
      ASSERT_FALSE(it->Valid()) << HexBytes(target);
    } else {
      --want;
      ASSERT_TRUE(it->Valid()) << HexBytes(target);
      ASSERT_EQ(it->key().ToString(), want->first);
      ASSERT_EQ(it->value().ToString(), want->second);
    }
  };
  for (const auto& [k, v] : model) {
    check_seek(k);
    check_seek(k + '\0');         // just after k
    check_seek(k.substr(0, k.size() - 1));  // just before k
  }
  for (int i = 0; i < 200; i++) check_seek(test::RandomCellKey(rnd));
  check_seek("");
  check_seek(std::string(300, '\xff'));
  ASSERT_OK(it->status());
}

struct Shape {
  CompressionType compression;
  uint32_t block_size;
  int restart_interval;
  int bloom_bits;
};

class TableRoundTripTest : public ::testing::TestWithParam<Shape> {};

TEST_P(TableRoundTripTest, RandomCells) {
  const Shape shape = GetParam();
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Random rnd(seed);
  test::ScratchDir dir("sst");
  FileSystem* fs = FileSystem::Default();
  TableBuilderOptions o;
  o.compression = shape.compression;
  o.block_size = shape.block_size;
  o.restart_interval = shape.restart_interval;
  o.bloom_bits_per_key = shape.bloom_bits;
  o.file_number = 7;
  const size_t n = test::LongTests() ? 20000 : 2000;
  for (size_t count : {size_t{0}, size_t{1}, size_t{5}, n}) {
    Model model = test::RandomModel(&rnd, count, 300);
    const std::string path = dir.Join("t" + std::to_string(count) + ".sst");
    ASSERT_OK(test::WriteTable(fs, path, o, model));
    for (bool cached : {false, true}) {
      BlockCache cache(64 << 10, 2);
      TableReaderOptions ro;
      if (cached) ro.block_cache = &cache;
      auto table = test::OpenTable(fs, path, ro);
      ASSERT_OK(table);
      CheckTable(**table, model, &rnd);
      ASSERT_OK((*table)->VerifyChecksums());
      const TableProperties& p = (*table)->properties();
      EXPECT_EQ(p.num_cells, model.size());
      EXPECT_EQ(p.file_number, 7u);
      EXPECT_EQ(p.format_version, kFormatVersion);
      EXPECT_EQ((*table)->file_number(), 7u);
      for (const auto& [k, v] : model) {
        ParsedCellKey pk;
        ASSERT_TRUE(ParseCellKey(k, &pk));
        ASSERT_TRUE((*table)->RowMayMatch(pk.row));
        ASSERT_TRUE((*table)->ColumnMayMatch(pk.row, pk.family, pk.qualifier));
      }
      EXPECT_EQ((*table)->has_filter(), shape.bloom_bits > 0);
      if (cached && count > 0) {
        EXPECT_GT(cache.hits() + cache.misses(), 0u);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, TableRoundTripTest,
    ::testing::Values(Shape{CompressionType::kNone, 4096, 16, 10},
                      Shape{CompressionType::kZstd, 4096, 16, 10},
                      Shape{CompressionType::kNone, 64, 1, 0},
                      Shape{CompressionType::kZstd, 256, 2, 3},
                      Shape{CompressionType::kNone, 1 << 20, 1000, 10},
                      Shape{CompressionType::kZstd, 32 << 10, 7, 20}));

// Writes 500 random cells in 256-byte blocks (dozens of blocks) to `path`.
void WriteSmallBlockTable(FileSystem* fs, const std::string& path, Model* model) {
  Random rnd(test::TestSeed());
  *model = test::RandomModel(&rnd, 500, 100);
  TableBuilderOptions o;
  o.block_size = 256;
  ASSERT_OK(test::WriteTable(fs, path, o, *model));
}

// An iterator without fill_cache (compaction's) uses the blocks it finds in
// the cache but adds none of the ones it reads.
TEST(TableTest, IteratorWithoutFillCacheAddsNoBlocks) {
  test::ScratchDir dir("sst");
  FileSystem* fs = FileSystem::Default();
  const std::string path = dir.Join("t.sst");
  Model model;
  ASSERT_NO_FATAL_FAILURE(WriteSmallBlockTable(fs, path, &model));
  BlockCache cache(1 << 20, 0);
  TableReaderOptions ro;
  ro.block_cache = &cache;
  auto table = test::OpenTable(fs, path, ro);
  ASSERT_OK(table);
  auto scan = [&](bool fill_cache) { CheckScan((*table)->NewIterator(fill_cache).get(), model); };
  scan(/*fill_cache=*/false);
  EXPECT_EQ(cache.usage(), 0u);
  EXPECT_EQ(cache.hits(), 0u);
  const uint64_t blocks = cache.misses();
  EXPECT_GT(blocks, 10u);
  scan(/*fill_cache=*/true);  // a reader's pass fills the cache
  const size_t usage = cache.usage();
  EXPECT_GT(usage, 0u);
  EXPECT_EQ(cache.misses(), 2 * blocks);
  scan(/*fill_cache=*/false);  // and a later pass without fill uses it
  EXPECT_EQ(cache.hits(), blocks);
  EXPECT_EQ(cache.misses(), 2 * blocks);
  EXPECT_EQ(cache.usage(), usage);
}

// Iterators sharing a CacheFillBudget add blocks only while it lasts, then
// read past the cache; a refill lets them add again. A table of resident
// blocks adds every block whatever the budget.
TEST(TableTest, IteratorsAddBlocksOnlyWhileTheirFillBudgetLasts) {
  test::ScratchDir dir("sst");
  FileSystem* fs = FileSystem::Default();
  const std::string path = dir.Join("t.sst");
  Model model;
  ASSERT_NO_FATAL_FAILURE(WriteSmallBlockTable(fs, path, &model));
  for (const bool resident : {false, true}) {
    SCOPED_TRACE(resident ? "resident" : "normal");
    BlockCache cache(1 << 20, 0);
    TableReaderOptions ro;
    ro.block_cache = &cache;
    ro.resident_blocks = resident;
    auto table = test::OpenTable(fs, path, ro);
    ASSERT_OK(table);
    auto budget = std::make_shared<CacheFillBudget>(4 << 10);
    auto scan = [&] { CheckScan((*table)->NewIterator(true, budget).get(), model); };
    scan();
    const uint64_t blocks = cache.misses();
    EXPECT_GT(blocks, 30u);
    const size_t first = cache.usage();
    if (resident) {
      EXPECT_EQ(cache.num_entries(), blocks);
      continue;
    }
    EXPECT_GT(first, 2u << 10);
    EXPECT_LE(first, 4u << 10);
    EXPECT_EQ(budget->left(), 0u);
    scan();  // the budget is spent: the same blocks hit, no more are added
    EXPECT_EQ(cache.usage(), first);
    budget->Refill();
    scan();  // refilled: it adds about as much again
    EXPECT_GT(cache.usage(), first + (2u << 10));
    EXPECT_LE(cache.usage(), first + (4u << 10));
  }
}

TEST(TableTest, LargeAndEmptyValues) {
  test::ScratchDir dir("sst");
  FileSystem* fs = FileSystem::Default();
  Random rnd(test::TestSeed());
  Model model;
  auto key = [](const std::string& row) {
    std::string k;
    AppendCellKey(&k, row, 1, "q", 10, 5, CellType::kPut);
    return k;
  };
  model[key("a")] = "";
  model[key("b")] = rnd.RandomBytes(10000);           // larger than a block
  model[key("c")] = std::string((1 << 20) + 17, 'x');  // > 1 MiB, compressible
  model[key("d")] = rnd.RandomBytes((1 << 20) + 3);    // > 1 MiB, incompressible
  model[key("e")] = "";
  model[key("f")] = "small";
  for (CompressionType c : {CompressionType::kNone, CompressionType::kZstd}) {
    TableBuilderOptions o;
    o.compression = c;
    o.block_size = 4096;
    const std::string path = dir.Join(std::string("big-") + CompressionTypeName(c) + ".sst");
    ASSERT_OK(test::WriteTable(fs, path, o, model));
    auto table = test::OpenTable(fs, path);
    ASSERT_OK(table);
    CheckTable(**table, model, &rnd);
    EXPECT_EQ((*table)->properties().raw_value_size, 10000u + (1 << 20) + 17 + (1 << 20) + 3 + 5);
    if (c == CompressionType::kZstd) {
      EXPECT_LT((*table)->properties().data_size, (2u << 20));  // the 'x' block compressed
    }
  }
}

TEST(TableTest, IncompressibleBlocksAreStoredRaw) {
  test::ScratchDir dir("sst");
  FileSystem* fs = FileSystem::Default();
  Random rnd(1);
  Model model;
  for (int i = 0; i < 200; i++) {
    std::string k;
    AppendCellKey(&k, "row" + std::to_string(1000 + i), 1, "q", 1, 1, CellType::kPut);
    model[k] = rnd.RandomBytes(1000);
  }
  TableBuilderOptions o;
  o.compression = CompressionType::kZstd;
  const std::string path = dir.Join("raw.sst");
  ASSERT_OK(test::WriteTable(fs, path, o, model));
  auto table = test::OpenTable(fs, path);
  ASSERT_OK(table);
  std::vector<TableReader::BlockInfo> blocks;
  ASSERT_OK((*table)->ListBlocks(&blocks));
  int data_blocks = 0;
  for (const auto& b : blocks) {
    if (b.kind != BlockKind::kData) continue;
    data_blocks++;
    BlockContents c;
    ASSERT_OK((*table)->ReadBlockContents(b.kind, b.handle, &c));
    EXPECT_EQ(c.stored_as, CompressionType::kNone);  // random values do not compress by 1/8
  }
  EXPECT_GT(data_blocks, 0);
}

TEST(TableTest, PropertiesAreComplete) {
  test::ScratchDir dir("sst");
  FileSystem* fs = FileSystem::Default();
  Model model;
  auto add = [&](const std::string& row, uint16_t fam, const std::string& q, uint64_t ts,
                 uint64_t seq, CellType t, const std::string& v) {
    std::string k;
    AppendCellKey(&k, row, fam, q, ts, seq, t);
    model[k] = v;
  };
  add(std::string("a\0b", 3), 1, "q1", 100, 9, CellType::kPut, "v1");
  add(std::string("a\0b", 3), 1, "q1", 50, 3, CellType::kDeleteCell, "");
  add(std::string("a\0b", 3), 2, "q", 70, 4, CellType::kDeleteColumn, "");
  add("zz", 0, "", 500, 12, CellType::kDeleteRow, "");
  add("zz", 1, "q", 20, 2, CellType::kPut, "value");
  TableBuilderOptions o;
  o.compression = CompressionType::kZstd;
  o.compression_level = 5;
  o.table_id = 11;
  o.tablet_id = 12;
  o.locality_group_id = 13;
  o.file_number = 14;
  o.creation_time = 1700000000;
  const std::string path = dir.Join("props.sst");
  ASSERT_OK(test::WriteTable(fs, path, o, model));
  auto table = test::OpenTable(fs, path);
  ASSERT_OK(table);
  const TableProperties& p = (*table)->properties();
  EXPECT_EQ(p.num_cells, 5u);
  EXPECT_EQ(p.num_puts, 2u);
  EXPECT_EQ(p.num_delete_cells, 1u);
  EXPECT_EQ(p.num_delete_columns, 1u);
  EXPECT_EQ(p.num_delete_rows, 1u);
  EXPECT_EQ(p.num_rows, 2u);
  EXPECT_EQ(p.num_columns, 4u);
  EXPECT_EQ(p.min_timestamp, 20u);
  EXPECT_EQ(p.max_timestamp, 500u);
  EXPECT_EQ(p.min_sequence, 2u);
  EXPECT_EQ(p.max_sequence, 12u);
  EXPECT_EQ(p.first_row, std::string("a\0b", 3));
  EXPECT_EQ(p.last_row, "zz");
  EXPECT_EQ(p.smallest_key, model.begin()->first);
  EXPECT_EQ(p.largest_key, model.rbegin()->first);
  EXPECT_EQ(p.raw_value_size, 7u);
  EXPECT_EQ(p.table_id, 11u);
  EXPECT_EQ(p.tablet_id, 12u);
  EXPECT_EQ(p.locality_group_id, 13u);
  EXPECT_EQ(p.file_number, 14u);
  EXPECT_EQ(p.creation_time, 1700000000u);
  EXPECT_EQ(p.compression, static_cast<uint8_t>(CompressionType::kZstd));
  EXPECT_EQ(p.compression_level, 5);
  EXPECT_EQ(p.num_data_blocks, 1u);
  EXPECT_EQ(p.data_size + p.index_size + p.filter_size + (*table)->footer().properties.size +
                kBlockTrailerSize + Footer::kEncodedLength,
            (*table)->file_size());
  EXPECT_FALSE((*table)->RowMayMatch("nope-not-here") && (*table)->RowMayMatch("nor-this") &&
               (*table)->RowMayMatch("nor-that"));
  EXPECT_NE(p.ToString().find("tablet_id: 12"), std::string::npos);
  EXPECT_TRUE(p.has_family_ids);
  EXPECT_EQ(p.family_ids, (std::vector<uint16_t>{0, 1, 2}));
  EXPECT_NE(p.ToString().find("family_ids: 0,1,2"), std::string::npos);
}

TEST(TableTest, FamilyIdsRoundTripAndStayOptional) {
  TableProperties p;
  p.has_family_ids = true;
  p.family_ids = {0, 3, 300, 65535};
  std::string enc;
  p.EncodeTo(&enc);
  auto d = TableProperties::Decode(enc);
  ASSERT_OK(d);
  EXPECT_TRUE(d->has_family_ids);
  EXPECT_EQ(d->family_ids, p.family_ids);
  // A file from before the field: nothing said about its families.
  TableProperties old;
  std::string old_enc;
  old.EncodeTo(&old_enc);
  auto o = TableProperties::Decode(old_enc);
  ASSERT_OK(o);
  EXPECT_FALSE(o->has_family_ids);
  EXPECT_TRUE(o->family_ids.empty());
  // Ids out of order, repeated or over 16 bits are Corruption.
  for (const std::vector<uint32_t>& bad :
       {std::vector<uint32_t>{2, 1}, std::vector<uint32_t>{1, 1}, std::vector<uint32_t>{70000}}) {
    std::string b;
    old.EncodeTo(&b);
    std::string ids;
    for (uint32_t id : bad) PutVarint32(&ids, id);
    PutVarint32(&b, 33);
    PutLengthPrefixedSlice(&b, ids);
    EXPECT_TRUE(TableProperties::Decode(b).status().IsCorruption());
  }
}

TEST(TableTest, PropertiesSkipUnknownFields) {
  TableProperties p;
  p.num_cells = 3;
  p.first_row = "r";
  std::string enc;
  p.EncodeTo(&enc);
  PutVarint32(&enc, 999);  // a field from a newer writer
  PutLengthPrefixedSlice(&enc, "whatever");
  auto d = TableProperties::Decode(enc);
  ASSERT_OK(d);
  EXPECT_EQ(d->num_cells, 3u);
  EXPECT_EQ(d->first_row, "r");
  enc.push_back('\x05');  // a tag without a length
  EXPECT_TRUE(TableProperties::Decode(enc).status().IsCorruption());
}

TEST(TableTest, BuilderRejectsMisuse) {
  test::ScratchDir dir("sst");
  FileSystem* fs = FileSystem::Default();
  std::unique_ptr<WritableFile> file;
  const std::string path = dir.Join("misuse.sst");
  ASSERT_OK(fs->NewWritableFile(path, FileOpenOptions{}, &file));
  TableBuilder b(TableBuilderOptions{}, file.get(), path);
  std::string k1, k2;
  AppendCellKey(&k1, "a", 1, "q", 5, 1, CellType::kPut);
  AppendCellKey(&k2, "b", 1, "q", 5, 1, CellType::kPut);
  EXPECT_TRUE(b.Add("not a cell key", "v").IsInvalidArgument());
  ASSERT_OK(b.Add(k2, "v2"));
  Status s = b.Add(k1, "v1");
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.message().find("misuse.sst"), std::string_view::npos);
  EXPECT_TRUE(b.Add(k2, "again").IsInvalidArgument());  // equal keys are not increasing
  // A cell no block could hold (readers refuse blocks past kMaxBlockSize).
  // Refused on its size alone: the value's bytes are never read.
  std::string k3;
  AppendCellKey(&k3, "c", 1, "q", 5, 1, CellType::kPut);
  const char tiny = 'v';
  s = b.Add(k3, Slice(&tiny, TableBuilder::kMaxEntryBytes));
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find("does not fit in a block"), std::string_view::npos);
  EXPECT_EQ(b.num_entries(), 1u);
  ASSERT_OK(b.Finish());
  EXPECT_TRUE(b.Add(k2 + "x", "v").IsFailedPrecondition());
  EXPECT_TRUE(b.Finish().IsFailedPrecondition());
  ASSERT_OK(file->Close());
  auto table = test::OpenTable(fs, path);
  ASSERT_OK(table);
  EXPECT_EQ((*table)->properties().num_cells, 1u);
}

TEST(TableTest, WriteErrorsStick) {
  test::ScratchDir dir("sst");
  FaultInjectionFileSystem fs;
  std::unique_ptr<WritableFile> file;
  const std::string path = dir.Join("fail.sst");
  ASSERT_OK(fs.NewWritableFile(path, FileOpenOptions{}, &file));
  TableBuilderOptions o;
  o.block_size = 128;
  TableBuilder b(o, file.get(), path);
  fs.FailAfter(FaultOp::kWrite, 2, -1, 5 /* EIO */);
  Random rnd(3);
  Status first_error;
  for (int i = 0; i < 1000 && first_error.ok(); i++) {
    std::string k;
    AppendCellKey(&k, "row" + std::to_string(10000 + i), 1, "q", 1, 1, CellType::kPut);
    first_error = b.Add(k, rnd.RandomBytes(50));
  }
  EXPECT_TRUE(first_error.IsIOError()) << first_error.ToString();
  std::string k;
  AppendCellKey(&k, "zzz", 1, "q", 1, 1, CellType::kPut);
  EXPECT_TRUE(b.Add(k, "v").IsIOError());
  EXPECT_TRUE(b.Finish().IsIOError());
  EXPECT_TRUE(b.status().IsIOError());
}

TEST(TableTest, ShortestSeparatorIsShortAndOrdered) {
  EXPECT_EQ(ShortestSeparator("abc", "abe"), "abd");
  EXPECT_EQ(ShortestSeparator("abc", "abd"), "abc");
  EXPECT_EQ(ShortestSeparator("abc", "abdzz"), "abd");
  EXPECT_EQ(ShortestSeparator("ab", "abc"), "ab");
  EXPECT_EQ(ShortestSeparator(std::string("a\xff\xffz", 4), "b"), std::string("a\xff\xff{", 4));
  EXPECT_EQ(ShortestSeparator(std::string("a\xff\xff", 3), "b"), std::string("a\xff\xff", 3));
  EXPECT_EQ(ShortSuccessor("abc"), "b");
  EXPECT_EQ(ShortSuccessor(std::string("\xff\xff" "a", 3)), std::string("\xff\xff" "b", 3));
  EXPECT_EQ(ShortSuccessor(std::string("\xff\xff", 2)), std::string("\xff\xff", 2));

  Random rnd(test::TestSeed());
  for (int i = 0; i < 100000; i++) {
    std::string a = test::RandomKeyPart(&rnd, 8), b = test::RandomKeyPart(&rnd, 8);
    if (rnd.OneIn(3)) b = a + test::RandomKeyPart(&rnd, 3);
    if (a == b) continue;
    if (b < a) std::swap(a, b);
    const std::string s = ShortestSeparator(a, b);
    ASSERT_LE(a, s) << HexBytes(a) << " " << HexBytes(b);
    ASSERT_LT(s, b) << HexBytes(a) << " " << HexBytes(b);
    ASSERT_LE(s.size(), a.size() + 0) << HexBytes(a) << " " << HexBytes(b);
    const std::string t = ShortSuccessor(a);
    ASSERT_LE(a, t);
    ASSERT_LE(t.size(), a.size());
  }
}

TEST(TableTest, SeparatorsShortenTheIndex) {
  test::ScratchDir dir("sst");
  FileSystem* fs = FileSystem::Default();
  Model model;
  for (int i = 0; i < 2000; i++) {
    std::string k;
    AppendCellKey(&k, "some-long-row-key-prefix-" + std::to_string(100000 + i * 7), 1,
                  "qualifier", 99, 1, CellType::kPut);
    model[k] = std::string(100, 'v');
  }
  TableBuilderOptions o;
  o.block_size = 1024;
  const std::string path = dir.Join("sep.sst");
  ASSERT_OK(test::WriteTable(fs, path, o, model));
  auto table = test::OpenTable(fs, path);
  ASSERT_OK(table);
  std::vector<TableReader::BlockInfo> blocks;
  ASSERT_OK((*table)->ListBlocks(&blocks));
  size_t sep_bytes = 0, data_blocks = 0;
  for (const auto& b : blocks) {
    if (b.kind != BlockKind::kData) continue;
    sep_bytes += b.separator.size();
    data_blocks++;
  }
  ASSERT_GT(data_blocks, 10u);
  // Full keys are 57 bytes; the separators stop right after the first differing digit.
  EXPECT_LT(sep_bytes / data_blocks, 35u);
  Random rnd(5);
  CheckTable(**table, model, &rnd);
}

// Seeks go through an array of 8-byte windows of the index separators;
// separators whose windows tie are told apart by the separators themselves.
TEST(TableTest, SeeksFindBlocksWhoseSeparatorsShareLongPrefixes) {
  test::ScratchDir dir("sst");
  FileSystem* fs = FileSystem::Default();
  Random rnd(test::TestSeed());
  Model model;
  const std::string stem(30, 'm');
  for (int i = 0; i < 3000; i++) {
    // Mostly rows that agree far beyond the separators' common prefix, some
    // ending inside the window, with 0x00 bytes the padding must not confuse.
    std::string row;
    switch (rnd.Uniform(4)) {
      case 0: row = "a" + stem + test::RandomKeyPart(&rnd, 6); break;
      case 1: row = "a" + stem.substr(0, rnd.Uniform(9)) + std::string(rnd.Uniform(3), '\0'); break;
      case 2: row = test::RandomKeyPart(&rnd, 6); break;
      default: row = "a" + stem + std::to_string(i); break;
    }
    if (row.empty()) row = "x";
    std::string k;
    AppendCellKey(&k, row, 1, "q", 1 + rnd.Uniform(3), 1 + i, CellType::kPut);
    model[k] = std::string(rnd.Uniform(40), 'v');
  }
  for (uint32_t block_size : {64u, 512u}) {
    TableBuilderOptions o;
    o.block_size = block_size;
    const std::string path = dir.Join("windows" + std::to_string(block_size) + ".sst");
    ASSERT_OK(test::WriteTable(fs, path, o, model));
    auto table = test::OpenTable(fs, path);
    ASSERT_OK(table);
    CheckTable(**table, model, &rnd);
    auto it = (*table)->NewIterator();
    for (const auto& [k, v] : model) {
      // Targets inside and around the shared stem.
      for (size_t cut : {size_t{1}, size_t{5}, size_t{9}, size_t{17}, k.size() - 16}) {
        if (cut > k.size()) continue;
        const std::string target = k.substr(0, cut);
        it->Seek(target);
        auto want = model.lower_bound(target);
        ASSERT_EQ(it->Valid(), want != model.end()) << HexBytes(target);
        if (want != model.end()) {
          ASSERT_EQ(it->key().ToString(), want->first) << HexBytes(target);
        }
      }
    }
    ASSERT_OK(it->status());
  }
}

TEST(TableTest, ApproximateOffsetOfGrows) {
  test::ScratchDir dir("sst");
  FileSystem* fs = FileSystem::Default();
  Random rnd(9);
  Model model = test::RandomModel(&rnd, 3000, 100);
  TableBuilderOptions o;
  o.block_size = 2048;
  const std::string path = dir.Join("approx.sst");
  ASSERT_OK(test::WriteTable(fs, path, o, model));
  auto table = test::OpenTable(fs, path);
  ASSERT_OK(table);
  uint64_t prev = 0;
  for (const auto& [k, v] : model) {
    const uint64_t off = (*table)->ApproximateOffsetOf(k);
    EXPECT_GE(off, prev);
    prev = off;
  }
  EXPECT_EQ((*table)->ApproximateOffsetOf(std::string(400, '\xff')),
            (*table)->footer().filter.offset);
}

TEST(TableTest, FilterFalsePositivesOnTable) {
  test::ScratchDir dir("sst");
  FileSystem* fs = FileSystem::Default();
  for (uint32_t version : {kFormatVersion1, kFormatVersion2}) {
    for (int columns_per_row : {1, 2}) {
      SCOPED_TRACE("version " + std::to_string(version) + ", " + std::to_string(columns_per_row) +
                   " columns per row");
      Model model;
      for (int i = 0; i < 10000; i++) {
        for (int c = 0; c < columns_per_row; c++) {
          std::string k;
          AppendCellKey(&k, "row" + std::to_string(i), 1, "q" + std::to_string(i % 3 + c * 10), 1,
                        1, CellType::kPut);
          model[k] = "v";
        }
      }
      TableBuilderOptions o;
      o.format_version = version;
      const std::string path =
          dir.Join("fp" + std::to_string(version) + std::to_string(columns_per_row) + ".sst");
      ASSERT_OK(test::WriteTable(fs, path, o, model));
      auto table = test::OpenTable(fs, path);
      ASSERT_OK(table);
      const FilterBlockReader* filter = (*table)->filter();
      ASSERT_NE(filter, nullptr);
      // Version 2 drops the column filter of a table with one column per row.
      const bool column_filter = version == kFormatVersion1 || columns_per_row > 1;
      EXPECT_EQ(filter->has_column_filter(), column_filter);
      int row_fp = 0, col_fp = 0, absent_row_col_fp = 0;
      const int probes = 100000;
      for (int i = 0; i < probes; i++) {
        if ((*table)->RowMayMatch("absent" + std::to_string(i))) row_fp++;
        if ((*table)->ColumnMayMatch("row" + std::to_string(i % 10000), 2, "q")) col_fp++;
        if ((*table)->ColumnMayMatch("absent" + std::to_string(i), 1, "q0")) absent_row_col_fp++;
        // Without a column filter, a column of an absent row still misses.
        if (!column_filter) {
          EXPECT_EQ((*table)->ColumnMayMatch("absent" + std::to_string(i), 1, "q0"),
                    (*table)->RowMayMatch("absent" + std::to_string(i)));
        }
      }
      std::printf(
          "version %u, %d column(s) per row: filter %zu bytes; maybe for absent rows "
          "%.3f%%, columns of absent rows %.3f%%, absent columns of present rows %.3f%%\n",
          version, columns_per_row, filter->row_filter_size() + filter->column_filter_size() + 4,
          100.0 * row_fp / probes, 100.0 * absent_row_col_fp / probes, 100.0 * col_fp / probes);
      EXPECT_LT(row_fp, probes * 0.0125);
      EXPECT_LT(absent_row_col_fp, probes * 0.0125);
      if (column_filter) {
        EXPECT_LT(col_fp, probes * 0.0125);
      } else {
        EXPECT_EQ(col_fp, probes);  // every probed row is present
      }
    }
  }
}

// The bytes of a worked example of sstable/FORMAT.md: `cells` written
// uncompressed with 10 bloom bits per key, the ids 1 to 4 and a fixed
// creation time, in `format_version`.
std::string WorkedExampleBytes(uint32_t format_version, const Model& cells) {
  test::ScratchDir dir("sst");
  FileSystem* fs = FileSystem::Default();
  const std::string path = dir.Join("example.sst");
  TableBuilderOptions o{.compression = CompressionType::kNone, .bloom_bits_per_key = 10};
  o.format_version = format_version;
  o.table_id = 1;
  o.tablet_id = 2;
  o.locality_group_id = 3;
  o.file_number = 4;
  o.creation_time = 1700000000;
  std::string bytes;
  EXPECT_OK(test::WriteTable(fs, path, o, cells));
  EXPECT_OK(ReadFileToString(fs, path, &bytes));
  return bytes;
}

// The worked example of sstable/FORMAT.md, byte for byte.
TEST(TableTest, WorkedExampleOfFormatDoc) {
  std::string key;
  AppendCellKey(&key, "r1", 1, "q", 5, 7, CellType::kPut);
  const std::string bytes = WorkedExampleBytes(kFormatVersion1, Model{{key, "v1"}});
  // The cell key at 0x0003..0x001b: mc("r1"), family 1, mc("q"), ~5, ~(7 << 8 | put).
  const std::string cell_key = "723100010001710001fffffffffffffffafffffffffffff8fe";
  const std::string expected =
      // data block, handle (0, 38)
      "001902" +  // shared 0, non_shared 25, value_length 2
      cell_key +
      "7631"                            // value "v1"
      "00000000"                        // restart[0] = 0
      "01000000"                        // num_restarts 1
      "00faf7c103"                      // trailer: type none, checksum
                                        // filter block, handle (43, 22)
      "09000000"                        // row_filter_length 9
      "000000802449020007"              // row bloom
      "000024491200000007"              // column bloom
      "0070f803f5"                      // trailer
                                        // index block, handle (70, 14)
      "000102730026"                    // key "s", handle (0, 38)
      "0000000001000000"                // restart[0] = 0, num_restarts 1
      "00296ba93c"                      // trailer
                                        // properties block, handle (89, 155)
      "010101"                          // format_version 1
      "020101030101040100050100060100"  // cells 1, puts 1, delete_* 0
      "070101080101"                    // rows 1, columns 1
      "0901190a0102"                    // raw_key_bytes 25, raw_value_bytes 2
      "0b01010c012b0d01130e011b"        // data_blocks, data_bytes, index_bytes, filter_bytes
      "0f0105100105110107120107"        // timestamps 5..5, sequences 7..7
      "1302723114027231"                // first_row "r1", last_row "r1"
      "1519" +                          // smallest_key
      cell_key +
      "1619" + cell_key +                 // largest_key
      "1701011801021901031a0104"          // table 1, tablet 2, group 3, file 4
      "1b0580e2cfaa06"                    // creation_time 1700000000
      "1c01001d0103"                      // compression none, level 3
      "1e038080011f011020010a"            // block_size 16384, restart 16, bloom 10
      "210101"                            // family_ids: 1
      "003add66be"                        // trailer
                                          // footer
      "2b000000000000001600000000000000"  // filter handle (43, 22)
      "46000000000000000e00000000000000"  // index handle (70, 14)
      "59000000000000009b00000000000000"  // properties handle (89, 155)
      "01000000"                          // format_version 1
      "8bbbcbe6"                          // footer checksum
      "5354524154535354";                 // magic "STRATSST"
  EXPECT_EQ(bytes.size(), 313u);
  EXPECT_EQ(HexBytes(bytes), expected);
}

// The version-2 worked example of sstable/FORMAT.md, byte for byte.
TEST(TableTest, WorkedExampleOfFormatDocVersion2) {
  std::string put, del;
  AppendCellKey(&put, "r1", 1, "q", 5, 7, CellType::kPut);
  AppendCellKey(&del, "r1", 1, "q", 4, 9, CellType::kDeleteCell);
  const std::string bytes = WorkedExampleBytes(kFormatVersion2, Model{{put, "v1"}, {del, ""}});
  const std::string put_key = "723100010001710001fffffffffffffffafffffffffffff8fe";
  const std::string del_key = "723100010001710001fffffffffffffffbfffffffffffff6fd";
  const std::string expected =
      // data block, handle (0, 43)
      "001902" +    // restart entry: shared 0, non_shared 25, value_length 2
      put_key +     // the whole cell key
      "7631"        // value "v1"
      "090000"      // shared 9 (the column), non_shared 0, value_length 0
      "01"          // ts_delta: zigzag(4 - 5) = 1
      "22"          // seq_type: zigzag(9 - 7) << 3 | 2 (delete cell)
      "00000000"    // restart[0] = 0
      "01000000"    // num_restarts 1
      "00f917e3b4"  // trailer
                    // filter block, handle (48, 69)
      "41000000"    // row_filter_length 65; no column filter
      "0000000000000000000000040000000004002000000000000080000000000000"
      "0100000000010000000000000000000000000000000000000000000000000000"  // one line
      "06"                                                                // 6 probes
      "008658a74d"                                                        // trailer
      // index block, handle (122, 14)
      "00010273002b"  // key "s", handle (0, 43)
      "0000000001000000"
      "00a1398031"
      // properties block, handle (141, 155)
      "010102"                          // format_version 2
      "020102030101040101050100060100"  // cells 2, puts 1, delete_cells 1, others 0
      "070101080101"                    // rows 1, columns 1
      "0901320a0102"                    // raw_key_bytes 50, raw_value_bytes 2
      "0b01010c01300d01130e014a"        // data_blocks 1, data_bytes 48, index 19, filter 74
      "0f0104100105110107120109"        // timestamps 4..5, sequences 7..9
      "1302723114027231"                // first_row, last_row "r1"
      "1519" +
      put_key + "1619" + del_key +        // smallest_key, largest_key
      "1701011801021901031a0104"          // table 1, tablet 2, group 3, file 4
      "1b0580e2cfaa06"                    // creation_time 1700000000
      "1c01001d0103"                      // compression none, level 3
      "1e038080011f011020010a"            // block_size 16384, restart 16, bloom 10
      "210101"                            // family_ids: 1
      "00c51c7d73"                        // trailer
                                          // footer
      "30000000000000004500000000000000"  // filter handle (48, 69)
      "7a000000000000000e00000000000000"  // index handle (122, 14)
      "8d000000000000009b00000000000000"  // properties handle (141, 155)
      "02000000"                          // format_version 2
      "18675e42"                          // footer checksum
      "5354524154535354";                 // magic "STRATSST"
  EXPECT_EQ(bytes.size(), 365u);
  EXPECT_EQ(HexBytes(bytes), expected);
}

// The version-3 worked example of sstable/FORMAT.md, byte for byte.
TEST(TableTest, WorkedExampleOfFormatDocVersion3) {
  ASSERT_EQ(TableBuilderOptions().format_version, kFormatVersion3);  // the default
  std::string put1, del1, put2;
  AppendCellKey(&put1, "r1", 1, "q", 5, 7, CellType::kPut);
  AppendCellKey(&del1, "r1", 1, "q", 4, 9, CellType::kDeleteCell);
  AppendCellKey(&put2, "r2", 1, "q", 5, 8, CellType::kPut);
  const std::string bytes =
      WorkedExampleBytes(kFormatVersion3, Model{{put1, "v1"}, {del1, ""}, {put2, "v2"}});
  const std::string put1_key = "723100010001710001fffffffffffffffafffffffffffff8fe";
  const std::string put2_key = "723200010001710001fffffffffffffffafffffffffffff7fe";
  const std::string expected =
      // data block, handle (0, 52)
      "001902" +    // restart entry: shared 0, non_shared 25, value_length 2
      put1_key +    // the whole cell key
      "7631"        // value "v1"
      "090000"      // shared 9 (the whole column), non_shared 0, value_length 0,
                    // so no shared suffix length
      "01"          // ts_delta: zigzag(4 - 5) = 1
      "22"          // seq_type: zigzag(9 - 7) << 3 | 2 (delete cell)
      "010102"      // shared 1 ("r"), non_shared 1, value_length 2
      "32"          // the column's middle byte, "2"
      "07"          // shared suffix 7: the row's terminator, family, mc("q")
      "02"          // ts_delta: zigzag(5 - 4) = 2
      "09"          // seq_type: zigzag(8 - 9) << 3 | 1 (put)
      "7632"        // value "v2"
      "00000000"    // restart[0] = 0
      "01000000"    // num_restarts 1
      "00dd690958"  // trailer
                    // filter block, handle (57, 69)
      "41000000"    // row_filter_length 65; no column filter (2 rows, 2 columns)
      "0000000000000000000000040000000004022000000000000180000000000000"
      "0100000000010000000000000001000000000080000000000008008000000000"  // one line
      "06"                                                                // 6 probes
      "0029ed59d6"                                                        // trailer
      // index block, handle (131, 14)
      "000102730034"  // key "s", handle (0, 52)
      "0000000001000000"
      "00fbadbbb4"
      // properties block, handle (150, 155)
      "010103"                          // format_version 3
      "020103030102040101050100060100"  // cells 3, puts 2, delete_cells 1, others 0
      "070102080102"                    // rows 2, columns 2
      "09014b0a0104"                    // raw_key_bytes 75, raw_value_bytes 4
      "0b01010c01390d01130e014a"        // data_blocks 1, data_bytes 57, index 19, filter 74
      "0f0104100105110107120109"        // timestamps 4..5, sequences 7..9
      "1302723114027232"                // first_row "r1", last_row "r2"
      "1519" +
      put1_key + "1619" + put2_key +      // smallest_key, largest_key
      "1701011801021901031a0104"          // table 1, tablet 2, group 3, file 4
      "1b0580e2cfaa06"                    // creation_time 1700000000
      "1c01001d0103"                      // compression none, level 3
      "1e038080011f011020010a"            // block_size 16384, restart 16, bloom 10
      "210101"                            // family_ids: 1
      "00d353c734"                        // trailer
                                          // footer
      "39000000000000004500000000000000"  // filter handle (57, 69)
      "83000000000000000e00000000000000"  // index handle (131, 14)
      "96000000000000009b00000000000000"  // properties handle (150, 155)
      "03000000"                          // format_version 3
      "e12bec0a"                          // footer checksum
      "5354524154535354";                 // magic "STRATSST"
  EXPECT_EQ(bytes.size(), 374u);
  EXPECT_EQ(HexBytes(bytes), expected);
}

}  // namespace
}  // namespace strata::sstable
