// txn_bench: transfers between accounts through Strata transactions
// (strata/transaction.h) and, in the same run, through RocksDB's
// TransactionDB (pessimistic) and OptimisticTransactionDB, at the same
// durability, with 1 to 16 threads, low and high contention, sync on and off.
//
// One transfer reads k accounts (k = 1, 2, 8, 32; distinct, in key order),
// writes each back changed and commits. For k >= 2 one account pays the
// others 1 to 100 each, so the total stays the same; for k = 1 the account
// gains 1, so the total grows by exactly the committed k = 1 transfers (a
// lost update shows). A transfer that aborts (conflict, lock, timeout) is
// retried with the same accounts until it commits or the run's time is up;
// every failed attempt counts as an abort, only commits count as transfers.
//
//   strata       a TransactionDB over an engine tenant: Get each account
//                (column "bal" of table "accounts", 8-byte values, stored
//                inline in the commit record), Set, Commit; secondaries
//                committed in the background (the default)
//   strata_fg    the same with commit_secondaries_in_background = false
//                (2-key transfers only)
//   strata_pess  the same as strata with pessimistic transactions
//                (TransactionDBOptions::pessimistic): GetForUpdate each
//                account, which locks it and waits for its holder, as
//                rocks_pess does
//   rocks_pess   rocksdb::TransactionDB: GetForUpdate, Put, Commit; lock
//                waits up to RocksDB's default 1 s, then TimedOut = an abort
//   rocks_occ    rocksdb::OptimisticTransactionDB with set_snapshot: Get at
//                the snapshot, Put, Commit (validation at commit; Busy = an
//                abort)
// Contention: low = --accounts accounts (default 1,000,000), uniform; high =
// --hot_accounts accounts (default 64, so 32-key transfers fit).
// Sync: Strata TransactionDBOptions::sync (the primary's commit waits for
// fdatasync of the engine's log; prewrites ride on it), RocksDB
// WriteOptions::sync (Commit waits for fdatasync of the WAL). Both
// acknowledge a commit only after an fdatasync that covers it.
//
// Each benchmark is one time-boxed run (--txn_seconds, default 0.4 s): every
// thread transfers until then; Google Benchmark's barriers start them
// together, and the rates divide by the run's own wall time. Before a run,
// thread 0 opens what it needs (Strata: a TransactionDB with the run's
// options over the bank's engine; high contention: a newly made bank, see
// --fresh_hot). After it, thread 0 closes that (waiting for background
// commits) and checks the bank: the accounts the run touched, read back in
// one transaction, must hold what they held before plus one per committed
// 1-key transfer; small banks are also summed whole (Strata: a transactional
// scan; RocksDB: an iterator), the large one once more at the end (or after
// every run with --full_check). A failed check fails the benchmark, marks
// the bank broken for later runs and makes the program exit 1.
//
// Counters:
//   txn/s, keys/s    committed transfers and their accounts per second
//   aborts/s, abort% failed attempts per second; per attempt (percent)
//   syncs/txn        log fdatasyncs per committed transfer (group commit)
//   cpu_us           CPU time of the whole process (every thread: workers,
//                    log, flush, compaction, background commits) from the
//                    start of thread 0's transfers until the last thread
//                    stops, in microseconds per committed transfer: what a
//                    transfer costs, less noisy than txn/s on a busy machine
//   Strata only, microseconds per committed transfer, summed over threads
//   (so their sum is about threads / txn/s), from timestamps taken at
//   TxnDBConfig::fail_point in the committing thread (--split=0 opens
//   through TransactionDB::Open instead, without them):
//     oracle_us   Begin (start_ts) + the commit_ts step
//     read_us     the k Gets (and the buffered Sets)
//     prewrite_us Commit up to the last prewrite (liveness registration,
//                 the primary's row, then the other rows in one batch)
//     commit1_us  commit of the primary (the commit point)
//     second_us   from there until Commit returns: the secondaries in the
//                 foreground, or handing them to the background thread,
//                 plus unregistering the transaction
//     wasted_us   attempts that aborted, whole
//   read_waits/txn  Strata only: reads that met a commit applied before its
//                   fdatasync and waited for it (--apply_before_sync, on by
//                   default; EngineStats::durable_read_waits), per committed
//                   transfer
// (Google Benchmark's own Time column is the wall time over the threads, as
// each thread runs one iteration; its CPU column is thread 0's.)
// At the end a summary table gives Strata / RocksDB ratios per
// configuration (medians over --benchmark_repetitions) and the headline rows.
//
//   build/bench/txn_bench                                    # everything
//   build/bench/txn_bench --benchmark_filter='keys:2/'       # 2-key transfers only
//   build/bench/txn_bench --benchmark_filter='keys:2/.*threads:(8|16)$'
//       --benchmark_repetitions=3      # (one command line) the headline, 3 times
//   build/bench/txn_bench --help                             # the flags
//
// Databases go under --db, else $STRATA_BENCH_DIR, else the system temp dir,
// in a directory removed at the end. Both engines: no compression, bloom 10
// bits per key, 16 KiB blocks, 32 MiB memtables, 64 MiB block cache; each is
// loaded before its first run and compacted once. Figures depend on the
// machine and what else runs on it: compare only within one run.
#include <benchmark/benchmark.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "commit_marks.h"
#include "common/random.h"
#include "strata/engine.h"
#include "strata/gc.h"
#include "strata/table.h"
#include "strata/transaction.h"
#include "txn/transaction_db.h"
#include "txn/transaction_services.h"

#ifdef STRATA_HAVE_ROCKSDB
#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/iterator.h>
#include <rocksdb/options.h>
#include <rocksdb/statistics.h>
#include <rocksdb/table.h>
#include <rocksdb/utilities/optimistic_transaction_db.h>
#include <rocksdb/utilities/transaction.h>
#include <rocksdb/utilities/transaction_db.h>
#include <rocksdb/write_batch.h>
#endif

