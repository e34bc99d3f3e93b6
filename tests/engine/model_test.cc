// Randomized model test: random mutations (puts, all three delete kinds,
// several entries per mutation), random filtered reads and random scans
// (seeks forward and back, nexts, bounds, filters, timestamp ranges, one
// iterator kept open while writes, flushes and compactions go on), checked
// against a model that applies the visibility rules by their definition,
// across reopens.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <tuple>

#include "common/random.h"
#include "strata/engine.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata {
namespace {

const std::vector<std::string> kFamilies = {"f0", "f1", "f2"};

// Every entry ever applied to a row, in order (the index is its age).
struct ModelEntry {
  RowMutation::Kind kind;
  std::string family;
  std::string qualifier;
  uint64_t timestamp;
  std::string value;
  uint64_t order;
};

class Model {
 public:
  void Apply(const std::string& row, const RowMutation& m) {
    visible_.erase(row);
    for (const auto& e : m.entries()) {
      rows_[row].push_back(ModelEntry{e.kind, e.family, e.qualifier, e.timestamp, e.value, next_++});
    }
  }

  // The visible cells of a row that pass `f`.
  std::vector<Cell> Read(const std::string& row, const RowFilter& f) const {
    std::vector<Cell> out;
    const std::vector<Cell>& visible = Visible(row);
    const Cell* column = nullptr;  // the first cell of the current column
    uint32_t n = 0;
    for (const Cell& c : visible) {
      if (column == nullptr || c.family != column->family || c.qualifier != column->qualifier) {
        column = &c;
        n = 0;
      }
      const bool wanted =
          (f.families.empty() && f.columns.empty()) ||
          std::find(f.families.begin(), f.families.end(), c.family) != f.families.end() ||
          std::find(f.columns.begin(), f.columns.end(), std::make_pair(c.family, c.qualifier)) !=
              f.columns.end();
      if (!wanted || c.timestamp < f.min_timestamp || c.timestamp > f.max_timestamp) continue;
      if (n++ >= f.max_versions) continue;
      out.push_back(c);
    }
    return out;
  }

  // The first row at or after `from` (after it, when `after`) in
  // [spec.start_row, spec.end_row) whose read by spec.filter has cells.
  std::optional<std::string> NextRow(const ScanSpec& spec, const std::string& from,
                                     bool after) const {
    auto it = rows_.lower_bound(std::max(from, spec.start_row));
    if (after && it != rows_.end() && it->first == from) ++it;
    for (; it != rows_.end(); ++it) {
      if (!spec.end_row.empty() && it->first >= spec.end_row) break;
      if (!Read(it->first, spec.filter).empty()) return it->first;
    }
    return std::nullopt;
  }
  // The last row of the scan's range before `before` with a cell for it.
  std::optional<std::string> PrevRow(const ScanSpec& spec, const std::string& before) const {
    auto it = rows_.lower_bound(before);
    while (it != rows_.begin()) {
      --it;
      if (it->first < spec.start_row) break;
      if (!spec.end_row.empty() && it->first >= spec.end_row) continue;
      if (!Read(it->first, spec.filter).empty()) return it->first;
    }
    return std::nullopt;
  }

