// The snapshot-isolation history checker (history.h): first on histories
// with planted anomalies, which it must find, and on a history that has none;
// then on the list-append workload run against the engine: threads of
// transactions that read keys and append unique values to them, in child
// processes killed with SIGKILL, with coordinators stopped at random points of
// their commits, in each commit mode; a final read of every key closes the
// history, which must hold no anomaly.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/random.h"
#include "history.h"
#include "strata/engine.h"
#include "strata/transaction.h"
#include "txn/transaction_db.h"
#include "txn/transaction_services.h"
#include "txn_test_util.h"
#include "util/status_matchers.h"
#include "util/test_util.h"

namespace strata::test {
namespace {

using Outcome = HistoryTxn::Outcome;

// ---- Planted anomalies ---------------------------------------------------------

HistoryOp R(const std::string& key, std::vector<int64_t> list) {
  return HistoryOp{HistoryOp::Kind::kRead, key, 0, std::move(list)};
}
HistoryOp A(const std::string& key, int64_t value) {
  return HistoryOp{HistoryOp::Kind::kAppend, key, value, {}};
}
HistoryTxn T(uint64_t id, Outcome outcome, std::vector<HistoryOp> ops, bool final_read = false) {
  return HistoryTxn{id, outcome, std::move(ops), final_read};
}

uint64_t Count(const HistoryCheck& c, const std::string& type) {
  for (const auto& [t, n] : c.counts) {
    if (t == type) return n;
  }
  return 0;
}

TEST(HistoryCheckerTest, CleanSerialHistoryHasNoAnomaly) {
  // Transactions one after another, each reading what the ones before wrote.
  Random rnd(TestSeed());
  std::map<std::string, std::vector<int64_t>> db;
  History h;
  int64_t next = 1;
  for (uint64_t id = 1; id <= 2000; id++) {
    HistoryTxn t{id, Outcome::kOk, {}, false};
    const int n = 1 + static_cast<int>(rnd.Uniform(4));
    for (int i = 0; i < n; i++) {
      const std::string key = "k" + std::to_string(rnd.Uniform(10));
      t.ops.push_back(R(key, db[key]));
      if (rnd.OneIn(2)) {
        t.ops.push_back(A(key, next));
        db[key].push_back(next++);
      }
    }
    if (rnd.OneIn(10)) {
      // A failed transaction: its appends never show.
      t.outcome = Outcome::kFail;
      for (HistoryOp& op : t.ops) {
        if (op.kind == HistoryOp::Kind::kAppend) db[op.key].pop_back();
      }
      t.ops.erase(
          std::remove_if(t.ops.begin(), t.ops.end(),
                         [](const HistoryOp& op) { return op.kind == HistoryOp::Kind::kRead; }),
          t.ops.end());
    }
    h.push_back(std::move(t));
  }
  HistoryTxn final_read{9999, Outcome::kOk, {}, true};
  for (const auto& [key, list] : db) final_read.ops.push_back(R(key, list));
  h.push_back(final_read);
  const HistoryCheck c = CheckSnapshotIsolation(h);
  EXPECT_TRUE(c.ok()) << c.ToString();
  EXPECT_GT(c.edges, 1000u);
}

TEST(HistoryCheckerTest, FindsAbortedIntermediateAndGarbageReads) {
  const HistoryCheck c = CheckSnapshotIsolation({
      T(1, Outcome::kFail, {A("x", 1)}), T(2, Outcome::kOk, {R("x", {1})}),           // G1a
      T(3, Outcome::kOk, {A("y", 2), A("y", 3)}), T(4, Outcome::kOk, {R("y", {2})}),  // G1b
      T(5, Outcome::kOk, {R("z", {7})}),                                      // nobody appended 7
      T(6, Outcome::kOk, {A("w", 8)}), T(7, Outcome::kOk, {R("w", {8, 8})}),  // duplicate
  });
  EXPECT_EQ(Count(c, "G1a"), 1u) << c.ToString();
  EXPECT_EQ(Count(c, "G1b"), 1u) << c.ToString();
  EXPECT_EQ(Count(c, "garbage read"), 1u) << c.ToString();
  EXPECT_EQ(Count(c, "duplicate"), 1u) << c.ToString();
}

TEST(HistoryCheckerTest, FindsIncompatibleOrders) {
  const HistoryCheck c = CheckSnapshotIsolation({
      T(1, Outcome::kOk, {A("x", 1)}),
      T(2, Outcome::kOk, {A("x", 2)}),
      T(3, Outcome::kOk, {A("x", 3)}),
      T(4, Outcome::kOk, {R("x", {1, 2})}),
      T(5, Outcome::kOk, {R("x", {1, 3, 2})}),
  });
  EXPECT_EQ(Count(c, "incompatible order"), 1u) << c.ToString();
}

TEST(HistoryCheckerTest, FindsLostUpdatesAndLostWrites) {
  // Both read x empty and both appended: one should have aborted.
  HistoryCheck c = CheckSnapshotIsolation({
      T(1, Outcome::kOk, {R("x", {}), A("x", 1)}),
      T(2, Outcome::kOk, {R("x", {}), A("x", 2)}),
      T(3, Outcome::kOk, {R("x", {1, 2})}, /*final_read=*/true),
  });
  EXPECT_GE(Count(c, "lost update"), 1u) << c.ToString();
  EXPECT_EQ(Count(c, "G-single"), 1u) << c.ToString();  // 2 -rw-> 1... -ww-> 2
  // A committed append the final read does not have.
  c = CheckSnapshotIsolation({
      T(1, Outcome::kOk, {A("x", 1)}),
      T(2, Outcome::kOk, {A("x", 2)}),
      T(3, Outcome::kOk, {R("x", {1})}, /*final_read=*/true),
  });
  EXPECT_EQ(Count(c, "lost write"), 1u) << c.ToString();
  // An append whose outcome is unknown may be missing.
  c = CheckSnapshotIsolation({
      T(1, Outcome::kOk, {A("x", 1)}),
      T(2, Outcome::kUnknown, {A("x", 2)}),
      T(3, Outcome::kOk, {R("x", {1})}, /*final_read=*/true),
  });
  EXPECT_TRUE(c.ok()) << c.ToString();
}

TEST(HistoryCheckerTest, FindsForbiddenCycles) {
  // G0: the two transactions' writes interleave in opposite orders on x and y.
  HistoryCheck c = CheckSnapshotIsolation({
      T(1, Outcome::kOk, {A("x", 1), A("y", 2)}),
      T(2, Outcome::kOk, {A("x", 3), A("y", 4)}),
      T(3, Outcome::kOk, {R("x", {1, 3}), R("y", {4, 2})}, true),
  });
  EXPECT_EQ(Count(c, "G0"), 1u) << c.ToString();
  // G1c: each reads the other's write.
  c = CheckSnapshotIsolation({
      T(1, Outcome::kOk, {A("x", 1), R("y", {2})}),
      T(2, Outcome::kOk, {A("y", 2), R("x", {1})}),
  });
  EXPECT_EQ(Count(c, "G1c"), 1u) << c.ToString();
  // G-single, a fractured read: 2 sees 1's write to x but not to y.
  c = CheckSnapshotIsolation({
      T(1, Outcome::kOk, {A("x", 1), A("y", 2)}),
      T(2, Outcome::kOk, {R("x", {1}), R("y", {})}),
      T(3, Outcome::kOk, {R("x", {1}), R("y", {2})}, true),
  });
  EXPECT_EQ(Count(c, "G-single"), 1u) << c.ToString();
  // G-nonadjacent: 1 -rw-> 2 -wr-> 3 -rw-> 4 -wr-> 1.
  c = CheckSnapshotIsolation({
      T(1, Outcome::kOk, {R("a", {}), R("d", {4})}),
      T(2, Outcome::kOk, {A("a", 1), A("b", 2)}),
      T(3, Outcome::kOk, {R("b", {2}), R("c", {})}),
      T(4, Outcome::kOk, {A("c", 3), A("d", 4)}),
      T(5, Outcome::kOk, {R("a", {1}), R("b", {2}), R("c", {3}), R("d", {4})}, true),
  });
  EXPECT_EQ(Count(c, "G-nonadjacent"), 1u) << c.ToString();
  // An unknown outcome whose write was seen counts as committed.
  c = CheckSnapshotIsolation({
      T(1, Outcome::kUnknown, {A("x", 1), A("y", 2)}),
      T(2, Outcome::kOk, {R("x", {1}), R("y", {})}),
      T(3, Outcome::kOk, {R("y", {2})}),
  });
  EXPECT_EQ(Count(c, "G-single"), 1u) << c.ToString();
}

TEST(HistoryCheckerTest, WriteSkewIsAllowed) {
  // Each reads both keys empty and appends to one: two adjacent rw edges.
  const HistoryCheck c = CheckSnapshotIsolation({
      T(1, Outcome::kOk, {R("x", {}), R("y", {}), A("x", 1)}),
      T(2, Outcome::kOk, {R("x", {}), R("y", {}), A("y", 2)}),
      T(3, Outcome::kOk, {R("x", {1}), R("y", {2})}, true),
  });
  EXPECT_TRUE(c.ok()) << c.ToString();
  EXPECT_EQ(c.write_skew_cycles, 1u);
}

TEST(HistoryCheckerTest, LinesRoundTrip) {
  const HistoryTxn t = T(42, Outcome::kUnknown, {R("x", {}), R("y", {1, 2, 3}), A("y", 4)}, true);
  const std::optional<HistoryTxn> back = ParseTxn(FormatTxn(t));
  ASSERT_TRUE(back.has_value()) << FormatTxn(t);
  EXPECT_EQ(FormatTxn(*back), FormatTxn(t));
  EXPECT_EQ(back->ops.size(), 3u);
  EXPECT_EQ(back->ops[1].list, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_FALSE(ParseTxn("7 maybe").has_value());
  EXPECT_FALSE(ParseTxn("7 ok q x 1;").has_value());
}

// ---- The workload ----------------------------------------------------------------

constexpr int kSlots = 16;                     // keys in use at a time
constexpr uint64_t kTxnsPerGeneration = 1500;  // then every key is replaced by a fresh one
constexpr const char* kTables[] = {"la_a", "la_b"};
constexpr const char* kColumn = "l";

std::string KeyName(uint64_t generation, int slot) {
  return "g" + std::to_string(generation) + "k" + std::to_string(slot);
}
const char* TableOf(const std::string& key) { return kTables[std::hash<std::string>()(key) % 2]; }

std::vector<int64_t> ParseList(const std::string& s, bool* ok) {
  std::vector<int64_t> list;
  size_t pos = 0;
  *ok = true;
  while (pos < s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    char* end = nullptr;
    const std::string item = s.substr(pos, comma - pos);
    list.push_back(std::strtoll(item.c_str(), &end, 10));
    if (item.empty() || *end != '\0') *ok = false;
    pos = comma + 1;
  }
  return list;
}

// The commit modes a round runs in.
struct Mode {
  const char* name;
  bool one_phase;
  bool pessimistic;
  bool primary_alone;
  bool background_secondaries;
};
constexpr std::array<Mode, 5> kModes = {{
    {"two-phase", false, false, false, true},
    {"one-phase", true, false, false, true},
    {"pessimistic", true, true, false, true},
    {"primary-alone", false, false, true, true},
    {"foreground-secondaries", false, false, false, false},
}};

constexpr std::array<txn::FailPoint, 5> kFailPoints = {
    txn::FailPoint::kAfterPrimaryPrewrite, txn::FailPoint::kAfterSecondaryBatch,
    txn::FailPoint::kAfterCommitTs, txn::FailPoint::kAfterPrimaryCommit,
    txn::FailPoint::kAfterSecondaryCommit};

EngineOptions WorkloadEngineOptions() {
  EngineOptions o;
  o.write_buffer_size = 64 << 10;   // flushes
  o.level0_compaction_trigger = 2;  // and compactions during the run
  return o;
}

// One process's part of the workload: threads of transactions until killed,
// each transaction's line written to `fd` before its commit ("I ...") and its
// outcome after ("C <id> ok|fail").
[[noreturn]] void RunWorkload(const std::string& dir, int round, uint64_t first_generation,
                              int fd) {
  const Mode& mode = kModes[round % kModes.size()];
  Result<std::unique_ptr<Engine>> engine = Engine::Open(dir + "/db", WorkloadEngineOptions());
  if (!engine.ok()) {
    std::fprintf(stderr, "child: %s\n", engine.status().ToString().c_str());
    _exit(3);
  }
  Result<std::shared_ptr<TransactionServices>> services =
      TransactionServices::Open(dir + "/services");
  if (!services.ok()) _exit(4);
  (*engine)->CreateTenant("t").PermitUncheckedError();
  auto tables = std::make_shared<EngineTables>(*(*engine)->OpenTenant("t"));
  for (const char* t : kTables) tables->Create(t).PermitUncheckedError();

  // A coordinator in 40 stops at one of the fail points: it never finishes,
  // and its locks are left for others to resolve.
  std::mutex stop_mu;
  std::map<uint64_t, txn::FailPoint> planned;
  txn::TxnDBConfig config;
  config.options.one_phase_commit = mode.one_phase;
  config.options.pessimistic = mode.pessimistic;
  config.options.prewrite_primary_alone = mode.primary_alone;
  config.options.commit_secondaries_in_background = mode.background_secondaries;
  config.options.lock_ttl_millis = 500;
  config.oracle = txn::TransactionServicesAccess::oracle(**services);
  config.registry = txn::TransactionServicesAccess::registry(**services);
  config.single_log = true;
  config.keep_alive = *services;
  config.tables = tables;
  config.fail_point = [&](txn::FailPoint p, uint64_t start_ts) {
    std::lock_guard<std::mutex> l(stop_mu);
    auto it = planned.find(start_ts);
    if (it == planned.end() || it->second != p) return false;
    planned.erase(it);
    return true;
  };
  Result<std::unique_ptr<TransactionDB>> db = txn::TxnDB::Make(std::move(config));
  if (!db.ok()) _exit(5);

  std::atomic<uint64_t> counter{0};
  std::mutex out_mu;
  auto emit = [&](const std::string& line) {
    std::lock_guard<std::mutex> l(out_mu);
    const std::string s = line + "\n";
    if (write(fd, s.data(), s.size()) != static_cast<ssize_t>(s.size())) _exit(6);
  };
  const uint64_t tag = static_cast<uint64_t>(round + 1) << 40;
  std::vector<std::thread> threads;
  for (int th = 0; th < 6; th++) {
    threads.emplace_back([&, th] {
      Random rnd(TestSeed() * 7919 + static_cast<uint64_t>(round) * 131 + th);
      while (true) {
        const uint64_t n = counter.fetch_add(1);
        const uint64_t generation = first_generation + n / kTxnsPerGeneration;
        TransactionOptions to;
        to.lock_wait_millis = rnd.OneIn(2) ? 0 : 50;
        Result<std::unique_ptr<Transaction>> txn = (*db)->Begin(to);
        if (!txn.ok()) _exit(7);
        HistoryTxn record{tag | n, Outcome::kUnknown, {}, false};
        std::set<int> slots;
        const int keys = 1 + static_cast<int>(rnd.Uniform(4));
        while (static_cast<int>(slots.size()) < keys)
          slots.insert(static_cast<int>(rnd.Uniform(kSlots)));
        bool read_failed = false;
        for (int slot : slots) {
          const std::string key = KeyName(generation, slot);
          const bool append = rnd.OneIn(2);
          // A pessimistic transaction reads every key with GetForUpdate: it
          // reads the newest value, not the snapshot's (strata/transaction.h),
          // so a plain Get of another key would read from another moment.
          Result<std::string> value = mode.pessimistic
                                          ? (*txn)->GetForUpdate(TableOf(key), key, kColumn)
                                          : (*txn)->Get(TableOf(key), key, kColumn);
          if (!value.ok() && !value.status().IsNotFound()) {
            read_failed = true;  // locked or conflicting: give up, nothing written
            break;
          }
          bool parsed = true;
          std::vector<int64_t> list =
              value.ok() ? ParseList(*value, &parsed) : std::vector<int64_t>{};
          if (!parsed) {
            std::fprintf(stderr, "child: %s holds \"%s\"\n", key.c_str(), value->c_str());
            _exit(8);
          }
          record.ops.push_back(R(key, list));
          if (append) {
            const int64_t v = static_cast<int64_t>(tag | (n * 8 + record.ops.size()));
            record.ops.push_back(A(key, v));
            std::string s = value.ok() ? *value : "";
            s += (s.empty() ? "" : ",") + std::to_string(v);
            if (!(*txn)->Set(TableOf(key), key, kColumn, s).ok()) _exit(9);
          }
        }
        if (read_failed) {
          (*txn)->Rollback().PermitUncheckedError();
          continue;
        }
        if (rnd.OneIn(40)) {
          std::lock_guard<std::mutex> l(stop_mu);
          planned[(*txn)->start_ts()] = kFailPoints[rnd.Uniform(kFailPoints.size())];
        }
        emit("I " + FormatTxn(record));
        Status s = (*txn)->Commit();
        {
          std::lock_guard<std::mutex> l(stop_mu);
          planned.erase((*txn)->start_ts());  // a plan its commit never reached
        }
        // A stopped coordinator may have committed (after the primary's commit).
        const bool stopped = s.ToString().find("stopped at fail point") != std::string::npos;
        using Kind = TransactionError::Kind;
        const Kind k = (*txn)->error().kind;
        if (s.ok()) {
          emit("C " + std::to_string(record.id) + " ok");
        } else if (!stopped &&
                   (k == Kind::kWriteConflict || k == Kind::kKeyLocked ||
                    k == Kind::kAbortedByOlder || k == Kind::kRolledBack || k == Kind::kDeadlock ||
                    k == Kind::kLockWaitTimeout || k == Kind::kTooOld)) {
          emit("C " + std::to_string(record.id) + " fail");
        }  // else the outcome stays unknown
      }
    });
  }
  for (auto& t : threads) t.join();
  _exit(0);
}

TEST(ListAppendTest, KilledProcessesAndStoppedCoordinatorsKeepSnapshotIsolation) {
  ScratchDir dir("list_append");
  const uint64_t seed = TestSeed();
  SCOPED_TRACE("STRATA_TEST_SEED=" + std::to_string(seed));
  Random rnd(seed);
  const char* target_env = std::getenv("STRATA_LIST_APPEND_TXNS");
  const uint64_t target = target_env != nullptr ? std::strtoull(target_env, nullptr, 10)
                          : LongTests()         ? 100000
                          : UnderSanitizer()    ? 1000
                                                : 4000;
  std::map<uint64_t, HistoryTxn> txns;
  std::set<std::string> keys;
  uint64_t generation = 0;
  uint64_t committed = 0, failed = 0, unknown = 0;
  int round = 0;
  for (; round < 2000 && (committed < target || round < static_cast<int>(kModes.size())); round++) {
    const KilledChild killed =
        RunChildUntilKilled([&](int fd) { RunWorkload(dir.path(), round, generation, fd); },
                            300 + static_cast<int>(rnd.Uniform(1200)));
    ASSERT_TRUE(killed.error.empty()) << "round " << round << ": " << killed.error;
    size_t pos = 0;
    while (true) {
      const size_t nl = killed.output.find('\n', pos);
      if (nl == std::string::npos) break;  // a partial last line was never acted on
      const std::string line = killed.output.substr(pos, nl - pos);
      pos = nl + 1;
      if (line.rfind("I ", 0) == 0) {
        std::optional<HistoryTxn> t = ParseTxn(line.substr(2));
        ASSERT_TRUE(t.has_value()) << line;
        for (const HistoryOp& op : t->ops) {
          keys.insert(op.key);
          generation = std::max<uint64_t>(generation, std::stoull(op.key.substr(1)));
        }
        txns[t->id] = std::move(*t);
      } else if (line.rfind("C ", 0) == 0) {
        char outcome[16];
        unsigned long long id;
        ASSERT_EQ(std::sscanf(line.c_str(), "C %llu %15s", &id, outcome), 2) << line;
        ASSERT_EQ(txns.count(id), 1u) << line;
        txns[id].outcome = std::string(outcome) == "ok" ? Outcome::kOk : Outcome::kFail;
      } else {
        FAIL() << "unexpected line from the workload: " << line;
      }
    }
    committed = failed = unknown = 0;
    for (const auto& [id, t] : txns) {
      (t.outcome == Outcome::kOk ? committed : t.outcome == Outcome::kFail ? failed : unknown)++;
    }
  }

  // The final read, through the public API, after every process is gone.
  Result<std::unique_ptr<Engine>> engine = Engine::Open(dir.Join("db"), WorkloadEngineOptions());
  ASSERT_OK(engine);
  Result<std::shared_ptr<TransactionServices>> services =
      TransactionServices::Open(dir.Join("services"));
  ASSERT_OK(services);
  Result<std::unique_ptr<TransactionDB>> db =
      TransactionDB::Open(*services, *(*engine)->OpenTenant("t"));
  ASSERT_OK(db);
  Result<std::unique_ptr<Transaction>> txn = (*db)->Begin();
  ASSERT_OK(txn);
  History history;
  for (auto& [id, t] : txns) history.push_back(std::move(t));
  HistoryTxn final_read{UINT64_MAX, Outcome::kOk, {}, true};
  for (const std::string& key : keys) {
    Result<std::string> value = (*txn)->Get(TableOf(key), key, kColumn);
    ASSERT_TRUE(value.ok() || value.status().IsNotFound()) << value.status().ToString();
    bool parsed = true;
    final_read.ops.push_back(
        R(key, value.ok() ? ParseList(*value, &parsed) : std::vector<int64_t>{}));
    ASSERT_TRUE(parsed) << key;
  }
  history.push_back(std::move(final_read));
  ASSERT_OK((*txn)->Commit());
  ASSERT_OK((*db)->Close());
  ASSERT_OK((*engine)->Close());

  const HistoryCheck check = CheckSnapshotIsolation(history);
  std::printf(
      "list-append: %d processes killed, %zu transactions (%llu committed, %llu failed, "
      "%llu unknown), %zu keys; %s",
      round, history.size() - 1, static_cast<unsigned long long>(committed),
      static_cast<unsigned long long>(failed), static_cast<unsigned long long>(unknown),
      keys.size(), check.ToString().c_str());
  EXPECT_TRUE(check.ok()) << check.ToString();
  EXPECT_GE(committed, target);
  EXPECT_GT(check.edges, committed);  // the transactions did depend on each other
}

}  // namespace
}  // namespace strata::test
