// MemTable microbenchmarks: insert and lookup throughput with engine-like
// cells (16-byte rows, one family, 8-byte qualifiers, 100-byte values).
//
//   BM_Insert/threads:1           one writer
//   BM_Insert/threads:2           two writers; Adds must be serialized, so
//                                 both take one mutex (the label says so)
//   BM_Lookup/threads:N           Seek to an existing column + read key and
//                                 value, on a full, static memtable
//   BM_InsertWithConcurrentReader one writer (timed) while a background
//                                 thread does lookups; both rates reported
//   BM_InsertWithRowFilter        one writer into memtables with the row
//                                 filter the engine gives them (1/64 of the
//                                 write buffer); worst_add_us is the slowest
//                                 single Add (replacing a full memtable is
//                                 not in it), such as the one that makes the
//                                 filter
//
// Memtables are replaced when they reach kMemTableBytes, as an engine would
// flush them; the replacement is inside the timed loop (it is cheap) so that
// page faults on fresh arena blocks are counted as inserts pay them.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/cell_key.h"
#include "common/mutex.h"
#include "common/random.h"
#include "memtable/memtable.h"

namespace strata::memtable {
namespace {

constexpr size_t kRowBytes = 16;
constexpr uint16_t kFamily = 1;
constexpr size_t kValueBytes = 100;
constexpr size_t kMemTableBytes = 64 << 20;
// Distinct 8-byte qualifiers per row, as a table with a few columns has.
constexpr int kQualifiers = 8;

const std::string& Value() {
  static const std::string* v = new std::string(Random(42).RandomBytes(kValueBytes));
  return *v;
}

std::string Qualifier(uint64_t i) {
  char q[9];
  std::snprintf(q, sizeof(q), "col%05d", static_cast<int>(i % kQualifiers));
  return std::string(q, 8);
}

// A random 16-byte row.
void RandomRow(Random* rnd, char* row) {
  uint64_t a = rnd->Next64(), b = rnd->Next64();
  std::memcpy(row, &a, 8);
  std::memcpy(row + 8, &b, 8);
}

// Inserts into a memtable that is replaced when full. Not thread-safe:
// callers serialize.
class Filler {
 public:
  Filler() : mem_(std::make_unique<MemTable>()) {
    for (int i = 0; i < kQualifiers; i++) qualifiers_.push_back(Qualifier(i));
  }

  void AddOne(Random* rnd) {
    char row[kRowBytes];
    RandomRow(rnd, row);
    seq_++;
    mem_->Add(seq_, CellType::kPut, Slice(row, kRowBytes), kFamily, qualifiers_[seq_ % kQualifiers],
              /*timestamp=*/seq_, Value());
    if (mem_->ApproximateMemoryUsage() >= kMemTableBytes) mem_ = std::make_unique<MemTable>();
  }

