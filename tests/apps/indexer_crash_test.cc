// The indexing pipeline across killed processes: a child loads, edits and
// deletes pages while a worker of two threads runs the observers, and is
// killed with SIGKILL at a random moment; the next child goes on from
// whatever the store holds. At the end a worker runs to quiescence and the
// index equals the batch index of the pages the store holds: no change was
// lost or half applied across the kills.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "indexer/batch.h"
#include "indexer/corpus.h"
#include "indexer/pipeline.h"
#include "strata/engine.h"
#include "strata/observer.h"
#include "strata/transaction.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::indexer {
namespace {

constexpr uint64_t kPages = 60;

SyntheticCorpus Corpus() {
  return SyntheticCorpus({.pages = kPages,
                          .seed = 5,
                          .duplicate_every = 4,
                          .links_per_page = 4,
                          .words_per_page = 30});
}

TransactionDBOptions Options() {
  TransactionDBOptions o;
  o.sync = false;
  o.observed_columns = PipelineObservedColumns();
  o.lock_ttl_millis = 300;  // a dead child's locks go quickly
  return o;
}

[[noreturn]] void RunChild(const std::string& dir, int round, int fd) {
  auto engine = Engine::Open(dir + "/db");
  if (!engine.ok()) ::_exit(3);
  auto services = TransactionServices::Open(dir + "/services");
  if (!services.ok()) ::_exit(4);
  auto db = TransactionDB::Open(*services, *(*engine)->OpenTenant("web"), Options());
  if (!db.ok()) ::_exit(5);
  auto worker = ObserverWorker::Start(db->get(), PipelineObservers(), {.threads = 2});
  if (!worker.ok()) ::_exit(6);
  const SyntheticCorpus corpus = Corpus();
  std::mt19937_64 rng(round * 7919 + 1);
  for (uint64_t op = 1;; op++) {
    const uint64_t i = rng() % kPages;
    // Round 0 loads every page; later rounds edit and delete.
    Status s;
    if (round == 0 && op <= kPages) {
      const Page p = corpus.PageAt(op - 1);
      s = PutPage(db->get(), p.url, p.html);
    } else if (rng() % 5 == 0) {
      s = DeletePage(db->get(), corpus.Url(i));
    } else {
      const Page p = corpus.PageAt(i, round * 100000 + op);
      s = PutPage(db->get(), p.url, p.html);
    }
    if (!s.ok()) ::_exit(7);
    if (::write(fd, "+\n", 2) != 2) ::_exit(8);  // the parent waits for the first
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

TEST(IndexerCrashTest, ThePipelineSurvivesKilledProcesses) {
  test::ScratchDir dir("indexer_crash");
  {
    auto engine = Engine::Open(dir.Join("db"));
    ASSERT_OK(engine);
    ASSERT_OK((*engine)->CreateTenant("web"));
    auto services = TransactionServices::Open(dir.Join("services"));
    ASSERT_OK(services);
    auto db = TransactionDB::Open(*services, *(*engine)->OpenTenant("web"), Options());
    ASSERT_OK(db);
    ASSERT_OK(CreatePipelineTables(db->get()));
    ASSERT_OK((*db)->Close());
    ASSERT_OK((*engine)->Close());
  }
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("STRATA_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const int rounds = test::LongTests() ? 12 : 4;
  for (int round = 0; round < rounds; round++) {
    const int delay = 150 + static_cast<int>(rng() % 300);
    test::KilledChild killed =
        test::RunChildUntilKilled([&](int fd) { RunChild(dir.path(), round, fd); }, delay);
    ASSERT_EQ(killed.error, "") << killed.output;
  }
  auto engine = Engine::Open(dir.Join("db"));
  ASSERT_OK(engine);
  auto services = TransactionServices::Open(dir.Join("services"));
  ASSERT_OK(services);
  auto db = TransactionDB::Open(*services, *(*engine)->OpenTenant("web"), Options());
  ASSERT_OK(db);
  auto worker = ObserverWorker::Start(db->get(), PipelineObservers(), {.threads = 2});
  ASSERT_OK(worker);
  ASSERT_OK((*worker)->WaitForQuiescence(120'000));
  EXPECT_EQ((*worker)->GetStats().pending, 0u);
  Result<std::vector<Page>> pages = ReadPages(db->get());
  ASSERT_OK(pages);
  EXPECT_GT(pages->size(), 0u);
  const Index want = BuildIndex(*pages);
  Result<Index> got = ReadIndex(db->get());
  ASSERT_OK(got);
  EXPECT_EQ(got->canonical, want.canonical);
  EXPECT_EQ(got->clusters, want.clusters);
  EXPECT_EQ(got->inlinks, want.inlinks);
  EXPECT_EQ(got->postings, want.postings);
  EXPECT_EQ(got->problems, want.problems);
  std::printf("%zu pages indexed across %d killed processes\n", pages->size(), rounds);
  ASSERT_OK((*worker)->Stop());
  ASSERT_OK((*db)->Close());
  ASSERT_OK((*engine)->Close());
}

}  // namespace
}  // namespace strata::indexer
