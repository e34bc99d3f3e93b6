// The concurrent bank: writer threads make random transfers among accounts
// spread over two tables while coordinators are stopped at random fail
// points (as crashed clients stop) or paused there (as slow ones do), reader
// threads take snapshot reads of every account (Scan and BatchGet in one
// transaction, which must agree) that must add up to the starting total,
// and, on the engine, a thread flushes and compacts so reads cross memtables
// and SSTables. Afterwards one reading pass with default options leaves no
// lock cell anywhere: every lock left by a stopped coordinator is resolved by
// the first reader that meets it.
//
// Runs on an engine tenant and on ModelRowStore tables (the second store
// behind the seam), each with the default lock TTL and with a TTL of a few
// milliseconds, where readers wait for locks before pushing them, coordinators
// are paused for several TTLs, and heartbeats, pushes and TTL expiry all
// happen (counted by a store wrapper that looks at the conditional writes).
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/random.h"
#include "strata/engine.h"
#include "strata/table.h"
#include "strata/transaction.h"
#include "txn/records.h"
#include "txn/transaction_db.h"
#include "txn/transaction_services.h"
#include "bank_workload.h"
#include "txn_test_util.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::txn {
namespace {

using test::Bank;
using test::EngineTables;
using test::Leg;
using test::ReadMode;

constexpr std::array<FailPoint, 5> kFailPoints = {
    FailPoint::kAfterPrimaryPrewrite, FailPoint::kAfterSecondaryBatch, FailPoint::kAfterCommitTs,
    FailPoint::kAfterPrimaryCommit, FailPoint::kAfterSecondaryCommit};

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// What the conditional writes of the protocol did, as an observer of the
// store sees them.
struct Observed {
  std::atomic<uint64_t> heartbeats{0};     // a primary lock's TTL extended
  std::atomic<uint64_t> pushes{0};         // a primary lock's min_commit_ts raised
  std::atomic<uint64_t> ttl_rollbacks{0};  // a primary rolled back past its lock's TTL
  std::atomic<uint64_t> rollbacks{0};      // any primary rolled back against its lock
};

// Forwards to a store and counts, in Observed, the writes of a primary lock
// made against its exact old value: refreshes, pushes and rollbacks.
class ObservingStore final : public test::ForwardingRowStore {
 public:
  ObservingStore(std::shared_ptr<RowStore> base, Observed* observed)
      : ForwardingRowStore(std::move(base)), observed_(observed) {}

  Result<CheckAndMutateResult> CheckAndMutate(const WriteOptions& o, std::string_view row,
                                              const std::vector<Condition>& c,
                                              const RowMutation& m) override {
    Result<CheckAndMutateResult> r = base().CheckAndMutate(o, row, c, m);
    if (r.ok() && r->applied) Observe(c, m);
    return r;
  }

 private:
  void Observe(const std::vector<Condition>& c, const RowMutation& m) {
    if (c.size() != 1 || c[0].kind() != Condition::Kind::kValueEquals ||
        c[0].family() != kLockFamily) {
      return;
    }
    LockRecord old_lock;
    if (!DecodeLock(c[0].value(), &old_lock).ok()) return;
    for (const RowMutation::Entry& e : m.entries()) {
      if (e.kind != RowMutation::Kind::kPut) continue;
      if (e.family == kLockFamily) {
        LockRecord new_lock;
        if (!DecodeLock(e.value, &new_lock).ok()) return;
        if (new_lock.min_commit_ts > old_lock.min_commit_ts) observed_->pushes++;
        if (new_lock.ttl_millis > old_lock.ttl_millis) observed_->heartbeats++;
      } else if (e.family == kWriteFamily) {
        WriteRecord w;
        if (!DecodeWrite(e.value, &w).ok() || w.kind != WriteKind::kRollback) continue;
        observed_->rollbacks++;
        const uint64_t now_millis = Clock::Default()->NowMicros() / 1000;
        if (w.rolled_back_by == 0 && now_millis > old_lock.wall_millis + old_lock.ttl_millis) {
          observed_->ttl_rollbacks++;
        }
      }
    }
  }

