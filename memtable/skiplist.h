// SkipList: an ordered set of keys in an Arena, read without locks while one
// writer inserts (the design of LevelDB's skiplist).
//
// Thread safety:
//   - Insert must be externally serialized: at most one thread inserts at a
//     time, e.g. under a mutex held by the caller.
//   - Reads (Contains, Iterator) need no lock and may run concurrently with
//     one writer and with each other. A reader sees every node whose insertion
//     happened-before the read, may or may not see nodes being inserted during
//     the read, and never sees a partly linked node.
//   - An Iterator object itself is thread-compatible.
//
// Invariants:
//   - Nodes are never deleted or moved until the SkipList (really: its Arena)
//     is destroyed, so a reader holding a node pointer never dangles. The list
//     and the arena must outlive every iterator.
//   - A node's key never changes after the node is linked.
//   - Level i of the list is sorted by the comparator and is a sublist of
//     level i - 1. A node is linked bottom-up; at each level its own next
//     pointer is set before a release store makes it reachable there, and
//     readers follow pointers with acquire loads. So a reader that reaches a
//     node sees it fully initialized (including the bytes its key points to)
//     at that level and every level below.
//   - Keys are distinct: inserting a key equal to one in the list is a
//     precondition violation (checked in debug builds).
//
// Key is a small copyable type (a pointer to arena-encoded bytes, or an
// integer in tests). Comparator is a copyable functor with
//   int operator()(const Key& a, const Key& b) const
// returning <0, 0 or >0 like memcmp.
#ifndef STRATA_MEMTABLE_SKIPLIST_H_
#define STRATA_MEMTABLE_SKIPLIST_H_

#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <new>

#include "common/arena.h"
#include "common/random.h"

namespace strata::memtable {

template <typename Key, class Comparator>
class SkipList {
 private:
  struct Node;

 public:
  // Tallest node. With kBranching 4 a list stays efficient up to about
  // 4^kMaxHeight = 16M entries, far more than a memtable holds.
  static constexpr int kMaxHeight = 12;
  // Each node is promoted to the next level with probability 1/kBranching.
  static constexpr int kBranching = 4;

  // Allocates its nodes from `*arena`, which must outlive the list.
  SkipList(Comparator cmp, Arena* arena);
  SkipList(const SkipList&) = delete;
  SkipList& operator=(const SkipList&) = delete;

  // Adds `key`. REQUIRES: no key comparing equal to `key` is in the list;
  // external serialization with other writers.
  void Insert(const Key& key);

  // True if a key comparing equal to `key` is in the list.
  bool Contains(const Key& key) const;

  // A position in a SkipList. Construction is cheap; the list must outlive
  // the iterator. Intentionally copyable.
  class Iterator {
   public:
    // Starts !Valid().
    explicit Iterator(const SkipList* list) : list_(list), node_(nullptr) {}

    bool Valid() const { return node_ != nullptr; }
    // REQUIRES: Valid(). The key stays valid as long as the list.
    const Key& key() const {
      assert(Valid());
      return node_->key;
    }
    // REQUIRES: Valid()
    void Next() {
      assert(Valid());
      node_ = node_->Next(0);
    }
    // Searches from the head, as nodes have no back pointers.
    // REQUIRES: Valid()
    void Prev() {
      assert(Valid());
      node_ = list_->FindLessThan(node_->key, /*or_equal=*/false);
    }
    // Positions at the first key >= target.
    void Seek(const Key& target) { node_ = list_->FindGreaterOrEqual(target, nullptr); }
    // Positions at the last key <= target.
    void SeekForPrev(const Key& target) { node_ = list_->FindLessThan(target, /*or_equal=*/true); }
    // Positions at the last key < target.
    void SeekBefore(const Key& target) { node_ = list_->FindLessThan(target, /*or_equal=*/false); }
    void SeekToFirst() { node_ = list_->head_->Next(0); }
    void SeekToLast() { node_ = list_->FindLast(); }

