#include "sstable/table_cache.h"

#include <algorithm>
#include <cstdio>

namespace strata::sstable {

std::string TableFileName(const std::string& dir, uint64_t file_number) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%06llu.sst", static_cast<unsigned long long>(file_number));
  return JoinPath(dir, buf);
}

namespace {

// Shards of a cache of `max_open_tables`: one per 64 tables, from 1 to 16.
size_t ShardsFor(size_t max_open_tables) { return std::clamp<size_t>(max_open_tables / 64, 1, 16); }

}  // namespace

TableCache::TableCache(TableCacheOptions options)
    : options_(std::move(options)),
      num_shards_(ShardsFor(options_.max_open_tables)),
      shard_capacity_(std::max<size_t>(1, options_.max_open_tables / num_shards_)),
      shards_(new Shard[num_shards_]) {}

std::string TableCache::FileName(uint64_t file_number) const {
  return options_.file_name ? options_.file_name(file_number)
                            : TableFileName(options_.dir, file_number);
}

Result<std::shared_ptr<TableReader>> TableCache::Get(uint64_t file_number,
                                                     BlockCache::OwnerId owner,
                                                     bool resident_blocks) {
  Shard& shard = ShardOf(file_number);
  {
    MutexLock l(&shard.mu);
    auto it = shard.map.find(file_number);
    if (it != shard.map.end()) {
      Entry& e = it->second;
      if (!e.pinned && e.lru_pos != shard.lru.begin()) {
        shard.lru.splice(shard.lru.begin(), shard.lru, e.lru_pos);
      }
      return e.reader;
    }
  }
  // Open without the lock: opening reads three blocks and must not stall
  // other lookups. Two threads may race to open the same file; the first
  // to insert wins and the other's reader is dropped.
  Result<std::shared_ptr<TableReader>> shared = Open(file_number, owner, resident_blocks);
  if (!shared.ok()) return shared.status();

  MutexLock l(&shard.mu);
  auto [it, inserted] = shard.map.try_emplace(file_number);
  if (!inserted) {
    Entry& e = it->second;
    if (!e.pinned) shard.lru.splice(shard.lru.begin(), shard.lru, e.lru_pos);
    return e.reader;
  }
  shard.lru.push_front(file_number);
  it->second.reader = *shared;
  it->second.lru_pos = shard.lru.begin();
  shard.unpinned++;
  while (shard.unpinned > shard_capacity_) {
    shard.map.erase(shard.lru.back());
    shard.lru.pop_back();
    shard.unpinned--;
  }
  return shared;
}

Result<std::shared_ptr<TableReader>> TableCache::Pin(uint64_t file_number,
                                                     BlockCache::OwnerId owner) {
  Result<std::shared_ptr<TableReader>> reader = Open(file_number, owner, /*resident_blocks=*/true);
  if (!reader.ok()) return reader.status();
  Shard& shard = ShardOf(file_number);
  MutexLock l(&shard.mu);
  Entry& e = shard.map[file_number];
  if (e.reader != nullptr && !e.pinned) {
    shard.lru.erase(e.lru_pos);
    shard.unpinned--;
  }
  e.reader = *reader;
  e.pinned = true;
  return reader;
}

Result<std::shared_ptr<TableReader>> TableCache::Open(uint64_t file_number,
                                                      BlockCache::OwnerId owner,
                                                      bool resident_blocks) const {
  const std::string path = FileName(file_number);
  std::unique_ptr<RandomAccessFile> file;
  STRATA_RETURN_IF_ERROR(options_.file_system->NewRandomAccessFile(path, &file));
  Result<uint64_t> size = file->Size();
  if (!size.ok()) return size.status();
  TableReaderOptions ropts;
  ropts.block_cache = options_.block_cache;
  ropts.owner = owner;
  ropts.resident_blocks = resident_blocks;
  ropts.file_number = file_number;
  Result<std::unique_ptr<TableReader>> reader =
      TableReader::Open(ropts, std::move(file), *size, path);
  if (!reader.ok()) return reader.status();
  return std::shared_ptr<TableReader>(std::move(*reader));
}

void TableCache::Evict(uint64_t file_number) {
  Shard& shard = ShardOf(file_number);
  MutexLock l(&shard.mu);
  auto it = shard.map.find(file_number);
  if (it == shard.map.end()) return;
  if (!it->second.pinned) {
    shard.lru.erase(it->second.lru_pos);
    shard.unpinned--;
  }
  shard.map.erase(it);
}

size_t TableCache::size() const {
  size_t n = 0;
  for (size_t i = 0; i < num_shards_; i++) {
    MutexLock l(&shards_[i].mu);
    n += shards_[i].unpinned;
  }
  return n;
}

}  // namespace strata::sstable
