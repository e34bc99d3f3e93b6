// MemTable: the in-memory, sorted buffer of recent writes to one locality
// group of a tablet. It maps encoded cell keys (common/cell_key.h) to values,
// keeps them in cell-key order (memcmp of the encoded keys: row, family,
// qualifier ascending, timestamp and sequence descending), and is read through
// InternalIterator until it is flushed to an SSTable and dropped.
//
// Thread safety: Add calls must be externally serialized (one writer at a
// time, e.g. under the tablet's write lock). Everything else but
// ApproximateDataSize() -- iterators, ApproximateMemoryUsage(), num_entries(),
// MayContainRow() -- may be used from any thread without a lock,
// concurrently with the writer.
//
// Invariants:
//   - Entries are never modified or removed; memory is released only when
//     the MemTable is destroyed. Slices returned by its iterators therefore
//     stay valid for the life of the MemTable, not just until the iterator
//     moves.
//   - Every cell key appears at most once (sequence numbers make keys unique).
//
// Entry layout: each entry is one contiguous run of arena bytes, which its
// skiplist node points to:
//
//   entry := key_length:varint32 key:byte[key_length]
//            value_length:varint32 value:byte[value_length]
//
// Example: the put of row "r1", family 1, qualifier "q", timestamp 5,
// sequence 7 with value "v1" has a 25-byte key and is stored as
//
//   19                                key length 25
//   72 31 00 01  00 01  71 00 01      mc("r1"), family 1, mc("q")
//   ff ff ff ff ff ff ff fa           ~timestamp
//   ff ff ff ff ff ff f8 fe           ~(7 << 8 | kPut)
//   02 76 31                          value length 2, "v1"
//
// The skiplist orders entries by memcmp of their key bytes alone.
//
// Row filter: a memtable made with row_filter_bytes > 0 keeps, once it holds
// RowFilterStart() bytes, a blocked bloom filter over the rows of its entries
// (their mc(row) prefixes): a point read of a row it does not hold then costs
// one cache line instead of a skiplist search. The filter is made only once
// the memtable's entries take 8 times its size (and at least 64 KiB), so it
// never costs more than an eighth of them, and a small or idle memtable, whose
// search is cheaper anyway, costs no filter memory. Until then the memtable
// keeps the 8-byte hash of each row it is given, and makes the filter from
// those: an Add that makes it costs a pass over an array, not a walk of the
// skiplist. Each row sets 6 bits in one 64-byte block; with 8 or more bits
// per row, about 2% false positives.
#ifndef STRATA_MEMTABLE_MEMTABLE_H_
#define STRATA_MEMTABLE_MEMTABLE_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/arena.h"
#include "common/cell_key.h"
#include "common/iterator.h"
#include "memtable/skiplist.h"
#include "strata/slice.h"

namespace strata::memtable {

class MemTable {
 public:
  // A memtable holds at least this many bytes of entries before its row
  // filter is made, and 8 times the filter's size.
  static constexpr size_t kRowFilterMinStart = 64 << 10;
  static constexpr size_t kRowFilterStartRatio = 8;

  // `row_filter_bytes`: the size of the row filter, rounded up to 64 bytes;
  // 0 for none.
  explicit MemTable(size_t row_filter_bytes = 0);
  MemTable(const MemTable&) = delete;
  MemTable& operator=(const MemTable&) = delete;

  // Adds one entry. `cell_key` is an encoded cell key (common/cell_key.h) not
  // yet in the table; key and value are each shorter than 4 GiB.
  // REQUIRES: external serialization with other Add calls. Readers need no lock.
  void Add(const Slice& cell_key, const Slice& value);
  // Encodes the key and adds it. REQUIRES: as above.
  void Add(SequenceNumber seq, CellType type, const Slice& row, uint16_t family,
           const Slice& qualifier, uint64_t timestamp, const Slice& value);

  // Bytes of memory held (arena + index + row filter), readable from any
  // thread. The skiplist index lives in the arena; the arena's part grows in
  // arena-block steps and never shrinks. Before the row filter is made, the
  // row hashes kept for it count instead (8 bytes per row added).
  size_t ApproximateMemoryUsage() const;
  // Bytes of entries and index allocated so far: what decides when the
  // memtable is full (unlike ApproximateMemoryUsage, it does not start at a
  // whole arena block). REQUIRES: external serialization with Add.
  size_t ApproximateDataSize() const;
  // Entries added so far; any thread. An iterator created after this returned
  // n sees at least those n entries.
  uint64_t num_entries() const;

  // False only when no entry of the row whose cell keys start with
  // `row_prefix` (AppendRowPrefix) is in the memtable: true when there is no
  // filter (yet). Entries count from the same point as in num_entries(): a
  // caller that learned of an entry (its count, or its sequence number
  // published after the Add) is told true for its row. Any thread.
  bool MayContainRow(const Slice& row_prefix) const;
  // Bytes of the row filter, once made (counted in ApproximateMemoryUsage).
  size_t row_filter_bytes() const;
  // Bytes of entries (ApproximateDataSize) at which the row filter is made.
  size_t RowFilterStart() const {
    return std::max(kRowFilterMinStart, filter_words_ * 8 * kRowFilterStartRatio);
  }

  // An iterator over (cell key, value) in cell-key (memcmp) order. The
  // memtable must outlive it. Entries added after creation may or may not be
  // seen; never a half-added one. status() is always OK.
  std::unique_ptr<InternalIterator> NewIterator() const;

 private:
  class Iterator;

  // Orders entries (pointers to the layout above) by memcmp of their keys.
  struct EntryComparator {
    int operator()(const char* a, const char* b) const;
  };
  using Table = SkipList<const char*, EntryComparator>;

  // Adds the row of `cell_key` to the filter, or to pending_rows_ until the
  // filter is due and made from them. REQUIRES: external serialization with
  // Add.
  void AddToRowFilter(const Slice& cell_key);

  Arena arena_;
  Table table_;
  // The row filter: 64-byte blocks of 8 words; filter_ is published (release)
  // once it holds every entry added before, and then gets each new entry's
  // row before the entry is linked.
  const size_t filter_words_;
  std::unique_ptr<std::atomic<uint64_t>[]> filter_storage_;
  std::atomic<std::atomic<uint64_t>*> filter_{nullptr};
  // Written only by the (serialized) writer after an entry is linked; see
  // num_entries() for the ordering.
  std::atomic<uint64_t> num_entries_{0};
  // Writer-only: the row hashes of the entries added before the filter is
  // made, so that making it does not walk the skiplist (a cache miss per
  // entry, tens of thousands of them, on the write path); pending_bytes_ is
  // its capacity in bytes, for ApproximateMemoryUsage.
  std::vector<uint64_t> pending_rows_;
  std::atomic<size_t> pending_bytes_{0};
  // Writer-only buffer for encoding keys in the second Add; reused so that a
  // steady stream of Adds does not allocate.
  std::string key_scratch_;
};

}  // namespace strata::memtable

#endif  // STRATA_MEMTABLE_MEMTABLE_H_
