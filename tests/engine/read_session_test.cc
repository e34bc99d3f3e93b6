// Read sessions through the public API: prefetching after training, the
// lookups it saves, answers equal to Table::ReadRow with and without
// prediction, empty columns, concurrent sessions, counters and bad input.
#include "strata/read_session.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/coding.h"
#include "common/random.h"
#include "engine/test_hooks.h"
#include "strata/engine.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata {
namespace {

using test::ScratchDir;

constexpr int kColumns = 20;

std::string Q(int i) { return "q" + std::to_string(i); }

// Two families in two groups: "f" (20 columns in the tests) and "g".
TableSchema Schema() {
  TableSchema s;
  s.locality_groups.push_back({.name = "one"});
  s.locality_groups.push_back({.name = "two"});
  s.families.push_back({.name = "f", .locality_group = "one"});
  s.families.push_back({.name = "g", .locality_group = "two"});
  return s;
}

class ReadSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.sync = false;
    auto e = Engine::Open(dir_.path());
    ASSERT_OK(e);
    engine_ = std::move(e.value());
    ASSERT_OK(engine_->CreateTenant("t"));
    auto tenant = engine_->OpenTenant("t");
    ASSERT_OK(tenant);
    tenant_ = *tenant;
    ASSERT_OK(tenant_.CreateTable("tab", Schema()));
    auto table = tenant_.OpenTable("tab");
    ASSERT_OK(table);
    table_ = *table;
  }

  // Row `row` with every column of "f" set at timestamp 10 and 20.
  void WriteWideRow(const std::string& row) {
    RowMutation m;
    for (int i = 0; i < kColumns; i++) {
      m.Put("f", Q(i), 10, row + "/" + Q(i) + "@10");
      m.Put("f", Q(i), 20, row + "/" + Q(i) + "@20");
    }
    ASSERT_OK(table_.Mutate(options_, row, m));
  }

  std::unique_ptr<ReadSession> NewSession(const ReadSessionOptions& o = ReadSessionOptions()) {
    auto s = table_.NewReadSession(o);
    EXPECT_OK(s);
    return s.ok() ? std::move(s.value()) : nullptr;
  }

  // What Table::ReadRow returns for one column with the session's options.
  std::vector<Cell> Expected(const std::string& row, const std::string& family,
                             const std::string& qualifier, const ReadSessionOptions& o) {
    RowFilter f;
    f.columns = {{family, qualifier}};
    f.min_timestamp = o.min_timestamp;
    f.max_timestamp = o.max_timestamp;
    f.max_versions = o.max_versions;
    auto r = table_.ReadRow(ReadOptions(), row, f);
    EXPECT_OK(r);
    return r.ok() ? *r : std::vector<Cell>();
  }

  // Sessions that each read `columns` of "f" from one row, one at a time:
  // enough of them for the predictor to refresh its predictions.
  void Train(const std::vector<int>& columns, int sessions = 100) {
    for (int s = 0; s < sessions; s++) {
      std::unique_ptr<ReadSession> session = NewSession();
      ASSERT_NE(session, nullptr);
      for (int c : columns) ASSERT_OK(session->Get("train" + std::to_string(s % 10), "f", Q(c)));
    }
  }

  ScratchDir dir_{"read_session"};
  WriteOptions options_;
  std::unique_ptr<Engine> engine_;
  Tenant tenant_;
  Table table_;
};

const std::vector<int> kPattern = {1, 3, 4, 7, 10, 12, 15, 18};

TEST_F(ReadSessionTest, GetReturnsTheColumnsVersionsLikeReadRow) {
  WriteWideRow("r");
  ReadSessionOptions o;
  std::unique_ptr<ReadSession> s = NewSession(o);
  auto cells = s->Get("r", "f", Q(2));
  ASSERT_OK(cells);
  ASSERT_EQ(cells->size(), 2u);
  EXPECT_EQ((*cells)[0], (Cell{"f", Q(2), 20, "r/q2@20"}));
  EXPECT_EQ((*cells)[1], (Cell{"f", Q(2), 10, "r/q2@10"}));

  o.max_timestamp = 15;  // a snapshot reader at timestamp 15
  s = NewSession(o);
  cells = s->Get("r", "f", Q(2));
  ASSERT_OK(cells);
  EXPECT_EQ(*cells, (std::vector<Cell>{{"f", Q(2), 10, "r/q2@10"}}));
  o = ReadSessionOptions();
  o.max_versions = 1;
  s = NewSession(o);
  EXPECT_EQ(*s->Get("r", "f", Q(2)), (std::vector<Cell>{{"f", Q(2), 20, "r/q2@20"}}));
  EXPECT_TRUE(s->Get("r", "f", "absent")->empty());
  EXPECT_TRUE(s->Get("no-such-row", "g", "x")->empty());
}

