// prefetch_bench: read sessions with and without prefetching. 10,000 rows
// of 20 columns of 100-byte values, compacted into SSTables; a reader session
// reads 8 of the columns, one Get at a time, from a random row, as a
// transaction reading several columns of a row would. The table's predictor
// is trained with such sessions before anything is measured.
//
//   BM_Session/prefetch:{0,1}  one whole session (8 Gets) per iteration.
//       lookups/session   storage lookups (ReadRow passes) per session
//       hits/session      Gets answered from the session's cache
//   BM_FirstGet/columns:{1,8}/warm_cache:{1,0}  the time of the first Get of
//       a session only (manual time): columns:1 has prediction off and reads
//       one column; columns:8 reads the asked column and the 7 predicted ones
//       in the same pass. The rest of the session runs untimed.
//       columns/lookup    columns that first lookup fetched
//   BM_ReadRow/columns:{1,8}/warm_cache:{1,0}  Table::ReadRow of as many
//       columns, without a session: the engine's share of the above.
// warm_cache:1 has every block in the block cache, so a read is CPU work
// only; warm_cache:0 has a block cache of about 1% of the data, so a read
// nearly always fetches its block from the file (the page cache), the case
// Percolator describes. A summary follows: the lookup reduction (the paper
// reports about 10x) and the latency of the 8-column read over the 1-column
// one.
//
//   build/bench/prefetch_bench [--benchmark_min_time=1] [google benchmark flags]
//
// The database directories are under $STRATA_BENCH_DIR, or the system temp dir.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/random.h"
#include "strata/engine.h"
#include "strata/read_session.h"

namespace strata {
namespace {

constexpr int kRows = 10000;
constexpr int kColumns = 20;
constexpr size_t kValueSize = 100;
// The columns a reader reads, in this order.
const std::vector<int> kRead = {1, 3, 4, 7, 10, 12, 15, 18};
constexpr int kTrainingSessions = 500;

std::string RowKey(uint64_t i) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "row%08llu", static_cast<unsigned long long>(i));
  return buf;
}

std::string Qualifier(int i) { return "col" + std::to_string(i); }

class Fixture {
 public:
  // Built on first use and kept for the whole run. With `warm_cache` the
  // block cache holds every block; without, it holds about 1% of them, so a
  // read nearly always fetches its block from the file (the page cache).
  static Fixture& Get(bool warm_cache) {
    if (warm_cache) {
      static Fixture warm(true);
      return warm;
    }
    static Fixture cold(false);
    return cold;
  }

  const Status& status() const { return status_; }
  Table& table() { return table_; }

