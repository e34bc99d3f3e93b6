// The shared parts of the row-store conformance suite
// (row_store_conformance.h): helpers and the random operations.
#include "util/row_store_conformance.h"

#include <string>
#include <utility>
#include <vector>

#include "common/random.h"
#include "util/test_util.h"

namespace strata {

// How GoogleTest prints a cell in a failure message.
void PrintTo(const Cell& c, std::ostream* os) {
  auto bytes = [&](const std::string& s) {
    static const char kHex[] = "0123456789abcdef";
    std::string out;
    for (unsigned char ch : s) {
      if (ch >= 0x20 && ch < 0x7f && ch != '\\') {
        out += static_cast<char>(ch);
      } else {
        out += "\\x";
        out += kHex[ch >> 4];
        out += kHex[ch & 15];
      }
    }
    return out;
  };
  *os << "{" << c.family << ":" << bytes(c.qualifier) << "@" << c.timestamp << "=" << bytes(c.value)
      << "}";
}

namespace conformance {

// Small limits, so bad input is cheap to make, and small memtables, levels
// and tablets, so flushes, compactions and splits happen within a few
// thousand writes.
EngineOptions Options() {
  EngineOptions o;
  o.max_row_key_size = kMaxRow;
  o.max_qualifier_size = kMaxQualifier;
  o.max_value_size = kMaxValue;
  o.wal_segment_size = 256 << 10;
  o.write_buffer_size = 64 << 10;
  o.level0_compaction_trigger = 2;
  o.level1_max_bytes = 128 << 10;
  o.target_file_size = 32 << 10;
  o.tablet_split_size = 96 << 10;
  return o;
}

std::string StoreKindName(const ::testing::TestParamInfo<StoreKind>& info) {
  return info.param.name;
}

// Every row of a scan, or its error.
Result<Rows> ScanRows(const RowStore& store, const ScanSpec& spec) {
  auto it = store.Scan(ReadOptions(), spec);
  if (!it.ok()) return it.status();
  Rows rows;
  for (; (*it)->Valid(); (*it)->Next()) {
    rows.emplace_back(std::string((*it)->row()), (*it)->cells());
  }
  STRATA_RETURN_IF_ERROR((*it)->status());
  return rows;
}

::testing::AssertionResult SameResult(const CheckAndMutateResult& got,
                                      const CheckAndMutateResult& want) {
  if (got.applied != want.applied) {
    return ::testing::AssertionFailure()
           << "applied is " << got.applied << ", expected " << want.applied;
  }
  if (got.failures != want.failures) {
    auto failure = ::testing::AssertionFailure() << "failures differ: got";
    for (const auto& f : got.failures) {
      failure << " #" << f.index << ::testing::PrintToString(f.cells);
    }
    failure << "; expected";
    for (const auto& f : want.failures) {
      failure << " #" << f.index << ::testing::PrintToString(f.cells);
    }
    return failure;
  }
  return ::testing::AssertionSuccess();
}

CheckAndMutateResult Applied() { return CheckAndMutateResult{.applied = true}; }
CheckAndMutateResult Failed(std::vector<ConditionFailure> failures) {
  return CheckAndMutateResult{.applied = false, .failures = std::move(failures)};
}

RowFilter Families(std::vector<std::string> families) {
  RowFilter f;
  f.families = std::move(families);
  return f;
}
RowFilter Columns(std::vector<std::pair<std::string, std::string>> columns) {
  RowFilter f;
  f.columns = std::move(columns);
  return f;
}
RowFilter Timestamps(uint64_t min, uint64_t max, uint32_t max_versions) {
  RowFilter f;
  f.min_timestamp = min;
  f.max_timestamp = max;
  f.max_versions = max_versions;
  return f;
}
ScanSpec Range(std::string start, std::string end, RowFilter filter) {
  return ScanSpec{std::move(start), std::move(end), std::move(filter)};
}

namespace {

class RandomOps {
 public:
  RandomOps(uint64_t seed, Harness* table, ModelRowStore* model)
      : rnd_(seed), table_(table), model_(model) {}

  // Runs `ops` random operations; stops at the first difference.
  void Run(int ops) {
    for (op_ = 0; op_ < ops && !::testing::Test::HasFailure(); op_++) {
      const uint64_t dice = rnd_.Uniform(1000);
      if (dice < 300) {
        MutateOne();
      } else if (dice < 450) {
        CheckAndMutateOne();
      } else if (dice < 530) {
        BatchOne();
      } else if (dice < 800) {
        ReadOne();
      } else if (dice < 880) {
        ScanOne();
      } else if (dice < 960) {
        SessionOne();
      } else if (dice < 990) {
        Churn();
      } else if (dice < 996) {
        table_->Flush();
      } else if (dice < 999) {
        table_->Compact();
      } else {
        table_->Reopen();
      }
    }
    if (::testing::Test::HasFailure()) ADD_FAILURE() << "first difference at op " << op_ - 1;
  }

