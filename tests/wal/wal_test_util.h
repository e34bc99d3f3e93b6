// Helpers for the log tests: writing and reading back whole logs, byte-level
// surgery on segment files, and a file system whose descriptors cannot be
// written (to make io_uring fail).
//
// Thread-compatible.
#ifndef STRATA_TESTS_WAL_WAL_TEST_UTIL_H_
#define STRATA_TESTS_WAL_WAL_TEST_UTIL_H_

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/file_system.h"
#include "common/random.h"
#include "util/status_matchers.h"
#include "util/forwarding_fs.h"
#include "util/test_util.h"
#include "wal/log_format.h"
#include "wal/log_reader.h"
#include "wal/log_writer.h"

namespace strata::wal::test {

struct Rec {
  SequenceNumber first = 0;
  uint64_t count = 0;
  std::string payload;
};  // Intentionally copyable.
inline bool operator==(const Rec& a, const Rec& b) {
  return a.first == b.first && a.count == b.count && a.payload == b.payload;
}

inline Status Recover(const std::string& dir, RecoveryMode mode, std::vector<Rec>* out,
                      RecoveryInfo* info, FileSystem* fs = FileSystem::Default(),
                      bool repair = true) {
  out->clear();
  auto fn = [out](SequenceNumber first, uint64_t count, Slice payload) {
    out->push_back(Rec{first, count, payload.ToString()});
    return Status::OK();
  };
  return repair ? RecoverLog(fs, dir, mode, fn, info) : ReadLog(fs, dir, mode, 0, fn, info);
}

// A payload whose bytes depend on its index, so a misplaced byte shows.
inline std::string MakePayload(uint64_t index, size_t size) {
  std::string p(size, '\0');
  Random rnd(index * 7919 + size);
  for (auto& c : p) c = static_cast<char>(rnd.Next());
  return p;
}

inline LogOptions SmallOptions(bool uring, uint64_t segment_size = 64 * 1024) {
  LogOptions o;
  o.use_io_uring = uring;
  o.segment_size = segment_size;
  return o;
}

// Writes every payload in order with one thread; returns their records.
inline std::vector<Rec> WriteAll(LogWriter* w, const std::vector<std::string>& payloads,
                                 uint64_t count = 1, bool sync = true) {
  std::vector<Rec> recs;
  for (const auto& p : payloads) {
    WriteRequest r;
    r.payload = p;
    r.sequence_count = count;
    r.sync = sync;
    Status s = w->Write(&r);
    EXPECT_OK(s);
    if (!s.ok()) break;
    recs.push_back(Rec{r.first_sequence, count, p});
  }
  return recs;
}

inline std::vector<std::string> SegmentPaths(const std::string& dir) {
  std::vector<std::string> names;
  EXPECT_OK(FileSystem::Default()->GetChildren(dir, &names));
  std::vector<std::pair<uint64_t, std::string>> segs;
  for (const auto& n : names) {
    uint64_t number;
    LogFileKind kind;
    if (ParseLogFileName(n, &number, &kind) && kind == LogFileKind::kSegment) {
      segs.emplace_back(number, dir + "/" + n);
    }
  }
  std::sort(segs.begin(), segs.end());
  std::vector<std::string> paths;
  for (auto& s : segs) paths.push_back(s.second);
  return paths;
}

inline size_t CountFiles(const std::string& dir, const std::string& suffix) {
  std::vector<std::string> names;
  EXPECT_OK(FileSystem::Default()->GetChildren(dir, &names));
  return static_cast<size_t>(std::count_if(names.begin(), names.end(), [&](const std::string& n) {
    return n.size() > suffix.size() &&
           n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0;
  }));
}

inline std::string ReadBytes(const std::string& path) {
  std::string data;
  EXPECT_OK(ReadFileToString(FileSystem::Default(), path, &data));
  return data;
}

inline void WriteBytes(const std::string& path, uint64_t offset, const std::string& bytes) {
  std::unique_ptr<WritableFile> f;
  FileOpenOptions keep;
  keep.truncate = false;
  ASSERT_OK(FileSystem::Default()->NewWritableFile(path, keep, &f));
  ASSERT_OK(f->WriteAt(offset, bytes));
  ASSERT_OK(f->Close());
}

inline void FlipBit(const std::string& path, uint64_t offset, int bit) {
  std::string b = ReadBytes(path).substr(offset, 1);
  b[0] = static_cast<char>(b[0] ^ (1 << bit));
  WriteBytes(path, offset, b);
}

inline void TruncateTo(const std::string& path, uint64_t size) {
  std::filesystem::resize_file(path, size);
}

// Replaces the contents of `to` with a copy of `from` (files only).
inline void CopyDir(const std::string& from, const std::string& to) {
  std::filesystem::remove_all(to);
  std::filesystem::create_directories(to);
  for (const auto& e : std::filesystem::directory_iterator(from)) {
    std::filesystem::copy_file(e.path(), to + "/" + e.path().filename().string());
  }
}

// Every fragment of a log, from a LogReader.
inline std::vector<LogFragment> Fragments(const std::string& dir) {
  std::unique_ptr<LogReader> reader;
  EXPECT_OK(LogReader::OpenDirectory(FileSystem::Default(), dir, &reader));
  std::vector<LogFragment> out;
  LogFragment f;
  while (reader->ReadFragment(&f)) {
    f.payload = Slice();  // not valid past the next call
    out.push_back(f);
  }
  EXPECT_OK(reader->status());
  return out;
}

// A FileSystem whose writable files hand out a read-only descriptor of the
// same file as fd(): writes through the descriptor fail with EBADF, while the
// FileSystem calls work.
class ReadOnlyFdFileSystem final : public ::strata::test::ForwardingFileSystem {
 protected:
  std::unique_ptr<WritableFile> WrapWritable(const std::string& path,
                                             std::unique_ptr<WritableFile> file) override {
    return std::make_unique<File>(std::move(file), ::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  }

 private:
  class File final : public ::strata::test::ForwardingWritableFile {
   public:
    File(std::unique_ptr<WritableFile> base, int ro_fd)
        : ForwardingWritableFile(std::move(base)), ro_fd_(ro_fd) {}
    ~File() override {
      if (ro_fd_ >= 0) ::close(ro_fd_);
    }
    int fd() const override { return ro_fd_; }

   private:
    int ro_fd_;
  };
};

// A FileSystem whose writable files take `sync_micros` longer to Sync and
// have no descriptor, so the log writer goes through them (the fallback path)
// and every group's fdatasync is slow.
class SlowSyncFileSystem final : public ::strata::test::ForwardingFileSystem {
 public:
  explicit SlowSyncFileSystem(uint64_t sync_micros) : sync_micros_(sync_micros) {}

 protected:
  std::unique_ptr<WritableFile> WrapWritable(const std::string& path,
                                             std::unique_ptr<WritableFile> file) override {
    return std::make_unique<File>(std::move(file), sync_micros_);
  }

 private:
  class File final : public ::strata::test::ForwardingWritableFile {
   public:
    File(std::unique_ptr<WritableFile> base, uint64_t sync_micros)
        : ForwardingWritableFile(std::move(base)), sync_micros_(sync_micros) {}
    Status Sync() override {
      Clock::Default()->SleepMicros(sync_micros_);
      return base_->Sync();
    }
    int fd() const override { return -1; }

   private:
    const uint64_t sync_micros_;
  };

  const uint64_t sync_micros_;
};

}  // namespace strata::wal::test

#endif  // STRATA_TESTS_WAL_WAL_TEST_UTIL_H_
