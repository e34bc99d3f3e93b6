// The collector over in-memory stores with chosen timestamps: reads at or
// above the safepoint see what they saw before, exactly the versions the
// rules keep remain, locks below the safepoint are resolved first (so a
// transaction that committed its primary stays whole), running transactions
// and service safepoints hold the safepoint back, and it never goes down.
#include "gc/collector.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gc/progress_log.h"
#include "gc/safepoint_store.h"
#include "txn/records.h"
#include "txn_test_util.h"
#include "util/fake_clock.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::gc {
namespace {

using txn::FailPoint;

class CollectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    txn::LocalLivenessRegistryOptions ro;
    ASSERT_OK(txn::LocalLivenessRegistry::Open(dir_.path(), ro, &registry_));
    tables_ = std::make_shared<test::ModelTables>();
    ASSERT_OK(tables_->Create("bank"));
    options_.sync = false;
    options_.commit_secondaries_in_background = false;
    options_.max_inline_value = 0;  // values in `data`, so data cells are collected too
  }

  void OpenDb() {
    txn::TxnDBConfig config;
    config.options = options_;
    config.oracle = &oracle_;
    config.registry = registry_.get();
    config.tables = tables_;
    config.fail_point = [this](FailPoint p, uint64_t ts) { return hook_ ? hook_(p, ts) : false; };
    config.list_tables = []() -> Result<std::vector<std::string>> {
      return std::vector<std::string>{"bank"};
    };
    config.split_rows = [this](std::string_view) -> Result<std::vector<std::string>> {
      return split_rows_;
    };
    config.name = "t";
    Result<std::unique_ptr<TransactionDB>> db = txn::TxnDB::Make(std::move(config));
    ASSERT_OK(db);
    handle_ = std::move(db).value();
    db_ = txn::TxnDBOf(*handle_);
  }

  void OpenCollector(std::unique_ptr<SafepointStore> store = NewMemorySafepointStore(),
                     std::unique_ptr<ProgressLog> progress = nullptr) {
    CollectorConfig config;
    config.db = db_;
    config.store = std::move(store);
    config.progress = std::move(progress);
    config.hook = round_hook_;
    config.clock = &clock_;
    config.options = gc_options_;
    Result<std::unique_ptr<Collector>> c = Collector::Open(std::move(config));
    ASSERT_OK(c);
    collector_ = std::move(c).value();
  }

  void SetUpAll() {
    OpenDb();
    OpenCollector();
  }

  // Commits `value` (or a delete, for nullopt) to bank/row/col with the
  // given start and commit timestamps.
  void Commit(const std::string& row, const std::string& col, std::optional<std::string> value,
              uint64_t start_ts, uint64_t commit_ts) {
    oracle_.SetNext(start_ts);
    auto t = db_->Begin({});
    ASSERT_OK(t);
    ASSERT_EQ((*t)->start_ts(), start_ts);
    if (value.has_value()) {
      ASSERT_OK((*t)->Set("bank", row, col, *value));
    } else {
      ASSERT_OK((*t)->Erase("bank", row, col));
    }
    oracle_.SetNext(commit_ts);
    ASSERT_OK((*t)->Commit());
    ASSERT_EQ((*t)->commit_ts(), commit_ts);
  }

  // A transaction at `start_ts` that sets bank/a/bal (its primary) and
  // bank/b/bal to `value`, and whose coordinator stops at `stop`.
  void CommitTwoRowsAndStop(uint64_t start_ts, const std::string& value, FailPoint stop) {
    oracle_.SetNext(start_ts);
    auto t = db_->Begin({});
    ASSERT_OK(t);
    ASSERT_OK((*t)->Set("bank", "a", "bal", value));
    ASSERT_OK((*t)->Set("bank", "b", "bal", value));
    hook_ = [stop](FailPoint p, uint64_t) { return p == stop; };
    EXPECT_FALSE((*t)->Commit().ok());
    hook_ = nullptr;
  }

  // GC at exactly `safepoint`: a service safepoint caps the round.
  void CollectAt(uint64_t safepoint) {
    ASSERT_OK(collector_->HoldSafepoint("cap", safepoint, 1'000'000));
    ASSERT_OK(collector_->RunRound());
    ASSERT_OK(collector_->ReleaseSafepoint("cap"));
    ASSERT_EQ(collector_->safepoint(), safepoint);
  }

  RowStore& Bank() { return *tables_->Get("bank"); }

  // What a snapshot read of bank/row/col at `ts` finds: the newest put or
  // delete at or below it ("<none>" for a delete or nothing).
  std::string ReadAt(const std::string& row, const std::string& col, uint64_t ts) {
    for (const Cell& c : test::CellsOf(Bank(), row, txn::kWriteFamily)) {
      if (c.qualifier != col || c.timestamp > ts) continue;
      txn::WriteRecord w;
      EXPECT_OK(txn::DecodeWrite(c.value, &w));
      if (w.kind == txn::WriteKind::kRollback || w.kind == txn::WriteKind::kLock) continue;
      if (w.kind == txn::WriteKind::kDelete) return "<none>";
      if (w.has_inline_value) return w.inline_value;
      for (const Cell& d : test::CellsOf(Bank(), row, txn::kDataFamily)) {
        if (d.qualifier == col && d.timestamp == w.start_ts) return d.value;
      }
      return "<data missing at " + std::to_string(w.start_ts) + ">";
    }
    return "<none>";
  }

  // The timestamps of a row's visible cells of one family and column.
  std::vector<uint64_t> Timestamps(const std::string& row, std::string_view family,
                                   const std::string& col) {
    std::vector<uint64_t> out;
    for (const Cell& c : test::CellsOf(Bank(), row, family)) {
      if (c.qualifier == col) out.push_back(c.timestamp);
    }
    return out;
  }

  // The committed value as a new transaction reads it.
  std::string Read(const std::string& row, const std::string& col) {
    auto t = db_->Begin({});
    EXPECT_OK(t);
    Result<std::string> v = (*t)->Get("bank", row, col);
    if (v.status().IsNotFound()) return "<none>";
    EXPECT_OK(v);
    return v.ok() ? *v : "<error>";
  }

  test::ScratchDir dir_{"gc"};
  test::CountingOracle oracle_;
  test::FakeClock clock_;
  std::unique_ptr<txn::LocalLivenessRegistry> registry_;
  std::shared_ptr<test::ModelTables> tables_;
  TransactionDBOptions options_;
  GcOptions gc_options_{.life_time_millis = 0, .interval_millis = 0, .workers = 0};
  std::vector<std::string> split_rows_;
  std::function<bool(FailPoint, uint64_t)> hook_;
  std::function<void(RoundStep, uint64_t)> round_hook_;
  std::unique_ptr<TransactionDB> handle_;
  std::shared_ptr<txn::TxnDB> db_;
  std::unique_ptr<Collector> collector_;
};

