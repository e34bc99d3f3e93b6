// Tests of the ceiling file format (txn/FORMAT.md): the worked example, slot
// alternation, torn and bit-flipped slots, truncation, unknown versions.
#include "txn/ceiling_file.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <memory>
#include <string>

#include "common/coding.h"
#include "common/fault_injection_fs.h"
#include "common/hash.h"
#include "txn/timestamp.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::txn {
namespace {

constexpr uint64_t kExampleCeiling = 0x062f3f95cee3ffffull;

std::string ReadAll(FileSystem* fs, const std::string& path) {
  std::string data;
  EXPECT_OK(ReadFileToString(fs, path, &data));
  return data;
}

void WriteAll(const std::string& path, const std::string& data) {
  ASSERT_OK(WriteFileAtomically(FileSystem::Default(), path, data));
}

TEST(CeilingFileTest, WorkedExampleFromFormatDoc) {
  EXPECT_EQ(kExampleCeiling, ComposeTimestamp(1'700'000'003'000, kLogicalMask));
  const std::string expected(
      "\x53\x54\x43\x4c"
      "\x01\x00"
      "\x00\x00"
      "\xff\xff\xe3\xce\x95\x3f\x2f\x06"
      "\x30\x51\x27\x1e",
      CeilingFile::kRecordSize);
  EXPECT_EQ(CeilingFile::EncodeRecord(kExampleCeiling), expected);
  uint64_t ceiling = 0;
  ASSERT_OK(CeilingFile::DecodeRecord(expected, &ceiling));
  EXPECT_EQ(ceiling, kExampleCeiling);
}

TEST(CeilingFileTest, CreateWriteAlternateReopen) {
  test::ScratchDir dir("ceiling");
  const std::string path = dir.Join("TSO_CEILING");
  FileSystem* fs = FileSystem::Default();
  std::unique_ptr<CeilingFile> file;
  ASSERT_OK(CeilingFile::Open(fs, path, &file));
  EXPECT_EQ(file->ceiling(), 0u);
  EXPECT_EQ(file->durable_slot(), 0);
  ASSERT_OK(file->Write(kExampleCeiling));
  EXPECT_EQ(file->durable_slot(), 1);
  // The file now looks as in the worked example.
  std::string image = ReadAll(fs, path);
  ASSERT_EQ(image.size(), CeilingFile::kFileSize);
  EXPECT_EQ(image.substr(0, CeilingFile::kRecordSize), CeilingFile::EncodeRecord(0));
  EXPECT_EQ(image.substr(CeilingFile::kSlotSize, CeilingFile::kRecordSize),
            CeilingFile::EncodeRecord(kExampleCeiling));
  ASSERT_OK(file->Write(kExampleCeiling + 10));
  EXPECT_EQ(file->durable_slot(), 0);
  file.reset();
  ASSERT_OK(CeilingFile::Open(fs, path, &file));
  EXPECT_EQ(file->ceiling(), kExampleCeiling + 10);
  EXPECT_EQ(file->durable_slot(), 0);
}

TEST(CeilingFileTest, FailedWriteKeepsSlotAndCeiling) {
  test::ScratchDir dir("ceiling");
  const std::string path = dir.Join("TSO_CEILING");
  FaultInjectionFileSystem fs;
  std::unique_ptr<CeilingFile> file;
  ASSERT_OK(CeilingFile::Open(&fs, path, &file));
  ASSERT_OK(file->Write(100));
  EXPECT_EQ(file->durable_slot(), 1);
  fs.FailAfter(FaultOp::kSync, 0, 1, EIO);
  Status s = file->Write(200);
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_NE(s.message().find("TSO_CEILING"), std::string_view::npos) << s.ToString();
  EXPECT_EQ(file->ceiling(), 100u);
  EXPECT_EQ(file->durable_slot(), 1);
  // The retry goes to the same slot (0), never over the durable 100.
  ASSERT_OK(file->Write(300));
  EXPECT_EQ(file->durable_slot(), 0);
  EXPECT_EQ(file->ceiling(), 300u);
}

// Every single-bit flip in either slot's record: the damaged slot is ignored,
// the other one read; the result is never a value that was not written.
TEST(CeilingFileTest, BitFlipsAreDetected) {
  std::string image(CeilingFile::kFileSize, '\0');
  const std::string a = CeilingFile::EncodeRecord(1000);
  const std::string b = CeilingFile::EncodeRecord(2000);
  image.replace(0, a.size(), a);
  image.replace(CeilingFile::kSlotSize, b.size(), b);
  uint64_t ceiling = 0;
  int slot = -1;
  ASSERT_OK(CeilingFile::DecodeFile(image, "f", &ceiling, &slot));
  EXPECT_EQ(ceiling, 2000u);
  EXPECT_EQ(slot, 1);
  for (int s = 0; s < 2; s++) {
    for (size_t byte = 0; byte < CeilingFile::kRecordSize; byte++) {
      for (int bit = 0; bit < 8; bit++) {
        std::string damaged = image;
        damaged[s * CeilingFile::kSlotSize + byte] ^= static_cast<char>(1 << bit);
        uint64_t c = 0;
        Status st = CeilingFile::DecodeFile(damaged, "f", &c, &slot);
        ASSERT_OK(st) << "slot " << s << " byte " << byte << " bit " << bit;
        EXPECT_EQ(c, s == 0 ? 2000u : 1000u);
        EXPECT_EQ(slot, 1 - s);
      }
    }
  }
  // Both damaged: Corruption naming both offsets.
  std::string both = image;
  both[3] ^= 1;
  both[CeilingFile::kSlotSize + 9] ^= 1;
  Status st = CeilingFile::DecodeFile(both, "dir/TSO_CEILING", &ceiling, &slot);
  EXPECT_TRUE(st.IsCorruption()) << st.ToString();
  EXPECT_NE(st.message().find("dir/TSO_CEILING"), std::string_view::npos);
  EXPECT_NE(st.message().find("offset 4096"), std::string_view::npos) << st.ToString();
  // One damaged, one empty.
  std::string lonely(CeilingFile::kFileSize, '\0');
  lonely.replace(0, a.size(), a);
  lonely[12] ^= 0x40;
  EXPECT_TRUE(CeilingFile::DecodeFile(lonely, "f", &ceiling, &slot).IsCorruption());
}

TEST(CeilingFileTest, TruncatedOrOversizedFileIsCorruption) {
  std::string image(CeilingFile::kFileSize, '\0');
  const std::string a = CeilingFile::EncodeRecord(1000);
  image.replace(0, a.size(), a);
  uint64_t ceiling = 0;
  int slot = 0;
  for (size_t n = 0; n < CeilingFile::kFileSize; n += (n < 64 ? 1 : 509)) {
    Status s = CeilingFile::DecodeFile(Slice(image.data(), n), "f", &ceiling, &slot);
    EXPECT_TRUE(s.IsCorruption()) << n << ": " << s.ToString();
  }
  EXPECT_TRUE(CeilingFile::DecodeFile(image + "x", "f", &ceiling, &slot).IsCorruption());

  // And through Open.
  test::ScratchDir dir("ceiling");
  const std::string path = dir.Join("TSO_CEILING");
  WriteAll(path, image.substr(0, 100));
  std::unique_ptr<CeilingFile> file;
  Status s = CeilingFile::Open(FileSystem::Default(), path, &file);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find(path), std::string_view::npos);
}

