#include "common/fault_injection_fs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/random.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata {
namespace {

class FaultInjectionFileSystemTest : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) const { return dir_.Join(name); }

  // Contents through the real file system; "<missing>" if there is no file.
  std::string Contents(const std::string& path) {
    if (!base_->FileExists(path)) return "<missing>";
    std::string data;
    Status s = ReadFileToString(base_, path, &data);
    EXPECT_OK(s);
    return data;
  }

  std::unique_ptr<WritableFile> Open(const std::string& path, bool truncate = true) {
    std::unique_ptr<WritableFile> f;
    FileOpenOptions options;
    options.truncate = truncate;
    Status s = fs_.NewWritableFile(path, options, &f);
    EXPECT_OK(s);
    return f;
  }

  // Writes a file whose data and directory entry are both durable.
  void WriteDurable(const std::string& path, const std::string& data) {
    auto f = Open(path);
    ASSERT_NE(f, nullptr);
    ASSERT_OK(f->Append(data));
    ASSERT_OK(f->Sync());
    ASSERT_OK(f->Close());
    ASSERT_OK(fs_.SyncDir(DirName(path)));
  }

  FileSystem* base_ = FileSystem::Default();
  FaultInjectionFileSystem fs_;
  test::ScratchDir dir_{"faultfs"};
};

// One call of each kind, on `path` (which exists and holds a few bytes).
struct OpCase {
  FaultOp op;
  std::function<Status(FaultInjectionFileSystem*, const std::string& path)> call;
};

std::vector<OpCase> OpCases() {
  auto with_writable = [](std::function<Status(WritableFile*)> body) {
    return [body](FaultInjectionFileSystem* fs, const std::string& path) {
      std::unique_ptr<WritableFile> f;
      FileOpenOptions options;
      options.truncate = false;
      Status s = fs->NewWritableFile(path, options, &f);
      if (!s.ok()) return Status::Aborted("setup: " + s.ToString());
      return body(f.get());
    };
  };
  return {
      {FaultOp::kOpen,
       [](FaultInjectionFileSystem* fs, const std::string& path) {
         std::unique_ptr<RandomAccessFile> f;
         return fs->NewRandomAccessFile(path, &f);
       }},
      {FaultOp::kOpen,
       [](FaultInjectionFileSystem* fs, const std::string& path) {
         std::unique_ptr<SequentialFile> f;
         return fs->NewSequentialFile(path, &f);
       }},
      {FaultOp::kOpen,
       [](FaultInjectionFileSystem* fs, const std::string& path) {
         std::unique_ptr<WritableFile> f;
         FileOpenOptions options;
         options.truncate = false;
         return fs->NewWritableFile(path, options, &f);
       }},
      {FaultOp::kWrite, with_writable([](WritableFile* f) { return f->Append("x"); })},
      {FaultOp::kWrite, with_writable([](WritableFile* f) { return f->WriteAt(0, Slice("y")); })},
      {FaultOp::kWrite, with_writable([](WritableFile* f) { return f->Flush(); })},
      {FaultOp::kSync, with_writable([](WritableFile* f) { return f->Sync(); })},
      {FaultOp::kAllocate, with_writable([](WritableFile* f) { return f->Allocate(0, 8192); })},
      {FaultOp::kTruncate, with_writable([](WritableFile* f) { return f->Truncate(2); })},
      {FaultOp::kRename,
       [](FaultInjectionFileSystem* fs, const std::string& path) {
         Status s = fs->RenameFile(path, path + ".renamed");
         if (s.ok()) s = fs->RenameFile(path + ".renamed", path);
         return s;
       }},
      {FaultOp::kDelete,
       [](FaultInjectionFileSystem* fs, const std::string& path) {
         Status s = fs->DeleteFile(path);
         if (s.ok()) s = WriteFileAtomically(fs->base(), path, "abcd");  // put it back
         return s;
       }},
      {FaultOp::kSyncDir, [](FaultInjectionFileSystem* fs,
                             const std::string& path) { return fs->SyncDir(DirName(path)); }},
      {FaultOp::kRead,
       [](FaultInjectionFileSystem* fs, const std::string& path) {
         std::unique_ptr<RandomAccessFile> f;
         Status s = fs->NewRandomAccessFile(path, &f);
         if (!s.ok()) return Status::Aborted("setup: " + s.ToString());
         char scratch[4];
         Slice got;
         return f->Read(0, 4, &got, scratch);
       }},
      {FaultOp::kRead,
       [](FaultInjectionFileSystem* fs, const std::string& path) {
         std::unique_ptr<SequentialFile> f;
         Status s = fs->NewSequentialFile(path, &f);
         if (!s.ok()) return Status::Aborted("setup: " + s.ToString());
         char scratch[4];
         Slice got;
         return f->Read(4, &got, scratch);
       }},
  };
}

