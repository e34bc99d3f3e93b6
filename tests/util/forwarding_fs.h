// ForwardingFileSystem and ForwardingWritableFile: pass every call to a base
// object, so a test double overrides only the calls it changes.
//
// Thread-safety is the base's.
#ifndef STRATA_TESTS_UTIL_FORWARDING_FS_H_
#define STRATA_TESTS_UTIL_FORWARDING_FS_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/file_system.h"

namespace strata::test {

class ForwardingWritableFile : public WritableFile {
 public:
  explicit ForwardingWritableFile(std::unique_ptr<WritableFile> base) : base_(std::move(base)) {}
  Status Append(const Slice& d) override { return base_->Append(d); }
  Status WriteAt(uint64_t o, const struct iovec* v, int n) override {
    return base_->WriteAt(o, v, n);
  }
  Status Flush() override { return base_->Flush(); }
  Status Sync() override { return base_->Sync(); }
  Status Allocate(uint64_t o, uint64_t l) override { return base_->Allocate(o, l); }
  Status Truncate(uint64_t s) override { return base_->Truncate(s); }
  Status Close() override { return base_->Close(); }
  uint64_t Size() const override { return base_->Size(); }
  int fd() const override { return base_->fd(); }

 protected:
  std::unique_ptr<WritableFile> base_;
};

class ForwardingFileSystem : public FileSystem {
 public:
  explicit ForwardingFileSystem(FileSystem* base = FileSystem::Default()) : base_(base) {}

  Status NewSequentialFile(const std::string& p, std::unique_ptr<SequentialFile>* r) override {
    return base_->NewSequentialFile(p, r);
  }
  Status NewRandomAccessFile(const std::string& p, std::unique_ptr<RandomAccessFile>* r) override {
    return base_->NewRandomAccessFile(p, r);
  }
  // Opens through the base and hands the file to WrapWritable.
  Status NewWritableFile(const std::string& p, const FileOpenOptions& o,
                         std::unique_ptr<WritableFile>* r) override {
    std::unique_ptr<WritableFile> f;
    STRATA_RETURN_IF_ERROR(base_->NewWritableFile(p, o, &f));
    *r = WrapWritable(p, std::move(f));
    return Status::OK();
  }
  bool FileExists(const std::string& p) override { return base_->FileExists(p); }
  Status GetChildren(const std::string& d, std::vector<std::string>* n) override {
    return base_->GetChildren(d, n);
  }
  Status DeleteFile(const std::string& p) override { return base_->DeleteFile(p); }
  Status RenameFile(const std::string& f, const std::string& t) override {
    return base_->RenameFile(f, t);
  }
  Status CreateDirIfMissing(const std::string& d) override { return base_->CreateDirIfMissing(d); }
  Status DeleteDir(const std::string& d) override { return base_->DeleteDir(d); }
  Result<uint64_t> GetFileSize(const std::string& p) override { return base_->GetFileSize(p); }
  Status SyncDir(const std::string& d) override { return base_->SyncDir(d); }
  Status LockFile(const std::string& p, std::unique_ptr<FileLock>* l) override {
    return base_->LockFile(p, l);
  }
  Status UnlockFile(std::unique_ptr<FileLock> l) override {
    return base_->UnlockFile(std::move(l));
  }

 protected:
  // What a writable file opened at `path` becomes; the base file by default.
  virtual std::unique_ptr<WritableFile> WrapWritable(const std::string& path,
                                                     std::unique_ptr<WritableFile> file) {
    return file;
  }

  FileSystem* const base_;
};

}  // namespace strata::test

#endif  // STRATA_TESTS_UTIL_FORWARDING_FS_H_
