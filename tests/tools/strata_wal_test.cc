// strata-wal run as a child process on good logs, truncated segments, flipped
// bits, garbage, empty files, missing paths and bad arguments: exit codes and
// messages, and that it never changes a file.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/cell_key.h"
#include "common/coding.h"
#include "common/file_system.h"
#include "common/random.h"
#include "engine/log_record.h"
#include "strata/engine.h"
#include "tool_test_util.h"
#include "util/status_matchers.h"
#include "util/test_util.h"
#include "wal/log_format.h"
#include "wal/log_reader.h"
#include "wal/log_writer.h"

namespace strata {
namespace {

using test::ReadAll;
using test::RunResult;
using test::WriteAll;

using tool_test::Contains;
using tool_test::Quote;

RunResult RunTool(const std::string& args) { return tool_test::Run(STRATA_WAL_TOOL, args); }

constexpr uint64_t kTablet = 7;
constexpr int kRows = 120;

std::string RowKey(int i) {
  char b[16];
  std::snprintf(b, sizeof(b), "row%04d", i);
  return b;
}

// A log of engine records in <dir>/wal, as an engine directory holds it: small
// segments so that it has several, and a few large records that span blocks
// and segments.
class StrataWalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    log_dir_ = dir_.Join("wal");
    wal::LogOptions o;
    o.use_io_uring = false;
    o.segment_size = 64 * 1024;
    o.recycle_segments = false;
    std::unique_ptr<wal::LogWriter> w;
    ASSERT_OK(wal::LogWriter::Open(o, log_dir_, /*next_sequence=*/1, nullptr, &w));
    for (int i = 0; i < kRows; i++) {
      engine::LogRecordBuilder b;
      const std::string row = RowKey(i);
      const std::string value =
          i % 20 == 10 ? std::string(40000, 'x') : "value-" + std::to_string(i);
      std::vector<engine::CellEntry> entries;
      entries.push_back(
          {CellType::kPut, 1, Slice("q"), 100 + static_cast<uint64_t>(i), Slice(value)});
      if (i % 10 == 0) entries.push_back({CellType::kDeleteColumn, 2, Slice("old"), 50, Slice()});
      if (i == 17) {
        entries.push_back({CellType::kDeleteRow, kRowMarkerFamily, Slice(), 10, Slice()});
      }
      b.AddRow(kTablet, row, entries);
      if (i == 5) b.AddRow(kTablet + 1, "other\x01", {{CellType::kDeleteCell, 3, "c", 9, {}}});
      wal::WriteRequest req;
      req.payload = b.Finish();
      req.sequence_count = b.entry_count();
      req.sync = true;
      ASSERT_OK(w->Write(&req));
    }
    ASSERT_OK(w->Close());

    std::unique_ptr<wal::LogReader> reader;
    ASSERT_OK(wal::LogReader::OpenDirectory(FileSystem::Default(), log_dir_, &reader));
    wal::LogRecord rec;
    while (reader->ReadRecord(&rec)) records_.push_back(rec);
    ASSERT_OK(reader->status());
    ASSERT_EQ(records_.size(), static_cast<size_t>(kRows));
    segments_ = reader->segment_numbers();
    ASSERT_GE(segments_.size(), 3u);
    for (uint64_t n : segments_) originals_.push_back(ReadAll(SegmentPath(n)));
  }

  std::string SegmentPath(uint64_t n) const { return log_dir_ + "/" + wal::SegmentFileName(n); }

  // Every segment file still holds its original bytes.
  void ExpectUnchanged() {
    for (size_t i = 0; i < segments_.size(); i++) {
      EXPECT_EQ(ReadAll(SegmentPath(segments_[i])), originals_[i]) << SegmentPath(segments_[i]);
    }
  }

  test::ScratchDir dir_{"wal-tool"};
  std::string log_dir_;
  std::vector<wal::LogRecord> records_;  // positions only (payloads are gone)
  std::vector<uint64_t> segments_;
  std::vector<std::string> originals_;
};