TEST_F(FaultInjectionFileSystemTest, EveryKindFailsWithTheRightCode) {
  const std::string path = Path("target");
  int index = 0;
  for (const OpCase& c : OpCases()) {
    SCOPED_TRACE(std::string(FaultOpName(c.op)) + " case " + std::to_string(index++));
    ASSERT_OK(WriteFileAtomically(base_, path, "abcd"));
    ASSERT_OK(c.call(&fs_, path));  // no fault: works
    for (int err : {EIO, ENOSPC}) {
      const uint64_t injected = fs_.InjectedCount(c.op);
      fs_.FailAfter(c.op, 0, 1, err);
      Status s = c.call(&fs_, path);
      EXPECT_EQ(s.code(), err == EIO ? Status::Code::kIOError : Status::Code::kResourceExhausted)
          << s.ToString();
      EXPECT_NE(s.message().find("injected"), std::string::npos) << s.ToString();
      EXPECT_NE(s.message().find(c.op == FaultOp::kSyncDir ? DirName(path) : path),
                std::string::npos)
          << s.ToString();
      EXPECT_EQ(fs_.InjectedCount(c.op), injected + 1);
      // Exactly one failure was asked for.
      EXPECT_OK(c.call(&fs_, path));
    }
    fs_.ClearFaults();
  }
}

TEST_F(FaultInjectionFileSystemTest, FailAfterSkipsThenFailsCountTimes) {
  auto f = Open(Path("f"));
  fs_.FailAfter(FaultOp::kWrite, 2, 3, EIO);
  std::vector<bool> ok;
  for (int i = 0; i < 7; i++) ok.push_back(f->Append("x").ok());
  EXPECT_EQ(ok, (std::vector<bool>{true, true, false, false, false, true, true}));
  EXPECT_EQ(fs_.OpCount(FaultOp::kWrite), 7u);
  EXPECT_EQ(fs_.InjectedCount(FaultOp::kWrite), 3u);
  // Failed appends wrote nothing.
  EXPECT_EQ(Contents(Path("f")), "xxxx");
  // Other kinds are not affected.
  EXPECT_OK(f->Sync());
}

TEST_F(FaultInjectionFileSystemTest, CountMinusOneFailsUntilCleared) {
  auto f = Open(Path("f"));
  fs_.FailAfter(FaultOp::kSync, 1, -1, ENOSPC);
  EXPECT_OK(f->Sync());
  for (int i = 0; i < 20; i++) EXPECT_TRUE(f->Sync().IsResourceExhausted());
  fs_.ClearFaults(FaultOp::kWrite);  // another kind: no effect
  EXPECT_TRUE(f->Sync().IsResourceExhausted());
  fs_.ClearFaults(FaultOp::kSync);
  EXPECT_OK(f->Sync());
}

