// Running the workloads: timed phases of point operations, seeks and scans,
// each read checked, and the EngineDriver and RunCompression of run.h.
#include "run.h"

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string_view>
#include <thread>
#include <utility>

#include "common/random.h"

namespace strata::db_bench {
namespace {

// What one thread's operations counted.
struct OpCounts {
  uint64_t found = 0;
  uint64_t rows = 0;
  uint64_t bytes = 0;
};

// Runs `ops` operations split over the threads; thread t does operations
// [begin, end) of the phase, calling `op(t, j, &scratch, &counts)` for the
// j-th, which returns an error or an empty string. The first error ends the
// program. Times each call and prints progress to stderr every 10%.
template <typename Op>
PhaseResult RunOps(const Flags& f, const std::string& label, uint64_t ops, Op op) {
  std::atomic<uint64_t> done{0};
  std::atomic<bool> failed{false};
  std::vector<strata::Histogram> hists(f.threads);
  std::vector<OpCounts> counts(f.threads);
  std::vector<std::string> errors(f.threads);
  const auto start = Clock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < f.threads; t++) {
    workers.emplace_back([&, t] {
      const uint64_t begin = ops * t / f.threads;
      const uint64_t end = ops * (t + 1) / f.threads;
      std::string scratch;
      uint64_t pending = 0;
      for (uint64_t j = begin; j < end; j++) {
        const auto t0 = Clock::now();
        std::string err = op(t, j, &scratch, &counts[t]);
        const auto t1 = Clock::now();
        hists[t].Add(std::chrono::duration<double, std::micro>(t1 - t0).count());
        if (!err.empty()) {
          errors[t] = std::move(err);
          failed.store(true);
          break;
        }
        if (++pending == 256) {
          // Relaxed: only the progress line reads it, and join orders the rest.
          done.fetch_add(pending, std::memory_order_relaxed);
          pending = 0;
          if (failed.load(std::memory_order_relaxed)) break;
        }
      }
      done.fetch_add(pending, std::memory_order_relaxed);
    });
  }
  std::atomic<bool> finished{false};
  std::thread progress([&] {
    uint64_t next_tenth = 1;
    while (!finished.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      const uint64_t d = done.load(std::memory_order_relaxed);
      if (next_tenth < 10 && d * 10 >= next_tenth * ops) {
        const double secs = std::chrono::duration<double>(Clock::now() - start).count();
        std::fprintf(stderr, "  %-32s %3" PRIu64 "%%  %10" PRIu64 " ops  %7.1f s\n", label.c_str(),
                     d * 100 / ops, d, secs);
        while (next_tenth < 10 && d * 10 >= next_tenth * ops) next_tenth++;
      }
    }
  });
  for (auto& w : workers) w.join();
  PhaseResult r;
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  finished.store(true);
  progress.join();
  for (int t = 0; t < f.threads; t++) {
    if (!errors[t].empty()) {
      std::fprintf(stderr, "db_bench: %s failed: %s\n", label.c_str(), errors[t].c_str());
      std::exit(1);
    }
    r.latency_us.Merge(hists[t]);
    r.found += counts[t].found;
    r.rows += counts[t].rows;
    r.bytes += counts[t].bytes;
  }
  r.ran = true;
  r.ops = ops;
  return r;
}

enum class Op { kWrite, kRead };

// Point writes or reads through RunOps; `key_of(thread, j)` names the key
// index and whether it is a missing key for the j-th operation of `thread`.
template <typename KeyOf>
PhaseResult RunPhase(const Flags& f, const std::string& label, Store* store, Op op, uint64_t ops,
                     const ValueSource& values, KeyOf key_of) {
  return RunOps(f, label, ops, [&](int t, uint64_t j, std::string* key, OpCounts* c) {
    const auto [index, missing] = key_of(t, j);
    MakeKey(f, index, missing, key);
    if (op == Op::kWrite) {
      c->bytes += f.key_size + f.value_size;
      return store->Put(*key, values.Get(j * 7919 + index));
    }
    bool hit = false;
    std::string err = store->Get(*key, f.value_size, &hit);
    if (hit) {
      c->found++;
      c->rows++;
      c->bytes += f.key_size + f.value_size;
    }
    return err;
  });
}

// One seekrandom operation: a new cursor at random existing key `index`, then
// kSeekNexts Next() calls, checking that the rows are the keys from `index`
// on, in order, with values of the right size. With `reused` (seekreuse),
// *reused is sought again instead (made by the first call).
std::string SeekAndNext(const Flags& f, Store* store, uint64_t index, std::string* key, OpCounts* c,
                        std::unique_ptr<Cursor>* reused = nullptr) {
  MakeKey(f, index, false, key);
  std::unique_ptr<Cursor> own;
  std::unique_ptr<Cursor>& cursor = reused != nullptr ? *reused : own;
  std::string err;
  if (reused == nullptr) {
    err = store->NewCursor(Family::kMain, *key, &cursor);
  } else {
    // Over every key (a scan's range bounds its seeks), then sought.
    if (cursor == nullptr) err = store->NewCursor(Family::kMain, std::string_view(), &cursor);
    if (err.empty()) cursor->Seek(*key);
  }
  if (!err.empty()) return err;
  const uint64_t want = std::min<uint64_t>(kSeekNexts + 1, f.num - index);
  uint64_t n = 0;
  while (cursor->Valid()) {
    if (cursor->key() != *key || cursor->value().size() != f.value_size) {
      return "seek to key " + std::to_string(index) + ": row " + std::to_string(n) +
             " after it is key '" + std::string(cursor->key()) + "' with a value of " +
             std::to_string(cursor->value().size()) + " bytes; expected key '" + *key + "' with " +
             std::to_string(f.value_size);
    }
    c->bytes += cursor->key().size() + cursor->value().size();
    if (++n == want) break;
    NextKey(f, key);
    cursor->Next();
  }
  err = cursor->error();
  if (!err.empty()) return err;
  if (n != want) {
    return "seek to key " + std::to_string(index) + " read " + std::to_string(n) +
           " rows; expected " + std::to_string(want);
  }
  c->found++;
  c->rows += n;
  return std::string();
}

// Scans all of `family` from its first row and checks it holds exactly keys
// 0 .. num-1, in order, where `value_ok(i, value)` accepts key i's value
// (called for i = 0, 1, ... in order).
template <typename ValueOk>
std::string ScanAll(const Flags& f, Store* store, Family family, ValueOk value_ok, OpCounts* c) {
  std::unique_ptr<Cursor> cursor;
  std::string err = store->NewCursor(family, std::string_view(), &cursor);
  if (!err.empty()) return err;
  std::string expected;
  MakeKey(f, 0, false, &expected);
  uint64_t i = 0;
  for (; cursor->Valid(); cursor->Next(), i++) {
    const std::string_view key = cursor->key();
    const std::string_view value = cursor->value();
    if (i >= f.num || key != expected || !value_ok(i, value)) {
      return "scan: row " + std::to_string(i) + " is key '" + std::string(key) +
             "' with a value of " + std::to_string(value.size()) + " bytes ('" +
             std::string(value.substr(0, 16)) + "'...); expected key '" +
             (i < f.num ? expected : "(none: past the last key)") + "' and its value";
    }
    c->bytes += key.size() + value.size();
    NextKey(f, &expected);
  }
  err = cursor->error();
  if (!err.empty()) return err;
  if (i != f.num) {
    return "scan ended after " + std::to_string(i) + " rows; expected " + std::to_string(f.num);
  }
  c->rows += i;
  c->found += i;
  return std::string();
}

// `threads` full scans at once (ScanAll), timed together; ops = rows read.
// The first error ends the program.
template <typename ValueOk>
PhaseResult RunScans(const Flags& f, const std::string& label, Store* store, Family family,
                     int threads, ValueOk value_ok) {
  std::vector<OpCounts> counts(threads);
  std::vector<std::string> errors(threads);
  const auto start = Clock::now();
  if (threads == 1) {
    errors[0] = ScanAll(f, store, family, value_ok, &counts[0]);
  } else {
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; t++) {
      workers.emplace_back([&, t] { errors[t] = ScanAll(f, store, family, value_ok, &counts[t]); });
    }
    for (auto& w : workers) w.join();
  }
  PhaseResult r;
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (int t = 0; t < threads; t++) {
    if (!errors[t].empty()) {
      std::fprintf(stderr, "db_bench: %s failed: %s\n", label.c_str(), errors[t].c_str());
      std::exit(1);
    }
    r.found += counts[t].found;
    r.rows += counts[t].rows;
    r.bytes += counts[t].bytes;
  }
  r.ran = true;
  r.ops = r.rows;
  return r;
}

