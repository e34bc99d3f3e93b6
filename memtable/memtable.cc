#include "memtable/memtable.h"

#include <cassert>
#include <cstring>

#include "common/coding.h"
#include "common/hash.h"

namespace strata::memtable {

namespace {

constexpr uint64_t kRowFilterSeed = 0x6d656d726f777331ull;  // "memrows1"
constexpr int kRowFilterProbes = 6;
constexpr size_t kWordsPerBlock = 8;  // 512 bits, one cache line

// The filter block of a row's hash and its probes: 6 bit positions of 9
// bits each, from a second mix of the hash.
struct RowProbe {
  size_t block;
  uint64_t bits;
  RowProbe(const Slice& row_prefix, size_t blocks) : RowProbe(RowHash(row_prefix), blocks) {}
  RowProbe(uint64_t row_hash, size_t blocks)
      : block(static_cast<size_t>(((row_hash >> 32) * blocks) >> 32)),
        bits(row_hash * 0x9e3779b97f4a7c15ull) {}
  static uint64_t RowHash(const Slice& row_prefix) { return Hash64(row_prefix, kRowFilterSeed); }
  // Word (within the block) and mask of probe i.
  size_t word(int i) const { return ((bits >> (9 * i)) & 511) / 64; }
  uint64_t mask(int i) const { return uint64_t{1} << (((bits >> (9 * i)) & 511) % 64); }
};

// The mc(row) prefix of an encoded cell key. REQUIRES: a well-formed key.
inline Slice RowPrefixOf(const Slice& cell_key) {
  Slice rest = cell_key;
  const bool ok = SkipMemcomparable(&rest);
  assert(ok);
  (void)ok;
  return Slice(cell_key.data(), cell_key.size() - rest.size());
}

// Reads the varint32-prefixed byte string at `p`. REQUIRES: `p` points to a
// well-formed length prefix, as every entry written by Add has.
inline Slice DecodeLengthPrefixed(const char* p) {
  uint32_t len = static_cast<uint8_t>(*p);
  if (len < 0x80) {
    p++;  // one-byte length: every key and most values
  } else {
    p = GetVarint32Ptr(p, p + kMaxVarint32Length, &len);
    assert(p != nullptr);
  }
  return Slice(p, len);
}

}  // namespace

int MemTable::EntryComparator::operator()(const char* a, const char* b) const {
  return DecodeLengthPrefixed(a).compare(DecodeLengthPrefixed(b));
}

// Walks the skiplist; key() and value() point into the arena.
class MemTable::Iterator final : public InternalIterator {
 public:
  explicit Iterator(const Table* table) : iter_(table) {}

  bool Valid() const override { return iter_.Valid(); }
  void SeekToFirst() override { iter_.SeekToFirst(); }
  void Seek(const Slice& target) override {
    char buf[128];
    iter_.Seek(AsEntry(target, buf));
  }
  void SeekBefore(const Slice& target) override {
    char buf[128];
    iter_.SeekBefore(AsEntry(target, buf));
  }
  void Next() override { iter_.Next(); }
  Slice key() const override { return DecodeLengthPrefixed(iter_.key()); }
  Slice value() const override {
    Slice k = key();
    return DecodeLengthPrefixed(k.data() + k.size());
  }
  Status status() const override { return Status::OK(); }

 private:
  // The skiplist compares entries, so a target gets an entry's length
  // prefix: in `buf` for ordinary keys, else in a buffer that keeps its
  // capacity across seeks.
  const char* AsEntry(const Slice& target, char (&buf)[128]) {
    assert(target.size() <= UINT32_MAX);
    char* entry = buf;
    if (target.size() + kMaxVarint32Length > sizeof(buf)) {
      seek_scratch_.resize(target.size() + kMaxVarint32Length);
      entry = seek_scratch_.data();
    }
    char* p = EncodeVarint32(entry, static_cast<uint32_t>(target.size()));
    std::memcpy(p, target.data(), target.size());
    return entry;
  }

