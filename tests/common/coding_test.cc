#include "common/coding.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "common/random.h"
#include "util/test_util.h"

namespace strata {
namespace {

int Sign(int v) { return (v > 0) - (v < 0); }

std::vector<uint64_t> InterestingValues64() {
  std::vector<uint64_t> v = {0, 1, 127, 128, 255, 256, 16383, 16384, UINT32_MAX, UINT64_MAX};
  for (int bit = 0; bit < 64; bit++) {
    const uint64_t p = uint64_t{1} << bit;
    v.push_back(p);
    v.push_back(p - 1);
    v.push_back(p + 1);
  }
  return v;
}

TEST(CodingTest, FixedIsLittleEndian) {
  std::string s;
  PutFixed16(&s, 0x0201);
  PutFixed32(&s, 0x06050403);
  PutFixed64(&s, 0x0e0d0c0b0a090807ULL);
  ASSERT_EQ(s.size(), 14u);
  for (size_t i = 0; i < s.size(); i++) EXPECT_EQ(static_cast<uint8_t>(s[i]), i + 1) << i;
}

TEST(CodingTest, FixedRoundTrip) {
  std::string s;
  const std::vector<uint64_t> values = InterestingValues64();
  for (uint64_t v : values) {
    PutFixed16(&s, static_cast<uint16_t>(v));
    PutFixed32(&s, static_cast<uint32_t>(v));
    PutFixed64(&s, v);
  }
  Slice in(s);
  for (uint64_t v : values) {
    uint16_t a;
    uint32_t b;
    uint64_t c;
    ASSERT_TRUE(GetFixed16(&in, &a));
    ASSERT_TRUE(GetFixed32(&in, &b));
    ASSERT_TRUE(GetFixed64(&in, &c));
    EXPECT_EQ(a, static_cast<uint16_t>(v));
    EXPECT_EQ(b, static_cast<uint32_t>(v));
    EXPECT_EQ(c, v);
  }
  EXPECT_TRUE(in.empty());
}

TEST(CodingTest, FixedTruncated) {
  std::string s(7, 'x');
  Slice in(s);
  uint64_t v64;
  EXPECT_FALSE(GetFixed64(&in, &v64));
  EXPECT_EQ(in.size(), 7u);  // nothing consumed
  in = Slice(s.data(), 3);
  uint32_t v32;
  EXPECT_FALSE(GetFixed32(&in, &v32));
  in = Slice(s.data(), 1);
  uint16_t v16;
  EXPECT_FALSE(GetFixed16(&in, &v16));
}

TEST(CodingTest, BigEndianOrdersLikeNumbers) {
  const std::vector<uint64_t> values = InterestingValues64();
  for (uint64_t a : values) {
    char ea[8];
    EncodeBigEndian64(ea, a);
    EXPECT_EQ(DecodeBigEndian64(ea), a);
    for (uint64_t b : values) {
      char eb[8];
      EncodeBigEndian64(eb, b);
      EXPECT_EQ(Sign(std::memcmp(ea, eb, 8)), a < b ? -1 : (a > b ? 1 : 0)) << a << " " << b;
    }
  }
  char e16[2];
  EncodeBigEndian16(e16, 0x1234);
  EXPECT_EQ(static_cast<uint8_t>(e16[0]), 0x12);
  EXPECT_EQ(static_cast<uint8_t>(e16[1]), 0x34);
  EXPECT_EQ(DecodeBigEndian16(e16), 0x1234);
  EncodeBigEndian16(e16, 0xffff);
  EXPECT_EQ(DecodeBigEndian16(e16), 0xffff);
}

TEST(CodingTest, VarintKnownEncodings) {
  std::string s;
  PutVarint32(&s, 0);
  EXPECT_EQ(s, std::string("\x00", 1));
  s.clear();
  PutVarint32(&s, 127);
  EXPECT_EQ(s, "\x7f");
  s.clear();
  PutVarint32(&s, 300);
  EXPECT_EQ(s, "\xac\x02");
  s.clear();
  PutVarint64(&s, UINT64_MAX);
  EXPECT_EQ(s, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01");
  s.clear();
  PutVarint32(&s, UINT32_MAX);
  EXPECT_EQ(s, "\xff\xff\xff\xff\x0f");
}

TEST(CodingTest, Varint64RoundTrip) {
  std::string s;
  const std::vector<uint64_t> values = InterestingValues64();
  for (uint64_t v : values) PutVarint64(&s, v);
  Slice in(s);
  for (uint64_t v : values) {
    const size_t before = in.size();
    uint64_t got;
    ASSERT_TRUE(GetVarint64(&in, &got));
    EXPECT_EQ(got, v);
    EXPECT_EQ(before - in.size(), static_cast<size_t>(VarintLength(v))) << v;
  }
  EXPECT_TRUE(in.empty());
}

TEST(CodingTest, Varint32RoundTrip) {
  std::string s;
  std::vector<uint32_t> values;
  for (uint64_t v : InterestingValues64()) {
    if (v <= UINT32_MAX) values.push_back(static_cast<uint32_t>(v));
  }
  for (uint32_t v : values) PutVarint32(&s, v);
  Slice in(s);
  for (uint32_t v : values) {
    uint32_t got;
    ASSERT_TRUE(GetVarint32(&in, &got));
    EXPECT_EQ(got, v);
  }
  EXPECT_TRUE(in.empty());
}

TEST(CodingTest, EncodeVarintPointerForm) {
  char buf[kMaxVarint64Length];
  for (uint64_t v : InterestingValues64()) {
    char* end = EncodeVarint64(buf, v);
    ASSERT_EQ(end - buf, VarintLength(v));
    ASSERT_LE(end - buf, kMaxVarint64Length);
    uint64_t got;
    EXPECT_EQ(GetVarint64Ptr(buf, end, &got), end);
    EXPECT_EQ(got, v);
    if (v <= UINT32_MAX) {
      char* end32 = EncodeVarint32(buf, static_cast<uint32_t>(v));
      ASSERT_LE(end32 - buf, kMaxVarint32Length);
      uint32_t got32;
      EXPECT_EQ(GetVarint32Ptr(buf, end32, &got32), end32);
      EXPECT_EQ(got32, v);
    }
  }
}

TEST(CodingTest, VarintTruncatedFails) {
  for (uint64_t v : InterestingValues64()) {
    std::string s;
    PutVarint64(&s, v);
    for (size_t len = 0; len < s.size(); len++) {
      Slice in(s.data(), len);
      uint64_t got = 12345;
      EXPECT_FALSE(GetVarint64(&in, &got)) << v << " cut to " << len;
      EXPECT_EQ(in.size(), len);  // nothing consumed
      EXPECT_EQ(got, 12345u);     // nothing written
    }
  }
}

TEST(CodingTest, Varint64Overflow) {
  uint64_t v;
  // Ten bytes whose last one carries more than the one bit left.
  std::string s("\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02", 10);
  Slice in(s);
  EXPECT_FALSE(GetVarint64(&in, &v));
  // The continuation bit on the tenth byte: an eleven-byte varint.
  s = std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\x81\x00", 11);
  in = Slice(s);
  EXPECT_FALSE(GetVarint64(&in, &v));
  // Eleven bytes of continuation: never terminates within the limit.
  s = std::string(11, '\x80');
  in = Slice(s);
  EXPECT_FALSE(GetVarint64(&in, &v));
  // The largest value is fine.
  s = std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10);
  in = Slice(s);
  ASSERT_TRUE(GetVarint64(&in, &v));
  EXPECT_EQ(v, UINT64_MAX);
}

TEST(CodingTest, Varint32Overflow) {
  uint32_t v;
  std::string s;
  PutVarint64(&s, uint64_t{UINT32_MAX} + 1);
  Slice in(s);
  EXPECT_FALSE(GetVarint32(&in, &v));
  EXPECT_EQ(in.size(), s.size());
  // A small value spelled in six bytes is longer than any 32-bit varint.
  s = std::string("\x81\x80\x80\x80\x80\x00", 6);
  in = Slice(s);
  EXPECT_FALSE(GetVarint32(&in, &v));
  s = std::string("\xff\xff\xff\xff\x1f", 5);  // 2^35 - 1
  in = Slice(s);
  EXPECT_FALSE(GetVarint32(&in, &v));
}

TEST(CodingTest, RandomGarbageNeverOverreads) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Random rnd(seed);
  for (int i = 0; i < 20000; i++) {
    // Decode from a heap buffer of exactly the garbage's size, so a read past
    // the limit is caught by sanitizers.
    const std::string garbage = rnd.RandomBytes(rnd.Uniform(12));
    std::unique_ptr<char[]> buf(new char[garbage.size() + 1]);
    std::memcpy(buf.get(), garbage.data(), garbage.size());
    uint64_t v;
    const char* end = GetVarint64Ptr(buf.get(), buf.get() + garbage.size(), &v);
    if (end != nullptr) {
      ASSERT_LE(end, buf.get() + garbage.size());
      // Whatever decoded re-encodes to a value that decodes the same.
      std::string again;
      PutVarint64(&again, v);
      Slice in(again);
      uint64_t v2;
      ASSERT_TRUE(GetVarint64(&in, &v2));
      EXPECT_EQ(v2, v);
    }
  }
}

TEST(CodingTest, LengthPrefixed) {
  std::string s;
  const std::vector<std::string> values = {"", "a", std::string(200, 'x'),
                                           std::string("\0\xff\0", 3), std::string(70000, 'z')};
  for (const auto& v : values) PutLengthPrefixedSlice(&s, v);
  Slice in(s);
  for (const auto& v : values) {
    Slice got;
    ASSERT_TRUE(GetLengthPrefixedSlice(&in, &got));
    EXPECT_EQ(got.ToString(), v);
  }
  EXPECT_TRUE(in.empty());
  Slice got;
  EXPECT_FALSE(GetLengthPrefixedSlice(&in, &got));
}

TEST(CodingTest, LengthPrefixedTruncated) {
  std::string s;
  PutLengthPrefixedSlice(&s, "hello world");
  for (size_t len = 0; len < s.size(); len++) {
    Slice in(s.data(), len);
    Slice got;
    EXPECT_FALSE(GetLengthPrefixedSlice(&in, &got)) << len;
  }
  // A length far past the end.
  std::string big;
  PutVarint32(&big, 1000);
  big += "short";
  Slice in(big);
  Slice got;
  EXPECT_FALSE(GetLengthPrefixedSlice(&in, &got));
}

TEST(CodingTest, MemcomparableKnownEncoding) {
  std::string s;
  PutMemcomparable(&s, std::string("a\0b", 3));
  EXPECT_EQ(s, std::string("a\0\xff"
                           "b\0\x01",
                           6));
  s.clear();
  PutMemcomparable(&s, "");
  EXPECT_EQ(s, std::string("\0\x01", 2));
  EXPECT_EQ(MemcomparableLength(std::string("\0\0", 2)), 6u);
}

std::string RandomMemcomparableInput(Random* rnd) {
  // A small alphabet around the escape bytes makes equal prefixes, embedded
  // zeros and 0xFF runs common.
  static const char kAlphabet[] = {'\x00', '\x01', '\xfe', '\xff', 'a'};
  std::string s(rnd->Uniform(8), '\0');
  for (char& c : s) c = kAlphabet[rnd->Uniform(sizeof(kAlphabet))];
  if (rnd->OneIn(8)) s += rnd->RandomBytes(rnd->Uniform(20));
  return s;
}

TEST(CodingTest, MemcomparableRoundTrip) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Random rnd(seed);
  for (int i = 0; i < 2000; i++) {
    const std::string a = RandomMemcomparableInput(&rnd);
    const std::string b = RandomMemcomparableInput(&rnd);
    std::string enc;
    PutMemcomparable(&enc, a);
    ASSERT_EQ(enc.size(), MemcomparableLength(a));
    PutMemcomparable(&enc, b);
    enc += "tail";
    // Pointer form writes the same bytes.
    std::string direct(MemcomparableLength(a), '\0');
    EXPECT_EQ(EncodeMemcomparable(direct.data(), a), direct.data() + direct.size());
    EXPECT_EQ(direct, enc.substr(0, direct.size()));

    Slice in(enc);
    std::string got;
    ASSERT_TRUE(GetMemcomparable(&in, &got));
    EXPECT_EQ(got, a);
    ASSERT_TRUE(GetMemcomparable(&in, &got));
    EXPECT_EQ(got, b);
    EXPECT_EQ(in.ToString(), "tail");

    Slice skip(enc);
    ASSERT_TRUE(SkipMemcomparable(&skip));
    ASSERT_TRUE(SkipMemcomparable(&skip));
    EXPECT_EQ(skip.ToString(), "tail");
  }
}

