// The lock resolver's rollback of a primary whose lock is missing. A reader
// that meets a secondary lock before its primary's lock exists (the primary's
// prewrite met a conflict and is retried after the other rows went in) reads
// the primary as neither locked nor committed and rolls it back. The
// transaction may prewrite and commit its primary between that read and the
// rollback's write; the commit removes the lock again, so a rollback
// conditioned only on "no lock" would land on a committed primary and roll
// its secondaries back under it. These tests run that interleaving exactly,
// with a store that lets the transaction in just before the rollback's write.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "txn/lock_resolver.h"
#include "txn/records.h"
#include "txn_test_util.h"
#include "util/status_matchers.h"

namespace strata::txn {
namespace {

constexpr char kTable[] = "bank";
constexpr char kColumn[] = "bal";
constexpr char kPrimaryRow[] = "k1";
constexpr char kSecondaryRow[] = "k2";

// Forwards to a store; runs `before_rollback` once, just before the first
// CheckAndMutate that would write a rollback record to kPrimaryRow.
class InterposingStore final : public test::ForwardingRowStore {
 public:
  explicit InterposingStore(std::shared_ptr<RowStore> base)
      : ForwardingRowStore(std::move(base)) {}

  Result<CheckAndMutateResult> CheckAndMutate(const WriteOptions& o, std::string_view row,
                                              const std::vector<Condition>& c,
                                              const RowMutation& m) override {
    if (row == kPrimaryRow && WritesRollback(m) && before_rollback) {
      std::function<void()> hook = std::move(before_rollback);
      before_rollback = nullptr;
      hook();
    }
    return base().CheckAndMutate(o, row, c, m);
  }

  std::function<void()> before_rollback;

 private:
  static bool WritesRollback(const RowMutation& m) {
    for (const RowMutation::Entry& e : m.entries()) {
      WriteRecord w;
      if (e.kind == RowMutation::Kind::kPut && e.family == kWriteFamily &&
          DecodeWrite(e.value, &w).ok() && w.kind == WriteKind::kRollback) {
        return true;
      }
    }
    return false;
  }

};

class OneTable final : public TableResolver {
 public:
  explicit OneTable(std::shared_ptr<RowStore> store) : store_(std::move(store)) {}
  Result<std::shared_ptr<RowStore>> Resolve(std::string_view table) override {
    if (table != kTable) return Status::NotFound("no table " + std::string(table));
    return store_;
  }

 private:
  std::shared_ptr<RowStore> store_;
};

class LockResolverTest : public ::testing::Test {
 protected:
  LockResolverTest()
      : model_(test::ModelRowStore::ForSchema(TransactionalSchema({}))),
        store_(std::make_shared<InterposingStore>(model_)),
        tables_(store_),
        resolver_(&tables_, /*registry=*/nullptr, Clock::Default(), ResolverOptions()) {}

  // The lock of the transaction that started at start_ts: a put of
  // `value` inline, with kPrimaryRow as its primary and a TTL far away.
  LockRecord LockOf(uint64_t start_ts, const std::string& value) const {
    LockRecord lock;
    lock.kind = MutationKind::kPut;
    lock.start_ts = start_ts;
    lock.wall_millis = resolver_.NowMillis();
    lock.ttl_millis = 600'000;
    lock.min_commit_ts = start_ts + 1;
    lock.primary_table = kTable;
    lock.primary_row = kPrimaryRow;
    lock.primary_column = kColumn;
    lock.has_inline_value = true;
    lock.inline_value = value;
    return lock;
  }

  void Prewrite(const std::string& row, const LockRecord& lock) {
    RowMutation m;
    m.Put(kLockFamily, kColumn, lock.start_ts, EncodeLock(lock));
    ASSERT_OK(model_->Mutate(WriteOptions(), row, m));
  }

  void Commit(const std::string& row, const LockRecord& lock, uint64_t commit_ts) {
    RowMutation m;
    AddCommit(&m, kColumn, lock, commit_ts);
    ASSERT_OK(model_->Mutate(WriteOptions(), row, m));
  }

  // The write records of `row`, as (timestamp, record), newest first.
  std::vector<std::pair<uint64_t, WriteRecord>> Writes(const std::string& row) {
    std::vector<std::pair<uint64_t, WriteRecord>> out;
    for (const Cell& c : test::CellsOf(*model_, row, kWriteFamily)) {
      WriteRecord w;
      EXPECT_OK(DecodeWrite(c.value, &w));
      out.emplace_back(c.timestamp, w);
    }
    return out;
  }

