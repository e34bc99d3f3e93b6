// Crash test of transactions on the engine: a child process runs the bank
// workload (bank_workload.h) with sync on from several threads, each
// transfer also writing a receipt row, in the same transaction, that names
// the transfer's legs; after Commit returns OK the child reports the receipt
// through a pipe. The parent kills it with SIGKILL, reopens the engine and the
// transaction services (a new liveness instance, so every owner of the dead
// process is dead at once) and checks, in one reading pass with default
// TransactionOptions:
//   * every reported receipt is there (acknowledged commits survive);
//   * every balance is its initial balance plus the legs of the receipts
//     present, so a transfer is there whole or not at all, and the total
//     holds;
//   * no lock cell is left afterwards: the reading pass resolved every lock of
//     the dead process at once, though the child's locks had a 60 s TTL.
// Repeated on one directory with kill points at different delays, so each
// round also recovers what the rounds before it left.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/random.h"
#include "strata/engine.h"
#include "strata/table.h"
#include "strata/transaction.h"
#include "bank_workload.h"
#include "txn_test_util.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata {
namespace {

using test::Bank;
using test::Leg;

constexpr int kChildThreads = 4;
constexpr char kReceipts[] = "receipts";
constexpr char kReceiptColumn[] = "c";

// `apply_before_sync`: the children of odd rounds run with it on.
EngineOptions CrashEngineOptions(bool apply_before_sync = false) {
  EngineOptions o;
  o.apply_before_sync = apply_before_sync;
  o.wal_segment_size = 1 << 20;  // small segments recover fast; the kill lands on switches too
  o.write_buffer_size = 64 << 10;  // the kill also lands on flushes
  o.level0_compaction_trigger = 2;  // and compactions
  return o;
}

std::string ReceiptRow(int round, int thread, int seq) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "r%03d-t%d-%07d", round, thread, seq);
  return buf;
}

// "account:delta;account:delta;..."
std::string EncodeLegs(const std::vector<Leg>& legs) {
  std::string s;
  for (const Leg& l : legs) s += std::to_string(l.account) + ":" + std::to_string(l.delta) + ";";
  return s;
}
bool DecodeLegs(std::string_view s, std::vector<Leg>* legs) {
  legs->clear();
  while (!s.empty()) {
    const size_t colon = s.find(':');
    const size_t semi = s.find(';');
    if (colon == std::string_view::npos || semi == std::string_view::npos || semi < colon) {
      return false;
    }
    Leg leg;
    leg.account = std::stoi(std::string(s.substr(0, colon)));
    leg.delta = std::stoll(std::string(s.substr(colon + 1, semi - colon - 1)));
    legs->push_back(leg);
    s.remove_prefix(semi + 1);
  }
  return !legs->empty();
}

void WriteLine(int fd, const std::string& line) {
  // One write of less than PIPE_BUF bytes: the pipe keeps it whole.
  if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) ::_exit(6);
}

// The child: transfers on kChildThreads threads and a flusher until killed.
[[noreturn]] void RunChild(const std::string& dir, const Bank& bank, int round, uint64_t seed,
                           int fd) {
  Result<std::unique_ptr<Engine>> engine =
      Engine::Open(dir + "/db", CrashEngineOptions(/*apply_before_sync=*/round % 2 == 1));
  if (!engine.ok()) {
    std::fprintf(stderr, "child: engine: %s\n", engine.status().ToString().c_str());
    ::_exit(3);
  }
  Result<std::shared_ptr<TransactionServices>> services =
      TransactionServices::Open(dir + "/services");
  if (!services.ok()) {
    std::fprintf(stderr, "child: services: %s\n", services.status().ToString().c_str());
    ::_exit(4);
  }
  TransactionDBOptions options;
  options.sync = true;
  test::SetCommitModeFromEnvironment(&options);
  options.lock_ttl_millis = 60'000;  // a TTL cannot be what resolves these locks
  Result<std::unique_ptr<TransactionDB>> db =
      TransactionDB::Open(*services, *(*engine)->OpenTenant("t"), options);
  if (!db.ok()) ::_exit(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < kChildThreads; ++t) {
    threads.emplace_back([&, t] {
      Random rnd(seed * 1000 + round * kChildThreads + t);
      std::vector<Leg> legs;
      for (int seq = 0;; ++seq) {
        Result<std::unique_ptr<Transaction>> txn = (*db)->Begin();
        if (!txn.ok()) ::_exit(5);
        const std::string receipt = ReceiptRow(round, t, seq);
        Status s = test::PrepareTransfer(txn->get(), bank, &rnd, &legs);
        if (s.ok()) s = (*txn)->Set(kReceipts, receipt, kReceiptColumn, EncodeLegs(legs));
        if (s.ok()) s = (*txn)->Commit();
        if (s.ok()) {
          WriteLine(fd, receipt + "\n");
        } else if (s.code() != Status::Code::kAborted && s.code() != Status::Code::kBusy) {
          std::fprintf(stderr, "child: transfer: %s\n", s.ToString().c_str());
          ::_exit(5);
        }
      }
    });
  }
  threads.emplace_back([&] {
    while (true) {
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      if (!(*engine)->Flush().ok()) ::_exit(7);
    }
  });
  for (std::thread& th : threads) th.join();
  ::_exit(0);
}

