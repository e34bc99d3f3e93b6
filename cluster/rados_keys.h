// The omap keys and values of a RADOS tablet object (cluster/README.md, "The
// row store on RADOS"): an order-preserving encoding of (row, family,
// qualifier, timestamp descending), so omap's bytewise key order is the
// row store's cell order, and each row's version key, which sorts before the
// row's cells.
//
// Keys hold no NUL byte: librados' C API passes omap bounds and prefixes as
// C strings. Grammar (every byte string escaped: 0x00 -> 0x01 0x02, 0x01 ->
// 0x01 0x03, any other byte as itself, then the terminator 0x01 0x01):
//   row prefix   := escaped(row)
//   version key  := row prefix 0x01
//   cell key     := row prefix family-byte escaped(qualifier) hex16(~timestamp)
// where family-byte is the family's schema id plus 1 (2..254) and hex16 is
// 16 lowercase hex digits. Values are a tag byte (kCellTag) then the cell's
// value: omap's compare treats a missing key as an empty value, which no
// stored value equals.
//
// Pure functions; thread-safe.
#ifndef STRATA_CLUSTER_RADOS_KEYS_H_
#define STRATA_CLUSTER_RADOS_KEYS_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace strata::cluster::rados_keys {

// DO NOT CHANGE: stored in tablet objects.
constexpr char kCellTag = 'c';
constexpr char kVersionTag = 'v';
constexpr uint8_t kVersionByte = 0x01;
// The highest family id a key can hold (family-byte 0xfe); a row's cell keys
// all lie below row prefix + 0xff.
constexpr uint16_t kMaxFamilyId = 253;

// Appends escaped(bytes) and its terminator to *out.
void AppendEscaped(std::string_view bytes, std::string* out);

// The prefix every key of `row` starts with.
std::string RowPrefix(std::string_view row);
std::string VersionKey(std::string_view row);
// The prefix of every version of column (family_id, qualifier) of `row`.
std::string ColumnPrefix(std::string_view row, uint16_t family_id, std::string_view qualifier);
// The prefix of every cell of `family_id` in `row`.
std::string FamilyPrefix(std::string_view row, uint16_t family_id);
// ColumnPrefix(...) followed by the timestamp.
std::string CellKey(std::string_view column_prefix, uint64_t timestamp);

// A key below every key of a row at or after `row` and above every key of
// the rows before it (for omap's exclusive start_after); empty for "".
std::string StartAfterForRow(std::string_view row);

// A key decoded, its parts copied out of it.
struct DecodedKey {
  std::string row;  // unescaped
  bool is_version = false;
  uint16_t family_id = 0;
  std::string qualifier;  // unescaped
  uint64_t timestamp = 0;
};
// False when `key` is not a key of this format.
bool DecodeKey(std::string_view key, DecodedKey* out);
// The length of the row prefix at the start of `key`, or 0 when it has none.
size_t RowPrefixLength(std::string_view key);

}  // namespace strata::cluster::rados_keys

#endif  // STRATA_CLUSTER_RADOS_KEYS_H_