// The design's example: put@5, put@10, delete@15, put@20, collected at 12,
// then 17, then 22.
TEST_F(CollectorTest, ExampleHistoryKeepsEveryReadAtOrAboveTheSafepoint) {
  SetUpAll();
  Commit("r", "c", "v5", 4, 5);
  Commit("r", "c", "v10", 9, 10);
  Commit("r", "c", std::nullopt, 14, 15);
  Commit("r", "c", "v20", 19, 20);
  oracle_.SetNext(100);
  struct Want {
    uint64_t safepoint;
    std::vector<uint64_t> writes;
    std::vector<uint64_t> data;
  };
  for (const Want& want : {Want{12, {20, 15, 10}, {19, 9}}, Want{17, {20}, {19}},
                           Want{22, {20}, {19}}}) {
    SCOPED_TRACE(want.safepoint);
    std::map<uint64_t, std::string> before;
    for (uint64_t ts = want.safepoint; ts <= 30; ts++) before[ts] = ReadAt("r", "c", ts);
    CollectAt(want.safepoint);
    for (uint64_t ts = want.safepoint; ts <= 30; ts++) EXPECT_EQ(ReadAt("r", "c", ts), before[ts]);
    EXPECT_EQ(Timestamps("r", txn::kWriteFamily, "c"), want.writes);
    EXPECT_EQ(Timestamps("r", txn::kDataFamily, "c"), want.data);
  }
  EXPECT_EQ(Read("r", "c"), "v20");
  const GcStats s = collector_->GetStats();
  EXPECT_EQ(s.versions_dropped, 3u);
  EXPECT_EQ(s.data_cells_dropped, 2u);
  EXPECT_EQ(s.rounds, 3u);
}

