// The row walk on its own: ResolvedFilter's single columns (order, repeats
// and their ranges, binary qualifiers) and CollectRowFromHere with a filter of
// single columns, with or without ranges of their own, against the same walk
// over the whole row, on random rows of versions and delete markers; the
// whole-row walk against the visibility rules spelled out, in families whose
// column markers hide by timestamp and in others; and the walk skipping what
// a column can no longer give.
#include "engine/row_reader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/cell_key.h"
#include "common/coding.h"
#include "common/random.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::engine {
namespace {

// CollectRowFromHere at `snapshot`, with no undurable records.
Status Collect(InternalIterator* it, const Slice& prefix, SequenceNumber snapshot,
               const ResolvedFilter& filter, const Schema& schema, RowSink* out) {
  ReadPoint at;
  at.snapshot = snapshot;
  return CollectRowFromHere(it, prefix, &at, filter, schema, out);
}

// A sorted run of (cell key, value) entries.
class VectorIterator final : public InternalIterator {
 public:
  explicit VectorIterator(std::map<std::string, std::string> entries)
      : entries_(std::move(entries)), it_(entries_.end()) {}

  bool Valid() const override { return it_ != entries_.end(); }
  void SeekToFirst() override { it_ = entries_.begin(); }
  void Seek(const Slice& target) override { it_ = entries_.lower_bound(target.ToString()); }
  void SeekBefore(const Slice& target) override {
    it_ = entries_.lower_bound(target.ToString());
    it_ = it_ == entries_.begin() ? entries_.end() : std::prev(it_);
  }
  void Next() override { ++it_; }
  Slice key() const override { return Slice(it_->first); }
  Slice value() const override { return Slice(it_->second); }
  Status status() const override { return Status::OK(); }

 private:
  const std::map<std::string, std::string> entries_;
  std::map<std::string, std::string>::const_iterator it_;
};

// A VectorIterator that counts the steps a walk takes.
class CountingIterator final : public InternalIterator {
 public:
  explicit CountingIterator(std::map<std::string, std::string> entries)
      : base_(std::move(entries)) {}

  bool Valid() const override { return base_.Valid(); }
  void SeekToFirst() override { base_.SeekToFirst(); }
  void Seek(const Slice& target) override {
    seeks++;
    base_.Seek(target);
  }
  void SeekBefore(const Slice& target) override { base_.SeekBefore(target); }
  void Next() override {
    nexts++;
    base_.Next();
  }
  Slice key() const override { return base_.key(); }
  Slice value() const override { return base_.value(); }
  Status status() const override { return Status::OK(); }

  int seeks = 0;
  int nexts = 0;

 private:
  VectorIterator base_;
};

// What a sink saw: the cells, and the filter column of each.
class Collected final : public RowSink {
 public:
  void Add(const FoundColumn& column, uint64_t timestamp, Slice value) override {
    cells.push_back(Cell{column.family->name, column.qualifier.ToString(), timestamp,
                         value.ToString()});
    columns.push_back(column.index);
  }

