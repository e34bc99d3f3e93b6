// Row mutations and point reads through the public API: versions newest
// first, every delete kind, the order of a mutation's entries, row filters,
// binary keys and values, and bad input refused with nothing written.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/random.h"
#include "engine_test_util.h"
#include "strata/engine.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata {
namespace {

using test::EngineTest;
using test::TwoGroupSchema;

TEST_F(EngineTest, PutAndReadVersionsNewestFirst) {
  ASSERT_OK(Put("r1", "a", "x", 5, "five"));
  ASSERT_OK(Put("r1", "a", "x", 9, "nine"));
  ASSERT_OK(Put("r1", "a", "x", 7, "seven"));
  auto cells = Read("r1");
  ASSERT_EQ(cells.size(), 3u);
  EXPECT_EQ(cells[0], (Cell{"a", "x", 9, "nine"}));
  EXPECT_EQ(cells[1], (Cell{"a", "x", 7, "seven"}));
  EXPECT_EQ(cells[2], (Cell{"a", "x", 5, "five"}));
  EXPECT_TRUE(Read("r0").empty());
  EXPECT_TRUE(Read("r10").empty());
}

TEST_F(EngineTest, OverwriteSameTimestampKeepsNewest) {
  ASSERT_OK(Put("r", "a", "x", 5, "old"));
  ASSERT_OK(Put("r", "a", "x", 5, "new"));
  auto cells = Read("r");
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].value, "new");
}

TEST_F(EngineTest, CellsOrderedByFamilyAcrossGroups) {
  RowMutation m;
  m.Put("c", "q", 1, "c1").Put("b", "q", 1, "b1").Put("a", "z", 1, "az").Put("a", "b", 1, "ab");
  ASSERT_OK(table_.Mutate(WriteOptions(), "row", m));
  auto cells = Read("row");
  ASSERT_EQ(cells.size(), 4u);
  EXPECT_EQ(cells[0].family + cells[0].qualifier, "ab");
  EXPECT_EQ(cells[1].family + cells[1].qualifier, "az");
  EXPECT_EQ(cells[2].family + cells[2].qualifier, "bq");
  EXPECT_EQ(cells[3].family + cells[3].qualifier, "cq");
}

TEST_F(EngineTest, DeleteCellHidesOneVersion) {
  ASSERT_OK(Put("r", "a", "x", 1, "v1"));
  ASSERT_OK(Put("r", "a", "x", 2, "v2"));
  RowMutation m;
  m.DeleteCell("a", "x", 2);
  ASSERT_OK(table_.Mutate(WriteOptions(), "r", m));
  auto cells = Read("r");
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].value, "v1");
  // A later put at the deleted timestamp is visible again.
  ASSERT_OK(Put("r", "a", "x", 2, "v2b"));
  cells = Read("r");
  ASSERT_EQ(cells.size(), 2u);
  EXPECT_EQ(cells[0].value, "v2b");
}

TEST_F(EngineTest, DeleteColumnHidesVersionsUpToTimestamp) {
  for (uint64_t ts = 1; ts <= 5; ts++) ASSERT_OK(Put("r", "a", "x", ts, "v"));
  ASSERT_OK(Put("r", "a", "y", 1, "other"));
  RowMutation m;
  m.DeleteColumn("a", "x", 3);
  ASSERT_OK(table_.Mutate(WriteOptions(), "r", m));
  auto cells = Read("r");
  ASSERT_EQ(cells.size(), 3u);
  EXPECT_EQ(cells[0].timestamp, 5u);
  EXPECT_EQ(cells[1].timestamp, 4u);
  EXPECT_EQ(cells[2].qualifier, "y");
  // Written after the delete: visible even below its timestamp.
  ASSERT_OK(Put("r", "a", "x", 2, "late"));
  cells = Read("r", RowFilter{.columns = {{"a", "x"}}});
  ASSERT_EQ(cells.size(), 3u);
  EXPECT_EQ(cells[2], (Cell{"a", "x", 2, "late"}));
}

