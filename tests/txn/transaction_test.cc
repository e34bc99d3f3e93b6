// Transactions on in-memory stores: the paper's bank example cell by cell,
// snapshot isolation, write skew with and without GetForUpdate, priority
// between writers, coordinators stopped at every fail point, and the
// idempotence of prewrite and commit.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "txn/lock_resolver.h"
#include "txn/records.h"
#include "txn/transaction_db.h"
#include "txn_test_util.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::txn {
namespace {

using test::CellsOf;
using test::CountLocks;

// A store that forwards to another, remembers every write it was sent
// (Mutate, CheckAndMutate, each row of a batch) and whether it applied, and
// can fail a CheckAndMutate after applying it (an unknown outcome).
class RecordingStore final : public test::ForwardingRowStore {
 public:
  explicit RecordingStore(std::shared_ptr<RowStore> base) : ForwardingRowStore(std::move(base)) {}

  struct Call {
    std::string row;
    std::vector<Condition> conditions;
    RowMutation mutation;
    bool applied = false;
  };

  Status Mutate(const WriteOptions& o, std::string_view row, const RowMutation& m) override {
    Status s = base().Mutate(o, row, m);
    std::lock_guard<std::mutex> l(mu_);
    calls_.push_back(Call{std::string(row), {}, m, s.ok()});
    return s;
  }
  Result<CheckAndMutateResult> CheckAndMutate(const WriteOptions& o, std::string_view row,
                                              const std::vector<Condition>& c,
                                              const RowMutation& m) override {
    if (before_check_) before_check_(row, c);
    Result<CheckAndMutateResult> r = base().CheckAndMutate(o, row, c, m);
    {
      std::lock_guard<std::mutex> l(mu_);
      calls_.push_back(Call{std::string(row), c, m, r.ok() && r->applied});
    }
    if (fail_after_apply_.exchange(false)) return Status::IOError("injected: outcome unknown");
    return r;
  }
  Result<std::vector<CheckAndMutateResult>> CheckAndMutateBatch(
      const WriteOptions& o, const std::vector<ConditionalMutation>& batch) override {
    return Record(batch, base().CheckAndMutateBatch(o, batch));
  }
  Result<std::vector<CheckAndMutateResult>> CheckAndMutateAll(
      const WriteOptions& o, const std::vector<ConditionalMutation>& batch) override {
    return Record(batch, base().CheckAndMutateAll(o, batch));
  }
  Result<std::vector<CheckAndMutateResult>> Record(const std::vector<ConditionalMutation>& batch,
                                                   Result<std::vector<CheckAndMutateResult>> r) {
    {
      std::lock_guard<std::mutex> l(mu_);
      for (size_t i = 0; i < batch.size(); i++) {
        const ConditionalMutation& cm = batch[i];
        calls_.push_back(Call{cm.row, cm.conditions, cm.mutation, r.ok() && (*r)[i].applied});
      }
    }
    if (fail_after_apply_.exchange(false)) return Status::IOError("injected: outcome unknown");
    return r;
  }

  Result<std::vector<Cell>> ReadRow(const ReadOptions& o, std::string_view row,
                                    const RowFilter& f) const override {
    if (fail_next_read_.exchange(false)) return Status::IOError("injected: read failed");
    return base().ReadRow(o, row, f);
  }

  void FailNextAfterApply() { fail_after_apply_ = true; }
  void FailNextRead() { fail_next_read_ = true; }
  // Runs before each single-row CheckAndMutate is forwarded (not thread-safe:
  // set it while no transaction runs).
  void BeforeCheckAndMutate(
      std::function<void(std::string_view, const std::vector<Condition>&)> f) {
    before_check_ = std::move(f);
  }
  std::vector<Call> calls() {
    std::lock_guard<std::mutex> l(mu_);
    return calls_;
  }

 private:
  std::mutex mu_;
  std::vector<Call> calls_;
  std::atomic<bool> fail_after_apply_{false};
  mutable std::atomic<bool> fail_next_read_{false};
  std::function<void(std::string_view, const std::vector<Condition>&)> before_check_;
};

// Tables whose stores are RecordingStores over ModelRowStores.
class RecordingTables final : public TableResolver {
 public:
  Result<std::shared_ptr<RowStore>> Resolve(std::string_view table) override {
    std::lock_guard<std::mutex> l(mu_);
    auto it = stores_.find(std::string(table));
    if (it == stores_.end()) return Status::NotFound("no table " + std::string(table));
    return std::shared_ptr<RowStore>(it->second);
  }
  void Create(const std::string& table) {
    std::lock_guard<std::mutex> l(mu_);
    stores_[table] = std::make_shared<RecordingStore>(
        std::shared_ptr<RowStore>(test::ModelRowStore::ForSchema(TransactionalSchema({}))));
  }
  RecordingStore* Get(const std::string& table) {
    std::lock_guard<std::mutex> l(mu_);
    return stores_.at(table).get();
  }
  void Drop(const std::string& table) {
    std::lock_guard<std::mutex> l(mu_);
    stores_.erase(table);
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<RecordingStore>> stores_;
};

class TransactionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LocalLivenessRegistryOptions ro;
    ASSERT_OK(LocalLivenessRegistry::Open(dir_.path(), ro, &registry_));
    tables_ = std::make_shared<RecordingTables>();
    tables_->Create("bank");
    tables_->Create("other");
    options_.sync = false;
    options_.commit_secondaries_in_background = false;
    test::SetCommitModeFromEnvironment(&options_);
  }

  void Open() {
    TxnDBConfig config;
    config.options = options_;
    config.oracle = &oracle_;
    config.registry = registry_.get();
    config.tables = tables_;
    config.fail_point = [this](FailPoint p, uint64_t ts) { return hook_ ? hook_(p, ts) : false; };
    Result<std::unique_ptr<TransactionDB>> db = TxnDB::Make(std::move(config));
    ASSERT_OK(db.status());
    db_ = std::move(db).value();
  }

  std::unique_ptr<Transaction> Begin(const TransactionOptions& o = {}) {
    Result<std::unique_ptr<Transaction>> t = db_->Begin(o);
    EXPECT_OK(t.status());
    return t.ok() ? std::move(t).value() : nullptr;
  }

  // Commits `younger`, and `older` right after younger's primary is
  // prewritten, which wounds younger; returns younger's Commit.
  Status CommitWoundedBy(Transaction* younger, Transaction* older) {
    hook_ = [=](FailPoint p, uint64_t ts) {
      if (p == FailPoint::kAfterPrimaryPrewrite && ts == younger->start_ts()) {
        EXPECT_OK(older->Commit());
      }
      return false;
    };
    Status s = younger->Commit();
    hook_ = nullptr;
    return s;
  }

  // The committed value of (table, row, column) as a new transaction reads
  // it; "<none>" when there is none.
  std::string Read(const std::string& table, const std::string& row, const std::string& column) {
    std::unique_ptr<Transaction> t = Begin();
    Result<std::string> v = t->Get(table, row, column);
    if (v.status().code() == Status::Code::kNotFound) return "<none>";
    EXPECT_OK(v.status());
    return v.ok() ? *v : "<error>";
  }

  // Commits `value` to every (row, column) of the bank table in one transaction.
  void Seed(const std::vector<std::pair<std::string, std::string>>& keys,
            const std::string& value) {
    std::unique_ptr<Transaction> t = Begin();
    for (const auto& [row, column] : keys) ASSERT_OK(t->Set("bank", row, column, value));
    ASSERT_OK(t->Commit());
  }

  // Two doctors on call: each reads that the other is on call (by Get or by
  // GetForUpdate) and goes off call.
  void BothGoOffCall(Transaction* a, Transaction* b, bool for_update) {
    auto read = [&](Transaction* t, const char* row) {
      return for_update ? t->GetForUpdate("bank", row, "on_call") : t->Get("bank", row, "on_call");
    };
    ASSERT_EQ(*read(a, "bob"), "1");
    ASSERT_EQ(*read(b, "alice"), "1");
    ASSERT_OK(a->Set("bank", "alice", "on_call", "0"));
    ASSERT_OK(b->Set("bank", "bob", "on_call", "0"));
  }

