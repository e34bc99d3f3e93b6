// Tests of LocalLivenessRegistry: instance ids across opens and failures,
// tokens that time out, earlier instances dead at once, finality of death,
// concurrent use.
#include "txn/local_liveness_registry.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "common/fault_injection_fs.h"
#include "common/random.h"
#include "util/fake_clock.h"
#include "txn/instance_id_file.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::txn {
namespace {

using test::FakeClock;

constexpr uint64_t kTimeoutMicros = 1'000'000;

std::unique_ptr<LocalLivenessRegistry> OpenRegistry(const std::string& dir, Clock* clock,
                                                    FileSystem* fs = nullptr) {
  LocalLivenessRegistryOptions options;
  options.timeout_micros = kTimeoutMicros;
  options.clock = clock;
  options.fs = fs;
  std::unique_ptr<LocalLivenessRegistry> registry;
  Status s = LocalLivenessRegistry::Open(dir, options, &registry);
  EXPECT_OK(s);
  return registry;
}

bool Alive(LivenessRegistry* registry, const Owner& owner) {
  Result<bool> r = registry->IsAlive(owner);
  EXPECT_OK(r);
  return r.ok() && *r;
}

TEST(LivenessRegistryTest, EachOpenGetsAGreaterPersistedInstanceId) {
  test::ScratchDir dir("liveness");
  FakeClock clock;
  uint64_t prev = 0;
  for (int i = 0; i < 5; i++) {
    auto registry = OpenRegistry(dir.path(), &clock);
    ASSERT_TRUE(registry);
    EXPECT_GT(registry->instance_id(), prev);
    prev = registry->instance_id();
  }
  EXPECT_EQ(prev, 5u);
  Result<uint64_t> stored =
      ReadInstanceIdFile(FileSystem::Default(), dir.Join(LocalLivenessRegistry::kInstanceFileName));
  ASSERT_OK(stored);
  EXPECT_EQ(*stored, 5u);
}

TEST(LivenessRegistryTest, SecondOpenOfTheSameDirectoryIsBusy) {
  test::ScratchDir dir("liveness");
  auto registry = OpenRegistry(dir.path(), nullptr);
  ASSERT_TRUE(registry);
  std::unique_ptr<LocalLivenessRegistry> second;
  Status s = LocalLivenessRegistry::Open(dir.path(), {}, &second);
  EXPECT_TRUE(s.IsBusy()) << s.ToString();
}

TEST(LivenessRegistryTest, RejectsBadTimeouts) {
  test::ScratchDir dir("liveness");
  std::unique_ptr<LocalLivenessRegistry> registry;
  LocalLivenessRegistryOptions options;
  options.timeout_micros = 0;
  EXPECT_TRUE(LocalLivenessRegistry::Open(dir.path(), options, &registry).IsInvalidArgument());
  options.timeout_micros = LocalLivenessRegistry::kMaxTimeoutMicros + 1;
  EXPECT_TRUE(LocalLivenessRegistry::Open(dir.path(), options, &registry).IsInvalidArgument());
}

TEST(LivenessRegistryTest, HeartbeatsKeepATokenAliveUntilTheyStop) {
  test::ScratchDir dir("liveness");
  FakeClock clock;
  auto registry = OpenRegistry(dir.path(), &clock);
  ASSERT_TRUE(registry);
  Result<Owner> owner = registry->Register();
  ASSERT_OK(owner);
  EXPECT_EQ(owner->instance_id, registry->instance_id());
  EXPECT_NE(owner->token, 0u);
  EXPECT_TRUE(Alive(registry.get(), *owner));

  // Heartbeats every 0.9 timeouts: alive for much longer than a timeout.
  for (int i = 0; i < 20; i++) {
    clock.Advance(kTimeoutMicros * 9 / 10);
    EXPECT_TRUE(Alive(registry.get(), *owner)) << i;
    ASSERT_OK(registry->Heartbeat(*owner));
  }
  // The heartbeats stop: alive up to the timeout, dead just after.
  clock.Advance(kTimeoutMicros);
  EXPECT_TRUE(Alive(registry.get(), *owner));
  clock.AdvanceMonotonicNanos(1);
  EXPECT_FALSE(Alive(registry.get(), *owner));
  // Death is final: a late heartbeat is refused and does not revive it.
  Status s = registry->Heartbeat(*owner);
  EXPECT_TRUE(s.IsAborted()) << s.ToString();
  EXPECT_FALSE(Alive(registry.get(), *owner));
  EXPECT_TRUE(registry->Unregister(*owner).IsNotFound());
}

TEST(LivenessRegistryTest, LateHeartbeatAfterTimeoutIsRefusedEvenIfNobodyAsked) {
  test::ScratchDir dir("liveness");
  FakeClock clock;
  auto registry = OpenRegistry(dir.path(), &clock);
  ASSERT_TRUE(registry);
  Result<Owner> owner = registry->Register();
  ASSERT_OK(owner);
  clock.Advance(kTimeoutMicros + 1);
  EXPECT_TRUE(registry->Heartbeat(*owner).IsAborted());
  EXPECT_FALSE(Alive(registry.get(), *owner));
}

TEST(LivenessRegistryTest, TokensAreIndependentAndNeverReused) {
  test::ScratchDir dir("liveness");
  FakeClock clock;
  auto registry = OpenRegistry(dir.path(), &clock);
  ASSERT_TRUE(registry);
  Result<Owner> a = registry->Register();
  clock.Advance(kTimeoutMicros / 2);
  Result<Owner> b = registry->Register();
  ASSERT_OK(a);
  ASSERT_OK(b);
  EXPECT_NE(a->token, b->token);
  clock.Advance(kTimeoutMicros / 2 + 1);
  EXPECT_FALSE(Alive(registry.get(), *a));
  EXPECT_TRUE(Alive(registry.get(), *b));
  ASSERT_OK(registry->Unregister(*b));
  EXPECT_FALSE(Alive(registry.get(), *b));
  EXPECT_TRUE(registry->Heartbeat(*b).IsAborted());
  Result<Owner> c = registry->Register();
  ASSERT_OK(c);
  EXPECT_GT(c->token, b->token);
  // Owners never issued, or of a later instance, are not alive.
  EXPECT_FALSE(Alive(registry.get(), Owner{registry->instance_id(), c->token + 1}));
  EXPECT_FALSE(Alive(registry.get(), Owner{registry->instance_id() + 1, c->token}));
  EXPECT_FALSE(Alive(registry.get(), Owner{}));
}

TEST(LivenessRegistryTest, EarlierInstanceOwnersAreDeadAtOnceAfterRestart) {
  test::ScratchDir dir("liveness");
  FakeClock clock;
  Owner old_owner;
  {
    auto registry = OpenRegistry(dir.path(), &clock);
    ASSERT_TRUE(registry);
    Result<Owner> owner = registry->Register();
    ASSERT_OK(owner);
    old_owner = *owner;
  }
  // No time passes at all.
  auto registry = OpenRegistry(dir.path(), &clock);
  ASSERT_TRUE(registry);
  EXPECT_GT(registry->instance_id(), old_owner.instance_id);
  EXPECT_FALSE(Alive(registry.get(), old_owner));
  EXPECT_TRUE(registry->Heartbeat(old_owner).IsAborted());
  // The new instance's first token equals the old one's, but the owner differs.
  Result<Owner> fresh = registry->Register();
  ASSERT_OK(fresh);
  EXPECT_EQ(fresh->token, old_owner.token);
  EXPECT_FALSE(*fresh == old_owner);
  EXPECT_TRUE(Alive(registry.get(), *fresh));
  EXPECT_FALSE(Alive(registry.get(), old_owner));
}

TEST(LivenessRegistryTest, FailedOpenNeverLeadsToAReusedId) {
  test::ScratchDir dir("liveness");
  FaultInjectionFileSystem fs;
  FakeClock clock;
  uint64_t max_id = 0;
  {
    auto registry = OpenRegistry(dir.path(), &clock, &fs);
    ASSERT_TRUE(registry);
    max_id = registry->instance_id();
  }
  // Each failure point of the atomic replace: the open fails, and later
  // opens (after a power loss, too) still get a larger id.
  for (FaultOp op : {FaultOp::kWrite, FaultOp::kSync, FaultOp::kRename, FaultOp::kSyncDir}) {
    SCOPED_TRACE(FaultOpName(op));
    fs.FailAfter(op, 0, 1, EIO);
    LocalLivenessRegistryOptions options;
    options.fs = &fs;
    options.clock = &clock;
    std::unique_ptr<LocalLivenessRegistry> registry;
    Status s = LocalLivenessRegistry::Open(dir.path(), options, &registry);
    EXPECT_FALSE(s.ok());
    fs.ClearFaults();
    ASSERT_OK(fs.DropUnsyncedData());
    registry = OpenRegistry(dir.path(), &clock, &fs);
    ASSERT_TRUE(registry);
    EXPECT_GT(registry->instance_id(), max_id);
    max_id = registry->instance_id();
  }
}

TEST(LivenessRegistryTest, DamagedInstanceFileRefusesToOpen) {
  test::ScratchDir dir("liveness");
  {
    auto registry = OpenRegistry(dir.path(), nullptr);
    ASSERT_TRUE(registry);
  }
  const std::string path = dir.Join(LocalLivenessRegistry::kInstanceFileName);
  std::string data;
  ASSERT_OK(ReadFileToString(FileSystem::Default(), path, &data));
  data[9] ^= 0x10;
  ASSERT_OK(WriteFileAtomically(FileSystem::Default(), path, data));
  std::unique_ptr<LocalLivenessRegistry> registry;
  Status s = LocalLivenessRegistry::Open(dir.path(), {}, &registry);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
}

TEST(LivenessRegistryTest, ExpiredTokensAreSweptAway) {
  test::ScratchDir dir("liveness");
  FakeClock clock;
  auto registry = OpenRegistry(dir.path(), &clock);
  ASSERT_TRUE(registry);
  for (int i = 0; i < 10'000; i++) {
    ASSERT_OK(registry->Register());  // never refreshed
    clock.Advance(kTimeoutMicros / 100);
  }
  // About 100 are within the timeout; the table stays a small multiple of it.
  EXPECT_LT(registry->TrackedTokens(), 1000u);
}

TEST(LivenessRegistryTest, ConcurrentRegisterHeartbeatAndQueries) {
  test::ScratchDir dir("liveness");
  FakeClock clock;
  auto registry = OpenRegistry(dir.path(), &clock);
  ASSERT_TRUE(registry);
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  // Coordinators: register, heartbeat, unregister; they must never be seen dead
  // while they heartbeat well within the timeout (the clock moves slowly).
  std::vector<std::thread> threads;
  std::vector<Owner> done_owners[4];
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; i++) {
        Result<Owner> o = registry->Register();
        if (!o.ok()) {
          failures++;
          continue;
        }
        for (int k = 0; k < 3; k++) {
          if (!registry->Heartbeat(*o).ok()) failures++;
          Result<bool> alive = registry->IsAlive(*o);
          if (!alive.ok() || !*alive) failures++;
        }
        if (!registry->Unregister(*o).ok()) failures++;
        done_owners[t].push_back(*o);
      }
    });
  }
  std::thread ticker([&] {
    while (!stop.load()) {
      // 10 us of fake time per >= 50 us of real time: a thread would have to
      // stall for seconds between two of its calls to see its token expire.
      clock.Advance(10);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  });
  for (auto& th : threads) th.join();
  stop = true;
  ticker.join();
  EXPECT_EQ(failures.load(), 0);
  for (auto& owners : done_owners) {
    for (const Owner& o : owners) ASSERT_FALSE(Alive(registry.get(), o));
  }
  EXPECT_EQ(registry->TrackedTokens(), 0u);
}

}  // namespace
}  // namespace strata::txn
