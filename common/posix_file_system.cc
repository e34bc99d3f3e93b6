// The POSIX FileSystem: plain files through open/pread/pwritev/fdatasync.
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <set>

#include "common/file_system.h"
#include "common/mutex.h"

namespace strata {
namespace {

Status PosixError(const std::string& context, int err) {
  std::string msg = context + ": " + std::strerror(err);
  if (err == ENOENT) return Status::NotFound(msg);
  if (err == ENOSPC || err == EDQUOT) return Status::ResourceExhausted(msg);
  return Status::IOError(msg);
}

class PosixSequentialFile final : public SequentialFile {
 public:
  PosixSequentialFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixSequentialFile() override { ::close(fd_); }

  Status Read(size_t n, Slice* result, char* scratch) override {
    size_t done = 0;
    while (done < n) {
      ssize_t r = ::read(fd_, scratch + done, n - done);
      if (r < 0) {
        if (errno == EINTR) continue;
        return PosixError("read " + path_, errno);
      }
      if (r == 0) break;
      done += static_cast<size_t>(r);
    }
    *result = Slice(scratch, done);
    return Status::OK();
  }

  Status Skip(uint64_t n) override {
    if (::lseek(fd_, static_cast<off_t>(n), SEEK_CUR) < 0) {
      return PosixError("seek " + path_, errno);
    }
    return Status::OK();
  }

 private:
  const std::string path_;
  const int fd_;
};

class PosixRandomAccessFile final : public RandomAccessFile {
 public:
  PosixRandomAccessFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixRandomAccessFile() override { ::close(fd_); }

  Status Read(uint64_t offset, size_t n, Slice* result, char* scratch) const override {
    size_t done = 0;
    while (done < n) {
      ssize_t r = ::pread(fd_, scratch + done, n - done, static_cast<off_t>(offset + done));
      if (r < 0) {
        if (errno == EINTR) continue;
        return PosixError("pread " + path_ + " at " + std::to_string(offset + done), errno);
      }
      if (r == 0) break;
      done += static_cast<size_t>(r);
    }
    *result = Slice(scratch, done);
    return Status::OK();
  }

  Result<uint64_t> Size() const override {
    struct stat st;
    if (::fstat(fd_, &st) != 0) return PosixError("fstat " + path_, errno);
    return static_cast<uint64_t>(st.st_size);
  }

 private:
  const std::string path_;
  const int fd_;
};

class PosixWritableFile final : public WritableFile {
 public:
  // Appends go out in writes of up to 1 MiB. Large writes let the kernel
  // keep the file in large page-cache folios, and a later pread of a table
  // block then walks one folio instead of several 4 KiB pages: with 64 KiB
  // writes, the kernel's share of a point read that misses the block cache
  // was about a third higher. The buffer grows only as far as a file's
  // appends reach, so small files (the manifest) stay small.
  static constexpr size_t kBufferSize = 1024 * 1024;

  PosixWritableFile(std::string path, int fd, uint64_t size)
      : path_(std::move(path)), fd_(fd), flushed_size_(size) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) Close().PermitUncheckedError();  // best effort; callers that care Close()
  }

  Status Append(const Slice& data) override {
    if (buffer_.size() + data.size() > kBufferSize) {
      STRATA_RETURN_IF_ERROR(Flush());
      if (data.size() > kBufferSize) {
        struct iovec v{const_cast<char*>(data.data()), data.size()};
        return PwriteAll(flushed_size_, &v, 1);
      }
    }
    buffer_.append(data.data(), data.size());
    return Status::OK();
  }

  Status WriteAt(uint64_t offset, const struct iovec* iov, int iovcnt) override {
    STRATA_RETURN_IF_ERROR(Flush());
    return PwriteAll(offset, iov, iovcnt);
  }

  Status Flush() override {
    if (buffer_.empty()) return Status::OK();
    struct iovec v{buffer_.data(), buffer_.size()};
    // On failure the buffer stays, so a retried Flush or Sync writes it again
    // (at the same offset) instead of reporting bytes durable that never
    // reached the file.
    STRATA_RETURN_IF_ERROR(PwriteAll(flushed_size_, &v, 1));
    buffer_.clear();
    return Status::OK();
  }

  Status Sync() override {
    STRATA_RETURN_IF_ERROR(Flush());
    if (::fdatasync(fd_) != 0) return PosixError("fdatasync " + path_, errno);
    return Status::OK();
  }

