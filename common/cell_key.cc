#include "common/cell_key.h"

#include <cassert>

#include "common/coding.h"

namespace strata {

size_t CellKeyLength(const Slice& row, const Slice& qualifier) {
  return MemcomparableLength(row) + 2 + MemcomparableLength(qualifier) + 16;
}

void AppendCellKey(std::string* dst, const Slice& row, uint16_t family, const Slice& qualifier,
                   uint64_t timestamp, SequenceNumber sequence, CellType type) {
  assert(sequence <= kMaxSequenceNumber);  // the top 8 bits would be lost
  size_t old = dst->size();
  dst->resize(old + CellKeyLength(row, qualifier));
  char* p = dst->data() + old;
  p = EncodeMemcomparable(p, row);
  EncodeBigEndian16(p, family);
  p += 2;
  p = EncodeMemcomparable(p, qualifier);
  EncodeBigEndian64(p, ~timestamp);
  p += 8;
  EncodeBigEndian64(p, ~((sequence << 8) | static_cast<uint8_t>(type)));
}

void AppendRowPrefix(std::string* dst, const Slice& row) { PutMemcomparable(dst, row); }

void AppendColumnPrefix(std::string* dst, const Slice& row, uint16_t family,
                        const Slice& qualifier) {
  PutMemcomparable(dst, row);
  char buf[2];
  EncodeBigEndian16(buf, family);
  dst->append(buf, 2);
  PutMemcomparable(dst, qualifier);
}

bool ParseCellKey(const Slice& key, ParsedCellKey* out) {
  Slice in = key;
  if (!GetMemcomparable(&in, &out->row)) return false;
  if (in.size() < 2) return false;
  out->family = DecodeBigEndian16(in.data());
  in.remove_prefix(2);
  if (!GetMemcomparable(&in, &out->qualifier)) return false;
  if (in.size() != 16) return false;
  out->timestamp = ~DecodeBigEndian64(in.data());
  uint64_t tag = ~DecodeBigEndian64(in.data() + 8);
  out->sequence = tag >> 8;
  uint8_t type = tag & 0xff;
  if (type == 0 || type > kMaxCellType) return false;
  out->type = static_cast<CellType>(type);
  return true;
}

std::string CellKeyDebugString(const Slice& key) {
  ParsedCellKey k;
  if (!ParseCellKey(key, &k)) return "<bad cell key " + HexBytes(key) + ">";
  static const char* kTypes[] = {"?", "put", "del-cell", "del-column", "del-row"};
  return "'" + EscapeBytes(k.row) + "' f" + std::to_string(k.family) + ":'" +
         EscapeBytes(k.qualifier) + "' @" + std::to_string(k.timestamp) + " #" +
         std::to_string(k.sequence) + " " + kTypes[static_cast<int>(k.type)];
}

}  // namespace strata
