// Bloom filters over the rows and columns of one SSTable, and the filter
// block that stores them (sstable/FORMAT.md, "Filter block").
//
// A table's filter block holds two independent bloom filters: one over the
// row keys (the mc(row) prefix of each cell key) and one over the columns
// (CellKeyColumn: mc(row) family mc(qualifier)). A probe that answers false
// proves the row or column has no cell in the table; true means "maybe".
//
// Each filter is a plain bit array probed k times with double hashing of
// one 64-bit XXH3 hash. With b bits per key the false-positive rate is about
// (1 - e^(-k/b))^k: 0.82% at b = 10, k = 7 (measured: see FORMAT.md).
//
// BloomFilterBuilder and FilterBlockBuilder are thread-compatible;
// FilterBlockReader is immutable after Parse and thread-safe.
#ifndef STRATA_SSTABLE_BLOOM_H_
#define STRATA_SSTABLE_BLOOM_H_

#include <cstdint>
#include <string>
#include <vector>

#include "strata/slice.h"
#include "strata/status.h"

namespace strata::sstable {

// DO NOT CHANGE: bloom bit positions derive from it; stored filters depend on it.
constexpr uint64_t kBloomHashSeed = 0x626c6f6f6d763031ull;  // "bloomv01"

// The hash a bloom filter stores for `key`.
uint64_t BloomHash(const Slice& key);

class BloomFilterBuilder {
 public:
  // REQUIRES: bits_per_key >= 1
  explicit BloomFilterBuilder(int bits_per_key);

  // Adds a key by its BloomHash. Duplicates are harmless but cost space.
  void AddHash(uint64_t h) { hashes_.push_back(h); }
  void AddKey(const Slice& key) { AddHash(BloomHash(key)); }
  size_t num_keys() const { return hashes_.size(); }

  // Appends the filter (bits, then the probe count) to *dst and forgets the keys.
  void Finish(std::string* dst);

 private:
  const int bits_per_key_;
  std::vector<uint64_t> hashes_;
};

// True if `key` may have been added to the filter stored in `filter`. A
// malformed filter answers true (never a false negative).
bool BloomMayMatch(const Slice& filter, uint64_t hash);

// Collects the rows and columns of the cell keys added in order.
class FilterBlockBuilder {
 public:
  // REQUIRES: bits_per_key >= 1
  explicit FilterBlockBuilder(int bits_per_key);

  // Adds a row key (mc(row)) or a column key (mc(row) family mc(qualifier)).
  void AddRow(const Slice& row_prefix) { rows_.AddKey(row_prefix); }
  void AddColumn(const Slice& column_prefix) { columns_.AddKey(column_prefix); }
  size_t num_rows() const { return rows_.num_keys(); }
  size_t num_columns() const { return columns_.num_keys(); }

  // The contents of the filter block.
  std::string Finish();

 private:
  BloomFilterBuilder rows_;
  BloomFilterBuilder columns_;
};

class FilterBlockReader {
 public:
  // Takes the contents of a filter block; Corruption if the layout is bad
  // (the message does not name the file; callers add it).
  static Result<FilterBlockReader> Parse(std::string contents);
  // Intentionally copyable (cheap to move).

  // Take encoded prefixes: mc(row) and mc(row) family mc(qualifier).
  bool RowMayMatch(const Slice& row_prefix) const;
  bool ColumnMayMatch(const Slice& column_prefix) const;

  size_t row_filter_size() const { return row_size_; }
  size_t column_filter_size() const { return contents_.size() - 4 - row_size_; }
  int row_probes() const;
  int column_probes() const;

 private:
  FilterBlockReader(std::string contents, size_t row_size)
      : contents_(std::move(contents)), row_size_(row_size) {}
  Slice row_filter() const { return Slice(contents_.data() + 4, row_size_); }
  Slice column_filter() const {
    return Slice(contents_.data() + 4 + row_size_, contents_.size() - 4 - row_size_);
  }

  std::string contents_;
  size_t row_size_;
};

}  // namespace strata::sstable

#endif  // STRATA_SSTABLE_BLOOM_H_
