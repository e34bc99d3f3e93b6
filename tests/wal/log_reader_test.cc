// Tests of LogReader and RecoverLog: torn tails, bit flips everywhere,
// recovery modes, and the reader's positions.
#include "wal/log_reader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "common/fault_injection_fs.h"
#include "common/hash.h"
#include "wal_test_util.h"

namespace strata::wal::test {
namespace {

using strata::test::ScratchDir;

constexpr uint64_t kSegment = 64 * 1024;

struct FragmentInfo {
  uint64_t segment;
  uint64_t offset;
  size_t length;  // payload bytes
  FragmentType type;
};

std::vector<FragmentInfo> Layout(const std::string& dir) {
  std::unique_ptr<LogReader> reader;
  EXPECT_OK(LogReader::OpenDirectory(FileSystem::Default(), dir, &reader));
  std::vector<FragmentInfo> out;
  LogFragment f;
  while (reader->ReadFragment(&f)) {
    out.push_back(FragmentInfo{f.position.segment, f.position.offset, f.payload.size(), f.type});
  }
  EXPECT_OK(reader->status());
  return out;
}

std::vector<LogRecord> Records(const std::string& dir) {
  std::unique_ptr<LogReader> reader;
  EXPECT_OK(LogReader::OpenDirectory(FileSystem::Default(), dir, &reader));
  std::vector<LogRecord> out;
  LogRecord r;
  while (reader->ReadRecord(&r)) {
    r.payload = Slice();
    out.push_back(r);
  }
  EXPECT_OK(reader->status());
  return out;
}

// A log whose records take every shape; the last record is cut into several
// fragments and crosses a segment boundary. With `recycled_tail`, released
// segments are reused before the last record, so its second segment is a
// recycled file with stale fragments after the end of the log.
std::vector<Rec> BuildLog(const std::string& dir, bool recycled_tail = false) {
  LogOptions o = SmallOptions(/*uring=*/true, kSegment);
  std::unique_ptr<LogWriter> w;
  EXPECT_OK(LogWriter::Open(o, dir, 1, nullptr, &w));
  std::vector<Rec> recs;
  // Every record synced: each group starts with kDurableBeforeFlag, so
  // damage anywhere before the last record is provably mid-log.
  auto add = [&](size_t size) {
    auto r = WriteAll(w.get(), {MakePayload(recs.size(), size)}, 1 + recs.size() % 2);
    recs.insert(recs.end(), r.begin(), r.end());
  };
  if (recycled_tail) {
    for (int i = 0; i < 120; i++) {
      auto r = WriteAll(w.get(), {MakePayload(recs.size(), 1500)}, 1, /*sync=*/false);
      recs.insert(recs.end(), r.begin(), r.end());
    }
    EXPECT_OK(w->ReleaseBefore(recs.back().first));
  }
  for (size_t size : {size_t{0}, size_t{10}, size_t{200}, size_t{40000}, size_t{5},
                      size_t{kBlockSize - 60}, size_t{3}, size_t{70000}, size_t{100}}) {
    add(size);
  }
  if (recycled_tail) {
    EXPECT_OK(w->ReleaseBefore(recs.back().first));
  }
  add(90000);  // the last record: FIRST, MIDDLEs and LAST across a segment boundary
  if (recycled_tail) {
    EXPECT_GE(w->GetStats().segments_recycled, 3u);
  }
  EXPECT_OK(w->Close());
  if (!recycled_tail) return recs;
  // Releases dropped a prefix: the log is what it reads back as.
  std::vector<Rec> got;
  RecoveryInfo info;
  EXPECT_OK(Recover(dir, RecoveryMode::kAbsoluteConsistency, &got, &info, FileSystem::Default(),
                    /*repair=*/false));
  EXPECT_GE(got.size(), 2u);
  EXPECT_TRUE(got.back() == recs.back());
  return got;
}

std::string Name(uint64_t segment) { return SegmentFileName(segment); }

class TornTailTest : public ::testing::TestWithParam<bool> {};
INSTANTIATE_TEST_SUITE_P(Tail, TornTailTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? "Recycled" : "Fresh";
                         });

// Cuts the log at `cut` (truncating or zeroing from there to the end of its
// segment, deleting later segments), then checks that the default mode drops
// exactly the last record, absolute consistency refuses, and appending after
// recovery works.
void CheckTornTail(const std::string& pristine, const std::vector<Rec>& recs,
                   const LogPosition& cut, bool zero_instead, bool clean_end) {
  ScratchDir dir("wal-torn");
  CopyDir(pristine, dir.path());
  for (const auto& path : SegmentPaths(dir.path())) {
    uint64_t number;
    LogFileKind kind;
    ASSERT_TRUE(ParseLogFileName(path.substr(path.rfind('/') + 1), &number, &kind));
    if (number > cut.segment) {
      ASSERT_OK(FileSystem::Default()->DeleteFile(path));
    }
  }
  const std::string path = dir.Join(Name(cut.segment));
  if (zero_instead) {
    const uint64_t size = ReadBytes(path).size();
    WriteBytes(path, cut.offset, std::string(size - cut.offset, '\0'));
  } else {
    TruncateTo(path, cut.offset);
  }
  const std::string where = Name(cut.segment) + "@" + std::to_string(cut.offset) +
                            (zero_instead ? " zeroed" : " truncated");
  // Cut exactly at the record's start, the log simply ends before it.
  const bool clean = clean_end;
  std::vector<Rec> got;
  RecoveryInfo info;
  Status s = Recover(dir.path(), RecoveryMode::kAbsoluteConsistency, &got, &info,
                     FileSystem::Default(), /*repair=*/false);
  if (clean) {
    EXPECT_OK(s) << where;
  } else {
    EXPECT_TRUE(s.IsCorruption()) << where << ": " << s.ToString();
    EXPECT_NE(s.message().find(" at offset "), std::string::npos) << s.ToString();
  }
  ASSERT_OK(Recover(dir.path(), RecoveryMode::kTolerateTornTail, &got, &info)) << where;
  EXPECT_EQ(info.tail_dropped, !clean) << where;
  EXPECT_FALSE(info.later_records_dropped);
  ASSERT_EQ(got.size(), recs.size() - 1) << where;
  for (size_t i = 0; i < got.size(); i++) ASSERT_TRUE(got[i] == recs[i]) << where;
  EXPECT_EQ(info.next_sequence, recs.back().first) << where;

  // Appending after the cut, then recovering strictly, gives the old prefix
  // plus the new records and nothing stale.
  std::unique_ptr<LogWriter> w;
  ASSERT_OK(LogWriter::Open(SmallOptions(/*uring=*/true, kSegment), dir.path(), info.next_sequence,
                            nullptr, &w));
  auto more = WriteAll(w.get(), {MakePayload(999, 50), MakePayload(998, 20000)});
  ASSERT_OK(w->Close());
  ASSERT_OK(Recover(dir.path(), RecoveryMode::kAbsoluteConsistency, &got, &info)) << where;
  ASSERT_EQ(got.size(), recs.size() + 1) << where;
  EXPECT_TRUE(got[recs.size() - 1] == more[0]);
  EXPECT_TRUE(got[recs.size()] == more[1]);
}

TEST_P(TornTailTest, CutAnywhereInTheLastRecordIsDropped) {
  ScratchDir pristine("wal");
  const std::vector<Rec> recs = BuildLog(pristine.path(), GetParam());
  const std::vector<LogRecord> layout = Records(pristine.path());
  ASSERT_EQ(layout.size(), recs.size());
  const LogRecord& last = layout.back();
  ASSERT_NE(last.begin.segment, last.end.segment) << "the last record should cross segments";
  std::vector<LogPosition> cuts = {
      last.begin,                                          // nothing of it left
      {last.begin.segment, last.begin.offset + 5},         // inside the first fragment header
      {last.begin.segment, last.begin.offset + 11 + 100},  // inside the FIRST payload
      {last.begin.segment, (last.begin.offset / kBlockSize + 1) * kBlockSize + 3},  // a MIDDLE
      {last.begin.segment, kSegment},  // the next segment is missing
      {last.end.segment, 0},           // the next segment's header is cut
      {last.end.segment, 20},
      {last.end.segment, kSegmentHeaderSize},  // after the header
      {last.end.segment, kSegmentHeaderSize + 7},
      {last.end.segment, last.end.offset - 1},  // one byte short
  };
  for (const auto& cut : cuts) {
    const bool clean_end = cut == last.begin;
    CheckTornTail(pristine.path(), recs, cut, /*zero_instead=*/false, clean_end);
    if (cut.offset < kSegment) {
      CheckTornTail(pristine.path(), recs, cut, /*zero_instead=*/true, clean_end);
    }
  }
}

// Before recovery deletes whole segments to drop a torn tail, it says which
// segment is the last one kept (the engine records it in its manifest first);
// the segments are still there when it says so.
TEST(RecoveryTest, SaysWhichSegmentIsLastKeptBeforeDeletingAny) {
  ScratchDir dir("wal");
  const std::vector<Rec> recs = BuildLog(dir.path());
  const std::vector<LogRecord> layout = Records(dir.path());
  const LogRecord& last = layout.back();
  ASSERT_NE(last.begin.segment, last.end.segment) << "the last record should cross segments";
  TruncateTo(dir.Join(Name(last.end.segment)), kSegmentHeaderSize + 7);
  std::vector<uint64_t> told;
  RecoveryInfo info;
  ASSERT_OK(RecoverLog(
      FileSystem::Default(), dir.path(), RecoveryMode::kTolerateTornTail, 0,
      [](SequenceNumber, uint64_t, Slice) { return Status::OK(); }, &info,
      [&](uint64_t last_kept) {
        told.push_back(last_kept);
        EXPECT_TRUE(FileSystem::Default()->FileExists(dir.Join(Name(last.end.segment))));
        return Status::OK();
      }));
  EXPECT_EQ(told, std::vector<uint64_t>{last.begin.segment});
  EXPECT_FALSE(FileSystem::Default()->FileExists(dir.Join(Name(last.end.segment))));
  EXPECT_EQ(info.records, recs.size() - 1);

  // An error from it stops recovery with nothing deleted.
  ScratchDir again("wal");
  BuildLog(again.path());
  TruncateTo(again.Join(Name(last.end.segment)), kSegmentHeaderSize + 7);
  Status s = RecoverLog(
      FileSystem::Default(), again.path(), RecoveryMode::kTolerateTornTail, 0,
      [](SequenceNumber, uint64_t, Slice) { return Status::OK(); }, &info,
      [](uint64_t) { return Status::IOError("manifest"); });
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_TRUE(FileSystem::Default()->FileExists(again.Join(Name(last.end.segment))));
}

TEST(RecoveryTest, EmptyOrMissingDirectoryIsAnEmptyLog) {
  ScratchDir dir("wal");
  std::vector<Rec> got;
  RecoveryInfo info;
  ASSERT_OK(Recover(dir.path(), RecoveryMode::kAbsoluteConsistency, &got, &info));
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(info.next_sequence, 0u);
  ASSERT_OK(Recover(dir.Join("missing"), RecoveryMode::kAbsoluteConsistency, &got, &info));
  EXPECT_TRUE(got.empty());
}

// Flips one bit at many places: segment headers, every byte of every fragment
// header, payload bytes of every fragment type, block padding. Absolute
// consistency reports each as Corruption naming the file and the offset of the
// damaged unit; the default mode does the same except inside the last record,
// which it drops as a torn tail.
TEST(RecoveryTest, BitFlipsAreCorruptionExceptInTheLastRecord) {
  ScratchDir dir("wal");
  const std::vector<Rec> recs = BuildLog(dir.path());
  const std::vector<FragmentInfo> frags = Layout(dir.path());
  const std::vector<LogRecord> records = Records(dir.path());
  const LogRecord& last = records.back();
  std::set<FragmentType> types;

  struct Target {
    uint64_t segment, offset;  // the byte to flip
    uint64_t unit;             // offset where the damaged unit starts
  };
  std::vector<Target> targets;
  const uint64_t last_segment = frags.back().segment;
  for (uint64_t seg = frags.front().segment; seg <= last_segment; seg++) {
    for (uint64_t i = 0; i < kSegmentHeaderSize; i++) targets.push_back({seg, i, 0});
  }
  for (size_t k = 0; k < frags.size(); k++) {
    const FragmentInfo& f = frags[k];
    types.insert(f.type);
    for (uint64_t i = 0; i < kFragmentHeaderSize; i++)
      targets.push_back({f.segment, f.offset + i, f.offset});
    const uint64_t p = f.offset + kFragmentHeaderSize;
    for (uint64_t i : {uint64_t{0}, uint64_t{f.length / 2}, uint64_t{f.length - 1}}) {
      targets.push_back({f.segment, p + i, f.offset});
    }
    // Padding after this fragment, when the block tail is too short.
    const uint64_t end = p + f.length;
    const uint64_t left = kBlockSize - end % kBlockSize;
    const bool next_here =
        k + 1 < frags.size() && frags[k + 1].segment == f.segment && frags[k + 1].offset == end;
    if (left < kMinFragmentSize && left != kBlockSize && !next_here && (k + 1 < frags.size())) {
      for (uint64_t i = 0; i < left; i++) targets.push_back({f.segment, end + i, end});
    }
  }
  ASSERT_EQ(types.size(), 4u);

  auto in_last = [&](const Target& t) {
    const LogPosition p{t.segment, t.offset};
    return !(p < last.begin) && p < last.end;
  };
  int dropped = 0, corrupt = 0;
  for (const auto& t : targets) {
    const std::string path = dir.Join(Name(t.segment));
    const int bit = static_cast<int>((t.offset * 5 + t.segment) % 8);
    FlipBit(path, t.offset, bit);
    const std::string where = Name(t.segment) + "@" + std::to_string(t.offset);
    const std::string expect = Name(t.segment) + " at offset " + std::to_string(t.unit);
    std::vector<Rec> got;
    RecoveryInfo info;
    Status s = Recover(dir.path(), RecoveryMode::kAbsoluteConsistency, &got, &info,
                       FileSystem::Default(), /*repair=*/false);
    EXPECT_TRUE(s.IsCorruption()) << where << ": " << s.ToString();
    EXPECT_NE(s.message().find(expect), std::string::npos) << where << ": " << s.ToString();

    s = Recover(dir.path(), RecoveryMode::kTolerateTornTail, &got, &info, FileSystem::Default(),
                /*repair=*/false);
    if (in_last(t)) {
      dropped++;
      EXPECT_OK(s) << where;
      EXPECT_TRUE(info.tail_dropped) << where;
      EXPECT_EQ(got.size(), recs.size() - 1) << where;
      EXPECT_EQ(info.next_sequence, recs.back().first) << where;
    } else {
      corrupt++;
      EXPECT_TRUE(s.IsCorruption()) << where << ": " << s.ToString();
      EXPECT_NE(s.message().find(expect), std::string::npos) << where << ": " << s.ToString();
    }
    FlipBit(path, t.offset, bit);
    if (::testing::Test::HasFailure()) break;
  }
  EXPECT_GT(dropped, 50);
  EXPECT_GT(corrupt, 300);
}

TEST(RecoveryTest, PointInTimeStopsAtMidLogCorruption) {
  ScratchDir dir("wal");
  const std::vector<Rec> recs = BuildLog(dir.path());
  const std::vector<LogRecord> records = Records(dir.path());
  // Damage the payload of record 3 (a multi-fragment one in the middle).
  const LogRecord& bad = records[3];
  FlipBit(dir.Join(Name(bad.begin.segment)), bad.begin.offset + kFragmentHeaderSize + 30, 2);
  std::vector<Rec> got;
  RecoveryInfo info;
  Status s = Recover(dir.path(), RecoveryMode::kTolerateTornTail, &got, &info);
  ASSERT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find("not a torn tail"), std::string::npos) << s.ToString();
  ASSERT_OK(Recover(dir.path(), RecoveryMode::kPointInTime, &got, &info));
  ASSERT_EQ(got.size(), 3u);
  for (size_t i = 0; i < 3; i++) EXPECT_TRUE(got[i] == recs[i]);
  EXPECT_TRUE(info.tail_dropped);
  EXPECT_TRUE(info.later_records_dropped);
  EXPECT_EQ(info.cut_offset, bad.begin.offset);
  EXPECT_EQ(info.next_sequence, recs[3].first);
  // The rest was cut off, so the log now ends cleanly and takes appends.
  std::unique_ptr<LogWriter> w;
  ASSERT_OK(LogWriter::Open(SmallOptions(/*uring=*/true, kSegment), dir.path(), info.next_sequence,
                            nullptr, &w));
  auto more = WriteAll(w.get(), {"next"});
  ASSERT_OK(w->Close());
  ASSERT_OK(Recover(dir.path(), RecoveryMode::kAbsoluteConsistency, &got, &info));
  ASSERT_EQ(got.size(), 4u);
  EXPECT_TRUE(got[3] == more[0]);
}

