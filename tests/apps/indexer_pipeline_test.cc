// The incremental pipeline against the batch index: after loading a
// synthetic corpus and after random adds, edits and deletes (workers
// stopped and started between some of them), once the observers are
// quiescent the tables hold exactly the index computed from scratch over
// the pages as they are.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

#include "indexer/batch.h"
#include "indexer/corpus.h"
#include "indexer/pipeline.h"
#include "strata/engine.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::indexer {
namespace {

class IndexerPipelineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto engine = Engine::Open(dir_.Join("db"));
    ASSERT_OK(engine);
    engine_ = std::move(engine).value();
    ASSERT_OK(engine_->CreateTenant("web"));
    auto services = TransactionServices::Open(dir_.Join("services"));
    ASSERT_OK(services);
    services_ = *services;
    TransactionDBOptions options;
    options.sync = false;
    options.observed_columns = PipelineObservedColumns();
    auto db = TransactionDB::Open(services_, *engine_->OpenTenant("web"), options);
    ASSERT_OK(db);
    db_ = std::move(db).value();
    ASSERT_OK(CreatePipelineTables(db_.get()));
  }
  void TearDown() override {
    if (worker_) {
      EXPECT_OK(worker_->Stop());
    }
    worker_.reset();
    if (db_) {
      EXPECT_OK(db_->Close());
    }
    db_.reset();
    services_.reset();
    if (engine_) {
      EXPECT_OK(engine_->Close());
    }
  }
  void StartWorker(int threads) {
    auto w = ObserverWorker::Start(db_.get(), PipelineObservers(), {.threads = threads});
    ASSERT_OK(w);
    worker_ = std::move(w).value();
  }
  void CheckAgainstBatch() {
    ASSERT_OK(worker_->WaitForQuiescence(120'000));
    std::vector<Page> now;
    for (const auto& [url, html] : pages_) now.push_back(Page{url, html});
    const Index want = BuildIndex(now);
    Result<Index> got = ReadIndex(db_.get());
    ASSERT_OK(got);
    EXPECT_EQ(got->canonical, want.canonical);
    EXPECT_EQ(got->clusters, want.clusters);
    EXPECT_EQ(got->inlinks, want.inlinks);
    EXPECT_EQ(got->postings, want.postings);
  }

  test::ScratchDir dir_{"indexer_pipeline"};
  std::unique_ptr<Engine> engine_;
  std::shared_ptr<TransactionServices> services_;
  std::unique_ptr<TransactionDB> db_;
  std::unique_ptr<ObserverWorker> worker_;
  std::map<std::string, std::string> pages_;  // what the pages are now
};

TEST_F(IndexerPipelineTest, IncrementalIndexEqualsTheBatchIndex) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("STRATA_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const uint64_t n = test::UnderSanitizer() ? 60 : 150;
  SyntheticCorpus corpus({.pages = n, .seed = seed, .links_per_page = 4, .words_per_page = 40});
  StartWorker(2);
  for (uint64_t i = 0; i < n; i++) {
    const Page p = corpus.PageAt(i);
    ASSERT_OK(PutPage(db_.get(), p.url, p.html));
    pages_[p.url] = p.html;
  }
  CheckAgainstBatch();
  std::map<uint64_t, uint64_t> versions;
  for (int round = 0; round < 3; round++) {
    SCOPED_TRACE("round " + std::to_string(round));
    for (int op = 0; op < 40; op++) {
      const uint64_t i = rng() % n;
      const std::string url = corpus.Url(i);
      if (rng() % 5 == 0) {
        ASSERT_OK(DeletePage(db_.get(), url));
        pages_.erase(url);
      } else {
        const Page p = corpus.PageAt(i, ++versions[i]);
        ASSERT_OK(PutPage(db_.get(), p.url, p.html));
        pages_[p.url] = p.html;
      }
      if (op == 20 && round == 1) {
        // Workers stop mid-stream and others take over.
        ASSERT_OK(worker_->Stop());
        StartWorker(1 + static_cast<int>(rng() % 3));
      }
    }
    CheckAgainstBatch();
  }
}

// A page edited twice before the workers run is indexed once, with its
// newest content; a deleted page leaves clusters, anchors and postings.
TEST_F(IndexerPipelineTest, CollapsedEditsAndDeletes) {
  ASSERT_OK(PutPage(db_.get(), "http://h/a.html", "<title>First</title><a href=b.html>to bee</a>"));
  ASSERT_OK(PutPage(db_.get(), "http://h/a.html", "<title>Second</title><a href=b.html>to bravo</a>"));
  ASSERT_OK(PutPage(db_.get(), "http://h/b.html", "<title>Bee</title>"));
  pages_ = {{"http://h/a.html", "<title>Second</title><a href=b.html>to bravo</a>"},
            {"http://h/b.html", "<title>Bee</title>"}};
  StartWorker(1);
  CheckAgainstBatch();
  Result<Index> index = ReadIndex(db_.get());
  ASSERT_OK(index);
  EXPECT_EQ(index->postings.count("first"), 0u);
  EXPECT_EQ(index->postings.at("bravo"),
            (std::set<std::string>{"http://h/a.html", "http://h/b.html"}));
  ASSERT_OK(DeletePage(db_.get(), "http://h/a.html"));
  pages_.erase("http://h/a.html");
  CheckAgainstBatch();
  index = ReadIndex(db_.get());
  ASSERT_OK(index);
  EXPECT_EQ(index->postings.count("bravo"), 0u);
  EXPECT_TRUE(index->inlinks.empty());
  EXPECT_EQ(index->canonical.size(), 1u);
}

}  // namespace
}  // namespace strata::indexer
