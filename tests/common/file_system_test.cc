#include "common/file_system.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <string>
#include <vector>

#include "common/random.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata {
namespace {

class PosixFileSystemTest : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) const { return dir_.Join(name); }

  std::string Contents(const std::string& path) {
    std::string data;
    Status s = ReadFileToString(fs_, path, &data);
    EXPECT_OK(s);
    return data;
  }

  std::unique_ptr<WritableFile> OpenWritable(const std::string& path, bool truncate = true) {
    std::unique_ptr<WritableFile> f;
    FileOpenOptions options;
    options.truncate = truncate;
    Status s = fs_->NewWritableFile(path, options, &f);
    EXPECT_OK(s);
    return f;
  }

  FileSystem* fs_ = FileSystem::Default();
  test::ScratchDir dir_{"fs"};
};

TEST_F(PosixFileSystemTest, WriteThenRead) {
  const std::string path = Path("f");
  auto f = OpenWritable(path);
  ASSERT_NE(f, nullptr);
  EXPECT_GE(f->fd(), 0);
  EXPECT_EQ(f->Size(), 0u);
  ASSERT_OK(f->Append("hello "));
  ASSERT_OK(f->Append(Slice("world\0!", 7)));
  EXPECT_EQ(f->Size(), 13u);
  ASSERT_OK(f->Sync());
  ASSERT_OK(f->Close());
  ASSERT_OK(f->Close());  // closing twice is harmless
  EXPECT_EQ(Contents(path), std::string("hello world\0!", 13));
  Result<uint64_t> size = fs_->GetFileSize(path);
  ASSERT_OK(size);
  EXPECT_EQ(*size, 13u);
  EXPECT_TRUE(fs_->FileExists(path));
}

TEST_F(PosixFileSystemTest, AppendsLargerThanTheBufferKeepTheirOrder) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Random rnd(seed);
  const std::string path = Path("big");
  auto f = OpenWritable(path);
  std::string expected;
  for (int i = 0; i < 200; i++) {
    const size_t n = rnd.OneIn(10) ? rnd.Uniform(200000) : rnd.Uniform(3000);
    const std::string piece = rnd.RandomBytes(n);
    ASSERT_OK(f->Append(piece));
    expected += piece;
    ASSERT_EQ(f->Size(), expected.size());
    if (rnd.OneIn(20)) {
      ASSERT_OK(f->Flush());
    }
  }
  ASSERT_OK(f->Close());
  EXPECT_EQ(Contents(path), expected);
}

TEST_F(PosixFileSystemTest, UnflushedAppendsReachTheFileOnFlush) {
  const std::string path = Path("f");
  auto f = OpenWritable(path);
  ASSERT_OK(f->Append("abc"));
  ASSERT_OK(f->Flush());
  EXPECT_EQ(Contents(path), "abc");
  ASSERT_OK(f->Append("def"));
  f.reset();  // the destructor closes and flushes
  EXPECT_EQ(Contents(path), "abcdef");
}

TEST_F(PosixFileSystemTest, OpenWithoutTruncateAppendsAtTheEnd) {
  const std::string path = Path("f");
  auto f = OpenWritable(path);
  ASSERT_OK(f->Append("first"));
  ASSERT_OK(f->Close());
  f = OpenWritable(path, /*truncate=*/false);
  EXPECT_EQ(f->Size(), 5u);
  ASSERT_OK(f->Append("+second"));
  ASSERT_OK(f->Close());
  EXPECT_EQ(Contents(path), "first+second");
  f = OpenWritable(path, /*truncate=*/true);
  EXPECT_EQ(f->Size(), 0u);
  ASSERT_OK(f->Close());
  EXPECT_EQ(Contents(path), "");
}

TEST_F(PosixFileSystemTest, WriteAtWithSeveralBuffers) {
  const std::string path = Path("f");
  auto f = OpenWritable(path);
  ASSERT_OK(f->Append("0123456789"));  // buffered; WriteAt must flush it first
  std::string a = "ab", b = "", c = "cde";
  struct iovec iov[3] = {{a.data(), a.size()}, {b.data(), b.size()}, {c.data(), c.size()}};
  ASSERT_OK(f->WriteAt(2, iov, 3));
  EXPECT_EQ(f->Size(), 10u);  // inside the file: the end does not move
  EXPECT_EQ(Contents(path), "01abcde789");
  // Past the end: the file grows, with a hole of zeros, and appends follow.
  ASSERT_OK(f->WriteAt(12, iov, 3));
  EXPECT_EQ(f->Size(), 17u);
  ASSERT_OK(f->Append("Z"));
  ASSERT_OK(f->WriteAt(0, Slice("X")));
  ASSERT_OK(f->Close());
  EXPECT_EQ(Contents(path), std::string("X1abcde789\0\0abcdeZ", 18));
}

