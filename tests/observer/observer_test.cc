// Observers and notifications on an engine (these follow Apache Fluo's
// integration tests and the Percolator paper): writes of observed columns
// leave notifications at their commit timestamps; several commits collapse
// into one run that sees the newest value; of two runs on one notification
// at most one commits; chains of observers deliver every change end to end
// while workers stop and start; weak notifications aggregate; a coordinator
// stopped at any fail point notifies exactly when it committed; an observer
// that writes its own trigger runs once; one that keeps failing neither
// blocks others nor loses its notification; and the paper's bank keeps
// per-branch totals through an observer.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "observer/worker.h"
#include "strata/engine.h"
#include "strata/observer.h"
#include "txn/local_lock_service.h"
#include "txn/records.h"
#include "txn/table_resolver.h"
#include "txn_test_util.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::observer {
namespace {

using txn::FailPoint;

// An observer given by a function.
class FnObserver final : public Observer {
 public:
  using Fn = std::function<Status(Transaction*, std::string_view row)>;
  explicit FnObserver(Fn fn) : fn_(std::move(fn)) {}
  Status Process(Transaction* txn, std::string_view table, std::string_view row,
                 std::string_view column) override {
    runs_.fetch_add(1);
    return fn_(txn, row);
  }
  uint64_t runs() const { return runs_.load(); }

 private:
  Fn fn_;
  std::atomic<uint64_t> runs_{0};
};

class ObserverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto engine = Engine::Open(dir_.Join("db"));
    ASSERT_OK(engine);
    engine_ = std::move(engine).value();
    ASSERT_OK(engine_->CreateTenant("t"));
    Tenant tenant = *engine_->OpenTenant("t");
    ASSERT_OK(tenant.CreateTable("t", txn::TransactionalSchema({})));
    tables_ = std::make_shared<txn::TenantTables>(tenant);
    txn::LocalLivenessRegistryOptions ro;
    ASSERT_OK(txn::LocalLivenessRegistry::Open(dir_.path(), ro, &registry_));
  }

  // TransactionDBOptions::one_phase_commit and pessimistic of the next
  // OpenDb.
  bool one_phase_ = true;
  bool pessimistic_ = false;

  void OpenDb(std::vector<ObservedColumn> observed) {
    txn::TxnDBConfig config;
    config.options.sync = false;
    config.options.commit_secondaries_in_background = false;
    config.options.lock_ttl_millis = 500;
    config.options.prewrite_primary_alone = true;  // so that secondary batches exist
    config.options.one_phase_commit = one_phase_;
    config.options.pessimistic = pessimistic_;
    config.options.observed_columns = std::move(observed);
    config.oracle = &oracle_;
    config.registry = registry_.get();
    config.tables = tables_;
    config.single_log = true;
    // Only the test's own transactions stop, never a worker's run.
    config.fail_point = [this](FailPoint p, uint64_t ts) {
      return on_test_thread_ == std::this_thread::get_id() &&
             stop_at_.load() == static_cast<int>(p);
    };
    config.name = "t";
    auto db = txn::TxnDB::Make(std::move(config));
    ASSERT_OK(db);
    handle_ = std::move(db).value();
    db_ = txn::TxnDBOf(*handle_);
  }

  // The body of the BankTotalsFollow... tests.
  void BankTotalsFollowTransfers(bool pessimistic);

  void StartWorker(std::vector<ObserverSpec> specs, int threads = 1) {
    WorkerConfig config;
    config.db = db_;
    config.observers = std::move(specs);
    config.options.threads = threads;
    config.options.retry_initial_millis = 1;
    config.options.retry_max_millis = 20;
    config.options.failing_after = 3;
    config.locks = &locks_;
    config.tenant = "t";
    auto w = Worker::Start(std::move(config));
    ASSERT_OK(w);
    worker_ = std::move(w).value();
  }

  void TearDown() override {
    if (worker_ != nullptr) {
      EXPECT_OK(worker_->Stop());
    }
    worker_.reset();
    handle_.reset();
    db_.reset();
    tables_.reset();
    if (engine_ != nullptr) {
      EXPECT_OK(engine_->Close());
    }
  }

  // Commits writes of (row, column) = value; nullopt erases.
  Status Write(const std::vector<std::tuple<std::string, std::string, std::string>>& writes) {
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> t, db_->Begin({}));
    for (const auto& [row, column, value] : writes) {
      STRATA_RETURN_IF_ERROR(t->Set("t", row, column, value));
    }
    return t->Commit();
  }

  std::optional<std::string> Read(const std::string& row, const std::string& column) {
    auto t = db_->Begin({});
    EXPECT_OK(t);
    Result<std::string> v = (*t)->Get("t", row, column);
    if (v.status().IsNotFound()) return std::nullopt;
    EXPECT_OK(v);
    return v.ok() ? std::optional<std::string>(*v) : std::nullopt;
  }

  RowStore& Store() { return **tables_->Resolve("t"); }

  // The timestamps of (row, notify:column), newest first.
  std::vector<uint64_t> Notes(const std::string& row, const std::string& column) {
    std::vector<uint64_t> out;
    for (const Cell& c : test::CellsOf(Store(), row, txn::kNotifyFamily)) {
      if (c.qualifier == column) out.push_back(c.timestamp);
    }
    return out;
  }

  size_t AllNotes() {
    ScanSpec spec;
    spec.filter.families = {std::string(txn::kNotifyFamily)};
    auto it = Store().Scan(ReadOptions(), spec);
    EXPECT_OK(it);
    size_t n = 0;
    for (; (*it)->Valid(); (*it)->Next()) n += (*it)->cells().size();
    return n;
  }

  test::ScratchDir dir_{"observer"};
  std::unique_ptr<Engine> engine_;
  std::shared_ptr<txn::TenantTables> tables_;
  std::unique_ptr<txn::LocalLivenessRegistry> registry_;
  test::CountingOracle oracle_;
  txn::LocalLockService locks_;
  std::atomic<int> stop_at_{-1};  // a FailPoint, or -1
  const std::thread::id on_test_thread_ = std::this_thread::get_id();
  std::unique_ptr<TransactionDB> handle_;
  std::shared_ptr<txn::TxnDB> db_;
  std::unique_ptr<Worker> worker_;
};