  ~Fixture() {
    table_ = Table();
    if (engine_) engine_->Close().PermitUncheckedError();  // best-effort teardown
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

 private:
  explicit Fixture(bool warm_cache) { status_ = Build(warm_cache); }

  Status Build(bool warm_cache) {
    const char* base = std::getenv("STRATA_BENCH_DIR");
    std::filesystem::path p = base ? base : std::filesystem::temp_directory_path();
    p /= std::string("strata-bench-prefetch-") + (warm_cache ? "warm-" : "cold-") +
         std::to_string(::getpid());
    dir_ = p.string();
    std::filesystem::remove_all(dir_);
    EngineOptions options;
    if (!warm_cache) options.block_cache_size = 256 << 10;
    Result<std::unique_ptr<Engine>> e = Engine::Open(dir_, options);
    if (!e.ok()) return e.status();
    engine_ = std::move(e.value());
    TableSchema schema;
    schema.families.push_back({.name = "f"});
    STRATA_RETURN_IF_ERROR(engine_->CreateTenant("bench"));
    Result<Tenant> tenant = engine_->OpenTenant("bench");
    if (!tenant.ok()) return tenant.status();
    STRATA_RETURN_IF_ERROR(tenant->CreateTable("t", schema));
    Result<Table> table = tenant->OpenTable("t");
    if (!table.ok()) return table.status();
    table_ = *table;

    WriteOptions wo;
    wo.sync = false;
    Random rnd(301);
    for (int r = 0; r < kRows; r++) {
      RowMutation m;
      for (int c = 0; c < kColumns; c++) m.Put("f", Qualifier(c), 1, rnd.RandomLetters(kValueSize));
      STRATA_RETURN_IF_ERROR(table_.Mutate(wo, RowKey(r), m));
    }
    STRATA_RETURN_IF_ERROR(engine_->Compact());
    // Warm the block cache (or the page cache) and train the predictor.
    for (int r = 0; r < kRows; r++) {
      STRATA_RETURN_IF_ERROR(table_.ReadRow(ReadOptions(), RowKey(r)).status());
    }
    for (int s = 0; s < kTrainingSessions; s++) {
      Result<std::unique_ptr<ReadSession>> session = table_.NewReadSession();
      if (!session.ok()) return session.status();
      const std::string row = RowKey(rnd.Uniform(kRows));
      for (int c : kRead) STRATA_RETURN_IF_ERROR((*session)->Get(row, "f", Qualifier(c)).status());
    }
    return Status::OK();
  }

  std::string dir_;
  std::unique_ptr<Engine> engine_;
  Table table_;
  Status status_;
};

// Figures of the last run of each benchmark, for the summary.
std::map<std::string, double>& Figures() {
  static std::map<std::string, double> figures;
  return figures;
}

std::string CacheName(bool warm_cache) { return warm_cache ? "warm" : "small"; }

// One whole session per iteration: 8 Gets of one random row.
void BM_Session(benchmark::State& state) {
  Fixture& f = Fixture::Get(/*warm_cache=*/true);
  if (!f.status().ok()) {
    state.SkipWithError(f.status().ToString().c_str());
    return;
  }
  ReadSessionOptions o;
  o.prefetch = state.range(0) != 0;
  Random rnd(7);
  ReadStats total;
  for (auto _ : state) {
    Result<std::unique_ptr<ReadSession>> session = f.table().NewReadSession(o);
    if (!session.ok()) {
      state.SkipWithError(session.status().ToString().c_str());
      break;
    }
    const std::string row = RowKey(rnd.Uniform(kRows));
    for (int c : kRead) {
      Result<std::vector<Cell>> cells = (*session)->Get(row, "f", Qualifier(c));
      if (!cells.ok() || cells->size() != 1) {
        state.SkipWithError(cells.ok() ? "missing cell" : cells.status().ToString().c_str());
        break;
      }
      benchmark::DoNotOptimize(cells->front().value.data());
    }
    const ReadStats st = (*session)->stats();
    total.lookups += st.lookups;
    total.cache_hits += st.cache_hits;
  }
  state.counters["lookups/session"] =
      benchmark::Counter(static_cast<double>(total.lookups), benchmark::Counter::kAvgIterations);
  state.counters["hits/session"] =
      benchmark::Counter(static_cast<double>(total.cache_hits), benchmark::Counter::kAvgIterations);
  if (state.iterations() > 0) {
    Figures()[o.prefetch ? "lookups_on" : "lookups_off"] =
        static_cast<double>(total.lookups) / static_cast<double>(state.iterations());
  }
}
BENCHMARK(BM_Session)->ArgName("prefetch")->Arg(0)->Arg(1);

// The first Get of a session, timed alone.
void BM_FirstGet(benchmark::State& state) {
  const bool warm_cache = state.range(1) != 0;
  Fixture& f = Fixture::Get(warm_cache);
  if (!f.status().ok()) {
    state.SkipWithError(f.status().ToString().c_str());
    return;
  }
  ReadSessionOptions o;
  o.prefetch = state.range(0) > 1;
  Random rnd(11);
  uint64_t fetched = 0;
  double seconds = 0;
  for (auto _ : state) {
    Result<std::unique_ptr<ReadSession>> session = f.table().NewReadSession(o);
    if (!session.ok()) {
      state.SkipWithError(session.status().ToString().c_str());
      break;
    }
    const std::string row = RowKey(rnd.Uniform(kRows));
    const auto start = std::chrono::steady_clock::now();
    Result<std::vector<Cell>> first = (*session)->Get(row, "f", Qualifier(kRead[0]));
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    state.SetIterationTime(took.count());
    seconds += took.count();
    if (!first.ok()) {
      state.SkipWithError(first.status().ToString().c_str());
      break;
    }
    fetched += 1 + (*session)->stats().prefetched_columns;
    // The rest of the session, untimed, so the predictor keeps seeing the
    // whole pattern.
    for (size_t i = 1; i < kRead.size(); i++) {
      benchmark::DoNotOptimize((*session)->Get(row, "f", Qualifier(kRead[i])).ok());
    }
  }
  state.counters["columns/lookup"] =
      benchmark::Counter(static_cast<double>(fetched), benchmark::Counter::kAvgIterations);
  if (state.iterations() > 0) {
    Figures()["first_get_" + std::to_string(state.range(0)) + "_" + CacheName(warm_cache)] =
        seconds / static_cast<double>(state.iterations());
  }
}
BENCHMARK(BM_FirstGet)
    ->ArgNames({"columns", "warm_cache"})
    ->Args({1, 1})
    ->Args({8, 1})
    ->Args({1, 0})
    ->Args({8, 0})
    ->UseManualTime();

// Table::ReadRow of 1 or 8 columns, without a session: the engine's share.
void BM_ReadRow(benchmark::State& state) {
  Fixture& f = Fixture::Get(state.range(1) != 0);
  if (!f.status().ok()) {
    state.SkipWithError(f.status().ToString().c_str());
    return;
  }
  RowFilter filter;
  for (int i = 0; i < state.range(0); i++) filter.columns.emplace_back("f", Qualifier(kRead[i]));
  Random rnd(11);
  for (auto _ : state) {
    Result<std::vector<Cell>> cells =
        f.table().ReadRow(ReadOptions(), RowKey(rnd.Uniform(kRows)), filter);
    if (!cells.ok()) {
      state.SkipWithError(cells.status().ToString().c_str());
      break;
    }
    benchmark::DoNotOptimize(cells->data());
  }
}
BENCHMARK(BM_ReadRow)
    ->ArgNames({"columns", "warm_cache"})
    ->Args({1, 1})
    ->Args({8, 1})
    ->Args({1, 0})
    ->Args({8, 0});

void PrintSummary() {
  const auto& fig = Figures();
  auto get = [&](const std::string& name) {
    auto it = fig.find(name);
    return it == fig.end() ? 0.0 : it->second;
  };
  const double off = get("lookups_off"), on = get("lookups_on");
  if (off > 0 && on > 0) {  // both session runs were in the filter
    std::printf(
        "\nlookups per session: %.3f without prediction, %.3f with: %.2fx fewer "
        "(goal >= 5x)\n",
        off, on, off / on);
  }
  for (bool warm : {true, false}) {
    const double one = get("first_get_1_" + CacheName(warm));
    const double eight = get("first_get_8_" + CacheName(warm));
    if (one == 0 && eight == 0) continue;
    std::printf(
        "first Get, %s block cache: %.0f ns for 1 column, %.0f ns for 8: %.2fx "
        "(goal <= 1.3x)\n",
        CacheName(warm).c_str(), one * 1e9, eight * 1e9, one > 0 ? eight / one : 0.0);
  }
}

}  // namespace
}  // namespace strata

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  strata::PrintSummary();
  benchmark::Shutdown();
  return 0;
}
