#include "cluster/etcd_safepoint.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include "cluster/etcd_liveness_registry.h"
#include "cluster/local_etcd.h"
#include "util/status_matchers.h"

namespace strata::cluster {
namespace {

using SteadyClock = std::chrono::steady_clock;

class EtcdSafepointTest : public SharedEtcdTest {
 protected:
  void SetUp() override {
    ASSERT_NE(etcd_, nullptr);
    options_.endpoints = {etcd_->endpoint()};
    options_.call_timeout_millis = 2000;
    Result<std::unique_ptr<EtcdClient>> c = EtcdClient::Open(options_);
    ASSERT_OK(c);
    client_ = std::move(c).value();
    Result<std::unique_ptr<EtcdSafepoints>> p = EtcdSafepoints::Open(client_, "/sp", TestName());
    ASSERT_OK(p);
    points_ = std::move(p).value();
  }
  std::unique_ptr<EtcdLivenessRegistry> Process() {
    EtcdLivenessOptions o;
    o.etcd = options_;
    o.root = "/sp";
    o.lease_ttl_seconds = 2;
    Result<std::unique_ptr<EtcdLivenessRegistry>> r = EtcdLivenessRegistry::Open(o);
    EXPECT_OK(r);
    return r.ok() ? std::move(r).value() : nullptr;
  }

  EtcdOptions options_;
  std::shared_ptr<EtcdClient> client_;
  std::shared_ptr<EtcdSafepoints> points_;
};

TEST_F(EtcdSafepointTest, FloorIsTheMinimumOverLiveProcesses) {
  EXPECT_EQ(*points_->Floor(), UINT64_MAX);
  std::unique_ptr<EtcdLivenessRegistry> a = Process();
  std::unique_ptr<EtcdLivenessRegistry> b = Process();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_OK(points_->PublishMinStartTs(a->instance_id(), a->lease(), 1000));
  ASSERT_OK(points_->PublishMinStartTs(b->instance_id(), b->lease(), 500));
  EXPECT_EQ(*points_->Floor(), 500u);
  ASSERT_OK(points_->PublishMinStartTs(b->instance_id(), b->lease(), 1500));  // moved on
  EXPECT_EQ(*points_->Floor(), 1000u);
  ASSERT_OK(points_->PublishMinStartTs(a->instance_id(), a->lease(), UINT64_MAX));  // idle
  EXPECT_EQ(*points_->Floor(), 1500u);
  // A process that ends takes its hold with it (its lease goes).
  b.reset();
  EXPECT_EQ(*points_->Floor(), UINT64_MAX);
}

TEST_F(EtcdSafepointTest, ServiceSafepointsHoldUntilReleasedOrExpired) {
  std::unique_ptr<EtcdLivenessRegistry> a = Process();
  ASSERT_NE(a, nullptr);
  ASSERT_OK(points_->PublishMinStartTs(a->instance_id(), a->lease(), 900));
  ASSERT_OK(points_->HoldService("backup", 700, 60));
  ASSERT_OK(points_->HoldService("reader", 800, 1));
  EXPECT_EQ(*points_->Floor(), 700u);
  ASSERT_OK(points_->HoldService("backup", 750, 60));  // replaced, not added
  EXPECT_EQ(*points_->Floor(), 750u);
  ASSERT_OK(points_->ReleaseService("backup"));
  EXPECT_EQ(points_->ReleaseService("backup").code(), Status::Code::kNotFound);
  EXPECT_EQ(*points_->Floor(), 800u);
  // "reader" expires by itself (a 1 s lease; etcd may round it up).
  const auto start = SteadyClock::now();
  while (*points_->Floor() != 900u && SteadyClock::now() - start < std::chrono::seconds(10)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(*points_->Floor(), 900u);
  EXPECT_GE(SteadyClock::now() - start, std::chrono::milliseconds(500));

  // Not below the published safepoint.
  ASSERT_EQ(*points_->Raise(1000), 1000u);
  EXPECT_EQ(points_->HoldService("late", 999, 60).code(), Status::Code::kFailedPrecondition);
  EXPECT_OK(points_->HoldService("late", 1000, 60));
  EXPECT_EQ(points_->HoldService("", 1000, 60).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(points_->HoldService("x", 1000, 0).code(), Status::Code::kInvalidArgument);
}

TEST_F(EtcdSafepointTest, TheSafepointNeverMovesBackwards) {
  EXPECT_EQ(*points_->Get(), 0u);
  EXPECT_EQ(*points_->Raise(100), 100u);
  EXPECT_EQ(*points_->Raise(50), 100u);
  EXPECT_EQ(*points_->Get(), 100u);

  // Many raisers at once, and a watcher that must never see it go down.
  std::atomic<bool> done{false};
  std::atomic<uint64_t> highest{100};
  std::atomic<int> went_down{0};
  std::thread watcher([&] {
    uint64_t last = 0;
    while (!done.load()) {
      Result<uint64_t> now = points_->Get();
      if (now.ok()) {
        if (*now < last) went_down++;
        last = *now;
      }
    }
  });
  std::vector<std::thread> raisers;
  for (int t = 0; t < 6; ++t) {
    raisers.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      for (int i = 0; i < 40; ++i) {
        const uint64_t want = 100 + rng() % 10000;
        Result<uint64_t> got = points_->Raise(want);
        if (!got.ok()) {
          ADD_FAILURE() << got.status().ToString();
          return;
        }
        EXPECT_GE(*got, want);
        uint64_t h = highest.load();
        while (want > h && !highest.compare_exchange_weak(h, want)) {
        }
      }
    });
  }
  for (std::thread& r : raisers) r.join();
  done = true;
  watcher.join();
  EXPECT_EQ(went_down.load(), 0);
  EXPECT_EQ(*points_->Get(), highest.load());
}

TEST_F(EtcdSafepointTest, AStoreForTheCollector) {
  ASSERT_OK(points_->Raise(40));
  Result<std::unique_ptr<EtcdSafepointStore>> store = EtcdSafepointStore::Open(points_);
  ASSERT_OK(store);
  EXPECT_EQ((*store)->Get(), 40u);
  ASSERT_OK((*store)->Raise(60));
  EXPECT_EQ((*store)->Get(), 60u);
  EXPECT_EQ(*points_->Get(), 60u);
  ASSERT_OK(points_->Raise(90));  // another process
  ASSERT_OK((*store)->Raise(70));
  EXPECT_EQ((*store)->Get(), 90u);
}

TEST_F(EtcdSafepointTest, RefusesBadNames) {
  EXPECT_EQ(EtcdSafepoints::Open(client_, "/sp", "").status().code(),
            Status::Code::kInvalidArgument);
  EXPECT_EQ(EtcdSafepoints::Open(client_, "/sp", "a/b").status().code(),
            Status::Code::kInvalidArgument);
  EXPECT_EQ(EtcdSafepoints::Open(nullptr, "/sp", "a").status().code(),
            Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace strata::cluster
