// Cell keys: the internal key of every cell version and delete marker, as
// stored in memtables and (later) SSTables. The encoding compares with memcmp
// in the order DESIGN.md requires:
//
//   row ascending, family ascending, qualifier ascending,
//   timestamp descending, sequence number descending.
//
// Byte grammar (all integers big-endian so memcmp orders them numerically):
//
//   cell_key  := mc(row) family:u16 mc(qualifier) ~timestamp:u64 ~tag:u64
//   mc(s)     := s with every 0x00 written as 0x00 0xFF, then 0x00 0x01
//   tag       := sequence << 8 | type
//
// Family id 0 is reserved for row-level markers (a row delete sorts before
// every cell of its row). See engine docs for the value layout of each type.
//
// Pure functions and value types; thread-safe.
#ifndef STRATA_COMMON_CELL_KEY_H_
#define STRATA_COMMON_CELL_KEY_H_

#include <cstdint>
#include <string>

#include "common/coding.h"
#include "strata/slice.h"

namespace strata {

using SequenceNumber = uint64_t;
// Sequence numbers use the upper 56 bits of the tag.
constexpr SequenceNumber kMaxSequenceNumber = (uint64_t{1} << 56) - 1;

// DO NOT CHANGE: stored on disk and in the log.
enum class CellType : uint8_t {
  kPut = 1,           // a value at (column, timestamp)
  kDeleteCell = 2,    // hides the one version of the column at exactly `timestamp`
  kDeleteColumn = 3,  // hides every version of the column with timestamp <= `timestamp`
  kDeleteRow = 4,     // (family 0, empty qualifier) hides every cell of the row with
                      // timestamp <= `timestamp`
};
constexpr uint8_t kMaxCellType = 4;

// Family id of row-level markers.
constexpr uint16_t kRowMarkerFamily = 0;

// A cell key taken apart. Row and qualifier are owned strings, since
// unescaping their 0x00 bytes needs a copy.
struct ParsedCellKey {
  std::string row;
  uint16_t family = 0;
  std::string qualifier;
  uint64_t timestamp = 0;
  SequenceNumber sequence = 0;
  CellType type = CellType::kPut;
};

// Appends the cell key to *dst. REQUIRES: sequence <= kMaxSequenceNumber
void AppendCellKey(std::string* dst, const Slice& row, uint16_t family, const Slice& qualifier,
                   uint64_t timestamp, SequenceNumber sequence, CellType type);
// The exact encoded length of that key.
size_t CellKeyLength(const Slice& row, const Slice& qualifier);

// Appends the encoding of `row` alone: every cell key of the row starts with
// it, and it sorts before all of them (a Seek target for the row).
void AppendRowPrefix(std::string* dst, const Slice& row);
// The prefix of a column (row, family, qualifier): every version of the column
// starts with it, and it sorts before all of them.
void AppendColumnPrefix(std::string* dst, const Slice& row, uint16_t family,
                        const Slice& qualifier);

bool ParseCellKey(const Slice& key, ParsedCellKey* out);

// Fast accessors on an encoded key. REQUIRES: key is a well-formed cell key.
inline uint64_t CellKeyTag(const Slice& key) {
  return ~DecodeBigEndian64(key.data() + key.size() - 8);
}
inline SequenceNumber CellKeySequence(const Slice& key) { return CellKeyTag(key) >> 8; }
inline CellType CellKeyType(const Slice& key) {
  return static_cast<CellType>(CellKeyTag(key) & 0xff);
}
inline uint64_t CellKeyTimestamp(const Slice& key) {
  return ~DecodeBigEndian64(key.data() + key.size() - 16);
}
// The key without timestamp and tag: (row, family, qualifier).
inline Slice CellKeyColumn(const Slice& key) { return Slice(key.data(), key.size() - 16); }

// Human-readable rendering for tools and test failures.
std::string CellKeyDebugString(const Slice& key);

}  // namespace strata

#endif  // STRATA_COMMON_CELL_KEY_H_
