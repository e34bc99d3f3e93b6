// Byte encodings shared by every on-disk format: little-endian fixed-width
// integers, LEB128 varints, length-prefixed strings, and order-preserving
// ("memcomparable") encodings whose bytes compare with memcmp in the same order
// as the values they encode.
//
// Pure functions; thread-safe.
#ifndef STRATA_COMMON_CODING_H_
#define STRATA_COMMON_CODING_H_

#include <cstdint>
#include <cstring>
#include <string>

#include "strata/slice.h"

namespace strata {

constexpr int kMaxVarint32Length = 5;
constexpr int kMaxVarint64Length = 10;

inline void EncodeFixed16(char* dst, uint16_t v) { std::memcpy(dst, &v, 2); }
inline void EncodeFixed32(char* dst, uint32_t v) { std::memcpy(dst, &v, 4); }
inline void EncodeFixed64(char* dst, uint64_t v) { std::memcpy(dst, &v, 8); }
inline uint16_t DecodeFixed16(const char* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
inline uint32_t DecodeFixed32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint64_t DecodeFixed64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "fixed encodings assume little endian");

// Big-endian, so that memcmp order equals numeric order.
inline void EncodeBigEndian64(char* dst, uint64_t v) {
  v = __builtin_bswap64(v);
  std::memcpy(dst, &v, 8);
}
inline uint64_t DecodeBigEndian64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return __builtin_bswap64(v);
}
inline void EncodeBigEndian16(char* dst, uint16_t v) {
  dst[0] = static_cast<char>(v >> 8);
  dst[1] = static_cast<char>(v & 0xff);
}
inline uint16_t DecodeBigEndian16(const char* p) {
  return static_cast<uint16_t>((static_cast<uint8_t>(p[0]) << 8) | static_cast<uint8_t>(p[1]));
}

void PutFixed16(std::string* dst, uint16_t v);
void PutFixed32(std::string* dst, uint32_t v);
void PutFixed64(std::string* dst, uint64_t v);
void PutVarint32(std::string* dst, uint32_t v);
void PutVarint64(std::string* dst, uint64_t v);
void PutLengthPrefixedSlice(std::string* dst, const Slice& value);

// Writes a varint at dst and returns the byte after it.
char* EncodeVarint32(char* dst, uint32_t v);
char* EncodeVarint64(char* dst, uint64_t v);
int VarintLength(uint64_t v);

// Decoders consume from the front of `input`; false on truncated or malformed input.
bool GetFixed16(Slice* input, uint16_t* value);
bool GetFixed32(Slice* input, uint32_t* value);
bool GetFixed64(Slice* input, uint64_t* value);
bool GetVarint32(Slice* input, uint32_t* value);
bool GetVarint64(Slice* input, uint64_t* value);
bool GetLengthPrefixedSlice(Slice* input, Slice* result);

// Pointer-style varint decoders: return the byte after the value, or nullptr.
// One-byte values (the common case in block entries) are decoded inline.
const char* GetVarint32PtrSlow(const char* p, const char* limit, uint32_t* value);
const char* GetVarint64PtrSlow(const char* p, const char* limit, uint64_t* value);
inline const char* GetVarint32Ptr(const char* p, const char* limit, uint32_t* value) {
  if (p < limit && (static_cast<uint8_t>(*p) & 0x80) == 0) {
    *value = static_cast<uint8_t>(*p);
    return p + 1;
  }
  return GetVarint32PtrSlow(p, limit, value);
}
inline const char* GetVarint64Ptr(const char* p, const char* limit, uint64_t* value) {
  if (p < limit && (static_cast<uint8_t>(*p) & 0x80) == 0) {
    *value = static_cast<uint8_t>(*p);
    return p + 1;
  }
  return GetVarint64PtrSlow(p, limit, value);
}

// Memcomparable byte strings: every 0x00 byte becomes 0x00 0xFF and the string
// ends with 0x00 0x01. For any a, b: memcmp order of the encodings equals the
// byte order of a and b, and no encoding is a prefix of another.
void PutMemcomparable(std::string* dst, const Slice& value);
size_t MemcomparableLength(const Slice& value);
// Writes the encoding at dst (which must have MemcomparableLength() bytes) and
// returns the byte after it.
char* EncodeMemcomparable(char* dst, const Slice& value);
// Decodes one string from the front of `input` into `result` (cleared first).
bool GetMemcomparable(Slice* input, std::string* result);
// Advances `input` past one encoded string without decoding it.
bool SkipMemcomparable(Slice* input);

// Renders bytes printable: ASCII graphic characters as they are, others as \xHH.
std::string EscapeBytes(const Slice& value);
// EscapeBytes of at most the first `max_bytes` bytes of `value`; a longer
// value ends with "...(N bytes)". For messages that echo a caller's key,
// name or value, which stay short however long what they echo.
std::string EscapePrefix(const Slice& value, size_t max_bytes = 64);
// Lowercase hex of every byte.
std::string HexBytes(const Slice& value);

}  // namespace strata

#endif  // STRATA_COMMON_CODING_H_
