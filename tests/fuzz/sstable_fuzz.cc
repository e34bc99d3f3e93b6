// Fuzzes TableReader (sstable/table_reader.h): the input is one byte (odd:
// read through a block cache) and then a whole table file. Opening it, walking it, seeking in it,
// asking its filters and verifying it must end in a clean result or an error status. A table that
// VerifyChecksums() passes must also walk in strictly increasing key order.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "mem_fs.h"
#include "sstable/block_cache.h"
#include "sstable/table_reader.h"

using namespace strata;
using namespace strata::sstable;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static BlockCache* cache = new BlockCache(1 << 20);
  static fuzz::MemFileSystem* fs = new fuzz::MemFileSystem();
  if (size < 1) return 0;
  const bool through_cache = data[0] & 1;
  data++;
  size--;
  fs->Clear();
  fs->Put("t.sst", std::string(reinterpret_cast<const char*>(data), size));
  std::unique_ptr<RandomAccessFile> file;
  if (!fs->NewRandomAccessFile("t.sst", &file).ok()) return 0;
  TableReaderOptions options;
  // Half the inputs read through a cache, with a file number of their own so
  // no input sees another's blocks.
  static uint64_t number = 0;
  if (through_cache) {
    options.block_cache = cache;
    options.file_number = ++number;
  }
  auto reader = TableReader::Open(options, std::move(file), size, "t.sst");
  if (!reader.ok()) return 0;
  const TableReader& t = **reader;
  const bool verified = t.VerifyChecksums().ok();
  std::vector<TableReader::BlockInfo> blocks;
  (void)t.ListBlocks(&blocks);

  std::unique_ptr<InternalIterator> it = t.NewIterator();
  std::vector<std::string> keys;
  std::string prev;
  size_t n = 0;
  for (it->SeekToFirst(); it->Valid() && n < 100000; it->Next(), n++) {
    const Slice key = it->key();
    if (verified && n > 0) FUZZ_CHECK(prev < key.ToString());
    prev = key.ToString();
    if (keys.size() < 32) keys.push_back(prev);
    (void)it->value().size();
  }
  if (verified && n < 100000) FUZZ_CHECK(it->status().ok());
  keys.emplace_back();
  keys.push_back(std::string(64, '\xff'));
  for (const std::string& k : keys) {
    it->Seek(k);
    if (it->Valid()) it->Next();
    it->SeekBefore(k);
    if (it->Valid()) (void)it->value().size();
    (void)t.RowPrefixMayMatch(k);
    (void)t.ColumnPrefixMayMatch(k);
    (void)t.ApproximateOffsetOf(k);
  }
  (void)t.RowMayMatch("r");
  (void)t.ColumnMayMatch("r", 1, "q");
  if (options.block_cache != nullptr) cache->EraseFile(options.file_number);
  return 0;
}