  Observed* const observed_;
};

class ObservingTables final : public TableResolver {
 public:
  ObservingTables(std::shared_ptr<TableResolver> base, Observed* observed)
      : base_(std::move(base)), observed_(observed) {}
  Result<std::shared_ptr<RowStore>> Resolve(std::string_view table) override {
    std::lock_guard<std::mutex> l(mu_);
    auto it = stores_.find(std::string(table));
    if (it != stores_.end()) return it->second;
    STRATA_ASSIGN_OR_RETURN(std::shared_ptr<RowStore> base, base_->Resolve(table));
    auto store = std::make_shared<ObservingStore>(std::move(base), observed_);
    stores_.emplace(std::string(table), store);
    return std::shared_ptr<RowStore>(store);
  }

 private:
  std::shared_ptr<TableResolver> base_;
  Observed* const observed_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<RowStore>> stores_;
};

// Decides which coordinators stop and where (the fail-point hook): a planned
// transaction stops at the first fail point of its plan's kind, and the
// kinds are planned in turn so each is met; other transactions are paused
// now and then at a fail point, so readers meet live locks.
class Stopper {
 public:
  Stopper(uint64_t stop_one_in, uint64_t pause_one_in, uint64_t max_pause_micros)
      : stop_one_in_(stop_one_in), pause_one_in_(pause_one_in),
        max_pause_micros_(max_pause_micros) {}

  // Called with each transaction that is about to commit.
  void MaybePlan(uint64_t start_ts, Random* rnd) {
    if (!rnd->OneIn(stop_one_in_)) return;
    const FailPoint p = kFailPoints[next_.fetch_add(1) % kFailPoints.size()];
    std::lock_guard<std::mutex> l(mu_);
    plans_[start_ts] = p;
  }

  bool Hook(FailPoint p, uint64_t start_ts) {
    {
      std::lock_guard<std::mutex> l(mu_);
      auto it = plans_.find(start_ts);
      if (it != plans_.end() && it->second == p) {
        plans_.erase(it);
        stops_[static_cast<size_t>(p)]++;
        return true;
      }
    }
    const uint64_t h = Mix(start_ts * 8 + static_cast<uint64_t>(p));
    if (pause_one_in_ > 0 && h % pause_one_in_ == 0) {
      pauses_++;
      Clock::Default()->SleepMicros((h / pause_one_in_) % max_pause_micros_);
    }
    return false;
  }

  uint64_t stops(FailPoint p) const { return stops_[static_cast<size_t>(p)].load(); }
  uint64_t pauses() const { return pauses_.load(); }

 private:
  const uint64_t stop_one_in_;
  const uint64_t pause_one_in_;
  const uint64_t max_pause_micros_;
  std::atomic<uint64_t> next_{0};
  std::array<std::atomic<uint64_t>, kFailPoints.size()> stops_{};
  std::atomic<uint64_t> pauses_{0};
  std::mutex mu_;
  std::map<uint64_t, FailPoint> plans_;
};

struct BankParam {
  const char* name;
  bool engine;     // an engine tenant; else ModelRowStore tables
  bool short_ttl;  // locks live a few milliseconds
  // Synced commits, with EngineOptions::apply_before_sync: the readers'
  // snapshots meet commits whose fdatasync is still running.
  bool apply_before_sync = false;
};

// Printed in test listings by name (not as raw bytes, which hold a pointer).
void PrintTo(const BankParam& p, std::ostream* os) { *os << p.name; }

class BankTest : public ::testing::TestWithParam<BankParam> {
 protected:
  void SetUp() override {
    seed_ = test::TestSeed();
    std::printf("STRATA_TEST_SEED=%llu\n", static_cast<unsigned long long>(seed_));
    const bool sanitized = test::UnderSanitizer();
    // The kill test syncs; this one is about interleavings, and syncs only
    // to meet commits applied before their fdatasync.
    options_.sync = GetParam().apply_before_sync;
    test::SetCommitModeFromEnvironment(&options_);
    if (GetParam().short_ttl) {
      options_.lock_ttl_millis = sanitized ? 20 : 5;
      reader_options_.lock_wait_millis = 3 * options_.lock_ttl_millis;
      writer_options_.lock_wait_millis = options_.lock_ttl_millis / 2;
    }
    if (!GetParam().engine) {
      // Foreground secondaries, one row per batch: every fail point of a
      // commit is on the committing thread and comes between two batches.
      // With one-phase commits, two rows, so that a transfer within one
      // table fits one batch.
      options_.commit_secondaries_in_background = false;
      options_.max_batch_rows = options_.one_phase_commit ? 2 : 1;
    }
  }

  void TearDown() override {
    if (db_ != nullptr) {
      EXPECT_OK(db_->Close());
    }
    db_.reset();
    if (engine_ != nullptr) {
      EXPECT_OK(engine_->Close());
    }
  }