// A transaction that committed its primary and stopped before its
// secondary: collecting its primary's record (a newer commit hides it) must
// not leave the secondary's lock to be read as rolled back. Its locks below
// the safepoint are rolled forward first.
TEST_F(CollectorTest, SecondaryOfACommittedPrimaryStaysCommitted) {
  options_.one_phase_commit = false;  // a coordinator stopped between the phases
  SetUpAll();
  // Stopped after the commit point.
  CommitTwoRowsAndStop(10, "1", FailPoint::kAfterPrimaryCommit);
  EXPECT_EQ(test::CountLocks(Bank()), 1u);  // b's
  Commit("a", "bal", "2", 20, 21);          // hides t's record on a
  oracle_.SetNext(30);
  ASSERT_OK(collector_->RunRound());
  EXPECT_GE(collector_->safepoint(), 30u);
  EXPECT_EQ(collector_->GetStats().locks_resolved, 1u);
  EXPECT_EQ(test::CountLocks(Bank()), 0u);
  EXPECT_EQ(Timestamps("a", txn::kWriteFamily, "bal"), std::vector<uint64_t>{21});
  EXPECT_EQ(Read("b", "bal"), "1");  // committed, not rolled back
  EXPECT_EQ(Read("a", "bal"), "2");
}

// A coordinator that died before its commit point left locks: the round
// rolls them back before collecting.
TEST_F(CollectorTest, DeadCoordinatorsLocksAreRolledBackFirst) {
  options_.one_phase_commit = false;  // a coordinator stopped between the phases
  SetUpAll();
  Commit("a", "bal", "old", 1, 2);
  CommitTwoRowsAndStop(10, "new", FailPoint::kAfterCommitTs);
  EXPECT_EQ(test::CountLocks(Bank()), 2u);
  oracle_.SetNext(30);
  ASSERT_OK(collector_->RunRound());
  EXPECT_EQ(test::CountLocks(Bank()), 0u);
  EXPECT_EQ(collector_->GetStats().locks_resolved, 2u);
  EXPECT_EQ(Read("a", "bal"), "old");
  EXPECT_EQ(Read("b", "bal"), "<none>");
}

// The safepoint never passes a running transaction's start; a transaction
// that finds itself below a safepoint raised anyway cannot read or commit.
TEST_F(CollectorTest, RunningTransactionsHoldTheSafepointBack) {
  SetUpAll();
  Commit("a", "bal", "1", 1, 2);
  oracle_.SetNext(10);
  auto t = db_->Begin({});
  ASSERT_OK(t);
  oracle_.SetNext(50);
  ASSERT_OK(collector_->RunRound());
  EXPECT_EQ(collector_->safepoint(), 10u);
  EXPECT_EQ(collector_->GetStats().oldest_running_start_ts, 10u);
  ASSERT_OK((*t)->Set("bank", "a", "bal", "2"));
  ASSERT_OK((*t)->Commit());
  ASSERT_OK(collector_->RunRound());
  EXPECT_GT(collector_->safepoint(), 50u);
  EXPECT_EQ(collector_->GetStats().oldest_running_start_ts, UINT64_MAX);

  // Raised past an open transaction by hand (TransactionDB::AdvanceSafepoint).
  auto old = db_->Begin({});
  ASSERT_OK(old);
  db_->AdvanceSafepoint((*old)->start_ts() + 1);
  Status read = (*old)->Get("bank", "a", "bal").status();
  EXPECT_TRUE(read.IsAborted()) << read.ToString();
  EXPECT_EQ((*old)->error().kind, TransactionError::Kind::kTooOld);
}

// A transaction whose commit checks the safepoint after its prewrites: a
// safepoint published between its commit_ts and its check stops it.
TEST_F(CollectorTest, SafepointPublishedBeforeTheCommitCheckStopsTheCommit) {
  options_.one_phase_commit = false;  // the check after the prewrites is the two phases'
  SetUpAll();
  oracle_.SetNext(10);
  auto t = db_->Begin({});
  ASSERT_OK(t);
  ASSERT_OK((*t)->Set("bank", "a", "bal", "1"));
  hook_ = [&](FailPoint p, uint64_t ts) {
    if (p == FailPoint::kAfterCommitTs) db_->AdvanceSafepoint(ts + 1);
    return false;
  };
  Status s = (*t)->Commit();
  hook_ = nullptr;
  EXPECT_TRUE(s.IsAborted()) << s.ToString();
  EXPECT_EQ((*t)->error().kind, TransactionError::Kind::kTooOld);
  EXPECT_EQ(test::CountLocks(Bank()), 0u);  // its prewrites undone
  EXPECT_EQ(Read("a", "bal"), "<none>");
}