// scansmall's database at `spec.dir`: writes both families of every row in
// key order (untimed), settles and closes it.
void LoadGroups(const Flags& f, const std::string& label, OpenFn open, const StoreSpec& spec,
                const ValueSource& values, GroupScanResult* out) {
  std::filesystem::remove_all(spec.dir);
  std::string err;
  std::unique_ptr<Store> store = open(f, spec, &err);
  Check(err);
  (void)RunOps(f, label + " (load)", f.num, [&](int, uint64_t i, std::string* key, OpCounts*) {
    std::string small;
    MakeKey(f, i, false, key);
    MakeSmallValue(i, &small);
    return store->PutRow(*key, values.Get(BigValuePos(i)), small);
  });
  std::fprintf(stderr, "  %s: settling\n", label.c_str());
  Check(store->Settle());
  out->settled = store->Stats();
  Check(store->Close());
}

// One pass of scansmall over the database LoadGroups wrote: opens it (a cold
// block cache), times one scan of the small family and one of the big family,
// each checked value by value, and closes it. Returns the small scan.
PhaseResult ScanGroupsOnce(const Flags& f, const std::string& label, OpenFn open,
                           const StoreSpec& spec, const ValueSource& values, GroupPass* out) {
  std::string err;
  std::unique_ptr<Store> store = open(f, spec, &err);
  Check(err);
  std::string expected_small;
  MakeSmallValue(0, &expected_small);
  store->ResetReadIo();
  out->small = RunScans(f, label, store.get(), Family::kSmall, /*threads=*/1,
                        [&](uint64_t, std::string_view value) {
                          const bool ok = value == expected_small;
                          IncrementDigits(&expected_small, kSmallValueSize);
                          return ok;
                        });
  out->small_io = store->GetReadIo();
  store->ResetReadIo();
  out->big = RunScans(
      f, label + " (big family)", store.get(), Family::kBig, /*threads=*/1,
      [&](uint64_t i, std::string_view value) { return value == values.Get(BigValuePos(i)); });
  out->big_io = store->GetReadIo();
  Check(store->Close());
  return out->small;
}

