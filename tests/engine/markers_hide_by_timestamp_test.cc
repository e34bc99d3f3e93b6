// ColumnFamilyOptions::column_markers_hide_by_timestamp through the engine:
// a version written below a column marker after it is hidden in a family
// with the option and visible in one without, in every read (ReadRow, Scan,
// read sessions, conditions), in memtables, after flushes and after
// compactions above the bottom and at it; the option survives reopen and
// cannot change.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "engine_test_util.h"
#include "strata/engine.h"
#include "util/status_matchers.h"

namespace strata {
namespace {

using test::EngineTest;

// Family "h" hides by timestamp, "p" does not; both in one group, with "o",
// a family of other data, in a group of its own.
TableSchema HotSchema() {
  TableSchema s;
  s.locality_groups = {{.name = "g"}, {.name = "other"}};
  s.families = {{.name = "h", .locality_group = "g", .column_markers_hide_by_timestamp = true},
                {.name = "p", .locality_group = "g"},
                {.name = "o", .locality_group = "other"}};
  return s;
}

class MarkersHideByTimestampTest : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    ASSERT_OK(tenant_.CreateTable("hot", HotSchema()));
    OpenHot();
  }

  void OpenHot() {
    auto t = engine_->OpenTenant("t1");
    ASSERT_OK(t);
    auto hot = t->OpenTable("hot");
    ASSERT_OK(hot);
    hot_ = *hot;
  }

  void ReopenHot() {
    hot_ = Table();
    Reopen();
    OpenHot();
  }

  Status HotPut(const std::string& row, const std::string& family, uint64_t ts,
                const std::string& value) {
    return hot_.Mutate(WriteOptions(), row, RowMutation().Put(family, "c", ts, value));
  }

  // In each family: "old" at 3, a column marker at 10, then (after it) "late"
  // at 5, "at" at 10 and "new" at 12.
  void WriteStory(const std::string& row) {
    for (const char* family : {"h", "p"}) {
      ASSERT_OK(HotPut(row, family, 3, "old"));
      ASSERT_OK(hot_.Mutate(WriteOptions(), row, RowMutation().DeleteColumn(family, "c", 10)));
      ASSERT_OK(HotPut(row, family, 5, "late"));
      ASSERT_OK(HotPut(row, family, 10, "at"));
      ASSERT_OK(HotPut(row, family, 12, "new"));
    }
  }

  // The timestamps of the cells of `family` in `cells`, in order.
  static std::vector<uint64_t> Timestamps(const std::vector<Cell>& cells,
                                          const std::string& family) {
    std::vector<uint64_t> out;
    for (const Cell& c : cells) {
      if (c.family == family) out.push_back(c.timestamp);
    }
    return out;
  }

  // Every read of `row` shows `h` versions in "h:c" and `p` versions in
  // "p:c", newest first; versions below 10 are those written after the
  // marker.
  void ExpectVisible(const std::string& row, const std::vector<uint64_t>& h,
                     const std::vector<uint64_t>& p) {
    auto cells = hot_.ReadRow(ReadOptions(), row);
    ASSERT_OK(cells);
    EXPECT_EQ(Timestamps(*cells, "h"), h);
    EXPECT_EQ(Timestamps(*cells, "p"), p);

    // A single column read below the marker, as a condition read is.
    RowFilter below;
    below.columns = {{"h", "c"}, {"p", "c"}};
    below.max_timestamp = 9;
    cells = hot_.ReadRow(ReadOptions(), row, below);
    ASSERT_OK(cells);
    auto under = [](const std::vector<uint64_t>& v) {
      std::vector<uint64_t> out;
      for (uint64_t ts : v) {
        if (ts <= 9) out.push_back(ts);
      }
      return out;
    };
    EXPECT_EQ(Timestamps(*cells, "h"), under(h));
    EXPECT_EQ(Timestamps(*cells, "p"), under(p));

    ScanSpec spec;
    spec.start_row = row;
    spec.end_row = row + '\0';
    auto it = hot_.Scan(ReadOptions(), spec);
    ASSERT_OK(it);
    ASSERT_TRUE((*it)->Valid());
    EXPECT_EQ(Timestamps((*it)->cells(), "h"), h);
    EXPECT_EQ(Timestamps((*it)->cells(), "p"), p);
    (*it)->Next();
    EXPECT_FALSE((*it)->Valid());
    ASSERT_OK((*it)->status());

    auto session = hot_.NewReadSession();
    ASSERT_OK(session);
    for (const char* family : {"h", "p"}) {
      auto got = (*session)->Get(row, family, "c");
      ASSERT_OK(got);
      EXPECT_EQ(Timestamps(*got, family), family[0] == 'h' ? h : p) << family;
    }

    // Conditions: "late" at 5 exists only where it is visible, and no cell
    // below the marker is there to fail NoCellInRange.
    for (const char* family : {"h", "p"}) {
      const std::vector<uint64_t>& want = family[0] == 'h' ? h : p;
      const bool late = std::find(want.begin(), want.end(), 5) != want.end();
      auto exists = hot_.CheckAndMutate(WriteOptions(), row,
                                        {Condition::CellExists(family, "c", 5)}, RowMutation());
      ASSERT_OK(exists);
      EXPECT_EQ(exists->applied, late) << family;
      auto none = hot_.CheckAndMutate(WriteOptions(), row,
                                      {Condition::NoCellInRange(family, "c", 1, 9)}, RowMutation());
      ASSERT_OK(none);
      EXPECT_EQ(none->applied, under(want).empty()) << family;
    }
  }

