// rados_transfer_bench: Percolator transfers over the RADOS row store
// (OpenRadosTransactionDB) against raw RADOS compare-and-sets at the same
// concurrency, and the same transfers on the embedded engine, in one run.
//
// For each number of client processes (--processes), each with --threads
// threads, for --seconds:
//   - transfer: a transaction reads two random accounts (GetForUpdate) and
//     moves a random part of one balance to the other (TwoKeyTransfer);
//     conflicts abort and count, and are not retried. Its prewrites' range conditions are
//     checked on the OSD (cls_lua, which the local cluster loads);
//   - transfer, read first: the same with RadosOptions::
//     server_side_conditions off, as on a cluster without cls_lua;
//   - cas: one CheckAndMutate of a random row whose condition is a compare
//     of one omap key (one compound RADOS write: compare and set);
// and with one process, the transfers on an engine tenant (TransactionDB::Open,
// commits synced). Reported: ops/s (committed transfers), p50/p99 latency
// of one op, the aborted share, the RADOS operations per committed
// transfer (reads and writes every client process sent, over the transfers
// it committed: aborted ones' operations included), and how many cores the
// OSD kept busy and how busy the whole machine was (/proc), which says
// where the throughput stops growing and why.
//
// The cluster is a local one (scripts/local-cluster.sh start --with-ceph:
// one monitor, one memstore OSD) with one strata-tso daemon, started and
// stopped here. Accounts: --accounts over two tables of --tablets tablets
// each.
//
//   rados_transfer_bench [--processes 1,2,4] [--threads 8] [--seconds 10]
//                        [--accounts 10000] [--tablets 8]
//
// Exit code 0, or 1 when a client failed or the bank's total changed, 2 for
// bad arguments.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "client_processes.h"
#include "cluster/rados_io.h"
#include "common/random.h"
#include "strata/cluster.h"
#include "strata/engine.h"
#include "strata/rados.h"
#include "strata/transaction.h"
#include "txn/bank_workload.h"
#include "txn/records.h"