  std::vector<Cell> cells;
  std::vector<size_t> columns;
};

// Family "c" (id 3) has column_markers_hide_by_timestamp.
Schema ThreeFamilies() {
  TableSchema s;
  s.families = {
      {.name = "a"}, {.name = "b"}, {.name = "c", .column_markers_hide_by_timestamp = true}};
  Result<Schema> schema = Schema::FromUser(s);
  EXPECT_OK(schema);
  return *schema;
}

// The column's bytes after the row in its cell keys.
std::string Encoded(uint16_t family, const std::string& qualifier) {
  std::string prefix;
  AppendRowPrefix(&prefix, "r");
  std::string column;
  AppendColumnPrefix(&column, "r", family, qualifier);
  return column.substr(prefix.size());
}

// Qualifiers that sort next to each other, some with 0x00 bytes.
const std::vector<std::string> kQualifiers = {
    "",  std::string(1, '\0'), std::string("\0\0", 2), "a", std::string("a\0", 2),
    std::string("a\0b", 3), "a\xff", "ab", "b", "\xff\x01", "q10", "q2"};

TEST(ResolvedFilterTest, SingleColumnsSortAsTheirCellKeysAndKeepTheFirstRepeat) {
  ResolvedFilter f;
  EXPECT_TRUE(f.all_families);
  std::vector<std::pair<uint16_t, std::string>> added;
  // Reverse order, every column of family 2 then family 1, and repeats.
  for (uint16_t family : {2, 1}) {
    for (auto q = kQualifiers.rbegin(); q != kQualifiers.rend(); ++q) {
      added.emplace_back(family, *q);
    }
  }
  added.emplace_back(2, "a");
  added.emplace_back(1, std::string(1, '\0'));
  f.ReserveColumns(2, 4);  // too little: only a hint
  for (const auto& [family, q] : added) f.AddColumn(family, q);
  f.SortColumns();
  EXPECT_FALSE(f.all_families);
  ASSERT_EQ(f.num_columns(), 2 * kQualifiers.size());
  for (size_t i = 0; i < f.num_columns(); i++) {
    const auto& [family, q] = added[f.column_source(i)];
    EXPECT_EQ(f.column(i).ToString(), Encoded(family, q)) << i;
    EXPECT_EQ(f.qualifier(i).ToString(), q) << i;
    if (i > 0) {
      EXPECT_LT(f.column(i - 1).compare(f.column(i)), 0) << i;
    }
  }
  // CompareColumn orders as compare does, against columns as cell keys hold
  // them (followed by a timestamp and tag).
  auto sign = [](int c) { return c < 0 ? -1 : c > 0 ? 1 : 0; };
  for (uint16_t family : {1, 2, 3}) {
    for (const std::string& q : kQualifiers) {
      const std::string col = Encoded(family, q);
      const std::string key = col + std::string(16, '\xab');
      const Slice in_key(key.data(), col.size());
      for (size_t i = 0; i < f.num_columns(); i++) {
        EXPECT_EQ(sign(f.CompareColumn(i, in_key, ColumnHead(key.data(), col.size()))),
                  sign(f.column(i).compare(in_key)))
            << i << " " << EscapeBytes(col);
      }
    }
  }
  // Of repeats, the first added stays.
  for (size_t i = 0; i < f.num_columns(); i++) {
    EXPECT_LT(f.column_source(i), 2 * kQualifiers.size());
  }
  EXPECT_FALSE(f.MayWantFamily(0));
  EXPECT_TRUE(f.MayWantFamily(1));
  EXPECT_TRUE(f.MayWantFamily(2));
  EXPECT_FALSE(f.MayWantFamily(3));

  // Cleared, it keeps sources counted from the next first column; added in
  // order, the order stays.
  f.ClearColumns();
  EXPECT_EQ(f.num_columns(), 0u);
  f.AddColumn(3, "x");
  f.AddColumn(3, "y");
  f.SortColumns();
  ASSERT_EQ(f.num_columns(), 2u);
  EXPECT_EQ(f.column_source(0), 0u);
  EXPECT_EQ(f.qualifier(1).ToString(), "y");
  EXPECT_TRUE(f.MayWantFamily(3));
  EXPECT_FALSE(f.MayWantFamily(1));
}

// The random rows the walk tests read.
struct RowShape {
  int max_entries;         // fewer than this many entries
  uint16_t families;       // ids 1..families
  size_t qualifiers;       // the first this many of kQualifiers
  uint64_t max_timestamp;  // timestamps 1..max_timestamp
  uint32_t odds;           // of `odds` entries, one row marker, one column
  uint32_t cell_markers;   // marker, this many cell markers; the rest puts
};

// Adds a random row "r" of `shape` to *entries, numbering entries from *seq.
void AddRandomRow(Random* rnd, const RowShape& shape, SequenceNumber* seq,
                  std::map<std::string, std::string>* entries) {
  const int n = static_cast<int>(rnd->Uniform(shape.max_entries));
  for (int i = 0; i < n; i++) {
    const uint16_t family = static_cast<uint16_t>(1 + rnd->Uniform(shape.families));
    const std::string& q = kQualifiers[rnd->Uniform(shape.qualifiers)];
    const uint64_t ts = 1 + rnd->Uniform(shape.max_timestamp);
    const uint32_t kind = static_cast<uint32_t>(rnd->Uniform(shape.odds));
    std::string key;
    if (kind == 0) {
      AppendCellKey(&key, "r", kRowMarkerFamily, "", ts, (*seq)++, CellType::kDeleteRow);
    } else if (kind == 1) {
      AppendCellKey(&key, "r", family, q, ts, (*seq)++, CellType::kDeleteColumn);
    } else if (kind < 2 + shape.cell_markers) {
      AppendCellKey(&key, "r", family, q, ts, (*seq)++, CellType::kDeleteCell);
    } else {
      AppendCellKey(&key, "r", family, q, ts, (*seq)++, CellType::kPut);
    }
    (*entries)[key] = "v" + std::to_string(i);
  }
}

// Rounds of random rows, from the seed the run was given.
class RandomRowTest : public ::testing::Test {
 protected:
  RandomRowTest() { AppendRowPrefix(&prefix_, "r"); }

