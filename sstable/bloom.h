// Bloom filters over the rows and columns of one SSTable, and the filter
// block that stores them (sstable/FORMAT.md, "Filter block").
//
// A table's filter block holds two independent bloom filters: one over the
// row keys (the mc(row) prefix of each cell key) and one over the columns
// (CellKeyColumn: mc(row) family mc(qualifier)). A probe that answers false
// proves the row or column has no cell in the table; true means "maybe".
//
// Version-1 files use flat blooms: one bit array probed k times with double
// hashing of one 64-bit XXH3 hash. With b bits per key the false-positive
// rate is about (1 - e^(-k/b))^k: 0.82% at b = 10, k = 7. Files of version 2
// and later use blocked blooms: the hash picks one 64-byte line and all k probes stay
// inside it, so a probe touches one cache line instead of up to k, for a
// slightly higher rate at the same size (measured: see FORMAT.md). From
// version 2 on, a table whose every row has one column stores no column filter;
// column probes then ask the row filter.
//
// BloomFilterBuilder and FilterBlockBuilder are thread-compatible;
// FilterBlockReader is immutable after Parse and thread-safe.
#ifndef STRATA_SSTABLE_BLOOM_H_
#define STRATA_SSTABLE_BLOOM_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "strata/slice.h"
#include "strata/status.h"

namespace strata::sstable {

// DO NOT CHANGE: bloom bit positions derive from it; stored filters depend on it.
constexpr uint64_t kBloomHashSeed = 0x626c6f6f6d763031ull;  // "bloomv01"

// The hash a bloom filter stores for `key`.
uint64_t BloomHash(const Slice& key);

// How a bloom lays out its bits; implied by the file's format version.
enum class BloomLayout : uint8_t {
  kFlat,     // version 1: one bit array
  kBlocked,  // version 2 and later: 64-byte lines, every probe of a key in one line
};

// The bits of a blocked bloom come in lines of this many bytes.
constexpr size_t kBloomLineBytes = 64;

// The probe count a bloom of `bits_per_key` uses.
int BloomProbes(int bits_per_key, BloomLayout layout);

class BloomFilterBuilder {
 public:
  // REQUIRES: bits_per_key >= 1
  explicit BloomFilterBuilder(int bits_per_key, BloomLayout layout = BloomLayout::kFlat);

  // Adds a key by its BloomHash. Duplicates are harmless but cost space.
  void AddHash(uint64_t h) { hashes_.push_back(h); }
  void AddKey(const Slice& key) { AddHash(BloomHash(key)); }
  size_t num_keys() const { return hashes_.size(); }

  // Appends the filter (bits, then the probe count) to *dst and forgets the keys.
  void Finish(std::string* dst);

 private:
  const int bits_per_key_;
  const BloomLayout layout_;
  std::vector<uint64_t> hashes_;
};

// True if `key` may have been added to the flat filter stored in `filter`.
// A malformed filter answers true (never a false negative).
bool BloomMayMatch(const Slice& filter, uint64_t hash);
// The same for a blocked filter. Fastest when filter.data() is 64-byte aligned.
bool BlockedBloomMayMatch(const Slice& filter, uint64_t hash);

// Collects the rows and columns of the cell keys added in order.
class FilterBlockBuilder {
 public:
  // Blooms of `layout`; with `omit_single_columns` (version 2 on), no column
  // filter when every row turns out to have exactly one column.
  // REQUIRES: bits_per_key >= 1
  FilterBlockBuilder(int bits_per_key, BloomLayout layout = BloomLayout::kFlat,
                     bool omit_single_columns = false);

  // Adds a row key (mc(row)) or a column key (mc(row) family mc(qualifier)).
  void AddRow(const Slice& row_prefix) { rows_.AddKey(row_prefix); }
  void AddColumn(const Slice& column_prefix) { columns_.AddKey(column_prefix); }
  size_t num_rows() const { return rows_.num_keys(); }
  size_t num_columns() const { return columns_.num_keys(); }

  // The contents of the filter block.
  std::string Finish();

 private:
  const bool omit_single_columns_;
  BloomFilterBuilder rows_;
  BloomFilterBuilder columns_;
};

class FilterBlockReader {
 public:
  // Takes the contents of a filter block of blooms of `layout`; Corruption
  // if the layout is bad (the message does not name the file; callers add it).
  static Result<FilterBlockReader> Parse(std::string contents,
                                         BloomLayout layout = BloomLayout::kFlat);
  // Intentionally copyable (cheap to move).

  // Take encoded prefixes: mc(row) and mc(row) family mc(qualifier). Without
  // a column filter, ColumnMayMatch asks the row filter for the column's row.
  bool RowMayMatch(const Slice& row_prefix) const;
  bool ColumnMayMatch(const Slice& column_prefix) const;

  BloomLayout layout() const { return layout_; }
  // Sizes include the probe-count byte; a missing column filter has size 0.
  size_t row_filter_size() const { return row_size_; }
  size_t column_filter_size() const { return column_size_; }
  bool has_column_filter() const { return column_filter_size() > 0; }
  int row_probes() const;
  // REQUIRES: has_column_filter()
  int column_probes() const;

 private:
  FilterBlockReader(const std::string& contents, size_t row_size, BloomLayout layout);
  bool MayMatch(const Slice& filter, const Slice& key) const;

  size_t row_size_;
  size_t column_size_;
  BloomLayout layout_;
  // The two filters (bits and probe count), copied out of the block into
  // 64-byte aligned memory (each filter starts a line), so that a blocked
  // probe touches exactly one cache line. Shared by copies of the reader.
  std::shared_ptr<const char> aligned_;
  Slice row_filter_;
  Slice column_filter_;
};

}  // namespace strata::sstable

#endif  // STRATA_SSTABLE_BLOOM_H_