namespace {

using SteadyClock = std::chrono::steady_clock;

// ---- Flags and configurations ----------------------------------------------------

struct Flags {
  double seconds = 0.4;
  uint64_t accounts = 1'000'000;
  uint64_t hot_accounts = 64;
  bool split = true;
  bool fresh_hot = true;
  bool full_check = false;
  uint64_t backoff_us = 0;
  uint64_t lock_buffer = strata::TransactionalTableOptions().lock_group.write_buffer_size;
  bool io_uring = strata::EngineOptions().use_io_uring;
  // On, as txn/README.md recommends for synced commits (the engine's default
  // is off).
  bool apply_before_sync = true;
  // Strata's garbage collector during each run: life time and round
  // interval in milliseconds; 0: none.
  uint64_t gc_ms = 0;
  // TransactionDBOptions::one_phase_commit (the library's default).
  bool one_phase = strata::TransactionDBOptions().one_phase_commit;
  std::string db;
  uint64_t seed = 301;
};
Flags g_flags;

constexpr char kHelp[] = R"(txn_bench flags (besides Google Benchmark's --benchmark_*):
  --txn_seconds=S    length of each timed run in seconds (default 0.4)
  --accounts=N       accounts of the low-contention bank (default 1000000)
  --hot_accounts=N   accounts of the high-contention bank (default 64, >= 32)
  --fresh_hot=0|1    1 (default): every high-contention run starts from a newly made
                     bank (engine or RocksDB database), so its figures do not depend
                     on what ran before; 0: one hot bank for the whole program, whose
                     rows keep every version written (Strata keeps MVCC history)
  --full_check=0|1   1: after every run, also sum every account of the bank (slow for
                     the low-contention bank: about 1.7 s per Strata run). Default 0:
                     the accounts the run touched are checked after it, small banks
                     are summed whole after every run, large ones at the end
  --split=0|1        Strata step timing through TxnDBConfig::fail_point (default 1);
                     0 opens Strata through TransactionDB::Open, no timing hooks
  --backoff_us=N     after the n-th abort in a row of one transfer, sleep a random
                     0..min(N, 10us << n) microseconds before retrying; 0 (default)
                     retries at once (after a yield), in every system alike
  --lock_buffer=N    Strata's TransactionalTableOptions::lock_group.write_buffer_size
                     in bytes (default 1048576; 0: the engine's write_buffer_size, 32 MiB)
  --io_uring=0|1     Strata's EngineOptions::use_io_uring (default 1): 0 writes and
                     syncs the log with pwritev + fdatasync
  --apply_before_sync=0|1
                     Strata's EngineOptions::apply_before_sync (default 1, as
                     txn/README.md recommends with synced commits; the engine's
                     default is 0): 1 applies a synced commit before its
                     fdatasync, so prewrites do not wait for other transactions'
                     fdatasyncs (readers that meet it still do)
  --gc_ms=N          run Strata's garbage collector during each run, versions kept N ms
                     and a round every N ms (default 0: none); needs --split=0, since
                     it collects a TransactionDB::Open database
  --one_phase=0|1    Strata's TransactionDBOptions::one_phase_commit (default 1, the
                     library's): 1 commits a transfer in one all-or-nothing batch
                     (its whole commit then counts as prewrite_us); 0, two phases
  --db=DIR           parent directory of the databases (default $STRATA_BENCH_DIR
                     or the system temp dir)
  --seed=N           seed of the account choices (default 301)
Benchmark names: transfer/<system>/keys:<k>/<low|high>/<sync|nosync>/...threads:<t>
with system strata, strata_fg, strata_pess, rocks_pess, rocks_occ.
)";

enum class System { kStrata, kStrataFg, kRocksPessimistic, kRocksOptimistic, kStrataPess };
enum class Contention { kLow, kHigh };

const char* SystemName(System s) {
  switch (s) {
    case System::kStrata:
      return "strata";
    case System::kStrataFg:
      return "strata_fg";
    case System::kStrataPess:
      return "strata_pess";
    case System::kRocksPessimistic:
      return "rocks_pess";
    case System::kRocksOptimistic:
      return "rocks_occ";
  }
  return "?";
}

struct Config {
  System system = System::kStrata;
  int keys = 2;
  Contention contention = Contention::kLow;
  bool sync = false;
  std::string name;  // the benchmark's
};

bool IsStrata(System s) {
  return s == System::kStrata || s == System::kStrataFg || s == System::kStrataPess;
}

// ---- Accounts ------------------------------------------------------------------

constexpr uint64_t kInitialBalance = 1'000'000;
constexpr char kTable[] = "accounts";
constexpr char kColumn[] = "bal";
// Accounts per loading transaction / write batch.
constexpr uint64_t kLoadChunk = 8192;

// 16 bytes: "acct" and 12 decimal digits.
std::string AccountKey(uint64_t i) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "acct%012" PRIu64, i);
  return std::string(buf, 16);
}

// Balances are 8 bytes, little-endian; arithmetic is modulo 2^64, so the
// total is checked modulo 2^64 too (an account may go below zero).
std::string EncodeBalance(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; i++) s[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

bool DecodeBalance(std::string_view s, uint64_t* v) {
  if (s.size() != 8) return false;
  uint64_t r = 0;
  for (int i = 7; i >= 0; i--) r = (r << 8) | static_cast<unsigned char>(s[i]);
  *v = r;
  return true;
}

// One transfer: the accounts in ascending order and what each gains (mod 2^64).
struct Transfer {
  std::vector<uint64_t> accounts;
  std::vector<std::string> keys;
  std::vector<uint64_t> deltas;
};

void PickTransfer(strata::Random* rng, uint64_t n, int k, Transfer* t) {
  t->accounts.clear();
  while (static_cast<int>(t->accounts.size()) < k) {
    const uint64_t a = rng->Uniform(n);
    if (std::find(t->accounts.begin(), t->accounts.end(), a) == t->accounts.end()) {
      t->accounts.push_back(a);
    }
  }
  std::sort(t->accounts.begin(), t->accounts.end());
  t->keys.resize(k);
  for (int i = 0; i < k; i++) t->keys[i] = AccountKey(t->accounts[i]);
  t->deltas.assign(k, 0);
  if (k == 1) {
    t->deltas[0] = 1;
    return;
  }
  const int payer = static_cast<int>(rng->Uniform(k));
  for (int i = 0; i < k; i++) {
    if (i == payer) continue;
    const uint64_t amount = 1 + rng->Uniform(100);
    t->deltas[i] += amount;
    t->deltas[payer] -= amount;
  }
}

// ---- Step timing -------------------------------------------------------------------

// Nanoseconds per step, summed over a thread's transfers.
struct Steps {
  uint64_t oracle = 0;
  uint64_t read = 0;
  uint64_t prewrite = 0;
  uint64_t commit_primary = 0;
  uint64_t secondaries = 0;
  uint64_t wasted = 0;

  void Add(const Steps& o) {
    oracle += o.oracle;
    read += o.read;
    prewrite += o.prewrite;
    commit_primary += o.commit_primary;
    secondaries += o.secondaries;
    wasted += o.wasted;
  }
};

uint64_t Nanos(SteadyClock::time_point a, SteadyClock::time_point b) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count());
}

using strata::bench::MarkFailPoint;

// ---- Banks -----------------------------------------------------------------------

enum class Outcome { kCommitted, kAborted, kError };

class Worker {
 public:
  virtual ~Worker() = default;
  // One attempt of `t`. kError sets *error.
  virtual Outcome Attempt(const Transfer& t, Steps* steps, std::string* error) = 0;
};

// A database of accounts, shared by the runs of one (engine, contention).
class Bank {
 public:
  explicit Bank(uint64_t accounts) : accounts_(accounts) {}
  virtual ~Bank() = default;

  uint64_t accounts() const { return accounts_; }
  // What the balances must add up to (mod 2^64).
  uint64_t expected_total = 0;
  // Every account's balance as the last check read it (or as loaded).
  std::vector<uint64_t> shadow;
  bool broken = false;

  // Thread 0, before a run / after it (all workers gone).
  virtual std::string BeginRun(const Config& c) = 0;
  virtual std::unique_ptr<Worker> NewWorker(const Config& c) = 0;
  virtual std::string EndRun() = 0;
  // Sums every balance; counts the accounts.
  virtual std::string Sum(uint64_t* total, uint64_t* count) = 0;
  // The balances of `accounts`, read in one transaction (RocksDB: at one
  // snapshot).
  virtual std::string Read(const std::vector<uint64_t>& accounts, std::vector<uint64_t>* out) = 0;
  // Log fdatasyncs since open.
  virtual uint64_t Syncs() = 0;
  // Reads that waited for a commit's fdatasync since open (Strata).
  virtual uint64_t DurableReadWaits() { return 0; }

