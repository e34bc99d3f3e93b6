// Bloom filter layout: see sstable/FORMAT.md, "Filter block".
#include "sstable/bloom.h"

#include <algorithm>
#include <cmath>

#include "common/coding.h"
#include "common/hash.h"

namespace strata::sstable {

namespace {

constexpr size_t kMinBits = 64;
constexpr int kMaxProbes = 30;

// Bit i of the k probes: h + i * delta modulo the bit count, where delta is
// the hash with its halves swapped (forced odd).
inline uint64_t Delta(uint64_t h) { return ((h >> 32) | (h << 32)) | 1; }

}  // namespace

uint64_t BloomHash(const Slice& key) { return Hash64(key, kBloomHashSeed); }

BloomFilterBuilder::BloomFilterBuilder(int bits_per_key) : bits_per_key_(bits_per_key) {}

void BloomFilterBuilder::Finish(std::string* dst) {
  // k = bits_per_key * ln 2 minimizes the false-positive rate.
  int k = static_cast<int>(std::lround(bits_per_key_ * 0.69314718));
  k = std::clamp(k, 1, kMaxProbes);
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

FilterBlockBuilder::FilterBlockBuilder(int bits_per_key)
    : rows_(bits_per_key), columns_(bits_per_key) {}

std::string FilterBlockBuilder::Finish() {
  std::string out;
  PutFixed32(&out, 0);  // row filter length, patched below
  rows_.Finish(&out);
  EncodeFixed32(out.data(), static_cast<uint32_t>(out.size() - 4));
  columns_.Finish(&out);
  return out;
}

Result<FilterBlockReader> FilterBlockReader::Parse(std::string contents) {
  if (contents.size() < 4) return Status::Corruption("filter block too short");
  const uint32_t row_size = DecodeFixed32(contents.data());
  if (row_size < 2 || uint64_t{row_size} + 4 + 2 > contents.size()) {
    return Status::Corruption("bad row filter length " + std::to_string(row_size));
  }
  FilterBlockReader r(std::move(contents), row_size);
  for (int k : {r.row_probes(), r.column_probes()}) {
    if (k < 1 || k > kMaxProbes) {
      return Status::Corruption("bad bloom probe count " + std::to_string(k));
    }
  }
  return r;
}

bool FilterBlockReader::RowMayMatch(const Slice& row_prefix) const {
  return BloomMayMatch(row_filter(), BloomHash(row_prefix));
}

bool FilterBlockReader::ColumnMayMatch(const Slice& column_prefix) const {
  return BloomMayMatch(column_filter(), BloomHash(column_prefix));
}

int FilterBlockReader::row_probes() const {
  return static_cast<uint8_t>(contents_[4 + row_size_ - 1]);
}
int FilterBlockReader::column_probes() const {
  return static_cast<uint8_t>(contents_.back());
}

}  // namespace strata::sstable
