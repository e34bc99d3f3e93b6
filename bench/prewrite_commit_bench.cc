// prewrite_commit_bench: the two actions of a Percolator commit timed on
// their own, as TiKV benchmarks its prewrite and commit actions. Every
// transaction writes `keys` new rows of one table (blind writes: one 16-byte
// value per row, no reads, so no conflicts) and commits; the TxnDB's
// fail-point hook stamps the moments between the steps, in the committing
// thread.
//
//   prewrite keys/s  keys prewritten per second spent prewriting: from
//                    Commit's start to the last prewrite (liveness
//                    registration, the primary's row, then the other rows in
//                    batches of max_batch_rows)
//   commit keys/s    keys committed per second spent committing: from the
//                    commit_ts taken to Commit's return, with the secondaries
//                    committed in the foreground, so every key's commit
//                    record is in the step
//   txn/s            whole transactions (Begin to Commit's return) per
//                    second of wall time
// A thread's rate is its keys over its own time in the step; the figure is
// the sum over threads. Grid: 1, 16 and 256 keys per transaction; 1 and 8
// threads; sync off and on (TransactionDBOptions::sync: the primary's commit
// waits for fdatasync of the engine's log); mode 2pc and 1pc
// (TransactionDBOptions::one_phase_commit). A one-phase commit has no
// separate steps: its whole Commit counts as its prewrite and as its commit
// (so its keys/s of each is its commit's), against the 2pc prewrite and
// commit keys/s, and their txn/s compare whole transactions.
//
//   build/bench/prewrite_commit_bench                    # the grid, ~2 min
//   build/bench/prewrite_commit_bench --benchmark_filter='keys:16/'
//   build/bench/prewrite_commit_bench --dir=/path        # where the engine goes
//                                                        # (default: under $TMPDIR)
//   build/bench/prewrite_commit_bench --metrics=FILE
//       # at the end, the engine's metrics (strata/metrics.h: log syncs and
//       # their latency histogram, flushes, ...) to FILE, Prometheus text, or
//       # JSON when FILE ends in .json
//   build/bench/prewrite_commit_bench --apply_before_sync=0
//       # EngineOptions::apply_before_sync off (default on, as txn/README.md
//       # recommends with synced commits): a synced commit then holds its
//       # rows' stripes (engine/row_locks.h) through its fdatasync
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "commit_marks.h"
#include "strata/engine.h"
#include "strata/metrics.h"
#include "strata/table.h"
#include "strata/transaction.h"
#include "txn/table_resolver.h"
#include "txn/transaction_db.h"
#include "txn/transaction_services.h"