bool IsReadWorkload(const std::string& bench) {
  return bench == "readrandom" || bench == "readmissing" || bench == "readseq" ||
         bench == "seekrandom" || bench == "seekreuse";
}

}  // namespace

void Check(const std::string& err) {
  if (!err.empty()) {
    std::fprintf(stderr, "db_bench: %s\n", err.c_str());
    std::exit(1);
  }
}

void EngineDriver::RunSequential(size_t i) {
  const std::string& bench = f_.benchmarks[i];
  const std::string label = Label(bench);
  PhaseResult r;
  if (bench == "fillseq") {
    Fresh();
    r = RunPhase(f_, label, store_.get(), Op::kWrite, f_.num, values_,
                 [](int, uint64_t j) { return std::pair(j, false); });
    user_bytes_ += f_.num * entry_bytes_;
    dirty_ = true;
  } else if (bench == "fillrandom") {
    r = FillRandom(label);
  } else if (bench == "overwrite") {
    if (!store_) {
      std::fprintf(stderr, "  %s: no database yet; loading one with fillrandom (untimed)\n",
                   label.c_str());
      (void)FillRandom(label + " (load)");
    }
    std::vector<strata::Random> rnds;
    for (int t = 0; t < f_.threads; t++) rnds.emplace_back(f_.seed * 1000 + 17 + t);
    r = RunPhase(f_, label, store_.get(), Op::kWrite, f_.num, values_,
                 [&](int t, uint64_t) { return std::pair(rnds[t].Uniform(f_.num), false); });
    user_bytes_ += f_.num * entry_bytes_;
    dirty_ = true;
    run_.amp.ran = true;
    run_.amp.after_overwrite = store_->Stats();
    run_.amp.user_bytes = user_bytes_;
    run_.amp.logical_bytes = f_.num * entry_bytes_;
    run_.amp.settled = false;
  } else {
    Check("db_bench: " + bench + " is not a write workload");
  }
  Done(label, r);
  run_.phases[i] = std::move(r);
}

