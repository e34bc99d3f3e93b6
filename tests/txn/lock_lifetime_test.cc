// How long a transaction's locks live, with a fake wall clock so that TTLs
// run out exactly when the test says: heartbeats keep a slow coordinator's
// locks alive for many TTLs while readers push them instead of rolling them
// back; a commit after a heartbeat took over a pushed lock still commits
// above the reader; a coordinator stopped after taking commit_ts has its
// locks resolved at once by the next reader, TTL or not.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "txn/lock_resolver.h"
#include "txn/records.h"
#include "txn/transaction_db.h"
#include "txn_test_util.h"
#include "util/fake_clock.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::txn {
namespace {

constexpr uint64_t kTtlMillis = 40;

class LockLifetimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(LocalLivenessRegistry::Open(dir_.path(), {}, &registry_));
    tables_ = std::make_shared<test::ModelTables>();
    ASSERT_OK(tables_->Create("bank"));
    TxnDBConfig config;
    config.options.sync = false;
    config.options.one_phase_commit = false;  // locks and what keeps them alive
    config.options.lock_ttl_millis = kTtlMillis;
    config.options.commit_secondaries_in_background = false;
    config.oracle = &oracle_;
    config.registry = registry_.get();
    config.clock = &clock_;
    config.tables = tables_;
    config.fail_point = [this](FailPoint p, uint64_t ts) { return hook_ ? hook_(p, ts) : false; };
    Result<std::unique_ptr<TransactionDB>> db = TxnDB::Make(std::move(config));
    ASSERT_OK(db.status());
    db_ = std::move(db).value();

    std::unique_ptr<Transaction> init = Begin();
    ASSERT_OK(init->Set("bank", "x", "c", "old"));
    ASSERT_OK(init->Set("bank", "y", "c", "old"));
    ASSERT_OK(init->Commit());
  }

  void TearDown() override {
    hook_ = nullptr;
    if (db_ != nullptr) {
      EXPECT_OK(db_->Close());
    }
  }

  std::unique_ptr<Transaction> Begin(const TransactionOptions& o = {}) {
    Result<std::unique_ptr<Transaction>> t = db_->Begin(o);
    EXPECT_OK(t.status());
    return t.ok() ? std::move(t).value() : nullptr;
  }

  std::string Read(Transaction* t, const std::string& row) {
    Result<std::string> v = t->Get("bank", row, "c");
    if (v.status().code() == Status::Code::kNotFound) return "<none>";
    EXPECT_OK(v.status());
    return v.ok() ? *v : "<error>";
  }
  std::string ReadNew(const std::string& row) { return Read(Begin().get(), row); }

  // The lock of the transaction that started at `ts` on `row`, if any.
  std::optional<LockRecord> Lock(const std::string& row, uint64_t ts) {
    for (const Cell& c : test::CellsOf(*tables_->Get("bank"), row, kLockFamily)) {
      if (c.timestamp != ts) continue;
      LockRecord lock;
      EXPECT_OK(DecodeLock(c.value, &lock));
      return lock;
    }
    return std::nullopt;
  }
  // Milliseconds the lock has left on the fake clock (negative: expired).
  int64_t Left(const LockRecord& lock) {
    return static_cast<int64_t>(lock.wall_millis + lock.ttl_millis) -
           static_cast<int64_t>(clock_.NowMicros() / 1000);
  }
  // Waits (real time, up to 10 s) until `pred` holds; false if it never did.
  static bool WaitFor(const std::function<bool()>& pred) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!pred()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
  }

  test::ScratchDir dir_{"txn_lock_lifetime"};
  test::FakeClock clock_;
  test::CountingOracle oracle_;
  std::unique_ptr<LocalLivenessRegistry> registry_;
  std::shared_ptr<test::ModelTables> tables_;
  std::function<bool(FailPoint, uint64_t)> hook_;
  std::unique_ptr<TransactionDB> db_;
};