namespace strata::bench {
namespace {

using SteadyClock = std::chrono::steady_clock;

struct Flags {
  std::vector<int> processes = {1, 2, 4};
  int threads = 8;
  int seconds = 10;
  int accounts = 10000;
  int tablets = 8;
};

const char kUsage[] =
    "usage: rados_transfer_bench [--processes 1,2,4] [--threads 8] [--seconds 10]\n"
    "                            [--accounts 10000] [--tablets 8]\n"
    "2-key transfers/s and latency over the RADOS row store against raw RADOS\n"
    "compare-and-sets at the same concurrency, and the transfers on the embedded\n"
    "engine, on a local one-node Ceph cluster and etcd started and stopped here.\n";

struct Cluster {
  std::string dir;  // STRATA_CLUSTER_DIR
  std::string etcd;
  std::string ceph_conf;
  std::string pool;
  pid_t osd_pid = 0;
};

RadosOptions RadosFor(const Cluster& c) {
  RadosOptions o;
  o.etcd_endpoints = {c.etcd};
  o.ceph_conf = c.ceph_conf;
  o.pool = c.pool;
  return o;
}

test::Bank BankFor(const Flags& f) {
  test::Bank bank;
  bank.accounts = f.accounts;
  return bank;
}

// Split rows that cut the accounts (or the cas rows) into `tablets` ranges.
std::vector<std::string> SplitRows(const Flags& f, const test::Bank& bank) {
  std::vector<std::string> rows;
  for (int t = 1; t < f.tablets; t++) rows.push_back(bank.RowOf(f.accounts * t / f.tablets));
  return rows;
}

// Run in a child, so that the parent never has librados' threads when it
// forks: the tables and their first values.
[[noreturn]] void SetUpProcess(const Flags& f, const Cluster& c, const std::string& services_dir) {
  const RadosOptions ro = RadosFor(c);
  const test::Bank bank = BankFor(f);
  for (const std::string& t : bank.tables) {
    Status s = CreateRadosTable(ro, t, txn::TransactionalSchema({}), SplitRows(f, bank));
    if (!s.ok()) {
      std::fprintf(stderr, "create %s: %s\n", t.c_str(), s.ToString().c_str());
      _exit(3);
    }
  }
  TableSchema plain;
  plain.families.push_back({.name = "f"});
  if (Status s = CreateRadosTable(ro, "cas", plain, SplitRows(f, bank)); !s.ok()) _exit(3);
  ClusterServicesOptions co;
  co.etcd_endpoints = {c.etcd};
  auto services = OpenClusterServices(services_dir, co);
  if (!services.ok()) _exit(4);
  auto db = OpenRadosTransactionDB(*services, ro);
  if (!db.ok()) _exit(4);
  // In transactions of 500 accounts.
  for (int first = 0; first < bank.accounts; first += 500) {
    auto txn = (*db)->Begin();
    if (!txn.ok()) _exit(5);
    for (int a = first; a < std::min(bank.accounts, first + 500); a++) {
      if (!(*txn)->Set(bank.TableOf(a), bank.RowOf(a), test::kBalanceColumn,
                       std::to_string(bank.initial_balance))
               .ok()) {
        _exit(5);
      }
    }
    if (Status s = (*txn)->Commit(); !s.ok()) {
      std::fprintf(stderr, "populate: %s\n", s.ToString().c_str());
      _exit(5);
    }
  }
  auto cas = OpenRadosRowStore(ro, "cas");
  if (!cas.ok()) _exit(6);
  std::vector<ConditionalMutation> batch;
  for (int a = 0; a < bank.accounts; a++) {
    ConditionalMutation m;
    m.row = bank.RowOf(a);
    m.mutation.Put("f", "v", 1, "0");
    batch.push_back(std::move(m));
    if (batch.size() == 256 || a + 1 == bank.accounts) {
      if (!(*cas)->CheckAndMutateBatch(WriteOptions(), batch).ok()) _exit(6);
      batch.clear();
    }
  }
  _exit(0);
}

// Transfers with range conditions checked on the OSD (cls_lua), or by
// reading the row first (RadosOptions::server_side_conditions off).
// A 2-key transfer in `txn`: reads two distinct random accounts with
// GetForUpdate and moves a random part of the first one's balance to the
// second. Commit is the caller's.
Status TwoKeyTransfer(Transaction* txn, const test::Bank& bank, Random* rnd) {
  const int from = static_cast<int>(rnd->Uniform(bank.accounts));
  int to = static_cast<int>(rnd->Uniform(bank.accounts - 1));
  if (to >= from) to++;
  int64_t balance[2];
  for (int i = 0; i < 2; i++) {
    const int a = i == 0 ? from : to;
    STRATA_ASSIGN_OR_RETURN(std::string v, txn->GetForUpdate(bank.TableOf(a), bank.RowOf(a),
                                                             test::kBalanceColumn));
    STRATA_ASSIGN_OR_RETURN(balance[i], test::ParseBalance(v));
  }
  const int64_t amount = static_cast<int64_t>(rnd->Uniform(balance[0] / 5 + 1));
  STRATA_RETURN_IF_ERROR(txn->Set(bank.TableOf(from), bank.RowOf(from), test::kBalanceColumn,
                                  std::to_string(balance[0] - amount)));
  return txn->Set(bank.TableOf(to), bank.RowOf(to), test::kBalanceColumn,
                  std::to_string(balance[1] + amount));
}

enum class Op { kTransfer, kTransferReadFirst, kCas };

// A client process: `threads` threads make `op` for `seconds`; per thread,
// calls are the ops that succeeded (with their latencies), failures the
// errors, aux the aborted transfers; one more record (kTotalsRecord) holds
// the process's RADOS reads (calls field) and writes (failures field).
[[noreturn]] void ClientProcess(const Flags& f, const Cluster& c, Op op, const std::string& dir,
                                const std::string& path) {
  RadosOptions ro = RadosFor(c);
  ro.server_side_conditions = op != Op::kTransferReadFirst;
  const test::Bank bank = BankFor(f);
  std::shared_ptr<TransactionServices> services;
  std::unique_ptr<TransactionDB> db;
  std::unique_ptr<RowStore> cas;
  if (op != Op::kCas) {
    ClusterServicesOptions co;
    co.etcd_endpoints = {c.etcd};
    auto s = OpenClusterServices(dir, co);
    if (!s.ok()) _exit(3);
    services = *s;
    auto d = OpenRadosTransactionDB(services, ro);
    if (!d.ok()) _exit(3);
    db = std::move(d).value();
  } else {
    auto s = OpenRadosRowStore(ro, "cas");
    if (!s.ok()) _exit(3);
    cas = std::move(s).value();
  }
  std::vector<ThreadResult> per(f.threads);
  std::vector<std::thread> workers;
  const uint64_t reads0 = cluster::RadosOpsSent().reads.load();
  const uint64_t writes0 = cluster::RadosOpsSent().writes.load();
  const auto end = SteadyClock::now() + std::chrono::seconds(f.seconds);
  for (int t = 0; t < f.threads; ++t) {
    workers.emplace_back([&, t] {
      ThreadResult& r = per[t];
      Random rnd(static_cast<uint64_t>(::getpid()) * 131 + t);
      while (SteadyClock::now() < end) {
        const int64_t start = NowNanos();
        if (op == Op::kCas) {
          const std::string row = bank.RowOf(static_cast<int>(rnd.Uniform(bank.accounts)));
          RowMutation m;
          m.Put("f", "v", 1, std::to_string(rnd.Next()));
          auto result = cas->CheckAndMutate(WriteOptions(), row,
                                            {Condition::CellExists("f", "v", 1)}, m);
          if (result.ok() && result->applied) {
            r.Add(NowNanos() - start, true);
          } else {
            ++r.failures;
          }
          continue;
        }
        auto txn = db->Begin();
        Status s = txn.status();
        if (s.ok()) s = TwoKeyTransfer(txn->get(), bank, &rnd);
        if (s.ok()) s = (*txn)->Commit();
        if (s.ok()) {
          r.Add(NowNanos() - start, true);
        } else if (txn.ok() && (*txn)->error().kind != TransactionError::Kind::kNone &&
                   (*txn)->error().kind != TransactionError::Kind::kUnknownOutcome) {
          ++r.aux;  // aborted: a conflict or a lock met
        } else {
          ++r.failures;
        }
      }
    });
  }
  for (std::thread& w : workers) w.join();
  ThreadResult ops;  // not a thread: the process's RADOS operations
  ops.aux = kTotalsRecord;
  ops.calls = cluster::RadosOpsSent().reads.load() - reads0;
  ops.failures = cluster::RadosOpsSent().writes.load() - writes0;
  per.push_back(ops);
  if (db != nullptr && !db->Close().ok()) _exit(7);
  _exit(WriteResults(path, per) ? 0 : 8);
}

// CPU seconds process `pid` has used, and the machine's busy and total
// seconds across cores (/proc), for the share of the CPU the OSD took.
double ProcessCpuSeconds(pid_t pid) {
  FILE* in = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (in == nullptr) return 0;
  char buf[1024];
  const size_t n = std::fread(buf, 1, sizeof(buf) - 1, in);
  std::fclose(in);
  buf[n] = 0;
  const char* p = std::strrchr(buf, ')');
  unsigned long long utime = 0, stime = 0;
  // After the name: state, then fields 4..13, then utime (14) and stime (15).
  if (p == nullptr || std::sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
                                  &utime, &stime) != 2) {
    return 0;
  }
  return static_cast<double>(utime + stime) / ::sysconf(_SC_CLK_TCK);
}

void MachineCpuSeconds(double* busy, double* total) {
  *busy = *total = 0;
  FILE* in = std::fopen("/proc/stat", "r");
  if (in == nullptr) return;
  unsigned long long v[8] = {};
  if (std::fscanf(in, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                  &v[4], &v[5], &v[6], &v[7]) == 8) {
    const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
    for (unsigned long long x : v) *total += x / tick;
    *busy = *total - (v[3] + v[4]) / tick;  // less idle and iowait
  }
  std::fclose(in);
}

// A figure: m.aux holds the aborted transfers, m.totals the RADOS reads
// and writes sent.
struct Row {
  Measured m;
  double osd_cpu = 0;      // cores the OSD kept busy
  double machine_cpu = 0;  // share of all cores busy
};

Row RunClients(const Flags& f, const Cluster& c, Op op, int processes, const std::string& dir) {
  const double osd0 = ProcessCpuSeconds(c.osd_pid);
  double busy0, total0;
  MachineCpuSeconds(&busy0, &total0);
  static int run = 0;
  run++;
  std::vector<pid_t> pids;
  std::vector<std::string> paths;
  for (int p = 0; p < processes; ++p) {
    const std::string base = dir + "/run" + std::to_string(run) + "-" + std::to_string(p);
    std::filesystem::create_directories(base);
    paths.push_back(base + "/results");
    const pid_t pid = fork();
    if (pid == 0) ClientProcess(f, c, op, base, paths.back());
    pids.push_back(pid);
  }
  Row row{CollectResults("rados_transfer_bench", pids, paths, f.seconds)};
  double busy1, total1;
  MachineCpuSeconds(&busy1, &total1);
  const double wall = (total1 - total0) / std::thread::hardware_concurrency();
  if (wall > 0) {
    row.osd_cpu = (ProcessCpuSeconds(c.osd_pid) - osd0) / wall;
    row.machine_cpu = (busy1 - busy0) / (total1 - total0);
  }
  return row;
}

// The same transfers on an engine tenant, in a child process.
Row RunEmbedded(const Flags& f, const std::string& dir) {
  const std::string path = dir + "/embedded-results";
  const pid_t pid = fork();
  if (pid == 0) {
    auto services = TransactionServices::Open(dir + "/embedded-services");
    EngineOptions eo;
    eo.create_if_missing = true;
    auto engine = Engine::Open(dir + "/embedded-db", eo);
    if (!services.ok() || !engine.ok() || !(*engine)->CreateTenant("bank").ok()) _exit(3);
    auto db = TransactionDB::Open(*services, *(*engine)->OpenTenant("bank"));
    if (!db.ok()) _exit(3);
    const test::Bank bank = BankFor(f);
    for (const std::string& t : bank.tables) {
      if (!(*db)->CreateTable(t).ok()) _exit(3);
    }
    if (!test::Populate(db->get(), bank).ok()) _exit(4);
    std::vector<ThreadResult> per(f.threads);
    std::vector<std::thread> workers;
    const auto end = SteadyClock::now() + std::chrono::seconds(f.seconds);
    for (int t = 0; t < f.threads; ++t) {
      workers.emplace_back([&, t] {
        ThreadResult& r = per[t];
        Random rnd(1000 + t);
          while (SteadyClock::now() < end) {
          const int64_t start = NowNanos();
          auto txn = (*db)->Begin();
          Status s = txn.status();
          if (s.ok()) s = TwoKeyTransfer(txn->get(), bank, &rnd);
          if (s.ok()) s = (*txn)->Commit();
          if (s.ok()) {
            r.Add(NowNanos() - start, true);
          } else if (txn.ok() && (*txn)->error().kind != TransactionError::Kind::kNone) {
            ++r.aux;
          } else {
            ++r.failures;
          }
        }
      });
    }
    for (std::thread& w : workers) w.join();
    if (!(*db)->Close().ok() || !(*engine)->Close().ok()) _exit(5);
    _exit(WriteResults(path, per) ? 0 : 6);
  }
  return Row{CollectResults("rados_transfer_bench", {pid}, {path}, f.seconds)};
}

// The sum of every balance, read in a child (so the parent stays without
// librados' threads); -1 when it cannot be read.
int64_t BankTotal(const Flags& f, const Cluster& c, const std::string& dir) {
  const std::string path = dir + "/total";
  const pid_t pid = fork();
  if (pid == 0) {
    ClusterServicesOptions co;
    co.etcd_endpoints = {c.etcd};
    auto services = OpenClusterServices(dir + "/audit", co);
    if (!services.ok()) _exit(3);
    auto db = OpenRadosTransactionDB(*services, RadosFor(c));
    if (!db.ok()) _exit(3);
    auto txn = (*db)->Begin();
    if (!txn.ok()) _exit(3);
    auto balances = test::ReadBalances(txn->get(), BankFor(f), test::ReadMode::kBatchGet);
    if (!balances.ok()) {
      std::fprintf(stderr, "audit: %s\n", balances.status().ToString().c_str());
      _exit(4);
    }
    FILE* out = std::fopen(path.c_str(), "w");
    if (out == nullptr) _exit(5);
    std::fprintf(out, "%lld\n", static_cast<long long>(test::Sum(*balances)));
    _exit(std::fclose(out) == 0 ? 0 : 5);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  FILE* in = std::fopen(path.c_str(), "r");
  long long total = -1;
  if (in == nullptr || std::fscanf(in, "%lld", &total) != 1) total = -1;
  if (in != nullptr) std::fclose(in);
  return total;
}

void PrintRow(const char* what, const std::string& clients, const Row& r) {
  const double tried = static_cast<double>(r.m.calls + r.m.aux);
  const double committed = static_cast<double>(r.m.calls);
  std::printf("%-23s %-7s | %7.0f %7.2f %7.2f | %6.1f%% | ", what, clients.c_str(), r.m.per_second,
              r.m.p50_us / 1000, r.m.p99_us / 1000, tried > 0 ? 100.0 * r.m.aux / tried : 0.0);
  const double reads = static_cast<double>(r.m.totals[0]);
  const double writes = static_cast<double>(r.m.totals[1]);
  if (reads + writes > 0 && committed > 0) {
    std::printf("%4.1f reads %4.1f writes | ", reads / committed, writes / committed);
  } else {
    std::printf("%21s | ", "-");
  }
  if (r.machine_cpu > 0) {
    std::printf("%4.2f %5.0f%%\n", r.osd_cpu, 100 * r.machine_cpu);
  } else {
    std::printf("-\n");
  }
  std::fflush(stdout);
}

int Run(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    std::string name, value;
    NextFlag(argc, argv, &i, &name, &value);
    bool good = true;
    auto positive = [&](int* out, int max) {
      *out = std::atoi(value.c_str());
      good = *out > 0 && *out <= max && value.find_first_not_of("0123456789") == std::string::npos;
    };
    if (name == "--processes") {
      good = ParseList(value, &f.processes);
    } else if (name == "--threads") {
      positive(&f.threads, 256);
    } else if (name == "--seconds") {
      positive(&f.seconds, 3600);
    } else if (name == "--accounts") {
      positive(&f.accounts, 10'000'000);
    } else if (name == "--tablets") {
      positive(&f.tablets, 1024);
    } else {
      good = false;
    }
    if (good && f.tablets > f.accounts) good = false;
    if (!good) {
      std::fprintf(stderr, "rados_transfer_bench: bad argument '%s'\n%s", arg.c_str(), kUsage);
      return 2;
    }
  }

  std::fprintf(stderr, "starting etcd and a one-node Ceph cluster...\n");
  std::map<std::string, std::string> vars = RunClusterScript("start --with-ceph");
  Cluster c{vars["STRATA_CLUSTER_DIR"], vars["ETCD_ENDPOINTS"], vars["CEPH_CONF"],
            vars["CEPH_POOL"], static_cast<pid_t>(std::atol(vars["CEPH_OSD_PID"].c_str()))};
  if (c.dir.empty() || c.ceph_conf.empty()) {
    std::fprintf(stderr, "rados_transfer_bench: could not start the local cluster\n");
    return 1;
  }
  const std::string dir = std::filesystem::temp_directory_path().string() +
                          "/rados_transfer_bench." + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  int rc = 0;
  const pid_t tso = fork();
  if (tso == 0) {
    const int fd = ::open((dir + "/tso.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    execl(STRATA_TSO_BINARY, "strata-tso", "--etcd", c.etcd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  std::fprintf(stderr, "creating %d accounts...\n", f.accounts);
  const pid_t setup = fork();
  if (setup == 0) SetUpProcess(f, c, dir + "/setup");
  int status = 0;
  ::waitpid(setup, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "rados_transfer_bench: setting up the tables failed (status %d)\n",
                 status);
    rc = 1;
  }

  if (rc == 0) {
    std::printf(
        "%d accounts over 2 tables of %d tablets; %d threads per process; %d s per figure; "
        "%u cores shared with the OSD, monitor and etcd\n\n",
        f.accounts, f.tablets, f.threads, f.seconds, std::thread::hardware_concurrency());
    std::printf("%-23s %-7s | %7s %7s %7s | %7s | %-21s | %s\n", "op", "clients", "ops/s",
                "p50 ms", "p99 ms", "aborted", "RADOS ops per op", "OSD cores, machine busy");
    for (int processes : f.processes) {
      const std::string clients =
          std::to_string(processes) + " x " + std::to_string(f.threads);
      const Row transfer = RunClients(f, c, Op::kTransfer, processes, dir);
      const Row read_first = RunClients(f, c, Op::kTransferReadFirst, processes, dir);
      const Row cas = RunClients(f, c, Op::kCas, processes, dir);
      PrintRow("transfer (RADOS)", clients, transfer);
      PrintRow("transfer, read first", clients, read_first);
      PrintRow("compare-and-set (RADOS)", clients, cas);
      for (const Row* r : {&transfer, &read_first, &cas}) {
        if (!r->m.ok || r->m.failures > 0) {
          std::fprintf(stderr, "rados_transfer_bench: %llu failed ops\n",
                       static_cast<unsigned long long>(r->m.failures));
          rc = 1;
        }
      }
    }
    const Row embedded = RunEmbedded(f, dir);
    PrintRow("transfer (embedded)", "1 x " + std::to_string(f.threads), embedded);
    if (!embedded.m.ok) rc = 1;
    const int64_t total = BankTotal(f, c, dir);
    const test::Bank bank = BankFor(f);
    std::printf("\nbank total after the runs: %lld (%s)\n", static_cast<long long>(total),
                total == bank.total() ? "unchanged" : "CHANGED");
    if (total != bank.total()) rc = 1;
  }

  ::kill(tso, SIGTERM);
  ::waitpid(tso, nullptr, 0);
  std::filesystem::remove_all(dir);
  const std::string stop =
      std::string(STRATA_SOURCE_DIR) + "/scripts/local-cluster.sh stop --dir " + c.dir;
  if (std::system(stop.c_str()) != 0) {
    std::fprintf(stderr, "rados_transfer_bench: %s failed\n", stop.c_str());
  }
  return rc;
}

}  // namespace
}  // namespace strata::bench

int main(int argc, char** argv) { return strata::bench::Run(argc, argv); }