TEST(CeilingFileTest, UnknownVersionIsNotSupported) {
  // A record of version 2 with a valid checksum, as a newer build would write.
  std::string v2 = CeilingFile::EncodeRecord(5).substr(0, 16);
  v2[4] = 2;
  PutFixed32(&v2, Checksum32(v2.data(), 16, 0x5354434c));
  uint64_t c = 0;
  Status s = CeilingFile::DecodeRecord(v2, &c);
  EXPECT_TRUE(s.IsNotSupported()) << s.ToString();
  // In a file it stops the open even though the other slot is fine.
  std::string image(CeilingFile::kFileSize, '\0');
  const std::string v1 = CeilingFile::EncodeRecord(1000);
  image.replace(0, v1.size(), v1);
  image.replace(CeilingFile::kSlotSize, v2.size(), v2);
  int slot = 0;
  s = CeilingFile::DecodeFile(image, "f", &c, &slot);
  EXPECT_TRUE(s.IsNotSupported()) << s.ToString();

  EXPECT_TRUE(CeilingFile::DecodeRecord(std::string(20, '\0'), &c).IsNotFound());
  EXPECT_TRUE(CeilingFile::DecodeRecord(v1.substr(0, 19), &c).IsCorruption());
  // A nonzero reserved field under a valid checksum is damage, not a feature.
  std::string reserved = v1.substr(0, 16);
  reserved[6] = 1;
  PutFixed32(&reserved, Checksum32(reserved.data(), 16, 0x5354434c));
  EXPECT_TRUE(CeilingFile::DecodeRecord(reserved, &c).IsCorruption());
}

}  // namespace
}  // namespace strata::txn
