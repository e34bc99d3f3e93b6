// A garbage collector over cluster services: its safepoint lives in etcd,
// and another process's running transaction and service safepoints hold it
// down.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "cluster/etcd_safepoint.h"
#include "cluster/local_etcd.h"
#include "cluster/tso_server.h"
#include "strata/cluster.h"
#include "strata/engine.h"
#include "strata/gc.h"
#include "strata/transaction.h"
#include "txn/shared_safepoints.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::cluster {
namespace {

struct Process {
  std::shared_ptr<TransactionServices> services;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<TransactionDB> db;
};

Status OpenProcess(const std::string& dir, const std::string& endpoint, Process* p,
                   int64_t lease_ttl_seconds = 5) {
  std::filesystem::create_directories(dir);
  ClusterServicesOptions co;
  co.etcd_endpoints = {endpoint};
  co.lease_ttl_seconds = lease_ttl_seconds;
  STRATA_ASSIGN_OR_RETURN(p->services, OpenClusterServices(dir + "/txn", co));
  EngineOptions eo;
  eo.create_if_missing = true;
  STRATA_ASSIGN_OR_RETURN(p->engine, Engine::Open(dir + "/db", eo));
  STRATA_RETURN_IF_ERROR(p->engine->CreateTenant("t"));
  STRATA_ASSIGN_OR_RETURN(Tenant tenant, p->engine->OpenTenant("t"));
  STRATA_ASSIGN_OR_RETURN(p->db, TransactionDB::Open(p->services, tenant));
  return p->db->CreateTable("acct");
}

// Waits past one publication of every process's oldest transaction.
void WaitForPublication() {
  std::this_thread::sleep_for(std::chrono::milliseconds(3 * txn::SharedSafepoints::kPublishMillis));
}

// etcd and a timestamp service of each test's own.
class ClusterGcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::unique_ptr<LocalEtcd>> etcd = LocalEtcd::Start();
    ASSERT_OK(etcd);
    etcd_ = std::move(etcd).value();
    so_.etcd.endpoints = {etcd_->endpoint()};
    Result<std::unique_ptr<TsoServer>> tso = TsoServer::Start(so_);
    ASSERT_OK(tso);
    tso_ = std::move(tso).value();
  }

  std::unique_ptr<LocalEtcd> etcd_;
  TsoServerOptions so_;
  std::unique_ptr<TsoServer> tso_;
};

TEST_F(ClusterGcTest, OtherProcessesHoldTheSafepointDown) {
  test::ScratchDir dir("cluster_gc");
  Process a, b;
  ASSERT_OK(OpenProcess(dir.Join("a"), etcd_->endpoint(), &a));
  ASSERT_OK(OpenProcess(dir.Join("b"), etcd_->endpoint(), &b));

  // B runs a long transaction on the same tenant name.
  Result<std::unique_ptr<Transaction>> long_txn = b.db->Begin();
  ASSERT_OK(long_txn);
  const uint64_t held = (*long_txn)->start_ts();
  WaitForPublication();

  GcOptions go;
  go.life_time_millis = 1;  // not above the publication interval
  go.interval_millis = 0;
  EXPECT_EQ(GarbageCollector::Open(a.services, a.db.get(), go).status().code(),
            Status::Code::kInvalidArgument);
  constexpr uint64_t kLife = txn::SharedSafepoints::kPublishMillis + 100;
  go.life_time_millis = kLife;
  Result<std::unique_ptr<GarbageCollector>> gc = GarbageCollector::Open(a.services, a.db.get(), go);
  ASSERT_OK(gc);
  ASSERT_OK((*gc)->RunOnce());
  const uint64_t first = (*gc)->safepoint();
  EXPECT_GT(first, 0u);
  EXPECT_LE(first, held) << "the safepoint passed another process's running transaction";

  // The safepoint is in etcd, where every process reads it.
  Result<std::unique_ptr<EtcdClient>> client = EtcdClient::Open(so_.etcd);
  ASSERT_OK(client);
  Result<std::unique_ptr<EtcdSafepoints>> points =
      EtcdSafepoints::Open(std::move(client).value(), "/strata", "t");
  ASSERT_OK(points);
  EXPECT_EQ(*(*points)->Get(), first);

  // Once B's transaction ends, the next round moves past it.
  ASSERT_OK((*long_txn)->Rollback());
  long_txn->reset();
  WaitForPublication();
  std::this_thread::sleep_for(std::chrono::milliseconds(kLife));
  ASSERT_OK((*gc)->RunOnce());
  const uint64_t second = (*gc)->safepoint();
  EXPECT_GT(second, held);
  EXPECT_EQ(*(*points)->Get(), second);

  // A service safepoint another process holds in etcd caps it too.
  Result<uint64_t> now = a.services->GetTimestamp();
  ASSERT_OK(now);
  ASSERT_OK((*points)->HoldService("backup", *now, 60));
  std::this_thread::sleep_for(std::chrono::milliseconds(2 * kLife));
  ASSERT_OK((*gc)->RunOnce());
  EXPECT_LE((*gc)->safepoint(), *now);
  ASSERT_OK((*points)->ReleaseService("backup"));
  ASSERT_OK((*gc)->RunOnce());
  EXPECT_GT((*gc)->safepoint(), *now);

  ASSERT_OK((*gc)->Close());
}

// A process cut off from etcd may have lost what holds other processes'
// collectors back from its snapshots: once its lease may have run out, its
// transactions' reads fail (kCoordinatorDead) instead of answering.
TEST_F(ClusterGcTest, ReadsStopOnceTheLeaseMayHaveRunOut) {
  test::ScratchDir dir("cluster_gc_lease");
  Process p;
  ASSERT_OK(OpenProcess(dir.Join("p"), etcd_->endpoint(), &p, /*lease_ttl_seconds=*/2));
  {
    Result<std::unique_ptr<Transaction>> w = p.db->Begin();
    ASSERT_OK(w);
    ASSERT_OK((*w)->Set("acct", "r", "c", "v"));
    ASSERT_OK((*w)->Commit());
  }
  Result<std::unique_ptr<Transaction>> reader = p.db->Begin();
  Result<std::unique_ptr<Transaction>> scanner = p.db->Begin();
  ASSERT_OK(reader);
  ASSERT_OK(scanner);
  ASSERT_OK((*reader)->Get("acct", "r", "c"));

  etcd_->Pause();  // no renewal gets through
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  Result<std::string> late = (*reader)->Get("acct", "r", "c");
  EXPECT_FALSE(late.ok());
  EXPECT_EQ((*reader)->error().kind, TransactionError::Kind::kCoordinatorDead)
      << late.status().ToString();
  Result<std::unique_ptr<TransactionIterator>> it = (*scanner)->Scan("acct", "", "", {});
  EXPECT_FALSE(it.ok() && (*it)->Valid());
  if (it.ok()) {
    EXPECT_FALSE((*it)->status().ok());
  }
  EXPECT_EQ((*scanner)->error().kind, TransactionError::Kind::kCoordinatorDead);
  etcd_->Resume();
}

}  // namespace
}  // namespace strata::cluster