TEST_F(PosixFileSystemTest, WriteAtWithMoreBuffersThanOneSystemCallTakes) {
  const std::string path = Path("f");
  auto f = OpenWritable(path);
  std::vector<std::string> pieces;
  std::string expected;
  for (int i = 0; i < 3000; i++) {
    // Long runs of empty buffers too: they must not look like a stalled write.
    pieces.push_back(i < 1500 ? "" : std::to_string(i) + ",");
    expected += pieces.back();
  }
  std::vector<struct iovec> iov;
  for (auto& p : pieces) iov.push_back({p.data(), p.size()});
  ASSERT_OK(f->WriteAt(0, iov.data(), static_cast<int>(iov.size())));
  EXPECT_EQ(f->Size(), expected.size());
  ASSERT_OK(f->Close());
  EXPECT_EQ(Contents(path), expected);
}

TEST_F(PosixFileSystemTest, AllocateAndTruncate) {
  const std::string path = Path("f");
  auto f = OpenWritable(path);
  ASSERT_OK(f->Append("abc"));
  ASSERT_OK(f->Allocate(0, 4096));
  EXPECT_EQ(f->Size(), 4096u);
  EXPECT_EQ(*fs_->GetFileSize(path), 4096u);
  std::string expected = "abc" + std::string(4093, '\0');
  EXPECT_EQ(Contents(path), expected);
  // Allocating inside the file changes nothing.
  ASSERT_OK(f->Allocate(100, 100));
  EXPECT_EQ(f->Size(), 4096u);
  // Positioned writes into the allocated space.
  ASSERT_OK(f->WriteAt(1000, Slice("xyz")));
  expected.replace(1000, 3, "xyz");
  EXPECT_EQ(Contents(path), expected);
  ASSERT_OK(f->Truncate(1002));
  EXPECT_EQ(f->Size(), 1002u);
  EXPECT_EQ(Contents(path), expected.substr(0, 1002));
  ASSERT_OK(f->Append("!"));  // appends continue at the new end
  ASSERT_OK(f->Truncate(1010));
  ASSERT_OK(f->Close());
  EXPECT_EQ(Contents(path), expected.substr(0, 1002) + "!" + std::string(7, '\0'));
}

TEST_F(PosixFileSystemTest, SequentialFile) {
  const std::string path = Path("f");
  auto w = OpenWritable(path);
  ASSERT_OK(w->Append("0123456789"));
  ASSERT_OK(w->Close());
  std::unique_ptr<SequentialFile> f;
  ASSERT_OK(fs_->NewSequentialFile(path, &f));
  char scratch[16];
  Slice got;
  ASSERT_OK(f->Read(3, &got, scratch));
  EXPECT_EQ(got.ToString(), "012");
  ASSERT_OK(f->Skip(2));
  ASSERT_OK(f->Read(3, &got, scratch));
  EXPECT_EQ(got.ToString(), "567");
  ASSERT_OK(f->Read(16, &got, scratch));
  EXPECT_EQ(got.ToString(), "89");  // short read: end of file
  ASSERT_OK(f->Read(16, &got, scratch));
  EXPECT_TRUE(got.empty());
}

TEST_F(PosixFileSystemTest, RandomAccessFile) {
  const std::string path = Path("f");
  auto w = OpenWritable(path);
  ASSERT_OK(w->Append("0123456789"));
  ASSERT_OK(w->Close());
  std::unique_ptr<RandomAccessFile> f;
  ASSERT_OK(fs_->NewRandomAccessFile(path, &f));
  char scratch[16];
  Slice got;
  ASSERT_OK(f->Read(4, 3, &got, scratch));
  EXPECT_EQ(got.ToString(), "456");
  ASSERT_OK(f->Read(0, 2, &got, scratch));
  EXPECT_EQ(got.ToString(), "01");
  ASSERT_OK(f->Read(8, 10, &got, scratch));
  EXPECT_EQ(got.ToString(), "89");
  ASSERT_OK(f->Read(100, 10, &got, scratch));
  EXPECT_TRUE(got.empty());
  Result<uint64_t> size = f->Size();
  ASSERT_OK(size);
  EXPECT_EQ(*size, 10u);
}

