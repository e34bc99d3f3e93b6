// Block decoding; see sstable/FORMAT.md, "Key/value blocks".
#include "sstable/block.h"

#include <cstring>

#include "common/coding.h"
#include "sstable/cell_key_tail.h"

namespace strata::sstable {

namespace {

// Decodes an entry's three varint32 lengths at `p`; nullptr if malformed.
// Block entries almost always have three one-byte lengths.
inline const char* DecodeEntryHeader(const char* p, const char* limit, uint32_t* shared,
                                     uint32_t* non_shared, uint32_t* value_len) {
  if (limit - p >= 3) {
    const auto a = static_cast<uint8_t>(p[0]);
    const auto b = static_cast<uint8_t>(p[1]);
    const auto c = static_cast<uint8_t>(p[2]);
    if (((a | b | c) & 0x80) == 0) {
      *shared = a;
      *non_shared = b;
      *value_len = c;
      return p + 3;
    }
  }
  p = GetVarint32Ptr(p, limit, shared);
  if (p != nullptr) p = GetVarint32Ptr(p, limit, non_shared);
  if (p != nullptr) p = GetVarint32Ptr(p, limit, value_len);
  return p;
}

}  // namespace

Result<std::unique_ptr<Block>> Block::Parse(std::string contents, KeyEncoding encoding) {
  auto data = std::make_unique_for_overwrite<char[]>(contents.size());
  std::memcpy(data.get(), contents.data(), contents.size());
  return Parse(std::move(data), contents.size(), encoding);
}

void Block::Release(std::unique_ptr<Block> block) {
  if (block == nullptr) return;
  ReleaseBlockMemory(BlockMemory{std::move(block->data_), block->capacity_});
}

Result<std::unique_ptr<Block>> Block::Parse(std::unique_ptr<char[]> data, size_t size,
                                            KeyEncoding encoding) {
  return Parse(BlockMemory{std::move(data), size}, size, encoding);
}

Result<std::unique_ptr<Block>> Block::Parse(BlockMemory memory, size_t size, KeyEncoding encoding) {
  if (size < 4) {
    return Status::Corruption("block too short (" + std::to_string(size) + " bytes)");
  }
  const char* contents = memory.data.get();
  const uint32_t num_restarts = DecodeFixed32(contents + size - 4);
  const uint64_t max_restarts = (size - 4) / 4;
  if (num_restarts == 0 || num_restarts > max_restarts) {
    return Status::Corruption("bad restart count " + std::to_string(num_restarts));
  }
  if (size - 4 - uint64_t{num_restarts} * 4 > UINT32_MAX) {
    return Status::Corruption("block too large (" + std::to_string(size) + " bytes)");
  }
  const uint32_t restart_offset = static_cast<uint32_t>(size - 4 - uint64_t{num_restarts} * 4);
  uint32_t prev = 0;
  for (uint32_t i = 0; i < num_restarts; i++) {
    const uint32_t r = DecodeFixed32(contents + restart_offset + 4 * i);
    if ((i == 0 && r != 0) || (i > 0 && r <= prev) || r > restart_offset ||
        (i > 0 && r == restart_offset)) {
      return Status::Corruption("bad restart point " + std::to_string(i) + " = " +
                                std::to_string(r));
    }
    prev = r;
  }
  return std::unique_ptr<Block>(
      new Block(std::move(memory), size, restart_offset, num_restarts, encoding));
}

std::unique_ptr<Block::Iter> Block::NewIterator() const { return std::make_unique<Iter>(this); }

void Block::Iter::KeyBuffer::Grow(size_t keep, size_t need) {
  size_t cap = capacity_ * 2;
  while (cap < need) cap *= 2;
  auto bigger = std::make_unique_for_overwrite<char[]>(cap);
  std::memcpy(bigger.get(), data(), keep);
  heap_ = std::move(bigger);
  capacity_ = cap;
}

Block::Iter::Iter(const Block* block)
    : data_(block->data_.get()),
      data_end_(block->data_.get() + block->size_),
      restart_offset_(block->restart_offset_),
      num_restarts_(block->num_restarts_),
      encoding_(block->encoding_) {}

void Block::Iter::Corrupt(uint32_t offset, const char* what) {
  valid_ = false;
  if (status_.ok()) {
    status_ = Status::Corruption(std::string(what) + " at offset " + std::to_string(offset) +
                                 " within the block");
  }
}

bool Block::Iter::ParseEntryAt(uint32_t p) {
  const char* limit = data_ + restart_offset_;
  const char* q = data_ + p;
  uint32_t shared, non_shared, value_len;
  q = DecodeEntryHeader(q, limit, &shared, &non_shared, &value_len);
  if (q == nullptr || shared > key_.size() ||
      static_cast<uint64_t>(limit - q) < uint64_t{non_shared} + value_len) {
    Corrupt(p, "bad entry");
    return false;
  }
  if (encoding_ != KeyEncoding::kWholeKey) {
    return ParseCellKeyTailEntry(p, q, shared, non_shared, value_len);
  }
  key_.Assemble(shared, q, non_shared);
  value_ = Slice(q + non_shared, value_len);
  current_ = p;
  next_ = static_cast<uint32_t>(q + non_shared + value_len - data_);
  valid_ = true;
  return true;
}

bool Block::Iter::ParseCellKeyTailEntry(uint32_t p, const char* q, uint32_t shared,
                                        uint32_t non_shared, uint32_t value_len) {
  const char* limit = data_ + restart_offset_;
  if (p == next_restart_) {
    // A restart entry: the whole key, as in a version-1 block.
    if (shared != 0 || non_shared < 16) {
      Corrupt(p, "bad restart entry");
      return false;
    }
    key_.Assemble(0, q, non_shared);
    timestamp_ = CellKeyTimestamp(key());
    tag_ = CellKeyTag(key());
    if ((tag_ & 0xff) < 1 || (tag_ & 0xff) > kMaxCellType) {
      Corrupt(p, "bad cell type in restart entry");
      return false;
    }
    q += non_shared;
    next_restart_index_++;
    next_restart_ =
        next_restart_index_ < num_restarts_ ? RestartPoint(next_restart_index_) : restart_offset_;
  } else {
    if (p > next_restart_) {
      Corrupt(p, "entry overlaps restart point");
      return false;
    }
    const char* middle = q;
    q += non_shared;
    uint32_t suffix = 0;
    if (encoding_ == KeyEncoding::kCellKeyTailSuffix) {
      // The shared prefix and suffix come from the previous column (the key
      // without its 16-byte tail) and do not overlap there; an entry that
      // shares the whole previous column stores no suffix length.
      const size_t previous_column = key_.size() - 16;
      if (shared < previous_column) q = GetVarint32Ptr(q, limit, &suffix);
      if (q == nullptr || uint64_t{shared} + suffix > previous_column) {
        Corrupt(p, "bad shared column bytes in cell key tail");
        return false;
      }
    }
    uint64_t ts_delta, seq_type, tag;
    q = GetVarint64Ptr(q, limit, &ts_delta);
    if (q != nullptr) q = GetVarint64Ptr(q, limit, &seq_type);
    if (q == nullptr || static_cast<uint64_t>(limit - q) < value_len) {
      Corrupt(p, "bad cell key tail");
      return false;
    }
    if (!DecodeSequenceAndType(seq_type, tag_, &tag)) {
      Corrupt(p, "bad sequence or cell type in cell key tail");
      return false;
    }
    timestamp_ = DecodeTimestampDelta(ts_delta, timestamp_);
    tag_ = tag;
    key_.AssembleCellKey(shared, middle, non_shared, suffix, data_end_, timestamp_, tag_);
  }
  value_ = Slice(q, value_len);
  current_ = p;
  next_ = static_cast<uint32_t>(q + value_len - data_);
  valid_ = true;
  return true;
}

void Block::Iter::SeekToRestart(uint32_t index) {
  key_.clear();
  valid_ = false;
  next_ = RestartPoint(index);
  next_restart_index_ = index;
  next_restart_ = next_;
}

bool Block::Iter::RestartKey(uint32_t index, Slice* key) {
  const uint32_t p = RestartPoint(index);
  const char* limit = data_ + restart_offset_;
  uint32_t shared, non_shared, value_len;
  const char* q = DecodeEntryHeader(data_ + p, limit, &shared, &non_shared, &value_len);
  if (q == nullptr || shared != 0 || static_cast<uint64_t>(limit - q) < non_shared) {
    Corrupt(p, "bad restart entry");
    return false;
  }
  *key = Slice(q, non_shared);
  return true;
}

void Block::Iter::SeekToFirst() {
  if (!status_.ok()) return;
  SeekToRestart(0);
  if (next_ < restart_offset_) ParseEntryAt(next_);
}

void Block::Iter::SeekToLast() {
  if (!status_.ok()) return;
  SeekToRestart(num_restarts_ - 1);
  while (next_ < restart_offset_) {
    if (!ParseEntryAt(next_)) return;
  }
}

void Block::Iter::SeekToRestartPoint(uint32_t index) {
  if (!status_.ok()) return;
  if (index >= num_restarts_) {
    key_.clear();
    valid_ = false;
    next_ = restart_offset_;
    next_restart_index_ = num_restarts_;
    next_restart_ = restart_offset_;
    return;
  }
  SeekToRestart(index);
  if (next_ < restart_offset_) ParseEntryAt(next_);
}

void Block::Iter::Next() {
  if (!status_.ok()) return;
  if (next_ >= restart_offset_) {
    valid_ = false;
    return;
  }
  ParseEntryAt(next_);
}

bool Block::Iter::LastRestartBefore(const Slice& target, uint32_t* index) {
  uint32_t left = 0, right = num_restarts_ - 1;
  while (left < right) {
    const uint32_t mid = left + (right - left + 1) / 2;
    Slice mid_key;
    if (!RestartKey(mid, &mid_key)) return false;
    if (mid_key.compare(target) < 0) {
      left = mid;
    } else {
      right = mid - 1;
    }
  }
  *index = left;
  return true;
}

void Block::Iter::Seek(const Slice& target) {
  if (!status_.ok()) return;
  uint32_t left;
  if (!LastRestartBefore(target, &left)) return;
  SeekToRestart(left);
  // The answer lies before the next restart point: ask for those bytes at
  // once, rather than one cache line per entry as the scan reaches them.
  const uint32_t scan_end = left + 1 < num_restarts_ ? RestartPoint(left + 1) : restart_offset_;
  for (uint32_t p = next_; p < scan_end; p += 64) __builtin_prefetch(data_ + p);
  while (next_ < restart_offset_) {
    if (!ParseEntryAt(next_)) return;
    if (key().compare(target) >= 0) return;
  }
  valid_ = false;
}

void Block::Iter::SeekBefore(const Slice& target) {
  if (!status_.ok()) return;
  uint32_t restart;
  if (!LastRestartBefore(target, &restart)) return;
  // Count the entries from that restart below the target, then walk to the
  // last of them again: a tail entry's key needs the ones before it.
  SeekToRestart(restart);
  uint32_t below = 0;
  while (next_ < restart_offset_) {
    if (!ParseEntryAt(next_)) return;
    if (key().compare(target) >= 0) break;
    below++;
  }
  SeekToRestart(restart);
  for (uint32_t i = 0; i < below; i++) {
    if (!ParseEntryAt(next_)) return;
  }
}

}  // namespace strata::sstable