  // Columns the store's sessions fetched by prediction.
  uint64_t prefetched_columns() const { return prefetched_columns_; }

  // Every row, read and scanned, after a compaction.
  void CompareEverything() {
    table_->Compact();
    const Rows all = model_->Dump();
    auto scanned = ScanRows(*table_->store(), ScanSpec());
    ASSERT_OK(scanned);
    EXPECT_EQ(*scanned, all);
    for (const std::string& row : RowPool()) {
      CompareRead(row, RowFilter());
    }
  }

 private:
  static const std::vector<std::string>& RowPool() {
    static const std::vector<std::string> rows = [] {
      std::vector<std::string> r = {"a", std::string("a\0", 2),    "ab", "abc", "b", "b\xff", "bb",
                                    "c", std::string(kMaxRow, 'm')};
      for (int i = 0; i < 24; i++) r.push_back("row" + std::to_string(i));
      return r;
    }();
    return rows;
  }

  // Mostly good input; now and then something a store must reject.
  std::string Row() {
    if (rnd_.OneIn(200)) return rnd_.OneIn(2) ? std::string() : std::string(kMaxRow + 1, 'm');
    return RowPool()[rnd_.Uniform(RowPool().size())];
  }
  std::string Family() {
    if (rnd_.OneIn(300)) return "nope";
    return kFamilies[rnd_.Uniform(kFamilies.size())];
  }
  std::string Qualifier() {
    static const std::vector<std::string> kQualifiers = {"", "q", std::string("q\0", 2), "r",
                                                         "\xff"};
    if (rnd_.OneIn(400)) return std::string(kMaxQualifier + 1, 'q');
    return kQualifiers[rnd_.Uniform(kQualifiers.size())];
  }
  uint64_t Timestamp() {
    if (rnd_.OneIn(400)) return rnd_.OneIn(2) ? 0 : UINT64_MAX;
    if (rnd_.OneIn(50)) return kMaxTimestamp;
    return 1 + rnd_.Uniform(12);
  }
  std::string Value() {
    if (rnd_.OneIn(500)) return std::string(kMaxValue + 1, 'v');
    return rnd_.RandomLetters(std::min<uint64_t>(rnd_.Skewed(8), kMaxValue));
  }
  WriteOptions Write() { return WriteOptions{.sync = rnd_.OneIn(20)}; }

  RowMutation Mutation(int max_entries) {
    RowMutation m;
    const int n = static_cast<int>(rnd_.Uniform(max_entries + 1));
    for (int i = 0; i < n; i++) {
      const uint64_t k = rnd_.Uniform(20);
      if (k < 12) {
        m.Put(Family(), Qualifier(), Timestamp(), Value());
      } else if (k < 15) {
        m.DeleteCell(Family(), Qualifier(), Timestamp());
      } else if (k < 18) {
        m.DeleteColumn(Family(), Qualifier(), rnd_.OneIn(3) ? kMaxTimestamp : Timestamp());
      } else {
        m.DeleteRow(rnd_.OneIn(3) ? kMaxTimestamp : Timestamp());
      }
    }
    return m;
  }

  // A condition that often names a cell the row has, so that some hold and
  // some fail with cells to report.
  Condition RandomCondition(const std::string& row) {
    std::string family = Family();
    std::string qualifier = Qualifier();
    uint64_t ts = Timestamp();
    std::string value = Value();
    auto cells = model_->ReadRow(ReadOptions(), row, RowFilter());
    if (cells.ok() && !cells->empty() && rnd_.OneIn(2)) {
      const Cell& c = (*cells)[rnd_.Uniform(cells->size())];
      family = c.family;
      qualifier = c.qualifier;
      ts = c.timestamp;
      if (!rnd_.OneIn(4)) value = c.value;
    }
    switch (rnd_.Uniform(3)) {
      case 0: {
        uint64_t min = ts > 3 && rnd_.OneIn(2) ? ts - rnd_.Uniform(3) : ts;
        uint64_t max = rnd_.OneIn(5) ? kMaxTimestamp : ts + rnd_.Uniform(4);
        if (rnd_.OneIn(100)) std::swap(min, max);
        return Condition::NoCellInRange(family, qualifier, min, max);
      }
      case 1:
        return Condition::CellExists(family, qualifier, ts);
      default:
        return Condition::ValueEquals(family, qualifier, ts, value);
    }
  }
  std::vector<Condition> Conditions(const std::string& row) {
    std::vector<Condition> conditions;
    const int n = static_cast<int>(rnd_.Uniform(4));
    for (int i = 0; i < n; i++) conditions.push_back(RandomCondition(row));
    return conditions;
  }

