// tenant_bench: the noisy neighbour. Tenant B does one small write and one
// point read per iteration while tenant A floods writes from a background
// thread, against B alone; the question is how much A's flood costs B's
// tail latency, with and without a write rate limit on A.
//
//   b_alone             B's writes and reads, nothing else running
//   b_with_a_flooding   A writes 1 KiB values as fast as it can
//   b_with_a_limited    the same, with A's TenantOptions::write_rate_limit
//                       at 4 MiB/s
//   b_with_4_a_flooding A floods from 4 threads, so that A's writes queue
//                       for the log behind one another and share its groups
//                       with B's
//   b_with_a_flooding_bg_low
//                       A floods from one thread, with the engine's flush and
//                       compaction threads at nice 19 as well as under
//                       SCHED_BATCH (EngineOptions::background_priority kLow)
//   b_with_a_flooding_bg_normal
//                       A floods from one thread, with the engine's flush and
//                       compaction threads scheduled like any other (not
//                       under SCHED_BATCH: background_priority kNormal), so
//                       their wakeups may preempt B
//   b_alone_sync, b_with_a_flooding_sync
//                       the first two with sync on for both tenants: B's
//                       writes wait for an fdatasync, and share it with A's
//   b_with_a_flooding_sync_bg_normal
//                       the same flood with background_priority kNormal (a
//                       flush's log sync may lead a group of B's writes)
//
// Writes are unsynced on both sides except in the *_sync cases (the
// contention measured is memtables, flushes, compactions and the log's group
// commit, not fdatasync). Memtables are small (2 MiB, 16 MiB engine-wide,
// 8 MiB per tenant) so flushes, early flushes and compactions happen within
// short runs. B's table holds 20,000 rows, flushed, before each run.
//
// Counters: b_write_p99_us, b_read_p99_us (microseconds); *_vs_alone, the
// ratio to b_alone's (b_alone_sync's) figure from the same run (the goal is
// <= 2); a_bytes/s, what A wrote meanwhile; a_rate_stalls and
// a_share_stalls, A's waits on its rate limit and on its memtable share;
// engine_stalls, writes of either tenant held by write backpressure (level-0
// slowdowns and stops, and max_immutable_memtables stops).
//
//   build/bench/tenant_bench [--benchmark_min_time=0.1]
//
// The database directory is under $STRATA_BENCH_DIR, or the system temp dir.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/histogram.h"
#include "common/random.h"
#include "strata/engine.h"

namespace {

constexpr int kBRows = 20000;
constexpr size_t kBValueSize = 100;
constexpr size_t kAValueSize = 1024;
constexpr uint64_t kALimit = 4 << 20;

enum class Neighbour { kNone, kFlooding, kLimited };

struct Case {
  Neighbour neighbour = Neighbour::kNone;
  int a_threads = 1;  // flooding threads of tenant A
  bool sync = false;  // WriteOptions::sync of both tenants
  strata::BackgroundPriority background = strata::BackgroundPriority::kBatch;
};

std::string BenchDir() {
  const char* base = std::getenv("STRATA_BENCH_DIR");
  std::filesystem::path p = base ? base : std::filesystem::temp_directory_path();
  p /= "strata-bench-tenant-" + std::to_string(::getpid());
  std::filesystem::remove_all(p);
  return p.string();
}

std::string RowKey(const char* prefix, uint64_t i) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%s%012llu", prefix, static_cast<unsigned long long>(i));
  return buf;
}

strata::TableSchema Schema() {
  strata::TableSchema s;
  s.families.push_back({.name = "f"});
  return s;
}

// B's p99s of the b_alone runs (index: sync), for the ratios of the later runs.
double g_alone_write_p99[2] = {0, 0};
double g_alone_read_p99[2] = {0, 0};