TEST(RecoveryTest, HoleInTheMiddleIsCorruption) {
  ScratchDir dir("wal");
  const std::vector<Rec> recs = BuildLog(dir.path());
  const std::vector<LogRecord> records = Records(dir.path());
  // Zero record 1 entirely (a lost write): valid records follow it.
  const LogRecord& r = records[1];
  ASSERT_EQ(r.begin.segment, r.end.segment);
  WriteBytes(dir.Join(Name(r.begin.segment)), r.begin.offset,
             std::string(r.end.offset - r.begin.offset, '\0'));
  std::vector<Rec> got;
  RecoveryInfo info;
  Status s = Recover(dir.path(), RecoveryMode::kTolerateTornTail, &got, &info);
  ASSERT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(
      s.message().find(Name(r.begin.segment) + " at offset " + std::to_string(r.begin.offset)),
      std::string::npos)
      << s.ToString();
  ASSERT_OK(Recover(dir.path(), RecoveryMode::kPointInTime, &got, &info));
  EXPECT_EQ(got.size(), 1u);
}

// Writes groups with and without sync; their starts must carry
// kDurableBeforeFlag exactly when everything before them had been synced.
void ExpectGroupStartFlags(const LogOptions& o, const std::string& dir) {
  std::unique_ptr<LogWriter> w;
  ASSERT_OK(LogWriter::Open(o, dir, 1, nullptr, &w));
  WriteAll(w.get(), {"a"}, 1, /*sync=*/true);   // first group: nothing before it
  WriteAll(w.get(), {"b"}, 1, /*sync=*/false);  // after a synced group
  WriteAll(w.get(), {"c"}, 1, /*sync=*/true);   // after an unsynced one
  ASSERT_OK(w->Sync());
  WriteAll(w.get(), {std::string(3 * kBlockSize, 'd')}, 1, /*sync=*/false);  // after Sync()
  ASSERT_OK(w->Close());
  std::unique_ptr<LogReader> reader;
  ASSERT_OK(LogReader::OpenDirectory(FileSystem::Default(), dir, &reader));
  std::vector<bool> flags;
  LogFragment f;
  while (reader->ReadFragment(&f)) flags.push_back(f.durable_before);
  ASSERT_OK(reader->status());
  EXPECT_EQ(flags, (std::vector<bool>{true, true, false, true, false, false, false}));
}