TEST_F(ReadSessionTest, SecondGetOfAColumnCostsNoLookup) {
  WriteWideRow("r");
  std::unique_ptr<ReadSession> s = NewSession();
  ASSERT_OK(s->Get("r", "f", Q(0)));
  ASSERT_OK(s->Get("r", "f", Q(0)));
  ASSERT_OK(s->Get("r", "f", Q(1)));
  ReadStats st = s->stats();
  EXPECT_EQ(st.sessions, 1u);
  EXPECT_EQ(st.gets, 3u);
  EXPECT_EQ(st.lookups, 2u);
  EXPECT_EQ(st.cache_hits, 1u);
  EXPECT_EQ(st.prefetched_columns, 0u) << "nothing learned yet";
}

TEST_F(ReadSessionTest, EightOfTwentyColumnsInOneLookupAfterTraining) {
  for (int r = 0; r < 10; r++) WriteWideRow("train" + std::to_string(r));
  WriteWideRow("fresh");
  Train(kPattern);

  for (bool prefetch : {true, false}) {
    ReadSessionOptions o;
    o.prefetch = prefetch;
    std::unique_ptr<ReadSession> s = NewSession(o);
    for (int c : kPattern) {
      auto cells = s->Get("fresh", "f", Q(c));
      ASSERT_OK(cells);
      EXPECT_EQ(*cells, Expected("fresh", "f", Q(c), o)) << Q(c);
    }
    ReadStats st = s->stats();
    EXPECT_EQ(st.gets, 8u);
    if (prefetch) {
      EXPECT_EQ(st.lookups, 1u);
      EXPECT_EQ(st.cache_hits, 7u);
      EXPECT_EQ(st.prefetched_columns, 7u);
      EXPECT_EQ(st.prefetched_cells, 14u);
      EXPECT_EQ(st.prefetch_hits, 7u);
    } else {
      EXPECT_EQ(st.lookups, 8u);
      EXPECT_EQ(st.cache_hits, 0u);
      EXPECT_EQ(st.prefetched_columns, 0u);
    }
  }
  // Columns outside the pattern are fetched alone.
  std::unique_ptr<ReadSession> s = NewSession();
  ASSERT_OK(s->Get("fresh", "f", Q(0)));
  EXPECT_EQ(s->stats().prefetched_columns, 0u);
}