 private:
  const uint64_t accounts_;
};

std::filesystem::path g_root;
bool g_check_failed = false;

std::shared_ptr<strata::TransactionServices> g_services;

std::string StatusString(const char* what, const strata::Status& s) {
  return std::string(what) + ": " + s.ToString();
}

bool Retryable(const strata::Status& s) {
  return s.code() == strata::Status::Code::kAborted || s.code() == strata::Status::Code::kBusy;
}

// Transactional tables of one tenant, for a TxnDB wired up here: what
// TransactionDB::Open builds, so that the fail-point hook can be set.
class BenchTables final : public strata::txn::TableResolver {
 public:
  explicit BenchTables(strata::Tenant tenant) : tenant_(std::move(tenant)) {}
  strata::Result<std::shared_ptr<strata::RowStore>> Resolve(std::string_view table) override {
    std::lock_guard<std::mutex> l(mu_);
    auto it = stores_.find(table);
    if (it != stores_.end()) return it->second;
    strata::Result<strata::Table> t = tenant_.OpenTable(table);
    if (!t.ok()) return t.status();
    std::shared_ptr<strata::RowStore> store = strata::NewTableRowStore(std::move(t).value());
    stores_.emplace(std::string(table), store);
    return store;
  }

 private:
  strata::Tenant tenant_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<strata::RowStore>, std::less<>> stores_;
};

class StrataWorker final : public Worker {
 public:
  StrataWorker(strata::TransactionDB* db, bool for_update) : db_(db), for_update_(for_update) {}

  Outcome Attempt(const Transfer& t, Steps* steps, std::string* error) override {
    const auto t0 = SteadyClock::now();
    strata::Result<std::unique_ptr<strata::Transaction>> txn = db_->Begin();
    if (!txn.ok()) {
      *error = StatusString("Begin", txn.status());
      return Outcome::kError;
    }
    const auto t1 = SteadyClock::now();
    const size_t k = t.keys.size();
    balances_.resize(k);
    for (size_t i = 0; i < k; i++) {
      strata::Result<std::string> v = for_update_ ? (*txn)->GetForUpdate(kTable, t.keys[i], kColumn)
                                                  : (*txn)->Get(kTable, t.keys[i], kColumn);
      if (!v.ok()) {
        if (Retryable(v.status())) {
          steps->wasted += Nanos(t0, SteadyClock::now());
          return Outcome::kAborted;
        }
        *error = "Get " + t.keys[i] + ": " + v.status().ToString();
        return Outcome::kError;
      }
      if (!DecodeBalance(*v, &balances_[i])) {
        *error = "account " + t.keys[i] + " holds " + std::to_string(v->size()) + " bytes";
        return Outcome::kError;
      }
    }
    for (size_t i = 0; i < k; i++) {
      strata::Status s =
          (*txn)->Set(kTable, t.keys[i], kColumn, EncodeBalance(balances_[i] + t.deltas[i]));
      if (!s.ok()) {
        *error = StatusString("Set", s);
        return Outcome::kError;
      }
    }
    const auto t2 = SteadyClock::now();
    strata::bench::t_commit_marks.Reset();
    strata::Status s = (*txn)->Commit();
    const auto t3 = SteadyClock::now();
    strata::bench::t_commit_marks.active = false;
    if (!s.ok()) {
      if (Retryable(s)) {
        steps->wasted += Nanos(t0, t3);
        return Outcome::kAborted;
      }
      *error = StatusString("Commit", s);
      return Outcome::kError;
    }
    using FP = strata::txn::FailPoint;
    const strata::bench::CommitMarks& m = strata::bench::t_commit_marks;
    const int pp = static_cast<int>(FP::kAfterPrimaryPrewrite);
    const int sb = static_cast<int>(FP::kAfterSecondaryBatch);
    const int ct = static_cast<int>(FP::kAfterCommitTs);
    const int pc = static_cast<int>(FP::kAfterPrimaryCommit);
    steps->oracle += Nanos(t0, t1);
    steps->read += Nanos(t1, t2);
    if (m.seen[pp] && m.seen[ct] && m.seen[pc]) {
      const auto prewritten = m.seen[sb] ? m.at[sb] : m.at[pp];
      steps->prewrite += Nanos(t2, prewritten);
      steps->oracle += Nanos(prewritten, m.at[ct]);
      steps->commit_primary += Nanos(m.at[ct], m.at[pc]);
      steps->secondaries += Nanos(m.at[pc], t3);
    } else {
      steps->prewrite += Nanos(t2, t3);  // no hooks (--split=0): the whole commit
    }
    return Outcome::kCommitted;
  }

 private:
  strata::TransactionDB* const db_;
  const bool for_update_;  // strata_pess: GetForUpdate
  std::vector<uint64_t> balances_;
};

class StrataBank final : public Bank {
 public:
  static std::unique_ptr<Bank> Open(const std::string& dir, uint64_t accounts, std::string* error) {
    std::unique_ptr<StrataBank> bank(new StrataBank(accounts));
    strata::EngineOptions o;  // 32 MiB memtables, 64 MiB block cache: the defaults
    o.use_io_uring = g_flags.io_uring;
    o.apply_before_sync = g_flags.apply_before_sync;
    auto e = strata::Engine::Open(dir, o);
    if (!e.ok()) {
      *error = StatusString("Engine::Open", e.status());
      return nullptr;
    }
    bank->engine_ = std::move(e).value();
    strata::Status s = bank->engine_->CreateTenant("bench");
    if (!s.ok()) {
      *error = StatusString("CreateTenant", s);
      return nullptr;
    }
    auto tenant = bank->engine_->OpenTenant("bench");
    if (!tenant.ok()) {
      *error = StatusString("OpenTenant", tenant.status());
      return nullptr;
    }
    bank->tenant_ = *tenant;
    strata::TransactionDBOptions dbo;
    dbo.sync = false;
    dbo.commit_secondaries_in_background = false;
    auto db = strata::TransactionDB::Open(g_services, bank->tenant_, dbo);
    if (!db.ok()) {
      *error = StatusString("TransactionDB::Open", db.status());
      return nullptr;
    }
    bank->check_db_ = std::move(db).value();
    strata::TransactionalTableOptions to;  // no compression, bloom 10, 16 KiB blocks
    to.lock_group.write_buffer_size = g_flags.lock_buffer;
    s = bank->check_db_->CreateTable(kTable, to);
    if (!s.ok()) {
      *error = StatusString("CreateTable", s);
      return nullptr;
    }
    // Load: transactions of kLoadChunk accounts each.
    for (uint64_t begin = 0; begin < accounts; begin += kLoadChunk) {
      auto txn = bank->check_db_->Begin();
      if (!txn.ok()) {
        *error = StatusString("Begin", txn.status());
        return nullptr;
      }
      const uint64_t end = std::min(accounts, begin + kLoadChunk);
      for (uint64_t i = begin; i < end; i++) {
        s = (*txn)->Set(kTable, AccountKey(i), kColumn, EncodeBalance(kInitialBalance));
        if (!s.ok()) break;
      }
      if (s.ok()) s = (*txn)->Commit();
      if (!s.ok()) {
        *error = StatusString("loading", s);
        return nullptr;
      }
    }
    s = bank->engine_->Compact();
    if (!s.ok()) {
      *error = StatusString("Engine::Compact", s);
      return nullptr;
    }
    bank->expected_total = accounts * kInitialBalance;
    bank->shadow.assign(accounts, kInitialBalance);
    return bank;
  }

