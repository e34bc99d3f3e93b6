// Transactions, garbage collection and observers over RADOS tables
// (OpenRadosTransactionDB) with the cluster services on etcd, against the
// one-node Ceph cluster and etcd the binary shares (local_ceph.h) and a
// timestamp service started here. Two TransactionDBs, each on services of
// its own (its own liveness instance), stand for two processes.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cluster/etcd_client.h"
#include "cluster/local_ceph.h"
#include "cluster/rados_table.h"
#include "cluster/tso_server.h"
#include "common/random.h"
#include "strata/cluster.h"
#include "strata/gc.h"
#include "strata/observer.h"
#include "strata/rados.h"
#include "strata/transaction.h"
#include "txn/bank_workload.h"
#include "txn/txn_test_util.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::cluster {
namespace {

// A process's view: its services and a TransactionDB over the tables.
struct Process {
  std::shared_ptr<TransactionServices> services;
  std::unique_ptr<TransactionDB> db;

  ~Process() {
    if (db != nullptr) {
      EXPECT_OK(db->Close());
    }
  }
};

class RadosTxnTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    TsoServerOptions so;
    so.etcd.endpoints = SharedCeph()->Options().etcd_endpoints;
    Result<std::unique_ptr<TsoServer>> tso = TsoServer::Start(so);
    ASSERT_TRUE(tso.ok()) << tso.status().ToString();
    tso_ = tso->release();
  }
  static void TearDownTestSuite() {
    delete tso_;
    tso_ = nullptr;
  }

  void SetUp() override { ASSERT_NE(tso_, nullptr); }

  // Options whose root keeps this test's tables and collector state apart
  // from every other test's.
  RadosOptions Options() const {
    RadosOptions o = SharedCeph()->Options();
    o.root = "/strata/" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name());
    return o;
  }

  void Open(const std::string& name, Process* p, const TransactionDBOptions& options = {}) {
    ClusterServicesOptions co;
    co.etcd_endpoints = SharedCeph()->Options().etcd_endpoints;
    co.lease_ttl_seconds = 2;
    std::filesystem::create_directories(dir_.Join(name));
    Result<std::shared_ptr<TransactionServices>> services =
        OpenClusterServices(dir_.Join(name), co);
    ASSERT_OK(services);
    p->services = *services;
    Result<std::unique_ptr<TransactionDB>> db =
        OpenRadosTransactionDB(p->services, Options(), options);
    ASSERT_OK(db);
    p->db = std::move(db).value();
  }

  // The table's store as the transactions do not see it.
  std::unique_ptr<RowStore> RawStore(const std::string& table) {
    Result<std::unique_ptr<RowStore>> store = OpenRadosRowStore(Options(), table);
    EXPECT_OK(store);
    return store.ok() ? std::move(store).value() : nullptr;
  }

  void RunBank(bool split);

  static inline TsoServer* tso_ = nullptr;
  test::ScratchDir dir_{"rados_txn"};
};

// The value a transaction reads, or its error in parentheses.
std::string Value(Transaction* txn, std::string_view table, std::string_view row,
                  std::string_view column) {
  Result<std::string> v = txn->Get(table, row, column);
  return v.ok() ? *v : "(" + v.status().ToString() + ")";
}

Status Put(TransactionDB* db, const std::string& table, const std::string& row,
           const std::string& value) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> txn, db->Begin());
  STRATA_RETURN_IF_ERROR(txn->Set(table, row, "c", value));
  return txn->Commit();
}

