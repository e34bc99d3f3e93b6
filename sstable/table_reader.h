// TableReader: an open SSTable (sstable/FORMAT.md). Open() checks the
// footer and loads the index, filter and properties blocks into memory;
// data blocks are read on demand, through the block cache when one is given.
//
// Thread-safe: any number of threads may call any const method and use
// their own iterators at once. Iterators must not outlive the reader.
// Invariants: the index, filter and properties passed their checksums and
// parsed; every error later found in a data block or index entry is a
// Corruption naming the file, the block kind and the block's offset, and
// sticks in the iterator that found it.
#ifndef STRATA_SSTABLE_TABLE_READER_H_
#define STRATA_SSTABLE_TABLE_READER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/file_system.h"
#include "common/iterator.h"
#include "sstable/block.h"
#include "sstable/block_cache.h"
#include "sstable/bloom.h"
#include "sstable/format.h"
#include "sstable/properties.h"
#include "strata/slice.h"
#include "strata/status.h"

namespace strata::sstable {

struct TableReaderOptions {
  // Where data blocks are cached; nullptr reads every block from the file.
  BlockCache* block_cache = nullptr;
  // Who the cached blocks are charged to.
  BlockCache::OwnerId owner = BlockCache::kNoOwner;
  // Cache data blocks as resident (never evicted): for in-memory locality
  // groups. Whoever deletes the file calls BlockCache::EraseFile.
  bool resident_blocks = false;
  // The number in the block cache keys; 0 takes it from the properties.
  uint64_t file_number = 0;
};

class TableReader {
 public:
  // Opens the table in `file` (of `file_size` bytes); `file_name` is used in
  // messages. Corruption when the footer, index, filter or properties block
  // is damaged; NotSupported for an unknown format version.
  static Result<std::unique_ptr<TableReader>> Open(const TableReaderOptions& options,
                                                   std::unique_ptr<RandomAccessFile> file,
                                                   uint64_t file_size, std::string file_name);
  ~TableReader();
  TableReader(const TableReader&) = delete;
  TableReader& operator=(const TableReader&) = delete;

  // An iterator over (cell key, value) in key order; key() and value() are
  // valid until the iterator moves. Errors stick in its status().
  // fill_cache false: blocks found in the cache are used, but blocks read
  // from the file are not added to it (for reads that pass over a file once,
  // like compaction's, and would otherwise evict what readers use). With
  // `fill_budget`, blocks read from the file are added only while the budget
  // lasts (a scan's, shared by its iterators); a table of resident blocks
  // adds them all.
  std::unique_ptr<InternalIterator> NewIterator(
      bool fill_cache = true, std::shared_ptr<CacheFillBudget> fill_budget = nullptr) const;

  // Bloom checks: false means the table has no cell of that row / column.
  // Always true when the table has no filter.
  bool RowMayMatch(const Slice& row) const;
  bool ColumnMayMatch(const Slice& row, uint16_t family, const Slice& qualifier) const;
  // The same, with the encoded prefixes (mc(row), and mc(row) family mc(qualifier)).
  bool RowPrefixMayMatch(const Slice& row_prefix) const;
  bool ColumnPrefixMayMatch(const Slice& column_prefix) const;
  bool has_filter() const { return filter_.has_value(); }
  const FilterBlockReader* filter() const { return filter_ ? &*filter_ : nullptr; }

  const TableProperties& properties() const { return properties_; }
  const Footer& footer() const { return footer_; }
  // How the data blocks store their keys (by the footer's format version).
  KeyEncoding data_key_encoding() const { return DataKeyEncoding(footer_.format_version); }
  uint64_t file_size() const { return file_size_; }
  const std::string& file_name() const { return file_name_; }
  uint64_t file_number() const { return file_number_; }

  // The byte offset in the file where `key` would be found: the offset of
  // the data block that may hold it, or the end of the data when beyond.
  uint64_t ApproximateOffsetOf(const Slice& key) const;
  // Where the data blocks end (what ApproximateOffsetOf gives a key past
  // every key): the filter block, or the index when there is none.
  uint64_t DataEnd() const;

  // One block of the file, for inspection tools.
  struct BlockInfo {
    BlockKind kind;
    BlockHandle handle;
    // Data blocks: the index separator (>= every key in the block).
    std::string separator;
  };
  // Every block in file order: data blocks (from the index), then filter,
  // index and properties.
  Status ListBlocks(std::vector<BlockInfo>* blocks) const;

  // Reads every block, checks its checksum and decodes it; checks that keys
  // increase across the file and stay within their index separators.
  Status VerifyChecksums() const;

  // Reads, verifies and uncompresses one block (bypassing the cache).
  Status ReadBlockContents(BlockKind kind, const BlockHandle& handle, BlockContents* out) const;
  // The stored bytes of a block as on disk, trailer included, unverified.
  Status ReadRawBlock(const BlockHandle& handle, std::string* out) const;

 private:
  class Iter;
  friend class Iter;

  TableReader(const TableReaderOptions& options, std::unique_ptr<RandomAccessFile> file,
              uint64_t file_size, std::string file_name);
  Status Init();

  // Pins the data block at `handle` through the cache, or reads it into
  // *owned (always on a cache miss without fill_cache, or when `fill_budget`
  // is not null and cannot take the block of a table that is not resident).
  Status GetDataBlock(const BlockHandle& handle, bool fill_cache, CacheFillBudget* fill_budget,
                      BlockCache::Handle* cached, std::unique_ptr<Block>* owned) const;
  // Builds index_windows_ when the index has one entry per restart point.
  void BuildIndexWindows();
  // The position of the first index entry whose separator is >= target (the
  // entry count when there is none), using index_windows_; `it` (over the
  // index block) settles ties. REQUIRES: !index_windows_.empty()
  uint32_t FindIndexEntry(const Slice& target, Block::Iter* it) const;

  const TableReaderOptions options_;
  const std::unique_ptr<RandomAccessFile> file_;
  const uint64_t file_size_;
  const std::string file_name_;
  uint64_t file_number_ = 0;
  Footer footer_;
  std::unique_ptr<Block> index_;
  // A seek's search aid over the index: every separator but the last starts
  // with index_prefix_, and index_windows_[i] holds the 8 bytes after it of
  // separator i (zero-padded, big-endian: integer order is byte order), so
  // a seek binary-searches one dense array instead of the index block's
  // restart array and entries. Empty when the index has fewer than two
  // entries or not one entry per restart point (FORMAT.md's interval 1).
  std::string index_prefix_;
  std::vector<uint64_t> index_windows_;
  std::string index_last_;  // the last separator
  std::optional<FilterBlockReader> filter_;
  TableProperties properties_;
};

}  // namespace strata::sstable

#endif  // STRATA_SSTABLE_TABLE_READER_H_