namespace {

using SteadyClock = std::chrono::steady_clock;
constexpr char kTable[] = "t";
constexpr char kColumn[] = "v";

std::unique_ptr<strata::Engine> g_engine;
std::shared_ptr<strata::TransactionServices> g_services;
std::string g_dir;
std::string g_metrics;  // --metrics
bool g_apply_before_sync = true;
std::atomic<uint64_t> g_run{0};

using strata::bench::MarkFailPoint;
using strata::bench::t_commit_marks;

double Seconds(SteadyClock::time_point a, SteadyClock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

class PrewriteCommit : public benchmark::Fixture {
 public:
  void SetUp(benchmark::State& state) override {
    if (state.thread_index() != 0) return;
    // As TransactionDB::Open wires it, plus the fail-point hook.
    strata::txn::TxnDBConfig config;
    config.options.sync = state.range(1) != 0;
    config.options.one_phase_commit = state.range(2) != 0;
    config.options.commit_secondaries_in_background = false;
    config.oracle = strata::txn::TransactionServicesAccess::oracle(*g_services);
    config.registry = strata::txn::TransactionServicesAccess::registry(*g_services);
    config.tables = std::make_shared<strata::txn::TenantTables>(*g_engine->OpenTenant("bench"));
    config.single_log = true;
    config.fail_point = &MarkFailPoint;
    config.keep_alive = g_services;
    auto db = strata::txn::TxnDB::Make(std::move(config));
    if (!db.ok()) {
      state.SkipWithError(("TxnDB::Make: " + db.status().ToString()).c_str());
      return;
    }
    db_ = std::move(db).value();
    run_ = g_run.fetch_add(1);
  }
  void TearDown(benchmark::State& state) override {
    if (state.thread_index() != 0 || db_ == nullptr) return;
    (void)db_->Close();
    db_.reset();
  }

 protected:
  std::unique_ptr<strata::TransactionDB> db_;
  uint64_t run_ = 0;
};

BENCHMARK_DEFINE_F(PrewriteCommit, Blind)(benchmark::State& state) {
  const int keys = static_cast<int>(state.range(0));
  const std::string value(16, 'v');
  double prewrite_s = 0, commit_s = 0;
  uint64_t txns = 0;
  char prefix[64];
  std::snprintf(prefix, sizeof(prefix), "r%04llu/t%02d/", static_cast<unsigned long long>(run_),
                state.thread_index());
  for (auto _ : state) {
    auto txn = db_->Begin();
    if (!txn.ok()) {
      state.SkipWithError(("Begin: " + txn.status().ToString()).c_str());
      break;
    }
    char row[96];
    for (int k = 0; k < keys; k++) {
      std::snprintf(row, sizeof(row), "%s%010llu/%04d", prefix,
                    static_cast<unsigned long long>(txns), k);
      strata::Status s = (*txn)->Set(kTable, row, kColumn, value);
      if (!s.ok()) {
        state.SkipWithError(("Set: " + s.ToString()).c_str());
        break;
      }
    }
    const auto start = SteadyClock::now();
    t_commit_marks.Reset();
    strata::Status s = (*txn)->Commit();
    const auto end = SteadyClock::now();
    t_commit_marks.active = false;
    if (!s.ok()) {
      state.SkipWithError(("Commit: " + s.ToString()).c_str());
      break;
    }
    using FP = strata::txn::FailPoint;
    const strata::bench::CommitMarks& m = t_commit_marks;
    const int pp = static_cast<int>(FP::kAfterPrimaryPrewrite);
    const int sb = static_cast<int>(FP::kAfterSecondaryBatch);
    const int ct = static_cast<int>(FP::kAfterCommitTs);
    if (state.range(2) != 0) {
      if (m.seen[pp]) {
        state.SkipWithError("a one-phase commit went through the two phases");
        break;
      }
      prewrite_s += Seconds(start, end);
      commit_s += Seconds(start, end);
    } else {
      if (!m.seen[pp] || !m.seen[ct]) {
        state.SkipWithError("the commit passed no fail point: was it a two-phase commit?");
        break;
      }
      prewrite_s += Seconds(start, m.seen[sb] ? m.at[sb] : m.at[pp]);
      commit_s += Seconds(m.at[ct], end);
    }
    txns++;
  }
  const double n = static_cast<double>(txns) * keys;
  state.counters["prewrite_keys/s"] = prewrite_s > 0 ? n / prewrite_s : 0;
  state.counters["commit_keys/s"] = commit_s > 0 ? n / commit_s : 0;
  state.counters["txn/s"] =
      benchmark::Counter(static_cast<double>(txns), benchmark::Counter::kIsRate);
  state.counters["keys/s"] = benchmark::Counter(n, benchmark::Counter::kIsRate);
}

BENCHMARK_REGISTER_F(PrewriteCommit, Blind)
    ->ArgNames({"keys", "sync", "1pc"})
    ->ArgsProduct({{1, 16, 256}, {0, 1}, {0, 1}})
    ->Threads(1)
    ->Threads(8)
    ->MinTime(0.3)
    ->UseRealTime();

bool OpenStore() {
  std::filesystem::create_directories(g_dir);
  strata::EngineOptions options;
  options.apply_before_sync = g_apply_before_sync;
  auto engine = strata::Engine::Open(g_dir + "/db", options);
  if (!engine.ok()) {
    std::fprintf(stderr, "prewrite_commit_bench: Engine::Open: %s\n",
                 engine.status().ToString().c_str());
    return false;
  }
  g_engine = std::move(engine).value();
  strata::Status s = g_engine->CreateTenant("bench");
  if (!s.ok() && !s.IsAlreadyExists()) {
    std::fprintf(stderr, "prewrite_commit_bench: CreateTenant: %s\n", s.ToString().c_str());
    return false;
  }
  auto services = strata::TransactionServices::Open(g_dir + "/services");
  if (!services.ok()) {
    std::fprintf(stderr, "prewrite_commit_bench: TransactionServices::Open: %s\n",
                 services.status().ToString().c_str());
    return false;
  }
  g_services = *services;
  auto db = strata::TransactionDB::Open(g_services, *g_engine->OpenTenant("bench"));
  if (!db.ok()) return false;
  s = (*db)->CreateTable(kTable);
  if (!s.ok() && !s.IsAlreadyExists()) {
    std::fprintf(stderr, "prewrite_commit_bench: CreateTable: %s\n", s.ToString().c_str());
    return false;
  }
  return (*db)->Close().ok();
}

}  // namespace

int main(int argc, char** argv) {
  bool temporary = true;
  int kept = 1;
  for (int i = 1; i < argc; i++) {
    if (std::strncmp(argv[i], "--dir=", 6) == 0) {
      g_dir = argv[i] + 6;
      temporary = false;
      continue;  // not Google Benchmark's
    }
    if (std::strncmp(argv[i], "--metrics=", 10) == 0) {
      g_metrics = argv[i] + 10;
      if (g_metrics.empty()) {
        std::fprintf(stderr, "prewrite_commit_bench: --metrics takes a file name\n");
        return 2;
      }
      continue;
    }
    if (std::strncmp(argv[i], "--apply_before_sync=", 20) == 0) {
      const std::string_view v = argv[i] + 20;
      if (v != "0" && v != "1") {
        std::fprintf(stderr, "prewrite_commit_bench: --apply_before_sync takes 0 or 1\n");
        return 2;
      }
      g_apply_before_sync = v == "1";
      continue;
    }
    if (std::strcmp(argv[i], "--help") == 0) {
      std::printf(
          "prewrite_commit_bench: prewrite and commit keys/s of Strata transactions, timed on\n"
          "their own, for 1, 16 and 256 keys per transaction, 1 and 8 threads, sync off and on,\n"
          "two-phase and one-phase commits.\n\n"
          "  --dir=DIR   where the engine goes (default: a new directory under $TMPDIR, removed\n"
          "              at the end)\n"
          "  --apply_before_sync=0|1\n"
          "              EngineOptions::apply_before_sync (default 1, as txn/README.md recommends\n"
          "              with synced commits; 0 holds a synced commit's row stripes through its\n"
          "              fdatasync)\n"
          "  --metrics=FILE  at the end, write the engine's metrics (strata/metrics.h) to FILE:\n"
          "              JSON when FILE ends in .json, else Prometheus text\n"
          "  and Google Benchmark's flags (--benchmark_filter=REGEX, --benchmark_repetitions=N,\n"
          "  ...), listed below.\n\n");
    }
    argv[kept++] = argv[i];
  }
  argc = kept;
  if (temporary) {
    g_dir = (std::filesystem::temp_directory_path() /
             ("strata-prewrite-commit-bench." + std::to_string(::getpid())))
                .string();
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (!OpenStore()) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  int code = 0;
  if (!g_metrics.empty()) {
    strata::MetricsSources sources;
    sources.engine = g_engine.get();
    const bool json =
        g_metrics.size() >= 5 && g_metrics.compare(g_metrics.size() - 5, 5, ".json") == 0;
    const strata::Status s = strata::WriteMetricsFile(
        sources, json ? strata::MetricsFormat::kJson : strata::MetricsFormat::kPrometheus,
        g_metrics);
    if (!s.ok()) {
      std::fprintf(stderr, "prewrite_commit_bench: writing the metrics: %s\n",
                   s.ToString().c_str());
      code = 1;
    }
  }
  (void)g_engine->Close();
  g_engine.reset();
  g_services.reset();
  if (temporary) std::filesystem::remove_all(g_dir);
  return code;
}
