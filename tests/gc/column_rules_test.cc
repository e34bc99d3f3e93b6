// The per-column rules: what goes of a column's versions at or below the
// safepoint, on the example histories of the design (put@5, put@10,
// delete@15, put@20 at safepoints 12, 17 and 22) and around rollback and
// lock records.
#include "gc/column_rules.h"

#include <gtest/gtest.h>

#include <vector>

namespace strata::gc {
namespace {

using txn::WriteKind;

WriteVersion V(uint64_t ts, WriteKind kind, uint64_t start_ts, bool inline_value = false) {
  WriteVersion v;
  v.ts = ts;
  v.record.kind = kind;
  v.record.start_ts = start_ts;
  v.record.has_inline_value = inline_value;
  return v;
}

// put@5 (started 4), put@10 (9), delete@15 (14), put@20 (19), newest first,
// cut at the safepoint.
std::vector<WriteVersion> History(uint64_t safepoint) {
  std::vector<WriteVersion> all = {V(20, WriteKind::kPut, 19), V(15, WriteKind::kDelete, 14),
                                   V(10, WriteKind::kPut, 9), V(5, WriteKind::kPut, 4)};
  std::vector<WriteVersion> below;
  for (const auto& v : all) {
    if (v.ts <= safepoint) below.push_back(v);
  }
  return below;
}

TEST(ColumnRulesTest, SafepointTwelveKeepsTheNewestPutAndDropsTheOlder) {
  ColumnCollection c = CollectColumn(History(12));
  EXPECT_EQ(c.write_marker, 9u);  // put@5 goes, put@10 stays
  EXPECT_TRUE(c.write_cells.empty());
  EXPECT_EQ(c.data_marker, 4u);  // put@5's value, at its start_ts
  EXPECT_EQ(c.versions_dropped, 1u);
  EXPECT_EQ(c.data_dropped, 1u);
}

TEST(ColumnRulesTest, SafepointSeventeenDropsTheDeleteWithEverythingOlder) {
  ColumnCollection c = CollectColumn(History(17));
  EXPECT_EQ(c.write_marker, 15u);  // delete@15, put@10, put@5 in one marker
  EXPECT_EQ(c.data_marker, 9u);
  EXPECT_EQ(c.versions_dropped, 3u);
  EXPECT_EQ(c.data_dropped, 2u);
}

TEST(ColumnRulesTest, SafepointTwentyTwoKeepsOnlyTheNewestPut) {
  ColumnCollection c = CollectColumn(History(22));
  EXPECT_EQ(c.write_marker, 19u);
  EXPECT_EQ(c.data_marker, 9u);
  EXPECT_EQ(c.versions_dropped, 3u);
  EXPECT_EQ(c.data_dropped, 2u);
}

TEST(ColumnRulesTest, NothingBelowTheFirstPutMeansNothingGoes) {
  EXPECT_TRUE(CollectColumn(History(7)).empty());
  EXPECT_TRUE(CollectColumn({}).empty());
}

TEST(ColumnRulesTest, RollbackAndLockRecordsAboveTheFirstPutGoOneByOne) {
  // rollback@13, lock@11 (a GetForUpdate commit), put@10, rollback@8, put@5.
  std::vector<WriteVersion> v = {V(13, WriteKind::kRollback, 13), V(11, WriteKind::kLock, 10),
                                 V(10, WriteKind::kPut, 9), V(8, WriteKind::kRollback, 8),
                                 V(5, WriteKind::kPut, 4)};
  ColumnCollection c = CollectColumn(v);
  EXPECT_EQ(c.write_cells, (std::vector<uint64_t>{13, 11}));
  EXPECT_EQ(c.write_marker, 9u);  // rollback@8 and put@5 under it
  EXPECT_EQ(c.data_marker, 4u);
  EXPECT_EQ(c.versions_dropped, 4u);
}

TEST(ColumnRulesTest, OnlyRollbacksAndLocksAllGo) {
  std::vector<WriteVersion> v = {V(7, WriteKind::kLock, 6), V(3, WriteKind::kRollback, 3)};
  ColumnCollection c = CollectColumn(v);
  EXPECT_EQ(c.write_cells, (std::vector<uint64_t>{7, 3}));
  EXPECT_EQ(c.write_marker, 0u);
  EXPECT_EQ(c.data_marker, 0u);
}

TEST(ColumnRulesTest, InlineValuesLeaveNoDataCellToDrop) {
  std::vector<WriteVersion> v = {V(10, WriteKind::kPut, 9, /*inline_value=*/true),
                                 V(5, WriteKind::kPut, 4, /*inline_value=*/true)};
  ColumnCollection c = CollectColumn(v);
  EXPECT_EQ(c.write_marker, 9u);
  EXPECT_EQ(c.data_marker, 0u);
  EXPECT_EQ(c.data_dropped, 0u);
}

TEST(ColumnRulesTest, TheDeletesGoInOneMutationWithTheirColumnMarkers) {
  ColumnCollection c = CollectColumn(History(17));
  RowMutation m;
  AddCollection(&m, "bal", c);
  ASSERT_EQ(m.entries().size(), 2u);
  EXPECT_EQ(m.entries()[0].kind, RowMutation::Kind::kDeleteColumn);
  EXPECT_EQ(m.entries()[0].family, "write");
  EXPECT_EQ(m.entries()[0].timestamp, 15u);
  EXPECT_EQ(m.entries()[1].kind, RowMutation::Kind::kDeleteColumn);
  EXPECT_EQ(m.entries()[1].family, "data");
  EXPECT_EQ(m.entries()[1].timestamp, 9u);
}

}  // namespace
}  // namespace strata::gc
