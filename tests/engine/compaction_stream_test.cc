// CompactionStream on its own: what it keeps reads as what it was given, on
// random rows of versions and delete markers, in families whose column
// markers hide by timestamp and in families whose do not, above the bottom
// (older data holding the row) and at it; and what it drops.
#include "engine/compaction_stream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/cell_key.h"
#include "common/random.h"
#include "engine/row_reader.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::engine {
namespace {

using Entries = std::map<std::string, std::string>;

// A sorted run of (cell key, value) entries.
class VectorIterator final : public InternalIterator {
 public:
  explicit VectorIterator(const Entries* entries) : entries_(entries), it_(entries->end()) {}

  bool Valid() const override { return it_ != entries_->end(); }
  void SeekToFirst() override { it_ = entries_->begin(); }
  void Seek(const Slice& target) override { it_ = entries_->lower_bound(target.ToString()); }
  void SeekBefore(const Slice& target) override {
    it_ = entries_->lower_bound(target.ToString());
    it_ = it_ == entries_->begin() ? entries_->end() : std::prev(it_);
  }
  void Next() override { ++it_; }
  Slice key() const override { return Slice(it_->first); }
  Slice value() const override { return Slice(it_->second); }
  Status status() const override { return Status::OK(); }

 private:
  const Entries* entries_;
  Entries::const_iterator it_;
};

// Family "a" (id 1) without the option, "b" (id 2) with it.
Schema TwoFamilies() {
  TableSchema s;
  s.families = {{.name = "a"}, {.name = "b", .column_markers_hide_by_timestamp = true}};
  Result<Schema> schema = Schema::FromUser(s);
  EXPECT_OK(schema);
  return *schema;
}

// Every visible cell of row "r" in `entries`, at the newest snapshot.
std::vector<Cell> ReadRow(const Entries& entries, const Schema& schema) {
  std::string prefix;
  AppendRowPrefix(&prefix, "r");
  VectorIterator it(&entries);
  it.Seek(prefix);
  ReadPoint at;
  at.snapshot = kMaxSequenceNumber;
  RowCells cells;
  EXPECT_OK(CollectRowFromHere(&it, prefix, &at, ResolvedFilter(), schema, &cells));
  return cells.cells;
}

// What a CompactionStream keeps of `input`; `older_may_hold_row` as given
// to it.
Entries Compact(const Entries& input, const Schema& schema, bool bottommost,
                CompactionStream::RowProbe older_may_hold_row, uint64_t* dropped = nullptr) {
  Entries out;
  CompactionStream stream(
      bottommost, /*filter=*/nullptr, CompactionFilter::Context{}, &schema,
      [&](const Slice& key, const Slice& value) {
        out[key.ToString()] = value.ToString();
        return Status::OK();
      },
      std::move(older_may_hold_row));
  for (const auto& [key, value] : input) EXPECT_OK(stream.Add(key, value));
  EXPECT_OK(stream.Finish());
  if (dropped != nullptr) *dropped = stream.dropped();
  return out;
}

// `key` as a bottommost output writes it: with sequence number 0.
std::string AtBottom(const std::string& key) {
  ParsedCellKey p;
  EXPECT_TRUE(ParseCellKey(key, &p));
  std::string out;
  AppendCellKey(&out, p.row, p.family, p.qualifier, p.timestamp, 0, p.type);
  return out;
}

Entries Merged(Entries a, const Entries& b) {
  a.insert(b.begin(), b.end());
  return a;
}

// Adds up to `n` random entries of row "r" to *entries, numbered from
// *seq: families 1 and 2 (only 1 when `only_a`), three qualifiers,
// timestamps 1..12, one in six a column marker, one in twelve a row marker,
// one in six a cell marker.
void AddRandomEntries(Random* rnd, int n, bool only_a, SequenceNumber* seq, Entries* entries) {
  for (int i = 0; i < n; i++) {
    const uint16_t family = only_a ? 1 : static_cast<uint16_t>(1 + rnd->Uniform(2));
    const std::string q(1, static_cast<char>('x' + rnd->Uniform(3)));
    const uint64_t ts = 1 + rnd->Uniform(12);
    const uint32_t kind = static_cast<uint32_t>(rnd->Uniform(12));
    std::string key;
    if (kind == 0) {
      AppendCellKey(&key, "r", kRowMarkerFamily, "", ts, (*seq)++, CellType::kDeleteRow);
    } else if (kind <= 2) {
      AppendCellKey(&key, "r", family, q, ts, (*seq)++, CellType::kDeleteColumn);
    } else if (kind <= 4) {
      AppendCellKey(&key, "r", family, q, ts, (*seq)++, CellType::kDeleteCell);
    } else {
      AppendCellKey(&key, "r", family, q, ts, (*seq)++, CellType::kPut);
    }
    (*entries)[key] = "v" + std::to_string(*seq);
  }
}

// Random older data, a random compaction input and random newer data: the
// output read with both reads as the input does. Above the bottom, with
// older data holding the row, any newer data may follow; at the bottom
// (nothing older), the newer data writes only family "a", since a version
// of "b" written below a column marker the compaction dropped is what the
// option's writer promises never to need.
TEST(CompactionStreamTest, OutputReadsAsTheInputInBothKindsOfFamily) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("STRATA_TEST_SEED=" + std::to_string(seed));
  Random rnd(seed);
  const Schema schema = TwoFamilies();
  const int rounds = test::UnderSanitizer() ? 300 : 2000;
  for (int round = 0; round < rounds; round++) {
    SCOPED_TRACE("round " + std::to_string(round));
    const int where = static_cast<int>(rnd.Uniform(3));  // above, probed bottom, bottommost
    SequenceNumber seq = 1;
    Entries older, input, newer;
    if (where == 0) AddRandomEntries(&rnd, static_cast<int>(rnd.Uniform(12)), false, &seq, &older);
    AddRandomEntries(&rnd, static_cast<int>(rnd.Uniform(40)), false, &seq, &input);
    AddRandomEntries(&rnd, static_cast<int>(rnd.Uniform(8)), where != 0, &seq, &newer);
    // A neighbour row, kept whole.
    std::string other;
    AppendCellKey(&other, "s", 2, "x", 5, seq++, CellType::kPut);
    input[other] = "other row";

    const bool above = where == 0;
    const Entries out =
        Compact(input, schema, /*bottommost=*/where == 2, [above](const Slice&) { return above; });
    EXPECT_EQ(out.count(where == 2 ? AtBottom(other) : other), 1u);
    const std::vector<Cell> want = ReadRow(Merged(Merged(older, input), newer), schema);
    const std::vector<Cell> got = ReadRow(Merged(Merged(older, out), newer), schema);
    ASSERT_EQ(got, want) << "where " << where;
  }
}