 private:
  std::unique_ptr<MemTable> mem_;
  std::vector<std::string> qualifiers_;
  SequenceNumber seq_ = 0;
};

// Shared by the threads of BM_Insert.
Mutex insert_mu;
Filler* insert_filler GUARDED_BY(insert_mu) = nullptr;

void BM_Insert(benchmark::State& state) {
  if (state.thread_index() == 0) {
    // The other threads wait at the start of the loop until this is done.
    MutexLock l(&insert_mu);
    insert_filler = new Filler();
  }
  Random rnd(1000 + state.thread_index());
  for (auto _ : state) {
    MutexLock l(&insert_mu);
    insert_filler->AddOne(&rnd);
  }
  state.SetItemsProcessed(state.iterations());
  if (state.threads() > 1) state.SetLabel("Adds serialized by one mutex");
  if (state.thread_index() == 0) {
    MutexLock l(&insert_mu);
    delete insert_filler;
    insert_filler = nullptr;
  }
}
// Real time, so that the two-thread figure is the combined throughput per
// wall-clock second (a thread blocked on the mutex uses no CPU time).
BENCHMARK(BM_Insert)->Threads(1)->Threads(2)->UseRealTime();

void BM_InsertWithRowFilter(benchmark::State& state) {
  std::vector<std::string> qualifiers;
  for (int i = 0; i < kQualifiers; i++) qualifiers.push_back(Qualifier(i));
  auto mem = std::make_unique<MemTable>(kMemTableBytes / 64);
  Random rnd(1000);
  SequenceNumber seq = 0;
  double worst_nanos = 0;  // of the Adds alone, not of replacing a full memtable
  for (auto _ : state) {
    char row[kRowBytes];
    RandomRow(&rnd, row);
    seq++;
    const auto start = std::chrono::steady_clock::now();
    mem->Add(seq, CellType::kPut, Slice(row, kRowBytes), kFamily, qualifiers[seq % kQualifiers],
             /*timestamp=*/seq, Value());
    const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
    worst_nanos = std::max(worst_nanos, took.count());
    if (mem->ApproximateMemoryUsage() >= kMemTableBytes) {
      mem = std::make_unique<MemTable>(kMemTableBytes / 64);
    }
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["worst_add_us"] = worst_nanos / 1000;
}
BENCHMARK(BM_InsertWithRowFilter)->UseRealTime();

// A full memtable and the (row, qualifier) of every column in it.
struct Filled {
  MemTable mem;
  std::vector<std::string> columns;  // column prefixes, AppendColumnPrefix
};

const Filled& FilledMemTable() {
  static const Filled* filled = [] {
    auto* f = new Filled;
    Random rnd(7);
    char row[kRowBytes];
    for (SequenceNumber seq = 1; f->mem.ApproximateMemoryUsage() < kMemTableBytes; seq++) {
      RandomRow(&rnd, row);
      std::string qualifier = Qualifier(seq);
      f->mem.Add(seq, CellType::kPut, Slice(row, kRowBytes), kFamily, qualifier, seq, Value());
      std::string column;
      AppendColumnPrefix(&column, Slice(row, kRowBytes), kFamily, qualifier);
      f->columns.push_back(std::move(column));
    }
    return f;
  }();
  return *filled;
}

// One lookup: Seek to the column and read the newest version's key and value.
// Returns false if the column was not found.
bool Lookup(InternalIterator* it, const std::string& column) {
  it->Seek(column);
  if (!it->Valid() || !it->key().starts_with(column)) return false;
  Slice value = it->value();
  benchmark::DoNotOptimize(value.data()[value.size() - 1]);
  return true;
}

void BM_Lookup(benchmark::State& state) {
  const Filled& f = FilledMemTable();  // built once, before any thread times
  auto it = f.mem.NewIterator();
  Random rnd(2000 + state.thread_index());
  int64_t misses = 0;
  for (auto _ : state) {
    if (!Lookup(it.get(), f.columns[rnd.Uniform(f.columns.size())])) misses++;
  }
  if (misses > 0) state.SkipWithError("a column that was added was not found");
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(std::to_string(f.mem.num_entries()) + " entries");
}
BENCHMARK(BM_Lookup)->Threads(1)->Threads(2)->UseRealTime();

// One writer (the timed thread) and one reader thread doing lookups of
// columns the writer has added, on the same memtable.
void BM_InsertWithConcurrentReader(benchmark::State& state) {
  // The writer publishes the rows it added through a fixed array and a count.
  constexpr size_t kMaxEntries = kMemTableBytes / (kRowBytes + kValueBytes);
  struct Shared {
    std::unique_ptr<MemTable> mem = std::make_unique<MemTable>();
    std::vector<std::array<char, kRowBytes>> rows =
        std::vector<std::array<char, kRowBytes>>(kMaxEntries);
    std::atomic<size_t> published{0};
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> lookups{0};
  };
  Shared s;
  std::vector<std::string> qualifiers;
  for (int i = 0; i < kQualifiers; i++) qualifiers.push_back(Qualifier(i));

  // The memtable is never replaced while a reader runs: when it is full the
  // writer stops the reader, swaps, and starts a new one.
  auto start_reader = [&s, &qualifiers] {
    s.stop.store(false);
    return std::thread([&s, &qualifiers] {
      auto it = s.mem->NewIterator();
      Random rnd(3000);
      std::string column;
      uint64_t n = 0;
      while (!s.stop.load()) {
        // Acquire, paired with the writer's release: rows[0..published) are
        // written and their cells added.
        const size_t published = s.published.load(std::memory_order_acquire);
        if (published == 0) continue;
        const size_t i = rnd.Uniform(published);
        column.clear();
        AppendColumnPrefix(&column, Slice(s.rows[i].data(), kRowBytes), kFamily,
                           qualifiers[(i + 1) % kQualifiers]);
        if (!Lookup(it.get(), column)) std::abort();  // an added column must be found
        n++;
      }
      s.lookups.fetch_add(n);
    });
  };
  std::thread reader = start_reader();
  Random rnd(1);
  SequenceNumber seq = 0;
  for (auto _ : state) {
    // Relaxed: only this thread stores `published`.
    const size_t n = s.published.load(std::memory_order_relaxed);
    char* row = s.rows[n].data();
    RandomRow(&rnd, row);
    seq++;
    // Entry n has qualifier (n + 1) % kQualifiers, which the reader recomputes.
    s.mem->Add(seq, CellType::kPut, Slice(row, kRowBytes), kFamily,
               qualifiers[(n + 1) % kQualifiers], seq, Value());
    // Release: publishes the row and the cell to the reader.
    s.published.store(n + 1, std::memory_order_release);
    if (s.mem->ApproximateMemoryUsage() >= kMemTableBytes || n + 1 == kMaxEntries) {
      s.stop.store(true);
      reader.join();
      s.mem = std::make_unique<MemTable>();
      s.published.store(0);
      reader = start_reader();
    }
  }
  s.stop.store(true);
  reader.join();
  state.SetItemsProcessed(state.iterations());
  state.counters["inserts"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["lookups"] =
      benchmark::Counter(static_cast<double>(s.lookups.load()), benchmark::Counter::kIsRate);
  state.SetLabel("items = inserts by the writer; the reader's rate is 'lookups'");
}
BENCHMARK(BM_InsertWithConcurrentReader)->UseRealTime();

}  // namespace
}  // namespace strata::memtable

BENCHMARK_MAIN();