  ~StrataBank() override {
    if (gc_ != nullptr) (void)gc_->Close();
    gc_.reset();
    if (run_db_ != nullptr) (void)run_db_->Close();
    run_db_.reset();
    if (check_db_ != nullptr) (void)check_db_->Close();
    check_db_.reset();
    if (engine_ != nullptr) (void)engine_->Close();
  }

  std::string BeginRun(const Config& c) override {
    strata::TransactionDBOptions o;
    o.sync = c.sync;
    o.one_phase_commit = g_flags.one_phase;
    o.commit_secondaries_in_background = c.system != System::kStrataFg;
    o.pessimistic = c.system == System::kStrataPess;
    if (!g_flags.split) {
      auto db = strata::TransactionDB::Open(g_services, tenant_, o);
      if (!db.ok()) return StatusString("TransactionDB::Open", db.status());
      run_db_ = std::move(db).value();
      if (g_flags.gc_ms > 0) {
        strata::GcOptions go;
        go.life_time_millis = g_flags.gc_ms;
        go.interval_millis = g_flags.gc_ms;
        auto gc = strata::GarbageCollector::Open(g_services, run_db_.get(), go);
        if (!gc.ok()) return StatusString("GarbageCollector::Open", gc.status());
        gc_ = std::move(gc).value();
      }
      return std::string();
    }
    // As TransactionDB::Open wires it, plus the fail-point hook.
    strata::txn::TxnDBConfig config;
    config.options = o;
    config.oracle = strata::txn::TransactionServicesAccess::oracle(*g_services);
    config.registry = strata::txn::TransactionServicesAccess::registry(*g_services);
    config.tables = std::make_shared<BenchTables>(tenant_);
    config.single_log = true;  // every table of the engine shares its one log
    config.fail_point = &MarkFailPoint;
    config.keep_alive = g_services;
    auto db = strata::txn::TxnDB::Make(std::move(config));
    if (!db.ok()) return StatusString("TxnDB::Make", db.status());
    run_db_ = std::move(db).value();
    return std::string();
  }

  std::unique_ptr<Worker> NewWorker(const Config& c) override {
    return std::make_unique<StrataWorker>(run_db_.get(), c.system == System::kStrataPess);
  }

  std::string EndRun() override {
    if (gc_ != nullptr) {
      strata::Status g = gc_->Close();
      gc_.reset();
      if (!g.ok()) return StatusString("GarbageCollector::Close", g);
    }
    strata::Status s = run_db_->Close();  // waits for the background commits
    run_db_.reset();
    return s.ok() ? std::string() : StatusString("TransactionDB::Close", s);
  }

  std::string Sum(uint64_t* total, uint64_t* count) override {
    auto txn = check_db_->Begin();
    if (!txn.ok()) return StatusString("Begin", txn.status());
    auto it = (*txn)->Scan(kTable, "", "", {kColumn});
    if (!it.ok()) return StatusString("Scan", it.status());
    *total = 0;
    *count = 0;
    for (; (*it)->Valid(); (*it)->Next()) {
      uint64_t v = 0;
      if (!DecodeBalance((*it)->value(), &v)) {
        return "account " + std::string((*it)->row()) + " holds " +
               std::to_string((*it)->value().size()) + " bytes";
      }
      *total += v;
      ++*count;
    }
    if (!(*it)->status().ok()) return StatusString("Scan", (*it)->status());
    return std::string();
  }

  std::string Read(const std::vector<uint64_t>& accounts, std::vector<uint64_t>* out) override {
    auto txn = check_db_->Begin();
    if (!txn.ok()) return StatusString("Begin", txn.status());
    out->resize(accounts.size());
    for (size_t i = 0; i < accounts.size(); i++) {
      const std::string key = AccountKey(accounts[i]);
      strata::Result<std::string> v = (*txn)->Get(kTable, key, kColumn);
      if (!v.ok()) return "reading " + key + ": " + v.status().ToString();
      if (!DecodeBalance(*v, &(*out)[i])) {
        return "account " + key + " holds " + std::to_string(v->size()) + " bytes";
      }
    }
    return std::string();
  }

  uint64_t Syncs() override { return engine_->GetStats().wal_syncs; }
  uint64_t DurableReadWaits() override { return engine_->GetStats().durable_read_waits; }

 private:
  explicit StrataBank(uint64_t accounts) : Bank(accounts) {}

  std::unique_ptr<strata::Engine> engine_;
  strata::Tenant tenant_;
  std::unique_ptr<strata::TransactionDB> check_db_;  // loading and checking
  std::unique_ptr<strata::TransactionDB> run_db_;    // the current run's
  std::unique_ptr<strata::GarbageCollector> gc_;     // the current run's, with --gc_ms
};

#ifdef STRATA_HAVE_ROCKSDB

std::string RocksString(const char* what, const rocksdb::Status& s) {
  return std::string(what) + ": " + s.ToString();
}

bool RocksRetryable(const rocksdb::Status& s) {
  return s.IsBusy() || s.IsTimedOut() || s.IsTryAgain() || s.IsDeadlock();
}

class RocksWorker final : public Worker {
 public:
  RocksWorker(rocksdb::TransactionDB* pdb, rocksdb::OptimisticTransactionDB* odb, bool sync)
      : pdb_(pdb), odb_(odb) {
    wo_.sync = sync;
    oo_.set_snapshot = true;
  }
  ~RocksWorker() override { delete txn_; }

  Outcome Attempt(const Transfer& t, Steps* steps, std::string* error) override {
    const auto t0 = SteadyClock::now();
    rocksdb::ReadOptions ro;
    if (pdb_ != nullptr) {
      txn_ = pdb_->BeginTransaction(wo_, po_, txn_);
    } else {
      txn_ = odb_->BeginTransaction(wo_, oo_, txn_);
      ro.snapshot = txn_->GetSnapshot();
    }
    const size_t k = t.keys.size();
    balances_.resize(k);
    for (size_t i = 0; i < k; i++) {
      rocksdb::Status s = pdb_ != nullptr ? txn_->GetForUpdate(ro, t.keys[i], &value_)
                                          : txn_->Get(ro, t.keys[i], &value_);
      if (!s.ok()) return Fail(s, "Get", t0, steps, error);
      if (!DecodeBalance(value_, &balances_[i])) {
        *error = "account " + t.keys[i] + " holds " + std::to_string(value_.size()) + " bytes";
        return Outcome::kError;
      }
    }
    for (size_t i = 0; i < k; i++) {
      rocksdb::Status s = txn_->Put(t.keys[i], EncodeBalance(balances_[i] + t.deltas[i]));
      if (!s.ok()) return Fail(s, "Put", t0, steps, error);
    }
    rocksdb::Status s = txn_->Commit();
    if (!s.ok()) return Fail(s, "Commit", t0, steps, error);
    return Outcome::kCommitted;
  }

