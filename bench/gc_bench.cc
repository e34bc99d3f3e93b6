// gc_bench: a hot bank under 2-key transfers for a while, with the garbage
// collector off and then on, in one run: how its space and the latency of a
// read of a hot account evolve. Every few seconds a sample reports the
// versions (commit records) per account, the table and memtable bytes, and
// p50/p99 of the one-Get transactions on random accounts that a reader
// thread ran back to back since the last sample; each mode ends with its
// transfer throughput.
//
//   build/bench/gc_bench [--seconds=60] [--threads=4] [--accounts=64]
//                        [--sample_seconds=5] [--life_ms=1000] [--interval_ms=1000]
//                        [--mode=both|off|on] [--sync=0|1] [--write_buffer_mb=4]
//                        [--db=DIR]
//
// The goal it checks: with GC on, space and read p99 stay within 1.2x of
// their value at the first sample, and transfers lose at most 5% of their
// throughput against GC off. Timings are noisy: compare within one run.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "strata/engine.h"
#include "strata/gc.h"
#include "strata/table.h"
#include "strata/transaction.h"

namespace {

struct Flags {
  double seconds = 60;
  int threads = 4;
  int accounts = 64;
  double sample_seconds = 5;
  uint64_t life_ms = 1000;
  uint64_t interval_ms = 1000;
  std::string mode = "both";
  bool sync = false;
  uint64_t write_buffer_mb = 4;
  std::string db;
};

void Usage() {
  std::printf(
      "gc_bench: a hot bank under 2-key transfers, garbage collector off then on.\n\n"
      "  --seconds=S         length of each mode's run (default 60)\n"
      "  --threads=N         transferring threads (default 4)\n"
      "  --accounts=N        accounts of the bank, >= 2 (default 64)\n"
      "  --sample_seconds=S  time between samples (default 5)\n"
      "  --life_ms=N         GcOptions::life_time_millis with GC on (default 1000)\n"
      "  --interval_ms=N     GcOptions::interval_millis with GC on (default 1000)\n"
      "  --mode=M            both (default), off or on\n"
      "  --sync=0|1          TransactionDBOptions::sync (default 0)\n"
      "  --write_buffer_mb=N EngineOptions::write_buffer_size in MiB (default 4: flushes and\n"
      "                      compactions within a short run)\n"
      "  --db=DIR            parent of the databases (default $STRATA_BENCH_DIR or the temp dir)\n"
      "  --help              this text\n\n"
      "Each sample: seconds into the run, commit records per account (mean), table and\n"
      "memtable MB, p50/p99 microseconds of a transaction that Gets one random account,\n"
      "and transfers/s since the last sample.\n");
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
      f->threads = std::atoi(v);
    } else if (const char* v = value("--accounts")) {
      f->accounts = std::atoi(v);
    } else if (const char* v = value("--sample_seconds")) {
      f->sample_seconds = std::atof(v);
    } else if (const char* v = value("--life_ms")) {
      f->life_ms = std::strtoull(v, nullptr, 10);
    } else if (const char* v = value("--interval_ms")) {
      f->interval_ms = std::strtoull(v, nullptr, 10);
    } else if (const char* v = value("--mode")) {
      f->mode = v;
    } else if (const char* v = value("--sync")) {
      f->sync = std::atoi(v) != 0;
    } else if (const char* v = value("--write_buffer_mb")) {
      f->write_buffer_mb = std::strtoull(v, nullptr, 10);
    } else if (const char* v = value("--db")) {
      f->db = v;
    } else {
      std::fprintf(stderr, "gc_bench: unknown flag %s (--help lists them)\n", argv[i]);
      return false;
    }
  }
  if (f->seconds <= 0 || f->threads < 1 || f->accounts < 2 || f->sample_seconds <= 0 ||
      f->write_buffer_mb < 1 ||
      (f->mode != "both" && f->mode != "off" && f->mode != "on")) {
    std::fprintf(stderr, "gc_bench: bad flag value (--help says what each takes)\n");
    return false;
  }
  return true;
}

std::string Account(int i) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "acct%04d", i);
  return buf;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5))];
}

struct Sample {
  double at = 0;
  double versions = 0;
  double table_mb = 0;
  double memtable_mb = 0;
  double p50_us = 0;
  double p99_us = 0;
  double transfers_per_s = 0;
  size_t reads = 0;  // reads in the window
};