// Group starts carry kDurableBeforeFlag exactly when everything before them
// had been synced, also when synced groups apply before their fdatasync.
TEST(LogReaderTest, GroupStartsSayWhetherTheLogBeforeWasDurable) {
  for (bool apply_before_sync : {false, true}) {
    SCOPED_TRACE(apply_before_sync ? "apply_before_sync" : "sync before apply");
    ScratchDir dir("wal");
    LogOptions o = SmallOptions(/*uring=*/true);
    o.apply_before_sync = apply_before_sync;
    ExpectGroupStartFlags(o, dir.path());
  }
}

// A power failure may lose earlier unsynced writes and keep a later one: the
// hole lies in data never made durable, so it is a torn tail, not corruption.
TEST(RecoveryTest, HoleInTheUnsyncedTailIsATornTail) {
  ScratchDir dir("wal");
  FaultInjectionFileSystem fs;
  LogOptions o = SmallOptions(/*uring=*/false);
  o.fs = &fs;
  std::unique_ptr<LogWriter> w;
  ASSERT_OK(LogWriter::Open(o, dir.path(), 1, nullptr, &w));
  std::vector<std::string> synced, unsynced;
  for (int i = 0; i < 20; i++) synced.push_back(MakePayload(i, 200));
  for (int i = 0; i < 6; i++) unsynced.push_back(MakePayload(100 + i, 300));
  auto recs = WriteAll(w.get(), synced, 1, /*sync=*/true);
  WriteAll(w.get(), unsynced, 1, /*sync=*/false);
  fs.SetFilesystemActive(false);
  w.reset();
  // Earlier unsynced writes are undone, the last one survives whole.
  ASSERT_OK(fs.TearUnsyncedData(uint64_t{1} << 20));
  fs.SetFilesystemActive(true);

  std::vector<Rec> got;
  RecoveryInfo info;
  Status s = Recover(dir.path(), RecoveryMode::kAbsoluteConsistency, &got, &info,
                     FileSystem::Default(), /*repair=*/false);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  ASSERT_OK(Recover(dir.path(), RecoveryMode::kTolerateTornTail, &got, &info));
  EXPECT_TRUE(info.tail_dropped);
  EXPECT_FALSE(info.later_records_dropped);
  ASSERT_EQ(got.size(), recs.size());
  for (size_t i = 0; i < got.size(); i++) EXPECT_TRUE(got[i] == recs[i]);
  // The surviving write was cut off with the rest: appending works.
  ASSERT_OK(
      LogWriter::Open(SmallOptions(/*uring=*/true), dir.path(), info.next_sequence, nullptr, &w));
  WriteAll(w.get(), {"more"});
  ASSERT_OK(w->Close());
  ASSERT_OK(Recover(dir.path(), RecoveryMode::kAbsoluteConsistency, &got, &info));
  EXPECT_EQ(got.size(), recs.size() + 1);
}