TEST_F(StrataWalTest, Help) {
  RunResult r = RunTool("--help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(Contains(r.out, "usage: strata-wal"));
  EXPECT_TRUE(Contains(r.out, "exit status"));
  for (const char* word : {"dump", "verify", "stats", "--decode", "--hex", "--fragments",
                           "--max-value", "--mode", "point-in-time"}) {
    EXPECT_TRUE(Contains(r.out, word)) << word;
  }
}

TEST_F(StrataWalTest, BadArguments) {
  const std::string d = Quote(dir_.path());
  for (const std::string& args :
       {std::string(""), std::string("dump"), "frobnicate " + d, "dump --nope " + d,
        "verify --mode=sideways " + d, std::string("verify --mode"), "verify --decode " + d,
        "dump --decode --max-value=abc " + d, "dump --max-value=3 " + d, "dump " + d + " extra",
        "dump --fragments --decode " + d, "stats --hex " + d, "dump --raw=1 " + d}) {
    RunResult r = RunTool(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.out;
    EXPECT_TRUE(Contains(r.out, "strata-wal: ")) << args << "\n" << r.out;
  }
}

TEST_F(StrataWalTest, MissingPathAndEmptyDirectory) {
  for (const char* cmd : {"dump", "verify", "stats"}) {
    RunResult r = RunTool(std::string(cmd) + " " + Quote(dir_.Join("missing")));
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_TRUE(Contains(r.out, "missing: no such file or directory")) << r.out;
  }
  const std::string empty = dir_.Join("empty-dir");
  ASSERT_OK(FileSystem::Default()->CreateDirIfMissing(empty));
  RunResult r = RunTool("verify " + Quote(empty));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_TRUE(Contains(r.out, "no log segments")) << r.out;
  // A FIFO (whose open would block until a writer came) is refused at once.
  const std::string fifo = dir_.Join("0000000001.log");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  r = RunTool("verify " + Quote(fifo));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_TRUE(Contains(r.out, "not a regular file")) << r.out;
}

TEST_F(StrataWalTest, GoodLog) {
  // The engine directory, the log directory and the mode spelled both ways.
  for (const std::string& path : {dir_.path(), log_dir_}) {
    for (const std::string& mode :
         {std::string(""), std::string(" --mode absolute"), std::string(" --mode=point-in-time")}) {
      RunResult r = RunTool("verify" + mode + " " + Quote(path));
      EXPECT_EQ(r.exit_code, 0) << r.out;
      EXPECT_TRUE(Contains(r.out, "OK: the log is clean")) << r.out;
      EXPECT_TRUE(Contains(r.out, "records: 120")) << r.out;
      EXPECT_TRUE(Contains(r.out, "sequences: 1 .. 134 (134)")) << r.out;
      EXPECT_TRUE(Contains(r.out, std::to_string(segments_.size()) + " segments")) << r.out;
      EXPECT_TRUE(Contains(r.out, "would replay 120 records")) << r.out;
    }
  }

  RunResult r = RunTool("dump " + Quote(dir_.path()));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "record segment=1 offset=44 seq=1 count=2 bytes=")) << r.out;
  EXPECT_TRUE(Contains(r.out, "120 records, sequences 1 .. 134 (134)")) << r.out;
  EXPECT_TRUE(Contains(r.out, "first_sequence 1")) << r.out;
  EXPECT_FALSE(Contains(r.out, "row0001"));  // not decoded

  r = RunTool("dump --decode --max-value=4 " + Quote(log_dir_));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "row tablet=7 key='row0001' entries=1")) << r.out;
  EXPECT_TRUE(Contains(r.out, "put family=1 qualifier='q' ts=101 value='valu'... (7 bytes)"))
      << r.out;
  EXPECT_TRUE(Contains(r.out, "delete-column family=2 qualifier='old' ts=50")) << r.out;
  EXPECT_TRUE(Contains(r.out, "delete-row family=0 qualifier='' ts=10")) << r.out;
  EXPECT_TRUE(Contains(r.out, "row tablet=8 key='other\\x01'")) << r.out;
  EXPECT_TRUE(Contains(r.out, "delete-cell family=3 qualifier='c' ts=9")) << r.out;
  EXPECT_TRUE(Contains(r.out, "row tablet=7 key='row0119'")) << r.out;

  r = RunTool("dump --decode " + Quote(log_dir_));
  EXPECT_TRUE(Contains(r.out, "value='value-1'")) << r.out;

  r = RunTool("dump --hex " + Quote(log_dir_));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "    000000  01 01 07 07 72 6f 77 30")) << r.out;  // row0000

  r = RunTool("dump --fragments " + Quote(log_dir_));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "fragment segment=1 offset=44 type=FULL length=")) << r.out;
  EXPECT_TRUE(Contains(r.out, "type=FIRST")) << r.out;
  EXPECT_TRUE(Contains(r.out, "type=LAST")) << r.out;
  EXPECT_TRUE(Contains(r.out, "durable_before")) << r.out;

  r = RunTool("stats " + Quote(dir_.path()));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "records: 120")) << r.out;
  EXPECT_TRUE(Contains(r.out, "entries: put 120, delete-cell 1, delete-column 12, delete-row 1"))
      << r.out;
  EXPECT_TRUE(Contains(r.out, "tablet 7: rows 120, entries 133")) << r.out;
  EXPECT_TRUE(Contains(r.out, "tablet 8: rows 1, entries 1")) << r.out;
  EXPECT_TRUE(Contains(r.out, "write groups started after a sync (durable_before): 120")) << r.out;

  // One segment on its own: the first one ends in a record that goes on in
  // the next segment, which is no damage in any mode, only a note.
  r = RunTool("verify " + Quote(SegmentPath(segments_.back())));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "OK: the log is clean")) << r.out;
  for (const std::string cmd : {"dump", "verify --mode=absolute", "stats --mode=absolute"}) {
    r = RunTool(cmd + " " + Quote(SegmentPath(segments_.front())));
    EXPECT_EQ(r.exit_code, 0) << cmd << "\n" << r.out;
    EXPECT_TRUE(Contains(r.out, "OK: the log is clean")) << cmd << "\n" << r.out;
    EXPECT_TRUE(Contains(r.out, "its last record goes on in the next segment")) << cmd << "\n"
                                                                                << r.out;
    EXPECT_FALSE(Contains(r.out, "torn tail")) << cmd << "\n" << r.out;
  }
  ExpectUnchanged();
}