  Table hot_;
};

TEST_F(MarkersHideByTimestampTest, HidesVersionsWrittenBelowAMarkerAfterIt) {
  WriteStory("r");
  ExpectVisible("r", {12, 10}, {12, 10, 5});
  // No older file holds the row: the flush drops the marker and all it hides.
  ASSERT_OK(engine_->Flush());
  ExpectVisible("r", {12, 10}, {12, 10, 5});
  ASSERT_OK(engine_->Compact());
  ExpectVisible("r", {12, 10}, {12, 10, 5});
  ReopenHot();
  ExpectVisible("r", {12, 10}, {12, 10, 5});
}

// With an older file holding the row, flushes and compactions keep the
// marker, and it goes on hiding versions written below it later, in newer
// memtables and files, until a compaction takes them to the bottom with it.
TEST_F(MarkersHideByTimestampTest, HoldsThroughFlushesAndCompactions) {
  ASSERT_OK(HotPut("r", "h", 1, "deep"));
  ASSERT_OK(HotPut("r", "p", 1, "deep"));
  ASSERT_OK(engine_->Compact());
  WriteStory("r");
  ExpectVisible("r", {12, 10}, {12, 10, 5});
  ASSERT_OK(engine_->Flush());  // the marker stays, above "deep"
  ExpectVisible("r", {12, 10}, {12, 10, 5});
  // Below the flushed marker, from the memtable and from a newer file.
  ASSERT_OK(HotPut("r", "h", 6, "later"));
  ASSERT_OK(HotPut("r", "p", 6, "later"));
  ExpectVisible("r", {12, 10}, {12, 10, 6, 5});
  ASSERT_OK(engine_->Flush());
  ExpectVisible("r", {12, 10}, {12, 10, 6, 5});
  ASSERT_OK(HotPut("r", "h", 7, "latest"));
  ASSERT_OK(HotPut("r", "p", 7, "latest"));
  ExpectVisible("r", {12, 10}, {12, 10, 7, 6, 5});
  ASSERT_OK(engine_->Compact());  // to the bottom, with everything
  ExpectVisible("r", {12, 10}, {12, 10, 7, 6, 5});
  ReopenHot();
  ExpectVisible("r", {12, 10}, {12, 10, 7, 6, 5});
}

