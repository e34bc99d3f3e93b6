#include "sstable/block_cache.h"

#include <cassert>
#include <cstring>

namespace strata::sstable {

// One cached block. `refs` counts the shard's own reference (while
// in_cache) plus one per Handle. An entry is on the LRU list exactly when
// in_cache && refs == 1 && !resident.
struct BlockCache::Entry {
  Key key;
  uint64_t hash = 0;  // HashKey(key)
  Entry* next_hash = nullptr;  // chain in the shard's table
  std::unique_ptr<Block> block;
  size_t charge = 0;
  OwnerId owner = kNoOwner;
  bool resident = false;
  bool in_cache = false;
  uint32_t refs = 0;
  Entry* prev = nullptr;  // LRU list links
  Entry* next = nullptr;
};

namespace {

// Mixes (file number, offset) into 64 well-spread bits: the top ones pick
// the shard, the low ones the bucket. In memory only; free to change.
inline uint64_t HashKey(const BlockCache::Key& k) {
  uint64_t h = (k.file_number * 0x9e3779b97f4a7c15ull) ^ k.offset;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

}  // namespace

// The entries of one shard by key: chains through Entry::next_hash in a
// power-of-two bucket array that doubles once it holds more entries than
// buckets (LevelDB's HandleTable). An entry is its own node, so a lookup
// touches the bucket and the entries of its chain and nothing else.
class BlockCache::EntryTable {
 public:
  EntryTable() : buckets_(16, nullptr) {}

  Entry* Lookup(const BlockCache::Key& key, uint64_t hash) const {
    Entry* e = buckets_[hash & (buckets_.size() - 1)];
    while (e != nullptr && (e->hash != hash || !(e->key == key))) e = e->next_hash;
    return e;
  }
  // Adds `e`, taking the place of an entry with the same key, which it returns.
  Entry* Insert(Entry* e) {
    Entry** slot = Find(e->key, e->hash);
    Entry* old = *slot;
    e->next_hash = old == nullptr ? nullptr : old->next_hash;
    *slot = e;
    if (old == nullptr && ++size_ > buckets_.size()) Grow();
    return old;
  }
  // Takes the entry with `key` out of the table and returns it (nullptr if none).
  Entry* Remove(const BlockCache::Key& key, uint64_t hash) {
    Entry** slot = Find(key, hash);
    Entry* e = *slot;
    if (e != nullptr) {
      *slot = e->next_hash;
      size_--;
    }
    return e;
  }
  // Takes every entry for which pred(e) holds out of the table and returns them.
  template <typename Pred>
  std::vector<Entry*> RemoveIf(Pred pred) {
    std::vector<Entry*> removed;
    for (auto& head : buckets_) {
      Entry** slot = &head;
      while (*slot != nullptr) {
        Entry* e = *slot;
        if (pred(e)) {
          *slot = e->next_hash;
          size_--;
          removed.push_back(e);
        } else {
          slot = &e->next_hash;
        }
      }
    }
    return removed;
  }
  size_t size() const { return size_; }

 private:
  Entry** Find(const BlockCache::Key& key, uint64_t hash) {
    Entry** slot = &buckets_[hash & (buckets_.size() - 1)];
    while (*slot != nullptr && ((*slot)->hash != hash || !((*slot)->key == key))) {
      slot = &(*slot)->next_hash;
    }
    return slot;
  }
  void Grow() {
    std::vector<Entry*> bigger(buckets_.size() * 2, nullptr);
    for (Entry* head : buckets_) {
      while (head != nullptr) {
        Entry* next = head->next_hash;
        Entry*& b = bigger[head->hash & (bigger.size() - 1)];
        head->next_hash = b;
        b = head;
        head = next;
      }
    }
    buckets_.swap(bigger);
  }

  std::vector<Entry*> buckets_;
  size_t size_ = 0;
};

class BlockCache::Shard {
 public:
  Shard() {
    lru_.prev = &lru_;
    lru_.next = &lru_;
  }
  ~Shard() {
    MutexLock l(&mu_);
    for (Entry* e : table_.RemoveIf([](const Entry*) { return true; })) {
      assert(e->refs == 1 && "BlockCache destroyed while a Handle is outstanding");
      RemoveFromCache(e);
    }
  }