TEST_F(StrataWalTest, MiddleSegmentCutShort) {
  // Cut a middle segment inside a record: the next segment's records were
  // durable, so the log is corrupt; the segment read alone cannot show that,
  // but its size, below the one its header gives, is noted.
  const uint64_t middle = segments_[1];
  const std::string path = SegmentPath(middle);
  const wal::LogRecord* cut = nullptr;
  for (const wal::LogRecord& rec : records_) {
    if (rec.begin.segment == middle) cut = &rec;  // the last that starts in it
  }
  ASSERT_NE(cut, nullptr);
  const uint64_t cut_at = cut->begin.offset + 15;
  std::filesystem::resize_file(path, cut_at);
  originals_[1] = ReadAll(path);

  RunResult r = RunTool("verify " + Quote(log_dir_));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(Contains(r.out, "CORRUPTION")) << r.out;

  r = RunTool("verify " + Quote(path));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "torn tail")) << r.out;
  EXPECT_TRUE(Contains(
      r.out, "the file is " + std::to_string(cut_at) + " bytes, less than the segment size"))
      << r.out;
  EXPECT_TRUE(Contains(r.out, "if a later segment exists")) << r.out;
  ExpectUnchanged();
}

TEST_F(StrataWalTest, TruncatedSegment) {
  // Cut the last segment in the middle of the last record: a torn tail.
  const wal::LogRecord& last = records_.back();
  ASSERT_EQ(last.begin.segment, segments_.back());
  const std::string path = SegmentPath(last.begin.segment);
  const uint64_t cut_at = last.begin.offset + 15;
  std::filesystem::resize_file(path, cut_at);
  originals_.back() = ReadAll(path);

  RunResult r = RunTool("verify " + Quote(dir_.path()));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "torn tail")) << r.out;
  EXPECT_TRUE(Contains(r.out, "OK in torn-tail mode")) << r.out;
  EXPECT_TRUE(Contains(r.out, "records: 119")) << r.out;
  EXPECT_TRUE(Contains(r.out, "torn tail drops everything from " + path + " at offset " +
                                  std::to_string(last.begin.offset)))
      << r.out;
  EXPECT_TRUE(Contains(r.out, "would replay 119 records and drop everything from " + path))
      << r.out;

  r = RunTool("verify --mode=absolute " + Quote(dir_.path()));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(Contains(r.out, path)) << r.out;
  EXPECT_TRUE(Contains(r.out, "would fail")) << r.out;

  r = RunTool("verify --mode=point-in-time " + Quote(log_dir_));
  EXPECT_EQ(r.exit_code, 0) << r.out;

  for (const char* cmd : {"dump", "dump --decode", "dump --fragments", "stats"}) {
    r = RunTool(std::string(cmd) + " " + Quote(log_dir_));
    EXPECT_EQ(r.exit_code, 0) << cmd << "\n" << r.out;
    EXPECT_TRUE(Contains(r.out, "torn tail")) << cmd << "\n" << r.out;
  }

  // Truncated inside the segment header, and to nothing.
  for (uint64_t len : {uint64_t{20}, uint64_t{0}}) {
    std::filesystem::resize_file(path, len);
    originals_.back() = ReadAll(path);
    r = RunTool("verify --mode=absolute " + Quote(log_dir_));
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_TRUE(Contains(r.out, path + " at offset 0")) << r.out;
    EXPECT_TRUE(Contains(r.out, "bad segment header")) << r.out;
    r = RunTool("dump " + Quote(path));
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.out;
    EXPECT_TRUE(Contains(r.out, path)) << r.out;
  }
  ExpectUnchanged();
}