  // Prewrites only the secondary of the transaction `lock` (its primary
  // holds no lock) and resolves it with `intent` for a transaction at
  // `caller_ts`: the transaction is rolled back and each of the two rows
  // holds one write record, a rollback. *rollbacks gets them, primary first.
  void RollBackMissingPrimary(const LockRecord& lock, LockResolver::Intent intent,
                              uint64_t caller_ts,
                              std::vector<std::pair<uint64_t, WriteRecord>>* rollbacks) {
    Prewrite(kSecondaryRow, lock);
    Result<LockResolver::Resolution> res =
        resolver_.Resolve(Key(kSecondaryRow), lock, intent, caller_ts);
    ASSERT_OK(res.status());
    EXPECT_EQ(res->outcome, LockResolver::Resolution::Outcome::kRolledBack);
    rollbacks->clear();
    for (const std::string row : {kPrimaryRow, kSecondaryRow}) {
      SCOPED_TRACE(row);
      const auto writes = Writes(row);
      ASSERT_EQ(writes.size(), 1u);
      EXPECT_EQ(writes[0].second.kind, WriteKind::kRollback);
      rollbacks->push_back(writes[0]);
    }
  }

  size_t Locks(const std::string& row) {
    return test::CellsOf(*model_, row, kLockFamily).size();
  }

  TxnKey Key(const std::string& row) const { return TxnKey{kTable, row, kColumn}; }