TEST_F(RadosTxnTest, CommitsAreSeenByOtherProcessesAndConflictsAbortOne) {
  Process a, b;
  Open("a", &a);
  Open("b", &b);
  ASSERT_OK(a.db->CreateTable("t"));
  EXPECT_TRUE(a.db->CreateTable("t").IsAlreadyExists());
  ASSERT_OK(Put(a.db.get(), "t", "k", "1"));

  // b sees a's commit; a snapshot taken before a later commit keeps the
  // value it saw.
  auto old_reader = b.db->Begin();
  ASSERT_OK(old_reader);
  EXPECT_EQ(Value(old_reader->get(), "t", "k", "c"), std::string("1"));
  ASSERT_OK(Put(a.db.get(), "t", "k", "2"));
  EXPECT_EQ(Value(old_reader->get(), "t", "k", "c"), std::string("1"));
  auto reader = b.db->Begin();
  ASSERT_OK(reader);
  EXPECT_EQ(Value(reader->get(), "t", "k", "c"), std::string("2"));

  // Two writers of one key from two processes: the second to commit aborts
  // with a write conflict, and nothing of it is left.
  auto first = a.db->Begin();
  auto second = b.db->Begin();
  ASSERT_OK(first);
  ASSERT_OK(second);
  ASSERT_OK((*first)->Set("t", "k", "c", "from-a"));
  ASSERT_OK((*second)->Set("t", "k", "c", "from-b"));
  ASSERT_OK((*second)->Set("t", "other", "c", "from-b"));
  ASSERT_OK((*first)->Commit());
  EXPECT_FALSE((*second)->Commit().ok());
  EXPECT_EQ((*second)->error().kind, TransactionError::Kind::kWriteConflict);
  auto after = a.db->Begin();
  ASSERT_OK(after);
  EXPECT_EQ(Value(after->get(), "t", "k", "c"), std::string("from-a"));
  EXPECT_TRUE((*after)->Get("t", "other", "c").status().IsNotFound());
  EXPECT_EQ(test::CountLocks(*RawStore("t")), 0u);
  // Every commit took two phases.
  EXPECT_EQ(a.db->GetStats().committed_one_phase, 0u);
}