  Status Allocate(uint64_t offset, uint64_t len) override {
    STRATA_RETURN_IF_ERROR(Flush());
    int r = ::posix_fallocate(fd_, static_cast<off_t>(offset), static_cast<off_t>(len));
    if (r != 0) return PosixError("fallocate " + path_, r);
    if (offset + len > flushed_size_) flushed_size_ = offset + len;
    return Status::OK();
  }

  Status Truncate(uint64_t size) override {
    STRATA_RETURN_IF_ERROR(Flush());
    if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) {
      return PosixError("ftruncate " + path_, errno);
    }
    flushed_size_ = size;
    return Status::OK();
  }

  Status Close() override {
    if (fd_ < 0) return Status::OK();
    Status s = Flush();
    if (::close(fd_) != 0 && s.ok()) s = PosixError("close " + path_, errno);
    fd_ = -1;
    return s;
  }

  uint64_t Size() const override { return flushed_size_ + buffer_.size(); }
  int fd() const override { return fd_; }

 private:
#ifdef IOV_MAX
  static constexpr size_t kMaxIovecs = IOV_MAX;
#else
  static constexpr size_t kMaxIovecs = 1024;
#endif

  Status PwriteAll(uint64_t offset, const struct iovec* iov, int iovcnt) {
    std::vector<struct iovec> v(iov, iov + iovcnt);
    size_t total = 0;
    for (const auto& x : v) total += x.iov_len;
    size_t done = 0;
    size_t first = 0;
    while (done < total) {
      while (v[first].iov_len == 0) first++;  // done < total: a non-empty one follows
      // pwritev takes at most IOV_MAX buffers per call (EINVAL beyond).
      const size_t batch = std::min<size_t>(v.size() - first, kMaxIovecs);
      ssize_t r = ::pwritev(fd_, v.data() + first, static_cast<int>(batch),
                            static_cast<off_t>(offset + done));
      if (r < 0) {
        if (errno == EINTR) continue;
        return PosixError("pwritev " + path_ + " at " + std::to_string(offset + done), errno);
      }
      if (r == 0) {
        return Status::IOError("pwritev " + path_ + " at " + std::to_string(offset + done) +
                               ": wrote nothing");
      }
      done += static_cast<size_t>(r);
      // Skip the iovecs written in full and trim a partially written one.
      size_t n = static_cast<size_t>(r);
      while (first < v.size() && n >= v[first].iov_len) n -= v[first++].iov_len;
      if (first < v.size()) {
        v[first].iov_base = static_cast<char*>(v[first].iov_base) + n;
        v[first].iov_len -= n;
      }
    }
    if (offset + total > flushed_size_) flushed_size_ = offset + total;
    return Status::OK();
  }

  const std::string path_;
  int fd_;
  uint64_t flushed_size_;
  std::string buffer_;
};

// flock() locks conflict between open file descriptions, so they also stop a
// second open inside this process; the set makes that explicit and portable.
Mutex g_locked_mu;
std::set<std::string> g_locked_paths GUARDED_BY(g_locked_mu);

class PosixFileLock final : public FileLock {
 public:
  PosixFileLock(std::string path, int fd) : path(std::move(path)), fd(fd) {}
  std::string path;
  int fd;
};

