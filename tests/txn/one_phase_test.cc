// One-phase commits (txn/FORMAT.md, "One-phase commit"): a transaction on
// one table commits with one all-or-nothing batch and nothing else; what one
// phase cannot do (two tables, more rows than a batch, a store without the
// batch, a failed condition) goes through the two phases; a reader whose
// snapshot comes after a commit's commit_ts waits for its batch, and one
// whose snapshot comes before it does not.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "txn/local_liveness_registry.h"
#include "txn/records.h"
#include "txn/transaction_db.h"
#include "txn_test_util.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::txn {
namespace {

// Counts the writes that reach the store; CheckAndMutateAll may be turned
// off (NotSupported, as a store without it says) or held at its start.
class CountingStore final : public test::ForwardingRowStore {
 public:
  using ForwardingRowStore::ForwardingRowStore;

  Status Mutate(const WriteOptions& o, std::string_view row, const RowMutation& m) override {
    writes++;
    return ForwardingRowStore::Mutate(o, row, m);
  }
  Result<CheckAndMutateResult> CheckAndMutate(const WriteOptions& o, std::string_view row,
                                              const std::vector<Condition>& c,
                                              const RowMutation& m) override {
    writes++;
    return ForwardingRowStore::CheckAndMutate(o, row, c, m);
  }
  Result<std::vector<CheckAndMutateResult>> CheckAndMutateBatch(
      const WriteOptions& o, const std::vector<ConditionalMutation>& batch) override {
    writes++;
    return ForwardingRowStore::CheckAndMutateBatch(o, batch);
  }
  Result<std::vector<CheckAndMutateResult>> CheckAndMutateAll(
      const WriteOptions& o, const std::vector<ConditionalMutation>& batch) override {
    if (!has_all) return RowStore::CheckAndMutateAll(o, batch);
    alls++;
    if (before_all) before_all();
    return ForwardingRowStore::CheckAndMutateAll(o, batch);
  }

  std::atomic<int> writes{0};
  std::atomic<int> alls{0};
  std::atomic<bool> has_all{true};
  std::function<void()> before_all;
};

class Tables final : public TableResolver {
 public:
  Tables() {
    for (const char* name : {"bank", "other"}) {
      stores_[name] = std::make_shared<CountingStore>(
          std::shared_ptr<RowStore>(test::ModelRowStore::ForSchema(TransactionalSchema({}))));
    }
  }
  Result<std::shared_ptr<RowStore>> Resolve(std::string_view table) override {
    auto it = stores_.find(std::string(table));
    if (it == stores_.end()) return Status::NotFound("no table " + std::string(table));
    return std::shared_ptr<RowStore>(it->second);
  }
  CountingStore& operator[](const std::string& table) { return *stores_.at(table); }

 private:
  std::map<std::string, std::shared_ptr<CountingStore>> stores_;
};

class OnePhaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(LocalLivenessRegistry::Open(dir_.path(), {}, &registry_));
    options_.sync = false;
    options_.commit_secondaries_in_background = false;
    options_.one_phase_commit = true;
  }
  void Open() {
    TxnDBConfig config;
    config.options = options_;
    config.oracle = &oracle_;
    config.registry = registry_.get();
    config.tables = tables_;
    Result<std::unique_ptr<TransactionDB>> db = TxnDB::Make(std::move(config));
    ASSERT_OK(db.status());
    db_ = std::move(db).value();
  }
  std::unique_ptr<Transaction> Begin() {
    Result<std::unique_ptr<Transaction>> t = db_->Begin();
    EXPECT_OK(t.status());
    return t.ok() ? std::move(t).value() : nullptr;
  }
  std::string Read(const std::string& table, const std::string& row, const std::string& column) {
    std::unique_ptr<Transaction> t = Begin();
    Result<std::string> v = t->Get(table, row, column);
    if (v.status().IsNotFound()) return "<none>";
    EXPECT_OK(v.status());
    return v.ok() ? *v : "<error>";
  }

  test::ScratchDir dir_{"txn_one_phase"};
  test::CountingOracle oracle_;
  std::unique_ptr<LocalLivenessRegistry> registry_;
  std::shared_ptr<Tables> tables_ = std::make_shared<Tables>();
  TransactionDBOptions options_;
  std::unique_ptr<TransactionDB> db_;
};

TEST_F(OnePhaseTest, OneTableCommitsWithOneBatchAndNothingElse) {
  Open();
  std::unique_ptr<Transaction> seed = Begin();
  ASSERT_OK(seed->Set("bank", "alice", "bal", "100"));
  ASSERT_OK(seed->Set("bank", "bob", "bal", "50"));
  ASSERT_OK(seed->Set("bank", "bob", "note", std::string(200, 'n')));  // not inline: data
  ASSERT_OK(seed->Commit());
  EXPECT_EQ(tables_->operator[]("bank").alls.load(), 1);
  EXPECT_EQ(tables_->operator[]("bank").writes.load(), 0);

  std::unique_ptr<Transaction> t = Begin();
  EXPECT_EQ(*t->GetForUpdate("bank", "alice", "bal"), "100");
  ASSERT_OK(t->Set("bank", "bob", "bal", "150"));
  ASSERT_OK(t->Erase("bank", "bob", "note"));
  ASSERT_OK(t->Commit());
  EXPECT_EQ(tables_->operator[]("bank").alls.load(), 2);
  EXPECT_EQ(tables_->operator[]("bank").writes.load(), 0);
  EXPECT_GT(t->commit_ts(), t->start_ts());

  EXPECT_EQ(Read("bank", "alice", "bal"), "100");
  EXPECT_EQ(Read("bank", "bob", "bal"), "150");
  EXPECT_EQ(Read("bank", "bob", "note"), "<none>");
  // Commit records at commit_ts naming start_ts, and no lock ever written.
  EXPECT_EQ(test::CountLocks(tables_->operator[]("bank")), 0u);
  const std::vector<Cell> writes =
      test::CellsOf(tables_->operator[]("bank"), "alice", kWriteFamily);
  ASSERT_EQ(writes.size(), 2u);
  WriteRecord lock_record;
  ASSERT_OK(DecodeWrite(writes[0].value, &lock_record));
  EXPECT_EQ(writes[0].timestamp, t->commit_ts());
  EXPECT_EQ(lock_record.kind, WriteKind::kLock);
  EXPECT_EQ(lock_record.start_ts, t->start_ts());
}