// Transfers from two processes, four threads each, over two tables of
// several tablets, with snapshot audits: every audit adds up to the total,
// and no lock is left at the end. With `split`, a third party splits the
// tables' tablets all the while.
void RadosTxnTest::RunBank(bool split) {
  Process a, b;
  Open("a", &a);
  Open("b", &b);
  test::Bank bank;
  bank.accounts = 32;
  for (const std::string& t : bank.tables) {
    ASSERT_OK(CreateRadosTable(Options(), t, txn::TransactionalSchema({}),
                               {"acct-0010", "acct-0020"}));
  }
  ASSERT_OK(test::Populate(a.db.get(), bank));
  const auto run_for = std::chrono::milliseconds(test::UnderSanitizer() ? 1500 : 3000);
  const auto stop_at = std::chrono::steady_clock::now() + run_for;
  std::atomic<uint64_t> commits{0}, aborts{0}, audits{0}, audit_tries{0};
  std::atomic<bool> failed{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; t++) {
    TransactionDB* db = (t % 2 == 0 ? a : b).db.get();
    threads.emplace_back([&, db, t] {
      Random rnd(test::TestSeed() + t);
      std::vector<test::Leg> legs;
      while (std::chrono::steady_clock::now() < stop_at && !failed) {
        auto txn = db->Begin();
        if (!txn.ok()) {
          ADD_FAILURE() << txn.status().ToString();
          failed = true;
          return;
        }
        if (t == 0) {  // one auditor
          Result<std::vector<int64_t>> balances = test::ReadBalances(
              txn->get(), bank,
              audit_tries++ % 2 ? test::ReadMode::kScan : test::ReadMode::kBatchGet);
          if (balances.ok()) {
            EXPECT_EQ(test::Sum(*balances), bank.total());
            audits++;
          } else if (!balances.status().IsBusy() && !balances.status().IsTimedOut()) {
            // (A scan under this load may not settle before its deadline:
            // cluster/README.md.)
            ADD_FAILURE() << balances.status().ToString();
            failed = true;
          }
          continue;
        }
        Status s = test::PrepareTransfer(txn->get(), bank, &rnd, &legs);
        if (s.ok()) s = (*txn)->Commit();
        if (s.ok()) {
          commits++;
        } else if ((*txn)->error().kind != TransactionError::Kind::kNone) {
          aborts++;  // a conflict or a lock met: the transfer is not made
        } else {
          ADD_FAILURE() << s.ToString();
          failed = true;
        }
      }
    });
  }
  int splits = 0;
  if (split) {
    // Split rows between the tablets the tables were made with, in turn.
    for (int row = 4; std::chrono::steady_clock::now() < stop_at && row < bank.accounts; row += 4) {
      std::this_thread::sleep_for(run_for / 10);
      if (row % 10 == 0) continue;  // already a boundary
      for (const std::string& t : bank.tables) {
        const Status split_status = SplitRadosTablet(Options(), t, bank.RowOf(row));
        if (!split_status.ok()) {
          ADD_FAILURE() << "split: " << split_status.ToString();
          failed = true;  // the threads stop; joined below
        }
      }
      splits++;
    }
  }
  for (std::thread& t : threads) t.join();
  ASSERT_FALSE(failed);
  EXPECT_GT(commits.load(), 0u);
  if (split) {
    EXPECT_GT(splits, 0);
    EtcdOptions eo;
    eo.endpoints = Options().etcd_endpoints;
    auto etcd = EtcdClient::Open(eo);
    ASSERT_OK(etcd);
    for (const std::string& t : bank.tables) {
      auto map = LoadRadosTable(etcd->get(), Options().root, t);
      ASSERT_OK(map);
      EXPECT_EQ(map->tablets.size(), static_cast<size_t>(3 + splits)) << t;
    }
  }
  EXPECT_GT(audits.load(), 0u);
  auto final_read = b.db->Begin();
  ASSERT_OK(final_read);
  Result<std::vector<int64_t>> balances =
      test::ReadBalances(final_read->get(), bank, test::ReadMode::kScan);
  ASSERT_OK(balances);
  EXPECT_EQ(test::Sum(*balances), bank.total());
  for (const std::string& t : bank.tables) EXPECT_EQ(test::CountLocks(*RawStore(t)), 0u) << t;
  std::printf("rados bank: %llu transfers, %llu aborted, %llu audits, %d splits in %lld ms\n",
              static_cast<unsigned long long>(commits.load()),
              static_cast<unsigned long long>(aborts.load()),
              static_cast<unsigned long long>(audits.load()), splits,
              static_cast<long long>(run_for.count()));
}

TEST_F(RadosTxnTest, BankTransfersFromTwoProcessesKeepTheTotal) { RunBank(/*split=*/false); }

// Tablets split under running transactions: nothing is lost, and no read
// answers from the old map (an audit would not add up).
TEST_F(RadosTxnTest, TabletsSplitUnderConcurrentTransfersLoseNothing) { RunBank(/*split=*/true); }

// A collector over RADOS tables: its rounds, one task per tablet, remove
// the versions the newest one below the safepoint hides, and reads at or
// above the safepoint see what they saw.
TEST_F(RadosTxnTest, CollectorRoundsRemoveHiddenVersionsPerTablet) {
  Process a;
  Open("a", &a);
  ASSERT_OK(a.db->CreateTable("t"));
  for (int v = 1; v <= 5; v++) ASSERT_OK(Put(a.db.get(), "t", "k", std::to_string(v)));
  ASSERT_OK(Put(a.db.get(), "t", "gone", "x"));
  {
    auto txn = a.db->Begin();
    ASSERT_OK(txn);
    ASSERT_OK((*txn)->Erase("t", "gone", "c"));
    ASSERT_OK((*txn)->Commit());
  }
  auto versions = [&](const std::string& row) {
    Result<std::vector<Cell>> cells = RawStore("t")->ReadRow(ReadOptions(), row, RowFilter());
    EXPECT_OK(cells);
    return cells.ok() ? cells->size() : 0;
  };
  // Each put left a write record, its short value inside it.
  EXPECT_EQ(versions("k"), 5u);

  GcOptions o;
  o.life_time_millis = 600;  // above the 500 ms shared services need
  o.interval_millis = 0;
  Result<std::unique_ptr<GarbageCollector>> gc = GarbageCollector::Open(a.services, a.db.get(), o);
  ASSERT_OK(gc);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ASSERT_OK((*gc)->RunOnce());
  const GcStats stats = (*gc)->GetStats();
  EXPECT_GT(stats.safepoint, 0u);
  EXPECT_EQ(stats.collected_safepoint, stats.safepoint);
  EXPECT_GE(stats.tasks_done, 1u);
  EXPECT_GT(stats.versions_dropped, 0u);
  EXPECT_EQ(stats.versions_dropped_in_compaction, 0u);  // no compaction to hook
  EXPECT_EQ(versions("k"), 1u);                           // the newest record alone
  EXPECT_EQ(versions("gone"), 0u);
  auto reader = a.db->Begin();
  ASSERT_OK(reader);
  EXPECT_EQ(Value(reader->get(), "t", "k", "c"), std::string("5"));
  EXPECT_TRUE((*reader)->Get("t", "gone", "c").status().IsNotFound());
  ASSERT_OK((*gc)->Close());
}