TEST_F(EngineTest, DeleteRowHidesEveryGroup) {
  RowMutation m;
  m.Put("a", "x", 5, "a5").Put("b", "y", 5, "b5").Put("c", "z", 9, "c9");
  ASSERT_OK(table_.Mutate(WriteOptions(), "r", m));
  RowMutation d;
  d.DeleteRow(6);
  ASSERT_OK(table_.Mutate(WriteOptions(), "r", d));
  auto cells = Read("r");
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0], (Cell{"c", "z", 9, "c9"}));
  RowMutation all;
  all.DeleteRow();
  ASSERT_OK(table_.Mutate(WriteOptions(), "r", all));
  EXPECT_TRUE(Read("r").empty());
  ASSERT_OK(Put("r", "b", "y", 1, "again"));
  EXPECT_EQ(Read("r").size(), 1u);
}

TEST_F(EngineTest, EntriesOfOneMutationApplyInOrder) {
  ASSERT_OK(Put("r", "a", "x", 1, "before"));
  RowMutation m;
  m.DeleteColumn("a", "x").Put("a", "x", 1, "after");
  ASSERT_OK(table_.Mutate(WriteOptions(), "r", m));
  auto cells = Read("r");
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].value, "after");
  RowMutation m2;
  m2.Put("a", "x", 1, "lost").DeleteColumn("a", "x");
  ASSERT_OK(table_.Mutate(WriteOptions(), "r", m2));
  EXPECT_TRUE(Read("r").empty());
}

TEST_F(EngineTest, FiltersSelectFamiliesColumnsTimesAndVersions) {
  RowMutation m;
  for (uint64_t ts = 1; ts <= 4; ts++) {
    m.Put("a", "x", ts, "ax" + std::to_string(ts));
    m.Put("b", "y", ts, "by" + std::to_string(ts));
    m.Put("c", "z", ts, "cz" + std::to_string(ts));
  }
  ASSERT_OK(table_.Mutate(WriteOptions(), "r", m));
  EXPECT_EQ(Read("r").size(), 12u);
  EXPECT_EQ(Read("r", RowFilter{.families = {"b"}}).size(), 4u);
  auto cols = Read("r", RowFilter{.families = {"c"}, .columns = {{"a", "x"}}});
  ASSERT_EQ(cols.size(), 8u);
  EXPECT_EQ(cols[0].family, "a");
  EXPECT_EQ(cols[4].family, "c");
  auto range = Read("r", RowFilter{.families = {"a"}, .min_timestamp = 2, .max_timestamp = 3});
  ASSERT_EQ(range.size(), 2u);
  EXPECT_EQ(range[0].timestamp, 3u);
  EXPECT_EQ(range[1].timestamp, 2u);
  auto newest = Read("r", RowFilter{.max_versions = 1});
  ASSERT_EQ(newest.size(), 3u);
  for (const auto& c : newest) EXPECT_EQ(c.timestamp, 4u);
  auto r = table_.ReadRow(ReadOptions(), "r", RowFilter{.families = {"nope"}});
  EXPECT_TRUE(r.status().IsInvalidArgument()) << r.status().ToString();
  r = table_.ReadRow(ReadOptions(), "r", RowFilter{.min_timestamp = 5, .max_timestamp = 4});
  EXPECT_TRUE(r.status().IsInvalidArgument());
}

