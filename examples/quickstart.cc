// quickstart: the smallest complete use of Strata.
//
// Opens an engine in a fresh directory, creates a tenant and a table, writes
// rows, reads them back, closes, reopens (recovering from the log) and checks
// that every row survived. Then runs bank transfers as snapshot-isolation
// transactions on several threads while an auditor checks that every
// snapshot sums to the opening total, and checks it again after a reopen.
// Prints each step; exits non-zero on any mismatch.
//
//   quickstart [--dir DIR] [--rows N] [--transfers N] [--help]
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "strata/engine.h"
#include "strata/transaction.h"

namespace {

void Usage(const char* argv0) {
  std::printf(
      "Usage: %s [--dir DIR] [--rows N] [--transfers N]\n"
      "Writes N rows (default 10000) into a new Strata engine in DIR (default: a fresh\n"
      "directory under the system temp dir), reads them back, reopens the engine and\n"
      "verifies every row again. Then makes --transfers transactions (default 2000)\n"
      "moving money between 100 accounts on 4 threads, audits the total while they\n"
      "run and after a reopen. DIR must not exist yet; a DIR given is kept afterwards\n"
      "(for strata-wal and strata-sst to look at), the default one is removed.\n"
      "N is a whole number from 1 to 100000000.\n",
      argv0);
}

// A whole number from 1 to 100,000,000 (digits only); 0 for anything else.
int ParseCount(const char* s) {
  constexpr long kMax = 100'000'000;
  if (*s == '\0') return 0;
  long v = 0;
  for (const char* p = s; *p != '\0'; p++) {
    if (*p < '0' || *p > '9') return 0;
    v = v * 10 + (*p - '0');
    if (v > kMax) return 0;
  }
  return static_cast<int>(v);
}

int Fail(const std::string& what, const strata::Status& s) {
  std::fprintf(stderr, "FAILED: %s: %s\n", what.c_str(), s.ToString().c_str());
  return 1;
}

std::string RowKey(int i) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "user%08d", i);
  return buf;
}

std::string Value(int i, int version) {
  return "value-" + std::to_string(i) + "-v" + std::to_string(version);
}

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Reads every row back and checks both columns.
int Verify(strata::Table& table, int rows, const char* when) {
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < rows; i++) {
    auto cells = table.ReadRow(strata::ReadOptions(), RowKey(i));
    if (!cells.ok()) return Fail("read " + RowKey(i), cells.status());
    // Expect info:name@2, info:name@1 (two versions) and stats:visits@1.
    const auto& c = *cells;
    bool good = c.size() == 3 && c[0].family == "info" && c[0].qualifier == "name" &&
                c[0].timestamp == 2 && c[0].value == Value(i, 2) && c[1].timestamp == 1 &&
                c[1].value == Value(i, 1) && c[2].family == "stats" &&
                c[2].value == std::to_string(i * 7);
    if (!good) {
      std::fprintf(stderr, "FAILED: row %s %s has %zu cells, not the ones written\n",
                   RowKey(i).c_str(), when, c.size());
      return 1;
    }
  }
  std::printf("  verified %d rows %s in %.3f s\n", rows, when, Seconds(start));
  return 0;
}


constexpr int kAccounts = 100;
constexpr int kInitialBalance = 1000;
constexpr int kThreads = 4;

std::string AccountKey(int i) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "acct%03d", i);
  return buf;
}

// The sum of every balance in one snapshot.
strata::Result<int64_t> Audit(strata::TransactionDB* db) {
  auto t = db->Begin();
  if (!t.ok()) return t.status();
  auto it = (*t)->Scan("accounts", "", "", {"balance"});
  if (!it.ok()) return it.status();
  int64_t sum = 0;
  for (; (*it)->Valid(); (*it)->Next()) sum += std::stoll(std::string((*it)->value()));
  if (!(*it)->status().ok()) return (*it)->status();
  return sum;
}

struct TransferResult {
  strata::Status status;
  int retries = 0;
  int audits = 0;
};

