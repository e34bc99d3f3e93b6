// Omap keys of tablet objects; the grammar is in rados_keys.h.
#include "cluster/rados_keys.h"

namespace strata::cluster::rados_keys {
namespace {

constexpr char kEscape = 0x01;
constexpr char kTerminator = 0x01;

// Reads an escaped string from `in` at *pos into *out; false when malformed.
bool ReadEscaped(std::string_view in, size_t* pos, std::string* out) {
  out->clear();
  while (*pos < in.size()) {
    const char c = in[(*pos)++];
    if (c != kEscape) {
      out->push_back(c);
      continue;
    }
    if (*pos >= in.size()) return false;
    const char next = in[(*pos)++];
    if (next == kTerminator) return true;
    if (next == 0x02) {
      out->push_back('\0');
    } else if (next == 0x03) {
      out->push_back('\x01');
    } else {
      return false;
    }
  }
  return false;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

void AppendEscaped(std::string_view bytes, std::string* out) {
  for (char c : bytes) {
    if (c == '\0') {
      out->push_back(kEscape);
      out->push_back(0x02);
    } else if (c == '\x01') {
      out->push_back(kEscape);
      out->push_back(0x03);
    } else {
      out->push_back(c);
    }
  }
  out->push_back(kEscape);
  out->push_back(kTerminator);
}

std::string RowPrefix(std::string_view row) {
  std::string out;
  out.reserve(row.size() + 2);
  AppendEscaped(row, &out);
  return out;
}

std::string VersionKey(std::string_view row) {
  std::string out = RowPrefix(row);
  out.push_back(static_cast<char>(kVersionByte));
  return out;
}

std::string FamilyPrefix(std::string_view row, uint16_t family_id) {
  std::string out = RowPrefix(row);
  out.push_back(static_cast<char>(family_id + 1));
  return out;
}

std::string ColumnPrefix(std::string_view row, uint16_t family_id, std::string_view qualifier) {
  std::string out = FamilyPrefix(row, family_id);
  AppendEscaped(qualifier, &out);
  return out;
}

std::string CellKey(std::string_view column_prefix, uint64_t timestamp) {
  static const char kHex[] = "0123456789abcdef";
  std::string out(column_prefix);
  const uint64_t inverted = ~timestamp;
  for (int shift = 60; shift >= 0; shift -= 4) out.push_back(kHex[(inverted >> shift) & 15]);
  return out;
}

std::string StartAfterForRow(std::string_view row) {
  if (row.empty()) return std::string();
  // escaped(row) and the escape byte alone: every key of `row` continues it
  // with the terminator's second byte, every later row's key is above it
  // (a byte of 0x02 and up, or an escape pair 0x01 0x02 / 0x01 0x03, at the
  // first difference), and every earlier row's key is below it.
  std::string out = RowPrefix(row);
  out.pop_back();
  return out;
}

size_t RowPrefixLength(std::string_view key) {
  std::string row;
  size_t pos = 0;
  return ReadEscaped(key, &pos, &row) ? pos : 0;
}

bool DecodeKey(std::string_view key, DecodedKey* out) {
  size_t pos = 0;
  if (!ReadEscaped(key, &pos, &out->row) || pos >= key.size()) return false;
  const uint8_t family_byte = static_cast<uint8_t>(key[pos++]);
  out->is_version = family_byte == kVersionByte;
  if (out->is_version) return pos == key.size();
  if (family_byte < 2 || family_byte > kMaxFamilyId + 1) return false;
  out->family_id = static_cast<uint16_t>(family_byte - 1);
  if (!ReadEscaped(key, &pos, &out->qualifier) || key.size() - pos != 16) return false;
  uint64_t inverted = 0;
  for (; pos < key.size(); pos++) {
    const int v = HexValue(key[pos]);
    if (v < 0) return false;
    inverted = inverted << 4 | static_cast<uint64_t>(v);
  }
  out->timestamp = ~inverted;
  return true;
}

}  // namespace strata::cluster::rados_keys