TEST_F(StrataWalTest, FlippedBitInTheMiddle) {
  // A record in the first segment, well before the end of the log.
  const wal::LogRecord& mid = records_[12];
  ASSERT_EQ(mid.fragments, 1u);
  const std::string path = SegmentPath(mid.begin.segment);
  const std::string pristine = ReadAll(path);
  std::string bytes = pristine;
  bytes[mid.begin.offset + 20] ^= 0x04;
  WriteAll(path, bytes);
  originals_[0] = bytes;
  const std::string where = path + " at offset " + std::to_string(mid.begin.offset);
  for (const std::string& args :
       {"verify " + Quote(dir_.path()), "verify --mode=point-in-time " + Quote(log_dir_),
        "dump " + Quote(log_dir_), "stats " + Quote(log_dir_),
        "dump --fragments " + Quote(log_dir_), "verify " + Quote(path)}) {
    RunResult r = RunTool(args);
    EXPECT_EQ(r.exit_code, 1) << args << "\n" << r.out;
    EXPECT_TRUE(Contains(r.out, "CORRUPTION (mid-log corruption)")) << args << "\n" << r.out;
    EXPECT_TRUE(Contains(r.out, where)) << args << "\n" << r.out;
    EXPECT_TRUE(Contains(r.out, "checksum")) << args << "\n" << r.out;
  }
  RunResult r = RunTool("dump " + Quote(log_dir_));
  EXPECT_TRUE(Contains(r.out, "12 records, sequences 1 .. 15 (15)")) << r.out;

  // A flip in the header of a later segment is mid-log corruption too.
  WriteAll(path, pristine);
  originals_[0] = pristine;
  const std::string second_path = SegmentPath(segments_[1]);
  std::string second = ReadAll(second_path);
  second[30] ^= 0x01;
  WriteAll(second_path, second);
  originals_[1] = second;
  r = RunTool("verify " + Quote(log_dir_));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(Contains(r.out, second_path + " at offset 0: bad segment header")) << r.out;
  ExpectUnchanged();
}

TEST_F(StrataWalTest, FlippedBitInTheLastRecord) {
  // Nothing follows the last record, so damage there reads as a torn tail
  // (wal/FORMAT.md, "What this means for a flipped bit").
  const wal::LogRecord& last = records_.back();
  const std::string path = SegmentPath(last.begin.segment);
  std::string bytes = ReadAll(path);
  bytes[last.begin.offset + 30] ^= 0x80;
  WriteAll(path, bytes);
  originals_.back() = bytes;
  RunResult r = RunTool("verify " + Quote(log_dir_));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "torn tail")) << r.out;
  EXPECT_TRUE(Contains(r.out, path + " at offset " + std::to_string(last.begin.offset))) << r.out;
  r = RunTool("verify --mode=absolute " + Quote(log_dir_));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(Contains(r.out, "checksum")) << r.out;
  ExpectUnchanged();
}