// Many single columns in one filter, in any order, repeated, overlapping a
// family asked for whole, with binary qualifiers that sort next to each
// other, over a row in the memtable and two files: the cells are the whole
// row's cells of those columns, each once.
TEST_F(EngineTest, ManyColumnsInAnyOrderWithRepeatsReadEachOnce) {
  const std::vector<std::string> qualifiers = {
      "", std::string(1, '\0'), "x", std::string("x\0", 2), std::string("x\0y", 3), "x\xff", "xy",
      "y"};
  for (int layer = 0; layer < 3; layer++) {
    RowMutation m;
    for (const std::string fam : {"a", "b", "c"}) {
      for (size_t i = 0; i < qualifiers.size(); i++) {
        if ((i + layer) % 3 == 0) continue;
        m.Put(fam, qualifiers[i], 10 + layer,
              fam + std::to_string(i) + "@" + std::to_string(layer));
      }
    }
    if (layer == 1) m.DeleteColumn("b", "x", 11);
    ASSERT_OK(table_.Mutate(WriteOptions(), "r", m));
    if (layer < 2) {
      ASSERT_OK(engine_->Flush());
    }
  }
  const std::vector<Cell> whole = Read("r");
  ASSERT_GT(whole.size(), 30u);
  Random rnd(test::TestSeed());
  for (int round = 0; round < 50; round++) {
    RowFilter f;
    std::set<std::pair<std::string, std::string>> wanted;
    const int n = 1 + static_cast<int>(rnd.Uniform(12));
    for (int i = 0; i < n; i++) {
      std::string fam(1, static_cast<char>('a' + rnd.Uniform(3)));
      std::string q = qualifiers[rnd.Uniform(qualifiers.size())];
      f.columns.emplace_back(fam, q);
      wanted.emplace(fam, q);
      if (rnd.OneIn(3)) f.columns.emplace_back(fam, q);  // a repeat
    }
    std::string whole_family;
    if (rnd.OneIn(3)) {
      whole_family = std::string(1, static_cast<char>('a' + rnd.Uniform(3)));
      f.families.push_back(whole_family);
    }
    if (rnd.OneIn(2)) f.max_versions = 1 + static_cast<uint32_t>(rnd.Uniform(2));
    std::vector<Cell> expected;
    std::map<std::pair<std::string, std::string>, uint32_t> versions;
    for (const Cell& c : whole) {
      if (c.family != whole_family && wanted.count({c.family, c.qualifier}) == 0) continue;
      if (versions[{c.family, c.qualifier}]++ >= f.max_versions) continue;
      expected.push_back(c);
    }
    ASSERT_EQ(Read("r", f), expected) << "round " << round;
  }
}

TEST_F(EngineTest, BinaryKeysAndValues) {
  std::string row("r\0w\xff", 4);
  std::string q("\0\0", 2);
  std::string v("\0value\xff\0", 8);
  ASSERT_OK(Put(row, "a", q, 3, v));
  ASSERT_OK(Put(std::string("r", 1), "a", q, 3, "short row"));
  auto cells = Read(row);
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0], (Cell{"a", q, 3, v}));
  EXPECT_EQ(Read("r").size(), 1u);
  EXPECT_EQ(Read("r")[0].value, "short row");
}

TEST_F(EngineTest, EmptyValueIsAValue) {
  ASSERT_OK(Put("r", "a", "", 1, ""));
  auto cells = Read("r");
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].value, "");
}

// Errors that echo a caller's row, family or name keep it short: a
// megabyte of it costs a prefix and its length, not a megabyte of message.
TEST_F(EngineTest, ErrorsEchoAShortPrefixOfLongInput) {
  const std::string huge(1 << 20, 'z');
  auto short_message = [&](const Status& s, const char* what) {
    EXPECT_FALSE(s.ok()) << what;
    EXPECT_LT(s.ToString().size(), 400u) << what;
    EXPECT_NE(s.ToString().find("1048576 bytes"), std::string::npos)
        << what << ": " << s.ToString();
  };
  RowMutation m;
  m.Put(huge, "q", 1, "v");
  short_message(table_.Mutate(WriteOptions(), "r", m), "Mutate with an unknown family");
  short_message(engine_->OpenTenant(huge).status(), "OpenTenant");
  short_message(engine_->CreateTenant(huge), "CreateTenant");
  short_message(tenant_.OpenTable(huge).status(), "OpenTable");
  RowFilter filter;
  filter.families = {huge};
  short_message(table_.ReadRow(ReadOptions(), "r", filter).status(),
                "ReadRow with an unknown family");
}

