// Timestamp oracle throughput: GetTimestamp() and GetTimestamps(16) with 1, 2,
// 8 and 32 threads, against a bare std::atomic<uint64_t>::fetch_add (of 1 and
// of 16) as the limit, in the same run; plus GetTimestamp() with a 10 ms
// window, where a ceiling write (fdatasync) happens every 5 ms.
//
// Counters:
//   items_per_second  timestamps per second, all threads together
//   vs_fetch_add      that rate divided by the rate of the fetch_add limit
//                     with the same threads and batch
//   fsyncs_per_s      ceiling writes (one fdatasync each) per second
// A summary table follows the benchmark output.
//
//   oracle_bench [--benchmark_min_time=1] [google benchmark flags]
//
// Each oracle lives in a fresh directory under $TMPDIR (or /tmp), with the
// real clock and file system.
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "txn/local_timestamp_oracle.h"

namespace strata::txn {
namespace {

class OracleFixture {
 public:
  // One oracle per window, opened on first use and kept for the whole run.
  static OracleFixture& Get(uint64_t window_millis) {
    static std::mutex mu;
    static std::map<uint64_t, std::unique_ptr<OracleFixture>> fixtures;
    std::lock_guard<std::mutex> lock(mu);
    std::unique_ptr<OracleFixture>& f = fixtures[window_millis];
    if (f == nullptr) f.reset(new OracleFixture(window_millis));
    return *f;
  }
  LocalTimestampOracle* oracle() { return oracle_.get(); }
  const Status& status() const { return status_; }

  ~OracleFixture() {
    oracle_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

 private:
  explicit OracleFixture(uint64_t window_millis) {
    const char* tmp = getenv("TMPDIR");
    std::string pattern = std::string(tmp != nullptr ? tmp : "/tmp") + "/strata-oracle-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      status_ = Status::IOError("mkdtemp " + pattern);
      return;
    }
    dir_ = pattern;
    LocalTimestampOracleOptions options;
    options.window_millis = window_millis;
    status_ = LocalTimestampOracle::Open(dir_, options, &oracle_);
  }

  std::string dir_;
  Status status_;
  std::unique_ptr<LocalTimestampOracle> oracle_;
};

// The limit: what one shared counter delivers. Aligned so that nothing else
// shares its cache line.
alignas(64) std::atomic<uint64_t> g_counter{0};

void BM_FetchAddLimit(benchmark::State& state) {
  const uint64_t batch = static_cast<uint64_t>(state.range(0));
  for (auto _ : state) {
    benchmark::DoNotOptimize(g_counter.fetch_add(batch));
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(batch));
}

// range(0): batch size; range(1): window in milliseconds.
void BM_Oracle(benchmark::State& state) {
  const uint32_t batch = static_cast<uint32_t>(state.range(0));
  OracleFixture& fixture = OracleFixture::Get(static_cast<uint64_t>(state.range(1)));
  if (!fixture.status().ok()) {
    state.SkipWithError(fixture.status().ToString().c_str());
    return;
  }
  LocalTimestampOracle* oracle = fixture.oracle();
  uint64_t writes_before = 0;
  if (state.thread_index() == 0) writes_before = oracle->GetStats().ceiling_writes;
  uint64_t prev = 0;
  bool ordered = true;
  for (auto _ : state) {
    uint64_t ts = 0;
    Status s;
    if (batch == 1) {
      Result<uint64_t> r = oracle->GetTimestamp();
      if (r.ok()) {
        ts = *r;
      } else {
        s = r.status();
      }
    } else {
      s = oracle->GetTimestamps(batch, &ts);
    }
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      break;
    }
    ordered &= ts > prev;
    prev = ts;
  }
  if (!ordered) state.SkipWithError("timestamps went backwards in a thread");
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(batch));
  if (state.thread_index() == 0) {
    const uint64_t writes = oracle->GetStats().ceiling_writes - writes_before;
    state.counters["fsyncs_per_s"] =
        benchmark::Counter(static_cast<double>(writes), benchmark::Counter::kIsRate);
  }
}

void Threads(benchmark::internal::Benchmark* b) {
  for (int threads : {1, 2, 8, 32}) b->Threads(threads);
}

BENCHMARK(BM_FetchAddLimit)->ArgName("batch")->Arg(1)->Arg(16)->UseRealTime()->Apply(Threads);
// The default window (3000 ms): a ceiling write every 1.5 s.
BENCHMARK(BM_Oracle)
    ->ArgNames({"batch", "window_ms"})
    ->Args({1, 3000})
    ->Args({16, 3000})
    ->UseRealTime()
    ->Apply(Threads);
// A 10 ms window: a ceiling write (fdatasync) every 5 ms, to show what the
// refills cost the callers that do not make them.
BENCHMARK(BM_Oracle)
    ->ArgNames({"batch", "window_ms"})
    ->Args({1, 10})
    ->UseRealTime()
    ->Threads(1)
    ->Threads(8);

// Adds vs_fetch_add to each oracle run, from the limit run with the same
// batch and threads (which runs earlier), and keeps the figures for the
// summary.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  struct Row {
    double limit = 0, oracle = 0, ratio = 0, fsyncs = 0;
  };

  void ReportRuns(const std::vector<Run>& runs) override {
    std::vector<Run> out = runs;
    for (Run& run : out) {
      if (run.error_occurred || run.run_type != Run::RT_Iteration) continue;
      const std::string name = run.run_name.str();
      const auto rate = run.counters.find("items_per_second");
      if (rate == run.counters.end()) continue;
      const int threads = static_cast<int>(run.threads);
      // "batch:16" or "batch:16/window_ms:3000": the limit is keyed by batch.
      const std::string args = run.run_name.args;
      const std::string batch = args.substr(0, args.find('/'));
      if (name.rfind("BM_FetchAddLimit", 0) == 0) {
        limits_[{batch, threads}] = rate->second.value;
      } else if (name.rfind("BM_Oracle", 0) == 0) {
        Row& row = rows_[{args, threads}];
        row.oracle = rate->second.value;
        row.limit = limits_[{batch, threads}];
        if (row.limit > 0) {
          row.ratio = row.oracle / row.limit;
          run.counters["vs_fetch_add"] = benchmark::Counter(row.ratio);
        }
        const auto fsyncs = run.counters.find("fsyncs_per_s");
        if (fsyncs != run.counters.end()) row.fsyncs = fsyncs->second.value;
      }
    }
    ConsoleReporter::ReportRuns(out);
  }

  void PrintSummary() const {
    std::printf("\n%-24s %7s %16s %16s %8s %11s\n", "args", "threads", "fetch_add/s", "oracle ts/s",
                "ratio", "fsyncs/s");
    for (const auto& [key, row] : rows_) {
      std::printf("%-24s %7d %16.0f %16.0f %8.3f %11.2f\n", key.args.c_str(), key.threads,
                  row.limit, row.oracle, row.ratio, row.fsyncs);
    }
  }

 private:
  struct Key {
    std::string args;
    int threads;
    bool operator<(const Key& o) const {
      return args != o.args ? args < o.args : threads < o.threads;
    }
  };
  std::map<Key, Row> rows_;
  std::map<Key, double> limits_;
};

}  // namespace
}  // namespace strata::txn

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  strata::txn::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.PrintSummary();
  benchmark::Shutdown();
  return 0;
}
