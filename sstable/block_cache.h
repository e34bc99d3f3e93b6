// BlockCache: a sharded LRU cache of decoded blocks, shared by every table
// reader of an engine, bounded by bytes and charged per owner.
//
// Entries are keyed by (file number, block offset); file numbers must be
// unique among all users of one cache. Each entry carries a charge (its
// bytes) and the owner it is charged to. A Handle returned by Insert or
// Lookup pins its entry: a pinned entry is never evicted and its block stays
// valid until the last Handle on it is gone, even if the entry is erased or
// replaced meanwhile. Entries inserted with Priority::kResident (the blocks
// of an in-memory locality group) are never evicted at all; only Erase or
// EraseFile removes them.
//
// Thread-safe (Handle objects themselves are thread-compatible). Invariants, per shard and so for the whole cache:
//   usage == sum of the charges of all live entries (cached, or erased but
//            still pinned by a Handle);
//   usage - pinned_usage == sum of the charges of the entries on the LRU
//            list, which are exactly the cached, unpinned, non-resident ones;
//   sum over owners of OwnerUsage == usage;
//   after any call returns, usage <= capacity unless pinned_usage > capacity
//            (pinned and resident entries may push usage over capacity: a
//            block a reader holds cannot be dropped).
#ifndef STRATA_SSTABLE_BLOCK_CACHE_H_
#define STRATA_SSTABLE_BLOCK_CACHE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"
#include "sstable/block.h"

namespace strata::sstable {

class BlockCache {
 public:
  // Whom an entry's bytes are charged to: an id the cache's user chooses
  // (the engine gives each tenant one).
  using OwnerId = uint32_t;
  // The owner of blocks nobody is charged for in particular.
  static constexpr OwnerId kNoOwner = 0;

  struct Key {
    uint64_t file_number = 0;
    uint64_t offset = 0;
    bool operator==(const Key& o) const {
      return file_number == o.file_number && offset == o.offset;
    }
  };

  enum class Priority {
    kNormal,    // evicted in LRU order once no Handle pins it
    kResident,  // never evicted; stays until Erase/EraseFile
  };

 private:
  struct Entry;
  class EntryTable;
  class Shard;

 public:
  // A pin on one cached block. Movable, not copyable; an empty Handle pins
  // nothing. Destroying or Reset()ing it releases the pin. Thread-compatible
  // (many Handles on one entry may live in different threads).
  class Handle {
   public:
    Handle() = default;
    ~Handle() { Reset(); }
    Handle(Handle&& o) noexcept : shard_(o.shard_), entry_(o.entry_) {
      o.shard_ = nullptr;
      o.entry_ = nullptr;
    }
    Handle& operator=(Handle&& o) noexcept;
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;

    explicit operator bool() const { return entry_ != nullptr; }
    // REQUIRES: *this is not empty. Valid while the Handle pins it.
    const Block* block() const;
    void Reset();

   private:
    friend class BlockCache;
    Handle(Shard* shard, Entry* entry) : shard_(shard), entry_(entry) {}
    Shard* shard_ = nullptr;
    Entry* entry_ = nullptr;
  };

  // `capacity` in bytes, split evenly over 2^num_shard_bits shards (LRU order
  // is per shard). REQUIRES: 0 <= num_shard_bits <= 10
  explicit BlockCache(size_t capacity, int num_shard_bits = 4);
  // REQUIRES: no Handle is outstanding.
  ~BlockCache();
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  // Caches `block` under `key`, charged `charge` bytes to `owner`, replacing
  // any entry with that key, and returns a Handle pinning it. May evict
  // unpinned entries of any owner to make room. A kNormal insert over a
  // resident entry keeps that entry (and drops `block`): a block once
  // resident stays so until erased.
  Handle Insert(const Key& key, std::unique_ptr<Block> block, size_t charge, OwnerId owner,
                Priority priority = Priority::kNormal);
  // A Handle on the cached block, or an empty Handle on a miss. kResident
  // makes a hit resident (for a reader of an in-memory group that finds a
  // block an unpinned reader of the same file cached).
  Handle Lookup(const Key& key, Priority priority = Priority::kNormal);
  // Drops the entry (the block lives on while a Handle pins it).
  void Erase(const Key& key);
  // Drops every entry of one file, resident ones included. Linear in the
  // number of cached entries.
  void EraseFile(uint64_t file_number);
  // Changes the capacity, evicting as needed.
  void SetCapacity(size_t capacity);

  // The sum of the shards' capacities: the requested capacity rounded up to
  // a multiple of the shard count.
  size_t capacity() const;
  // Bytes charged by live entries.
  size_t usage() const;
  // Bytes of entries that cannot be evicted now: pinned by a Handle or resident.
  size_t pinned_usage() const;
  // Bytes charged to one owner.
  size_t OwnerUsage(OwnerId owner) const;
  size_t num_entries() const;
  uint64_t hits() const {
    // Relaxed: statistics, read without ordering against the cache contents.
    return hits_.load(std::memory_order_relaxed);
  }
  uint64_t misses() const { return misses_.load(std::memory_order_relaxed); }

 private:
  Shard& ShardFor(uint64_t hash);

  std::vector<std::unique_ptr<Shard>> shards_;
  const int shard_bits_;
  // Relaxed: counters only; nothing is published through them.
  std::atomic<uint64_t> hits_{0};
  std::atomic<uint64_t> misses_{0};
};

// How many bytes of blocks read from files one scan may still add to the
// cache. The iterators of a scan share one: they add the blocks they read
// while it lasts, then use what the cache holds without adding to it, so
// that one long scan does not push out every block point reads and other
// scans use. The scan refills it when it seeks: short scans, and a scan
// sought again and again, fill the cache as usual.
//
// Thread-compatible: the iterators of one scan move on one thread at a time.
class CacheFillBudget {
 public:
  explicit CacheFillBudget(size_t bytes) : limit_(bytes), left_(bytes) {}

  // Whether a block of `charge` bytes may go into the cache; takes it from
  // the budget if so.
  bool Take(size_t charge) {
    if (charge > left_) {
      left_ = 0;
      return false;
    }
    left_ -= charge;
    return true;
  }
  void Refill() { left_ = limit_; }
  size_t left() const { return left_; }

 private:
  const size_t limit_;
  size_t left_;
};

}  // namespace strata::sstable

#endif  // STRATA_SSTABLE_BLOCK_CACHE_H_