  RowStore& Store(const std::string& table) { return *tables_->Get(table); }

  LockRecord LockAt(const std::string& table, const std::string& row, uint64_t ts) {
    for (const Cell& c : CellsOf(Store(table), row, kLockFamily)) {
      if (c.timestamp == ts) {
        LockRecord lock;
        EXPECT_OK(DecodeLock(c.value, &lock));
        return lock;
      }
    }
    ADD_FAILURE() << "no lock at " << ts << " in " << row;
    return LockRecord();
  }

  test::ScratchDir dir_{"txn"};
  test::CountingOracle oracle_;
  std::unique_ptr<LocalLivenessRegistry> registry_;
  std::shared_ptr<RecordingTables> tables_;
  TransactionDBOptions options_;
  std::function<bool(FailPoint, uint64_t)> hook_;
  std::unique_ptr<TransactionDB> db_;
};

// Cells of one column as (timestamp, value) pairs, newest first.
std::vector<std::pair<uint64_t, std::string>> Versions(const RowStore& store,
                                                       const std::string& row,
                                                       std::string_view family) {
  std::vector<std::pair<uint64_t, std::string>> out;
  for (const Cell& c : CellsOf(store, row, family)) out.emplace_back(c.timestamp, c.value);
  return out;
}

WriteRecord WriteAt(const RowStore& store, const std::string& row, uint64_t ts) {
  for (const Cell& c : CellsOf(store, row, kWriteFamily)) {
    if (c.timestamp == ts) {
      WriteRecord w;
      EXPECT_OK(DecodeWrite(c.value, &w));
      return w;
    }
  }
  ADD_FAILURE() << "no write record at " << ts << " in " << row;
  return WriteRecord();
}

// The bank example of the Percolator paper (its Figure 4): Bob has $10 and
// Joe $2; a transaction with start_ts 7 moves $7 from Bob to Joe and commits
// at 8. The cells are checked after every step against the figure.
// A Get of a missing megabyte-long column, or of a table that does not
// exist, answers with a short message, however long what it names.
TEST_F(TransactionTest, ErrorsEchoAShortPrefixOfLongInput) {
  Open();
  const std::string huge(1 << 20, 'c');
  std::unique_ptr<Transaction> t = Begin();
  Result<std::string> missing = t->Get("bank", "row", huge);
  EXPECT_TRUE(missing.status().IsNotFound()) << missing.status().ToString().substr(0, 200);
  EXPECT_LT(missing.status().ToString().size(), 400u);
  Result<std::string> no_table = t->Get(huge, "row", "c");
  EXPECT_FALSE(no_table.ok());
  EXPECT_LT(no_table.status().ToString().size(), 600u)
      << no_table.status().ToString().substr(0, 300);
}

TEST_F(TransactionTest, PaperBankExampleCellByCell) {
  options_.one_phase_commit = false;       // what it checks happens between the two phases
  options_.max_inline_value = 0;           // values live in `data`, as in the paper
  options_.prewrite_primary_alone = true;  // the primary first, as in the figure
  Open();
  RowStore& bank = Store("bank");

  // Initial state: data at 5, commit records at 6.
  oracle_.SetNext(5);
  {
    std::unique_ptr<Transaction> t = Begin();
    ASSERT_EQ(t->start_ts(), 5u);
    ASSERT_OK(t->Set("bank", "Bob", "bal", "10"));
    ASSERT_OK(t->Set("bank", "Joe", "bal", "2"));
    ASSERT_OK(t->Commit());
    ASSERT_EQ(t->commit_ts(), 6u);
  }
  using V = std::vector<std::pair<uint64_t, std::string>>;
  EXPECT_EQ(Versions(bank, "Bob", kDataFamily), (V{{5, "10"}}));
  EXPECT_EQ(Versions(bank, "Joe", kDataFamily), (V{{5, "2"}}));
  EXPECT_EQ(WriteAt(bank, "Bob", 6).start_ts, 5u);
  EXPECT_EQ(WriteAt(bank, "Joe", 6).start_ts, 5u);
  EXPECT_TRUE(CellsOf(bank, "Bob", kLockFamily).empty());

  std::vector<FailPoint> seen;
  hook_ = [&](FailPoint p, uint64_t ts) {
    EXPECT_EQ(ts, 7u);
    seen.push_back(p);
    switch (p) {
      case FailPoint::kAfterPrimaryPrewrite: {
        // (b) Bob's row: a primary lock and the new balance at 7.
        EXPECT_EQ(Versions(bank, "Bob", kDataFamily), (V{{7, "3"}, {5, "10"}}));
        LockRecord lock = LockAt("bank", "Bob", 7);
        EXPECT_EQ(lock.primary_row, "Bob");
        EXPECT_EQ(lock.primary_column, "bal");
        EXPECT_EQ(lock.kind, MutationKind::kPut);
        EXPECT_TRUE(CellsOf(bank, "Joe", kLockFamily).empty());
        EXPECT_EQ(Versions(bank, "Joe", kDataFamily), (V{{5, "2"}}));
        break;
      }
      case FailPoint::kAfterSecondaryBatch: {
        // (c) Joe's row: a lock pointing at Bob's primary, balance 9 at 7.
        EXPECT_EQ(Versions(bank, "Joe", kDataFamily), (V{{7, "9"}, {5, "2"}}));
        LockRecord lock = LockAt("bank", "Joe", 7);
        EXPECT_EQ(lock.primary_table, "bank");
        EXPECT_EQ(lock.primary_row, "Bob");
        EXPECT_EQ(lock.primary_column, "bal");
        break;
      }
      case FailPoint::kAfterCommitTs:
        EXPECT_EQ(Versions(bank, "Bob", kWriteFamily).size(), 1u);
        break;
      case FailPoint::kAfterPrimaryCommit: {
        // (d) The commit point: Bob's lock is gone, a write record at 8
        // points at the data at 7. Joe is still locked.
        EXPECT_TRUE(CellsOf(bank, "Bob", kLockFamily).empty());
        WriteRecord w = WriteAt(bank, "Bob", 8);
        EXPECT_EQ(w.kind, WriteKind::kPut);
        EXPECT_EQ(w.start_ts, 7u);
        EXPECT_FALSE(w.has_inline_value);
        EXPECT_EQ(LockAt("bank", "Joe", 7).start_ts, 7u);
        EXPECT_EQ(Versions(bank, "Joe", kWriteFamily).size(), 1u);
        break;
      }
      case FailPoint::kAfterSecondaryCommit: {
        // (e) Joe is committed too.
        EXPECT_TRUE(CellsOf(bank, "Joe", kLockFamily).empty());
        EXPECT_EQ(WriteAt(bank, "Joe", 8).start_ts, 7u);
        break;
      }
    }
    return false;
  };
  {
    std::unique_ptr<Transaction> t = Begin();
    ASSERT_EQ(t->start_ts(), 7u);
    ASSERT_EQ(*t->Get("bank", "Bob", "bal"), "10");
    ASSERT_EQ(*t->Get("bank", "Joe", "bal"), "2");
    ASSERT_OK(t->Set("bank", "Bob", "bal", "3"));
    ASSERT_OK(t->Set("bank", "Joe", "bal", "9"));
    ASSERT_OK(t->Commit());
    EXPECT_EQ(t->commit_ts(), 8u);
  }
  EXPECT_EQ(seen, (std::vector<FailPoint>{FailPoint::kAfterPrimaryPrewrite,
                                          FailPoint::kAfterSecondaryBatch,
                                          FailPoint::kAfterCommitTs, FailPoint::kAfterPrimaryCommit,
                                          FailPoint::kAfterSecondaryCommit}));
  hook_ = nullptr;
  EXPECT_EQ(Read("bank", "Bob", "bal"), "3");
  EXPECT_EQ(Read("bank", "Joe", "bal"), "9");
  EXPECT_EQ(Versions(bank, "Bob", kDataFamily), (V{{7, "3"}, {5, "10"}}));
}