TEST_F(EngineTest, BadInputIsInvalidArgumentAndWritesNothing) {
  options_.max_row_key_size = 32;
  options_.max_qualifier_size = 16;
  options_.max_value_size = 100;
  Reopen();
  const uint64_t before = engine_->GetStats().last_sequence;
  auto expect_bad = [&](const std::string& row, const RowMutation& m, const char* why) {
    Status s = table_.Mutate(WriteOptions(), row, m);
    EXPECT_TRUE(s.IsInvalidArgument()) << why << ": " << s.ToString();
    EXPECT_FALSE(s.message().empty()) << why;
  };
  RowMutation ok;
  ok.Put("a", "q", 1, "v");
  expect_bad("", ok, "empty row");
  expect_bad(std::string(33, 'r'), ok, "row over the limit");
  RowMutation big_q;
  big_q.Put("a", std::string(17, 'q'), 1, "v");
  expect_bad("r", big_q, "qualifier over the limit");
  RowMutation big_v;
  big_v.Put("a", "q", 1, std::string(101, 'v'));
  expect_bad("r", big_v, "value over the limit");
  RowMutation fam;
  fam.Put("a", "q", 1, "v").Put("nope", "q", 1, "v");
  expect_bad("r", fam, "unknown family (second entry: first must not be applied)");
  RowMutation ts0;
  ts0.Put("a", "q", 0, "v");
  expect_bad("r", ts0, "timestamp 0");
  RowMutation tsmax;
  tsmax.Put("a", "q", UINT64_MAX, "v");
  expect_bad("r", tsmax, "timestamp max");
  expect_bad("r", RowMutation(), "empty mutation");
  EXPECT_EQ(engine_->GetStats().last_sequence, before);
  EXPECT_TRUE(Read("r").empty());

  // Exactly at the limits is fine.
  RowMutation edge;
  edge.Put("a", std::string(16, 'q'), kMaxTimestamp, std::string(100, 'v'));
  EXPECT_OK(table_.Mutate(WriteOptions(), std::string(32, 'r'), edge));

  // A closed engine refuses everything, through every handle.
  ASSERT_OK(engine_->Close());
  Status s = table_.Mutate(WriteOptions(), "r", ok);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.ToString().find("closed"), std::string::npos);
  EXPECT_TRUE(table_.ReadRow(ReadOptions(), "r").status().IsInvalidArgument());
  EXPECT_TRUE(tenant_.CreateTable("x", TwoGroupSchema()).IsInvalidArgument());
  EXPECT_TRUE(engine_->CreateTenant("t2").IsInvalidArgument());
  EXPECT_TRUE(engine_->OpenTenant("t1").status().IsInvalidArgument());
  // Reopen: nothing of the rejected writes appeared.
  Reopen();
  EXPECT_TRUE(Read("r").empty());
}

// A row key of 1 GiB of 0x00 bytes is within max_row_key_size but encodes
// to 2 GiB in a cell key, more than a table block holds: the write is
// refused up front instead of leaving a memtable no flush can write.
TEST_F(EngineTest, CellsTooLargeForATableBlockAreRefused) {
  options_.max_row_key_size = 1u << 30;
  Reopen();
  const uint64_t before = engine_->GetStats().last_sequence;
  const std::string row(size_t{1} << 30, '\0');
  RowMutation m;
  m.DeleteRow();
  Status s = table_.Mutate(WriteOptions(), row, m);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find("does not fit in a table block"), std::string_view::npos);
  EXPECT_EQ(engine_->GetStats().last_sequence, before);
}

}  // namespace
}  // namespace strata