void EngineDriver::LoadGroupScan(size_t i) {
  groups_fs_ = std::make_unique<CountingFileSystem>();
  LoadGroups(f_, Label(f_.benchmarks[i]), open_, GroupSpec(), values_, &run_.group);
  group_passes_.clear();
}

void EngineDriver::RunGroupScanPass(size_t i, int pass) {
  std::string label = Label(f_.benchmarks[i]);
  if (f_.passes > 1) label += " pass " + std::to_string(pass + 1);
  GroupPass p;
  ScanGroupsOnce(f_, label, open_, GroupSpec(), values_, &p);
  Done(label, p.small);
  run_.passes[i].push_back(p.small);
  group_passes_.push_back(std::move(p));
}

void EngineDriver::FinishGroupScan(size_t i) {
  const size_t median = MedianPass(run_.passes[i]);
  if (median < group_passes_.size()) {
    const GroupPass& p = group_passes_[median];
    run_.phases[i] = p.small;
    run_.group.small_io = p.small_io;
    run_.group.big = p.big;
    run_.group.big_io = p.big_io;
    run_.group.ran = true;
  }
  std::filesystem::remove_all(GroupSpec().dir);
}

void EngineDriver::ReadyForReads(const std::string& bench) {
  const std::string label = Label(bench);
  if (!store_) {
    std::fprintf(stderr, "  %s: no database yet; loading one with fillrandom (untimed)\n",
                 label.c_str());
    (void)FillRandom(label + " (load)");
  }
  if (!dirty_) return;
  std::fprintf(stderr, "  %s: settling before reads\n", label.c_str());
  const auto t0 = Clock::now();
  Check(store_->Settle());
  run_.settle_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  const StoreStats s = store_->Stats();
  run_.settle_shape = s.level_files;
  if (run_.amp.ran && !run_.amp.settled) {
    run_.amp.after_settle = s;
    run_.amp.settled = true;
  }
  dirty_ = false;
}

void EngineDriver::RunReadPass(size_t i, int pass) {
  const std::string& bench = f_.benchmarks[i];
  std::string label = Label(bench);
  if (f_.passes > 1) label += " pass " + std::to_string(pass + 1);
  PhaseResult r;
  if (bench == "readseq") {
    r = RunScans(f_, label, store_.get(), Family::kMain, f_.threads,
                 [&](uint64_t, std::string_view value) { return value.size() == f_.value_size; });
  } else if (bench == "seekrandom" || bench == "seekreuse") {
    // Every pass seeks to the same keys.
    std::vector<strata::Random> rnds;
    for (int t = 0; t < f_.threads; t++) rnds.emplace_back(f_.seed * 3000 + t);
    std::vector<std::unique_ptr<Cursor>> cursors(f_.threads);
    const bool reuse = bench == "seekreuse";
    r = RunOps(f_, label, reads_, [&](int t, uint64_t, std::string* key, OpCounts* c) {
      return SeekAndNext(f_, store_.get(), rnds[t].Uniform(f_.num), key, c,
                         reuse ? &cursors[t] : nullptr);
    });
  } else {  // readrandom, readmissing
    const bool missing = bench == "readmissing";
    std::vector<strata::Random> rnds;
    for (int t = 0; t < f_.threads; t++) {
      rnds.emplace_back(f_.seed * 2000 + (missing ? 500 : 0) + t);
    }
    r = RunPhase(f_, label, store_.get(), Op::kRead, reads_, values_,
                 [&](int t, uint64_t) { return std::pair(rnds[t].Uniform(f_.num), missing); });
  }
  Done(label, r);
  run_.passes[i].push_back(std::move(r));
}

void EngineDriver::FinishReads(size_t i) {
  const size_t median = MedianPass(run_.passes[i]);
  if (median < run_.passes[i].size()) run_.phases[i] = run_.passes[i][median];
}

