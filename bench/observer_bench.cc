// observer_bench: what observers cost, against doing the same work in the
// writing transaction, and how soon an idle worker picks a change up. The
// work per item: a 100-byte value `in` is written to a fresh row, and
// `out` = f(in) is written to the same row.
//
//   baseline   writer threads commit {Set in, Set out} in one transaction
//   observed   writer threads commit {Set in} (observed: it notifies) while
//              an ObserverWorker runs {Get in, Set out} for each; timed to
//              quiescence
//   drain      a backlog of notifications written first, then drained by
//              the worker; against plain transactions {Get in, Set out} over
//              the same rows
//   latency    one writer commits an item every --gap_us to an idle worker:
//              the delay from a commit's return to the start of its run
//
//   build/bench/observer_bench [--seconds=3] [--threads=1,2,4] [--sync=both|0|1]
//                              [--latency_items=1000] [--gap_us=2000] [--db=DIR]
//
// Goals: observed at least 0.7x baseline items/s; latency p99 within 10 ms.
// Timings are noisy: compare within one run.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "strata/engine.h"
#include "strata/observer.h"
#include "strata/transaction.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Flags {
  double seconds = 3;
  std::vector<int> threads = {1, 2, 4};
  std::vector<bool> syncs = {false, true};
  int latency_items = 1000;
  uint64_t gap_us = 2000;
  std::string db;
};

void Usage() {
  std::printf(
      "observer_bench: observers against the same work done in the writing transaction.\n\n"
      "  --seconds=S        how long writers write in each measurement (default 3)\n"
      "  --threads=A,B,...  worker (and writer) thread counts (default 1,2,4)\n"
      "  --sync=both|0|1    TransactionDBOptions::sync (default both)\n"
      "  --latency_items=N  items of the latency measurement (default 1000)\n"
      "  --gap_us=N         microseconds between its commits (default 2000)\n"
      "  --db=DIR           parent of the databases (default $STRATA_BENCH_DIR or the temp dir)\n"
      "  --help             this text\n\n"
      "Per sync mode and thread count: items/s of baseline and observed and their ratio;\n"
      "drain runs/s against plain transactions doing the same work; and the latency from\n"
      "commit to run start (p50, p99, max) with that many worker threads.\n");
}

bool ParseFlags(int argc, char** argv, Flags* f) {
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    auto value = [&](const char* name) -> const char* {
      const std::string prefix = std::string(name) + "=";
      return a.rfind(prefix, 0) == 0 ? argv[i] + prefix.size() : nullptr;
    };
    if (a == "--help" || a == "-h") {
      Usage();
      std::exit(0);
    } else if (const char* v = value("--seconds")) {
      f->seconds = std::atof(v);
    } else if (const char* v = value("--threads")) {
      f->threads.clear();
      std::stringstream ss(v);
      std::string t;
      while (std::getline(ss, t, ',')) f->threads.push_back(std::atoi(t.c_str()));
    } else if (const char* v = value("--sync")) {
      const std::string s = v;
      if (s == "both") {
        f->syncs = {false, true};
      } else if (s == "0" || s == "1") {
        f->syncs = {s == "1"};
      } else {
        std::fprintf(stderr, "observer_bench: --sync takes both, 0 or 1\n");
        return false;
      }
    } else if (const char* v = value("--latency_items")) {
      f->latency_items = std::atoi(v);
    } else if (const char* v = value("--gap_us")) {
      f->gap_us = std::strtoull(v, nullptr, 10);
    } else if (const char* v = value("--db")) {
      f->db = v;
    } else {
      std::fprintf(stderr, "observer_bench: unknown flag %s (--help lists them)\n", argv[i]);
      return false;
    }
  }
  if (f->seconds <= 0 || f->threads.empty() || f->latency_items < 1) {
    std::fprintf(stderr, "observer_bench: bad flag value (--help says what each takes)\n");
    return false;
  }
  for (int t : f->threads) {
    if (t < 1 || t > 64) {
      std::fprintf(stderr, "observer_bench: thread counts must be in [1, 64]\n");
      return false;
    }
  }
  return true;
}

bool Check(const strata::Status& s, const char* what) {
  if (s.ok()) return true;
  std::fprintf(stderr, "observer_bench: %s: %s\n", what, s.ToString().c_str());
  return false;
}

std::string Row(uint64_t i) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "r%010" PRIu64, i);
  return buf;
}

std::string Value(uint64_t i) { return std::string(92, 'v') + Row(i).substr(3); }

// The work: out = f(in).
std::string Out(const std::string& in) {
  std::string out(in.rbegin(), in.rend());
  return out;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5))];
}