// A strong observer in one process handles what the other process commits:
// it copies each change of t/src into t/dst, once per change.
TEST_F(RadosTxnTest, ObserversRunOnNotificationsFromAnotherProcess) {
  TransactionDBOptions o;
  o.observed_columns = {{"t", "src"}};
  Process writer, observer;
  Open("writer", &writer, o);
  Open("observer", &observer, o);
  ASSERT_OK(writer.db->CreateTable("t"));
  class Copy final : public Observer {
   public:
    Status Process(Transaction* txn, std::string_view table, std::string_view row,
                   std::string_view column) override {
      STRATA_ASSIGN_OR_RETURN(std::string v, txn->Get(table, row, column));
      return txn->Set(table, row, "dst", v);
    }
  };
  Result<std::unique_ptr<ObserverWorker>> worker = ObserverWorker::Start(
      observer.db.get(), {{"t", "src", NotificationKind::kStrong, std::make_shared<Copy>()}});
  ASSERT_OK(worker);
  for (int i = 0; i < 5; i++) {
    auto txn = writer.db->Begin();
    ASSERT_OK(txn);
    ASSERT_OK((*txn)->Set("t", "r" + std::to_string(i), "src", "v" + std::to_string(i)));
    ASSERT_OK((*txn)->Commit());
  }
  ASSERT_OK((*worker)->WaitForQuiescence(30000));
  auto reader = writer.db->Begin();
  ASSERT_OK(reader);
  for (int i = 0; i < 5; i++) {
    EXPECT_EQ(Value(reader->get(), "t", "r" + std::to_string(i), "dst"), "v" + std::to_string(i));
  }
  const ObserverStats stats = (*worker)->GetStats();
  EXPECT_EQ(stats.pending, 0u);
  EXPECT_GE(stats.runs, 1u);
  EXPECT_EQ(stats.failures, 0u);
  ASSERT_OK((*worker)->Stop());
}

TEST_F(RadosTxnTest, BadInputIsRefused) {
  RadosOptions o = Options();
  o.timeout_millis = 0;
  EXPECT_TRUE(OpenRadosTransactionDB(nullptr, Options()).status().IsInvalidArgument());
  Process a;
  Open("a", &a);
  EXPECT_TRUE(OpenRadosTransactionDB(a.services, o).status().IsInvalidArgument());
  EXPECT_TRUE(a.db->CreateTable("bad/name").IsInvalidArgument());
  // A table that is not transactional is not the transactions' to use.
  TableSchema plain;
  plain.families.push_back({.name = "f"});
  ASSERT_OK(CreateRadosTable(Options(), "plain", plain));
  auto txn = a.db->Begin();
  ASSERT_OK(txn);
  EXPECT_TRUE((*txn)->Get("plain", "r", "c").status().IsInvalidArgument());
}

}  // namespace
}  // namespace strata::cluster