TEST_F(FaultInjectionFileSystemTest, PathFilter) {
  auto wal = Open(Path("000001.log"));
  auto sst = Open(Path("000002.sst"));
  fs_.FailAfter(FaultOp::kWrite, 1, -1, EIO, ".log");
  EXPECT_OK(wal->Append("a"));  // the skipped call
  EXPECT_OK(sst->Append("b"));  // does not match: not counted against skip
  Status s = wal->Append("c");
  EXPECT_TRUE(s.IsIOError());
  EXPECT_NE(s.message().find("000001.log"), std::string::npos);
  for (int i = 0; i < 5; i++) EXPECT_OK(sst->Append("d"));
  // Independent faults: each counts its own matching calls.
  fs_.FailAfter(FaultOp::kWrite, 0, 1, ENOSPC, ".sst");
  EXPECT_TRUE(sst->Append("e").IsResourceExhausted());
  EXPECT_OK(sst->Append("f"));
  EXPECT_TRUE(wal->Append("g").IsIOError());
}

TEST_F(FaultInjectionFileSystemTest, RandomFaults) {
  auto f = Open(Path("f"));
  fs_.FailRandomly(FaultOp::kWrite, 0.0, 1, EIO);
  for (int i = 0; i < 100; i++) ASSERT_OK(f->Flush());
  fs_.ClearFaults();
  fs_.FailRandomly(FaultOp::kWrite, 1.0, 1, EIO);
  for (int i = 0; i < 100; i++) ASSERT_TRUE(f->Flush().IsIOError());
  fs_.ClearFaults();

  auto pattern = [&](uint64_t seed) {
    fs_.ClearFaults();
    fs_.FailRandomly(FaultOp::kWrite, 0.3, seed, EIO);
    std::vector<bool> r;
    for (int i = 0; i < 2000; i++) r.push_back(f->Flush().ok());
    return r;
  };
  const std::vector<bool> a = pattern(7);
  const std::vector<bool> b = pattern(7);
  const std::vector<bool> c = pattern(8);
  EXPECT_EQ(a, b);  // a seed replays the same failures
  EXPECT_NE(a, c);
  const auto failures = std::count(a.begin(), a.end(), false);
  EXPECT_NEAR(static_cast<double>(failures), 600, 100);
}

TEST_F(FaultInjectionFileSystemTest, Counters) {
  auto f = Open(Path("f"));
  ASSERT_OK(f->Append("abc"));
  ASSERT_OK(f->WriteAt(0, Slice("x")));
  ASSERT_OK(f->Flush());
  ASSERT_OK(f->Sync());
  ASSERT_OK(f->Allocate(0, 100));
  ASSERT_OK(f->Truncate(50));
  ASSERT_OK(f->Close());
  ASSERT_OK(fs_.SyncDir(dir_.path()));
  ASSERT_OK(fs_.RenameFile(Path("f"), Path("g")));
  std::unique_ptr<RandomAccessFile> r;
  ASSERT_OK(fs_.NewRandomAccessFile(Path("g"), &r));
  char scratch[8];
  Slice got;
  ASSERT_OK(r->Read(0, 8, &got, scratch));
  ASSERT_OK(r->Read(8, 8, &got, scratch));
  ASSERT_OK(fs_.DeleteFile(Path("g")));
  EXPECT_EQ(fs_.OpCount(FaultOp::kOpen), 2u);
  EXPECT_EQ(fs_.OpCount(FaultOp::kWrite), 3u);
  EXPECT_EQ(fs_.OpCount(FaultOp::kSync), 1u);
  EXPECT_EQ(fs_.OpCount(FaultOp::kAllocate), 1u);
  EXPECT_EQ(fs_.OpCount(FaultOp::kTruncate), 1u);
  EXPECT_EQ(fs_.OpCount(FaultOp::kSyncDir), 1u);
  EXPECT_EQ(fs_.OpCount(FaultOp::kRename), 1u);
  EXPECT_EQ(fs_.OpCount(FaultOp::kRead), 2u);
  EXPECT_EQ(fs_.OpCount(FaultOp::kDelete), 1u);
  for (int i = 0; i < kNumFaultOps; i++) EXPECT_EQ(fs_.InjectedCount(static_cast<FaultOp>(i)), 0u);
  fs_.ResetCounters();
  for (int i = 0; i < kNumFaultOps; i++) EXPECT_EQ(fs_.OpCount(static_cast<FaultOp>(i)), 0u);
}

