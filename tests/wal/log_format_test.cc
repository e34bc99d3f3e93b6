// Tests of the log format helpers, including the worked example of FORMAT.md.
#include "wal/log_format.h"

#include <gtest/gtest.h>

#include "common/hash.h"
#include "util/status_matchers.h"
#include "wal/log_writer.h"
#include "wal_test_util.h"

namespace strata::wal {
namespace {

TEST(LogFormatTest, SegmentHeaderRoundTrip) {
  SegmentHeader h;
  h.segment_number = 123456789012ULL;
  h.segment_size = 64 << 20;
  h.first_sequence = 987654321;
  char buf[kSegmentHeaderSize];
  EncodeSegmentHeader(h, buf);
  SegmentHeader d;
  bool checksum_ok = false;
  ASSERT_OK(DecodeSegmentHeader(Slice(buf, sizeof(buf)), &d, &checksum_ok));
  EXPECT_TRUE(checksum_ok);
  EXPECT_EQ(d.format_version, kFormatVersion);
  EXPECT_EQ(d.block_size, kBlockSize);
  EXPECT_EQ(d.segment_number, h.segment_number);
  EXPECT_EQ(d.segment_size, h.segment_size);
  EXPECT_EQ(d.first_sequence, h.first_sequence);

  // Every single-bit flip is caught by the checksum (or the magic).
  for (size_t i = 0; i < sizeof(buf) * 8; i++) {
    buf[i / 8] ^= static_cast<char>(1 << (i % 8));
    Status s = DecodeSegmentHeader(Slice(buf, sizeof(buf)), &d, &checksum_ok);
    EXPECT_TRUE(s.IsCorruption()) << i;
    EXPECT_FALSE(checksum_ok);
    EXPECT_NE(s.message().find("bad segment header"), std::string::npos);
    buf[i / 8] ^= static_cast<char>(1 << (i % 8));
  }
  EXPECT_TRUE(DecodeSegmentHeader(Slice(buf, 10), &d).IsCorruption());
  char zeros[kSegmentHeaderSize] = {};
  EXPECT_TRUE(DecodeSegmentHeader(Slice(zeros, sizeof(zeros)), &d).IsCorruption());

  // Checksummed but nonsensical.
  h.block_size = 1000;
  EncodeSegmentHeader(h, buf);
  EXPECT_TRUE(DecodeSegmentHeader(Slice(buf, sizeof(buf)), &d, &checksum_ok).IsCorruption());
  EXPECT_TRUE(checksum_ok);
  h.block_size = kBlockSize;
  h.segment_size = kBlockSize + 1;
  EncodeSegmentHeader(h, buf);
  EXPECT_TRUE(DecodeSegmentHeader(Slice(buf, sizeof(buf)), &d).IsCorruption());
  h.segment_size = kBlockSize;
  h.format_version = 2;
  EncodeSegmentHeader(h, buf);
  EXPECT_TRUE(DecodeSegmentHeader(Slice(buf, sizeof(buf)), &d).IsNotSupported());
}

TEST(LogFormatTest, FragmentChecks) {
  char buf[64] = {};
  const uint64_t seg = (uint64_t{5} << 32) | 7;
  std::memcpy(buf + kFragmentHeaderSize, "payload", 7);
  FinishFragment(buf, FragmentType::kFirst, /*durable_before=*/true, seg, 7);
  FragmentView v;
  std::string why;
  ASSERT_EQ(CheckFragment(buf, sizeof(buf), 1000, seg, &v, &why), FragmentCheck::kValid);
  EXPECT_EQ(v.type, FragmentType::kFirst);
  EXPECT_TRUE(v.durable_before);
  EXPECT_EQ(static_cast<uint8_t>(buf[6]), 0x82);
  EXPECT_EQ(v.payload.ToString(), "payload");
  // As read from a later segment that recycled the file: stale, not bad.
  EXPECT_EQ(CheckFragment(buf, sizeof(buf), 1000, seg + 3, &v, &why), FragmentCheck::kStale);
  // Not a fragment of an earlier segment, though.
  EXPECT_EQ(CheckFragment(buf, sizeof(buf), 1000, seg - 1, &v, &why), FragmentCheck::kBad);
  // Too long for the block, or cut off by the end of the file.
  EXPECT_EQ(CheckFragment(buf, sizeof(buf), kFragmentHeaderSize + 6, seg, &v, &why),
            FragmentCheck::kBad);
  EXPECT_EQ(CheckFragment(buf, kFragmentHeaderSize + 6, 1000, seg, &v, &why), FragmentCheck::kBad);
  EXPECT_EQ(CheckFragment(buf, 5, 1000, seg, &v, &why), FragmentCheck::kBad);
  // Any flipped bit.
  for (size_t i = 0; i < (kFragmentHeaderSize + 7) * 8; i++) {
    buf[i / 8] ^= static_cast<char>(1 << (i % 8));
    EXPECT_EQ(CheckFragment(buf, sizeof(buf), 1000, seg, &v, &why), FragmentCheck::kBad) << i;
    buf[i / 8] ^= static_cast<char>(1 << (i % 8));
  }
  FinishFragment(buf, FragmentType::kLast, /*durable_before=*/false, seg, 7);
  ASSERT_EQ(CheckFragment(buf, sizeof(buf), 1000, seg, &v, &why), FragmentCheck::kValid);
  EXPECT_EQ(v.type, FragmentType::kLast);
  EXPECT_FALSE(v.durable_before);
  // Type 0 and types past LAST are refused, flag or not.
  for (uint8_t t : {0x00, 0x05, 0x45, 0x80, 0x85}) {
    buf[6] = static_cast<char>(t);
    EXPECT_EQ(CheckFragment(buf, sizeof(buf), 1000, seg, &v, &why), FragmentCheck::kBad) << +t;
  }
  char zeros[kFragmentHeaderSize] = {};
  EXPECT_EQ(CheckFragment(zeros, sizeof(zeros), 1000, seg, &v, &why), FragmentCheck::kZero);
  EXPECT_EQ(CheckFragment(zeros, 4, 1000, seg, &v, &why), FragmentCheck::kZero);
}

TEST(LogFormatTest, RecordPrefix) {
  char buf[kMaxRecordPrefixSize];
  for (uint64_t count : {uint64_t{1}, uint64_t{127}, uint64_t{128}, UINT64_MAX}) {
    const size_t n = EncodeRecordPrefix(buf, 0x0102030405060708ULL, count);
    Slice in(buf, n);
    SequenceNumber first;
    uint64_t c;
    ASSERT_TRUE(DecodeRecordPrefix(&in, &first, &c));
    EXPECT_EQ(first, 0x0102030405060708ULL);
    EXPECT_EQ(c, count);
    EXPECT_TRUE(in.empty());
    Slice cut(buf, n - 1);
    EXPECT_FALSE(DecodeRecordPrefix(&cut, &first, &c));
  }
}

TEST(LogFormatTest, FileNames) {
  EXPECT_EQ(SegmentFileName(7), "0000000007.log");
  EXPECT_EQ(SpareFileName(12), "0000000012.spare");
  uint64_t n;
  LogFileKind k;
  ASSERT_TRUE(ParseLogFileName("0000000007.log", &n, &k));
  EXPECT_EQ(n, 7u);
  EXPECT_EQ(k, LogFileKind::kSegment);
  ASSERT_TRUE(ParseLogFileName("12345678901.spare", &n, &k));
  EXPECT_EQ(n, 12345678901ULL);
  EXPECT_EQ(k, LogFileKind::kSpare);
  for (const char* bad : {"7.log", "000000000a.log", "0000000007.log.tmp", "0000000007.LOG", "LOCK",
                          "0000000007", ".log"}) {
    EXPECT_FALSE(ParseLogFileName(bad, &n, &k)) << bad;
  }
}

// The worked example in wal/FORMAT.md, byte for byte: a 64 MiB segment 1
// starting at sequence 42, holding one record (42, 3 sequence numbers,
// payload "hello"), followed by the end-of-data marker.
TEST(LogFormatTest, WorkedExampleOfFormatDoc) {
  strata::test::ScratchDir dir("wal");
  std::unique_ptr<LogWriter> w;
  LogOptions o;
  ASSERT_OK(LogWriter::Open(o, dir.path(), 42, nullptr, &w));
  WriteRequest r;
  r.payload = "hello";
  r.sequence_count = 3;
  ASSERT_OK(w->Write(&r));
  ASSERT_OK(w->Close());
  std::string bytes;
  ASSERT_OK(ReadFileToString(FileSystem::Default(), dir.Join("0000000001.log"), &bytes));
  ASSERT_EQ(bytes.size(), uint64_t{64} << 20);
  const std::string expected =
      // segment header
      "535452415441574c"  // magic "STRATAWL"
      "01000000"          // format_version 1
      "00800000"          // block_size 32768
      "0100000000000000"  // segment_number 1
      "0000000400000000"  // segment_size 67108864
      "2a00000000000000"  // first_sequence 42
      "be67b48c"          // header checksum
      // fragment at offset 44
      "4fd76590"          // checksum
      "0e00"              // length 14
      "81"                // type FULL | kDurableBeforeFlag
      "01000000"          // segment 1 (low 32 bits)
      "2a00000000000000"  // record prefix: first_sequence 42
      "03"                //   sequence_count 3 (varint)
      "68656c6c6f"        // payload "hello"
      // end-of-data marker at offset 69
      "0000000000000000000000";
  EXPECT_EQ(HexBytes(Slice(bytes.data(), 80)), expected);
}

}  // namespace
}  // namespace strata::wal
