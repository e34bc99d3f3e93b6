#include "gc/safepoint_store.h"

#include "txn/ceiling_file.h"

namespace strata::gc {

namespace {

class LocalSafepointStore final : public SafepointStore {
 public:
  explicit LocalSafepointStore(std::unique_ptr<txn::CeilingFile> file) : file_(std::move(file)) {}
  uint64_t Get() const override { return file_->ceiling(); }
  Status Raise(uint64_t safepoint) override {
    if (safepoint == file_->ceiling()) return Status::OK();
    return file_->Write(safepoint);
  }

 private:
  const std::unique_ptr<txn::CeilingFile> file_;
};

class MemorySafepointStore final : public SafepointStore {
 public:
  explicit MemorySafepointStore(uint64_t initial) : value_(initial) {}
  uint64_t Get() const override { return value_; }
  Status Raise(uint64_t safepoint) override {
    value_ = safepoint;
    return Status::OK();
  }

 private:
  uint64_t value_;
};

}  // namespace

Status OpenLocalSafepointStore(FileSystem* fs, const std::string& path,
                               std::unique_ptr<SafepointStore>* result) {
  std::unique_ptr<txn::CeilingFile> file;
  STRATA_RETURN_IF_ERROR(txn::CeilingFile::Open(fs, path, &file));
  *result = std::make_unique<LocalSafepointStore>(std::move(file));
  return Status::OK();
}

std::unique_ptr<SafepointStore> NewMemorySafepointStore(uint64_t initial) {
  return std::make_unique<MemorySafepointStore>(initial);
}

}  // namespace strata::gc