// One database: an engine, services, a TransactionDB with `in` observed.
struct Db {
  std::unique_ptr<strata::Engine> engine;
  std::shared_ptr<strata::TransactionServices> services;
  std::unique_ptr<strata::TransactionDB> db;

  // One TransactionServices per process: shared by every database.
  bool Open(const std::string& dir, bool sync,
            const std::shared_ptr<strata::TransactionServices>& shared) {
    std::filesystem::remove_all(dir + "/db");
    std::filesystem::create_directories(dir);
    auto e = strata::Engine::Open(dir + "/db");
    if (!Check(e.status(), "open engine")) return false;
    engine = std::move(e).value();
    if (!Check(engine->CreateTenant("t"), "create tenant")) return false;
    services = shared;
    strata::TransactionDBOptions o;
    o.sync = sync;
    o.observed_columns = {{"docs", "in"}};
    auto d = strata::TransactionDB::Open(services, *engine->OpenTenant("t"), o);
    if (!Check(d.status(), "open transaction db")) return false;
    db = std::move(d).value();
    return Check(db->CreateTable("docs"), "create table");
  }
  void Close() {
    if (db) (void)db->Close();
    db.reset();
    services.reset();
    if (engine) (void)engine->Close();
    engine.reset();
  }
};

class WorkObserver final : public strata::Observer {
 public:
  // When set, the first run of each row records its start time.
  std::vector<std::atomic<int64_t>>* started = nullptr;
  strata::Status Process(strata::Transaction* txn, std::string_view table, std::string_view row,
                         std::string_view column) override {
    if (started != nullptr) {
      const uint64_t i = std::strtoull(std::string(row.substr(1)).c_str(), nullptr, 10);
      int64_t expected = 0;
      (*started)[i].compare_exchange_strong(
          expected, Clock::now().time_since_epoch().count(), std::memory_order_relaxed);
    }
    STRATA_ASSIGN_OR_RETURN(std::string in, txn->Get(table, row, "in"));
    return txn->Set(table, row, "out", Out(in));
  }
};

// Writers commit items [0, ...) for `seconds`, each in its own transaction:
// {in} or {in, out}. Returns the number of items committed.
uint64_t Write(strata::TransactionDB* db, int threads, double seconds, bool with_out,
               uint64_t first) {
  std::atomic<uint64_t> next{first};
  std::atomic<uint64_t> done{0};
  std::atomic<bool> failed{false};
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; t++) {
    ts.emplace_back([&] {
      while (Clock::now() < end && !failed) {
        const uint64_t i = next.fetch_add(1);
        auto txn = db->Begin();
        if (!txn.ok()) {
          failed = true;
          return;
        }
        const std::string v = Value(i);
        strata::Status s = (*txn)->Set("docs", Row(i), "in", v);
        if (s.ok() && with_out) s = (*txn)->Set("docs", Row(i), "out", Out(v));
        if (s.ok()) s = (*txn)->Commit();
        if (!s.ok()) {
          failed = !Check(s, "commit");
          return;
        }
        done++;
      }
    });
  }
  for (auto& t : ts) t.join();
  return done.load();
}

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