TEST_F(TransactionTest, ShortValuesAreInlineInTheWriteRecord) {
  options_.max_inline_value = 4;
  Open();
  std::unique_ptr<Transaction> t = Begin();
  ASSERT_OK(t->Set("bank", "a", "c", "1234"));
  ASSERT_OK(t->Set("bank", "b", "c", "12345"));
  ASSERT_OK(t->Commit());
  EXPECT_TRUE(CellsOf(Store("bank"), "a", kDataFamily).empty());
  EXPECT_TRUE(WriteAt(Store("bank"), "a", t->commit_ts()).has_inline_value);
  EXPECT_EQ(CellsOf(Store("bank"), "b", kDataFamily).size(), 1u);
  EXPECT_FALSE(WriteAt(Store("bank"), "b", t->commit_ts()).has_inline_value);
  EXPECT_EQ(Read("bank", "a", "c"), "1234");
  EXPECT_EQ(Read("bank", "b", "c"), "12345");
}

// max_inline_value 0 keeps every value in `data`, the empty one too.
TEST_F(TransactionTest, NoInlineValuesAtZeroNotEvenEmptyOnes) {
  options_.max_inline_value = 0;
  Open();
  std::unique_ptr<Transaction> t = Begin();
  ASSERT_OK(t->Set("bank", "a", "c", ""));
  ASSERT_OK(t->Commit());
  EXPECT_EQ(CellsOf(Store("bank"), "a", kDataFamily).size(), 1u);
  EXPECT_FALSE(WriteAt(Store("bank"), "a", t->commit_ts()).has_inline_value);
  EXPECT_EQ(Read("bank", "a", "c"), "");
}

TEST_F(TransactionTest, ReadSeesExactlyTheCommitsBeforeItsStart) {
  Open();
  std::unique_ptr<Transaction> w1 = Begin();
  ASSERT_OK(w1->Set("bank", "x", "c", "1"));
  ASSERT_OK(w1->Commit());
  std::unique_ptr<Transaction> reader = Begin();  // after w1's commit
  std::unique_ptr<Transaction> w2 = Begin();
  ASSERT_OK(w2->Set("bank", "x", "c", "2"));
  ASSERT_OK(w2->Erase("bank", "y", "c"));
  ASSERT_OK(w2->Commit());
  EXPECT_EQ(*reader->Get("bank", "x", "c"), "1");
  EXPECT_EQ(reader->Get("bank", "y", "c").status().code(), Status::Code::kNotFound);
  EXPECT_EQ(Read("bank", "x", "c"), "2");
  // Own writes are visible to the writer before commit, and only to it.
  std::unique_ptr<Transaction> w3 = Begin();
  ASSERT_OK(w3->Set("bank", "x", "c", "3"));
  EXPECT_EQ(*w3->Get("bank", "x", "c"), "3");
  ASSERT_OK(w3->Erase("bank", "x", "c"));
  EXPECT_EQ(w3->Get("bank", "x", "c").status().code(), Status::Code::kNotFound);
  EXPECT_EQ(Read("bank", "x", "c"), "2");
  ASSERT_OK(w3->Commit());
  EXPECT_EQ(Read("bank", "x", "c"), "<none>");
}

TEST_F(TransactionTest, OfTwoConcurrentWritersOnlyOneCommits) {
  Open();
  std::unique_ptr<Transaction> a = Begin();
  std::unique_ptr<Transaction> b = Begin();
  ASSERT_OK(a->Set("bank", "x", "c", "a"));
  ASSERT_OK(b->Set("bank", "x", "c", "b"));
  ASSERT_OK(a->Commit());
  Status s = b->Commit();
  EXPECT_EQ(s.code(), Status::Code::kAborted) << s.ToString();
  EXPECT_EQ(b->error().kind, TransactionError::Kind::kWriteConflict);
  EXPECT_EQ(b->error().row, "x");
  EXPECT_EQ(b->error().other_start_ts, a->start_ts());
  EXPECT_EQ(b->error().other_commit_ts, a->commit_ts());
  EXPECT_EQ(Read("bank", "x", "c"), "a");
  EXPECT_EQ(CountLocks(Store("bank")), 0u);
}

// A read allowed to wait longer than its rounds of backoff add up to (about
// 1.3 s) waits out the whole wait, then pushes the live writer's lock and
// reads on; it does not give up with kKeyLocked.
TEST_F(TransactionTest, ReadWaitsItsWholeLockWaitThenPushes) {
  options_.one_phase_commit = false;  // what it checks happens between the two phases
  Open();
  Seed({{"x", "c"}}, "seed");
  std::unique_ptr<Transaction> writer = Begin();
  ASSERT_OK(writer->Set("bank", "x", "c", "new"));
  TransactionOptions o;
  o.lock_wait_millis = 1600;
  std::unique_ptr<Transaction> reader = Begin(o);
  hook_ = [&](FailPoint p, uint64_t ts) {
    if (p == FailPoint::kAfterPrimaryPrewrite && ts == writer->start_ts()) {
      const auto start = std::chrono::steady_clock::now();
      Result<std::string> v = reader->Get("bank", "x", "c");
      EXPECT_OK(v.status());
      if (v.ok()) {
        EXPECT_EQ(*v, "seed");
      }
      EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1600));
    }
    return false;
  };
  ASSERT_OK(writer->Commit());
  hook_ = nullptr;
  EXPECT_GT(writer->commit_ts(), reader->start_ts());
  EXPECT_EQ(Read("bank", "x", "c"), "new");
}

