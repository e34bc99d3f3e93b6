// Pessimistic transactions (strata/transaction.h): GetForUpdate locks the key
// at the read and reads its newest committed value, so transactions on a hot
// key take turns instead of aborting; a wait that would close a cycle fails
// at once with kDeadlock, one that runs out with kLockWaitTimeout, and
// either lets every key the transaction held go. On an engine's tables,
// with one and with two phases.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "strata/engine.h"
#include "strata/transaction.h"
#include "txn/transaction_db.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata {
namespace {

using Mode = TransactionOptions::Mode;
using Kind = TransactionError::Kind;

class PessimisticTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    options_.sync = false;
    options_.one_phase_commit = GetParam();
    options_.pessimistic = true;
    Result<std::unique_ptr<Engine>> e = Engine::Open(dir_.Join("db"));
    ASSERT_OK(e.status());
    engine_ = std::move(e).value();
    ASSERT_OK(engine_->CreateTenant("t"));
    Result<std::shared_ptr<TransactionServices>> services =
        TransactionServices::Open(dir_.Join("services"));
    ASSERT_OK(services.status());
    Result<std::unique_ptr<TransactionDB>> db =
        TransactionDB::Open(*services, *engine_->OpenTenant("t"), options_);
    ASSERT_OK(db.status());
    db_ = std::move(db).value();
    ASSERT_OK(db_->CreateTable("bank"));
    std::unique_ptr<Transaction> t = Begin();
    ASSERT_OK(t->Set("bank", "a", "bal", "100"));
    ASSERT_OK(t->Set("bank", "b", "bal", "100"));
    ASSERT_OK(t->Commit());
  }
  void TearDown() override {
    if (db_ != nullptr) {
      EXPECT_OK(db_->Close());
    }
    if (engine_ != nullptr) {
      EXPECT_OK(engine_->Close());
    }
  }

  std::unique_ptr<Transaction> Begin(TransactionOptions o = {}) {
    Result<std::unique_ptr<Transaction>> t = db_->Begin(o);
    EXPECT_OK(t.status());
    return t.ok() ? std::move(t).value() : nullptr;
  }
  std::string Read(const std::string& row) {
    std::unique_ptr<Transaction> t = Begin();
    Result<std::string> v = t->Get("bank", row, "bal");
    return v.ok() ? *v : v.status().ToString();
  }
  txn::PessimisticLocks& Locks() { return *txn::TxnDBOf(*db_)->pessimistic_locks(); }
  void AwaitWaiting(size_t n) {
    while (Locks().waiting() != n) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

  test::ScratchDir dir_{"pessimistic"};
  TransactionDBOptions options_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<TransactionDB> db_;
};

// Moves `amount` from a to b: reads both with GetForUpdate, writes both.
Status Transfer(Transaction* t, int amount) {
  STRATA_ASSIGN_OR_RETURN(std::string a, t->GetForUpdate("bank", "a", "bal"));
  STRATA_ASSIGN_OR_RETURN(std::string b, t->GetForUpdate("bank", "b", "bal"));
  STRATA_RETURN_IF_ERROR(t->Set("bank", "a", "bal", std::to_string(std::stoi(a) - amount)));
  STRATA_RETURN_IF_ERROR(t->Set("bank", "b", "bal", std::to_string(std::stoi(b) + amount)));
  return t->Commit();
}

