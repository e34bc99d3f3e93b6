// Durable write throughput of the write-ahead log: records of 100 bytes
// written with sync=true by 1, 4, 16 and 64 threads, through io_uring and
// through the pwritev + fdatasync fallback, next to RocksDB's Put with
// WriteOptions::sync (16-byte keys, 100-byte values) when RocksDB is
// available.
//
// Counters: writes/s, fsyncs/s and writes/fsync (how many acknowledged
// writes one fdatasync covered on average).
//
//   build/bench/wal_bench --benchmark_min_time=2
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <barrier>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "wal/log_writer.h"

#ifdef STRATA_HAVE_ROCKSDB
#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/statistics.h>
#endif

namespace {

constexpr size_t kValueSize = 100;

std::string MakeTempDir(const char* tag) {
  std::string templ = std::filesystem::temp_directory_path().string() + "/" + tag + "-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) {
    std::perror("mkdtemp");
    std::abort();
  }
  return templ;
}

void SetCounters(benchmark::State& state, uint64_t writes, uint64_t syncs) {
  using benchmark::Counter;
  state.counters["writes/s"] = Counter(static_cast<double>(state.iterations()), Counter::kIsRate);
  // Every thread reports the run's totals; averaging over threads keeps them.
  state.counters["fsyncs/s"] = Counter(static_cast<double>(syncs), Counter::kAvgThreadsRate);
  state.counters["writes/fsync"] =
      Counter(syncs == 0 ? 0.0 : static_cast<double>(writes) / static_cast<double>(syncs),
              Counter::kAvgThreads);
}

// ---- Strata ------------------------------------------------------------------

struct WalRun {
  std::string dir;
  std::unique_ptr<strata::wal::LogWriter> writer;
  std::unique_ptr<std::barrier<>> finished;
};
WalRun* g_wal = nullptr;

void WalSetup(const benchmark::State& state) {
  g_wal = new WalRun;
  g_wal->dir = MakeTempDir("strata-wal-bench");
  strata::wal::LogOptions options;
  options.use_io_uring = state.range(0) != 0;
  strata::Status s = strata::wal::LogWriter::Open(options, g_wal->dir, 1, nullptr, &g_wal->writer);
  if (!s.ok()) {
    std::fprintf(stderr, "LogWriter::Open: %s\n", s.ToString().c_str());
    std::abort();
  }
  g_wal->finished = std::make_unique<std::barrier<>>(state.threads());
}

void WalTeardown(const benchmark::State&) {
  g_wal->writer->Close().PermitUncheckedError();  // the directory goes anyway
  std::filesystem::remove_all(g_wal->dir);
  delete g_wal;
  g_wal = nullptr;
}

void BM_WalSyncedWrite(benchmark::State& state) {
  strata::wal::LogWriter* w = g_wal->writer.get();
  if (state.range(0) != 0 && !w->using_io_uring()) state.SkipWithError("io_uring unavailable");
  const std::string payload(kValueSize, 'v');
  for (auto _ : state) {
    strata::wal::WriteRequest r;
    r.payload = payload;
    r.sync = true;
    strata::Status s = w->Write(&r);
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      break;
    }
  }
  g_wal->finished->arrive_and_wait();
  const strata::wal::LogWriter::Stats st = w->GetStats();
  SetCounters(state, st.records, st.syncs);
  state.SetLabel(w->using_io_uring() ? "io_uring" : "pwritev+fdatasync");
}
BENCHMARK(BM_WalSyncedWrite)
    ->ArgName("io_uring")
    ->Arg(1)
    ->Arg(0)
    ->Threads(1)
    ->Threads(4)
    ->Threads(16)
    ->Threads(64)
    ->UseRealTime()
    ->Setup(WalSetup)
    ->Teardown(WalTeardown);

// ---- RocksDB -----------------------------------------------------------------

#ifdef STRATA_HAVE_ROCKSDB
struct RocksRun {
  std::string dir;
  std::unique_ptr<rocksdb::DB> db;
  std::shared_ptr<rocksdb::Statistics> stats;
  std::unique_ptr<std::barrier<>> finished;
};
RocksRun* g_rocks = nullptr;

void RocksSetup(const benchmark::State& state) {
  g_rocks = new RocksRun;
  g_rocks->dir = MakeTempDir("strata-rocksdb-bench");
  rocksdb::Options options;
  options.create_if_missing = true;
  g_rocks->stats = rocksdb::CreateDBStatistics();
  options.statistics = g_rocks->stats;
  rocksdb::DB* db = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(options, g_rocks->dir, &db);
  if (!s.ok()) {
    std::fprintf(stderr, "rocksdb::DB::Open: %s\n", s.ToString().c_str());
    std::abort();
  }
  g_rocks->db.reset(db);
  g_rocks->finished = std::make_unique<std::barrier<>>(state.threads());
}

void RocksTeardown(const benchmark::State&) {
  g_rocks->db->Close().PermitUncheckedError();  // the directory goes anyway
  g_rocks->db.reset();
  std::filesystem::remove_all(g_rocks->dir);
  delete g_rocks;
  g_rocks = nullptr;
}

void BM_RocksDbSyncedPut(benchmark::State& state) {
  rocksdb::DB* db = g_rocks->db.get();
  rocksdb::WriteOptions wo;
  wo.sync = true;
  const std::string value(kValueSize, 'v');
  char key[17];
  uint64_t i = 0;
  for (auto _ : state) {
    std::snprintf(key, sizeof(key), "%04x%012llx", state.thread_index(),
                  static_cast<unsigned long long>(i++));
    rocksdb::Status s = db->Put(wo, rocksdb::Slice(key, 16), value);
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      break;
    }
  }
  g_rocks->finished->arrive_and_wait();
  const uint64_t puts = g_rocks->stats->getTickerCount(rocksdb::NUMBER_KEYS_WRITTEN);
  const uint64_t syncs = g_rocks->stats->getTickerCount(rocksdb::WAL_FILE_SYNCED);
  SetCounters(state, puts, syncs);
  state.SetLabel("rocksdb");
}
BENCHMARK(BM_RocksDbSyncedPut)
    ->Threads(1)
    ->Threads(4)
    ->Threads(16)
    ->Threads(64)
    ->UseRealTime()
    ->Setup(RocksSetup)
    ->Teardown(RocksTeardown);
#endif  // STRATA_HAVE_ROCKSDB

}  // namespace

BENCHMARK_MAIN();