// kThreads threads move random amounts between random accounts, retrying
// transactions that conflict; one more thread audits the total meanwhile.
TransferResult RunTransfers(strata::TransactionDB* db, int transfers) {
  std::atomic<int> next{0};
  std::atomic<int> retries{0};
  std::atomic<int> audits{0};
  std::atomic<bool> done{false};
  std::mutex mu;
  TransferResult result;
  auto fail = [&](const strata::Status& s) {
    std::lock_guard<std::mutex> l(mu);
    if (result.status.ok()) result.status = s;
    done = true;
  };
  std::vector<std::thread> threads;
  for (int w = 0; w < kThreads; w++) {
    threads.emplace_back([&, w] {
      std::mt19937_64 rng(w + 1);
      while (!done && next.fetch_add(1) < transfers) {
        const int from = static_cast<int>(rng() % kAccounts);
        const int to = (from + 1 + static_cast<int>(rng() % (kAccounts - 1))) % kAccounts;
        const int amount = static_cast<int>(rng() % 50);
        // Wait a little for a conflicting transaction rather than retry at once.
        strata::TransactionOptions options;
        options.lock_wait_millis = 20;
        while (!done) {
          auto t = db->Begin(options);
          if (!t.ok()) return fail(t.status());
          auto a = (*t)->Get("accounts", AccountKey(from), "balance");
          auto b = (*t)->Get("accounts", AccountKey(to), "balance");
          if (!a.ok()) return fail(a.status());
          if (!b.ok()) return fail(b.status());
          strata::Status s = (*t)->Set("accounts", AccountKey(from), "balance",
                                       std::to_string(std::stoll(*a) - amount));
          if (s.ok()) {
            s = (*t)->Set("accounts", AccountKey(to), "balance",
                          std::to_string(std::stoll(*b) + amount));
          }
          if (s.ok()) s = (*t)->Commit();
          if (s.ok()) break;
          if (s.code() != strata::Status::Code::kAborted) return fail(s);
          retries++;
        }
      }
    });
  }
  std::thread auditor([&] {
    while (!done) {
      auto sum = Audit(db);
      if (!sum.ok()) return fail(sum.status());
      if (*sum != kAccounts * kInitialBalance) {
        return fail(strata::Status::Corruption("an audit saw the total " +
                                               std::to_string(*sum)));
      }
      audits++;
    }
  });
  for (std::thread& t : threads) t.join();
  done = true;
  auditor.join();
  result.retries = retries;
  result.audits = audits;
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  int rows = 10000;
  int transfers = 2000;
  bool keep_dir = false;  // a directory the caller named stays for inspection
  for (int i = 1; i < argc; i++) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      Usage(argv[0]);
      return 0;
    } else if ((std::strcmp(argv[i], "--dir") == 0 || std::strcmp(argv[i], "--rows") == 0 ||
                std::strcmp(argv[i], "--transfers") == 0) &&
               i + 1 == argc) {
      std::fprintf(stderr, "%s needs a value\n", argv[i]);
      return 2;
    } else if (std::strcmp(argv[i], "--dir") == 0) {
      dir = argv[++i];
      keep_dir = true;
    } else if (std::strcmp(argv[i], "--rows") == 0 || std::strcmp(argv[i], "--transfers") == 0) {
      const char* flag = argv[i];
      const int n = ParseCount(argv[++i]);
      if (n == 0) {
        std::fprintf(stderr, "%s wants a whole number from 1 to 100000000, not '%s'\n", flag,
                     argv[i]);
        return 2;
      }
      (std::strcmp(flag, "--rows") == 0 ? rows : transfers) = n;
    } else {
      std::fprintf(stderr, "unknown argument '%s'\n", argv[i]);
      Usage(argv[0]);
      return 2;
    }
  }
  if (dir.empty()) {
    dir = (std::filesystem::temp_directory_path() /
           ("strata-quickstart-" + std::to_string(std::chrono::system_clock::now()
                                                      .time_since_epoch()
                                                      .count())))
              .string();
  }
  if (std::filesystem::exists(dir)) {
    std::fprintf(stderr, "%s already exists; give a new directory\n", dir.c_str());
    return 2;
  }

  std::printf("1. open a new engine in %s\n", dir.c_str());
  strata::EngineOptions options;
  // Step 8 commits synced transactions: their prewrites need not wait for
  // other transactions' fdatasyncs (txn/README.md).
  options.apply_before_sync = true;
  auto engine = strata::Engine::Open(dir, options);
  if (!engine.ok()) return Fail("open", engine.status());
  std::printf("   log written through %s\n",
              (*engine)->GetStats().wal_uses_io_uring ? "io_uring" : "pwritev+fdatasync");

  std::printf("2. create tenant 'demo' and table 'users' (families info, stats)\n");
  strata::Status s = (*engine)->CreateTenant("demo");
  if (!s.ok()) return Fail("create tenant", s);
  auto tenant = (*engine)->OpenTenant("demo");
  if (!tenant.ok()) return Fail("open tenant", tenant.status());
  strata::TableSchema schema;
  schema.locality_groups.push_back({.name = "hot"});
  schema.families.push_back({.name = "info", .locality_group = "hot"});
  schema.families.push_back({.name = "stats"});
  s = tenant->CreateTable("users", schema);
  if (!s.ok()) return Fail("create table", s);
  auto table = tenant->OpenTable("users");
  if (!table.ok()) return Fail("open table", table.status());

  std::printf("3. write %d rows, each an atomic mutation of 3 cells, synced\n", rows);
  auto start = std::chrono::steady_clock::now();
  strata::WriteOptions wo;  // sync = true: acknowledged once durable
  for (int i = 0; i < rows; i++) {
    strata::RowMutation m;
    m.Put("info", "name", 1, Value(i, 1));
    m.Put("info", "name", 2, Value(i, 2));
    m.Put("stats", "visits", 1, std::to_string(i * 7));
    s = table->Mutate(wo, RowKey(i), m);
    if (!s.ok()) return Fail("write " + RowKey(i), s);
    if ((i + 1) % (rows / 4 > 0 ? rows / 4 : 1) == 0) {
      std::printf("  %d rows written\n", i + 1);
    }
  }
  double secs = Seconds(start);
  std::printf("  %d rows in %.3f s (%.0f rows/s, one thread)\n", rows, secs, rows / secs);

  std::printf("4. read every row back\n");
  if (Verify(*table, rows, "before reopen") != 0) return 1;

  std::printf("5. close and reopen: the log is replayed\n");
  s = (*engine)->Close();
  if (!s.ok()) return Fail("close", s);
  engine->reset();
  start = std::chrono::steady_clock::now();
  engine = strata::Engine::Open(dir, options);
  if (!engine.ok()) return Fail("reopen", engine.status());
  std::printf("  reopened in %.3f s\n", Seconds(start));
  tenant = (*engine)->OpenTenant("demo");
  if (!tenant.ok()) return Fail("open tenant after reopen", tenant.status());
  table = tenant->OpenTable("users");
  if (!table.ok()) return Fail("open table after reopen", table.status());

  std::printf("6. verify after reopen\n");
  if (Verify(*table, rows, "after reopen") != 0) return 1;

  strata::EngineStats st = (*engine)->GetStats();
  std::printf("7. stats: last sequence %llu, memtables %llu bytes\n",
              static_cast<unsigned long long>(st.last_sequence),
              static_cast<unsigned long long>(st.memtable_bytes));

  std::printf("8. transactions: %d accounts of %d, %d threads making %d transfers, synced\n",
              kAccounts, kInitialBalance, kThreads, transfers);
  auto services = strata::TransactionServices::Open(dir + "/txn");
  if (!services.ok()) return Fail("open transaction services", services.status());
  auto db = strata::TransactionDB::Open(*services, *tenant);
  if (!db.ok()) return Fail("open transaction db", db.status());
  // Closes the transaction db and lets go of it and the services.
  auto close_transactions = [&]() -> strata::Status {
    strata::Status closed = (*db)->Close();
    db->reset();
    services->reset();
    return closed;
  };
  s = (*db)->CreateTable("accounts");
  if (!s.ok()) return Fail("create table accounts", s);
  {
    auto t = (*db)->Begin();
    if (!t.ok()) return Fail("begin", t.status());
    for (int i = 0; i < kAccounts; i++) {
      s = (*t)->Set("accounts", AccountKey(i), "balance", std::to_string(kInitialBalance));
      if (!s.ok()) return Fail("set", s);
    }
    s = (*t)->Commit();
    if (!s.ok()) return Fail("commit the opening balances", s);
  }
  start = std::chrono::steady_clock::now();
  TransferResult result = RunTransfers(db->get(), transfers);
  secs = Seconds(start);
  if (!result.status.ok()) return Fail("transfers", result.status);
  std::printf("  %d transfers committed in %.3f s (%.0f/s), %d retried after conflicts;\n"
              "  %d audits during the run each saw the total %d\n",
              transfers, secs, transfers / secs, result.retries, result.audits,
              kAccounts * kInitialBalance);

  std::printf("9. close and reopen, audit again\n");
  s = close_transactions();
  if (!s.ok()) return Fail("close transaction db", s);
  s = (*engine)->Close();
  if (!s.ok()) return Fail("close", s);
  engine->reset();
  engine = strata::Engine::Open(dir, options);
  if (!engine.ok()) return Fail("reopen", engine.status());
  tenant = (*engine)->OpenTenant("demo");
  if (!tenant.ok()) return Fail("open tenant after reopen", tenant.status());
  services = strata::TransactionServices::Open(dir + "/txn");
  if (!services.ok()) return Fail("reopen transaction services", services.status());
  db = strata::TransactionDB::Open(*services, *tenant);
  if (!db.ok()) return Fail("reopen transaction db", db.status());
  auto total = Audit(db->get());
  if (!total.ok()) return Fail("audit after reopen", total.status());
  if (*total != kAccounts * kInitialBalance) {
    std::fprintf(stderr, "FAILED: the accounts sum to %lld after reopen, not %d\n",
                 static_cast<long long>(*total), kAccounts * kInitialBalance);
    return 1;
  }
  std::printf("  the accounts still sum to %lld\n", static_cast<long long>(*total));
  s = close_transactions();
  if (!s.ok()) return Fail("close transaction db", s);

  s = (*engine)->Close();
  if (!s.ok()) return Fail("close", s);
  if (keep_dir) {
    std::printf("the engine stays in %s\n", dir.c_str());
  } else {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  std::printf("OK: all %d rows survived the reopen, and %d transfers kept the total\n", rows,
              transfers);
  return 0;
}