 private:
  Outcome Fail(const rocksdb::Status& s, const char* what, SteadyClock::time_point t0, Steps* steps,
               std::string* error) {
    rocksdb::Status r = txn_->Rollback();  // releases the locks; fails harmlessly after Commit
    (void)r;
    if (RocksRetryable(s)) {
      steps->wasted += Nanos(t0, SteadyClock::now());
      return Outcome::kAborted;
    }
    *error = RocksString(what, s);
    return Outcome::kError;
  }

  rocksdb::TransactionDB* const pdb_;
  rocksdb::OptimisticTransactionDB* const odb_;
  rocksdb::WriteOptions wo_;
  rocksdb::TransactionOptions po_;
  rocksdb::OptimisticTransactionOptions oo_;
  rocksdb::Transaction* txn_ = nullptr;
  std::string value_;
  std::vector<uint64_t> balances_;
};

class RocksBank final : public Bank {
 public:
  static std::unique_ptr<Bank> Open(const std::string& dir, uint64_t accounts, bool optimistic,
                                    std::string* error) {
    std::unique_ptr<RocksBank> bank(new RocksBank(accounts));
    rocksdb::Options o;
    o.create_if_missing = true;
    o.write_buffer_size = 32 << 20;
    o.compression = rocksdb::kNoCompression;
    // Strata's level shape (EngineOptions defaults), as db_bench.
    o.level0_file_num_compaction_trigger = 4;
    o.max_bytes_for_level_base = 64ull << 20;
    o.max_bytes_for_level_multiplier = 10;
    o.target_file_size_base = 32ull << 20;
    rocksdb::BlockBasedTableOptions t;
    t.block_cache = rocksdb::NewLRUCache(64 << 20);
    t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
    t.block_size = 16 << 10;
    o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
    bank->stats_ = rocksdb::CreateDBStatistics();
    bank->stats_->set_stats_level(rocksdb::StatsLevel::kExceptTimers);
    o.statistics = bank->stats_;
    rocksdb::Status s;
    if (optimistic) {
      s = rocksdb::OptimisticTransactionDB::Open(o, dir, &bank->odb_);
      if (s.ok()) bank->base_ = bank->odb_->GetBaseDB();
    } else {
      s = rocksdb::TransactionDB::Open(o, rocksdb::TransactionDBOptions(), dir, &bank->pdb_);
      if (s.ok()) bank->base_ = bank->pdb_->GetBaseDB();
    }
    if (!s.ok()) {
      *error = RocksString("open", s);
      return nullptr;
    }
    rocksdb::WriteOptions wo;
    wo.sync = false;
    for (uint64_t begin = 0; begin < accounts && s.ok(); begin += kLoadChunk) {
      rocksdb::WriteBatch batch;
      for (uint64_t i = begin; i < std::min(accounts, begin + kLoadChunk); i++) {
        s = batch.Put(AccountKey(i), EncodeBalance(kInitialBalance));
        if (!s.ok()) break;
      }
      if (s.ok()) s = bank->base_->Write(wo, &batch);
    }
    if (s.ok()) s = bank->base_->CompactRange(rocksdb::CompactRangeOptions(), nullptr, nullptr);
    if (!s.ok()) {
      *error = RocksString("loading", s);
      return nullptr;
    }
    bank->expected_total = accounts * kInitialBalance;
    bank->shadow.assign(accounts, kInitialBalance);
    return bank;
  }

  ~RocksBank() override {
    if (pdb_ != nullptr) (void)pdb_->Close();
    if (odb_ != nullptr) (void)odb_->Close();
    delete pdb_;
    delete odb_;
  }

  std::string BeginRun(const Config&) override { return std::string(); }
  std::unique_ptr<Worker> NewWorker(const Config& c) override {
    return std::make_unique<RocksWorker>(pdb_, odb_, c.sync);
  }
  std::string EndRun() override { return std::string(); }

  std::string Sum(uint64_t* total, uint64_t* count) override {
    std::unique_ptr<rocksdb::Iterator> it(base_->NewIterator(rocksdb::ReadOptions()));
    *total = 0;
    *count = 0;
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      uint64_t v = 0;
      if (!DecodeBalance(std::string_view(it->value().data(), it->value().size()), &v)) {
        return "account " + it->key().ToString() + " holds " + std::to_string(it->value().size()) +
               " bytes";
      }
      *total += v;
      ++*count;
    }
    return it->status().ok() ? std::string() : RocksString("iterator", it->status());
  }

  std::string Read(const std::vector<uint64_t>& accounts, std::vector<uint64_t>* out) override {
    const rocksdb::Snapshot* snapshot = base_->GetSnapshot();
    rocksdb::ReadOptions ro;
    ro.snapshot = snapshot;
    std::string error;
    std::string value;
    out->resize(accounts.size());
    for (size_t i = 0; i < accounts.size() && error.empty(); i++) {
      const std::string key = AccountKey(accounts[i]);
      rocksdb::Status s = base_->Get(ro, key, &value);
      if (!s.ok()) {
        error = "reading " + key + ": " + s.ToString();
      } else if (!DecodeBalance(value, &(*out)[i])) {
        error = "account " + key + " holds " + std::to_string(value.size()) + " bytes";
      }
    }
    base_->ReleaseSnapshot(snapshot);
    return error;
  }

  uint64_t Syncs() override { return stats_->getTickerCount(rocksdb::WAL_FILE_SYNCED); }

 private:
  explicit RocksBank(uint64_t accounts) : Bank(accounts) {}

  rocksdb::TransactionDB* pdb_ = nullptr;
  rocksdb::OptimisticTransactionDB* odb_ = nullptr;
  rocksdb::DB* base_ = nullptr;  // owned by pdb_ or odb_
  std::shared_ptr<rocksdb::Statistics> stats_;
};

#endif  // STRATA_HAVE_ROCKSDB

// Banks by (engine, contention), opened at first use and kept for the
// program (high contention with --fresh_hot: made anew for every run).
// Strata and strata_fg share one.
struct BankSlot {
  std::unique_ptr<Bank> bank;
  std::string dir;
  int generation = 0;
};
std::mutex g_banks_mu;
std::map<std::pair<int, int>, BankSlot> g_banks;

Bank* GetBank(const Config& c, std::string* error) {
  const int engine = IsStrata(c.system) ? 0 : (c.system == System::kRocksPessimistic ? 1 : 2);
  const bool low = c.contention == Contention::kLow;
  std::lock_guard<std::mutex> l(g_banks_mu);
  BankSlot& slot = g_banks[{engine, static_cast<int>(c.contention)}];
  if (slot.bank != nullptr && (low || !g_flags.fresh_hot)) return slot.bank.get();
  if (slot.bank != nullptr) {
    slot.bank.reset();
    std::error_code ec;
    std::filesystem::remove_all(slot.dir, ec);
  }
  const uint64_t n = low ? g_flags.accounts : g_flags.hot_accounts;
  const std::string name = std::string(engine == 0   ? "strata"
                                       : engine == 1 ? "rocks_pess"
                                                     : "rocks_occ") +
                           (low ? "-low" : "-high") + "-" + std::to_string(slot.generation++);
  slot.dir = (g_root / name).string();
  std::unique_ptr<Bank>& bank = slot.bank;
  const auto t0 = SteadyClock::now();
  if (engine == 0) {
    if (g_services == nullptr) {
      auto services = strata::TransactionServices::Open((g_root / "services").string());
      if (!services.ok()) {
        *error = StatusString("TransactionServices::Open", services.status());
        return nullptr;
      }
      g_services = *services;
    }
    bank = StrataBank::Open(slot.dir, n, error);
  } else {
#ifdef STRATA_HAVE_ROCKSDB
    bank = RocksBank::Open(slot.dir, n, engine == 2, error);
#else
    *error = "RocksDB was not found at build time";
#endif
  }
  if (bank != nullptr && (low || !g_flags.fresh_hot)) {
    std::fprintf(stderr, "txn_bench: loaded %s (%" PRIu64 " accounts) in %.1f s\n", name.c_str(), n,
                 std::chrono::duration<double>(SteadyClock::now() - t0).count());
  }
  return bank.get();
}