// An unsynced group that fills the last segment exactly leaves nothing to
// trim, and the page cache keeps it through a process crash. Recovery syncs
// the last segment all the same: a new writer's synced records must not
// follow bytes a power loss can still take (they would then lie past a
// hole, and be lost or refuse the open).
TEST(RecoveryTest, RecoverySyncsAFullLastSegmentAWriterLeftUnsynced) {
  ScratchDir dir("wal");
  FaultInjectionFileSystem fs;
  LogOptions o = SmallOptions(/*uring=*/false, /*segment_size=*/32768);
  o.fs = &fs;
  std::unique_ptr<LogWriter> w;
  ASSERT_OK(LogWriter::Open(o, dir.path(), 1, nullptr, &w));
  auto recs = WriteAll(w.get(), {MakePayload(1, 10)}, 1, /*sync=*/true);
  // Header 44 bytes; the first record 11 + 9 + 10; this one 11 + 9 + its
  // payload: together exactly one segment.
  const std::string fill = MakePayload(2, 32768 - 44 - 30 - 20);
  auto more = WriteAll(w.get(), {fill}, 1, /*sync=*/false);
  recs.insert(recs.end(), more.begin(), more.end());
  fs.SetFilesystemActive(false);  // the process dies; its page cache stays
  w.reset();
  fs.SetFilesystemActive(true);

  std::vector<Rec> got;
  RecoveryInfo info;
  ASSERT_OK(Recover(dir.path(), RecoveryMode::kTolerateTornTail, &got, &info, &fs));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(info.truncated_file.empty()) << "the segment ended full, nothing to trim";
  ASSERT_OK(LogWriter::Open(o, dir.path(), info.next_sequence, nullptr, &w));
  more = WriteAll(w.get(), {MakePayload(3, 10)}, 1, /*sync=*/true);
  recs.insert(recs.end(), more.begin(), more.end());
  ASSERT_OK(w->Close());
  ASSERT_OK(fs.DropUnsyncedData());  // power loss

  ASSERT_OK(Recover(dir.path(), RecoveryMode::kAbsoluteConsistency, &got, &info, &fs));
  ASSERT_EQ(got.size(), recs.size());
  for (size_t i = 0; i < got.size(); i++) EXPECT_TRUE(got[i] == recs[i]) << i;
}

