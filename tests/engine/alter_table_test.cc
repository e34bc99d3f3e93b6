// Schema changes (Tenant::AlterTable) through the public API: every change it
// allows, with data read back before and after reopen; the changes it refuses
// (data that would be orphaned, bad input) leaving everything as it was;
// options that apply to new files; in-memory groups turned on and off; log
// replay after families moved or went; alters racing writes, reads, flushes,
// compactions and splits; and a crash in the middle of alters and writes.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/random.h"
#include "strata/compaction_filter.h"
#include "strata/engine.h"
#include "engine_test_util.h"
#include "util/forwarding_fs.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata {
namespace {

using test::ScratchDir;

// a and b in group "g1", c in group "g2".
TableSchema BaseSchema() {
  TableSchema s;
  s.locality_groups.push_back({.name = "g1"});
  s.locality_groups.push_back({.name = "g2"});
  s.families.push_back({.name = "a", .locality_group = "g1"});
  s.families.push_back({.name = "b", .locality_group = "g1"});
  s.families.push_back({.name = "c", .locality_group = "g2"});
  return s;
}

// A schema as one line, for comparisons and failure messages.
std::string Describe(const TableSchema& s) {
  std::string out;
  for (const auto& g : s.locality_groups) {
    out += g.name + "(" + (g.in_memory ? "mem," : "") +
           (g.compression == Compression::kZstd ? "zstd" + std::to_string(g.compression_level)
                                                : std::string("none")) +
           "," + std::to_string(g.block_size) + "," + std::to_string(g.bloom_bits_per_key) +
           ") ";
  }
  out += "|";
  for (const auto& f : s.families) out += " " + f.name + "@" + f.locality_group;
  return out;
}

RowMutation Put(const std::string& family, const std::string& value,
                const std::string& qualifier = "q") {
  RowMutation m;
  m.Put(family, qualifier, 1, value);
  return m;
}

// The row's cells as "family:qualifier=value ...", in the order they come.
std::string Row(const Table& t, const std::string& row, const RowFilter& filter = RowFilter()) {
  auto cells = t.ReadRow(ReadOptions(), row, filter);
  if (!cells.ok()) return "error: " + cells.status().ToString();
  std::string out;
  for (const Cell& c : *cells) {
    if (!out.empty()) out += " ";
    out += c.family + ":" + c.qualifier + "=" + c.value;
  }
  return out;
}

// Every row by a scan, as "row{cells}".
std::string ScanAll(const Table& t) {
  auto it = t.Scan(ReadOptions(), ScanSpec());
  if (!it.ok()) return "error: " + it.status().ToString();
  std::string out;
  for (; (*it)->Valid(); (*it)->Next()) {
    out += std::string((*it)->row()) + "{";
    for (const Cell& c : (*it)->cells()) out += c.family + "=" + c.value + ";";
    out += "}";
  }
  if (!(*it)->status().ok()) return "error: " + (*it)->status().ToString();
  return out;
}

class AlterTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.write_buffer_size = 64 << 10;
    Open();
    ASSERT_OK(engine_->CreateTenant("t"));
    ASSERT_OK(tenant().CreateTable("tab", BaseSchema()));
  }

  void Open() {
    auto e = Engine::Open(dir_.path(), options_);
    ASSERT_OK(e);
    engine_ = std::move(e.value());
  }
  void Reopen() {
    ASSERT_OK(engine_->Close());
    engine_.reset();
    Open();
  }
  Tenant tenant() { return *engine_->OpenTenant("t"); }
  Table table() { return *tenant().OpenTable("tab"); }
  std::string schema() {
    auto s = table().GetSchema();
    return s.ok() ? Describe(*s) : "error: " + s.status().ToString();
  }
  Status Alter(const TableSchema& s) { return tenant().AlterTable("tab", s); }

  ScratchDir dir_{"alter"};
  EngineOptions options_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(AlterTableTest, GetSchemaShowsTheImplicitDefaultGroup) {
  TableSchema s;
  s.families = {{.name = "x"}, {.name = "y"}};
  ASSERT_OK(tenant().CreateTable("plain", s));
  auto got = tenant().OpenTable("plain")->GetSchema();
  ASSERT_OK(got);
  EXPECT_EQ(Describe(*got), "default(none,16384,10) | x@default y@default");
  EXPECT_EQ(schema(), "g1(none,16384,10) g2(none,16384,10) | a@g1 b@g1 c@g2");
  // Altering with the schema as read back changes nothing.
  ASSERT_OK(Alter(*table().GetSchema()));
  EXPECT_EQ(schema(), "g1(none,16384,10) g2(none,16384,10) | a@g1 b@g1 c@g2");
}

