#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "cluster/etcd_liveness_registry.h"
#include "cluster/local_etcd.h"
#include "cluster/tso_client.h"
#include "cluster/tso_server.h"
#include "strata/cluster.h"
#include "strata/engine.h"
#include "strata/transaction.h"
#include "txn/local_timestamp_oracle.h"
#include "txn/transaction_db.h"
#include "txn_test_util.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::cluster {
namespace {

using SteadyClock = std::chrono::steady_clock;
using test::EngineTables;

int64_t MillisSince(SteadyClock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - t).count();
}

EtcdLivenessOptions Options(const LocalEtcd& etcd, int64_t ttl = 2) {
  EtcdLivenessOptions o;
  o.etcd.endpoints = {etcd.endpoint()};
  o.etcd.call_timeout_millis = 1000;
  o.lease_ttl_seconds = ttl;
  o.description = "test";
  return o;
}

class EtcdLivenessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::unique_ptr<LocalEtcd>> etcd = LocalEtcd::Start();
    ASSERT_OK(etcd);
    etcd_ = std::move(etcd).value();
  }
  std::unique_ptr<LocalEtcd> etcd_;
};

TEST_F(EtcdLivenessTest, InstancesSeeEachOther) {
  Result<std::unique_ptr<EtcdLivenessRegistry>> a = EtcdLivenessRegistry::Open(Options(*etcd_));
  ASSERT_OK(a);
  Result<std::unique_ptr<EtcdLivenessRegistry>> b = EtcdLivenessRegistry::Open(Options(*etcd_));
  ASSERT_OK(b);
  EXPECT_GT((*b)->instance_id(), (*a)->instance_id());
  EXPECT_EQ((*a)->timeout_micros(), 2'000'000u);

  Result<txn::Owner> owner = (*a)->Register();
  ASSERT_OK(owner);
  EXPECT_EQ(owner->instance_id, (*a)->instance_id());
  Result<txn::Owner> second = (*a)->Register();
  ASSERT_OK(second);
  EXPECT_NE(second->token, owner->token);
  EXPECT_TRUE(*(*a)->IsAlive(*owner));
  EXPECT_TRUE(*(*b)->IsAlive(*owner));  // its instance is alive
  EXPECT_OK((*a)->Heartbeat(*owner));
  // Another instance's owner cannot be kept alive here.
  EXPECT_EQ((*b)->Heartbeat(*owner).code(), Status::Code::kAborted);
  EXPECT_EQ((*b)->Unregister(*owner).code(), Status::Code::kNotFound);

  ASSERT_OK((*a)->Unregister(*second));
  EXPECT_FALSE(*(*a)->IsAlive(*second));
  EXPECT_EQ((*a)->Heartbeat(*second).code(), Status::Code::kAborted);
  EXPECT_EQ((*a)->Unregister(*second).code(), Status::Code::kNotFound);

  // A closed instance is dead for everyone at once (its lease is revoked),
  // and stays dead.
  const txn::Owner gone = *owner;
  a->reset();
  EXPECT_FALSE(*(*b)->IsAlive(gone));
  EXPECT_FALSE(*(*b)->IsAlive(gone));
  EXPECT_FALSE(*(*b)->IsAlive(txn::Owner{0, 1}));
  EXPECT_FALSE(*(*b)->IsAlive(txn::Owner{(*b)->instance_id() + 1000, 1}));
}