TEST_F(PosixFileSystemTest, MissingFiles) {
  const std::string missing = Path("missing");
  std::unique_ptr<SequentialFile> s;
  EXPECT_TRUE(fs_->NewSequentialFile(missing, &s).IsNotFound());
  std::unique_ptr<RandomAccessFile> r;
  Status st = fs_->NewRandomAccessFile(missing, &r);
  EXPECT_TRUE(st.IsNotFound());
  EXPECT_NE(st.message().find(missing), std::string::npos) << st.ToString();
  EXPECT_FALSE(fs_->FileExists(missing));
  EXPECT_TRUE(fs_->GetFileSize(missing).status().IsNotFound());
  EXPECT_TRUE(fs_->DeleteFile(missing).IsNotFound());
  EXPECT_TRUE(fs_->RenameFile(missing, Path("other")).IsNotFound());
  std::string data;
  EXPECT_TRUE(ReadFileToString(fs_, missing, &data).IsNotFound());
  std::vector<std::string> names;
  EXPECT_TRUE(fs_->GetChildren(Path("nodir"), &names).IsNotFound());
  EXPECT_TRUE(fs_->SyncDir(Path("nodir")).IsNotFound());
  std::unique_ptr<WritableFile> w;
  EXPECT_TRUE(fs_->NewWritableFile(Path("nodir/f"), FileOpenOptions{}, &w).IsNotFound());
}

TEST_F(PosixFileSystemTest, DirectoriesAndNames) {
  const std::string sub = Path("sub");
  ASSERT_OK(fs_->CreateDirIfMissing(sub));
  ASSERT_OK(fs_->CreateDirIfMissing(sub));  // already there: fine
  for (const char* name : {"a", "b", "c"}) {
    auto f = OpenWritable(JoinPath(sub, name));
    ASSERT_OK(f->Close());
  }
  std::vector<std::string> names = {"stale"};
  ASSERT_OK(fs_->GetChildren(sub, &names));
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b", "c"}));
  ASSERT_OK(fs_->SyncDir(sub));

  ASSERT_OK(fs_->DeleteFile(JoinPath(sub, "a")));
  EXPECT_FALSE(fs_->FileExists(JoinPath(sub, "a")));
  ASSERT_OK(fs_->RenameFile(JoinPath(sub, "b"), JoinPath(sub, "d")));
  EXPECT_FALSE(fs_->FileExists(JoinPath(sub, "b")));
  EXPECT_TRUE(fs_->FileExists(JoinPath(sub, "d")));
  // Rename replaces an existing target.
  {
    auto f = OpenWritable(JoinPath(sub, "c"));
    ASSERT_OK(f->Append("new c"));
    ASSERT_OK(f->Close());
  }
  ASSERT_OK(fs_->RenameFile(JoinPath(sub, "c"), JoinPath(sub, "d")));
  EXPECT_EQ(Contents(JoinPath(sub, "d")), "new c");
  ASSERT_OK(fs_->GetChildren(sub, &names));
  EXPECT_EQ(names, std::vector<std::string>{"d"});

  EXPECT_FALSE(fs_->DeleteDir(sub).ok());  // not empty
  ASSERT_OK(fs_->DeleteFile(JoinPath(sub, "d")));
  ASSERT_OK(fs_->DeleteDir(sub));
  EXPECT_FALSE(fs_->FileExists(sub));
  EXPECT_TRUE(fs_->DeleteDir(sub).IsNotFound());
}