TEST_F(StrataWalTest, RandomFlipsNeverCrash) {
  Random rnd(test::TestSeed());
  const std::string path = SegmentPath(segments_[0]);
  for (int i = 0; i < 12; i++) {
    std::string bytes = originals_[0];
    const size_t at = rnd.Uniform(static_cast<uint32_t>(bytes.size()));
    bytes[at] ^= static_cast<char>(1 << rnd.Uniform(8));
    WriteAll(path, bytes);
    for (const char* cmd : {"verify", "dump --decode", "stats"}) {
      RunResult r = RunTool(std::string(cmd) + " " + Quote(log_dir_));
      EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << cmd << " flip at " << at << "\n"
                                                        << r.out;
      if (r.exit_code == 1) {
        EXPECT_TRUE(Contains(r.out, log_dir_)) << r.out;
      }
    }
  }
}

TEST_F(StrataWalTest, GarbageAndEmptyFiles) {
  Random rnd(5);
  const std::string garbage = rnd.RandomBytes(100000);
  // A file that is not named as a segment must look like one.
  WriteAll(dir_.Join("garbage.bin"), garbage);
  WriteAll(dir_.Join("empty.bin"), "");
  for (const char* cmd : {"dump", "verify", "stats"}) {
    RunResult r = RunTool(std::string(cmd) + " " + Quote(dir_.Join("garbage.bin")));
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_TRUE(Contains(r.out, "garbage.bin: not a log segment (no STRATAWL magic")) << r.out;
    r = RunTool(std::string(cmd) + " " + Quote(dir_.Join("empty.bin")));
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_TRUE(Contains(r.out, "empty.bin: not a log segment (the file is empty)")) << r.out;
  }
  // Right magic, garbage after it.
  WriteAll(dir_.Join("magic.bin"), "STRATAWL" + garbage);
  RunResult r = RunTool("verify " + Quote(dir_.Join("magic.bin")));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(Contains(r.out, "magic.bin at offset 0")) << r.out;

  // A segment file (by name) holding garbage or nothing, alone and as the
  // newest segment of the log.
  const std::string next = SegmentPath(segments_.back() + 1);
  const std::string alone_dir = dir_.Join("alone");
  ASSERT_OK(FileSystem::Default()->CreateDirIfMissing(alone_dir));
  const std::string alone = alone_dir + "/" + wal::SegmentFileName(3);
  for (const std::string& content : {garbage, std::string()}) {
    WriteAll(next, content);
    WriteAll(alone, content);
    for (const std::string& target : {log_dir_, next, alone, alone_dir}) {
      r = RunTool("verify --mode=absolute " + Quote(target));
      EXPECT_EQ(r.exit_code, 1) << target << "\n" << r.out;
      EXPECT_TRUE(Contains(r.out, "at offset 0: bad segment header")) << target << "\n" << r.out;
      for (const char* cmd : {"verify", "dump --decode", "dump --fragments --hex", "stats"}) {
        r = RunTool(std::string(cmd) + " " + Quote(target));
        EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << cmd << " " << target << "\n" << r.out;
        EXPECT_TRUE(Contains(r.out, "bad segment header")) << cmd << " " << target << "\n" << r.out;
      }
    }
  }
  EXPECT_EQ(ReadAll(alone), "");
  std::filesystem::remove(next);
  ExpectUnchanged();
}

TEST_F(StrataWalTest, OtherFormatVersion) {
  wal::SegmentHeader h;
  h.format_version = 2;
  h.segment_number = 1;
  h.segment_size = 64 * 1024;
  h.first_sequence = 1;
  std::string bytes(wal::kSegmentHeaderSize + 11, '\0');
  wal::EncodeSegmentHeader(h, bytes.data());
  const std::string path = dir_.Join(wal::SegmentFileName(1));
  WriteAll(path, bytes);
  for (const std::string& target : {path, dir_.path()}) {
    RunResult r = RunTool("verify " + Quote(target));
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_TRUE(Contains(r.out, "log format version 2")) << r.out;
  }
}

