#include "memtable/memtable.h"

#include <cassert>
#include <cstring>

#include "common/coding.h"

namespace strata::memtable {

namespace {

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
    // The skiplist compares entries, so give the target an entry's length
    // prefix: on the stack for ordinary keys, else in a buffer that keeps
    // its capacity across seeks.
    assert(target.size() <= UINT32_MAX);
    char buf[128];
    char* entry = buf;
    if (target.size() + kMaxVarint32Length > sizeof(buf)) {
      seek_scratch_.resize(target.size() + kMaxVarint32Length);
      entry = seek_scratch_.data();
    }
    char* p = EncodeVarint32(entry, static_cast<uint32_t>(target.size()));
    std::memcpy(p, target.data(), target.size());
    iter_.Seek(entry);
  }
  void Next() override { iter_.Next(); }
  Slice key() const override { return DecodeLengthPrefixed(iter_.key()); }
  Slice value() const override {
    Slice k = key();
    return DecodeLengthPrefixed(k.data() + k.size());
  }
  Status status() const override { return Status::OK(); }

 private:
  Table::Iterator iter_;
  std::string seek_scratch_;
};

MemTable::MemTable() : table_(EntryComparator(), &arena_) {}

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

size_t MemTable::ApproximateMemoryUsage() const { return arena_.MemoryUsage(); }

size_t MemTable::ApproximateDataSize() const { return arena_.BytesInUse(); }

uint64_t MemTable::num_entries() const {
  // Acquire: see Add().
  return num_entries_.load(std::memory_order_acquire);
}

std::unique_ptr<InternalIterator> MemTable::NewIterator() const {
  return std::make_unique<Iterator>(&table_);
}

}  // namespace strata::memtable