  void Open(Stopper* stopper) {
    TxnDBConfig config;
    config.options = options_;
    std::shared_ptr<TableResolver> base;
    if (GetParam().engine) {
      EngineOptions eo;
      eo.write_buffer_size = 64 << 10;  // many flushes
      eo.level0_compaction_trigger = 2;  // and compactions
      eo.apply_before_sync = GetParam().apply_before_sync;
      Result<std::unique_ptr<Engine>> e = Engine::Open(dir_.Join("db"), eo);
      ASSERT_OK(e.status());
      engine_ = std::move(e).value();
      ASSERT_OK(engine_->CreateTenant("t"));
      Result<std::shared_ptr<TransactionServices>> services =
          TransactionServices::Open(dir_.Join("services"));
      ASSERT_OK(services.status());
      auto tables = std::make_shared<EngineTables>(*engine_->OpenTenant("t"));
      for (const std::string& t : bank_.tables) ASSERT_OK(tables->Create(t));
      config.oracle = TransactionServicesAccess::oracle(**services);
      config.registry = TransactionServicesAccess::registry(**services);
      config.single_log = true;
      config.keep_alive = *services;
      base = tables;
    } else {
      ASSERT_OK(LocalLivenessRegistry::Open(dir_.Join("registry"), {}, &registry_));
      auto tables = std::make_shared<test::ModelTables>();
      for (const std::string& t : bank_.tables) ASSERT_OK(tables->Create(t));
      model_ = tables;
      config.oracle = &oracle_;
      config.registry = registry_.get();
      base = tables;
    }
    config.tables = std::make_shared<ObservingTables>(base, &observed_);
    config.fail_point = [stopper](FailPoint p, uint64_t ts) {
      return stopper != nullptr && stopper->Hook(p, ts);
    };
    Result<std::unique_ptr<TransactionDB>> db = TxnDB::Make(std::move(config));
    ASSERT_OK(db.status());
    db_ = std::move(db).value();
  }

  // The store of `table` as the transactions do not see it: for counting locks.
  std::shared_ptr<RowStore> RawStore(const std::string& table) {
    if (model_ != nullptr) return model_->Get(table);
    return std::shared_ptr<RowStore>(NewTableRowStore(*engine_->OpenTenant("t")->OpenTable(table)));
  }

  // One snapshot read of every account, by Scan and by BatchGet in the same
  // transaction: both must give the same balances, none negative, adding
  // up to the total. Busy (a lock that kept changing) is counted, not failed.
  void CheckSnapshot(const TransactionOptions& o, Random* rnd, std::atomic<uint64_t>* busy) {
    Result<std::unique_ptr<Transaction>> txn = db_->Begin(o);
    ASSERT_OK(txn.status());
    const bool scan_first = rnd->OneIn(2);
    std::vector<int64_t> first_read;
    for (ReadMode mode : {scan_first ? ReadMode::kScan : ReadMode::kBatchGet,
                          scan_first ? ReadMode::kBatchGet : ReadMode::kScan}) {
      Result<std::vector<int64_t>> balances = test::ReadBalances(txn->get(), bank_, mode);
      if (!balances.ok() && balances.status().code() == Status::Code::kBusy && busy != nullptr) {
        (*busy)++;
        return;
      }
      ASSERT_OK(balances.status());
      ASSERT_EQ(test::Sum(*balances), bank_.total())
          << "snapshot at " << (*txn)->start_ts() << " by "
          << (mode == ReadMode::kScan ? "Scan" : "BatchGet");
      for (int a = 0; a < bank_.accounts; ++a) {
        ASSERT_GE((*balances)[a], 0) << bank_.RowOf(a) << " at " << (*txn)->start_ts();
      }
      if (first_read.empty()) {
        first_read = *balances;
      } else {
        ASSERT_EQ(first_read, *balances) << "Scan and BatchGet disagree in one snapshot at "
                                         << (*txn)->start_ts();
      }
    }
  }

  void Run();