// A sequence skip (engine/LOG_RECORD.md) holds no rows: the tools show it
// and count its numbers apart from entries; one with bytes after its kind
// byte is corruption.
TEST_F(StrataWalTest, SequenceSkipRecords) {
  const std::string skip_dir = dir_.Join("skip");
  wal::LogOptions o;
  o.use_io_uring = false;
  std::unique_ptr<wal::LogWriter> w;
  ASSERT_OK(wal::LogWriter::Open(o, skip_dir, 1, nullptr, &w));
  auto write_row = [&](const std::string& row) {
    engine::LogRecordBuilder b;
    b.AddRow(kTablet, row, {{CellType::kPut, 1, Slice("q"), 5, Slice("v")}});
    wal::WriteRequest req;
    req.payload = b.Finish();
    req.sequence_count = b.entry_count();
    return w->Write(&req);
  };
  ASSERT_OK(write_row("before"));
  wal::WriteRequest skip;
  skip.payload = engine::SequenceSkipPayload();
  skip.sequence_count = 9;
  ASSERT_OK(w->Write(&skip));
  ASSERT_OK(write_row("after"));
  ASSERT_OK(w->Close());
  RunResult r = RunTool("verify " + Quote(skip_dir));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "sequences: 1 .. 11 (11)")) << r.out;
  EXPECT_TRUE(Contains(r.out, "row mutations: 2, entries: 2")) << r.out;
  EXPECT_TRUE(Contains(r.out, "sequence skips: 1 (9 sequence numbers)")) << r.out;
  r = RunTool("dump --decode " + Quote(skip_dir));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "seq=2 count=9 bytes=1 fragments=1 sequence-skip\n")) << r.out;
  r = RunTool("stats " + Quote(skip_dir));
  EXPECT_EQ(r.exit_code, 0) << r.out;

  const std::string bad_dir = dir_.Join("bad-skip");
  ASSERT_OK(wal::LogWriter::Open(o, bad_dir, 1, nullptr, &w));
  wal::WriteRequest bad;
  bad.payload = Slice("\x02x", 2);
  ASSERT_OK(w->Write(&bad));
  ASSERT_OK(w->Close());
  r = RunTool("verify " + Quote(bad_dir));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(Contains(r.out, "sequence skip with 1 trailing bytes")) << r.out;
}

TEST_F(StrataWalTest, PayloadsThatAreNotEngineRecords) {
  const std::string raw_dir = dir_.Join("raw");
  wal::LogOptions o;
  o.use_io_uring = false;
  o.segment_size = 64 * 1024;
  std::unique_ptr<wal::LogWriter> w;
  ASSERT_OK(wal::LogWriter::Open(o, raw_dir, 42, nullptr, &w));
  for (const char* p : {"hello", "world"}) {
    wal::WriteRequest req;
    req.payload = p;
    req.sequence_count = 3;
    ASSERT_OK(w->Write(&req));
  }
  ASSERT_OK(w->Close());
  RunResult r = RunTool("verify " + Quote(raw_dir));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(Contains(r.out, "record at sequence 42")) << r.out;
  EXPECT_TRUE(Contains(r.out, wal::SegmentFileName(1) + " at offset 44")) << r.out;
  EXPECT_TRUE(Contains(r.out, "unknown payload kind 104")) << r.out;
  r = RunTool("verify --raw " + Quote(raw_dir));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "sequences: 42 .. 47 (6)")) << r.out;
  r = RunTool("dump --raw --hex " + Quote(raw_dir));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "|hello|")) << r.out;

  // A well-framed payload whose row claims 2^32 - 1 entries.
  const std::string huge_dir = dir_.Join("huge");
  ASSERT_OK(wal::LogWriter::Open(o, huge_dir, 1, nullptr, &w));
  std::string payload("\x01\x01\x07\x01k", 5);
  PutVarint32(&payload, 0xffffffffu);
  wal::WriteRequest req;
  req.payload = payload;
  ASSERT_OK(w->Write(&req));
  ASSERT_OK(w->Close());
  for (const char* cmd : {"verify", "dump --decode", "stats"}) {
    r = RunTool(std::string(cmd) + " " + Quote(huge_dir));
    EXPECT_EQ(r.exit_code, 1) << cmd << "\n" << r.out;
    EXPECT_TRUE(Contains(r.out, "claims 4294967295 entries")) << cmd << "\n" << r.out;
  }
}