void EngineDriver::Close() {
  if (store_) Check(store_->Close());
  store_.reset();
  std::filesystem::remove_all(dir_);
}

size_t EngineDriver::MedianPass(const std::vector<PhaseResult>& passes) {
  if (passes.empty()) return 0;
  std::vector<size_t> order(passes.size());
  for (size_t k = 0; k < order.size(); k++) order[k] = k;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return passes[a].OpsPerSec() < passes[b].OpsPerSec(); });
  return order[(order.size() - 1) / 2];
}

StoreSpec EngineDriver::GroupSpec() const {
  StoreSpec spec;
  spec.dir = dir_ + "-groups";
  spec.zstd = zstd_;
  spec.layout = Layout::kTwoGroups;
  spec.fs = groups_fs_.get();
  return spec;
}

std::string EngineDriver::Label(const std::string& bench) const {
  return std::string(engine_name_) + " " + compression_ + " " + bench;
}

void EngineDriver::Done(const std::string& label, const PhaseResult& r) {
  std::fprintf(stderr, "  %-32s done: %.0f ops/s in %.1f s\n", label.c_str(), r.OpsPerSec(),
               r.seconds);
}

void EngineDriver::Fresh() {
  Close();
  std::string err;
  StoreSpec spec;
  spec.dir = dir_;
  spec.zstd = zstd_;
  store_ = open_(f_, spec, &err);
  Check(err);
  user_bytes_ = 0;
}

PhaseResult EngineDriver::FillRandom(const std::string& label) {
  Fresh();
  std::vector<uint64_t> order(f_.num);
  for (uint64_t i = 0; i < f_.num; i++) order[i] = i;
  strata::Random rnd(f_.seed);
  for (uint64_t i = f_.num - 1; i > 0; i--) std::swap(order[i], order[rnd.Uniform(i + 1)]);
  PhaseResult r = RunPhase(f_, label, store_.get(), Op::kWrite, f_.num, values_,
                           [&](int, uint64_t j) { return std::pair(order[j], false); });
  user_bytes_ += f_.num * entry_bytes_;
  dirty_ = true;
  return r;
}

void RunCompression(const Flags& f, std::vector<std::unique_ptr<EngineDriver>>& engines) {
  const size_t n = f.benchmarks.size();
  // Runs pass `pass` of `run` on every engine, which go back to back, the
  // first one alternating from pass to pass.
  auto each_engine = [&](int pass, const std::function<void(EngineDriver&)>& run) {
    for (size_t x = 0; x < engines.size(); x++) {
      run(*engines[pass % 2 == 0 ? x : engines.size() - 1 - x]);
    }
  };
  for (size_t i = 0; i < n;) {
    if (f.benchmarks[i] == "scansmall") {
      for (auto& e : engines) e->LoadGroupScan(i);
      for (int pass = 0; pass < f.passes; pass++) {
        each_engine(pass, [&](EngineDriver& e) { e.RunGroupScanPass(i, pass); });
      }
      for (auto& e : engines) e->FinishGroupScan(i);
      i++;
      continue;
    }
    auto kind = [&](size_t k) {
      return f.benchmarks[k] == "scansmall" ? 2 : IsReadWorkload(f.benchmarks[k]) ? 1 : 0;
    };
    const bool reads = kind(i) == 1;
    size_t j = i;
    while (j < n && kind(j) == kind(i)) j++;
    if (!reads) {
      for (auto& e : engines) {
        for (size_t k = i; k < j; k++) e->RunSequential(k);
        size_t next_read = j;
        while (next_read < n && kind(next_read) != 1) next_read++;
        if (next_read < n) {
          e->ReadyForReads(f.benchmarks[next_read]);
        } else {
          e->Close();
        }
      }
    } else {
      for (auto& e : engines) e->ReadyForReads(f.benchmarks[i]);
      for (int pass = 0; pass < f.passes; pass++) {
        for (size_t k = i; k < j; k++) {
          each_engine(pass, [&](EngineDriver& e) { e.RunReadPass(k, pass); });
        }
      }
      for (auto& e : engines) {
        for (size_t k = i; k < j; k++) e->FinishReads(k);
      }
    }
    i = j;
  }
  for (auto& e : engines) e->Close();
}

}  // namespace strata::db_bench