TEST_F(AlterTableTest, AddFamiliesToExistingAndNewGroupsThenWriteThem) {
  Table t = table();
  ASSERT_OK(t.Mutate(WriteOptions(), "r1", Put("a", "a1").Put("c", "q", 1, "c1")));
  ASSERT_OK(engine_->Flush());
  ASSERT_OK(t.Mutate(WriteOptions(), "r2", Put("b", "b2")));

  TableSchema s = BaseSchema();
  s.locality_groups.push_back({.name = "g3", .compression = Compression::kZstd});
  s.families.push_back({.name = "d", .locality_group = "g1"});
  s.families.push_back({.name = "e", .locality_group = "g3"});
  ASSERT_OK(Alter(s));
  EXPECT_EQ(schema(),
            "g1(none,16384,10) g2(none,16384,10) g3(zstd3,16384,10) | a@g1 b@g1 c@g2 d@g1 e@g3");
  // The handle opened before the change writes the new families at once.
  ASSERT_OK(t.Mutate(WriteOptions(), "r1", Put("d", "d1").Put("e", "q", 1, "e1")));
  ASSERT_OK(t.Mutate(WriteOptions(), "r3", Put("e", "e3")));
  // Existing families keep their order; new ones come after them.
  EXPECT_EQ(Row(t, "r1"), "a:q=a1 c:q=c1 d:q=d1 e:q=e1");
  EXPECT_EQ(Row(t, "r1", RowFilter{.families = {"e", "a"}}), "a:q=a1 e:q=e1");
  EXPECT_EQ(ScanAll(t), "r1{a=a1;c=c1;d=d1;e=e1;}r2{b=b2;}r3{e=e3;}");
  ASSERT_NO_FATAL_FAILURE(Reopen());
  t = table();
  EXPECT_EQ(schema(),
            "g1(none,16384,10) g2(none,16384,10) g3(zstd3,16384,10) | a@g1 b@g1 c@g2 d@g1 e@g3");
  EXPECT_EQ(ScanAll(t), "r1{a=a1;c=c1;d=d1;e=e1;}r2{b=b2;}r3{e=e3;}");
  ASSERT_OK(engine_->Compact());
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(ScanAll(table()), "r1{a=a1;c=c1;d=d1;e=e1;}r2{b=b2;}r3{e=e3;}");
}

TEST_F(AlterTableTest, OptionsApplyToFilesWrittenFromThenOn) {
  Table t = table();
  const std::string value(2000, 'z');  // compresses very well
  auto write = [&](const std::string& prefix) {
    for (int i = 0; i < 20; i++) {
      ASSERT_OK(t.Mutate(WriteOptions(), prefix + std::to_string(i), Put("c", value)));
    }
  };
  write("plain");
  ASSERT_OK(engine_->Flush());
  const uint64_t plain_flush = engine_->GetStats().flush_bytes_written;
  const uint64_t bytes_before = t.GetTabletStats()->front().table_bytes;
  EXPECT_GT(plain_flush, 20u * 2000);

  TableSchema s = BaseSchema();
  s.locality_groups[1].compression = Compression::kZstd;
  s.locality_groups[1].compression_level = 5;
  s.locality_groups[1].block_size = 4096;
  s.locality_groups[1].bloom_bits_per_key = 0;
  ASSERT_OK(Alter(s));
  EXPECT_EQ(schema(), "g1(none,16384,10) g2(zstd5,4096,0) | a@g1 b@g1 c@g2");
  // The file written before stays as it was.
  EXPECT_EQ(t.GetTabletStats()->front().table_bytes, bytes_before);
  write("packed");
  ASSERT_OK(engine_->Flush());
  const uint64_t packed_flush = engine_->GetStats().flush_bytes_written - plain_flush;
  EXPECT_LT(packed_flush * 10, plain_flush) << "the new file is not compressed";
  // A compaction rewrites the old data with the new options too.
  ASSERT_OK(engine_->Compact());
  EXPECT_LT(t.GetTabletStats()->front().table_bytes * 5, bytes_before);
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(schema(), "g1(none,16384,10) g2(zstd5,4096,0) | a@g1 b@g1 c@g2");
  EXPECT_EQ(Row(table(), "plain7"), "c:q=" + value);
  EXPECT_EQ(Row(table(), "packed7"), "c:q=" + value);
}

TEST_F(AlterTableTest, RemovingOrMovingAFamilyWithDataFailsAndChangesNothing) {
  Table t = table();
  const std::string before = schema();
  TableSchema without_b = BaseSchema();
  without_b.families.erase(without_b.families.begin() + 1);
  TableSchema b_moved = BaseSchema();
  b_moved.families[1].locality_group = "g2";
  auto check_refused = [&](const std::string& where) {
    SCOPED_TRACE(where);
    for (const TableSchema* s : {&without_b, &b_moved}) {
      Status st = Alter(*s);
      EXPECT_TRUE(st.IsFailedPrecondition()) << st.ToString();
      EXPECT_NE(st.ToString().find("'b'"), std::string::npos) << st.ToString();
    }
    EXPECT_EQ(schema(), before);
  };
  // A cell in the memtable.
  ASSERT_OK(t.Mutate(WriteOptions(), "r1", Put("b", "b1").Put("a", "q", 1, "a1")));
  check_refused("memtable");
  // In a file.
  ASSERT_OK(engine_->Flush());
  check_refused("file");
  // Only a delete marker, in a file and in the memtable.
  ASSERT_OK(t.Mutate(WriteOptions(), "r1", RowMutation().DeleteColumn("b", "q")));
  EXPECT_EQ(Row(t, "r1"), "a:q=a1");
  check_refused("marker in memtable");
  ASSERT_OK(engine_->Flush());
  check_refused("marker in file");
  EXPECT_EQ(Row(t, "r1"), "a:q=a1");
  ASSERT_OK(t.Mutate(WriteOptions(), "r2", Put("b", "b2")));
  ASSERT_NO_FATAL_FAILURE(Reopen());
  t = table();
  check_refused("after reopen");
  EXPECT_EQ(ScanAll(t), "r1{a=a1;}r2{b=b2;}");
  // Deleting the cells and compacting empties the family: then it may go.
  ASSERT_OK(t.Mutate(WriteOptions(), "r2", RowMutation().DeleteColumn("b", "q")));
  ASSERT_OK(engine_->Compact());
  ASSERT_OK(Alter(without_b));
  EXPECT_EQ(schema(), "g1(none,16384,10) g2(none,16384,10) | a@g1 c@g2");
  EXPECT_EQ(ScanAll(t), "r1{a=a1;}");
}

