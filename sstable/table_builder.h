// TableBuilder: writes one SSTable (sstable/FORMAT.md) from cell keys added
// in strictly increasing memcmp order: data blocks (prefix-compressed,
// optionally zstd-compressed), a filter block over rows and columns, an
// index block with shortened separators, a properties block and the footer.
//
// Thread-compatible. Invariants: the file holds exactly the blocks of the
// keys accepted so far (a rejected Add changes nothing); after an I/O error
// every later call returns that error; after Finish() or Abandon() no more
// keys are accepted.
#ifndef STRATA_SSTABLE_TABLE_BUILDER_H_
#define STRATA_SSTABLE_TABLE_BUILDER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "common/file_system.h"
#include "sstable/block_builder.h"
#include "sstable/bloom.h"
#include "sstable/format.h"
#include "sstable/properties.h"
#include "strata/options.h"
#include "strata/slice.h"
#include "strata/status.h"

namespace strata::sstable {

struct TableBuilderOptions {
  // From the locality group's options (see LocalityGroupOptions).
  CompressionType compression = CompressionType::kNone;
  int compression_level = 3;
  // Target uncompressed size of a data block; a block is cut once it reaches
  // this, so a single large cell makes a larger block.
  uint32_t block_size = 16 << 10;
  // Entries between restart points in data blocks: larger saves space,
  // smaller makes seeks inside a block cheaper.
  int restart_interval = 16;
  // Bloom bits per key; 0 writes no filter block.
  int bloom_bits_per_key = 10;
  // The format version to write (format.h): 3, or 1 or 2 for tests and for
  // files that builds reading only those versions must open. Any other value
  // fails every Add and Finish with InvalidArgument.
  uint32_t format_version = kFormatVersion;

  // Recorded in the properties block.
  uint64_t table_id = 0;
  uint64_t tablet_id = 0;
  uint64_t locality_group_id = 0;
  uint64_t file_number = 0;
  // Seconds since the Unix epoch; 0 takes the current time.
  uint64_t creation_time = 0;

  // The block-shaping fields of a locality group's options.
  static TableBuilderOptions FromLocalityGroup(const LocalityGroupOptions& lg);
};

class TableBuilder {
 public:
  // Writes to `file`, which must stay open until Finish() or Abandon();
  // `file_name` is used in messages. The file should be empty.
  TableBuilder(const TableBuilderOptions& options, WritableFile* file, std::string file_name);
  ~TableBuilder();
  TableBuilder(const TableBuilder&) = delete;
  TableBuilder& operator=(const TableBuilder&) = delete;

  // The largest key + value a table takes: a block holding it alone stays
  // within kMaxBlockSize (format.h) with room for its framing, and for
  // compression that does not pay.
  static constexpr uint64_t kMaxEntryBytes = kMaxBlockSize - (uint64_t{1} << 20);

  // Adds a cell. InvalidArgument (and nothing added) if `key` is not a
  // well-formed cell key (common/cell_key.h), is not greater than the last
  // key added, or key and value together exceed kMaxEntryBytes;
  // FailedPrecondition after Finish/Abandon; an earlier I/O error is
  // returned again. A data block is cut early when this entry would take it
  // past kMaxEntryBytes.
  // REQUIRES: key > every key added before, in memcmp order.
  [[nodiscard]] Status Add(const Slice& key, const Slice& value);

  // Writes the last data block, the filter, index and properties blocks and
  // the footer, then flushes the file. Does not Sync or Close it: the caller
  // decides durability. REQUIRES: neither Finish nor Abandon called before.
  [[nodiscard]] Status Finish();

  // Gives up on the table; the caller deletes the file. Idempotent.
  void Abandon();

  // The first error seen, or OK.
  Status status() const { return status_; }
  uint64_t num_entries() const { return props_.num_cells; }
  // Bytes written to the file so far (the final size after Finish()).
  uint64_t FileSize() const { return offset_; }
  // Complete after Finish(); running totals before.
  const TableProperties& properties() const { return props_; }

 private:
  Status FlushDataBlock();
  // Encodes `raw` as a block of `kind` and appends it; sets *handle.
  Status WriteBlock(const Slice& raw, BlockKind kind, CompressionType compression,
                    BlockHandle* handle);
  void AddIndexEntry(const Slice& separator);

  const TableBuilderOptions options_;
  WritableFile* const file_;
  const std::string file_name_;
  void* zstd_cctx_ = nullptr;  // ZSTD_CCtx*, when compressing

  Status status_;
  bool closed_ = false;  // Finish or Abandon called
  uint64_t offset_ = 0;
  BlockBuilder data_block_;
  BlockBuilder index_block_;
  std::unique_ptr<FilterBlockBuilder> filter_;
  TableProperties props_;

  std::string last_key_;
  size_t last_row_len_ = 0;  // length of mc(row) in last_key_
  // A data block was just written; its index entry waits for the next key
  // so that the separator can be shortened against it.
  bool pending_index_entry_ = false;
  BlockHandle pending_handle_;
  std::string block_buf_;  // scratch for encoded blocks
};

// The shortest string s with start <= s < limit in memcmp order, or `start`
// itself when nothing shorter exists. REQUIRES: start < limit.
std::string ShortestSeparator(const Slice& start, const Slice& limit);
// A short string >= key.
std::string ShortSuccessor(const Slice& key);

// Lengths of the row prefix (mc(row)) and of the column prefix
// (mc(row) family mc(qualifier)) of a cell key; false if it is malformed.
bool CellKeyPrefixLengths(const Slice& key, size_t* row_len, size_t* column_len);

}  // namespace strata::sstable

#endif  // STRATA_SSTABLE_TABLE_BUILDER_H_