// One prefetching lookup of a row spread over a compacted file, two level-0
// files and the memtable, in both locality groups, with every kind of delete
// marker and several versions per column: each column it cached answers as
// Table::ReadRow of that column alone does, for several version limits and
// timestamp ranges, and as a session without prediction answers.
TEST_F(ReadSessionTest, PrefetchedColumnsEqualPerColumnReadsAcrossFilesAndMarkers) {
  // Columns of "f" (group one) and "g" (group two), binary qualifiers among them.
  const std::vector<std::pair<std::string, std::string>> pattern = {
      {"f", "q1"},   {"g", "q1"},  {"f", std::string("a\0b", 3)}, {"g", ""}, {"f", "q3"},
      {"g", "\xff"}, {"f", "q10"}, {"g", std::string(1, '\0')}};
  auto put_all = [&](uint64_t ts, RowMutation* m) {
    for (const auto& [f, q] : pattern) {
      m->Put(f, q, ts, f + EscapeBytes(q) + "@" + std::to_string(ts));
    }
    // Columns around them that no one asks for.
    m->Put("f", "q", ts, "left out").Put("f", "q2", ts, "left out").Put("g", "zz", ts, "left out");
  };
  {  // Compacted: versions 10 and 20 of everything.
    RowMutation m;
    put_all(10, &m);
    put_all(20, &m);
    ASSERT_OK(table_.Mutate(options_, "r", m));
    ASSERT_OK(engine_->Compact());
  }
  {  // Level 0: version 30; f:q3 loses its versions up to 20, g:"" its version 20.
    RowMutation m;
    put_all(30, &m);
    m.DeleteColumn("f", "q3", 20).DeleteCell("g", "", 20);
    ASSERT_OK(table_.Mutate(options_, "r", m));
    ASSERT_OK(engine_->Flush());
  }
  {  // Level 0: the row loses everything up to 15; version 40 of half the columns.
    RowMutation m;
    m.DeleteRow(15);
    for (size_t i = 0; i < pattern.size(); i += 2) {
      m.Put(pattern[i].first, pattern[i].second, 40, "forty");
    }
    ASSERT_OK(table_.Mutate(options_, "r", m));
    ASSERT_OK(engine_->Flush());
  }
  {  // Memtable: version 50 of the other half; f:q10 loses 40, g:0x00 everything.
    RowMutation m;
    for (size_t i = 1; i < pattern.size(); i += 2) {
      m.Put(pattern[i].first, pattern[i].second, 50, "fifty");
    }
    m.DeleteCell("f", "q10", 40).DeleteColumn("g", std::string(1, '\0'));
    ASSERT_OK(table_.Mutate(options_, "r", m));
  }
  auto tablets = table_.GetTabletStats();
  ASSERT_OK(tablets);
  uint64_t level0 = 0, deeper = 0;
  for (const TabletStats& t : *tablets) {
    level0 += t.level_files[0];
    deeper += t.table_files - t.level_files[0];
  }
  EXPECT_GE(level0, 2u);
  EXPECT_GE(deeper, 1u);

  // Sessions that read the pattern, in order, from other rows.
  for (int i = 0; i < 100; i++) {
    std::unique_ptr<ReadSession> s = NewSession();
    ASSERT_NE(s, nullptr);
    for (const auto& [f, q] : pattern) ASSERT_OK(s->Get("train" + std::to_string(i % 10), f, q));
  }

  std::vector<ReadSessionOptions> all_options(5);
  all_options[1].max_versions = 1;
  all_options[2].max_versions = 2;
  all_options[3].min_timestamp = 12;
  all_options[3].max_timestamp = 35;
  all_options[4].min_timestamp = 20;
  all_options[4].max_timestamp = 40;
  all_options[4].max_versions = 1;
  size_t cells = 0;
  for (size_t n = 0; n < all_options.size(); n++) {
    ReadSessionOptions o = all_options[n];
    std::unique_ptr<ReadSession> prefetching = NewSession(o);
    o.prefetch = false;
    std::unique_ptr<ReadSession> plain = NewSession(o);
    for (const auto& [f, q] : pattern) {
      auto got = prefetching->Get("r", f, q);
      ASSERT_OK(got);
      const std::vector<Cell> expected = Expected("r", f, q, o);
      EXPECT_EQ(*got, expected) << "options " << n << ", " << f << ":" << EscapeBytes(q);
      EXPECT_EQ(*plain->Get("r", f, q), expected) << "options " << n;
      cells += expected.size();
    }
    const ReadStats st = prefetching->stats();
    EXPECT_EQ(st.lookups, 1u) << "options " << n;
    EXPECT_EQ(st.prefetched_columns, pattern.size() - 1);
    EXPECT_EQ(st.prefetch_hits, pattern.size() - 1);
    EXPECT_EQ(plain->stats().lookups, pattern.size());
  }
  EXPECT_GT(cells, 3 * pattern.size()) << "the row should hold versions to compare";
}