  void SetCapacity(size_t capacity) LOCKS_EXCLUDED(mu_) {
    MutexLock l(&mu_);
    capacity_ = capacity;
    EvictLocked();
  }

  Entry* Insert(const Key& key, uint64_t hash, std::unique_ptr<Block> block, size_t charge,
                OwnerId owner, bool resident) LOCKS_EXCLUDED(mu_) {
    auto* e = new Entry;
    e->key = key;
    e->hash = hash;
    e->block = std::move(block);
    e->charge = charge;
    e->owner = owner;
    e->resident = resident;
    e->in_cache = true;
    e->refs = 2;  // the shard's and the returned Handle's
    MutexLock l(&mu_);
    if (!resident) {
      // A resident entry is never replaced by a normal one (a reader that
      // still has the file open unpinned, racing with the pass that made it
      // resident): the block is the same, and it must stay resident.
      if (Entry* cur = table_.Lookup(key, hash); cur != nullptr && cur->resident) {
        delete e;
        Ref(cur);
        return cur;
      }
    }
    usage_ += charge;
    pinned_ += charge;
    owner_usage_[owner] += charge;
    if (Entry* old = table_.Insert(e)) RemoveFromCache(old);
    EvictLocked();
    return e;
  }

  Entry* Lookup(const Key& key, uint64_t hash, bool make_resident) LOCKS_EXCLUDED(mu_) {
    MutexLock l(&mu_);
    Entry* e = table_.Lookup(key, hash);
    if (e == nullptr) return nullptr;
    Ref(e);  // off the LRU list: resident entries never go back on it
    if (make_resident) e->resident = true;
    return e;
  }

  void Release(Entry* e) LOCKS_EXCLUDED(mu_) {
    MutexLock l(&mu_);
    Unref(e);
    EvictLocked();
  }

  void Erase(const Key& key, uint64_t hash) LOCKS_EXCLUDED(mu_) {
    MutexLock l(&mu_);
    if (Entry* e = table_.Remove(key, hash)) RemoveFromCache(e);
  }

  void EraseFile(uint64_t file_number) LOCKS_EXCLUDED(mu_) {
    MutexLock l(&mu_);
    for (Entry* e : table_.RemoveIf(
             [&](const Entry* e) { return e->key.file_number == file_number; })) {
      RemoveFromCache(e);
    }
  }

  size_t capacity() const LOCKS_EXCLUDED(mu_) {
    MutexLock l(&mu_);
    return capacity_;
  }
  size_t usage() const LOCKS_EXCLUDED(mu_) {
    MutexLock l(&mu_);
    return usage_;
  }
  size_t pinned_usage() const LOCKS_EXCLUDED(mu_) {
    MutexLock l(&mu_);
    return pinned_;
  }
  size_t num_entries() const LOCKS_EXCLUDED(mu_) {
    MutexLock l(&mu_);
    return table_.size();
  }
  size_t OwnerUsage(OwnerId owner) const LOCKS_EXCLUDED(mu_) {
    MutexLock l(&mu_);
    auto it = owner_usage_.find(owner);
    return it == owner_usage_.end() ? 0 : it->second;
  }

 private:
  bool OnLru(const Entry* e) const { return e->next != nullptr; }

  void LruRemove(Entry* e) EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    e->prev->next = e->next;
    e->next->prev = e->prev;
    e->prev = e->next = nullptr;
    pinned_ += e->charge;
  }
  // Appends as the most recently used.
  void LruAppend(Entry* e) EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    e->next = &lru_;
    e->prev = lru_.prev;
    e->prev->next = e;
    e->next->prev = e;
    pinned_ -= e->charge;
  }

