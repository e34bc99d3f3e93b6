#include "engine/level_iterator.h"

#include <algorithm>

namespace strata::engine {
namespace {

class LevelIterator final : public InternalIterator {
 public:
  LevelIterator(std::vector<std::shared_ptr<TableFile>> files, sstable::TableCache* cache,
                sstable::BlockCache::OwnerId owner)
      : files_(std::move(files)), cache_(cache), owner_(owner) {}

  bool Valid() const override { return it_ != nullptr && it_->Valid(); }

  void SeekToFirst() override {
    if (!Open(0)) return;
    if (it_ != nullptr) it_->SeekToFirst();
    SkipExhaustedFiles();
  }

  void Seek(const Slice& target) override {
    // The first file whose last key is at or after the target.
    auto pos = std::partition_point(files_.begin(), files_.end(), [&](const auto& f) {
      return Slice(f->meta.largest).compare(target) < 0;
    });
    if (!Open(static_cast<size_t>(pos - files_.begin()))) return;
    if (it_ != nullptr) it_->Seek(target);
    SkipExhaustedFiles();
  }

  void Next() override {
    it_->Next();
    SkipExhaustedFiles();
  }

  Slice key() const override { return it_->key(); }
  Slice value() const override { return it_->value(); }
  Status status() const override {
    if (!status_.ok()) return status_;
    return it_ != nullptr ? it_->status() : Status::OK();
  }

 private:
  // Stands on file `index` (none when past the last); false on an error.
  bool Open(size_t index) {
    if (!status_.ok()) return false;
    if (index == index_ && it_ != nullptr) return true;
    it_.reset();
    reader_.reset();
    index_ = index;
    if (index >= files_.size()) return true;
    Result<std::shared_ptr<sstable::TableReader>> reader =
        cache_->Get(files_[index]->meta.number, owner_);
    if (!reader.ok()) {
      status_ = reader.status();
      return false;
    }
    reader_ = std::move(reader.value());
    it_ = reader_->NewIterator();
    return true;
  }

  // From a file walked to its end, on to the first entry of the next.
  void SkipExhaustedFiles() {
    while (it_ != nullptr && !it_->Valid() && it_->status().ok()) {
      if (!Open(index_ + 1)) return;
      if (it_ != nullptr) it_->SeekToFirst();
    }
  }

  const std::vector<std::shared_ptr<TableFile>> files_;
  sstable::TableCache* const cache_;
  const sstable::BlockCache::OwnerId owner_;
  size_t index_ = SIZE_MAX;
  // Declared before the iterator over it, so it goes after.
  std::shared_ptr<sstable::TableReader> reader_;
  std::unique_ptr<InternalIterator> it_;
  Status status_;
};

}  // namespace

std::unique_ptr<InternalIterator> NewLevelIterator(std::vector<std::shared_ptr<TableFile>> files,
                                                   sstable::TableCache* cache,
                                                   sstable::BlockCache::OwnerId owner) {
  return std::make_unique<LevelIterator>(std::move(files), cache, owner);
}

}  // namespace strata::engine