// Locality groups are read one after another, and here their families
// interleave (a and c in one group, b in the other, read first): one lookup
// still caches each column's own versions, newest first.
TEST_F(ReadSessionTest, PrefetchOverGroupsWhoseFamiliesInterleave) {
  TableSchema schema;
  schema.locality_groups.push_back({.name = "first"});
  schema.locality_groups.push_back({.name = "second"});
  schema.families.push_back({.name = "a", .locality_group = "second"});
  schema.families.push_back({.name = "b", .locality_group = "first"});
  schema.families.push_back({.name = "c", .locality_group = "second"});
  ASSERT_OK(tenant_.CreateTable("mixed", schema));
  auto opened = tenant_.OpenTable("mixed");
  ASSERT_OK(opened);
  Table table = *opened;
  const std::vector<std::pair<std::string, std::string>> pattern = {
      {"c", "x"}, {"a", "y"}, {"b", "x"}, {"a", "x"}, {"b", "y"}, {"c", "w"}};
  for (uint64_t ts = 1; ts <= 3; ts++) {
    RowMutation m;
    for (const auto& [f, q] : pattern) m.Put(f, q, ts, f + q + std::to_string(ts));
    ASSERT_OK(table.Mutate(options_, "r", m));
    if (ts == 2) {
      ASSERT_OK(engine_->Flush());
    }
  }
  for (int i = 0; i < 100; i++) {
    auto s = table.NewReadSession();
    ASSERT_OK(s);
    for (const auto& [f, q] : pattern) ASSERT_OK((*s)->Get("train", f, q));
  }
  for (uint32_t versions : {1u, 2u, 5u}) {
    auto s = table.NewReadSession(ReadSessionOptions{.max_versions = versions});
    ASSERT_OK(s);
    for (const auto& [f, q] : pattern) {
      auto got = (*s)->Get("r", f, q);
      ASSERT_OK(got);
      RowFilter one{.columns = {{f, q}}, .max_versions = versions};
      EXPECT_EQ(*got, *table.ReadRow(ReadOptions(), "r", one)) << f << ":" << q;
      EXPECT_EQ(got->size(), std::min(versions, 3u));
    }
    EXPECT_EQ((*s)->stats().lookups, 1u);
    EXPECT_EQ((*s)->stats().prefetched_columns, pattern.size() - 1);
  }
}

TEST_F(ReadSessionTest, TableTotalsAddUpEndedSessions) {
  WriteWideRow("r");
  auto before = table_.GetReadStats();
  ASSERT_OK(before);
  EXPECT_EQ(before->sessions, 0u);
  ReadStats sum;
  for (int i = 0; i < 3; i++) {
    std::unique_ptr<ReadSession> s = NewSession();
    for (int c = 0; c <= i; c++) ASSERT_OK(s->Get("r", "f", Q(c)));
    ASSERT_OK(s->Get("r", "f", Q(0)));
    ASSERT_OK(s->ReadRow("r", RowFilter()));
    ReadStats st = s->stats();
    sum.gets += st.gets;
    sum.lookups += st.lookups;
    sum.cache_hits += st.cache_hits;
    // Not added until the session ends.
    EXPECT_EQ(table_.GetReadStats()->sessions, static_cast<uint64_t>(i));
  }
  auto after = table_.GetReadStats();
  ASSERT_OK(after);
  EXPECT_EQ(after->sessions, 3u);
  EXPECT_EQ(after->gets, sum.gets);
  EXPECT_EQ(after->gets, 9u);
  EXPECT_EQ(after->lookups, sum.lookups);
  EXPECT_EQ(after->lookups, 9u);  // 1 + 2 + 3 misses, 3 ReadRows
  EXPECT_EQ(after->cache_hits, sum.cache_hits);
}

TEST_F(ReadSessionTest, PredictedButEmptyColumnsAreCachedAsEmpty) {
  for (int r = 0; r < 10; r++) WriteWideRow("train" + std::to_string(r));
  Train({0, 5, 9});
  // A row where q5 was never written and q9's only version is deleted.
  RowMutation m;
  m.Put("f", Q(0), 10, "zero").Put("f", Q(9), 10, "nine").DeleteColumn("f", Q(9));
  ASSERT_OK(table_.Mutate(options_, "sparse", m));

  std::unique_ptr<ReadSession> s = NewSession();
  EXPECT_EQ(*s->Get("sparse", "f", Q(0)), (std::vector<Cell>{{"f", Q(0), 10, "zero"}}));
  EXPECT_EQ(s->stats().prefetched_columns, 2u);
  EXPECT_EQ(s->stats().prefetched_cells, 0u);
  EXPECT_TRUE(s->Get("sparse", "f", Q(5))->empty());
  EXPECT_TRUE(s->Get("sparse", "f", Q(9))->empty());
  // Written after they were fetched: the session keeps what it saw.
  RowMutation late;
  late.Put("f", Q(5), 30, "late");
  ASSERT_OK(table_.Mutate(options_, "sparse", late));
  EXPECT_TRUE(s->Get("sparse", "f", Q(5))->empty());
  ReadStats st = s->stats();
  EXPECT_EQ(st.lookups, 1u);
  EXPECT_EQ(st.cache_hits, 3u);
  EXPECT_EQ(st.prefetch_hits, 2u);
  // A new session sees the write.
  EXPECT_EQ(NewSession()->Get("sparse", "f", Q(5))->size(), 1u);
}