TEST_F(FaultInjectionFileSystemTest, WritableFilesHaveNoDescriptor) {
  auto f = Open(Path("f"));
  EXPECT_EQ(f->fd(), -1);
}

TEST_F(FaultInjectionFileSystemTest, InactiveFileSystemRejectsEveryChange) {
  WriteDurable(Path("durable"), "data");
  auto f = Open(Path("open"));
  fs_.SetFilesystemActive(false);
  EXPECT_FALSE(fs_.IsFilesystemActive());
  std::vector<Status> results;
  results.push_back(f->Append("x"));
  results.push_back(f->WriteAt(0, Slice("x")));
  results.push_back(f->Flush());
  results.push_back(f->Sync());
  results.push_back(f->Allocate(0, 10));
  results.push_back(f->Truncate(0));
  std::unique_ptr<WritableFile> w;
  results.push_back(fs_.NewWritableFile(Path("new"), FileOpenOptions{}, &w));
  results.push_back(fs_.RenameFile(Path("durable"), Path("renamed")));
  results.push_back(fs_.DeleteFile(Path("durable")));
  results.push_back(fs_.CreateDirIfMissing(Path("sub")));
  results.push_back(fs_.SyncDir(dir_.path()));
  for (size_t i = 0; i < results.size(); i++) {
    EXPECT_TRUE(results[i].IsIOError()) << i << ": " << results[i].ToString();
    EXPECT_NE(results[i].message().find("injected"), std::string::npos) << i;
  }
  EXPECT_FALSE(fs_.FileExists(Path("new")));
  EXPECT_FALSE(fs_.FileExists(Path("sub")));
  EXPECT_EQ(Contents(Path("durable")), "data");
  EXPECT_EQ(Contents(Path("open")), "");
  // Reads still work.
  std::string data;
  ASSERT_OK(ReadFileToString(&fs_, Path("durable"), &data));
  EXPECT_EQ(data, "data");
  ASSERT_OK(f->Close());

  fs_.SetFilesystemActive(true);
  EXPECT_OK(fs_.RenameFile(Path("durable"), Path("renamed")));
}

TEST_F(FaultInjectionFileSystemTest, DropRevertsUnsyncedAppends) {
  const std::string path = Path("log");
  auto f = Open(path);
  ASSERT_OK(fs_.SyncDir(dir_.path()));
  ASSERT_OK(f->Append("synced-1 "));
  ASSERT_OK(f->Append("synced-2 "));
  ASSERT_OK(f->Sync());
  ASSERT_OK(f->Append("lost-1 "));
  ASSERT_OK(f->Append("lost-2"));
  ASSERT_OK(f->Flush());  // handed to the OS, but not durable
  EXPECT_EQ(Contents(path), "synced-1 synced-2 lost-1 lost-2");
  EXPECT_EQ(fs_.UnsyncedFiles(), std::vector<std::string>{path});
  ASSERT_OK(f->Close());
  ASSERT_OK(fs_.DropUnsyncedData());
  EXPECT_EQ(Contents(path), "synced-1 synced-2 ");
  EXPECT_TRUE(fs_.UnsyncedFiles().empty());
}