  void Ref(Entry* e) EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (OnLru(e)) LruRemove(e);
    e->refs++;
  }

  void Unref(Entry* e) EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    assert(e->refs > 0);
    e->refs--;
    if (e->refs == 0) {
      assert(!OnLru(e));
      usage_ -= e->charge;
      pinned_ -= e->charge;
      auto it = owner_usage_.find(e->owner);
      it->second -= e->charge;
      if (it->second == 0) owner_usage_.erase(it);
      Block::Release(std::move(e->block));  // its buffer serves this thread's next read
      delete e;
    } else if (e->refs == 1 && e->in_cache && !e->resident) {
      LruAppend(e);
    }
  }

  // `e` has been taken out of table_: drop the shard's reference.
  void RemoveFromCache(Entry* e) EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (OnLru(e)) LruRemove(e);
    e->in_cache = false;
    Unref(e);
  }

  void EvictLocked() EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    while (usage_ > capacity_ && lru_.next != &lru_) {
      Entry* victim = lru_.next;
      table_.Remove(victim->key, victim->hash);
      RemoveFromCache(victim);
    }
  }

  mutable Mutex mu_;
  size_t capacity_ GUARDED_BY(mu_) = 0;
  size_t usage_ GUARDED_BY(mu_) = 0;
  size_t pinned_ GUARDED_BY(mu_) = 0;  // charges of live entries not on the LRU list
  Entry lru_ GUARDED_BY(mu_);          // list head: lru_.next is the oldest
  EntryTable table_ GUARDED_BY(mu_);
  std::unordered_map<OwnerId, size_t> owner_usage_ GUARDED_BY(mu_);
};

BlockCache::Handle& BlockCache::Handle::operator=(Handle&& o) noexcept {
  if (this != &o) {
    Reset();
    shard_ = o.shard_;
    entry_ = o.entry_;
    o.shard_ = nullptr;
    o.entry_ = nullptr;
  }
  return *this;
}

const Block* BlockCache::Handle::block() const {
  assert(entry_ != nullptr);
  return entry_->block.get();
}

void BlockCache::Handle::Reset() {
  if (entry_ != nullptr) {
    shard_->Release(entry_);
    entry_ = nullptr;
    shard_ = nullptr;
  }
}

BlockCache::BlockCache(size_t capacity, int num_shard_bits) : shard_bits_(num_shard_bits) {
  assert(num_shard_bits >= 0 && num_shard_bits <= 10);
  const size_t n = size_t{1} << num_shard_bits;
  for (size_t i = 0; i < n; i++) shards_.push_back(std::make_unique<Shard>());
  SetCapacity(capacity);
}

BlockCache::~BlockCache() = default;

BlockCache::Shard& BlockCache::ShardFor(uint64_t hash) {
  if (shard_bits_ == 0) return *shards_[0];
  return *shards_[hash >> (64 - shard_bits_)];
}

BlockCache::Handle BlockCache::Insert(const Key& key, std::unique_ptr<Block> block, size_t charge,
                                      OwnerId owner, Priority priority) {
  const uint64_t hash = HashKey(key);
  Shard& shard = ShardFor(hash);
  Entry* e =
      shard.Insert(key, hash, std::move(block), charge, owner, priority == Priority::kResident);
  return Handle(&shard, e);
}

BlockCache::Handle BlockCache::Lookup(const Key& key, Priority priority) {
  const uint64_t hash = HashKey(key);
  Shard& shard = ShardFor(hash);
  Entry* e = shard.Lookup(key, hash, priority == Priority::kResident);
  if (e == nullptr) {
    misses_.fetch_add(1, std::memory_order_relaxed);
    return Handle();
  }
  hits_.fetch_add(1, std::memory_order_relaxed);
  return Handle(&shard, e);
}

void BlockCache::Erase(const Key& key) {
  const uint64_t hash = HashKey(key);
  ShardFor(hash).Erase(key, hash);
}

void BlockCache::EraseFile(uint64_t file_number) {
  for (auto& s : shards_) s->EraseFile(file_number);
}

void BlockCache::SetCapacity(size_t capacity) {
  const size_t n = shards_.size();
  const size_t per_shard = (capacity + n - 1) / n;
  for (auto& s : shards_) s->SetCapacity(per_shard);
}

size_t BlockCache::capacity() const {
  size_t r = 0;
  for (auto& s : shards_) r += s->capacity();
  return r;
}
size_t BlockCache::usage() const {
  size_t r = 0;
  for (auto& s : shards_) r += s->usage();
  return r;
}
size_t BlockCache::pinned_usage() const {
  size_t r = 0;
  for (auto& s : shards_) r += s->pinned_usage();
  return r;
}
size_t BlockCache::OwnerUsage(OwnerId owner) const {
  size_t r = 0;
  for (auto& s : shards_) r += s->OwnerUsage(owner);
  return r;
}
size_t BlockCache::num_entries() const {
  size_t r = 0;
  for (auto& s : shards_) r += s->num_entries();
  return r;
}

}  // namespace strata::sstable