TEST(RecoveryTest, SequenceGapIsCorruptionInEveryModeButPointInTime) {
  ScratchDir dir("wal");
  std::unique_ptr<LogWriter> w;
  ASSERT_OK(LogWriter::Open(SmallOptions(/*uring=*/true), dir.path(), 10, nullptr, &w));
  WriteAll(w.get(), {"a", "b"});
  ASSERT_OK(w->Close());
  // A second writer told to continue past a gap.
  ASSERT_OK(LogWriter::Open(SmallOptions(/*uring=*/true), dir.path(), 20, nullptr, &w));
  WriteAll(w.get(), {"c"});
  ASSERT_OK(w->Close());
  std::vector<Rec> got;
  RecoveryInfo info;
  Status s = Recover(dir.path(), RecoveryMode::kTolerateTornTail, &got, &info);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find("sequence"), std::string::npos);
  ASSERT_OK(Recover(dir.path(), RecoveryMode::kPointInTime, &got, &info));
  EXPECT_EQ(got.size(), 2u);
  EXPECT_EQ(info.next_sequence, 12u);
}

TEST(RecoveryTest, StartSequenceSkipsOldRecordsAndDetectsMissingOnes) {
  ScratchDir dir("wal");
  std::unique_ptr<LogWriter> w;
  ASSERT_OK(LogWriter::Open(SmallOptions(/*uring=*/true), dir.path(), 100, nullptr, &w));
  WriteAll(w.get(), {"a", "b", "c", "d"}, 2);  // 100, 102, 104, 106
  ASSERT_OK(w->Close());
  std::vector<Rec> got;
  RecoveryInfo info;
  auto fn = [&](SequenceNumber first, uint64_t count, Slice p) {
    got.push_back(Rec{first, count, p.ToString()});
    return Status::OK();
  };
  ASSERT_OK(RecoverLog(FileSystem::Default(), dir.path(), RecoveryMode::kTolerateTornTail, 103, fn,
                       &info));
  ASSERT_EQ(got.size(), 3u);  // 102 (covers 103), 104, 106
  EXPECT_EQ(got[0].first, 102u);
  EXPECT_EQ(info.records_skipped, 1u);
  EXPECT_EQ(info.next_sequence, 108u);
  Status s =
      RecoverLog(FileSystem::Default(), dir.path(), RecoveryMode::kPointInTime, 50, fn, &info);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
}

