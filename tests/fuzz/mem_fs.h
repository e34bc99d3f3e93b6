// MemFileSystem: a FileSystem held in memory, for the fuzz targets. Files are
// strings by path; directories exist implicitly (any path prefix ending in
// '/'). Enough for the readers and recoveries the targets drive: no file
// descriptors, locks always succeed, Sync does nothing.
//
// Thread-compatible: one fuzz input at a time.
#ifndef STRATA_TESTS_FUZZ_MEM_FS_H_
#define STRATA_TESTS_FUZZ_MEM_FS_H_

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "strata/file_system.h"

namespace strata::fuzz {

class MemFileSystem final : public FileSystem {
 public:
  void Put(const std::string& path, std::string contents) { files_[path] = std::move(contents); }
  void Clear() { files_.clear(); }

  Status NewSequentialFile(const std::string& path,
                           std::unique_ptr<SequentialFile>* result) override {
    auto it = files_.find(path);
    if (it == files_.end()) return Status::NotFound(path);
    *result = std::make_unique<SeqFile>(&it->second);
    return Status::OK();
  }
  Status NewRandomAccessFile(const std::string& path,
                             std::unique_ptr<RandomAccessFile>* result) override {
    auto it = files_.find(path);
    if (it == files_.end()) return Status::NotFound(path);
    *result = std::make_unique<RandomFile>(&it->second);
    return Status::OK();
  }
  Status NewWritableFile(const std::string& path, const FileOpenOptions& options,
                         std::unique_ptr<WritableFile>* result) override {
    std::string& data = files_[path];
    if (options.truncate) data.clear();
    *result = std::make_unique<WriteFile>(&data);
    return Status::OK();
  }
  bool FileExists(const std::string& path) override {
    return files_.count(path) > 0 || IsDir(path);
  }
  Status GetChildren(const std::string& dir, std::vector<std::string>* names) override {
    names->clear();
    const std::string prefix = dir.empty() || dir.back() == '/' ? dir : dir + "/";
    std::set<std::string> seen;
    for (auto it = files_.lower_bound(prefix);
         it != files_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
      std::string rest = it->first.substr(prefix.size());
      rest = rest.substr(0, rest.find('/'));
      if (!rest.empty()) seen.insert(rest);
    }
    names->assign(seen.begin(), seen.end());
    return Status::OK();
  }
  Status DeleteFile(const std::string& path) override {
    return files_.erase(path) > 0 ? Status::OK() : Status::NotFound(path);
  }
  Status RenameFile(const std::string& from, const std::string& to) override {
    auto it = files_.find(from);
    if (it == files_.end()) return Status::NotFound(from);
    std::string data = std::move(it->second);
    files_.erase(it);
    files_[to] = std::move(data);
    return Status::OK();
  }
  Status CreateDirIfMissing(const std::string&) override { return Status::OK(); }
  Status DeleteDir(const std::string&) override { return Status::OK(); }
  Result<uint64_t> GetFileSize(const std::string& path) override {
    auto it = files_.find(path);
    if (it == files_.end()) return Status::NotFound(path);
    return static_cast<uint64_t>(it->second.size());
  }
  Status SyncDir(const std::string&) override { return Status::OK(); }
  Status LockFile(const std::string&, std::unique_ptr<FileLock>* lock) override {
    *lock = std::make_unique<FileLock>();
    return Status::OK();
  }
  Status UnlockFile(std::unique_ptr<FileLock>) override { return Status::OK(); }

 private:
  bool IsDir(const std::string& path) const {
    const std::string prefix = path.empty() || path.back() == '/' ? path : path + "/";
    auto it = files_.lower_bound(prefix);
    return it != files_.end() && it->first.compare(0, prefix.size(), prefix) == 0;
  }

  class SeqFile final : public SequentialFile {
   public:
    explicit SeqFile(const std::string* data) : data_(data) {}
    Status Read(size_t n, Slice* result, char* scratch) override {
      const size_t k = std::min(n, data_->size() - std::min(pos_, data_->size()));
      if (k > 0) std::memcpy(scratch, data_->data() + pos_, k);
      pos_ += k;
      *result = Slice(scratch, k);
      return Status::OK();
    }
    Status Skip(uint64_t n) override {
      pos_ = static_cast<size_t>(std::min<uint64_t>(data_->size(), pos_ + n));
      return Status::OK();
    }

   private:
    const std::string* const data_;
    size_t pos_ = 0;
  };

  class RandomFile final : public RandomAccessFile {
   public:
    explicit RandomFile(const std::string* data) : data_(data) {}
    Status Read(uint64_t offset, size_t n, Slice* result, char* scratch) const override {
      if (offset >= data_->size()) {
        *result = Slice(scratch, 0);
        return Status::OK();
      }
      const size_t k = static_cast<size_t>(std::min<uint64_t>(n, data_->size() - offset));
      std::memcpy(scratch, data_->data() + offset, k);
      *result = Slice(scratch, k);
      return Status::OK();
    }
    Result<uint64_t> Size() const override { return static_cast<uint64_t>(data_->size()); }

   private:
    const std::string* const data_;
  };

  class WriteFile final : public WritableFile {
   public:
    explicit WriteFile(std::string* data) : data_(data) {}
    Status Append(const Slice& data) override {
      data_->append(data.data(), data.size());
      return Status::OK();
    }
    Status WriteAt(uint64_t offset, const struct iovec* iov, int iovcnt) override {
      for (int i = 0; i < iovcnt; i++) {
        const size_t end = static_cast<size_t>(offset) + iov[i].iov_len;
        if (data_->size() < end) data_->resize(end);
        std::memcpy(data_->data() + offset, iov[i].iov_base, iov[i].iov_len);
        offset += iov[i].iov_len;
      }
      return Status::OK();
    }
    Status Flush() override { return Status::OK(); }
    Status Sync() override { return Status::OK(); }
    Status Allocate(uint64_t offset, uint64_t len) override {
      if (data_->size() < offset + len) data_->resize(static_cast<size_t>(offset + len));
      return Status::OK();
    }
    Status Truncate(uint64_t size) override {
      data_->resize(static_cast<size_t>(size));
      return Status::OK();
    }
    Status Close() override { return Status::OK(); }
    uint64_t Size() const override { return data_->size(); }

   private:
    std::string* const data_;
  };

  std::map<std::string, std::string> files_;
};

}  // namespace strata::fuzz

#endif  // STRATA_TESTS_FUZZ_MEM_FS_H_
