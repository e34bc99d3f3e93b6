#include "gc/safepoint_store.h"

#include <algorithm>

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

class SharedSafepointStore final : public SafepointStore {
 public:
  SharedSafepointStore(std::shared_ptr<txn::SharedSafepoints> shared, std::string name,
                       uint64_t current)
      : shared_(std::move(shared)), name_(std::move(name)), value_(current) {}
  uint64_t Get() const override { return value_; }
  Status Raise(uint64_t safepoint) override {
    STRATA_ASSIGN_OR_RETURN(uint64_t now, shared_->Raise(name_, safepoint));
    value_ = std::max(value_, now);
    return Status::OK();
  }

 private:
  const std::shared_ptr<txn::SharedSafepoints> shared_;
  const std::string name_;
  uint64_t value_;
};

}  // namespace

Status OpenSharedSafepointStore(std::shared_ptr<txn::SharedSafepoints> shared, std::string name,
                                std::unique_ptr<SafepointStore>* result) {
  STRATA_ASSIGN_OR_RETURN(uint64_t current, shared->Get(name));
  *result = std::make_unique<SharedSafepointStore>(std::move(shared), std::move(name), current);
  return Status::OK();
}

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