TEST(RecoveryTest, CallbackErrorIsReturned) {
  ScratchDir dir("wal");
  BuildLog(dir.path());
  RecoveryInfo info;
  int calls = 0;
  Status s = RecoverLog(
      FileSystem::Default(), dir.path(), RecoveryMode::kTolerateTornTail,
      [&](SequenceNumber, uint64_t, Slice) {
        return ++calls == 3 ? Status::Aborted("enough") : Status::OK();
      },
      &info);
  EXPECT_TRUE(s.IsAborted());
  EXPECT_EQ(calls, 3);
}

TEST(RecoveryTest, OtherFormatVersionIsNotSupported) {
  ScratchDir dir("wal");
  BuildLog(dir.path());
  const std::string path = SegmentPaths(dir.path()).front();
  std::string head = ReadBytes(path).substr(0, kSegmentHeaderSize);
  EncodeFixed32(head.data() + 8, kFormatVersion + 1);
  EncodeFixed32(head.data() + 40, Checksum32(head.data(), 40, kSegmentHeaderSeed));
  WriteBytes(path, 0, head);
  std::vector<Rec> got;
  RecoveryInfo info;
  for (auto mode : {RecoveryMode::kTolerateTornTail, RecoveryMode::kPointInTime}) {
    Status s = Recover(dir.path(), mode, &got, &info);
    EXPECT_TRUE(s.IsNotSupported()) << s.ToString();
  }
}