TEST_F(AlterTableTest, RemovedFamilyIsGoneForWritesAndReadsAndItsNameFree) {
  Table t = table();
  ASSERT_OK(t.Mutate(WriteOptions(), "r1", Put("a", "a1").Put("c", "q", 1, "c1")));
  TableSchema s = BaseSchema();
  s.families.erase(s.families.begin() + 1);  // b never held data
  ASSERT_OK(Alter(s));
  EXPECT_EQ(schema(), "g1(none,16384,10) g2(none,16384,10) | a@g1 c@g2");
  Status w = t.Mutate(WriteOptions(), "r1", Put("a", "x").Put("b", "q", 1, "b1"));
  EXPECT_TRUE(w.IsInvalidArgument()) << w.ToString();
  EXPECT_NE(w.ToString().find("'b'"), std::string::npos);
  EXPECT_EQ(Row(t, "r1"), "a:q=a1 c:q=c1");  // the whole write was refused
  EXPECT_TRUE(t.ReadRow(ReadOptions(), "r1", RowFilter{.families = {"b"}})
                  .status()
                  .IsInvalidArgument());
  auto cm = t.CheckAndMutate(WriteOptions(), "r1", {}, Put("b", "x"));
  EXPECT_TRUE(cm.status().IsInvalidArgument());
  ASSERT_NO_FATAL_FAILURE(Reopen());
  t = table();
  EXPECT_EQ(schema(), "g1(none,16384,10) g2(none,16384,10) | a@g1 c@g2");
  EXPECT_TRUE(t.Mutate(WriteOptions(), "r1", Put("b", "b1")).IsInvalidArgument());
  // The name may come back: as a new family, after the others, and empty.
  s.families.push_back({.name = "b", .locality_group = "g2"});
  ASSERT_OK(Alter(s));
  EXPECT_EQ(schema(), "g1(none,16384,10) g2(none,16384,10) | a@g1 c@g2 b@g2");
  EXPECT_EQ(Row(t, "r1"), "a:q=a1 c:q=c1");
  ASSERT_OK(t.Mutate(WriteOptions(), "r1", Put("b", "new")));
  EXPECT_EQ(Row(t, "r1"), "a:q=a1 c:q=c1 b:q=new");
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(Row(table(), "r1"), "a:q=a1 c:q=c1 b:q=new");
}

TEST_F(AlterTableTest, MoveEmptyFamilyToAnotherGroup) {
  Table t = table();
  ASSERT_OK(t.Mutate(WriteOptions(), "r1", Put("a", "a1").Put("c", "q", 1, "c1")));
  ASSERT_OK(engine_->Flush());
  TableSchema s = BaseSchema();
  s.locality_groups.push_back({.name = "g3"});
  s.families[1].locality_group = "g3";  // b: empty, to a new group
  ASSERT_OK(Alter(s));
  EXPECT_EQ(schema(), "g1(none,16384,10) g2(none,16384,10) g3(none,16384,10) | a@g1 b@g3 c@g2");
  ASSERT_OK(t.Mutate(WriteOptions(), "r1", Put("b", "b1")));
  ASSERT_OK(t.Mutate(WriteOptions(), "r2", Put("b", "b2")));
  EXPECT_EQ(Row(t, "r1"), "a:q=a1 b:q=b1 c:q=c1");
  ASSERT_NO_FATAL_FAILURE(Reopen());  // b's cells come back from the log, into g3
  t = table();
  EXPECT_EQ(ScanAll(t), "r1{a=a1;b=b1;c=c1;}r2{b=b2;}");
  ASSERT_OK(engine_->Flush());
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(ScanAll(table()), "r1{a=a1;b=b1;c=c1;}r2{b=b2;}");
  // Reading only g1 does not see b any more.
  EXPECT_EQ(Row(table(), "r1", RowFilter{.families = {"a"}}), "a:q=a1");
}

// Drops every version of family "c": data that goes without a delete marker,
// as garbage collection makes it go.
class DropFamilyC : public CompactionFilter {
 public:
  void FilterColumn(const Context&, std::string_view, std::string_view family, std::string_view,
                    const std::vector<Version>& versions, std::vector<Decision>* decisions,
                    std::vector<std::string>*) override {
    if (family != "c") return;
    for (size_t i = 0; i < versions.size(); i++) (*decisions)[i] = Decision::kDrop;
  }
};