  RowFilter Filter() {
    RowFilter f;
    if (rnd_.OneIn(3)) {
      const int n = 1 + static_cast<int>(rnd_.Uniform(2));
      for (int i = 0; i < n; i++) f.families.push_back(Family());
    }
    if (rnd_.OneIn(3)) {
      const int n = 1 + static_cast<int>(rnd_.Uniform(3));
      for (int i = 0; i < n; i++) f.columns.emplace_back(Family(), Qualifier());
    }
    if (rnd_.OneIn(3)) {
      f.min_timestamp = 1 + rnd_.Uniform(12);
      f.max_timestamp = rnd_.OneIn(4) ? kMaxTimestamp : f.min_timestamp + rnd_.Uniform(6);
      if (rnd_.OneIn(100)) std::swap(f.min_timestamp, f.max_timestamp);
    }
    if (rnd_.OneIn(3)) f.max_versions = static_cast<uint32_t>(rnd_.Uniform(4));
    if (f.max_versions == 0 && !rnd_.OneIn(50)) f.max_versions = 1;
    return f;
  }

  template <typename T>
  bool SameStatus(const Result<T>& got, const Result<T>& want, const char* what) {
    EXPECT_EQ(got.status().code(), want.status().code())
        << what << ": store says " << got.status().ToString() << ", model says "
        << want.status().ToString();
    return got.ok() && want.ok();
  }

  void MutateOne() {
    const std::string row = Row();
    const RowMutation m = Mutation(4);
    const WriteOptions wo = Write();
    Status got = table_->store()->Mutate(wo, row, m);
    Status want = model_->Mutate(wo, row, m);
    EXPECT_EQ(got.code(), want.code())
        << "Mutate: store says " << got.ToString() << ", model says " << want.ToString();
  }

  void CheckAndMutateOne() {
    const std::string row = Row();
    const std::vector<Condition> conditions = Conditions(row);
    const RowMutation m = Mutation(3);
    const WriteOptions wo = Write();
    auto got = table_->store()->CheckAndMutate(wo, row, conditions, m);
    auto want = model_->CheckAndMutate(wo, row, conditions, m);
    if (SameStatus(got, want, "CheckAndMutate")) {
      EXPECT_TRUE(SameResult(*got, *want));
    }
  }

  void BatchOne() {
    std::vector<ConditionalMutation> batch(rnd_.Uniform(5));
    std::vector<std::string> rows = RowPool();
    for (auto& entry : batch) {
      // Distinct rows, but now and then a repeat.
      entry.row = rnd_.OneIn(30) ? Row() : rows[rnd_.Uniform(rows.size())];
      std::erase(rows, entry.row);
      if (rows.empty()) rows = RowPool();
      entry.conditions = Conditions(entry.row);
      entry.mutation = Mutation(3);
    }
    const WriteOptions wo = Write();
    auto got = table_->store()->CheckAndMutateBatch(wo, batch);
    auto want = model_->CheckAndMutateBatch(wo, batch);
    if (!SameStatus(got, want, "CheckAndMutateBatch")) return;
    ASSERT_EQ(got->size(), want->size());
    for (size_t i = 0; i < got->size(); i++) {
      EXPECT_TRUE(SameResult((*got)[i], (*want)[i])) << "batch entry " << i;
    }
  }

  void CompareRead(const std::string& row, const RowFilter& f) {
    auto got = table_->store()->ReadRow(ReadOptions(), row, f);
    auto want = model_->ReadRow(ReadOptions(), row, f);
    if (SameStatus(got, want, "ReadRow")) {
      EXPECT_EQ(*got, *want) << "row " << row;
    }
  }
  void ReadOne() { CompareRead(Row(), Filter()); }

