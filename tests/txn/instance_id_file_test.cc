// Tests of the instance-id file format (txn/FORMAT.md): the worked example,
// round trips, bit flips, truncation, unknown versions.
#include "txn/instance_id_file.h"

#include <gtest/gtest.h>

#include <string>

#include "common/coding.h"
#include "common/hash.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::txn {
namespace {

TEST(InstanceIdFileTest, WorkedExampleFromFormatDoc) {
  const std::string expected(
      "\x53\x54\x49\x4e"
      "\x01\x00"
      "\x00\x00"
      "\x07\x00\x00\x00\x00\x00\x00\x00"
      "\x69\xf9\xe4\xaa",
      kInstanceIdFileSize);
  EXPECT_EQ(EncodeInstanceIdFile(7), expected);
  uint64_t id = 0;
  ASSERT_OK(DecodeInstanceIdFile(expected, "f", &id));
  EXPECT_EQ(id, 7u);
}

TEST(InstanceIdFileTest, ReadWriteRoundTrip) {
  test::ScratchDir dir("instance");
  const std::string path = dir.Join("INSTANCE_ID");
  FileSystem* fs = FileSystem::Default();
  Result<uint64_t> id = ReadInstanceIdFile(fs, path);
  ASSERT_OK(id);
  EXPECT_EQ(*id, 0u);  // missing file: no earlier instance
  for (uint64_t v : {uint64_t{1}, uint64_t{2}, uint64_t{1} << 40, ~uint64_t{0}}) {
    ASSERT_OK(WriteInstanceIdFile(fs, path, v));
    id = ReadInstanceIdFile(fs, path);
    ASSERT_OK(id);
    EXPECT_EQ(*id, v);
  }
}

TEST(InstanceIdFileTest, EveryBitFlipIsCorruption) {
  const std::string good = EncodeInstanceIdFile(123456789);
  for (size_t byte = 0; byte < good.size(); byte++) {
    for (int bit = 0; bit < 8; bit++) {
      std::string bad = good;
      bad[byte] ^= static_cast<char>(1 << bit);
      uint64_t id = 0;
      Status s = DecodeInstanceIdFile(bad, "dir/INSTANCE_ID", &id);
      ASSERT_TRUE(s.IsCorruption()) << byte << "/" << bit << ": " << s.ToString();
      EXPECT_NE(s.message().find("dir/INSTANCE_ID"), std::string_view::npos);
    }
  }
}

TEST(InstanceIdFileTest, TruncationAndExtraBytesAreCorruption) {
  const std::string good = EncodeInstanceIdFile(9);
  uint64_t id = 0;
  for (size_t n = 0; n < good.size(); n++) {
    EXPECT_TRUE(DecodeInstanceIdFile(Slice(good.data(), n), "f", &id).IsCorruption()) << n;
  }
  EXPECT_TRUE(DecodeInstanceIdFile(good + '\0', "f", &id).IsCorruption());
}

TEST(InstanceIdFileTest, UnknownVersionIsNotSupported) {
  std::string v2 = EncodeInstanceIdFile(9).substr(0, 16);
  v2[4] = 2;
  PutFixed32(&v2, Checksum32(v2.data(), 16, 0x5354494e));
  uint64_t id = 0;
  Status s = DecodeInstanceIdFile(v2, "f", &id);
  EXPECT_TRUE(s.IsNotSupported()) << s.ToString();
}

}  // namespace
}  // namespace strata::txn
