// FileSystem: the interface through which an Engine reads and writes every
// file (EngineOptions::file_system). Strata uses the local POSIX file system
// unless given another: one that injects faults, encrypts, or counts I/O.
//
// FileSystem implementations must be thread-safe. File objects are
// thread-compatible unless a method says otherwise. No call throws; every
// failure is a Status.
#ifndef STRATA_FILE_SYSTEM_H_
#define STRATA_FILE_SYSTEM_H_

#include <sys/uio.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "strata/slice.h"
#include "strata/status.h"

namespace strata {

// A file read from front to back.
class SequentialFile {
 public:
  virtual ~SequentialFile() = default;
  // Reads up to n bytes into scratch and points *result at them (possibly not
  // at scratch). Fewer than n bytes means end of file. *result is valid until
  // the next call.
  virtual Status Read(size_t n, Slice* result, char* scratch) = 0;
  virtual Status Skip(uint64_t n) = 0;
};

// A file read at any offset. Thread-safe.
class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  // Reads up to n bytes at offset; fewer only at end of file.
  virtual Status Read(uint64_t offset, size_t n, Slice* result, char* scratch) const = 0;
  virtual Result<uint64_t> Size() const = 0;
};

// A file being written: appended to, or written at given offsets (the log
// writes into preallocated segments).
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  // Appends at the current end (tracked by the object, starting at the size
  // the file had when opened). May buffer; Flush or Sync pushes it out.
  virtual Status Append(const Slice& data) = 0;
  // Writes the buffers, in order, starting at `offset`; does not move the
  // append position unless it writes past it. Not buffered.
  virtual Status WriteAt(uint64_t offset, const struct iovec* iov, int iovcnt) = 0;
  Status WriteAt(uint64_t offset, const Slice& data) {
    struct iovec v{const_cast<char*>(data.data()), data.size()};
    return WriteAt(offset, &v, 1);
  }
  // Hands buffered appends to the operating system.
  virtual Status Flush() = 0;
  // Makes everything written so far durable (fdatasync).
  virtual Status Sync() = 0;
  // Reserves [offset, offset+len) on disk; the file grows to offset+len.
  virtual Status Allocate(uint64_t offset, uint64_t len) = 0;
  virtual Status Truncate(uint64_t size) = 0;
  virtual Status Close() = 0;
  // The size including buffered appends.
  virtual uint64_t Size() const = 0;
  // The POSIX descriptor when this is a plain local file that may be written
  // directly (the io_uring log writer does), otherwise -1. A caller that
  // writes through the descriptor must Sync through it too.
  virtual int fd() const { return -1; }
};

// An exclusive lock on a file, held until FileSystem::UnlockFile.
class FileLock {
 public:
  virtual ~FileLock() = default;
};

struct FileOpenOptions {
  // Truncate an existing file (false: keep its contents, append at its end).
  bool truncate = true;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  virtual Status NewSequentialFile(const std::string& path,
                                   std::unique_ptr<SequentialFile>* result) = 0;
  virtual Status NewRandomAccessFile(const std::string& path,
                                     std::unique_ptr<RandomAccessFile>* result) = 0;
  // Creates the file if missing.
  virtual Status NewWritableFile(const std::string& path, const FileOpenOptions& options,
                                 std::unique_ptr<WritableFile>* result) = 0;

  virtual bool FileExists(const std::string& path) = 0;
  // Names (not paths) of the entries of a directory, without "." and "..".
  virtual Status GetChildren(const std::string& dir, std::vector<std::string>* names) = 0;
  virtual Status DeleteFile(const std::string& path) = 0;
  virtual Status RenameFile(const std::string& from, const std::string& to) = 0;
  virtual Status CreateDirIfMissing(const std::string& dir) = 0;
  virtual Status DeleteDir(const std::string& dir) = 0;
  virtual Result<uint64_t> GetFileSize(const std::string& path) = 0;
  // Makes the directory's entries (creations, renames, deletions) durable.
  virtual Status SyncDir(const std::string& dir) = 0;

  // Takes an exclusive lock on `path` (created if missing). Fails with Busy if
  // another holder, in this process or another, has it.
  virtual Status LockFile(const std::string& path, std::unique_ptr<FileLock>* lock) = 0;
  virtual Status UnlockFile(std::unique_ptr<FileLock> lock) = 0;

  // The process-wide POSIX file system.
  static FileSystem* Default();
};

}  // namespace strata

#endif  // STRATA_FILE_SYSTEM_H_
