// PrefetchPredictor on its own: what it learns from records of columns read
// together, how it forgets, its bounds, and concurrent use.
#include "engine/prefetch_predictor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "util/test_util.h"

namespace strata::engine {
namespace {

using Record = std::vector<std::vector<ColumnRef>>;

// Column `name` of family 1.
ColumnRef Col(std::string_view name) { return ColumnRef(1, name); }

// One session that read `columns` from one row.
Record OneRow(const std::vector<std::string_view>& columns) {
  std::vector<ColumnRef> row;
  for (std::string_view c : columns) row.push_back(Col(c));
  return {row};
}

std::vector<std::string> Predicted(const PrefetchPredictor& p, std::string_view column) {
  std::vector<std::string> out;
  const auto snapshot = p.snapshot();
  for (const ColumnId& c : snapshot->Predict(Col(column))) {
    EXPECT_EQ(c.family, 1);
    out.push_back(c.qualifier);
  }
  return out;
}

PrefetchPredictor::Options Eager() {
  PrefetchPredictor::Options o;
  o.refresh_interval = 1;  // every record republishes
  return o;
}

TEST(PrefetchPredictorTest, PredictsNothingUntilTaught) {
  PrefetchPredictor p;
  EXPECT_TRUE(p.snapshot()->Predict(Col("a")).empty());
  EXPECT_EQ(p.tracked_columns(), 0u);
}

TEST(PrefetchPredictorTest, LearnsColumnsReadTogether) {
  PrefetchPredictor p(Eager());
  for (int i = 0; i < 10; i++) ASSERT_TRUE(p.Record(OneRow({"a", "b", "c"})));
  ASSERT_TRUE(p.Record(OneRow({"d"})));
  std::vector<std::string> a = Predicted(p, "a");
  std::sort(a.begin(), a.end());
  EXPECT_EQ(a, (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(Predicted(p, "c").size(), 2u);
  EXPECT_TRUE(Predicted(p, "d").empty());
  EXPECT_TRUE(Predicted(p, "x").empty());
  // Another family with the same qualifier is another column.
  EXPECT_TRUE(p.snapshot()->Predict(ColumnRef(2, "a")).empty());
}

TEST(PrefetchPredictorTest, NeedsMinReadsBeforePredicting) {
  PrefetchPredictor::Options o = Eager();
  o.min_reads = 4;
  PrefetchPredictor p(o);
  for (int i = 0; i < 3; i++) ASSERT_TRUE(p.Record(OneRow({"a", "b"})));
  EXPECT_TRUE(Predicted(p, "a").empty());
  ASSERT_TRUE(p.Record(OneRow({"a", "b"})));
  EXPECT_EQ(Predicted(p, "a"), std::vector<std::string>{"b"});
}

TEST(PrefetchPredictorTest, ThresholdAndCapOrderByFrequency) {
  PrefetchPredictor::Options o = Eager();
  o.max_predicted = 2;
  PrefetchPredictor p(o);
  // Given a: b in 9 of 10 records, c in 7, d in 6, e in 3 (below 50%).
  for (int i = 0; i < 10; i++) {
    std::vector<std::string_view> row{"a"};
    if (i < 9) row.push_back("b");
    if (i < 7) row.push_back("c");
    if (i < 6) row.push_back("d");
    if (i < 3) row.push_back("e");
    ASSERT_TRUE(p.Record(OneRow(row)));
  }
  EXPECT_EQ(Predicted(p, "a"), (std::vector<std::string>{"b", "c"}));
  EXPECT_TRUE(Predicted(p, "e").empty()) << "e has only 3 reads, below min_reads";
  // Given d: a, b and c come with it every time; capped at two.
  EXPECT_EQ(Predicted(p, "d").size(), 2u);
}

TEST(PrefetchPredictorTest, StopsPredictingWhenThePatternChanges) {
  PrefetchPredictor::Options o = Eager();
  o.decay_interval = 16;
  PrefetchPredictor p(o);
  for (int i = 0; i < 100; i++) ASSERT_TRUE(p.Record(OneRow({"a", "b"})));
  EXPECT_EQ(Predicted(p, "a"), std::vector<std::string>{"b"});
  EXPECT_EQ(Predicted(p, "b"), std::vector<std::string>{"a"});

  // Now a is read with c and never with b.
  int records = 0;
  while (records < 1000 && Predicted(p, "a") != std::vector<std::string>{"c"}) {
    ASSERT_TRUE(p.Record(OneRow({"a", "c"})));
    records++;
  }
  EXPECT_EQ(Predicted(p, "a"), std::vector<std::string>{"c"});
  // Within about one decay interval, not in proportion to the old history.
  EXPECT_LE(records, 2 * static_cast<int>(o.decay_interval));
  // b, no longer read, is forgotten altogether.
  for (int i = 0; i < 100; i++) ASSERT_TRUE(p.Record(OneRow({"a", "c"})));
  EXPECT_TRUE(Predicted(p, "b").empty());
  EXPECT_EQ(p.tracked_columns(), 2u);
}

TEST(PrefetchPredictorTest, TracksAtMostMaxColumnsAndFreesSlotsOnDecay) {
  PrefetchPredictor::Options o = Eager();
  o.max_columns = 8;
  o.decay_interval = 32;
  PrefetchPredictor p(o);
  std::vector<std::string> names;
  for (int i = 0; i < 20; i++) names.push_back("c" + std::to_string(i));
  std::vector<std::string_view> all(names.begin(), names.end());
  for (int i = 0; i < 10; i++) ASSERT_TRUE(p.Record(OneRow(all)));
  EXPECT_EQ(p.tracked_columns(), 8u);
  // The first eight columns took the slots; the others are not learned.
  EXPECT_EQ(Predicted(p, "c0").size(), 7u);
  EXPECT_TRUE(Predicted(p, "c19").empty());

  // A new pattern over untracked columns gets in once the old columns decay.
  for (int i = 0; i < 400; i++) ASSERT_TRUE(p.Record(OneRow({"c18", "c19"})));
  EXPECT_EQ(Predicted(p, "c19"), std::vector<std::string>{"c18"});
  EXPECT_TRUE(Predicted(p, "c0").empty());
  EXPECT_LE(p.tracked_columns(), 8u);
}

TEST(PrefetchPredictorTest, IgnoresDuplicatesAndCapsColumnsPerRecord) {
  PrefetchPredictor::Options o = Eager();
  o.max_columns_per_record = 2;
  PrefetchPredictor p(o);
  for (int i = 0; i < 10; i++) ASSERT_TRUE(p.Record(OneRow({"a", "a", "b", "c"})));
  // "a" twice counts once; the third distinct column is past the cap.
  EXPECT_EQ(Predicted(p, "a"), std::vector<std::string>{"b"});
  EXPECT_TRUE(Predicted(p, "c").empty());
}

TEST(PrefetchPredictorTest, SnapshotsAreImmutableAndRefreshedPeriodically) {
  PrefetchPredictor::Options o;
  o.refresh_interval = 8;
  PrefetchPredictor p(o);
  std::shared_ptr<const PrefetchPredictor::Snapshot> before = p.snapshot();
  for (int i = 0; i < 7; i++) ASSERT_TRUE(p.Record(OneRow({"a", "b"})));
  EXPECT_EQ(p.snapshot(), before) << "republished before refresh_interval records";
  ASSERT_TRUE(p.Record(OneRow({"a", "b"})));
  EXPECT_NE(p.snapshot(), before);
  EXPECT_TRUE(before->Predict(Col("a")).empty());
  EXPECT_EQ(p.snapshot()->Predict(Col("a")).size(), 1u);

  ASSERT_TRUE(p.Record(OneRow({"x", "y"})));
  for (int i = 0; i < 4; i++) ASSERT_TRUE(p.Record(OneRow({"x", "y"})));
  EXPECT_TRUE(p.snapshot()->Predict(Col("x")).empty());
  p.Refresh();
  EXPECT_EQ(p.snapshot()->Predict(Col("x")).size(), 1u);
}

TEST(PrefetchPredictorTest, ConcurrentRecordsAndPredictions) {
  PrefetchPredictor::Options o;
  o.refresh_interval = 16;
  o.decay_interval = 256;
  o.max_columns = 16;
  PrefetchPredictor p(o);
  const int kThreads = 4;
  const int kSessions = test::UnderSanitizer() ? 300 : 3000;
  std::atomic<int> recorded{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      std::vector<std::string> names;
      for (int i = 0; i < 24; i++) names.push_back("q" + std::to_string(i));
      for (int s = 0; s < kSessions; s++) {
        // Every session reads q0 and q1 together; the third column varies,
        // so slots are taken and given up all the time.
        Record rec;
        rec.push_back({Col(names[0]), Col(names[1]), Col(names[2 + (s * 7 + t) % 22])});
        rec.push_back({Col(names[(s + t) % 24])});
        if (p.Record(rec)) recorded++;
        // Held for the loop: another thread's Record may replace it meanwhile.
        const auto snapshot = p.snapshot();
        for (const ColumnId& c : snapshot->Predict(Col(names[s % 24]))) {
          ASSERT_FALSE(c.qualifier.empty());
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_GT(recorded.load(), 0);
  p.Refresh();
  EXPECT_LE(p.tracked_columns(), 16u);
  std::vector<std::string> q0 = Predicted(p, "q0");
  EXPECT_NE(std::find(q0.begin(), q0.end(), "q1"), q0.end());
}

}  // namespace
}  // namespace strata::engine