TEST_F(ObserverTest, ObservedWritesLeaveANotificationAtTheirCommitTimestamp) {
  OpenDb({{"t", "in"}});
  auto t = db_->Begin({});
  ASSERT_OK(t);
  ASSERT_OK((*t)->Set("t", "r1", "in", "x"));     // observed, the primary's row
  ASSERT_OK((*t)->Set("t", "r2", "in", "y"));     // observed, another row
  ASSERT_OK((*t)->Set("t", "r2", "other", "z"));  // not observed
  ASSERT_OK((*t)->Commit());
  const uint64_t commit = (*t)->commit_ts();
  EXPECT_EQ(Notes("r1", "in"), std::vector<uint64_t>{commit});
  EXPECT_EQ(Notes("r2", "in"), std::vector<uint64_t>{commit});
  EXPECT_TRUE(Notes("r2", "other").empty());

  // A weak notification alone commits with a timestamp of its own.
  auto w = db_->Begin({});
  ASSERT_OK(w);
  ASSERT_OK((*w)->SetWeakNotification("t", "r3", "dirty"));
  ASSERT_OK((*w)->Commit());
  EXPECT_GT((*w)->commit_ts(), commit);
  EXPECT_EQ(Notes("r3", "dirty"), std::vector<uint64_t>{(*w)->commit_ts()});
  EXPECT_TRUE((*w)->SetWeakNotification("t", "r3", "x").IsInvalidArgument());
  auto bad = db_->Begin({});
  ASSERT_OK(bad);
  EXPECT_FALSE((*bad)->SetWeakNotification("nope", "r", "c").ok());
  EXPECT_TRUE((*bad)->SetWeakNotification("t", "", "c").IsInvalidArgument());
}