bool RunCell(const Flags& f, const std::string& dir, bool sync, int threads,
             const std::shared_ptr<strata::TransactionServices>& services) {
  auto obs = std::make_shared<WorkObserver>();
  const std::vector<strata::ObserverSpec> specs = {
      {"docs", "in", strata::NotificationKind::kStrong, obs}};
  // Baseline.
  Db db;
  if (!db.Open(dir, sync, services)) return false;
  auto t0 = Clock::now();
  const uint64_t base_items = Write(db.db.get(), threads, f.seconds, /*with_out=*/true, 0);
  const double base_rate = base_items / Seconds(t0);
  db.Close();

  // Observed: writers and the worker at once, timed to quiescence.
  if (!db.Open(dir, sync, services)) return false;
  auto w = strata::ObserverWorker::Start(db.db.get(), specs, {.threads = threads});
  if (!Check(w.status(), "start worker")) return false;
  t0 = Clock::now();
  const uint64_t obs_items = Write(db.db.get(), threads, f.seconds, /*with_out=*/false, 0);
  if (!Check((*w)->WaitForQuiescence(600'000), "quiescence")) return false;
  const double obs_rate = obs_items / Seconds(t0);
  const strata::ObserverStats os = (*w)->GetStats();
  w->reset();  // it holds the database
  db.Close();

  // Drain: a backlog, then the worker alone; plain transactions doing the
  // same work over the same rows.
  if (!db.Open(dir, sync, services)) return false;
  const uint64_t backlog = Write(db.db.get(), threads, f.seconds / 2, /*with_out=*/false, 0);
  auto w2 = strata::ObserverWorker::Start(db.db.get(), specs, {.threads = threads});
  if (!Check(w2.status(), "start worker")) return false;
  t0 = Clock::now();
  if (!Check((*w2)->WaitForQuiescence(600'000), "quiescence")) return false;
  const double drain_rate = backlog / Seconds(t0);
  w2->reset();
  // The same work as plain transactions, on rows written again (so that
  // their `out` is rewritten, as a run's is).
  std::atomic<uint64_t> next{0};
  std::atomic<bool> failed{false};
  t0 = Clock::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; t++) {
    ts.emplace_back([&] {
      for (uint64_t i = next.fetch_add(1); i < backlog && !failed; i = next.fetch_add(1)) {
        auto txn = db.db->Begin();
        strata::Status s = txn.status();
        std::string in;
        if (s.ok()) {
          auto v = (*txn)->Get("docs", Row(i), "in");
          s = v.status();
          if (s.ok()) in = *v;
        }
        if (s.ok()) s = (*txn)->Set("docs", Row(i), "out", Out(in) + "2");
        if (s.ok()) s = (*txn)->Commit();
        if (!s.ok()) failed = !Check(s, "plain work");
      }
    });
  }
  for (auto& t : ts) t.join();
  const double plain_rate = backlog / Seconds(t0);
  db.Close();
  if (failed) return false;

  // Latency: an idle worker, one commit every gap_us.
  if (!db.Open(dir, sync, services)) return false;
  std::vector<std::atomic<int64_t>> started(f.latency_items);
  for (auto& s : started) s.store(0);
  auto lat_obs = std::make_shared<WorkObserver>();
  lat_obs->started = &started;
  auto w3 = strata::ObserverWorker::Start(
      db.db.get(), {{"docs", "in", strata::NotificationKind::kStrong, lat_obs}},
      {.threads = threads});
  if (!Check(w3.status(), "start worker")) return false;
  std::vector<int64_t> committed(f.latency_items);
  for (int i = 0; i < f.latency_items; i++) {
    std::this_thread::sleep_for(std::chrono::microseconds(f.gap_us));
    auto txn = db.db->Begin();
    strata::Status s = txn.status();
    if (s.ok()) s = (*txn)->Set("docs", Row(i), "in", Value(i));
    if (s.ok()) s = (*txn)->Commit();
    if (!Check(s, "latency commit")) return false;
    committed[i] = Clock::now().time_since_epoch().count();
  }
  if (!Check((*w3)->WaitForQuiescence(600'000), "quiescence")) return false;
  w3->reset();
  db.Close();
  std::vector<double> delays;
  for (int i = 0; i < f.latency_items; i++) {
    // A run may start before the writer's Commit returns (the notification
    // is in the store once the primary commits): count that as 0.
    const int64_t d = started[i].load() - committed[i];
    delays.push_back(std::max<int64_t>(d, 0) / 1e6);
  }
  std::printf("sync=%d threads=%d  baseline %8.0f items/s  observed %8.0f items/s  %.2fx  |  "
              "drain %8.0f runs/s  plain %8.0f txn/s  %.2fx  |  latency ms p50 %.2f p99 %.2f "
              "max %.2f  |  runs %" PRIu64 " collapsed %" PRIu64 " skipped %" PRIu64
              " aborted %" PRIu64 "\n",
              sync ? 1 : 0, threads, base_rate, obs_rate, obs_rate / base_rate, drain_rate,
              plain_rate, drain_rate / plain_rate, Percentile(delays, 0.5),
              Percentile(delays, 0.99), Percentile(delays, 1.0), os.runs, os.collapsed,
              os.skipped, os.aborted);
  std::fflush(stdout);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  if (!ParseFlags(argc, argv, &f)) return 2;
  std::string parent = f.db;
  if (parent.empty()) {
    const char* env = std::getenv("STRATA_BENCH_DIR");
    parent = env != nullptr ? env : std::filesystem::temp_directory_path().string();
  }
  const std::string dir = parent + "/observer_bench." + std::to_string(::getpid());
  std::printf("observer_bench: seconds=%.1f latency_items=%d gap_us=%" PRIu64 "\n", f.seconds,
              f.latency_items, f.gap_us);
  std::filesystem::create_directories(dir);
  auto services = strata::TransactionServices::Open(dir + "/services");
  if (!Check(services.status(), "open services")) return 1;
  bool ok = true;
  for (bool sync : f.syncs) {
    for (int t : f.threads) {
      if (!RunCell(f, dir, sync, t, *services)) {
        ok = false;
        break;
      }
    }
    if (!ok) break;
  }
  services->reset();
  std::filesystem::remove_all(dir);
  return ok ? 0 : 1;
}
