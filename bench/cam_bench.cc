// cam_bench: Table::CheckAndMutate and CheckAndMutateBatch through the whole
// engine — validate, lock the rows, read the conditions' columns, log with
// group commit, apply — with 1 to 16 threads, sync on and off.
//
// Each row operation is shaped like a Percolator prewrite: two conditions
// (no cell of the in-memory "lock" column at any timestamp, no cell of the
// "write" column at or above start_ts) and two 100-byte puts (lock and data).
//   cam           one CheckAndMutate per operation, each thread on its own new
//   rows cam_batch16   one CheckAndMutateBatch of 16 new rows per operation
//   cam_hotrow    every thread on one row: a condition on a column nobody
//                 writes (so each applies, and the read stays small while the
//                 row's versions pile up in another locality group) and one
//                 put: how the row's lock serializes its writers
//   mutate        Table::Mutate of the same two puts, no conditions, for scale
//
// Counters: items_per_second = rows applied/s (16 per cam_batch16 operation);
// fsyncs/s; rows/fsync.
//
//   build/bench/cam_bench [--benchmark_filter=...] [--benchmark_min_time=2]
//
// The database directory is under $STRATA_BENCH_DIR, or the system temp dir.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "strata/engine.h"

namespace {

constexpr size_t kValueSize = 100;
constexpr int kBatchRows = 16;

enum class Workload { kCam, kCamBatch, kCamHotRow, kMutate };

std::string BenchDir() {
  const char *base = std::getenv("STRATA_BENCH_DIR");
  std::filesystem::path p =
      base ? base : std::filesystem::temp_directory_path();
  p /= "strata-bench-cam-" + std::to_string(::getpid());
  std::filesystem::remove_all(p);
  return p.string();
}

// 16 bytes: "t" + 2-digit thread + 13-digit counter.
std::string RowKey(int thread, uint64_t i) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "t%02d%013llu", thread,
                static_cast<unsigned long long>(i));
  return std::string(buf, 16);
}

struct BenchState {
  std::string dir;
  std::unique_ptr<strata::Engine> engine;
  strata::Table table;
  strata::EngineStats start;
  std::atomic<uint64_t> next_timestamp{1};
};
BenchState g;

void Setup(benchmark::State &state) {
  g.dir = BenchDir();
  auto e = strata::Engine::Open(g.dir);
  if (!e.ok()) {
    state.SkipWithError(e.status().ToString().c_str());
    return;
  }
  g.engine = std::move(e.value());
  strata::TableSchema schema;
  schema.locality_groups.push_back({.name = "locks", .in_memory = true});
  schema.families.push_back({.name = "lock", .locality_group = "locks"});
  schema.families.push_back({.name = "write"});
  schema.families.push_back({.name = "data"});
  if (!g.engine->CreateTenant("bench").ok() ||
      !g.engine->OpenTenant("bench")->CreateTable("t", schema).ok()) {
    state.SkipWithError("cannot create the table");
    return;
  }
  g.table = *g.engine->OpenTenant("bench")->OpenTable("t");
  g.next_timestamp = 1;
  g.start = g.engine->GetStats();
}

void Teardown(benchmark::State &state) {
  if (!g.engine)
    return;
  strata::EngineStats end = g.engine->GetStats();
  const double syncs = static_cast<double>(end.wal_syncs - g.start.wal_syncs);
  const double writes = static_cast<double>(end.writes - g.start.writes);
  state.counters["fsyncs/s"] =
      benchmark::Counter(syncs, benchmark::Counter::kIsRate);
  state.counters["rows/fsync"] = syncs > 0 ? writes / syncs : 0;
  g.table = strata::Table();
  (void)g.engine->Close();
  g.engine.reset();
  std::filesystem::remove_all(g.dir);
}

// A prewrite of `row` at start_ts `ts`.
void Prewrite(uint64_t ts, const std::string &value,
              std::vector<strata::Condition> *conditions,
              strata::RowMutation *mutation) {
  conditions->clear();
  conditions->push_back(strata::Condition::NoCellInRange(
      "lock", "c", strata::kMinTimestamp, strata::kMaxTimestamp));
  conditions->push_back(strata::Condition::NoCellInRange(
      "write", "c", ts, strata::kMaxTimestamp));
  mutation->Clear();
  mutation->Put("lock", "c", ts, value).Put("data", "c", ts, value);
}

void BM_Cam(benchmark::State &state, Workload workload, bool sync) {
  if (state.thread_index() == 0)
    Setup(state);
  const std::string value(kValueSize, 'v');
  strata::WriteOptions wo;
  wo.sync = sync;
  const int thread = state.thread_index();
  uint64_t i = 0;
  int64_t rows = 0;
  std::vector<strata::Condition> conditions;
  strata::RowMutation mutation;
  std::vector<strata::ConditionalMutation> batch(kBatchRows);
  for (auto _ : state) {
    const uint64_t ts =
        g.next_timestamp.fetch_add(1, std::memory_order_relaxed);
    strata::Status s;
    switch (workload) {
    case Workload::kCam:
    case Workload::kCamHotRow: {
      Prewrite(ts, value, &conditions, &mutation);
      std::string row;
      if (workload == Workload::kCam) {
        row = RowKey(thread, i++);
      } else {
        row = "hot-row";
        conditions.pop_back(); // keep only the lock condition
        mutation.Clear();
        mutation.Put("data", "c", ts, value);
      }
      auto r = g.table.CheckAndMutate(wo, row, conditions, mutation);
      s = r.status();
      if (s.ok() && !r->applied)
        s = strata::Status::Aborted("a condition failed");
      rows++;
      break;
    }
    case Workload::kCamBatch: {
      for (auto &m : batch) {
        m.row = RowKey(thread, i++);
        Prewrite(ts, value, &m.conditions, &m.mutation);
      }
      auto r = g.table.CheckAndMutateBatch(wo, batch);
      s = r.status();
      for (size_t k = 0; s.ok() && k < r->size(); k++) {
        if (!(*r)[k].applied)
          s = strata::Status::Aborted("a condition failed");
      }
      rows += kBatchRows;
      break;
    }
    case Workload::kMutate:
      Prewrite(ts, value, &conditions, &mutation);
      s = g.table.Mutate(wo, RowKey(thread, i++), mutation);
      rows++;
      break;
    }
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      break;
    }
  }
  state.SetItemsProcessed(rows);
  if (state.thread_index() == 0)
    Teardown(state);
}

} // namespace

// Registered thread count by thread count, so the variants at one count run
// back to back and see the same machine weather.
int main(int argc, char **argv) {
  struct Variant {
    const char *name;
    Workload workload;
  };
  const Variant variants[] = {{"cam", Workload::kCam},
                              {"cam_batch16", Workload::kCamBatch},
                              {"cam_hotrow", Workload::kCamHotRow},
                              {"mutate", Workload::kMutate}};
  for (int threads : {1, 2, 4, 8, 16}) {
    for (bool sync : {false, true}) {
      for (const Variant &v : variants) {
        const std::string name =
            std::string(v.name) + (sync ? "/sync" : "/nosync");
        const Workload w = v.workload;
        benchmark::RegisterBenchmark(
            name.c_str(),
            [w, sync](benchmark::State &s) { BM_Cam(s, w, sync); })
            ->Threads(threads)
            ->UseRealTime();
      }
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv))
    return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
