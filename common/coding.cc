#include "common/coding.h"

#include <cstring>

namespace strata {

void PutFixed16(std::string* dst, uint16_t v) {
  char buf[2];
  EncodeFixed16(buf, v);
  dst->append(buf, 2);
}
void PutFixed32(std::string* dst, uint32_t v) {
  char buf[4];
  EncodeFixed32(buf, v);
  dst->append(buf, 4);
}
void PutFixed64(std::string* dst, uint64_t v) {
  char buf[8];
  EncodeFixed64(buf, v);
  dst->append(buf, 8);
}

char* EncodeVarint32(char* dst, uint32_t v) { return EncodeVarint64(dst, v); }

char* EncodeVarint64(char* dst, uint64_t v) {
  auto* p = reinterpret_cast<unsigned char*>(dst);
  while (v >= 0x80) {
    *p++ = static_cast<unsigned char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<unsigned char>(v);
  return reinterpret_cast<char*>(p);
}

void PutVarint32(std::string* dst, uint32_t v) {
  char buf[kMaxVarint32Length];
  dst->append(buf, EncodeVarint32(buf, v) - buf);
}
void PutVarint64(std::string* dst, uint64_t v) {
  char buf[kMaxVarint64Length];
  dst->append(buf, EncodeVarint64(buf, v) - buf);
}

void PutLengthPrefixedSlice(std::string* dst, const Slice& value) {
  PutVarint32(dst, static_cast<uint32_t>(value.size()));
  dst->append(value.data(), value.size());
}

int VarintLength(uint64_t v) {
  int len = 1;
  while (v >= 0x80) {
    v >>= 7;
    len++;
  }
  return len;
}

const char* GetVarint64PtrSlow(const char* p, const char* limit, uint64_t* value) {
  uint64_t result = 0;
  for (uint32_t shift = 0; shift <= 63 && p < limit; shift += 7) {
    uint64_t byte = static_cast<unsigned char>(*p);
    p++;
    if (shift == 63 && byte > 1) return nullptr;  // overflows 64 bits
    if (byte & 0x80) {
      result |= (byte & 0x7f) << shift;
    } else {
      result |= byte << shift;
      *value = result;
      return p;
    }
  }
  return nullptr;
}

const char* GetVarint32PtrSlow(const char* p, const char* limit, uint32_t* value) {
  uint64_t v;
  const char* q = GetVarint64PtrSlow(p, limit, &v);
  if (q == nullptr || v > UINT32_MAX || q - p > kMaxVarint32Length) return nullptr;
  *value = static_cast<uint32_t>(v);
  return q;
}

bool GetVarint32(Slice* input, uint32_t* value) {
  const char* q = GetVarint32Ptr(input->data(), input->data() + input->size(), value);
  if (q == nullptr) return false;
  *input = Slice(q, input->data() + input->size() - q);
  return true;
}
bool GetVarint64(Slice* input, uint64_t* value) {
  const char* q = GetVarint64Ptr(input->data(), input->data() + input->size(), value);
  if (q == nullptr) return false;
  *input = Slice(q, input->data() + input->size() - q);
  return true;
}

bool GetFixed16(Slice* input, uint16_t* value) {
  if (input->size() < 2) return false;
  *value = DecodeFixed16(input->data());
  input->remove_prefix(2);
  return true;
}
bool GetFixed32(Slice* input, uint32_t* value) {
  if (input->size() < 4) return false;
  *value = DecodeFixed32(input->data());
  input->remove_prefix(4);
  return true;
}
bool GetFixed64(Slice* input, uint64_t* value) {
  if (input->size() < 8) return false;
  *value = DecodeFixed64(input->data());
  input->remove_prefix(8);
  return true;
}

bool GetLengthPrefixedSlice(Slice* input, Slice* result) {
  uint32_t len;
  if (!GetVarint32(input, &len) || input->size() < len) return false;
  *result = Slice(input->data(), len);
  input->remove_prefix(len);
  return true;
}

size_t MemcomparableLength(const Slice& value) {
  size_t zeros = 0;
  for (char c : value.view()) zeros += (c == 0);
  return value.size() + zeros + 2;
}

char* EncodeMemcomparable(char* dst, const Slice& value) {
  for (char c : value.view()) {
    *dst++ = c;
    if (c == 0) *dst++ = static_cast<char>(0xff);
  }
  *dst++ = 0;
  *dst++ = 1;
  return dst;
}

void PutMemcomparable(std::string* dst, const Slice& value) {
  size_t old = dst->size();
  dst->resize(old + MemcomparableLength(value));
  EncodeMemcomparable(dst->data() + old, value);
}

bool GetMemcomparable(Slice* input, std::string* result) {
  result->clear();
  const char* p = input->data();
  const char* limit = p + input->size();
  // Copies the runs between 0x00 bytes whole.
  while (p < limit) {
    const char* z = static_cast<const char*>(std::memchr(p, 0, limit - p));
    if (z == nullptr) return false;
    result->append(p, z - p);
    p = z + 1;
    if (p == limit) return false;
    const unsigned char next = static_cast<unsigned char>(*p++);
    if (next == 0x01) {
      *input = Slice(p, limit - p);
      return true;
    }
    if (next != 0xff) return false;
    result->push_back(0);
  }
  return false;
}

bool SkipMemcomparable(Slice* input) {
  const char* p = input->data();
  const char* limit = p + input->size();
  while (p < limit) {
    const void* z = std::memchr(p, 0, limit - p);
    if (z == nullptr) return false;
    p = static_cast<const char*>(z) + 1;
    if (p == limit) return false;
    unsigned char next = static_cast<unsigned char>(*p++);
    if (next == 0x01) {
      *input = Slice(p, limit - p);
      return true;
    }
    if (next != 0xff) return false;
  }
  return false;
}

std::string EscapeBytes(const Slice& value) {
  static const char kHex[] = "0123456789abcdef";
  std::string r;
  r.reserve(value.size());
  for (char ch : value.view()) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      r.push_back(static_cast<char>(c));
    } else {
      r += "\\x";
      r.push_back(kHex[c >> 4]);
      r.push_back(kHex[c & 15]);
    }
  }
  return r;
}

std::string EscapePrefix(const Slice& value, size_t max_bytes) {
  if (value.size() <= max_bytes) return EscapeBytes(value);
  return EscapeBytes(Slice(value.data(), max_bytes)) + "...(" + std::to_string(value.size()) +
         " bytes)";
}

std::string HexBytes(const Slice& value) {
  static const char kHex[] = "0123456789abcdef";
  std::string r;
  r.reserve(value.size() * 2);
  for (char ch : value.view()) {
    unsigned char c = static_cast<unsigned char>(ch);
    r.push_back(kHex[c >> 4]);
    r.push_back(kHex[c & 15]);
  }
  return r;
}

}  // namespace strata