TEST_F(EtcdLivenessTest, TokensDieWithoutHeartbeats) {
  Result<std::unique_ptr<EtcdLivenessRegistry>> a = EtcdLivenessRegistry::Open(Options(*etcd_));
  ASSERT_OK(a);
  Result<txn::Owner> fresh = (*a)->Register();
  Result<txn::Owner> idle = (*a)->Register();
  ASSERT_OK(fresh);
  ASSERT_OK(idle);
  const auto start = SteadyClock::now();
  while (MillisSince(start) < 2600) {
    ASSERT_OK((*a)->Heartbeat(*fresh));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_TRUE(*(*a)->IsAlive(*fresh));
  EXPECT_FALSE(*(*a)->IsAlive(*idle));  // more than the 2 s timeout without a beat
  EXPECT_EQ((*a)->Heartbeat(*idle).code(), Status::Code::kAborted);
  EXPECT_TRUE((*a)->lease_alive());  // the lease itself is renewed in the background
}

TEST_F(EtcdLivenessTest, AKilledProcessIsDeadAfterItsLease) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const std::string endpoint = etcd_->endpoint();
  const pid_t child = fork();
  if (child == 0) {
    ::close(pipe_fds[0]);
    EtcdLivenessOptions o;
    o.etcd.endpoints = {endpoint};
    o.lease_ttl_seconds = 2;
    Result<std::unique_ptr<EtcdLivenessRegistry>> r = EtcdLivenessRegistry::Open(o);
    if (!r.ok()) _exit(3);
    Result<txn::Owner> owner = (*r)->Register();
    if (!owner.ok()) _exit(4);
    if (::write(pipe_fds[1], &*owner, sizeof(txn::Owner)) != sizeof(txn::Owner)) _exit(5);
    while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  ::close(pipe_fds[1]);
  txn::Owner owner;
  ASSERT_EQ(::read(pipe_fds[0], &owner, sizeof(owner)), static_cast<ssize_t>(sizeof(owner)));
  ::close(pipe_fds[0]);
  Result<std::unique_ptr<EtcdLivenessRegistry>> observer =
      EtcdLivenessRegistry::Open(Options(*etcd_));
  ASSERT_OK(observer);
  // Alive while the process renews its lease.
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  EXPECT_TRUE(*(*observer)->IsAlive(owner));
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  ::waitpid(child, nullptr, 0);
  const auto killed = SteadyClock::now();
  EXPECT_TRUE(*(*observer)->IsAlive(owner));  // its lease has not run out yet
  while ((*(*observer)->IsAlive(owner)) && MillisSince(killed) < 10000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const int64_t took = MillisSince(killed);
  EXPECT_FALSE(*(*observer)->IsAlive(owner));
  EXPECT_LE(took, 2000 + 1500) << "dead " << took << " ms after the kill";
  std::printf("[ stats    ] dead %lld ms after SIGKILL (lease 2 s)\n",
              static_cast<long long>(took));
}

TEST_F(EtcdLivenessTest, ACutOffProcessRefusesHeartbeatsBeforeItsLeaseEnds) {
  Result<std::unique_ptr<EtcdLivenessRegistry>> a = EtcdLivenessRegistry::Open(Options(*etcd_));
  ASSERT_OK(a);
  Result<txn::Owner> owner = (*a)->Register();
  ASSERT_OK(owner);
  // Let a renewal land, so the lease runs from a known moment.
  std::this_thread::sleep_for(std::chrono::milliseconds(900));
  etcd_->Pause();
  const auto paused = SteadyClock::now();
  while ((*a)->Heartbeat(*owner).ok() && MillisSince(paused) < 10000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const int64_t took = MillisSince(paused);
  EXPECT_LT(took, 2000) << "heartbeats went on " << took << " ms with etcd frozen (lease 2 s)";
  EXPECT_FALSE((*a)->lease_alive());
  EXPECT_EQ((*a)->Register().status().code(), Status::Code::kAborted);
  etcd_->Resume();
  std::printf("[ stats    ] heartbeats refused %lld ms after etcd froze (lease 2 s)\n",
              static_cast<long long>(took));
}

TEST_F(EtcdLivenessTest, RefusesBadOptions) {
  EtcdLivenessOptions o = Options(*etcd_);
  o.lease_ttl_seconds = 1;
  EXPECT_EQ(EtcdLivenessRegistry::Open(o).status().code(), Status::Code::kInvalidArgument);
  o.lease_ttl_seconds = 10;
  o.root.clear();
  EXPECT_EQ(EtcdLivenessRegistry::Open(o).status().code(), Status::Code::kInvalidArgument);
  o = Options(*etcd_);
  o.etcd.endpoints = {"127.0.0.1:1"};
  o.etcd.call_timeout_millis = 300;
  EXPECT_EQ(EtcdLivenessRegistry::Open(o).status().code(), Status::Code::kTimedOut);
}

// ---------------------------------------------------------------------------
// Locks of a killed process, resolved by another.

constexpr char kTable[] = "acct";

// Stops every commit after its prewrites once set (the child's second
// transaction), as if its coordinator crashed there.
std::atomic<bool> g_stop_commits{false};

struct Wiring {
  std::unique_ptr<Engine> engine;
  std::unique_ptr<TsoClient> oracle;
  std::unique_ptr<EtcdLivenessRegistry> registry;
  std::unique_ptr<TransactionDB> db;
  std::shared_ptr<EngineTables> tables;
};

Status Wire(const std::string& dir, const std::string& endpoint, Wiring* w) {
  EngineOptions eo;
  eo.create_if_missing = true;
  STRATA_ASSIGN_OR_RETURN(w->engine, Engine::Open(dir, eo));
  Result<Tenant> tenant = w->engine->OpenTenant("t");
  if (!tenant.ok()) {
    STRATA_RETURN_IF_ERROR(w->engine->CreateTenant("t"));
    tenant = w->engine->OpenTenant("t");
  }
  STRATA_RETURN_IF_ERROR(tenant.status());
  w->tables = std::make_shared<EngineTables>(*tenant);
  if (!tenant->OpenTable(kTable).ok()) STRATA_RETURN_IF_ERROR(w->tables->Create(kTable));
  TsoClientOptions to;
  to.etcd.endpoints = {endpoint};
  to.call_timeout_millis = 8000;
  STRATA_ASSIGN_OR_RETURN(w->oracle, TsoClient::Open(to));
  EtcdLivenessOptions lo;
  lo.etcd.endpoints = {endpoint};
  lo.lease_ttl_seconds = 2;
  STRATA_ASSIGN_OR_RETURN(w->registry, EtcdLivenessRegistry::Open(lo));
  txn::TxnDBConfig config;
  config.options.lock_ttl_millis = 60'000;  // the locks' TTL does not run out in this test
  config.options.one_phase_commit = false;
  config.options.commit_secondaries_in_background = false;  // locks counted after Commit
  config.oracle = w->oracle.get();
  config.registry = w->registry.get();
  config.tables = w->tables;
  config.fail_point = [](txn::FailPoint p, uint64_t) {
    return g_stop_commits.load() && p == txn::FailPoint::kAfterCommitTs;
  };
  STRATA_ASSIGN_OR_RETURN(w->db, txn::TxnDB::Make(std::move(config)));
  return Status::OK();
}

Status Write(TransactionDB& db, const std::string& value) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> t, db.Begin());
  STRATA_RETURN_IF_ERROR(t->Set(kTable, "k1", "c", value));
  STRATA_RETURN_IF_ERROR(t->Set(kTable, "k2", "c", value));
  return t->Commit();
}

Result<std::string> Read(TransactionDB& db, const std::string& row) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> t, db.Begin());
  return t->Get(kTable, row, "c");
}

