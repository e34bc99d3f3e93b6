#include "sstable/block_cache.h"

#include <cassert>
#include <cstring>

#include "common/hash.h"

namespace strata::sstable {

// One cached block. `refs` counts the shard's own reference (while
// in_cache) plus one per Handle. An entry is on the LRU list exactly when
// in_cache && refs == 1 && !resident.
struct BlockCache::Entry {
  Key key;
  std::unique_ptr<Block> block;
  size_t charge = 0;
  TenantId tenant = kNoTenant;
  bool resident = false;
  bool in_cache = false;
  uint32_t refs = 0;
  Entry* prev = nullptr;  // LRU list links
  Entry* next = nullptr;
};

namespace {

struct KeyHash {
  size_t operator()(const BlockCache::Key& k) const {
    char buf[16];
    std::memcpy(buf, &k.file_number, 8);
    std::memcpy(buf + 8, &k.offset, 8);
    return static_cast<size_t>(Hash64(buf, 16));
  }
};

}  // namespace

class BlockCache::Shard {
 public:
  Shard() {
    lru_.prev = &lru_;
    lru_.next = &lru_;
  }
  ~Shard() {
    MutexLock l(&mu_);
    for (auto& [key, e] : table_) {
      assert(e->refs == 1 && "BlockCache destroyed while a Handle is outstanding");
      RemoveFromCache(e);
    }
    table_.clear();
  }

  void SetCapacity(size_t capacity) LOCKS_EXCLUDED(mu_) {
    MutexLock l(&mu_);
    capacity_ = capacity;
    EvictLocked();
  }

  Entry* Insert(const Key& key, std::unique_ptr<Block> block, size_t charge, TenantId tenant,
                bool resident) LOCKS_EXCLUDED(mu_) {
    auto* e = new Entry;
    e->key = key;
    e->block = std::move(block);
    e->charge = charge;
    e->tenant = tenant;
    e->resident = resident;
    e->in_cache = true;
    e->refs = 2;  // the shard's and the returned Handle's
    MutexLock l(&mu_);
    usage_ += charge;
    pinned_ += charge;
    tenant_usage_[tenant] += charge;
    auto [it, inserted] = table_.try_emplace(key, e);
    if (!inserted) {
      Entry* old = it->second;
      it->second = e;
      RemoveFromCache(old);
    }
    EvictLocked();
    return e;
  }

  Entry* Lookup(const Key& key) LOCKS_EXCLUDED(mu_) {
    MutexLock l(&mu_);
    auto it = table_.find(key);
    if (it == table_.end()) return nullptr;
    Ref(it->second);
    return it->second;
  }

  void Release(Entry* e) LOCKS_EXCLUDED(mu_) {
    MutexLock l(&mu_);
    Unref(e);
    EvictLocked();
  }

  void Erase(const Key& key) LOCKS_EXCLUDED(mu_) {
    MutexLock l(&mu_);
    auto it = table_.find(key);
    if (it == table_.end()) return;
    Entry* e = it->second;
    table_.erase(it);
    RemoveFromCache(e);
  }

  void EraseFile(uint64_t file_number) LOCKS_EXCLUDED(mu_) {
    MutexLock l(&mu_);
    for (auto it = table_.begin(); it != table_.end();) {
      if (it->first.file_number == file_number) {
        Entry* e = it->second;
        it = table_.erase(it);
        RemoveFromCache(e);
      } else {
        ++it;
      }
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
  size_t TenantUsage(TenantId tenant) const LOCKS_EXCLUDED(mu_) {
    MutexLock l(&mu_);
    auto it = tenant_usage_.find(tenant);
    return it == tenant_usage_.end() ? 0 : it->second;
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
      auto it = tenant_usage_.find(e->tenant);
      it->second -= e->charge;
      if (it->second == 0) tenant_usage_.erase(it);
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
      table_.erase(victim->key);
      RemoveFromCache(victim);
    }
  }

  mutable Mutex mu_;
  size_t capacity_ GUARDED_BY(mu_) = 0;
  size_t usage_ GUARDED_BY(mu_) = 0;
  size_t pinned_ GUARDED_BY(mu_) = 0;  // charges of live entries not on the LRU list
  Entry lru_ GUARDED_BY(mu_);          // list head: lru_.next is the oldest
  std::unordered_map<Key, Entry*, KeyHash> table_ GUARDED_BY(mu_);
  std::unordered_map<TenantId, size_t> tenant_usage_ GUARDED_BY(mu_);
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

BlockCache::Shard& BlockCache::ShardFor(const Key& key) {
  if (shard_bits_ == 0) return *shards_[0];
  const uint64_t h = KeyHash()(key);
  return *shards_[h >> (64 - shard_bits_)];
}

BlockCache::Handle BlockCache::Insert(const Key& key, std::unique_ptr<Block> block, size_t charge,
                                      TenantId tenant, Priority priority) {
  Shard& shard = ShardFor(key);
  Entry* e = shard.Insert(key, std::move(block), charge, tenant, priority == Priority::kResident);
  return Handle(&shard, e);
}

BlockCache::Handle BlockCache::Lookup(const Key& key) {
  Shard& shard = ShardFor(key);
  Entry* e = shard.Lookup(key);
  if (e == nullptr) {
    misses_.fetch_add(1, std::memory_order_relaxed);
    return Handle();
  }
  hits_.fetch_add(1, std::memory_order_relaxed);
  return Handle(&shard, e);
}

void BlockCache::Erase(const Key& key) { ShardFor(key).Erase(key); }

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
size_t BlockCache::TenantUsage(TenantId tenant) const {
  size_t r = 0;
  for (auto& s : shards_) r += s->TenantUsage(tenant);
  return r;
}
size_t BlockCache::num_entries() const {
  size_t r = 0;
  for (auto& s : shards_) r += s->num_entries();
  return r;
}

}  // namespace strata::sstable
