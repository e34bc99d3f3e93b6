#include "engine/concat_iterator.h"

#include <utility>

namespace strata::engine {
namespace {

class ConcatIterator final : public InternalIterator {
 public:
  explicit ConcatIterator(std::vector<std::unique_ptr<InternalIterator>> children)
      : children_(std::move(children)) {}

  bool Valid() const override { return current_ < children_.size() && status_.ok(); }

  void SeekToFirst() override {
    current_ = 0;
    if (current_ < children_.size()) children_[current_]->SeekToFirst();
    SkipExhausted();
  }
  void Seek(const Slice& target) override {
    // The first child whose entries reach the target; the ones before it
    // end below it.
    for (current_ = 0; current_ < children_.size(); current_++) {
      InternalIterator* c = children_[current_].get();
      c->Seek(target);
      if (c->Valid() || !c->status().ok()) break;
    }
    SkipExhausted();
  }
  void Next() override {
    children_[current_]->Next();
    SkipExhausted();
  }
  Slice key() const override { return children_[current_]->key(); }
  Slice value() const override { return children_[current_]->value(); }
  Status status() const override { return status_; }

 private:
  // Moves on from an exhausted child to the start of the next one; stops
  // with the first error.
  void SkipExhausted() {
    while (current_ < children_.size()) {
      InternalIterator* c = children_[current_].get();
      if (c->Valid()) return;
      Status s = c->status();
      if (!s.ok()) {
        status_ = std::move(s);
        return;
      }
      if (++current_ < children_.size()) children_[current_]->SeekToFirst();
    }
  }

  std::vector<std::unique_ptr<InternalIterator>> children_;
  size_t current_ = 0;  // children_.size() when past the end
  Status status_;
};

}  // namespace

std::unique_ptr<InternalIterator> NewConcatIterator(
    std::vector<std::unique_ptr<InternalIterator>> children) {
  if (children.size() == 1) return std::move(children.front());
  return std::make_unique<ConcatIterator>(std::move(children));
}

}  // namespace strata::engine
