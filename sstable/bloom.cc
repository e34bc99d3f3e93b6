// Bloom filter layout: see sstable/FORMAT.md, "Filter block".
#include "sstable/bloom.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>

#include "common/coding.h"
#include "common/hash.h"

namespace strata::sstable {

namespace {

constexpr size_t kMinBits = 64;
constexpr int kMaxProbes = 30;

// Bit i of the k probes: h + i * delta modulo the bit count, where delta is
// the hash with its halves swapped (forced odd).
inline uint64_t Delta(uint64_t h) { return ((h >> 32) | (h << 32)) | 1; }

// Blocked blooms: the high 32 bits of the hash pick the line (a multiply-
// shift maps them onto [0, lines)); the low 32 bits, multiplied by an odd
// constant before each probe, give the bit in the line as their top 9 bits.
constexpr uint32_t kLineBits = kBloomLineBytes * 8;  // 512
constexpr uint32_t kProbeMultiplier = 0x9e3779b1u;   // odd: the sequence has a long period
inline uint64_t BlockedLine(uint64_t h, uint64_t lines) { return ((h >> 32) * lines) >> 32; }
inline uint32_t NextProbe(uint32_t* x) {
  *x *= kProbeMultiplier;
  return *x >> 23;  // 9 bits: 0..511
}

// Sets / tests the k probes of hash h in one 64-byte line.
inline void BlockedAdd(uint8_t* line, uint64_t h, int k) {
  auto x = static_cast<uint32_t>(h);
  for (int i = 0; i < k; i++) {
    const uint32_t bit = NextProbe(&x);
    line[bit / 8] |= static_cast<uint8_t>(1u << (bit % 8));
  }
}
inline bool BlockedTest(const uint8_t* line, uint64_t h, int k) {
  auto x = static_cast<uint32_t>(h);
  for (int i = 0; i < k; i++) {
    const uint32_t bit = NextProbe(&x);
    if ((line[bit / 8] & (1u << (bit % 8))) == 0) return false;
  }
  return true;
}

}  // namespace

uint64_t BloomHash(const Slice& key) { return Hash64(key, kBloomHashSeed); }

int BloomProbes(int bits_per_key, BloomLayout layout) {
  // k = bits_per_key * ln 2 minimizes the false-positive rate of a flat
  // bloom. A blocked bloom's lines fill unevenly, and fewer probes suit it:
  // measured over 100,000 keys, the best k is 3, 5, 6, 7 and 9 at 4, 8, 10,
  // 12 and 16 bits per key (at 10 bits, k = 6 and 7 tie), which this line
  // through them gives.
  double k = bits_per_key * 0.69314718;
  if (layout == BloomLayout::kBlocked) k = bits_per_key * 0.55 + 0.5;
  return std::clamp(static_cast<int>(std::lround(k)), 1, kMaxProbes);
}

BloomFilterBuilder::BloomFilterBuilder(int bits_per_key, BloomLayout layout)
    : bits_per_key_(bits_per_key), layout_(layout) {}

void BloomFilterBuilder::Finish(std::string* dst) {
  const int k = BloomProbes(bits_per_key_, layout_);
  if (layout_ == BloomLayout::kBlocked) {
    const uint64_t want_bits = uint64_t{hashes_.size()} * static_cast<uint64_t>(bits_per_key_);
    const uint64_t lines = std::max<uint64_t>(1, (want_bits + kLineBits - 1) / kLineBits);
    const size_t start = dst->size();
    dst->resize(start + lines * kBloomLineBytes, '\0');
    auto* array = reinterpret_cast<uint8_t*>(dst->data() + start);
    for (uint64_t h : hashes_) BlockedAdd(array + BlockedLine(h, lines) * kBloomLineBytes, h, k);
    dst->push_back(static_cast<char>(k));
    hashes_.clear();
    return;
  }
  size_t bits = std::max(kMinBits, hashes_.size() * static_cast<size_t>(bits_per_key_));
  const size_t bytes = (bits + 7) / 8;
  bits = bytes * 8;
  const size_t start = dst->size();
  dst->resize(start + bytes, '\0');
  auto* array = reinterpret_cast<uint8_t*>(dst->data() + start);
  for (uint64_t h : hashes_) {
    const uint64_t delta = Delta(h);
    for (int i = 0; i < k; i++) {
      const uint64_t pos = h % bits;
      array[pos / 8] |= static_cast<uint8_t>(1u << (pos % 8));
      h += delta;
    }
  }
  dst->push_back(static_cast<char>(k));
  hashes_.clear();
}

bool BloomMayMatch(const Slice& filter, uint64_t h) {
  if (filter.size() < 2) return true;
  const size_t bytes = filter.size() - 1;
  const uint64_t bits = uint64_t{bytes} * 8;
  const int k = static_cast<uint8_t>(filter[bytes]);
  if (k < 1 || k > kMaxProbes) return true;
  const auto* array = reinterpret_cast<const uint8_t*>(filter.data());
  const uint64_t delta = Delta(h);
  for (int i = 0; i < k; i++) {
    const uint64_t pos = h % bits;
    if ((array[pos / 8] & (1u << (pos % 8))) == 0) return false;
    h += delta;
  }
  return true;
}

bool BlockedBloomMayMatch(const Slice& filter, uint64_t h) {
  if (filter.size() < kBloomLineBytes + 1 || (filter.size() - 1) % kBloomLineBytes != 0) {
    return true;
  }
  const int k = static_cast<uint8_t>(filter[filter.size() - 1]);
  if (k < 1 || k > kMaxProbes) return true;
  const uint64_t lines = (filter.size() - 1) / kBloomLineBytes;
  const auto* line =
      reinterpret_cast<const uint8_t*>(filter.data()) + BlockedLine(h, lines) * kBloomLineBytes;
  return BlockedTest(line, h, k);
}

FilterBlockBuilder::FilterBlockBuilder(int bits_per_key, BloomLayout layout,
                                       bool omit_single_columns)
    : omit_single_columns_(omit_single_columns),
      rows_(bits_per_key, layout),
      columns_(bits_per_key, layout) {}

std::string FilterBlockBuilder::Finish() {
  std::string out;
  PutFixed32(&out, 0);  // row filter length, patched below
  // With as many columns as rows, every column is the only one of its row:
  // the column filter would only tell a present row's other columns apart,
  // at the cost of a second filter as large as the first (FORMAT.md,
  // "Filter block").
  const bool omit_columns = omit_single_columns_ && columns_.num_keys() == rows_.num_keys();
  rows_.Finish(&out);
  EncodeFixed32(out.data(), static_cast<uint32_t>(out.size() - 4));
  if (!omit_columns) columns_.Finish(&out);
  return out;
}

FilterBlockReader::FilterBlockReader(const std::string& contents, size_t row_size,
                                     BloomLayout layout)
    : row_size_(row_size), column_size_(contents.size() - 4 - row_size), layout_(layout) {
  const char* rows = contents.data() + 4;
  const char* columns = rows + row_size_;
  const size_t rows_padded = (row_size_ + kBloomLineBytes - 1) / kBloomLineBytes * kBloomLineBytes;
  const size_t total = rows_padded + column_size_;
  char* buf = static_cast<char*>(::operator new[](total, std::align_val_t{kBloomLineBytes}));
  aligned_ = std::shared_ptr<const char>(buf, [](const char* p) {
    ::operator delete[](const_cast<char*>(p), std::align_val_t{kBloomLineBytes});
  });
  std::memcpy(buf, rows, row_size_);
  std::memcpy(buf + rows_padded, columns, column_size_);
  row_filter_ = Slice(buf, row_size_);
  column_filter_ = Slice(buf + rows_padded, column_size_);
}

Result<FilterBlockReader> FilterBlockReader::Parse(std::string contents, BloomLayout layout) {
  if (contents.size() < 4) return Status::Corruption("filter block too short");
  const uint32_t row_size = DecodeFixed32(contents.data());
  if (layout == BloomLayout::kBlocked) {
    // Each filter is whole lines and a probe count; the column filter may be absent.
    const uint64_t columns =
        contents.size() - 4 - std::min<uint64_t>(row_size, contents.size() - 4);
    if (row_size < kBloomLineBytes + 1 || uint64_t{row_size} + 4 > contents.size() ||
        (row_size - 1) % kBloomLineBytes != 0) {
      return Status::Corruption("bad row filter length " + std::to_string(row_size));
    }
    if (columns != 0 && (columns < kBloomLineBytes + 1 || (columns - 1) % kBloomLineBytes != 0)) {
      return Status::Corruption("bad column filter length " + std::to_string(columns));
    }
  } else if (row_size < 2 || uint64_t{row_size} + 4 + 2 > contents.size()) {
    return Status::Corruption("bad row filter length " + std::to_string(row_size));
  }
  FilterBlockReader r(contents, row_size, layout);
  std::vector<int> probes = {r.row_probes()};
  if (r.has_column_filter()) probes.push_back(r.column_probes());
  for (int k : probes) {
    if (k < 1 || k > kMaxProbes) {
      return Status::Corruption("bad bloom probe count " + std::to_string(k));
    }
  }
  return r;
}

bool FilterBlockReader::MayMatch(const Slice& filter, const Slice& key) const {
  if (layout_ == BloomLayout::kBlocked) return BlockedBloomMayMatch(filter, BloomHash(key));
  return BloomMayMatch(filter, BloomHash(key));
}

bool FilterBlockReader::RowMayMatch(const Slice& row_prefix) const {
  return MayMatch(row_filter_, row_prefix);
}

bool FilterBlockReader::ColumnMayMatch(const Slice& column_prefix) const {
  if (!has_column_filter()) {
    // Only versions 2 and later omit it; ask the row filter for the column's row.
    Slice in = column_prefix;
    if (!SkipMemcomparable(&in)) return true;
    return RowMayMatch(Slice(column_prefix.data(), column_prefix.size() - in.size()));
  }
  return MayMatch(column_filter_, column_prefix);
}

int FilterBlockReader::row_probes() const {
  return static_cast<uint8_t>(row_filter_[row_size_ - 1]);
}
int FilterBlockReader::column_probes() const {
  return static_cast<uint8_t>(column_filter_[column_size_ - 1]);
}

}  // namespace strata::sstable