TEST_F(PosixFileSystemTest, LockFile) {
  const std::string path = Path("LOCK");
  std::unique_ptr<FileLock> lock;
  ASSERT_OK(fs_->LockFile(path, &lock));
  ASSERT_NE(lock, nullptr);
  EXPECT_TRUE(fs_->FileExists(path));

  std::unique_ptr<FileLock> second;
  Status s = fs_->LockFile(path, &second);
  EXPECT_TRUE(s.IsBusy()) << s.ToString();
  EXPECT_NE(s.message().find(path), std::string::npos);
  EXPECT_EQ(second, nullptr);

  // Another lock file is independent.
  std::unique_ptr<FileLock> other;
  ASSERT_OK(fs_->LockFile(Path("LOCK2"), &other));
  ASSERT_OK(fs_->UnlockFile(std::move(other)));

  ASSERT_OK(fs_->UnlockFile(std::move(lock)));
  ASSERT_OK(fs_->LockFile(path, &second));
  ASSERT_OK(fs_->UnlockFile(std::move(second)));
  EXPECT_TRUE(fs_->UnlockFile(nullptr).IsInvalidArgument());
}

// The lock is a real flock: another process cannot take it either.
TEST_F(PosixFileSystemTest, LockFileExcludesOtherProcesses) {
  const std::string path = Path("LOCK");
  std::unique_ptr<FileLock> lock;
  ASSERT_OK(fs_->LockFile(path, &lock));
  auto child_can_lock = [&path]() {
    pid_t pid = ::fork();
    if (pid == 0) {
      int fd = ::open(path.c_str(), O_RDWR);
      const bool locked = fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) == 0;
      ::_exit(locked ? 0 : 1);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
  };
  EXPECT_FALSE(child_can_lock());
  ASSERT_OK(fs_->UnlockFile(std::move(lock)));
  EXPECT_TRUE(child_can_lock());
}

TEST_F(PosixFileSystemTest, WriteFileAtomically) {
  const std::string path = Path("CURRENT");
  ASSERT_OK(WriteFileAtomically(fs_, path, "one"));
  EXPECT_EQ(Contents(path), "one");
  ASSERT_OK(WriteFileAtomically(fs_, path, std::string("two\0two", 7)));
  EXPECT_EQ(Contents(path), std::string("two\0two", 7));
  std::vector<std::string> names;
  ASSERT_OK(fs_->GetChildren(dir_.path(), &names));
  EXPECT_EQ(names, std::vector<std::string>{"CURRENT"});  // no temporary left behind
  EXPECT_FALSE(WriteFileAtomically(fs_, Path("nodir/CURRENT"), "x").ok());
}

TEST_F(PosixFileSystemTest, ReadFileToStringOfManyChunks) {
  Random rnd(4);
  const std::string data = rnd.RandomBytes(3 * 64 * 1024 + 17);
  ASSERT_OK(WriteFileAtomically(fs_, Path("f"), data));
  EXPECT_EQ(Contents(Path("f")), data);
  // An exact multiple of the read chunk.
  const std::string even = rnd.RandomBytes(2 * 64 * 1024);
  ASSERT_OK(WriteFileAtomically(fs_, Path("g"), even));
  EXPECT_EQ(Contents(Path("g")), even);
}

// A failed flush must not drop the buffered bytes: otherwise the next Sync
// reports success for data that never reached the file.
TEST_F(PosixFileSystemTest, FailedFlushKeepsReportingTheError) {
  if (!fs_->FileExists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  auto f = OpenWritable("/dev/full", /*truncate=*/false);
  ASSERT_NE(f, nullptr);
  ASSERT_OK(f->Append("abc"));  // buffered
  Status s = f->Flush();
  EXPECT_TRUE(s.IsResourceExhausted()) << s.ToString();
  s = f->Flush();
  EXPECT_TRUE(s.IsResourceExhausted()) << s.ToString();
  EXPECT_FALSE(f->Sync().ok());
  EXPECT_FALSE(f->Close().ok());
}

TEST(FileSystemPathTest, JoinAndDirName) {
  EXPECT_EQ(JoinPath("a", "b"), "a/b");
  EXPECT_EQ(JoinPath("a/", "b"), "a/b");
  EXPECT_EQ(JoinPath("", "b"), "b");
  EXPECT_EQ(JoinPath("/", "b"), "/b");
  EXPECT_EQ(DirName("a/b/c"), "a/b");
  EXPECT_EQ(DirName("/a"), "/");
  EXPECT_EQ(DirName("c"), ".");
  EXPECT_EQ(DirName(JoinPath("/x/y", "f")), "/x/y");
}

}  // namespace
}  // namespace strata