// ---- Checks ----------------------------------------------------------------------

// Banks this small are summed whole after every run.
constexpr uint64_t kAlwaysFullCheck = 100'000;

// Sums every account: the count and the total must be what the committed
// transfers imply.
std::string FullCheck(Bank* bank) {
  uint64_t total = 0, count = 0;
  std::string e = bank->Sum(&total, &count);
  if (!e.empty()) return e;
  if (total == bank->expected_total && count == bank->accounts()) return std::string();
  bank->broken = true;
  g_check_failed = true;
  return "balance check failed: " + std::to_string(count) + " accounts (expected " +
         std::to_string(bank->accounts()) + ") holding " + std::to_string(total) + " (expected " +
         std::to_string(bank->expected_total) + ")";
}

// After a run: the accounts it touched, read back in one transaction, must
// hold what they held before plus one per committed 1-key transfer (no one
// writes the others); then they are remembered. Small banks, and every bank
// with --full_check, are also summed whole; the others once more at the end.
std::string CheckRun(Bank* bank, int keys, uint64_t committed, std::vector<uint64_t>* touched) {
  const uint64_t gain = keys == 1 ? committed : 0;
  bank->expected_total += gain;
  std::sort(touched->begin(), touched->end());
  touched->erase(std::unique(touched->begin(), touched->end()), touched->end());
  std::vector<uint64_t> now;
  std::string e = bank->Read(*touched, &now);
  if (!e.empty()) return e;
  uint64_t before = 0, after = 0;
  for (size_t i = 0; i < touched->size(); i++) {
    before += bank->shadow[(*touched)[i]];
    after += now[i];
  }
  if (after != before + gain) {
    bank->broken = true;
    g_check_failed = true;
    return "balance check failed: the " + std::to_string(touched->size()) +
           " accounts this run touched hold " + std::to_string(after) + ", expected " +
           std::to_string(before + gain) + " (" + std::to_string(before) + " before it, plus " +
           std::to_string(gain) + " committed 1-key transfers)";
  }
  for (size_t i = 0; i < touched->size(); i++) bank->shadow[(*touched)[i]] = now[i];
  if (g_flags.full_check || bank->accounts() <= kAlwaysFullCheck) return FullCheck(bank);
  return std::string();
}

// ---- The benchmark -----------------------------------------------------------------

// What the threads of the current run share. Google Benchmark runs one
// benchmark at a time; thread 0 resets this before its threads start.
struct RunState {
  std::mutex mu;
  Bank* bank = nullptr;
  uint64_t committed = 0;
  uint64_t aborted = 0;
  Steps steps;
  std::vector<uint64_t> touched;  // every account of every transfer tried
  std::string error;
  // The earliest start and the latest end of the threads' transfer loops:
  // the run's wall time, which the rates divide by.
  SteadyClock::time_point first_start = SteadyClock::time_point::max();
  SteadyClock::time_point last_end = SteadyClock::time_point::min();
  std::atomic<int> done{0};
  std::atomic<bool> stop{false};
  uint64_t cpu_start_ns = 0;  // ProcessCpuNanos() as thread 0 starts (thread 0 only)
};
RunState g_run;

// CPU time used so far by every thread of the process.
uint64_t ProcessCpuNanos() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
}

void BM_Transfer(benchmark::State& state, Config c) {
  const bool leader = state.thread_index() == 0;
  uint64_t syncs_before = 0;
  uint64_t read_waits_before = 0;
  if (leader) {
    g_run.bank = nullptr;
    g_run.committed = g_run.aborted = 0;
    g_run.steps = Steps();
    g_run.touched.clear();
    g_run.error.clear();
    g_run.first_start = SteadyClock::time_point::max();
    g_run.last_end = SteadyClock::time_point::min();
    g_run.done = 0;
    g_run.stop = false;
    g_run.cpu_start_ns = 0;
    std::string error;
    Bank* bank = GetBank(c, &error);
    if (bank != nullptr && bank->broken) error = "an earlier run left this database inconsistent";
    if (bank != nullptr && error.empty()) error = bank->BeginRun(c);
    if (error.empty()) {
      g_run.bank = bank;
      syncs_before = bank->Syncs();
      read_waits_before = bank->DurableReadWaits();
    } else {
      g_run.error = error;
      g_run.stop = true;
      state.SkipWithError(error.c_str());  // the loop does not run
    }
  }
  // Iterations(1): the loop body runs once in each thread, after a barrier
  // that thread 0 reaches only once the run is set up.
  for (auto _ : state) {
    if (g_run.bank == nullptr) {
      state.SkipWithError("the run could not be set up");
      break;
    }
    if (leader) g_run.cpu_start_ns = ProcessCpuNanos();
    std::unique_ptr<Worker> worker = g_run.bank->NewWorker(c);
    const uint64_t n = g_run.bank->accounts();
    strata::Random rng(g_flags.seed * 1000003 + static_cast<uint64_t>(state.thread_index()) * 7919 +
                       static_cast<uint64_t>(SteadyClock::now().time_since_epoch().count()));
    Transfer t;
    Steps steps;
    std::vector<uint64_t> touched;
    uint64_t committed = 0, aborted = 0;
    std::string error;
    const auto start = SteadyClock::now();
    const auto deadline = start + std::chrono::duration_cast<SteadyClock::duration>(
                                      std::chrono::duration<double>(g_flags.seconds));
    while (error.empty() && !g_run.stop.load(std::memory_order_relaxed) &&
           SteadyClock::now() < deadline) {
      PickTransfer(&rng, n, c.keys, &t);
      touched.insert(touched.end(), t.accounts.begin(), t.accounts.end());
      for (int attempt = 0;; attempt++) {
        const Outcome o = worker->Attempt(t, &steps, &error);
        if (o == Outcome::kCommitted) {
          committed++;
          break;
        }
        if (o == Outcome::kError) break;
        aborted++;
        if (SteadyClock::now() >= deadline || g_run.stop.load(std::memory_order_relaxed)) break;
        if (g_flags.backoff_us > 0) {
          const uint64_t cap =
              std::min<uint64_t>(g_flags.backoff_us, 10ull << std::min(attempt, 20));
          std::this_thread::sleep_for(std::chrono::microseconds(rng.Uniform(cap + 1)));
        } else {
          std::this_thread::yield();
        }
      }
    }
    const auto end = SteadyClock::now();
    worker.reset();
    std::lock_guard<std::mutex> l(g_run.mu);
    g_run.first_start = std::min(g_run.first_start, start);
    g_run.last_end = std::max(g_run.last_end, end);
    g_run.committed += committed;
    g_run.aborted += aborted;
    g_run.steps.Add(steps);
    g_run.touched.insert(g_run.touched.end(), touched.begin(), touched.end());
    if (!error.empty() && g_run.error.empty()) g_run.error = error;
    if (!error.empty()) g_run.stop = true;
  }
  g_run.done.fetch_add(1);
  if (!leader) return;
  while (g_run.done.load() < state.threads()) std::this_thread::yield();
  const uint64_t cpu_ns = ProcessCpuNanos() - g_run.cpu_start_ns;

  Bank* bank = g_run.bank;
  if (bank == nullptr) return;  // skipped with the setup's error
  std::string error = g_run.error;
  {
    const uint64_t syncs = bank->Syncs() - syncs_before;
    const uint64_t read_waits = bank->DurableReadWaits() - read_waits_before;
    std::string e = bank->EndRun();
    if (error.empty()) error = e;
    e = CheckRun(bank, c.keys, g_run.committed, &g_run.touched);
    if (!e.empty()) std::fprintf(stderr, "txn_bench: %s: %s\n", c.name.c_str(), e.c_str());
    if (error.empty()) error = e;
    const double committed = static_cast<double>(g_run.committed);
    const double aborted = static_cast<double>(g_run.aborted);
    // Rates over the run's own wall time: Google Benchmark's time of a
    // multi-threaded run is not what a rate should divide by here.
    const double secs =
        g_run.last_end > g_run.first_start
            ? std::chrono::duration<double>(g_run.last_end - g_run.first_start).count()
            : 0;
    state.counters["txn/s"] = secs > 0 ? committed / secs : 0;
    state.counters["keys/s"] = secs > 0 ? committed * c.keys / secs : 0;
    state.counters["aborts/s"] = secs > 0 ? aborted / secs : 0;
    state.counters["abort%"] = committed + aborted > 0 ? 100 * aborted / (committed + aborted) : 0;
    state.counters["syncs/txn"] = committed > 0 ? static_cast<double>(syncs) / committed : 0;
    state.counters["cpu_us"] = committed > 0 ? static_cast<double>(cpu_ns) / 1000 / committed : 0;
    if (IsStrata(c.system) && committed > 0) {
      const Steps& s = g_run.steps;
      auto us = [&](uint64_t ns) { return static_cast<double>(ns) / 1000 / committed; };
      state.counters["oracle_us"] = us(s.oracle);
      state.counters["read_us"] = us(s.read);
      if (g_flags.split) {
        state.counters["prewrite_us"] = us(s.prewrite);
        state.counters["commit1_us"] = us(s.commit_primary);
        state.counters["second_us"] = us(s.secondaries);
      } else {
        state.counters["commit_us"] = us(s.prewrite);
      }
      state.counters["wasted_us"] = us(s.wasted);
      state.counters["read_waits/txn"] = static_cast<double>(read_waits) / committed;
    }
  }
  if (!error.empty()) state.SkipWithError(error.c_str());
}

