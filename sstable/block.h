// Block: one decoded key/value block (data or index) held in memory, and its
// iterator. The layout is in sstable/FORMAT.md, "Key/value blocks" (both key
// encodings: whole keys, and the cell-key tail of version-2 data blocks).
//
// A Block is immutable after Parse() and thread-safe; any number of
// iterators may read it at once. Each iterator is thread-compatible and must
// not outlive its Block. Invariant: a parsed Block's restart array lies
// inside its contents and every restart offset points inside the entry area;
// entries themselves are checked as they are decoded, and a bad one is
// reported through the iterator's status() (Corruption naming the offset of
// the entry inside the block). Whatever the encoding, key() hands out whole
// keys and every restart entry stores its whole key, so Seek compares the
// stored bytes in place.
#ifndef STRATA_SSTABLE_BLOCK_H_
#define STRATA_SSTABLE_BLOCK_H_

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "common/coding.h"
#include "common/iterator.h"
#include "sstable/format.h"
#include "strata/slice.h"
#include "strata/status.h"

namespace strata::sstable {

// How the entries of a block store their keys (FORMAT.md, "Key/value blocks").
enum class KeyEncoding : uint8_t {
  kWholeKey,           // shared prefix + suffix: index blocks, version-1 data blocks
  kCellKeyTail,        // version-2 data blocks: between restarts, the column bytes as
                       // above plus timestamp and sequence as deltas from the previous key
  kCellKeyTailSuffix,  // version-3 data blocks: kCellKeyTail, and the column
                       // also takes its last bytes from the previous column's
};

// The key encoding of the data blocks of a table of `format_version`
// (index blocks always use kWholeKey).
// REQUIRES: IsKnownFormatVersion(format_version)
inline KeyEncoding DataKeyEncoding(uint32_t format_version) {
  switch (format_version) {
    case kFormatVersion1:
      return KeyEncoding::kWholeKey;
    case kFormatVersion2:
      return KeyEncoding::kCellKeyTail;
    default:
      return KeyEncoding::kCellKeyTailSuffix;
  }
}

class Block {
 public:
  // Takes the uncompressed contents and checks the restart array. On error
  // the Corruption message describes the damage without naming the file;
  // callers add that.
  static Result<std::unique_ptr<Block>> Parse(std::string contents,
                                              KeyEncoding encoding = KeyEncoding::kWholeKey);
  // The same, for `size` bytes at `data` (a buffer the block takes over).
  static Result<std::unique_ptr<Block>> Parse(std::unique_ptr<char[]> data, size_t size,
                                              KeyEncoding encoding = KeyEncoding::kWholeKey);
  // The same, for the first `size` bytes of `memory`.
  static Result<std::unique_ptr<Block>> Parse(BlockMemory memory, size_t size,
                                              KeyEncoding encoding = KeyEncoding::kWholeKey);
  // Destroys `block`, giving its buffer to this thread's pool.
  static void Release(std::unique_ptr<Block> block);

  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;

  // The length of the contents.
  size_t size() const { return size_; }
  // The bytes this block holds in memory (its buffer and itself), for
  // cache charging.
  size_t memory_usage() const { return capacity_ + sizeof(Block); }
  uint32_t num_restarts() const { return num_restarts_; }
  KeyEncoding encoding() const { return encoding_; }
  Slice contents() const { return Slice(data_.get(), size_); }

  // An iterator over the entries in key order; it also offers SeekToLast.
  // The Block must outlive it.
  class Iter;
  std::unique_ptr<Iter> NewIterator() const;

 private:
  Block(BlockMemory memory, size_t size, uint32_t restart_offset, uint32_t num_restarts,
        KeyEncoding encoding)
      : data_(std::move(memory.data)),
        capacity_(memory.capacity),
        size_(size),
        restart_offset_(restart_offset),
        num_restarts_(num_restarts),
        encoding_(encoding) {}

  std::unique_ptr<char[]> data_;  // moved out only by Release
  const size_t capacity_;
  const size_t size_;
  const uint32_t restart_offset_;  // where the restart array starts (= end of entries)
  const uint32_t num_restarts_;
  const KeyEncoding encoding_;
};

class Block::Iter final : public InternalIterator {
 public:
  explicit Iter(const Block* block);
  Iter(const Iter&) = delete;
  Iter& operator=(const Iter&) = delete;

  bool Valid() const override { return valid_; }
  void SeekToFirst() override;
  void SeekToLast();
  void Seek(const Slice& target) override;
  // Unlike other iterators', a block iterator may go on with Next() after it.
  void SeekBefore(const Slice& target) override;
  // Positions at the entry of restart point `index` (every entry, when the
  // restart interval is 1); not Valid() when index == num_restarts().
  // REQUIRES: index <= num_restarts()
  void SeekToRestartPoint(uint32_t index);
  void Next() override;
  // REQUIRES: Valid(). key() is valid until the iterator moves; value()
  // points into the Block and is valid as long as it lives.
  Slice key() const override { return Slice(key_.data(), key_.size()); }
  Slice value() const override { return value_; }
  Status status() const override { return status_; }