// In family "b", everything after a column's first column marker goes,
// whatever its sequence; the marker stays while older data may hold the row
// (even under a row marker, which hides less) and goes at the bottom. In
// family "a", a version written after the marker stays, and so does a newer
// marker below the first.
TEST(CompactionStreamTest, DropsEverythingAfterTheFirstColumnMarkerInItsFamilies) {
  const Schema schema = TwoFamilies();
  for (uint16_t family : {1, 2}) {
    SCOPED_TRACE("family " + std::to_string(family));
    Entries input;
    SequenceNumber seq = 1;
    auto add = [&](uint64_t ts, CellType type) {
      std::string key;
      if (type == CellType::kDeleteRow) {
        AppendCellKey(&key, "r", kRowMarkerFamily, "", ts, seq++, type);
      } else {
        AppendCellKey(&key, "r", family, "c", ts, seq++, type);
      }
      input[key] = "v" + std::to_string(ts);
      return key;
    };
    add(3, CellType::kPut);
    add(10, CellType::kPut);
    const std::string marker = add(10, CellType::kDeleteColumn);
    add(20, CellType::kDeleteRow);  // hides the marker in family "a"'s rule
    const std::string lower_marker = add(8, CellType::kDeleteColumn);
    const std::string late = add(5, CellType::kPut);
    const std::string cell_marker = add(4, CellType::kDeleteCell);
    const std::string at = add(10, CellType::kPut);
    const std::string top = add(12, CellType::kPut);
    const std::string row_marker = [&] {
      std::string key;
      AppendCellKey(&key, "r", kRowMarkerFamily, "", 20, 4, CellType::kDeleteRow);
      return key;
    }();

    uint64_t dropped = 0;
    const Entries above = Compact(
        input, schema, /*bottommost=*/false, [](const Slice&) { return true; }, &dropped);
    std::vector<std::string> want = {row_marker, top, at};
    if (family == 1) {
      // The row marker hides the first column marker (and what it hides);
      // the newer marker below it, the put after that and the cell marker
      // above the put stand.
      want.insert(want.end(), {lower_marker, late, cell_marker});
    } else {
      want.push_back(marker);
    }
    std::vector<std::string> kept;
    for (const auto& [key, value] : above) kept.push_back(key);
    std::sort(want.begin(), want.end());
    EXPECT_EQ(kept, want);
    EXPECT_EQ(dropped, input.size() - want.size());
    EXPECT_EQ(ReadRow(above, schema), ReadRow(input, schema));

    const Entries bottom = Compact(input, schema, /*bottommost=*/true, nullptr);
    kept.clear();
    for (const auto& [key, value] : bottom) kept.push_back(key);
    want = {AtBottom(top), AtBottom(at)};
    if (family == 1) want.push_back(AtBottom(late));
    std::sort(want.begin(), want.end());
    EXPECT_EQ(kept, want);
    EXPECT_EQ(ReadRow(bottom, schema), ReadRow(input, schema));
  }
}