// Several commits before the worker runs: one run, which sees the newest
// value, and every notification gone.
TEST_F(ObserverTest, CommitsBeforeARunCollapseIntoOneRun) {
  OpenDb({{"t", "in"}});
  for (int i = 0; i < 5; i++) ASSERT_OK(Write({{"r", "in", "v" + std::to_string(i)}}));
  EXPECT_EQ(Notes("r", "in").size(), 5u);
  std::vector<std::string> seen;
  auto obs = std::make_shared<FnObserver>([&](Transaction* t, std::string_view row) {
    STRATA_ASSIGN_OR_RETURN(std::string v, t->Get("t", row, "in"));
    seen.push_back(v);
    return t->Set("t", row, "out", v);
  });
  StartWorker({{"t", "in", NotificationKind::kStrong, obs}});
  ASSERT_OK(worker_->WaitForQuiescence(10'000));
  EXPECT_EQ(seen, std::vector<std::string>{"v4"});
  EXPECT_EQ(Read("r", "out"), "v4");
  EXPECT_TRUE(Notes("r", "in").empty());
  const ObserverStats s = worker_->GetStats();
  EXPECT_EQ(s.runs, 1u);
  EXPECT_EQ(s.collapsed, 4u);
  EXPECT_EQ(s.pending, 0u);
}

// Two runs on one notification: the one that commits first wins, the other
// aborts; a run that begins after the winner committed finds the ack.
TEST_F(ObserverTest, OfTwoRunsOnOneNotificationOneCommits) {
  OpenDb({{"t", "in"}});
  ASSERT_OK(Write({{"r", "in", "v"}}));
  const txn::TxnKey trigger{"t", "r", "in"};
  auto a = db_->BeginObserverRun(&trigger);
  auto b = db_->BeginObserverRun(&trigger);
  ASSERT_OK(a);
  ASSERT_OK(b);
  ASSERT_OK((*a)->Set("t", "r", "out", "a"));
  ASSERT_OK((*b)->Set("t", "r", "out", "b"));
  ASSERT_OK((*a)->Commit());
  Status sb = (*b)->Commit();
  EXPECT_TRUE(sb.IsAborted()) << sb.ToString();
  EXPECT_EQ(Read("r", "out"), "a");
  EXPECT_TRUE(Notes("r", "in").empty());
  // The ack is at the winner's start_ts.
  RowFilter acks;
  acks.families = {std::string(txn::kAckFamily)};
  auto ack = Store().ReadRow(ReadOptions(), "r", acks);
  ASSERT_OK(ack);
  ASSERT_EQ(ack->size(), 1u);
  EXPECT_EQ((*ack)[0].timestamp, (*a)->start_ts());

  // A notification older than the ack (a worker that scanned before the
  // winner erased it) is skipped, not run again.
  RowMutation stale;
  stale.Put(txn::kNotifyFamily, "in", (*a)->start_ts() - 1, "");
  ASSERT_OK(Store().Mutate(WriteOptions(), "r", stale));
  auto obs = std::make_shared<FnObserver>([](Transaction*, std::string_view) { return Status::OK(); });
  StartWorker({{"t", "in", NotificationKind::kStrong, obs}});
  ASSERT_OK(worker_->WaitForQuiescence(10'000));
  EXPECT_EQ(obs->runs(), 0u);
  EXPECT_EQ(worker_->GetStats().skipped, 1u);
}

// An observer that writes the very cell that triggered it runs once.
TEST_F(ObserverTest, AnObserversWriteToItsOwnTriggerDoesNotNotifyAgain) {
  OpenDb({{"t", "x"}});
  ASSERT_OK(Write({{"r", "x", "a"}}));
  auto obs = std::make_shared<FnObserver>([](Transaction* t, std::string_view row) {
    STRATA_ASSIGN_OR_RETURN(std::string v, t->Get("t", row, "x"));
    return t->Set("t", row, "x", v + "!");
  });
  StartWorker({{"t", "x", NotificationKind::kStrong, obs}});
  ASSERT_OK(worker_->WaitForQuiescence(10'000));
  EXPECT_EQ(obs->runs(), 1u);
  EXPECT_EQ(Read("r", "x"), "a!");
}

// Weak notifications of several transactions, overlapping ones included,
// all commit and make one run.
TEST_F(ObserverTest, WeakNotificationsAggregateAndNeverConflict) {
  OpenDb({});
  std::vector<std::unique_ptr<Transaction>> txns;
  for (int i = 0; i < 3; i++) {
    auto t = db_->Begin({});
    ASSERT_OK(t);
    ASSERT_OK((*t)->SetWeakNotification("t", "r", "dirty"));
    ASSERT_OK((*t)->Set("t", "r" + std::to_string(i), "v", "x"));
    txns.push_back(std::move(t).value());
  }
  for (auto& t : txns) ASSERT_OK(t->Commit());
  EXPECT_EQ(Notes("r", "dirty").size(), 3u);
  auto obs = std::make_shared<FnObserver>([](Transaction*, std::string_view) { return Status::OK(); });
  StartWorker({{"t", "dirty", NotificationKind::kWeak, obs}});
  ASSERT_OK(worker_->WaitForQuiescence(10'000));
  EXPECT_EQ(obs->runs(), 1u);
  EXPECT_EQ(worker_->GetStats().collapsed, 2u);
  EXPECT_TRUE(Notes("r", "dirty").empty());
}

// A notification written late, below one already handled (a commit_ts
// taken before the run, written after its erasure), is still handled.
TEST_F(ObserverTest, ANotificationWrittenLateBelowAHandledOneIsHandled) {
  OpenDb({});
  auto obs = std::make_shared<FnObserver>([](Transaction*, std::string_view) { return Status::OK(); });
  StartWorker({{"t", "dirty", NotificationKind::kWeak, obs}});
  auto t = db_->Begin({});
  ASSERT_OK(t);
  ASSERT_OK((*t)->SetWeakNotification("t", "r", "dirty"));
  ASSERT_OK((*t)->Commit());
  ASSERT_OK(worker_->WaitForQuiescence(10'000));
  EXPECT_EQ(obs->runs(), 1u);
  RowMutation late;
  late.Put(txn::kNotifyFamily, "dirty", (*t)->commit_ts() - 1, "");
  ASSERT_OK(Store().Mutate(WriteOptions(), "r", late));
  ASSERT_OK(worker_->WaitForQuiescence(10'000));
  EXPECT_EQ(obs->runs(), 2u);
  EXPECT_TRUE(Notes("r", "dirty").empty());
}

// A coordinator stopped at each fail point of a transaction writing
// observed columns of two rows: the observer sees each change exactly when
// the transaction committed (roll-forward by the observer's own read).
TEST_F(ObserverTest, AStoppedCoordinatorNotifiesExactlyWhenItCommitted) {
  one_phase_ = false;  // stops between the two phases
  OpenDb({{"t", "in"}});
  std::mutex mu;
  std::map<std::string, std::string> seen;  // row -> value the observer read
  auto obs = std::make_shared<FnObserver>([&](Transaction* t, std::string_view row) {
    Result<std::string> v = t->Get("t", row, "in");
    if (!v.ok() && !v.status().IsNotFound()) return v.status();
    std::lock_guard<std::mutex> l(mu);
    seen[std::string(row)] = v.ok() ? *v : "<none>";
    return Status::OK();
  });
  StartWorker({{"t", "in", NotificationKind::kStrong, obs}});
  int n = 0;
  for (FailPoint p : {FailPoint::kAfterPrimaryPrewrite, FailPoint::kAfterSecondaryBatch,
                      FailPoint::kAfterCommitTs, FailPoint::kAfterPrimaryCommit,
                      FailPoint::kAfterSecondaryCommit}) {
    SCOPED_TRACE(txn::FailPointName(p));
    const std::string a = "a" + std::to_string(n), b = "b" + std::to_string(n);
    n++;
    stop_at_ = static_cast<int>(p);
    Status s = Write({{a, "in", "1"}, {b, "in", "1"}});
    stop_at_ = -1;
    EXPECT_TRUE(s.IsAborted()) << s.ToString();
    const bool committed = p == FailPoint::kAfterPrimaryCommit || p == FailPoint::kAfterSecondaryCommit;
    ASSERT_OK(worker_->WaitForQuiescence(10'000));
    std::lock_guard<std::mutex> l(mu);
    if (committed) {
      EXPECT_EQ(seen[a], "1");
      EXPECT_EQ(seen[b], "1");
    } else {
      EXPECT_EQ(seen.count(a), 0u);
      EXPECT_EQ(seen.count(b), 0u);
      EXPECT_TRUE(Notes(a, "in").empty());
    }
  }
}

// A -> B -> C: each observer writes the next one's column (in other rows),
// with several threads, while the worker is stopped and started again; after
// quiescence every derived value matches a computation from scratch and no
// notification is left.
TEST_F(ObserverTest, AChainOfObserversDeliversEveryChange) {
  OpenDb({{"t", "a"}, {"t", "b"}, {"t", "c"}});
  // a of row k -> b of row "b"+k = a+"B" -> c of row "c"+k = b+"C".
  auto a = std::make_shared<FnObserver>([](Transaction* t, std::string_view row) {
    STRATA_ASSIGN_OR_RETURN(std::string v, t->Get("t", row, "a"));
    return t->Set("t", "b" + std::string(row), "b", v + "B");
  });
  auto b = std::make_shared<FnObserver>([](Transaction* t, std::string_view row) {
    STRATA_ASSIGN_OR_RETURN(std::string v, t->Get("t", row, "b"));
    return t->Set("t", "c" + std::string(row.substr(1)), "c", v + "C");
  });
  auto c = std::make_shared<FnObserver>([](Transaction* t, std::string_view row) {
    STRATA_ASSIGN_OR_RETURN(std::string v, t->Get("t", row, "c"));
    return t->Set("t", "d" + std::string(row.substr(1)), "d", v + "D");
  });
  const std::vector<ObserverSpec> specs = {{"t", "a", NotificationKind::kStrong, a},
                                           {"t", "b", NotificationKind::kStrong, b},
                                           {"t", "c", NotificationKind::kStrong, c}};
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("STRATA_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const int keys = 20, writes = test::UnderSanitizer() ? 100 : 300;
  std::map<std::string, std::string> last;
  StartWorker(specs, 3);
  for (int i = 0; i < writes; i++) {
    const std::string row = "k" + std::to_string(rng() % keys);
    const std::string v = std::to_string(i);
    Status s = Write({{row, "a", v}});
    if (s.ok()) {
      last[row] = v;
    } else {
      ASSERT_TRUE(s.IsAborted()) << s.ToString();  // met an observer's run on the row
    }
    if (i % 50 == 25) {
      // Stop the threads mid-work and start new ones.
      ASSERT_OK(worker_->Stop());
      StartWorker(specs, 1 + static_cast<int>(rng() % 3));
    }
  }
  ASSERT_OK(worker_->WaitForQuiescence(60'000));
  for (const auto& [row, v] : last) {
    EXPECT_EQ(Read("d" + row, "d"), v + "BCD") << row;
  }
  EXPECT_EQ(AllNotes(), 0u);
}

// An observer that keeps failing on one cell: the others go on, the cell
// counts as failing, its notification stays, and quiescence says so.
TEST_F(ObserverTest, AFailingObserverBlocksNothingAndLosesNothing) {
  OpenDb({{"t", "in"}});
  std::atomic<bool> heal{false};
  auto obs = std::make_shared<FnObserver>([&](Transaction* t, std::string_view row) {
    if (row == "bad" && !heal.load()) return Status::IOError("cannot process bad");
    return t->Set("t", row, "out", "done");
  });
  ASSERT_OK(Write({{"bad", "in", "1"}}));
  for (int i = 0; i < 5; i++) ASSERT_OK(Write({{"good" + std::to_string(i), "in", "1"}}));
  StartWorker({{"t", "in", NotificationKind::kStrong, obs}});
  Status q = worker_->WaitForQuiescence(10'000);
  EXPECT_TRUE(q.IsAborted()) << q.ToString();
  for (int i = 0; i < 5; i++) EXPECT_EQ(Read("good" + std::to_string(i), "out"), "done");
  ObserverStats s = worker_->GetStats();
  EXPECT_EQ(s.failing_cells, 1u);
  EXPECT_GE(s.failures, 3u);
  EXPECT_EQ(s.pending, 1u);
  EXPECT_NE(s.last_failure.find("cannot process bad"), std::string::npos) << s.last_failure;
  EXPECT_EQ(Notes("bad", "in").size(), 1u);
  // Healed, the cell goes through at its next retry (a cell still counted
  // as failing makes WaitForQuiescence give up at once until then).
  heal = true;
  for (int i = 0; i < 1000 && !worker_->WaitForQuiescence(10'000).ok(); i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_OK(worker_->WaitForQuiescence(10'000));
  EXPECT_EQ(Read("bad", "out"), "done");
  EXPECT_EQ(worker_->GetStats().failing_cells, 0u);
}

// The paper's bank: transfers between accounts of four branches; an
// observer of each balance keeps its branch's total (from the balance it
// saw last). After quiescence each total equals the sum of its accounts.
// With pessimistic transactions the runs and the transfers lock what they
// read with GetForUpdate: runs on one branch take turns at its total.
void ObserverTest::BankTotalsFollowTransfers(bool pessimistic) {
  pessimistic_ = pessimistic;
  OpenDb({{"t", "bal"}});
  auto read = [pessimistic](Transaction* t, std::string_view row, std::string_view column) {
    return pessimistic ? t->GetForUpdate("t", row, column) : t->Get("t", row, column);
  };
  auto obs = std::make_shared<FnObserver>([read](Transaction* t, std::string_view row) {
    STRATA_ASSIGN_OR_RETURN(std::string bal, t->Get("t", row, "bal"));
    Result<std::string> seen = t->Get("t", row, "seen");
    if (!seen.ok() && !seen.status().IsNotFound()) return seen.status();
    const long delta = std::stol(bal) - (seen.ok() ? std::stol(*seen) : 0);
    const std::string branch = "branch" + std::string(row.substr(4, 1));  // "acct<b>-<i>"
    Result<std::string> total = read(t, branch, "total");
    if (!total.ok() && !total.status().IsNotFound()) return total.status();
    STRATA_RETURN_IF_ERROR(
        t->Set("t", branch, "total", std::to_string((total.ok() ? std::stol(*total) : 0) + delta)));
    return t->Set("t", row, "seen", bal);
  });
  const int branches = 4, per_branch = 5;
  auto acct = [](int b, int i) { return "acct" + std::to_string(b) + "-" + std::to_string(i); };
  for (int b = 0; b < branches; b++) {
    for (int i = 0; i < per_branch; i++) ASSERT_OK(Write({{acct(b, i), "bal", "100"}}));
  }
  StartWorker({{"t", "bal", NotificationKind::kStrong, obs}}, 2);
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("STRATA_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const int transfers = test::UnderSanitizer() ? 60 : 200;
  for (int k = 0; k < transfers; k++) {
    const std::string from = acct(rng() % branches, rng() % per_branch);
    const std::string to = acct(rng() % branches, rng() % per_branch);
    if (from == to) continue;
    auto t = db_->Begin({});
    ASSERT_OK(t);
    auto f = read(t->get(), from, "bal");
    auto g = read(t->get(), to, "bal");
    if (!f.ok() || !g.ok()) continue;  // a lock in the way: skip this one
    const long amount = 1 + static_cast<long>(rng() % 10);
    ASSERT_OK((*t)->Set("t", from, "bal", std::to_string(std::stol(*f) - amount)));
    ASSERT_OK((*t)->Set("t", to, "bal", std::to_string(std::stol(*g) + amount)));
    Status s = (*t)->Commit();
    ASSERT_TRUE(s.ok() || s.IsAborted()) << s.ToString();
  }
  ASSERT_OK(worker_->WaitForQuiescence(60'000));
  long all = 0;
  for (int b = 0; b < branches; b++) {
    long sum = 0;
    for (int i = 0; i < per_branch; i++) sum += std::stol(*Read(acct(b, i), "bal"));
    all += sum;
    EXPECT_EQ(Read("branch" + std::to_string(b), "total"), std::to_string(sum)) << b;
  }
  EXPECT_EQ(all, 100L * branches * per_branch);
  EXPECT_GT(worker_->GetStats().runs, 0u);
}

TEST_F(ObserverTest, BankTotalsFollowTransfers) { BankTotalsFollowTransfers(false); }
TEST_F(ObserverTest, BankTotalsFollowPessimisticTransfers) { BankTotalsFollowTransfers(true); }

TEST_F(ObserverTest, BadSpecsAreRejected) {
  OpenDb({{"t", "in"}});
  auto obs = std::make_shared<FnObserver>([](Transaction*, std::string_view) { return Status::OK(); });
  auto start = [&](std::vector<ObserverSpec> specs, int threads = 1) {
    WorkerConfig config;
    config.db = db_;
    config.observers = std::move(specs);
    config.options.threads = threads;
    config.locks = &locks_;
    return Worker::Start(std::move(config)).status();
  };
  EXPECT_TRUE(start({}).IsInvalidArgument());
  EXPECT_TRUE(start({{"t", "in", NotificationKind::kStrong, nullptr}}).IsInvalidArgument());
  EXPECT_TRUE(start({{"t", "in", NotificationKind::kStrong, obs},
                     {"t", "in", NotificationKind::kWeak, obs}})
                  .IsInvalidArgument());
  // Not observed by the TransactionDB: its writes would notify nobody.
  Status s = start({{"t", "other", NotificationKind::kStrong, obs}});
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.ToString().find("observed_columns"), std::string::npos) << s.ToString();
  EXPECT_OK(start({{"t", "other", NotificationKind::kWeak, obs}}));
  EXPECT_FALSE(start({{"nope", "in", NotificationKind::kWeak, obs}}).ok());
  EXPECT_TRUE(start({{"t", "in", NotificationKind::kStrong, obs}}, 0).IsInvalidArgument());
}

// The public API end to end: TransactionDB::Open with observed columns,
// ObserverWorker::Start.
TEST(ObserverApiTest, AWorkerRunsObserversOnAnEngine) {
  test::ScratchDir dir("observer_api");
  auto engine = Engine::Open(dir.Join("db"));
  ASSERT_OK(engine);
  ASSERT_OK((*engine)->CreateTenant("t"));
  auto services = TransactionServices::Open(dir.Join("services"));
  ASSERT_OK(services);
  TransactionDBOptions options;
  options.observed_columns = {{"docs", "text"}};
  auto db = TransactionDB::Open(*services, *(*engine)->OpenTenant("t"), options);
  ASSERT_OK(db);
  ASSERT_OK((*db)->CreateTable("docs"));
  auto obs = std::make_shared<FnObserver>([](Transaction* t, std::string_view row) {
    STRATA_ASSIGN_OR_RETURN(std::string v, t->Get("docs", row, "text"));
    return t->Set("docs", row, "length", std::to_string(v.size()));
  });
  auto worker = ObserverWorker::Start(db->get(), {{"docs", "text", NotificationKind::kStrong, obs}},
                                      {.threads = 2});
  ASSERT_OK(worker);
  for (int i = 0; i < 10; i++) {
    auto t = (*db)->Begin();
    ASSERT_OK(t);
    ASSERT_OK((*t)->Set("docs", "d" + std::to_string(i), "text", std::string(i, 'x')));
    ASSERT_OK((*t)->Commit());
  }
  ASSERT_OK((*worker)->WaitForQuiescence(10'000));
  auto t = (*db)->Begin();
  ASSERT_OK(t);
  for (int i = 0; i < 10; i++) {
    EXPECT_EQ(*(*t)->Get("docs", "d" + std::to_string(i), "length"), std::to_string(i));
  }
  EXPECT_EQ((*worker)->GetStats().runs, 10u);
  EXPECT_TRUE(ObserverWorker::Start(nullptr, {}).status().IsInvalidArgument());
  ASSERT_OK((*worker)->Stop());
  ASSERT_OK((*db)->Close());
  ASSERT_OK((*engine)->Close());
}

}  // namespace
}  // namespace strata::observer
