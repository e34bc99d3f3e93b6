// TableCache: a bounded LRU cache of open TableReaders, keyed by file
// number, so that hot tables are not reopened (footer, index, filter and
// properties re-read) on every access.
//
// Thread-safe. Readers are handed out as shared_ptr: one evicted or erased
// while in use stays open until its last user lets go. Invariant: at most
// `max_open_tables` readers are held by the cache itself (readers still in
// use after eviction are not counted).
//
// Every point read looks up each file it may touch, so the cache is split
// into shards by file number, each with its own mutex and LRU list: lookups
// of different files do not wait for each other. A shard holds at most
// max_open_tables / shards readers, and a cache of fewer than 128 tables is
// one shard, whose order of eviction is exactly least recently used.
#ifndef STRATA_SSTABLE_TABLE_CACHE_H_
#define STRATA_SSTABLE_TABLE_CACHE_H_

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>

#include "common/file_system.h"
#include "common/mutex.h"
#include "sstable/block_cache.h"
#include "sstable/table_reader.h"

namespace strata::sstable {

// "<dir>/<number, zero-padded to 6 digits>.sst".
std::string TableFileName(const std::string& dir, uint64_t file_number);

struct TableCacheOptions {
  // Must outlive the cache.
  FileSystem* file_system = nullptr;
  // Where table files live; see TableFileName.
  std::string dir;
  // Overrides TableFileName when set.
  std::function<std::string(uint64_t file_number)> file_name;
  // Open readers kept; each holds its index, filter and properties in memory
  // and one open file.
  size_t max_open_tables = 1000;
  // Handed to every reader opened (may be nullptr).
  BlockCache* block_cache = nullptr;
};

class TableCache {
 public:
  explicit TableCache(TableCacheOptions options);
  TableCache(const TableCache&) = delete;
  TableCache& operator=(const TableCache&) = delete;

  // The reader of table `file_number`, opened on a miss with `owner` and
  // `resident_blocks` as its TableReaderOptions (a reader already open keeps
  // the options it was opened with). Errors of the open are returned and
  // nothing is cached.
  Result<std::shared_ptr<TableReader>> Get(uint64_t file_number,
                                           BlockCache::OwnerId owner = BlockCache::kNoOwner,
                                           bool resident_blocks = false);
  // Opens the table with resident blocks and keeps its reader open until
  // Evict, outside the LRU and its max_open_tables bound: for in-memory
  // locality groups, whose reads must never wait for the file system. A
  // reader already open for it is replaced (its users keep it).
  Result<std::shared_ptr<TableReader>> Pin(uint64_t file_number,
                                           BlockCache::OwnerId owner = BlockCache::kNoOwner);
  // Drops the reader of a file, pinned or not (e.g. once the file is obsolete).
  void Evict(uint64_t file_number);

  // Readers held under the max_open_tables bound (pinned ones not counted).
  size_t size() const;
  std::string FileName(uint64_t file_number) const;

 private:
  struct Entry {
    std::shared_ptr<TableReader> reader;
    bool pinned = false;
    std::list<uint64_t>::iterator lru_pos;  // unless pinned
  };
  // The tables whose number is i modulo the number of shards.
  struct alignas(64) Shard {
    mutable Mutex mu;
    std::list<uint64_t> lru GUARDED_BY(mu);  // front: most recently used; not the pinned
    std::unordered_map<uint64_t, Entry> map GUARDED_BY(mu);
    size_t unpinned GUARDED_BY(mu) = 0;
  };

  Shard& ShardOf(uint64_t file_number) const { return shards_[file_number % num_shards_]; }
  Result<std::shared_ptr<TableReader>> Open(uint64_t file_number, BlockCache::OwnerId owner,
                                            bool resident_blocks) const;

  const TableCacheOptions options_;
  const size_t num_shards_;
  const size_t shard_capacity_;  // unpinned readers per shard, at least 1
  const std::unique_ptr<Shard[]> shards_;
};

}  // namespace strata::sstable

#endif  // STRATA_SSTABLE_TABLE_CACHE_H_
