#include "sstable/table_cache.h"

#include <algorithm>
#include <cstdio>

namespace strata::sstable {

std::string TableFileName(const std::string& dir, uint64_t file_number) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%06llu.sst", static_cast<unsigned long long>(file_number));
  return JoinPath(dir, buf);
}

TableCache::TableCache(TableCacheOptions options) : options_(std::move(options)) {}

std::string TableCache::FileName(uint64_t file_number) const {
  return options_.file_name ? options_.file_name(file_number)
                            : TableFileName(options_.dir, file_number);
}

Result<std::shared_ptr<TableReader>> TableCache::Get(uint64_t file_number,
                                                     BlockCache::TenantId tenant,
                                                     bool resident_blocks) {
  {
    MutexLock l(&mu_);
    auto pinned = pinned_.find(file_number);
    if (pinned != pinned_.end()) return pinned->second;
    auto it = map_.find(file_number);
    if (it != map_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second.lru_pos);
      return it->second.reader;
    }
  }
  // Open without the lock: opening reads three blocks and must not stall
  // other lookups. Two threads may race to open the same file; the first
  // to insert wins and the other's reader is dropped.
  Result<std::shared_ptr<TableReader>> shared = Open(file_number, tenant, resident_blocks);
  if (!shared.ok()) return shared.status();

  MutexLock l(&mu_);
  auto [it, inserted] = map_.try_emplace(file_number);
  if (!inserted) {
    lru_.splice(lru_.begin(), lru_, it->second.lru_pos);
    return it->second.reader;
  }
  lru_.push_front(file_number);
  it->second.reader = *shared;
  it->second.lru_pos = lru_.begin();
  while (map_.size() > std::max<size_t>(1, options_.max_open_tables)) {
    map_.erase(lru_.back());
    lru_.pop_back();
  }
  return shared;
}

Result<std::shared_ptr<TableReader>> TableCache::Pin(uint64_t file_number,
                                                     BlockCache::TenantId tenant) {
  Result<std::shared_ptr<TableReader>> reader = Open(file_number, tenant, /*resident_blocks=*/true);
  if (!reader.ok()) return reader.status();
  MutexLock l(&mu_);
  auto it = map_.find(file_number);
  if (it != map_.end()) {
    lru_.erase(it->second.lru_pos);
    map_.erase(it);
  }
  pinned_[file_number] = *reader;
  return reader;
}

Result<std::shared_ptr<TableReader>> TableCache::Open(uint64_t file_number,
                                                      BlockCache::TenantId tenant,
                                                      bool resident_blocks) const {
  const std::string path = FileName(file_number);
  std::unique_ptr<RandomAccessFile> file;
  STRATA_RETURN_IF_ERROR(options_.file_system->NewRandomAccessFile(path, &file));
  Result<uint64_t> size = file->Size();
  if (!size.ok()) return size.status();
  TableReaderOptions ropts;
  ropts.block_cache = options_.block_cache;
  ropts.tenant = tenant;
  ropts.resident_blocks = resident_blocks;
  ropts.file_number = file_number;
  Result<std::unique_ptr<TableReader>> reader =
      TableReader::Open(ropts, std::move(file), *size, path);
  if (!reader.ok()) return reader.status();
  return std::shared_ptr<TableReader>(std::move(*reader));
}

void TableCache::Evict(uint64_t file_number) {
  MutexLock l(&mu_);
  pinned_.erase(file_number);
  auto it = map_.find(file_number);
  if (it == map_.end()) return;
  lru_.erase(it->second.lru_pos);
  map_.erase(it);
}

size_t TableCache::size() const {
  MutexLock l(&mu_);
  return map_.size();
}

}  // namespace strata::sstable