// A writer whose first batch waits for an older lock keeps its primary's
// lock alive meanwhile: its heartbeat starts when the primary is written,
// not when the batch is done. A reader that comes after several TTLs pushes
// the lock instead of rolling it back, and the writer commits once the older
// coordinator is gone.
TEST_F(TransactionTest, PrimaryStaysAliveWhileItsBatchWaitsForAnOlderLock) {
  options_.one_phase_commit = false;  // what it checks happens between the two phases
  options_.lock_ttl_millis = 600;  // heartbeats every 200 ms
  Open();
  Seed({{"a-p", "c"}, {"k", "c"}}, "seed");
  std::unique_ptr<Transaction> older = Begin();
  TransactionOptions waits;
  waits.lock_wait_millis = 10'000;
  std::unique_ptr<Transaction> writer = Begin(waits);
  ASSERT_OK(older->Set("bank", "k", "c", "older"));
  ASSERT_OK(writer->Set("bank", "a-p", "c", "new"));  // the primary, batched with k
  ASSERT_OK(writer->Set("bank", "k", "c", "new"));
  std::atomic<bool> older_paused{false}, release_older{false};
  hook_ = [&](FailPoint p, uint64_t ts) {
    if (p != FailPoint::kAfterPrimaryPrewrite || ts != older->start_ts()) return false;
    older_paused = true;
    while (!release_older) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return true;  // the older coordinator stops, as if its process died
  };
  std::thread older_thread([&] { EXPECT_FALSE(older->Commit().ok()); });
  while (!older_paused) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  Status writer_status;
  std::thread writer_thread([&] { writer_status = writer->Commit(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // 2.5 TTLs
  std::unique_ptr<Transaction> reader = Begin();
  Result<std::string> v = reader->Get("bank", "a-p", "c");
  ASSERT_OK(v.status());
  EXPECT_EQ(*v, "seed");
  release_older = true;
  older_thread.join();
  writer_thread.join();
  hook_ = nullptr;
  EXPECT_OK(writer_status) << TransactionErrorKindName(writer->error().kind);
  EXPECT_EQ(Read("bank", "a-p", "c"), "new");
  EXPECT_EQ(Read("bank", "k", "c"), "new");
}

// A primary whose prewrite waits for an older lock longer than the TTL is
// written with the time it is written, not the time its coordinator
// registered: a reader that comes right after finds it live (and pushes
// it) instead of rolling back a transaction that is still committing.
TEST_F(TransactionTest, PrimaryWrittenAfterALongWaitHasItsWholeTtl) {
  options_.one_phase_commit = false;  // what it checks happens between the two phases
  options_.lock_ttl_millis = 600;
  Open();
  Seed({{"p", "c"}}, "seed");
  std::unique_ptr<Transaction> older = Begin();
  TransactionOptions waits;
  waits.lock_wait_millis = 10'000;
  std::unique_ptr<Transaction> writer = Begin(waits);
  ASSERT_OK(older->Set("bank", "p", "c", "older"));
  ASSERT_OK(writer->Set("bank", "p", "c", "new"));
  std::unique_ptr<Transaction> reader = Begin();
  std::atomic<bool> older_paused{false}, release_older{false};
  hook_ = [&](FailPoint p, uint64_t ts) {
    if (p != FailPoint::kAfterPrimaryPrewrite) return false;
    if (ts == older->start_ts()) {
      older_paused = true;
      while (!release_older) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      return true;  // the older coordinator stops, as if its process died
    }
    if (ts == writer->start_ts()) {
      Result<std::string> v = reader->Get("bank", "p", "c");
      EXPECT_OK(v.status());
      if (v.ok()) {
        EXPECT_EQ(*v, "seed");
      }
    }
    return false;
  };
  std::thread older_thread([&] { EXPECT_FALSE(older->Commit().ok()); });
  while (!older_paused) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  Status writer_status;
  std::thread writer_thread([&] { writer_status = writer->Commit(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // 2.5 TTLs of waiting
  release_older = true;
  older_thread.join();
  writer_thread.join();
  hook_ = nullptr;
  EXPECT_OK(writer_status) << TransactionErrorKindName(writer->error().kind);
  EXPECT_EQ(Read("bank", "p", "c"), "new");
}

// A scan iterator stays usable after its transaction rolls back (it walked
// buffered writes the rollback used to free).
TEST_F(TransactionTest, ScanIteratorOutlivesRollback) {
  Open();
  Seed({{"a", "c"}, {"c", "c"}}, "seed");
  std::unique_ptr<Transaction> t = Begin();
  ASSERT_OK(t->Set("bank", "b", "c", "mine"));
  ASSERT_OK(t->Set("bank", "d", "c", "mine"));
  Result<std::unique_ptr<TransactionIterator>> it = t->Scan("bank", "", "");
  ASSERT_OK(it.status());
  ASSERT_TRUE((*it)->Valid());
  EXPECT_EQ((*it)->row(), "a");
  ASSERT_OK(t->Rollback());
  std::vector<std::string> rows;
  for ((*it)->Next(); (*it)->Valid(); (*it)->Next()) rows.emplace_back((*it)->row());
  EXPECT_OK((*it)->status());
  EXPECT_EQ(rows, (std::vector<std::string>{"b", "c", "d"}));
  EXPECT_EQ(Read("bank", "b", "c"), "<none>");
}

// A commit that fails after its primary's row was prewritten undoes every
// key of that row, not only the primary's: no lock is left behind.
TEST_F(TransactionTest, AbortUndoesEveryKeyOfThePrimaryRow) {
  Open();
  std::unique_ptr<Transaction> t = Begin();
  std::unique_ptr<Transaction> u = Begin();
  ASSERT_OK(u->Set("bank", "r2", "x", "u"));
  ASSERT_OK(u->Commit());
  ASSERT_OK(t->Set("bank", "r1", "a", "t"));  // the primary's row, with b
  ASSERT_OK(t->Set("bank", "r1", "b", "t"));
  ASSERT_OK(t->Set("bank", "r2", "x", "t"));  // conflicts with u's commit
  EXPECT_FALSE(t->Commit().ok());
  EXPECT_EQ(t->error().kind, TransactionError::Kind::kWriteConflict);
  EXPECT_EQ(CountLocks(Store("bank")), 0u);
  EXPECT_EQ(Read("bank", "r1", "b"), "<none>");
}

// A commit that fails while resolving a lock it met says why in error():
// a store error there is kStorage, not a failure with no kind.
TEST_F(TransactionTest, StoreErrorWhileResolvingALockIsKStorage) {
  options_.one_phase_commit = false;  // what it checks happens between the two phases
  Open();
  std::unique_ptr<Transaction> older = Begin();
  std::unique_ptr<Transaction> younger = Begin();
  ASSERT_OK(older->Set("bank", "x", "c", "old"));
  ASSERT_OK(younger->Set("bank", "x", "c", "young"));
  hook_ = [&](FailPoint p, uint64_t ts) {
    return p == FailPoint::kAfterPrimaryPrewrite && ts == older->start_ts();
  };
  EXPECT_FALSE(older->Commit().ok());  // stops, leaving its lock
  hook_ = nullptr;
  tables_->Get("bank")->FailNextRead();  // the resolver's read of older's primary
  Status s = younger->Commit();
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_EQ(younger->error().kind, TransactionError::Kind::kStorage);
  EXPECT_EQ(younger->error().row, "x");
}

// A lock whose primary's table is gone cannot be resolved: reads of its
// key fail with an error that says so, never NotFound, which would pass for
// "no value" and hide the value committed below the lock.
TEST_F(TransactionTest, LockWhosePrimaryTableIsGoneIsNotReadAsNoValue) {
  options_.one_phase_commit = false;  // what it checks happens between the two phases
  Open();
  {
    std::unique_ptr<Transaction> t = Begin();
    ASSERT_OK(t->Set("other", "s", "c", "before"));
    ASSERT_OK(t->Commit());
  }
  std::unique_ptr<Transaction> writer = Begin();
  ASSERT_OK(writer->Set("bank", "p", "c", "new"));  // the primary: "bank" sorts first
  ASSERT_OK(writer->Set("other", "s", "c", "new"));
  hook_ = [&](FailPoint p, uint64_t ts) {
    return p == FailPoint::kAfterSecondaryBatch && ts == writer->start_ts();
  };
  EXPECT_FALSE(writer->Commit().ok());  // stops with both keys locked
  hook_ = nullptr;
  tables_->Drop("bank");

  std::unique_ptr<Transaction> reader = Begin();
  Result<std::string> v = reader->Get("other", "s", "c");
  EXPECT_EQ(v.status().code(), Status::Code::kFailedPrecondition) << v.status().ToString();
  EXPECT_NE(v.status().ToString().find("bank"), std::string::npos) << v.status().ToString();
  Result<std::vector<std::optional<std::string>>> batch = reader->BatchGet("other", {{"s", "c"}});
  EXPECT_EQ(batch.status().code(), Status::Code::kFailedPrecondition);
  Result<std::string> locked = reader->GetForUpdate("other", "s", "c");
  EXPECT_EQ(locked.status().code(), Status::Code::kFailedPrecondition);
}

TEST_F(TransactionTest, YoungerWriterMeetingALiveOlderLockAbortsItself) {
  options_.one_phase_commit = false;  // what it checks happens between the two phases
  Open();
  std::unique_ptr<Transaction> older = Begin();
  std::unique_ptr<Transaction> younger = Begin();
  ASSERT_OK(older->Set("bank", "x", "c", "old"));
  ASSERT_OK(younger->Set("bank", "x", "c", "young"));
  // The older one is between prewrite and commit when the younger prewrites.
  hook_ = [&](FailPoint p, uint64_t ts) {
    if (p == FailPoint::kAfterPrimaryPrewrite && ts == older->start_ts()) {
      Status s = younger->Commit();
      EXPECT_EQ(s.code(), Status::Code::kAborted);
      EXPECT_EQ(younger->error().kind, TransactionError::Kind::kKeyLocked);
      EXPECT_EQ(younger->error().other_start_ts, older->start_ts());
    }
    return false;
  };
  ASSERT_OK(older->Commit());
  EXPECT_EQ(Read("bank", "x", "c"), "old");
}

TEST_F(TransactionTest, OlderWriterRollsBackAYoungerLock) {
  options_.one_phase_commit = false;  // what it checks happens between the two phases
  Open();
  std::unique_ptr<Transaction> older = Begin();
  std::unique_ptr<Transaction> younger = Begin();
  ASSERT_OK(older->Set("bank", "x", "c", "old"));
  ASSERT_OK(younger->Set("bank", "x", "c", "young"));
  ASSERT_OK(younger->Set("bank", "y", "c", "young"));
  Status s = CommitWoundedBy(younger.get(), older.get());
  EXPECT_EQ(s.code(), Status::Code::kAborted) << s.ToString();
  EXPECT_EQ(younger->error().kind, TransactionError::Kind::kAbortedByOlder);
  EXPECT_EQ(younger->error().other_start_ts, older->start_ts());
  EXPECT_EQ(Read("bank", "x", "c"), "old");
  EXPECT_EQ(Read("bank", "y", "c"), "<none>");
  EXPECT_EQ(CountLocks(Store("bank")), 0u);
}

// An older writer that wounded a younger one prewrites around the younger
// one's rollback record; the younger coordinator's own undo then rewrites
// that record (rolled_back_by 0 instead of the older start_ts). The older
// writer takes the new bytes in place of the old and commits, rather than
// asking for both versions of one cell until it gives up.
TEST_F(TransactionTest, OlderWriterFollowsARollbackRecordItsVictimRewrote) {
  options_.one_phase_commit = false;  // what it checks happens between the two phases
  Open();
  std::unique_ptr<Transaction> older = Begin();
  std::unique_ptr<Transaction> younger = Begin();
  const uint64_t y = younger->start_ts();
  ASSERT_OK(older->Set("bank", "a-op", "c", "old"));
  ASSERT_OK(older->Set("bank", "k", "c", "old"));
  ASSERT_OK(younger->Set("bank", "a-yp", "c", "young"));
  ASSERT_OK(younger->Set("bank", "k", "c", "young"));
  RecordingStore* store = tables_->Get("bank");
  bool rewrote = false;
  store->BeforeCheckAndMutate([&](std::string_view row, const std::vector<Condition>& c) {
    if (rewrote || row != "k") return;
    for (const Condition& cond : c) {
      if (cond.kind() != Condition::Kind::kValueEquals || cond.min_timestamp() != y) continue;
      // What the younger coordinator's undo writes over the wound's record.
      WriteRecord record;
      record.kind = WriteKind::kRollback;
      record.start_ts = y;
      RowMutation m;
      m.Put(kWriteFamily, "c", y, EncodeWrite(record));
      EXPECT_OK(store->Mutate(WriteOptions(), "k", m));
      rewrote = true;
      return;
    }
  });
  EXPECT_EQ(CommitWoundedBy(younger.get(), older.get()).code(), Status::Code::kAborted);
  store->BeforeCheckAndMutate(nullptr);
  EXPECT_TRUE(rewrote) << "the older writer never prewrote around the rollback record";
  EXPECT_EQ(older->error().kind, TransactionError::Kind::kNone)
      << TransactionErrorKindName(older->error().kind);
  EXPECT_EQ(Read("bank", "k", "c"), "old");
  EXPECT_EQ(Read("bank", "a-op", "c"), "old");
  EXPECT_EQ(CountLocks(Store("bank")), 0u);
}

// A commit erases its lock with a column marker at start_ts, a rollback with
// a cell marker (txn/FORMAT.md "How locks are erased"): the primary's and a
// secondary's commit, and a wounded transaction's rollback.
TEST_F(TransactionTest, CommitsEraseLocksWithColumnMarkersRollbacksWithCellMarkers) {
  options_.one_phase_commit = false;  // what it checks happens between the two phases
  Open();
  std::unique_ptr<Transaction> older = Begin();
  std::unique_ptr<Transaction> younger = Begin();
  ASSERT_OK(older->Set("bank", "x", "c", "old"));
  ASSERT_OK(older->Set("bank", "z", "c", "old"));
  ASSERT_OK(younger->Set("bank", "x", "c", "young"));
  EXPECT_EQ(CommitWoundedBy(younger.get(), older.get()).code(), Status::Code::kAborted);
  int commits = 0, rollbacks = 0;
  for (const RecordingStore::Call& call : tables_->Get("bank")->calls()) {
    if (!call.applied) continue;
    for (const RowMutation::Entry& e : call.mutation.entries()) {
      if (e.family != kLockFamily || e.kind == RowMutation::Kind::kPut) continue;
      // The write record the same mutation puts tells what erases the lock.
      for (const RowMutation::Entry& w : call.mutation.entries()) {
        if (w.family != kWriteFamily || w.qualifier != e.qualifier) continue;
        WriteRecord record;
        ASSERT_OK(DecodeWrite(w.value, &record));
        EXPECT_EQ(e.timestamp, record.start_ts);
        if (record.kind == WriteKind::kRollback) {
          EXPECT_EQ(e.kind, RowMutation::Kind::kDeleteCell) << call.row;
          EXPECT_EQ(record.start_ts, younger->start_ts());
          rollbacks++;
        } else {
          EXPECT_EQ(e.kind, RowMutation::Kind::kDeleteColumn) << call.row;
          EXPECT_EQ(record.start_ts, older->start_ts());
          commits++;
        }
      }
    }
  }
  EXPECT_EQ(commits, 2);  // x (primary) and z
  EXPECT_EQ(rollbacks, 1);
  EXPECT_EQ(Read("bank", "x", "c"), "old");
  EXPECT_EQ(Read("bank", "z", "c"), "old");
  EXPECT_EQ(CountLocks(Store("bank")), 0u);
}

// Write skew: two doctors on call, each goes off call if the other is on.
// Under snapshot isolation both may commit; GetForUpdate prevents it.
TEST_F(TransactionTest, WriteSkewHappensWithoutGetForUpdate) {
  Open();
  ASSERT_NO_FATAL_FAILURE(Seed({{"alice", "on_call"}, {"bob", "on_call"}}, "1"));
  std::unique_ptr<Transaction> a = Begin();
  std::unique_ptr<Transaction> b = Begin();
  ASSERT_NO_FATAL_FAILURE(BothGoOffCall(a.get(), b.get(), /*for_update=*/false));
  ASSERT_OK(a->Commit());
  ASSERT_OK(b->Commit());  // disjoint writes: both commit
  EXPECT_EQ(Read("bank", "alice", "on_call"), "0");
  EXPECT_EQ(Read("bank", "bob", "on_call"), "0");  // nobody on call
}

TEST_F(TransactionTest, GetForUpdatePreventsWriteSkew) {
  Open();
  ASSERT_NO_FATAL_FAILURE(Seed({{"alice", "on_call"}, {"bob", "on_call"}}, "1"));
  std::unique_ptr<Transaction> a = Begin();
  std::unique_ptr<Transaction> b = Begin();
  ASSERT_NO_FATAL_FAILURE(BothGoOffCall(a.get(), b.get(), /*for_update=*/true));
  ASSERT_OK(a->Commit());
  Status s = b->Commit();
  EXPECT_EQ(s.code(), Status::Code::kAborted) << s.ToString();
  EXPECT_EQ(b->error().kind, TransactionError::Kind::kWriteConflict);
  EXPECT_EQ(Read("bank", "bob", "on_call"), "1");  // someone stays on call
  // A lock record changes no value.
  EXPECT_EQ(Read("bank", "alice", "on_call"), "0");
  EXPECT_EQ(CountLocks(Store("bank")), 0u);
}

// A GetForUpdate lock hides no value, so readers never wait for it; but one
// left by a dead coordinator is cleaned up by the reads that meet it.
TEST_F(TransactionTest, ReadsCleanUpDeadGetForUpdateLocks) {
  options_.one_phase_commit = false;  // what it checks happens between the two phases
  Open();
  ASSERT_NO_FATAL_FAILURE(Seed({{"a", "c"}, {"b", "c"}}, "1"));
  // Optimistic, so that its locks are at start_ts (a pessimistic
  // transaction's are at its for_update_ts).
  TransactionOptions optimistic;
  optimistic.mode = TransactionOptions::Mode::kOptimistic;
  std::unique_ptr<Transaction> t = Begin(optimistic);
  ASSERT_EQ(*t->GetForUpdate("bank", "a", "c"), "1");  // "a" is the primary: a lock kind
  ASSERT_OK(t->Set("bank", "b", "c", "2"));
  hook_ = [&](FailPoint p, uint64_t ts) {
    return p == FailPoint::kAfterPrimaryPrewrite && ts == t->start_ts();  // a and b
  };
  ASSERT_EQ(t->Commit().code(), Status::Code::kAborted);
  ASSERT_EQ(LockAt("bank", "b", t->start_ts()).kind, MutationKind::kPut);
  hook_ = nullptr;
  EXPECT_EQ(LockAt("bank", "a", t->start_ts()).kind, MutationKind::kLock);
  // A live GetForUpdate lock would be left alone; this owner is dead.
  EXPECT_EQ(Read("bank", "a", "c"), "1");
  EXPECT_EQ(Read("bank", "b", "c"), "1");
  EXPECT_EQ(CountLocks(Store("bank")), 0u);
}

TEST_F(TransactionTest, NoUpdateIsLostUnderConcurrentIncrements) {
  Open();
  constexpr int kThreads = 8;
  const int per_thread = test::UnderSanitizer() ? 30 : 150;
  std::atomic<int> aborts{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      for (int done = 0; done < per_thread;) {
        std::unique_ptr<Transaction> t = Begin();
        Result<std::string> v = t->Get("bank", "counter", "n");
        int n = v.ok() ? std::stoi(*v) : 0;
        ASSERT_OK(t->Set("bank", "counter", "n", std::to_string(n + 1)));
        ASSERT_OK(t->Set("other", "log", std::to_string(t->start_ts()), "x"));
        Status s = t->Commit();
        if (s.ok()) {
          ++done;
        } else {
          ASSERT_EQ(s.code(), Status::Code::kAborted) << s.ToString();
          ++aborts;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(Read("bank", "counter", "n"), std::to_string(kThreads * per_thread));
  EXPECT_EQ(CountLocks(Store("bank")), 0u);
  EXPECT_EQ(CountLocks(Store("other")), 0u);
}

// A coordinator stopped at each fail point, as a crashed client would stop;
// then another transaction reads every key. The transaction is all there if
// its primary committed and not at all otherwise, and no lock is left.
TEST_F(TransactionTest, CoordinatorStoppedAtEveryFailPoint) {
  options_.one_phase_commit = false;  // what it checks happens between the two phases
  options_.max_batch_rows = 1;  // several batches, so "after some" is between two
  Open();
  const std::vector<FailPoint> points = {
      FailPoint::kAfterPrimaryPrewrite, FailPoint::kAfterSecondaryBatch, FailPoint::kAfterCommitTs,
      FailPoint::kAfterPrimaryCommit, FailPoint::kAfterSecondaryCommit};
  int round = 0;
  for (FailPoint point : points) {
    SCOPED_TRACE(FailPointName(point));
    const std::string old_value = "v" + std::to_string(round);
    const std::string new_value = "v" + std::to_string(round + 1);
    ++round;
    hook_ = nullptr;
    {
      std::unique_ptr<Transaction> t = Begin();
      for (const char* row : {"r1", "r2", "r3"}) {
        ASSERT_OK(t->Set("bank", row, "c", old_value));
        ASSERT_OK(t->Set("other", row, "c", old_value));
      }
      ASSERT_OK(t->Commit());
    }
    std::unique_ptr<Transaction> t = Begin();
    for (const char* row : {"r1", "r2", "r3"}) {
      ASSERT_OK(t->Set("bank", row, "c", new_value));
      ASSERT_OK(t->Set("other", row, "c", new_value));
    }
    hook_ = [&](FailPoint p, uint64_t ts) { return p == point && ts == t->start_ts(); };
    Status s = t->Commit();
    ASSERT_EQ(s.code(), Status::Code::kAborted) << s.ToString();
    ASSERT_NE(s.message().find("fail point"), std::string::npos) << s.ToString();
    hook_ = nullptr;
    const bool committed =
        point == FailPoint::kAfterPrimaryCommit || point == FailPoint::kAfterSecondaryCommit;
    const std::string& want = committed ? new_value : old_value;
    std::unique_ptr<Transaction> reader = Begin();
    for (const char* table : {"bank", "other"}) {
      for (const char* row : {"r1", "r2", "r3"}) {
        Result<std::string> v = reader->Get(table, row, "c");
        ASSERT_OK(v.status());
        EXPECT_EQ(*v, want) << table << "/" << row;
      }
      EXPECT_EQ(CountLocks(Store(table)), 0u) << table;
    }
  }
}

// A coordinator the registry declared dead after its last background
// heartbeat learns it at the one it makes just before the commit point, and
// does not commit: a resolver may already have rolled its locks back.
TEST_F(TransactionTest, ACoordinatorDeclaredDeadStopsBeforeTheCommitPoint) {
  options_.one_phase_commit = false;
  Open();
  std::unique_ptr<Transaction> t = Begin();
  ASSERT_OK(t->Set("bank", "k1", "c", "new"));
  ASSERT_OK(t->Set("bank", "k2", "c", "new"));
  hook_ = [&](FailPoint p, uint64_t ts) {
    if (p == FailPoint::kAfterCommitTs && ts == t->start_ts()) {
      EXPECT_OK(registry_->Unregister(LockAt("bank", "k1", ts).owner));
    }
    return false;
  };
  Status s = t->Commit();
  EXPECT_EQ(s.code(), Status::Code::kAborted) << s.ToString();
  EXPECT_EQ(t->error().kind, TransactionError::Kind::kCoordinatorDead);
  EXPECT_EQ(Read("bank", "k1", "c"), "<none>");
  EXPECT_EQ(Read("bank", "k2", "c"), "<none>");
  EXPECT_EQ(CountLocks(Store("bank")), 0u);
}

// A coordinator that is merely slow: while it waits between commit_ts and the
// commit, a resolver rolls it back (it took the coordinator for dead); the
// commit then fails at the commit point, and a prewrite it sent before,
// delivered again, fails too. The coordinator's registry still has it alive,
// as when the resolver's verdict and its last heartbeat crossed.
TEST_F(TransactionTest, CommitAndStalePrewriteAfterARollbackFail) {
  options_.one_phase_commit = false;  // what it checks happens between the two phases
  Open();
  std::unique_ptr<Transaction> t = Begin();
  ASSERT_OK(t->Set("bank", "k1", "c", "new"));
  ASSERT_OK(t->Set("bank", "k2", "c", "new"));
  hook_ = [&](FailPoint p, uint64_t ts) {
    if (p == FailPoint::kAfterCommitTs && ts == t->start_ts()) {
      LockResolver resolver(tables_.get(), registry_.get(), Clock::Default(), ResolverOptions());
      std::string lock_bytes;
      for (const Cell& c : CellsOf(Store("bank"), "k1", kLockFamily)) {
        if (c.timestamp == ts) lock_bytes = c.value;
      }
      Result<TxnStatus> rolled =
          resolver.RollbackPrimary(Store("bank"), "k1", "c", ts, /*rolled_back_by=*/0, lock_bytes);
      EXPECT_OK(rolled);
      if (rolled.ok()) {
        EXPECT_EQ(rolled->state, TxnStatus::State::kRolledBack);
      }
      EXPECT_EQ(Read("bank", "k2", "c"), "<none>");  // resolves: rolls back
    }
    return false;
  };
  Status s = t->Commit();
  EXPECT_EQ(s.code(), Status::Code::kAborted) << s.ToString();
  EXPECT_EQ(t->error().kind, TransactionError::Kind::kRolledBack);
  EXPECT_EQ(Read("bank", "k1", "c"), "<none>");
  EXPECT_EQ(CountLocks(Store("bank")), 0u);

  // Every prewrite the transaction sent, sent again: none applies.
  int replayed = 0;
  for (const RecordingStore::Call& call : tables_->Get("bank")->calls()) {
    bool is_prewrite = false;
    for (const RowMutation::Entry& e : call.mutation.entries()) {
      if (e.family == kLockFamily && e.kind == RowMutation::Kind::kPut &&
          e.timestamp == t->start_ts()) {
        is_prewrite = true;
      }
    }
    if (!is_prewrite) continue;
    ++replayed;
    Result<CheckAndMutateResult> r =
        Store("bank").CheckAndMutate(WriteOptions(), call.row, call.conditions, call.mutation);
    ASSERT_OK(r.status());
    EXPECT_FALSE(r->applied) << call.row;
  }
  EXPECT_EQ(replayed, 2);
  EXPECT_EQ(CountLocks(Store("bank")), 0u);
}

// Every lock below a commit record is erased (FORMAT.md, "How locks are
// erased"), so a prewrite looks for locks only from the newest commit record
// its transaction read in the column: a hot row's history of erased locks is
// not walked. A key never read, or whose newest record is a rollback, is
// looked at whole. A live lock above the commit still stops the prewrite.
TEST_F(TransactionTest, PrewriteLooksForLocksFromTheCommitItRead) {
  options_.one_phase_commit = false;  // what it checks happens between the two phases
  Open();
  Seed({{"bob", "c"}, {"joe", "c"}}, "10");
  uint64_t bob_commit = 0;
  for (const Cell& c : CellsOf(Store("bank"), "bob", kWriteFamily)) bob_commit = c.timestamp;
  ASSERT_NE(bob_commit, 0u);

  // carl's newest record is a rollback: a coordinator stopped after its
  // prewrite (its owner dies with it), rolled back by the read below.
  std::unique_ptr<Transaction> stopped = Begin();
  ASSERT_OK(stopped->Set("bank", "carl", "c", "5"));
  hook_ = [&](FailPoint p, uint64_t ts) {
    return p == FailPoint::kAfterPrimaryPrewrite && ts == stopped->start_ts();
  };
  EXPECT_FALSE(stopped->Commit().ok());
  hook_ = nullptr;

  std::unique_ptr<Transaction> t = Begin();
  ASSERT_EQ(*t->Get("bank", "bob", "c"), "10");
  EXPECT_EQ(t->Get("bank", "carl", "c").status().code(), Status::Code::kNotFound);
  ASSERT_OK(t->Set("bank", "bob", "c", "3"));
  ASSERT_OK(t->Set("bank", "carl", "c", "7"));
  ASSERT_OK(t->Set("bank", "ann", "c", "7"));  // never read
  ASSERT_OK(t->Commit());

  std::map<std::string, uint64_t> lock_from;  // row -> the lock condition's min_timestamp
  for (const RecordingStore::Call& call : tables_->Get("bank")->calls()) {
    bool is_prewrite = false;
    for (const RowMutation::Entry& e : call.mutation.entries()) {
      is_prewrite |= e.family == kLockFamily && e.kind == RowMutation::Kind::kPut &&
                     e.timestamp == t->start_ts();
    }
    if (!is_prewrite) continue;
    for (const Condition& c : call.conditions) {
      if (c.family() == kLockFamily && c.kind() == Condition::Kind::kNoCellInRange) {
        EXPECT_EQ(c.max_timestamp(), kMaxTimestamp);
        EXPECT_TRUE(lock_from.emplace(call.row, c.min_timestamp()).second) << call.row;
      }
    }
  }
  EXPECT_EQ(lock_from, (std::map<std::string, uint64_t>{
                           {"ann", kMinTimestamp}, {"bob", bob_commit}, {"carl", kMinTimestamp}}));

  // A lock written above the commit read is still met: a younger writer of
  // bob that read that commit aborts on an older transaction's live lock.
  std::unique_ptr<Transaction> older = Begin();
  std::unique_ptr<Transaction> younger = Begin();
  ASSERT_EQ(*younger->Get("bank", "bob", "c"), "3");
  ASSERT_OK(older->Set("bank", "bob", "c", "1"));
  ASSERT_OK(younger->Set("bank", "bob", "c", "2"));
  Status younger_commit;
  hook_ = [&](FailPoint p, uint64_t ts) {
    if (p == FailPoint::kAfterPrimaryPrewrite && ts == older->start_ts()) {
      younger_commit = younger->Commit();
    }
    return false;
  };
  ASSERT_OK(older->Commit());
  hook_ = nullptr;
  EXPECT_EQ(younger_commit.code(), Status::Code::kAborted) << younger_commit.ToString();
  EXPECT_EQ(younger->error().kind, TransactionError::Kind::kKeyLocked);
  EXPECT_EQ(Read("bank", "bob", "c"), "1");
}

// A transaction keeps the commit records it read for that bound for a few
// thousand keys only; a key read past those is searched whole, and commits.
TEST_F(TransactionTest, KeysReadPastTheFloorLimitAreSearchedWhole) {
  Open();
  std::vector<std::pair<std::string, std::string>> keys;
  for (int i = 0; i < 4097; i++) keys.emplace_back("acct" + std::to_string(10000 + i), "c");
  Seed(keys, "1");
  std::unique_ptr<Transaction> t = Begin();
  for (const auto& [row, column] : keys) ASSERT_EQ(*t->Get("bank", row, column), "1");
  ASSERT_OK(t->Set("bank", keys.front().first, "c", "2"));
  ASSERT_OK(t->Set("bank", keys.back().first, "c", "2"));
  ASSERT_OK(t->Commit());
  std::map<std::string, uint64_t> lock_from;
  for (const RecordingStore::Call& call : tables_->Get("bank")->calls()) {
    // t's prewrites (or one-phase batch rows): no write record from start_ts on.
    const bool ours =
        std::any_of(call.conditions.begin(), call.conditions.end(), [&](const Condition& c) {
          return c.family() == kWriteFamily && c.min_timestamp() == t->start_ts();
        });
    for (const Condition& c : call.conditions) {
      if (ours && c.family() == kLockFamily && c.kind() == Condition::Kind::kNoCellInRange) {
        lock_from[call.row] = c.min_timestamp();
      }
    }
  }
  ASSERT_EQ(lock_from.size(), 2u);
  EXPECT_GT(lock_from[keys.front().first], kMinTimestamp);
  EXPECT_EQ(lock_from[keys.back().first], kMinTimestamp);
  EXPECT_EQ(Read("bank", keys.back().first, "c"), "2");
}

TEST_F(TransactionTest, RepeatedCommitIsANoOp) {
  Open();
  std::unique_ptr<Transaction> t = Begin();
  ASSERT_OK(t->Set("bank", "k", "c", "v"));
  ASSERT_OK(t->Commit());
  const uint64_t commit_ts = t->commit_ts();
  ASSERT_OK(t->Commit());
  EXPECT_EQ(t->commit_ts(), commit_ts);
  // The primary's commit, sent again, changes nothing.
  std::vector<RecordingStore::Call> calls = tables_->Get("bank")->calls();
  ASSERT_FALSE(calls.empty());
  const RecordingStore::Call& commit = calls.back();
  Result<CheckAndMutateResult> r =
      Store("bank").CheckAndMutate(WriteOptions(), commit.row, commit.conditions, commit.mutation);
  ASSERT_OK(r.status());
  EXPECT_FALSE(r->applied);
  EXPECT_EQ(Versions(Store("bank"), "k", kWriteFamily).size(), 1u);
  EXPECT_EQ(Read("bank", "k", "c"), "v");
}

TEST_F(TransactionTest, PrewriteAndCommitWithUnknownOutcomesAreRetried) {
  options_.one_phase_commit = false;  // what it checks happens between the two phases
  Open();
  // The primary's prewrite applies but reports an error: the retry finds its
  // own lock.
  {
    std::unique_ptr<Transaction> t = Begin();
    ASSERT_OK(t->Set("bank", "a", "c", "1"));
    ASSERT_OK(t->Set("bank", "b", "c", "1"));
    tables_->Get("bank")->FailNextAfterApply();
    ASSERT_OK(t->Commit());
  }
  // The primary's commit applies but reports an error: the primary says it
  // committed.
  {
    std::unique_ptr<Transaction> t = Begin();
    ASSERT_OK(t->Set("bank", "a", "c", "2"));
    hook_ = [&](FailPoint p, uint64_t) {
      if (p == FailPoint::kAfterCommitTs) tables_->Get("bank")->FailNextAfterApply();
      return false;
    };
    ASSERT_OK(t->Commit());
    hook_ = nullptr;
  }
  EXPECT_EQ(Read("bank", "a", "c"), "2");
  EXPECT_EQ(Read("bank", "b", "c"), "1");
  EXPECT_EQ(CountLocks(Store("bank")), 0u);
}

TEST_F(TransactionTest, ReaderPushesALiveLockAndTheWriterCommitsAboveIt) {
  options_.one_phase_commit = false;  // what it checks happens between the two phases
  Open();
  std::unique_ptr<Transaction> w = Begin();
  ASSERT_OK(w->Set("bank", "x", "c", "new"));
  std::unique_ptr<Transaction> reader;
  hook_ = [&](FailPoint p, uint64_t ts) {
    if (p == FailPoint::kAfterCommitTs && ts == w->start_ts()) {
      // commit_ts is taken; a reader that started after it meets the lock.
      reader = Begin();
      Result<std::string> v = reader->Get("bank", "x", "c");
      EXPECT_EQ(v.status().code(), Status::Code::kNotFound);
      EXPECT_GT(LockAt("bank", "x", w->start_ts()).min_commit_ts, reader->start_ts());
    }
    return false;
  };
  ASSERT_OK(w->Commit());
  // The writer committed above the reader's snapshot, which stays consistent.
  EXPECT_GT(w->commit_ts(), reader->start_ts());
  EXPECT_EQ(reader->Get("bank", "x", "c").status().code(), Status::Code::kNotFound);
  EXPECT_EQ(Read("bank", "x", "c"), "new");
}

TEST_F(TransactionTest, ScanMergesTheSnapshotWithOwnWrites) {
  Open();
  {
    std::unique_ptr<Transaction> t = Begin();
    for (const char* row : {"a", "b", "c", "d"}) {
      ASSERT_OK(t->Set("bank", row, "x", std::string("1") + row));
      ASSERT_OK(t->Set("bank", row, "y", std::string("2") + row));
    }
    ASSERT_OK(t->Commit());
  }
  std::unique_ptr<Transaction> t = Begin();
  ASSERT_OK(t->Erase("bank", "b", "x"));
  ASSERT_OK(t->Set("bank", "b", "z", "new"));
  ASSERT_OK(t->Set("bank", "bb", "x", "new"));
  ASSERT_OK(t->Set("bank", "e", "x", "outside"));
  Result<std::unique_ptr<TransactionIterator>> it = t->Scan("bank", "b", "d");
  ASSERT_OK(it.status());
  std::vector<std::string> got;
  for (; (*it)->Valid(); (*it)->Next()) {
    got.push_back(std::string((*it)->row()) + "/" + std::string((*it)->column()) + "=" +
                  std::string((*it)->value()));
  }
  ASSERT_OK((*it)->status());
  EXPECT_EQ(got, (std::vector<std::string>{"b/y=2b", "b/z=new", "bb/x=new", "c/x=1c", "c/y=2c"}));
  it = t->Scan("bank", "", "", {"y"});
  ASSERT_OK(it.status());
  got.clear();
  for (; (*it)->Valid(); (*it)->Next()) got.push_back(std::string((*it)->row()));
  EXPECT_EQ(got, (std::vector<std::string>{"a", "b", "c", "d"}));
}

TEST_F(TransactionTest, ScanSeeksAnywhereInItsRange) {
  Open();
  {
    std::unique_ptr<Transaction> t = Begin();
    for (const char* row : {"a", "b", "c", "d", "e"}) {
      ASSERT_OK(t->Set("bank", row, "x", std::string("1") + row));
    }
    ASSERT_OK(t->Commit());
  }
  std::unique_ptr<Transaction> t = Begin();
  ASSERT_OK(t->Erase("bank", "c", "x"));
  ASSERT_OK(t->Set("bank", "cc", "x", "new"));
  Result<std::unique_ptr<TransactionIterator>> it = t->Scan("bank", "b", "e");
  ASSERT_OK(it.status());
  TransactionIterator& i = **it;
  // The (row/column=value) at the iterator, "end" when not Valid, and the
  // rest of the scan from there.
  auto rest = [&] {
    std::string out;
    for (; i.Valid(); i.Next()) {
      out +=
          std::string(i.row()) + "/" + std::string(i.column()) + "=" + std::string(i.value()) + " ";
    }
    EXPECT_OK(i.status());
    return out + "end";
  };
  i.Seek("c");  // c/x is erased here: the buffered row that follows it
  EXPECT_EQ(rest(), "cc/x=new d/x=1d end");
  i.Seek("b");  // backwards
  EXPECT_EQ(rest(), "b/x=1b cc/x=new d/x=1d end");
  i.Seek("");  // before start_row: start_row
  EXPECT_EQ(rest(), "b/x=1b cc/x=new d/x=1d end");
  i.Seek("ca");
  EXPECT_EQ(rest(), "cc/x=new d/x=1d end");
  i.Seek("d");
  EXPECT_EQ(rest(), "d/x=1d end");
  i.Seek("e");  // end_row: nothing
  EXPECT_EQ(rest(), "end");
  i.Seek("zz");
  EXPECT_EQ(rest(), "end");
  // Writes buffered after the scan began are seen by a later Seek.
  ASSERT_OK(t->Set("bank", "bz", "x", "later"));
  i.Seek("b");
  EXPECT_EQ(rest(), "b/x=1b bz/x=later cc/x=new d/x=1d end");
}

TEST_F(TransactionTest, BadInputIsRejectedAndChangesNothing) {
  Open();
  std::unique_ptr<Transaction> t = Begin();
  EXPECT_EQ(t->Set("", "r", "c", "v").code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(t->Set("bank", "", "c", "v").code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(t->Set("bank", "r", "", "v").code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(t->Set("nope", "r", "c", "v").code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(t->Get("nope", "r", "c").status().code(), Status::Code::kInvalidArgument);
  ASSERT_OK(t->Commit());  // nothing buffered: nothing written
  EXPECT_EQ(t->Set("bank", "r", "c", "v").code(), Status::Code::kInvalidArgument);
  std::unique_ptr<Transaction> old = Begin();
  db_->AdvanceSafepoint(old->start_ts() + 1);
  Result<std::string> v = old->Get("bank", "r", "c");
  EXPECT_EQ(v.status().code(), Status::Code::kAborted);
  EXPECT_EQ(old->error().kind, TransactionError::Kind::kTooOld);
}

}  // namespace
}  // namespace strata::txn