 private:
  // The current key, assembled from the previous key's shared prefix and the
  // entry's suffix. Keys up to kInline bytes live inside the iterator, so
  // iterating a block of ordinary keys allocates nothing.
  class KeyBuffer {
   public:
    KeyBuffer() = default;
    KeyBuffer(const KeyBuffer&) = delete;
    KeyBuffer& operator=(const KeyBuffer&) = delete;

    const char* data() const { return heap_ ? heap_.get() : inline_; }
    size_t size() const { return size_; }
    void clear() { size_ = 0; }
    // Keeps the first `shared` bytes and appends `n` bytes at `suffix`.
    // REQUIRES: shared <= size()
    void Assemble(size_t shared, const char* suffix, size_t n) {
      const size_t need = shared + n;
      if (need > capacity_) Grow(shared, need);
      std::memcpy((heap_ ? heap_.get() : inline_) + shared, suffix, n);
      size_ = need;
    }
    // Builds a cell key: the first `shared` bytes, `n` bytes at `middle`,
    // the last `suffix` bytes of the current key's column (all but its last
    // 16 bytes), then the 16-byte tail ~timestamp ~tag. `middle_end` is
    // where the bytes readable at `middle` end.
    // REQUIRES: shared + suffix <= size() - 16 when suffix > 0, else
    // shared <= size(); middle + n <= middle_end
    void AssembleCellKey(size_t shared, const char* middle, size_t n, size_t suffix,
                         const char* middle_end, uint64_t timestamp, uint64_t tag) {
      const size_t need = shared + n + suffix + 16;
      if (need + 16 > capacity_) Grow(size_, need + 16);
      char* dst = heap_ ? heap_.get() : inline_;
      if (n <= 16 && suffix <= 16 && middle_end - middle >= 16) {
        // The usual entry: a few middle bytes and a short suffix, copied as
        // 16-byte words. The suffix is loaded before anything is stored
        // (it may overlap where the middle goes); each store may write
        // bytes past its part, which the next part (last, the tail)
        // overwrites, all inside need + 16.
        char moved[16];
        std::memcpy(moved, dst + size_ - 16 - suffix, 16);
        std::memcpy(dst + shared, middle, 16);
        std::memcpy(dst + shared + n, moved, 16);
      } else {
        if (suffix > 0) std::memmove(dst + shared + n, dst + size_ - 16 - suffix, suffix);
        std::memcpy(dst + shared, middle, n);
      }
      dst += shared + n + suffix;
      EncodeBigEndian64(dst, ~timestamp);
      EncodeBigEndian64(dst + 8, ~tag);
      size_ = need;
    }

   private:
    // Moves to a heap buffer of at least `need` bytes, keeping the first `keep`.
    void Grow(size_t keep, size_t need);

    static constexpr size_t kInline = 128;
    char inline_[kInline];
    std::unique_ptr<char[]> heap_;
    size_t capacity_ = kInline;
    size_t size_ = 0;
  };

  // Decodes the entry at offset `p` into key_/value_; false (and a sticky
  // Corruption) if it is malformed.
  bool ParseEntryAt(uint32_t p);
  // ParseEntryAt for the cell-key tail encodings, from the entry's header on.
  bool ParseCellKeyTailEntry(uint32_t p, const char* q, uint32_t shared, uint32_t non_shared,
                             uint32_t value_len);
  void SeekToRestart(uint32_t index);
  uint32_t RestartPoint(uint32_t index) const {
    return DecodeFixed32(data_ + restart_offset_ + 4 * index);
  }
  // Decodes the full key stored at restart `index` (it shares nothing).
  bool RestartKey(uint32_t index, Slice* key);
  // The last restart whose key is < target (0 when none is); false on
  // damage, with status_ set.
  bool LastRestartBefore(const Slice& target, uint32_t* index);
  void Corrupt(uint32_t offset, const char* what);

  const char* const data_;
  const char* const data_end_;  // the end of the block (its restart array included)
  const uint32_t restart_offset_;
  const uint32_t num_restarts_;
  const KeyEncoding encoding_;
  uint32_t current_ = 0;  // offset of the current entry
  uint32_t next_ = 0;     // offset of the entry after it
  bool valid_ = false;
  // Cell-key tail encodings: the next restart point not yet parsed (its index and
  // offset; the offset is restart_offset_ past the last), and the timestamp
  // and tag of key_, which the next entry's deltas apply to.
  uint32_t next_restart_index_ = 0;
  uint32_t next_restart_ = 0;
  uint64_t timestamp_ = 0;
  uint64_t tag_ = 0;
  KeyBuffer key_;
  Slice value_;
  Status status_;
};

}  // namespace strata::sstable

#endif  // STRATA_SSTABLE_BLOCK_H_
