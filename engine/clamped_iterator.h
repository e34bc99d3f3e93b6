// ClampedIterator: the entries of another iterator whose keys lie in
// [lo, hi), for a tablet whose files also hold rows of its split siblings.
// An empty lo or hi is unbounded.
//
// Thread-compatible, like the iterator it wraps.
#ifndef STRATA_ENGINE_CLAMPED_ITERATOR_H_
#define STRATA_ENGINE_CLAMPED_ITERATOR_H_

#include <memory>
#include <string>
#include <utility>

#include "common/iterator.h"

namespace strata::engine {

class ClampedIterator final : public InternalIterator {
 public:
  ClampedIterator(std::unique_ptr<InternalIterator> base, std::string lo, std::string hi)
      : base_(std::move(base)), lo_(std::move(lo)), hi_(std::move(hi)) {}

  bool Valid() const override {
    return !before_lo_ && base_->Valid() && (hi_.empty() || base_->key().compare(Slice(hi_)) < 0);
  }
  void SeekToFirst() override {
    before_lo_ = false;
    if (lo_.empty()) {
      base_->SeekToFirst();
    } else {
      base_->Seek(lo_);
    }
  }
  void Seek(const Slice& target) override {
    before_lo_ = false;
    base_->Seek(!lo_.empty() && target.compare(Slice(lo_)) < 0 ? Slice(lo_) : target);
  }
  void SeekBefore(const Slice& target) override {
    base_->SeekBefore(!hi_.empty() && target.compare(Slice(hi_)) > 0 ? Slice(hi_) : target);
    before_lo_ = base_->Valid() && !lo_.empty() && base_->key().compare(Slice(lo_)) < 0;
  }
  void Next() override { base_->Next(); }
  Slice key() const override { return base_->key(); }
  Slice value() const override { return base_->value(); }
  Status status() const override { return base_->status(); }

 private:
  std::unique_ptr<InternalIterator> base_;
  const std::string lo_;
  const std::string hi_;
  bool before_lo_ = false;  // SeekBefore found only keys below lo_
};

}  // namespace strata::engine

#endif  // STRATA_ENGINE_CLAMPED_ITERATOR_H_