TEST_F(FaultInjectionFileSystemTest, DropRevertsPositionedOverwritesExactly) {
  const std::string path = Path("segment");
  auto f = Open(path);
  ASSERT_OK(fs_.SyncDir(dir_.path()));
  ASSERT_OK(f->Allocate(0, 64));
  ASSERT_OK(f->WriteAt(0, Slice("HEADER")));
  ASSERT_OK(f->WriteAt(20, Slice("durable-record")));
  ASSERT_OK(f->Sync());
  const std::string synced = Contents(path);
  ASSERT_EQ(synced.size(), 64u);

  // Unsynced: overwrite durable bytes, write into zeros, overlap an earlier
  // unsynced write, write past the end, then several iovecs at once.
  ASSERT_OK(f->WriteAt(22, Slice("XXXX")));
  ASSERT_OK(f->WriteAt(40, Slice("new-record")));
  ASSERT_OK(f->WriteAt(38, Slice("OVERLAPPING")));
  ASSERT_OK(f->WriteAt(60, Slice("past-the-end")));
  std::string a = "io", b = "vec";
  struct iovec iov[2] = {{a.data(), a.size()}, {b.data(), b.size()}};
  ASSERT_OK(f->WriteAt(3, iov, 2));
  EXPECT_EQ(f->Size(), 72u);
  EXPECT_NE(Contents(path), synced);
  ASSERT_OK(f->Close());

  ASSERT_OK(fs_.DropUnsyncedData());
  EXPECT_EQ(Contents(path), synced);
}

TEST_F(FaultInjectionFileSystemTest, DropRevertsTruncateAndAllocate) {
  const std::string path = Path("f");
  WriteDurable(path, "0123456789");
  auto f = Open(path, /*truncate=*/false);
  ASSERT_OK(f->Truncate(4));
  ASSERT_OK(f->Append("abc"));
  ASSERT_OK(f->Allocate(0, 1000));
  EXPECT_EQ(Contents(path).size(), 1000u);
  ASSERT_OK(f->Close());
  ASSERT_OK(fs_.DropUnsyncedData());
  EXPECT_EQ(Contents(path), "0123456789");
}

TEST_F(FaultInjectionFileSystemTest, DropRestoresAFileTruncatedByOpening) {
  const std::string path = Path("f");
  WriteDurable(path, "old contents");
  auto f = Open(path, /*truncate=*/true);
  ASSERT_OK(f->Append("new"));
  EXPECT_EQ(Contents(path), "new");
  ASSERT_OK(f->Close());
  ASSERT_OK(fs_.DropUnsyncedData());
  EXPECT_EQ(Contents(path), "old contents");

  // Once synced, the new contents stay.
  f = Open(path, /*truncate=*/true);
  ASSERT_OK(f->Append("new"));
  ASSERT_OK(f->Sync());
  ASSERT_OK(f->Close());
  ASSERT_OK(fs_.DropUnsyncedData());
  EXPECT_EQ(Contents(path), "new");
}

TEST_F(FaultInjectionFileSystemTest, FilesCreatedWithoutSyncDirDisappear) {
  // Entirely durable.
  WriteDurable(Path("durable"), "abc");
  // Created in a subdirectory; only the parent is synced.
  ASSERT_OK(fs_.CreateDirIfMissing(Path("sub")));
  auto f = Open(Path("sub/child"));
  ASSERT_OK(f->Append("abc"));
  ASSERT_OK(f->Sync());
  ASSERT_OK(f->Close());
  ASSERT_OK(fs_.SyncDir(dir_.path()));
  // Directory synced, data not: the file stays, empty.
  f = Open(Path("entry-synced"));
  ASSERT_OK(fs_.SyncDir(dir_.path() + "/"));  // spelling of the directory does not matter
  ASSERT_OK(f->Append("abc"));
  ASSERT_OK(f->Close());
  // Synced data but no SyncDir: the directory entry is lost.
  f = Open(Path("synced-data"));
  ASSERT_OK(f->Append("abc"));
  ASSERT_OK(f->Sync());
  ASSERT_OK(f->Close());
  // Neither synced.
  f = Open(Path("nothing-synced"));
  ASSERT_OK(f->Append("abc"));
  ASSERT_OK(f->Close());

  std::vector<std::string> unsynced = fs_.UnsyncedFiles();
  EXPECT_EQ(unsynced, (std::vector<std::string>{Path("entry-synced"), Path("nothing-synced"),
                                                Path("sub/child"), Path("synced-data")}));
  ASSERT_OK(fs_.DropUnsyncedData());
  EXPECT_FALSE(base_->FileExists(Path("synced-data")));
  EXPECT_FALSE(base_->FileExists(Path("nothing-synced")));
  EXPECT_FALSE(base_->FileExists(Path("sub/child")));
  EXPECT_EQ(Contents(Path("entry-synced")), "");
  EXPECT_EQ(Contents(Path("durable")), "abc");
}

