// Lock and write records: round trips, the worked examples of txn/FORMAT.md
// byte for byte, and damaged records reported as Corruption.
#include "txn/records.h"

#include <gtest/gtest.h>

#include <string>

#include "common/coding.h"
#include "strata/slice.h"
#include "txn/lock_resolver.h"
#include "util/status_matchers.h"

namespace strata::txn {
namespace {

std::string Hex(const std::string& s) { return HexBytes(Slice(s.data(), s.size())); }

LockRecord ExampleLock() {
  LockRecord l;
  l.kind = MutationKind::kPut;
  l.start_ts = 7;
  l.wall_millis = 1700000000000;
  l.ttl_millis = 3000;
  l.min_commit_ts = 8;
  l.owner = Owner{4, 17};
  l.primary_table = "bank";
  l.primary_row = "Bob";
  l.primary_column = "bal";
  l.has_inline_value = true;
  l.inline_value = "3";
  return l;
}

TEST(RecordsTest, FormatExamplesByteForByte) {
  EXPECT_EQ(Hex(EncodeLock(ExampleLock())),
            "010101"
            "0700000000000000"
            "80d095ffbc31"
            "b817"
            "0800000000000000"
            "0411"
            "0462616e6b"
            "03426f62"
            "0362616c"
            "0133");
  EXPECT_EQ(Hex(EncodeWrite(CommitRecordFor(ExampleLock()))),
            "010101"
            "0700000000000000"
            "0133");
}

TEST(RecordsTest, RoundTrips) {
  LockRecord lock = ExampleLock();
  LockRecord back;
  ASSERT_OK(DecodeLock(EncodeLock(lock), &back));
  EXPECT_EQ(back, lock);
  lock.kind = MutationKind::kLock;
  lock.has_inline_value = false;
  lock.inline_value.clear();
  lock.primary_row = std::string("\0\xff", 2);
  ASSERT_OK(DecodeLock(EncodeLock(lock), &back));
  EXPECT_EQ(back, lock);

  for (WriteKind kind :
       {WriteKind::kPut, WriteKind::kDelete, WriteKind::kLock, WriteKind::kRollback}) {
    WriteRecord w;
    w.kind = kind;
    w.start_ts = 123456789012345;
    if (kind == WriteKind::kRollback) w.rolled_back_by = 99;
    if (kind == WriteKind::kPut) {
      w.has_inline_value = true;
      w.inline_value = std::string(200, 'v');
    }
    WriteRecord wb;
    ASSERT_OK(DecodeWrite(EncodeWrite(w), &wb));
    EXPECT_EQ(wb, w) << WriteKindName(kind);
  }
}

TEST(RecordsTest, DamagedRecordsAreCorruption) {
  const std::string lock = EncodeLock(ExampleLock());
  LockRecord l;
  for (size_t n = 0; n < lock.size(); ++n) {
    EXPECT_EQ(DecodeLock(lock.substr(0, n), &l).code(), Status::Code::kCorruption) << n;
  }
  EXPECT_EQ(DecodeLock(lock + "x", &l).code(), Status::Code::kCorruption);
  std::string bad = lock;
  bad[1] = 9;  // unknown kind
  EXPECT_EQ(DecodeLock(bad, &l).code(), Status::Code::kCorruption);
  bad = lock;
  bad[2] = 4;  // unknown flag
  EXPECT_EQ(DecodeLock(bad, &l).code(), Status::Code::kCorruption);
  bad = lock;
  bad[0] = 2;  // a newer version
  EXPECT_EQ(DecodeLock(bad, &l).code(), Status::Code::kNotSupported);

  WriteRecord w;
  w.kind = WriteKind::kDelete;
  w.start_ts = 5;
  std::string write = EncodeWrite(w);
  write[2] = 1;  // an inline value on a delete
  WriteRecord wb;
  EXPECT_EQ(DecodeWrite(write + std::string("\x01x", 2), &wb).code(), Status::Code::kCorruption);
}

TEST(RecordsTest, TransactionalSchema) {
  TableSchema schema = TransactionalSchema({});
  EXPECT_TRUE(IsTransactionalSchema(schema));
  ASSERT_EQ(schema.families.size(), 5u);
  for (size_t i = 0; i < schema.families.size(); ++i) {
    EXPECT_EQ(schema.families[i].locality_group, schema.locality_groups[i].name);
    EXPECT_EQ(schema.locality_groups[i].in_memory,
              schema.families[i].name == kLockFamily || schema.families[i].name == kNotifyFamily);
  }
  // Column markers hide by timestamp in `lock` alone: `notify` relies on
  // the ordinary rule. A table made before `lock` had it is transactional.
  for (const ColumnFamilyOptions& f : schema.families) {
    EXPECT_EQ(f.column_markers_hide_by_timestamp, f.name == kLockFamily) << f.name;
  }
  schema.families[2].column_markers_hide_by_timestamp = false;
  EXPECT_TRUE(IsTransactionalSchema(schema));
  schema.locality_groups[2].in_memory = false;
  EXPECT_FALSE(IsTransactionalSchema(schema));
}

TEST(RecordsTest, TransactionalSchemaGroupOptions) {
  // By default every group has LocalityGroupOptions' defaults, but for the
  // 1 MiB write buffers of `lock` and `notify`.
  TableSchema schema = TransactionalSchema({});
  ASSERT_EQ(schema.locality_groups.size(), 5u);
  for (const LocalityGroupOptions& g : schema.locality_groups) {
    SCOPED_TRACE(g.name);
    EXPECT_EQ(g.compression, Compression::kNone);
    EXPECT_EQ(g.compression_level, 3);
    EXPECT_EQ(g.block_size, 16u << 10);
    EXPECT_EQ(g.bloom_bits_per_key, 10);
    const bool small = g.name == kLockFamily || g.name == kNotifyFamily;
    EXPECT_EQ(g.write_buffer_size, small ? uint64_t{1} << 20 : 0u);
  }
  // `lock` takes lock_group, `notify` notify_group, the others data_group;
  // names and in_memory come from the schema.
  TransactionalTableOptions options;
  options.data_group.name = "ignored";
  options.data_group.in_memory = true;
  options.data_group.compression = Compression::kZstd;
  options.data_group.block_size = 4 << 10;
  options.lock_group.in_memory = false;
  options.lock_group.bloom_bits_per_key = 0;
  options.lock_group.write_buffer_size = 64 << 10;
  options.notify_group.write_buffer_size = 128 << 10;
  schema = TransactionalSchema(options);
  EXPECT_TRUE(IsTransactionalSchema(schema));
  for (const LocalityGroupOptions& g : schema.locality_groups) {
    SCOPED_TRACE(g.name);
    const bool lock = g.name == kLockFamily;
    const bool notify = g.name == kNotifyFamily;
    EXPECT_EQ(g.in_memory, lock || notify);
    EXPECT_EQ(g.compression, lock || notify ? Compression::kNone : Compression::kZstd);
    EXPECT_EQ(g.block_size, lock || notify ? 16u << 10 : 4u << 10);
    EXPECT_EQ(g.bloom_bits_per_key, lock ? 0 : 10);
    EXPECT_EQ(g.write_buffer_size, lock ? 64u << 10 : notify ? 128u << 10 : 0u);
  }
}

}  // namespace
}  // namespace strata::txn