  void ScanOne() {
    ScanSpec spec;
    if (!rnd_.OneIn(3)) spec.start_row = RowPool()[rnd_.Uniform(RowPool().size())];
    if (!rnd_.OneIn(3)) spec.end_row = RowPool()[rnd_.Uniform(RowPool().size())];
    if (spec.start_row > spec.end_row && !spec.end_row.empty() && !rnd_.OneIn(20)) {
      std::swap(spec.start_row, spec.end_row);
    }
    spec.filter = Filter();
    auto got = ScanRows(*table_->store(), spec);
    auto want = ScanRows(*model_, spec);
    if (SameStatus(got, want, "Scan")) {
      EXPECT_EQ(*got, *want);
    }
  }

  // A session with a few reads and no writes while it lives, so what it
  // caches or prefetches cannot differ from what the model fetches.
  void SessionOne() {
    ReadSessionOptions o;
    if (rnd_.OneIn(2)) {
      o.min_timestamp = 1 + rnd_.Uniform(12);
      o.max_timestamp = o.min_timestamp + rnd_.Uniform(6);
      if (rnd_.OneIn(50)) std::swap(o.min_timestamp, o.max_timestamp);
    }
    if (rnd_.OneIn(2)) o.max_versions = static_cast<uint32_t>(1 + rnd_.Uniform(3));
    if (rnd_.OneIn(100)) o.max_versions = 0;
    o.prefetch = !rnd_.OneIn(4);
    auto got = table_->store()->NewReadSession(o);
    auto want = model_->NewReadSession(o);
    if (!SameStatus(got, want, "NewReadSession")) return;
    const std::string row = Row();
    // Half the sessions read the same columns of a row, one after another,
    // as a transaction reads its lock and write columns: the Table store
    // learns to prefetch them.
    const bool pattern = rnd_.OneIn(2);
    static const std::vector<std::pair<std::string, std::string>> kPattern = {
        {"lock", "q"}, {"w", "q"}, {"data", "q"}, {"a", ""}};
    const int n =
        pattern ? static_cast<int>(kPattern.size()) : 1 + static_cast<int>(rnd_.Uniform(8));
    for (int i = 0; i < n; i++) {
      if (pattern) {
        auto a = (*got)->Get(row, kPattern[i].first, kPattern[i].second);
        auto b = (*want)->Get(row, kPattern[i].first, kPattern[i].second);
        if (SameStatus(a, b, "ReadSession::Get")) {
          EXPECT_EQ(*a, *b);
        }
        continue;
      }
      if (rnd_.OneIn(8)) {
        const RowFilter f = Filter();
        auto a = (*got)->ReadRow(row, f);
        auto b = (*want)->ReadRow(row, f);
        if (SameStatus(a, b, "ReadSession::ReadRow")) {
          EXPECT_EQ(*a, *b);
        }
        continue;
      }
      const std::string get_row = rnd_.OneIn(4) ? Row() : row;
      const std::string family = Family();
      const std::string qualifier = Qualifier();
      auto a = (*got)->Get(get_row, family, qualifier);
      auto b = (*want)->Get(get_row, family, qualifier);
      if (SameStatus(a, b, "ReadSession::Get")) {
        EXPECT_EQ(*a, *b);
      }
    }
    prefetched_columns_ += (*got)->stats().prefetched_columns;
  }

  // Many writes to one row, so that memtables fill and flushes, compactions
  // and splits happen under the random operations.
  void Churn() {
    const std::string row = "row" + std::to_string(rnd_.Uniform(24));
    for (int i = 0; i < 8; i++) {
      RowMutation m;
      for (int j = 0; j < 4; j++) {
        m.Put(kFamilies[rnd_.Uniform(kFamilies.size())], "bulk" + std::to_string(rnd_.Uniform(6)),
              1 + rnd_.Uniform(12), rnd_.RandomLetters(kMaxValue));
      }
      if (rnd_.OneIn(4)) m.DeleteColumn(kFamilies[rnd_.Uniform(4)], "bulk0", 1 + rnd_.Uniform(12));
      ASSERT_OK(table_->store()->Mutate(WriteOptions{.sync = false}, row, m));
      ASSERT_OK(model_->Mutate(WriteOptions{.sync = false}, row, m));
    }
  }

  Random rnd_;
  Harness* const table_;
  ModelRowStore* const model_;
  int op_ = 0;
  uint64_t prefetched_columns_ = 0;
};

}  // namespace

uint64_t RunRandomOps(uint64_t seed, Harness* store, ModelRowStore* model, int ops) {
  RandomOps random(seed, store, model);
  random.Run(ops);
  if (::testing::Test::HasFailure()) return 0;
  random.CompareEverything();
  return random.prefetched_columns();
}

}  // namespace conformance
}  // namespace strata
