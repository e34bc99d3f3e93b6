// write_bench: durable (sync) row writes through the whole engine write path
// — validate, log with group commit, fdatasync, apply to the memtable — with
// 1 to 64 threads, 16-byte row keys and 100-byte values; the log written
// through io_uring and through the pwritev+fdatasync fallback; and, in the
// same run, RocksDB Put with WriteOptions::sync on the same threads and sizes.
//
// Counters: items_per_second = acknowledged writes/s; fsyncs/s; writes per
// fsync (how many commits each fdatasync covered).
//
//   build/bench/write_bench [--benchmark_filter=...] [--benchmark_min_time=2]
//
// The database directory is under $STRATA_BENCH_DIR, or the system temp dir.
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "strata/engine.h"

#ifdef STRATA_HAVE_ROCKSDB
#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/statistics.h>
#endif

namespace {

constexpr size_t kValueSize = 100;

std::string BenchDir(const std::string& name) {
  const char* base = std::getenv("STRATA_BENCH_DIR");
  std::filesystem::path p = base ? base : std::filesystem::temp_directory_path();
  p /= "strata-bench-" + name + "-" + std::to_string(::getpid());
  std::filesystem::remove_all(p);
  return p.string();
}

// 16 bytes: "t" + 2-digit thread + 13-digit counter.
void MakeKey(char* buf, int thread, uint64_t i) {
  std::snprintf(buf, 17, "t%02d%013llu", thread, static_cast<unsigned long long>(i));
}

struct StrataState {
  std::string dir;
  std::unique_ptr<strata::Engine> engine;
  strata::Table table;
  strata::EngineStats start;
};
StrataState g_strata;

void BM_StrataSyncWrite(benchmark::State& state, bool use_uring) {
  if (state.thread_index() == 0) {
    g_strata.dir = BenchDir("write");
    strata::EngineOptions o;
    o.use_io_uring = use_uring;
    auto e = strata::Engine::Open(g_strata.dir, o);
    if (!e.ok()) {
      state.SkipWithError(e.status().ToString().c_str());
    } else {
      g_strata.engine = std::move(e.value());
      strata::TableSchema schema;
      schema.families.push_back({.name = "f"});
      if (!g_strata.engine->CreateTenant("bench").ok() ||
          !g_strata.engine->OpenTenant("bench")->CreateTable("t", schema).ok()) {
        state.SkipWithError("cannot create the table");
      }
      g_strata.table = *g_strata.engine->OpenTenant("bench")->OpenTable("t");
      g_strata.start = g_strata.engine->GetStats();
      if (use_uring && !g_strata.start.wal_uses_io_uring) {
        state.SkipWithError("io_uring is not available here");
      }
    }
  }
  const std::string value(kValueSize, 'v');
  strata::WriteOptions wo;
  wo.sync = true;
  char key[17];
  uint64_t i = 0;
  for (auto _ : state) {
    MakeKey(key, state.thread_index(), i++);
    strata::RowMutation m;
    m.Put("f", "q", 1, value);
    strata::Status s = g_strata.table.Mutate(wo, std::string_view(key, 16), m);
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() == 0 && g_strata.engine) {
    strata::EngineStats end = g_strata.engine->GetStats();
    const double syncs = static_cast<double>(end.wal_syncs - g_strata.start.wal_syncs);
    const double writes = static_cast<double>(end.writes - g_strata.start.writes);
    state.counters["fsyncs/s"] = benchmark::Counter(syncs, benchmark::Counter::kIsRate);
    state.counters["writes/fsync"] = syncs > 0 ? writes / syncs : 0;
    g_strata.table = strata::Table();
    (void)g_strata.engine->Close();
    g_strata.engine.reset();
    std::filesystem::remove_all(g_strata.dir);
  }
}

void StrataUring(benchmark::State& state) { BM_StrataSyncWrite(state, true); }
void StrataFallback(benchmark::State& state) { BM_StrataSyncWrite(state, false); }

#ifdef STRATA_HAVE_ROCKSDB
struct RocksState {
  std::string dir;
  std::unique_ptr<rocksdb::DB> db;
  std::shared_ptr<rocksdb::Statistics> stats;
  uint64_t syncs0 = 0;
  uint64_t writes0 = 0;
};
RocksState g_rocks;

void RocksDBSync(benchmark::State& state) {
  if (state.thread_index() == 0) {
    g_rocks.dir = BenchDir("rocks-write");
    rocksdb::Options o;
    o.create_if_missing = true;
    o.statistics = rocksdb::CreateDBStatistics();
    g_rocks.stats = o.statistics;
    rocksdb::DB* db = nullptr;
    rocksdb::Status s = rocksdb::DB::Open(o, g_rocks.dir, &db);
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
    g_rocks.db.reset(db);
    g_rocks.syncs0 = g_rocks.stats->getTickerCount(rocksdb::WAL_FILE_SYNCED);
    g_rocks.writes0 = g_rocks.stats->getTickerCount(rocksdb::WRITE_DONE_BY_SELF) +
                      g_rocks.stats->getTickerCount(rocksdb::WRITE_DONE_BY_OTHER);
  }
  const std::string value(kValueSize, 'v');
  rocksdb::WriteOptions wo;
  wo.sync = true;
  char key[17];
  uint64_t i = 0;
  for (auto _ : state) {
    MakeKey(key, state.thread_index(), i++);
    rocksdb::Status s = g_rocks.db->Put(wo, rocksdb::Slice(key, 16), value);
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() == 0 && g_rocks.db) {
    const double syncs =
        static_cast<double>(g_rocks.stats->getTickerCount(rocksdb::WAL_FILE_SYNCED) - g_rocks.syncs0);
    const double writes = static_cast<double>(
        g_rocks.stats->getTickerCount(rocksdb::WRITE_DONE_BY_SELF) +
        g_rocks.stats->getTickerCount(rocksdb::WRITE_DONE_BY_OTHER) - g_rocks.writes0);
    state.counters["fsyncs/s"] = benchmark::Counter(syncs, benchmark::Counter::kIsRate);
    state.counters["writes/fsync"] = syncs > 0 ? writes / syncs : 0;
    g_rocks.db.reset();
    std::filesystem::remove_all(g_rocks.dir);
  }
}
#endif

}  // namespace

// Registered thread count by thread count, so the three contenders at one
// count run back to back and see the same machine weather.
int main(int argc, char** argv) {
  for (int threads : {1, 4, 16, 64}) {
    benchmark::RegisterBenchmark("strata_uring", StrataUring)->Threads(threads)->UseRealTime();
    benchmark::RegisterBenchmark("strata_fallback", StrataFallback)->Threads(threads)->UseRealTime();
#ifdef STRATA_HAVE_ROCKSDB
    benchmark::RegisterBenchmark("rocksdb", RocksDBSync)->Threads(threads)->UseRealTime();
#endif
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
