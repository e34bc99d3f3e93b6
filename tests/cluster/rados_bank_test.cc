// The bank across processes on RADOS: three client processes
// (rados_bank_client) make transfers through one RADOS store and the etcd
// services while this test SIGKILLs and restarts them at random and
// restarts the OSD once (bluestore, so its data survives), with a garbage
// collector running rounds all along. It audits snapshots all along; every
// audit adds up to the total; at the end every acknowledged transfer's
// receipt is there, and once a collector round has resolved what the
// killed processes left, no lock is left.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cluster/local_ceph.h"
#include "cluster/tso_server.h"
#include "common/random.h"
#include "strata/cluster.h"
#include "strata/gc.h"
#include "strata/rados.h"
#include "strata/transaction.h"
#include "txn/bank_workload.h"
#include "txn/records.h"
#include "txn/txn_test_util.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

extern char** environ;

namespace strata::cluster {
namespace {

constexpr char kRoot[] = "/strata/bank";

class Client {
 public:
  // `args`: the client's arguments but --dir and --name, which each
  // incarnation gets of its own under `dir`.
  Client(std::string name, std::vector<std::string> args, std::string dir)
      : name_(std::move(name)), args_(std::move(args)), dir_(std::move(dir)) {}
  ~Client() { Kill(); }

  void Start(int incarnation) {
    std::vector<std::string> args = args_;
    const std::string dir = dir_ + "/" + name_ + "-" + std::to_string(incarnation);
    std::filesystem::create_directories(dir);
    for (const std::string& a : {std::string("--dir"), dir, std::string("--name"),
                                 name_ + "-" + std::to_string(incarnation)}) {
      args.push_back(a);
    }
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(STRATA_RADOS_BANK_CLIENT));
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ASSERT_EQ(::posix_spawn(&pid_, STRATA_RADOS_BANK_CLIENT, nullptr, nullptr, argv.data(), environ),
              0);
  }
  // SIGKILL; false when the process had ended on its own (a failure).
  bool Kill() {
    if (pid_ <= 0) return true;
    int status = 0;
    const bool ran = ::waitpid(pid_, &status, WNOHANG) == 0;
    if (ran) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
    } else {
      ADD_FAILURE() << name_ << " ended on its own: "
                    << (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                          : "signal " + std::to_string(WTERMSIG(status)));
    }
    pid_ = 0;
    return ran;
  }
 private:
  const std::string name_;
  const std::vector<std::string> args_;
  const std::string dir_;
  pid_t pid_ = 0;
};

