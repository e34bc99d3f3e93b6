// RenderMetrics (strata/metrics.h) over a live engine, a TransactionDB, a
// garbage collector and an observer worker: the Prometheus text parses as a
// scraper would parse it and carries the values each GetStats reports; the
// JSON parses and says the same; the counters of the transaction layer count
// what the transactions did.
#include "strata/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "common/file_system.h"
#include "common/json.h"
#include "metrics/exposition.h"
#include "prometheus_text.h"
#include "strata/engine.h"
#include "strata/gc.h"
#include "strata/observer.h"
#include "strata/transaction.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata {
namespace {

using Kind = TransactionError::Kind;
using Labels = std::map<std::string, std::string>;

// Copies "bal" to "copy" in the same row.
class CopyObserver : public Observer {
 public:
  Status Process(Transaction* txn, std::string_view table, std::string_view row,
                 std::string_view column) override {
    Result<std::string> v = txn->Get(table, row, column);
    if (!v.ok()) return v.status();
    return txn->Set(table, row, "copy", *v);
  }
};

class MetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::unique_ptr<Engine>> e = Engine::Open(dir_.Join("db"));
    ASSERT_OK(e);
    engine_ = std::move(e).value();
    ASSERT_OK(engine_->CreateTenant("shop"));
    Result<std::shared_ptr<TransactionServices>> services =
        TransactionServices::Open(dir_.Join("services"));
    ASSERT_OK(services);
    services_ = *services;
    TransactionDBOptions options;
    options.sync = false;
    options.one_phase_commit = false;
    options.observed_columns = {{"accounts", "bal"}};
    Result<std::unique_ptr<TransactionDB>> db =
        TransactionDB::Open(services_, *engine_->OpenTenant("shop"), options);
    ASSERT_OK(db);
    db_ = std::move(db).value();
    ASSERT_OK(db_->CreateTable("accounts"));
  }
  void TearDown() override {
    if (worker_ != nullptr) {
      EXPECT_OK(worker_->Stop());
    }
    if (gc_ != nullptr) {
      EXPECT_OK(gc_->Close());
    }
    if (db_ != nullptr) {
      EXPECT_OK(db_->Close());
    }
    if (engine_ != nullptr) {
      EXPECT_OK(engine_->Close());
    }
  }

  std::unique_ptr<Transaction> Begin(TransactionOptions o = {}) {
    Result<std::unique_ptr<Transaction>> t = db_->Begin(o);
    EXPECT_OK(t);
    return t.ok() ? std::move(t).value() : nullptr;
  }
  void Set(const std::string& row, const std::string& value) {
    std::unique_ptr<Transaction> t = Begin();
    ASSERT_OK(t->Set("accounts", row, "bal", value));
    ASSERT_OK(t->Commit());
  }

  MetricsSources Sources() const {
    MetricsSources s;
    s.engine = engine_.get();
    s.tenants.push_back({"shop", db_.get(), gc_.get(), worker_.get()});
    return s;
  }

  test::ScratchDir dir_{"metrics"};
  std::unique_ptr<Engine> engine_;
  std::shared_ptr<TransactionServices> services_;
  std::unique_ptr<TransactionDB> db_;
  std::unique_ptr<GarbageCollector> gc_;
  std::unique_ptr<ObserverWorker> worker_;
};

TEST_F(MetricsTest, TransactionStatsCountWhatTransactionsDid) {
  Set("a", "1");
  Set("b", "2");
  {  // read-only
    std::unique_ptr<Transaction> t = Begin();
    ASSERT_OK(t->Get("accounts", "a", "bal").status());
    ASSERT_OK(t->Commit());
  }
  {  // rolled back
    std::unique_ptr<Transaction> t = Begin();
    ASSERT_OK(t->Set("accounts", "a", "bal", "x"));
    ASSERT_OK(t->Rollback());
  }
  {  // a write conflict: b committed after t1 began
    std::unique_ptr<Transaction> t1 = Begin();
    Set("b", "3");
    ASSERT_OK(t1->Set("accounts", "b", "bal", "4"));
    EXPECT_TRUE(t1->Commit().IsAborted());
    EXPECT_EQ(t1->error().kind, Kind::kWriteConflict);
  }
  const TransactionStats s = db_->GetStats();
  EXPECT_EQ(s.begun, 6u);
  EXPECT_EQ(s.committed, 3u);
  EXPECT_EQ(s.committed_two_phase, 3u);
  EXPECT_EQ(s.committed_one_phase, 0u);
  EXPECT_EQ(s.committed_read_only, 1u);
  EXPECT_EQ(s.rolled_back, 1u);
  EXPECT_EQ(s.failed[static_cast<size_t>(Kind::kWriteConflict)], 1u);
  uint64_t failures = 0;
  for (uint64_t f : s.failed) failures += f;
  EXPECT_EQ(failures, 1u);
  EXPECT_EQ(s.commit_latency.count, 3u);
  EXPECT_GT(s.commit_latency.sum_micros, 0u);
  EXPECT_EQ(s.pessimistic_lock_waits, 0u);
}

