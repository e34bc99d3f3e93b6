// The incremental pipeline against the batch index: after loading a
// synthetic corpus and after random adds, edits and deletes (workers
// stopped and started between some of them), once the observers are
// quiescent the tables hold exactly the index computed from scratch over
// the pages as they are.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

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
    EXPECT_EQ(got->problems, want.problems);
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
            (std::map<std::string, Posting>{{"http://h/a.html", {.text = 1}},
                                            {"http://h/b.html", {.anchors = 1}}}));
  ASSERT_OK(DeletePage(db_.get(), "http://h/a.html"));
  pages_.erase("http://h/a.html");
  CheckAgainstBatch();
  index = ReadIndex(db_.get());
  ASSERT_OK(index);
  EXPECT_EQ(index->postings.count("bravo"), 0u);
  EXPECT_TRUE(index->inlinks.empty());
  EXPECT_EQ(index->canonical.size(), 1u);
}

// Bad input: markup that does not parse, a page of several MB, a URL of
// bytes a URL may not hold, links in a loop. Each is refused or indexed as
// far as it reads, and reported; the other pages are indexed as they would
// be without them.
TEST_F(IndexerPipelineTest, BadInputIsReportedAndNothingElseIsLost) {
  StartWorker(2);
  auto put = [&](const std::string& url, const std::string& html) {
    ASSERT_OK(PutPage(db_.get(), url, html));
    pages_[url] = html;
  };
  put("http://h/good.html",
      "<title>Good</title><p>plain words</p><a href=loop1.html>into the loop</a>");
  put("http://h/broken.html", "<title>Broken<p>text <a href='good.html'>good <b <!-- never closed");
  // Its link comes first: what is after the first 4 MiB is not read.
  std::string big = "<title>Big</title><a href=good.html>from big</a><p>";
  std::mt19937_64 rng(1);
  while (big.size() < (6u << 20)) big += "word" + std::to_string(rng() % 5000) + " ";
  put("http://h/big.html", big + "<a href=loop2.html>cut off</a>");
  put("http://h/loop1.html",
      "<title>One</title><a href=loop2.html>two</a><a href=loop1.html>me</a>");
  put("http://h/loop2.html", "<title>Two</title><a href=loop3.html>three</a>");
  put("http://h/loop3.html",
      "<title>Three</title><a href=loop1.html>one</a><a href='a\x01"
      "b.html'>x</a>");
  // Refused before anything is written.
  EXPECT_TRUE(PutPage(db_.get(), std::string("http://h/bad\x01\xff.html"), "<title>Bad</title>")
                  .IsInvalidArgument());
  EXPECT_TRUE(PutPage(db_.get(), "", "<title>Empty</title>").IsInvalidArgument());
  // Larger than the store's largest value (16 MiB by default).
  EXPECT_TRUE(
      PutPage(db_.get(), "http://h/huge.html", std::string(17u << 20, 'x')).IsInvalidArgument());
  CheckAgainstBatch();
  Result<Index> index = ReadIndex(db_.get());
  ASSERT_OK(index);
  EXPECT_EQ(index->canonical.size(), 6u);
  ASSERT_EQ(index->problems.count("http://h/broken.html"), 1u);
  EXPECT_NE(index->problems.at("http://h/broken.html")[0].find("unclosed"), std::string::npos);
  ASSERT_EQ(index->problems.count("http://h/big.html"), 1u);
  EXPECT_NE(index->problems.at("http://h/big.html")[0].find("too large"), std::string::npos);
  // The link of bytes a URL may not hold is reported, shown without them.
  ASSERT_EQ(index->problems.count("http://h/loop3.html"), 1u);
  EXPECT_EQ(index->problems.at("http://h/loop3.html")[0], "link not followed: a?b.html");
  EXPECT_EQ(index->problems.count("http://h/good.html"), 0u);
  // The loop's pages link each other, and a page's link to itself counts
  // for nothing.
  using Sources = std::map<std::string, std::vector<std::string>>;
  EXPECT_EQ(index->inlinks.at("http://h/loop1.html"),
            (Sources{{"http://h/good.html", {"into the loop"}}, {"http://h/loop3.html", {"one"}}}));
  EXPECT_EQ(index->inlinks.at("http://h/good.html").at("http://h/big.html"),
            (std::vector<std::string>{"from big"}));
  EXPECT_EQ(index->inlinks.at("http://h/good.html").count("http://h/broken.html"), 1u);
  EXPECT_EQ(index->inlinks.at("http://h/loop2.html"), (Sources{{"http://h/loop1.html", {"two"}}}));
  Result<std::vector<SearchHit>> hits = Search(db_.get(), "plain", 10);
  ASSERT_OK(hits);
  ASSERT_EQ(hits->size(), 1u);
  EXPECT_EQ((*hits)[0].url, "http://h/good.html");
  EXPECT_EQ((*hits)[0].inlinks, 2u);
}

}  // namespace
}  // namespace strata::indexer