TEST(RadosBankTest, KilledProcessesAndAnOsdRestartLoseNoTransfer) {
  // Ceph's default object classes: no cls_lua, so range conditions (the
  // prewrites') are checked by reading first, the way a cluster that does
  // not load cls_lua makes every client go.
  auto started = LocalCeph::Start(/*bluestore=*/true, /*cls_lua=*/false);
  ASSERT_OK(started);
  LocalCeph& ceph = **started;
  TsoServerOptions so;
  so.etcd.endpoints = ceph.Options().etcd_endpoints;
  Result<std::unique_ptr<TsoServer>> tso = TsoServer::Start(so);
  ASSERT_OK(tso);
  test::ScratchDir dir("rados_bank");
  RadosOptions ro = ceph.Options(5000);
  ro.root = kRoot;

  // A range condition falls back to a read, then a guarded write, and
  // still applies or fails as it should.
  {
    TableSchema plain;
    plain.families.push_back({.name = "f"});
    ASSERT_OK(CreateRadosTable(ro, "cas", plain));
    auto store = OpenRadosRowStore(ro, "cas");
    ASSERT_OK(store);
    RowMutation m;
    m.Put("f", "k", 5, "x");
    const std::vector<Condition> none_above = {Condition::NoCellInRange("f", "k", 3, 9)};
    auto first = (*store)->CheckAndMutate(WriteOptions(), "r", none_above, m);
    ASSERT_OK(first);
    EXPECT_TRUE(first->applied);
    auto second = (*store)->CheckAndMutate(WriteOptions(), "r", none_above, m);
    ASSERT_OK(second);
    EXPECT_FALSE(second->applied);
    ASSERT_EQ(second->failures.size(), 1u);
    ASSERT_EQ(second->failures[0].cells.size(), 1u);
    EXPECT_EQ(second->failures[0].cells[0].timestamp, 5u);
  }

  // The bank's tables, of three tablets each, and the receipts'.
  const test::Bank bank;
  for (const std::string& t : bank.tables) {
    ASSERT_OK(CreateRadosTable(ro, t, txn::TransactionalSchema({}), {"acct-0040", "acct-0080"}));
  }
  ASSERT_OK(CreateRadosTable(ro, "receipts", txn::TransactionalSchema({})));
  ClusterServicesOptions co;
  co.etcd_endpoints = ro.etcd_endpoints;
  co.lease_ttl_seconds = 2;
  Result<std::shared_ptr<TransactionServices>> services =
      OpenClusterServices(dir.Join("auditor"), co);
  ASSERT_OK(services);
  Result<std::unique_ptr<TransactionDB>> db = OpenRadosTransactionDB(*services, ro);
  ASSERT_OK(db);
  ASSERT_OK(test::Populate(db->get(), bank));

  // A collector runs all along, as it would in production: it keeps the
  // accounts' histories short, and its rounds meet the clients' locks.
  GcOptions go;
  go.life_time_millis = 1000;
  go.interval_millis = 1000;
  Result<std::unique_ptr<GarbageCollector>> gc = GarbageCollector::Open(*services, db->get(), go);
  ASSERT_OK(gc);

  const std::string acks = dir.Join("acks");
  std::vector<std::unique_ptr<Client>> clients;
  for (int c = 0; c < 3; c++) {
    clients.push_back(std::make_unique<Client>(
        "c" + std::to_string(c),
        std::vector<std::string>{"--etcd", ro.etcd_endpoints[0], "--ceph-conf", ro.ceph_conf,
                                 "--pool", ro.pool, "--root", kRoot, "--threads", "4", "--acks",
                                 acks},
        dir.path()));
    clients.back()->Start(0);
  }

  // Audits every 100 ms; a kill every 1 to 3 s; the OSD restarted once,
  // half way.
  const int seconds = test::UnderSanitizer() ? 20 : 60;
  const auto start = std::chrono::steady_clock::now();
  const auto end = start + std::chrono::seconds(seconds);
  Random rnd(test::TestSeed());
  auto next_kill = start + std::chrono::milliseconds(1000 + rnd.Uniform(2000));
  bool osd_restarted = false;
  int kills = 0, tries = 0, audit_errors = 0;
  int audits[2] = {0, 0};  // by BatchGet, by Scan
  std::vector<int> incarnation(clients.size(), 0);
  while (std::chrono::steady_clock::now() < end) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= next_kill) {
      const size_t c = rnd.Uniform(clients.size());
      ASSERT_TRUE(clients[c]->Kill());
      clients[c]->Start(++incarnation[c]);
      kills++;
      next_kill = now + std::chrono::milliseconds(1000 + rnd.Uniform(2000));
    }
    if (!osd_restarted && now >= start + std::chrono::seconds(seconds / 2)) {
      ASSERT_OK(ceph.RestartOsd());
      osd_restarted = true;
    }
    auto txn = (*db)->Begin();
    ASSERT_OK(txn);
    const int mode = tries++ % 2;
    Result<std::vector<int64_t>> balances = test::ReadBalances(
        txn->get(), bank, mode == 1 ? test::ReadMode::kScan : test::ReadMode::kBatchGet);
    if (balances.ok()) {
      ASSERT_EQ(test::Sum(*balances), bank.total()) << "at start_ts " << (*txn)->start_ts();
      audits[mode]++;
    } else {
      ASSERT_FALSE(balances.status().IsCorruption()) << balances.status().ToString();
      audit_errors++;  // a lock still live, an OSD restarting
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (auto& c : clients) EXPECT_TRUE(c->Kill());
  ASSERT_TRUE(osd_restarted);
  // Both kinds of audit got through, many times (a scan may give up under
  // this load: cluster/README.md).
  EXPECT_GE(audits[0], 3);
  EXPECT_GE(audits[1], 1);

  // Past the clients' leases, every lock they left can be resolved.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  std::vector<std::string> receipts;
  {
    std::ifstream in(acks);
    for (std::string line; std::getline(in, line);) receipts.push_back(line);
  }
  EXPECT_GT(receipts.size(), 0u);
  auto final_read = (*db)->Begin();
  ASSERT_OK(final_read);
  Result<std::vector<int64_t>> balances =
      test::ReadBalances(final_read->get(), bank, test::ReadMode::kBatchGet);
  ASSERT_OK(balances);
  EXPECT_EQ(test::Sum(*balances), bank.total());
  size_t missing = 0;
  for (size_t first = 0; first < receipts.size(); first += 512) {
    std::vector<Transaction::Key> keys;
    for (size_t i = first; i < receipts.size() && i < first + 512; i++) {
      keys.push_back({receipts[i], "r"});
    }
    Result<std::vector<std::optional<std::string>>> found =
        (*final_read)->BatchGet("receipts", keys);
    ASSERT_OK(found);
    for (size_t i = 0; i < keys.size(); i++) {
      if (!(*found)[i].has_value() && missing++ < 5) {
        ADD_FAILURE() << "acknowledged transfer " << keys[i].row << " is gone";
      }
    }
  }
  EXPECT_EQ(missing, 0u);

  // A collector round resolves every lock below its safepoint, in every
  // table: none is left after it.
  ASSERT_OK((*final_read)->Commit());
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ASSERT_OK((*gc)->RunOnce());
  for (const std::string& t : {bank.tables[0], bank.tables[1], std::string("receipts")}) {
    Result<std::unique_ptr<RowStore>> raw = OpenRadosRowStore(ro, t);
    ASSERT_OK(raw);
    EXPECT_EQ(test::CountLocks(**raw), 0u) << t;
  }
  const GcStats gs = (*gc)->GetStats();
  ASSERT_OK((*gc)->Close());
  ASSERT_OK((*db)->Close());
  std::printf(
      "rados bank: %d s, 3 processes x 4 threads, %d kills, OSD restarted once: %zu transfers "
      "acknowledged, %d audits (%d gave up); collector: %llu rounds, %llu locks resolved, %llu "
      "versions dropped\n",
      seconds, kills, receipts.size(), audits[0] + audits[1], audit_errors,
      static_cast<unsigned long long>(gs.rounds),
      static_cast<unsigned long long>(gs.locks_resolved),
      static_cast<unsigned long long>(gs.versions_dropped));
}

}  // namespace
}  // namespace strata::cluster
