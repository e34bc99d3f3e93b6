// TableFileWriter: the one writer of flush and compaction outputs. A finished
// file is whole, readable and described exactly by its FileMeta; a file given
// up or failed is gone from disk.
#include "engine/table_file_writer.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "common/cell_key.h"
#include "common/fault_injection_fs.h"
#include "common/file_system.h"
#include "sstable/table_cache.h"
#include "sstable/table_reader.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::engine {
namespace {

// A table of id 7 with one tablet, id 9.
struct OneTablet {
  OneTablet() {
    table.id = 7;
    table.name = "tab";
    tablet.id = 9;
    tablet.table = &table;
  }
  TableState table;
  TabletState tablet;
};

std::string Key(const std::string& row, uint64_t timestamp, SequenceNumber sequence) {
  std::string key;
  AppendCellKey(&key, row, /*family=*/1, "q", timestamp, sequence, CellType::kPut);
  return key;
}

TEST(TableFileWriterTest, FinishedFileIsDescribedByItsMeta) {
  test::ScratchDir dir("writer");
  FileSystem* fs = FileSystem::Default();
  OneTablet t;
  TableFileWriter writer(fs, dir.path());
  LocalityGroupOptions options{.name = "g"};
  ASSERT_OK(writer.Open(/*number=*/12, t.tablet, /*group=*/3, options));
  ASSERT_TRUE(writer.is_open());
  // Rows ascending; sequences in no order, so the meta must take the range.
  ASSERT_OK(writer.Add(Key("a", 5, 40), "v1"));
  ASSERT_OK(writer.Add(Key("b", 5, 10), "v2"));
  ASSERT_OK(writer.Add(Key("c", 5, 70), "v3"));
  ASSERT_OK(writer.Finish());
  EXPECT_FALSE(writer.is_open());

  const FileMeta& meta = writer.meta();
  EXPECT_EQ(meta.number, 12u);
  EXPECT_EQ(meta.entries, 3u);
  EXPECT_EQ(meta.smallest, Key("a", 5, 40));
  EXPECT_EQ(meta.largest, Key("c", 5, 70));
  EXPECT_EQ(meta.min_sequence, 10u);
  EXPECT_EQ(meta.max_sequence, 70u);
  const std::string path = sstable::TableFileName(dir.path(), 12);
  auto size = fs->GetFileSize(path);
  ASSERT_OK(size);
  EXPECT_EQ(meta.size, *size);

  // The file is the group's table: its ids, and the three cells.
  std::unique_ptr<RandomAccessFile> file;
  ASSERT_OK(fs->NewRandomAccessFile(path, &file));
  auto reader = sstable::TableReader::Open(sstable::TableReaderOptions(), std::move(file),
                                           *size, path);
  ASSERT_OK(reader);
  EXPECT_EQ((*reader)->properties().table_id, 7u);
  EXPECT_EQ((*reader)->properties().tablet_id, 9u);
  EXPECT_EQ((*reader)->properties().locality_group_id, 3u);
  std::unique_ptr<InternalIterator> it = (*reader)->NewIterator();
  int n = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next()) n++;
  ASSERT_OK(it->status());
  EXPECT_EQ(n, 3);

  // A finished file is the caller's: Abandon leaves it alone.
  writer.Abandon();
  EXPECT_TRUE(fs->FileExists(path));
}

TEST(TableFileWriterTest, AbandonDeletesAnUnfinishedFile) {
  test::ScratchDir dir("writer");
  FileSystem* fs = FileSystem::Default();
  OneTablet t;
  TableFileWriter writer(fs, dir.path());
  ASSERT_OK(writer.Open(4, t.tablet, 0, LocalityGroupOptions{.name = "g"}));
  ASSERT_OK(writer.Add(Key("a", 1, 1), "v"));
  const std::string path = sstable::TableFileName(dir.path(), 4);
  EXPECT_TRUE(fs->FileExists(path));
  writer.Abandon();
  EXPECT_FALSE(writer.is_open());
  EXPECT_FALSE(fs->FileExists(path));

  // The writer takes the next file afresh: its meta starts over.
  ASSERT_OK(writer.Open(5, t.tablet, 0, LocalityGroupOptions{.name = "g"}));
  ASSERT_OK(writer.Add(Key("z", 1, 3), "v"));
  ASSERT_OK(writer.Finish());
  EXPECT_EQ(writer.meta().number, 5u);
  EXPECT_EQ(writer.meta().entries, 1u);
  EXPECT_EQ(writer.meta().smallest, Key("z", 1, 3));
}

TEST(TableFileWriterTest, FailedFinishLeavesTheFileForAbandonToDelete) {
  test::ScratchDir dir("writer");
  FaultInjectionFileSystem fs;
  OneTablet t;
  TableFileWriter writer(&fs, dir.path());
  ASSERT_OK(writer.Open(6, t.tablet, 0, LocalityGroupOptions{.name = "g"}));
  ASSERT_OK(writer.Add(Key("a", 1, 1), "v"));
  fs.FailAfter(FaultOp::kSync, 0, 1, EIO);
  Status s = writer.Finish();
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_FALSE(writer.is_open());
  const std::string path = sstable::TableFileName(dir.path(), 6);
  EXPECT_TRUE(fs.FileExists(path));
  writer.Abandon();
  EXPECT_FALSE(fs.FileExists(path));
}

}  // namespace
}  // namespace strata::engine