  test::ScratchDir dir_{"txn_bank"};
  uint64_t seed_ = 0;
  Bank bank_;
  TransactionDBOptions options_;
  TransactionOptions reader_options_;
  TransactionOptions writer_options_;
  Observed observed_;
  std::unique_ptr<Stopper> stopper_;  // outlives db_, whose threads call it
  // Engine.
  std::unique_ptr<Engine> engine_;
  // Model.
  test::CountingOracle oracle_;
  std::unique_ptr<LocalLivenessRegistry> registry_;
  std::shared_ptr<test::ModelTables> model_;
  std::unique_ptr<TransactionDB> db_;
};

void BankTest::Run() {
  const bool sanitized = test::UnderSanitizer();
  const bool short_ttl = GetParam().short_ttl;
  constexpr int kWriters = 8;
  constexpr int kReaders = 2;
  const int transfers_per_writer = test::LongTests() ? 2000 : (sanitized ? 100 : 600);
  // Stop about one coordinator in 25 (one in 10 under a sanitizer, so every
  // kind is still met); pause one fail point in 40 for up to 3 ms, or for up
  // to three TTLs when TTLs are short.
  const uint64_t max_pause = short_ttl ? 3 * options_.lock_ttl_millis * 1000 : 3000;
  stopper_ = std::make_unique<Stopper>(sanitized ? 10 : 25, 40, max_pause);
  Stopper& stopper = *stopper_;
  Open(&stopper);
  ASSERT_NE(db_, nullptr);
  ASSERT_OK(test::Populate(db_.get(), bank_));

  std::atomic<bool> writers_done{false};
  std::atomic<bool> failed{false};
  std::atomic<uint64_t> commits{0}, stopped{0}, reads{0}, reader_busy{0}, writer_busy{0},
      flushes{0}, compactions{0};
  // By TransactionError::Kind.
  std::array<std::atomic<uint64_t>, size_t(TransactionError::Kind::kLockWaitTimeout) + 1> aborts{};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  const auto start = std::chrono::steady_clock::now();

  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      Random rnd(seed_ * 31 + w);
      std::vector<Leg> legs;
      for (int done = 0; done < transfers_per_writer && !failed;) {
        if (std::chrono::steady_clock::now() > deadline) {
          ADD_FAILURE() << "writer " << w << " made only " << done << " transfers in 120 s";
          failed = true;
          return;
        }
        Result<std::unique_ptr<Transaction>> txn = db_->Begin(writer_options_);
        ASSERT_OK(txn.status());
        Transaction* t = txn->get();
        Status s = test::PrepareTransfer(t, bank_, &rnd, &legs);
        if (s.ok()) {
          stopper.MaybePlan(t->start_ts(), &rnd);
          s = t->Commit();
        }
        if (s.ok()) {
          ++done;
          commits++;
          continue;
        }
        if (s.code() == Status::Code::kAborted &&
            s.message().find("fail point") != std::string::npos) {
          ++done;  // committed or not; either way the coordinator is gone
          stopped++;
          continue;
        }
        if (s.code() == Status::Code::kBusy) {
          writer_busy++;
        } else if (s.code() == Status::Code::kAborted) {
          aborts[static_cast<size_t>(t->error().kind)]++;
        } else {
          ADD_FAILURE() << "writer " << w << ": " << s.ToString() << " ("
                        << TransactionErrorKindName(t->error().kind) << ")";
          failed = true;
          return;
        }
        (void)t->Rollback();
      }
    });
  }
  for (int r = 0; r < kReaders; ++r) {
    threads.emplace_back([&, r] {
      Random rnd(seed_ * 37 + r);
      while (!writers_done && !failed) {
        CheckSnapshot(reader_options_, &rnd, &reader_busy);
        if (::testing::Test::HasFatalFailure()) {
          failed = true;
          return;
        }
        reads++;
      }
    });
  }
  std::thread flusher;
  if (engine_ != nullptr) {
    flusher = std::thread([&] {
      for (int i = 1; !writers_done && !failed; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(sanitized ? 50 : 15));
        Status s = i % 4 == 0 ? engine_->Compact() : engine_->Flush();
        if (!s.ok()) {
          ADD_FAILURE() << "flush/compact: " << s.ToString();
          failed = true;
          return;
        }
        (i % 4 == 0 ? compactions : flushes)++;
      }
    });
  }
  for (int w = 0; w < kWriters; ++w) threads[w].join();
  writers_done = true;
  for (size_t i = kWriters; i < threads.size(); ++i) threads[i].join();
  if (flusher.joinable()) flusher.join();
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(failed);

  // One reading pass with default options: the total is there, and no lock
  // is left, in memtables or SSTables.
  Random rnd(seed_);
  CheckSnapshot(TransactionOptions(), &rnd, nullptr);
  ASSERT_FALSE(HasFatalFailure());
  for (const std::string& table : bank_.tables) {
    EXPECT_EQ(test::CountLocks(*RawStore(table)), 0u) << table;
  }
  // Transfers within one table commit in one phase when asked to; across
  // two, in two.
  const uint64_t one_phase = TxnDBOf(*db_)->stats().one_phase_commits.load();
  if (options_.one_phase_commit) {
    EXPECT_GT(one_phase, 0u);
  } else {
    EXPECT_EQ(one_phase, 0u);
  }
  if (engine_ != nullptr) {
    ASSERT_OK(engine_->Compact());  // and once more from SSTables alone
    CheckSnapshot(TransactionOptions(), &rnd, nullptr);
  }

  std::printf(
      "bank %s: %.2f s, %llu commits, %llu stopped, %llu snapshot reads (%llu busy), "
      "writer aborts: conflict %llu, locked %llu, by older %llu, rolled back %llu, deadlock %llu, "
      "lock wait timeout %llu, busy %llu; %llu flushes, %llu compactions\n",
      GetParam().name, secs, (unsigned long long)commits.load(), (unsigned long long)stopped.load(),
      (unsigned long long)reads.load(), (unsigned long long)reader_busy.load(),
      (unsigned long long)aborts[size_t(TransactionError::Kind::kWriteConflict)].load(),
      (unsigned long long)aborts[size_t(TransactionError::Kind::kKeyLocked)].load(),
      (unsigned long long)aborts[size_t(TransactionError::Kind::kAbortedByOlder)].load(),
      (unsigned long long)aborts[size_t(TransactionError::Kind::kRolledBack)].load(),
      (unsigned long long)aborts[size_t(TransactionError::Kind::kDeadlock)].load(),
      (unsigned long long)aborts[size_t(TransactionError::Kind::kLockWaitTimeout)].load(),
      (unsigned long long)writer_busy.load(), (unsigned long long)flushes.load(),
      (unsigned long long)compactions.load());
  std::printf("  stops:");
  for (FailPoint p : kFailPoints) {
    std::printf(" %s %llu", FailPointName(p), (unsigned long long)stopper.stops(p));
  }
  std::printf("; %llu pauses; heartbeats %llu, pushes %llu, rollbacks %llu (past TTL %llu)\n",
              (unsigned long long)stopper.pauses(), (unsigned long long)observed_.heartbeats.load(),
              (unsigned long long)observed_.pushes.load(),
              (unsigned long long)observed_.rollbacks.load(),
              (unsigned long long)observed_.ttl_rollbacks.load());
  if (engine_ != nullptr) {
    const uint64_t waits = engine_->GetStats().durable_read_waits;
    std::printf("  reads that waited for a commit's fdatasync: %llu\n", (unsigned long long)waits);
    // The run met what it is for: reads of commits not yet durable.
    if (GetParam().apply_before_sync) {
      EXPECT_GT(waits, 0u);
    }
  }

  for (FailPoint p : kFailPoints) {
    // Background commits merge transactions and have no fail point of their own.
    if (p == FailPoint::kAfterSecondaryCommit && options_.commit_secondaries_in_background) {
      continue;
    }
    EXPECT_GT(stopper.stops(p), 0u) << FailPointName(p);
  }
  EXPECT_GT(reads.load(), 0u);
  // Pessimistic writers take for_update_ts just before they commit, so a
  // reader rarely finds their lock below its snapshot; with short TTLs it
  // waits such a lock out rather than pushing it.
  if (!(options_.pessimistic && short_ttl)) {
    EXPECT_GT(observed_.pushes.load(), 0u);
  }
  if (options_.pessimistic) {
    // Every writer locks what it writes with GetForUpdate: writers take
    // turns and never conflict (they may deadlock, locking in any order).
    EXPECT_EQ(aborts[size_t(TransactionError::Kind::kWriteConflict)].load(), 0u);
  }
  if (short_ttl) {
    EXPECT_GT(observed_.heartbeats.load(), 0u);
    EXPECT_GT(observed_.ttl_rollbacks.load(), 0u);
  }
}

TEST_P(BankTest, TransfersKeepTheTotalAndLeaveNoLocks) { Run(); }

INSTANTIATE_TEST_SUITE_P(
    Stores, BankTest,
    ::testing::Values(BankParam{"Engine", true, false}, BankParam{"EngineShortTtl", true, true},
                      BankParam{"EngineSyncedApplyBeforeSync", true, false, true},
                      BankParam{"Model", false, false}, BankParam{"ModelShortTtl", false, true}),
    [](const ::testing::TestParamInfo<BankParam>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace strata::txn