TEST(LogReaderTest, ReportsFragmentsRecordsAndPositions) {
  ScratchDir dir("wal");
  const std::vector<Rec> recs = BuildLog(dir.path());
  const std::vector<LogRecord> records = Records(dir.path());
  ASSERT_EQ(records.size(), recs.size());
  const std::vector<FragmentInfo> frags = Layout(dir.path());
  size_t k = 0;
  for (size_t i = 0; i < records.size(); i++) {
    EXPECT_EQ(records[i].first_sequence, recs[i].first);
    EXPECT_EQ(records[i].sequence_count, recs[i].count);
    ASSERT_LT(k, frags.size());
    EXPECT_EQ(records[i].begin.segment, frags[k].segment);
    EXPECT_EQ(records[i].begin.offset, frags[k].offset);
    EXPECT_TRUE(IsRecordStart(frags[k].type));
    k += records[i].fragments;
    const FragmentInfo& lastf = frags[k - 1];
    EXPECT_EQ(records[i].end.segment, lastf.segment);
    EXPECT_EQ(records[i].end.offset, lastf.offset + kFragmentHeaderSize + lastf.length);
  }
  EXPECT_EQ(k, frags.size());

  // One segment file on its own.
  std::unique_ptr<LogReader> reader;
  const std::string first = SegmentPaths(dir.path()).front();
  ASSERT_OK(LogReader::OpenFile(FileSystem::Default(), first, &reader));
  LogRecord r;
  size_t n = 0;
  while (reader->ReadRecord(&r)) n++;
  // The first segment ends inside a record that continues in the next file.
  EXPECT_TRUE(reader->status().IsCorruption());
  EXPECT_GT(n, 2u);
  EXPECT_EQ(reader->cut().segment, 1u);
}