void BM_NoisyNeighbour(benchmark::State& state, Case c) {
  const Neighbour neighbour = c.neighbour;
  const std::string dir = BenchDir();
  strata::EngineOptions options;
  options.write_buffer_size = 2 << 20;
  options.total_write_buffer_size = 16 << 20;
  options.background_priority = c.background;
  auto opened = strata::Engine::Open(dir, options);
  if (!opened.ok()) {
    state.SkipWithError(opened.status().ToString().c_str());
    return;
  }
  std::unique_ptr<strata::Engine> engine = std::move(opened.value());
  strata::TenantOptions a_options;
  if (neighbour == Neighbour::kLimited) a_options.write_rate_limit = kALimit;
  if (!engine->CreateTenant("a", a_options).ok() || !engine->CreateTenant("b").ok() ||
      !engine->OpenTenant("a")->CreateTable("t", Schema()).ok() ||
      !engine->OpenTenant("b")->CreateTable("t", Schema()).ok()) {
    state.SkipWithError("cannot create the tenants");
    return;
  }
  strata::Tenant a = *engine->OpenTenant("a");
  strata::Table at = *a.OpenTable("t");
  strata::Table bt = *engine->OpenTenant("b")->OpenTable("t");
  strata::WriteOptions load;  // the untimed load of B's table
  load.sync = false;
  strata::WriteOptions wo;
  wo.sync = c.sync;
  const std::string b_value(kBValueSize, 'b');
  for (int i = 0; i < kBRows; i++) {
    strata::RowMutation m;
    m.Put("f", "q", 1, b_value);
    if (!bt.Mutate(load, RowKey("b", i), m).ok()) {
      state.SkipWithError("cannot load tenant b");
      return;
    }
  }
  if (!engine->Flush().ok()) {
    state.SkipWithError("flush failed");
    return;
  }

  std::atomic<bool> stop{false};
  std::vector<std::thread> flooders;
  if (neighbour != Neighbour::kNone) {
    for (int t = 0; t < c.a_threads; t++) {
      flooders.emplace_back([&, t] {
        const std::string value(kAValueSize, 'a');
        strata::RowMutation m;
        m.Put("f", "q", 1, value);
        const std::string prefix = t == 0 ? "a" : "a" + std::to_string(t) + "-";
        for (uint64_t i = 0; !stop.load(std::memory_order_relaxed); i++) {
          if (!at.Mutate(wo, RowKey(prefix.c_str(), i), m).ok()) break;
        }
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let the flood build
  }

  // After the warm-up, which also spends A's burst allowance.
  const strata::TenantStats a_start = *a.GetStats();
  const strata::EngineStats e_start = engine->GetStats();
  strata::Histogram writes, reads;
  strata::Random rnd(301);
  uint64_t next = kBRows;
  const auto run_start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    strata::RowMutation m;
    m.Put("f", "q", 1, b_value);
    const std::string row = RowKey("b", next++);
    auto t0 = std::chrono::steady_clock::now();
    strata::Status s = bt.Mutate(wo, row, m);
    auto t1 = std::chrono::steady_clock::now();
    auto cells = bt.ReadRow(strata::ReadOptions(), RowKey("b", rnd.Uniform(kBRows)));
    auto t2 = std::chrono::steady_clock::now();
    if (!s.ok() || !cells.ok() || cells->size() != 1) {
      state.SkipWithError(!s.ok() ? s.ToString().c_str() : "tenant b's read failed");
      break;
    }
    writes.Add(std::chrono::duration<double, std::micro>(t1 - t0).count());
    reads.Add(std::chrono::duration<double, std::micro>(t2 - t1).count());
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
  const strata::EngineStats e_end = engine->GetStats();
  stop.store(true);
  for (auto& t : flooders) t.join();

  const strata::TenantStats a_end = *a.GetStats();
  const double write_p99 = writes.Percentile(99);
  const double read_p99 = reads.Percentile(99);
  state.counters["b_write_p99_us"] = write_p99;
  state.counters["b_read_p99_us"] = read_p99;
  if (neighbour == Neighbour::kNone) {
    g_alone_write_p99[c.sync] = write_p99;
    g_alone_read_p99[c.sync] = read_p99;
  } else if (g_alone_write_p99[c.sync] > 0 && g_alone_read_p99[c.sync] > 0) {
    state.counters["write_vs_alone"] = write_p99 / g_alone_write_p99[c.sync];
    state.counters["read_vs_alone"] = read_p99 / g_alone_read_p99[c.sync];
  }
  state.counters["engine_stalls"] =
      static_cast<double>((e_end.write_slowdowns + e_end.write_stops + e_end.memtable_stops) -
                          (e_start.write_slowdowns + e_start.write_stops + e_start.memtable_stops));
  state.counters["a_bytes/s"] =
      static_cast<double>(a_end.bytes_written - a_start.bytes_written) / seconds;
  state.counters["a_rate_stalls"] =
      static_cast<double>(a_end.rate_limit_stalls - a_start.rate_limit_stalls);
  state.counters["a_share_stalls"] =
      static_cast<double>(a_end.memtable_stalls - a_start.memtable_stalls);
  state.SetItemsProcessed(state.iterations());

  at = strata::Table();
  bt = strata::Table();
  (void)engine->Close();
  engine.reset();
  std::filesystem::remove_all(dir);
}

}  // namespace

// b_alone (b_alone_sync) first: the others report their ratio to it.
BENCHMARK_CAPTURE(BM_NoisyNeighbour, b_alone, Case{Neighbour::kNone})->UseRealTime();
BENCHMARK_CAPTURE(BM_NoisyNeighbour, b_with_a_flooding, Case{Neighbour::kFlooding})->UseRealTime();
BENCHMARK_CAPTURE(BM_NoisyNeighbour, b_with_a_limited, Case{Neighbour::kLimited})->UseRealTime();
BENCHMARK_CAPTURE(BM_NoisyNeighbour, b_with_4_a_flooding, Case{Neighbour::kFlooding, 4})
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_NoisyNeighbour, b_with_a_flooding_bg_low,
                  Case{Neighbour::kFlooding, 1, false, strata::BackgroundPriority::kLow})
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_NoisyNeighbour, b_with_a_flooding_bg_normal,
                  Case{Neighbour::kFlooding, 1, false, strata::BackgroundPriority::kNormal})
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_NoisyNeighbour, b_alone_sync, Case{Neighbour::kNone, 1, true})->UseRealTime();
BENCHMARK_CAPTURE(BM_NoisyNeighbour, b_with_a_flooding_sync, Case{Neighbour::kFlooding, 1, true})
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_NoisyNeighbour, b_with_a_flooding_sync_bg_normal,
                  Case{Neighbour::kFlooding, 1, true, strata::BackgroundPriority::kNormal})
    ->UseRealTime();

BENCHMARK_MAIN();