// A bottommost output writes every sequence number as 0 (only puts are left
// there, one per column and timestamp); one above the bottom keeps them, even
// where nothing older holds the row.
TEST(CompactionStreamTest, BottommostOutputWritesSequenceZero) {
  const Schema schema = TwoFamilies();
  Entries input;
  std::string key;
  AppendCellKey(&key, "r", 1, "c", 7, 41, CellType::kPut);
  input[key] = "newest";
  key.clear();
  AppendCellKey(&key, "r", 1, "c", 7, 40, CellType::kPut);
  input[key] = "older at the same timestamp";
  key.clear();
  AppendCellKey(&key, "r", 1, "c", 6, 45, CellType::kPut);
  input[key] = "lower timestamp";
  key.clear();
  AppendCellKey(&key, "s", 2, "d", 9, 12, CellType::kPut);
  input[key] = "next row";

  for (const bool bottommost : {false, true}) {
    SCOPED_TRACE(bottommost ? "bottommost" : "above, nothing older");
    const Entries out = Compact(input, schema, bottommost, [](const Slice&) { return false; });
    std::vector<std::pair<uint64_t, std::string>> got;  // sequence, value
    for (const auto& [k, v] : out) got.emplace_back(CellKeySequence(k), v);
    const std::vector<std::pair<uint64_t, std::string>> want =
        bottommost ? std::vector<std::pair<uint64_t, std::string>>{{0, "newest"},
                                                                   {0, "lower timestamp"},
                                                                   {0, "next row"}}
                   : std::vector<std::pair<uint64_t, std::string>>{
                         {41, "newest"}, {45, "lower timestamp"}, {12, "next row"}};
    EXPECT_EQ(got, want);
    EXPECT_EQ(ReadRow(out, schema), ReadRow(input, schema));
  }
}

}  // namespace
}  // namespace strata::engine