TEST(CodingTest, MemcomparablePreservesOrder) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Random rnd(seed);
  const int n = test::LongTests() ? 50000 : 5000;
  for (int i = 0; i < n; i++) {
    const std::string a = RandomMemcomparableInput(&rnd);
    std::string b = rnd.OneIn(3) ? a + RandomMemcomparableInput(&rnd)  // a prefix of b
                                 : RandomMemcomparableInput(&rnd);
    std::string ea, eb;
    PutMemcomparable(&ea, a);
    PutMemcomparable(&eb, b);
    ASSERT_EQ(Sign(Slice(ea).compare(eb)), Sign(Slice(a).compare(b)))
        << EscapeBytes(a) << " vs " << EscapeBytes(b);
    // Prefix-free: distinct values never encode as prefixes of each other,
    // so a suffix after the encoding cannot change the order.
    if (a != b) {
      EXPECT_FALSE(Slice(eb).starts_with(ea));
      EXPECT_EQ(Sign(Slice(ea + "\xff\xff").compare(eb + std::string(1, '\0'))),
                Sign(Slice(a).compare(b)));
    }
  }
}

TEST(CodingTest, MemcomparableSortsLikeBytes) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Random rnd(seed);
  std::vector<std::string> raw;
  for (int i = 0; i < 500; i++) raw.push_back(RandomMemcomparableInput(&rnd));
  std::vector<std::string> encoded;
  for (const auto& s : raw) {
    std::string e;
    PutMemcomparable(&e, s);
    encoded.push_back(e);
  }
  std::sort(raw.begin(), raw.end());
  std::sort(encoded.begin(), encoded.end());
  for (size_t i = 0; i < raw.size(); i++) {
    Slice in(encoded[i]);
    std::string decoded;
    ASSERT_TRUE(GetMemcomparable(&in, &decoded));
    EXPECT_EQ(decoded, raw[i]) << i;
  }
}