TEST_F(MetricsTest, PessimisticWaitsAndTheirTimeoutsAreCounted) {
  Set("a", "1");
  TransactionOptions pessimistic;
  pessimistic.mode = TransactionOptions::Mode::kPessimistic;
  pessimistic.for_update_wait_millis = 20;
  std::unique_ptr<Transaction> holder = Begin(pessimistic);
  ASSERT_OK(holder->GetForUpdate("accounts", "a", "bal").status());
  std::unique_ptr<Transaction> waiter = Begin(pessimistic);
  EXPECT_TRUE(waiter->GetForUpdate("accounts", "a", "bal").status().IsAborted());
  EXPECT_EQ(waiter->error().kind, Kind::kLockWaitTimeout);
  ASSERT_OK(holder->Commit());
  const TransactionStats s = db_->GetStats();
  EXPECT_EQ(s.pessimistic_lock_waits, 1u);
  EXPECT_EQ(s.pessimistic_lock_wait_latency.count, 1u);
  EXPECT_GE(s.pessimistic_lock_wait_latency.sum_micros, 20'000u);
  EXPECT_EQ(s.failed[static_cast<size_t>(Kind::kLockWaitTimeout)], 1u);
}

TEST_F(MetricsTest, PrometheusTextParsesAndCarriesEveryStat) {
  Result<std::unique_ptr<GarbageCollector>> gc = GarbageCollector::Open(
      services_, db_.get(), {.life_time_millis = 0, .interval_millis = 0, .workers = 1});
  ASSERT_OK(gc);
  gc_ = std::move(gc).value();
  Result<std::unique_ptr<ObserverWorker>> worker = ObserverWorker::Start(
      db_.get(),
      {{"accounts", "bal", NotificationKind::kStrong, std::make_shared<CopyObserver>()}});
  ASSERT_OK(worker);
  worker_ = std::move(worker).value();
  // Rows written once each: an observer's run holds its row's lock while it
  // commits, and a second write of the row could meet it.
  for (int i = 0; i < 20; i++) Set("r" + std::to_string(i), std::to_string(i));
  ASSERT_OK(worker_->WaitForQuiescence(30'000));
  ASSERT_OK(engine_->Flush());
  ASSERT_OK(gc_->RunOnce());

  Result<std::string> text = RenderMetrics(Sources(), MetricsFormat::kPrometheus);
  ASSERT_OK(text);
  test::PromText prom;
  ASSERT_EQ(test::ParsePrometheusText(*text, &prom), "") << *text;

  const EngineStats es = engine_->GetStats();
  EXPECT_GE(prom.Value("strata_engine_writes_total", {}), 20);
  EXPECT_LE(prom.Value("strata_engine_writes_total", {}), static_cast<double>(es.writes));
  EXPECT_EQ(prom.Value("strata_engine_flushes_total", {}), static_cast<double>(es.flushes));
  EXPECT_GE(es.flushes, 1u);
  EXPECT_EQ(prom.Value("strata_engine_flush_seconds_count", {}),
            static_cast<double>(es.flush_latency.count));
  EXPECT_EQ(es.flush_latency.count, es.flushes);
  EXPECT_EQ(prom.types.at("strata_engine_flush_seconds"), "histogram");
  EXPECT_EQ(prom.Value("strata_engine_level_files", {{"level", "0"}}),
            static_cast<double>(es.level_files.at(0)));

  const Labels shop = {{"tenant", "shop"}};
  Result<TenantStats> ts = engine_->OpenTenant("shop")->GetStats();
  ASSERT_OK(ts);
  EXPECT_GE(prom.Value("strata_tenant_row_writes_total", shop), 20);
  EXPECT_EQ(prom.Value("strata_table_tablets", {{"tenant", "shop"}, {"table", "accounts"}}), 1);

  const TransactionStats txs = db_->GetStats();
  EXPECT_EQ(prom.Value("strata_txn_commits_total", {{"tenant", "shop"}, {"kind", "two_phase"}}),
            static_cast<double>(txs.committed_two_phase));
  EXPECT_GE(txs.committed, 20u + 20u);  // the writes, and a run per row
  EXPECT_EQ(prom.Value("strata_txn_commit_seconds_count", shop),
            static_cast<double>(txs.commit_latency.count));
  EXPECT_EQ(prom.Value("strata_txn_failures_total", {{"tenant", "shop"}, {"cause", "deadlock"}}),
            0);

  const GcStats gs = gc_->GetStats();
  EXPECT_EQ(prom.Value("strata_gc_rounds_total", shop), static_cast<double>(gs.rounds));
  EXPECT_EQ(gs.rounds, 1u);
  EXPECT_GT(prom.Value("strata_gc_safepoint_timestamp_seconds", shop), 1.6e9);  // after 2020

  const ObserverStats os = worker_->GetStats();
  EXPECT_EQ(prom.Value("strata_observer_runs_total", shop), static_cast<double>(os.runs));
  EXPECT_EQ(os.runs, 20u);
  EXPECT_EQ(prom.Value("strata_observer_pending_notifications", shop), 0);

  for (const auto& [name, type] : prom.types) {
    EXPECT_FALSE(prom.helps[name].empty()) << name;
  }
}

// A second tenant with one-phase commits and two tables: every family's
// samples still come in one run, each tenant's and table's under its labels.
TEST_F(MetricsTest, SeveralTenantsAndTables) {
  ASSERT_OK(engine_->CreateTenant("books"));
  TransactionDBOptions options;
  options.sync = false;  // one_phase_commit on, as by default
  Result<std::unique_ptr<TransactionDB>> books =
      TransactionDB::Open(services_, *engine_->OpenTenant("books"), options);
  ASSERT_OK(books);
  ASSERT_OK((*books)->CreateTable("titles"));
  ASSERT_OK((*books)->CreateTable("authors"));
  for (int i = 0; i < 4; i++) {
    Result<std::unique_ptr<Transaction>> t = (*books)->Begin();
    ASSERT_OK(t);
    ASSERT_OK((*t)->Set("titles", "b" + std::to_string(i), "name", "x"));
    ASSERT_OK((*t)->Commit());
  }
  {  // two tables: two phases
    Result<std::unique_ptr<Transaction>> t = (*books)->Begin();
    ASSERT_OK(t);
    ASSERT_OK((*t)->Set("titles", "b9", "name", "y"));
    ASSERT_OK((*t)->Set("authors", "a9", "name", "z"));
    ASSERT_OK((*t)->Commit());
  }
  Set("a", "1");
  const TransactionStats bs = (*books)->GetStats();
  EXPECT_EQ(bs.committed_one_phase, 4u);
  EXPECT_EQ(bs.committed_two_phase, 1u);
  EXPECT_EQ(bs.committed, 5u);

  MetricsSources sources = Sources();
  sources.tenants.push_back({"books", books->get(), nullptr, nullptr});
  Result<std::string> text = RenderMetrics(sources, MetricsFormat::kPrometheus);
  ASSERT_OK(text);
  test::PromText prom;
  ASSERT_EQ(test::ParsePrometheusText(*text, &prom), "") << *text;
  EXPECT_EQ(prom.Value("strata_txn_commits_total", {{"tenant", "books"}, {"kind", "one_phase"}}),
            4);
  EXPECT_EQ(prom.Value("strata_txn_commits_total", {{"tenant", "books"}, {"kind", "two_phase"}}),
            1);
  EXPECT_EQ(prom.Value("strata_txn_commits_total", {{"tenant", "shop"}, {"kind", "two_phase"}}), 1);
  EXPECT_EQ(prom.Value("strata_txn_commit_seconds_count", {{"tenant", "books"}}), 5);
  for (const char* table : {"titles", "authors"}) {
    EXPECT_EQ(prom.Value("strata_table_tablets", {{"tenant", "books"}, {"table", table}}), 1);
  }
  EXPECT_EQ(prom.Value("strata_table_tablets", {{"tenant", "shop"}, {"table", "accounts"}}), 1);
  EXPECT_GE(prom.Value("strata_tenant_row_writes_total", {{"tenant", "books"}}), 5);

  // Two entries under one name would make clashing series.
  sources.tenants.push_back({"books", db_.get(), nullptr, nullptr});
  EXPECT_TRUE(RenderMetrics(sources, MetricsFormat::kJson).status().IsInvalidArgument());
  ASSERT_OK((*books)->Close());
}

TEST_F(MetricsTest, JsonSaysWhatTheTextSays) {
  for (int i = 0; i < 10; i++) Set("r" + std::to_string(i), "v");
  ASSERT_OK(engine_->Flush());
  // Nothing changes between the two renderings: no background work is left
  // and the sources are idle.
  Result<std::string> text = RenderMetrics(Sources(), MetricsFormat::kPrometheus);
  Result<std::string> json = RenderMetrics(Sources(), MetricsFormat::kJson);
  ASSERT_OK(text);
  ASSERT_OK(json);
  test::PromText prom;
  ASSERT_EQ(test::ParsePrometheusText(*text, &prom), "");
  Result<Json> doc = Json::Parse(*json);
  ASSERT_OK(doc) << *json;
  const Json* metrics = doc->Find("metrics");
  ASSERT_NE(metrics, nullptr);
  ASSERT_TRUE(metrics->is_array());
  EXPECT_EQ(metrics->elements().size(), prom.types.size());
  size_t compared = 0;
  for (const Json& m : metrics->elements()) {
    const std::string name = m.Find("name")->text();
    const std::string type = m.Find("type")->text();
    EXPECT_EQ(prom.types.at(name), type) << name;
    EXPECT_EQ(prom.helps.at(name), m.Find("help")->text()) << name;
    for (const Json& s : m.Find("samples")->elements()) {
      Labels labels;
      for (const auto& [k, v] : s.Find("labels")->members()) labels[k] = v.text();
      if (type == "histogram") {
        EXPECT_EQ(std::stod(s.Find("count")->text()), prom.Value(name + "_count", labels));
        const std::vector<Json>& buckets = s.Find("buckets")->elements();
        ASSERT_FALSE(buckets.empty());
        EXPECT_EQ(buckets.back().Find("le")->text(), "+Inf");
        EXPECT_EQ(std::stod(buckets.back().Find("count")->text()),
                  prom.Value(name + "_count", labels));
        ASSERT_NE(s.Find("p99"), nullptr);
      } else {
        EXPECT_EQ(std::stod(s.Find("value")->text()), prom.Value(name, labels))
            << name << " " << s.Find("value")->text();
      }
      compared++;
    }
  }
  EXPECT_GT(compared, 60u);
}

TEST(ExpositionTest, EscapesLabelValuesAndHelp) {
  metrics::Exposition x;
  const std::string odd = "a\"b\\c\nd";
  x.Counter("strata_odd_total", "help with \\ and\nline", {{"tenant", odd}}, 7);
  test::PromText prom;
  const std::string text = x.ToPrometheus();
  ASSERT_EQ(test::ParsePrometheusText(text, &prom), "") << text;
  EXPECT_EQ(prom.Value("strata_odd_total", {{"tenant", odd}}), 7);
  EXPECT_EQ(prom.helps.at("strata_odd_total"), "help with \\ and\nline");
  Result<Json> doc = Json::Parse(x.ToJson());
  ASSERT_OK(doc);
  EXPECT_EQ(doc->Find("metrics")
                ->elements()[0]
                .Find("samples")
                ->elements()[0]
                .Find("labels")
                ->Find("tenant")
                ->text(),
            odd);
}

TEST(ExpositionTest, HistogramBucketsAreCumulativeInSeconds) {
  LatencyHistogram h;
  h.counts[0] = 1;                                 // <= 1 us
  h.counts[3] = 2;                                 // (5, 10] us
  h.counts[LatencyHistogram::kBounds.size()] = 1;  // above 100 s
  h.count = 4;
  h.sum_micros = 200'000'020;
  metrics::Exposition x;
  x.Histogram("strata_x_seconds", "x", {}, h);
  test::PromText prom;
  ASSERT_EQ(test::ParsePrometheusText(x.ToPrometheus(), &prom), "");
  EXPECT_EQ(prom.Value("strata_x_seconds_bucket", {{"le", "1e-06"}}), 1);
  EXPECT_EQ(prom.Value("strata_x_seconds_bucket", {{"le", "5e-06"}}), 1);
  EXPECT_EQ(prom.Value("strata_x_seconds_bucket", {{"le", "1e-05"}}), 3);
  EXPECT_EQ(prom.Value("strata_x_seconds_bucket", {{"le", "100"}}), 3);
  EXPECT_EQ(prom.Value("strata_x_seconds_bucket", {{"le", "+Inf"}}), 4);
  EXPECT_DOUBLE_EQ(prom.Value("strata_x_seconds_sum", {}), 200.00002);
}

TEST(PrometheusCheckerTest, RefusesWhatAScraperRefuses) {
  test::PromText p;
  const char* bad[] = {
      "x_total 1",                                                 // no line feed at the end
      "# TYPE x_total counter\nx_total one\n",                     // bad value
      "# TYPE x counter\nx 1\n",                                   // counter without _total
      "# TYPE x_total counter\nx_total{a=\"1\",a=\"2\"} 1\n",      // label twice
      "# TYPE x_total counter\nx_total{a=\"\\t\"} 1\n",            // bad escape
      "# TYPE x_total counter\nx_total{1a=\"v\"} 1\n",             // bad label name
      "# TYPE x_total counter\nx_total 1\nx_total 2\n",            // series twice
      "# TYPE a gauge\n# TYPE b gauge\na 1\nb 1\na{l=\"2\"} 1\n",  // split runs
      "a 1\n# TYPE a gauge\n",                                     // TYPE after samples
      "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
      "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n",     // no +Inf
      "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 1\n",  // +Inf != count
  };
  for (const char* text : bad) EXPECT_NE(test::ParsePrometheusText(text, &p), "") << text;
  EXPECT_EQ(test::ParsePrometheusText("# HELP a x\n# TYPE a gauge\na{l=\"v\"} -1.5e3 1700\n", &p),
            "");
}

TEST_F(MetricsTest, WriteMetricsFileReplacesTheFileWhole) {
  Set("a", "1");
  const std::string path = dir_.Join("metrics.prom");
  ASSERT_OK(WriteMetricsFile(Sources(), MetricsFormat::kPrometheus, path));
  std::string first;
  ASSERT_OK(ReadFileToString(FileSystem::Default(), path, &first));
  test::PromText prom;
  ASSERT_EQ(test::ParsePrometheusText(first, &prom), "");
  Set("b", "2");
  ASSERT_OK(WriteMetricsFile(Sources(), MetricsFormat::kJson, path));
  std::string second;
  ASSERT_OK(ReadFileToString(FileSystem::Default(), path, &second));
  ASSERT_OK(Json::Parse(second));
  // Bad input: nothing written.
  EXPECT_FALSE(WriteMetricsFile(Sources(), MetricsFormat::kJson, dir_.Join("no/such/dir/m")).ok());
  EXPECT_FALSE(std::filesystem::exists(dir_.Join("no/such/dir")));
  EXPECT_TRUE(WriteMetricsFile(Sources(), MetricsFormat::kJson, "").IsInvalidArgument());
  MetricsSources unnamed;
  unnamed.tenants.push_back({"", db_.get(), nullptr, nullptr});
  EXPECT_TRUE(RenderMetrics(unnamed, MetricsFormat::kJson).status().IsInvalidArgument());
  EXPECT_OK(engine_->Close());
  EXPECT_TRUE(RenderMetrics(Sources(), MetricsFormat::kPrometheus).status().IsInvalidArgument());
}

}  // namespace
}  // namespace strata