// Log records of a family logged before it moved (or went) stay in the log
// while another group holds unflushed data; replay must not bring them back
// in the family's new group, nor fail on the id of a family that went.
TEST(AlterTableReplayTest, RecordsFromBeforeAMoveOrRemovalStayGone) {
  ScratchDir dir("alter-replay");
  EngineOptions o;
  o.write_buffer_size = 4096;
  o.level0_compaction_trigger = 1;  // each flush of g2 compacts, and the filter empties c
  o.compaction_filter = std::make_shared<DropFamilyC>();
  TableSchema s = BaseSchema();
  s.families.push_back({.name = "d", .locality_group = "g2"});
  TableSchema moved = s;
  moved.families[2].locality_group = "g1";
  auto only_c = RowFilter{.families = {"c"}};
  {
    auto e = Engine::Open(dir.path(), o);
    ASSERT_OK(e);
    ASSERT_OK((*e)->CreateTenant("t"));
    Tenant tenant = *(*e)->OpenTenant("t");
    ASSERT_OK(tenant.CreateTable("tab", s));
    Table t = *tenant.OpenTable("tab");
    // Unflushed data in g1 keeps the log floor below everything after it.
    ASSERT_OK(t.Mutate(WriteOptions(), "keep", Put("a", "a0")));
    // c's cells, then d's, fill g2's memtables until they flush; the
    // compactions drop c's cells without a marker.
    for (int i = 0; i < 50; i++) {
      ASSERT_OK(t.Mutate(WriteOptions(), "c" + std::to_string(i), Put("c", std::string(100, 'c'))));
    }
    EXPECT_TRUE(tenant.AlterTable("tab", moved).IsFailedPrecondition());
    for (int i = 0; i < 150; i++) {
      ASSERT_OK(t.Mutate(WriteOptions(), "d" + std::to_string(i), Put("d", std::string(100, 'd'))));
    }
    Status st;
    for (int tries = 0; tries < 1000; tries++) {
      // Background work settles: c has nothing left anywhere.
      EngineStats stats = (*e)->GetStats();
      if (stats.immutable_memtables == 0 && stats.max_level0_files == 0) {
        st = tenant.AlterTable("tab", moved);
        if (st.ok()) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_OK(st);
    EXPECT_EQ(ScanAll(*tenant.OpenTable("tab")).find("c="), std::string::npos);
    ASSERT_OK((*e)->Close());
  }
  for (int pass = 0; pass < 2; pass++) {
    SCOPED_TRACE(pass == 0 ? "after the move" : "after the removal");
    auto e = Engine::Open(dir.path(), o);
    ASSERT_OK(e);
    Tenant tenant = *(*e)->OpenTenant("t");
    Table t = *tenant.OpenTable("tab");
    EXPECT_EQ(Row(t, "keep"), "a:q=a0");
    EXPECT_EQ(Row(t, "d7"), "d:q=" + std::string(100, 'd'));
    if (pass == 0) {
      EXPECT_EQ(Row(t, "c7"), "");
      auto it = t.Scan(ReadOptions(), ScanSpec{.filter = only_c});
      ASSERT_OK(it);
      EXPECT_FALSE((*it)->Valid()) << "c's cells came back: " << (*it)->row();
      TableSchema gone = moved;
      gone.families.erase(gone.families.begin() + 2);
      ASSERT_OK(tenant.AlterTable("tab", gone));
    } else {
      EXPECT_EQ(Row(t, "c7"), "");
      EXPECT_TRUE(t.Mutate(WriteOptions(), "c7", Put("c", "x")).IsInvalidArgument());
    }
    ASSERT_OK((*e)->Close());
  }
}

TEST_F(AlterTableTest, RemoveAndAddLocalityGroups) {
  Table t = table();
  ASSERT_OK(t.Mutate(WriteOptions(), "r1", Put("a", "a1").Put("c", "q", 1, "c1")));
  // A group without families may go at once, if it never held anything.
  TableSchema s = BaseSchema();
  s.locality_groups.push_back({.name = "spare", .in_memory = true});
  ASSERT_OK(Alter(s));
  EXPECT_EQ(schema(),
            "g1(none,16384,10) g2(none,16384,10) spare(mem,none,16384,10) | a@g1 b@g1 c@g2");
  ASSERT_OK(Alter(BaseSchema()));
  EXPECT_EQ(schema(), "g1(none,16384,10) g2(none,16384,10) | a@g1 b@g1 c@g2");
  // A group whose family is still listed in it cannot go: it is unknown.
  TableSchema no_g2 = BaseSchema();
  no_g2.locality_groups.pop_back();
  EXPECT_TRUE(Alter(no_g2).IsInvalidArgument());
  // Nor can its family go with it while it holds data.
  no_g2.families.pop_back();
  Status st = Alter(no_g2);
  EXPECT_TRUE(st.IsFailedPrecondition()) << st.ToString();
  EXPECT_NE(st.ToString().find("'c'"), std::string::npos) << st.ToString();
  // r1 was written and deleted within one memtable: the flush keeps
  // nothing of it. A second row delete, not flushed, is a marker in the
  // memtable of every group with a family, g2 included.
  ASSERT_OK(t.Mutate(WriteOptions(), "r1", RowMutation().DeleteRow()));
  ASSERT_OK(engine_->Flush());
  ASSERT_OK(t.Mutate(WriteOptions(), "r1", RowMutation().DeleteRow()));
  // c holds no cell now, so it may go; but g2 still holds the row marker.
  TableSchema c_gone = BaseSchema();
  c_gone.families.pop_back();
  ASSERT_OK(Alter(c_gone));
  st = Alter(no_g2);
  EXPECT_TRUE(st.IsFailedPrecondition()) << st.ToString();
  EXPECT_NE(st.ToString().find("'g2'"), std::string::npos) << st.ToString();
  EXPECT_EQ(schema(), "g1(none,16384,10) g2(none,16384,10) | a@g1 b@g1");
  // Compaction drops markers nothing needs; then the group may go.
  ASSERT_OK(engine_->Compact());
  ASSERT_OK(Alter(no_g2));
  EXPECT_EQ(schema(), "g1(none,16384,10) | a@g1 b@g1");
  // A new group takes the freed place; its data lives through reopen.
  TableSchema again = no_g2;
  again.locality_groups.push_back({.name = "g4", .bloom_bits_per_key = 4});
  again.families.push_back({.name = "c", .locality_group = "g4"});
  ASSERT_OK(Alter(again));
  EXPECT_EQ(schema(), "g1(none,16384,10) g4(none,16384,4) | a@g1 b@g1 c@g4");
  ASSERT_OK(t.Mutate(WriteOptions(), "r2", Put("c", "c2").Put("a", "q", 1, "a2")));
  ASSERT_OK(engine_->Flush());
  ASSERT_OK(t.Mutate(WriteOptions(), "r3", Put("c", "c3")));
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(schema(), "g1(none,16384,10) g4(none,16384,4) | a@g1 b@g1 c@g4");
  EXPECT_EQ(ScanAll(table()), "r2{a=a2;c=c2;}r3{c=c3;}");
}

TEST_F(AlterTableTest, BadInputChangesNothing) {
  const std::string before = schema();
  auto expect_invalid = [&](const TableSchema& s, const std::string& what) {
    Status st = Alter(s);
    EXPECT_TRUE(st.IsInvalidArgument()) << what << ": " << st.ToString();
    EXPECT_EQ(schema(), before) << what;
  };
  TableSchema s;
  expect_invalid(s, "no families");
  s = BaseSchema();
  s.families.push_back({.name = "a", .locality_group = "g2"});
  expect_invalid(s, "duplicate family");
  s = BaseSchema();
  s.locality_groups.push_back({.name = "g1"});
  expect_invalid(s, "duplicate group");
  s = BaseSchema();
  s.families.push_back({.name = "x", .locality_group = "nowhere"});
  expect_invalid(s, "unknown group");
  s = BaseSchema();
  s.families.push_back({.name = "bad name"});
  expect_invalid(s, "bad family name");
  s = BaseSchema();
  s.locality_groups.push_back({.name = std::string(65, 'g')});
  expect_invalid(s, "long group name");
  s = BaseSchema();
  s.locality_groups[0].compression = Compression::kZstd;
  s.locality_groups[0].compression_level = 0;
  expect_invalid(s, "zstd level 0");
  s = BaseSchema();
  s.locality_groups[1].block_size = 10;
  expect_invalid(s, "block size");
  s = BaseSchema();
  std::swap(s.families[0], s.families[1]);
  expect_invalid(s, "reordered families");
  s = BaseSchema();
  s.families.insert(s.families.begin() + 1, {.name = "new", .locality_group = "g1"});
  expect_invalid(s, "new family before an existing one");

  EXPECT_TRUE(tenant().AlterTable("nope", BaseSchema()).IsNotFound());
  EXPECT_TRUE(tenant().AlterTable("", BaseSchema()).IsInvalidArgument());
  EXPECT_TRUE(tenant().AlterTable("bad/name", BaseSchema()).IsInvalidArgument());
  EXPECT_TRUE(Tenant().AlterTable("tab", BaseSchema()).IsInvalidArgument());
  EXPECT_TRUE(Table().GetSchema().status().IsInvalidArgument());

  // A no-op change writes nothing.
  const std::string manifest = test::ReadAll(dir_.Join("MANIFEST"));
  ASSERT_OK(Alter(BaseSchema()));
  EXPECT_EQ(test::ReadAll(dir_.Join("MANIFEST")), manifest);

  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(schema(), before);
  Tenant t = tenant();
  Table handle = table();
  ASSERT_OK(t.DropTable("tab"));
  EXPECT_TRUE(t.AlterTable("tab", BaseSchema()).IsNotFound());
  EXPECT_TRUE(handle.GetSchema().status().IsNotFound());
  ASSERT_OK(engine_->Close());
  EXPECT_TRUE(t.AlterTable("tab", BaseSchema()).IsInvalidArgument());
}

TEST(AlterTableInMemoryTest, TurningInMemoryOnPinsFilesAndOffLetsThemGo) {
  ScratchDir dir("alter-inmemory");
  test::CountingReadFileSystem fs;
  EngineOptions o = test::InMemoryTestOptions(&fs);
  constexpr int kRows = 2000;
  auto read_all = [&](const Table& t) {
    for (int i = 0; i < kRows; i++) {
      auto cells = t.ReadRow(ReadOptions(), "row" + std::to_string(i),
                             RowFilter{.families = {"c"}});
      ASSERT_OK(cells);
      ASSERT_EQ(cells->size(), 1u);
    }
  };
  TableSchema mem = BaseSchema();
  mem.locality_groups[1].in_memory = true;
  {
    auto e = Engine::Open(dir.path(), o);
    ASSERT_OK(e);
    ASSERT_OK((*e)->CreateTenant("t"));
    Tenant tenant = *(*e)->OpenTenant("t");
    ASSERT_OK(tenant.CreateTable("tab", BaseSchema()));
    Table t = *tenant.OpenTable("tab");
    for (int i = 0; i < kRows; i++) {
      ASSERT_OK(t.Mutate(WriteOptions{.sync = false}, "row" + std::to_string(i),
                         Put("c", std::string(60, 'c')).Put("a", "q", 1, std::string(60, 'a'))));
    }
    ASSERT_OK((*e)->Compact());
    ASSERT_GT((*e)->GetStats().table_files, 2u);
    // Not in memory: reading c reads files.
    uint64_t before = fs.reads();
    ASSERT_NO_FATAL_FAILURE(read_all(t));
    EXPECT_GT(fs.reads(), before);

    ASSERT_OK(tenant.AlterTable("tab", mem));
    before = fs.reads();
    ASSERT_NO_FATAL_FAILURE(read_all(t));
    ASSERT_NO_FATAL_FAILURE(read_all(t));
    EXPECT_EQ(fs.reads(), before) << "an in-memory group's read touched a file";
    // New files of the group are resident too.
    for (int i = 0; i < kRows; i += 2) {
      ASSERT_OK(t.Mutate(WriteOptions{.sync = false}, "row" + std::to_string(i),
                         Put("c", std::string(60, 'd'))));
    }
    ASSERT_OK((*e)->Compact());
    before = fs.reads();
    ASSERT_NO_FATAL_FAILURE(read_all(t));
    EXPECT_EQ(fs.reads(), before);
    ASSERT_OK((*e)->Close());
  }
  {
    // Reopen makes it resident from the schema the manifest holds.
    auto e = Engine::Open(dir.path(), o);
    ASSERT_OK(e);
    Tenant tenant = *(*e)->OpenTenant("t");
    Table t = *tenant.OpenTable("tab");
    uint64_t before = fs.reads();
    ASSERT_NO_FATAL_FAILURE(read_all(t));
    EXPECT_EQ(fs.reads(), before);
    // Off: the files are let go and read like any other.
    ASSERT_OK(tenant.AlterTable("tab", BaseSchema()));
    before = fs.reads();
    ASSERT_NO_FATAL_FAILURE(read_all(t));
    EXPECT_GT(fs.reads(), before);
    ASSERT_OK((*e)->Close());
  }
}

// Alters racing writers, readers, scans, flushes, compactions and splits.
// Writers put family "a" (always there) together with the newest optional
// family: the write applies whole or fails whole with InvalidArgument.
TEST(AlterTableConcurrencyTest, AltersRaceWritesReadsAndBackgroundWork) {
  ScratchDir dir("alter-race");
  EngineOptions o;
  o.write_buffer_size = 16 << 10;
  o.level0_compaction_trigger = 2;
  o.target_file_size = 16 << 10;
  o.level1_max_bytes = 64 << 10;
  o.tablet_split_size = 96 << 10;
  o.max_background_compactions = 2;
  auto e = Engine::Open(dir.path(), o);
  ASSERT_OK(e);
  ASSERT_OK((*e)->CreateTenant("t"));
  Tenant tenant = *(*e)->OpenTenant("t");
  TableSchema base;
  base.locality_groups = {{.name = "main"}, {.name = "side"}};
  base.families = {{.name = "a", .locality_group = "main"}};
  ASSERT_OK(tenant.CreateTable("tab", base));
  Table table = *tenant.OpenTable("tab");

  const int writers = 3;
  const int rounds = test::UnderSanitizer() ? 30 : 80;
  std::atomic<bool> stop{false};
  std::atomic<int> optional{-1};  // the newest optional family "x<n>", -1: none yet
  // Per writer: rows written whole (row -> the optional family, or "").
  std::vector<std::map<std::string, std::string>> acked(writers);
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; w++) {
    threads.emplace_back([&, w] {
      Random rnd(w + 1);
      for (int i = 0; !stop.load(); i++) {
        const std::string row = "w" + std::to_string(w) + "-" + std::to_string(i);
        // Odd families get no data here, so they can be removed.
        const int x = optional.load();
        RowMutation m;
        m.Put("a", "q", 1, row + std::string(rnd.Uniform(200), 'v'));
        const std::string fam = x >= 0 && x % 2 == 0 && rnd.OneIn(2) ? "x" + std::to_string(x) : "";
        if (!fam.empty()) m.Put(fam, "q", 1, row);
        Status s = table.Mutate(WriteOptions{.sync = false}, row, m);
        if (s.ok()) {
          acked[w][row] = fam;
        } else {
          ASSERT_TRUE(s.IsInvalidArgument()) << s.ToString();
          refused++;
        }
      }
    });
  }
  // Writes the family that is about to be removed: they land before the
  // removal (which then fails) or fail after it, whole either way.
  std::map<std::string, std::string> probes;
  threads.emplace_back([&] {
    for (int i = 0; !stop.load(); i++) {
      // The newest x<k> with k % 4 == 1 that a round tried to remove (or
      // is about to): x3, x7, ... stay empty, so they always go.
      int x = optional.load() - 2;
      while (x >= 0 && x % 4 != 1) x--;
      if (x < 0) {
        std::this_thread::yield();
        continue;
      }
      const std::string row = "p-" + std::to_string(i);
      const std::string fam = "x" + std::to_string(x);
      RowMutation m;
      m.Put("a", "q", 1, row).Put(fam, "q", 1, row);
      Status s = table.Mutate(WriteOptions{.sync = false}, row, m);
      if (s.ok()) {
        probes[row] = fam;
      } else {
        ASSERT_TRUE(s.IsInvalidArgument()) << s.ToString();
        refused++;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(7));
    }
  });
  threads.emplace_back([&] {
    Random rnd(99);
    while (!stop.load()) {
      const std::string row = "w" + std::to_string(rnd.Uniform(writers)) + "-" +
                              std::to_string(rnd.Uniform(50));
      auto cells = table.ReadRow(ReadOptions(), row);
      ASSERT_OK(cells);
      // A row is whole: "a" first, then the optional family, if any.
      if (!cells->empty()) {
        ASSERT_EQ((*cells)[0].family, "a");
      }
      auto it = table.Scan(ReadOptions(), ScanSpec{.start_row = row});
      ASSERT_OK(it);
      for (int n = 0; n < 20 && (*it)->Valid(); n++) (*it)->Next();
      ASSERT_OK((*it)->status());
      auto session = table.NewReadSession();
      ASSERT_OK(session);
      auto got = (*session)->Get(row, "a", "q");
      ASSERT_OK(got);
    }
  });

  // The alters: each round adds x<n> (in "main" or in a new group), turns
  // options of "side" over, and removes x<n-2> when it is empty (else the
  // refusal must name it).
  TableSchema current = base;
  int removed = 0, kept = 0;
  for (int n = 0; n < rounds; n++) {
    TableSchema next = current;
    const bool own_group = n % 3 == 0;
    if (own_group) next.locality_groups.push_back({.name = "gx" + std::to_string(n)});
    next.families.push_back(
        {.name = "x" + std::to_string(n),
         .locality_group = own_group ? "gx" + std::to_string(n) : std::string("main")});
    for (auto& g : next.locality_groups) {
      if (g.name != "side") continue;
      g.in_memory = n % 2 == 0;
      g.compression = n % 4 < 2 ? Compression::kZstd : Compression::kNone;
    }
    ASSERT_OK(tenant.AlterTable("tab", next));
    current = next;
    optional.store(n);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (n < 2) continue;
    // Try to drop x<n-2> (and its own group, if it had one).
    TableSchema fewer = current;
    const std::string victim = "x" + std::to_string(n - 2);
    std::erase_if(fewer.families, [&](const auto& f) { return f.name == victim; });
    std::erase_if(fewer.locality_groups,
                  [&](const auto& g) { return g.name == "g" + victim; });
    Status s = tenant.AlterTable("tab", fewer);
    if (s.ok()) {
      current = fewer;
      removed++;
    } else {
      ASSERT_TRUE(s.IsFailedPrecondition()) << s.ToString();
      ASSERT_NE(s.ToString().find("'" + victim + "'"), std::string::npos) << s.ToString();
      kept++;
    }
  }
  stop.store(true);
  for (auto& th : threads) th.join();
  const EngineStats stats = (*e)->GetStats();
  std::printf("alter race: %d rounds, %d families removed, %d kept (had data), %d writes "
              "refused; %llu writes, %llu flushes, %llu compactions, %llu tablets\n",
              rounds, removed, kept, refused.load(), static_cast<unsigned long long>(stats.writes),
              static_cast<unsigned long long>(stats.flushes),
              static_cast<unsigned long long>(stats.compactions),
              static_cast<unsigned long long>(stats.tablets));

  auto check = [&](const Table& t) {
    auto schema = t.GetSchema();
    ASSERT_OK(schema);
    EXPECT_EQ(Describe(*schema), Describe(current));
    std::vector<std::map<std::string, std::string>> all = acked;
    all.push_back(probes);
    for (const auto& rows : all) {
      for (const auto& [row, fam] : rows) {
        auto cells = t.ReadRow(ReadOptions(), row);
        ASSERT_OK(cells);
        ASSERT_EQ(cells->size(), fam.empty() ? 1u : 2u) << row;
        EXPECT_EQ((*cells)[0].family, "a");
        if (!fam.empty()) {
          EXPECT_EQ((*cells)[1].family, fam);
        }
      }
    }
  };
  ASSERT_NO_FATAL_FAILURE(check(table));
  ASSERT_OK((*e)->Close());
  auto reopened = Engine::Open(dir.path(), o);
  ASSERT_OK(reopened);
  ASSERT_NO_FATAL_FAILURE(check(*(*reopened)->OpenTenant("t")->OpenTable("tab")));
}

// Crash test: a child adds families and writes them (and adds and removes
// empty ones) until it is killed; every alter and write it had acknowledged
// must be there after reopen, and the schema is the old or the new one of
// the alter in flight.
TEST(AlterTableCrashTest, SigkillDuringAltersAndWrites) {
  ScratchDir dir("alter-crash");
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("STRATA_TEST_SEED=" + std::to_string(seed));
  Random rnd(seed);
  EngineOptions o;
  o.write_buffer_size = 16 << 10;
  o.level0_compaction_trigger = 2;
  {
    auto e = Engine::Open(dir.path(), o);
    ASSERT_OK(e);
    ASSERT_OK((*e)->CreateTenant("t"));
    ASSERT_OK((*e)->OpenTenant("t")->CreateTable("tab", BaseSchema()));
  }
  const int rounds = test::LongTests() ? 40 : 6;
  int next = 0;  // families f<next>... are the next round's
  std::set<int> complete;  // families f<i> whose rows were all acknowledged
  for (int round = 0; round < rounds; round++) {
    const int first = next;
    const test::KilledChild killed = test::RunChildUntilKilled(
        [&](int fd) {
          auto e = Engine::Open(dir.path(), o);
          if (!e.ok()) _exit(3);
          Tenant tenant = *(*e)->OpenTenant("t");
          Table t = *tenant.OpenTable("tab");
          TableSchema s = *t.GetSchema();
          for (int i = first;; i++) {
            const std::string f = "f" + std::to_string(i);
            TableSchema added = s;
            if (i % 2 == 0) added.locality_groups.push_back({.name = "g" + f});
            added.families.push_back(
                {.name = f, .locality_group = i % 2 == 0 ? "g" + f : std::string("g1")});
            added.families.push_back({.name = "e" + std::to_string(i), .locality_group = "g2"});
            if (!tenant.AlterTable("tab", added).ok()) _exit(4);
            // e<i> never holds data: it goes again at once.
            TableSchema trimmed = added;
            trimmed.families.pop_back();
            if (!tenant.AlterTable("tab", trimmed).ok()) _exit(5);
            s = trimmed;
            char line[64];
            int n = std::snprintf(line, sizeof(line), "A %d\n", i);
            if (write(fd, line, n) != n) _exit(6);
            for (int r = 0; r < 20; r++) {
              RowMutation m;
              m.Put(f, "q", 1, f).Put("a", "q", 1, "a");
              if (!t.Mutate(WriteOptions(), f + "-" + std::to_string(r), m).ok()) _exit(7);
            }
            n = std::snprintf(line, sizeof(line), "W %d\n", i);
            if (write(fd, line, n) != n) _exit(8);
          }
        },
        static_cast<int>(rnd.Uniform(50)));
    ASSERT_TRUE(killed.error.empty()) << "round " << round << ": " << killed.error;
    int altered = first - 1, written = -1;
    size_t pos = 0;
    for (size_t nl; (nl = killed.output.find('\n', pos)) != std::string::npos; pos = nl + 1) {
      char kind;
      int i;
      ASSERT_EQ(std::sscanf(killed.output.c_str() + pos, "%c %d", &kind, &i), 2);
      (kind == 'A' ? altered : written) = i;
    }
    auto e = Engine::Open(dir.path(), o);
    ASSERT_OK(e) << "round " << round;
    Table t = *(*e)->OpenTenant("t")->OpenTable("tab");
    auto schema = t.GetSchema();
    ASSERT_OK(schema);
    std::set<std::string> families;
    for (const auto& f : schema->families) families.insert(f.name);
    // Every acknowledged alter is there; the one in flight may be.
    for (int i = 0; i <= altered; i++) {
      ASSERT_TRUE(families.count("f" + std::to_string(i))) << "round " << round << ": f" << i;
    }
    EXPECT_LE(families.size(), 3u + (altered + 2) + 1) << Describe(*schema);
    next = altered + 1;
    while (families.count("f" + std::to_string(next))) next++;
    // The e<i> of an alter in flight may be there; finish what it started.
    TableSchema clean = *schema;
    std::erase_if(clean.families, [](const auto& f) { return f.name[0] == 'e'; });
    ASSERT_OK((*e)->OpenTenant("t")->AlterTable("tab", clean));
    for (int i = first; i <= written; i++) complete.insert(i);
    for (int i : complete) {
      const std::string f = "f" + std::to_string(i);
      for (int r = 0; r < 20; r++) {
        ASSERT_EQ(Row(t, f + "-" + std::to_string(r)), "a:q=a " + f + ":q=" + f)
            << "round " << round;
      }
    }
    ASSERT_OK((*e)->Close());
  }
  std::printf("alter crash test: %d rounds, %d families added, %zu written whole\n", rounds,
              next, complete.size());
}

}  // namespace
}  // namespace strata