// One mode's run; false on an error (printed).
bool RunMode(const Flags& flags, bool gc_on, std::vector<Sample>* samples, double* throughput) {
  std::filesystem::path base =
      !flags.db.empty()
          ? std::filesystem::path(flags.db)
          : (std::getenv("STRATA_BENCH_DIR") ? std::filesystem::path(std::getenv("STRATA_BENCH_DIR"))
                                             : std::filesystem::temp_directory_path());
  const std::filesystem::path dir =
      base / ("strata-gc-bench-" + std::to_string(::getpid()) + (gc_on ? "-on" : "-off"));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto fail = [](const char* what, const strata::Status& s) {
    std::fprintf(stderr, "gc_bench: %s: %s\n", what, s.ToString().c_str());
    return false;
  };
  strata::EngineOptions eo;
  eo.write_buffer_size = flags.write_buffer_mb << 20;
  auto engine = strata::Engine::Open((dir / "db").string(), eo);
  if (!engine.ok()) return fail("open engine", engine.status());
  if (strata::Status s = (*engine)->CreateTenant("bank"); !s.ok()) return fail("tenant", s);
  auto services = strata::TransactionServices::Open((dir / "services").string());
  if (!services.ok()) return fail("open services", services.status());
  strata::TransactionDBOptions dbo;
  dbo.sync = flags.sync;
  auto db = strata::TransactionDB::Open(*services, *(*engine)->OpenTenant("bank"), dbo);
  if (!db.ok()) return fail("open db", db.status());
  if (strata::Status s = (*db)->CreateTable("accounts"); !s.ok()) return fail("table", s);
  {
    auto t = (*db)->Begin();
    if (!t.ok()) return fail("begin", t.status());
    for (int i = 0; i < flags.accounts; i++) {
      if (strata::Status s = (*t)->Set("accounts", Account(i), "bal", "1000"); !s.ok()) {
        return fail("seed", s);
      }
    }
    if (strata::Status s = (*t)->Commit(); !s.ok()) return fail("seed commit", s);
  }
  std::unique_ptr<strata::GarbageCollector> gc;
  if (gc_on) {
    strata::GcOptions o;
    o.life_time_millis = flags.life_ms;
    o.interval_millis = flags.interval_ms;
    auto g = strata::GarbageCollector::Open(*services, db->get(), o);
    if (!g.ok()) return fail("open gc", g.status());
    gc = std::move(g).value();
  }
  strata::Table table = *(*engine)->OpenTenant("bank")->OpenTable("accounts");

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> transfers{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < flags.threads; w++) {
    workers.emplace_back([&, w] {
      std::mt19937_64 rng(301 + w);
      std::uniform_int_distribution<int> pick(0, flags.accounts - 1);
      while (!stop.load(std::memory_order_relaxed)) {
        const int a = pick(rng);
        int b = pick(rng);
        if (b == a) b = (a + 1) % flags.accounts;
        auto t = (*db)->Begin();
        if (!t.ok()) continue;
        auto va = (*t)->Get("accounts", Account(a), "bal");
        auto vb = (*t)->Get("accounts", Account(b), "bal");
        if (!va.ok() || !vb.ok()) continue;
        const long x = std::atol(va->c_str()), y = std::atol(vb->c_str());
        if (!(*t)->Set("accounts", Account(a), "bal", std::to_string(x - 1)).ok()) continue;
        if (!(*t)->Set("accounts", Account(b), "bal", std::to_string(y + 1)).ok()) continue;
        if ((*t)->Commit().ok()) transfers.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }

  using Clock = std::chrono::steady_clock;
  // A reader thread: one-Get transactions on random accounts, back to back;
  // each sample takes the latencies of its window.
  std::mutex lat_mu;
  std::vector<double> window;
  std::thread reader([&] {
    std::mt19937_64 rng(7);
    std::uniform_int_distribution<int> pick(0, flags.accounts - 1);
    while (!stop.load(std::memory_order_relaxed)) {
      const auto t0 = Clock::now();
      auto t = (*db)->Begin();
      if (t.ok()) (void)(*t)->Get("accounts", Account(pick(rng)), "bal");
      const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
      std::lock_guard<std::mutex> l(lat_mu);
      window.push_back(us);
    }
  });
  const auto start = Clock::now();
  uint64_t last_transfers = 0;
  auto last_time = start;
  double next = flags.sample_seconds;
  bool ok = true;
  while (ok) {
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (elapsed >= flags.seconds) break;
    if (elapsed < next) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    next += flags.sample_seconds;
    Sample s;
    s.at = elapsed;
    std::vector<double> lat;
    {
      std::lock_guard<std::mutex> l(lat_mu);
      lat.swap(window);
    }
    s.p50_us = Percentile(lat, 0.5);
    s.p99_us = Percentile(lat, 0.99);
    s.reads = lat.size();
    uint64_t records = 0;
    for (int i = 0; i < flags.accounts; i++) {
      strata::RowFilter f;
      f.columns = {{"write", "bal"}};
      auto cells = table.ReadRow(strata::ReadOptions(), Account(i), f);
      if (cells.ok()) records += cells->size();
    }
    s.versions = static_cast<double>(records) / flags.accounts;
    const strata::EngineStats es = (*engine)->GetStats();
    s.table_mb = es.table_bytes / 1048576.0;
    s.memtable_mb = es.memtable_bytes / 1048576.0;
    const uint64_t now_transfers = transfers.load(std::memory_order_relaxed);
    const auto now = Clock::now();
    s.transfers_per_s = (now_transfers - last_transfers) /
                        std::chrono::duration<double>(now - last_time).count();
    last_transfers = now_transfers;
    last_time = now;
    samples->push_back(s);
    std::printf("  gc %-3s %6.1f s  versions/acct %9.1f  table MB %8.2f  memtable MB %7.2f  "
                "get p50 %7.1f us  p99 %8.1f us (%6zu reads)  transfers/s %7.0f\n",
                gc_on ? "on" : "off", s.at, s.versions, s.table_mb, s.memtable_mb, s.p50_us,
                s.p99_us, s.reads, s.transfers_per_s);
    std::fflush(stdout);
  }
  stop.store(true);
  for (std::thread& t : workers) t.join();
  reader.join();
  *throughput = transfers.load() / std::chrono::duration<double>(Clock::now() - start).count();
  if (gc != nullptr) {
    const strata::GcStats g = gc->GetStats();
    std::printf("  gc on: rounds %" PRIu64 ", versions dropped %" PRIu64 ", locks resolved %" PRIu64
                ", lag %" PRIu64 " ms\n",
                g.rounds, g.versions_dropped, g.locks_resolved, g.lag_millis);
    if (strata::Status s = gc->Close(); !s.ok()) ok = fail("close gc", s);
  }
  if (strata::Status s = (*db)->Close(); !s.ok()) ok = fail("close db", s);
  if (strata::Status s = (*engine)->Close(); !s.ok()) ok = fail("close engine", s);
  std::filesystem::remove_all(dir);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  if (!ParseFlags(argc, argv, &flags)) return 2;
  std::printf("gc_bench: seconds=%.0f threads=%d accounts=%d sample_seconds=%.1f life_ms=%" PRIu64
              " interval_ms=%" PRIu64 " sync=%d write_buffer_mb=%" PRIu64 "\n",
              flags.seconds, flags.threads, flags.accounts, flags.sample_seconds, flags.life_ms,
              flags.interval_ms, flags.sync ? 1 : 0, flags.write_buffer_mb);
  std::vector<Sample> off, on;
  double off_tps = 0, on_tps = 0;
  if (flags.mode != "on" && !RunMode(flags, /*gc_on=*/false, &off, &off_tps)) return 1;
  if (flags.mode != "off" && !RunMode(flags, /*gc_on=*/true, &on, &on_tps)) return 1;
  // The first sample against the median of the later ones (a last sample
  // alone is too noisy for latency).
  auto later = [](const std::vector<Sample>& v, double (*field)(const Sample&)) {
    std::vector<double> x;
    for (size_t i = 1; i < v.size(); i++) x.push_back(field(v[i]));
    return Percentile(x, 0.5) / std::max(field(v.front()), 1e-9);
  };
  std::printf("\nmedian of the later samples / the first sample (goal with GC on: <= 1.2):\n");
  for (auto [name, v] : {std::pair<const char*, const std::vector<Sample>*>{"off", &off},
                         {"on", &on}}) {
    if (v->size() < 2) continue;
    std::printf("  gc %-3s versions/acct %.2fx  table MB %.2fx  table+memtable MB %.2fx  "
                "get p50 %.2fx  p99 %.2fx\n",
                name, later(*v, [](const Sample& s) { return s.versions; }),
                later(*v, [](const Sample& s) { return s.table_mb; }),
                later(*v, [](const Sample& s) { return s.table_mb + s.memtable_mb; }),
                later(*v, [](const Sample& s) { return s.p50_us; }),
                later(*v, [](const Sample& s) { return s.p99_us; }));
  }
  if (off_tps > 0) std::printf("transfers/s, gc off: %.0f\n", off_tps);
  if (on_tps > 0) std::printf("transfers/s, gc on:  %.0f\n", on_tps);
  if (off_tps > 0 && on_tps > 0) {
    std::printf("gc on / gc off throughput: %.3f (goal >= 0.95)\n", on_tps / off_tps);
  }
  return 0;
}
