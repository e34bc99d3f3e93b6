// Block layout: see sstable/FORMAT.md, "Key/value blocks".
#include "sstable/block_builder.h"

#include <algorithm>
#include <cassert>

#include "common/cell_key.h"
#include "common/coding.h"
#include "sstable/cell_key_tail.h"

namespace strata::sstable {

BlockBuilder::BlockBuilder(int restart_interval, KeyEncoding encoding)
    : restart_interval_(restart_interval), encoding_(encoding) {
  assert(restart_interval_ >= 1);
  Reset();
}

void BlockBuilder::Reset() {
  buffer_.clear();
  restarts_.clear();
  restarts_.push_back(0);
  counter_ = 0;
  num_entries_ = 0;
  finished_ = false;
  last_key_.clear();
}

size_t BlockBuilder::CurrentSizeEstimate() const {
  return buffer_.size() + restarts_.size() * 4 + 4;
}

void BlockBuilder::Add(const Slice& key, const Slice& value) {
  assert(!finished_);
  assert(num_entries_ == 0 || Slice(last_key_).compare(key) < 0);
  // Between restarts a cell-key tail entry shares and stores only the
  // column bytes; its timestamp and tag follow as deltas.
  const bool tail =
      encoding_ != KeyEncoding::kWholeKey && counter_ > 0 && counter_ < restart_interval_;
  assert(encoding_ == KeyEncoding::kWholeKey || key.size() >= 16);
  const size_t stored = tail ? key.size() - 16 : key.size();
  size_t shared = 0;
  // kCellKeyTailSuffix: the column's last `suffix` bytes equal the previous
  // column's last ones, and neither end overlaps the other in that column.
  size_t suffix = 0;
  if (counter_ < restart_interval_) {
    const size_t prev_len = encoding_ == KeyEncoding::kCellKeyTailSuffix && tail
                                ? last_key_.size() - 16
                                : last_key_.size();
    const size_t min_len = std::min(prev_len, stored);
    while (shared < min_len && last_key_[shared] == key[shared]) shared++;
    if (encoding_ == KeyEncoding::kCellKeyTailSuffix && tail) {
      const size_t max_suffix = std::min(prev_len, stored) - shared;
      while (suffix < max_suffix && last_key_[prev_len - 1 - suffix] == key[stored - 1 - suffix]) {
        suffix++;
      }
    }
  } else {
    restarts_.push_back(static_cast<uint32_t>(buffer_.size()));
    counter_ = 0;
  }
  const size_t non_shared = stored - shared - suffix;
  PutVarint32(&buffer_, static_cast<uint32_t>(shared));
  PutVarint32(&buffer_, static_cast<uint32_t>(non_shared));
  PutVarint32(&buffer_, static_cast<uint32_t>(value.size()));
  buffer_.append(key.data() + shared, non_shared);
  if (encoding_ == KeyEncoding::kCellKeyTailSuffix && tail && shared < last_key_.size() - 16) {
    PutVarint32(&buffer_, static_cast<uint32_t>(suffix));
  }
  if (tail) {
    PutVarint64(&buffer_, EncodeTimestampDelta(CellKeyTimestamp(key), CellKeyTimestamp(last_key_)));
    PutVarint64(&buffer_, EncodeSequenceAndType(CellKeyTag(key), CellKeyTag(last_key_)));
  }
  buffer_.append(value.data(), value.size());
  last_key_.resize(shared);
  last_key_.append(key.data() + shared, key.size() - shared);
  counter_++;
  num_entries_++;
}

Slice BlockBuilder::Finish() {
  for (uint32_t r : restarts_) PutFixed32(&buffer_, r);
  PutFixed32(&buffer_, static_cast<uint32_t>(restarts_.size()));
  finished_ = true;
  return buffer_;
}

}  // namespace strata::sstable