 private:
  // Every visible cell of a row, by definition of the rules in row_reader.h,
  // ordered as a read returns them; kept until the row changes.
  const std::vector<Cell>& Visible(const std::string& row) const {
    auto cached = visible_.find(row);
    if (cached != visible_.end()) return cached->second;
    std::vector<Cell>& out = visible_[row];
    auto it = rows_.find(row);
    if (it == rows_.end()) return out;
    const auto& entries = it->second;
    // Candidate puts: the newest put/delete-cell at its (column, timestamp) is a put.
    std::map<std::tuple<int, std::string, uint64_t>, const ModelEntry*> winner;
    for (const auto& e : entries) {
      if (e.kind != RowMutation::Kind::kPut && e.kind != RowMutation::Kind::kDeleteCell) continue;
      auto key = std::make_tuple(FamilyIndex(e.family), e.qualifier, e.timestamp);
      auto& w = winner[key];
      if (w == nullptr || w->order < e.order) w = &e;
    }
    // A put is hidden by a later DeleteRow, or a later DeleteColumn of its
    // column, at or above its timestamp: found in one walk from the newest
    // entry back, keeping the highest such timestamps seen so far.
    std::vector<bool> hidden(entries.size(), false);
    {
      bool row_deleted = false;
      uint64_t row_delete_ts = 0;
      std::map<std::pair<std::string, std::string>, uint64_t> column_delete_ts;
      for (size_t i = entries.size(); i-- > 0;) {
        const ModelEntry& d = entries[i];
        if (d.kind == RowMutation::Kind::kPut) {
          auto c = column_delete_ts.find({d.family, d.qualifier});
          hidden[i] = (row_deleted && row_delete_ts >= d.timestamp) ||
                      (c != column_delete_ts.end() && c->second >= d.timestamp);
        } else if (d.kind == RowMutation::Kind::kDeleteRow) {
          row_delete_ts = row_deleted ? std::max(row_delete_ts, d.timestamp) : d.timestamp;
          row_deleted = true;
        } else if (d.kind == RowMutation::Kind::kDeleteColumn) {
          auto [c, inserted] = column_delete_ts.try_emplace({d.family, d.qualifier}, d.timestamp);
          if (!inserted) c->second = std::max(c->second, d.timestamp);
        }
      }
    }
    std::map<std::pair<int, std::string>, std::vector<const ModelEntry*>> columns;
    for (const auto& [key, e] : winner) {
      if (e->kind != RowMutation::Kind::kPut) continue;
      // Entries of a row are stored in order: an entry's index is its age.
      if (hidden[static_cast<size_t>(e - entries.data())]) continue;
      columns[{FamilyIndex(e->family), e->qualifier}].push_back(e);
    }
    for (auto& [col, puts] : columns) {
      std::sort(puts.begin(), puts.end(), [](const ModelEntry* a, const ModelEntry* b) {
        return a->timestamp > b->timestamp;
      });
      for (const ModelEntry* p : puts) {
        out.push_back(Cell{p->family, p->qualifier, p->timestamp, p->value});
      }
    }
    return out;
  }

  static int FamilyIndex(const std::string& f) {
    return static_cast<int>(std::find(kFamilies.begin(), kFamilies.end(), f) - kFamilies.begin());
  }
  std::map<std::string, std::vector<ModelEntry>> rows_;
  uint64_t next_ = 0;
  mutable std::map<std::string, std::vector<Cell>> visible_;
};

TEST(EngineModelTest, RandomOperationsMatchModelAcrossReopens) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("STRATA_TEST_SEED=" + std::to_string(seed));
  Random rnd(seed);
  test::ScratchDir dir("model");
  TableSchema schema;
  // Small blocks give the tablet split places to cut between rows.
  schema.locality_groups = {{.name = "g0", .block_size = 512},
                            {.name = "g1", .in_memory = true, .block_size = 512}};
  schema.families = {{.name = "f0", .locality_group = "g0"},
                     {.name = "f1", .locality_group = "g1"},
                     {.name = "f2", .locality_group = "g0"}};
  EngineOptions options;
  options.wal_segment_size = 256 << 10;
  // Small memtables: flushes happen all along, so reads merge memtables and
  // SSTables and deletes in one hide puts in the other.
  options.write_buffer_size = 256 << 10;
  // Small levels: compactions run often, several levels deep, and drop
  // versions and markers by the rules the model checks.
  options.level0_compaction_trigger = 2;
  options.level1_max_bytes = 256 << 10;
  options.target_file_size = 64 << 10;
  // Two compaction threads besides the flush thread: picks must not collide.
  options.max_background_compactions = 2;
  // Small tablets: the table splits between its few rows, so scans walk
  // across tablets and step back over their boundaries.
  options.tablet_split_size = 4 << 10;
  auto open = [&]() {
    auto e = Engine::Open(dir.path(), options);
    EXPECT_OK(e);
    return std::move(e.value());
  };
  std::unique_ptr<Engine> engine = open();
  ASSERT_OK(engine->CreateTenant("m"));
  ASSERT_OK(engine->OpenTenant("m")->CreateTable("t", schema));
  Table table = *engine->OpenTenant("m")->OpenTable("t");