// A service safepoint keeps a long reader's snapshot whole until it is
// released or expires.
TEST_F(CollectorTest, ServiceSafepointKeepsAReadersSnapshot) {
  SetUpAll();
  Commit("a", "bal", "v1", 1, 2);
  Commit("a", "bal", "v2", 5, 6);
  ASSERT_OK(collector_->HoldSafepoint("backup", 3, 60'000));
  oracle_.SetNext(40);
  ASSERT_OK(collector_->RunRound());
  EXPECT_EQ(collector_->safepoint(), 3u);
  EXPECT_EQ(collector_->GetStats().lowest_service_safepoint, 3u);
  EXPECT_EQ(ReadAt("a", "bal", 3), "v1");
  // Below the safepoint, nothing may be held any more.
  EXPECT_TRUE(collector_->HoldSafepoint("late", 2, 1000).IsFailedPrecondition());
  EXPECT_TRUE(collector_->HoldSafepoint("", 5, 1000).IsInvalidArgument());
  EXPECT_TRUE(collector_->HoldSafepoint("x", 5, 0).IsInvalidArgument());
  EXPECT_TRUE(collector_->ReleaseSafepoint("nobody").IsNotFound());

  clock_.Advance(61'000'000);  // the hold expires
  ASSERT_OK(collector_->RunRound());
  EXPECT_GE(collector_->safepoint(), 40u);
  EXPECT_EQ(Timestamps("a", txn::kWriteFamily, "bal"), std::vector<uint64_t>{6});
  EXPECT_EQ(ReadAt("a", "bal", 40), "v2");
}

// The safepoint survives a new collector on the same store, and the TxnDB
// is raised to it at once; it never goes down.
TEST_F(CollectorTest, SafepointIsDurableAndNeverGoesDown) {
  OpenDb();
  const std::string path = dir_.Join("SAFEPOINT");
  std::unique_ptr<SafepointStore> store;
  ASSERT_OK(OpenLocalSafepointStore(FileSystem::Default(), path, &store));
  OpenCollector(std::move(store));
  oracle_.SetNext(100);
  ASSERT_OK(collector_->RunRound());
  const uint64_t sp = collector_->safepoint();
  EXPECT_GE(sp, 100u);
  ASSERT_OK(collector_->Close());
  collector_.reset();

  ASSERT_OK(OpenLocalSafepointStore(FileSystem::Default(), path, &store));
  EXPECT_EQ(store->Get(), sp);
  OpenCollector(std::move(store));
  EXPECT_EQ(collector_->safepoint(), sp);
  EXPECT_EQ(db_->safepoint(), sp);
  // A service safepoint cannot take it down either.
  EXPECT_TRUE(collector_->HoldSafepoint("x", sp - 1, 1000).IsFailedPrecondition());
  ASSERT_OK(collector_->RunRound());
  EXPECT_GE(collector_->safepoint(), sp);
}

// Row ranges are collected by the workers, every one of them.
TEST_F(CollectorTest, WorkersCollectEveryRowRange) {
  gc_options_.workers = 2;
  split_rows_ = {"r3", "r6"};
  SetUpAll();
  for (int i = 0; i < 9; i++) {
    const std::string row = "r" + std::to_string(i);
    Commit(row, "c", "old", 10 * i + 1, 10 * i + 2);
    Commit(row, "c", "new", 10 * i + 3, 10 * i + 4);
  }
  oracle_.SetNext(1000);
  ASSERT_OK(collector_->RunRound());
  const GcStats s = collector_->GetStats();
  EXPECT_EQ(s.tasks_done, 3u);
  EXPECT_EQ(s.rows_examined, 9u);
  EXPECT_EQ(s.rows_collected, 9u);
  EXPECT_EQ(s.versions_dropped, 9u);
  for (int i = 0; i < 9; i++) {
    const std::string row = "r" + std::to_string(i);
    EXPECT_EQ(Timestamps(row, txn::kWriteFamily, "c"),
              std::vector<uint64_t>{static_cast<uint64_t>(10 * i + 4)});
    EXPECT_EQ(Read(row, "c"), "new");
  }
}

// A round that stopped part way (here a damaged record in the second of
// three row ranges) is finished by the next collector opened on its
// progress file, at its own safepoint and without the range it had done;
// then that collector's round goes on to a newer safepoint.
TEST_F(CollectorTest, ARestartedCollectorFinishesTheInterruptedRound) {
  split_rows_ = {"r3", "r6"};
  OpenDb();
  const std::string sp_path = dir_.Join("SAFEPOINT");
  const std::string progress_path = dir_.Join("PROGRESS");
  auto open = [&] {
    std::unique_ptr<SafepointStore> store;
    ASSERT_OK(OpenLocalSafepointStore(FileSystem::Default(), sp_path, &store));
    std::unique_ptr<ProgressLog> progress;
    ASSERT_OK(ProgressLog::Open(FileSystem::Default(), progress_path, &progress));
    OpenCollector(std::move(store), std::move(progress));
  };
  open();
  for (int i = 0; i < 9; i++) {
    const std::string row = "r" + std::to_string(i);
    Commit(row, "c", "old", 10 * i + 1, 10 * i + 2);
    Commit(row, "c", "new", 10 * i + 3, 10 * i + 4);
  }
  RowMutation bad;
  bad.Put(txn::kWriteFamily, "z", 95, "not a write record");
  ASSERT_OK(Bank().Mutate(WriteOptions(), "r4", bad));
  oracle_.SetNext(1000);
  EXPECT_FALSE(collector_->RunRound().ok());
  const uint64_t interrupted = collector_->safepoint();
  EXPECT_GE(interrupted, 1000u);
  EXPECT_EQ(collector_->GetStats().tasks_done, 1u);
  EXPECT_EQ(collector_->GetStats().collected_safepoint, 0u);
  ASSERT_OK(collector_->Close());
  collector_.reset();
  // The first range is collected, the rest not.
  EXPECT_EQ(Timestamps("r0", txn::kWriteFamily, "c"), std::vector<uint64_t>{4});
  EXPECT_EQ(Timestamps("r7", txn::kWriteFamily, "c"), (std::vector<uint64_t>{74, 72}));

  RowMutation fix;
  fix.DeleteColumn(txn::kWriteFamily, "z");
  ASSERT_OK(Bank().Mutate(WriteOptions(), "r4", fix));
  GcStats at_resumed_end;
  round_hook_ = [&](RoundStep step, uint64_t sp) {
    if (step == RoundStep::kCollected && sp == interrupted) at_resumed_end = collector_->GetStats();
  };
  open();
  // Its locks were resolved: compactions may collect at it already.
  EXPECT_EQ((*collector_->ready()).load(), interrupted);
  oracle_.SetNext(2000);
  ASSERT_OK(collector_->RunRound());
  EXPECT_EQ(at_resumed_end.tasks_skipped, 1u);
  EXPECT_EQ(at_resumed_end.tasks_done, 2u);
  EXPECT_EQ(at_resumed_end.rows_examined, 6u);  // r3 to r8
  EXPECT_EQ(at_resumed_end.collected_safepoint, interrupted);
  const GcStats after = collector_->GetStats();
  EXPECT_GE(after.safepoint, 2000u);
  EXPECT_EQ(after.collected_safepoint, after.safepoint);
  for (int i = 0; i < 9; i++) {
    const std::string row = "r" + std::to_string(i);
    EXPECT_EQ(Timestamps(row, txn::kWriteFamily, "c"),
              std::vector<uint64_t>{static_cast<uint64_t>(10 * i + 4)});
    EXPECT_EQ(Read(row, "c"), "new");
  }
  ASSERT_OK(collector_->Close());
  collector_.reset();
  // What is collected is known across a restart too.
  open();
  EXPECT_EQ(collector_->GetStats().collected_safepoint, after.safepoint);
  EXPECT_EQ((*collector_->ready()).load(), after.safepoint);
}

// Of an ack column only the newest version at or below the safepoint stays.
TEST_F(CollectorTest, OlderAcksGo) {
  SetUpAll();
  RowMutation acks;
  for (uint64_t ts : {5, 8, 12, 30}) acks.Put(txn::kAckFamily, "c", ts, "");
  ASSERT_OK(Bank().Mutate(WriteOptions(), "r", acks));
  oracle_.SetNext(100);
  CollectAt(20);
  EXPECT_EQ(Timestamps("r", txn::kAckFamily, "c"), (std::vector<uint64_t>{30, 12}));
  EXPECT_EQ(collector_->GetStats().versions_dropped, 2u);
}

}  // namespace
}  // namespace strata::gc