  std::shared_ptr<RowStore> model_;
  std::shared_ptr<InterposingStore> store_;
  OneTable tables_;
  LockResolver resolver_;
};

// The transaction (start 10) has its secondary locked and its primary not
// yet. A reader at 12 meets the secondary and reads the primary: no lock, no
// record. Before its rollback is written, the transaction prewrites and
// commits the primary at 13. The rollback must not apply; the reader rolls
// the secondary forward instead.
TEST_F(LockResolverTest, RollbackOfAMissingPrimaryLockNeverLandsOnALaterCommit) {
  const LockRecord lock = LockOf(10, "7");
  Prewrite(kSecondaryRow, lock);
  store_->before_rollback = [&] {
    Prewrite(kPrimaryRow, lock);
    Commit(kPrimaryRow, lock, 13);
  };

  Result<LockResolver::Resolution> res =
      resolver_.Resolve(Key(kSecondaryRow), lock, LockResolver::Intent::kRead, 12);
  ASSERT_OK(res.status());
  EXPECT_EQ(res->outcome, LockResolver::Resolution::Outcome::kCommitted);
  EXPECT_EQ(res->commit_ts, 13u);
  EXPECT_EQ(store_->before_rollback, nullptr) << "the interleaving was not run";

  // The primary holds the commit alone; the secondary is committed, not
  // rolled back, and its lock is gone.
  for (const std::string row : {kPrimaryRow, kSecondaryRow}) {
    SCOPED_TRACE(row);
    const auto writes = Writes(row);
    ASSERT_EQ(writes.size(), 1u);
    EXPECT_EQ(writes[0].first, 13u);
    EXPECT_EQ(writes[0].second.kind, WriteKind::kPut);
    EXPECT_EQ(writes[0].second.start_ts, 10u);
    EXPECT_EQ(Locks(row), 0u);
  }
}

// Between the read and the rollback another transaction commits to the
// primary's column: the rollback is tried again against the new column and
// applies, and the other commit stays.
TEST_F(LockResolverTest, RollbackOfAMissingPrimaryLockRetriesPastOtherCommits) {
  const LockRecord lock = LockOf(10, "7");
  Prewrite(kSecondaryRow, lock);
  store_->before_rollback = [&] {
    LockRecord other = LockOf(14, "9");
    Prewrite(kPrimaryRow, other);
    Commit(kPrimaryRow, other, 15);
  };

  Result<LockResolver::Resolution> res =
      resolver_.Resolve(Key(kSecondaryRow), lock, LockResolver::Intent::kRead, 12);
  ASSERT_OK(res.status());
  EXPECT_EQ(res->outcome, LockResolver::Resolution::Outcome::kRolledBack);
  EXPECT_EQ(store_->before_rollback, nullptr) << "the interleaving was not run";

  const auto primary = Writes(kPrimaryRow);
  ASSERT_EQ(primary.size(), 2u);
  EXPECT_EQ(primary[0].first, 15u);
  EXPECT_EQ(primary[0].second.start_ts, 14u);
  EXPECT_EQ(primary[1].first, 10u);
  EXPECT_EQ(primary[1].second.kind, WriteKind::kRollback);
  const auto secondary = Writes(kSecondaryRow);
  ASSERT_EQ(secondary.size(), 1u);
  EXPECT_EQ(secondary[0].first, 10u);
  EXPECT_EQ(secondary[0].second.kind, WriteKind::kRollback);
  EXPECT_EQ(Locks(kSecondaryRow), 0u);
}

// With nothing in between, the missing primary is rolled back, and the
// rollback record keeps its late prewrite out.
TEST_F(LockResolverTest, MissingPrimaryLockIsRolledBackAndKeepsALatePrewriteOut) {
  const LockRecord lock = LockOf(10, "7");
  std::vector<std::pair<uint64_t, WriteRecord>> rollbacks;
  ASSERT_NO_FATAL_FAILURE(
      RollBackMissingPrimary(lock, LockResolver::Intent::kRead, 12, &rollbacks));
  for (const auto& [ts, record] : rollbacks) EXPECT_EQ(ts, 10u);
  EXPECT_EQ(Locks(kPrimaryRow), 0u);
  EXPECT_EQ(Locks(kSecondaryRow), 0u);
  // The prewrite's conditions (txn/FORMAT.md): no write record at or after
  // start_ts, no lock.
  RowMutation m;
  m.Put(kLockFamily, kColumn, 10, EncodeLock(lock));
  Result<CheckAndMutateResult> r = model_->CheckAndMutate(
      WriteOptions(), kPrimaryRow,
      {Condition::NoCellInRange(kWriteFamily, kColumn, 10, kMaxTimestamp),
       Condition::NoCellInRange(kLockFamily, kColumn, kMinTimestamp, kMaxTimestamp)},
      m);
  ASSERT_OK(r.status());
  EXPECT_FALSE(r->applied);
}

// An older prewriter that wounds a transaction whose primary is not locked
// yet puts its own start_ts in the rollback record, as it does when the
// primary is locked: the victim's late prewrite of the primary then fails
// as aborted by an older transaction, not as rolled back for a dead owner.
TEST_F(LockResolverTest, WoundOfAMissingPrimaryLockNamesTheOlderTransaction) {
  const LockRecord lock = LockOf(10, "7");
  std::vector<std::pair<uint64_t, WriteRecord>> rollbacks;
  ASSERT_NO_FATAL_FAILURE(
      RollBackMissingPrimary(lock, LockResolver::Intent::kWound, 8, &rollbacks));
  for (const auto& [ts, record] : rollbacks) EXPECT_EQ(record.rolled_back_by, 8u);
}

// A younger prewriter that meets a live secondary lock of an older
// transaction whose primary is not prewritten yet leaves it alone (kLive):
// the older transaction then prewrites and commits its primary. Once the
// lock is past its TTL, the same check rolls the transaction back.
TEST_F(LockResolverTest, AYoungerPrewriterLeavesALiveOlderTransactionWithoutAPrimaryLock) {
  const LockRecord lock = LockOf(10, "7");
  Prewrite(kSecondaryRow, lock);
  Result<LockResolver::Resolution> res =
      resolver_.Resolve(Key(kSecondaryRow), lock, LockResolver::Intent::kCheck, 12);
  ASSERT_OK(res.status());
  EXPECT_EQ(res->outcome, LockResolver::Resolution::Outcome::kLive);
  EXPECT_TRUE(Writes(kPrimaryRow).empty());
  EXPECT_TRUE(Writes(kSecondaryRow).empty());
  EXPECT_EQ(Locks(kSecondaryRow), 1u);
  // The older transaction goes on: its primary prewrites and commits.
  Prewrite(kPrimaryRow, lock);
  Commit(kPrimaryRow, lock, 13);
  res = resolver_.Resolve(Key(kSecondaryRow), lock, LockResolver::Intent::kCheck, 12);
  ASSERT_OK(res.status());
  EXPECT_EQ(res->outcome, LockResolver::Resolution::Outcome::kCommitted);
  EXPECT_EQ(res->commit_ts, 13u);

  // A dead one (its lock's TTL long past) is rolled back by the same check.
  LockRecord dead = LockOf(20, "8");
  dead.wall_millis = 1;
  dead.ttl_millis = 1;
  Prewrite(kSecondaryRow, dead);
  res = resolver_.Resolve(Key(kSecondaryRow), dead, LockResolver::Intent::kCheck, 22);
  ASSERT_OK(res.status());
  EXPECT_EQ(res->outcome, LockResolver::Resolution::Outcome::kRolledBack);
  EXPECT_EQ(Writes(kPrimaryRow)[0].first, 20u);
  EXPECT_EQ(Writes(kPrimaryRow)[0].second.kind, WriteKind::kRollback);
}

}  // namespace
}  // namespace strata::txn