// A coordinator that stays three TTLs between its primary's prewrite and the
// rest of its commit: the heartbeat keeps extending the primary lock, so
// readers (one that pushes at once, one that waits first) push it rather than
// roll it back, and the commit succeeds above both of them.
TEST_F(LockLifetimeTest, HeartbeatsKeepASlowTransactionAliveAndReadersPushIt) {
  std::unique_ptr<Transaction> w = Begin();
  ASSERT_OK(w->Set("bank", "x", "c", "new"));
  ASSERT_OK(w->Set("bank", "y", "c", "new"));
  std::unique_ptr<Transaction> pusher;
  std::unique_ptr<Transaction> waiter;
  hook_ = [&](FailPoint p, uint64_t ts) {
    if (p != FailPoint::kAfterPrimaryPrewrite || ts != w->start_ts()) return false;
    for (int step = 0; step < 12; ++step) {  // 12 quarters of a TTL
      clock_.Advance(kTtlMillis * 1000 / 4);
      EXPECT_TRUE(WaitFor([&] {
        std::optional<LockRecord> lock = Lock("x", w->start_ts());
        return lock.has_value() && Left(*lock) > static_cast<int64_t>(kTtlMillis / 2);
      })) << "the heartbeat did not extend the primary lock at step " << step;
      if (step == 5) {
        pusher = Begin();
        EXPECT_EQ(Read(pusher.get(), "x"), "old");
        TransactionOptions o;
        o.lock_wait_millis = kTtlMillis / 4;  // waits on the fake clock, then pushes
        waiter = Begin(o);
        EXPECT_EQ(Read(waiter.get(), "x"), "old");
        std::optional<LockRecord> lock = Lock("x", w->start_ts());
        EXPECT_TRUE(lock.has_value()) << "a reader rolled back a live transaction";
        if (lock.has_value()) {
          EXPECT_GT(lock->min_commit_ts, waiter->start_ts());
        }
      }
    }
    return false;
  };
  ASSERT_OK(w->Commit());
  hook_ = nullptr;
  ASSERT_NE(waiter, nullptr);
  EXPECT_GT(w->commit_ts(), waiter->start_ts());
  // Both snapshots stay whole: y is old too.
  EXPECT_EQ(Read(pusher.get(), "y"), "old");
  EXPECT_EQ(Read(waiter.get(), "y"), "old");
  EXPECT_EQ(ReadNew("x"), "new");
  EXPECT_EQ(ReadNew("y"), "new");
  EXPECT_EQ(test::CountLocks(*tables_->Get("bank")), 0u);
}

// The coordinator has taken commit_ts when a younger reader pushes its
// primary lock; then the heartbeat, whose refresh fails against the pushed
// lock, takes the pushed lock as its own and refreshes it. The commit that
// follows must still take a commit_ts above the pushed min_commit_ts:
// committing below it would put the write inside the reader's snapshot after
// the reader was told to ignore it.
TEST_F(LockLifetimeTest, CommitAfterTheHeartbeatTookAPushedLockStaysAboveTheReader) {
  std::unique_ptr<Transaction> w = Begin();
  ASSERT_OK(w->Set("bank", "x", "c", "new"));
  ASSERT_OK(w->Set("bank", "y", "c", "new"));
  std::unique_ptr<Transaction> reader;
  hook_ = [&](FailPoint p, uint64_t ts) {
    if (p != FailPoint::kAfterCommitTs || ts != w->start_ts()) return false;
    reader = Begin();  // above w's commit_ts
    EXPECT_EQ(Read(reader.get(), "x"), "old");  // pushes the primary
    std::optional<LockRecord> pushed = Lock("x", w->start_ts());
    EXPECT_TRUE(pushed.has_value());
    if (!pushed.has_value()) return false;
    EXPECT_GT(pushed->min_commit_ts, reader->start_ts());
    // Half a TTL later the heartbeat refreshes the lock it has adopted.
    clock_.Advance(kTtlMillis * 1000 / 2);
    EXPECT_TRUE(WaitFor([&] {
      std::optional<LockRecord> lock = Lock("x", w->start_ts());
      return lock.has_value() && lock->ttl_millis > pushed->ttl_millis;
    })) << "the heartbeat did not refresh the pushed lock";
    return false;
  };
  ASSERT_OK(w->Commit());
  hook_ = nullptr;
  ASSERT_NE(reader, nullptr);
  EXPECT_GT(w->commit_ts(), reader->start_ts());
  EXPECT_EQ(Read(reader.get(), "y"), "old");
  EXPECT_EQ(Read(reader.get(), "x"), "old");
  EXPECT_EQ(ReadNew("y"), "new");
}

// A coordinator stopped after taking commit_ts, its primary pushed by one
// reader just before: the next reader, with the default options (no wait),
// rolls it back at once because its owner is dead, though no TTL has run out
// on the clock, and the first reader's snapshot stays whole.
TEST_F(LockLifetimeTest, ReaderRollsBackACoordinatorStoppedAfterCommitTsAtOnce) {
  std::unique_ptr<Transaction> w = Begin();
  ASSERT_OK(w->Set("bank", "x", "c", "new"));
  ASSERT_OK(w->Set("bank", "y", "c", "new"));
  std::unique_ptr<Transaction> early;
  hook_ = [&](FailPoint p, uint64_t ts) {
    if (p != FailPoint::kAfterCommitTs || ts != w->start_ts()) return false;
    early = Begin();
    EXPECT_EQ(Read(early.get(), "y"), "old");  // a secondary first: pushes the primary
    return true;                               // and the coordinator stops
  };
  Status s = w->Commit();
  hook_ = nullptr;
  ASSERT_EQ(s.code(), Status::Code::kAborted) << s.ToString();
  ASSERT_TRUE(Lock("x", w->start_ts()).has_value());
  ASSERT_TRUE(Lock("y", w->start_ts()).has_value());
  std::unique_ptr<Transaction> late = Begin();
  EXPECT_EQ(Read(late.get(), "y"), "old");
  EXPECT_EQ(Read(late.get(), "x"), "old");
  EXPECT_EQ(test::CountLocks(*tables_->Get("bank")), 0u);
  Result<TxnStatus> status =
      ReadTxnStatus(*tables_->Get("bank"), "x", "c", w->start_ts());
  ASSERT_OK(status.status());
  EXPECT_EQ(status->state, TxnStatus::State::kRolledBack);
  EXPECT_TRUE(status->has_record);
  EXPECT_EQ(Read(early.get(), "x"), "old");
}