// Two transfers on one pair, the second begun before the first commits:
// optimistic, the second would abort (a write conflict); pessimistic, it
// waits for the first and commits on top of it.
TEST_P(PessimisticTest, TwoTransfersOnAHotPairBothCommitOneAfterTheOther) {
  std::unique_ptr<Transaction> first = Begin();
  std::unique_ptr<Transaction> second = Begin();
  ASSERT_EQ(*first->GetForUpdate("bank", "a", "bal"), "100");
  ASSERT_EQ(*first->GetForUpdate("bank", "b", "bal"), "100");
  auto done = std::async(std::launch::async, [&] { return Transfer(second.get(), 5); });
  AwaitWaiting(1);  // the second waits for a
  ASSERT_OK(first->Set("bank", "a", "bal", "90"));
  ASSERT_OK(first->Set("bank", "b", "bal", "110"));
  ASSERT_OK(first->Commit());
  EXPECT_OK(done.get());
  EXPECT_EQ(second->error().kind, Kind::kNone);
  EXPECT_GT(second->commit_ts(), first->commit_ts());
  EXPECT_EQ(Read("a"), "85");
  EXPECT_EQ(Read("b"), "115");
  EXPECT_EQ(Locks().held(), 0u);
}

// Many threads on one pair, locking it in one order: no transfer aborts and
// none is lost.
TEST_P(PessimisticTest, ConcurrentTransfersOnAHotPairNeverAbort) {
  constexpr int kThreads = 8;
  const int per_thread = test::UnderSanitizer() ? 20 : 100;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      for (int n = 0; n < per_thread; ++n) {
        std::unique_ptr<Transaction> t = Begin();
        Status s = Transfer(t.get(), 1);
        if (!s.ok()) {
          ADD_FAILURE() << s.ToString() << " (" << TransactionErrorKindName(t->error().kind) << ")";
          failures++;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(Read("a"), std::to_string(100 - kThreads * per_thread));
  EXPECT_EQ(Read("b"), std::to_string(100 + kThreads * per_thread));
}

TEST_P(PessimisticTest, ADeadlockFailsOneTransactionAtOnceAndTheOtherGoesOn) {
  TransactionOptions o;
  o.for_update_wait_millis = 60'000;  // a test that waits this long has failed
  std::unique_ptr<Transaction> one = Begin(o);
  std::unique_ptr<Transaction> two = Begin(o);
  ASSERT_EQ(*one->GetForUpdate("bank", "a", "bal"), "100");
  ASSERT_EQ(*two->GetForUpdate("bank", "b", "bal"), "100");
  auto waits =
      std::async(std::launch::async, [&] { return one->GetForUpdate("bank", "b", "bal"); });
  AwaitWaiting(1);
  const auto start = std::chrono::steady_clock::now();
  Result<std::string> closes = two->GetForUpdate("bank", "a", "bal");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  ASSERT_EQ(closes.status().code(), Status::Code::kAborted) << closes.status().ToString();
  EXPECT_EQ(two->error().kind, Kind::kDeadlock);
  EXPECT_EQ(two->error().row, "a");
  EXPECT_EQ(two->error().other_start_ts, one->start_ts());
  EXPECT_NE(closes.status().ToString().find("deadlock"), std::string::npos)
      << closes.status().ToString();
  // The one that failed is over and let b go: the other reads it and commits.
  EXPECT_EQ(two->Set("bank", "a", "bal", "0").code(), Status::Code::kInvalidArgument);
  Result<std::string> b = waits.get();
  ASSERT_OK(b.status());
  EXPECT_EQ(*b, "100");
  ASSERT_OK(one->Set("bank", "a", "bal", "99"));
  ASSERT_OK(one->Set("bank", "b", "bal", "101"));
  ASSERT_OK(one->Commit());
  EXPECT_EQ(Read("a"), "99");
  EXPECT_EQ(Locks().held(), 0u);
}

TEST_P(PessimisticTest, ALockWaitTimeoutFailsClearlyAndLeavesNothingLocked) {
  std::unique_ptr<Transaction> holder = Begin();
  ASSERT_OK(holder->GetForUpdate("bank", "a", "bal").status());
  TransactionOptions o;
  o.for_update_wait_millis = 30;
  std::unique_ptr<Transaction> waiter = Begin(o);
  ASSERT_OK(waiter->GetForUpdate("bank", "b", "bal").status());
  Result<std::string> r = waiter->GetForUpdate("bank", "a", "bal");
  ASSERT_EQ(r.status().code(), Status::Code::kAborted);
  EXPECT_EQ(waiter->error().kind, Kind::kLockWaitTimeout);
  EXPECT_EQ(waiter->error().other_start_ts, holder->start_ts());
  EXPECT_NE(r.status().ToString().find("lock wait timeout: bank/a/bal"), std::string::npos)
      << r.status().ToString();
  EXPECT_EQ(waiter->Commit().code(), Status::Code::kInvalidArgument);  // over
  // Only the holder's a is locked.
  EXPECT_EQ(Locks().held(), 1u);
  TransactionOptions at_once;
  at_once.for_update_wait_millis = 0;
  std::unique_ptr<Transaction> next = Begin(at_once);
  EXPECT_OK(next->GetForUpdate("bank", "b", "bal").status());
  ASSERT_OK(holder->Rollback());
  EXPECT_OK(next->GetForUpdate("bank", "a", "bal").status());
  next.reset();  // destroyed open: its locks go too
  EXPECT_EQ(Locks().held(), 0u);
}

// GetForUpdate reads the newest commit, even one after start_ts, and the
// commit over it goes through; other reads stay at start_ts.
TEST_P(PessimisticTest, GetForUpdateReadsTheNewestCommit) {
  std::unique_ptr<Transaction> t = Begin();
  {
    std::unique_ptr<Transaction> other = Begin();
    ASSERT_OK(other->Set("bank", "a", "bal", "70"));
    ASSERT_OK(other->Set("bank", "b", "bal", "130"));
    ASSERT_OK(other->Commit());
  }
  EXPECT_EQ(*t->GetForUpdate("bank", "a", "bal"), "70");
  EXPECT_EQ(*t->Get("bank", "a", "bal"), "70");   // locked: read at for_update_ts
  EXPECT_EQ(*t->Get("bank", "b", "bal"), "100");  // not locked: the snapshot
  ASSERT_OK(t->Set("bank", "a", "bal", "71"));
  ASSERT_OK(t->Commit());
  EXPECT_EQ(Read("a"), "71");
}

// An optimistic transaction does not wait for a pessimistic lock; its commit
// in between makes the holder's commit fail.
TEST_P(PessimisticTest, AnOptimisticCommitInBetweenAbortsTheHolder) {
  std::unique_ptr<Transaction> holder = Begin();
  ASSERT_EQ(*holder->GetForUpdate("bank", "a", "bal"), "100");
  TransactionOptions optimistic;
  optimistic.mode = Mode::kOptimistic;
  std::unique_ptr<Transaction> other = Begin(optimistic);
  ASSERT_EQ(*other->GetForUpdate("bank", "a", "bal"), "100");  // no wait
  ASSERT_OK(other->Set("bank", "a", "bal", "1"));
  ASSERT_OK(other->Commit());
  ASSERT_OK(holder->Set("bank", "a", "bal", "2"));
  Status s = holder->Commit();
  EXPECT_EQ(s.code(), Status::Code::kAborted) << s.ToString();
  EXPECT_EQ(holder->error().kind, Kind::kWriteConflict);
  EXPECT_NE(s.ToString().find("for_update_ts"), std::string::npos) << s.ToString();
  EXPECT_EQ(Read("a"), "1");
}

TEST_P(PessimisticTest, BadInputLocksNothing) {
  std::unique_ptr<Transaction> t = Begin();
  EXPECT_EQ(t->GetForUpdate("nope", "a", "bal").status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(t->GetForUpdate("bank", "", "bal").status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(Locks().held(), 0u);
  TransactionOptions o;
  o.for_update_wait_millis = TransactionOptions::kMaxLockWaitMillis + 1;
  EXPECT_EQ(db_->Begin(o).status().code(), Status::Code::kInvalidArgument);
  EXPECT_OK(t->GetForUpdate("bank", "a", "bal").status());  // still open
}

INSTANTIATE_TEST_SUITE_P(Commit, PessimisticTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? "OnePhase" : "TwoPhases";
                         });

}  // namespace
}  // namespace strata