  const uint64_t seed_ = test::TestSeed();
  const ::testing::ScopedTrace trace_{__FILE__, __LINE__,
                                      "STRATA_TEST_SEED=" + std::to_string(seed_)};
  Random rnd_{seed_};
  const Schema schema_ = ThreeFamilies();
  std::string prefix_;  // of row "r"
  const int rounds_ = test::UnderSanitizer() ? 100 : 500;
};

// Random rows of versions and delete markers of every kind: reading single
// columns (with or without whole families) gives what the whole-row walk
// gives for those columns, with each cell tagged with its filter column.
TEST_F(RandomRowTest, SingleColumnsEqualTheWholeRowWalkRestrictedToThem) {
  for (int round = 0; round < rounds_; round++) {
    SCOPED_TRACE("round " + std::to_string(round));
    // The row, with a neighbour on each side that no read may return.
    std::map<std::string, std::string> entries;
    SequenceNumber seq = 1;
    for (const char* other : {"q", "s"}) {
      std::string key;
      AppendCellKey(&key, other, 1, "a", 5, seq++, CellType::kPut);
      entries[key] = "other row";
    }
    AddRandomRow(&rnd_, RowShape{40, 3, kQualifiers.size(), 8, 12, 1}, &seq, &entries);
    const SequenceNumber snapshot = rnd_.Uniform(4) == 0 ? rnd_.Uniform(seq) : seq;

    ResolvedFilter whole;
    if (rnd_.Uniform(2) == 0) {
      whole.min_timestamp = 1 + rnd_.Uniform(4);
      whole.max_timestamp = whole.min_timestamp + rnd_.Uniform(6);
    }
    if (rnd_.Uniform(2) == 0) whole.max_versions = 1 + static_cast<uint32_t>(rnd_.Uniform(3));
    ResolvedFilter singles;
    singles.min_timestamp = whole.min_timestamp;
    singles.max_timestamp = whole.max_timestamp;
    singles.max_versions = whole.max_versions;
    // Random single columns, repeats and unwritten ones included; sometimes
    // a whole family too.
    std::vector<std::pair<uint16_t, std::string>> wanted;
    const int k = static_cast<int>(rnd_.Uniform(10));
    for (int i = 0; i < k; i++) {
      wanted.emplace_back(static_cast<uint16_t>(1 + rnd_.Uniform(3)),
                          kQualifiers[rnd_.Uniform(kQualifiers.size())]);
      singles.AddColumn(wanted.back().first, wanted.back().second);
    }
    if (wanted.empty() || rnd_.Uniform(4) == 0) {
      const uint16_t family = static_cast<uint16_t>(1 + rnd_.Uniform(3));
      singles.all_families = false;
      singles.families.assign(4, false);
      singles.families[family] = true;
    }
    singles.SortColumns();

    VectorIterator whole_it(entries);
    whole_it.Seek(prefix_);
    Collected all;
    ASSERT_OK(Collect(&whole_it, prefix_, snapshot, whole, schema_, &all));
    EXPECT_TRUE(whole_it.Valid() && whole_it.value() == Slice("other row"))
        << "the walk stops after the row";

    VectorIterator it(entries);
    it.Seek(prefix_);
    Collected got;
    ASSERT_OK(Collect(&it, prefix_, snapshot, singles, schema_, &got));

    std::vector<Cell> expected;
    std::vector<size_t> expected_columns;
    for (const Cell& c : all.cells) {
      const uint16_t family = schema_.FindFamily(c.family)->id;
      const std::string encoded = Encoded(family, c.qualifier);
      if (singles.WantsFamily(family)) {
        expected.push_back(c);
        expected_columns.push_back(FoundColumn::kWholeFamily);
        continue;
      }
      for (size_t i = 0; i < singles.num_columns(); i++) {
        if (singles.column(i) == Slice(encoded)) {
          expected.push_back(c);
          expected_columns.push_back(i);
        }
      }
    }
    ASSERT_EQ(got.cells, expected);
    ASSERT_EQ(got.columns, expected_columns);
  }
}

// The visibility rules of row_reader.h, entry by entry: the cells of row
// "r" a reader at `snapshot` sees, in cell-key order.
std::vector<Cell> VisibleByTheRules(const std::map<std::string, std::string>& entries,
                                    SequenceNumber snapshot, const Schema& schema) {
  std::vector<ParsedCellKey> row;
  std::vector<std::string> values;
  for (const auto& [key, value] : entries) {
    ParsedCellKey k;
    EXPECT_TRUE(ParseCellKey(key, &k));
    if (k.row != "r" || k.sequence > snapshot) continue;
    row.push_back(k);
    values.push_back(value);
  }
  std::vector<Cell> out;
  for (size_t i = 0; i < row.size(); i++) {
    const ParsedCellKey& v = row[i];
    if (v.type != CellType::kPut) continue;
    const bool by_timestamp = schema.FamilyById(v.family)->column_markers_hide_by_timestamp;
    bool hidden = false;
    for (const ParsedCellKey& e : row) {
      const bool same_column = e.family == v.family && e.qualifier == v.qualifier;
      switch (e.type) {
        case CellType::kPut:
        case CellType::kDeleteCell:
          hidden |= same_column && e.timestamp == v.timestamp && e.sequence > v.sequence;
          break;
        case CellType::kDeleteColumn:
          hidden |= same_column && ((e.timestamp >= v.timestamp && e.sequence > v.sequence) ||
                                    (by_timestamp && e.timestamp > v.timestamp));
          break;
        case CellType::kDeleteRow:
          hidden |= e.timestamp >= v.timestamp && e.sequence > v.sequence;
          break;
      }
    }
    if (!hidden) {
      out.push_back(Cell{schema.FamilyById(v.family)->name, v.qualifier, v.timestamp, values[i]});
    }
  }
  return out;
}

// Random rows, read whole at random snapshots: the walk hands out exactly
// what the rules say, in family "c" (column markers hide by timestamp) and
// in the others.
TEST_F(RandomRowTest, WholeRowWalkFollowsTheRules) {
  for (int round = 0; round < rounds_; round++) {
    SCOPED_TRACE("round " + std::to_string(round));
    std::map<std::string, std::string> entries;
    SequenceNumber seq = 1;
    AddRandomRow(&rnd_, RowShape{60, 3, 3, 10, 8, 1}, &seq, &entries);
    const SequenceNumber snapshot = rnd_.Uniform(3) == 0 ? rnd_.Uniform(seq) : seq;
    VectorIterator it(entries);
    it.Seek(prefix_);
    Collected got;
    ASSERT_OK(Collect(&it, prefix_, snapshot, ResolvedFilter(), schema_, &got));
    ASSERT_EQ(got.cells, VisibleByTheRules(entries, snapshot, schema_));
  }
}

TEST(ResolvedFilterTest, RepeatsReadOverTheUnionOfTheirRanges) {
  ResolvedFilter f;
  f.min_timestamp = 3;
  f.max_timestamp = 9;
  f.max_versions = 2;
  f.AddColumn(1, "b");  // the filter's range as it is now
  f.AddColumn(1, "a", VersionRange{10, 20, 1});
  f.AddColumn(1, "a", VersionRange{5, 12, 4});
  f.AddColumn(1, "b", VersionRange{1, 4, 1});
  f.AddColumn(2, "a", VersionRange{7, 7, UINT32_MAX});
  f.SortColumns();
  ASSERT_EQ(f.num_columns(), 3u);
  EXPECT_EQ(f.qualifier(0).ToString(), "a");
  EXPECT_EQ(f.column_source(0), 1u);
  EXPECT_EQ(f.column_range(0).min_timestamp, 5u);
  EXPECT_EQ(f.column_range(0).max_timestamp, 20u);
  EXPECT_EQ(f.column_range(0).max_versions, 4u);
  EXPECT_EQ(f.qualifier(1).ToString(), "b");
  EXPECT_EQ(f.column_source(1), 0u);
  EXPECT_EQ(f.column_range(1).min_timestamp, 1u);
  EXPECT_EQ(f.column_range(1).max_timestamp, 9u);
  EXPECT_EQ(f.column_range(1).max_versions, 2u);
  EXPECT_EQ(f.column_range(2).min_timestamp, 7u);
  EXPECT_EQ(f.column_range(2).max_timestamp, 7u);
  EXPECT_EQ(f.column_range(2).max_versions, UINT32_MAX);
}

// Random rows as above, each single column read over a range of its own:
// every column gives what the unrestricted whole-row walk gives for it, cut
// to its range and max_versions.
TEST_F(RandomRowTest, EachSingleColumnGetsItsOwnRange) {
  for (int round = 0; round < rounds_; round++) {
    SCOPED_TRACE("round " + std::to_string(round));
    std::map<std::string, std::string> entries;
    SequenceNumber seq = 1;
    std::string other;
    AppendCellKey(&other, "s", 1, "a", 5, seq++, CellType::kPut);
    entries[other] = "other row";
    // Few columns, long histories: most columns are cut short.
    AddRandomRow(&rnd_, RowShape{80, 2, 3, 30, 16, 2}, &seq, &entries);
    const SequenceNumber snapshot = rnd_.Uniform(4) == 0 ? rnd_.Uniform(seq) : seq;

    ResolvedFilter filter;
    const int k = 1 + static_cast<int>(rnd_.Uniform(5));
    for (int i = 0; i < k; i++) {
      VersionRange r;
      r.min_timestamp = 1 + rnd_.Uniform(30);
      r.max_timestamp = r.min_timestamp + rnd_.Uniform(30);
      r.max_versions =
          rnd_.Uniform(2) == 0 ? UINT32_MAX : 1 + static_cast<uint32_t>(rnd_.Uniform(3));
      filter.AddColumn(static_cast<uint16_t>(1 + rnd_.Uniform(2)), kQualifiers[rnd_.Uniform(3)], r);
    }
    filter.SortColumns();

    VectorIterator whole_it(entries);
    whole_it.Seek(prefix_);
    Collected all;
    ASSERT_OK(Collect(&whole_it, prefix_, snapshot, ResolvedFilter(), schema_, &all));

    CountingIterator it(entries);
    it.Seek(prefix_);
    Collected got;
    ASSERT_OK(Collect(&it, prefix_, snapshot, filter, schema_, &got));
    EXPECT_TRUE(it.Valid() && it.value() == Slice("other row")) << "the walk stops after the row";

    std::vector<Cell> expected;
    std::vector<size_t> expected_columns;
    for (size_t i = 0; i < filter.num_columns(); i++) {
      const VersionRange& r = filter.column_range(i);
      uint32_t taken = 0;
      for (const Cell& c : all.cells) {
        const std::string encoded = Encoded(schema_.FindFamily(c.family)->id, c.qualifier);
        if (filter.column(i) != Slice(encoded)) continue;
        if (c.timestamp < r.min_timestamp || c.timestamp > r.max_timestamp) continue;
        if (taken++ >= r.max_versions) continue;
        expected.push_back(c);
        expected_columns.push_back(i);
      }
    }
    ASSERT_EQ(got.cells, expected);
    ASSERT_EQ(got.columns, expected_columns);
  }
}

// A column with a long history costs the walk the versions it can use, and
// a Seek past the rest; the next column is still read.
TEST(CollectRowTest, SkipsTheRestOfAColumnOnceDone) {
  const Schema schema = ThreeFamilies();
  std::string prefix;
  AppendRowPrefix(&prefix, "r");
  std::map<std::string, std::string> entries;
  SequenceNumber seq = 1;
  for (uint64_t ts = 1; ts <= 1000; ts++) {
    std::string put, erase;
    AppendCellKey(&put, "r", 1, "a", ts, seq++, CellType::kPut);
    entries[put] = "a" + std::to_string(ts);
    if (ts % 2 == 0) {  // every other version deleted, as a lock column's are
      AppendCellKey(&erase, "r", 1, "a", ts, seq++, CellType::kDeleteCell);
      entries[erase] = "";
    }
  }
  std::string b;
  AppendCellKey(&b, "r", 1, "b", 7, seq++, CellType::kPut);
  entries[b] = "b";

  struct Case {
    VersionRange range;
    std::vector<uint64_t> timestamps;  // of column a, newest first
  };
  const std::vector<Case> cases = {
      {{1, kMaxTimestamp, 1}, {999}},
      {{1, 500, 2}, {499, 497}},
      {{990, 995, UINT32_MAX}, {995, 993, 991}},
  };
  for (const Case& c : cases) {
    ResolvedFilter filter;
    filter.AddColumn(1, "a", c.range);
    filter.AddColumn(1, "b");
    filter.SortColumns();
    CountingIterator it(entries);
    it.Seek(prefix);
    const int seeks_before = it.seeks;
    Collected got;
    ASSERT_OK(Collect(&it, prefix, seq, filter, schema, &got));
    ASSERT_EQ(got.cells.size(), c.timestamps.size() + 1);
    for (size_t i = 0; i < c.timestamps.size(); i++) {
      EXPECT_EQ(got.cells[i].qualifier, "a");
      EXPECT_EQ(got.cells[i].timestamp, c.timestamps[i]);
    }
    EXPECT_EQ(got.cells.back().qualifier, "b");
    EXPECT_EQ(it.seeks - seeks_before, 1);
    // The walk goes down to the range, then at most a few entries further.
    EXPECT_LE(it.nexts, 2 * (1000 - static_cast<int>(c.timestamps.back())) + 20)
        << c.range.min_timestamp;
  }
}

// Columns the filter does not want cost a few steps and a Seek each, not a
// step per version: a hot neighbour of the column read (a lock or write
// column's history) must not make the read walk all of it. The walk still
// ends at the next row, where a scan goes on.
TEST(CollectRowTest, SkipsUnwantedColumnsWhateverTheirVersions) {
  const Schema schema = ThreeFamilies();
  std::string prefix;
  AppendRowPrefix(&prefix, "r");
  std::map<std::string, std::string> entries;
  SequenceNumber seq = 1;
  auto put = [&](const std::string& row, uint16_t family, const std::string& q, uint64_t ts) {
    std::string k;
    AppendCellKey(&k, row, family, q, ts, seq++, CellType::kPut);
    entries[k] = q + std::to_string(ts);
  };
  constexpr uint64_t kVersions = 20000;
  for (uint64_t ts = 1; ts <= kVersions; ts++) {
    put("r", 1, "0", ts);  // before the wanted column
    put("r", 1, "b", ts);  // after it
    put("r", 2, "x", ts);  // a family not wanted
  }
  put("r", 1, "a", 5);
  for (uint64_t ts = 1; ts <= 3; ts++) put("r", 3, "z", ts);  // a family wanted whole
  put("s", 1, "a", 1);                                        // the next row
  ResolvedFilter filter;
  filter.AddColumn(1, "a");
  filter.families = {false, false, false, true};
  filter.SortColumns();
  CountingIterator it(entries);
  it.Seek(prefix);
  Collected got;
  ASSERT_OK(Collect(&it, prefix, seq, filter, schema, &got));
  ASSERT_EQ(got.cells.size(), 4u);
  EXPECT_EQ(got.cells[0], (Cell{"a", "a", 5, "a5"}));
  for (size_t i = 1; i < 4; i++)
    EXPECT_EQ(got.cells[i], (Cell{"c", "z", 4 - i, "z" + std::to_string(4 - i)}));
  EXPECT_LT(it.nexts, 100);
  EXPECT_LT(it.seeks, 10);
  ASSERT_TRUE(it.Valid());
  std::string next;
  AppendRowPrefix(&next, "s");
  EXPECT_TRUE(it.key().starts_with(next));
}

// A column erased by a column marker per write, as a transaction's lock
// column is: where column markers hide by timestamp the walk stops at the
// newest marker and seeks past the rest; elsewhere it must walk every older
// version and marker, since one written after a marker could be visible.
TEST(CollectRowTest, StopsAtTheFirstColumnMarkerWhereMarkersHideByTimestamp) {
  const Schema schema = ThreeFamilies();
  std::string prefix;
  AppendRowPrefix(&prefix, "r");
  for (uint16_t family : {1, 3}) {
    SCOPED_TRACE("family " + std::to_string(family));
    std::map<std::string, std::string> entries;
    SequenceNumber seq = 1;
    auto add = [&](const std::string& q, uint64_t ts, CellType type) {
      std::string k;
      AppendCellKey(&k, "r", family, q, ts, seq++, type);
      entries[k] = q + std::to_string(ts);
    };
    constexpr uint64_t kWrites = 1000;
    for (uint64_t ts = 1; ts <= kWrites; ts++) {
      add("lock", ts, CellType::kPut);
      add("lock", ts, CellType::kDeleteColumn);
    }
    add("lock", kWrites + 1, CellType::kPut);  // a live lock
    add("z", 1, CellType::kPut);               // the next column
    for (const bool whole : {false, true}) {
      ResolvedFilter filter;
      if (!whole) {
        filter.AddColumn(family, "lock");
        filter.AddColumn(family, "z");
        filter.SortColumns();
      }
      CountingIterator it(entries);
      it.Seek(prefix);
      const int seeks_before = it.seeks;
      Collected got;
      ASSERT_OK(Collect(&it, prefix, seq, filter, schema, &got));
      ASSERT_EQ(got.cells.size(), 2u);
      EXPECT_EQ(got.cells[0].timestamp, kWrites + 1);
      EXPECT_EQ(got.cells[1].qualifier, "z");
      if (family == 3) {
        // The live lock, the marker, a few steps and one Seek.
        EXPECT_LE(it.nexts, 12) << whole;
        EXPECT_EQ(it.seeks - seeks_before, 1) << whole;
      } else {
        EXPECT_GE(it.nexts, static_cast<int>(2 * kWrites)) << whole;
      }
    }
  }
}

TEST(CollectRowTest, MalformedQualifierIsCorruptionWantedOrNot) {
  const Schema schema = ThreeFamilies();
  std::string prefix;
  AppendRowPrefix(&prefix, "r");
  // Family 1, qualifier bytes "x" 0x00 0x07 (a bad escape), then ts and tag.
  std::string key = prefix;
  char family[2];
  EncodeBigEndian16(family, 1);
  key.append(family, 2);
  key.append("x\0\x07", 3);
  std::string good;
  AppendCellKey(&good, "r", 1, "x", 3, 1, CellType::kPut);
  key.append(good.substr(good.size() - 16));
  for (int filter = 0; filter < 3; filter++) {
    ResolvedFilter f;
    if (filter < 2) {
      f.AddColumn(filter == 0 ? 1 : 2, "x");  // the column as it should be, or another family's
      f.SortColumns();
    } else {
      f.all_families = false;
      f.families = {false, true, false, false};  // family 1 whole
    }
    VectorIterator it({{key, "v"}});
    it.Seek(prefix);
    Collected got;
    EXPECT_TRUE(Collect(&it, prefix, 10, f, schema, &got).IsCorruption()) << filter;
    EXPECT_TRUE(got.cells.empty());
  }
}

// A walk says whether it looked at an entry of the read point's undurable
// range that may decide what it hands out: versions and cell deletes in
// the range of a column it reads, column and row delete markers. Entries
// above the snapshot or above the range, and columns it does not read, do
// not count.
TEST(CollectRowTest, NotesTheUndurableEntriesItLooksAt) {
  const Schema schema = ThreeFamilies();
  std::string prefix;
  AppendRowPrefix(&prefix, "r");
  struct Entry {
    uint16_t family;
    std::string qualifier;
    uint64_t timestamp;
    SequenceNumber sequence;
    CellType type;
  };
  auto walk = [&](const std::vector<Entry>& row, uint16_t family, const std::string& qualifier,
                  size_t* cells, uint64_t max_timestamp = kMaxTimestamp) {
    std::map<std::string, std::string> entries;
    for (const Entry& e : row) {
      std::string k;
      AppendCellKey(&k, "r", e.family, e.qualifier, e.timestamp, e.sequence, e.type);
      entries[k] = "v";
    }
    ResolvedFilter filter;
    filter.AddColumn(family, qualifier, VersionRange{kMinTimestamp, max_timestamp, UINT32_MAX});
    filter.SortColumns();
    VectorIterator it(entries);
    it.Seek(prefix);
    ReadPoint at;
    at.snapshot = 12;
    at.undurable_first = 10;
    at.undurable_last = 11;
    Collected got;
    EXPECT_OK(CollectRowFromHere(&it, prefix, &at, filter, schema, &got));
    *cells = got.cells.size();
    return at.saw_undurable;
  };
  size_t cells = 0;
  // The version read is undurable; so is a version below it.
  EXPECT_TRUE(walk({{1, "a", 5, 10, CellType::kPut}}, 1, "a", &cells));
  EXPECT_EQ(cells, 1u);
  EXPECT_TRUE(
      walk({{1, "a", 6, 12, CellType::kPut}, {1, "a", 5, 11, CellType::kPut}}, 1, "a", &cells));
  EXPECT_EQ(cells, 2u);
  // Only durable entries of the column read; an undurable one of another
  // column or family, and one above the snapshot.
  EXPECT_FALSE(walk({{1, "a", 5, 3, CellType::kPut},
                     {1, "b", 5, 10, CellType::kPut},
                     {2, "a", 5, 11, CellType::kPut},
                     {1, "a", 9, 13, CellType::kPut}},
                    1, "a", &cells));
  EXPECT_EQ(cells, 1u);
  // Undurable delete markers hide what the read would have found: the
  // absence is theirs.
  EXPECT_TRUE(walk({{1, "a", 5, 11, CellType::kDeleteColumn}, {1, "a", 5, 3, CellType::kPut}}, 1,
                   "a", &cells));
  EXPECT_EQ(cells, 0u);
  EXPECT_TRUE(
      walk({{kRowMarkerFamily, "", 9, 10, CellType::kDeleteRow}, {1, "a", 5, 3, CellType::kPut}}, 1,
           "a", &cells));
  EXPECT_EQ(cells, 0u);
  // Above the range (a snapshot reader's newer commits): a version or a cell
  // delete changes nothing; a column delete hides the versions below it.
  EXPECT_FALSE(walk({{1, "a", 9, 10, CellType::kPut},
                     {1, "a", 8, 11, CellType::kDeleteCell},
                     {1, "a", 5, 3, CellType::kPut}},
                    1, "a", &cells, /*max_timestamp=*/7));
  EXPECT_EQ(cells, 1u);
  EXPECT_TRUE(walk({{1, "a", 9, 11, CellType::kDeleteColumn}, {1, "a", 5, 3, CellType::kPut}}, 1,
                   "a", &cells, /*max_timestamp=*/7));
  EXPECT_EQ(cells, 0u);
}

}  // namespace
}  // namespace strata::engine