TEST_F(ReadSessionTest, ReadRowPassesThroughAndCountsALookup) {
  WriteWideRow("r");
  std::unique_ptr<ReadSession> s = NewSession();
  RowFilter f;
  f.families = {"f"};
  f.max_versions = 1;
  auto got = s->ReadRow("r", f);
  ASSERT_OK(got);
  EXPECT_EQ(*got, *table_.ReadRow(ReadOptions(), "r", f));
  EXPECT_EQ(got->size(), static_cast<size_t>(kColumns));
  EXPECT_EQ(s->stats().lookups, 1u);
  EXPECT_EQ(s->stats().gets, 0u);
}

// Random writes (puts, every kind of delete, flushes), then sessions with
// random options reading random columns, with and without prediction: every
// Get equals Table::ReadRow of that column with the same range and versions.
TEST_F(ReadSessionTest, RandomizedAnswersEqualReadRowWithAndWithoutPrediction) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("STRATA_TEST_SEED=" + std::to_string(seed));
  Random rnd(seed);
  const int kRows = 6;
  // Binary and empty qualifiers too: the session relies on ReadRow's order.
  const std::vector<std::string> qualifiers = {
      Q(0), Q(1), Q(2), Q(3), "", "\xff\x01", std::string("a\0b", 3), std::string(1, '\0'),
      "q", "\x80"};
  const std::vector<std::string> families = {"f", "g"};
  const int rounds = test::UnderSanitizer() ? 4 : 12;
  const int sessions_per_round = test::UnderSanitizer() ? 40 : 120;
  auto row_name = [](uint64_t r) { return "row" + std::to_string(r); };
  uint64_t prefetched = 0;
  uint64_t prefetch_hits = 0;
  for (int round = 0; round < rounds; round++) {
    for (int w = 0; w < 60; w++) {
      RowMutation m;
      const std::string& fam = families[rnd.Uniform(2)];
      const std::string& q = qualifiers[rnd.Uniform(qualifiers.size())];
      const uint64_t ts = 1 + rnd.Uniform(20);
      switch (rnd.Uniform(10)) {
        case 0:
          m.DeleteCell(fam, q, ts);
          break;
        case 1:
          m.DeleteColumn(fam, q, ts);
          break;
        case 2:
          if (rnd.Uniform(3) == 0) {
            m.DeleteRow(ts);
            break;
          }
          [[fallthrough]];
        default:
          m.Put(fam, q, ts, "v" + std::to_string(rnd.Next() % 1000));
      }
      ASSERT_OK(table_.Mutate(options_, row_name(rnd.Uniform(kRows)), m));
    }
    if (rnd.Uniform(3) == 0) {
      ASSERT_OK(engine_->Flush());
    }

    for (int i = 0; i < sessions_per_round; i++) {
      ReadSessionOptions o;
      o.prefetch = rnd.Uniform(4) != 0;
      if (rnd.Uniform(2) == 0) {
        o.min_timestamp = 1 + rnd.Uniform(10);
        o.max_timestamp = o.min_timestamp + rnd.Uniform(15);
      }
      if (rnd.Uniform(2) == 0) o.max_versions = 1 + static_cast<uint32_t>(rnd.Uniform(3));
      std::unique_ptr<ReadSession> s = NewSession(o);
      ASSERT_NE(s, nullptr);
      // Mostly a fixed group of columns read together (so there is something
      // to predict), sometimes random ones, sometimes the same one again.
      const int n = 1 + static_cast<int>(rnd.Uniform(6));
      const std::string row = row_name(rnd.Uniform(kRows));
      for (int k = 0; k < n; k++) {
        std::string fam = k % 2 == 0 ? "f" : "g";
        std::string q = qualifiers[qualifiers.size() - 1 - k];
        if (rnd.Uniform(5) == 0) {
          fam = families[rnd.Uniform(2)];
          q = qualifiers[rnd.Uniform(qualifiers.size())];
        }
        auto got = s->Get(row, fam, q);
        ASSERT_OK(got);
        ASSERT_EQ(*got, Expected(row, fam, q, o))
            << row << " " << fam << ":" << EscapeBytes(q) << " round " << round << " session " << i;
        if (rnd.Uniform(4) == 0) {
          ASSERT_EQ(*s->Get(row, fam, q), *got);
        }
      }
      prefetched += s->stats().prefetched_columns;
      prefetch_hits += s->stats().prefetch_hits;
    }
  }
  EXPECT_GT(prefetched, 0u) << "the comparison never exercised prefetching";
  EXPECT_GT(prefetch_hits, 0u);
}

