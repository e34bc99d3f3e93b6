// strata-sst run as a child process on good, truncated and damaged files and
// with bad arguments: exit codes and messages.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "common/cell_key.h"
#include "common/file_system.h"
#include "common/random.h"
#include "sstable/table_builder.h"
#include "sstable/table_reader.h"
#include "tool_test_util.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata {
namespace {

using test::ReadAll;
using test::RunResult;
using test::WriteAll;

using tool_test::Contains;
using tool_test::Quote;

RunResult RunTool(const std::string& args) { return tool_test::Run(STRATA_SST_TOOL, args); }

class StrataSstTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.Join("000042.sst");
    FileSystem* fs = FileSystem::Default();
    std::unique_ptr<WritableFile> file;
    ASSERT_OK(fs->NewWritableFile(path_, FileOpenOptions{}, &file));
    sstable::TableBuilderOptions o;
    o.block_size = 512;
    o.compression = sstable::CompressionType::kZstd;
    o.file_number = 42;
    o.tablet_id = 7;
    sstable::TableBuilder b(o, file.get(), path_);
    Random rnd(1);
    for (int r = 0; r < 200; r++) {
      char row[16];
      std::snprintf(row, sizeof(row), "row%04d", r);
      for (int q = 0; q < 3; q++) {
        std::string k;
        AppendCellKey(&k, row, 1, "q" + std::to_string(q), 100 - q, 1000 + r, CellType::kPut);
        ASSERT_OK(b.Add(k, "value-" + std::to_string(r) + "-" + std::to_string(q)));
      }
    }
    std::string k;
    AppendCellKey(&k, std::string("z\0\xff", 3), 2, "", 5, 1, CellType::kDeleteRow);
    ASSERT_OK(b.Add(k, ""));
    ASSERT_OK(b.Finish());
    ASSERT_OK(file->Close());
    good_ = ReadAll(path_);
    auto f = FileSystem::Default();
    std::unique_ptr<RandomAccessFile> raf;
    ASSERT_OK(f->NewRandomAccessFile(path_, &raf));
    auto t = sstable::TableReader::Open({}, std::move(raf), good_.size(), path_);
    ASSERT_OK(t);
    ASSERT_OK((*t)->ListBlocks(&blocks_));
  }

  test::ScratchDir dir_{"sst-tool"};
  std::string path_;
  std::string good_;
  std::vector<sstable::TableReader::BlockInfo> blocks_;
};

TEST_F(StrataSstTest, Help) {
  RunResult r = RunTool("--help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("usage: strata-sst"), std::string::npos);
  EXPECT_NE(r.out.find("exit status"), std::string::npos);
}

TEST_F(StrataSstTest, BadArguments) {
  for (const std::string& args :
       {std::string(""), std::string("props"), std::string("frobnicate ") + Quote(path_),
        "props --nope " + Quote(path_), "scan --limit=abc " + Quote(path_),
        "props --hex " + Quote(path_), "dump-block " + Quote(path_),
        "dump-block --index=1 --offset=0 " + Quote(path_),
        "dump-block --index=100000 " + Quote(path_), "dump-block --offset=3 " + Quote(path_),
        "props " + Quote(path_) + " extra", "scan --from=\\\\q " + Quote(path_),
        // Decimal only: no sign, space or 0x; no size that wraps past the end.
        "dump-block --index=0x1 " + Quote(path_), "scan --limit=' 1' " + Quote(path_),
        "scan --limit=+1 " + Quote(path_),
        "dump-block --offset=0 --size=18446744073709551611 " + Quote(path_),
        "dump-block --offset=0 --size=" + std::to_string(good_.size() - 4) + " " + Quote(path_)}) {
    RunResult r = RunTool(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.out;
    EXPECT_NE(r.out.find("strata-sst: "), std::string::npos) << args;
  }
  RunResult r = RunTool("props " + Quote(dir_.Join("missing.sst")));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("missing.sst"), std::string::npos) << r.out;
  // A FIFO (whose open would block until a writer came) is refused at once.
  const std::string fifo = dir_.Join("fifo.sst");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& args :
       {"props " + Quote(fifo), "dump-block --offset=0 --size=1 " + Quote(fifo)}) {
    r = RunTool(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.out;
    EXPECT_NE(r.out.find("not a regular file"), std::string::npos) << r.out;
  }
}

TEST_F(StrataSstTest, Props) {
  RunResult r = RunTool("props " + Quote(path_));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("cells: 601"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tablet_id: 7"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("file_number: 42"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("first_row: 'row0000'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("last_row: 'z\\x00\\xff'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("compression: zstd"), std::string::npos) << r.out;
}

TEST_F(StrataSstTest, Scan) {
  RunResult r = RunTool("scan " + Quote(path_));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("'row0000' f1:'q0' @100 #1000 put => 'value-0-0'"), std::string::npos)
      << r.out.substr(0, 500);
  EXPECT_NE(r.out.find("'z\\x00\\xff' f2:'' @5 #1 del-row => ''"), std::string::npos);
  EXPECT_NE(r.out.find("601 cells"), std::string::npos);

  r = RunTool("scan --from=row0010 --to=row0012 " + Quote(path_));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("6 cells"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("row0009"), std::string::npos);
  EXPECT_EQ(r.out.find("row0012"), std::string::npos);

  r = RunTool("scan --limit=2 --hex --from=z\\\\x00 " + Quote(path_));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("7a00ffff0001"), std::string::npos) << r.out;  // mc("z\0\xff")
  EXPECT_NE(r.out.find("1 cells"), std::string::npos) << r.out;

  // Output that cannot be written is an error, not a success.
  r = RunTool("scan " + Quote(path_) + " >/dev/full");
  EXPECT_EQ(r.exit_code, 2) << r.out;
}

TEST_F(StrataSstTest, VerifyAndLayout) {
  RunResult r = RunTool("verify " + Quote(path_));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("OK"), std::string::npos);
  r = RunTool("layout " + Quote(path_));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  for (const char* word : {"data", "index", "filter", "properties", "footer", "probes"}) {
    EXPECT_NE(r.out.find(word), std::string::npos) << word << "\n" << r.out;
  }
}