  Table::Iterator iter_;
  std::string seek_scratch_;
};

MemTable::MemTable(size_t row_filter_bytes)
    : table_(EntryComparator(), &arena_),
      filter_words_((row_filter_bytes + 63) / 64 * kWordsPerBlock) {}

void MemTable::AddToRowFilter(const Slice& cell_key) {
  if (filter_words_ == 0) return;
  std::atomic<uint64_t>* filter = filter_.load(std::memory_order_relaxed);  // writer's own
  const size_t blocks = filter_words_ / kWordsPerBlock;
  auto add = [blocks](std::atomic<uint64_t>* f, uint64_t row_hash) {
    const RowProbe p(row_hash, blocks);
    std::atomic<uint64_t>* block = f + p.block * kWordsPerBlock;
    for (int i = 0; i < kRowFilterProbes; i++) {
      block[p.word(i)].fetch_or(p.mask(i), std::memory_order_relaxed);
    }
  };
  const uint64_t row_hash = RowProbe::RowHash(RowPrefixOf(cell_key));
  if (filter != nullptr) {
    add(filter, row_hash);
    return;
  }
  // Not due yet: remember the row (a run of one row's adds, once).
  if (pending_rows_.empty() || pending_rows_.back() != row_hash) {
    pending_rows_.push_back(row_hash);
    pending_bytes_.store(pending_rows_.capacity() * sizeof(uint64_t), std::memory_order_relaxed);
  }
  if (arena_.BytesInUse() < RowFilterStart()) return;
  // Due: every row so far goes in, then readers may use it. (C++20 atomics
  // start at zero.)
  filter_storage_.reset(new std::atomic<uint64_t>[filter_words_]);
  filter = filter_storage_.get();
  for (const uint64_t h : pending_rows_) add(filter, h);
  filter_.store(filter, std::memory_order_release);
  std::vector<uint64_t>().swap(pending_rows_);
  pending_bytes_.store(0, std::memory_order_relaxed);
}

bool MemTable::MayContainRow(const Slice& row_prefix) const {
  // Acquire: see the filter's bits for every entry it was made with.
  const std::atomic<uint64_t>* filter = filter_.load(std::memory_order_acquire);
  if (filter == nullptr) return true;
  const RowProbe p(row_prefix, filter_words_ / kWordsPerBlock);
  const std::atomic<uint64_t>* block = filter + p.block * kWordsPerBlock;
  for (int i = 0; i < kRowFilterProbes; i++) {
    if ((block[p.word(i)].load(std::memory_order_relaxed) & p.mask(i)) == 0) return false;
  }
  return true;
}

size_t MemTable::row_filter_bytes() const {
  return filter_.load(std::memory_order_acquire) == nullptr ? 0 : filter_words_ * 8;
}

void MemTable::Add(const Slice& cell_key, const Slice& value) {
  assert(cell_key.size() <= UINT32_MAX && value.size() <= UINT32_MAX);
  const auto key_size = static_cast<uint32_t>(cell_key.size());
  const auto value_size = static_cast<uint32_t>(value.size());
  const size_t encoded_size =
      VarintLength(key_size) + key_size + VarintLength(value_size) + value_size;
  char* const entry = arena_.Allocate(encoded_size);
  char* p = EncodeVarint32(entry, key_size);
  std::memcpy(p, cell_key.data(), key_size);
  p = EncodeVarint32(p + key_size, value_size);
  if (value_size > 0) std::memcpy(p, value.data(), value_size);
  assert(p + value_size == entry + encoded_size);
  // The row's bits are set before the entry is linked: whoever can see the
  // entry sees them (MayContainRow).
  AddToRowFilter(cell_key);
  table_.Insert(entry);
  // Release, paired with the acquire in num_entries(): whoever reads the new
  // count also sees the entry linked above. Adds are serialized, so a plain
  // load and store (no read-modify-write) cannot lose an increment.
  num_entries_.store(num_entries_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

void MemTable::Add(SequenceNumber seq, CellType type, const Slice& row, uint16_t family,
                   const Slice& qualifier, uint64_t timestamp, const Slice& value) {
  key_scratch_.clear();
  AppendCellKey(&key_scratch_, row, family, qualifier, timestamp, seq, type);
  Add(Slice(key_scratch_), value);
}

size_t MemTable::ApproximateMemoryUsage() const {
  return arena_.MemoryUsage() + row_filter_bytes() + pending_bytes_.load(std::memory_order_relaxed);
}

size_t MemTable::ApproximateDataSize() const { return arena_.BytesInUse(); }

uint64_t MemTable::num_entries() const {
  // Acquire: see Add().
  return num_entries_.load(std::memory_order_acquire);
}

std::unique_ptr<InternalIterator> MemTable::NewIterator() const {
  return std::make_unique<Iterator>(&table_);
}

}  // namespace strata::memtable