TEST_F(EtcdLivenessTest, LocksOfAKilledProcessAreRolledBackByAnother) {
  test::ScratchDir dir("liveness_locks");
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const std::string endpoint = etcd_->endpoint();
  const pid_t child = fork();
  if (child == 0) {
    ::close(pipe_fds[0]);
    Wiring w;
    if (!Wire(dir.path(), endpoint, &w).ok()) _exit(3);
    if (!Write(*w.db, "v1").ok()) _exit(4);
    g_stop_commits = true;
    if (Write(*w.db, "v2").ok()) _exit(5);  // must stop at the fail point
    const char ready = 1;
    if (::write(pipe_fds[1], &ready, 1) != 1) _exit(6);
    while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  ASSERT_GT(child, 0);
  ::close(pipe_fds[1]);
  // The timestamp service, for both processes (the child waits for it).
  TsoServerOptions so;
  so.etcd.endpoints = {endpoint};
  so.lease_ttl_seconds = 2;
  Result<std::unique_ptr<TsoServer>> tso = TsoServer::Start(so);
  ASSERT_OK(tso);
  char ready = 0;
  const ssize_t got = ::read(pipe_fds[0], &ready, 1);
  ::close(pipe_fds[0]);
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_EQ(got, 1) << "the child failed: status " << status;
  const auto killed = SteadyClock::now();

  Wiring w;
  ASSERT_OK(Wire(dir.path(), endpoint, &w));
  Result<std::shared_ptr<RowStore>> store = w.tables->Resolve(kTable);
  ASSERT_OK(store);
  EXPECT_EQ(test::CountLocks(**store), 2u);  // the stopped transaction's two locks

  // A writer of the same rows succeeds once the dead process's lease has
  // expired (the locks' own TTL is a minute), rolling its locks back.
  Status last;
  int64_t committed_after = -1;
  while (MillisSince(killed) < 15000) {
    last = Write(*w.db, "v3");
    if (last.ok()) {
      committed_after = MillisSince(killed);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_GE(committed_after, 0) << last.ToString();
  EXPECT_LE(committed_after, 2000 + 2500);
  EXPECT_EQ(test::CountLocks(**store), 0u);
  EXPECT_EQ(*Read(*w.db, "k1"), "v3");
  EXPECT_EQ(*Read(*w.db, "k2"), "v3");
  std::printf(
      "[ stats    ] the killed process's locks gave way %lld ms after the kill "
      "(lease 2 s, lock TTL 60 s)\n",
      static_cast<long long>(committed_after));
}

// A process cut off from etcd stops committing before its lease can have
// expired, so no other process can have rolled its locks back under it.
TEST_F(EtcdLivenessTest, ACutOffProcessStopsCommittingBeforeItsLeaseEnds) {
  test::ScratchDir dir("liveness_partition");
  EngineOptions eo;
  eo.create_if_missing = true;
  Result<std::unique_ptr<Engine>> engine = Engine::Open(dir.Join("db"), eo);
  ASSERT_OK(engine);
  ASSERT_OK((*engine)->CreateTenant("t"));
  auto tables = std::make_shared<EngineTables>(*(*engine)->OpenTenant("t"));
  ASSERT_OK(tables->Create(kTable));
  // Timestamps from a local oracle: only the registry depends on etcd here.
  std::unique_ptr<txn::LocalTimestampOracle> oracle;
  ASSERT_OK(txn::LocalTimestampOracle::Open(dir.Join("tso"), {}, &oracle));
  Result<std::unique_ptr<EtcdLivenessRegistry>> registry =
      EtcdLivenessRegistry::Open(Options(*etcd_));
  ASSERT_OK(registry);
  txn::TxnDBConfig config;
  config.options.one_phase_commit = false;
  config.oracle = oracle.get();
  config.registry = registry->get();
  config.tables = tables;
  Result<std::unique_ptr<TransactionDB>> db = txn::TxnDB::Make(std::move(config));
  ASSERT_OK(db);
  ASSERT_OK(Write(**db, "before"));
  std::this_thread::sleep_for(std::chrono::milliseconds(900));  // a renewal lands

  etcd_->Pause();
  const auto paused = SteadyClock::now();
  int64_t last_commit = -1, first_failure = -1;
  Status failure;
  while (MillisSince(paused) < 3000) {
    Status s = Write(**db, "during");
    if (s.ok()) {
      EXPECT_LT(first_failure, 0) << "a commit succeeded after one was refused";
      last_commit = MillisSince(paused);
    } else if (first_failure < 0) {
      first_failure = MillisSince(paused);
      failure = s;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  etcd_->Resume();
  ASSERT_GE(first_failure, 0) << "commits went on for 3 s with etcd frozen (lease 2 s)";
  EXPECT_LT(first_failure, 2000);
  EXPECT_LT(last_commit, 2000);
  EXPECT_EQ(failure.code(), Status::Code::kAborted) << failure.ToString();
  std::printf(
      "[ stats    ] last commit %lld ms, first refusal %lld ms after etcd froze "
      "(lease 2 s): %s\n",
      static_cast<long long>(last_commit), static_cast<long long>(first_failure),
      failure.ToString().c_str());
}

TEST_F(EtcdLivenessTest, ClusterServicesRunTransactions) {
  test::ScratchDir dir("cluster_services");
  TsoServerOptions so;
  so.etcd.endpoints = {etcd_->endpoint()};
  Result<std::unique_ptr<TsoServer>> tso = TsoServer::Start(so);
  ASSERT_OK(tso);
  ClusterServicesOptions co;
  co.etcd_endpoints = {etcd_->endpoint()};
  co.lease_ttl_seconds = 5;
  Result<std::shared_ptr<TransactionServices>> services = OpenClusterServices(dir.Join("txn"), co);
  ASSERT_OK(services);
  EngineOptions eo;
  eo.create_if_missing = true;
  Result<std::unique_ptr<Engine>> engine = Engine::Open(dir.Join("db"), eo);
  ASSERT_OK(engine);
  ASSERT_OK((*engine)->CreateTenant("t"));
  Result<std::unique_ptr<TransactionDB>> db =
      TransactionDB::Open(*services, *(*engine)->OpenTenant("t"));
  ASSERT_OK(db);
  ASSERT_OK((*db)->CreateTable(kTable));
  ASSERT_OK(Write(**db, "a"));
  Result<uint64_t> before = (*services)->GetTimestamp();
  ASSERT_OK(before);
  ASSERT_OK(Write(**db, "b"));
  EXPECT_EQ(*Read(**db, "k1"), "b");
  Result<uint64_t> after = (*services)->GetTimestamp();
  ASSERT_OK(after);
  EXPECT_GT(*after, *before);

  co.etcd_endpoints.clear();
  EXPECT_EQ(OpenClusterServices(dir.Join("txn2"), co).status().code(),
            Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace strata::cluster