TEST_F(StrataSstTest, DumpBlock) {
  RunResult r = RunTool("dump-block --index=0 " + Quote(path_));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("00000000 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("checksum OK"), std::string::npos) << r.out;
  const auto& idx = blocks_[blocks_.size() - 2];
  r = RunTool("dump-block --offset=" + std::to_string(idx.handle.offset) + " " + Quote(path_));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("kind index"), std::string::npos) << r.out;
  r = RunTool("dump-block --offset=" + std::to_string(idx.handle.offset) +
          " --size=" + std::to_string(idx.handle.size) + " " + Quote(path_));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("as a index block"), std::string::npos) << r.out;
}

TEST_F(StrataSstTest, TruncatedFiles) {
  for (size_t len : {size_t{0}, size_t{10}, size_t{63}, size_t{64}, good_.size() / 2,
                     good_.size() - 1}) {
    WriteAll(path_, good_.substr(0, len));
    for (const char* cmd : {"props", "scan", "verify", "layout"}) {
      RunResult r = RunTool(std::string(cmd) + " " + Quote(path_));
      EXPECT_EQ(r.exit_code, 1) << cmd << " len " << len << "\n" << r.out;
      EXPECT_NE(r.out.find("Corruption"), std::string::npos) << r.out;
      EXPECT_NE(r.out.find("000042.sst"), std::string::npos) << r.out;
    }
  }
}

TEST_F(StrataSstTest, GarbageFile) {
  Random rnd(3);
  WriteAll(path_, rnd.RandomBytes(5000));
  RunResult r = RunTool("verify " + Quote(path_));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("magic"), std::string::npos) << r.out;
}

TEST_F(StrataSstTest, FlippedBits) {
  // One flip in each block kind and in the footer: verify names what is broken.
  std::vector<std::pair<uint64_t, std::string>> spots;
  for (const auto& b : blocks_) {
    spots.push_back({b.handle.offset + b.handle.size / 2,
                     std::string(sstable::BlockKindName(b.kind)) + " block at offset " +
                         std::to_string(b.handle.offset)});
    if (b.kind == sstable::BlockKind::kData) continue;
  }
  spots.push_back({good_.size() - 30, "footer at offset"});
  for (const auto& [at, want] : spots) {
    std::string bad = good_;
    bad[at] = static_cast<char>(bad[at] ^ 0x10);
    WriteAll(path_, bad);
    RunResult r = RunTool("verify " + Quote(path_));
    EXPECT_EQ(r.exit_code, 1) << at << "\n" << r.out;
    EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
  }
  // A damaged data block: scan prints what it can, then fails with code 1.
  const auto& last_data = blocks_[blocks_.size() - 4];
  ASSERT_EQ(last_data.kind, sstable::BlockKind::kData);
  std::string bad = good_;
  bad[last_data.handle.offset + 2] ^= 1;
  WriteAll(path_, bad);
  RunResult r = RunTool("scan " + Quote(path_));
  EXPECT_EQ(r.exit_code, 1) << r.out.substr(r.out.size() > 300 ? r.out.size() - 300 : 0);
  EXPECT_NE(r.out.find("'row0000'"), std::string::npos);
  r = RunTool("dump-block --offset=" + std::to_string(last_data.handle.offset) + " " + Quote(path_));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("checksum mismatch"), std::string::npos) << r.out;
}

TEST_F(StrataSstTest, PropsAndLayoutOfATableThatCannotBeOpened) {
  // A flip in the index, the filter or the properties block: the table
  // cannot be opened, but props and layout still show what the footer points
  // to, which block is bad, and the properties while their block is sound.
  for (sstable::BlockKind kind :
       {sstable::BlockKind::kIndex, sstable::BlockKind::kFilter, sstable::BlockKind::kProperties}) {
    const std::string name = sstable::BlockKindName(kind);
    SCOPED_TRACE(name);
    const sstable::TableReader::BlockInfo* block = nullptr;
    for (const auto& b : blocks_) {
      if (b.kind == kind) block = &b;
    }
    ASSERT_NE(block, nullptr);
    std::string bad = good_;
    bad[block->handle.offset + block->handle.size / 2] ^= 0x10;
    WriteAll(path_, bad);
    const std::string bad_line = name + " ";
    for (const char* cmd : {"props", "layout"}) {
      RunResult r = RunTool(std::string(cmd) + " " + Quote(path_));
      EXPECT_EQ(r.exit_code, 1) << cmd << "\n" << r.out;
      EXPECT_TRUE(Contains(r.out, "the table cannot be opened")) << cmd << "\n" << r.out;
      EXPECT_TRUE(Contains(r.out, "offset " + std::to_string(block->handle.offset) + " size " +
                                      std::to_string(block->handle.size) + ": Corruption"))
          << cmd << "\n"
          << r.out;
      EXPECT_TRUE(Contains(r.out, "footer.format_version")) << cmd << "\n" << r.out;
      const bool props_shown = Contains(r.out, "max_timestamp: 100");
      EXPECT_EQ(props_shown, std::string(cmd) == "props" && kind != sstable::BlockKind::kProperties)
          << cmd << "\n"
          << r.out;
    }
  }
}

}  // namespace
}  // namespace strata