// ---- Summary -------------------------------------------------------------------------

std::map<std::string, Config> g_configs;  // by benchmark name

struct Key {
  bool sync;
  int contention;
  int keys;
  int threads;
  auto operator<=>(const Key&) const = default;
};

struct Figures {
  std::vector<double> tps;
  std::vector<double> abort_pct;
};

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  explicit SummaryReporter(OutputOptions options) : ConsoleReporter(options) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.error_occurred || run.run_type != Run::RT_Iteration) continue;
      auto it = g_configs.find(run.run_name.function_name);
      if (it == g_configs.end()) continue;
      const Config& c = it->second;
      const auto tps = run.counters.find("txn/s");
      const auto ab = run.counters.find("abort%");
      if (tps == run.counters.end() || ab == run.counters.end()) continue;
      Figures& f = rows_[Key{c.sync, static_cast<int>(c.contention), c.keys,
                             static_cast<int>(run.threads)}][static_cast<int>(c.system)];
      f.tps.push_back(tps->second.value);
      f.abort_pct.push_back(ab->second.value);
    }
    ConsoleReporter::ReportRuns(runs);
  }

  void PrintSummary() const {
    if (rows_.empty()) return;
    std::printf(
        "\nSummary: committed transfers/s (median of %s), abort%% in parentheses; "
        "ratios = Strata / RocksDB\n",
        "the repetitions");
    PrintHeader();
    for (const auto& [key, systems] : rows_) PrintRow(key, systems);
    std::printf("\nHeadline: 2-key transfers, Strata vs RocksDB TransactionDB (pessimistic)\n");
    PrintHeader();
    for (const auto& [key, systems] : rows_) {
      if (key.keys == 2 && (key.threads == 8 || key.threads == 16)) PrintRow(key, systems);
    }
  }

 private:
  static std::string Cell(const std::map<int, Figures>& systems, System s) {
    auto it = systems.find(static_cast<int>(s));
    if (it == systems.end()) return "-";
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.0f (%.0f%%)", Median(it->second.tps),
                  Median(it->second.abort_pct));
    return buf;
  }
  static std::string Ratio(const std::map<int, Figures>& systems, System a, System b) {
    auto ia = systems.find(static_cast<int>(a));
    auto ib = systems.find(static_cast<int>(b));
    if (ia == systems.end() || ib == systems.end()) return "-";
    const double d = Median(ib->second.tps);
    if (d <= 0) return "-";
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.2fx", Median(ia->second.tps) / d);
    return buf;
  }
  static void PrintHeader() {
    std::printf("%-6s %-4s %4s %3s | %16s %16s %16s | %16s %16s | %7s %7s %7s %7s\n", "sync",
                "cont", "keys", "thr", "strata", "strata_fg", "strata_pess", "rocks_pess",
                "rocks_occ", "S/pess", "S/occ", "fg/pess", "P/pess");
    std::printf("%s\n", std::string(149, '-').c_str());
  }
  static void PrintRow(const Key& key, const std::map<int, Figures>& s) {
    std::printf("%-6s %-4s %4d %3d | %16s %16s %16s | %16s %16s | %7s %7s %7s %7s\n",
                key.sync ? "sync" : "nosync", key.contention == 0 ? "low" : "high", key.keys,
                key.threads, Cell(s, System::kStrata).c_str(), Cell(s, System::kStrataFg).c_str(),
                Cell(s, System::kStrataPess).c_str(), Cell(s, System::kRocksPessimistic).c_str(),
                Cell(s, System::kRocksOptimistic).c_str(),
                Ratio(s, System::kStrata, System::kRocksPessimistic).c_str(),
                Ratio(s, System::kStrata, System::kRocksOptimistic).c_str(),
                Ratio(s, System::kStrataFg, System::kRocksPessimistic).c_str(),
                Ratio(s, System::kStrataPess, System::kRocksPessimistic).c_str());
  }

  std::map<Key, std::map<int, Figures>> rows_;
};

// ---- main --------------------------------------------------------------------------

bool ParseUint(const std::string& s, uint64_t* out) {
  if (s.empty()) return false;
  uint64_t v = 0;
  for (char ch : s) {
    if (ch == ',' || ch == '_') continue;
    if (ch < '0' || ch > '9') return false;
    v = v * 10 + static_cast<uint64_t>(ch - '0');
  }
  *out = v;
  return true;
}