// A compaction into level 1 while a deeper file holds the row keeps the
// marker and drops what it hides; the family without the option keeps the
// versions written after the marker.
TEST_F(MarkersHideByTimestampTest, HoldsThroughACompactionAboveTheBottom) {
  options_.level1_max_bytes = 4096;  // the least: the rows below move on to level 2
  options_.level0_compaction_trigger = 2;
  ReopenHot();
  auto key = [](int i) {
    char buf[16];
    std::snprintf(buf, sizeof(buf), "k%04d", i);
    return std::string(buf);
  };
  auto levels = [&] { return engine_->GetStats().level_files; };
  auto settled = [&](auto done) {
    for (int i = 0; i < 10000 && !done(); i++) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return done();
  };
  for (int i = 0; i < 200; i++) {
    ASSERT_OK(hot_.Mutate(WriteOptions(), key(i),
                          RowMutation()
                              .Put("h", "c", 1, std::string(100, 'd'))
                              .Put("p", "c", 1, std::string(100, 'd'))));
  }
  ASSERT_OK(engine_->Compact());
  ASSERT_TRUE(settled([&] {
    std::vector<uint64_t> l = levels();
    return l[0] == 0 && l[1] == 0 && l[2] + l[3] + l[4] + l[5] + l[6] >= 1;
  }));
  // Two level-0 files of the row: the second flush starts their compaction
  // into level 1, above the deep file that holds the row.
  WriteStory(key(100));
  ASSERT_OK(engine_->Flush());
  ASSERT_OK(HotPut(key(100), "h", 6, "later"));
  ASSERT_OK(HotPut(key(100), "p", 6, "later"));
  ASSERT_OK(engine_->Flush());
  ASSERT_TRUE(settled([&] { return levels()[0] == 0; }));
  EXPECT_GE(levels()[1], 1u);
  ExpectVisible(key(100), {12, 10}, {12, 10, 6, 5});
  ExpectVisible(key(101), {1}, {1});
  ReopenHot();
  ExpectVisible(key(100), {12, 10}, {12, 10, 6, 5});
}

TEST_F(MarkersHideByTimestampTest, TheOptionSurvivesReopenAndCannotChange) {
  auto schema = hot_.GetSchema();
  ASSERT_OK(schema);
  ASSERT_EQ(schema->families.size(), 3u);
  EXPECT_TRUE(schema->families[0].column_markers_hide_by_timestamp);
  EXPECT_FALSE(schema->families[1].column_markers_hide_by_timestamp);
  ReopenHot();
  schema = hot_.GetSchema();
  ASSERT_OK(schema);
  EXPECT_TRUE(schema->families[0].column_markers_hide_by_timestamp);
  EXPECT_FALSE(schema->families[1].column_markers_hide_by_timestamp);

  // Turning it on or off is refused, even with no data; a new family takes
  // what it is given, and the schema with it survives reopen.
  for (size_t i : {0, 1}) {
    TableSchema flipped = *schema;
    flipped.families[i].column_markers_hide_by_timestamp =
        !flipped.families[i].column_markers_hide_by_timestamp;
    const Status s = tenant_.AlterTable("hot", flipped);
    EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
    EXPECT_NE(s.ToString().find("column_markers_hide_by_timestamp"), std::string::npos);
  }
  TableSchema more = *schema;
  more.families.push_back(
      {.name = "h2", .locality_group = "g", .column_markers_hide_by_timestamp = true});
  ASSERT_OK(tenant_.AlterTable("hot", more));
  ReopenHot();
  schema = hot_.GetSchema();
  ASSERT_OK(schema);
  ASSERT_EQ(schema->families.size(), 4u);
  EXPECT_TRUE(schema->families[3].column_markers_hide_by_timestamp);
  EXPECT_TRUE(schema->families[0].column_markers_hide_by_timestamp);
  ASSERT_OK(hot_.Mutate(WriteOptions(), "r", RowMutation().DeleteColumn("h2", "c", 10)));
  ASSERT_OK(hot_.Mutate(WriteOptions(), "r", RowMutation().Put("h2", "c", 5, "late")));
  auto cells = hot_.ReadRow(ReadOptions(), "r");
  ASSERT_OK(cells);
  EXPECT_TRUE(cells->empty());

  // The default table's families never had it.
  auto tab = table_.GetSchema();
  ASSERT_OK(tab);
  for (const auto& f : tab->families) EXPECT_FALSE(f.column_markers_hide_by_timestamp);
}

// Within one mutation, a Put below an earlier DeleteColumn of its column
// is hidden too; at the marker's timestamp it wins, as everywhere.
TEST_F(MarkersHideByTimestampTest, OneMutationObeysItToo) {
  RowMutation m;
  m.DeleteColumn("h", "c", 10).Put("h", "c", 4, "below").Put("h", "c", 10, "at");
  m.DeleteColumn("p", "c", 10).Put("p", "c", 4, "below").Put("p", "c", 10, "at");
  ASSERT_OK(hot_.Mutate(WriteOptions(), "m", m));
  auto cells = hot_.ReadRow(ReadOptions(), "m");
  ASSERT_OK(cells);
  EXPECT_EQ(Timestamps(*cells, "h"), (std::vector<uint64_t>{10}));
  EXPECT_EQ(Timestamps(*cells, "p"), (std::vector<uint64_t>{10, 4}));
}

}  // namespace
}  // namespace strata