TEST(CodingTest, MemcomparableMalformed) {
  const std::vector<std::string> bad = {
      "",                             // nothing
      "abc",                          // no terminator
      std::string("ab\0", 3),         // zero at the end
      std::string("ab\0\x02", 4),     // zero followed by neither 0xFF nor 0x01
      std::string("\0\xff", 2),       // escaped zero, then the end
      std::string("a\0\x00\x01", 4),  // zero followed by zero
  };
  for (const auto& s : bad) {
    Slice in(s);
    std::string out;
    EXPECT_FALSE(GetMemcomparable(&in, &out)) << EscapeBytes(s);
    Slice skip(s);
    EXPECT_FALSE(SkipMemcomparable(&skip)) << EscapeBytes(s);
  }
}

TEST(CodingTest, EscapeAndHex) {
  EXPECT_EQ(EscapeBytes(std::string("ab\0\xff\\", 5)), "ab\\x00\\xff\\x5c");
  EXPECT_EQ(HexBytes(std::string("\x01\xab\x00", 3)), "01ab00");
  EXPECT_EQ(HexBytes(""), "");
}

TEST(CodingTest, EscapePrefixCutsLongValues) {
  EXPECT_EQ(EscapePrefix("short"), "short");
  EXPECT_EQ(EscapePrefix(std::string(64, 'x')), std::string(64, 'x'));
  EXPECT_EQ(EscapePrefix(std::string(65, 'x')), std::string(64, 'x') + "...(65 bytes)");
  EXPECT_EQ(EscapePrefix(std::string("a\0bcd", 5), 3), "a\\x00b...(5 bytes)");
  EXPECT_LT(EscapePrefix(std::string(1 << 20, '\xff')).size(), 300u);
}

}  // namespace
}  // namespace strata