TEST(LogReaderTest, StopAndCutOfAnIncompleteRecord) {
  ScratchDir dir("wal");
  BuildLog(dir.path());
  const std::vector<LogRecord> records = Records(dir.path());
  const LogRecord& last = records.back();
  // Damage the LAST fragment of the last record.
  const auto frags = Layout(dir.path());
  const FragmentInfo& lastf = frags.back();
  FlipBit(dir.Join(Name(lastf.segment)), lastf.offset + kFragmentHeaderSize, 0);
  std::unique_ptr<LogReader> reader;
  ASSERT_OK(LogReader::OpenDirectory(FileSystem::Default(), dir.path(), &reader));
  LogRecord r;
  size_t n = 0;
  while (reader->ReadRecord(&r)) n++;
  EXPECT_EQ(n, records.size() - 1);
  ASSERT_TRUE(reader->status().IsCorruption());
  EXPECT_EQ(reader->stop().segment, lastf.segment);
  EXPECT_EQ(reader->stop().offset, lastf.offset);
  EXPECT_TRUE(reader->cut() == last.begin);
  EXPECT_FALSE(reader->stop_is_inconsistency());
  bool found = true;
  LogPosition where;
  ASSERT_OK(reader->FindLaterDurableRecord(&found, &where));
  EXPECT_FALSE(found);
}

}  // namespace
}  // namespace strata::wal::test