TEST_F(OnePhaseTest, WhatOnePhaseCannotDoTakesTwo) {
  options_.max_batch_rows = 2;
  Open();
  CountingStore& bank = (*tables_)["bank"];
  // Two tables.
  std::unique_ptr<Transaction> t = Begin();
  ASSERT_OK(t->Set("bank", "a", "bal", "1"));
  ASSERT_OK(t->Set("other", "a", "bal", "2"));
  ASSERT_OK(t->Commit());
  EXPECT_EQ(bank.alls.load(), 0);
  EXPECT_GT(bank.writes.load(), 0);
  // More rows than a batch.
  bank.writes = 0;
  t = Begin();
  for (const char* row : {"a", "b", "c"}) ASSERT_OK(t->Set("bank", row, "bal", "3"));
  ASSERT_OK(t->Commit());
  EXPECT_EQ(bank.alls.load(), 0);
  EXPECT_GT(bank.writes.load(), 0);
  // A store without the all-or-nothing batch.
  bank.has_all = false;
  bank.writes = 0;
  t = Begin();
  ASSERT_OK(t->Set("bank", "a", "bal", "4"));
  ASSERT_OK(t->Commit());
  EXPECT_GT(bank.writes.load(), 0);
  EXPECT_EQ(Read("bank", "a", "bal"), "4");
  EXPECT_EQ(Read("other", "a", "bal"), "2");
  EXPECT_EQ(Read("bank", "c", "bal"), "3");
  EXPECT_EQ(test::CountLocks(bank), 0u);
}

// A key committed after this transaction's start_ts fails the batch's
// conditions; nothing is written by it, and the two phases report the
// write conflict.
TEST_F(OnePhaseTest, AConflictIsReportedAsInTwoPhases) {
  Open();
  std::unique_ptr<Transaction> older = Begin();
  std::unique_ptr<Transaction> newer = Begin();
  ASSERT_OK(newer->Set("bank", "k", "c", "newer"));
  ASSERT_OK(newer->Commit());
  ASSERT_OK(older->Set("bank", "k", "c", "older"));
  ASSERT_OK(older->Set("bank", "j", "c", "older"));
  Status s = older->Commit();
  EXPECT_TRUE(s.IsAborted()) << s.ToString();
  EXPECT_EQ(older->error().kind, TransactionError::Kind::kWriteConflict);
  EXPECT_EQ(Read("bank", "k", "c"), "newer");
  EXPECT_EQ(Read("bank", "j", "c"), "<none>");  // all or nothing
}

// The batch is held between the commit's commit_ts and its write. A reader
// whose start_ts came after that commit_ts waits and sees the commit (a Get
// and a Scan); one whose start_ts came before does not wait and sees the
// value before it.
TEST_F(OnePhaseTest, AReaderAfterCommitTsWaitsForTheBatch) {
  Open();
  std::unique_ptr<Transaction> seed = Begin();
  ASSERT_OK(seed->Set("bank", "k", "c", "old"));
  ASSERT_OK(seed->Commit());
  std::unique_ptr<Transaction> before = Begin();

  std::mutex mu;
  std::condition_variable cv;
  bool in_batch = false, go = false;
  (*tables_)["bank"].before_all = [&] {
    std::unique_lock<std::mutex> l(mu);
    in_batch = true;
    cv.notify_all();
    cv.wait(l, [&] { return go; });
  };
  std::unique_ptr<Transaction> writer = Begin();
  ASSERT_OK(writer->Set("bank", "k", "c", "new"));
  std::thread commit([&] { EXPECT_OK(writer->Commit()); });
  {
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return in_batch; });
  }
  // Held in the batch: commit_ts is taken and recorded on the latches.
  EXPECT_EQ(*before->Get("bank", "k", "c"), "old");
  std::unique_ptr<Transaction> after = Begin();
  std::unique_ptr<Transaction> scanner = Begin();
  std::atomic<bool> got{false};
  auto get = std::async(std::launch::async, [&] {
    Result<std::string> v = after->Get("bank", "k", "c");
    got = true;
    return v.ok() ? *v : v.status().ToString();
  });
  auto scan = std::async(std::launch::async, [&] {
    auto it = scanner->Scan("bank", "", "", {"c"});
    if (!it.ok()) return it.status().ToString();
    return (*it)->Valid() ? std::string((*it)->value()) : std::string("<empty>");
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(got.load()) << "the reader did not wait for the batch";
  {
    std::lock_guard<std::mutex> l(mu);
    go = true;
    cv.notify_all();
  }
  commit.join();
  EXPECT_EQ(get.get(), "new");
  EXPECT_EQ(scan.get(), "new");
  EXPECT_GT(after->start_ts(), writer->commit_ts());
  EXPECT_LT(before->start_ts(), writer->commit_ts());
}

}  // namespace
}  // namespace strata::txn