class PosixFileSystem final : public FileSystem {
 public:
  Status NewSequentialFile(const std::string& path,
                           std::unique_ptr<SequentialFile>* result) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return PosixError("open " + path, errno);
    *result = std::make_unique<PosixSequentialFile>(path, fd);
    return Status::OK();
  }

  Status NewRandomAccessFile(const std::string& path,
                             std::unique_ptr<RandomAccessFile>* result) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return PosixError("open " + path, errno);
    *result = std::make_unique<PosixRandomAccessFile>(path, fd);
    return Status::OK();
  }

  Status NewWritableFile(const std::string& path, const FileOpenOptions& options,
                         std::unique_ptr<WritableFile>* result) override {
    int flags = O_RDWR | O_CREAT | O_CLOEXEC | (options.truncate ? O_TRUNC : 0);
    int fd = ::open(path.c_str(), flags, 0644);
    if (fd < 0) return PosixError("open " + path, errno);
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      int err = errno;
      ::close(fd);
      return PosixError("fstat " + path, err);
    }
    *result = std::make_unique<PosixWritableFile>(path, fd, static_cast<uint64_t>(st.st_size));
    return Status::OK();
  }

  bool FileExists(const std::string& path) override { return ::access(path.c_str(), F_OK) == 0; }

  Status GetChildren(const std::string& dir, std::vector<std::string>* names) override {
    names->clear();
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return PosixError("opendir " + dir, errno);
    while (struct dirent* e = ::readdir(d)) {
      if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
      names->emplace_back(e->d_name);
    }
    ::closedir(d);
    return Status::OK();
  }

  Status DeleteFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return PosixError("unlink " + path, errno);
    return Status::OK();
  }

  Status RenameFile(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return PosixError("rename " + from + " to " + to, errno);
    }
    return Status::OK();
  }

  Status CreateDirIfMissing(const std::string& dir) override {
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return PosixError("mkdir " + dir, errno);
    }
    return Status::OK();
  }

  Status DeleteDir(const std::string& dir) override {
    if (::rmdir(dir.c_str()) != 0) return PosixError("rmdir " + dir, errno);
    return Status::OK();
  }

  Result<uint64_t> GetFileSize(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return PosixError("stat " + path, errno);
    return static_cast<uint64_t>(st.st_size);
  }

  Status SyncDir(const std::string& dir) override {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return PosixError("open " + dir, errno);
    Status s;
    if (::fsync(fd) != 0) s = PosixError("fsync " + dir, errno);
    ::close(fd);
    return s;
  }

  Status LockFile(const std::string& path, std::unique_ptr<FileLock>* lock) override {
    MutexLock l(&g_locked_mu);
    if (g_locked_paths.count(path) != 0) {
      return Status::Busy("lock " + path + ": already held by this process");
    }
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return PosixError("open " + path, errno);
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      int err = errno;
      ::close(fd);
      if (err == EWOULDBLOCK) return Status::Busy("lock " + path + ": held by another process");
      return PosixError("lock " + path, err);
    }
    g_locked_paths.insert(path);
    *lock = std::make_unique<PosixFileLock>(path, fd);
    return Status::OK();
  }

  Status UnlockFile(std::unique_ptr<FileLock> lock) override {
    if (lock == nullptr) return Status::InvalidArgument("unlock: no lock given");
    auto* l = static_cast<PosixFileLock*>(lock.get());
    MutexLock guard(&g_locked_mu);
    g_locked_paths.erase(l->path);
    Status s;
    if (::flock(l->fd, LOCK_UN) != 0) s = PosixError("unlock " + l->path, errno);
    ::close(l->fd);
    return s;
  }
};

}  // namespace

FileSystem* FileSystem::Default() {
  static PosixFileSystem fs;
  return &fs;
}

Status ReadFileToString(FileSystem* fs, const std::string& path, std::string* data) {
  data->clear();
  std::unique_ptr<SequentialFile> file;
  STRATA_RETURN_IF_ERROR(fs->NewSequentialFile(path, &file));
  constexpr size_t kChunk = 64 * 1024;
  std::string scratch(kChunk, '\0');
  while (true) {
    Slice piece;
    STRATA_RETURN_IF_ERROR(file->Read(kChunk, &piece, scratch.data()));
    data->append(piece.data(), piece.size());
    if (piece.size() < kChunk) return Status::OK();
  }
}

Status WriteFileAtomically(FileSystem* fs, const std::string& path, const Slice& data) {
  const std::string tmp = path + ".tmp";
  std::unique_ptr<WritableFile> file;
  STRATA_RETURN_IF_ERROR(fs->NewWritableFile(tmp, FileOpenOptions{}, &file));
  Status s = file->Append(data);
  if (s.ok()) s = file->Sync();
  if (s.ok()) s = file->Close();
  if (s.ok()) s = fs->RenameFile(tmp, path);
  if (s.ok()) s = fs->SyncDir(DirName(path));
  if (!s.ok()) fs->DeleteFile(tmp).PermitUncheckedError();  // best-effort cleanup
  return s;
}

std::string JoinPath(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  if (dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

std::string DirName(const std::string& path) {
  size_t pos = path.find_last_of('/');
  if (pos == std::string::npos) return ".";
  if (pos == 0) return "/";
  return path.substr(0, pos);
}

}  // namespace strata
