// BlockBuilder: assembles one key/value block (data or index) in the layout
// of sstable/FORMAT.md: prefix-compressed entries with a restart point every
// `restart_interval` entries, then the restart offsets and their count. Keys
// are stored whole or, in version-2 data blocks, with the cell-key tail
// (KeyEncoding in block.h).
//
// Thread-compatible. Invariant: keys passed to Add() are strictly increasing
// in memcmp order since the last Reset() (the table builder checks this
// before calling); with a cell-key tail encoding they are well-formed cell
// keys.
#ifndef STRATA_SSTABLE_BLOCK_BUILDER_H_
#define STRATA_SSTABLE_BLOCK_BUILDER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sstable/block.h"
#include "strata/slice.h"

namespace strata::sstable {

class BlockBuilder {
 public:
  // REQUIRES: restart_interval >= 1
  explicit BlockBuilder(int restart_interval, KeyEncoding encoding = KeyEncoding::kWholeKey);
  BlockBuilder(const BlockBuilder&) = delete;
  BlockBuilder& operator=(const BlockBuilder&) = delete;

  // Starts a new, empty block.
  void Reset();
  // REQUIRES: Finish() not called since Reset(); key > every key added since
  // Reset(); value.size() < 2^32; with a cell-key tail encoding, key is a
  // well-formed cell key (common/cell_key.h).
  void Add(const Slice& key, const Slice& value);
  // Appends the restart array and returns the finished block, valid until
  // the next Reset().
  Slice Finish();

  // Bytes the block would have if finished now.
  size_t CurrentSizeEstimate() const;
  bool empty() const { return buffer_.empty(); }
  int num_entries() const { return num_entries_; }
  // The last key added, valid until the next Add/Reset.
  Slice last_key() const { return last_key_; }

 private:
  const int restart_interval_;
  const KeyEncoding encoding_;
  std::string buffer_;
  std::vector<uint32_t> restarts_;
  int counter_ = 0;  // entries since the last restart
  int num_entries_ = 0;
  bool finished_ = false;
  std::string last_key_;
};

}  // namespace strata::sstable

#endif  // STRATA_SSTABLE_BLOCK_BUILDER_H_