TEST_F(ReadSessionTest, ConcurrentSessions) {
  const int kRows = 16;
  for (int r = 0; r < kRows; r++) WriteWideRow("row" + std::to_string(r));
  const int kThreads = 4;
  // Enough sessions that learning, which skips samples while another thread
  // holds the learner (more of them on a loaded machine), ends early in the run.
  const int kSessions = test::UnderSanitizer() ? 200 : 400;
  std::vector<std::thread> threads;
  std::vector<ReadStats> per_thread(kThreads);
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      Random rnd(1000 + t);
      for (int i = 0; i < kSessions; i++) {
        ReadSessionOptions o;
        o.prefetch = i % 5 != 0;
        auto s = table_.NewReadSession(o);
        ASSERT_OK(s);
        for (int k = 0; k < 3; k++) {
          const std::string row = "row" + std::to_string(rnd.Uniform(kRows));
          // Half the threads read one pattern, half another.
          for (int c : kPattern) {
            const int col = t % 2 == 0 ? c : (c + 1) % kColumns;
            auto got = (*s)->Get(row, "f", Q(col));
            ASSERT_OK(got);
            ASSERT_EQ(got->size(), 2u);
            ASSERT_EQ((*got)[0].value, row + "/" + Q(col) + "@20");
          }
        }
        ReadStats st = (*s)->stats();
        per_thread[t].sessions += st.sessions;
        per_thread[t].gets += st.gets;
        per_thread[t].lookups += st.lookups;
        per_thread[t].prefetch_hits += st.prefetch_hits;
      }
    });
  }
  for (auto& th : threads) th.join();
  ReadStats sum;
  for (const ReadStats& st : per_thread) {
    sum.sessions += st.sessions;
    sum.gets += st.gets;
    sum.lookups += st.lookups;
    sum.prefetch_hits += st.prefetch_hits;
  }
  auto totals = table_.GetReadStats();
  ASSERT_OK(totals);
  EXPECT_EQ(totals->sessions, sum.sessions);
  EXPECT_EQ(totals->gets, sum.gets);
  EXPECT_EQ(totals->lookups, sum.lookups);
  EXPECT_EQ(totals->prefetch_hits, sum.prefetch_hits);
  EXPECT_EQ(totals->gets, static_cast<uint64_t>(kThreads * kSessions * 3 * 8));
  // Prediction learned both patterns while sessions ran.
  EXPECT_LT(totals->lookups, totals->gets / 2);
}

// What the hook of the next test does, once: moves the empty family "h" to
// the other group, then writes "h" and "f" in one row mutation.
std::function<void()>* g_between_schema_and_lookup = nullptr;

void RunBetweenSchemaAndLookup() {
  engine::test_hooks::after_session_schema.store(nullptr);
  (*g_between_schema_and_lookup)();
}