// The heartbeat follows the shorter of the lock TTL and the liveness timeout.
TEST(HeartbeatIntervalTest, AThirdOfTheShorterLifetimeWithinBounds) {
  EXPECT_EQ(HeartbeatIntervalMicros(3000, 10'000'000), 1'000'000u);    // a third of 3 s is 1 s
  EXPECT_EQ(HeartbeatIntervalMicros(60'000, 10'000'000), 1'000'000u);  // at most a second
  EXPECT_EQ(HeartbeatIntervalMicros(3000, 600'000), 200'000u);         // the timeout is shorter
  EXPECT_EQ(HeartbeatIntervalMicros(30, 10'000'000), 10'000u);         // the TTL is shorter
  EXPECT_EQ(HeartbeatIntervalMicros(1, 1), 1000u);                     // at least 1 ms
  EXPECT_EQ(HeartbeatIntervalMicros(UINT64_MAX, UINT64_MAX), 1'000'000u);
}

// A liveness timeout much shorter than the lock TTL: a coordinator that
// stays between its prewrites and its commit for several timeouts (real
// time) is kept alive by the heartbeat, and commits.
TEST(HeartbeatIntervalTest, ShortLivenessTimeoutKeepsASlowCoordinatorAlive) {
  test::ScratchDir dir("txn_short_liveness");
  LocalLivenessRegistryOptions registry_options;
  registry_options.timeout_micros = 900'000;  // beats every 300 ms (1 s before)
  std::unique_ptr<LocalLivenessRegistry> registry;
  ASSERT_OK(LocalLivenessRegistry::Open(dir.path(), registry_options, &registry));
  auto tables = std::make_shared<test::ModelTables>();
  ASSERT_OK(tables->Create("bank"));
  test::CountingOracle oracle;
  uint64_t stop_at = 0;
  TxnDBConfig config;
  config.options.sync = false;
  config.options.one_phase_commit = false;
  config.options.lock_ttl_millis = 60'000;
  config.oracle = &oracle;
  config.registry = registry.get();
  config.tables = tables;
  config.fail_point = [&](FailPoint p, uint64_t ts) {
    if (p == FailPoint::kAfterPrimaryPrewrite && ts == stop_at) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1800));  // two timeouts
    }
    return false;
  };
  Result<std::unique_ptr<TransactionDB>> db = TxnDB::Make(std::move(config));
  ASSERT_OK(db.status());
  Result<std::unique_ptr<Transaction>> t = (*db)->Begin({});
  ASSERT_OK(t.status());
  ASSERT_OK((*t)->Set("bank", "x", "c", "1"));
  ASSERT_OK((*t)->Set("bank", "y", "c", "2"));
  stop_at = (*t)->start_ts();
  EXPECT_OK((*t)->Commit());
  EXPECT_OK((*db)->Close());
}

// A lock wait over a day is refused (a wait near 2^64 ms wrapped around to
// none at all).
TEST_F(LockLifetimeTest, LockWaitOverADayIsRefused) {
  TransactionOptions o;
  o.lock_wait_millis = TransactionOptions::kMaxLockWaitMillis;
  EXPECT_OK(db_->Begin(o).status());
  for (uint64_t wait : {TransactionOptions::kMaxLockWaitMillis + 1, UINT64_MAX}) {
    o.lock_wait_millis = wait;
    Result<std::unique_ptr<Transaction>> t = db_->Begin(o);
    EXPECT_TRUE(t.status().IsInvalidArgument()) << wait << ": " << t.status().ToString();
  }
}

// A lock TTL of 0 or over a day is refused.
TEST(HeartbeatIntervalTest, LockTtlOutOfRangeIsRefused) {
  test::ScratchDir dir("txn_ttl_range");
  std::unique_ptr<LocalLivenessRegistry> registry;
  ASSERT_OK(LocalLivenessRegistry::Open(dir.path(), {}, &registry));
  test::CountingOracle oracle;
  for (uint64_t ttl : {uint64_t{0}, TransactionDBOptions::kMaxLockTtlMillis + 1, UINT64_MAX}) {
    TxnDBConfig config;
    config.options.lock_ttl_millis = ttl;
    config.oracle = &oracle;
    config.registry = registry.get();
    config.tables = std::make_shared<test::ModelTables>();
    Result<std::unique_ptr<TransactionDB>> db = TxnDB::Make(std::move(config));
    EXPECT_TRUE(db.status().IsInvalidArgument()) << ttl << ": " << db.status().ToString();
  }
}

}  // namespace
}  // namespace strata::txn