TEST_F(FaultInjectionFileSystemTest, RenamesAndDeletes) {
  WriteDurable(Path("CURRENT"), "v1");
  // The same with SyncDir after the rename: durable.
  {
    auto f = Open(Path("b.tmp"));
    ASSERT_OK(f->Append("b"));
    ASSERT_OK(f->Sync());
    ASSERT_OK(f->Close());
    ASSERT_OK(fs_.RenameFile(Path("b.tmp"), Path("b")));
    ASSERT_OK(fs_.SyncDir(dir_.path()));
  }
  // Unsynced data follows a rename of a durable file.
  WriteDurable(Path("c"), "c-synced");
  {
    auto f = Open(Path("c"), /*truncate=*/false);
    ASSERT_OK(f->Append("+lost"));
    ASSERT_OK(fs_.RenameFile(Path("c"), Path("d")));
    ASSERT_OK(f->Append("+lost-too"));
    ASSERT_OK(f->Close());
  }
  // A deleted file stays deleted.
  WriteDurable(Path("e"), "e");
  ASSERT_OK(fs_.DeleteFile(Path("e")));

  // No SyncDir from here on.
  // Atomic replacement of a durable file, without the final SyncDir: the
  // rename is kept (see the header), with the new, synced contents.
  {
    auto f = Open(Path("CURRENT.tmp"));
    ASSERT_OK(f->Append("v2"));
    ASSERT_OK(f->Sync());
    ASSERT_OK(f->Close());
    ASSERT_OK(fs_.RenameFile(Path("CURRENT.tmp"), Path("CURRENT")));
  }
  // A new file renamed to a new name, with no SyncDir after either: gone
  // under both names.
  {
    auto f = Open(Path("a.tmp"));
    ASSERT_OK(f->Append("a"));
    ASSERT_OK(f->Sync());
    ASSERT_OK(f->Close());
    ASSERT_OK(fs_.RenameFile(Path("a.tmp"), Path("a")));
  }

  ASSERT_OK(fs_.DropUnsyncedData());
  EXPECT_EQ(Contents(Path("CURRENT")), "v2");
  EXPECT_FALSE(base_->FileExists(Path("CURRENT.tmp")));
  EXPECT_FALSE(base_->FileExists(Path("a.tmp")));
  EXPECT_FALSE(base_->FileExists(Path("a")));
  EXPECT_EQ(Contents(Path("b")), "b");
  EXPECT_FALSE(base_->FileExists(Path("c")));
  EXPECT_EQ(Contents(Path("d")), "c-synced");
  EXPECT_FALSE(base_->FileExists(Path("e")));
}

TEST_F(FaultInjectionFileSystemTest, WriteFileAtomicallyIsDurable) {
  ASSERT_OK(WriteFileAtomically(&fs_, Path("CURRENT"), "MANIFEST-000001"));
  ASSERT_OK(fs_.DropUnsyncedData());
  EXPECT_EQ(Contents(Path("CURRENT")), "MANIFEST-000001");
  EXPECT_FALSE(base_->FileExists(Path("CURRENT.tmp")));
}

TEST_F(FaultInjectionFileSystemTest, OpenFilesAreInvalidatedByDrop) {
  auto f = Open(Path("f"));
  ASSERT_OK(fs_.SyncDir(dir_.path()));
  ASSERT_OK(f->Append("durable"));
  ASSERT_OK(f->Sync());
  ASSERT_OK(f->Append("lost"));
  ASSERT_OK(fs_.DropUnsyncedData());  // with the file still open
  Status s = f->Append("more");
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_TRUE(f->Sync().IsIOError());
  EXPECT_OK(f->Close());
  f.reset();
  EXPECT_EQ(Contents(Path("f")), "durable");
  // New handles work.
  f = Open(Path("f"), /*truncate=*/false);
  ASSERT_OK(f->Append("+again"));
  ASSERT_OK(f->Close());
  EXPECT_EQ(Contents(Path("f")), "durable+again");
}