  Model model;
  auto random_row = [&] {
    // A few rows, some sharing prefixes and holding 0x00 bytes.
    static const char* kRows[] = {"a", "ab", "b", "b\0x", "c", "cc", "d", "e"};
    int i = static_cast<int>(rnd.Uniform(8));
    return std::string(kRows[i], i == 3 ? 3 : std::strlen(kRows[i]));
  };
  auto random_qualifier = [&] { return std::string(1, static_cast<char>('p' + rnd.Uniform(4))); };
  auto random_ts = [&] { return 1 + rnd.Uniform(12); };
  auto random_filter = [&] {
    RowFilter f;
    if (rnd.OneIn(3)) f.families.push_back(kFamilies[rnd.Uniform(kFamilies.size())]);
    if (rnd.OneIn(4)) f.columns.emplace_back(kFamilies[rnd.Uniform(3)], random_qualifier());
    if (rnd.OneIn(3)) {
      f.min_timestamp = random_ts();
      f.max_timestamp = f.min_timestamp + rnd.Uniform(6);
    }
    if (rnd.OneIn(3)) f.max_versions = 1 + static_cast<uint32_t>(rnd.Uniform(3));
    return f;
  };
  // Seek targets and bounds: the rows, the empty row, and rows between them.
  auto random_target = [&] {
    static const char* kBetween[] = {"", "aa", "b\0", "ba", "bb", "ca", "f"};
    if (rnd.OneIn(2)) return random_row();
    const int i = static_cast<int>(rnd.Uniform(7));
    return std::string(kBetween[i], i == 2 ? 2 : std::strlen(kBetween[i]));
  };
  // A scan, its spec, and the model as it was when the scan began: it must
  // read that snapshot whatever happens after. `snapshot` is `model` while
  // nothing has changed since; a scan kept open gets a copy in `copy`.
  struct OpenScan {
    std::unique_ptr<RowIterator> it;
    ScanSpec spec;
    const Model* snapshot = nullptr;
    Model copy;
  };
  auto new_scan = [&]() -> std::unique_ptr<OpenScan> {
    auto s = std::make_unique<OpenScan>();
    if (rnd.OneIn(2)) s->spec.start_row = random_target();
    if (rnd.OneIn(2)) s->spec.end_row = random_target();
    if (!s->spec.end_row.empty() && s->spec.end_row < s->spec.start_row) {
      std::swap(s->spec.start_row, s->spec.end_row);
    }
    s->spec.filter = random_filter();
    auto it = table.Scan(ReadOptions(), s->spec);
    EXPECT_OK(it);
    if (!it.ok()) return nullptr;
    s->it = std::move(it.value());
    s->snapshot = &model;
    return s;
  };
  // Checks where the scan stands (a fresh one: at its first row; else after
  // a seek), then moves it `steps` times (a seek, a next or a prev), checking
  // each row.
  auto drive_scan = [&](OpenScan* s, int steps, bool fresh, int op) {
    std::optional<std::string> expected = s->snapshot->NextRow(s->spec, "", false);
    std::string at;
    for (int step = 0; step <= steps; step++) {
      if (step > 0 || !fresh) {
        if (!s->it->Valid() || rnd.OneIn(3) || step == 0) {
          const std::string target = random_target();
          s->it->Seek(target);
          expected = s->snapshot->NextRow(s->spec, target, false);
        } else if (rnd.OneIn(3)) {
          s->it->Prev();
          expected = s->snapshot->PrevRow(s->spec, at);
        } else {
          s->it->Next();
          expected = s->snapshot->NextRow(s->spec, at, true);
        }
      }
      ASSERT_OK(s->it->status());
      ASSERT_EQ(s->it->Valid(), expected.has_value()) << "op " << op << " step " << step;
      if (!expected) continue;
      at = *expected;
      ASSERT_EQ(std::string(s->it->row()), at) << "op " << op << " step " << step;
      const std::vector<Cell> want = s->snapshot->Read(at, s->spec.filter);
      ASSERT_EQ(s->it->cells(), want) << "op " << op << " row '" << at << "'";
      const std::vector<CellView>& views = s->it->cell_views();
      ASSERT_EQ(views.size(), want.size());
      for (size_t i = 0; i < views.size(); i++) {
        EXPECT_EQ(views[i].family, want[i].family);
        EXPECT_EQ(views[i].qualifier, want[i].qualifier);
        EXPECT_EQ(views[i].timestamp, want[i].timestamp);
        EXPECT_EQ(views[i].value, want[i].value);
      }
    }
  };
  // Kept open across later operations until a reopen.
  std::unique_ptr<OpenScan> held;
  int scans = 0;
  int held_checks = 0;
  const int ops = test::LongTests() ? 1000000 : test::UnderSanitizer() ? 10000 : 100000;
  int reads = 0;
  uint64_t compactions = 0;
  uint64_t splits = 0;
  for (int op = 0; op < ops; op++) {
    const uint64_t dice = rnd.Uniform(1000);
    if (dice < 550) {
      RowMutation m;
      int n = 1 + static_cast<int>(rnd.Uniform(4));
      for (int i = 0; i < n; i++) {
        const std::string& fam = kFamilies[rnd.Uniform(kFamilies.size())];
        uint64_t k = rnd.Uniform(20);
        if (k < 13) {
          m.Put(fam, random_qualifier(), random_ts(), rnd.RandomLetters(rnd.Uniform(20)));
        } else if (k < 16) {
          m.DeleteCell(fam, random_qualifier(), random_ts());
        } else if (k < 19) {
          m.DeleteColumn(fam, random_qualifier(), rnd.OneIn(3) ? kMaxTimestamp : random_ts());
        } else {
          m.DeleteRow(rnd.OneIn(3) ? kMaxTimestamp : random_ts());
        }
      }
      const std::string row = random_row();
      WriteOptions wo;
      wo.sync = rnd.OneIn(10);
      ASSERT_OK(table.Mutate(wo, row, m));
      model.Apply(row, m);
    } else if (dice < 560) {
      std::unique_ptr<OpenScan> scan = new_scan();
      ASSERT_NE(scan, nullptr);
      ASSERT_NO_FATAL_FAILURE(drive_scan(scan.get(), static_cast<int>(rnd.Uniform(12)), true, op));
      scans++;
      if (held == nullptr || rnd.OneIn(8)) {
        scan->copy = model;
        scan->snapshot = &scan->copy;
        held = std::move(scan);
      }
    } else if (dice < 565) {
      if (held != nullptr) {
        // Writes, flushes and compactions since it began change nothing it reads.
        ASSERT_NO_FATAL_FAILURE(
            drive_scan(held.get(), static_cast<int>(rnd.Uniform(12)), false, op));
        held_checks++;
      }
    } else if (dice < 997) {
      const RowFilter f = random_filter();
      const std::string row = random_row();
      auto got = table.ReadRow(ReadOptions(), row, f);
      ASSERT_OK(got);
      ASSERT_EQ(*got, model.Read(row, f)) << "op " << op << " row '" << row << "'";
      reads++;
    } else if (rnd.OneIn(4)) {
      ASSERT_OK(engine->Flush());
    } else if (rnd.OneIn(3)) {
      ASSERT_OK(engine->Compact());
    } else {
      compactions += engine->GetStats().compactions;
      splits += engine->GetStats().tablet_splits;
      held.reset();  // an iterator must not outlive Close
      ASSERT_OK(engine->Close());
      engine.reset();
      engine = open();
      table = *engine->OpenTenant("m")->OpenTable("t");
    }
  }
  EXPECT_GT(reads, ops / 3);
  EXPECT_GT(scans, ops / 200);
  EXPECT_GT(held_checks, ops / 400);
  EXPECT_GT(engine->GetStats().table_files, 0u);
  EXPECT_GT(compactions + engine->GetStats().compactions, 0u);
  EXPECT_GT(splits + engine->GetStats().tablet_splits, 0u);
}

}  // namespace
}  // namespace strata