class TxnBankCrashTest : public ::testing::Test {
 protected:
  void Open() {
    Result<std::unique_ptr<Engine>> e = Engine::Open(dir_.Join("db"), CrashEngineOptions());
    ASSERT_OK(e.status());
    engine_ = std::move(e).value();
    Result<std::shared_ptr<TransactionServices>> services =
        TransactionServices::Open(dir_.Join("services"));
    ASSERT_OK(services.status());
    Result<Tenant> tenant = engine_->OpenTenant("t");
    ASSERT_OK(tenant.status());
    Result<std::unique_ptr<TransactionDB>> db = TransactionDB::Open(*services, *tenant);
    ASSERT_OK(db.status());
    db_ = std::move(db).value();
  }
  void Close() {
    if (db_ != nullptr) {
      EXPECT_OK(db_->Close());
    }
    db_.reset();  // and the services with it
    if (engine_ != nullptr) {
      EXPECT_OK(engine_->Close());
    }
    engine_.reset();
  }
  void TearDown() override { Close(); }

  size_t Locks(const std::string& table) {
    Result<Table> t = engine_->OpenTenant("t")->OpenTable(table);
    EXPECT_OK(t.status());
    return t.ok() ? test::CountLocks(*NewTableRowStore(*t)) : SIZE_MAX;
  }
  size_t AllLocks() {
    size_t n = Locks(kReceipts);
    for (const std::string& t : bank_.tables) n += Locks(t);
    return n;
  }

  test::ScratchDir dir_{"txn_bank_crash"};
  Bank bank_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<TransactionDB> db_;
};

TEST_F(TxnBankCrashTest, SigkillLosesNoAcknowledgedTransferAndLeavesNoLock) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("STRATA_TEST_SEED=" + std::to_string(seed));
  Random rnd(seed);
  {
    Result<std::unique_ptr<Engine>> e = Engine::Open(dir_.Join("db"), CrashEngineOptions());
    ASSERT_OK(e.status());
    ASSERT_OK((*e)->CreateTenant("t"));
    ASSERT_OK((*e)->Close());
  }
  Open();
  for (const std::string& t : bank_.tables) ASSERT_OK(db_->CreateTable(t));
  ASSERT_OK(db_->CreateTable(kReceipts));
  ASSERT_OK(test::Populate(db_.get(), bank_));
  Close();  // the child forks from a process with no engine threads

  const int rounds = test::LongTests() ? 30 : (test::UnderSanitizer() ? 3 : 6);
  const int delays_ms[] = {20, 80, 200, 450};
  std::set<std::string> reported;
  size_t locks_met = 0;
  for (int round = 0; round < rounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const int delay = delays_ms[round % 4] + static_cast<int>(rnd.Uniform(50));
    const test::KilledChild killed = test::RunChildUntilKilled(
        [&](int fd) { RunChild(dir_.path(), bank_, round, seed, fd); }, delay);
    ASSERT_TRUE(killed.error.empty()) << killed.error << "\n" << killed.output;
    size_t this_round = 0;
    for (size_t pos = 0;;) {
      const size_t nl = killed.output.find('\n', pos);
      if (nl == std::string::npos) break;  // a partial last line acknowledges nothing
      reported.insert(killed.output.substr(pos, nl - pos));
      ++this_round;
      pos = nl + 1;
    }

    Open();
    ASSERT_NE(db_, nullptr);
    const size_t locks_before = AllLocks();
    locks_met += locks_before;
    // One reading pass, default options: receipts, then every account.
    Result<std::unique_ptr<Transaction>> txn = db_->Begin();
    ASSERT_OK(txn.status());
    std::map<std::string, std::vector<Leg>> receipts;
    {
      Result<std::unique_ptr<TransactionIterator>> it = (*txn)->Scan(kReceipts, "", "");
      ASSERT_OK(it.status());
      for (; (*it)->Valid(); (*it)->Next()) {
        std::vector<Leg> legs;
        ASSERT_TRUE(DecodeLegs((*it)->value(), &legs)) << (*it)->row();
        receipts.emplace(std::string((*it)->row()), std::move(legs));
      }
      ASSERT_OK((*it)->status());
    }
    for (const std::string& r : reported) {
      ASSERT_TRUE(receipts.count(r)) << "acknowledged transfer " << r << " is lost";
    }
    Result<std::vector<int64_t>> balances =
        test::ReadBalances(txn->get(), bank_, test::ReadMode::kBatchGet);
    ASSERT_OK(balances.status());
    std::vector<int64_t> want(bank_.accounts, bank_.initial_balance);
    for (const auto& [row, legs] : receipts) {
      for (const Leg& l : legs) {
        ASSERT_LT(l.account, bank_.accounts) << row;
        want[l.account] += l.delta;
      }
    }
    for (int a = 0; a < bank_.accounts; ++a) {
      EXPECT_EQ((*balances)[a], want[a])
          << bank_.RowOf(a) << ": a transfer is there in part (receipts and balances disagree)";
    }
    EXPECT_EQ(test::Sum(*balances), bank_.total());
    EXPECT_EQ(AllLocks(), 0u) << "locks of the dead process survived a reading pass";
    std::printf(
        "round %d: killed after %d ms, %zu receipts reported (%zu in all), %zu present, "
        "%zu locks left by the kill\n",
        round, delay, this_round, reported.size(), receipts.size(), locks_before);
    Close();
  }
  EXPECT_GT(reported.size(), 0u);
  EXPECT_GT(locks_met, 0u) << "no kill left a lock: the reading pass resolved nothing";
  std::printf("%zu locks of dead processes met in %d rounds\n", locks_met, rounds);
}

}  // namespace
}  // namespace strata