TEST_F(FaultInjectionFileSystemTest, TearKeepsAPrefixOfTheLastWrite) {
  const std::string path = Path("log");
  WriteDurable(path, "AAAA");
  auto f = Open(path, /*truncate=*/false);
  ASSERT_OK(f->Append("BBBBBBBB"));
  ASSERT_OK(f->Close());
  ASSERT_OK(fs_.TearUnsyncedData(3));
  EXPECT_EQ(Contents(path), "AAAABBB");

  // Everything but the torn prefix of the last write is reverted; what the
  // earlier unsynced append covered is a hole.
  f = Open(path, /*truncate=*/false);
  ASSERT_OK(f->Append("CC"));
  ASSERT_OK(f->Append("DDDDDD"));
  ASSERT_OK(f->Close());
  ASSERT_OK(fs_.TearUnsyncedData(4));
  EXPECT_EQ(Contents(path), std::string("AAAABBB\0\0DDDD", 13));

  // A keep longer than the write keeps all of it.
  f = Open(path, /*truncate=*/false);
  ASSERT_OK(f->Append("EE"));
  ASSERT_OK(f->Close());
  ASSERT_OK(fs_.TearUnsyncedData(100));
  EXPECT_EQ(Contents(path), std::string("AAAABBB\0\0DDDDEE", 15));
}

TEST_F(FaultInjectionFileSystemTest, TearOfAPositionedOverwrite) {
  const std::string path = Path("segment");
  WriteDurable(path, "0123456789");
  auto f = Open(path, /*truncate=*/false);
  ASSERT_OK(f->WriteAt(2, Slice("abcdef")));
  ASSERT_OK(f->Truncate(5));  // after the last write: reverted as well
  ASSERT_OK(f->Close());
  ASSERT_OK(fs_.TearUnsyncedData(2));
  EXPECT_EQ(Contents(path), "01ab456789");
}

TEST_F(FaultInjectionFileSystemTest, RandomTearIsAPrefix) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Random rnd(seed);
  const std::string path = Path("log");
  WriteDurable(path, "synced|");
  std::string expected = "synced|";
  for (int round = 0; round < 30; round++) {
    auto f = Open(path, /*truncate=*/false);
    const std::string record = rnd.RandomLetters(1 + rnd.Uniform(50));
    ASSERT_OK(f->Append(record));
    ASSERT_OK(f->Close());
    ASSERT_OK(fs_.TearUnsyncedData(&rnd));
    const std::string got = Contents(path);
    ASSERT_GE(got.size(), expected.size());
    ASSERT_LT(got.size(), expected.size() + record.size());  // torn: never all of it
    ASSERT_EQ(got, expected + record.substr(0, got.size() - expected.size()));
    expected = got;
  }
}