// A Get whose lookup starts after a schema change moved a family reads by
// the new schema: one lookup shows both columns of the mutation made after
// the move, never the one read through its old group without the other.
TEST_F(ReadSessionTest, LookupAfterAFamilyMovedSeesTheRowAtOneMoment) {
  TableSchema with_h = Schema();
  with_h.families.push_back({.name = "h", .locality_group = "one"});
  ASSERT_OK(tenant_.AlterTable("tab", with_h));
  ASSERT_OK(table_.Mutate(options_, "r", RowMutation().Put("f", Q(0), 1, "old")));
  for (int s = 0; s < 100; s++) {  // h:x and f:q0 are read together
    std::unique_ptr<ReadSession> session = NewSession();
    ASSERT_NE(session, nullptr);
    ASSERT_OK(session->Get("train", "h", "x"));
    ASSERT_OK(session->Get("train", "f", Q(0)));
  }
  TableSchema h_moved = with_h;
  h_moved.families[2].locality_group = "two";
  std::function<void()> between = [&] {
    ASSERT_OK(tenant_.AlterTable("tab", h_moved));
    ASSERT_OK(table_.Mutate(options_, "r",
                            RowMutation().Put("h", "x", 2, "new").Put("f", Q(0), 2, "new")));
  };
  g_between_schema_and_lookup = &between;
  std::unique_ptr<ReadSession> session = NewSession();
  ASSERT_NE(session, nullptr);
  engine::test_hooks::after_session_schema.store(&RunBetweenSchemaAndLookup);
  auto h = session->Get("r", "h", "x");
  engine::test_hooks::after_session_schema.store(nullptr);
  g_between_schema_and_lookup = nullptr;
  ASSERT_OK(h);
  auto f = session->Get("r", "f", Q(0));
  ASSERT_OK(f);
  ASSERT_EQ(session->stats().lookups, 1u);  // f:q0 came with h:x
  ASSERT_EQ(session->stats().prefetch_hits, 1u);
  ASSERT_EQ(h->size(), 1u);
  EXPECT_EQ((*h)[0].value, "new");
  ASSERT_FALSE(f->empty());
  EXPECT_EQ((*f)[0].value, "new");
  EXPECT_EQ(session->Get("r", "g", "y")->size(), 0u);  // the session still reads
}

TEST_F(ReadSessionTest, BadInput) {
  WriteWideRow("r");
  ReadSessionOptions o;
  o.min_timestamp = 5;
  o.max_timestamp = 4;
  EXPECT_TRUE(table_.NewReadSession(o).status().IsInvalidArgument());
  o = ReadSessionOptions();
  o.max_versions = 0;
  EXPECT_TRUE(table_.NewReadSession(o).status().IsInvalidArgument());
  EXPECT_TRUE(Table().NewReadSession().status().IsInvalidArgument());
  EXPECT_TRUE(Table().GetReadStats().status().IsInvalidArgument());

  std::unique_ptr<ReadSession> s = NewSession();
  EXPECT_TRUE(s->Get("r", "nope", Q(0)).status().IsInvalidArgument());
  EXPECT_TRUE(s->Get("", "f", Q(0)).status().IsInvalidArgument());
  EXPECT_TRUE(s->Get(std::string(20 << 10, 'x'), "f", Q(0)).status().IsInvalidArgument());
  EXPECT_TRUE(s->ReadRow("r", RowFilter{.families = {"nope"}}).status().IsInvalidArgument());
  EXPECT_EQ(s->stats().lookups, 0u);
  ASSERT_OK(s->Get("r", "f", Q(0)));

  ASSERT_OK(tenant_.DropTable("tab"));
  // Cached or not, a dropped table's reads are NotFound, as Table calls are.
  EXPECT_TRUE(s->Get("r", "f", Q(0)).status().IsNotFound());
  EXPECT_TRUE(s->Get("r", "f", Q(1)).status().IsNotFound());
  EXPECT_TRUE(s->ReadRow("r", RowFilter()).status().IsNotFound());
  EXPECT_TRUE(table_.NewReadSession().status().IsNotFound());
  EXPECT_TRUE(table_.GetReadStats().status().IsNotFound());
  s.reset();  // ends after the drop without harm
}

TEST_F(ReadSessionTest, LookupsAfterCloseFail) {
  WriteWideRow("r");
  std::unique_ptr<ReadSession> s = NewSession();
  ASSERT_OK(s->Get("r", "f", Q(0)));
  ASSERT_OK(engine_->Close());
  // A miss needs the engine; an answer already cached does not.
  EXPECT_TRUE(s->Get("r", "f", Q(1)).status().IsInvalidArgument());
  EXPECT_OK(s->Get("r", "f", Q(0)));
  s.reset();
  // New sessions and the table's counters go the way of every Table call.
  EXPECT_TRUE(table_.NewReadSession().status().IsInvalidArgument());
  EXPECT_TRUE(table_.GetReadStats().status().IsInvalidArgument());
}

}  // namespace
}  // namespace strata
