// A chain of observers A -> B -> C across processes killed with SIGKILL: a
// child writes random values to observed cells while a worker of two
// threads runs the chain, and is killed at a random moment; the next child
// goes on from whatever the store holds. At the end a worker runs to
// quiescence, and every derived value matches a computation from scratch
// over the values the store holds, with no notification left: no change
// was lost or applied twice across the kills.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "strata/engine.h"
#include "strata/observer.h"
#include "strata/transaction.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata {
namespace {

constexpr int kKeys = 30;

// b of row "b<k>" = a + "B", c of row "c<k>" = b + "C", d of row "d<k>" = c + "D".
class Step final : public Observer {
 public:
  Step(std::string from, std::string to, std::string suffix)
      : from_(std::move(from)), to_(std::move(to)), suffix_(std::move(suffix)) {}
  Status Process(Transaction* txn, std::string_view table, std::string_view row,
                 std::string_view column) override {
    STRATA_ASSIGN_OR_RETURN(std::string v, txn->Get(table, row, column));
    const std::string key(row.substr(column == "a" ? 0 : 1));
    return txn->Set(table, to_ + key, to_, v + suffix_);
  }

 private:
  const std::string from_, to_, suffix_;
};

std::vector<ObserverSpec> Chain() {
  return {{"t", "a", NotificationKind::kStrong, std::make_shared<Step>("a", "b", "B")},
          {"t", "b", NotificationKind::kStrong, std::make_shared<Step>("b", "c", "C")},
          {"t", "c", NotificationKind::kStrong, std::make_shared<Step>("c", "d", "D")}};
}

TransactionDBOptions Options() {
  TransactionDBOptions o;
  o.observed_columns = {{"t", "a"}, {"t", "b"}, {"t", "c"}};
  o.lock_ttl_millis = 300;  // a dead child's locks go quickly
  return o;
}

[[noreturn]] void RunChild(const std::string& dir, int round, int fd) {
  auto engine = Engine::Open(dir + "/db");
  if (!engine.ok()) ::_exit(3);
  auto services = TransactionServices::Open(dir + "/services");
  if (!services.ok()) ::_exit(4);
  auto db = TransactionDB::Open(*services, *(*engine)->OpenTenant("t"), Options());
  if (!db.ok()) ::_exit(5);
  auto worker = ObserverWorker::Start(db->get(), Chain(), {.threads = 2});
  if (!worker.ok()) ::_exit(6);
  std::mt19937_64 rng(round * 7919 + 1);
  for (int i = 0;; i++) {
    auto t = (*db)->Begin();
    if (!t.ok()) ::_exit(7);
    const std::string row = "k" + std::to_string(rng() % kKeys);
    if (!(*t)->Set("t", row, "a", std::to_string(round) + "." + std::to_string(i)).ok()) ::_exit(8);
    Status s = (*t)->Commit();
    if (!s.ok() && !s.IsAborted()) ::_exit(9);  // aborted: met an observer's run
    if (s.ok() && ::write(fd, "+\n", 2) != 2) ::_exit(10);  // the parent counts commits
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

TEST(ObserverCrashTest, AChainSurvivesKilledProcesses) {
  test::ScratchDir dir("observer_crash");
  {
    auto engine = Engine::Open(dir.Join("db"));
    ASSERT_OK(engine);
    ASSERT_OK((*engine)->CreateTenant("t"));
    auto services = TransactionServices::Open(dir.Join("services"));
    ASSERT_OK(services);
    auto db = TransactionDB::Open(*services, *(*engine)->OpenTenant("t"), Options());
    ASSERT_OK(db);
    ASSERT_OK((*db)->CreateTable("t"));
    ASSERT_OK((*db)->Close());
    ASSERT_OK((*engine)->Close());
  }
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("STRATA_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const int rounds = test::LongTests() ? 12 : 4;
  for (int round = 0; round < rounds; round++) {
    const int delay = 100 + static_cast<int>(rng() % 300);
    test::KilledChild killed =
        test::RunChildUntilKilled([&](int fd) { RunChild(dir.path(), round, fd); }, delay);
    ASSERT_EQ(killed.error, "") << killed.output;
  }
  auto engine = Engine::Open(dir.Join("db"));
  ASSERT_OK(engine);
  auto services = TransactionServices::Open(dir.Join("services"));
  ASSERT_OK(services);
  auto db = TransactionDB::Open(*services, *(*engine)->OpenTenant("t"), Options());
  ASSERT_OK(db);
  auto worker = ObserverWorker::Start(db->get(), Chain(), {.threads = 2});
  ASSERT_OK(worker);
  ASSERT_OK((*worker)->WaitForQuiescence(60'000));
  EXPECT_EQ((*worker)->GetStats().pending, 0u);
  auto t = (*db)->Begin();
  ASSERT_OK(t);
  int written = 0;
  for (int k = 0; k < kKeys; k++) {
    const std::string key = "k" + std::to_string(k);
    Result<std::string> a = (*t)->Get("t", key, "a");
    if (a.status().IsNotFound()) {
      EXPECT_TRUE((*t)->Get("t", "d" + key, "d").status().IsNotFound()) << key;
      continue;
    }
    ASSERT_OK(a);
    written++;
    Result<std::string> d = (*t)->Get("t", "d" + key, "d");
    ASSERT_OK(d) << key;
    EXPECT_EQ(*d, *a + "BCD") << key;
  }
  EXPECT_GT(written, 0);
  std::printf("%d keys written across %d killed processes\n", written, rounds);
  ASSERT_OK((*worker)->Stop());
  ASSERT_OK((*db)->Close());
  ASSERT_OK((*engine)->Close());
}

}  // namespace
}  // namespace strata