// A 0|1 flag.
bool ParseBit(const std::string& s, bool* out) {
  uint64_t v = 0;
  if (!ParseUint(s, &v) || v > 1) return false;
  *out = v == 1;
  return true;
}

[[noreturn]] void Usage(const std::string& error) {
  std::fprintf(stderr, "txn_bench: %s\n(run with --help for the flags)\n", error.c_str());
  std::exit(2);
}

// Takes this program's flags out of argv; leaves Google Benchmark's.
void ParseFlags(int* argc, char** argv) {
  int out = 1;
  for (int i = 1; i < *argc; i++) {
    const std::string arg = argv[i];
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : arg.substr(eq + 1);
    if (name == "--help" || name == "-h") {
      std::fputs(kHelp, stdout);
      argv[out++] = argv[i];  // Google Benchmark prints its own part
    } else if (name == "--txn_seconds") {
      char* end = nullptr;
      g_flags.seconds = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || g_flags.seconds <= 0) Usage("bad " + arg);
    } else if (name == "--accounts") {
      if (!ParseUint(value, &g_flags.accounts) || g_flags.accounts < 64) Usage("bad " + arg);
    } else if (name == "--hot_accounts") {
      if (!ParseUint(value, &g_flags.hot_accounts) || g_flags.hot_accounts < 32) {
        Usage("bad " + arg + " (32-key transfers need at least 32 accounts)");
      }
    } else if (name == "--split") {
      if (!ParseBit(value, &g_flags.split)) Usage("bad " + arg);
    } else if (name == "--fresh_hot") {
      if (!ParseBit(value, &g_flags.fresh_hot)) Usage("bad " + arg);
    } else if (name == "--full_check") {
      if (!ParseBit(value, &g_flags.full_check)) Usage("bad " + arg);
    } else if (name == "--backoff_us") {
      if (!ParseUint(value, &g_flags.backoff_us)) Usage("bad " + arg);
    } else if (name == "--lock_buffer") {
      if (!ParseUint(value, &g_flags.lock_buffer) ||
          (g_flags.lock_buffer != 0 && g_flags.lock_buffer < 4096)) {
        Usage("bad " + arg + " (0, or at least 4096)");
      }
    } else if (name == "--io_uring") {
      if (!ParseBit(value, &g_flags.io_uring)) Usage("bad " + arg);
    } else if (name == "--apply_before_sync") {
      if (!ParseBit(value, &g_flags.apply_before_sync)) Usage("bad " + arg);
    } else if (name == "--gc_ms") {
      if (!ParseUint(value, &g_flags.gc_ms)) Usage("bad " + arg);
    } else if (name == "--one_phase") {
      if (!ParseBit(value, &g_flags.one_phase)) Usage("bad " + arg);
    } else if (name == "--db") {
      if (value.empty()) Usage("bad " + arg);
      g_flags.db = value;
    } else if (name == "--seed") {
      if (!ParseUint(value, &g_flags.seed)) Usage("bad " + arg);
    } else {
      argv[out++] = argv[i];
    }
  }
  *argc = out;
  argv[out] = nullptr;
}

std::string LoadAverage() {
  char buf[128] = {};
  FILE* f = std::fopen("/proc/loadavg", "r");
  if (f == nullptr) return "?";
  const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  std::string s(buf, n);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// Registered configuration by configuration, the systems of one back to back,
// so their ratio sees the same machine weather.
void RegisterAll() {
  for (bool sync : {false, true}) {
    for (Contention cont : {Contention::kLow, Contention::kHigh}) {
      for (int keys : {1, 2, 8, 32}) {
        for (int threads : {1, 2, 4, 8, 16}) {
          for (System system : {System::kStrata, System::kStrataFg, System::kStrataPess,
                                System::kRocksPessimistic, System::kRocksOptimistic}) {
            if (system == System::kStrataFg && keys != 2) continue;
#ifndef STRATA_HAVE_ROCKSDB
            if (!IsStrata(system)) continue;
#endif
            const std::string name =
                std::string("transfer/") + SystemName(system) + "/keys:" + std::to_string(keys) +
                (cont == Contention::kLow ? "/low" : "/high") + (sync ? "/sync" : "/nosync");
            const Config c{system, keys, cont, sync, name};
            g_configs[name] = c;
            benchmark::RegisterBenchmark(name.c_str(),
                                         [c](benchmark::State& s) { BM_Transfer(s, c); })
                ->Iterations(1)
                ->Threads(threads)
                ->UseRealTime();
          }
        }
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  ParseFlags(&argc, argv);
  RegisterAll();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  std::filesystem::path base = !g_flags.db.empty() ? std::filesystem::path(g_flags.db)
                               : std::getenv("STRATA_BENCH_DIR") != nullptr
                                   ? std::filesystem::path(std::getenv("STRATA_BENCH_DIR"))
                                   : std::filesystem::temp_directory_path();
  if (g_flags.gc_ms > 0 && g_flags.split) Usage("--gc_ms needs --split=0");
  g_root = base / ("strata-bench-txn-" + std::to_string(::getpid()));
  std::filesystem::remove_all(g_root);
  std::filesystem::create_directories(g_root);

  std::printf("txn_bench: txn_seconds=%g accounts=%" PRIu64 " hot_accounts=%" PRIu64
              " fresh_hot=%d full_check=%d split=%d backoff_us=%" PRIu64 " lock_buffer=%" PRIu64
              " io_uring=%d apply_before_sync=%d gc_ms=%" PRIu64 " one_phase=%d dir=%s\n",
              g_flags.seconds, g_flags.accounts, g_flags.hot_accounts, g_flags.fresh_hot ? 1 : 0,
              g_flags.full_check ? 1 : 0, g_flags.split ? 1 : 0, g_flags.backoff_us,
              g_flags.lock_buffer, g_flags.io_uring ? 1 : 0, g_flags.apply_before_sync ? 1 : 0,
              g_flags.gc_ms, g_flags.one_phase ? 1 : 0, g_root.string().c_str());
  std::printf("load average at start: %s\n", LoadAverage().c_str());
#ifndef STRATA_HAVE_ROCKSDB
  std::printf("RocksDB was not found at build time: Strata only\n");
#endif
  const auto t0 = SteadyClock::now();
  SummaryReporter reporter(::isatty(STDOUT_FILENO) ? benchmark::ConsoleReporter::OO_ColorTabular
                                                   : benchmark::ConsoleReporter::OO_Tabular);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.PrintSummary();
  std::printf("\nload average at end: %s; total %.0f s. Compare only within this run.\n",
              LoadAverage().c_str(),
              std::chrono::duration<double>(SteadyClock::now() - t0).count());
  benchmark::Shutdown();

  {
    std::lock_guard<std::mutex> l(g_banks_mu);
    for (auto& [key, slot] : g_banks) {
      if (slot.bank == nullptr || slot.bank->broken) continue;
      const std::string name = std::filesystem::path(slot.dir).filename().string();
      const std::string e = FullCheck(slot.bank.get());
      std::printf("final check of %s: %s\n", name.c_str(),
                  e.empty() ? "every account there, total as expected" : e.c_str());
    }
    g_banks.clear();
  }
  g_services.reset();
  std::filesystem::remove_all(g_root);
  if (g_check_failed) {
    std::fprintf(stderr, "txn_bench: a balance check failed\n");
    return 1;
  }
  return 0;
}
