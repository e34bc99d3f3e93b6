#include "engine/merging_iterator.h"

#include <utility>

namespace strata::engine {
namespace {

// A binary min-heap of the valid children by current key, each with its key
// cached: a step moves one child and sifts it down, so it reads only that
// child and costs about log2(children) key comparisons. A compaction merges
// every level-0 file with a level's worth of files below, and a scan every
// file of a group, where a scan over all children per step (each read
// through virtual calls) was the cost that grew with the count.
class MergingIterator final : public InternalIterator {
 public:
  MergingIterator(std::vector<std::unique_ptr<InternalIterator>> children,
                  std::vector<std::shared_ptr<const void>> pins)
      : pins_(std::move(pins)), children_(std::move(children)) {
    heap_.reserve(children_.size());
  }

  bool Valid() const override { return !heap_.empty() && status_.ok(); }

  void SeekToFirst() override {
    for (auto& c : children_) c->SeekToFirst();
    Rebuild();
  }
  void Seek(const Slice& target) override {
    for (auto& c : children_) c->Seek(target);
    Rebuild();
  }
  // The largest of the children's last keys below the target; the heap
  // holds that child alone until the next Seek (Next is not allowed).
  void SeekBefore(const Slice& target) override {
    heap_.clear();
    for (auto& c : children_) {
      c->SeekBefore(target);
      if (!c->status().ok()) {
        status_ = c->status();
        heap_.clear();
        return;
      }
      if (!c->Valid()) continue;
      if (heap_.empty()) {
        heap_.push_back(Node{c.get(), c->key()});
      } else if (heap_.front().key.compare(c->key()) < 0) {
        heap_.front() = Node{c.get(), c->key()};
      }
    }
  }
  void Next() override {
    Node& top = heap_.front();
    top.child->Next();
    if (top.child->Valid()) {
      top.key = top.child->key();
    } else {
      Status s = top.child->status();
      if (!s.ok()) {
        status_ = std::move(s);
        heap_.clear();
        return;
      }
      top = heap_.back();
      heap_.pop_back();
      if (heap_.empty()) return;
    }
    SiftDown(0);
  }
  // Takes the children where they stand (see NewMergingIteratorAtChildren).
  void StartAtChildren() { Rebuild(); }
  Slice key() const override { return heap_.front().key; }
  Slice value() const override { return heap_.front().child->value(); }
  Status status() const override { return status_; }

 private:
  struct Node {
    InternalIterator* child;
    Slice key;  // child->key(), valid until the child moves
  };

  void Rebuild() {
    heap_.clear();
    for (auto& c : children_) {
      if (!c->status().ok()) {
        status_ = c->status();
        heap_.clear();
        return;
      }
      if (c->Valid()) heap_.push_back(Node{c.get(), c->key()});
    }
    for (size_t i = heap_.size() / 2; i-- > 0;) SiftDown(i);
  }

  // Restores the heap below `i`, whose key may have grown. Keys are unique
  // (see the header), so ties need no rule.
  void SiftDown(size_t i) {
    const size_t n = heap_.size();
    Node moving = heap_[i];
    for (;;) {
      size_t smallest = 2 * i + 1;
      if (smallest >= n) break;
      if (smallest + 1 < n && heap_[smallest + 1].key.compare(heap_[smallest].key) < 0) {
        smallest++;
      }
      if (moving.key.compare(heap_[smallest].key) < 0) break;
      heap_[i] = heap_[smallest];
      i = smallest;
    }
    heap_[i] = moving;
  }

  // Declared first so that the children go before what they read from.
  std::vector<std::shared_ptr<const void>> pins_;
  std::vector<std::unique_ptr<InternalIterator>> children_;
  std::vector<Node> heap_;  // the valid children; heap_[0] is the current one
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
