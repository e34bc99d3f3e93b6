#include "engine/concat_iterator.h"

#include <algorithm>
#include <utility>

namespace strata::engine {
namespace {

class ConcatIterator final : public InternalIterator {
 public:
  explicit ConcatIterator(std::unique_ptr<ConcatChildren> children)
      : children_(std::move(children)) {}

  // The child's position is cached after every move (valid_, key_): a
  // reader asks for them several times per entry, each a call through the
  // child's own layers otherwise.
  bool Valid() const override { return valid_; }

  void SeekToFirst() override {
    valid_ = false;
    if (!status().ok() || !Open(0)) return;
    if (it_ != nullptr) it_->SeekToFirst();
    SkipExhausted();
  }

  void Seek(const Slice& target) override {
    valid_ = false;
    if (!status().ok()) return;  // an error sticks
    if (!Open(FirstEndingAtOrAfter(target))) return;
    if (it_ != nullptr) it_->Seek(target);
    SkipExhausted();
  }

  void SeekBefore(const Slice& target) override {
    valid_ = false;
    if (!status().ok()) return;
    // The child the target falls in may hold keys below it; else the one
    // before holds the last such key (all of its keys are below), unless
    // it is empty.
    if (children_->size() == 0) return;
    size_t i = std::min(FirstEndingAtOrAfter(target), children_->size() - 1);
    for (;; i--) {
      if (!Open(i)) return;
      it_->SeekBefore(target);
      if (it_->Valid()) {
        valid_ = true;
        key_ = it_->key();
        return;
      }
      if (!it_->status().ok() || i == 0) return;
    }
  }

  void Next() override {
    it_->Next();
    if (it_->Valid()) {
      key_ = it_->key();
      return;
    }
    SkipExhausted();
  }

  Slice key() const override { return key_; }
  Slice value() const override { return it_->value(); }
  Status status() const override {
    if (!status_.ok()) return status_;
    return it_ != nullptr ? it_->status() : Status::OK();
  }

 private:
  // The first child whose last key is at or after `target` (size() when none is).
  size_t FirstEndingAtOrAfter(const Slice& target) const {
    size_t lo = 0;
    size_t hi = children_->size();
    while (lo < hi) {
      const size_t mid = lo + (hi - lo) / 2;
      if (children_->last_key(mid).compare(target) < 0) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo;
  }

  // Stands on child `index` (none past the last), reusing it when it is
  // already open; false on an error, which sticks.
  bool Open(size_t index) {
    if (!status_.ok()) return false;
    if (index == index_ && it_ != nullptr) return true;
    it_.reset();
    pin_.reset();
    index_ = index;
    if (index >= children_->size()) return true;
    Result<ConcatChildren::Opened> opened = children_->Open(index);
    if (!opened.ok()) {
      status_ = opened.status();
      return false;
    }
    pin_ = std::move(opened->pin);
    it_ = std::move(opened->it);
    return true;
  }

  // From a child walked to its end, on to the first entry of the next; then
  // caches the position.
  void SkipExhausted() {
    while (it_ != nullptr && !it_->Valid() && it_->status().ok()) {
      if (!Open(index_ + 1)) break;
      if (it_ != nullptr) it_->SeekToFirst();
    }
    valid_ = it_ != nullptr && it_->Valid();
    if (valid_) key_ = it_->key();
  }

  const std::unique_ptr<ConcatChildren> children_;
  size_t index_ = SIZE_MAX;
  // Declared before the iterator that reads from it, so it goes after.
  std::shared_ptr<const void> pin_;
  std::unique_ptr<InternalIterator> it_;
  bool valid_ = false;
  Slice key_;  // it_->key() while valid_
  Status status_;
};

// A level's files, opened through the table cache.
class LevelFiles final : public ConcatChildren {
 public:
  LevelFiles(std::vector<std::shared_ptr<TableFile>> files, sstable::TableCache* cache,
             sstable::BlockCache::OwnerId owner, bool fill_cache,
             std::shared_ptr<sstable::CacheFillBudget> fill_budget)
      : files_(std::move(files)),
        cache_(cache),
        owner_(owner),
        fill_cache_(fill_cache),
        fill_budget_(std::move(fill_budget)) {}

  size_t size() const override { return files_.size(); }
  Slice last_key(size_t i) const override { return Slice(files_[i]->meta.largest); }
  Result<Opened> Open(size_t i) override {
    STRATA_ASSIGN_OR_RETURN(std::shared_ptr<sstable::TableReader> reader,
                            cache_->Get(files_[i]->meta.number, owner_));
    Opened opened;
    opened.it = reader->NewIterator(fill_cache_, fill_budget_);
    opened.pin = std::move(reader);
    return opened;
  }

 private:
  const std::vector<std::shared_ptr<TableFile>> files_;
  sstable::TableCache* const cache_;
  const sstable::BlockCache::OwnerId owner_;
  const bool fill_cache_;
  const std::shared_ptr<sstable::CacheFillBudget> fill_budget_;  // may be null
};

}  // namespace

std::unique_ptr<InternalIterator> NewConcatIterator(std::unique_ptr<ConcatChildren> children) {
  return std::make_unique<ConcatIterator>(std::move(children));
}

std::unique_ptr<InternalIterator> NewLevelIterator(
    std::vector<std::shared_ptr<TableFile>> files, sstable::TableCache* cache,
    sstable::BlockCache::OwnerId owner, bool fill_cache,
    std::shared_ptr<sstable::CacheFillBudget> fill_budget) {
  return NewConcatIterator(std::make_unique<LevelFiles>(std::move(files), cache, owner, fill_cache,
                                                        std::move(fill_budget)));
}

}  // namespace strata::engine