   private:
    const SkipList* list_;
    Node* node_;
  };

 private:
  // Bytes of a node with `height` levels (the struct holds one next pointer).
  static size_t NodeSize(int height) {
    return sizeof(Node) + sizeof(std::atomic<Node*>) * (height - 1);
  }

  int MaxHeight() const {
    // Relaxed: max_height_ is only a hint of where searches start. A reader
    // that sees a new, larger height before the head's new upper pointers are
    // published finds nullptr there and just moves down a level; one that
    // sees an old, smaller height starts lower, which is slower but correct.
    return max_height_.load(std::memory_order_relaxed);
  }
  int RandomHeight();
  // Places a node of `height` levels holding `key` in the arena. Its links
  // are all nullptr.
  Node* NewNode(const Key& key, int height);

  bool Equal(const Key& a, const Key& b) const { return compare_(a, b) == 0; }
  // True if `key` sorts after the key of `n`; nullptr counts as +infinity.
  bool KeyIsAfterNode(const Key& key, Node* n) const {
    return n != nullptr && compare_(n->key, key) < 0;
  }
  // The first node with key >= `key`, or nullptr. If `prev` is not null, sets
  // prev[level] to the last node before it at every level below MaxHeight().
  Node* FindGreaterOrEqual(const Key& key, Node** prev) const;
  // The last node with key < `key` (<= `key` if or_equal), or nullptr if there
  // is none.
  Node* FindLessThan(const Key& key, bool or_equal) const;
  // The last node, or nullptr if the list is empty.
  Node* FindLast() const;

  const Comparator compare_;
  Arena* const arena_;
  Node* const head_;
  // Height of the tallest node. Written only by the (serialized) writer; see
  // MaxHeight() for why relaxed loads and stores suffice.
  std::atomic<int> max_height_;
  // Writer-only, so guarded by the writers' external serialization.
  Random rnd_;
};

template <typename Key, class Comparator>
struct SkipList<Key, Comparator>::Node {
  // REQUIRES: the node was allocated with NodeSize(height) bytes.
  Node(const Key& k, int height) : key(k) {
    NoBarrierSetNext(0, nullptr);
    // next_[0] is a member; the atomics of the levels above it live in the
    // memory allocated after the struct and are constructed here.
    for (int i = 1; i < height; i++) new (next_ + i) std::atomic<Node*>(nullptr);
  }

  const Key key;

  // Acquire: a reader that loads a pointer to a node must also see that
  // node's key, its key bytes and its next pointers, all written before the
  // release store that published it (SetNext).
  Node* Next(int n) {
    assert(n >= 0);
    return next_[n].load(std::memory_order_acquire);
  }
  // Release: publishes everything written to the node being linked in.
  void SetNext(int n, Node* x) {
    assert(n >= 0);
    next_[n].store(x, std::memory_order_release);
  }

  // Relaxed: used only by the writer, on pointers that no reader can reach
  // yet (the new node's own links) or to read pointers only the writer
  // stores. The node becomes visible later through a release store.
  Node* NoBarrierNext(int n) {
    assert(n >= 0);
    return next_[n].load(std::memory_order_relaxed);
  }
  void NoBarrierSetNext(int n, Node* x) {
    assert(n >= 0);
    next_[n].store(x, std::memory_order_relaxed);
  }