TEST(StrataWalEngineTest, EngineDirectory) {
  test::ScratchDir dir("wal-tool-engine");
  EngineOptions options;
  options.create_if_missing = true;
  options.use_io_uring = false;
  options.wal_segment_size = 1 << 20;
  auto engine = Engine::Open(dir.path(), options);
  ASSERT_OK(engine);
  ASSERT_OK((*engine)->CreateTenant("t"));
  TableSchema schema;
  schema.locality_groups.push_back({.name = "g"});
  schema.families.push_back({.name = "f", .locality_group = "g"});
  auto tenant = (*engine)->OpenTenant("t");
  ASSERT_OK(tenant);
  ASSERT_OK(tenant->CreateTable("tab", schema));
  auto table = tenant->OpenTable("tab");
  ASSERT_OK(table);
  for (int i = 0; i < 5; i++) {
    RowMutation m;
    m.Put("f", "col", 10 + i, "engine-value-" + std::to_string(i));
    ASSERT_OK(table->Mutate(WriteOptions(), "engine-row-" + std::to_string(i), m));
  }
  // Read while the engine is open: the log holds every acknowledged write.
  RunResult r = RunTool("dump --decode " + Quote(dir.path()));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  for (int i = 0; i < 5; i++) {
    EXPECT_TRUE(Contains(r.out, "key='engine-row-" + std::to_string(i) + "'")) << r.out;
    EXPECT_TRUE(Contains(r.out, "value='engine-value-" + std::to_string(i) + "'")) << r.out;
  }
  r = RunTool("verify " + Quote(dir.path()));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "OK: the log is clean")) << r.out;
  ASSERT_OK((*engine)->Close());
}

// In an engine directory the MANIFEST says what recovery needs, as on the
// engine's open: a log missing its newest segment, its oldest, or all of them
// is corruption; point-in-time mode takes what is left. Output that cannot be
// written fails the run.
TEST(StrataWalEngineTest, ManifestSaysWhichSegmentsMustBeThere) {
  test::ScratchDir dir("wal-tool-manifest");
  EngineOptions options;
  options.use_io_uring = false;
  options.wal_segment_size = 64 << 10;
  {
    auto engine = Engine::Open(dir.path(), options);
    ASSERT_OK(engine);
    ASSERT_OK((*engine)->CreateTenant("t"));
    TableSchema schema;
    schema.families.push_back({.name = "f"});
    auto tenant = (*engine)->OpenTenant("t");
    ASSERT_OK(tenant);
    ASSERT_OK(tenant->CreateTable("tab", schema));
    auto table = tenant->OpenTable("tab");
    ASSERT_OK(table);
    for (int i = 0; i < 1500; i++) {
      RowMutation m;
      m.Put("f", "col", 1, std::string(100, 'v'));
      ASSERT_OK(table->Mutate(WriteOptions(), "row-" + std::to_string(i), m));
    }
    ASSERT_OK((*engine)->Close());
  }
  std::vector<std::filesystem::path> segments;
  for (const auto& e : std::filesystem::directory_iterator(dir.Join("wal"))) {
    if (e.path().extension() == ".log") segments.push_back(e.path());
  }
  std::sort(segments.begin(), segments.end());
  ASSERT_GE(segments.size(), 3u);
  RunResult r = RunTool("verify " + Quote(dir.path()));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "would replay")) << r.out;
  r = RunTool("dump " + Quote(dir.path()) + " >/dev/full");
  EXPECT_EQ(r.exit_code, 2) << r.out;

  const std::string copy = dir.Join("copy");
  auto verify_without = [&](const std::vector<size_t>& drop, const std::string& flags) {
    std::filesystem::remove_all(copy);
    std::filesystem::create_directories(copy);
    std::filesystem::copy(dir.Join("MANIFEST"), copy + "/MANIFEST");
    std::filesystem::copy(dir.Join("wal"), copy + "/wal");
    for (size_t i : drop) std::filesystem::remove(copy + "/wal/" + segments[i].filename().string());
    return RunTool("verify " + flags + Quote(copy));
  };
  const size_t newest = segments.size() - 1;
  r = verify_without({newest}, "");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(Contains(r.out, segments[newest].filename().string() + " is missing")) << r.out;
  r = verify_without({0}, "");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(Contains(r.out, "recovery needs every record from 1")) << r.out;
  std::vector<size_t> all;
  for (size_t i = 0; i < segments.size(); i++) all.push_back(i);
  r = verify_without(all, "");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(Contains(r.out, "holds no log segment")) << r.out;
  r = verify_without({newest}, "--mode=point-in-time ");
  EXPECT_EQ(r.exit_code, 0) << r.out;
}

}  // namespace
}  // namespace strata