// Random changes to several files against a model of what each file held at
// its last Sync.
TEST_F(FaultInjectionFileSystemTest, RandomizedDropMatchesModel) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Random rnd(seed);
  const int rounds = test::LongTests() ? 200 : 30;
  const std::vector<std::string> paths = {Path("f0"), Path("f1"), Path("f2")};
  std::map<std::string, std::string> durable;  // at the last Sync
  for (const auto& p : paths) {
    WriteDurable(p, "");
    durable[p] = "";
  }
  for (int round = 0; round < rounds; round++) {
    std::map<std::string, std::unique_ptr<WritableFile>> open;
    std::map<std::string, std::string> current = durable;
    for (const auto& p : paths) open[p] = Open(p, /*truncate=*/false);
    for (int step = 0; step < 40; step++) {
      const std::string& p = paths[rnd.Uniform(paths.size())];
      WritableFile* f = open[p].get();
      std::string& cur = current[p];
      switch (rnd.Uniform(6)) {
        case 0: {
          const std::string data = rnd.RandomBytes(rnd.Uniform(300));
          ASSERT_OK(f->Append(data));
          cur += data;
          break;
        }
        case 1: {
          const uint64_t offset = rnd.Uniform(cur.size() + 100);
          const std::string data = rnd.RandomBytes(1 + rnd.Uniform(200));
          ASSERT_OK(f->WriteAt(offset, Slice(data)));
          if (cur.size() < offset + data.size()) cur.resize(offset + data.size(), '\0');
          cur.replace(offset, data.size(), data);
          break;
        }
        case 2: {
          const uint64_t size = rnd.Uniform(cur.size() + 50);
          ASSERT_OK(f->Truncate(size));
          cur.resize(size, '\0');
          break;
        }
        case 3: {
          const uint64_t offset = rnd.Uniform(cur.size() + 100);
          const uint64_t len = 1 + rnd.Uniform(500);
          ASSERT_OK(f->Allocate(offset, len));
          if (cur.size() < offset + len) cur.resize(offset + len, '\0');
          break;
        }
        case 4:
          if (rnd.OneIn(3)) {
            ASSERT_OK(f->Sync());
            durable[p] = cur;
          }
          break;
        default:
          ASSERT_OK(f->Flush());
          break;
      }
      ASSERT_EQ(f->Size(), cur.size());
    }
    for (const auto& p : paths) {
      ASSERT_EQ(Contents(p), current[p]) << p;
      ASSERT_OK(open[p]->Close());
    }
    ASSERT_OK(fs_.DropUnsyncedData());
    for (const auto& p : paths) ASSERT_EQ(Contents(p), durable[p]) << p << " round " << round;
  }
}

TEST_F(FaultInjectionFileSystemTest, ReadFaultsOnlyAffectReads) {
  WriteDurable(Path("f"), "0123456789");
  std::unique_ptr<RandomAccessFile> r;
  ASSERT_OK(fs_.NewRandomAccessFile(Path("f"), &r));
  fs_.FailAfter(FaultOp::kRead, 1, 1, EIO);
  char scratch[4];
  Slice got;
  ASSERT_OK(r->Read(0, 4, &got, scratch));
  EXPECT_EQ(got.ToString(), "0123");
  EXPECT_TRUE(r->Read(0, 4, &got, scratch).IsIOError());
  ASSERT_OK(r->Read(6, 4, &got, scratch));
  EXPECT_EQ(got.ToString(), "6789");
  Result<uint64_t> size = r->Size();
  ASSERT_OK(size);
  EXPECT_EQ(*size, 10u);
}

TEST_F(FaultInjectionFileSystemTest, ConcurrentWritersAndFaultChanges) {
  constexpr int kThreads = 4;
  constexpr int kAppends = 500;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([this, t, &failures] {
      std::unique_ptr<WritableFile> f;
      if (!fs_.NewWritableFile(Path("t" + std::to_string(t)), FileOpenOptions{}, &f).ok()) {
        failures++;
        return;
      }
      for (int i = 0; i < kAppends; i++) {
        if (!f->Append("x").ok()) failures++;
        if (i % 50 == 0 && !f->Sync().ok()) failures++;
      }
      if (!f->Close().ok()) failures++;
    });
  }
  for (int i = 0; i < 100; i++) {
    fs_.FailRandomly(FaultOp::kRead, 0.5, i, EIO);  // a kind the writers never use
    fs_.ClearFaults();
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(fs_.OpCount(FaultOp::kWrite), static_cast<uint64_t>(kThreads * kAppends));
  for (int t = 0; t < kThreads; t++) {
    EXPECT_EQ(Contents(Path("t" + std::to_string(t))), std::string(kAppends, 'x'));
  }
}

}  // namespace
}  // namespace strata