 private:
  // Level 0 is next_[0]; a node of height h is allocated with room for
  // next_[0..h-1] (see NodeSize()).
  std::atomic<Node*> next_[1];
};

template <typename Key, class Comparator>
SkipList<Key, Comparator>::SkipList(Comparator cmp, Arena* arena)
    : compare_(cmp),
      arena_(arena),
      head_(NewNode(Key(), kMaxHeight)),
      max_height_(1),
      rnd_(0xdeadbeef) {}

template <typename Key, class Comparator>
typename SkipList<Key, Comparator>::Node* SkipList<Key, Comparator>::NewNode(const Key& key,
                                                                             int height) {
  char* mem = arena_->AllocateAligned(NodeSize(height));
  return new (mem) Node(key, height);
}

template <typename Key, class Comparator>
int SkipList<Key, Comparator>::RandomHeight() {
  static_assert(kBranching == 4, "the bit trick below takes two random bits per level");
  static_assert(2 * kMaxHeight <= 64, "one 64-bit draw must cover every level");
  uint64_t bits = rnd_.Next64();
  int height = 1;
  while (height < kMaxHeight && (bits & 3) == 0) {
    height++;
    bits >>= 2;
  }
  return height;
}

template <typename Key, class Comparator>
typename SkipList<Key, Comparator>::Node* SkipList<Key, Comparator>::FindGreaterOrEqual(
    const Key& key, Node** prev) const {
  Node* x = head_;
  int level = MaxHeight() - 1;
  // The node that stopped the walk at the level above; known to be >= key,
  // so it need not be compared again.
  Node* last_bigger = nullptr;
  while (true) {
    Node* next = x->Next(level);
    if (next != last_bigger && KeyIsAfterNode(key, next)) {
      x = next;  // keep walking this level
    } else {
      if (prev != nullptr) prev[level] = x;
      if (level == 0) return next;
      last_bigger = next;
      level--;
    }
  }
}

template <typename Key, class Comparator>
typename SkipList<Key, Comparator>::Node* SkipList<Key, Comparator>::FindLessThan(
    const Key& key, bool or_equal) const {
  // True if `n` belongs before the node sought, i.e. n < key (n <= key).
  auto before = [&](Node* n) {
    int c = compare_(n->key, key);
    return or_equal ? c <= 0 : c < 0;
  };
  Node* x = head_;
  int level = MaxHeight() - 1;
  Node* last_bigger = nullptr;  // as in FindGreaterOrEqual
  while (true) {
    assert(x == head_ || before(x));
    Node* next = x->Next(level);
    if (next != nullptr && next != last_bigger && before(next)) {
      x = next;
    } else {
      if (level == 0) return x == head_ ? nullptr : x;
      last_bigger = next;
      level--;
    }
  }
}

template <typename Key, class Comparator>
typename SkipList<Key, Comparator>::Node* SkipList<Key, Comparator>::FindLast() const {
  Node* x = head_;
  int level = MaxHeight() - 1;
  while (true) {
    Node* next = x->Next(level);
    if (next != nullptr) {
      x = next;
    } else {
      if (level == 0) return x == head_ ? nullptr : x;
      level--;
    }
  }
}

template <typename Key, class Comparator>
void SkipList<Key, Comparator>::Insert(const Key& key) {
  Node* prev[kMaxHeight];
  Node* next = FindGreaterOrEqual(key, prev);
  assert(next == nullptr || !Equal(key, next->key));
  (void)next;

  const int height = RandomHeight();
  if (height > MaxHeight()) {
    for (int i = MaxHeight(); i < height; i++) prev[i] = head_;
    // Relaxed: see MaxHeight(). The head's pointers at the new levels are
    // published below with release stores.
    max_height_.store(height, std::memory_order_relaxed);
  }

  Node* x = NewNode(key, height);
  for (int i = 0; i < height; i++) {
    // The new node is unreachable until prev[i]->SetNext, so its own link
    // needs no barrier; prev[i]'s pointer is only stored by this writer.
    x->NoBarrierSetNext(i, prev[i]->NoBarrierNext(i));
    prev[i]->SetNext(i, x);
  }
}

template <typename Key, class Comparator>
bool SkipList<Key, Comparator>::Contains(const Key& key) const {
  Node* x = FindGreaterOrEqual(key, nullptr);
  return x != nullptr && Equal(key, x->key);
}

}  // namespace strata::memtable

#endif  // STRATA_MEMTABLE_SKIPLIST_H_
