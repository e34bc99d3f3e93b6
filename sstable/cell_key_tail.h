// The cell-key tail of version-2 data blocks (sstable/FORMAT.md, "Key/value
// blocks"): between restart points an entry stores its timestamp and
// sequence as deltas from the previous key's, as two varint64s:
//
//   ts_delta := zigzag(timestamp - previous timestamp)
//   seq_type := zigzag(sequence - previous sequence) << 3 | type
//
// with the subtractions modulo 2^64 read as signed. Pure functions; thread-safe.
#ifndef STRATA_SSTABLE_CELL_KEY_TAIL_H_
#define STRATA_SSTABLE_CELL_KEY_TAIL_H_

#include <cstdint>

#include "common/cell_key.h"

namespace strata::sstable {

inline uint64_t ZigZagEncode(uint64_t delta) {
  return (delta << 1) ^ static_cast<uint64_t>(static_cast<int64_t>(delta) >> 63);
}
inline uint64_t ZigZagDecode(uint64_t z) { return (z >> 1) ^ (~(z & 1) + 1); }

inline uint64_t EncodeTimestampDelta(uint64_t timestamp, uint64_t previous) {
  return ZigZagEncode(timestamp - previous);
}
inline uint64_t DecodeTimestampDelta(uint64_t ts_delta, uint64_t previous) {
  return previous + ZigZagDecode(ts_delta);
}

// REQUIRES: both tags hold sequences <= kMaxSequenceNumber (so the zigzag
// delta needs at most 57 bits) and `tag`'s type is below 8.
inline uint64_t EncodeSequenceAndType(uint64_t tag, uint64_t previous_tag) {
  return ZigZagEncode((tag >> 8) - (previous_tag >> 8)) << 3 | (tag & 7);
}
// The tag of an entry from its seq_type and the previous tag; false when the
// sequence falls outside [0, kMaxSequenceNumber] or the type is not a CellType.
inline bool DecodeSequenceAndType(uint64_t seq_type, uint64_t previous_tag, uint64_t* tag) {
  const uint64_t type = seq_type & 7;
  const uint64_t sequence = (previous_tag >> 8) + ZigZagDecode(seq_type >> 3);
  if (type < 1 || type > kMaxCellType || sequence > kMaxSequenceNumber) return false;
  *tag = sequence << 8 | type;
  return true;
}

}  // namespace strata::sstable

#endif  // STRATA_SSTABLE_CELL_KEY_TAIL_H_
