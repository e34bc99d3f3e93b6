#include "engine/merging_iterator.h"

namespace strata::engine {
namespace {

// Picks the smallest child by a linear scan: a group has a handful of
// children, where a heap costs more than it saves.
class MergingIterator final : public InternalIterator {
 public:
  MergingIterator(std::vector<std::unique_ptr<InternalIterator>> children,
                  std::vector<std::shared_ptr<const void>> pins)
      : pins_(std::move(pins)), children_(std::move(children)) {}

  bool Valid() const override { return current_ != nullptr && status_.ok(); }

  void SeekToFirst() override {
    for (auto& c : children_) c->SeekToFirst();
    FindSmallest();
  }
  void Seek(const Slice& target) override {
    for (auto& c : children_) c->Seek(target);
    FindSmallest();
  }
  void Next() override {
    current_->Next();
    FindSmallest();
  }
  // Takes the children where they stand (see NewMergingIteratorAtChildren).
  void StartAtChildren() { FindSmallest(); }
  Slice key() const override { return current_->key(); }
  Slice value() const override { return current_->value(); }
  Status status() const override { return status_; }

 private:
  void FindSmallest() {
    current_ = nullptr;
    for (auto& c : children_) {
      if (!c->status().ok()) {
        status_ = c->status();
        return;
      }
      if (!c->Valid()) continue;
      if (current_ == nullptr || c->key().compare(current_->key()) < 0) current_ = c.get();
    }
  }

  // Declared first so that the children go before what they read from.
  std::vector<std::shared_ptr<const void>> pins_;
  std::vector<std::unique_ptr<InternalIterator>> children_;
  InternalIterator* current_ = nullptr;
  Status status_;
};

}  // namespace

std::unique_ptr<InternalIterator> NewMergingIterator(
    std::vector<std::unique_ptr<InternalIterator>> children,
    std::vector<std::shared_ptr<const void>> pins) {
  return std::make_unique<MergingIterator>(std::move(children), std::move(pins));
}

std::unique_ptr<InternalIterator> NewMergingIteratorAtChildren(
    std::vector<std::unique_ptr<InternalIterator>> children,
    std::vector<std::shared_ptr<const void>> pins) {
  auto merged = std::make_unique<MergingIterator>(std::move(children), std::move(pins));
  merged->StartAtChildren();
  return merged;
}

}  // namespace strata::engine
