// Randomized model test: random mutations (puts, all three delete kinds,
// several entries per mutation) and random filtered reads, checked against a
// model that applies the visibility rules by their definition, across reopens.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
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
    for (const auto& e : m.entries()) {
      rows_[row].push_back(ModelEntry{e.kind, e.family, e.qualifier, e.timestamp, e.value, next_++});
    }
  }

  // The visible cells of a row by definition of the rules in row_reader.h.
  std::vector<Cell> Read(const std::string& row, const RowFilter& f) const {
    std::vector<Cell> out;
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
    std::map<std::pair<int, std::string>, std::vector<const ModelEntry*>> columns;
    for (const auto& [key, e] : winner) {
      if (e->kind != RowMutation::Kind::kPut) continue;
      bool hidden = false;
      for (const auto& d : entries) {
        if (d.order <= e->order || d.timestamp < e->timestamp) continue;
        if (d.kind == RowMutation::Kind::kDeleteRow ||
            (d.kind == RowMutation::Kind::kDeleteColumn && d.family == e->family &&
             d.qualifier == e->qualifier)) {
          hidden = true;
          break;
        }
      }
      if (hidden) continue;
      columns[{FamilyIndex(e->family), e->qualifier}].push_back(e);
    }
    for (auto& [col, puts] : columns) {
      const std::string& fam = kFamilies[col.first];
      bool wanted = (f.families.empty() && f.columns.empty()) ||
                    std::find(f.families.begin(), f.families.end(), fam) != f.families.end() ||
                    std::find(f.columns.begin(), f.columns.end(), std::make_pair(fam, col.second)) !=
                        f.columns.end();
      if (!wanted) continue;
      std::sort(puts.begin(), puts.end(),
                [](const ModelEntry* a, const ModelEntry* b) { return a->timestamp > b->timestamp; });
      uint32_t n = 0;
      for (const ModelEntry* p : puts) {
        if (p->timestamp < f.min_timestamp || p->timestamp > f.max_timestamp) continue;
        if (n++ >= f.max_versions) break;
        out.push_back(Cell{p->family, p->qualifier, p->timestamp, p->value});
      }
    }
    return out;
  }

 private:
  static int FamilyIndex(const std::string& f) {
    return static_cast<int>(std::find(kFamilies.begin(), kFamilies.end(), f) - kFamilies.begin());
  }
  std::map<std::string, std::vector<ModelEntry>> rows_;
  uint64_t next_ = 0;
};

TEST(EngineModelTest, RandomOperationsMatchModelAcrossReopens) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("STRATA_TEST_SEED=" + std::to_string(seed));
  Random rnd(seed);
  test::ScratchDir dir("model");
  TableSchema schema;
  schema.locality_groups = {{.name = "g0"}, {.name = "g1", .in_memory = true}};
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
  const int ops = test::LongTests() ? 1000000 : test::UnderSanitizer() ? 10000 : 100000;
  int reads = 0;
  uint64_t compactions = 0;
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
    } else if (dice < 997) {
      RowFilter f;
      if (rnd.OneIn(3)) f.families.push_back(kFamilies[rnd.Uniform(kFamilies.size())]);
      if (rnd.OneIn(4)) f.columns.emplace_back(kFamilies[rnd.Uniform(3)], random_qualifier());
      if (rnd.OneIn(3)) {
        f.min_timestamp = random_ts();
        f.max_timestamp = f.min_timestamp + rnd.Uniform(6);
      }
      if (rnd.OneIn(3)) f.max_versions = 1 + static_cast<uint32_t>(rnd.Uniform(3));
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
      ASSERT_OK(engine->Close());
      engine.reset();
      engine = open();
      table = *engine->OpenTenant("m")->OpenTable("t");
    }
  }
  EXPECT_GT(reads, ops / 3);
  EXPECT_GT(engine->GetStats().table_files, 0u);
  EXPECT_GT(compactions + engine->GetStats().compactions, 0u);
}

}  // namespace
}  // namespace strata
